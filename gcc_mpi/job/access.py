"""Reading a resolved job by dotted key, and the message for a key the schema does not have."""

from __future__ import annotations

import difflib

from ..errors import JobError
from .keys import dotted, key_text, lookup
from .schema import KEYS, TABLES, plugin_option


def suggest(k: str, names) -> str | None:
    """The name closest to k: a sibling in its table, the same name in another table, or alike."""
    table, _, name = k.rpartition(".")
    close = difflib.get_close_matches(
        name, [n.rpartition(".")[2] for n in names if n.rpartition(".")[0] == table], 1)
    if close:
        return f"{table}.{close[0]}" if table else close[0]
    close = [n for n in names if n.rpartition(".")[2] == name]
    if not close and table not in TABLES:
        close = difflib.get_close_matches(k, names, 1)
    return close[0] if close else None


def unknown(k: str, shown: str | None = None, value=None) -> JobError:
    """The JobError of a key (or table) the schema does not have, with a suggestion."""
    shown = shown or key_text(k)
    table = k.rpartition(".")[0]
    if k == "sweep":
        return JobError(shown, 'is the table of swept keys; sweep one key with '
                               '--set "sweep.stragglers.count=[0, 5, 10]"')
    if k in TABLES:
        keys = [n.rpartition(".")[2] for n in KEYS if n.rpartition(".")[0] == k]
        return JobError(shown, "is a table, not a key; set one of its keys: " + ", ".join(keys))
    if (close := suggest(k, TABLES if isinstance(value, dict) else KEYS)) is not None:
        hint = f"; did you mean '{close}'?"
    elif shown.startswith("sweep."):
        hint = '; [sweep] takes dotted keys such as "stragglers.count" = [0, 5, 10]'
    elif table in TABLES:
        hint = "; allowed: " + ", ".join(n.rpartition(".")[2] if n in KEYS else f"[{n}]"
                                         for n in [*KEYS, *TABLES] if n.rpartition(".")[0] == table)
    else:
        hint = "; allowed tables: " + ", ".join(f"[{t}]" for t in [*TABLES, "sweep"])
    return JobError(shown, f"unknown {'table' if isinstance(value, dict) else 'key'}{hint}")


def get(config, dotted_key: str):
    """The value of one dotted key, e.g. get(cfg, "code.gcc-manifold.neighbors")."""
    missing, where = object(), plugin_option(dotted_key)
    if where is None and dotted_key not in KEYS and dotted_key not in TABLES:
        raise unknown(dotted_key)
    value = lookup(config, dotted_key if where is None else ("code", *where), missing)
    if value is missing:
        raise unknown(dotted_key)
    return value


def to_dict(config) -> dict:
    """{dotted key: value} for every key, and every option of a plug-in scheme."""
    return {**{k: get(config, k) for k in KEYS},
            **{dotted(("code", scheme, name)): v
               for scheme, options in config.code.plugins for name, v in options}}
