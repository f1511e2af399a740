"""Dotted keys ("stragglers.count", 'code."my_codes.py:MyCode".scale'): their parts, how TOML
writes them, and the one lookup of a key's value in a job — a resolved ``Config`` or a job read
back from a results file as parsed TOML — that every reader of a key uses."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping

from ..errors import JobError
from .checks import quote

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def key_parts(k: str) -> tuple:
    """A dotted key's parts: 'code."my_codes.py:MyCode".scale' -> ("code", "my_codes.py:MyCode",
    "scale"); a part in quotes may hold dots (TOML's dotted keys). () if it is not a key."""
    if '"' not in k and "'" not in k:
        return tuple(k.split("."))
    try:
        node, parts = tomllib.loads(f"{k} = 0"), []
    except tomllib.TOMLDecodeError:
        return ()
    while isinstance(node, dict) and len(node) == 1:
        (part, node), = node.items()
        parts.append(part)
    return tuple(parts)


def dotted(parts) -> str:
    """The key of ``parts`` as TOML writes it: bare parts joined by dots, others in quotes."""
    return ".".join(p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else quote(p) for p in parts)


def key_text(k: str) -> str:
    """A key as a message shows it: as it is, or in quotes when it holds strange characters."""
    return k if re.fullmatch(r"[\w.-]+", k, re.ASCII) else quote(k)


MISSING = object()


def lookup(node, key, missing=None):
    """The value of the dotted ``key`` in ``node``, or ``missing`` where a part is absent.

    ``node`` is a job as tables: parsed TOML (dicts: a results file's job) or a resolved
    ``Config``, whose tables are attributes (a "-" in a key is "_" in its attribute, as
    ``code.gcc-manifold``) and whose ``code`` table gives any scheme's options
    (``CodeSection.options``, a plug-in's too)."""
    parts = key_parts(key) if isinstance(key, str) else tuple(key)
    if not parts:
        return missing
    for part in parts:
        if isinstance(node, Mapping):
            node = node.get(part, MISSING)
        elif hasattr(node, "options") and not hasattr(node, part.replace("-", "_")):
            try:  # the code table: a scheme's options
                node = node.options(part)
            except JobError:
                node = MISSING
        else:
            node = getattr(node, part.replace("-", "_"), MISSING)
        if node is MISSING:
            return missing
    return node
