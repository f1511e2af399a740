"""A trial's random generators, seeded for many trials at once.

Every trial draws its inputs and delays from generators seeded by
``SeedSequence(seed, spawn_key=(point, trial, i))`` (``trial_rngs``). Building the two
SeedSequences of a trial costs more than all the rest of drawing it (their entropy is hashed in a
loop of ~40 steps each), and rank 0 does it once per trial. ``TrialRngs`` hashes a chunk of
CHUNK trials in one go — numpy's SeedSequence algorithm (``mix_entropy``, ``generate_state``)
with each step applied to a column of the chunk — and hands PCG64 the resulting state words,
so the generators are exactly ``default_rng(SeedSequence(...))``'s (tests/test_simulate.py
compares them with numpy's for many seeds and keys).
"""

import numpy as np
from numpy.random.bit_generator import ISeedSequence

CHUNK = 256
POOL = 4  # SeedSequence's pool size (words)
INIT_A, MULT_A = 0x43B0D7E5, 0x931E8875
INIT_B, MULT_B = 0x8B51F9DD, 0x58F38DED
MIX_L, MIX_R = 0xCA01F9DD, 0x4973F715
SHIFT = 16
_U32 = (1 << 32) - 1


class _State(ISeedSequence):
    """A seed sequence whose 4 uint64 state words are already known (what PCG64 asks for)."""

    __slots__ = ("words",)

    def __init__(self, words):
        self.words = words

    def generate_state(self, n_words, dtype=np.uint32):
        if n_words != 4 or np.dtype(dtype) != np.uint64:  # PCG64 asks for exactly this
            raise ValueError("only PCG64's 4 uint64 words are known")
        return self.words


def _words(n):
    """``n`` as SeedSequence takes an int: 32-bit words, least significant first ([0] for 0)."""
    out = [n & _U32]
    n >>= 32
    while n:
        out.append(n & _U32)
        n >>= 32
    return out


def states(seed, keys):
    """PCG64 state words (len(keys), 4) uint64 of SeedSequence(seed, spawn_key=k) for each row
    k of ``keys`` (non-negative ints below 2**32, one column per key element)."""
    keys = np.asarray(keys, dtype=np.uint64)
    if keys.size and keys.max() > _U32:
        raise ValueError("spawn keys must be below 2**32")
    run = _words(int(seed))
    run += [0] * (POOL - len(run))  # with a spawn key, the run entropy is padded to the pool
    entropy = np.empty((len(keys), len(run) + keys.shape[1]), dtype=np.uint32)
    entropy[:, :len(run)] = run
    entropy[:, len(run):] = keys
    h = INIT_A

    def hashmix(value):
        nonlocal h
        value = value ^ np.uint32(h)
        h = (h * MULT_A) & _U32
        value = value * np.uint32(h)
        return value ^ (value >> np.uint32(SHIFT))

    def mix(x, y):
        r = np.uint32(MIX_L) * x - np.uint32(MIX_R) * y
        return r ^ (r >> np.uint32(SHIFT))

    pool = [hashmix(entropy[:, i]) for i in range(POOL)]
    for src in range(POOL):
        for dst in range(POOL):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    for src in range(POOL, entropy.shape[1]):
        for dst in range(POOL):
            pool[dst] = mix(pool[dst], hashmix(entropy[:, src]))
    h = INIT_B
    out = np.empty((len(keys), 2 * POOL), dtype=np.uint32)
    for i in range(2 * POOL):  # generate_state(4, uint64): 8 uint32 words, little-endian pairs
        value = pool[i % POOL] ^ np.uint32(h)
        h = (h * MULT_B) & _U32
        value = value * np.uint32(h)
        out[:, i] = value ^ (value >> np.uint32(SHIFT))
    return out.astype("<u4").view("<u8").astype(np.uint64)


class TrialRngs:
    """``rngs(point, trial)`` = ``trial_rngs(seed, point, trial)``: the generators of a
    trial's inputs and delays, seeded a chunk of trials at a time."""

    def __init__(self, seed):
        self.seed = seed
        self.chunk = None   # (point, first trial) of the cached chunk
        self.words = None   # (CHUNK, 2, 4) uint64

    def __call__(self, point, trial):
        start = trial - trial % CHUNK
        if self.chunk != (point, start):
            trials = np.repeat(np.arange(start, start + CHUNK), 2)
            keys = np.column_stack([np.full(2 * CHUNK, point), trials, np.tile([0, 1], CHUNK)])
            self.words = states(self.seed, keys).reshape(CHUNK, 2, 4)
            self.chunk = (point, start)
        words = self.words[trial - start]
        return [np.random.Generator(np.random.PCG64(_State(w))) for w in words]


def trial_rngs(seed, point_index, trial_index):
    """Generators for a trial's inputs and delays: SeedSequence(seed).spawn(...)[point].spawn(...)
    [trial].spawn(2), each built directly from its spawn key so any trial can be rerun on its own
    (and without the parent sequences, which spawn() would only copy the key from)."""
    return [np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(point_index,
                                                                          trial_index, i)))
            for i in range(2)]
