"""Figures of results files (``python -m gcc_mpi analyze OUT.h5 [MORE.h5 ...] --plot DIR``).

Each kind of figure that applies to the files is written as a PNG (7.5 x 4 in, 100 dpi) and an
SVG, named after the job (``comparison`` when files of different jobs are compared):

- ``<job>-mse-vs-S``: NMSE in dB (mean ± 95 % CI) against the number of stragglers, one line
  per scheme, when ``stragglers.count`` is swept; the same against any other numeric swept key
  (``-mse-vs-<key>``);
- ``<job>-mse-vs-N``: mean NMSE against the number of workers on log-log axes, with the
  least-squares slope of each scheme (``rates.fit_rates``, as ``--rate code.workers``) drawn
  and given in the legend, when ``code.workers`` is swept;
- ``<job>-relacc-vs-S`` (``-vs-<key>``): relacc against the same keys when f is a classifier;
- ``<job>-tradeoff``: accuracy against latency, every (point, scheme): NMSE in dB (± its CI)
  against the mean latency (filled, ± its CI) and the p99 latency (hollow, with its
  distribution-free CI), a scheme's points joined in sweep order;
- ``<job>-latency-cdf``: the distribution of the per-trial latency of each scheme at the last
  sweep point (the one with the most stragglers or workers in the shipped jobs);
- ``<job>-nmse-distribution``: the distribution of the per-trial NMSE (in dB) of each
  approximate scheme at the last sweep point.

The per-trial figures read their point a block of trials at a time and draw each distribution
through at most 2000 order statistics (``quantiles.Column.outline``), so a file of any size
takes the same memory.

When other keys are swept too, each combination of their values gets its own line style; so
does each file when several are compared (on the same axes). Schemes whose NMSE is at round-off
(exact codes, below -200 dB) are left out of the accuracy figures and named in the legend: they
would flatten every other line (the trade-off draws them at its bottom edge). Titles say what
the job computed (data, f, K, N, straggler model, trials, simulated or measured over MPI), so a
figure reads without the job file.

matplotlib (the ``[plot]`` extra) is imported only here, and only the object-oriented API with
the Agg canvas is used: no pyplot state, no display needed.
"""

import json
import os

import numpy as np

from .canvas import FORMATS, figure, require_matplotlib, save
from .job_words import JobWords
from .quantiles import Column, percentiles
from .rates import FLOOR_DB, fit_rate_details

ROUNDOFF_DB = -200.0
SHORT = {"stragglers.count": "S", "code.workers": "N", "data.batch": "K"}
AXIS = {
    "stragglers.count": "stragglers S (stragglers.count)",
    "decode.stragglers": "results not waited for, S (decode.stragglers)",
    "code.workers": "workers N (code.workers)",
    "data.batch": "inputs per batch K (data.batch)",
    "stragglers.p": "probability that a worker straggles (stragglers.p)",
    "stragglers.delay": "straggler delay [s] (stragglers.delay)",
}
STYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D", "v", "P"]


def _title(fig, ax, job, title, shown=()):
    """The title over the figure, what was computed under it; the subtitle and the x label
    begin at the axes' left edge: centred on axes that a wide legend narrows, they ran past the
    canvas's left edge."""
    fig.suptitle(f"{job.name}: {title}", fontsize=11, fontweight="bold")
    ax.set_title(job.context(shown), fontsize=7.5, color="0.3", loc="left")
    ax.xaxis.label.set(x=0.0, horizontalalignment="left")  # as set_xlabel(loc="left")


# -- series --------------------------------------------------------------------------------------
def _numeric(values):
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _others(r, key):
    """A row's file (when several are compared) and its other swept parameters, as text."""
    parts = [r["file"]] if "file" in r else []
    parts += [f"{_short(k)} = {v}" for k, v in r["point"].items() if k != key]
    return ", ".join(parts)


def _series(rows, key):
    """{(scheme, file and other params as text): [row, ...] sorted by the key's value}, in
    file order."""
    out = {}
    for r in rows:
        if key not in r["point"]:
            continue
        out.setdefault((r["scheme"], _others(r, key)), []).append(r)
    for rs in out.values():
        rs.sort(key=lambda r: r["point"][key])
    return out


def _style(job, scheme, others, combos):
    i = combos.index(others)
    return dict(color=job.color(scheme), linestyle=STYLES[i % len(STYLES)],
                marker=MARKERS[i % len(MARKERS)])


def _exact(rs):
    vals = [r["mse_db"] for r in rs if r["mse_db"] is not None]
    return bool(vals) and max(vals) < ROUNDOFF_DB or all(r["nmse"] == 0 for r in rs)


