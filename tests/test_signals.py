"""Stops and ends that the README promises and tests/test_faults.py does not already launch:
job.time_limit (124) and SIGINT (130) over MPI, SIGTERM to rank 0 alone, SIGTERM to `simulate`
(143), a stop whose workers cannot be stopped (each step bounded, then MPI_Abort), the
immediate abort on a second Ctrl-C, and a worker that exits without `-disable-auto-cleanup`.

Every launch has a timeout (tests/mpirun.py); signals are sent once a marker (f's call log, a
line on stderr) shows the run is where the test needs it; nothing asserts on wall-clock time.
"""

import os
import re
import signal

import pytest
from mpirun import Launch, needs_mpiexec
from test_faults import (SLOW, SLOW_F, SLOW_SIMULATE, assert_consistent, lines,
                         start_slow_simulate, trials_in, witnessed, write)

from gcc_mpi.files.reader import read_results

STOPPED = (r"gcc_mpi: stopped {how} after \d+ of {trials} trials; {out} holds them "
           r"\(complete = false\): the same command with --resume continues")


def rank0_pid(job):
    """Rank 0's pid, from its start-up line."""
    return job.pid(0)  # (reading the line before it was whole failed once under load)


def assert_stopped_file(path, trials):
    """A whole file, complete = false, with trials 0..n-1 (n < trials; 0 when the stop came
    during the first trial)."""
    res = read_results(path)
    assert not res.complete
    if any(p.schemes for p in res.points):
        assert_consistent(res, at_most=trials - 1)


@needs_mpiexec
def test_time_limit_over_mpi_is_a_clean_stop_with_exit_code_124(tmp_path):
    """f sleeps 0.1 s a call, so 40 trials of 3 schemes take more than 12 s; the limit of 3 s
    (counted from rank 0's start, so a slow start-up only leaves fewer trials) stops them."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    job = Launch(["run", "slow.toml", "-o", "cut.h5", "-q", "--set", "job.time_limit=3"],
                 tmp_path, ranks=5, env={"SLOW": "0.1"})
    code, _, err = job.wait()
    assert code == 124, err
    assert re.search(STOPPED.format(how=r"at job.time_limit = 3 s", trials=40, out="cut.h5"),
                     err), err
    assert "MPI_Abort" not in err
    assert_stopped_file(tmp_path / "cut.h5", 40)

# hydra's (MPICH's mpiexec) behaviour; Open MPI's mpiexec forwards no SIGINT and ends every rank
# itself when one exits (docs/reliability.md), which test_faults.py and test_ulfm.py assert.
# Deselected under Open MPI (tests/conftest.py); the MPICH environment runs them.
hydra_only = pytest.mark.hydra


@needs_mpiexec
@hydra_only
def test_sigint_to_mpiexec_is_a_clean_stop_with_exit_code_130(tmp_path):
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    job = Launch(["run", "slow.toml", "-o", "cut.h5", "-q"], tmp_path, ranks=5)
    job.wait_for(lambda: lines(tmp_path / "calls.log") >= 20, "20 calls of f")
    job.signal(signal.SIGINT)  # Ctrl-C: mpiexec forwards it to every rank
    code, _, err = job.wait()
    assert code == 130, err
    assert re.search(STOPPED.format(how="by SIGINT", trials=40, out="cut.h5"), err), err
    assert "MPI_Abort" not in err and "witness" not in err
    assert_stopped_file(tmp_path / "cut.h5", 40)


@needs_mpiexec
def test_sigterm_to_rank_0_alone_stops_every_rank_cleanly(tmp_path):
    """The workers never see the signal: rank 0 stops them (STOP, EXIT) and mpiexec returns
    rank 0's 143. f sleeps 50 ms a call, so the 40 trials last more than 6 s."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    job = Launch(["run", "slow.toml", "-o", "cut.h5", "-q"], tmp_path, ranks=5,
                 env={"SLOW": "0.05"})
    rank0 = rank0_pid(job)
    job.wait_for(lambda: trials_in(tmp_path / "cut.h5") >= 2, "2 trials in the file")
    os.kill(rank0, signal.SIGTERM)
    code, _, err = job.wait()
    assert code == 143, err
    assert re.search(STOPPED.format(how="by SIGTERM", trials=40, out="cut.h5"), err), err
    assert "MPI_Abort" not in err and "witness" not in err
    res = read_results(tmp_path / "cut.h5")
    assert not res.complete and trials_in(tmp_path / "cut.h5") >= 2


