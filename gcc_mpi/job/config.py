"""Job file (TOML) -> validated, frozen configuration; sweeps; ``--set`` overrides.

The schema is declared once, as the frozen dataclasses below: every field made with ``setting(check,
default)`` is a job-file key, its dotted name is ``<table>.<field>`` (``code.gcc-manifold`` is the
``gcc_manifold`` field of ``CodeSection``). Adding a key is one line. Everything the user wrote is
checked here, before any MPI work, and every problem is one ``JobError`` naming the dotted key,
the bad value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import json
import math
import numbers
import re
import sys
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any
from collections.abc import Callable, Iterable, Mapping

import tomli_w

from ..errors import JobError
from .registry import NAMES, available, is_plugin

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MAX_POINTS = 100_000
# decode.pipeline: rounds in flight; each holds a TASK, STOP and REPLY row per worker
MAX_PIPELINE = 64


# --- value checks: each is "what is allowed" and a function giving the normalised value or _NO ----

_NO = object()


class _Bad(Exception):
    def __init__(self, hint="", allowed=None):
        self.hint = hint
        self.allowed = allowed  # instead of the check's own text, when that would mislead


@dataclass(frozen=True)
class Check:
    allowed: str                    # e.g. "an integer >= 1"
    accept: Callable[[Any], Any]    # the normalised value, or _NO (or raises _Bad with a hint)
    words: tuple = ()               # names for a did-you-mean

    def __call__(self, v):
        out = self.accept(v)
        if out is _NO:
            raise _Bad(_did_you_mean(v, self.words))
        return out


def _quote(s: str) -> str:
    """s in double quotes, escaped so that it prints on one line."""
    q = json.dumps(s, ensure_ascii=False)
    return q if q.isprintable() else json.dumps(s)


def _show(v, depth=0) -> str:
    """A value as the user would write it in TOML, on one short line."""
    if isinstance(v, bool):
        s = "true" if v else "false"
    elif isinstance(v, str):
        s = _quote(v)
    elif isinstance(v, dict):
        s = "a table"
    elif isinstance(v, (list, tuple)):
        s = "[...]" if depth > 2 else ("[" + ", ".join(_show(x, depth + 1) for x in v[:8])
                                       + (", ...]" if len(v) > 8 else "]"))
    else:
        s = str(v)
    return s if len(s) <= 80 else s[:77] + "..."


def _did_you_mean(word, options, quote='"'):
    close = (difflib.get_close_matches(word, options, n=1)
             if isinstance(word, str) and options else [])
    return f"; did you mean {quote}{close[0]}{quote}?" if close else ""


def _as_float(v):
    """v as a finite float (ints welcome, bools not), else None."""
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        try:
            return float(v) if math.isfinite(float(v)) else None
        except OverflowError:
            return None
    return None


INT_MAX = 2**63 - 1  # counts and seeds are stored as 64-bit integers


def _int(lo):
    def accept(v):
        if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < lo:
            return _NO
        if v > INT_MAX:
            raise _Bad(allowed=f"an integer >= {lo} and <= 2^63 - 1 = {INT_MAX}")
        return int(v)

    return Check(f"an integer >= {lo}", accept)


def _int_range(lo, hi):
    ok = lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool) and lo <= v <= hi  # noqa: E731
    return Check(f"an integer in [{lo}, {hi}]", lambda v: int(v) if ok(v) else _NO)


def _num(lo=0.0, *, above=False, hi=None):
    ok = lambda x: x is not None and (x > lo if above else x >= lo) and (hi is None or x <= hi)  # noqa: E731
    allowed = (f"a number in [{lo:g}, {hi:g}]" if hi is not None
               else f"a number {'>' if above else '>='} {lo:g}")
    return Check(allowed, lambda v: x if ok(x := _as_float(v)) else _NO)


def _choice(*names):
    return Check("one of " + ", ".join(map(_quote, names)),
                 lambda v: v if isinstance(v, str) and v in names else _NO, names)


def _text(pattern=r".+", allowed="a non-empty string"):
    return Check(allowed,
                 lambda v: v if isinstance(v, str) and re.fullmatch(pattern, v, re.S) else _NO)


def _or_words(inner, *words):
    return Check(", ".join(map(_quote, words)) + " or " + inner.allowed,
                 lambda v: v if isinstance(v, str) and v in words else inner.accept(v), words)


def _optional(inner):
    return Check(inner.allowed, lambda v: None if v is None else inner.accept(v))


def _scheme_list(v):
    if not isinstance(v, (list, tuple)) or not v or not all(isinstance(s, str) for s in v):
        return _NO
    for s in v:
        if s not in NAMES and not is_plugin(s):
            raise _Bad(_not_a_scheme(s))
        if v.count(s) > 1:
            raise _Bad(f"; {_quote(s)} is listed twice")
    return tuple(v)


def _not_a_scheme(s):
    if "/" in s or "\\" in s:
        return (f"; {_quote(s)}: a plug-in's name is its group in the results file, which cannot "
                'hold a folder: put the file beside the job file ("my_codes.py:MyCode") or '
                'make it importable ("my_package.codes:MyCode")')
    if ":" in s:
        return f'; {_quote(s)} is not "file.py:Class" or "module:Class"'
    names = available()
    return f"; unknown scheme {_quote(s)}{_did_you_mean(s, names)}"


def check_schemes(names, key):
    """``names`` as a tuple when each is a scheme (built-in or plug-in) and none is repeated;
    else JobError naming ``key``, as for code.schemes (e.g. ``plan --schemes``)."""
    try:
        return _scheme_list(list(names))
    except _Bad as e:
        raise JobError(key, e.hint.removeprefix("; ")) from None


def _shape_list(v):
    ok = isinstance(v, (list, tuple)) and v and all(
        isinstance(x, numbers.Integral) and not isinstance(x, bool) and 1 <= x <= 2**31 for x in v)
    return tuple(int(x) for x in v) if ok else _NO


def setting(check, default=None):
    """A job-file key: a dataclass field carrying its check."""
    return field(default=default, metadata={"check": check})


_SCHEMES = Check("a non-empty list of distinct scheme names: " + ", ".join(NAMES) + ", or "
                 'plug-ins ("file.py:Class", "module:Class", an installed entry point)',
                 _scheme_list)
_LAMBDA = _or_words(_num(0.0), "auto", "gcv", "loo")
_BOOL = Check("true or false", lambda v: v if isinstance(v, bool) else _NO)
_SHAPE = Check("a non-empty list of integers >= 1 (one input's shape, e.g. [1, 8, 8])", _shape_list)


# --- the schema ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class JobSection:
    # it begins every default output's file name, whose 255 bytes must also hold
    # "-p<I>-probe-<YYYYmmdd-HHMMSS>.h5"
    name: str = setting(_text(r"[A-Za-z0-9._-]{1,200}", 'a name of at most 200 letters, digits, '
                                                         '".", "_" and "-"'), "job")
    seed: int = setting(_int(0), 0)
    trials: int = setting(_int(1), 100)
    # seconds; stop cleanly after
    time_limit: float | None = setting(_optional(_num(0.0, above=True)))


@dataclass(frozen=True)
class DataSection:
    source: str = setting(_choice("digits", "sphere", "swissroll", "torus", "gaussian", "file"),
                          "digits")
    batch: int = setting(_int(1), 10)              # K
    dim: int = setting(_int(1), 50)                # ambient dimension of synthetic sources
    noise: float = setting(_num(0.0), 0.0)
    path: str | None = setting(_optional(_text()))  # source = "file": .npy, .npz or .h5
    key: str | None = setting(_optional(_text()))
    labels_key: str | None = setting(_optional(_text()))


@dataclass(frozen=True)
class TargetSection:
    kind: str = setting(_choice("mlp", "polynomial", "linear", "onnx", "python"), "mlp")
    degree: int = setting(_int(1), 3)
    outputs: int = setting(_int(1), 4)
    # mlp weights (.npz); None = the shipped digits MLP
    model: str | None = setting(_optional(_text()))
    function: str | None = setting(_optional(_text(r".+:[A-Za-z_]\w*",
                                                   '"module:function" or "file.py:function"')))
    # onnx model file; None = the shipped digits CNN
    path: str | None = setting(_optional(_text()))
    # onnx input name; None = the model's only input
    input: str | None = setting(_optional(_text()))
    # onnx output name; None = the model's only output
    output: str | None = setting(_optional(_text()))
    # onnx per-sample input shape; None = the model's
    shape: tuple[int, ...] | None = setting(_optional(_SHAPE))
    # relacc; auto: mlp yes, onnx if m > 1, python by fn.classifier
    classifier: bool | str = setting(_or_words(_BOOL, "auto"), "auto")


@dataclass(frozen=True)
class LccOptions:
    degree: int | str = setting(_or_words(_int(1), "auto"), "auto")


@dataclass(frozen=True)
class LetccOptions:
    lambda_enc: float | str = setting(_LAMBDA, "auto")
    lambda_dec: float | str = setting(_LAMBDA, "auto")


@dataclass(frozen=True)
class GccOptions:
    kernel: str = setting(_choice("sobolev2", "matern32", "matern52", "gaussian"), "matern52")
    # auto: per fit, with lambda
    lengthscale: float | str = setting(_or_words(_num(0.0, above=True), "auto"), "auto")
    lambda_enc: float | str = setting(_LAMBDA, "auto")
    lambda_dec: float | str = setting(_LAMBDA, "auto")
    # where the decoder fits: "beta" the papers' (along the curve parameter), "input" the input
    # space, "auto" the input space below gcc.DENSE results per input, else the better of both
    decoder: str = setting(_choice("auto", "input", "beta"), "auto")


@dataclass(frozen=True)
class ManifoldOptions(GccOptions):
    neighbors: int = setting(_int(1), 8)
    ordering: str = setting(_choice("fiedler", "geodesic", "none"), "geodesic")
    placement: str = setting(_choice("chebyshev", "arclength"), "arclength")
    laplacian: float = setting(_num(0.0), 0.0)
    pool: int = setting(_int(0), 0)


@dataclass(frozen=True)
class CodeSection:
    workers: int = setting(_int(1), 40)            # N
    schemes: tuple[str, ...] = setting(_SCHEMES, ("bacc", "letcc", "gcc"))
    lcc: LccOptions = field(default_factory=LccOptions)
    letcc: LetccOptions = field(default_factory=LetccOptions)
    gcc: GccOptions = field(default_factory=GccOptions)
    gcc_manifold: ManifoldOptions = field(default_factory=ManifoldOptions)
    # the options of plug-in schemes, ((scheme, ((name, value), ...)), ...) in file order: what
    # a [code."my_codes.py:MyCode"] table holds is checked by the class itself when it is built
    plugins: tuple = ()

    def options(self, scheme: str) -> Mapping[str, Any]:
        """The [code.<scheme>] options as a read-only mapping (empty for schemes without
        options)."""
        if is_plugin(scheme):
            return MappingProxyType(dict(dict(self.plugins).get(scheme, ())))
        if scheme not in NAMES:
            raise JobError("code.schemes", f"unknown scheme {_quote(str(scheme))}"
                                           f"{_did_you_mean(scheme, NAMES)}")
        opts = getattr(self, scheme.replace("-", "_"), None)
        return MappingProxyType({f.name: getattr(opts, f.name) for f in fields(opts)}
                                if opts else {})


@dataclass(frozen=True)
class StragglerSection:
    model: str = setting(_choice("none", "fixed", "adversarial", "bernoulli", "exponential",
                             "shifted-exponential", "pareto", "lognormal", "trace"), "fixed")
    count: int = setting(_int(0), 0)
    delay: float = setting(_num(0.0), 0.1)         # seconds
    p: float = setting(_num(0.0, hi=1.0), 0.1)
    rate: float = setting(_num(0.0, above=True), 50.0)   # 1/s
    shift: float = setting(_num(0.0), 0.02)        # s
    shape: float = setting(_num(0.0, above=True), 2.0)
    scale: float = setting(_num(0.0, above=True), 0.01)  # s
    median: float = setting(_num(0.0, above=True), 0.02)  # s
    sigma: float = setting(_num(0.0), 0.5)
    path: str | None = setting(_optional(_text()))  # model = "trace": probe .h5, .npy or .csv
    shuffle: bool = setting(_BOOL, False)     # trace: random trace workers each trial
    resample: bool = setting(_BOOL, False)    # trace: allow fewer trace workers than N


@dataclass(frozen=True)
class DecodeSection:
    wait: str = setting(_choice("fastest", "deadline", "all"), "fastest")
    stragglers: int | str = setting(_or_words(_int(0), "auto"), "auto")   # S
    deadline: float | None = setting(_optional(_num(0.0, above=True)))    # seconds
    pipeline: int = setting(_int_range(1, MAX_PIPELINE), 1)               # rounds in flight (MPI)


@dataclass(frozen=True)
class Config:
    """One fully resolved configuration (one sweep point)."""
    job: JobSection = field(default_factory=JobSection)
    data: DataSection = field(default_factory=DataSection)
    target: TargetSection = field(default_factory=TargetSection)
    code: CodeSection = field(default_factory=CodeSection)
    stragglers: StragglerSection = field(default_factory=StragglerSection)
    decode: DecodeSection = field(default_factory=DecodeSection)

    def with_workers(self, n: int) -> Config:
        return replace(self, {"code.workers": n})


TABLES = {"job": JobSection, "data": DataSection, "target": TargetSection, "code": CodeSection,
          "code.lcc": LccOptions, "code.letcc": LetccOptions, "code.gcc": GccOptions,
          "code.gcc-manifold": ManifoldOptions, "stragglers": StragglerSection,
          "decode": DecodeSection}
KEYS = {f"{t}.{f.name}": f.metadata["check"]
        for t, cls in TABLES.items() for f in fields(cls) if "check" in f.metadata}
DEFAULTS = {f"{t}.{f.name}": f.default
            for t, cls in TABLES.items() for f in fields(cls) if "check" in f.metadata}
NOT_SWEPT = ("job.name", "job.seed", "job.time_limit")


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
    return ".".join(p if re.fullmatch(r"[A-Za-z0-9_-]+", p) else _quote(p) for p in parts)


def plugin_option(k: str) -> tuple | None:
    """(scheme, option) when ``k`` is an option of a plug-in scheme, 'code."x.py:C".option'."""
    parts = key_parts(k)
    if len(parts) > 3 and '"' not in k and "'" not in k:  # code.my_codes.py:MyCode.scale
        parts = (parts[0], ".".join(parts[1:-1]), parts[-1])
    if len(parts) == 3 and parts[0] == "code" and is_plugin(parts[1]):
        return parts[1], parts[2]
    return None


def _plugins(values: dict) -> tuple:
    """CodeSection.plugins from {dotted key: value}."""
    tables = {}
    for k, v in values.items():
        if k not in KEYS and (where := plugin_option(k)) is not None:
            tables.setdefault(where[0], []).append((where[1], v))
    return tuple((scheme, tuple(opts)) for scheme, opts in tables.items())


def schema() -> list[tuple[str, Any, str]]:
    """(dotted key, default, what is allowed) for every key, in file order (for docs and
    `validate`)."""
    return [(k, DEFAULTS[k], check.allowed) for k, check in KEYS.items()]


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
                node[name] = _plain(v)
        if self.sweep:
            doc["sweep"] = {k: [_plain(v) for v in vs] for k, vs in self.sweep.items()}
        return tomli_w.dumps(doc)

    def with_overrides(self, overrides) -> Job:
        """The same job with overrides applied (like --set) and everything re-validated."""
        flat = {k: v for k, v in to_dict(self.config).items()
                if k not in self.sweep and v is not None}
        sweep = dict(self.sweep)
        explicit = self.explicit_keys | _apply(flat, sweep, overrides)
        return _resolve(flat, sweep, explicit, self.source, self.base_dir)

    def resolve_path(self, p) -> Path:
        """A path from the job file, relative to the job file's folder."""
        p = Path(p).expanduser()
        return p if p.is_absolute() else self.base_dir / p


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


