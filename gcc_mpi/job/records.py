"""The per-trial record: the fields one scheme's trial writes, their defaults, and the columns
a block of trials is kept in until the results writer takes it.

The simulator, the MPI master, the results writer and reader, the check of a plug-in scheme and
the Python API all speak of these fields; this module is where they are named. A record is a
dict; a block of them is a ``Records`` (one column per field along the trial axis).

- scalars per trial (float, NaN where a scheme has none): ``SCALARS``;
- per worker (N,): ``delay`` and ``arrival`` (seconds), ``used`` (bool), ``error`` (int8,
  ``gcc_mpi.core.erasures`` codes), ``adversary`` (bool: the worker lied in the trial,
  gcc_mpi.job.adversaries), ``flagged`` (bool: a robust decoder did not trust its result);
- ``failed`` (bool), ``reason`` and ``error_text`` (str), and ``trial`` (int) in a block;
- anything an encoder or decoder adds (e.g. ``alpha``), which may not reuse these names.

Times: ``MEASURED`` are read off the clock of the process that ran the trial (they differ run
to run, in the simulator too); ``TIMINGS`` adds what an MPI run measures where the simulator
derives it from the injected delays. Comparing two runs of one job means comparing every field
but those (``gcc_mpi.files.reader.mismatches``).
"""

import numpy as np

SCALARS = ("mse", "nmse", "relacc", "latency", "t_encode", "t_scatter", "t_wait", "t_decode",
           "lambda_enc", "lambda_dec", "lengthscale_enc", "lengthscale_dec",
           "lengthscale_dec_input",  # gcc's decoder in the input space (codes/chords.py)
           "t_start", "t_end")  # the MPI round's scatter start, decode end; NaN in simulate
PER_TRIAL = ("trial", "failed", "reason", *SCALARS)  # a table of trials, e.g. a DataFrame
MEASURED = frozenset({"t_encode", "t_decode", "latency"})
TIMINGS = MEASURED | {"t_scatter", "t_wait", "arrival", "t_start", "t_end"}

# The key under which a trial's fields carry what a code that ``uses_inputs`` decodes with: the
# batch and its coded inputs. Working data of the trial, never recorded (``Records.put``).
INPUTS = "_inputs"


def empty_record(N):
    """A record's defaults for a code of N workers."""
    rec = dict.fromkeys(SCALARS, np.nan)
    rec.update(failed=False, reason="", delay=np.full(N, np.nan), arrival=np.full(N, np.nan),
               used=np.zeros(N, bool), error=np.zeros(N, np.int8), error_text="",
               adversary=np.zeros(N, bool), flagged=np.zeros(N, bool))
    return rec


# a record's own names, and the trial index of a block: an encoder's or decoder's facts, merged
# into the record, may not use them
FIELDS = frozenset({*empty_record(0), "trial"})


def latency(t_encode, t_until_stop, t_decode):
    """A round's latency: encode, then scatter and wait until it stopped waiting (counted from
    the start of the scatter), then decode."""
    return t_encode + t_until_stop + t_decode


class Records:
    """One scheme's records of the trials ``trials`` as columns along the trial axis (the
    defaults of ``empty_record`` until set): the form the writer appends. Filled in place one
    trial at a time — by the simulator a block at a time, by the MPI master as rounds are
    decided — and handed over whole: no dict per trial to stack, no HDF5 call per trial."""

    def __init__(self, N, trials):
        n = len(trials)
        self.columns = {k: _column(v, n) for k, v in empty_record(N).items()}
        self.columns["trial"] = np.asarray(trials, dtype=np.int64)

    def __len__(self):
        return len(self.columns["trial"])

    def put(self, i, fields):
        """Set trial ``i``'s ``fields`` (a dict as a trial's encode, decode or failure gives,
        or a whole record); a field first seen here (an encoder's alpha) gets a NaN column;
        the trial's working inputs (INPUTS) are not kept."""
        for k, v in fields.items():
            if k == INPUTS:
                continue
            column = self.columns.get(k)
            if column is None:
                column = self.columns[k] = np.full((len(self),) + np.shape(v), np.nan)
            column[i] = v

    def rows(self, n=None):
        """The columns of the first ``n`` trials (default: all), for ``ResultWriter.append``."""
        return self.columns if n is None else {k: c[:n] for k, c in self.columns.items()}


def _column(value, n):
    """``n`` copies of a record's default ``value``; strings as objects, to hold any length."""
    a = np.asarray(value)
    return np.repeat((a.astype(object) if a.dtype.kind == "U" else a)[None], n, axis=0)
