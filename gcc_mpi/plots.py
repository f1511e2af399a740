"""Figures of a results file (``python -m gcc_mpi analyze OUT.h5 --plot DIR``).

One PNG (6 x 4 in, 100 dpi) per kind of figure that applies to the file, named after the job:

- ``<job>-mse-vs-S.png``: NMSE in dB (mean ± 95 % CI) against the number of stragglers, one line
  per scheme, when ``stragglers.count`` is swept; the same against any other numeric swept key
  (``-mse-vs-<key>.png``);
- ``<job>-mse-vs-N.png``: mean NMSE against the number of workers on log-log axes, with the
  least-squares slope of each scheme (``rates.fit_rates``, as ``--rate code.workers``) drawn
  and given in the legend, when ``code.workers`` is swept;
- ``<job>-relacc-vs-S.png`` (``-vs-<key>``): relacc against the same keys when f is a classifier;
- ``<job>-latency-cdf.png``: the distribution of the per-trial latency of each scheme at the
  last sweep point (the one with the most stragglers or workers in the shipped jobs).

When other keys are swept too, each combination of their values gets its own line style. Schemes
whose NMSE is at round-off (exact codes, below -200 dB) are left out of the accuracy figures and
named in the legend: they would flatten every other line. Titles say what the job computed
(data, f, K, N, straggler model, trials, simulated or measured over MPI), so a figure reads
without the job file.

matplotlib (the ``[plot]`` extra) is imported only here, and only the object-oriented API with
the Agg canvas is used: no pyplot state, no display needed.
"""

import math
import os
import sys
import textwrap

import numpy as np

from .errors import JobError
from .rates import FLOOR_DB, fit_rate_details

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROUNDOFF_DB = -200.0
SIZE, DPI = (7.5, 4.0), 100  # wide enough for the legend right of the axes
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
COLORS = {"bacc": "C0", "letcc": "C1", "gcc": "C2", "gcc-manifold": "C3", "lcc": "C4",
          "replication": "C5", "uncoded": "C7"}
MARKERS = ["o", "s", "^", "D", "v", "P"]


def require_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise JobError("--plot", 'needs the optional extra: pip install "gcc_mpi[plot]"') from None


def _figure():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=SIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


