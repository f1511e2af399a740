"""The MPI runtime: rank 0 is the master, ranks 1..N are the workers (worker n of a code is rank
n + 1). Everything that touches MPI lives in this package:

- ``mpi``:      start-up, the abort hook (an exception on any rank ends the job, exit code 1),
                how a rank waits (busy polling, or polite polling with back-off sleeps),
                hydra's dead-process notice;
- ``protocol``: the wire format (tags, float64 headers) shared by both sides;
- ``master``:   the trial loop on rank 0, calling the same trial code as the simulator;
- ``worker``:   the loop on ranks 1..: sleep the injected delay, compute f, reply (FAILED
                with the reason when f fails: an erasure).

``run_command`` is the ``python -m gcc_mpi run`` entry; importing this package does not
initialise MPI (``mpi.start`` does, when a run begins).
"""

from .. import launcher
from .mpi import WAIT_MODES  # noqa: F401  (no MPI side effect: mpi4py is imported lazily)


def run_command(args, *, simulate, default_output):
    """``python -m gcc_mpi run``: the MPI run on every rank, or, started as a single process,
    a hint on how to launch it and the same job in the simulator (``simulate(args)``).
    Returns the exit code of this rank.

    Under a launcher every rank first checks the job file and arguments on its own, before MPI
    starts: a bad job ends every rank at once with exit code 2 (one line, from rank 0). The
    data, f and memory checks (preflight) run on rank 0 only, before any work, and it tells the
    workers: those may differ between ranks (a file on one node, an f that fails on one rank),
    and one rank leaving before MPI starts would leave the others waiting in MPI_Init. Then
    SIGTERM/SIGINT and hydra's dead-process notice (SIGUSR1) are caught on every rank."""
    import sys

    from ..stopping import StopFlag
    from . import mpi

    size = launcher.launcher_size()
    if size is not None and size > 1:
        from .run import load_job_for

        load_job_for(args, size)  # JobError -> exit code 2 on every rank, no MPI involved
        mpi.before_start()
    with StopFlag() as stop:
        MPI = mpi.start()
        # after MPI_Init: replaces MPICH's own SIGUSR1 handler, which reacts to a dead peer
        # (without fault tolerance built in) by ending this rank as well
        notice = mpi.FailureNotice().install()
        comm = MPI.COMM_WORLD
        if mpi.fault_tolerant(MPI):  # a dead peer's requests fail instead of ending the rank
            comm.Set_errhandler(MPI.ERRORS_RETURN)
        if comm.size == 1:
            refusal = launcher.several_tasks_error("run")  # e.g. srun --mpi=none: N lone copies
            if refusal is not None:
                from . import witness

                witness.done()  # started if the launcher said several ranks: nobody died
                if refusal:
                    print(refusal, file=sys.stderr)
                return 2
            from .run import ranks_needed

            import shlex

            given = getattr(args, "argv", None)  # as typed: the job, -o, --set ... kept
            given = given if given is not None else (["run", args.job] if args.job else [])
            command = " ".join([getattr(args, "prog", "python -m gcc_mpi"), *map(shlex.quote,
                                                                              given)])
            print(f"gcc_mpi: this is a single process, so there are no MPI workers; launch the "
                  f"distributed run with `mpiexec -n {ranks_needed(args)} {command}` (rank 0 "
                  "and N = code.workers workers). Running the job in the simulator instead.",
                  file=sys.stderr)
            return simulate(args)
        with mpi.abort_on_error(comm):
            if comm.rank == 0:
                from .run import main_master
                code = main_master(comm, args, default_output, stop, notice)
            else:
                from .worker import main_worker
                code = main_worker(comm, args, stop, notice=notice)
        # MPI_Finalize would wait for a dead rank forever. Under ULFM every rank skips it: a rank
        # that died at the very end may be unknown to the others, and Open MPI's launcher
        # takes a rank that ends without it as a normal end (exit code 0, no message)
        return mpi.leave(code, finalize=not (notice.count or mpi.fault_tolerant(MPI)))
