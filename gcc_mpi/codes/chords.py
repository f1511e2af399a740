"""The decoder's kernel in the input space: a kernel of the chord lengths of the encoder curve.

A result y_n = f(u(beta_n)) is a value of f at the coded input u(beta_n), and the decoder wants f
at the inputs x_k = u(alpha_k). The master knows both points in R^d (it encoded them), so it can
measure how far apart they are there: ||u(z) - u(z')||, the chord between two points of the
curve. f's smoothness lives in its input space, not along z: where the curve runs fast, or comes
back near itself, two results close in z can be far apart as inputs of f, and results far apart
in z close. A positive definite kernel of the Euclidean distance in R^d, restricted to points of
the curve, is positive definite, so the same kernel ridge regression (lengthscale.py) fits
g = f o u with it: the decoder becomes a regression of f itself on the received coded inputs,
evaluated at the batch.

Its candidate lengthscales are multiples of the batch's median pairwise distance (the data's own
scale, whatever N): from a quarter (the fit reverts to zero between neighbouring coded inputs)
to 16 (nearly a low-degree polynomial over the batch). Measured on the digits networks the
choice is mostly 1-2 times that distance, on polynomials 4-16 (docs/science.md, "The decoder in
the input space"); the walk starts at 2.
"""

import numpy as np

from .lengthscale import LengthscaleSmoother

MULTIPLES = 2.0 ** np.arange(-2, 7)
START = 3  # 2 x the median pairwise distance


def distances(points):
    """Euclidean distances between the rows of ``points``, from one product of the rows centred
    on their mean: |a - b|^2 = |a|^2 + |b|^2 - 2 a.b loses only eps |a|^2 / |a - b|^2 of its
    relative accuracy, which centring keeps to about 1e-11 for the closest coded inputs of
    N = 320 (the fits reach -150 dB; cdist costs 4x as much)."""
    P = points - points.mean(axis=0)
    sq = np.einsum("ij,ij->i", P, P)
    D = P @ P.T
    D *= -2.0
    D += sq[:, None]
    D += sq[None, :]
    np.maximum(D, 0.0, out=D)
    np.fill_diagonal(D, 0.0)
    return np.sqrt(D, out=D)


class ChordSmoother(LengthscaleSmoother):
    """The smoother from the received coded inputs (points 0..n-1) to the batch's inputs (n..)
    with ``kernel`` of their distances ``D`` (kernels.py's take two points and a lengthscale:
    here the distance and 0)."""

    def __init__(self, D, n, kernel, lengthscales):
        self.D_tt, self.D_zt = D[:n, :n], D[n:, :n]
        super().__init__(np.arange(n), np.arange(n, len(D)), kernel, lengthscales)

    def gram(self, lengthscales):
        return self.kernel(self.D_tt, 0.0, lengthscale=lengthscales[:, None, None])

    def cross(self, z, lengthscale):
        if z is not None:
            raise ValueError("the input-space smoother evaluates at the batch's inputs only")
        return self.kernel(self.D_zt, 0.0, lengthscale=lengthscale)


def chord_smoother(U_received, X, kernel):
    """The smoother in the input space from the received coded inputs to the batch's inputs X,
    with its candidate lengthscales (multiples of the batch's median distance)."""
    n = len(U_received)
    D = distances(np.vstack([U_received, X]))
    scale = median_distance(D[n:, n:])
    if not scale > 0:  # one input, or all alike: the coded inputs' spread instead
        scale = median_distance(D[:n, :n])
    scale = scale if scale > 0 else 1.0
    return ChordSmoother(D, n, kernel, scale * MULTIPLES)


def median_distance(D):
    """The median distance between distinct points of the distance matrix D (the upper of the
    two middle values for an even count); 0 for one point."""
    K = len(D)
    if K < 2:
        return 0.0
    ordered = np.sort(D, axis=None)  # the K zeros of the diagonal first, then each pair twice
    return float(ordered[K + (K * K - K) // 2])
