"""DeGrooteFregly2016Muscle (Moco's muscle) in the muscle-driven simulation, against OpenSim 4.6: its curves against
OpenSim's own curve functions, OpenSim's initial fibre equilibrium, and forward simulations against OpenSim's Manager
with rigid tendons (Moco's usual setting, fibre damping) and with elastic tendons (explicit dynamics)."""

from __future__ import annotations

import numpy as np
import pytest

from osim_emb import load_osim
from opensim_builders import with_element_text


def build_degroote_arm(osim, path, *, rigid: bool, in_components: bool = False, **properties):
    """ground -pin z- upper -pin z- lower, three straight-line DeGrooteFregly2016Muscles (a shoulder flexor, a
    biarticular extensor, an elbow flexor with 0.2 rad pennation), tendon slack lengths set so that each fibre is
    near its optimal length at the default pose; rigid tendons with fibre damping 0.01 (Moco's usual settings) or
    elastic tendons with explicit dynamics.  OpenSim's defaults otherwise (time constants 0.015 / 0.060 s; OpenSim
    keeps the first muscle's time constants in function-static variables, so every test here uses the defaults);
    ``in_components``: the muscles added with Model::addComponent, as Moco's examples do; ``properties``: other
    property values for every muscle."""
    m = osim.Model()
    m.setName("degroote_arm")
    upper = osim.Body("upper", 1.5, osim.Vec3(0, -0.15, 0), osim.Inertia(0.02, 0.003, 0.02))
    lower = osim.Body("lower", 1.0, osim.Vec3(0, -0.12, 0), osim.Inertia(0.01, 0.002, 0.01))
    m.addBody(upper)
    m.addBody(lower)
    shoulder = osim.PinJoint("shoulder", m.getGround(), osim.Vec3(0), osim.Vec3(0), upper, osim.Vec3(0), osim.Vec3(0))
    elbow = osim.PinJoint("elbow", upper, osim.Vec3(0, -0.3, 0), osim.Vec3(0), lower, osim.Vec3(0), osim.Vec3(0))
    m.addJoint(shoulder)
    m.addJoint(elbow)
    shoulder.updCoordinate().setDefaultValue(0.4)
    elbow.updCoordinate().setDefaultValue(0.8)
    specs = (("flexor", 800.0, 0.10, 0.0, [(m.getGround(), (0.05, 0.05, 0)), (upper, (0.03, -0.12, 0))]),
             ("extensor", 600.0, 0.12, 0.0, [(m.getGround(), (-0.05, 0.02, 0)), (upper, (-0.03, -0.28, 0)),
                                             (lower, (-0.02, 0.03, 0))]),
             ("elbow_flexor", 500.0, 0.09, 0.2, [(upper, (0.02, -0.1, 0)), (lower, (0.02, -0.05, 0))]))
    muscles = []
    for name, fmax, lopt, penn, points in specs:
        mus = osim.DeGrooteFregly2016Muscle()
        mus.setName(name)
        mus.set_max_isometric_force(fmax)
        mus.set_optimal_fiber_length(lopt)
        mus.set_pennation_angle_at_optimal(penn)
        mus.set_tendon_slack_length(0.1)
        mus.set_ignore_tendon_compliance(rigid)
        mus.set_fiber_damping(0.01 if rigid else 0.0)
        mus.set_default_activation(0.2)
        for prop, value in properties.items():
            getattr(mus, f"set_{prop}")(value)
        for k, (frame, loc) in enumerate(points):
            mus.addNewPathPoint(f"{name}_{k}", frame, osim.Vec3(*loc))
        if in_components:
            m.addComponent(mus)
        else:
            m.addForce(mus)
        muscles.append((mus, lopt, penn))
    state = m.initSystem()
    for mus, lopt, penn in muscles:  # fibres near their optimal length (along the tendon: l_opt cos(phi_opt))
        mus.set_tendon_slack_length(mus.getLength(state) - 0.95 * lopt * np.cos(penn))
    m.finalizeConnections()
    m.printToXML(str(path))


