"""User functions and data for the workloads of benchmarks/lengthscale.py (targets of kind
"python", as a user would write them). Each is fixed by its own seed, so every run is the same."""

import numpy as np


def _weights(seed, shape):
    return np.random.default_rng(seed).standard_normal(shape)


def tanh_features(X):
    """A random two-layer tanh network R^d -> R^6 (not a classifier): smooth, non-polynomial."""
    d = X.shape[1]
    W1, W2 = _weights(11, (d, 32)) / np.sqrt(d), _weights(12, (32, 6)) / np.sqrt(32)
    return np.tanh(2.0 * X @ W1) @ W2


def softmax_scores(X):
    """A random linear classifier with a softmax R^d -> R^5 (probabilities: outputs in [0, 1])."""
    d = X.shape[1]
    Z = 3.0 * X @ _weights(21, (d, 5)) / np.sqrt(d)
    Z = np.exp(Z - Z.max(axis=1, keepdims=True))
    return Z / Z.sum(axis=1, keepdims=True)


softmax_scores.classifier = True


def sine_field(X):
    """sin and cos of a few random projections R^d -> R^8: oscillating, unit scale."""
    d = X.shape[1]
    P = 4.0 * X @ _weights(31, (d, 4)) / np.sqrt(d)
    return np.concatenate([np.sin(P), np.cos(P)], axis=1)


def bump_field(X):
    """Gaussian bumps around 6 random centres of the inputs' scale R^d -> R^6: smooth and local
    (added in session 2, for held-out workloads only)."""
    d = X.shape[1]
    C = _weights(51, (6, d)) / np.sqrt(d)
    D2 = ((X[:, None, :] - C[None]) ** 2).sum(axis=2)
    return np.exp(-D2 / (2 * 0.5**2))


def blurred_digits(path):
    """User data: the shipped digits blurred with their four neighbours and jittered (a data
    file a user might bring: 1797 rows of 64 pixels). Written to ``path`` (.npy)."""
    from gcc_mpi.job.datasets import load_dataset
    X = load_dataset("digits").X.reshape(-1, 8, 8)
    B = X.copy()
    B[:, 1:] += X[:, :-1]
    B[:, :-1] += X[:, 1:]
    B[:, :, 1:] += X[:, :, :-1]
    B[:, :, :-1] += X[:, :, 1:]
    B = B / 5 + 0.02 * np.random.default_rng(41).standard_normal(B.shape)
    np.save(path, B.reshape(len(B), -1))


def relu_sigmoid(X):
    """A random three-layer ReLU network with sigmoid outputs R^d -> R^4 (added in session 3,
    for held-out workloads only: piecewise linear inside, saturating outside)."""
    d = X.shape[1]
    H = np.maximum(X @ _weights(61, (d, 48)) * (3.0 / np.sqrt(d)), 0.0)
    H = np.maximum(H @ _weights(62, (48, 24)) / np.sqrt(48) - 0.2, 0.0)
    return 1.0 / (1.0 + np.exp(-(H @ _weights(63, (24, 4)) / np.sqrt(24))))


def cosine_product(X):
    """Products of cosines of random projections R^d -> R^3 (session 3, held out only)."""
    d = X.shape[1]
    P = 2.0 * X @ _weights(71, (d, 6)) / np.sqrt(d)
    C = np.cos(P)
    return np.stack([C[:, 0] * C[:, 1], C[:, 2] * C[:, 3], C[:, 4] * C[:, 5]], axis=1)


def trefoil(path):
    """User data: 2000 points of a trefoil knot, randomly rotated into R^24 with a little noise
    (a manifold none of the data sources has; session 3, held out only). Written to ``path``."""
    rng = np.random.default_rng(81)
    t = rng.uniform(0, 2 * np.pi, 2000)
    C = np.stack([np.sin(t) + 2 * np.sin(2 * t), np.cos(t) - 2 * np.cos(2 * t), -np.sin(3 * t)], 1)
    Q, _ = np.linalg.qr(rng.standard_normal((24, 24)))
    X = C / 3 @ Q[:3] + 0.01 * rng.standard_normal((2000, 24))
    np.save(path, X)


def silu_net(X):
    """A random two-layer network with SiLU units x sigmoid(x) R^d -> R^6 and a softmax on top
    (issue 29, for held-out workloads only: smooth, but neither polynomial nor piecewise linear)."""
    d = X.shape[1]
    Z = X @ _weights(91, (d, 40)) * (2.0 / np.sqrt(d))
    H = Z / (1.0 + np.exp(-Z))
    S = 2.0 * H @ _weights(92, (40, 6)) / np.sqrt(40)
    S = np.exp(S - S.max(axis=1, keepdims=True))
    return S / S.sum(axis=1, keepdims=True)


silu_net.classifier = True


def biased_relu(X):
    """A random two-layer ReLU network R^d -> R^5 whose outputs share a large bias, as logits
    often do (issue 29's second held-out set only: written after the first had been looked at)."""
    d = X.shape[1]
    H = np.maximum(X @ _weights(101, (d, 32)) * (2.0 / np.sqrt(d)) + 0.1, 0.0)
    return 3.0 + H @ _weights(102, (32, 5)) / np.sqrt(32)


biased_relu.classifier = True


def logsumexp_field(X):
    """log-sum-exp of groups of random projections R^d -> R^3: smooth and convex (issue 29's
    second held-out set only)."""
    d = X.shape[1]
    P = 2.0 * X @ _weights(111, (d, 12)) / np.sqrt(d)
    return np.log(np.exp(P.reshape(len(X), 3, 4)).sum(axis=2))
