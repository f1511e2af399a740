"""Robust decoding: which received results to trust when some workers lie (job.adversaries).

Each returns ``keep`` (bool per received result, rows of Y): the scheme then decodes from the
kept results with its plain decoder, and the ones not kept are the trial's flagged workers.

- ``loo_screen`` (any code whose workers have points beta; bacc, letcc, gcc): a result is
  predicted from its neighbours along beta (its leave-one-out prediction: the line through the
  two nearby results that best explain it); the result farthest from its prediction is dropped
  while it is an outlier. A liar's leave-one-out residual is its own error; an honest result's
  is the local interpolation error, small and alike among its neighbours. (Berrut's
  interpolant through all the others, tried first, spreads a lie over every prediction: on the
  digits MLP an honest residual reached 5x the median beside 10-15x for a liar's; the
  neighbours' line leaves honest ones below 3x, liars' at 30-300x.) A function whose curvature
  along beta varies a hundredfold gives honest outliers too: a false flag costs one result,
  never the decode.
- ``replica_median`` (replication): each input's copies, their coordinate-wise median; a copy
  away from it is dropped. With 2A + 1 copies of an input and at most A liars the median is an
  honest copy's value.
- ``berlekamp_welch`` (lcc): Reed–Solomon decoding over the reals. The honest results are
  values of a polynomial p of degree D; with n >= D + 1 + 2A results of which at most A are
  wrong there are E (degree A, its roots at the wrong results' points) and Q = p·E (degree
  D + A) with Q(beta_i) = y_i·E(beta_i) at every received point: a homogeneous linear system
  whose null space (the last right singular vector, in the Chebyshev basis for conditioning)
  gives E. Solved per output coordinate; each votes for the A points where |E| is smallest;
  the A most voted are dropped, which leaves n - A >= D + 1 + A results, enough for p even if
  some dropped were honest. The system's smallest two singular values are its conditioning
  (``gap``: how clearly the null space is one line).

- ``rational_locator`` (bacc; ApproxIFER's robust decoder): Berlekamp–Welch with rational
  functions in Berrut's form. The honest results are close to a rational function with poles
  at the K input points alpha; the error locator L is Berrut's interpolant on A + 1 nodes t
  (its numerator has degree A: at most A zeros), and Q = u·L has a partial fraction over
  alpha and t. Q(beta_i) = y_i·L(beta_i) at every received point is a homogeneous system whose
  SVD null space gives L, per output coordinate; each coordinate votes for the A results where
  |L| is smallest, the A most voted are dropped, and Berrut's decoder runs without them.
- ``adversarial_lambda``, ``adversarial_spline`` and ``spline_screen`` (letcc's ``robust =
  "spline"``; ``"spline-screen"`` of every code with points: bacc, letcc, gcc, gcc-manifold):
  the decoder of "General Coded Computing: Adversarial Settings" (Moradi, Akbarinodehi &
  Maddah-Ali, arXiv 2502.08058) is a second-order smoothing spline whose smoothing parameter is
  chosen for the number A of adversaries; ``spline_screen`` (ours) drops the results far from
  that fit, which needs only the received workers' beta, and the code then decodes the rest
  with its own plain decoder (docs/science.md says what each measured).

A non-finite result, or one HUGE times the median one (a bit flipped into the exponent), is
never kept.
"""

import itertools

import numpy as np
from numpy.polynomial import chebyshev

# a leave-one-out residual this many times the median one is a lie. Measured first with the
# nearest two neighbours' line (30 trials of the digits MLP, K = 10, N = 40, 2 sign-flip liars
# of 10x; 20 of tanh of a projection, whose curvature along beta varies 100-fold): 8 caught
# every liar with 0 and 12 false flags of 1170 and 780 honest results; 15 had 0 and 5 but
# missed a liar of letcc's on tanh; the residuals scaled by the neighbours' spacing, or compared
# with the largest one away from the candidate, caught fewer. With the best line within reach
# A + 1 (loo_residuals), the digits MLP's 100 trials of each of six kinds flag no honest result
# at 8 (6: up to 0.09%, 5: 0.29% and 6 dB lost on sign-flips); tanh (60 trials, 2 liars of 10x,
# bacc, letcc, gcc) flags 19-29 of 2280 honest results and misses 0-2 of 120 liars, against
# 6-30 and 2-12 with the nearest two
OUTLIER = 8.0
# the neighbours' screen looks for a pair of honest neighbours at most this many places away
# (reach A + 1 up to it; longer runs of liars are peeled by loo_screen's second step), and
# (2 * REACH choose 2) lines per result keep a decode with hundreds of liars affordable
REACH = 4
FLOOR = 1e-12     # relative to the results' size: residuals below it are round-off


