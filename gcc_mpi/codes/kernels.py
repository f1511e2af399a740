"""Kernels on [-1, 1] for the smoothing codes.

Each kernel is a function of two broadcastable arrays of points. ``spline_semikernel`` is only
conditionally positive definite and is used with a linear null space (it gives the natural cubic
smoothing spline); the others are positive definite and are used for plain kernel ridge regression.
"""

import numpy as np


def spline_semikernel(s, t):
    """|s - t|^3 / 12: the Green's function of d^4/dz^4, so c^T K c = integral of u''(z)^2."""
    return np.abs(s - t) ** 3 / 12.0


def sobolev2(s, t, lengthscale=None):
    """Reproducing kernel of the Sobolev space W^2 on [-1, 1] mapped to [0, 1] (the "cubic spline
    kernel" of Wahba, Spline Models for Observational Data, 1990, eq. 2.3.9), with inner product
    (int u)^2 + (int u')^2 + int u''^2, so all of u is penalised, unlike the smoothing spline.
    The kernel has no length scale; the argument is accepted for a uniform signature."""
    x, y = (s + 1) / 2, (t + 1) / 2
    k1x, k1y = x - 0.5, y - 0.5
    k2x, k2y = (k1x**2 - 1 / 12) / 2, (k1y**2 - 1 / 12) / 2
    d = np.abs(x - y) - 0.5
    k4 = (d**4 - d**2 / 2 + 7 / 240) / 24
    return 1 + k1x * k1y + k2x * k2y - k4


def matern32(s, t, lengthscale=1.0):
    r = np.sqrt(3) * np.abs(s - t) / lengthscale
    return (1 + r) * np.exp(-r)


def matern52(s, t, lengthscale=1.0):
    """(1 + r + r^2 / 3) exp(-r), r = sqrt(5) |s - t| / lengthscale: GCC's default kernel,
    evaluated for thousands of window entries per decode, so in place where the shapes allow
    (the same operations in the same order as the plain formula, so the same bits)."""
    r = np.abs(s - t)
    r *= np.sqrt(5)
    if np.ndim(lengthscale) == 0:
        r /= lengthscale
    else:  # one lengthscale per leading index: the result is larger than |s - t|
        r = r / lengthscale
    e = np.exp(np.negative(r))
    p = r**2
    p /= 3
    r += 1
    r += p
    r *= e
    return r


def gaussian(s, t, lengthscale=1.0):
    return np.exp(-0.5 * ((s - t) / lengthscale) ** 2)


# Kernels without a length scale: "auto" has nothing to choose, and none is recorded.
LENGTHSCALE_FREE = ("sobolev2",)
KERNELS = {"sobolev2": sobolev2, "matern32": matern32, "matern52": matern52, "gaussian": gaussian}
