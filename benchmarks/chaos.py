"""Seeded random faults against real MPI runs, each under its own outer timeout: does every
run either complete or end with one line, and never hang?

    python benchmarks/chaos.py [--runs 40] [--seed 1] [--ranks 18] [--hosts 3] [--trials 100]
                               [--kinds kill,exit,stop,stop-for-good,term] [--timeout 240]
                               [--keep-going] [--only KIND:RANK:TRIAL] [--keep DIR] [-v]

Run it with the python of the environment whose MPI it is to test (MPICH's or Open MPI's
mpiexec is the one beside it). Under Open MPI every run uses ``mpiexec --with-ft ulfm``; under
MPICH plain hydra (``--keep-going`` adds ``-disable-auto-cleanup``). With ``--hosts 3`` the
runs go over the three hosts of .ci/hosts-up.sh (as root: bring them up first), ranks / 3 on
each, rank 0 on the first; ``--hosts 1``: all on this host.

The job: a python f (tanh of a fixed 16 x 4 linear map, written into the run folder with its
fault hooks), K = 8, N = ranks - 1, schemes uncoded (needs 8 given workers), bacc and gcc
(approximate: they must never fail a trial while N - S results come), 2 fixed stragglers 0.25 s
late (a STOP cuts that short, so which results are used is fixed by the seeds, unless the
machine's jitter reaches 0.25 s, and a resumed file can equal an uninterrupted one bit for bit).
Each run draws from its own seed:

- the fault: ``kill`` (SIGKILL), ``exit`` (the worker's f calls os._exit(3)), ``stop`` (SIGSTOP,
  SIGCONT 1-8 s later), ``stop-for-good`` (SIGSTOP, never continued), ``term`` (SIGTERM to rank
  0, then the same command with --resume);
- the victim: a host, then a worker rank on it (rank 0 for ``term``);
- the moment: at start-up (kill and exit only: from f's module while the worker builds f), in
  the first trial, mid-run, or in the last trials; signals are sent once the results file holds
  that many trials;
- ``decode.pipeline`` 1 or 4, ``--wait`` polite or busy.

``--only stop-for-good:6:20`` gives every run that one fault instead (rank 6 SIGSTOPped once 20
trials are in the file), the rest drawn as above.

Outcomes: *completed* (exit 0 — or 3, the code of the worker that called exit(3), which both
launchers return —, a complete file, bacc and gcc never failed); *ended with one line* (a
non-zero exit within 10 s of the fault — or of the victim's end, for exit — with a ``gcc_mpi:``
line about it, whose lines must not name another rank than the victim as dead — nor rank 0
for a worker's death —, the file readable; each run says whether they named the victim:
"right", "none" or "wrong" — or "no line" when a death ended the run without one);
*hung* (killed by the outer timeout: the failure this benchmark is for); anything else is
*wrong*. Every file left incomplete is resumed
(`--resume`, no fault) and compared with an uninterrupted run of the same job: a trial whose
received set is the same in both must be equal in every dataset but the timings; a trial whose
sets differ raced (under load a worker that is no straggler may answer later than the
stragglers' 0.25 s in one run) and is equal only if each file's record is its decode replayed in
this process from its own received set (``gcc_mpi.core.simulate.replay``). Printed: one line per run
(with its raced trials), then the table the issue asks for, its tallies per fault kind, and the
raced trials in all.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from launch import is_openmpi, mpiexec

from gcc_mpi.runtime.warden import process_gone
from gcc_mpi.core.simulate import replay

ROOT = Path(__file__).resolve().parent.parent
HOSTS_SSH = ROOT / ".ci" / "hosts-ssh"
BED = ("gcc-host1", "gcc-host2", "gcc-host3")
MARK = "GCC_MPI_CHAOS_RUN"
KINDS = ("kill", "exit", "stop", "stop-for-good", "term")
SCHEMES = ("uncoded", "bacc", "gcc")
APPROXIMATE = ("bacc", "gcc")
ENDS_WITHIN = 10.0  # seconds from a fault to the end of a run that cannot go on
TIMING = {"t_encode", "t_scatter", "t_wait", "t_decode", "latency", "arrival", "t_start", "t_end"}
# a raced trial's record against its replay (same_results). The replay computes f row by row as
# the workers do and decodes in the order they arrived: bit for bit the record on this machine
# (every field of all 100 trials of a run, measured); a result of another trial is far off.
REPLAY_RTOL = 1e-12

F = '''
import os
import signal

import numpy as np

RANK = next((os.environ[v] for v in ("PMI_RANK", "OMPI_COMM_WORLD_RANK") if v in os.environ), "0")
W = np.random.default_rng(7).standard_normal((16, 4)) / 4
VICTIM = os.environ.get("CHAOS_RANK") == RANK and RANK != "0"
HOW, AT = os.environ.get("CHAOS_HOW", ""), int(os.environ.get("CHAOS_AT", "-1"))
calls = 0


def die():
    if HOW == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(3)


if VICTIM and AT == 0:  # at start-up: while the worker builds f, before its READY
    die()


def f(X):
    global calls
    calls += 1
    if VICTIM and calls == AT:
        die()
    return np.tanh(X @ W)
'''

JOB = """
[job]
name = "chaos"
seed = 11
trials = {trials}
[data]
source = "gaussian"
dim = 16
batch = 8
[target]
kind = "python"
function = "chaos_f.py:f"
[code]
schemes = {schemes}
[stragglers]
model = "fixed"
count = 2
delay = 0.25
"""


def launcher(ompi, ranks, hosts, folder, keep_going):
    """The command start of an MPI run of ``ranks`` ranks (over the bed when ``hosts`` > 1)."""
    options = (["--with-ft", "ulfm"] if ompi else
               (["-disable-auto-cleanup"] if keep_going else []))
    if hosts == 1:
        return [mpiexec(), *(["--oversubscribe"] if ompi else []), *options, "-n", str(ranks)]
    per = ranks // hosts
    enter = [str(HOSTS_SSH), "--argv", BED[0]]
    if ompi:
        (folder / "hostfile").write_text("".join(f"{h} slots={per}\n" for h in BED[:hosts]))
        return enter + [mpiexec(), "--prtemca", "plm_ssh_agent", str(HOSTS_SSH), "--hostfile",
                        str(folder / "hostfile"), "--map-by", f"ppr:{per}:node", "--bind-to",
                        "none", *options, "-n", str(ranks)]
    return enter + [mpiexec(), "-launcher", "ssh", "-launcher-exec", str(HOSTS_SSH), "-hosts",
                    ",".join(f"{h}:{per}" for h in BED[:hosts]), *options, "-n", str(ranks)]


def processes(mark):
    """Pids of the processes whose environment holds ``MARK=mark``."""
    needle, found = f"{MARK}={mark}".encode(), []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            pass
    return found


def ranks_of(err):
    """{rank: (pid, host)} from rank 0's "ranks by host and pid" line (None before it)."""
    from gcc_mpi.runtime.startup import read_pid_map

    m = re.search(r"ranks by host and pid: (.*)", err)
    return read_pid_map(m.group(1)) if m else None