HUGE = 1e6       # a result this many times the median result's size is a lie (a flipped exponent)


def finite_rows(Y):
    """The rows to consider at all: finite, and not HUGE times the median row's size (a bit
    flipped into the exponent gives 1e300: its residuals, and its neighbours', overflow)."""
    ok = np.all(np.isfinite(Y), axis=1)
    if ok.any():
        with np.errstate(over="ignore"):
            size = np.sqrt(np.sum(np.square(Y[ok]), axis=1))
        ok[ok] = size <= HUGE * max(np.median(size), 1e-300)
    return ok


def loo_residuals(points, Y, reach=1):
    """Per row, its smallest distance to a line through two others within ``reach`` places of
    it in order along the points (on either side of it or both on one side): its prediction by
    the neighbours that best explain it. ``reach`` 1 is the line through its two neighbours (at
    an end, the next two). A lie moves only the lines through it, and with ``reach`` A + 1
    every result, liar or honest, keeps a pair of honest neighbours when A liars sit side by
    side, where the nearest two let adjacent liars vouch for each other and make their honest
    neighbours look like liars (docs/science.md)."""
    n = len(points)
    order = np.argsort(points, kind="stable")
    t, Z = points[order], Y[order]
    at = np.arange(n)
    best = np.full(n, np.inf)

    def fit(i, left, right):
        w = (t[i] - t[left]) / (t[right] - t[left])
        predicted = Z[left] + w[:, None] * (Z[right] - Z[left])
        best[i] = np.minimum(best[i], np.linalg.norm(Z[i] - predicted, axis=1))

    offsets = [o for o in range(-reach, reach + 1) if o]
    for a, b in itertools.combinations(offsets, 2):
        i = at[(at + a >= 0) & (at + b < n)]
        fit(i, i + a, i + b)
    if n >= 3 and reach == 1:  # the ends, which have no line within reach 1
        fit(np.array([0, n - 1]), np.array([1, n - 2]), np.array([2, n - 3]))
    r = np.empty(n)
    r[order] = best
    return r


def loo_screen(points, Y, most):
    """Keep (bool per row of Y), in three steps, non-finite rows dropped first:
    1. the outliers among the leave-one-out residuals by the best line within reach ``most`` +
       1 (up to REACH; ``loo_residuals``) are dropped, up to 2·``most`` (``drop_outliers``);
    2. then, with three liars or more and what is left of that budget, the outliers by the
       nearest two's line, one at a time: a run of lies on a straight stretch, which step 1's
       pairs of liars explain;
    3. the dropped results that the kept ones explain (their residual by step 1's rule below
       OUTLIER times the kept ones' median) are taken back, the best explained first (one
       taken back can vouch for its dropped neighbour)."""
    finite = finite_rows(Y)
    most = liars_left(finite, most)
    if most == 0:
        return finite
    reach = min(most + 1, REACH)
    keep, size = drop_outliers(Y, 2 * most, lambda idx: loo_residuals(points[idx], Y[idx], reach),
                               points, reach, keep=finite)
    if most >= 3:
        # three or more lies side by side on a straight stretch explain one another by some
        # pair (3000 results of sines with 300 liars: 6 missed without this step); the nearest
        # two's line peels such a run from its ends. Not below three liars, which make no such
        # run: there its line across the gap that step 1 left flagged honest neighbours (letcc
        # and gcc, sign-flips: -25.3 and -28.6 dB against -32.2 and -33.6)
        keep, _ = drop_outliers(Y, 2 * most - int((finite & ~keep).sum()),
                                lambda idx: loo_residuals(points[idx], Y[idx]), keep=keep)
    if keep.sum() < 4:
        return keep
    kept = np.flatnonzero(keep)
    bar = max(OUTLIER * np.median(loo_residuals(points[kept], Y[kept], reach)), FLOOR * size)

    def residual(i):
        """i's residual among the kept results: only the ``reach`` nearest on either side
        along the points enter it, so it is computed from them alone."""
        kept = np.flatnonzero(keep)
        kept = kept[np.argsort(points[kept], kind="stable")]
        at = np.searchsorted(points[kept], points[i])
        idx = np.append(kept[max(at - reach, 0):at + reach], i)
        return loo_residuals(points[idx], Y[idx], reach)[-1]

    dropped = np.flatnonzero(~keep & finite)
    for i in dropped[np.argsort([residual(i) for i in dropped], kind="stable")]:
        if residual(i) <= bar:
            keep[i] = True
    return keep


