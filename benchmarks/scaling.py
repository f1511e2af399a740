"""How the master's per-trial time grows with N: over MPI (8..64 ranks) and in simulate (to 4096).

    python benchmarks/scaling.py [--mpi 8 16 32 64] [--simulate] [--trials 30]

--mpi R...: for each R, `mpiexec -n R python -m gcc_mpi run` of the digits MLP with N = R - 1
workers, K = 4, zero delay and decode.wait = "all" (so t_wait is pure protocol: the workers' f
plus messaging plus the master's polling), schemes bacc, letcc and gcc. Prints the medians of
t_encode, t_scatter, t_wait and t_decode per trial and their sum. More ranks than cores is
oversubscription: wait grows with R.

--simulate: `python -m gcc_mpi simulate jobs/scale-n.toml --point I` for every N of that job
(K = 64, N = 256 .. 4096, about 10% of results missing) in its own process, printing per scheme the
medians of t_encode and t_decode, the error, and the process's peak resident memory.
"""

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from launch import mpiexec

from gcc_mpi.reports.statistics import summarize_scheme
from gcc_mpi.job.parse import load_job
from gcc_mpi.files.reader import read_results

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
MPI_JOB = """
[job]
name = "scaling"
trials = {trials}
[data]
batch = 4
[code]
workers = {workers}
schemes = ["bacc", "letcc", "gcc"]
[stragglers]
model = "none"
[decode]
wait = "all"
"""


def run(cmd):
    """Run cmd; its peak resident memory (MiB) from the OS."""
    proc = subprocess.Popen(cmd, env=ENV, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}): "
                 f"{proc.stderr.read().decode()[-2000:]}")
    return usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


def ms(d, key):
    return 1e3 * float(np.median(d[key]))


def mpi_table(ranks, trials, tmp):
    print(f"MPI, digits MLP, K = 4, zero delay, wait all; medians in ms per trial "
          f"({trials} trials)")
    print(f"{'ranks':>5} {'N':>4} {'scheme':7} {'encode':>7} {'scatter':>8} {'wait':>8} "
          f"{'decode':>7} {'sum':>8}")
    for r in ranks:
        out, job = f"{tmp}/mpi{r}.h5", Path(f"{tmp}/mpi{r}.toml")
        job.write_text(MPI_JOB.format(trials=trials, workers=r - 1))
        run([mpiexec(), "-n", str(r), sys.executable, "-m", "gcc_mpi", "run", str(job), "-o", out,
             "-q"])
        point = read_results(out).points[0]
        for scheme, d in point.schemes.items():
            parts = [ms(d, k) for k in ("t_encode", "t_scatter", "t_wait", "t_decode")]
            print(f"{r:5d} {r - 1:4d} {scheme:7} " + " ".join(f"{p:{w}.2f}" for p, w in
                                                              zip(parts, (7, 8, 8, 7)))
                  + f" {sum(parts):8.2f}")


def simulate_table(trials, tmp):
    job_path = ROOT / "jobs" / "scale-n.toml"
    job = load_job(job_path)
    print(f"simulate, jobs/scale-n.toml (digits MLP, K = 64, ~90% of results used), {trials} "
          "trials; medians in ms per trial")
    print(f"{'N':>5} {'scheme':7} {'used':>5} {'encode':>7} {'decode':>8} {'nmse dB':>8} "
          f"{'peak MiB':>9}")
    for p in job.points:
        out = f"{tmp}/sim{p.index}.h5"
        peak = run([sys.executable, "-m", "gcc_mpi", "simulate", str(job_path), "-o", out, "-q",
                       "--point", str(p.index), "--set", f"job.trials={trials}"])
        point = read_results(out).points[0]
        for scheme, d in point.schemes.items():
            db = summarize_scheme(d)["mse_db"]
            used = int(np.median(d["used"].sum(axis=1)))
            print(f"{p.params['code.workers']:5d} {scheme:7} {used:5d} {ms(d, 't_encode'):7.2f} "
                  f"{ms(d, 't_decode'):8.2f} {db:8.1f} {peak:9.0f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mpi", type=int, nargs="*", metavar="R")
    ap.add_argument("--simulate", action="store_true")
    ap.add_argument("--trials", type=int, default=30)
    args = ap.parse_args()
    if args.mpi is None and not args.simulate:
        args.mpi, args.simulate = [8, 16, 32, 64], True
    with tempfile.TemporaryDirectory() as tmp:
        if args.mpi:
            mpi_table(args.mpi, args.trials, tmp)
        if args.simulate:
            simulate_table(args.trials, tmp)


if __name__ == "__main__":
    main()
