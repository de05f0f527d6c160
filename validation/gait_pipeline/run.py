"""A walking trial with ground reactions (opensim-models' Gait10dof18musc pipeline): the package's
``inverse-dynamics`` and ``static-optimization`` against OpenSim 4.6's InverseDynamicsTool and StaticOptimization on
the same files.

    python validation/gait_pipeline/run.py                        # files from the opensim-models git mirror
    python validation/gait_pipeline/run.py --pipeline DIR          # DIR = opensim-models/Pipelines/Gait10dof18musc

The pipeline's scaled model (``OutputReference/subject01.osim``: 10 coordinates, 18 Millard2012 muscles), its
inverse-kinematics result (60 Hz, 2.5 s) and its ground reactions (``subject01_walk_grf.xml`` / ``.mot``: a force,
centre of pressure and free torque per foot, 600 Hz) are copied to a scratch folder (never committed).

1. Inverse dynamics, unfiltered and with the pipeline's 6 Hz low-pass filter (``--lowpass 6``): the command's
   moments against the InverseDynamicsTool run live with the same setting, at the frames; the filtered ones also
   at OpenSim's resampled output times (the package's filtered spline evaluated there), and against the
   pipeline's committed OpenSim output (``OutputReference/ID``, 6 Hz).
2. Static optimization (unfiltered, ``--no-passive``, reserves of 1000 N / N m on the pelvis and 100 N m elsewhere,
   the ground reactions applied): OpenSim's solution (IPOPT at 1e-8) checked in the package's balance
   R F + reserves = τ (the same τ: the same q̈, loads and dynamics), and the activations compared — as computed,
   and with OpenSim's f_opt (``calcInextensibleTendonActiveFiberForce``, which for Millard2012 uses a pennation
   angle of the normalized fibre length: docs/muscles.md) in the package's force-sharing problem.

3. The pipeline's own reserve and residual actuator file (``gait10dof_Reserve_Actuators.xml``: point forces and a
   torque on the pelvis, reserves elsewhere) in an AnalyzeTool setup with the ground reactions and the 6 Hz filter:
   ``static-optimization --setup`` against OpenSim's AnalyzeTool on the same file, OpenSim's muscle forces and
   actuator controls checked in the package's balance τ = R F + B u (its activations differ by OpenSim's Millard
   f_opt, as in 2).

5. Joint reactions: the hip, knee and ankle loads on the right leg's bodies in their frames under step 3's muscle
   and actuator forces (the command's force file), the ground reactions and the 6 Hz filter: ``joint-reactions
   --setup`` and OpenSim's AnalyzeTool with a JointReaction on the same setup, compared at OpenSim's output times
   (``results/static_optimization.csv``, ``jr_*``; figure ``results/joint_reactions.*``).

4. From the markers: ``inverse-kinematics --setup`` on the pipeline's IK setup, and OpenSim's IK tool on the same
   file as set (accuracy 1e-5) and at 1e-9; OpenSim's InverseDynamicsTool (6 Hz, ground reactions) on each result:
   the moments differ by the IK alone (``results/from_markers.csv``).

Writes ``results/inverse_dynamics.csv``, ``results/from_markers.csv``, ``results/static_optimization.csv`` and ``results/moments.{pdf,svg,png}``
(hip, knee and ankle moments of the right leg: the package against OpenSim, 6 Hz).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
MIRROR = Path("/work/.mirror/opensim-org+opensim-models/repo")
FILES = {"subject01.osim": "OutputReference/subject01.osim",
         "subject01_walk_IK.mot": "OutputReference/IK/subject01_walk_IK.mot",
         "subject01_walk_grf.xml": "ExperimentalData/subject01_walk_grf.xml",
         "subject01_walk_grf.mot": "ExperimentalData/subject01_walk_grf.mot",
         "reference_ID.sto": "OutputReference/ID/Results/subject01_walk_ID.sto",
         "gait10dof_Reserve_Actuators.xml": "gait10dof_Reserve_Actuators.xml",
         "IK/walk_Setup_IK.xml": "IK/walk_Setup_IK.xml",
         "ExperimentalData/subject01_walk.trc": "ExperimentalData/subject01_walk.trc"}


def fetch_files(pipeline: Path | None, dest: Path) -> Path:
    """The pipeline's files in ``dest`` (from a checkout folder, or from the git mirror)."""
    dest.mkdir(parents=True, exist_ok=True)
    for name, rel in FILES.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        if pipeline is not None:
            (dest / name).write_bytes((pipeline / rel).read_bytes())
        else:
            blob = subprocess.run(["git", "-C", str(MIRROR), "show", f"HEAD:Pipelines/Gait10dof18musc/{rel}"],
                                  check=True, capture_output=True).stdout
            (dest / name).write_bytes(blob)
    return dest


