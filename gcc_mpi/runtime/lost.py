"""The workers rank 0's rounds lose: the dead and the silent, taken out of the rounds in flight.

A dead worker is a permanent straggler from then on — never sent a task again, error code 4
(LOST) in the file, named on stderr and in the file's ``lost`` attribute with the trial it
died in — and the job completes, when the MPI lets the other ranks go on: under ULFM (Open MPI
``mpiexec --with-ft ulfm``, any rank on any node) and under MPICH ``mpiexec
-disable-auto-cleanup`` (a rank of rank 0's node that exits without a signal). Which ranks died
is ``deaths``' to say, whichever way it heard first; ``bury`` then cancels every request of the
rounds in flight to them (a round still waiting records them LOST) and takes the replies of the
others that the failed wait completed. A scheme that can no longer decode (an exact one short
of results) records its trials as failed with the reason; the others go on. Otherwise the
launcher kills every rank at once (the file keeps every trial committed before).

A worker that stops answering (stopped, stuck) is a straggler the rounds stop waiting for
(``hung`` finds it, ``silence`` takes it out): error code 5 (HUNG) while it is silent, the
file's ``hung`` attribute; back in the rounds when it answers again; resumed or ended before
the EXITs (``ending``).
"""

import logging

import numpy as np

from ..core.erasures import HUNG, LOST
from . import protocol as P

log = logging.getLogger(__name__)


class Losses:
    """What rank 0 does when it loses a worker (``deaths`` and ``hung`` say which): told, when
    built, the master's ``deaths``, ``hung`` and ``notices``, its rounds ``in_flight`` (slot ->
    Round), ``where`` the rounds are (``master.Where``), its ``stats`` and ``orphans`` (requests
    to the dead that could not be completed), and ``events`` (where a loss is recorded, or
    None); ``requests`` is the master's side of the requests (``cancel``, ``send_control``,
    ``failure``, ``error``); ``use`` gives it each point's slots."""

    def __init__(self, MPI, requests, deaths, hung, notices, in_flight, where, stats, orphans,
                 events=None):
        self.MPI, self.requests = MPI, requests
        self.deaths, self.hung, self.notices = deaths, hung, notices
        self.in_flight, self.where, self.stats = in_flight, where, stats
        self.orphans = orphans
        self.events = events
        self.slots = None

    def use(self, slots):
        """The current point's slots (``protocol.Slots``)."""
        self.slots = slots

    def look(self, now):
        """Between waits: silence the workers newly past their due time, and say which of the
        silent ones answer again (their late replies discarded)."""
        for rank in self.hung.look(self.in_flight.values(), now):
            self.silence(rank)
        for rank in self.hung.poll(self.discard, self.slots):
            log.info("rank %s answers again (its late replies were discarded); it gets tasks "
                     "again", rank)

    def bury(self, failure=None):
        """After a process-failure error (ULFM), hydra's notice or an ended pid (``failure``,
        or None): the ranks newly dead (``Deaths.news``), each recorded once with the trial it
        died in, its requests in the rounds in flight cancelled (a round still waiting records
        it LOST). WorkerLost when a death cannot be named (hydra's notice of a rank on another
        node) or the job was ended elsewhere."""
        found = self.deaths.news(failure)
        point = self.where.index
        for rank in sorted(found):
            self.deaths.bury(rank, point, self.trial_owed(rank - 1), self.events)
            self.orphans.extend(self.hung.forget(rank))
            self.notices.forget(rank)
        self.stats["lost"] += len(found)
        for r in self.in_flight.values():
            for k, w in enumerate(r.workers.tolist()):
                if w + 1 in found:
                    self.forget(r, k, w)
        return found

    def trial_owed(self, w):
        """The trial a lost worker w is counted lost in: the oldest round in flight that waits
        for it, else the trial last started."""
        return min((r.trial for r in self.in_flight.values() if w in r.pending),
                   default=self.where.trial)

    def after_failure(self, failure):
        """A wait ended because a rank died: bury it, then return the replies of the live
        workers that the failed wait completed (MPI deactivated their requests without
        telling which: a completed persistent request tests true), oldest round first."""
        n, recvs, done = self.slots.n, self.slots.recvs, []
        while True:
            self.bury(failure)
            failure = None
            again = False
            for r in sorted(self.in_flight.values(), key=lambda r: r.seq):
                for w in sorted(r.pending):
                    i = r.slot * n + w
                    if i in done:
                        continue
                    try:
                        if recvs[i].Test():
                            done.append(i)
                    except self.MPI.Exception as e:
                        again = True  # one more rank died: bury it too
                        failure = self.requests.failure(e)
            try:
                self.notices.poll()
            except self.MPI.Exception as e:
                again = True
                failure = self.requests.failure(e)
            if not again:
                return done

    def forget(self, r, k, w):
        """Cancel round r's requests to dead worker w (its k-th)."""
        if w in r.pending:
            recv = self.slots.recvs[r.slot * self.slots.n + w]
            self.requests.cancel(recv)
            try:
                recv.Wait()  # a cancelled receive completes at once
            except self.MPI.Exception:  # ULFM: it completed with the process-failure error
                pass
            r.pending.discard(w)
            if r.t_stop is None:
                r.rec["error"][w] = LOST
                r.texts[w] = f"rank {w + 1} died"
        for request in (r.sends[k], r.stops.pop(w, None)):
            if request:
                self.requests.cancel(request)
                self.orphans.append(request)  # a send to the dead may never complete
        r.sends[k] = self.MPI.REQUEST_NULL

    def silence(self, rank):
        """``rank`` owes a reply past its due time (``hung``): the rounds in flight stop
        waiting for it — one still waiting records it HUNG and sends it a STOP (so that it
        skips that task if it comes back) — and its requests in their slots are parked; it
        gets no task until they complete. Said on stderr and in the file's ``hung``."""
        w, point, slots = rank - 1, self.where.index, self.slots
        t = self.trial_owed(w)
        for r in sorted(self.in_flight.values(), key=lambda r: r.seq):
            if w not in r.pending:
                continue
            if r.decided is None:
                r.rec["error"][w] = HUNG
                r.texts[w] = f"rank {rank} did not answer"
                stop = self.requests.send_control(
                    P.fill_control(slots.stop[r.slot, w], P.STOP, r.seq, r.trial), rank)
            else:
                stop = r.stops.pop(w, None)
            r.sends[int(np.flatnonzero(r.workers == w)[0])] = self.MPI.REQUEST_NULL
            r.pending.discard(w)
            self.hung.park(rank, (point, t), slots, r.slot, w, stop, r.seq, r.trial)
        self.stats["hung"] += 1
        pid, host = self.deaths.peers.get(rank, (None, None))
        if self.events is not None:
            self.events.hung(rank, point, t, host)
        waited = self.hung.waited.get(rank, 0.0)
        log.info("rank %s (worker %s, pid %s on %s) has not answered for %.1f s, in trial %s "
                 "of point %s; a straggler that the rounds no longer wait for (error code %s in "
                 "the file) until it answers", rank, w, pid, host, waited, t, point, HUNG)

    def discard(self, rank, seq, trial, status):
        """A parked reply (``hung``) came: never used; a FAILED one's ERROR message too."""
        if status == P.FAILED:
            self.requests.error(rank, seq, trial)
        self.stats["unused"] += 1
