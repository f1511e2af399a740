"""Rank 0: load and check the job, then run every trial over the workers and write the results.

One round = one scheme of one trial: encode (same code object as the simulator), post one
Irecv per active worker, Isend each its TASK (coded input + injected delay), then take the
completions one at a time in the order Waitsome/Testsome reports them, stamping each with its
arrival time, until ``StopRule.done`` (or the deadline) — exactly the received sets the
simulator builds from the delays. Completions after that point are not used. Decode and score
with ``decode_and_score``; then STOP every worker still busy and receive all outstanding replies
(a late result or a CANCELLED notice, discarded) so that no request is pending when the next
round starts, or at shutdown.
"""

import shlex
import sys
import time
from pathlib import Path

import numpy as np

from ..errors import JobError
from . import protocol as P
from .mpi import Waiter, resolve_wait


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


def main_master(comm, args, default_output):
    from mpi4py import MPI

    from ..analyze import format_table, summarize
    from ..config import select_points
    from ..progress import Progress
    from ..results import ResultWriter, read_results
    from ..simulate import prepare

    startup = Waiter(MPI, "polite")
    try:
        mode = resolve_wait(args.wait, comm)
        job = load_job_for(args, comm.size)
        # every point's data, model and codes (only point I with --point I): bad input fails here
        prepared = prepare(job, select_points(job, getattr(args, "point", None)))
        out = Path(args.output) if args.output else default_output(job)
        command = shlex.join(["mpiexec", "-n", str(comm.size), "python", "-m", "gcc_mpi",
                              *sys.argv[1:]])
        writer = ResultWriter(out, config_toml=job.to_toml(), command=command,
                              mpi=MPI.Get_library_version().splitlines()[0].strip(),
                              overwrite=args.overwrite, resume=args.resume)
    except JobError as e:
        announce(comm, startup, ("error", str(e)))
        print(f"gcc_mpi: error: {e}", file=sys.stderr)
        return 2
    shapes = [None] * len(job.points)  # (d, m) of each point run; None: not run (--point)
    for point, setup in prepared:
        shapes[point.index] = (setup.dataset.dim, setup.target.output_dim)
    announce(comm, startup, ("ok", job.to_toml(), str(job.base_dir), shapes,
                             MPI.Get_processor_name()))
    ready = np.zeros(comm.size)
    startup.all([comm.Irecv(ready[r:r + 1], source=r, tag=P.SETUP) for r in range(1, comm.size)])

    master = Master(comm, MPI, Waiter(MPI, mode))
    total = len(prepared) * job.config.job.trials
    with writer:
        master.run(prepared, writer, Progress(total, quiet=args.quiet))
    if not args.quiet:
        print(format_table(summarize(read_results(out))))
    print(master.describe(), file=sys.stderr)
    print(f"wrote {out}", file=sys.stderr)
    master.shutdown()
    return 0


