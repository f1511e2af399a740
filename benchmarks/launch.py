"""The mpiexec a benchmark launches: the one beside this python (a venv's, as the MPICH or Open
MPI wheel installs it) even when the venv is not activated, else the first on PATH. No heavy
imports here: whole_job's floor workers import this module too."""

import sys
from pathlib import Path


def mpiexec():
    near = Path(sys.executable).with_name("mpiexec")
    return str(near) if near.exists() else "mpiexec"
