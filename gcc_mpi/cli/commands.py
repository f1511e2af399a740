"""What each command does with its parsed arguments (``__main__`` parses and dispatches): load
the job once, build what the command needs from the arguments, call the layer that does the
work. Nothing is imported before a command needs it: an MPI worker runs this module too, and
imports only the job's parser and its f.
"""

import logging
import os
import shlex
from pathlib import Path

from ..errors import JobError
from ..files.outputs import default_output
from ..logs import PLAIN

log = logging.getLogger(__name__)


def load_job_from(args, defaults=None):
    """The job the arguments name (the default job without a file), with their ``--set``
    overrides: the one way every command loads it."""
    from ..job.default_job import load

    return load(args.job, args.overrides, defaults)


def points_of(args, job):
    from ..job.config import select_points

    return select_points(job, getattr(args, "point", None))


def job_for_ranks(args, ranks):
    """The job for a run on ``ranks`` ranks: code.workers defaults to ranks - 1 (a value the job
    file or --set gives wins) and may not exceed it."""
    try:
        job = load_job_from(args, {"code.workers": ranks - 1})
    except JobError as e:
        if e.key not in ("code.workers", "stragglers.count", "decode.stragglers") or \
                refused_anyway(args, e):  # the job's own N: validate's line, not the ranks'
            raise
        message = str(e).removeprefix(f"{e.key}: ")
        raise JobError(e.key, f"{message} (with {ranks} ranks, code.workers is ranks - 1 = "
                              f"{ranks - 1} unless the job sets it; start more ranks)") from None
    most = max(p.config.code.workers for p in points_of(args, job))
    if most > ranks - 1:
        raise JobError("code.workers", f"must be <= ranks - 1 = {ranks - 1} (rank 0 is the "
                                       f"master and {ranks} ranks were started), got {most}")
    return job


def refused_anyway(args, e):
    """Whether the job is refused with the same line ``e`` without the ranks' code.workers."""
    try:
        load_job_from(args)
    except JobError as again:
        return str(again) == str(e)
    return False


def launched_ranks():
    """The ranks this process is one of, as the launcher's environment says (None: none)."""
    from ..core.launcher import launched_tasks, launcher_size

    size = launcher_size()
    if size is None and launched_tasks() is not None:  # an srun step without PMI-2
        size = launched_tasks()[0]
    return size


def recorded_command(args, ranks=None):
    """What an output records as the command that wrote it: the arguments as parsed (``main``'s
    argv); for an MPI run, the launcher's own command line as typed when rank 0 can read it
    (``core.launcher.launch_command``: its options, such as ``--with-ft ulfm`` or a hostfile,
    are how the ranks ran), else behind ``srun -n RANKS`` or ``mpiexec -n RANKS`` as the
    environment tells."""
    from ..core.launcher import launch_command, launcher_rank

    ours = shlex.join(["python", "-m", "gcc_mpi", *args.argv])
    if not ranks:
        return ours
    typed = launch_command() if not launcher_rank() else None  # rank 0's is the one kept
    if typed:  # a launcher that runs a script: what each rank runs after it
        return typed if "gcc_mpi" in typed else f"{typed}  # each rank: {ours}"
    launcher = "srun" if os.environ.get("SLURM_STEP_ID", "").isdigit() else "mpiexec"
    return f"{launcher} -n {ranks} {ours}"


def cmd_run(args):
    """Every rank's ``run``; as a single process, how to launch it and the job simulated."""
    ranks = launched_ranks()
    if ranks is None or ranks < 2:
        return single_process(args)
    from ..runtime import session

    job = job_for_ranks(args, ranks)  # bad input: exit 2 on every rank, before MPI starts
    spec = session.Spec(job, tuple(points_of(args, job)),
                        Path(args.output) if args.output else default_output(job, args.point),
                        overwrite=args.overwrite, resume=args.resume, wait=args.wait,
                        quiet=args.quiet, command=recorded_command(args, ranks),
                        summary=results_table, named=suspected)
    return session.run(spec)


def single_process(args):
    """``run`` without MPI workers: say how to launch it (the ranks the job needs), then run
    the same job in the simulator."""
    job = load_job_from(args)  # the job as written: the default job's own N
    ranks = 1 + max(p.config.code.workers for p in points_of(args, job))
    given = args.argv if args.argv else (["run", args.job] if args.job else [])
    command = " ".join([args.prog, *map(shlex.quote, given)])
    log.info("this is a single process, so there are no MPI workers; launch the distributed "
             "run with `mpiexec -n %s %s` (rank 0 and N = code.workers workers). Running the "
             "job in the simulator instead.", ranks, command)
    return cmd_simulate(args)


