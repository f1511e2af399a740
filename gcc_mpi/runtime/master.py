"""Rank 0's Master: run every trial over the workers, round by round (run.py loads the job first).

One round = one scheme of one trial: encode (same code object as the simulator), start the
persistent receive and TASK send of each active worker in a free slot (``protocol.Slots``),
then take the completions in the order Testsome reports them, stamping each with its arrival
time, until ``StopRule.done`` (or the deadline) — exactly the received sets the simulator builds
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
died in — and the job completes, when the MPI lets the other ranks go on:

- ULFM (Open MPI ``mpiexec --with-ft ulfm``): the dead rank's requests complete with a
  process-failure error (``RankFailure`` from the waiter); rank 0 asks MPI which ranks failed
  (``Comm.Get_failed``) and acknowledges them (``Ack_failed``, so that the any-source control
  receive works again). Works for ranks on every node.
- MPICH ``mpiexec -disable-auto-cleanup``: hydra sends the other ranks SIGUSR1 instead of
  killing them; rank 0 finds which rank died from the pids the workers sent at start-up
  (processes on its own node). A dead rank on another node cannot be told apart: the job stops
  as for SIGTERM, exit code 1.

Either way ``_bury`` then cancels every request of the rounds in flight to the dead rank (a
round still waiting records it LOST) and takes the replies of the others that the failed wait
completed. A scheme that can no longer decode (an exact one short of results) records its
trials as failed with the reason; the others go on. Without either, the launcher kills every
rank at once (the file keeps every trial committed before).
"""

import signal
import sys
import time

import numpy as np

from ..erasures import LOST, summary
from . import protocol as P
from .mpi import SLEEP_IDLE, SLEEP_MIN, Backoff, RankFailure, process_gone

GRACE = 10.0         # seconds for each step of a stop (drain the round, deliver EXIT)
BLOCK = 256          # trials of records held by the master before they go to the writer
FIND_DEAD = 2.0      # seconds to look for the dead rank after hydra's notice
LOOK_EVERY = 0.5     # seconds between looks for ended worker processes under ULFM


class WorkerLost(Exception):
    """A rank died and rank 0 cannot tell which: the job cannot go on."""

    code = 1


