"""Ranks 1..: take TASKs in the order they come, sleep each one's injected delay (interruptibly),
compute f, reply.

A worker imports only what f needs (config, targets, numpy) — not the codes or scipy — so 31
workers start quickly on 2 cores, and builds f for every sweep point from the job's resolved
TOML before the first trial.

With ``decode.pipeline`` > 1 the master has several rounds in flight, so TASKs of later rounds
can arrive while the worker is busy: they wait in a queue and are done one at a time, in
order, like requests in a serving system — a straggler delays only its own later tasks. The
delay of a task runs from when the worker can start it: the master's send time when the worker
is on the master's node (the processes share CLOCK_MONOTONIC), so the time an idle worker takes
to notice its TASK (up to a polling interval, more when 31 ranks share 2 cores) does not add to
the injected delay and results arrive in the injected order; the receipt time on another node;
and never before the previous task was answered. Compute time always comes on top: a result is
sent after delay + f. While it sleeps, the worker keeps reading its messages (small sleeps with
back-off): a STOP of the task it sleeps for makes it reply CANCELLED at once instead of
finishing its sleep, and a STOP of a queued task makes it skip that task (CANCELLED, f never
runs). A STOP that comes after the worker already replied (it crossed the reply on the wire) is
ignored: every TASK gets exactly one reply.

A worker that the job's [adversaries] make a liar in a trial (gcc_mpi.job.adversaries, from the
job's seed) corrupts its result itself before it sends it, as a faulty node would.

If f raises, or returns NaN/inf or the wrong shape, the worker replies FAILED (after an ERROR
message saying why) and goes on: the master counts that result as an erasure.

SIGTERM/SIGINT (hydra forwards them to every rank) do not end a worker by themselves: the worker
tells rank 0 (a NOTICE, taken on the next turn of whatever rank 0 waits for: no rank blocks
inside MPI) — inside f it drops the call and replies CANCELLED (``Worker.evaluate``) —, rank 0
stops the round and sends EXIT, and the worker leaves as usual: on EXIT ``Worker.serve`` sends
its last NOTICE, the BYE that rank 0's shutdown awaits (protocol). Only if no EXIT comes within
WORKER_GRACE seconds of the signal (rank 0 gone or stuck) does the worker end the job itself.
Hydra's dead-process notice (SIGUSR1) is passed on to rank 0 the same way.

Under ULFM a worker whose MPI call fails because the communicator was revoked (rank 0, or any
rank, ended the job: ``mpi.abort``) or rank 0 died leaves at once, with exit code 0: the rank
that ended the job carries the job's code (``mpi.abort`` says why not 1).
"""

import logging
import os
import signal
import time
from collections import deque
from math import isfinite

import numpy as np

from ..core.erasures import F_FAILURES, NONE, call, check, raised
from ..core.interrupts import Interrupted
from ..errors import JobError
from ..job.adversaries import Adversaries
from . import protocol as P
from . import witness
from .mpi import (Waiter, abort, ended_elsewhere, exit_without_finalize, improbe, resolve_wait,
                  where)
from .pace import IDLE_FIRST, SLEEP_IDLE, SLEEP_MIN, Backoff

log = logging.getLogger(__name__)

SLEEP_TASK = 1e-3  # longest sleep between looks for a STOP while delaying: how late a STOP is seen
WORKER_GRACE = 30.0  # seconds from SIGTERM/SIGINT to EXIT before a worker gives up on rank 0
SLEEP_STARTUP = 10e-3  # longest sleep while waiting for rank 0's start-up message


def serve_run(comm, MPI, spec, interrupts=None, notice=None, timer=None):
    """A worker's whole run (``session``): its exit code. ``timer`` (the probe's,
    runtime/probe.py): wraps f to time every call (``timer.wrap(targets)``) and sends the
    times to rank 0 after EXIT (``timer.report``). ``notice``: hydra's dead-process notices,
    passed on to rank 0 (``NoticeSender``)."""
    try:
        return _serve(comm, MPI, spec, interrupts, notice, timer)
    except MPI.Exception as e:
        if not ended_elsewhere(MPI, e):
            raise
        exit_without_finalize(0)  # the job was ended elsewhere, which said why


