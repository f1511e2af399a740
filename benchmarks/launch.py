"""The mpiexec a benchmark launches: the one beside this python (a venv's, as the MPICH or Open
MPI wheel installs it) even when the venv is not activated, else the first on PATH. No heavy
imports here: whole_job's floor workers import this module too."""

import functools
import subprocess
import sys
from pathlib import Path


def mpiexec():
    near = Path(sys.executable).with_name("mpiexec")
    return str(near) if near.exists() else "mpiexec"


@functools.cache
def is_openmpi():
    """Whether ``mpiexec()`` is Open MPI's (its version line; Open MPI 5's is prterun's)."""
    text = subprocess.run([mpiexec(), "--version"], capture_output=True, text=True).stdout
    return "Open MPI" in text or "prterun" in text


def oversubscribe():
    """The options that let more ranks than cores start: Open MPI refuses them without
    --oversubscribe; MPICH's hydra needs nothing."""
    return ["--oversubscribe"] if is_openmpi() else []
