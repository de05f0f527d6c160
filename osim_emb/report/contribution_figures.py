"""Stacked contributions of each variable to the joint torques and reactions of a planar chain (the seed's
point: Eqs 9, 10, 12, 23, 24), from the table of :func:`osim_emb.seeds.planar.contributions.contributions`."""

from __future__ import annotations

import numpy as np
import pandas as pd

from osim_emb.report import figure_style as fs

__all__ = ["plot_stacked_contributions", "plot_contributions"]


def _stack(ax, x, values: dict, colors: dict, total=None, label_total="total"):
    """Stacked areas: positive parts upward from 0, negative parts downward."""
    pos = np.zeros_like(x, dtype=float)
    neg = np.zeros_like(x, dtype=float)
    for name, v in values.items():
        vp = np.clip(v, 0, None)
        vn = np.clip(v, None, 0)
        c = colors[name]
        style = dict(c) if isinstance(c, dict) else {"color": c}  # a colour, or fill_between keywords
        style.setdefault("linewidth", 0)
        ax.fill_between(x, pos, pos + vp, label=name, **style)
        ax.fill_between(x, neg, neg + vn, **style)
        pos = pos + vp
        neg = neg + vn
    if total is not None:
        ax.plot(x, total, color="k", lw=1.4, label=label_total)
    ax.axhline(0.0, color="#808080", lw=0.6)


def plot_stacked_contributions(df: pd.DataFrame, quantity: str = "torque", joints=None, joint_names=None,
                               max_sources: int = 8, axes=None, colors=None, ylabel=None, legend=True):
    """Stacked contributions of the sources to ``quantity`` at each joint, one panel per joint.

    The ``max_sources`` sources of largest peak magnitude (over all panels) are
    drawn individually, the rest are summed into ``"other"``; the black line is
    the total.  ``df`` comes from :func:`osim_emb.seeds.planar.contributions.contributions`.  Returns the figure.
    """
    d = df[df["quantity"] == quantity]
    if d.empty:
        raise ValueError(f"no rows with quantity {quantity!r}")
    xcol = "time" if "time" in d.columns else "state"
    joints = sorted(d["joint"].unique()) if joints is None else list(joints)
    wide = d.pivot_table(index=[xcol, "joint"], columns="source", values="value", aggfunc="sum", observed=True)
    peak = wide.abs().max().sort_values(ascending=False)
    peak = peak[peak > 0]
    keep = list(peak.index[:max_sources])
    rest = list(peak.index[max_sources:])
    if colors is None:  # the project's palette without black (the total); hatched when the colours repeat
        fills = [c for c in fs.PALETTE if c != "#000000"]
        hatches = (None, "////", "....", "xxxx")
        colors = {s: {"facecolor": fills[i % len(fills)], "edgecolor": "#FFFFFF",
                      "hatch": hatches[(i // len(fills)) % len(hatches)]} for i, s in enumerate(keep)}
    colors = dict(colors)
    colors.setdefault("other", "#B0B0B0")
    if axes is None:
        fig, axes = fs.figure("double", nrows=len(joints), height=1.6 * len(joints) + 0.8, sharex=True)
        axes = axes[:, 0]
    else:
        axes = np.atleast_1d(axes)
        fig = axes[0].figure
    for ax, j in zip(axes, joints):
        w = wide.xs(j, level="joint").sort_index()
        x = w.index.to_numpy(dtype=float)
        vals = {s: w[s].to_numpy() for s in keep if s in w}
        if rest:
            vals["other"] = w[[s for s in rest if s in w]].sum(axis=1).to_numpy()
        _stack(ax, x, vals, colors, total=w.sum(axis=1).to_numpy())
        name = joint_names[j - 1] if joint_names is not None else f"joint {j}"
        ax.set_title(name, loc="left")
        if ylabel:
            ax.set_ylabel(ylabel)
    axes[-1].set_xlabel("time (s)" if xcol == "time" else "state")
    if legend:
        seen = {}
        for ax in axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                seen.setdefault(lab, h)
        fs.legend_right(fig, list(seen.values()), list(seen.keys()))
    return fig


plot_contributions = plot_stacked_contributions
