"""How the master's gather waits, side by side in one mpiexec: polite (Testsome + back-off
sleeps) and busy (Testsome in a tight Python loop), each with the control receive a run has.
(No mode blocks in MPI_Waitsome: a worker that stops answering would never complete it, see
gcc_mpi/runtime/hung.py.) Workers wait as their master (polite, or spinning on Improbe).

    mpiexec -n 3 python benchmarks/gather_modes.py [--blocks 6] [--trials 40]
                                                   [--target mlp|linear] [--delay 0]

Rounds are benchmarks/runtime_overhead.py's (bacc on N = ranks - 1 workers, wait = "all", no
stragglers, K = min(10, N)); ``--delay D`` gives every worker D seconds of injected delay instead,
so the master waits). Blocks of the three modes alternate, so all see the same machine. Printed
per mode, medians over rounds: the protocol time (scatter + wait + stop/drain, what the gather
costs) and rank 0's CPU time per round (time.process_time: what its waiting takes from other
ranks), and each one's ratio to polite's.
"""

import argparse
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # as the CLI does

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

from runtime_overhead import SCHEME  # noqa: E402
from gcc_mpi.job.default_job import load_default_job  # noqa: E402
from gcc_mpi.runtime.mpi import library  # noqa: E402
from gcc_mpi.runtime.session import block  # noqa: E402
from gcc_mpi.runtime.worker import build_targets  # noqa: E402


def job_for(size, target):
    """runtime_overhead's job (bacc, wait = "all", no stragglers) with K = min(10, N), so that
    it runs on as few ranks as there are cores."""
    sets = [("stragglers.model", "none"), ("code.schemes", [SCHEME]), ("decode.wait", "all"),
            ("data.batch", min(10, size - 1))]
    if target == "linear":  # 64 -> 10, like the MLP's input and output
        sets += [("data.source", "gaussian"), ("data.dim", 64), ("target.kind", "linear"),
                 ("target.outputs", 10)]
    return load_default_job(sets, defaults={"code.workers": size - 1})


MODES = ("polite", "busy")


def timed_rounds(master, setup, trials, start, delay):
    """(protocol ms, rank-0 CPU ms) per round of one block (session.block: the NOTICE receives
    as a run has them, EXIT to the workers at its end)."""
    protocol, cpu = [], []
    for t in range(start, start + trials):
        X, Y, delays = setup.inputs(0, t)
        delays = np.full_like(delays, delay)
        drain = master.stats["drain"]
        c0 = time.process_time()
        rec = master.round(setup, SCHEME, t, X, Y, delays)
        cpu.append(1e3 * (time.process_time() - c0))
        protocol.append(1e3 * (rec["t_scatter"] + rec["t_wait"] + master.stats["drain"] - drain))
    return protocol, cpu


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", type=int, default=6, help="blocks per mode (after one warm-up)")
    p.add_argument("--trials", type=int, default=40, help="rounds per block")
    p.add_argument("--target", default="mlp", choices=("mlp", "linear"))
    p.add_argument("--delay", type=float, default=0.0, help="injected delay of every worker, s")
    args = p.parse_args()
    comm = MPI.COMM_WORLD
    job = job_for(comm.size, args.target)
    setup = targets = None
    if comm.rank == 0:
        from gcc_mpi.core.point import prepare

        (_, setup), = prepare(job)
        results = {name: ([], []) for name in MODES}
    else:
        targets = build_targets(job, [(64, 10)])
    for b in range(args.blocks + 1):  # block 0 warms up and is not counted
        start = b * args.trials
        for name in MODES:
            comm.Barrier()
            timed = block(comm, MPI, name,
                          lambda m: timed_rounds(m, setup, args.trials, start, args.delay),
                          setup=setup, targets=targets)
            if comm.rank == 0 and b:
                results[name][0].extend(timed[0])
                results[name][1].extend(timed[1])
    if comm.rank != 0:
        return
    print(f"# gather_modes: {comm.size} ranks on {len(os.sched_getaffinity(0))} cores, scheme "
          f"{SCHEME}, f = {args.target}, wait=all, delay {args.delay:g} s; {args.blocks} blocks x "
          f"{args.trials} rounds per mode; {library(MPI)[:48]}")
    base_pr = np.median(results["polite"][0])
    base_cpu = np.median(results["polite"][1])
    for name, (pr, cpu) in results.items():
        pr_m, cpu_m = np.median(pr), np.median(cpu)
        print(f"{name:9s}: protocol {pr_m:7.3f} ms/round (p90 {np.percentile(pr, 90):7.3f}, "
              f"x{pr_m / base_pr:.2f} polite's), rank 0 CPU {cpu_m:7.3f} ms/round "
              f"(x{cpu_m / base_cpu:.2f})")


if __name__ == "__main__":
    main()
