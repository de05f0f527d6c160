"""Inverse kinematics of opensim-models' own marker trials: ``osim-emb inverse-kinematics --setup`` against OpenSim
4.6's InverseKinematicsTool on the same setup files.

    python validation/inverse_kinematics/run.py                       # files from the opensim-models git mirror
    python validation/inverse_kinematics/run.py --models DIR           # DIR = an opensim-models checkout

Four trials of the repository's Pipelines folder (walking: Gait10dof18musc, Gait2354, Gait2392; running: Hamner's
full-body model), each with its setup file as committed (its markers, weights, coordinate tasks, time range,
accuracy) and the scaled model the pipeline made (``OutputReference``), copied to a scratch folder (never
committed). For each trial:

* OpenSim's tool as the setup has it (accuracy 1e-5 or 1e-4), and again at accuracy 1e-9 (its LBFGS converged
  further; where it fails there, 1e-8);
* the command on the same setup file (the package solves each frame until a step moves q by < 1e-10);
* max |Δq| of the rotational (deg) and translational (mm) coordinates against both OpenSim runs, and the weighted
  objective J of Simbody's goals (docs/inverse_kinematics.md) at OpenSim's coordinates against the package's:
  how far above the package's minimum OpenSim stops;
* wall times of whole runs (model load, markers, solve, files; the command's second run, after numba's kernels
  are loaded) and their ratio.

Writes ``results/inverse_kinematics.csv`` (one row per trial) and ``results/coordinates_gait2392.{pdf,svg,png}``,
``results/coordinates_hamner.{pdf,svg,png}`` (the right leg's angles of the Gait2392 trial and of the Hamner trial's
first 2 s: the package, OpenSim as set, and both OpenSim runs' differences from the package).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
MIRROR = Path("/work/.mirror/opensim-org+opensim-models/repo")

#: trial -> (pipeline folder, setup file, {file the setup names: file in the pipeline folder})
TRIALS = {
    "Gait10dof18musc_walk": ("Gait10dof18musc", "IK/walk_Setup_IK.xml",
                             {"subject01.osim": "OutputReference/subject01.osim",
                              "ExperimentalData/subject01_walk.trc": "ExperimentalData/subject01_walk.trc"}),
    "Gait2354_walk": ("Gait2354_Simbody", "subject01_Setup_IK.xml",
                      {"subject01_simbody.osim": "OutputReference/subject01_simbody.osim",
                       "subject01_walk1.trc": "subject01_walk1.trc"}),
    "Gait2392_walk": ("Gait2392_Simbody", "subject01_Setup_IK.xml",
                      {"subject01_simbody.osim": "OutputReference/subject01_simbody.osim",
                       "subject01_walk1.trc": "subject01_walk1.trc"}),
    "Hamner_run": ("Hamner", "Setup_IK.xml",
                   {"subject01_registered.osim": "outputReference/subject02_registered.osim",
                    "subject02_running.trc": "subject02_running.trc"}),
}


def fetch_trial(models: Path | None, trial: str, dest: Path) -> Path:
    """The trial's setup, model and markers laid out in ``dest`` as the setup names them; returns the setup."""
    pipeline, setup, files = TRIALS[trial]
    for target, source in [(setup, setup)] + list(files.items()):
        rel = f"Pipelines/{pipeline}/{source}"
        if models is not None:
            blob = (models / rel).read_bytes()
        else:
            blob = subprocess.run(["git", "-C", str(MIRROR), "show", f"HEAD:{rel}"], check=True,
                                  capture_output=True).stdout
        if target == setup:
            path = dest / trial / "setup" / Path(setup).name  # the setup one level down: '../' paths resolve
            if not setup.startswith("IK/"):
                path = dest / trial / Path(setup).name
        else:
            path = dest / trial / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(blob)
    return dest / trial / ("setup/" + Path(setup).name if setup.startswith("IK/") else Path(setup).name)


def package_coordinates(model, table: pd.DataFrame) -> np.ndarray:
    from osim_emb.io.motion import coordinates_from_motion
    _, q, _ = coordinates_from_motion(model, table, {"inDegrees": "yes"}, outside="warn")
    return q


