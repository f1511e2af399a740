"""GCC: general coded computing — encoder and decoder are kernel ridge regressions in an RKHS,
u(z) = sum_i c_i k(z, t_i), with c = (K + lam I)^-1 y."""

from functools import partial

from .kernels import KERNELS
from .smoothing import SmoothingCode


class GCC(SmoothingCode):
    null_dim = 0

    def __init__(self, N, K, kernel="matern52", lengthscale=1.0, lambda_enc="auto",
                 lambda_dec="auto", alpha=None):
        self.kernel_name = kernel
        super().__init__(N, K, partial(KERNELS[kernel], lengthscale=lengthscale),
                         lambda_enc, lambda_dec, alpha)
