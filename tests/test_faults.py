"""Reliability: faults during a run, stops and resumes, kills, and bad input — nothing lost, never
a hang.

Every launch is a subprocess in its own session with a timeout; on timeout its whole process
group is killed and the test fails. Nothing here asserts on wall-clock time: runs are
interrupted when a marker (f's call log, or the results file itself) shows they are under way.
"""

import contextlib
import io
import json
import os
import re
import signal
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpirun import KEEP_GOING, OPENMPI, Launch, needs_mpiexec, run

from gcc_mpi.cli.main import main
from gcc_mpi.codes import make_code
from gcc_mpi.core.erasures import HUNG, LOST, NONFINITE, RAISED, SHAPE, evaluate_rows, summary
from gcc_mpi.errors import JobError
from gcc_mpi.core.progress import Progress
from gcc_mpi.files.writer import ResultWriter
from gcc_mpi.files.reader import mismatches, read_results
from gcc_mpi.core.trial import WaitPolicy



def lines(path):
    try:
        return len(Path(path).read_text().splitlines())
    except FileNotFoundError:
        return 0


def trials_in(path):
    """Trials every scheme of point 0 holds in the file on disk (0 if unreadable yet)."""
    try:
        d = read_results(path).points[0].schemes
    except (JobError, IndexError, OSError):
        return 0
    return min((len(v["trial"]) for v in d.values()), default=0)


def assert_consistent(res, at_most):
    """Every scheme of every point holds trials 0..n-1 in order, n <= at_most, rows aligned."""
    for point in res.points:
        lengths = {name: len(d["trial"]) for name, d in point.schemes.items()}
        assert len(set(lengths.values())) == 1, lengths
        for d in point.schemes.values():
            n = len(d["trial"])
            assert n <= at_most and np.array_equal(d["trial"], np.arange(n))
            assert all(len(v) == n for v in d.values())
            assert np.all(np.isfinite(d["nmse"][~d["failed"]]))


def assert_same_results(a, b):
    """Identical datasets but for timings (same seeds: a resumed run equals an uninterrupted
    one), both files complete."""
    assert read_results(a).complete and read_results(b).complete
    assert mismatches(a, b) == []


def assert_resume_equals_a_whole_run(tmp_path, sets, ranks=5):
    """``run slow.toml --resume`` of the stopped cut.h5 completes it, and it then equals a whole
    run of the same job (full.h5)."""
    code, _, err = run(["run", "slow.toml", "-o", "cut.h5", "--resume", *sets], tmp_path,
                       ranks=ranks)
    assert code == 0, err
    code, _, err = run(["run", "slow.toml", "-o", "full.h5", *sets], tmp_path, ranks=ranks)
    assert code == 0, err
    assert_same_results(tmp_path / "cut.h5", tmp_path / "full.h5")


# rank 0's witness names the rank that died first — or, when hydra killed the others before
# the witness woke up (1 of 3 runs on a loaded machine), every rank whose end it saw at once
WITNESS = (r"gcc_mpi: (?:rank (\d+) \(worker \d+\) died first and the job ended with it|(rank 0) "
           r"ended before the job did|ranks ([\d, ]+) ended at the same moment, one of them first, "
           r"and the job ended with them) \(seen by rank 0's witness process\); (\S+) keeps every "
           r"trial committed before \(complete = false\): the same command with --resume "
           r"continues\n")


def witnessed(job, out):
    """The ranks rank 0's witness named (one, or several seen ending at once), after waiting
    for its line, which must name the results file ``out``."""
    said = job.wait_for_err(WITNESS)
    assert said.group(4) == out, said.group(0)
    return [said.group(1) or "0"] if said.group(3) is None else said.group(3).split(", ")


def write(tmp_path, **files):
    for name, text in files.items():
        (tmp_path / name.replace("_", ".", name.count("_") and 1)).write_text(text)


# -- jobs and targets -----------------------------------------------------------------------
BAD_F = '''
import os

import numpy as np

RANK = os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")  # MPICH, Open MPI


def f(X):
    if RANK == "3":
        raise ValueError("boom on purpose")
    Y = X[:, :2] ** 2
    if RANK == "4":
        Y[0, 1] = np.nan
    if RANK == "5":
        return Y[:, :1]
    return Y


f.degree = 2
'''
BAD = """
[job]
name = "bad"
trials = 3
[data]
source = "gaussian"
dim = 4
batch = 3
[target]
kind = "python"
function = "bad.py:f"
[code]
schemes = ["uncoded", "lcc", "bacc", "gcc"]
[code.lcc]
degree = 2
[stragglers]
model = "none"
[decode]
stragglers = 0
"""

FLAKY_F = '''
import numpy as np


def f(X):
    """Fails on some inputs, the same on every rank: raises if a row has x0 > 0.9, NaN rows
    where x1 > 0.9."""
    if np.any(X[:, 0] > 0.9):
        raise ValueError("x0 > 0.9")
    Y = np.column_stack([np.tanh(X).sum(1), (X ** 2).sum(1)])
    Y[X[:, 1] > 0.9] = np.nan
    return Y
'''
FLAKY = """
[job]
name = "flaky"
seed = 5
trials = 10
[data]
source = "gaussian"
dim = 4
batch = 3
[target]
kind = "python"
function = "flaky.py:f"
[code]
workers = 8
schemes = ["uncoded", "bacc", "gcc", "gcc-manifold"]
[stragglers]
model = "none"
[decode]
stragglers = 0
"""

# f logs every call (the marker that a run is under way); ranks DIE_RANK ("3" or "2,4") die at
# their call DIE_AT: SIGKILL while computing, os._exit with DIE_HOW=exit, with DIE_HOW=later
# SIGKILL 0.2 s after this call returned (while idle or sleeping a delay), or, with
# DIE_HOW=stop, SIGSTOP while computing (stopped for good: it goes on only if resumed). With
# MLP=1 f is the shipped digits MLP (DONE_WHEN's target: DONE_WHEN_F's job)
SLOW_F = '''
import os
import signal
import subprocess
import time

import numpy as np

RANK = os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")  # MPICH, Open MPI
calls = 0


def f(X):
    global calls
    calls += 1
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "calls.log"), "a") as log:
        log.write("x\\n")
    die = os.environ.get("DIE_RANK", "").split(",")
    if RANK in die and calls == int(os.environ["DIE_AT"]):
        how = os.environ.get("DIE_HOW")
        if how == "exit":
            os._exit(3)
        if how == "later":
            subprocess.Popen(["sh", "-c", f"sleep 0.2; kill -9 {os.getpid()}"])
        elif how == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        else:
            os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(float(os.environ.get("SLOW", "0")))
    if MLP is not None:
        return MLP(X)
    return np.column_stack([np.sin(X).sum(1), (X ** 2).sum(1)])


MLP = None
if os.environ.get("MLP"):
    from gcc_mpi.targets.mlp import MLPTarget

    MLP = MLPTarget.load()
f.classifier = MLP is not None
'''
SLOW = """
[job]
name = "slow"
seed = 4
trials = 40
[data]
source = "gaussian"
dim = 4
batch = 3
[target]
kind = "python"
function = "slow.py:f"
[code]
schemes = ["uncoded", "bacc", "gcc"]
[stragglers]
model = "fixed"
count = 1
delay = 0.05
"""


