"""Progress on stderr (rank 0 or the simulator): sweep points and trials done, rate and ETA — a
bar redrawn in place on a terminal, a plain line every ``every`` seconds in a batch log.

A display the user asked for (no ``--quiet``, ``run_simulation(progress=True)``), written to
its stream, not a log record: a bar redrawn with "\r" is no line a log handler could pass on,
and asking for progress shows it whatever the logging says."""

import sys
import time


def _duration(seconds):
    if seconds != seconds or seconds == float("inf"):
        return "?"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Progress:
    """``total`` trials over ``points`` sweep points; the runner calls ``start_point(k)`` (k-th
    point of this run, from 0), ``skip(n)`` for trials already in a resumed file,
    ``trial_done()`` after every trial and ``close()`` at the end."""

    def __init__(self, total, *, points=1, quiet=False, stream=None, every=10.0):
        self.total, self.points, self.quiet = total, points, quiet
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.every = 0.2 if self.tty else every
        self.done = self.skipped = 0
        self.point = 0
        self.start = self.last = time.monotonic()

    def start_point(self, k):
        self.point = k

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

    def text(self, now=None):
        now = time.monotonic() if now is None else now
        ran = self.done - self.skipped
        rate = ran / max(now - self.start, 1e-9)
        eta = (self.total - self.done) / rate if rate > 0 else float("inf")
        shown = f"{rate:.0f}" if rate >= 10 else f"{rate:.2g}"
        return (f"point {min(self.point + 1, self.points)}/{self.points}  {self.done}/{self.total} "
                f"trials  {shown}/s  eta {_duration(eta)}")

    def _show(self, now):
        text = self.text(now)
        if self.tty:
            bar = "#" * int(30 * self.done / max(self.total, 1))
            self.stream.write(f"\r[{bar:<30}] {text}  ")
        else:
            self.stream.write(f"progress: {text}\n")
        self.stream.flush()

    def close(self):
        if not self.quiet and self.tty:
            self._show(time.monotonic())
            self.stream.write("\n")
            self.stream.flush()
