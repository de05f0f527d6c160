"""The passive forces OpenSim applies without a path (contact, springs, bushings, prescribed forces;
:mod:`osim_emb.simulation.force_elements`) against OpenSim 4.6 on a model built here with every kind:
accelerations at random states, Simbody's stop at a pulling contact, the compiled kernels against the Python laws,
a trajectory against OpenSim's Manager, and what the command line says."""

from __future__ import annotations

import math

import numpy as np
import pytest

from opensim_builders import body_xyz_offset

from osim_emb import forward_dynamics, load_osim, simulate
from osim_emb.core.kinematics import forward_kinematics
from osim_emb.core.speeds import speed_accelerations
from osim_emb.simulation import force_elements as fe

SPHERES = {"heel": (0.12, -0.1, 0.03), "toe": (-0.1, -0.1, -0.04)}


FEET_XML = """<HuntCrossleyForce name="feet">
  <HuntCrossleyForce::ContactParametersSet name="contact_parameters"><objects>
    <HuntCrossleyForce::ContactParameters><geometry>floor</geometry><stiffness>4e6</stiffness>
      <dissipation>0.9</dissipation><static_friction>0.8</static_friction><dynamic_friction>0.6</dynamic_friction>
      <viscous_friction>0.3</viscous_friction></HuntCrossleyForce::ContactParameters>
    <HuntCrossleyForce::ContactParameters><geometry>heel toe</geometry><stiffness>1e6</stiffness>
      <dissipation>1.5</dissipation><static_friction>0.7</static_friction><dynamic_friction>0.5</dynamic_friction>
      <viscous_friction>0.2</viscous_friction></HuntCrossleyForce::ContactParameters>
  </objects><groups /></HuntCrossleyForce::ContactParametersSet>
  <transition_velocity>0.05</transition_velocity>
</HuntCrossleyForce>
"""


