"""A job file names a shipped file as ``gcc_mpi:NAME`` (gcc_mpi.job.paths): found inside the
installed package wherever the job file is, kept as it is when ``plan --write`` moves a job to
another folder, and a name the package does not hold is the usual one line naming the key."""

import shutil
from pathlib import Path

import pytest

import gcc_mpi
from gcc_mpi.errors import JobError
from gcc_mpi.files.outputs import job_inputs
from gcc_mpi.job.parse import load_job
from gcc_mpi.job.paths import located
from gcc_mpi.reports.plan import best_job
from gcc_mpi.targets import make_target

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = Path(gcc_mpi.__file__).resolve().parent  # the package as installed or checked out
HEAVY = "gcc_mpi:_data/digits_heavy.onnx"


def test_a_shipped_name_is_the_packages_file_and_other_paths_keep_their_rules(tmp_path):
    assert located(HEAVY, tmp_path).resolve() == PACKAGE / "_data" / "digits_heavy.onnx"
    assert located("m.onnx", tmp_path) == tmp_path / "m.onnx"
    assert located(str(tmp_path / "m.onnx"), "/elsewhere") == tmp_path / "m.onnx"
    assert located("~/m.onnx", tmp_path) == Path.home() / "m.onnx"


def test_the_heavy_job_works_copied_out_of_the_checkout(tmp_path):
    """jobs/digits-heavy.toml names its model as shipped: a copy in a folder of its own (as a
    user of the installed package has it) builds the same target and lists the model among
    the files a run must not write over."""
    copy = tmp_path / "digits-heavy.toml"
    shutil.copy(ROOT / "jobs" / "digits-heavy.toml", copy)
    job = load_job(copy)
    assert job.config.target.path == HEAVY
    f = make_target("onnx", input_dim=64, path=job.config.target.path, base_dir=job.base_dir)
    assert Path(f.source).resolve() == PACKAGE / "_data" / "digits_heavy.onnx"
    assert located(HEAVY) in job_inputs(job)


def test_a_missing_shipped_name_is_one_line_naming_the_key(tmp_path):
    with pytest.raises(JobError, match=r"target\.path.*file not found: .*_data/no\.onnx"):
        make_target("onnx", input_dim=64, path="gcc_mpi:_data/no.onnx", base_dir=tmp_path)


def test_plan_write_keeps_a_shipped_name_and_moves_a_relative_one(tmp_path):
    (tmp_path / "job").mkdir()
    (tmp_path / "job" / "x.npy").write_bytes(b"")
    (tmp_path / "job" / "j.toml").write_text(
        f'[data]\nsource = "file"\npath = "x.npy"\n[target]\nkind = "onnx"\npath = "{HEAVY}"\n')
    job = load_job(tmp_path / "job" / "j.toml")
    best = {"N": 12, "scheme": "bacc", "resample": False, "wait": "fastest", "S": 1,
            "deadline": None}
    out = tmp_path / "out"
    written = best_job(job, job.config, best, tmp_path / "probe.h5", out).config
    assert written.target.path == HEAVY
    assert written.data.path == "../job/x.npy"
