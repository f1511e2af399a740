"""Rank 0: load and check the job, then run every trial over the workers and write the results.

One round = one scheme of one trial: encode (same code object as the simulator), post one
Irecv per active worker, Isend each its TASK (coded input + injected delay), then take the
completions one at a time in the order Testsome reports them, stamping each with its arrival
time, until ``StopRule.done`` (or the deadline) — exactly the received sets the simulator builds
from the delays. A FAILED reply (f raised, NaN/inf, wrong shape) is an erasure: recorded with its
reason, not counted, and the master keeps waiting. Completions after the stop are not used.
Decode and score with ``decode_and_score``; then STOP every worker still busy and receive all
outstanding replies (a late result or a CANCELLED notice, discarded) so that no request is
pending when the next round starts, or at shutdown. A trial's records are written together once
every scheme is done, and the file is committed after every trial (see ``results``).

Stopping (SIGTERM, SIGINT, job.time_limit): the waits raise ``Stop``; the current trial is
abandoned, the file closed with complete = false, the round's workers STOPped and drained and
every rank sent EXIT — each step bounded by GRACE seconds, after which MPI_Abort ends the job.

A dead worker: started with ``mpiexec -disable-auto-cleanup``, hydra sends the other ranks
SIGUSR1 instead of killing them. Rank 0 then finds which rank died from the pids the workers
sent at start-up (processes on its own node), cancels the receive it had posted for it and treats
it as a permanent straggler — never sent a task again, error code 4 (LOST) — and the job
completes. A dead rank on another node cannot be told apart: the job stops as for SIGTERM,
exit code 1. Without that option hydra kills every rank at once (the file keeps every trial
committed before).
"""

import os
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from ..erasures import LOST, summary
from ..errors import JobError
from . import protocol as P
from . import witness
from .mpi import Waiter, process_gone, resolve_wait

GRACE = 10.0         # seconds for each step of a stop (drain the round, deliver EXIT)
FIND_DEAD = 2.0      # seconds to look for the dead rank after hydra's notice


class RankFailure(Exception):
    """Hydra reported a dead process (SIGUSR1): the waiting loop hands over to ``_bury``."""


class WorkerLost(Exception):
    """A rank died and rank 0 cannot tell which: the job cannot go on."""

    code = 1


def load_job_for(args, size):
    """The job for a run on ``size`` ranks: code.workers defaults to size - 1 (a value the job
    file or --set gives wins) and may not exceed it."""
    from ..config import load_default_job, load_job, parse_override, select_points

    overrides = [parse_override(s) for s in args.overrides]
    defaults = {"code.workers": size - 1}
    try:
        job = (load_job(args.job, overrides, defaults) if args.job
               else load_default_job(overrides, defaults))
    except JobError as e:
        if e.key not in ("code.workers", "stragglers.count", "decode.stragglers"):
            raise
        message = str(e).removeprefix(f"{e.key}: ")
        raise JobError(e.key, f"{message} (with {size} ranks, code.workers is ranks - 1 = "
                              f"{size - 1} unless the job sets it; start more ranks)") from None
    most = max(p.config.code.workers for p in select_points(job, getattr(args, "point", None)))
    if most > size - 1:
        raise JobError("code.workers", f"must be <= ranks - 1 = {size - 1} (rank 0 is the master "
                                       f"and {size} ranks were started), got {most}")
    return job


def announce(comm, waiter, message):
    """Send the start-up message (pickled, once) to every other rank."""
    requests = [comm.isend(message, dest=r, tag=P.SETUP) for r in range(1, comm.size)]
    waiter.all(requests)


