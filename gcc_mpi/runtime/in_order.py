"""The MPI engine's rounds finish out of order; the job driver takes a point's trials whole
and in order."""


class InOrder:
    """A point's records on their way to the driver (``out``, a ``core.driver.RecordBuffer``):
    rounds finish out of order, a trial is handed over once all its ``n`` schemes are decided,
    in trial order."""

    def __init__(self, n, out):
        self.n, self.out = n, out
        self.records = {}  # trial -> {scheme: record}, until the trial is whole

    def expect(self, t):
        self.records[t] = {}

    def take(self, t, name, rec):
        self.records[t][name] = rec

    def retired(self, rounds):
        """Take the records of the rounds that retired; hand over the trials now whole."""
        records = self.records
        for r in rounds:
            records[r.trial][r.name] = r.rec
        while records:
            t = min(records)
            if len(records[t]) < self.n:
                return
            self.out.trial(t, records.pop(t))
