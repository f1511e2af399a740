"""The MPI runtime end to end: `mpiexec -n 5` and `-n 9` launched as subprocesses (with a
timeout, so nothing can hang CI), checked against the HDF5 contract and against the simulator;
late results; errors on any rank; the single-process fallback; the wire format without MPI.
Nothing here asserts on wall-clock time: the delays only make the received sets unambiguous.
"""
import json
import os
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from mpirun import MPI_NAME, needs_mpiexec
from mpirun import run as launch

from gcc_mpi.job.parse import load_job, parse_job
from gcc_mpi.files.reader import read_results
from gcc_mpi.runtime import protocol as P
from gcc_mpi.core.launcher import LAUNCHERS, launcher_rank
from gcc_mpi.runtime.mpi import resolve_wait
from gcc_mpi.runtime.pace import Backoff
from gcc_mpi.core.point import PointSetup
from gcc_mpi.core.simulate import replay

# N = ranks - 1 = 4 under -n 5; fixed stragglers 2 s late (a STOP at the deadline cuts that
# short) and a deadline of 1 s make every received set unambiguous, even for a busy-waiting run
# on a loaded 2-core machine (0.1 s was not: a fast worker can miss it there).
# (No letcc here: with 3 results for K = 3 its automatic lambda flips between candidates on
# round-off, so bitwise-different f rows — one row per worker vs one batch in the simulator —
# can change its nmse by a factor; test_run_n9 compares it at N = 6 and 8.)
SMALL = """
[job]
name = "small"
seed = 3
trials = 3
[data]
source = "sphere"
dim = 5
batch = 3
[target]
kind = "polynomial"
degree = 2
outputs = 3
[code]
schemes = ["uncoded", "bacc", "gcc"]
[stragglers]
model = "fixed"
count = 1
delay = 2.0
[decode]
deadline = 1.0
[sweep]
"decode.wait" = ["fastest", "deadline"]
"""


# nmse of MPI against simulate, relative. A worker computes f row by row, simulate on the whole
# batch: the results differ in their last bit (4e-16 on tests/test_pipeline.py's job), which
# gcc's decoder in the input space, interpolating near the lambda floor, amplifies to 3e-8 of the
# nmse (along beta 5e-11). A result of another trial or worker changes it by far more.
NMSE_RTOL = 1e-7


def assert_same_as_simulate(run, sim):
    """Identical used sets, delays and failures; nmse equal to NMSE_RTOL relative (exact
    schemes: both at round-off, ~1e-30)."""
    assert [p.params for p in run.points] == [p.params for p in sim.points]
    for p_run, p_sim in zip(run.points, sim.points):
        assert list(p_run.schemes) == list(p_sim.schemes)
        for name, r in p_run.schemes.items():
            s = p_sim.schemes[name]
            where = f"point {p_run.params}, {name}"
            assert np.array_equal(r["delay"], s["delay"]), where
            assert np.array_equal(r["used"], s["used"]), where
            assert np.array_equal(r["failed"], s["failed"]), where
            ok = ~r["failed"]
            np.testing.assert_allclose(r["nmse"][ok], s["nmse"][ok], rtol=NMSE_RTOL,
                                       atol=1e-20, err_msg=where)