def test_curves_equal_opensims(osim):
    """f_L (with active_force_width_scale 1.5), f_PE, f_V and its inverse, f_T and its inverse of the package's
    DeGrooteFregly2016Muscle against the same functions of OpenSim's muscle, over their ranges."""
    from osim_emb.muscles.hill import DeGrooteFregly2016Muscle
    theirs = osim.DeGrooteFregly2016Muscle()
    theirs.set_active_force_width_scale(1.5)
    theirs.set_passive_fiber_strain_at_one_norm_force(0.5)
    theirs.set_tendon_strain_at_one_norm_force(0.06)
    theirs.finalizeFromProperties()
    ours = DeGrooteFregly2016Muscle("m", active_force_width_scale=1.5, passive_fiber_strain_at_one_norm_force=0.5,
                                    tendon_strain_at_one_norm_force=0.06)
    lengths = np.linspace(0.3, 1.7, 57)
    speeds = np.linspace(-1.0, 1.0, 41)
    tendon = np.linspace(0.99, 1.08, 19)
    forces = np.linspace(0.01, 2.0, 23)
    pairs = [(ours.active_force_length(lengths), [theirs.calcActiveForceLengthMultiplier(x) for x in lengths]),
             (ours.passive_force_length(lengths), [theirs.calcPassiveForceMultiplier(x) for x in lengths]),
             (ours.force_velocity(speeds), [theirs.calcForceVelocityMultiplier(x) for x in speeds]),
             (ours.force_velocity_inverse(ours.force_velocity(speeds)), speeds),
             (ours.tendon_force_length(tendon), [theirs.calcTendonForceMultiplier(x) for x in tendon]),
             (ours.tendon_force_length_inverse(forces), [theirs.calcTendonForceLengthInverseCurve(x) for x in forces])]
    for a, b in pairs:
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("rigid, in_components", [(True, False), (False, False), (True, True)],
                         ids=["rigid_tendon", "elastic_tendon", "muscles_among_components"])
def test_forward_simulation_equals_opensim_manager(osim, tmp_path, rigid, in_components):
    """0.12 s of a two-joint arm moved by three DeGrooteFregly2016Muscles (a step, a constant and a sine
    excitation): the package's minimal-coordinate ODE -- SciPy's DOP853 on the compiled right-hand side, RK45-jit and
    BDF-jit -- (the fibre length as the elastic tendon's state, OpenSim's
    normalized tendon force turned into it; OpenSim's bisection for the initial equilibrium) against OpenSim's
    Manager at accuracy 1e-9.  The arm moves by more than 0.2 rad at both joints; coordinates, fibre lengths and
    activations agree to 1e-8.  (Further on, OpenSim's Manager returns NaN states with rigid tendons at accuracy
    1e-9 or 1e-8 from 0.13 s, not at 1e-7: its integrator, not the muscle; the package's run continues.)  With
    the muscles among the model's <components> (OpenSim's getActuators and getMuscles leave them out: the
    comparison's PrescribedController and recording find them in the component list) the same holds."""
    from osim_emb.opensim.muscle_simulation import largest_differences, opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import ExcitationSpec, MuscleDrivenSystem, simulate_muscles
    path = tmp_path / "degroote_arm.osim"
    build_degroote_arm(osim, path, rigid=rigid, in_components=in_components)
    assert ("<components>" in path.read_text()) == in_components
    model = load_osim(path)
    assert {type(m.parameters).__name__ for m in model.muscles} == {"DeGrooteFregly2016Muscle"}
    exc = {"flexor": ExcitationSpec.parse("step:0.0:0.05:0.4:0.7"), "extensor": ExcitationSpec.parse("0.5"),
           "elbow_flexor": ExcitationSpec.parse("sine:0.5:10:0:0.2")}
    assert MuscleDrivenSystem(model, exc).compiled
    times = np.linspace(0.0, 0.12, 7)
    ref = opensim_muscle_simulation(path, times, exc, accuracy=1e-9)
    assert np.ptp(ref["q"], axis=0).min() > 0.2
    assert ref["muscles"] == ["flexor", "extensor", "elbow_flexor"]
    for method in ("DOP853", "RK45-jit", "BDF-jit"):
        ours = simulate_muscles(model, times[-1], exc, t_eval=times, method=method, rtol=1e-10, atol=1e-12)
        d = largest_differences(ours, ref)
        assert d["q"] < 1e-8 and d["fiber_length"] < 1e-8 and d["activation"] < 1e-8, (method, d)
    np.testing.assert_allclose(ours.filter(like="_fiber_length").to_numpy()[0], ref["fiber_length"][0], rtol=0,
                               atol=1e-12)  # the initial equilibrium


