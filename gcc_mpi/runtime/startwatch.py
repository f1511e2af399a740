"""The warden's watch over its host's ranks while MPI starts (``warden``).

MPI_Init waits for every rank of the job (the process manager's fence, MPICH's and Open MPI's
alike): a rank that dies or is stopped before it gets there keeps every other rank inside
MPI_Init for ever — where no code of ours runs — whenever the launcher does not end the job
itself (Open MPI under ``--with-ft ulfm``, hydra with ``-disable-auto-cleanup``, and a stop
under any launcher), and a launcher that does end it says nothing of ours (hydra: exit code 9
and not a line). The host's warden runs outside MPI and sees it: forked by the first rank of
the host to run ``python -m gcc_mpi`` (its first lines, before the job is read: seconds under
load), from its start until every rank of its host has said ``up`` (past MPI_Init), it looks at
the launcher's daemon's children that are ranks (their environment names their rank: a rank
that never said a word is seen too), and ends the job with one line naming the rank and the
host when one of them

- dies: its pidfd wakes the warden at once, and the pidfds wait in an epoll, whose ready list
  keeps the order of the deaths, so the line names the first to die even when a launcher that
  ends the job itself (hydra, Open MPI without ULFM) killed the others before the warden ran;
  it says nothing when every rank of its host ended at once and the job has ranks elsewhere:
  that was the launcher's end of the job, which another host's warden explains;
- stays stopped (SIGSTOP, not a debugger's trace stop) for STOP_BOUND s of the warden's own
  time (a suspension of the whole job, the warden with it, is no stop of one rank);
- is missing APPEAR_BOUND s after the warden started (the launcher said more ranks here than
  ever appeared: one killed before the warden started), or the host's ranks are not all past
  MPI_Init START_BOUND s after the warden started (a rank of another host hit before its
  warden saw it).

Ending the job: the host's ranks are killed (SIGKILL), and the launcher's daemon too if it
outlives them (``warden``). The bounds are measured in docs/reliability.md.
"""

import os
import select
import signal
import socket
import time

RANK_VARS = (b"PMI_RANK", b"OMPI_COMM_WORLD_RANK", b"PMIX_RANK")
LOOK = 0.1          # seconds between looks while the host's ranks start
STOP_BOUND = 10.0   # seconds a rank may stay stopped before MPI_Init is past
START_BOUND = 120.0  # seconds from the warden's start until every rank of its host is past it
APPEAR_BOUND = 10.0  # seconds from the warden's start until every rank of its host is seen
GAP = 2.0           # a look this late: the warden itself was suspended (the whole job was)


def children(daemon):
    """Pids of ``daemon``'s children (every thread's: Open MPI's daemons fork from several)."""
    found = set()
    try:
        for tid in os.listdir(f"/proc/{daemon}/task"):
            with open(f"/proc/{daemon}/task/{tid}/children") as f:
                found.update(int(p) for p in f.read().split())
    except OSError:
        pass
    return found


def rank_of(pid):
    """The MPI rank the launcher gave process ``pid`` (its environment), or None."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = dict(v.partition(b"=")[::2] for v in f.read().split(b"\0"))
    except OSError:
        return None
    for var in RANK_VARS:
        if env.get(var, b"").isdigit():
            return int(env[var])
    return None


def state(pid):
    """Process ``pid``'s state letter ("T": stopped), or None once it ended (or is a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            code = f.read().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return None
    return None if code in ("Z", "X") else code


