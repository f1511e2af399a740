"""Kernel ridge regression for several lengthscales at once, the lengthscale chosen with lambda.

GCC's kernels have a lengthscale l. With ``lengthscale = "auto"`` a fit considers the candidates
``lengthscale_grid(K)``: multiples of the spacing of the K data points alpha (pi / K in the middle
of K Chebyshev points), since the function the decoder fits, f(u_enc(z)), varies on that scale.
Every candidate scored gets one eigendecomposition, K_l = W_l diag(s_l) W_l^T, and as in
kernel_smoother.py every lambda is then a sum over s_l for all m outputs at once. A criterion
scores every (l, lambda) pair:
- "loo": the exact leave-one-out error sum_i |c_i / (K_l + lam)^-1_ii|^2 (Rippa's formula);
- "gcv": n * RSS / tr(I - H)^2;
- "ml": the marginal likelihood of a Gaussian process with kernel sigma^2 K_l and noise
  sigma^2 lam, sigma^2 profiled out per output (so it is invariant to the scale of each output),
  as the positive score exp(-2 log-likelihood / (n m)) (see ``scores``).
The pair with the best score is the choice; with a fixed lambda only l is searched. The
criterion used by "auto" was chosen by measurement (benchmarks/lengthscale.py, docs/science.md).
A candidate's eigendecomposition is made only when the search over l (``search``: a walk from
one spacing, usually three candidates in one batched call) reaches it, and lambda is searched
coarse to fine (every 4th grid value, then the 7 around the best): 23 lambdas instead of 61.
"""

from dataclasses import dataclass

import numpy as np

from .kernel_smoother import GRID, LAMBDA_FLOOR, dof_cap, first_near_min

# Candidates as multiples of the data points' spacing pi / K: from half a spacing (the fit
# reverts to zero between points) to 16 (a nearly polynomial fit across the interval).
MULTIPLES = 2.0 ** np.arange(-1, 5)
CRITERIA = ("loo", "gcv", "ml")
# Where the walk over the candidates starts (1 spacing: the decoder's most frequent choice on the
# digits MLP at K = 10; at K = 64 it is half a spacing), and the stride of the coarse lambda pass
# (every 4th lambda of the grid: one per decade).
START = 1
STRIDE = 4
FINE = np.arange(-STRIDE + 1, STRIDE)  # the fine pass: the lambdas around the coarse best


def spacing(K):
    """Typical spacing of K Chebyshev points on [-1, 1] (the middle ones are pi / K apart)."""
    return np.pi / max(K, 1)


def lengthscale_grid(K):
    return spacing(K) * MULTIPLES


def search(L, score, rule="walk", start=START, prior=1.0):
    """(index, value) of the best of L candidates. ``score(indices)`` gives (scores, values) of
    the candidates ``indices`` (smaller scores are better; ties go to the smaller index); a
    candidate k steps from ``start`` must score better by ``prior`` ** k to be chosen (the
    decoder's prior is 1 + 0.5 / n for n results: leave-one-out on few points is noisy, and on
    the default job's 6 results it otherwise chose away from one spacing when that did not
    pay). "grid" scores all; "walk" scores ``start`` and its neighbours (in one call, so that
    they share one batched eigendecomposition), then steps one candidate at a time towards the
    better end while that improves. The walk ends at the grid's choice wherever the score is
    unimodal in the lengthscale (on 953 of 960 trials of the shipped jobs and our workloads).
    """
    return Walk(L, score, rule, start, prior).run()


class Walk:
    """``search`` in two steps, so that two searches can be run side by side: ``begin`` scores
    the start and its neighbours (or every candidate), ``run`` walks from there to the end;
    ``best`` is (score, index, value) of the best candidate scored so far."""

    def __init__(self, L, score, rule="walk", start=START, prior=1.0):
        self.L, self.score, self.rule, self.prior = L, score, rule, prior
        self.start = min(start, L - 2) if L > 3 else start
        self.known = {}  # candidate index -> (score, value)

    def rank(self, k):  # the score, times ``prior`` per candidate away from the start
        return (self.known[k][0] * self.prior ** abs(k - self.start), k)

    def add(self, indices):
        indices = [i for i in indices if 0 <= i < self.L and i not in self.known]
        if indices:
            sc, val = self.score(indices)
            self.known.update({i: (sc[j], val[j]) for j, i in enumerate(indices)})

    def begin(self):
        if self.rule == "grid" or self.L <= 3:
            self.add(range(self.L))
        else:
            self.add([self.start - 1, self.start, self.start + 1])
        return self

    def best(self):
        i = min(self.known, key=self.rank)
        return self.known[i][0], i, self.known[i][1]

    def run(self):
        """(index, value) of the walk's choice."""
        if not self.known:
            self.begin()
        while True:
            i = min(self.known, key=self.rank)
            step = -1 if i == min(self.known) else 1 if i == max(self.known) else 0
            if step == 0 or not 0 <= i + step < self.L:
                break
            self.add([i + step])
        i = min(self.known, key=self.rank)
        return i, self.known[i][1]


