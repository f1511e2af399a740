"""The results file's format, shared by its writer and its reader.

Layout of a results file (format ``gcc_mpi/1``)::

    /                       attrs: format, complete, config, version, command, created, mpi
    /point_000              attrs: index, params_json, one attr per swept dotted key
    /point_000/gcc          one group per scheme, datasets along the trial axis:
        trial (T,) int64, failed (T,) bool, reason (T,) str,
        mse nmse relacc t_encode t_scatter t_wait t_decode latency lambda_enc lambda_dec
        lengthscale_enc lengthscale_dec (T,) float64 (NaN where a scheme has none),
        delay arrival (T, N) float64, used (T, N) bool, error (T, N) int8 (erasure codes, see
        gcc_mpi.core.erasures), error_text (T,) str, and any extra (T, ...) arrays (e.g. alpha).

Datasets are chunked and resizable along the first axis (``maxshape=(None, ...)``), created on
the first append; the numeric ones carry a fletcher32 checksum per chunk. The number of trials
done for a scheme is the dataset length; schemes of one point may have different lengths if a
run was interrupted (``align`` cuts them back to the common length before a resumed run
appends). Plain dtypes only (no compound types), so any HDF5 tool can read the file. This module
never imports MPI: the caller (rank 0, or the simulator) owns the writer.
"""

import re

import numpy as np

FORMAT = "gcc_mpi/1"
# HDF5's file format of 1.10 (2016) and later, whose metadata (object headers, B-trees) carries
# checksums; with fletcher32 on every numeric dataset, a damaged file is a read error rather
# than wrong numbers
LIBVER = ("v110", "latest")
CHUNK_BYTES = 16 * 1024   # a dataset's target chunk size,
CHUNK_ROWS = 1024         # in 1 to 1024 rows


def chunk_rows(row_bytes):
    """Rows per chunk of a dataset whose one row takes ``row_bytes`` (the writer's chunks, and
    the size estimate of ``core.resources``)."""
    return int(min(max(CHUNK_BYTES // max(1, row_bytes), 1), CHUNK_ROWS))


def point_name(index):
    return f"point_{int(index):03d}"


def plain(v):
    """An attribute's value as plain Python (str, int, float, list)."""
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


def resumable_config(toml_text):
    """The job's TOML without the keys a resumed run may change: job.time_limit (how long this
    run may take) and decode.pipeline (how many trials are in flight over MPI; files from before
    the key existed lack it)."""
    return re.sub(r"(?m)^(time_limit|pipeline) = .*\n", "", toml_text)
