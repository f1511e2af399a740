"""`python tests/startup_fault.py ARGS` runs `python -m gcc_mpi ARGS`, but rank STARTUP_FAULT_RANK
hits itself with signal STARTUP_FAULT_SIGNAL ("KILL" or "STOP") at an event of MPI's start-up,
STARTUP_FAULT_AT:

- ``before``: just before MPI_Init (its host's warden knows it; no other rank is past MPI_Init);
- ``unseen``: at its first line of Python, before ``python -m gcc_mpi`` starts its host's
  warden or tells it of the rank (no word from it at all: as if it died while Python started),
  once another rank's warden watches it (a pidfd of it open): a rank that dies before any
  process of ours runs on its host is beyond the warden's reach;
- ``inside``: once the MPI library is loaded (MPI_Init follows at once), by a forked helper that
  watches the rank's memory map: the rank itself runs no Python code inside MPI_Init.

So a test provokes a death or a stop during start-up at an event, not at a moment of the clock.
"""

import os
import runpy
import signal
import sys
import time

from gcc_mpi.core.launcher import launcher_rank
from gcc_mpi.runtime import mpi


def hit():
    os.kill(os.getpid(), getattr(signal, "SIG" + os.environ["STARTUP_FAULT_SIGNAL"]))


def watched():
    """Wait until a process (the host's warden) holds a pidfd of this process."""
    needle = f"Pid:\t{os.getpid()}\n"
    until = time.monotonic() + 120
    while time.monotonic() < until:
        for entry in os.listdir("/proc"):
            if entry.isdigit() and entry != str(os.getpid()):
                try:
                    for fd in os.listdir(f"/proc/{entry}/fdinfo"):
                        with open(f"/proc/{entry}/fdinfo/{fd}") as f:
                            if needle in f.read():
                                return
                except OSError:
                    pass
        time.sleep(0.01)


def inside(rank_pid):
    """In a helper process: hit rank ``rank_pid`` once its memory map holds an MPI library."""
    until = time.monotonic() + 120
    while time.monotonic() < until:
        try:
            with open(f"/proc/{rank_pid}/maps") as f:
                if any("libmpi" in line for line in f):
                    break
        except OSError:
            return
        time.sleep(0.001)
    os.kill(rank_pid, getattr(signal, "SIG" + os.environ["STARTUP_FAULT_SIGNAL"]))


if launcher_rank() == int(os.environ.get("STARTUP_FAULT_RANK", "-1")):
    at = os.environ["STARTUP_FAULT_AT"]
    start = mpi.start
    if at == "unseen":
        watched()
        hit()
    elif at == "before":
        def _start():
            hit()
            return start()
        mpi.start = _start
    elif at == "inside":
        def _start():
            rank_pid = os.getpid()
            if os.fork() == 0:
                try:
                    os.setsid()
                    inside(rank_pid)
                finally:
                    os._exit(0)
            return start()
        mpi.start = _start

sys.argv[0] = "gcc_mpi"
runpy.run_module("gcc_mpi", run_name="__main__", alter_sys=True)
