"""gcc-manifold's "auto" encoder keeps its coded inputs near the batch: where a short lengthscale
makes the curve swing far out (alphas almost on top of each other), it doubles the lengthscale."""

from pathlib import Path

import numpy as np
import pytest

from gcc_mpi.codes import make_code
from gcc_mpi.codes.gcc_manifold import REACH, reach
from gcc_mpi.job.parse import load_job
from gcc_mpi.core.simulate import simulate_scheme
from gcc_mpi.core.point import PointSetup, scheme_options

JOBS = Path(__file__).resolve().parent.parent / "jobs"
SPACING = np.pi / 24


@pytest.fixture(scope="module")
def sphere24():
    """rate-probabilistic (sphere in R^50, Bernoulli stragglers) at K = 24, N = 96: its trial 60
    is one where the ordering puts three alphas within 0.001 of -1."""
    job = load_job(JOBS / "rate-probabilistic.toml",
                   ["data.batch=24", "code.workers=96", 'code.schemes=["gcc-manifold"]'])
    return PointSetup.build(job.points[0].config, job.base_dir), job.points[0].index


def rule_alone(setup):
    """The job's gcc-manifold with the rule's lengthscale (2 spacings) fixed: no doubling."""
    options = scheme_options(setup.config, "gcc-manifold", setup.dataset)
    return make_code("gcc-manifold", 96, 24, **{**options, "lengthscale": 2 * SPACING})


def test_reach_is_one_at_the_farthest_input():
    X = np.random.default_rng(0).standard_normal((10, 3))
    assert reach(X, X) == pytest.approx(1.0)
    assert reach(X.mean(0) + 3 * (X - X.mean(0)), X) == pytest.approx(3.0)


def test_swinging_curve_doubles_the_lengthscale(sphere24):
    setup, index = sphere24
    X, _ = setup.draw(index, 60)
    fixed = rule_alone(setup)
    U, _ = fixed.encode(X)
    assert reach(U, X) > 10  # measured 16
    U, info = setup.codes["gcc-manifold"].encode(X)
    assert info["lengthscale_enc"] == pytest.approx(4 * SPACING)
    assert reach(U, X) <= REACH  # measured 1.3
    rec = simulate_scheme(setup, "gcc-manifold", *setup.inputs(index, 60))
    assert 10 * np.log10(rec["nmse"]) < -40, rec["nmse"]


def test_ordinary_trials_keep_the_rule(sphere24):
    """Elsewhere the encoder is the rule's 2 spacings, exactly as with that lengthscale fixed."""
    setup, index = sphere24
    fixed = rule_alone(setup)
    kept = 0
    for t in range(20):
        X, _ = setup.draw(index, t)
        U, info = setup.codes["gcc-manifold"].encode(X)
        if info["lengthscale_enc"] == pytest.approx(2 * SPACING):
            kept += 1
            np.testing.assert_array_equal(U, fixed.encode(X)[0])
    assert kept == 20
