"""Open MPI: ULFM fault tolerance (a killed worker is a permanent straggler), stops and resumes,
and the Waitsome gather with its control receive.

The ULFM tests need Open MPI (`mpiexec --with-ft ulfm`): marked ``ulfm``, the MPICH environment
deselects them (tests/conftest.py) and .ci/run's Open MPI stage runs them (MPICH's own fault
path, hydra's -disable-auto-cleanup, is tested in test_faults.py). The signal and Waitsome tests
run under either MPI. Deaths are provoked inside f (tests/test_faults.py's SLOW_F: at a given
call of f) or from outside once the results file shows the run under way; nothing waits a fixed
time.
"""

import json
import os
import re
import signal

import numpy as np
import pytest

from mpirun import KEEP_GOING, MPI_NAME, Launch, needs_mpiexec, run
from test_faults import (DONE_WHEN_F, SLOW, SLOW_F, assert_consistent,
                         assert_resume_equals_a_whole_run, trials_in, write)

from gcc_mpi.core.erasures import LOST
from gcc_mpi.files.reader import read_results
from gcc_mpi.runtime.mpi import FT_ENV, fault_tolerant, flavour, library

needs_ulfm = pytest.mark.ulfm  # deselected under MPICH (tests/conftest.py)

# K = 3, N = 6 (7 ranks): lcc of degree 2 needs (K - 1) * 2 + 1 = 5 results, so it survives one
# dead worker and not two; uncoded needs workers 0..2
LCC = ["--set", 'code.schemes=["uncoded", "lcc", "bacc", "gcc"]', "--set", "code.lcc.degree=2"]


def died(err):
    """{rank: trial} from rank 0's lines 'rank R (worker W, pid P) died during trial T'."""
    return {int(r): int(t) for r, t in
            re.findall(r"gcc_mpi: rank (\d+) \(worker \d+, pid \d+\) died during trial (\d+)", err)}


def check_survived(path, trials, dead, decoding=("bacc", "gcc")):
    """The run went to the end with the dead ranks as permanent stragglers: complete, every
    trial of every scheme, the dead ranks LOST and unused after the trial they died in, the
    file's `lost` attribute naming them, and ``decoding`` schemes never failed."""
    res = read_results(path)
    assert res.complete
    assert_consistent(res, at_most=trials)
    lost = json.loads(res.attrs["lost"])
    assert {e["rank"]: e["trial"] for e in lost} == dead
    for e in lost:
        assert e["worker"] == e["rank"] - 1 and e["point"] == 0
    for name, d in res.points[0].schemes.items():
        assert len(d["trial"]) == trials, name
        for rank, t in dead.items():
            w, after = rank - 1, slice(t + 1, None)
            assert not d["used"][after, w].any(), (name, rank)
            # LOST wherever the scheme has a task for it: bacc and gcc use every worker
            expected = {LOST} if name in ("bacc", "gcc") else {0, LOST}
            assert set(d["error"][after, w].tolist()) <= expected, (name, rank)
            assert LOST in d["error"][after, w] or name not in ("bacc", "gcc")
    for name in decoding:
        assert not res.points[0].schemes[name]["failed"].any(), name
    return res