def _serve(comm, MPI, spec, interrupts, notice, timer):
    # this worker's one sender of NOTICEs, from start-up to its BYE (Worker.serve, on EXIT)
    notices = NoticeSender(comm, interrupts, notice)
    # rank 0 builds the job meanwhile: 31 ranks polling every millisecond would slow it down
    startup = Waiter(MPI, "polite", check=notices.check, idle=Backoff(IDLE_FIRST, SLEEP_STARTUP))
    message = startup.recv_object(comm, 0, P.SETUP)
    if message[0] != "ok":
        return 2  # rank 0 reported the bad input
    _, digest, shapes, master_host, master_pid = message
    host = MPI.Get_processor_name()
    if digest != P.digest(spec.job):  # bad input: one line naming this rank, exit code 2
        mismatch = JobError("job file", f"the job on {host} is not rank 0's on {master_host}: "
                                        "its file or its --set options differ (is the job file "
                                        "the same on every node?)")
        log.critical("%s: error: %s", where(comm), mismatch)  # ends the job: MPI_Abort
        abort(comm, 2)
    same_node = host == master_host
    # on rank 0's node: tell rank 0's witness who we are (the socket closes when we die), before
    # building f, during which a worker may die too
    checked_in = witness.check_in(master_pid, comm.rank) if same_node else None  # noqa: F841
    # HELLO (pid, host) at once, READY once f is built: rank 0 can tell which rank died while
    # the others build f (protocol)
    Waiter(MPI, "polite", check=notices.check).all(
        [comm.isend((os.getpid(), host), dest=0, tag=P.SETUP)])
    targets = build_targets(spec.job, shapes)
    if timer is not None:
        targets = timer.wrap(targets)
    Waiter(MPI, "polite", check=notices.check).all([comm.isend(None, dest=0, tag=P.SETUP)])
    waiter = Waiter(MPI, resolve_wait(spec.wait, comm), hi=SLEEP_IDLE)
    worker = Worker(comm, MPI, waiter, targets, shared_clock=same_node, notices=notices,
                    adversaries=[Adversaries.of(p.config) for p in spec.job.points])
    worker.serve()
    if timer is not None:  # after the BYE: rank 0 receives the times once every BYE came
        timer.report(comm, waiter)
    if not worker.finalize:
        exit_without_finalize(0)
    return 0


class NoticeSender:
    """A worker's NOTICEs to rank 0, every one of them, so that they leave in order on one tag
    (protocol): ``check``, its waiters' check, tells rank 0 (once per event) that this worker
    got a signal (``interrupts``, an InterruptFlag) or hydra's dead-process notice
    (``notice``) and ends the worker WORKER_GRACE s after a signal if no EXIT came; ``bye``,
    which ``Worker.serve`` calls on EXIT, sends the last one. With neither ``interrupts`` nor
    ``notice`` (a worker that handles no signal, as the benchmarks run it) there is nothing to
    watch: ``check`` is None, and only the BYE is sent."""

    def __init__(self, comm, interrupts=None, notice=None):
        self.comm, self.interrupts, self.notice = comm, interrupts, notice
        self.told_signal, self.told_notices = False, 0
        self.rows, self.sends = [], []
        self.check = self._watch if interrupts is not None or notice is not None else None

    def _tell(self, kind, value):
        row = np.array([kind, self.comm.rank, value], dtype=np.float64)
        self.rows.append(row)  # the buffer lives as long as its send
        self.sends.append(self.comm.Isend(row, dest=0, tag=P.NOTICE))

    def bye(self):
        """After EXIT: the last NOTICE (BYE, see protocol), after every one sent before; no
        NOTICE follows it. Returns once all are sent (their buffers are kept until then)."""
        self.told_signal, self.told_notices = True, float("inf")
        self._tell(P.BYE, 0)
        for request in self.sends:  # small: sent at once (rank 0 waits for the BYE anyway)
            request.Wait()
        self.rows, self.sends = [], []

    def _watch(self):
        stop, notice = self.interrupts, self.notice
        if notice is not None and notice.count > self.told_notices:
            self.told_notices = notice.count
            self._tell(P.NOTIFIED, notice.count)
        if stop is None or stop.signum is None:
            return
        if not self.told_signal:
            self.told_signal = True
            self._tell(P.SIGNALLED, stop.signum)
        if time.monotonic() - stop.since > WORKER_GRACE:
            name = signal.Signals(stop.signum).name
            raise RuntimeError(f"no EXIT from rank 0 within {WORKER_GRACE:g} s of {name}; "
                               "ending the job")


def build_targets(job, shapes):
    """f of every sweep point of ``job``, built before the first trial (points that differ in
    other keys share one object): a point's first TASK should not pay for loading a model.
    ``shapes``: (input dim d, output dim m) of each point, as rank 0 built them, or None for a
    point this run does not cover (``--point``)."""
    from ..targets import target_for

    built, targets = {}, []
    for point, shape in zip(job.points, shapes):
        if shape is None:
            targets.append(None)
            continue
        d, m = shape
        key = (repr(point.config.target), point.config.job.seed, d)
        if key not in built:
            target = target_for(point.config, d, job.base_dir)
            target.learn_output_dim(m)  # python targets learn m from a call; rank 0 knows it
            built[key] = target
        targets.append(built[key])
    return targets


