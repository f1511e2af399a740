"""The job file (TOML) -> ``Job``: its tables flattened to dotted keys, overrides and new
defaults applied, then resolved (``config.resolve``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from collections.abc import Iterable, Mapping

from ..errors import JobError
from .access import unknown
from .checks import quote, show
from .config import Job, apply, resolve
from .keys import dotted
from .registry import is_plugin
from .schema import KEYS, TABLES, plugin_option

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def flatten(raw: dict) -> tuple[dict, dict]:
    """Nested TOML tables -> ({dotted key: value}, {swept dotted key: values})."""
    flat, sweep = {}, {}

    def walk(prefix, table, out, sweeping):
        for name, v in table.items():
            k = f"{prefix}.{name}" if prefix else name
            shown = "sweep." + quote(k) if sweeping else None
            if k in KEYS:
                out[k] = v
            elif k in TABLES and isinstance(v, dict):
                walk(k, v, out, sweeping)
            elif sweeping and (where := plugin_option(k)) is not None:
                out[dotted(("code", *where))] = v
            elif prefix == "code" and is_plugin(name) and not sweeping:
                if not isinstance(v, dict):
                    raise JobError(dotted(("code", name)), f"must be a table of the scheme's "
                                                           f"options, got {show(v)}")
                out.update((dotted(("code", name, option)), value) for option, value in v.items())
            elif k in TABLES and not sweeping:
                raise JobError(k, f"must be a table [{k}], got {show(v)}")
            else:
                raise unknown(k, shown, v)

    raw = dict(raw)
    raw_sweep = raw.pop("sweep", {})
    if not isinstance(raw_sweep, dict):
        raise JobError("sweep", f'must be a table of "dotted.key" = [values], '
                                f'got {show(raw_sweep)}')
    walk("", raw, flat, False)
    walk("", raw_sweep, sweep, True)
    for k in sweep:
        if k in flat:
            raise JobError(k, f"is both set in [{k.rpartition('.')[0]}] and swept in [sweep]; "
                              "keep one")
    return flat, sweep


def loads(text: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.fullmatch(r"(.*) \(at line (\d+), column (\d+)\)", str(e))
        raise JobError("job file", f"invalid TOML at line {m[2]}, column {m[3]}: {m[1]}" if m
                       else f"invalid TOML: {e}") from None
    except RecursionError:
        raise JobError("job file", "invalid TOML: nested too deeply") from None


def set_defaults(flat: dict, sweep: dict, explicit: set, defaults) -> None:
    for k, v in (defaults or {}).items():
        if k not in KEYS:
            raise unknown(k)
        if k not in explicit and k not in sweep:
            flat[k] = v


def parse_job(text: str, *, base_dir=".", overrides: Iterable = (), defaults: Mapping | None = None,
              source=None) -> Job:
    """Job from TOML text. overrides ("KEY=VALUE" strings, (key, value) pairs or a dict) apply on
    top; defaults ({key: value}) replace the built-in defaults of keys the user did not write
    (the MPI runtime passes {"code.workers": ranks - 1})."""
    flat, sweep = flatten(loads(text))
    explicit = set(flat) | set(sweep) | apply(flat, sweep, overrides)
    set_defaults(flat, sweep, explicit, defaults)
    return resolve(flat, sweep, explicit, source, base_dir)


def load_job(path, overrides: Iterable = (), defaults: Mapping | None = None) -> Job:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise JobError("job file", f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise JobError("job file",
                       f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    return parse_job(text, base_dir=path.resolve().parent, overrides=overrides, defaults=defaults,
                     source=path)
