"""Train the shipped digits classifier and write ``gcc_mpi/_data/digits_mlp.npz``.

Rerun from the repository root after ``data/make_digits.py`` (scikit-learn is dev-only)::

    python data/train_digits_mlp.py

Reproducible: fixed split (25 % test, stratified, random_state=0) and random_state=0 for the
network.  Inputs are X/16 in [0, 1], the scaling ``gcc_mpi.job.datasets`` applies to ``digits``.
The archive holds W0, b0, W1, b1, W2, b2 (float64, W of shape (inputs, outputs)) and
``activation`` = "relu"; the network output is the logits (no softmax).  The script checks
that gcc_mpi's numpy forward pass predicts the same classes as scikit-learn.
"""

import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neural_network import MLPClassifier

from gcc_mpi.job.datasets import load_dataset
from gcc_mpi.targets.mlp import MLPTarget

OUT = Path(__file__).resolve().parents[1] / "gcc_mpi" / "_data" / "digits_mlp.npz"


def main():
    digits = load_dataset("digits")
    X, y = digits.X, digits.labels
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, stratify=y, random_state=0)
    clf = MLPClassifier(hidden_layer_sizes=(64, 32), activation="relu", random_state=0,
                        max_iter=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)  # a half-trained net must not ship
        clf.fit(X_train, y_train)
    print(f"train accuracy {clf.score(X_train, y_train):.4f}  "
          f"test accuracy {clf.score(X_test, y_test):.4f}  ({clf.n_iter_} iterations)")
    assert list(clf.classes_) == list(range(10))  # so logit column j is digit j

    arrays = {}
    for i, (W, b) in enumerate(zip(clf.coefs_, clf.intercepts_)):
        arrays[f"W{i}"], arrays[f"b{i}"] = W.astype(np.float64), b.astype(np.float64)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, activation=np.array(clf.activation), **arrays)
    print(f"wrote {OUT} ({OUT.stat().st_size / 1024:.1f} KiB)")

    target = MLPTarget.load(OUT)
    ours, theirs = target(X).argmax(axis=1), clf.predict_proba(X).argmax(axis=1)
    assert np.array_equal(ours, theirs), f"{np.sum(ours != theirs)} predictions differ"
    print(f"numpy forward pass matches sklearn predict_proba argmax on all {len(X)} digits; "
          f"accuracy on all digits {np.mean(ours == y):.4f}")


if __name__ == "__main__":
    main()
