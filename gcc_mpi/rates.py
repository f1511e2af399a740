"""Convergence rates: the log-log slope of the mean nmse against a swept key, per scheme
(``analyze --rate KEY``, and the fitted lines of the figures). Pure functions of the summary
rows of ``analyze.summarize``; a module of its own so that ``analyze`` (which draws figures on
request) and ``plots`` (which draws the slopes) both use it without importing each other.
"""

import json as _json

import numpy as np

from .errors import JobError


def fit_rates(rows, key):
    """Least-squares slope of log10(mean nmse) against log10(value of ``key``) per scheme.

    Returns {scheme: (slope, number of points used)}; points with nmse 0, no successful
    trials or a key value <= 0 (no logarithm) are left out, and a scheme with fewer than two
    points gets slope None. Other swept keys must be constant: the rate is only meaningful
    along one axis.
    """
    found = [r for r in rows if key in r["point"]]
    if not found:
        swept = sorted({k for r in rows for k in r["point"]})
        raise JobError("--rate", f"{key!r} is not swept in this file; swept keys: "
                                 f"{', '.join(swept) or 'none'}")
    others = {k for r in found for k in r["point"] if k != key}
    if any(len({_json.dumps(r["point"][k]) for r in found}) > 1 for k in others):
        raise JobError("--rate", f"other keys are swept too ({', '.join(sorted(others))}); "
                                 "the rate needs a sweep along one key")
    rates = {}
    for scheme in dict.fromkeys(r["scheme"] for r in found):
        pts = [(r["point"][key], r["nmse"]) for r in found if r["scheme"] == scheme
               and r["nmse"] and r["nmse"] > 0 and isinstance(r["point"][key], (int, float))
               and not isinstance(r["point"][key], bool) and r["point"][key] > 0]
        if len(pts) < 2:
            rates[scheme] = (None, len(pts))
            continue
        x, y = np.log10(np.array(pts, dtype=float)).T
        rates[scheme] = (float(np.polyfit(x, y, 1)[0]), len(pts))
    return rates


def format_rates(rates, key):
    lines = [f"log-log slope of mean nmse against {key} (least squares):"]
    for scheme, (slope, n) in rates.items():
        shown = "-" if slope is None else f"{slope:+.2f}"
        lines.append(f"  {scheme:14s} {shown:>7s}   ({n} points)")
    return "\n".join(lines)