def check_contract(res, workers, trials):
    assert res.attrs["format"] == "gcc_mpi/1" and res.complete
    assert res.attrs["mpi"].startswith(MPI_NAME)
    # how the ranks were launched: the launcher's command line as typed (its program is
    # mpiexec, or prterun that Open MPI's mpiexec becomes), then what each rank runs
    launcher, *rest = shlex.split(res.attrs["command"])
    assert os.path.basename(launcher) in LAUNCHERS and "-n" in rest and "gcc_mpi" in rest
    recorded = json.loads(res.attrs["provenance"])
    assert recorded["ft"] in ("off", "ulfm") and recorded["mpi4py"] != "-"
    assert {"python", "numpy", "scipy", "h5py", "cpu", "cores", "host"} <= set(recorded)
    for point in res.points:
        N = workers[point.index] if isinstance(workers, list) else workers
        for name, d in point.schemes.items():
            assert np.array_equal(d["trial"], np.arange(trials))
            assert d["delay"].shape == d["arrival"].shape == d["used"].shape == (trials, N)
            assert np.array_equal(np.isfinite(d["arrival"]), d["used"])
            assert np.all(d["arrival"][d["used"]] >= 0)
            for key in ("t_encode", "t_scatter", "t_wait", "t_decode", "latency"):
                assert np.all(np.isfinite(d[key]) & (d[key] >= 0)), (name, key)
            np.testing.assert_allclose(d["latency"], d["t_encode"] + d["t_scatter"] + d["t_wait"]
                                       + d["t_decode"], rtol=1e-12)
            # every result used had arrived when the master stopped waiting
            last = np.where(d["used"], d["arrival"], 0).max(axis=1)
            assert np.all(last <= d["t_scatter"] + d["t_wait"] + 1e-9)


@needs_mpiexec
def test_run_n5_writes_the_contract_and_agrees_with_simulate(tmp_path):
    (tmp_path / "small.toml").write_text(SMALL)
    # busy waiting (Waitsome, spinning Mprobe) on purpose: the mode auto would not pick here
    two = ["--set", "job.trials=2"]  # a round with a straggler lasts until the deadline
    code, out, err = launch(["run", "small.toml", "-o", "run.h5", "--wait", "busy", *two],
                            tmp_path, 5)
    assert code == 0, err
    assert "uncoded" in out and "wrote run.h5" in err and "busy waiting" in err
    run = read_results(tmp_path / "run.h5")
    assert parse_job(run.config_toml).config.code.workers == 4  # N = ranks - 1
    check_contract(run, 4, 2)
    for d in run.points[1].schemes.values():  # decode.wait = "deadline": nothing 2 s late used
        assert not np.any(d["used"] & (d["delay"] > 1.0))
    code, _, err = launch(["simulate", "small.toml", "-o", "sim.h5", "-q", *two,
                           "--set", "code.workers=4"], tmp_path)
    assert code == 0, err
    assert_same_as_simulate(run, read_results(tmp_path / "sim.h5"))


AGREE = """
[job]
name = "agree"
seed = 5
trials = 3
[data]
source = "gaussian"
dim = 6
batch = 3
[target]
kind = "polynomial"
degree = 2
outputs = 2
[code]
schemes = ["uncoded", "bacc", "letcc", "gcc"]
[stragglers]
model = "fixed"
count = 2
delay = 1.0
[sweep]
"code.workers" = [6, 8]
"""


@needs_mpiexec
def test_run_n9_agrees_with_simulate_and_leaves_extra_ranks_idle(tmp_path):
    # Ties among the zero-delay workers make replication and lcc stop at an arbitrary one of
    # several decodable sets, so only schemes whose set the delays fix are compared.
    (tmp_path / "agree.toml").write_text(AGREE)
    code, out, err = launch(["run", "agree.toml", "-o", "run.h5", "-q"], tmp_path, 9)
    assert code == 0, err
    auto = "polite" if 9 > len(os.sched_getaffinity(0)) else "busy"
    assert out == "" and f"({auto} waiting)" in err
    code, _, err = launch(["simulate", "agree.toml", "-o", "sim.h5", "-q"], tmp_path)
    assert code == 0, err
    run = read_results(tmp_path / "run.h5")
    check_contract(run, [6, 8], 3)  # point 0: ranks 7 and 8 idle
    assert_same_as_simulate(run, read_results(tmp_path / "sim.h5"))


