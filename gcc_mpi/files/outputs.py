"""Where a command's output goes: its default name, and the refusal of a path that cannot be
written as asked — checked before any work, so that an existing file is never touched.

One rule for every file a command writes (``run``/``simulate``/``probe -o``, ``merge -o``,
``plan --write``, ``analyze --csv/--html/--plot`` and the API's equivalents): a folder is
refused, an existing file is refused unless ``--overwrite`` (or ``--resume``, where a command
continues its own output), and a file the command reads is refused always, ``--overwrite`` or
not: writing it would destroy the input while it is being read.
"""

import os
from datetime import datetime
from pathlib import Path

from ..errors import JobError
from ..job.user_code import file_named


def default_output(job, point=None, kind=None):
    """results/<job>[-p<I>][-<kind>]-<timestamp>.h5: a run's or a simulation's file (``point``:
    the sweep point of ``--point I``), or a probe's (``kind`` = "probe")."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    parts = [job.config.job.name, *([f"p{point}"] if point is not None else []),
             *([kind] if kind else []), stamp]
    return Path("results") / f"{'-'.join(parts)}.h5"


def refuse(path, key="-o", *, overwrite=False, resume=None, example="out.h5", inputs=()):
    """JobError naming ``key`` when ``path`` is a folder (``example``: a file name to suggest
    in it), is one of ``inputs`` (the files the command reads; a link or another name of one
    counts), or exists and neither ``overwrite`` nor ``resume`` is set; ``resume`` None: the
    command cannot continue a file (only --overwrite is offered)."""
    path = Path(path)
    if path.is_dir():
        raise JobError(key, f"{path} is a folder; give the file's name, e.g. "
                            f"{key} {path / example}")
    read = input_named(path, inputs)
    if read is not None:
        same = "" if os.fspath(read) == os.fspath(path) else f" ({read})"
        raise JobError(key, f"{path} is also an input of this command{same}; writing it would "
                            f"destroy it: choose another {key}")
    if path.exists() and not (overwrite or resume):
        how = ("use --overwrite or --resume to replace or continue it" if resume is not None
               else "use --overwrite to replace it")
        raise JobError(key, f"{path} exists; {how}, or choose another {key}")


def input_named(path, inputs):
    """The entry of ``inputs`` that is the file ``path`` (the same file by device and inode,
    so links and relative names are caught), or None."""
    for given in inputs:
        try:
            if os.path.samefile(path, given):
                return given
        except (OSError, ValueError):  # either is missing (nothing to destroy) or unreadable
            continue
    return None


def job_inputs(job):
    """The files ``job`` reads: its job file and, at every sweep point, the data file, the MLP
    weights or ONNX model, the straggler trace and the user's Python files (a target's f, a
    plug-in scheme), resolved as the job resolves them (against the job file's folder)."""
    found = [job.source] if job.source else []
    for point in job.points:
        c = point.config
        for given in (c.data.path, c.target.model, c.target.path, c.stragglers.path):
            if given:
                found.append(job.resolve_path(given))
        for spec in (c.target.function, *c.code.schemes):
            path = file_named(spec, job.base_dir)
            if path is not None:
                found.append(path)
    return found
