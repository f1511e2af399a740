"""decode.pipeline = D: up to D rounds in flight over MPI. The same trials and received sets as
the simulator (and as D = 1) when the delays are well separated, late results never used in
another round, a bad value refused on every rank, and a clean stop with rounds in flight.

Launches go through tests/mpirun.py (subprocesses with a timeout) and reuse jobs of
tests/test_runtime.py and tests/test_faults.py; nothing here asserts on wall-clock time.
"""

import re
import signal

import pytest
from mpirun import Launch, needs_mpiexec
from mpirun import run as launch
from test_faults import SLOW, SLOW_F, assert_consistent, assert_same_results, lines, trials_in
from test_faults import write
from test_runtime import LATE, SLOW_F as LATE_F, SMALL, assert_same_as_simulate, check_contract
from test_runtime import check_late_results_unused

from gcc_mpi.files.reader import read_results


def in_flight(res):
    """The most rounds (one scheme of one trial: one record) in flight at once over the whole
    run, from each record's t_start (scatter start) and t_end (decode end)."""
    spans = [(s, e) for p in res.points for d in p.schemes.values()
             for s, e in zip(d["t_start"], d["t_end"])]
    assert spans and all(0 <= s < e for s, e in spans), spans
    return max(sum(s0 <= s < e0 for s0, e0 in spans) for s, _ in spans)

# Approximate schemes decoding from the fastest N - S: a round is decided without its two
# stragglers (2 s late) and STOPs them, so a straggler holds up its own later tasks only
# until that decision — milliseconds, against 2 s (which the STOP cuts short, so it costs
# nothing) — and every received set is the simulator's.
PIPE = """
[job]
name = "pipe"
seed = 11
trials = 6
[data]
source = "gaussian"
dim = 6
batch = 3
[target]
kind = "polynomial"
degree = 2
outputs = 2
[code]
workers = 8
schemes = ["bacc", "letcc", "gcc"]
[stragglers]
model = "fixed"
count = 2
delay = 2.0
[decode]
pipeline = 4
"""


@needs_mpiexec
def test_pipelined_run_agrees_with_simulate_and_with_pipeline_1(tmp_path):
    (tmp_path / "pipe.toml").write_text(PIPE)
    code, _, err = launch(["run", "pipe.toml", "-o", "run.h5", "-q"], tmp_path, 9)
    assert code == 0, err
    assert "pipeline 4)" in err
    run = read_results(tmp_path / "run.h5")
    check_contract(run, 8, 6)  # one record per trial, in trial order
    # the master scatters 4 rounds before it waits for any (measured: 4): never more than 4
    assert in_flight(run) == 4
    code, _, err = launch(["simulate", "pipe.toml", "-o", "sim.h5", "-q"], tmp_path)
    assert code == 0, err
    assert_same_as_simulate(run, read_results(tmp_path / "sim.h5"))
    code, _, err = launch(["run", "pipe.toml", "-o", "one.h5", "-q", "--set",
                           "decode.pipeline=1"], tmp_path, 9)
    assert code == 0, err
    one = read_results(tmp_path / "one.h5")
    assert_same_as_simulate(run, one)
    assert in_flight(one) == 1  # a round is decoded before the next one is scattered


@needs_mpiexec
def test_pipelined_late_results_are_never_used_in_another_round(tmp_path):
    """As tests/test_runtime.py's late-result test, with 4 rounds in flight: workers 6 and 7
    compute for 1 s, so their tasks of later rounds queue up behind a result nobody needs
    any more; each is skipped once its round is decided, or computed and discarded. Every
    recorded nmse is replayed from the recorded used set: a result of another round would
    change it."""
    (tmp_path / "slow.py").write_text(LATE_F)
    (tmp_path / "late.toml").write_text(LATE)
    code, _, err = launch(["run", "late.toml", "-o", "run.h5", "-q", "--set",
                           "decode.pipeline=4"], tmp_path, 9)
    assert code == 0, err
    stopped = re.search(r"(\d+) late results discarded \((\d+) crossed a STOP\), (\d+) tasks "
                        r"cancelled", err)
    assert int(stopped.group(2)) + int(stopped.group(3)) >= 3, err  # the situation happened
    check_late_results_unused(tmp_path)


@needs_mpiexec
@pytest.mark.parametrize("value", ["0", "2.5", '"deep"', "65"])
def test_a_bad_pipeline_value_is_one_line_and_exit_code_2(tmp_path, value):
    (tmp_path / "small.toml").write_text(SMALL)
    code, out, err = launch(["run", "small.toml", "--set", f"decode.pipeline={value}"],
                            tmp_path, 5)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        f"gcc_mpi: error: decode.pipeline: must be an integer in [1, 64], got {value}"]
    assert not (tmp_path / "results").exists()


@needs_mpiexec
def test_sigterm_with_rounds_in_flight_stops_cleanly_and_resume_completes(tmp_path):
    """SIGTERM while 3 rounds are in flight: every round is STOPped and drained, the file keeps
    the trials committed (whole, in order) and --resume gives what an uninterrupted run does."""
    write(tmp_path, slow_py=SLOW_F, slow_toml=SLOW)
    sets = ["-q", "--set", "job.trials=24", "--set", "decode.pipeline=3"]
    job = Launch(["run", "slow.toml", "-o", "cut.h5", *sets], tmp_path, ranks=5)
    job.wait_for(lambda: lines(tmp_path / "calls.log") >= 40, "40 calls of f")
    job.stop(signal.SIGTERM)  # to rank 0 under Open MPI
    code, _, err = job.wait()
    assert code == 143, err
    assert re.search(r"gcc_mpi: stopped by SIGTERM after \d+ of 24 trials; cut.h5 holds them "
                     r"\(complete = false\)", err), err
    assert "MPI_Abort" not in err and "witness" not in err
    cut = read_results(tmp_path / "cut.h5")
    assert not cut.complete
    assert_consistent(cut, at_most=23)
    assert trials_in(tmp_path / "cut.h5") >= 1
    code, _, err = launch(["run", "slow.toml", "-o", "cut.h5", "--resume", *sets], tmp_path,
                           ranks=5)
    assert code == 0, err
    code, _, err = launch(["run", "slow.toml", "-o", "full.h5", *sets], tmp_path, ranks=5)
    assert code == 0, err
    assert_same_results(tmp_path / "cut.h5", tmp_path / "full.h5")
