"""External loads (OpenSim ExternalLoads files) in the inverse dynamics and static optimization, against OpenSim
4.6's InverseDynamicsTool and StaticOptimization with the same file; the file's refusals."""

from __future__ import annotations

import numpy as np
import pytest

from opensim_builders import T, pendulum_loads, read_sto, write_loads, write_motion_file
from osim_emb.opensim.static_optimization import opensim_inverse_dynamics
from osim_emb.cli.main import main
from osim_emb.io.external_loads import read_external_loads

@pytest.mark.opensim
@pytest.mark.models
def test_inverse_dynamics_with_external_loads_equals_opensims_tool(osim, models_dir, tmp_path, capsys):
    """The double pendulum with a force on rod2 (in ground, at a moving point in ground) and a force and torque on
    rod1 (in rod1's frame, at a point in rod1): `inverse-dynamics --external-loads` against OpenSim's
    InverseDynamicsTool with the same files (its ExternalLoads interpolated by natural cubic splines, as the
    package's), 21 frames; the loads change the moments by several N m."""
    path = models_dir / "double_pendulum.osim"
    loads = pendulum_loads(tmp_path)
    motion = write_motion_file(tmp_path / "motion.mot", ["q1", "q2"], {"q1": (0.3, 1.0, -2.0), "q2": (-0.5, 2.0, 1.5)},
                               T[::2])
    ref = opensim_inverse_dynamics(path, motion, tmp_path / "opensim", external_loads=loads)
    out = tmp_path / "ours.sto"
    assert main(["inverse-dynamics", str(path), str(motion), "-o", str(out), "--external-loads", str(loads)]) == 0
    ours = read_sto(out)
    cols = ["q1_moment", "q2_moment"]
    np.testing.assert_allclose(ours["time"], ref["time"], atol=1e-12)
    d = np.abs(ours[cols].to_numpy() - ref[cols].to_numpy()).max()
    bare = tmp_path / "bare.sto"
    assert main(["inverse-dynamics", str(path), str(motion), "-o", str(bare)]) == 0
    effect = np.abs(read_sto(bare)[cols].to_numpy() - ref[cols].to_numpy()).max()
    print(f"[agreement] inverse dynamics with external loads vs OpenSim's InverseDynamicsTool: {d:.2e} N m "
          f"(the loads' effect {effect:.2f} N m)")
    assert d < 1e-8 and effect > 1.0


@pytest.mark.opensim
@pytest.mark.models
def test_static_optimization_with_a_hand_load_equals_opensims(osim, models_dir, tmp_path):
    """arm26 holding a 15 N load in the hand (a force in ground at a point of the hand): `static-optimization
    --external-loads --no-passive` against OpenSim's StaticOptimization with the same ExternalLoads file."""
    from osim_emb.opensim.static_optimization import opensim_static_optimization
    path = models_dir / "arm26.osim"
    loads = write_loads(tmp_path, [("hand", "r_ulna_radius_hand", "ground", "r_ulna_radius_hand", "hand_v", "hand_p",
                                    "")],
                        {"hand_vx": 0 * T, "hand_vy": -15 + 5 * T, "hand_vz": 0 * T,
                         "hand_px": 0 * T, "hand_py": -0.24 + 0 * T, "hand_pz": 0.06 + 0 * T})
    motion = write_motion_file(tmp_path / "motion.mot", ["r_shoulder_elev", "r_elbow_flex"],
                               {"r_shoulder_elev": (0.2, 0.4, -0.5), "r_elbow_flex": (1.2, -0.5, 1.0)}, T[::2])
    ref = opensim_static_optimization(path, motion, external_loads=loads)
    prefix = tmp_path / "ours"
    assert main(["static-optimization", str(path), str(motion), "-o", str(prefix), "--no-passive",
                 "--external-loads", str(loads)]) == 0
    ours = read_sto(f"{prefix}_StaticOptimization_activation.sto")
    muscles = [c for c in ours.columns if c != "time"]
    d = np.abs(ours[muscles].to_numpy() - ref["activation"][muscles].to_numpy()).max()
    assert main(["static-optimization", str(path), str(motion), "-o", str(tmp_path / "bare"), "--no-passive"]) == 0
    bare = read_sto(f"{tmp_path / 'bare'}_StaticOptimization_activation.sto")
    effect = np.abs(bare[muscles].to_numpy() - ours[muscles].to_numpy()).max()
    print(f"[agreement] static optimization with a hand load vs OpenSim's: activations {d:.2e} (the load's effect "
          f"{effect:.2f})")
    assert d < 1e-5 and effect > 0.05


