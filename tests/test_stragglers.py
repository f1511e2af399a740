"""Straggler models: the delay vectors they draw."""

from types import SimpleNamespace

import numpy as np
import pytest

from gcc_mpi.job.stragglers import MODELS, draw_delays

PARAMS = dict(count=3, delay=0.5, p=0.2, rate=50.0, shift=0.02, shape=2.0, scale=0.01,
              median=0.02, sigma=0.5)


def params(model, **kw):
    return SimpleNamespace(model=model, **{**PARAMS, **kw})


@pytest.mark.parametrize("model", sorted(MODELS))
def test_every_model_draws_one_nonnegative_delay_per_worker_reproducibly(model):
    a = draw_delays(np.random.default_rng(1), 20, params(model))
    b = draw_delays(np.random.default_rng(1), 20, params(model))
    assert a.shape == (20,) and np.all(a >= 0) and np.array_equal(a, b)


def test_fixed_delays_exactly_count_workers():
    for seed in range(20):
        d = draw_delays(np.random.default_rng(seed), 12, params("fixed"))
        assert np.count_nonzero(d) == 3 and set(d) == {0.0, 0.5}


def test_adversarial_stragglers_are_consecutive():
    for seed in range(20):
        slow = np.flatnonzero(draw_delays(np.random.default_rng(seed), 12, params("adversarial")))
        assert len(slow) == 3 and np.all(np.diff(slow) == 1)


def test_bernoulli_straggles_with_probability_p():
    d = draw_delays(np.random.default_rng(2), 100_000, params("bernoulli"))
    assert np.mean(d > 0) == pytest.approx(0.2, abs=0.01)


def test_continuous_models_have_the_stated_location():
    rng = np.random.default_rng(3)
    n = 200_000
    assert np.mean(draw_delays(rng, n, params("exponential"))) == pytest.approx(0.02, rel=0.02)
    se = draw_delays(rng, n, params("shifted-exponential"))
    assert se.min() >= 0.02 and np.mean(se) == pytest.approx(0.04, rel=0.02)
    pa = draw_delays(rng, n, params("pareto"))
    assert pa.min() >= 0.01 and np.mean(pa) == pytest.approx(0.02, rel=0.05)  # x_m a / (a - 1)
    assert np.median(draw_delays(rng, n, params("lognormal"))) == pytest.approx(0.02, rel=0.02)