def replica_median(owner, Y, rtol=1e-9):
    """Keep (bool per row): the copies of each input (``owner``: its input per row) within
    ``rtol`` of their coordinate-wise median (relative to the median's size)."""
    keep = finite_rows(Y)
    for k in np.unique(owner):
        rows = np.flatnonzero((owner == k) & keep)
        if len(rows) < 3:  # one or two copies: no majority to tell the liar by
            continue
        med = np.median(Y[rows], axis=0)
        tol = rtol * max(np.linalg.norm(med), 1e-300)
        keep[rows] = np.linalg.norm(Y[rows] - med, axis=1) <= tol
    return keep


def bw_null(points, y, D, A):
    """(E's values at ``points``, singular-value gap) of the Berlekamp–Welch system of one
    output coordinate ``y``: Q (degree D + A) and E (degree A) in the Chebyshev basis."""
    TQ = chebyshev.chebvander(points, D + A)
    TE = chebyshev.chebvander(points, A)
    M = np.hstack([TQ, -y[:, None] * TE])
    norms = np.linalg.norm(M, axis=0).clip(1e-300)  # columns of one size: the conditioning
    _, s, Vt = np.linalg.svd(M / norms)
    e = Vt[-1, TQ.shape[1]:] / norms[TQ.shape[1]:]
    gap = s[-2] / s[-1] if s[-1] > 0 else np.inf
    return TE @ e, gap


def berlekamp_welch(points, Y, D, A):
    """(keep, gap): the results to decode from (bool per row; None: more than A are wrong,
    ``consistent_with``) and the median singular-value gap of the per-coordinate systems
    (large: the wrong results are clearly located)."""
    keep = finite_rows(Y)
    A_left = liars_left(keep, A)
    if A_left == 0:
        return consistent_with(points, Y, keep, D), np.nan
    idx = np.flatnonzero(keep)
    Yk = Y[idx] / max(np.abs(Y[idx]).max(), 1e-300)  # one scale for every coordinate
    votes, gaps = np.zeros(len(idx)), []
    for j in range(Yk.shape[1]):
        E, gap = bw_null(points[idx], Yk[:, j], D, A_left)
        gaps.append(gap)
        votes[np.argsort(np.abs(E), kind="stable")[:A_left]] += 1
    dropped = np.argsort(-votes, kind="stable")[:A_left]
    keep[idx[dropped]] = False
    return consistent_with(points, Y, keep, D), float(np.median(gaps))


def consistent_with(points, Y, keep, D, rtol=1e-6):
    """Keep (bool per row): the finite results on the degree-D polynomial fit to the ``keep``
    ones (a dropped result that was honest is taken back: it was not a lie); None when the
    kept results themselves are not on one polynomial (more wrong results than corrected)."""
    coef = chebyshev.chebfit(points[keep], Y[keep], D)
    fit = chebyshev.chebval(points, coef).T.reshape(Y.shape)
    scale = max(np.linalg.norm(Y[keep]) / np.sqrt(keep.sum()), 1e-300)
    with np.errstate(invalid="ignore", over="ignore"):
        near = np.linalg.norm(Y - fit, axis=1) <= rtol * scale
    if not near[keep].all():
        return None
    return near & finite_rows(Y)


def berrut_weights(nodes, z):
    """(W, 1/g): W[i, j] = (-1)^j / (z_i - t_j) / g(z_i) with g(z) = sum_j (-1)^j / (z - t_j),
    Berrut's basis on ``nodes`` t in their given order (ApproxIFER's sign convention), and 1/g
    (0 at a node, its limit). In this form the locator's system has finite entries where a
    worker's point falls on a node, which the formula as written divides by zero at."""
    signs = (-1.0) ** np.arange(len(nodes))
    diff = z[:, None] - nodes[None, :]
    hit = diff == 0
    with np.errstate(divide="ignore", invalid="ignore"):
        C = signs / diff
        g = C.sum(axis=1)
        W = C / g[:, None]
    rows = hit.any(axis=1)
    W[rows] = hit[rows]  # at node j: its limit, 1 there and 0 elsewhere
    inv_g = np.where(rows, 0.0, 1.0 / np.where(rows, 1.0, g))
    return W, inv_g


