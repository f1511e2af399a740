"""A rank's check-in: connections it holds open until it dies, whose close tells a watcher
(rank 0's witness, its host's warden) that this rank died, before its launcher can know it.

Hydra's proxy SIGKILLs every rank of its node as soon as a rank's PMI socket closes, and a
dying process's files are released one by one in the order of their descriptors (descending
on this machine's kernel, 6.18, measured; ascending where a kernel releases them first in,
first out), all before the process is seen to have ended (its pidfd, its zombie in /proc): a
rank killed by hydra a moment later can be seen to end first (issue 38: rank 11 of 12 named
for a killed rank 10, 3 of 15 runs at load 14; tests/test_warden.py). A check-in on the other
side of the PMI socket has the same gap (the witness once named rank 10 for a killed rank 8;
tests/test_witness.py). So a rank checks in twice: on the lowest descriptor (0, its stdin,
which no launcher feeds to a rank other than rank 0) and on a high one (``top``), above any
that MPI opens. One of the two is released before any other file of the rank, whichever the
order, so the first check-in of a node to close is the rank that died first.
"""

import fcntl
import os
import resource
import socket

TOP = 4096  # the check-ins' high descriptors are below this (the table of descriptors grows)


def hold(address, line, targets):
    """Connect to the abstract Unix socket ``address`` once per descriptor of ``targets`` (0, or
    the lowest free one at or above a high one; None: wherever it lands), say ``line`` on each,
    and keep them open until the process ends, by no program it runs (close-on-exec): their
    descriptors, or None when not even the first connected (nobody listens)."""
    kept = []
    try:
        for target in targets:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(address)
                s.sendall(line.encode())
                fd = s.detach()  # a bare descriptor: open until the process ends
            if target is not None and target != fd:
                moved = (os.dup2(fd, 0, inheritable=False) if target == 0
                         else fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, target))
                os.close(fd)
                fd = moved
            kept.append(fd)
        return kept
    except OSError:
        return kept or None


def top(below=0):
    """A high descriptor for a check-in: above any that MPI opens (hydra's PMI socket is
    numbered by the rank on its node, 10 to 60 for 12 ranks here), within the limit on open
    files and below TOP; ``below`` more below that (the witness's and the warden's check-ins
    of one rank each have their own), or None where the limit leaves no room."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    high = min(TOP, soft if soft != resource.RLIM_INFINITY else TOP) - 1 - below
    return high if high > 2 else None