def _plain(v):
    return list(v) if isinstance(v, tuple) else v


# --- access ---------------------------------------------------------------------------------------

def _key_text(k: str) -> str:
    return k if re.fullmatch(r"[\w.-]+", k, re.ASCII) else _quote(k)


def _suggest(k: str, names) -> str | None:
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


def _unknown(k: str, shown: str | None = None, value=None) -> JobError:
    shown = shown or _key_text(k)
    table = k.rpartition(".")[0]
    if k == "sweep":
        return JobError(shown, 'is the table of swept keys; sweep one key with '
                               '--set "sweep.stragglers.count=[0, 5, 10]"')
    if k in TABLES:
        keys = [n.rpartition(".")[2] for n in KEYS if n.rpartition(".")[0] == k]
        return JobError(shown, "is a table, not a key; set one of its keys: " + ", ".join(keys))
    if (close := _suggest(k, TABLES if isinstance(value, dict) else KEYS)) is not None:
        hint = f"; did you mean '{close}'?"
    elif shown.startswith("sweep."):
        hint = '; [sweep] takes dotted keys such as "stragglers.count" = [0, 5, 10]'
    elif table in TABLES:
        hint = "; allowed: " + ", ".join(n.rpartition(".")[2] if n in KEYS else f"[{n}]"
                                         for n in [*KEYS, *TABLES] if n.rpartition(".")[0] == table)
    else:
        hint = "; allowed tables: " + ", ".join(f"[{t}]" for t in [*TABLES, "sweep"])
    return JobError(shown, f"unknown {'table' if isinstance(value, dict) else 'key'}{hint}")


