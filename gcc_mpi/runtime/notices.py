"""Rank 0's ear for the workers' NOTICEs (protocol): a signal a worker got (SIGNALLED), hydra's
dead-process notice it got (NOTIFIED), its BYE after EXIT.

One persistent receive per worker, started by ``listen`` and restarted after each NOTICE, so a
NOTICE is taken on any turn of any wait (``Waiter.poll_control`` calls ``poll``). Not one
receive from any source: with MPICH a persistent any-source receive misses messages from
senders on other hosts, and rank 0 would wait for BYEs that had been sent (docs/reliability.md,
"Measured"). Under ULFM a dead worker's
receive fails (RankFailure from the waiter) until ``forget`` cancels it.
"""

import logging
import signal
import time

import numpy as np

from . import protocol as P
from .pace import SLEEP_IDLE, SLEEP_MIN, Backoff

log = logging.getLogger(__name__)


class Notices:
    """The NOTICEs of every worker of ``comm``. ``stop``: the InterruptFlag that a worker's signal
    sets (None: not acted on); ``deaths``: the run's ``Deaths`` (hydra's notices it got, the
    ranks not listened to)."""

    def __init__(self, comm, MPI, stop, deaths):
        self.comm, self.MPI, self.stop, self.deaths = comm, MPI, stop, deaths
        self.rows = np.zeros((comm.size, P.NOTICE_SIZE))  # row r: rank r's last NOTICE
        self.requests = None  # while listening: the receive of rank r + 1 at index r
        self.byes = set()     # ranks whose BYE (after EXIT) came

    @property
    def listening(self):
        return self.requests is not None

    def listen(self):
        """Start a receive of every live worker's NOTICEs (a no-op when listening)."""
        if self.requests is None:
            null = self.MPI.REQUEST_NULL
            self.requests = [null if r in self.deaths.dead else
                             self.comm.Recv_init(self.rows[r], source=r, tag=P.NOTICE)
                             for r in range(1, self.comm.size)]
            self.MPI.Prequest.Startall([q for q in self.requests if q])

    def poll(self):
        """Take the NOTICEs that came, act on each and listen again: True if any came. An MPI
        error (a dead worker's receive, ULFM) is raised as it is, for the waiter to read."""
        if self.requests is None:
            return False
        done = self.MPI.Request.Testsome(self.requests)
        for i in done or ():
            kind, rank, value = self.rows[i + 1].tolist()
            self._take(kind, rank, value)
            if kind == P.BYE:  # the last NOTICE of that rank: it leaves now
                self.requests[i].Free()
                self.requests[i] = self.MPI.REQUEST_NULL
            else:
                self.requests[i].Start()
        return bool(done)

    def _take(self, kind, rank, value):
        if kind == P.NOTIFIED:
            self.deaths.noticed(int(value))
        elif kind == P.BYE:
            self.byes.add(int(rank))
            self.deaths.said_bye(int(rank))
        elif kind == P.SIGNALLED and self.stop is not None and self.stop.note(int(value)):
            log.info("rank %s got %s; stopping the job", int(rank),
                     signal.Signals(int(value)).name)

    def await_byes(self):
        """An EXIT goes out now: the BYEs heard before it answered an earlier one."""
        self.byes = set()

    def forget(self, rank):
        """``rank`` died: its receive is cancelled (it would fail on every test, ULFM)."""
        if self.requests is not None and self.requests[rank - 1]:
            request, self.requests[rank - 1] = self.requests[rank - 1], self.MPI.REQUEST_NULL
            try:
                request.Cancel()
            except self.MPI.Exception:
                pass

    def farewells(self, ranks, until, waiter):
        """Wait for the BYE of every rank of ``ranks`` not dead (a dead one sends none); False
        once time.perf_counter() passes ``until``. RankFailure (``waiter``'s reading of an MPI
        error, or ``Deaths.check``) when one more rank died."""
        backoff = Backoff(SLEEP_MIN, SLEEP_IDLE)
        while not set(ranks) - self.deaths.dead - self.deaths.left <= self.byes:
            try:
                came = self.poll()
            except self.MPI.Exception as e:
                waiter.raise_failure(e)
            self.deaths.check()  # e.g. an exit() before the BYE, on rank 0's node (ULFM)
            if came:
                backoff.reset()
            elif time.perf_counter() > until:
                return False
            else:
                backoff.sleep()
        return True

    def signalled(self, until):
        """Whether the stop flag is set (a signal here, or a worker's SIGNALLED NOTICE) by
        the time time.perf_counter() passes ``until``: a worker that cancelled a task unasked
        got its signal inside f (``Worker.evaluate``) and sent its NOTICE just before."""
        backoff = Backoff(SLEEP_MIN, SLEEP_IDLE)
        while not self.stop.requested:
            if self.poll():
                continue
            if time.perf_counter() > until:
                return False
            backoff.sleep()
        return True

    def close(self):
        """Stop listening: every receive cancelled and freed."""
        requests, self.requests = self.requests or [], None
        for request in requests:
            if not request:
                continue
            try:
                request.Cancel()
                request.Wait()
                request.Free()
            except self.MPI.Exception:  # completed meanwhile, or its peer died (ULFM)
                pass
