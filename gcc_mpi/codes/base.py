"""The interface every scheme implements: a linear code over the reals.

A scheme is built once for its points (N workers, K inputs) and precomputes what it can: the
encoder matrix E (N x K) and, per received set, the decoder. ``encode(X)`` gives the coded inputs
for the active workers; ``decode(received, Y)`` gives Y_hat (K x m) from the results of the
workers in ``received`` (any order, rows of Y aligned with it).
"""

from collections import OrderedDict

import numpy as np


class DecodeError(RuntimeError):
    """Too few (or the wrong) results to decode: the trial is recorded as failed with this reason."""


class LinearCode:
    exact = False  # exact schemes decode f(X) exactly once decodable; approximate ones improve with more results
    trial_alpha = False  # True: encode chooses each trial's alpha and reports it as info["alpha"]

    def __init__(self, N, K, alpha=None, beta=None):
        self.N, self.K = N, K
        self.alpha, self.beta = alpha, beta
        self.active = np.arange(N)  # workers that get a coded input
        self.E = None
        # received sets remembered: with few workers the same sets recur often; with thousands
        # they hardly ever do, and a decoder holds O(N^2) numbers (1 GB for 30 at N = 4096)
        self.cache_size = int(np.clip(2**20 // N**2, 4, 256))
        self._cache = OrderedDict()

    # -- encoding ---------------------------------------------------------------------------
    def encode(self, X):
        """Coded inputs for the active workers, shape (len(active), d), and encoder facts."""
        return self.E[self.active] @ X, {}

    # -- decoding ---------------------------------------------------------------------------
    def decodable(self, received_mask):
        """Whether the results of the workers in ``received_mask`` (bool, length N) suffice."""
        return bool(received_mask.any())

    def decode_matrix(self, received):
        """(D, info) with Y_hat = D @ Y[received]; ``received`` sorted ascending. Override."""
        raise NotImplementedError

    def decode(self, received, Y, alpha=None):
        """Y_hat (K x m) and a dict of decoder facts (e.g. the chosen lambda).

        ``alpha`` is the trial's data points when the encoder chose them (a data-dependent code
        reports them as ``info["alpha"]`` from ``encode``); None means the code's own.
        """
        received = np.asarray(received)
        mask = np.zeros(self.N, bool)
        mask[received] = True
        if len(received) == 0 or not self.decodable(mask):
            raise DecodeError(self.shortfall(mask))
        order = np.argsort(received, kind="stable")
        return self._decode_sorted(received[order], np.asarray(Y)[order], alpha)

    def decoder(self, received):
        """What ``decode_matrix`` built for this received set (sorted), from an LRU cache."""
        key = received.tobytes()
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self.decode_matrix(received)
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return hit

    def _decode_sorted(self, received, Y, alpha=None):
        D, info = self.decoder(received)
        return D @ Y, info

    def shortfall(self, mask):
        return f"no results received (0 of {len(self.active)})"
