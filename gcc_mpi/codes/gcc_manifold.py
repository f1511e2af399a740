"""Manifold-aware GCC: the encoder curve follows the data manifold.

Standard GCC gives alpha_k to x_k in batch order, so its encoder curve jumps between unrelated
inputs and the coded inputs between them are blends far from any real input, where f (a trained
network, say) behaves arbitrarily. Here each trial orders its batch along the manifold (see
manifold.py) and places alpha along that order, so consecutive alphas hold neighbouring inputs:
the coded inputs stay near the data and f(u_enc(z)) is smooth in z, which is what the decoder
needs. The decoder is GCC's, evaluated at the trial's alpha (reported by encode, recorded in the
output as ``alpha``). Optionally the anchors are pulled toward their graph neighbours by a
Laplacian penalty (x_hat = (I + laplacian * L_sym)^-1 X) before the curve is fitted. With
lengthscale "auto" the encoder's lengthscale is GCC's rule (2 spacings here), doubled while the
curve swings out of the data (REACH).
"""

import numpy as np

from .gcc import GCC, encoder_cap
from .lengthscale import LengthscaleSmoother
from .manifold import manifold_alpha

# The "auto" encoder's lengthscale doubles (up to its cap) while a coded input lies farther from
# the batch's mean than REACH times its farthest input. Where the ordering puts two or three
# alphas almost on top of each other, a short lengthscale can swing the curve far out: 16-27x on
# a sphere-sines trial, whose nmse was then -6 dB against -60 dB with the curve kept near the
# data; ordinary trials reach 1.2-1.3 (docs/science.md, "Lengthscale").
REACH = 2.0


class ManifoldGCC(GCC):
    trial_alpha = True
    AUTO = {**GCC.AUTO, "enc": 2.0}  # measured: docs/science.md, "Lengthscale"

    def __init__(self, N, K, kernel="matern52", lengthscale="auto", lambda_enc="auto",
                 lambda_dec="auto", neighbors=8, ordering="geodesic", placement="arclength",
                 laplacian=0.0, pool_rows=None, auto=None, decoder="auto"):
        super().__init__(N, K, kernel, lengthscale, lambda_enc, lambda_dec, auto=auto,
                         decoder=decoder)
        self.neighbors, self.ordering, self.placement = neighbors, ordering, placement
        self.laplacian, self.pool_rows = laplacian, pool_rows

    def encode(self, X):
        alpha, W = manifold_alpha(X, neighbors=self.neighbors, ordering=self.ordering,
                                  placement=self.placement, pool=self.pool_rows)
        anchors = X
        if self.laplacian > 0:
            d = np.maximum(W.sum(1), 1e-300) ** -0.5
            L = np.eye(len(X)) - d[:, None] * W * d[None, :]
            anchors = np.linalg.solve(np.eye(len(X)) + self.laplacian * L, X)
        for candidates in self.encoder_ladder():
            encoder = LengthscaleSmoother(alpha, self.beta, self.kernel, candidates)
            choice = self.choose(encoder, anchors, "enc")
            U = encoder.apply(anchors, choice)
            if reach(U, X) <= REACH:
                break
        return U, {**self.facts(choice, "enc"), "alpha": alpha}

    def encoder_ladder(self):
        """The encoder's candidate lengthscales to try in turn: its own alone when fixed or
        chosen by a criterion; for the "auto" rule its lengthscale, then doubled while below the
        cap (gcc.encoder_cap), the cap last."""
        own = self.candidates["enc"]
        if self.lengthscale != "auto" or len(own) > 1 or not np.isfinite(own[0]):
            return [own]
        cap = encoder_cap(self.K)
        ladder = [own[0]]
        while ladder[-1] < cap:
            ladder.append(min(2 * ladder[-1], cap))
        return [np.array([v]) for v in ladder]


def reach(U, X):
    """How far the coded inputs U go from the batch X: the largest distance of a row of U from
    X's mean, over the largest of X's rows (1: no farther than the farthest input)."""
    centre = X.mean(axis=0)
    far = np.linalg.norm(X - centre, axis=1).max()
    return np.linalg.norm(U - centre, axis=1).max() / max(far, np.finfo(float).tiny)
