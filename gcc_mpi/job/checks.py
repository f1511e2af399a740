"""Value checks of the job file's keys: each is "what is allowed" and a function giving the
normalised value or NO (or raising Bad with a hint). Every message of a bad value is built here
(``checked``), so a key of the schema, a straggler model's parameter and a plug-in scheme's
option all fail with the same one line."""

from __future__ import annotations

import difflib
import json
import math
import numbers
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import JobError

NO = object()


class Bad(Exception):
    def __init__(self, hint="", allowed=None):
        self.hint = hint
        self.allowed = allowed  # instead of the check's own text, when that would mislead


@dataclass(frozen=True)
class Check:
    allowed: str                    # e.g. "an integer >= 1"
    accept: Callable[[Any], Any]    # the normalised value, or NO (or raises Bad with a hint)
    words: tuple = ()               # names for a did-you-mean

    def __call__(self, v):
        out = self.accept(v)
        if out is NO:
            raise Bad(did_you_mean(v, self.words))
        return out


def quote(s: str) -> str:
    """s in double quotes, escaped so that it prints on one line."""
    q = json.dumps(s, ensure_ascii=False)
    return q if q.isprintable() else json.dumps(s)


def show(v, depth=0) -> str:
    """A value as the user would write it in TOML, on one short line."""
    if isinstance(v, bool):
        s = "true" if v else "false"
    elif isinstance(v, str):
        s = quote(v)
    elif isinstance(v, dict):
        s = "a table"
    elif isinstance(v, (list, tuple)):
        s = "[...]" if depth > 2 else ("[" + ", ".join(show(x, depth + 1) for x in v[:8])
                                       + (", ...]" if len(v) > 8 else "]"))
    else:
        s = str(v)
    return s if len(s) <= 80 else s[:77] + "..."


def did_you_mean(word, options, quote='"'):
    close = (difflib.get_close_matches(word, options, n=1)
             if isinstance(word, str) and options else [])
    return f"; did you mean {quote}{close[0]}{quote}?" if close else ""


def as_float(v):
    """v as a finite float (ints welcome, bools not), else None."""
    if isinstance(v, numbers.Real) and not isinstance(v, bool):
        try:
            return float(v) if math.isfinite(float(v)) else None
        except OverflowError:
            return None
    return None


INT_MAX = 2**63 - 1  # counts and seeds are stored as 64-bit integers


def integer(lo):
    def accept(v):
        if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < lo:
            return NO
        if v > INT_MAX:
            raise Bad(allowed=f"an integer >= {lo} and <= 2^63 - 1 = {INT_MAX}")
        return int(v)

    return Check(f"an integer >= {lo}", accept)


def int_range(lo, hi):
    ok = lambda v: isinstance(v, numbers.Integral) and not isinstance(v, bool) and lo <= v <= hi  # noqa: E731
    return Check(f"an integer in [{lo}, {hi}]", lambda v: int(v) if ok(v) else NO)


def number(lo=0.0, *, above=False, hi=None):
    ok = lambda x: x is not None and (x > lo if above else x >= lo) and (hi is None or x <= hi)  # noqa: E731
    allowed = (f"a number in [{lo:g}, {hi:g}]" if hi is not None
               else f"a number {'>' if above else '>='} {lo:g}")
    return Check(allowed, lambda v: x if ok(x := as_float(v)) else NO)


def choice(*names):
    return Check("one of " + ", ".join(map(quote, names)),
                 lambda v: v if isinstance(v, str) and v in names else NO, names)


def text(pattern=r".+", allowed="a non-empty string"):
    return Check(allowed,
                 lambda v: v if isinstance(v, str) and re.fullmatch(pattern, v, re.S) else NO)


def or_words(inner, *words):
    return Check(", ".join(map(quote, words)) + " or " + inner.allowed,
                 lambda v: v if isinstance(v, str) and v in words else inner.accept(v), words)


def optional(inner):
    return Check(inner.allowed, lambda v: None if v is None else inner.accept(v))


@dataclass(frozen=True)
class Setting:
    """A key declared beside what it belongs to (a scheme's option, a straggler model's
    parameter): its check and its default."""
    check: Check
    default: Any = None


def setting(check, default=None):
    """A job-file key: a dataclass field carrying its check."""
    return field(default=default, metadata={"check": check})


BOOL = Check("true or false", lambda v: v if isinstance(v, bool) else NO)
ANY = Check("any value", lambda v: v)


def checked(key: str, check: Check, value, where=""):
    """``value`` normalised by ``check``, or the one-line JobError naming ``key``: what is
    allowed, what was given (``where``: e.g. " in [sweep]") and a hint."""
    try:
        return check(value)
    except Bad as bad:
        raise JobError(key, f"must be {bad.allowed or check.allowed}, got {show(value)}{where}"
                            f"{bad.hint}") from None


def of_type(kind, default=None) -> Check:
    """The check of a plain Python type (a plug-in's keyword option: its annotation, else its
    default's type): bool, int, float (ints welcome), str; any other kind takes any value."""
    kind = type(default) if kind is None and default is not None else kind
    if kind is bool:
        return BOOL
    if kind is int:
        return Check("an integer", lambda v: int(v) if isinstance(v, numbers.Integral)
                     and not isinstance(v, bool) and abs(v) <= INT_MAX else NO)
    if kind is float:
        return Check("a number", lambda v: NO if (x := as_float(v)) is None else x)
    if kind is str:
        return Check("a string", lambda v: v if isinstance(v, str) else NO)
    return ANY
