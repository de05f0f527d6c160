"""Scholz2015GeometryPath (issue 13): import, L and R against OpenSim 4.6, R = -dL/dq, multi-obstacle spans,
unsupported surfaces refused."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest
from opensim_builders import pin_arm

from osim_emb.paths.scholz import obstacle_path, span_paths, ScholzObstacle

#: (name, [elements]): ("p", body, location) or ("o", geometry, hint in the geometry's frame)
MUSCLES = (
    ("over_sphere", [("p", "humerus", (0.035, -0.05, 0.01)), ("o", "elbow_ball", (0.03, 0.0, 0.0)),
                     ("p", "forearm", (0.03, 0.15, 0.0))]),
    ("round_cylinder", [("p", "humerus", (-0.03, -0.15, 0.0)), ("o", "elbow_pulley", (-0.025, 0.0, 0.0)),
                        ("p", "forearm", (-0.02, 0.1, 0.01))]),
    ("two_on_span", [("p", "humerus", (0.035, -0.05, -0.01)), ("o", "elbow_ball", (0.03, 0.0, 0.0)),
                     ("o", "forearm_ball", (0.015, 0.0, 0.0)), ("p", "forearm", (0.02, 0.0, 0.0))]),
    ("via", [("p", "torso", (0.05, 0.05, 0.02)), ("p", "humerus", (0.04, -0.2, 0.0)),
             ("o", "elbow_ball", (0.03, 0.0, 0.0)), ("p", "forearm", (0.03, 0.12, 0.0)),
             ("o", "elbow_pulley", (0.0, -0.025, 0.0)), ("p", "forearm", (-0.01, 0.02, 0.03))]),
)


def build_scholz_model(osim, path, muscles=MUSCLES, surfaces=()):
    """Ground - torso (weld) - humerus (pin q1) - forearm (pin q2, tilted axis); a sphere on the humerus at the
    elbow, a cylinder about the elbow axis and a sphere on the forearm; path actuators with Scholz paths.
    ``surfaces``: extra (name, ContactGeometry factory) added to the model."""
    m, hum, fore, torso = pin_arm(osim, "scholz_paths", torso=True, shoulder_orientation=(0.1, 0.0, 0.0),
                                  elbow_orientation=(0.15, 0.1, 0), coordinates=(("q1", -1.0, 1.0), ("q2", -1.2, 1.2)))
    geometry = {
        "elbow_ball": osim.ContactSphere(0.03, osim.Vec3(0, -0.3, 0), hum, "elbow_ball"),
        "elbow_pulley": osim.ContactCylinder(0.025, osim.Vec3(0, 0.25, 0), osim.Vec3(0.15, 0.1, 0), fore,
                                             "elbow_pulley"),
        "forearm_ball": osim.ContactSphere(0.015, osim.Vec3(0.045, 0.12, 0.0), fore, "forearm_ball"),
    }
    bodies = {"torso": torso, "humerus": hum, "forearm": fore}
    for name, make in surfaces:
        geometry[name] = make(bodies)
    for g in geometry.values():
        m.addContactGeometry(g)
    for name, elements in muscles:
        actuator = osim.PathActuator()
        actuator.setName(name)
        actuator.set_path(osim.Scholz2015GeometryPath())
        m.addForce(actuator)
        p = osim.Scholz2015GeometryPath.safeDownCast(actuator.updPath())
        for kind, what, where in elements:
            if kind == "p":
                p.appendPathPoint(bodies[what], osim.Vec3(*where))
            else:
                p.appendObstacle(geometry[what], osim.Vec3(*where))
    m.finalizeConnections()
    m.printToXML(str(path))
    return m


def _configurations(n, seed=3, elbow=(-1.2, 1.2)):
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.uniform(-1.0, 1.0, n), rng.uniform(*elbow, n)])


def _opensim_lengths_and_moment_arms(osim, path, q, moment_arms=True):
    """getLength and computeMomentArm, each configuration on a Model loaded afresh and initialized there:
    OpenSim 4.6 starts the wrapping solver from the State's last solution (initSystem at the configuration
    starts it from the contact hints), and computeMomentArm's solver keeps a State of its own between calls."""
    lengths, arms = [], []
    for qn in q:
        model = osim.Model(str(path))
        coords = [model.getCoordinateSet().get(k) for k in range(model.getCoordinateSet().getSize())]
        for c, v in zip(coords, qn):
            c.setDefaultValue(float(v))
        s = model.initSystem()
        model.realizePosition(s)
        forces = [osim.PathActuator.safeDownCast(model.getForceSet().get(i))
                  for i in range(model.getForceSet().getSize())]
        assert all(f is not None for f in forces)
        lengths.append([f.getPath().getLength(s) for f in forces])
        arms.append([[f.getPath().computeMomentArm(s, c) if moment_arms else 0.0 for f in forces] for c in coords])
    return np.array(lengths), np.array(arms)


@pytest.fixture(scope="module")
def scholz_model(tmp_path_factory):
    osim = pytest.importorskip("opensim")
    path = tmp_path_factory.mktemp("scholz") / "scholz_paths.osim"
    build_scholz_model(osim, path)
    return path


@pytest.mark.opensim
def test_lengths_and_moment_arms_equal_opensim(osim, scholz_model):
    from osim_emb.io import load_osim
    from osim_emb.paths.geometry import lengths_and_moment_arms, muscle_lengths
    model = load_osim(scholz_model)
    # over the ranges: the hint's side (the long way round where the straight segment passes the other side)
    q = _configurations(30)
    lengths, arms = lengths_and_moment_arms(model, q)
    assert np.allclose(muscle_lengths(model, q), lengths, atol=0, rtol=0)
    ref_l, ref_r = _opensim_lengths_and_moment_arms(osim, scholz_model, q)
    assert np.abs(lengths - ref_l).max() < 1e-8
    # R = -dL/dq of OpenSim's own lengths (central differences of getLength)
    h = 1e-5
    fd = np.zeros_like(arms)
    for k in range(2):
        dq = np.zeros(2)
        dq[k] = h
        fd[:, k] = -(_opensim_lengths_and_moment_arms(osim, scholz_model, q + dq)[0]
                     - _opensim_lengths_and_moment_arms(osim, scholz_model, q - dq)[0]) / (2 * h)
    assert np.abs(arms - fd).max() < 1e-9
    # OpenSim's computeMomentArm: equal to 1e-8 m in most entries, elsewhere within its solver's residual (its
    # smoothness tolerance is 1e-5 rad: a few micrometres)
    err = np.abs(arms - ref_r)
    assert (err < 1e-8).mean() > 0.6 and err.max() < 1e-5
    # each obstacle is wrapped in some configurations and not in others
    straight = np.array([np.linalg.norm(np.diff(_points(model, name, q), axis=1), axis=-1).sum(axis=1)
                         for name in ("over_sphere", "round_cylinder", "two_on_span")]).T
    wrapped = lengths[:, :3] > straight + 1e-9
    assert (wrapped.sum(axis=0) >= 3).all() and (~wrapped).sum() >= 5


