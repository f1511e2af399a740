"""The registry of schemes: what the project knows of each scheme by its name, in one table, and how
a plug-in is named.

The job file, the codes, the checks before a run, the memory estimate and the figures all ask
about schemes by name; they ask here. What a scheme *does* (encode, decode, ``exact``) is its
class's (``gcc_mpi.codes``, imported only by rank 0 and the simulator); this table holds what
must be known without importing it — a worker parses the job file and never imports a code.

A built-in scheme's options (its ``[code.<name>]`` table: each option's check and default) are
declared in its row, because a worker resolves the job — every default filled in, for the
digest it compares with rank 0's — without importing any code; the class's keyword defaults
equal them (tests/test_codes.py checks). A plug-in's options are read from its class when it is
built (``gcc_mpi.codes.plugin_options``).

A new built-in scheme is one row of ``BUILT_IN`` and its class (docs/contributing.md); a
plug-in is named in the job file instead (docs/own-scheme.md).
"""

import re
from dataclasses import dataclass, field

from .checks import BOOL, Setting, choice, integer, number, or_words


@dataclass(frozen=True)
class Scheme:
    name: str        # in job files and results files
    module: str      # gcc_mpi.codes.<module> defines ...
    cls: str         # ... the class
    smoothing: bool  # its decoder fits a kernel smoother: n x n matrices per decode (resources)
    colour: str      # in every figure (matplotlib colour)
    options: dict = field(default_factory=dict)  # {option: Setting}: its [code.<name>] table


LAMBDA = Setting(or_words(number(0.0), "auto", "gcv", "loo"), "auto")
# robust decoding (codes/robust.py): "auto" is on exactly when the job declares [adversaries];
# every built-in's, set by make_code (LinearCode.set_robust), not a keyword of its class
ROBUST = Setting(or_words(BOOL, "auto"), "auto")
# the generic screens of a code with points, by name (LinearCode.trusted): "screen", the
# neighbours' leave-one-out screen; "spline-screen", results far from the adversarial spline
# along beta dropped (codes.robust.spline_screen); true is the class's robust_true
SCREENED = Setting(or_words(BOOL, "auto", "screen", "spline-screen"), "auto")
# letcc's own mode beside them (codes.letcc.LeTCC.robust_methods): "spline", the
# adversarial-setting decoder of arXiv 2502.08058 as published
LETCC_ROBUST = Setting(or_words(BOOL, "auto", "screen", "spline", "spline-screen"), "auto")
GCC_OPTIONS = {
    "robust": SCREENED,
    "kernel": Setting(choice("sobolev2", "matern32", "matern52", "gaussian"), "matern52"),
    "lengthscale": Setting(or_words(number(0.0, above=True), "auto"), "auto"),  # auto: per fit
    "lambda_enc": LAMBDA,
    "lambda_dec": LAMBDA,
    # where the decoder fits: "beta" the papers' (along the curve parameter), "input" the input
    # space, "auto" the input space below gcc.DENSE results per input, else the better of both
    "decoder": Setting(choice("auto", "input", "beta"), "auto"),
}

BUILT_IN = {s.name: s for s in (
    Scheme("uncoded", "uncoded", "Uncoded", False, "C7"),
    Scheme("replication", "uncoded", "Replication", False, "C5", {"robust": ROBUST}),
    # "auto": the target's degree (job.rules.resolved_lcc_degree)
    Scheme("lcc", "lcc", "LCC", False, "C4",
           {"degree": Setting(or_words(integer(1), "auto"), "auto"), "robust": ROBUST}),
    # bacc's robust decoders by name too (codes.berrut.BACC.robust_methods)
    Scheme("bacc", "berrut", "BACC", False, "C0", {"robust": Setting(
        or_words(BOOL, "auto", "screen", "locator", "spline-screen"), "auto")}),
    Scheme("letcc", "letcc", "LeTCC", True, "C1",
           {"lambda_enc": LAMBDA, "lambda_dec": LAMBDA, "robust": LETCC_ROBUST}),
    Scheme("gcc", "gcc", "GCC", True, "C2", GCC_OPTIONS),
    Scheme("gcc-manifold", "gcc_manifold", "ManifoldGCC", True, "C3", {
        **GCC_OPTIONS,
        "neighbors": Setting(integer(1), 8),
        "ordering": Setting(choice("fiedler", "geodesic", "none"), "geodesic"),
        "placement": Setting(choice("chebyshev", "arclength"), "arclength"),
        "laplacian": Setting(number(0.0), 0.0),
        "pool": Setting(integer(0), 0),  # reference rows drawn once per job (class: pool_rows)
    }),
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
