"""Codes whose encoder and decoder are penalised kernel fits (LeTCC, GCC).

The encoder fits u_enc through (alpha_k, x_k) and evaluates it at the worker points beta; the
decoder fits u_dec through the received (beta_n, f(x~_n)) and evaluates it at alpha. Lambda is
a number, "gcv", "loo" or "auto" (see AUTO_RULES). A subclass may fit with other smoothers (GCC:
several lengthscales at once) through the hooks ``smoother``, ``choose`` and ``facts``.
"""

import numpy as np

from .base import LinearCode
from .points import chebyshev_alpha, chebyshev_beta
from .kernel_smoother import KernelSmoother
from .windowed import WINDOWED_ABOVE, WindowedSmoother

# What "auto" means, chosen by measurement (benchmarks/lambda_grid.py).
AUTO_RULES = {"enc": 0.0, "dec": "loo"}
# The decoder's automatic lambda keeps at least DOF_PER_INPUT * K effective degrees of freedom
# tr(H) in its fit of the n results (docs/science.md, "Lambda at minimal redundancy").
DOF_PER_INPUT = 1.5


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
        self.encoder = self.smoother(self.alpha, self.beta, "enc")
        if self.fixed_encoder():  # a fixed encoder is one matrix for all trials
            self.encoder_choice = self.choose(self.encoder, np.zeros((K, 1)), "enc")
            self.E = self.encoder.weights(self.encoder_choice)

    # -- hooks: how this code fits -----------------------------------------------------------
    def smoother(self, t, z, side):
        """The smoother from points t to z for the encoder (side "enc") or decoder ("dec")."""
        if side == "dec" and len(t) > WINDOWED_ABOVE:
            return WindowedSmoother(t, z, self.kernel, self.null_dim)
        return KernelSmoother(t, z, self.kernel, self.null_dim)

    def choose(self, smoother, Y, side):
        """The smoother's hyperparameters for data Y."""
        return smoother.select(Y, self.rule_enc if side == "enc" else self.rule_dec,
                               **self.dof_floor(side, len(Y)))

    def dof_floor(self, side, n):
        """The ``min_dof`` of a fit of n points on this side, as keyword arguments: none for the
        encoder (it interpolates) and for the windowed decoders (above WINDOWED_ABOVE results,
        where K would need to exceed n / DOF_PER_INPUT for it to matter)."""
        if side != "dec" or n > WINDOWED_ABOVE or DOF_PER_INPUT <= 0:
            return {}
        return {"min_dof": DOF_PER_INPUT * self.K}

    def facts(self, choice, side):
        """The record fields of a choice."""
        return {f"lambda_{side}": choice}

    def fixed_encoder(self):
        """Whether the encoder does not depend on the data."""
        return not isinstance(self.rule_enc, str)

    # -- encoding and decoding ---------------------------------------------------------------
    def encode(self, X):
        if self.E is not None:
            return self.E @ X, self.facts(self.encoder_choice, "enc")
        choice = self.choose(self.encoder, X, "enc")
        return self.encoder.apply(X, choice), self.facts(choice, "enc")

    def decode_matrix(self, received):
        # lambda may depend on the results, so the cached decoder is the smoother, not a matrix
        return self.smoother(self.beta[received], self.alpha, "dec")

    def _decode_sorted(self, received, Y, alpha=None, inputs=None):
        smoother = self.decoder(received)
        choice = self.choose(smoother, Y, "dec")
        return smoother.apply(Y, choice, alpha), self.facts(choice, "dec")
