"""Sweeps at scale: `--point I` runs, `merge`, and `analyze --plot`, end to end.
The full chain: a sweep job split into one run per point (as a job array would: three points in
the simulator, one over `mpiexec -n 5`), merged back into one file, gives the same
`analyze --json` rows as the un-split run of the job (same seeds, so the same nmse), and its
figures. Subprocesses have a timeout; nothing asserts on wall-clock time.
"""
import json
import struct
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest

from mpirun import MPI_NAME, needs_mpiexec, run

from gcc_mpi.cli.main import main
from gcc_mpi.reports.analyze import main_analyze
from gcc_mpi.job.parse import load_job, parse_job
from gcc_mpi.job.config import select_points
from gcc_mpi.errors import JobError
from gcc_mpi.files.merge import merge
from gcc_mpi.files.writer import ResultWriter
from gcc_mpi.files.reader import read_results

ROOT = Path(__file__).resolve().parents[1]

# 4 points: N varies across points (up to ranks - 1 = 4 under -n 5); delays of 0.2 s make the
# received sets unambiguous, so the MPI point gets the simulator's.
JOB = """
[job]
name = "tiny"
seed = 7
trials = 4
[data]
source = "sphere"
dim = 5
batch = 3
[target]
kind = "polynomial"
degree = 2
outputs = 3
[code]
schemes = ["uncoded", "bacc", "gcc"]
[stragglers]
model = "fixed"
delay = 0.2
[sweep]
"code.workers" = [3, 4]
"stragglers.count" = [0, 1]
"""
EXACT = ("point", "scheme", "trials", "trials_failed", "relacc")
CLOSE = ("mse", "nmse", "mse_db", "mse_db_ci95")