def _points(model, name, q):
    """Ground positions (N, P, 3) of a unit's path points."""
    from osim_emb.core.kinematics import body_transforms, forward_kinematics
    unit = next(u for u in model.muscles if u.name == name)
    bt = body_transforms(model, forward_kinematics(model, q, order=0))
    index = {b.name: k for k, b in enumerate(model.bodies)}
    return np.stack([np.einsum("nij,j->ni", bt[:, index[p.body], :3, :3], p.location) + bt[:, index[p.body], :3, 3]
                     for p in unit.scholz_path.points], axis=1)


@pytest.mark.opensim
def test_moment_arms_are_minus_dl_dq(scholz_model):
    from osim_emb.io import load_osim
    from osim_emb.paths.geometry import lengths_and_moment_arms, muscle_lengths
    model = load_osim(scholz_model)
    q = _configurations(25, seed=3) + 1e-3  # (the multi-obstacle solver raises in some long-way configurations)
    _, arms = lengths_and_moment_arms(model, q)
    h = 1e-6
    for k in range(2):
        dq = np.zeros(2)
        dq[k] = h
        fd = -(muscle_lengths(model, q + dq) - muscle_lengths(model, q - dq)) / (2 * h)
        assert np.abs(fd - arms[:, k]).max() < 1e-9


@pytest.mark.opensim
def test_compiled_unit_equals_the_span_route(scholz_model, tmp_path, osim, monkeypatch):
    """A unit's path runs as one compiled kernel (paths._scholz_kernels.unit_batch); its L and R equal those of the
    span-by-span route (span_paths per span, the segment formula's moment arms) to 1e-15 m: spheres, cylinders and
    via points with hints, two spheres on one span, and an ellipsoid and a torus without hints (geodesics)."""
    import osim_emb.paths.scholz as scholz
    from osim_emb.io import load_osim
    from osim_emb.paths.geometry import lengths_and_moment_arms
    nan = (float("nan"),) * 3

    def ring(b):
        t = osim.ContactTorus(0.04, 0.015, osim.Vec3(0, -0.3, 0), osim.Vec3(np.pi / 2, 0, 0), b["humerus"])
        t.setName("ring")
        return t
    integrated = tmp_path / "integrated.osim"
    build_scholz_model(osim, integrated, (
        ("over_egg", [("p", "humerus", (0.035, -0.05, 0.01)), ("o", "egg", nan), ("p", "forearm", (0.03, 0.15, 0.0))]),
        ("through_ring", [("p", "humerus", (0.03, -0.2, 0.0)), ("o", "ring", nan), ("p", "forearm", (0.03, 0.15, 0.0))])),
        (("egg", lambda b: osim.ContactEllipsoid(osim.Vec3(0.03, 0.045, 0.025), osim.Vec3(0, -0.3, 0),
                                                  osim.Vec3(0.2, 0.3, 0.1), b["humerus"], "egg")), ("ring", ring)))
    q = _configurations(12, seed=5)
    for path, names in ((scholz_model, ["over_sphere", "round_cylinder", "two_on_span", "via"]),
                        (integrated, ["over_egg", "through_ring"])):
        model = load_osim(path)
        assert all(scholz._compiled_program(u.scholz_path, *scholz._body_table_of(model)[:2]) is not None
                   for u in model.muscles if u.name in names)
        compiled = lengths_and_moment_arms(model, q, names)
        with monkeypatch.context() as m:
            m.setattr(scholz, "_compiled_program", lambda *args: None)
            spans = lengths_and_moment_arms(model, q, names)
        assert (compiled[0] > 0).all()
        assert np.abs(compiled[0] - spans[0]).max() < 1e-15 and np.abs(compiled[1] - spans[1]).max() < 1e-15


def test_two_spheres_on_one_span_is_stationary():
    """The joint path over two spheres: smooth where the straight segment meets each sphere, and stationary."""
    rng = np.random.default_rng(0)
    eye = np.broadcast_to(np.eye(3), (4, 3, 3))
    obstacles = [ScholzObstacle("a", "sphere", "b", np.eye(4), 0.03, (0, 0.03, 0)),
                 ScholzObstacle("b", "sphere", "b", np.eye(4), 0.02, (0, -0.02, 0))]
    frames = [(eye, np.zeros((4, 3))), (eye, np.tile([0.1, 0.0, 0.0], (4, 1)))]
    a = np.tile([-0.08, 0.015, 0.0], (4, 1)) + rng.normal(0, 0.003, (4, 3))  # over the top of a, under b
    b = np.tile([0.18, -0.015, 0.0], (4, 1)) + rng.normal(0, 0.003, (4, 3))
    length, contacts = span_paths(a, b, obstacles, frames)
    (t1a, t2a, wa), (t1b, t2b, wb) = contacts
    assert wa.all() and wb.all()
    # smooth: the joining segment t2a -> t1b is tangent to both spheres
    e = (t1b - t2a) / np.linalg.norm(t1b - t2a, axis=-1)[:, None]
    assert np.abs(np.einsum("ni,ni->n", e, t2a)).max() < 1e-9
    assert np.abs(np.einsum("ni,ni->n", e, t1b - frames[1][1])).max() < 1e-9
    # stationary: moving the joining segment's mid-point changes L only to second order (a stationary path, as
    # OpenSim's solver finds; this one, over the top of one sphere and under the other, is a saddle)
    mid = 0.5 * (t2a + t1b)

    def through(x):
        return (obstacle_path("sphere", 0.03, (0, 0.03, 0), a, x)[0]
                + obstacle_path("sphere", 0.02, (0, -0.02, 0), x - [0.1, 0, 0], b - [0.1, 0, 0])[0])

    assert np.abs(through(mid) - length).max() < 1e-15
    for d in np.eye(3):
        slope = (through(mid + 1e-6 * d) - through(mid - 1e-6 * d)) / 2e-6
        assert np.abs(slope).max() < 1e-7