def get(config: Config, dotted_key: str):
    """The value of one dotted key, e.g. get(cfg, "code.gcc-manifold.neighbors")."""
    if (where := plugin_option(dotted_key)) is not None:
        scheme, name = where
        options = config.code.options(scheme)
        if name not in options:
            raise _unknown(dotted_key)
        return options[name]
    if dotted_key not in KEYS and dotted_key not in TABLES:
        raise _unknown(dotted_key)
    obj = config
    for part in dotted_key.split("."):
        obj = getattr(obj, part.replace("-", "_"))
    return obj


def to_dict(config: Config) -> dict:
    """{dotted key: value} for every key, and every option of a plug-in scheme."""
    return {**{k: get(config, k) for k in KEYS},
            **{dotted(("code", scheme, name)): v
               for scheme, options in config.code.plugins for name, v in options}}


def resolved_stragglers(config: Config) -> int:
    """S, the number of results not waited for when decode.wait = "fastest"."""
    s, n = config.stragglers, config.code.workers
    if config.decode.stragglers != "auto":
        return config.decode.stragglers
    if s.model in ("fixed", "adversarial"):
        return s.count
    return math.floor(s.p * n + 0.5) if s.model == "bernoulli" else 0   # round half up


def resolved_lcc_degree(config: Config) -> int:
    degree, kind = config.code.lcc.degree, config.target.kind
    if degree != "auto":
        return degree
    if kind in ("polynomial", "linear"):
        return config.target.degree if kind == "polynomial" else 1
    raise JobError("code.lcc.degree", f'must be set when target.kind is "{kind}" (lcc is exact '
                                      'only for polynomials)')