# the job at the size of a real one: 16 ranks, digits MLP, K = 8, N = 15, bacc and gcc,
# two fixed stragglers of 30 ms
DONE_WHEN = """
[job]
name = "ulfm"
seed = 3
trials = 150
[data]
source = "digits"
batch = 8
[target]
kind = "mlp"
[code]
workers = 15
schemes = ["bacc", "gcc"]
[stragglers]
model = "fixed"
count = 2
delay = 0.03
"""


# DONE_WHEN's job with its MLP computed by SLOW_F (env MLP=1), so that a fault comes at a call
# of f (DIE_RANK, DIE_AT, DIE_HOW): an event, where a signal sent once the file shows k trials
# may land after the end (a loaded machine runs the 150 trials between two reads of the file)
DONE_WHEN_F = DONE_WHEN.replace('kind = "mlp"', 'kind = "python"\nfunction = "slow.py:f"')


# -- faults during a run ----------------------------------------------------------------------
@needs_mpiexec
def test_worker_exception_nan_and_wrong_shape_are_erasures(tmp_path):
    """Rank 3's f raises, rank 4's returns NaN, rank 5's the wrong shape: each result is an
    erasure recorded per worker and trial, bacc and gcc decode from the rest, lcc (needs 5 of
    6) and uncoded (needs worker 2) fail with the reason, and the job completes."""
    write(tmp_path, bad_py=BAD_F, bad_toml=BAD)
    code, out, err = run(["run", "bad.toml", "-o", "bad.h5", "-q"], tmp_path, ranks=7)
    assert code == 0, err
    # 3 trials x (3 failing workers in lcc, bacc and gcc + worker 2 in uncoded) = 30 erasures
    assert "; 30 erasures (f failed on a worker)" in err, err
    res = read_results(tmp_path / "bad.h5")
    assert res.complete
    d = res.points[0].schemes
    for name in ("lcc", "bacc", "gcc"):
        expected = np.tile([0, 0, RAISED, NONFINITE, SHAPE, 0], (3, 1))
        assert np.array_equal(d[name]["error"], expected)
        assert not d[name]["used"][:, 2:5].any() and d[name]["used"][:, [0, 1, 5]].all()
        assert list(d[name]["error_text"]) == [
            "worker 2: ValueError: boom on purpose; worker 3: returned NaN or inf; "
            "worker 4: returned shape (1, 1), expected (1, 2)"] * 3
    assert d["uncoded"]["error"][:, 2].tolist() == [RAISED] * 3  # uncoded uses workers 0..2
    assert d["uncoded"]["failed"].all() and not d["bacc"]["failed"].any()
    assert all(r == "uncoded needs all 3 results, got 2" for r in d["uncoded"]["reason"])
    assert d["lcc"]["failed"].all() and all("got 3" in r for r in d["lcc"]["reason"])
    assert not d["gcc"]["failed"].any() and np.all(d["gcc"]["nmse"] < 1)
    code, out, _ = run(["analyze", "bad.h5", "--json"], tmp_path)
    failed = {r["scheme"]: r["trials_failed"] for r in __import__("json").loads(out)}
    assert failed == {"uncoded": 3, "lcc": 3, "bacc": 0, "gcc": 0}


@needs_mpiexec
def test_erasures_and_failed_references_agree_with_the_simulator(tmp_path):
    """f fails on some inputs (raises, or NaN rows) the same way on every rank: the MPI run
    and the simulator record the same erasures, used sets and failed trials (f failing on the
    batch itself fails the trial for every scheme)."""
    write(tmp_path, flaky_py=FLAKY_F, flaky_toml=FLAKY)
    code, _, err = run(["run", "flaky.toml", "-o", "run.h5", "-q"], tmp_path, ranks=9)
    assert code == 0, err
    assert main(["simulate", str(tmp_path / "flaky.toml"), "-o", str(tmp_path / "sim.h5"),
                 "-q"]) == 0
    r, s = (read_results(tmp_path / f).points[0].schemes for f in ("run.h5", "sim.h5"))
    for name in r:
        for key in ("error", "error_text", "used", "failed", "reason"):
            assert np.array_equal(r[name][key], s[name][key]), (name, key)
        ok = ~r[name]["failed"]
        np.testing.assert_allclose(r[name]["nmse"][ok], s[name]["nmse"][ok], rtol=1e-9)
    # the situation was provoked: erasures of both kinds in trials that decoded, and a trial
    # whose own inputs make f fail
    codes = set(np.unique(r["bacc"]["error"][~r["bacc"]["failed"]]))
    assert {RAISED, NONFINITE} <= codes
    assert any(x.startswith("f failed on input") for x in r["gcc"]["reason"])


