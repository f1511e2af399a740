"""ONNX targets: a model written here from known weights against the numpy MLP, shapes, names,
batch handling, errors before the run, image files end to end, and the shipped CNN via the CLI.

The models are built with the ``onnx`` helper API (a test dependency), never with torch.
"""

import pickle
import sys
from pathlib import Path

import numpy as np
import pytest

import onnx  # the [test] extra installs both: missing is a failure, not a skip
from onnx import TensorProto, helper, numpy_helper

from gcc_mpi.cli.main import main
from gcc_mpi.job.parse import load_job, parse_job
from gcc_mpi.job.datasets import load_dataset
from gcc_mpi.errors import JobError
from gcc_mpi.files.reader import read_results
from gcc_mpi.targets import make_target, target_for, try_one_row
from gcc_mpi.targets import onnx as onnx_target
from gcc_mpi.core.point import PointSetup

ELEM = {np.float32: TensorProto.FLOAT, np.float64: TensorProto.DOUBLE}


def save_model(path, nodes, inputs, outputs, weights=(), opset=13):
    """Write an ONNX model: ``inputs``/``outputs`` are (name, dtype, shape) with str/None dims."""
    def info(name, dtype, shape):
        return helper.make_tensor_value_info(name, ELEM.get(dtype, dtype), shape)
    graph = helper.make_graph(nodes, "test", [info(*i) for i in inputs],
                              [info(*o) for o in outputs],
                              [numpy_helper.from_array(a, name) for name, a in weights])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def mlp_model(path, dtype=np.float32, batch="n", reshape_from=None):
    """The shipped digits MLP (W0, b0, ..., relu) as ONNX: x @ W + b, ReLU between layers.
    ``reshape_from`` = a per-sample input shape (e.g. (1, 8, 8)) flattened by the graph first."""
    f = make_target("mlp", input_dim=64)
    nodes, weights, h = [], [], "x"
    if reshape_from is not None:
        weights.append(("flat", np.array([-1, 64], np.int64)))
        nodes.append(helper.make_node("Reshape", ["x", "flat"], ["h_flat"]))
        h = "h_flat"
    last = len(f.weights) - 1
    for i, (W, b) in enumerate(zip(f.weights, f.biases)):
        weights += [(f"W{i}", W.astype(dtype)), (f"b{i}", b.astype(dtype))]
        nodes.append(helper.make_node("MatMul", [h, f"W{i}"], [f"m{i}"]))
        out = "y" if i == last else f"a{i}"
        nodes.append(helper.make_node("Add", [f"m{i}", f"b{i}"], [out]))
        if i < last:
            nodes.append(helper.make_node("Relu", [out], [f"h{i}"]))
            h = f"h{i}"
    shape = [batch, *(reshape_from or (64,))]
    save_model(path, nodes, [("x", dtype, shape)], [("y", dtype, [batch, 10])], weights)
    return f, path


@pytest.fixture(scope="module")
def digits():
    return load_dataset("digits")


