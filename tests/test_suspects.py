"""The liar named (reports/suspects.py): a worker that lies in every trial is flagged by the
robust decoders and ``analyze`` names it — by worker in a simulated file, by rank and host in
an MPI run's — and so do the end lines of ``simulate`` and ``run`` and the HTML report. Over
MPI at 24 ranks (issue 36) the run's nmse is also ``simulate``'s."""

import json
import re

import numpy as np

from jobfiles import FAULTY
from mpirun import needs_mpiexec, ranks_of
from mpirun import run as launch
from test_runtime import assert_same_as_simulate

from gcc_mpi.files.reader import read_results
from gcc_mpi.reports import html
from gcc_mpi.reports.analyze import Analysis


def liars_of(path):
    lied = read_results(path).points[0].schemes["bacc"]["adversary"]
    assert np.all(lied == lied[0])  # fixed: the same workers every trial
    return np.flatnonzero(lied[0]).tolist()


def named(text):
    return [(m.group(1), int(m.group(2)), m.group(3), int(m.group(4)))
            for m in re.finditer(r"suspected: (?:rank (\d+) \()?worker (\d+)(?:, host ([^)]+)\))?"
                                 r", flagged in (\d+)% of the \d+ decodes", text)]


def report(path):
    """The HTML report of ``path`` (analyze --html's page), its figures left out: they cost
    seconds and say nothing of the suspects."""
    with np.errstate(invalid="ignore"):  # a flipped exponent's nmse is inf: its dB interval
        return html.build(Analysis(path), made=("job", []))


def test_analyze_names_the_workers_that_lie_in_every_trial(tmp_path):
    (tmp_path / "job.toml").write_text(FAULTY)
    code, _, ended = launch(["simulate", "job.toml", "-o", "sim.h5", "-q"], tmp_path)
    assert code == 0, ended
    code, out, err = launch(["analyze", "sim.h5"], tmp_path)
    assert code == 0, err
    found = named(out)
    assert sorted(w for _, w, _, _ in found) == liars_of(tmp_path / "sim.h5")
    assert all(rank is None and share >= 95 for rank, _, _, share in found)
    assert named(ended) == found  # simulate's end lines say what analyze says
    page = report(tmp_path / "sim.h5")
    assert '<section id="suspects"><h2>Suspected workers</h2>' in page
    assert named(page) == found
    # without a robust decoder nothing is flagged and nobody is named
    code, _, ended = launch(["simulate", "job.toml", "-o", "plain.h5", "-q", "--set",
                             "code.bacc.robust=false", "--set", "code.gcc.robust=false"],
                            tmp_path)
    assert code == 0 and "suspected" not in ended, ended
    code, out, _ = launch(["analyze", "plain.h5"], tmp_path)
    assert code == 0 and "suspected" not in out
    assert 'id="suspects"' not in report(tmp_path / "plain.h5")


@needs_mpiexec
def test_a_bit_flipping_rank_is_named_with_its_host_and_the_nmse_is_simulates(tmp_path):
    (tmp_path / "job.toml").write_text(FAULTY)
    code, _, ended = launch(["run", "job.toml", "-o", "run.h5", "-q"], tmp_path, ranks=24)
    assert code == 0, ended
    code, out, err = launch(["analyze", "run.h5"], tmp_path)
    assert code == 0, err
    run = read_results(tmp_path / "run.h5")
    hosts = json.loads(run.attrs["hosts"])
    started = ranks_of(ended)  # {rank: (pid, host)} of rank 0's start-up line
    found = named(out)
    assert sorted(w for _, w, _, _ in found) == liars_of(tmp_path / "run.h5")
    for rank, w, host, share in found:
        assert int(rank) == w + 1 and host == hosts[w + 1] == started[w + 1][1]
        assert share >= 95
    assert named(ended) == found  # rank 0's end lines name them as analyze does
    # the same job simulated: the same liars, flags, used sets and nmse
    code, _, err = launch(["simulate", "job.toml", "-o", "sim.h5", "-q"], tmp_path)
    assert code == 0, err
    sim = read_results(tmp_path / "sim.h5")
    assert_same_as_simulate(run, sim)
    for name, d in run.points[0].schemes.items():
        for key in ("adversary", "flagged"):
            assert np.array_equal(d[key], sim.points[0].schemes[name][key]), (name, key)
