"""Smooth wrapping over spheres and cylinders (issue 13, item 2): the closed-form paths are the shortest
(numerical minimization over the tangent points agrees) and R = -dL/dq to 1e-9 m (central differences)."""

from __future__ import annotations

import numpy as np
import pytest
from opensim_builders import pin_arm
from scipy.optimize import minimize

from osim_emb.paths.wrapping.smooth import (cylinder_shortest_path, smooth_path_lengths_and_moment_arms,
                                      sphere_shortest_path)


def _sphere_point(u):
    return np.array([np.cos(u[0]) * np.cos(u[1]), np.cos(u[0]) * np.sin(u[1]), np.sin(u[0])])


@pytest.mark.parametrize("seed", range(4))
def test_sphere_path_is_the_shortest(seed):
    rng = np.random.default_rng(seed)
    r = 0.05
    p1 = np.array([-0.12, 0.03, 0.01]) + rng.normal(0, 0.01, 3)
    p2 = np.array([0.11, -0.02, 0.02]) + rng.normal(0, 0.01, 3)
    length, t1, t2, wrapped = sphere_shortest_path(p1, p2, r)
    assert wrapped[0]
    assert np.allclose(np.linalg.norm(t1), r) and np.allclose(np.linalg.norm(t2), r)

    def path_length(u):  # contact points anywhere on the sphere, great-circle arc between them
        a, b = r * _sphere_point(u[:2]), r * _sphere_point(u[2:])
        return np.linalg.norm(a - p1) + r * np.arccos(np.clip(a @ b / r ** 2, -1, 1)) + np.linalg.norm(p2 - b)

    def outside(u):  # the straight parts stay outside the ball: (p - a) . a >= 0
        a, b = r * _sphere_point(u[:2]), r * _sphere_point(u[2:])
        return np.array([(p1 - a) @ a, (p2 - b) @ b]) / r ** 2

    def angles(t):
        t = t / r
        return [np.arcsin(t[2]), np.arctan2(t[1], t[0])]

    start = np.array(angles(t1[0]) + angles(t2[0])) + rng.normal(0, 0.05, 4)
    best = minimize(path_length, start, method="SLSQP", constraints={"type": "ineq", "fun": outside},
                    options={"ftol": 1e-15, "maxiter": 500})
    assert abs(best.fun - length[0]) < 1e-9
    assert length[0] <= best.fun + 1e-12


@pytest.mark.parametrize("seed", range(4))
def test_cylinder_path_is_the_shortest_helix(seed):
    rng = np.random.default_rng(10 + seed)
    r = 0.04
    p1 = np.array([-0.1, 0.02, -0.05]) + rng.normal(0, 0.01, 3)
    p2 = np.array([0.09, -0.01, 0.06]) + rng.normal(0, 0.01, 3)
    length, t1, t2, wrapped = cylinder_shortest_path(p1, p2, r)
    assert wrapped[0]
    assert np.allclose(np.hypot(t1[0, 0], t1[0, 1]), r) and np.allclose(np.hypot(t2[0, 0], t2[0, 1]), r)

    def path_length(u):  # (phi1, z1, phi2, z2): helix between the contact points, the shorter way round
        a = np.array([r * np.cos(u[0]), r * np.sin(u[0]), u[1]])
        b = np.array([r * np.cos(u[2]), r * np.sin(u[2]), u[3]])
        dphi = abs((u[2] - u[0] + np.pi) % (2 * np.pi) - np.pi)
        return np.linalg.norm(a - p1) + np.hypot(r * dphi, u[3] - u[1]) + np.linalg.norm(p2 - b)

    def outside(u):  # the straight parts stay outside the cylinder (in projection)
        a = np.array([np.cos(u[0]), np.sin(u[0])])
        b = np.array([np.cos(u[2]), np.sin(u[2])])
        return np.array([(p1[:2] / r - a) @ a, (p2[:2] / r - b) @ b])

    start = np.array([np.arctan2(t1[0, 1], t1[0, 0]), t1[0, 2], np.arctan2(t2[0, 1], t2[0, 0]), t2[0, 2]])
    best = minimize(path_length, start + rng.normal(0, 0.05, 4), method="SLSQP",
                    constraints={"type": "ineq", "fun": outside}, options={"ftol": 1e-15, "maxiter": 500})
    assert abs(best.fun - length[0]) < 1e-9
    assert length[0] <= best.fun + 1e-12


