"""Any ONNX model as the target, run with onnxruntime (the optional extra ``gcc_mpi[onnx]``).

The coding works on flat rows (n, d); the model gets what it expects: rows are reshaped to
(n, *shape), where ``shape`` is the per-sample input shape (``target.shape``, else the model's
input shape without its batch axis, e.g. (1, 8, 8) for the shipped digits CNN), and cast to the
model's float type (float32, float64 or float16).  The output (n, ...) comes back as (n, m)
float64.  A model exported with a fixed batch size B runs in chunks of B rows, the last one
padded with zeros; export with a dynamic batch axis to avoid that.  A ``shape`` with one axis
more than the model's, e.g. [64, 1, 8, 8], makes each row a block of 64 inputs (``_block``).

One onnxruntime session per model file per process, single-threaded (this application runs
many ranks on few cores), shared by every target built on that file: workers load the model
once, not once per sweep point or trial.  Everything is checked when the target is built,
including one forward pass on a zero input, so a wrong shape or name is a JobError before the
run.  No MPI here.
"""

import math
from importlib import resources
from pathlib import Path

import numpy as np

from ..errors import JobError
from ..job.paths import located
from .base import Target

KEY = "target.path"
SHIPPED = "_data/digits_cnn.onnx"
DTYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64,
          "tensor(float16)": np.float16}

_SESSIONS = {}   # (path, mtime_ns, size) or SHIPPED -> InferenceSession


def _onnxruntime():
    try:
        import onnxruntime
    except ImportError:
        raise JobError("target.kind", 'onnx targets need the optional extra: '
                                      'pip install "gcc_mpi[onnx]"') from None
    return onnxruntime


def _one_line(e):
    text = " ".join(str(e).split())
    return text if len(text) <= 300 else text[:297] + "..."