@needs_mpiexec
def test_a_killed_worker_ends_the_job_naming_it_and_keeps_every_finished_trial(tmp_path):
    """SIGKILL of rank 3 mid-job, without fault tolerance. MPICH's hydra kills every rank at
    once (it does so for any rank a signal killed) and rank 0's witness process names rank 3.
    Open MPI's mpiexec names rank 3 itself and sends the others SIGTERM, so rank 0 stops
    cleanly. Either way the file holds every trial committed before, complete = false."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    job = Launch(["run", "slow.toml", "-o", "slow.h5", "-q"], tmp_path, ranks=5,
                 env={"DIE_RANK": "3", "DIE_AT": "12"})
    code, _, err = job.wait()
    if OPENMPI:
        assert code == 137, err  # mpiexec's (prterun): 128 + the signal that killed rank 3
        assert re.search(r"process rank 3 with PID \d+ on node \S+ exited on\s+signal 9",
                         job.err()), job.err()
        assert re.search(r"gcc_mpi: stopped by SIGTERM after \d+ of 40 trials", err), err
    else:
        assert code == 9, err  # hydra's: the signal that killed rank 3
        named = witnessed(job, "slow.h5")
        assert named == ["3"] or (len(named) > 1 and "3" in named), err
    res = read_results(tmp_path / "slow.h5")
    assert not res.complete
    assert_consistent(res, at_most=39)
    assert trials_in(tmp_path / "slow.h5") >= 1


@needs_mpiexec
@pytest.mark.parametrize("pipeline, wait", [(1, "polite"), (3, "polite"), (1, "busy")])
def test_a_worker_that_exits_while_the_job_keeps_going_is_a_permanent_straggler(tmp_path,
                                                                                pipeline, wait):
    """A worker that ends without a signal (here os._exit(3) in f) under the MPI's keep-going
    option: `mpiexec -disable-auto-cleanup` (MPICH: hydra notifies the others with SIGUSR1 and
    rank 0 finds the dead pid) or `mpiexec --with-ft ulfm` (Open MPI 5.0.11 reports only ranks
    that a signal killed, so rank 0 finds this one among the pids of its node, which it looks at
    every 0.5 s under ULFM; SIGKILLs: test_ulfm.py). Rank 0 names the dead rank, never sends it a
    task again (error code 4) and the job completes. With 3 rounds in flight rank 0 cancels the
    dead rank's requests in every round and records it LOST in the rounds still waiting. A busy
    master (which blocks in Waitsome under MPICH, woken by a worker's NOTICE of hydra's SIGUSR1,
    and polls under ULFM) finds it too: it never waits for the dead rank forever."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    code, _, err = run(["run", "slow.toml", "-o", "slow.h5", "-q", "--set", "job.trials=8",
                        "--set", f"decode.pipeline={pipeline}", "--wait", wait],
                       tmp_path, ranks=5, mpiexec_options=KEEP_GOING,
                       env={"DIE_RANK": "3", "DIE_AT": "5", "DIE_HOW": "exit"})
    assert code == 3, err  # hydra and Open MPI's mpiexec return the dead rank's exit code
    died = re.search(r"gcc_mpi: rank 3 \(worker 2, pid \d+\) died during trial (\d+)", err)
    assert died, err
    res = read_results(tmp_path / "slow.h5")
    assert res.complete
    assert_consistent(res, at_most=8)
    t = int(died.group(1))
    for name, d in res.points[0].schemes.items():
        assert len(d["trial"]) == 8
        assert (d["error"][t + 1:, 2] == LOST).all() and not d["used"][t + 1:, 2].any(), name
        assert "rank 3 died" in d["error_text"][-1]
    assert not res.points[0].schemes["bacc"]["failed"].any()  # decoded from the other three
    assert json.loads(res.attrs["lost"]) == [{"rank": 3, "worker": 2, "point": 0, "trial": t}]


@needs_mpiexec
def test_a_worker_stopped_for_good_is_a_straggler_and_the_job_completes(tmp_path):
    """The DONE_WHEN job (DONE_WHEN_F: its MLP in SLOW_F) on 16 ranks, 150 trials; rank 6
    SIGSTOPs itself for good in its 40th call of f (trial 19 or later: two schemes a trial),
    so the stop lands while it owes a reply, 130 trials before the end. (A SIGSTOP sent once
    20 trials were in the file came too late on a loaded machine: the job runs 150 trials in
    1-3 s once under way, and the file, committed about every second, showed 1 trial and then
    65 to 150, so the stop came after rank 6's last task and it was never hung.) After HANG
    (3 s or more) without its reply rank 0 counts it hung: the rounds go on without it (error
    code 5, no trial failed), and at the end rank 0 resumes it (SIGCONT), so that it takes its
    EXIT: exit 0, a complete file, rank 6 in ``hung``."""
    write(tmp_path, slow_py=SLOW_F, stop_toml=DONE_WHEN_F)
    job = Launch(["run", "stop.toml", "-o", "s.h5", "-q", "--set", "job.trials=150"], tmp_path,
                 ranks=16, env={"MLP": "1", "DIE_RANK": "6", "DIE_AT": "40", "DIE_HOW": "stop"})
    code, _, err = job.wait()
    assert code == 0, err
    res = read_results(tmp_path / "s.h5")
    assert res.complete
    assert_consistent(res, at_most=150)
    hung = json.loads(res.attrs["hung"])
    assert [e["rank"] for e in hung] == [6], err
    assert re.search(r"gcc_mpi: rank 6 \(worker 5, pid \d+ on \S+\) has not answered for [\d.]+ s",
                     err), err
    t = hung[0]["trial"]
    assert t >= 19
    for name, d in res.points[0].schemes.items():
        assert len(d["trial"]) == 150 and not d["failed"].any(), name
        assert (d["error"][t + 1:, 5] == HUNG).all() and not d["used"][t + 1:, 5].any(), name


@needs_mpiexec
def test_a_suspension_of_the_whole_job_hangs_no_worker(tmp_path):
    """Every process of the job (mpiexec, its proxies, the ranks) SIGSTOPped for 8 s once 40
    trials' calls of f were made, then SIGCONTed, as SLURM's suspend does: rank 0 wakes with its
    clock 8 s on, but so did every worker's: nobody is hung, no trial failed, exit 0. (Before,
    rank 0 found the replies overdue by its own clock and counted 2-3 healthy workers hung.)"""
    write(tmp_path, slow_py=SLOW_F, stop_toml=DONE_WHEN_F)
    job = Launch(["run", "stop.toml", "-o", "s.h5", "-q", "--set", "job.trials=300"], tmp_path,
                 ranks=16, env={"MLP": "1", "SLOW": "0.002"})
    log = tmp_path / "calls.log"   # one line "x" per call of f: 30 calls a trial
    job.wait_for(lambda: log.exists() and log.stat().st_size >= 2 * 30 * 40, "40 trials' calls")
    everyone = job.processes()
    for pid in everyone:
        os.kill(pid, signal.SIGSTOP)
    time.sleep(8)   # the suspension itself, not a wait for an event
    for pid in everyone:
        os.kill(pid, signal.SIGCONT)
    code, _, err = job.wait()
    assert code == 0, err
    res = read_results(tmp_path / "s.h5")
    assert res.complete and "hung" not in res.attrs, res.attrs.get("hung")
    assert "has not answered" not in err, err
    for name, d in res.points[0].schemes.items():
        assert len(d["trial"]) == 300 and not d["failed"].any(), name


