"""Rules tried for issue 29 and not made defaults (benchmarks/variants.py runs them; what was
measured of them is in docs/science.md, "The decoder in the input space"): each is a mixin over
GCC's decoder, so the codes keep only what is used."""

import numpy as np
from scipy.linalg import blas, lapack

from gcc_mpi.codes import build, chords
from gcc_mpi.codes.gcc import DENSE, GCC
from gcc_mpi.codes.gcc_manifold import ManifoldGCC
from gcc_mpi.codes.lengthscale import LengthscaleSmoother
from gcc_mpi.codes.kernels import matern32, matern52


def input_space_alone(code, received, inputs):
    """Whether the defaults' decoder would fit in the input space alone for this decode (the
    rules below change that walk only; elsewhere the defaults decode)."""
    return (code.uses_inputs and inputs is not None and code.auto["space"] != "z"
            and not (code.auto["space"] == "auto" and len(received) >= DENSE * code.K))


class Centred:
    """The decoder fits the results minus their mean (a constant the ridge penalty does not
    shrink toward zero); with ``encoder`` also the encoder the inputs minus theirs."""

    encoder = False

    def encode(self, X):
        if not self.encoder:
            return super().encode(X)
        mean = X.mean(axis=0)
        U, info = super().encode(X - mean)
        return U + mean, info

    def _decode_sorted(self, received, Y, alpha=None, inputs=None):
        mean = Y.mean(axis=0)
        Y_hat, info = super()._decode_sorted(received, Y - mean, alpha, inputs)
        return Y_hat + mean, info


class CentredBoth(Centred):
    encoder = True


class InputKernel:
    """The input-space decoder alone, with the kernel(s) ``KERNELS``: one, or the better by
    leave-one-out of each decode."""

    KERNELS = (matern32,)

    def _decode_sorted(self, received, Y, alpha=None, inputs=None):
        best = None
        for kernel in self.KERNELS:
            xs = self.input_smoother(received, inputs, kernel)
            walk = self.walk(xs, Y, chords.START)
            walk.run()
            if best is None or walk.best()[0] < best[0]:
                best = (walk.best()[0], xs, xs.choice(walk.best()[1:]))
        return best[1].apply(Y, best[2]), self.facts(best[2], "dec", "x")


class InputKernelChoice(InputKernel):
    KERNELS = (matern52, matern32)


class Mixed:
    """Both spaces walk to their best; the two fits averaged with weights inverse to their
    leave-one-out scores."""

    def _decode_sorted(self, received, Y, alpha=None, inputs=None):
        xs, zs = self.input_smoother(received, inputs), self.decoder(received)
        wx, wz = self.walk(xs, Y, chords.START), self.walk(zs, Y)
        cx, cz = xs.choice(wx.run()), zs.choice(wz.run())
        sx, sz = wx.best()[0], wz.best()[0]
        w = sz / (sx + sz)
        Y_hat = w * xs.apply(Y, cx) + (1 - w) * zs.apply(Y, cz, alpha)
        return Y_hat, self.facts(cx if w >= 0.5 else cz, "dec", "x" if w >= 0.5 else "z")


class InputKernelAtStart:
    """The input-space decoder with Matern-5/2 or 3/2, whichever scores better by leave-one-out
    at the walk's start, walking on with that kernel alone (InputKernelChoice walks with both);
    where the defaults would compare both spaces the defaults decode."""

    def _decode_sorted(self, received, Y, alpha=None, inputs=None):
        if not input_space_alone(self, received, inputs):
            return super()._decode_sorted(received, Y, alpha, inputs)
        first = self.input_smoother(received, inputs)
        other = object.__new__(chords.ChordSmoother)  # the same distances, Matern-3/2
        other.D_tt, other.D_zt = first.D_tt, first.D_zt
        LengthscaleSmoother.__init__(other, first.t, first.z, matern32, first.lengthscales)
        walks = {}
        for xs in (first, other):
            walks[xs] = self.walk(xs, Y, chords.START)
            walks[xs].add([chords.START])
        xs = min(walks, key=lambda k: walks[k].known[chords.START][0])
        choice = xs.choice(walks[xs].begin().run())
        return xs.apply(Y, choice), self.facts(choice, "dec", "x")


class StartAlone:
    """The input-space decoder's walk begun at its start alone (the defaults' walk scores the
    start and both neighbours in one batched call); ``steps`` adds the candidates a rule wants.
    Where the defaults would not fit in the input space alone they decode. ``scored``: the
    candidates scored in full per decode."""

    def _decode_sorted(self, received, Y, alpha=None, inputs=None):
        if not input_space_alone(self, received, inputs):
            return super()._decode_sorted(received, Y, alpha, inputs)
        xs = self.input_smoother(received, inputs)
        walk = self.walk(xs, Y, chords.START)
        walk.add([walk.start])
        self.steps(xs, walk, Y)
        found = min(walk.known, key=walk.rank)
        self.__dict__.setdefault("scored", []).append(len(walk.known))
        choice = xs.choice((found, walk.known[found][1]))
        return xs.apply(Y, choice), self.facts(choice, "dec", "x")


