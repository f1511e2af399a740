"""``python -m gcc_mpi``: the command line (gcc_mpi.cli.main)."""

import os
import signal
import sys

_MPI_COMMANDS = ("run", "probe")  # the commands whose ranks start MPI


def _starts_mpi(argv):
    """This process is a rank of a launch of several whose command (``argv``) starts MPI: run
    (also the command of no arguments, or options first) or probe."""
    if not any(os.environ.get(v, "").isdigit() for v in ("PMI_RANK", "OMPI_COMM_WORLD_RANK")):
        return False
    from .core.launcher import launcher_size

    first = argv[0] if argv else "-"
    command = "run" if first.startswith("-") and first not in ("-h", "--help", "--version") \
        else first
    return (launcher_size() or 0) > 1 and command in _MPI_COMMANDS


if any(os.environ.get(v, "").isdigit() for v in ("PMI_RANK", "OMPI_COMM_WORLD_RANK")):
    # a rank of an MPI launch: hydra's dead-process notice (SIGUSR1, -disable-auto-cleanup)
    # must not end it before MPI is up, first thing, before the imports (runtime.mpi's
    # before_start and FailureNotice take over)
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
_EARLY = _starts_mpi(sys.argv[1:])
if _EARLY:
    # the host's warden watches its ranks start from here, before the job is read (seconds
    # under load): a rank that dies or stops before would otherwise go unnamed, the job ended
    # by its launcher with no word of ours (hydra: exit 9, not a line) or waiting for ever
    from .runtime import warden

    warden.start()

from .cli.main import main  # noqa: E402

if __name__ == "__main__":
    code = main()
    if _EARLY:  # a rank that ends before MPI started (a refused job) did not die: it left
        warden.tell("leaving")
    sys.exit(code)
