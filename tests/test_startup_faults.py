"""A rank that dies or is stopped while MPI starts: every other rank waits for it inside
MPI_Init, where no code of ours runs, so its host's warden ends the job with one line naming the
rank and the host (gcc_mpi/runtime/startwatch.py). The fault comes from inside the rank, at an
event of its start-up (tests/startup_fault.py); nothing here waits a fixed time. The whole
matrix (SIGKILL and SIGSTOP, at three moments, under each launcher) is benchmarks/chaos.py's
``--startup``, in docs/reliability.md.
"""

import re
from pathlib import Path

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


@needs_mpiexec
def test_a_rank_stopped_before_mpi_init_ends_the_job_naming_it(tmp_path):
    """SIGSTOP just before MPI_Init: without the warden, every other rank waited inside
    MPI_Init for ever (15 of them spinning under MPICH). The warden names rank 5 once it stayed
    stopped STOP_BOUND s, kills the host's ranks, and the launcher ends."""
    code, err = started_badly(tmp_path, "STOP", "before")
    assert code != 0, err
    assert named(err) == [5], err
    assert "rank 5 (pid" in err and f"stayed stopped for {STOP_BOUND:g} s" in err, err
    assert "witness" not in err, err  # rank 0's witness does not blame rank 0


@needs_mpiexec
def test_a_rank_killed_before_mpi_init_under_the_keep_going_option_ends_the_job(tmp_path):
    """SIGKILL just before MPI_Init under the MPI's keep-going option (Open MPI's ULFM, hydra's
    -disable-auto-cleanup), whose launcher lets the others wait for it inside MPI_Init for ever:
    the warden sees the death at once and names rank 5 alone (no launcher kills the others
    first)."""
    code, err = started_badly(tmp_path, "KILL", "before", KEEP_GOING)
    assert code != 0, err
    assert named(err) == [5], err
