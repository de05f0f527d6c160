"""Path fitting: osim-emb fit-paths beside OpenSim 4.6's PolynomialPathFitter on the same model and sample.

    PYTHONPATH=. python benchmarks/bench_fit_paths.py [MODEL.osim] [--frames 50] [--samples-per-frame 25]

1. A reference trajectory: ``--frames`` frames of a smooth motion through the middle of every
   coordinate's range (each coordinate a sine over 60 % of its range, own frequency).
2. OpenSim's ``PolynomialPathFitter`` runs on it (its Latin-hypercube sample of ``--samples-per-frame``
   points per frame within ``--bounds`` degrees, orders 2..6, tolerances 1e-4 m); timed end to end.
3. ``osim_emb.paths.path_fitting.fit_paths`` fits the units on OpenSim's own sample (the file the
   fitter writes), same orders and tolerances; timed end to end (L and R of every sample, the fits).
4. Both fits are evaluated on a fresh test sample drawn by the same scheme (another seed) against the
   original paths (the package's L and R, equal to OpenSim's getLength / computeMomentArm): RMS and
   max errors of length and moment arm over all units and coordinates, leaving out the (unit, sample)
   pairs where the original path jumps away from its frame's (OpenSim's outlier filter; legacy wrapping).
"""

from __future__ import annotations

import argparse
import os
import sys

# One BLAS thread: the fits are many small solves, where OpenBLAS's thread pool only adds overhead
# (7x slower on a loaded two-core machine); OpenSim's fitter runs one solve per thread too.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from osim_emb.io import load_osim  # noqa: E402
from osim_emb.paths.geometry import lengths_and_moment_arms  # noqa: E402
from osim_emb.paths.function_based_path import (FunctionBasedMusculotendon, FunctionBasedPath,  # noqa: E402
                                                  function_path_lengths_and_moment_arms)
from osim_emb.paths.path_fitting import FitSettings, fit_paths, outlier_samples, sample_coordinates  # noqa: E402


#: Reference motions (degrees): each listed coordinate sweeps LOW..HIGH (a sine, own frequency); the
#: others stay at their defaults.  arm26: elbow flexion with some shoulder elevation, away from the
#: shoulder angles where its wrapped paths jump (TRIlong near 144 deg, BIClong near 31 deg).
MOTIONS = {
    "arm26": {"r_shoulder_elev": (-20.0, 20.0), "r_elbow_flex": (10.0, 120.0)},
}


def reference_trajectory(model, n_frames: int, stem: str) -> np.ndarray:
    """Frames (n_frames, n_q): the listed coordinates of MOTIONS[stem] move, or (unknown model) every
    coordinate sweeps its default +- 20 % of its range (clipped to the range)."""
    lo, hi = model.coordinate_ranges.T
    default = np.array([c.default for c in model.coordinates])
    t = np.linspace(0.0, 1.0, n_frames)[:, None]
    wave = 0.5 - 0.5 * np.cos(2 * np.pi * (1.0 + 0.37 * np.arange(model.n_q))[None, :] * t)  # 0..1
    if stem in MOTIONS:
        a, b = default.copy(), default.copy()
        for name, (x, y) in MOTIONS[stem].items():
            k = model.coordinate_index(name)
            a[k], b[k] = np.radians(x), np.radians(y)
    else:
        span = np.where(np.isfinite(hi - lo), 0.2 * (hi - lo), np.radians(20.0))
        a, b = np.maximum(default - span, lo), np.minimum(default + span, hi)
    return a + (b - a) * wave


def coordinate_path(doc, name: str) -> str:
    return doc.coordinate_path(name)


def write_trajectory(model, frames: np.ndarray, path: Path) -> None:
    """All of OpenSim's coordinates (dependent ones from their functions), radians, full paths."""
    doc = model.extras["document"]
    cols = {"time": np.linspace(0.0, 1.0, len(frames))}
    for k, c in enumerate(model.coordinates):
        cols[coordinate_path(doc, c.name) + "/value"] = frames[:, k]
    for d in model.dependent_coordinates:
        cols[coordinate_path(doc, d.name) + "/value"] = d.function.evaluate(frames, order=0).value
    import pandas as pd
    from osim_emb.io.motion import write_motion
    write_motion(path, pd.DataFrame(cols), name="reference")


