"""``osim-emb smooth-paths MODEL.osim -o NEW.osim``: legacy wrap objects -> Scholz2015GeometryPath obstacles."""

from __future__ import annotations

import argparse
import logging
import time

import numpy as np

from osim_emb.cli.common import add_lenient_option

log = logging.getLogger(__name__)

#: lengths farther apart than this (m) are a disagreement with OpenSim
TOLERANCE = 1e-8


class OpenSimLengthCheck:
    """OpenSim 4.6's ``getLength`` of each written unit against the package's, at the default pose and at
    ``n_configurations`` sampled configurations, from two starts of OpenSim's smooth-path solver:

    * **cold**: a fresh State initialized at the configuration (coordinate defaults set, ``initializeState``): the
      solver starts from the contact hints;
    * **warm from the default pose**: the State as after ``initSystem`` (the default pose, realized), then every
      coordinate set (``setValue``) and the State realized -- OpenSim's usual pattern, and its tools' from a
      motion's first frame: the solver starts from the default pose's path (docs/paths.md, 'Warm start') and may
      end on another geodesic.

    Called with (file, the package's model of it, unit names), returns {unit: message} for the units whose
    lengths differ by more than :data:`TOLERANCE` from either start (the message names the start, the
    configuration and both lengths); ``counts`` keeps what the last call checked."""

    STARTS = ("cold start", "warm start from the default pose")

    def __init__(self, n_configurations: int = 100, seed: int = 1):
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
        cold, warm, ours = self.lengths(path, model, names, q, wanted=self.n_configurations + 1)
        q = q[self.rows]
        evaluated = np.isfinite(cold).all(axis=1) & np.isfinite(warm).all(axis=1)
        self.q = q[evaluated | (np.arange(len(q)) == 0)]  # the configurations compared
        keep = evaluated | (np.arange(len(q)) == 0)
        out = self._disagreements(model, names, q[keep], np.stack([cold[keep], warm[keep]]), ours[keep])
        self.counts["opensim_skipped"] = int(len(q) - evaluated.sum())
        self.counts["configurations"] = int(evaluated.sum())
        return out

    def lengths(self, path, model, names, q, wanted: int | None = None):
        """(OpenSim's cold, OpenSim's warm-from-default, the package's) lengths (N, M) of the units ``names`` at the
        configurations q (N, n_q); NaN where one of them cannot evaluate the path.  With ``wanted``, the
        configurations are taken in order until OpenSim has evaluated that many from both starts: only those rows
        are returned (their indices in ``self.rows``)."""
        from osim_emb.opensim.bridge import OpenSimReference
        from osim_emb.progress import Progress
        osim = self.osim
        q = np.atleast_2d(q)
        try:
            ref = OpenSimReference(str(path), model, say_left_out=False)
        except RuntimeError as err:
            raise ValueError(f"OpenSim 4.6 cannot initialize the converted model: {err}; nothing written") from err
        om = ref.model_os
        paths = [_abstract_path(osim, ref._force(n)) for n in names]  # muscles, path actuators, springs, ligaments
        coords = [ref.coords.get(i) for i in range(ref.coords.getSize())]
        defaults = [c.getDefaultValue() for c in coords]
        cold = np.full((len(q), len(names)), np.nan)
        warm = np.full_like(cold, np.nan)
        self.rows = np.arange(len(q))
        with Progress(f"OpenSim check: getLength of {len(names)} units, cold and warm from the default pose",
                      len(q)) as bar:
            for k, qk in enumerate(q):
                bar.advance()
                if wanted is not None and (np.isfinite(cold[:k, 0]) & np.isfinite(warm[:k, 0])).sum() >= wanted:
                    self.rows = np.arange(k)
                    break
                try:  # OpenSim's own coupled coordinates; it realizes the paths, which may fail here
                    ref.set_configuration(qk, check=None)
                except RuntimeError:
                    pass
                values = [c.getValue(ref.state) for c in coords]
                for c, v in zip(coords, values):
                    c.setDefaultValue(v)
                try:  # cold: a State initialized at the configuration
                    state = om.initializeState()
                    om.realizePosition(state)
                    cold[k] = [p.getLength(state) for p in paths]
                except RuntimeError:  # e.g. a path point inside an obstacle: OpenSim evaluates nothing there
                    pass
                for c, v in zip(coords, defaults):
                    c.setDefaultValue(v)
                try:  # warm: the State after initSystem (the default pose, its paths solved), then setValue
                    state = om.initializeState()
                    om.realizePosition(state)
                    for c, v in zip(coords, values):
                        if not c.getLocked(state):
                            c.setValue(state, v, False)
                    om.realizePosition(state)
                    warm[k] = [p.getLength(state) for p in paths]
                except RuntimeError:
                    pass
        q, cold, warm = q[self.rows], cold[self.rows], warm[self.rows]
        ours = np.full_like(cold, np.nan)
        with Progress(f"OpenSim check: the package's smooth lengths at {len(q)} configurations", len(names),
                      unit="unit") as units_bar:
            ours = self._package_lengths(model, names, q, ours, units_bar)
        return cold, warm, ours

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
        """theirs (2, N, M): OpenSim's lengths from each of :attr:`STARTS`."""
        from osim_emb.io.scholz_convert import pose_text
        compared = np.isfinite(theirs) & np.isfinite(ours)[None]
        diff = np.where(compared, np.abs(theirs - ours[None]), 0.0)
        units = {u.name: u for u in model.muscles}
        out = {}
        refused = np.isnan(ours) & np.isfinite(theirs).all(axis=0)
        for j in range(len(names)):
            obstacles = units[names[j]].scholz_path.obstacles
            hinted = [np.isfinite(o.hint).all() for o in obstacles]
            listed = [o.name + (f" (hint {np.round(o.hint, 4).tolist()})" if h else "") for o, h in zip(obstacles, hinted)]
            hinted = any(hinted)
            bad = diff[:, :, j] > TOLERANCE
            if bad.any():
                start, k = np.unravel_index(int(np.argmax(diff[:, :, j])), diff[:, :, j].shape)
                how = self.STARTS[start]
                n_bad = [int(b.sum()) for b in bad]
                reason = ("a difference at the scale of the solvers' tolerances" if diff[start, k, j] < 1e-6 else
                          "OpenSim's solver, warm-started from the default pose's path, ends on another path"
                          if start == 1 else
                          "OpenSim's solver, started from the contact hint, ends on another path" if hinted else
                          "OpenSim's solver ends on another path")
                theirs_text = f"OpenSim's getLength ({how}) is {theirs[start, k, j]:.9g} m"
                ours_text = f"the package's {ours[k, j]:.9g} m"
                count = (f"; beyond {TOLERANCE:g} m at {n_bad[0]} cold and {n_bad[1]} warm-from-default of "
                         f"{len(q)} configurations")
            elif hinted and refused[:, j].any():  # the package's solver from the hint finds no path there
                k = int(np.argmax(refused[:, j]))
                theirs_text = f"OpenSim's getLength is {theirs[0, k, j]:.9g} m"
                reason, ours_text, count = "the package's solver from the contact hint finds no path", \
                    "the package: none", ""
            else:
                continue
            where = ("at the default pose" if k == 0 else
                     f"at sampled configuration {k} of {len(q) - 1} ({pose_text(model, q[k], names[j])})")
            out[names[j]] = (f"{where} {theirs_text}, {ours_text} (obstacles {', '.join(listed)}): {reason}{count}")
        self.counts = {"units": len(names), "configurations": len(q), "disagree": len(out),
                       "opensim_skipped": int((~np.isfinite(theirs).all(axis=0)).all(axis=1).sum()),
                       "package_refused": int(refused.sum())}
        return out