@needs_mpiexec
@needs_ulfm
@pytest.mark.parametrize("how, wait", [("kill", "polite"), ("later", "busy")])
def test_a_worker_killed_while_computing_or_idle_is_a_permanent_straggler(tmp_path, how, wait):
    """SIGKILL of rank 3 inside f (computing), or 0.2 s after it replied (idle, or sleeping
    its next delay): the job goes on without it and exits 0 with a complete file; uncoded,
    which needs worker 2, records its later trials as failed with the reason."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    code, _, err = run(["run", "slow.toml", "-o", "u.h5", "-q", "--wait", wait, "--set",
                        "job.trials=12"], tmp_path, ranks=5, mpiexec_options=KEEP_GOING,
                       env={"DIE_RANK": "3", "DIE_AT": "5", "DIE_HOW": how})
    assert code == 0, err
    assert "ULFM fault tolerance is on" in err and "ranks 3 died" in err
    dead = died(err)
    assert list(dead) == [3], err
    res = check_survived(tmp_path / "u.h5", 12, dead)
    d = res.points[0].schemes["uncoded"]
    t = dead[3]
    assert d["failed"][t + 1:].all()
    assert set(d["reason"][t + 1:]) == {"uncoded needs all 3 results, got 2"}
    assert all("rank 3 died" in text for text in d["error_text"][t + 1:])
    if wait == "busy":  # under ULFM a busy master spins on Testsome: a worker's exit() is
        assert "Waitsome calls" not in err  # found only by its pid, which a blocked one misses


@needs_mpiexec
@needs_ulfm
def test_two_killed_workers_leave_lcc_unable_to_decode_and_the_others_go_on(tmp_path):
    """Ranks 2 and 4 SIGKILLed: N - lost = 4 < 5 results that lcc (degree 2, K = 3) needs, so
    lcc records every later trial as failed with the reason; bacc and gcc decode from the
    four others; the job exits 0 and the file names both dead ranks."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    code, _, err = run(["run", "slow.toml", "-o", "two.h5", "-q", "--set", "job.trials=10",
                        "--set", "stragglers.model=none", *LCC], tmp_path, ranks=7,
                       mpiexec_options=KEEP_GOING,
                       env={"DIE_RANK": "2,4", "DIE_AT": "6"})
    assert code == 0, err
    dead = died(err)
    assert set(dead) == {2, 4}, err
    res = check_survived(tmp_path / "two.h5", 10, dead)
    lcc = res.points[0].schemes["lcc"]
    after = max(dead.values()) + 1
    assert not lcc["failed"][:min(dead.values())].any()  # lcc decoded while it could
    assert lcc["failed"][after:].all()
    assert all(r.startswith("lcc needs 5 results") and r.endswith("got 4")
               for r in lcc["reason"][after:]), set(lcc["reason"][after:])


