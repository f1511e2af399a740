"""LeTCC: learning-theoretic coded computing (Moradi, Tahmasebi & Maddah-Ali, 2024).

Encoder and decoder are natural cubic smoothing splines: minimise sum |y_i - u(t_i)|^2 +
lam * integral u''^2, lam as in scipy.interpolate.make_smoothing_spline.
"""

from .kernels import spline_semikernel
from .smoothing_code import SmoothingCode


class LeTCC(SmoothingCode):
    null_dim = 2  # constants and lines are not penalised by integral u''^2

    def __init__(self, N, K, lambda_enc="auto", lambda_dec="auto", alpha=None):
        super().__init__(N, K, spline_semikernel, lambda_enc, lambda_dec, alpha)
