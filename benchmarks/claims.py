"""The papers' claims beside our measurements: the table of docs/claims.md.

    python benchmarks/claims.py [--only NAME ...] [--small] [--trials T] [--json]
                                [--decoder beta|auto|input]

Each claim has its job in jobs/claims/; it is run as a user runs it (``python -m gcc_mpi
simulate JOB -o FILE``, with the claim's --set overrides), the file is read with gcc_mpi's reading
API (``analyze.summarize``, ``rates.fit_rate_details``: the slopes ``analyze --rate`` prints) and
one line per scheme gives the figure, its 95% interval and the verdict:
- a rate (``Slope``): the least-squares log-log slope of the mean nmse against the swept key, fitted
  on the points above the round-off floor (rates.FLOOR_DB), ± 1.96 standard errors; a bound
  "decays at least like key^b" holds when the slope is at most b within that interval;
- a rate with its log factor (``BoundSlope``): the slope of nmse / (log_{1/p}(N)^a N^-b), which the
  bound says does not grow: it holds when that slope is at most 0 within its interval;
- "A beats B" (``Beats``): at every point, the mean nmse of A over B's in dB and a 95% bootstrap
  interval of it over the paired trials; it holds when every interval lies below 0;
- a rate against N with round(N^a) adversaries (``CountRate``): each N its own run (a sweep cannot
  tie adversaries.count to code.workers), the least-squares log-log slope of the mean nmse over
  N ± 1.96 standard errors; it holds when the interval reaches the bound (6/5)(a - 1);
- ApproxIFER's setting (``Relacc``): each scheme's relative accuracy with a 95% bootstrap
  interval, at K = 8, 10, 12 with N = K + 1 and one straggler, beside the published figures.
The jobs measure the schemes as published: gcc's and gcc-manifold's decoder along beta
(``code.<scheme>.decoder = "beta"``); ``--decoder auto`` measures our default decoder (the input
space, gcc.py) on the same jobs and trials instead. Every line names the decoder it measured.
``--small`` runs every job at the test's size (tests/test_claims.py): a few trials, the sweep cut
to its ends; ``--json`` prints the lines as a JSON array (claim, scheme, figure, holds, values),
which the test reads. The verdicts of the full run are docs/claims.md's.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gcc_mpi.api import run_simulation
from gcc_mpi.job.parse import load_job
from gcc_mpi.reports.statistics import summarize
from gcc_mpi.reports.rates import FLOOR_DB, fit_rate_details
from gcc_mpi.files.reader import read_results

CLAIMS_DIR = Path(__file__).resolve().parent.parent / "jobs" / "claims"
RESAMPLES = 2000
Z95 = 1.96


def simulate(job, sets, tmp, name):
    """Run ``simulate`` of jobs/claims/JOB.toml with ``sets``; the results read back."""
    out = Path(tmp) / f"{name}.h5"
    cmd = [sys.executable, "-m", "gcc_mpi", "simulate", str(CLAIMS_DIR / f"{job}.toml"), "-o",
           str(out), "--overwrite", "-q"]
    for s in sets:
        cmd += ["--set", s]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    done = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return read_results(out)


def db_of_mean(nmse, axis=-1):
    return 10 * np.log10(np.nanmean(nmse, axis=axis))


def bootstrap(stat, n, seed=0):
    """95% percentile interval of ``stat(idx)`` over RESAMPLES resamples of n trials."""
    idx = np.random.default_rng(seed).integers(0, n, (RESAMPLES, n))
    return np.percentile(stat(idx), [2.5, 97.5])


@dataclass
class Line:
    """One row of the table: a scheme's figure, its 95% interval, the verdict."""

    claim: str
    scheme: str
    figure: str
    holds: bool
    values: dict = field(default_factory=dict)  # what the test checks (slope, differences...)
    decoder: str = "beta"  # gcc's and gcc-manifold's (code.<scheme>.decoder)

    def text(self):
        return f"{self.claim:20s} {self.scheme:19s} {self.decoder:5s} {self.figure:58s} " + (
            "holds" if self.holds else "does NOT hold")