def locator_nodes(A):
    """ApproxIFER's A + 1 nodes of the error locator: Chebyshev points of the first kind."""
    return np.cos((2 * np.arange(A + 1) + 1) * np.pi / (2 * (A + 1)))


def locator_system(points, alpha, A):
    """(M_fixed, L): the columns of ApproxIFER's system that do not depend on y — 1/((z -
    alpha_j) g_alpha g_t) and 1/((z - t_j) g_alpha g_t) for t_j not an alpha — and L
    (n x (A + 1)), the locator's basis (its column times -y completes the system; L @ b is the
    locator's values).
    Written with Berrut's basis so that every entry is finite."""
    t = locator_nodes(A)
    Wa, inv_ga = berrut_weights(alpha, points)
    Wt, inv_gt = berrut_weights(t, points)
    sa = (-1.0) ** np.arange(len(alpha))
    st = (-1.0) ** np.arange(len(t))
    # 1/((z - a_j) g_a g_t) = (-1)^j W_a[:, j] / g_t, and likewise with a and t swapped
    fixed = np.hstack([Wa * sa * inv_gt[:, None], Wt * st * inv_ga[:, None]])
    # a node shared by alpha and t (0, for odd K and even A) gives two equal columns, whose
    # difference is a null vector with no locator in it (b = 0): with both the locator found 1
    # of 20 liar pairs at K = 5, A = 2 (tanh, N = 30), with one 9 of 20 (13 of 20 at K = 6)
    shared = np.isclose(t[:, None], alpha[None, :], rtol=0, atol=1e-12).any(axis=1)
    return np.hstack([fixed[:, :len(alpha)], fixed[:, len(alpha):][:, ~shared]]), Wt


def rational_locator(points, alpha, Y, A):
    """(keep, gap) of ApproxIFER's robust BACC decoder for the received results ``Y`` at
    ``points`` (beta of the received), inputs at ``alpha``, up to ``A`` wrong results.

    Follows Workstation-MNIST-Approximate-error-locator.py (welch_decoder and decoder) of
    github.com/Mahdi-Soleymani/Approxifer: per output coordinate the last right singular vector
    of [fixed, -y·L] gives the locator's values b at its nodes, the A smallest |L @ b| get a
    vote, and the A most voted results are dropped. Two changes: the locator is evaluated at
    the received points only (theirs at all N, so a straggler could take a vote), and the
    columns are scaled to one norm before the SVD, as the lcc decoder's (``bw_null``)."""
    keep = finite_rows(Y)
    A_left = liars_left(keep, A)
    idx = np.flatnonzero(keep)
    if A_left == 0 or len(idx) <= A_left:
        return keep, np.nan
    fixed, L = locator_system(points[idx], alpha, A_left)
    Yk = Y[idx] / max(np.abs(Y[idx]).max(), 1e-300)
    votes, gaps = np.zeros(len(idx)), []
    for j in range(Yk.shape[1]):
        M = np.hstack([fixed, -Yk[:, j, None] * L])
        norms = np.linalg.norm(M, axis=0).clip(1e-300)
        _, s, Vt = np.linalg.svd(M / norms)
        b = Vt[-1, fixed.shape[1]:] / norms[fixed.shape[1]:]
        gaps.append(s[-2] / s[-1] if s[-1] > 0 else np.inf)
        votes[np.argsort(np.abs(L @ b), kind="stable")[:A_left]] += 1
    keep[idx[np.argsort(-votes, kind="stable")[:A_left]]] = False
    return keep, float(np.median(gaps))


# The adversarial spline's lambda (sum-of-squares form, points on [-1, 1]): ADV_C * n *
# (A / N)^(8/5). The paper's rule was not found in the sources at hand (docs/science.md); the
# exponent is what its rate implies: a bias of order lambda^(3/4) (a bandwidth h = lambda^(1/4),
# error h^3) against A lies of bounded size spread over a window of h·N results, (A / (N h))^2,
# balance at lambda ~ (A / N)^(8/5), where the error is (A / N)^(6/5) = N^((6/5)(a - 1)) for
# A = N^a. The constant was measured (digits MLP, K = 10, N = 40, 2 liars, 100 trials, its
# screen): 1e-4 let honest residuals reach 8x the median, 1e-2 and above smoothed sign-flips of
# 10x into their neighbours (-30.5, -12.0 dB against -32.2 at 1e-3)
ADV_C = 1e-3


