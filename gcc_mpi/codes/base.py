"""The interface every scheme implements: a linear code over the reals.

A scheme is built once for its points (N workers, K inputs) and precomputes what it can: the
encoder matrix E (N x K) and, per received set, the decoder. ``encode(X)`` gives the coded inputs
for the active workers; ``decode(received, Y)`` gives Y_hat (K x m) from the results of the
workers in ``received`` (any order, rows of Y aligned with it). A plug-in scheme (a class named
in ``code.schemes``, docs/own-scheme.md) implements the same interface, usually by subclassing
``LinearCode``, and ``check_code`` tries it on a small batch before any work.
"""

from collections import OrderedDict

import numpy as np

from ..errors import JobError
from ..job.records import FIELDS

class DecodeError(RuntimeError):
    """Too few (or the wrong) results to decode: the trial is recorded as failed with this
    reason."""


class LinearCode:
    """A linear code over the reals for N workers and K inputs: the scheme interface.

    The simulator and the MPI master call a scheme's ``encode`` once per trial and its
    ``decode`` once the stop rule says the received results suffice; an exact scheme is also
    asked ``decodable`` as results arrive. A subclass sets ``E`` (or overrides ``encode``) and
    implements ``decode_matrix`` (or overrides ``decode``); the rest has working defaults.

    Parameters
    ----------
    N, K : int
        Workers and inputs per batch (N >= K). A job passes them first, then the options of
        its ``[code.<scheme>]`` table as keyword arguments.
    alpha, beta : ndarray, optional
        The points of the inputs (K,) and of the workers (N,), for schemes that have them.

    Attributes
    ----------
    exact : bool
        True: ``decode`` recovers f(X) exactly (to round-off) from any received set for which
        ``decodable`` is true, so waiting for more results gains nothing and the stop rule stops
        at the first decodable set. False (approximate): accuracy improves with more results,
        and the stop rule waits for the fastest N - S.
    trial_alpha : bool
        True: ``encode`` chooses each trial's points and reports them as ``info["alpha"]``
        (shape (K,)); ``decode`` then gets them back as ``alpha``.
    uses_inputs : bool
        True: ``decode`` also gets the trial's batch and coded inputs as ``inputs``.
    active : ndarray of int
        The workers that get a coded input (default: all N); the others idle.
    """

    # exact schemes decode f(X) exactly once decodable; approximate ones improve with more results
    exact = False
    trial_alpha = False  # True: encode chooses each trial's alpha and reports it as info["alpha"]
    # True: decode also takes ``inputs`` = (X, coded inputs of the active workers) of the trial
    uses_inputs = False

    def __init__(self, N, K, alpha=None, beta=None):
        self.N, self.K = N, K
        self.alpha, self.beta = alpha, beta
        self.active = np.arange(N)  # workers that get a coded input
        self.E = None
        # received sets remembered: with few workers the same sets recur often; with thousands
        # they hardly ever do, and a decoder holds O(N^2) numbers (1 GB for 30 at N = 4096)
        self.cache_size = int(np.clip(2**20 // N**2, 4, 256))
        self._cache = OrderedDict()
        self.robust, self.robust_method, self.errors = False, None, 0  # set_robust

    # robust decoders a scheme offers by name (code.<scheme>.robust = "<name>")
    robust_methods = ()
    # what robust = true (or "auto" with adversaries) decodes with: "screen", the neighbours'
    # leave-one-out screen, or "spline-screen", the adversarial spline's (codes/robust.py). The
    # neighbours' screen for every built-in: on the mean over six adversary kinds and on the
    # worst kind it beats the spline's for each (docs/science.md, "The spline screen for every
    # code with points"); a scheme whose own measurement says otherwise sets its own
    robust_true = "screen"

    def set_robust(self, robust, errors):
        """Decode robustly against up to ``errors`` wrong results: ``trusted`` picks the results
        to decode from, the others are the trial's ``flagged`` workers. ``robust``: True, False
        ("auto" without a job to resolve it is off) or one of ``robust_methods``."""
        self.robust = robust is True or robust in self.robust_methods
        self.robust_method = robust if robust in self.robust_methods else None
        self.errors = int(errors)

    @property
    def robust_choice(self):
        """The robust decoder a robust decode uses: the one named, else what true means."""
        return self.robust_method or self.robust_true

    # -- encoding ---------------------------------------------------------------------------
    def encode(self, X):
        """Encode one batch.

        Parameters
        ----------
        X : ndarray, shape (K, d)
            The batch's inputs, one per row.

        Returns
        -------
        X_coded : ndarray, shape (len(active), d)
            Row i is the coded input of worker ``active[i]``.
        info : dict
            Encoder facts recorded with the trial, e.g. ``{"lambda_enc": 1e-6}`` or, when
            ``trial_alpha``, ``{"alpha": ...}``: numbers or fixed-shape arrays, under names that
            are not the record's own (``records.FIELDS``).
        """
        return self.E[self.active] @ X, {}

    # -- decoding ---------------------------------------------------------------------------
    def decodable(self, received_mask):
        """Whether the results of the workers in ``received_mask`` (bool, length N) suffice.

        For an exact scheme: whether ``decode`` is exact from them. It must stay true as
        results are added (the stop rule bisects on it) and be false for no results.
        """
        return bool(received_mask.any())

    def decode_matrix(self, received):
        """(D, info) with Y_hat = D @ Y[received]; ``received`` sorted ascending. Override."""
        raise NotImplementedError

    def decode(self, received, Y, alpha=None, inputs=None):
        """Decode f(X) from the results received.

        Parameters
        ----------
        received : array of int, shape (n,)
            The workers whose results arrived, in any order.
        Y : ndarray, shape (n, m)
            Their results f(x_coded), row i from worker ``received[i]``.
        alpha : ndarray, shape (K,), optional
            The trial's points when ``encode`` chose them (``info["alpha"]``); None: the
            code's own.
        inputs : (X, X_coded), optional
            The trial's batch and the coded inputs of the active workers, for a code that
            ``uses_inputs`` (the master has both: it encoded X); None otherwise.

        Returns
        -------
        Y_hat : ndarray, shape (K, m)
            The decoded f(x_1), ..., f(x_K).
        info : dict
            Decoder facts recorded with the trial (e.g. the chosen ``lambda_dec``), as for
            ``encode``.

        Raises
        ------
        DecodeError
            Too few (or the wrong) results: the trial is recorded as failed with the reason.
        """
        received = np.asarray(received)
        mask = np.zeros(self.N, bool)
        mask[received] = True
        if len(received) == 0 or not self.decodable(mask):
            raise DecodeError(self.shortfall(mask))
        order = np.argsort(received, kind="stable")
        received, Y = received[order], np.asarray(Y)[order]
        if not self.robust:
            return self._decode_sorted(received, Y, alpha, inputs)
        keep, facts = self.trusted(received, Y)
        flagged = np.zeros(self.N, bool)
        flagged[received[~keep]] = True
        Y_hat, info = self._decode_sorted(received[keep], Y[keep], alpha, inputs)
        return Y_hat, {**info, **facts, "flagged": flagged}

    def trusted(self, received, Y):
        """(keep: bool per received result, decoder facts) of a robust decode: one of the
        generic screens on the workers' points — the neighbours' leave-one-out screen
        (codes.robust.loo_screen) or, for "spline-screen", the adversarial spline's
        (codes.robust.spline_screen) — or for a code without points the finite results. Raise
        DecodeError when too few remain."""
        from .robust import finite_rows, loo_screen, spline_screen

        if self.beta is None:
            keep = finite_rows(Y)
        elif self.robust_choice == "spline-screen":
            keep = spline_screen(self.beta[received], Y, self.N, self.errors)
        else:
            keep = loo_screen(self.beta[received], Y, self.errors)
        if not keep.any():
            raise DecodeError("robust decoding trusted none of the results")
        return keep, {}

    def decoder(self, received):
        """What ``decode_matrix`` built for this received set (sorted), from an LRU cache."""
        key = received.tobytes()
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self.decode_matrix(received)
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return hit

    def _decode_sorted(self, received, Y, alpha=None, inputs=None):
        D, info = self.decoder(received)
        return D @ Y, info

    def shortfall(self, mask):
        return f"no results received (0 of {len(self.active)})"


# -- the check of a plug-in, before any work ------------------------------------------------
REQUIRED = ("N", "K", "active", "exact", "trial_alpha", "encode", "decode", "decodable")
EXACT_RTOL = 1e-6  # an exact scheme's decode of a linear f, relative to the inputs' norm
D_CHECK = 3        # input dimension of the check's batch


def check_code(code, name, N, K):
    """Try a built plug-in scheme ``code`` on a small batch as the simulator and the MPI master
    would use it, with f the identity (linear, so exact schemes must recover X itself): its
    attributes, encode's and decode's shapes and facts, decode's independence of the order of
    the results, and for exact schemes ``decodable`` and exactness. The first problem is one
    JobError naming the scheme and what is wrong."""
    def bad(problem):
        return JobError("code.schemes", f'"{name}": {problem}')

    missing = [a for a in REQUIRED if not hasattr(code, a)]
    if missing:
        raise bad(f"lacks {', '.join(missing)}; subclass gcc_mpi.LinearCode, which provides "
                  "them (docs/own-scheme.md)")
    if (code.N, code.K) != (N, K):
        raise bad(f"has N = {code.N!r}, K = {code.K!r}; it was built for N = {N}, K = {K}")
    for flag in ("exact", "trial_alpha"):
        if not isinstance(getattr(code, flag), (bool, np.bool_)):
            raise bad(f"{flag} must be True or False, got {getattr(code, flag)!r}")
    active = np.asarray(code.active)
    if (active.ndim != 1 or not len(active) or active.dtype.kind not in "iu"
            or len(np.unique(active)) != len(active) or active.min() < 0 or active.max() >= N):
        raise bad(f"active must be distinct worker indices in [0, {N}) (an integer array), "
                  f"got {_short(code.active)}")
    X = np.random.default_rng(0).standard_normal((K, D_CHECK))
    out = _call(bad, "encode", code.encode, X)
    X_coded, info = _pair(bad, "encode", out)
    X_coded = _shape(bad, "encode", X_coded, (len(active), D_CHECK), f"one row per active "
                     f"worker ({len(active)}) for a batch of shape ({K}, {D_CHECK})")
    alpha = _facts(bad, "encode", info, K, code.trial_alpha)
    everyone = np.zeros(N, bool)
    everyone[active] = True
    if code.exact:
        _check_decodable(bad, code, active, everyone)
    # f = identity: worker active[i]'s result is its coded input; results in a shuffled order
    order = np.random.default_rng(1).permutation(len(active))
    everyone_says = "every active worker"
    Y_hat = _decoded(bad, code, active[order], X_coded[order], alpha, K, everyone_says)
    again = _decoded(bad, code, active, X_coded, alpha, K, everyone_says)
    if not np.allclose(Y_hat, again, rtol=1e-9, atol=1e-12 * np.abs(again).max()):
        raise bad("decode gave different results for the same results in another order: rows "
                  "of Y are aligned with received, which need not be sorted")
    if code.exact:
        error = np.linalg.norm(Y_hat - X) / np.linalg.norm(X)
        if not error <= EXACT_RTOL:
            raise bad(f"exact is True, but decoding a linear f from every active worker is off "
                      f"by {error:.1e} relative (more than {EXACT_RTOL:g}); an approximate "
                      "scheme sets exact = False")
    if len(active) > 1:  # one straggler: may be too few (DecodeError), but not a crash
        _decoded(bad, code, active[order[1:]], X_coded[order[1:]], alpha, K,
                 f"{len(active) - 1} of the {len(active)} active workers", may_fail=True)
    return code


def _short(v):
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _call(bad, what, fn, *args):
    """fn(*args); any exception but DecodeError is the plug-in's bug, one line naming it."""
    try:
        return fn(*args)
    except DecodeError:
        raise
    except Exception as e:
        raise bad(f"{what} raised {type(e).__name__}: {e}") from None


def _pair(bad, what, out):
    if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict)):
        raise bad(f"{what} must return (array, dict of facts), got {_short(out)}")
    return out


