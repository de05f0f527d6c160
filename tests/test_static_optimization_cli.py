"""``osim-emb static-optimization`` on a motion file, against OpenSim 4.6's StaticOptimization (AnalyzeTool) on the
same states file, and its refusals."""

from __future__ import annotations

import numpy as np
import pytest

from opensim_builders import build_arm26_with_force_elements, cubic, model_with_forces, \
    opensim_static_optimization, read_sto, with_forces_switched_off
from osim_emb.cli.main import main

# speeds quadratic in t: OpenSim's quintic GCV spline and the package's cubic spline of them both give q'' exactly
COEF = {"r_shoulder_elev": (0.2, 0.5, 1.0, -1.2), "r_elbow_flex": (0.3, 2.0, 1.5, -3.0)}


@pytest.mark.opensim
@pytest.mark.models
def test_static_optimization_command_equals_opensims_tool(osim, models_dir, tmp_path, capsys):
    """arm26, 26 frames of a 0.5 s motion given as an OpenSim states file (values and speeds): the command's
    activations and forces (its own moment arms, lengths, speeds, inverse dynamics and Thelen2003 muscles,
    --no-passive as OpenSim's tool) against OpenSim's StaticOptimization at IPOPT convergence 1e-8."""
    path = models_dir / "arm26.osim"
    times = np.linspace(0.0, 0.5, 26)
    _, act_os, frc_os = opensim_static_optimization(osim, path, tmp_path / "opensim", times, 1e-8, COEF)
    states = tmp_path / "opensim" / "states.sto"
    prefix = tmp_path / "ours" / "arm26"
    prefix.parent.mkdir()
    assert main(["static-optimization", str(path), str(states), "-o", str(prefix), "--no-passive"]) == 0
    out = capsys.readouterr().out
    assert "26 frames, 6 muscles" in out
    act = read_sto(f"{prefix}_StaticOptimization_activation.sto")
    frc = read_sto(f"{prefix}_StaticOptimization_force.sto")
    muscles = [c for c in act_os.columns if c != "time"]
    np.testing.assert_allclose(act["time"], times, atol=1e-12)
    da = np.abs(act[muscles].to_numpy() - act_os[muscles].to_numpy()).max()
    df = np.abs(frc[muscles].to_numpy() - frc_os[muscles].to_numpy()).max() / np.abs(frc_os[muscles].to_numpy()).max()
    print(f"[agreement] static-optimization command vs OpenSim's StaticOptimization, arm26: activations {da:.2e}, "
          f"forces {df:.2e} of max")
    assert da < 1e-6 and df < 1e-6
    # the controls OpenSim's tool prints for the forward tools, read back by OpenSim: the activations at the frames
    controls = osim.ControlSet(f"{prefix}_StaticOptimization_controls.xml")
    assert controls.getSize() == len(muscles)
    for m in muscles:
        control = controls.get(m)
        values = [control.getControlValue(float(t)) for t in act["time"]]
        np.testing.assert_allclose(values, act[m], rtol=1e-11, atol=1e-12)  # the .sto holds 12 digits
    # a states file's speeds are used as they are: --lowpass, which OpenSim's AnalyzeTool applies to coordinates
    # files only, is not applied, and the command says so
    prefix3 = tmp_path / "ours" / "lowpass"
    assert main(["static-optimization", str(path), str(states), "-o", str(prefix3), "--no-passive", "--lowpass",
                 "6"]) == 0
    assert "--lowpass is not applied" in capsys.readouterr().err
    same = read_sto(f"{prefix3}_StaticOptimization_activation.sto")
    assert np.array_equal(same[muscles].to_numpy(), act[muscles].to_numpy())
    # with the passive fibre forces (the default) the same motion is infeasible from t = 0.32 s: TRIlong's passive
    # tension (about 100 N there, 180 N at the end) extends the shoulder more than BIClong can flex it.  OpenSim's
    # tool, which leaves passive forces out, reports a solution.
    assert main(["static-optimization", str(path), str(states), "-o", str(tmp_path / "ours" / "passive")]) == 2
    err = capsys.readouterr().err
    assert "infeasible at 10 of 26 frames" in err and "r_shoulder_elev" in err and "t = 0.32 s" in err


