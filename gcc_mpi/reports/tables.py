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
