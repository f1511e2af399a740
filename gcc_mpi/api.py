"""The Python API: load a job, check it, simulate it, read and summarise results, compare runs,
draw figures and write a report — what a notebook or a script uses, and what the command line
itself calls. Everything it offers is re-exported from ``gcc_mpi`` (``gcc_mpi.__all__``) and
kept stable within a minor version; other modules are internal.

Examples
--------
>>> import gcc_mpi as gm
>>> job = gm.load_job("jobs/digits-mlp.toml", {"job.trials": 20})
>>> results = gm.run_simulation(job)       # in memory; run_simulation(job, "out.h5") keeps a file
>>> table = gm.to_dataframe(results)       # one row per (point, scheme); needs pandas
>>> gm.plot(results, "figures")            # PNG and SVG files

docs/python.md walks through a session.
"""

import dataclasses
import os
import tempfile
from pathlib import Path

from .reports import analyze as _analyze
from .job import default_job
from .core import preflight
from .reports.statistics import summarize
from .codes import DecodeError, LinearCode, check_code, make_code
from .job.config import Job, select_points
from .errors import JobError
from .files.outputs import refuse
from .job.records import PER_TRIAL
from .job.registry import available
from .files.reader import Results, read_results

__all__ = ["DecodeError", "Job", "JobError", "LinearCode", "Results", "check", "check_code",
           "compare", "differences", "load_job", "make_code", "plot", "read_results", "report",
           "run_simulation", "schemes", "summarize", "to_dataframe"]


def load_job(path=None, overrides=(), *, defaults=None):
    """Load a job file (or the default job) with overrides, checked key by key.

    Parameters
    ----------
    path : str or path-like, optional
        A TOML job file; None: the default job shipped in the package.
    overrides : mapping or iterable, optional
        Keys to change, as ``{"stragglers.count": 8}``, ``[("job.trials", 20)]`` or
        ``["job.trials=20"]`` (the command line's ``--set``); a swept key set plainly
        replaces its sweep.
    defaults : mapping, optional
        New defaults for keys the file does not set (the MPI run passes
        ``{"code.workers": ranks - 1}``).

    Returns
    -------
    Job
        The resolved job: ``job.points`` (one per sweep point, each with its ``config``),
        ``job.to_toml()`` (every default filled in), ``job.with_overrides(...)``.

    Raises
    ------
    JobError
        A bad key or value, naming the key and what is allowed.
    """
    return default_job.load(path, overrides, defaults)


def check(job, *, say=False):
    """Check a job as the commands ``simulate`` and ``run`` do before any work.

    Opens its data files, builds and evaluates f once, builds every scheme (a plug-in is
    imported and tried on a small batch), reads a straggler trace, and estimates the memory.

    Parameters
    ----------
    job : Job
    say : bool
        Also log them (WARNING, logger "gcc_mpi.core.preflight"; the command line writes each
        as a line on stderr, ``gcc_mpi.logs``).

    Returns
    -------
    list of str
        Warnings (e.g. fewer results than inputs for an approximate scheme); the job runs.

    Raises
    ------
    JobError
        The first problem, in one line naming the key.
    """
    prepared, warnings = preflight.checked_setup(job)  # as every run's JobRun.prepare
    if say:
        preflight.report(job, warnings)
    return warnings


def run_simulation(job, output=None, *, point=None, overwrite=False, resume=False,
                   progress=False, stop=None, command=None):
    """Run a job's trials in this process (no MPI), as ``python -m gcc_mpi simulate``.

    A worker's result arrives exactly after its injected delay; the trials, their seeds and
    the decoders are those of an MPI run of the same job, so its accuracy is the same.

    Parameters
    ----------
    job : Job
    output : str or path-like, optional
        The HDF5 results file to write (kept; format in docs/output.md). None: a temporary
        file, read back into memory and removed.
    point : int, optional
        Run only this sweep point (0-based), as ``--point``.
    overwrite, resume : bool
        Replace an existing ``output``, or append the trials it lacks.
    progress : bool
        Show progress on stderr (a display, not a log: it goes to stderr whatever the logging).
        What the run says otherwise (the checks' warnings) is logged under "gcc_mpi".
    stop : interrupts.InterruptFlag, optional
        Ends the run early (SIGTERM, SIGINT, ``job.time_limit``) by raising
        ``interrupts.Interrupted`` between trials; ``output`` keeps every finished trial
        (complete = false; ``resume=True`` continues it).
        Default: a flag for ``job.time_limit`` only.
    command : str, optional
        What the file records as its ``command`` attribute.

    Returns
    -------
    Results
        Every trial of the file (``results.points[i].schemes[name]`` holds its datasets).

    Raises
    ------
    JobError
        Bad input, before any work and without touching an existing ``output``.
    """
    from .core.driver import JobRun
    from .core.interrupts import InterruptFlag

    points = select_points(job, point)
    command = command or f"gcc_mpi.run_simulation({_job_text(job)})"
    with tempfile.TemporaryDirectory(prefix="gcc_mpi-") as scratch:
        out = Path(output) if output is not None else Path(scratch) / "results.h5"
        JobRun(job, points, out, interrupts=stop or InterruptFlag(), overwrite=overwrite,
               resume=resume, command=command, quiet=not progress,
               kept=output is not None).simulate()
        results = read_results(out, whole=output is None)  # the temporary file goes
    if output is None:
        results = dataclasses.replace(results, path=f"{job.config.job.name} (in memory)")
    return results


