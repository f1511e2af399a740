"""The lengthscale search of lengthscale.py for many points, with the windows of windowed.py.

One lengthscale and one lambda serve the whole decode. The lengthscale is chosen on a sample of
SAMPLE_BLOCKS windows spread evenly over the sorted points (core of CORE points, PAD neighbours
each side): the exact leave-one-out error of each core point from its window's fit, summed over
the sample, at the candidate's best lambda among those at which every sample window is local
(windowed.py's test: the hat weight of its outermost points on its core is at most LOCAL_TOL).
The candidates are visited by the walk of lengthscale.search (the sample windows of the ones it
reaches go through one batched eigendecomposition per step, lambda coarse to fine), so the
search costs a fraction of the decode. The chosen lengthscale then gets the full windowed
smoother, which chooses lambda by leave-one-out over all points among the lambdas at which its
windows are local (windowed.py falls back to the global smoother when the best of those is the
largest; here the best local one is taken: it measured as accurate, at a tenth of the cost:
benchmarks/decode_speed.py). If no window is local at all, the exact search over all points
(lengthscale.py) decides. Smoothers are built when first needed and kept, since received sets
may recur.
"""

from functools import partial

import numpy as np

from .lengthscale import Choice, LengthscaleSmoother, coarse_to_fine, search
from .windowed import CORE, FLOOR_POINTS, LOCAL_TOL, PAD, WindowedSmoother, lambda_grid

# Windows whose core points choose the lengthscale and lambda (80 of the points).
SAMPLE_BLOCKS = 4