def _label(scheme, others, extra=""):
    return f"{scheme}{' (' + others + ')' if others else ''}{extra}"


def _ticks(ax, values, log=False):
    """The swept values as the x ticks (when there are few), plain numbers on a log axis too."""
    from matplotlib.ticker import MaxNLocator, NullFormatter, ScalarFormatter

    if log:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
    if len(values) <= 12:
        ax.set_xticks(values)
    elif all(float(v).is_integer() for v in values):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _legend(ax, left_out=(), **kw):
    title = None
    if left_out:
        title = "not shown (exact, NMSE at round-off):\n" + ", ".join(left_out)
    handles = ax.get_legend_handles_labels()[0]
    if handles or title:  # right of the axes, never over a curve (the figure makes room)
        kw.pop("loc", None)
        ax.legend(fontsize=8 if len(handles) <= 6 else 6.5, frameon=False, title=title,
                  title_fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                  borderaxespad=0.0, alignment="left", **kw)


# -- the figures -----------------------------------------------------------------------------
def plot_accuracy(job, rows, key):
    """NMSE [dB] against a numeric swept key (log-log mean NMSE with fitted slopes for N)."""
    series = _series(rows, key)
    combos = list(dict.fromkeys(o for _, o in series))
    loglog = key == "code.workers"
    fig, ax = figure()
    left_out, floored = [], False
    for (scheme, others), rs in series.items():
        rs = [r for r in rs if r["nmse"] is not None and r["nmse"] > 0]
        if not rs or _exact(rs):
            left_out.append(scheme)
            continue
        style = _style(job, scheme, others, combos)
        x = np.array([r["point"][key] for r in rs], dtype=float)
        ci = np.array([r.get("mse_db_ci95") or 0.0 for r in rs])
        if loglog:
            y = np.array([r["nmse"] for r in rs])
            rate = fit_rate_details(rs, key).get(scheme)
            slope = rate.slope if rate else None
            extra = "" if slope is None else f": slope {slope:+.1f}"
            err = [y * (1 - 10 ** (-ci / 10)), y * (10 ** (ci / 10) - 1)]
            ax.errorbar(x, y, yerr=err, capsize=3, label=_label(scheme, others, extra), **style)
            below = np.isin(x, rate.excluded) if rate else np.zeros(len(x), bool)
            if below.any():  # at the round-off floor: drawn hollow, not fitted
                floored = True
                ax.plot(x[below], y[below], linestyle="none", marker=style["marker"],
                        markersize=9, markerfacecolor="white", color=style["color"])
            if slope is not None:  # the least-squares line, through the mean of the logs
                x, y = x[~below], y[~below]
                lx, ly = np.log10(x), np.log10(y)
                b = ly.mean() - slope * lx.mean()
                grid = np.array([x.min(), x.max()])
                ax.plot(grid, 10 ** (b + slope * np.log10(grid)), color=style["color"],
                        linestyle=style["linestyle"], linewidth=0.8, alpha=0.5)
        else:
            y = np.array([r["mse_db"] for r in rs])
            ax.errorbar(x, y, yerr=ci, capsize=3, label=_label(scheme, others), **style)
    values = sorted({r["point"][key] for r in rows if key in r["point"]})
    _ticks(ax, values, log=loglog)
    if loglog:
        ax.set_yscale("log")
        ax.set_ylabel("mean NMSE (log scale; lower is better)")
        title = "error vs workers N"
    else:
        ax.set_ylabel("NMSE [dB], mean ± 95% CI (lower is better)")
        title = f"error vs {_what(key)}"
    ax.set_xlabel(AXIS.get(key, key) + ("; thin lines: least-squares fits" if loglog else "")
                  + (f"; hollow: below {FLOOR_DB:g} dB, not fitted" if floored else ""))
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, list(dict.fromkeys(left_out)))
    _title(fig, ax, job, title, shown=(key,))
    return fig


def plot_relacc(job, rows, key):
    """relacc against a numeric swept key (f a classifier)."""
    series = _series(rows, key)
    combos = list(dict.fromkeys(o for _, o in series))
    fig, ax = figure()
    for (scheme, others), rs in series.items():
        rs = [r for r in rs if r["relacc"] is not None]
        if not rs:
            continue
        x = [r["point"][key] for r in rs]
        ax.plot(x, [r["relacc"] for r in rs], label=_label(scheme, others),
                **_style(job, scheme, others, combos))
    _ticks(ax, sorted({r["point"][key] for r in rows if key in r["point"]}),
           log=key == "code.workers")
    lo = min((r["relacc"] for r in rows if r["relacc"] is not None), default=0.0)
    ax.set_ylim(max(0.0, lo - 0.1 * (1 - lo) - 0.005), 1.0 + 0.05 * (1 - lo) + 0.002)
    ax.set_xlabel(AXIS.get(key, key))
    ax.set_ylabel("relacc: fraction of inputs whose\nargmax class is right (higher is better)")
    ax.grid(True, alpha=0.3)
    _legend(ax, loc="lower left")
    _title(fig, ax, job, f"class agreement (relacc) vs {_what(key)}", shown=(key,))
    return fig