def json_rows(path, capsys):
    capsys.readouterr()
    assert main(["analyze", str(path), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def assert_same_rows(rows, reference, rtol):
    assert len(rows) == len(reference)
    for r, ref in zip(rows, reference):
        for k in EXACT:
            assert r[k] == ref[k], (k, r, ref)
        if ref["nmse"] < 1e-20:  # an exact scheme: 0 in one process, round-off over MPI
            assert r["nmse"] < 1e-20, (r, ref)
            continue
        for k in CLOSE:
            assert (r[k] is None) == (ref[k] is None), (k, r, ref)
            if ref[k] is not None:
                assert r[k] == pytest.approx(ref[k], rel=rtol, abs=1e-12), (k, r, ref)
        for k in ("latency_p50", "latency_p99", "overhead_p50"):  # timings: present, not equal
            assert r[k] is not None and r[k] >= 0


def png_size(path):
    """(width, height) of a PNG file, checking its signature."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", path
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def job_file(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text(JOB)
    return path


@needs_mpiexec
def test_point_runs_merge_back_into_the_whole_run(tmp_path, job_file, capsys):
    whole = tmp_path / "whole.h5"
    assert main(["simulate", str(job_file), "-o", str(whole), "-q"]) == 0
    # the job array: points 0, 1 and 3 in the simulator, point 2 over MPI
    parts = {i: tmp_path / f"tiny-p{i}.h5" for i in range(4)}
    for i in (0, 1, 3):
        assert main(["simulate", str(job_file), "--point", str(i), "-o", str(parts[i]), "-q"]) == 0
    code, _, err = run(["run", str(job_file), "--point", "2", "-o", str(parts[2]), "-q"],
                       tmp_path, 5)
    assert code == 0, err

    ref = read_results(whole)
    for i, path in parts.items():  # one group per file, with its global index and parameters
        r = read_results(path)
        assert r.config_toml == ref.config_toml and r.complete
        assert [p.index for p in r.points] == [i]
        assert r.points[0].params == ref.points[i].params
        with h5py.File(path, "r") as f:
            assert list(f) == [f"point_{i:03d}"]
    assert read_results(parts[2]).attrs["mpi"].startswith(MPI_NAME)

    merged = tmp_path / "all.h5"
    assert main(["merge", *map(str, [parts[3], parts[1], parts[2], parts[0]]),
                 "-o", str(merged)]) == 0
    assert "4 of 4 point(s), 12 (point, scheme) group(s); complete" in capsys.readouterr().err
    m = read_results(merged)
    assert m.attrs["format"] == "gcc_mpi/1" and m.complete
    assert m.config_toml == ref.config_toml
    assert m.attrs["command"].startswith("python -m gcc_mpi merge ")
    assert set(m.attrs["mpi"].split("; ")) == {"simulate", read_results(parts[2]).attrs["mpi"]}
    assert [(p.index, p.params, list(p.schemes)) for p in m.points] == \
           [(p.index, p.params, list(p.schemes)) for p in ref.points]
    for p, q in zip(m.points, ref.points):  # same trials, same delays, same received sets
        for name, d in p.schemes.items():
            for key in ("trial", "delay", "used", "failed"):
                assert np.array_equal(d[key], q.schemes[name][key]), (p.index, name, key)
            if p.index != 2:  # simulated: bit for bit; the MPI point: to round-off
                assert np.array_equal(d["nmse"], q.schemes[name]["nmse"])
            else:
                np.testing.assert_allclose(d["nmse"], q.schemes[name]["nmse"], rtol=1e-9,
                                           atol=1e-25)

    assert_same_rows(json_rows(merged, capsys), json_rows(whole, capsys), rtol=1e-9)

    figures = tmp_path / "figures"
    assert main_analyze(str(merged), json=True, plot=str(figures)) == 0
    names = sorted(p.name for p in figures.glob("*.png"))
    assert names == [f"tiny-{k}.png" for k in ("latency-cdf", "mse-vs-N", "mse-vs-S",
                                               "nmse-distribution", "tradeoff")]
    assert sorted(p.name for p in figures.glob("*.svg")) == [n[:-3] + "svg" for n in names]
    for name in names:
        assert png_size(figures / name) == (750, 400)  # legend right of the axes
        svg = (figures / name).with_suffix(".svg").read_text()  # 7.5 x 4 in, 72 pt per inch
        assert svg.startswith("<?xml") and 'width="540pt" height="288pt"' in svg


@needs_mpiexec
def test_a_point_out_of_range_is_one_line_and_exit_2(tmp_path, job_file, capsys):
    assert main(["simulate", str(job_file), "--point", "4", "-o", str(tmp_path / "x.h5")]) == 2
    err = capsys.readouterr().err
    assert err == ("gcc_mpi: error: --point: must be a sweep point index in 0..3 (the job has 4 "
                   "sweep points), got 4\n")
    assert main(["simulate", str(job_file), "--point", "-1"]) == 2
    assert "got -1" in capsys.readouterr().err
    assert not (tmp_path / "x.h5").exists()
    code, _, err = run(["run", str(job_file), "--point", "9", "-o", "x.h5", "-q"], tmp_path, 5)
    assert code == 2 and not (tmp_path / "x.h5").exists()
    assert err.strip().splitlines() == [
        "gcc_mpi: error: --point: must be a sweep point index in 0..3 (the job has 4 sweep "
        "points), got 9"]


def test_select_points_and_the_default_name_of_a_point_file(tmp_path, job_file, monkeypatch):
    job = load_job(job_file)
    assert select_points(job) == job.points
    assert [p.index for p in select_points(job, 3)] == [3]
    one = parse_job('[job]\nname = "one"\n')
    with pytest.raises(JobError, match=r"in 0 \(the job has 1 sweep point\), got 1"):
        select_points(one, 1)
    monkeypatch.chdir(tmp_path)
    assert main(["simulate", str(job_file), "--point", "1", "-q", "--set", "job.trials=1"]) == 0
    (made,) = (tmp_path / "results").iterdir()
    assert made.name.startswith("tiny-p1-") and made.suffix == ".h5"
    assert [p.index for p in read_results(made).points] == [1]


# -- merge: everything is checked before the output exists ------------------------------------
def write(path, config, points, complete=True, value=0.5, mpi="simulate", lost=(), hung=(),
          hosts=None):
    """A small results file: {index: params} with one scheme "gcc" of 2 trials; ``lost``:
    (rank, point, trial) of ranks that died; ``hung``: (rank, point, trial, host) of ranks that
    stopped answering; ``hosts``: the host of each rank."""
    w = ResultWriter(path, config_toml=config, command="test", mpi=mpi)
    for rank, point, trial in lost:
        w.add_lost(rank, point, trial)
    for rank, point, trial, host in hung:
        w.add_hung(rank, point, trial, host)
    if hosts is not None:
        w.set_hosts(hosts)
    rows = {"trial": np.arange(2), "failed": np.zeros(2, bool), "reason": ["", ""],
            "used": np.ones((2, 3), bool), "delay": np.zeros((2, 3)),
            "arrival": np.full((2, 3), 0.01), "relacc": np.full(2, np.nan)}
    rows.update({k: np.full(2, value) for k in ("mse", "nmse")})
    rows.update({k: np.full(2, 0.01) for k in ("t_encode", "t_scatter", "t_wait", "t_decode",
                                                "latency")})
    for index, params in points.items():
        w.add_point(index, params)
        w.append(index, "gcc", rows)
    w.close(complete=complete)
    return path


CONFIG = '[job]\nname = "m"\ntrials = 2\n\n[code]\nschemes = ["gcc"]\n\n[sweep]\n' \
         '"stragglers.count" = [0, 1, 2]\n'


def test_merge_checks_its_inputs(tmp_path):
    a = write(tmp_path / "a.h5", CONFIG, {0: {"stragglers.count": 0}})
    b = write(tmp_path / "b.h5", CONFIG, {1: {"stragglers.count": 1}})
    out = tmp_path / "out.h5"

    other = write(tmp_path / "other.h5", CONFIG.replace('"m"', '"n"'), {2: {"stragglers.count": 2}})
    with pytest.raises(JobError, match=r"other\.h5 was written for a different job than .*a\.h5 "
                                       r"\(line 2: 'name = \"n\"' against 'name = \"m\"'\)"):
        merge([a, other], out)
    clash = write(tmp_path / "clash.h5", CONFIG, {0: {"stragglers.count": 0}}, value=0.25)
    with pytest.raises(JobError, match=r"point 0 \{'stragglers.count': 0\}, scheme 'gcc' is in "
                                       r"both .*a\.h5 and .*clash\.h5 with different data"):
        merge([a, b, clash], out)
    wrong = write(tmp_path / "wrong.h5", CONFIG, {1: {"stragglers.count": 2}})
    with pytest.raises(JobError, match=r"point_001 has parameters \{'stragglers.count': 2\}, "
                                       r"but point 1 of its job has \{'stragglers.count': 1\}"):
        merge([a, wrong], out)
    outside = write(tmp_path / "outside.h5", CONFIG, {5: {"stragglers.count": 9}})
    with pytest.raises(JobError, match=r"point_005 \(index 5\) is not a point of its job"):
        merge([outside], out)
    (tmp_path / "text.h5").write_text("not hdf5")
    with pytest.raises(JobError, match="not a readable HDF5 file"):
        merge([a, tmp_path / "text.h5"], out)
    with pytest.raises(JobError, match="no such file"):
        merge([a, tmp_path / "missing.h5"], out)
    with pytest.raises(JobError, match="is also an input"):
        merge([a, b], a)
    assert not out.exists()  # nothing was written by any of these

    # the same data twice (the same file given twice) is fine; a missing point: incomplete
    assert "2 of 3 point(s)" in merge([a, b, a], out)
    r = read_results(out)
    assert [p.index for p in r.points] == [0, 1] and not r.complete
    with pytest.raises(JobError, match="exists; use --overwrite"):
        merge([a, b], out)
    c = write(tmp_path / "c.h5", CONFIG, {2: {"stragglers.count": 2}}, complete=False,
              mpi="MPICH x")
    assert "incomplete: an input is incomplete" in merge([a, b, c], out, overwrite=True)
    r = read_results(out)
    assert not r.complete and r.attrs["mpi"] == "simulate; MPICH x"
    c = write(tmp_path / "c2.h5", CONFIG, {2: {"stragglers.count": 2}}, mpi="MPICH x")
    assert merge([c, b, a], out, overwrite=True).endswith("; complete")
    r = read_results(out)
    assert r.complete and [p.index for p in r.points] == [0, 1, 2]
    assert r.points[1].schemes["gcc"]["reason"].tolist() == ["", ""]
    assert r.points[2].schemes["gcc"]["used"].shape == (2, 3)



def test_merge_keeps_every_input_s_lost_ranks(tmp_path):
    a = write(tmp_path / "a.h5", CONFIG, {0: {"stragglers.count": 0}}, lost=[(5, 0, 1)])
    b = write(tmp_path / "b.h5", CONFIG, {1: {"stragglers.count": 1}}, lost=[(3, 1, 0), (7, 1, 1)])
    c = write(tmp_path / "c.h5", CONFIG, {2: {"stragglers.count": 2}})
    merge([b, c, a, a], tmp_path / "out.h5")
    with h5py.File(tmp_path / "out.h5", "r") as f:
        lost = json.loads(f.attrs["lost"])
    assert lost == [{"rank": 5, "worker": 4, "point": 0, "trial": 1},
                    {"rank": 3, "worker": 2, "point": 1, "trial": 0},
                    {"rank": 7, "worker": 6, "point": 1, "trial": 1}]
    merge([c], tmp_path / "none.h5")
    with h5py.File(tmp_path / "none.h5", "r") as f:
        assert "lost" not in f.attrs and "hung" not in f.attrs and "hosts" not in f.attrs


def test_merge_keeps_the_hung_ranks_and_the_hosts_of_every_input(tmp_path):
    """Point files of an array may have run on different nodes: rank r's host in the merged
    file joins the inputs' distinct hosts of rank r with "; " (as ``mpi`` does)."""
    a = write(tmp_path / "a.h5", CONFIG, {0: {"stragglers.count": 0}}, hung=[(2, 0, 1, "n1")],
              hosts=["n1", "n1", "n1"])
    b = write(tmp_path / "b.h5", CONFIG, {1: {"stragglers.count": 1}}, hung=[(1, 1, 0, "n7")],
              hosts=["n1", "n7", "n1"])
    merge([a, b, a], tmp_path / "out.h5")
    with h5py.File(tmp_path / "out.h5", "r") as f:
        hung, hosts = json.loads(f.attrs["hung"]), json.loads(f.attrs["hosts"])
    assert hung == [{"rank": 2, "worker": 1, "point": 0, "trial": 1, "host": "n1"},
                    {"rank": 1, "worker": 0, "point": 1, "trial": 0, "host": "n7"}]
    assert hosts == ["n1", "n1; n7", "n1"]

def test_merge_on_the_command_line(tmp_path, capsys):
    a = write(tmp_path / "a.h5", CONFIG, {0: {"stragglers.count": 0}})
    out = tmp_path / "out.h5"
    assert main(["merge", str(a), "-o", str(out)]) == 0
    assert main(["merge", str(a), "-o", str(out)]) == 2
    assert "exists; use --overwrite" in capsys.readouterr().err
    assert main(["merge", str(a), "-o", str(out), "--overwrite"]) == 0
    assert main(["merge", "-o", str(out)]) == 2  # no inputs: argparse's message, one line
    assert "the following arguments are required: IN.h5" in capsys.readouterr().err


# -- plots ------------------------------------------------------------------------------------
def test_plot_without_matplotlib_says_which_extra(tmp_path, monkeypatch, capsys):
    path = write(tmp_path / "a.h5", CONFIG, {0: {"stragglers.count": 0}})
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(JobError, match=r'--plot: needs the optional extra: pip install '
                                       r'"gcc_mpi\[plot\]"'):
        main_analyze(str(path), plot=str(tmp_path / "figs"))
    assert main(["analyze", str(path), "--plot", str(tmp_path / "figs")]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1  # nothing printed before the one-line error


def test_plots_of_a_classifier_sweep(tmp_path):
    job = tmp_path / "c.toml"
    job.write_text('[job]\nname = "cls"\ntrials = 3\n[data]\nbatch = 4\n[code]\nworkers = 8\n'
                   'schemes = ["uncoded", "bacc", "gcc"]\n[sweep]\n"stragglers.count" = [0, 2]\n')
    out = tmp_path / "c.h5"
    assert main(["simulate", str(job), "-o", str(out), "-q"]) == 0
    from gcc_mpi.reports.statistics import summarize
    from gcc_mpi.reports.plots import plot_all

    res = read_results(out)
    written = plot_all(res, tmp_path / "figs", summarize(res), formats=("png",))
    kinds = ["mse-vs-S", "relacc-vs-S", "tradeoff", "latency-cdf", "nmse-distribution"]
    assert [Path(p).name for p in written] == [f"cls-{k}.png" for k in kinds]
    for p in written:
        assert png_size(p) == (750, 400)


# -- shipped jobs and README figures ---------------------------------------------------------
JOBS = sorted((ROOT / "jobs").glob("*.toml"))


@pytest.mark.parametrize("path", JOBS, ids=[p.stem for p in JOBS])
def test_every_shipped_job_is_valid_and_says_what_it_shows(path):
    text = path.read_text()
    job = load_job(path)
    assert job.config.job.name == path.stem  # slurm/ names files by the job file
    comment = [line for line in text.splitlines() if line.startswith("#")]
    assert text.startswith("#") and len(comment) >= 3
    assert "Measured" in text or "measured" in text.lower()


def test_docs_figures_exist_and_are_small():
    science = (ROOT / "docs" / "science.md").read_text()
    figures = sorted((ROOT / "docs" / "figures").glob("*.png"))
    assert figures
    for path in figures:
        assert f"](figures/{path.name})" in science, path.name
        assert path.stat().st_size < 100_000, path.name
        png_size(path)


def test_rates_leave_out_key_values_without_a_logarithm():
    from gcc_mpi.reports.analyze import fit_rates

    rows = [{"point": {"stragglers.count": s}, "scheme": "gcc",
             "nmse": 1e-3 * s ** 2 if s else 1e-4} for s in (0, 1, 2, 4)]
    (slope, used), = fit_rates(rows, "stragglers.count").values()
    assert used == 3 and slope == pytest.approx(2.0)