# -- what the job was, in words ----------------------------------------------------------------
class _Job:
    """The resolved job of a file (its ``config`` attribute), for titles and file names."""

    def __init__(self, results):
        try:
            self.cfg = tomllib.loads(results.config_toml or "")
        except tomllib.TOMLDecodeError:
            self.cfg = {}
        self.name = self.get("job.name") or os.path.splitext(os.path.basename(results.path))[0]
        self.sweep = self.cfg.get("sweep", {})
        self.mpi = results.attrs.get("mpi") or ""

    def get(self, key):
        """The key's value, or None when it is swept (or missing)."""
        node = self.cfg
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def _ms(self, key):
        v = self.get(key)
        return "?" if v is None else f"{1e3 * v:g} ms"

    def stragglers(self):
        model = self.get("stragglers.model")
        count = self.get("stragglers.count")
        n = "S" if count is None else count
        if model in ("fixed", "adversarial"):
            how = "random" if model == "fixed" else "adversarial"
            return f"{n} {how} stragglers {self._ms('stragglers.delay')} late"
        if model == "bernoulli":
            p = self.get("stragglers.p")
            return (f"each worker {self._ms('stragglers.delay')} late with probability "
                    f"{'p' if p is None else p}")
        rate = self.get("stragglers.rate")
        mean = "?" if rate is None else f"{1e3 / rate:g} ms"
        if model == "exponential":
            return f"delays Exp(mean {mean})"
        if model == "shifted-exponential":
            return f"delays {self._ms('stragglers.shift')} + Exp(mean {mean})"
        if model == "pareto":
            return (f"Pareto delays (min {self._ms('stragglers.scale')}, "
                    f"shape {self.get('stragglers.shape')})")
        if model == "lognormal":
            return f"lognormal delays (median {self._ms('stragglers.median')})"
        return "no stragglers" if model == "none" else f"{model} delays"

    def waits_for(self):
        """S of "the fastest N - S" as text (config.resolved_stragglers, or its rule if swept)."""
        s = self.get("decode.stragglers")
        if s is not None and s != "auto":
            return s
        model = self.get("stragglers.model")
        if s is None or model is None:
            return "S"
        if model in ("fixed", "adversarial"):
            return self.get("stragglers.count") if self.get("stragglers.count") is not None else "S"
        return "round(pN)" if model == "bernoulli" else 0

    def target(self):
        kind = self.get("target.kind")
        if kind == "mlp":
            return "digits MLP" if self.get("target.model") is None else "MLP"
        if kind == "onnx":
            return "digits CNN" if self.get("target.path") is None else "ONNX model"
        if kind == "polynomial":
            return f"degree-{self.get('target.degree')} polynomial"
        if kind == "python":
            return str(self.get("target.function"))
        return str(kind)

    def data(self):
        source = self.get("data.source")
        if source in ("sphere", "swissroll", "torus", "gaussian"):
            return f"{source} in R^{self.get('data.dim')}"
        return "digits" if source == "digits" else "user data"

    def context(self, shown=()):
        """One or two lines: data, f, K, N, stragglers, decoding, trials, how it was run."""
        parts = [f"{self.data()}, f = {self.target()}"]
        for key, sym in (("data.batch", "K"), ("code.workers", "N")):
            if key not in shown and self.get(key) is not None:
                parts.append(f"{sym} = {self.get(key)}")
        parts.append(self.stragglers())
        wait = self.get("decode.wait")
        if wait == "fastest":
            parts.append(f"decode from the fastest N - {self.waits_for()}")
        elif wait == "deadline":
            parts.append(f"decode at {self._ms('decode.deadline')}")
        elif wait == "all":
            parts.append("decode when all arrived")
        trials = self.get("job.trials")
        how = ("simulated (waits = injected delays)" if self.mpi == "simulate"
               else "measured over MPI")
        parts.append(f"{trials} trials per point, {how}")
        return "\n".join(textwrap.wrap(", ".join(parts), 92))


def _save(fig, path):
    """Write the figure as a PNG with a 256-colour palette: a third of the bytes of
    matplotlib's RGBA file for these line plots, and the same look."""
    from PIL import Image  # matplotlib depends on Pillow

    fig.canvas.draw()
    rgba = Image.frombuffer("RGBA", fig.canvas.get_width_height(), fig.canvas.buffer_rgba())
    rgba.convert("RGB").quantize(256).save(path, optimize=True)
    return path


def _title(fig, ax, job, title, shown=()):
    fig.suptitle(f"{job.name}: {title}", fontsize=11, fontweight="bold")
    ax.set_title(job.context(shown), fontsize=7.5, color="0.3")


# -- series --------------------------------------------------------------------------------------
def _numeric(values):
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _series(rows, key):
    """{(scheme, other params as text): [row, ...] sorted by the key's value}, in file order."""
    out = {}
    for r in rows:
        if key not in r["point"]:
            continue
        others = ", ".join(f"{_short(k)} = {v}" for k, v in r["point"].items() if k != key)
        out.setdefault((r["scheme"], others), []).append(r)
    for rs in out.values():
        rs.sort(key=lambda r: r["point"][key])
    return out


def _color(scheme):
    """One colour per scheme in every figure."""
    return COLORS.get(scheme, "C8")