class StartWatch:
    """The host's ranks from the warden's start until all are past MPI_Init (see the module).
    ``expected``: the ranks the launcher put on this host, ``size``: in the job (the missing
    ones are named when the host holds them all)."""

    def __init__(self, daemon, expected=None, size=None, host=None, stop_bound=STOP_BOUND,
                 start_bound=START_BOUND):
        self.daemon, self.expected, self.size = daemon, expected, size
        self.host = host or socket.gethostname()
        self.stop_bound, self.start_bound = stop_bound, start_bound
        self.ranks, self.pidfds, self.up = {}, {}, set()
        # the pidfds in an epoll, whose ready list keeps the order of the deaths: the first
        # is the rank that died, the others a launcher's end of the job a moment later
        self.deaths = select.epoll()
        self.stopped_since, self.ended = {}, []
        self.begun = self.last = time.monotonic()
        self.ended = self._discover()  # at once: a rank may die before the first look

    def fds(self):
        """The fds to wait on: readable once a rank ended."""
        return [self.deaths.fileno()]

    def note(self, pid, rank, up=False):
        """Rank ``rank`` is process ``pid`` (its own word: it may have ended since); ``up``:
        it is past MPI_Init."""
        if up:
            self.up.add(pid)
        if rank is not None and pid not in self.ranks:
            self._add(pid, rank)

    def _add(self, pid, rank):
        self.ranks[pid] = rank
        try:
            fd = os.pidfd_open(pid)
            self.pidfds[fd] = pid
            self.deaths.register(fd, select.EPOLLIN)
        except OSError:
            self.ended.append(pid)

    def close(self):
        for fd in self.pidfds:
            os.close(fd)
        self.pidfds = {}
        self.deaths.close()

    def _discover(self):
        """Open a pidfd for each new rank child; the pids found ended already."""
        for pid in children(self.daemon) - set(self.ranks):
            rank = rank_of(pid)
            if rank is not None:  # else not a rank (Open MPI's ssh agents)
                self._add(pid, rank)
        ended, self.ended = self.ended, []
        return ended

    def look(self):
        """After a rank ended (``fds`` readable) or a look's time passed: "started" when
        every rank of the host is past MPI_Init, "launcher" when all of them ended at once (the
        launcher ended the job), a line saying why the job cannot start, or None (go on)."""
        now = time.monotonic()
        if now - self.last > GAP:  # the warden did not run: every stop so far was everyone's
            self.stopped_since.clear()
            self.begun += now - self.last
        self.last = now
        ended, woken = self._discover(), []
        for fd, _ in self.deaths.poll(0):  # in the order they died
            woken.append(self.pidfds.pop(fd))
            os.close(fd)  # and out of the epoll
        ended += woken
        for fd, pid in list(self.pidfds.items()):
            if state(pid) is None:
                ended.append(pid)
                del self.pidfds[fd]
                os.close(fd)
        starting = [p for p in ended if p not in self.up]
        alive = [p for p in self.pidfds.values() if p not in self.up]
        if starting:
            if (not alive and len(starting) > 1 and self.size != self.expected
                    and not self._missing()):
                return "launcher"  # every rank here at once, and other hosts: the launcher's
            # the first to die: a launcher that ends the job itself (hydra, Open MPI without
            # ULFM) kills the others a moment later, often before the warden runs
            first = [p for p in woken if p not in self.up][:1]
            return self._line(first or starting, "died", "")
        for pid in alive:
            if state(pid) == "T":
                since = self.stopped_since.setdefault(pid, now)
                if now - since > self.stop_bound:
                    return self._line([pid], "stayed stopped",
                                      f" for {self.stop_bound:g} s (SIGSTOP?)")
            else:
                self.stopped_since.pop(pid, None)
        if self.expected and len(self.up) >= self.expected:
            return "started"
        missing = self._missing() if now - self.begun > APPEAR_BOUND else ""
        if missing:
            return (f"{missing} on {self.host} ended before MPI started (before its "
                    "host's warden saw it): the job cannot start (every other rank waits for it "
                    "inside MPI_Init); ending it")
        if now - self.begun > self.start_bound:
            waiting = sorted(self.ranks[p] for p in alive)
            return (f"ranks {', '.join(map(str, waiting))} on {self.host} were not past "
                    f"MPI_Init {self.start_bound:g} s after they started (a rank elsewhere died "
                    "or stopped while MPI started): the job cannot start; ending it")
        return None

    def _missing(self):
        """The ranks the launcher said this host runs that never appeared, as words, or ""."""
        if not self.expected or len(self.ranks) >= self.expected:
            return ""
        if self.size == self.expected:
            gone = sorted(set(range(self.size)) - set(self.ranks.values()))
            return f"rank{'s' if len(gone) > 1 else ''} {', '.join(map(str, gone))}"
        return f"{self.expected - len(self.ranks)} rank(s)"

    def _line(self, pids, what, how):
        named = ", ".join(f"rank {self.ranks[p]} (pid {p})" for p in sorted(pids))
        more = "" if len(pids) == 1 else " at the same moment, one of them first"
        return (f"{named} on {self.host} {what}{how}{more} while MPI started: the "
                "job cannot start (every other rank waits for it inside MPI_Init); ending it")

    def died(self):
        """The host's ranks that ended since the last look, in the order they died (after
        the start: ``look`` no longer runs)."""
        woken = []
        for fd, _ in self.deaths.poll(0):
            woken.append(self.pidfds.pop(fd))
            os.close(fd)
        return woken

    def living(self):
        """The pids of the host's ranks still there."""
        return [p for p in self.ranks if state(p) is not None]


def end_ranks(pids):
    """SIGKILL to ``pids``: their launcher sees them end, and ends the job."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
