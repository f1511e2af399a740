"""Straggler models: each draws one trial's injected delay per worker, in seconds.

The arrival order, and so the received set, follows from the delays; nothing else is random.
A model is one ``Model`` record, and everything the project knows of it is there: its draw
``(rng, N, params) -> delays`` (``params``: the [stragglers] table, attribute access), its
parameters (the [stragglers] keys it reads: check and default), its S rule (how many results
the "fastest" decode policy does not wait for, ``decode.stragglers = "auto"``) and its words for
messages and figures. The job file's [stragglers] table is the union of the models'
parameters; the checks, the decode policy and the figures read the record. ``register`` adds a
model (docs/contributing.md). The "trace" model replays measured delays (a :class:`Trace`,
loaded once by the caller from ``stragglers.path``, see gcc_mpi.files.traces).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .checks import BOOL, Setting, integer, number, optional, text

# the parameters several models share (one declaration each)
COUNT = Setting(integer(0), 0)                       # workers delayed
DELAY = Setting(number(0.0), 0.1)                    # seconds
RATE = Setting(number(0.0, above=True), 50.0)        # 1/s
SHIFT = Setting(number(0.0), 0.02)                   # s
P = Setting(number(0.0, hi=1.0), 0.1)                # probability per worker and trial


def ms(v) -> str:
    """Seconds as milliseconds for a figure's words ("?" when unknown: a swept parameter)."""
    return "?" if v is None else f"{1e3 * v:g} ms"


def no_late(p, N) -> int:
    return 0


@dataclass(frozen=True)
class Model:
    """One straggler model: the ``stragglers.model`` word ``name`` and all that follows from it.

    ``draw(rng, N, p)``: one trial's delays (N,), seconds (None: replays a Trace). ``params``:
    {name: Setting} of the [stragglers] keys it reads (a name two models share must be the same
    Setting). ``late(p, N)``: S when ``decode.stragglers = "auto"``, which ``late_key`` sets
    (None: S = 0) by ``late_rule`` (words, e.g. "round(stragglers.p * code.workers)"; None: S
    is that key's value), ``late_short`` its short form in figures ("round(pN)"). ``counts``:
    parameters counting workers (at most code.workers). ``required``: {parameter: why} that
    must be set. ``words(get)``: the model in a figure's title, ``get(name)`` giving a
    parameter's value or None where it is swept.
    """

    name: str
    draw: Callable | None
    params: dict = field(default_factory=dict)
    late: Callable = no_late
    late_key: str | None = None
    late_rule: str | None = None
    late_short: str | None = None
    counts: tuple = ()
    required: dict = field(default_factory=dict)
    words: Callable | None = None

    def describe(self, get) -> str:
        return self.words(get) if self.words else f"{self.name} delays"

    def waits_for(self, get):
        """S in a figure's words: its value, its rule, or "S" where it is swept."""
        if self.late_key is None:
            return 0
        if self.late_short is not None:
            return self.late_short
        v = get(self.late_key)
        return "S" if v is None else v

    def explain_late(self, p) -> str:
        """How S follows from the parameters, for a message about decode.stragglers."""
        if self.late_rule is not None or self.late_key is None:
            return self.late_rule or ""
        return f"stragglers.{self.late_key} = {getattr(p, self.late_key)}"


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


def shifted_exponential_slow(rng, N, p):
    """shift + Exp(rate), and each worker with probability ``p`` ``factor`` times that: a thin
    body with a few much slower machines, as measured in production clusters (Dolly, NSDI'13:
    the slowest tasks 8x the median)."""
    d = p.shift + rng.exponential(1.0 / p.rate, N)
    return np.where(rng.random(N) < p.p, p.factor * d, d)


def pareto(rng, N, p):
    """Pareto with minimum ``scale`` seconds and tail index ``shape`` (heavy tail)."""
    return p.scale * (1.0 + rng.pareto(p.shape, N))


def lognormal(rng, N, p):
    """median * exp(sigma Z), Z standard normal."""
    return p.median * np.exp(p.sigma * rng.standard_normal(N))


def _mean(get):
    rate = get("rate")
    return "?" if rate is None else f"{1e3 / rate:g} ms"


def _late_workers(how):
    def words(get):
        n = "S" if get("count") is None else get("count")
        return f"{n} {how} stragglers {ms(get('delay'))} late"
    return words


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


