"""Post-processing of a results file: pure functions from a path (or Results) to rows and text
(figures: gcc_mpi.plots, imported only for ``--plot``).

One row per (sweep point, scheme) — the ``analyze --json`` contract of DESIGN.md:
``point, scheme, trials, trials_failed, mse, nmse, mse_db, relacc, latency_p50, latency_p99,
overhead_p50`` plus ``mse_db_ci95`` and ``lengthscale_enc_median``, ``lengthscale_dec_median``
(the median chosen kernel lengthscales of gcc and gcc-manifold). Means and percentiles are over non-failed trials only;
values that are undefined (no successful trial, not a classifier, ...) are ``None``.

``mse_db_ci95`` is the half-width of a 95 % confidence interval for ``mse_db`` by the delta
method: with m the mean nmse and s its standard error (sample std / sqrt(n)),
d(10·log10 m)/dm = 10 / (m ln 10), so the half-width is 1.96 · 10 / ln 10 · s / m dB.
Deterministic; ``None`` with fewer than two successful trials.
"""

import csv
import json as _json
import math
import os
import sys

import numpy as np

from .errors import JobError
from .rates import (FLOOR_DB, Rate, fit_rate_details, fit_rates,  # noqa: F401  (interface)
                    format_rates, rates_json)
from .results import Results, read_results

ERASURE_KINDS = {1: "raised", 2: "nonfinite", 3: "shape", 4: "lost"}  # codes of dataset error
_STATS = ("trials", "trials_failed", "mse", "nmse", "mse_db", "mse_db_ci95", "relacc",
          "latency_p50", "latency_p99", "overhead_p50",
          "lengthscale_enc_median", "lengthscale_dec_median")


def _num(x):
    """Python float, or None if not finite (NaN, inf) or missing."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def _mean(a):
    return _num(np.mean(a)) if a.size else None


def _pct(a, q):
    a = a[np.isfinite(a)]
    return _num(np.percentile(a, q)) if a.size else None


def overhead(d):
    """Per-trial overhead (s): decode finished minus arrival of the last result used, both
    measured from scatter start, i.e. (t_scatter + t_wait + t_decode) - max(arrival[used])."""
    used = d["used"].astype(bool)
    last = np.where(used, d["arrival"], -np.inf).max(axis=1, initial=-np.inf)
    last[~np.isfinite(last)] = np.nan
    return d["t_scatter"] + d["t_wait"] + d["t_decode"] - last


def summarize_scheme(d) -> dict:
    """Statistics of one scheme's datasets (a dict of arrays along the trial axis)."""
    trials = min((a.shape[0] for a in d.values()), default=0)
    failed = d["failed"].astype(bool) if "failed" in d else np.zeros(trials, bool)
    ok = ~failed
    n_ok = int(ok.sum())
    row = dict.fromkeys(_STATS)
    row.update(trials=int(trials), trials_failed=int(failed.sum()))
    row.update(erasure_counts(d))
    if n_ok == 0:
        return row
    nmse = d["nmse"][ok]
    m = float(np.mean(nmse))
    row["mse"] = _mean(d["mse"][ok])
    row["nmse"] = _num(m)
    if math.isfinite(m) and m > 0:
        row["mse_db"] = 10 * math.log10(m)
        if n_ok >= 2:
            se = float(np.std(nmse, ddof=1)) / math.sqrt(n_ok)
            row["mse_db_ci95"] = _num(1.96 * 10 / math.log(10) * se / m)
    if "relacc" in d:
        row["relacc"] = _mean(d["relacc"][ok])
    row["latency_p50"] = _pct(d["latency"][ok], 50)
    row["latency_p99"] = _pct(d["latency"][ok], 99)
    if all(k in d for k in ("used", "arrival", "t_scatter", "t_wait", "t_decode")):
        row["overhead_p50"] = _pct(overhead(d)[ok], 50)
    for side in ("enc", "dec"):  # None for schemes without one, and files from before the field
        if f"lengthscale_{side}" in d:
            row[f"lengthscale_{side}_median"] = _pct(d[f"lengthscale_{side}"][ok], 50)
    return row


def erasure_counts(d) -> dict:
    """``erasures``: {kind: worker results erased} over all trials (dataset ``error``: 1 raised,
    2 nonfinite, 3 shape, 4 lost), and ``workers_lost``: how many workers' ranks died."""
    error = np.asarray(d.get("error", np.zeros((0, 0), np.int8)))
    counts = {name: int(np.count_nonzero(error == code)) for code, name in ERASURE_KINDS.items()}
    lost = int(np.count_nonzero((error == 4).any(axis=0))) if error.ndim == 2 else 0
    return {"erasures": counts, "workers_lost": lost}


def _erasure_text(r):
    shown = [f"{n} {k}" for k, n in r["erasures"].items() if n]
    if r["workers_lost"]:
        shown.append(f"{r['workers_lost']} worker{'s' if r['workers_lost'] > 1 else ''} lost")
    return ", ".join(shown) or "-"


def summarize(results) -> list:
    """One row per (point, scheme), in point order then the file's scheme order.
    ``results`` is a :class:`Results` or a path."""
    if not isinstance(results, Results):
        results = read_results(results)
    rows = []
    for p in results.points:
        for scheme, d in p.schemes.items():
            rows.append({"point": dict(p.params), "scheme": scheme, **summarize_scheme(d)})
    return rows


# -- output ----------------------------------------------------------------------------------
def _param_keys(rows):
    keys = []
    for r in rows:
        keys += [k for k in r["point"] if k not in keys]
    return keys


def _fmt_param(v):
    return v if isinstance(v, str) else _json.dumps(v)


