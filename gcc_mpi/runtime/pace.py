"""How a rank sleeps while it waits for something: a back-off that doubles while nothing
happens, between bounds chosen for ranks that outnumber cores (``mpi.Waiter``)."""

import time

# Polite back-off (seconds). A sleep costs a wake-up (~10 us of CPU, and Linux rounds short
# sleeps up to ~0.1 ms); with 31 workers on 2 cores those wake-ups are most of the CPU a round
# uses, so each waiter polls only as often as it must:
SLEEP_MIN = 20e-6      # first sleep of the master (gather, drain): results come in bursts
SLEEP_GATHER = 250e-6  # longest sleep of the master while results are due (arrival resolution)
IDLE_FIRST = 500e-6    # first sleep of an idle worker: its next TASK is a round away at least
SLEEP_IDLE = 1e-3      # longest sleep of an idle rank: how late it may notice a new message


class Backoff:
    """Sleeps that double from ``lo`` up to ``hi`` while nothing happens; ``reset`` after
    something did."""

    __slots__ = ("lo", "hi", "t")

    def __init__(self, lo=SLEEP_MIN, hi=SLEEP_IDLE):
        self.lo, self.hi, self.t = lo, hi, lo

    def reset(self):
        self.t = self.lo

    def sleep(self, limit=None):
        time.sleep(self.t if limit is None else max(0.0, min(self.t, limit)))
        self.t = min(2 * self.t, self.hi)
