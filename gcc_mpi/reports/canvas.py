"""A figure's canvas and files: matplotlib's object-oriented API on the Agg canvas (no pyplot
state, no display), and the PNG and SVG files written the same way for the same figure."""

import io
import os
import weakref

from ..errors import JobError

SIZE, DPI = (7.5, 4.0), 100  # wide enough for the legend right of the axes
FORMATS = ("png", "svg")


def require_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise JobError("--plot", 'needs the optional extra: pip install "gcc_mpi[plot]"') from None


def figure():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=SIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def save(fig, path):
    """Write the figure by its file's suffix: an SVG (text as paths, no date and fixed ids,
    so the same figure gives the same file), or a PNG with a 256-colour palette (a third of
    the bytes of matplotlib's RGBA file for these line plots, and the same look)."""
    if os.fspath(path).endswith(".svg"):
        with open(path, "wb") as out:
            out.write(svg(fig))
        return path
    from PIL import Image  # matplotlib depends on Pillow

    fig.canvas.draw()
    rgba = Image.frombuffer("RGBA", fig.canvas.get_width_height(), fig.canvas.buffer_rgba())
    rgba.convert("RGB").quantize(256).save(path, optimize=True)
    return path


_SVG = weakref.WeakKeyDictionary()  # figure -> its SVG: a report and --plot draw it once


def svg(fig):
    """The figure as SVG bytes: text as paths (no font needed to show it), no date and fixed
    ids, so the same figure gives the same bytes."""
    if fig not in _SVG:
        from matplotlib import rc_context

        out = io.BytesIO()
        with rc_context({"svg.hashsalt": "gcc_mpi"}):
            fig.savefig(out, format="svg", metadata={"Date": None})
        _SVG[fig] = out.getvalue()
    return _SVG[fig]