def _abstract_path(osim, force):
    """A force's path as OpenSim's AbstractGeometryPath (a Scholz2015GeometryPath once converted): a
    PathActuator's getPath, else its 'path' property (PathSpring, Ligament; 'GeometryPath' before OpenSim 4.5)."""
    actuator = osim.PathActuator.safeDownCast(force)
    if actuator is not None:
        return actuator.getPath()
    prop = "path" if force.hasProperty("path") else "GeometryPath"
    return osim.AbstractGeometryPath.safeDownCast(force.getPropertyByName(prop).getValueAsObject())

def cmd_smooth_paths(args: argparse.Namespace) -> int:
    from osim_emb.io import load_osim
    from osim_emb.io.outputs import atomic_files, check_output_file
    from osim_emb.io.scholz_convert import internal_reload, solvable_smooth_paths_tree, write_tree
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
        log.warning("%s: %s", args.model, w)
    if not converted:
        if not any(getattr(u, "wraps", ()) for u in model.muscles):
            raise ValueError(f"{args.model}: no muscle has wrap objects ({len(model.muscles)} muscles, "
                             f"{len(model.wrap_objects)} wrap objects); nothing written")
        wrapped = sum(bool(getattr(u, "wraps", ())) for u in model.muscles)
        raise ValueError(f"{args.model}: no unit converts: each of the {wrapped} "
                         "units with wrap objects is kept legacy (see the warnings for why: unsupported wrap objects, "
                         "no path, a disagreement with OpenSim's getLength); nothing written")
    with atomic_files([args.output], overwrite=args.overwrite, inputs=[args.model]) as (tmp,):
        write_tree(tree, tmp)
        with internal_reload():  # the written file reads back (its warnings would name the partial file)
            smooth = load_osim(tmp, strict=not args.lenient)
        names = [u.name for u in converted]
        q = model.default_q
        legacy_l = muscle_lengths(model, q, names)[0]
        smooth_l = muscle_lengths(smooth, q, names)[0]
        # how far the smooth paths are from the legacy ones (the package's lengths of both) where they were checked
        sample = getattr(check, "q", None)
        if sample is None:
            from osim_emb.io.scholz_convert import _sample
            sample = _sample(model, max(args.check_configurations, 32), 1)
        apart = np.full(len(names), np.nan)
        for j, name in enumerate(names):
            for rows in [slice(None)] + [[k] for k in range(len(sample))]:  # one at a time where one is refused
                try:
                    d = np.abs(muscle_lengths(smooth, sample[rows], [name])
                               - muscle_lengths(model, sample[rows], [name]))
                except (ValueError, RuntimeError):
                    continue
                apart[j] = np.fmax(apart[j], float(np.nanmax(d)))
                if isinstance(rows, slice):
                    break
    hinted = [u.name for u in converted if any(kind == "obstacle" and np.isfinite(hint).all()
                                               for kind, _, hint in u.elements)]
    if hinted:  # once, naming the user's file (the reader's own warning named the partial file)
        log.warning("%s: %d unit(s) written with contact hints (%s): the package goes round each obstacle on its "
                    "hint's side; OpenSim's solver, started from a hint or from another path, can end on another "
                    "path %s (docs/paths.md, 'Which side from a hint')", args.output, len(hinted),
                    ", ".join(hinted[:5]) + (", ..." if len(hinted) > 5 else ""),
                    "away from the checked configurations and starts" if check is not None else
                    "(not checked against OpenSim)")
    w = max([4] + [len(n) for n in names])
    print(f"{'unit':<{w}}  legacy L (m)  smooth L (m)  max |smooth - legacy| (mm)  obstacles "
          f"(L at the default pose; the largest difference at the {len(sample)} configurations "
          f"{'checked' if check is not None else 'sampled'})")
    for u, a, b, d in zip(converted, legacy_l, smooth_l, apart):
        obstacles = [name for kind, name, _ in u.elements if kind == "obstacle"]
        print(f"{u.name:<{w}}  {a:12.6f}  {b:12.6f}  {1e3 * d:26.3f}  {','.join(obstacles)}")
    if check is not None:
        c = check.counts
        refused = sum("OpenSim's evaluation of its smooth path differs" in w for w in warnings)
        dropped = sum("written without contact hints" in w for w in warnings)
        print(f"OpenSim check: {c['units']} units written, each equal to OpenSim 4.6's getLength to {TOLERANCE:g} m "
              f"from cold starts (initializeState at the pose) and warm starts from the default pose (initSystem, "
              f"then setValue) at the default pose and {c['configurations'] - 1} sampled configurations "
              f"({c['opensim_skipped']} configurations OpenSim cannot evaluate and {c['package_refused']} "
              f"(unit, configuration) pairs the package refuses not compared; elsewhere, or from another start, "
              f"OpenSim's solver may end on another path: docs/paths.md, 'Warm start'); {dropped} written without "
              f"their contact hints, {refused} kept legacy because OpenSim's evaluation differs")
    else:
        message = f"OpenSim check not run ({unchecked}): the written paths were not compared with OpenSim's getLength"
        log.warning("%s: %s", args.model, message)
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
    s.add_argument("--check-configurations", type=int, default=100,
                   help="configurations sampled (besides the default pose) at which each written unit's length is "
                        "compared with OpenSim's getLength, from a cold start and warm from the default pose, where "
                        "OpenSim is installed (default 100; -1: no check)")
    add_lenient_option(s)
    s.set_defaults(func=cmd_smooth_paths)