@dataclass
class Slope:
    """The error against ``key`` decays at least like key^bound (bound < 0), or grows at most like
    key^bound (bound > 0)."""

    name: str
    job: str
    key: str
    bound: float
    small: list  # the key's values at --small

    def lines(self, results):
        rates = fit_rate_details(summarize(results), self.key)
        out = []
        for scheme, r in rates.items():
            if r.slope is None:
                out.append(Line(self.name, scheme, f"no slope ({len(r.used)} points above the "
                                f"{FLOOR_DB:g} dB floor)", False, {"slope": None}))
                continue
            floor = f", floor at {', '.join(map(str, r.excluded))}" if r.excluded else ""
            if r.stderr is None:  # two points: a line through them, no error to estimate
                holds = r.slope <= self.bound
                fig = f"slope {r.slope:+.2f}, no standard error ({len(r.used)} points){floor}"
                out.append(Line(self.name, scheme, fig, holds, {"slope": r.slope,
                                                                "stderr": None}))
                continue
            se = r.stderr
            lo, hi = r.slope - Z95 * se, r.slope + Z95 * se
            holds = lo <= self.bound
            fig = (f"slope {r.slope:+.2f} ± {se:.2f} [{lo:+.2f}, {hi:+.2f}] ({len(r.used)} "
                   f"points){floor}")
            out.append(Line(self.name, scheme, fig, holds, {"slope": r.slope, "stderr": se}))
        return out


@dataclass
class BoundSlope:
    """nmse / (log_{1/p}(N)^a N^-b) does not grow with N, for each scheme's (a, b)."""

    name: str
    job: str
    p: float
    bounds: dict  # scheme -> (a, b)
    small: list
    key: str = "code.workers"

    def lines(self, results):
        rows = summarize(results)
        rates = fit_rate_details(rows, self.key)
        out = []
        for scheme, (a, b) in self.bounds.items():
            used = rates[scheme].used
            pts = [(r["point"][self.key], r["nmse"]) for r in rows
                   if r["scheme"] == scheme and r["point"][self.key] in used]
            if len(pts) < 3:
                out.append(Line(self.name, scheme, "too few points above the floor", False))
                continue
            N, nmse = np.array(pts, float).T
            bound = np.log(N) ** a / math.log(1 / self.p) ** a * N ** (-b)
            x, y = np.log10(N), np.log10(nmse / bound)
            slope, icept = np.polyfit(x, y, 1)
            rss = float(np.sum((y - slope * x - icept) ** 2))
            se = math.sqrt(rss / (len(x) - 2) / np.sum((x - x.mean()) ** 2))
            lo, hi = slope - Z95 * se, slope + Z95 * se
            fig = (f"bound log^{a}(N) N^-{b}: error/bound slope {slope:+.2f} ± {se:.2f} "
                   f"[{lo:+.2f}, {hi:+.2f}]; nmse slope {rates[scheme].slope:+.2f}")
            out.append(Line(self.name, scheme, fig, lo <= 0, {"slope": slope, "stderr": se,
                                                               "rate": rates[scheme].slope}))
        return out


@dataclass
class Beats:
    """``better`` has a lower nmse than ``worse`` at every point of the job."""

    name: str
    job: str
    better: str
    worse: str
    small: list

    def lines(self, results):
        diffs, text, holds = [], [], True
        for p in results.points:
            a, b = p.schemes[self.better]["nmse"], p.schemes[self.worse]["nmse"]
            d = db_of_mean(a) - db_of_mean(b)
            lo, hi = bootstrap(lambda i: db_of_mean(a[i]) - db_of_mean(b[i]), len(a))
            holds &= hi < 0
            diffs.append(d)
            where = ", ".join(f"{k.split('.')[-1]} = {v}" for k, v in p.params.items())
            text.append(f"{where}: {d:+.1f} [{lo:+.1f}, {hi:+.1f}]")
        return [Line(self.name, f"{self.better} - {self.worse}", "dB " + "; ".join(text),
                     holds, {"differences": diffs})]