def opensim_id(folder: Path, lowpass: float) -> pd.DataFrame:
    from osim_emb.opensim.static_optimization import opensim_inverse_dynamics
    return opensim_inverse_dynamics(folder / "subject01.osim", folder / "subject01_walk_IK.mot",
                                    folder / f"opensim_id_{lowpass:g}", external_loads=folder / "subject01_walk_grf.xml",
                                    lowpass_hz=None if lowpass < 0 else lowpass)


def inverse_dynamics(folder: Path) -> tuple[pd.DataFrame, dict]:
    from osim_emb import load_osim
    from osim_emb.cli.main import main as cli
    from osim_emb.core import dynamics as dyn
    from osim_emb.io.external_loads import read_external_loads
    from osim_emb.io.motion import coordinates_from_motion, read_motion
    from osim_emb.opensim.static_optimization import read_storage
    from osim_emb.simulation.motions import _natural_quintic, opensim_lowpass
    model = load_osim(str(folder / "subject01.osim"))
    cols = [f"{c.name}_{'moment' if c.motion_type == 'rotational' else 'force'}" for c in model.coordinates]
    ours, theirs = {}, {}
    for lowpass in (-1.0, 6.0):
        out = folder / f"ours_id_{lowpass:g}.sto"
        args = ["inverse-dynamics", str(folder / "subject01.osim"), str(folder / "subject01_walk_IK.mot"), "-o",
                str(out), "--external-loads", str(folder / "subject01_walk_grf.xml"), "--overwrite", "--quiet"]
        assert cli(args + ([] if lowpass < 0 else ["--lowpass", f"{lowpass:g}"])) == 0
        ours[lowpass], theirs[lowpass] = read_storage(out), opensim_id(folder, lowpass)
    # the filtered spline at OpenSim's output times (inside the data's times: OpenSim's first lies 5e-7 s before)
    t, q, _ = coordinates_from_motion(model, *read_motion(folder / "subject01_walk_IK.mot"))
    te = theirs[6.0]["time"].to_numpy()
    inside = (te >= t[0]) & (te <= t[-1])
    spline = _natural_quintic(*opensim_lowpass(t, q, 6.0))
    loads = read_external_loads(folder / "subject01_walk_grf.xml")
    qe = spline(te[inside])
    at_times = (dyn.inverse_dynamics(model, qe, spline(te[inside], 1), spline(te[inside], 2))
                - dyn.external_load_forces(model, qe, loads.at(te[inside])))
    reference = read_storage(folder / "reference_ID.sto")
    rows = []
    for k, c in enumerate(cols):
        rows.append({
            "coordinate": c, "peak_opensim_N_m_or_N": float(np.abs(theirs[6.0][c]).max()),
            "unfiltered_max_diff": float(np.abs(ours[-1.0][c] - theirs[-1.0][c]).max()),
            "lowpass6_at_opensim_times_max_diff": float(np.abs(at_times[:, k]
                                                               - theirs[6.0][c].to_numpy()[inside]).max()),
            "lowpass6_at_frames_max_diff": float(np.abs(ours[6.0][c] - theirs[6.0][c]).max()),
            "opensim_live_vs_pipeline_reference_max_diff": float(np.abs(theirs[6.0][c] - reference[c]).max())})
    summary = {"opensim_time_shift_s": float(np.abs(te - t).max()), "frames": len(t),
               "frames_compared_at_opensim_times": int(inside.sum())}
    return pd.DataFrame(rows), {**summary, "ours": ours[6.0], "theirs": theirs[6.0]}