def test_modes_a_forward_simulation_cannot_run_are_refused(osim, tmp_path):
    """Implicit tendon dynamics (the tendon-force rate is a variable Moco's solvers set) is refused by name; a
    property OpenSim refuses (default_activation 0): the muscle is imported as a path only (with a warning), and
    the simulation refuses it naming the muscle and the value."""
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, MuscleSimulationError
    path = tmp_path / "implicit.osim"
    build_degroote_arm(osim, path, rigid=False, tendon_compliance_dynamics_mode="implicit")
    with pytest.raises(MuscleSimulationError, match="flexor.*implicit"):
        MuscleDrivenSystem(load_osim(path))
    build_degroote_arm(osim, path, rigid=False)
    bad = tmp_path / "bad.osim"
    bad.write_text(path.read_text().replace("<default_activation>0.20000000000000001</default_activation>",
                                            "<default_activation>0</default_activation>", 1))
    with pytest.raises(MuscleSimulationError, match="'flexor': force model not imported.*default_activation must be > 0"):
        MuscleDrivenSystem(load_osim(bad))


@pytest.mark.parametrize("rigid", [True, False], ids=["rigid_tendon", "elastic_tendon"])
def test_compiled_muscle_loop_equals_the_numpy_muscle_model(osim, tmp_path, rigid):
    """The compiled DeGroote loop (``muscles.kernels.degroote_kernel``) against the numpy muscle model
    (``muscles.hill.DeGrooteFregly2016Muscle``) at 20 random states (coordinates within 0.02 rad and fibre lengths
    within 0.2 % of the equilibrium, activations 0.2..1, speeds): the same right-hand side to 1e-10 relative; with
    ignore_activation_dynamics the activation is the excitation in both."""
    from osim_emb.simulation.muscle_driven import ExcitationSpec, MuscleDrivenSystem
    path = tmp_path / "degroote_arm.osim"
    build_degroote_arm(osim, path, rigid=rigid)
    from lxml import etree
    tree = etree.parse(str(path))
    first = next(tree.iter("DeGrooteFregly2016Muscle"))
    flag = first.find("ignore_activation_dynamics")
    if flag is None:
        flag = etree.SubElement(first, "ignore_activation_dynamics")
    flag.text = "true"
    tree.write(str(path))
    model = load_osim(path)
    assert [m.parameters.ignore_activation_dynamics for m in model.muscles] == [True, False, False]
    exc = {"flexor": ExcitationSpec.parse("0.4"), "extensor": ExcitationSpec.parse("sine:0.5:10:0:0.2"),
           "elbow_flexor": ExcitationSpec.parse("0.7")}
    compiled, numpy_route = MuscleDrivenSystem(model, exc), MuscleDrivenSystem(model, exc, compiled=False)
    assert compiled.compiled and not numpy_route.compiled
    rng = np.random.default_rng(5)
    y0 = compiled.initial_state()
    for _ in range(20):
        y = y0.copy()
        y[:2] += rng.uniform(-0.02, 0.02, 2)
        y[2:4] = rng.normal(0.0, 2.0, 2)
        y[4:7] = rng.uniform(0.2, 1.0, 3)
        y[7:] *= rng.uniform(0.998, 1.002, 3)
        t = float(rng.uniform(0, 0.1))
        a, b = compiled.rhs(t, y), numpy_route.rhs(t, y)
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


