"""Muscle-driven forward simulation (osim_emb.simulation.muscle_driven) against OpenSim 4.6's Manager."""

from __future__ import annotations

import math

import numpy as np
import pytest

from opensim_builders import model_with_forces, with_forces_switched_off
from osim_emb.simulation.muscle_driven import (CoordinateLimitForce, ExcitationSpec, MuscleSimulationError,
                                    thelen_initial_fiber_length)
from osim_emb.muscles import curves as C
from osim_emb.muscles.hill import Thelen2003Muscle
from osim_emb.opensim.muscle_simulation import largest_differences


def test_initial_fiber_length_balances_fiber_and_tendon_forces():
    m = Thelen2003Muscle("m", max_isometric_force=800.0, optimal_fiber_length=0.12, tendon_slack_length=0.15,
                         pennation_angle_at_optimal=0.2, FmaxTendonStrain=0.033, KshapeActive=0.5, Af=0.3, Flen=1.8)
    for a, lmt in [(0.05, 0.27), (0.5, 0.28), (1.0, 0.30)]:
        lf = thelen_initial_fiber_length(m, a, lmt)
        phi = math.asin(m.optimal_fiber_length * math.sin(0.2) / lf)
        ln = lf / m.optimal_fiber_length
        fiber = 800.0 * (a * C.thelen_active_force_length(ln, 0.5) + C.thelen_passive_force_length(ln, 0.6, 5.0))
        tendon = 800.0 * C.thelen_tendon_force_length((lmt - lf * math.cos(phi)) / 0.15, 0.033)
        assert abs(fiber * math.cos(phi) - tendon) < 1e-8 * 800.0


def test_excitation_specs():
    assert ExcitationSpec.parse("0.3")(1.0) == 0.3
    step = ExcitationSpec.parse("step:0.1:0.3:0.1:0.9")
    assert step(0.0) == 0.1 and step(1.0) == 0.9 and step(0.2) == pytest.approx(0.5)
    assert ExcitationSpec.parse("sine:0.2:10:0:0.5")(0.1) == pytest.approx(0.2 * math.sin(1.0) + 0.5)
    for bad in ("ramp:1:2", "step:0.3:0.1:0:1", "sine:1:2", "x"):
        with pytest.raises(MuscleSimulationError):
            ExcitationSpec.parse(bad)


def test_coordinate_limit_force_is_zero_inside_and_a_spring_beyond():
    f = CoordinateLimitForce("lim", 0, upper_stiffness=2.0, upper_limit=30.0, lower_stiffness=3.0, lower_limit=-30.0,
                             damping=0.1, transition=5.0)
    assert f.generalized_force(0.0, 1.0) == 0.0
    q = math.radians(40.0)  # beyond the transition: full stiffness 2 N m/deg
    assert f.generalized_force(q, 0.0) == pytest.approx(-2.0 * 10.0)
    assert f.generalized_force(-q, 0.0) == pytest.approx(3.0 * 10.0)
    assert f.generalized_force(q, 1.0) == pytest.approx(-20.0 - 0.1 * 180 / math.pi)


def _compare(model, path, times, exc, controls=None, rtol=1e-10):
    from osim_emb.simulation.muscle_driven import simulate_muscles
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    ours = simulate_muscles(model, times[-1], exc, controls=controls, t_eval=times, method="DOP853", rtol=rtol,
                            atol=rtol * 1e-2)
    ref = opensim_muscle_simulation(path, times, exc, controls=controls, accuracy=1e-9)
    d = largest_differences(ours, ref)
    return d["q"], d["fiber_length"]


@pytest.mark.slow
def test_arm26_muscle_driven_equals_opensim_manager(osim, models_dir):
    from osim_emb import load_osim
    path = models_dir / "arm26.osim"
    times = np.linspace(0.0, 0.25, 26)
    exc = {"BIClong": ExcitationSpec.parse("step:0.05:0.15:0.02:0.8"), "BRA": ExcitationSpec.parse("0.4"),
           "TRIlong": ExcitationSpec.parse("sine:0.2:20:0:0.3")}
    dq, dl = _compare(load_osim(str(path)), path, times, exc)
    print(f"[agreement] arm26 0.25 s: max|q - q_OpenSim| = {dq:.2e} rad, max|l_f - l_f,OpenSim| = {dl:.2e} m")
    assert dq < 1e-5
    assert dl < 1e-7


def test_coordinate_limit_force_and_actuator_equal_opensim(osim, models_dir, tmp_path):
    from osim_emb import load_osim
    path = model_with_forces(osim, models_dir / "double_pendulum.osim",  # the swing reaches both limits
                             {"q1_limit": osim.CoordinateLimitForce("q1", 0.0, 0.5, -50.0, 0.8, 0.02, 5.0)},
                             tmp_path / "pendulum_limits.osim")
    times = np.linspace(0.0, 0.6, 31)
    controls = {"Torq2": ExcitationSpec.parse("sine:2:8:0:0"), "Torq1": ExcitationSpec.parse("-1.5")}
    model = load_osim(str(path))
    dq, _ = _compare(model, path, times, {}, controls)
    print(f"[agreement] double pendulum with a CoordinateLimitForce, 0.6 s: max|q - q_OpenSim| = {dq:.2e} rad")
    assert dq < 1e-6


MIXED = ("BIClong", "BRA", "TRIlat")  # arm26's muscles made Millard2012 in the mixed-type tests


@pytest.mark.parametrize("name, n_q, n_m, draws, t", [("arm26", 2, 6, 5, 0.2), ("mobl_arms_holzbaur", 7, 50, 3, 0.1),
                                                      ("arm26_mixed", 2, 6, 5, 0.2), ("arm26_rigid", 2, 6, 8, 0.2)],
                         ids=["arm26-thelen", "mobl-schutte", "arm26-thelen-millard", "arm26-millard-rigid-direct"])
def test_compiled_and_numpy_right_hand_sides_agree(models_dir, tmp_path, name, n_q, n_m, draws, t):
    """The compiled muscle loops (Thelen on arm26; Schutte1993 with curves through the compiled SimmSpline on MoBL;
    Thelen and Millard2012 with its Bezier curves compiled in one arm26) against the numpy muscle models, at random
    states around the initial equilibrium."""
    pytest.importorskip("numba")
    from osim_emb import load_osim
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem
    if name == "arm26_mixed":
        _millard_copy(models_dir / "arm26.osim", tmp_path / "mixed.osim", MIXED)
        model = load_osim(str(tmp_path / "mixed.osim"))
    elif name == "arm26_rigid":
        model = load_osim(str(_rigid_and_direct_millard(models_dir, tmp_path)))
    else:
        model = load_osim(str(models_dir / f"{name}.osim"))
    exc = {"BIClong": ExcitationSpec.parse("0.6"), "TRIlong": ExcitationSpec.parse("sine:0.2:20:0:0.3")}
    fast, ref = MuscleDrivenSystem(model, exc), MuscleDrivenSystem(model, exc, compiled=False)
    assert fast.compiled and not ref.compiled
    y0 = ref.initial_state()
    rng = np.random.default_rng(1)
    speed = 0.5 if n_q == 2 else 0.05
    scale = np.r_[speed * np.ones(n_q), (1.0 if n_q == 2 else 0.05) * np.ones(n_q), 0.1 * np.ones(n_m),
                  (0.005 if n_q == 2 else 0.002) * np.ones(n_m)]
    assert scale.size == y0.size
    for _ in range(draws):
        y = y0 + rng.normal(size=y0.size) * scale
        a, b = fast.rhs(t, y), ref.rhs(t, y)
        assert np.allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())


@pytest.mark.slow
def test_compiled_integrator_matches_scipy(models_dir):
    pytest.importorskip("numba")
    from osim_emb import load_osim
    from osim_emb.simulation.muscle_driven import simulate_muscles
    model = load_osim(str(models_dir / "arm26.osim"))
    exc = {"BIClong": ExcitationSpec.parse("step:0.0:0.1:0.05:0.5"), "TRIlong": ExcitationSpec.parse("0.2"),
           "BRA": ExcitationSpec.parse("sine:0.1:10:0:0.2")}
    times = np.linspace(0.0, 0.15, 4)
    ref = simulate_muscles(model, 0.15, exc, t_eval=times, method="DOP853", rtol=1e-11, atol=1e-13)
    jit = simulate_muscles(model, 0.15, exc, t_eval=times, method="RK45-jit", rtol=1e-9, atol=1e-11)
    cols = [c for c in ref.columns if c != "time"]
    err = np.abs(jit[cols].to_numpy() - ref[cols].to_numpy())
    assert err[:, :2].max() < 1e-7  # radians
    assert err[:, -12:-6].max() < 1e-9  # fibre lengths, metres


def test_default_method_is_the_compiled_integrator_where_the_model_allows_it(models_dir, caplog):
    """method="auto" runs RK45-jit on arm26 (same trajectory as SciPy's DOP853 reference) and falls back to
    SciPy's RK45, saying why, when an excitation is a Python function."""
    pytest.importorskip("numba")
    import logging
    from osim_emb import load_osim
    from osim_emb.simulation.muscle_driven import simulate_muscles
    model = load_osim(str(models_dir / "arm26.osim"))
    times = np.linspace(0.0, 0.05, 3)
    exc = {"BIClong": ExcitationSpec.parse("0.4")}
    ref = simulate_muscles(model, 0.05, exc, t_eval=times, method="DOP853", rtol=1e-11, atol=1e-13)
    auto = simulate_muscles(model, 0.05, exc, t_eval=times, rtol=1e-9, atol=1e-11)
    assert auto.attrs["method"] == "RK45-jit"
    assert np.abs(auto[model.coordinate_names].to_numpy() - ref[model.coordinate_names].to_numpy()).max() < 1e-7
    with caplog.at_level(logging.INFO, logger="osim_emb.simulation.muscle_driven"):
        py = simulate_muscles(model, 0.05, {"BIClong": lambda t: 0.4}, t_eval=times, rtol=1e-9, atol=1e-11)
    assert py.attrs["method"] == "RK45"
    assert "a Python function" in caplog.text
    assert np.abs(py[model.coordinate_names].to_numpy() - ref[model.coordinate_names].to_numpy()).max() < 1e-7


def test_muscles_with_a_limit_force_equal_opensim_in_the_compiled_integrator(osim, models_dir, tmp_path):
    pytest.importorskip("numba")
    from osim_emb import load_osim
    from osim_emb.simulation.muscle_driven import simulate_muscles
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    m = osim.Model(str(models_dir / "arm26.osim"))
    clf = osim.CoordinateLimitForce("r_elbow_flex", 20.0, 2.0, 5.0, 2.0, 0.05, 3.0)  # flexes past 20 deg
    clf.setName("elbow_limit")
    m.addForce(clf)
    m.finalizeConnections()
    path = tmp_path / "arm26_limit.osim"
    m.printToXML(str(path))
    model = load_osim(str(path))
    exc = {"BIClong": ExcitationSpec.parse("step:0.0:0.05:0.05:0.6"), "TRIlong": ExcitationSpec.parse("0.1")}
    times = np.linspace(0.0, 0.2, 5)
    ref = opensim_muscle_simulation(path, times, exc, accuracy=1e-9)
    assert np.degrees(ref["q"][:, 1].max()) > 20.0
    for method in ("RK45-jit", "BDF-jit"):
        ours = simulate_muscles(model, 0.2, exc, t_eval=times, method=method, rtol=1e-10, atol=1e-12)
        d = largest_differences(ours, ref)
        print(f"[agreement] arm26 with an elbow CoordinateLimitForce, 0.2 s ({method}): {d['q']:.2e} rad, "
              f"{d['fiber_length']:.2e} m, elbow up to {np.degrees(ref['q'][:, 1].max()):.1f} deg")
        assert d["q"] < 1e-6 and d["fiber_length"] < 1e-7


