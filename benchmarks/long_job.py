"""Long jobs: memory, time per trial and kills over runs of 10^5 to 10^6 trials (issue 26).

    python benchmarks/long_job.py [--cases sim40 sim1024 mpi kills readers] [--scale 1.0]
                                  [--kills 20] [--budget SECONDS] [--keep DIR]

The job is the digits MLP (K = 10) with bacc alone, S = N / 4 fixed stragglers (0.1 s late):

- ``sim40``:   ``simulate`` at N = 40 for 10^6 trials (a file of about 0.94 GB);
- ``sim1024``: ``simulate`` at N = 1024 for 10^5 trials (about 1.9 GB); then ``analyze --json``,
  ``analyze --plot``, ``analyze --html`` and ``merge`` of that file (``readers``: those alone, of
  the file an earlier ``sim1024`` left in ``--keep DIR``);
- ``mpi``:     ``run`` over MPI on 16 ranks, so N = 15 (rank 0 is the master: 16 ranks allow no
  more workers), for 10^6 trials;
- ``kills``:   ``simulate`` at N = 40 for 2 x 10^5 trials, killed with SIGKILL ``--kills`` times
  at random moments (0.3 to 4 s of trials after each start) and resumed each time (the same
  command with --resume), then run to the end and compared with an uninterrupted run.

For every run it prints the peak resident memory of the process that writes the file (the
simulator, or MPI rank 0: each rank runs under this script's ``--rss`` wrapper, which waits for
its child and reports its ``ru_maxrss``), the file's size, and the time per trial at the start
and at the end, with the exponent of elapsed time against trials fitted from 10^4 trials on (1:
a trial costs the same however long the file is), in wall-clock time and in CPU time of the
writing process (read from /proc at each progress shown: on a shared machine other work
changes it less than the wall clock). Those come from the progress the CLI redraws
every 0.2 s on a terminal (the run's stderr is a pseudo-terminal here). For each kill: whether
the file opened with plain h5py straight after it (before any gcc_mpi command touched it), whether
a commit's journal was left, and the work lost: trials done when it was killed (the progress
shown last) minus trials in the file, in seconds at the run's rate, plus the time since that
progress was shown (an upper bound). ``--scale`` multiplies every
trial count (0.01 for a quick look); ``--budget SECONDS`` stops a long run (sim40, sim1024, mpi)
with SIGTERM after that long, the clean stop, and prints its figures up to there (exit 143);
``--keep DIR`` writes the files there instead of a temporary folder (several GB at scale 1).
"""

import argparse
import os
import pty
import random
import re
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from launch import mpiexec, oversubscribe

HERE = Path(__file__).resolve().parent
JOB = HERE.parent / "jobs" / "digits-mlp.toml"
PROGRESS = re.compile(rb"(\d+)/(\d+) trials")


def job_sets(N, trials):
    return ["--set", f"code.workers={N}", "--set", 'code.schemes=["bacc"]',
            "--set", f"stragglers.count={N // 4}", "--set", f"job.trials={trials}"]


def gcc_mpi(*args):
    return [sys.executable, "-m", "gcc_mpi", *args]