def test_sigterm_to_simulate_is_a_clean_stop_with_exit_code_143(tmp_path):
    job = start_slow_simulate(tmp_path)
    job.signal(signal.SIGTERM)
    code, _, err = job.wait()
    assert code == 143, err
    assert re.search(STOPPED.format(how="by SIGTERM", trials=200, out="cut.h5"), err), err
    assert_stopped_file(tmp_path / "cut.h5", 200)


# f that takes 10 minutes from its 100th call on (a trial of minutes: K = 2000, N = 3000), after
# sending this process SIGTERM in that call when asked to
LONG_F = '''
import os
import signal
import time

import numpy as np

calls = 0


def f(X):
    global calls
    calls += 1
    if calls >= 100:
        if calls == 100 and os.environ.get("SELF_SIGNAL"):
            os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(600)
        open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "finished"), "w").close()
    return np.column_stack([np.sin(X).sum(1), (X ** 2).sum(1)])
'''


@pytest.mark.parametrize("how, code", [("by SIGTERM", 143), ("at job.time_limit = 3 s", 124)])
def test_a_stop_inside_a_long_trial_of_simulate_ends_it_at_once(tmp_path, how, code):
    """The trial under way is dropped, not finished: the stop does not wait for its 10 minutes
    (before, simulate honoured a stop only between schemes: 24 s of a 40 s trial). The job's
    time limit comes by an alarm, the signal inside f; either way the file keeps every trial
    finished before, and f never returns from its sleep."""
    write(tmp_path, slow_py=LONG_F, slow_toml=SLOW)
    limit = ["--set", "job.time_limit=3"] if code == 124 else []
    code_seen, _, err = Launch(["simulate", "slow.toml", "-o", "cut.h5", "-q", *SLOW_SIMULATE,
                                *limit], tmp_path,
                               env={} if code == 124 else {"SELF_SIGNAL": "1"}).wait()
    assert code_seen == code, err
    assert re.search(STOPPED.format(how=how, trials=200, out="cut.h5"), err), err
    assert not (tmp_path / "finished").exists()
    assert_stopped_file(tmp_path / "cut.h5", 200)


# f that signals its own process on its first call (the job's check of f on one input) and then
# takes 10 minutes: a stop while a job is set up (a big job's codes take minutes to build)
SETUP_F = '''
import os
import signal
import time

import numpy as np


def f(X):
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(600)
    return np.column_stack([np.sin(X).sum(1), (X ** 2).sum(1)])
'''


def test_a_stop_while_simulate_sets_the_job_up_ends_it_at_once(tmp_path):
    """Before, the stop waited for the set-up to end (2 minutes of building a K = 2000,
    N = 3000 job's codes under load): now one line, nothing written, 143."""
    write(tmp_path, slow_py=SETUP_F, slow_toml=SLOW)
    code, _, err = Launch(["simulate", "slow.toml", "-o", "cut.h5", "-q"], tmp_path).wait()
    assert code == 143, err
    assert "gcc_mpi: stopped by SIGTERM before the first trial; cut.h5 was not written" in err
    assert not (tmp_path / "cut.h5").exists()


# over MPI, f that takes 10 minutes once the test has written "go": on rank 0 in its reference
# f(X) of a trial (K = 3 inputs at once; a worker's call has one), or on every worker ("w")
LONG_MPI_F = '''
import os
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RANK = os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")
ON = os.environ["LONG_ON"]


def f(X):
    mine = (RANK == "0" and len(X) == 3) if ON == "0" else (RANK != "0" and len(X) == 1)
    if mine and os.path.exists(os.path.join(HERE, "go")):
        with open(os.path.join(HERE, "inside.log"), "a") as log:
            log.write(f"rank {RANK} inside f\\n")
        time.sleep(600)
        open(os.path.join(HERE, "finished"), "w").close()
    return np.column_stack([np.sin(X).sum(1), (X ** 2).sum(1)])
'''
LONG_MPI = SLOW.replace('"slow.py:f"', '"long.py:f"').replace("trials = 40", "trials = 100000")


def start_long_run(tmp_path, on, extra=()):
    """The job of LONG_MPI_F on 5 ranks, once 2 trials are in its file and f has been told to
    take 10 minutes (on rank 0, or on the workers): the launch."""
    write(tmp_path, long_py=LONG_MPI_F, long_toml=LONG_MPI)
    job = Launch(["run", "long.toml", "-o", "cut.h5", "-q", *extra], tmp_path, ranks=5,
                 env={"LONG_ON": on})
    job.wait_for(lambda: trials_in(tmp_path / "cut.h5") >= 2, "2 trials in the file")
    (tmp_path / "go").touch()
    return job