def _millard_copy(src, dst, names=None):
    """arm26 with its Thelen2003Muscles (or those in ``names``) turned into Millard2012EquilibriumMuscles."""
    from osim_emb.io.muscle_xml import thelen_as_millard
    thelen_as_millard(src, dst, names)


@pytest.mark.slow
def test_millard_muscles_equal_opensim_manager(osim, models_dir, tmp_path):
    from osim_emb import load_osim
    path = tmp_path / "arm26_millard.osim"
    _millard_copy(models_dir / "arm26.osim", path)
    model = load_osim(str(path))
    assert all(type(m.parameters).__name__ == "Millard2012EquilibriumMuscle" for m in model.muscles)
    times = np.linspace(0.0, 0.08, 5)
    exc = {"BIClong": ExcitationSpec.parse("step:0.0:0.05:0.02:0.8"), "TRIlong": ExcitationSpec.parse("0.3")}
    dq, dl = _compare(model, path, times, exc, rtol=1e-9)
    print(f"[agreement] arm26 with Millard2012 muscles, 0.08 s: max|q - q_OpenSim| = {dq:.2e} rad, "
          f"max|l_f - l_f,OpenSim| = {dl:.2e} m")
    assert dq < 1e-6
    assert dl < 1e-7


def test_excitations_outside_zero_one_are_applied_as_opensim_applies_them_and_said(osim, models_dir, tmp_path,
                                                                                   caplog):
    from osim_emb import load_osim
    exc = {"BIClong": ExcitationSpec.parse("1.6"), "TRIlong": ExcitationSpec.parse("sine:0.8:30:0:0.2"),
           "BRA": ExcitationSpec.parse("step:0.0:0.03:0.5:1.4")}
    times = np.linspace(0.0, 0.08, 5)
    millard = tmp_path / "arm26_millard.osim"
    _millard_copy(models_dir / "arm26.osim", millard)
    for path in (models_dir / "arm26.osim", millard):
        with caplog.at_level("WARNING"):
            dq, dl = _compare(load_osim(str(path)), path, times, exc, rtol=1e-9)
        print(f"[agreement] {path.name}, excitations 1.6, -0.6..1, 0.5..1.4: max|q - q_OpenSim| = {dq:.2e} rad, "
              f"max|l_f - l_f,OpenSim| = {dl:.2e} m")
        assert dq < 1e-6
        assert dl < 1e-7
    assert "excitation outside [0, 1]: BIClong 1.6, TRIlong [-0.6, 1], BRA [0.5, 1.4]" in caplog.text
    with pytest.raises(MuscleSimulationError, match="excitation of BIClong: nan is not finite"):
        _compare(load_osim(str(millard)), millard, times, {"BIClong": float("nan")})


def test_mixed_thelen_and_millard_muscles_equal_opensim_in_the_compiled_integrator(osim, models_dir, tmp_path):
    """arm26 with three muscles made Millard2012EquilibriumMuscle (default curves, damping, elastic tendon) beside
    three Thelen2003Muscle, integrated by the compiled integrator, against OpenSim's Manager."""
    pytest.importorskip("numba")
    from osim_emb import load_osim
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, simulate_muscles
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    path = tmp_path / "arm26_mixed.osim"
    _millard_copy(models_dir / "arm26.osim", path, MIXED)
    model = load_osim(str(path))
    kinds = {m.name: type(m.parameters).__name__ for m in model.muscles}
    assert sorted(set(kinds.values())) == ["Millard2012EquilibriumMuscle", "Thelen2003Muscle"]
    exc = {"BIClong": ExcitationSpec.parse("step:0.0:0.05:0.02:0.8"), "TRIlong": ExcitationSpec.parse("0.3"),
           "BRA": ExcitationSpec.parse("sine:0.2:20:0:0.3")}
    assert MuscleDrivenSystem(model, exc).compiled
    times = np.linspace(0.0, 0.1, 6)
    ours = simulate_muscles(model, times[-1], exc, t_eval=times, method="RK45-jit", rtol=1e-10, atol=1e-12)
    ref = opensim_muscle_simulation(path, times, exc, accuracy=1e-9)
    d = largest_differences(ours, ref)
    dq, dl = d["q"], d["fiber_length"]
    print(f"[agreement] arm26, 3 Millard2012 + 3 Thelen2003 muscles, 0.1 s (compiled integrator): "
          f"max|q - q_OpenSim| = {dq:.2e} rad, max|l_f - l_f,OpenSim| = {dl:.2e} m")
    assert np.abs(ref["q"][-1] - ref["q"][0]).max() > 0.05  # it moves
    assert dq < 1e-5
    assert dl < 1e-7


def test_muscle_options_the_simulation_does_not_support_are_refused(models_dir, tmp_path):
    """Millard without damping (compliant tendon); rigid tendon or no activation dynamics on a Thelen muscle."""
    from lxml import etree
    from osim_emb import load_osim
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem
    for kind, tag, text, message in (
            ("Millard2012EquilibriumMuscle", "fiber_damping", "0", "without fibre damping"),
            ("Thelen2003Muscle", "ignore_tendon_compliance", "true", "supported for Millard2012EquilibriumMuscle, "
                                                                     "not Thelen2003Muscle"),
            ("Thelen2003Muscle", "ignore_activation_dynamics", "true", "ignore_activation_dynamics")):
        _millard_copy(models_dir / "arm26.osim", tmp_path / "m.osim", ("BRA",))
        tree = etree.parse(str(tmp_path / "m.osim"))
        el = next(tree.iter(kind))  # the Millard copy of BRA, or the first Thelen muscle
        child = el.find(tag)
        if child is None:
            child = etree.SubElement(el, tag)
        child.text = text
        tree.write(str(tmp_path / "m.osim"))
        with pytest.raises(MuscleSimulationError, match=message) as info:
            MuscleDrivenSystem(load_osim(str(tmp_path / "m.osim")))
        assert el.get("name") in str(info.value)


@pytest.mark.slow
def test_leg_with_a_patella_coupler_equals_opensim_manager(osim, models_dir):
    """leg6dof9musc: floating pelvis under gravity, nine Thelen muscles, the patella coordinate a coupler."""
    from osim_emb import load_osim
    from osim_emb.simulation.muscle_driven import simulate_muscles
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    path = models_dir / "leg6dof9musc.osim"
    model = load_osim(str(path))
    exc = {"vas_int_r": ExcitationSpec.parse("step:0:0.05:0.05:0.6"), "med_gas_r": ExcitationSpec.parse("0.3")}
    times = np.linspace(0.0, 0.06, 4)
    ours = simulate_muscles(model, times[-1], exc, t_eval=times, method="DOP853", rtol=1e-10, atol=1e-12)
    ref = opensim_muscle_simulation(path, times, exc, accuracy=1e-9)
    d = largest_differences(ours, ref)
    dq, dl = d["q"], d["fiber_length"]
    print(f"[agreement] leg6dof9musc 0.06 s: max|q - q_OpenSim| = {dq:.2e}, max|l_f - l_f,OpenSim| = {dl:.2e} m")
    assert dq < 1e-6
    assert dl < 1e-7


def test_simulate_muscles_command_takes_degrees_and_writes_the_api_result(models_dir, tmp_path, capsys):
    """The CLI converts --q0 from degrees and writes what simulate_muscles returns (it crashed on --q0 parsing)."""
    from osim_emb import load_osim
    from osim_emb.cli.main import main
    from osim_emb.io.motion import from_opensim_states, read_motion
    from osim_emb.simulation.muscle_driven import simulate_muscles
    path = models_dir / "arm26.osim"
    out = tmp_path / "arm26.sto"
    assert main(["simulate-muscles", str(path), "-o", str(out), "--excitation", "BIClong=0.5", "--q0",
                 "r_elbow_flex=30", "--qdot0", "r_elbow_flex=10", "--t-end", "0.02", "--samples", "3", "-q"]) == 0
    assert capsys.readouterr().err == ""  # -q: no progress line
    table = from_opensim_states(read_motion(out)[0])  # the file has OpenSim's state labels
    model = load_osim(str(path))
    q0 = np.array(model.default_q, dtype=float)
    q0[model.coordinate_index("r_elbow_flex")] = math.radians(30.0)
    qdot0 = np.zeros(model.n_q)
    qdot0[model.coordinate_index("r_elbow_flex")] = math.radians(10.0)
    ref = simulate_muscles(model, 0.02, {"BIClong": ExcitationSpec.parse("0.5")}, q0=q0, qdot0=qdot0, n_output=3)
    assert table["r_elbow_flex"].iloc[0] == pytest.approx(math.radians(30.0), abs=1e-9)
    assert table["r_elbow_flex_u"].iloc[0] == pytest.approx(math.radians(10.0), abs=1e-9)
    np.testing.assert_allclose(table["r_elbow_flex"].to_numpy(), ref["r_elbow_flex"].to_numpy(), atol=1e-8)
    capsys.readouterr()
    assert main(["simulate-muscles", str(path), "-o", str(tmp_path / "x.sto"), "--q0", "nonexistent=3"]) == 2
    assert "--q0: 'nonexistent' is not a generalized coordinate" in capsys.readouterr().err
    # a coordinate driven out of its range is said, as `simulate` says it (start 120°, range up to 130°)
    assert main(["simulate-muscles", str(path), "-o", str(tmp_path / "out.sto"), "--excitation", "BIClong=1",
                 "--excitation", "BRA=1", "--q0", "r_elbow_flex=120", "--t-end", "0.2", "--samples", "5"]) == 0
    out = read_motion(tmp_path / "out.sto")[0]["/jointset/r_elbow/r_elbow_flex/value"].to_numpy()
    said = "coordinate 'r_elbow_flex' leaves its range [0°, 130°]" in capsys.readouterr().err
    assert said == bool(out.max() > math.radians(130.0)) and said


