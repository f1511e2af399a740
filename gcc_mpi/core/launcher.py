"""What the launcher's environment says of this process, read without initialising MPI: whether it
is one of several ranks or tasks of one launch, its rank, the ranks on its node, the cores it
may use. The command line uses it before MPI starts (a bad job is one line from rank 0, not one
per rank; ``simulate`` under srun is refused), the checks before a run to speak from rank 0 only,
and the runtime to choose how a rank waits.
"""

import os
import shlex
import sys

RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE")
LOCAL_SIZE_VARS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE")


def launcher_rank():
    """This process's rank as the MPI launcher's environment says (None without a launcher),
    read without initialising MPI: lets the CLI print an argument error once, not once a rank."""
    return _first_number(RANK_VARS)


def in_multi_rank_job():
    """MPI is initialised (not finalised) and its world has more than one rank; without
    importing mpi4py when nothing has."""
    MPI = sys.modules.get("mpi4py.MPI")
    return (MPI is not None and MPI.Is_initialized() and not MPI.Is_finalized()
            and MPI.COMM_WORLD.Get_size() > 1)


def launcher_size():
    """The number of ranks as the launcher's environment says (None without a launcher)."""
    return _first_number(SIZE_VARS)


# (size variable, rank variable) of the launchers that say "you are one of N ranks": hydra and
# srun --mpi=pmi2 (PMI), Open MPI's mpirun, MVAPICH's mpirun_rsh, then the SLURM step: srun sets
# SLURM_STEP_NUM_TASKS whatever --mpi says, while the batch script itself has SLURM_NTASKS but
# no SLURM_STEP_ID, so a plain `python -m gcc_mpi` inside it is one process, as it should be.
TASK_VARS = (("PMI_SIZE", "PMI_RANK"), ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"),
              ("MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"),
              ("SLURM_STEP_NUM_TASKS", "SLURM_PROCID"))


def launched_tasks():
    """(tasks, variable, task) as the first launcher environment found says, or None:
    without initialising MPI, whether this process is one of several tasks of one launch."""
    for size_var, rank_var in TASK_VARS:
        size = os.environ.get(size_var, "")
        if size.isdigit() and (size_var != "SLURM_STEP_NUM_TASKS"
                               or os.environ.get("SLURM_STEP_ID", "").isdigit()):
            rank = os.environ.get(rank_var, "")
            return int(size), size_var, int(rank) if rank.isdigit() else None
    return None


def several_tasks_error(command):
    """The error (logged) that refuses ``command`` ("run": MPI's world turned out to be one process;
    "simulate") when the launcher started several tasks, each of which would run the whole job
    and write the same file; None when it did not. Task 0 gets the message and the others "",
    so that a launch says it once."""
    found = launched_tasks()
    if found is None or found[0] < 2:
        return None
    tasks, var, task = found
    if command == "simulate":
        problem = "simulate runs in one process"
        fix = "run it without srun or mpiexec, or use `run` for the MPI run"
    elif var == "SLURM_STEP_NUM_TASKS":
        problem = "MPI sees a single process in each task"
        fix = ("no PMI joins them into one MPI job (srun --mpi=none, or a plugin this MPI does "
               "not speak): launch with `srun --mpi=pmi2` (the MPICH wheel speaks PMI-2; "
               "`srun --mpi=list` shows the site's) or with mpiexec inside the allocation")
    else:
        problem = "MPI sees a single process in each task"
        fix = ("this launcher's PMI is not the one of the MPI that mpi4py uses: launch with "
               "that MPI's mpiexec (python -c 'from mpi4py import MPI; "
               "print(MPI.Get_library_version())' names it)")
    line = (f"{problem}, but the launcher started {tasks} tasks "
            f"({var}={tasks}), each of which would run the whole job and write its output: "
            f"{fix}")
    return line if not task else ""


# the programs that start ranks, by the name they were run as (an ancestor of rank 0 on the host
# where the launch was typed); the daemons between them and the rank (hydra_pmi_proxy, prted,
# orted) are passed over, and slurmstepd ends the search: srun runs elsewhere
LAUNCHERS = frozenset({"mpiexec", "mpirun", "mpiexec.hydra", "mpirun.hydra", "prterun",
                       "orterun", "mpiexec.openmpi", "mpirun.openmpi", "mpiexec.mpich",
                       "mpirun.mpich", "mpirun_rsh", "srun"})
ANCESTORS = 6  # how far up the process tree a launcher is looked for


def launch_command(pid=None):
    """The command line of the launcher that started this rank, as it was typed
    (``mpiexec --with-ft ulfm --hostfile h -n 9 python -m gcc_mpi run job.toml``), read from
    /proc of the nearest ancestor whose program is a launcher; None when none is found (not
    Linux, rank 0 on another host than the launcher, or under srun, whose step daemon is the
    parent)."""
    pid = os.getpid() if pid is None else pid
    for _ in range(ANCESTORS):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])  # the parent
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except (OSError, ValueError, IndexError):
            return None
        if pid <= 1 or not argv or os.path.basename(argv[0]) == "slurmstepd":
            return None
        if os.path.basename(argv[0]) in LAUNCHERS:
            return shlex.join(argv)
    return None


def launcher_local_size():
    """Ranks on this node as the launcher says, or None."""
    return _first_number(LOCAL_SIZE_VARS)


def _first_number(names):
    """The value of the first of the environment variables ``names`` that holds a number."""
    for var in names:
        value = os.environ.get(var, "")
        if value.isdigit():
            return int(value)
    return None


def cores():
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1
