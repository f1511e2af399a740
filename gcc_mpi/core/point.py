"""A sweep point set up for running — its data, f, one code and one wait policy per scheme, and
the straggler trace it replays — built once, from the job's resolved config, by the simulator and
by rank 0 of an MPI run (a worker builds nothing but f: ``runtime.worker.build_targets``).

``prepare`` sets up the points of a job: every data file, model, code and trace is built, and so
checked, before any output is written; a trial's inputs and delays are then drawn from its own
seed (``PointSetup.draw``).
"""

import time
from dataclasses import dataclass, field

import numpy as np

from ..codes import make_code
from ..job.rules import resolved_lcc_degree, resolved_robust, resolved_stragglers
from ..job.datasets import load_dataset
from .erasures import evaluate_rows
from ..errors import JobError
from ..job.adversaries import Adversaries
from ..job.seeds import TrialRngs
from ..job.stragglers import draw_delays
from ..targets import check_layout, target_for, try_one_row
from ..files.traces import load_trace
from .trial import WaitPolicy


def prepare(job, points=None, loaded=None):
    """(point, PointSetup) for each point (default: all of the job's). ``loaded``: {point
    index: (dataset, target)} the caller loaded and checked already (the checks before a run,
    ``preflight``), so that nothing is loaded twice."""
    points = job.points if points is None else points
    loaded = loaded or {}
    return [(point, PointSetup.build(point.config, job.base_dir, loaded.get(point.index)))
            for point in points]


def load_data_and_f(config, base_dir="."):
    """A point's data set and f, checked together: f loads, takes the data's layout and gives a
    finite (1, m) output for one input row (a broken user function fails here, as bad input,
    not halfway through the run), and the data hold at least K rows."""
    d = config.data
    dataset = load_dataset(d.source, dim=d.dim, path=d.path, key=d.key, noise=d.noise,
                           labels_key=d.labels_key, seed=config.job.seed, base_dir=base_dir)
    if dataset.n_rows is not None and d.batch > dataset.n_rows:
        dropped = dataset.duplicates
        rows = f"unique rows ({dropped} duplicate rows dropped)" if dropped else "rows"
        raise JobError("data.batch", f"{d.batch} inputs per batch but the {d.source} data have "
                                     f"only {dataset.n_rows} {rows}")
    target = target_for(config, dataset.dim, base_dir)
    check_layout(target, dataset)   # images stored in another layout than the model takes
    t0 = time.perf_counter()
    try_one_row(target, dataset.sample(np.random.default_rng(0), 1))
    target.call_seconds = time.perf_counter() - t0  # what a stop may wait for (interrupts)
    return dataset, target


def scheme_options(config, name, dataset):
    """Keyword arguments of make_code for a scheme, from its [code.<name>] table."""
    opts = dict(config.code.options(name))
    if name == "lcc":
        opts["degree"] = resolved_lcc_degree(config)
    if "robust" in opts:  # built-ins: on when asked, or (auto) when the job has adversaries
        opts["robust"], opts["errors"] = resolved_robust(config, name)
    if name == "gcc-manifold":
        # the reference pool is drawn once per job, from its own stream of the job's seed
        n = opts.pop("pool")
        rng = np.random.default_rng(np.random.SeedSequence([config.job.seed, 4]))
        opts["pool_rows"] = dataset.pool(rng, min(n, dataset.n_rows or n)) if n else None
    return opts


@dataclass
class PointSetup:
    """Everything a sweep point needs, built once: data, f, one code and one wait policy per
    scheme, the straggler trace it replays."""

    config: object
    dataset: object
    target: object
    codes: dict
    policies: dict
    trace: object = None  # stragglers.model = "trace": the measured delays it replays
    rngs: object = field(default=None, repr=False)  # trial_rngs, a chunk of trials at a time
    # the workers that lie and what they send (job.adversaries), the same in both engines
    adversaries: object = field(default=None, repr=False)

    def __post_init__(self):
        if self.rngs is None:
            self.rngs = TrialRngs(self.config.job.seed)
        if self.adversaries is None:
            self.adversaries = Adversaries.of(self.config)

    @classmethod
    def build(cls, config, base_dir=".", data_and_f=None):
        """The point's setup from its resolved config; ``data_and_f``: its (dataset, target),
        when the caller loaded and checked them already (``load_data_and_f``)."""
        dataset, target = data_and_f or load_data_and_f(config, base_dir)
        N, K, S = config.code.workers, config.data.batch, resolved_stragglers(config)
        codes, policies = {}, {}
        for name in config.code.schemes:
            codes[name] = make_code(name, N, K, base_dir=base_dir,
                                    **scheme_options(config, name, dataset))
            policies[name] = WaitPolicy(codes[name], config.decode.wait, S,
                                        config.decode.deadline)
        trace = load_trace(config, base_dir) if config.stragglers.model == "trace" else None
        return cls(config, dataset, target, codes, policies, trace)

    def draw(self, point_index, trial_index, inject=False):
        """A trial's inputs X (K x d) and delays (N,), from the trial's own seed; ``inject``:
        the delays an MPI run injects (they differ from the simulator's for a measured trace,
        whose times include what the run adds by itself: stragglers.Trace)."""
        data_rng, delay_rng = self.rngs(point_index, trial_index)
        X = self.dataset.sample(data_rng, self.config.data.batch)
        delays = draw_delays(delay_rng, self.config.code.workers, self.config.stragglers,
                             self.trace, inject)
        return X, delays

    def reference(self, X):
        """(f(X), "") — the exact results every scheme is scored against — or (None, reason)
        when f fails on the inputs themselves: then the trial is recorded as failed for every
        scheme, and no worker computes anything."""
        Y, codes, texts = evaluate_rows(self.target, X, self.target.output_dim)
        if not codes.any():
            return Y, ""
        k = int(np.flatnonzero(codes)[0])
        return None, f"f failed on input {k} of the batch itself: {texts[k]}"

    def inputs(self, point_index, trial_index):
        """A trial's inputs X (K x d), exact results f(X) and delays (N,)."""
        X, delays = self.draw(point_index, trial_index)
        return X, self.target(X), delays