def test_bad_external_loads_are_refused_by_name(models_dir, tmp_path, capsys):
    """An identifier naming 2 columns, a body the model lacks, a motion longer than the data: each refused naming
    the file and element (exit 2, nothing written)."""
    path = models_dir / "double_pendulum.osim"
    motion = write_motion_file(tmp_path / "motion.mot", ["q1", "q2"], {"q1": (0.3, 1.0, -2.0), "q2": (-0.5, 2.0, 1.5)},
                               T[::2])
    cases = [
        ([("f", "rod2", "ground", "ground", "f_v", "", "")], {"f_vx": T, "f_vy": T}, "identifier 'f_v' names 2"),
        ([("f", "shank", "ground", "ground", "f_v", "", "")], {"f_vx": T, "f_vy": T, "f_vz": T}, "no body 'shank'"),
    ]
    for k, (forces, cols, message) in enumerate(cases):
        folder = tmp_path / f"case{k}"
        folder.mkdir()
        loads = write_loads(folder, forces, cols)
        out = folder / "tau.sto"
        assert main(["inverse-dynamics", str(path), str(motion), "-o", str(out), "--external-loads", str(loads)]) == 2
        assert message in capsys.readouterr().err and not out.exists()
    long = write_motion_file(tmp_path / "long.mot", ["q1", "q2"], {"q1": (0.3, 1.0, -2.0), "q2": (-0.5, 2.0, 1.5)},
                             np.linspace(0.0, 0.5, 11))
    loads = pendulum_loads(tmp_path)
    assert main(["inverse-dynamics", str(path), str(long), "-o", str(tmp_path / "x.sto"), "--external-loads",
                 str(loads)]) == 2
    assert "the data cover t = 0 to 0.4 s" in capsys.readouterr().err


