"""Timing fidelity of the MPI runtime, and coded against uncoded latency, on real ranks.

    mpiexec -n 32 python benchmarks/runtime_fidelity.py [--trials 100] [--stragglers 10]

Runs `python -m gcc_mpi run` (the real entry point, in this process) on the default job's f
(digits MLP, K = 10, N = ranks - 1) with shifted-exponential delays — shift 20 ms plus an
exponential of mean 30 ms (stragglers.rate = 1/0.03) — and schemes uncoded (waits for all K of
its workers) and gcc (waits for the fastest N - S). Rank 0 then reads the HDF5 file and prints:

- Kendall tau (tau-b) per trial between the injected delays and the observed arrival times of
  the results used (gcc: N - S of them; uncoded: K), median and 10th percentile over trials
  (the issue asks for >= 0.95);
- latency - (N - S)-th smallest injected delay for gcc, median and p90 (asks for <= 5 ms);
- median latency of gcc and of uncoded and their ratio (gcc should be below uncoded).
"""

import argparse
import os
import sys
import tempfile
from pathlib import Path

from gcc_mpi.cli.main import main as cli  # first: it pins BLAS to one thread before numpy loads

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

from gcc_mpi.files.reader import read_results  # noqa: E402


def kendall_tau(x, y):
    from scipy.stats import kendalltau

    return kendalltau(x, y).statistic


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--stragglers", type=int, default=10, help="S: gcc waits for N - S results")
    p.add_argument("--wait", default="auto", choices=("auto", "busy", "polite"))
    p.add_argument("--keep", metavar="OUT.h5", help="keep the results file here")
    args = p.parse_args()
    comm = MPI.COMM_WORLD
    if comm.size < 12:
        raise SystemExit("needs at least 12 ranks (K = 10 inputs, N >= K workers)")
    out = args.keep or (os.path.join(tempfile.gettempdir(), f"gcc_mpi_fidelity_{os.getpid()}.h5")
                        if comm.rank == 0 else None)
    out = comm.bcast(out)
    sets = [f"job.trials={args.trials}", 'code.schemes=["uncoded", "gcc"]',
            "stragglers.model=shifted-exponential", "stragglers.shift=0.02",
            f"stragglers.rate={1 / 0.03!r}", f"decode.stragglers={args.stragglers}",
            "job.name=fidelity"]
    argv = ["run", "-o", out, "--overwrite", "-q", "--wait", args.wait]
    for s in sets:
        argv += ["--set", s]
    code = cli(argv)
    if code:
        sys.exit(code)
    if comm.rank != 0:
        return
    res = read_results(out)
    if not args.keep:
        Path(out).unlink()
    d = res.points[0].schemes
    N = d["gcc"]["delay"].shape[1]
    S = args.stragglers
    print(f"# runtime_fidelity: {comm.size} ranks, N = {N}, K = 10, S = {S}, {args.trials} trials, "
          f"delays 20 ms + Exp(mean 30 ms); {res.attrs['mpi']}")
    for name in ("gcc", "uncoded"):
        s = d[name]
        taus = [kendall_tau(s["delay"][t][s["used"][t]], s["arrival"][t][s["used"][t]])
                for t in range(len(s["trial"])) if s["used"][t].sum() > 1]
        print(f"{name:8s} Kendall tau (used workers): median {np.median(taus):.3f}, "
              f"p10 {np.percentile(taus, 10):.3f}, min {np.min(taus):.3f}")
    g = d["gcc"]
    kth = np.sort(g["delay"], axis=1)[:, N - S - 1]
    excess = 1e3 * (g["latency"] - kth)
    print(f"gcc latency - (N-S)-th delay: median {np.median(excess):.2f} ms, "
          f"p90 {np.percentile(excess, 90):.2f} ms")
    lat_g, lat_u = 1e3 * np.median(g["latency"]), 1e3 * np.median(d["uncoded"]["latency"])
    print(f"median latency: gcc {lat_g:.1f} ms, uncoded {lat_u:.1f} ms; "
          f"gcc/uncoded = {lat_g / lat_u:.2f}")


if __name__ == "__main__":
    main()