def static_optimization(folder: Path) -> dict:
    import opensim as osim
    from osim_emb import load_osim
    from osim_emb.cli.main import main as cli
    from osim_emb.io.external_loads import read_external_loads
    from osim_emb.io.motion import coordinates_from_motion, read_motion
    from osim_emb.opensim.static_optimization import opensim_static_optimization, read_storage
    from osim_emb.paths.geometry import lengths_and_moment_arms
    from osim_emb.simulation.motions import analysis_states, inverse_dynamics_of_motion
    from osim_emb.simulation.static_optimization import static_optimization as solve
    path = folder / "subject01.osim"
    model = load_osim(str(path))
    reserves = {n: (1000.0 if n.startswith("pelvis") else 100.0) for n in model.coordinate_names}
    prefix = folder / "ours_so"
    assert cli(["static-optimization", str(path), str(folder / "subject01_walk_IK.mot"), "-o", str(prefix),
                "--no-passive", "--external-loads", str(folder / "subject01_walk_grf.xml"), "--overwrite", "--quiet",
                *[f"--reserve={n}={f:g}" for n, f in reserves.items()]]) == 0
    ours = read_storage(f"{prefix}_StaticOptimization_activation.sto")
    ref = opensim_static_optimization(path, folder / "subject01_walk_IK.mot", reserves=reserves, muscles_only=True,
                                      external_loads=folder / "subject01_walk_grf.xml", out_dir=folder / "opensim_so")
    names = [m.name for m in model.muscles]
    reserve_names = [f"reserve_{n}" for n in model.coordinate_names]
    t, q, _ = coordinates_from_motion(model, *read_motion(folder / "subject01_walk_IK.mot"))
    qs, qd, qdd = analysis_states(t, q)
    tau = inverse_dynamics_of_motion(model, t, qs, qd, qdd, external_loads=read_external_loads(
        folder / "subject01_walk_grf.xml")).drop(columns="time").to_numpy()
    _, r = lengths_and_moment_arms(model, qs, names, allow_out_of_range=True, opensim_compat=True)  # as applied
    force = ref["force"]
    balance = (np.einsum("nkm,nm->nk", r, force[names].to_numpy()) + force[reserve_names].to_numpy())
    # OpenSim's f_opt at every frame, in the package's problem
    om = osim.Model(str(path))
    state = om.initSystem()
    cs = om.getCoordinateSet()
    muscles = om.getMuscles()
    fopt = np.zeros((len(t), len(names)))
    for i in range(len(t)):
        for k, n in enumerate(model.coordinate_names):
            cs.get(n).setValue(state, qs[i, k], False)
            cs.get(n).setSpeedValue(state, qd[i, k])
        om.assemble(state)
        om.realizeVelocity(state)
        for j, n in enumerate(names):
            fopt[i, j] = muscles.get(n).calcInextensibleTendonActiveFiberForce(state, 1.0)
    lo = np.array([m.parameters.min_control for m in model.muscles])
    hi = np.array([m.parameters.max_control for m in model.muscles])
    with_fopt = solve(r, tau, fopt, None, lower=lo, upper=hi,
                      reserves=np.array([reserves[n] for n in model.coordinate_names]))
    a_os = ref["activation"][names].to_numpy()
    return {"frames": len(t), "muscles": len(names),
            "opensim_balance_residual_N_m_or_N": float(np.abs(balance - tau).max()),
            "largest_generalized_force_N_m_or_N": float(np.abs(tau).max()),
            "activation_max_diff": float(np.abs(ours[names].to_numpy() - a_os).max()),
            "reserve_control_max_diff": float(np.abs(ours[reserve_names].to_numpy()
                                                      - ref["activation"][reserve_names].to_numpy()).max()),
            "activation_max_diff_with_opensim_fopt": float(np.abs(with_fopt.activations - a_os).max()),
            "max_activation": float(a_os.max()), "opensim_seconds": ref["seconds"]}


