"""Post-processing of a results file: pure functions from a path (or Results, or an open
ResultsFile) to rows and text (figures: gcc_mpi.reports.plots, imported only for ``--plot``). Each
(point, scheme) is read a block of trials at a time (``SchemeStats``), so memory does not grow
with the file.

One row per (sweep point, scheme) — the ``analyze --json`` contract of docs/output.md:
``point, scheme, trials, trials_failed, mse, nmse, mse_db, relacc, latency_p50, latency_p99,
overhead_p50`` plus ``mse_db_ci95``, ``relacc_ci95``, ``latency_mean``, ``latency_mean_ci95``,
``latency_p99_lo``, ``latency_p99_hi`` (95 % confidence intervals) and
``lengthscale_enc_median``, ``lengthscale_dec_median`` (the median chosen kernel lengthscales of
gcc and gcc-manifold); ``--json`` adds ``equal_cost`` (``Analysis.json_rows``). Means and
percentiles are over non-failed trials only; values that are undefined (no successful trial,
not a classifier, ...) are ``None``.

``mse_db_ci95`` is the half-width of a 95 % confidence interval for ``mse_db`` by the delta
method: with m the mean nmse and s its standard error (sample std / sqrt(n)),
d(10·log10 m)/dm = 10 / (m ln 10), so the half-width is 1.96 · 10 / ln 10 · s / m dB.
``relacc_ci95`` and ``latency_mean_ci95`` are 1.96 standard errors of their means. p99's interval
is distribution-free, from order statistics: the trials' latencies ranked l and u with
l = F⁻¹(0.025), u = F⁻¹(0.975) + 1 for F the Binomial(n, 0.99) distribution; ``latency_p99_hi``
is ``None`` below 368 trials, too few to bound the tail from above; the table shows p99 with
its interval and "?" for that end (``tables.with_interval``), and a line under it says why.
All deterministic; ``None`` with fewer than two successful trials. Several files:
gcc_mpi.reports.comparison.
"""

import csv
import json as _json
import logging
import os

import numpy as np

from . import comparison
from ..errors import JobError
from ..files.outputs import refuse
from ..logs import PLAIN
from .rates import (FLOOR_DB, Rate, fit_rate_details, fit_rates,  # noqa: F401  (interface)
                    format_rates, rates_json)
from ..files.reader import Results, read_results
from .statistics import (
    ERASURE_KINDS, STATS, finite_or_none, summarize,
)
from .suspects import suspect_lines
from .tables import P99, aligned, format_param, tail_text, too_few_note


log = logging.getLogger(__name__)


def _erasure_text(r):
    shown = [f"{n} {k}" for k, n in r["erasures"].items() if n]
    if r["workers_lost"]:
        shown.append(f"{r['workers_lost']} worker{'s' if r['workers_lost'] > 1 else ''} lost")
    return ", ".join(shown) or "-"


# -- output ----------------------------------------------------------------------------------
def _param_keys(rows):
    keys = []
    for r in rows:
        keys += [k for k in r["point"] if k not in keys]
    return keys


def _ms(x):
    if x is None:
        return "-"
    return f"{1e3 * x:.3f}"


def format_table(rows) -> str:
    """Aligned text table; ``-`` marks an undefined value. Rows of several files (``file`` in
    each, gcc_mpi.reports.comparison) get a first column naming the file."""
    if not rows:
        return "(no trials recorded)"
    return aligned(*table_cells(rows))


def table_note(rows):
    """The line under the table that explains a p99 interval's open end, if one is shown."""
    head, body, _ = table_cells(rows) if rows else ([P99], [], 0)
    return too_few_note([b[head.index(P99)] for b in body])


def table_cells(rows):
    """(head, body, left) of the table of ``rows``: column titles, one list of cells (text)
    per row, and how many leading columns are names (the rest are numbers)."""
    keys = _param_keys(rows)
    files = ["file"] if any("file" in r for r in rows) else []
    head = files + keys + ["scheme", "trials (failed)", "nmse [dB] ± ci95", "relacc",
                           "latency p50 [ms]", P99, "overhead p50 [ms]"]
    erasures = any(r.get("workers_lost") or any(r.get("erasures", {}).values()) for r in rows)
    if erasures:  # only when some worker result was erased (f raised, NaN, shape, rank died)
        head.append("erasures")
    body = []
    for r in rows:
        db = "-" if r["mse_db"] is None else f"{r['mse_db']:.2f}"
        if r["mse_db"] is not None and r.get("mse_db_ci95") is not None:
            db += f" ± {r['mse_db_ci95']:.2f}"
        body.append([r["file"] for _ in files]
                    + [format_param(r["point"][k]) if k in r["point"] else "-" for k in keys] + [
            r["scheme"], f"{r['trials']} ({r['trials_failed']})", db,
            "-" if r["relacc"] is None else f"{r['relacc']:.3f}",
            _ms(r["latency_p50"]),
            tail_text(r, "latency_p99"),
            _ms(r["overhead_p50"])]
            + ([_erasure_text(r)] if erasures else []))
    return head, body, len(files) + len(keys) + 1



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
        return finite_or_none(x)
    return x


