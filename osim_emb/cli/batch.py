"""``osim-emb batch``: moment-arm sweeps over many models on Dask (osim_emb.opensim.batch)."""

from __future__ import annotations

import argparse
import logging

from osim_emb.cli.common import _csv, add_lenient_option


def cmd_batch(args: argparse.Namespace) -> int:
    from osim_emb.opensim.batch import model_tasks, run_batch
    from osim_emb.io.outputs import check_output_folder
    check_output_folder(args.output, overwrite=args.overwrite, inputs=[args.models])
    tasks = model_tasks(args.models, variants=args.variants, tolerance_m=args.tolerance_mm / 1000.0,
                        wrap_tolerance_m=args.wrap_tolerance_mm / 1000.0, seed=args.seed, strict=not args.lenient)
    res = run_batch(tasks, _csv(args.sweep), args.step, args.output, muscles=_csv(args.muscles) or None,
                    ma_coordinates=_csv(args.coordinates) or None, opensim_compat=args.opensim_compat,
                    references=_csv(args.references), scheduler=args.scheduler, n_workers=args.workers,
                    threads_per_worker=args.threads_per_worker, progress=not args.quiet, step_mm=args.step_mm,
                    overwrite=args.overwrite, keep_going=args.keep_going)
    print(f"wrote {res['output']}: {res['rows']} rows from {res['models'] - res['failures']} models in "
          f"{res['seconds']:.1f} s ({res['models_per_second']:.2f} models/s on {res['workers']} worker{'' if res['workers'] == 1 else 's'})")
    if res["failures"]:
        logging.getLogger("osim_emb").error("%d of %d models failed: listed in %s", res["failures"],
                                              res["models"], f"{res['output']}/_failures.csv")
        return 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("batch", help="moment-arm sweeps over a folder of models or perturbed variants of one, "
                                     "as Dask tasks; results in Parquet")
    s.add_argument("models", help="a folder of .osim models, or one .osim model (with --variants)")
    s.add_argument("-o", "--output", required=True, help="output Parquet dataset (a new folder of part files)")
    add_lenient_option(s)
    s.add_argument("--sweep", required=True, help="coordinates to sweep over their ranges, e.g. elv_angle,shoulder_elv")
    s.add_argument("--step", type=float, default=5.0, help="sweep step of a rotational coordinate, degrees (default 5)")
    s.add_argument("--step-mm", type=float, default=5.0,
                   help="sweep step of a translational coordinate, millimetres (default 5)")
    s.add_argument("--coordinates", help="moment-arm coordinates (default: the swept ones)")
    s.add_argument("--muscles", help="comma-separated muscle names (default: all)")
    s.add_argument("--variants", type=int, default=0, help="number of perturbed variants of the model")
    s.add_argument("--tolerance-mm", type=float, default=2.0,
                   help="attachment points move uniformly within +-this per axis (default 2 mm)")
    s.add_argument("--wrap-tolerance-mm", type=float, default=0.0,
                   help="wrap-object origins move uniformly within +-this per axis (default 0)")
    s.add_argument("--seed", type=int, default=0, help="variant k uses seed SEED + k (default 0)")
    s.add_argument("--references", default="",
                   help="OpenSim references per model file, e.g. computeMomentArm (not for variants)")
    s.add_argument("--opensim-compat", action="store_true", help="reproduce OpenSim's stale wrap-point cache")
    s.add_argument("--scheduler", help="address of an existing Dask scheduler (default: an embedded LocalCluster)")
    s.add_argument("--workers", type=int, default=2, help="worker processes of the embedded cluster (default 2)")
    s.add_argument("--threads-per-worker", type=int, default=1, help="threads of each worker process")
    s.add_argument("--keep-going", action="store_true",
                   help="run the other models when one fails; failures listed in OUTPUT/_failures.csv, exit code 1")
    s.set_defaults(func=cmd_batch)
