"""No text of a figure lies outside its canvas: every figure `analyze --plot` writes (the HTML
report embeds the same figures as SVG, gcc_mpi.reports.html) is drawn and each title, subtitle,
axis label, drawn tick label and legend entry is checked against the figure's bounds. Long
legend entries (a plug-in's name, two files compared) narrow the axes: a subtitle or an x label
centred on them then ran past the left edge (issue 34)."""

from pathlib import Path

import pytest

import gcc_mpi
from gcc_mpi.reports import canvas, plots

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "systematic-berrut.toml"


def texts(fig):
    """Every text the figure draws: the figure's own, and per axes its titles, axis labels,
    the tick labels within the view and the legend's."""
    found = list(fig.texts) + ([fig._suptitle] if fig._suptitle else [])
    for ax in fig.axes:
        found += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
        for axis, (lo, hi) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            found += [t.label1 for t in axis.get_major_ticks()
                      if min(lo, hi) <= t.get_loc() <= max(lo, hi)]
        legend = ax.get_legend()
        if legend:
            found += [*legend.get_texts(), legend.get_title()]
    return [t for t in found if t.get_visible() and t.get_text()]


def outside(fig):
    """(text, its extent in pixels) of every text not wholly inside the canvas."""
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)  # the constrained layout places the axes when the figure is drawn
    box = fig.bbox
    found = []
    for t in texts(fig):
        e = t.get_window_extent(renderer)
        if e.x0 < box.x0 - 0.5 or e.x1 > box.x1 + 0.5 or e.y0 < box.y0 - 0.5 or \
                e.y1 > box.y1 + 0.5:
            found.append((t.get_text()[:50], [round(v) for v in e.extents]))
    return found


@pytest.fixture(scope="module")
def runs():
    job = gcc_mpi.load_job(EXAMPLE, {"job.trials": 5})
    return [gcc_mpi.run_simulation(job),
            gcc_mpi.run_simulation(job.with_overrides({"stragglers.delay": 0.02}))]


@pytest.mark.parametrize("labels", [(), ("sim", "run")], ids=["one file", "two files"])
def test_no_text_lies_outside_a_figure(runs, labels):
    results = runs[:len(labels) or 1]
    rows = gcc_mpi.compare(results, list(labels)) if labels else gcc_mpi.summarize(results[0])
    _, made = plots.figures(results if labels else results[0], rows, labels)
    assert {kind for kind, _ in made} >= {"mse-vs-S", "latency-cdf", "nmse-distribution"}
    for kind, fig in made:
        assert texts(fig), kind
        assert outside(fig) == [], kind


def test_the_check_sees_a_text_past_the_edge():
    fig, ax = canvas.figure()
    ax.set_title("x" * 400, fontsize=7.5)  # wider than the canvas
    assert [text for text, _ in outside(fig)] == ["x" * 50]
