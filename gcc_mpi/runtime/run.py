"""Rank 0's side of a run: load and check the job (before any MPI traffic, so bad input is one
line and exit 2), hand it to the workers, learn where every rank runs, run the trials with a
``Master`` (master.py) and report; on a stop (SIGTERM, SIGINT, time limit) or a lost worker,
close the file with what was committed and bring every rank down in order, or abort.
"""

import os
import re
import shlex
import signal
import sys
import time
from pathlib import Path

from ..errors import JobError
from . import protocol as P
from . import witness
from .deaths import WorkerLost
from .mpi import (IDLE_FIRST, SLEEP_IDLE, Backoff, RankFailure, Waiter, abort,
                  exit_without_finalize, fault_tolerant, library, resolve_wait)

STARTUP_SILENCE = 30.0  # seconds a worker may stay silent at start-up once all others are READY


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
    from ..outputs import refuse
    from .mpi import local_ranks

    if args.output:
        refuse(args.output, overwrite=args.overwrite, resume=args.resume)
    points = select_points(job, getattr(args, "point", None))
    prepared, warnings = preflight.checked_setup(
        job, points, ranks=comm.size, local_ranks=local_ranks(comm), simulate=False)
    preflight.report(job, warnings)
    return prepared


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

    from ..preflight import check_disk
    from ..progress import Progress
    from ..results import ResultWriter, read_results
    from ..stopping import Stop, StopFlag
    from .master import Master  # rank 0's only: workers import this module

    stop = stop or StopFlag()
    startup = Waiter(MPI, "polite")
    try:
        mode = resolve_wait(args.wait, comm)
        job = load_job_for(args, comm.size)
        stop.set_limit(job.config.job.time_limit)
        # every point's data, model and codes (only point I with --point I): bad input fails here
        t0 = time.perf_counter()
        prepared = preflight_job(job, args, comm)
        built = time.perf_counter() - t0  # the workers build f meanwhile: the handshake's bound
        out = Path(args.output) if args.output else default_output(job)
        check_disk(job, prepared, out, args.resume, simulate=False)
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
    ft = fault_tolerant(MPI)
    host = MPI.Get_processor_name()
    master = Master(comm, MPI, Waiter(MPI, mode, ft=ft), stop, notice, {}, host=host, ft=ft)
    try:
        handshake(comm, master, built)
    except WorkerLost as e:
        witness.done()
        writer.close(complete=False)
        print(f"gcc_mpi: {e}; the job cannot start", file=sys.stderr, flush=True)
        abort(comm, 1)
    print(f"gcc_mpi: ranks by host and pid: {pid_map({0: (os.getpid(), host)} | master.peers)}",
          file=sys.stderr, flush=True)
    writer.set_hosts([host] + [master.peers.get(r, (None, "?"))[1] for r in range(1, comm.size)])
    if ft:
        print("gcc_mpi: ULFM fault tolerance is on (mpiexec --with-ft ulfm): a worker that "
              "dies is a permanent straggler", file=sys.stderr, flush=True)
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
        if isinstance(e, WorkerLost) or not master.abandon():
            print("gcc_mpi: the workers could not be stopped in order; ending the job with "
                  "MPI_Abort", file=sys.stderr, flush=True)
            abort(comm, e.code)
        return finish(master, comm, e.code)
    if not args.quiet:
        from ..analyze import format_table, summarize

        print(format_table(summarize(read_results(out))))
    print(master.describe(), file=sys.stderr)
    print(f"wrote {out}", file=sys.stderr)
    witness.done()
    return finish(master, comm, 0)


def finish(master, comm, code):
    """The end of a run or a probe on rank 0, its file closed: every worker EXITed
    (``Master.shutdown``), and ``code``, the exit code, returned. When they cannot all be ended
    in order, MPI_Abort ends every process of the job, with ``code`` when only a hung worker
    stood in the way (``Stuck``: the file is whole), else with ``code`` or 1. After a death no
    rank calls MPI_Finalize, which would wait for the dead."""
    from .hung import Stuck
    from .master import GRACE

    try:
        if master.shutdown(GRACE):
            if master.deaths.dead:
                exit_without_finalize(code)
            return code
        why, code = "not every worker took its EXIT", code or 1
    except Stuck as e:
        why = str(e)
    except WorkerLost as e:
        why, code = str(e), code or 1
    print(f"gcc_mpi: {why}; ending the job with MPI_Abort", file=sys.stderr, flush=True)
    abort(comm, code)


