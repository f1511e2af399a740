"""Robust decoding (codes/robust.py, ``code.<scheme>.robust``): lcc corrects A wrong results
exactly with 2A more and not beyond, replication's median outvotes a liar, and the
leave-one-out screen names a planted sign-flip worker of bacc, letcc and gcc."""

import json
from pathlib import Path

import numpy as np
import pytest

from gcc_mpi.codes import DecodeError, make_code
from gcc_mpi.errors import JobError
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


def planted(plain, digits, rng, liars, with_inputs=False):
    """A batch of digits through ``plain`` with the results of ``liars`` sign-flipped 10x: (Y,
    f(X), the honest decode's squared error, the decode's arguments beyond the results: alpha
    and the inputs when ``with_inputs``, as gcc-manifold's decoder needs them)."""
    X = digits.dataset.sample(rng, plain.K)
    U, facts = plain.encode(X)
    extra = (facts.get("alpha"), (X, U)) if with_inputs else ()
    Y, truth = digits.target(U), digits.target(X)
    honest = np.sum((plain.decode(np.arange(plain.N), Y, *extra)[0] - truth) ** 2)
    Y[liars] = -10 * Y[liars]
    return Y, truth, honest, extra


@pytest.mark.parametrize("scheme", ["bacc", "letcc", "gcc"])
def test_the_screen_finds_a_planted_sign_flip_worker(scheme, digits):
    N, K = 40, 10
    rng = np.random.default_rng(3)
    plain, robust = make_code(scheme, N, K), make_code(scheme, N, K)
    robust.set_robust("screen", 1)  # the neighbours' screen, whatever true means for scheme
    for liar in (0, 7, 23, 39):
        Y, truth, honest, _ = planted(plain, digits, rng, [liar])
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


def test_the_locator_system_is_approxifers():
    """codes.robust.locator_system against the formulas of ApproxIFER's welch_decoder, written as
    theirs (Workstation-MNIST-Approximate-error-locator.py: gt, gk, G and the loops A1, A2, A3),
    where a worker's point is on no node; on a node, our entries stay finite (theirs divide by
    zero) and the locator's row there is its value at that node."""
    from gcc_mpi.codes.robust import locator_nodes, locator_system

    K, A = 4, 2
    alpha, t = np.cos((2 * np.arange(K) + 1) * np.pi / (2 * K)), locator_nodes(A)
    z = np.cos(np.arange(13) * np.pi / 13)[[0, 2, 3, 5, 7, 8, 11]]

    def gt(x):
        return sum((-1) ** i / (x - t[i]) for i in range(A + 1))

    def gk(x):
        return sum((-1) ** i / (x - alpha[i]) for i in range(K))

    def G(x):
        return (sum(gt(alpha[i]) * (-1) ** i / (x - alpha[i]) for i in range(K))
                + sum(gk(t[i]) * (-1) ** i / (x - t[i]) for i in range(A + 1)))

    A1 = [[1 / ((x - alpha[j]) * G(x)) for j in range(K)] for x in z]
    A2 = [[1 / ((x - t[j]) * G(x)) for j in range(A + 1)] for x in z]
    A3 = [[(-1) ** j / ((x - t[j]) * gt(x)) for j in range(A + 1)] for x in z]
    fixed, L = locator_system(z, alpha, A)
    assert np.allclose(fixed, np.hstack([A1, A2]), rtol=1e-12, atol=1e-14)
    assert np.allclose(L, A3, rtol=1e-12, atol=1e-14)
    on_node = np.array([0.3, t[1], alpha[2]])
    fixed, L = locator_system(on_node, alpha, A)
    assert np.all(np.isfinite(fixed)) and L[1].tolist() == [0.0, 1.0, 0.0]


def test_the_locator_finds_a_planted_sign_flip_worker(digits):
    """code.bacc.robust = "locator" (ApproxIFER's decoder) built for A = 2 (their runs' emax)
    flags a lone liar, anywhere along beta, among its two (measured: at 14 of 14 positions;
    built for A = 1 it took the liar at 4 of 14 — one reason the screen is bacc's default,
    docs/science.md)."""
    N, K = 40, 10
    rng = np.random.default_rng(3)
    code = make_code("bacc", N, K, robust="locator", errors=2)
    assert code.robust and code.robust_method == "locator"
    for liar in (0, 9, 21, 39):
        X = digits.dataset.sample(rng, K)
        Y = digits.target(code.encode(X)[0])
        Y[liar] = -10 * Y[liar]
        Y_hat, info = code.decode(np.arange(N), Y)
        flagged = np.flatnonzero(info["flagged"]).tolist()
        assert liar in flagged and len(flagged) == 2, (liar, flagged)
        assert np.isfinite(info["locator_gap"])


def test_the_locator_leaves_too_few_results_to_the_screen():
    """Under K + 2A + 1 results the locator's null space is not one line: the screen decides."""
    code = make_code("bacc", 14, 10, robust="locator", errors=2)
    X = np.random.default_rng(0).standard_normal((10, 3))
    Y = np.tanh(code.encode(X)[0])
    Y[6] = -10 * Y[6]
    _, info = code.decode(np.arange(14), Y)
    assert np.isnan(info["locator_gap"]) and np.flatnonzero(info["flagged"]).tolist() == [6]