@dataclass
class Relacc:
    """Relative accuracy per scheme at N = K + 1, one straggler, beside the published BACC's."""

    name: str
    job: str
    published: dict  # K -> BACC's published relacc
    small_trials: int = 40  # at --small: relacc is a coarse statistic, and these trials cheap
    tolerance: float = 0.05  # "BACC keeps about the published relacc": within this

    def sets(self, K):
        return [f"data.batch={K}", f"code.workers={K + 1}"]

    def lines(self, by_k):
        out = []
        schemes = list(next(iter(by_k.values())).points[0].schemes)
        for scheme in schemes:
            cells, values = [], {}
            for K, results in by_k.items():
                d = results.points[0].schemes[scheme]
                acc, nmse = d["relacc"], d["nmse"]
                lo, hi = bootstrap(lambda i: np.nanmean(acc[i], axis=1), len(acc))
                values[K] = (float(np.nanmean(acc)), float(db_of_mean(nmse)))
                cells.append(f"K={K} {np.nanmean(acc):.3f} [{lo:.3f}, {hi:.3f}] "
                             f"({db_of_mean(nmse):.1f} dB)")
            if scheme == "bacc":
                holds = all(abs(values[K][0] - self.published[K]) <= self.tolerance
                            for K in by_k)
                fig = "; ".join(cells) + " (published 0.872 / 0.872 / 0.868)"
            else:  # the kernel codes against BACC on the same trials
                holds = all(values[K][0] >= by_k_bacc for K, by_k_bacc in
                            ((K, float(np.nanmean(r.points[0].schemes["bacc"]["relacc"])))
                             for K, r in by_k.items()))
                fig = "; ".join(cells) + " (holds: relacc at least bacc's)"
            out.append(Line(self.name, scheme, fig, holds, values))
        return out


@dataclass
class Threshold:
    """LCC corrects A wrong results exactly at N = D + 1 + 2A (D = deg·(K - 1)), and refuses a
    trial with more: per A, the trials with at most A liars and how many decoded below the
    round-off floor, the trials with more and how many were refused (failed)."""

    name: str
    job: str
    D: int        # the job's deg·(K - 1)
    errors: tuple  # the A to run, each at its threshold N

    def sets(self, A):
        """N at the threshold, and p = (A - 1/2) / (2N): the decoder's A = ceil(2pN) is A."""
        N = self.D + 1 + 2 * A
        return [f"code.workers={N}", f"adversaries.p={(A - 0.5) / (2 * N)!r}"]

    def lines(self, by_a):
        out = []
        for A, results in by_a.items():
            d = results.points[0].schemes["lcc"]
            liars = d["adversary"].sum(axis=1)  # every result is used: no stragglers, wait all
            within, beyond = liars <= A, liars > A
            with np.errstate(divide="ignore"):  # an nmse of exactly 0 is -inf dB: exact
                exact = within & ~d["failed"] & (10 * np.log10(d["nmse"]) <= FLOOR_DB)
            refused = beyond & d["failed"]
            worst = 10 * np.log10(np.nanmax(d["nmse"][within & ~d["failed"]]))
            N = self.D + 1 + 2 * A
            fig = (f"N = {N}: {exact.sum()} of {within.sum()} trials with <= {A} liars exact "
                   f"(worst {worst:.0f} dB), {refused.sum()} of {beyond.sum()} with more "
                   "refused")
            holds = exact.sum() == within.sum() > 0 and refused.sum() == beyond.sum()
            out.append(Line(self.name, f"lcc A={A}", fig, bool(holds), {
                "N": N, "within": int(within.sum()), "exact": int(exact.sum()),
                "beyond": int(beyond.sum()), "refused": int(refused.sum()), "worst_db": worst}))
        return out


@dataclass
class CountRate:
    """The error decays at least like N^((6/5)(a - 1)) with round(N^a) adversaries."""

    name: str
    job: str
    a: float
    workers: list  # the N of the full run
    small: list    # the N at --small

    @property
    def bound(self):
        return 1.2 * (self.a - 1)

    def sets(self, N):
        return [f"code.workers={N}", f"adversaries.count={round(N ** self.a)}"]

    def lines(self, by_n):
        out = []
        for scheme in next(iter(by_n.values())).points[0].schemes:
            pts = [(N, np.nanmean(r.points[0].schemes[scheme]["nmse"])) for N, r in by_n.items()]
            pts = [(N, e) for N, e in pts if 10 * np.log10(e) > FLOOR_DB]
            if len(pts) < 3:
                out.append(Line(self.name, scheme, "too few points above the floor", False))
                continue
            N, nmse = np.array(pts, float).T
            x, y = np.log10(N), np.log10(nmse)
            slope, icept = np.polyfit(x, y, 1)
            rss = float(np.sum((y - slope * x - icept) ** 2))
            se = math.sqrt(rss / (len(x) - 2) / np.sum((x - x.mean()) ** 2))
            lo, hi = slope - Z95 * se, slope + Z95 * se
            counts = "/".join(str(round(n ** self.a)) for n in N.astype(int))
            fig = (f"slope {slope:+.2f} ± {se:.2f} [{lo:+.2f}, {hi:+.2f}] against the bound's "
                   f"{self.bound:+.2f} (N = {'/'.join(map(str, N.astype(int)))}, A = {counts}; "
                   f"{'/'.join(f'{10 * np.log10(e):.1f}' for e in nmse)} dB)")
            out.append(Line(self.name, scheme, fig, lo <= self.bound,
                            {"slope": slope, "stderr": se, "db": list(10 * np.log10(nmse))}))
        return out


