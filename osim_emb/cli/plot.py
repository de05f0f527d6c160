"""``osim-emb plot``: moment arm against angle (or time along a motion) for any model, muscles and coordinates,
in the project figure style, with OpenSim's references and a difference panel (no tables)."""

from __future__ import annotations

import argparse
from pathlib import Path

from osim_emb.cli.common import _csv, check_sweep_or_motion, _fixed_values, _formats, _Help, _load_any, _positive, \
    add_comparison_options, outside_range_hint


def cmd_plot(args: argparse.Namespace) -> int:
    from osim_emb.io.outputs import atomic_folder
    from osim_emb.opensim.moment_arms import REFERENCES
    refs = [] if args.references == "none" else _csv(args.references)
    for r in refs:
        if r not in REFERENCES:
            raise ValueError(f"unknown reference {r!r}; choose from {', '.join(REFERENCES)} or 'none'")
    out = Path(args.out or Path("out") / (Path(args.model).stem + "_plots"))
    _positive("--step", args.step)
    _positive("--step-mm", args.step_mm)
    formats = _formats(args.formats)
    check_sweep_or_motion(args)
    inputs = [args.model] + ([args.motion] if args.motion else [])
    with atomic_folder(out, overwrite=args.overwrite, inputs=inputs) as tmp:
        written, coordinates = _draw(args, refs, tmp, formats)
        if not written:  # nothing to draw is an error, not an empty folder
            raise ValueError(f"{args.model}: no figure: none of the muscles has a moment arm about the "
                             f"coordinates {'the motion moves' if args.motion else 'swept'} "
                             f"({', '.join(coordinates)}); choose others with --coordinates or --muscles")
    print(f"wrote {len(written)} figure files in {out}/")
    return 0


def _draw(args, refs, out, formats):
    """(figure files written, moment-arm coordinates)."""
    from osim_emb.report.comparison_figures import moment_arm_figures
    from osim_emb.opensim.moment_arms import run_moment_arm_study
    muscles = _csv(args.muscles) if args.muscles else None
    coords = _csv(args.coordinates) if args.coordinates else None
    model = _load_any(args.model, strict=not args.lenient)
    fixed = _fixed_values(model, args.fixed, _csv(args.sweep))
    if args.motion:
        from osim_emb.opensim.motion_moment_arms import run_motion_study
        with outside_range_hint():
            res = run_motion_study(args.model, args.motion, muscles=muscles, ma_coordinates=coords,
                                   reference=bool(refs), opensim_compat=not args.fresh_geometry, out_dir=None,
                                   outside_range=args.outside_range, model=model)
        from osim_emb.report.comparison_figures import moment_arm_curves
        return (moment_arm_curves(res, out, formats, pairs=[("time", c) for c in res["ma_coordinates"]]),
                res["ma_coordinates"])
    else:
        res = run_moment_arm_study(args.model, _csv(args.sweep), step_deg=args.step, step_mm=args.step_mm, muscles=muscles,
                                   ma_coordinates=coords, references=refs, fixed=fixed,
                                   opensim_compat=not args.fresh_geometry, out_dir=None, progress=not args.quiet,
                                   workers=args.workers, cache_dir=False if args.no_cache else args.cache_dir,
                                   model=model)
        return moment_arm_figures(res, out, formats), res["ma_coordinates"]


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("plot", help="figures of moment arm against angle (or time along a motion) beside OpenSim",
                       formatter_class=_Help)
    s.add_argument("model", help=".osim file")
    s.add_argument("--sweep", help="coordinates to sweep over their whole ranges")
    s.add_argument("--motion", help="a motion (.mot/.sto): moment arms against time")
    add_comparison_options(s, figures_only=True)
    s.set_defaults(func=cmd_plot)
