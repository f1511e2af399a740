"""The coding schemes (no MPI here). ``make_code(name, N, K, **options)`` builds one.

A scheme is a built-in name (``gcc_mpi.schemes``, its class in ``CLASSES``) or a plug-in:
``"file.py:Class"`` (a file beside the job file), ``"package.module:Class"``, or the name of an
entry point of the group ``gcc_mpi.schemes`` that an installed package declares. A plug-in's
class implements the ``LinearCode`` interface (docs/own-scheme.md); it is imported and checked
(``check_code``) when the scheme is built, on rank 0 only: the workers compute f and never need
it.
"""

import inspect
from collections.abc import Mapping
from importlib import import_module

from ..job import user_code
from ..job.checks import checked, of_type
from ..job.keys import dotted
from ..errors import JobError
from ..job.registry import BUILT_IN, ENTRY_POINTS, installed_schemes, is_plugin
from .base import DecodeError, LinearCode, check_code

class _Classes(Mapping):
    """{name: class} of every built-in scheme, importing a class's module on first use (a
    scheme's module, and the scipy parts it uses — lcc's interpolation, the manifold's graphs —
    are imported when the scheme is first built, not by every job)."""

    def __getitem__(self, name):
        scheme = BUILT_IN[name]
        return getattr(import_module(f".{scheme.module}", __name__), scheme.cls)

    def __iter__(self):
        return iter(BUILT_IN)

    def __len__(self):
        return len(BUILT_IN)


CLASSES = _Classes()


def plugin_class(name, base_dir="."):
    """The class (or factory) of the plug-in scheme ``name``: imported from its file or module,
    or loaded from its entry point; JobError naming code.schemes if that fails."""
    spec = name if ":" in name else installed_schemes().get(name)
    if spec is None:
        raise JobError("code.schemes", f"{name!r} is no longer an installed {ENTRY_POINTS} "
                                       "entry point")
    return user_code.load(spec, base_dir, "code.schemes", "Class")


TYPES = {"bool": bool, "int": int, "float": float, "str": str}  # annotations written as text


def plugin_options(cls) -> dict:
    """{option: Check} of a plug-in's keyword options, read from the class itself: its
    ``OPTIONS`` ({option: Check}, gcc_mpi.job.checks) where it declares one, else each keyword
    of its constructor after N and K, checked by its annotation (bool, int, float, str) or, if
    it has none, by its default's type. Options it does not name are left to the constructor."""
    declared = dict(getattr(cls, "OPTIONS", None) or {})
    try:
        params = list(inspect.signature(cls).parameters.values())[2:]
    except (TypeError, ValueError):  # no signature to read (a builtin, a C extension)
        return declared
    out = {}
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name in declared:
            continue
        kind = TYPES.get(p.annotation, p.annotation) if p.annotation is not p.empty else None
        default = None if p.default is p.empty else p.default
        out[p.name] = of_type(kind, default)
    return out | declared


def checked_options(cls, name, options) -> dict:
    """``options`` of the plug-in ``name`` checked by its class (``plugin_options``): a bad
    value is one JobError naming its key, code."<name>".<option>."""
    checks = plugin_options(cls)
    return {k: checked(dotted(("code", name, k)), checks[k], v) if k in checks else v
            for k, v in options.items()}


def build(cls, N, K, robust=False, errors=0, **options):
    """A built-in code's class ``cls`` (or a subclass) built with its [code.<name>] keys: robust
    decoding is the base class's (LinearCode.set_robust), not a keyword of the class: True, or a
    code's own mode (a word, e.g. letcc's "spline"); "auto" without a job's [adversaries] to go by
    is off."""
    code = cls(N, K, **options)
    code.set_robust(robust if robust is True or robust not in (False, "auto") else False, errors)
    return code


def make_code(name, N, K, *, base_dir=".", **options):
    """The code ``name`` for N workers and K inputs; ``options`` are its [code.<name>] keys.
    A plug-in is imported (a file relative to ``base_dir``, the job file's folder), built and
    checked on a small batch (``check_code``): a problem is one JobError."""
    if name in CLASSES:
        return build(CLASSES[name], N, K, **options)
    if not is_plugin(name):
        raise JobError("code.schemes", f"scheme {name!r} is not available in this version; "
                                       f"choose from {', '.join(CLASSES)} or a plug-in")
    cls = plugin_class(name, base_dir)
    if not callable(cls):
        raise JobError("code.schemes", f'"{name}" is a {type(cls).__name__}, not a class')
    options = checked_options(cls, name, options)
    try:
        code = cls(N, K, **options)
    except Exception as e:  # the user's constructor: a bad option, or a bug
        shown = ", ".join(f"{k}={v!r}" for k, v in {"N": N, "K": K, **options}.items())
        call = f"{getattr(cls, '__name__', 'the class')}({shown}) raised {type(e).__name__}: {e}"
        if options:  # the key names the scheme already
            raise JobError(dotted(("code", name)), call) from None
        raise JobError("code.schemes", f'"{name}": {call}') from None
    return check_code(code, name, N, K)


__all__ = ["CLASSES", "DecodeError", "LinearCode", "check_code", "make_code", "plugin_class",
           "plugin_options"]
