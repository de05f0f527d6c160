"""``osim-emb smooth-paths MODEL.osim -o NEW.osim``: legacy wrap objects -> Scholz2015GeometryPath obstacles."""

from __future__ import annotations

import argparse
import logging
import time


def cmd_smooth_paths(args: argparse.Namespace) -> int:
    from osim_emb.io import load_osim
    from osim_emb.io.outputs import atomic_files, check_output_file
    from osim_emb.io.scholz_convert import solvable_smooth_paths_tree, write_tree
    from osim_emb.paths.geometry import muscle_lengths

    t0 = time.perf_counter()
    check_output_file(args.output, overwrite=args.overwrite, inputs=[args.model])
    model = load_osim(args.model, strict=not args.lenient)
    tree, converted, warnings = solvable_smooth_paths_tree(model, args.samples, args.seed, args.hints,
                                                           strict=not args.lenient)
    for w in warnings:
        logging.warning("%s: %s", args.model, w)
    if not converted:
        if not any(getattr(u, "wraps", ()) for u in model.muscles):
            raise ValueError(f"{args.model}: no muscle has wrap objects ({len(model.muscles)} muscles, "
                             f"{len(model.wrap_objects)} wrap objects); nothing written")
        raise ValueError(f"{args.model}: no unit has wrap objects that convert (spheres, cylinders, ellipsoids, tori; "
                         f"see the warnings for the units kept legacy); nothing written")
    with atomic_files([args.output], overwrite=args.overwrite, inputs=[args.model]) as (tmp,):
        write_tree(tree, tmp)
        smooth = load_osim(tmp, strict=not args.lenient)  # the written file reads back; its lengths at the default pose
        names = [u.name for u in converted]
        q = model.default_q
        legacy_l = muscle_lengths(model, q, names)[0]
        smooth_l = muscle_lengths(smooth, q, names)[0]
    w = max([4] + [len(n) for n in names])
    print(f"{'unit':<{w}}  legacy L (m)  smooth L (m)  obstacles (L at the default pose)")
    for u, a, b in zip(converted, legacy_l, smooth_l):
        obstacles = [name for kind, name, _ in u.elements if kind == "obstacle"]
        print(f"{u.name:<{w}}  {a:12.6f}  {b:12.6f}  {','.join(obstacles)}")
    print(f"wrote {args.output}: {len(converted)} Scholz2015GeometryPaths ({len(warnings)} warnings) in "
          f"{time.perf_counter() - t0:.2f} s")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("smooth-paths", help="convert legacy wrap objects (spheres, cylinders, ellipsoids, tori) to "
                                            "smooth obstacles: write Scholz2015GeometryPaths (OpenSim 4.6)")
    s.add_argument("model", help=".osim file (OpenSim 4)")
    s.add_argument("-o", "--output", required=True, help="the new .osim file")
    s.add_argument("--samples", type=int, default=1000,
                   help="configurations sampled to place each obstacle and its contact hint (default 1000)")
    s.add_argument("--seed", type=int, default=0, help="seed of the Latin-hypercube sample (default 0)")
    s.add_argument("--hints", action="store_true",
                   help="write contact hints where the legacy wrap has no quadrant (default: none, the short "
                        "side; OpenSim's solver started from a hint may not converge)")
    s.add_argument("--lenient", action="store_true", help="import what can be represented and list the rest")
    s.set_defaults(func=cmd_smooth_paths)
