"""Joint reactions of models closed by PointConstraints, ConstantDistanceConstraints, PointOnLineConstraints and
WeldConstraints: the constraints' body forces (simulation.joint_reactions.constraint_loads) against OpenSim 4.6's
JointReaction, their virtual work against the constraint Jacobian, and the refusals."""

from __future__ import annotations

import numpy as np
import pytest

from opensim_builders import build_welded, read_sto
from osim_emb.opensim.bridge import write_states_file
from osim_emb import load_osim
from osim_emb.cli.main import main
from test_point_constraints import build_loop


def _motion(model, n=11):
    t = np.linspace(0.0, 1.0, n)
    w = 2 * np.pi * (1 + 0.3 * np.arange(model.n_q))
    return t, model.default_q + 0.2 * np.sin(t[:, None] * w), 0.2 * w * np.cos(t[:, None] * w)


def _build(osim, kind, path):
    if kind == "weld":
        build_welded(osim, path)
    else:
        build_loop(osim, path, distance=kind == "distance", line=kind == "line", planar=kind == "planar")


def _pulling_forces(path, t):
    """The forces file of the two path actuators m1 and m2 at times t."""
    path.write_text("forces\nversion=1\nnRows=11\nnColumns=3\ninDegrees=no\nendheader\ntime\tm1\tm2\n" + "\n".join(
        f"{x:.17g}\t{30 + 10 * np.sin(5 * x):.17g}\t{20 + 5 * np.cos(3 * x):.17g}" for x in t) + "\n")


@pytest.mark.opensim
@pytest.mark.parametrize("kind", ["point", "distance", "line", "weld"])
def test_reactions_of_a_closed_loop_equal_opensims(osim, tmp_path, capsys, kind):
    """A spatial loop closed by each constraint type (the weld holds a FreeJoint body, so OpenSim's speeds of its
    rotations are angular velocities), two path actuators pulling: every joint's reaction against OpenSim's
    JointReaction on the same states and forces files; the constraint forces move them by about the load itself."""
    from osim_emb.opensim.joint_reactions import opensim_joint_reactions
    path = tmp_path / f"{kind}.osim"
    _build(osim, kind, path)
    model = load_osim(path)
    t, q, qd = _motion(model)
    states, forces = tmp_path / "states.sto", tmp_path / "forces.sto"
    write_states_file(states, osim.Model(str(path)), model, t, q, qd)
    _pulling_forces(forces, t)
    ref = opensim_joint_reactions(path, states, forces_file=forces)["loads"]
    assert main(["joint-reactions", str(path), str(states), "--forces", str(forces), "-o", str(tmp_path / "ours")]) == 0
    ours = read_sto(tmp_path / "ours_JointReaction_ReactionLoads.sto")
    assert list(ours.columns) == list(ref.columns)
    d = float(np.abs(ours.to_numpy()[:, 1:] - ref.to_numpy()[:, 1:]).max())
    scale = float(np.abs(ref.to_numpy()[:, 1:]).max())
    with capsys.disabled():
        print(f"\n[agreement] {kind} constraint: joint reactions vs OpenSim's JointReaction {d:.2e} (of {scale:.3g} N, "
              "N m, m)")
    assert d < 1e-8 * scale