def test_hint_picks_the_side():
    """Short side (or lift-off) when the hint lies where the straight segment passes, the long way round when
    the hint is on the far side (the values OpenSim 4.6 gives started from the hints)."""
    p1, p2 = np.array([[-0.1, 0.0, 0.0]]), np.array([[0.1, 0.04, 0.02]])
    short = obstacle_path("sphere", 0.05, (0, 0.05, 0), p1, p2)[0][0]
    long = obstacle_path("sphere", 0.05, (0, -0.05, 0), p1, p2)[0][0]
    assert abs(short - 0.212923) < 1e-6 and abs(long - 0.254976) < 1e-6
    far = obstacle_path("sphere", 0.05, (0, 0.05, 0), p1, np.array([[0.1, 0.12, 0.0]]))
    assert not far[3][0] and abs(far[0][0] - np.hypot(0.2, 0.12)) < 1e-15  # lifted off: straight


@pytest.mark.opensim
def test_unsupported_surface_is_refused(osim, tmp_path):
    from osim_emb.io import load_osim
    from osim_emb.io.errors import UnsupportedFeatureError

    def torus(b):
        t = osim.ContactTorus()
        t.setName("ring")
        t.setTorusRadius(0.05)
        t.setTubeRadius(0.01)
        t.setFrame(b["humerus"])
        t.set_location(osim.Vec3(0, -0.3, 0))
        return t

    for name, make, hint, match in (
            ("hinted_torus", torus, (0.05, 0.0, 0.0), r"over_obstacle.*obstacle_0.*a torus with a contact hint"),):
        path = tmp_path / f"{name}.osim"
        muscles = (("over_obstacle", [("p", "humerus", (0.035, -0.05, 0.01)), ("o", "ring", hint),
                                      ("p", "forearm", (0.03, 0.15, 0.0))]),)
        build_scholz_model(osim, path, muscles, (("ring", make),))
        with pytest.raises(UnsupportedFeatureError, match=match):
            load_osim(path)
        assert not load_osim(path, strict=False).muscles


def _equals_opensim_and_minus_dl_dq(osim, path, muscles, q, *, wrapped_at_least, margin, arm_tol):
    """The model at ``path``: L equals OpenSim's getLength to 1e-8 m; at least ``wrapped_at_least`` (unit,
    configuration) pairs longer than the straight polyline by ``margin`` (the obstacles are touched); R = -dL/dq by
    central differences (h = 1e-6) to ``arm_tol``."""
    from osim_emb.io import load_osim
    from osim_emb.paths.geometry import lengths_and_moment_arms, muscle_lengths
    model = load_osim(path)
    lengths, arms = lengths_and_moment_arms(model, q)
    ref, _ = _opensim_lengths_and_moment_arms(osim, path, q, moment_arms=False)
    assert np.abs(lengths - ref).max() < 1e-8
    straight = np.column_stack([np.linalg.norm(np.diff(_points(model, name, q), axis=1), axis=-1).sum(axis=1)
                                for name, _ in muscles])
    assert (lengths > straight + margin).sum() >= wrapped_at_least
    h = 1e-6
    for k in range(q.shape[1]):
        dq = np.zeros(q.shape[1])
        dq[k] = h
        fd = -(muscle_lengths(model, q + dq) - muscle_lengths(model, q - dq)) / (2 * h)
        assert np.abs(fd - arms[:, k]).max() < arm_tol


@pytest.mark.opensim
def test_ellipsoid_without_hint_equals_opensim(osim, tmp_path):
    """An ellipsoid obstacle without a contact hint (the shortest way round, geodesics integrated numerically):
    L equals OpenSim's to 1e-8 m, R = -dL/dq of OpenSim's lengths to 1e-8 m."""
    path = tmp_path / "ellipsoid.osim"
    nan = (float("nan"),) * 3
    muscles = (("over_ellipsoid", [("p", "humerus", (0.035, -0.05, 0.01)), ("o", "egg", nan),
                                   ("p", "forearm", (0.03, 0.15, 0.0))]),)
    make = (("egg", lambda b: osim.ContactEllipsoid(osim.Vec3(0.03, 0.045, 0.025), osim.Vec3(0, -0.3, 0),
                                                     osim.Vec3(0.2, 0.3, 0.1), b["humerus"], "egg")),)
    build_scholz_model(osim, path, muscles, make)
    _equals_opensim_and_minus_dl_dq(osim, path, muscles, _configurations(8, seed=4), wrapped_at_least=3,
                                    margin=1e-6, arm_tol=1e-8)


@pytest.mark.opensim
def test_torus_without_hint_equals_opensim(osim, tmp_path):
    """A torus obstacle (a ring round the humerus at the elbow) without a contact hint, paths through its tube on
    the hole's side and across it: L equals OpenSim's to 1e-8 m; R = -dL/dq to 1e-9 m (central differences)."""
    path = tmp_path / "torus.osim"
    nan = (float("nan"),) * 3
    ends = (((0.03, -0.2, 0.0), (0.03, 0.15, 0.0)), ((0.045, -0.25, 0.01), (0.02, 0.15, 0.0)),
            ((0.0, -0.2, -0.035), (0.0, 0.15, -0.03)))
    muscles = tuple((f"ring_{k}", [("p", "humerus", a), ("o", "ring", nan), ("p", "forearm", b)])
                    for k, (a, b) in enumerate(ends))

    def ring(b):
        t = osim.ContactTorus(0.04, 0.015, osim.Vec3(0, -0.3, 0), osim.Vec3(np.pi / 2, 0, 0), b["humerus"])
        t.setName("ring")
        return t

    build_scholz_model(osim, path, muscles, (("ring", ring),))
    _equals_opensim_and_minus_dl_dq(osim, path, muscles, _configurations(8, seed=4), wrapped_at_least=10,
                                    margin=1e-5, arm_tol=1e-9)


@pytest.mark.opensim
def test_ellipsoid_sharing_a_span_equals_opensim(osim, tmp_path):
    """An ellipsoid and a sphere on one span (either order), no hints: the joint stationary path (Newton over the
    point between them, the ellipsoid's part integrated) equals OpenSim's to 1e-8 m; R = -dL/dq to 1e-9 m."""
    path = tmp_path / "shared.osim"
    nan = (float("nan"),) * 3
    start, end = ("p", "humerus", (0.035, -0.05, -0.01)), ("p", "forearm", (0.02, 0.0, 0.0))
    muscles = (("ball_then_egg", [start, ("o", "elbow_ball", nan), ("o", "egg_f", nan), end]),
               ("egg_then_ball", [start, ("o", "egg_h", nan), ("o", "forearm_ball", nan), end]))
    make = (("egg_f", lambda b: osim.ContactEllipsoid(osim.Vec3(0.012, 0.02, 0.015), osim.Vec3(0.045, 0.12, 0.0),
                                                       osim.Vec3(0.2, 0.3, 0.1), b["forearm"], "egg_f")),
            ("egg_h", lambda b: osim.ContactEllipsoid(osim.Vec3(0.025, 0.035, 0.03), osim.Vec3(0, -0.3, 0),
                                                       osim.Vec3(0.2, 0.3, 0.1), b["humerus"], "egg_h")))
    build_scholz_model(osim, path, muscles, make)
    _equals_opensim_and_minus_dl_dq(osim, path, muscles, _configurations(6, seed=3), wrapped_at_least=4,
                                    margin=1e-5, arm_tol=1e-9)


