"""GCC: general coded computing — encoder and decoder are kernel ridge regressions in an RKHS,
u(z) = sum_i c_i k(z, t_i), with c = (K + lam I)^-1 y.

The kernel's lengthscale is a number or "auto". What "auto" means on each side is ``AUTO``, chosen
by measurement (benchmarks/lengthscale.py, docs/science.md): a string is the criterion that picks
the lengthscale among the candidates of lengthscale.py per fit, jointly with lambda; a number is a
fixed multiple of the data points' spacing pi / K, at most ENC_MAX. The decoder chooses by
exact leave-one-out, walking over the candidates from the most frequent choice (lengthscale.py).
The encoder interpolates (lambda_enc -> 0) and cannot see f: its lengthscale is 4 spacings for
gcc and 2 for gcc-manifold, whose curve follows the data, doubled where its curve would swing
far from the data (gcc_manifold.REACH). These lose the least over every workload measured; no
criterion on the inputs alone does as well (docs/science.md, "Lengthscale", holds the
measurements and the rules that were compared).

The decoder ("decoder" = "auto", the default) also fits in the input space (chords.py): a kernel
of the distances between the received coded inputs and the batch, which the master knows, instead
of the distances along z. Below DENSE results per input that is the decoder (it won on every
workload measured, by up to 34 dB: docs/science.md, "The decoder in the input space"); from DENSE
on, where the results lie close along the curve and z can win (polynomials at N = 160: 12 dB),
both spaces begin their walks and the better by leave-one-out walks on and answers. "beta" is the
papers' decoder, the regression along z (the curve parameter beta) alone; "input" the input
space at every redundancy. The input space needs the "auto" lengthscale (it has lengthscales of
its own): a fixed lengthscale, a lengthscale-free kernel or a batch of one input decodes along z
whatever "decoder" says.
"""

import numpy as np

from . import chords
from .chords import chord_smoother
from .kernels import KERNELS, LENGTHSCALE_FREE
from .lengthscale import MULTIPLES, START, LengthscaleSmoother, spacing
from .smoothing_code import WINDOWED_ABOVE, SmoothingCode
from .windowed_lengthscale import WindowedLengthscaleSmoother


# The encoder's "auto" lengthscale exceeds neither the half-width of [-1, 1] nor one spacing, if
# that is longer: beyond it the fit is nearly polynomial over the whole interval (at K = 3, the
# default job on 8 ranks, 4 spacings (4.2) cost 3.4 dB against 1.0); at K = 1 and 2 one spacing
# (pi, pi / 2) stays, as 1.0 loses 17 dB at K = 1 (docs/science.md).
ENC_MAX = 1.0
# Results per input from which the "auto" decoder compares the input space with z (see above).
DENSE = 4
# The "decoder" option: where the decoder fits (auto["space"]): "x" the input space, "z" beta
DECODER_SPACES = {"auto": "auto", "input": "x", "beta": "z"}


def encoder_cap(K):
    """The longest "auto" encoder lengthscale at K inputs: ENC_MAX, or one spacing if longer."""
    return max(ENC_MAX, spacing(K))


