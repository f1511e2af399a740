"""``python -m gcc_mpi probe``: measure each worker's real task times over MPI (the file format
and its analysis are gcc_mpi/probe.py).

Rank 0 drives the run's own ``Master`` one round at a time (``Master.round``), on a probe job
made from the user's: every rank but 0 is a worker and computes the job's f on a real input of
its own — scheme "uncoded" with K = N = ranks - 1, so worker w gets row w of a fresh batch
every round — no delay is injected and the master waits for every result (decode.wait =
"all"). So the probe goes through the same messages, waiting and polling as a run, and the
Master stamps each result's arrival since its round's send exactly as in a run. The workers
run the usual worker loop with f wrapped in a timer, and send rank 0 their list of compute
times once, after EXIT (the hot path stays as in a run). SIGTERM/SIGINT stop the rounds as in a
run; the rounds finished are written (complete = false), exit code 143/130.
"""

import os
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from .. import launcher
from ..errors import JobError
from . import mpi
from . import protocol as P
from . import witness

DEFAULT_ROUNDS = 300
REPORT_GRACE = 10.0  # seconds for the workers' compute times after EXIT


def probe_job(args, size):
    """The probe's job on ``size`` ranks: the user's job (or the default one), its first sweep
    point, with every rank but 0 a worker on its own input and nothing injected."""
    from ..config import Job, Point, replace

    job = user_job(args)
    n = size - 1
    config = replace(job.points[0].config, {
        "code.workers": n, "data.batch": n, "code.schemes": ["uncoded"],
        "stragglers.model": "none", "decode.wait": "all", "decode.deadline": None,
        "decode.pipeline": 1, "job.trials": args.rounds})
    return Job(config, {}, [Point(0, {}, config)], job.source, job.base_dir)


def user_job(args):
    from ..config import load_default_job, load_job, parse_override

    overrides = [parse_override(s) for s in args.overrides]
    return load_job(args.job, overrides) if args.job else load_default_job(overrides)


class Timer:
    """A worker's side of the probe: times every call of f, reports the times after EXIT and
    its BYE (protocol)."""

    def __init__(self):
        self.times = []

    def wrap(self, targets):
        return [None if t is None else _Timed(t, self.times) for t in targets]

    def report(self, comm, waiter):
        waiter.all([comm.isend(self.times, dest=0, tag=P.SETUP)],
                   time.perf_counter() + REPORT_GRACE)


class _Timed:
    def __init__(self, target, times):
        self.target, self.times = target, times
        self.output_dim = target.output_dim

    def __call__(self, X):
        from ..erasures import call

        t0 = time.perf_counter()
        try:
            return call(self.target, X)
        finally:
            self.times.append(time.perf_counter() - t0)


def probe_command(args):
    """Every rank's entry; returns its exit code. As a single process: a hint, exit code 2."""
    from ..stopping import StopFlag

    size = launcher.launcher_size()
    step = launcher.launched_tasks()
    if size is None and step is not None:  # an srun step without PMI-2 (PMIx, none): MPI says
        size = step[0]
    if size is None or size < 2:
        probe_job(args, 2)  # bad input: its own line first
        ranks = user_job(args).points[0].config.code.workers + 1
        raise JobError("probe", "needs MPI workers and this is a single process: launch it "
                                f"with `mpiexec -n {ranks} python -m gcc_mpi probe"
                                f"{' ' + args.job if args.job else ''}` (every rank but 0 is "
                                "a worker; use the ranks the run will use)")
    probe_job(args, size)  # JobError -> exit code 2 on every rank, no MPI involved
    mpi.before_start()
    with StopFlag() as stop:
        MPI = mpi.start()
        notice = mpi.FailureNotice().install()
        comm = MPI.COMM_WORLD
        if comm.size == 1:  # e.g. srun --mpi=none: lone copies; one line, from task 0
            witness.done()
            refusal = launcher.several_tasks_error("run")
            if refusal:
                print(refusal, file=sys.stderr)
            return 2
        with mpi.abort_on_error(comm):
            if comm.rank == 0:
                code = probe_master(comm, MPI, args, stop, notice)
            else:
                from .worker import main_worker
                code = main_worker(comm, args, stop, timer=Timer())
        return mpi.leave(code, finalize=not notice.count)