@needs_mpiexec
@needs_ulfm
def test_a_kill_with_three_rounds_in_flight(tmp_path):
    """decode.pipeline = 3, busy waiting: rank 3 dies while it holds tasks of several rounds;
    rank 0 forgets its requests in every round in flight, records it LOST in those still
    waiting and completes."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    code, _, err = run(["run", "slow.toml", "-o", "p.h5", "-q", "--wait", "busy", "--set",
                        "job.trials=12", "--set", "decode.pipeline=3"], tmp_path, ranks=5,
                       mpiexec_options=KEEP_GOING, env={"DIE_RANK": "3", "DIE_AT": "7"})
    assert code == 0, err
    dead = died(err)
    assert list(dead) == [3], err
    check_survived(tmp_path / "p.h5", 12, dead)
    assert "pipeline 3" in err





@needs_mpiexec
@needs_ulfm
def test_the_150_trial_job_survives_a_sigkill_of_rank_5(tmp_path):
    """The issue's scenario: 16 ranks, digits MLP, K = 8, N = 15, bacc and gcc, 2 fixed
    stragglers of 30 ms; rank 5 SIGKILLs itself in its 40th call of f (DONE_WHEN_F: trial 19
    or later, 130 before the end; a kill sent once 20 trials were in the file could land after
    the end on a loaded machine): exit 0, complete, 150 trials per scheme, none failed."""
    write(tmp_path, slow_py=SLOW_F, ulfm_toml=DONE_WHEN_F)
    code, _, err = run(["run", "ulfm.toml", "-o", "ulfm.h5", "-q"], tmp_path, ranks=16,
                       mpiexec_options=KEEP_GOING, env={"MLP": "1", "DIE_RANK": "5",
                                                        "DIE_AT": "40"})
    assert code == 0, err
    dead = died(err)
    assert list(dead) == [5] and dead[5] >= 19, err
    res = check_survived(tmp_path / "ulfm.h5", 150, dead)
    for name, d in res.points[0].schemes.items():  # no loss, simulated: -14.7 / -18.4 dB
        assert not d["failed"].any(), name
        assert 10 * np.log10(d["nmse"].mean()) < -10 and d["relacc"].mean() > 0.9, name


@needs_mpiexec
@needs_ulfm
def test_an_exception_on_a_worker_under_ulfm_ends_every_rank(tmp_path):
    """Rank 3 cannot build f (tests/test_runtime.py's BOOM) under --with-ft ulfm, where
    MPI_Abort would end rank 3 alone: it revokes MPI_COMM_WORLD and leaves; rank 0, waiting
    for its READY, says another rank ended the job and leaves the same way; the other workers
    leave on MPI_ERR_REVOKED. Exit 1, no process left (``Launch.wait`` checks)."""
    from test_runtime import BOOM, BOOM_F

    (tmp_path / "boom.py").write_text(BOOM_F)
    (tmp_path / "boom.toml").write_text(BOOM)
    code, _, err = run(["run", "boom.toml", "-o", "boom.h5"], tmp_path, ranks=5,
                       mpiexec_options=KEEP_GOING)
    assert code == 1, err
    assert "gcc_mpi: rank 3 of 5 on " in err and "ValueError: boom on purpose" in err
    assert "gcc_mpi: another rank ended the job (it revoked MPI_COMM_WORLD" in err, err


STOPS_ITSELF_F = '''
import os
import signal

import numpy as np

if (os.environ.get("OMPI_COMM_WORLD_RANK") or os.environ.get("PMI_RANK")) == "3":
    os.kill(os.getpid(), signal.SIGSTOP)  # while rank 3 builds f: after its HELLO, no READY


def f(X):
    return np.tanh(X)
'''


@needs_mpiexec
@needs_ulfm
def test_a_worker_silent_at_start_up_is_ended_and_the_job_goes_on_without_it(tmp_path):
    """Rank 3 stops itself while it builds f (HELLO sent, READY never): STARTUP_SILENCE (30 s)
    after the others were READY rank 0 ends it (SIGKILL), and under ULFM the job runs without
    it (LOST in every trial, bacc and gcc never fail). The wait is rank 0's, bounded; the test
    only waits for the job's end."""
    write(tmp_path, slow_py=STOPS_ITSELF_F, slow_toml=SLOW)
    code, _, err = run(["run", "slow.toml", "-o", "s.h5", "-q", "--set", "job.trials=4"],
                       tmp_path, ranks=7, mpiexec_options=KEEP_GOING)
    assert code == 0, err
    assert re.search(r"gcc_mpi: rank 3 \(worker 2, pid \d+ on \S+\) did not get ready within "
                     r"30 s of the others; ending it \(SIGKILL\)", err), err
    res = read_results(tmp_path / "s.h5")
    assert res.complete
    for name, d in res.points[0].schemes.items():
        assert len(d["trial"]) == 4 and (d["error"][:, 2] == LOST).all(), name
        assert not d["used"][:, 2].any(), name
    for name in ("bacc", "gcc"):
        assert not res.points[0].schemes[name]["failed"].any(), name


# -- either MPI ------------------------------------------------------------------------------
@needs_mpiexec
def test_the_default_job_on_12_ranks_names_its_mpi(tmp_path):
    """`mpiexec -n 12 python -m gcc_mpi` (10 trials here instead of the job's own count): exit
    0, a complete file whose `mpi` attribute names the MPI library (Open MPI's version string
    ends in a NUL byte, which an HDF5 attribute cannot hold)."""
    code, out, err = run(["-o", "d.h5", "--set", "job.trials=10"], tmp_path, ranks=12)
    assert code == 0, err
    res = read_results(tmp_path / "d.h5")
    assert res.complete and res.attrs["mpi"].startswith(MPI_NAME) and "\0" not in res.attrs["mpi"]
    assert "gcc" in out


@needs_mpiexec
@pytest.mark.parametrize("wait", ["busy", "polite"])
def test_sigterm_to_rank_0_alone_stops_cleanly_and_resume_equals_an_uninterrupted_run(
        tmp_path, wait):
    """SIGTERM to rank 0 only (under Open MPI the way to stop cleanly: its mpiexec does not
    forward SIGTERM). A busy rank 0 blocks in Waitsome and sees the signal when the next
    reply completes it; then the usual clean stop (exit 143), and --resume continues."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    # 16 trials of at least 0.25 s each: after the third, some 3 s are left for the stop to land
    sets = ["-q", "--wait", wait, "--set", "job.trials=16", "--set", "stragglers.delay=0.25"]
    job = Launch(["run", "slow.toml", "-o", "cut.h5", *sets], tmp_path, ranks=5)
    job.wait_for(lambda: trials_in(tmp_path / "cut.h5") >= 3, "3 trials in the file")
    os.kill(job.pid(0), signal.SIGTERM)
    code, _, err = job.wait()
    assert code == 143, err
    assert re.search(r"gcc_mpi: stopped by SIGTERM after \d+ of 16 trials; cut.h5 holds them",
                     err), err
    cut = read_results(tmp_path / "cut.h5")
    assert not cut.complete and 3 <= trials_in(tmp_path / "cut.h5") < 16
    assert_resume_equals_a_whole_run(tmp_path, sets)


@needs_mpiexec
def test_sigterm_to_one_worker_reaches_a_master_blocked_in_waitsome(tmp_path):
    """SIGTERM to worker rank 2 alone: the worker announces it on the control receive, which
    completes rank 0's Waitsome; rank 0 stops the job cleanly (exit 143) instead of the
    worker giving up after 30 s."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    job = Launch(["run", "slow.toml", "-o", "w.h5", "-q", "--wait", "busy"], tmp_path, ranks=5,
                 env={"SLOW": "0.01"})
    job.wait_for(lambda: trials_in(tmp_path / "w.h5") >= 2, "2 trials in the file")
    os.kill(job.pid(2), signal.SIGTERM)
    code, _, err = job.wait()
    assert code == 143, err
    assert "gcc_mpi: rank 2 got SIGTERM; stopping the job" in err
    assert not read_results(tmp_path / "w.h5").complete


