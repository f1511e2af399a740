"""Where a batch lies on its data manifold: graph-based 1-D orderings and placements of alpha.

A batch of K inputs (optionally with a reference pool from the same source) becomes a
k-nearest-neighbour graph with heat-kernel weights. From it come
- ``fiedler``: the order of the Fiedler vector of the graph Laplacian (a 1-D Laplacian eigenmap);
- ``geodesic``: a short open tour through the batch under graph (geodesic) distances,
  nearest-neighbour start then 2-opt, so neighbours on the manifold become neighbours in alpha;
and the placement of alpha along the order:
- ``chebyshev``: the j-th point of the order gets the j-th Chebyshev point;
- ``arclength``: Chebyshev points warped by the normalised geodesic arc length along the order,
  so the encoder curve moves through the data at an even pace.
"""

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path
from scipy.spatial.distance import cdist


def knn_distances(Z, k):
    """Symmetric kNN graph of the rows of Z as a dense matrix of edge lengths (inf = no edge)."""
    n = len(Z)
    D = cdist(Z, Z)
    k = min(k, n - 1)
    G = np.full((n, n), np.inf)
    nearest = np.argsort(D, axis=1)[:, 1:k + 1]
    rows = np.repeat(np.arange(n), k)
    G[rows, nearest.ravel()] = D[rows, nearest.ravel()]
    G = np.minimum(G, G.T)
    np.fill_diagonal(G, 0.0)
    return G, D


def heat_weights(G):
    """Heat-kernel weights exp(-d^2 / sigma^2) on the edges, sigma = median edge length."""
    edges = np.isfinite(G) & (G > 0)
    sigma = np.median(G[edges]) if edges.any() else 1.0
    W = np.where(edges, np.exp(-(G / sigma) ** 2), 0.0)
    return W


def geodesic(G, D):
    """Shortest-path distances through the graph; pairs in different components keep their
    straight-line distance scaled up, so a disconnected graph still gives a usable order."""
    finite = np.where(np.isfinite(G), G, 0.0)
    P = shortest_path(csr_matrix(finite), method="D", directed=False)
    return np.where(np.isfinite(P), P, D * 10.0)


def fiedler_order(W, eps=1e-9):
    """Order of the Fiedler vector of L = D - W (a small all-to-all weight keeps it connected)."""
    n = len(W)
    A = W + eps * W.max(initial=1.0) * (1 - np.eye(n))
    L = np.diag(A.sum(1)) - A
    vals, vecs = np.linalg.eigh(L)
    return np.argsort(vecs[:, 1], kind="stable")


def path_length(D, order):
    return D[order[:-1], order[1:]].sum()


def two_opt(D, order):
    """Shorten an open path by 2-opt: repeatedly apply the segment reversal that helps most.
    A dummy point at distance 0 from all closes the path, so prefixes and suffixes reverse too.
    Each step scores every (i, j) pair at once, O(K^2) in numpy."""
    n = len(order)
    Dp = np.zeros((n + 1, n + 1))
    Dp[:n, :n] = D
    path = np.concatenate([[n], order, [n]])
    upper = np.triu(np.ones((n + 1, n + 1), bool), 2)  # j >= i + 2
    for _ in range(10 * n):  # each step shortens the path; the bound only guards rounding
        a, b = path[:-1], path[1:]  # edge i runs from a[i] to b[i]
        gain = (Dp[a, b][:, None] + Dp[a, b][None, :]
                - Dp[a[:, None], a[None, :]] - Dp[b[:, None], b[None, :]])
        gain[~upper] = 0.0
        i, j = np.unravel_index(np.argmax(gain), gain.shape)
        if gain[i, j] <= 1e-12 * Dp[a, b].sum():
            break
        # edges (a_i,b_i),(a_j,b_j) -> (a_i,a_j),(b_i,b_j)
        path[i + 1:j + 1] = path[i + 1:j + 1][::-1].copy()
    return path[1:-1]


def tour_order(D):
    """A short open path through all points: nearest neighbour from each end of the diameter,
    the better one, then 2-opt."""
    n = len(D)
    if n <= 2:
        return np.arange(n)
    best = None
    for start in np.unravel_index(np.argmax(D), D.shape):
        order, left = [start], np.ones(n, bool)
        left[start] = False
        for _ in range(n - 1):
            nxt = np.flatnonzero(left)[np.argmin(D[order[-1], left])]
            order.append(nxt)
            left[nxt] = False
        order = two_opt(D, np.array(order))
        if best is None or path_length(D, order) < path_length(D, best):
            best = order
    return best


def place_alpha(order, D, placement, K):
    """Alpha for each input in its original position (length K), given the 1-D order."""
    if placement == "arclength" and K > 1:  # one input has no arc to follow
        steps = D[order[:-1], order[1:]]
        steps = np.maximum(steps, 1e-3 * max(steps.mean(), 1e-300))  # distinct points always
        u = np.concatenate([[0.0], np.cumsum(steps)]) / steps.sum() * (K - 1)
    else:
        u = np.arange(K, dtype=float)
    alpha = np.empty(K)
    alpha[order] = np.cos((2 * u + 1) * np.pi / (2 * K)) if K > 1 else 0.0
    return alpha


def manifold_alpha(X, *, neighbors=8, ordering="geodesic", placement="chebyshev", pool=None):
    """Per-input alpha (K,) placing the batch X along its manifold, and the graph weights of the
    batch (for an optional Laplacian penalty)."""
    K = len(X)
    Z = X if pool is None or len(pool) == 0 else np.vstack([X, pool])
    G, Dz = knn_distances(Z, neighbors)
    Dg = geodesic(G, Dz)[:K, :K]
    W = heat_weights(G)
    if ordering == "fiedler":
        order = fiedler_order(W)
        order = order[order < K]  # the batch's points in the pool's order
    elif ordering == "geodesic":
        order = tour_order(Dg)
    else:
        order = np.arange(K)
    return place_alpha(order, Dg, placement, K), W[:K, :K]
