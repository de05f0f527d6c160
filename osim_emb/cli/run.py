"""``osim-emb run``: the main job (:func:`osim_emb.report.study.run_main_job`): export a model, validate its
moment arms against OpenSim over 1-degree sweeps, write a report."""

from __future__ import annotations

import argparse

from osim_emb.cli.common import _csv, _figure_formats, _Help, _positive, add_lenient_option


def cmd_run(args: argparse.Namespace) -> int:
    from osim_emb.io.outputs import atomic_folder
    from osim_emb.report.study import run_main_job
    _positive("--step", args.step)
    _positive("--step-mm", args.step_mm)
    formats = _figure_formats(args.formats)
    kw = {"sweep": _csv(args.sweep)} if getattr(args, "sweep", None) else {}
    command = "osim-emb run " + " ".join(  # every option given (the report's provenance)
        [args.model or "(built-in shoulder3d)", "--out", str(args.out), "--step", f"{args.step:g}"]
        + (["--step-mm", f"{args.step_mm:g}"] if args.step_mm != 5.0 else [])
        + (["--sweep", args.sweep] if getattr(args, "sweep", None) else [])
        + (["--lenient"] if getattr(args, "lenient", False) else [])
        + (["--formats", args.formats] if args.formats != "pdf,png,svg" else [])
        + (["--workers", str(args.workers)] if getattr(args, "workers", None) else [])
        + (["--cache-dir", args.cache_dir] if getattr(args, "cache_dir", None) else [])
        + (["--no-cache"] if getattr(args, "no_cache", False) else []))
    with atomic_folder(args.out, overwrite=args.overwrite, inputs=[args.model]) as tmp:
        run_main_job(args.model, tmp, step_deg=args.step, step_mm=args.step_mm, formats=formats, progress=not args.quiet,
                     workers=getattr(args, "workers", None),
                     cache_dir=False if getattr(args, "no_cache", False) else getattr(args, "cache_dir", None),
                     command=command, shown_as=args.out, strict=not getattr(args, "lenient", False), **kw)
    print(f"outputs in {args.out}/")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("run", help="the main job: export a model (default: the built-in 3D shoulder), validate its "
                                   "moment arms against OpenSim over 1-degree sweeps, write a report",
                       formatter_class=_Help)
    s.add_argument("model", nargs="?", help=".osim file (default: the built-in models/shoulder3d)")
    add_lenient_option(s)
    s.add_argument("--out", default="out", help="output folder")
    s.add_argument("--step", type=float, default=1.0, help="sweep step of a rotational coordinate, degrees")
    s.add_argument("--step-mm", type=float, default=5.0,
                   help="sweep step of a translational coordinate, millimetres")
    s.add_argument("--sweep", help="coordinates to sweep (default: the unlocked rotational coordinates the "
                                   "muscles span)")
    s.add_argument("--formats", default="pdf,png,svg", help="figure formats")
    s.add_argument("--workers", type=int, help="processes for OpenSim's side (default: CPUs, at most 4)")
    s.add_argument("--cache-dir", help="cache of OpenSim's values (default: $OSIM_EMB_CACHE or "
                                       "~/.cache/osim-emb/opensim_references)")
    s.add_argument("--no-cache", action="store_true", help="neither read nor write the OpenSim cache")
    s.set_defaults(func=cmd_run)