def last_points(results, labels):
    """[(label, params, {scheme: {"latency": Column, "nmse_db": Column}})] of each file's last
    sweep point, the per-trial figures' data (labels None when there is one file): the finite
    latencies and NMSE in dB of the trials that did not fail, read a block of trials at a time.
    The caller closes the columns (``close_points``)."""
    points = []
    for label, r in zip(labels, results):
        if not r.points:
            continue
        last = r.points[-1]
        columns = {scheme: _trial_columns(r, last.index, scheme) for scheme in last.schemes}
        points.append((label, last.params, columns))
    return points


def _trial_columns(results, index, scheme):
    columns = {"latency": Column(), "nmse_db": Column()}
    for d in results.blocks(index, scheme, ("failed", "latency", "nmse")):
        for key, column in (("latency", columns["latency"]), ("nmse", columns["nmse_db"])):
            if key not in d:
                continue
            a = _ok(d, key)
            column.add(10 * np.log10(np.maximum(a, 1e-300)) if key == "nmse" else a)
    return columns


def close_points(points):
    for _, _, schemes in points:
        for columns in schemes.values():
            for column in columns.values():
                column.close()


def _ok(d, key):
    """A scheme's finite per-trial ``key`` values of its trials that did not fail."""
    a = np.asarray(d[key], dtype=float)
    ok = ~d["failed"].astype(bool) if "failed" in d else np.ones(len(a), bool)
    a = a[ok[:len(a)]]
    return a[np.isfinite(a)]


def _where(points):
    """", at S = 20" when one file's last point has parameters; "" otherwise."""
    if len(points) != 1 or not points[0][1]:
        return ""
    return " at " + ", ".join(f"{_short(k)} = {v}" for k, v in points[0][1].items())


def _cdf(ax, values, frac, **style):
    ax.step(np.r_[values[0], values], np.r_[0.0, frac], where="post", **style)


def _median(column):
    return percentiles(column, (50,))[0]


def _least_from(column, low):
    """The least value of a Column at or above ``low`` (ROUNDOFF_DB if there is none)."""
    least = [b[b >= low].min() for b in column.blocks() if (b >= low).any()]
    return min(least, default=ROUNDOFF_DB)


def plot_latency_cdf(job, points):
    """Empirical CDF of each scheme's latency at the last sweep point of each file (drawn
    through at most quantiles.CDF_POINTS order statistics)."""
    fig, ax = figure()
    spans = []
    for i, (label, _, schemes) in enumerate(points):
        for scheme, columns in schemes.items():
            column = columns["latency"]
            if not len(column):
                continue
            lat, frac = column.outline()
            lat = 1e3 * lat
            spans += [lat[0], lat[-1]]
            name = f"{scheme} ({label})" if label else scheme
            _cdf(ax, lat, frac, color=job.color(scheme), linestyle=STYLES[i % len(STYLES)],
                 label=f"{name} (median {1e3 * _median(column):.3g} ms)")
    if spans and min(spans) > 0 and max(spans) / min(spans) > 20:
        from matplotlib.ticker import FuncFormatter

        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("latency per trial [ms]: encode + send + wait + decode")
    ax.set_ylabel("fraction of trials with latency ≤ x")
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, loc="best")
    shown = tuple(points[0][1]) if len(points) == 1 else ()
    _title(fig, ax, job, "latency distribution per scheme" + _where(points), shown=shown)
    return fig


