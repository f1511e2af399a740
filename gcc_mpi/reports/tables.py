"""Aligned text tables, as the command line prints them (analyze, compare)."""

import json


def format_param(v):
    """A point parameter as a table shows it: strings as they are, others as JSON, - if None."""
    return "-" if v is None else v if isinstance(v, str) else json.dumps(v)


def aligned(head, body, left):
    """Text table of ``head`` and the ``body`` rows: the columns of ``left`` (names; an int n:
    the first n) left-aligned, the others (numbers) right-aligned, a rule under the head."""
    width = [max(len(str(c)) for c in col) for col in zip(head, *body)]
    left = set(range(left)) if isinstance(left, int) else set(left)

    def line(cells):
        return "  ".join(str(c).ljust(w) if i in left else str(c).rjust(w)
                         for i, (c, w) in enumerate(zip(cells, width))).rstrip()

    return "\n".join([line(head), line(["-" * w for w in width])] + [line(b) for b in body])


def ms(x):
    """Seconds as milliseconds with four significant figures or so (no exponent), - if None:
    what a tail percentile and its interval are shown with, narrow enough for three numbers
    in a column."""
    if x is None:
        return "-"
    v = 1e3 * x
    a = abs(v)
    return f"{v:.0f}" if a >= 1000 else f"{v:.1f}" if a >= 100 else f"{v:.2f}" if a >= 10 \
        else f"{v:.3f}"


TOO_FEW = "?"  # the end of a percentile's interval that the trials cannot bound
P99 = "p99 [ms] [95% CI]"  # the tail's column title: p99 with its interval (with_interval)


def with_interval(value, lo, hi):
    """A percentile (seconds) with its distribution-free 95 % interval, in ms:
    "103.2 [101.9, 104.5]"; an end the trials cannot bound is ``TOO_FEW`` ("20.10 [20.03, ?]")."""
    if value is None:
        return "-"
    return f"{ms(value)} [{ms(lo) if lo is not None else TOO_FEW}, " \
           f"{ms(hi) if hi is not None else TOO_FEW}]"


def tail_text(row, key):
    """``with_interval`` of ``row[key]`` and its ``<key>_lo``, ``<key>_hi``."""
    return with_interval(row.get(key), row.get(f"{key}_lo"), row.get(f"{key}_hi"))


def too_few_note(cells, q=0.99, name="p99"):
    """The line that explains ``TOO_FEW`` when a cell of ``cells`` shows it, else ""."""
    from .statistics import fewest_trials_for_upper

    if not any(str(c).endswith(f"{TOO_FEW}]") for c in cells):
        return ""
    return (f"{TOO_FEW} = too few trials to bound {name} from above (that takes "
            f"{fewest_trials_for_upper(q)}); [lo, hi] = its 95% distribution-free interval")

