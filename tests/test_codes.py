"""The coding schemes against closed forms, dense references and invariants."""

import numpy as np
import pytest
from scipy.interpolate import make_smoothing_spline

from gcc_mpi.codes import CLASSES, DecodeError, make_code
from gcc_mpi.codes.berrut import berrut_matrix
from gcc_mpi.codes.kernels import KERNELS, spline_semikernel
from gcc_mpi.codes.points import chebyshev_alpha, chebyshev_beta
from gcc_mpi.codes.kernel_smoother import KernelSmoother


def berrut_direct(nodes, y, z):
    """Berrut's formula evaluated term by term: reference for testing only."""
    order = np.argsort(nodes)
    t, v = nodes[order], y[order]
    if np.any(t == z):
        return v[np.flatnonzero(t == z)[0]]
    w = np.array([(-1) ** j / (z - t[j]) for j in range(len(t))])
    return w @ v / w.sum()


def test_points_are_chebyshev():
    assert np.allclose(chebyshev_alpha(3), [np.cos(np.pi / 6), 0, -np.cos(np.pi / 6)], atol=1e-15)
    assert np.allclose(chebyshev_beta(5), np.cos(np.arange(5) * np.pi / 4))
    assert chebyshev_beta(1).shape == (1,)


def test_berrut_matrix_matches_formula_on_any_subset():
    rng = np.random.default_rng(1)
    beta = chebyshev_beta(20)
    alpha = chebyshev_alpha(7)
    for _ in range(20):
        received = rng.permutation(20)[: rng.integers(2, 20)]  # unsorted, extremes may be missing
        y = rng.normal(size=len(received))
        W = berrut_matrix(beta[received], alpha)
        ref = [berrut_direct(beta[received], y, z) for z in alpha]
        assert np.allclose(W @ y, ref, rtol=1e-12, atol=1e-12)


def test_berrut_interpolates_at_nodes():
    t = chebyshev_beta(9)
    W = berrut_matrix(t, t[[2, 5]])
    assert np.array_equal(W, np.eye(9)[[2, 5]])


def test_bacc_decoder_uses_received_points_sorted_by_beta():
    N, K = 12, 4
    code = make_code("bacc", N, K)
    rng = np.random.default_rng(2)
    received = np.array([7, 0, 11, 3, 5, 9])
    Y = rng.normal(size=(len(received), 3))
    Yhat, _ = code.decode(received, Y)
    for m in range(3):
        ref = [berrut_direct(code.beta[received], Y[:, m], a) for a in code.alpha]
        assert np.allclose(Yhat[:, m], ref, rtol=1e-12)


def random_polynomial(rng, deg, d, m):
    """f(x) = sum of products of deg affine forms: a polynomial of total degree deg."""
    A = rng.normal(size=(m, 3, deg, d))
    b = rng.normal(size=(m, 3, deg))
    return lambda X: np.prod(np.einsum("mrld,nd->nmrl", A, X) + b, axis=3).sum(axis=2)


@pytest.mark.parametrize("deg", [2, 3])
@pytest.mark.parametrize("K", [3, 5])
def test_lcc_recovers_polynomials_exactly_at_threshold(deg, K):
    rng = np.random.default_rng(deg * 10 + K)
    threshold = (K - 1) * deg + 1
    N = threshold + 4
    f = random_polynomial(rng, deg, 4, 2)
    code = make_code("lcc", N, K, degree=deg)
    X = rng.normal(size=(K, 4))
    Xt, _ = code.encode(X)
    received = rng.permutation(N)[:threshold]
    Yhat, _ = code.decode(received, f(Xt[received]))
    err = np.linalg.norm(Yhat - f(X)) / np.linalg.norm(f(X))
    assert err < 1e-8


def test_lcc_refuses_to_decode_below_threshold():
    code = make_code("lcc", 12, 4, degree=2)  # threshold 7
    with pytest.raises(DecodeError, match="lcc needs 7 results"):
        code.decode(np.arange(6), np.zeros((6, 1)))