class GCC(SmoothingCode):
    null_dim = 0
    # the generic screens along beta (LinearCode.trusted), by name: the neighbours' and the
    # adversarial spline's, whatever the kernel and space this code then decodes in
    robust_methods = ("screen", "spline-screen")
    # the decoder's "space" (where it fits) comes from the "decoder" option: DECODER_SPACES
    AUTO = {"enc": 4.0, "dec": "loo", "search": "walk", "prior": 0.5}

    def __init__(self, N, K, kernel="matern52", lengthscale="auto", lambda_enc="auto",
                 lambda_dec="auto", alpha=None, auto=None, decoder="auto"):
        self.kernel_name, self.lengthscale = kernel, lengthscale
        # ``auto``: other rules, for benchmarks
        self.auto = {**self.AUTO, "space": DECODER_SPACES[decoder], **(auto or {})}
        self.candidates = {side: self._candidates(K, side) for side in ("enc", "dec")}
        self.lambda_setting = {"enc": lambda_enc, "dec": lambda_dec}
        self._E_candidates = None
        # the input-space decoder needs the trial's inputs (trial.INPUTS); it has lengthscales
        # of its own, so it is part of "auto" only; with one input the batch has no distances
        # to scale them by (the default job at 4 and 5 ranks, K = 1: it lost 15-22 dB to beta)
        self.uses_inputs = (self.auto["space"] != "z" and lengthscale == "auto"
                            and kernel not in LENGTHSCALE_FREE and K >= 2)
        super().__init__(N, K, KERNELS[kernel], lambda_enc, lambda_dec, alpha)

    def _candidates(self, K, side):
        if self.kernel_name in LENGTHSCALE_FREE:
            return np.array([np.nan])  # recorded as NaN: the kernel has none
        if self.lengthscale != "auto":
            return np.array([float(self.lengthscale)])
        rule = self.auto[side]
        if not isinstance(rule, str):
            return np.array([min(rule * spacing(K), encoder_cap(K))])
        return spacing(K) * np.asarray(self.auto.get("multiples", MULTIPLES), float)

    # -- the hooks of SmoothingCode ----------------------------------------------------------
    def smoother(self, t, z, side):
        if side == "dec" and len(t) > WINDOWED_ABOVE:
            return WindowedLengthscaleSmoother(t, z, self.kernel, self.candidates[side])
        return LengthscaleSmoother(t, z, self.kernel, self.candidates[side])

    def choose(self, smoother, Y, side):
        """Lambda and lengthscale jointly by the side's criterion when lambda is "auto"; with
        lambda by a named rule ("gcv", "loo") that rule scores both, and a fixed lambda leaves
        the lengthscale to the criterion. A single candidate leaves lambda to its rule."""
        rule = self.rule_enc if side == "enc" else self.rule_dec
        criterion = None
        if len(self.candidates[side]) > 1 and (self.lambda_setting[side] == "auto"
                                               or not isinstance(rule, str)):
            criterion = self.auto[side]
        floor = self.dof_floor(side, len(Y))
        if criterion is None:
            return smoother.select(Y, rule, **floor)
        return smoother.select(Y, rule, criterion, search_rule=self.auto["search"],
                                prior=1 + self.auto["prior"] / max(len(Y), 1), **floor)

    def facts(self, choice, side, space="z"):
        """The record fields of a choice; the decoder in the input space (chords.py) records
        its lengthscale, a distance in the inputs' units, as lengthscale_dec_input instead."""
        if space == "x":
            return {"lambda_dec": choice.lam, "lengthscale_dec": np.nan,
                    "lengthscale_dec_input": choice.lengthscale}
        return {f"lambda_{side}": choice.lam, f"lengthscale_{side}": choice.lengthscale}

    def fixed_encoder(self):
        return super().fixed_encoder() and len(self.candidates["enc"]) == 1

    def _decode_sorted(self, received, Y, alpha=None, inputs=None):
        space = self.auto["space"]
        if not self.uses_inputs or inputs is None or len(received) > WINDOWED_ABOVE:
            space = "z"
        elif space == "auto":
            space = "x" if len(received) < DENSE * self.K else "both"
        smoothers, walks = {}, {}
        if space != "z":
            smoothers["x"] = self.input_smoother(received, inputs)
            walks["x"] = self.walk(smoothers["x"], Y, chords.START).begin()
        if space != "x":
            smoothers["z"] = self.decoder(received)
            if space == "z":
                choice = self.choose(smoothers["z"], Y, "dec")
                return smoothers["z"].apply(Y, choice, alpha), self.facts(choice, "dec")
            walks["z"] = self.walk(smoothers["z"], Y).begin()
        best = min(walks, key=lambda s: walks[s].best()[0])  # only the better one walks on
        choice = smoothers[best].choice(walks[best].run())
        return (smoothers[best].apply(Y, choice, alpha if best == "z" else None),
                self.facts(choice, "dec", best))

    def input_smoother(self, received, inputs, kernel=None):
        """The smoother in the input space from the received coded inputs to the batch (with
        ``kernel``, or auto["input_kernel"] by name if set, or the code's kernel)."""
        X, U = inputs
        named = self.auto.get("input_kernel")
        kernel = kernel or (KERNELS[named] if named else self.kernel)
        return chord_smoother(U[received], X, kernel)

    def walk(self, smoother, Y, start=START):
        """The decoder's Walk over ``smoother``'s lengthscales by ``choose``'s rule, not begun."""
        return smoother.walk(Y, self.rule_dec, self.auto["dec"], self.auto["search"],
                             1 + self.auto["prior"] / max(len(Y), 1), start=start,
                             **self.dof_floor("dec", len(Y)))

    def encode(self, X):
        if self.E is not None or isinstance(self.rule_enc, str):
            return super().encode(X)
        # the lengthscale depends on X but lambda does not: one encoder matrix per candidate
        if self._E_candidates is None:
            self._E_candidates = [self.encoder.weights(self.encoder.fixed(i, self.rule_enc))
                                  for i in range(len(self.candidates["enc"]))]
        choice = self.choose(self.encoder, X, "enc")
        return self._E_candidates[choice.index] @ X, self.facts(choice, "enc")
