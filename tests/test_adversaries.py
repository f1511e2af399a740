"""Adversaries (job/adversaries.py): the [adversaries] table's checks, which workers lie and what
they send, from the job's seed alone, and the same corrupted results in both engines."""

import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from jobfiles import small_job
from mpirun import needs_mpiexec
from mpirun import run as launch
from same_records import assert_same

from gcc_mpi.files.reader import read_results
from gcc_mpi.job.adversaries import KINDS, Adversaries, corrupt, liars
from gcc_mpi.job.records import TIMINGS


def params(**kw):
    base = dict(count=0, p=0.0, placement="random", kind="sign-flip", size=10.0, bit="random")
    return SimpleNamespace(**{**base, **kw})


@pytest.mark.parametrize("setting, line", [
    ("adversaries.count=-1", "adversaries.count: must be an integer >= 0, got -1"),
    ('adversaries.kind="flip"', 'adversaries.kind: must be one of "noise", "sign-flip", '
                                '"constant", "scaled", "colluding", "bit-flip", got "flip"; '
                                'did you mean "bit-flip"?'),
    ("adversaries.bit=64", 'adversaries.bit: must be "random" or an integer in [0, 63], got 64'),
    ("adversaries.p=1.5", "adversaries.p: must be a number in [0, 1], got 1.5"),
    ('adversaries.placement="worst"', 'adversaries.placement: must be one of "random", '
                                      '"worst-case", "fixed", got "worst"; did you mean '
                                      '"worst-case"?'),
    ("adversaries.count=100", "adversaries.count: must be <= code.workers = 7, got 100"),
])
def test_a_bad_adversaries_value_is_one_line_and_exit_2(setting, line):
    done = subprocess.run([sys.executable, "-m", "gcc_mpi", "validate", "--set", setting],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [f"gcc_mpi: error: {line}"]


def test_a_count_and_a_probability_together_are_refused():
    done = subprocess.run([sys.executable, "-m", "gcc_mpi", "validate", "--set",
                           "adversaries.count=2", "--set", "adversaries.p=0.1"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "adversaries.p: must be 0 when adversaries.count is set" in done.stderr


def test_a_robust_lcc_without_its_2a_more_workers_is_refused(tmp_path):
    (tmp_path / "lcc.toml").write_text(small_job("lcc", ["lcc"], 2, "[adversaries]\ncount = 1\n"))
    done = subprocess.run([sys.executable, "-m", "gcc_mpi", "validate", "lcc.toml"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "gcc_mpi: error: code.workers: robust lcc corrects A = 1 wrong results with >= "
        "(K-1)*degree+1+2A = 7 workers, got 6 (or code.lcc.robust = false)"]


def test_liars_follow_the_seed_and_the_placement():
    N = 20
    drawn = [liars(7, 0, t, N, params(count=3)) for t in range(50)]
    assert all(d.sum() == 3 for d in drawn)
    assert len({tuple(np.flatnonzero(d)) for d in drawn}) > 10  # random: anew each trial
    assert np.array_equal(drawn[4], liars(7, 0, 4, N, params(count=3)))  # from the seed alone
    assert not np.array_equal(drawn[4], liars(8, 0, 4, N, params(count=3)))
    fixed = {tuple(np.flatnonzero(liars(7, 1, t, N, params(count=3, placement="fixed"))))
             for t in range(50)}
    assert len(fixed) == 1  # the same workers every trial of the point: a faulty node
    for t in range(20):
        w = np.flatnonzero(liars(7, 0, t, N, params(count=4, placement="worst-case")))
        assert len(w) == 4 and np.all(np.diff(w) == 1)
    share = np.mean([liars(7, 0, t, N, params(p=0.25)) for t in range(400)])
    assert 0.2 < share < 0.3
    assert not liars(7, 0, 0, N, params()).any()


def test_each_kind_sends_what_docs_jobs_md_says():
    y = np.array([0.5, -2.0, 3.0, 1e-3])
    rms = np.sqrt(np.mean(y**2))
    got = {k: corrupt(y, 3, 0, 5, 2, params(kind=k, size=4.0)) for k in KINDS}
    assert np.array_equal(got["sign-flip"], -4.0 * y)
    assert np.array_equal(got["scaled"], 4.0 * y)
    assert np.array_equal(got["constant"], np.full(4, 4.0))
    z = (got["noise"] - y) / (4.0 * rms)
    assert 0.1 < np.abs(z).max() < 6
    assert np.array_equal(got["noise"], corrupt(y, 3, 0, 5, 2, params(kind="noise", size=4.0)))
    # colluders agree: every liar of the trial adds the same shift, whatever its own result
    other = corrupt(7 * y, 3, 0, 5, 9, params(kind="colluding", size=4.0))
    assert np.allclose(other - 7 * y, got["colluding"] - y, rtol=0, atol=1e-12)
    flipped = got["bit-flip"].view(np.uint64) ^ y.view(np.uint64)
    assert sorted(bin(int(w)).count("1") for w in flipped) == [0, 0, 0, 1]
    sign = corrupt(y, 3, 0, 5, 2, params(kind="bit-flip", bit=63))
    assert np.count_nonzero(sign != y) == 1 and np.array_equal(np.abs(sign), np.abs(y))


def test_corrupt_rows_changes_only_the_liars_rows():
    a = Adversaries(11, 8, params(count=2, placement="fixed"))
    lying = np.flatnonzero(a.liars(0, 3))
    workers = np.arange(8)[::-1]
    Y = np.arange(16.0).reshape(8, 2) + 1
    out = a.corrupt(0, 3, workers, Y)
    changed = np.flatnonzero(np.any(out != Y, axis=1))
    assert sorted(workers[changed]) == sorted(lying)
    assert np.array_equal(out[changed], -10 * Y[changed])


# lcc decodes plainly (robust, it would need 2 results more than N = 6); bacc's and gcc's
# robust decoders (auto: on) flag the liars, in both engines alike
JOB = small_job("adv", ["lcc", "bacc", "gcc"], 6, """
[code.lcc]
robust = false
[stragglers]
model = "fixed"
count = 1
delay = 1.0
[adversaries]
count = 1
[sweep]
"adversaries.kind" = ["noise", "sign-flip", "colluding", "bit-flip"]
""")


def point_records(path):
    """[{scheme: {field: column}}] of every point, the clock's fields left out."""
    return [{s: {k: v for k, v in d.items() if k not in TIMINGS} for s, d in p.schemes.items()}
            for p in read_results(path).points]


def test_simulate_records_the_liars_and_their_results_count(tmp_path):
    (tmp_path / "job.toml").write_text(JOB)
    for out, more in (("adv.h5", []), ("none.h5", ["--set", "adversaries.count=0"])):
        code, _, err = launch(["simulate", "job.toml", "-o", out, "-q", *more], tmp_path)
        assert code == 0, err
    bad, good = point_records(tmp_path / "adv.h5"), point_records(tmp_path / "none.h5")
    for kind, p, q in zip(("noise", "sign-flip", "colluding", "bit-flip"), bad, good):
        for s in ("lcc", "bacc"):
            assert np.all(p[s]["adversary"].sum(1) == 1)
            assert not q[s]["adversary"].any()
        # a liar among lcc's 5 results: exact without, wrong with (or not finite: a bit flip)
        heard = (p["lcc"]["adversary"] & p["lcc"]["used"]).any(1)
        assert heard.any() and np.all(q["lcc"]["nmse"] < 1e-20)
        worse = ~np.isfinite(p["lcc"]["nmse"][heard]) | (p["lcc"]["nmse"][heard] > 1e-12)
        # a flip of a low mantissa bit hides below round-off
        assert worse.all() if kind != "bit-flip" else worse.any()


@needs_mpiexec
def test_the_liars_send_the_same_wrong_results_over_mpi_as_in_simulate(tmp_path):
    (tmp_path / "job.toml").write_text(JOB)
    seen = []
    for argv, ranks in ((["simulate"], None), (["run"], 7)):
        out = f"{argv[0]}.h5"
        code, _, err = launch([*argv, "job.toml", "-o", out, "-q"], tmp_path, ranks=ranks)
        assert code == 0 and "Traceback" not in err, err
        seen.append(point_records(tmp_path / out))
    for sim, mpi in zip(*seen):
        assert_same(sim, mpi)
        assert sim["lcc"]["adversary"].any()
