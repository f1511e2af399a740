"""What a results file's job was, in words: the titles, subtitles and colours of its figures."""

import os
import sys
import textwrap

from ..job.keys import lookup
from ..job.registry import BUILT_IN
from ..job.stragglers import MODELS, ms

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SPARE_COLORS = ["C6", "C8", "C9", "tab:olive", "tab:cyan", "navy", "maroon", "darkgreen"]


class JobWords:
    """The resolved job of a file (its ``config`` attribute), for titles and file names; with
    several files (``labels``), the first one's, and how each was run."""

    def __init__(self, results, labels=(), schemes=()):
        results = results if isinstance(results, (list, tuple)) else [results]
        self.cfg = config_of(results[0])
        names = {config_of(r).get("job", {}).get("name") or
                 os.path.splitext(os.path.basename(r.path))[0] for r in results}
        self.name = names.pop() if len(names) == 1 else "comparison"
        self.sweep = self.cfg.get("sweep", {})
        self.mpi = results[0].attrs.get("mpi") or ""
        self.runs = list(zip(labels, (r.attrs.get("mpi") or "" for r in results))) \
            if len(results) > 1 else []
        spare = iter(SPARE_COLORS * (1 + len(schemes) // len(SPARE_COLORS)))
        self.colors = {s: BUILT_IN[s].colour if s in BUILT_IN else next(spare) for s in schemes}

    def get(self, key):
        """The key's value, or None when it is swept (or missing)."""
        return lookup(self.cfg, key)

    def _ms(self, key):
        return ms(self.get(key))

    def stragglers(self):
        model = MODELS.get(self.get("stragglers.model"))
        if model is None:
            name = self.get("stragglers.model")
            return "no stragglers" if name == "none" else f"{name} delays"
        return model.describe(lambda name: self.get(f"stragglers.{name}"))

    def waits_for(self):
        """S of "the fastest N - S" as text (rules.resolved_stragglers, or its rule if swept)."""
        s = self.get("decode.stragglers")
        if s is not None and s != "auto":
            return s
        model = self.get("stragglers.model")
        if s is None or model is None:
            return "S"
        if model not in MODELS:
            return 0
        return MODELS[model].waits_for(lambda name: self.get(f"stragglers.{name}"))

    def target(self):
        kind = self.get("target.kind")
        if kind == "mlp":
            return "digits MLP" if self.get("target.model") is None else "MLP"
        if kind == "onnx":
            return "digits CNN" if self.get("target.path") is None else "ONNX model"
        if kind == "polynomial":
            return f"degree-{self.get('target.degree')} polynomial"
        if kind == "python":
            return str(self.get("target.function"))
        return str(kind)

    def data(self):
        source = self.get("data.source")
        if source in ("sphere", "swissroll", "torus", "gaussian"):
            return f"{source} in R^{self.get('data.dim')}"
        return "digits" if source == "digits" else "user data"

    def context(self, shown=()):
        """One or two lines: data, f, K, N, stragglers, decoding, trials, how it was run."""
        parts = [f"{self.data()}, f = {self.target()}"]
        for key, sym in (("data.batch", "K"), ("code.workers", "N")):
            if key not in shown and self.get(key) is not None:
                parts.append(f"{sym} = {self.get(key)}")
        parts.append(self.stragglers())
        wait = self.get("decode.wait")
        if wait == "fastest":
            parts.append(f"decode from the fastest N - {self.waits_for()}")
        elif wait == "deadline":
            parts.append(f"decode at {self._ms('decode.deadline')}")
        elif wait == "all":
            parts.append("decode when all arrived")
        trials = self.get("job.trials")
        if self.runs:
            parts.append(f"{trials} trials per point in the first file; "
                         + "; ".join(f"{label}: {how(mpi, short=True)}"
                                     for label, mpi in self.runs))
        else:
            parts.append(f"{trials} trials per point, {how(self.mpi)}")
        return "\n".join(textwrap.wrap(", ".join(parts), 92))

    def color(self, scheme):
        """One colour per scheme in every figure (plug-ins: spare colours, in order)."""
        return self.colors.get(scheme) or (BUILT_IN[scheme].colour if scheme in BUILT_IN else "C8")


def config_of(results):
    try:
        return tomllib.loads(results.config_toml or "")
    except tomllib.TOMLDecodeError:
        return {}


def how(mpi, short=False):
    if mpi == "simulate":
        return "simulated" if short else "simulated (waits = injected delays)"
    return "over MPI" if short else "measured over MPI"
