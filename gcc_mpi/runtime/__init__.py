"""The MPI runtime: rank 0 is the master, ranks 1..N are the workers (worker n of a code is rank
n + 1). Everything that touches MPI lives in this package:

- ``mpi``:      start-up, the abort hook (an exception on any rank ends the job, exit code 1),
                how a rank waits (busy MPI calls, or polite polling with back-off sleeps);
- ``protocol``: the wire format (tags, float64 headers) shared by both sides;
- ``master``:   the trial loop on rank 0, calling the same trial code as the simulator;
- ``worker``:   the loop on ranks 1..: sleep the injected delay, compute f, reply.

``run_command`` is the ``python -m gcc_mpi run`` entry; importing this package does not
initialise MPI (``mpi.start`` does, when a run begins).
"""

from .mpi import WAIT_MODES  # noqa: F401  (no MPI side effect: mpi4py is imported lazily)


def run_command(args, *, simulate, default_output):
    """``python -m gcc_mpi run``: the MPI run on every rank, or, started as a single process,
    a hint on how to launch it and the same job in the simulator (``simulate(args)``).
    Returns the exit code of this rank."""
    import sys

    from . import mpi

    MPI = mpi.start()
    comm = MPI.COMM_WORLD
    if comm.size == 1:
        job = f" {args.job}" if getattr(args, "job", None) else ""
        print(f"gcc_mpi: this is a single process, so there are no MPI workers; launch the "
              f"distributed run with `mpiexec -n 32 python -m gcc_mpi{' run' + job if job else ''}`"
              f" (N = ranks - 1 workers). Running the job in the simulator instead.",
              file=sys.stderr)
        return simulate(args)
    with mpi.abort_on_error(comm):
        if comm.rank == 0:
            from .master import main_master
            return main_master(comm, args, default_output)
        from .worker import main_worker
        return main_worker(comm, args)
