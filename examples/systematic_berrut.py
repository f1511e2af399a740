"""Systematic Berrut coded computing: a scheme of your own, as a gcc_mpi plug-in.

BACC (the built-in "bacc") encodes the K inputs with Berrut's rational interpolant through
(alpha_k, x_k), alpha at Chebyshev points, and gives worker n its value at beta_n =
cos(n pi / (N - 1)); the decoder is Berrut's interpolant through the results received,
evaluated at the alphas. Here the alphas are K of the betas, spread evenly over them: those K
workers get the inputs themselves (the code is systematic) and return f(x_k) exactly, and the
decoder, which passes through every result it receives, uses each of them as it is. Only the
inputs whose own worker straggles are interpolated from their neighbours.

A job lists it as "systematic_berrut.py:SystematicBerrut" (this file beside the job file);
systematic = false in its [code."systematic_berrut.py:SystematicBerrut"] table gives BACC's
points back, the same code as "bacc". docs/own-scheme.md walks through it.
"""

import numpy as np

from gcc_mpi import LinearCode


def berrut(nodes, z):
    """W (len(z) x len(nodes)): W @ y is Berrut's interpolant through (nodes, y) at z.

    r(z) = sum_j s_j y_j / (z - t_j) / sum_j s_j / (z - t_j), with s_j = (-1)^j alternating
    along the nodes sorted by value; at a node, its own value.
    """
    signs = np.empty(len(nodes))
    signs[np.argsort(nodes, kind="stable")] = (-1.0) ** np.arange(len(nodes))
    diff = z[:, None] - nodes[None, :]
    hit = diff == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        C = signs / diff
        W = C / C.sum(axis=1, keepdims=True)
    at_node = hit.any(axis=1)
    W[at_node] = hit[at_node]
    return W


class SystematicBerrut(LinearCode):
    """Berrut coded computing whose K systematic workers compute f on the inputs themselves."""

    exact = False  # approximate: the more results arrive, the better it decodes

    def __init__(self, N, K, systematic=True):
        if not isinstance(systematic, bool):
            raise ValueError(f"systematic must be true or false, got {systematic!r}")
        beta = np.cos(np.arange(N) * np.pi / max(N - 1, 1))
        if systematic:  # K of the workers' points, evenly spread: those workers get x_k
            alpha = beta[np.round(np.linspace(0, N - 1, K)).astype(int)]
        else:           # BACC's points
            alpha = np.cos((2 * np.arange(K) + 1) * np.pi / (2 * K))
        super().__init__(N, K, alpha, beta)
        self.E = berrut(alpha, beta)  # encode: X_coded = E[active] @ X (LinearCode.encode)

    def decode_matrix(self, received):
        """Y_hat = D @ Y[received], for ``received`` sorted; LinearCode.decode caches D."""
        return berrut(self.beta[received], self.alpha), {}
