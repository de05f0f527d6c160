"""Point, distance, point-on-line and weld constraint loops as closed-chain joint variables f(q)
(core.point_constraints), against OpenSim 4.6's API: kinematics (OpenSim's own constraint error at the package's
solution), lengths, moment arms, mass matrix and the constrained accelerations; the constraint derivatives against
finite differences; redundant equations; refusals."""

from __future__ import annotations

import numpy as np
import pytest

from osim_emb import load_osim
from osim_emb.core import kinematics as kin
from osim_emb.io import UnsupportedFeatureError
from opensim_builders import add_path_actuator, package_values, with_element_text

DEFAULTS = (0.6, -1.2, 0.3, 0.25)


def build_loop(osim, path, *, planar=False, unreachable=False, distance=False, line=False, tilt=0.0,
               coincident=False):
    """ground -pin z- crank -pin z- coupler -universal (x, y)- rocker, a point of the rocker held at the ground point
    where it is at DEFAULTS: a spatial loop of one degree of freedom, two paths.  ``planar``: the rocker on a third
    pin about z (the constraint's z equation is then redundant), its axis turned by ``tilt`` (rad) about x (nearly
    redundant); ``unreachable``: the ground point 2 m away; ``distance``: a ConstantDistanceConstraint instead, the
    point kept at its default distance from a ground point (three degrees of freedom; ``coincident``: that ground
    point where the tip is, the distance 0.2 m); ``line``: a
    PointOnLineConstraint, the point kept on a ground line through its default position (two)."""
    m = osim.Model()
    m.setName("spatial_loop")
    g = m.getGround()
    crank = osim.Body("crank", 1.0, osim.Vec3(0, -0.15, 0), osim.Inertia(0.01, 0.001, 0.01))
    coupler = osim.Body("coupler", 1.5, osim.Vec3(0, -0.25, 0), osim.Inertia(0.03, 0.002, 0.03))
    rocker = osim.Body("rocker", 1.2, osim.Vec3(0.01, -0.17, 0.01), osim.Inertia(0.012, 0.001, 0.012))
    for b in (crank, coupler, rocker):
        m.addBody(b)
    j1 = osim.PinJoint("j1", g, osim.Vec3(0), osim.Vec3(0), crank, osim.Vec3(0), osim.Vec3(0))
    j2 = osim.PinJoint("j2", crank, osim.Vec3(0, -0.3, 0), osim.Vec3(0), coupler, osim.Vec3(0), osim.Vec3(0))
    joint3 = osim.PinJoint if planar else osim.UniversalJoint
    j3 = joint3("j3", coupler, osim.Vec3(0, -0.5, 0), osim.Vec3(tilt, 0, 0), rocker, osim.Vec3(0), osim.Vec3(tilt, 0, 0))
    for j in (j1, j2, j3):
        m.addJoint(j)
    coords = [j1.upd_coordinates(0), j2.upd_coordinates(0)] + [j3.upd_coordinates(i) for i in range(j3.numCoordinates())]
    for c, v in zip(coords, DEFAULTS):
        c.setDefaultValue(v)
        c.setRangeMin(v - 1.0)
        c.setRangeMax(v + 1.0)
    tip = osim.Vec3(0.04, -0.35, 0.02)
    target = rocker.findStationLocationInGround(m.initSystem(), tip)
    if unreachable:
        target = osim.Vec3(2.0, 0.0, 0.0)
    if distance:
        anchor = target if coincident else osim.Vec3(0.2, 0.1, -0.05)
        gap = 0.2 if coincident else float(np.linalg.norm(target.to_numpy() - anchor.to_numpy()))
        closure = osim.ConstantDistanceConstraint(rocker, tip, g, anchor, gap)
    elif line:
        closure = osim.PointOnLineConstraint(g, osim.Vec3(0.3, -0.8, 0.5), target, rocker, tip)
    else:
        closure = osim.PointConstraint(rocker, tip, g, target)
    closure.setName("closure")
    m.addConstraint(closure)
    add_path_actuator(osim, m, "m1", [("ground", (0.1, 0.1, 0.0)), ("coupler", (0.02, -0.2, 0.0))])
    add_path_actuator(osim, m, "m2", [("crank", (0.03, -0.1, 0.01)), ("rocker", (0.0, -0.2, 0.02))])
    m.finalizeConnections()
    m.printToXML(str(path))


def _poses(model, n, seed, spread=0.3):
    q0 = np.array([c.default for c in model.coordinates])
    return q0 + np.random.default_rng(seed).uniform(-spread, spread, (n, model.n_q))


