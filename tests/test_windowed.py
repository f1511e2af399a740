"""The windowed smoother equals the global one where the hat matrix is local, and falls back
to it where it is not."""

from functools import partial

import numpy as np
import pytest

from gcc_mpi.codes import make_code
from gcc_mpi.codes.kernels import matern52, spline_semikernel
from gcc_mpi.codes.points import chebyshev_alpha, chebyshev_beta
from gcc_mpi.codes.kernel_smoother import KernelSmoother
from gcc_mpi.codes.smoothing_code import WINDOWED_ABOVE
from gcc_mpi.codes.windowed import WindowedSmoother

KERNELS = {"spline": (spline_semikernel, 2),
           "matern52 l=0.05": (partial(matern52, lengthscale=0.05), 0)}


def received_points(n=600, N=700, seed=0):
    rng = np.random.default_rng(seed)
    keep = rng.permutation(N)[:n]  # arbitrary order, as results arrive
    return chebyshev_beta(N)[keep]


def smooth_data(t, m=3):
    return np.stack([np.sin(7 * t + j) + t**2 for j in range(m)], axis=1)


@pytest.mark.parametrize("name", list(KERNELS))
def test_loo_choice_and_fit_equal_the_global_smoother(name):
    kernel, q = KERNELS[name]
    t, z = received_points(), chebyshev_alpha(40)
    Y = smooth_data(t)
    exact, windowed = KernelSmoother(t, z, kernel, q), WindowedSmoother(t, z, kernel, q)
    lam = exact.loo(Y)
    # its lambda grid is anchored by an estimate
    assert windowed.loo(Y) == pytest.approx(lam, rel=0.05)
    U, V = exact.apply(Y, lam), windowed.apply(Y, lam)
    assert windowed._global is None and windowed.last_fit.startswith("windows of")
    assert np.max(np.abs(U - V)) < 1e-6 * np.max(np.abs(U))
    z2 = np.linspace(-0.99, 0.99, 7)  # other evaluation points (a trial's own alpha)
    assert np.allclose(exact.apply(Y, lam, z2), windowed.apply(Y, lam, z2), atol=1e-6)


def test_gcv_choice_equals_the_global_smoother():
    t, z = received_points(), chebyshev_alpha(40)
    Y = smooth_data(t)
    exact, windowed = (KernelSmoother(t, z, spline_semikernel, 2),
                       WindowedSmoother(t, z, spline_semikernel, 2))
    assert windowed.gcv(Y) == pytest.approx(exact.gcv(Y), rel=0.05)


def test_a_lambda_that_is_not_local_uses_the_global_smoother():
    t, z = received_points(), chebyshev_alpha(40)
    Y = smooth_data(t)
    exact, windowed = (KernelSmoother(t, z, spline_semikernel, 2),
                       WindowedSmoother(t, z, spline_semikernel, 2))
    lam = 1e-2 * exact.scale  # heavy smoothing: every point's fit depends on far points
    assert np.allclose(windowed.apply(Y, lam), exact.apply(Y, lam), rtol=1e-9, atol=1e-12)
    assert windowed.last_fit == "global"


def test_windows_pad_crowded_points_until_local():
    t = chebyshev_beta(3000)  # near +-1 the points crowd and a fit reaches over more of them
    windowed = WindowedSmoother(t, chebyshev_alpha(40), spline_semikernel, 2)
    pads = [g.pad for g in windowed.groups]
    assert len(pads) > 1 and pads[0] == windowed.pad
    assert windowed.locality(windowed.candidates()[:1])[0] <= 1e-3
    ends = np.concatenate([g.first for g in windowed.groups[1:]]) // windowed.core
    assert np.all((ends < 10) | (ends > len(t) // windowed.core - 10))  # only at the ends


def test_noisy_data_whose_best_lambda_is_not_local_falls_back():
    t, z = received_points(), chebyshev_alpha(40)
    Y = 0.0 * smooth_data(t) + np.random.default_rng(1).normal(size=(len(t), 3))  # pure noise
    exact, windowed = (KernelSmoother(t, z, spline_semikernel, 2),
                       WindowedSmoother(t, z, spline_semikernel, 2))
    lam = windowed.loo(Y)
    assert lam == exact.loo(Y)
    assert np.allclose(windowed.apply(Y, lam), exact.apply(Y, lam))
    assert windowed.last_fit == "global"


def test_codes_decode_many_results_in_windows_and_agree_with_the_global_fit():
    N, K = 2 * WINDOWED_ABOVE, 32
    code = make_code("letcc", N, K)
    X = np.stack([np.sin(3 * chebyshev_alpha(K)), np.cos(2 * chebyshev_alpha(K))], axis=1)
    coded, _ = code.encode(X)
    received = np.random.default_rng(2).permutation(N)[: N - 50]
    Y = np.tanh(coded[received])
    Y_hat, info = code.decode(received, Y)
    smoother = code.decoder(np.sort(received))
    assert isinstance(smoother, WindowedSmoother)
    order = np.argsort(received)
    exact = KernelSmoother(code.beta[received[order]], code.alpha, code.kernel, 2)
    assert np.allclose(Y_hat, exact.apply(Y[order], info["lambda_dec"]), atol=1e-7)
    assert np.allclose(Y_hat, np.tanh(X), atol=1e-4)
