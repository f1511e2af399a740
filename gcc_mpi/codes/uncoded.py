"""Uncoded computation and replication: the baselines that must wait for specific workers."""

import numpy as np

from .base import DecodeError, LinearCode


class Uncoded(LinearCode):
    """Worker k < K computes f(x_k); workers K..N-1 stay idle. Exact, but needs every one."""

    exact = True

    def __init__(self, N, K):
        super().__init__(N, K)
        self.active = np.arange(K)
        self.E = np.eye(N, K)

    def decodable(self, received_mask):
        return bool(received_mask[: self.K].all())

    def shortfall(self, mask):
        return f"uncoded needs all {self.K} results, got {int(mask[: self.K].sum())}"

    def decode_matrix(self, received):
        return np.eye(self.K), {}  # decodable means received == 0..K-1, in order


class Replication(LinearCode):
    """Worker n computes f(x_{n mod K}): each input has N // K or N // K + 1 replicas, and the
    first replica of each to arrive wins. Exact once every input has one result."""

    exact = True

    def __init__(self, N, K):
        super().__init__(N, K)
        self.owner = np.arange(N) % K
        self.E = np.eye(K)[self.owner]

    def decodable(self, received_mask):
        if not self.robust:
            return len(np.unique(self.owner[received_mask])) == self.K
        return bool(np.all(np.bincount(self.owner[received_mask], minlength=self.K)
                           >= self.copies_needed()))

    def copies_needed(self):
        """Per input, copies to decode from: 1, or (robust) 2A + 1 for a majority against A
        liars, or all of the input's copies when it has fewer."""
        replicas = np.bincount(self.owner, minlength=self.K)
        return np.minimum(2 * self.errors + 1, replicas) if self.robust else np.ones(self.K, int)

    def shortfall(self, mask):
        missing = int(np.sum(np.bincount(self.owner[mask], minlength=self.K)
                             < self.copies_needed()))
        if not self.robust:
            return f"replication has no result for {missing} of {self.K} inputs"
        return (f"replication has fewer than 2A+1 = {2 * self.errors + 1} results (or all the "
                f"copies) for {missing} of {self.K} inputs")

    def trusted(self, received, Y):
        """The copies at their input's coordinate-wise median (codes.robust.replica_median)."""
        from .robust import replica_median

        keep = replica_median(self.owner[received], Y)
        if len(np.unique(self.owner[received[keep]])) < self.K:
            raise DecodeError("replication: no copy of an input agrees with its median")
        return keep, {}

    def decode_matrix(self, received):
        # any replica is exact (f is deterministic): take the first received one per input
        first = np.unique(self.owner[received], return_index=True)[1]
        D = np.zeros((self.K, len(received)))
        D[self.owner[received][first], first] = 1.0
        return D, {}
