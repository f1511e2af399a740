"""Rank 0's Master: run every trial over the workers, round by round (run.py loads the job first).

One round = one scheme of one trial: encode (same code object as the simulator), start the
persistent receive and TASK send of each active worker in a free slot (``protocol.Slots``),
then take the completions in the order Testsome reports them, stamping each with its arrival
time, until ``WaitPolicy.done`` (or the deadline) — exactly the received sets the simulator builds
from the arrival order. A FAILED reply (f raised, NaN/inf, wrong shape) is an erasure: recorded
with its reason, not counted, and the master keeps waiting. Once a round is decided, every
worker still busy with it gets a STOP, the round is decoded and scored (``decode_and_score``),
and its slot is freed when every reply came (late results, erasures and CANCELLED notices are
received and discarded), so no request is pending when the run ends.

``decode.pipeline`` = D rounds may be in flight at once (D = 1: each round is scattered,
decided, stopped and drained before the next starts). Rounds start in order as slots free up,
so every worker holds TASKs of up to D rounds and does them in order; a straggler delays only
its own later tasks, and only until the round it straggles in is decided (its STOP cuts the
delay short; a STOP for a task it has not started makes it skip that task). Replies carry
their (round, trial) and land in their own round's slot (MPI orders each worker's replies as
their receives were started); a reply to a decided round is never used. Rounds finish out of
order; a trial's records are written together once all its schemes are decided, in trial
order, and the file is committed after every trial (see ``results``). A sweep point's rounds
all finish before the next point starts (its shapes differ). ``decode.wait = "deadline"``
counts from the round's own scatter, so time its tasks wait in a worker's queue counts against
it, as in a serving system.

Stopping (SIGTERM, SIGINT, job.time_limit): the waits raise ``Stop``; the rounds in flight are
abandoned — their workers STOPped (queued tasks skipped) and drained — the file closed with
complete = false (every trial committed before is kept) and every rank sent EXIT, each step
bounded by GRACE seconds, after which MPI_Abort ends the job.

A dead worker is a permanent straggler from then on — never sent a task again, error code 4
(LOST) in the file, named on stderr and in the file's ``lost`` attribute with the trial it
died in — and the job completes, when the MPI lets the other ranks go on: under ULFM (Open MPI
``mpiexec --with-ft ulfm``, any rank on any node) and under MPICH ``mpiexec
-disable-auto-cleanup`` (a rank of rank 0's node that exits without a signal). Which ranks died
is ``deaths``' to say, whichever way it heard first; ``_bury`` then cancels every request of
the rounds in flight to them (a round still waiting records them LOST) and takes the replies of
the others that the failed wait completed. A scheme that can no longer decode (an exact one
short of results) records its trials as failed with the reason; the others go on. Otherwise the
launcher kills every rank at once (the file keeps every trial committed before).

A worker that stops answering (stopped, stuck) is a straggler the rounds stop waiting for
(``hung``, ``_silence``): error code 5 (HUNG) while it is silent, the file's ``hung``
attribute; back in the rounds when it answers again; resumed or ended before the EXITs.
"""

import sys
import time

import numpy as np

from ..erasures import HUNG, LOST, summary
from ..records import latency
from . import protocol as P
from .deaths import Deaths, WorkerLost
from .hung import Hung
from .mpi import RankFailure
from .notices import Notices

GRACE = 10.0         # seconds for each step of a stop (drain the round, deliver EXIT)
BLOCK = 256          # trials of records held by the master before they go to the writer

__all__ = ["GRACE", "Master", "Round", "WorkerLost"]


