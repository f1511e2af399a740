"""gcc_mpi: straggler-resilient coded computing, simulated or over MPI.

The Python API (gcc_mpi.api; docs/python.md): ``load_job``, ``check``, ``run_simulation``,
``read_results``, ``summarize``, ``to_dataframe``, ``compare``, ``differences``, ``plot``,
``report``, and for plug-in schemes ``LinearCode``, ``DecodeError``, ``make_code``,
``check_code`` (docs/own-scheme.md). These names are stable within a minor version; the modules
behind them are internal (and none of them shares a name with the API: importing a submodule
sets an attribute of the package).

The names are imported on first use, not with the package: an MPI worker imports ``gcc_mpi`` and
needs none of them (nor numpy's threads started before the command line limits them).

The package logs what it says to its modules' loggers, under "gcc_mpi" (``gcc_mpi.logs``);
only the command line writes them to stderr.
"""

import logging
from importlib import import_module

__version__ = "0.1.0"

# a library's practice: no output of its own until the application says where (gcc_mpi.logs)
logging.getLogger(__name__).addHandler(logging.NullHandler())

# name -> the module that defines it
_API = {
    "DecodeError": "codes", "LinearCode": "codes", "check_code": "codes", "make_code": "codes",
    "Job": "job.config", "JobError": "errors", "Results": "files.reader",
    "read_results": "files.reader",
    "summarize": "reports.analyze",
    "load_job": "api", "check": "api", "run_simulation": "api", "compare": "api",
    "differences": "api", "to_dataframe": "api", "plot": "api", "report": "api",
    "schemes": "api",
}
__all__ = ["__version__", *sorted(_API)]


def __getattr__(name):
    if name in _API:
        value = getattr(import_module(f".{_API[name]}", __name__), name)
        globals()[name] = value  # the next look-up does not come here
        return value
    raise AttributeError(f"module 'gcc_mpi' has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *__all__})