@pytest.mark.parametrize("kind", ["point", "distance", "line", "planar"])
def test_spatial_loop_equals_opensim(osim, tmp_path, kind, caplog):
    """PointConstraint: three of the four angles solved from the fourth; ConstantDistanceConstraint: one from the
    other three; PointOnLineConstraint: two from the other two; the planar loop's PointConstraint: two from the
    third, its z equation redundant (left out, with a warning).  OpenSim's constraint error at the package's
    solution is below 1e-9 at every pose (the bridge checks it); body transforms, lengths and moment arms equal
    OpenSim's (one degree of freedom: computeMomentArm's projection is the partial derivative) and minus the central
    difference of its getLength; the mass matrix J^T M J and OpenSim's constrained accelerations equal the
    package's."""
    import logging
    from osim_emb.opensim.bridge import OpenSimReference
    path = tmp_path / "loop.osim"
    build_loop(osim, path, distance=kind == "distance", line=kind == "line", planar=kind == "planar")
    with caplog.at_level(logging.WARNING):
        model = load_osim(path)
    assert ("1 of the loops' 3 constraint equations are redundant" in caplog.text) == (kind == "planar")
    if kind == "point":
        assert model.coordinate_names == ["j3_coord_1"]
        assert [d.name for d in model.dependent_coordinates] == ["j1_coord_0", "j2_coord_0", "j3_coord_0"]
    else:
        n_free = {"distance": 3, "line": 2, "planar": 1}[kind]
        assert model.n_q == n_free and len(model.dependent_coordinates) == 4 - n_free - (kind == "planar")
    q = _poses(model, 8, 1, {"point": 0.3, "planar": 0.3}.get(kind, 0.05))
    qd = np.random.default_rng(2).normal(size=q.shape)
    ours = package_values(model, q, qd)
    transforms, lengths, arms, terms, qdd = (ours[k] for k in ("transforms", "lengths", "arms", "terms", "qdd"))
    ref = OpenSimReference(str(path), model)
    ref_d = OpenSimReference(str(path), model, disable_forces=True)
    names = [mu.name for mu in model.muscles]
    h = 1e-6
    worst = dict.fromkeys(("transform", "length", "arm", "fd", "mass", "accel"), 0.0)
    for n in range(len(q)):
        ref.set_configuration(q[n])  # raises if OpenSim's constraint error exceeds 1e-9
        for k, body in enumerate(model.bodies):
            worst["transform"] = max(worst["transform"], np.abs(ref.body_transform(body.name) - transforms[n, k]).max())
        theirs = np.array([ref.muscle_length(m) for m in names])
        worst["length"] = max(worst["length"], np.abs(theirs - lengths[n]).max())
        if model.n_q == 1:
            arm = np.array([ref.moment_arm(m, model.coordinate_names[0]) for m in names])
            worst["arm"] = max(worst["arm"], np.abs(arm - arms[n, 0]).max())
        for k in range(model.n_q):
            step = np.eye(model.n_q)[k] * h
            ref.set_configuration(q[n] + step)
            up = np.array([ref.muscle_length(m) for m in names])
            ref.set_configuration(q[n] - step)
            down = np.array([ref.muscle_length(m) for m in names])
            worst["fd"] = max(worst["fd"], np.abs(-(up - down) / (2 * h) - arms[n, k]).max())
        r = ref_d.reduced_dynamics(q[n], qd[n])
        worst["mass"] = max(worst["mass"], np.abs(r["mass"] - terms.mass[n]).max() / np.abs(r["mass"]).max())
        worst["accel"] = max(worst["accel"], np.abs(r["qddot"] - qdd[n]).max() / max(1.0, np.abs(r["qddot"]).max()))
    assert worst["transform"] < 1e-14 and worst["length"] < 1e-14 and worst["arm"] < 1e-14, worst
    assert worst["fd"] < 1e-8 and worst["mass"] < 1e-12 and worst["accel"] < 1e-10, worst


def _tree_and_pair(osim, tmp_path, **variant):
    """The loop's spanning tree (every coordinate free) and its constraint as a PointPair."""
    from osim_emb.core import point_constraints as pc
    from osim_emb.io import read_osim
    from osim_emb.io.convert import _Converter
    path = tmp_path / "loop.osim"
    build_loop(osim, path, **variant)
    doc = read_osim(path)
    c = doc.point_constraints[0]
    tree = _Converter(doc, True, tree_only=True).build()
    frames = {b.name: (b.frame, b.frame_to_body) for b in tree.bodies}
    if c.type == "PointOnLineConstraint":  # the line in ground, the follower on the rocker
        from osim_emb.io.convert import _line_normals
        f2, t2 = frames[c.body2]
        return tree, pc.PointPair(c.name, 0, c.location1, f2, (t2 @ np.append(c.location2, 1.0))[:3],
                                  axes1=_line_normals(c.direction)), c
    f1, t1 = frames[c.body1]
    return tree, pc.PointPair(c.name, f1, (t1 @ np.append(c.location1, 1.0))[:3], 0, c.location2, c.distance), c