def _shape(bad, what, a, want, why):
    """``a`` as a float array, checked to have the shape ``want`` and finite values."""
    try:
        a = np.asarray(a, dtype=float)
    except (TypeError, ValueError):
        raise bad(f"{what} returned {_short(a)}, not an array of numbers") from None
    if a.shape != want:
        raise bad(f"{what} returned shape {a.shape}; expected {want}: {why}")
    if not np.all(np.isfinite(a)):
        raise bad(f"{what} returned NaN or inf for finite inputs")
    return a


def _facts(bad, what, info, K, trial_alpha):
    """The facts' names and values checked; returns info["alpha"] when the code chooses it."""
    for key, value in info.items():
        if not isinstance(key, str) or key in FIELDS:
            raise bad(f"{what}'s facts may not use the name {key!r}: the trial's record has "
                      f"its own (choose another, e.g. {what}_{key})")
        if np.asarray(value).dtype.kind not in "biuf":
            raise bad(f"{what}'s fact {key!r} must be a number or an array of numbers, got "
                      f"{_short(value)}")
    if trial_alpha:
        if "alpha" not in info:
            raise bad('trial_alpha is True but encode reported no "alpha"; return '
                      '(X_coded, {"alpha": points}) with the K points of the trial')
        return _shape(bad, "encode's alpha", info["alpha"], (K,), "one point per input")
    return None