def _legacy_elbow_model(osim, path, ellipsoid=None, extra=None):
    """arm26-like: humerus (pin, shoulder) and forearm (pin about z, elbow); a WrapCylinder about the elbow axis
    on the humerus (or a WrapEllipsoid of semi-axes ``ellipsoid``); a triceps-like muscle behind it (wraps in
    flexion) and a biceps-like one in front.  ``extra(model, humerus, forearm)`` adds more before the file is
    written."""
    m, hum, fore, _ = pin_arm(osim, "elbow_cylinder", shoulder_orientation=(0.2, 0, 0),
                              coordinates=(("shoulder_elev", -0.5, 1.5), ("elbow_flex", 0.0, 2.3)))
    if ellipsoid is None:
        cyl = osim.WrapCylinder()
        cyl.set_radius(0.02)
        cyl.set_length(0.1)
    else:
        cyl = osim.WrapEllipsoid()
        cyl.set_dimensions(osim.Vec3(*ellipsoid))
    cyl.setName("elbow_pulley")
    cyl.set_translation(osim.Vec3(0, -0.3, 0))
    hum.addWrapObject(cyl)
    for name, pts, wrap in (("triceps", [(m.getGround(), (-0.03, -0.05, 0.0)), (hum, (-0.025, -0.15, 0.005)),
                                         (fore, (-0.02, 0.22, 0.0))], True),
                            ("biceps", [(m.getGround(), (0.03, 0.0, 0.01)), (fore, (0.025, 0.15, 0.0))], False)):
        mus = osim.Thelen2003Muscle(name, 100, 0.1, 0.1, 0.0)
        for k, (body, p) in enumerate(pts):
            mus.addNewPathPoint(f"{name}_{k}", body, osim.Vec3(*p))
        if wrap:
            mus.updGeometryPath().addPathWrap(cyl)
        m.addForce(mus)
    if extra is not None:
        extra(m, hum, fore)
    m.finalizeConnections()
    m.printToXML(str(path))


@pytest.mark.opensim
def test_smooth_paths_command_writes_a_model_opensim_evaluates_alike(osim, tmp_path):
    """`osim-emb smooth-paths`: the legacy cylinder becomes an obstacle; OpenSim 4.6 loads the file and its
    lengths equal the package's evaluation of it to 1e-8 m; the input is never overwritten."""
    from osim_emb.cli.main import main
    from osim_emb.io import load_osim
    from osim_emb.paths.geometry import muscle_lengths
    from osim_emb.paths.scholz import ScholzMusculotendon
    src = tmp_path / "legacy.osim"
    _legacy_elbow_model(osim, src)
    before = src.read_bytes()
    out = tmp_path / "smooth.osim"
    assert main(["smooth-paths", str(src), "-o", str(out)]) == 0
    assert src.read_bytes() == before
    assert main(["smooth-paths", str(src), "-o", str(out)]) != 0  # an existing output needs --overwrite
    assert main(["smooth-paths", str(src), "-o", str(out), "--overwrite"]) == 0
    assert main(["smooth-paths", str(src), "-o", str(src), "--overwrite"]) != 0  # never over the input
    assert src.read_bytes() == before
    model = load_osim(out)
    legacy = load_osim(src)
    assert isinstance(model.muscles[0], ScholzMusculotendon) and not isinstance(model.muscles[1], ScholzMusculotendon)
    rng = np.random.default_rng(5)
    q = np.column_stack([rng.uniform(-0.5, 1.5, 30), rng.uniform(0.0, 2.3, 30)])
    lengths = muscle_lengths(model, q)
    ref, _ = _opensim_lengths_and_moment_arms(osim, out, q, moment_arms=False)
    assert np.abs(lengths - ref).max() < 1e-8
    assert np.isnan(model.muscles[0].scholz_path.obstacles[0].hint).all()  # no hint: the short side
    hinted = tmp_path / "hinted.osim"  # --hints: a hint on the side the path wraps (behind the elbow)
    assert main(["smooth-paths", str(src), "-o", str(hinted), "--hints", "--check-configurations", "-1"]) == 0
    hint = load_osim(hinted).muscles[0].scholz_path.obstacles[0].hint
    assert np.isfinite(hint).all() and hint[0] < 0
    osim.Model(str(hinted)).initSystem()
    # checked against OpenSim, whose solver started from that hint ends elsewhere in part of the sample: no hint
    assert main(["smooth-paths", str(src), "-o", str(hinted), "--hints", "--overwrite"]) == 0
    assert np.isnan(load_osim(hinted).muscles[0].scholz_path.obstacles[0].hint).all()
    # the obstacle is wrapped in part of the sample, and the path is never shorter than the straight line
    straight = muscle_lengths(legacy, q, wrapping=False)[:, 0]
    wrapped = lengths[:, 0] > straight + 1e-9
    assert 5 <= wrapped.sum() <= 25 and (lengths[:, 0] >= straight - 1e-12).all()


