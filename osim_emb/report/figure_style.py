"""The project's one figure style (CLI, validation harness, study scripts).

* colour-blind-safe Okabe–Ito palette, with line style and marker as a second cue (:func:`cue`);
* single-column (3.5 in) and double-column (7.2 in) widths; figures are made at print size, so every text
  is >= 7 pt as printed (:func:`check_figure` enforces it);
* TrueType fonts in PDF (``pdf.fonttype`` 42) and text kept as text in SVG (``svg.fonttype`` 'none');
* legends outside the data (:func:`legend_below`, :func:`legend_right`);
* no empty panels (checked on save); :func:`save` writes every requested format atomically.

Usage::

    from osim_emb.report import figure_style as fs
    fig, axes = fs.figure("double", nrows=2, height=4.0)
    axes[0, 0].plot(x, y, **fs.cue(0))
    fs.legend_below(fig)
    fs.save(fig, out / "name", ("pdf", "svg", "png"))
"""

from __future__ import annotations

import logging
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Sequence

log = logging.getLogger(__name__)
logging.getLogger("fontTools").setLevel(logging.WARNING)  # font subsetting chatter when saving PDFs

__all__ = ["PALETTE", "LINE_STYLES", "MARKERS", "SINGLE_COLUMN", "DOUBLE_COLUMN", "MIN_FONT_PT", "RC",
           "color", "line_style", "marker", "cue", "reference_style", "style", "figure", "legend_below",
           "legend_right", "check_figure", "save", "save_all", "EmptyPanelError"]

#: Okabe & Ito (2008) "Color universal design", ordered for contrast on white (yellow last).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#E69F00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
#: neutral colours allowed beside the palette (axes, grids, reference lines)
NEUTRALS = ("#000000", "#FFFFFF", "#808080", "#B0B0B0", "#D0D0D0", "#404040")
LINE_STYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 2)))
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
SINGLE_COLUMN = 3.5  # inches
DOUBLE_COLUMN = 7.2
MIN_FONT_PT = 7.0
WIDTHS = {"single": SINGLE_COLUMN, "double": DOUBLE_COLUMN}

RC = {
    "font.family": "DejaVu Sans",
    "font.size": 8.0,
    "axes.titlesize": 8.0,
    "axes.labelsize": 8.0,
    "xtick.labelsize": 7.0,
    "ytick.labelsize": 7.0,
    "legend.fontsize": 7.0,
    "legend.title_fontsize": 7.0,
    "figure.titlesize": 9.0,
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "svg.fonttype": "none",
    "axes.linewidth": 0.6,
    "lines.linewidth": 1.2,
    "lines.markersize": 3.5,
    "grid.linewidth": 0.4,
    "grid.color": "#D0D0D0",
    "axes.grid": True,
    "legend.frameon": False,
    "savefig.dpi": 300,
    "figure.dpi": 100,
    "image.cmap": "viridis",
    "axes.prop_cycle": __import__("cycler").cycler(color=list(PALETTE[:7])),  # "C0".."C6" are Okabe-Ito
}


def color(i: int) -> str:
    """Colour of series ``i`` (cycles through the palette)."""
    return PALETTE[i % len(PALETTE)]


