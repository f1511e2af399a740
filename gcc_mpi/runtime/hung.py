"""Workers that stopped answering: stragglers that the rounds no longer wait for.

A worker answers every TASK, in order, within its injected delay plus f's time, and sooner
after a STOP (which cuts the delay short). One that does not — a process stopped (SIGSTOP, a
debugger), swapping, stuck in a filesystem or a driver, an f that never returns — would hold up
every round in flight, since a round's slot is reused only once every reply of it came
(protocol), and the end of the job, since the launcher waits for every process. So rank 0 gives
every reply it is owed a due time, for the oldest task each worker holds (it does them in order):

    max(the round's send, the worker's last reply) + its injected delay + HANG
    or, once the round STOPped it: the STOP + HANG

with the worker's own HANG = max(HANG_MIN, HANG_FACTOR x the 90th percentile of how long its
last results took beyond their injected delay — f's time, and queueing behind its earlier tasks;
any worker's slowest before it has HISTORY_MIN of its own). Until some worker answered that
round the HANG is SILENCE = max(SILENCE_MIN, SILENCE_FACTOR x the longest that rank 0's own f
took on a trial's whole batch (``timed``, the exact results every trial is scored against):
a round nobody answered yet is as slow as f is, not a hung worker (an f of 5 s would otherwise
make every worker "hung" in the first round), but not slower than f on K inputs by a factor 100
— every worker silent that long (every one stopped, a filesystem that every node waits for) is
hung, and the job goes on without them to its end. A worker past its due time is
*hung*: rank 0 says so (a line on stderr, the file's root attribute ``hung`` with the trial)
and takes it out of the rounds (``lost.Losses.silence``): a round still waiting for it stops waiting
(error code HUNG, and a STOP, so that the worker skips that task if it comes back), and a
decided one retires without its reply; its requests in those slots (the receive of its reply,
the sends of its TASK and STOP) are *parked* here, out of the slots' arrays, so that the slots
serve the next rounds for every other worker; and it gets no task while anything of it is
parked (error code HUNG again). No blocking MPI call can see a due time pass, which is why no
rank ever blocks in one (``mpi``).

Rank 0 looks every LOOK_EVERY s; a gap of more than JUMP s between two looks in which its CPU
time went on by less than half the gap means rank 0 itself did not run — the whole job
suspended (SLURM's suspend and gang scheduling stop every process, then continue them) — and
then every reply owed is due no sooner than the grace counted from the end of the gap: a clock
that jumped for everyone is no worker's silence. (Rank 0 busy, with its CPU time going on, is
not such a gap: the replies that came meanwhile are taken before it looks.)

If it answers again (SIGCONT), its late replies complete the parked receives and are discarded
(with the ERROR message of a FAILED one); once all of them came, its requests go back to their
slots and it gets tasks again from the next round on.

At the end (``settle``, before any EXIT) a worker still hung is resumed (SIGCONT: a stopped
process cannot take its EXIT) and given RESUME_GRACE s to answer, and then the job ends as
usual: exit code 0 and a complete file. One that still does not answer (stuck, not stopped) is
ended: under ULFM killed (SIGKILL: a dead worker is survived), otherwise by MPI_Abort with the
run's own exit code, after the file is closed (both MPICH's and Open MPI's launchers then end
every process, stopped ones too, and return that code; a rank killed by a signal would make
MPICH's return 9). Rank 0 signals the processes of its own node; one on another node is
signalled by a live worker of that node (CTRL kind SIGNAL).
"""

import logging
import os
import signal
import time

import numpy as np

from . import protocol as P
from .deaths import WorkerLost
from .pace import SLEEP_IDLE, SLEEP_MIN, Backoff

log = logging.getLogger(__name__)

