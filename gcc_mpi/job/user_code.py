"""The user's own Python code, named in a job file as ``"file.py:name"`` or ``"module:name"``:
a python target's f (``target.function``) and a plug-in scheme's class (``code.schemes``).

A file is resolved against the job file's folder and imported as a fresh module each time (a
notebook that edits it gets the new version). While it is imported its own folder comes first
on ``sys.path``, so that ``import helpers`` at its top finds ``helpers.py`` beside it from any
working directory (the folder is taken off again afterwards: an import inside a function, run
later, does not see it). A module is imported as usual. ``"mod:Class.attr"`` walks attributes.
Every failure is one JobError naming the key; the user's code may raise anything while it is
imported.
"""

import contextlib
import importlib
import importlib.util
import itertools
import os
import sys

from ..errors import JobError
from .paths import located

_counter = itertools.count()


@contextlib.contextmanager
def _importable(folder):
    """``folder`` first on sys.path for the duration, as for a script run from it."""
    entry = os.fspath(folder)
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):  # the user's code may have taken it off itself
            sys.path.remove(entry)


def file_named(spec, base_dir):
    """The file a ``"file.py:name"`` spec names, resolved against ``base_dir``; None for a
    ``"module:name"`` spec (or one without a colon)."""
    where = spec.rpartition(":")[0] if isinstance(spec, str) else ""
    if where.endswith(".py") or "/" in where or "\\" in where:
        return located(where, base_dir)
    return None


def load(spec, base_dir, key, what="name"):
    """The object ``spec`` names, or JobError(key, ...) saying why not; ``what`` is the kind
    of thing after the colon, for the messages ("function", "Class")."""
    if not isinstance(spec, str) or ":" not in spec:
        raise JobError(key, f"expected 'package.module:{what}' or 'path/to/file.py:{what}', "
                            f"got {spec!r}")
    where, _, attr = spec.rpartition(":")   # rpartition: Windows drive letters keep their colon
    if not where or not attr:
        raise JobError(key, f"expected 'package.module:{what}' or 'path/to/file.py:{what}', "
                            f"got {spec!r}")
    path = file_named(spec, base_dir)
    if path is not None:
        if not path.is_file():
            raise JobError(key, f"file not found: {path}")
        name = f"_gcc_mpi_user_{next(_counter)}_{path.stem}"
        try:
            module_spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(module_spec)
            with _importable(path.resolve().parent):
                module_spec.loader.exec_module(module)
        except Exception as e:
            raise JobError(key, f"importing {path} failed: {type(e).__name__}: {e}") from None
    else:
        try:
            module = importlib.import_module(where)
        except Exception as e:
            raise JobError(key, f"importing module {where!r} failed: {type(e).__name__}: {e}"
                           ) from None
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise JobError(key, f"{where!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj
