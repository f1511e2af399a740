"""Berrut's rational interpolant as a linear map, and the BACC scheme built from it."""

import numpy as np

from .base import DecodeError, LinearCode
from .points import chebyshev_alpha, chebyshev_beta


def berrut_matrix(nodes, z):
    """Matrix W (len(z) x len(nodes)) with W @ y = Berrut's interpolant through (nodes, y) at z.

    r(z) = sum_j s_j y_j / (z - t_j) / sum_j s_j / (z - t_j), where s_j = (-1)^j alternates with
    the position of t_j among the nodes *sorted* by value (so any subset of points, given in any
    order, is handled as in Berrut's formula). A z equal to a node returns that node's value.
    """
    nodes = np.asarray(nodes, dtype=float)
    z = np.asarray(z, dtype=float)
    signs = np.empty(len(nodes))
    signs[np.argsort(nodes, kind="stable")] = (-1.0) ** np.arange(len(nodes))
    diff = z[:, None] - nodes[None, :]
    hit = diff == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        C = signs / diff
        W = C / C.sum(axis=1, keepdims=True)
    rows = hit.any(axis=1)
    W[rows] = hit[rows].astype(float)
    return W


class BACC(LinearCode):
    """Berrut approximate coded computing (Jahani-Nezhad & Maddah-Ali): Berrut's rational
    interpolant for the encoder (through (alpha_k, x_k)) and the decoder (through the received
    (beta_n, y_n)). No parameters; any non-empty received set decodes."""

    exact = False
    # "screen" and "spline-screen": the generic screens every code with points has
    # (LinearCode.trusted); "locator": ApproxIFER's rational Berlekamp–Welch
    # (codes.robust.rational_locator), which caught 91-92% of sign-flip and noise liars on
    # digits-mlp where the screen caught 99.5-100% (docs/science.md, "Adversaries and robust
    # decoding")
    robust_methods = ("screen", "locator", "spline-screen")

    def __init__(self, N, K):
        super().__init__(N, K, chebyshev_alpha(K), chebyshev_beta(N))
        self.E = berrut_matrix(self.alpha, self.beta)

    def trusted(self, received, Y):
        """The screen's (LinearCode.trusted) or the locator's choice, with its gap (NaN where
        the screen chose). The locator's system has K + 2A + 2 unknowns: with fewer than
        K + 2A + 1 results its null space is more than one line, and the screen decides."""
        locate = self.robust_choice == "locator"
        if not locate or len(received) < self.K + 2 * self.errors + 1:
            return super().trusted(received, Y)[0], {"locator_gap": np.nan} if locate else {}
        from .robust import rational_locator

        keep, gap = rational_locator(self.beta[received], self.alpha, Y, self.errors)
        if not keep.any():
            raise DecodeError("robust decoding trusted none of the results")
        return keep, {"locator_gap": gap}

    def decode_matrix(self, received):
        return berrut_matrix(self.beta[received], self.alpha), {}
