"""Target functions: polynomial degree, linearity, the shipped MLP, user Python functions."""

import textwrap

import numpy as np
import pytest
from numpy.polynomial import polynomial as P

from gcc_mpi.job.datasets import load_dataset
from gcc_mpi.errors import JobError
from gcc_mpi.targets import make_target, try_one_row


def unit_rows(n, d, seed=0):
    X = np.random.default_rng(seed).standard_normal((n, d))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def fit_residual(t, y, deg):
    """Relative residual of the least-squares polynomial fit of degree ``deg`` to y(t)."""
    coef = P.polyfit(t, y, deg)
    return np.linalg.norm(P.polyval(t, coef) - y) / np.linalg.norm(y)


# ---------------------------------------------------------------- polynomial and linear

@pytest.mark.parametrize("degree", [1, 2, 3, 5])
def test_polynomial_has_exact_degree_on_a_random_line(degree):
    f = make_target("polynomial", input_dim=10, degree=degree, outputs=3, seed=7)
    assert (f.degree, f.input_dim, f.output_dim, f.classifier) == (degree, 10, 3, False)
    x0, v = unit_rows(2, 10, seed=degree)
    t = np.linspace(-1, 1, 4 * degree + 4)
    Y = f(x0 + t[:, None] * v)                              # (len(t), 3)
    for j in range(3):
        assert fit_residual(t, Y[:, j], degree) < 1e-10      # a polynomial of degree <= p ...
        assert fit_residual(t, Y[:, j], degree - 1) > 1e-4   # ... and not of degree p - 1


def test_polynomial_is_seeded_vectorised_and_order_one_on_the_sphere():
    X = unit_rows(500, 64)
    f = make_target("polynomial", input_dim=64, seed=1)
    Y = f(X)
    assert Y.shape == (500, 4) and Y.dtype == np.float64
    np.testing.assert_array_equal(Y, make_target("polynomial", input_dim=64, seed=1)(X))
    assert not np.allclose(Y, make_target("polynomial", input_dim=64, seed=2)(X))
    np.testing.assert_allclose(Y[7:8], f(X[7:8]), rtol=1e-12)
    assert 0.2 < np.sqrt(np.mean(Y**2)) < 5


def test_linear_is_linear():
    f = make_target("linear", input_dim=6, outputs=2, seed=0)
    assert (f.degree, f.output_dim) == (1, 2)
    x, y = unit_rows(2, 6)
    np.testing.assert_allclose(f((2 * x - 3 * y)[None]), 2 * f(x[None]) - 3 * f(y[None]),
                               atol=1e-12)
    np.testing.assert_allclose(f(unit_rows(5, 6)), unit_rows(5, 6) @ f.A.T)