class Run:
    """A command whose stderr is a pseudo-terminal: the progress it shows, as (time, trials)."""

    def __init__(self, cmd, rss_file=None, env=None, pid_file=None):
        self.pid_file, self.pid = pid_file, None
        self.cpu = []  # (CPU seconds of the writing process, trials) at each progress shown
        self.master, slave = pty.openpty()
        wrapped = cmd if rss_file is None else [sys.executable, __file__, "--rss", rss_file,
                                                "--", *cmd]
        self.proc = subprocess.Popen(wrapped, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=slave, env=env, start_new_session=True)
        os.close(slave)
        self.seen, self.text, self.start = [], b"", time.monotonic()

    def poll(self, timeout=0.2):
        """Read what the run showed; False once it has ended."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if ready:
            try:
                data = os.read(self.master, 1 << 16)
            except OSError:
                data = b""
            self.text = (self.text + data)[-20000:]
            for m in PROGRESS.finditer(data):
                self.seen.append((time.monotonic(), int(m.group(1))))
                cpu = self._cpu_seconds()
                if cpu is not None:
                    self.cpu.append((cpu, int(m.group(1))))
        return self.proc.poll() is None

    def _cpu_seconds(self):
        """User + system CPU seconds of the writing process (its pid from the --rss wrapper of
        rank 0, or of the only command), or None."""
        if self.pid is None and self.pid_file and os.path.exists(self.pid_file):
            self.pid = int(Path(self.pid_file).read_text() or 0) or None
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError, TypeError):
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def wait(self, budget=None):
        """Wait for the end; after ``budget`` seconds send SIGTERM (the clean stop) to it."""
        stopped = False
        while self.poll():
            if budget is not None and not stopped and time.monotonic() - self.start > budget:
                os.killpg(self.proc.pid, signal.SIGTERM)
                stopped = True
        code = self.proc.wait()
        os.close(self.master)
        return code

    def kill(self):
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        os.close(self.master)

    @property
    def trials(self):
        return self.seen[-1][1] if self.seen else 0


def rss_wrapper(out, cmd):
    """``--rss``: run ``cmd`` (inheriting every descriptor: an MPI rank's PMI connection) and
    write its peak resident memory in bytes to ``out`` (only on rank 0 under MPI)."""
    rank = os.environ.get("PMI_RANK", os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    signal.signal(signal.SIGTERM, lambda *_: None)  # --budget's SIGTERM is for the command
    proc = subprocess.Popen(cmd, close_fds=False)
    if rank == "0":
        Path(f"{out}.pid").write_text(str(proc.pid))
    _, status, usage = os.wait4(proc.pid, 0)
    if rank == "0":
        Path(out).write_text(str(usage.ru_maxrss * 1024))
    return os.waitstatus_to_exitcode(status)


def timing(seen, first=10**4):
    """(ms per trial over the first and the last tenth, exponent of elapsed time against trials
    from ``first`` trials on) of a run's progress: ``seen`` is [(seconds, trials)], wall-clock
    or CPU seconds."""
    t = np.array([s for s, _ in seen])
    n = np.array([k for _, k in seen], float)
    keep = np.r_[True, np.diff(n) > 0]
    t, n = t[keep], n[keep]
    if len(n) < 4:
        return None
    t0 = t[0] - (t[1] - t[0]) / (n[1] - n[0]) * n[0]  # when the first trial started
    tenth = n[-1] / 10
    early = np.searchsorted(n, tenth)
    late = np.searchsorted(n, n[-1] - tenth)
    ms = (1e3 * (t[early] - t0) / n[early], 1e3 * (t[-1] - t[late]) / (n[-1] - n[late]))
    fit = n >= first
    exponent = np.polyfit(np.log(n[fit]), np.log(t[fit] - t0), 1)[0] if fit.sum() > 3 else None
    return ms, exponent


def peak_of(cmd, cwd=None):
    """(exit code, peak resident memory in bytes, seconds) of a command run to its end."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024, time.monotonic() - t0


def mb(b):
    return f"{b / 1e6:.0f} MB"


def long_run(name, cmd, out, rss_file, wrap=True, budget=None):
    """Run ``cmd`` to its end or for ``budget`` seconds (under the --rss wrapper if ``wrap``;
    else it writes ``rss_file`` itself) and print its figures."""
    run = Run(cmd, rss_file if wrap else None, pid_file=f"{rss_file}.pid")
    code = run.wait(budget)
    rss = int(Path(rss_file).read_text()) if Path(rss_file).exists() else 0
    size = os.path.getsize(out) if os.path.exists(out) else 0
    figures = timing(run.seen)
    line = (f"{name}: exit {code} after {time.monotonic() - run.start:.0f} s, {run.trials} trials, "
            f"peak RSS {mb(rss)} (writing process), file {mb(size)}")
    if figures:
        (early, late), exponent = figures
        line += f", {early:.3f} ms/trial over the first tenth, {late:.3f} over the last"
        if exponent is not None:
            line += f", exponent {exponent:.3f} from 10^4 trials"
    figures = timing(run.cpu)
    if figures:  # CPU time of the writing process: what other work on the machine changes least
        (early, late), exponent = figures
        line += (f"; CPU of the writing process {early:.3f} ms/trial over the first tenth, "
                 f"{late:.3f} over the last")
        if exponent is not None:
            line += f", exponent {exponent:.3f} from 10^4 trials"
    print(line, flush=True)
    if code not in (0, 143):
        print(run.text.decode(errors="replace")[-2000:])
    return code


def readers(path, folder):
    """Peak memory of analyze (JSON, figures) and merge of a big file."""
    size = os.path.getsize(path)
    for label, cmd in [("analyze --json", gcc_mpi("analyze", str(path), "--json")),
                       ("analyze --plot", gcc_mpi("analyze", str(path), "--plot",
                                                  str(folder / "figures"))),
                       ("analyze --html", gcc_mpi("analyze", str(path), "--html",
                                                  str(folder / "report.html"))),
                       ("merge", gcc_mpi("merge", str(path), "-o", str(folder / "merged.h5"),
                                         "--overwrite"))]:
        code, rss, seconds = peak_of(cmd)
        print(f"{label} of a {mb(size)} file: exit {code}, peak RSS {mb(rss)}, {seconds:.0f} s",
              flush=True)
    same = same_results(path, folder / "merged.h5", timings=True)
    print(f"merged file equals its input: {same}", flush=True)


def plain_h5py_opens(path):
    code = ("import h5py, sys; f = h5py.File(sys.argv[1], 'r', locking=False); "
            "[len(f[p][s]['trial']) for p in f for s in f[p]]")
    return subprocess.run([sys.executable, "-c", code, str(path)],
                          capture_output=True).returncode == 0


def trials_in(path):
    from gcc_mpi.files.reader import ResultsFile

    with ResultsFile(path) as f:
        return min((f.trials(p.index, s) for p in f.points for s in p.schemes), default=0)


def same_results(a, b, timings=False):
    """Whether two complete files hold the same datasets (timings aside, unless ``timings``)."""
    from gcc_mpi.files.reader import mismatches, read_results

    return (read_results(a).complete and read_results(b).complete
            and not mismatches(a, b, ignore=() if timings else None))


def kills(folder, count, trials, seed=1):
    """``count`` SIGKILLs at random moments of one run, each resumed; then the end of the run,
    compared with an uninterrupted one."""
    rng = random.Random(seed)
    cut, full = folder / "cut.h5", folder / "full.h5"
    for old in (cut, Path(f"{cut}.journal")):
        if old.exists():
            old.unlink()
    sets = job_sets(40, trials)
    t0 = time.monotonic()
    code = Run(gcc_mpi("simulate", str(JOB), *sets, "-o", str(full), "--overwrite")).wait()
    seconds = time.monotonic() - t0
    print(f"kills: the uninterrupted run took {seconds:.0f} s (exit {code})", flush=True)
    lost, opened, journals = [], 0, 0
    for k in range(count):
        run = Run(gcc_mpi("simulate", str(JOB), *sets, "-o", str(cut), "--resume"))
        while run.poll() and not run.seen:
            pass
        begun, at = time.monotonic(), rng.uniform(0.3, 4.0)
        while run.poll() and time.monotonic() - begun < at:
            pass
        if run.proc.poll() is not None:
            print(f"kill {k + 1}: the run ended first")
            break
        done, (t_first, n_first), (t_last, n_last) = run.trials, run.seen[0], run.seen[-1]
        run.kill()
        unseen = time.monotonic() - t_last  # trials done since the progress shown last
        rate = (n_last - n_first) / max(t_last - t_first, 1e-9)
        journal = os.path.exists(f"{cut}.journal")
        plain = plain_h5py_opens(cut)
        kept = trials_in(cut)  # through gcc_mpi: finishes a commit a journal holds
        lost.append((done - kept) / rate + unseen if rate else 0.0)
        opened += plain
        journals += journal
        print(f"kill {k + 1}: shown {done} trials, the file holds {kept}: {lost[-1]:.2f} s of "
              f"work lost; plain h5py opened it: {plain}; journal left: {journal}", flush=True)
    code = Run(gcc_mpi("simulate", str(JOB), *sets, "-o", str(cut), "--resume")).wait()
    print(f"kills: {len(lost)} kills, plain h5py opened {opened} of the files, {journals} "
          f"journals left, work lost per kill at most {max(lost, default=0):.2f} s (mean "
          f"{np.mean(lost) if lost else 0:.2f}); resumed to the end: exit {code}, equal to the "
          f"uninterrupted run: {same_results(cut, full)}", flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--rss":
        sys.exit(rss_wrapper(sys.argv[2], sys.argv[4:]))
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", nargs="+", default=["sim40", "sim1024", "mpi", "kills"],
                    choices=["sim40", "sim1024", "mpi", "kills", "readers"])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--budget", type=float, metavar="SECONDS")
    ap.add_argument("--keep", metavar="DIR")
    args = ap.parse_args()
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    folder = Path(args.keep or tempfile.mkdtemp(prefix="long_job-"))
    folder.mkdir(parents=True, exist_ok=True)

    def n(trials):
        return max(10, int(trials * args.scale))

    print(f"# load average {os.getloadavg()[0]:.1f}; files in {folder}", flush=True)
    for case in args.cases:
        if case == "sim40":
            out = folder / "sim40.h5"
            long_run(f"simulate N = 40, {n(10**6)} trials", gcc_mpi(
                "simulate", str(JOB), *job_sets(40, n(10**6)), "-o", str(out), "--overwrite"),
                out, str(folder / "sim40.rss"), budget=args.budget)
        elif case == "sim1024":
            out = folder / "sim1024.h5"
            long_run(f"simulate N = 1024, {n(10**5)} trials", gcc_mpi(
                "simulate", str(JOB), *job_sets(1024, n(10**5)), "-o", str(out), "--overwrite"),
                out, str(folder / "sim1024.rss"), budget=args.budget)
            readers(out, folder)
        elif case == "mpi":
            out = folder / "mpi15.h5"
            cmd = [mpiexec(), *oversubscribe(), "-n", "16",
                   *gcc_mpi("run", str(JOB), *job_sets(15, n(10**6)), "-o", str(out),
                            "--overwrite")]
            rss = str(folder / "mpi15.rss")
            # every rank under the --rss wrapper: mpiexec -n 16 python long_job.py --rss F -- ...
            cmd = cmd[:cmd.index(sys.executable)] + [sys.executable, __file__, "--rss", rss,
                                                     "--"] + cmd[cmd.index(sys.executable):]
            long_run(f"run over MPI, 16 ranks, N = 15, {n(10**6)} trials", cmd, out, rss,
                     wrap=False, budget=args.budget)
        elif case == "readers":  # again, on the sim1024 file an earlier run left in --keep DIR
            readers(folder / "sim1024.h5", folder)
        elif case == "kills":
            kills(folder, args.kills, n(2 * 10**5))
    print("# commands: " + shlex.join(sys.argv))


if __name__ == "__main__":
    main()