def _style(scheme, others, combos):
    i = combos.index(others)
    return dict(color=_color(scheme), linestyle=STYLES[i % len(STYLES)],
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
def plot_accuracy(job, rows, key, path):
    """NMSE [dB] against a numeric swept key (log-log mean NMSE with fitted slopes for N)."""
    series = _series(rows, key)
    combos = list(dict.fromkeys(o for _, o in series))
    loglog = key == "code.workers"
    fig, ax = _figure()
    left_out, floored = [], False
    for (scheme, others), rs in series.items():
        rs = [r for r in rs if r["nmse"] is not None and r["nmse"] > 0]
        if not rs or _exact(rs):
            left_out.append(scheme)
            continue
        style = _style(scheme, others, combos)
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
    return _save(fig, path)


def plot_relacc(job, rows, key, path):
    """relacc against a numeric swept key (f a classifier)."""
    series = _series(rows, key)
    combos = list(dict.fromkeys(o for _, o in series))
    fig, ax = _figure()
    for (scheme, others), rs in series.items():
        rs = [r for r in rs if r["relacc"] is not None]
        if not rs:
            continue
        x = [r["point"][key] for r in rs]
        ax.plot(x, [r["relacc"] for r in rs], label=_label(scheme, others),
                **_style(scheme, others, combos))
    _ticks(ax, sorted({r["point"][key] for r in rows if key in r["point"]}),
           log=key == "code.workers")
    lo = min((r["relacc"] for r in rows if r["relacc"] is not None), default=0.0)
    ax.set_ylim(max(0.0, lo - 0.1 * (1 - lo) - 0.005), 1.0 + 0.05 * (1 - lo) + 0.002)
    ax.set_xlabel(AXIS.get(key, key))
    ax.set_ylabel("relacc: fraction of inputs whose\nargmax class is right (higher is better)")
    ax.grid(True, alpha=0.3)
    _legend(ax, loc="lower left")
    _title(fig, ax, job, f"class agreement (relacc) vs {_what(key)}", shown=(key,))
    return _save(fig, path)


def plot_latency_cdf(job, results, path):
    """Empirical CDF of each scheme's latency at the last sweep point."""
    point = results.points[-1]
    fig, ax = _figure()
    spans = []
    for scheme, d in point.schemes.items():
        ok = ~d["failed"].astype(bool) if "failed" in d else np.ones(len(d["latency"]), bool)
        lat = 1e3 * d["latency"][ok]
        lat = np.sort(lat[np.isfinite(lat)])
        if not lat.size:
            continue
        spans += [lat[0], lat[-1]]
        frac = np.arange(1, lat.size + 1) / lat.size
        p50 = np.percentile(lat, 50)
        ax.step(np.r_[lat[0], lat], np.r_[0.0, frac], where="post", color=_color(scheme),
                label=f"{scheme} (median {p50:.3g} ms)")
    if spans and min(spans) > 0 and max(spans) / min(spans) > 20:
        from matplotlib.ticker import FuncFormatter

        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("latency per trial [ms]: encode + send + wait + decode")
    ax.set_ylabel("fraction of trials with latency ≤ x")
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, loc="best")
    where = ", ".join(f"{_short(k)} = {v}" for k, v in point.params.items())
    _title(fig, ax, job, "latency distribution per scheme" + (f" at {where}" if where else ""),
           shown=tuple(point.params))
    return _save(fig, path)


def _short(key):
    return SHORT.get(key, key)


def _what(key):
    return {"stragglers.count": "stragglers S", "decode.stragglers": "results not waited for",
            "code.workers": "workers N", "data.batch": "batch size K"}.get(key, key)


def plot_all(results, outdir, rows):
    """Write every figure that applies to ``results`` (a Results, summarised in ``rows`` by
    ``analyze.summarize``) into ``outdir``; returns the paths written."""
    require_matplotlib()
    job = _Job(results)
    os.makedirs(outdir, exist_ok=True)
    written = []
    swept = list(dict.fromkeys(k for r in rows for k in r["point"]))
    classifier = any(r["relacc"] is not None for r in rows)
    for key in swept:
        values = {r["point"][key] for r in rows if key in r["point"]}
        if len(values) < 2 or not _numeric(values):
            continue
        stem = os.path.join(outdir, f"{job.name}-%s-vs-{_short(key)}.png")
        written.append(plot_accuracy(job, rows, key, stem % "mse"))
        if classifier:
            written.append(plot_relacc(job, rows, key, stem % "relacc"))
    if results.points and any(math.isfinite(v) for d in results.points[-1].schemes.values()
                              for v in d.get("latency", [])):
        written.append(plot_latency_cdf(job, results,
                                        os.path.join(outdir, f"{job.name}-latency-cdf.png")))
    return written