def test_no_contact_is_a_straight_line_and_lift_off_is_smooth():
    r = 0.05
    p1 = np.array([[-0.1, 0.2, 0.0]])
    p2 = np.array([[0.1, 0.2, 0.0]])
    length, t1, _, wrapped = sphere_shortest_path(p1, p2, r)
    assert not wrapped[0] and np.isnan(t1).all() and np.isclose(length[0], 0.2)
    # across lift-off (segment tangent to the sphere at y = r), L and dL/dy are continuous (dL/dy = 0)
    ys = r + np.array([-2e-6, -1e-6, 1e-6, 2e-6])
    p1s = np.column_stack([np.full(4, -0.1), ys, np.zeros(4)])
    p2s = p1s * [-1, 1, 1]
    lengths, _, _, w = sphere_shortest_path(p1s, p2s, r)
    assert list(w) == [True, True, False, False]
    slopes = np.diff(lengths) / np.diff(ys)  # dL/dy -> 0 on both sides (like sqrt(r - y) when wrapped)
    assert np.abs(slopes).max() < 1e-4


def _wrap_model(osim, path):
    """Ground - humerus (pin q1) - forearm (pin q2 about a tilted axis); a sphere on the humerus at the elbow
    and a cylinder (rotated) on the forearm; three muscles crossing them."""
    m, hum, fore, torso = pin_arm(osim, "smooth_wrap", torso=True, elbow_orientation=(0.2, 0.1, 0),
                                  elbow_child_orientation=(0, 0, 0), coordinates=(("q1", -2.5, 2.5), ("q2", -2.5, 2.5)))
    sphere = osim.WrapSphere()
    sphere.setName("elbow_ball")
    sphere.set_radius(0.03)
    sphere.set_translation(osim.Vec3(0, -0.3, 0))
    hum.addWrapObject(sphere)
    cyl = osim.WrapCylinder()
    cyl.setName("forearm_cyl")
    cyl.set_radius(0.02)
    cyl.set_length(1.0)
    cyl.set_translation(osim.Vec3(0, 0.1, 0))
    cyl.set_xyz_body_rotation(osim.Vec3(0.3, 1.2, 0.2))
    fore.addWrapObject(cyl)
    for name, pts, wraps in (
            ("over_ball", [(hum, (0.035, -0.05, 0.01)), (fore, (0.03, 0.15, 0.0))], ["elbow_ball"]),
            ("round_cyl", [(hum, (-0.02, -0.2, 0.05)), (fore, (0.0, 0.15, 0.04)), (fore, (-0.03, 0.0, -0.04))],
             ["forearm_cyl"]),
            ("both", [(torso, (0.05, 0.05, 0.02)), (hum, (0.04, -0.1, 0.0)), (fore, (0.02, 0.2, 0.02)),
                      (fore, (-0.04, -0.05, 0.0))], ["elbow_ball", "forearm_cyl"])):
        mus = osim.Thelen2003Muscle(name, 100, 0.1, 0.1, 0.0)
        for k, (body, p) in enumerate(pts):
            mus.addNewPathPoint(f"{name}_{k}", body, osim.Vec3(*p))
        for w in wraps:
            mus.updGeometryPath().addPathWrap(sphere if w == "elbow_ball" else cyl)
        m.addForce(mus)
    m.finalizeConnections()
    m.printToXML(str(path))


@pytest.mark.opensim
def test_smooth_moment_arms_equal_minus_dl_dq(osim, tmp_path):
    from osim_emb.io import load_osim
    path = tmp_path / "smooth_wrap.osim"
    _wrap_model(osim, path)
    model = load_osim(path)
    q = np.random.default_rng(8).uniform(-1.5, 1.5, (40, 2))
    lengths, arms = smooth_path_lengths_and_moment_arms(model, q)
    h = 1e-6
    n_wrapped = 0
    for k in range(2):
        dq = np.zeros(2)
        dq[k] = h
        lp = smooth_path_lengths_and_moment_arms(model, q + dq)[0]
        lm = smooth_path_lengths_and_moment_arms(model, q - dq)[0]
        fd = -(lp - lm) / (2 * h)
        assert np.abs(fd - arms[:, k, :]).max() < 1e-9
    # the obstacles are hit in a good share of the configurations
    from osim_emb.paths.geometry import muscle_lengths
    straight = muscle_lengths(model, q, wrapping=False)
    n_wrapped = int(np.sum(lengths > straight + 1e-9))
    assert n_wrapped > 20
    assert np.all(lengths >= straight - 1e-12)


