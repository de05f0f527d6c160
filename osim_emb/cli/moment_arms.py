"""``osim-emb moment-arms``: sweep coordinates (or follow a motion) and compare the closed-form moment arms
with OpenSim (:mod:`osim_emb.report.comparisons`): tables and figures in one folder."""

from __future__ import annotations

import argparse
from pathlib import Path

from osim_emb.cli.common import _csv, check_sweep_or_motion, _figure_formats, _fixed_values, _Help, _load_any, _positive, \
    add_comparison_options, outside_range_hint


def cmd_moment_arms(args: argparse.Namespace) -> int:
    from osim_emb.io.outputs import atomic_folder
    from osim_emb.opensim.moment_arms import REFERENCES, print_report
    from osim_emb.report.comparisons import compare_motion_with_opensim, compare_with_opensim
    _positive("--step", args.step)
    _positive("--step-mm", args.step_mm)
    formats = _figure_formats(args.formats)
    refs = [] if args.references == "none" else _csv(args.references)
    for r in refs:
        if r not in REFERENCES:
            raise ValueError(f"unknown reference {r!r}; choose from {', '.join(REFERENCES)} or 'none'")
    check_sweep_or_motion(args)
    if args.sweep and not _csv(args.sweep):
        raise ValueError("--sweep needs at least one coordinate")
    out = args.out or str(Path("out") / (Path(args.model).stem + "_moment_arms"))
    compat = not args.fresh_geometry
    muscles = _csv(args.muscles) if args.muscles else None
    coords = _csv(args.coordinates) if args.coordinates else None
    inputs = [args.model] + ([args.motion] if args.motion else [])
    model = _load_any(args.model, strict=not args.lenient)
    fixed = _fixed_values(model, args.fixed, _csv(args.sweep))
    with atomic_folder(out, overwrite=args.overwrite, inputs=inputs) as tmp:
        if args.motion:
            from osim_emb.opensim.motion_moment_arms import print_motion_report
            with outside_range_hint():
                result = compare_motion_with_opensim(
                    args.model, args.motion, muscles=muscles, ma_coordinates=coords,
                    reference=args.references != "none", opensim_compat=compat, out_dir=tmp, formats=formats,
                    plot=not args.no_plot, outside_range=args.outside_range, model=model)
        else:
            result = compare_with_opensim(
                args.model, _csv(args.sweep), step_deg=args.step, step_mm=args.step_mm, muscles=muscles,
                ma_coordinates=coords,
                references=refs, fixed=fixed, opensim_compat=compat, out_dir=tmp,
                formats=formats, progress=not args.quiet, workers=args.workers,
                cache_dir=False if args.no_cache else args.cache_dir, plot=not args.no_plot, model=model)
    if args.motion:
        print_motion_report(result)
    else:
        print_report(result)
    print(f"  tables and figures in {out}/")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("moment-arms", help="sweep coordinates (or follow a motion) and compare the closed-form "
                                           "moment arms with OpenSim", formatter_class=_Help)
    s.add_argument("model", help=".osim file")
    s.add_argument("--sweep", help="coordinates to sweep over their whole ranges, e.g. elv_angle,shoulder_elv")
    s.add_argument("--motion", help="a motion (.mot/.sto, e.g. an inverse-kinematics result): L and R at its "
                                    "frames beside OpenSim's MuscleAnalysis on the same file")
    add_comparison_options(s)
    s.set_defaults(func=cmd_moment_arms)