def test_onnx_mlp_from_known_weights_equals_the_numpy_mlp(tmp_path, digits):
    f, path = mlp_model(tmp_path / "mlp.onnx")
    g = make_target("onnx", input_dim=64, path=path)
    assert (g.input_dim, g.output_dim, g.classifier, g.input_shape, g.batch) == \
        (64, 10, True, (64,), None)
    assert (g.input_name, g.output_name, g.dtype) == ("x", "y", np.float32)
    Y, ref = g(digits.X), f(digits.X)
    assert Y.shape == (1797, 10) and Y.dtype == np.float64
    np.testing.assert_allclose(Y, ref, rtol=1e-5, atol=1e-5)
    assert np.array_equal(Y.argmax(1), ref.argmax(1))
    # coded inputs are not digits: any real rows, any batch size, including one row
    X = np.random.default_rng(0).standard_normal((7, 64))
    np.testing.assert_allclose(g(X), f(X), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(try_one_row(g, X[0]), f(X[:1]), rtol=1e-5, atol=1e-5)


def test_float64_model_is_exact(tmp_path, digits):
    f, path = mlp_model(tmp_path / "mlp64.onnx", dtype=np.float64)
    g = make_target("onnx", input_dim=64, path=path)
    assert g.dtype == np.float64
    np.testing.assert_allclose(g(digits.X), f(digits.X), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("batch", [1, 4])
def test_a_fixed_batch_size_runs_in_padded_chunks(tmp_path, batch):
    f, path = mlp_model(tmp_path / "fixed.onnx", batch=batch)
    g = make_target("onnx", input_dim=64, path=path)
    assert g.batch == batch
    X = np.random.default_rng(1).standard_normal((11, 64))
    np.testing.assert_allclose(g(X), f(X), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(g(X[:1]), f(X[:1]), rtol=1e-5, atol=1e-5)


def test_image_input_shape_comes_from_the_model_or_the_job(tmp_path, digits):
    f, path = mlp_model(tmp_path / "img.onnx", reshape_from=(1, 8, 8))
    g = make_target("onnx", input_dim=64, path=path)
    assert g.input_shape == (1, 8, 8)
    np.testing.assert_allclose(g(digits.X[:20]), f(digits.X[:20]), rtol=1e-5, atol=1e-5)
    # open dimensions: the job gives the per-sample shape
    _, open_path = mlp_model(tmp_path / "open.onnx", reshape_from=(1, "h", "w"))
    with pytest.raises(JobError, match=r"^target.shape: required: input 'x' of .* open dim"):
        make_target("onnx", input_dim=64, path=open_path)
    g = make_target("onnx", input_dim=64, path=open_path, input_shape=[1, 8, 8])
    np.testing.assert_allclose(g(digits.X[:20]), f(digits.X[:20]), rtol=1e-5, atol=1e-5)
    # a (batch, d) input with d open takes the data's d
    _, flat_open = mlp_model(tmp_path / "flatopen.onnx", reshape_from=("d",))
    assert make_target("onnx", input_dim=64, path=flat_open).input_shape == (64,)


@pytest.mark.parametrize("fixed", [False, True])
def test_a_shape_with_one_more_axis_makes_a_row_a_block_of_inputs(tmp_path, digits, fixed):
    """target.shape = [3, 1, 8, 8] for a model taking (batch, 1, 8, 8): a row of 192 values is
    3 images, run in one batch; f of it is their 30 scores side by side (issue 37: a worker's
    task that costs what a batch of inference costs)."""
    f, path = mlp_model(tmp_path / "blk.onnx", reshape_from=(1, 8, 8), batch=4 if fixed else "n")
    g = make_target("onnx", input_dim=192, path=path, input_shape=[3, 1, 8, 8])
    assert (g.per_row, g.input_shape, g.input_dim, g.output_dim) == (3, (1, 8, 8), 192, 30)
    rows = digits.X[:15].reshape(5, 192)
    np.testing.assert_allclose(g(rows), f(digits.X[:15]).reshape(5, 30), rtol=1e-5, atol=1e-5)
    with pytest.raises(JobError, match=r"^target.shape: .* takes inputs of shape \[3, 1, 8, 8\] "
                                       r"\(192 values\) but the data rows have 64 values"):
        make_target("onnx", input_dim=64, path=path, input_shape=[3, 1, 8, 8])
    with pytest.raises(JobError, match=r"^target.shape: \[3, 2, 8, 8\] does not fit"):
        make_target("onnx", input_dim=384, path=path, input_shape=[3, 2, 8, 8])


def test_shipped_cnn_classifies_the_digits(digits):
    g = make_target("onnx", input_dim=64)
    assert (g.input_shape, g.output_dim, g.classifier, g.dtype) == ((1, 8, 8), 10, True, np.float32)
    assert np.mean(g(digits.X).argmax(1) == digits.labels) > 0.98
    # one session per file and process, shared by every target on it, and kept across pickling
    h = pickle.loads(pickle.dumps(g))
    assert h.session is g.session is make_target("onnx", input_dim=64).session
    np.testing.assert_array_equal(h(digits.X[:5]), g(digits.X[:5]))
    assert g.session.get_session_options().intra_op_num_threads == 1


@pytest.mark.parametrize("kwargs, match", [
    ({"input_dim": 50}, r"^target.path: shipped .* takes inputs of shape \[1, 8, 8\] \(64 values\) "
                        r"but the data rows have 50 values"),
    ({"input_shape": [64]}, r"^target.shape: \[64\] does not fit input 'x' .* "
                            r"\['batch', 1, 8, 8\]"),
    ({"input_shape": [1, 4, 16]}, r"^target.shape: \[1, 4, 16\] does not fit"),
    ({"input_name": "image"}, r"^target.input: the model has no input 'image'; its inputs: 'x'"),
    ({"output_name": "probs"}, r"^target.output: the model has no output 'probs'; "
                               r"its outputs: 'logits'"),
    ({"path": "missing.onnx"}, r"^target.path: file not found: .*missing.onnx"),
])
def test_bad_onnx_arguments(kwargs, match):
    kwargs = {"input_dim": 64, **kwargs}
    with pytest.raises(JobError, match=match):
        make_target("onnx", **kwargs)


def test_names_are_needed_only_when_the_model_has_several(tmp_path):
    path = save_model(tmp_path / "two.onnx",
                      [helper.make_node("Relu", ["a"], ["ra"]),
                       helper.make_node("Neg", ["b"], ["nb"]),
                       helper.make_node("Add", ["ra", "nb"], ["sum"]),
                       helper.make_node("ReduceSum", ["sum"], ["total"], keepdims=1, axes=[1])],
                      [("a", np.float32, ["n", 3]), ("b", np.float32, ["n", 3])],
                      [("sum", np.float32, ["n", 3]), ("total", np.float32, ["n", 1])], opset=12)
    with pytest.raises(JobError,
                       match=r"^target.input: required: the model has 2 inputs \('a', 'b'\)"):
        make_target("onnx", input_dim=3, path=path)
    with pytest.raises(JobError,
                       match=r"^target.output: required: .* 2 outputs \('sum', 'total'\)"):
        make_target("onnx", input_dim=3, path=path, input_name="a")
    with pytest.raises(JobError, match=r"^target.path: .* fails on an input of shape \[2, 3\]"):
        make_target("onnx", input_dim=3, path=path, input_name="a", output_name="sum")


def test_classifier_is_auto_or_set(tmp_path):
    path = save_model(tmp_path / "all.onnx",
                      [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=1)],
                      [("x", np.float64, ["n", 5])], [("s", np.float64, ["n", 1])], opset=12)
    with pytest.raises(JobError, match=r"^target.output: .* output 's' has shape \(1, 1\) "
                                       r"for a batch of 2"):
        make_target("onnx", input_dim=5, path=path)         # it sums over the batch too
    path = save_model(tmp_path / "sum.onnx",
                      [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=1, axes=[1])],
                      [("x", np.float64, ["n", 5])], [("s", np.float64, ["n", 1])], opset=12)
    g = make_target("onnx", input_dim=5, path=path)
    assert (g.output_dim, g.classifier) == (1, False)        # m = 1: a regression
    np.testing.assert_allclose(g(np.ones((3, 5))), np.full((3, 1), 5.0))
    assert make_target("onnx", input_dim=64, classifier=False).classifier is False
    assert make_target("mlp", input_dim=64, classifier=False).classifier is False
    assert make_target("linear", input_dim=4, classifier=True).classifier is True


def test_unreadable_model_and_missing_onnxruntime(tmp_path, monkeypatch):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not a model")
    with pytest.raises(JobError, match=r"^target.path: onnxruntime cannot load .*bad.onnx: "):
        make_target("onnx", input_dim=64, path=bad)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)     # import onnxruntime -> ImportError
    with pytest.raises(JobError, match=r'^target.kind: onnx targets need the optional extra: '
                                       r'pip install "gcc_mpi\[onnx\]"$'):
        make_target("onnx", input_dim=64, path=bad)