@pytest.mark.opensim
def test_smooth_paths_converts_a_torus(osim, tmp_path, caplog):
    """A legacy WrapTorus (a ring round the humerus at the elbow) becomes a ContactTorus without a hint (with the
    warning that the ring's hold on the path is not carried over; unchecked: OpenSim's solver ends on another path in
    part of the command's sample, which then keeps it legacy); OpenSim 4.6 evaluates the file alike to 1e-8 m
    (but where its solver ends on a long path round the ring), and the smooth mode on the legacy model gives the
    same lengths as the package's import and R = -dL/dq."""
    from osim_emb.cli.main import main
    from osim_emb.io import load_osim
    from osim_emb.paths.geometry import muscle_lengths
    from osim_emb.paths.wrapping.smooth import smooth_path_lengths_and_moment_arms
    m, hum, fore, _ = pin_arm(osim, "elbow_ring", shoulder_orientation=(0.1, 0, 0), elbow_orientation=(0.15, 0.1, 0))
    ring = osim.WrapTorus()
    ring.setName("elbow_ring")
    ring.set_inner_radius(0.015)
    ring.set_outer_radius(0.04)
    ring.set_translation(osim.Vec3(0, -0.3, 0))
    ring.set_xyz_body_rotation(osim.Vec3(np.pi / 2, 0, 0))
    hum.addWrapObject(ring)
    mus = osim.Thelen2003Muscle("through_ring", 100, 0.1, 0.1, 0.0)
    mus.addNewPathPoint("origin", hum, osim.Vec3(0.045, -0.25, 0.01))
    mus.addNewPathPoint("insertion", fore, osim.Vec3(0.02, 0.15, 0.0))
    mus.updGeometryPath().addPathWrap(ring)
    m.addForce(mus)
    m.finalizeConnections()
    src, out = tmp_path / "legacy.osim", tmp_path / "smooth.osim"
    m.printToXML(str(src))
    with caplog.at_level("WARNING"):  # checked against OpenSim: its solver (cold or warm) ends elsewhere
        assert main(["smooth-paths", str(src), "-o", str(out), "--samples", "50"]) != 0
    kept = "'through_ring' kept as a legacy GeometryPath: OpenSim's evaluation of its smooth path differs"
    assert kept in caplog.text
    assert not out.exists()
    caplog.clear()
    with caplog.at_level("WARNING"):  # the conversion itself, unchecked
        assert main(["smooth-paths", str(src), "-o", str(out), "--samples", "50", "--check-configurations", "-1"]) == 0
    assert "holds the path inside its ring" in caplog.text
    model, legacy = load_osim(out), load_osim(src)
    (obstacle,) = model.muscles[0].scholz_path.obstacles
    assert obstacle.kind == "torus" and obstacle.radii == (0.04, 0.015) and np.isnan(obstacle.hint).all()
    q = _configurations(6, seed=4, elbow=(-1.0, 1.0))
    lengths = muscle_lengths(model, q)
    ref, _ = _opensim_lengths_and_moment_arms(osim, out, q, moment_arms=False)
    # equal, except where the straight line passes near the tube's core: there OpenSim's start (its projection
    # onto the surface overshoots across the hole) can end on a long path round the ring (+9.7 cm in row 3)
    same = np.abs(lengths - ref)[:, 0] < 1e-8
    assert same.sum() >= 5 and (ref[~same, 0] > lengths[~same, 0] + 0.01).all()
    smooth, arms = smooth_path_lengths_and_moment_arms(legacy, q)
    assert np.abs(smooth - lengths).max() < 1e-12
    assert (smooth[:, 0] > muscle_lengths(legacy, q, wrapping=False)[:, 0] + 1e-5).sum() >= 2
    h = np.array([0.0, 1e-6])
    fd = -(smooth_path_lengths_and_moment_arms(legacy, q + h)[0]
           - smooth_path_lengths_and_moment_arms(legacy, q - h)[0]) / 2e-6
    assert np.abs(fd - arms[:, 1, :]).max() < 1e-9


@pytest.mark.opensim
def test_unit_unsolvable_at_the_default_pose_stays_legacy(osim, tmp_path, monkeypatch):
    """A converted unit whose smooth path the package cannot solve at the default pose (here: made to raise) is
    kept as a legacy GeometryPath with the reason, instead of failing the whole conversion."""
    import osim_emb.paths.geometry as geometry
    from osim_emb.io import load_osim
    from osim_emb.io.scholz_convert import solvable_smooth_paths_tree
    src = tmp_path / "legacy.osim"
    _legacy_elbow_model(osim, src)
    model = load_osim(src)
    real = geometry.muscle_lengths

    def failing(model_, q, muscles=None, *args, **kwargs):
        if muscles == ["triceps"] and any(hasattr(u, "scholz_path") for u in model_.muscles):
            raise RuntimeError("geodesic wrapping did not converge (test)")
        return real(model_, q, muscles, *args, **kwargs)

    monkeypatch.setattr(geometry, "muscle_lengths", failing)
    tree, converted, warnings = solvable_smooth_paths_tree(model, 20)
    assert not converted
    assert any("'triceps' kept as a legacy GeometryPath: its smooth path has no solution at the default pose "
               "(geodesic wrapping did not converge (test))" in w for w in warnings)


@pytest.mark.opensim
def test_smooth_paths_keeps_element_names_with_colons(osim, tmp_path):
    """Older 4.x files name elements 'HuntCrossleyForce::ContactParametersSet' (not XML; OpenSim reads them): the
    conversion parses them and writes them back unchanged, and OpenSim loads the result."""
    from osim_emb.cli.main import main
    src = tmp_path / "legacy.osim"
    _legacy_elbow_model(osim, src)
    text = src.read_text()
    contact = ('<HuntCrossleyForce name="contact"><HuntCrossleyForce::ContactParametersSet name="parameters">'
               '<objects /></HuntCrossleyForce::ContactParametersSet></HuntCrossleyForce>')
    start = text.index("<objects>", text.index("<ForceSet")) + len("<objects>")
    src.write_text(text[:start] + contact + text[start:])
    out = tmp_path / "smooth.osim"
    assert main(["smooth-paths", str(src), "-o", str(out), "--samples", "20", "--lenient"]) == 0
    written = out.read_text()
    assert "<HuntCrossleyForce::ContactParametersSet" in written and "Scholz2015GeometryPath" in written
    osim.Model(str(out)).initSystem()


@pytest.mark.opensim
def test_malformed_paths_name_file_element_and_reason(osim, scholz_model, tmp_path):
    """A missing contact geometry, an obstacle first, an obstacle on an offset frame: clear errors."""
    from osim_emb.io import load_osim
    from osim_emb.io.errors import OsimImportError, UnsupportedFeatureError
    text = scholz_model.read_text()
    bad = tmp_path / "missing.osim"
    bad.write_text(text.replace("<socket_contact_geometry>/contactgeometryset/elbow_pulley<",
                                "<socket_contact_geometry>/contactgeometryset/nowhere<", 1))
    with pytest.raises(OsimImportError, match=r"missing.osim:\d+: <Scholz2015GeometryPathObstacle.*round_cylinder.*"
                                              r"'/contactgeometryset/nowhere' does not exist"):
        load_osim(bad)
    from lxml import etree
    root = etree.fromstring(text.encode())
    elements = root.find(".//PathActuator[@name='over_sphere']/Scholz2015GeometryPath/path_elements")
    elements.insert(0, elements[1])  # the obstacle first
    first = tmp_path / "first.osim"
    first.write_bytes(etree.tostring(root))
    with pytest.raises(OsimImportError, match="over_sphere.*must begin and end with a path point"):
        load_osim(first)
    root = etree.fromstring(text.encode())  # the sphere on an offset frame of the humerus
    g = root.find(".//ContactSphere[@name='elbow_ball']")
    g.find("socket_frame").text = "/elbow_frame"
    model = root.find("Model")
    comps = model.find("components")
    if comps is None:
        comps = etree.SubElement(model, "components")
    frame = etree.SubElement(comps, "PhysicalOffsetFrame", name="elbow_frame")
    etree.SubElement(frame, "socket_parent").text = "/bodyset/humerus"
    etree.SubElement(frame, "translation").text = "0 -0.3 0"
    etree.SubElement(frame, "orientation").text = "0 0 0"
    offset = tmp_path / "offset.osim"
    offset.write_bytes(etree.tostring(root))
    with pytest.raises(UnsupportedFeatureError, match="over_sphere.*offset frame.*ignores the offset"):
        load_osim(offset)


