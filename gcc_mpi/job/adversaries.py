"""Adversaries: workers whose result arrives on time and is wrong (the job's [adversaries] table).

Which workers lie in a trial, and what each one sends instead of f(x), follow from the job's
seed alone, so both engines corrupt the same results the same way: ``simulate`` replaces a
liar's result by ``corrupt(...)`` of it, and over MPI the worker itself corrupts what it sends
(gcc_mpi.runtime.worker), so the wire carries the wrong numbers as a faulty node's would.

The streams (``numpy.random.SeedSequence(job.seed, spawn_key=...)``), beside a trial's inputs
(key (point, trial, 0)) and delays (1):

- (point, trial, 2): which workers lie in the trial (placement "random", "worst-case");
- (point, FIXED_KEY, 2): which workers lie in every trial of the point (placement "fixed");
- (point, trial, 3, worker): that worker's corruption (its noise, its flipped bit);
- (point, trial, 4): the shift colluding liars share in the trial.

A worker computes this for its own tasks only (a few SeedSequences per lying result), and it
imports nothing but numpy for it: this module is of the job layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .checks import Setting, choice, int_range, integer, number, or_words

KINDS = ("noise", "sign-flip", "constant", "scaled", "colluding", "bit-flip")
PLACEMENTS = ("random", "worst-case", "fixed")
FIXED_KEY = 2**32 - 1  # the trial slot of the spawn key of placement "fixed": no trial's index

# the [adversaries] table: each key's check and default (docs/jobs.md says what each means)
PARAMS = {
    "count": Setting(integer(0), 0),                       # liars per trial
    "p": Setting(number(0.0, hi=1.0), 0.0),                # or: each worker with probability p
    "placement": Setting(choice(*PLACEMENTS), "random"),
    "kind": Setting(choice(*KINDS), "sign-flip"),
    "size": Setting(number(0.0), 10.0),                    # relative to the signal (see KINDS)
    "bit": Setting(or_words(int_range(0, 63), "random"), "random"),   # bit-flip: which bit
}


def declared(params) -> bool:
    """Whether the job has adversaries at all (count or p above 0)."""
    return params.count > 0 or params.p > 0


def errors(params, N) -> int:
    """The wrong results a robust decoder is built to correct (its A): ``count``, or with a
    probability 2pN rounded up (a trial has more liars than that rarely)."""
    return params.count if params.count else min(math.ceil(2 * params.p * N), N)


def _rng(seed, *key):
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=key))


def liars(seed, point, trial, N, params) -> np.ndarray:
    """bool (N,): the workers that lie in trial ``trial`` of point ``point``."""
    out = np.zeros(N, bool)
    if not declared(params):
        return out
    if params.placement == "fixed":
        rng = _rng(seed, point, FIXED_KEY, 2)
    else:
        rng = _rng(seed, point, trial, 2)
    if params.p > 0:
        return rng.random(N) < params.p
    count = min(params.count, N)
    if params.placement == "worst-case":
        # consecutive workers: the widest stretch of the decoder's points, as the adversarial
        # straggler model's
        start = rng.integers(0, N - count + 1)
        out[start:start + count] = True
    else:
        out[rng.choice(N, size=count, replace=False)] = True
    return out


def _rms(y):
    return float(np.sqrt(np.mean(np.square(y)))) if y.size else 0.0


def flip_bit(y, rng, bit):
    """``y`` with one bit of one entry (chosen by ``rng``) flipped: silent data corruption."""
    out = np.array(y, dtype=np.float64, copy=True)
    i = rng.integers(out.size)
    b = rng.integers(64) if bit == "random" else bit
    words = out.view(np.uint64)
    words[i] ^= np.uint64(1) << np.uint64(b)
    return out


def corrupt(y, seed, point, trial, worker, params) -> np.ndarray:
    """What liar ``worker`` sends instead of its result ``y`` (m,) in that trial.

    noise: y + size·rms(y)·Z, Z standard normal; sign-flip: −size·y; constant: size in every
    entry; scaled: size·y; colluding: y + size·v, one v ~ N(0, I) shared by every liar of the
    trial, so that they agree on one wrong function f + size·v (size in f's units); bit-flip:
    one bit of one entry flipped (``bit``, or a random one)."""
    y = np.asarray(y, dtype=np.float64)
    kind, size = params.kind, params.size
    if kind == "sign-flip":
        return -size * y
    if kind == "scaled":
        return size * y
    if kind == "constant":
        return np.full(y.shape, size)
    if kind == "colluding":
        v = _rng(seed, point, trial, 4).standard_normal(y.shape)
        return y + size * v
    rng = _rng(seed, point, trial, 3, worker)
    if kind == "noise":
        return y + size * _rms(y) * rng.standard_normal(y.shape)
    return flip_bit(y, rng, params.bit)


@dataclass
class Adversaries:
    """A sweep point's adversaries, from its resolved config (its job.seed, code.workers and
    [adversaries] table): ``liars(point, trial)`` and ``corrupt(point, trial, workers, Y)``.
    The liars of the last trial asked are remembered (a trial has one round per scheme)."""

    seed: int
    N: int
    params: object

    def __post_init__(self):
        self.on = declared(self.params)
        self._last = (None, None)

    @classmethod
    def of(cls, config):
        return cls(config.job.seed, config.code.workers, config.adversaries)

    def liars(self, point, trial) -> np.ndarray:
        if self._last[0] != (point, trial):
            self._last = ((point, trial), liars(self.seed, point, trial, self.N, self.params))
        return self._last[1]

    def corrupt(self, point, trial, workers, Y) -> np.ndarray:
        """``Y`` (rows: the results of ``workers``) with the liars' rows corrupted (a copy
        when any is)."""
        if not self.on or len(workers) == 0:
            return Y
        lying = self.liars(point, trial)[np.asarray(workers, dtype=np.int64)]
        if not lying.any():
            return Y
        Y = np.array(Y, dtype=np.float64, copy=True)
        for row in np.flatnonzero(lying):
            Y[row] = corrupt(Y[row], self.seed, point, trial, int(workers[row]), self.params)
        return Y
