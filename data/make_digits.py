"""Write ``gcc_mpi/_data/digits.npz``: the UCI optical digits as shipped with scikit-learn.

Rerun from the repository root (scikit-learn is a dev-only dependency)::

    python data/make_digits.py

The archive holds ``X`` (1797 x 64, uint8, pixel counts 0..16) and ``y`` (uint8 labels 0..9).
``gcc_mpi.job.datasets`` divides X by 16 at load time; uint8 keeps the file about 4x smaller than
float32 and loses nothing, since the pixels are integers.
"""

from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

OUT = Path(__file__).resolve().parents[1] / "gcc_mpi" / "_data" / "digits.npz"


def main():
    digits = load_digits()
    X = digits.data
    assert X.shape == (1797, 64) and X.min() == 0 and X.max() == 16
    assert np.array_equal(X, np.round(X))  # integer pixel counts, so uint8 is lossless
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, X=X.astype(np.uint8), y=digits.target.astype(np.uint8))
    print(f"wrote {OUT} ({OUT.stat().st_size / 1024:.1f} KiB)")


if __name__ == "__main__":
    main()
