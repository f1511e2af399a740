"""Rank 0's witness (gcc_mpi/runtime/witness.py) without MPI: does a worker's check-in close
before the launcher can know that the worker died?

Hydra's proxy SIGKILLs every rank of its node as soon as a rank's PMI socket closes (its
pmi_cb, auto-cleanup), and a dying process's files are released one by one, in the order of
their descriptors — descending on this kernel (6.18, measured: the highest first), ascending
where the kernel runs its deferred closes first in, first out. A check-in released after the
PMI socket leaves a gap in which hydra's kill reaches another rank, whose check-in then closes
first: the likely cause of the witness naming rank 10 for a killed rank 8 (issue 38:
benchmarks/chaos.py, seed 23, MPICH; not seen again here).

A stand-in worker (a child process) holds a "launcher socket" below or above 2000 other files
(the MPI library's: many more than a rank has, they widen the gap) and its check-in on their
other side; SIGKILLed, its check-in must be seen closed by the time the launcher socket is."""

import os
import select
import signal
import socket
import subprocess
import sys
import time
import uuid

import pytest

from gcc_mpi.runtime import witness

TIMEOUT = 60  # seconds for an event (a guard against hangs)
FILES = 1000  # the stand-in's other files, between its launcher socket and its check-in
HIGH = 3000   # the launcher socket's descriptor when it is above them ("high")

WORKER = r"""
import fcntl, os, resource, socket, sys, time
from gcc_mpi.runtime import witness
where, launcher, master, files, high = sys.argv[1], sys.argv[2], int(sys.argv[3]), \
    int(sys.argv[4]), int(sys.argv[5])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
pmi = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
pmi.connect("\0" + launcher)  # abstract: argv has no NUL
if where == "high":  # hydra's PMI_FD grows with the rank (its proxy's files leak into each)
    fd = fcntl.fcntl(pmi.fileno(), fcntl.F_DUPFD, high)
    pmi.close()
else:
    fd = pmi.detach()
# the MPI library's files, between the two: socket pairs with data queued, slow to release
def mpi_files():
    pairs = [socket.socketpair() for _ in range(files // 2)]
    for a, b in pairs:
        a.sendall(bytes(65536))
    return pairs


if where == "high":
    kept = witness.check_in(master, 5)
    others = mpi_files()
else:
    others = mpi_files()
    kept = witness.check_in(master, 5)
print("in", flush=True)
time.sleep(600)
"""


def _accept_all(listener, conns):
    """Every connection waiting on ``listener`` (non-blocking), added to ``conns``."""
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            return
        conns.append(conn)


def _closed(conn):
    """True once ``conn``'s peer closed it (its data read already)."""
    if not select.select([conn], [], [], 0)[0]:
        return False
    try:
        return conn.recv(64, socket.MSG_PEEK) == b""
    except ConnectionResetError:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the witness is Linux only")
@pytest.mark.parametrize("where", ["low", "high"])
def test_a_workers_check_in_closes_before_its_launcher_socket(where):
    import resource

    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] < HIGH + 100:
        pytest.skip("needs a limit on open files above the stand-in's launcher socket")
    master = 1 << 30 | os.getpid()  # no rank 0's pid: the test is the witness
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(witness._ADDRESS.format(pid=master))
    listener.listen(8)
    listener.setblocking(False)
    address = f"gcc_mpi-test-launcher-{uuid.uuid4().hex}"
    launcher = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    launcher.bind("\0" + address)
    launcher.listen(1)
    child = subprocess.Popen([sys.executable, "-c", WORKER, where, address, str(master),
                              str(FILES), str(HIGH)], stdout=subprocess.PIPE, text=True)
    try:
        until = time.monotonic() + TIMEOUT
        assert select.select([launcher], [], [], TIMEOUT)[0], "the stand-in never connected"
        pmi, _ = launcher.accept()
        assert child.stdout.readline() == "in\n"  # it checked in: its connections are waiting
        checked_in = []
        _accept_all(listener, checked_in)
        assert checked_in, "no check-in"
        for conn in checked_in:  # its rank, read: from here on a readable check-in is its close
            assert conn.recv(64) == b"5\n"
        child.send_signal(signal.SIGKILL)
        # the event hydra acts on: the launcher socket closes; the witness must know by then
        while not select.select([pmi], [], [], 1.0)[0]:
            assert time.monotonic() < until, "the launcher socket did not close"
        assert pmi.recv(1) == b""
        assert any(_closed(conn) for conn in checked_in), (
            f"the launcher socket ({where}) closed before every check-in of the worker: "
            "hydra's kill could reach another rank first")
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
