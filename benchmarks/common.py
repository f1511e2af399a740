"""Helpers shared by the benchmarks: run one scheme of a job point in-process, no output file."""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # as the CLI does: small matrices, no thread contention

from pathlib import Path  # noqa: E402

import time  # noqa: E402

import numpy as np  # noqa: E402

from gcc_mpi.job.parse import load_job  # noqa: E402
from gcc_mpi.core.simulate import simulate_scheme  # noqa: E402
from gcc_mpi.core.point import PointSetup  # noqa: E402

JOBS = Path(__file__).resolve().parent.parent / "jobs"


def point_setup(job_name, overrides=(), point=0):
    """PointSetup and point index of a shipped job with ``--set``-style overrides."""
    job = load_job(JOBS / f"{job_name}.toml", overrides)
    p = job.points[point]
    return PointSetup.build(p.config, job.base_dir), p.index


def mse_db(setup, index, scheme, trials):
    """10 log10 of the mean nmse over ``trials`` paired trials of one scheme."""
    nmse = []
    for t in range(trials):
        X, Y, delays = setup.inputs(index, t)
        rec = simulate_scheme(setup, scheme, X, Y, delays)
        nmse.append(rec["nmse"])
    return 10 * np.log10(np.mean(nmse)), np.array(nmse)


def per_call(fn, seconds=0.5):
    """Mean wall time of one call of ``fn`` over about ``seconds`` (after one warm-up call)."""
    fn()
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn()
        n += 1
    return (time.perf_counter() - t0) / n
