"""Ranks 1..: wait for a TASK, sleep its injected delay (interruptibly), compute f, reply.

A worker imports only what f needs (config, targets, numpy) — not the codes or scipy — so 31
workers start quickly on 2 cores, and builds f for every sweep point from the job's resolved
TOML before the first trial.

The delay runs from the moment the master sent the round when the worker is on the master's
node (the processes share CLOCK_MONOTONIC), so the time an idle worker takes to notice its TASK
(up to a polling interval, more when 31 ranks share 2 cores) does not add to the injected
delay and results arrive in the injected order; on another node it runs from receipt. Compute
time always comes on top: a result is sent after delay + f. While it sleeps, the worker keeps
looking for a STOP of its round (small sleeps with back-off), so a straggler whose result is no
longer needed replies CANCELLED at once instead of finishing its sleep. A STOP that comes after
the worker already replied (it crossed the reply on the wire) is ignored: every TASK gets
exactly one reply.

If f raises, or returns NaN/inf or the wrong shape, the worker replies FAILED (after an ERROR
message saying why) and goes on: the master counts that result as an erasure.

SIGTERM/SIGINT (hydra forwards them to every rank) do not end a worker by themselves: rank 0
stops the round and sends EXIT, and the worker leaves as usual. Only if no EXIT comes within
WORKER_GRACE seconds of the signal (rank 0 gone or stuck) does the worker end the job itself.
"""

import os
import signal
import time

import numpy as np

from ..erasures import evaluate_row
from . import protocol as P
from . import witness
from .mpi import SLEEP_IDLE, SLEEP_MIN, Backoff, Waiter, resolve_wait

SLEEP_TASK = 1e-3  # longest sleep between looks for a STOP while delaying: how late a STOP is seen
WORKER_GRACE = 30.0  # seconds from SIGTERM/SIGINT to EXIT before a worker gives up on rank 0


def main_worker(comm, args, stop=None):
    from mpi4py import MPI

    check = None if stop is None else _grace_check(stop)
    message = Waiter(MPI, "polite", check=check).recv_object(comm, 0, P.SETUP)
    if message[0] != "ok":
        return 2  # rank 0 reported the bad input
    _, toml_text, base_dir, shapes, master_host, master_pid = message
    targets = build_targets(toml_text, base_dir, shapes)
    host = MPI.Get_processor_name()
    same_node = host == master_host
    # on rank 0's node: tell rank 0's witness who we are (the socket closes when we die)
    attendance = witness.attend(master_pid, comm.rank) if same_node else None  # noqa: F841
    # READY (pid, host): the first trial starts once every worker can compute
    Waiter(MPI, "polite", check=check).all([comm.isend((os.getpid(), host), dest=0, tag=P.SETUP)])
    waiter = Waiter(MPI, resolve_wait(args.wait, comm), hi=SLEEP_IDLE, check=check)
    Worker(comm, MPI, waiter, targets, shared_clock=same_node).serve()
    return 0


def _grace_check(stop):
    """A waiter check that ends this worker WORKER_GRACE s after a signal if no EXIT came."""
    def check():
        if stop.signum is not None and time.monotonic() - stop.since > WORKER_GRACE:
            name = signal.Signals(stop.signum).name
            raise RuntimeError(f"no EXIT from rank 0 within {WORKER_GRACE:g} s of {name}; "
                               "ending the job")
    return check


def build_targets(toml_text, base_dir, shapes):
    """f of every sweep point, built before the first trial (points that differ in other keys
    share one object): a point's first TASK should not pay for loading a model.
    ``shapes``: (input dim d, output dim m) of each point, as the master built them, or None
    for a point this run does not cover (``--point``)."""
    from ..config import parse_job
    from ..targets import target_for

    job = parse_job(toml_text, base_dir=base_dir)
    built, targets = {}, []
    for point, shape in zip(job.points, shapes):
        if shape is None:
            targets.append(None)
            continue
        d, m = shape
        key = (repr(point.config.target), point.config.job.seed, d)
        if key not in built:
            target = target_for(point.config, d, base_dir)
            if target.output_dim is None:  # python targets learn m from a call; the master knows it
                target.output_dim = m
            built[key] = target
        targets.append(built[key])
    return targets