# f of a worker that dies while it builds f (os._exit at import on rank 3): after its HELLO
GONE_F = """
import os

import numpy as np

if (os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")) == "3":
    os._exit(3)


def f(X):
    return np.column_stack([np.sin(X).sum(1), (X ** 2).sum(1)])
"""


@needs_mpiexec
def test_a_worker_that_dies_while_it_builds_f_is_a_straggler_from_the_first_trial(tmp_path):
    """Rank 3 exits (os._exit(3)) at start-up, after its HELLO, before its READY, under the
    MPI's keep-going option: rank 0 buries it like any death (ULFM: MPI or its pid; MPICH
    -disable-auto-cleanup: hydra's notice and its pid) and the job runs without it from trial
    0: complete, rank 3 LOST in every trial, `lost` naming it at trial 0; the launchers return
    its exit code."""
    write(tmp_path, slow_py=GONE_F, slow_toml=SLOW)
    code, _, err = run(["run", "slow.toml", "-o", "g.h5", "-q", "--set", "job.trials=6"],
                       tmp_path, ranks=5, mpiexec_options=KEEP_GOING)
    assert code == 3, err
    assert re.search(r"gcc_mpi: rank 3 \(worker 2, pid \d+\) died during trial 0 of point 0",
                     err), err
    res = read_results(tmp_path / "g.h5")
    assert res.complete and json.loads(res.attrs["lost"]) == [
        {"rank": 3, "worker": 2, "point": 0, "trial": 0}]
    for name, d in res.points[0].schemes.items():
        assert len(d["trial"]) == 6 and (d["error"][:, 2] == LOST).all(), name
    assert not res.points[0].schemes["bacc"]["failed"].any()


@needs_mpiexec
def test_a_job_that_loses_nobody_ends_with_exit_0_under_the_keep_going_option(tmp_path):
    """With the MPI's keep-going option and no fault, every rank leaves with exit code 0. Under
    MPICH's -disable-auto-cleanup, hydra sends SIGUSR1 to the ranks still running whenever one
    exits, also after a normal MPI_Finalize, by when Python has put SIGUSR1 back to its default
    action: measured, 9 to 13 of 18 ranks died of it and mpiexec returned 10."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    for _ in range(2):
        code, _, err = run(["run", "slow.toml", "-o", "n.h5", "-q", "--overwrite", "--set",
                            "job.trials=4", "--set", "stragglers.count=0"], tmp_path, ranks=9,
                           mpiexec_options=KEEP_GOING)
        assert code == 0, err
        assert read_results(tmp_path / "n.h5").complete


@needs_mpiexec
@pytest.mark.hydra
def test_the_witness_names_a_worker_killed_while_it_builds_f(tmp_path):
    """Rank 3 SIGKILLed while it builds f (importing its module), without fault tolerance:
    hydra kills every rank, and rank 0's witness names rank 3 (it checks in before building f;
    when it checked in after, the witness named whichever rank hydra killed next)."""
    write(tmp_path, slow_py=GONE_F.replace("os._exit(3)", "os.kill(os.getpid(), 9)"),
          slow_toml=SLOW)
    job = Launch(["run", "slow.toml", "-o", "gone.h5", "-q"], tmp_path, ranks=5)
    code, _, err = job.wait()
    assert code == 9, err
    named = witnessed(job, "gone.h5")
    assert named == ["3"] or (len(named) > 1 and "3" in named), err


@needs_mpiexec
def test_sigterm_to_mpiexec_then_resume_equals_an_uninterrupted_run(tmp_path):
    """SIGTERM to mpiexec. MPICH's hydra forwards it to every rank: the clean stop, exit 143.
    Open MPI's mpiexec does not forward it: it SIGKILLs every rank at once, and the file is the
    last commit (SIGTERM to rank 0 alone stops Open MPI cleanly: test_ulfm.py). Either way the
    file is whole, complete = false, and --resume gives the uninterrupted run's results."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    # 16 trials of at least 0.25 s: after 40 calls (some 3 trials) 3 s are left for the stop
    sets = ["-q", "--set", "job.trials=16", "--set", "stragglers.delay=0.25"]
    job = Launch(["run", "slow.toml", "-o", "cut.h5", *sets], tmp_path, ranks=5)
    job.wait_for(lambda: lines(tmp_path / "calls.log") >= 40, "40 calls of f")
    job.signal(signal.SIGTERM)
    code, _, err = job.wait()
    if OPENMPI:
        assert code not in (0, 143) and "stopped by SIGTERM" not in err, err
    else:
        assert code == 143, err
        assert re.search(r"gcc_mpi: stopped by SIGTERM after \d+ of 16 trials; cut.h5 holds "
                         r"them \(complete = false\)", err), err
        assert "witness" not in err  # rank 0 ended the job itself
    cut = read_results(tmp_path / "cut.h5")
    assert not cut.complete
    assert_consistent(cut, at_most=15)
    assert trials_in(tmp_path / "cut.h5") >= 1
    assert_resume_equals_a_whole_run(tmp_path, sets)


@needs_mpiexec
def test_sigkill_of_rank_0_leaves_a_readable_file_with_every_committed_trial(tmp_path):
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    # 300 trials: the job must still run when the kill lands (40 could all be done by the
    # commit that first showed 3 trials, on a loaded machine: a complete file, no kill)
    job = Launch(["run", "slow.toml", "-o", "k.h5", "-q", "--set", "job.trials=300"], tmp_path,
                 ranks=5)
    job.wait_for(lambda: trials_in(tmp_path / "k.h5") >= 3, "3 trials in the file")
    before = trials_in(tmp_path / "k.h5")  # the live file is readable while it is written
    rank0 = job.pid(0)
    os.kill(rank0, signal.SIGKILL)
    code, _, err = job.wait()
    if OPENMPI:  # Open MPI's mpiexec ends the others and exits non-zero with its own code
        assert code != 0
        # alone, or among the ranks whose ends the witness saw at once
        said = re.search(r"gcc_mpi: (rank 0 ended before the job did|ranks ([\d, ]+) ended at)",
                         err)
        assert said and (said.group(2) is None or "0" in said.group(2).split(", ")), err
    else:
        assert code == 9, err
        named = witnessed(job, "k.h5")
        assert named == ["0"] or (len(named) > 1 and "0" in named), err
    res = read_results(tmp_path / "k.h5")
    assert not res.complete and trials_in(tmp_path / "k.h5") >= before
    assert_consistent(res, at_most=299)  # of 300: any number may be in when the kill lands