def _decoded(bad, code, received, Y, alpha, K, which, may_fail=False):
    """decode's Y_hat from these results, checked; None when it may fail and did."""
    try:
        out = _call(bad, "decode", code.decode, received, Y, alpha)
    except DecodeError as e:
        if may_fail:
            return None
        raise bad(f"decode raised DecodeError with the results of {which}: {e}") from None
    Y_hat, info = _pair(bad, "decode", out)
    Y_hat = _shape(bad, "decode", Y_hat, (K, Y.shape[1]), f"one row per input (K = {K}) and "
                   f"the results' {Y.shape[1]} columns, from the results of {which}")
    _facts(bad, "decode", info, K, False)
    return Y_hat


def _check_decodable(bad, code, active, everyone):
    """An exact scheme's decodable: a bool, false for no results, true for every active worker
    and, as results are added one by one, never true and then false again."""
    def asked(mask):
        answer = _call(bad, "decodable", code.decodable, mask)
        if not isinstance(answer, (bool, np.bool_)):
            raise bad(f"decodable must return True or False, got {_short(answer)}")
        return bool(answer)

    if asked(np.zeros(code.N, bool)):
        raise bad("decodable is True with no results: an exact scheme needs some")
    if not asked(everyone.copy()):
        raise bad("decodable is False with the results of every active worker")
    mask, seen = np.zeros(code.N, bool), False
    for worker in np.random.default_rng(2).permutation(active):
        mask[worker] = True
        now = asked(mask.copy())
        if seen and not now:
            raise bad(f"decodable turned False when worker {worker}'s result was added: it must "
                      "stay True as results arrive")
        seen = now
