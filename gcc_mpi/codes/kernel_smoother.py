"""Penalised kernel regression in closed form for every lambda at once.

Fit u(z) = sum_i c_i k(z, t_i) + sum_j d_j z^j (j < q) to points (t_i, y_i) by minimising
    sum_i |y_i - u(t_i)|^2 + lam * c^T K c,   subject to P^T c = 0 when q > 0,
with K = k(t, t) and P = [t^j]. With the spline semikernel and q = 2 this is the natural cubic
smoothing spline (lam as in scipy.interpolate.make_smoothing_spline); with a positive definite
kernel and q = 0 it is kernel ridge regression.

One eigendecomposition per set of points makes every lambda cheap (Demmler-Reinsch basis): with
P = [Q1 Q2] R and Q2^T K Q2 = V diag(s) V^T, W = Q2 V,
    c = W diag(1/(s + lam)) W^T y,   residual y - u(t) = lam c,
    u(z) = H0 y + G diag(1/(s + lam)) W^T y,   H0 = Pz R^-1 Q1^T,   G = (k(z, t) - H0 K) W,
so generalised cross-validation and leave-one-out errors are sums over s for any number of outputs.
"""

import numpy as np
from scipy.linalg import solve_triangular

# Relative floor on lambda: keeps 1/(s + lam) finite where a smooth kernel's spectrum underflows.
LAMBDA_FLOOR = 1e-13
# Candidate lambdas, relative to the largest eigenvalue; four per decade is finer than the
# error curve's features, and the search costs O(n * len(grid)) once W^T y is known.
GRID = np.logspace(-14, 1, 61)


def first_near_min(score, rtol=1e-6):
    """Along the last axis, the index of the first score within ``rtol`` of the minimum (scores
    are positive). With few points a score can be flat in lambda, and a plain argmin would then
    pick by rounding noise; candidates ordered by smoothing, the least smoothing is the right
    tie-break for noiseless results."""
    return np.argmax(score <= score.min(axis=-1, keepdims=True) * (1 + rtol), axis=-1)


def dof_cap(s, lams, min_dof, q=0):
    """Per row of the lambdas ``lams`` (..., G), ascending, the largest at which the fit keeps
    ``min_dof`` effective degrees of freedom, tr(H) = q + sum_j s_j / (s_j + lam) for the
    eigenvalues s (..., r) of the penalised part; the row's smallest lambda if none does."""
    dof = (s[..., None, :] / (s[..., None, :] + lams[..., None])).sum(axis=-1)
    if q:
        dof += q
    keep = np.maximum(np.count_nonzero(dof >= min_dof, axis=-1), 1)  # dof falls as lambda grows
    if lams.ndim == 2:  # one row per lengthscale (lengthscale.py): plain indexing is faster
        return lams[np.arange(len(lams)), keep - 1][:, None]
    return np.take_along_axis(lams, keep[..., None] - 1, axis=-1)


def smallest_near_min(lams, score, rtol=1e-6):
    """The smallest lambda whose score is within ``rtol`` of the minimum (``first_near_min``)."""
    return lams[int(first_near_min(score, rtol))]


class KernelSmoother:
    """The linear smoother from points ``t`` to evaluation points ``z`` for one kernel."""

    def __init__(self, t, z, kernel, null_dim=0):
        t = np.asarray(t, float)
        n = len(t)
        q = min(null_dim, n)
        self.t, self.kernel, self.q, self.n = t, kernel, q, n
        self.K = kernel(t[:, None], t[None, :])
        if q:
            Q, R = np.linalg.qr(np.vander(t, q, increasing=True), mode="complete")
            Q1, Q2 = Q[:, :q], Q[:, q:]
            self.null_coef = solve_triangular(R[:q], Q1.T)  # d = null_coef @ (y - K c)
        else:
            Q2 = np.eye(n)
        s, V = np.linalg.eigh(Q2.T @ self.K @ Q2)
        self.W = Q2 @ V
        self.s = np.clip(s, 0.0, None)
        self.scale = self.s.max() if len(s) and self.s.max() > 0 else 1.0
        self.z = np.asarray(z, float)
        self.H0, self.G = self.evaluator(self.z)

    def evaluator(self, z):
        """(H0, G) with u(z) = H0 y + G diag(1/(s + lam)) W^T y at the points z."""
        Kz = self.kernel(z[:, None], self.t[None, :])
        if self.q:
            H0 = np.vander(z, self.q, increasing=True) @ self.null_coef
        else:
            H0 = np.zeros((len(z), self.n))
        return H0, (Kz - H0 @ self.K) @ self.W

    def effective_lambda(self, lam):
        """``lam`` raised to the relative floor."""
        return max(float(lam), LAMBDA_FLOOR * self.scale)

    def matrix(self, lam):
        """The matrix A with u(z) = A @ y."""
        return self.H0 + (self.G / (self.s + self.effective_lambda(lam))) @ self.W.T

    weights = matrix  # the name LengthscaleSmoother uses

    def apply(self, Y, lam, z=None):
        """u(z) for the columns of Y (n x m), at the smoother's points or at other points z."""
        H0, G = (self.H0, self.G) if z is None else self.evaluator(np.asarray(z, float))
        return H0 @ Y + G @ ((self.W.T @ Y) / (self.s + self.effective_lambda(lam))[:, None])

    def candidates(self, min_dof=0):
        """The lambda grid, capped where the fit would keep fewer than ``min_dof`` effective
        degrees of freedom (``dof_cap``)."""
        lams = np.maximum(GRID * self.scale, LAMBDA_FLOOR * self.scale)
        if min_dof > 0 and len(self.s):
            lams = np.minimum(lams, dof_cap(self.s, lams, min_dof, self.q))
        return lams

    def gcv(self, Y, min_dof=0):
        """Lambda minimising n * RSS / tr(I - H)^2 over the grid (Craven & Wahba 1979)."""
        lams = self.candidates(min_dof)
        if len(self.s) == 0:
            return lams[0]
        e = np.sum((self.W.T @ Y) ** 2, axis=1)  # energy of y along each eigenvector
        f = lams[:, None] / (self.s[None, :] + lams[:, None])  # eigenvalues of I - H
        score = self.n * (f**2 @ e) / f.sum(axis=1) ** 2
        return smallest_near_min(lams, score)

    def loo(self, Y, min_dof=0):
        """Lambda minimising the exact leave-one-out error sum_i |r_i / (1 - H_ii)|^2.

        r = lam c and 1 - H_ii = lam sum_j W_ij^2 / (s_j + lam), so lam cancels and the
        leave-one-out residual is c_i / sum_j W_ij^2 / (s_j + lam).
        """
        lams = self.candidates(min_dof)
        if len(self.s) == 0:
            return lams[0]
        inv = 1.0 / (self.s[None, :] + lams[:, None])  # (g, r)
        C = self.W @ (inv[:, :, None] * (self.W.T @ Y)[None])  # coefficients c per lambda (g, n, m)
        h = inv @ (self.W**2).T  # (g, n): (1 - H_ii) / lam
        score = np.sum((C / h[:, :, None]) ** 2, axis=(1, 2))
        return smallest_near_min(lams, score)

    def select(self, Y, rule, min_dof=0):
        """Lambda for the data Y by ``rule``: a number, "gcv" or "loo" (over the lambdas that keep
        ``min_dof`` effective degrees of freedom)."""
        if isinstance(rule, str):
            return getattr(self, rule)(Y, min_dof)
        return self.effective_lambda(rule)
