"""The job file's schema: its tables and keys, each with its check and default.

The schema is declared once, as the frozen dataclasses below: every field made with ``setting(check,
default)`` is a job-file key, its dotted name is ``<table>.<field>`` (``code.gcc-manifold`` is the
``gcc_manifold`` field of ``CodeSection``). Adding a key is one line. Two tables are read from
where their facts live: a built-in scheme's ``[code.<name>]`` options from its row of the registry
(``registry.BUILT_IN``) and ``[stragglers]`` from the straggler models (``stragglers.MODELS``,
rebuilt when a model is registered); ``[adversaries]`` is ``adversaries.PARAMS``.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field, fields, make_dataclass
from types import MappingProxyType
from typing import Any
from collections.abc import Mapping

from ..errors import JobError
from . import adversaries, stragglers
from .checks import (
    BOOL, NO, Bad, Check, choice, did_you_mean, integer, int_range, number, optional, or_words,
    quote, setting, text,
)
from .keys import key_parts
from .registry import BUILT_IN, NAMES, available, is_plugin

# decode.pipeline: rounds in flight; each holds a TASK, STOP and REPLY row per worker
MAX_PIPELINE = 64


def scheme_list(v):
    if not isinstance(v, (list, tuple)) or not v or not all(isinstance(s, str) for s in v):
        return NO
    for s in v:
        if s not in NAMES and not is_plugin(s):
            raise Bad(not_a_scheme(s))
        if v.count(s) > 1:
            raise Bad(f"; {quote(s)} is listed twice")
    return tuple(v)


def not_a_scheme(s):
    if "/" in s or "\\" in s:
        return (f"; {quote(s)}: a plug-in's name is its group in the results file, which cannot "
                'hold a folder: put the file beside the job file ("my_codes.py:MyCode") or '
                'make it importable ("my_package.codes:MyCode")')
    if ":" in s:
        return f'; {quote(s)} is not "file.py:Class" or "module:Class"'
    names = available()
    return f"; unknown scheme {quote(s)}{did_you_mean(s, names)}"


def check_schemes(names, key):
    """``names`` as a tuple when each is a scheme (built-in or plug-in) and none is repeated;
    else JobError naming ``key``, as for code.schemes (e.g. ``plan --schemes``)."""
    try:
        return scheme_list(list(names))
    except Bad as e:
        raise JobError(key, e.hint.removeprefix("; ")) from None


def shape_list(v):
    ok = isinstance(v, (list, tuple)) and v and all(
        isinstance(x, numbers.Integral) and not isinstance(x, bool) and 1 <= x <= 2**31 for x in v)
    return tuple(int(x) for x in v) if ok else NO


SCHEMES = Check("a non-empty list of distinct scheme names: " + ", ".join(NAMES) + ", or "
                'plug-ins ("file.py:Class", "module:Class", an installed entry point)',
                scheme_list)
SHAPE = Check("a non-empty list of integers >= 1 (one input's shape, e.g. [1, 8, 8])", shape_list)


@dataclass(frozen=True)
class JobSection:
    # it begins every default output's file name, whose 255 bytes must also hold
    # "-p<I>-probe-<YYYYmmdd-HHMMSS>.h5"
    name: str = setting(text(r"[A-Za-z0-9._-]{1,200}", 'a name of at most 200 letters, digits, '
                                                       '".", "_" and "-"'), "job")
    seed: int = setting(integer(0), 0)
    trials: int = setting(integer(1), 100)
    # seconds; stop cleanly after
    time_limit: float | None = setting(optional(number(0.0, above=True)))


@dataclass(frozen=True)
class DataSection:
    source: str = setting(choice("digits", "sphere", "swissroll", "torus", "gaussian", "file"),
                          "digits")
    batch: int = setting(integer(1), 10)              # K
    dim: int = setting(integer(1), 50)                # ambient dimension of synthetic sources
    noise: float = setting(number(0.0), 0.0)
    path: str | None = setting(optional(text()))  # source = "file": .npy, .npz or .h5
    key: str | None = setting(optional(text()))
    labels_key: str | None = setting(optional(text()))


@dataclass(frozen=True)
class TargetSection:
    kind: str = setting(choice("mlp", "polynomial", "linear", "onnx", "python"), "mlp")
    degree: int = setting(integer(1), 3)
    outputs: int = setting(integer(1), 4)
    # mlp weights (.npz); None = the shipped digits MLP
    model: str | None = setting(optional(text()))
    function: str | None = setting(optional(text(r".+:[A-Za-z_]\w*",
                                                 '"module:function" or "file.py:function"')))
    # onnx model file; None = the shipped digits CNN
    path: str | None = setting(optional(text()))
    # onnx input name; None = the model's only input
    input: str | None = setting(optional(text()))
    # onnx output name; None = the model's only output
    output: str | None = setting(optional(text()))
    # onnx per-sample input shape; None = the model's
    shape: tuple[int, ...] | None = setting(optional(SHAPE))
    # relacc; auto: mlp yes, onnx if m > 1, python by fn.classifier
    classifier: bool | str = setting(or_words(BOOL, "auto"), "auto")


def table(name: str, keys: list, **kw) -> type:
    """A frozen dataclass made from ``keys`` ((name, type, field) each), as if defined here."""
    made = make_dataclass(name, keys, frozen=True, **kw)
    made.__module__ = __name__
    return made


def attribute(name: str) -> str:
    """The attribute of a table or key whose name has a "-" (code.gcc-manifold)."""
    return name.replace("-", "_")


# one dataclass per built-in scheme with options: its [code.<name>] table, from its registry row
OPTION_TABLES = {
    s.name: table(f"{s.cls}Options", [(name, Any, setting(o.check, o.default))
                                      for name, o in s.options.items()])
    for s in BUILT_IN.values() if s.options}


def options(self, scheme: str) -> Mapping[str, Any]:
    """The [code.<scheme>] options as a read-only mapping (empty for schemes without
    options)."""
    if is_plugin(scheme):
        return MappingProxyType(dict(dict(self.plugins).get(scheme, ())))
    if scheme not in NAMES:
        raise JobError("code.schemes", f"unknown scheme {quote(str(scheme))}"
                                       f"{did_you_mean(scheme, NAMES)}")
    opts = getattr(self, attribute(scheme), None)
    return MappingProxyType({f.name: getattr(opts, f.name) for f in fields(opts)}
                            if opts else {})


CodeSection = table("CodeSection", [
    ("workers", int, setting(integer(1), 40)),                            # N
    ("schemes", tuple, setting(SCHEMES, ("bacc", "letcc", "gcc"))),
    *[(attribute(name), table, field(default_factory=table))
      for name, table in OPTION_TABLES.items()],
    # the options of plug-in schemes, ((scheme, ((name, value), ...)), ...) in file order: what
    # a [code."my_codes.py:MyCode"] table holds is checked by the class itself when it is built
    ("plugins", tuple, field(default=())),
], namespace={"options": options})


@dataclass(frozen=True)
class DecodeSection:
    wait: str = setting(choice("fastest", "deadline", "all"), "fastest")
    stragglers: int | str = setting(or_words(integer(0), "auto"), "auto")   # S
    deadline: float | None = setting(optional(number(0.0, above=True)))    # seconds
    pipeline: int = setting(int_range(1, MAX_PIPELINE), 1)               # rounds in flight (MPI)


def straggler_section() -> type:
    """The [stragglers] table: ``model``, then every registered model's parameters."""
    return table("StragglerSection", [
        ("model", str, setting(choice(*stragglers.MODELS), "fixed")),
        *[(name, Any, setting(p.check, p.default)) for name, p in stragglers.params().items()],
    ])


