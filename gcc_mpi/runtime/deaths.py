"""Rank 0's book of the ranks that died: one place reconciles the ways it hears of a death, so
that each death is buried once, whichever way tells first.

Rank 0 hears of a dead worker in up to three ways, in any order, and two of them may tell of the
same rank:

- MPI (ULFM, Open MPI ``mpiexec --with-ft ulfm``): a request that involves the rank fails with
  MPI_ERR_PROC_FAILED, or the any-source control receive with MPI_ERR_PROC_FAILED_PENDING;
  ``Comm.Get_failed`` names every rank this process knows to have failed, on any node;
- its pid: Open MPI 5.0.11 does not report a rank that called exit() without MPI_Finalize, so
  under ULFM rank 0 also looks, every LOOK_EVERY s, for worker pids of its own node that ended;
- hydra's notice (MPICH ``mpiexec -disable-auto-cleanup``): SIGUSR1 to rank 0, or a worker's
  NOTICE that it got one, says that *a* process died; the pids of rank 0's node say which.

``news`` asks all of them at once and returns the ranks not buried before. News of ranks buried
already is no news, not an error: when the scan found rank 5 first, MPI's own report of rank 5
comes later (the control receive fails with PROC_FAILED_PENDING), is acknowledged, and nothing
else happens (taken for a failure without a failed rank, it would end the job). Only a
death that no way can name within FIND_DEAD s ends the job (``WorkerLost``): hydra's notice of a
process on another node, or MPI's report of a failure that ``Get_failed`` never names.
"""

import logging
import time

from ..core.erasures import LOST
from .mpi import RankFailure
from .warden import process_gone

log = logging.getLogger(__name__)

FIND_DEAD = 2.0    # seconds to look for the dead rank after a report that names none
LOOK_EVERY = 0.5   # seconds between looks for ended worker processes under ULFM


class WorkerLost(Exception):
    """A rank died and rank 0 cannot tell which, or the job was ended elsewhere: the job
    cannot go on."""

    code = 1