@pytest.mark.opensim
@pytest.mark.parametrize("kind", ["point", "weld"])
def test_point_springs_on_a_closed_loop_equal_opensims(osim, tmp_path, capsys, kind):
    """The point and weld loops with two PointToPointSprings (ground to the last body, between the first two): the
    springs' wrenches enter the constraint forces' balance as every other body load (constraint_loads), and the
    reactions equal OpenSim's JointReaction; without the springs they are far off."""
    from osim_emb.opensim.joint_reactions import opensim_joint_reactions
    base, path = tmp_path / "base.osim", tmp_path / f"{kind}.osim"
    _build(osim, kind, base)
    m = osim.Model(str(base))
    bodies = [m.getBodySet().get(i) for i in range(m.getBodySet().getSize())]
    for name, ends, stiffness, rest in (("tether", (m.getGround(), (0.2, 0.3, 0.1), bodies[-1], (0.01, -0.1, 0.02)),
                                         200.0, 0.1),
                                        ("link", (bodies[0], (0.0, -0.1, 0.0), bodies[1], (0.01, -0.1, 0.02)), 300.0,
                                         0.05)):
        spring = osim.PointToPointSpring(ends[0], osim.Vec3(*ends[1]), ends[2], osim.Vec3(*ends[3]), stiffness, rest)
        spring.setName(name)
        m.addForce(spring)
    m.finalizeConnections()
    m.printToXML(str(path))
    model = load_osim(path)
    t, q, qd = _motion(model)
    states, forces = tmp_path / "states.sto", tmp_path / "forces.sto"
    write_states_file(states, osim.Model(str(path)), model, t, q, qd)
    _pulling_forces(forces, t)
    ref = opensim_joint_reactions(path, states, forces_file=forces)["loads"].to_numpy()[:, 1:]
    diff = {}
    for name, model_path in (("ours", path), ("bare", base)):
        assert main(["joint-reactions", str(model_path), str(states), "--forces", str(forces), "-o",
                     str(tmp_path / name)]) == 0
        diff[name] = float(np.abs(read_sto(tmp_path / f"{name}_JointReaction_ReactionLoads.sto").to_numpy()[:, 1:]
                                  - ref).max())
    scale = float(np.abs(ref).max())
    with capsys.disabled():
        print(f"\n[agreement] {kind} constraint with point springs: joint reactions vs OpenSim's JointReaction "
              f"{diff['ours']:.2e} (of {scale:.3g} N, N m, m; the springs' effect {diff['bare']:.3g})")
    assert diff["ours"] < 1e-8 * scale and diff["bare"] > 10.0


def _opensim_api_reactions(osim, path, model, q, qd, forces):
    """OpenSim's reactions on each joint's child in ground (N, joints, 6: force, moment) at the package's states
    (every coordinate's value and OpenSim speed set, no assembly), the path actuators' forces overridden:
    Joint::calcReactionOnChildExpressedInGround."""
    from osim_emb.core.kinematics import dependent_coordinate_columns, speed_columns
    columns = {n: q[:, k] for k, n in enumerate(model.coordinate_names)}
    columns.update(speed_columns(model, q, qd))
    columns.update(dependent_coordinate_columns(model, q, qd))
    om = osim.Model(str(path))
    state = om.initSystem()
    coordinates, joints, actuators = om.getCoordinateSet(), om.getJointSet(), om.getActuators()
    out = np.zeros((q.shape[0], joints.getSize(), 6))
    for n in range(q.shape[0]):
        for i in range(coordinates.getSize()):
            c = coordinates.get(i)
            c.setValue(state, float(columns[c.getName()][n]), False)
            c.setSpeedValue(state, float(columns[c.getName() + "_u"][n]))
        for i in range(actuators.getSize()):
            a = osim.ScalarActuator.safeDownCast(actuators.get(i))
            a.overrideActuation(state, True)
            a.setOverrideActuation(state, float(forces[a.getName()][n]))
        om.realizeAcceleration(state)
        for j in range(joints.getSize()):
            reaction = joints.get(j).calcReactionOnChildExpressedInGround(state)
            out[n, j] = np.concatenate([reaction.get(1).to_numpy(), reaction.get(0).to_numpy()])
    return out