# --- validation -----------------------------------------------------------------------------------

def _checked(k: str, value, where=""):
    if k not in KEYS and plugin_option(k) is not None:
        return value  # a plug-in's option: its class checks it when the scheme is built
    try:
        return KEYS[k](value)
    except _Bad as bad:
        raise JobError(k, f"must be {bad.allowed or KEYS[k].allowed}, got {_show(value)}{where}"
                          f"{bad.hint}") from None


def _consistent(c: Config) -> None:
    K, N, s = c.data.batch, c.code.workers, c.stragglers
    if c.target.kind == "python" and c.target.function is None:
        raise JobError("target.function", 'required when target.kind = "python" '
                                          '("module:function" or "file.py:function")')
    if (c.target.model is not None and c.target.model.lower().endswith(".onnx")
            and c.target.kind in ("mlp", "onnx")):
        raise JobError("target.model", 'is an ONNX file: set target.kind = "onnx" and the file as '
                                       'target.path (target.model is for .npz MLP weights)')
    if c.data.source == "file" and c.data.path is None:
        raise JobError("data.path", 'required when data.source = "file" (a .npy, .npz or .h5 file)')
    if s.model == "trace" and s.path is None:
        raise JobError("stragglers.path", 'required when stragglers.model = "trace" (a probe '
                                          'file, or a .npy or .csv of delays: rounds x workers)')
    if c.data.source in ("sphere", "swissroll", "torus") and c.data.dim < 3:
        raise JobError("data.dim", f'must be >= 3 for data.source = "{c.data.source}", '
                                   f'got {c.data.dim}')
    if N < K:
        raise JobError("code.workers", f"must be >= data.batch = {K} (every scheme needs N >= K), "
                                       f"got {N}")
    if "lcc" in c.code.schemes:
        d = resolved_lcc_degree(c)
        if N < (K - 1) * d + 1:
            raise JobError("code.workers", f"lcc needs >= (K-1)*degree+1 = {(K - 1) * d + 1} "
                                           f"workers (K = {K}, degree = {d}), got {N}")
    if s.model in ("fixed", "adversarial") and s.count > N:
        raise JobError("stragglers.count", f"must be <= code.workers = {N}, got {s.count}")
    if c.decode.wait == "fastest" and resolved_stragglers(c) > N - 1:
        auto = ("" if c.decode.stragglers != "auto" else f" (auto: stragglers.count = {s.count})"
                if s.model in ("fixed", "adversarial")
                else " (auto: round(stragglers.p * code.workers))")
        raise JobError("decode.stragglers", f"must be <= code.workers - 1 = {N - 1} so that one "
                                            f"result is waited for, got {resolved_stragglers(c)}"
                                            f"{auto}")
    if c.decode.wait == "deadline" and c.decode.deadline is None:
        raise JobError("decode.deadline", 'required when decode.wait = "deadline" (seconds > 0)')