SETUP = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><AnalyzeTool name="walk"><model_file>subject01.osim</model_file>
<replace_force_set>false</replace_force_set><force_set_files>gait10dof_Reserve_Actuators.xml</force_set_files>
<results_directory>so_setup_results</results_directory><initial_time>{t0}</initial_time><final_time>{t1}</final_time>
<AnalysisSet><objects><StaticOptimization name="StaticOptimization"><on>true</on>
<use_model_force_set>true</use_model_force_set><activation_exponent>2</activation_exponent>
<use_muscle_physiology>true</use_muscle_physiology><optimizer_convergence_criterion>1e-8</optimizer_convergence_criterion>
</StaticOptimization></objects></AnalysisSet><external_loads_file>subject01_walk_grf.xml</external_loads_file>
<coordinates_file>subject01_walk_IK.mot</coordinates_file>
<lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates></AnalyzeTool></OpenSimDocument>
"""


def setup_runs(folder: Path, template: str, setup_name: str, opensim_runner, opensim_results: str, command: str):
    """The trial's model and coordinates; an AnalyzeTool setup written from ``template`` over the whole trial and run
    by OpenSim (``opensim_runner(setup, results)``) and by ``osim-emb COMMAND --setup`` (timed): (model, t, q,
    OpenSim's result, the command's seconds)."""
    import time as _time
    from osim_emb import load_osim
    from osim_emb.cli.main import main as cli
    from osim_emb.io.motion import coordinates_from_motion, read_motion
    model = load_osim(str(folder / "subject01.osim"))
    t, q, _ = coordinates_from_motion(model, *read_motion(folder / "subject01_walk_IK.mot"))
    setup = folder / setup_name
    setup.write_text(template.format(t0=t[0], t1=t[-1]))
    ref = opensim_runner(setup, folder / opensim_results)
    start = _time.perf_counter()
    assert cli([command, "--setup", str(setup), "--overwrite", "--quiet"]) == 0
    return model, t, q, ref, _time.perf_counter() - start


def filtered_coordinates(t, q):
    """The trial's coordinates after OpenSim's 6 Hz filter, as the natural quintic spline the AnalyzeTool builds:
    (its knots, the spline)."""
    from osim_emb.simulation.motions import _natural_quintic, opensim_lowpass
    knots, values = opensim_lowpass(t, q, 6.0)
    return knots, _natural_quintic(knots, values)


def setup_static_optimization(folder: Path) -> dict:
    """The pipeline's reserve and residual actuators (gait10dof_Reserve_Actuators.xml: pelvis forces FX, FY and
    torque MZ, a reserve on every other coordinate) in an AnalyzeTool setup with the ground reactions and the 6 Hz
    filter: ``static-optimization --setup`` and OpenSim's AnalyzeTool on the same file; OpenSim's muscle forces and
    actuator controls checked in the package's balance τ = R F + B u."""
    from osim_emb.core.dynamics import actuator_generalized_forces
    from osim_emb.io.external_loads import read_external_loads
    from osim_emb.io.force_set import read_actuators
    from osim_emb.opensim.static_optimization import opensim_static_optimization_setup, read_storage
    from osim_emb.paths.geometry import lengths_and_moment_arms
    from osim_emb.simulation.motions import _natural_quintic, inverse_dynamics_of_motion
    model, t, q, ref, seconds = setup_runs(folder, SETUP, "so_setup.xml", opensim_static_optimization_setup,
                                           "opensim_setup_results", "static-optimization")
    ours = read_storage(folder / "so_setup_results" / "walk_StaticOptimization_activation.sto")
    actuators, _ = read_actuators(folder / "gait10dof_Reserve_Actuators.xml")
    names = [m.name for m in model.muscles]
    acts = [a.name for a in actuators]
    # the balance at OpenSim's output times (its filter resamples: 2e-6 s from the frames), the analysis states of
    # the filtered splines evaluated there, as the AnalyzeTool builds them (simulation.motions.analysis_states)
    te = ref["activation"]["time"].to_numpy()
    inside = (te >= t[0]) & (te <= t[-1])
    knots, coordinates = filtered_coordinates(t, q)
    speeds = _natural_quintic(knots, coordinates(knots, 1))
    qs, qd, qdd = coordinates(te[inside]), coordinates(te[inside], 1), speeds(te[inside], 1)
    tau = inverse_dynamics_of_motion(model, te[inside], qs, qd, qdd, external_loads=read_external_loads(
        folder / "subject01_walk_grf.xml")).drop(columns="time").to_numpy()
    _, r = lengths_and_moment_arms(model, qs, names, allow_out_of_range=True, opensim_compat=True)
    b = actuator_generalized_forces(model, qs, actuators)
    balance = (np.einsum("nkm,nm->nk", r, ref["force"][names].to_numpy()[inside])
               + np.einsum("nkj,nj->nk", b, ref["activation"][acts].to_numpy()[inside]))
    return {"setup_frames": len(ours), "setup_actuators": len(actuators),
            "setup_frames_at_opensim_times": int(inside.sum()),
            "setup_opensim_balance_residual_N_m_or_N": float(np.abs(balance - tau).max()),
            "setup_activation_max_diff": float(np.abs(ours[names].to_numpy()
                                                      - ref["activation"][names].to_numpy()).max()),
            "setup_actuator_control_max_diff": float(np.abs(ours[acts].to_numpy()
                                                            - ref["activation"][acts].to_numpy()).max()),
            "setup_opensim_seconds": ref["seconds"], "setup_package_seconds": seconds}


