"""``python -m gcc_mpi``: the command line (gcc_mpi.cli.main)."""

import sys

from .cli.main import main

if __name__ == "__main__":
    sys.exit(main())