@pytest.mark.opensim
@pytest.mark.models
def test_a_setup_file_runs_as_opensims_tool_runs_it(osim, models_dir, tmp_path, capsys, monkeypatch):
    """`inverse-dynamics --setup id_setup.xml`: the model, coordinates, external loads, low-pass cutoff and time range
    of an InverseDynamicsTool file (paths relative to it) — OpenSim's tool run on the same file gives the same
    moments at the frames in the range (unfiltered: the 6 Hz variant reports at resampled times, see
    test_motion_differentiation).  A setup without a coordinates file is refused naming the element."""
    folder = tmp_path / "pipeline"
    (folder / "ID").mkdir(parents=True)
    loads = pendulum_loads(folder)
    write_motion_file(folder / "motion.mot", ["q1", "q2"], {"q1": (0.3, 1.0, -2.0), "q2": (-0.5, 2.0, 1.5)}, T[::2])
    (folder / "model.osim").write_bytes((models_dir / "double_pendulum.osim").read_bytes())
    setup = folder / "ID" / "setup.xml"
    setup.write_text(f"""<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40000"><InverseDynamicsTool name="id">
<results_directory>Results</results_directory><model_file>../model.osim</model_file>
<time_range> 0.1 0.3</time_range><forces_to_exclude> Muscles</forces_to_exclude>
<external_loads_file>../{loads.name}</external_loads_file><coordinates_file>../motion.mot</coordinates_file>
<lowpass_cutoff_frequency_for_coordinates>-1</lowpass_cutoff_frequency_for_coordinates>
<output_gen_force_file>id.sto</output_gen_force_file></InverseDynamicsTool></OpenSimDocument>""")
    with monkeypatch.context() as m:  # OpenSim resolves the paths from the working folder (opensim-cmd: the file's)
        m.chdir(setup.parent)
        osim.InverseDynamicsTool(str(setup)).run()
    ref = read_sto(folder / "ID" / "Results" / "id.sto")
    out = tmp_path / "ours.sto"
    assert main(["inverse-dynamics", "--setup", str(setup), "-o", str(out)]) == 0
    ours = read_sto(out)
    cols = ["q1_moment", "q2_moment"]
    np.testing.assert_allclose(ours["time"], ref["time"], atol=1e-12)
    assert ours["time"].min() >= 0.1 - 1e-12 and ours["time"].max() <= 0.3 + 1e-12 and len(ours) == 11
    d = np.abs(ours[cols].to_numpy() - ref[cols].to_numpy()).max()
    with capsys.disabled():
        print(f"[agreement] inverse-dynamics --setup vs OpenSim's InverseDynamicsTool on the same setup file: "
              f"{d:.2e} N m")
    assert d < 1e-8
    assert main(["inverse-dynamics", "--setup", str(setup)]) == 2  # its output exists: not overwritten
    assert "already exists" in capsys.readouterr().err
    setup.write_text(setup.read_text().replace("<coordinates_file>../motion.mot</coordinates_file>", ""))
    assert main(["inverse-dynamics", "--setup", str(setup), "-o", str(tmp_path / "x.sto")]) == 2
    assert "sets no coordinates_file" in capsys.readouterr().err


@pytest.mark.opensim
@pytest.mark.models
def test_forward_simulation_with_external_loads_equals_opensims_manager(osim, models_dir, tmp_path, capsys):
    """`simulate --external-loads`: the double pendulum falling from its default pose under the two loads above
    (a ground-frame force at a moving ground point on rod2; a body-frame force and torque on rod1) for 0.4 s,
    against OpenSim's Manager with the same ExternalLoads file added to the model (accuracy 1e-10 both); the loads
    move the pendulum by a tenth of a radian. Data not covering the simulation are refused before integrating."""
    path = models_dir / "double_pendulum.osim"
    loads = pendulum_loads(tmp_path)
    model = osim.Model(str(path))
    external = osim.ExternalLoads(str(loads), True)
    model.addModelComponent(external)
    state = model.initSystem()
    manager = osim.Manager(model)
    manager.setIntegratorAccuracy(1e-10)
    manager.initialize(state)
    times = np.linspace(0.0, 0.4, 41)
    coords = [model.getCoordinateSet().get(n) for n in ("q1", "q2")]
    theirs = {"q1": [coords[0].getValue(state)], "q2": [coords[1].getValue(state)]}
    for t in times[1:]:  # OpenSim integrated to each output time
        reached = manager.integrate(float(t))
        for n, c in zip(("q1", "q2"), coords):
            theirs[n].append(c.getValue(reached))
    out = tmp_path / "ours.sto"
    assert main(["simulate", str(path), "-o", str(out), "--t-end", "0.4", "--samples", "41", "--external-loads",
                 str(loads)]) == 0
    ours = read_sto(out)
    free = tmp_path / "free.sto"
    assert main(["simulate", str(path), "-o", str(free), "--t-end", "0.4", "--samples", "41"]) == 0
    unloaded = read_sto(free)
    np.testing.assert_allclose(ours["time"], times, atol=1e-12)
    d = max(float(np.abs(ours[n] - np.array(theirs[n])).max()) for n in ("q1", "q2"))
    effect = max(float(np.abs(ours[n] - unloaded[n]).max()) for n in ("q1", "q2"))
    with capsys.disabled():
        print(f"\n[agreement] simulate --external-loads vs OpenSim's Manager with ExternalLoads: {d:.2e} rad "
              f"at 41 times (the loads' effect {effect:.3f} rad)")
    assert effect > 0.05
    assert d < 1e-7
    assert main(["simulate", str(path), "-o", str(tmp_path / "long.sto"), "--t-end", "0.5", "--external-loads",
                 str(loads)]) == 2
    assert "the data cover t = 0 to 0.4 s" in capsys.readouterr().err
    assert not (tmp_path / "long.sto").exists()


