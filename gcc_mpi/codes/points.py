"""Evaluation points of the codes on [-1, 1].

Chebyshev points keep every interpolation and smoothing problem here well conditioned up to
N in the thousands (equispaced points would make the Lebesgue constants grow exponentially).
"""

import numpy as np


def chebyshev_alpha(K):
    """Data points alpha_k = cos((2k+1)pi / 2K), k = 0..K-1 (Chebyshev points of the first kind)."""
    k = np.arange(K)
    return np.cos((2 * k + 1) * np.pi / (2 * K))


def chebyshev_beta(N):
    """Worker points beta_n = cos(n pi / (N-1)), n = 0..N-1 (Chebyshev extrema; beta = [0] if
    N = 1)."""
    if N == 1:
        return np.zeros(1)
    n = np.arange(N)
    return np.cos(n * np.pi / (N - 1))
