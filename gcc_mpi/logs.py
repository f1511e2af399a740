"""How the package speaks: every module that says something logs it to its own logger,
``logging.getLogger(__name__)`` (all of them under "gcc_mpi"), and only the command line
writes them out (``to_stderr``, called by ``cli.main``), as the lines its users and the tests
read on stderr:

- ``gcc_mpi: <message>`` for INFO and CRITICAL (CRITICAL: the job is being ended, MPI_Abort);
- ``gcc_mpi: warning: <message>`` for WARNING, ``gcc_mpi: error: <message>`` for ERROR;
- ``<message>`` alone for a record logged with ``extra=PLAIN`` ("wrote out.h5");
- a record with ``exc_info``: its traceback, then its line.

A library adds no handler of its own: the package's ``__init__`` gives "gcc_mpi" a NullHandler,
so a notebook or a script decides — silent by default; ``logging.basicConfig(level="INFO")``
for the messages; ``logging.getLogger("gcc_mpi").setLevel(...)``, a handler of its own, or
``to_stderr()`` for the command line's very lines.

Two kinds of process write their line to stderr themselves, with ``PREFIX``: a host's warden
and rank 0's witness (``runtime.warden``, ``runtime.witness``), forked from a rank, write one
line, drain it and let stderr go; what the rank's logging had (a handler of the user, a lock
another thread held at the fork) is no part of them.
"""

import logging
import sys

PREFIX = "gcc_mpi: "
PLAIN = {"plain": True}  # extra= of a record written without the prefix
WORDS = {logging.WARNING: "warning: ", logging.ERROR: "error: "}


class Lines(logging.Formatter):
    """A record as the command line's line (module docstring)."""

    def format(self, record):
        line = record.getMessage()
        if not getattr(record, "plain", False):
            line = PREFIX + WORDS.get(record.levelno, "") + line
        if record.exc_info:
            line = f"{self.formatException(record.exc_info)}\n{line}"
        return line


class Stderr(logging.Handler):
    """Each record as one line on ``sys.stderr`` as it is when the record comes (a test's
    capture, a redirect), flushed at once: an MPI rank's lines reach the launcher in the order
    they were said, before a possible MPI_Abort."""

    def emit(self, record):
        try:
            stream = sys.stderr
            stream.write(self.format(record) + "\n")
            stream.flush()
        except RecursionError:
            raise
        except Exception:  # noqa: BLE001 - logging's own rule: a failed line never raises
            self.handleError(record)


def to_stderr(level=logging.INFO):
    """Write the package's records from ``level`` up on stderr as the command line does (once,
    however often it is called)."""
    logger = logging.getLogger("gcc_mpi")
    if not any(isinstance(h, Stderr) for h in logger.handlers):
        handler = Stderr()
        handler.setFormatter(Lines())
        logger.addHandler(handler)
    logger.setLevel(level)
