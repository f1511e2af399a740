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
from scipy.spatial.distance import cdist, pdist

MULTIPLES = 2.0 ** np.arange(-2, 5)
START = 3  # 2 x the median pairwise distance


def chord_kernel(points, kernel):
    """A kernel on indices into the rows of ``points``: ``kernel`` of their Euclidean distance
    (kernels.py's, which take two points of [-1, 1] and a lengthscale)."""
    D = cdist(points, points)

    def k(s, t, lengthscale=1.0):
        return kernel(D[np.asarray(s, int), np.asarray(t, int)], 0.0, lengthscale=lengthscale)

    return k


def chord_problem(U_received, X, kernel):
    """(points t, evaluation points z, kernel, candidate lengthscales) of the fit in the input
    space: t index the received coded inputs, z the batch's inputs X."""
    n = len(U_received)
    scale = np.median(pdist(X)) if len(X) > 1 else 0.0
    if not scale > 0:  # one input, or all alike: the coded inputs' spread instead
        scale = np.median(pdist(U_received)) if n > 1 else 0.0
    scale = scale if scale > 0 else 1.0
    k = chord_kernel(np.vstack([U_received, X]), kernel)
    return np.arange(n), np.arange(n, n + len(X)), k, scale * MULTIPLES