def coarse_to_fine(lams, score, pick=first_near_min):
    """(score, lambda) per row of the lambdas ``lams`` (L, G) at the row's best: ``score(l)``
    (one row per row of ``l``) of every STRIDE-th lambda, then of the 2 STRIDE - 1 around the
    best of those. ``pick`` finds a row's best (default: the first near-minimum, so that the
    least smoothing wins a near tie). A row's lambdas are ascending and may end in a run of one
    value (capped: ``LengthscaleSmoother.candidates``); lambdas past the run's first are not
    scored (their score is the first's, and ``pick`` takes the first of equals), which leaves
    the choice as it was and saves a third of the scores of a capped decoder."""
    L, G = lams.shape
    if L == 1:  # one lengthscale (a fixed one): the same as below, in Python ints
        return _coarse_to_fine_row(lams, score, pick)
    run = np.argmax(lams == lams[:, -1:], axis=1)  # where each row's last run of equals begins
    coarse = lams[:, :STRIDE * int(np.max(-(-run // STRIDE))) + 1:STRIDE]
    near = pick(score(coarse)) * STRIDE
    cols = np.minimum(np.maximum(near[:, None] + FINE, 0), G - 1)
    cols = cols[:, :min(len(FINE), int(np.max(np.sum(cols < run[:, None], axis=1))) + 1)]
    rows = np.arange(L)
    fine = lams[rows[:, None], cols]
    scores = score(fine)
    return scores.min(axis=1), fine[rows, pick(scores)]


def _coarse_to_fine_row(lams, score, pick):
    """coarse_to_fine of a single row of lambdas, with fewer array operations."""
    row = lams[0]
    G = len(row)
    run = int(np.argmax(row == row[-1]))
    near = int(pick(score(lams[:, :STRIDE * -(-run // STRIDE) + 1:STRIDE]))[0]) * STRIDE
    cols = [min(max(near + f, 0), G - 1) for f in FINE.tolist()]
    cols = cols[:sum(c < run for c in cols) + 1]
    fine = row[cols][None]
    scores = score(fine)
    return scores.min(axis=1), fine[0, pick(scores)]


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
    ``lengthscales``; ``kernel(s, t, lengthscale=l)``. A candidate's eigendecomposition is made
    when a search first needs it (several at once in one batched call) and kept."""

    def __init__(self, t, z, kernel, lengthscales):
        t = np.asarray(t, float)
        self.t, self.z, self.kernel, self.n = t, np.asarray(z, float), kernel, len(t)
        self.lengthscales = np.atleast_1d(np.asarray(lengthscales, float))
        L = len(self.lengthscales)
        self.s, self.W, self.WT, self.W2T = [None] * L, [None] * L, [None] * L, [None] * L
        self.scale = np.ones(L)  # each candidate's largest eigenvalue, once decomposed
        self._stacked = (), ()
        self._rows = {}  # (candidate, min_dof) -> its lambdas

    def decompose(self, indices):
        """Eigendecompositions K_l = W_l diag(s_l) W_l^T of the candidates ``indices`` not made
        yet."""
        todo = [i for i in indices if self.s[i] is None]
        if not todo:
            return
        K = self.gram(self.lengthscales[todo])
        s, W = np.linalg.eigh(K)
        s = np.clip(s, 0.0, None)
        # W^T and its squares, laid out for the leave-one-out scores (rows contiguous)
        WT = np.ascontiguousarray(np.swapaxes(W, 1, 2))
        batch = s, W, WT, WT**2
        for j, i in enumerate(todo):
            self.s[i], self.W[i], self.WT[i], self.W2T[i] = (a[j] for a in batch)
            top = s[j, -1] if self.n else 0.0
            self.scale[i] = top if top > 0 else 1.0
        self._stacked = tuple(todo), batch

    # -- the kernel's values: between the points t (one matrix per lengthscale) and from z to t; a
    # subclass may compute them otherwise (chords.py: from distances)
    def gram(self, lengthscales):
        """k(t, t) per lengthscale: (L, n, n)."""
        return self.kernel(self.t[None, :, None], self.t[None, None, :],
                           lengthscale=lengthscales[:, None, None])

    def cross(self, z, lengthscale):
        """k(z, t) for one lengthscale: (len(z), n); z None: the smoother's own points."""
        z = self.z if z is None else np.asarray(z, float)
        return self.kernel(z[:, None], self.t[None, :], lengthscale=lengthscale)

    def stacked(self, indices):
        """(s (L, r), W (L, n, r), W^T (L, r, n), (W^T)**2) of the candidates ``indices``; the
        walk scores the same candidates several times in a row, so the last ones are kept."""
        indices = tuple(indices)
        self.decompose(indices)
        if self._stacked[0] != indices:
            arrays = self.s, self.W, self.WT, self.W2T
            if len(indices) == 1:  # the same values as a stack of one, without the copies
                stacked = tuple(a[indices[0]][None] for a in arrays)
            else:
                stacked = tuple(np.stack([a[i] for i in indices]) for a in arrays)
            self._stacked = indices, stacked
        return self._stacked[1]

    def effective_lambda(self, lam, i):
        self.decompose([i])
        return max(float(lam), LAMBDA_FLOOR * self.scale[i])

    def fixed(self, i, lam):
        """The Choice of candidate i with the fixed lambda ``lam``."""
        return Choice(i, float(self.lengthscales[i]), self.effective_lambda(lam, i))

    def candidates(self, indices=None, min_dof=0):
        """Lambda candidates per lengthscale (L, G), relative to each one's largest eigenvalue,
        capped where the fit would keep fewer than ``min_dof`` effective degrees of freedom."""
        indices = list(range(len(self.lengthscales)) if indices is None else indices)
        self.decompose(indices)
        todo = [i for i in indices if (i, min_dof) not in self._rows]
        if todo:  # each candidate's row computed once, the new ones together
            scale = self.scale[todo][:, None]
            rows = np.maximum(GRID * scale, LAMBDA_FLOOR * scale)
            if min_dof > 0 and self.n:
                s = self.s[todo[0]][None] if len(todo) == 1 else np.stack([self.s[i]
                                                                            for i in todo])
                rows = np.minimum(rows, dof_cap(s, rows, min_dof))
            self._rows.update({(i, min_dof): row for i, row in zip(todo, rows)})
            if len(todo) == len(indices) and todo == indices:
                return rows
        return np.stack([self._rows[i, min_dof] for i in indices])

    def basis(self, Y, indices):
        """(s (L, r), W (L, n, r), W^T Y (L, r, m), W^T (L, r, n), (W^T)**2) of the lengthscales
        ``indices``: what every criterion needs, shared by the coarse and the fine pass."""
        s, W, WT, W2T = self.stacked(indices)
        YtW = np.asarray(Y, float).T @ W                          # (L, m, r), rows contiguous
        return s, W, np.swapaxes(YtW, 1, 2), WT, W2T

    def scores(self, Y, lams, criterion, indices=None, basis=None):
        """The criterion (smaller is better) for the lengthscales ``indices`` (default: all) and
        the lambdas ``lams`` (one row per lengthscale)."""
        indices = list(range(len(self.lengthscales)) if indices is None else indices)
        s, W, WtY, WT, W2T = basis or self.basis(Y, indices)
        if criterion == "loo":
            # sum_i |c_i|^2 / (K + lam)^-1_ii^2 with c = W diag(1 / (s + lam)) W^T y for all L
            # lengthscales, G lambdas and m outputs in one product, the r eigenvectors innermost
            # (numpy's broadcasting is fastest along long contiguous rows)
            inv = 1.0 / (s[:, None, :] + lams[:, :, None])        # (L, G, r)
            L, G, r = inv.shape
            m = WtY.shape[2]
            scaled = np.swapaxes(WtY, 1, 2)[:, :, None, :] * inv[:, None]  # (L, m, G, r)
            C = (scaled.reshape(L, m * G, r) @ WT).reshape(L, m, G, -1)    # c: (L, m, G, n)
            h = inv @ W2T                                         # (K + lam)^-1_ii (L, G, n)
            h *= h
            return (np.einsum("lmgn,lmgn->lgn", C, C) / h).sum(axis=2)
        inv = 1.0 / (s[:, None, :] + lams[:, :, None])            # (L, G, r)
        if criterion == "gcv":
            e = np.sum(WtY**2, axis=2)                            # (L, r)
            f = lams[:, :, None] * inv                            # eigenvalues of I - H
            return self.n * np.einsum("lgr,lr->lg", f**2, e) / f.sum(axis=2) ** 2
        if criterion == "ml":
            # minus the log marginal likelihood, sigma^2 profiled out per output, is
            # (n / 2) sum_m log(y_m^T A^-1 y_m) + (m / 2) log det A (A = K + lam) up to a
            # constant; it is returned as exp(2 / (n m) times that): the geometric mean over the
            # outputs of the profiled sigma^2 times det(A)^(1/n). The ranking is the same, but
            # the score is positive and scales with f's outputs squared, as leave-one-out's does,
            # so that the relative near-tie rule and the walk's prior mean the same for every
            # criterion (on the log scale a score can be negative, and a factor on it is not
            # invariant to the scale of f)
            yAy = np.einsum("lgr,lrm->lgm", inv, WtY**2)
            tiny = np.finfo(float).tiny
            return np.exp(np.log(np.maximum(yAy, tiny)).mean(axis=2)
                          - np.log(inv).sum(axis=2) / self.n)
        raise ValueError(f"unknown criterion {criterion!r}; choose from {', '.join(CRITERIA)}")

    def best_lambdas(self, Y, criterion, indices, min_dof=0):
        """(score, lambda) of each lengthscale in ``indices`` at its best lambda of the grid
        (capped by ``min_dof``: ``candidates``), searched coarse to fine (``coarse_to_fine``)."""
        basis = self.basis(Y, indices)
        return coarse_to_fine(self.candidates(indices, min_dof),
                              lambda lams: self.scores(Y, lams, criterion, indices, basis))

    def select(self, Y, rule, criterion=None, search_rule="walk", prior=1.0, min_dof=0):
        """The Choice for data Y (n x m). With an automatic lambda (``rule`` "loo" or "gcv") the
        pair (l, lambda) is searched jointly, by ``criterion`` (default: the rule's own score);
        with a fixed lambda (a number) only l is, by ``criterion`` (default "loo").
        ``search_rule``: "walk" or "grid" (see ``search``); an automatic lambda keeps ``min_dof``
        effective degrees of freedom (``candidates``)."""
        if len(self.lengthscales) == 1 and not isinstance(rule, str) and (
                criterion or "loo") in CRITERIA:
            return self.fixed(0, rule)  # nothing to choose (an encoder's every trial): no score
        walk = self.walk(Y, rule, criterion, search_rule, prior, min_dof)
        return self.choice(walk.run())

    def walk(self, Y, rule, criterion=None, search_rule="walk", prior=1.0, min_dof=0,
             start=START):
        """The Walk of ``select`` over this smoother's lengthscales, from ``start``, not begun."""
        Y = np.asarray(Y, float)
        criterion = criterion or (rule if isinstance(rule, str) else "loo")

        def score(indices):
            if isinstance(rule, str):
                return self.best_lambdas(Y, criterion, indices, min_dof)
            lam = np.array([self.effective_lambda(rule, i) for i in indices])
            return self.scores(Y, lam[:, None], criterion, indices)[:, 0], lam

        return Walk(len(self.lengthscales), score, search_rule, start, prior)

    def choice(self, found):
        """The Choice of a walk's (index, lambda)."""
        i, lam = found
        return Choice(i, float(self.lengthscales[i]), float(lam))

    def weights(self, choice, z=None):
        """The matrix A with u(z) = A @ y for this choice."""
        i = choice.index
        self.decompose([i])
        Kz = self.cross(z, self.lengthscales[i])
        return (Kz @ self.W[i] / (self.s[i] + choice.lam)) @ self.W[i].T

    def apply(self, Y, choice, z=None):
        """u(z) for the columns of Y (n x m) with this choice."""
        i = choice.index
        self.decompose([i])
        Kz = self.cross(z, self.lengthscales[i])
        coef = self.W[i] @ ((self.W[i].T @ Y) / (self.s[i] + choice.lam)[:, None])
        return Kz @ coef
