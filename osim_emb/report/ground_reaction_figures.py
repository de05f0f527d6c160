"""The figure of a trial's ground reactions (``osim-emb c3d-export --plot``), in the project's figure style: each
platform's force components against time, and the centres of pressure seen from above on the platforms' outlines."""

from __future__ import annotations

import numpy as np

from osim_emb.report import figure_style as fs

__all__ = ["ground_reaction_figure"]


def _axes(normal: np.ndarray) -> tuple[int, int, int]:
    """(vertical, plan a, plan b): the ground axis closest to the surface normal, then the other two."""
    up = int(np.argmax(np.abs(normal)))
    return (up, *(k for k in range(3) if k != up))


def ground_reaction_figure(plates, title: str):
    """(figure) of :class:`osim_emb.io.force_plates.ForcePlates` at the centre of pressure: forces (N) against time
    along the frame's axes (solid: the vertical one, closest to the surfaces' normal; dashed and dotted: the two
    horizontal ones), and the centre-of-pressure paths where there is contact, on the platforms' outlines."""
    if plates.location != "center_of_pressure":
        raise ValueError("the ground-reaction figure shows centres of pressure: move the wrenches there first")
    fig, axes = fs.figure("double", height=3.3, ncols=2, width_ratios=(1.6, 1.0))
    forces, plan = axes[0, 0], axes[0, 1]
    names = "xyz"
    up, a, b = _axes(plates.plates[0].normal)
    for i, p in enumerate(plates.plates):
        colour = fs.color(i)
        forces.plot(plates.time, p.force[:, up], color=colour, linestyle="-",
                    label=f"platform {p.number}: {names[up]} (vertical)")
        forces.plot(plates.time, p.force[:, a], color=colour, linestyle="--", label=f"platform {p.number}: {names[a]}")
        forces.plot(plates.time, p.force[:, b], color=colour, linestyle=":", label=f"platform {p.number}: {names[b]}")
        outline = np.vstack([p.corners, p.corners[:1]])
        plan.plot(outline[:, a], outline[:, b], color=fs.NEUTRALS[2], linewidth=0.8)
        plan.annotate(str(p.number), p.centre[[a, b]], color=fs.NEUTRALS[5], ha="center", va="center")
        contact = np.any(p.force != 0.0, axis=1)
        path = np.where(contact[:, None], p.point, np.nan)
        plan.plot(path[:, a], path[:, b], color=colour, linestyle="-")
    forces.set_xlabel("time (s)")
    forces.set_ylabel("ground reaction force (N)")
    forces.set_title(title, loc="left")
    plan.set_xlabel(f"{names[a]} (m)")
    plan.set_ylabel(f"{names[b]} (m)")
    plan.set_aspect("equal", adjustable="datalim")
    plan.set_title("centre of pressure", loc="left")
    fs.legend_below(fig)
    return fig