def objective_at(model, setup_path: Path, q_rows: np.ndarray, frames: np.ndarray) -> np.ndarray:
    """The package's weighted objective J at given coordinates (no step taken), frame by frame."""
    from osim_emb.cli.inverse_kinematics import _coordinate_references
    from osim_emb.io.markers import read_trc
    from osim_emb.io.tool_setup import read_inverse_kinematics_setup
    from osim_emb.simulation.inverse_kinematics import CoordinateReference, inverse_kinematics
    setup = read_inverse_kinematics_setup(setup_path)
    data = read_trc(setup.markers)
    references = _coordinate_references(model, setup, data.times[frames])
    out = np.empty(len(frames))
    for i, f in enumerate(frames):
        refs = [CoordinateReference(r.name, r.weight, np.broadcast_to(np.asarray(r.values, dtype=float),
                                                                      (len(frames),))[i]) for r in references]
        out[i] = inverse_kinematics(model, data, marker_weights=setup.marker_weights, coordinate_references=refs,
                                    frames=[f], q0=q_rows[i], max_evaluations=1, progress=False).objective[0]
    return out


def run_trial(trial: str, setup: Path) -> tuple[dict, dict]:
    from osim_emb import load_osim
    from osim_emb.cli.inverse_kinematics import _frames
    from osim_emb.cli.main import main as cli
    from osim_emb.io.markers import read_trc
    from osim_emb.io.tool_setup import read_inverse_kinematics_setup
    from osim_emb.opensim.inverse_kinematics import opensim_inverse_kinematics
    from osim_emb.opensim.static_optimization import read_storage
    spec = read_inverse_kinematics_setup(setup)
    model = load_osim(str(spec.model))
    ours_path = setup.parent / "osim_emb_ik.mot"
    seconds = []
    for _ in range(2):  # the second run: numba's kernels loaded
        start = time.perf_counter()
        assert cli(["inverse-kinematics", "--setup", str(setup), "-o", str(ours_path), "--overwrite", "-q"]) == 0
        seconds.append(time.perf_counter() - start)
    ours = read_storage(ours_path)
    as_set = opensim_inverse_kinematics(setup=setup, out_dir=setup.parent / "opensim_as_set")
    tight_accuracy, tight = 1e-9, None
    for accuracy in (1e-9, 1e-8):
        try:
            tight = opensim_inverse_kinematics(setup=setup, accuracy=accuracy, out_dir=setup.parent / "opensim_tight")
            tight_accuracy = accuracy
            break
        except RuntimeError:
            continue
    data = read_trc(spec.markers)
    frames = _frames(data.times, spec.time_range, spec.markers)
    q_ours = package_coordinates(model, ours)
    rotational = np.array([c.motion_type == "rotational" for c in model.coordinates])
    j_ours = objective_at(model, setup, q_ours, frames)
    row = {"trial": trial, "model": spec.model.name, "coordinates": model.n_q,
           "dependent_coordinates": len(model.dependent_coordinates), "frames": len(frames),
           "markers_tracked": sum(1 for n in data.names if n in {m for m, _, _ in model.extras["markers"]}
                                  and (spec.marker_weights is None or n in spec.marker_weights)),
           "coordinate_tasks": len(spec.coordinate_tasks), "setup_accuracy": spec.accuracy,
           "constraint_weight": spec.constraint_weight}
    for label, ref, acc in (("as_set", as_set, spec.accuracy), ("tight", tight, tight_accuracy)):
        if ref is None:
            row[f"opensim_{label}_failed"] = True
            continue
        assert np.allclose(ref["coordinates"]["time"].to_numpy(), ours["time"].to_numpy(), atol=1e-9)
        q_ref = package_coordinates(model, ref["coordinates"])
        dq = np.abs(q_ref - q_ours)
        j_ref = objective_at(model, setup, q_ref, frames)
        row |= {f"opensim_{label}_accuracy": acc,
                f"max_diff_rotational_deg_{label}": float(np.degrees(dq[:, rotational].max(initial=0.0))),
                f"max_diff_translational_mm_{label}": float(1e3 * dq[:, ~rotational].max(initial=0.0)),
                f"opensim_objective_above_package_max_{label}": float((j_ref - j_ours).max()),
                f"opensim_objective_above_package_min_{label}": float((j_ref - j_ours).min()),
                f"frames_package_objective_lower_or_equal_{label}": int(np.sum(j_ours <= j_ref * (1 + 1e-12))),
                f"marker_rms_mean_mm_opensim_{label}": float(1e3 * ref["errors"]["marker_error_RMS"].mean())}
    errors = read_storage(setup.parent / "osim_emb_ik_marker_errors.sto")
    row |= {"objective_package_mean": float(j_ours.mean()),
            "marker_rms_mean_mm_package": float(1e3 * errors["marker_error_RMS"].mean()),
            "seconds_opensim_as_set": as_set["seconds"],
            "seconds_opensim_tight": tight["seconds"] if tight is not None else np.nan,
            "seconds_package_first_run": seconds[0], "seconds_package": seconds[1],
            "opensim_as_set_over_package": as_set["seconds"] / seconds[1]}
    return row, {"ours": ours, "as_set": as_set["coordinates"], "tight": None if tight is None else tight["coordinates"]}