# ---------------------------------------------------------------- through the job file

JOB = """
[job]
name = "cnn"
seed = 2
trials = 4
[data]
batch = 10
[target]
kind = "onnx"
[code]
workers = 20
schemes = ["bacc", "gcc", "gcc-manifold"]
[stragglers]
model = "fixed"
count = 3
"""


def test_errors_come_before_the_run(tmp_path):
    def build(extra, data=""):
        text = JOB.replace("[target]\n", f"[target]\n{extra}\n").replace(
            "[data]\n", f"[data]\n{data}\n")
        return PointSetup.build(parse_job(text, base_dir=tmp_path).config, base_dir=tmp_path)

    with pytest.raises(JobError, match=r"^target.path: file not found: .*nope.onnx"):
        build('path = "nope.onnx"')
    with pytest.raises(JobError,
                       match=r"^target.path: .* takes inputs of shape \[1, 8, 8\] .* 50 values"):
        build("", data='source = "sphere"\ndim = 50')
    with pytest.raises(JobError, match=r"^target.shape: \[8, 8\] does not fit"):
        build("shape = [8, 8]")
    with pytest.raises(JobError, match=r"^target.model: is an ONNX file"):
        build('model = "cnn.onnx"')
    setup = build("")
    assert setup.target.input_shape == (1, 8, 8) and setup.target.classifier


