"""Test-only MPI program for tests/test_runtime.py: rank 0 drives the runtime's Master and ranks
1.. its Worker directly (below session.block, which the benchmarks use), and nobody sends a BYE
by hand. Three blocks of a few rounds, each ended by one ``ending.shutdown`` (one EXIT per
worker, a new Worker per block): the master listens in block 0, not in block 1 (where every
worker first announces a signal, a NOTICE that must be received before its BYE) and, as a new
Master, in block 2.

After each shutdown every rank meets in a barrier, which a worker reaches only after its BYE
left, and rank 0 looks for a NOTICE still unreceived: there must be none (one left would fail
MPICH's MPI_Finalize on rank 0). Exit 0 and "shutdown_blocks: 3 blocks" on success; a shutdown
that misses a BYE ends the job with MPI_Abort after GRACE seconds instead of hanging.

    mpiexec -n 4 python tests/shutdown_blocks.py
"""

import contextlib
import os
import signal
import sys
import time
from types import SimpleNamespace

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

from gcc_mpi.job.default_job import load_default_job  # noqa: E402
from gcc_mpi.runtime import protocol as P  # noqa: E402
from gcc_mpi.runtime.ending import shutdown  # noqa: E402
from gcc_mpi.runtime.master import Master  # noqa: E402
from gcc_mpi.runtime.mpi import Waiter, abort_on_error, improbe  # noqa: E402
from gcc_mpi.runtime.pace import SLEEP_IDLE  # noqa: E402
from gcc_mpi.runtime.worker import NoticeSender, Worker, build_targets  # noqa: E402

BLOCKS = (True, False, True)  # whether the master listens in each block
ROUNDS = 3                    # per block
GRACE = 60.0                  # seconds a shutdown may take: generous, below the test's timeout


def job_for(size):
    n = size - 1
    return load_default_job([
        ("stragglers.model", "none"), ("code.schemes", ["bacc"]), ("decode.wait", "all"),
        ("data.source", "gaussian"), ("data.dim", 4), ("data.batch", n),
        ("target.kind", "linear"), ("target.outputs", 2)], defaults={"code.workers": n})


def master_block(comm, master, setup, block, listen):
    if listen:
        master.listen()
    for t in range(block * ROUNDS, (block + 1) * ROUNDS):
        X, Y, delays = setup.inputs(0, t)
        master.round(setup, "bacc", t, X, Y, delays)
    standing = shutdown(master, GRACE)
    if standing:
        print(f"shutdown_blocks: block {block} (master listening: {listen}): ranks "
              f"{sorted(standing)} did not say BYE within {GRACE:g} s", file=sys.stderr,
              flush=True)
        comm.Abort(1)


def worker_block(comm, targets, block):
    notices = None
    if not BLOCKS[block]:  # a signal noted (not a real one): its NOTICE goes before the BYE
        # and f still runs (abandoning: none), for this master acts on no signal
        stop = SimpleNamespace(signum=signal.SIGTERM, since=time.monotonic(),
                               abandoning=contextlib.nullcontext)
        notices = NoticeSender(comm, stop)
    Worker(comm, MPI, Waiter(MPI, "polite", hi=SLEEP_IDLE), targets, notices=notices).serve()


def main():
    comm = MPI.COMM_WORLD
    job = job_for(comm.size)
    if comm.rank == 0:
        from gcc_mpi.core.point import prepare

        (_, setup), = prepare(job)
        master = None
    else:
        targets = build_targets(job, [(4, 2)])
    for block, listen in enumerate(BLOCKS):
        if comm.rank == 0:
            if master is None or block == 2:  # a master shut down again, then a new one
                if master is not None:
                    master.close()
                master = Master(comm, MPI, Waiter(MPI, "polite"))
                master.open(setup, 0, 1)
            master_block(comm, master, setup, block, listen)
        else:
            worker_block(comm, targets, block)
        comm.Barrier()  # every worker's BYE has left
        if comm.rank == 0:
            left = improbe(comm, MPI.ANY_SOURCE, P.NOTICE, MPI.Status())
            if left is not None:
                row = np.empty(P.NOTICE_SIZE)
                left.Recv(row)
                print(f"shutdown_blocks: block {block} (master listening: {listen}) left a "
                      f"NOTICE unreceived: {row.tolist()}", file=sys.stderr, flush=True)
                comm.Abort(3)
    if comm.rank == 0:
        master.close()
        print(f"shutdown_blocks: {len(BLOCKS)} blocks")


if __name__ == "__main__":
    with abort_on_error(MPI.COMM_WORLD):
        main()
