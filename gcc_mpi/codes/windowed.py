"""The kernel smoother of smoother.py for many points, computed in overlapping windows.

At the lambdas automatic selection picks for noiseless results, a smoother's hat matrix is local:
the fit at a point hardly depends on data more than a few neighbours away (the cubic interpolating
spline's influence falls by 2 - sqrt(3) ~ 0.27 per point). So the sorted points are cut into
blocks of ``core`` consecutive points, each fitted together with ``pad`` neighbours on each side
by the exact smoother of those points (one stacked eigendecomposition for all windows); a point's
leave-one-out residual and an evaluation point's value come from the window whose core holds it.
The cost is O(n (core + 2 pad)^2) instead of O(n^3), with one lambda for all windows.

This equals the global fit only while the hat matrix is local at the chosen lambda. Each window
measures that directly, as the largest hat weight of its outermost points on its core, for every
candidate lambda. Automatic selection only considers the lambdas from the smallest up to the first
that is not local to LOCAL_TOL. When it would choose the largest of those (the optimum may lie
beyond, where these windows are too narrow), or a given lambda is not local, it asks windows 1.5
times as wide, and finally the global smoother: a non-local fit costs more time but is never
approximated.
"""

import numpy as np

from .smoother import GRID, LAMBDA_FLOOR, KernelSmoother, _smallest_near_min

# Largest hat weight a window's outermost point may have on its core: data beyond the window then
# move the fit by less than this fraction of their own misfit.
LOCAL_TOL = 1e-3
# Points in the subsample that estimates the global smoother's largest eigenvalue (its lambda scale).
SCALE_SAMPLE = 64
# The narrowest windows tried: local to LOCAL_TOL at the smallest lambda for the cubic spline on
# 90% of 1024 Chebyshev points (benchmarks/decode_speed.py); smoother kernels need wider ones.
CORE, PAD = 20, 12


