"""GCC: general coded computing — encoder and decoder are kernel ridge regressions in an RKHS,
u(z) = sum_i c_i k(z, t_i), with c = (K + lam I)^-1 y.

The kernel's lengthscale is a number or "auto". What "auto" means on each side is ``AUTO``, chosen
by measurement (benchmarks/lengthscale.py, docs/science.md): a string is the criterion that picks
the lengthscale among the candidates of lengthscale.py per fit, jointly with lambda; a number is a
fixed multiple of the data points' spacing pi / K, at most ENC_MAX. The decoder chooses by
exact leave-one-out, walking over the candidates from the most frequent choice (lengthscale.py).
The encoder interpolates (lambda_enc -> 0) and cannot see f: its lengthscale is 4 spacings for
gcc and 2 for gcc-manifold. No criterion on the inputs alone did as well (leave-one-out and the
marginal likelihood of the inputs along alpha pick short ones and lose 3-27 dB on polynomials);
one spacing, the earlier rule, loses 1-8 dB on polynomials and softmax, and gains 0.3-2.3 dB on
ReLU networks; gcc-manifold's curve follows the data and does best with 2 (docs/science.md),
doubled where its curve would swing far from the data (gcc_manifold.REACH). An encoder rule that
evaluates f on pilot trials was tried and not kept: its choices were within its own noise.
"""

import numpy as np

from . import chords
from .chords import chord_problem
from .kernels import KERNELS, LENGTHSCALE_FREE
from .lengthscale import MULTIPLES, START, LengthscaleSmoother, spacing
from .smoothing import WINDOWED_ABOVE, SmoothingCode
from .windowed_lengthscale import WindowedLengthscaleSmoother


# The encoder's "auto" lengthscale exceeds neither the half-width of [-1, 1] nor one spacing, if
# that is longer: beyond it the fit is nearly polynomial over the whole interval, and at K = 3
# (the default job on 8 ranks) 4 spacings (4.2) cost 3.4 dB against 1.0; at K = 1 and 2 one
# spacing (pi, pi / 2) is what the earlier rule used; 1.0 lost 17 dB at K = 1 (4 ranks).
ENC_MAX = 1.0


def encoder_cap(K):
    """The longest "auto" encoder lengthscale at K inputs: ENC_MAX, or one spacing if longer."""
    return max(ENC_MAX, spacing(K))


class GCC(SmoothingCode):
    null_dim = 0
    AUTO = {"enc": 4.0, "dec": "loo", "search": "walk", "prior": 0.5, "centre": (),
            "space": "z"}

    def __init__(self, N, K, kernel="matern52", lengthscale="auto", lambda_enc="auto",
                 lambda_dec="auto", alpha=None, auto=None):
        self.kernel_name, self.lengthscale = kernel, lengthscale
        self.auto = dict(self.AUTO, **(auto or {}))  # ``auto``: other rules, for benchmarks
        self.candidates = {side: self._candidates(K, side) for side in ("enc", "dec")}
        self.lambda_setting = {"enc": lambda_enc, "dec": lambda_dec}
        self._E_candidates = None
        self.uses_inputs = (self.auto["space"] != "z" and lengthscale == "auto"
                            and kernel not in LENGTHSCALE_FREE)
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
        """The record fields of a choice; a decoder that may fit in the input space (chords.py)
        records its lengthscale there as lengthscale_dec_input, and lengthscale_dec as NaN."""
        facts = {f"lambda_{side}": choice.lam, f"lengthscale_{side}": choice.lengthscale}
        if side == "dec" and self.uses_inputs:
            input_space = space == "x"
            facts["lengthscale_dec_input"] = choice.lengthscale if input_space else np.nan
            if input_space:
                facts["lengthscale_dec"] = np.nan
        return facts

    def fixed_encoder(self):
        return super().fixed_encoder() and len(self.candidates["enc"]) == 1

    def encode(self, X):
        if "enc" in self.auto["centre"]:
            mean = X.mean(axis=0)
            U, info = self._encode(X - mean)
            return U + mean, info
        return self._encode(X)

    def _decode_sorted(self, received, Y, alpha=None, inputs=None):
        if "dec" not in self.auto["centre"]:
            return self._decode_space(received, Y, alpha, inputs)
        mean = Y.mean(axis=0)
        Y_hat, info = self._decode_space(received, Y - mean, alpha, inputs)
        return Y_hat + mean, info

    def _decode_space(self, received, Y, alpha=None, inputs=None):
        space = self.auto["space"]
        if space == "z" or inputs is None or len(received) > WINDOWED_ABOVE:
            zs = self.decoder(received)
            zc = self.choose(zs, Y, "dec")
            return zs.apply(Y, zc, alpha), self.facts(zc, "dec", "z")
        X, U = inputs
        t, z, k, ls = chord_problem(U[received], X, KERNELS[self.auto.get("xkernel", self.kernel_name)])
        xs = LengthscaleSmoother(t, z, k, ls)
        walks = {"x": self.walk(xs, Y, chords.START)}
        if space != "x":
            walks["z"] = self.walk(self.decoder(received), Y)
        for w in walks.values():
            w.begin()
        if space == "pick-first":  # only the better space walks on
            first = min(walks, key=lambda s: walks[s].best()[0])
            walks[first].run()
        else:
            for w in walks.values():
                w.run()
        scores = {s: w.best()[0] for s, w in walks.items()}
        found = {s: (w.best()[1], w.best()[2]) for s, w in walks.items()}
        smoothers = {"x": xs, "z": self.decoder(received)}
        if space == "wmix":
            w = scores["z"] / (scores["x"] + scores["z"])
            zc, xc = smoothers["z"].choice(found["z"]), xs.choice(found["x"])
            return (w * xs.apply(Y, xc) + (1 - w) * smoothers["z"].apply(Y, zc, alpha),
                    self.facts(xc if w >= 0.5 else zc, "dec", "x" if w >= 0.5 else "z"))
        best = min(scores, key=scores.get)
        choice = smoothers[best].choice(found[best])
        return (smoothers[best].apply(Y, choice, alpha if best == "z" else None),
                self.facts(choice, "dec", best))

    def walk(self, smoother, Y, start=START):
        """The decoder's Walk over ``smoother``'s lengthscales (``choose``'s rule), not begun."""
        return smoother.walk(Y, self.rule_dec, self.auto["dec"], self.auto["search"],
                             1 + self.auto["prior"] / max(len(Y), 1), start=start,
                             **self.dof_floor("dec", len(Y)))

    def _encode(self, X):
        if self.E is not None or isinstance(self.rule_enc, str):
            return super().encode(X)
        # the lengthscale depends on X but lambda does not: one encoder matrix per candidate
        if self._E_candidates is None:
            self._E_candidates = [self.encoder.weights(self.encoder.fixed(i, self.rule_enc))
                                  for i in range(len(self.candidates["enc"]))]
        choice = self.choose(self.encoder, X, "enc")
        return self._E_candidates[choice.index] @ X, self.facts(choice, "enc")
