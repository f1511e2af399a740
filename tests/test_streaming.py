"""What reads a results file does it a block of trials at a time: the same figures as reading
it whole, in memory that does not grow with the file (analyze, merge, plots, plan)."""

import tracemalloc

import numpy as np
import pytest

import gcc_mpi.reports.quantiles as quantiles
import gcc_mpi.files.reader as reader
import gcc_mpi.files.writer as writer
from gcc_mpi.reports.statistics import SchemeStats, binomial_ppf, summarize, summarize_scheme
from gcc_mpi.files.merge import merge
from gcc_mpi.files.reader import ResultsFile
from gcc_mpi.files.writer import ResultWriter

CONFIG = '[job]\nname = "s"\ntrials = 20000\n[code]\nworkers = 40\nschemes = ["bacc"]\n'


def scheme_rows(t0, n, N=40, seed=0):
    """Rows with failed trials, NaN latencies, erasures and a lost worker, as a run makes."""
    rng = np.random.default_rng(seed + t0)
    t = np.arange(t0, t0 + n)
    used = rng.random((n, N)) < 0.7
    error = np.where(rng.random((n, N)) < 0.01, rng.integers(1, 4, (n, N)), 0).astype(np.int8)
    error[:, 3] = np.where(t >= 500, 4, 0)  # worker 3's rank died at trial 500
    latency = rng.exponential(1e-3, n)
    latency[rng.random(n) < 0.05] = np.nan
    return {"trial": t, "failed": rng.random(n) < 0.02, "nmse": rng.exponential(1e-3, n),
            "mse": rng.exponential(1e-4, n), "relacc": rng.random(n), "latency": latency,
            "t_scatter": rng.random(n) * 1e-4, "t_wait": rng.random(n) * 1e-2,
            "t_decode": rng.random(n) * 1e-3, "arrival": rng.random((n, N)) * 1e-2,
            "used": used, "error": error, "delay": rng.random((n, N)),
            "lengthscale_dec": rng.choice([0.1, 0.2, 0.4], n)}


def write(path, trials, block=1000):
    with ResultWriter(path, config_toml=CONFIG, command="t", mpi="simulate") as w:
        w.add_point(0, {})
        for t in range(0, trials, block):
            w.append(0, "bacc", scheme_rows(t, min(block, trials - t)))
            w.flush()


def close(a, b):
    """Rows equal but for the rounding of sums taken in another order."""
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], float):
            assert a[k] == pytest.approx(b[k], rel=1e-12, abs=1e-300), k
        else:
            assert a[k] == b[k], k


def test_blocks_give_the_figures_of_the_whole(monkeypatch):
    d = scheme_rows(0, 5000)
    whole = summarize_scheme(d)
    stats = SchemeStats()
    for start in range(0, 5000, 333):
        stats.add({k: v[start:start + 333] for k, v in d.items()})
    close(stats.row(), whole)
    assert whole["trials"] == 5000 and whole["workers_lost"] == 1
    assert whole["latency_p99"] == np.percentile(d["latency"][~d["failed"] & np.isfinite(
        d["latency"])], 99)  # a single block is numpy's figure, bit for bit
    ok = ~d["failed"]
    lat = d["latency"][ok & np.isfinite(d["latency"])]
    by_numpy = {  # the intervals as numpy computes them from the whole arrays
        "relacc_ci95": 1.96 * np.std(d["relacc"][ok], ddof=1) / np.sqrt(ok.sum()),
        "latency_mean": np.mean(lat), "latency_mean_ci95": 1.96 * np.std(lat, ddof=1)
        / np.sqrt(lat.size),
        "mse_db_ci95": 1.96 * 10 / np.log(10) * np.std(d["nmse"][ok], ddof=1)
        / np.sqrt(ok.sum()) / np.mean(d["nmse"][ok]),
        "latency_p99_lo": np.sort(lat)[binomial_ppf(0.025, lat.size, 0.99) - 1],
        "latency_p99_hi": np.sort(lat)[binomial_ppf(0.975, lat.size, 0.99)]}
    for k, v in by_numpy.items():
        assert whole[k] == pytest.approx(v, rel=1e-12), k
    # columns too long for memory go to a file: the percentiles stay exact
    monkeypatch.setattr(quantiles, "MEMORY_VALUES", 1000)
    monkeypatch.setattr(quantiles, "SORT_VALUES", 100)
    spilled = SchemeStats()
    for start in range(0, 5000, 333):
        spilled.add({k: v[start:start + 333] for k, v in d.items()})
    assert spilled.columns["latency"].in_memory() is None
    close(spilled.row(), whole)


def test_exact_percentiles_of_a_column_on_disk(monkeypatch):
    monkeypatch.setattr(quantiles, "MEMORY_VALUES", 500)
    monkeypatch.setattr(quantiles, "SORT_VALUES", 50)
    monkeypatch.setattr(quantiles, "BLOCK_VALUES", 2000)
    rng = np.random.default_rng(3)
    for values in (rng.normal(size=20001), np.r_[np.full(3000, 0.25), -rng.random(900)],
                   rng.exponential(1e-3, 7777)):
        column = quantiles.Column()
        for start in range(0, len(values), 999):
            column.add(values[start:start + 999])
        assert column.in_memory() is None and len(column) == len(values)
        qs = [0, 1, 37.5, 50, 99, 100]
        assert quantiles.percentiles(column, qs) == pytest.approx(
            np.percentile(values, qs), rel=1e-15, abs=0)
        v, frac = column.outline(50)
        assert np.array_equal(v, np.sort(values)[(np.round(frac * len(values)) - 1).astype(int)])
        column.close()


def test_analyze_and_merge_hold_a_block_not_the_file(tmp_path, monkeypatch):
    """A file of 20000 trials (15 MB of arrays): analyze and merge read it in blocks of
    READ_BYTES, and the merge's writer holds PENDING_BYTES of rows (1 MB each here), so Python
    holds a few MB at most (measured 2-4 MB); reading one (point, scheme) whole takes 15 MB."""
    path = tmp_path / "big.h5"
    write(path, 20000)
    monkeypatch.setattr(reader, "READ_BYTES", 1 << 20)
    monkeypatch.setattr(writer, "PENDING_BYTES", 1 << 20)
    with ResultsFile(path) as f:
        whole = summarize_scheme(f.read(0, "bacc"))

    def peak(fn):
        tracemalloc.start()
        try:
            out = fn()
            return out, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    (row,), held = peak(lambda: summarize(path))
    close({k: v for k, v in row.items() if k not in ("point", "scheme")}, whole)
    assert held < 6 << 20, held
    _, held = peak(lambda: merge([path], tmp_path / "m.h5"))
    assert held < 6 << 20, held
    _, held = peak(lambda: ResultsFile(path).read(0, "bacc"))
    assert held > 14 << 20  # the bound above would catch a whole read
    with ResultsFile(path) as a, ResultsFile(tmp_path / "m.h5") as b:
        for x, y in zip(a.blocks(0, "bacc"), b.blocks(0, "bacc")):
            assert all(np.array_equal(x[k], y[k], equal_nan=x[k].dtype.kind == "f") for k in x)
        assert a.trials(0, "bacc") == b.trials(0, "bacc") == 20000
