"""Muscle-driven simulation against OpenSim 4.6's Manager over 1 s (issue 15, item 3).

Run from the repository root:

    python validation/muscle_driven/run.py                       # the three cases, about 2 min
    python validation/muscle_driven/run.py --cases arm26,arm26_mixed   # the two arm26 cases, about a minute

Cases (each from OpenSim's equilibrated default state, the same ExcitationSpec excitations on both sides):

* ``arm26`` -- arm26.osim (6 Thelen2003 muscles, wrapped paths), the co-contraction of
  ``benchmarks/bench_muscle_driven.py`` (CASES["arm26"]), 1 s;
* ``arm26_mixed`` -- arm26 with BIClong, BRA and TRIlat made Millard2012EquilibriumMuscles
  (:func:`osim_emb.io.muscle_xml.thelen_as_millard`, as in tests/test_muscle_driven.py) beside three Thelen2003
  muscles, excitations that keep the motion clear of TRIlong's wrapped-path jump (checked: ``path_jump_m``);
* ``mobl33`` -- MoBL-ARMS with its 33 Schutte1993 muscles that have no MovingPathPoint (OpenSim applies their
  forces as the package does; docs/simulation.md), its 13 couplers and 14 CoordinateLimitForces, 0.24 s: then
  pro_sup reaches 0.068 rad, where SUP's wrapped path jumps by 4 cm (README.md).

OpenSim: :func:`osim_emb.opensim.muscle_simulation.opensim_muscle_simulation` (Manager, RungeKuttaMerson,
``--opensim-accuracy``), integrating to each output time in turn.  Package:
:func:`osim_emb.simulation.muscle_driven.simulate_muscles` with ``method="RK45-jit"`` (the compiled
Dormand-Prince integrator; SciPy's RK45 where the compiled plan refuses the model) at ``--rtol``, atol = rtol/100.

Writes into validation/muscle_driven/results/ (``--out``):

* states_<case>.csv        time and every coordinate, activation and fibre length of both programs
* differences.csv          max |q - q_OpenSim|, max |l_f - l_f,OpenSim|, max |a - a_OpenSim| at each output time
* summary.csv              per case: the maxima, the settings, both wall times, the path-jump check
* fig_muscle_driven_agreement.{pdf,svg,png}  trajectories (package lines, OpenSim markers) and the differences
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_muscle_driven import CASES, mobl_with  # noqa: E402
from osim_emb.io import load_osim  # noqa: E402
from osim_emb.io.muscle_xml import thelen_as_millard  # noqa: E402
from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation  # noqa: E402
from osim_emb.paths.geometry import lengths_and_moment_arms  # noqa: E402
from osim_emb.report import figure_style as fs  # noqa: E402
from osim_emb.simulation.muscle_driven import ExcitationSpec, MuscleDrivenSystem, simulate_muscles  # noqa: E402
from osim_emb.simulation.muscle_driven_jit import compiled_plan  # noqa: E402

log = logging.getLogger("muscle_driven")
MODELS = Path(os.environ.get("OSIM_EMB_MODELS", ROOT.parent / "shared" / "models"))
OUT = HERE / "results"
T_END = 1.0
#: a shorter horizon where the motion reaches a path's discontinuity (README.md: MoBL's SUP at pro_sup = 0.068 rad)
HORIZON = {"mobl33": 0.24}
N_OUT = 101
GOAL_Q, GOAL_LF = 1e-5, 1e-7  # the issue's: rad, m
MIXED = ("BIClong", "BRA", "TRIlat")  # made Millard2012, as in tests/test_muscle_driven.py


def _specs(d: dict) -> dict:
    return {name: ExcitationSpec.parse(spec) for name, spec in d.items()}


#: case -> (title, excitations as ExcitationSpec strings, coordinates drawn)
SETUPS = {
    "arm26": ("arm26, 6 Thelen2003", None, ("r_shoulder_elev", "r_elbow_flex")),
    "arm26_mixed": ("arm26, 3 Millard2012 + 3 Thelen2003",
                    {"BIClong": "step:0.1:0.3:0.05:0.3", "BICshort": "0.4", "BRA": "sine:0.1:3:0:0.2",
                     "TRIlong": "0.1", "TRIlat": "0.3", "TRImed": "0.3"},
                    ("r_shoulder_elev", "r_elbow_flex")),
    "mobl33": ("MoBL-ARMS, 33 Schutte1993",
               {"DELT1": "sine:0.2:6:0:0.3", "BRA": "step:0.1:0.3:0.1:0.5", "TRIlong": "0.2",
                "ECRL": "step:0.2:0.4:0.1:0.4", "FCR": "sine:0.1:10:0:0.2"},
               ("shoulder_elv", "elbow_flexion", "pro_sup", "deviation", "flexion")),
}


BACKGROUND = {"mobl33": 0.1}  # the excitation of the muscles not named (co-contraction that steadies the wrist)


def excitations(case: str, model=None) -> dict:
    """The case's ExcitationSpecs; with ``model``, every other muscle at the case's background excitation."""
    spec = SETUPS[case][1]
    named = CASES["arm26"][1] if spec is None else _specs(spec)
    if model is None or case not in BACKGROUND:
        return named
    rest = ExcitationSpec.parse(f"{BACKGROUND[case]:g}")
    return {**{m.name: rest for m in model.muscles}, **named}


def model_file(case: str, tmp: Path) -> Path:
    if case == "arm26":
        return MODELS / "arm26.osim"
    if case == "arm26_mixed":
        out = tmp / "arm26_mixed.osim"
        thelen_as_millard(MODELS / "arm26.osim", out, MIXED)
        return out
    from lxml import etree
    doc = etree.parse(str(MODELS / "mobl_arms_holzbaur.osim"))
    keep = {m.get("name") for m in doc.iter("Schutte1993Muscle_Deprecated") if not list(m.iter("MovingPathPoint"))}
    return mobl_with(keep, tmp / "mobl33.osim")


def path_jump(model, q: np.ndarray) -> tuple[float, str]:
    """Largest |ΔL + ½(R_k + R_k+1)·Δq| between consecutive samples of a trajectory (m) and its muscle: a few µm
    along a smooth path (the trapezoidal rule's error), the jump itself (TRIlong's 8.5 mm) where wrap objects
    switch."""
    lengths, arms = lengths_and_moment_arms(model, q, allow_out_of_range=True)
    predicted = -0.5 * np.einsum("nkm,nk->nm", arms[1:] + arms[:-1], np.diff(q, axis=0))  # R = -dL/dq
    mismatch = np.abs(np.diff(lengths, axis=0) - predicted)
    k, m = np.unravel_index(mismatch.argmax(), mismatch.shape)
    return float(mismatch[k, m]), model.muscles[m].name


def package_run(model, excitations: dict, times: np.ndarray, rtol: float):
    """simulate_muscles with RK45-jit where the compiled plan takes the model (else SciPy's RK45); wall time."""
    plan, why = compiled_plan(MuscleDrivenSystem(model, excitations))
    method = "RK45-jit" if plan is not None else "RK45"
    if plan is None:
        log.warning("%s: the compiled integrator refuses the model (%s); SciPy's RK45 instead", model.name, why)
    simulate_muscles(model, 1e-3, excitations, method=method, n_output=2)  # compile / warm the caches
    t0 = time.perf_counter()
    out = simulate_muscles(model, times[-1], excitations, t_eval=times, method=method, rtol=rtol, atol=rtol * 1e-2)
    return out, time.perf_counter() - t0, method


def run_case(case: str, tmp: Path, rtol: float, accuracy: float, self_check: bool) -> tuple[pd.DataFrame, dict]:
    path = model_file(case, tmp)
    model = load_osim(str(path))
    exc = excitations(case, model)
    t_end = HORIZON.get(case, T_END)
    dense = np.linspace(0.0, t_end, 10 * (N_OUT - 1) + 1)
    every = slice(None, None, 10)
    times = dense[every]
    log.info("%s: OpenSim's Manager, accuracy %g, %g s", case, accuracy, t_end)
    ref = opensim_muscle_simulation(path, times, exc, accuracy=accuracy)
    log.info("%s: OpenSim %.1f s; the package", case, ref["seconds"])
    ours, seconds, method = package_run(model, exc, dense, rtol)
    muscles = ref["muscles"]
    cols = [ref["names"].index(n) for n in model.coordinate_names]
    q_osim = ref["q"][:, cols]
    sampled = ours.iloc[every].reset_index(drop=True)
    q = sampled[model.coordinate_names].to_numpy()
    lf = sampled[[f"{m}_fiber_length" for m in muscles]].to_numpy()
    act = sampled[[f"{m}_activation" for m in muscles]].to_numpy()
    dq, dlf, da = np.abs(q - q_osim), np.abs(lf - ref["fiber_length"]), np.abs(act - ref["activation"])
    states = {"time_s": times}
    for i, c in enumerate(model.coordinates):
        n, unit = c.name, "m" if c.motion_type == "translational" else "rad"
        states[f"{n}_package_{unit}"], states[f"{n}_opensim_{unit}"] = q[:, i], q_osim[:, i]
    for j, m in enumerate(muscles):
        states[f"{m}_fiber_length_package_m"] = lf[:, j]
        states[f"{m}_fiber_length_opensim_m"] = ref["fiber_length"][:, j]
        states[f"{m}_activation_package"], states[f"{m}_activation_opensim"] = act[:, j], ref["activation"][:, j]
    diff = pd.DataFrame({"case": case, "time_s": times, "max_abs_q_difference_rad": dq.max(axis=1),
                         "max_abs_fiber_length_difference_m": dlf.max(axis=1),
                         "max_abs_activation_difference": da.max(axis=1)})
    jump, jump_muscle = path_jump(model, ours[model.coordinate_names].to_numpy())
    kinds = sorted({type(m.parameters).__name__ for m in model.muscles})
    row = {"case": case, "title": SETUPS[case][0], "muscle_models": " + ".join(kinds), "muscles": len(muscles),
           "coordinates": len(model.coordinate_names), "t_end_s": t_end, "output_times": len(times),
           "excitations": "; ".join(f"{k}={v.kind}:{':'.join(f'{x:g}' for x in v.values)}" for k, v in exc.items()),
           "opensim_integrator": "RungeKuttaMerson", "opensim_accuracy": accuracy,
           "package_method": method, "package_rtol": rtol, "package_atol": rtol * 1e-2,
           "max_abs_q_difference_rad": dq.max(),
           "worst_coordinate": model.coordinate_names[int(dq.max(axis=0).argmax())],
           "max_abs_fiber_length_difference_m": dlf.max(), "worst_fiber": muscles[int(dlf.max(axis=0).argmax())],
           "max_abs_activation_difference": da.max(),
           "q_range_rad": float(np.ptp(q_osim, axis=0).max()),
           "meets_1e-5_rad": bool(dq.max() < GOAL_Q), "meets_1e-7_m": bool(dlf.max() < GOAL_LF),
           "max_path_length_mismatch_m": jump, "path_length_mismatch_muscle": jump_muscle,
           "opensim_wall_seconds": ref["seconds"], "package_wall_seconds": seconds,
           "package_rhs_evaluations": int(ours.attrs["nfev"])}
    if self_check:
        try:
            fine, _, _ = package_run(model, exc, times, rtol * 0.1)
            row["package_self_error_rad"] = float(np.abs(fine[model.coordinate_names].to_numpy() - q).max())
            row["package_self_error_note"] = f"against {method} at rtol {rtol * 0.1:g}"
        except RuntimeError as err:  # e.g. the step size underflows at a path's discontinuity
            log.warning("%s: the package's run at rtol %g failed: %s", case, rtol * 0.1, err)
            row["package_self_error_rad"] = float("nan")
            row["package_self_error_note"] = f"{method} at rtol {rtol * 0.1:g} failed: {err}"
    log.info("%s: max|q - q_OpenSim| %.2e rad, max|l_f - l_f,OpenSim| %.2e m, max|a - a_OpenSim| %.2e; "
             "path mismatch %.1e m (%s)", case, row["max_abs_q_difference_rad"],
             row["max_abs_fiber_length_difference_m"], row["max_abs_activation_difference"], jump, jump_muscle)
    return pd.DataFrame(states), diff, row


def figure(cases: list[str], out: Path) -> None:
    """Left: a few coordinates (package lines, OpenSim markers); right: the largest differences (log axis)."""
    from matplotlib.lines import Line2D
    fig, axes = fs.figure("double", height=2.0 * len(cases) + 0.7, nrows=len(cases), ncols=2)
    summary = pd.read_csv(out / "summary.csv").set_index("case")
    for r, case in enumerate(cases):
        states = pd.read_csv(out / f"states_{case}.csv")
        diff = pd.read_csv(out / "differences.csv").query("case == @case")
        ax = axes[r, 0]
        for i, name in enumerate(SETUPS[case][2]):
            pk = next(c for c in states.columns if c.startswith(f"{name}_package_"))
            ax.plot(states.time_s, states[pk], color=fs.color(i), label=name)
            ax.plot(states.time_s[::5], states[pk.replace("_package_", "_opensim_")][::5], linestyle="none",
                    marker=fs.marker(i), markersize=3.5, markerfacecolor="none", color=fs.color(i))
        handles, labels = ax.get_legend_handles_labels()
        handles.append(Line2D([], [], color="0.3", marker="o", markerfacecolor="none", linestyle="none"))
        labels.append("OpenSim (markers)")
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, hi + (0.35 if len(handles) < 4 else 0.7) * (hi - lo))  # room for the legend above the data
        ax.legend(handles, labels, loc="upper left", fontsize=7, frameon=False, ncol=1 if len(handles) < 4 else 2)
        ax.set_ylabel("coordinate (rad)")
        ax.set_title(f"{SETUPS[case][0]}: OpenSim accuracy {summary.loc[case, 'opensim_accuracy']:g}, package "
                     f"{summary.loc[case, 'package_method']} rtol {summary.loc[case, 'package_rtol']:g}", loc="left")
        ax = axes[r, 1]
        for i, (col, label) in enumerate((("max_abs_q_difference_rad", "max |q − q_OpenSim| (rad)"),
                                          ("max_abs_fiber_length_difference_m", "max |l_f − l_f,OpenSim| (m)"),
                                          ("max_abs_activation_difference", "max |a − a_OpenSim|"))):
            keep = diff[col] > 0  # t = 0: the same equilibrium state, often bitwise
            ax.semilogy(diff.time_s[keep], diff[col][keep], **fs.cue(i), label=label)
        ax.axhline(GOAL_Q, color="0.4", linewidth=0.8, linestyle=(0, (1, 2)), label="goal 1e-5 rad")
        ax.axhline(GOAL_LF, color="0.4", linewidth=0.8, linestyle=(0, (5, 2)), label="goal 1e-7 m")
        ax.set_ylabel("largest difference")
    fs.legend_below(fig, *axes[0, 1].get_legend_handles_labels(), ncol=3)
    for ax in axes[-1]:
        ax.set_xlabel("time (s)")
    fs.save(fig, out / "fig_muscle_driven_agreement", ("pdf", "svg", "png"))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT, help="output folder (default: this study's results/)")
    ap.add_argument("--cases", default=",".join(SETUPS), help=f"comma-separated subset of {', '.join(SETUPS)}")
    ap.add_argument("--rtol", type=float, default=1e-10, help="the package's rtol (atol = rtol/100)")
    ap.add_argument("--opensim-accuracy", type=float, default=1e-9)
    ap.add_argument("--mobl-accuracy", type=float, default=None,
                    help="OpenSim's accuracy on mobl33 (default: --opensim-accuracy)")
    ap.add_argument("--no-self-check", action="store_true",
                    help="skip the package's second run at rtol/100 (its own integration error)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    unknown = sorted(set(cases) - set(SETUPS))
    if unknown:
        ap.error(f"unknown case(s) {', '.join(unknown)}: choose from {', '.join(SETUPS)}")
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    rows, diffs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            accuracy = args.mobl_accuracy if case == "mobl33" and args.mobl_accuracy else args.opensim_accuracy
            states, diff, row = run_case(case, Path(tmp), args.rtol, accuracy, not args.no_self_check)
            states.to_csv(out / f"states_{case}.csv", index=False, float_format="%.17g")
            rows.append(row)
            diffs.append(diff)
    diffs, rows = pd.concat(diffs), pd.DataFrame(rows)
    if (out / "summary.csv").exists():  # a subset of the cases re-run: keep the others' rows
        order = {c: i for i, c in enumerate(SETUPS)}
        old_rows, old_diffs = pd.read_csv(out / "summary.csv"), pd.read_csv(out / "differences.csv")
        rows = pd.concat([old_rows[~old_rows.case.isin(cases)], rows]).sort_values("case", key=lambda c: c.map(order))
        diffs = pd.concat([old_diffs[~old_diffs.case.isin(cases)], diffs]).sort_values(
            ["case", "time_s"], key=lambda c: c.map(order) if c.name == "case" else c, kind="stable")
    diffs.to_csv(out / "differences.csv", index=False, float_format="%.6e")
    rows.to_csv(out / "summary.csv", index=False, float_format="%.6g")
    figure([c for c in SETUPS if c in set(rows.case)], out)
    print(rows[["case", "max_abs_q_difference_rad", "max_abs_fiber_length_difference_m",
                              "max_abs_activation_difference", "opensim_wall_seconds",
                              "package_wall_seconds"]].to_string(index=False))


if __name__ == "__main__":
    main()
