"""The liar named: the workers a robust decoder flagged (``flagged``, code.<scheme>.robust) in
most of the trials that used their result.

Per worker, over every point and scheme of a results file that decoded robustly (its job's
``code.<scheme>.robust`` on at that point, or a flag raised: a plug-in's own screen): the trials
whose decode used its result and, of those, the ones that flagged it. A plain decode judges no
one, so it neither accuses a worker nor dilutes another decoder's accusation. A worker flagged
in more than SUSPECT of them is suspected; ``analyze`` prints one line for each, naming its rank
and host when the file is an MPI run's (its ``hosts`` attribute: rank 0's, rank 1's, ...), and
so do the end lines of ``run`` and ``simulate`` and the HTML report:

    suspected: rank 7 (worker 6, host gcc-host2), flagged in 97% of the 400 decodes that used
    its result
"""

import json

import numpy as np

from ..errors import JobError

SUSPECT = 0.5  # a worker flagged in more than half the trials that used it


def robust_schemes(results):
    """{point index: the schemes its job decodes robustly} of the job ``results`` records, or
    None when the file's job cannot be read (then every scheme counts)."""
    from ..job.parse import parse_job
    from ..job.rules import resolved_robust

    try:
        job = parse_job(results.config_toml or "")
    except JobError:
        return None
    return {p.index: {s for s in p.config.code.schemes if resolved_robust(p.config, s)[0]}
            for p in job.points}


def flag_counts(results):
    """(used, flagged): per worker index, the trials that used its result and those that
    flagged it, summed over every point and scheme of ``results`` (a files.reader.Results)
    that decoded robustly."""
    used = np.zeros(0, np.int64)
    flagged = np.zeros(0, np.int64)
    robust = robust_schemes(results)
    for point in results.points:
        for scheme in point.schemes:
            if robust is not None and scheme not in robust.get(point.index, ()) and not any(
                    np.any(b.get("flagged", False))
                    for b in results.blocks(point.index, scheme, ["flagged"])):
                continue
            for block in results.blocks(point.index, scheme, ["used", "flagged"]):
                if "flagged" not in block:  # a file from before robust decoding
                    break
                u = np.asarray(block["used"], bool)
                f = np.asarray(block["flagged"], bool) & u
                n = u.shape[1]
                if n > len(used):
                    used = np.pad(used, (0, n - len(used)))
                    flagged = np.pad(flagged, (0, n - len(flagged)))
                used[:n] += u.sum(0)
                flagged[:n] += f.sum(0)
    return used, flagged


def hosts_of(results):
    """The host of each rank (rank 0 first) of an MPI run's file, or []."""
    try:
        hosts = json.loads(results.attrs.get("hosts") or "[]")
    except (TypeError, ValueError):
        return []
    return hosts if isinstance(hosts, list) else []


def suspects(results):
    """[(worker, share flagged, trials used)] of the workers flagged in more than SUSPECT of
    the trials that used their result, most flagged first."""
    used, flagged = flag_counts(results)
    share = np.divide(flagged, used, out=np.zeros(len(used)), where=used > 0)
    named = [(int(w), float(share[w]), int(used[w])) for w in np.flatnonzero(share > SUSPECT)]
    return sorted(named, key=lambda s: -s[1])


def suspect_lines(results):
    """One "suspected: ..." line per suspected worker of ``results``."""
    hosts = hosts_of(results)
    lines = []
    for w, share, n in suspects(results):
        rank = w + 1
        if rank < len(hosts):
            who = f"rank {rank} (worker {w}, host {hosts[rank]})"
        else:
            who = f"worker {w}"
        lines.append(f"suspected: {who}, flagged in {100 * share:.0f}% of the {n} decodes that "
                     "used its result")
    return lines