@pytest.mark.models
def test_static_optimization_command_reserves_and_refusals(models_dir, tmp_path, capsys):
    """A motion faster than arm26's muscles can drive: refused naming the frames, their time and the unmet
    moment (exit 2, nothing written); with reserve actuators it runs, the reserves in their own columns, and
    R F + reserve forces = τ.  Existing outputs are not overwritten; a coordinate name not in the model is named."""
    path = models_dir / "arm26.osim"
    t = np.linspace(0.0, 0.2, 21)
    fast = {"r_shoulder_elev": (0.2, 0.0, 60.0, -200.0), "r_elbow_flex": (1.0, 0.0, 0.0, 0.0)}
    motion = tmp_path / "fast.mot"
    lines = ["fast", "version=1", f"nRows={len(t)}", "nColumns=3", "inDegrees=no", "endheader",
             "time\tr_shoulder_elev\tr_elbow_flex"]
    lines += [f"{ti:.17g}\t{cubic(fast['r_shoulder_elev'], ti):.17g}\t{cubic(fast['r_elbow_flex'], ti):.17g}"
              for ti in t]
    motion.write_text("\n".join(lines) + "\n")
    prefix = tmp_path / "fast"
    assert main(["static-optimization", str(path), str(motion), "-o", str(prefix)]) == 2
    err = capsys.readouterr().err
    assert "infeasible" in err and "r_shoulder_elev" in err and "--reserve / --reserves" in err and "t = 0" in err
    assert "passive fibre forces are included" in err and "--no-passive" in err  # audit r23: OpenSim leaves them out
    assert not list(tmp_path.glob("fast_StaticOptimization*"))
    assert main(["static-optimization", str(path), str(motion), "-o", str(prefix), "--reserves", "100",
                 "--reserve", "r_elbow_flex=0", "--plot"]) == 0
    assert (tmp_path / "fast_StaticOptimization_activation.png").stat().st_size > 1000
    printed = capsys.readouterr().out
    assert "largest reserve force" in printed and "passive fibre forces included" in printed
    frc = read_sto(f"{prefix}_StaticOptimization_force.sto")
    act = read_sto(f"{prefix}_StaticOptimization_activation.sto")
    assert "reserve_r_shoulder_elev" in frc.columns and "reserve_r_elbow_flex" not in frc.columns
    assert np.abs(frc["reserve_r_shoulder_elev"]).max() > 1.0
    np.testing.assert_allclose(frc["reserve_r_shoulder_elev"], 100 * act["reserve_r_shoulder_elev"], rtol=1e-12)
    # the balance: R F + reserve = τ, with the package's moment arms and inverse dynamics of the same spline
    from osim_emb import load_osim
    from osim_emb.paths.geometry import lengths_and_moment_arms
    from osim_emb.simulation.motions import analysis_states, inverse_dynamics_of_motion
    model = load_osim(str(path))
    q = np.column_stack([cubic(fast[n], t) for n in model.coordinate_names])
    qs, qd, qdd = analysis_states(t, q)  # as OpenSim's AnalyzeTool: a spline of the coordinates, then of the speeds
    tau = inverse_dynamics_of_motion(model, t, qs, qd, qdd).drop(columns="time").to_numpy()
    _, r = lengths_and_moment_arms(model, qs, allow_out_of_range=True)
    names = [m.name for m in model.muscles]
    balance = np.einsum("nkm,nm->nk", r, frc[names].to_numpy())
    balance[:, 0] += frc["reserve_r_shoulder_elev"].to_numpy()
    assert np.abs(balance - tau).max() < 1e-6 * np.abs(tau).max()  # the .sto's 12 significant digits
    # nothing overwritten; a bad reserve named
    assert main(["static-optimization", str(path), str(motion), "-o", str(prefix), "--reserves", "100"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["static-optimization", str(path), str(motion), "-o", str(tmp_path / "x"), "--reserve",
                 "knee=10"]) == 2
    assert "--reserve 'knee=10'" in capsys.readouterr().err


@pytest.mark.opensim
@pytest.mark.models
def test_reserves_equal_opensims_reserve_actuators(osim, models_dir, tmp_path):
    """A reserve on the shoulder (optimal force 5 N m) in the command and, as a CoordinateActuator added by
    ``opensim_static_optimization(reserves=..., muscles_only=True)``, in OpenSim's tool: the same solution,
    activations and the reserve's control within 1e-6."""
    from osim_emb.opensim.static_optimization import opensim_static_optimization as opensim_tool
    path = models_dir / "arm26.osim"
    times = np.linspace(0.0, 0.5, 26)
    opensim_static_optimization(osim, path, tmp_path / "opensim", times, 1e-8, COEF)  # writes the states file
    states = tmp_path / "opensim" / "states.sto"
    ref = opensim_tool(path, states, reserves={"r_shoulder_elev": 5.0}, muscles_only=True)
    prefix = tmp_path / "ours"
    assert main(["static-optimization", str(path), str(states), "-o", str(prefix), "--no-passive",
                 "--reserve", "r_shoulder_elev=5"]) == 0
    ours = read_sto(f"{prefix}_StaticOptimization_activation.sto")
    theirs = ref["activation"]
    cols = [c for c in ours.columns if c != "time"]
    assert "reserve_r_shoulder_elev" in cols and set(cols) <= set(theirs.columns)
    diff = np.abs(ours[cols].to_numpy() - theirs[cols].to_numpy()).max()
    cost = [float((t[cols].to_numpy() ** 2).sum()) for t in (ours, theirs)]
    print(f"[agreement] static-optimization with a shoulder reserve vs OpenSim's: controls {diff:.2e}, "
          f"cost {cost[0]:.9g} / {cost[1]:.9g}")
    assert diff < 1e-6 and cost[0] == pytest.approx(cost[1], rel=1e-6)
    assert np.abs(ours["reserve_r_shoulder_elev"]).max() > 0.05  # the reserve works


@pytest.mark.models
def test_path_springs_are_applied_not_shared(models_dir, tmp_path, capsys):
    """arm26 with BRA a PathSpring: the forces are shared among the five muscles and the spring's tension is applied
    (as OpenSim's tool applies it): the activations differ from those of arm26 without BRA. (Against OpenSim:
    tests/test_passive_path_forces.py.)"""
    text = (models_dir / "arm26.osim").read_text()
    start = text.index('<Thelen2003Muscle name="BRA">')
    end = text.index("</Thelen2003Muscle>", start) + len("</Thelen2003Muscle>")
    bra = text[start:end]
    path_start = bra.index("<GeometryPath")
    path_end = bra.index("</GeometryPath>") + len("</GeometryPath>")
    spring = ('<PathSpring name="BRA"><resting_length>0.1</resting_length><stiffness>100</stiffness>'
              f"<dissipation>0</dissipation>{bra[path_start:path_end]}</PathSpring>")
    model = tmp_path / "arm26_spring.osim"
    model.write_text(text[:start] + spring + text[end:])
    without = tmp_path / "arm26_without_bra.osim"
    without.write_text(text[:start] + text[end:])
    t = np.linspace(0.0, 0.5, 11)
    rows = "\n".join(f"{ti:.6f}\t{0.2 + 0.1 * ti:.10f}\t{1.0 + 0.2 * ti:.10f}" for ti in t)
    motion = tmp_path / "slow.mot"
    motion.write_text(f"slow\nversion=1\nnRows=11\nnColumns=3\ninDegrees=no\nendheader\n"
                      f"time\tr_shoulder_elev\tr_elbow_flex\n{rows}\n")
    for name, path in (("so", model), ("bare", without)):
        assert main(["static-optimization", str(path), str(motion), "-o", str(tmp_path / name), "--reserves", "10"]) == 0
    captured = capsys.readouterr()
    assert "leaves out" not in captured.err and "5 muscles" in captured.out
    act = read_sto(tmp_path / "so_StaticOptimization_activation.sto")
    bare = read_sto(tmp_path / "bare_StaticOptimization_activation.sto")
    assert "BRA" not in act.columns and "BIClong" in act.columns
    assert (bare["BIClong"] - act["BIClong"]).min() > 5e-4  # the spring's flexion takes some of the biceps' work


ACTUATOR_FILE = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="20302">
  <ForceSet name="residuals">
    <defaults>
      <PointActuator name="default"><force_is_global> true </force_is_global><optimal_force> 40 </optimal_force>
      </PointActuator>
      <TorqueActuator name="default"><torque_is_global> false </torque_is_global></TorqueActuator>
    </defaults>
    <objects>
      <PointActuator name="hand_FY"><body>r_ulna_radius_hand</body><point>0.01 -0.25 0.02</point>
        <direction>0 1 0</direction></PointActuator>
      <PointActuator name="hand_FX_local"><body>r_ulna_radius_hand</body><point>0 -0.1 0</point>
        <direction>2 0 0</direction><force_is_global>false</force_is_global><optimal_force>25</optimal_force>
      </PointActuator>
      <PointActuator name="humerus_FZ_at_global"><body>r_humerus</body><point>0.0 -0.2 0.15</point>
        <point_is_global>true</point_is_global><direction>0.3 0 1</direction></PointActuator>
      <TorqueActuator name="elbow_MZ"><bodyA>r_ulna_radius_hand</bodyA><bodyB>r_humerus</bodyB>
        <axis>0 0 1</axis><optimal_force>3</optimal_force><min_control>-0.005</min_control>
        <max_control>0.005</max_control></TorqueActuator>
      <TorqueActuator name="shoulder_MZ_global"><bodyA>r_humerus</bodyA><bodyB>ground</bodyB><axis>0 0 1</axis>
        <torque_is_global>true</torque_is_global><optimal_force>2</optimal_force></TorqueActuator>
      <CoordinateActuator name="shoulder_reserve"><coordinate>r_shoulder_elev</coordinate>
        <optimal_force>4</optimal_force></CoordinateActuator>
      <CoordinateActuator name="off"><coordinate>r_elbow_flex</coordinate><isDisabled>true</isDisabled>
      </CoordinateActuator>
    </objects>
  </ForceSet>
</OpenSimDocument>
"""


@pytest.mark.opensim
@pytest.mark.models
def test_actuator_file_equals_opensims_force_set_files(osim, models_dir, tmp_path, capsys):
    """A pipeline's actuator file (3.x, with <defaults>): point actuators with global and local directions and a
    global point, torque actuators between two bodies and against the ground (one with control bounds), a
    coordinate actuator, a disabled one — the command's `--actuators` against OpenSim's StaticOptimization with
    the same file as its AnalyzeTool's force_set_files (OpenSim reads the file itself)."""
    from osim_emb.opensim.static_optimization import opensim_static_optimization as opensim_so
    path = models_dir / "arm26.osim"
    times = np.linspace(0.0, 0.5, 26)
    opensim_static_optimization(osim, path, tmp_path / "opensim", times, 1e-8, COEF)  # writes the states file
    states = tmp_path / "opensim" / "states.sto"
    actuators = tmp_path / "actuators.xml"
    actuators.write_text(ACTUATOR_FILE)
    ref = opensim_so(path, states, actuator_files=[actuators], muscles_only=True, out_dir=tmp_path / "os2")
    prefix = tmp_path / "ours"
    assert main(["static-optimization", str(path), str(states), "-o", str(prefix), "--no-passive", "--actuators",
                 str(actuators)]) == 0
    captured = capsys.readouterr()
    assert "'off' is disabled" in captured.err and "6 actuators of" in captured.out
    act = read_sto(f"{prefix}_StaticOptimization_activation.sto")
    frc = read_sto(f"{prefix}_StaticOptimization_force.sto")
    names = ["hand_FY", "hand_FX_local", "humerus_FZ_at_global", "elbow_MZ", "shoulder_MZ_global", "shoulder_reserve"]
    columns = [c for c in act.columns if c != "time"]
    da = np.abs(act[columns].to_numpy() - ref["activation"][columns].to_numpy()).max()
    df = np.abs(frc[names].to_numpy() - ref["force"][names].to_numpy()).max()
    bound = np.abs(act["elbow_MZ"]).max()
    # OpenSim's solution in the package's balance τ = R F + B u (its B: the actuators' generalized forces per unit
    # control): met to its file's precision when both read the file alike
    from osim_emb import load_osim
    from osim_emb.core.dynamics import actuator_generalized_forces
    from osim_emb.io.force_set import read_actuators
    from osim_emb.io.motion import coordinates_from_motion, read_motion
    from osim_emb.paths.geometry import lengths_and_moment_arms
    from osim_emb.simulation.motions import analysis_states, inverse_dynamics_of_motion
    model = load_osim(path)
    t, q, qd = coordinates_from_motion(model, *read_motion(states))
    qs, qv, qa = analysis_states(t, q, qd)
    tau = inverse_dynamics_of_motion(model, t, qs, qv, qa).drop(columns="time").to_numpy()
    muscles = [m.name for m in model.muscles]
    _, r = lengths_and_moment_arms(model, qs, muscles, allow_out_of_range=True, opensim_compat=True)
    b = actuator_generalized_forces(model, qs, read_actuators(actuators)[0])
    unmet = np.abs(tau - np.einsum("nkm,nm->nk", r, ref["force"][muscles].to_numpy())
                   - np.einsum("nkj,nj->nk", b, ref["activation"][names].to_numpy())).max()
    cost = {k: (tab[columns].to_numpy() ** 2).sum(axis=1) for k, tab in (("package", act), ("opensim", ref["activation"]))}
    print(f"\n[agreement] --actuators vs OpenSim's force_set_files: controls and activations {da:.2e}, actuator "
          f"forces {df:.2e} N or N m; OpenSim's solution meets the package's balance to {unmet:.1e} N m of "
          f"{np.abs(tau).max():.2f}; costs {np.abs(cost['package'] - cost['opensim']).max():.1e} apart; elbow_MZ's "
          f"largest |control| {bound:.4f} (bound 0.005)")
    assert set(names) <= set(ref["activation"].columns) and "off" not in ref["activation"].columns
    assert unmet < 1e-6 * max(np.abs(tau).max(), 1.0)
    assert da < 5e-5 and df < 1e-3  # IPOPT at 1e-8 on a flat cost; the same problem (above)
    assert np.abs(cost["package"] - cost["opensim"]).max() < 1e-7
    assert np.abs(act[names].to_numpy()).max() > 0.05  # the actuators take part
    assert 0.005 - 1e-6 < bound <= 0.005 + 1e-12  # at its bound


@pytest.mark.models
def test_actuator_file_refusals(models_dir, tmp_path, capsys):
    """An actuator type the package does not apply, a body or coordinate the model lacks, a name a muscle has:
    refused with the file, line and element; nothing written."""
    path = models_dir / "arm26.osim"
    t = np.linspace(0.0, 0.2, 11)
    motion = tmp_path / "m.mot"
    motion.write_text("m\nversion=1\nnRows=11\nnColumns=3\ninDegrees=no\nendheader\ntime\tr_shoulder_elev\t"
                      "r_elbow_flex\n" + "".join(f"{ti}\t{0.2 + ti}\t{1.0}\n" for ti in t))
    cases = {"<McKibbenActuator name=\"x\"/>": "McKibbenActuator 'x': actuator type not supported",
             "<PointActuator name=\"p\"><body>femur</body></PointActuator>": "no body 'femur'",
             "<CoordinateActuator name=\"c\"><coordinate>knee</coordinate></CoordinateActuator>":
                 "no coordinate 'knee'",
             "<CoordinateActuator name=\"BIClong\"><coordinate>r_elbow_flex</coordinate></CoordinateActuator>":
                 "already a muscle's",
             "<PointActuator name=\"p\"><body>r_humerus</body><direction>0 0</direction></PointActuator>":
                 "must be three numbers"}
    for body, reason in cases.items():
        f = tmp_path / "a.xml"
        f.write_text(f"<OpenSimDocument><ForceSet><objects>{body}</objects></ForceSet></OpenSimDocument>")
        assert main(["static-optimization", str(path), str(motion), "-o", str(tmp_path / "so"), "--actuators",
                     str(f), "--reserves", "10"]) == 2
        err = capsys.readouterr().err
        assert reason in err, (reason, err)
        assert not list(tmp_path.glob("so_*"))


@pytest.mark.opensim
@pytest.mark.models
def test_setup_file_equals_opensims_analyze_tool(osim, models_dir, tmp_path, capsys):
    """An AnalyzeTool setup as a pipeline writes it (a coordinates file in degrees, the tool's time range narrower
    than the file's, the StaticOptimization's own start time later still — OpenSim reports from the tool's initial
    time regardless —, the actuator file as force_set_files,
    paths relative to the setup): `static-optimization --setup` writes OpenSim's files under results_directory and
    equals OpenSim's AnalyzeTool run on the same file."""
    from osim_emb.opensim.static_optimization import opensim_static_optimization_setup
    folder = tmp_path / "pipeline"
    (folder / "kinematics").mkdir(parents=True)
    t = np.linspace(0.0, 0.5, 51)
    rows = "".join(f"{ti:.6f}\t{np.degrees(cubic(COEF['r_shoulder_elev'], ti)):.10f}\t"
                   f"{np.degrees(cubic(COEF['r_elbow_flex'], ti)):.10f}\n" for ti in t)
    (folder / "kinematics" / "ik.mot").write_text("ik\nversion=1\nnRows=51\nnColumns=3\ninDegrees=yes\nendheader\n"
                                                  "time\tr_shoulder_elev\tr_elbow_flex\n" + rows)
    (folder / "actuators.xml").write_text(ACTUATOR_FILE)
    (folder / "arm26.osim").write_bytes((models_dir / "arm26.osim").read_bytes())
    setup = folder / "setup_so.xml"
    setup.write_text(
        "<?xml version=\"1.0\" encoding=\"UTF-8\" ?><OpenSimDocument Version=\"30000\"><AnalyzeTool name=\"trial\">"
        "<model_file>arm26.osim</model_file><replace_force_set>false</replace_force_set>"
        "<force_set_files>actuators.xml</force_set_files><results_directory>so_results</results_directory>"
        "<initial_time>0.1</initial_time><final_time>0.45</final_time><AnalysisSet><objects>"
        "<StaticOptimization name=\"StaticOptimization\"><on>true</on><start_time>0.15</start_time>"
        "<end_time>0.6</end_time><use_model_force_set>true</use_model_force_set>"
        "<activation_exponent>2</activation_exponent><use_muscle_physiology>true</use_muscle_physiology>"
        "<optimizer_convergence_criterion>1e-10</optimizer_convergence_criterion></StaticOptimization></objects>"
        "</AnalysisSet><coordinates_file>kinematics/ik.mot</coordinates_file>"
        "<lowpass_cutoff_frequency_for_coordinates>-1</lowpass_cutoff_frequency_for_coordinates></AnalyzeTool>"
        "</OpenSimDocument>")
    ref = opensim_static_optimization_setup(setup, tmp_path / "opensim")
    assert main(["static-optimization", "--setup", str(setup)]) == 0
    ours = read_sto(folder / "so_results" / "trial_StaticOptimization_activation.sto")
    forces = read_sto(folder / "so_results" / "trial_StaticOptimization_force.sto")
    assert len(ours) == len(ref["activation"]) and abs(ours["time"].iloc[0] - 0.1) < 1e-9
    assert np.allclose(ours["time"], ref["activation"]["time"], atol=1e-9)
    columns = [c for c in ref["activation"].columns if c != "time"]
    assert sorted(columns) == sorted(c for c in ours.columns if c != "time")
    da = np.abs(ours[columns].to_numpy() - ref["activation"][columns].to_numpy()).max()
    df = np.abs(forces[columns].to_numpy() - ref["force"][columns].to_numpy()).max()
    with capsys.disabled():
        print(f"\n[agreement] static-optimization --setup vs OpenSim's AnalyzeTool on the same file: {len(ours)} "
              f"frames (t = {ours['time'].iloc[0]:g} to {ours['time'].iloc[-1]:g} s), activations and controls "
              f"{da:.2e}, forces {df:.2e} N")
    assert da < 5e-5 and df < 1e-2
    # the analysis's step_interval: the rows OpenSim's AnalyzeTool reports (first, last, row index a multiple of 3)
    every = folder / "setup_so_every3.xml"
    every.write_text(setup.read_text().replace("<on>true</on>", "<on>true</on><step_interval>3</step_interval>")
                     .replace("<results_directory>so_results<", "<results_directory>so_every3<"))
    ref5 = opensim_static_optimization_setup(every, tmp_path / "opensim_every3")
    assert main(["static-optimization", "--setup", str(every)]) == 0
    ours5 = read_sto(folder / "so_every3" / "trial_StaticOptimization_activation.sto")
    assert len(ours5) == len(ref5["activation"]) < len(ours) / 2
    assert np.allclose(ours5["time"], ref5["activation"]["time"], atol=1e-9)
    assert np.abs(ours5[columns].to_numpy() - ref5["activation"][columns].to_numpy()).max() < 5e-5
    # filtered: OpenSim reports on its padded, resampled grid from the row at or before the initial time; --times
    # opensim reports there too, row by row (the default, the motion's frames, shares few of those times)
    t60 = np.round(np.arange(31) / 60.0, 3)  # a 60 Hz trial's rounded times: OpenSim resamples them
    rows60 = "".join(f"{ti:.3f}\t{np.degrees(cubic(COEF['r_shoulder_elev'], ti)):.10f}\t"
                     f"{np.degrees(cubic(COEF['r_elbow_flex'], ti)):.10f}\n" for ti in t60)
    (folder / "kinematics" / "ik60.mot").write_text("ik\nversion=1\nnRows=31\nnColumns=3\ninDegrees=yes\nendheader\n"
                                                    "time\tr_shoulder_elev\tr_elbow_flex\n" + rows60)
    filtered = folder / "setup_so_6hz.xml"
    filtered.write_text(setup.read_text().replace("kinematics/ik.mot", "kinematics/ik60.mot").replace(
        "<lowpass_cutoff_frequency_for_coordinates>-1<", "<lowpass_cutoff_frequency_for_coordinates>6<")
        .replace("<initial_time>0.1<", "<initial_time>0.105<")
        .replace("<results_directory>so_results<", "<results_directory>so_6hz<"))
    ref6 = opensim_static_optimization_setup(filtered, tmp_path / "opensim_6hz")["activation"]
    assert main(["static-optimization", "--setup", str(filtered), "--times", "opensim"]) == 0
    ours6 = read_sto(folder / "so_6hz" / "trial_StaticOptimization_activation.sto")
    assert len(ours6) == len(ref6) and ref6["time"].iloc[0] < 0.105
    assert not np.isin(np.round(ref6["time"], 9), np.round(t60, 9)).all()  # OpenSim's rows are its grid's
    np.testing.assert_allclose(ours6["time"], ref6["time"], atol=1e-9)
    d6 = np.abs(ours6[columns].to_numpy() - ref6[columns].to_numpy()).max()
    with capsys.disabled():
        print(f"[agreement] the same, filtered at 6 Hz, --times opensim: {len(ours6)} rows at OpenSim's times, "
              f"activations {d6:.2e}")
    assert d6 < 5e-5
    # a setting the package cannot reproduce is refused by name
    setup.write_text(setup.read_text().replace("<activation_exponent>2<", "<activation_exponent>3<"))
    assert main(["static-optimization", "--setup", str(setup), "--overwrite"]) == 2
    assert "activation_exponent 3" in capsys.readouterr().err


@pytest.mark.opensim
@pytest.mark.models
def test_model_actuators_as_opensims_use_model_force_set(osim, models_dir, tmp_path, capsys):
    """A model with its own actuators (a CoordinateActuator reserve on the shoulder, a TorqueActuator on the forearm
    against the humerus, added with OpenSim's API): `--model-actuators` shares the forces with them as OpenSim's
    StaticOptimization does with use_model_force_set (its default), compared on the same states file."""
    from osim_emb.opensim.static_optimization import opensim_static_optimization as opensim_so
    reserve = osim.CoordinateActuator("r_shoulder_elev")
    reserve.setOptimalForce(3.0)
    arm = osim.Model(str(models_dir / "arm26.osim"))  # the actuator takes its bodies' names
    bodies = arm.getBodySet()
    torque = osim.TorqueActuator(bodies.get("r_ulna_radius_hand"), bodies.get("r_humerus"), osim.Vec3(0, 0, 1), False)
    torque.setOptimalForce(2.0)
    path = model_with_forces(osim, models_dir / "arm26.osim", {"shoulder_reserve": reserve, "elbow_torque": torque},
                             tmp_path / "arm26_actuated.osim")
    times = np.linspace(0.0, 0.5, 26)
    opensim_static_optimization(osim, models_dir / "arm26.osim", tmp_path / "opensim", times, 1e-8, COEF)
    states = tmp_path / "opensim" / "states.sto"
    ref = opensim_so(path, states, convergence=1e-10, out_dir=tmp_path / "os2")
    prefix = tmp_path / "ours"
    assert main(["static-optimization", str(path), str(states), "-o", str(prefix), "--no-passive",
                 "--model-actuators"]) == 0
    assert "2 actuators of the model" in capsys.readouterr().out
    act = read_sto(f"{prefix}_StaticOptimization_activation.sto")
    columns = [c for c in ref["activation"].columns if c != "time"]
    assert {"shoulder_reserve", "elbow_torque"} <= set(columns) and sorted(columns) == sorted(act.columns[1:])
    d = np.abs(act[columns].to_numpy() - ref["activation"][columns].to_numpy()).max()
    with capsys.disabled():
        print(f"\n[agreement] --model-actuators vs OpenSim's use_model_force_set: {d:.2e} (controls of the model's "
              f"actuators up to {np.abs(act[['shoulder_reserve', 'elbow_torque']].to_numpy()).max():.3f})")
    assert d < 1e-6
    assert np.abs(act[["shoulder_reserve", "elbow_torque"]].to_numpy()).max() > 0.05


@pytest.mark.models
def test_coordinate_actuator_on_a_coupled_coordinate(models_dir):
    """A CoordinateActuator on leg6dof9musc's coupled patella coordinate c = f(q) does the virtual work F δc: its
    generalized forces equal F times central differences of c (not the package's gradient); one on an unknown
    coordinate is refused by name."""
    from osim_emb import load_osim
    from osim_emb.core.dynamics import actuator_generalized_forces
    from osim_emb.io.force_set import Actuator
    model = load_osim(models_dir / "leg6dof9musc.osim")
    patella = model.dependent_coordinate("knee_angle_pat_r")
    q = np.tile(model.default_q, (3, 1))
    q[:, model.coordinate_index("knee_angle_r")] = [-1.2, -0.6, -0.1]
    act = Actuator("pat", "CoordinateActuator", 7.0, -np.inf, np.inf, coordinate="knee_angle_pat_r")
    b = actuator_generalized_forces(model, q, [act])[:, :, 0]
    h = 1e-6
    fd = np.empty_like(b)
    for k in range(model.n_q):
        step = np.zeros(model.n_q)
        step[k] = h
        fd[:, k] = 7.0 * (np.asarray(patella.function.evaluate(q + step, order=0).value)
                          - np.asarray(patella.function.evaluate(q - step, order=0).value)) / (2 * h)
    assert np.abs(b - fd).max() < 1e-7 * max(np.abs(fd).max(), 1.0)
    assert np.abs(b[:, model.coordinate_index("knee_angle_r")]).min() > 1.0  # it acts through the knee
    with pytest.raises(ValueError, match="no coordinate 'ankle'"):
        actuator_generalized_forces(model, q, [Actuator("a", "CoordinateActuator", 1.0, -1, 1, coordinate="ankle")])


@pytest.mark.opensim
@pytest.mark.models
def test_force_elements_are_applied_as_opensims_tool(osim, models_dir, tmp_path, capsys):
    """arm26 with a contact, a point spring, a bushing, a coordinate spring and a prescribed force
    (``opensim_builders.build_arm26_with_force_elements``: the hand pressed into a wall until t ≈ 0.08 s), the
    states file of the first test: the command applies every element in its inverse dynamics, and its activations
    equal OpenSim's StaticOptimization, which applies every force of the model. The same command on arm26 without
    the elements, or without the contact alone, is far from OpenSim's."""
    arm26 = models_dir / "arm26.osim"
    path = build_arm26_with_force_elements(osim, arm26, tmp_path / "arm26_elements.osim")
    build_arm26_with_force_elements(osim, arm26, tmp_path / "arm26_no_contact.osim", contact=False)
    times = np.linspace(0.0, 0.5, 26)
    _, act_os, _ = opensim_static_optimization(osim, path, tmp_path / "opensim", times, 1e-8, COEF)
    states = tmp_path / "opensim" / "states.sto"
    for name, model in (("ours", path), ("bare", arm26), ("no_contact", tmp_path / "arm26_no_contact.osim")):
        assert main(["-v", "static-optimization", str(model), str(states), "-o", str(tmp_path / name),
                     "--no-passive"]) == 0
    err = capsys.readouterr().err
    assert ("static-optimization applies the model's 1 HuntCrossleyContact, 1 PointToPointSpring, 1 Bushing, "
            "1 CoordinateSpring, 1 PrescribedBodyForce") in err
    assert "leaves out" not in err and "does not apply" not in err
    muscles = [c for c in act_os.columns if c != "time"]
    a_os = act_os[muscles].to_numpy()
    diff = {name: np.abs(read_sto(tmp_path / f"{name}_StaticOptimization_activation.sto")[muscles].to_numpy() - a_os)
            for name in ("ours", "bare", "no_contact")}
    contact_frames = int((diff["no_contact"].max(axis=1) > 1e-3).sum())
    print(f"[agreement] static-optimization with contact, bushing, springs, prescribed force vs OpenSim's "
          f"StaticOptimization, arm26: activations {diff['ours'].max():.1e} (the elements' effect "
          f"{diff['bare'].max():.3f}; the contact's alone {diff['no_contact'].max():.3f}, at {contact_frames} frames)")
    assert diff["ours"].max() < 1e-6
    assert diff["bare"].max() > 0.1 and diff["no_contact"].max() > 0.02 and contact_frames >= 4


@pytest.mark.models
def test_disabled_and_excluded_forces_as_opensims_tool(osim, models_dir, tmp_path, capsys):
    """arm26 with force elements, BRA and the contact switched off in the file (``appliesForce`` false): OpenSim's
    StaticOptimization removes BRA from the sharing and applies no contact force. The command on that file, and on
    the file with both on but ``--exclude-forces BRA,palm_wall``, equals OpenSim's tool; the file's BRA used to be
    shared as if it applied force. Unknown names and excluding every muscle are refused, nothing written."""
    arm26 = models_dir / "arm26.osim"
    path = build_arm26_with_force_elements(osim, arm26, tmp_path / "arm26_elements.osim")
    off = with_forces_switched_off(osim, path, tmp_path / "arm26_off.osim", ["BRA", "palm_wall"])
    times = np.linspace(0.0, 0.5, 26)
    _, act_os, _ = opensim_static_optimization(osim, off, tmp_path / "opensim", times, 1e-8, COEF)
    assert "BRA" not in act_os.columns
    states = tmp_path / "opensim" / "states.sto"
    assert main(["static-optimization", str(off), str(states), "-o", str(tmp_path / "off"), "--no-passive"]) == 0
    assert "appliesForce false" in capsys.readouterr().err
    assert main(["-v", "static-optimization", str(path), str(states), "-o", str(tmp_path / "excluded"),
                 "--no-passive", "--exclude-forces", "BRA,palm_wall"]) == 0
    err = capsys.readouterr().err
    assert "leaves out 2 of the model's forces (--exclude-forces): BRA, palm_wall" in err
    assert "HuntCrossleyContact" not in err
    assert main(["static-optimization", str(path), str(states), "-o", str(tmp_path / "all_on"), "--no-passive"]) == 0
    muscles = [c for c in act_os.columns if c != "time"]
    a_os = act_os[muscles].to_numpy()
    diff = {}
    for name in ("off", "excluded", "all_on"):
        act = read_sto(tmp_path / f"{name}_StaticOptimization_activation.sto")
        assert ("BRA" in act.columns) == (name == "all_on")
        diff[name] = np.abs(act[muscles].to_numpy() - a_os).max()
    with capsys.disabled():
        print(f"[agreement] static-optimization with BRA and the contact off (appliesForce false / --exclude-forces) "
              f"vs OpenSim's StaticOptimization: activations {diff['off']:.1e} / {diff['excluded']:.1e} (with both "
              f"on {diff['all_on']:.3f})")
    assert diff["off"] < 1e-6 and diff["excluded"] < 1e-6 and diff["all_on"] > 0.05
    for names, message in (("BRA,strapp", "'strapp' (did you mean 'strap'?) is neither a force of model"),
                           ("Muscles", "no muscles to share the generalized forces (6 with a force model: left out by "
                                        "--exclude-forces)")):
        assert main(["static-optimization", str(path), str(states), "-o", str(tmp_path / "refused"),
                     "--exclude-forces", names]) == 2
        assert message in capsys.readouterr().err
    assert not list(tmp_path.glob("refused*"))


@pytest.mark.parametrize("value, reason", [("nan", "max_isometric_force must be finite, got nan"),
                                           ("-0.1", "optimal_fiber_length must be > 0")])
def test_a_muscle_whose_force_model_was_not_imported_is_refused_not_left_out(models_dir, tmp_path, capsys, value,
                                                                             reason):
    """A value OpenSim refuses (a negative optimal fibre length) or that makes every force NaN keeps the path for
    geometry, but static optimization does not share the forces among the other muscles in silence."""
    import pandas as pd
    from osim_emb.io.motion import write_motion
    source = (models_dir / "arm26.osim").read_text()
    tag = "max_isometric_force" if value == "nan" else "optimal_fiber_length"
    start = source.index("<Thelen2003Muscle name=\"TRIlong\">")
    first = source.index(f"<{tag}>", start)
    bad = tmp_path / "bad.osim"
    bad.write_text(source[:first] + f"<{tag}>{value}</{tag}>" + source[source.index(f"</{tag}>", first)
                                                                    + len(f"</{tag}>"):])
    t = np.linspace(0.0, 0.5, 6)
    motion = tmp_path / "m.mot"
    write_motion(motion, pd.DataFrame({"time": t, **{n: cubic(c, t) for n, c in COEF.items()}}))
    assert main(["static-optimization", str(bad), str(motion), "-o", str(tmp_path / "so")]) == 2
    err = capsys.readouterr().err
    assert f"muscle 'TRIlong': force model not imported (Thelen2003Muscle 'TRIlong': {reason}); the forces cannot " \
           "be shared without it" in err and "--exclude-forces TRIlong" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.osim", "m.mot"]
    assert main(["static-optimization", str(bad), str(motion), "-o", str(tmp_path / "so"), "--exclude-forces",
                 "TRIlong", "--reserves", "100"]) == 0