@pytest.mark.opensim
@pytest.mark.models
def test_muscle_driven_simulation_with_external_loads_equals_opensims(osim, models_dir, tmp_path, capsys):
    """`simulate-muscles --external-loads`: arm26 with BIClong and TRIlong excited and a load pulling the hand
    (a force in ground at a point of the hand) for 0.3 s, against OpenSim's Manager with the same ExternalLoads
    file added to the model (both at accuracy 1e-9 from the same equilibrium). The compiled integrators say why
    they do not take it."""
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import ExcitationSpec
    path = models_dir / "arm26.osim"
    loads = write_loads(tmp_path, [("hand", "r_ulna_radius_hand", "ground", "r_ulna_radius_hand", "hand_v", "hand_p",
                                    "")],
                        {"hand_vx": 20 * T, "hand_vy": -15 + 5 * T, "hand_vz": 0 * T,
                         "hand_px": 0 * T, "hand_py": -0.24 + 0 * T, "hand_pz": 0.06 + 0 * T})
    times = np.linspace(0.0, 0.3, 16)
    excitations = {"BIClong": "0.4", "TRIlong": "step:0.05:0.15:0.1:0.6"}
    ref = opensim_muscle_simulation(str(path), times, {k: ExcitationSpec.parse(v) for k, v in excitations.items()},
                                    accuracy=1e-9, external_loads=str(loads))
    out = tmp_path / "ours.sto"
    args = ["simulate-muscles", str(path), "-o", str(out), "--t-end", "0.3", "--samples", "16", "--rtol", "1e-9",
            "--atol", "1e-11", "--external-loads", str(loads)] + [f"--excitation={k}={v}" for k, v in excitations.items()]
    assert main(args) == 0
    ours = read_sto(out)
    names = ref["names"]
    d = np.abs(ours[names].to_numpy() - ref["q"]).max()
    assert main(args[:2] + ["-o", str(tmp_path / "bare.sto")] + args[4:-2 - len(excitations)]
                + [f"--excitation={k}={v}" for k, v in excitations.items()]) == 0
    effect = np.abs(read_sto(tmp_path / "bare.sto")[names].to_numpy() - ours[names].to_numpy()).max()
    with capsys.disabled():
        print(f"\n[agreement] simulate-muscles --external-loads vs OpenSim's Manager with ExternalLoads: {d:.2e} rad "
              f"(the load's effect {effect:.3f} rad)")
    assert effect > 0.01 and d < 1e-6
    for method in ("RK45-jit", "BDF-jit"):  # the compiled integrators apply the loads too
        assert main(args + ["--method", method, "-o", str(tmp_path / f"{method}.sto")]) == 0
        d = np.abs(read_sto(tmp_path / f"{method}.sto")[names].to_numpy() - ref["q"]).max()
        with capsys.disabled():
            print(f"[agreement] simulate-muscles --external-loads --method {method} vs OpenSim's Manager: {d:.2e} rad")
        assert d < 1e-6


