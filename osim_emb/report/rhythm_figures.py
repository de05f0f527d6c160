"""Figures of a fitted shoulder rhythm (:mod:`osim_emb.rhythm.fit`) with its data, in the project's figure style."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from osim_emb.report import figure_style as fs
from osim_emb.rhythm.fit import ELEVATION, PLANE, RhythmFit, _basis, read_rhythm_data

__all__ = ["plot_fit"]


#: label of the hatched part of a panel beyond the data (the surface extrapolated there)
EXTRAPOLATED = "beyond the data (extrapolated)"


def _mark_extrapolation(ax, x0: float, x1: float, lo: float, hi: float) -> None:
    """Hatch the parts of [x0, x1] outside the data's [lo, hi], with a boundary line at each data limit inside."""
    for a, b in ((x0, lo), (hi, x1)):
        if b - a > 1e-9:
            ax.axvspan(a, b, facecolor="none", edgecolor=fs.NEUTRALS[3], hatch="////", lw=0.0, zorder=0,
                       label=EXTRAPOLATED)
    for x in (lo, hi):
        if x0 < x < x1:
            ax.axvline(x, color=fs.NEUTRALS[2], lw=0.6, ls="--", zorder=0.5)
    ax.set_xlim(x0, x1)


def plot_fit(result: RhythmFit, data: pd.DataFrame | str | Path, path: str | Path,
             formats: tuple[str, ...] = ("pdf", "png", "svg")) -> list[Path]:
    """Each fitted surface with the data (each shoulder's fitted offset removed): against elevation in the
    frontal (0), scapular (30) and sagittal (90 deg) planes, and against the plane at 90 deg elevation.
    The parts of each panel beyond the data's domain (``result.domain_deg``), where the surface is extrapolated,
    are hatched, with a dashed line at the data's limit.  Drawn in the project's figure style (:mod:`osim_emb.report.figure_style`); ``path`` is the stem."""
    df = read_rhythm_data(data) if not isinstance(data, pd.DataFrame) else data
    deps = list(result.coefficients)
    planes = (0.0, 30.0, 90.0)
    fig, axes = fs.figure("double", nrows=len(deps), ncols=2, height=1.6 * len(deps) + 0.7)
    e_line = np.linspace(0, 180, 91)
    p_line = np.linspace(-90, 130, 111)
    (p_lo, p_hi), (_, e_hi) = result.domain_deg.values()  # the data's plane of elevation and elevation (deg)
    for row, dep in zip(axes, deps):
        d = df[df[dep].notna()]
        off = result.offsets[dep].loc[d["shoulder"]].to_numpy()
        y = d[dep].to_numpy(float) - np.degrees(off)
        c = result.coefficients[dep]
        not_horizontal = (d.get("task", pd.Series("", index=d.index)) != "horizontal flexion").to_numpy()
        for k, plane in enumerate(planes):
            m = (d[PLANE] == plane).to_numpy() & not_horizontal
            row[0].plot(d[ELEVATION][m], y[m], fs.marker(k), ms=1.5, color=fs.color(k), alpha=0.45, ls="none",
                        label=f"data, plane {plane:g}°")
            model = np.degrees(_basis(np.radians(np.full_like(e_line, plane)), np.radians(e_line), result.terms) @ c)
            row[0].plot(e_line, model, label=f"surface, plane {plane:g}°", **fs.cue(k))
        m = (d[ELEVATION] == 90.0).to_numpy()
        row[1].plot(d[PLANE][m], y[m], fs.marker(3), ms=1.5, color=fs.color(3), alpha=0.45, ls="none",
                    label="data at 90° elevation")
        model = np.degrees(_basis(np.radians(p_line), np.radians(np.full_like(p_line, 90.0)), result.terms) @ c)
        row[1].plot(p_line, model, label="surface at 90° elevation", **fs.cue(4))
        _mark_extrapolation(row[0], e_line[0], e_line[-1], 0.0, e_hi)
        _mark_extrapolation(row[1], p_line[0], p_line[-1], p_lo, p_hi)
        row[0].set_ylabel(f"{dep} (deg)")
        row[0].set_title(f"{dep}: leave-one-study-out RMS {result.rms_cv_deg[dep]:.1f}°", loc="left")
    axes[-1, 0].set_xlabel("elevation, shoulder_elv (deg)")
    axes[-1, 1].set_xlabel("plane of elevation, elv_angle (deg)")
    fs.legend_below(fig)
    return fs.save(fig, Path(path), formats)