def _job_text(job):
    return repr(os.fspath(job.source)) if job.source is not None else "default job"


def compare(results, labels=None):
    """Summarise several results files side by side (``analyze A.h5 B.h5 ...``).

    Parameters
    ----------
    results : sequence of Results or paths
    labels : sequence of str, optional
        One name per file (default: the file names without ``.h5``).

    Returns
    -------
    list of dict
        The ``summarize`` rows of every file, each with ``file`` (its label) and ``path``;
        ``point`` holds every key swept in any of the files (matching points match).
    """
    return _analyze.Analysis(list(results), labels).rows


def differences(rows):
    """Differences of matching (point, scheme) rows of ``compare`` against the first file.

    Returns
    -------
    list of dict
        Per matching row of another file: ``file``, ``reference``, ``point``, ``scheme`` and,
        for ``mse_db``, ``relacc`` and ``latency_mean``, the difference (file minus reference),
        the half-width of its 95 % interval (``<stat>_ci95``) and whether the difference is
        larger (``<stat>_differs``).
    """
    from .reports.comparison import differences as found

    return found(rows)


def to_dataframe(results, *, trials=False, labels=None):
    """Results as a pandas DataFrame (needs pandas: ``pip install "gcc_mpi[pandas]"``).

    Parameters
    ----------
    results : Results, path, or a sequence of them, or rows of ``summarize``/``compare``
    trials : bool
        False: one row per (point, scheme) with the ``analyze --json`` statistics, a column
        per swept key. True: one row per trial and scheme with its per-trial values
        (``trial, failed, nmse, mse, relacc, latency, t_encode, ...``).
    labels : sequence of str, optional
        Names of several files (a column ``file``).

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    ModuleNotFoundError
        pandas is not installed (a missing package, not a bad job: not a JobError).
    """
    try:
        import pandas as pd
    except ImportError:
        raise ModuleNotFoundError('to_dataframe needs pandas: pip install "gcc_mpi[pandas]"',
                                  name="pandas") from None
    if isinstance(results, list) and results and isinstance(results[0], dict):
        rows = results  # already summarised
    elif trials:
        return _trial_frame(pd, _analyze.Analysis(results, labels))
    else:
        rows = _analyze.Analysis(results, labels).rows
    flat = []
    for r in rows:
        erased = {f"erasures_{k}": n for k, n in r.get("erasures", {}).items()}
        flat.append({**r["point"], **{k: v for k, v in r.items()
                                      if k not in ("point", "erasures")}, **erased})
    return pd.DataFrame(flat)


def _trial_frame(pd, analysis):
    """One row per trial and scheme of every file of ``analysis``: its file (several files),
    swept parameters, scheme and per-trial values (``records.PER_TRIAL``)."""
    frames = []
    for label, res in zip(analysis.labels, analysis.results):
        for p in res.points:
            for scheme, d in p.schemes.items():
                frame = pd.DataFrame({k: d[k] for k in PER_TRIAL if k in d})
                front = {"file": label} if label else {}
                for i, (k, v) in enumerate({**front, **p.params, "scheme": scheme}.items()):
                    frame.insert(i, k, [v] * len(frame))
                frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def plot(results, folder, *, labels=None, formats=("png", "svg"), overwrite=False):
    """Draw every figure that applies to one results file, or to several on the same axes.

    Parameters
    ----------
    results : Results or path, or a sequence of them
    folder : str or path-like
        Where to write ``<job>-<figure>.<format>`` (created if missing).
    labels : sequence of str, optional
        Names of several files, for the legends.
    formats : sequence of str
        "png" and/or "svg".
    overwrite : bool
        Replace figures that exist (never a file being plotted).

    Returns
    -------
    list of str
        The files written. Needs matplotlib (``pip install "gcc_mpi[plot]"``).

    Raises
    ------
    JobError
        A figure exists (unless ``overwrite``) or is one of the inputs: nothing is written.
    """
    from .reports.plots import figure_paths, save_all

    made = _analyze.Analysis(results, labels).figures()
    for path in figure_paths(*made, folder, tuple(formats)):
        refuse(path, "folder", overwrite=overwrite, inputs=_input_paths(results))
    return save_all(*made, folder, tuple(formats))


def _input_paths(results):
    """The files of ``results`` (a Results or a path, or a sequence of them)."""
    one = isinstance(results, (str, os.PathLike, Results))
    return [r.path if isinstance(r, Results) else r for r in ([results] if one else results)]


def report(results, path, *, labels=None, overwrite=False):
    """Write one self-contained HTML page of one results file or several compared: the files'
    provenance, every table, every figure (inlined) and each resolved job.

    Returns
    -------
    str
        ``path``. Needs matplotlib (``pip install "gcc_mpi[plot]"``).

    Raises
    ------
    JobError
        ``path`` exists (unless ``overwrite``), is a folder or is one of the inputs.
    """
    from .reports.html import build
    from .reports.canvas import require_matplotlib

    refuse(path, "path", overwrite=overwrite, example="report.html",
           inputs=_input_paths(results))
    require_matplotlib()
    page = build(_analyze.Analysis(results, labels))
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(page, encoding="utf-8")
    return os.fspath(path)


def schemes():
    """The scheme names a job can list in ``code.schemes``.

    Returns
    -------
    list of str
        The built-in schemes, then the names of installed plug-ins (entry points of the group
        ``gcc_mpi.schemes``); a plug-in named ``"file.py:Class"`` or ``"module:Class"`` needs no
        registration (docs/own-scheme.md).
    """
    return available()

