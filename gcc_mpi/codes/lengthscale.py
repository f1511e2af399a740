"""Kernel ridge regression for several lengthscales at once, the lengthscale chosen with lambda.

GCC's kernels have a lengthscale l. With ``lengthscale = "auto"`` a fit considers the candidates
``lengthscale_grid(K)``: multiples of the spacing of the K data points alpha (pi / K in the middle
of K Chebyshev points), since the function the decoder fits, f(u_enc(z)), varies on that scale.
Every candidate gets one eigendecomposition, K_l = W_l diag(s_l) W_l^T, all in one batched call,
and as in smoother.py every lambda is then a sum over s_l for all m outputs at once. A criterion
scores every (l, lambda) pair:
- "loo": the exact leave-one-out error sum_i |c_i / (K_l + lam)^-1_ii|^2 (Rippa's formula);
- "gcv": n * RSS / tr(I - H)^2;
- "ml": minus the log marginal likelihood of a Gaussian process with kernel sigma^2 K_l and noise
  sigma^2 lam, sigma^2 profiled out per output (so it is invariant to the scale of each output).
The pair with the best score is the choice; with a fixed lambda only l is searched. The
criterion used by "auto" was chosen by measurement (benchmarks/lengthscale.py, docs/science.md).
"""

from dataclasses import dataclass

import numpy as np

from .smoother import GRID, LAMBDA_FLOOR, _smallest_near_min

# Candidates as multiples of the data points' spacing pi / K: from half a spacing (the fit
# reverts to zero between points) to 16 (a nearly polynomial fit across the interval).
MULTIPLES = 2.0 ** np.arange(-1, 5)
CRITERIA = ("loo", "gcv", "ml")


def spacing(K):
    """Typical spacing of K Chebyshev points on [-1, 1] (the middle ones are pi / K apart)."""
    return np.pi / max(K, 1)


def lengthscale_grid(K):
    return spacing(K) * MULTIPLES


@dataclass(frozen=True)
class Choice:
    """A fit's hyperparameters: the index of the lengthscale among the candidates, its value,
    and lambda (``exact``: computed by the exact smoother where windows were not local)."""

    index: int
    lengthscale: float
    lam: float
    exact: bool = False


class LengthscaleSmoother:
    """Kernel ridge smoothers from points ``t`` to evaluation points ``z``, one per lengthscale in
    ``lengthscales``; ``kernel(s, t, lengthscale=l)``."""

    def __init__(self, t, z, kernel, lengthscales):
        t = np.asarray(t, float)
        self.t, self.z, self.kernel, self.n = t, np.asarray(z, float), kernel, len(t)
        self.lengthscales = np.atleast_1d(np.asarray(lengthscales, float))
        self.K = kernel(t[None, :, None], t[None, None, :],
                        lengthscale=self.lengthscales[:, None, None])   # (L, n, n)
        s, self.W = np.linalg.eigh(self.K)
        self.s = np.clip(s, 0.0, None)
        top = self.s[:, -1] if self.n else np.zeros(len(self.lengthscales))
        self.scale = np.where(top > 0, top, 1.0)  # (L,)

    def effective_lambda(self, lam, i):
        return max(float(lam), LAMBDA_FLOOR * self.scale[i])

    def fixed(self, i, lam):
        """The Choice of candidate i with the fixed lambda ``lam``."""
        return Choice(i, float(self.lengthscales[i]), self.effective_lambda(lam, i))

    def candidates(self):
        """Lambda candidates per lengthscale (L, G), relative to each one's largest eigenvalue."""
        return np.maximum(GRID * self.scale[:, None], LAMBDA_FLOOR * self.scale[:, None])

    def scores(self, Y, lams, criterion):
        """The criterion (smaller is better) for every lengthscale and lambda in ``lams`` (L, G)."""
        WtY = np.swapaxes(self.W, 1, 2) @ Y                      # (L, r, m)
        inv = 1.0 / (self.s[:, None, :] + lams[:, :, None])      # (L, G, r)
        if criterion == "loo":
            C = self.W[:, None] @ (inv[..., None] * WtY[:, None])  # coefficients c (L, G, n, m)
            h = inv @ np.swapaxes(self.W**2, 1, 2)                 # (K + lam)^-1_ii (L, G, n)
            return np.sum((C / h[..., None]) ** 2, axis=(2, 3))
        if criterion == "gcv":
            e = np.sum(WtY**2, axis=2)                            # (L, r)
            f = lams[:, :, None] * inv                            # eigenvalues of I - H
            return self.n * np.einsum("lgr,lr->lg", f**2, e) / f.sum(axis=2) ** 2
        if criterion == "ml":
            yAy = np.einsum("lgr,lrm->lgm", inv, WtY**2)
            tiny = np.finfo(float).tiny
            return (0.5 * self.n * np.log(np.maximum(yAy, tiny)).sum(axis=2)
                    - 0.5 * Y.shape[1] * np.log(inv).sum(axis=2))
        raise ValueError(f"unknown criterion {criterion!r}; choose from {', '.join(CRITERIA)}")

    def select(self, Y, rule, criterion=None):
        """The Choice for data Y (n x m). With an automatic lambda (``rule`` "loo" or "gcv") the
        pair (l, lambda) is searched jointly, by ``criterion`` (default: the rule's own score);
        with a fixed lambda (a number) only l is, by ``criterion`` (default "loo")."""
        Y = np.asarray(Y, float)
        criterion = criterion or (rule if isinstance(rule, str) else "loo")
        if isinstance(rule, str):
            lams = self.candidates()
        else:
            lams = np.array([[self.effective_lambda(rule, i)] for i in range(len(self.scale))])
        score = self.scores(Y, lams, criterion)              # (L, G)
        best = [_smallest_near_min(lams[i], score[i]) for i in range(len(lams))]
        i = int(np.argmin(score.min(axis=1)))
        return Choice(i, float(self.lengthscales[i]), float(best[i]))

    def weights(self, choice, z=None):
        """The matrix A with u(z) = A @ y for this choice."""
        i = choice.index
        z = self.z if z is None else np.asarray(z, float)
        Kz = self.kernel(z[:, None], self.t[None, :], lengthscale=self.lengthscales[i])
        return (Kz @ self.W[i] / (self.s[i] + choice.lam)) @ self.W[i].T

    def apply(self, Y, choice, z=None):
        """u(z) for the columns of Y (n x m) with this choice."""
        i = choice.index
        z = self.z if z is None else np.asarray(z, float)
        Kz = self.kernel(z[:, None], self.t[None, :], lengthscale=self.lengthscales[i])
        coef = self.W[i] @ ((self.W[i].T @ Y) / (self.s[i] + choice.lam)[:, None])
        return Kz @ coef
