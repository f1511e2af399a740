"""Several results files compared (`analyze A.h5 B.h5 ...`) against hand-computed values, and
the HTML report opened in a real headless browser: Debian's chromium and chromium-driver
(`chromium` and `chromedriver` on PATH), which pip does not bring. Those tests are the
``browser`` tier (tests/tiers.py): without the two programs they skip, saying how to run them
(apt-get install chromium chromium-driver, then GCC_MPI_TEST_BROWSER=required); under
GCC_MPI_TEST_BROWSER=required, which .ci/run sets after installing them, they fail instead.
"""

import json
import math
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from jobfiles import small_job
from tiers import unavailable

from gcc_mpi.cli.main import main
from gcc_mpi.reports.statistics import binomial_ppf, quantile_ci95
from gcc_mpi.reports.comparison import differences, labels_for
from gcc_mpi.files.writer import ResultWriter

CONFIG = '[job]\nname = "{name}"\n[stragglers]\ncount = {count}\n'


def write(path, name, count, points, nmse, latency=0.01):
    """A results file of job ``name`` (stragglers.count = ``count`` unless swept in
    ``points``: {index: params}) whose scheme "bacc" has the per-trial ``nmse`` at every
    point, and "gcc" a tenth of it."""
    n = len(nmse)
    with ResultWriter(path, config_toml=CONFIG.format(name=name, count=count), command="test",
                      mpi="simulate") as w:
        for index, params in points.items():
            w.add_point(index, params)
            for scheme, scale in (("bacc", 1.0), ("gcc", 0.1)):
                w.append(index, scheme, {
                    "trial": np.arange(n), "failed": np.zeros(n, bool), "reason": [""] * n,
                    "nmse": scale * np.asarray(nmse), "mse": scale * np.asarray(nmse),
                    "latency": np.full(n, latency) + 0.001 * np.arange(n)})
    return path


