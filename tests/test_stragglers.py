"""Straggler models: the delay vectors they draw."""

import sys
from types import SimpleNamespace

import numpy as np
import pytest

from gcc_mpi.job.stragglers import MODELS, draw_delays

PARAMS = dict(count=3, delay=0.5, p=0.2, rate=50.0, shift=0.02, factor=8.0, shape=2.0,
              scale=0.01, median=0.02, sigma=0.5)


def params(model, **kw):
    return SimpleNamespace(model=model, **{**PARAMS, **kw})


@pytest.mark.parametrize("model", sorted(m for m in MODELS if MODELS[m].draw))  # trace: a file
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


# -- a model of one's own: one record, registered, and every part of a job follows ---------------
HALF = '''
import numpy as np
from gcc_mpi.job import stragglers
from gcc_mpi.job.checks import Setting, integer


def half(rng, N, p):
    """The first ``late`` workers (its own parameter) are late by ``delay`` (a shared one)."""
    d = np.zeros(N)
    d[:p.late] = p.delay
    return d


MODEL = stragglers.register(stragglers.Model(
    "first-late", half, {"late": Setting(integer(0), 2), "delay": stragglers.DELAY},
    late=lambda p, N: p.late, late_key="late", counts=("late",),
    words=lambda get: f"the first {get('late')} workers late"))
'''


@pytest.fixture
def own_model(tmp_path, monkeypatch):
    """A straggler model defined and registered in a module of the test's own (a user's
    package would do the same at import), removed afterwards."""
    (tmp_path / "my_delays.py").write_text(HALF)
    monkeypatch.syspath_prepend(str(tmp_path))
    import my_delays
    yield my_delays.MODEL
    from gcc_mpi.job import stragglers
    stragglers.unregister("first-late")
    sys.modules.pop("my_delays", None)


def test_a_registered_model_is_a_job_files_model_with_its_parameters(own_model, tmp_path):
    """Registering one Model is all a new straggler model takes: the job file's schema, its
    checks (its parameter's type, at most N workers, S for "fastest"), the draw, the
    simulator and the figures' words all read the record; nothing else is edited."""
    import gcc_mpi
    from gcc_mpi.errors import JobError
    from gcc_mpi.job.rules import resolved_stragglers
    from jobfiles import small_job

    text = small_job("own", ["bacc", "gcc"], 6, '[stragglers]\nmodel = "first-late"\nlate = 3\n')
    job = gcc_mpi.load_job(_write(tmp_path, text))
    c = job.config
    assert c.stragglers.late == 3 and resolved_stragglers(c) == 3
    assert "late = 3" in job.to_toml()
    res = gcc_mpi.run_simulation(job)
    for scheme in ("bacc", "gcc"):
        used = res.points[0].schemes[scheme]["used"]
        assert not used[:, :3].any() and used[:, 3:].all()  # the 3 late ones never waited for
    with pytest.raises(JobError, match=r"^stragglers.late: must be an integer >= 0, got -1$"):
        gcc_mpi.load_job(_write(tmp_path, text.replace("late = 3", "late = -1")))
    with pytest.raises(JobError, match=r"^stragglers.late: must be <= code.workers = "):
        gcc_mpi.load_job(_write(tmp_path, text.replace("late = 3", "late = 99")))
    assert own_model.describe(lambda name: {"late": 3}.get(name)) == "the first 3 workers late"


def test_an_unregistered_model_is_unknown_again(own_model, tmp_path):
    from gcc_mpi.errors import JobError
    from gcc_mpi.job import stragglers
    from gcc_mpi.job.parse import parse_job

    assert parse_job('[stragglers]\nmodel = "first-late"\n').config.stragglers.late == 2
    stragglers.unregister("first-late")
    with pytest.raises(JobError, match="stragglers.model: must be one of"):
        parse_job('[stragglers]\nmodel = "first-late"\n')
    stragglers.register(own_model)


def test_a_parameter_two_models_declare_differently_is_refused():
    from gcc_mpi.job import stragglers
    from gcc_mpi.job.checks import Setting, number

    other = stragglers.Model("other", None, {"delay": Setting(number(0.0), 1.0)})
    with pytest.raises(ValueError, match="'delay' is declared already"):
        stragglers.register(other)
    assert "other" not in MODELS


def _write(folder, text):
    path = folder / "job.toml"
    path.write_text(text)
    return path


def test_shifted_exponential_slow_draws_a_few_workers_factor_times_as_late():
    p = params("shifted-exponential-slow", shift=0.01, rate=100.0, p=0.05)
    d = np.concatenate([draw_delays(np.random.default_rng(s), 8, p) for s in range(2000)])
    slow = d > 0.08   # 8 x (10 ms + Exp(10 ms)) is at least 80 ms; a fast one, e^-7 of them
    assert d.min() >= 0.01
    assert 0.04 < slow.mean() < 0.065        # p = 0.05
    assert 0.12 < np.median(d[slow]) < 0.2   # 8 x (10 + 10 ln 2 ms) = 135 ms
    fast = draw_delays(np.random.default_rng(0), 8, params("shifted-exponential-slow", p=0.0))
    again = draw_delays(np.random.default_rng(0), 8, params("shifted-exponential", p=0.0))
    assert np.array_equal(fast, again)       # p = 0: shifted-exponential's draws
