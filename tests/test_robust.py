"""Robust decoding (codes/robust.py, ``code.<scheme>.robust``): lcc corrects A wrong results
exactly with 2A more and not beyond, replication's median outvotes a liar, and the
leave-one-out screen names a planted sign-flip worker of bacc, letcc and gcc."""

from pathlib import Path

import numpy as np
import pytest

from gcc_mpi.codes import DecodeError, make_code
from gcc_mpi.core.point import prepare, scheme_options
from gcc_mpi.job.parse import load_job, parse_job

ROOT = Path(__file__).resolve().parent.parent


def poly(X):
    return np.stack([(X**2).sum(1), X[:, 0] * X[:, 1], X.sum(1)], axis=1)


def lcc_trial(N, K, deg, A, liars, seed):
    rng = np.random.default_rng(seed)
    code = make_code("lcc", N, K, degree=deg)
    code.set_robust(True, A)
    X = rng.standard_normal((K, 5))
    Y = poly(code.encode(X)[0])
    lying = rng.choice(N, liars, replace=False)
    Y[lying] = -10 * Y[lying] + rng.standard_normal(Y[lying].shape)
    Y_hat, info = code.decode(np.arange(N), Y)
    return np.sum((Y_hat - poly(X)) ** 2) / np.sum(poly(X) ** 2), info, set(lying.tolist())


@pytest.mark.parametrize("K, A", [(3, 1), (4, 2), (5, 3)])
def test_lcc_corrects_a_errors_exactly_at_its_threshold_and_not_beyond(K, A):
    D = (K - 1) * 2
    for N in (D + 1 + 2 * A, D + 1 + 2 * A + 4):
        for seed in range(5):
            nmse, info, lying = lcc_trial(N, K, 2, A, A, seed)
            assert nmse < 1e-20, (N, seed, nmse)  # measured 1e-31 .. 1e-29
            assert set(np.flatnonzero(info["flagged"])) == lying
    N = D + 1 + 2 * A
    assert make_code("lcc", N, K, degree=2).decodable(np.ones(N, bool))
    code = make_code("lcc", N - 1, K, degree=2)
    code.set_robust(True, A)
    assert not code.decodable(np.ones(N - 1, bool))  # it waits for its 2A more results
    for seed in range(5):  # one liar more than it corrects: refused, never a quiet answer
        with pytest.raises(DecodeError, match="more than A="):
            lcc_trial(N, K, 2, A, A + 1, seed)


def test_replication_takes_the_median_of_three_copies():
    N, K = 9, 3
    code = make_code("replication", N, K)
    code.set_robust(True, 1)
    X = np.random.default_rng(1).standard_normal((K, 4))
    Y = poly(code.encode(X)[0])
    Y[4] = -10 * Y[4]
    assert not code.decodable(np.arange(N) < 6)  # two copies each: no majority yet
    Y_hat, info = code.decode(np.arange(N), Y)
    assert np.allclose(Y_hat, poly(X), rtol=1e-12, atol=0)
    assert np.flatnonzero(info["flagged"]).tolist() == [4]


@pytest.fixture(scope="module")
def digits():
    """The shipped digits MLP and its data (jobs/digits-mlp.toml's f)."""
    job = load_job(ROOT / "jobs" / "digits-mlp.toml")
    return prepare(job, job.points[:1])[0][1]


@pytest.mark.parametrize("scheme", ["bacc", "letcc", "gcc"])
def test_the_screen_finds_a_planted_sign_flip_worker(scheme, digits):
    N, K = 40, 10
    rng = np.random.default_rng(3)
    plain, robust = make_code(scheme, N, K), make_code(scheme, N, K)
    robust.set_robust(True, 1)
    for liar in (0, 7, 23, 39):
        X = digits.dataset.sample(rng, K)
        Y = digits.target(plain.encode(X)[0])
        truth = digits.target(X)
        honest = np.sum((plain.decode(np.arange(N), Y)[0] - truth) ** 2)
        Y[liar] = -10 * Y[liar]
        Y_hat, info = robust.decode(np.arange(N), Y)
        assert np.flatnonzero(info["flagged"]).tolist() == [liar]
        fooled = np.sum((plain.decode(np.arange(N), Y)[0] - truth) ** 2)
        robust_err = np.sum((Y_hat - truth) ** 2)
        # the screen's error is the honest decode's without one result: measured 0.72 to 1.16
        # times it, the plain decode's 220 to 14000 times
        assert robust_err < 2 * honest and fooled > 100 * honest


def test_robust_is_on_exactly_when_the_job_has_adversaries():
    job = parse_job("[code]\nworkers = 40\nschemes = [\"lcc\", \"bacc\"]\n[target]\n"
                    "kind = \"polynomial\"\n")
    config = job.points[0].config
    assert scheme_options(config, "bacc", None) == {"robust": False, "errors": 0}
    liars = job.with_overrides(["adversaries.count=2"]).points[0].config
    assert scheme_options(liars, "bacc", None) == {"robust": True, "errors": 2}
    assert scheme_options(liars, "lcc", None)["errors"] == 2
    off = job.with_overrides(["adversaries.count=2", "code.bacc.robust=false"]).points[0].config
    assert scheme_options(off, "bacc", None)["robust"] is False


def test_letcc_spline_modes_are_the_adversarial_spline_and_its_screen(digits):
    """letcc's own robust modes (codes/letcc.py): "spline" decodes every result with the
    adversaries' lambda and flags nobody; "spline-screen" drops two planted 10x sign-flips
    (the measured case where it beats the neighbours' screen, docs/science.md)."""
    from gcc_mpi.codes.robust import adversarial_lambda

    N, K, rng = 40, 10, np.random.default_rng(5)
    plain = make_code("letcc", N, K)
    spline, screen = make_code("letcc", N, K), make_code("letcc", N, K)
    spline.set_robust("spline", 2)
    screen.set_robust("spline-screen", 2)
    for liars in ([3, 4], [0, 30]):
        X = digits.dataset.sample(rng, K)
        Y = digits.target(plain.encode(X)[0])
        truth = digits.target(X)
        honest = np.sum((plain.decode(np.arange(N), Y)[0] - truth) ** 2)
        Y[liars] = -10 * Y[liars]
        Y_hat, info = screen.decode(np.arange(N), Y)
        assert np.flatnonzero(info["flagged"]).tolist() == liars
        # the honest decode's error without two results: measured 1.00 (side by side) and 2.1
        # (an end point lost) times the honest decode's
        assert np.sum((Y_hat - truth) ** 2) < 4 * honest, np.sum((Y_hat - truth) ** 2) / honest
        _, info = spline.decode(np.arange(N), Y)
        assert not info["flagged"].any()
        assert info["lambda_dec"] == adversarial_lambda(N, N, 2)


def test_letcc_robust_takes_its_own_words_and_others_do_not():
    base = '[code]\nworkers = 40\nschemes = ["letcc", "bacc"]\n[adversaries]\ncount = 2\n'
    job = parse_job(base + '[code.letcc]\nrobust = "spline-screen"\n')
    assert scheme_options(job.points[0].config, "letcc", None) == {
        "robust": "spline-screen", "errors": 2, "lambda_enc": "auto", "lambda_dec": "auto"}
    with pytest.raises(Exception, match=r'code\.bacc\.robust: must be "auto" or true or false'):
        parse_job(base + '[code.bacc]\nrobust = "spline"\n')
