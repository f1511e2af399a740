"""What a resolved job implies beyond its keys: S for the "fastest" decode policy, lcc's degree."""

from __future__ import annotations

from ..errors import JobError
from .stragglers import MODELS


def resolved_stragglers(config) -> int:
    """S, the number of results not waited for when decode.wait = "fastest": decode.stragglers,
    or (auto) the straggler model's rule (``stragglers.Model.late``)."""
    if config.decode.stragglers != "auto":
        return config.decode.stragglers
    return MODELS[config.stragglers.model].late(config.stragglers, config.code.workers)


def resolved_lcc_degree(config) -> int:
    degree, kind = config.code.lcc.degree, config.target.kind
    if degree != "auto":
        return degree
    if kind in ("polynomial", "linear"):
        return config.target.degree if kind == "polynomial" else 1
    raise JobError("code.lcc.degree", f'must be set when target.kind is "{kind}" (lcc is exact '
                                      'only for polynomials)')


def resolved_robust(config, scheme) -> tuple:
    """(robust, A) of a built-in scheme's decoder: code.<scheme>.robust, "auto" being on
    exactly when the job declares adversaries; A the wrong results it corrects
    (adversaries.errors; 1 when forced on without adversaries), 0 when off."""
    from .adversaries import declared, errors

    robust = config.code.options(scheme).get("robust", False)
    if robust == "auto":
        robust = declared(config.adversaries)
    return robust, (max(errors(config.adversaries, config.code.workers), 1) if robust else 0)


def untolerated(config, scheme, N, waited, A) -> str | None:
    """Why ``scheme`` at N workers, decoding from ``waited`` results, is not trusted against
    A wrong results, or None when it is (``plan --adversaries``). The rules are the
    decoders' guarantees (codes/robust.py):
    - lcc corrects A errors exactly with N >= deg·(K-1) + 1 + 2A (it waits for them);
    - replication outvotes A liars among an input's copies when each has 2A + 1 or more;
    - an approximate code has no threshold: its robust decoder drops up to 2A results and
      decodes from the rest, so it is tried only when the results waited for are at least
      K + 2A — the redundancy lcc needs for a linear f — and the simulation with the liars
      decides whether it meets the accuracy;
    - uncoded and plug-in schemes have no robust decoder."""
    from .registry import BUILT_IN

    K = config.data.batch
    if A == 0:
        return None
    if scheme not in BUILT_IN or "robust" not in BUILT_IN[scheme].options:
        return "no robust decoder"
    if scheme == "lcc":
        need = (K - 1) * resolved_lcc_degree(config) + 1 + 2 * A
        return None if N >= need else f"needs N >= deg·(K-1)+1+2A = {need}"
    if scheme == "replication":
        return None if N // K >= 2 * A + 1 else (f"needs 2A+1 = {2 * A + 1} copies of each "
                                                 f"input, N >= {K * (2 * A + 1)}")
    return None if waited >= K + 2 * A else f"needs K+2A = {K + 2 * A} results waited for"
