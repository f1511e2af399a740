"""Rank 0's round engine: one round = one scheme of one trial, scattered to the workers,
gathered, decided and decoded.

A round encodes (the same code object as the simulator), starts the persistent receive and
TASK send of each active worker in a free slot (``protocol.Slots``), then takes the completions
in the order Testsome reports them, stamping each with its arrival time, until its
``WaitPolicy.done`` (or the deadline): exactly the received sets the simulator builds from the
arrival order. A FAILED reply (f raised, NaN/inf, wrong shape) is an erasure: recorded with its
reason, not counted. Once a round is decided, every worker still busy with it gets a STOP, the
round is decoded and scored (``trial.decode_and_score``), and its slot is freed when every reply
came (late results, erasures and CANCELLED replies are received and discarded).

Up to ``depth`` rounds (``decode.pipeline``) are in flight, each in its own slot; a worker does
its TASKs in order, so a straggler delays only its own later tasks, and only until the round it
straggles in is decided (the STOP cuts its delay short, or makes it skip a task not started).
Replies carry their (round, trial) and land in their own round's slot (MPI orders each worker's
replies as their receives were started); a reply to a decided round is never used. A deadline
counts from the round's own scatter, so time a task waits in a worker's queue counts against it.

The Master is the job driver's MPI engine (``core.driver.Engine``): ``run_point`` starts a
point's rounds in trial order as slots free up and hands the driver each trial's records once
all its schemes are decided, in trial order (a point's rounds all finish before the next point
starts: its shapes differ). The other rooms of rank 0: the workers it loses, dead or silent
(``lost``, with ``deaths`` and ``hung``), the workers' NOTICEs (``notices``), and the end of the
rounds (``ending``).
"""

import contextlib
import signal
import time

import numpy as np

from ..core.erasures import HUNG, LOST, summary
from ..core.interrupts import Interrupted
from ..core.resources import MASTER_BLOCK
from ..job.records import latency
from . import protocol as P
from .deaths import Deaths, WorkerLost
from .hung import Hung
from .in_order import InOrder
from .lost import Losses
from .mpi import RankFailure
from .notices import Notices

GRACE = 10.0         # seconds for each step of an ending (drain the rounds, deliver EXIT)


class Round:
    """One scheme of one trial in flight, in slot ``slot`` of the point's ``Slots``.

    ``workers``: the active workers it sent a TASK (worker w = rank w + 1); ``pending``: those
    whose reply has not come; ``got``: the workers whose results it uses, in arrival order.
    ``t_stop`` is set when it stops waiting (its WaitPolicy is satisfied, its deadline passed
    or every reply came); ``stopped`` (the workers sent a STOP) once it was decided."""

    __slots__ = ("seq", "trial", "name", "code", "policy", "rec", "Y_true", "slot", "workers",
                 "pending", "sends", "stops", "stopped", "mask", "got", "texts", "erased",
                 "t_start", "t_sent", "t_stop", "until", "drain", "decided")

    def __init__(self, seq, trial, name, code, policy, rec, Y_true, slot, workers, texts):
        self.seq, self.trial, self.name = seq, trial, name
        self.code, self.policy, self.rec, self.Y_true = code, policy, rec, Y_true
        self.slot, self.workers, self.texts = slot, workers, texts
        self.pending = set(workers.tolist())
        self.sends, self.stops, self.stopped = [], {}, ()
        self.mask = np.zeros(code.N, bool)
        self.got = []
        self.erased = 0          # FAILED replies received while waiting
        self.t_start = self.t_sent = self.t_stop = self.until = None
        self.drain = 0.0         # seconds spent stopping and draining it (not decoding)
        self.decided = None      # time.perf_counter() when its record was made


class Where:
    """The sweep point's ``index`` and the ``trial`` the rounds last started, for the messages
    about a lost worker."""

    __slots__ = ("index", "trial")

    def __init__(self):
        self.index = self.trial = 0

    def at(self, index, trial):
        self.index, self.trial = index, trial


