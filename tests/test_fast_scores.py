"""The fast leave-one-out scoring (lengthscale.py, windowed.py, windowed_lengthscale.py) against
the plain formulas it replaced, kept here as the reference: over many random received sets the
decoder makes the same choice (lengthscale index and lambda) and decodes the same bits, on the
exact path (few results) and the windowed one (above 400)."""

from functools import partial

import numpy as np
import pytest

from gcc_mpi.codes import make_code
from gcc_mpi.codes.kernels import matern52
from gcc_mpi.codes.lengthscale import STRIDE, LengthscaleSmoother, lengthscale_grid
from gcc_mpi.codes.kernel_smoother import smallest_near_min
from gcc_mpi.codes.windowed import LOCAL_TOL, WindowedSmoother
from gcc_mpi.codes.windowed_lengthscale import WindowedLengthscaleSmoother


def plain_kernel(s, t, lengthscale=1.0):
    """Matern-5/2 as one expression (kernels.matern52 computes it in place)."""
    r = np.sqrt(5) * np.abs(s - t) / lengthscale
    return (1 + r + r**2 / 3) * np.exp(-r)


class PlainLengthscaleSmoother(LengthscaleSmoother):
    """Leave-one-out by the plain formula, the best lambda picked one row at a time."""

    def scores(self, Y, lams, criterion, indices=None, basis=None):
        if criterion != "loo":
            return super().scores(Y, lams, criterion, indices, basis)
        indices = list(range(len(self.lengthscales)) if indices is None else indices)
        s, W, WtY = basis[:3] if basis else self.basis(Y, indices)[:3]
        inv = 1.0 / (s[:, None, :] + lams[:, :, None])            # (L, G, r)
        L, G, r = inv.shape
        scaled = np.swapaxes(inv, 1, 2)[..., None] * WtY[:, :, None, :]
        C = (W @ scaled.reshape(L, r, -1)).reshape(L, self.n, G, -1)
        h = inv @ np.swapaxes(W**2, 1, 2)
        return np.einsum("lngm,lgn->lg", C**2, 1.0 / h**2)

    def best_lambdas(self, Y, criterion, indices, min_dof=0):
        lams = self.candidates(indices, min_dof)
        basis = self.basis(Y, indices)
        score = self.scores(Y, lams[:, ::STRIDE], criterion, indices, basis)
        near = np.argmax(score <= score.min(axis=1, keepdims=True) * (1 + 1e-6), axis=1) * STRIDE
        cols = np.clip(near[:, None] + np.arange(-STRIDE + 1, STRIDE), 0, lams.shape[1] - 1)
        fine = np.take_along_axis(lams, cols, axis=1)
        score = self.scores(Y, fine, criterion, indices, basis)
        best = [smallest_near_min(fine[j], score[j]) for j in range(len(fine))]
        return score.min(axis=1), np.array(best)


def plain_windowed_loo(smoother, Y, lams):
    """A WindowedSmoother's leave-one-out sum over all core points, per lambda, from core_fits."""
    Ys = np.asarray(Y, float)[smoother.order]
    loo = 0.0
    for g in smoother.groups:
        C, h = g.core_fits(Ys, lams)
        mask = g.core_mask[:, :, None]
        loo = loo + (((C / h[:, :, :, None]) ** 2).sum(axis=3) * mask).sum(axis=(0, 1))
    return loo


class PlainWindowedSmoother(WindowedSmoother):
    """Lambda from the sums of core_fits, each point evaluated from its own copy of its window."""

    def _loo(self, Y, lams):
        return plain_windowed_loo(self, Y, lams)

    def apply(self, Y, lam, z=None):
        lam = self.effective_lambda(lam)
        z = self.z if z is None else np.asarray(z, float)
        assert self.groups is not None and self.locality([lam])[0] <= LOCAL_TOL
        Ys = np.asarray(Y, float)[self.order]
        nearest = np.clip(np.searchsorted(self.t, z), 1, self.n - 1)
        nearest -= (z - self.t[nearest - 1]) < (self.t[nearest] - z)
        u = np.empty((len(z), Ys.shape[1]))
        for g in self.groups:
            pos = np.searchsorted(g.first, nearest, side="right") - 1
            mine = (pos >= 0) & (nearest < g.end[np.maximum(pos, 0)])
            which = pos[mine]
            W, s, Yw = g.W[which], g.s[which], Ys[g.idx[which]]
            coef = W @ ((np.swapaxes(W, 1, 2) @ Yw) / (s + lam)[:, :, None])
            u[mine] = np.einsum("kw,kwm->km", self.kernel(z[mine][:, None], self.t[g.idx[which]]),
                                coef)
        return u