def build_contact_model(osim, path, *, extra_geometry: bool = False, compiled_only: bool = False,
                        planar: bool = False):
    """ground -free- block -pin- arm.  Contact: a ground half space (normal +y), the block's heel and toe spheres
    in one HuntCrossleyForce (the floor stiffer than the spheres, friction), a third sphere on the arm with a
    SmoothSphereHalfSpaceForce; a PointToPointSpring ground-block, a BushingForce between offset frames on the
    ground and the arm, a PrescribedForce on the arm (force in the arm's frame at a ground point, a torque), a
    SpringGeneralizedForce on the pin.  ``extra_geometry``: a ContactEllipsoid named by the HuntCrossleyForce;
    ``compiled_only``: without the prescribed force (the law evaluated from Python);
    ``planar``: the block on a PlanarJoint (rz, tx, ty) instead of the FreeJoint."""
    m = osim.Model()
    m.setName("contact_block")
    g = m.getGround()
    block = osim.Body("block", 2.0, osim.Vec3(0.01, 0.0, -0.02), osim.Inertia(0.02, 0.03, 0.025, 0.001, 0.0, 0.002))
    arm = osim.Body("arm", 0.7, osim.Vec3(0.0, 0.15, 0.0), osim.Inertia(0.006, 0.001, 0.006))
    m.addBody(block)
    m.addBody(arm)
    joint = osim.PlanarJoint if planar else osim.FreeJoint
    free = joint("free", g, osim.Vec3(0), osim.Vec3(0), block, osim.Vec3(0), osim.Vec3(0))
    pin = osim.PinJoint("pin", block, osim.Vec3(0.0, 0.05, 0.0), osim.Vec3(0.2, 0.0, 0.0), arm, osim.Vec3(0),
                        osim.Vec3(0.2, 0.0, 0.0))
    m.addJoint(free)
    m.addJoint(pin)
    free.upd_coordinates(2 if planar else 4).setDefaultValue(0.12)  # ty: the spheres just above the floor
    floor = osim.ContactHalfSpace(osim.Vec3(0), osim.Vec3(0, 0, -math.pi / 2), g, "floor")
    m.addContactGeometry(floor)
    for name, loc in SPHERES.items():
        m.addContactGeometry(osim.ContactSphere(0.03 if name == "heel" else 0.025, osim.Vec3(*loc), block, name))
    tip = osim.ContactSphere(0.02, osim.Vec3(0.1, -0.12, 0.0), arm, "tip")
    m.addContactGeometry(tip)
    smooth = osim.SmoothSphereHalfSpaceForce("tip_contact", tip, floor)
    smooth.set_stiffness(2e6)
    smooth.set_dissipation(1.2)
    smooth.set_static_friction(0.8)
    smooth.set_dynamic_friction(0.6)
    smooth.set_viscous_friction(0.4)
    smooth.set_transition_velocity(0.1)
    m.addForce(smooth)
    spring = osim.PointToPointSpring(g, osim.Vec3(0.3, 0.5, 0.1), block, osim.Vec3(0.05, 0.02, 0.0), 80.0, 0.25)
    spring.setName("tether")
    m.addForce(spring)
    bushing = osim.BushingForce("wrist", g, body_xyz_offset(osim, (0.1, -0.2, 0.3), (0.1, 0.4, -0.05)), arm,
                                body_xyz_offset(osim, (-0.1, 0.05, 0.2), (0.0, 0.25, 0.02)), osim.Vec3(30, 40, 50),
                                osim.Vec3(2.0, 3.0, 1.5), osim.Vec3(0.5, 0.6, 0.7), osim.Vec3(0.05, 0.04, 0.03))
    m.addForce(bushing)
    coil = osim.SpringGeneralizedForce("pin_coord_0")
    coil.setName("coil")
    coil.setStiffness(4.0)
    coil.setRestLength(0.3)
    coil.setViscosity(0.2)
    m.addForce(coil)
    if compiled_only:
        m.finalizeConnections()
        m.printToXML(str(path))
        text = path.read_text()
        path.write_text(text.replace('<SmoothSphereHalfSpaceForce name="tip_contact">', FEET_XML
                                     + '<SmoothSphereHalfSpaceForce name="tip_contact">', 1))
        return
    push = osim.PrescribedForce("push", arm)
    pulse = osim.SimmSpline()  # functions of time the kernels evaluate: a spline, a broken line, polynomials
    for x, y in ((0.0, 1.0), (0.05, 2.0), (0.1, 3.0), (0.18, 0.5), (0.25, -2.0), (0.32, -1.0), (0.4, 0.2),
                 (0.5, 0.5), (0.7, 1.5), (1.0, 2.0)):  # 10 knots: its kernel parameters fill two table rows
        pulse.addPoint(x, y)
    push.setForceFunctions(pulse, osim.Constant(-2.0), osim.LinearFunction(-1.5, 0.5))
    depth = osim.PiecewiseLinearFunction()
    for x, y in ((0.0, 0.0), (0.2, 0.03), (0.6, -0.02)):
        depth.addPoint(x, y)
    push.setPointFunctions(osim.Constant(0.05), osim.LinearFunction(0.1, 0.2), depth)
    push.setTorqueFunctions(osim.Constant(0.2), osim.LinearFunction(-0.3, 0.1), osim.Constant(0.05))
    push.set_forceIsGlobal(False)
    push.set_pointIsGlobal(True)
    m.addForce(push)
    m.finalizeConnections()
    m.printToXML(str(path))
    text = path.read_text()  # the floor stiffer than the spheres: two parameter sets (not in the Python API)
    path.write_text(text.replace('<SmoothSphereHalfSpaceForce name="tip_contact">', FEET_XML
                                 + '<SmoothSphereHalfSpaceForce name="tip_contact">', 1))
    if extra_geometry:  # a geometry the package has no contact law for
        text = path.read_text()
        text = text.replace("<ContactSphere name=\"tip\">", "<ContactEllipsoid name=\"egg\"><socket_frame>/bodyset/arm"
                            "</socket_frame><radii>0.02 0.03 0.04</radii></ContactEllipsoid>\n"
                            "<ContactSphere name=\"tip\">", 1)
        text = text.replace("<geometry>heel toe</geometry>", "<geometry>heel toe egg</geometry>", 1)
        path.write_text(text)


