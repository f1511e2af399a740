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
