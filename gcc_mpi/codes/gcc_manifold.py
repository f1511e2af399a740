"""Manifold-aware GCC: the encoder curve follows the data manifold.

Standard GCC gives alpha_k to x_k in batch order, so its encoder curve jumps between unrelated
inputs and the coded inputs between them are blends far from any real input, where f (a trained
network, say) behaves arbitrarily. Here each trial orders its batch along the manifold (see
manifold.py) and places alpha along that order, so consecutive alphas hold neighbouring inputs:
the coded inputs stay near the data and f(u_enc(z)) is smooth in z, which is what the decoder
needs. The decoder is GCC's, evaluated at the trial's alpha (reported by encode, recorded in the
output as ``alpha``). Optionally the anchors are pulled toward their graph neighbours by a
Laplacian penalty (x_hat = (I + laplacian * L_sym)^-1 X) before the curve is fitted.
"""

import numpy as np

from .gcc import GCC
from .manifold import manifold_alpha


class ManifoldGCC(GCC):
    trial_alpha = True
    AUTO = {**GCC.AUTO, "enc": 2.0}  # measured: docs/science.md, "Lengthscale"

    def __init__(self, N, K, kernel="matern52", lengthscale="auto", lambda_enc="auto",
                 lambda_dec="auto", neighbors=8, ordering="geodesic", placement="chebyshev",
                 laplacian=0.0, pool_rows=None, auto=None):
        super().__init__(N, K, kernel, lengthscale, lambda_enc, lambda_dec, auto=auto)
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
        encoder = self.smoother(alpha, self.beta, "enc")
        choice = self.choose(encoder, anchors, "enc")
        return encoder.apply(anchors, choice), {**self.facts(choice, "enc"), "alpha": alpha}
