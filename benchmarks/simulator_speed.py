"""Simulator throughput: trials per second per scheme on digits-mlp (K = 10, N = 40, S = 10).

    python benchmarks/simulator_speed.py [--trials 2000]

Times the whole per-trial path of `simulate` (inputs, encode, f on the used results, decode
with automatic lambda, scoring) without the HDF5 writes, then the full CLI run for the record.
"""

import argparse
import subprocess
import sys
import tempfile
import time

from common import JOBS, point_setup

from gcc_mpi.simulate import simulate_scheme


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=2000)
    args = ap.parse_args()
    sets = ["stragglers.count=10", 'code.schemes=["uncoded", "replication", "bacc", "letcc", "gcc"]',
            "code.workers=40"]
    setup, i = point_setup("digits-mlp", sets)
    inputs = [setup.inputs(i, t) for t in range(args.trials)]
    print(f"digits-mlp, K = 10, N = 40, S = 10, {args.trials} trials")
    for name in setup.codes:
        t0 = time.perf_counter()
        for X, Y, d in inputs:
            simulate_scheme(setup, name, X, Y, d)
        rate = args.trials / (time.perf_counter() - t0)
        print(f"  {name:12s} {rate:7.0f} trials/s per scheme")
    t0 = time.perf_counter()
    for t in range(args.trials):
        setup.inputs(i, t)
    print(f"  (drawing inputs and f(X) alone: {args.trials / (time.perf_counter() - t0):.0f} trials/s)")
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "gcc_mpi", "simulate", str(JOBS / "digits-mlp.toml"),
                        "-o", f"{tmp}/out.h5", "-q", "--set", "stragglers.count=10",
                        "--set", f"job.trials={args.trials}"], check=True)
        wall = time.perf_counter() - t0
    print(f"  CLI simulate, 3 schemes incl. start-up and HDF5: {3 * args.trials / wall:.0f} "
          "scheme-trials/s")


if __name__ == "__main__":
    main()