def assert_long_stop(tmp_path, job, code, how):
    """The run ended with ``code`` and the stop's line, in order (no MPI_Abort), f never
    returned from its sleep, and the file keeps its trials; the error output."""
    code_seen, _, err = job.wait()
    assert code_seen == code, err
    assert re.search(STOPPED.format(how=how, trials=100000, out="cut.h5"), err), err
    assert "MPI_Abort" not in err, err
    assert not (tmp_path / "finished").exists()
    assert not read_results(tmp_path / "cut.h5").complete
    assert trials_in(tmp_path / "cut.h5") >= 2
    return err


@needs_mpiexec
def test_a_stop_inside_rank_0s_long_trial_ends_it_at_once(tmp_path):
    """SIGTERM to rank 0 while its reference f(X) of a trial takes 10 minutes (a big trial's
    encode, decode or reference: seconds to minutes): dropped at once, as in ``simulate``
    (before, the stop waited for it: 19.6 s of a 20 s call), the rounds in flight drained."""
    job = start_long_run(tmp_path, "0")
    rank0 = rank0_pid(job)
    job.wait_for(lambda: lines(tmp_path / "inside.log") >= 1, "rank 0 inside f")
    os.kill(rank0, signal.SIGTERM)
    err = assert_long_stop(tmp_path, job, 143, "by SIGTERM")
    assert "has not answered" not in err, err  # the workers were idle, not hung


@needs_mpiexec
def test_the_time_limit_inside_rank_0s_long_trial_ends_it_at_once(tmp_path):
    """job.time_limit comes (by an alarm) while rank 0's reference f(X) takes 10 minutes; if
    the start was so slow that the limit came first, the run stops all the same."""
    job = start_long_run(tmp_path, "0", ["--set", "job.time_limit=20"])
    assert_long_stop(tmp_path, job, 124, "at job.time_limit = 20 s")


@needs_mpiexec
def test_a_stop_of_rank_0_alone_while_the_workers_are_inside_a_long_f_ends_it_at_once(tmp_path):
    """SIGTERM to rank 0 alone while every worker's f takes 10 minutes: rank 0 passes it on
    to the workers of its node, which drop their calls; before, rank 0 took them for hung and
    ended the job with MPI_Abort (8.3 s)."""
    job = start_long_run(tmp_path, "w")
    rank0 = rank0_pid(job)
    job.wait_for(lambda: lines(tmp_path / "inside.log") >= 1, "a worker inside f")
    os.kill(rank0, signal.SIGTERM)
    assert_long_stop(tmp_path, job, 143, "by SIGTERM")


@needs_mpiexec
@hydra_only
def test_a_stop_while_the_workers_are_inside_a_long_f_ends_it_at_once(tmp_path):
    """SIGTERM to mpiexec (hydra forwards it to every rank) while every worker's f takes 10
    minutes: each worker drops its call and says so, rank 0 stops as for its own signal;
    before, rank 0 took the workers for hung and ended the job with MPI_Abort (8.5 s)."""
    job = start_long_run(tmp_path, "w")
    job.wait_for(lambda: lines(tmp_path / "inside.log") >= 1, "a worker inside f")
    job.signal(signal.SIGTERM)
    assert_long_stop(tmp_path, job, 143, "by SIGTERM")


# f whose first call in each process (rank 0's: the job's check of f on one input) takes 2.5 s
FIRST_SLOW_F = '''
import time

import numpy as np

calls = 0


def f(X):
    global calls
    calls += 1
    if calls == 1:
        time.sleep(2.5)
    return np.column_stack([np.sin(X).sum(1), (X ** 2).sum(1)])
'''
WAIT_LINE = (r"gcc_mpi: f took \d+\.\d s on one input: a stop \(SIGTERM, SIGINT, job.time_limit\) "
             r"drops the trial under way at once, but may wait about that long per input for a "
             r"call of f under way {where}\n")


@pytest.mark.parametrize("engine", ["simulate", pytest.param("mpi", marks=needs_mpiexec)])
def test_the_start_up_line_says_how_long_a_stop_may_wait_when_f_is_slow(tmp_path, engine):
    """f took more than 2 s on one input at the job's check: a stop may wait for a call of f
    that has started (over MPI, on a worker that the stop does not reach at once), and the
    start-up says how long; a fast f (the other tests' jobs) says nothing."""
    write(tmp_path, slow_py=FIRST_SLOW_F, slow_toml=SLOW)
    args = [engine if engine == "simulate" else "run", "slow.toml", "-o", "out.h5", "-q",
            "--set", "job.trials=2"]
    code, _, err = Launch(args, tmp_path, ranks=5 if engine == "mpi" else None).wait()
    assert code == 0, err
    where = (r"on a worker of another node than rank 0's when only rank 0 is stopped "
             r"\(SIGTERM to it alone, job.time_limit\)" if engine == "mpi" else
             r"inside compiled code \(up to \d+ inputs a call\)")
    assert re.search(WAIT_LINE.format(where=where), err), err
    if engine == "mpi":  # after the ranks' line
        assert err.index("ranks by host and pid") < err.index("f took"), err


