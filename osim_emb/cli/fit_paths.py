"""``osim-emb fit-paths MODEL.osim -o NEW.osim``: replace muscle paths by fitted FunctionBasedPaths."""

from __future__ import annotations

import argparse
import logging
import time

import numpy as np

from osim_emb.cli.common import add_lenient_option

log = logging.getLogger(__name__)


def reference_frames(model, trajectory: str | None, n_frames: int, seed: int) -> np.ndarray:
    """The frames to sample around: a motion file's generalized coordinates, or a Latin hypercube
    over the coordinates' ranges (the default pose +- 90 degrees / 0.1 m where a range is infinite)."""
    if trajectory:
        from osim_emb.io.motion import coordinates_from_motion, read_motion
        table, header = read_motion(trajectory)
        return coordinates_from_motion(model, table, header)[1]
    from scipy.stats import qmc
    lo, hi = model.coordinate_ranges.T.copy()
    default = np.array([c.default for c in model.coordinates])
    half = np.array([np.pi / 2 if c.motion_type == "rotational" else 0.1 for c in model.coordinates])
    lo = np.where(np.isfinite(lo), lo, default - half)
    hi = np.where(np.isfinite(hi), hi, default + half)
    return lo + qmc.LatinHypercube(d=model.n_q, seed=seed).random(n_frames) * (hi - lo)


def cmd_fit_paths(args: argparse.Namespace) -> int:
    from osim_emb.io import load_osim
    from osim_emb.io.osim_writer import write_osim
    from osim_emb.io.function_based_path_xml import document_with_fitted_paths
    from osim_emb.paths.path_fitting import FitSettings, sample_coordinates

    from osim_emb.io.outputs import check_output_file, atomic_files

    t0 = time.perf_counter()
    check_output_file(args.output, overwrite=args.overwrite,
                      inputs=[args.model] + ([args.trajectory] if args.trajectory else []))
    model = load_osim(args.model, strict=not args.lenient)
    bounds = tuple(float(x) for x in args.bounds.split(","))
    if len(bounds) != 2 or bounds[0] > bounds[1]:
        raise ValueError(f"--bounds expects LOW,HIGH in degrees with LOW <= HIGH, got {args.bounds!r}")
    frames = reference_frames(model, args.trajectory, args.frames, args.seed)
    samples = sample_coordinates(model, frames, args.samples_per_frame, bounds, seed=args.seed)
    settings = FitSettings(args.min_order, args.max_order, args.length_tolerance, args.moment_arm_tolerance)
    muscles = [m.strip() for m in args.muscles.split(",")] if args.muscles else None
    doc, fits = document_with_fitted_paths(model, samples, muscles, settings, opensim_compat=args.opensim_compat,
                                           samples_per_frame=args.samples_per_frame)
    if not fits:
        raise ValueError(f"{args.model}: no musculotendon unit spans a coordinate over the sample; nothing written")
    above = [f.muscle for f in fits if not f.met_tolerance]
    advice = "raise --max-order, narrow --bounds, or sample more (--frames, --samples-per-frame)"
    if above and args.fail_above_tolerance:
        raise ValueError(f"{args.model}: {len(above)} of {len(fits)} units above the tolerances ({', '.join(above)}); "
                         f"nothing written (--fail-above-tolerance): {advice}")
    inputs = [args.model] + ([args.trajectory] if args.trajectory else [])
    with atomic_files([args.output], overwrite=args.overwrite, inputs=inputs) as (tmp,):
        write_osim(doc, tmp, protect=inputs)
    elapsed = time.perf_counter() - t0
    w = max([4] + [len(f.muscle) for f in fits])  # coordinates last: the only long column
    print(f"{'unit':<{w}}  order  RMS L (mm)  RMS R (mm)  max R (mm)  tolerances  coordinates")
    for f in fits:
        print(f"{f.muscle:<{w}}  {f.polynomial.order:>5}  {1e3 * f.length_rms:10.4f}  {1e3 * f.moment_arm_rms.max():10.4f}"
              f"  {1e3 * f.moment_arm_max.max():10.4f}  {'met' if f.met_tolerance else 'above':<10}  "
              f"{','.join(f.coordinates)}")
    print(f"wrote {args.output}: {len(fits)} FunctionBasedPaths fitted on {len(samples)} samples "
          f"({len(frames)} frames x (1 + {args.samples_per_frame})) in {elapsed:.2f} s")
    from osim_emb.paths.path_fitting import domain_text, narrowly_sampled, sample_domain
    fitted = list(dict.fromkeys(c for f in fits for c in f.coordinates))
    narrow = narrowly_sampled(sample_domain(model, samples, fitted))
    if narrow:
        log.warning("the fitted paths hold near the sampled poses only (%s); sampled over less than 90%% of the "
                    "range of %s; the file keeps the model's ranges and records each unit's domain in a comment",
                    f"within {args.bounds} deg of the {len(frames)} frames of {args.trajectory}" if args.trajectory
                    else f"{len(frames)} frames", "; ".join(
                        f"{domain_text([d])} of [{d[3]:.4g}, {d[4]:.4g}]" for d in narrow[:8])
                    + ("; ..." if len(narrow) > 8 else ""))
    if above:
        log.warning("%d of %d units above the tolerances (%s): %s; --fail-above-tolerance makes this an error",
                    len(above), len(fits), ", ".join(above), advice)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("fit-paths", help="fit each muscle's length L(q) by a polynomial from the exact L and "
                                         "moment arms, and write FunctionBasedPaths (OpenSim 4.6)")
    s.add_argument("model", help=".osim file")
    s.add_argument("-o", "--output", required=True, help="the new .osim file")
    s.add_argument("--trajectory", help=".sto/.mot of the generalized coordinates to sample around "
                                        "(default: --frames Latin-hypercube frames over the coordinate ranges)")
    s.add_argument("--frames", type=int, default=100, help="reference frames without --trajectory (default 100)")
    s.add_argument("--samples-per-frame", type=int, default=25, help="samples around each frame (default 25)")
    s.add_argument("--bounds", default="-10,10", help="sampling bounds around each frame, degrees (converted to "
                                                      "radians for every coordinate, as OpenSim does) (default -10,10)")
    s.add_argument("--min-order", type=int, default=2, help="lowest polynomial order tried (default 2)")
    s.add_argument("--max-order", type=int, default=6, help="highest polynomial order (default 6)")
    s.add_argument("--length-tolerance", type=float, default=1e-4, help="RMS length error to reach, m (1e-4)")
    s.add_argument("--moment-arm-tolerance", type=float, default=1e-4,
                   help="RMS moment-arm error to reach per coordinate, m (1e-4)")
    s.add_argument("--muscles", help="comma-separated units to fit (default: all)")
    s.add_argument("--seed", type=int, default=0, help="seed of the Latin-hypercube sampling (default 0)")
    s.add_argument("--opensim-compat", action="store_true",
                   help="fit OpenSim's moment arms with its stale wrap-point cache (paths with several wraps)")
    s.add_argument("--fail-above-tolerance", action="store_true",
                   help="exit with an error, writing nothing, when a unit misses the tolerances (default: write "
                        "the best fits and warn)")
    add_lenient_option(s)
    s.set_defaults(func=cmd_fit_paths)
