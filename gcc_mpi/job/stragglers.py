"""Straggler models: each draws one trial's injected delay per worker, in seconds.

The arrival order, and so the received set, follows from the delays; nothing else is random.
Every model is a function ``(rng, N, params) -> delays`` registered in MODELS, where ``params``
is the [stragglers] section (attribute access). The "trace" model replays measured delays
(a :class:`Trace`, loaded once by the caller from ``stragglers.path``, see gcc_mpi.files.traces).
"""

import numpy as np


def none(rng, N, p):
    return np.zeros(N)


def fixed(rng, N, p):
    """``count`` workers chosen at random are delayed by ``delay``."""
    d = np.zeros(N)
    d[rng.choice(N, size=p.count, replace=False)] = p.delay
    return d


def adversarial(rng, N, p):
    """``count`` workers with consecutive beta are delayed by ``delay``: the widest gap in the
    decoder's points, the worst case for interpolation."""
    d = np.zeros(N)
    if p.count:
        start = rng.integers(0, N - p.count + 1)
        d[start:start + p.count] = p.delay
    return d


def bernoulli(rng, N, p):
    """Each worker is delayed by ``delay`` independently with probability ``p``."""
    return np.where(rng.random(N) < p.p, p.delay, 0.0)


def exponential(rng, N, p):
    """Exp(rate): mean 1/rate seconds."""
    return rng.exponential(1.0 / p.rate, N)


def shifted_exponential(rng, N, p):
    """shift + Exp(rate): every worker needs at least ``shift`` seconds."""
    return p.shift + rng.exponential(1.0 / p.rate, N)


def pareto(rng, N, p):
    """Pareto with minimum ``scale`` seconds and tail index ``shape`` (heavy tail)."""
    return p.scale * (1.0 + rng.pareto(p.shape, N))


def lognormal(rng, N, p):
    """median * exp(sigma Z), Z standard normal."""
    return p.median * np.exp(p.sigma * rng.standard_normal(N))


class Trace:
    """Measured task times, ``times`` (rounds x trace workers, seconds), replayed by the "trace"
    model: each trial takes one round at random (its delay generator's draw) and gives each of
    the N workers one trace worker's time in that round, so what happened to the cluster at
    once (a busy node, a network hiccup) stays together.

    ``baseline`` (per trace worker, seconds) is the part of a measured time that an MPI run
    reproduces by itself (its own messages, f and waiting for a core;
    gcc_mpi.files.traces.baseline):
    an MPI run injects ``times - baseline`` (at least 0), so that a result arrives about
    ``times`` after its send, as measured; the simulator, where nothing else takes time,
    replays ``times`` whole. A plain delay file has baseline 0: its delays are injected and
    replayed as they are.

    ``master`` (seconds, from a probe file) is rank 0's median time for the probe's reference
    computation among its workers; the simulator compares it with its own time for the same
    work (gcc_mpi.files.traces.reference_work) to scale its encode and decode times to the probed
    rank 0's. None: not measured (a plain delay file, an earlier probe).
    """

    def __init__(self, times, baseline=None, source="", master=None):
        self.times = np.asarray(times, dtype=np.float64)
        self.baseline = (np.zeros(self.times.shape[1]) if baseline is None
                         else np.asarray(baseline, dtype=np.float64))
        self.source = source
        self.master = master

    @property
    def workers(self):
        return self.times.shape[1]

    def columns(self, rng, N, shuffle, resample):
        """Which trace worker each of the N workers replays this trial: worker n replays trace
        worker n, or (``shuffle``) N distinct trace workers at random; with fewer trace workers
        than N (allowed only with ``resample``), worker n replays n mod W, or (``shuffle``) N
        drawn with replacement."""
        W = self.workers
        if W < N and not resample:
            raise ValueError(f"the trace has {W} workers, fewer than N = {N}")
        if not shuffle:
            return np.arange(N) % W
        return rng.choice(W, size=N, replace=W < N)

    def draw(self, rng, N, shuffle=False, resample=False, inject=False):
        """One trial's delays (N,): replayed (the simulator) or to inject (an MPI run)."""
        row = rng.integers(self.times.shape[0])
        cols = self.columns(rng, N, shuffle, resample)
        d = self.times[row, cols]
        return np.maximum(d - self.baseline[cols], 0.0) if inject else d


MODELS = {
    "none": none,
    "fixed": fixed,
    "adversarial": adversarial,
    "bernoulli": bernoulli,
    "exponential": exponential,
    "shifted-exponential": shifted_exponential,
    "pareto": pareto,
    "lognormal": lognormal,
}


def draw_delays(rng, N, params, trace=None, inject=False):
    """One trial's delays (N,) for the model named by ``params.model``; model "trace" replays
    ``trace`` (``inject``: the delays an MPI run injects, see Trace)."""
    if params.model == "trace":
        return trace.draw(rng, N, params.shuffle, params.resample, inject)
    return MODELS[params.model](rng, N, params)