class Worker:
    def __init__(self, comm, MPI, waiter, targets, shared_clock=False):
        self.comm, self.MPI, self.waiter = comm, MPI, waiter
        self.targets = targets  # f of each sweep point
        self.shared_clock = shared_clock  # on the master's node: count delays from its send time
        self.status = MPI.Status()
        self.ctrl = np.empty(P.HEADER + 64)
        self.side = np.empty(P.HEADER)
        self.reply = np.empty(P.REPLY_HEADER + 16)
        self.delay_backoff = Backoff(SLEEP_MIN, SLEEP_TASK)
        self.ignored_stops = 0
        self.failures = 0  # erasures: f raised or returned NaN/inf or the wrong shape

    def serve(self):
        """Handle CTRL messages until EXIT."""
        comm, DOUBLE, status = self.comm, self.MPI.DOUBLE, self.status
        while True:
            message = self.waiter.probe(comm, 0, P.CTRL, status)
            count = status.Get_count(DOUBLE)
            if count > self.ctrl.size:
                self.ctrl = np.empty(count)
            ctrl = self.ctrl
            message.Recv([ctrl, count, DOUBLE])
            t_received = time.monotonic()
            header = ctrl[:P.HEADER].tolist()  # Python floats: cheaper to use than numpy scalars
            kind = header[P.KIND]
            if kind == P.EXIT:
                return
            if kind == P.STOP:
                self.ignored_stops += 1  # we replied already: the STOP crossed our reply
                continue
            if kind != P.TASK:
                raise P.ProtocolError(f"unknown message kind {kind!r} from rank 0")
            self.task(header, ctrl, count, t_received)

    def task(self, header, ctrl, count, t_received):
        _, seq, trial, point, delay, sent, d, m = header
        d, m = int(d), int(m)
        if count != P.HEADER + d:
            raise P.ProtocolError(f"TASK of round {seq:.0f} has {count} values, expected "
                                  f"{P.HEADER} + {d}")
        target = self.targets[int(point)]
        requests = []
        if self.sleep_until((sent if self.shared_clock else t_received) + delay, seq):
            reply = self.reply[:P.REPLY_HEADER]
            reply[:] = seq, trial, P.CANCELLED
        else:
            y, code, text = evaluate_row(target, ctrl[P.HEADER:count], m)
            if y is None:  # an erasure: say why (pickled, failure path only), then FAILED
                self.failures += 1
                requests.append(self.comm.isend((seq, trial, code, text), dest=0, tag=P.ERROR))
                reply = self.reply[:P.REPLY_HEADER]
                reply[:] = seq, trial, P.FAILED
            else:
                if self.reply.size < P.REPLY_HEADER + m:
                    self.reply = np.empty(P.REPLY_HEADER + m)
                reply = self.reply[:P.REPLY_HEADER + m]
                reply[:P.REPLY_HEADER] = seq, trial, P.DONE
                reply[P.REPLY_HEADER:] = y
        requests.append(self.comm.Isend(reply, dest=0, tag=P.REPLY))
        if not self.MPI.Request.Testall(requests):  # small replies are usually sent at once
            self.waiter.all(requests)

    def sleep_until(self, deadline, seq):
        """Sleep until time.monotonic() reaches ``deadline``, looking for a STOP of round
        ``seq`` meanwhile; True if it came (stop now), False when the time is up."""
        comm, status, side = self.comm, self.status, self.side
        polite = self.waiter.polite
        backoff = self.delay_backoff
        backoff.reset()
        while True:
            message = comm.Improbe(0, P.CTRL, status)
            if message is not None:
                count = status.Get_count(self.MPI.DOUBLE)
                if count != P.HEADER:
                    raise P.ProtocolError(f"a message of {count} values came during round "
                                          f"{seq:.0f}; only its STOP may")
                message.Recv([side, P.HEADER, self.MPI.DOUBLE])
                if side[P.KIND] != P.STOP or side[P.SEQ] != seq:
                    raise P.ProtocolError(f"kind {side[P.KIND]!r} for round {side[P.SEQ]:.0f} "
                                          f"came during round {seq:.0f}; only its STOP may")
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if self.waiter.check is not None:
                self.waiter.check()
            if polite:
                backoff.sleep(left)
