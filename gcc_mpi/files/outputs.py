"""Where a command's output goes: its default name, and the refusal of a path that cannot be
written as asked — checked before any work, so that an existing file is never touched."""

from datetime import datetime
from pathlib import Path

from ..errors import JobError


def default_output(job, point=None, kind=None):
    """results/<job>[-p<I>][-<kind>]-<timestamp>.h5: a run's or a simulation's file (``point``:
    the sweep point of ``--point I``), or a probe's (``kind`` = "probe")."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    parts = [job.config.job.name, *([f"p{point}"] if point is not None else []),
             *([kind] if kind else []), stamp]
    return Path("results") / f"{'-'.join(parts)}.h5"


def refuse(path, key="-o", *, overwrite=False, resume=None, example="out.h5"):
    """JobError naming ``key`` when ``path`` is a folder (``example``: a file name to suggest
    in it), or exists and neither ``overwrite`` nor ``resume`` is set; ``resume`` None: the
    command cannot continue a file (only --overwrite is offered)."""
    path = Path(path)
    if path.is_dir():
        raise JobError(key, f"{path} is a folder; give the file's name, e.g. "
                            f"{key} {path / example}")
    if path.exists() and not (overwrite or resume):
        how = ("use --overwrite or --resume to replace or continue it" if resume is not None
               else "use --overwrite to replace it")
        raise JobError(key, f"{path} exists; {how}, or choose another {key}")
