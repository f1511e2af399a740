"""Each host's warden: once the job ends on its host, it ends what is left of it there.

The launcher waits for every process of the job, so one that was stopped (SIGSTOP, a debugger)
or got stuck after the job's last message keeps mpiexec up for ever: rank 0 resumes the silent
workers it knows of (``hung``, through a live worker of their node), but a rank stopped after
its BYE, once its node mates had left, has nobody to resume it. Under ULFM an abort has the
same hole: the rank that ends the job revokes MPI_COMM_WORLD and leaves, and a
stopped rank never sees the revoke.

So the first rank of each host to start forks a warden before MPI starts (the one that binds
the host's abstract Unix socket, named after the launcher's daemon there — hydra's proxy, Open
MPI's prted or prterun, the parent of every rank of the host), in a session of its own (out of
the launcher's process groups, like rank 0's ``witness``); every other rank of the host says
``rank`` to it at start-up, and once past MPI_Init checks in (``check_in``): connections it
holds until it dies, whose close tells the warden which rank of the host died first
(``MidRun``). Each rank tells it ``leaving`` when it leaves in order (after LEAVE,
a revoke, rank 0's end) or ``abort`` when it ends the job itself; from the first such word on,
the warden:

- resumes (SIGCONT) every stopped rank of the host, at once and every LOOK s: a resumed worker
  takes its LEAVE or sees the revoke, and leaves as the others did;
- kills (SIGKILL) the ranks of the host still there END_GRACE s after the last word (stuck,
  not stopped: the job is over for them, and the launcher waits);
- after an ``abort`` under ULFM, once its own ranks are gone, ends the launcher's daemon
  (SIGTERM, then SIGKILL) if it is still up ABORT_GRACE s later: it then waits for a rank on
  another host that nobody resumed (the only rank of its host, stopped), and its end ends them
  all. Only Open MPI's daemons are ended so (hydra's abort ends every process itself).

It ends when no rank of its host is left, or its daemon is gone. It needs no other process of
the job and no network: a host whose every rank is stopped is reached only through an abort on
another host, and a stopped rank 0 stops the whole job (the scheduler's time limit ends that).
Linux only (/proc, abstract sockets); elsewhere there is no warden.
"""

import os
import select
import signal
import socket
import sys
import time

from ..core.launcher import launcher_local_size, launcher_rank, launcher_size
from ..logs import PREFIX
from . import checkin, startwatch
from .last_lines import drain, quiet_from_here
from .startwatch import StartWatch, end_ranks, state
from .witness import ending_line

_ADDRESS = "\0gcc_mpi-warden-{daemon}"
LOOK = 0.2           # seconds between looks at the host's ranks once the job ends
END_GRACE = 30.0     # seconds after the last rank's word before the ranks left are killed
ABORT_GRACE = 5.0    # seconds after an abort before the launcher's daemon is ended (ULFM)
OPEN_MPI_DAEMONS = ("prterun", "prted", "mpirun", "mpiexec", "orted", "orterun")
FOLLOW = 2.0         # seconds in which the launcher ends a host's other ranks after a death
LINGER = 0.2         # seconds after which a launcher's daemon that ended the job has left
HYDRA_PROXY = "hydra_pmi_proxy"


_joined = None  # this rank's start(): it forked the warden (True) or told it of itself (False)
_held = None    # this rank's check-in (``check_in``): its descriptors


def start():
    """Fork this host's warden if no rank of the host did (before MPI starts), or tell it of
    this rank, once (``python -m gcc_mpi`` does so first thing, ``mpi.before_start`` again);
    True if this process forked it."""
    global _joined
    if not sys.platform.startswith("linux"):
        return False
    if _joined is None:
        _joined = _start()
    return _joined


def _start():
    daemon = os.getppid()
    try:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(_ADDRESS.format(daemon=daemon))
        listener.listen(1024)
    except OSError:  # a rank of this host started it already
        tell("rank", tries=50)  # it may have bound its socket and not yet listen()ed
        return False
    sys.stdout.flush()
    sys.stderr.flush()
    rank = os.getpid()
    if os.fork() == 0:
        try:
            os.setsid()  # out of the launcher's process groups: its kill(-pgid) misses it
            # only stderr (for its one line) and the socket: the rank's process-manager socket
            # (hydra's PMI_FD) and stdout stay the rank's, whose close tells the launcher
            # that the rank ended
            devnull = os.open(os.devnull, os.O_RDWR)
            os.dup2(devnull, 0)
            os.dup2(devnull, 1)
            os.closerange(3, listener.fileno())
            os.closerange(listener.fileno() + 1, 1 << 16)
            watch(listener, daemon, {rank}, starting=StartWatch(
                daemon, expected=launcher_local_size(), size=launcher_size()))
        finally:
            os._exit(0)
    listener.close()
    return True