class Round:
    """One scheme of one trial in flight, in slot ``slot`` of the point's ``Slots``.

    ``workers``: the active workers it sent a TASK (worker w = rank w + 1); ``pending``: those
    whose reply has not come; ``got``: the workers whose results it uses, in arrival order.
    ``t_stop`` is set when it stops waiting (its WaitPolicy is satisfied, its deadline passed or
    every reply came); ``stopped`` (the workers sent a STOP) once it was decided."""

    __slots__ = ("seq", "trial", "name", "code", "rule", "rec", "Y_true", "slot", "workers",
                 "pending", "sends", "stops", "stopped", "mask", "got", "texts", "erased",
                 "t_start", "t_sent", "t_stop", "until", "drain", "decided")

    def __init__(self, seq, trial, name, code, rule, rec, Y_true, slot, workers, texts):
        self.seq, self.trial, self.name = seq, trial, name
        self.code, self.rule, self.rec, self.Y_true = code, rule, rec, Y_true
        self.slot, self.workers, self.texts = slot, workers, texts
        self.pending = set(workers.tolist())
        self.sends, self.stops, self.stopped = [], {}, ()
        self.mask = np.zeros(code.N, bool)
        self.got = []
        self.erased = 0          # FAILED replies received while waiting
        self.t_start = self.t_sent = self.t_stop = self.until = None
        self.drain = 0.0         # seconds spent stopping and draining it (not decoding)
        self.decided = None      # time.perf_counter() when its record was made