def plot_nmse_distribution(job, points):
    """Empirical CDF of each approximate scheme's per-trial NMSE in dB at the last sweep point
    of each file; exact schemes (at round-off) are named in the legend instead."""
    fig, ax = figure()
    left_out, curves = [], []
    for i, (label, _, schemes) in enumerate(points):
        for scheme, columns in schemes.items():
            column = columns["nmse_db"]
            db, frac = column.outline()  # its ends are the least and the largest value
            name = f"{scheme} ({label})" if label else scheme
            if not db.size or db[-1] < ROUNDOFF_DB:
                left_out.append(name)
                continue
            curves.append((db, frac, column, dict(
                color=job.color(scheme), linestyle=STYLES[i % len(STYLES)],
                label=f"{name} (median {_median(column):.1f} dB)")))
    # a trial decoded exactly (no straggler among the results it needed) is at round-off,
    # hundreds of dB below the rest: such trials are drawn at the left edge instead
    edge = min((_least_from(column, ROUNDOFF_DB) for _, _, column, _ in curves),
               default=ROUNDOFF_DB) - 5.0
    for db, frac, _, style in curves:
        _cdf(ax, np.maximum(db, edge), frac, **style)
    exact = any(db[0] < ROUNDOFF_DB for db, _, _, _ in curves)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("NMSE of one trial [dB] (lower is better"
                  + ("; left edge: exact, at round-off)" if exact else ")"))
    ax.set_ylabel("fraction of trials with NMSE ≤ x")
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, left_out)
    shown = tuple(points[0][1]) if len(points) == 1 else ()
    _title(fig, ax, job, "NMSE per trial, distribution per scheme" + _where(points),
           shown=shown)
    return fig


def plot_tradeoff(job, rows):
    """NMSE [dB] against latency for every (point, scheme): the mean latency (filled, ± its
    95 % CI) and p99 (hollow, with its distribution-free CI), NMSE ± its CI; a scheme's points
    in sweep order are joined (one line style per file and other swept keys)."""
    # an exact scheme's mean nmse is at round-off, or 0 (mse_db None) when every trial was
    # exact to the last bit: both are drawn at the bottom edge
    shown = [dict(r, mse_db=r["mse_db"] if r["mse_db"] is not None else -np.inf)
             for r in rows if r["nmse"] is not None and r["latency_mean"] is not None]
    approx = [r["mse_db"] for r in shown if r["mse_db"] >= ROUNDOFF_DB]
    floor = (min(approx) - 0.15 * max(np.ptp(approx), 10.0)) if approx else -10.0
    swept = list(dict.fromkeys(k for r in rows for k in r["point"]))
    fig, ax = figure()
    series = {}
    for r in shown:
        series.setdefault((r["scheme"], r.get("file", "")), []).append(r)
    files = list(dict.fromkeys(f for _, f in series))
    exact = False
    for (scheme, label), rs in series.items():
        style = STYLES[files.index(label) % len(STYLES)]
        marker = MARKERS[files.index(label) % len(MARKERS)]
        color = job.color(scheme)
        y = np.array([r["mse_db"] if r["mse_db"] >= ROUNDOFF_DB else floor for r in rs])
        at_floor = np.array([r["mse_db"] < ROUNDOFF_DB for r in rs])
        exact |= bool(at_floor.any())
        yerr = np.array([0.0 if f else (r["mse_db_ci95"] or 0.0) for r, f in zip(rs, at_floor)])
        mean, mean_err, p99, lo, hi = _latencies(rs)
        name = f"{scheme} ({label})" if label else scheme
        ax.errorbar(mean, y, xerr=mean_err, yerr=yerr, color=color, linestyle=style,
                    marker=marker, markersize=5, capsize=2, linewidth=1, label=name)
        ax.errorbar(p99, y, xerr=[lo, hi], color=color, linestyle="none", marker=marker,
                    markerfacecolor="white", markersize=5, capsize=2, linewidth=0.8)
        for a, b, h in zip(mean, p99, y):  # the tail of each point: mean to p99
            ax.plot([a, b], [h, h], color=color, linestyle=":", linewidth=0.8)
        if len(swept) == 1 and len(rs) <= 8 and len(rs) > 1:
            for a, h, r in zip(mean, y, rs):
                ax.annotate(f"{_short(swept[0])}={r['point'].get(swept[0])}", (a, h),
                            textcoords="offset points", xytext=(3, 3), fontsize=6,
                            color=color)
    xs = [1e3 * r[k] for r in shown for k in ("latency_mean", "latency_p99")]
    if xs and min(xs) > 0 and max(xs) / min(xs) > 20:
        from matplotlib.ticker import FuncFormatter

        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("latency per trial [ms]: mean (filled) and p99 (hollow), 95% CIs")
    ax.set_ylabel("NMSE [dB], mean ± 95% CI\n(lower is better)")
    ax.grid(True, which="major", alpha=0.3)
    if exact:
        ax.axhline(floor, color="0.6", linewidth=0.6)
        ax.text(ax.get_xlim()[0], floor, " exact (NMSE at round-off)", fontsize=6.5,
                color="0.4", va="bottom")
    _legend(ax)
    _title(fig, ax, job, "accuracy against latency per scheme")
    return fig