@needs_mpiexec
def test_a_time_limit_is_kept_by_a_busy_master(tmp_path):
    """job.time_limit with --wait busy: rank 0 polls instead of blocking (a blocked rank would
    not see the deadline pass) and stops at the limit, exit 124. No Waitsome call is made."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    code, _, err = run(["run", "slow.toml", "-o", "t.h5", "-q", "--wait", "busy", "--set",
                        "job.trials=100000", "--set", "job.time_limit=4"], tmp_path, ranks=5)
    assert code == 124, err
    assert "stopped at job.time_limit = 4 s after" in err
    assert not read_results(tmp_path / "t.h5").complete


# -- the pieces, without processes -------------------------------------------------------------
def _fake_mpi(version):
    class Comm:
        def Get_failed(self):  # the ULFM call fault_tolerant looks for
            raise NotImplementedError

    return type("FakeMPI", (), {"Comm": Comm, "Get_library_version": staticmethod(
        lambda: version)})


def test_the_mpi_library_line_and_fault_tolerance_detection(monkeypatch):
    """Open MPI's version string ends in a NUL byte (an HDF5 attribute cannot hold one); ULFM
    is on only for Open MPI started with --with-ft (OMPI_MCA_mpi_ft_enable on every rank)."""
    ompi = _fake_mpi("Open MPI v5.0.11, package: Open MPI user@localhost Distribution\x00")
    mpich = _fake_mpi("MPICH Version:      5.0.2\nMPICH Release date: ...\n")
    assert library(ompi) == "Open MPI v5.0.11, package: Open MPI user@localhost Distribution"
    assert library(mpich) == "MPICH Version:      5.0.2"
    assert (flavour(ompi), flavour(mpich), flavour(_fake_mpi("Intel MPI"))) == (
        "openmpi", "mpich", "other")
    monkeypatch.delenv(FT_ENV, raising=False)
    assert not fault_tolerant(ompi)
    for value, on in (("1", True), ("true", True), ("0", False), ("false", False)):
        monkeypatch.setenv(FT_ENV, value)
        assert fault_tolerant(ompi) is on and not fault_tolerant(mpich)