def test_image_files_keep_their_shape_for_the_model(tmp_path, digits):
    g = make_target("onnx", input_dim=64)
    images = digits.X.reshape(-1, 1, 8, 8).astype(np.float32)
    np.save(tmp_path / "images.npy", images)
    np.savez(tmp_path / "nhwc.npz",
             X=np.ascontiguousarray(images.transpose(0, 2, 3, 1)).repeat(2, -1))
    text = JOB.replace("[data]\n", '[data]\nsource = "file"\npath = "images.npy"\n')
    setup = PointSetup.build(parse_job(text, base_dir=tmp_path).config, base_dir=tmp_path)
    assert setup.dataset.shape == (1, 8, 8) and setup.dataset.dim == 64
    X, Y, _ = setup.inputs(0, 0)
    assert X.shape == (10, 64)
    np.testing.assert_array_equal(Y, g(X))
    # rows stored channels-last (8, 8, 2) are refused for a model that takes (1, 8, 8)... by size
    bad = text.replace('"images.npy"', '"nhwc.npz"')
    with pytest.raises(JobError,
                       match=r"^target.path: .* takes inputs of shape \[1, 8, 8\] .* 128"):
        PointSetup.build(parse_job(bad, base_dir=tmp_path).config, base_dir=tmp_path)


def test_a_layout_mismatch_is_refused(tmp_path):
    # a model taking (2, 4, 4) images fed rows stored as (4, 4, 2): same size, other layout
    save_model(tmp_path / "chw.onnx", [helper.make_node("Flatten", ["x"], ["y"])],
               [("x", np.float32, ["n", 2, 4, 4])], [("y", np.float32, ["n", 32])])
    np.save(tmp_path / "hwc.npy", np.random.default_rng(0).random((30, 4, 4, 2)))
    np.save(tmp_path / "chw.npy", np.random.default_rng(0).random((30, 2, 4, 4)))
    text = JOB.replace("[target]\n", '[target]\npath = "chw.onnx"\n').replace(
        "[data]\n", '[data]\nsource = "file"\npath = "hwc.npy"\n')
    with pytest.raises(JobError, match=r"^data.path: one input is stored with shape \[4, 4, 2\] "
                                       r"but onnx chw.onnx takes \[2, 4, 4\]"):
        PointSetup.build(parse_job(text, base_dir=tmp_path).config, base_dir=tmp_path)
    ok = text.replace('"hwc.npy"', '"chw.npy"')
    setup = PointSetup.build(parse_job(ok, base_dir=tmp_path).config, base_dir=tmp_path)
    X, Y, _ = setup.inputs(0, 0)
    np.testing.assert_allclose(Y, X, rtol=1e-6)          # Flatten of the reshaped row is the row