@pytest.mark.opensim
def test_two_obstacles_on_one_segment(osim, tmp_path):
    """Two wrap objects meeting one straight segment: the joint path over both (each on its short side), with
    R = -dL/dq to 1e-9 m, longer than the path over either alone."""
    from osim_emb.io import load_osim
    m = osim.Model()
    m.setName("two_on_segment")
    arm = osim.Body("arm", 1.0, osim.Vec3(0), osim.Inertia(0.1))
    m.addBody(arm)
    j = osim.PinJoint("hinge", m.getGround(), osim.Vec3(0), osim.Vec3(0), arm, osim.Vec3(0), osim.Vec3(0))
    m.addJoint(j)
    j.updCoordinate().setName("q")
    j.updCoordinate().setRangeMin(-1.0)
    j.updCoordinate().setRangeMax(1.0)
    balls = []
    for name, centre, r in (("ball_a", (0.1, 0.02, 0.0), 0.03), ("ball_b", (0.2, -0.01, 0.01), 0.025)):
        w = osim.WrapSphere()
        w.setName(name)
        w.set_radius(r)
        w.set_translation(osim.Vec3(*centre))
        m.getGround().addWrapObject(w)
        balls.append(w)
    for name, wraps in (("both", balls), ("a_only", balls[:1]), ("b_only", balls[1:])):
        mus = osim.Thelen2003Muscle(name, 100, 0.1, 0.1, 0.0)
        mus.addNewPathPoint(f"{name}_0", m.getGround(), osim.Vec3(0.0, 0.0, 0.0))
        mus.addNewPathPoint(f"{name}_1", arm, osim.Vec3(0.3, 0.0, 0.0))
        for w in wraps:
            mus.updGeometryPath().addPathWrap(w)
        m.addForce(mus)
    m.finalizeConnections()
    path = tmp_path / "two.osim"
    m.printToXML(str(path))
    model = load_osim(path)
    q = np.linspace(-0.1, 0.1, 11)[:, None]
    lengths, arms = smooth_path_lengths_and_moment_arms(model, q)
    assert (lengths[:, 0] > np.maximum(lengths[:, 1], lengths[:, 2]) + 1e-6).sum() >= 4
    h = 1e-6
    fd = -(smooth_path_lengths_and_moment_arms(model, q + h)[0] - smooth_path_lengths_and_moment_arms(model, q - h)[0])
    assert np.abs(fd / (2 * h) - arms[:, 0, :]).max() < 1e-9


def test_ellipsoid_geodesic_equals_the_closed_form_sphere():
    """The integrated geodesic path over an ellipsoid with equal radii equals the closed-form sphere path
    (short side, no hint, the long way round)."""
    from osim_emb.paths.geodesic import Ellipsoid, surface_path
    rng = np.random.default_rng(0)
    p1 = np.array([-0.1, 0.02, 0.0]) + rng.normal(0, 0.01, (4, 3))
    p2 = np.array([0.1, 0.01, 0.01]) + rng.normal(0, 0.01, (4, 3))
    for hint in [(0, 0.05, 0), (np.nan,) * 3, (0, -0.05, 0)]:
        length, t1, t2, wrapped = surface_path(Ellipsoid([0.05, 0.05, 0.05]), hint, p1, p2)
        ref, r1, r2, w = sphere_or_long(hint, p1, p2)
        assert (wrapped == w).all() and np.abs(length - ref).max() < 1e-10
        assert np.abs(t1 - r1)[w].max() < 1e-8


def sphere_or_long(hint, p1, p2):
    from osim_emb.paths.scholz import obstacle_path
    return obstacle_path("sphere", 0.05, hint, p1, p2)


def _polyline_over_torus(torus, a, b, n_points):
    """The shortest polyline a -> n_points vertices -> b with its vertices outside the torus, vertex k in the
    plane across a b at k / (n_points + 1) of the way (SLSQP, analytic gradients): a path that converges to the
    shortest path as O(h^2) from below (chords cut the tube between vertices)."""
    s = np.linspace(0, 1, n_points + 2)[1:-1]
    d = b - a
    e = d / np.linalg.norm(d)
    u1 = np.cross(e, [1.0, 0, 0])
    u1 /= np.linalg.norm(u1)
    basis = np.stack([u1, np.cross(e, u1)], axis=1)
    base = a + s[:, None] * d
    rho = np.hypot(base[:, 0], base[:, 1])
    core = np.column_stack([torus.R * base[:, 0] / rho, torus.R * base[:, 1] / rho, 0 * rho])
    out = base - core
    dist = np.linalg.norm(out, axis=1)
    start = np.where((dist < torus.r)[:, None], core + out / dist[:, None] * torus.r * 1.01, base)  # outside

    def points(z):
        return base + z.reshape(-1, 2) @ basis.T

    def length(z):
        step = np.diff(np.vstack([a, points(z), b]), axis=0)
        norm = np.linalg.norm(step, axis=1)
        u = step / norm[:, None]
        return norm.sum(), ((u[:-1] - u[1:]) @ basis).ravel()

    def jacobian(z):
        g = torus.grad(points(z)) @ basis
        jac = np.zeros((n_points, 2 * n_points))
        k = np.arange(n_points)
        jac[k, 2 * k], jac[k, 2 * k + 1] = g[:, 0], g[:, 1]
        return jac

    res = minimize(length, ((start - base) @ basis).ravel(), jac=True, method="SLSQP",
                   constraints=[dict(type="ineq", fun=lambda z: torus.f(points(z)), jac=jacobian)],
                   options=dict(ftol=1e-16, maxiter=3000))
    assert res.success, res.message
    return res.fun