def trials_in(path):
    """Trials in the file's last commit, read with plain h5py and no lock: the trigger of a
    fault. Not through gcc_mpi.files.reader: it holds a reader's lock while it reads (about
    10 ms a poll here), and a commit that finds a reader writes its pages into the journal only
    (gcc_mpi.files.journal), so polling every 20 ms left a journal beside the file at 96 of
    364 polls of a 60-trial run, against 0 of 683 polls this way: the faults would land on
    another writer than a user's job has. Plain h5py opens the last commit (a poll that meets a
    commit's sub-millisecond in-place write may read a mix: then it counts 0 or a commit's
    count)."""
    import h5py

    try:
        with h5py.File(path, "r") as f:
            return min((len(g["trial"]) for g in f["point_000"].values()), default=0)
    except (OSError, KeyError):
        return 0


class Run:
    """One launch of the job in ``folder``, its processes marked; ``wait`` bounded."""

    def __init__(self, cmd, folder, env, name):
        self.mark, self.folder = uuid.uuid4().hex, folder
        self.err_path = folder / f"{name}.err"
        full = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
                    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", **env, **{MARK: self.mark})
        with open(folder / f"{name}.out", "w") as out, open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(cmd, cwd=folder, env=full, stdout=out, stderr=err,
                                         start_new_session=True)
        self.t0 = time.monotonic()

    def err(self):
        return self.err_path.read_text(errors="replace")

    def done(self):
        return self.proc.poll() is not None

    def wait(self, until):
        """The exit code, or None when ``until`` (time.monotonic()) passed first: then every
        process of the run is killed, on every host."""
        while not self.done():
            if time.monotonic() > until:
                self.kill()
                return None
            time.sleep(0.05)
        return self.proc.returncode

    def kill(self):
        for pid in [self.proc.pid, *processes(self.mark)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()

    def left(self):
        """Processes of the run still there 10 s after it ended (killed, and returned)."""
        until = time.monotonic() + 10
        while (left := processes(self.mark)) and time.monotonic() < until:
            time.sleep(0.1)
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return left


def draw(rng, kinds, ranks, hosts, trials):
    """One run's fault, from its own generator."""
    kind = str(rng.choice(kinds))
    per = ranks // hosts
    if kind == "term":
        victim = 0
    else:
        host = int(rng.integers(hosts))
        victim = int(rng.choice([r for r in range(host * per, (host + 1) * per) if r > 0]))
    moments = ["first", "mid", "last"] + (["start-up"] if kind in ("kill", "exit") else [])
    moment = str(rng.choice(moments))
    at = {"start-up": 0, "first": 0, "mid": int(rng.integers(5, trials - 20)),
          "last": int(rng.integers(trials - 3, trials))}[moment]
    return dict(kind=kind, victim=victim, moment=moment, at=at,
                pipeline=int(rng.choice([1, 4])), wait=str(rng.choice(["polite", "busy"],
                                                                      p=[0.75, 0.25])),
                pause=float(rng.uniform(1, 8)))


def sets(fault, trials):
    return ["--set", f"job.trials={trials}", "--set", f"decode.pipeline={fault['pipeline']}",
            "--wait", fault["wait"]]


def same_results(a, b):
    """(equal, raced trials, the first difference or "") of a resumed file ``a`` and an
    uninterrupted ``b``, each in its job's folder (its f beside it). A trial whose received
    sets (``used``) agree in both must be equal in every dataset but the timings. A trial whose
    sets differ is a race of arrivals (under load a worker that is no straggler can answer
    later than the stragglers' 0.25 s in one of the runs): it is equal only if each file's
    record is the decode replayed in this process from its own used set
    (gcc_mpi.core.simulate.replay:
    every field the encode and the decode set, to REPLAY_RTOL), and the rest (delays, erasures)
    is equal in both."""
    from gcc_mpi.files.reader import read_results

    files = [read_results(a, whole=True), read_results(b, whole=True)]
    if not all(f.complete for f in files):
        return False, 0, "not complete"
    schemes = [f.points[0].schemes for f in files]
    if list(schemes[0]) != list(schemes[1]):
        return False, 0, f"schemes {list(schemes[0])} and {list(schemes[1])}"
    setups = [None, None]
    raced, diffs = 0, []
    for scheme in schemes[1]:
        x, y = schemes[0][scheme], schemes[1][scheme]
        if set(x) != set(y) or not np.array_equal(x["trial"], y["trial"]):
            diffs.append(f"{scheme}: other datasets or trials")
            continue
        keys = sorted(set(y) - TIMING)
        for t in range(len(y["trial"])):
            if np.array_equal(x["used"][t], y["used"][t]):
                diffs += [f"{scheme} trial {t}: {k}" for k in keys if not _same(x[k][t], y[k][t])]
                continue
            raced += 1
            for i, (f, path, rec) in enumerate(zip(files, (a, b), (x, y))):
                if setups[i] is None:
                    setups[i] = _setup(f, path)
                again = replay(setups[i], 0, int(rec["trial"][t]), scheme, rec["used"][t],
                               rec["arrival"][t])
                diffs += [f"{scheme} trial {t} ({'resumed' if i == 0 else 'uninterrupted'}, "
                          f"raced): {k} {rec[k][t]} replayed {again[k]}"
                          for k in keys if k in again and not _same(rec[k][t], again[k],
                                                                    REPLAY_RTOL)]
            diffs += [f"{scheme} trial {t} (raced): {k}" for k in keys
                      if k not in again and not _same(x[k][t], y[k][t])]
    return not diffs, raced, diffs[0] if diffs else ""


def _same(u, v, rtol=0.0):
    """Equal values (NaN equal to NaN); floats to ``rtol`` relative."""
    u, v = np.asarray(u), np.asarray(v)
    if u.shape != v.shape:
        return False
    if u.dtype.kind != "f" and v.dtype.kind != "f":
        return bool(np.all(u == v))
    u, v = u.astype(float), v.astype(float)
    nan = np.isnan(u)
    return (np.array_equal(nan, np.isnan(v))
            and np.allclose(u[~nan], v[~nan], rtol=rtol, atol=0.0))


def _setup(results, path):
    """The PointSetup of a results file's first point, from the job it records (its f beside it)."""
    from gcc_mpi.job.parse import parse_job
    from gcc_mpi.core.point import PointSetup

    job = parse_job(results.config_toml, base_dir=Path(path).parent)
    return PointSetup.build(job.points[0].config, job.base_dir)


def named_dead(lines):
    """The ranks gcc_mpi's ``lines`` say died (or ended first): "rank R (worker ...) died",
    "ranks A, B ended at the same moment", "...; ranks A, B died", a host's warden's "rank R
    (pid P) on H died ... while MPI started", the witness's "rank 0 ended before the job
    did" and the ending's "not every worker took its EXIT: rank R (worker ...) did not" (a
    line that blames rank 0 for a worker's death names the wrong rank too)."""
    found = set()
    for x in lines:
        if not x.startswith("gcc_mpi:"):
            continue
        for m in re.finditer(r"\brank (\d+) \(worker [^)]*\) died|\branks ([\d, ]+?) "
                             r"(?:ended at the same moment|died)|\brank (0) ended before", x):
            found |= {int(r) for r in re.findall(r"\d+", next(g for g in m.groups() if g))}
        if "took its EXIT:" in x:  # the ending names the ranks that stood in its way
            found |= {int(r) for r in re.findall(r"\b(\d+) \(worker ", x)}
        if "while MPI started" in x:
            found |= {int(r) for r in re.findall(r"\brank (\d+) \(pid \d+\)", x)}
    return found


def failed_trials(path):
    import h5py

    with h5py.File(path, "r") as f:
        return {s: int(np.count_nonzero(g["failed"][()])) for s, g in f["point_000"].items()}


def one_run(i, fault, args, base, folder, reference):
    """Launch, fault, classify; returns the run's row."""
    env = {}
    if fault["kind"] in ("kill", "exit") and fault["moment"] == "start-up":
        env = {"CHAOS_RANK": str(fault["victim"]), "CHAOS_AT": "0", "CHAOS_HOW": fault["kind"]}
    elif fault["kind"] == "exit":  # at about trial ``at``: each worker gets ~3 tasks a trial
        env = {"CHAOS_RANK": str(fault["victim"]), "CHAOS_AT": str(3 * fault["at"] + 1),
               "CHAOS_HOW": "exit"}
    out = folder / "run.h5"
    run = Run([*base, sys.executable, "-m", "gcc_mpi", "run", "chaos.toml", "-o", str(out),
               "-q", *sets(fault, args.trials)], folder, env, "run")
    until = run.t0 + args.timeout
    t_fault = None
    pid = None
    while not run.done() and time.monotonic() < until:
        ranks = ranks_of(run.err())
        if env:  # the hook: the fault is the victim's end (unknown pid at start-up)
            if fault["moment"] == "start-up":
                t_fault = t_fault or run.t0
                break
            if ranks is not None:
                pid = ranks[fault["victim"]][0]
                if process_gone(pid):
                    t_fault = time.monotonic()
                    break
        elif ranks is not None and trials_in(out) >= fault["at"]:
            pid = ranks[fault["victim"]][0]
            sig = {"kill": signal.SIGKILL, "stop": signal.SIGSTOP, "stop-for-good":
                   signal.SIGSTOP, "term": signal.SIGTERM}[fault["kind"]]
            os.kill(pid, sig)
            t_fault = time.monotonic()
            break
        time.sleep(0.02)
    if fault["kind"] == "stop" and t_fault is not None:
        while not run.done() and time.monotonic() < t_fault + fault["pause"]:
            time.sleep(0.05)
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    code = run.wait(until)
    t_end = time.monotonic()
    left = run.left() if code is not None else []
    err = run.err()
    row = dict(run=i, **fault, code=code, left=len(left),
               after=None if t_fault is None else t_end - t_fault)
    complete = out.exists() and _complete(out)
    row["readable"] = out.exists() and _readable(out)
    row["failed"] = failed_trials(out) if complete else {}
    # ours, or the launcher's when it ended the job (it names the host and pid)
    lines = [x for x in err.splitlines() if (x.startswith("gcc_mpi:") and "ranks by host" not in x
             and "ULFM fault tolerance" not in x and "rounds," not in x)
             or "BAD TERMINATION" in x or re.search(r"exited on\s+signal", x)]
    row["said"] = lines[-1][:150] if lines else ""
    if code is None:
        row["outcome"] = "hung"
    elif (code == 0 or (code == 3 and fault["kind"] == "exit")) and complete and not any(
            row["failed"].get(s) for s in APPROXIMATE):
        row["outcome"] = "completed"  # the launchers return the code of a rank that exit()ed
    elif (code != 0 and lines and _readable(out) and t_fault is not None
          and row["after"] <= ENDS_WITHIN) or (code == 143 and fault["kind"] == "term"):
        row["outcome"] = "one line"
    else:
        row["outcome"] = "wrong"
    row["named"] = named_dead(lines) if fault["kind"] in ("kill", "exit") else set()
    # a death that ended the run: no gcc_mpi line ("no line": under plain hydra a death on
    # another host than rank 0's), or one naming the rank hit ("right"), only others ("wrong":
    # then the run is wrong) or no rank at all ("none")?
    row["naming"] = ("-" if fault["kind"] not in ("kill", "exit") or code in (None, 0, 3)
                     else "no line" if not any(x.startswith("gcc_mpi:") for x in lines)
                     else "right" if fault["victim"] in row["named"]
                     else "wrong" if row["named"] else "none")
    if row["naming"] == "wrong":
        row["outcome"] = "wrong"  # its line names another rank than the one that died
    if left:
        row["outcome"] = "wrong"  # a process outlived the run
    row["resumed"], row["raced"], row["differs"] = None, 0, ""
    if code is not None and not complete and _readable(out):
        again = Run([*base, sys.executable, "-m", "gcc_mpi", "run", "chaos.toml", "-o",
                     str(out), "-q", "--resume", *sets(fault, args.trials)], folder, {}, "resume")
        if again.wait(time.monotonic() + args.timeout) == 0:
            row["resumed"], row["raced"], row["differs"] = same_results(
                out, reference[fault["pipeline"]])
        else:
            row["resumed"], row["differs"] = False, "the resumed run failed"
            again.kill()
    return row


def _complete(path):
    import h5py

    try:
        with h5py.File(path, "r") as f:
            return bool(f.attrs["complete"])
    except OSError:
        return False


def _readable(path):
    import h5py

    try:
        with h5py.File(path, "r"):
            return True
    except OSError:
        return False


def job_folder(folder, ompi, args):
    """A run's folder with the job and its f; (the folder, the launch's command start)."""
    folder.mkdir()
    (folder / "chaos_f.py").write_text(F)
    (folder / "chaos.toml").write_text(JOB.format(trials=args.trials,
                                                  schemes=json.dumps(list(SCHEMES))))
    return folder, launcher(ompi, args.ranks, args.hosts, folder, args.keep_going)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=40)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--ranks", type=int, default=18)
    p.add_argument("--hosts", type=int, default=3, choices=(1, 2, 3))
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--timeout", type=float, default=240.0, help="outer timeout of a run, s")
    p.add_argument("--keep-going", action="store_true",
                   help="MPICH: mpiexec -disable-auto-cleanup")
    p.add_argument("--only", help="KIND:RANK:TRIAL, the fault of every run")
    p.add_argument("--keep", type=Path, help="keep each run's folder under DIR")
    p.add_argument("-v", action="store_true", help="print each run's last gcc_mpi line")
    args = p.parse_args()
    kinds = args.kinds.split(",")
    if set(kinds) - set(KINDS) or args.ranks % args.hosts or args.trials < 30:
        p.error(f"--kinds from {','.join(KINDS)}; --ranks a multiple of --hosts; --trials >= 30")
    ompi = is_openmpi()
    if args.hosts > 1 and subprocess.run([str(HOSTS_SSH), BED[0], "true"]).returncode != 0:
        sys.exit("chaos: the hosts are not up: run .ci/hosts-up.sh (as root) first")
    top = Path(tempfile.mkdtemp(prefix="chaos-"))
    print(f"# chaos: {args.runs} runs, seed {args.seed}, {args.ranks} ranks on {args.hosts} "
          f"host(s), {args.trials} trials, {'Open MPI --with-ft ulfm' if ompi else 'MPICH'}"
          f"{' -disable-auto-cleanup' if args.keep_going and not ompi else ''}, outer timeout "
          f"{args.timeout:g} s, load {os.getloadavg()[0]:.1f}", flush=True)
    reference = {}
    for depth in (1, 4):  # the uninterrupted runs the resumed files are compared with
        folder, base = job_folder(top / f"reference-{depth}", ompi, args)
        ref = Run([*base, sys.executable, "-m", "gcc_mpi", "run", "chaos.toml", "-o", "run.h5",
                   "-q", *sets(dict(pipeline=depth, wait="polite"), args.trials)], folder, {},
                  "run")
        if ref.wait(time.monotonic() + args.timeout) != 0:
            sys.exit(f"chaos: the uninterrupted run failed: {ref.err()[-2000:]}")
        reference[depth] = folder / "run.h5"
    rows = []
    for i in range(args.runs):
        fault = draw(np.random.default_rng([args.seed, i]), kinds, args.ranks, args.hosts,
                     args.trials)
        if args.only:
            kind, victim, at = args.only.split(":")
            fault.update(kind=kind, victim=int(victim), at=int(at), moment="given")
        folder, base = job_folder(top / f"run-{i:03d}", ompi, args)
        row = one_run(i, fault, args, base, folder, reference)
        rows.append(row)
        after = "-" if row["after"] is None else f"{row['after']:.1f} s"
        print(f"run {i:3d}: {row['kind']:13s} rank {row['victim']:2d} at {row['moment']:8s} "
              f"({row['at']:3d}) pipeline {row['pipeline']} {row['wait']:6s} -> "
              f"{row['outcome']:9s} exit {row['code']} after fault {after}; named "
              f"{row['naming']}; failed "
              f"{row['failed'] or '-'}; resumed equal {row['resumed']}"
              f"{'' if row['resumed'] is None else ', raced trials ' + str(row['raced'])}",
              flush=True)
        if args.v and row["said"]:
            print(f"         {row['said']}", flush=True)
        if row["named"] and row["victim"] not in row["named"]:
            print(f"         the line names rank(s) {sorted(row['named'])} dead, not the victim "
                  f"{row['victim']}", flush=True)
        if args.v and row["differs"]:
            print(f"         resumed file differs: {row['differs'][:300]}", flush=True)
        if args.keep:
            shutil.copytree(folder, args.keep / folder.name, dirs_exist_ok=True)
        shutil.rmtree(folder)
    if args.keep:  # the uninterrupted runs the resumed files were compared with
        for depth in (1, 4):
            shutil.copytree(top / f"reference-{depth}", args.keep / f"reference-{depth}",
                            dirs_exist_ok=True)
    shutil.rmtree(top)
    report(rows)


