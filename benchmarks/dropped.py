"""Rules tried for issue 29 and not made defaults (benchmarks/variants.py runs them; what was
measured of them is in docs/science.md, "The decoder in the input space"): each is a mixin over
GCC's decoder, so the codes keep only what is used."""


from gcc_mpi.codes import chords
from gcc_mpi.codes.gcc import GCC
from gcc_mpi.codes.gcc_manifold import ManifoldGCC
from gcc_mpi.codes.kernels import matern32, matern52


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


def factory(mixin):
    """{scheme: a make_code-like builder} of gcc and gcc-manifold with ``mixin`` over them."""
    classes = {"gcc": type(f"{mixin.__name__}GCC", (mixin, GCC), {}),
               "gcc-manifold": type(f"{mixin.__name__}ManifoldGCC", (mixin, ManifoldGCC), {})}
    return {s: (lambda N, K, cls=cls, **options: cls(N, K, **options))
            for s, cls in classes.items()}


