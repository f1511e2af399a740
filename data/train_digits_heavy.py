"""Build the shipped heavy digits network and write ``gcc_mpi/_data/digits_heavy.onnx``.

Rerun from the repository root (numpy, onnx and onnxruntime: the [test] extra; no torch)::

    python data/train_digits_heavy.py

Why it exists: every other shipped f costs tens of microseconds per row, far below what encoding
and decoding cost, so no shipped job reaches the regime where coding pays on time. This one is a
real convolutional network whose forward pass costs milliseconds per input on one core
(``python benchmarks/heavy_workload.py`` measures it), while its file stays at 2.2 MB: the
cost comes from convolutions at 32 x 32, whose weights are reused at every pixel.

A random-feature CNN (convolutions fixed at a seeded He initialisation, only the read-out
trained), inputs X/16 in [0, 1] shaped (n, 1, 8, 8):

    bilinear resize 8x8 -> 32x32, conv 1->32 3x3, ReLU, conv 32->128 3x3, ReLU,
    3 x (conv 128->128 3x3, ReLU), max-pool 4x4 (128 x 8 x 8 = 8192 features),
    linear 8192->10 (ridge regression on one-hot labels: ten class scores, no softmax)

about 0.98 GFLOP per input (491 million multiply-adds), 0.56 million weights (2.2 MB). Random
convolutional features with a trained linear read-out are a known, cheap-to-train model class
(Jarrett et al., ICCV 2009; Saxe et al., ICML 2011): training is one linear solve, so the script
runs in about a minute on one core without a deep-learning framework (several on a busy machine).
The read-out's ridge λ is chosen on a fifth of the training rows held out (the largest of those
with the best accuracy there), then refitted on all of them.

Split: 25 % of each class held out for the test accuracy, drawn by numpy's
``default_rng(0)`` (not scikit-learn's split of the other two models: scikit-learn is not needed
here). The convolution weights are the same on every machine (seeded numpy draws); the read-out
comes from features computed by onnxruntime, so it may differ in the last bits between CPUs.
The script checks the written model's onnxruntime outputs against a numpy forward pass of the
read-out on all 1797 digits. Opset 18, IR version 8 (onnxruntime >= 1.16 reads it), input ``x``
of shape (batch, 1, 8, 8) with a dynamic batch axis, output ``logits`` of shape (batch, 10).
"""

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from gcc_mpi.job.datasets import load_dataset

OUT = Path(__file__).resolve().parents[1] / "gcc_mpi" / "_data" / "digits_heavy.onnx"
SIDE, CHANNELS, POOL = 32, (1, 32, 128, 128, 128, 128), 4
LAMBDAS = 10.0 ** np.arange(-6, 4)   # ridge λ grid, times the mean feature energy


def conv_weights(seed=0):
    """He-initialised 3x3 filters and zero biases, one (W, b) per convolution."""
    rng = np.random.default_rng(seed)
    layers = []
    for c_in, c_out in zip(CHANNELS[:-1], CHANNELS[1:]):
        W = rng.standard_normal((c_out, c_in, 3, 3)) * np.sqrt(2.0 / (9 * c_in))
        layers.append((W.astype(np.float32), np.zeros(c_out, np.float32)))
    return layers


