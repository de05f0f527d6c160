"""Moment arms along a motion (``osim-emb moment-arms MODEL --motion ik.mot``), beside OpenSim's MuscleAnalysis.

The package evaluates L and R at every frame of the motion (its generalized coordinates; ``inDegrees``
honoured); OpenSim's AnalyzeTool runs a MuscleAnalysis on the same file (no filtering) and its
``Length`` and ``MomentArm_<coordinate>`` storage files are read back.  The package is compared in
``opensim_compat`` mode (OpenSim's wrap-point cache reproduced); the fresh-geometry values are reported too.
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path
from typing import Sequence
from xml.sax.saxutils import escape

import numpy as np
import pandas as pd

from osim_emb.model import Model
from osim_emb.opensim.bridge import moment_arms_about_speeds
from osim_emb.paths.geometry import lengths_and_moment_arms
from osim_emb.opensim.moment_arms import Sweep, _warm_up, _coordinate_columns, write_sto_tables

log = logging.getLogger(__name__)

__all__ = ["opensim_muscle_analysis", "run_motion_study"]

TOLERANCE = 1e-8


def opensim_muscle_analysis(model_path: str | Path, motion_path: str | Path, coordinates: Sequence[str],
                            work_dir: str | Path) -> tuple[np.ndarray, pd.DataFrame, dict[str, pd.DataFrame]]:
    """Run OpenSim's AnalyzeTool with a MuscleAnalysis on the motion; (time, Length, {coordinate: MomentArm})."""
    from osim_emb.opensim.bridge import require_opensim
    from osim_emb.io.motion import read_motion
    osim = require_opensim()
    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    table, _ = read_motion(motion_path)
    t0, t1 = float(table.time.iloc[0]), float(table.time.iloc[-1])
    setup = work / "analyze_setup.xml"
    setup.write_text(f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000">
<AnalyzeTool name="osim_emb">
<model_file>{escape(str(Path(model_path).resolve()))}</model_file>
<results_directory>{escape(str(work.resolve()))}</results_directory>
<initial_time>{t0!r}</initial_time><final_time>{t1!r}</final_time>
<AnalysisSet name="Analyses"><objects>
<MuscleAnalysis name="MuscleAnalysis"><on>true</on><start_time>{t0!r}</start_time><end_time>{t1!r}</end_time>
<step_interval>1</step_interval><in_degrees>true</in_degrees><muscle_list>all</muscle_list>
<moment_arm_coordinate_list>{' '.join(coordinates)}</moment_arm_coordinate_list><compute_moments>true</compute_moments>
</MuscleAnalysis></objects></AnalysisSet>
<coordinates_file>{escape(str(Path(motion_path).resolve()))}</coordinates_file>
<lowpass_cutoff_frequency_for_coordinates>-1</lowpass_cutoff_frequency_for_coordinates>
</AnalyzeTool></OpenSimDocument>
""")
    osim.AnalyzeTool(str(setup)).run()

    def read(name):
        t = osim.TimeSeriesTable(str(work / f"osim_emb_MuscleAnalysis_{name}.sto"))
        return pd.DataFrame(t.getMatrix().to_numpy(), columns=list(t.getColumnLabels()),
                            index=np.asarray(t.getIndependentColumn()))
    length = read("Length")
    return length.index.to_numpy(), length, {c: read(f"MomentArm_{c}") for c in coordinates}


def run_motion_study(model_path: str, motion_path: str, *, muscles: Sequence[str] | None = None,
                     ma_coordinates: Sequence[str] | None = None, reference: bool = True,
                     opensim_compat: bool = True, out_dir: str | Path | None = None, model: Model | None = None,
                     outside_range: str = "error") -> dict:
    """L and R along a motion, and (``reference``) OpenSim's MuscleAnalysis on the same file; the tables are
    written to ``out_dir`` (figures: :func:`osim_emb.report.comparison_figures.motion_figures`).
    ``outside_range="warn"`` uses coordinates outside their ranges as they are (as MuscleAnalysis does for
    unclamped coordinates) instead of refusing the motion."""
    from osim_emb.io import load_osim
    from osim_emb.io.motion import coordinates_from_motion, read_motion
    model = model or load_osim(model_path)
    table, header = read_motion(motion_path)
    times, q, _ = coordinates_from_motion(model, table, header, outside=outside_range)
    if outside_range == "error":
        model.check_configuration(q)
    muscles = list(muscles) if muscles else [m.name for m in model.muscles]
    if not muscles:
        raise ValueError(f"model {model.name!r} has no musculotendon units")
    mac = list(ma_coordinates) if ma_coordinates else [c.name for c in model.coordinates
                                                        if np.ptp(q[:, model.coordinate_index(c.name)]) > 0]
    kidx = [model.coordinate_index(c) for c in mac]
    compile_s = _warm_up(model, q, muscles)
    t_start = time.perf_counter()
    length, r = lengths_and_moment_arms(model, q, muscles, opensim_compat=opensim_compat, allow_out_of_range=True)
    seconds = time.perf_counter() - t_start
    length_o, r_o = lengths_and_moment_arms(model, q, muscles, opensim_compat=not opensim_compat,
                                            allow_out_of_range=True)
    n, m = len(times), len(muscles)
    cols = {"time_s": np.repeat(times, m)}
    cols.update({k: np.repeat(v, m) for k, v in _coordinate_columns(model, q).items()})
    cols["muscle"] = np.tile(np.asarray(muscles, dtype=object), n)
    other = "fresh_geometry" if opensim_compat else "opensim_compat"
    cols["length_m"] = length.ravel()
    cols[f"length_{other}_m"] = length_o.ravel()
    for k, c in zip(kidx, mac):
        cols[f"moment_arm_{c}_m"] = r[:, k, :].ravel()
        cols[f"moment_arm_{c}_{other}_m"] = r_o[:, k, :].ravel()
    timings = {"package": seconds, "package_compile": compile_s}
    refs = []
    long_parts = []
    summary = pd.DataFrame()
    if reference:
        work = Path(out_dir) / "opensim_MuscleAnalysis" if out_dir else Path(tempfile.mkdtemp())
        t1 = time.perf_counter()
        t_os, l_os, r_os = opensim_muscle_analysis(model_path, motion_path, mac, work)
        timings["MuscleAnalysis"] = time.perf_counter() - t1
        if len(t_os) != n or np.abs(t_os - times).max() > 1e-9:
            raise RuntimeError(f"OpenSim's MuscleAnalysis reported {len(t_os)} frames at other times than the "
                               f"motion's {n}")
        cols["opensim_length_m"] = l_os[muscles].to_numpy().ravel()
        # OpenSim's moment arms are about its speeds (angular velocities of Ball/Free/Ellipsoid joints' angles)
        r, r_o = moment_arms_about_speeds(model, q, r), moment_arms_about_speeds(model, q, r_o)
        rows = []
        for k, c in zip(kidx, mac):
            os_r = r_os[c][muscles].to_numpy()
            cols[f"opensim_moment_arm_{c}_m"] = os_r.ravel()
            cols[f"difference_{c}_m"] = (r[:, k, :] - os_r).ravel()
            for mi, mu in enumerate(muscles):
                d = np.abs(r[:, k, mi] - os_r[:, mi])
                rows.append({"muscle": mu, "moment_arm_coordinate": c, "frames": n,
                             "max_abs_difference_m": d.max(), "median_abs_difference_m": np.median(d),
                             "p95_abs_difference_m": np.percentile(d, 95), "time_of_max_s": times[int(d.argmax())],
                             "other_mode_max_abs_difference_m": np.abs(r_o[:, k, mi] - os_r[:, mi]).max(),
                             "max_abs_length_difference_m": np.abs(length[:, mi] - l_os[mu].to_numpy()).max()})
            long_parts.append(pd.DataFrame({
                "reference": "MuscleAnalysis", "muscle": np.tile(np.asarray(muscles, dtype=object), n),
                "swept_coordinate": "time", "sweep_value_s": np.repeat(times, m), "moment_arm_coordinate": c,
                "package_m": r[:, k, :].ravel(), "opensim_m": os_r.ravel(),
                "difference_m": (r[:, k, :] - os_r).ravel()}))
        summary = pd.DataFrame(rows)
        refs = ["MuscleAnalysis"]
    else:
        for k, c in zip(kidx, mac):
            long_parts.append(pd.DataFrame({
                "reference": "none", "muscle": np.tile(np.asarray(muscles, dtype=object), n),
                "swept_coordinate": "time", "sweep_value_s": np.repeat(times, m), "moment_arm_coordinate": c,
                "package_m": r[:, k, :].ravel(), "opensim_m": np.nan, "difference_m": np.nan}))
    tab = pd.DataFrame(cols)
    result = {"model": model, "table": pd.concat(long_parts, ignore_index=True), "frames": tab, "summary": summary,
              "timings": timings, "references": refs, "muscles": muscles, "ma_coordinates": mac,
              "sweeps": [Sweep("time", times, q)], "opensim_compat": opensim_compat, "figures": [],
              "motion_path": str(motion_path)}
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        tab.to_csv(out / "motion_moment_arms.csv.gz", index=False, float_format="%.12e")
        if len(summary):
            summary.to_csv(out / "motion_summary.csv", index=False, float_format="%.3e")
        write_sto_tables(out / "sto", model, times, length, r, muscles, mac, "motion", protect=[model_path, motion_path])
    return result


def print_motion_report(result: dict, stream=None) -> None:
    import sys
    stream = stream or sys.stdout
    t = result["timings"]
    mode = "opensim_compat" if result["opensim_compat"] else "fresh-geometry"
    stream.write(f"{result['model'].name}: {len(result['sweeps'][0].angles_deg)} frames x {len(result['muscles'])} "
                 f"units, package {t['package']:.3f} s ({mode} mode)\n")
    s = result["summary"]
    if len(s):
        w = s.loc[s.max_abs_difference_m.idxmax()]
        stream.write(f"  OpenSim MuscleAnalysis ({t['MuscleAnalysis']:.1f} s): max |package - OpenSim| moment arm "
                     f"{w.max_abs_difference_m:.2e} m ({w.muscle} about {w.moment_arm_coordinate} at t = "
                     f"{w.time_of_max_s:g} s), length {s.max_abs_length_difference_m.max():.2e} m; other mode: "
                     f"{s.other_mode_max_abs_difference_m.max():.2e} m\n")
        for _, row in s[s.max_abs_difference_m > TOLERANCE].iterrows():
            stream.write(f"    {row.muscle} about {row.moment_arm_coordinate}: {row.max_abs_difference_m:.2e} m\n")