HANG_MIN = 3.0       # seconds: no worker counts as hung sooner (a loaded machine's stalls are less)
HANG_FACTOR = 10.0   # ... nor sooner than 10 x its usual time beyond its delay (see above)
HISTORY = 32         # results per worker that its usual time is taken from
HISTORY_MIN = 4      # ... at least
LOOK_EVERY = 0.5     # seconds between looks for overdue replies
RESUME_GRACE = 5.0   # seconds a hung worker has at the end, once resumed, to answer
SILENCE_MIN = 60.0   # seconds: a round that no worker answered waits at least this long ...
SILENCE_FACTOR = 100.0  # ... and 100 x rank 0's own f on a trial's batch (see above)
JUMP = 2.0           # seconds between two looks (due every LOOK_EVERY) that mean rank 0 did not run


def named(ranks, peers):
    """``ranks`` as a line names them: "rank 5 (worker 4, pid 123 on host2)", or "ranks 5
    (...), 7 (...)"; ``peers``: {rank: (pid, host)}."""
    ranks = sorted(ranks)
    where = {r: peers.get(r, ("?", "?")) for r in ranks}
    each = ", ".join(f"{r} (worker {r - 1}, pid {where[r][0]} on {where[r][1]})" for r in ranks)
    return f"rank{'s' if len(ranks) > 1 else ''} {each}"


class Stuck(WorkerLost):
    """A hung worker does not answer even when resumed, and only MPI_Abort can end it."""


class Parked:
    """A hung worker's requests of one round's slot, taken out of ``slots``' arrays (``index``
    = slot * n + w) until they complete: the persistent receive of its reply (``recv``; the
    reply lands in ``slots.reply[slot, w]``) and TASK send (``task``), and the STOP (``stop``,
    or None)."""

    __slots__ = ("rank", "slots", "index", "recv", "task", "stop", "seq", "trial", "came")

    def __init__(self, rank, slots, index, recv, task, stop, seq, trial):
        self.rank, self.slots, self.index = rank, slots, index
        self.recv, self.task, self.stop, self.seq, self.trial = recv, task, stop, seq, trial
        self.came = False  # the reply came (and was discarded)

    def requests(self):
        return [r for r in (self.recv, self.task, self.stop) if r]


