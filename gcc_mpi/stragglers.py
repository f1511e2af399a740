"""Straggler models: each draws one trial's injected delay per worker, in seconds.

The arrival order, and so the received set, follows from the delays; nothing else is random.
Every model is a function ``(rng, N, params) -> delays`` registered in MODELS, where ``params``
is the [stragglers] section (attribute access).
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


def draw_delays(rng, N, params):
    """One trial's delays (N,) for the model named by ``params.model``."""
    return MODELS[params.model](rng, N, params)