def main_master(comm, args, default_output, stop=None, notice=None):
    from mpi4py import MPI

    from ..analyze import format_table, summarize
    from ..config import select_points
    from ..progress import Progress
    from ..results import ResultWriter, read_results
    from ..simulate import prepare
    from ..stopping import Stop, StopFlag

    stop = stop or StopFlag()
    startup = Waiter(MPI, "polite")
    try:
        mode = resolve_wait(args.wait, comm)
        job = load_job_for(args, comm.size)
        stop.set_limit(job.config.job.time_limit)
        # every point's data, model and codes (only point I with --point I): bad input fails here
        prepared = prepare(job, select_points(job, getattr(args, "point", None)))
        out = Path(args.output) if args.output else default_output(job)
        command = shlex.join(["mpiexec", "-n", str(comm.size), "python", "-m", "gcc_mpi",
                              *sys.argv[1:]])
        writer = ResultWriter(out, config_toml=job.to_toml(), command=command,
                              mpi=MPI.Get_library_version().splitlines()[0].strip(),
                              overwrite=args.overwrite, resume=args.resume)
    except JobError as e:
        witness.done()
        announce(comm, startup, ("error", str(e)))
        print(f"gcc_mpi: error: {e}", file=sys.stderr)
        return 2
    shapes = [None] * len(job.points)  # (d, m) of each point run; None: not run (--point)
    for point, setup in prepared:
        shapes[point.index] = (setup.dataset.dim, setup.target.output_dim)
    witness.results_file(out)
    announce(comm, startup, ("ok", job.to_toml(), str(job.base_dir), shapes,
                             MPI.Get_processor_name(), os.getpid()))
    startup.check = lambda: _startup_check(notice)
    try:  # READY: (pid, host) of every other rank
        peers = {r: startup.recv_object(comm, r, P.SETUP) for r in range(1, comm.size)}
    except WorkerLost as e:
        witness.done()
        writer.close(complete=False)
        print(f"gcc_mpi: {e}", file=sys.stderr, flush=True)
        comm.Abort(1)
    ranks = {0: (os.getpid(), MPI.Get_processor_name())} | peers
    print(f"gcc_mpi: ranks by host and pid: {pid_map(ranks)}", file=sys.stderr, flush=True)

    master = Master(comm, MPI, Waiter(MPI, mode), stop, notice, peers,
                    host=MPI.Get_processor_name())
    total = len(prepared) * job.config.job.trials
    progress = Progress(total, points=len(prepared), quiet=args.quiet)
    try:
        with writer:
            master.run(prepared, writer, progress)
    except (Stop, WorkerLost) as e:  # the file is closed, complete = false
        witness.done()
        print(f"gcc_mpi: {e} after {progress.done} of {total} trials; {out} holds them "
              "(complete = false): the same command with --resume continues",
              file=sys.stderr, flush=True)
        master.waiter.check = None
        if isinstance(e, WorkerLost) or not (master.abandon() and master.shutdown(GRACE)):
            print("gcc_mpi: the workers could not be stopped in order; ending the job with "
                  "MPI_Abort", file=sys.stderr, flush=True)
            comm.Abort(e.code)
        return e.code
    if not args.quiet:
        print(format_table(summarize(read_results(out))))
    print(master.describe(), file=sys.stderr)
    print(f"wrote {out}", file=sys.stderr)
    witness.done()
    try:
        delivered = master.shutdown(GRACE)
    except WorkerLost:
        delivered = False
    if not delivered:
        print("gcc_mpi: not every worker took its EXIT; ending the job with MPI_Abort",
              file=sys.stderr, flush=True)
        comm.Abort(1)
    return 0


def pid_map(peers):
    """{rank: (pid, host)} as "host: ranks 0-6 = pids 4100-4106; ..." (or "rank=pid" pairs
    when the pids are not consecutive)."""
    by_host = {}
    for r, (pid, host) in sorted(peers.items()):
        by_host.setdefault(host, []).append((r, pid))
    parts = []
    for host, pairs in by_host.items():
        (r0, p0), (r1, p1) = pairs[0], pairs[-1]
        if all(pid - p0 == r - r0 for r, pid in pairs):
            parts.append(f"{host}: ranks {r0}-{r1} = pids {p0}-{p1}" if len(pairs) > 1
                         else f"{host}: rank {r0} = pid {p0}")
        else:
            parts.append(f"{host}: " + ", ".join(f"{r}={pid}" for r, pid in pairs))
    return "; ".join(parts)