@pytest.mark.parametrize("scheme", ["bacc", "letcc", "gcc"])
def test_the_screen_catches_two_liars_side_by_side(scheme, digits):
    """Two adjacent liars vouch for each other along the nearest two's line: at workers 0 and 1
    it kept a liar and dropped honest neighbours (an error 8000 to 150000 times the honest
    decode's). The best line within reach A + 1 (codes.robust.loo_residuals) leaves each
    result a pair of honest neighbours: every pair of the 13 below is flagged, and nothing
    else."""
    N, K = 40, 10
    rng = np.random.default_rng(3)
    plain, robust = make_code(scheme, N, K), make_code(scheme, N, K, robust=True, errors=2)
    assert robust.robust_choice == "screen"  # what true means for every built-in
    for first in range(0, 39, 3):
        Y, _, _, _ = planted(plain, digits, rng, [first, first + 1])
        _, info = robust.decode(np.arange(N), Y)
        assert np.flatnonzero(info["flagged"]).tolist() == [first, first + 1], first


def test_the_screen_peels_a_run_of_liars_on_a_straight_stretch():
    """Three liars side by side where f is nearly straight along beta explain one another by a
    line through two of them; the nearest two's line then peels the run from its ends
    (codes.robust.loo_screen's second step). Without it the run at 5-7 was missed; the nearest
    two alone flagged honest neighbours with it (16-21 for the run at 18). A run at an end of
    beta's range is not caught: its honest neighbours are all on one side (docs/science.md)."""
    from gcc_mpi.codes.robust import loo_screen

    points = np.sort(np.cos(np.linspace(0, np.pi, 40)))
    Y = np.stack([np.sin(3 * points + k) for k in range(10)], axis=1)
    for first in (5, 12, 18, 30):
        lying = [first, first + 1, first + 2]
        Z = Y.copy()
        Z[lying] *= -10
        assert np.flatnonzero(~loo_screen(points, Z, 3)).tolist() == lying, first


def test_refused_results_count_against_the_liars_a_screen_looks_for():
    """Two liars whose flipped exponent finite_rows refuses are the two the job declared: the
    screen then has no one left to look for (codes.robust.liars_left). Spent on the honest
    results, its 2A drops named honest workers in 60% of the trials (bacc) and cost gcc 58 dB."""
    from jobfiles import FAULTY

    from gcc_mpi.api import run_simulation

    job = parse_job(FAULTY)
    for scheme, r in run_simulation(job).points[0].schemes.items():
        honest = r["used"] & ~r["adversary"]
        assert np.all(r["flagged"][r["adversary"]]), scheme
        # measured: 2 (bacc) and 1 (gcc) honest results flagged of 630; before, 77 and 53
        assert (r["flagged"] & honest).sum() <= 6, scheme


def test_bacc_names_its_robust_decoder():
    job = parse_job("[code]\nworkers = 40\nschemes = [\"bacc\"]\n[adversaries]\ncount = 2\n")
    for word in ("locator", "screen"):
        config = job.with_overrides([f'code.bacc.robust="{word}"']).points[0].config
        assert scheme_options(config, "bacc", None) == {"robust": word, "errors": 2}
    assert make_code("bacc", 40, 10, robust=True, errors=2).robust_method is None  # the screen
    with pytest.raises(JobError, match="code.bacc.robust"):
        job.with_overrides(['code.bacc.robust="median"'])


def test_which_schemes_tolerate_a_adversaries():
    """job.rules.untolerated, the rule plan --adversaries recommends by (K = 3, degree 2)."""
    from gcc_mpi.job.rules import untolerated

    config = parse_job('[data]\nbatch = 3\n[target]\nkind = "polynomial"\ndegree = 2\n'
                       '[code]\nworkers = 40\n').points[0].config
    assert all(untolerated(config, s, 3, 3, 0) is None for s in ("uncoded", "lcc", "bacc"))
    assert untolerated(config, "uncoded", 3, 3, 1) == "no robust decoder"
    assert untolerated(config, "lcc", 8, 8, 2) and untolerated(config, "lcc", 9, 9, 2) is None
    assert untolerated(config, "replication", 14, 14, 2)  # 4 copies of an input: no majority
    assert untolerated(config, "replication", 15, 15, 2) is None
    assert untolerated(config, "bacc", 9, 6, 2) and untolerated(config, "gcc", 9, 7, 2) is None
    assert untolerated(config, "my.py:Code", 40, 40, 1) == "no robust decoder"