CLAIMS = [
    # the small sweeps keep three points above the round-off floor (gcc-manifold reaches it at
    # N = 80 for S = 2, gcc at S = 2 of N = 160)
    Slope("rate-n", "rate-n", "code.workers", -3.0, [16, 24, 40]),
    Slope("rate-s", "rate-s", "stragglers.count", 3.0, [8, 16, 32]),
    BoundSlope("rate-probabilistic", "rate-probabilistic", 0.3,
               {"bacc": (3, 3), "letcc": (4, 2), "gcc": (3, 3), "gcc-manifold": (3, 3)},
               [20, 40, 80]),
    Beats("manifold-network", "manifold-network", "gcc-manifold", "gcc", [0, 10]),
    Beats("manifold-polynomial", "manifold-polynomial", "gcc-manifold", "gcc", [0, 10]),
    Beats("letcc-bacc", "letcc-bacc", "letcc", "bacc", [0, 10]),
    Relacc("approxifer", "approxifer", {8: 0.872, 10: 0.872, 12: 0.868}),
    Threshold("lcc-correction", "lcc-correction", 6, (1, 2, 3)),
    CountRate("adversarial-rate", "adversarial-rate", 0.5, [16, 36, 64, 144, 256, 576],
              [16, 36, 64]),
]


def run(claim, tmp, small=False, trials=None, decoder="beta"):
    """The claim's lines, its job run at full size or at the test's (``small``), gcc's and
    gcc-manifold's decoder set to ``decoder``."""
    if isinstance(claim, Relacc) and small:
        trials = claim.small_trials
    sets = [f"job.trials={trials}"] if trials else []
    sets += [f"code.{s}.decoder={decoder}" for s in ("gcc", "gcc-manifold")]
    if isinstance(claim, Threshold):
        # its full size is the test's too (--small keeps it: a count of refused trials needs
        # the rare trials with more than A liars), run in this process by the function the
        # simulate command calls (api.run_simulation): three interpreters would cost the test
        # 10 s where the trials cost 1
        extra = [f"job.trials={trials}"] if trials and not small else []
        return claim.lines({A: run_simulation(load_job(CLAIMS_DIR / f"{claim.job}.toml",
                                                       [*claim.sets(A), *extra]))
                            for A in claim.errors})
    if isinstance(claim, (Relacc, CountRate)):  # one run per K, or per N
        each = claim.published if isinstance(claim, Relacc) else \
            claim.small if small else claim.workers
        by_k = {K: simulate(claim.job, [*sets, *claim.sets(K)], tmp, f"{claim.name}-{K}")
                for K in each}
        lines = claim.lines(by_k)
    else:
        if small:
            key = claim.key if hasattr(claim, "key") else "stragglers.count"
            sets.append(f"sweep.{key}={claim.small}")
        lines = claim.lines(simulate(claim.job, sets, tmp, claim.name))
    for line in lines:
        line.decoder = decoder
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="+", help="claims by name (default: all)")
    ap.add_argument("--small", action="store_true", help="the test's size")
    ap.add_argument("--trials", type=int, help="trials per point instead of the job's")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--decoder", choices=["beta", "auto", "input"], default="beta",
                    help="gcc's and gcc-manifold's decoder (default: beta, as published)")
    args = ap.parse_args()
    trials = args.trials or (10 if args.small else None)
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for claim in CLAIMS:
            if args.only and claim.name not in args.only:
                continue
            for line in run(claim, tmp, args.small, trials, args.decoder):
                lines.append(line)
                if not args.json:
                    print(line.text(), flush=True)
    if args.json:
        print(json.dumps([{"claim": x.claim, "scheme": x.scheme, "decoder": x.decoder,
                           "figure": x.figure, "holds": bool(x.holds), "values": _plain(x.values)}
                          for x in lines]))


def _plain(v):
    """JSON-ready: dict keys as strings, numpy numbers as floats."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return None if v is None else float(v) if isinstance(v, (int, float, np.number)) else v


if __name__ == "__main__":
    main()