SLOW_F = '''
import os
import time

import numpy as np

RANK = os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")  # MPICH, Open MPI
SLOW = {"7", "8"}  # MPI ranks of workers 6 and 7: their f takes 1 s (real compute time), the
                   # others' milliseconds: a loaded machine cannot close that gap


def f(X):
    if RANK in SLOW:
        time.sleep(1.0)
    return np.column_stack([np.sin(X).sum(1), (X ** 2).sum(1)])
'''
LATE = """
[job]
name = "late"
seed = 7
trials = 2
[data]
source = "gaussian"
dim = 4
batch = 3
[target]
kind = "python"
function = "slow.py:f"
[code]
workers = 8
schemes = ["uncoded", "replication", "bacc", "gcc"]
[stragglers]
model = "none"
[decode]
stragglers = 2
"""


@needs_mpiexec
def test_late_results_are_never_used(tmp_path):
    """Workers 6 and 7 compute for 1 s, so every approximate round (and replication) stops
    without them and their STOP reaches them mid-computation: they reply with a real result
    anyway, after the master has decoded. Those late results must be discarded, never
    mistaken for a later round's. Checked by replaying every decode in this process from the
    recorded used set: a result from another trial would change the nmse."""
    (tmp_path / "slow.py").write_text(SLOW_F)
    (tmp_path / "late.toml").write_text(LATE)
    code, _, err = launch(["run", "late.toml", "-o", "run.h5", "-q"], tmp_path, 9)
    assert code == 0, err
    crossed = int(re.search(r"(\d+) crossed a STOP", err).group(1))
    assert crossed >= 3, err  # the situation was provoked (2 trials x 3 schemes x 2 workers)
    check_late_results_unused(tmp_path)


def check_late_results_unused(tmp_path):
    """The LATE job's run.h5: the two slow workers are never used by the approximate schemes
    (and replication), and every decode replayed here from its recorded used set gives the
    recorded nmse (a result of another trial would change it)."""
    res = read_results(tmp_path / "run.h5")
    check_contract(res, 8, 2)
    job = load_job(tmp_path / "late.toml")
    setup = PointSetup.build(job.points[0].config, job.base_dir)
    d = res.points[0].schemes
    for name in ("replication", "bacc", "gcc"):
        assert not d[name]["used"][:, 6:].any(), name
    for t in range(2):
        for name in setup.codes:
            rec = replay(setup, 0, t, name, d[name]["used"][t], d[name]["arrival"][t])
            np.testing.assert_allclose(d[name]["nmse"][t], rec["nmse"], rtol=NMSE_RTOL,
                                       atol=1e-20, err_msg=f"trial {t}, {name}")


BOOM_F = '''
import os

import numpy as np


RANK = os.environ.get("PMI_RANK") or os.environ.get("OMPI_COMM_WORLD_RANK")  # MPICH, Open MPI
if RANK == "3":  # rank 3 cannot even build f: not an erasure
    raise ValueError("boom on purpose")


def f(X):
    return np.tanh(X[:, :2])
'''
BOOM = """
[job]
name = "boom"
trials = 3
[data]
source = "gaussian"
dim = 4
batch = 3
[target]
kind = "python"
function = "boom.py:f"
[code]
schemes = ["bacc"]
[stragglers]
model = "none"
"""


@needs_mpiexec
def test_an_exception_outside_f_on_a_worker_ends_the_job_with_exit_code_1(tmp_path):
    """f raising on a worker is an erasure (tests/test_faults.py); any other exception on a
    rank — here rank 3 failing to import f at start-up — ends the job, naming the rank."""
    (tmp_path / "boom.py").write_text(BOOM_F)
    (tmp_path / "boom.toml").write_text(BOOM)
    code, _, err = launch(["run", "boom.toml", "-o", "boom.h5"], tmp_path, 5)
    assert code == 1, err  # MPICH's and Open MPI's mpiexec return the MPI_Abort error code
    assert "gcc_mpi: rank 3 of 5 on " in err and "ValueError: boom on purpose" in err


