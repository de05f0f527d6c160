"""EllipsoidJoint and ScapulothoracicJoint (Simbody's Ellipsoid mobilizer; the scapulothoracic joint's turned frames and
winging pin) against OpenSim 4.6's API, the ellipsoid surface functions against their closed form, refusals."""

from __future__ import annotations

import numpy as np
import pytest

from osim_emb import load_osim
from osim_emb.core import kinematics as kin
from osim_emb.io import OsimImportError, read_osim_string
from opensim_builders import build_shoulder, package_values


def _rx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _ry(b):
    c, s = np.cos(b), np.sin(b)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _drx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[0.0, 0.0, 0.0], [0.0, -s, -c], [0.0, c, -s]])


def _dry(b):
    c, s = np.cos(b), np.sin(b)
    return np.array([[-s, 0.0, c], [0.0, 0.0, 0.0], [-c, 0.0, -s]])


def _speed_map(q, qd, n_q):
    """J with u = J qdot (OpenSim's speeds of the Ellipsoid mobilizer: w_FM in F, body-fixed X-Y-Z angles) and
    Jdot qdot: E's columns x, Rx(a) y, Rx(a) Ry(b) z and their time derivatives, written out."""
    a, b = q[:2]
    ad, bd = qd[:2]
    y, z = np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0])
    e = np.column_stack([[1.0, 0.0, 0.0], _rx(a) @ y, _rx(a) @ _ry(b) @ z])
    edot = np.column_stack([np.zeros(3), ad * _drx(a) @ y, ad * _drx(a) @ _ry(b) @ z + bd * _rx(a) @ _dry(b) @ z])
    jac = np.eye(n_q)
    jac[:3, :3] = e
    bias = np.zeros(n_q)
    bias[:3] = edot @ qd[:3]
    return jac, bias


@pytest.mark.parametrize("kind", ["ScapulothoracicJoint", "EllipsoidJoint"])
def test_ellipsoid_joints_equal_opensim(osim, tmp_path, kind):
    """Body transforms, path lengths, moment arms (OpenSim's about the ellipsoid rotations are E^-T R: its speeds
    are angular velocities), the mass matrix (J^T M_u J) and forward accelerations (u_dot = J q_dd + J_dot q_dot)
    equal OpenSim 4.6's at random configurations and speeds."""
    from osim_emb.opensim.bridge import OpenSimReference
    path = tmp_path / f"{kind}.osim"
    build_shoulder(osim, path, kind)
    model = load_osim(path)
    assert model.n_q == (5 if kind == "ScapulothoracicJoint" else 4)
    lo, hi = model.coordinate_ranges.T
    rng = np.random.default_rng(3)
    q = rng.uniform(lo, hi, (10, model.n_q))
    qd = rng.normal(size=q.shape)
    ours = package_values(model, q, qd)
    transforms, lengths, arms, terms, qdd = (ours[k] for k in ("transforms", "lengths", "arms", "terms", "qdd"))
    ref = OpenSimReference(str(path), model)
    ref_d = OpenSimReference(str(path), model, disable_forces=True)
    worst = dict.fromkeys(("transform", "length", "arm", "mass", "accel"), 0.0)
    for n in range(len(q)):
        ref.set_configuration(q[n])
        for k, body in enumerate(model.bodies):
            if body.name != "ground":
                worst["transform"] = max(worst["transform"],
                                         np.abs(ref.body_transform(body.name) - transforms[n, k]).max())
        jac, bias = _speed_map(q[n], qd[n], model.n_q)
        for m, mu in enumerate(model.muscles):
            worst["length"] = max(worst["length"], abs(ref.muscle_length(mu.name) - lengths[n, m]))
            theirs = np.array([ref.moment_arm(mu.name, c) for c in model.coordinate_names])
            worst["arm"] = max(worst["arm"], np.abs(np.linalg.solve(jac.T, arms[n, :, m]) - theirs).max())
        r = ref_d.reduced_dynamics(q[n], jac @ qd[n])
        worst["mass"] = max(worst["mass"], np.abs(jac.T @ r["mass"] @ jac - terms.mass[n]).max() / np.abs(r["mass"]).max())
        worst["accel"] = max(worst["accel"], np.abs(jac @ qdd[n] + bias - r["qddot"]).max()
                             / max(1.0, np.abs(r["qddot"]).max()))
    assert worst["transform"] < 1e-14 and worst["length"] < 1e-14 and worst["arm"] < 1e-14, worst
    assert worst["mass"] < 1e-13 and worst["accel"] < 1e-11, worst


