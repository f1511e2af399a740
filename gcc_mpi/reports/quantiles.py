"""Exact percentiles of columns of any length, in bounded memory (analyze, plan, plots).

A ``Column`` takes float64 values block by block; past MEMORY_VALUES it keeps them in a
temporary file instead (8 bytes a value: a thousandth of what the results file holds per trial at
N = 40). ``percentiles`` is ``np.percentile``'s (linear interpolation between the two nearest
order statistics): in memory by numpy itself; from a file by selection over the values' bits
(float64 maps to uint64 in an order-preserving way), 16 bits a pass — one pass counts the values
by their next 16 bits inside the bucket that holds the wanted rank, until the bucket is small
enough to sort — so 2 to 4 passes per order statistic, each reading the column once.
"""

import tempfile

import numpy as np

MEMORY_VALUES = 1 << 21   # values a Column keeps in memory (16 MB)
SORT_VALUES = 1 << 20     # a selection bucket this small is read and sorted
BLOCK_VALUES = 1 << 20    # values read at a time from a Column's file
CDF_POINTS = 2000         # points of a distribution's outline (``Column.outline``)


class Column:
    """Float64 values appended in blocks (``add``); read back in blocks (``blocks``)."""

    def __init__(self):
        self._parts, self._held, self._file, self.size = [], 0, None, 0

    def add(self, values):
        a = np.asarray(values, dtype=np.float64).ravel()
        if not a.size:
            return
        self.size += a.size
        if self._file is None:
            self._parts.append(a.copy())
            self._held += a.size
            if self._held <= MEMORY_VALUES:
                return
            self._file = tempfile.TemporaryFile(prefix="gcc_mpi-column-")
            a, self._parts = np.concatenate(self._parts), []
        self._file.write(a.tobytes())

    def __len__(self):
        return self.size

    def in_memory(self):
        """All values as one array, if they are held in memory (else None)."""
        if self._file is not None:
            return None
        return np.concatenate(self._parts) if self._parts else np.zeros(0)

    def blocks(self):
        values = self.in_memory()
        if values is not None:
            yield values
            return
        self._file.flush()
        self._file.seek(0)
        while True:
            data = self._file.read(8 * BLOCK_VALUES)
            if not data:
                return
            yield np.frombuffer(data, dtype=np.float64)

    def close(self):
        if self._file is not None:
            self._file.close()
        self._parts, self._file = [], None

    def outline(self, points=CDF_POINTS):
        """(values, fraction of values <= each) at up to ``points`` order statistics spread
        evenly, ending with the largest: a distribution's shape for a figure."""
        n = len(self)
        if not n:
            return np.zeros(0), np.zeros(0)
        ranks = np.unique(np.linspace(0, n - 1, min(points, n)).round().astype(np.int64))
        return order_statistics(self, ranks), (ranks + 1) / n


def order_statistics(column, ranks):
    """The values of a Column of the given 0-based ranks in sorted order, as an array."""
    values = column.in_memory()
    if values is not None:
        return np.sort(values)[np.asarray(ranks, dtype=np.int64)]
    return _order_stats(column, ranks)


def _keys(values):
    """uint64 keys ordered as the floats are (sign bit flipped, negatives all bits flipped)."""
    bits = values.view(np.uint64)
    return np.where(bits >> np.uint64(63), ~bits, bits | np.uint64(1 << 63))


def _order_stats(column, ranks):
    """The values of the given 0-based ranks in sorted order, by selection over the keys."""
    return np.array([_order_stat(column, int(r)) for r in ranks])


def _order_stat(column, rank):
    prefix, shift = np.uint64(0), 64  # keys whose top 64 - shift bits equal prefix
    while True:
        if shift == 64:
            count = len(column)
        if count <= SORT_VALUES or shift == 0:
            bucket = np.concatenate([b[_in_bucket(b, prefix, shift)] for b in column.blocks()])
            return float(np.sort(bucket)[rank])
        shift -= 16
        counts = np.zeros(1 << 16, np.int64)
        for b in column.blocks():
            k = _keys(b)
            k = k[(k >> np.uint64(shift + 16)) == (prefix >> np.uint64(shift + 16))] \
                if shift < 48 else k
            counts += np.bincount(((k >> np.uint64(shift)) & np.uint64(0xFFFF)).astype(np.int64),
                                  minlength=1 << 16)
        cum = np.cumsum(counts)
        digit = int(np.searchsorted(cum, rank, side="right"))
        rank -= int(cum[digit - 1]) if digit else 0
        count = int(counts[digit])
        prefix |= np.uint64(digit) << np.uint64(shift)


def _in_bucket(values, prefix, shift):
    if shift == 64:
        return np.ones(len(values), bool)
    return (_keys(values) >> np.uint64(shift)) == (prefix >> np.uint64(shift))


def percentiles(column, qs):
    """``np.percentile(values, qs)`` of a Column's values (None for an empty column), exact."""
    n = len(column)
    if not n:
        return [None for _ in qs]
    values = column.in_memory()
    if values is not None:
        return [float(v) for v in np.percentile(values, qs)]
    out = []
    for q in qs:
        h = (n - 1) * q / 100
        k = int(np.floor(h))
        low, high = _order_stats(column, [k, min(k + 1, n - 1)])
        out.append(float(np.percentile([low, high], 100 * (h - k))))
    return out