def _assert_jet_equals_central_differences(tree, pair, z, atol_jac, atol_hess, h=1e-6):
    """dg/dz and d2g/dz2 of point_constraint_jet against central differences of its g and dg/dz."""
    from osim_emb.core import point_constraints as pc
    _, gz, gzz = pc.point_constraint_jet(tree, [pair], z[None], 2)
    steps = np.eye(z.size) * h

    def diff(order, k):
        return np.stack([(pc.point_constraint_jet(tree, [pair], (z + e)[None], order)[k]
                          - pc.point_constraint_jet(tree, [pair], (z - e)[None], order)[k])[0] / (2 * h)
                         for e in steps], axis=order + 1)
    np.testing.assert_allclose(gz[0], diff(0, 0), rtol=0, atol=atol_jac)
    np.testing.assert_allclose(gzz[0], diff(1, 1), rtol=0, atol=atol_hess)


def test_constraint_derivatives_equal_finite_differences(osim, tmp_path):
    """g, dg/dz and d2g/dz2 of the loop's point pair from the tree's kinematics against central differences."""
    from osim_emb.core import point_constraints as pc
    tree, pair, _ = _tree_and_pair(osim, tmp_path)
    assert tree.n_q == 4
    assert np.abs(pc.point_constraint_jet(tree, [pair], np.array(DEFAULTS)[None], 0)[0]).max() < 1e-15
    _assert_jet_equals_central_differences(tree, pair, np.array(DEFAULTS) + 0.1, 1e-9, 1e-9)


def test_dependent_coordinates_chosen_by_the_user(osim, tmp_path):
    """Another choice of dependent coordinates is the same mechanism: at the configurations of the default choice,
    written in the other independent coordinate, every body is where it was; a wrong count or name is refused."""
    path = tmp_path / "loop.osim"
    build_loop(osim, path)
    auto = load_osim(path)
    chosen = load_osim(path, dependent_coordinates=["j1_coord_0", "j2_coord_0", "j3_coord_1"])
    assert chosen.coordinate_names == ["j3_coord_0"]
    q = _poses(auto, 5, 3)
    j3_0 = next(d for d in auto.dependent_coordinates if d.name == "j3_coord_0").function.evaluate(q, 0).value
    a = kin.body_transforms(auto, kin.forward_kinematics(auto, q, order=0))
    b = kin.body_transforms(chosen, kin.forward_kinematics(chosen, j3_0[:, None], order=0))
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    with pytest.raises(Exception, match="3 dependent coordinates needed"):
        load_osim(path, dependent_coordinates=["j1_coord_0"])
    with pytest.raises(Exception, match="not free coordinates"):
        load_osim(path, dependent_coordinates=["j1_coord_0", "j2_coord_0", "nope"])


def test_coordinate_free_to_satisfy_constraints_is_solved_as_opensim_assembles(osim, tmp_path):
    """OpenSim's assembler moves the coordinates marked ``is_free_to_satisfy_constraints`` and keeps the others at
    their values (opensim-core's knee_patella_ligament.osim marks the patella's coordinate).  The package makes
    the marked coordinate the dependent one even where QR would choose another, so its default start (the
    generalized coordinates at their defaults, the dependent solved from the loop) is OpenSim's assembled state,
    here with a default that violates the loop."""
    path = tmp_path / "loop.osim"
    build_loop(osim, path, distance=True)
    (picked,) = [d.name for d in load_osim(path).dependent_coordinates]
    names = ["j1_coord_0", "j2_coord_0", "j3_coord_0", "j3_coord_1"]
    marked = next(n for n in names if n != picked)
    m = osim.Model(str(path))
    m.getCoordinateSet().get(marked).set_is_free_to_satisfy_constraints(True)
    moved = m.getCoordinateSet().get(picked)
    moved.setDefaultValue(moved.getDefaultValue() + 0.05)
    marked_path = tmp_path / "marked.osim"
    m.printToXML(str(marked_path))
    model = load_osim(marked_path)
    assert [d.name for d in model.dependent_coordinates] == [marked]
    ref = osim.Model(str(marked_path))
    state = ref.initSystem()  # assembled
    theirs = {n: ref.getCoordinateSet().get(n).getValue(state) for n in names}
    q0 = model.default_q[None]
    ours = dict(zip(model.coordinate_names, q0[0]))
    ours[marked] = float(model.dependent_coordinate(marked).function.evaluate(q0, 0).value[0])
    assert abs(theirs[picked] - (DEFAULTS[names.index(picked)] + 0.05)) < 1e-8  # OpenSim kept it at its default
    assert abs(theirs[marked] - DEFAULTS[names.index(marked)]) > 1e-3  # and moved the marked one
    assert max(abs(ours[n] - theirs[n]) for n in names) < 1e-8, (ours, theirs)