def test_path_actuators_are_left_out_and_summarized_by_type(models_dir, tmp_path, caplog):
    """Plain path actuators without a control apply no force (as OpenSim's Manager without a controller): left
    out with one short warning by type, not every name; a control for an unknown actuator is refused."""
    import logging
    from lxml import etree
    from osim_emb import load_osim
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem
    tree = etree.parse(str(models_dir / "arm26.osim"))
    for el in list(tree.iter("Thelen2003Muscle")):
        el.tag = "PathActuator"
        for c in list(el):
            if c.tag not in ("GeometryPath", "appliesForce", "min_control", "max_control"):
                el.remove(c)
    tree.write(str(tmp_path / "arm26_path_actuators.osim"))
    model = load_osim(str(tmp_path / "arm26_path_actuators.osim"))
    with caplog.at_level(logging.WARNING):
        system = MuscleDrivenSystem(model)
    assert system.n_m == 0
    msg = caplog.text
    assert "leaves out 6 PathActuator (TRIlong, TRIlat, TRImed, BIClong, BICshort, BRA)" in msg
    assert len(msg) < 350
    assert MuscleDrivenSystem(model, controls={"BRA": 0.5})._path_actuators == (("BRA", 1.0),)  # driven: kept
    with pytest.raises(MuscleSimulationError, match="unknown actuator"):
        MuscleDrivenSystem(model, controls={"BRAX": 0.5})
    for el in tree.iter("PathActuator"):  # a muscle type whose force model the import does not read: refused
        el.tag = "Delp1990Muscle_Deprecated"
    tree.write(str(tmp_path / "arm26_delp_muscles.osim"))
    with pytest.raises(MuscleSimulationError, match=r"has 6 Delp1990Muscle_Deprecated \(TRIlong, TRIlat"):
        MuscleDrivenSystem(load_osim(str(tmp_path / "arm26_delp_muscles.osim"), strict=False))


def _mobl_with(models_dir, tmp_path, keep):
    """MoBL-ARMS with only the Schutte1993 muscles named (its 7 coordinates, 13 couplers, 14 CoordinateLimitForces)."""
    from lxml import etree
    tree = etree.parse(str(models_dir / "mobl_arms_holzbaur.osim"))
    for el in list(tree.iter("Schutte1993Muscle_Deprecated")):
        if el.get("name") not in keep:
            el.getparent().remove(el)
    path = tmp_path / "mobl_few_muscles.osim"
    tree.write(str(path))
    return path


def test_schutte_equilibrium_and_derivatives_against_the_curves():
    """computeIsometricForce's fibre length balances tendon and fibre forces to its 0.01 N; the fibre velocity
    inverts F_v = a f_L f_V(v) + d v (Schutte's forward force-velocity relation, an independent formula)."""
    from osim_emb.core.functions import SimmSpline
    from osim_emb.muscles.hill import SCHUTTE_DEFAULT_CURVES, Schutte1993Muscle, deprecated_pennation
    from osim_emb.simulation.muscle_driven import _SchutteGroup, schutte_initial_fiber_length
    curves = {k: SimmSpline(*v) for k, v in SCHUTTE_DEFAULT_CURVES.items()}
    m = Schutte1993Muscle("m", max_isometric_force=500.0, optimal_fiber_length=0.1, tendon_slack_length=0.2,
                          pennation_angle_at_optimal=0.2, damping=0.05, **curves)
    for a, lmt in [(0.0, 0.30), (0.3, 0.31), (1.0, 0.305)]:
        lf = schutte_initial_fiber_length(m, a, lmt)
        ca = math.cos(deprecated_pennation(lf, 0.1, 0.2))
        ln = lf / 0.1
        fiber = 500.0 * (a * max(float(m.active_force_length(ln)), 0.0) + float(m.passive_force_length(ln))) * ca
        tendon = 500.0 * float(m.tendon_force_length((lmt - lf * ca) / 0.2))
        assert abs(fiber - tendon) <= 0.01
    group = _SchutteGroup([m])
    a, lf, lmt = np.array([0.4]), np.array([0.098]), np.array([0.302])
    force, dlf = group.state_derivatives(lmt, np.zeros(1), a, lf)
    ca = math.cos(deprecated_pennation(0.98, 1.0, 0.2))
    fv_dep = force[0] / 500.0 / ca - float(m.passive_force_length(0.98))
    v = dlf[0] * m.time_scale / 0.1
    assert a[0] * float(m.active_force_length(0.98)) * float(C.schutte_force_velocity(v)) + 0.05 * v == \
        pytest.approx(fv_dep, rel=1e-10)
    assert group.activation_rate(np.array([0.2, 0.6]), np.array([0.5, 0.1])) == pytest.approx(
        [(0.5 - 0.2) * (7.667 * 0.5 + 1.459854) / 0.1, (0.1 - 0.6) * 1.459854 / 0.1])


def test_mobl_schutte_muscles_equal_opensim_manager(osim, models_dir, tmp_path):
    """Schutte1993Muscle_Deprecated as OpenSim 4.6 integrates it, on MoBL-ARMS (couplers, CoordinateLimitForces,
    wrapped paths) with four muscles without moving path points, 0.02 s: the forearm swings 0.4 rad."""
    from osim_emb import load_osim
    path = _mobl_with(models_dir, tmp_path, {"DELT1", "TRIlong", "BRA", "ECRL"})
    model = load_osim(str(path))
    exc = {"BRA": ExcitationSpec.parse("step:0:0.01:0.0:0.8"), "TRIlong": ExcitationSpec.parse("0.2"),
           "DELT1": ExcitationSpec.parse("sine:0.2:20:0:0.3")}
    times = np.linspace(0.0, 0.02, 5)
    from osim_emb.simulation.muscle_driven import simulate_muscles
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    ours = simulate_muscles(model, times[-1], exc, t_eval=times, method="DOP853", rtol=1e-9, atol=1e-11)
    ref = opensim_muscle_simulation(path, times, exc, accuracy=1e-9)
    dq, dl, da = largest_differences(ours, ref).values()
    print(f"[agreement] MoBL, 4 Schutte1993 muscles, 0.02 s: max|q - q_OpenSim| = {dq:.2e} rad, "
          f"max|l_f - l_f,OpenSim| = {dl:.2e} m, activations {da:.1e}")
    assert np.abs(ref["q"][-1] - ref["q"][0]).max() > 0.1  # it moves
    assert dq < 1e-6
    assert dl < 1e-8
    assert da < 1e-9


@pytest.mark.slow
def test_compiled_integrator_with_conditional_path_points_matches_scipy(models_dir):
    """leg6dof9musc's conditional path points (linear conditions) evaluated inside the compiled integrator."""
    pytest.importorskip("numba")
    from osim_emb import load_osim
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, simulate_muscles
    from osim_emb.simulation.muscle_driven_jit import compiled_plan
    model = load_osim(str(models_dir / "leg6dof9musc.osim"))
    exc = {"vas_int_r": ExcitationSpec.parse("step:0:0.05:0.05:0.6"), "med_gas_r": ExcitationSpec.parse("0.3")}
    system = MuscleDrivenSystem(model, exc)
    assert system._paths.plan.conditional and compiled_plan(system)[0] is not None
    times = np.linspace(0.0, 0.06, 4)
    ref = simulate_muscles(model, 0.06, exc, t_eval=times, method="DOP853", rtol=1e-11, atol=1e-13)
    jit = simulate_muscles(model, 0.06, exc, t_eval=times, method="RK45-jit", rtol=1e-9, atol=1e-11)
    assert np.abs(jit[model.coordinate_names].to_numpy() - ref[model.coordinate_names].to_numpy()).max() < 1e-7
    dl = jit.filter(like="_fiber_length").to_numpy() - ref.filter(like="_fiber_length").to_numpy()
    assert np.abs(dl).max() < 1e-8


def test_millard_copy_never_overwrites_its_source(tmp_path):
    from osim_emb.io.muscle_xml import thelen_as_millard
    src = tmp_path / "m.osim"
    text = "<OpenSimDocument Version='40000'><Model><Thelen2003Muscle name='a'/></Model></OpenSimDocument>"
    src.write_text(text)
    with pytest.raises(ValueError, match="must not overwrite its source"):
        thelen_as_millard(src, tmp_path / "." / "m.osim")
    assert src.read_text() == text
    thelen_as_millard(src, tmp_path / "n.osim", names=("a",))
    assert "Millard2012EquilibriumMuscle" in (tmp_path / "n.osim").read_text()


def test_opensim_manager_counts_are_reported(osim, models_dir):
    """One-shot OpenSim runs return the Manager's own counts (read from its log), and the log level is restored."""
    from osim_emb.opensim.bridge import require_opensim
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    level = require_opensim().Logger.getLevelString()  # the package's level for OpenSim ("error")
    r = opensim_muscle_simulation(models_dir / "arm26.osim", np.linspace(0.0, 0.02, 3),
                                  {"BIClong": ExcitationSpec.parse("0.5")}, accuracy=1e-5, one_shot=True)
    assert 0 < r["steps_taken"] <= r["steps_attempted"] < r["realizations"]
    assert osim.Logger.getLevelString() == level


def _rigid_and_direct_millard(models_dir, tmp_path):
    """arm26 with Millard2012 muscles, BIClong with a rigid tendon, BRA rigid without activation dynamics, TRIlong
    without activation dynamics."""
    from lxml import etree
    from osim_emb.io.muscle_xml import thelen_as_millard
    path = tmp_path / "arm26_millard_rigid.osim"
    thelen_as_millard(models_dir / "arm26.osim", path)
    tree = etree.parse(str(path))
    flags = {"BIClong": (True, False), "BRA": (True, True), "TRIlong": (False, True)}  # (rigid, no act. dynamics)
    for el in tree.iter("Millard2012EquilibriumMuscle"):
        if el.get("name") in flags:
            for tag, value in zip(("ignore_tendon_compliance", "ignore_activation_dynamics"), flags[el.get("name")]):
                old = el.find(tag)
                if old is not None:
                    el.remove(old)
                etree.SubElement(el, tag).text = "true" if value else "false"
    tree.write(str(path))
    return path


def test_millard_rigid_tendon_and_no_activation_dynamics_equal_opensim_manager(osim, models_dir, tmp_path):
    """Millard2012EquilibriumMuscles with ignore_tendon_compliance and/or ignore_activation_dynamics (as Moco's
    models set them) beside ordinary ones, on arm26, against OpenSim's Manager over 0.1 s: coordinates, the fibre
    lengths OpenSim reports (the path's, for a rigid tendon) and the activations (the excitation, without
    activation dynamics)."""
    from osim_emb import load_osim
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import simulate_muscles
    path = _rigid_and_direct_millard(models_dir, tmp_path)
    model = load_osim(str(path))
    times = np.linspace(0.0, 0.1, 6)
    exc = {"BIClong": ExcitationSpec.parse("step:0.0:0.05:0.1:0.6"), "BRA": ExcitationSpec.parse("sine:0.2:30:0:0.4"),
           "TRIlong": ExcitationSpec.parse("0.3"), "TRIlat": ExcitationSpec.parse("0.2")}
    ours = simulate_muscles(model, times[-1], exc, t_eval=times, rtol=1e-10, atol=1e-12)
    assert ours.attrs["method"] == "RK45-jit"  # the compiled loops: millard_rigid_kernel, the activation flag
    ref = opensim_muscle_simulation(path, times, exc, accuracy=1e-9)
    dq, dl, da = largest_differences(ours, ref).values()
    print(f"[agreement] arm26, rigid / activation-free Millard, 0.1 s: {dq:.2e} rad, {dl:.2e} m, activation {da:.2e}")
    assert dq < 1e-6
    assert dl < 1e-7
    assert da < 1e-7
    scipy = simulate_muscles(model, times[-1], exc, t_eval=times, method="DOP853", rtol=1e-10, atol=1e-12,
                             compiled=False)  # the numpy muscle models
    assert np.abs(scipy[model.coordinate_names].to_numpy() - ours[model.coordinate_names].to_numpy()).max() < 1e-8