class Round:
    """One scheme of one trial in flight, in slot ``slot`` of the point's ``Slots``.

    ``workers``: the active workers it sent a TASK (worker w = rank w + 1); ``pending``: those
    whose reply has not come; ``got``: the workers whose results it uses, in arrival order.
    ``t_stop`` is set when it stops waiting (its StopRule is satisfied, its deadline passed or
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
    process notices; ``peers``: {rank: (pid, host)} from READY; ``host``: this rank's host;
    ``ft``: ULFM is on (dead ranks are found by asking MPI)."""

    def __init__(self, comm, MPI, waiter, stop=None, notice=None, peers=None, host=None,
                 ft=False):
        self.comm, self.MPI, self.waiter = comm, MPI, waiter
        self.stop, self.notice, self.ft = stop, notice, ft
        self.peers, self.host = peers or {}, host
        self.seen_notices = 0
        self.next_look = 0.0    # time.monotonic() of the next look for ended pids (ULFM)
        self.peer_notices = 0   # the most SIGUSR1 a worker said it got (NOTICE)
        self.control = None     # the persistent any-source receive of NOTICEs (``listen``)
        self.notice_row = np.zeros(P.NOTICE_SIZE)
        self.byes = set()       # ranks whose last NOTICE (BYE, after EXIT) came
        self.dead = set()       # ranks that died (permanent stragglers)
        self.lost = []          # (rank, point, trial) of every death, in order
        self.writer = None      # the results file (``run``): its ``lost`` attribute
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
                          crossed=0, failed=0, lost=0, drain=0.0)

    def _check(self):
        notices = max(self.notice.count if self.notice is not None else 0, self.peer_notices)
        if notices > self.seen_notices:
            raise RankFailure("hydra reported a dead process")
        if self.ft and time.monotonic() > self.next_look:
            # Open MPI 5.0.11 reports a rank that a signal killed, not one that called exit()
            # without MPI_Finalize: look for the pids of rank 0's node now and then
            self.next_look = time.monotonic() + LOOK_EVERY
            if self._gone():
                raise RankFailure("a worker's process ended")
        if self.stop is not None:
            self.stop.check()

    def _gone(self):
        """Ranks on rank 0's node whose process ended (not yet buried)."""
        return {r for r, (pid, host) in self.peers.items() if r not in self.dead
                and host == self.host and process_gone(pid)}

    def listen(self):
        """Keep a receive of the workers' NOTICEs active (any source), so that a busy waiter
        can block in Waitsome: a worker that gets a signal completes it."""
        if self.control is None:
            self.control = self.comm.Recv_init(self.notice_row, source=self.MPI.ANY_SOURCE,
                                               tag=P.NOTICE)
            self.control.Start()
            self.waiter.control, self.waiter.on_control = self.control, self._noticed

    def _noticed(self):
        """A worker's NOTICE came: note it (``_check`` acts on it) and listen again."""
        kind, rank, value = self.notice_row.tolist()
        self.control.Start()
        if kind == P.NOTIFIED:
            self.peer_notices = max(self.peer_notices, int(value))
        elif kind == P.BYE:
            self.byes.add(int(rank))
        elif kind == P.SIGNALLED and self.stop is not None and self.stop.signum is None:
            self.stop.signum, self.stop.since = int(value), time.monotonic()
            print(f"gcc_mpi: rank {int(rank)} got {signal.Signals(int(value)).name}; "
                  "stopping the job", file=sys.stderr, flush=True)

    def _unlisten(self):
        control, self.control = self.control, None
        self.waiter.control = self.waiter.on_control = None
        if control is None:
            return
        try:
            control.Cancel()
            control.Wait()
            control.Free()
        except self.MPI.Exception:  # completed meanwhile, or its peers died (ULFM)
            pass

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

    def _run_point(self, setup, point, names, trials, writer, progress):
        """Every round of ``trials``, up to ``self.depth`` in flight. Once all its schemes are
        decided, a trial's records go into the master's block of Records, in trial order, and
        the block goes to the writer when a commit is due, when it is full and when the point
        ends or stops (every finished trial is kept): a trial costs the master no HDF5 call."""
        from ..job import Records

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
            except RankFailure:  # a rank died between rounds
                self._bury()
            X, delays = setup.draw(point, t, inject=True)
            Y_true, why = setup.reference(X)
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
        if self.dead:  # permanent stragglers: no task, no reply
            alive = np.array([int(w) + 1 not in self.dead for w in workers])
            for w in workers[~alive]:
                rec["error"][w], texts[w] = LOST, f"rank {int(w) + 1} died earlier"
            workers, X_coded = workers[alive], X_coded[alive]
        slots = self.slots
        slot = slots.free.pop()
        self.seq += 1
        r = Round(self.seq, trial, name, code, setup.rules[name], rec, Y_true, slot, workers,
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
        waiting = [r.until for r in self.rounds.values() if r.t_stop is None and r.until]
        until = min(waiting, default=None)
        if self.limit is not None:
            until = min(until or self.limit, self.limit)
        # block in Waitsome only on a set that can complete (a reply is due), with no
        # job.time_limit ahead (a blocked rank would not see it pass) and not under ULFM, where
        # a worker that called exit() is found only by looking for its pid (``_check``): Open
        # MPI 5.0.11 completes no request for it, so a blocked master would wait forever
        block = not self.ft and (self.stop is None or self.stop.deadline is None) and any(
            r.pending for r in self.rounds.values())
        try:
            done = self.waiter.some(self.slots.recvs, until, block)
        except RankFailure:
            done = self._after_failure()
        now = time.perf_counter()
        if done:
            n, rounds = self.slots.n, self.rounds
            for i in done:  # in the order MPI reports them, as the simulator's arrival order
                slot, w = divmod(i, n)
                self._take(rounds[slot], w, now)
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
                                        r.Y_true, self.classifier, rec.get("alpha")))
            rec["used"][received] = True
            rec["error_text"] = summary(rec["error"], r.texts)
            rec["t_scatter"] = r.t_sent - r.t_start
            rec["t_wait"] = r.t_stop - r.t_sent
            rec["latency"] = rec["t_encode"] + (r.t_stop - r.t_start) + rec["t_decode"]
            rec["t_start"], rec["t_end"] = r.t_start - self.t0, time.perf_counter() - self.t0
            self.stats["used"] += len(r.got)
            self.stats["stopped"] += len(r.stopped)
        r.decided = time.perf_counter()

    def _retire(self, r):
        """Round r got every reply: complete its sends and free its slot."""
        while True:
            try:
                if not self.waiter.all(r.sends + list(r.stops.values()), self.limit):
                    raise WorkerLost("the sends of a round could not be completed in time")
                break
            except RankFailure:
                self._bury()
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
        while key not in self.errors:
            if rank in self.dead:
                return LOST, f"rank {rank} died"
            try:
                message = self.waiter.recv_object(self.comm, rank, P.ERROR, self.limit)
            except RankFailure:
                self._bury()
                continue
            if message is None:
                raise WorkerLost(f"rank {rank}'s error message for round {seq} did not come")
            self.errors[(rank, message[0] if isinstance(message, tuple) and message else None)] \
                = message
        return P.check_error(self.errors.pop(key), seq, trial, rank)

    def _bury(self):
        """After a process-failure error (ULFM) or hydra's notice: find the ranks that died,
        cancel every request to them in the rounds in flight (a round still waiting records
        them LOST) and return them. WorkerLost when no dead rank can be found (hydra's notice
        of a rank on another node)."""
        self.seen_notices = max(self.notice.count if self.notice is not None else 0,
                                self.peer_notices)
        found = set()
        give_up = time.monotonic() + FIND_DEAD
        while not found:
            found = self._find_dead()
            if not found and time.monotonic() > give_up:
                if self.ft:
                    raise WorkerLost("MPI reported a process failure but no failed rank")
                raise WorkerLost("a rank died (hydra reported a dead process) but not on rank "
                                 "0's node, so rank 0 cannot tell which")
            if not found:
                time.sleep(0.02)
        point, trial = self.where
        for rank in sorted(found):
            # the oldest round in flight that waited for it, else the trial last started
            t = min((r.trial for r in self.rounds.values() if rank - 1 in r.pending),
                    default=trial)
            self.lost.append((rank, point, t))
            if self.writer is not None:
                self.writer.add_lost(rank, point, t)
            pid = self.peers.get(rank, (None,))[0]
            print(f"gcc_mpi: rank {rank} (worker {rank - 1}, pid {pid}) died during trial {t} "
                  f"of point {point}; it is a permanent straggler from now on (error code "
                  f"{LOST} in the file)", file=sys.stderr, flush=True)
        self.dead |= found
        self.stats["lost"] += len(found)
        for r in self.rounds.values():
            for k, w in enumerate(r.workers.tolist()):
                if w + 1 in found:
                    self._forget(r, k, w)
        return found

    def _find_dead(self):
        """Ranks newly known dead: from MPI under ULFM, else from the pids of rank 0's node."""
        if self.ft:
            group = self.comm.Get_failed()
            try:
                ranks = self.MPI.Group.Translate_ranks(group, list(range(group.Get_size())),
                                                       self.comm.Get_group())
            finally:
                group.Free()
            self.comm.Ack_failed()  # any-source receives (the control receive) work again
            return {r for r in ranks if r not in self.dead and r > 0} | self._gone()
        return self._gone()

    def _after_failure(self):
        """A wait ended because a rank died: bury it, then return the replies of the live
        workers that the failed wait completed (MPI deactivated their requests without
        telling which: a completed persistent request tests true), oldest round first."""
        n, recvs, done = self.slots.n, self.slots.recvs, []
        while True:
            self._bury()
            again = False
            for r in sorted(self.rounds.values(), key=lambda r: r.seq):
                for w in sorted(r.pending):
                    i = r.slot * n + w
                    if i in done:
                        continue
                    try:
                        if recvs[i].Test():
                            done.append(i)
                    except self.MPI.Exception:
                        again = True  # one more rank died: bury it too
            if self.control is not None:
                try:
                    if self.control.Test():
                        self._noticed()
                except self.MPI.Exception:
                    again = True
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

    def shutdown(self, grace=None):
        """EXIT to every other live rank (idle ones too), then every one's BYE, which its
        ``Worker.serve`` sends on EXIT; True when all EXITs were delivered and all BYEs came
        (within ``grace`` seconds if given): then no NOTICE is left unreceived at MPI_Finalize
        (protocol). The control receive is cancelled at the end.

        A master that never called ``listen`` listens now, for its shutdown: a worker cannot
        tell whether its master listened, so every worker says BYE, and a BYE left unreceived
        is the very failure the BYE is there to prevent (MPICH's rank 0 fails in MPI_Finalize
        and skips the barrier in which the workers then wait for ever). So every master and
        worker end alike, whoever drives them (run, probe, the benchmarks). Under ULFM nothing
        is awaited (``_farewells``), so nothing is listened for either."""
        if not self.ft:
            self.listen()  # a no-op when it listens already
        rows = np.zeros((self.comm.size - 1, P.HEADER))
        ranks = [r for r in range(1, self.comm.size) if r not in self.dead]
        self.byes = set()  # a BYE answers this EXIT (benchmarks shut one master down per block)
        sends = [self._isend(P.fill_control(rows[r - 1], P.EXIT), r) for r in ranks]
        until = None if grace is None else time.perf_counter() + grace
        try:
            while True:
                try:
                    return self.waiter.all(sends, until) and self._farewells(ranks, until)
                except RankFailure:  # one more died: forget its EXIT
                    buried = self._bury()
                    for i, rank in enumerate(ranks):
                        if rank in buried and sends[i]:
                            self._cancel(sends[i])
                            self.orphans.append(sends[i])
                            sends[i] = self.MPI.REQUEST_NULL
        finally:
            self._unlisten()

    def _farewells(self, ranks, until):
        """Wait for the BYE of every live rank in ``ranks`` (a dead one sends none); False
        once time.perf_counter() passes ``until``. Under ULFM no rank calls MPI_Finalize, so
        an unreceived BYE is harmless and none is awaited (a rank that called exit() before
        its BYE would be awaited in vain: Open MPI does not report it, see ``_check``)."""
        control = self.control
        if self.ft:
            return True
        backoff = Backoff(SLEEP_MIN, SLEEP_IDLE)
        while not set(ranks) - self.dead <= self.byes:
            if control.Test():
                self._noticed()
                backoff.reset()
            elif until is not None and time.perf_counter() > until:
                return False
            else:
                backoff.sleep()
        return True

    def describe(self):
        s = self.stats
        late = s["unused"] + s["crossed"]
        pipeline = f", pipeline {self.depth}" if self.depth > 1 else ""
        blocked = f", {self.waiter.blocked} Waitsome calls" if self.waiter.blocked else ""
        text = (f"gcc_mpi: {s['rounds']} rounds, {s['tasks']} tasks on {self.comm.size - 1} "
                f"worker ranks ({self.waiter.mode} waiting{blocked}{pipeline}): {s['used']} results used, "
                f"{late} late results discarded ({s['crossed']} crossed a STOP), "
                f"{s['cancelled']} tasks cancelled while sleeping or queued; "
                f"{1e3 * s['drain'] / max(s['rounds'], 1):.2f} ms per round to stop and drain")
        if s["failed"]:
            text += f"; {s['failed']} erasures (f failed on a worker)"
        if self.dead:
            text += f"; ranks {', '.join(map(str, sorted(self.dead)))} died"
        return text