def _make(values: dict) -> Config:
    """Config from {dotted key: normalised value}, checked for consistency."""
    made = {}
    for table in sorted(TABLES, key=lambda t: -t.count(".")):     # sub-tables first
        kw = {f.name: values[f"{table}.{f.name}"]
              for f in fields(TABLES[table]) if "check" in f.metadata}
        for sub in TABLES:
            if sub.rpartition(".")[0] == table:
                kw[sub.rpartition(".")[2].replace("-", "_")] = made[sub]
        if table == "code":
            kw["plugins"] = _plugins(values)
        made[table] = TABLES[table](**kw)
    config = Config(**{t: made[t] for t in TABLES if "." not in t})
    _consistent(config)
    return config


def replace(config: Config, updates: Mapping[str, Any]) -> Config:
    """A copy of config with some dotted keys changed, re-validated."""
    values = to_dict(config)
    for k, v in updates.items():
        if k not in KEYS and plugin_option(k) is None:
            raise _unknown(k)
        values[k] = _checked(k, v)
    return _make(values)


def _resolve(flat: dict, sweep: dict, explicit: set, source, base_dir) -> Job:
    values = {k: _checked(k, flat.get(k, DEFAULTS[k])) for k in KEYS}
    values.update((k, v) for k, v in flat.items() if k not in KEYS)  # plug-ins' options
    swept = {}
    for k, vs in sweep.items():
        shown = "sweep." + _quote(k)
        if k in NOT_SWEPT:
            raise JobError(shown, "cannot be swept (one job has one name, seed and time limit); "
                                  "sweep other keys")
        if not isinstance(vs, (list, tuple)) or not vs:
            raise JobError(shown, f"must be a non-empty list of values, got {_show(vs)}")
        swept[k] = [_checked(k, v, where=" in [sweep]") for v in vs]
    count = math.prod(len(vs) for vs in swept.values())
    if count > MAX_POINTS:
        raise JobError("sweep", f"must have at most {MAX_POINTS} points, got {count}")
    points = []
    for i, combo in enumerate(itertools.product(*swept.values())):
        params = dict(zip(swept, combo))
        try:
            points.append(Point(i, params, _make(values | params)))
        except JobError as e:
            if not params:
                raise
            where = ", ".join(f"{k}={_show(v)}" for k, v in params.items())
            message = str(e).removeprefix(f"{e.key}: ")
            raise JobError(e.key, f"{message} at sweep point {i} ({where})") from None
    _options_of_listed_schemes(points, [*flat, *swept])
    return Job(points[0].config, swept, points, source, Path(base_dir), frozenset(explicit))