class Master:
    """The master's side of the protocol: ``run_point`` (the job driver's engine), ``round``
    (one at a time) or ``start`` and ``advance`` (several in flight).

    ``stop``: the run's ``interrupts.InterruptFlag`` (SIGTERM, SIGINT, job.time_limit);
    ``notice``: counts hydra's dead-process notices; ``peers``: {rank: (pid, host)} from
    HELLO; ``host``: this rank's host; ``ft``: ULFM is on (dead ranks are found by asking
    MPI); ``events``: where a lost or hung worker is recorded (``lost(rank, point, trial)``,
    ``hung(rank, point, trial, host)``: the driver's ``JobRun``; None: only said)."""

    def __init__(self, comm, MPI, waiter, stop=None, notice=None, peers=None, host=None,
                 ft=False, events=None):
        self.comm, self.MPI, self.waiter = comm, MPI, waiter
        self.stop, self.ft = stop, ft
        peers = peers or {}
        self.peers = peers      # {rank: (pid, host)}, shared with deaths and hung
        self.deaths = Deaths(comm, MPI, peers, host, ft, notice)
        self.hung = Hung(comm, MPI, waiter, peers, host, comm.size)
        self.notices = Notices(comm, MPI, stop, self.deaths)  # heard while ``listen``ing
        self.orphans = []       # requests to dead ranks that could not be completed
        self.errors = {}        # (rank, seq) -> ERROR message received ahead of its reply
        self.unasked = []       # (rank, seq) of tasks cancelled without a STOP (``signalled``)
        self.slots = None       # the current point's buffers and persistent requests
        self.in_flight = {}     # slot -> Round in flight
        self.unstarted = None   # the record of the last start that started no round
        self.limit = None       # perf_counter() bound on every wait while abandoning
        self.where = Where()    # (point, trial) last started, for messages
        self.depth, self.classifier = 1, False
        waiter.watch(self.check)
        self.seq = 0
        self.t0 = time.perf_counter()  # t_start and t_end of every round count from here
        self.stats = dict(rounds=0, tasks=0, used=0, unused=0, stopped=0, cancelled=0,
                          crossed=0, failed=0, lost=0, hung=0, drain=0.0)
        self.losses = Losses(MPI, self, self.deaths, self.hung, self.notices, self.in_flight,
                             self.where, self.stats, self.orphans, events)

    def check(self):
        """What every wait looks at on every turn: deaths, then an interruption."""
        self.deaths.check()
        if self.stop is not None:
            self.stop.check()

    def abandoning(self):
        """Around rank 0's own work for a trial (reference f(X), encode, decode): a stop
        drops it at once (``InterruptFlag.abandoning``), not after a big trial's seconds of
        numpy. Not while draining after a stop (``limit``), nor without a flag (benchmarks)."""
        if self.stop is None or self.limit is not None:
            return contextlib.nullcontext()
        return self.stop.abandoning()

    def listen(self):
        """Listen to the workers' NOTICEs on every turn of every wait (``notices``)."""
        self.notices.listen()
        self.waiter.listen(self.notices)

    def unlisten(self):
        """Stop listening to the NOTICEs (every receive cancelled)."""
        self.waiter.listen(None)
        self.notices.close()

    def open(self, setup, index, depth):
        """Buffers and persistent requests for ``depth`` rounds of the shape of sweep point
        ``index`` (an index here; ``run_point``'s ``point`` is the point itself)."""
        n = max(code.N for code in setup.codes.values())
        shape = (depth, n, setup.dataset.dim, setup.target.output_dim)
        self.depth, self.classifier = depth, setup.target.classifier
        self.where.at(index, 0)
        if self.slots is None or not self.slots.fits(*shape):
            self.close()
            self.slots = P.Slots(self.comm, *shape, index)
        else:
            self.slots.task[:, :, P.POINT] = index
        self.losses.use(self.slots)

    def close(self):
        """Free the persistent requests (none is active once every round retired)."""
        if self.slots is not None:
            self.slots.release(keep=self.orphans)
            self.slots = None
            self.losses.use(None)

    def held(self, config, names):
        """Trials of records the driver holds before they go to the file (resources.py)."""
        return MASTER_BLOCK

    def run_point(self, point, setup, trials, out):
        """Start the rounds of ``trials`` of one point in order as slots free up, up to
        decode.pipeline in flight, and hand ``out`` each trial's records once all its schemes
        are decided, in trial order. A scheme that runs no round (f failed on the inputs, or a
        plug-in's encode failed) gets its record at once."""
        from ..core.trial import failed_record

        p = point.index
        self.open(setup, p, point.config.decode.pipeline)
        names = list(setup.codes)
        whole = InOrder(len(names), out)
        for t in trials:
            if self.depth == 1:
                # one round at a time: the last scheme's round ends before the next trial's
                # reference f(X) runs here, else that round's latency counts rank 0's f on K
                # rows (measured, digits-heavy: gcc-manifold's p50 242 ms, the others' 96)
                self.settle(whole)
            self.where.at(p, t)
            try:
                self.check()
            except RankFailure as e:  # a rank died between rounds
                self.losses.bury(e)
            X, delays = setup.draw(p, t, inject=True)
            t0 = time.perf_counter()
            with self.abandoning():
                Y_true, why = setup.reference(X)
            self.hung.timed(time.perf_counter() - t0)  # bounds a round nobody answers (hung)
            whole.expect(t)
            liars = setup.adversaries.liars(p, t) if setup.adversaries.on else None
            for name in names:
                if Y_true is None:  # f failed on the inputs: no round at all
                    whole.take(t, name, failed_record(setup.codes[name], delays, why, liars))
                    continue
                while len(self.in_flight) >= self.depth:
                    whole.retired(self.advance())
                if self.start(setup, name, t, X, Y_true, delays) is None:
                    whole.take(t, name, self.unstarted)  # its encode failed: no round
            whole.retired(())
        self.settle(whole)

    def settle(self, whole):
        """Advance until no round is in flight, each retired round's record into ``whole``."""
        while self.in_flight:
            whole.retired(self.advance())

    def round(self, setup, name, trial, X, Y_true, delays):
        """One scheme's record for one trial of the point ``open`` set up, computed by the
        workers with nothing else in flight."""
        r = self.start(setup, name, trial, X, Y_true, delays)
        if r is None:
            return self.unstarted
        while self.in_flight.get(r.slot) is r:
            self.advance()
        return r.rec

    def start(self, setup, name, trial, X, Y_true, delays):
        """Encode one scheme's inputs of a trial and scatter them in a free slot: the Round, or
        None when the encode failed (a plug-in's, ``trial.timed_encode``): no round starts, no
        worker gets a task, and ``unstarted`` holds the scheme's failed record."""
        from ..core.trial import encode_record

        code = setup.codes[name]
        # the liars' own ranks corrupt their results (worker.py); the record says who they are
        liars = setup.adversaries.liars(self.where.index, trial) if setup.adversaries.on else None
        with self.abandoning():
            rec, X_coded = encode_record(code, X, delays, liars)
        if X_coded is None:
            self.unstarted = rec
            return None
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
        if r.policy.deadline is not None:
            r.until = r.t_start + r.policy.deadline
        self.in_flight[slot] = r
        self.stats["tasks"] += len(workers)
        return r

    def advance(self):
        """Wait once for replies (or the next deadline) and act on what came: use or discard
        each reply, decide the rounds that stop waiting, retire the rounds whose every reply
        came. Returns the retired rounds."""
        # never longer than to the next look for silent workers (hung)
        until = min([r.until for r in self.in_flight.values() if r.t_stop is None and r.until]
                    + [self.hung.next_look] + ([self.limit] if self.limit is not None else []))
        try:
            done = self.waiter.some(self.slots.recvs, until)
        except RankFailure as e:
            done = self.losses.after_failure(e)
        now = time.perf_counter()
        if done:
            n, in_flight = self.slots.n, self.in_flight
            for i in done:  # in the order MPI reports them, as the simulator's arrival order
                slot, w = divmod(i, n)
                self.take(in_flight[slot], w, now)
        if self.unasked:
            self.signalled()
        self.losses.look(now)
        retired = []
        for r in sorted(self.in_flight.values(), key=lambda r: r.seq):
            if r.t_stop is None and (not r.pending or (r.until is not None and now > r.until)):
                r.t_stop = now  # every reply came, or the deadline passed
            if r.t_stop is not None and r.decided is None:
                self.decide(r)
            if r.decided is not None and not r.pending:
                retired.append(self.retire(r))
        if self.in_flight and self.limit is not None and time.perf_counter() > self.limit:
            raise WorkerLost("the rounds in flight could not be drained in time")
        return retired

    def take(self, r, w, now):
        """Worker w's reply to round r, received at ``now``."""
        r.pending.discard(w)
        status = P.check_reply(self.slots.reply[r.slot, w], r.seq, r.trial, w + 1)
        self.hung.replied(w + 1, r.seq, now, now - r.t_sent - r.rec["delay"][w]
                          if status == P.DONE else None)
        if r.t_stop is None and r.until is not None and now > r.until:
            r.t_stop = now  # came after the deadline: not used
        if r.t_stop is not None:  # decided already: a late result, discarded
            self.late(r, w, status)
            return
        if status == P.FAILED:
            r.rec["error"][w], r.texts[w] = self.error(w + 1, r.seq, r.trial)
            r.erased += 1
            return
        if status != P.DONE:
            if self.stop is None:
                raise P.ProtocolError(f"rank {w + 1} cancelled round {r.seq} without a STOP")
            self.unasked.append((w + 1, r.seq))  # stopped inside f by its signal: ``signalled``
            return
        r.mask[w] = True
        r.got.append(w)
        r.rec["arrival"][w] = now - r.t_start
        if r.policy.done(r.mask, len(r.got)):
            r.t_stop = now

    def signalled(self):
        """Workers cancelled tasks of rounds not decided: they got SIGTERM or SIGINT inside f
        (``Notices.signalled``), so the job stops as for rank 0's own (Interrupted)."""
        if not self.notices.signalled(time.perf_counter() + GRACE):
            rank, seq = self.unasked[0]
            raise P.ProtocolError(f"rank {rank} cancelled round {seq} without a STOP")
        self.unasked.clear()
        self.stop.check()

    def late(self, r, w, status):
        """A reply that came once round r was decided: counted, never used."""
        s = self.stats
        if status == P.FAILED:
            self.error(w + 1, r.seq, r.trial)  # received and discarded
        if w not in r.stopped:
            s["unused"] += 1       # came before its STOP was due
        elif status == P.CANCELLED:
            s["cancelled"] += 1
        else:
            s["crossed"] += 1      # crossed the STOP on the wire (or f could not be stopped)

    def decide(self, r, decode=True):
        """Round r stops waiting: STOP its workers still busy (a queued TASK is then skipped),
        then decode and score what came (unless ``decode`` is false: an interrupted run)."""
        from ..core.trial import decode_and_score

        t0 = time.perf_counter()
        rows, seq, trial = self.slots.stop[r.slot], r.seq, r.trial
        for w in r.pending:
            r.stops[w] = self.send_control(P.fill_control(rows[w], P.STOP, seq, trial), w + 1)
        r.stopped = set(r.pending)
        t1 = time.perf_counter()
        r.drain = t1 - t0
        if decode:
            rec, received = r.rec, np.array(r.got, dtype=np.int64)
            try:
                with self.abandoning():
                    rec.update(decode_and_score(r.code, received,
                                                self.slots.outputs(r.slot, received),
                                                r.Y_true, self.classifier, rec))
            except Interrupted:  # its STOPs are out: ``abandon`` only drains it
                r.decided = time.perf_counter()
                raise
            rec["used"][received] = True
            rec["error_text"] = summary(rec["error"], r.texts)
            rec["t_scatter"] = r.t_sent - r.t_start
            rec["t_wait"] = r.t_stop - r.t_sent
            rec["latency"] = latency(rec["t_encode"], r.t_stop - r.t_start, rec["t_decode"])
            rec["t_start"], rec["t_end"] = r.t_start - self.t0, time.perf_counter() - self.t0
            self.stats["used"] += len(r.got)
            self.stats["stopped"] += len(r.stopped)
        r.decided = time.perf_counter()

    def abandon(self, grace=GRACE):
        """After an interruption: STOP the workers of every round in flight (a queued TASK is
        skipped) and receive their replies (each answers within a polling interval unless f is
        still running); no record is made and nothing interrupts the waits. True when every
        round was drained within ``grace`` seconds; the persistent requests are then freed."""
        self.waiter.watch(None)
        self.limit = time.perf_counter() + grace
        try:
            for r in self.in_flight.values():
                if r.decided is None:
                    r.t_stop = r.t_stop or time.perf_counter()
                    self.decide(r, decode=False)
            busy = {w + 1 for r in self.in_flight.values() for w in r.pending}
            if busy and self.stop is not None:  # the workers inside f: ``Hung.pass_on``
                self.stop.note(signal.SIGTERM)  # (so that their NOTICEs say nothing new)
                self.hung.pass_on(busy, signal.SIGTERM)
            while self.in_flight:
                self.advance()
        except WorkerLost:
            return False
        finally:
            self.limit = None
        self.close()
        return True

    def retire(self, r):
        """Round r got every reply: complete its sends and free its slot."""
        until = self.limit or time.perf_counter() + GRACE
        while True:
            try:
                if not self.waiter.all(r.sends + list(r.stops.values()), until):
                    raise WorkerLost("the sends of a round could not be completed in time")
                break
            except RankFailure as e:
                self.losses.bury(e)
        del self.in_flight[r.slot]
        self.slots.free.append(r.slot)
        s = self.stats
        s["rounds"] += 1
        s["drain"] += r.drain + time.perf_counter() - r.decided
        return r

    def error(self, rank, seq, trial):
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
                self.losses.bury(e)
                continue
            if message is None:
                raise WorkerLost(f"rank {rank}'s error message for round {seq} did not come")
            self.errors[(rank, message[0] if isinstance(message, tuple) and message else None)] \
                = message
        return P.check_error(self.errors.pop(key), seq, trial, rank)

    def failure(self, e):
        """The RankFailure that MPI error ``e`` stands for (the waiter's reading of it)."""
        try:
            self.waiter.raise_failure(e)
        except RankFailure as failure:
            return failure

    def send_control(self, row, rank):
        """Isend of a control row; REQUEST_NULL when MPI already knows the rank is dead
        (ULFM: its pending receive reports the failure)."""
        try:
            return self.comm.Isend(row, dest=rank, tag=P.CTRL)
        except self.MPI.Exception as e:
            if e.Get_error_class() not in self.waiter.failures:
                raise
            return self.MPI.REQUEST_NULL

    def cancel(self, request):
        """Cancel ``request`` if MPI still can (a completed or failed one is left alone)."""
        with contextlib.suppress(self.MPI.Exception):
            request.Cancel()

    def describe(self):
        s = self.stats
        late = s["unused"] + s["crossed"]
        pipeline = f", pipeline {self.depth}" if self.depth > 1 else ""
        text = (f"{s['rounds']} rounds, {s['tasks']} tasks on {self.comm.size - 1} "
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