class WindowedLengthscaleSmoother:
    """Same interface as LengthscaleSmoother (select, apply) for many points."""

    def __init__(self, t, z, kernel, lengthscales, sample=SAMPLE_BLOCKS):
        self.t, self.z = np.asarray(t, float), np.asarray(z, float)
        self.kernel, self.lengthscales = kernel, np.atleast_1d(np.asarray(lengthscales, float))
        self.sample = sample
        self._full, self._windows, self._exact = {}, None, None
        self._stacked = None  # (indices, arrays) of the last _sample_windows call

    def smoother(self, i):
        """The full windowed smoother of candidate i."""
        if i not in self._full:
            self._full[i] = WindowedSmoother(self.t, self.z,
                                             partial(self.kernel, lengthscale=self.lengthscales[i]))
        return self._full[i]

    def exact(self):
        """The exact search over all points (when no sample window is local)."""
        if self._exact is None:
            self._exact = LengthscaleSmoother(self.t, self.z, self.kernel, self.lengthscales)
        return self._exact

    def _layout(self):
        """(members (B, w) of the sample windows in the sorted points, core rows (c,), their
        points (B, w), {candidate: its arrays}), made once."""
        if self._windows is None:
            ts = np.sort(self.t)
            n, w = len(ts), min(len(ts), CORE + 2 * PAD)
            centres = np.linspace(0, n - 1, self.sample + 2)[1:-1]  # away from the two ends
            start = np.clip(np.round(centres).astype(int) - w // 2, 0, n - w)
            idx = start[:, None] + np.arange(w)
            core = np.arange(PAD, PAD + min(CORE, w - PAD)) if w > 2 * PAD else np.arange(w)
            self._windows = idx, core, ts[idx], {}
        return self._windows

    def _sample_windows(self, indices):
        """(members (B, w) of the sample windows in the sorted points, core rows (c,), and for the
        candidates ``indices`` the eigendecompositions s (L, B, r), W (L, B, w, r) of the sample
        windows' kernel matrices, each candidate's lambda scale (L,), and what the scores reuse:
        the core rows of W transposed, W_c^T (L, B, r, c), their squares, and the products of
        core and outermost rows (L, B, 2c, r)); a candidate's are computed when first asked for,
        several in one batched call."""
        idx, core, T, eig = self._layout()
        todo = [i for i in indices if i not in eig]
        if todo:
            Kw = self.kernel(T[None, :, :, None], T[None, :, None, :],  # (L, B, w, w)
                             lengthscale=self.lengthscales[todo][:, None, None, None])
            s, W = np.linalg.eigh(Kw)
            # lambdas relative to the global smoother's largest eigenvalue, which grows with the
            # number of points: a window's times n / w (as windowed.py estimates it)
            scale = np.maximum(s[:, :, -1].mean(axis=1) * len(self.t) / idx.shape[1],
                               np.finfo(float).tiny)
            Wc = W[:, :, core]                                  # (L, B, c, r)
            WcT = np.ascontiguousarray(np.swapaxes(Wc, 2, 3))
            terms = Wc[:, :, :, None] * W[:, :, None, [0, -1]]  # (L, B, c, 2, r)
            terms = terms.reshape(*Wc.shape[:2], -1, W.shape[3])
            batch = np.clip(s, 0.0, None), W, scale, WcT, WcT**2, terms
            for j, i in enumerate(todo):
                eig[i] = tuple(a[j] for a in batch)
            self._stacked = tuple(todo), batch
        # the walk asks for the same candidates several times in a row: stacked once
        if self._stacked is None or self._stacked[0] != tuple(indices):
            self._stacked = tuple(indices), (tuple(np.stack([eig[i][k] for i in indices])
                                                   for k in range(6)) if len(indices) else ())
        return (idx, core) + self._stacked[1]

    def candidates(self, indices=None):
        """Lambda candidates per lengthscale (L, G): the grid of windowed.lambda_grid, whose
        floor follows the windows (their scale is the windows' largest eigenvalue times n / w,
        so as many points fewer as at FLOOR_POINTS points move it as much)."""
        indices = list(range(len(self.lengthscales)) if indices is None else indices)
        scale = self._sample_windows(indices)[4]
        grid, floor = lambda_grid(min(1.0, FLOOR_POINTS / len(self.t)))
        return np.maximum(grid[None, :] * scale[:, None], floor * scale[:, None])

    def _sample_rows(self, Y):
        """Y's rows of the sample windows, transposed (B, m, w): made once per select, since the
        walk scores one Y many times."""
        order = np.argsort(self.t, kind="stable")
        Yw = np.asarray(Y, float)[order][self._layout()[0]]
        return np.ascontiguousarray(np.swapaxes(Yw, 1, 2))

    def scores(self, Y, lams, indices=None, rows=None):
        """Leave-one-out error over the sample windows' core points for the candidates
        ``indices`` (default: all) and the lambdas ``lams`` (one row per candidate); inf where
        some sample window is not local. ``rows``: _sample_rows(Y), if made already."""
        indices = list(range(len(self.lengthscales)) if indices is None else indices)
        rows = self._sample_rows(Y) if rows is None else rows
        idx, core, s, W, _, WcT, Wc2T, terms = self._sample_windows(indices)
        Wy = rows[None] @ W                                     # (W^T y)^T (L, B, m, r)
        inv = 1.0 / (s[:, :, None, :] + lams[:, None, :, None])  # (L, B, G, r)
        L, B, G, r = inv.shape
        m = Wy.shape[2]
        # core coefficients c for every lambda and output in one product, r innermost
        scaled = (Wy[:, :, :, None, :] * inv[:, :, None]).reshape(L, B, m * G, r)
        C = (scaled @ WcT).reshape(L, B, m, G, -1)             # (L, B, m, G, c)
        h = inv @ Wc2T                                          # (K + lam)^-1_ii (L, B, G, c)
        h *= h
        loo = (np.einsum("lbmgc,lbmgc->lbgc", C, C) / h).sum(axis=3)  # (L, B, G)
        H = terms @ np.swapaxes(s[:, :, None] * inv, 2, 3)      # hat weights (L, B, 2c, G)
        loo[np.abs(H).max(axis=2) > LOCAL_TOL] = np.inf
        return loo.sum(axis=1)

    def select(self, Y, rule, criterion=None, search_rule="walk", prior=1.0):
        """The Choice for the decode: the lengthscale with the smallest leave-one-out error on
        the sample windows (at its best local lambda, or at the fixed lambda ``rule``), found
        by ``search_rule`` (lengthscale.search), then lambda by leave-one-out over all windows
        among the local lambdas. Only leave-one-out is implemented in windows."""
        if criterion not in (None, "loo") or (isinstance(rule, str) and rule != "loo"):
            raise ValueError("the windowed lengthscale search supports leave-one-out only, "
                             f"not {criterion or rule!r}")
        i = 0
        if len(self.lengthscales) > 1:
            rows = self._sample_rows(Y)

            def score(indices):
                lams = self.candidates(indices)
                if not isinstance(rule, str):
                    fixed = np.maximum(float(rule), lams[:, :1])
                    best = self.scores(Y, fixed, indices, rows)[:, 0]
                    return best, best
                # coarse to fine, as LengthscaleSmoother.best_lambdas; a plain argmin, since
                # lambda itself is chosen afterwards by the full smoother
                best, _ = coarse_to_fine(lams, lambda ls: self.scores(Y, ls, indices, rows),
                                         pick=partial(np.argmin, axis=1))
                return best, best

            i, best = search(len(self.lengthscales), score, search_rule, prior=prior)
            if np.isinf(best):  # no sample window is local: the exact search decides
                choice = self.exact().select(Y, rule, criterion)
                return Choice(choice.index, choice.lengthscale, choice.lam, exact=True)
        smoother = self.smoother(i)
        lam = smoother.select(Y, rule) if not isinstance(rule, str) else smoother.loo(Y, False)
        if lam is None:  # no lambda is local for these windows: the exact search decides
            choice = self.exact().select(Y, rule, criterion)
            return Choice(choice.index, choice.lengthscale, choice.lam, exact=True)
        return Choice(i, float(self.lengthscales[i]), float(lam))

    def apply(self, Y, choice, z=None):
        if choice.exact:
            return self.exact().apply(Y, choice, z)
        return self.smoother(choice.index).apply(Y, choice.lam, z)