@pytest.mark.opensim
def test_json_export_refuses_scholz_paths(scholz_model):
    from osim_emb.io import load_osim
    from osim_emb.io.model_json import model_to_dict
    with pytest.raises(ValueError, match="over_sphere.*Scholz2015GeometryPath.*JSON"):
        model_to_dict(load_osim(scholz_model))


def _legacy_elbow_model_with_quadrant(osim, path, quadrant, ellipsoid=None):
    _legacy_elbow_model(osim, path, ellipsoid)
    text = path.read_text()
    assert "<quadrant>all</quadrant>" in text
    path.write_text(text.replace("<quadrant>all</quadrant>", f"<quadrant>{quadrant}</quadrant>"))


@pytest.mark.opensim
def test_smooth_paths_checks_every_unit_with_opensim(osim, tmp_path, caplog, capsys):
    """No silent disagreement: the legacy quadrant '+y' gives a contact hint from which OpenSim's solver ends on
    another path than the package's in part of the sample; the command says so (both lengths), writes the unit
    without the hint, and the written file then agrees with OpenSim (evaluated independently) to 1e-8 m."""
    from osim_emb.cli.main import main
    from osim_emb.io import load_osim
    from osim_emb.paths.geometry import muscle_lengths
    src = tmp_path / "legacy.osim"
    _legacy_elbow_model_with_quadrant(osim, src, "+y")
    out = tmp_path / "smooth.osim"
    with caplog.at_level("WARNING"):
        assert main(["smooth-paths", str(src), "-o", str(out), "--check-configurations", "30"]) == 0
    said = [r.getMessage() for r in caplog.records if "'triceps' written without contact hints" in r.getMessage()]
    assert len(said) == 1 and str(src) in said[0] and "elbow_pulley (hint [0.0, 0.02, 0.0])" in said[0]
    assert re.search(r"OpenSim's getLength( \([^)]*\))? is [\d.]+ m, the package's [\d.]+ m", said[0])
    printed = capsys.readouterr().out
    assert "OpenSim check: 1 units written" in printed and "1 written without their contact hints" in printed
    model = load_osim(out)
    assert np.isnan(model.muscles[0].scholz_path.obstacles[0].hint).all()
    rng = np.random.default_rng(11)
    q = np.column_stack([rng.uniform(-0.5, 1.5, 12), rng.uniform(0.0, 2.3, 12)])
    ref, _ = _opensim_lengths_and_moment_arms(osim, out, q, moment_arms=False)
    assert np.abs(muscle_lengths(model, q) - ref).max() < 1e-8


@pytest.mark.opensim
def test_unit_opensim_disagrees_with_stays_legacy(osim, tmp_path, monkeypatch):
    """A unit whose lengths still differ from OpenSim's once written without hints (here the package's lengths are
    made 0.5 um off) is kept legacy, with both lengths and the reason in the warning."""
    import osim_emb.paths.geometry as geometry
    from osim_emb.cli.smooth_paths import OpenSimLengthCheck
    from osim_emb.io import load_osim
    from osim_emb.io.scholz_convert import solvable_smooth_paths_tree
    src = tmp_path / "legacy.osim"
    _legacy_elbow_model_with_quadrant(osim, src, "-x")
    real = geometry.muscle_lengths
    monkeypatch.setattr(geometry, "muscle_lengths", lambda *a, **k: real(*a, **k) + 5e-7)
    tree, converted, warnings = solvable_smooth_paths_tree(load_osim(src), 50, check=OpenSimLengthCheck(3))
    assert not converted
    kept = [w for w in warnings if "'triceps' kept as a legacy GeometryPath: OpenSim's evaluation" in w]
    assert len(kept) == 1
    assert re.search(r"OpenSim's getLength( \([^)]*\))? is [\d.]+ m, the package's [\d.]+ m", kept[0])
    assert "the solvers' tolerances" in kept[0] and "with its contact hints:" in kept[0]


def test_smooth_paths_says_when_opensim_is_missing(tmp_path, monkeypatch, capsys, caplog):
    """Without OpenSim the command writes the file and says that the OpenSim check was not run."""
    osim = pytest.importorskip("opensim")  # to build the legacy model
    import osim_emb.opensim.bridge as bridge
    from osim_emb.cli.main import main
    src = tmp_path / "legacy.osim"
    _legacy_elbow_model(osim, src)

    def missing():
        raise ImportError("no opensim (test)")

    monkeypatch.setattr(bridge, "require_opensim", missing)
    with caplog.at_level("WARNING"):
        assert main(["smooth-paths", str(src), "-o", str(tmp_path / "smooth.osim")]) == 0
    assert "OpenSim check not run (OpenSim is not installed" in capsys.readouterr().out
    assert any("OpenSim check not run" in r.getMessage() for r in caplog.records)