def test_a_massless_forearm_is_refused_by_name_in_both_integrators(models_dir, tmp_path):
    """arm26 with a forearm of neither mass nor inertia: the compiled integrator and SciPy's route both raise the
    SingularMassMatrixError naming the elbow (not numpy's bare 'Singular matrix'); BDF-jit too."""
    from lxml import etree
    from osim_emb import load_osim
    from osim_emb.core.compiled import SingularMassMatrixError
    from osim_emb.simulation.muscle_driven import simulate_muscles
    tree = etree.parse(str(models_dir / "arm26.osim"))
    body = next(b for b in tree.iter("Body") if b.get("name") == "r_ulna_radius_hand")
    body.find("mass").text = "0"
    body.find("inertia").text = "0 0 0 0 0 0"
    tree.write(str(tmp_path / "arm26_massless_forearm.osim"))
    model = load_osim(str(tmp_path / "arm26_massless_forearm.osim"))
    for method in ("auto", "BDF-jit", "RK45"):
        with pytest.raises(SingularMassMatrixError, match="r_elbow_flex move no mass"):
            simulate_muscles(model, 0.01, {"BIClong": ExcitationSpec.parse("0.5")}, method=method)


def test_path_actuators_driven_by_controls_equal_opensim_manager(osim, models_dir, tmp_path):
    """arm26's six paths as PathActuators (optimal force 300 N), three of them driven by controls (a constant, a
    step, a sine), the others left out, 0.1 s against OpenSim's Manager with the same controls."""
    from lxml import etree
    from osim_emb import load_osim
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import simulate_muscles
    tree = etree.parse(str(models_dir / "arm26.osim"))
    for el in list(tree.iter("Thelen2003Muscle")):
        el.tag = "PathActuator"
        for c in list(el):
            if c.tag not in ("GeometryPath", "appliesForce"):
                el.remove(c)
        etree.SubElement(el, "optimal_force").text = "300"
    path = tmp_path / "arm26_path_actuators.osim"
    tree.write(str(path))
    model = load_osim(str(path))
    controls = {"BIClong": ExcitationSpec.parse("0.5"), "TRIlong": ExcitationSpec.parse("step:0.02:0.06:0:0.8"),
                "BRA": ExcitationSpec.parse("sine:0.3:30:0:0.2")}
    times = np.linspace(0.0, 0.1, 6)
    ref = opensim_muscle_simulation(path, times, {}, controls=controls, accuracy=1e-9)
    for method in ("auto", "RK45"):  # the compiled integrator (no muscles, three path forces), SciPy's
        ours = simulate_muscles(model, times[-1], {}, controls=controls, t_eval=times, rtol=1e-10, atol=1e-12,
                                method=method, compiled=method == "auto")
        assert ours.attrs["method"] == ("RK45-jit" if method == "auto" else "RK45")
        assert np.ptp(ours["r_elbow_flex"]) > 0.05  # the elbow moves
        dq = largest_differences(ours, ref)["q"]
        print(f"[agreement] arm26 PathActuators driven by controls, 0.1 s ({ours.attrs['method']}): {dq:.2e} rad")
        assert dq < 1e-7


def test_the_models_own_controllers_are_said_not_applied(models_dir, tmp_path, caplog):
    """A file's ControllerSet is not applied by the package's simulations: an enabled controller is named in a
    warning, a disabled one is not."""
    import logging
    from lxml import etree
    from osim_emb import load_osim
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem
    for disabled, said in (("false", True), ("true", False)):
        tree = etree.parse(str(models_dir / "arm26.osim"))
        model_el = tree.getroot().find("Model")
        objects = model_el.find("ControllerSet").find("objects")  # arm26's empty set
        pc = etree.SubElement(objects, "PrescribedController", name="drive_biceps")
        etree.SubElement(pc, "isDisabled").text = disabled
        tree.write(str(tmp_path / "arm26_controller.osim"))
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            MuscleDrivenSystem(load_osim(str(tmp_path / "arm26_controller.osim")))
        assert ("does not apply the model's controllers (drive_biceps (PrescribedController))" in caplog.text) == said


def test_path_springs_and_ligaments_equal_opensim_manager(osim, models_dir, tmp_path, caplog):
    """A PathSpring (stiffness, dissipation) and a Ligament (OpenSim's default force-length curve) along copies of
    BRA's path on arm26, stretched at the start, beside the six Thelen muscles: 0.1 s against OpenSim's Manager."""
    import copy
    from lxml import etree
    from osim_emb import load_osim
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import simulate_muscles
    tree = etree.parse(str(models_dir / "arm26.osim"))
    bra = next(e for e in tree.iter("Thelen2003Muscle") if e.get("name") == "BRA")
    objects = bra.getparent()
    for tag, props in (("PathSpring", {"resting_length": "0.14", "stiffness": "2000", "dissipation": "0.5"}),
                       ("Ligament", {"resting_length": "0.135", "pcsa_force": "300"})):
        el = etree.SubElement(objects, tag, name=f"bra_{tag.lower()}")
        el.append(copy.deepcopy(bra.find("GeometryPath")))
        for k, v in props.items():
            etree.SubElement(el, k).text = v
    path = tmp_path / "arm26_passive.osim"
    tree.write(str(path))
    import logging
    with caplog.at_level(logging.WARNING):
        model = load_osim(str(path))
    assert "imported as paths only" not in caplog.text  # their tension laws are read, not a muscle model
    exc = {"BIClong": ExcitationSpec.parse("step:0.0:0.05:0.05:0.6"), "TRIlong": ExcitationSpec.parse("0.2")}
    times = np.linspace(0.0, 0.1, 6)
    ref = opensim_muscle_simulation(path, times, exc, accuracy=1e-9)
    without = simulate_muscles(load_osim(str(models_dir / "arm26.osim")), times[-1], exc, t_eval=times,
                               method="DOP853", rtol=1e-10, atol=1e-12)
    # SciPy's DOP853 on the Python path forces (compiled=False: the numpy route), the compiled integrators
    for method, compiled in (("DOP853", False), ("RK45-jit", True), ("BDF-jit", True)):
        ours = simulate_muscles(model, times[-1], exc, t_eval=times, method=method, rtol=1e-10, atol=1e-12,
                                compiled=compiled)
        q = ours[model.coordinate_names].to_numpy()
        dq = largest_differences(ours, ref)["q"]
        print(f"[agreement] arm26 with a PathSpring and a Ligament, 0.1 s ({method}): {dq:.2e} rad "
              f"(they move the elbow by {np.abs(q - without[model.coordinate_names].to_numpy()).max():.2e} rad)")
        assert np.abs(q - without[model.coordinate_names].to_numpy()).max() > 1e-3  # the springs matter
        assert dq < 1e-7


def test_default_speeds_of_the_file_start_the_simulation_as_in_opensim(osim, models_dir, tmp_path):
    """A file's default_speed_value is part of OpenSim's default state: simulate_muscles (and simulate) start
    from it unless qdot0 is given; against OpenSim's Manager over 0.02 s."""
    from lxml import etree
    from osim_emb import load_osim, simulate
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import simulate_muscles
    tree = etree.parse(str(models_dir / "arm26.osim"))
    for c in tree.iter("Coordinate"):
        el = c.find("default_speed_value")
        if el is None:
            el = etree.SubElement(c, "default_speed_value")
        el.text = {"r_shoulder_elev": "0.7", "r_elbow_flex": "-1.5"}[c.get("name")]
    path = tmp_path / "arm26_moving.osim"
    tree.write(str(path))
    model = load_osim(str(path))
    assert np.array_equal(model.default_qdot, [0.7, -1.5])
    times = np.linspace(0.0, 0.02, 3)
    exc = {"BIClong": ExcitationSpec.parse("0.3")}
    ours = simulate_muscles(model, times[-1], exc, t_eval=times, method="DOP853", rtol=1e-10, atol=1e-12)
    assert np.allclose(ours[[f"{n}_u" for n in model.coordinate_names]].to_numpy()[0], [0.7, -1.5])
    ref = opensim_muscle_simulation(path, times, exc, accuracy=1e-9)
    d = largest_differences(ours, ref)
    assert d["q"] < 1e-8
    assert d["fiber_length"] < 1e-9  # OpenSim's equilibrium at those speeds too
    passive = simulate(model, 1e-3, n_output=2)
    assert np.allclose(passive[[f"{n}_u" for n in model.coordinate_names]].to_numpy()[0], [0.7, -1.5])


def test_coordinate_actuators_on_locked_coordinates_are_left_out_with_a_warning(models_dir, tmp_path, caplog):
    """arm26 with the elbow locked and a CoordinateActuator on it (as Rajagopal2016's arm actuators on its locked
    wrists): the actuator cannot move the model and is left out, said so, instead of refusing the model."""
    import logging
    from lxml import etree
    from osim_emb import load_osim
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem
    tree = etree.parse(str(models_dir / "arm26.osim"))
    for c in tree.iter("Coordinate"):
        if c.get("name") == "r_elbow_flex":
            c.find("locked").text = "true"
    objects = next(tree.iter("Thelen2003Muscle")).getparent()
    act = etree.SubElement(objects, "CoordinateActuator", name="elbow_motor")
    etree.SubElement(act, "coordinate").text = "r_elbow_flex"
    etree.SubElement(act, "optimal_force").text = "50"
    tree.write(str(tmp_path / "arm26_locked_elbow.osim"))
    with caplog.at_level(logging.WARNING):
        system = MuscleDrivenSystem(load_osim(str(tmp_path / "arm26_locked_elbow.osim")))
    assert system.actuators == ()
    assert "1 force(s) on locked coordinates are left out, as in OpenSim the lock takes their force: " \
        "CoordinateActuator 'elbow_motor' (r_elbow_flex)" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # said once a model
        MuscleDrivenSystem(system.model)
    assert "locked coordinates" not in caplog.text


def test_largest_differences_match_coordinates_and_muscles_by_name():
    """OpenSim's coordinate and muscle orders may differ from the model's: the differences are taken by name, over
    the muscles both have, and refused when the instants do not correspond."""
    import pandas as pd
    table = pd.DataFrame({"time": [0.0, 1.0], "a": [0.0, 1.0], "b": [2.0, 3.0], "m1_fiber_length": [0.1, 0.2],
                          "m1_activation": [0.5, 0.5], "m2_fiber_length": [0.3, 0.3], "m2_activation": [0.1, 0.1]})
    ref = {"names": ["b", "a"], "q": np.array([[2.0, 0.0], [3.0, 1.5]]), "muscles": ["m2", "m1", "m3"],
           "fiber_length": np.array([[0.3, 0.1, 9.0], [0.3, 0.25, 9.0]]),
           "activation": np.array([[0.1, 0.5, 9.0], [0.1, 0.4, 9.0]])}
    d = largest_differences(table, ref)
    assert d == pytest.approx({"q": 0.5, "fiber_length": 0.05, "activation": 0.1})
    with pytest.raises(ValueError, match="instants"):
        largest_differences(table.iloc[:1], ref)