@pytest.mark.opensim
@pytest.mark.parametrize("kind", ["planar", "coupled"])
def test_loops_with_redundant_equations_equal_opensims_reactions(osim, tmp_path, capsys, caplog, kind):
    """Redundant equations, whose share of the load the constraints alone do not fix: ``planar``, the loop on three
    parallel pins (the point constraint's z equation has no coefficients); ``coupled``, a weld whose rotation equation
    two couplers already make hold (as in OpenSim's CoupledCoordinatesMPPsMomentArmTest).  The multipliers' least-
    squares split is Simbody's: against OpenSim's API at the same states (OpenSim's AnalyzeTool cannot assemble the
    planar loop -- its assembler: "not enough degrees of freedom" -- and reports every frame at the default pose)."""
    from opensim_builders import build_coupled_weld
    from osim_emb.simulation.joint_reactions import joint_reactions_of_motion
    path = tmp_path / f"{kind}.osim"
    if kind == "planar":
        build_loop(osim, path, planar=True)
    else:
        build_coupled_weld(osim, path)
    model = load_osim(path)
    t, q, qd = _motion(model)
    forces = {"m1": 30 + 10 * np.sin(5 * t), "m2": 20 + 5 * np.cos(3 * t)}
    forces = {k: v for k, v in forces.items() if k in {m.name for m in model.muscles}}
    with caplog.at_level("INFO"):
        ours = joint_reactions_of_motion(model, t, q, qd, forces, progress=False).loads[..., :6]
    assert "redundant" in caplog.text
    theirs = _opensim_api_reactions(osim, path, model, q, qd, forces)
    worst, scale = float(np.abs(ours - theirs).max()), float(np.abs(theirs).max())
    with capsys.disabled():
        print(f"\n[agreement] {kind} loop (redundant equations): joint reactions vs OpenSim's API {worst:.2e} (of "
              f"{scale:.3g} N, N m)")
    assert worst < 1e-10 * scale


@pytest.mark.opensim
@pytest.mark.parametrize("kind", ["point", "distance", "line", "weld"])
def test_constraint_wrenches_do_the_virtual_work_of_the_constraint_jacobian(osim, tmp_path, kind):
    """For any multipliers λ, the body wrenches of constraint_wrenches do the work (dg/dz)ᵀ λ through the spanning
    tree's frame Jacobians (dg/dz: the jet, itself checked against finite differences in test_point_constraints)."""
    from osim_emb.core import kinematics as kin
    from osim_emb.core.point_constraints import constraint_wrenches, point_constraint_jet
    path = tmp_path / f"{kind}.osim"
    _build(osim, kind, path)
    loop = load_osim(path).extras["point_constraint_loop"]
    tree, rows = loop.tree, list(loop.equations)
    rng = np.random.default_rng(3)
    z = tree.default_q + rng.uniform(-0.3, 0.3, (5, tree.n_q))  # (off the constraint manifold: the identity is general)
    lam = rng.normal(size=(5, len(rows)))
    xi = kin.forward_kinematics(tree, z, order=1).jacobian
    work = sum(np.einsum("nks,ns->nk", xi[:, frame], w) for frame, w in constraint_wrenches(tree, loop.pairs, rows, z, lam))
    gz = point_constraint_jet(tree, loop.pairs, z, order=1)[1][:, rows]
    np.testing.assert_allclose(work, np.einsum("nmk,nm->nk", gz, lam), atol=1e-12)


@pytest.mark.opensim
def test_reactions_without_the_constraint_forces_are_refused(osim, tmp_path, capsys):
    """A model whose loop was left out at a lenient import, or read back from JSON: refused by name, nothing written."""
    from osim_emb.io.model_json import save_model
    path = tmp_path / "loop.osim"
    build_loop(osim, path)
    model = load_osim(path)
    t, q, qd = _motion(model, 3)
    states = tmp_path / "states.sto"
    write_states_file(states, osim.Model(str(path)), model, t, q, qd)
    forces = tmp_path / "forces.sto"
    forces.write_text("forces\nversion=1\nnRows=2\nnColumns=3\ninDegrees=no\nendheader\ntime\tm1\tm2\n0\t1\t1\n1\t1\t1\n")
    json_path = tmp_path / "loop.json"
    save_model(model, json_path)
    assert main(["joint-reactions", str(json_path), str(states), "--forces", str(forces), "-o", str(tmp_path / "a")]) != 0
    err = capsys.readouterr().err
    assert "closure" in err or "constraint" in err, err
    assert not list(tmp_path.glob("a_*"))
