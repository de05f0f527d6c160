"""Speed of the muscle-driven simulation (issue 15, item 3) against OpenSim's Manager at equal accuracy.

arm26 (6 Thelen2003 muscles with compliant tendons, wrapped paths), 1 s of co-contraction: BIClong a smooth
step 0.05 -> 0.5 over 0.1-0.3 s, TRIlong 0.2 + 0.1 sin(10 t), the other four 0.2 or 0.3; the elbow flexes to
47 degrees.  (A stronger biceps step, as in tests/test_muscle_driven.py, flexes the elbow through a pose where
TRIlong's wrapped path jumps by 8.5 mm -- in OpenSim too -- and the state at 1 s then depends on how each
integrator crosses that jump: no fair accuracy measure.)

``--model arm26-millard``: the same arm26 motion with its six muscles made Millard2012EquilibriumMuscles (same
paths and common parameters, Millard's default curves, damping and elastic tendon: OpenSim's defaults); 0.2 s
(these muscles pull the shoulder back faster, and at 0.24 s, shoulder at -17 degrees, TRIlong's wrapped path jumps).

``--model mobl4``: MoBL-ARMS (7 coordinates, 13 couplers, 14 CoordinateLimitForces) with four of its
Schutte1993Muscle_Deprecated units (DELT1, TRIlong, BRA, ECRL: wrapped, no moving path points, so OpenSim
applies the forces as the package does), 0.1 s: BRA a step to 0.8, DELT1 a sine; the forearm and hand fall.

``--model arm26-fitted`` / ``--model mobl-fitted``: the same motions (arm26 1 s; MoBL 0.1 s) on the model with every
path replaced by a fitted FunctionBasedPath (``osim-emb fit-paths`` with its defaults, seed 0: multivariate
polynomials of order <= 6 in each unit's coordinates), the form OpenSim 4.6 offers for speed (PolynomialPathFitter);
OpenSim and the package integrate the same file.  The fits are not close to the wrapped paths (fit-paths prints
their errors); that does not matter here, both programs run the same model.

A tight reference is the package's ODE with DOP853 at rtol 1e-12 (OpenSim at accuracy 1e-9 agrees with it,
tests/test_muscle_driven.py).  For each OpenSim accuracy (1e-5, its default, and 1e-7) the error of the
coordinates at 11 instants against the reference is measured; the package then uses the cheapest of
RK45-jit and BDF-jit (the whole integration compiled, osim_emb.simulation.muscle_driven_jit and
muscle_driven_bdf, where the model allows it; rtol 1e-4, 3e-5, ..., 1e-9), SciPy's RK45, DOP853, LSODA and BDF over a
range of rtol whose error is no larger, and the wall-time ratio is printed.  Both times have the same scope:
OpenSim's ``Manager.integrate`` to the end in one call from the equilibrated state (model loading, initSystem
and equilibrateMuscles before the clock), the package's ``integrate_system`` from its equilibrated state (the
system, its compiled plan and the equilibrium before the clock).  The package's whole ``simulate_muscles`` call
at the chosen setting (system, equilibrium, integration, output table) is printed beside it.

``--model mobl``: all 50 muscles, 5 ms, OpenSim on the file described next (its error measured against
the package's reference on the original model; OpenSim's integrator stops at t = 5.95 ms on that file,
"Unable to advance time", at accuracy 1e-5 and 1e-7 and with 1e-5 kg bodies too).

``--agreement``: instead of the ratio, the package (DOP853, rtol 1e-10) beside OpenSim's Manager (accuracy
1e-9) over the case's motion.  For ``mobl``, OpenSim reads the model with every moving path point as a
1e-8 kg body coupled to its coordinate (the seed's set-up,
:func:`osim_emb.io.osim_writer.moving_points_as_bodies`; OpenSim's own rule for a moving point next to a
point on the same body leaves that segment's length change out of the force, so on the original file the
two ODEs differ).

    python benchmarks/bench_muscle_driven.py                 # arm26, about 1 min
    python benchmarks/bench_muscle_driven.py --repeat 5      # each time the fastest of 5 (a shared machine)
    python benchmarks/bench_muscle_driven.py --model arm26-millard   # about 2 min
    python benchmarks/bench_muscle_driven.py --model mobl4   # about 2 min
    python benchmarks/bench_muscle_driven.py --model mobl    # several minutes
    python benchmarks/bench_muscle_driven.py --model arm26-fitted   # about 3 min (the fit: 1.5 min)
    python benchmarks/bench_muscle_driven.py --model mobl-fitted    # about 5 min
    python benchmarks/bench_muscle_driven.py --model mobl4 --agreement   # about 10 s
    python benchmarks/bench_muscle_driven.py --model mobl --agreement    # about 1 min
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from osim_emb.io import load_osim
from osim_emb.simulation.muscle_driven import ExcitationSpec, MuscleDrivenSystem, integrate_system, simulate_muscles
from osim_emb.simulation.muscle_driven_jit import compiled_plan
from osim_emb.opensim.muscle_simulation import largest_differences, opensim_muscle_simulation

HERE = Path(__file__).resolve().parent
MODELS = Path(os.environ.get("OSIM_EMB_MODELS", HERE.parents[1] / "shared" / "models"))


def _specs(d: dict) -> dict:
    return {name: ExcitationSpec.parse(spec) for name, spec in d.items()}


CASES = {
    "arm26": (1.0, _specs({"BIClong": "step:0.1:0.3:0.05:0.5", "BICshort": "0.2", "BRA": "0.3",
                           "TRIlong": "sine:0.1:10:0:0.2", "TRIlat": "0.2", "TRImed": "0.2"})),
    "arm26-millard": (0.2, _specs({"BIClong": "step:0.1:0.3:0.05:0.5", "BICshort": "0.2", "BRA": "0.3",
                                   "TRIlong": "sine:0.1:10:0:0.2", "TRIlat": "0.2", "TRImed": "0.2"})),
    "mobl4": (0.1, _specs({"BRA": "step:0:0.01:0.0:0.8", "TRIlong": "0.2", "DELT1": "sine:0.2:20:0:0.3"})),
    "mobl": (0.005, _specs({"BIClong": "step:0:0.01:0.0:0.6", "TRIlong": "0.2", "DELT1": "sine:0.2:20:0:0.3"})),
}
CASES["arm26-fitted"] = CASES["arm26"]
CASES["mobl-fitted"] = (0.1, CASES["mobl"][1])
FITTED_SOURCES = {"arm26-fitted": "arm26.osim", "mobl-fitted": "mobl_arms_holzbaur.osim"}
MOBL4_MUSCLES = {"DELT1", "TRIlong", "BRA", "ECRL"}
#: the compiled integrators are cheap to try: half decades down to 1e-9 (SciPy's methods: decades to 1e-8)
COMPILED_RTOLS = tuple(f * 10.0 ** -k for k in range(4, 10) for f in (3.0, 1.0))[1:]


def arm26_millard(out: Path) -> Path:
    """arm26 with its Thelen2003Muscles turned into Millard2012EquilibriumMuscles (OpenSim's default curves)."""
    from osim_emb.io.muscle_xml import thelen_as_millard
    thelen_as_millard(MODELS / "arm26.osim", out)
    return out


def fitted_paths(source: str, out: Path) -> Path:
    """The model with every path replaced by a fitted FunctionBasedPath (``osim-emb fit-paths``, its defaults)."""
    from osim_emb.cli.main import main as cli
    if cli(["fit-paths", str(MODELS / source), "-o", str(out), "-q"]) != 0:
        raise RuntimeError(f"fit-paths failed on {source}")
    return out


def mobl_with(muscles: set, out: Path) -> Path:
    """A MoBL-ARMS copy with only the named Schutte1993 muscles."""
    from lxml import etree
    tree = etree.parse(str(MODELS / "mobl_arms_holzbaur.osim"))
    for el in list(tree.iter("Schutte1993Muscle_Deprecated")):
        if el.get("name") not in muscles:
            el.getparent().remove(el)
    tree.write(str(out))
    return out


def ratio(path: Path, t_end: float, excitations: dict, opensim_path: Path | None = None, repeat: int = 1) -> None:
    model = load_osim(str(path))
    opensim_path = path if opensim_path is None else opensim_path
    times = np.linspace(0.0, t_end, 11)
    # the same scope on both sides: OpenSim's time is Manager.integrate from the equilibrated state, the package's
    # integrate_system from its equilibrated state (the system, its plan and y0 built before the clock starts)
    system = MuscleDrivenSystem(model, excitations)
    y0 = system.initial_state()
    plan, _ = compiled_plan(system)
    methods = ["RK45", "DOP853", "LSODA", "BDF"]
    if plan is not None:
        methods[:0] = ["RK45-jit", "BDF-jit"]
        for m in ("RK45-jit", "BDF-jit"):
            integrate_system(system, y0, times[:2] * 0.01, method=m, plan=plan)  # compile
    integrate_system(system, y0, times[:2] * 0.01, method="BDF", plan=plan)  # warm caches
    ref = integrate_system(system, y0, times, method="DOP853", rtol=1e-12, atol=1e-13, plan=plan)
    nq = system.n_q
    qref = ref.y[:nq].T
    ours = []
    for method in methods:
        for rtol in (COMPILED_RTOLS if method.endswith("-jit") else (1e-4, 1e-5, 1e-6, 1e-7, 1e-8)):
            dt = math.inf
            for _ in range(repeat):
                t0 = time.perf_counter()
                sol = integrate_system(system, y0, times, method=method, rtol=rtol, atol=rtol * 1e-2, plan=plan)
                dt = min(dt, time.perf_counter() - t0)
            err = np.abs(sol.y[:nq].T - qref).max()
            ours.append((dt, err, method, rtol, sol.nfev))
            print(f"package {method:8s} rtol {rtol:.0e}: {dt:6.3f} s, {sol.nfev:6d} right-hand sides, "
                  f"max |q - q_ref| = {err:.1e} rad")
    for acc in (1e-5, 1e-7):
        steps = opensim_muscle_simulation(opensim_path, times, excitations, accuracy=acc)
        cols = [steps["names"].index(n) for n in model.coordinate_names]
        err = np.abs(steps["q"][:, cols] - qref).max()
        one = min((opensim_muscle_simulation(opensim_path, times, excitations, accuracy=acc, one_shot=True)
                   for _ in range(repeat)), key=lambda r: r["seconds"])
        ok = [o for o in ours if o[1] <= err]
        if not ok:
            print(f"OpenSim accuracy {acc:.0e}: {one['seconds']:.3f} s, error {err:.1e} rad; no package setting as "
                  "accurate")
            continue
        best = min(ok)
        if "realizations" in one:
            print(f"OpenSim accuracy {acc:.0e}: {one['realizations']} realizations, {one['steps_taken']} steps taken "
                  f"/ {one['steps_attempted']} attempted (its Manager's counts)")
        whole = math.inf  # the package's whole call (system, equilibrium, integration, output table) at that setting
        for _ in range(repeat):
            t0 = time.perf_counter()
            simulate_muscles(model, t_end, excitations, t_eval=times, method=best[2], rtol=best[3], atol=best[3] * 1e-2)
            whole = min(whole, time.perf_counter() - t0)
        print(f"OpenSim accuracy {acc:.0e}: {one['seconds']:.3f} s, max |q - q_ref| = {err:.1e} rad | package "
              f"{best[2]} rtol {best[3]:.0e}: {best[0]:.3f} s, error {best[1]:.1e} rad | ratio OpenSim/package "
              f"{one['seconds'] / best[0]:.2f}x (the package's whole simulate_muscles call: {whole:.3f} s, "
              f"{one['seconds'] / whole:.2f}x)")


def mobl_mvp(tmp: Path) -> Path:
    """MoBL as OpenSim reads it with its moving path points as coupled 1e-8 kg bodies (see the docstring)."""
    from lxml import etree
    from osim_emb.io.osim_writer import moving_points_as_bodies, write_osim
    model = load_osim(str(MODELS / "mobl_arms_holzbaur.osim"))
    mvp = tmp / "mobl_mvp.osim"
    write_osim(moving_points_as_bodies(model.extras["document"]), mvp)
    tree = etree.parse(str(mvp))  # OpenSim cannot integrate massless bodies: 1e-8 kg, 1e-12 kg m^2
    for b in tree.iter("Body"):
        j = b.find("Joint/CustomJoint")
        if j is not None and j.get("name") == b.get("name") + "_joint":
            b.find("mass").text = "1e-8"
            for t in ("inertia_xx", "inertia_yy", "inertia_zz"):
                b.find(t).text = "1e-12"
    tree.write(str(mvp))
    return mvp


def agreement(path: Path, t_end: float, excitations: dict, opensim_path: Path | None = None) -> None:
    """The package (DOP853, rtol 1e-10) beside OpenSim's Manager (accuracy 1e-9) over the case's motion."""
    model = load_osim(str(path))
    times = np.linspace(0.0, t_end, 11)
    t0 = time.perf_counter()
    ref = opensim_muscle_simulation(path if opensim_path is None else opensim_path, times, excitations,
                                    accuracy=1e-9)
    t_osim = time.perf_counter() - t0
    t0 = time.perf_counter()
    ours = simulate_muscles(model, t_end, excitations, t_eval=times, method="DOP853", rtol=1e-10, atol=1e-12)
    t_ours = time.perf_counter() - t0
    cols = [ref["names"].index(n) for n in model.coordinate_names]
    d = largest_differences(ours, ref)
    dq, dl = d["q"], d["fiber_length"]
    moved = np.abs(ref["q"][-1, cols] - ref["q"][0, cols]).max()
    print(f"{model.name}, {len(ref['muscles'])} muscles, {t_end:g} s (q moves up to {moved:.2f} rad): "
          f"max |q - q_OpenSim| = {dq:.1e} rad, max |l_f - l_f,OpenSim| = {dl:.1e} m (OpenSim accuracy 1e-9: "
          f"{t_osim:.1f} s; package DOP853 rtol 1e-10: {t_ours:.1f} s, {ours.attrs['nfev']} right-hand sides)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", choices=sorted(CASES), default="arm26")
    ap.add_argument("--agreement", action="store_true",
                    help="the agreement with OpenSim at tight tolerances instead of the speed ratio")
    ap.add_argument("--repeat", type=int, default=1,
                    help="time each run this many times and keep the fastest (package and OpenSim alike)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t_end, exc = CASES[args.model]
        if args.model == "arm26":
            paths = (MODELS / "arm26.osim", None)
        elif args.model == "arm26-millard":
            paths = (arm26_millard(Path(tmp) / "arm26_millard.osim"), None)
        elif args.model in FITTED_SOURCES:
            paths = (fitted_paths(FITTED_SOURCES[args.model], Path(tmp) / f"{args.model}.osim"), None)
        elif args.model == "mobl4":
            paths = (mobl_with(MOBL4_MUSCLES, Path(tmp) / "mobl4.osim"), None)
        else:
            paths = (MODELS / "mobl_arms_holzbaur.osim", mobl_mvp(Path(tmp)))
        if args.agreement:
            agreement(paths[0], t_end, exc, paths[1])
        else:
            ratio(paths[0], t_end, exc, paths[1], args.repeat)


if __name__ == "__main__":
    main()