def compute(target, x, m):
    """(y, code, text) of f on one coded input ``x``, classified as ``erasures.evaluate_row``
    does. A clean result (shape (1, m), all finite) is recognised with plain Python floats:
    the numpy reductions of the full check cost ~30 us per task on a rank whose caches other
    ranks keep cold, a fifth of a worker's time per round here; anything else gets the full
    check, so the codes and texts are the simulator's."""
    try:
        Y = call(target, x.reshape(1, -1))
    except F_FAILURES as e:  # whatever the user's f raises is an erasure
        return (None, *raised(e))
    if Y.shape == (1, m) and all(map(isfinite, Y[0].tolist())):
        return Y[0], NONE, ""
    code, text = check(Y, 1, m)
    return (Y[0] if code == NONE else None), code, text


class Worker:
    """One worker's loop (``serve``) over its CTRL messages from rank 0, until EXIT.

    ``notices``: the worker's ``NoticeSender``, which sends every NOTICE of this worker; its
    check becomes ``waiter``'s, and ``serve`` ends with its BYE, so that no user of Worker can
    forget the BYE a master's shutdown waits for. None: one that watches nothing and only says
    BYE. ``adversaries``: each sweep point's ``job.adversaries.Adversaries`` (None: this
    worker never lies)."""

    def __init__(self, comm, MPI, waiter, targets, shared_clock=False, notices=None,
                 adversaries=None):
        self.comm, self.MPI, self.waiter = comm, MPI, waiter
        self.notices = notices if notices is not None else NoticeSender(comm)
        waiter.watch(self.notices.check)
        self.targets = targets  # f of each sweep point
        self.adversaries = adversaries
        self.shared_clock = shared_clock  # on the master's node: count delays from its send time
        self.DOUBLE = MPI.DOUBLE
        self.status = MPI.Status()
        self.side = np.empty(P.HEADER)   # header-only messages (STOP, EXIT)
        self.reply = np.empty(P.REPLY_HEADER + 16)
        self.delay_backoff = Backoff(SLEEP_MIN, SLEEP_TASK)
        self.queue = deque()     # (header, message, time received) of TASKs not started yet
        self.open = set()        # seqs of the TASKs received and not yet replied to
        self.stopped = set()     # the subset of ``open`` that the master STOPped
        self.idle_since = 0.0    # time.monotonic() of the last reply: the next task starts later
        self.exit = False
        self.finalize = True     # False: rank 0 said to leave without MPI_Finalize (EXIT)
        self.leave = False       # rank 0's LEAVE came (after EXIT)
        self.ignored_stops = 0
        self.failures = 0  # erasures: f raised or returned NaN/inf or the wrong shape

    def serve(self):
        """Handle CTRL messages until EXIT, doing the TASKs one at a time in arrival order;
        on EXIT, say BYE (the last NOTICE, after every NOTICE this worker sent) and return
        once rank 0 says LEAVE (``linger``)."""
        comm, status = self.comm, self.status
        while True:
            if self.queue:
                self.task(*self.queue.popleft())
            elif self.exit:
                self.notices.bye()
                self.linger()
                return
            else:
                self.receive(self.waiter.probe(comm, 0, P.CTRL, status))

    def linger(self):
        """After the BYE: stay, taking SIGNALs (rank 0 may need this worker to resume or end a
        silent one of its node), until rank 0's LEAVE — at most WORKER_GRACE s, then without
        MPI_Finalize (rank 0 is gone or stuck)."""
        until, backoff = time.monotonic() + WORKER_GRACE, Backoff(IDLE_FIRST, SLEEP_IDLE)
        while not self.leave:
            message = improbe(self.comm, 0, P.CTRL, self.status)
            if message is not None:
                self.receive(message)
                backoff.reset()
            elif time.monotonic() > until:
                self.finalize = False
                return
            else:
                backoff.sleep()

    def receive(self, message):
        """Receive a probed CTRL message (its size in ``self.status``) and act on it: a TASK
        joins the queue, a STOP marks its task, EXIT ends the loop once the queue is empty."""
        count = self.status.Get_count(self.DOUBLE)
        if count == P.HEADER:
            message.Recv([self.side, count, self.DOUBLE])
            kind, seq = self.side[P.KIND], self.side[P.SEQ]
            if kind == P.STOP:
                if seq in self.open:
                    self.stopped.add(seq)
                else:
                    self.ignored_stops += 1  # we replied already: the STOP crossed our reply
            elif kind == P.EXIT and not self.open:
                self.exit, self.finalize = True, seq != 1
            elif kind == P.LEAVE and self.exit:
                self.leave = True
            elif kind == P.SIGNAL:  # a hung worker of this node, to resume or end (hung)
                try:
                    os.kill(int(seq), int(self.side[P.TRIAL]))
                except ProcessLookupError:
                    pass
            else:
                raise P.ProtocolError(f"message kind {kind!r} (round {seq:.0f}) from rank 0 while "
                                      f"rounds {sorted(self.open)} are open")
            return
        ctrl = np.empty(count)  # a TASK may wait in the queue: its own buffer
        message.Recv([ctrl, count, self.DOUBLE])
        t_received = time.monotonic()
        header = ctrl[:P.HEADER].tolist()  # Python floats: cheaper to use than numpy scalars
        if header[P.KIND] != P.TASK or count != P.HEADER + int(header[P.DIM]):
            raise P.ProtocolError(f"a message of kind {header[P.KIND]!r} with {count} values "
                                  f"came from rank 0; a TASK has {P.HEADER} + d")
        self.open.add(header[P.SEQ])
        self.queue.append((header, ctrl, t_received))

    def task(self, header, ctrl, t_received):
        _, seq, trial, point, delay, sent, d, m = header
        start = max(sent if self.shared_clock else t_received, self.idle_since)
        requests = []
        if seq in self.stopped or self.sleep_until(start + delay, seq):
            reply = self.reply[:P.REPLY_HEADER]
            reply[:] = seq, trial, P.CANCELLED
        else:
            m = int(m)
            y, code, text = self.evaluate(int(point), ctrl[P.HEADER:], m)
            if code is None:  # stopped inside f: dropped (rank 0 was told)
                reply = self.reply[:P.REPLY_HEADER]
                reply[:] = seq, trial, P.CANCELLED
            elif y is None:  # an erasure: say why (pickled, failure path only), then FAILED
                self.failures += 1
                requests.append(self.comm.isend((seq, trial, code, text), dest=0, tag=P.ERROR))
                reply = self.reply[:P.REPLY_HEADER]
                reply[:] = seq, trial, P.FAILED
            else:
                y = self.lie(int(point), int(trial), y)
                if self.reply.size < P.REPLY_HEADER + m:
                    self.reply = np.empty(P.REPLY_HEADER + m)
                reply = self.reply[:P.REPLY_HEADER + m]
                reply[:P.REPLY_HEADER] = seq, trial, P.DONE
                reply[P.REPLY_HEADER:] = y
        self.open.discard(seq)
        self.stopped.discard(seq)
        requests.append(self.comm.Isend(reply, dest=0, tag=P.REPLY))
        if not self.MPI.Request.Testall(requests):  # small replies are usually sent at once
            self.waiter.all(requests)
        self.idle_since = time.monotonic()

    def evaluate(self, point, x, m):
        """f of sweep point ``point`` on a task's coded input ``x``: (y, code, text) as
        ``compute`` gives them, or (None, None, "") when this worker got SIGTERM or SIGINT
        (hydra forwards them to every rank) before or while f ran: f is dropped at once
        (``InterruptFlag.abandoning``: a call of minutes does not hold the stop up), rank 0 is
        told (the SIGNALLED NOTICE goes before the CANCELLED reply, which rank 0 then takes as
        that stop's), and the job ends as after any stop."""
        stop = self.notices.interrupts
        if stop is None:  # a benchmark's worker: it handles no signal
            return compute(self.targets[point], x, m)
        try:
            with stop.abandoning():
                return compute(self.targets[point], x, m)
        except Interrupted:
            self.notices.check()
            return None, None, ""

    def lie(self, point, trial, y):
        """``y``, or what this worker sends instead when the job makes it a liar in the
        trial."""
        adversaries = self.adversaries[point] if self.adversaries else None
        if adversaries is None or not adversaries.on:
            return y
        return adversaries.corrupt(point, trial, [self.comm.rank - 1], y[None])[0]

    def sleep_until(self, deadline, seq):
        """Sleep until time.monotonic() reaches ``deadline``, receiving messages meanwhile;
        True if a STOP of round ``seq`` came (stop now), False when the time is up."""
        comm, status, stopped = self.comm, self.status, self.stopped
        polite = self.waiter.polite
        backoff = self.delay_backoff
        backoff.reset()
        while True:
            message = improbe(comm, 0, P.CTRL, status)
            if message is not None:
                self.receive(message)
                if seq in stopped:
                    return True
                continue  # more may be waiting (TASKs of later rounds, STOPs)
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if self.waiter.check is not None:
                self.waiter.check()
            if polite:
                backoff.sleep(left)
