"""Per-round protocol overhead of the MPI runtime against the bare mpi4py floor, zero delay.

    mpiexec -n 32 python benchmarks/runtime_overhead.py [--blocks 10] [--trials 40]
                                                        [--wait auto] [--target mlp|linear]

The runtime runs N = ranks - 1 workers with no stragglers and decode.wait = "all", one scheme
(bacc: every worker gets a coded input and every result is waited for) — the same 31 sends and
31 gathers per round as benchmarks/mpi_floor.py. f is the default job's digits MLP (K = 10,
64 -> 10), or with --target linear a single 64 x 10 matrix product, which leaves little but
the protocol. Blocks of the two floors (polite) and of the runtime alternate within one mpiexec,
so all see the same machine (other load on 2 cores moves both). Printed, as medians over rounds:

- floor:    ms per trial of the bare loop (scatter 31 small arrays, gather 31);
- floor + f: the same loop whose workers compute the same f on what they receive: what a
            minimal runtime doing the same work pays, so the ratio to it is the protocol's own
            cost;
- protocol: the runtime's t_scatter + t_wait + stop/drain — everything a round spends in the
            protocol, the workers' f included (encode, decode and HDF5 writes are not) — and
            its ratios to both floors (issue 7 asks for <= 1.5), also as the medians of the
            per-block ratios;
- round:    the whole round as the master sees it (encode + protocol + decode).

With ``--wait busy`` the master spins on Testsome, polite waiting tests with back-off sleeps;
either with the control receive, as a run has it.
"""

import argparse
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # as the CLI does

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

import mpi_floor  # noqa: E402
from gcc_mpi.job.default_job import load_default_job  # noqa: E402
from gcc_mpi.runtime.mpi import resolve_wait  # noqa: E402
from gcc_mpi.runtime.session import block  # noqa: E402
from gcc_mpi.runtime.worker import build_targets  # noqa: E402

SCHEME = "bacc"


def job_for(size, target):
    sets = [("stragglers.model", "none"), ("code.schemes", [SCHEME]), ("decode.wait", "all")]
    if target == "linear":  # 64 -> 10, like the MLP's input and output
        sets += [("data.source", "gaussian"), ("data.dim", 64), ("target.kind", "linear"),
                 ("target.outputs", 10)]
    return load_default_job(sets, defaults={"code.workers": size - 1})


def floor_targets(comm, job):
    """[f] of the job's only point on a worker, as the runtime builds it; [None] on rank 0."""
    return [None] if comm.rank == 0 else build_targets(job, [(64, 10)])


def floor_loop(comm, trials, f=None):
    """ms per trial (array, on rank 0; None elsewhere) of ``trials`` trials of the polite floor
    loop of mpi_floor.py, 64 float64 per message, its workers computing ``f`` (None: doubling)."""
    comm.Barrier()
    if comm.rank == 0:
        return 1e3 * mpi_floor.master(comm, "polite", trials, 64)
    mpi_floor.worker(comm, "polite", 64, f)
    return None


def runtime_block(master, setup, trials, start):
    """(protocol time, round time) per round for ``trials`` rounds of a block (session.block:
    the NOTICE receives as a run has them, EXIT to the workers at its end)."""
    protocol, rounds = [], []
    for t in range(start, start + trials):
        X, Y, delays = setup.inputs(0, t)
        drain = master.stats["drain"]
        t0 = time.perf_counter()
        rec = master.round(setup, SCHEME, t, X, Y, delays)
        rounds.append(time.perf_counter() - t0)
        protocol.append(rec["t_scatter"] + rec["t_wait"] + master.stats["drain"] - drain)
    return protocol, rounds


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--blocks", type=int, default=10, help="alternating floor/runtime blocks")
    p.add_argument("--trials", type=int, default=40, help="trials per block")
    p.add_argument("--wait", default="auto", choices=("auto", "busy", "polite"))
    p.add_argument("--target", default="mlp", choices=("mlp", "linear"))
    args = p.parse_args()
    comm = MPI.COMM_WORLD
    mode = resolve_wait(args.wait, comm)
    job = job_for(comm.size, args.target)
    setup = None
    if comm.rank == 0:
        from gcc_mpi.core.point import prepare

        (_, setup), = prepare(job)
        floor, floor_f, protocol, rounds = [], [], [], []
    targets = floor_targets(comm, job)
    for b in range(args.blocks + 1):  # block 0 warms all up and is not counted
        timed = []
        for f in (None, targets[0]):  # the bare floor, then the floor whose workers compute f
            timed.append(floor_loop(comm, args.trials, f))
        comm.Barrier()
        start = b * args.trials
        timed_rounds = block(comm, MPI, mode, lambda m: runtime_block(m, setup, args.trials, start),
                             setup=setup, targets=targets)
        if comm.rank == 0 and b:
            pr, rd = timed_rounds
            floor.append(timed[0])
            floor_f.append(timed[1])
            protocol.append(1e3 * np.asarray(pr))
            rounds.append(1e3 * np.asarray(rd))
    if comm.rank != 0:
        return
    ratios = [np.median(p) / np.median(f) for f, p in zip(floor, protocol)]
    ratios_f = [np.median(p) / np.median(f) for f, p in zip(floor_f, protocol)]
    floor, floor_f, protocol, rounds = map(np.concatenate, (floor, floor_f, protocol, rounds))
    fl, ff, pr, rd = np.median(floor), np.median(floor_f), np.median(protocol), np.median(rounds)
    print(f"# runtime_overhead: {comm.size} ranks, scheme {SCHEME}, f = {args.target}, wait=all, "
          f"zero delay, runtime waiting {mode}; {args.blocks} blocks x {args.trials} "
          f"trials; {MPI.Get_library_version().replace(chr(0), '').splitlines()[0][:40]}")
    print(f"floor (polite)   : {fl:7.3f} ms/trial median (p90 {np.percentile(floor, 90):.3f})")
    print(f"floor + f        : {ff:7.3f} ms/trial median (p90 {np.percentile(floor_f, 90):.3f})"
          "  (its workers compute the same f)")
    print(f"runtime protocol : {pr:7.3f} ms/round median (p90 {np.percentile(protocol, 90):.3f})")
    print(f"  ratio to floor     {pr / fl:.2f} "
          f"(median of per-block ratios {np.median(ratios):.2f})")
    print(f"  ratio to floor + f {pr / ff:.2f} "
          f"(median of per-block ratios {np.median(ratios_f):.2f})")
    print(f"runtime round    : {rd:7.3f} ms/round median (encode + protocol + decode)")


if __name__ == "__main__":
    main()
