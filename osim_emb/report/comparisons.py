"""Comparisons with OpenSim with their figures: the harness (:mod:`osim_emb.opensim.moment_arms`,
:mod:`osim_emb.opensim.motion_moment_arms`) computes and writes the tables, then
:mod:`osim_emb.report.comparison_figures` draws the figures from its result."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from osim_emb.opensim.moment_arms import REFERENCES, run_moment_arm_study
from osim_emb.opensim.motion_moment_arms import run_motion_study
from osim_emb.report.comparison_figures import moment_arm_figures, motion_figures

__all__ = ["compare_with_opensim", "compare_motion_with_opensim"]

FORMATS = ("pdf", "png", "svg")


def compare_with_opensim(model_path: str | Path, sweep: Sequence[str], *, out_dir: str | Path | None = None,
                         references: Sequence[str] = REFERENCES, formats: Sequence[str] = FORMATS,
                         plot: bool = True, title: str | None = None, **options) -> dict:
    """Moment arms of a model over coordinate sweeps beside OpenSim's, with tables and figures.

    Runs :func:`osim_emb.opensim.moment_arms.run_moment_arm_study` (the tables: CSV, .sto) and, with an
    ``out_dir`` and ``plot``, draws its figures (moment arm against angle, difference panels, heat maps of the
    worst differences) with :func:`osim_emb.report.comparison_figures.moment_arm_figures`.

    Parameters
    ----------
    model_path : str or Path
        The .osim (or JSON model) file.
    sweep : sequence of str
        Coordinates swept one at a time over their whole ranges (the others at their defaults).
    out_dir : path, optional
        Folder for the tables and figures; None writes nothing.
    references : sequence of str
        OpenSim references (``computeMomentArm``, ``computeMomentArm_mvp``, ``minus_dL_dq``); empty: the
        package alone, without OpenSim.
    formats : sequence of str
        Figure formats (``pdf``, ``png``, ``svg``, ...).
    plot : bool
        Draw the figures (only with ``out_dir``).
    title : str, optional
        Figure title (default: the model's name).
    **options
        Passed to :func:`~osim_emb.opensim.moment_arms.run_moment_arm_study`: ``step_deg`` (degrees),
        ``muscles``, ``ma_coordinates``, ``fixed`` (rad, m), ``opensim_compat``, ``progress``, ``workers``,
        ``cache_dir``, ``cross``.

    Returns
    -------
    dict
        The harness's result (``table``: package, OpenSim and difference in metres per pose, reference,
        muscle and coordinate; ``summary``; ``timings``; ...) with ``figures``, the figure files written.

    Examples
    --------
    >>> import osim_emb as oe
    >>> from osim_emb.io.builtin_models import builtin_model_path
    >>> result = oe.compare_with_opensim(builtin_model_path(), ["shoulder_elv"], out_dir="delt1", references=(),
    ...                                  step_deg=60, muscles=["DELT1"], formats=("png",), progress=False)
    >>> [p.name for p in result["figures"]]
    ['moment_arm_shoulder_elv_vs_shoulder_elv.png']
    >>> bool(result["table"]["package_m"].abs().max() > 0.01)  # DELT1's moment arm about elevation, metres
    True
    """
    result = run_moment_arm_study(str(model_path), sweep, out_dir=out_dir, references=references, **options)
    if out_dir is not None and plot:
        result["figures"] = moment_arm_figures(result, Path(out_dir), formats, title=title,
                                               workers=options.get("workers"), progress=options.get("progress", True))
    return result


def compare_motion_with_opensim(model_path: str | Path, motion_path: str | Path, *,
                                out_dir: str | Path | None = None, reference: bool = True,
                                formats: Sequence[str] = FORMATS, plot: bool = True, **options) -> dict:
    """Lengths and moment arms along a motion beside OpenSim's MuscleAnalysis on the same file, with tables
    and figures (moment arm against time).

    Runs :func:`osim_emb.opensim.motion_moment_arms.run_motion_study` (``options``: ``muscles``,
    ``ma_coordinates``, ``opensim_compat``, ``outside_range``) and, with an ``out_dir`` and ``plot``, draws
    :func:`osim_emb.report.comparison_figures.motion_figures`.  Returns the harness's result with ``figures``.
    """
    result = run_motion_study(str(model_path), str(motion_path), out_dir=out_dir, reference=reference, **options)
    if out_dir is not None and plot:
        result["figures"] = motion_figures(result, Path(out_dir), formats)
    return result