def session(path=None, base_dir="."):
    """(InferenceSession, where) for a model file (relative to ``base_dir``; None = the shipped
    digits CNN), created once per process and file."""
    ort = _onnxruntime()
    if path is None:
        cache_key, where = SHIPPED, f"shipped {SHIPPED}"
    else:
        file = located(path, base_dir)
        if not file.is_file():
            raise JobError(KEY, f"file not found: {file}")
        stat = file.stat()
        cache_key, where = (str(file.resolve()), stat.st_mtime_ns, stat.st_size), str(file)
    if cache_key not in _SESSIONS:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3   # errors only: ours say what went wrong, in one line
        try:
            if path is None:
                model = resources.files("gcc_mpi").joinpath(SHIPPED).read_bytes()
            else:
                model = str(file)   # a path, so external weight files next to it are found
            _SESSIONS[cache_key] = ort.InferenceSession(
                model, sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime raises its own types for every kind of bad file
            raise JobError(KEY, f"onnxruntime cannot load {where}: {_one_line(e)}") from None
    return _SESSIONS[cache_key], where


def _choose(args, name, key, what):
    """The model input/output called ``name``, or the only one; errors list the choices."""
    names = [a.name for a in args]
    listing = ", ".join(repr(n) for n in names)
    if name is None:
        if len(args) == 1:
            return args[0]
        raise JobError(key, f"required: the model has {len(args)} {what}s ({listing}); "
                            "name the one to use")
    if name not in names:
        raise JobError(key, f"the model has no {what} {name!r}; its {what}s: {listing}")
    return args[names.index(name)]


def _dims(shape):
    """A model shape as ints, None where the dimension is symbolic or unknown."""
    return [d if isinstance(d, int) and d > 0 else None for d in shape]


class OnnxTarget(Target):
    """An ONNX model f: R^d -> R^m with d = prod(per-sample input shape).

    ``path`` is the .onnx file (relative to ``base_dir``; None = the shipped digits CNN),
    ``input_name``/``output_name`` pick the model's input and output (needed only when it has
    several), ``input_shape`` is the per-sample input shape (needed only where the model leaves
    dimensions open), ``input_dim`` the data's d (checked), ``classifier`` True/False or None
    for auto: a classifier when the output has more than one column.
    """

    name = "onnx"
    key = KEY

    def __init__(self, path=None, input_name=None, output_name=None, input_shape=None,
                 input_dim=None, classifier=None, base_dir="."):
        self._args = (path, input_name, output_name, input_shape, input_dim, classifier,
                      str(base_dir))
        self.session, self.source = session(path, base_dir)
        inp = _choose(self.session.get_inputs(), input_name, "target.input", "input")
        out = _choose(self.session.get_outputs(), output_name, "target.output", "output")
        self.input_name, self.output_name = inp.name, out.name
        if inp.type not in DTYPES:
            raise JobError("target.input", f"{self.source}: input {inp.name!r} has type "
                                           f"{inp.type}; only float, double and float16 tensors "
                                           "are supported")
        if not out.type.startswith("tensor("):
            raise JobError("target.output", f"{self.source}: output {out.name!r} is a "
                                            f"{out.type}, not a tensor; choose a tensor output")
        self.dtype = DTYPES[inp.type]
        self.name = f"onnx {Path(self.source).name}"

        model = _dims(inp.shape)
        if len(model) < 2:
            raise JobError(KEY, f"{self.source}: input {inp.name!r} has shape "
                                f"{_show(inp.shape)}; expected a batch axis followed by one "
                                "input's axes, e.g. (batch, d) or (batch, 1, 8, 8)")
        self.batch = model[0]   # None when dynamic, else a fixed batch size
        shape_key = "target.shape" if input_shape is not None else KEY
        self.per_row = 1   # model inputs in one data row (a block of images: see _block)
        if input_shape is not None:
            shape, self.per_row = _block(tuple(int(s) for s in input_shape), len(model))
            if len(shape) != len(model) - 1 or any(
                    m is not None and m != s for m, s in zip(model[1:], shape)):
                raise JobError("target.shape", f"{list(input_shape)} does not fit input "
                                               f"{inp.name!r} of {self.source}, whose shape is "
                                               f"{_show(inp.shape)} (batch axis first)")
        elif None not in model[1:]:
            shape = tuple(model[1:])
        elif len(model) == 2 and input_dim is not None:
            shape = (int(input_dim),)   # (batch, d) with d open: the data's d
        else:
            raise JobError("target.shape", f"required: input {inp.name!r} of {self.source} has "
                                           f"shape {_show(inp.shape)} with open dimensions; "
                                           "give the per-sample shape, e.g. [1, 28, 28]")
        self.input_shape = shape
        self.input_dim = self.per_row * math.prod(shape)
        if input_dim is not None and input_dim != self.input_dim:
            raise JobError(shape_key, f"{self.source} takes inputs of shape "
                                      f"{list(input_shape or shape)} ({self.input_dim} values) "
                                      f"but the data rows have {input_dim} values")
        try:   # a forward pass now, so a model that cannot run fails before the job does
            Y = self(np.zeros((2, self.input_dim)))   # two rows: a batch axis that is not one
        except JobError:
            raise
        except Exception as e:
            raise JobError(shape_key, f"{self.source} fails on an input of shape "
                                      f"{[2, *shape]}: {_one_line(e)}") from None
        self.output_dim = Y.shape[1]
        self.classifier = self.output_dim > 1 if classifier is None else bool(classifier)

    def __call__(self, X):
        X = np.asarray(X)
        rows = len(X)
        n = rows * self.per_row
        x = X.reshape((n, *self.input_shape)).astype(self.dtype, copy=False)
        if self.batch is None or self.batch == n:
            Y = self._run(x)
        else:   # a fixed batch size: chunks of that size, the last one padded with zeros
            B, parts = self.batch, []
            for i in range(0, n, B):
                chunk = x[i:i + B]
                if len(chunk) < B:
                    pad = np.zeros((B - len(chunk), *self.input_shape), dtype=self.dtype)
                    chunk = np.concatenate([chunk, pad])
                parts.append(self._run(chunk)[:min(B, n - i)])
            Y = np.concatenate(parts) if parts else np.empty((0, self.output_dim or 0))
        return Y.reshape(rows, -1).astype(np.float64)

    def _run(self, x):
        Y = np.asarray(self.session.run([self.output_name], {self.input_name: x})[0])
        if Y.ndim < 1 or Y.shape[0] != len(x):
            raise JobError("target.output", f"{self.source}: output {self.output_name!r} has "
                                            f"shape {Y.shape} for a batch of {len(x)}; expected "
                                            "one output row per input (batch axis first)")
        return Y

    def __reduce__(self):
        """Pickles as its arguments: a process that unpickles it opens (or reuses) its session."""
        return (OnnxTarget, self._args)


def _block(shape, model_axes):
    """(one model input's shape, inputs per data row) of ``target.shape``: with one axis more
    than the model's input has after its batch axis, e.g. [64, 1, 8, 8] for a model taking
    (batch, 1, 8, 8), a data row is a block of shape[0] inputs, all sent to the model in one
    batch, and f of the row is their outputs side by side (64 x 10 values): one worker's task
    costs what a batch of real inference costs."""
    if len(shape) == model_axes and len(shape) > 1:
        return shape[1:], shape[0]
    return shape, 1


def _show(shape):
    return "[" + ", ".join(str(d) if isinstance(d, int) else repr(d or "?") for d in shape) + "]"