def graph(layers, readout=None):
    """The network as an ONNX model: the features alone (``readout`` None) or with the
    read-out (W of shape (8192, 10), b of shape (10,)) on top."""
    inits = [numpy_helper.from_array(np.array([1, 1, SIDE / 8, SIDE / 8], np.float32), "scales")]
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["h0"], mode="linear")]
    h = "h0"
    for i, (W, b) in enumerate(layers, 1):
        inits += [numpy_helper.from_array(W, f"conv{i}.W"),
                  numpy_helper.from_array(b, f"conv{i}.b")]
        nodes += [helper.make_node("Conv", [h, f"conv{i}.W", f"conv{i}.b"], [f"c{i}"],
                                   kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
                  helper.make_node("Relu", [f"c{i}"], [f"h{i}"])]
        h = f"h{i}"
    nodes += [helper.make_node("MaxPool", [h], ["pooled"], kernel_shape=[POOL, POOL],
                               strides=[POOL, POOL]),
              helper.make_node("Flatten", ["pooled"], ["features"], axis=1)]
    features = CHANNELS[-1] * (SIDE // POOL) ** 2
    if readout is None:
        out, width = "features", features
    else:
        W, b = readout
        inits += [numpy_helper.from_array(W.astype(np.float32), "readout.W"),
                  numpy_helper.from_array(b.astype(np.float32), "readout.b")]
        nodes.append(helper.make_node("Gemm", ["features", "readout.W", "readout.b"], ["logits"]))
        out, width = "logits", W.shape[1]
    g = helper.make_graph(
        nodes, "digits_heavy",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 1, 8, 8])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, ["batch", width])], inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)],
                              producer_name="gcc_mpi data/train_digits_heavy.py")
    model.ir_version = 8
    model.doc_string = ("gcc_mpi heavy digits CNN (data/train_digits_heavy.py): random 3x3 "
                        "convolutions at 32x32, ridge read-out; input x = pixels/16")
    onnx.checker.check_model(model)
    return model


def run(model, X, threads=2):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(model.SerializeToString(), sess_options=options,
                                   providers=["CPUExecutionProvider"])
    name = session.get_outputs()[0].name
    return np.concatenate([session.run([name], {"x": X[i:i + 64]})[0]
                           for i in range(0, len(X), 64)])


def split(labels, fraction, seed):
    """Stratified split: ``fraction`` of each class's rows (at random) to the second part."""
    rng = np.random.default_rng(seed)
    second = np.zeros(len(labels), bool)
    for c in np.unique(labels):
        rows = rng.permutation(np.flatnonzero(labels == c))
        second[rows[:round(fraction * len(rows))]] = True
    return np.flatnonzero(~second), np.flatnonzero(second)


def ridge(F, Y, lam):
    """Read-out (W, b) minimising |F W + b - Y|² + lam |W|², with an unpenalised bias; solved
    in its dual form (rows x rows: fewer rows than features)."""
    mean_f, mean_y = F.mean(0), Y.mean(0)
    Fc = F - mean_f
    W = Fc.T @ np.linalg.solve(Fc @ Fc.T + lam * np.eye(len(F)), Y - mean_y)
    return W, mean_y - mean_f @ W


def main():
    digits = load_dataset("digits")
    X = digits.X.reshape(-1, 1, 8, 8).astype(np.float32)
    y = digits.labels
    layers = conv_weights()
    F = run(graph(layers), X).astype(np.float64)
    Y = np.eye(10)[y]
    train, test = split(y, 0.25, 0)
    fit, held = split(y[train], 0.2, 1)
    scale = np.mean(np.sum(F[train] ** 2, axis=1))
    scores = []
    for lam in LAMBDAS:
        W, b = ridge(F[train][fit], Y[train][fit], lam * scale)
        scores.append(np.mean((F[train][held] @ W + b).argmax(1) == y[train][held]))
    # the largest λ of the best: the smoothest of the equally accurate read-outs, which the
    # approximate codes interpolate best (a small λ fits the features' noise off the data)
    lam = LAMBDAS[max(i for i, s in enumerate(scores) if s == max(scores))]
    W, b = ridge(F[train], Y[train], lam * scale)
    accuracy = {name: np.mean((F[rows] @ W + b).argmax(1) == y[rows])
                for name, rows in (("train", train), ("test", test))}
    print(f"λ = {lam:g} x mean feature energy (held-out accuracy by λ: "
          + ", ".join(f"{v:g}: {s:.3f}" for v, s in zip(LAMBDAS, scores)) + ")")
    print(f"train accuracy {accuracy['train']:.4f}  test accuracy {accuracy['test']:.4f}")

    model = graph(layers, (W, b))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, OUT)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1024:.1f} KiB)")

    ours = run(onnx.load(OUT), X)
    theirs = F @ W + b
    np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-3)
    assert np.mean(ours.argmax(1) == theirs.argmax(1)) > 0.999
    print(f"onnxruntime matches the numpy read-out on all {len(X)} digits (max |diff| "
          f"{np.abs(ours - theirs).max():.1e}); accuracy on all digits "
          f"{np.mean(ours.argmax(1) == y):.4f}")


if __name__ == "__main__":
    main()
