"""Rank 0's side of a run: load and check the job (before any MPI traffic, so bad input is one
line and exit 2), hand it to the workers, learn where every rank runs, run the trials with a
``Master`` (master.py) and report; on a stop (SIGTERM, SIGINT, time limit) or a lost worker,
close the file with what was committed and bring every rank down in order, or abort.
"""

import os
import shlex
import sys
from pathlib import Path

from ..errors import JobError
from . import protocol as P
from . import witness
from .mpi import Waiter, abort, fault_tolerant, library, resolve_wait


def load_job_for(args, size):
    """The job for a run on ``size`` ranks: code.workers defaults to size - 1 (a value the job
    file or --set gives wins) and may not exceed it. ``size`` None: the job as written."""
    from ..config import load_default_job, load_job, parse_override, select_points

    overrides = [parse_override(s) for s in args.overrides]
    if size is None:  # one process: the job as written (the default job's own N)
        return load_job(args.job, overrides) if args.job else load_default_job(overrides)
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


def preflight_job(job, args, comm):
    """Rank 0, before any work: the data, f and memory checks of ``validate`` (a JobError, which
    the caller announces to the workers); prints the default job's choice and the warnings."""
    from .. import preflight
    from ..config import select_points
    from .mpi import local_ranks

    if args.output:
        preflight.check_output(args.output, args.overwrite, args.resume)
    points = select_points(job, getattr(args, "point", None))
    warnings = preflight.check(job, points, ranks=comm.size, local_ranks=local_ranks(comm),
                               simulate=False)
    preflight.report(job, warnings)


def ranks_needed(args):
    """Ranks a run of the job needs (rank 0 and the most workers of any point run): what a
    single process suggests to launch it with."""
    from ..config import select_points

    job = load_job_for(args, None)
    return 1 + max(p.config.code.workers for p in select_points(job, getattr(args, "point", None)))


def announce(comm, waiter, message):
    """Send the start-up message (pickled, once) to every other rank."""
    requests = [comm.isend(message, dest=r, tag=P.SETUP) for r in range(1, comm.size)]
    waiter.all(requests)


def main_master(comm, args, default_output, stop=None, notice=None):
    from mpi4py import MPI

    from ..config import select_points
    from ..job import prepare
    from ..progress import Progress
    from ..results import ResultWriter, read_results
    from ..stopping import Stop, StopFlag
    from .master import GRACE, Master, WorkerLost  # rank 0's only: workers import this module

    stop = stop or StopFlag()
    startup = Waiter(MPI, "polite")
    try:
        mode = resolve_wait(args.wait, comm)
        job = load_job_for(args, comm.size)
        preflight_job(job, args, comm)
        stop.set_limit(job.config.job.time_limit)
        # every point's data, model and codes (only point I with --point I): bad input fails here
        prepared = prepare(job, select_points(job, getattr(args, "point", None)))
        out = Path(args.output) if args.output else default_output(job)
        command = shlex.join(["mpiexec", "-n", str(comm.size), "python", "-m", "gcc_mpi",
                              *sys.argv[1:]])
        writer = ResultWriter(out, config_toml=job.to_toml(), command=command,
                              mpi=library(MPI),
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
        abort(comm, 1)
    ranks = {0: (os.getpid(), MPI.Get_processor_name())} | peers
    print(f"gcc_mpi: ranks by host and pid: {pid_map(ranks)}", file=sys.stderr, flush=True)

    ft = fault_tolerant(MPI)
    if ft:  # a dead worker's requests then complete with an error instead of ending the job
        comm.Set_errhandler(MPI.ERRORS_RETURN)
        print("gcc_mpi: ULFM fault tolerance is on (mpiexec --with-ft ulfm): a worker that "
              "dies is a permanent straggler", file=sys.stderr, flush=True)
    master = Master(comm, MPI, Waiter(MPI, mode, ft=ft), stop, notice, peers,
                    host=MPI.Get_processor_name(), ft=ft)
    master.listen()
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
            abort(comm, e.code)
        return e.code
    if not args.quiet:
        from ..analyze import format_table, summarize

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
        abort(comm, 1)
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
    from .master import WorkerLost

    if notice is not None and notice.count:
        raise WorkerLost("a rank died during start-up (hydra reported a dead process); "
                         "the job cannot start")
