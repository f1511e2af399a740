"""Convergence rates: the log-log slope of the mean nmse against a swept key, per scheme
(``analyze --rate KEY``, and the fitted lines of the figures). Pure functions of the summary
rows of ``analyze.summarize``; a module of its own so that ``analyze`` (which draws figures on
request) and ``plots`` (which draws the slopes) both use it without importing each other.
"""

import json as _json
import math
from dataclasses import dataclass

import numpy as np

from ..errors import JobError


# Mean NMSE below this is at the decoders' round-off floor: lambda is at least 1e-13 of the
# largest eigenvalue, which leaves a relative error of about 1e-5 (-100 dB) where a curve stops
# falling (rate-vs-n: gcc flattens at -105 dB from N = 160). Such points would bend a slope.
FLOOR_DB = -100.0


@dataclass
class Rate:
    """A least-squares slope of log10(mean nmse) against log10(key): ``slope`` and its standard
    error ``stderr`` (None with too few points), the key values ``used`` and those ``excluded``
    because the mean nmse there is below the round-off floor (FLOOR_DB)."""

    slope: float | None
    stderr: float | None
    used: list
    excluded: list


def fit_rate_details(rows, key):
    """{scheme: Rate} of the slope of mean nmse against the swept ``key`` (see fit_rates)."""
    found = [r for r in rows if key in r["point"]]
    if not found:
        swept = sorted({k for r in rows for k in r["point"]})
        raise JobError("--rate", f"{key!r} is not swept in this file; swept keys: "
                                 f"{', '.join(swept) or 'none'}")
    others = {k for r in found for k in r["point"] if k != key}
    if any(len({_json.dumps(r["point"][k]) for r in found}) > 1 for k in others):
        raise JobError("--rate", f"other keys are swept too ({', '.join(sorted(others))}); "
                                 "the rate needs a sweep along one key")
    floor = 10 ** (FLOOR_DB / 10)
    rates = {}
    for scheme in dict.fromkeys(r["scheme"] for r in found):
        pts = [(r["point"][key], r["nmse"]) for r in found if r["scheme"] == scheme
               and r["nmse"] is not None and isinstance(r["point"][key], (int, float))
               and not isinstance(r["point"][key], bool) and r["point"][key] > 0]
        used = [(x, y) for x, y in pts if y >= floor]
        rate = Rate(None, None, [x for x, _ in used], [x for x, y in pts if y < floor])
        if len(used) >= 2:
            x, y = np.log10(np.array(used, dtype=float)).T
            if np.ptp(x) > 0:
                slope, icept = np.polyfit(x, y, 1)
                rate.slope = float(slope)
                if len(used) > 2:  # OLS: s^2 = RSS / (n - 2), se = s / sqrt(sum (x - mean)^2)
                    rss = float(np.sum((y - (slope * x + icept)) ** 2))
                    rate.stderr = math.sqrt(rss / (len(used) - 2) / np.sum((x - x.mean()) ** 2))
        rates[scheme] = rate
    return rates


def fit_rates(rows, key):
    """Least-squares slope of log10(mean nmse) against log10(value of ``key``) per scheme.

    Returns {scheme: (slope, number of points used)}; points with nmse below the round-off
    floor (FLOOR_DB, so exact schemes have no slope), no successful trials or a key value <= 0
    (no logarithm) are left out, and a scheme with fewer than two points gets slope None. Other
    swept keys must be constant: the rate is only meaningful along one axis.
    """
    return {s: (r.slope, len(r.used)) for s, r in fit_rate_details(rows, key).items()}


def format_rates(rates, key):
    """Text of ``fit_rate_details``: slope ± standard error per scheme, and what was left out."""
    lines = [f"log-log slope of mean nmse against {key} (least squares, ± standard error; "
             f"points below the round-off floor of {FLOOR_DB:g} dB left out):"]
    for scheme, r in rates.items():
        shown = "-" if r.slope is None else f"{r.slope:+.2f}"
        if r.stderr is not None:
            shown += f" ± {r.stderr:.2f}"
        out = f"; below the floor: {', '.join(map(_fmt, r.excluded))}" if r.excluded else ""
        lines.append(f"  {scheme:14s} {shown:>14s}   ({len(r.used)} points{out})")
    return "\n".join(lines)


def rates_json(rates, key):
    """The --rate --json object: {"rate", "slopes", "stderr", "excluded", "floor_db"}."""
    return {"rate": key, "slopes": {s: r.slope for s, r in rates.items()},
            "stderr": {s: r.stderr for s, r in rates.items()},
            "excluded": {s: r.excluded for s, r in rates.items()}, "floor_db": FLOOR_DB}


def _fmt(v):
    return v if isinstance(v, str) else _json.dumps(v)