@pytest.fixture(scope="module")
def contact_model(osim, tmp_path_factory):
    path = tmp_path_factory.mktemp("contact") / "contact_block.osim"
    build_contact_model(osim, path)
    return path


def _opensim_accelerations(osim, path, model, states, t=0.0):
    from osim_emb.opensim.bridge import OpenSimReference
    ref = OpenSimReference(str(path), model)
    ref.state.setTime(t)
    idx = ref.speed_indices()
    out = []
    for q, qd in states:
        ref.set_configuration(q, check=None)
        ref.set_rates(q, qd)
        out.append(ref.accelerations()[[idx[c] for c in model.coordinate_names]])
    return np.array(out)


def _package_accelerations(model, elements, states, t=0.0):
    q = np.array([s[0] for s in states])
    qd = np.array([s[1] for s in states])
    tau = fe.force_element_forces(model, elements, np.full(len(q), t), q, qd)
    return speed_accelerations(model, q, qd, forward_dynamics(model, q, qd, tau))


def _states(model, n, seed):
    rng = np.random.default_rng(seed)
    q = model.default_q + rng.uniform(-0.3, 0.3, (n, model.n_q))
    q[:, model.coordinate_index("free_coord_4")] = rng.uniform(0.04, 0.16, n)  # ty: some spheres in contact
    qd = rng.uniform(-0.8, 0.8, (n, model.n_q))
    return list(zip(q, qd))


def test_every_force_element_equals_opensims_accelerations(osim, contact_model):
    """q̈ of M q̈ = G − N q̇ + τ(force elements) equals Simbody's u̇ at 40 states, in and out of contact, at t = 0.4 s
    (the prescribed functions of time), to 1e-10 of their size; each kind of force moves the model."""
    model = load_osim(contact_model)
    elements = fe.model_force_elements(model)
    kinds = sorted(type(law).__name__ for law in elements.laws)
    assert kinds == ["Bushing", "CoordinateSpring", "HuntCrossleyContact", "PointToPointSpring",
                     "PrescribedBodyForce", "SmoothSphereHalfSpaceContact"] and not elements.unapplied
    states = _states(model, 40, 1)
    ours = _package_accelerations(model, elements, states, 0.4)
    theirs = _opensim_accelerations(osim, contact_model, model, states, 0.4)
    scale = np.abs(theirs).max(axis=1, keepdims=True)
    err = (np.abs(ours - theirs) / np.maximum(scale, 1.0)).max()
    kin = forward_kinematics(model, np.array([s[0] for s in states]), order=1)
    hc = fe.ForceElements(tuple(law for law in elements.laws if isinstance(law, fe.HuntCrossleyContact)))
    touching = sum(bool(np.abs(w.force).max() > 0) for w in fe.force_element_wrenches(
        model, kin, np.array([s[1] for s in states]), 0.4, hc))
    print(f"[agreement] force elements: max |u̇ − u̇_OpenSim| / max(1, |u̇|) = {err:.1e} over 40 states "
          f"({touching} contact wrenches)")
    assert err < 1e-10 and touching >= 10
    for law in elements.laws:  # each element changes the accelerations
        alone = _package_accelerations(model, fe.ForceElements(tuple(x for x in elements.laws if x is not law)),
                                       states, 0.4)
        assert np.abs(alone - ours).max() > 1e-3, law.name