def tell(word, tries=1):
    """Tell this host's warden (if any) ``word`` about this rank: ``rank`` (it is one of the
    host's ranks, at start-up), ``up`` (it is past MPI_Init), ``leaving`` (it leaves in order)
    or ``abort`` (it ends the job), before it does."""
    for attempt in range(tries):
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.settimeout(1.0)
                s.connect(_ADDRESS.format(daemon=os.getppid()))
                s.sendall(f"{word} {os.getpid()} {launcher_rank()}\n".encode())
            return
        except OSError:  # no warden (yet): nothing to tell
            if attempt + 1 < tries:
                time.sleep(0.01)


def check_in():
    """Tell this host's warden (if any) that this rank is past MPI_Init, on connections it holds
    until it dies (``checkin``: on descriptor 0 and a high one, ``in``), whose close tells the
    warden that it died before its launcher can know (``MidRun``); once. Rank 0, whose stdin
    the launcher feeds and whose host's warden names nobody (rank 0's witness does), says
    ``up``; so does a rank that cannot check in. On rank 0's node a worker's check-in with the
    witness then takes descriptor 0 over (``witness.check_in``): that warden needs no order."""
    global _held
    if not sys.platform.startswith("linux") or _held is not None:
        return
    _held = []
    if launcher_rank() != 0:
        _held = checkin.hold(_ADDRESS.format(daemon=os.getppid()),
                             f"in {os.getpid()} {launcher_rank()}\n",
                             (0, checkin.top(below=1))) or []
    if not _held:
        tell("up")


def resume_stopped(ranks):
    """SIGCONT to the stopped ones of ``ranks`` (pids); the ones still there."""
    left = [pid for pid in ranks if state(pid) is not None]
    for pid in left:
        if state(pid) in ("T", "t"):
            _signal(pid, signal.SIGCONT)
    return left


def _signal(pid, signum):
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def process_gone(pid):
    """True when process ``pid`` (on this node) no longer runs (gone, or a zombie)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] in ("Z", "X")
    except OSError:
        return False


def said(line):
    """Write ``line`` (after the command line's prefix) on stderr, wait (a bounded while) until
    the launcher read it, and let stderr go: the launcher waits for the end of the rank's stderr
    that the warden shares.

    Straight to stderr, not through ``logging``: the warden is a process forked from a rank,
    whose logging (handlers, their locks, perhaps held by another thread of the rank at the
    fork; the level a user set) is no part of it, and its one line must reach the launcher
    before stderr goes."""
    print(f"{PREFIX}{line}", file=sys.stderr, flush=True)
    drain((sys.stderr,), 2.0)
    quiet_from_here()


def _name(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def _heard(line, ranks, starting):
    """A rank's word ``line`` ("WORD PID RANK") taken in: a ``rank``, ``up`` or ``in`` (up, on a
    check-in) adds the rank to ``ranks`` (and to the ``starting`` watch); the word."""
    word, pid, rank = (line.decode(errors="replace").split() + ["", "", ""])[:3]
    if word in ("rank", "up", "in") and pid.isdigit():
        ranks.add(int(pid))
        if starting is not None:
            starting.note(int(pid), int(rank) if rank.isdigit() else None,
                          up=word in ("up", "in"))
    return word


class MidRun:
    """After the start, on a host without rank 0 (whose witness speaks for its node): a rank
    of the host that dies without a word (before its ``leaving``: it did not take its EXIT),
    and every other rank of the host ended by the launcher within FOLLOW s after it — hydra's
    proxy SIGKILLs them at once; the other proxies then fail an assertion and SIGKILL their
    ranks, rank 0's witness with no one left to forward its line — so nothing but this host's
    warden can say which rank it was. It says it on its rank's stderr, which it holds open: the
    proxy forwards what its ranks write until the last of their stderr closes.

    Which rank died first is the first whose check-in closed (``Inbox.gone``): the ranks'
    pidfds wake the warden once they ended, but their order is not the order of the deaths
    (``checkin``). Were a rank of the host never checked in, the pidfds' order is all there is.
    A host's ranks that outlive the death by FOLLOW s go on (ULFM, hydra's
    ``-disable-auto-cleanup``): rank 0 names the dead rank itself. Where the warden names
    nobody (``names`` false: ``_after_start``), the pidfds only wake it once its ranks ended,
    not a second later (the look it otherwise takes while they run)."""

    def __init__(self, watch, inbox, names=True):
        self.watch, self.inbox, self.names, self.died, self.since = watch, inbox, names, [], None

    def fds(self):
        return self.watch.fds()

    def look(self):
        """The line that names the rank that died first, "" when the job goes on without a
        word of the warden's, or None (look again)."""
        self.died += self.watch.died()  # and the pidfds are read: they wake the warden no more
        if not self.names:
            return None
        held = set(self.watch.ranks) <= self.inbox.checked
        dead = [p for p in self.inbox.gone if p in self.watch.ranks] if held else self.died
        if not dead:
            return None
        self.since = self.since or time.monotonic()
        if not self.watch.living():  # the launcher ended the host's ranks: the job is over
            pid = dead[0]
            return ending_line([self.watch.ranks[pid]], seen_by=f"{self.watch.host}'s warden",
                               where=f"pid {pid} on {self.watch.host}")
        return "" if time.monotonic() > self.since + FOLLOW else None

    def close(self):
        self.watch.close()