@pytest.mark.parametrize("kwargs, match", [
    ({"kind": "polynomial", "degree": 0}, "target.degree: .* must be an integer >= 1, got 0"),
    ({"kind": "polynomial", "outputs": 0}, "target.outputs"),
    ({"kind": "linear", "outputs": 1.5}, "target.outputs"),
    ({"kind": "polynomial", "seed": -1}, "job.seed"),
    ({"kind": "onx"}, "target.kind: unknown kind 'onx'; choose one of linear, mlp, onnx"),
    ({"kind": "python"}, "target.function: required"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(JobError, match=match):
        make_target(input_dim=4, **kwargs)


# ---------------------------------------------------------------- mlp

def test_shipped_mlp_matches_reference_and_classifies_digits():
    digits = load_dataset("digits")
    f = make_target("mlp", input_dim=64)
    assert (f.input_dim, f.output_dim, f.classifier, f.degree) == (64, 10, True, None)
    relu = lambda h: np.maximum(h, 0)                        # noqa: E731
    W, b = f.weights, f.biases
    reference = relu(relu(digits.X @ W[0] + b[0]) @ W[1] + b[1]) @ W[2] + b[2]
    np.testing.assert_allclose(f(digits.X), reference, rtol=1e-12, atol=1e-12)
    assert np.mean(f(digits.X).argmax(axis=1) == digits.labels) > 0.9


def test_mlp_from_file_and_errors(tmp_path):
    rng = np.random.default_rng(0)
    W0, W1 = rng.standard_normal((3, 5)), rng.standard_normal((5, 2))
    b0, b1 = rng.standard_normal(5), rng.standard_normal(2)
    np.savez(tmp_path / "m.npz", W0=W0, b0=b0, W1=W1, b1=b1, activation=np.array("tanh"))
    f = make_target("mlp", input_dim=3, model="m.npz", base_dir=tmp_path)
    X = rng.standard_normal((4, 3))
    np.testing.assert_allclose(f(X), np.tanh(X @ W0 + b0) @ W1 + b1)

    with pytest.raises(JobError, match="target.kind: mlp target expects inputs of dimension 64 "
                                       "but data has 50"):
        make_target("mlp", input_dim=50)
    with pytest.raises(JobError, match="target.model: file not found"):
        make_target("mlp", input_dim=3, model="nope.npz", base_dir=tmp_path)
    np.savez(tmp_path / "bad.npz", weights=W0)
    with pytest.raises(JobError, match="target.model: .* no layers found; expected arrays W0, b0"):
        make_target("mlp", input_dim=3, model="bad.npz", base_dir=tmp_path)
    np.savez(tmp_path / "chain.npz", W0=W0, b0=b0, W1=W1.T, b1=b1)
    with pytest.raises(JobError, match="target.model: .* layer 1"):
        make_target("mlp", input_dim=3, model="chain.npz", base_dir=tmp_path)
    np.savez(tmp_path / "act.npz", W0=W0, b0=b0, activation=np.array("softplus"))
    with pytest.raises(JobError, match="target.model: .* activation 'softplus' is not supported"):
        make_target("mlp", input_dim=3, model="act.npz", base_dir=tmp_path)
    (tmp_path / "junk.npz").write_bytes(b"junk")
    with pytest.raises(JobError, match="target.model: cannot read"):
        make_target("mlp", input_dim=3, model="junk.npz", base_dir=tmp_path)


# ---------------------------------------------------------------- python

def write(tmp_path, name, source):
    (tmp_path / name).write_text(textwrap.dedent(source))


def test_python_function_from_file_and_module(tmp_path, monkeypatch):
    write(tmp_path, "userf.py", """
        import numpy as np
        def square(X):
            return X[:, :2] ** 2
        def classify(X):
            return X[:, ::-1]
        classify.classifier = True
    """)
    f = make_target("python", input_dim=3, function="userf.py:square", base_dir=tmp_path)
    assert f.input_dim is None and f.output_dim is None and not f.classifier
    X = np.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(try_one_row(f, X[0]), [[0.0, 1.0]])
    assert f.output_dim == 2
    np.testing.assert_array_equal(f(X), X[:, :2] ** 2)

    monkeypatch.syspath_prepend(str(tmp_path))
    g = make_target("python", input_dim=3, function="userf:classify")
    assert g.classifier
    try_one_row(g, X[:1])
    assert g.output_dim == 3


def test_python_function_errors(tmp_path):
    write(tmp_path, "ok.py", """
        import numpy as np
        def flat(X):
            return X[0]
        def nan(X):
            return np.full((len(X), 2), np.nan)
        def boom(X):
            raise RuntimeError("kaput")
        def two_rows(X):
            return np.zeros((len(X) + 1, 2))
        NOT_CALLABLE = 3
    """)
    write(tmp_path, "broken.py", "import no_such_module_xyz\n")
    write(tmp_path, "syntax.py", "def f(:\n")

    def fails(function, match):
        with pytest.raises(JobError, match=match):
            try_one_row(make_target("python", input_dim=3, function=function, base_dir=tmp_path),
                  np.ones(3))

    fails("ok.py:flat", r"target.function: ok.py:flat returned shape \(3,\) for an input of "
                        r"shape \(1, 3\); expected \(1, m\)")
    fails("ok.py:nan", "target.function: .* returned NaN or inf")
    fails("ok.py:boom", "target.function: ok.py:boom raised RuntimeError .*kaput")
    fails("ok.py:two_rows", r"returned shape \(2, 2\)")
    fails("ok.py:missing", "target.function: 'ok.py' has no attribute 'missing'")
    fails("ok.py:NOT_CALLABLE", "target.function: .* is a int, not a callable")
    fails("nope.py:f", "target.function: file not found")
    fails("broken.py:f", "target.function: importing .*broken.py failed: ModuleNotFoundError")
    fails("syntax.py:f", "target.function: importing .*syntax.py failed: SyntaxError")
    fails("no_such_module_xyz:f", "target.function: importing module 'no_such_module_xyz' failed")
    fails("just_a_name", "target.function: expected 'package.module:function'")

    f = make_target("python", input_dim=3, function="ok.py:two_rows", base_dir=tmp_path)
    with pytest.raises(JobError, match=r"target.function: .* returned shape \(3, 2\)"):
        f(np.ones((2, 3)))