def test_a_pulling_contact_stops_the_rest_of_its_set_as_in_simbody(osim, contact_model):
    """Both block spheres in the floor, the first contact of Simbody's order separating fast enough that its
    Hunt-Crossley force would pull: Simbody gives that contact and the later ones no force (its ``return``), the
    package the same (OpenSim's accelerations to 1e-10); without that rule the second sphere would push."""
    model = load_osim(contact_model)
    elements = fe.model_force_elements(model)
    hc = next(law for law in elements.laws if isinstance(law, fe.HuntCrossleyContact))
    q = model.default_q.copy()
    q[model.coordinate_index("free_coord_4")] = 0.095  # both spheres 5-9 mm deep
    kin = forward_kinematics(model, q[None], order=1)
    poses = [kin.transforms[0, model.body(s.body).frame] @ np.asarray(model.body(s.body).frame_to_body) @ s.transform
             if s.body != "ground" else s.transform for s in hc.surfaces]
    contacts = fe._hunt_crossley_contacts(hc, poses)
    assert len(contacts) == 2
    first = hc.surfaces[contacts[0][1]].name
    qd = np.zeros(model.n_q)
    qd[model.coordinate_index("free_coord_4")] = 0.2  # the block rises
    # spin about z so that the first sphere of Simbody's order rises fastest (> 1/(1.5 c) = 0.53 m/s) and the
    # second one sinks
    x_first = SPHERES[first][0]
    qd[model.coordinate_index("free_coord_2")] = 6.0 / x_first
    wrenches = fe.force_element_wrenches(model, kin, qd[None], 0.0, fe.ForceElements((hc,)))
    assert wrenches == []  # the first would pull: Simbody stops there
    ours = _package_accelerations(model, elements, [(q, qd)])
    theirs = _opensim_accelerations(osim, contact_model, model, [(q, qd)])
    assert np.abs(ours - theirs).max() / max(1.0, np.abs(theirs).max()) < 1e-10
    # the second contact alone (the first sphere removed) would push
    import dataclasses
    keep = [i for i, s in enumerate(hc.surfaces) if s.name != first]
    alone = dataclasses.replace(hc, **{f: tuple(getattr(hc, f)[i] for i in keep) for f in (
        "surfaces", "stiffness", "dissipation", "static_friction", "dynamic_friction", "viscous_friction")})
    pushed = fe.force_element_wrenches(model, kin, qd[None], 0.0, fe.ForceElements((alone,)))
    assert pushed and np.abs(pushed[0].force).max() > 1.0


def test_compiled_kernels_equal_the_python_laws(contact_model):
    """The compiled right-hand side with the force-element table (contact set, smooth contact, spring, bushing)
    (and the coordinate spring and the prescribed force's spline, broken line and polynomials of time) equals the
    numpy route to 1e-12 of q̈'s size at times across the spline's knots."""
    from osim_emb.core.dynamics import ode_rhs
    model = load_osim(contact_model)
    elements = fe.model_force_elements(model)
    table, rest = fe.compiled_rows(model, elements)
    assert not rest.laws
    from osim_emb.core import compiled_kernels as K
    header = table[table[:, 0] == K.EL_PRESCRIBED][0]
    assert (table[:, 0] == K.EL_CURVE).sum() == 9 and header[19] > 1 + 2 * 9  # the spline spans two data rows
    rhs = ode_rhs(model, elements=table)
    worst = 0.0
    for t, (q, qd) in zip(np.linspace(0.0, 0.9, 30), _states(model, 30, 7)):
        tau = fe.force_element_forces(model, elements, [t], q[None], qd[None])
        expected = forward_dynamics(model, q, qd, tau)[0]
        got = rhs(t, np.concatenate([q, qd]))[model.n_q:]
        worst = max(worst, np.abs(got - expected).max() / max(1.0, np.abs(expected).max()))
    print(f"[agreement] compiled force elements against the Python laws: {worst:.1e}")
    assert worst < 1e-12


