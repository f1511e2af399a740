"""Command line: gcc-mpi (or python -m gcc_mpi) [run|simulate|analyze|merge|validate] ...

This module only parses and dispatches to ``commands`` (see README for the commands). Bad input
of any kind ends with one line on stderr and exit code 2; nothing here imports MPI unless a
command needs it.
"""

import argparse
import logging
import os
import sys

# BLAS threads only fight each other (and the MPI ranks) over this application's small matrices:
# a 30x30 eigendecomposition takes ~0.1 ms on one thread and ~5 ms with two busy cores contended.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

from .. import __version__
from ..errors import JobError, ResourceError, resource_line
from ..logs import to_stderr

log = logging.getLogger(__name__)

# seconds a rank other than 0 waits before it exits on an error that rank 0 reports
RANK_0_FIRST = 5.0


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit code 2, like every other bad input
        raise JobError(None, f"{self.prog}: {message}")


def _job_args(p):
    p.add_argument("job", nargs="?", help="job file (TOML); default: the embedded default job")
    p.add_argument("-o", "--output", help="HDF5 output (default: results/<job>-<timestamp>.h5)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one dotted key, e.g. --set stragglers.count=8 (repeatable)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    p.add_argument("--point", type=int, metavar="I",
                   help="run only sweep point I (0-based; one task of a job array); its group "
                        "keeps the index, and merge joins the point files into one "
                        "(default output: results/<job>-p<I>-<timestamp>.h5)")


def invoked_as(argv0=None):
    """The command as the user typed it: "gcc-mpi" (the entry point) or "python -m gcc_mpi"."""
    name = os.path.basename(sys.argv[0] if argv0 is None else argv0)
    return "python -m gcc_mpi" if name in ("__main__.py", "-m", "-c", "") else name


def build_parser(prog=None):
    prog = prog or invoked_as()
    parser = _Parser(prog=prog, description="Straggler-resilient coded computing: run a job over "
                     "MPI or in the simulator, then analyze its HDF5 results.")
    parser.add_argument("--version", action="version", version=f"gcc-mpi {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    run = sub.add_parser("run", help="run a job over MPI (under mpiexec; the default command)")
    _job_args(run)
    run.add_argument("--resume", action="store_true",
                     help="append the missing trials to an existing output of the same job")
    run.add_argument("--wait", choices=("auto", "busy", "polite"), default=None,
                     help="how ranks wait: polling MPI's tests in a tight loop (busy), or with "
                          "back-off sleeps (polite); auto (default, or $GCC_MPI_WAIT) = polite "
                          "when a node runs more ranks than it has cores")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress and no table")
    sim = sub.add_parser("simulate", help="run a job in one process (no MPI)")
    _job_args(sim)
    sim.add_argument("--resume", action="store_true",
                     help="append the missing trials to an existing output of the same job")
    sim.add_argument("-q", "--quiet", action="store_true", help="no progress and no table")
    an = sub.add_parser("analyze", help="summarise a results file, or compare several")
    an.add_argument("paths", nargs="+", metavar="OUT.h5",
                    help="a results file (or a probe file), or several results files to "
                         "compare: one table with a column naming the file, the differences "
                         "of matching points against the first file, figures on shared axes")
    an.add_argument("--label", dest="labels", action="append", metavar="NAME",
                    help="the name of each file in the tables and legends, in order "
                         "(repeatable; default: the file names)")
    an.add_argument("--json", action="store_true", help="print the JSON rows of the contract")
    an.add_argument("--csv", metavar="FILE", help="also write the table as CSV")
    an.add_argument("--rate", metavar="KEY", help="fit the log-log slope of nmse against a swept "
                    "key per scheme (with --json: print {rate, slopes} instead of the rows)")
    an.add_argument("--plot", metavar="DIR", help="also write the figures that apply (PNG and "
                    "SVG) into DIR; needs the [plot] extra (matplotlib)")
    an.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report: "
                    "provenance, every table and figure, the jobs; needs the [plot] extra")
    an.add_argument("--overwrite", action="store_true", help="replace existing --csv, --html "
                    "or --plot files (never a file being analysed)")
    mg = sub.add_parser("merge", help="merge results files of one job (e.g. the point files of a "
                        "job array) into one file")
    mg.add_argument("paths", nargs="+", metavar="IN.h5",
                    help="results files written for the identical job (e.g. its point files)")
    mg.add_argument("-o", "--output", required=True, metavar="OUT.h5", help="the merged file")
    mg.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    _probe_args(sub)
    val = sub.add_parser("validate", help="check a job as simulate and run do before any work "
                         "(its data file, f, schemes, straggler trace and the memory it needs) "
                         "and print it resolved, or one line naming the problem")
    val.add_argument("job", nargs="?", help="job file (TOML); default: the embedded default job")
    val.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                     help="override one dotted key, as for simulate (repeatable)")
    return parser


