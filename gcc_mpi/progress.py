"""Progress on stderr: a bar on a terminal, a plain line every few seconds in a batch log."""

import sys
import time


class Progress:
    def __init__(self, total, *, quiet=False, stream=None, every=10.0):
        self.total, self.quiet = total, quiet
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.every = 0.2 if self.tty else every
        self.done = self.skipped = 0
        self.start = self.last = time.monotonic()

    def skip(self, n):
        """Trials already in the file (resume): counted as done, not in the rate."""
        self.done += n
        self.skipped += n

    def trial_done(self):
        self.done += 1
        now = time.monotonic()
        if not self.quiet and now - self.last >= self.every:
            self.last = now
            self._show(now)

    def _show(self, now, end="\r"):
        ran = self.done - self.skipped
        rate = ran / max(now - self.start, 1e-9)
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        frac = self.done / max(self.total, 1)
        text = f"{self.done}/{self.total} trials  {rate:.0f}/s  eta {eta:.0f} s"
        if self.tty:
            bar = "#" * int(30 * frac)
            self.stream.write(f"\r[{bar:<30}] {text}")
        else:
            self.stream.write(f"progress: {text}\n")
        self.stream.flush()

    def close(self):
        if not self.quiet and self.tty:
            self._show(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()