class Master:
    """The master's side of the protocol; ``run`` records every trial of the prepared points."""

    def __init__(self, comm, MPI, waiter):
        self.comm, self.MPI, self.waiter = comm, MPI, waiter
        self.seq = 0
        self.buffers = None
        self.stats = dict(rounds=0, tasks=0, used=0, unused=0, stopped=0, cancelled=0,
                          crossed=0, drain=0.0)

    # -- the run --------------------------------------------------------------------------
    def run(self, prepared, writer, progress):
        from ..simulate import stack

        for point, setup in prepared:
            writer.add_point(point.index, point.params)
            names = list(setup.codes)
            trials = point.config.job.trials
            first = min(writer.trials_done(point.index, name) for name in names)
            progress.skip(first)
            for t in range(first, trials):
                X, Y_true, delays = setup.inputs(point.index, t)
                for name in names:
                    rec = self.round(setup, name, point.index, t, X, Y_true, delays)
                    writer.append(point.index, name, stack([rec], [t]))
                writer.flush()
                progress.trial_done()
        progress.close()

    def round(self, setup, name, point, trial, X, Y_true, delays):
        """One scheme's record for one trial, computed by the workers."""
        from ..trial import decode_and_score, empty_record

        code, rule = setup.codes[name], setup.rules[name]
        rec = empty_record(code.N)
        rec["delay"] = delays
        t0 = time.perf_counter()
        X_coded, info = code.encode(X)
        rec["t_encode"] = time.perf_counter() - t0
        rec.update(info)

        active = code.active
        n = len(active)
        buf = self._buffers(code.N, X_coded.shape[1], setup.target.output_dim)
        self.seq += 1
        seq = self.seq
        P.fill_tasks(buf.task, seq, trial, point, delays[active], X_coded)
        ranks = [int(w) + 1 for w in active]
        comm, reply = self.comm, buf.reply

        t_start = time.perf_counter()
        buf.task[:n, P.SENT] = time.monotonic()
        recvs = [comm.Irecv(reply[i], source=r, tag=P.REPLY) for i, r in enumerate(ranks)]
        sends = [comm.Isend(buf.task[i], dest=r, tag=P.CTRL) for i, r in enumerate(ranks)]
        t_sent = time.perf_counter()

        mask = np.zeros(code.N, bool)
        got = []              # positions (into active) of the results used, in arrival order
        arrival = rec["arrival"]
        until = None if rule.deadline is None else t_start + rule.deadline
        finished = False
        while not finished:
            done = self.waiter.some(recvs, until)
            now = time.perf_counter()
            if not done or (until is not None and now > until):
                break  # every worker replied, or the deadline passed
            for i in done:
                P.check_reply(reply[i], seq, trial, ranks[i])
                w = active[i]
                mask[w] = True
                got.append(i)
                arrival[w] = now - t_start
                if rule.done(mask, len(got)):
                    finished = True
                    break
        t_stop = time.perf_counter()

        received = active[got]
        rec.update(decode_and_score(code, received, buf.outputs(got), Y_true,
                                    setup.target.classifier, info.get("alpha")))
        rec["used"][received] = True
        rec["t_scatter"] = t_sent - t_start
        rec["t_wait"] = t_stop - t_sent
        rec["latency"] = rec["t_encode"] + (t_stop - t_start) + rec["t_decode"]
        self._finish(buf, recvs, sends, ranks, seq, trial, len(got))
        return rec

    def _finish(self, buf, recvs, sends, ranks, seq, trial, used):
        """STOP every worker whose reply has not come, then complete every request of the
        round: replies that come now (late results or CANCELLED notices) are discarded."""
        t0 = time.perf_counter()
        pending = [i for i, r in enumerate(recvs) if r]
        stops = [self.comm.Isend(P.fill_control(buf.stop[i], P.STOP, seq, trial),
                                 dest=ranks[i], tag=P.CTRL) for i in pending]
        self.waiter.all(recvs + sends + stops)
        cancelled = sum(P.check_reply(buf.reply[i], seq, trial, ranks[i]) == P.CANCELLED
                        for i in pending)
        s = self.stats
        s["rounds"] += 1
        s["tasks"] += len(ranks)
        s["used"] += used
        s["unused"] += len(ranks) - used - len(pending)
        s["stopped"] += len(pending)
        s["cancelled"] += cancelled
        s["crossed"] += len(pending) - cancelled
        s["drain"] += time.perf_counter() - t0

    def _buffers(self, n, d, m):
        if self.buffers is None or not self.buffers.fits(n, d, m):
            self.buffers = P.MasterBuffers(n, d, m)
        return self.buffers

    # -- the end ----------------------------------------------------------------------------
    def shutdown(self):
        """EXIT to every other rank (idle ones too); returns when all were delivered."""
        rows = np.zeros((self.comm.size - 1, P.HEADER))
        sends = [self.comm.Isend(P.fill_control(rows[r - 1], P.EXIT), dest=r, tag=P.CTRL)
                 for r in range(1, self.comm.size)]
        self.waiter.all(sends)

    def describe(self):
        s = self.stats
        late = s["unused"] + s["crossed"]
        return (f"gcc_mpi: {s['rounds']} rounds, {s['tasks']} tasks on {self.comm.size - 1} worker "
                f"ranks ({self.waiter.mode} waiting): {s['used']} results used, {late} late "
                f"results discarded ({s['crossed']} crossed a STOP), {s['cancelled']} tasks "
                f"cancelled while sleeping; {1e3 * s['drain'] / max(s['rounds'], 1):.2f} ms per "
                "round to stop and drain")