def probe_master(comm, MPI, args, stop, notice):
    from ..outputs import default_output, refuse
    from ..traces import reference_work, write_probe
    from ..progress import Progress
    from ..stopping import Stop
    from ..setup import PointSetup
    from .master import GRACE, Master, WorkerLost
    from .run import announce, handshake, pid_map

    startup = mpi.Waiter(MPI, "polite")
    try:
        mode = mpi.resolve_wait(args.wait, comm)
        job = probe_job(args, comm.size)
        setup = PointSetup.build(job.config, job.base_dir)
        out = Path(args.output) if args.output else default_output(job, kind="probe")
        refuse(out, overwrite=args.overwrite)
    except JobError as e:
        witness.done()
        announce(comm, startup, ("error", str(e)))
        print(f"gcc_mpi: error: {e}", file=sys.stderr)
        return 2
    witness.results_file(out)
    host = MPI.Get_processor_name()
    announce(comm, startup, ("ok", job.to_toml(), str(job.base_dir),
                             [(setup.dataset.dim, setup.target.output_dim)], host, os.getpid()))
    ft = mpi.fault_tolerant(MPI)
    master = Master(comm, MPI, mpi.Waiter(MPI, mode, ft=ft), stop, notice, {}, host=host, ft=ft)
    try:
        handshake(comm, master)
    except WorkerLost as e:
        witness.done()
        print(f"gcc_mpi: {e}; the probe cannot start", file=sys.stderr, flush=True)
        mpi.abort(comm, 1)
    peers = master.peers
    print(f"gcc_mpi: probe: ranks by host and pid: {pid_map({0: (os.getpid(), host)} | peers)}",
          file=sys.stderr, flush=True)

    W, rounds = comm.size - 1, args.rounds
    master.listen()  # the workers' NOTICEs, as in a run (their BYE comes after EXIT)
    master.open(setup, 0, 1)
    arrival = np.full((rounds, W), np.nan)
    master_work = np.full(rounds, np.nan)
    progress = Progress(rounds, quiet=args.quiet)
    done, stopped = 0, None
    try:
        for t in range(rounds):
            X, delays = setup.draw(0, t)  # model "none": no delay
            Y_true = setup.reference(X)[0]
            if Y_true is None:  # f fails on this batch on rank 0: the workers' erasures say so
                Y_true = np.ones((W, setup.target.output_dim))
            arrival[t] = master.round(setup, "uncoded", 0, t, X, Y_true, delays)["arrival"]
            # between rounds, as a run's decode: the workers wait for their next task
            master_work[t] = reference_work()
            done = t + 1
            progress.trial_done()
        master.close()
    except Stop as e:
        stopped = e
        master.waiter.check = None
        if not master.abandon():
            mpi.abort(comm, e.code)
    progress.close()
    witness.done()
    try:
        why = None if master.shutdown(GRACE) else "not every worker took its EXIT"
    except WorkerLost as e:  # a hung worker that even SIGCONT does not bring back (hung)
        why = str(e)
    if why:
        print(f"gcc_mpi: {why}; ending the job with MPI_Abort", file=sys.stderr, flush=True)
        mpi.abort(comm, 1)
    until = time.perf_counter() + REPORT_GRACE
    compute = np.full((done, W), np.nan)
    for r in range(1, comm.size):
        if r in master.deaths.dead:
            continue
        times = startup.recv_object(comm, r, P.SETUP, until)
        if times is None:
            print(f"gcc_mpi: rank {r} did not send its compute times", file=sys.stderr)
            continue
        n = min(len(times), done)
        compute[:n, r - 1] = times[:n]
    command = shlex.join(["mpiexec", "-n", str(comm.size), "python", "-m", "gcc_mpi",
                          *sys.argv[1:]])
    hosts = [peers.get(r, (None, "?"))[1] for r in range(1, comm.size)]
    write_probe(out, arrival[:done], compute, hosts, range(1, comm.size),
                complete=stopped is None, config=job.to_toml(),
                command=command, mpi=mpi.library(MPI),
                master_host=host, master=master_work[:done])
    if stopped is not None:
        print(f"gcc_mpi: {stopped} after {done} of {rounds} rounds; {out} holds them "
              "(complete = false)", file=sys.stderr)
        return stopped.code
    if not args.quiet:
        from ..probe_report import format_probe, summarize_probe
        from ..traces import read_probe

        print(format_probe(summarize_probe(read_probe(out))))
    print(f"wrote {out}", file=sys.stderr)
    return 0
