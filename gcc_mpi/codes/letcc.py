"""LeTCC: learning-theoretic coded computing (Moradi, Tahmasebi & Maddah-Ali, 2024).

Encoder and decoder are natural cubic smoothing splines: minimise sum |y_i - u(t_i)|^2 +
lam * integral u''^2, lam as in scipy.interpolate.make_smoothing_spline.

Robust decoding (``code.letcc.robust``) has a mode of its own beside the generic screens
(``true``, and ``"spline-screen"``: results far from the adversarial spline dropped and the rest
decoded plainly, ``robust.spline_screen``, which every code with points has): ``"spline"``, the
adversarial-setting decoder of arXiv 2502.08058 as published (every result fitted with lambda
chosen for A adversaries, ``robust.adversarial_lambda``; it flags nothing).
"""

from .kernels import spline_semikernel
from .smoothing_code import SmoothingCode


class LeTCC(SmoothingCode):
    null_dim = 2  # constants and lines are not penalised by integral u''^2
    # beside the neighbours' screen (true): the adversarial-setting decoder of arXiv 2502.08058
    # as published, and results far from it dropped (docs/science.md compares the three)
    robust_methods = ("screen", "spline", "spline-screen")

    def __init__(self, N, K, lambda_enc="auto", lambda_dec="auto", alpha=None):
        super().__init__(N, K, spline_semikernel, lambda_enc, lambda_dec, alpha)

    def trusted(self, received, Y):
        # "spline" outweighs the liars instead of dropping them; "spline-screen" is the generic
        # screen of LinearCode.trusted
        from .robust import finite_rows

        if self.robust_method == "spline":
            return finite_rows(Y), {}
        return super().trusted(received, Y)

    def choose(self, smoother, Y, side):
        # the published decoder: its lambda is the adversaries', not the results' best fit
        if side == "dec" and self.robust and self.robust_method == "spline":
            from .robust import adversarial_lambda

            return adversarial_lambda(len(Y), self.N, self.errors)
        return super().choose(smoother, Y, side)
