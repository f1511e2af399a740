"""Throughput of decode.pipeline = D: the same trials with 1, 2, 4, 8 rounds in flight.

    mpiexec -n 32 python benchmarks/pipeline.py [--trials 100] [--depths 1,2,4,8]
                                                [--shift 0.005] [--rate 100] [--stragglers 8]
                                                [--scheme gcc] [--wait auto]

The default job (digits MLP, K = 10, N = ranks - 1 workers) with one scheme, so a batch is
one round, under shifted-exponential delays (``shift`` + Exp(``rate``) s per worker and trial),
decoding from the fastest N - S results. One mpiexec: the workers serve every setting in turn
(no start-up between them), the master runs the same trials (same seeds, same delays) at each
depth and keeps the records in memory. Printed per depth: batches per second and the ratio to
D = 1, median and p90 per-batch latency (scatter to decoded, queueing included), the mean
NMSE in dB, and how many trials used exactly the received set of D = 1 — with delays this
close together a queue changes some arrival orders, so equal sets are not expected
everywhere, equal accuracy is.
"""

import argparse
import os
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # as the CLI does

import numpy as np  # noqa: E402
from mpi4py import MPI  # noqa: E402

from gcc_mpi.core.driver import run_points  # noqa: E402
from gcc_mpi.job.default_job import load_default_job  # noqa: E402
from gcc_mpi.runtime.mpi import abort_on_error, resolve_wait  # noqa: E402
from gcc_mpi.runtime.session import block  # noqa: E402
from gcc_mpi.runtime.worker import build_targets  # noqa: E402


class Records:
    """Stands in for the ResultWriter (a ``core.driver.RecordSink``): keeps the records of
    point 0 in memory."""

    def __init__(self):
        self.rows = []

    def add_point(self, index, params):
        pass

    def align(self, index, names):
        return 0

    def append(self, point, name, rows):
        self.rows.append(rows)

    def due(self):
        return False  # nothing to commit: the master hands over its blocks when they fill

    def flush(self, force=False):
        pass

    def field(self, key):
        return np.concatenate([r[key] for r in self.rows])


def job_for(size, args, depth):
    return load_default_job([
        ("job.trials", args.trials), ("code.schemes", [args.scheme]),
        ("stragglers.model", "shifted-exponential"), ("stragglers.shift", args.shift),
        ("stragglers.rate", args.rate), ("decode.wait", "fastest"),
        ("decode.stragglers", args.stragglers), ("decode.pipeline", depth),
    ], defaults={"code.workers": size - 1})


def run_depth(master, job):
    """(seconds, records) of every trial of ``job`` on the workers."""
    from gcc_mpi.core.point import prepare

    prepared = prepare(job)
    records = Records()
    t0 = time.perf_counter()
    run_points(master, prepared, records)  # the job driver, the Master its engine
    return time.perf_counter() - t0, records


def report(results, args, size, mode):
    base_time, base = results[0][1], results[0][2]
    used0 = base.field("used")
    print(f"# pipeline: {size} ranks, default job (digits MLP, K = 10) with {args.scheme}, "
          f"delays {1e3 * args.shift:g} ms + Exp(mean {1e3 / args.rate:g} ms), fastest N - "
          f"{args.stragglers}, {args.trials} trials per depth, {mode} waiting")
    print("depth  batches/s  vs D=1  latency p50 [ms]  p90 [ms]  nmse [dB] ± ci95  same set as D=1")
    for depth, seconds, rec in results:
        latency = 1e3 * rec.field("latency")
        same = np.all(rec.field("used") == used0, axis=1).mean()
        nmse = rec.field("nmse")
        ci = 1.96 * 10 / np.log(10) * nmse.std(ddof=1) / nmse.mean() / np.sqrt(len(nmse))
        print(f"{depth:5d}  {args.trials / seconds:9.1f}  {base_time / seconds:5.2f}x  "
              f"{np.median(latency):16.2f}  {np.percentile(latency, 90):8.2f}  "
              f"{10 * np.log10(nmse.mean()):9.2f} ± {ci:4.2f}  {same:14.0%}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--depths", default="1,2,4,8")
    p.add_argument("--shift", type=float, default=0.005, help="seconds")
    p.add_argument("--rate", type=float, default=100.0, help="1/s of the exponential part")
    p.add_argument("--stragglers", type=int, default=8, help="S: decode from the fastest N - S")
    p.add_argument("--scheme", default="gcc")
    p.add_argument("--wait", default="auto", choices=("auto", "busy", "polite"))
    args = p.parse_args()
    depths = [int(d) for d in args.depths.split(",")]
    comm = MPI.COMM_WORLD
    if comm.size < 12:
        raise SystemExit("run under mpiexec with >= 12 ranks (K = 10 needs N >= 10 workers): "
                         "mpiexec -n 32 python benchmarks/pipeline.py")
    mode = resolve_wait(args.wait, comm)
    jobs = [job_for(comm.size, args, d) for d in depths]
    targets = build_targets(jobs[0], [(64, 10)]) if comm.rank else None
    results = block(comm, MPI, mode,
                    lambda m: [(d, *run_depth(m, job)) for d, job in zip(depths, jobs)],
                    targets=targets, shared_clock=True)
    if comm.rank == 0:
        report(results, args, comm.size, mode)


if __name__ == "__main__":
    with abort_on_error(MPI.COMM_WORLD):  # an error on one rank ends the job, none hangs
        main()