@pytest.mark.opensim
@pytest.mark.parametrize("quadrant", ["-x", "+y"])
def test_ellipsoid_with_a_quadrant_converts_and_agrees_with_opensim(osim, tmp_path, quadrant, caplog):
    """A WrapEllipsoid with a quadrant becomes a ContactEllipsoid with the quadrant's hint (the semi-axis end) where
    the package solves from it (unchecked); checked against OpenSim, whose solver ends elsewhere in the sample with
    and without the hint, the unit is kept legacy (said)."""
    from osim_emb.cli.main import main
    from osim_emb.io import load_osim
    src, out = tmp_path / "legacy.osim", tmp_path / "smooth.osim"
    _legacy_elbow_model_with_quadrant(osim, src, quadrant, ellipsoid=(0.02, 0.025, 0.03))
    with_hint = tmp_path / "with_hint.osim"  # unchecked: the quadrant's hint is written (where the package solves
    assert main(["smooth-paths", str(src), "-o", str(with_hint), "--check-configurations", "-1"]) == 0  # from it)
    hint = load_osim(with_hint).muscles[0].scholz_path.obstacles[0].hint
    if quadrant == "-x":
        assert hint == pytest.approx([-0.02, 0.0, 0.0])
    else:  # from +y the package finds no path at the default pose: written without the hint
        assert np.isnan(hint).all()
    # checked: without the hint too, OpenSim's solver warm-started from the default pose ends on another path in
    # part of the sample (test_unit_whose_warm_start_diverges_stays_legacy): kept legacy, nothing else to write
    with caplog.at_level("WARNING"):
        assert main(["smooth-paths", str(src), "-o", str(out), "--check-configurations", "16"]) != 0
    assert "'triceps' kept as a legacy GeometryPath: OpenSim's evaluation of its smooth path differs" in caplog.text
    assert not out.exists()


@pytest.mark.opensim
def test_import_warns_that_opensim_may_leave_a_hints_side(scholz_model, caplog):
    """Which way OpenSim's solver goes from a contact hint depends on its iterates (docs/paths.md): the import
    says so, naming the file and the hinted units."""
    from osim_emb.io import load_osim
    with caplog.at_level(logging.WARNING, logger="osim_emb"):
        load_osim(scholz_model)
    messages = [r.getMessage() for r in caplog.records if "contact hints" in r.getMessage()]
    assert len(messages) == 1
    assert str(scholz_model) in messages[0]
    assert all(name in messages[0] for name, elements in MUSCLES if any(k == "o" for k, _, _ in elements))


def _opensim_warm_lengths(osim, path, q, names, enforce=True):
    """OpenSim's usual pattern at each configuration: ``s = model.initSystem()`` (the default pose), then each
    coordinate's ``setValue(s, v)``: the smooth-path solver starts from the default pose's path (warm)."""
    model = osim.Model(str(path))
    coords = model.getCoordinateSet()
    out = []
    for qk in q:
        s = model.initSystem()
        for k, v in enumerate(qk):
            coords.get(k).setValue(s, float(v), enforce)
        model.realizePosition(s)
        out.append([osim.PathActuator.safeDownCast(model.getForceSet().get(n)).getPath().getLength(s) for n in names])
    return np.array(out)


def _checked_configurations(path, n):
    """The configurations the command's OpenSim check compares (its sample of the written model, seed 1, all
    evaluated here: no path point enters an obstacle in these models)."""
    from osim_emb.io import load_osim
    from osim_emb.io.scholz_convert import _sample
    return _sample(load_osim(path), 4 * n, 1)[: n + 1]


@pytest.mark.opensim
def test_written_model_warm_start_equals_the_package_and_the_legacy_paths(osim, tmp_path, capsys):
    """Audit r22b #2: in OpenSim's usual pattern (initSystem, then setValue at the pose) the written model's lengths
    at the checked configurations equal the package's smooth lengths to 1e-8 m, and differ from OpenSim's legacy
    lengths by no more than the command reports for that unit; the final line says which starts were checked."""
    from osim_emb.cli.main import main
    from osim_emb.io import load_osim
    from osim_emb.paths.geometry import muscle_lengths
    src, out = tmp_path / "legacy.osim", tmp_path / "smooth.osim"
    _legacy_elbow_model(osim, src)
    assert main(["smooth-paths", str(src), "-o", str(out), "--check-configurations", "20"]) == 0
    printed = capsys.readouterr().out
    assert "from cold starts (initializeState at the pose) and warm starts from the default pose" in printed
    assert "at the default pose and 20 sampled configurations" in printed
    row = re.search(r"^triceps +([\d.]+) +([\d.]+) +([\d.]+) ", printed, re.M)
    reported_mm = float(row.group(3))
    q = _checked_configurations(out, 20)
    written = load_osim(out)
    assert type(written.muscles[0]).__name__ == "ScholzMusculotendon"
    warm = _opensim_warm_lengths(osim, out, q, ["triceps"])[:, 0]
    assert np.abs(warm - muscle_lengths(written, q, ["triceps"])[:, 0]).max() < 1e-8
    legacy = _opensim_warm_lengths(osim, src, q, ["triceps"])[:, 0]
    assert np.abs(warm - legacy).max() <= reported_mm * 1e-3 + 1e-6


@pytest.mark.opensim
def test_unit_whose_warm_start_diverges_stays_legacy(osim, tmp_path, caplog):
    """A unit that OpenSim's solver evaluates alike from a cold start but not warm from the default pose is kept
    legacy, named with the start, the configuration and both lengths; OpenSim's API, on the unchecked file,
    confirms the divergence at the checked configurations."""
    from osim_emb.cli.main import main
    from osim_emb.io import load_osim
    from osim_emb.paths.geometry import muscle_lengths
    src, out, unchecked = tmp_path / "legacy.osim", tmp_path / "smooth.osim", tmp_path / "unchecked.osim"
    _legacy_elbow_model(osim, src, ellipsoid=(0.02, 0.025, 0.03))
    with caplog.at_level("WARNING"):
        assert main(["smooth-paths", str(src), "-o", str(out), "--check-configurations", "16"]) != 0
    said = [r.getMessage() for r in caplog.records if "'triceps' kept as a legacy GeometryPath" in r.getMessage()]
    assert len(said) == 1 and not out.exists()
    assert re.search(r"at sampled configuration \d+ of 16 \(shoulder_elev -?[\d.]+ deg, elbow_flex -?[\d.]+ deg\) "
                     r"OpenSim's getLength \(warm start from the default pose\) is [\d.]+ m, the package's [\d.]+ m",
                     said[0]), said[0]
    assert main(["smooth-paths", str(src), "-o", str(unchecked), "--check-configurations", "-1"]) == 0
    q = _checked_configurations(unchecked, 16)
    ours = muscle_lengths(load_osim(unchecked), q, ["triceps"])[:, 0]
    warm = _opensim_warm_lengths(osim, unchecked, q, ["triceps"], enforce=False)[:, 0]
    cold, _ = _opensim_lengths_and_moment_arms(osim, unchecked, q, moment_arms=False)
    assert np.abs(cold[:, 0] - ours).max() < 1e-8 and np.abs(warm - ours).max() > 1e-6


