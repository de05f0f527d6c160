"""``osim-emb c3d-export TRIAL.c3d -o DIR``: a C3D trial as the files OpenSim's tools read — the markers (.trc),
the force platforms' ground reactions (.mot) and, with ``--apply``, the ExternalLoads XML that applies them
(:mod:`osim_emb.io.force_plates`)."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import numpy as np

log = logging.getLogger("osim_emb")


def _applications(pairs: list[str] | None) -> dict[int, str]:
    """``--apply 1=calcn_r 2=calcn_l`` -> {1: "calcn_r", 2: "calcn_l"}."""
    out: dict[int, str] = {}
    for pair in pairs or ():
        number, _, body = pair.partition("=")
        if not number.strip().isdigit() or not body.strip():
            raise ValueError(f"--apply {pair!r}: write PLATFORM=BODY with the platform's number (from 1), "
                             "e.g. 1=calcn_r")
        if int(number) in out:
            raise ValueError(f"--apply: platform {int(number)} is given twice")
        out[int(number)] = body.strip()
    return out


def _unless_absent(read, trial: Path, absent: str):
    """``read(trial)``, or None where the file has none of what it reads (the refusal says ``absent``)."""
    from osim_emb.io.markers import MarkerFileError
    try:
        return read(trial)
    except MarkerFileError as err:
        if absent not in err.reason:
            raise
        return None


def cmd_c3d_export(args: argparse.Namespace) -> int:
    from osim_emb.io.force_plates import (at_center_of_pressure, contact_intervals, lowpass_plates, read_c3d_analogs,
                                          read_force_plates, rotated_markers, rotated_plates, rotation_from_text,
                                          write_ground_reactions)
    from osim_emb.io.markers import read_c3d, write_trc
    from osim_emb.io.outputs import atomic_files
    trial = Path(args.trial)
    bodies = _applications(args.apply)
    rotation = rotation_from_text(args.rotate) if args.rotate else np.eye(3)
    if args.threshold < 0.0:
        raise ValueError(f"--threshold {args.threshold:g}: a force (N) of 0 or more")
    markers = _unless_absent(read_c3d, trial, "no marker")
    plates = _unless_absent(read_force_plates, trial, "no force platform")
    if markers is None and plates is None:
        raise ValueError(f"{trial}: neither markers nor force platforms to export")
    if plates is None and (bodies or args.lowpass or args.plot):
        raise ValueError(f"{trial}: no force platform, so --apply, --lowpass and --plot have nothing to act on")
    if args.plot and args.forces_at != "cop":
        raise ValueError("--plot draws the centres of pressure: use it with --forces-at cop")
    folder = Path(args.output)
    stem = trial.stem
    outs = {"markers": folder / f"{stem}_markers.trc"} if markers is not None else {}
    if plates is not None:
        outs["forces"] = folder / f"{stem}_grf.mot"
        if bodies:
            outs["loads"] = folder / f"{stem}_external_loads.xml"
        if args.plot:
            outs["png"], outs["svg"] = folder / f"{stem}_grf.png", folder / f"{stem}_grf.svg"
    analogs = read_c3d_analogs(trial) if args.analogs else None
    if analogs is not None:
        outs["analogs"] = folder / f"{stem}_analog.sto"
    plotted = args.plot and plates is not None
    with atomic_files(list(outs.values()), overwrite=args.overwrite, inputs=[trial]) as tmps:
        tmp = dict(zip(outs, tmps))
        if analogs is not None:
            import pandas as pd

            from osim_emb.io.motion import write_motion
            write_motion(tmp["analogs"], pd.DataFrame({"time": analogs.time,
                                                       **{n: analogs.values[:, k] for k, n in enumerate(analogs.labels)}}),
                         name=f"analog channels of {trial.name} ({', '.join(sorted(set(analogs.units) - {''}))})",
                         protect=[trial])
        if markers is not None:
            markers = rotated_markers(markers, rotation)
            write_trc(tmp["markers"], markers.times, markers.names, markers.positions, units=args.marker_units,
                      protect=[trial], file_name=outs["markers"].name)
        if plates is not None:
            if args.lowpass:
                plates = lowpass_plates(plates, args.lowpass)
            plates = rotated_plates(plates, rotation)
            normal_force = {p.number: np.abs(p.force @ p.normal) for p in plates.plates}  # before any threshold
            if args.forces_at == "cop":
                plates = at_center_of_pressure(plates, args.threshold)
            write_ground_reactions(tmp["forces"], plates, xml=tmp.get("loads"), bodies=bodies,
                                   datafile=outs["forces"].name, protect=[trial])  # the data file's final name
            if args.plot:
                from osim_emb.cli.common import written_figure
                from osim_emb.report.figure_style import save
                from osim_emb.report.ground_reaction_figures import ground_reaction_figure

                def draw():
                    figure = ground_reaction_figure(plates, f"ground reactions of {trial.name}")
                    for fmt in ("png", "svg"):
                        save(figure, tmp[fmt].with_suffix(""), formats=[fmt], close=fmt == "svg")
                plotted = written_figure(draw, outs["png"])
    if markers is not None:
        print(f"wrote {outs['markers']}: {len(markers.names)} markers at {len(markers.times)} frames "
              f"({markers.rate_hz:g} Hz, {args.marker_units})")
    if plates is not None:
        peaks = ", ".join(f"{p.number}: {np.nanmax(np.linalg.norm(p.force, axis=1)):.0f} N" for p in plates.plates)
        where = ("at the centre of pressure, free moment about the surface normal, "
                 f"zero below {args.threshold:g} N" if args.forces_at == "cop" else
                 "at each surface's centre (OpenSim's OriginOfForcePlate)")
        print(f"wrote {outs['forces']}: {len(plates.plates)} force platforms at {len(plates.time)} samples "
              f"({plates.rate_hz:g} Hz), {where}"
              f"{f', low-pass {args.lowpass:g} Hz' if args.lowpass else ''}; peak force {peaks}")
        for p in plates.plates if args.threshold > 0 else ():
            runs = contact_intervals(plates, p, args.threshold)
            shown = "; ".join(f"{a:.3f}-{b:.3f} s" for a, b in runs[:6]) + (f"; {len(runs) - 6} more" if len(runs) > 6
                                                                               else "")
            print(f"  platform {p.number}: " + (f"contact {shown}" if runs else "no contact") +
                  f" (normal force >= {args.threshold:g} N)")
            fn = normal_force[p.number]
            least, peak = float(np.nanmin(fn)), float(np.nanmax(fn))
            brief = sum(b - a < 0.01 for a, b in runs)
            if brief >= 5:  # the normal force chatters about the threshold
                log.warning("c3d-export: platform %d: %d of its %d contacts (normal force >= %g N) are shorter than "
                            "10 ms (its resting level about %.0f N: an unzeroed platform, or noise near the "
                            "threshold); its centre of pressure jumps between them: raise --threshold well above "
                            "that level, or zero the channels", p.number, brief, len(runs), args.threshold,
                            float(np.nanpercentile(fn, 10)))
            if least >= args.threshold and least < 0.2 * peak:  # loaded throughout, yet far below its peak
                log.warning("c3d-export: platform %d: its normal force never falls below the %g N threshold "
                            "(least %.0f N, largest %.0f N): an unzeroed platform? Its centre of pressure is then "
                            "computed from the offset while nothing stands on it; zero the channels or raise "
                            "--threshold", p.number, args.threshold, least, peak)
        unused = sorted({p.number for p in plates.plates} - set(bodies))
        if "loads" in outs:
            print(f"wrote {outs['loads']}: platform " + ", ".join(f"{k} on {b}" for k, b in sorted(bodies.items())))
        if plotted:
            print(f"wrote {outs['png']} and {outs['svg']}: forces against time, centres of pressure")
        if unused:
            log.warning("c3d-export: platform(s) %s %s in the data file but %s", ", ".join(map(str, unused)),
                        "are" if len(unused) > 1 else "is",
                        "applied to no body (--apply N=BODY)" if bodies else
                        "no ExternalLoads file is written without --apply N=BODY")
    if analogs is not None:
        print(f"wrote {outs['analogs']}: {len(analogs.labels)} analog channels at {len(analogs.time)} samples "
              f"({analogs.rate_hz:g} Hz, the file's units, not turned)")
    if not np.allclose(rotation, np.eye(3)):
        print(f"lab frame turned by {args.rotate} (markers and forces alike)")
    return 0 if plotted == (args.plot and plates is not None) else 1


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("c3d-export", help="a C3D trial as OpenSim's files: markers (.trc), ground reactions (.mot), "
                                          "ExternalLoads (.xml)")
    s.add_argument("trial", help="the .c3d file (read through ezc3d: pip install 'osim-emb[c3d]')")
    s.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="folder for TRIAL_markers.trc, TRIAL_grf.mot and TRIAL_external_loads.xml")
    s.add_argument("--rotate", metavar="AXIS:DEG[,...]",
                   help="turn the lab frame (markers and forces), e.g. x:-90 for a Z-up lab into OpenSim's Y-up "
                        "ground; rotations about the lab's fixed axes, left to right")
    s.add_argument("--forces-at", choices=("cop", "origin"), default="cop",
                   help="cop: each force at its centre of pressure with the free moment (what inverse dynamics "
                        "needs); origin: at the surface's centre with the whole moment (OpenSim's C3DFileAdapter "
                        "default)")
    s.add_argument("--threshold", type=float, default=20.0, metavar="N",
                   help="with --forces-at cop: below this normal force (N) the force and moment are 0 and the point "
                        "the surface's centre (no contact)")
    s.add_argument("--lowpass", type=float, metavar="HZ",
                   help="low-pass the forces and moments (4th-order zero-lag Butterworth) before the centre of "
                        "pressure is taken")
    s.add_argument("--apply", nargs="+", metavar="N=BODY",
                   help="write the ExternalLoads XML applying platform N to BODY (e.g. 1=calcn_r 2=calcn_l)")
    s.add_argument("--marker-units", choices=("mm", "m"), default="mm", help="units of the written .trc")
    s.add_argument("--analogs", action="store_true",
                   help="also write TRIAL_analog.sto: every analog channel (EMG, force-plate channels ...) as OpenSim's "
                        "C3DFileAdapter reads it, in the file's units")
    s.add_argument("--plot", action="store_true",
                   help="also write TRIAL_grf.png and .svg: forces against time, centres of pressure on the platforms")
    s.set_defaults(func=cmd_c3d_export)