def _options_of_listed_schemes(points, keys):
    """JobError for options of a plug-in scheme that no sweep point lists (a misspelt name)."""
    listed = list(dict.fromkeys(s for p in points for s in p.config.code.schemes))
    for k in keys:
        where = plugin_option(k)
        if where is not None and where[0] not in listed:
            table = dotted(("code", where[0]))
            raise JobError(table, f"holds the options of a scheme that code.schemes does not "
                                  f"list{_did_you_mean(where[0], listed)}")


# --- parsing --------------------------------------------------------------------------------------

def parse_override(s: str) -> tuple[str, Any]:
    """'stragglers.count=8' -> ('stragglers.count', 8). VALUE is TOML; anything else is a string."""
    k, eq, text = s.partition("=")
    k = k.strip()
    if not eq or not k:
        raise JobError("--set", f"must be KEY=VALUE (e.g. stragglers.count=8), got {_show(s)}")
    try:
        doc = tomllib.loads(f"v = {text}")
        return k, doc["v"] if doc.keys() == {"v"} else text.strip()
    except (tomllib.TOMLDecodeError, RecursionError):
        return k, text.strip()


def _apply(flat: dict, sweep: dict, overrides) -> set:
    """Apply overrides in place (a swept key set plainly leaves the sweep, and vice versa);
    return the keys they name."""
    named = set()
    for o in overrides.items() if isinstance(overrides, Mapping) else overrides:
        k, v = parse_override(o) if isinstance(o, str) else o
        name = k.removeprefix("sweep.")
        if name not in KEYS and (where := plugin_option(name)) is not None:
            name = dotted(("code", *where))  # as the job file's table spells it
        elif name not in KEYS:
            raise _unknown(name, k)
        if k.startswith("sweep."):
            sweep[name] = v
            flat.pop(name, None)
        else:
            flat[name] = v
            sweep.pop(name, None)
        named.add(name)
    return named