def test_simulation_with_contact_equals_opensims_manager(osim, contact_model):
    """The block dropped on the floor for 0.3 s (bounces, friction, the arm swinging on its bushing and spring)
    by ``simulate`` equals OpenSim's Manager at accuracy 1e-9 to 1e-7 rad/m."""
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    model = load_osim(contact_model)
    times = np.linspace(0.0, 0.3, 31)
    ours = simulate(model, 0.3, t_eval=times, rtol=1e-11, atol=1e-11)
    ref = opensim_muscle_simulation(str(contact_model), times, {}, accuracy=1e-9)
    theirs = ref["q"][:, [ref["names"].index(c) for c in model.coordinate_names]]
    diff = np.abs(ours[model.coordinate_names].to_numpy() - theirs).max()
    still = simulate(model, 0.3, t_eval=times, model_forces=False)
    compiled = simulate(model, 0.3, t_eval=times, method="RK45-jit", rtol=1e-10, atol=1e-11)
    diff_jit = np.abs(compiled[model.coordinate_names].to_numpy() - theirs).max()
    print(f"[agreement] contact drop, 0.3 s: max |q − q_OpenSim| = {diff:.1e} (DOP853), {diff_jit:.1e} (RK45-jit, "
          "the prescribed force's functions of time in the kernel)")
    assert diff < 1e-7 and diff_jit < 1e-7
    assert np.abs(still[model.coordinate_names].to_numpy() - theirs).max() > 1e-2  # the forces matter


def test_unevaluated_geometry_and_the_command_line_say_what_they_leave_out(osim, tmp_path, capsys):
    """A HuntCrossleyForce naming a ContactEllipsoid is left out with its reason (simulate says so, and still
    applies the other elements); the command line names what it applies at -v and leaves everything out with
    --no-model-forces."""
    from osim_emb.cli.main import main
    path = tmp_path / "egg.osim"
    build_contact_model(osim, path, extra_geometry=True)
    model = load_osim(path)
    elements = fe.model_force_elements(model)
    assert [u.name for u in elements.unapplied] == ["feet"]
    assert "ContactEllipsoid" in elements.unapplied[0].reason
    assert len(elements.laws) == 5
    code = main(["-v", "simulate", str(path), "-o", str(tmp_path / "egg.sto"), "--t-end", "0.01", "--samples", "3"])
    err = capsys.readouterr().err
    assert code == 0
    assert "simulate does not apply HuntCrossleyForce 'feet': its contact geometry 'egg' is a ContactEllipsoid" in err
    assert "simulate applies the model's 1 SmoothSphereHalfSpaceContact, 1 PointToPointSpring, 1 Bushing" in err
    code = main(["simulate", str(path), "-o", str(tmp_path / "bare.sto"), "--t-end", "0.01", "--samples", "3",
                 "--no-model-forces"])
    err = capsys.readouterr().err
    assert code == 0 and "SmoothSphereHalfSpaceForce force(s): tip_contact" in err and "BushingForce" in err
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    applied = next(line for line in out.splitlines() if line.startswith("passive forces the simulations apply"))
    kept = next(line for line in out.splitlines() if line.startswith("other forces (kept as data, not applied)"))
    assert "tip_contact (SmoothSphereHalfSpaceForce)" in applied and "wrist (BushingForce)" in applied
    assert "feet (HuntCrossleyForce: its contact geometry 'egg' is a ContactEllipsoid" in kept
    assert "ignored ContactSphere 'tip'" not in out  # the applied contact's surfaces are not called ignored