def handshake(comm, master, built=0.0):
    """HELLO (pid, host), then READY, of every other rank (protocol), into ``master.peers``.
    A rank that dies meanwhile is buried (``Deaths``: ULFM, or hydra's notice and its pid) and
    the run goes on without it. A rank silent max(STARTUP_SILENCE, 10 x the start-up so far)
    s after the last other one answered (stopped, stuck) is ended (SIGKILL) and counts as
    dead. When no rank answers a phase within max(STARTUP_SILENCE, 10 x ``built``, the
    seconds rank 0 took to build the job: the workers build f as rank 0 did), or a death cannot
    be named (hydra's notice before the dead rank's HELLO): WorkerLost."""
    from mpi4py import MPI

    deaths, peers = master.deaths, master.peers
    start, backoff = time.perf_counter(), Backoff(IDLE_FIRST, SLEEP_IDLE)
    for phase in ("HELLO", "READY"):
        waiting, last = set(range(1, comm.size)) - deaths.dead, None
        since = time.perf_counter()
        while waiting:
            came = False
            try:
                for r in sorted(waiting):
                    message = comm.improbe(r, P.SETUP)
                    if message is not None:
                        answer = message.recv()
                        peers[r] = answer if phase == "HELLO" else peers[r]
                        waiting.discard(r)
                        last, came = time.perf_counter(), True
                deaths.check()
            except (RankFailure, MPI.Exception) as e:
                found = deaths.news(e if isinstance(e, RankFailure) else master.failure(e))
                deaths.defer(found)
                waiting -= found
            now = time.perf_counter()
            if came:
                backoff.reset()
            elif last is None and now - since > max(STARTUP_SILENCE, 10 * built):
                raise WorkerLost(f"no worker answered at start-up ({phase}) within "
                                 f"{now - since:.0f} s")
            elif last is not None and now - last > max(STARTUP_SILENCE, 10 * (last - start)):
                if phase == "HELLO":
                    raise WorkerLost(f"ranks {sorted(waiting)} did not answer at start-up")
                _end_silent(master, waiting)
                waiting = set()
            else:
                backoff.sleep()


def _end_silent(master, ranks):
    """Workers silent at start-up (stopped or stuck: they never even took the job): ended
    (SIGKILL), dead from now on."""
    hung, deaths = master.hung, master.deaths
    for rank in sorted(ranks):
        pid, host = master.peers.get(rank, (None, None))
        print(f"gcc_mpi: rank {rank} (worker {rank - 1}, pid {pid} on {host}) did not get ready "
              f"within {STARTUP_SILENCE:g} s of the others; ending it (SIGKILL)",
              file=sys.stderr, flush=True)
        deaths.expect(rank)
    hung.signal(deaths, ranks, signal.SIGKILL)


def read_pid_map(line):
    """{rank: (pid, host)} from a ``pid_map`` text (what follows "ranks by host and pid: " on
    rank 0's start-up line): how tests and benchmarks find the process of a rank."""
    ranks = {}
    for part in line.split("; "):
        host, _, rest = part.partition(": ")
        span = re.fullmatch(r"ranks (\d+)-(\d+) = pids (\d+)-(\d+)", rest)
        one = re.fullmatch(r"rank (\d+) = pid (\d+)", rest)
        if span:
            r0, r1, p0 = (int(span.group(i)) for i in (1, 2, 3))
            ranks.update({r: (p0 + r - r0, host) for r in range(r0, r1 + 1)})
        elif one:
            ranks[int(one.group(1))] = (int(one.group(2)), host)
        else:
            ranks.update({int(r): (int(p), host) for r, p in re.findall(r"(\d+)=(\d+)", rest)})
    return ranks


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