@needs_mpiexec
@pytest.mark.parametrize("sets, line", [
    (["--set", "code.worker=4"], "gcc_mpi: error: code.worker: unknown key; did you mean "
                                 "'code.workers'?"),
    (["--set", "data.batch=10"], "gcc_mpi: error: code.workers: must be >= data.batch = 10"),
    (["--set", "code.workers=12"], "gcc_mpi: error: code.workers: must be <= ranks - 1 = 8"),
    (["--set", 'code.schemes=["gc"]'], "gcc_mpi: error: code.schemes: must be a non-empty list"),
    (["--set", "stragglers.model=paretto"], "gcc_mpi: error: stragglers.model: must be one of"),
    (["--set", "job.trials=0"], "gcc_mpi: error: job.trials: must be an integer >= 1, got 0"),
])
def test_a_bad_job_on_9_ranks_exits_2_with_one_line(tmp_path, sets, line):
    """Checked on every rank before MPI starts: one line from rank 0, exit code 2, no file
    (Open MPI's mpiexec adds its own notice of a non-zero exit, framed by dashes)."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    code, out, err = run(["run", "slow.toml", *sets], tmp_path, ranks=9)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith(line), err
    assert not (tmp_path / "results").exists()


# -- the simulator: the same stops and resumes ---------------------------------------------
SLOW_SIMULATE = ["--set", "job.trials=200", "--set", "code.workers=6"]


def start_slow_simulate(tmp_path):
    """``simulate slow.toml`` of 200 trials (f sleeps 2 ms a call), once f has been called 100
    times: the launch, for a signal while trials run."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    job = Launch(["simulate", "slow.toml", "-o", "cut.h5", "-q", *SLOW_SIMULATE], tmp_path,
                 env={"SLOW": "0.002"})
    job.wait_for(lambda: lines(tmp_path / "calls.log") >= 100, "100 calls of f")
    return job


def test_simulate_sigint_then_resume_equals_an_uninterrupted_run(tmp_path):
    job = start_slow_simulate(tmp_path)
    job.signal(signal.SIGINT)
    code, _, err = job.wait()
    assert code == 130, err
    assert "stopped by SIGINT" in err and "--resume continues" in err
    assert not read_results(tmp_path / "cut.h5").complete
    assert 0 < trials_in(tmp_path / "cut.h5") < 200
    code, _, err = run(["simulate", "slow.toml", "-o", "cut.h5", "--resume", "-q",
                        *SLOW_SIMULATE], tmp_path)
    assert code == 0, err
    assert main(["simulate", str(tmp_path / "slow.toml"), "-o", str(tmp_path / "full.h5"),
                 "-q", *SLOW_SIMULATE]) == 0
    assert_same_results(tmp_path / "cut.h5", tmp_path / "full.h5")


def test_time_limit_stops_cleanly_and_a_resume_may_change_it(tmp_path, monkeypatch, capsys):
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    # f sleeps 50 ms a call (4 calls a trial): 100 trials take 20 s, the limit stops them after
    # 1.5 s, when a start-up of milliseconds (in this process) has left time for several
    monkeypatch.setenv("SLOW", "0.05")
    job, out, full = (str(tmp_path / n) for n in ("slow.toml", "cut.h5", "full.h5"))
    sets = ["--set", "job.trials=100"]
    assert main(["simulate", job, "-o", out, "-q", *sets, "--set", "job.time_limit=1.5"]) == 124
    assert "stopped at job.time_limit = 1.5 s after" in capsys.readouterr().err
    cut = read_results(out)
    assert not cut.complete and 0 < trials_in(out) < 100
    monkeypatch.setenv("SLOW", "0")  # the results do not depend on it
    assert main(["simulate", job, "-o", out, "-q", "--resume", *sets]) == 0  # no limit now
    assert main(["simulate", job, "-o", full, "-q", *sets]) == 0
    assert_same_results(out, full)
    # a resume of another job is refused, naming the first difference
    assert main(["simulate", job, "-o", out, "--resume", "--set", "job.trials=61"]) == 2
    assert "was written for a different job (line" in capsys.readouterr().err


# -- bad input ----------------------------------------------------------------------------------
def _toml_values():
    scalars = (st.integers(-10**6, 10**20) | st.floats(allow_nan=True) | st.booleans()
               | st.text(max_size=12) | st.sampled_from(["gcc", "bacc", "digits", "auto",
                                                         "fixed", "python", "a.py:f"]))
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                        | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)


_KEYS = st.sampled_from(["job", "data", "target", "code", "stragglers", "decode", "sweep",
                         "code.gcc", "code.lcc", "job.seed", "data.batch", "code.workers",
                         "code.schemes", "stragglers.model", "stragglers.count", "data.source",
                         "decode.wait", "decode.deadline", "target.kind", "job.time_limit",
                         "sweep.stragglers.count", "nonsense", "data.bacth"])
_DOCS = st.dictionaries(_KEYS, _toml_values(), max_size=6)


def _toml(doc):
    """A TOML text of dotted keys = values (repr of lists/strings is close enough: anything
    unparsable must be reported as invalid TOML, also a fine outcome)."""
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, float):
            return {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(str(v), repr(v))
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f'"{k}" = {value(x)}' for k, x in v.items()) + "}"
        return str(v)
    return "\n".join(f"{k} = {value(v)}" for k, v in doc.items()) + "\n"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_DOCS | st.text(max_size=60).map(lambda t: {"raw": t}))
def test_validate_never_shows_a_traceback(doc):
    text = doc["raw"] if list(doc) == ["raw"] else _toml(doc)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "job.toml"
        path.write_text(text)
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(["validate", str(path)])
    assert code in (0, 2)
    if code == 2:
        shown = err.getvalue().strip().splitlines()
        assert len(shown) == 1 and shown[0].startswith("gcc_mpi: error: "), shown


def _data_file(tmp_path, kind):
    p = tmp_path / "x.npy"
    if kind == "pickled":
        np.save(p, np.array([{"a": 1}] * 20, dtype=object), allow_pickle=True)
    elif kind == "nan":
        X = np.ones((20, 4))
        X[3, 1] = np.nan
        np.save(p, X)
    elif kind == "1-d":
        np.save(p, np.ones(20))
    elif kind == "truncated":
        buffer = io.BytesIO()
        np.save(buffer, np.ones((20, 4)))
        p.write_bytes(buffer.getvalue()[:200])
    elif kind == "wrong-key":
        p = tmp_path / "x.h5"
        with h5py.File(p, "w") as f:
            f["X"] = np.ones((20, 4))
    return p.name


