"""One owner of an MPI rank's life: start-up, handshake, rounds, ending, leaving.

``run(spec)`` is every rank's entry for ``run`` and ``probe`` (the command line builds the
``Spec`` from its arguments, and has loaded the job on every rank before MPI starts, so that a
bad job ends every rank at once with exit code 2); ``block`` is a block of rounds inside an MPI
program that is already up (the benchmarks run several, each its own configuration). Nothing
else puts these steps together.

Rank 0 (``lead``), in order:

1. the job set up and checked (``work.prepare``: data, f, codes, the output file; a JobError is
   announced to every worker, exit code 2 everywhere);
2. the start-up message and the handshake (``startup``): pids and hosts, f built everywhere;
3. the rounds (``work.run_rounds``), listening to the workers' NOTICEs all along;
4. the ending (``ending``): after an interruption the rounds in flight are abandoned; every
   worker is sent EXIT and says BYE; when that cannot be done, or the job cannot start or go
   on, MPI_Abort ends every process of the job with one line saying why.

Until rank 0 decides to end the job itself (the ``witness.watching`` block), its witness names
a rank whose death ends the job. A worker (``worker.serve_run``) takes its start-up message,
builds f, answers HELLO and READY and serves TASKs until EXIT. Every rank then leaves: with
MPI_Finalize, or without it after a death or under ULFM, where Finalize could wait for the dead.
"""

import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..core import launcher
from ..errors import JobError
from ..core.interrupts import InterruptFlag, Interrupted
from . import mpi, protocol, witness
from .deaths import WorkerLost
from .mpi import SLEEP_IDLE, Waiter, abort, fault_tolerant, resolve_wait

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Spec:
    """What a run or a probe is to do, from the command line (or a script): the same on every
    rank."""

    job: object                 # the loaded job (config.Job), with every default filled in
    points: tuple               # the sweep points to run (``--point I``: one)
    output: Path                # the file rank 0 writes
    overwrite: bool = False     # replace an existing output
    resume: bool = False        # continue an existing output (a run)
    wait: str | None = None     # how ranks wait: auto, busy, polite (None: $GCC_MPI_WAIT or auto)
    quiet: bool = False         # no progress and no table
    command: str = ""           # what the output records as its command
    probe_rounds: int = 0       # > 0: a probe of that many rounds instead of a run
    # rank 0, once the output is complete: the text to print for it (the command line's table)
    summary: object = field(default=None, compare=False)
    # rank 0, once the output is complete: the lines naming the workers it accuses (suspects)
    named: object = field(default=None, compare=False)


class Work(Protocol):
    """What rank 0's part of a run (``run.RunWork``) or a probe (``probe.ProbeWork``) provides to
    ``lead``, which calls it in this order around the lifecycle's own steps."""

    what: str               # what cannot start ("job", "probe"), for the line that says so
    heading: str            # the start of the ranks' line ("", "probe: ")
    stuck_code: int | None  # the exit code when only MPI_Abort ends a hung worker (None: the
    #                         run's own code)
    spec: Spec
    events: object          # where the Master records a lost or hung worker (None: nowhere)

    def prepare(self) -> list:
        """Before the start-up message: the job checked and set up, the output refused or
        opened (JobError: bad input, announced to every worker); the (d, m) of each sweep
        point, None for one not run."""

    def cannot_start(self) -> None:
        """The handshake failed (a worker lost): let go of what ``prepare`` opened."""

    def started(self, master) -> None:
        """After the handshake: the ranks' pids and hosts are known (``master.peers``)."""

    def run_rounds(self, master) -> None:
        """Every round of the work with ``master`` as the engine; raises Interrupted or
        WorkerLost when it ends early."""

    def complete(self, master) -> None:
        """Every round done: the end-of-job lines of a complete work."""

    def interrupted(self, e) -> None:
        """The rounds ended early with ``e`` (Interrupted, WorkerLost): what was kept is said,
        before the rounds in flight are abandoned."""

    def finished(self, master, code, interrupted) -> int:
        """After every worker's EXIT: anything left (the probe's file); the exit code."""


def run(spec):
    """This rank's part of the MPI run or probe of ``spec``; its exit code. MPI turns out to be
    a single process while the launcher said several ranks (srun without PMI: lone copies):
    exit code 2, with one line from task 0."""
    if (launcher.launcher_size() or 0) > 1:  # not lone copies (srun without PMI)
        mpi.before_start()
    with InterruptFlag() as interrupts:
        MPI = mpi.start()
        # after MPI_Init: replaces MPICH's own SIGUSR1 handler, which reacts to a dead peer
        # (without fault tolerance built in) by ending this rank as well
        notice = mpi.FailureNotice().install()
        comm = MPI.COMM_WORLD
        if mpi.fault_tolerant(MPI):  # a dead peer's requests fail instead of ending the rank
            comm.Set_errhandler(MPI.ERRORS_RETURN)
        if comm.size == 1:
            witness.done()  # started, since the launcher said several ranks: nobody died
            refusal = launcher.several_tasks_error("run")
            if refusal:
                log.error("%s", refusal)
            return 2
        finalize = True
        with mpi.abort_on_error(comm):
            if comm.rank == 0:
                code, finalize = lead(comm, MPI, spec, interrupts, notice)
            else:
                from .worker import serve_run

                timer = _probe().Timer() if spec.probe_rounds else None
                code = serve_run(comm, MPI, spec, interrupts, notice, timer)
        # MPI_Finalize would wait for a dead rank forever. Under ULFM every rank skips it: a rank
        # that died at the very end may be unknown to the others, and Open MPI's launcher
        # takes a rank that ends without it as a normal end (exit code 0, no message)
        return mpi.leave(code, finalize=finalize and not (notice.count or fault_tolerant(MPI)))


