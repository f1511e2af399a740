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