def _ms(x):
    if x is None:
        return "-"
    return f"{1e3 * x:.3f}"


def format_table(rows) -> str:
    """Aligned text table; ``-`` marks an undefined value."""
    if not rows:
        return "(no trials recorded)"
    keys = _param_keys(rows)
    head = keys + ["scheme", "trials (failed)", "nmse [dB] ± ci95", "relacc",
                   "latency p50 [ms]", "p99 [ms]", "overhead p50 [ms]"]
    erasures = any(r.get("workers_lost") or any(r.get("erasures", {}).values()) for r in rows)
    if erasures:  # only when some worker result was erased (f raised, NaN, shape, rank died)
        head.append("erasures")
    body = []
    for r in rows:
        db = "-" if r["mse_db"] is None else f"{r['mse_db']:.2f}"
        if r["mse_db"] is not None and r.get("mse_db_ci95") is not None:
            db += f" ± {r['mse_db_ci95']:.2f}"
        body.append([_fmt_param(r["point"][k]) if k in r["point"] else "-" for k in keys] + [
            r["scheme"], f"{r['trials']} ({r['trials_failed']})", db,
            "-" if r["relacc"] is None else f"{r['relacc']:.3f}",
            _ms(r["latency_p50"]), _ms(r["latency_p99"]), _ms(r["overhead_p50"])]
            + ([_erasure_text(r)] if erasures else []))
    width = [max(len(str(c)) for c in col) for col in zip(head, *body)]
    left = len(keys) + 1  # params and scheme left-aligned, numbers right-aligned

    def line(cells):
        return "  ".join(str(c).ljust(w) if i < left else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(cells, width))).rstrip()

    return "\n".join([line(head), line(["-" * w for w in width])] + [line(b) for b in body])


def _clean(x):
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return _num(x)
    return x


def to_json(rows) -> str:
    """Strict JSON array (NaN and infinities become null)."""
    return _json.dumps(_clean(rows), indent=2, allow_nan=False)


def write_csv(rows, path) -> None:
    """One line per row; point parameters first as columns named by their dotted key
    (``point.<key>`` if a key clashes with a statistic), empty cell for undefined values."""
    keys = _param_keys(rows)
    names = [f"point.{k}" if k in _STATS or k == "scheme" else k for k in keys]
    parent = os.path.dirname(os.fspath(path))
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        kinds = list(ERASURE_KINDS.values())
        w.writerow(names + ["scheme", *_STATS] + [f"erasures_{k}" for k in kinds]
                   + ["workers_lost"])
        for r in rows:
            erased = r.get("erasures", {})
            w.writerow([_fmt_param(r["point"][k]) if k in r["point"] else "" for k in keys]
                       + [r["scheme"]] + ["" if r.get(s) is None else r[s] for s in _STATS]
                       + [erased.get(k, 0) for k in kinds] + [r.get("workers_lost", 0)])


def check_outputs(csv=None, plot=None):
    """JobError naming the option when --csv is a folder or --plot is a file, or either
    cannot be created."""
    if csv:
        if os.path.isdir(csv):
            raise JobError("--csv", f"{csv} is a folder; give the CSV file's name, e.g. "
                                    f"--csv {os.path.join(csv, 'table.csv')}")
        parent = os.path.dirname(os.fspath(csv)) or "."
        if os.path.exists(parent) and not os.path.isdir(parent):
            raise JobError("--csv", f"{parent} is a file, not a folder")
    if plot:
        if os.path.exists(plot) and not os.path.isdir(plot):
            raise JobError("--plot", f"{plot} is a file; --plot takes a folder for the figures "
                                     "(created if missing)")


def _writing(option, path, write):
    """Run ``write()``; an OSError (permissions, a full disk) is one line naming the option."""
    try:
        return write()
    except OSError as e:
        raise JobError(option, f"cannot write {path}: {e.strerror or e}") from None


def main_analyze(path, json=False, csv=None, rate=None, plot=None) -> int:
    """``python -m gcc_mpi analyze``: print the table (or JSON), optionally write a CSV and
    the figures (``plot``: a folder; see gcc_mpi.plots). Raises JobError if ``path`` is missing
    or not a gcc_mpi file, or if ``plot`` is asked for without matplotlib."""
    check_outputs(csv, plot)  # a bad --csv or --plot fails before any output
    from .probe import is_probe_file, main_analyze_probe

    if is_probe_file(path):  # a probe's file (python -m gcc_mpi probe): its own summary
        if csv or rate:
            raise JobError("--csv" if csv else "--rate", "applies to results files, not to a "
                                                         "probe file")
        return main_analyze_probe(path, json_out=json, plot=plot)
    results = read_results(path)
    rows = summarize(results)
    rates = fit_rate_details(rows, rate) if rate else None  # a bad key fails before any output
    if plot:
        from .plots import plot_all, require_matplotlib

        require_matplotlib()  # a missing extra fails before any output too
    if csv:
        _writing("--csv", csv, lambda: write_csv(rows, csv))
    if plot:
        for figure in _writing("--plot", plot, lambda: plot_all(results, plot, rows)):
            print(f"wrote {figure}", file=sys.stderr)
    if json and rate:
        print(_json.dumps(_clean(rates_json(rates, rate))))
    elif json:
        print(to_json(rows))
    else:
        a = results.attrs
        print(f"# {results.path}: gcc_mpi {a.get('version')}, mpi {a.get('mpi')}, "
              f"created {a.get('created')}")
        print(format_table(rows))
    if rate and not json:
        print(format_rates(rates, rate))
    if not results.complete:
        print(f"note: {results.path} is incomplete (run interrupted or still running)",
              file=sys.stderr)
    return 0
