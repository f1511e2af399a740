"""LCC: Lagrange coded computing over the reals (Yu et al., 2019).

u_enc is the polynomial of degree K-1 through (alpha_k, x_k); f(u_enc(z)) is then a polynomial
of degree (K-1)*deg for a polynomial f of degree deg, so any (K-1)*deg + 1 results determine it.
Interpolation is barycentric (scipy), which is stable on Chebyshev-like points; what remains
unstable is the decoder when the received points leave large gaps, which LCC cannot avoid:
its Lebesgue constant is checked and a warning is issued when it is large.
"""

import warnings

import numpy as np
from scipy.interpolate import BarycentricInterpolator

from .base import DecodeError, LinearCode
from .points import chebyshev_alpha, chebyshev_beta

ILL_CONDITIONED = 1e8  # Lebesgue constant beyond which rounding errors reach ~1e-8 relative


def lagrange_matrix(nodes, z):
    """Matrix L (len(z) x len(nodes)): L @ y is the interpolating polynomial at z. scipy visits
    the nodes in a random order when it computes the weights (for stability); a fixed rng keeps
    every run's last bits the same."""
    return BarycentricInterpolator(nodes, np.eye(len(nodes)), rng=0)(z)


class LCC(LinearCode):
    exact = True

    def __init__(self, N, K, degree):
        super().__init__(N, K, chebyshev_alpha(K), chebyshev_beta(N))
        self.degree = degree
        self.threshold = (K - 1) * degree + 1
        self.E = lagrange_matrix(self.alpha, self.beta)

    def decodable(self, received_mask):
        return int(received_mask.sum()) >= self.needed()

    def needed(self):
        """Results to decode from: (K-1)*deg + 1, and 2A more to correct A wrong ones."""
        return self.threshold + (2 * self.errors if self.robust else 0)

    def shortfall(self, mask):
        more = f" + 2A with A={self.errors}" if self.robust else ""
        return (f"lcc needs {self.needed()} results ((K-1)*deg+1{more} with K={self.K}, "
                f"deg={self.degree}), got {int(mask.sum())}")

    def trusted(self, received, Y):
        """Reed–Solomon error correction over the reals (codes.robust.berlekamp_welch)."""
        from .robust import berlekamp_welch

        keep, gap = berlekamp_welch(self.beta[received], Y, self.threshold - 1, self.errors)
        if keep is None:
            raise DecodeError(f"more than A={self.errors} wrong results: lcc corrects at most "
                              f"(n - {self.threshold}) / 2 of n")
        return keep, {"bw_gap": gap}

    def decode_matrix(self, received):
        D = lagrange_matrix(self.beta[received], self.alpha)
        lebesgue = np.abs(D).sum(axis=1).max()
        if lebesgue > ILL_CONDITIONED:
            warnings.warn(f"lcc decoder is ill-conditioned (Lebesgue constant {lebesgue:.1e}): "
                          "expect rounding errors; use fewer inputs or an approximate scheme",
                          RuntimeWarning, stacklevel=2)
        return D, {}