def test_two_files_one_table_and_the_differences_by_hand(tmp_path, capsys):
    """A sweeps S = 2, 5; B runs S = 5 only (not swept): B's point matches A's S = 5 by its
    job's value. B's bacc is 10x worse (+10 dB), far outside the intervals; its gcc equal."""
    nmse = [0.01, 0.02, 0.03, 0.04]
    a = write(tmp_path / "runs" / "a.h5", "job", 0, {0: {"stragglers.count": 2},
                                                     1: {"stragglers.count": 5}}, nmse)
    b = write(tmp_path / "other" / "a.h5", "job", 5, {0: {}}, nmse)
    with ResultWriter(tmp_path / "b2.h5", config_toml=CONFIG.format(name="job", count=5),
                      command="test", mpi="MPICH") as w:
        w.add_point(0, {})
        for scheme, scale in (("bacc", 10.0), ("gcc", 0.1)):
            w.append(0, scheme, {"trial": np.arange(4), "failed": np.zeros(4, bool),
                                 "reason": [""] * 4, "nmse": scale * np.array(nmse),
                                 "mse": scale * np.array(nmse), "latency": np.full(4, 0.02)})
    assert labels_for([a, b]) == ["runs/a", "other/a"]  # same name: a folder tells them apart
    assert main(["analyze", str(a), str(tmp_path / "b2.h5"), "--label", "A", "--label", "B"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"# A = {a}: gcc_mpi") and out[1].startswith("# B = ")
    assert out[2].split()[:3] == ["file", "stragglers.count", "scheme"]
    assert [line.split()[:3] for line in out[4:10]] == [
        ["A", "2", "bacc"], ["A", "2", "gcc"], ["A", "5", "bacc"], ["A", "5", "gcc"],
        ["B", "5", "bacc"], ["B", "5", "gcc"]]
    diffs = out[out.index("") + 1:]
    assert diffs[0].startswith("# differences against A (the first file)")
    bacc, gcc = diffs[3], diffs[4]
    # delta method: ci = 1.96 * 10/ln10 * (std/sqrt n)/mean, the same for both files (x10)
    ci = 1.96 * 10 / math.log(10) * np.std(nmse, ddof=1) / 2 / np.mean(nmse)
    assert bacc.split()[:3] == ["B", "5", "bacc"]
    assert f"+10.00 ± {math.hypot(ci, ci):.2f} *" in bacc
    assert "+0.00 ± " in gcc and "+0.00 ± " in gcc and " *" not in gcc.split("±")[1][:8]
    # latency: B is 20 ms flat, A 10.0-13.0 ms: +8.5 ms, interval from A's spread alone
    half = 1.96 * np.std(0.01 + 0.001 * np.arange(4), ddof=1) / 2
    assert f"+8.500 ± {1e3 * half:.3f} *" in bacc

    assert main(["analyze", str(a), str(tmp_path / "b2.h5"), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [f["file"] for f in doc["files"]] == ["a", "b2"] and len(doc["rows"]) == 6
    d = {(x["scheme"]): x for x in doc["differences"]}
    assert d["bacc"]["mse_db"] == pytest.approx(10.0) and d["bacc"]["mse_db_differs"] is True
    assert d["gcc"]["mse_db"] == pytest.approx(0.0) and d["gcc"]["mse_db_differs"] is False
    assert d["bacc"]["point"] == {"stragglers.count": 5}
    assert main(["analyze", str(a), str(tmp_path / "b2.h5"), "--csv",
                 str(tmp_path / "t.csv")]) == 0
    assert (tmp_path / "t.csv").read_text().splitlines()[0].startswith(
        "file,stragglers.count,scheme,trials")


def test_comparison_mistakes_are_one_line(tmp_path, capsys):
    a = write(tmp_path / "a.h5", "job", 0, {0: {}}, [0.1, 0.2])
    cases = {("--label", "x"): "--label: give one label per file: 2 file(s), 1 label(s)",
             ("--label", "x", "--label", "x"): "--label: labels must differ"}
    for extra, message in cases.items():
        assert main(["analyze", str(a), str(a), *extra]) == 2
        assert capsys.readouterr().err == f"gcc_mpi: error: {message}" + (
            ", got x, x\n" if "differ" in message else "\n")
    assert main(["analyze", str(a), str(tmp_path / "nope.h5")]) == 2
    assert "nope.h5: no such file" in capsys.readouterr().err
    assert main(["analyze", str(a), "--html", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("gcc_mpi: error: --html: ")


def test_differences_without_intervals_and_unmatched_points():
    rows = [{"file": "A", "point": {"S": 1}, "scheme": "bacc", "mse_db": -20.0,
             "mse_db_ci95": None, "relacc": None, "latency_mean": 0.001,
             "latency_mean_ci95": 1e-4},
            {"file": "B", "point": {"S": 1}, "scheme": "bacc", "mse_db": -21.0,
             "mse_db_ci95": 0.5, "relacc": None, "latency_mean": 0.0012,
             "latency_mean_ci95": 1e-4},
            {"file": "B", "point": {"S": 2}, "scheme": "bacc", "mse_db": -9.0}]
    (d,) = differences(rows)  # B's S = 2 has no match in A
    assert d["mse_db"] == -1.0 and d["mse_db_ci95"] is None and d["mse_db_differs"] is None
    assert d["relacc"] is None
    assert d["latency_mean"] == pytest.approx(2e-4)
    assert d["latency_mean_ci95"] == pytest.approx(math.hypot(1e-4, 1e-4))
    assert d["latency_mean_differs"] is True


def test_the_p99_interval_covers_the_true_p99():
    """Distribution-free: over 400 samples of 500 exponential latencies each, the interval
    holds the true p99 (ln 100) in at least 95 % of them (measured: 96.5 %)."""
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(400):
        lo, hi = quantile_ci95(rng.exponential(size=500), 0.99)
        hits += lo <= math.log(100) <= hi
    assert hits / 400 >= 0.94
    assert binomial_ppf(0.025, 2, 0.99) == 2  # two trials: the larger is a 98 % lower bound
    assert quantile_ci95(np.array([1.0, 2.0]), 0.99) == (2.0, None)


# -- the HTML report in a real browser ----------------------------------------------------------
PROGRAMS = ("chromium", "chromedriver")  # Debian's chromium and chromium-driver
JOB = small_job("report", ["uncoded", "bacc", "gcc"], 12,
                '[stragglers]\ndelay = 0.01\n[sweep]\n"stragglers.count" = [0, 2]\n')
browser_tier = pytest.mark.browser


@pytest.fixture(scope="module")
def chromium():
    """The paths of chromium and chromedriver on PATH; the tier skips (fails under
    GCC_MPI_TEST_BROWSER=required) without them."""
    found = {name: shutil.which(name) for name in PROGRAMS}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        unavailable("browser", f"no {' or '.join(missing)} on PATH")
    return found["chromium"], found["chromedriver"]


def browser(programs):
    """Headless Chromium through chromedriver (``programs``: their paths), as the env notes
    launch it (root, a closed network: no sandbox, no background networking, a new profile)."""
    binary, driver_path = programs
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    profile = tempfile.mkdtemp(prefix="gcc_mpi-chromium-")
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1200,900",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(60)
    return driver, profile


@browser_tier
def test_the_html_report_renders_in_a_browser_with_every_figure(tmp_path, chromium):
    (tmp_path / "report.toml").write_text(JOB)
    for name, sets in (("sim", []), ("late", ["--set", "stragglers.delay=0.02"])):
        assert main(["simulate", str(tmp_path / "report.toml"), "-o", str(tmp_path / f"{name}.h5"),
                     "-q", *sets]) == 0
    page = tmp_path / "out" / "report.html"
    assert main(["analyze", str(tmp_path / "sim.h5"), str(tmp_path / "late.h5"),
                 "--html", str(page)]) == 0
    text = page.read_text()
    # self-contained: nothing to fetch (every src is a data URI, no stylesheet or script links)
    assert "<script" not in text and "<link" not in text and "url(" not in text
    sources = [s.split('"')[1] for s in text.split("src=")[1:]]
    assert sources and all(s.startswith("data:image/svg+xml;base64,") for s in sources)
    driver, profile = browser(chromium)
    try:
        driver.get(page.resolve().as_uri())
        assert driver.title == "gcc_mpi report: sim vs late"
        images = driver.execute_script(
            "return [...document.images].map(i => [i.complete, i.naturalWidth, i.naturalHeight,"
            " i.alt])")
        # every figure of the files: NMSE and relacc against S, trade-off, latency, nmse
        assert [alt for *_, alt in images] == ["mse-vs-S", "tradeoff", "latency-cdf",
                                               "nmse-distribution"]
        for complete, width, height, alt in images:
            assert complete and (width, height) == (720, 384), (alt, width, height)  # 7.5 x 4 in
        sections = driver.execute_script(
            "return [...document.querySelectorAll('section')].map(s => [s.id, "
            "s.querySelectorAll('tr').length])")
        assert sections == [["files", 3], ["summary", 13], ["differences", 7],
                            ["figures", 0], ["jobs", 0]]
        fetched = driver.execute_script(
            "return performance.getEntriesByType('resource').map(e => e.name)")
        assert fetched == []
        errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []
        shot = tmp_path / "report.png"
        driver.save_screenshot(str(shot))
        assert shot.stat().st_size > 10_000  # something was drawn
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


@browser_tier
def test_a_broken_figure_is_caught_by_the_browser_check(tmp_path, chromium):
    """The check above can fail: an image whose data is not an SVG loads with no size."""
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><title>t</title><img src="data:image/svg+xml;base64,'
                    'bm90IGFuIHN2Zw==" alt="x">')
    driver, profile = browser(chromium)
    try:
        driver.get(page.resolve().as_uri())
        assert driver.execute_script("return document.images[0].naturalWidth") == 0
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def test_svg_figures_are_the_same_bytes_each_time(tmp_path):
    import gcc_mpi

    path = write(tmp_path / "a.h5", "job", 0, {0: {}}, [0.1, 0.2, 0.3])
    one = gcc_mpi.plot(path, tmp_path / "one", formats=["svg"])
    two = gcc_mpi.plot(path, tmp_path / "two", formats=["svg"])
    assert [Path(p).name for p in one] == ["job-tradeoff.svg", "job-latency-cdf.svg",
                                           "job-nmse-distribution.svg"]
    for a, b in zip(one, two):
        assert Path(a).read_bytes() == Path(b).read_bytes(), a