def widen(core, pad):
    return -(-3 * core // 2), -(-3 * pad // 2)


def window_for(t, kernel, null_dim=0, core=CORE, pad=PAD):
    """The narrowest windows (core, pad), from (core, pad) widening by 1.5, in which the smallest
    candidate lambda is local for the points t; None when no window smaller than half of them is."""
    while core + 2 * pad <= len(t) // 2:
        windows = WindowedSmoother(t, t[:1], kernel, null_dim, core, pad)
        if windows.locality(windows.candidates()[:1])[0] <= LOCAL_TOL:
            return core, pad
        core, pad = widen(core, pad)
    return None


class WindowedSmoother:
    """Same interface as KernelSmoother (candidates, select, gcv, loo, apply, effective_lambda)."""

    def __init__(self, t, z, kernel, null_dim=0, core=CORE, pad=PAD):
        t = np.asarray(t, float)
        self.order = np.argsort(t, kind="stable")
        ts = t[self.order]
        n = len(ts)
        w = min(n, core + 2 * pad)
        blocks = -(-n // core)
        start = np.clip(np.arange(blocks) * core - pad, 0, n - w)
        self.idx = start[:, None] + np.arange(w)  # (B, w) window members, in sorted order
        core_idx = np.arange(blocks)[:, None] * core + np.arange(core)
        self.core_mask = core_idx < n  # the last block's core may be short
        self.core_pos = np.minimum(core_idx, n - 1) - start[:, None]  # positions in the window
        self.t, self.z, self.kernel, self.n = ts, np.asarray(z, float), kernel, n
        self.core, self.pad = core, pad
        self.args = (t, self.z, kernel, null_dim)  # for the global fallback
        self.q = min(null_dim, w)

        T = ts[self.idx]
        self.Kw = kernel(T[:, :, None], T[:, None, :])
        if self.q:
            Q, R = np.linalg.qr(T[:, :, None] ** np.arange(self.q), mode="complete")
            Q1, Q2 = Q[:, :, :self.q], Q[:, :, self.q:]
            self.Q1 = Q1
            self.null_coef = np.linalg.solve(R[:, :self.q, :], np.swapaxes(Q1, 1, 2))
            s, V = np.linalg.eigh(np.swapaxes(Q2, 1, 2) @ self.Kw @ Q2)
            self.W = Q2 @ V
        else:
            s, self.W = np.linalg.eigh(self.Kw)
        self.s = np.clip(s, 0.0, None)  # (B, r)
        self.scale = self._global_scale()
        self._edges()
        self._edge_terms = None
        self._local = None
        self.wider = None  # the smoother used where these windows are too narrow
        self.last_fit = None  # what computed the last apply: these windows, wider ones or global

    def _global_scale(self):
        """Largest eigenvalue of the global smoother's matrix, from an evenly spread subsample
        (it grows in proportion to the number of points); it anchors the lambda grid."""
        sub = self.t[:: max(1, -(-self.n // SCALE_SAMPLE))]
        K = self.kernel(sub[:, None], sub[None, :])
        if self.q:  # the penalised part: K projected off the polynomials
            Q = np.linalg.qr(np.vander(sub, self.q, increasing=True), mode="complete")[0][:, self.q:]
            K = Q.T @ K @ Q
        top = np.linalg.eigvalsh(K)[-1] if len(K) else 0.0
        return top * self.n / len(sub) if top > 0 else 1.0

    def _edges(self):
        """Hat weights of each window's outermost points on its core rows: (B, 2) edge positions
        and whether that side is a real edge (not the end of the data)."""
        w = self.idx.shape[1]
        self.edge_pos = np.array([0, w - 1])
        self.edge_real = np.stack([self.idx[:, 0] > 0, self.idx[:, -1] < self.n - 1], axis=1)

    def _core_rows(self, A):
        """Rows of the core points from per-window arrays A (B, w, ...)."""
        pos = self.core_pos.reshape(self.core_pos.shape + (1,) * (A.ndim - 2))
        return np.take_along_axis(A, pos, axis=1)

    def locality(self, lams):
        """Largest |H_ij| of an outermost window point j on a core point i, per lambda (G,)."""
        if self._edge_terms is None:  # H_ij = sum_r Wc_ir We_jr s_r / (s_r + lam) (+ null space)
            Wc = self._core_rows(self.W)[:, :, None, :] * self.W[:, self.edge_pos][:, None]
            B, c, e, r = Wc.shape
            real = self.core_mask[:, :, None] & self.edge_real[:, None, :]
            null = 0.0
            if self.q:
                null = np.einsum("bcq,beq->bce", self._core_rows(self.Q1), self.Q1[:, self.edge_pos])
            self._edge_terms = (Wc.reshape(B, c * e, r), np.broadcast_to(null, real.shape).reshape(B, -1),
                                real.reshape(B, -1))
        terms, null, real = self._edge_terms
        keep = self.s[:, :, None] / (self.s[:, :, None] + np.asarray(lams, float))  # (B, r, G)
        H = np.abs(terms @ keep + null[:, :, None]) * real[:, :, None]
        return H.max(axis=(0, 1))

    def effective_lambda(self, lam):
        return max(float(lam), LAMBDA_FLOOR * self.scale)

    def candidates(self):
        return np.maximum(GRID * self.scale, LAMBDA_FLOOR * self.scale)

    def _local_candidates(self):
        """The candidates from the smallest up to the first that is not local (checked a few at a
        time: automatic selection rarely gets past the first few)."""
        if self._local is None:
            lams = self.candidates()
            stop = len(lams)
            for i in range(0, len(lams), 8):
                far = np.flatnonzero(self.locality(lams[i:i + 8]) > LOCAL_TOL)
                if len(far):
                    stop = i + far[0]
                    break
            self._local = lams[:stop]
        return self._local

    def _window_data(self, Y):
        Ys = np.asarray(Y, float)[self.order]
        return Ys[self.idx], np.swapaxes(self.W, 1, 2) @ Ys[self.idx]  # (B, w, m), (B, r, m)

    def _choose(self, lams, score):
        """Pick by score among the local lambdas; None (ask wider windows) when the best is the
        largest of them while larger candidates exist: the optimum may lie beyond."""
        if len(lams) == 0:
            return None
        best = _smallest_near_min(lams, score)
        return None if best == lams[-1] and len(lams) < len(self.candidates()) else best

    def loo(self, Y):
        """Exact leave-one-out over the local lambdas, as KernelSmoother.loo, window by window."""
        lams = self._local_candidates()
        if len(lams) == 0:
            return self._fallback().loo(Y)
        _, Wy = self._window_data(Y)
        inv = 1.0 / (self.s[:, :, None] + lams)                  # (B, r, G)
        Wc = self._core_rows(self.W)                             # (B, c, r)
        h = Wc**2 @ inv                                          # (B, c, G)
        B, r, m = Wy.shape
        C = (Wc @ (inv[:, :, :, None] * Wy[:, :, None, :]).reshape(B, r, -1)).reshape(B, -1, len(lams), m)
        ratio = (C / h[:, :, :, None]) ** 2 * self.core_mask[:, :, None, None]
        best = self._choose(lams, ratio.sum(axis=(0, 1, 3)))
        return self._fallback().loo(Y) if best is None else best

    def gcv(self, Y):
        """n * RSS / tr(I - H)^2 over the local lambdas, with the trace from the core rows."""
        lams = self._local_candidates()
        if len(lams) == 0:
            return self._fallback().gcv(Y)
        _, Wy = self._window_data(Y)
        inv = 1.0 / (self.s[:, :, None] + lams)
        Wc = self._core_rows(self.W)
        mask = self.core_mask[:, :, None]
        one_minus_h = (lams * (Wc**2 @ inv) * mask).sum(axis=(0, 1))  # tr(I - H)
        B, r, m = Wy.shape
        C = (Wc @ (inv[:, :, :, None] * Wy[:, :, None, :]).reshape(B, r, -1)).reshape(B, -1, len(lams), m)
        rss = lams**2 * ((C**2).sum(axis=3) * mask).sum(axis=(0, 1))  # residual = lam c
        best = self._choose(lams, self.n * rss / one_minus_h**2)
        return self._fallback().gcv(Y) if best is None else best

    def select(self, Y, rule):
        """Lambda for the data Y by ``rule``: a number, "gcv" or "loo"."""
        if isinstance(rule, str):
            return getattr(self, rule)(Y)
        return self.effective_lambda(rule)

    def apply(self, Y, lam, z=None):
        """u(z) for the columns of Y at the smoother's evaluation points or at other points z."""
        lam = self.effective_lambda(lam)
        z = self.z if z is None else np.asarray(z, float)
        if self.locality(np.array([lam]))[0] > LOCAL_TOL:
            wider = self._fallback()
            u = wider.apply(Y, lam, z)
            self.last_fit = getattr(wider, "last_fit", "global")
            return u
        self.last_fit = f"windows of {self.core} + 2 x {self.pad}"
        Yw, Wy = self._window_data(Y)
        nearest = np.clip(np.searchsorted(self.t, z), 1, self.n - 1)
        nearest -= (z - self.t[nearest - 1]) < (self.t[nearest] - z)
        b = np.minimum(nearest // self.core, len(self.idx) - 1)  # the window whose core holds z
        coef = self.W[b] @ (Wy[b] / (self.s[b] + lam)[:, :, None])  # kernel weights c (k, w, m)
        u = np.einsum("kw,kwm->km", self.kernel(z[:, None], self.t[self.idx[b]]), coef)
        if self.q:  # null-space part d = null_coef (y - K c)
            d = self.null_coef[b] @ (Yw[b] - self.Kw[b] @ coef)
            u += np.einsum("kq,kqm->km", z[:, None] ** np.arange(self.q), d)
        return u

    def _fallback(self):
        """Windows 1.5 times as wide, or the global smoother once they would hold most points."""
        if self.wider is None:
            core, pad = widen(self.core, self.pad)
            if core + 2 * pad <= self.n // 2:
                self.wider = WindowedSmoother(*self.args, core=core, pad=pad)
            else:
                self.wider = KernelSmoother(*self.args)
        return self.wider
