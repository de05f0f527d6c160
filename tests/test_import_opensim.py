"""Importer proof (issue 3): every body transform and path point equals OpenSim's at random configurations."""

import numpy as np
import pytest

from osim_emb.core import kinematics as kin
from osim_emb.io import load_osim
from opensim_builders import add_custom_joint_with_coupler

MODEL_FILES = ["double_pendulum.osim", "arm26.osim", "leg6dof9musc.osim",
               "mobl_arms_holzbaur_nowrap_variant.osim", "mobl_arms_holzbaur.osim"]


def _random_q(model, n, seed, cap=None):
    rng = np.random.default_rng(seed)
    lo, hi = model.coordinate_ranges.T
    if cap is not None:
        lo, hi = np.maximum(lo, -cap), np.minimum(hi, cap)
    return rng.uniform(lo, hi, (n, model.n_q))


def _compare(path, model, q, check_points=True):
    from osim_emb.opensim.bridge import OpenSimReference
    ref = OpenSimReference(path, model)
    bt = kin.body_transforms(model, kin.forward_kinematics(model, q, order=0))
    real = [k for k, b in enumerate(model.bodies) if ref.model_os.getBodySet().contains(b.name)]
    worst_r = worst_p = worst_pt = 0.0
    for n in range(len(q)):
        ref.set_configuration(q[n])
        for k in real:
            t = ref.body_transform(model.bodies[k].name)
            worst_r = max(worst_r, np.abs(t[:3, :3] - bt[n, k, :3, :3]).max())
            worst_p = max(worst_p, np.abs(t[:3, 3] - bt[n, k, :3, 3]).max())
        if check_points:
            for mu in model.muscles:
                pts = ref.path_point_positions(mu.name)
                for i, p in enumerate(mu.points):
                    t = bt[n, model.body_index(p.body)]
                    worst_pt = max(worst_pt, np.abs(t[:3, :3] @ p.location + t[:3, 3] - pts[i]).max())
    return len(real), worst_r, worst_p, worst_pt


@pytest.mark.parametrize("name", MODEL_FILES)
def test_body_transforms_and_path_points_equal_opensim(osim, models_dir, name):
    path = str(models_dir / name)
    model = load_osim(path)
    n = 100 if "mobl" not in name else 40
    nreal, r, p, pt = _compare(path, model, _random_q(model, n, seed=7), check_points=True)
    assert nreal >= 2
    assert r < 1e-10, f"rotation error {r}"
    assert p < 1e-10, f"position error {p} m"
    assert pt < 1e-10, f"path point error {pt} m"


def test_mobl_one_hundred_configurations_bodies(osim, models_dir):
    path = str(models_dir / "mobl_arms_holzbaur.osim")
    model = load_osim(path)
    _, r, p, _ = _compare(path, model, _random_q(model, 100, seed=3), check_points=False)
    assert r < 1e-10 and p < 1e-10


def _build_all_joint_model(osim, path):
    """Every supported joint type, offset frames, and a coupler with two independent coordinates."""
    rng = np.random.default_rng(0)
    v = lambda: osim.Vec3(*rng.uniform(-0.3, 0.3, 3))
    m = osim.Model()
    m.setName("all_joints")
    prev = m.getGround()
    types = ["FreeJoint", "PinJoint", "SliderJoint", "UniversalJoint", "GimbalJoint", "BallJoint", "PlanarJoint",
             "WeldJoint"]
    for k, t in enumerate(types):
        b = osim.Body(f"b{k}", 1.0 + k, v(), osim.Inertia(0.1, 0.2, 0.3, 0.01, 0.02, 0.03))
        m.addBody(b)
        m.addJoint(getattr(osim, t)(f"j{k}_{t}", prev, v(), v(), b, v(), v()))
        prev = b
    add_custom_joint_with_coupler(osim, m, prev, v, 2.0, v(), osim.Inertia(0.1, 0.2, 0.3, 0, 0, 0))
    m.initSystem()
    m.printToXML(str(path))


def test_every_joint_type_and_two_coordinate_coupler(osim, tmp_path):
    path = tmp_path / "all_joints.osim"
    _build_all_joint_model(osim, path)
    model = load_osim(path)
    assert [d.name for d in model.dependent_coordinates] == ["c_b"]
    assert model.n_q == 21  # 6 + 1 + 1 + 2 + 3 + 3 + 3 + 2 independent (c_b is coupled)
    nreal, r, p, _ = _compare(str(path), model, _random_q(model, 100, seed=1, cap=1.5), check_points=False)
    assert nreal == 9
    assert r < 1e-10 and p < 1e-10


@pytest.mark.parametrize("name", MODEL_FILES)
def test_motion_types_equal_opensim(osim, models_dir, name):
    """Motion types (stored in 3.3 files, derived from the joint in 4.x ones, as OpenSim's CustomJoint does)."""
    path = str(models_dir / name)
    model = load_osim(path)
    m = osim.Model(path)
    m.initSystem()
    kinds = {osim.Coordinate.Rotational: "rotational", osim.Coordinate.Translational: "translational",
             osim.Coordinate.Coupled: "coupled"}
    ours = {c.name: c.motion_type for c in model.coordinates}
    if "3" not in str(model.extras["version"])[:1]:  # 4.x files: every coordinate, dependent ones included
        ours.update({d.name: d.motion_type for d in model.dependent_coordinates})
    cs = m.getCoordinateSet()
    for i in range(cs.getSize()):
        c = cs.get(i)
        if c.getName() in ours:
            assert ours[c.getName()] == kinds[c.getMotionType()], c.getName()
