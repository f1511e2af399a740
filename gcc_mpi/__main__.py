"""``python -m gcc_mpi``: the command line (gcc_mpi.cli.main)."""

import os
import signal
import sys

if any(os.environ.get(v, "").isdigit() for v in ("PMI_RANK", "OMPI_COMM_WORLD_RANK")):
    # a rank of an MPI launch: hydra's dead-process notice (SIGUSR1, -disable-auto-cleanup)
    # must not end it before MPI is up, first thing, before the imports (runtime.mpi's
    # before_start and FailureNotice take over)
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)

from .cli.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