def test_no_fibre_equilibrium_is_refused_as_opensim_refuses_it(osim, tmp_path):
    """A muscle whose path is shorter than its tendon slack length everywhere the bisection looks (the residual has
    one sign over normalized tendon forces 0..5): the simulation refuses the model naming the muscle, as OpenSim's
    equilibrateMuscles throws ("Function has same sign at bounds")."""
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, MuscleSimulationError
    path = tmp_path / "slack.osim"
    build_degroote_arm(osim, path, rigid=False)
    bad = tmp_path / "too_long_tendon.osim"
    with_element_text(path, "tendon_slack_length", "2.0", bad)  # the first muscle's tendon: 2 m
    model = osim.Model(str(bad))
    state = model.initSystem()
    with pytest.raises(Exception, match="same sign"):
        model.equilibrateMuscles(state)
    with pytest.raises(MuscleSimulationError, match="'flexor': no fibre equilibrium"):
        MuscleDrivenSystem(load_osim(bad)).initial_state()


def test_static_optimization_equals_opensims_with_its_fibre_direction_force(osim, tmp_path):
    """OpenSim's StaticOptimization on DeGroote muscles (rigid tendons), 21 frames of a 0.5 s motion of the arm.

    OpenSim models a tension as a × f_opt with f_opt = calcInextensibleTendonActiveFiberForce(s, 1), which for this
    muscle returns the active *fibre* force F_max f_L f_V (DeGrooteFregly2016Muscle.cpp: mdi.activeFiberForce) —
    not projected on the tendon as Thelen2003's and Millard2012's are.  The package's A is along the tendon
    (F_max f_L f_V cos φ); divided by cos φ it equals OpenSim's f_opt, and the force-sharing problem built with it
    from OpenSim's moment arms and inverse dynamics gives OpenSim's activations.  With the package's own A the
    pennated elbow flexor is the one that differs (by its cos φ in force)."""
    from opensim_builders import opensim_static_optimization, opensim_static_optimization_inputs
    from osim_emb.simulation.static_optimization import muscle_force_coefficients, static_optimization
    path = tmp_path / "degroote_arm.osim"
    build_degroote_arm(osim, path, rigid=True)
    coef = {"shoulder_coord_0": (0.4, 2.0, -10.0, 8.0), "elbow_coord_0": (0.8, 1.2, 0.5, -1.6)}
    times = np.linspace(0.0, 0.5, 21)
    names, act, frc = opensim_static_optimization(osim, path, tmp_path / "so", times, 1e-8, coef)
    mnames, R, L, V, tau, fopt = opensim_static_optimization_inputs(osim, path, names, times, coef)
    model = load_osim(str(path))
    by_name = {m.name: m.parameters for m in model.muscles}
    ours = [by_name[n] for n in mnames]
    A, _ = muscle_force_coefficients(ours, L, V)
    cphi = np.column_stack([m.rigid_tendon(L[:, j], V[:, j]).cos_pennation for j, m in enumerate(ours)])
    rel = np.abs(A / cphi - fopt).max() / np.abs(fopt).max()
    assert rel < 1e-12
    lo = np.array([m.min_control for m in ours])
    hi = np.array([m.max_control for m in ours])
    res = static_optimization(R, tau, A / cphi, None, lower=lo, upper=hi)
    a_os = act[mnames].to_numpy()
    da = np.abs(res.activations - a_os).max()
    df = np.abs(res.forces - frc[mnames].to_numpy()).max() / np.abs(frc[mnames].to_numpy()).max()
    print(f"[agreement] DeGroote arm StaticOptimization: f_opt rel {rel:.2e}; activations {da:.2e}, "
          f"forces {df:.2e} of max; elbow flexor cos(phi) down to {cphi.min():.4f}")
    assert da < 1e-6 and df < 1e-6
    assert (a_os > 0.03).any(axis=0).all()  # every muscle works somewhere in the motion
    along = static_optimization(R, tau, A, None, lower=lo, upper=hi).activations
    differs = np.abs(along - a_os).max(axis=0) > 1e-4
    assert list(np.array(mnames)[differs]) == ["elbow_flexor"]


