"""Rank 0's witness: says which rank died when hydra ends the job for it.

MPICH's hydra SIGKILLs every rank as soon as one of them dies by a signal — with or without
``mpiexec -disable-auto-cleanup`` (its proxy does so whenever it reaps a child that a signal
killed) — so rank 0 gets no chance to say which rank it was, and hydra's own "BAD TERMINATION"
message names *a* process that ended, often one it killed itself.

So rank 0 forks, before MPI starts, a small witness process in a session of its own (hydra
kills process groups: the witness outlives them). It listens on an abstract Unix socket named
after rank 0's pid; every worker on rank 0's node connects at start-up (twice, ``check_in``)
and says its rank, and rank 0 keeps a pipe to it. A dying process's files close one by one,
and one of a worker's check-ins closes before its PMI socket, whose close hydra reacts to
(``checkin``), so the first connection to close is the rank that died first. Unless rank 0
said ``done`` before (it ends the job itself: normal end, a stop, an abort), the witness then
prints which rank that was to rank 0's stderr — hydra forwards it — and exits. Ranks on other
nodes are not watched (their host's warden names them: ``warden.MidRun``). Linux only (abstract
sockets); elsewhere there is no witness.
"""

import os
import select
import socket
import sys
import time
from contextlib import contextmanager

from ..logs import PREFIX
from . import checkin

_current = None
_ADDRESS = "\0gcc_mpi-witness-{pid}"


class Witness:
    """Rank 0's end of the pipe to the witness process."""

    def __init__(self, fd):
        self.fd = fd

    def send(self, line):
        try:
            os.write(self.fd, (line + "\n").encode())
        except OSError:  # the witness is gone: nothing to tell
            pass


def start():
    """Fork the witness (rank 0, before MPI starts); its handle, or None where unsupported."""
    global _current
    if not sys.platform.startswith("linux"):
        return None
    try:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(_ADDRESS.format(pid=os.getpid()))
        listener.listen(1024)
    except OSError:
        return None
    read, write = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    if os.fork() == 0:  # the witness
        try:
            os.setsid()  # out of rank 0's process group: hydra's kill(-pgid) does not reach it
            os.close(write)
            pmi_fd = os.environ.get("PMI_FD", "")
            if pmi_fd.isdigit():
                os.close(int(pmi_fd))  # rank 0's process-manager socket stays rank 0's alone
            _witness(read, listener)
        finally:
            os._exit(0)
    os.close(read)
    listener.close()
    _current = Witness(write)
    return _current


@contextmanager
def watching(path=None):
    """Rank 0 from its start to the moment it ends the job itself: meanwhile the witness (if
    any) names the rank whose death ends the job, and ``path``, the results file that keeps
    what was committed; on any way out of the block rank 0 ends the job itself (a normal end,
    an interruption, an abort), and the witness says nothing."""
    if _current is not None and path is not None:
        _current.send(f"file {path}")
    try:
        yield
    finally:
        done()


def done():
    """Tell the witness (if any) that rank 0 ends the job itself: it says nothing."""
    if _current is not None:
        _current.send("done")


def started():
    """Tell the witness (if any) that every worker answered the handshake: a death before,
    even rank 0's, is said by its host's warden (``startwatch``) or rank 0 itself."""
    if _current is not None:
        _current.send("started")


def check_in(master_pid, rank):
    """On a worker on rank 0's node: connect to the witness and say who this is, twice, on the
    descriptors of ``checkin`` (0 and the highest), so that the first check-in to close is the
    worker that died first, even though hydra ends every rank of the node once a rank's PMI
    socket closes. Kept open until the process ends; None if there is no witness."""
    return checkin.hold(_ADDRESS.format(pid=master_pid), f"{rank}\n", (0, checkin.top()))


def _witness(pipe, listener):
    listener.setblocking(False)
    ranks = {}         # connection -> rank (None until it said)
    first = None       # the ranks whose connections closed at the first wake-up with a close
    path, quiet, started, buffer, alive = None, False, False, b"", True
    while alive:  # until rank 0 is gone: if it outlives a worker, it reports that itself
        select.select([pipe, listener, *ranks], [], [])
        # everything that happened by this wake-up, at once: the connections still waiting to
        # be accepted too (a worker under load may check in and die before the witness ran),
        # each read to its end — or the close of rank 0's pipe, which hydra's kill follows,
        # would hide the death that came first
        while True:
            try:
                conn, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                break
            conn.setblocking(False)
            ranks[conn] = None
        ready, _, _ = select.select([pipe, *ranks], [], [], 0)
        closed = []
        for r in ready:
            if r is pipe:
                data = os.read(pipe, 4096)
                if not data:
                    closed.append(0)
                    alive = False
                buffer += data
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    word, _, rest = line.decode().partition(" ")
                    if word == "file":
                        path = rest
                    elif word == "done":
                        quiet = True
                    elif word == "started":
                        started = True
                continue
            while True:
                try:
                    data = r.recv(64)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    data = b""
                if data and ranks[r] is None:
                    ranks[r] = int(data.split()[0])
                elif not data:
                    closed.append(ranks.pop(r))
                    r.close()
                    break
        if closed and first is None:  # each worker has two connections (``check_in``)
            first = sorted({r for r in closed if r is not None})
    if quiet or (first == [0] and not started):  # before the handshake: the warden's
        return
    time.sleep(0.2)  # after hydra's own report
    # straight to stderr, not through logging: a forked process of its own (gcc_mpi.logs)
    sys.stderr.write(f"{PREFIX}{ending_line(first, path=path)}\n")
    sys.stderr.flush()


def ending_line(first, path=None, seen_by="rank 0's witness process", where=None):
    """The one line that says which rank's death ended the job: ``first``, the ranks that
    ended at the first moment (rank 0 alone: it ended first), ``seen_by`` what saw it, ``where``
    the dead rank's pid and host when that is not rank 0's node (a host's warden says it there,
    ``warden``), ``path`` the results file. One wording for both, which benchmarks/chaos.py and
    the tests read."""
    keeps = f"{path} keeps" if path else "the results file keeps"
    if first == [0]:
        who = "rank 0 ended before the job did"
    elif len(first) == 1:
        worker = f"worker {first[0] - 1}" + (f", {where}" if where else "")
        who = f"rank {first[0]} ({worker}) died first and the job ended with it"
    else:
        who = (f"ranks {', '.join(map(str, first))} ended at the same moment, one of them "
               "first, and the job ended with them")
    return (f"{who} (seen by {seen_by}); {keeps} every trial committed before "
            "(complete = false): the same command with --resume continues")
