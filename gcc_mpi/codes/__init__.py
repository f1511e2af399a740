"""The coding schemes (no MPI here). ``make_code(name, N, K, **options)`` builds one.

A scheme is a built-in name (``SCHEMES``) or a plug-in: ``"file.py:Class"`` (a file beside the
job file), ``"package.module:Class"``, or the name of an entry point of the group
``gcc_mpi.schemes`` that an installed package declares. A plug-in's class implements the
``LinearCode`` interface (docs/own-scheme.md); it is imported and checked (``check_code``)
when the scheme is built, on rank 0 only: the workers compute f and never need it.
"""

from collections.abc import Mapping
from importlib import import_module

from .. import user_code
from ..config import ENTRY_POINTS, dotted, installed_schemes, is_plugin
from ..errors import JobError
from .base import DecodeError, LinearCode, check_code

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
    """{name: class} of every built-in scheme, importing a class's module on first use."""

    def __getitem__(self, name):
        module, cls = _WHERE[name]
        return getattr(import_module(f".{module}", __name__), cls)

    def __iter__(self):
        return iter(_WHERE)

    def __len__(self):
        return len(_WHERE)


SCHEMES = _Schemes()


def plugin_class(name, base_dir="."):
    """The class (or factory) of the plug-in scheme ``name``: imported from its file or module,
    or loaded from its entry point; JobError naming code.schemes if that fails."""
    spec = name if ":" in name else installed_schemes().get(name)
    if spec is None:
        raise JobError("code.schemes", f"{name!r} is no longer an installed {ENTRY_POINTS} "
                                       "entry point")
    return user_code.load(spec, base_dir, "code.schemes", "Class")


def make_code(name, N, K, *, base_dir=".", **options):
    """The code ``name`` for N workers and K inputs; ``options`` are its [code.<name>] keys.
    A plug-in is imported (a file relative to ``base_dir``, the job file's folder), built and
    checked on a small batch (``check_code``): a problem is one JobError."""
    if name in SCHEMES:
        return SCHEMES[name](N, K, **options)
    if not is_plugin(name):
        raise JobError("code.schemes", f"scheme {name!r} is not available in this version; "
                                       f"choose from {', '.join(SCHEMES)} or a plug-in")
    cls = plugin_class(name, base_dir)
    if not callable(cls):
        raise JobError("code.schemes", f'"{name}" is a {type(cls).__name__}, not a class')
    try:
        code = cls(N, K, **options)
    except Exception as e:  # the user's constructor: a bad option, or a bug
        shown = ", ".join(f"{k}={v!r}" for k, v in {"N": N, "K": K, **options}.items())
        call = f"{getattr(cls, '__name__', 'the class')}({shown}) raised {type(e).__name__}: {e}"
        if options:  # the key names the scheme already
            raise JobError(dotted(("code", name)), call) from None
        raise JobError("code.schemes", f'"{name}": {call}') from None
    return check_code(code, name, N, K)


__all__ = ["DecodeError", "LinearCode", "SCHEMES", "check_code", "make_code", "plugin_class"]
