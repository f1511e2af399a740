"""A rank's last lines on stderr: flushed, read by the launcher, and nothing after them. Below
``mpi`` (MPI_Abort) and ``warden`` (its start-up line), which both end a job with one line."""

import fcntl
import os
import stat
import struct
import sys
import termios
import time

from .pace import SLEEP_IDLE, SLEEP_MIN, Backoff


def quiet_from_here():
    """Nothing more on this rank's stderr: what it had to say is said and read (``drain``).
    MPICH's MPI_Abort prints its own "Abort(1) on node 0 ..." line, and the launcher's signals
    that end the job can interrupt Python mid-print (a traceback cut off after its third line,
    seen on a full disk): neither adds anything to the one line already given."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stderr.fileno())
    except (OSError, ValueError):  # no stderr to silence
        pass


def unread(fd):
    """Bytes written to pipe ``fd`` that its reader has not read yet (0 if it is no pipe)."""
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return 0
        return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]
    except OSError:
        return 0


def drain(streams, timeout):
    """Flush ``streams`` and wait (at most ``timeout`` s) until their pipes are read empty."""
    fds = []
    for stream in streams:
        try:
            stream.flush()
            fds.append(stream.fileno())
        except (OSError, ValueError):  # closed or not a file: nothing a launcher could lose
            pass
    until = time.monotonic() + timeout
    backoff = Backoff(SLEEP_MIN, SLEEP_IDLE)
    while any(unread(fd) for fd in fds) and time.monotonic() < until:
        backoff.sleep()

