"""The job: one resolved configuration per sweep point (``Config``), the sweep, ``--set``
overrides, and building them from {dotted key: value} with every value checked.

The pieces: ``checks`` (values), ``schema`` (tables and keys), ``keys`` (dotted keys),
``access`` (reading a key), ``rules`` (what a job implies), ``consistency`` (checks across
keys), ``parse`` (the job file), ``default_job`` (the job shipped in the package). Everything
the user wrote is checked before any MPI work, and every problem is one ``JobError`` naming the
dotted key, the bad value and what is allowed.
"""

from __future__ import annotations

import itertools
import math
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from collections.abc import Mapping

import tomli_w

from ..errors import JobError
from .access import to_dict, unknown
from .checks import checked, did_you_mean, quote, show
from .consistency import consistent
from .keys import dotted, key_parts
from .paths import located
from .schema import (
    DEFAULTS, KEYS, NOT_SWEPT, TABLES, CodeSection, DataSection, DecodeSection, JobSection,
    TargetSection, plugin_option, plugins,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MAX_POINTS = 100_000


@dataclass(frozen=True)
class Config:
    """One fully resolved configuration (one sweep point)."""
    job: JobSection = field(default_factory=JobSection)
    data: DataSection = field(default_factory=DataSection)
    target: TargetSection = field(default_factory=TargetSection)
    code: CodeSection = field(default_factory=CodeSection)
    stragglers: object = field(default_factory=lambda: TABLES["stragglers"]())
    adversaries: object = field(default_factory=lambda: TABLES["adversaries"]())
    decode: DecodeSection = field(default_factory=DecodeSection)

    def with_workers(self, n: int) -> Config:
        return replace(self, {"code.workers": n})


@dataclass(frozen=True)
class Point:
    index: int
    params: dict       # {dotted key: value} of the swept keys at this point ({} without a sweep)
    config: Config


@dataclass(frozen=True)
class Job:
    config: Config     # the job with every swept key at its first value (== points[0].config)
    sweep: dict        # {dotted key: [values]} in file order
    points: list
    source: Path | None = field(default=None, compare=False)
    base_dir: Path = field(default=Path("."), compare=False)
    explicit_keys: frozenset = field(default=frozenset(), compare=False)  # keys the user wrote
    note: str = field(default="", compare=False)  # what was chosen for the user (default job)

    def to_toml(self) -> str:
        """The resolved job (all defaults filled in, and [sweep]) as TOML; parse_job(it) == self."""
        doc: dict = {}
        for k, v in to_dict(self.config).items():
            if k not in self.sweep and v is not None:
                *tables, name = key_parts(k)
                node = doc
                for part in tables:
                    node = node.setdefault(part, {})
                node[name] = plain(v)
        if self.sweep:
            doc["sweep"] = {k: [plain(v) for v in vs] for k, vs in self.sweep.items()}
        return tomli_w.dumps(doc)

    def with_overrides(self, overrides) -> Job:
        """The same job with overrides applied (like --set) and everything re-validated."""
        flat = {k: v for k, v in to_dict(self.config).items()
                if k not in self.sweep and v is not None}
        sweep = dict(self.sweep)
        explicit = self.explicit_keys | apply(flat, sweep, overrides)
        return resolve(flat, sweep, explicit, self.source, self.base_dir)

    def resolve_path(self, p) -> Path:
        """A path from the job file: relative to the job file's folder, or a shipped file
        (gcc_mpi.job.paths)."""
        return located(p, self.base_dir)


def select_points(job: Job, index: int | None = None) -> list:
    """The sweep points a run covers: all of them, or only point ``index`` (``--point I``, one
    task of a job array). The point keeps its index, so its group is ``point_<index>`` and its
    trials draw the same seeds as in a run of the whole job."""
    if index is None:
        return list(job.points)
    count = len(job.points)
    if not 0 <= index < count:
        allowed = "0" if count == 1 else f"0..{count - 1}"
        raise JobError("--point", f"must be a sweep point index in {allowed} (the job has {count} "
                                  f"sweep point{'s' if count > 1 else ''}), got {index}")
    return [job.points[index]]


def plain(v):
    return list(v) if isinstance(v, tuple) else v


def checked_key(k: str, value, where=""):
    if k not in KEYS and plugin_option(k) is not None:
        return value  # a plug-in's option: its class checks it when the scheme is built
    return checked(k, KEYS[k], value, where)


def make(values: dict) -> Config:
    """Config from {dotted key: normalised value}, checked for consistency."""
    made = {}
    for table in sorted(TABLES, key=lambda t: -t.count(".")):     # sub-tables first
        kw = {f.name: values[f"{table}.{f.name}"]
              for f in fields(TABLES[table]) if "check" in f.metadata}
        for sub in TABLES:
            if sub.rpartition(".")[0] == table:
                kw[sub.rpartition(".")[2].replace("-", "_")] = made[sub]
        if table == "code":
            kw["plugins"] = plugins(values)
        made[table] = TABLES[table](**kw)
    config = Config(**{t: made[t] for t in TABLES if "." not in t})
    consistent(config)
    return config


def replace(config: Config, updates: Mapping[str, Any]) -> Config:
    """A copy of config with some dotted keys changed, re-validated."""
    values = to_dict(config)
    for k, v in updates.items():
        if k not in KEYS and plugin_option(k) is None:
            raise unknown(k)
        values[k] = checked_key(k, v)
    return make(values)


def resolve(flat: dict, sweep: dict, explicit: set, source, base_dir) -> Job:
    values = {k: checked_key(k, flat.get(k, DEFAULTS[k])) for k in KEYS}
    values.update((k, v) for k, v in flat.items() if k not in KEYS)  # plug-ins' options
    swept = {}
    for k, vs in sweep.items():
        shown = "sweep." + quote(k)
        if k in NOT_SWEPT:
            raise JobError(shown, "cannot be swept (one job has one name, seed and time limit); "
                                  "sweep other keys")
        if not isinstance(vs, (list, tuple)) or not vs:
            raise JobError(shown, f"must be a non-empty list of values, got {show(vs)}")
        swept[k] = [checked_key(k, v, where=" in [sweep]") for v in vs]
    count = math.prod(len(vs) for vs in swept.values())
    if count > MAX_POINTS:
        raise JobError("sweep", f"must have at most {MAX_POINTS} points, got {count}")
    points = []
    for i, combo in enumerate(itertools.product(*swept.values())):
        params = dict(zip(swept, combo))
        try:
            points.append(Point(i, params, make(values | params)))
        except JobError as e:
            if not params:
                raise
            where = ", ".join(f"{k}={show(v)}" for k, v in params.items())
            message = str(e).removeprefix(f"{e.key}: ")
            raise JobError(e.key, f"{message} at sweep point {i} ({where})") from None
    options_of_listed_schemes(points, [*flat, *swept])
    return Job(points[0].config, swept, points, source, Path(base_dir), frozenset(explicit))


def options_of_listed_schemes(points, keys):
    """JobError for options of a plug-in scheme that no sweep point lists (a misspelt name)."""
    listed = list(dict.fromkeys(s for p in points for s in p.config.code.schemes))
    for k in keys:
        where = plugin_option(k)
        if where is not None and where[0] not in listed:
            table = dotted(("code", where[0]))
            raise JobError(table, f"holds the options of a scheme that code.schemes does not "
                                  f"list{did_you_mean(where[0], listed)}")


# --- overrides ------------------------------------------------------------------------------------

def parse_override(s: str) -> tuple[str, Any]:
    """'stragglers.count=8' -> ('stragglers.count', 8). VALUE is TOML; anything else is a string."""
    k, eq, text = s.partition("=")
    k = k.strip()
    if not eq or not k:
        raise JobError("--set", f"must be KEY=VALUE (e.g. stragglers.count=8), got {show(s)}")
    try:
        doc = tomllib.loads(f"v = {text}")
        return k, doc["v"] if doc.keys() == {"v"} else text.strip()
    except (tomllib.TOMLDecodeError, RecursionError):
        return k, text.strip()


def apply(flat: dict, sweep: dict, overrides) -> set:
    """Apply overrides in place (a swept key set plainly leaves the sweep, and vice versa);
    return the keys they name."""
    named = set()
    for o in overrides.items() if isinstance(overrides, Mapping) else overrides:
        k, v = parse_override(o) if isinstance(o, str) else o
        name = k.removeprefix("sweep.")
        if name not in KEYS and (where := plugin_option(name)) is not None:
            name = dotted(("code", *where))  # as the job file's table spells it
        elif name not in KEYS:
            raise unknown(name, k)
        if k.startswith("sweep."):
            sweep[name] = v
            flat.pop(name, None)
        else:
            flat[name] = v
            sweep.pop(name, None)
        named.add(name)
    return named