def test_torus_path_is_the_limit_of_constrained_polylines():
    """Over a torus (segments through its tube, on the hole's side and across the top), the integrated geodesic
    path is the limit of the shortest polylines kept outside the torus: they approach it from below as h^2
    (error ratio 4 when h halves) and their Richardson extrapolation equals it to 3e-8 m."""
    from osim_emb.paths.geodesic import Torus, surface_path
    torus = Torus(0.04, 0.015)
    p1 = np.array([[0.03, 0.005, 0.08], [0.05, 0.0, 0.04]])
    p2 = np.array([[0.025, -0.01, -0.07], [0.05, 0.01, -0.05]])
    length, t1, t2, wrapped = surface_path(torus, (np.nan,) * 3, p1, p2)
    assert wrapped.all() and (length > np.linalg.norm(p2 - p1, axis=1) + 5e-5).all()
    for k in range(1):  # one case: SLSQP over 400 unknowns takes a few seconds
        coarse, fine = (_polyline_over_torus(torus, p1[k], p2[k], n) for n in (100, 200))
        assert coarse < fine < length[k]
        assert 3.0 < (length[k] - coarse) / (length[k] - fine) < 5.0
        assert abs((4 * fine - coarse) / 3 - length[k]) < 3e-8


def test_torus_with_a_large_major_radius_tends_to_the_cylinder():
    """A torus whose centre circle is large is, near its outer equator, a cylinder of the tube's radius about the
    circle's tangent: the integrated torus path tends to the closed-form cylinder helix as 1/R (R (L_torus -
    L_cylinder) the same for R = 10, 100, 1000 m to 1e-3)."""
    from osim_emb.paths.geodesic import Torus, surface_path
    r = 0.015
    c1 = np.array([[0.005, 0.08, -0.05], [-0.004, 0.06, -0.03]])  # cylinder frame, axis z
    c2 = np.array([[-0.003, -0.07, 0.05], [0.006, -0.05, 0.04]])
    cylinder, _, _, wrapped = cylinder_shortest_path(c1, c2, r)
    assert wrapped.all()
    scaled = []
    for big in (10.0, 100.0, 1000.0):
        def to_torus(c):  # the cylinder's axis along the torus's y axis at (R, 0, 0)
            return np.column_stack([big + c[:, 0], c[:, 2], c[:, 1]])
        length = surface_path(Torus(big, r), (np.nan,) * 3, to_torus(c1), to_torus(c2))[0]
        assert np.abs(length - cylinder).max() < 2e-5 / big
        scaled.append(big * (length - cylinder))
    assert np.abs(scaled[1] / scaled[0] - 1).max() < 1e-3 and np.abs(scaled[2] / scaled[0] - 1).max() < 1e-3


