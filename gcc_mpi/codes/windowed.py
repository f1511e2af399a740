"""The kernel smoother of kernel_smoother.py for many points, computed in overlapping windows.

At the lambdas automatic selection picks for noiseless results, a smoother's hat matrix is local:
the fit at a point hardly depends on data more than a few neighbours away (the cubic interpolating
spline's influence falls by 2 - sqrt(3) ~ 0.27 per point). So the sorted points are cut into
blocks of ``core`` consecutive points, each fitted together with ``pad`` neighbours on each side
by the exact smoother of those points (stacked eigendecompositions); a point's leave-one-out
residual and an evaluation point's value come from the window whose core holds it. The cost is
O(n (core + 2 pad)^2) instead of O(n^3), with one lambda for all windows.

This equals the global fit only while the hat matrix is local. Each window measures that directly,
as the largest hat weight of its outermost points on its core. A window that is not local at the
two smallest candidate lambdas gets 1.5 times the padding until it is (where points crowd, as at the
ends of Chebyshev points, the fit reaches over more of them). Automatic selection then considers
the lambdas from the smallest up to the first that is not local to LOCAL_TOL. When it would choose
the largest of those (the optimum may lie beyond, where these windows are too narrow), or a given
lambda is not local, the global smoother answers: a non-local fit costs more time but is never
approximated.
"""

import numpy as np

from .kernel_smoother import GRID, LAMBDA_FLOOR, KernelSmoother, smallest_near_min

# Decoders with more received points than this are computed in windows (equal to the global fit
# where its hat matrix is local, else it falls back; smoothing_code.py, robust.adversarial_spline);
# every shipped job stays below.
WINDOWED_ABOVE = 400
# Largest hat weight a window's outermost point may have on its core: data beyond the window then
# move the fit by less than this fraction of their own misfit.
LOCAL_TOL = 1e-3
# Points in the subsample that estimates the global smoother's largest eigenvalue (its lambda
# scale).
SCALE_SAMPLE = 64
# Core and first padding: local to LOCAL_TOL at the smallest lambdas for the cubic spline on 90% of
# 1024 Chebyshev points away from their ends (benchmarks/decode_speed.py); others get more padding.
CORE, PAD = 20, 12
# Up to this many points the lambda grid is the global smoother's; beyond, its floor follows the
# windows' own matrices (``floor_drop``).
FLOOR_POINTS = 1024
# Windows whose largest eigenvalue ``floor_drop`` takes (their median), spread over the points.
TOP_SAMPLE = 8