def test_opensim_reference_without_the_files_own_controllers(osim, models_dir, tmp_path):
    """A file whose PrescribedController drives BIClong: OpenSim's Manager applies it, the package does not (and
    says so); with own_controllers=False the reference integrates the package's inputs and the two agree."""
    from osim_emb import load_osim
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import simulate_muscles
    m = osim.Model(str(models_dir / "arm26.osim"))
    ctrl = osim.PrescribedController()
    ctrl.setName("drive_biceps")
    ctrl.addActuator(m.getMuscles().get("BIClong"))
    ctrl.prescribeControlForActuator("BIClong", osim.Constant(0.8))
    m.addController(ctrl)
    m.finalizeConnections()
    path = tmp_path / "arm26_own_controller.osim"
    m.printToXML(str(path))
    model = load_osim(str(path))
    times = np.linspace(0.0, 0.05, 3)
    exc = {"TRIlong": ExcitationSpec.parse("0.2")}
    ours = simulate_muscles(model, times[-1], exc, t_eval=times, method="DOP853", rtol=1e-10, atol=1e-12)
    with_own = largest_differences(ours, opensim_muscle_simulation(path, times, exc, accuracy=1e-9))
    without = largest_differences(ours, opensim_muscle_simulation(path, times, exc, accuracy=1e-9,
                                                                  own_controllers=False))
    assert with_own["activation"] > 0.1  # OpenSim's controller raised BIClong's activation
    assert without["q"] < 1e-8 and without["activation"] < 1e-8


def test_a_ligament_without_a_resting_length_is_refused_by_name(models_dir, tmp_path):
    """The Ligament's curve takes L / resting length: a zero resting length is refused, naming file and element."""
    import copy
    from lxml import etree
    from osim_emb import load_osim
    from osim_emb.io.errors import OsimImportError
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem
    tree = etree.parse(str(models_dir / "arm26.osim"))
    bra = next(e for e in tree.iter("Thelen2003Muscle") if e.get("name") == "BRA")
    lig = etree.SubElement(bra.getparent(), "Ligament", name="bad_ligament")
    lig.append(copy.deepcopy(bra.find("GeometryPath")))
    etree.SubElement(lig, "pcsa_force").text = "300"
    tree.write(str(tmp_path / "arm26_bad_ligament.osim"))
    with pytest.raises(OsimImportError, match=r"arm26_bad_ligament.osim.*Ligament 'bad_ligament': resting_length"):
        MuscleDrivenSystem(load_osim(str(tmp_path / "arm26_bad_ligament.osim")))


def _rigid_tendon_arm26(models_dir, tmp_path):
    """arm26 with its six muscles made RigidTendonMuscles (their F_max, l_opt, l_TS, v_max kept): BRA pennate
    (0.3 rad, the fibre-width branch), BIClong with its own force-velocity curve in the file (a
    PiecewiseLinearFunction), the others on OpenSim's default curves."""
    from lxml import etree
    tree = etree.parse(str(models_dir / "arm26.osim"))
    keep = ("GeometryPath", "appliesForce", "max_isometric_force", "optimal_fiber_length", "tendon_slack_length",
            "pennation_angle_at_optimal", "max_contraction_velocity")
    for el in list(tree.iter("Thelen2003Muscle")):
        el.tag = "RigidTendonMuscle"
        for c in list(el):
            if c.tag not in keep:
                el.remove(c)
        if el.get("name") == "BRA":
            el.find("pennation_angle_at_optimal").text = "0.3"
        if el.get("name") == "BIClong":
            fv = etree.SubElement(etree.SubElement(el, "force_velocity_curve"), "PiecewiseLinearFunction")
            etree.SubElement(fv, "x").text = "-1 -0.5 0 0.5 1"
            etree.SubElement(fv, "y").text = "0 0.2 1 1.4 1.6"
    path = tmp_path / "arm26_rigid_tendon.osim"
    tree.write(str(path))
    return path


def test_rigid_tendon_muscle_follows_opensims_definition(osim, models_dir, tmp_path):
    """RigidTendonMuscle's fibre length, pennation, force-length-velocity multipliers and tendon force equal
    OpenSim's getters at random poses, speeds and controls of arm26 (OpenSim's own evaluation of the file)."""
    from osim_emb import load_osim
    from osim_emb.muscles.hill import RigidTendonMuscle
    from osim_emb.paths.geometry import lengths_and_moment_arms
    path = _rigid_tendon_arm26(models_dir, tmp_path)
    model = load_osim(str(path))
    assert all(isinstance(m.parameters, RigidTendonMuscle) for m in model.muscles)
    om = osim.Model(str(path))
    ctrl = osim.PrescribedController()
    names = [m.name for m in model.muscles]
    acts = om.getActuators()
    rng = np.random.default_rng(7)
    u = rng.uniform(0.05, 1.0, len(names))
    for i in range(acts.getSize()):
        ctrl.addActuator(acts.get(i))
        ctrl.prescribeControlForActuator(acts.get(i).getName(), osim.Constant(float(u[names.index(acts.get(i).getName())])))
    om.addController(ctrl)
    state = om.initSystem()
    cs = om.getCoordinateSet()
    worst = {}
    for _ in range(6):
        q = np.array([rng.uniform(-0.5, 1.0), rng.uniform(0.2, 2.2)])
        qd = rng.uniform(-3.0, 3.0, 2)
        for k, c in enumerate(model.coordinate_names):
            cs.get(c).setValue(state, float(q[k]), False)
            cs.get(c).setSpeedValue(state, float(qd[k]))
        om.assemble(state)
        om.realizeDynamics(state)
        length, r = lengths_and_moment_arms(model, q[None], names)
        speed = -(r[0].T @ qd)
        for k, m in enumerate(model.muscles):
            om_m = osim.Muscle.safeDownCast(om.getMuscles().get(m.name))
            ours = m.parameters.rigid_tendon(length[0, k], speed[k])
            pairs = {"fiber_length": (float(ours.fiber_length), om_m.getFiberLength(state)),
                     "cos_pennation": (float(ours.cos_pennation), math.cos(om_m.getPennationAngle(state))),
                     "fiber_velocity": (float(ours.fiber_velocity), om_m.getFiberVelocity(state)),
                     "force_velocity": (float(ours.force_velocity), om_m.getForceVelocityMultiplier(state)),
                     "active_force_length": (float(ours.active_force_length),
                                             om_m.getActiveForceLengthMultiplier(state)),
                     "tendon_force": (float(m.parameters.tendon_force(u[k], length[0, k], speed[k])),
                                      om_m.getTendonForce(state))}
            for what, (a, b) in pairs.items():
                worst[what] = max(worst.get(what, 0.0), abs(a - b) / max(1.0, abs(b)))
    print(f"[agreement] RigidTendonMuscle against OpenSim's getters (largest relative): {worst}")
    assert max(worst.values()) < 1e-9


def test_rigid_tendon_muscles_equal_opensim_manager(osim, models_dir, tmp_path):
    """arm26 driven by six RigidTendonMuscles (a constant, a step and a sine excitation; the others 0), 0.08 s
    against OpenSim's Manager, in the compiled integrators and SciPy's: coordinates, and the fibre lengths and
    activations the table reports for the stateless muscles.  (Near 0.09 s a short path transient splits the
    trajectories by tolerance: OpenSim at accuracy 1e-8 and RK45 at 1e-10 take one branch, OpenSim at 1e-10 or
    1e-12 and DOP853 at 1e-12 the other, so the comparison stops before it.)"""
    from osim_emb import load_osim
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, simulate_muscles
    path = _rigid_tendon_arm26(models_dir, tmp_path)
    model = load_osim(str(path))
    exc = {"BIClong": ExcitationSpec.parse("0.6"), "TRIlong": ExcitationSpec.parse("step:0.05:0.12:0.1:0.7"),
           "BRA": ExcitationSpec.parse("sine:0.3:20:0:0.4")}
    system = MuscleDrivenSystem(model, exc)
    assert system.n_m == 0 and len(system.rigid_tendon_muscles) == 6
    times = np.linspace(0.0, 0.08, 5)
    ref = opensim_muscle_simulation(path, times, exc, accuracy=1e-10)
    for method in ("RK45-jit", "BDF-jit", "RK45"):
        ours = simulate_muscles(model, times[-1], exc, t_eval=times, rtol=1e-10, atol=1e-12, method=method,
                                compiled=method != "RK45")
        assert ours.attrs["method"] == method
        assert np.ptp(ours["r_elbow_flex"]) > 0.05  # the elbow moves
        assert {"BRA_fiber_length", "BRA_activation", "BRA_tendon_force"} <= set(ours.columns)
        d = largest_differences(ours, ref)
        print(f"[agreement] arm26 RigidTendonMuscles, 0.08 s ({method}): {d}")
        assert d["q"] < 1e-7 and d["fiber_length"] < 1e-8 and d["activation"] < 1e-12
    with pytest.raises(MuscleSimulationError, match="unknown muscle"):
        MuscleDrivenSystem(model, {"BRAX": 0.5})


def test_rigid_tendon_muscle_tension_by_hand_and_its_json_round_trip():
    """F = F_max (u f_L f_V + clamp(f_PE, 0, 10)) cos(phi) with piecewise-linear curves computed by np.interp
    (the fibre width sqrt((L - L_TS)^2 + w^2), w = l_opt sin(phi_opt)); the description survives model JSON."""
    from osim_emb.core.functions import PiecewiseLinear
    from osim_emb.muscles.hill import RigidTendonMuscle, muscle_from_dict
    xs = np.array([0.0, 0.5, 1.0, 1.5, 2.0])
    fl, fp, fv = np.array([0.0, 0.3, 1.0, 0.4, 0.0]), np.array([0.0, 0.0, 0.0, 4.0, 20.0]), np.array([0.0, 0.5, 1.0, 1.5, 1.8])
    m = RigidTendonMuscle("m", max_isometric_force=400.0, optimal_fiber_length=0.1, tendon_slack_length=0.2,
                          pennation_angle_at_optimal=0.25, max_contraction_velocity=5.0,
                          active_force_length_curve=PiecewiseLinear(xs, fl), passive_force_length_curve=PiecewiseLinear(xs, fp),
                          force_velocity_curve=PiecewiseLinear(xs - 1.0, fv))
    w = 0.1 * math.sin(0.25)
    for u, lmt, v in [(0.3, 0.29, 0.0), (0.8, 0.31, -0.2), (1.0, 0.36, 0.3), (0.5, 0.19, 0.1)]:
        along = max(lmt - 0.2, 0.0)
        lf = math.hypot(along, w)
        ln, vn = lf / 0.1, v / (0.1 * 5.0)
        expected = 400.0 * (u * np.interp(ln, xs, fl) * np.interp(vn, xs - 1.0, fv)
                            + min(max(np.interp(ln, xs, fp), 0.0), 10.0)) * along / lf
        assert float(m.tendon_force(u, lmt, v)) == pytest.approx(expected, rel=1e-12, abs=1e-12)
    again = muscle_from_dict(m.to_dict())
    assert isinstance(again, RigidTendonMuscle)
    assert float(again.tendon_force(0.7, 0.33, -0.1)) == float(m.tendon_force(0.7, 0.33, -0.1))