def figure(tables: dict, out: Path, until: float = np.inf) -> None:
    """The right leg's angles (the first ``until`` seconds): the package and OpenSim as set, and both OpenSim runs'
    differences from the package."""
    from osim_emb.report import figure_style as fs
    cols = ["hip_flexion_r", "knee_angle_r", "ankle_angle_r"]
    tables = {k: (None if v is None else v[v["time"] <= until]) for k, v in tables.items()}
    fig, axes = fs.figure("double", nrows=2, ncols=3, height=4.0, sharex=True)
    for k, c in enumerate(cols):
        top, bottom = axes[0, k], axes[1, k]
        t = tables["ours"]["time"]
        top.plot(t, tables["ours"][c], label="osim-emb", **fs.cue(0))
        top.plot(t, tables["as_set"][c], label="OpenSim, setup accuracy", color=fs.color(1),
                 **fs.reference_style("OpenSim", 1))
        top.set_title(c.replace("_", " "), loc="left")
        bottom.plot(t, tables["as_set"][c] - tables["ours"][c], label="OpenSim (setup accuracy) − osim-emb",
                    **fs.cue(1))
        if tables["tight"] is not None:
            bottom.plot(t, tables["tight"][c] - tables["ours"][c], label="OpenSim (accuracy 1e-9) − osim-emb",
                        **fs.cue(2))
        bottom.set_xlabel("time (s)")
    axes[0, 0].set_ylabel("angle (deg)")
    axes[1, 0].set_ylabel("difference (deg)")
    fs.legend_below(fig)
    fs.save(fig, out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", type=Path, help="an opensim-models checkout (default: the git mirror)")
    ap.add_argument("--trials", default=",".join(TRIALS), help="comma-separated trials (default: all)")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    try:
        import opensim  # noqa: F401
    except ImportError:
        print("needs opensim (pip install 'osim-emb[opensim]')", file=sys.stderr)
        return 2
    from osim_emb.progress import Progress
    args.out.mkdir(parents=True, exist_ok=True)
    rows, tables = [], {}
    names = [t for t in args.trials.split(",") if t]
    with tempfile.TemporaryDirectory(prefix="osim_emb_ik_") as scratch, \
            Progress("inverse kinematics trials", len(names), unit="trial") as bar:
        for trial in names:
            setup = fetch_trial(args.models, trial, Path(scratch))
            row, tables[trial] = run_trial(trial, setup)
            rows.append(row)
            print(f"{trial}: {row['frames']} frames; max |Δq| {row['max_diff_rotational_deg_as_set']:.2e} deg "
                  f"(setup accuracy), {row.get('max_diff_rotational_deg_tight', np.nan):.2e} deg (tight); "
                  f"OpenSim {row['seconds_opensim_as_set']:.2f} s, package {row['seconds_package']:.2f} s", flush=True)
            bar.advance()
    table = pd.DataFrame(rows)
    table.to_csv(args.out / "inverse_kinematics.csv", index=False, float_format="%.6g")
    for trial, stem, until in (("Gait2392_walk", "coordinates_gait2392", np.inf),
                               ("Hamner_run", "coordinates_hamner", 2.0)):
        if trial in tables:
            figure(tables[trial], args.out / stem, until)
    print(table.T.to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