def test_a_marked_coordinate_that_cannot_close_the_loop_alone_is_completed_by_qr(osim, tmp_path):
    """A PointConstraint (three equations) with one coordinate marked free: the marked one is dependent and the
    other two are chosen in the complement of its column of dg/dz, so that dg/df is nonsingular (its smallest
    singular value against the largest, checked here with numpy); the model is the same mechanism as the default
    choice: at that choice's poses, written in the new generalized coordinate, every body is where it was."""
    path = tmp_path / "loop.osim"
    build_loop(osim, path)
    auto = load_osim(path)
    (generalized,) = auto.coordinate_names
    m = osim.Model(str(path))
    m.getCoordinateSet().get(generalized).set_is_free_to_satisfy_constraints(True)
    marked_path = tmp_path / "marked.osim"
    m.printToXML(str(marked_path))
    marked = load_osim(marked_path)
    dependent = [d.name for d in marked.dependent_coordinates]
    assert generalized in dependent and len(dependent) == 3
    (other,) = marked.coordinate_names
    from osim_emb.core import point_constraints as pc
    tree, pair, _ = _tree_and_pair(osim, tmp_path)
    names = tree.coordinate_names
    jac = pc.point_constraint_jet(tree, [pair], np.array(DEFAULTS)[None], 1)[1][0]
    sv = np.linalg.svd(jac[:, [names.index(n) for n in dependent]], compute_uv=False)
    assert sv[-1] > 1e-3 * sv[0]
    q = _poses(auto, 5, 3)
    value = next(d for d in auto.dependent_coordinates if d.name == other).function.evaluate(q, 0).value
    a = kin.body_transforms(auto, kin.forward_kinematics(auto, q, order=0))
    b = kin.body_transforms(marked, kin.forward_kinematics(marked, value[:, None], order=0))
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)


#: the spatial loop's tree coordinates (build_loop), in the order of DEFAULTS
LOOP_COORDINATES = ["j1_coord_0", "j2_coord_0", "j3_coord_0", "j3_coord_1"]


def _moved_loop_defaults(osim, tmp_path, kind: str, shift) -> tuple:
    """The spatial loop (``kind`` "point" or "distance") with its defaults moved by ``shift`` (rad, in the order of
    LOOP_COORDINATES): (the package's model, OpenSim's model, its state after initSystem, the package's default
    configuration and OpenSim's assembled one, each (4,) in that order)."""
    path = tmp_path / "loop.osim"
    build_loop(osim, path, distance=(kind == "distance"))
    m = osim.Model(str(path))
    for name, dv in zip(LOOP_COORDINATES, shift):
        c = m.getCoordinateSet().get(name)
        c.setDefaultValue(c.getDefaultValue() + dv)
    moved = tmp_path / "moved.osim"
    m.printToXML(str(moved))
    model = load_osim(moved)
    ref = osim.Model(str(moved))
    state = ref.initSystem()
    theirs = np.array([ref.getCoordinateSet().get(n).getValue(state) for n in LOOP_COORDINATES])
    q0 = model.default_q[None]
    ours = dict(zip(model.coordinate_names, q0[0]))
    for d in model.dependent_coordinates:
        ours[d.name] = float(d.function.evaluate(q0, 0).value[0])
    return model, ref, state, np.array([ours[n] for n in LOOP_COORDINATES]), theirs


def test_default_configuration_off_the_loop_is_assembled_as_opensim_does(osim, tmp_path):
    """Defaults that violate the loop (two of them moved by 0.03 rad, no coordinate marked free): OpenSim's
    initSystem moves every coordinate to the nearest configuration on the loop (least squares, weight 1 each); the
    package's default configuration (generalized coordinates' defaults, the dependent ones solved) is that one, and
    the conversion log says which defaults moved."""
    model, _, _, ours, theirs = _moved_loop_defaults(osim, tmp_path, "distance", (0.03, 0.03, 0.0, 0.0))
    for d in model.dependent_coordinates:  # the solved values are the dependent coordinates' defaults
        assert d.default == pytest.approx(ours[LOOP_COORDINATES.index(d.name)], abs=1e-12)
    defaults = np.array(DEFAULTS) + [0.03, 0.03, 0.0, 0.0]
    assert np.abs(theirs - defaults).max() > 1e-3  # OpenSim moved them
    assert np.abs(ours - theirs).max() < 1e-8, (ours, theirs)
    assert any("assembled as OpenSim's initSystem does" in line for line in model.extras["conversion"])


@pytest.mark.parametrize("kind, shift", [("distance", (0.6, -0.5, 0.0, 0.0)), ("distance", (0.8, 0.0, 0.0, 0.0)),
                                         ("point", (0.6, -0.5, 0.0, 0.0)), ("point", (0.8, 0.0, 0.0, 0.0))])