def _assert_compiled_rhs_and_length_agree(fast, ref, plan, reference, muscle: str, y) -> None:
    """At state y: the compiled right-hand side (``fast``'s plan) equals the numpy route's (``ref``) to 1e-12, and
    ``muscle``'s path length OpenSim's (``reference``, an OpenSimReference of the same file) to 1e-12 m."""
    from osim_emb.simulation import muscle_driven_jit as jit
    n_q = ref.n_q
    a, b = jit.rhs(fast, plan, 0.01, y), ref.rhs(0.01, y)
    assert np.allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(b).max())
    reference.set_configuration(y[:n_q], names=ref.model.coordinate_names, check=None)
    length, _ = fast.path_lengths(y[:n_q])
    assert length[ref.muscle_names.index(muscle)] == pytest.approx(reference.muscle_length(muscle), abs=1e-12)


def test_conditional_points_on_a_coupled_coordinate_in_the_compiled_integrator(osim, models_dir, tmp_path):
    """A ConditionalPathPoint whose coordinate is a coupled coordinate (a curve of a generalized coordinate, as in
    OpenSim's WristModel): BRA's two conditional points on MoBL made conditional on wrist_hand_r1 (a 3-knot
    SimmSpline of deviation), range [-0.3, 0.1].  The compiled plan takes it; its right-hand side equals the numpy
    route's on both sides of the threshold, its path lengths OpenSim's, and a run from a deviation just below
    the threshold matches OpenSim's Manager."""
    pytest.importorskip("numba")
    from lxml import etree
    from osim_emb import load_osim
    from osim_emb.opensim.bridge import OpenSimReference
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation import muscle_driven_jit as jit
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, simulate_muscles
    tree = etree.parse(str(_mobl_with(models_dir, tmp_path, {"DELT1", "BRA", "ECRL", "ECU"})))
    bra = next(e for e in tree.iter("Schutte1993Muscle_Deprecated") if e.get("name") == "BRA")
    for cp in bra.iter("ConditionalPathPoint"):
        cp.find("coordinate").text = "wrist_hand_r1"
        cp.find("range").text = "-0.3 0.1"
    path = tmp_path / "mobl_coupled_condition.osim"
    tree.write(str(path))
    model = load_osim(str(path))
    exc = {"ECRL": ExcitationSpec.parse("1"), "ECU": ExcitationSpec.parse("0.5"), "BRA": ExcitationSpec.parse("0.5")}
    fast, ref = MuscleDrivenSystem(model, exc), MuscleDrivenSystem(model, exc, compiled=False)
    plan, why = jit.compiled_plan(fast)
    assert plan is not None, why
    k_dev = model.coordinate_index("deviation")
    y0 = ref.initial_state()
    rng = np.random.default_rng(3)
    reference = OpenSimReference(str(path), model)
    for deviation in (-0.15, 0.0, 0.05, 0.12, 0.2, 0.35):  # wrist_hand_r1 from -0.22 to 0.38: both sides of 0.1
        y = y0.copy()
        y[:model.n_q] += rng.normal(size=model.n_q) * 0.05
        y[k_dev] = deviation
        y[model.n_q:2 * model.n_q] = rng.normal(size=model.n_q) * 0.05
        _assert_compiled_rhs_and_length_agree(fast, ref, plan, reference, "BRA", y)
    q0 = model.default_q.copy()
    q0[k_dev] = 0.08  # wrist_hand_r1 = 0.09: the points are active until the wrist deviates further
    times = np.linspace(0.0, 0.02, 5)
    refrun = opensim_muscle_simulation(path, times, exc, q0={"deviation": 0.08}, accuracy=1e-9)
    for method in ("RK45-jit", "BDF-jit"):
        ours = simulate_muscles(model, times[-1], exc, q0=q0, t_eval=times, method=method, rtol=1e-9, atol=1e-11)
        d = largest_differences(ours, refrun)
        print(f"[agreement] MoBL, BRA conditional on a coupled coordinate, 0.02 s ({method}): {d}")
        assert d["q"] < 1e-6 and d["fiber_length"] < 1e-8
    assert abs(refrun["q"][-1, refrun["names"].index("deviation")] - 0.08) > 0.01  # the wrist moves


def test_conditional_points_on_a_locked_coordinate_in_the_compiled_integrator(osim, models_dir, tmp_path):
    """A ConditionalPathPoint whose coordinate is locked (OpenSim's ToyLandingModel locks its knees): its condition
    is a constant, which the compiled plan takes (before: SciPy's route in Python).  leg6dof9musc with hip_flexion_r
    locked inside and outside the range of rect_fem_r's conditional point: the compiled right-hand side equals the
    numpy route's at random states, and the path lengths OpenSim's."""
    pytest.importorskip("numba")
    from lxml import etree
    from osim_emb import load_osim
    from osim_emb.opensim.bridge import OpenSimReference
    from osim_emb.simulation import muscle_driven_jit as jit
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem
    for hip, active in ((0.3, True), (1.2, False)):  # the point's range: [-1.5708, 0.7854]
        tree = etree.parse(str(models_dir / "leg6dof9musc.osim"))
        coordinate = next(e for e in tree.iter("Coordinate") if e.get("name") == "hip_flexion_r")
        coordinate.find("locked").text = "true"
        coordinate.find("default_value").text = str(hip)
        path = tmp_path / f"leg_hip_locked_{hip}.osim"
        tree.write(str(path))
        model = load_osim(str(path))
        assert "hip_flexion_r" not in model.coordinate_names
        exc = {"rect_fem_r": ExcitationSpec.parse("0.8"), "vas_int_r": ExcitationSpec.parse("0.3")}
        fast, ref = MuscleDrivenSystem(model, exc), MuscleDrivenSystem(model, exc, compiled=False)
        assert any(type(c).__name__ == "Constant" for _, c, _ in fast._paths.plan.conditional)
        plan, why = jit.compiled_plan(fast)
        assert plan is not None, why
        y0 = ref.initial_state()
        rng = np.random.default_rng(5)
        reference = OpenSimReference(str(path), model)
        for _ in range(4):
            y = y0.copy()
            y[:model.n_q] += rng.normal(size=model.n_q) * 0.1
            y[model.n_q:2 * model.n_q] = rng.normal(size=model.n_q) * 0.1
            _assert_compiled_rhs_and_length_agree(fast, ref, plan, reference, "rect_fem_r", y)
        print(f"[agreement] leg6dof9musc, hip_flexion_r locked at {hip} (conditional point active: {active}): "
              "compiled right-hand side = numpy route's, rect_fem_r's length = OpenSim's")


def test_a_rigid_tendon_curve_the_compiled_encoding_lacks_keeps_scipys_route(osim, models_dir, tmp_path, caplog):
    """BIClong's force-velocity curve a Constant (f_V = 1, which the compiled curve encoding does not take): the
    compiled plan names the muscle and the curve, method "auto" says so and runs SciPy's RK45 on the numpy route,
    which matches OpenSim's Manager."""
    import logging
    from lxml import etree
    from osim_emb import load_osim
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation import muscle_driven_jit as jit
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, simulate_muscles
    tree = etree.parse(str(_rigid_tendon_arm26(models_dir, tmp_path)))
    bic = next(e for e in tree.iter("RigidTendonMuscle") if e.get("name") == "BIClong")
    bic.remove(bic.find("force_velocity_curve"))
    const = etree.SubElement(etree.SubElement(bic, "force_velocity_curve"), "Constant")
    etree.SubElement(const, "value").text = "1"
    path = tmp_path / "arm26_rigid_tendon_constant_fv.osim"
    tree.write(str(path))
    model = load_osim(str(path))
    exc = {"BIClong": ExcitationSpec.parse("0.6")}
    plan, why = jit.compiled_plan(MuscleDrivenSystem(model, exc))
    assert plan is None and "RigidTendonMuscle 'BIClong'" in why and "force_velocity_curve (Constant)" in why
    times = np.linspace(0.0, 0.03, 4)
    with caplog.at_level(logging.INFO, logger="osim_emb.simulation.muscle_driven"):
        ours = simulate_muscles(model, times[-1], exc, t_eval=times, rtol=1e-10, atol=1e-12)
    assert ours.attrs["method"] == "RK45" and "force_velocity_curve (Constant)" in caplog.text
    d = largest_differences(ours, opensim_muscle_simulation(path, times, exc, accuracy=1e-10))
    print(f"[agreement] arm26 RigidTendonMuscles, BIClong's f_V constant, 0.03 s (RK45): {d}")
    assert d["q"] < 1e-7 and d["fiber_length"] < 1e-8


def test_a_ligament_curve_the_compiled_encoding_lacks_is_named(models_dir, tmp_path):
    """A Ligament whose force-length curve is a Constant (not in the compiled curve encoding): the compiled plan
    names the Ligament and the curve type, and the numpy route applies the curve (F_pcsa x 1 beyond the resting
    length, 0 below)."""
    import copy
    from lxml import etree
    from osim_emb import load_osim
    from osim_emb.simulation import muscle_driven_jit as jit
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem
    tree = etree.parse(str(models_dir / "arm26.osim"))
    bra = next(e for e in tree.iter("Thelen2003Muscle") if e.get("name") == "BRA")
    el = etree.SubElement(bra.getparent(), "Ligament", name="bra_ligament")
    el.append(copy.deepcopy(bra.find("GeometryPath")))
    etree.SubElement(el, "resting_length").text = "0.1"
    etree.SubElement(el, "pcsa_force").text = "250"
    etree.SubElement(etree.SubElement(el, "force_length_curve"), "Constant").append(etree.Element("value"))
    el.find("force_length_curve/Constant/value").text = "1"
    path = tmp_path / "arm26_constant_ligament.osim"
    tree.write(str(path))
    system = MuscleDrivenSystem(load_osim(str(path)))
    plan, why = jit.compiled_plan(system)
    assert plan is None and "Ligament 'bra_ligament'" in why and "(Constant)" in why
    ligament = system._passive[0]
    assert ligament.tension(0.12, 0.0) == pytest.approx(250.0) and ligament.tension(0.09, 0.0) == 0.0


def test_bad_rigid_tendon_muscle_descriptions_are_refused_by_name():
    """A curve that is not a function object, and a non-positive max_contraction_velocity (OpenSim divides by it),
    are refused naming the muscle type, the muscle and the property (Schutte1993's curves by the same rule)."""
    from osim_emb.muscles.hill import MuscleModelError, RigidTendonMuscle, Schutte1993Muscle
    with pytest.raises(MuscleModelError, match=r"RigidTendonMuscle 'm': force_velocity_curve must be a function "
                                               r"object .* got float"):
        RigidTendonMuscle("m", force_velocity_curve=1.0)
    with pytest.raises(MuscleModelError, match="RigidTendonMuscle 'm': max_contraction_velocity must be > 0"):
        RigidTendonMuscle("m", max_contraction_velocity=0.0)
    with pytest.raises(MuscleModelError, match=r"Schutte1993Muscle_Deprecated 's': active_force_length_curve must "
                                               r"be a function object .* got str"):
        Schutte1993Muscle("s", active_force_length_curve="spline")


