"""The coding schemes (no MPI here). ``make_code(name, N, K, **options)`` builds one."""

from collections.abc import Mapping
from importlib import import_module

from ..errors import JobError
from .base import DecodeError, LinearCode

# scheme -> (module, class); a scheme's module (and the scipy parts it uses: lcc's interpolation,
# the manifold's graphs) is imported when the scheme is first built, not by every job
_WHERE = {
    "uncoded": ("uncoded", "Uncoded"),
    "replication": ("uncoded", "Replication"),
    "lcc": ("lcc", "LCC"),
    "bacc": ("berrut", "BACC"),
    "letcc": ("letcc", "LeTCC"),
    "gcc": ("gcc", "GCC"),
    "gcc-manifold": ("gcc_manifold", "ManifoldGCC"),
}


class _Schemes(Mapping):
    """{name: class} of every scheme, importing a class's module on first use."""

    def __getitem__(self, name):
        module, cls = _WHERE[name]
        return getattr(import_module(f".{module}", __name__), cls)

    def __iter__(self):
        return iter(_WHERE)

    def __len__(self):
        return len(_WHERE)


SCHEMES = _Schemes()


def make_code(name, N, K, **options):
    """The code ``name`` for N workers and K inputs; ``options`` are its [code.<name>] keys."""
    if name not in SCHEMES:
        raise JobError("code.schemes", f"scheme {name!r} is not available in this version; "
                                       f"choose from {', '.join(SCHEMES)}")
    return SCHEMES[name](N, K, **options)


__all__ = ["DecodeError", "LinearCode", "SCHEMES", "make_code"]