def results_table(path):
    from ..reports.analyze import format_table, table_note
    from ..reports.statistics import summarize
    from ..files.reader import read_results

    rows = summarize(read_results(path))
    note = table_note(rows)
    return format_table(rows) + (f"\n{note}" if note else "")


def suspected(path):
    """The "suspected: ..." lines of a complete results file (the workers a robust decoder kept
    flagging), as ``analyze`` says them: the end lines of ``run`` and ``simulate``."""
    from ..reports.suspects import suspect_lines
    from ..files.reader import read_results

    return suspect_lines(read_results(path))


def cmd_simulate(args):
    from ..core.driver import JobRun
    from ..core.interrupts import InterruptFlag, Interrupted
    from ..core.launcher import several_tasks_error

    refusal = several_tasks_error("simulate")  # srun -n 3 ... simulate: 3 copies, one file
    if refusal is not None:
        if refusal:
            log.error("%s", refusal)
        return 2
    interrupts = InterruptFlag()  # job.time_limit counts from here
    job = load_job_from(args)
    point = getattr(args, "point", None)
    out = Path(args.output) if args.output else default_output(job, point)
    run = JobRun(job, points_of(args, job), out, interrupts=interrupts,
                 overwrite=args.overwrite, resume=getattr(args, "resume", False),
                 command=recorded_command(args), quiet=args.quiet, summary=results_table,
                 named=suspected)
    try:
        with interrupts:
            run.simulate()
    except Interrupted as e:  # the file is closed with complete = false and every finished trial
        return run.stopped(e)
    return run.completed()


def cmd_probe(args):
    """Every rank's ``probe``; as a single process, one line saying how to launch it."""
    from ..runtime.probe import probe_job

    if args.rounds < 1:
        raise JobError("--rounds", f"must be an integer >= 1, got {args.rounds}")
    user = load_job_from(args)
    ranks = launched_ranks()
    if ranks is None or ranks < 2:
        probe_job(user, 2, args.rounds)  # bad input: its own line first
        workers = user.points[0].config.code.workers
        raise JobError("probe", "needs MPI workers and this is a single process: launch it "
                                f"with `mpiexec -n {workers + 1} python -m gcc_mpi probe"
                                f"{' ' + args.job if args.job else ''}` (every rank but 0 is "
                                "a worker; use the ranks the run will use)")
    from ..runtime import session

    job = probe_job(user, ranks, args.rounds)  # bad input: exit 2 on every rank, before MPI
    output = Path(args.output) if args.output else default_output(job, kind="probe")
    spec = session.Spec(job, tuple(job.points), output, overwrite=args.overwrite,
                        wait=args.wait, quiet=args.quiet, command=recorded_command(args, ranks),
                        probe_rounds=args.rounds, summary=probe_table)
    return session.run(spec)


def probe_table(path):
    from ..reports.probe import format_probe, summarize_probe
    from ..files.traces import read_probe

    return format_probe(summarize_probe(read_probe(path)))


def cmd_plan(args):
    from ..reports.plan import main_plan

    return main_plan(load_job_from(args), args.trace, args.target_nmse,
                     max_workers=args.max_workers, schemes=args.schemes, trials=args.trials,
                     write=args.write, overwrite=args.overwrite, json_out=args.json,
                     plot=args.plot, adversaries=args.adversaries,
                     command=recorded_command(args))


def cmd_analyze(args):
    from ..reports.analyze import main_analyze

    return main_analyze(args.paths, json=args.json, csv=args.csv, rate=args.rate,
                        plot=args.plot, html=args.html, labels=args.labels,
                        overwrite=args.overwrite)


def cmd_merge(args):
    from ..files.merge import merge

    report = merge(args.paths, args.output, overwrite=args.overwrite,
                   command=recorded_command(args))
    log.info("%s", report, extra=PLAIN)
    return 0


def cmd_validate(args):
    from ..api import check

    job = load_job_from(args)
    check(job, say=True)  # what simulate and run check before any work, the same function
    print(job.to_toml(), end="")
    log.info("# %s sweep point(s), %s trials each: valid", len(job.points),
             job.config.job.trials, extra=PLAIN)
    return 0


COMMANDS = {"run": cmd_run, "simulate": cmd_simulate, "analyze": cmd_analyze,
            "merge": cmd_merge, "validate": cmd_validate, "probe": cmd_probe, "plan": cmd_plan}