def line_style(i: int):
    """Line style of series ``i``: changes when the colours repeat, so (colour, style) stays unique."""
    return LINE_STYLES[(i // len(PALETTE)) % len(LINE_STYLES)]


def marker(i: int) -> str:
    return MARKERS[i % len(MARKERS)]


def cue(i: int) -> dict:
    """Keyword arguments for ``ax.plot`` of series ``i``: colour plus line style (second cue)."""
    return {"color": color(i), "linestyle": line_style(i)}


#: each OpenSim reference its own line style and marker (drawn in the muscle's colour)
_REFERENCE_STYLES = {"package": ("-", None), "computeMomentArm": ("--", None),
                     "computeMomentArm_mvp": (":", None), "minus_dL_dq": ("-.", None),
                     "MuscleAnalysis": ("--", None), "getLength": ("--", None)}


def reference_style(reference: str, k: int = 0) -> dict:
    """Line style (and marker, for a reference without its own style) of a data source."""
    ls, mk = _REFERENCE_STYLES.get(reference, (LINE_STYLES[(k + 1) % len(LINE_STYLES)], MARKERS[k % len(MARKERS)]))
    out = {"linestyle": ls}
    if mk:
        out.update(marker=mk, markevery=0.1)
    return out


@contextmanager
def style():
    """The project's rcParams for the duration of a block (also applied by :func:`figure`)."""
    import matplotlib
    with matplotlib.rc_context(RC):
        yield


def figure(width: str | float = "double", height: float | None = None, nrows: int = 1, ncols: int = 1,
           **kwargs):
    """``(fig, axes)`` at print size: ``width`` 'single' (3.5 in), 'double' (7.2 in) or inches.

    ``axes`` is always a 2-D array; the layout is constrained (legends placed outside fit).  The figure is a
    plain ``matplotlib.figure.Figure`` (no pyplot state, no GUI backend needed).  The project's rcParams are
    applied (globally: legends, colour bars and texts added later follow them too)."""
    import matplotlib
    from matplotlib.figure import Figure
    matplotlib.rcParams.update(RC)
    w = WIDTHS.get(width, width) if isinstance(width, str) else float(width)
    if isinstance(w, str):
        raise ValueError(f"figure width {width!r}: use 'single', 'double' or inches")
    h = height if height is not None else min(w * 0.62 * nrows / max(ncols, 1) + 0.6, 9.5)
    layout = kwargs.pop("layout", "constrained")
    fig = Figure(figsize=(w, h), layout=layout)
    axes = fig.subplots(nrows, ncols, squeeze=False, **kwargs)
    return fig, axes


def legend_below(fig, handles=None, labels=None, ncol: int | None = None, **kwargs):
    """One legend for the figure, below the panels (never on data)."""
    if handles is None:
        handles, labels = _collect(fig)
    if not handles:
        return None
    if ncol is None:
        width = fig.get_size_inches()[0]
        longest = max(len(str(s)) for s in labels)
        ncol = max(1, min(len(labels), int(width / (0.45 + 0.065 * longest))))
    return fig.legend(handles, labels, loc="outside lower center", ncol=ncol, **kwargs)


def legend_right(fig, handles=None, labels=None, **kwargs):
    """One legend for the figure, right of the panels."""
    if handles is None:
        handles, labels = _collect(fig)
    if not handles:
        return None
    return fig.legend(handles, labels, loc="outside right upper", **kwargs)


def _collect(fig):
    seen = {}
    for ax in fig.axes:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            if not lab.startswith("_") and lab not in seen:
                seen[lab] = h
    return list(seen.values()), list(seen.keys())


class EmptyPanelError(ValueError):
    """A figure has a panel without data."""


def _has_data(ax) -> bool:
    return bool(ax.lines or ax.images or ax.collections or ax.patches or ax.containers)


def check_figure(fig, min_font_pt: float = MIN_FONT_PT, *, render: bool = False) -> None:
    """Refuse empty panels and text below ``min_font_pt`` (the figure is at print size); widen flat y ranges.

    The figure is laid out at its current dpi to find text cut off at its edge; ``render``: drawn in full by
    the Agg canvas instead (``fig.canvas`` then holds the image, see :func:`lay_out`)."""
    import numpy as np
    for ax in fig.axes:
        if not ax.get_visible() or not ax.axison:
            continue
        if getattr(ax, "_colorbar", None) is not None or ax.get_label() == "<colorbar>":
            continue
        if not _has_data(ax):
            raise EmptyPanelError(f"figure panel {ax.get_title() or ax.get_ylabel()!r} has no data")
        ys = [np.asarray(ln.get_ydata(), dtype=float) for ln in ax.lines if len(ln.get_ydata())]
        ys = np.concatenate(ys) if ys else np.empty(0)
        ys = ys[np.isfinite(ys)]
        if ax.get_yscale() == "linear" and len(ys) and not ax.images and np.ptp(ys) < 1e-12 * max(1, np.abs(ys).max()):
            ax.set_ylim(ys[0] - 1, ys[0] + 1)  # a flat line (e.g. zero moment arm): a readable axis around it
    small = []
    for t in fig.findobj(lambda a: hasattr(a, "get_fontsize") and hasattr(a, "get_text")):
        if t.get_visible() and t.get_text() and t.get_fontsize() < min_font_pt - 1e-9:
            small.append((t.get_text()[:30], t.get_fontsize()))
    if small:
        raise ValueError(f"text below {min_font_pt} pt at print size: {small[:5]}")
    # nothing cut off at the figure's edge
    renderer = lay_out(fig, render=render)
    w, h = fig.bbox.width, fig.bbox.height
    cut = []
    texts = list(fig.texts) + ([fig._suptitle] if fig._suptitle is not None else [])
    for lg in fig.legends:
        texts += list(lg.get_texts())
    for ax in fig.axes:  # titles, axis labels, annotations, legends (tick labels are the layout's business)
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label] + list(ax.texts)
        if ax.get_legend() is not None:
            texts += list(ax.get_legend().get_texts())
    for t in texts:
        if not (t.get_visible() and t.get_text()):
            continue
        bb = t.get_window_extent(renderer)
        if bb.x0 < -1 or bb.y0 < -1 or bb.x1 > w + 1 or bb.y1 > h + 1:
            cut.append(t.get_text()[:40])
    if cut:
        raise ValueError(f"text cut off at the figure's edge: {cut[:5]}")


def lay_out(fig, render: bool = False):
    """Place the figure's artists at the figure's current dpi (layout engine, tick labels, text extents)
    without rendering anything, or with ``render`` drawn in full on the Agg canvas (laid out, then rendered,
    in one draw: ``fig.canvas.buffer_rgba()`` is then the image a PNG at this dpi holds); return the Agg
    renderer used (for text extents)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    if render:
        canvas.draw()
        return canvas.get_renderer()
    renderer = canvas.get_renderer()
    with renderer._draw_disabled():
        fig.draw(renderer)
    return renderer


@contextmanager
def _dpi(fig, dpi: float):
    old = fig.dpi
    fig.dpi = dpi
    try:
        yield
    finally:
        fig.dpi = old


def save(fig, stem: str | Path, formats: Iterable[str] = ("pdf", "svg", "png"), *, check: bool = True,
         close: bool = True) -> list[Path]:
    """Write ``stem.<fmt>`` for every format atomically (temporary file, then rename); return the paths.

    The layout is computed once, at the raster resolution (``savefig.dpi``, with Agg's text extents, as
    ``savefig`` would for a PNG), and then frozen for every format: each ``savefig`` then draws the figure
    once, with no layout pass of its own (matplotlib's ``savefig`` runs a layout draw before each format).
    With a PNG among the formats that layout pass is the PNG's render itself (the PNG is written from the
    Agg canvas as matplotlib's ``print_png`` writes it)."""
    import matplotlib
    import matplotlib.image
    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    formats = [f.strip().lower().lstrip(".") for f in formats]
    written = []
    engine = fig.get_layout_engine()
    rendered = "png" in formats
    try:
        with matplotlib.rc_context({**RC, "savefig.bbox": "standard", "figure.autolayout": False,
                                    "figure.constrained_layout.use": False}):  # print size, whatever a script set
            with _dpi(fig, RC["savefig.dpi"]):
                if check:
                    check_figure(fig, render=rendered)
                elif engine is not None or rendered:
                    lay_out(fig, render=rendered)
            if engine is not None:
                fig.set_layout_engine(None)  # frozen: savefig then draws once per format, no layout draw
            for fmt in formats:
                target = stem.with_name(stem.name + "." + fmt)
                fd, tmp = tempfile.mkstemp(prefix="." + target.name + ".", dir=target.parent)
                os.close(fd)
                try:
                    if fmt == "png" and rendered:  # the canvas holds the PNG's image (drawn at savefig.dpi)
                        matplotlib.image.imsave(tmp, fig.canvas.buffer_rgba(), format="png", origin="upper",
                                                dpi=RC["savefig.dpi"])
                    else:
                        fig.savefig(tmp, format=fmt, dpi=RC["savefig.dpi"])
                    umask = os.umask(0)
                    os.umask(umask)
                    os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would make the figure private
                    os.replace(tmp, target)
                except BaseException:
                    Path(tmp).unlink(missing_ok=True)
                    raise
                written.append(target)
                log.debug("wrote %s", target)
    finally:
        if engine is not None and fig.get_layout_engine() is None:
            fig.set_layout_engine(engine)  # a figure saved again (or drawn on) lays out anew
        if close:
            import matplotlib.pyplot as plt
            plt.close(fig)  # a no-op for a figure pyplot does not manage
    return written


_PENDING: list = []  # the figures save_all's forked workers write (inherited, never pickled)


def _save_pending(i: int) -> list[str]:
    fig, stem, formats = _PENDING[i]
    return [str(p) for p in save(fig, stem, formats)]


def save_all(items: Sequence[tuple], formats: Iterable[str] = ("pdf", "svg", "png"), *, workers: int | None = None,
             progress: bool = False) -> list[Path]:
    """:func:`save` for each (figure, stem) in ``items``, on ``workers`` processes (default: the CPUs) forked from
    this one, so that the figures are inherited rather than pickled (Linux; elsewhere forking a process that has
    loaded GUI or system frameworks is unsafe); one process elsewhere or for one figure.  Returns the paths in the
    items' order; the figures are closed.  A worker that dies raises BrokenProcessPool (no hang)."""
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing
    import sys
    from osim_emb.progress import Progress
    items = list(items)
    formats = list(formats)
    n = min(len(items), workers or os.cpu_count() or 1)
    written: list[Path] = []
    with Progress("writing figures", len(items), enabled=progress, unit="figure") as bar:
        if n <= 1 or not sys.platform.startswith("linux"):
            for fig, stem in items:
                written += save(fig, stem, formats)
                bar.advance()
            return written
        _PENDING[:] = [(fig, stem, formats) for fig, stem in items]
        try:
            with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
                for paths in pool.map(_save_pending, range(len(items))):
                    written += [Path(p) for p in paths]
                    bar.advance()
        finally:
            _PENDING.clear()
            import matplotlib.pyplot as plt
            for fig, _ in items:
                plt.close(fig)
    return written


def pages(items: Sequence, per_page: int) -> list[Sequence]:
    """Split a long list (muscles of a heat map) into pages of at most ``per_page``, as even as possible."""
    per_page = max(1, int(per_page))
    n_pages = max(1, -(-len(items) // per_page))
    per_page = max(1, -(-len(items) // n_pages))
    return [items[i:i + per_page] for i in range(0, len(items), per_page)] or [items]