class PlainWindowedLengthscaleSmoother(WindowedLengthscaleSmoother):
    """The sample windows scored by the plain formula; the full smoothers are the plain ones."""

    def smoother(self, i):
        if i not in self._full:
            self._full[i] = PlainWindowedSmoother(
                self.t, self.z, partial(self.kernel, lengthscale=self.lengthscales[i]))
        return self._full[i]

    def scores(self, Y, lams, indices=None, rows=None):
        indices = list(range(len(self.lengthscales)) if indices is None else indices)
        idx, core, s, W = self._sample_windows(indices)[:4]
        order = np.argsort(self.t, kind="stable")
        Yw = np.asarray(Y, float)[order][idx]
        WtY = np.swapaxes(W, 2, 3) @ Yw[None]
        inv = 1.0 / (s[:, :, None, :] + lams[:, None, :, None])
        Wc = W[:, :, core]
        L, B, G, r = inv.shape
        scaled = (inv[..., None] * WtY[:, :, None]).transpose(0, 1, 3, 2, 4).reshape(L, B, r, -1)
        C = (Wc @ scaled).reshape(L, B, len(core), G, -1)
        h = Wc**2 @ np.swapaxes(inv, 2, 3)
        loo = np.sum((C / h[..., None]) ** 2, axis=(2, 4))
        terms = (Wc[:, :, :, None] * W[:, :, None, [0, -1]]).reshape(L, B, -1, r)
        H = terms @ np.swapaxes(s[:, :, None] * inv, 2, 3)
        loo[np.abs(H).max(axis=2) > LOCAL_TOL] = np.inf
        return loo.sum(axis=1)


def outputs(code, rng, m=6):
    """Results of a smooth f of random inputs, as a decoder receives them (all N rows)."""
    coded, _ = code.encode(rng.standard_normal((code.K, 5)))
    A = rng.standard_normal((5, m))
    return np.tanh(coded @ A) + 0.3 * np.sin(3 * coded[:, :1])


def test_matern52_in_place_is_the_plain_formula():
    rng = np.random.default_rng(0)
    s, t = rng.uniform(-1, 1, (40, 1)), rng.uniform(-1, 1, (1, 30))
    ls = lengthscale_grid(10)[:, None, None]
    assert np.array_equal(matern52(s, t, 0.3), plain_kernel(s, t, 0.3))
    assert np.array_equal(matern52(s[None], t[None], ls), plain_kernel(s[None], t[None], ls))
    assert matern52(0.25, -0.5, lengthscale=0.7) == plain_kernel(0.25, -0.5, 0.7)


@pytest.mark.parametrize("scheme", ["gcc", "gcc-manifold"])
def test_exact_path_same_choice_and_bits(scheme):
    """300 random received sets (10 to 40 of 40 results, K = 10): the same Choice as the plain
    scoring, and the decode equal to the last bit; the walk visits several lengthscales."""
    code = make_code(scheme, 40, 10)
    rng = np.random.default_rng(3)
    chosen = set()
    for trial in range(300):
        if trial % 20 == 0:  # new inputs every 20 received sets
            Y_all = outputs(code, rng)
        received = np.sort(rng.permutation(40)[:rng.integers(10, 41)])
        t, Y = code.beta[received], Y_all[received]
        args = (t, code.alpha, code.kernel, code.candidates["dec"])
        fast, plain = LengthscaleSmoother(*args), PlainLengthscaleSmoother(*args)
        prior = 1 + code.auto["prior"] / len(t)
        a = fast.select(Y, "loo", "loo", search_rule="walk", prior=prior)
        b = plain.select(Y, "loo", "loo", search_rule="walk", prior=prior)
        assert a == b
        assert np.array_equal(fast.apply(Y, a), plain.apply(Y, b))
        # the fixed-lambda search and the "grid" rule score the same way
        assert fast.select(Y, 1e-6, "loo") == plain.select(Y, 1e-6, "loo")
        if trial % 10 == 0:
            assert fast.select(Y, "loo", "loo", "grid") == plain.select(Y, "loo", "loo", "grid")
        chosen.add(a.index)
    assert len(chosen) >= 3


@pytest.mark.parametrize("lengthscale", ["auto", 0.1])
def test_windowed_path_same_choice_and_bits(lengthscale):
    """N = 1024, K = 64, 900 random results of 1024 (the windowed decoder): the same Choice as
    the plain scoring and the same decoded bits, in windows of several paddings."""
    code = make_code("gcc", 1024, 64, lengthscale=lengthscale)
    rng = np.random.default_rng(5)
    Y_all = outputs(code, rng, m=4)
    pads = set()
    for _ in range(4):
        received = np.sort(rng.permutation(1024)[:900])
        t, Y = code.beta[received], Y_all[received]
        args = (t, code.alpha, code.kernel, code.candidates["dec"])
        fast, plain = WindowedLengthscaleSmoother(*args), PlainWindowedLengthscaleSmoother(*args)
        a = fast.select(Y, "loo", "loo", prior=1.0005)
        b = plain.select(Y, "loo", "loo", prior=1.0005)
        assert a == b and not a.exact
        assert np.array_equal(fast.apply(Y, a), plain.apply(Y, b))
        full = fast.smoother(a.index)
        pads |= {g.pad for g in full.groups}
        lams = full._local_candidates()  # the leave-one-out sums against core_fits' plain ones
        assert len(lams) >= 2
        assert np.allclose(full._loo(Y, lams), plain_windowed_loo(full, Y, lams), rtol=1e-12)
        if lengthscale == "auto":  # the sample windows' scores of every candidate
            lams = fast.candidates()[:, ::STRIDE]
            assert np.allclose(fast.scores(Y, lams), plain.scores(Y, lams), rtol=1e-12)
    assert lengthscale == "auto" or len(pads) >= 2  # 0.1 widens the windows near the ends