def test_malformed_elements_are_left_out_with_file_element_and_reason(osim, tmp_path):
    """A HuntCrossleyForce naming a geometry that does not exist and a BushingForce with a non-numeric stiffness:
    the model still loads (its kinematics do not need them); each element is left out, its reason naming the file,
    line and element (OpenSim would refuse the file)."""
    path = tmp_path / "bad.osim"
    build_contact_model(osim, path)
    text = path.read_text().replace("<geometry>heel toe</geometry>", "<geometry>heel sole</geometry>", 1)
    text = text.replace("<translational_stiffness>30 40 50</translational_stiffness>",
                        "<translational_stiffness>30 forty 50</translational_stiffness>", 1)
    path.write_text(text)
    model = load_osim(path)
    elements = fe.model_force_elements(model)
    reasons = {u.name: u.reason for u in elements.unapplied}
    assert set(reasons) == {"feet", "wrist"}
    assert str(path) in reasons["feet"] and "HuntCrossleyForce 'feet': contact geometry 'sole' does not exist" \
        in reasons["feet"]
    assert str(path) in reasons["wrist"] and "translational_stiffness" in reasons["wrist"]
    assert len(elements.laws) == 4


def test_compiled_integrator_runs_a_model_without_muscles(osim, tmp_path):
    """simulate_muscles on the contact block without muscles (contact sets, smooth contact, springs, bushing in the
    compiled table): the compiled RK45 integrator runs it (no SciPy fallback) and equals OpenSim's Manager to 1e-7
    over 0.3 s; so does ``simulate`` with the compiled integrators (RK45-jit, BDF-jit), and with a prescribed
    force whose function the kernels do not evaluate (a MultiplierFunction: from Python) it refuses them, saying
    why."""
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import simulate_muscles
    path = tmp_path / "compiled_block.osim"
    build_contact_model(osim, path, compiled_only=True)
    model = load_osim(path)
    times = np.linspace(0.0, 0.3, 31)
    ours = simulate_muscles(model, 0.3, {}, t_eval=times, method="RK45-jit", rtol=1e-10, atol=1e-11)
    ref = opensim_muscle_simulation(str(path), times, {}, accuracy=1e-9)
    theirs = ref["q"][:, [ref["names"].index(c) for c in model.coordinate_names]]
    diff = np.abs(ours[model.coordinate_names].to_numpy() - theirs).max()
    print(f"[agreement] contact block without muscles, RK45-jit: max |q − q_OpenSim| = {diff:.1e}")
    assert ours.attrs["method"] == "RK45-jit" and diff < 1e-7
    for method, rtol in (("RK45-jit", 1e-10), ("BDF-jit", 1e-10)):
        passive = simulate(model, 0.3, t_eval=times, method=method, rtol=rtol, atol=1e-11)
        assert list(passive.columns) == list(simulate(model, 0.01, n_output=2).columns)
        diff = np.abs(passive[model.coordinate_names].to_numpy() - theirs).max()
        print(f"[agreement] simulate --method {method}: max |q − q_OpenSim| = {diff:.1e} "
              f"({passive.attrs['nfev']} right-hand sides)")
        assert diff < 1e-7
    with pytest.raises(ValueError, match="generalized_forces given from Python"):
        simulate(model, 0.1, method="RK45-jit", generalized_forces=lambda t, q, qd: np.zeros(model.n_q))
    full = tmp_path / "prescribed_block.osim"
    build_contact_model(osim, full)
    text = full.read_text()
    head, tail = text.split('<FunctionSet name="forceFunctions">', 1)
    constant = tail[tail.index("<Constant>"):tail.index("</Constant>") + len("</Constant>")]
    full.write_text(head + '<FunctionSet name="forceFunctions">' + tail.replace(
        constant, f"<MultiplierFunction><function>{constant}</function><scale>1.5</scale></MultiplierFunction>", 1))
    assert [type(x).__name__ for x in fe.compiled_rows(load_osim(full), fe.model_force_elements(
        load_osim(full)))[1].laws] == ["PrescribedBodyForce"]
    with pytest.raises(ValueError, match="cannot run contact_block: the model's 1 PrescribedBodyForce"):
        simulate(load_osim(full), 0.1, method="BDF-jit")