def _latencies(rows):
    """(mean, its CI, p99, p99's CI below and above) of each row's latency, in ms."""
    mean = np.array([1e3 * r["latency_mean"] for r in rows])
    mean_err = np.array([1e3 * (r["latency_mean_ci95"] or 0.0) for r in rows])
    p99 = np.array([1e3 * r["latency_p99"] for r in rows])
    # with few trials the interval's lower end can exceed the interpolated p99 (two trials:
    # the larger one is a 98 % lower bound), and the upper end is unbounded
    lo = np.array([max(p - 1e3 * r["latency_p99_lo"], 0.0)
                   if r["latency_p99_lo"] is not None else 0.0 for p, r in zip(p99, rows)])
    hi = np.array([max(1e3 * r["latency_p99_hi"] - p, 0.0)
                   if r["latency_p99_hi"] is not None else 0.0 for p, r in zip(p99, rows)])
    return mean, mean_err, p99, lo, hi


def _short(key):
    return SHORT.get(key, key)


def _what(key):
    return {"stragglers.count": "stragglers S", "decode.stragglers": "results not waited for",
            "code.workers": "workers N", "data.batch": "batch size K"}.get(key, key)


# what each kind of figure shows, for a report's captions
CAPTIONS = {
    "mse-vs": "NMSE in dB (mean ± 95% CI) against a swept key, one line per scheme",
    "relacc-vs": "relacc, the fraction of inputs whose argmax class is right, against a swept "
                 "key",
    "tradeoff": "accuracy against latency: NMSE (± 95% CI) against the mean latency (filled, "
                "± 95% CI) and p99 (hollow, distribution-free 95% CI) of every point and scheme",
    "latency-cdf": "the distribution of the per-trial latency of each scheme at the last sweep "
                   "point",
    "nmse-distribution": "the distribution of the per-trial NMSE of each approximate scheme at "
                         "the last sweep point",
}


def figures(results, rows, labels=()):
    """[(kind, Figure)] of every figure that applies to ``results`` (a Results, or a list of
    them compared on the same axes, named by ``labels``), summarised in ``rows``
    (``analyze.summarize``, or the labelled rows of several files, gcc_mpi.reports.comparison).
    ``kind`` names the figure (``mse-vs-S``, ``tradeoff``, ...; ``CAPTIONS`` says what each
    shows)."""
    require_matplotlib()
    results = list(results) if isinstance(results, (list, tuple)) else [results]
    labels = list(labels) or [None] * len(results)
    job = JobWords(results, labels, schemes=list(dict.fromkeys(r["scheme"] for r in rows)))
    made = []
    swept = list(dict.fromkeys(k for r in rows for k in r["point"]))
    classifier = any(r["relacc"] is not None for r in rows)
    for key in swept:
        values = {json.dumps(r["point"][key]) for r in rows if key in r["point"]}
        if len(values) < 2 or not _numeric([r["point"][key] for r in rows if key in r["point"]]):
            continue
        made.append((f"mse-vs-{_short(key)}", plot_accuracy(job, rows, key)))
        if classifier:
            made.append((f"relacc-vs-{_short(key)}", plot_relacc(job, rows, key)))
    if any(r["latency_mean"] is not None and r["nmse"] is not None for r in rows):
        made.append(("tradeoff", plot_tradeoff(job, rows)))
    points = last_points(results, labels)
    for key, kind, plot in (("latency", "latency-cdf", plot_latency_cdf),
                            ("nmse_db", "nmse-distribution", plot_nmse_distribution)):
        if any(len(c[key]) for _, _, schemes in points for c in schemes.values()):
            made.append((kind, plot(job, points)))
    close_points(points)
    return job.name, made


def caption(kind):
    """What a figure of this kind shows (``CAPTIONS``)."""
    return next(text for prefix, text in CAPTIONS.items() if kind.startswith(prefix))


def plot_all(results, outdir, rows, labels=(), formats=FORMATS):
    """Write every figure that applies (``figures``) into ``outdir`` as
    ``<job>-<kind>.<format>`` for each of ``formats``; returns the paths written."""
    return save_all(*figures(results, rows, labels), outdir, formats)


def figure_paths(name, made, outdir, formats=FORMATS):
    """The files ``save_all`` writes, in its order."""
    return [os.path.join(outdir, f"{name}-{kind}.{ext}") for kind, _ in made for ext in formats]


def save_all(name, made, outdir, formats=FORMATS):
    """Write the figures ``made`` ([(kind, Figure)] of ``figures``) of the job ``name``."""
    os.makedirs(outdir, exist_ok=True)
    figs = [fig for _, fig in made for _ in formats]
    return [save(fig, path) for fig, path in zip(figs, figure_paths(name, made, outdir, formats))]
