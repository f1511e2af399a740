"""Where a file a job names is. A path key (``data.path``, ``target.path``, ``target.model``,
``stragglers.path``, the file of a ``"file.py:name"`` function or scheme) is absolute, or
relative to the job file's folder, or ``gcc_mpi:NAME``: a file shipped inside the installed
package (``gcc_mpi:_data/digits_heavy.onnx``), found with importlib.resources, so that a job
file that names a shipped model works from a checkout, from an installed wheel and when it is
copied anywhere. Every path key is resolved here and nowhere else.
"""

from importlib import resources
from pathlib import Path

PREFIX = "gcc_mpi:"


def is_shipped(path) -> bool:
    """Whether ``path`` names a file shipped in the package (``gcc_mpi:NAME``): it stays as it
    is when a job is written to another folder."""
    return isinstance(path, str) and path.startswith(PREFIX)


def located(path, base_dir=".") -> Path:
    """The file ``path`` names: a shipped one (``gcc_mpi:NAME``) in the installed package,
    else ``~`` expanded and, when relative, under ``base_dir`` (the job file's folder)."""
    if is_shipped(path):
        # a regular package on a file system: files() is its folder (wheels install unpacked)
        return Path(resources.files("gcc_mpi").joinpath(path[len(PREFIX):]))
    p = Path(path).expanduser()
    return p if p.is_absolute() else Path(base_dir) / p
