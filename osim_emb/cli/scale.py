"""``osim-emb scale``: a generic OpenSim 4 model scaled to a subject, as OpenSim's ScaleTool (its setup file, or the
options), with the markers placed on a static trial (:mod:`osim_emb.simulation.scaling`)."""

from __future__ import annotations

from osim_emb.cli.common import add_time_range_option

import argparse
import logging
from pathlib import Path

import numpy as np

log = logging.getLogger("osim_emb")


def _factor_pairs(items: list[str] | None) -> dict[str, tuple[float, float, float]]:
    out = {}
    for item in items or []:
        body, sep, value = item.partition("=")
        parts = value.replace(",", " ").split()
        try:
            values = [float(v) for v in parts]
        except ValueError:
            values = []
        if not sep or not body or len(values) not in (1, 3):
            raise ValueError(f"--scale {item!r}: expected BODY=S or BODY=SX,SY,SZ")
        out[body] = tuple(values * 3 if len(values) == 1 else values)
    return out


def _model_text(path) -> str:
    """The text of the model to scale: an OpenSim 4 file as it is; an older one as OpenSim 4.6 upgrades it (the model
    its ScaleTool works on) when the opensim extra is installed, else refused with the hint."""
    from osim_emb.io.osim_scaling import osim_version
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:  # a file declared UTF-8 with Windows-1252 bytes (an en dash in a comment)
        text = data.decode("cp1252", errors="replace")
        log.warning("%s: not valid UTF-8; read as Windows-1252 (the output is UTF-8)", path)
    version = osim_version(text)
    if version >= 30517:
        return text
    try:
        from osim_emb.opensim.scaling import opensim_upgraded_text
        upgraded = opensim_upgraded_text(path)
    except ImportError:
        raise ValueError(f"{path}: a version-{version} file; scaling edits OpenSim 4 files: open and save it in "
                         "OpenSim 4, or install the opensim extra so that the package upgrades it as OpenSim "
                         "does") from None
    log.warning("%s: a version-%d file, upgraded to OpenSim 4 by OpenSim (as its ScaleTool reads it)", path, version)
    return upgraded