def test_passive_forces_not_applied_are_said_and_the_reference_can_leave_them_out(osim, models_dir, tmp_path,
                                                                                   caplog):
    """arm26 with a PointToPointSpring pulling the forearm to the torso, a disabled one, and an
    ExpressionBasedPointToPointForce (whose expression the package does not evaluate): the package applies the
    enabled spring (not the disabled one), names the expression force as one OpenSim applies and it does not;
    OpenSim's Manager with the expression force differs, with it switched off (``disabled_forces``) the two agree,
    the spring acting in both."""
    import logging
    from osim_emb import load_osim
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, simulate_muscles
    m = osim.Model(str(models_dir / "arm26.osim"))
    bodies = m.getBodySet()
    m.addForce(osim.PointToPointSpring(bodies.get("base"), osim.Vec3(0.0, 0.3, 0.1), bodies.get("r_ulna_radius_hand"),
                                       osim.Vec3(0.0, -0.2, 0.0), 200.0, 0.05))
    m.getForceSet().get(m.getForceSet().getSize() - 1).setName("pull")
    disabled = osim.PointToPointSpring(bodies.get("base"), osim.Vec3(0.0, 0.1, 0.0), bodies.get("r_humerus"),
                                       osim.Vec3(0.0, -0.1, 0.0), 50.0, 0.1)
    disabled.setName("stiff")
    disabled.set_appliesForce(False)
    m.addForce(disabled)
    expr = osim.ExpressionBasedPointToPointForce()
    expr.setName("push")
    expr.setBody1Name("base")
    expr.setBody2Name("r_ulna_radius_hand")
    expr.setPoint1(osim.Vec3(0.1, 0.0, 0.0))
    expr.setPoint2(osim.Vec3(0.0, -0.1, 0.0))
    expr.setExpression("300*(d-0.2)")
    m.addForce(expr)
    m.finalizeConnections()
    path = tmp_path / "arm26_spring.osim"
    m.printToXML(str(path))
    model = load_osim(str(path))
    assert ("pull", "PointToPointSpring") in model.extras["forces"]
    assert ("stiff", "PointToPointSpring") in model.extras["forces"]
    with caplog.at_level(logging.WARNING):
        system = MuscleDrivenSystem(model)
    assert [law.name for law in system.force_elements.laws] == ["pull"]
    assert system.unapplied_passive_forces == ("push",)
    assert "does not apply 1 ExpressionBasedPointToPointForce (push): OpenSim's Manager applies them" in caplog.text
    assert "stiff" not in caplog.text and "pull" not in caplog.text
    times = np.linspace(0.0, 0.05, 3)
    exc = {"TRIlong": ExcitationSpec.parse("0.2")}
    ours = simulate_muscles(model, times[-1], exc, t_eval=times, method="DOP853", rtol=1e-10, atol=1e-12)
    with_push = largest_differences(ours, opensim_muscle_simulation(path, times, exc, accuracy=1e-9))
    without = largest_differences(ours, opensim_muscle_simulation(path, times, exc, accuracy=1e-9,
                                                                  disabled_forces=system.unapplied_passive_forces))
    no_spring = largest_differences(ours, opensim_muscle_simulation(path, times, exc, accuracy=1e-9,
                                                                    disabled_forces=("push", "pull")))
    assert with_push["q"] > 1e-4  # the expression force moves the elbow in OpenSim
    assert no_spring["q"] > 1e-4  # and so does the spring, which the package applies
    assert without["q"] < 1e-8 and without["fiber_length"] < 1e-9
    with pytest.raises(ValueError, match="no force named nothing"):
        opensim_muscle_simulation(path, times[:2], exc, disabled_forces=("nothing",))


@pytest.mark.parametrize("method", ["RK45-jit", "BDF-jit"])
def test_output_times_after_zero_start_the_compiled_integrators_at_zero(models_dir, method):
    """t_eval = [0.03, 0.05]: the compiled integrators start at t = 0 (they started at the first output time,
    labelling the initial state 0.03 s); the rows equal those of the run through [0, 0.03, 0.05] (same steps),
    and output times outside [0, t_end] are refused by name."""
    from osim_emb import load_osim
    from osim_emb.simulation.muscle_driven import simulate_muscles
    model = load_osim(models_dir / "arm26.osim")
    exc = {"BIClong": ExcitationSpec.parse("0.6")}
    late = simulate_muscles(model, 0.05, exc, method=method, t_eval=[0.03, 0.05])
    full = simulate_muscles(model, 0.05, exc, method=method, t_eval=[0.0, 0.03, 0.05])
    assert late["time"].tolist() == [0.03, 0.05] and late.attrs["method"] == method
    np.testing.assert_allclose(late.to_numpy(), full.to_numpy()[1:], rtol=0, atol=1e-12)
    assert abs(late["r_elbow_flex"].iloc[0] - full["r_elbow_flex"].iloc[0]) > 1e-4  # it moved by 0.03 s
    with pytest.raises(ValueError, match=r"within \[0, t_end = 0.05\]"):
        simulate_muscles(model, 0.05, exc, method=method, t_eval=[0.02, 0.06])


@pytest.mark.parametrize("xml, applies", [
    ("<F><appliesForce>false</appliesForce></F>", False), ("<F><appliesForce>true</appliesForce></F>", True),
    ("<F><isDisabled>true</isDisabled></F>", False), ("<F><isDisabled>false</isDisabled></F>", True),
    ("<F/>", True), ("<F><appliesForce>true</appliesForce><isDisabled>true</isDisabled></F>", True)])
def test_applies_force_reads_4x_and_older_flags(xml, applies):
    """Force::appliesForce as OpenSim reads it: ``appliesForce`` (4.x) wins, else not ``isDisabled`` (older files;
    OpenSim's updateFromXMLNode turns one into the other), else true."""
    from lxml import etree
    from osim_emb.io.muscle_xml import element_applies_force
    assert element_applies_force(etree.fromstring(xml), "f") is applies


def _arm26_with_coupled_elbow(osim, models_dir, tmp_path):
    """arm26 with the elbow a SimmSpline of the shoulder (CoordinateCouplerConstraint; slope 0.3 to 1.9), a
    CoordinateLimitForce on the elbow (reached) and a CoordinateActuator on it: every coordinate force on the
    coupled coordinate."""
    m = osim.Model(str(models_dir / "arm26.osim"))
    spline = osim.SimmSpline()
    for x, y in ((-1.0, 0.2), (-0.5, 0.35), (0.0, 0.6), (0.5, 1.2), (1.0, 2.0)):
        spline.addPoint(x, y)
    coupler = osim.CoordinateCouplerConstraint()
    coupler.setName("elbow_follows_shoulder")
    names = osim.ArrayStr()
    names.append("r_shoulder_elev")
    coupler.setIndependentCoordinateNames(names)
    coupler.setDependentCoordinateName("r_elbow_flex")
    coupler.setFunction(spline)
    m.addConstraint(coupler)
    clf = osim.CoordinateLimitForce("r_elbow_flex", 33.0, 0.5, 30.0, 0.5, 0.02, 2.0)
    clf.setName("elbow_limit")
    m.addForce(clf)
    act = osim.CoordinateActuator("r_elbow_flex")
    act.setName("elbow_motor")
    act.setOptimalForce(3.0)
    m.addForce(act)
    m.finalizeConnections()
    path = tmp_path / "arm26_coupled_forces.osim"
    m.printToXML(str(path))
    return path


def test_forces_on_a_coupled_coordinate_equal_opensim(osim, models_dir, tmp_path):
    """A CoordinateLimitForce and a CoordinateActuator on a coupled coordinate act on q through the coupling's
    gradient (virtual work: τ_q = s'(q) τ_c, with ċ = s'(q) q̇), as OpenSim's coupler constraint transmits them:
    the numpy route (DOP853), RK45-jit and BDF-jit against OpenSim's Manager, the elbow through both limits."""
    pytest.importorskip("numba")
    from osim_emb import load_osim
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation import muscle_driven_jit as jit
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, simulate_muscles
    path = _arm26_with_coupled_elbow(osim, models_dir, tmp_path)
    model = load_osim(str(path))
    assert model.coordinate_names == ["r_shoulder_elev"]
    exc = {"TRIlong": ExcitationSpec.parse("0.3"), "BIClong": ExcitationSpec.parse("step:0.05:0.15:0.02:0.6")}
    controls = {"elbow_motor": ExcitationSpec.parse("sine:2:8:0:0")}
    system = MuscleDrivenSystem(model, exc, controls=controls)
    assert [f.name for f in system.limit_forces] == ["elbow_limit"] and system.limit_forces[0].coupling is not None
    assert jit.compiled_plan(system)[0] is not None
    times = np.linspace(0.0, 0.3, 16)
    ref = opensim_muscle_simulation(path, times, exc, controls=controls, accuracy=1e-9)
    elbow = np.degrees(ref["q"][:, ref["names"].index("r_elbow_flex")])
    assert elbow.max() > 33.0 and elbow.min() < 30.0, elbow  # both limits reached
    for method, rtol in (("DOP853", 1e-10), ("RK45-jit", 1e-10), ("BDF-jit", 1e-9)):
        ours = simulate_muscles(model, times[-1], exc, controls=controls, t_eval=times, method=method, rtol=rtol,
                                atol=rtol * 1e-2)
        d = largest_differences(ours, ref)  # the coupled elbow's column (value c(q)) among the q compared
        speed = np.abs(ours["r_elbow_flex_u"].to_numpy()
                       - ref["u"][:, ref["names"].index("r_elbow_flex")]).max()
        print(f"[agreement] arm26, forces on the coupled elbow, 0.3 s ({method}): shoulder and elbow "
              f"{d['q']:.2e} rad, elbow speed {speed:.2e} rad/s, fibre lengths {d['fiber_length']:.2e} m")
        assert d["q"] < 1e-6 and d["fiber_length"] < 1e-7 and speed < 1e-5
    # the forces on the elbow matter: without them the motion differs by far more
    bare = simulate_muscles(model, times[-1], exc, t_eval=times, method="RK45-jit", rtol=1e-10, atol=1e-12,
                            coordinate_forces=([], []))
    assert largest_differences(bare, ref)["q"] > 1e-3


def test_a_coupled_coordinate_force_the_compiled_plan_cannot_encode_keeps_scipys_route(models_dir):
    """A coupling of two coordinates (here q1 q2) is not a one-input curve of a linear combination: the compiled
    plan names the force, and the numpy route applies it as τ = ∇c τ_c."""
    from osim_emb import load_osim
    from osim_emb.core.functions import MultivariatePolynomial
    from osim_emb.simulation import muscle_driven_jit as jit
    from osim_emb.simulation.muscle_driven import CoordinateActuator, MuscleDrivenSystem
    model = load_osim(str(models_dir / "arm26.osim"))
    product = MultivariatePolynomial(2, 2, [0.0, 0.0, 0.0, 0.0, 1.0, 0.0])  # c = q1 q2
    act = CoordinateActuator("ext", -1, 2.0, product)
    system = MuscleDrivenSystem(model, {}, controls={"ext": 1.5}, coordinate_forces=([], [act]))
    plan, why = jit.compiled_plan(system)
    assert plan is None and "CoordinateActuator 'ext'" in why and "coupled coordinate" in why
    q = np.array([0.3, 0.7])
    tau = system.generalized_forces(0.0, q, np.zeros(2), np.zeros(0), np.zeros((2, 0)))
    np.testing.assert_allclose(tau, 1.5 * 2.0 * np.array([0.7, 0.3]), rtol=1e-14)