def test_plan_recommends_only_schemes_that_tolerate_the_adversaries(tmp_path, capsys):
    from gcc_mpi.cli.main import main

    np.save(tmp_path / "d.npy", 0.001 + np.random.default_rng(2).exponential(0.002, (20, 15)))
    (tmp_path / "job.toml").write_text(
        '[data]\nsource = "sphere"\ndim = 5\nbatch = 3\n[target]\nkind = "polynomial"\n'
        'degree = 2\noutputs = 2\n[code]\nworkers = 8\n'
        'schemes = ["uncoded", "replication", "lcc", "bacc"]\n')
    args = ["plan", str(tmp_path / "job.toml"), "--trace", str(tmp_path / "d.npy"),
            "--target-nmse", "-20", "--trials", "2"]
    best = tmp_path / "best.toml"
    assert main([*args, "--adversaries", "2", "--json", "--write", str(best)]) == 0
    plan = json.loads(capsys.readouterr().out)  # one JSON document, nothing after it
    tried = {(c["scheme"], c["N"], c["S"]) for c in plan["candidates"]}
    assert {s for s, _, _ in tried} == {"replication", "lcc", "bacc"}  # uncoded: no decoder
    assert all(N >= 15 for s, N, _ in tried if s == "replication")     # 2A + 1 copies
    assert all(N >= 9 for s, N, _ in tried if s == "lcc")               # D + 1 + 2A
    assert all(N - S >= 7 for s, N, S in tried if s == "bacc")          # K + 2A waited for
    assert plan["recommended"]["scheme"] == "lcc" and plan["adversaries"] == 2
    assert plan["left_out"]["replication"] == {
        "needs 2A+1 = 5 copies of each input, N >= 15": [3, 4, 7, 10]}
    # the written job (validated as it is written) keeps the liars it was planned against:
    # they set its decoder's A
    assert "[adversaries]\ncount = 2\n" in best.read_text()
    assert main([*args, "--adversaries", "-1"]) == 2
    assert capsys.readouterr().err.strip() == ("gcc_mpi: error: --adversaries: must be an "
                                               "integer >= 0, got -1")


def test_a_node_shared_by_the_inputs_and_the_locator_is_one_term():
    """Odd K and even A: alpha and the locator's nodes share 0, and the system keeps one column
    for it (two equal columns would make a null vector without a locator, b = 0)."""
    from gcc_mpi.codes.robust import locator_system

    alpha = np.cos((2 * np.arange(5) + 1) * np.pi / 10)
    fixed, L = locator_system(np.cos(np.arange(30) * np.pi / 29), alpha, 2)
    assert fixed.shape == (30, 5 + 2) and L.shape == (30, 3)
    assert np.linalg.matrix_rank(fixed) == 7  # with both columns: 8 columns of rank 7
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
        Y, truth, honest, _ = planted(plain, digits, rng, liars)
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
    with pytest.raises(Exception, match=r'code\.bacc\.robust: must be "auto", "screen", '
                       r'"locator", "spline-screen" or true or false, got "spline"'):
        parse_job(base + '[code.bacc]\nrobust = "spline"\n')
    # the job's words are the classes' own (LinearCode.robust_methods), both ways
    for scheme in ("bacc", "letcc", "gcc", "gcc-manifold"):
        for word in make_code(scheme, 40, 10).robust_methods:
            job = parse_job(base + f'[code.{scheme}]\nrobust = "{word}"\n')
            assert scheme_options(job.points[0].config, scheme, None)["robust"] == word


@pytest.mark.parametrize("scheme", ["bacc", "gcc", "gcc-manifold"])
def test_the_spline_screen_serves_any_code_with_points(scheme, digits):
    """robust = "spline-screen" (codes.robust.spline_screen, LinearCode.trusted) drops two
    planted 10x sign-flips — side by side, and one at an end — and the code's own plain decoder
    on the rest is near its honest decode: measured 0.37 to 2.6 times its error, the plain
    decode of the lies 27 to 38000 times."""
    N, K, rng = 40, 10, np.random.default_rng(5)
    plain, screen = make_code(scheme, N, K), make_code(scheme, N, K)
    screen.set_robust("spline-screen", 2)
    for liars in ([3, 4], [0, 30]):
        Y, truth, honest, extra = planted(plain, digits, rng, liars, with_inputs=True)
        Y_hat, info = screen.decode(np.arange(N), Y, *extra)
        assert np.flatnonzero(info["flagged"]).tolist() == liars
        assert np.sum((Y_hat - truth) ** 2) < 4 * honest, np.sum((Y_hat - truth) ** 2) / honest
        fooled = plain.decode(np.arange(N), Y, *extra)[0]
        assert np.sum((fooled - truth) ** 2) > 10 * honest  # the lies matter


def test_letcc_spline_screen_is_the_generic_one():
    """letcc's "spline-screen" is the generic screen on its points: the same smoother as its
    decoder's (SmoothingCode.smoother at z = t), so the same results are kept."""
    from gcc_mpi.codes.robust import adversarial_spline

    code = make_code("letcc", 40, 10)
    t = code.beta[np.arange(0, 40, 3)]
    Y = np.random.default_rng(0).standard_normal((len(t), 3))
    ours, letcc = adversarial_spline(t), code.smoother(t, t, "dec")
    assert np.allclose(ours.apply(Y, 1e-3), letcc.apply(Y, 1e-3), rtol=1e-12, atol=1e-12)