def _flatten(raw: dict) -> tuple[dict, dict]:
    """Nested TOML tables -> ({dotted key: value}, {swept dotted key: values})."""
    flat, sweep = {}, {}

    def walk(prefix, table, out, sweeping):
        for name, v in table.items():
            k = f"{prefix}.{name}" if prefix else name
            shown = "sweep." + _quote(k) if sweeping else None
            if k in KEYS:
                out[k] = v
            elif k in TABLES and isinstance(v, dict):
                walk(k, v, out, sweeping)
            elif sweeping and (where := plugin_option(k)) is not None:
                out[dotted(("code", *where))] = v
            elif prefix == "code" and is_plugin(name) and not sweeping:
                if not isinstance(v, dict):
                    raise JobError(dotted(("code", name)), f"must be a table of the scheme's "
                                                           f"options, got {_show(v)}")
                out.update((dotted(("code", name, option)), value) for option, value in v.items())
            elif k in TABLES and not sweeping:
                raise JobError(k, f"must be a table [{k}], got {_show(v)}")
            else:
                raise _unknown(k, shown, v)

    raw = dict(raw)
    raw_sweep = raw.pop("sweep", {})
    if not isinstance(raw_sweep, dict):
        raise JobError("sweep", f'must be a table of "dotted.key" = [values], '
                                f'got {_show(raw_sweep)}')
    walk("", raw, flat, False)
    walk("", raw_sweep, sweep, True)
    for k in sweep:
        if k in flat:
            raise JobError(k, f"is both set in [{k.rpartition('.')[0]}] and swept in [sweep]; "
                              "keep one")
    return flat, sweep


def _loads(text: str) -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        m = re.fullmatch(r"(.*) \(at line (\d+), column (\d+)\)", str(e))
        raise JobError("job file", f"invalid TOML at line {m[2]}, column {m[3]}: {m[1]}" if m
                       else f"invalid TOML: {e}") from None
    except RecursionError:
        raise JobError("job file", "invalid TOML: nested too deeply") from None