def _probe_args(sub):
    pr = sub.add_parser("probe", help="measure each worker's real task times over MPI (under "
                        "mpiexec); stragglers.model = \"trace\" replays the file")
    pr.add_argument("job", nargs="?", help="job file whose f and data to probe; default: the "
                    "embedded default job")
    pr.add_argument("-o", "--output",
                    help="HDF5 output (default: results/<job>-probe-<timestamp>.h5)")
    pr.add_argument("--rounds", type=int, default=300, metavar="T",
                    help="rounds: every worker computes f once per round (default 300)")
    pr.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    pr.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    pr.add_argument("--wait", choices=("auto", "busy", "polite"), default=None,
                    help="how ranks wait, as for run")
    pr.add_argument("-q", "--quiet", action="store_true", help="no progress and no table")
    pl = sub.add_parser("plan", help="recommend scheme, N and S or the deadline from "
                        "simulations on a probe's trace")
    pl.add_argument("job", nargs="?", help="job file (f, data, K, trials); default: the "
                    "embedded default job")
    pl.add_argument("--trace", required=True, metavar="PROBE.h5",
                    help="measured delays: a probe file, or a .npy/.csv (rounds x workers)")
    pl.add_argument("--target-nmse", type=float, required=True, metavar="DB",
                    help="accuracy to meet: mean nmse in dB (e.g. -20)")
    pl.add_argument("--max-workers", type=int, metavar="N",
                    help="largest N to consider (default: the trace's workers)")
    pl.add_argument("--schemes", nargs="+", metavar="SCHEME",
                    help="schemes to consider (default: the job's)")
    pl.add_argument("--trials", type=int, metavar="T",
                    help="simulated trials per configuration (default 40)")
    pl.add_argument("--adversaries", type=int, metavar="A",
                    help="A workers answer wrong in every trial: simulate them and recommend "
                         "only schemes that tolerate A (default: the job's [adversaries])")
    pl.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    pl.add_argument("--write", metavar="BEST.toml", help="write the recommended job file")
    pl.add_argument("--overwrite", action="store_true",
                    help="replace an existing --write file or figure")
    pl.add_argument("--json", action="store_true", help="print the candidates as JSON")
    pl.add_argument("--plot", metavar="DIR", help="draw the frontier (needs the [plot] extra)")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    to_stderr()  # the package's records as this command line's lines (gcc_mpi.logs)
    try:
        # run is the default command: no arguments, or options only (-o OUT.h5, --set ...)
        leading_option = argv and argv[0].startswith("-") and argv[0] not in (
            "-h", "--help", "--version")
        args = build_parser().parse_args(["run", *argv] if not argv or leading_option else argv)
        args.argv, args.prog = list(argv), invoked_as()
        from .commands import COMMANDS

        code = COMMANDS[args.command](args)
    except JobError as e:
        from ..core.launcher import launcher_rank

        if not launcher_rank():  # under mpiexec, one line from rank 0 rather than one per rank
            log.error("%s", e)
        code = 2
    except (ResourceError, MemoryError) as e:  # no disk or memory left: one line, the file kept
        log.error("%s", resource_line(e))
        code = 1
    except BrokenPipeError:
        # whoever read stdout has gone (`analyze out.h5 | head`): end quietly as a shell tool
        # does, and keep Python's flush at exit from raising again on the closed pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13  # SIGPIPE
    if code == 2:
        let_rank_0_speak_first()
    return code


def let_rank_0_speak_first():
    """A rank other than 0 that refuses the job before the ranks form one MPI job (a bad job
    file, a launch it cannot run) found what rank 0 reports in one line. Open MPI's mpiexec ends
    every rank as soon as the first one exits non-zero, so under Open MPI the others wait for
    rank 0 to say it (rank 0's exit ends the wait); hydra lets every rank finish, so under MPICH
    none waits. Within one MPI job rank 0 reports before it tells the others, so they go at
    once (a wait would hold rank 0 in MPI_Finalize)."""
    from ..core.launcher import in_multi_rank_job, launcher_rank

    if launcher_rank() and "OMPI_COMM_WORLD_SIZE" in os.environ and not in_multi_rank_job():
        import time

        time.sleep(RANK_0_FIRST)

if __name__ == "__main__":
    sys.exit(main())