def to_json(rows) -> str:
    """Strict JSON array (NaN and infinities become null)."""
    return _json.dumps(_clean(rows), indent=2, allow_nan=False)


def write_csv(rows, path) -> None:
    """One line per row; point parameters first as columns named by their dotted key
    (``point.<key>`` if a key clashes with a statistic), empty cell for undefined values;
    rows of several files start with a column ``file``."""
    keys = _param_keys(rows)
    files = ["file"] if any("file" in r for r in rows) else []
    names = files + [f"point.{k}" if k in STATS or k in ("scheme", "file") else k for k in keys]
    parent = os.path.dirname(os.fspath(path))
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        kinds = list(ERASURE_KINDS.values())
        w.writerow(names + ["scheme", *STATS] + [f"erasures_{k}" for k in kinds]
                   + ["workers_lost"])
        for r in rows:
            erased = r.get("erasures", {})
            w.writerow([r["file"] for _ in files]
                       + ["" if r["point"].get(k) is None else format_param(r["point"][k])
                          for k in keys]
                       + [r["scheme"]] + ["" if r.get(s) is None else r[s] for s in STATS]
                       + [erased.get(k, 0) for k in kinds] + [r.get("workers_lost", 0)])


def check_outputs(csv=None, plot=None, html=None, *, inputs=(), overwrite=False):
    """JobError naming the option when --csv or --html is a folder, one of ``inputs``, or
    exists (unless ``overwrite``), or cannot be created, or when --plot is a file."""
    for option, path in (("--csv", csv), ("--html", html)):
        if not path:
            continue
        refuse(path, option, overwrite=overwrite, inputs=inputs,
               example="table.csv" if option == "--csv" else "report.html")
        parent = os.path.dirname(os.fspath(path)) or "."
        if os.path.exists(parent) and not os.path.isdir(parent):
            raise JobError(option, f"{parent} is a file, not a folder")
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


class Analysis:
    """What ``analyze`` reports of one results file or several compared: the files (Results),
    their labels (None for one file without a label), the summary rows (labelled when several,
    gcc_mpi.reports.comparison) and the differences of matching rows against the first file."""

    def __init__(self, paths, labels=None):
        paths = [paths] if isinstance(paths, (str, os.PathLike, Results)) else list(paths)
        self.results = [r if isinstance(r, Results) else read_results(r) for r in paths]
        self.several = len(self.results) > 1 or bool(labels)
        self.labels = comparison.labels_for([r.path for r in self.results], labels) \
            if self.several else [None]
        self.per_file = [summarize(r) for r in self.results]
        self.rows = comparison.label_rows(self.results, self.labels, self.per_file) \
            if self.several else self.per_file[0]
        self.differences = comparison.differences(self.rows) if len(self.results) > 1 else []

    def rates(self, key):
        """{label: {scheme: Rate}} of each file (a bad key fails with a JobError)."""
        return {label: fit_rate_details(rows, key)
                for label, rows in zip(self.labels, self.per_file)}

    def header(self):
        """One line per file: where it came from."""
        lines = []
        for label, r in zip(self.labels, self.results):
            a = r.attrs
            named = f"{label} = " if label else ""
            lines.append(f"# {named}{r.path}: gcc_mpi {a.get('version')}, mpi {a.get('mpi')}, "
                         f"created {a.get('created')}")
        return "\n".join(lines)

    def text(self):
        """The table (and the differences, for several files), as printed."""
        note = table_note(self.rows)
        out = [self.header(), format_table(self.rows)] + ([note] if note else [])
        if not self.several:  # one file: coding against the baselines in each point
            from .equal_cost import format_equal_cost

            text = format_equal_cost(self.equal_cost())
            out += ["", text] if text else []
        if len(self.results) > 1:
            out += ["", comparison.format_differences(self.differences, self.labels), "",
                    comparison.format_provenance(
                        comparison.provenance_differences(self.results, self.labels),
                        self.labels)]
        return "\n".join(out)

    def equal_cost(self):
        """The equal-cost entries of one file (gcc_mpi.reports.equal_cost), [] for several: the
        rows of the table that the text and the HTML report show."""
        from .equal_cost import equal_cost

        return [] if self.several else equal_cost(self.rows, self.results[0].config_toml)

    def json_rows(self):
        """The rows, each with ``equal_cost``: what its point's equal-cost entry adds to it
        (N, K, the cost, the p99 ratios; ``equal_cost.by_row``), null outside such a point."""
        from .equal_cost import by_row

        added = [e for rows, r in zip(self.per_file, self.results)
                 for e in by_row(rows, r.config_toml)]  # in the order label_rows keeps
        return [{**r, "equal_cost": e} for r, e in zip(self.rows, added)]

    def json(self):
        """The JSON rows of one file (the contract), or for several
        ``{"files": [...], "rows": [...], "differences": [...]}``."""
        if not self.several:
            return to_json(self.json_rows())
        from ..files.reader import provenance

        files = [{"file": label, "path": r.path, "complete": r.complete,
                  **{k: r.attrs.get(k) for k in ("version", "mpi", "created", "command")},
                  "provenance": provenance(r.attrs)}
                 for label, r in zip(self.labels, self.results)]
        return _json.dumps(_clean({"files": files, "rows": self.json_rows(),
                                   "differences": self.differences}), indent=2, allow_nan=False)

    def figures(self):
        """(job name, [(kind, Figure)]) of every figure that applies (gcc_mpi.reports.plots)."""
        from .plots import figures

        return figures(self.results, self.rows, self.labels if self.several else ())

    def cells(self):
        """(head, body, left) of the summary table (``table_cells``)."""
        return table_cells(self.rows)