def test_inverse_dynamics_applies_the_force_elements_as_opensims_tool(osim, tmp_path, capsys):
    """The planar contact block pressed into the floor along a quadratic motion (both tools' splines exact):
    `inverse-dynamics` against OpenSim's InverseDynamicsTool (forces_to_exclude Muscles: contact, bushing, spring,
    prescribed force and coordinate spring applied) at 21 frames; with the elements excluded by name the two differ
    by the contact's hundreds of newtons."""
    from opensim_builders import T, read_sto, write_motion_file
    from osim_emb.cli.main import main
    from osim_emb.opensim.static_optimization import opensim_inverse_dynamics
    path = tmp_path / "planar_block.osim"
    build_contact_model(osim, path, planar=True)
    names = ["free_coord_0", "free_coord_1", "free_coord_2", "pin_coord_0"]
    motion = write_motion_file(tmp_path / "press.mot", names,
                               {"free_coord_0": (0.05, 0.2, -0.1), "free_coord_1": (0.0, 0.3, 0.0),
                                "free_coord_2": (0.125, -0.04, 0.0), "pin_coord_0": (0.3, 0.5, -0.2)}, T[::2])
    ref = opensim_inverse_dynamics(path, motion, tmp_path / "opensim")
    out = tmp_path / "ours.sto"
    assert main(["-v", "inverse-dynamics", str(path), str(motion), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "inverse-dynamics applies the model's 1 HuntCrossleyContact, 1 SmoothSphereHalfSpaceContact" in err
    ours = read_sto(out)
    cols = [c for c in ours.columns if c != "time"]
    scale = np.abs(ref[cols].to_numpy()).max()
    d = np.abs(ours[cols].to_numpy() - ref[cols].to_numpy()).max()
    bare = tmp_path / "bare.sto"
    assert main(["inverse-dynamics", str(path), str(motion), "-o", str(bare), "--exclude-forces",
                 "feet,tip_contact,tether,wrist,push,coil"]) == 0
    effect = np.abs(read_sto(bare)[cols].to_numpy() - ref[cols].to_numpy()).max()
    print(f"[agreement] inverse dynamics with contact, bushing, springs, prescribed force vs OpenSim's tool: "
          f"{d:.1e} of {scale:.0f} (the elements' effect {effect:.0f})")
    assert d < 1e-8 * scale and effect > 100.0


def test_simulate_rejects_overflowing_trial_steps_and_stops_a_motion_that_leaves_the_numbers():
    """A right-hand side that is not finite at a few trial states (as stiff contact overflows on a step too long)
    does not stop ``simulate``: the integrator rejects the step and the result equals the run that never saw them
    to the integrator's tolerance; one that stays non-finite stops it, saying so (after NONFINITE_TRIALS evaluations
    in a row, or when the integrator has shortened its step to nothing)."""
    from osim_emb import load_builtin
    from osim_emb.simulation.motions import NONFINITE_TRIALS, IntegrationBudgetExceeded
    model = load_builtin()
    calls = {"n": 0}

    def hiccup(t, q, qd):
        calls["n"] += 1
        return np.full(model.n_q, np.nan) if calls["n"] in (20, 21, 40) else np.zeros(model.n_q)
    ours = simulate(model, 0.1, n_output=3, generalized_forces=hiccup, model_forces=False)
    clean = simulate(model, 0.1, n_output=3, model_forces=False)
    names = model.coordinate_names
    assert np.abs(ours[names].to_numpy() - clean[names].to_numpy()).max() < 1e-8
    with pytest.raises(IntegrationBudgetExceeded, match=f"accelerations are not finite .({NONFINITE_TRIALS} "
                                                        "right-hand sides in a row|Required step size)"):
        simulate(model, 0.1, n_output=3, model_forces=False,
                 generalized_forces=lambda t, q, qd: np.full(model.n_q, np.nan) if t > 0.05 else np.zeros(model.n_q))