@pytest.mark.opensim
def test_unit_with_a_point_inside_its_obstacle_stays_legacy(osim, tmp_path, caplog):
    """Audit r22b #2: a path point that enters its obstacle in part of the range (never at the default pose) would
    make OpenSim fail for the whole model there: the unit stays a legacy GeometryPath (said, with a configuration),
    the others convert, and OpenSim evaluates the written model at those configurations."""
    from osim_emb.cli.main import main
    from osim_emb.core.kinematics import body_transforms, forward_kinematics
    from osim_emb.io import load_osim

    def poked(m, hum, fore):  # a cylinder on the forearm 5 cm from the elbow axis sweeps over a humerus point
        cyl = osim.WrapCylinder()
        cyl.set_radius(0.02)
        cyl.set_length(0.1)
        cyl.setName("forearm_pulley")
        cyl.set_translation(osim.Vec3(0, 0.2, 0))
        fore.addWrapObject(cyl)
        mus = osim.Thelen2003Muscle("poked", 100, 0.1, 0.1, 0.0)
        mus.addNewPathPoint("poked_0", hum, osim.Vec3(0.05 * np.sin(1.2), -0.3 - 0.05 * np.cos(1.2), 0.0))
        mus.addNewPathPoint("poked_1", fore, osim.Vec3(0.0, 0.0, 0.0))
        mus.updGeometryPath().addPathWrap(cyl)
        m.addForce(mus)

    src, out = tmp_path / "legacy.osim", tmp_path / "smooth.osim"
    _legacy_elbow_model(osim, src, extra=poked)
    legacy = load_osim(src)
    q = np.column_stack([np.zeros(24), np.linspace(0.0, 2.3, 24)])
    # the point's distance from the cylinder's axis (the package's kinematics): inside in part of the range only
    t = body_transforms(legacy, forward_kinematics(legacy, q, order=0))
    names = [b.name for b in legacy.bodies]
    hum, fore = t[:, names.index("humerus")], t[:, names.index("forearm")]
    point = hum[:, :3, :3] @ np.array([0.05 * np.sin(1.2), -0.3 - 0.05 * np.cos(1.2), 0.0]) + hum[:, :3, 3]
    axis = fore[:, :3, :3] @ np.array([0.0, 0.2, 0.0]) + fore[:, :3, 3]
    inside = np.hypot(*(point - axis)[:, :2].T) < 0.02
    assert 0 < inside.sum() < len(q) and not inside[0]
    with caplog.at_level("WARNING"):
        assert main(["smooth-paths", str(src), "-o", str(out), "--check-configurations", "10"]) == 0
    said = [r.getMessage() for r in caplog.records if "'poked' kept as a legacy GeometryPath" in r.getMessage()]
    assert len(said) == 1 and "lies inside it in" in said[0] and "elbow_flex" in said[0]
    assert "forearm_pulley" not in caplog.text.split("cylinders")[-1]  # not listed among the converted cylinders
    model = osim.Model(str(out))
    paths = {n: osim.PathActuator.safeDownCast(model.getForceSet().get(n)).getPath().getConcreteClassName()
             for n in ("triceps", "poked")}
    assert paths == {"triceps": "Scholz2015GeometryPath", "poked": "GeometryPath"}
    warm = _opensim_warm_lengths(osim, out, q[inside], ["triceps", "poked"])
    assert np.isfinite(warm).all()


@pytest.mark.opensim
def test_a_path_spring_over_a_wrap_object_is_converted_and_checked(osim, tmp_path):
    """A PathSpring wrapping the elbow cylinder (opensim-core's shoulder model has 103): its path is a 'path'
    property, not a PathActuator's; the command converted it and then crashed in its OpenSim check (the corpus study
    of round 23). Now converted, checked, and OpenSim's length of the written spring equals the package's."""
    from osim_emb.cli.main import main
    from osim_emb.io import load_osim
    from osim_emb.paths.geometry import muscle_lengths

    def spring(m, hum, fore):
        s = osim.PathSpring("spring", 0.2, 100.0, 0.1)
        s.updGeometryPath().appendNewPathPoint("spring_0", hum, osim.Vec3(-0.025, -0.15, 0.005))
        s.updGeometryPath().appendNewPathPoint("spring_1", fore, osim.Vec3(-0.02, 0.22, 0.0))
        s.updGeometryPath().addPathWrap(hum.getWrapObject("elbow_pulley"))
        m.addForce(s)

    src, out = tmp_path / "legacy.osim", tmp_path / "smooth.osim"
    _legacy_elbow_model(osim, src, extra=spring)
    assert main(["smooth-paths", str(src), "-o", str(out), "--check-configurations", "20"]) == 0
    model = load_osim(out)
    assert type(model.muscles[-1]).__name__ == "ScholzMusculotendon" and model.muscles[-1].name == "spring"
    q = np.column_stack([np.full(10, 0.3), np.linspace(0.0, 2.3, 10)])
    theirs = osim.Model(str(out))
    theirs.initSystem()
    path = osim.AbstractGeometryPath.safeDownCast(
        theirs.getForceSet().get("spring").getPropertyByName("path").getValueAsObject())
    ours = muscle_lengths(model, q, ["spring"])[:, 0]
    for k, (shoulder, elbow) in enumerate(q):  # a cold start at each pose, as the command checks
        state = theirs.initializeState()
        theirs.getCoordinateSet().get("shoulder_elev").setValue(state, shoulder, False)
        theirs.getCoordinateSet().get("elbow_flex").setValue(state, elbow, False)
        theirs.realizePosition(state)
        assert abs(path.getLength(state) - ours[k]) < 1e-8


def test_sampled_poses_where_a_loop_cannot_close_are_left_out(monkeypatch):
    """ThoracoscapularShoulderModel's loop cannot close at some sampled poses (smooth-paths failed there): those rows
    are dropped, the default pose (row 0) kept; a model that cannot close at its default pose is refused."""
    import types
    from osim_emb.core import kinematics
    from osim_emb.core.closed_chains import AssemblyError
    from osim_emb.io.scholz_convert import _assembling

    def fk(model, q, order=0):  # the loop closes where q[:, 0] <= 1 (a stand-in for the assembly)
        if (q[:, 0] > 1.0).any():
            raise AssemblyError("cannot assemble")
        return None

    monkeypatch.setattr(kinematics, "forward_kinematics", fk)
    model = types.SimpleNamespace(name="loop", dependent_coordinates=("f",))
    q = np.array([[0.0, 0.0], [2.0, 0.1], [0.5, 0.2], [3.0, 0.3]])
    np.testing.assert_array_equal(_assembling(model, q), q[[0, 2]])
    with pytest.raises(AssemblyError, match="default pose"):
        _assembling(model, q[[1, 2]])
    assert _assembling(types.SimpleNamespace(name="tree", dependent_coordinates=()), q) is q
