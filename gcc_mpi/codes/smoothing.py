"""Codes whose encoder and decoder are penalised kernel fits (LeTCC, GCC).

The encoder fits u_enc through (alpha_k, x_k) and evaluates it at the worker points beta; the
decoder fits u_dec through the received (beta_n, f(x~_n)) and evaluates it at alpha. Lambda is
a number, "gcv", "loo" or "auto" (see AUTO_RULES).
"""

import numpy as np

from .base import LinearCode
from .points import chebyshev_alpha, chebyshev_beta
from .smoother import KernelSmoother
from .windowed import WindowedSmoother

# What "auto" means, chosen by measurement (benchmarks/lambda_grid.py).
AUTO_RULES = {"enc": 0.0, "dec": "loo"}
# Decoders with more received points than this are computed in windows (windowed.py: equal to
# the global fit where its hat matrix is local, else it falls back); every shipped job stays below.
WINDOWED_ABOVE = 400


def resolve_rule(value, side):
    return AUTO_RULES[side] if value == "auto" else value


class SmoothingCode(LinearCode):
    exact = False
    null_dim = 0  # number of unpenalised polynomial terms (1, z, ...)

    def __init__(self, N, K, kernel, lambda_enc="auto", lambda_dec="auto", alpha=None):
        alpha = chebyshev_alpha(K) if alpha is None else np.asarray(alpha, float)
        super().__init__(N, K, alpha, chebyshev_beta(N))
        self.kernel = kernel
        self.rule_enc = resolve_rule(lambda_enc, "enc")
        self.rule_dec = resolve_rule(lambda_dec, "dec")
        self.encoder = KernelSmoother(self.alpha, self.beta, kernel, self.null_dim)
        if not isinstance(self.rule_enc, str):  # a fixed encoder is one matrix for all trials
            self.E = self.encoder.matrix(self.rule_enc)
            self.lambda_enc = self.encoder.effective_lambda(self.rule_enc)

    def encode(self, X):
        if self.E is not None:
            return self.E @ X, {"lambda_enc": self.lambda_enc}
        lam = self.encoder.select(X, self.rule_enc)
        return self.encoder.apply(X, lam), {"lambda_enc": lam}

    def decode_matrix(self, received):
        # lambda may depend on the results, so the cached decoder is the smoother, not a matrix
        smoother = WindowedSmoother if len(received) > WINDOWED_ABOVE else KernelSmoother
        return smoother(self.beta[received], self.alpha, self.kernel, self.null_dim)

    def _decode_sorted(self, received, Y, alpha=None):
        smoother = self.decoder(received)
        lam = smoother.select(Y, self.rule_dec)
        return smoother.apply(Y, lam, alpha), {"lambda_dec": lam}