StragglerSection = straggler_section()

# [adversaries]: workers whose results are wrong (job/adversaries.py), beside the stragglers
AdversarySection = table("AdversarySection", [
    (name, Any, setting(p.check, p.default)) for name, p in adversaries.PARAMS.items()])

TABLES = {}    # {table: its dataclass}, in file order
KEYS = {}      # {dotted key: its Check}
DEFAULTS = {}  # {dotted key: its default}


def build() -> None:
    """Fill TABLES, KEYS and DEFAULTS (again when a straggler model is registered)."""
    global StragglerSection
    StragglerSection = straggler_section()
    TABLES.clear()
    TABLES.update({"job": JobSection, "data": DataSection, "target": TargetSection,
                   "code": CodeSection, **{f"code.{s}": t for s, t in OPTION_TABLES.items()},
                   "stragglers": StragglerSection, "adversaries": AdversarySection,
                   "decode": DecodeSection})
    KEYS.clear()
    KEYS.update({f"{t}.{f.name}": f.metadata["check"]
                 for t, cls in TABLES.items() for f in fields(cls) if "check" in f.metadata})
    DEFAULTS.clear()
    DEFAULTS.update({f"{t}.{f.name}": f.default
                     for t, cls in TABLES.items() for f in fields(cls) if "check" in f.metadata})


build()
stragglers.on_change(build)

NOT_SWEPT = ("job.name", "job.seed", "job.time_limit")


def schema() -> list[tuple[str, Any, str]]:
    """(dotted key, default, what is allowed) for every key, in file order (for docs and
    `validate`)."""
    return [(k, DEFAULTS[k], check.allowed) for k, check in KEYS.items()]


def plugin_option(k: str) -> tuple | None:
    """(scheme, option) when ``k`` is an option of a plug-in scheme, 'code."x.py:C".option'."""
    parts = key_parts(k)
    if len(parts) > 3 and '"' not in k and "'" not in k:  # code.my_codes.py:MyCode.scale
        parts = (parts[0], ".".join(parts[1:-1]), parts[-1])
    if len(parts) == 3 and parts[0] == "code" and is_plugin(parts[1]):
        return parts[1], parts[2]
    return None


def plugins(values: dict) -> tuple:
    """CodeSection.plugins from {dotted key: value}."""
    tables = {}
    for k, v in values.items():
        if k not in KEYS and (where := plugin_option(k)) is not None:
            tables.setdefault(where[0], []).append((where[1], v))
    return tuple((scheme, tuple(opts)) for scheme, opts in tables.items())