def _set_defaults(flat: dict, sweep: dict, explicit: set, defaults) -> None:
    for k, v in (defaults or {}).items():
        if k not in KEYS:
            raise _unknown(k)
        if k not in explicit and k not in sweep:
            flat[k] = v


def parse_job(text: str, *, base_dir=".", overrides: Iterable = (), defaults: Mapping | None = None,
              source=None) -> Job:
    """Job from TOML text. overrides ("KEY=VALUE" strings, (key, value) pairs or a dict) apply on
    top; defaults ({key: value}) replace the built-in defaults of keys the user did not write
    (the MPI runtime passes {"code.workers": ranks - 1})."""
    flat, sweep = _flatten(_loads(text))
    explicit = set(flat) | set(sweep) | _apply(flat, sweep, overrides)
    _set_defaults(flat, sweep, explicit, defaults)
    return _resolve(flat, sweep, explicit, source, base_dir)


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


def load(path=None, overrides: Iterable = (), defaults: Mapping | None = None) -> Job:
    """The job in the TOML file ``path``, or the default job (None), with ``overrides``
    ("KEY=VALUE" strings, (key, value) pairs or a dict) and new ``defaults`` applied: the one
    way the commands and the Python API load a job."""
    if path is None:
        return load_default_job(overrides, defaults)
    return load_job(path, overrides, defaults)


# The default job's batch and stragglers follow its N (benchmarks/default_job.py measures the rule
# at every N from 3 to 63): S = N/4 late workers, and K = (N - S)/2 inputs so that every
# approximate decoder has at least two results per input (with fewer, gcc loses 10-20 dB at small
# N), capped at 10 inputs (the digits batch every shipped job was tuned at).
DEFAULT_K_MAX = 10


def fit_default_job(workers: int) -> tuple[int, int]:
    """(K, S) of the default job on N = ``workers`` workers: S = N // 4 (at least 1 and at most
    N - 1) stragglers and K = (N - S) // 2 inputs (at least 1, at most DEFAULT_K_MAX)."""
    S = min(max(1, workers // 4), max(workers - 1, 0))
    return max(1, min(DEFAULT_K_MAX, (workers - S) // 2)), S


def load_default_job(overrides: Iterable = (), defaults: Mapping | None = None) -> Job:
    """The job shipped in gcc_mpi/jobs/default.toml. Only the overrides count as written by the
    user: defaults (e.g. {"code.workers": ranks - 1}) replace the file's values. data.batch and
    stragglers.count follow code.workers (``fit_default_job``) unless the overrides set them;
    the job's ``note`` says what was chosen."""
    flat, sweep = _flatten(_loads((resources.files("gcc_mpi") / "jobs" / "default.toml")
                                  .read_text(encoding="utf-8")))
    explicit = _apply(flat, sweep, overrides)
    _set_defaults(flat, sweep, explicit, defaults)
    workers = flat.get("code.workers")
    if ("code.workers" in sweep or not isinstance(workers, int) or isinstance(workers, bool)
            or workers < 1):
        return _resolve(flat, sweep, explicit, None, ".")  # a sweep of N, or a bad N: as written
    K, S = fit_default_job(workers)
    fitted = {k: v for k, v in (("data.batch", K), ("stragglers.count", S))
              if k not in explicit and k not in sweep}
    flat.update(fitted)
    job = _resolve(flat, sweep, explicit, None, ".")
    if fitted:
        c = job.config
        K, S = c.data.batch, c.stragglers.count
        how = {"data.batch": "chosen", "stragglers.count": "chosen"} | {
            k: "as set" for k in ("data.batch", "stragglers.count") if k not in fitted}
        job = dataclasses.replace(job, note=(
            f"default job for {workers + 1} ranks: N = {workers} workers, K = {K} "
            f"input{'s' * (K > 1)} per batch "
            f"(data.batch, {how['data.batch']}), S = {S} of the workers "
            f"{c.stragglers.delay * 1e3:g} ms late "
            f"(stragglers.count, {how['stragglers.count']}): S = N/4 and K = (N - S)/2 "
            f"(at most {DEFAULT_K_MAX}), "
            f"so coded schemes decode from N - S = {workers - S} results"
            + (", at least 2 per input" if workers - S >= 2 * K else "")))
    return job