def adversarial_lambda(n, N, A):
    """The smoothing parameter of the adversarial spline fitting n results of N workers against
    A adversaries (at least one: without any the rule would interpolate)."""
    return ADV_C * n * (max(A, 1) / N) ** 1.6


def adversarial_spline(points):
    """The adversarial spline's smoother through results at ``points`` (the received workers'
    beta, on [-1, 1], where ADV_C was measured), evaluated at the same points: the natural cubic
    smoothing spline letcc decodes with (SmoothingCode.smoother's "dec" side at z = t, windowed
    above WINDOWED_ABOVE results as there). It needs only the points, so any code whose workers
    have points can screen with it, whatever its own decoder."""
    # not smoothing_code's own smoother: that module imports base, which imports this one
    from .kernels import spline_semikernel
    from .kernel_smoother import KernelSmoother
    from .windowed import WINDOWED_ABOVE, WindowedSmoother

    points = np.asarray(points, float)
    smoother = WindowedSmoother if len(points) > WINDOWED_ABOVE else KernelSmoother
    return smoother(points, points, spline_semikernel, 2)  # 2: lines are not penalised


def spline_screen(points, Y, N, most):
    """Keep (bool per row of Y, the results at ``points`` of N workers' beta): the result
    farthest from the adversarial spline through the kept ones (``adversarial_spline``, lambda
    ``adversarial_lambda`` for ``most`` adversaries) is dropped while its residual is OUTLIER
    times the median one, up to 2·``most`` times. Unlike the neighbours' line, the fit is pulled
    little by a lie (lambda is chosen for that), so a liar's residual is about its own error
    while an honest one's is the spline's bias."""
    def residuals(idx):
        fit = adversarial_spline(points[idx]).apply(
            Y[idx], adversarial_lambda(len(idx), N, most))
        return np.linalg.norm(Y[idx] - fit, axis=1)

    finite = finite_rows(Y)
    return drop_outliers(Y, 2 * liars_left(finite, most), residuals, keep=finite)[0]


def liars_left(finite, most):
    """The liars a decoder still looks for once the rows ``finite_rows`` refused (each a lie)
    are counted (the screens, lcc's Berlekamp–Welch, bacc's locator): a screen's drops would
    otherwise go to honest results (a bit flipped into the exponent of 2 of 2 liars left bacc
    4 drops among 21 honest results, and honest workers named in 60-87% of the trials)."""
    return max(most - int((~finite).sum()), 0)


def drop_outliers(Y, budget, residuals, points=None, reach=0, keep=None):
    """(keep, size): the rows of Y kept (of ``keep``, else the finite ones) once the one with
    the largest of ``residuals(idx)`` (over the kept rows ``idx``) was dropped while it is
    OUTLIER times the median one (and above FLOOR times ``size``, the median result's norm),
    up to ``budget`` in all — 2A: two lies side by side make an honest neighbour look like
    one. With ``points``, each round drops every outlier that is the largest within ``reach``
    places of it along them: a residual judged by its neighbours is moved only by the lies
    within reach, so outliers farther apart are separate lies, and hundreds of liars take a
    few rounds, not one round each."""
    keep = finite_rows(Y) if keep is None else keep.copy()
    size = np.median(np.linalg.norm(Y[keep], axis=1)) if keep.any() else 0.0
    while budget > 0:
        idx = np.flatnonzero(keep)
        if len(idx) < 4:
            break
        r = residuals(idx)
        out = r > max(OUTLIER * np.median(r), FLOOR * size)
        if not out.any():
            break
        worst = np.flatnonzero(out & local_max(points[idx], r, reach)) if points is not None \
            else [int(np.argmax(r))]
        worst = sorted(worst, key=lambda j: -r[j])[:budget]
        keep[idx[worst]] = False
        budget -= len(worst)
    return keep, size


def local_max(points, r, reach):
    """Bool per entry of r: it is the largest of r within ``reach`` places along ``points``
    (ties: the first)."""
    order = np.argsort(points, kind="stable")
    padded = np.concatenate([np.full(reach, -np.inf), r[order], np.full(reach, -np.inf)])
    windows = np.lib.stride_tricks.sliding_window_view(padded, 2 * reach + 1)
    is_max = np.empty(len(r), bool)
    is_max[order] = np.argmax(windows, axis=1) == reach
    return is_max