def test_defaults_far_off_the_loop_are_assembled(osim, tmp_path, kind, shift):
    """Defaults up to 0.8 rad off the loop (full Gauss-Newton steps went round the loop and did not converge for
    the distance loop; OpenSim's scaled Neck3dof model, 4.7 cm off, was refused): the assembly's steps, shortened
    on an l1 merit function, end on the loop (OpenSim's constraint error there below 1e-9) at OpenSim's assembled
    configuration, or, where the loop closes on two branches, at least as near the defaults as OpenSim's (the point
    loop with the crank 0.8 rad off: OpenSim's assembler ends on the far branch)."""
    _, ref, state, ours, theirs = _moved_loop_defaults(osim, tmp_path, kind, shift)
    for n, v in zip(LOOP_COORDINATES, ours):
        ref.getCoordinateSet().get(n).setValue(state, float(v), False)
    ref.realizePosition(state)
    assert np.abs(state.getQErr().to_numpy()).max() < 1e-9  # on OpenSim's loop
    defaults = np.array(DEFAULTS) + shift
    distance = np.sum((ours - defaults) ** 2), np.sum((theirs - defaults) ** 2)
    print(f"[assembly] {kind} loop, defaults moved by {shift}: |ours - OpenSim's| = {np.abs(ours - theirs).max():.2e}"
          f" rad, squared distance to the defaults {distance[0]:.4f} (OpenSim's {distance[1]:.4f})")
    if np.abs(ours - theirs).max() > 1e-8:
        assert kind == "point" and shift[0] == 0.8 and distance[0] < 0.2 * distance[1]
    assert distance[0] <= distance[1] + 1e-12


@pytest.mark.parametrize("variant, reason", [("tilted", "nearly, not exactly, redundant"),
                                             ("unreachable", "cannot be solved from the default configuration")])
def test_loops_the_minimal_form_cannot_take_are_refused_by_name(osim, tmp_path, variant, reason):
    """A nearly redundant constraint (the planar loop with its third pin tilted by 5e-6 rad: the z equation's row of
    dg/dz is ~5e-6 of the others, so it counts as redundant, but left out it does not hold away from the default
    configuration; OpenSim satisfies such constraints in the least-squares sense) and one the defaults cannot
    reach are refused naming the constraint; not strict, the model is its spanning tree and the constraint is
    listed as skipped."""
    path = tmp_path / f"{variant}.osim"
    build_loop(osim, path, **({"planar": True, "tilt": 5e-6} if variant == "tilted" else {variant: True}))
    with pytest.raises(UnsupportedFeatureError, match=reason) as err:
        load_osim(path)
    assert "closure" in str(err.value)
    if variant == "unreachable":  # the error it stops at, beside what OpenSim's relaxed assembly leaves
        import re
        stuck = float(re.search(r"stop decreasing at ([0-9.e+-]+)", str(err.value)).group(1))
        ref = osim.Model(str(path))
        state = ref.initSystem()  # (the state lives in the model: keep the model)
        assert stuck == pytest.approx(np.abs(state.getQErr().to_numpy()).max(), rel=0.02)
    tree = load_osim(path, strict=False)
    assert tree.n_q == (3 if variant == "tilted" else 4)
    assert any(s.name == "closure" for s in tree.extras["skipped"])


def test_json_record_rebuilds_the_loop_from_its_document(osim, tmp_path):
    """save_model / load_model: the closed-chain variables come back, rebuilt from the record's OpenSim document
    with the same dependent coordinates (joint variables, gradients and Hessians equal)."""
    from osim_emb.io.model_json import load_model, save_model
    path = tmp_path / "loop.osim"
    build_loop(osim, path)
    model = load_osim(path, dependent_coordinates=["j1_coord_0", "j2_coord_0", "j3_coord_1"])
    save_model(model, tmp_path / "loop.json")
    back = load_model(tmp_path / "loop.json")
    assert back.coordinate_names == model.coordinate_names == ["j3_coord_0"]
    q = np.array([[0.2], [0.35]])
    a, b = kin.joint_variables(model, q, 2), kin.joint_variables(back, q, 2)
    for x, y in ((a.value, b.value), (a.gradient, b.gradient), (a.hessian, b.hessian)):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("workers", [1, 2])
def test_moment_arm_harness_gives_opensim_the_loop_coordinates(osim, tmp_path, workers):
    """The harness (`osim-emb run`, `moment-arms`) hands OpenSim the loop's coordinates with each configuration
    (OpenSim's constraint error checks them) and compares computeMomentArm, and minus_dL_dq with the loop's
    coordinates at each difference step from the package's solution (on one worker and on two); an OpenSim
    reference given only the independent coordinate of a loop refuses, naming the constraint."""
    from osim_emb.opensim.bridge import OpenSimReference
    from osim_emb.opensim.moment_arms import run_moment_arm_study
    path = tmp_path / "loop.osim"
    build_loop(osim, path)
    result = run_moment_arm_study(str(path), ["j3_coord_1"], step_deg=10.0, progress=False, workers=workers,
                                  cache_dir=False, references=("computeMomentArm", "minus_dL_dq"))
    assert result["references"] == ["computeMomentArm", "minus_dL_dq"]
    summary = result["summary"].set_index("reference")
    assert summary.loc["computeMomentArm", "max_abs_difference_m"].max() < 1e-12
    assert summary.loc["minus_dL_dq", "max_abs_difference_m"].max() < 1e-8
    with pytest.raises(RuntimeError, match="closed loops: closure"):
        OpenSimReference(str(path), None).set_configuration([0.4], names=["j3_coord_1"])


