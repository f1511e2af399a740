"""One behaviour in both engines: a job that meets an error mid-run - a plug-in scheme whose encode
raises or gives unusable coded inputs, a target f that raises (or calls sys.exit) on rank 0's
reference inputs or on a worker's coded input - gives the same records in ``simulate`` and under
mpiexec: that scheme's trials failed with the reason, the erasures with their texts, every other
scheme's rows complete, exit 0. The records are compared field by field (the clock's aside).
And a job refused before its first trial gets the same one line from validate, simulate and run.
"""

import numpy as np
import pytest

from jobfiles import small_job
from mpirun import needs_mpiexec
from mpirun import run as launch
from same_records import assert_same

from gcc_mpi.codes import make_code
from gcc_mpi.core.trial import timed_encode
from gcc_mpi.files.reader import read_results
from gcc_mpi.job.records import TIMINGS

RANKS = 7  # rank 0 and the small job's 6 workers

# a plug-in that misbehaves on some trials' inputs only (the check before the run encodes a
# batch of 3 columns, the job's inputs have 4): raises, NaN, a row too many
WOBBLY = '''
import numpy as np
from gcc_mpi import LinearCode


class Wobbly(LinearCode):
    def __init__(self, N, K):
        super().__init__(N, K)
        self.E = np.ones((N, K)) / K + np.eye(N, K)

    def decode_matrix(self, received):
        return np.linalg.pinv(self.E[received]), {}

    def encode(self, X):
        X_coded, info = super().encode(X)
        if X.shape[1] == 4 and X[0, 0] > 0.8:
            raise RuntimeError("wobbly inputs")
        if X.shape[1] == 4 and X[0, 0] < -1.0:
            X_coded[0, 0] = np.nan
        if X.shape[1] == 4 and X[1, 0] > 1.2:
            X_coded = np.vstack([X_coded, X_coded[:1]])
        return X_coded, info
'''
ENCODE_REASONS = {"encode raised RuntimeError: wobbly inputs", "encode returned NaN or inf",
                  "encode returned shape (7, 4), expected (6, 4)"}

# f on data whose column 3 holds 0 or 1: only a coded input has a fraction there
F = '''
import sys
import numpy as np


def f(X):
    frac = X[:, 3] % 1.0
    if np.any((frac > 0.2) & (frac < 0.8) & (X[:, 0] > 0.5)):
        raise RuntimeError("a coded input")
    if np.any((X[:, 3] == 1) & (X[:, 0] > 1.5)):
        raise RuntimeError("an input of the batch")
    return np.stack([X.sum(1), (X ** 2).sum(1)], axis=1)


def exits(X):
    if np.any((X[:, 3] == 1) & (X[:, 0] > 1.5)):
        sys.exit(3)
    return f(X)
'''
SMALL_F = """[job]
name = "f"
trials = 30
[data]
source = "file"
path = "x.npy"
batch = 3
[target]
kind = "python"
function = "{}"
[code]
workers = 6
schemes = ["bacc", "uncoded"]
"""


def records(path):
    """{scheme: {field: column}} of point 0 of a results file, the clock's fields left out."""
    schemes = read_results(path).points[0].schemes
    return {s: {k: v for k, v in d.items() if k not in TIMINGS} for s, d in schemes.items()}


def both_engines(tmp_path, job):
    """The job run by simulate and under mpiexec: each engine's records, after exit 0 without
    a traceback."""
    (tmp_path / "job.toml").write_text(job)
    seen = []
    for argv, ranks in ((["simulate"], None), (["run"], RANKS)):
        out = f"{argv[0]}.h5"
        code, _, err = launch([*argv, "job.toml", "-o", out, "-q"], tmp_path, ranks=ranks)
        assert code == 0 and "Traceback" not in err, err
        seen.append(records(tmp_path / out))
    assert_same(*seen)
    return seen[0]


@needs_mpiexec
def test_a_plugin_whose_encode_fails_mid_run_is_that_schemes_failure_in_both_engines(tmp_path):
    (tmp_path / "codes.py").write_text(WOBBLY)
    rec = both_engines(tmp_path, small_job("wobbly", ["bacc", "codes.py:Wobbly"], 40))
    assert not rec["bacc"]["failed"].any() and np.isfinite(rec["bacc"]["nmse"]).all()
    wobbly = rec["codes.py:Wobbly"]
    failed = wobbly["failed"]
    assert set(wobbly["reason"][failed]) == ENCODE_REASONS
    assert np.isfinite(wobbly["nmse"][~failed]).all() and (~failed).sum() > 20
    assert not wobbly["used"][failed].any()  # nothing was sent for those trials


