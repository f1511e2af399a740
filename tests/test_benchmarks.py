"""The MPI benchmarks run to their report on a few ranks. They drive the runtime's Master and
Worker directly, so a change of either's interface can break them where no other test looks:
pipeline.py's stand-in writer lacked due() (issue 17's block hand-over) and hung 31 ranks, and
runtime_overhead.py and gather_modes.py hung in rank 0's shutdown awaiting a BYE their workers
never sent (issue 19)."""

from pathlib import Path

import pytest
from mpirun import Launch

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
# script -> (its smallest arguments, a line of its report)
CASES = {
    "pipeline.py": (["--trials", "3", "--depths", "1,2", "--stragglers", "2"], "# pipeline:"),
    "runtime_overhead.py": (["--blocks", "1", "--trials", "3"], "ratio to floor + f"),
    "gather_modes.py": (["--blocks", "1", "--trials", "3"], "# gather_modes:"),
}


@pytest.mark.mpi
@pytest.mark.parametrize("script", CASES)
def test_an_mpi_benchmark_runs_to_its_report(script, tmp_path):
    args, line = CASES[script]
    code, out, err = Launch(args, tmp_path, ranks=12, program=[str(BENCHMARKS / script)]).wait()
    assert code == 0, err
    assert line in out, out