# f on rank 3 never returns in time (60 s), deaf to SIGTERM and SIGINT as compiled code is (a
# model's call): a stop cannot drain its round
STUCK_F = '''
import os
import signal
import time

import numpy as np


LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "stuck.log")


def f(X):
    if (os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")) == "3":
        with open(LOG, "a") as log:
            log.write("rank 3 in f\\n")
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        time.sleep(60)
    return np.column_stack([np.sin(X).sum(1), (X ** 2).sum(1)])
'''
STUCK = SLOW.replace('"slow.py:f"', '"stuck.py:f"').replace(
    'schemes = ["uncoded", "bacc", "gcc"]', 'schemes = ["uncoded"]')  # uncoded needs rank 3


def start_stuck_run(tmp_path):
    """The stuck job on 5 ranks, once rank 3 is inside its f: (the launch, rank 0's pid)."""
    write(tmp_path, stuck_py=STUCK_F, stuck_toml=STUCK)
    job = Launch(["run", "stuck.toml", "-o", "cut.h5", "-q"], tmp_path, ranks=5)
    rank0 = rank0_pid(job)
    job.wait_for(lambda: lines(tmp_path / "stuck.log") >= 1, "rank 3 inside f")
    return job, rank0


@needs_mpiexec
def test_a_stop_that_cannot_drain_ends_with_mpi_abort_after_its_bounded_step(tmp_path):
    """SIGTERM while rank 3 is inside an f that takes 60 s: rank 0 closes the file and STOPs
    the round; rank 3 does not answer, so after HANG_MIN (3 s) it counts as hung and the round
    retires without it; resumed (SIGCONT) it still does not answer within 5 s, so rank 0 ends
    the job with MPI_Abort and the stop's exit code — long before f would have returned."""
    job, rank0 = start_stuck_run(tmp_path)
    os.kill(rank0, signal.SIGTERM)
    code, _, err = job.wait()
    assert code == 143, err
    assert re.search(STOPPED.format(how="by SIGTERM", trials=40, out="cut.h5"), err), err
    assert re.search(r"gcc_mpi: rank 3 \(worker 2, pid \d+ on \S+\) has not answered for", err)
    assert re.search(r"gcc_mpi: rank 3 \(worker 2, pid \d+ on \S+\) did not answer within 5 s "
                     r"of being resumed \(SIGCONT\); ending the job with MPI_Abort", err), err
    assert_stopped_file(tmp_path / "cut.h5", 40)


@needs_mpiexec
def test_a_second_ctrl_c_aborts_at_once(tmp_path):
    """The first SIGINT starts the clean stop, which waits for rank 3's f (60 s, bounded by
    10 s); the second one does not wait: rank 0 says so and aborts (exit code 1), without
    the message that ends a stop whose grace ran out."""
    job, rank0 = start_stuck_run(tmp_path)
    os.kill(rank0, signal.SIGINT)
    job.wait_for(lambda: "stopped by SIGINT" in job.err(), "the first stop's message")
    os.kill(rank0, signal.SIGINT)
    code, _, err = job.wait()
    assert code == 1, err
    assert "gcc_mpi: interrupted" in err and "could not be stopped in order" not in err, err
    assert_stopped_file(tmp_path / "cut.h5", 40)


@needs_mpiexec
@hydra_only
def test_a_worker_that_exits_without_disable_auto_cleanup_ends_the_job(tmp_path):
    """os._exit(3) in f on rank 3, plain mpiexec: hydra ends every rank (as for a killed
    worker: its SIGKILLs, exit code 9 in 6 of 6 runs here); the witness names rank 3
    and the file keeps every committed trial."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    job = Launch(["run", "slow.toml", "-o", "slow.h5", "-q"], tmp_path, ranks=5,
                 env={"DIE_RANK": "3", "DIE_AT": "12", "DIE_HOW": "exit"})
    code, _, err = job.wait()
    assert code == 9, err
    named = witnessed(job, "slow.h5")
    assert named == ["3"] or (len(named) > 1 and "3" in named), err
    assert_stopped_file(tmp_path / "slow.h5", 40)
