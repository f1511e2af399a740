"""A rank that dies or is stopped while MPI starts: every other rank waits for it inside
MPI_Init, where no code of ours runs, so its host's warden ends the job with one line naming the
rank and the host (gcc_mpi/runtime/startwatch.py). The fault comes from inside the rank, at an
event of its start-up (tests/startup_fault.py): at its first line of Python (before any word to
the warden), just before MPI_Init, and once the MPI library is loaded; SIGKILL and SIGSTOP; under
the plain launch and the MPI's keep-going option: the same matrix as
benchmarks/startup_faults.py's clock moments (docs/reliability.md). Nothing here waits a fixed
time.
"""

import re
from pathlib import Path

import pytest

from mpirun import KEEP_GOING, Launch, needs_mpiexec

from gcc_mpi.runtime.startwatch import STOP_BOUND

FAULT = str(Path(__file__).with_name("startup_fault.py"))
RANKS = 16


def started_badly(tmp_path, signal, at, options=(), rank=5):
    """The default job on RANKS ranks, rank ``rank`` hit by SIG``signal`` at ``at``: (exit
    code, our stderr); the job ended by itself (Launch fails on its timeout)."""
    job = Launch(["-o", "s.h5", "-q", "--set", "job.trials=20"], tmp_path, ranks=RANKS,
                 mpiexec_options=options, program=(FAULT,),
                 env=dict(STARTUP_FAULT_RANK=str(rank), STARTUP_FAULT_SIGNAL=signal,
                          STARTUP_FAULT_AT=at))
    code, _, err = job.wait()
    return code, err


def named(err):
    """The ranks named by the warden's line(s)."""
    found = re.findall(r"^gcc_mpi: (.*) on \S+ (?:died|stayed stopped|ended before MPI started)"
                       r".* the job cannot start", err, re.M)
    return [int(r) for line in found for group in re.findall(r"\branks? ((?:\d+, )*\d+)", line)
            for r in group.split(", ")]


EVENTS = ("unseen", "before", "inside")
LAUNCHES = {"plain": (), "keep-going": KEEP_GOING}


@needs_mpiexec
@pytest.mark.parametrize("launch", LAUNCHES)
@pytest.mark.parametrize("at", EVENTS)
def test_a_rank_killed_while_mpi_starts_ends_the_job_naming_it(tmp_path, at, launch):
    """SIGKILL at each event of start-up: under the keep-going option (Open MPI's ULFM, hydra's
    -disable-auto-cleanup) the others waited inside MPI_Init for ever; under the plain launch the
    launcher ended the job with no line of ours (hydra: exit 9 and nothing on stderr) when the
    rank died before the warden started. The warden's pidfd wakes at the death, before a
    launcher kills the others: the line names rank 5 first."""
    code, err = started_badly(tmp_path, "KILL", at, LAUNCHES[launch])
    assert code != 0, err
    assert named(err)[:1] == [5], err
    assert "witness" not in err, err  # rank 0's witness does not blame rank 0


# Each case waits STOP_BOUND: the keep-going launch only where the MPI library is loaded, the
# event at which its launcher's reaction differs most from the plain launch's (12 s a case)
@needs_mpiexec
@pytest.mark.parametrize("at, launch", [(at, "plain") for at in EVENTS] +
                         [("inside", "keep-going")])
def test_a_rank_stopped_while_mpi_starts_ends_the_job_naming_it(tmp_path, at, launch):
    """SIGSTOP at each event of start-up: every other rank waited inside MPI_Init for ever (15
    of them spinning under MPICH), under every launch. The warden names rank 5 once it stayed
    stopped STOP_BOUND s, kills the host's ranks, and the launcher ends."""
    code, err = started_badly(tmp_path, "STOP", at, LAUNCHES[launch])
    assert code != 0, err
    assert named(err) == [5], err
    assert "rank 5 (pid" in err and f"stayed stopped for {STOP_BOUND:g} s" in err, err
    assert "witness" not in err, err


def test_the_bounds_in_docs_are_the_code_s():
    """docs/reliability.md's row on faults while the job starts quotes the warden's bounds."""
    from gcc_mpi.runtime.startwatch import APPEAR_BOUND, START_BOUND

    doc = (Path(__file__).parent.parent / "docs" / "reliability.md").read_text()
    row = next(line for line in doc.splitlines() if line.startswith("| a rank killed (SIGKILL"))
    assert f"once it lasted {STOP_BOUND:g} s of the warden's own time" in row
    assert f"a rank never seen {APPEAR_BOUND:g} s after the warden started" in row
    assert f"MPI_Init {START_BOUND:g} s after it started" in row