def cmd_scale(args: argparse.Namespace) -> int:
    from osim_emb.io.markers import read_markers
    from osim_emb.io.osim_scaling import marker_set_xml, read_marker_set, scale_set_xml
    from osim_emb.io.outputs import atomic_files
    from osim_emb.simulation.scaling import scale_tool
    setup = None
    if args.setup:
        from osim_emb.io.tool_setup import read_scale_setup
        setup = read_scale_setup(args.setup)
    model_path = args.model or (setup.model if setup else None)
    if not model_path:
        raise ValueError("give MODEL, or a ScaleTool setup file with --setup (its GenericModelMaker's model_file)")
    manual = _factor_pairs(args.scale)
    if setup is not None:
        order = setup.scaling_order if setup.scale else ()
        measurements, trial_path, time_range = setup.measurements, setup.markers, setup.time_range
        manual = manual or dict(setup.manual_scales)
        mass = args.mass if args.mass is not None else setup.mass
        preserve = setup.preserve_mass_distribution or args.preserve_mass_distribution
        marker_set_path = args.marker_set or setup.marker_set
        placer = setup.placer if setup.placer is not None and setup.placer.apply else None
        outputs = {"scaled": setup.output_model, "scale_set": setup.output_scale_set,
                   "placed": placer.output_model if placer else None,
                   "motion": placer.output_motion if placer else None,
                   "marker_set": placer.output_marker_set if placer else None}
    else:
        order = (("measurements",) if args.measurements else ()) + (("manualScale",) if manual else ())
        measurements, trial_path, time_range = (), args.static, args.time_range
        if args.measurements:
            from osim_emb.io.tool_setup import read_measurement_set
            measurements = read_measurement_set(args.measurements)
        mass, preserve, marker_set_path = args.mass, args.preserve_mass_distribution, args.marker_set
        placer = None
        outputs = {"scaled": None, "scale_set": None, "placed": None, "motion": None, "marker_set": None}
    if args.output:  # the final model
        outputs["placed" if placer is not None or (setup is None and args.place_markers) else "scaled"] = \
            Path(args.output)
    if setup is None and args.place_markers and not args.static:
        raise ValueError("--place-markers needs the static trial (--static STATIC.trc)")
    if not any(outputs.values()):
        raise ValueError("nothing to write: give -o OUTPUT.osim (or a setup naming its output files)")
    paths = [Path(p) for p in outputs.values() if p is not None]
    inputs = [p for p in (model_path, args.setup, marker_set_path, trial_path,
                          placer.markers if placer else None) if p]
    with atomic_files(paths, overwrite=args.overwrite, inputs=inputs) as tmps:
        tmp = dict(zip([k for k, v in outputs.items() if v is not None], tmps))
        text = _model_text(model_path)
        marker_set = read_marker_set(marker_set_path) if marker_set_path else None
        trial = read_markers(trial_path) if trial_path else None
        placer_trial = None
        weights = None
        placer_references = None  # a function of the scaled model
        if placer is not None:
            placer_trial = read_markers(placer.markers) if placer.markers else trial
            if placer_trial is None:
                raise ValueError(f"{args.setup}: the MarkerPlacer has no marker_file")
            weights = placer.marker_weights
            if placer.coordinate_tasks:
                from functools import partial
                from osim_emb.cli.inverse_kinematics import _coordinate_references
                t0 = placer.time_range[0] if placer.time_range else float(placer_trial.times[0])
                placer_references = partial(_coordinate_references, setup=placer,
                                            times=np.array([max(t0, float(placer_trial.times[0]))]))
        elif setup is None and args.place_markers:
            placer_trial = trial
        result = scale_tool(text, marker_set=marker_set, mass=mass, scaling_order=order, measurements=measurements,
                            manual=manual, trial=trial, time_range=time_range, preserve_mass_distribution=preserve,
                            scale=setup.scale if setup is not None else True, placer_trial=placer_trial,
                            placer_time_range=placer.time_range if placer else time_range, marker_weights=weights,
                            coordinate_references=placer_references,
                            unknown_bodies="warn" if setup is not None and not args.scale else "error",
                            max_marker_movement=placer.max_marker_movement if placer else None,
                            where=str(model_path))
        for note in result.scaled.notes:
            log.info("scale: %s", note)
        if "scaled" in tmp:
            Path(tmp["scaled"]).write_text(result.scaled.text)
        if "scale_set" in tmp:
            Path(tmp["scale_set"]).write_text(scale_set_xml(result.scaled.factors))
        placed = result.placed
        if placed is not None:
            if "placed" in tmp:
                Path(tmp["placed"]).write_text(placed.text)
            if "marker_set" in tmp:
                Path(tmp["marker_set"]).write_text(marker_set_xml(placed.text))
            if "motion" in tmp:  # a states table, as OpenSim's MarkerPlacer writes it
                from osim_emb.io.motion import write_motion
                from osim_emb.simulation.scaling import static_pose_states
                write_motion(tmp["motion"], static_pose_states(placed), name="static pose", protect=inputs)
    factors = result.scaled.factors
    scaled = {b: f for b, f in factors.items() if not np.allclose(f, 1.0)}
    print(f"scaled {Path(model_path).name}: "
          + (f"{len(scaled)} of {len(factors)} bodies" if factors else "no body given a factor (masses only)")
          + (f" (factors {min(float(np.min(f)) for f in scaled.values()):.4g} to "
             f"{max(float(np.max(f)) for f in scaled.values()):.4g})" if scaled else "")
          + (f", mass {mass:g} kg" if mass else ""))
    for row in result.measurements:
        if "factor" in row:
            log.info("measurement %s, pair %s: model %.6g m, trial %.6g m, factor %.6g", row["measurement"], row["pair"],
                     row["model_m"], row["trial_m"], row["factor"])
        else:
            where = ", ".join(p for p in (f"measurement {row['measurement']}" if row["measurement"] else "",
                                          f"pair {row['pair']}" if row["pair"] else "") if p)
            log.warning("%s: %s", where or "scale", row.get("note", ""))
    if placed is not None:
        worst = max(placed.movement, key=placed.movement.get) if placed.movement else None
        ik = placed.inverse_kinematics
        rms = float(np.sqrt(ik.squared_errors[0].sum() / max(1, (ik.squared_errors[0] > 0).sum())))
        print(f"placed {len(placed.moved)} markers on the static pose (IK marker RMS {rms * 1e3:.2f} mm; the "
              f"weighted objective J it minimizes, as OpenSim's MarkerPlacer, {float(ik.objective[0]):.6g}: "
              "docs/inverse_kinematics.md)"
              + (f"; largest move {placed.movement[worst] * 1e3:.2f} mm ({worst})" if worst else "")
              + (f"; {len(placed.deleted)} model marker(s) not in the trial deleted" if placed.deleted else ""))
    for key, p in outputs.items():
        if p is not None:
            print(f"wrote {p}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("scale", help="scale a generic OpenSim 4 model to a subject (OpenSim's ScaleTool)",
                       description="OpenSim's ScaleTool: the marker set merged, scale factors from marker-pair "
                                   "measurements on a static trial and manual factors, the model scaled as OpenSim's "
                                   "Model::scale (frames, mass properties, joint translations, path points, wraps, "
                                   "markers, muscle fibre and tendon lengths), then the markers placed on the static "
                                   "pose found by inverse kinematics. OpenSim 4 model files (Version 30517+).")
    s.add_argument("model", nargs="?", help="the generic .osim model (or the setup's model_file)")
    s.add_argument("-o", "--output", help="the final model (the placed one when markers are placed; overrides the "
                                          "setup's output_model_file)")
    s.add_argument("--setup", metavar="SETUP.xml",
                   help="an OpenSim ScaleTool setup file: mass, GenericModelMaker, ModelScaler (measurements, "
                        "manual scales, static trial, time range, mass distribution, output model and scale set) "
                        "and MarkerPlacer (IK tasks, time range, output model, motion and marker set)")
    s.add_argument("--marker-set", metavar="MARKERS.xml", help="a MarkerSet file merged into the model first")
    s.add_argument("--static", metavar="STATIC.trc", help="the static trial, .trc or .c3d (measurements, marker placement)")
    s.add_argument("--measurements", metavar="SET.xml",
                   help="a MeasurementSet file (or a ScaleTool setup's), applied on --static")
    add_time_range_option(s, "the static trial's frames to average (s)", one_frame=True)
    s.add_argument("--scale", action="append", metavar="BODY=SX,SY,SZ",
                   help="manual scale factors of a body (repeatable; one number scales all three axes)")
    s.add_argument("--mass", type=float, help="the subject's mass (kg): every body's mass scaled to sum to it")
    s.add_argument("--preserve-mass-distribution", action="store_true",
                   help="masses keep their proportions (not scaled by volume first), as OpenSim's option")
    s.add_argument("--place-markers", action="store_true",
                   help="place the markers on the static trial's pose after scaling (OpenSim's MarkerPlacer)")
    s.set_defaults(func=cmd_scale)
