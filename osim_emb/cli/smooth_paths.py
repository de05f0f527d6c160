"""``osim-emb smooth-paths MODEL.osim -o NEW.osim``: legacy wrap objects -> Scholz2015GeometryPath obstacles."""

from __future__ import annotations

import argparse
import logging
import time

import numpy as np

from osim_emb.cli.common import add_lenient_option

#: lengths farther apart than this (m) are a disagreement with OpenSim
TOLERANCE = 1e-8


class OpenSimLengthCheck:
    """OpenSim 4.6's ``getLength`` of each written unit against the package's, at the default pose and at
    ``n_configurations`` sampled configurations.  Each configuration is evaluated on a fresh State initialized
    there (coordinate defaults set, ``initializeState``): OpenSim's solver then starts from the contact hints, as
    after ``initSystem`` (one model load; a later ``getLength`` on a moved State is warm-started, docs/paths.md).

    Called with (file, the package's model of it, unit names), returns {unit: message} for the units whose
    lengths differ by more than :data:`TOLERANCE`; ``counts`` keeps what the last call checked."""

    def __init__(self, n_configurations: int = 32, seed: int = 1):
        from osim_emb.opensim.bridge import require_opensim
        self.osim = require_opensim()
        self.n_configurations, self.seed = n_configurations, seed
        self.counts: dict = {}

    def __call__(self, path, model, names) -> dict:
        from osim_emb.io.scholz_convert import _sample
        # candidates: OpenSim evaluates every path of the model at once, and a configuration where one unit has no
        # path (a point inside an obstacle) is lost for all; so the sample is drawn until n are evaluated
        q = (_sample(model, 4 * self.n_configurations, self.seed) if self.n_configurations else
             np.atleast_2d(model.default_q))
        theirs, ours = self.lengths(path, model, names, q, wanted=self.n_configurations + 1)
        skipped = len(self.rows) - int(np.isfinite(theirs).all(axis=1).sum())
        q = q[self.rows]
        evaluated = np.isfinite(theirs).all(axis=1)
        keep = evaluated | (np.arange(len(q)) == 0)
        out = self._disagreements(model, names, q[keep], theirs[keep], ours[keep])
        self.counts["opensim_skipped"] = skipped
        self.counts["configurations"] = int(evaluated.sum())
        return out

    def lengths(self, path, model, names, q, wanted: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(OpenSim's, the package's) lengths (N, M) of the units ``names`` at the configurations q (N, n_q); NaN
        where one of them cannot evaluate the path.  With ``wanted``, the configurations are taken in order until
        OpenSim has evaluated that many: only those rows are returned (their indices in ``self.rows``)."""
        from osim_emb.opensim.bridge import OpenSimReference
        from osim_emb.progress import Progress
        osim = self.osim
        q = np.atleast_2d(q)
        try:
            ref = OpenSimReference(str(path), model)
        except RuntimeError as err:
            raise ValueError(f"OpenSim 4.6 cannot initialize the converted model: {err}; nothing written") from err
        paths = [osim.PathActuator.safeDownCast(ref.model_os.getForceSet().get(n)).getPath() for n in names]
        coords = [ref.coords.get(i) for i in range(ref.coords.getSize())]
        theirs = np.full((len(q), len(names)), np.nan)
        self.rows = np.arange(len(q))
        with Progress(f"OpenSim check: getLength of {len(names)} units", len(q)) as bar:
            for k, qk in enumerate(q):
                bar.advance()
                if wanted is not None and np.isfinite(theirs[:k, 0]).sum() >= wanted:
                    self.rows = np.arange(k)
                    break
                try:  # OpenSim's own coupled coordinates; it realizes the paths, which may fail here
                    ref.set_configuration(qk, check=None)
                except RuntimeError:
                    pass
                values = [c.getValue(ref.state) for c in coords]
                for c, v in zip(coords, values):
                    c.setDefaultValue(v)
                try:
                    state = ref.model_os.initializeState()
                    ref.model_os.realizePosition(state)
                    theirs[k] = [p.getLength(state) for p in paths]
                except RuntimeError:  # e.g. a path point inside an obstacle: OpenSim evaluates nothing there
                    pass
        q, theirs = q[self.rows], theirs[self.rows]
        ours = np.full_like(theirs, np.nan)
        with Progress(f"OpenSim check: the package's smooth lengths at {len(q)} configurations", len(names),
                      unit="unit") as units_bar:
            ours = self._package_lengths(model, names, q, ours, units_bar)
        return theirs, ours

    @staticmethod
    def _package_lengths(model, names, q, ours, bar):
        from osim_emb.paths.geometry import muscle_lengths
        for j, name in enumerate(names):
            bar.advance()
            try:
                ours[:, j] = muscle_lengths(model, q, [name])[:, 0]
            except (ValueError, RuntimeError):  # the package refuses some configurations: one at a time
                for k in range(len(q)):
                    try:
                        ours[k, j] = muscle_lengths(model, q[k], [name])[0, 0]
                    except (ValueError, RuntimeError):
                        pass
        return ours

    def _disagreements(self, model, names, q, theirs, ours) -> dict:
        compared = np.isfinite(theirs) & np.isfinite(ours)
        diff = np.where(compared, np.abs(theirs - ours), 0.0)
        units = {u.name: u for u in model.muscles}
        out = {}
        refused = np.isnan(ours) & np.isfinite(theirs)
        for j in range(len(names)):
            obstacles = units[names[j]].scholz_path.obstacles
            hinted = [np.isfinite(o.hint).all() for o in obstacles]
            listed = [o.name + (f" (hint {np.round(o.hint, 4).tolist()})" if h else "") for o, h in zip(obstacles, hinted)]
            hinted = any(hinted)
            if (diff[:, j] > TOLERANCE).any():
                k = int(np.argmax(diff[:, j]))
                reason = ("a difference at the scale of the solvers' tolerances" if diff[k, j] < 1e-6 else
                          "OpenSim's solver, started from the contact hint, ends on another path" if hinted else
                          "OpenSim's solver ends on another path")
                ours_text = f"the package's {ours[k, j]:.9g} m"
            elif hinted and refused[:, j].any():  # the package's solver from the hint finds no path there
                k = int(np.argmax(refused[:, j]))
                reason, ours_text = "the package's solver from the contact hint finds no path", "the package: none"
            else:
                continue
            where = "at the default pose" if k == 0 else f"at sampled configuration {k} of {len(q) - 1}"
            out[names[j]] = (f"{where} OpenSim's getLength is {theirs[k, j]:.9g} m, {ours_text} "
                             f"(obstacles {', '.join(listed)}): {reason}")
        self.counts = {"units": len(names), "configurations": len(q), "disagree": len(out),
                       "opensim_skipped": int(np.isnan(theirs).all(axis=1).sum()),
                       "package_refused": int((np.isnan(ours) & np.isfinite(theirs)).sum())}
        return out



def cmd_smooth_paths(args: argparse.Namespace) -> int:
    from osim_emb.io import load_osim
    from osim_emb.io.outputs import atomic_files, check_output_file
    from osim_emb.io.scholz_convert import solvable_smooth_paths_tree, write_tree
    from osim_emb.paths.geometry import muscle_lengths

    t0 = time.perf_counter()
    check_output_file(args.output, overwrite=args.overwrite, inputs=[args.model])
    model = load_osim(args.model, strict=not args.lenient)
    try:
        check = OpenSimLengthCheck(args.check_configurations) if args.check_configurations >= 0 else None
        unchecked = None if check else "--check-configurations < 0"
    except ImportError:
        check, unchecked = None, "OpenSim is not installed (pip install 'osim-emb[opensim]')"
    if check is not None:
        try:
            check.osim.Model(str(args.model)).initSystem()
        except RuntimeError as err:
            check, unchecked = None, f"OpenSim 4.6 cannot initialize the input model either: {str(err)[:300]}"
    tree, converted, warnings = solvable_smooth_paths_tree(model, args.samples, args.seed, args.hints,
                                                           strict=not args.lenient, check=check)
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
    if check is not None:
        c = check.counts
        refused = sum("OpenSim's evaluation of its smooth path differs" in w for w in warnings)
        dropped = sum("written without contact hints" in w for w in warnings)
        print(f"OpenSim check: {c['units']} units written, each equal to OpenSim 4.6's getLength to {TOLERANCE:g} m "
              f"at the default pose and {c['configurations'] - 1} sampled configurations "
              f"({c['opensim_skipped']} configurations OpenSim cannot evaluate and {c['package_refused']} "
              f"(unit, configuration) pairs the package refuses not compared); {dropped} written without their "
              f"contact hints, {refused} kept legacy because OpenSim's evaluation differs")
    else:
        message = f"OpenSim check not run ({unchecked}): the written paths were not compared with OpenSim's getLength"
        logging.warning("%s: %s", args.model, message)
        print(message)
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
    s.add_argument("--check-configurations", type=int, default=32,
                   help="configurations sampled (besides the default pose) at which each written unit's length is "
                        "compared with OpenSim's getLength, where OpenSim is installed (default 32; -1: no check)")
    add_lenient_option(s)
    s.set_defaults(func=cmd_smooth_paths)