class Hung:
    """The hung workers of a run (``hung``: {rank: (point, trial)} from when they were found)
    and their parked requests; the due times of the replies rank 0 is owed.

    ``peers``: {rank: (pid, host)}; ``host``: rank 0's host; ``size``: ranks in the job."""

    def __init__(self, comm, MPI, waiter, peers, host, size):
        self.comm, self.MPI, self.waiter = comm, MPI, waiter
        self.peers, self.host = peers, host
        self.hung = {}
        self.parked = []
        self.last_reply = np.zeros(size)  # time.perf_counter() of each rank's last reply
        self.beyond = np.full((size, HISTORY), np.nan)  # its last results' time beyond delay
        self.results = np.zeros(size, np.int64)         # ... how many there were
        self.answered = set()   # seqs of the rounds in flight that some worker answered
        self.next_look = 0.0    # time.perf_counter() of the next look for overdue replies
        self.f_time = 0.0       # seconds: the longest rank 0's f took on a trial's batch
        self.waited = {}        # rank -> the HANG it was found late by (for its message)
        self.looked = None      # time.perf_counter() of the last call of ``look``,
        self.cpu = 0.0          # ... and rank 0's CPU time then
        self.resumed = -np.inf  # ... of the end of the last time rank 0 did not run

    def hang_after(self):
        """Each rank's HANG (seconds), from its results so far."""
        mine = self.results >= HISTORY_MIN
        anyone = np.nanmax(self.beyond) if np.isfinite(self.beyond).any() else 0.0
        usual = np.full(len(self.results), anyone)
        if mine.any():
            usual[mine] = np.nanpercentile(self.beyond[mine], 90, axis=1)
        return np.maximum(HANG_MIN, HANG_FACTOR * usual)

    def timed(self, seconds):
        """Rank 0's f took ``seconds`` on a trial's batch (its exact results)."""
        self.f_time = max(self.f_time, seconds)

    def silence(self):
        """SILENCE (seconds): the HANG of every worker in a round that nobody answered yet."""
        return max(SILENCE_MIN, SILENCE_FACTOR * self.f_time)

    def replied(self, rank, seq, now, beyond=None):
        """A reply of ``rank`` to round ``seq`` came at ``now``; ``beyond``: how long a result
        took beyond its injected delay (None: no result, e.g. a STOPped task)."""
        self.last_reply[rank] = now
        self.answered.add(seq)
        if beyond is not None:
            self.beyond[rank, self.results[rank] % HISTORY] = beyond
            self.results[rank] += 1

    def look(self, rounds, now, cpu=None):
        """The ranks newly past the due time of the oldest reply they owe in ``rounds``, looked
        for every LOOK_EVERY s ([] in between); ``cpu``: rank 0's CPU time now (default
        time.process_time())."""
        cpu = time.process_time() if cpu is None else cpu
        if self.looked is not None and now - self.looked > JUMP and \
                cpu - self.cpu < (now - self.looked) / 2:
            # rank 0 itself did not run (the whole job suspended - SLURM's suspend, gang
            # scheduling, a stopped terminal - or rank 0 not given a core): the clock jumped
            # for every worker too, and the replies they owe are judged from now. Rank 0 busy
            # (its CPU time went on) is no such gap: what came meanwhile is taken before this
            self.resumed = now
        self.looked, self.cpu = now, cpu
        if now < self.next_look:
            return []
        self.next_look = now + LOOK_EVERY
        rounds = sorted(rounds, key=lambda r: r.seq)
        self.answered &= {r.seq for r in rounds}
        hang, silence, late, seen = self.hang_after(), self.silence(), [], set()
        for r in rounds:
            for w in r.pending - seen:  # a worker's later tasks are due after its oldest
                seen.add(w)
                start = max(r.t_sent, self.last_reply[w + 1])
                grace = hang[w + 1] if r.seq in self.answered else silence
                if w in r.stopped:
                    due = max(start, r.decided) + grace
                else:
                    due = start + float(r.rec["delay"][w]) + grace
                due = max(due, self.resumed + grace)
                if now > due:
                    late.append(w + 1)
                    self.waited[w + 1] = grace
        return sorted(late)

    def park(self, rank, where, slots, slot, w, stop, seq, trial):
        """Take worker ``w``'s (rank ``rank``) requests of round ``seq`` (of ``trial``) in
        ``slot`` out of ``slots``; the first park of a rank makes it hung, from ``where`` =
        (point, trial)."""
        self.hung.setdefault(rank, where)
        i = slot * slots.n + w
        null = self.MPI.REQUEST_NULL
        recv, task = slots.recvs[i], slots.sends[i]
        slots.recvs[i] = slots.sends[i] = null
        self.parked.append(Parked(rank, slots, i, recv, task, stop, seq, trial))

    def poll(self, late, current):
        """Take the parked replies that came (``late(rank, seq, trial, status)`` discards each)
        and return the ranks whose every parked request completed: they answer again, and
        their requests go back to their slots if those are ``current`` (else are freed)."""
        if not self.parked:
            return []
        waiting = [p for p in self.parked if not p.came]
        for k in self.waiter.test([p.recv for p in waiting]) or ():
            p = waiting[k]
            p.came = True
            slot, w = divmod(p.index, p.slots.n)
            late(p.rank, p.seq, p.trial, P.check_reply(p.slots.reply[slot, w], p.seq, p.trial,
                                                       p.rank))
        back = sorted(rank for rank in {p.rank for p in self.parked}
                      if all(p.came and self.MPI.Request.Testall([p.task, p.stop or
                                                                  self.MPI.REQUEST_NULL])
                             for p in self.parked if p.rank == rank))
        for rank in back:
            for p in [p for p in self.parked if p.rank == rank]:
                if p.slots is current:
                    p.slots.recvs[p.index], p.slots.sends[p.index] = p.recv, p.task
                else:  # its point is over
                    p.recv.Free()
                    p.task.Free()
                self.parked.remove(p)
            del self.hung[rank]
        return back

    def forget(self, rank):
        """``rank`` died: its parked requests are cancelled (returned: sends to the dead may
        never complete, so they are kept, never freed) and it is no longer hung."""
        orphans = []
        for p in [p for p in self.parked if p.rank == rank]:
            for request in p.requests():
                try:
                    request.Cancel()
                except self.MPI.Exception:
                    pass
                orphans.append(request)
            self.parked.remove(p)
        self.hung.pop(rank, None)
        return orphans

    def excluded(self, rank):
        """Why ``rank`` gets no task now (it is hung), or None."""
        if rank not in self.hung:
            return None
        point, trial = self.hung[rank]
        return f"rank {rank} has not answered since trial {trial} of point {point}"

    # -- the end ----------------------------------------------------------------------------
    def settle(self, deaths, late, current, ft):
        """At the end, before any EXIT: every hung worker is resumed and given RESUME_GRACE s
        to answer what it owes (``resume_or_end``). Returns the requests of the ones killed,
        to keep."""
        if not self.hung:
            return []
        self.poll(late, current)
        stuck = self.resume_or_end(deaths, set(self.hung), ft,
                                   lambda: (self.poll(late, current), set(self.hung))[1])
        return [request for rank in stuck for request in self.forget(rank)]

    def resume_or_end(self, deaths, ranks, ft, silent, grace=RESUME_GRACE):
        """``ranks`` do not answer: each is resumed (SIGCONT: a stopped process cannot take
        its EXIT) until ``silent()`` (the ranks still silent) no longer names it, for ``grace``
        seconds at most. One that still does not answer is ended: under ULFM killed (SIGKILL)
        and dead from then on (``Deaths.expect``: not lost; no EXIT, no MPI_Finalize anywhere),
        the ranks returned; otherwise ``Stuck``, for MPI_Abort, which ends every process of the
        job, stopped ones too, with the code it is given (a killed rank would make MPICH's
        mpiexec return 9)."""
        if not ranks:
            return set()
        self.signal(deaths, ranks, signal.SIGCONT)
        until = time.perf_counter() + grace
        backoff = Backoff(SLEEP_MIN, SLEEP_IDLE)
        while (left := silent() & ranks) and time.perf_counter() < until:
            backoff.sleep()
        if not left:
            return set()
        said = f"{named(left, self.peers)} did not answer within {grace:g} s of being resumed " \
               "(SIGCONT)"
        if not ft:
            raise Stuck(said)
        log.info("%s; ending it (SIGKILL)", said)
        for rank in left:
            deaths.expect(rank)
        self.signal(deaths, left, signal.SIGKILL)
        return left

    def pass_on(self, ranks, signum):
        """A stop that reached rank 0 alone (SIGTERM to it, job.time_limit) to the workers of
        its node still busy with a round (``ranks``): one inside a long f drops it
        (``Worker.evaluate``) instead of holding the drain up for the rest of the call or
        being taken for hung. A worker on another node finishes its call (its node mates may
        be inside f too: no CTRL SIGNAL through them)."""
        for rank in sorted(ranks):
            pid, host = self.peers.get(rank, (None, None))
            if pid and host == self.host:
                try:
                    os.kill(pid, signum)
                except ProcessLookupError:
                    pass

    def signal(self, deaths, ranks, signum):
        """Send ``signum`` to the processes of ``ranks``: rank 0 to those of its node, a live
        worker of their node (CTRL SIGNAL) to the others."""
        rows, sends = [], []
        for rank in sorted(ranks):
            pid, host = self.peers[rank]
            if host == self.host:
                try:
                    os.kill(pid, signum)
                except ProcessLookupError:
                    pass
                continue
            mates = [r for r, (_, h) in sorted(self.peers.items()) if h == host
                     and r not in self.hung and r not in deaths.dead and r not in ranks]
            if not mates:
                raise WorkerLost(f"rank {rank} on {host} does not answer and no live rank of "
                                 f"{host} can end it")
            rows.append(P.fill_control(np.zeros(P.HEADER), P.SIGNAL, pid, int(signum)))
            sends.append(self.comm.Isend(rows[-1], dest=mates[0], tag=P.CTRL))
        if not self.waiter.all(sends, time.perf_counter() + RESUME_GRACE):
            raise WorkerLost("a signal for a hung worker could not be sent to its node")