@needs_mpiexec
@pytest.mark.parametrize("function", ["f", "exits"])
def test_a_target_that_raises_mid_run_is_the_same_in_both_engines(tmp_path, function):
    """f raising on a batch's own inputs (rank 0's reference): that trial failed for every
    scheme; on a coded input: an erasure of that worker. sys.exit() in f is f's failure too."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 4))
    X[:, 3] = rng.integers(0, 2, 400)
    np.save(tmp_path / "x.npy", X)
    (tmp_path / "f.py").write_text(F)
    job = SMALL_F.format(f"f.py:{function}")
    rec = both_engines(tmp_path, job)
    why = "f failed on input {} of the batch itself: " + (
        "RuntimeError: an input of the batch" if function == "f" else "SystemExit: 3")
    for scheme in ("bacc", "uncoded"):
        failed = rec[scheme]["failed"]
        assert failed.any() and not failed.all(), scheme
        assert {r.split(": ", 1)[1] for r in rec[scheme]["reason"][failed]} == {
            why.split(": ", 1)[1]}
    assert np.array_equal(rec["bacc"]["failed"], rec["uncoded"]["failed"])
    erased = rec["bacc"]["error"] != 0
    if function == "f":  # only bacc's coded inputs have a fraction in column 3
        assert erased.any() and "RuntimeError: a coded input" in "".join(
            rec["bacc"]["error_text"])
    assert not (rec["uncoded"]["error"] != 0).any()


def test_a_built_in_scheme_whose_encode_raises_is_a_bug_that_ends_the_run(monkeypatch):
    """Only a plug-in's encode is its scheme's failure; a built-in's is ours: raised."""
    code = make_code("bacc", 6, 3)

    def broken(X):
        raise RuntimeError("our bug")

    monkeypatch.setattr(code, "encode", broken)
    with pytest.raises(RuntimeError, match="our bug"):
        timed_encode(code, np.ones((3, 4)))


# -- refused before the first trial: the same one line from validate, simulate and run ---------
GOOD_F = "import numpy as np\n\n\ndef f(X):\n    return X[:, :2] ** 2\n"
TALL_DECODE = '''
import numpy as np
from gcc_mpi import LinearCode


class Tall(LinearCode):
    def decode(self, received, Y, alpha=None):
        return np.zeros((self.K + 1, Y.shape[1])), {}
'''
BAD_JOBS = {  # case: (what replaces what in the small job, files beside it, the line's start)
    "unknown key": (("[code]\n", "[code]\nwokers = 6\n"), {}, "code.wokers: unknown key"),
    "long name": (('name = "bad"', f'name = "{"n" * 300}"'), {}, "job.name:"),
    "stragglers": (("[code]\n", '[stragglers]\nmodel = "fixed"\ncount = 9\n[code]\n'), {},
                   "stragglers.count:"),
    "no data file": (('source = "gaussian"\ndim = 4', 'source = "file"\npath = "no.npy"'), {},
                     "data.path:"),
    "short data": (('source = "gaussian"\ndim = 4', 'source = "file"\npath = "x.npy"'),
                   {"x.npy": 2}, "data.batch:"),
    "f missing": (('kind = "polynomial"\ndegree = 2\noutputs = 2',
                   'kind = "python"\nfunction = "f.py:g"'), {"f.py": GOOD_F}, "target.function:"),
    "f raises": (('kind = "polynomial"\ndegree = 2\noutputs = 2',
                  'kind = "python"\nfunction = "f.py:f"'),
                 {"f.py": "def f(X):\n    raise ValueError('no')\n"}, "target.function:"),
    "plug-in": (('["bacc"]', '["bacc", "codes.py:Tall"]'), {"codes.py": TALL_DECODE},
                'code.schemes: "codes.py:Tall": '),
    "trace": (("[code]\n", '[stragglers]\nmodel = "trace"\npath = "t.npy"\n[code]\n'),
              {"t.npy": 3}, "stragglers.path:"),
    "memory": (("trials = 4", "trials = 4\n[sweep]\n\"data.batch\" = [3, 30000000]"), {},
               "data.batch"),
}


def bad_job(folder, case):
    (old, new), files, _ = BAD_JOBS[case]
    job = small_job("bad", ["bacc"], 4)
    assert old in job, old
    (folder / "job.toml").write_text(job.replace(old, new, 1))
    for name, content in files.items():
        if isinstance(content, int):  # an array with that many rows (or workers)
            np.save(folder / name, np.ones((content, 4)) * np.arange(content)[:, None])
        else:
            (folder / name).write_text(content)


@needs_mpiexec
@pytest.mark.parametrize("case", sorted(BAD_JOBS))
def test_a_job_refused_before_its_first_trial_gets_one_line_from_every_command(tmp_path, case):
    bad_job(tmp_path, case)
    lines = []
    for argv, ranks in ((["validate"], None), (["simulate", "-o", "out.h5"], None),
                        (["run", "-o", "out.h5"], RANKS)):
        code, out, err = launch([argv[0], "job.toml", *argv[1:]], tmp_path, ranks=ranks)
        mine = [line for line in err.splitlines() if line.startswith("gcc_mpi: error")]
        assert code == 2 and len(mine) == 1 and "Traceback" not in err, (argv, err)
        lines.append(mine[0])
        assert not (tmp_path / "out.h5").exists()
    assert lines[0].startswith("gcc_mpi: error: " + BAD_JOBS[case][2]), lines[0]
    assert lines[0] == lines[1] == lines[2], lines