def main_analyze(paths, json=False, csv=None, rate=None, plot=None, html=None,
                 labels=None, overwrite=False) -> int:
    """``python -m gcc_mpi analyze``: print the table (or JSON) of one results file or of
    several compared (gcc_mpi.reports.comparison), optionally write a CSV, the figures (``plot``: a
    folder; see gcc_mpi.reports.plots) and an HTML report (``html``: a file). Raises JobError if a
    path is missing or not a gcc_mpi file, if figures are asked for without matplotlib, or if
    an output exists (unless ``overwrite``) or is one of ``paths``."""
    from .probe import main_analyze_probe
    from ..files.traces import is_probe_file

    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    # a bad --csv, --plot or --html fails before any output
    check_outputs(csv, plot, html, inputs=paths, overwrite=overwrite)
    probes = [p for p in paths if is_probe_file(p)]
    if probes:  # a probe's file (python -m gcc_mpi probe): its own summary
        if len(paths) > 1:
            raise JobError("analyze", f"{probes[0]} is a probe file: compare results files, "
                                      "and analyze a probe file on its own")
        for option, given in (("--csv", csv), ("--rate", rate), ("--html", html),
                              ("--label", labels)):
            if given:
                raise JobError(option, "applies to results files, not to a probe file")
        return main_analyze_probe(paths[0], json_out=json, plot=plot, overwrite=overwrite)
    return _analyze_results(paths, json, csv, rate, plot, html, labels, overwrite)


def _analyze_results(paths, json, csv, rate, plot, html, labels, overwrite):
    """main_analyze of results files (not a probe's): the outputs asked for, then the text."""
    analysis = Analysis(paths, labels)
    rates = analysis.rates(rate) if rate else None  # a bad key fails before any output
    if plot or html:
        from .canvas import require_matplotlib

        require_matplotlib()  # a missing extra fails before any output too
    made = analysis.figures() if plot or html else None  # drawn once for both
    if plot:
        from .plots import figure_paths

        for path in figure_paths(*made, plot):  # every figure checked before any is written
            refuse(path, "--plot", overwrite=overwrite, inputs=paths)
    if csv:
        _writing("--csv", csv, lambda: write_csv(analysis.rows, csv))
    if plot:
        from .plots import save_all

        for figure in _writing("--plot", plot, lambda: save_all(*made, plot)):
            log.info("wrote %s", figure, extra=PLAIN)
    if html:
        from .html import build

        page = build(analysis, rate, made)
        _writing("--html", html, lambda: _write_text(html, page))
        log.info("wrote %s", html, extra=PLAIN)
    _print(analysis, json, rate, rates)
    return 0


def _print(analysis, json, rate, rates):
    """What analyze prints: the table (or JSON), the suspects, the rates, and a note per
    incomplete file."""
    if json and rate:
        shown = {label: rates_json(r, rate) for label, r in rates.items()}
        print(_json.dumps(_clean(shown if analysis.several else shown[None])))
    elif json:
        print(analysis.json())
    else:
        print(analysis.text())
        for r in analysis.results:  # the workers a robust decoder kept flagging
            for line in suspect_lines(r):
                print((f"{r.path}: " if analysis.several else "") + line)
    if rate and not json:
        for label, r in rates.items():
            print((f"{label}: " if label else "") + format_rates(r, rate))
    for r in analysis.results:
        if not r.complete:
            log.warning("note: %s is incomplete (run interrupted or still running)", r.path,
                        extra=PLAIN)


def _write_text(path, text):
    parent = os.path.dirname(os.fspath(path))
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