class SlopeWalk(StartAlone):
    """The input-space decoder's walk over its lengthscales, for speed (issue 29: auto at most
    1.5 x a fixed lengthscale's cost): the start is scored alone, and a neighbour only where
    leave-one-out's slope in log(lengthscale) at the start, times a step log(2), exceeds STEP
    (relative to the score); it walks on that way while the newest candidate is the best. The
    defaults' walk scores the start and both neighbours (one batched call). Where the defaults
    would compare both spaces (gcc.DENSE results per input and more) the defaults decode.
    ``scored``: the candidates each decode scored."""

    STEP = 0.15

    def steps(self, xs, walk, Y):
        i = walk.start
        g = loo_slope(xs, Y, i, walk.known[i][1]) * np.log(2)
        step = 0 if abs(g) <= self.STEP else -1 if g > 0 else 1
        while step and 0 <= i + step < walk.L:
            walk.add([i + step])
            best = min(walk.known, key=walk.rank)
            if best != i + step:
                break
            i = best


def loo_slope(sm, Y, i, lam):
    """d log(score) / d log(l) of leave-one-out at candidate i of the input-space smoother ``sm``
    and lambda ``lam``: with B = (K + lam)^-1, c = B y, a = diag(B) the score is
    sum_i |c_i|^2 / a_i^2, and dB = -B K' B for K' = dK / d log(l) (Matern-5/2 and 3/2)."""
    sm.decompose([i])
    W, ell = sm.W[i], sm.lengthscales[i]
    k = sm.gram(np.array([ell]))[0]
    if sm.kernel is matern52:
        r = np.sqrt(5) * sm.D_tt / ell
        Kp = k * (r * r * (1 + r) / (3 + 3 * r + r * r))
    elif sm.kernel is matern32:
        r = np.sqrt(3) * sm.D_tt / ell
        Kp = k * (r * r / (1 + r))
    else:
        raise ValueError("the slope is written for the Matern kernels")
    B = (W / (sm.s[i] + lam)) @ W.T
    BK = B @ Kp
    c = B @ Y
    a = np.diag(B)
    da = -np.einsum("ij,ij->i", BK, B)
    dc = -BK @ c
    cc = np.einsum("ij,ij->i", c, c)
    score = np.sum(cc / a**2)
    return float((2 * np.einsum("ij,ij->i", c, dc) / a**2 - 2 * cc * da / a**3).sum() / score)


class ScreenedWalk(StartAlone):
    """The input-space decoder's walk, for speed (issue 29): the start is scored in full (its
    eigendecomposition and the lambda search), a neighbour first by a screen: leave-one-out at the
    best lambda so far times each of FACTORS, by one Cholesky factorisation each (``loo_at``;
    about a sixth of a full candidate's cost per lambda). The neighbour is scored in full only
    where its screen, times the walk's prior, is below TAU times the best candidate's score, and
    the walk goes on that way while the newest candidate is the best. Where the defaults would
    compare both spaces (gcc.DENSE results per input and more) the defaults decode.
    ``scored``: the candidates scored in full."""

    TAU = 1.0
    FACTORS = (1.0,)

    def steps(self, xs, walk, Y):
        for step in (-1, 1):
            j = walk.start + step
            while 0 <= j < walk.L:
                best = min(walk.known, key=walk.rank)
                lams = [walk.known[best][1] * f for f in self.FACTORS]
                screen = loo_at(xs, j, lams, Y) * walk.prior ** abs(j - walk.start)
                if screen >= self.TAU * walk.rank(best)[0]:
                    break
                walk.add([j])
                if min(walk.known, key=walk.rank) != j:
                    break
                j += step


def loo_at(xs, i, lams, Y):
    """The smallest leave-one-out score of the smoother ``xs``'s candidate i over the lambdas
    ``lams``, each from a Cholesky factorisation of K + lam: B = (K + lam)^-1, sum_i |(B y)_i|^2
    / B_ii^2 (inf where K + lam is not numerically positive definite)."""
    K = xs.gram(xs.lengthscales[i:i + 1])[0]
    n = len(K)
    best = np.inf
    for lam in np.atleast_1d(lams):
        A = K.copy()
        A.flat[::n + 1] += lam
        c, info = lapack.dpotrf(A, lower=1, overwrite_a=1)
        if info:
            continue
        B, info = lapack.dpotri(c, lower=1, overwrite_c=1)
        C = blas.dsymm(1.0, B, Y, lower=1)
        best = min(best, float(np.sum((C / B.flat[::n + 1][:, None]) ** 2)))
    return best


def screened_walk(tau, factors=(1.0,)):
    """ScreenedWalk with the threshold ``tau`` and the screen's lambdas ``factors``."""
    name = f"ScreenedWalk{tau:g}_{'_'.join(f'{f:g}' for f in factors)}"
    return type(name, (ScreenedWalk,), {"TAU": tau, "FACTORS": tuple(factors)})


def slope_walk(step):
    """SlopeWalk with the threshold ``step``."""
    return type(f"SlopeWalk{step:g}", (SlopeWalk,), {"STEP": step})


def factory(mixin):
    """{scheme: a make_code-like builder} of gcc and gcc-manifold with ``mixin`` over them."""
    classes = {"gcc": type(f"{mixin.__name__}GCC", (mixin, GCC), {}),
               "gcc-manifold": type(f"{mixin.__name__}ManifoldGCC", (mixin, ManifoldGCC), {})}
    return {s: (lambda N, K, cls=cls, **options: build(cls, N, K, **options))
            for s, cls in classes.items()}