def run_opensim(model_path: str, traj: Path, out_dir: Path, args, locked: list[str]) -> float:
    import opensim as osim
    osim.Logger.setLevelString("warn")
    fitter = osim.PolynomialPathFitter()
    fitter.setModel(osim.ModelProcessor(model_path))
    fitter.setCoordinateValues(osim.TableProcessor(str(traj)))
    fitter.setOutputDirectory(str(out_dir))
    fitter.setNumSamplesPerFrame(args.samples_per_frame)
    fitter.setGlobalCoordinateSamplingBounds(osim.Vec2(-args.bounds, args.bounds))
    for path in locked:  # OpenSim unlocks a coordinate given in the table: keep it (almost) still
        fitter.appendCoordinateSamplingBounds(path, osim.Vec2(-1e-9, 1e-9))  # (0, 0) is refused
    fitter.setMinimumPolynomialOrder(2)
    fitter.setMaximumPolynomialOrder(args.max_order)
    fitter.setPathLengthTolerance(1e-4)
    fitter.setMomentArmTolerance(1e-4)
    t0 = time.perf_counter()
    fitter.run()
    return time.perf_counter() - t0


def opensim_fits(set_file: Path) -> dict:
    """name -> FunctionBasedPath of OpenSim's FunctionBasedPathSet (its coordinates may be dependent ones)."""
    from lxml import etree
    from osim_emb.io.function_based_path_xml import read_function_based_path
    root = etree.parse(str(set_file)).getroot()
    out = {}
    for e in root.iter("FunctionBasedPath"):
        spec = read_function_based_path(e, lambda el, why: ValueError(why))
        out[e.get("name").rstrip("/").split("/")[-1]] = FunctionBasedPath(tuple(spec.coordinates),
                                                                          spec.length_function)
    return out


