"""Target functions f that the workers compute: polynomial, linear, mlp, onnx, python.

``make_target(kind, ...)`` validates its arguments and returns a ready callable object (see
:class:`gcc_mpi.targets.base.Target`); ``try_one_row(target, x)`` checks it on one row before a job
starts and fills in ``output_dim`` for python targets.  onnxruntime is imported only when an
onnx target is built.  No MPI here.
"""

import numpy as np

from ..errors import JobError
from .base import Target
from .mlp import MLPTarget
from .onnx import OnnxTarget
from .polynomial import LinearTarget, PolynomialTarget
from .pyfunc import PythonTarget

KINDS = ("linear", "mlp", "onnx", "polynomial", "python")

__all__ = ["KINDS", "Target", "check_layout", "make_target", "target_for", "try_one_row",
           "LinearTarget", "MLPTarget", "OnnxTarget", "PolynomialTarget", "PythonTarget"]


def make_target(kind, *, input_dim, degree=3, outputs=4, model=None, function=None, path=None,
                input_name=None, output_name=None, input_shape=None, classifier="auto", seed=0,
                base_dir="."):
    """Build the target ``kind`` for inputs of dimension ``input_dim`` (the dataset's dim).

    ``degree`` and ``outputs`` (m) apply to polynomial (and ``outputs`` to linear); ``model`` is
    an .npz path for mlp (None = the shipped digits MLP); ``function`` is the python spec;
    ``path``, ``input_name``, ``output_name`` and ``input_shape`` (per sample) describe an
    onnx model (path None = the shipped digits CNN); ``classifier`` is True, False or "auto"
    (the kind's own rule: mlp yes, onnx when m > 1, python by ``fn.classifier``, else no);
    ``seed`` fixes random coefficients for the whole job; relative paths resolve against
    ``base_dir`` (the job file's folder).
    """
    if not (classifier is None or classifier == "auto" or isinstance(classifier, bool)):
        raise JobError("target.classifier", f'must be true, false or "auto", got {classifier!r}')
    auto = classifier in ("auto", None)
    if kind == "polynomial":
        target = PolynomialTarget(input_dim, degree=degree, outputs=outputs, seed=seed)
    elif kind == "linear":
        target = LinearTarget(input_dim, outputs=outputs, seed=seed)
    elif kind == "mlp":
        target = MLPTarget.load(model, base_dir=base_dir)
    elif kind == "onnx":
        target = OnnxTarget(path, input_name, output_name, input_shape, input_dim,
                            None if auto else classifier, base_dir)
    elif kind == "python":
        if function is None:
            raise JobError("target.function", 'required when target.kind = "python" '
                                              "(e.g. 'package.module:function' or 'file.py:f')")
        target = PythonTarget(function, base_dir=base_dir)
    else:
        raise JobError("target.kind", f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
    if target.input_dim is not None and input_dim is not None and target.input_dim != input_dim:
        raise JobError("target.kind", f"{kind} target expects inputs of dimension "
                                      f"{target.input_dim} but data has {input_dim}")
    if not auto:
        target.classifier = classifier
    return target


def target_for(config, input_dim, base_dir="."):
    """The target of a resolved job ``config`` (its [target] section and job.seed), for inputs
    of dimension ``input_dim``: what the simulator, the MPI master and every worker build."""
    t = config.target
    return make_target(t.kind, input_dim=input_dim, degree=t.degree, outputs=t.outputs,
                       model=t.model, function=t.function, path=t.path, input_name=t.input,
                       output_name=t.output, input_shape=t.shape, classifier=t.classifier,
                       seed=config.job.seed, base_dir=base_dir)


def check_layout(target, dataset):
    """JobError when the data are images in another layout than the target takes.

    The codes work on flat rows and an onnx target reshapes them to its input shape, so rows
    stored as (28, 28, 3) fed to a model taking (3, 28, 28) would be scrambled silently.  Both
    shapes are compared without their length-1 axes, and only when both are multi-axis: flat
    data, or a model taking flat vectors, always pass.
    """
    want, have = getattr(target, "input_shape", None), getattr(dataset, "shape", None)
    if want is None or have is None:
        return
    a, b = [s for s in have if s != 1], [s for s in want if s != 1]
    if len(a) >= 2 and len(b) >= 2 and a != b:
        key = "data.path" if getattr(dataset, "path", None) is not None else "data.source"
        raise JobError(key, f"one input is stored with shape {list(have)} but {target.name} takes "
                            f"{list(want)}: flattened, the values would land in the wrong places; "
                            "save the data in the model's layout (e.g. X.transpose(0, 3, 1, 2) "
                            "for channels-last images)")


def try_one_row(target, x):
    """Call ``target`` on one input row and check it returns a finite (1, m) array.

    Returns that (1, m) output.  Sets ``output_dim`` when the target did not know it (python
    targets); errors, including exceptions raised by a user function, become JobError naming
    the target's key.
    """
    X = np.asarray(x, dtype=np.float64).reshape(1, -1)
    fn = getattr(target, "fn", target)   # the raw user function, so its shape is reported as is
    label = getattr(target, "spec", target.name)
    try:
        Y = fn(X)
    except JobError:
        raise
    except (Exception, SystemExit) as e:  # as a run takes it (core.erasures.F_FAILURES)
        raise JobError(target.key, f"{label} raised {type(e).__name__} on one input row of "
                                   f"shape {X.shape}: {e}") from None
    try:
        Y = np.asarray(Y)   # lists are accepted, as the target's own call accepts them
    except ValueError as e:
        raise JobError(target.key, f"{label} returned a {type(Y).__name__} that is not an "
                                   f"array: {e}") from None
    m = "m" if target.output_dim is None else target.output_dim
    if Y.ndim != 2 or Y.shape[0] != 1 or Y.shape[1] < 1 or (
            target.output_dim is not None and Y.shape[1] != target.output_dim):
        raise JobError(target.key, f"{label} returned shape {Y.shape} for an input of shape "
                                   f"{X.shape}; expected (1, {m}): a 2-D array with one row per "
                                   "input row")
    if Y.dtype.kind not in "biuf":
        raise JobError(target.key, f"{label} returned dtype {Y.dtype}; expected real numbers")
    if not np.all(np.isfinite(Y)):
        raise JobError(target.key, f"{label} returned NaN or inf for input row {X[0][:4]}...")
    target.learn_output_dim(Y.shape[1])
    return Y.astype(np.float64)