def test_ellipsoid_surface_functions_equal_their_closed_form():
    """The origin's three functions of (q0, q1): values, gradients and Hessians equal (a sin q1, -b sin q0 cos q1,
    c cos q0 cos q1) and their derivatives written out, and the point lies on the ellipsoid."""
    from osim_emb.io.osim_reader import ellipsoid_surface_functions
    radii = np.array([0.08, 0.15, 0.07])
    x = np.random.default_rng(0).uniform(-2.0, 2.0, (50, 2))
    s0, c0, s1, c1 = np.sin(x[:, 0]), np.cos(x[:, 0]), np.sin(x[:, 1]), np.cos(x[:, 1])
    a, b, c = radii
    want = [(a * s1, [0 * s1, a * c1], [[0 * s1, 0 * s1], [0 * s1, -a * s1]]),
            (-b * s0 * c1, [-b * c0 * c1, b * s0 * s1], [[b * s0 * c1, b * c0 * s1], [b * c0 * s1, b * s0 * c1]]),
            (c * c0 * c1, [-c * s0 * c1, -c * c0 * s1], [[-c * c0 * c1, c * s0 * s1], [c * s0 * s1, -c * c0 * c1]])]
    points = []
    for f, (value, grad, hess) in zip(ellipsoid_surface_functions(radii), want):
        jet = f.evaluate(x, 2)
        np.testing.assert_allclose(jet.value, value, rtol=0, atol=1e-16)
        np.testing.assert_allclose(jet.gradient, np.stack(grad, axis=1), rtol=0, atol=1e-16)
        np.testing.assert_allclose(jet.hessian, np.transpose(np.array(hess), (2, 0, 1)), rtol=0, atol=1e-16)
        points.append(jet.value)
    np.testing.assert_allclose(sum((p / r) ** 2 for p, r in zip(points, radii)), 1.0, rtol=1e-15)


_JOINT = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000"><Model name="m"><Ground name="ground"/>
<BodySet><objects><Body name="b"><mass>1</mass><mass_center>0 0 0</mass_center><inertia>1 1 1 0 0 0</inertia></Body>
</objects></BodySet>
<JointSet><objects><{tag} name="j"><socket_parent_frame>/ground</socket_parent_frame>
<socket_child_frame>/bodyset/b</socket_child_frame><coordinates>{coords}</coordinates>{props}</{tag}></objects></JointSet>
</Model></OpenSimDocument>"""


@pytest.mark.parametrize("tag, n, props, reason", [
    ("EllipsoidJoint", 3, "<radii_x_y_z>0.1 0 0.2</radii_x_y_z>", "must be three positive lengths"),
    ("EllipsoidJoint", 3, "", "radii_x_y_z"),
    ("ScapulothoracicJoint", 4, "<thoracic_ellipsoid_radii_x_y_z>0.1 nan 0.2</thoracic_ellipsoid_radii_x_y_z>",
     "non-finite"),
    ("ScapulothoracicJoint", 3, "<thoracic_ellipsoid_radii_x_y_z>0.1 0.1 0.2</thoracic_ellipsoid_radii_x_y_z>",
     "needs 4 coordinates, has 3"),
])
def test_bad_ellipsoid_joints_are_refused_by_element(tag, n, props, reason):
    coords = "".join(f"<Coordinate name='c{k}'/>" for k in range(n))
    with pytest.raises(OsimImportError, match=reason) as err:
        read_osim_string(_JOINT.format(tag=tag, coords=coords, props=props), name="m.osim")
    assert "m.osim" in str(err.value)


def test_regenerated_scapulothoracic_joint_keeps_its_properties(osim, tmp_path):
    """The file generated from the records (document_to_xml) writes the joint's radii and winging axis back;
    OpenSim reads the same body transforms from it."""
    from osim_emb.io.osim_writer import document_to_xml, _serialize
    from osim_emb.opensim.bridge import OpenSimReference
    path = tmp_path / "st.osim"
    build_shoulder(osim, path, "ScapulothoracicJoint")
    model = load_osim(path)
    out = tmp_path / "st_generated.osim"
    out.write_text(_serialize(document_to_xml(model.extras["document"])))
    assert "scapula_winging_axis_direction" in out.read_text()
    q = np.random.default_rng(5).uniform(*model.coordinate_ranges.T, (5, model.n_q))
    transforms = kin.body_transforms(model, kin.forward_kinematics(model, q, order=0))
    ref = OpenSimReference(str(out), load_osim(out))
    k = [b.name for b in model.bodies].index("humerus")
    for n in range(len(q)):
        ref.set_configuration(q[n])
        assert np.abs(ref.body_transform("humerus") - transforms[n, k]).max() < 1e-14


def test_moment_arm_study_compares_computeMomentArm_about_opensims_speeds(osim, tmp_path):
    """The comparison harness (`osim-emb run`, `moment-arms`) compares OpenSim's computeMomentArm about the
    Ellipsoid mobilizer's angles with E^-T R (its speeds are angular velocities) and minus_dL_dq with R: with the
    other angles away from 0 (where E is not the identity) both agree to their tolerances, while R itself differs
    from computeMomentArm by more than 1e-4 m somewhere."""
    from osim_emb.opensim.moment_arms import run_moment_arm_study
    path = tmp_path / "st.osim"
    build_shoulder(osim, path, "ScapulothoracicJoint")
    model = load_osim(path)
    names = model.coordinate_names
    fixed = {names[0]: 0.5, names[1]: -0.4, names[2]: 0.3}
    result = run_moment_arm_study(str(path), [names[1], names[2]], step_deg=10.0, fixed=fixed, model=model,
                                  ma_coordinates=names[:4],
                                  references=("computeMomentArm", "minus_dL_dq"), progress=False, workers=1,
                                  cache_dir=False)
    summary = result["summary"]
    assert summary.max_abs_difference_m.max() < 1e-7, summary
    t = result["table"]
    about_q = t[(t.reference == "minus_dL_dq") & (t.moment_arm_coordinate == names[2])]
    theirs = t[(t.reference == "computeMomentArm") & (t.moment_arm_coordinate == names[2])]
    assert np.abs(about_q.package_m.to_numpy() - theirs.opensim_m.to_numpy()).max() > 1e-4
