"""The in-process speed benchmarks run a few trials: their stand-in writer must answer what
the job driver asks of a writer (simulator_speed.py's lacked due() and failed), and the dropped
rules they time must build and decode."""

import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(autouse=True)
def benchmarks_on_path(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))


def test_simulator_speed_in_process_runs_a_few_trials():
    import simulator_speed

    for row in ("gcc", "gcc l=1"):
        wall, cpu = simulator_speed.in_process(row, 3)
        assert wall > 0 and cpu > 0


def test_walk_cost_times_the_slope_walk_and_counts_its_candidates():
    import walk_cost

    seconds, code = walk_cost.cpu("slope-0.2", "gcc", 1.0, 4)
    assert seconds > 0
    # the start alone, or with a neighbour and the walk on: never more than the candidates
    assert len(code.scored) == 4 and all(1 <= n <= 9 for n in code.scored)


def test_slope_walk_chooses_as_the_defaults_where_its_threshold_is_zero_and_the_walk_unimodal():
    """slope-0 steps to the neighbour leave-one-out's slope points to: on digits-mlp, where the
    score is unimodal in the lengthscale, it makes the defaults' choices (the defaults score
    both neighbours)."""
    import dropped
    from common import point_setup

    from gcc_mpi.core.simulate import simulate_scheme
    from gcc_mpi.core.point import scheme_options

    setup, index = point_setup("digits-mlp", ["stragglers.count=10"])
    c = setup.config
    opts = scheme_options(c, "gcc", setup.dataset)
    slope = dropped.factory(dropped.slope_walk(0.0))["gcc"](c.code.workers, c.data.batch, **opts)
    for t in range(12):  # measured: the same choice and nmse on all of the first 40 trials
        X, Y, delays = setup.inputs(index, t)
        default = simulate_scheme(setup, "gcc", X, Y, delays)
        setup.codes["gcc"], kept = slope, setup.codes["gcc"]
        mine = simulate_scheme(setup, "gcc", X, Y, delays)
        setup.codes["gcc"] = kept
        assert mine["lengthscale_dec_input"] == default["lengthscale_dec_input"]
        assert mine["nmse"] == default["nmse"]
    assert np.mean(slope.scored) < 2.6  # measured 2.2; the defaults score at least 3


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))


def test_the_screen_is_leave_one_out_at_one_lambda():
    """The screened walk's Cholesky screen gives the eigendecomposition's leave-one-out score
    at the same lambda (to round-off), on every candidate near the start."""
    import dropped

    from gcc_mpi.codes.chords import chord_smoother
    from gcc_mpi.codes.kernels import matern52

    rng = np.random.default_rng(1)
    U, X, Y = rng.normal(size=(30, 64)), rng.normal(size=(10, 64)), rng.normal(size=(30, 10))
    xs = chord_smoother(U, X, matern52)
    for i in (2, 3, 4):
        for lam in (1e-6, 1e-3, 1e-1):
            exact = xs.scores(Y, np.array([[lam]]), "loo", [i])[0, 0]
            assert dropped.loo_at(xs, i, [lam], Y) == pytest.approx(exact, rel=1e-12)


def test_walk_cost_times_the_screened_walk():
    import walk_cost

    seconds, code = walk_cost.cpu("screen-1", "gcc", 1.0, 4)
    assert seconds > 0 and len(code.scored) == 4 and all(1 <= n <= 9 for n in code.scored)


def test_heavy_workload_prints_f_and_coding_costs(monkeypatch, capsys):
    """benchmarks/heavy_workload.py (issue 37) runs to its report: f per call, each scheme's
    encode + decode and their ratio, for the heavy network and the CNN on blocks."""
    import heavy_workload

    monkeypatch.setattr(sys, "argv", ["heavy_workload.py", "--seconds", "0.01", "--trials", "2",
                                      "--blocks", "4"])
    heavy_workload.main()
    out = capsys.readouterr().out
    assert "digits_heavy.onnx" in out and "blocks of 4 digits" in out
    assert out.count("gcc-manifold") == 2 and "# heavy f per call:" in out