def test_compiled_right_hand_side_applies_external_loads_as_the_numpy_route(models_dir, tmp_path):
    """The compiled muscle-driven right-hand side with loads on two bodies — a force in ground at a point of the
    hand, and a force, point and torque in the humerus's frame at a ground point — equals the system's numpy one
    (core.dynamics.external_load_forces, itself OpenSim's above) at random states and times between samples."""
    from osim_emb.io import load_osim
    from osim_emb.simulation import muscle_driven_jit as jit
    from osim_emb.simulation.muscle_driven import ExcitationSpec, MuscleDrivenSystem
    s = np.sin(7 * T)
    loads = read_external_loads(write_loads(
        tmp_path, [("hand", "r_ulna_radius_hand", "ground", "r_ulna_radius_hand", "hand_v", "hand_p", ""),
                   ("arm", "r_humerus", "r_humerus", "ground", "arm_v", "arm_p", "arm_t")],
        {"hand_vx": 20 * T, "hand_vy": -15 + 5 * T, "hand_vz": 3 * s, "hand_px": 0 * T, "hand_py": -0.24 + 0 * T,
         "hand_pz": 0.06 + 0 * T, "arm_vx": 5 * s, "arm_vy": 2 + T, "arm_vz": -3 * T, "arm_px": 0.1 * s,
         "arm_py": 0.2 + 0 * T, "arm_pz": 0.05 * T, "arm_tx": 0.3 * s, "arm_ty": -0.2 + T, "arm_tz": 0.1 + 0 * T}))
    model = load_osim(str(models_dir / "arm26.osim"))
    system = MuscleDrivenSystem(model, {"BIClong": ExcitationSpec.parse("0.4")}, external_loads=loads)
    plan, why = jit.compiled_plan(system)
    assert plan is not None, why
    bare = MuscleDrivenSystem(model, {"BIClong": ExcitationSpec.parse("0.4")})
    rng = np.random.default_rng(0)
    y0 = system.initial_state()
    for _ in range(20):
        y = y0 + rng.normal(scale=0.1, size=y0.shape) * np.r_[np.ones(2 * system.n_q), np.zeros(2 * system.n_m)]
        t = rng.uniform(T[0], T[-1])
        ours, numpy_route = jit.rhs(system, plan, t, y), system.rhs(t, y)
        assert np.abs(ours - numpy_route).max() <= 1e-12 * np.abs(numpy_route).max()
        assert np.abs(bare.rhs(t, y) - numpy_route).max() > 1e-2  # the loads matter


def test_loads_the_kernel_cannot_place_are_applied_from_python(models_dir, tmp_path, monkeypatch):
    """Where the compiled dynamics cannot place a load's body (CompiledModel.external_loads refuses), the passive
    simulation applies it from Python (external_load_forces) and the muscle-driven plan says why it falls back:
    the same trajectory as the kernel's to 1e-12."""
    from osim_emb.core.compiled import CompiledModel
    from osim_emb.io import load_osim
    from osim_emb.simulation import muscle_driven_jit as jit
    from osim_emb.simulation.motions import simulate
    from osim_emb.simulation.muscle_driven import ExcitationSpec, MuscleDrivenSystem
    model = load_osim(str(models_dir / "double_pendulum.osim"))
    loads = read_external_loads(pendulum_loads(tmp_path))
    kernel = simulate(model, 0.3, rtol=1e-10, atol=1e-10, n_output=7, external_loads=loads)

    def refuse(self, model, loads):
        raise ValueError("ExternalForce 'tip' acts on a body the compiled dynamics leaves out")
    monkeypatch.setattr(CompiledModel, "external_loads", refuse)
    python = simulate(model, 0.3, rtol=1e-10, atol=1e-10, n_output=7, external_loads=loads)
    assert np.abs(kernel.drop(columns="time").to_numpy() - python.drop(columns="time").to_numpy()).max() < 1e-12
    arm = load_osim(str(models_dir / "arm26.osim"))
    (tmp_path / "hand").mkdir()
    hand = read_external_loads(write_loads(tmp_path / "hand", [("hand", "r_ulna_radius_hand", "ground", "ground",
                                                                 "hand_v", "hand_p", "")],
                                           {"hand_vx": 1 + 0 * T, "hand_vy": 0 * T, "hand_vz": 0 * T,
                                            "hand_px": 0 * T, "hand_py": 0 * T, "hand_pz": 0 * T}))
    plan, why = jit.compiled_plan(MuscleDrivenSystem(arm, {"BIClong": ExcitationSpec.parse("0.4")},
                                                     external_loads=hand))
    assert plan is None and "leaves out" in why