def test_uncoded_and_replication_need_every_input():
    unc = make_code("uncoded", 6, 4)
    assert list(unc.active) == [0, 1, 2, 3]
    with pytest.raises(DecodeError, match="all 4"):
        unc.decode(np.array([0, 1, 3]), np.zeros((3, 1)))
    rep = make_code("replication", 10, 4)  # owners 0 1 2 3 0 1 2 3 0 1
    X = np.arange(8.0).reshape(4, 2)
    Xt, _ = rep.encode(X)
    received = np.array([9, 4, 2, 7])  # inputs 1, 0, 2, 3
    Yhat, _ = rep.decode(received, Xt[received])
    assert np.array_equal(Yhat, X)
    with pytest.raises(DecodeError, match="no result for 1 of 4"):
        rep.decode(np.array([0, 1, 2]), Xt[[0, 1, 2]])


@pytest.mark.parametrize("lam", [1e-6, 1e-3, 1.0])
def test_spline_smoother_equals_scipy_smoothing_spline(lam):
    rng = np.random.default_rng(3)
    t = np.sort(chebyshev_beta(30)[rng.permutation(30)[:22]])
    y = np.sin(3 * t) + 0.1 * rng.normal(size=len(t))
    z = chebyshev_alpha(9)
    ours = KernelSmoother(t, z, spline_semikernel, null_dim=2).apply(y[:, None], lam)[:, 0]
    ref = make_smoothing_spline(t, y, lam=lam)(z)
    assert np.allclose(ours, ref, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("kernel", ["spline", *KERNELS])
def test_smoother_interpolates_as_lambda_vanishes(kernel):
    t = chebyshev_beta(15)
    y = np.exp(t)[:, None]
    k, q = (spline_semikernel, 2) if kernel == "spline" else (KERNELS[kernel], 0)
    S = KernelSmoother(t, t, k, null_dim=q)
    tol = 1e-4 if kernel == "gaussian" else 1e-8  # its spectrum hits the lambda floor
    assert np.allclose(S.apply(y, 0.0), y, atol=tol)


def dense_hat(t, kernel, q, lam):
    """Hat matrix of the penalised fit by solving the saddle-point system: testing reference."""
    n = len(t)
    K = kernel(t[:, None], t[None, :])
    P = np.vander(t, q, increasing=True)
    A = np.block([[K + lam * np.eye(n), P], [P.T, np.zeros((q, q))]])
    sol = np.linalg.solve(A, np.vstack([np.eye(n), np.zeros((q, n))]))
    return K @ sol[:n] + P @ sol[n:]


def test_gcv_and_loo_match_dense_definitions():
    rng = np.random.default_rng(4)
    t = np.sort(rng.uniform(-1, 1, 25))
    Y = np.stack([np.sin(4 * t), np.cos(2 * t)], 1) + 0.05 * rng.normal(size=(25, 2))
    S = KernelSmoother(t, t, spline_semikernel, null_dim=2)
    lams = S.candidates()[20:45]
    gcv, loo = [], []
    for lam in lams:
        H = dense_hat(t, spline_semikernel, 2, lam)
        R = Y - H @ Y
        gcv.append(25 * np.sum(R**2) / np.trace(np.eye(25) - H) ** 2)
        loo.append(np.sum((R / (1 - np.diag(H))[:, None]) ** 2))
    S_sub = KernelSmoother(t, t, spline_semikernel, null_dim=2)
    S_sub.candidates = lambda min_dof=0: lams
    assert S_sub.gcv(Y) == lams[int(np.argmin(gcv))]
    assert S_sub.loo(Y) == lams[int(np.argmin(loo))]
    assert S.matrix(lams[15]) == pytest.approx(dense_hat(t, spline_semikernel, 2, lams[15]),
                                               abs=1e-9)


@pytest.mark.parametrize("name", ["bacc", "letcc", "gcc"])
def test_identity_without_stragglers_returns_inputs(name):
    N, K = 40, 8
    code = make_code(name, N, K)
    alpha = code.alpha
    X = np.stack([np.sin(2 * alpha), alpha**2, np.exp(alpha)], 1)  # inputs along a smooth curve
    Xt, _ = code.encode(X)
    Yhat, _ = code.decode(np.arange(N), Xt)
    assert np.linalg.norm(Yhat - X) / np.linalg.norm(X) < (2e-2 if name == "bacc" else 1e-4)


@pytest.mark.parametrize("name", ["bacc", "letcc", "gcc"])
def test_decoder_handles_any_subset_including_missing_extremes(name):
    N, K = 30, 6
    code = make_code(name, N, K)
    rng = np.random.default_rng(5)
    X = rng.normal(size=(K, 4))
    Xt, _ = code.encode(X)
    for received in [np.arange(3, N - 3), np.arange(0, N, 3), rng.permutation(N)[:10],
                     np.array([4])]:
        Yhat, _ = code.decode(received, np.tanh(Xt[received]))
        assert Yhat.shape == (K, 4) and np.all(np.isfinite(Yhat))
    Yhat, _ = code.decode(np.arange(2, N - 2), np.tanh(Xt[2:N - 2]))
    # measured: bacc 0.0316, letcc 1.42e-3, gcc 7.21e-4 — within a factor of 2 of each
    measured = {"bacc": 0.0316, "letcc": 1.42e-3, "gcc": 7.21e-4}[name]
    error = np.linalg.norm(Yhat - np.tanh(X)) / np.linalg.norm(np.tanh(X))
    assert measured / 2 < error < 2 * measured, error


@pytest.mark.parametrize("name", ["bacc", "letcc", "gcc"])
def test_stable_at_a_thousand_workers(name):
    N, K = 1000, 20
    code = make_code(name, N, K)
    alpha = code.alpha
    X = np.stack([np.sin(3 * alpha), np.cos(alpha)], 1)
    Xt, _ = code.encode(X)
    received = np.random.default_rng(6).permutation(N)[:900]
    Yhat, _ = code.decode(received, np.sin(Xt[received]))
    assert np.linalg.norm(Yhat - np.sin(X)) / np.linalg.norm(np.sin(X)) < 1e-3


def test_decode_is_independent_of_the_order_results_arrive_in():
    code = make_code("letcc", 20, 5)
    rng = np.random.default_rng(7)
    received = rng.permutation(20)[:14]
    Y = rng.normal(size=(14, 3))
    a, _ = code.decode(received, Y)
    perm = rng.permutation(14)
    b, _ = code.decode(received[perm], Y[perm])
    assert np.allclose(a, b, rtol=1e-12)


def test_every_scheme_is_registered():
    assert set(CLASSES) == {"uncoded", "replication", "lcc", "bacc", "letcc", "gcc", "gcc-manifold"}


def test_lambda_choice_breaks_ties_toward_less_smoothing():
    from gcc_mpi.codes.kernel_smoother import smallest_near_min

    lams = np.array([1e-12, 1e-10, 1e-8, 1e-6])
    assert smallest_near_min(lams, np.array([2.0, 1.0, 1.0 + 1e-12, 3.0])) == 1e-10
    assert smallest_near_min(lams, np.array([5.0, 4.0, 3.0, 1.0])) == 1e-6


def test_a_code_built_without_options_is_the_code_a_job_gets():
    """One default for every option: each built-in class's keyword defaults are the job file's
    defaults of its [code.<name>] table (make_code in a test or benchmark builds what a job
    that sets nothing runs)."""
    import inspect

    from gcc_mpi.job.schema import CodeSection

    section = CodeSection()
    for name, cls in CLASSES.items():
        options = section.options(name)
        defaults = {k: p.default for k, p in inspect.signature(cls).parameters.items()
                    if p.default is not inspect.Parameter.empty}
        for key, value in options.items():
            if key == "pool":  # the job's pool size becomes the class's pool_rows (trial.py)
                assert value == 0 and defaults["pool_rows"] is None
                continue
            if name == "lcc" and key == "degree":  # resolved from the target (config)
                continue
            if key == "robust":  # the base class's, set by make_code (LinearCode.set_robust)
                assert value == "auto"
                continue
            assert defaults[key] == value, (name, key, defaults[key], value)