def errors(model, fits: dict, q: np.ndarray, names: list[str], samples_per_frame: int) -> dict:
    """RMS and max |error| of L and of R (over units and all generalized coordinates) against the original
    paths; a fit's R is its generalized force per newton (chain rule through dependent coordinates).
    Test samples where a unit's original path jumps away from its frame's (OpenSim's outlier filter,
    ``outlier_samples``) are left out of that unit's errors and counted."""
    ref_l, ref_r = lengths_and_moment_arms(model, q, names, allow_out_of_range=True)
    el, er, left_out = [], [], 0
    for m, name in enumerate(names):
        unit = FunctionBasedMusculotendon(name, "PathActuator", (), (), None, function_path=fits[name])
        length, arms = function_path_lengths_and_moment_arms(model, unit, q)
        keep = ~outlier_samples(np.column_stack([ref_l[:, m], ref_r[:, :, m]]), samples_per_frame)
        left_out += int((~keep).sum())
        el.append(length[keep] - ref_l[keep, m])
        er.append((arms[keep] - ref_r[keep, :, m]).ravel())
    el, er = np.concatenate(el), np.concatenate(er)
    return {"L_rms": np.sqrt(np.mean(el ** 2)), "L_max": np.abs(el).max(),
            "R_rms": np.sqrt(np.mean(er ** 2)), "R_max": np.abs(er).max(), "left_out": left_out}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(os.environ.get("OSIM_EMB_MODELS", Path(__file__).resolve().parents[2] / "shared" / "models"))
    p.add_argument("model", nargs="?", default=str(default / "arm26.osim"))
    p.add_argument("--frames", type=int, default=50)
    p.add_argument("--samples-per-frame", type=int, default=25)
    p.add_argument("--bounds", type=float, default=10.0, help="+- degrees around each frame (default 10)")
    p.add_argument("--max-order", type=int, default=6)
    p.add_argument("--motion", action="append", default=[],
                   help="NAME=LOW:HIGH (degrees): sweep a coordinate over this range instead of the preset")
    args = p.parse_args(argv)
    stem = Path(args.model).stem
    for item in args.motion:
        name, _, rng = item.partition("=")
        low, high = (float(v) for v in rng.split(":"))
        MOTIONS.setdefault(stem, {})[name.strip()] = (low, high)

    model = load_osim(args.model)
    lengths_and_moment_arms(model, model.default_configuration()[None] if hasattr(model, "default_configuration")
                            else np.zeros((1, model.n_q)))  # compile/warm the kernels outside the timings
    frames = reference_trajectory(model, args.frames, Path(args.model).stem)
    with tempfile.TemporaryDirectory(prefix="bench_fit_paths_") as tmp:
        tmp = Path(tmp)
        traj = tmp / "reference.sto"
        write_trajectory(model, frames, traj)
        locked = [coordinate_path(model.extras["document"], d.name) for d in model.dependent_coordinates
                  if d.kind == "locked"]
        t_os = run_opensim(args.model, traj, tmp, args, locked)
        stem = model.extras["document"].name
        os_fit = opensim_fits(tmp / f"{stem}_FunctionBasedPathSet.xml")
        from osim_emb.io.motion import coordinates_from_motion, read_motion
        table, header = read_motion(tmp / f"{stem}_coordinate_values_sampled.sto")
        sample = coordinates_from_motion(model, table, header)[1]

    settings = FitSettings(2, args.max_order, 1e-4, 1e-4)
    t0 = time.perf_counter()
    ours = fit_paths(model, sample, settings=settings)
    t_ours = time.perf_counter() - t0
    our_fit = {f.muscle: FunctionBasedPath(tuple(f.coordinates), f.polynomial) for f in ours}
    names = [n for n in our_fit if n in os_fit]

    test = sample_coordinates(model, frames, args.samples_per_frame, (-args.bounds, args.bounds), seed=12345)
    e_os = errors(model, os_fit, test, names, args.samples_per_frame)
    e_ours = errors(model, our_fit, test, names, args.samples_per_frame)
    print(f"model {Path(args.model).name}: {len(names)} units, {args.frames} frames x (1 + {args.samples_per_frame})"
          f" samples (+-{args.bounds:g} deg), orders 2..{args.max_order}, tolerances 1e-4 m; test sample "
          f"{len(test)} configurations (another seed); {e_ours['left_out']} (unit, sample) pairs where the original "
          f"path jumps left out")
    print(f"{'':28}{'RMS L (mm)':>11}{'max L (mm)':>11}{'RMS R (mm)':>11}{'max R (mm)':>11}{'time (s)':>10}")
    for label, e, t in (("OpenSim PolynomialPathFitter", e_os, t_os), ("osim-emb fit_paths", e_ours, t_ours)):
        print(f"{label:28}{1e3 * e['L_rms']:11.4f}{1e3 * e['L_max']:11.4f}{1e3 * e['R_rms']:11.4f}"
              f"{1e3 * e['R_max']:11.4f}{t:10.3f}")
    plain = [n for n in names if set(os_fit[n].coordinates) <= set(model.coordinate_names)]
    if len(plain) < len(names):  # OpenSim's fit names a dependent (coupled or locked) coordinate for the others
        e_os, e_ours = (errors(model, f, test, plain, args.samples_per_frame) for f in (os_fit, our_fit))
        print(f"the {len(plain)} units whose OpenSim fit names generalized coordinates only:")
        for label, e in (("OpenSim PolynomialPathFitter", e_os), ("osim-emb fit_paths", e_ours)):
            print(f"{label:28}{1e3 * e['L_rms']:11.4f}{1e3 * e['L_max']:11.4f}{1e3 * e['R_rms']:11.4f}"
                  f"{1e3 * e['R_max']:11.4f}")
    print(f"speed-up {t_os / t_ours:.1f}x; orders (OpenSim / osim-emb): "
          + ", ".join(f"{n} {os_fit[n].length_function.order}/{our_fit[n].length_function.order}" for n in names))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