MODELS = {}  # {name: Model}, in the order the [stragglers] table lists their parameters


def params() -> dict:
    """{name: Setting} of every parameter of every model: the [stragglers] table after
    ``model``, in the order the models declare them."""
    out = {}
    for m in MODELS.values():
        for name, s in m.params.items():
            out.setdefault(name, s)
    return out


_listeners = []


def on_change(listener):
    """Call ``listener()`` whenever a model is registered or removed (the job schema rebuilds
    its [stragglers] table)."""
    _listeners.append(listener)


def register(model: Model) -> Model:
    """Add ``model`` (or replace the one of its name): its ``stragglers.model`` word and its
    parameters are job-file keys from now on, in this process. A parameter another model
    declares already must be the same Setting."""
    taken = {n: s for m in MODELS.values() if m.name != model.name for n, s in m.params.items()}
    for name, s in model.params.items():
        if not name.isidentifier() or name == "model":
            raise ValueError(f"straggler model {model.name!r}: parameter {name!r} is not a "
                             "plain name other than 'model'")
        if name in taken and taken[name] != s:
            raise ValueError(f"straggler model {model.name!r}: parameter {name!r} is declared "
                             f"already with another check or default")
    MODELS[model.name] = model
    for listener in _listeners:
        listener()
    return model


def unregister(name: str) -> None:
    """Remove the model ``name`` (a test's, a notebook's)."""
    MODELS.pop(name, None)
    for listener in _listeners:
        listener()


for _model in (
    Model("none", none, words=lambda get: "no stragglers"),
    Model("fixed", fixed, {"count": COUNT, "delay": DELAY}, late=lambda p, N: p.count,
          late_key="count", counts=("count",), words=_late_workers("random")),
    Model("adversarial", adversarial, {"count": COUNT, "delay": DELAY},
          late=lambda p, N: p.count, late_key="count", counts=("count",),
          words=_late_workers("adversarial")),
    Model("bernoulli", bernoulli, {"delay": DELAY, "p": P},
          late=lambda p, N: math.floor(p.p * N + 0.5),   # round half up
          late_key="p", late_rule="round(stragglers.p * code.workers)", late_short="round(pN)",
          words=lambda get: (f"each worker {ms(get('delay'))} late with probability "
                             f"{'p' if get('p') is None else get('p')}")),
    Model("exponential", exponential, {"rate": RATE},
          words=lambda get: f"delays Exp(mean {_mean(get)})"),
    Model("shifted-exponential", shifted_exponential,
          {"rate": RATE, "shift": SHIFT},
          words=lambda get: f"delays {ms(get('shift'))} + Exp(mean {_mean(get)})"),
    Model("shifted-exponential-slow", shifted_exponential_slow,
          {"rate": RATE, "shift": SHIFT, "p": P,
           "factor": Setting(number(1.0), 8.0)},
          words=lambda get: (f"delays {ms(get('shift'))} + Exp(mean {_mean(get)}), "
                             f"x {get('factor') or '?'} with probability "
                             f"{'p' if get('p') is None else get('p')}")),
    Model("pareto", pareto, {"shape": Setting(number(0.0, above=True), 2.0),
                             "scale": Setting(number(0.0, above=True), 0.01)},     # s
          words=lambda get: f"Pareto delays (min {ms(get('scale'))}, shape {get('shape')})"),
    Model("lognormal", lognormal, {"median": Setting(number(0.0, above=True), 0.02),  # s
                                   "sigma": Setting(number(0.0), 0.5)},
          words=lambda get: f"lognormal delays (median {ms(get('median'))})"),
    Model("trace", None, {
        "path": Setting(optional(text())),     # a probe .h5, .npy or .csv
        "shuffle": Setting(BOOL, False),       # random trace workers each trial
        "resample": Setting(BOOL, False),      # allow fewer trace workers than N
    }, required={"path": " (a probe file, or a .npy or .csv of delays: rounds x workers)"}),
):
    MODELS[_model.name] = _model


def draw_delays(rng, N, params, trace=None, inject=False):
    """One trial's delays (N,) for the model named by ``params.model``; model "trace" replays
    ``trace`` (``inject``: the delays an MPI run injects, see Trace)."""
    if params.model == "trace":
        return trace.draw(rng, N, params.shuffle, params.resample, inject)
    return MODELS[params.model].draw(rng, N, params)
