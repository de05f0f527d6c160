"""Figures of a moment-arm comparison, in the project style (:mod:`osim_emb.report.figure_style`).

* moment arm against the swept coordinate, muscles in groups of at most eight (one colour each): the
  package solid, each OpenSim reference in the muscle's colour with its own line style, the difference
  (package - OpenSim) in a panel beneath;
* a heat map of the worst difference per muscle and condition, split over pages of at most 45 muscles.

No figure without data: with no OpenSim reference there are no difference panels or heat maps.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Sequence

import numpy as np

from osim_emb.opensim.moment_arms import sweep_unit
from osim_emb.report import figure_style as fs

log = logging.getLogger(__name__)

__all__ = ["moment_arm_figures", "motion_figures", "moment_arm_curves", "error_heatmaps", "GROUP", "HEATMAP_ROWS"]

GROUP = 7  # muscles per moment-arm figure (one palette colour each; Okabe-Ito's yellow left out on white)
SPAN = 1e-6  # m: a muscle whose moment arm stays below this about a coordinate does not span it
HEATMAP_ROWS = 45  # muscles per heat-map page


def _label(model, name: str) -> str:
    return f"{name} ({sweep_unit(model, name)})"


def moment_arm_curves(result: dict, out: Path, formats: Sequence[str], *, muscles: Sequence[str] | None = None,
                      pairs: Sequence[tuple[str, str]] | None = None, title: str | None = None,
                      pending: list | None = None) -> list[Path]:
    """Moment arm (cm) against the swept coordinate for each (swept, moment-arm coordinate) pair (default: the
    swept coordinate itself), groups of :data:`GROUP` muscles, with a difference panel (mm) per reference."""
    model = result["model"]
    t = result["table"]
    refs = [r for r in result["references"]]
    muscles = list(muscles) if muscles else list(result["muscles"])
    swept = [s.coordinate for s in result["sweeps"]]
    if pairs is None:
        pairs = [(s, s) for s in swept if s in result["ma_coordinates"]] or \
                [(s, c) for s in swept for c in result["ma_coordinates"][:1]]
    written = []
    for s, c in pairs:
        d0 = t[(t.swept_coordinate == s) & (t.moment_arm_coordinate == c)]
        big = d0.groupby("muscle").package_m.apply(lambda x: x.abs().max())
        spanning = [m for m in muscles if big.get(m, 0.0) > SPAN]
        if not spanning:
            log.info("no muscle spans %s in the %s sweep: no figure", c, s)
            continue
        if len(spanning) < len(muscles):
            log.info("moment arms about %s: %d of %d muscles span it (the others are left out of the figure)",
                     c, len(spanning), len(muscles))
        groups = fs.pages(spanning, GROUP)
        for gi, group in enumerate(groups):
            nrows = 2 if refs else 1
            fig, axes = fs.figure("double", height=4.6 if refs else 3.2, nrows=nrows, sharex=True,
                                  gridspec_kw={"height_ratios": [2, 1]} if refs else None)
            top = axes[0, 0]
            x = f"sweep_value_{sweep_unit(model, s)}"
            # about a translation -dL/dq is a ratio (m/m), not a length: plotted as it is
            ratio = sweep_unit(model, c) == "mm"
            top_scale, diff_scale = (1.0, 1.0) if ratio else (100.0, 1000.0)
            for i, m in enumerate(group):
                dm = d0[d0.muscle == m]
                first = dm[dm.reference == dm.reference.iloc[0]]
                every = max(1, len(first) // 6)  # a marker per muscle, staggered: coinciding curves stay visible
                top.plot(first[x], top_scale * first.package_m, color=fs.color(i), linestyle="-", label=m,
                         marker=fs.marker(i), markersize=3.5, markevery=(min(i * every // len(group), len(first) - 1),
                                                                         every), fillstyle="none")
                for r in refs:
                    dr = dm[dm.reference == r]
                    st = fs.reference_style(r)
                    top.plot(dr[x], top_scale * dr.opensim_m, color=fs.color(i), lw=0.9, **st)
                    axes[1, 0].plot(dr[x], diff_scale * dr.difference_m, color=fs.color(i), lw=0.9, **st)
            top.set_ylabel(f"moment arm about\n{c} ({'m/m' if ratio else 'cm'})")  # OpenSim's name, as in the tables and heat maps
            axes[-1, 0].set_xlabel(_label(model, s))
            if refs:
                axes[1, 0].set_ylabel(f"package − OpenSim\n({'m/m' if ratio else 'mm'})")
            # legend: muscles by colour, sources by line style (outside the panels)
            from matplotlib.lines import Line2D
            handles = [Line2D([], [], color=fs.color(i), lw=1.6, marker=fs.marker(i), markersize=3.5, fillstyle="none")
                       for i in range(len(group))]
            labels = list(group)
            handles.append(Line2D([], [], color="#808080", linestyle="-"))
            labels.append("package" + (" (opensim_compat)" if result.get("opensim_compat") and refs else ""))
            for r in refs:
                handles.append(Line2D([], [], color="#808080", lw=0.9, **fs.reference_style(r)))
                labels.append(f"OpenSim {r} (top), package − it (bottom)")  # the style marks both panels
            fs.legend_below(fig, handles, labels)
            part = f" ({gi + 1}/{len(groups)})" if len(groups) > 1 else ""
            fig.suptitle(f"{title or model.name}: moment arms about {c}{part}")
            stem = f"moment_arm_{c}_vs_{s}" + (f"_{gi + 1}" if len(groups) > 1 else "")
            if pending is not None:  # saved by the caller (fs.save_all)
                pending.append((fig, out / stem))
            else:
                written += fs.save(fig, out / stem, formats)
    return written


def error_heatmaps(result: dict, out: Path, formats: Sequence[str], title: str | None = None,
                   pending: list | None = None) -> list[Path]:
    """log10 of the worst |package - OpenSim| per muscle (rows) and condition (columns), one page per
    :data:`HEATMAP_ROWS` muscles; points beside discontinuities are left out (marked in the summary)."""
    s = result["summary"]
    model = result["model"]
    written = []
    for ref in result["references"]:
        d = s[s.reference == ref]
        piv = d.pivot_table(index="muscle", columns=["swept_coordinate", "moment_arm_coordinate"],
                            values="max_abs_difference_smooth_m", aggfunc="max", sort=False)
        if piv.empty:
            continue
        muscles = list(dict.fromkeys(d.muscle))
        piv = piv.reindex(muscles)
        pages = fs.pages(muscles, HEATMAP_ROWS)
        ncols = piv.shape[1]
        width = "single" if ncols <= 4 else "double"
        for pi, page in enumerate(pages):
            p = piv.loc[page]
            longest = max(len(str(x)) for col in p.columns for x in col)
            h = 1.0 + 0.16 * len(page) + 0.065 * longest  # rows at >= 7 pt, vertical column labels, titles
            h = max(h, 2.4)  # the colour bar's label, at 7 pt, needs ~2 in (a model of one or two units)
            fig, axes = fs.figure(width, height=h)
            ax = axes[0, 0]
            ax.grid(False)
            with np.errstate(divide="ignore"):
                im = ax.imshow(np.log10(np.maximum(p.values, 1e-16)), aspect="auto", cmap="viridis", vmin=-16,
                               vmax=-1, interpolation="nearest")
            ax.set_yticks(range(len(page)), page)
            ax.set_xticks(range(ncols), [f"{a}\n{b}" for a, b in p.columns], rotation=90)
            ax.set_xlabel("swept / moment-arm coordinate")
            cb = fig.colorbar(im, ax=ax, shrink=min(1.0, 3.0 / h) if h > 3 else 1.0)
            cb.set_label("log10 max\n|package − OpenSim| (m)")
            part = f" ({pi + 1}/{len(pages)})" if len(pages) > 1 else ""
            fig.suptitle(f"{title or model.name}{part}\nworst difference, {ref}")
            stem = f"error_heatmap_{ref}" + (f"_{pi + 1}" if len(pages) > 1 else "")
            if pending is not None:
                pending.append((fig, out / stem))
            else:
                written += fs.save(fig, out / stem, formats)
    return written


def moment_arm_figures(result: dict, out: Path, formats: Sequence[str], title: str | None = None, *,
                       workers: int | None = None, progress: bool = False) -> list[Path]:
    """All figures of a comparison (curves always; heat maps only with OpenSim references), written on ``workers``
    processes (:func:`figure_style.save_all`; default the CPUs)."""
    out = Path(out)
    pending: list = []
    moment_arm_curves(result, out, formats, title=title, pending=pending)
    if result["references"]:
        error_heatmaps(result, out, formats, title=title, pending=pending)
    written = fs.save_all(pending, formats, workers=workers, progress=progress)
    log.info("%d figure files in %s", len(written), out)
    return written


def motion_figures(result: dict, out: Path, formats: Sequence[str]) -> list[Path]:
    """The figures of a motion comparison (:func:`osim_emb.opensim.motion_moment_arms.run_motion_study`):
    moment arm against time about each moment-arm coordinate, titled with the model and the motion file."""
    pairs = [("time", c) for c in result["ma_coordinates"]]
    return moment_arm_curves(result, Path(out), formats, pairs=pairs,
                             title=f"{result['model'].name}, {Path(result['motion_path']).name}")