def test_differing_time_constants_are_named_since_opensim_uses_the_first_ones(osim, tmp_path):
    """OpenSim 4.6 keeps a DeGroote muscle's time constants in function-static variables: with the elbow flexor's
    activation time constant changed to 0.04 s, OpenSim's Manager still runs it with the 0.015 s of the first
    muscle it evaluated — its activations equal the package's on the unchanged model, and differ from the
    package's on the changed one.  The comparison names the muscles concerned."""
    from osim_emb.opensim.muscle_simulation import largest_differences, opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import ExcitationSpec, simulate_muscles
    same = tmp_path / "arm_defaults.osim"
    build_degroote_arm(osim, same, rigid=True)
    m = osim.Model(str(same))
    osim.DeGrooteFregly2016Muscle.safeDownCast(m.updComponent("/forceset/elbow_flexor")).set_activation_time_constant(
        0.04)
    changed = tmp_path / "arm_changed.osim"
    m.printToXML(str(changed))
    exc = {"elbow_flexor": ExcitationSpec.parse("step:0.0:0.02:0.2:0.9"), "flexor": ExcitationSpec.parse("0.3")}
    times = np.linspace(0.0, 0.06, 7)
    ref = opensim_muscle_simulation(changed, times, exc, accuracy=1e-9)
    assert len(ref["notes"]) == 1 and "elbow_flexor" in ref["notes"][0] and "0.015" in ref["notes"][0]
    ours = {p: simulate_muscles(load_osim(str(p)), times[-1], exc, t_eval=times, method="DOP853", rtol=1e-10,
                                atol=1e-12) for p in (same, changed)}
    as_defined, as_opensim_runs = (largest_differences(ours[p], ref)["activation"] for p in (changed, same))
    print(f"[agreement] DeGroote time constants: OpenSim's activations vs the package's on the changed model "
          f"{as_defined:.2e}, on the model with the first muscle's constants everywhere {as_opensim_runs:.2e}")
    assert as_defined > 1e-2 and as_opensim_runs < 1e-8
    assert opensim_muscle_simulation(same, times[:2], exc, accuracy=1e-9)["notes"] == []


@pytest.mark.parametrize("rigid", [False, True], ids=["elastic_tendon", "rigid_tendon"])
def test_states_file_holds_opensims_states_of_degroote_muscles(osim, tmp_path, rigid):
    """OpenSim's state of an elastic DeGroote tendon is the normalized tendon force, and a rigid tendon has no
    fibre-length state: simulate-muscles' file gives StatesTrajectory every state (none missing), and the fibre
    length OpenSim derives from the file's states is the file's."""
    from osim_emb.cli.main import main
    path, out = tmp_path / "degroote_arm.osim", tmp_path / "states.sto"
    build_degroote_arm(osim, path, rigid=rigid)
    assert main(["simulate-muscles", str(path), "-o", str(out), "--excitation", "flexor=0.5", "--t-end", "0.05",
                 "--samples", "6", "-q"]) == 0
    model = osim.Model(str(path))
    model.initSystem()
    table = osim.TimeSeriesTable(str(out))
    states = osim.StatesTrajectory.createFromStatesTable(model, table, False, True)  # none missing
    names = [model.getStateVariableNames().get(i) for i in range(model.getNumStateVariables())]
    assert sum(n.endswith("normalized_tendon_force") for n in names) == (0 if rigid else 3)
    for k in (0, 5):
        state = states.get(k)
        for n in names:
            assert model.getStateVariableValue(state, n) == table.getDependentColumn(n)[k], n
        model.realizeDynamics(state)
        for name in ("flexor", "extensor", "elbow_flexor"):
            muscle = osim.DeGrooteFregly2016Muscle.safeDownCast(model.getForceSet().get(name))
            assert abs(muscle.getFiberLength(state) - table.getDependentColumn(f"/forceset/{name}|fiber_length")[k]) \
                < 1e-11, name