@needs_mpiexec
def test_every_shutdown_gets_every_bye_without_anyone_sending_it_by_hand(tmp_path):
    """tests/shutdown_blocks.py drives Master and Worker directly, as the benchmarks do: three
    blocks, each ended by a shutdown, with the master listening, not listening, then a new
    listening master. Worker.serve says BYE on EXIT by itself, a listening master's shutdown
    waits for it (before, it waited for ever: the benchmarks hung so), and one that never
    listened receives it too, after the NOTICE each worker sent before it: no NOTICE is left
    unreceived after any block (the program checks after a barrier, exit 3 otherwise)."""
    program = Path(__file__).with_name("shutdown_blocks.py")
    code, out, err = launch([], tmp_path, 4, program=[str(program)])
    assert code == 0, err
    assert out == "shutdown_blocks: 3 blocks\n", err


@needs_mpiexec
def test_more_workers_than_ranks_is_a_clear_error_on_every_rank(tmp_path):
    (tmp_path / "small.toml").write_text(SMALL)
    code, out, err = launch(["run", "small.toml", "--set", "code.workers=8"], tmp_path, 5)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        "gcc_mpi: error: code.workers: must be <= ranks - 1 = 4 (rank 0 is the master and 5 "
        "ranks were started), got 8"]
    assert not (tmp_path / "results").exists()
    # the default job with K = 10 set needs N >= 10: one line naming code.workers, exit 2
    code, _, err = launch(["--set", "data.batch=10"], tmp_path, 5)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert err.startswith("gcc_mpi: error: code.workers: must be >= data.batch = 10")
    assert "ranks - 1 = 4" in err


@needs_mpiexec
def test_a_job_that_differs_between_ranks_ends_with_one_line(tmp_path):
    """Every rank loads the job itself; a worker whose job is not rank 0's (here an MPMD launch
    gives ranks 1 to 3 another file: on a cluster, a job file that differs between nodes)
    ends the job at start-up with one line per such rank, naming it, and exit code 2."""
    import sys

    (tmp_path / "a.toml").write_text(SMALL)
    (tmp_path / "b.toml").write_text(SMALL.replace("trials = ", "trials = 1"))
    other = [":", "-n", "3", sys.executable, "-m", "gcc_mpi", "run", "b.toml", "-o", "o.h5"]
    code, out, err = launch(["run", "a.toml", "-o", "o.h5", *other], tmp_path, 1)
    said = [line for line in err.splitlines() if "is not rank 0's" in line]
    assert code == 2 and said and "Traceback" not in err, err
    assert all(re.match(r"gcc_mpi: rank [123] of 4 on \S+: error: job file: the job on ", line)
               for line in said), said


def test_a_single_process_says_how_to_launch_and_simulates(tmp_path):
    (tmp_path / "small.toml").write_text(SMALL)
    code, out, err = launch(["run", "small.toml", "-o", "one.h5", "-q"], tmp_path)
    assert code == 0, err
    assert "mpiexec -n 41 python -m gcc_mpi run small.toml" in err and "simulator" in err
    assert read_results(tmp_path / "one.h5").attrs["mpi"] == "simulate"
    code, out, err = launch([], tmp_path)  # no arguments: the default job
    assert code == 0, err
    assert "mpiexec -n 8 python -m gcc_mpi`" in err and "gcc" in out  # N = 7: ranks N + 1
    assert len(list((tmp_path / "results").glob("default-*.h5"))) == 1
    code, out, err = launch(["-o", "opts.h5", "--set", "job.trials=2", "-q"], tmp_path)
    assert code == 0, err  # options only: still the default job
    assert read_results(tmp_path / "opts.h5").attrs["config"].count("trials = 2") == 1


# -- the wire format and helpers, no MPI --------------------------------------------------------
class FakeComm:
    """Records the persistent requests Slots makes (no MPI)."""

    def Recv_init(self, buf, source, tag):
        return ("recv", buf, source, tag)

    def Send_init(self, buf, dest, tag):
        return ("send", buf, dest, tag)


