"""The registry of schemes: what the project knows of each scheme by its name, in one table, and how
a plug-in is named.

The job file, the codes, the checks before a run, the memory estimate and the figures all ask
about schemes by name; they ask here. What a scheme *does* (encode, decode, ``exact``) is its
class's (``gcc_mpi.codes``, imported only by rank 0 and the simulator); this table holds what
must be known without importing it — a worker parses the job file and never imports a code.

A new built-in scheme is one row of ``BUILT_IN`` and its class (docs/contributing.md); a
plug-in is named in the job file instead (docs/own-scheme.md).
"""

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Scheme:
    name: str        # in job files and results files
    module: str      # gcc_mpi.codes.<module> defines ...
    cls: str         # ... the class
    smoothing: bool  # its decoder fits a kernel smoother: n x n matrices per decode (resources)
    colour: str      # in every figure (matplotlib colour)


BUILT_IN = {s.name: s for s in (
    Scheme("uncoded", "uncoded", "Uncoded", False, "C7"),
    Scheme("replication", "uncoded", "Replication", False, "C5"),
    Scheme("lcc", "lcc", "LCC", False, "C4"),
    Scheme("bacc", "berrut", "BACC", False, "C0"),
    Scheme("letcc", "letcc", "LeTCC", True, "C1"),
    Scheme("gcc", "gcc", "GCC", True, "C2"),
    Scheme("gcc-manifold", "gcc_manifold", "ManifoldGCC", True, "C3"),
)}
NAMES = tuple(BUILT_IN)
SMOOTHING = tuple(s.name for s in BUILT_IN.values() if s.smoothing)

ENTRY_POINTS = "gcc_mpi.schemes"  # the entry-point group of schemes installed by other packages
# a plug-in scheme named by where its class is: "file.py:Class" (beside the job file) or
# "package.module:Class"; the name is also its group in the results file, so it has no "/"
DOTTED = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"  # a dotted Python name
PLUGIN = re.compile(rf"(?:[\w.-]+\.py|{DOTTED}):{DOTTED}")


def installed_schemes() -> dict:
    """{name: "module:Class"} of the schemes other packages install (entry points of the group
    ENTRY_POINTS); read from the installed packages' metadata, nothing is imported."""
    from importlib.metadata import entry_points

    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINTS)}


def is_plugin(name) -> bool:
    """Whether ``name`` is a plug-in scheme: "file.py:Class", "module:Class" or the name of an
    installed entry point (whose class is imported only when the scheme is built)."""
    return isinstance(name, str) and name not in BUILT_IN and (
        PLUGIN.fullmatch(name) is not None or ":" not in name and name in installed_schemes())


def available() -> list:
    """The built-in schemes, then the names of installed plug-ins."""
    return [*NAMES, *installed_schemes()]