def widen(pad):
    return -(-3 * pad // 2)


def lambda_grid(drop):
    """Candidate lambdas relative to the global smoother's largest eigenvalue, with the floor
    ``drop`` times LAMBDA_FLOOR: GRID, continued below at its spacing down to that floor."""
    if drop >= 1:
        return GRID, LAMBDA_FLOOR
    step = GRID[1] / GRID[0]
    below = int(np.ceil(-np.log(drop) / np.log(step)))
    return np.r_[GRID[0] * step ** -np.arange(below, 0, -1), GRID], LAMBDA_FLOOR * drop


class _Windows:
    """Windows of one width around cores of ``core`` sorted points ``ts`` from ``first`` (B,)
    up to ``end`` (B,; a core may be short): the exact smoother of each window's points, in
    the Demmler-Reinsch form of kernel_smoother.py."""

    def __init__(self, ts, first, end, core, pad, kernel, q):
        n = len(ts)
        w = min(n, core + 2 * pad)
        start = np.clip(first - pad, 0, n - w)
        self.first, self.end, self.core, self.pad = first, end, core, pad
        self.idx = start[:, None] + np.arange(w)  # (B, w) window members
        core_idx = first[:, None] + np.arange(core)
        self.core_mask = core_idx < end[:, None]
        self.core_pos = np.minimum(core_idx, n - 1) - start[:, None]  # positions in the window
        self.q = min(q, w)
        T = ts[self.idx]
        self.Kw = kernel(T[:, :, None], T[:, None, :])
        if self.q:
            Q, R = np.linalg.qr(T[:, :, None] ** np.arange(self.q), mode="complete")
            self.Q1, Q2 = Q[:, :, :self.q], Q[:, :, self.q:]
            self.null_coef = np.linalg.solve(R[:, :self.q, :], np.swapaxes(self.Q1, 1, 2))
            s, V = np.linalg.eigh(np.swapaxes(Q2, 1, 2) @ self.Kw @ Q2)
            self.W = Q2 @ V
        else:
            s, self.W = np.linalg.eigh(self.Kw)
        self.s = np.clip(s, 0.0, None)  # (B, r)
        self.Wc = self._core_rows(self.W)  # (B, c, r)
        # the core rows transposed, and squared, for the leave-one-out sums (rows contiguous)
        self.WcT = np.ascontiguousarray(np.swapaxes(self.Wc, 1, 2))  # (B, r, c)
        self.Wc2T = self.WcT**2
        self._edge_hat()
        # outermost window points, where they are not the ends of the data
        real = self.core_mask[:, :, None] & np.stack([start > 0, start + w < n], axis=1)[:, None]
        self.edge_real = real.reshape(len(first), -1)

    def _core_rows(self, A):
        pos = self.core_pos.reshape(self.core_pos.shape + (1,) * (A.ndim - 2))
        return np.take_along_axis(A, pos, axis=1)

    def _edge_hat(self):
        """H_ij = sum_r Wc_ir We_jr s_r / (s_r + lam) + (null-space projection)_ij for core
        points i and the two outermost points j: the terms, and the lambda-free part."""
        ends = [0, self.idx.shape[1] - 1]
        terms = self.Wc[:, :, None, :] * self.W[:, ends][:, None]
        B, c, e, r = terms.shape
        self.edge_terms = terms.reshape(B, c * e, r)
        null = 0.0
        if self.q:
            null = np.einsum("bcq,beq->bce", self._core_rows(self.Q1), self.Q1[:, ends])
        self.edge_null = np.broadcast_to(null, (B, c, e)).reshape(B, -1)

    def locality(self, lams):
        """Largest |H_ij| of an outermost point j on a core point i, per window and lambda
        (B, G)."""
        keep = self.s[:, :, None] / (self.s[:, :, None] + lams)  # (B, r, G)
        H = self.edge_terms @ keep
        if self.q:
            H += self.edge_null[:, :, None]
        np.abs(H, out=H)
        H *= self.edge_real[:, :, None]
        return H.max(axis=1)

    def take(self, keep):
        """These windows restricted to the ones where ``keep`` (B,) holds."""
        part = object.__new__(_Windows)
        for k, v in vars(self).items():
            part.__dict__[k] = v[keep] if isinstance(v, np.ndarray) and v.ndim else v
        return part

    def core_fits(self, Ys, lams):
        """(C, h) over the core points: C = the kernel weights c (B, c, G, m) and h (B, c, G) with
        1 - H_ii = lam h_i, so residual = lam c and the leave-one-out residual is c / h."""
        Wy = np.swapaxes(self.W, 1, 2) @ Ys[self.idx]  # (B, r, m)
        inv = 1.0 / (self.s[:, :, None] + lams)          # (B, r, G)
        B, r, m = Wy.shape
        C = self.Wc @ (inv[:, :, :, None] * Wy[:, :, None, :]).reshape(B, r, -1)
        return C.reshape(B, -1, len(lams), m), self.Wc**2 @ inv

    def loo(self, Ys, lams):
        """sum_i |c_i / h_i|^2 over the core points for each lambda (G,): core_fits' leave-one-out
        error, in one product whose innermost axis is the window's r eigenvectors."""
        Yw = Ys[self.idx]                                      # (B, w, m)
        Wy = np.swapaxes(Yw, 1, 2) @ self.W                    # (W^T y)^T (B, m, r)
        inv = 1.0 / (self.s[:, None, :] + lams[:, None])       # (B, G, r)
        B, m, r = Wy.shape
        G = len(lams)
        scaled = (Wy[:, :, None, :] * inv[:, None]).reshape(B, m * G, r)
        C = (scaled @ self.WcT).reshape(B, m, G, -1)           # core coefficients (B, m, G, c)
        h = inv @ self.Wc2T                                    # (B, G, c)
        h *= h
        loo = np.einsum("bmgc,bmgc->bgc", C, C) / h
        return np.einsum("bgc,bc->g", loo, self.core_mask.astype(float))

    def evaluate(self, which, z, Ys, lam, kernel, ts):
        """u(z) from window ``which[k]`` for each point z[k]; each window's coefficients are
        computed once, however many of the points it evaluates."""
        used, slot = np.unique(which, return_inverse=True)
        W, s, Yw = self.W[used], self.s[used], Ys[self.idx[used]]
        coef = W @ ((np.swapaxes(W, 1, 2) @ Yw) / (s + lam)[:, :, None])  # c (windows, w, m)
        u = np.einsum("kw,kwm->km", kernel(z[:, None], ts[self.idx[which]]), coef[slot])
        if self.q:  # null-space part d = null_coef (y - K c)
            d = self.null_coef[used] @ (Yw - self.Kw[used] @ coef)
            u += np.einsum("kq,kqm->km", z[:, None] ** np.arange(self.q), d[slot])
        return u


class WindowedSmoother:
    """Same interface as KernelSmoother (candidates, select, gcv, loo, apply, effective_lambda)."""

    def __init__(self, t, z, kernel, null_dim=0, core=CORE, pad=PAD, blocks=None):
        t = np.asarray(t, float)
        self.order = np.argsort(t, kind="stable")
        self.t, self.z, self.kernel, self.n = t[self.order], np.asarray(z, float), kernel, len(t)
        self.core, self.pad, self.q = core, pad, min(null_dim, len(t))
        self.args = (t, self.z, kernel, null_dim)
        self.scale = _global_scale(self.t, kernel, self.q)
        self.grid, self.floor = lambda_grid(floor_drop(self.t, kernel, self.q, core + 2 * pad))
        # ``blocks``: only these core blocks get windows (a sample, to score a lengthscale)
        all_blocks = np.arange(-(-self.n // core))
        self.groups = self._local_windows(all_blocks if blocks is None else blocks, core, pad)
        self._global = None   # the global smoother, built when asked for a non-local lambda
        self.last_fit = None  # what computed the last apply: "windows of ..." or "global"
        self._local = None

    def _local_windows(self, todo, core, pad):
        """Window groups, every block of ``core`` points padded until local at the two smallest
        candidates; None when some block would need a window of more than half the points, or
        the windows would cost about as much as the global smoother. Consecutive blocks that need
        a padding of more than a core share one window's core (``chunks``): a wide window then
        serves as many points as its padding, not one block, where the points crowd."""
        groups = []
        smallest = self._distinct()[:2]  # two, so that selection sees which way the score goes
        while len(todo):
            k = max(1, pad // core)  # blocks per window
            w = k * core + 2 * pad
            if w > self.n // 2 or len(todo) / k * w**3 > self.n**3 / 8:
                return None  # the global smoother is about as cheap
            pieces = chunks(todo, k)
            first = np.array([p[0] for p in pieces]) * core
            end = np.minimum(np.array([p[-1] + 1 for p in pieces]) * core, self.n)
            windows = _Windows(self.t, first, end, k * core, pad, self.kernel, self.q)
            local = windows.locality(smallest).max(axis=1) <= LOCAL_TOL
            if local.any():
                groups.append(windows.take(local) if not local.all() else windows)
            todo = np.concatenate([p for p, ok in zip(pieces, local) if not ok] or [todo[:0]])
            pad = widen(pad)
        return groups

    def locality(self, lams):
        """Largest hat weight of a window's outermost point on its core, per lambda (G,)."""
        lams = np.asarray(lams, float)
        return np.max([g.locality(lams).max(axis=0) for g in self.groups], axis=0)

    def effective_lambda(self, lam):
        return max(float(lam), self.floor * self.scale)

    def candidates(self):
        return np.maximum(self.grid * self.scale, self.floor * self.scale)

    def _distinct(self):
        """The candidates without the repeats of the floor (they score alike)."""
        return np.unique(self.candidates())

    def _local_candidates(self):
        """The candidates from the smallest up to the first that is not local (checked a few at a
        time: automatic selection rarely gets past the first few)."""
        if self._local is None:
            lams = self._distinct()
            stop = len(lams) if self.groups is not None else 0
            for i in range(0, stop, 8):
                far = np.flatnonzero(self.locality(lams[i:i + 8]) > LOCAL_TOL)
                if len(far):
                    stop = i + far[0]
                    break
            self._local = lams[:stop]
        return self._local

    def _choose(self, lams, score):
        """The best local lambda by score; None (ask the global smoother) when it is the largest of
        them while larger candidates exist: the optimum may lie beyond."""
        best = smallest_near_min(lams, score)
        return None if best == lams[-1] and len(lams) < len(self._distinct()) else best

    def _gcv_sums(self, Y, lams):
        """Over all core points, per lambda: sum_i |c_i|^2 and sum_i h_i."""
        Ys = np.asarray(Y, float)[self.order]
        cc, hh = 0.0, 0.0
        for g in self.groups:
            C, h = g.core_fits(Ys, lams)
            mask = g.core_mask[:, :, None]
            cc = cc + ((C**2).sum(axis=3) * mask).sum(axis=(0, 1))
            hh = hh + (h * mask).sum(axis=(0, 1))
        return cc, hh

    def _loo(self, Y, lams):
        """Over all core points, per lambda: sum_i |c_i / h_i|^2 (_Windows.loo)."""
        Ys = np.asarray(Y, float)[self.order]
        return sum(g.loo(Ys, lams) for g in self.groups)

    def loo(self, Y, fallback=True):
        """Exact leave-one-out over the local lambdas, as KernelSmoother.loo, window by window.
        ``fallback=False``: the best local lambda even where the optimum may lie beyond them
        (None if no lambda is local)."""
        lams = self._local_candidates()
        if not fallback:
            return smallest_near_min(lams, self._loo(Y, lams)) if len(lams) else None
        best = self._choose(lams, self._loo(Y, lams)) if len(lams) else None
        return self._fallback().loo(Y) if best is None else best

    def gcv(self, Y):
        """n * RSS / tr(I - H)^2 over the local lambdas (residual = lam c, tr(I - H) = lam
        sum h)."""
        lams = self._local_candidates()
        best = None
        if len(lams):
            cc, hh = self._gcv_sums(Y, lams)
            best = self._choose(lams, self.n * cc / hh**2)  # lam^2 cancels
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
        if self.groups is None or self.locality([lam])[0] > LOCAL_TOL:
            self.last_fit = "global"
            return self._fallback().apply(Y, lam, z)
        pads = sorted({g.pad for g in self.groups})
        self.last_fit = (f"windows of {self.core} + 2 x {pads[0]}"
                         + (f"..{pads[-1]}" if len(pads) > 1 else ""))
        Ys = np.asarray(Y, float)[self.order]
        nearest = np.clip(np.searchsorted(self.t, z), 1, self.n - 1)
        nearest -= (z - self.t[nearest - 1]) < (self.t[nearest] - z)
        u = np.empty((len(z), Ys.shape[1]))
        for g in self.groups:  # z is evaluated by the window whose core holds its nearest point
            pos = np.searchsorted(g.first, nearest, side="right") - 1
            mine = (pos >= 0) & (nearest < g.end[np.maximum(pos, 0)])
            if mine.any():
                u[mine] = g.evaluate(pos[mine], z[mine], Ys, lam, self.kernel, self.t)
        return u

    def _fallback(self):
        """The global smoother, for lambdas at which these windows are not local."""
        if self._global is None:
            self._global = KernelSmoother(*self.args)
        return self._global


def chunks(blocks, k):
    """The sorted block numbers ``blocks`` in pieces of at most ``k`` consecutive ones."""
    runs = np.split(blocks, np.flatnonzero(np.diff(blocks) != 1) + 1)
    return [piece for run in runs for piece in np.split(run, np.arange(k, len(run), k))]


def _penalised(K, ts, q):
    """K projected off the polynomials of degree < q at the points ts (the penalised part)."""
    if not q:
        return K
    Q = np.linalg.qr(np.vander(ts, q, increasing=True), mode="complete")[0][:, q:]
    return Q.T @ K @ Q


def _global_scale(ts, kernel, q):
    """Largest eigenvalue of the global smoother's matrix over the sorted points ``ts``, from an
    evenly spread subsample (it grows in proportion to the number of points); it anchors the
    lambda grid."""
    sub = ts[:: max(1, -(-len(ts) // SCALE_SAMPLE))]
    K = _penalised(kernel(sub[:, None], sub[None, :]), sub, q)
    top = np.linalg.eigvalsh(K)[-1] if len(K) else 0.0
    return top * len(ts) / len(sub) if top > 0 else 1.0


def _window_top(ts, kernel, q, w):
    """Median largest eigenvalue of the (penalised) kernel matrices of TOP_SAMPLE windows of w
    consecutive points spread over the sorted points ``ts``, away from the ends."""
    starts = np.linspace(0, len(ts) - w, TOP_SAMPLE + 2)[1:-1].round().astype(int)
    T = ts[starts[:, None] + np.arange(w)]
    K = kernel(T[:, :, None], T[:, None, :])
    if q:
        K = np.stack([_penalised(k, t, q) for k, t in zip(K, T)])
    return float(np.median(np.linalg.eigvalsh(K)[:, -1]))


def floor_drop(ts, kernel, q, w):
    """How far below the global smoother's the lambda floor goes for windows of w points.

    The global smoother's floor, LAMBDA_FLOOR times the largest eigenvalue of its matrix, is
    where double precision ends for that matrix. Windows decompose only their own, whose largest
    eigenvalue falls further below the global one the more points there are (as n^-1 for
    Matern kernels, n^-4 for the cubic spline's semikernel: the points crowd, and the fit at the
    global floor reaches over more and more of them, so windows widen and the decode grows as
    n^2). So beyond FLOOR_POINTS points the floor drops by as much as that ratio fell since
    FLOOR_POINTS points (measured on every (n / FLOOR_POINTS)-th point: the same points, as
    many as then): the fit at the floor is as local, and as precise, as at FLOOR_POINTS points.
    Up to FLOOR_POINTS, 1: the grid is the global smoother's."""
    n = len(ts)
    if n <= FLOOR_POINTS:
        return 1.0
    sub = ts[np.linspace(0, n - 1, FLOOR_POINTS).round().astype(int)]

    def ratio(points):
        return _window_top(points, kernel, q, w) / _global_scale(points, kernel, q)

    return min(1.0, ratio(ts) / ratio(sub))
