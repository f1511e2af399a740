"""Automatic lambda selection speed: ours against scipy's GCV smoothing spline.

    python benchmarks/gcv_speed.py

Fits N = 100 points with m outputs and evaluates at K = 10 points, choosing lambda by GCV and by
exact leave-one-out (the default "auto"), including the eigendecomposition. scipy's
make_smoothing_spline(lam=None) runs its GCV once per output column.
"""


from common import per_call  # also sets single-threaded BLAS, as the application does
import numpy as np
from scipy.interpolate import make_smoothing_spline

from gcc_mpi.codes.kernels import matern52, spline_semikernel
from gcc_mpi.codes.points import chebyshev_alpha, chebyshev_beta
from gcc_mpi.codes.kernel_smoother import KernelSmoother


def main():
    rng = np.random.default_rng(0)
    N, K = 100, 10
    t = np.sort(chebyshev_beta(110)[rng.permutation(110)[:N]])
    z = chebyshev_alpha(K)
    print(f"N = {N} points, evaluated at K = {K}; milliseconds per fit incl. lambda choice")
    for m in [10, 64]:
        Y = np.sin(3 * t)[:, None] + 0.01 * rng.normal(size=(N, m))
        scipy_s = per_call(lambda: [make_smoothing_spline(t, Y[:, j])(z) for j in range(m)], 1.0)
        print(f"\nm = {m} outputs: scipy make_smoothing_spline(lam=None): {1e3 * scipy_s:8.2f} ms")
        for name, kernel, q in [("letcc spline", spline_semikernel, 2),
                                ("gcc matern52", matern52, 0)]:
            for rule in ["gcv", "loo"]:
                def fit():
                    S = KernelSmoother(t, z, kernel, q)
                    return S.apply(Y, S.select(Y, rule))
                s = per_call(fit)
                print(f"  {name:13s} {rule}: {1e3 * s:6.2f} ms   "
                      f"({scipy_s / s:5.0f}x faster than scipy)")


if __name__ == "__main__":
    main()