def _startup_check(notice):
    if notice is not None and notice.count:
        raise WorkerLost("a rank died during start-up (hydra reported a dead process); "
                         "the job cannot start")


class Master:
    """The master's side of the protocol; ``run`` records every trial of the prepared points.

    ``stop``: a StopFlag (SIGTERM, SIGINT, job.time_limit); ``notice``: counts hydra's dead-
    process notices; ``peers``: {rank: (pid, host)} from READY; ``host``: this rank's host."""

    def __init__(self, comm, MPI, waiter, stop=None, notice=None, peers=None, host=None):
        self.comm, self.MPI, self.waiter = comm, MPI, waiter
        self.stop, self.notice = stop, notice
        self.peers, self.host = peers or {}, host
        self.seen_notices = 0
        self.dead = set()       # ranks that died (permanent stragglers)
        self.orphans = []       # requests to dead ranks that could not be completed
        self.current = None     # the round in flight: (buf, recvs, sends, ranks, seq, trial)
        self.where = (0, 0)     # (point, trial) in progress, for messages
        waiter.check = self._check
        self.seq = 0
        self.buffers = None
        self.stats = dict(rounds=0, tasks=0, used=0, unused=0, stopped=0, cancelled=0,
                          crossed=0, failed=0, lost=0, drain=0.0)

    def _check(self):
        if self.notice is not None and self.notice.count != self.seen_notices:
            raise RankFailure()
        if self.stop is not None:
            self.stop.check()

    # -- the run --------------------------------------------------------------------------
    def run(self, prepared, writer, progress):
        from ..simulate import stack
        from ..trial import failed_record

        for k, (point, setup) in enumerate(prepared):
            writer.add_point(point.index, point.params)
            names = list(setup.codes)
            trials = point.config.job.trials
            first = writer.align(point.index, names)
            progress.start_point(k)
            progress.skip(first)
            for t in range(first, trials):
                self.where = (point.index, t)
                try:
                    self._check()
                except RankFailure:  # a rank died between rounds
                    self._bury([], [], [])
                X, delays = setup.draw(point.index, t)
                Y_true, why = setup.reference(X)
                records = {}
                for name in names:
                    records[name] = (
                        self.round(setup, name, point.index, t, X, Y_true, delays)
                        if Y_true is not None  # else f failed on the inputs: no round at all
                        else failed_record(setup.codes[name].N, delays, why))
                for name, rec in records.items():  # the trial is written whole, or not at all
                    writer.append(point.index, name, stack([rec], [t]))
                writer.flush()
                progress.trial_done()
        progress.close()

    def round(self, setup, name, point, trial, X, Y_true, delays):
        """One scheme's record for one trial, computed by the workers."""
        from ..trial import decode_and_score, encode_record

        code, rule = setup.codes[name], setup.rules[name]
        rec, X_coded = encode_record(code, X, delays)

        buf = self._buffers(code.N, X_coded.shape[1], setup.target.output_dim)
        self.seq += 1
        seq = self.seq
        error, texts = rec["error"], [""] * code.N
        active = code.active
        if self.dead:  # permanent stragglers: no task, no reply
            alive = np.array([int(w) + 1 not in self.dead for w in active])
            for w in active[~alive]:
                error[w], texts[w] = LOST, f"rank {int(w) + 1} died earlier"
            active, X_coded = active[alive], X_coded[alive]
        n = len(active)
        P.fill_tasks(buf.task, seq, trial, point, delays[active], X_coded)
        ranks = [int(w) + 1 for w in active]
        comm, reply = self.comm, buf.reply

        t_start = time.perf_counter()
        buf.task[:n, P.SENT] = time.monotonic()
        recvs = [comm.Irecv(reply[i], source=r, tag=P.REPLY) for i, r in enumerate(ranks)]
        sends = [comm.Isend(buf.task[i], dest=r, tag=P.CTRL) for i, r in enumerate(ranks)]
        t_sent = time.perf_counter()
        self.current = (buf, recvs, sends, ranks, seq, trial)

        mask = np.zeros(code.N, bool)
        erased = 0            # FAILED replies received while waiting
        got = []              # positions (into active) of the results used, in arrival order
        arrival = rec["arrival"]
        until = None if rule.deadline is None else t_start + rule.deadline
        finished = False
        while not finished:
            try:
                done = self.waiter.some(recvs, until)
            except RankFailure:
                for i in self._bury(ranks, recvs, sends):
                    error[active[i]] = LOST
                    texts[active[i]] = f"rank {ranks[i]} died"
                continue
            now = time.perf_counter()
            if not done or (until is not None and now > until):
                break  # every worker replied, or the deadline passed
            for i in done:
                w = active[i]
                if P.check_reply(reply[i], seq, trial, ranks[i]) == P.FAILED:
                    error[w], texts[w] = self._error(ranks[i], seq, trial)
                    erased += 1
                    continue
                mask[w] = True
                got.append(i)
                arrival[w] = now - t_start
                if rule.done(mask, len(got)):
                    finished = True
                    break
        t_stop = time.perf_counter()

        received = active[got]
        rec.update(decode_and_score(code, received, buf.outputs(got), Y_true,
                                    setup.target.classifier, rec.get("alpha")))
        rec["used"][received] = True
        rec["error_text"] = summary(error, texts)
        rec["t_scatter"] = t_sent - t_start
        rec["t_wait"] = t_stop - t_sent
        rec["latency"] = rec["t_encode"] + (t_stop - t_start) + rec["t_decode"]
        self._finish(len(got), erased)
        return rec

    def _error(self, rank, seq, trial):
        """(code, text) of the ERROR message that came with rank's FAILED reply (the worker
        sent it just before)."""
        self.stats["failed"] += 1
        while rank not in self.dead:
            try:
                message = self.waiter.recv_object(self.comm, rank, P.ERROR)
                return P.check_error(message, seq, trial, rank)
            except RankFailure:
                _, recvs, sends, ranks, _, _ = self.current
                self._bury(ranks, recvs, sends)
        return LOST, f"rank {rank} died"

    def _finish(self, used, erased=0):
        """STOP every worker whose reply has not come, then complete every request of the
        round: replies that come now (late results, erasures or CANCELLED notices) are
        discarded."""
        buf, recvs, sends, ranks, seq, trial = self.current
        t0 = time.perf_counter()
        pending = [i for i, r in enumerate(recvs) if r]
        stops = [None] * len(ranks)
        for i in pending:
            stops[i] = self.comm.Isend(P.fill_control(buf.stop[i], P.STOP, seq, trial),
                                       dest=ranks[i], tag=P.CTRL)
        while True:
            try:
                self.waiter.all(recvs + sends + [s for s in stops if s is not None])
                break
            except RankFailure:
                self._bury(ranks, recvs, sends, stops)
        cancelled = 0
        for i in pending:
            if ranks[i] in self.dead:
                continue
            status = P.check_reply(buf.reply[i], seq, trial, ranks[i])
            cancelled += status == P.CANCELLED
            if status == P.FAILED:
                self._error(ranks[i], seq, trial)
        self.current = None
        s = self.stats
        s["rounds"] += 1
        s["tasks"] += len(ranks)
        s["used"] += used
        s["unused"] += len(ranks) - used - erased - len(pending)
        s["stopped"] += len(pending)
        s["cancelled"] += cancelled
        s["crossed"] += len(pending) - cancelled
        s["drain"] += time.perf_counter() - t0

    def _bury(self, ranks, recvs, sends, stops=()):
        """After hydra's notice: find the dead ranks (pids on this node), cancel this round's
        requests to them, and return the positions in ``ranks`` that died. WorkerLost when no
        dead rank can be found (it was on another node)."""
        self.seen_notices = self.notice.count
        found = set()
        give_up = time.monotonic() + FIND_DEAD
        while not found:
            found = {r for r, (pid, host) in self.peers.items() if r not in self.dead
                     and host == self.host and process_gone(pid)}
            if not found and time.monotonic() > give_up:
                raise WorkerLost("a rank died (hydra reported a dead process) but not on rank "
                                 "0's node, so rank 0 cannot tell which")
            if not found:
                time.sleep(0.02)
        point, trial = self.where
        for r in sorted(found):
            print(f"gcc_mpi: rank {r} (worker {r - 1}, pid {self.peers[r][0]}) died during "
                  f"trial {trial} of point {point}; it is a permanent straggler from now on "
                  f"(error code {LOST} in the file)", file=sys.stderr, flush=True)
        self.dead |= found
        self.stats["lost"] += len(found)
        lost = [i for i, r in enumerate(ranks) if r in found]
        for i in lost:
            for requests in (recvs, sends, stops):
                if i < len(requests) and requests[i]:
                    request = requests[i]
                    try:
                        request.Cancel()
                    except self.MPI.Exception:
                        pass
                    if requests is recvs:
                        request.Wait()  # a cancelled receive completes at once
                    else:
                        self.orphans.append(request)  # a send to the dead may never complete
                    requests[i] = self.MPI.REQUEST_NULL
        return lost

    def _buffers(self, n, d, m):
        if self.buffers is None or not self.buffers.fits(n, d, m):
            self.buffers = P.MasterBuffers(n, d, m)
        return self.buffers

    # -- the end ----------------------------------------------------------------------------
    def abandon(self, grace=GRACE):
        """After a Stop in the middle of a round: STOP its workers and receive their replies
        (each answers within a polling interval unless f is still running). True when the
        round was drained within ``grace`` seconds."""
        if self.current is None:
            return True
        buf, recvs, sends, ranks, seq, trial = self.current
        until = time.perf_counter() + grace
        pending = [i for i, r in enumerate(recvs) if r]
        stops = [self.comm.Isend(P.fill_control(buf.stop[i], P.STOP, seq, trial),
                                 dest=ranks[i], tag=P.CTRL) for i in pending]
        if not self.waiter.all(recvs + sends + stops, until):
            return False
        for i in pending:
            if P.check_reply(buf.reply[i], seq, trial, ranks[i]) == P.FAILED:
                if self.waiter.recv_object(self.comm, ranks[i], P.ERROR, until) is None:
                    return False
        self.current = None
        return True

    def shutdown(self, grace=None):
        """EXIT to every other live rank (idle ones too); True when all were delivered (within
        ``grace`` seconds if given)."""
        rows = np.zeros((self.comm.size - 1, P.HEADER))
        ranks = [r for r in range(1, self.comm.size) if r not in self.dead]
        sends = [self.comm.Isend(P.fill_control(rows[r - 1], P.EXIT), dest=r, tag=P.CTRL)
                 for r in ranks]
        until = None if grace is None else time.perf_counter() + grace
        while True:
            try:
                return self.waiter.all(sends, until)
            except RankFailure:  # one more died: forget its EXIT
                self._bury(ranks, [], sends)

    def describe(self):
        s = self.stats
        late = s["unused"] + s["crossed"]
        text = (f"gcc_mpi: {s['rounds']} rounds, {s['tasks']} tasks on {self.comm.size - 1} "
                f"worker ranks ({self.waiter.mode} waiting): {s['used']} results used, {late} "
                f"late results discarded ({s['crossed']} crossed a STOP), {s['cancelled']} tasks "
                f"cancelled while sleeping; {1e3 * s['drain'] / max(s['rounds'], 1):.2f} ms per "
                "round to stop and drain")
        if s["failed"]:
            text += f"; {s['failed']} erasures (f failed on a worker)"
        if self.dead:
            text += f"; ranks {', '.join(map(str, sorted(self.dead)))} died"
        return text