def test_a_muscle_switched_off_in_the_file_applies_no_force_as_in_opensim(osim, models_dir, tmp_path, caplog):
    """arm26 with BRA's ``appliesForce`` false (OpenSim's Manager integrates its states but applies no force of it):
    the package leaves it out, says so (and that its excitation is ignored), and follows OpenSim's trajectory; the
    same run with BRA on moves the elbow elsewhere."""
    from osim_emb import load_osim
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import simulate_muscles
    off = with_forces_switched_off(osim, models_dir / "arm26.osim", tmp_path / "arm26_bra_off.osim", ["BRA"])
    times = np.linspace(0.0, 0.2, 21)
    exc = {"BIClong": ExcitationSpec.parse("0.3"), "BRA": ExcitationSpec.parse("0.9")}
    ref = opensim_muscle_simulation(str(off), times, exc, accuracy=1e-9)
    with caplog.at_level("WARNING"):
        ours = simulate_muscles(load_osim(str(off)), times[-1], exc, t_eval=times, method="RK45-jit", rtol=1e-10,
                                atol=1e-12)
    assert "leaves out 1 unit(s) whose appliesForce is false" in caplog.text and "excitations of BRA ignored" in caplog.text
    assert "BRA" not in ours.columns
    both_on = simulate_muscles(load_osim(str(models_dir / "arm26.osim")), times[-1], exc, t_eval=times,
                               method="RK45-jit", rtol=1e-10, atol=1e-12)
    d, effect = largest_differences(ours, ref), largest_differences(both_on, ref)
    print(f"[agreement] arm26 with BRA off in the file, 0.2 s: max|q - q_OpenSim| = {d['q']:.1e} rad (with BRA on "
          f"{effect['q']:.3f} rad)")
    assert d["q"] < 1e-6 and d["fiber_length"] < 1e-7 and effect["q"] > 0.01


@pytest.mark.parametrize("method", ["RK45-jit", "BDF-jit"])
def test_compiled_runs_stopped_and_resumed_are_one_run(models_dir, method, capsys):
    """A compiled integration advanced one output time at a time (as the progress bar and a wall-time budget run
    it) gives the states and counts of one call bitwise, and both follow SciPy's DOP853 at 1e-12 (the reference);
    a budget of right-hand sides stops it naming the last output time reached."""
    pytest.importorskip("numba")
    from osim_emb import load_osim
    from osim_emb.simulation.compiled_runs import REACHED, CompiledRun, IntegrationBudgetExceeded
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, integrate_system
    model = load_osim(str(models_dir / "arm26.osim"))
    system = MuscleDrivenSystem(model, {"BIClong": ExcitationSpec.parse("step:0.05:0.15:0.02:0.8"),
                                        "TRIlong": ExcitationSpec.parse("sine:0.2:20:0:0.3")})
    y0 = system.initial_state()
    times = np.linspace(0.0, 0.3, 16)
    whole = integrate_system(system, y0, times, method=method, rtol=1e-7, atol=1e-9)
    run = CompiledRun(system, method, y0, times, 1e-7, 1e-9)
    for stop in range(2, len(times) + 1):
        assert run.advance(stop) == REACHED and run.reached == stop
    assert np.array_equal(run.out.T, whole.y) and run.nfev == whole.nfev
    shown = integrate_system(system, y0, times, method=method, rtol=1e-7, atol=1e-9, progress=True,
                             max_seconds=600.0)
    assert np.array_equal(shown.y, whole.y)
    assert "simulating 0.3 s" in capsys.readouterr().err
    ref = integrate_system(system, y0, times, method="DOP853", rtol=1e-12, atol=1e-14)
    assert np.abs(whole.y[:2] - ref.y[:2]).max() < 1e-5
    with pytest.raises(IntegrationBudgetExceeded, match=r"stopped after t = .* more than 100 right-hand sides"):
        integrate_system(system, y0, times, method=method, rtol=1e-7, atol=1e-9, max_steps=100)


def test_simulate_muscles_writes_a_states_file_opensim_reads(osim, models_dir, tmp_path):
    """The file's columns are OpenSim's state labels: OpenSim's StatesTrajectory takes every state from it (the
    tendon forces, an output, as an extra column), each value the file's; from_opensim_states reads it back under
    the package's names, as simulate_muscles returns it."""
    from osim_emb import load_osim
    from osim_emb.cli.main import main
    from osim_emb.io.motion import from_opensim_states, read_motion
    from osim_emb.simulation.muscle_driven import simulate_muscles
    path = models_dir / "arm26.osim"
    out = tmp_path / "arm26.sto"
    assert main(["simulate-muscles", str(path), "-o", str(out), "--excitation", "BIClong=0.5", "--t-end", "0.05",
                 "--samples", "6", "-q"]) == 0
    model = osim.Model(str(path))
    model.initSystem()
    table = osim.TimeSeriesTable(str(out))
    states = osim.StatesTrajectory.createFromStatesTable(model, table, False, True)  # extra: tendon forces
    names = [model.getStateVariableNames().get(i) for i in range(model.getNumStateVariables())]
    assert states.getSize() == 6 and len(names) == 16
    for k in (0, 5):
        for n in names:
            assert model.getStateVariableValue(states.get(k), n) == table.getDependentColumn(n)[k], n
    ours = load_osim(str(path))
    api = simulate_muscles(ours, 0.05, {"BIClong": ExcitationSpec.parse("0.5")}, n_output=6)
    back = from_opensim_states(read_motion(out)[0])
    assert list(back.columns) == list(api.columns)
    np.testing.assert_allclose(back.to_numpy(), api.to_numpy(), rtol=1e-10, atol=1e-12)


def test_states_file_of_rigid_and_activation_free_millard_muscles_has_no_extra_states(osim, models_dir, tmp_path):
    """A rigid tendon has no fibre-length state in OpenSim, a muscle without activation dynamics no activation
    state: the file writes those as outputs (``/forceset/M|fiber_length``), so that StatesTrajectory finds every
    state and nothing it does not have (no extra column but the outputs)."""
    from osim_emb.cli.main import main
    path = _rigid_and_direct_millard(models_dir, tmp_path)
    out = tmp_path / "states.sto"
    assert main(["simulate-muscles", str(path), "-o", str(out), "--excitation", "BIClong=0.5", "--t-end", "0.03",
                 "--samples", "4", "-q"]) == 0
    model = osim.Model(str(path))
    model.initSystem()
    table = osim.TimeSeriesTable(str(out))
    names = [model.getStateVariableNames().get(i) for i in range(model.getNumStateVariables())]
    labels = list(table.getColumnLabels())
    assert sorted(c for c in labels if "|" not in c) == sorted(names)
    assert {"/forceset/BIClong|fiber_length", "/forceset/BRA|activation", "/forceset/TRIlong|activation"} <= set(labels)
    states = osim.StatesTrajectory.createFromStatesTable(model, table, False, True)
    for n in names:
        assert model.getStateVariableValue(states.get(3), n) == table.getDependentColumn(n)[3], n


def test_a_muscle_among_the_models_components_is_labelled_by_its_own_path(osim, models_dir, tmp_path):
    """A muscle in the model's <components> (Moco's 2D_gait) has the state path /NAME/activation, not
    /forceset/NAME/...: OpenSim's StatesTrajectory takes every state from the file."""
    from lxml import etree
    from osim_emb.cli.main import main
    tree = etree.parse(str(models_dir / "arm26.osim"))
    model_el = tree.getroot().find("Model")
    muscle = next(e for e in model_el.iter("Thelen2003Muscle") if e.get("name") == "BICshort")  # no wrap (OpenSim)
    muscle.getparent().remove(muscle)
    comps = model_el.find("components")
    if comps is None:
        comps = etree.SubElement(model_el, "components")
    comps.append(muscle)
    path = tmp_path / "arm26_component_muscle.osim"
    tree.write(str(path))
    out = tmp_path / "states.sto"
    assert main(["simulate-muscles", str(path), "-o", str(out), "--excitation", "BIClong=0.5", "--t-end", "0.02",
                 "--samples", "3", "-q"]) == 0
    labels = out.read_text().split("endheader\n")[1].splitlines()[0].split("\t")
    assert "/BICshort/activation" in labels and "/forceset/BICshort/activation" not in labels
    model = osim.Model(str(path))
    model.initSystem()
    table = osim.TimeSeriesTable(str(out))
    states = osim.StatesTrajectory.createFromStatesTable(model, table, False, True)
    names = [model.getStateVariableNames().get(i) for i in range(model.getNumStateVariables())]
    assert "/BICshort/activation" in names
    for n in names:
        assert model.getStateVariableValue(states.get(2), n) == table.getDependentColumn(n)[2], n


def test_leaving_the_range_of_a_moving_points_coordinate_is_said(osim, models_dir, tmp_path, caplog):
    """Past knee_angle_r's range OpenSim keeps leg6dof9musc's MovingPathPoints at the range end (the lengths agree)
    but applies their forces through the location functions' slopes at the unclamped knee angle (its
    computeMomentArm differs from the package's -dL/dq there, equal inside the range): a simulation that takes the
    knee past 10 degrees names the units whose forces then differ from OpenSim's Manager."""
    from osim_emb import load_osim
    from osim_emb.cli.main import main
    from osim_emb.paths.geometry import lengths_and_moment_arms
    path = models_dir / "leg6dof9musc.osim"
    model = load_osim(str(path))
    k = model.coordinate_index("knee_angle_r")
    theirs = osim.Model(str(path))
    state = theirs.initSystem()
    knee = theirs.getCoordinateSet().get("knee_angle_r")
    knee.setClamped(state, False)
    gap = {}
    for angle in (-0.5, 0.2):  # inside; 1.5 degrees past the range's end at 10 degrees
        q = model.default_q.copy()
        q[k] = angle
        length, arm = lengths_and_moment_arms(model, q[None], ["vas_int_r"], allow_out_of_range=True)
        knee.setValue(state, angle, True)
        theirs.realizePosition(state)
        muscle = theirs.getMuscles().get("vas_int_r")
        assert abs(length[0, 0] - muscle.getLength(state)) < 1e-10
        gap[angle] = abs(arm[0, k, 0] - muscle.computeMomentArm(state, knee))
    assert gap[-0.5] < 1e-9 and gap[0.2] > 0.01
    with caplog.at_level("WARNING"):
        assert main(["simulate-muscles", str(path), "-o", str(tmp_path / "leg.sto"), "--t-end", "0.04", "--samples",
                     "5", "--excitation", "vas_int_r=1", "--q0", "knee_angle_r=5,hip_flexion_r=30", "--qdot0",
                     "knee_angle_r=100"]) == 0
    said = [r.getMessage() for r in caplog.records if "MovingPathPoints of" in r.getMessage()]
    assert len(said) == 1 and "past the range of 'knee_angle_r'" in said[0] and "vas_int_r" in said[0]
