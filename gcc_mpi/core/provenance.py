"""Where and with what a results or probe file was made, beyond the job: what asv,
pytest-benchmark and MLPerf record so that two runs can be compared (``analyze A.h5 B.h5`` prints
where they differ). Read on rank 0 (or the simulator's process) without importing MPI and
without starting a process: a fork after MPI_Init is unsafe on some interconnects, so the git
commit is read from the checkout's files, not from ``git``.

The files keep it as the root attribute ``provenance``, JSON text of a flat object (docs/output.md
lists its keys); the MPI library's line, the command, gcc_mpi's version and the hosts keep their
own attributes (``mpi``, ``command``, ``version``, ``hosts``).
"""

import importlib.metadata
import os
import platform
from pathlib import Path

from .launcher import cores

LIBRARIES = ("numpy", "scipy", "h5py", "mpi4py")
# a SLURM job's identity, when the run is one: the job, the array job and task, the step
SLURM_IDS = {"slurm_job": "SLURM_JOB_ID", "slurm_array_job": "SLURM_ARRAY_JOB_ID",
             "slurm_array_task": "SLURM_ARRAY_TASK_ID", "slurm_step": "SLURM_STEP_ID",
             "slurm_cluster": "SLURM_CLUSTER_NAME"}


def collect(ft):
    """The provenance of this process's run as a flat {key: str or int} (keys in docs/output.md).
    ``ft``: the MPI run's fault tolerance ("ulfm" or "off"), "simulate" for the simulator."""
    info = {"python": platform.python_version(),
            **{name: library_version(name) for name in LIBRARIES},
            "ft": ft, "host": platform.node(), "cpu": cpu_model(),
            "cores": os.cpu_count() or 1, "cores_usable": cores(),
            "os": platform.platform()}
    commit = git_commit(Path(__file__).resolve().parent.parent.parent)
    if commit:
        info["commit"] = commit
    info.update({key: os.environ[var] for key, var in SLURM_IDS.items() if os.environ.get(var)})
    return info


def library_version(name):
    """The installed version of the distribution ``name``, "-" when it is not installed (read
    from its metadata: nothing is imported)."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "-"


def cpu_model():
    """The CPU's model name as Linux's /proc/cpuinfo says (else ``platform.processor()``)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Processor", "cpu model"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "-"


def git_commit(root):
    """The commit checked out at ``root`` when gcc_mpi runs from a git checkout (or worktree)
    of itself, else None: HEAD followed through its ref, loose or packed."""
    dot = root / ".git"
    try:
        if not (root / "gcc_mpi" / "__init__.py").is_file():
            return None
        gitdir = dot
        if dot.is_file():  # a worktree: "gitdir: <path>"
            gitdir = (root / dot.read_text().split(":", 1)[1].strip()).resolve()
        head = (gitdir / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head or None  # detached
        ref = head[4:].strip()
        common = gitdir
        if (gitdir / "commondir").is_file():
            common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
        for where in (gitdir, common):
            if (where / ref).is_file():
                return (where / ref).read_text().strip()
        packed = common / "packed-refs"
        if packed.is_file():
            for line in packed.read_text().splitlines():
                sha, _, name = line.partition(" ")
                if name.strip() == ref:
                    return sha
    except (OSError, IndexError):
        return None
    return None
