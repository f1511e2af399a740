"""The floor: a bare mpi4py loop that scatters one small array to every worker and gathers one
back, with nothing else — no coding, no delays, no HDF5. What any runtime on this machine pays
per trial at least; gcc_mpi's runtime is measured against it (benchmarks/runtime_overhead.py).

Three ways to wait, each timed for TRIALS trials after WARMUP:

- busy:   master Irecv + Waitsome, workers blocking Recv/Send. The blocking calls of MPICH and
          of Open MPI spin, so with more ranks than cores every idle rank competes for the CPU
          with the one that has work to do.
- spin:   master Testsome in a Python loop without sleeping (what gcc_mpi's busy master does
          when it must not block: a deadline ahead), workers as busy.
- polite: master Testsome + exponential back-off sleep (20 us .. 1 ms), workers Iprobe (twice
          when the first misses, see ``probe``) + back-off before receiving. Idle ranks sleep
          and give the cores away.

    mpiexec -n 32 python benchmarks/mpi_floor.py [--trials 200] [--size 64]
                                                 [--modes polite,busy,spin]

Prints ms/trial (median and mean) for each mode. Self-contained on purpose (imports nothing
from gcc_mpi), so it stays a reference for the runtime rather than a copy of it.
"""

import argparse
import time

import numpy as np
from mpi4py import MPI

TASK, REPLY, STOP = 1, 2, 3
SLEEP_MIN, SLEEP_MAX = 20e-6, 1e-3


class Backoff:
    range = (SLEEP_MIN, SLEEP_MAX)

    def __init__(self):
        self.lo, self.hi = self.range
        self.t = self.lo

    def reset(self):
        self.t = self.lo

    def sleep(self):
        time.sleep(self.t)
        self.t = min(2 * self.t, self.hi)


def master(comm, mode, trials, size):
    n = comm.size - 1
    send = np.ones((n, size))
    recv = np.empty((n, size))
    times = []
    backoff = Backoff()
    for _ in range(trials):
        t0 = time.perf_counter()
        rreqs = [comm.Irecv(recv[i], source=i + 1, tag=REPLY) for i in range(n)]
        sreqs = [comm.Isend(send[i], dest=i + 1, tag=TASK) for i in range(n)]
        left = n
        while left:
            if mode == "busy":
                done = MPI.Request.Waitsome(rreqs)
            elif mode == "spin":
                done = MPI.Request.Testsome(rreqs)
            else:
                done = MPI.Request.Testsome(rreqs)
                if not done:
                    backoff.sleep()
                    continue
                backoff.reset()
            left -= len(done)
        MPI.Request.Waitall(sreqs)
        times.append(time.perf_counter() - t0)
    for i in range(n):
        comm.Send(send[i, :1], dest=i + 1, tag=STOP)
    return np.array(times)


def probe(comm, status):
    """Iprobe, twice when the first misses: MPICH (ch4) matches before it makes progress, so
    the first probe after a message arrived misses it — without the second one every TASK is
    noticed a whole back-off sleep late (the runtime probes the same way, gcc_mpi.runtime.mpi)."""
    return (comm.Iprobe(source=0, tag=MPI.ANY_TAG, status=status)
            or comm.Iprobe(source=0, tag=MPI.ANY_TAG, status=status))


def worker(comm, mode, size, f=None):
    """Answer every message with it doubled, or with ``f`` of it (a callable (1, size) -> (1, m),
    m <= size) when given, so the floor can include the same work per task as a runtime."""
    buf = np.empty(size)
    status = MPI.Status()
    backoff = Backoff()
    while True:
        if mode == "polite":
            while not probe(comm, status):
                backoff.sleep()
            backoff.reset()
        comm.Recv(buf, source=0, tag=MPI.ANY_TAG, status=status)
        if status.Get_tag() == STOP:
            return
        if f is None:
            buf *= 2.0
        else:
            y = np.asarray(f(buf[None])).ravel()
            buf[:len(y)] = y
        if mode != "polite":
            comm.Send(buf, dest=0, tag=REPLY)
        else:
            req = comm.Isend(buf, dest=0, tag=REPLY)
            while not req.Test():
                backoff.sleep()
            backoff.reset()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--size", type=int, default=64, help="float64 values per message")
    p.add_argument("--modes", default="polite,busy,spin")
    p.add_argument("--sleep", default=f"{SLEEP_MIN:g},{SLEEP_MAX:g}",
                   help="polite back-off: first,longest sleep in seconds")
    args = p.parse_args()
    Backoff.range = tuple(float(x) for x in args.sleep.split(","))
    comm = MPI.COMM_WORLD
    if comm.size < 2:
        raise SystemExit("run under mpiexec with >= 2 ranks: "
                         "mpiexec -n 32 python benchmarks/mpi_floor.py")
    results = {}
    for mode in args.modes.split(","):
        comm.Barrier()
        if comm.rank == 0:
            times = master(comm, mode, args.warmup + args.trials, args.size)[args.warmup:]
            results[mode] = times
        else:
            worker(comm, mode, args.size)
    if comm.rank == 0:
        print(f"# mpi_floor: {comm.size} ranks ({comm.size - 1} workers), {args.size} float64 per "
              f"message, {args.trials} trials, "
              f"{MPI.Get_library_version().replace(chr(0), '').splitlines()[0]}")
        for mode, t in results.items():
            print(f"floor {mode:6s}: {1e3 * np.median(t):8.3f} ms/trial median, "
                  f"{1e3 * np.mean(t):8.3f} mean, {1e3 * np.percentile(t, 90):8.3f} p90")


if __name__ == "__main__":
    main()