class Master:
    """The master's side of the protocol; ``run`` records every trial of the prepared points.

    Up to ``decode.pipeline`` rounds are in flight (``rounds``, by slot); with 1 each round is
    scattered, decided, stopped and drained before the next starts.

    ``stop``: a StopFlag (SIGTERM, SIGINT, job.time_limit); ``notice``: counts hydra's dead-
    process notices; ``peers``: {rank: (pid, host)} from HELLO; ``host``: this rank's host;
    ``ft``: ULFM is on (dead ranks are found by asking MPI); ``deaths``: the run's ``Deaths``
    when the start-up made it (it buries ranks dead before the first trial)."""

    def __init__(self, comm, MPI, waiter, stop=None, notice=None, peers=None, host=None,
                 ft=False, deaths=None):
        self.comm, self.MPI, self.waiter = comm, MPI, waiter
        self.stop, self.ft = stop, ft
        peers = peers or {}
        self.peers = peers      # {rank: (pid, host)}, shared with deaths and hung
        self.deaths = deaths or Deaths(comm, MPI, peers, host, ft, notice)
        self.hung = Hung(comm, MPI, waiter, peers, host, comm.size)
        self.notices = Notices(comm, MPI, stop, self.deaths)  # heard while ``listen``ing
        self.writer = None      # the results file (``run``): its ``lost`` and ``hung``
        self.orphans = []       # requests to dead ranks that could not be completed
        self.errors = {}        # (rank, seq) -> ERROR message received ahead of its reply
        self.slots = None       # the current point's buffers and persistent requests
        self.rounds = {}        # slot -> Round in flight
        self.limit = None       # perf_counter() bound on every wait while abandoning
        self.where = (0, 0)     # (point, trial) last started, for messages
        self.depth, self.classifier = 1, False
        waiter.check = self._check
        self.seq = 0
        self.t0 = time.perf_counter()  # t_start and t_end of every round count from here
        self.stats = dict(rounds=0, tasks=0, used=0, unused=0, stopped=0, cancelled=0,
                          crossed=0, failed=0, lost=0, hung=0, drain=0.0)

    def _check(self):
        self.deaths.check()
        if self.stop is not None:
            self.stop.check()

    def listen(self):
        """Listen to the workers' NOTICEs on every turn of every wait (``notices``)."""
        self.notices.listen()
        self.waiter.control = self.notices

    def _unlisten(self):
        self.waiter.control = None
        self.notices.close()

    # -- the run --------------------------------------------------------------------------
    def run(self, prepared, writer, progress):
        self.writer = writer
        for k, (point, setup) in enumerate(prepared):
            writer.add_point(point.index, point.params)
            names = list(setup.codes)
            first = writer.align(point.index, names)
            progress.start_point(k)
            progress.skip(first)
            self.open(setup, point.index, point.config.decode.pipeline)
            self._run_point(setup, point.index, names, range(first, point.config.job.trials),
                            writer, progress)
        self.close()
        progress.close()
        self.writer = None  # closed by the caller next: what the shutdown finds is only said

    def _run_point(self, setup, point, names, trials, writer, progress):
        """Every round of ``trials``, up to ``self.depth`` in flight. Once all its schemes are
        decided, a trial's records go into the master's block of Records, in trial order, and
        the block goes to the writer when a commit is due, when it is full and when the point
        ends or stops (every finished trial is kept): a trial costs the master no HDF5 call."""
        from ..records import Records

        records = {}  # trial -> {scheme: record}, until the trial is complete
        block = {}    # scheme -> Records of the next trials to write
        filled = 0    # trials of the block filled

        def hand_over():
            nonlocal filled
            if filled:
                for name in names:  # a trial is written whole, or not at all
                    writer.append(point, name, block[name].rows(filled))
            block.clear()
            filled = 0

        def collect(retired):
            nonlocal filled
            for r in retired:
                records[r.trial][r.name] = r.rec
            while records:
                t = min(records)
                if len(records[t]) < len(names):
                    return
                done = records.pop(t)
                if not block:
                    span = range(t, min(t + BLOCK, trials.stop))
                    block.update((name, Records(setup.codes[name].N, span)) for name in names)
                for name in names:
                    block[name].put(filled, done[name])
                filled += 1
                progress.trial_done()
                if filled == len(block[names[0]]) or writer.due():
                    hand_over()
                    writer.flush()

        try:
            self._rounds(setup, point, names, trials, records, collect)
        finally:
            hand_over()

    def _rounds(self, setup, point, names, trials, records, collect):
        """Start the rounds of ``trials`` in order as slots free up, and finish them. A scheme
        that runs no round (f failed on the inputs) gets its record in ``records`` at once;
        ``collect`` takes the rounds that retire."""
        from ..trial import failed_record

        for t in trials:
            self.where = (point, t)
            try:
                self._check()
            except RankFailure as e:  # a rank died between rounds
                self._bury(e)
            X, delays = setup.draw(point, t, inject=True)
            t0 = time.perf_counter()
            Y_true, why = setup.reference(X)
            self.hung.timed(time.perf_counter() - t0)  # bounds a round nobody answers (hung)
            records[t] = {}
            for name in names:
                if Y_true is None:  # f failed on the inputs: no round at all
                    records[t][name] = failed_record(setup.codes[name], delays, why)
                    continue
                while len(self.rounds) >= self.depth:
                    collect(self.advance())
                self.start(setup, name, point, t, X, Y_true, delays)
            collect(())
        while self.rounds:
            collect(self.advance())

    def open(self, setup, point, depth):
        """Buffers and persistent requests for ``depth`` rounds of a point's shape."""
        n = max(code.N for code in setup.codes.values())
        shape = (depth, n, setup.dataset.dim, setup.target.output_dim)
        self.depth, self.classifier = depth, setup.target.classifier
        if self.slots is None or not self.slots.fits(*shape):
            self.close()
            self.slots = P.Slots(self.comm, *shape, point)
        else:
            self.slots.task[:, :, P.POINT] = point

    def close(self):
        """Free the persistent requests (none is active once every round retired)."""
        if self.slots is not None:
            self.slots.release(keep=self.orphans)
            self.slots = None

    def round(self, setup, name, point, trial, X, Y_true, delays):
        """One scheme's record for one trial, computed by the workers with nothing else in
        flight (after ``open``)."""
        r = self.start(setup, name, point, trial, X, Y_true, delays)
        while self.rounds.get(r.slot) is r:
            self.advance()
        return r.rec

    def start(self, setup, name, point, trial, X, Y_true, delays):
        """Encode one scheme's inputs of a trial and scatter them in a free slot."""
        from ..trial import encode_record

        code = setup.codes[name]
        rec, X_coded = encode_record(code, X, delays)
        workers, texts = code.active, [""] * code.N
        dead, hung = self.deaths.dead, self.hung
        if dead or hung.hung:  # the dead and the silent: no task, no reply
            alive = np.ones(len(workers), bool)
            for i, w in enumerate(workers.tolist()):
                if w + 1 in dead:
                    rec["error"][w], texts[w] = LOST, f"rank {w + 1} died earlier"
                elif hung.excluded(w + 1):
                    rec["error"][w], texts[w] = HUNG, hung.excluded(w + 1)
                else:
                    continue
                alive[i] = False
            workers, X_coded = workers[alive], X_coded[alive]
        slots = self.slots
        slot = slots.free.pop()
        self.seq += 1
        r = Round(self.seq, trial, name, code, setup.policies[name], rec, Y_true, slot, workers,
                  texts)
        task = slots.task[slot]
        P.fill_tasks(task, workers, self.seq, trial, delays[workers], X_coded)
        recvs, r.sends = slots.requests(slot, workers)
        Startall = self.MPI.Prequest.Startall

        r.t_start = time.perf_counter()
        task[workers, P.SENT] = time.monotonic()
        Startall(recvs)  # before any later round's: replies land in their own round's slot
        Startall(r.sends)
        r.t_sent = time.perf_counter()
        if r.rule.deadline is not None:
            r.until = r.t_start + r.rule.deadline
        self.rounds[slot] = r
        self.stats["tasks"] += len(workers)
        return r

    def advance(self):
        """Wait once for replies (or the next deadline) and act on what came: use or discard
        each reply, decide the rounds that stop waiting, retire the rounds whose every reply
        came. Returns the retired rounds."""
        # never longer than to the next look for silent workers (hung)
        until = min([r.until for r in self.rounds.values() if r.t_stop is None and r.until]
                    + [self.hung.next_look] + ([self.limit] if self.limit is not None else []))
        try:
            done = self.waiter.some(self.slots.recvs, until)
        except RankFailure as e:
            done = self._after_failure(e)
        now = time.perf_counter()
        if done:
            n, rounds = self.slots.n, self.rounds
            for i in done:  # in the order MPI reports them, as the simulator's arrival order
                slot, w = divmod(i, n)
                self._take(rounds[slot], w, now)
        for rank in self.hung.look(self.rounds.values(), now):
            self._silence(rank)
        for rank in self.hung.poll(self._discard, self.slots):
            print(f"gcc_mpi: rank {rank} answers again (its late replies were discarded); it "
                  "gets tasks again", file=sys.stderr, flush=True)
        retired = []
        for r in sorted(self.rounds.values(), key=lambda r: r.seq):
            if r.t_stop is None and (not r.pending or (r.until is not None and now > r.until)):
                r.t_stop = now  # every reply came, or the deadline passed
            if r.t_stop is not None and r.decided is None:
                self._decide(r)
            if r.decided is not None and not r.pending:
                retired.append(self._retire(r))
        if self.rounds and self.limit is not None and time.perf_counter() > self.limit:
            raise WorkerLost("the rounds in flight could not be drained in time")
        return retired

    def _take(self, r, w, now):
        """Worker w's reply to round r, received at ``now``."""
        r.pending.discard(w)
        status = P.check_reply(self.slots.reply[r.slot, w], r.seq, r.trial, w + 1)
        self.hung.replied(w + 1, r.seq, now, now - r.t_sent - r.rec["delay"][w]
                          if status == P.DONE else None)
        if r.t_stop is None and r.until is not None and now > r.until:
            r.t_stop = now  # came after the deadline: not used
        if r.t_stop is not None:  # decided already: a late result, discarded
            self._late(r, w, status)
            return
        if status == P.FAILED:
            r.rec["error"][w], r.texts[w] = self._error(w + 1, r.seq, r.trial)
            r.erased += 1
            return
        if status != P.DONE:
            raise P.ProtocolError(f"rank {w + 1} cancelled round {r.seq} without a STOP")
        r.mask[w] = True
        r.got.append(w)
        r.rec["arrival"][w] = now - r.t_start
        if r.rule.done(r.mask, len(r.got)):
            r.t_stop = now

    def _late(self, r, w, status):
        s = self.stats
        if status == P.FAILED:
            self._error(w + 1, r.seq, r.trial)  # received and discarded
        if w not in r.stopped:
            s["unused"] += 1       # came before its STOP was due
        elif status == P.CANCELLED:
            s["cancelled"] += 1
        else:
            s["crossed"] += 1      # crossed the STOP on the wire (or f could not be stopped)

    def _decide(self, r, decode=True):
        """Round r stops waiting: STOP its workers still busy (a queued TASK is then skipped),
        then decode and score what came (unless ``decode`` is false: a stop of the run)."""
        from ..trial import decode_and_score

        t0 = time.perf_counter()
        stop_rows, seq, trial = self.slots.stop[r.slot], r.seq, r.trial
        fill = P.fill_control
        for w in r.pending:
            r.stops[w] = self._isend(fill(stop_rows[w], P.STOP, seq, trial), w + 1)
        r.stopped = set(r.pending)
        t1 = time.perf_counter()
        r.drain = t1 - t0
        if decode:
            rec, received = r.rec, np.array(r.got, dtype=np.int64)
            rec.update(decode_and_score(r.code, received, self.slots.outputs(r.slot, received),
                                        r.Y_true, self.classifier, rec))
            rec["used"][received] = True
            rec["error_text"] = summary(rec["error"], r.texts)
            rec["t_scatter"] = r.t_sent - r.t_start
            rec["t_wait"] = r.t_stop - r.t_sent
            rec["latency"] = latency(rec["t_encode"], r.t_stop - r.t_start, rec["t_decode"])
            rec["t_start"], rec["t_end"] = r.t_start - self.t0, time.perf_counter() - self.t0
            self.stats["used"] += len(r.got)
            self.stats["stopped"] += len(r.stopped)
        r.decided = time.perf_counter()

    def _retire(self, r):
        """Round r got every reply: complete its sends and free its slot."""
        until = self.limit or time.perf_counter() + GRACE
        while True:
            try:
                if not self.waiter.all(r.sends + list(r.stops.values()), until):
                    raise WorkerLost("the sends of a round could not be completed in time")
                break
            except RankFailure as e:
                self._bury(e)
        del self.rounds[r.slot]
        self.slots.free.append(r.slot)
        s = self.stats
        s["rounds"] += 1
        s["drain"] += r.drain + time.perf_counter() - r.decided
        return r

    def _error(self, rank, seq, trial):
        """(code, text) of the ERROR message that came with rank's FAILED reply to round
        ``seq`` (the worker sent it just before; messages of other rounds that come first, in
        a pipeline, are kept for their own replies)."""
        self.stats["failed"] += 1
        key = (rank, seq)
        until = self.limit or time.perf_counter() + GRACE
        while key not in self.errors:
            if rank in self.deaths.dead:
                return LOST, f"rank {rank} died"
            try:
                message = self.waiter.recv_object(self.comm, rank, P.ERROR, until)
            except RankFailure as e:
                self._bury(e)
                continue
            if message is None:
                raise WorkerLost(f"rank {rank}'s error message for round {seq} did not come")
            self.errors[(rank, message[0] if isinstance(message, tuple) and message else None)] \
                = message
        return P.check_error(self.errors.pop(key), seq, trial, rank)

    def _bury(self, failure=None):
        """After a process-failure error (ULFM), hydra's notice or an ended pid (``failure``,
        or None): the ranks newly dead (``Deaths.news``), each recorded once with the trial it
        died in, its requests in the rounds in flight cancelled (a round still waiting records
        it LOST). WorkerLost when a death cannot be named (hydra's notice of a rank on another
        node) or the job was ended elsewhere."""
        found = self.deaths.news(failure)
        point, trial = self.where
        for rank in sorted(found):
            # the oldest round in flight that waited for it, else the trial last started
            t = min((r.trial for r in self.rounds.values() if rank - 1 in r.pending),
                    default=trial)
            self.deaths.bury(rank, point, t, self.writer)
            self.orphans += self.hung.forget(rank)
            self.notices.forget(rank)
        self.stats["lost"] += len(found)
        for r in self.rounds.values():
            for k, w in enumerate(r.workers.tolist()):
                if w + 1 in found:
                    self._forget(r, k, w)
        return found

    def _silence(self, rank):
        """``rank`` owes a reply past its due time (``hung``): the rounds in flight stop
        waiting for it — one still waiting records it HUNG and sends it a STOP (so that it
        skips that task if it comes back) — and its requests in their slots are parked; it
        gets no task until they complete. Said on stderr and in the file's ``hung``."""
        w, (point, trial) = rank - 1, self.where
        t = min((r.trial for r in self.rounds.values() if w in r.pending), default=trial)
        for r in sorted(self.rounds.values(), key=lambda r: r.seq):
            if w not in r.pending:
                continue
            if r.decided is None:
                r.rec["error"][w], r.texts[w] = HUNG, f"rank {rank} did not answer"
                stop = self._isend(P.fill_control(self.slots.stop[r.slot, w], P.STOP, r.seq,
                                                  r.trial), rank)
            else:
                stop = r.stops.pop(w, None)
            r.sends[int(np.flatnonzero(r.workers == w)[0])] = self.MPI.REQUEST_NULL
            r.pending.discard(w)
            self.hung.park(rank, (point, t), self.slots, r.slot, w, stop, r.seq, r.trial)
        self.stats["hung"] += 1
        pid, host = self.deaths.peers.get(rank, (None, None))
        if self.writer is not None:
            self.writer.add_hung(rank, point, t, host)
        print(f"gcc_mpi: rank {rank} (worker {w}, pid {pid} on {host}) has not answered for "
              f"{self.hung.waited.get(rank, 0.0):.1f} s, in trial {t} of point {point}; a straggler "
              f"that the rounds no longer wait for (error code {HUNG} in the file) until it "
              "answers", file=sys.stderr, flush=True)

    def _discard(self, rank, seq, trial, status):
        """A parked reply (``hung``) came: never used; a FAILED one's ERROR message too."""
        if status == P.FAILED:
            self._error(rank, seq, trial)
        self.stats["unused"] += 1

    def _after_failure(self, failure):
        """A wait ended because a rank died: bury it, then return the replies of the live
        workers that the failed wait completed (MPI deactivated their requests without
        telling which: a completed persistent request tests true), oldest round first."""
        n, recvs, done = self.slots.n, self.slots.recvs, []
        while True:
            self._bury(failure)
            failure = None
            again = False
            for r in sorted(self.rounds.values(), key=lambda r: r.seq):
                for w in sorted(r.pending):
                    i = r.slot * n + w
                    if i in done:
                        continue
                    try:
                        if recvs[i].Test():
                            done.append(i)
                    except self.MPI.Exception as e:
                        again = True  # one more rank died: bury it too
                        failure = self.failure(e)
            try:
                self.notices.poll()
            except self.MPI.Exception as e:
                again = True
                failure = self.failure(e)
            if not again:
                return done

    def _forget(self, r, k, w):
        """Cancel round r's requests to dead worker w (its k-th)."""
        if w in r.pending:
            recv = self.slots.recvs[r.slot * self.slots.n + w]
            self._cancel(recv)
            try:
                recv.Wait()  # a cancelled receive completes at once
            except self.MPI.Exception:  # ULFM: it completed with the process-failure error
                pass
            r.pending.discard(w)
            if r.t_stop is None:
                r.rec["error"][w], r.texts[w] = LOST, f"rank {w + 1} died"
        for request in (r.sends[k], r.stops.pop(w, None)):
            if request:
                self._cancel(request)
                self.orphans.append(request)  # a send to the dead may never complete
        r.sends[k] = self.MPI.REQUEST_NULL

    def failure(self, e):
        """The RankFailure that MPI error ``e`` stands for (the waiter's reading of it)."""
        try:
            self.waiter.raise_failure(e)
        except RankFailure as failure:
            return failure

    def _isend(self, row, rank):
        """Isend of a control row; REQUEST_NULL when MPI already knows the rank is dead
        (ULFM: its pending receive reports the failure)."""
        try:
            return self.comm.Isend(row, dest=rank, tag=P.CTRL)
        except self.MPI.Exception as e:
            if e.Get_error_class() not in self.waiter.failures:
                raise
            return self.MPI.REQUEST_NULL

    def _cancel(self, request):
        try:
            request.Cancel()
        except self.MPI.Exception:
            pass

    # -- the end ----------------------------------------------------------------------------
    def abandon(self, grace=GRACE):
        """After a Stop: STOP the workers of every round in flight (a queued TASK is skipped)
        and receive their replies (each answers within a polling interval unless f is still
        running); no record is made. True when every round was drained within ``grace``
        seconds; the persistent requests are then freed."""
        self.writer = None  # closed by the stop: what the drain finds is said, not recorded
        self.limit = time.perf_counter() + grace
        try:
            for r in self.rounds.values():
                if r.decided is None:
                    r.t_stop = r.t_stop or time.perf_counter()
                    self._decide(r, decode=False)
            while self.rounds:
                self.advance()
        except WorkerLost:
            return False
        finally:
            self.limit = None
        self.close()
        return True

    def shutdown(self, grace=GRACE):
        """EXIT to every other live rank (idle ones too), then every one's BYE, which its
        ``Worker.serve`` sends on EXIT, then LEAVE; True when all EXITs were delivered and all
        BYEs came (within ``grace`` seconds): then no NOTICE is left unreceived at MPI_Finalize
        (protocol). The control receive is cancelled at the end. Until their LEAVE the workers
        stay, so that one of each node can still resume or end a silent one there.

        A master that never called ``listen`` listens now, for its shutdown: a worker cannot
        tell whether its master listened, so every worker says BYE, and a BYE left unreceived
        is the very failure the BYE is there to prevent (MPICH's rank 0 fails in MPI_Finalize
        and skips the barrier in which the workers then wait for ever). So every master and
        worker end alike, whoever drives them (run, probe, the benchmarks). Under ULFM, where
        nobody calls MPI_Finalize, the BYEs say that every worker is free to leave: the
        launcher waits for every process, a stopped one too.

        First every hung worker is resumed or ended (``Hung.settle``: ``Stuck`` when only
        MPI_Abort can); after any death the EXIT tells the workers to leave without
        MPI_Finalize, which would wait for the dead."""
        self.listen()  # a no-op when it listens already
        self.orphans += self.hung.settle(self.deaths, self._discard, self.slots, self.ft)
        rows = np.zeros((self.comm.size - 1, P.HEADER))
        dead = self.deaths.dead
        ranks = [r for r in range(1, self.comm.size) if r not in dead]
        self.deaths.left, self.deaths.leaving = set(), set(ranks)  # their end is no death now
        self.notices.byes = set()  # a BYE answers this EXIT (benchmarks: one master per block)
        sends = [self._isend(P.fill_control(rows[r - 1], P.EXIT, 1 if dead else 0), r)
                 for r in ranks]
        until = time.perf_counter() + grace
        try:
            while time.perf_counter() < until + grace:  # a death, then the rest: bounded too
                try:
                    if not self.waiter.all(sends, until):
                        return False
                    if not (self.notices.farewells(ranks, until, self.waiter)
                            or self._silent_at_the_end(ranks)):
                        return False
                    leaves = [self._isend(P.fill_control(rows[r - 1], P.LEAVE), r)
                              for r in ranks if r not in self.deaths.dead]
                    return self.waiter.all(leaves, time.perf_counter() + grace)
                except RankFailure as e:  # one more died: forget its EXIT
                    buried = self._bury(e)
                    for i, rank in enumerate(ranks):
                        if rank in buried and sends[i]:
                            self._cancel(sends[i])
                            self.orphans.append(sends[i])
                            sends[i] = self.MPI.REQUEST_NULL
            return False
        finally:
            self._unlisten()
            self.deaths.leaving = set()

    def _silent_at_the_end(self, ranks):
        """Live ranks whose BYE did not come (stopped after their last task, stuck): resumed,
        their BYE awaited again, then ended (``Hung.resume_or_end``: True under ULFM)."""
        notices = self.notices

        def silent():
            notices.poll()
            return set(ranks) - self.deaths.dead - self.deaths.left - notices.byes

        self.hung.resume_or_end(self.deaths, silent(), self.ft, silent)
        return True

    def describe(self):
        s = self.stats
        late = s["unused"] + s["crossed"]
        pipeline = f", pipeline {self.depth}" if self.depth > 1 else ""
        text = (f"gcc_mpi: {s['rounds']} rounds, {s['tasks']} tasks on {self.comm.size - 1} "
                f"worker ranks ({self.waiter.mode} waiting{pipeline}): {s['used']} results used, "
                f"{late} late results discarded ({s['crossed']} crossed a STOP), "
                f"{s['cancelled']} tasks cancelled while sleeping or queued; "
                f"{1e3 * s['drain'] / max(s['rounds'], 1):.2f} ms per round to stop and drain")
        if s["failed"]:
            text += f"; {s['failed']} erasures (f failed on a worker)"
        dead = self.deaths.dead - self.deaths.expected
        if dead:
            text += f"; ranks {', '.join(map(str, sorted(dead)))} died"
        if s["hung"]:
            text += f"; {s['hung']} times a rank stopped answering"
        return text