def test_target_for_reads_the_target_keys(tmp_path):
    f, path = mlp_model(tmp_path / "img.onnx", reshape_from=(1, "h", "w"))
    text = JOB.replace("[target]\n", '[target]\npath = "img.onnx"\ninput = "x"\noutput = "y"\n'
                                     "shape = [1, 8, 8]\nclassifier = false\n")
    g = target_for(parse_job(text).config, 64, base_dir=tmp_path)
    assert (g.input_shape, g.classifier, g.input_name, g.output_name) == \
        ((1, 8, 8), False, "x", "y")


def test_simulate_a_tiny_job_with_the_shipped_cnn(tmp_path, capsys):
    job = tmp_path / "cnn.toml"
    job.write_text(JOB)
    out = tmp_path / "cnn.h5"
    assert main(["simulate", str(job), "-o", str(out), "-q"]) == 0
    r = read_results(out)
    assert r.complete and list(r.points[0].schemes) == ["bacc", "gcc", "gcc-manifold"]
    # measured (4 trials): mean nmse -12.5 / -15.1 / -20.9 dB, relacc 0.975 / 1.0 / 0.975
    measured = {"bacc": -12.5, "gcc": -15.1, "gcc-manifold": -20.9}
    for name, d in r.points[0].schemes.items():
        assert not d["failed"].any()
        assert 10 * np.log10(d["nmse"].mean()) == pytest.approx(measured[name], abs=3), name
        assert d["relacc"].mean() >= 0.9, name
    assert main(["simulate", str(tmp_path / "nope.toml"), "-o", str(tmp_path / "x.h5"), "-q"]) == 2
    job.write_text(JOB.replace("[target]\n", '[target]\npath = "gone.onnx"\n'))
    capsys.readouterr()
    assert main(["simulate", str(job), "-o", str(tmp_path / "y.h5"), "-q"]) == 2
    assert "target.path: file not found" in capsys.readouterr().err
    assert not (tmp_path / "y.h5").exists()


def test_sessions_are_cached_per_file(tmp_path):
    _, path = mlp_model(tmp_path / "c.onnx")
    a = make_target("onnx", input_dim=64, path=path)
    b = make_target("onnx", input_dim=64, path=str(path))
    assert a.session is b.session
    assert sum(1 for k in onnx_target._SESSIONS
               if isinstance(k, tuple) and k[0].endswith("c.onnx")) == 1


def test_the_shipped_cnn_job_builds():
    j = load_job(Path(__file__).resolve().parents[1] / "jobs" / "digits-cnn.toml")
    assert j.config.code.schemes == ("bacc", "letcc", "gcc", "gcc-manifold")
    assert j.sweep == {"stragglers.count": [0, 5, 10, 20]} and j.config.job.trials == 100
    setup = PointSetup.build(j.points[-1].config, j.base_dir)
    assert setup.target.input_shape == (1, 8, 8) and setup.target.output_dim == 10


def test_inputs_without_a_batch_axis_or_not_float_are_refused(tmp_path):
    flat = save_model(tmp_path / "flat.onnx", [helper.make_node("Relu", ["x"], ["y"])],
                      [("x", np.float32, [64])], [("y", np.float32, [64])])
    with pytest.raises(JobError, match=r"^target.path: .* input 'x' has shape \[64\]; "
                                       r"expected a batch axis"):
        make_target("onnx", input_dim=64, path=flat)
    ints = save_model(tmp_path / "ints.onnx", [helper.make_node("Neg", ["x"], ["y"])],
                      [("x", TensorProto.INT64, ["n", 4])], [("y", TensorProto.INT64, ["n", 4])])
    with pytest.raises(JobError, match=r"^target.input: .* input 'x' has type tensor\(int64\); "
                                       r"only float"):
        make_target("onnx", input_dim=4, path=ints)