def _after_start(watch, daemon, inbox):
    """The watch over the host's ranks once they all started: a ``MidRun``, which names a
    rank on a host of hydra's without rank 0 only. Open MPI's launcher names a rank that a
    signal ended itself ("prterun noticed that process rank 5 ... exited on signal 9"), and
    its daemons, unlike hydra's proxies, outlive an MPI_Abort's end of their ranks
    (``_forwards`` could not tell the two apart)."""
    names = 0 not in watch.ranks.values() and _name(daemon) == HYDRA_PROXY
    return MidRun(watch, inbox, names)


def _forwards(daemon):
    """True when ``daemon`` (hydra's proxy) still forwards its ranks' output LINGER s after the
    last of them ended: after a death it ended the others itself and forwards what they write
    until the last of their stderr closes (the warden's too); when the job was ended elsewhere
    (rank 0's MPI_Abort: it says why itself) the proxy ends its ranks and leaves at once."""
    time.sleep(LINGER)
    return not process_gone(daemon)


class Inbox:
    """The ranks' words on the warden's socket, each whole line at once, not at the
    connection's end (a rank that says "leaving" and exits is not seen to die before its
    word), and the ends of their check-ins (``check_in``: the connections that said ``in``) in
    the order they came, in ``gone`` (pids; ``checked``: every rank that checked in). One epoll
    waits on them all, whose ready list keeps that order, and on a watch's fds (pidfds)."""

    def __init__(self, listener):
        self.listener, self.poller = listener, select.epoll()
        self.conns, self.buffer, self.held = {}, {}, {}  # by fd: socket, bytes, pid checked in
        self.gone, self.checked = [], set()
        listener.setblocking(False)
        self.poller.register(listener.fileno(), select.EPOLLIN)

    def wait(self, timeout, fds=()):
        """The lines ("WORD PID RANK") that came within ``timeout`` s, or once one of ``fds``
        is readable (registered for this wait only: a watch closes them)."""
        for fd in fds:
            self.poller.register(fd, select.EPOLLIN)
        try:
            ready = self.poller.poll(timeout)
        finally:
            for fd in fds:
                self.poller.unregister(fd)
        lines = []
        for fd, _ in ready:  # in the order they came
            if fd == self.listener.fileno():
                lines += self._accept()
            elif fd in self.conns:
                lines += self._read(fd)
        return lines

    def _accept(self):
        """Every waiting connection, and its words at once: a rank may say "rank" and die."""
        lines = []
        while True:
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return lines
            conn.setblocking(False)
            self.conns[conn.fileno()], self.buffer[conn.fileno()] = conn, b""
            self.poller.register(conn.fileno(), select.EPOLLIN)
            lines += self._read(conn.fileno())

    def _read(self, fd):
        conn, lines = self.conns[fd], []
        while True:
            try:
                data = conn.recv(256)
            except (BlockingIOError, InterruptedError):
                return lines
            except OSError:  # reset: ended as much as a close
                data = b""
            *whole, self.buffer[fd] = (self.buffer[fd] + (data or b"\n")).split(b"\n")
            for line in whole:
                word, _, rest = line.partition(b" ")
                if word == b"in" and rest.split()[:1] and rest.split()[0].isdigit():
                    self.held[fd] = int(rest.split()[0])
                    self.checked.add(self.held[fd])
            lines += whole
            if not data:
                self._close(fd)
                return lines

    def _close(self, fd):
        self.poller.unregister(fd)
        self.conns.pop(fd).close()
        del self.buffer[fd]
        pid = self.held.pop(fd, None)
        if pid is not None and pid not in self.gone:  # a rank's first check-in to close
            self.gone.append(pid)