def test_loop_driven_by_a_path_actuator_equals_opensim_manager(osim, tmp_path):
    """Forward simulation through the loop (gravity and a PathActuator at control 0.6, 0.1 s): the package's
    minimal-coordinate ODE (SciPy's route: the loop is solved in Python) against OpenSim's Manager enforcing the
    constraint."""
    from osim_emb.opensim.muscle_simulation import largest_differences, opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import ExcitationSpec, simulate_muscles
    path = tmp_path / "loop.osim"
    build_loop(osim, path)
    model = load_osim(path)
    times = np.linspace(0.0, 0.1, 3)
    controls = {"m1": ExcitationSpec.parse("0.6")}
    ours = simulate_muscles(model, times[-1], {}, controls=controls, t_eval=times, method="DOP853", rtol=1e-11,
                            atol=1e-12)
    ref = opensim_muscle_simulation(path, times, {}, controls=controls, accuracy=1e-9)
    assert np.abs(np.diff(ours["j3_coord_1"].to_numpy())).max() > 1e-3  # it moves
    assert largest_differences(ours, ref)["q"] < 1e-7


def test_distance_constraint_derivatives_equal_finite_differences(osim, tmp_path):
    """The ConstantDistanceConstraint's equation (|p1 - p2|^2 - d^2) / 2 and its derivatives against central
    differences; zero at the default configuration."""
    from osim_emb.core import point_constraints as pc
    tree, pair, c = _tree_and_pair(osim, tmp_path, distance=True)
    assert c.type == "ConstantDistanceConstraint" and c.distance > 0
    assert abs(pc.point_constraint_jet(tree, [pair], np.array(DEFAULTS)[None], 0)[0][0, 0]) < 1e-15
    _assert_jet_equals_central_differences(tree, pair, np.array(DEFAULTS) - 0.1, 1e-10, 1e-9)


def test_sweeps_are_cut_to_where_the_loop_closes(osim, tmp_path, caplog):
    """With j3_coord_0 independent the loop closes only over part of its range: the harness's sweep keeps the run of
    configurations around the default where it closes, says so, and the neighbours just outside do not close."""
    import logging
    from osim_emb.core.closed_chains import ClosedChainError
    from osim_emb.opensim.moment_arms import closing_part, make_sweeps
    path = tmp_path / "loop.osim"
    build_loop(osim, path)
    model = load_osim(path, dependent_coordinates=["j1_coord_0", "j2_coord_0", "j3_coord_1"])
    sweep = make_sweeps(model, ["j3_coord_0"], 5.0)[0]
    with caplog.at_level(logging.WARNING):
        cut = closing_part(model, sweep)
    assert "sweep of j3_coord_0 cut to" in caplog.text
    assert sweep.angles_deg[0] < cut.angles_deg[0] <= np.degrees(DEFAULTS[2]) <= cut.angles_deg[-1] < sweep.angles_deg[-1]
    kin.joint_variables(model, cut.q, 1)  # the whole cut sweep closes, as one batch
    outside = [sweep.q[list(sweep.angles_deg).index(cut.angles_deg[0]) - 1],
               sweep.q[list(sweep.angles_deg).index(cut.angles_deg[-1]) + 1]]
    for q in outside:
        with pytest.raises(ClosedChainError):
            kin.joint_variables(model, q[None], 0)


