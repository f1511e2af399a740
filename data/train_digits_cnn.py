"""Train the shipped digits CNN and write ``gcc_mpi/_data/digits_cnn.onnx``.

Rerun from the repository root after ``data/make_digits.py`` (torch, onnx, onnxscript and
scikit-learn are dev-only; onnxruntime is the ``[onnx]`` extra)::

    python data/train_digits_cnn.py

A LeNet-style network for the 8x8 digits, inputs X/16 in [0, 1] shaped (n, 1, 8, 8):

    conv 1->8 3x3 (pad 1), ReLU, conv 8->16 3x3 (pad 1), ReLU, max-pool 2x2,
    flatten (16*4*4 = 256), linear 256->32, ReLU, linear 32->10 (logits, no softmax)

Reproducible (the .onnx comes out byte for byte the same): the same split as
``train_digits_mlp.py`` (25 % test, stratified, random_state=0), torch seeded, deterministic
algorithms, one thread, minibatch order from a seeded generator.  Trains in about 10 s on one
CPU core.  The export has opset 18 (IR version 8, so onnxruntime >= 1.16 reads it), input
``x`` of shape (batch, 1, 8, 8) with a dynamic batch axis and output ``logits`` of shape
(batch, 10); the script checks onnxruntime's outputs against torch's on every digit.
"""

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from sklearn.model_selection import train_test_split
from torch import nn

from gcc_mpi.job.datasets import load_dataset

OUT = Path(__file__).resolve().parents[1] / "gcc_mpi" / "_data" / "digits_cnn.onnx"
EPOCHS, BATCH, LR = 60, 32, 3e-3


def lenet():
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(),
        nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(),
        nn.Linear(16 * 4 * 4, 32), nn.ReLU(),
        nn.Linear(32, 10),
    )


def accuracy(model, X, y):
    with torch.no_grad():
        return (model(X).argmax(1) == y).float().mean().item()


def main():
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)

    digits = load_dataset("digits")
    X = digits.X.reshape(-1, 1, 8, 8).astype(np.float32)
    X_train, X_test, y_train, y_test = train_test_split(
        X, digits.labels, test_size=0.25, stratify=digits.labels, random_state=0)
    X_train, X_test = torch.from_numpy(X_train), torch.from_numpy(X_test)
    y_train, y_test = torch.from_numpy(y_train), torch.from_numpy(y_test)

    model = lenet()
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, EPOCHS)
    order = torch.Generator().manual_seed(0)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(EPOCHS):
        model.train()
        for idx in torch.randperm(len(X_train), generator=order).split(BATCH):
            opt.zero_grad()
            loss_fn(model(X_train[idx]), y_train[idx]).backward()
            opt.step()
        sched.step()
    model.eval()
    print(f"train accuracy {accuracy(model, X_train, y_train):.4f}  "
          f"test accuracy {accuracy(model, X_test, y_test):.4f}  ({EPOCHS} epochs)")

    OUT.parent.mkdir(parents=True, exist_ok=True)
    batch = torch.export.Dim("batch", min=1)
    program = torch.onnx.export(model, (torch.zeros(2, 1, 8, 8),), input_names=["x"],
                                output_names=["logits"], dynamic_shapes=({0: batch},),
                                opset_version=18, dynamo=True, external_data=False)
    proto = program.model_proto
    proto.doc_string = "gcc_mpi digits CNN (data/train_digits_cnn.py); input x = pixels/16"
    proto.ir_version = 8   # what opset 18 needs; torch writes 10, which onnxruntime < 1.18 refuses
    onnx.checker.check_model(proto)
    onnx.save(proto, OUT)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1024:.1f} KiB)")

    X_all = torch.from_numpy(X)
    with torch.no_grad():
        theirs = model(X_all).numpy()
    session = ort.InferenceSession(str(OUT), providers=["CPUExecutionProvider"])
    ours = session.run(["logits"], {"x": X})[0]
    np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4)
    assert np.array_equal(ours.argmax(1), theirs.argmax(1))
    print(f"onnxruntime matches torch on all {len(X)} digits (max |diff| "
          f"{np.abs(ours - theirs).max():.1e}); accuracy on all digits "
          f"{np.mean(ours.argmax(1) == digits.labels):.4f}")


if __name__ == "__main__":
    main()