def test_compiled_geodesics_equal_numpy():
    """The compiled RK4 (paths._geodesic_kernels) gives the numpy integration's geodesics to 1e-15 m, on an
    ellipsoid and a torus; the compiled path's contact points lie on the surface with the straight segments
    tangent there (the numpy tangency conditions to 1e-10) and its length is theirs plus the geodesic's from P to Q
    (numpy RK4 along the direction of the first segment)."""
    import osim_emb.paths.geodesic as geodesic
    rng = np.random.default_rng(2)
    for surface, p1, p2 in ((geodesic.Ellipsoid([0.03, 0.045, 0.025]), [-0.1, 0.02, 0.0], [0.1, 0.01, 0.01]),
                            (geodesic.Torus(0.04, 0.015), [0.03, 0.0, 0.08], [0.03, 0.0, -0.08])):
        x = geodesic._project(surface, rng.normal(0, 0.03, (5, 3)))
        n = geodesic._unit(surface.grad(x))
        v = geodesic._unit(np.cross(n, rng.normal(size=(5, 3))))
        length = rng.uniform(0.0, 0.05, 5)
        for a, b in zip(geodesic._shoot(surface, x, v, length), geodesic._shoot_numpy(surface, x, v, length)):
            assert np.abs(a - b).max() < 1e-15
        a = np.array(p1) + rng.normal(0, 0.005, (3, 3))
        b = np.array(p2) + rng.normal(0, 0.005, (3, 3))
        total, t1, t2, wrapped = geodesic.surface_path(surface, (np.nan,) * 3, a, b)
        assert wrapped.all() and np.abs(surface.f(t1)).max() < 1e-12 and np.abs(surface.f(t2)).max() < 1e-12
        n1, n2 = geodesic._unit(surface.grad(t1)), geodesic._unit(surface.grad(t2))
        d1, d2 = geodesic._unit(t1 - a), geodesic._unit(b - t2)
        assert np.abs(np.einsum("ni,ni->n", d1, n1)).max() < 1e-10
        assert np.abs(np.einsum("ni,ni->n", d2, n2)).max() < 1e-10
        arc = total - np.linalg.norm(t1 - a, axis=1) - np.linalg.norm(b - t2, axis=1)
        q, tq = geodesic._shoot_numpy(surface, t1, d1, arc)
        assert np.abs(q - t2).max() < 1e-10 and np.abs(tq - d2).max() < 1e-8


def test_segments_through_a_fat_torus_never_pass_straight():
    """A fat torus (MoBL's ECU: R = 9 mm, tube 6 mm, a 3 mm hole): segments that pass through the tube near the
    hole wrap (the start is projected radially from the core circle; Newton's projection along the gradient
    overshot across the hole and the path lifted off, straight through the tube)."""
    from osim_emb.paths.geodesic import Torus, segment_meets, surface_path
    torus = Torus(0.009, 0.006)
    rng = np.random.default_rng(3)
    p1 = np.array([0.0056, 0.0071, 0.0118]) + rng.normal(0, 0.002, (12, 3))
    p2 = np.array([0.009, -0.0111, -0.0314]) + rng.normal(0, 0.002, (12, 3))
    length, t1, t2, wrapped = surface_path(torus, (np.nan,) * 3, p1, p2)
    meets = segment_meets(torus, p1, p2)
    assert meets.sum() >= 8 and (wrapped == meets).all()
    assert (length[meets] > np.linalg.norm(p2 - p1, axis=1)[meets] + 1e-5).all()
    assert np.abs(torus.f(t1[meets])).max() < 1e-12 and np.abs(torus.f(t2[meets])).max() < 1e-12


def test_jacobi_field_jacobian_equals_central_differences():
    """Newton's Jacobian from the natural geodesic variations (slide, shift and turn as Jacobi fields a'' + K a = 0
    integrated beside the geodesic, lengthening) equals central differences of the tangency residual to 1e-6 of
    its size, on an ellipsoid and a torus."""
    import osim_emb.paths.geodesic as geodesic
    rng = np.random.default_rng(1)
    for surface, offset in ((geodesic.Ellipsoid([0.03, 0.045, 0.025]), 0.0), (geodesic.Torus(0.04, 0.015), 0.04)):
        x = geodesic._project(surface, rng.normal(0, 0.03, (4, 3)) + [offset, 0.0, 0.0])
        normal = geodesic._unit(surface.grad(x))
        t = geodesic._unit(np.cross(normal, rng.normal(size=(4, 3))))
        length = rng.uniform(0.005, 0.04, 4)
        q, tq = geodesic._shoot(surface, x, t, length)
        p1 = x - 0.05 * t + 0.02 * normal
        p2 = q + 0.05 * tq + 0.02 * geodesic._unit(surface.grad(q))
        _, e1, e2 = geodesic._tangent_basis(surface, x, t)
        u = np.column_stack([np.zeros((4, 3)), length])
        fd = np.empty((4, 4, 4))
        for c in range(4):
            du = np.zeros_like(u)
            du[:, c] = 1e-7
            fd[:, :, c] = (geodesic._residual(surface, p1, p2, x, e1, e2, t, u + du)[0]
                           - geodesic._residual(surface, p1, p2, x, e1, e2, t, u - du)[0]) / 2e-7
        jacobi = geodesic._jacobi_jacobian(surface, p1, p2, x, t, q, tq, length)
        assert np.abs(jacobi - fd).max() < 1e-6 * np.abs(fd).max()
