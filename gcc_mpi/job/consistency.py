"""The checks across keys of one resolved job (one sweep point): each problem is one JobError
naming the key to change."""

from __future__ import annotations

from ..errors import JobError
from .rules import resolved_lcc_degree, resolved_robust, resolved_stragglers
from .stragglers import MODELS


def consistent(c) -> None:
    K, N, s = c.data.batch, c.code.workers, c.stragglers
    model = MODELS[s.model]
    if c.target.kind == "python" and c.target.function is None:
        raise JobError("target.function", 'required when target.kind = "python" '
                                          '("module:function" or "file.py:function")')
    if (c.target.model is not None and c.target.model.lower().endswith(".onnx")
            and c.target.kind in ("mlp", "onnx")):
        raise JobError("target.model", 'is an ONNX file: set target.kind = "onnx" and the file as '
                                       'target.path (target.model is for .npz MLP weights)')
    if c.data.source == "file" and c.data.path is None:
        raise JobError("data.path", 'required when data.source = "file" (a .npy, .npz or .h5 file)')
    for name, why in model.required.items():
        if getattr(s, name) is None:
            raise JobError(f"stragglers.{name}", f'required when stragglers.model = '
                                                 f'"{s.model}"{why}')
    if c.data.source in ("sphere", "swissroll", "torus") and c.data.dim < 3:
        raise JobError("data.dim", f'must be >= 3 for data.source = "{c.data.source}", '
                                   f'got {c.data.dim}')
    if N < K:
        raise JobError("code.workers", f"must be >= data.batch = {K} (every scheme needs N >= K), "
                                       f"got {N}")
    if "lcc" in c.code.schemes:
        d = resolved_lcc_degree(c)
        if N < (K - 1) * d + 1:
            raise JobError("code.workers", f"lcc needs >= (K-1)*degree+1 = {(K - 1) * d + 1} "
                                           f"workers (K = {K}, degree = {d}), got {N}")
        robust, A = resolved_robust(c, "lcc")
        if robust and N < (K - 1) * d + 1 + 2 * A:
            raise JobError("code.workers", f"robust lcc corrects A = {A} wrong results with >= "
                                           f"(K-1)*degree+1+2A = {(K - 1) * d + 1 + 2 * A} "
                                           f"workers, got {N} (or code.lcc.robust = false)")
    for name in model.counts:
        if getattr(s, name) > N:
            raise JobError(f"stragglers.{name}", f"must be <= code.workers = {N}, "
                                                 f"got {getattr(s, name)}")
    if c.decode.wait == "fastest" and resolved_stragglers(c) > N - 1:
        auto = "" if c.decode.stragglers != "auto" else f" (auto: {model.explain_late(s)})"
        raise JobError("decode.stragglers", f"must be <= code.workers - 1 = {N - 1} so that one "
                                            f"result is waited for, got {resolved_stragglers(c)}"
                                            f"{auto}")
    adversaries_consistent(c.adversaries, N)
    if c.decode.wait == "deadline" and c.decode.deadline is None:
        raise JobError("decode.deadline", 'required when decode.wait = "deadline" (seconds > 0)')


def adversaries_consistent(a, N) -> None:
    """The [adversaries] table: a count or a probability, not both; at most N liars; a
    probability only with random or fixed placement (worst-case places a count)."""
    if a.count > 0 and a.p > 0:
        raise JobError("adversaries.p", f"must be 0 when adversaries.count is set (liars are a "
                                        f"count or a probability), got {a.p}")
    if a.count > N:
        raise JobError("adversaries.count", f"must be <= code.workers = {N}, got {a.count}")
    if a.p > 0 and a.placement == "worst-case":
        raise JobError("adversaries.placement", '"worst-case" places adversaries.count '
                                                'consecutive workers; with adversaries.p use '
                                                '"random" or "fixed"')
