"""Speed of smooth (Scholz2015GeometryPath) paths: arm26 converted by ``osim-emb smooth-paths`` (4 of its 6 units:
a cylinder span each for TRIlat, TRImed, BRA, an ellipsoid span for BIClong), against OpenSim 4.6 on the same file.

1. Per pose: the package's ``lengths_and_moment_arms(model, q[None])`` one configuration at a time, and OpenSim's
   ``getLength`` + ``computeMomentArm`` (every Scholz unit, every coordinate) after ``realizePosition`` at each
   configuration (one State, its wrapping solver warm-started from the previous pose, as in a simulation).
   The same configurations for both: a smooth sweep through the coordinate ranges (those the package evaluates;
   OpenSim may fail at some: counted).
2. A muscle-driven simulation of 0.1 s (bench_muscle_driven.py's arm26 excitations): the package's
   ``simulate_muscles(model, 0.1, excitations, rtol=1e-6, atol=1e-8)`` and OpenSim's Manager
   (``opensim_muscle_simulation(..., accuracy=1e-5, one_shot=True)``, its default accuracy), both errors against
   a tight package reference (DOP853, rtol 1e-12) at 11 instants, as bench_muscle_driven.py measures them.

    python benchmarks/bench_smooth_paths.py                    # converts arm26 first (about 1 min), then ~1 min
    python benchmarks/bench_smooth_paths.py --smooth arm26s.osim --repeat 3   # an already converted file
    python benchmarks/bench_smooth_paths.py --smooth mobls.osim --no-simulation   # MoBL after `osim-emb convert`
                                                                                  # and `osim-emb smooth-paths`
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
MODELS = Path(os.environ.get("OSIM_EMB_MODELS", HERE.parents[1] / "shared" / "models"))

from bench_muscle_driven import CASES  # noqa: E402

from osim_emb.io import load_osim  # noqa: E402
from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation  # noqa: E402
from osim_emb.paths.geometry import lengths_and_moment_arms  # noqa: E402
from osim_emb.simulation.muscle_driven import simulate_muscles  # noqa: E402


def convert(out: Path) -> Path:
    subprocess.run([sys.executable, "-m", "osim_emb.cli", "smooth-paths", str(MODELS / "arm26.osim"), "-o", str(out)],
                   check=True, stdout=subprocess.DEVNULL)
    return out


def configurations(model, n: int) -> np.ndarray:
    """n configurations along a smooth closed sweep through the coordinate ranges (each coordinate
    0.5 + 0.4 sin(2 pi k s + k), k = 1, 2, ...: neighbours close, as in a simulation, so that OpenSim's solver,
    warm-started from the previous pose, is in its element), those at which the package evaluates every unit."""
    lo, hi = model.coordinate_ranges.T
    s = np.linspace(0.0, 1.0, 2 * n, endpoint=False)[:, None]
    k = np.arange(1, model.n_q + 1)
    q = lo + (hi - lo) * (0.5 + 0.4 * np.sin(2 * np.pi * k * s + k))
    good = []
    for row in q:
        try:
            lengths_and_moment_arms(model, row[None])
            good.append(row)
        except (ValueError, RuntimeError):
            pass
    return np.array(good[::max(1, len(good) // n)][:n])


def package_per_pose(model, q: np.ndarray, repeat: int, muscles=None) -> float:
    lengths_and_moment_arms(model, q[:1], muscles)  # compile / warm
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        for row in q:
            lengths_and_moment_arms(model, row[None], muscles)
        best = min(best, (time.perf_counter() - t0) / len(q))
    return best


def opensim_per_pose(path: Path, q: np.ndarray, repeat: int) -> tuple:
    """Seconds per pose of realizePosition + getLength (every Scholz unit), of the same + computeMomentArm (every
    Scholz unit and coordinate), the number of poses OpenSim evaluated (it may refuse some), and of Scholz units."""
    import opensim as osim
    model = osim.Model(str(path))
    state = model.initSystem()
    cs = model.getCoordinateSet()
    coords = [cs.get(i) for i in range(cs.getSize())]
    paths = []
    forces = model.getForceSet()
    for i in range(forces.getSize()):
        m = osim.Muscle.safeDownCast(forces.get(i))
        if m is not None and osim.Scholz2015GeometryPath.safeDownCast(m.updPath()) is not None:
            paths.append(m.getPath())
    out = []
    for moment_arms in (False, True):
        best, done = np.inf, 0
        for _ in range(repeat):
            t0 = time.perf_counter()
            done = 0
            for row in q:
                for c, v in zip(coords, row):
                    c.setValue(state, float(v), False)
                try:
                    model.realizePosition(state)
                    for p in paths:
                        p.getLength(state)
                        for c in coords if moment_arms else ():
                            p.computeMomentArm(state, c)
                    done += 1
                except RuntimeError:  # OpenSim's solver may fail at a pose (geodesic step limit)
                    pass
            best = min(best, (time.perf_counter() - t0) / len(q))
        out.append(best)
    return out[0], out[1], done, len(paths)


def simulation(path: Path, repeat: int) -> None:
    model = load_osim(str(path))
    _, excitations = CASES["arm26"]
    t_end = 0.1
    times = np.linspace(0.0, t_end, 11)
    simulate_muscles(model, 0.001, excitations)  # compile / warm
    ref = simulate_muscles(model, t_end, excitations, t_eval=times, method="DOP853", rtol=1e-12, atol=1e-13)
    qref = ref[model.coordinate_names].to_numpy()
    dt = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        tab = simulate_muscles(model, t_end, excitations, t_eval=times, rtol=1e-6, atol=1e-8)
        dt = min(dt, time.perf_counter() - t0)
    err = np.abs(tab[model.coordinate_names].to_numpy() - qref).max()
    print(f"package simulate_muscles (method {tab.attrs['method']}, rtol 1e-6, atol 1e-8), {t_end} s: {dt:.3f} s, "
          f"{tab.attrs['nfev']} right-hand sides ({dt / tab.attrs['nfev'] * 1e3:.2f} ms each), "
          f"max |q - q_ref| = {err:.1e} rad")
    steps = opensim_muscle_simulation(path, times, excitations, accuracy=1e-5)
    cols = [steps["names"].index(n) for n in model.coordinate_names]
    err_os = np.abs(steps["q"][:, cols] - qref).max()
    one = min((opensim_muscle_simulation(path, times, excitations, accuracy=1e-5, one_shot=True)
               for _ in range(repeat)), key=lambda r: r["seconds"])
    counts = (f", {one['realizations']} realizations ({one['seconds'] / one['realizations'] * 1e6:.0f} us each)"
              if "realizations" in one else "")
    print(f"OpenSim Manager (accuracy 1e-5, one integrate call), {t_end} s: {one['seconds']:.3f} s{counts}, "
          f"max |q - q_ref| = {err_os:.1e} rad")
    print(f"ratio package / OpenSim: {dt / one['seconds']:.1f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smooth", type=Path, help="an arm26 already converted by osim-emb smooth-paths")
    ap.add_argument("--poses", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3, help="each time the fastest of this many (a shared machine)")
    ap.add_argument("--no-simulation", action="store_true", help="per-pose costs only (e.g. for a converted MoBL)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.smooth or convert(Path(tmp) / "arm26s.osim")
        model = load_osim(str(path))
        own = [u.name for u in model.muscles if hasattr(u, "scholz_path")]
        q = configurations(model, args.poses)
        ours = package_per_pose(model, q, args.repeat)
        print(f"{path.name}: {len(own)} Scholz2015GeometryPath units ({', '.join(own)}) of {len(model.muscles)}; "
              f"{len(q)} configurations")
        print(f"package lengths_and_moment_arms (all {len(model.muscles)} units, L and R), one pose a call: "
              f"{ours * 1e3:.3f} ms per pose; the {len(own)} Scholz units only: "
              f"{package_per_pose(model, q, args.repeat, own) * 1e3:.3f} ms per pose")
        lengths_only, theirs, done, n_paths = opensim_per_pose(path, q, args.repeat)
        print(f"OpenSim realizePosition + getLength ({n_paths} Scholz units): {lengths_only * 1e3:.3f} ms per pose; "
              f"+ computeMomentArm ({model.n_q} coordinates): {theirs * 1e3:.3f} ms per pose ({done}/{len(q)} poses "
              "evaluated)")
        if not args.no_simulation:
            simulation(path, args.repeat)


if __name__ == "__main__":
    main()
