"""The tail at equal cost (issue 37): p50 and p99 of every scheme of a results file, with their
95 % intervals, and the best coded scheme's p99 against replication's and uncoded's.

    mpiexec -n 9 python -m gcc_mpi run jobs/digits-heavy.toml --set job.trials=400 -o heavy.h5
    python benchmarks/headline.py heavy.h5 [more.h5 ...]

Every scheme of one sweep point ran on the same N workers (the same machine cost; uncoded uses
K of them) on paired trials. The intervals are distribution-free, from order statistics
(gcc_mpi.reports.statistics.quantile_ci95, as ``analyze --json``'s latency_p99_lo/hi): the p99's
upper end needs about 370 trials ("-" below that). "best coded" is the approximate scheme of
the lowest p99; the verdict says whether its interval and the other's are apart ("shorter",
"longer") or overlap ("not resolved").
"""

import argparse

import numpy as np

from gcc_mpi.files.reader import read_results
from gcc_mpi.reports.statistics import quantile_ci95

EXACT = ("uncoded", "replication", "lcc")


def ms(v):
    return "-" if v is None else f"{1e3 * v:.1f}"


def quantile(latency, q):
    lo, hi = quantile_ci95(latency, q)
    return float(np.quantile(latency, q)), lo, hi


def verdict(a, b):
    """Whether interval a = (value, lo, hi) lies below b's, above it, or they overlap."""
    if a[2] is not None and b[1] is not None and a[2] < b[1]:
        return "shorter"
    if a[1] is not None and b[2] is not None and a[1] > b[2]:
        return "longer"
    return "not resolved"


def point_table(point):
    rows = {}
    print(f"{'scheme':14} {'trials':>6} {'nmse dB':>8} {'relacc':>6}  {'p50 ms [95% CI]':>22}  "
          f"{'p99 ms [95% CI]':>24}")
    for name, d in point.schemes.items():
        ok = ~d["failed"]
        latency = d["latency"][ok]
        nmse = d["nmse"][ok]
        db = "exact" if np.all(nmse < 1e-20) else f"{10 * np.log10(np.mean(nmse)):.1f}"
        rows[name] = quantile(latency, 0.5), quantile(latency, 0.99)
        (p50, l50, h50), (p99, l99, h99) = rows[name]
        print(f"{name:14} {ok.sum():6d} {db:>8} {np.mean(d['relacc'][ok]):6.3f}  "
              f"{ms(p50):>6} [{ms(l50):>5}, {ms(h50):>5}]  {ms(p99):>7} [{ms(l99):>6}, "
              f"{ms(h99):>6}]")
    return rows


def compare(rows):
    coded = [n for n in rows if n not in EXACT]
    if not coded:
        return
    best = min(coded, key=lambda n: rows[n][1][0])
    for other in ("replication", "uncoded"):
        if other in rows:
            ratio = rows[best][1][0] / rows[other][1][0]
            print(f"best coded {best}: p99 {ratio:.2f}x {other}'s "
                  f"({verdict(rows[best][1], rows[other][1])}; p50 "
                  f"{rows[best][0][0] / rows[other][0][0]:.2f}x, "
                  f"{verdict(rows[best][0], rows[other][0])})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    for path in ap.parse_args().files:
        r = read_results(path)
        print(f"# {path}: {r.attrs.get('mpi', '?').splitlines()[0][:60]}; "
              f"{r.attrs.get('command', '?')}")
        for point in r.points:
            print(f"point {point.index} {point.params if hasattr(point, 'params') else ''}")
            compare(point_table(point))
        print()


if __name__ == "__main__":
    main()
