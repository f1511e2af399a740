"""The coding schemes (no MPI here). ``make_code(name, N, K, **options)`` builds one."""

from ..errors import JobError
from .base import DecodeError, LinearCode
from .berrut import BACC
from .gcc import GCC
from .gcc_manifold import ManifoldGCC
from .lcc import LCC
from .letcc import LeTCC
from .uncoded import Replication, Uncoded

SCHEMES = {
    "uncoded": Uncoded,
    "replication": Replication,
    "lcc": LCC,
    "bacc": BACC,
    "letcc": LeTCC,
    "gcc": GCC,
    "gcc-manifold": ManifoldGCC,
}


def make_code(name, N, K, **options):
    """The code ``name`` for N workers and K inputs; ``options`` are its [code.<name>] keys."""
    if name not in SCHEMES:
        raise JobError("code.schemes", f"scheme {name!r} is not available in this version; "
                                       f"choose from {', '.join(SCHEMES)}")
    return SCHEMES[name](N, K, **options)


__all__ = ["DecodeError", "LinearCode", "SCHEMES", "make_code"]