def _start_look(starting, last_word, ranks, daemon, inbox):
    """One look of ``starting`` (the host's ranks while MPI starts; none once a rank said its
    last word): (the watch still starting or None, ``MidRun`` or None once all started, True
    when the warden ended the job because it cannot start)."""
    verdict = None if last_word is not None else starting.look()
    if verdict is None and last_word is None:
        return starting, None, False
    ranks.update(starting.living())
    running = (_after_start(starting, daemon, inbox) if verdict == "started"
               else starting.close())
    if verdict in (None, "started", "launcher"):
        return None, running, False
    said(verdict)  # the job cannot start: end it
    if _name(daemon) in OPEN_MPI_DAEMONS:  # else its launcher may return 0 (ULFM)
        _signal(daemon, signal.SIGTERM)
    end_ranks(ranks)
    return None, None, True


def watch(listener, daemon, ranks, end_grace=END_GRACE, abort_grace=ABORT_GRACE,
          starting=None):
    """The warden's loop (see the module): words from the ranks on ``listener``, the host's
    ``ranks`` (pids: the first, then each that says ``rank``; ``daemon``'s other children, such
    as Open MPI's ssh agents, are not the job's ranks) looked at every LOOK s once a rank
    leaves; until then, ``starting`` (a ``startwatch.StartWatch``, if given) watches them start."""
    ranks, inbox = set(ranks), Inbox(listener)
    last_word, aborted, daemon_end, any_daemon = None, None, None, False
    running = None  # after the start: ``MidRun``
    while True:
        # a look a second until the first word (the ranks run), then every LOOK s
        pidfds = (starting or running).fds() if (starting or running) else []
        wait = (startwatch.LOOK if starting is not None else 1.0) if last_word is None else LOOK
        for word in [_heard(line, ranks, starting) for line in inbox.wait(wait, pidfds)]:
            if word in ("leaving", "abort"):
                last_word = time.monotonic()
                if word == "abort":
                    aborted = aborted or last_word
        if starting is not None:
            starting, running, ended = _start_look(starting, last_word, ranks, daemon, inbox)
            if ended:
                last_word = aborted = time.monotonic()
                any_daemon = True
        line = None if running is None else "" if last_word is not None else running.look()
        if line is not None:  # the run's watch is over: a word came, or a death, or none
            running.close()
            if line:  # said where hydra's proxy still forwards it: the warden's last word
                return said(line) if _forwards(daemon) else None
            running = None
        if process_gone(daemon):
            return
        if last_word is None:
            # every rank of the host ended without a word (killed by its launcher), and no
            # watch is left to say which died first: a ``MidRun`` still looking has seen some
            # of them end, and the last may have ended since (its next look says it)
            if (starting is None and (running is None or not running.names)
                    and not any(state(pid) for pid in ranks) and not inbox.conns):
                return
            continue
        now = time.monotonic()
        left = resume_stopped(ranks)
        if left and now > last_word + end_grace:
            print(f"{PREFIX}{socket.gethostname()}'s warden: pids {', '.join(map(str, left))} "
                  f"still ran {end_grace:g} s after the job ended on this host; killing them "
                  "(SIGKILL)", file=sys.stderr, flush=True)
            for pid in left:
                _signal(pid, signal.SIGKILL)
            last_word = now  # then look again: they are gone within a look
        if left:
            continue
        if aborted is None or not (any_daemon or _name(daemon) in OPEN_MPI_DAEMONS):
            return
        if now > aborted + abort_grace:  # the launcher's daemon outlives the abort: end it
            _signal(daemon, signal.SIGTERM if daemon_end is None else signal.SIGKILL)
            daemon_end = daemon_end or now
            if now > daemon_end + abort_grace:
                return