@pytest.mark.parametrize("kind, key, message", [
    ("missing", "data.path", "file not found"),
    ("pickled", "data.path", "pickled or object data, which is never"),
    ("nan", "data.path", "NaN or inf"),
    ("1-d", "data.path", "expected 2-D rows"),
    ("truncated", "data.path", "cannot read"),
    ("wrong-key", "data.key", "'Y' is not in"),
])
def test_bad_data_files_are_one_line_and_exit_2(tmp_path, capsys, kind, key, message):
    name = _data_file(tmp_path, kind) if kind != "missing" else "nowhere.npy"
    (tmp_path / "job.toml").write_text(
        f'[data]\nsource = "file"\npath = "{name}"\nbatch = 3\n'
        + ('key = "Y"\n' if kind == "wrong-key" else "")
        + '[target]\nkind = "linear"\n[code]\nworkers = 6\n')
    assert main(["simulate", str(tmp_path / "job.toml"), "-o", str(tmp_path / "o.h5")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"gcc_mpi: error: {key}: ") and message in err[0]
    assert not (tmp_path / "o.h5").exists()


def test_an_existing_output_is_refused_and_a_bad_python_target_is_found_before_the_run(
        tmp_path, capsys):
    (tmp_path / "o.h5").write_text("precious")
    (tmp_path / "job.toml").write_text('[target]\nkind = "linear"\n[data]\nsource = "gaussian"'
                                       '\ndim = 4\nbatch = 3\n[code]\nworkers = 6\n')
    assert main(["simulate", str(tmp_path / "job.toml"), "-o", str(tmp_path / "o.h5")]) == 2
    assert "o.h5 exists; use --overwrite or --resume" in capsys.readouterr().err
    assert (tmp_path / "o.h5").read_text() == "precious"
    for body, message in [("import nosuchmodule\ndef f(X): return X", "importing"),
                          ("def f(X): return X[:, :1].ravel()", "returned shape (1,)")]:
        (tmp_path / "t.py").write_text(body)
        assert main(["simulate", str(tmp_path / "job.toml"), "-o", str(tmp_path / "p.h5"),
                     "--set", "target.kind=python", "--set", 'target.function="t.py:f"']) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "target.function" in err[0] and message in err[0], err
        assert not (tmp_path / "p.h5").exists()


# -- the pieces, without processes --------------------------------------------------------------
class _Target:
    """f(X) = X[:, :2] + 1, raising on rows with x0 > 5, NaN where x1 > 5, wrong shape x2 > 5."""

    output_dim = 2

    def __call__(self, X):
        if np.any(X[:, 0] > 5):
            raise ZeroDivisionError("x0 > 5")
        if np.any(X[:, 2] > 5):
            return np.ones((len(X), 3))
        Y = X[:, :2] + 1.0
        Y[X[:, 1] > 5] = np.inf
        return Y


def test_evaluate_rows_finds_the_rows_that_fail():
    X = np.zeros((6, 3))
    Y, codes, texts = evaluate_rows(_Target(), X, 2)
    assert np.array_equal(Y, np.ones((6, 2))) and not codes.any()  # one clean batch call
    X[1, 0] = X[3, 1] = X[4, 2] = 9.0
    Y, codes, texts = evaluate_rows(_Target(), X, 2)
    assert codes.tolist() == [0, RAISED, 0, NONFINITE, SHAPE, 0]
    assert texts[1] == "ZeroDivisionError: x0 > 5" and texts[3] == "returned NaN or inf"
    assert texts[4] == "returned shape (1, 3), expected (1, 2)"
    assert np.isnan(Y[[1, 3, 4]]).all() and np.array_equal(Y[[0, 2, 5]], np.ones((3, 2)))
    assert summary(codes, texts) == ("worker 1: ZeroDivisionError: x0 > 5; worker 3: returned "
                                     "NaN or inf; worker 4: returned shape (1, 3), expected (1, 2)")
    assert summary(np.array([1, 0, 1], np.int8), ["e", "", "e"]) == "workers 0, 2: e"
    assert summary(np.zeros(3, np.int8), [""] * 3) == ""


@pytest.mark.parametrize("scheme, wait, S, deadline", [
    ("bacc", "fastest", 2, None), ("bacc", "deadline", 0, 0.5), ("gcc", "all", 0, None),
    ("uncoded", "fastest", 0, None), ("lcc", "fastest", 0, 0.7)])
def test_stop_rule_with_erasures_matches_a_walk_through_the_arrivals(scheme, wait, S, deadline):
    """simulate_erasures (bisection) against the master's loop: take results in arrival
    order, skip erasures, stop when done (or at the deadline)."""
    rng = np.random.default_rng(1)
    code = make_code(scheme, 10, 4, **({"degree": 2} if scheme == "lcc" else {}))
    rule = WaitPolicy(code, wait, S, deadline)
    n = len(code.active)
    for _ in range(200):
        arrival, ok = rng.random(n), rng.random(n) > 0.3
        received, t_stop, erased = rule.simulate_erasures(arrival, ok)
        mask, got, seen = np.zeros(code.N, bool), [], []
        for i in np.argsort(arrival, kind="stable"):
            if deadline is not None and arrival[i] > deadline:
                break
            if not ok[i]:
                seen.append(code.active[i])
                continue
            mask[code.active[i]] = True
            got.append(code.active[i])
            if rule.done(mask, len(got)):
                break
        assert list(received) == got and list(erased) == seen


def _rows(n, t0=0):
    return {"trial": np.arange(t0, t0 + n), "nmse": np.full(n, 0.5), "reason": ["ok"] * n,
            "used": np.ones((n, 3), bool), "error": np.zeros((n, 3), np.int8)}


def test_the_file_on_disk_is_always_a_whole_commit(tmp_path):
    path = tmp_path / "r.h5"
    w = ResultWriter(path, config_toml="x = 1\n", command="test", mpi="simulate")
    assert read_results(path).points == []  # created whole, complete = false
    w.add_point(0, {})
    w.append(0, "gcc", _rows(2))
    w.flush(force=True)
    w.append(0, "gcc", _rows(1, 2))  # not committed yet: the disk keeps the last commit
    d = read_results(path).points[0].schemes["gcc"]
    assert d["trial"].tolist() == [0, 1] and d["error"].dtype == np.int8
    w.close(complete=False)
    res = read_results(path)
    assert not res.complete and res.points[0].schemes["gcc"]["trial"].tolist() == [0, 1, 2]
    assert not (tmp_path / "r.h5.tmp").exists()


def test_resume_aligns_uneven_schemes_and_ignores_only_the_time_limit(tmp_path):
    path = tmp_path / "r.h5"
    config = "[job]\ntrials = 5\ntime_limit = 60.0\n"
    with ResultWriter(path, config_toml=config, command="t", mpi="simulate") as w:
        w.add_point(0, {})
        w.append(0, "a", _rows(3))
        w.append(0, "b", _rows(2))  # stopped between the two schemes' appends
    w = ResultWriter(path, config_toml=config.replace("60.0", "7.5"), command="t",
                     mpi="simulate", resume=True)
    assert w.align(0, ["a", "b"]) == 2 and w.trials_done(0, "a") == 2
    w.append(0, "a", _rows(1, 2))
    w.close(complete=False)
    assert read_results(path).points[0].schemes["a"]["trial"].tolist() == [0, 1, 2]
    with pytest.raises(JobError, match="different job"):
        ResultWriter(path, config_toml=config.replace("5", "6"), command="t", mpi="simulate",
                     resume=True)


def test_progress_shows_points_trials_rate_and_eta():
    stream = io.StringIO()
    p = Progress(40, points=4, stream=stream, every=0.0)
    p.start_point(1)
    p.skip(10)
    for _ in range(5):
        p.trial_done()
    text = stream.getvalue().splitlines()[-1]
    assert re.fullmatch(r"progress: point 2/4  15/40 trials  \S+/s  eta \S+( s|m\d\ds|h\d\dm)?",
                        text), text


# -- deaths and silences, the pieces without processes ------------------------------------------
class _FakeMPI:
    """What Deaths asks of mpi4py under ULFM: the failed group (``failed``) and its ranks."""

    class Group:
        @staticmethod
        def Translate_ranks(group, ranks, other):
            return [group.ranks[i] for i in ranks]

    def __init__(self):
        self.failed = []

    class _Group:
        def __init__(self, ranks):
            self.ranks = ranks

        def Get_size(self):
            return len(self.ranks)

        def Free(self):
            pass


class _FakeComm:
    def __init__(self, mpi):
        self.mpi, self.acked = mpi, 0

    def Get_failed(self):
        return _FakeMPI._Group(list(self.mpi.failed))

    def Get_group(self):
        return None

    def Ack_failed(self):
        self.acked += 1

    def Is_revoked(self):
        return False


def test_a_death_told_twice_is_buried_once(monkeypatch):
    """The race of issue 25: rank 0's pid scan buries rank 5, then MPI's own report of rank 5
    comes (the control receive fails). That report is no news — not "MPI reported a process
    failure but no failed rank", which ended the job (4 of 4 runs with the scan forced on
    every poll) — and a report that names no rank at all still ends it, after FIND_DEAD s."""
    from gcc_mpi.runtime import deaths as D
    from gcc_mpi.runtime.mpi import RankFailure

    mpi = _FakeMPI()
    comm = _FakeComm(mpi)
    gone = set()
    monkeypatch.setattr(D, "process_gone", lambda pid: pid in gone)
    monkeypatch.setattr(D, "FIND_DEAD", 0.05)
    peers = {r: (100 + r, "here") for r in range(1, 8)}
    deaths = D.Deaths(comm, mpi, peers, "here", ft=True)
    gone.add(105)  # the scan sees rank 5's pid end first ...
    with pytest.raises(RankFailure):
        deaths.next_look = 0.0
        deaths.check()
    assert deaths.news(RankFailure("a worker's process ended")) == {5}
    mpi.failed = [5]  # ... then MPI reports the same rank
    assert deaths.news(RankFailure("MPI_ERR_PROC_FAILED_PENDING")) == set()
    assert deaths.dead == {5} and comm.acked >= 2
    mpi.failed = [5, 3]  # MPI first this time: rank 3 is news once, whichever way tells again
    assert deaths.news(RankFailure("MPI_ERR_PROC_FAILED")) == {3}
    gone.add(103)
    assert deaths.news() == set()
    gone.clear()
    mpi.failed = []  # a failure that MPI never names ends the job
    with pytest.raises(D.WorkerLost, match="no failed rank"):
        D.Deaths(comm, mpi, peers, "here", ft=True).news(RankFailure("MPI_ERR_PROC_FAILED"))
    gone.update({103, 105})
    # hydra (no ULFM): a notice per dead process; one more notice than buried deaths and no
    # ended pid of rank 0's node: a death elsewhere, which rank 0 cannot name
    notice = type("Notice", (), {"count": 1})()
    deaths = D.Deaths(comm, mpi, peers, "here", ft=False, notice=notice)
    assert deaths.news() == {3, 5}
    notice.count = 2
    assert deaths.news() == set()  # both notices are of the deaths buried
    notice.count = 3
    with pytest.raises(D.WorkerLost, match="not on rank 0's node"):
        deaths.news()


class _Request:
    """A nonblocking send that completes (``done``) or never does (a rank that died unseen)."""

    def __init__(self, done):
        self.done = done

    def Test(self):
        return self.done

    def __bool__(self):
        return True


def test_the_ending_names_a_rank_whose_exit_never_went(monkeypatch, caplog):
    """Issue 38 (c): under ULFM rank 19 was killed at trial 97 of 100 and no way of ``Deaths``
    told of it before the end; its EXIT never completed (nor failed), and the job ended with
    "not every worker took its EXIT" naming nobody. The ending names it (rank, worker, pid,
    host), as a silent rank is named; the others' EXITs, BYEs and LEAVEs went. When every EXIT
    and LEAVE went, nobody stood in the way."""
    from types import SimpleNamespace

    from gcc_mpi.runtime import ending
    from gcc_mpi.runtime.deaths import Deaths

    peers = {r: (100 + r, "gcc-host3" if r > 15 else "gcc-host2") for r in range(1, 24)}
    mpi = SimpleNamespace(Exception=RuntimeError, REQUEST_NULL=None)
    deaths = Deaths(None, mpi, peers, "gcc-host1")

    def all_done(requests, until=None):
        return all(r.Test() for r in requests)

    master = SimpleNamespace(
        comm=SimpleNamespace(size=24), MPI=mpi, ft=True, peers=peers, deaths=deaths,
        orphans=[], listen=lambda: None, unlisten=lambda: None, slots=None,
        losses=SimpleNamespace(discard=None),
        hung=SimpleNamespace(settle=lambda *a: []),
        notices=SimpleNamespace(await_byes=lambda: None, farewells=lambda *a: True),
        send_control=lambda row, rank: _Request(rank != 19),
        waiter=SimpleNamespace(all=all_done))
    aborted = []
    monkeypatch.setattr(ending, "abort", lambda comm, code: aborted.append(code))
    caplog.set_level("CRITICAL", logger=ending.__name__)
    ending.finish(master, 0)
    assert aborted == [1]
    assert ("not every worker took its EXIT: rank 19 (worker 18, pid 119 on gcc-host3) did not "
            "in time; ending the job with MPI_Abort") in caplog.text
    master.send_control = lambda row, rank: _Request(True)
    assert ending.shutdown(master, grace=0.01) == set()


class _Round:
    """What Hung.look reads of a Round."""

    def __init__(self, seq, pending, t_sent, delays, stopped=(), decided=None):
        self.seq, self.pending, self.t_sent = seq, set(pending), t_sent
        self.rec = {"delay": np.asarray(delays, float)}
        self.stopped, self.decided = set(stopped), decided


def look_at(hung, rounds, now):
    """``hung.look`` at ``now`` with rank 0 looking all along (no gap in its looks: a gap means
    rank 0 did not run, the last of these tests)."""
    hung.next_look, hung.looked = 0.0, now
    return hung.look(rounds, now)


def test_a_worker_is_hung_past_its_delay_plus_ten_times_its_usual_time():
    """Due times: a worker owes the oldest reply it holds by max(the send, its last reply) +
    its delay + HANG (HANG_MIN = 3 s, or 10 x the 90th percentile of its results' time beyond
    their delay), or by the STOP + HANG; not so in a round nobody answered yet (an f slower
    than HANG_MIN for everyone is no hang: see the next test)."""
    from gcc_mpi.runtime.hung import HANG_MIN, Hung

    hung = Hung(None, None, None, {}, "here", 4)
    r = _Round(1, [0, 1, 2], t_sent=100.0, delays=[0.0, 5.0, 0.0])
    assert look_at(hung, [r], 104.0) == []  # nobody answered round 1 yet
    hung.replied(3, 1, 100.01, beyond=0.01)  # worker 2 did
    r.pending.discard(2)
    assert look_at(hung, [r], 100.0 + HANG_MIN - 0.01) == []
    assert look_at(hung, [r], 100.0 + HANG_MIN + 0.01) == [1]  # worker 0; worker 1 sleeps 5 s
    assert look_at(hung, [r], 100.0 + 5.0 + HANG_MIN + 0.01) == [1, 2]
    r.stopped, r.decided = {0, 1}, 101.0  # STOPped at 101 s: due by 104 s, whatever the delay
    assert look_at(hung, [r], 104.01) == [1, 2]
    for _ in range(10):  # rank 1's results take 1 s beyond their delay: 10 s of patience,
        hung.replied(1, 1, 100.0, beyond=1.0)  # for the ranks with fewer results of their own
    assert list(hung.hang_after()[1:]) == pytest.approx([10.0] * 3)
    assert look_at(hung, [r], 104.01) == []
    assert look_at(hung, [r], 111.01) == [1, 2]
    for _ in range(10):
        hung.replied(2, 1, 100.0, beyond=0.01)  # its own results: fast
    assert hung.hang_after()[2] == HANG_MIN


def test_a_round_nobody_answers_waits_for_silence_then_its_workers_are_hung():
    """A round no worker answered waits SILENCE = max(SILENCE_MIN = 60 s, 100 x the longest
    rank 0's own f took on a batch) beyond each worker's delay, not for ever (every worker
    stopped at once)."""
    from gcc_mpi.runtime.hung import SILENCE_FACTOR, SILENCE_MIN, Hung

    hung = Hung(None, None, None, {}, "here", 4)
    r = _Round(1, [0, 1, 2], t_sent=100.0, delays=[0.0, 5.0, 0.0])
    hung.timed(0.2)  # 100 x 0.2 s = 20 s: the floor holds
    assert hung.silence() == SILENCE_MIN == 60.0
    assert look_at(hung, [r], 100.0 + SILENCE_MIN - 0.01) == []
    assert look_at(hung, [r], 100.0 + SILENCE_MIN + 0.01) == [1, 3]  # worker 1 sleeps 5 s more
    assert hung.waited[1] == SILENCE_MIN
    hung.timed(1.5)  # a slower f: 150 s
    assert hung.silence() == 1.5 * SILENCE_FACTOR == 150.0
    assert look_at(hung, [r], 100.0 + 149.9) == []
    assert look_at(hung, [r], 100.0 + 5.0 + 150.01) == [1, 2, 3]


def test_a_gap_in_rank_0s_looks_restarts_every_workers_grace():
    """Rank 0 that did not look for more than JUMP s (the whole job suspended, or rank 0 busy)
    counts the replies owed from the end of the gap: a worker overdue by rank 0's clock across
    the gap is not hung until its grace has passed again after it."""
    from gcc_mpi.runtime.hung import HANG_MIN, JUMP, Hung

    hung = Hung(None, None, None, {}, "here", 4)
    r = _Round(1, [0, 1, 2], t_sent=100.0, delays=[0.0, 0.0, 0.0])
    hung.replied(3, 1, 100.01, beyond=0.01)  # worker 2 answered: the others owe theirs
    r.pending.discard(2)
    busy = Hung(None, None, None, {}, "here", 4)
    busy.replied(3, 1, 100.01, beyond=0.01)
    assert look_at(hung, [r], 100.5) == [] and look_at(busy, [r], 100.5) == []
    back = 100.5 + JUMP + 8.0                 # 8 s and more since the last look
    assert busy.look([r], back, cpu=busy.cpu + back - 100.5) == [1, 2]  # rank 0 computed
    assert hung.look([r], back, cpu=hung.cpu) == []  # rank 0 did not run: due again from now
    assert look_at(hung, [r], back + HANG_MIN - 0.01) == []
    assert look_at(hung, [r], back + HANG_MIN + 0.01) == [1, 2]