class Deaths:
    """The dead ranks of a run (``dead``; ``lost``: (rank, point, trial) of each, in order),
    from every way rank 0 hears of them.

    ``peers``: {rank: (pid, host)} from HELLO; ``host``: rank 0's host; ``ft``: ULFM is on;
    ``notice``: rank 0's count of hydra's SIGUSR1 (``mpi.FailureNotice``), or None."""

    def __init__(self, comm, MPI, peers, host, ft=False, notice=None):
        self.comm, self.MPI, self.ft, self.notice = comm, MPI, ft, notice
        self.peers, self.host = peers, host
        self.dead = set()
        self.lost = []
        self.expected = set()   # ranks rank 0 ends itself (``expect``): buried, not lost
        self.unrecorded = set()  # ranks that died at start-up (``defer``), news for the run
        self.left = set()       # ranks that said BYE (after EXIT): their end is no death
        self.leaving = set()    # ranks sent EXIT (``ending.shutdown``): their end neither
        self.peer_notices = 0   # the most SIGUSR1 a worker said it got (NOTICE)
        self.seen_notices = 0
        self.next_look = 0.0    # time.monotonic() of the next look for ended pids (ULFM)

    def notices(self):
        """Dead processes hydra told of, as the rank told most knows."""
        return max(self.notice.count if self.notice is not None else 0, self.peer_notices)

    def check(self):
        """Raise RankFailure when a way has news that no MPI call reported: hydra's notice, or
        (ULFM, every LOOK_EVERY s) a pid of rank 0's node that ended."""
        if self.unrecorded:
            raise RankFailure("a rank died during start-up")
        if self.notices() > self.seen_notices:
            raise RankFailure("hydra reported a dead process")
        if self.ft and time.monotonic() > self.next_look:
            self.next_look = time.monotonic() + LOOK_EVERY
            if self._gone():
                raise RankFailure("a worker's process ended")

    def news(self, failure=None):
        """The ranks newly known dead (a set, empty when the news was of ranks buried already),
        after ``failure`` (the RankFailure that brought it; None: a look of our own).
        WorkerLost when the job was ended elsewhere (MPI_ERR_REVOKED) or a death cannot be
        named within FIND_DEAD seconds."""
        if failure is not None and failure.revoked:
            raise WorkerLost("another rank ended the job (it revoked MPI_COMM_WORLD; its own "
                             "message says why)")
        self.seen_notices = self.notices()
        give_up = time.monotonic() + FIND_DEAD
        while True:
            failed = self._failed()  # ranks that left after their BYE are in it too
            found = (failed | self._gone()) - self.dead - self.left
            leaving = found & self.leaving  # ended after EXIT, its BYE perhaps in flight
            self.left |= leaving
            found -= leaving
            if found or failed or leaving or self.unrecorded:  # failed alone: a buried rank
                self.dead |= found
                found |= self.unrecorded
                self.unrecorded = set()
                return found
            if not self.ft and len(self.dead) >= self.seen_notices:
                return found    # hydra's notice of a death buried already (or rank 0's own)
            if time.monotonic() > give_up:
                if self.ft and self.comm.Is_revoked():
                    raise WorkerLost("another rank ended the job (it revoked MPI_COMM_WORLD)")
                if self.ft:
                    raise WorkerLost("MPI reported a process failure but no failed rank")
                raise WorkerLost("a rank died (hydra reported a dead process) but not on rank "
                                 "0's node, so rank 0 cannot tell which")
            time.sleep(0.02)

    def defer(self, ranks):
        """``ranks`` died at start-up (``news`` found them): buried, and news again at the
        run's first look (``check``), which records them with the trial the run starts at."""
        self.unrecorded |= ranks

    def expect(self, rank):
        """Rank 0 is about to end ``rank`` itself (a hung worker, ``hung``): buried now, so
        that MPI's or hydra's report of it is no news, and never recorded as lost."""
        self.dead.add(rank)
        self.expected.add(rank)

    def exits_sent(self, ranks):
        """``ranks`` were sent EXIT (``ending.shutdown``): none has left yet, and the end of any
        of them is no death."""
        self.left, self.leaving = set(), set(ranks)

    def exits_over(self):
        """The shutdown is over: an end is a death again (unless the rank left)."""
        self.leaving = set()

    def said_bye(self, rank):
        """``rank`` said BYE: its end is no death."""
        self.left.add(rank)

    def noticed(self, count):
        """Hydra has sent ``count`` dead-process notices to some worker (its NOTIFIED)."""
        self.peer_notices = max(self.peer_notices, count)

    def bury(self, rank, point, trial, events=None):
        """Record the death of ``rank`` (found by ``news``) during ``trial`` of ``point``: the
        stderr line, ``lost`` and ``events.lost`` (the file's ``lost`` attribute)."""
        self.lost.append((rank, point, trial))
        if events is not None:
            events.lost(rank, point, trial)
        pid, host = self.peers.get(rank, (None, None))
        where = f", pid {pid}" + (f" on {host}" if host != self.host else "")
        log.info("rank %s (worker %s%s) died during trial %s of point %s; it is a permanent "
                 "straggler from now on (error code %s in the file)", rank, rank - 1, where,
                 trial, point, LOST)

    def _failed(self):
        """ULFM: every rank MPI knows to have failed (acknowledged, so that any-source
        receives work again); else nothing."""
        if not self.ft:
            return set()
        group = self.comm.Get_failed()
        try:
            ranks = self.MPI.Group.Translate_ranks(group, list(range(group.Get_size())),
                                                   self.comm.Get_group())
        finally:
            group.Free()
        self.comm.Ack_failed()
        return {r for r in ranks if r > 0}

    def _gone(self):
        """Ranks on rank 0's node whose process ended (not yet buried)."""
        return {r for r, (pid, host) in self.peers.items() if r not in self.dead | self.left
                and host == self.host and pid is not None and process_gone(pid)}
