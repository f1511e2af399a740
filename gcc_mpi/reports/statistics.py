"""The statistics of a results file: one row per (sweep point, scheme), read a block of trials
at a time (``SchemeStats``), so memory does not grow with the file. The row's fields, their
intervals and when they are None: gcc_mpi.reports.analyze's docstring (the ``analyze --json``
contract)."""

import math

import numpy as np

from .quantiles import Column, order_statistics, percentiles
from ..files.reader import Results, ResultsFile

ERASURE_KINDS = {1: "raised", 2: "nonfinite", 3: "shape", 4: "lost",  # codes of dataset error
                 5: "hung"}
STATS = ("trials", "trials_failed", "mse", "nmse", "mse_db", "mse_db_ci95", "relacc",
          "relacc_ci95", "latency_p50", "latency_p99", "latency_mean", "latency_mean_ci95",
          "latency_p99_lo", "latency_p99_hi", "overhead_p50",
          "lengthscale_enc_median", "lengthscale_dec_median")
Z95 = 1.96  # a 95 % interval of a mean: 1.96 standard errors


def finite_or_none(x):
    """Python float, or None if not finite (NaN, inf) or missing."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def quantile_ci95(a, q):
    """(lo, hi): the distribution-free 95 % interval of the q-quantile of ``a`` (an array or a
    quantiles.Column of finite values; an array's non-finite ones are dropped) from its order
    statistics; an end that the sample cannot bound (too few values) is None."""
    if not isinstance(a, Column):
        column = Column()
        column.add(a[np.isfinite(a)])
        a = column
    n = len(a)
    if n < 2:
        return None, None
    lo = binomial_ppf(0.025, n, q)       # ranks from 1: x_(lo) and x_(hi)
    hi = binomial_ppf(0.975, n, q) + 1
    wanted = [r for r in (lo, hi) if 1 <= r <= n]
    values = dict(zip(wanted, order_statistics(a, [r - 1 for r in wanted])))
    return finite_or_none(values.get(lo)), finite_or_none(values.get(hi))


def fewest_trials_for_upper(q):
    """The fewest values whose order statistics bound the q-quantile from above at 95 %
    (``quantile_ci95``'s ``hi``): 368 for p99, 36 for p90, 6 for the median."""
    n = 2
    while binomial_ppf(0.975, n, q) + 1 > n:
        n += 1
    return n


def binomial_ppf(level, n, q):
    """The least k with P(B <= k) >= level for B ~ Binomial(n, q), q near 1 (scipy.stats'
    binom.ppf, whose import takes a second and more). From the pmf of the failures n - B, up to
    where its tail is below 1e-30: P(B <= k) = 1 - P(failures <= n - k - 1)."""
    p = 1.0 - q
    top = min(n, int(p * n + 12 * math.sqrt(n * p * q) + 20))
    j = np.arange(top + 1)
    log_choose = np.concatenate([[0.0], np.cumsum(np.log(n - j[:-1]) - np.log(j[:-1] + 1))])
    below = np.cumsum(np.exp(log_choose + j * math.log(p) + (n - j) * math.log1p(-p)))
    m = int(np.searchsorted(below, 1.0 - level, side="right")) - 1  # -1: no failure count
    return n - m - 1


class Moments:
    """Count, mean and sum of squared deviations of values added a block at a time (Chan et
    al.'s combination), for a mean and its 95 % interval in bounded memory."""

    def __init__(self):
        self.n, self.mean, self.m2 = 0, 0.0, 0.0

    def add(self, values):
        n = int(values.size)
        if not n:
            return
        mean = float(np.mean(values))
        m2 = float(np.sum((values - mean) ** 2))
        if self.n:
            total = self.n + n
            delta = mean - self.mean
            mean = self.mean + delta * n / total
            m2 = self.m2 + m2 + delta**2 * self.n * n / total
        self.n, self.mean, self.m2 = self.n + n, mean, m2

    def std_error(self):
        """The standard error of the mean (sample std / sqrt(n)); None below two values."""
        return math.sqrt(self.m2 / (self.n - 1)) / math.sqrt(self.n) if self.n >= 2 else None

    def ci95(self):
        """Half-width of the 95 % interval of the mean, None below two values."""
        se = self.std_error()
        return None if se is None else finite_or_none(Z95 * se)


def overhead(d):
    """Per-trial overhead (s): decode finished minus arrival of the last result used, both
    measured from scatter start, i.e. (t_scatter + t_wait + t_decode) - max(arrival[used])."""
    used = d["used"].astype(bool)
    last = np.where(used, d["arrival"], -np.inf).max(axis=1, initial=-np.inf)
    last[~np.isfinite(last)] = np.nan
    return d["t_scatter"] + d["t_wait"] + d["t_decode"] - last


class SchemeStats:
    """The statistics of one scheme's trials (a row of ``summarize``), from its datasets added
    a block of trials at a time (``add``: a dict of arrays along the trial axis), so that memory
    does not grow with the trials: sums and moments, and the values the percentiles and p99's
    interval need in ``quantiles.Column``s. A single block gives numpy's own percentiles."""

    def __init__(self):
        self.trials = self.failed = 0
        self.moments = {k: Moments() for k in ("nmse", "relacc", "latency")}
        self.sums = {"mse": 0.0, "relacc": 0.0}
        self.keys = set()             # datasets seen (relacc, lengthscales)
        self.has_overhead = False     # every dataset the overhead needs was seen
        self.columns = {k: Column() for k in ("latency", "overhead", "lengthscale_enc",
                                              "lengthscale_dec")}
        self.erasures = dict.fromkeys(ERASURE_KINDS.values(), 0)
        self.lost = None              # per worker: its rank died in some trial

    @property
    def ok(self):
        """Trials that did not fail."""
        return self.moments["nmse"].n

    def add(self, d):
        trials = min((a.shape[0] for a in d.values()), default=0)
        failed = d["failed"].astype(bool) if "failed" in d else np.zeros(trials, bool)
        ok = ~failed
        self.trials += int(trials)
        self.failed += int(failed.sum())
        self.keys |= set(d)
        self._erasures(d)
        if not ok.any():
            return
        self.moments["nmse"].add(d["nmse"][ok])
        self.sums["mse"] += float(np.sum(d["mse"][ok]))
        if "relacc" in d:
            relacc = d["relacc"][ok]
            self.sums["relacc"] += float(np.sum(relacc))
            self.moments["relacc"].add(relacc[np.isfinite(relacc)])
        if "latency" in d:
            latency = d["latency"][ok]
            self.moments["latency"].add(latency[np.isfinite(latency)])
        for k in ("latency", "lengthscale_enc", "lengthscale_dec"):
            if k in d:
                self._keep(k, d[k][ok])
        if all(k in d for k in ("used", "arrival", "t_scatter", "t_wait", "t_decode")):
            self.has_overhead = True
            self._keep("overhead", overhead(d)[ok])

    def _keep(self, key, values):
        self.columns[key].add(values[np.isfinite(values)])

    def _erasures(self, d):
        error = d.get("error")
        if error is None or error.ndim != 2:
            return
        for code, name in ERASURE_KINDS.items():
            self.erasures[name] += int(np.count_nonzero(error == code))
        lost = (error == 4).any(axis=0)
        self.lost = lost if self.lost is None else self.lost | lost

    def row(self) -> dict:
        row = dict.fromkeys(STATS)
        row.update(trials=self.trials, trials_failed=self.failed, erasures=dict(self.erasures),
                   workers_lost=0 if self.lost is None else int(np.count_nonzero(self.lost)))
        if self.ok == 0:
            return row
        nmse = self.moments["nmse"]
        m = nmse.mean
        row["mse"] = finite_or_none(self.sums["mse"] / self.ok)
        row["nmse"] = finite_or_none(m)
        if math.isfinite(m) and m > 0 and self.ok >= 2:
            row["mse_db_ci95"] = finite_or_none(Z95 * 10 / math.log(10) * nmse.std_error() / m)
        if math.isfinite(m) and m > 0:
            row["mse_db"] = 10 * math.log10(m)
        if "relacc" in self.keys:
            row["relacc"] = finite_or_none(self.sums["relacc"] / self.ok)
            if row["relacc"] is not None:
                row["relacc_ci95"] = self.moments["relacc"].ci95()
        latency = self.columns["latency"]
        row["latency_p50"], row["latency_p99"] = percentiles(latency, (50, 99))
        if self.moments["latency"].n:
            row["latency_mean"] = finite_or_none(self.moments["latency"].mean)
            row["latency_mean_ci95"] = self.moments["latency"].ci95()
        row["latency_p99_lo"], row["latency_p99_hi"] = quantile_ci95(latency, 0.99)
        if self.has_overhead:
            row["overhead_p50"] = percentiles(self.columns["overhead"], (50,))[0]
        for side in ("enc", "dec"):  # None for schemes without one, and files from before the field
            if f"lengthscale_{side}" in self.keys:
                row[f"lengthscale_{side}_median"] = percentiles(
                    self.columns[f"lengthscale_{side}"], (50,))[0]
        for column in self.columns.values():
            column.close()
        return row


def summarize_scheme(d) -> dict:
    """Statistics of one scheme's datasets (a dict of arrays along the trial axis)."""
    stats = SchemeStats()
    stats.add(d)
    return stats.row()


def erasure_counts(d) -> dict:
    """``erasures``: {kind: worker results erased} over all trials (dataset ``error``: 1 raised,
    2 nonfinite, 3 shape, 4 lost, 5 hung), and ``workers_lost``: how many workers' ranks died."""
    row = summarize_scheme({k: d[k] for k in ("error",) if k in d})
    return {"erasures": row["erasures"], "workers_lost": row["workers_lost"]}


# the datasets the statistics read (not delay, alpha or the strings)
STAT_DATASETS = ("failed", "nmse", "mse", "relacc", "latency", "used", "arrival", "t_scatter",
                 "t_wait", "t_decode", "lengthscale_enc", "lengthscale_dec", "error")


def summarize(results) -> list:
    """One row per (point, scheme), in point order then the file's scheme order, reading each
    (point, scheme) a block of trials at a time. ``results`` is a path, a :class:`Results` or
    an open :class:`ResultsFile` (a file is opened once: on a live file, one commit's rows)."""
    if isinstance(results, ResultsFile) or isinstance(results, Results) and results.in_memory:
        return summarize_file(results)
    with ResultsFile(results.path if isinstance(results, Results) else results) as f:
        return summarize_file(f)


def summarize_file(f):
    rows = []
    for p in f.points:
        for scheme in p.schemes:
            stats = SchemeStats()
            # every dataset, not only STAT_DATASETS: each byte of the file is read (and its
            # checksum checked) once, so that a damaged file is one line, not a quiet table
            for block in f.blocks(p.index, scheme):
                stats.add({k: block[k] for k in STAT_DATASETS if k in block})
            rows.append({"point": dict(p.params), "scheme": scheme, **stats.row()})
    return rows