def report(rows):
    def tally(rs):
        resumed = [r["resumed"] for r in rs if r["resumed"] is not None]
        failed = {s: sum(r["failed"].get(s, 0) for r in rs) for s in SCHEMES}
        return (f"{len(rs):4d} {sum(r['outcome'] == 'completed' for r in rs):9d} "
                f"{sum(r['outcome'] == 'one line' for r in rs):8d} "
                f"{sum(r['outcome'] == 'hung' for r in rs):4d} "
                f"{sum(r['outcome'] == 'wrong' for r in rs):5d} "
                f"{sum(r['naming'] == 'right' for r in rs):5d}/"
                f"{sum(r['naming'] not in ('-', 'no line') for r in rs):<3d} "
                f"{' '.join(f'{s} {failed[s]}' for s in SCHEMES):28s} "
                f"{sum(resumed)}/{len(resumed)}")
    print(f"\n{'':14s}runs completed one-line hung wrong named trials failed per scheme     "
          "resumed = uninterrupted")
    print(f"{'all':14s}{tally(rows)}")
    for kind in KINDS:
        mine = [r for r in rows if r["kind"] == kind]
        if mine:
            print(f"{kind:14s}{tally(mine)}")
    slow = [r["after"] for r in rows if r["outcome"] == "one line" and r["after"] is not None]
    if slow:
        print(f"ended with one line: {max(slow):.1f} s at most from the fault to the end")
    ended = [r for r in rows if r["outcome"] != "completed" and r["code"] is not None
             and r["after"] is not None]
    if ended:
        print(f"not completed: {len(ended)} runs, each ended within "
              f"{max(r['after'] for r in ended):.1f} s of its fault, "
              f"{sum(r['readable'] for r in ended)} of their files readable")
    resumed = [r for r in rows if r["resumed"] is not None]
    if resumed:
        raced = [r for r in resumed if r["raced"]]
        print(f"resumed files: {len(resumed)}; {sum(r['raced'] for r in resumed)} trials raced "
              f"in all (received sets that differ from the uninterrupted run's), in "
              f"{len(raced)} files, {sum(bool(r['resumed']) for r in raced)} of them "
              "replay-exact")


if __name__ == "__main__":
    main()