def test_main_job_on_a_loop_with_an_indefinite_inertia_needs_lenient(osim, tmp_path, monkeypatch, capsys):
    """`osim-emb run` on the loop with a body inertia that is not positive semi-definite: refused naming the body
    (exit 2); with --lenient the inertia is kept (as OpenSim keeps it), the loop is solved and the report written."""
    from lxml import etree
    from osim_emb.cli.main import main
    monkeypatch.setenv("OSIM_EMB_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "loop.osim"
    build_loop(osim, path)
    tree = etree.parse(str(path))
    body = next(b for b in tree.iter("Body") if b.get("name") == "crank")
    body.find("inertia").text = "0.01 0.001 0.01 0.02 0 0"  # |Ixy| > sqrt(Ixx Iyy): indefinite
    bad = tmp_path / "loop_bad_inertia.osim"
    tree.write(str(bad))
    assert main(["run", str(bad), "--out", str(tmp_path / "strict"), "--quiet"]) == 2
    assert "inertia of body 'crank'" in capsys.readouterr().err
    assert main(["run", str(bad), "--lenient", "--out", str(tmp_path / "out"), "--step", "10", "--workers", "1",
                 "--formats", "png", "--quiet"]) == 0
    report = (tmp_path / "out" / "report.md").read_text()
    assert "j3_coord_1" in report and "--lenient" in report


def test_loop_models_compare_equal_when_built_the_same_way(osim, tmp_path):
    """Two imports of one file are equal models (their closed-chain variables describe the same constraints,
    dependents and reference), and the model written back and re-imported is equal too; another choice of
    dependent coordinates is another model."""
    from osim_emb import write_osim
    path = tmp_path / "loop.osim"
    build_loop(osim, path)
    a, b = load_osim(path), load_osim(path)
    assert a == b and hash(a.dependent_coordinates[0].function) == hash(b.dependent_coordinates[0].function)
    write_osim(a, tmp_path / "again.osim")
    assert load_osim(tmp_path / "again.osim") == a
    assert load_osim(path, dependent_coordinates=["j1_coord_0", "j2_coord_0", "j3_coord_1"]) != a


WELD_DEFAULTS = (0.3, -0.4, 0.5, 0.6, -0.2, 0.35, -0.45)


def _xyz_body_fixed(angles):
    """Rx(a) Ry(b) Rz(c): OpenSim's body-fixed X-Y-Z rotation (written out here, independent of the package)."""
    out = np.eye(3)
    for k, t in enumerate(angles):
        c, s = np.cos(t), np.sin(t)
        i, j = [(1, 2), (2, 0), (0, 1)][k]
        r = np.eye(3)
        r[i, i] = r[j, j] = c
        r[i, j], r[j, i] = -s, s
        out = out @ r
    return out


def _xyz_angles(r):
    """Body-fixed X-Y-Z angles of a rotation matrix away from gimbal lock."""
    return np.array([np.arctan2(-r[1, 2], r[2, 2]), np.arcsin(r[0, 2]), np.arctan2(-r[0, 1], r[0, 0])])


def build_weld_chain(osim, path):
    """Seven pins about z, x, y, z, x, y, z with offsets between them (a spatial 7R chain), its last body welded to
    ground by a WeldConstraint between offset frames where it is at WELD_DEFAULTS: a loop of one degree of freedom,
    two paths."""
    m = osim.Model()
    m.setName("weld_chain")
    parent = m.getGround()
    axes = [(0, 0, 0), (0, 0.5 * np.pi, 0), (-0.5 * np.pi, 0, 0)]  # frames whose z is z, x, y
    bodies = []
    for k, value in enumerate(WELD_DEFAULTS):
        body = osim.Body(f"b{k + 1}", 0.5 + 0.1 * k, osim.Vec3(0.02, -0.1, 0.01), osim.Inertia(0.01, 0.004, 0.008))
        m.addBody(body)
        turn = osim.Vec3(*axes[k % 3])
        joint = osim.PinJoint(f"p{k + 1}", parent, osim.Vec3(0.0, -0.2, 0.05) if k else osim.Vec3(0), turn,
                              body, osim.Vec3(0), turn)
        m.addJoint(joint)
        c = joint.updCoordinate()
        c.setDefaultValue(value)
        c.setRangeMin(value - 1.0)
        c.setRangeMax(value + 1.0)
        parent = body
        bodies.append(body)
    state = m.initSystem()
    where, turn = np.array([0.05, -0.1, 0.02]), np.array([0.1, 0.2, 0.3])
    placed = bodies[-1].getTransformInGround(state)
    turned = np.array([[placed.R().get(i, j) for j in range(3)] for i in range(3)])
    weld = osim.WeldConstraint("weld", bodies[-1], osim.Vec3(*where), osim.Vec3(*turn), m.getGround(),
                               osim.Vec3(*(placed.p().to_numpy() + turned @ where)),
                               osim.Vec3(*_xyz_angles(turned @ _xyz_body_fixed(turn))))
    m.addConstraint(weld)
    for name, points in (("m1", [(None, (0.1, 0.0, 0.1)), (3, (0.02, -0.1, 0.0))]),
                         ("m2", [(1, (0.03, -0.1, 0.01)), (5, (0.0, -0.1, 0.02))])):
        actuator = osim.PathActuator()
        actuator.setName(name)
        for k, (body, location) in enumerate(points):
            frame = m.getGround() if body is None else bodies[body]
            actuator.addNewPathPoint(f"{name}_{k}", frame, osim.Vec3(*location))
        m.addForce(actuator)
    m.finalizeConnections()
    m.printToXML(str(path))


def test_weld_loop_equals_opensim(osim, tmp_path):
    """A 7R chain closed by a WeldConstraint between offset frames (4.x: the frames inside the constraint): six of
    the seven angles solved from the seventh.  OpenSim's constraint error at the package's solution is below 1e-9
    at every pose; body transforms, lengths, computeMomentArm, minus the central difference of getLength, J^T M J
    and OpenSim's constrained accelerations equal the package's."""
    from osim_emb.opensim.bridge import OpenSimReference
    path = tmp_path / "weld.osim"
    build_weld_chain(osim, path)
    model = load_osim(path)
    assert model.n_q == 1 and len(model.dependent_coordinates) == 6
    q0 = np.array([c.default for c in model.coordinates])
    q = q0 + np.linspace(-0.15, 0.15, 6)[:, None]
    qd = np.random.default_rng(4).normal(size=q.shape)
    ours = package_values(model, q, qd)
    ref = OpenSimReference(str(path), model)
    ref_d = OpenSimReference(str(path), model, disable_forces=True)
    names = [mu.name for mu in model.muscles]
    coordinate = model.coordinate_names[0]
    h = 1e-6
    worst = dict.fromkeys(("transform", "length", "arm", "fd", "mass", "accel"), 0.0)
    for n in range(len(q)):
        ref.set_configuration(q[n])  # raises if OpenSim's constraint error exceeds 1e-9
        for k, body in enumerate(model.bodies):
            worst["transform"] = max(worst["transform"],
                                     np.abs(ref.body_transform(body.name) - ours["transforms"][n, k]).max())
        worst["length"] = max(worst["length"], np.abs([ref.muscle_length(m) for m in names] - ours["lengths"][n]).max())
        arm = np.array([ref.moment_arm(m, coordinate) for m in names])
        worst["arm"] = max(worst["arm"], np.abs(arm - ours["arms"][n, 0]).max())
        lengths = []
        for sign in (1, -1):
            ref.set_configuration(q[n] + sign * h)
            lengths.append(np.array([ref.muscle_length(m) for m in names]))
        worst["fd"] = max(worst["fd"], np.abs(-(lengths[0] - lengths[1]) / (2 * h) - ours["arms"][n, 0]).max())
        r = ref_d.reduced_dynamics(q[n], qd[n])
        worst["mass"] = max(worst["mass"], np.abs(r["mass"] - ours["terms"].mass[n]).max() / np.abs(r["mass"]).max())
        worst["accel"] = max(worst["accel"],
                             np.abs(r["qddot"] - ours["qdd"][n]).max() / max(1.0, np.abs(r["qddot"]).max()))
    assert np.abs(np.diff(ours["lengths"], axis=0)).max() > 1e-4  # the mechanism moves the paths
    assert worst["transform"] < 1e-13 and worst["length"] < 1e-13 and worst["arm"] < 1e-12, worst
    assert worst["fd"] < 1e-8 and worst["mass"] < 1e-11 and worst["accel"] < 1e-9, worst


@pytest.mark.parametrize("kind", ["line", "weld"])
def test_line_and_weld_derivatives_equal_finite_differences(osim, tmp_path, kind):
    """The PointOnLineConstraint's two equations n_i . (p2 - p1) and the WeldConstraint's six (origins and
    x1.y2, y1.z2, z1.x2) with their first and second derivatives from the tree's kinematics against central
    differences; zero at the default configuration (where the files put the constraints)."""
    from osim_emb.core import point_constraints as pc
    from osim_emb.io import read_osim
    from osim_emb.io.convert import _Converter
    if kind == "line":
        tree, pair, _ = _tree_and_pair(osim, tmp_path, line=True)
        z0 = np.array(DEFAULTS)
    else:
        path = tmp_path / "weld.osim"
        build_weld_chain(osim, path)
        doc = read_osim(path)
        c = doc.point_constraints[0]
        assert c.type == "WeldConstraint" and c.body2 == doc.ground
        tree = _Converter(doc, True, tree_only=True).build()
        b7 = next(b for b in tree.bodies if b.name == c.body1)
        pair = pc.PointPair(c.name, b7.frame, (b7.frame_to_body @ np.append(c.location1, 1.0))[:3], 0, c.location2,
                            axes1=b7.frame_to_body[:3, :3] @ c.rotation1, axes2=c.rotation2)
        z0 = np.array(WELD_DEFAULTS)
    assert pair.kind == kind and pair.n_equations == {"line": 2, "weld": 6}[kind]
    assert np.abs(pc.point_constraint_jet(tree, [pair], z0[None], 0)[0]).max() < 1e-14
    _assert_jet_equals_central_differences(tree, pair, z0 + 0.1, 1e-9, 1e-8)


def test_a_line_without_direction_is_refused(osim, tmp_path):
    """A PointOnLineConstraint whose line_direction_vec is zero is refused naming the constraint and the value."""
    from osim_emb.io import OsimImportError
    path = tmp_path / "line.osim"
    build_loop(osim, path, line=True)
    bad = tmp_path / "no_direction.osim"
    with_element_text(path, "line_direction_vec", "0 0 0", bad)
    with pytest.raises(OsimImportError, match="non-zero direction") as err:
        load_osim(bad)
    assert "PointOnLineConstraint" in str(err.value)


def test_constraint_singular_at_default_is_named(osim, tmp_path):
    """A ConstantDistanceConstraint whose two points coincide at the default configuration has a zero gradient
    there (opensim-core's tugOfWar_model.osim): refused by name and reason, not an IndexError; lenient loading
    leaves the constraint out with the same reason."""
    path = tmp_path / "coincident.osim"
    build_loop(osim, path, distance=True, coincident=True)
    with pytest.raises(UnsupportedFeatureError, match=r"ConstantDistanceConstraint name='closure'.*singular configuration"):
        load_osim(path)
    model = load_osim(path, strict=False)
    assert model.n_q == 4 and any("singular configuration" in s.reason for s in model.extras["skipped"])