JR_SETUP = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><AnalyzeTool name="walk"><model_file>subject01.osim</model_file>
<replace_force_set>false</replace_force_set><force_set_files>gait10dof_Reserve_Actuators.xml</force_set_files>
<results_directory>jr_setup_results</results_directory><initial_time>{t0}</initial_time><final_time>{t1}</final_time>
<AnalysisSet><objects><JointReaction name="JointReaction"><on>true</on>
<forces_file>so_setup_results/walk_StaticOptimization_force.sto</forces_file>
<joint_names>hip_r knee_r ankle_r</joint_names><apply_on_bodies>child</apply_on_bodies>
<express_in_frame>child</express_in_frame></JointReaction></objects></AnalysisSet>
<external_loads_file>subject01_walk_grf.xml</external_loads_file><coordinates_file>subject01_walk_IK.mot</coordinates_file>
<lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates></AnalyzeTool></OpenSimDocument>
"""


def joint_reactions(folder: Path) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """The hip, knee and ankle reactions on the right leg's bodies in their own frames, under the muscle and
    actuator forces of step 3 (the command's force file): ``joint-reactions --setup`` and OpenSim's AnalyzeTool
    with a JointReaction on the same setup. Compared at OpenSim's output times (the package's filtered splines and
    the forces file evaluated there, :func:`osim_emb.simulation.joint_reactions.joint_reactions_of_motion`)."""
    from osim_emb.cli.common import limit_forces_applied
    from osim_emb.io.external_loads import read_external_loads
    from osim_emb.io.force_set import read_actuators
    from osim_emb.opensim.joint_reactions import opensim_joint_reactions_setup
    from osim_emb.opensim.static_optimization import read_storage
    from osim_emb.simulation.joint_reactions import joint_reactions_of_motion, reaction_requests
    model, t, q, ref, seconds = setup_runs(folder, JR_SETUP, "jr_setup.xml", opensim_joint_reactions_setup,
                                           "opensim_jr_results", "joint-reactions")
    ours = read_storage(folder / "jr_setup_results" / "walk_JointReaction_ReactionLoads.sto")
    theirs = ref["loads"]
    te = theirs["time"].to_numpy()
    inside = (te >= t[0]) & (te <= t[-1])
    _, coordinates = filtered_coordinates(t, q)
    forces_table = read_storage(folder / "so_setup_results" / "walk_StaticOptimization_force.sto")
    ft = forces_table["time"].to_numpy()
    forces = {c: np.interp(te[inside], ft, forces_table[c].to_numpy()) for c in forces_table.columns if c != "time"}
    actuators, _ = read_actuators(folder / "gait10dof_Reserve_Actuators.xml")
    requests = reaction_requests(model, ["hip_r", "knee_r", "ankle_r"], "child", "child")
    at_theirs = joint_reactions_of_motion(
        model, te[inside], coordinates(te[inside]), coordinates(te[inside], 1), forces, requests=requests,
        actuators=actuators, external_loads=read_external_loads(folder / "subject01_walk_grf.xml"),
        limit_forces=limit_forces_applied(model, "joint-reactions")).table()
    labels = [c for c in theirs.columns if c != "time"]
    force_cols = [c for c in labels if c[-2] == "f"]
    moment_cols = [c for c in labels if c[-2] == "m"]
    diff = (at_theirs[labels].to_numpy() - theirs[labels].to_numpy()[inside])
    out = {"jr_frames": len(ours), "jr_frames_at_opensim_times": int(inside.sum()),
           "jr_force_max_diff_N": float(np.abs(diff[:, [labels.index(c) for c in force_cols]]).max()),
           "jr_moment_max_diff_N_m": float(np.abs(diff[:, [labels.index(c) for c in moment_cols]]).max()),
           "jr_largest_force_N": float(np.abs(theirs[force_cols].to_numpy()).max()),
           "jr_opensim_seconds": ref["seconds"], "jr_package_seconds": seconds}
    return out, ours, theirs


def reaction_figure(ours: pd.DataFrame, theirs: pd.DataFrame, stem: Path) -> None:
    """The knee's and hip's reaction forces on the tibia and femur, in their frames: the command against OpenSim."""
    from osim_emb.report import figure_style as fs
    fig, axes = fs.figure("double", height=2.4, ncols=3)
    panels = [("hip_r_on_femur_r_in_femur_r_fy", "hip, on femur, y"), ("knee_r_on_tibia_r_in_tibia_r_fy",
                                                                        "knee, on tibia, y"),
              ("knee_r_on_tibia_r_in_tibia_r_fx", "knee, on tibia, x")]
    for ax, (c, title) in zip(axes[0], panels):
        ax.plot(ours["time"], ours[c], label="osim-emb joint-reactions", **fs.cue(0))
        ax.plot(theirs["time"], theirs[c], label="OpenSim JointReaction (every 3rd frame)", linestyle="none",
                marker="o", markersize=2.5, markevery=3, color=fs.color(1))
        ax.set_title(title, loc="left")
        ax.set_xlabel("time (s)")
    axes[0, 0].set_ylabel("reaction force (N)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fs.legend_below(fig, handles, labels)
    fs.save(fig, stem)


def from_markers(folder: Path) -> pd.DataFrame:
    """The trial from its markers: ``inverse-kinematics --setup IK/walk_Setup_IK.xml`` and OpenSim's IK tool on the
    same setup (as set, accuracy 1e-5, and at 1e-9); OpenSim's InverseDynamicsTool (6 Hz, ground reactions) on
    each result, so that the moments differ by the IK alone: how far OpenSim's IK tolerance moves the joint
    moments."""
    from osim_emb.cli.main import main as cli
    from osim_emb.opensim.inverse_kinematics import opensim_inverse_kinematics
    from osim_emb.opensim.static_optimization import opensim_inverse_dynamics
    setup = folder / "IK" / "walk_Setup_IK.xml"
    ours = folder / "ours_ik.mot"
    assert cli(["inverse-kinematics", "--setup", str(setup), "-o", str(ours), "--overwrite", "--quiet"]) == 0
    motions = {"package": ours}
    for label, accuracy in (("opensim_as_set", None), ("opensim_1e-9", 1e-9)):
        opensim_inverse_kinematics(setup=setup, accuracy=accuracy, out_dir=folder / f"ik_{label}")
        motions[label] = folder / f"ik_{label}" / "opensim_ik.mot"
    moments = {k: opensim_inverse_dynamics(folder / "subject01.osim", m, folder / f"id_{k}",
                                           external_loads=folder / "subject01_walk_grf.xml", lowpass_hz=6.0)
               for k, m in motions.items()}
    rows = []
    for c in [c for c in moments["package"].columns if c != "time"]:
        rows.append({"coordinate": c, "peak_N_m_or_N": float(np.abs(moments["package"][c]).max()),
                     "moment_diff_opensim_ik_as_set": float(np.abs(moments["opensim_as_set"][c]
                                                                   - moments["package"][c]).max()),
                     "moment_diff_opensim_ik_1e-9": float(np.abs(moments["opensim_1e-9"][c]
                                                                 - moments["package"][c]).max())})
    return pd.DataFrame(rows)


def figure(ours: pd.DataFrame, theirs: pd.DataFrame, stem: Path) -> None:
    from osim_emb.report import figure_style as fs
    cols = ["hip_flexion_r_moment", "knee_angle_r_moment", "ankle_angle_r_moment"]
    fig, axes = fs.figure("double", height=2.4, ncols=3)
    for ax, c in zip(axes[0], cols):
        ax.plot(ours["time"], ours[c], label="osim-emb inverse-dynamics", **fs.cue(0))
        ax.plot(theirs["time"], theirs[c], label="OpenSim InverseDynamicsTool (every 3rd frame)", linestyle="none",
                marker="o", markersize=2.5, markevery=3, color=fs.color(1))
        ax.set_title(c.replace("_moment", "").replace("_", " "), loc="left")
        ax.set_xlabel("time (s)")
    axes[0, 0].set_ylabel("moment (N m)")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fs.legend_below(fig, handles, labels)
    fs.save(fig, stem)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pipeline", type=Path, help="opensim-models' Pipelines/Gait10dof18musc (default: the mirror)")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        folder = fetch_files(args.pipeline, Path(scratch))
        table, info = inverse_dynamics(folder)
        so = static_optimization(folder)
        so |= setup_static_optimization(folder)
        jr, jr_ours, jr_theirs = joint_reactions(folder)
        so |= jr
        reaction_figure(jr_ours, jr_theirs, args.out / "joint_reactions")
        markers = from_markers(folder)
        figure(info.pop("ours"), info.pop("theirs"), args.out / "moments")
    table.to_csv(args.out / "inverse_dynamics.csv", index=False, float_format="%.3g")
    markers.to_csv(args.out / "from_markers.csv", index=False, float_format="%.3g")
    print(markers.to_string(index=False))
    pd.DataFrame([{**info, **so}]).to_csv(args.out / "static_optimization.csv", index=False, float_format="%.4g")
    print(table.to_string(index=False))
    print(pd.Series({**info, **so}).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