def _probe():
    from . import probe

    return probe


@dataclass
class Ending:
    """How rank 0's part ends, once decided: its exit code and what went wrong, if anything."""

    code: int
    master: object = None
    refused: JobError = None        # before the workers were told: they are told now
    cannot_start: WorkerLost = None
    interrupted: Exception = None   # Interrupted, or WorkerLost during the rounds


def lead(comm, MPI, spec, interrupts, notice):
    """Rank 0's whole run or probe; (exit code, whether MPI_Finalize is safe: no rank died)."""
    from .run import RunWork

    work: Work = (_probe().ProbeWork if spec.probe_rounds else RunWork)(spec, comm, MPI,
                                                                          interrupts)
    with witness.watching(spec.output):  # until rank 0 itself ends the job
        end = _until_the_end(comm, MPI, work, interrupts, notice)
    code = _end(comm, MPI, work, end)
    return code, end.master is None or not end.master.deaths.dead


def _until_the_end(comm, MPI, work, interrupts, notice):
    """Rank 0 from the job's checks to its last round, or to what ended it first."""
    from .master import Master
    from .startup import announce, handshake, pid_map

    try:
        mode = resolve_wait(work.spec.wait, comm)
        t0 = time.perf_counter()
        shapes = work.prepare()
        built = time.perf_counter() - t0  # the workers build f meanwhile: the handshake's bound
    except JobError as e:
        return Ending(2, refused=e)
    host = MPI.Get_processor_name()
    announce(comm, Waiter(MPI, "polite"), ("ok", protocol.digest(work.spec.job), shapes, host,
                                          os.getpid()))
    ft = fault_tolerant(MPI)
    master = Master(comm, MPI, Waiter(MPI, mode, ft=ft), interrupts, notice, {}, host=host,
                    ft=ft, events=work.events)
    try:
        handshake(comm, master, built)
    except WorkerLost as e:
        return Ending(1, master, cannot_start=e)
    witness.started()
    log.info("%sranks by host and pid: %s", work.heading,
             pid_map({0: (os.getpid(), host)} | master.peers))
    work.started(master)
    if ft:
        log.info("ULFM fault tolerance is on (mpiexec --with-ft ulfm): a worker that dies is a "
                 "permanent straggler")
    master.listen()
    try:
        work.run_rounds(master)
    except (Interrupted, WorkerLost) as e:
        return Ending(e.code, master, interrupted=e)
    work.complete(master)
    return Ending(0, master)


def _end(comm, MPI, work, end):
    """Carry out rank 0's ``end``: tell the workers of a refused job, abort a job that cannot
    start or go on, abandon the rounds of an interrupted one, let every worker go."""
    from .ending import abandon, finish
    from .startup import announce

    if end.refused is not None:
        announce(comm, Waiter(MPI, "polite"), ("error", str(end.refused)))
        log.error("%s", end.refused)
        return 2
    if end.cannot_start is not None:
        work.cannot_start()
        log.critical("%s; the %s cannot start", end.cannot_start, work.what)
        abort(comm, 1)
    if end.interrupted is not None:
        work.interrupted(end.interrupted)
        if isinstance(end.interrupted, WorkerLost) or not abandon(end.master):
            log.critical("the workers could not be stopped in order; ending the job with "
                         "MPI_Abort")
            abort(comm, end.code)
    code = finish(end.master, end.code, work.stuck_code)
    return work.finished(end.master, code, end.interrupted)


def block(comm, MPI, mode, drive, *, setup=None, targets=None, shared_clock=False):
    """One block of rounds on every rank of an MPI program that is already up: rank 0 makes a
    ``Master`` (its slots opened for ``setup``'s point when given), listens, calls
    ``drive(master)`` and lets every worker go (``ending.shutdown``; MPI_Abort when it cannot
    within GRACE), and returns what ``drive`` returned; a worker serves its TASKs with
    ``targets`` (f of each sweep point, ``worker.build_targets``) until then and returns None.
    Neither rank handles signals here: the program that calls it does."""
    from .ending import shutdown, unfinished
    from .master import Master
    from .worker import Worker

    if comm.rank != 0:
        Worker(comm, MPI, Waiter(MPI, mode, hi=SLEEP_IDLE), targets,
               shared_clock=shared_clock).serve()
        return None
    master = Master(comm, MPI, Waiter(MPI, mode))
    if setup is not None:
        master.open(setup, 0, 1)
    master.listen()
    try:
        return drive(master)
    finally:
        standing = shutdown(master)
        if standing:
            log.critical("%s; ending the job with MPI_Abort", unfinished(master, standing))
            abort(comm, 1)
        master.close()
