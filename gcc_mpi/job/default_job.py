"""The default job (gcc_mpi/jobs/default.toml), fitted to the ranks it runs on, and ``load``:
a job file or this default job, the one way the commands and the Python API load a job."""

from __future__ import annotations

import dataclasses
from importlib import resources
from collections.abc import Iterable, Mapping

from .config import Job, apply, resolve
from .parse import flatten, load_job, loads, set_defaults


# The default job's batch and stragglers follow its N (benchmarks/default_job.py measures the rule
# at every N from 3 to 63): S = N/4 late workers, and K = (N - S)/2 inputs so that every
# approximate decoder has at least two results per input (with fewer, gcc loses 10-20 dB at small
# N), capped at 10 inputs (the digits batch every shipped job was tuned at).
DEFAULT_K_MAX = 10


def fit_default_job(workers: int) -> tuple[int, int]:
    """(K, S) of the default job on N = ``workers`` workers: S = N // 4 (at least 1 and at most
    N - 1) stragglers and K = (N - S) // 2 inputs (at least 1, at most DEFAULT_K_MAX)."""
    S = min(max(1, workers // 4), max(workers - 1, 0))
    return max(1, min(DEFAULT_K_MAX, (workers - S) // 2)), S


def load_default_job(overrides: Iterable = (), defaults: Mapping | None = None) -> Job:
    """The job shipped in gcc_mpi/jobs/default.toml. Only the overrides count as written by the
    user: defaults (e.g. {"code.workers": ranks - 1}) replace the file's values. data.batch and
    stragglers.count follow code.workers (``fit_default_job``) unless the overrides set them;
    the job's ``note`` says what was chosen."""
    flat, sweep = flatten(loads((resources.files("gcc_mpi") / "jobs" / "default.toml")
                                  .read_text(encoding="utf-8")))
    explicit = apply(flat, sweep, overrides)
    set_defaults(flat, sweep, explicit, defaults)
    workers = flat.get("code.workers")
    if ("code.workers" in sweep or not isinstance(workers, int) or isinstance(workers, bool)
            or workers < 1):
        return resolve(flat, sweep, explicit, None, ".")  # a sweep of N, or a bad N: as written
    K, S = fit_default_job(workers)
    fitted = {k: v for k, v in (("data.batch", K), ("stragglers.count", S))
              if k not in explicit and k not in sweep}
    flat.update(fitted)
    job = resolve(flat, sweep, explicit, None, ".")
    if fitted:
        c = job.config
        K, S = c.data.batch, c.stragglers.count
        how = {"data.batch": "chosen", "stragglers.count": "chosen"} | {
            k: "as set" for k in ("data.batch", "stragglers.count") if k not in fitted}
        job = dataclasses.replace(job, note=(
            f"default job for {workers + 1} ranks: N = {workers} workers, K = {K} "
            f"input{'s' * (K > 1)} per batch "
            f"(data.batch, {how['data.batch']}), S = {S} of the workers "
            f"{c.stragglers.delay * 1e3:g} ms late "
            f"(stragglers.count, {how['stragglers.count']}): S = N/4 and K = (N - S)/2 "
            f"(at most {DEFAULT_K_MAX}), "
            f"so coded schemes decode from N - S = {workers - S} results"
            + (", at least 2 per input" if workers - S >= 2 * K else "")))
    return job


def load(path=None, overrides: Iterable = (), defaults: Mapping | None = None) -> Job:
    """The job in the TOML file ``path``, or the default job (None), with ``overrides``
    ("KEY=VALUE" strings, (key, value) pairs or a dict) and new ``defaults`` applied: the one
    way the commands and the Python API load a job."""
    if path is None:
        return load_default_job(overrides, defaults)
    return load_job(path, overrides, defaults)