def test_task_messages_and_reply_checks():
    slots = P.Slots(FakeComm(), depth=2, n=4, d=5, m=2, point=1)
    assert slots.fits(2, 4, 5, 2) and not slots.fits(1, 4, 5, 2) and not slots.fits(2, 4, 6, 2)
    workers = np.array([0, 2, 3])
    X_coded = np.arange(15.0).reshape(3, 5)
    task = slots.task[1]
    P.fill_tasks(task, workers, 9, 4, np.array([0.0, 0.5, 1.0]), X_coded)
    rows = task[workers]
    assert rows.shape == (3, P.HEADER + 5)
    assert rows[:, P.KIND].tolist() == [P.TASK] * 3 and rows[1, P.DELAY] == 0.5
    assert rows[0, [P.SEQ, P.TRIAL, P.POINT, P.DIM, P.OUT]].tolist() == [9, 4, 1, 5, 2]
    assert np.array_equal(rows[:, P.HEADER:], X_coded)
    assert not slots.task[0, :, P.SEQ].any() and not task[1, P.SEQ]  # other slot, idle worker
    recvs, sends = slots.requests(1, [2, 3])  # slot 1, workers 2 and 3 = ranks 3 and 4
    assert [(r[0], r[2]) for r in recvs] == [("recv", 3), ("recv", 4)]
    assert sends[0][1] is not None and np.shares_memory(sends[0][1], slots.task[1, 2])
    assert np.shares_memory(slots.recvs[4 + 2][1], slots.reply[1, 2])  # flat: slot * n + w
    stop = P.fill_control(slots.stop[1, 0], P.STOP, 9, 4)
    assert stop.shape == (P.HEADER,) and stop[P.KIND] == P.STOP and stop[P.SEQ] == 9
    reply = np.array([9.0, 4.0, P.DONE, 1.0, 2.0])
    assert P.check_reply(reply, 9, 4, rank=3) == P.DONE
    with pytest.raises(P.ProtocolError, match="rank 3 replied for round 8"):
        P.check_reply(np.array([8.0, 3.0, P.DONE]), 9, 4, rank=3)  # a late reply of round 8
    with pytest.raises(P.ProtocolError, match="status"):
        P.check_reply(np.array([9.0, 4.0, 7.0]), 9, 4, rank=3)
    slots.reply[1, [1, 2], P.REPLY_HEADER:] = [[1, 2], [3, 4]]
    assert slots.outputs(1, [2, 1]).tolist() == [[3, 4], [1, 2]]
    assert slots.outputs(1, np.array([], int)).shape == (0, 2)
    assert P.check_error((9, 4, 1, "worker 2: boom"), 9, 4, rank=3) == (1, "worker 2: boom")
    with pytest.raises(P.ProtocolError, match="error message"):
        P.check_error((8, 4, 1, "x"), 9, 4, rank=3)


def test_wait_modes_and_launcher_environment(monkeypatch):
    class Comm:
        size = 32

    monkeypatch.delenv("GCC_MPI_WAIT", raising=False)
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MPI_LOCALNRANKS",
                "OMPI_COMM_WORLD_LOCAL_SIZE"):
        monkeypatch.delenv(var, raising=False)
    assert launcher_rank() is None
    monkeypatch.setenv("PMI_RANK", "3")
    assert launcher_rank() == 3
    assert resolve_wait("busy", Comm) == "busy"
    cores = len(os.sched_getaffinity(0))
    assert resolve_wait(None, Comm) == ("polite" if 32 > cores else "busy")
    monkeypatch.setenv("MPI_LOCALNRANKS", "1")  # one rank on this node: it has a core
    assert resolve_wait("auto", Comm) == "busy"
    monkeypatch.setenv("GCC_MPI_WAIT", "polite")
    assert resolve_wait(None, Comm) == "polite"
    monkeypatch.setenv("GCC_MPI_WAIT", "lazy")
    with pytest.raises(Exception, match="GCC_MPI_WAIT: must be one of auto, busy, polite"):
        resolve_wait(None, Comm)
    b = Backoff(1e-6, 4e-6)
    for expected in (2e-6, 4e-6, 4e-6):
        b.sleep(limit=0)
        assert b.t == expected
    b.reset()
    assert b.t == 1e-6
