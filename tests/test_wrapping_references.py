"""The compiled wrapping, path and moment-arm kernels against independent references.

The kernels (``osim_emb.paths.wrapping._kernels*``) are the package's one implementation of
OpenSim's wrapping; these tests check them against what does not come from them:

* closed-form geometry: tangency and arc lengths of the sphere and the cylinder (the shortest
  path around a circle: tangent lengths plus arc), the helix length, points on the surfaces;
* the definition of the path length (straight segments between the ground positions of the
  sequence plus the wrap lengths), recomputed here from the kernel's sequence and tangent points;
* the package's numpy kinematics (``forward_kinematics``) for the points the kernel places;
* finite differences (R = -dL/dq) where the geometry is exact (no wrapping, sphere wraps);
* OpenSim 4.6 (``getLength``, ``computeMomentArm``) on arm26 and MoBL, in the mode that
  reproduces it (``opensim_compat=True``).

Further comparisons with OpenSim: tests/test_wrapping_sphere_cylinder_torus.py,
test_wrapping_path.py, test_wrapping_ellipsoid.py, test_moment_arms.py, test_moment_arm_harness.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from osim_emb.paths.wrapping.base import WrapStatus
from osim_emb.paths.wrapping.cylinder import WrapCylinder
from osim_emb.paths.wrapping.ellipsoid import WrapEllipsoid
from osim_emb.paths.wrapping.path import PathWrapSpec, wrap_path
from osim_emb.paths.wrapping.sphere import WrapSphere
from osim_emb.paths.wrapping.torus import WrapTorus, find_circle_point

QUADRANTS = ["all", "x", "-x", "y", "-y", "z", "-z"]


def segments(seed, n, scale, zscale=1.0):
    """Random segments whose end points lie 1.05-3 ``scale`` from the origin (many cross the object)."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(2, n, 3))
    d /= np.linalg.norm(d, axis=2, keepdims=True)
    p = d * scale * rng.uniform(1.05, 3.0, (2, n, 1))
    p[..., 2] *= zscale
    return p[0], p[1]


def angle(a, b):
    """Angle between the rows of a and b, 2-D or 3-D (atan2 form, accurate near 0 and pi)."""
    if a.shape[-1] == 2:
        a, b = (np.concatenate([x, np.zeros(x.shape[:-1] + (1,))], axis=-1) for x in (a, b))
    return np.arctan2(np.linalg.norm(np.cross(a, b), axis=-1), np.sum(a * b, axis=-1))


def shortest_around_circle(p1, p2, radius):
    """Length of the shortest path from p1 to p2 around a circle (2-D, or a sphere in the plane of
    p1, p2 and the centre): tangent lengths plus the arc between the tangent points."""
    d1, d2 = np.linalg.norm(p1, axis=-1), np.linalg.norm(p2, axis=-1)
    arc = angle(p1, p2) - np.arccos(radius / d1) - np.arccos(radius / d2)
    return np.sqrt(d1 ** 2 - radius ** 2) + np.sqrt(d2 ** 2 - radius ** 2) + radius * arc


def segment_crosses_ball(p1, p2, radius):
    """Whether the straight segment p1-p2 passes through the open ball of ``radius`` (2-D or 3-D)."""
    d = p2 - p1
    t = np.clip(-np.sum(p1 * d, axis=-1) / np.sum(d * d, axis=-1), 0.0, 1.0)
    return np.linalg.norm(p1 + t[:, None] * d, axis=-1) < radius


def helix_turns_ok(length, radius, theta, dz, short_only, rtol=1e-11):
    """Whether each length is that of a helix sqrt((radius phi)^2 + dz^2) about the axis, phi the short
    angle theta between the tangent points, or with a quadrant (OpenSim's "long wrap") 2 pi - theta or
    2 pi + theta (OpenSim then adds a full turn to the angle from r1 to r2)."""
    phis = [theta] if short_only else [theta, 2 * np.pi - theta, 2 * np.pi + theta]
    ok = np.zeros(len(length), dtype=bool)
    for phi in phis:
        ok |= np.isclose(length, np.hypot(radius * phi, dz), rtol=rtol, atol=1e-15)
    return bool(ok.all())


# ---------------------------------------------------------------------------
# wrap objects, one segment at a time: closed-form geometry
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("quadrant", QUADRANTS)
def test_sphere_tangent_points_and_arc(quadrant):
    R = 0.05
    p1, p2 = segments(1, 1500, R)
    res = WrapSphere("s", "b", quadrant=quadrant, radius=R).wrap_segment(p1, p2)
    w = res.wrapped
    assert w.sum() > 200
    r1, r2, a, b = res.r1[w], res.r2[w], p1[w], p2[w]
    for r, p in ((r1, a), (r2, b)):
        np.testing.assert_allclose(np.linalg.norm(r, axis=1), R, rtol=1e-13)
        np.testing.assert_allclose(np.sum((p - r) * r, axis=1), 0.0, atol=1e-15)  # tangent
    # the path lies in the plane through P1, P2 and the centre
    nrm = np.cross(a, b)
    nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
    for r in (r1, r2):
        np.testing.assert_allclose(np.sum(r * nrm, axis=1), 0.0, atol=1e-15)
    # the length is the great-circle arc r1 -> r2, the short way or (OpenSim's far side) minus the long way
    arc = R * angle(r1, r2)
    far = res.length[w] < 0
    np.testing.assert_allclose(res.length[w][~far], arc[~far], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(res.length[w][far], -(2 * np.pi * R - arc[far]), rtol=1e-12)
    if quadrant == "all":
        # wraps exactly where the segment crosses the sphere, along the shortest path around it
        outside = (np.linalg.norm(p1, axis=1) > R) & (np.linalg.norm(p2, axis=1) > R)
        np.testing.assert_array_equal(w, outside & segment_crosses_ball(p1, p2, R))
        total = (np.linalg.norm(a - r1, axis=1) + res.length[w] + np.linalg.norm(b - r2, axis=1))
        np.testing.assert_allclose(total, shortest_around_circle(a, b, R), rtol=1e-12)
        assert not far.any()


@pytest.mark.parametrize("single_wrap", [True, False])
@pytest.mark.parametrize("quadrant", QUADRANTS)
def test_cylinder_tangent_points_and_helix(quadrant, single_wrap):
    R, length = 0.03, 0.2
    p1, p2 = segments(2, 1500, 0.05, zscale=3.0)
    res = WrapCylinder("c", "b", quadrant=quadrant, radius=R, length=length).wrap_segment(
        p1, p2, single_wrap=single_wrap)
    w = res.wrapped
    assert w.sum() > 100
    r1, r2, a, b = res.r1[w], res.r2[w], p1[w], p2[w]
    for r in (r1, r2):  # on the cylinder
        np.testing.assert_allclose(np.hypot(r[:, 0], r[:, 1]), R, rtol=1e-12)
    if single_wrap:  # tangent in the plane normal to the axis (the adjustment loop moves r along the axis only)
        for r, p in ((r1, a), (r2, b)):
            np.testing.assert_allclose(np.sum((p - r)[:, :2] * r[:, :2], axis=1), 0.0, atol=1e-15)
    # a helix from r1 to r2: sqrt((R phi)^2 + dz^2)
    theta = angle(r1[:, :2], r2[:, :2])
    dz = r2[:, 2] - r1[:, 2]
    short = np.hypot(R * theta, dz)
    assert helix_turns_ok(res.length[w], R, theta, dz, quadrant == "all")
    if quadrant == "all" and single_wrap:
        # wraps exactly where the projection on the normal plane crosses the circle, the short way
        np.testing.assert_allclose(res.length[w], short, rtol=1e-11, atol=1e-15)
        proj = (np.linalg.norm(a[:, :2] - r1[:, :2], axis=1) + R * theta
                + np.linalg.norm(b[:, :2] - r2[:, :2], axis=1))
        np.testing.assert_allclose(proj, shortest_around_circle(a[:, :2], b[:, :2], R), rtol=1e-12)
        outside = (np.hypot(p1[:, 0], p1[:, 1]) > R) & (np.hypot(p2[:, 0], p2[:, 1]) > R)
        crosses = outside & segment_crosses_ball(p1[:, :2], p2[:, :2], R)
        assert not (w & ~crosses).any()


@pytest.mark.parametrize("single_wrap", [True, False])
@pytest.mark.parametrize("quadrant", QUADRANTS)
def test_torus_tangent_points_on_the_inner_cylinder(quadrant, single_wrap):
    ri, ro = 0.03, 0.08
    obj = WrapTorus("t", "b", quadrant=quadrant, inner_radius=ri, outer_radius=ro)
    p1, p2 = segments(3, 800, 0.12)
    res = obj.wrap_segment(p1, p2, single_wrap=single_wrap)
    w = res.wrapped
    assert w.sum() > 100
    assert np.all(res.code[w] == WrapStatus.WRAPPED)
    found, c = find_circle_point(ro, p1, p2, *obj.wrap_axis_sign)
    assert found[w].all()
    c = c[w]
    # the inner cylinder: radius ri around the tangent of the centre circle at the circle point
    t = np.stack([-c[:, 1], c[:, 0], np.zeros(len(c))], axis=1) / ro
    for r in (res.r1[w], res.r2[w]):
        d = r - c
        dist = np.linalg.norm(d - np.sum(d * t, axis=1)[:, None] * t, axis=1)
        np.testing.assert_allclose(dist, ri, rtol=1e-10)
    # the helix length about that axis
    e1 = np.cross(t, [0.0, 0.0, 1.0])
    rad = lambda r: np.stack([np.sum((r - c) * e1, axis=1), (r - c)[:, 2]], axis=1)  # noqa: E731
    theta = angle(rad(res.r1[w]), rad(res.r2[w]))
    dz = np.sum((res.r2[w] - res.r1[w]) * t, axis=1)
    assert helix_turns_ok(res.length[w], ri, theta, dz, False, rtol=1e-10)


@pytest.mark.parametrize("method", ["hybrid", "midpoint", "axial"])
@pytest.mark.parametrize("quadrant", QUADRANTS)
def test_ellipsoid_surface_path(quadrant, method):
    """Tangent points and the polyline on the surface; the wrap length is the polyline's length."""
    dims = np.array([0.04, 0.07, 0.05])
    obj = WrapEllipsoid("e", "b", quadrant=quadrant, dimensions=tuple(dims))
    p1, p2 = segments(4, 300, 0.06)
    det = obj.wrap_segment_details(p1, p2, method, keep_points=True)
    w = det.result.wrapped & np.isfinite(det.result.length)
    assert w.sum() > 40
    w &= det.tangent_converged.all(axis=1)  # (OpenSim's 50-step limit: rare, see test_wrapping_ellipsoid.py)
    for r in (det.result.r1[w], det.result.r2[w]):  # on the surface to OpenSim's stopping tolerance
        np.testing.assert_allclose(np.sum((r / dims) ** 2, axis=1), 1.0, atol=1e-4)
    for i in np.flatnonzero(w):
        pts = det.points[i, : det.n_points[i]]
        np.testing.assert_allclose(np.sum((pts[1:-1] / dims) ** 2, axis=1), 1.0, atol=1e-12)
        np.testing.assert_allclose(np.sum(np.linalg.norm(np.diff(pts, axis=0), axis=1)), det.result.length[i],
                                   rtol=1e-12)
        np.testing.assert_allclose(pts[0], det.result.r1[i], rtol=0, atol=1e-16)
        np.testing.assert_allclose(pts[-1], det.result.r2[i], rtol=0, atol=1e-16)
    # not wrapped where the straight segment misses the ellipsoid
    miss = ~segment_crosses_ball(p1 / dims, p2 / dims, 1.0)
    assert not (w & miss).any()


def test_ellipsoid_previous_c1_and_single_points():
    """``previous_c1`` only matters where the closest-point iteration failed; one segment = its batch row."""
    obj = WrapEllipsoid("e", "b", quadrant="-y", dimensions=(0.03, 0.06, 0.045))
    p1, p2 = segments(5, 50, 0.05)
    prev = np.random.default_rng(0).normal(size=(50, 3))
    det = obj.wrap_segment_details(p1, p2, "midpoint", keep_points=False)
    with_prev = obj.wrap_segment(p1, p2, "midpoint", previous_c1=prev)
    same = ~det.closest_point_failed
    assert same.all()
    for name in ("status", "r1", "r2", "length"):
        np.testing.assert_array_equal(getattr(det.result, name)[same], getattr(with_prev, name)[same])
    path = obj.surface_path(p1[7], p2[7])[0]
    row = obj.surface_path(p1, p2)[7]
    np.testing.assert_array_equal(path, row)


# ---------------------------------------------------------------------------
# the path: its length from its definition, the sequence, errors
# ---------------------------------------------------------------------------
def _frames(rng, n, w, spread=0.01):
    t = np.broadcast_to(np.eye(4), (n, w, 4, 4)).copy()
    for k in range(w):
        a = rng.normal(size=(n, 3)) * 0.2
        ca, sa = np.cos(a), np.sin(a)
        for i in range(n):
            rx = np.array([[1, 0, 0], [0, ca[i, 0], -sa[i, 0]], [0, sa[i, 0], ca[i, 0]]])
            ry = np.array([[ca[i, 1], 0, sa[i, 1]], [0, 1, 0], [-sa[i, 1], 0, ca[i, 1]]])
            rz = np.array([[ca[i, 2], -sa[i, 2], 0], [sa[i, 2], ca[i, 2], 0], [0, 0, 1]])
            t[i, k, :3, :3] = rx @ ry @ rz
        t[:, k, :3, 3] = rng.normal(size=(n, 3)) * spread
    return t


SPHERE = WrapSphere("s", "b", radius=0.02, quadrant="-z")
CYL = WrapCylinder("c", "b", radius=0.015, length=0.3, quadrant="x")
CYL_ALL = WrapCylinder("c2", "b", radius=0.012, length=0.3)
TORUS = WrapTorus("t", "b", inner_radius=0.012, outer_radius=0.04)
ELL = WrapEllipsoid("e", "b", dimensions=(0.02, 0.035, 0.025))
ELL_X = WrapEllipsoid("e2", "b", dimensions=(0.025, 0.03, 0.02), quadrant="x")
CASES = {
    "cyl+sphere": [PathWrapSpec(CYL), PathWrapSpec(SPHERE)],
    "torus+cyl": [PathWrapSpec(TORUS), PathWrapSpec(CYL_ALL, range=(2, 4))],
    "cyl+ellipsoid+cyl": [PathWrapSpec(CYL_ALL), PathWrapSpec(ELL, "midpoint"), PathWrapSpec(CYL, range=(1, 3))],
    "ellipsoid+ellipsoid": [PathWrapSpec(ELL_X, "axial"), PathWrapSpec(ELL, "hybrid")],
    "same object twice": [PathWrapSpec(CYL_ALL, range=(1, 3)), PathWrapSpec(CYL_ALL, range=(3, 5))],
    "inactive+sphere": [PathWrapSpec(WrapCylinder("off", "b", radius=0.02, length=0.2, active=False)),
                        PathWrapSpec(WrapSphere("s2", "b", radius=0.025))],
}


def path_length_by_definition(wp, pg, T, specs, ground=None):
    """Straight segments between the ground positions along the sequence, except r1 -> r2 of one
    wrap object, which counts the wrap length (OpenSim's calcLengthAfterPathComputation)."""
    n, P = pg.shape[:2]
    tg = wp.tangent_points_in_ground(T) if ground is None else ground
    allp = np.concatenate([pg, tg.reshape(n, -1, 3)], axis=1)
    obj = [next(i for i, s in enumerate(specs) if s.wrap_object == sp.wrap_object) for sp in specs]
    out = np.zeros(n)
    for i in range(n):
        seq = wp.sequence[i][wp.sequence[i] >= 0]
        for a, b in zip(seq[:-1], seq[1:]):
            if a >= P and b >= P and obj[(a - P) // 2] == obj[(b - P) // 2]:
                out[i] += wp.wrap_length[i, (b - P) // 2] if (b - P) % 2 == 1 else 0.0
            else:
                out[i] += np.linalg.norm(allp[i, b] - allp[i, a])
    return out


@pytest.mark.parametrize("compat", [True, False])
@pytest.mark.parametrize("case", list(CASES))
def test_random_paths(case, compat):
    specs = CASES[case]
    rng = np.random.default_rng(list(CASES).index(case))
    n, P = 150, 5
    # a zig-zag of 5 points around the objects near the origin; point 2 conditional (sometimes inactive)
    base = np.array([[0.08, 0.02, 0.05], [-0.05, 0.03, 0.0], [0.05, -0.02, -0.02], [-0.06, -0.03, 0.03],
                     [0.07, 0.01, -0.06]])
    pg = base[None] + rng.normal(size=(n, P, 3)) * 0.015
    active = np.ones((n, P), dtype=bool)
    active[:, 2] = rng.random(n) < 0.8
    T = _frames(rng, n, len(specs))
    wp = wrap_path(pg, active, T, specs, opensim_compat=compat)
    assert wp.wrapped.any()
    # the active points in order; each wrap's tangent points consecutive, inside its range
    for i in range(n):
        seq = wp.sequence[i][wp.sequence[i] >= 0]
        np.testing.assert_array_equal(seq[seq < P], np.flatnonzero(active[i]))
        for k, spec in enumerate(specs):
            c = P + 2 * k
            assert (c in seq) == wp.wrapped[i, k] == (c + 1 in seq)
            if wp.wrapped[i, k]:
                j = int(np.flatnonzero(seq == c)[0])
                assert seq[j + 1] == c + 1
                lo, hi = spec.range
                first, last = (lo - 1 if lo >= 1 else 0), (hi - 1 if hi >= 1 else P - 1)
                before = [s for s in seq[:j] if s < P]
                after = [s for s in seq[j + 2:] if s < P]
                assert before and after and first <= before[-1] and after[0] <= last
    assert (wp.queried_ground is None) == (not compat)
    ground = None if not compat else np.where(np.isnan(wp.queried_ground), wp.tangent_points_in_ground(T),
                                              wp.queried_ground)
    np.testing.assert_allclose(wp.length, path_length_by_definition(wp, pg, T, specs, ground), rtol=1e-13,
                               atol=1e-15)
    if not compat:
        nw = ~wp.wrapped
        assert np.all(np.isnan(wp.tangent_points[nw])) and np.all(wp.wrap_length[nw] == 0)


def test_single_sphere_path_is_the_shortest_path():
    """A two-point path over a sphere: the shortest path around it (closed form), in both modes."""
    R = 0.03
    p1, p2 = segments(6, 400, R)
    pg = np.stack([p1, p2], axis=1)
    T = np.broadcast_to(np.eye(4), (400, 1, 4, 4))
    for compat in (False, True):
        wp = wrap_path(pg, np.ones((400, 2), bool), T, [PathWrapSpec(WrapSphere("s", "b", radius=R))], compat)
        w = wp.wrapped[:, 0]
        assert w.sum() > 50
        np.testing.assert_allclose(wp.length[w], shortest_around_circle(p1[w], p2[w], R), rtol=1e-12)
        np.testing.assert_allclose(wp.length[~w], np.linalg.norm(p1 - p2, axis=1)[~w], rtol=1e-15)


def test_unknown_wrap_object_class_is_an_error():
    class MySphere(WrapSphere):
        def wrap_segment(self, p1, p2, method="hybrid"):
            return super().wrap_segment(p1, p2, method)

    pg = np.array([[[0.2, 0.0, 0.0], [-0.2, 0.01, 0.0]]])
    with pytest.raises(ValueError, match="'m' of class MySphere"):
        wrap_path(pg, np.ones((1, 2), bool), np.eye(4)[None, None], [PathWrapSpec(MySphere("m", "b", radius=0.05))])
    with pytest.raises(ValueError, match="range \\(1, 3\\) is outside the path's 2 points"):
        wrap_path(pg, np.ones((1, 2), bool), np.eye(4)[None, None],
                  [PathWrapSpec(WrapSphere("s", "b", radius=0.05), range=(1, 3))])
    with pytest.raises(ValueError, match="unknown wrap method 'geodesic'"):
        wrap_path(pg, np.ones((1, 2), bool), np.eye(4)[None, None],
                  [PathWrapSpec(WrapEllipsoid("e", "b", dimensions=(0.05, 0.05, 0.05)), method="geodesic")])
    # a subclass that keeps the algorithm is taken
    class Tagged(WrapSphere):
        pass

    wp = wrap_path(pg, np.ones((1, 2), bool), np.eye(4)[None, None], [PathWrapSpec(Tagged("g", "b", radius=0.05))])
    assert wp.wrapped[0, 0]


# ---------------------------------------------------------------------------
# real models (no OpenSim): kinematics, path states, finite differences
# ---------------------------------------------------------------------------
def _random_poses(model, n, seed):
    rng = np.random.default_rng(seed)
    lo = np.array([c.range[0] for c in model.coordinates])
    hi = np.array([c.range[1] for c in model.coordinates])
    return lo + (hi - lo) * (0.02 + 0.96 * rng.random((n, model.n_q)))


@pytest.fixture(scope="module")
def mobl(models_dir):
    from osim_emb.io import load_osim
    return load_osim(str(models_dir / "mobl_arms_holzbaur.osim"))


@pytest.fixture(scope="module")
def arm26(models_dir):
    from osim_emb.io import load_osim
    return load_osim(str(models_dir / "arm26.osim"))


@pytest.mark.parametrize("compat", [True, False])
def test_real_muscle_paths(mobl, arm26, compat):
    """path_states: the points where forward_kinematics puts them, the tangent points on their wrap frames,
    the length by its definition, and the same L as lengths_and_moment_arms."""
    from osim_emb.core.kinematics import body_transforms, forward_kinematics
    from osim_emb.paths.geometry import lengths_and_moment_arms, path_states
    for model in (mobl, arm26):
        q = _random_poses(model, 40, 11)
        states = path_states(model, q, opensim_compat=compat)
        bt = body_transforms(model, forward_kinematics(model, q, order=0))
        body_index = {b.name: k for k, b in enumerate(model.bodies)}
        L, _ = lengths_and_moment_arms(model, q, opensim_compat=compat)
        for m, s in enumerate(states):
            mu = s.muscle
            P = len(mu.points)
            for k, pt in enumerate(mu.points):
                t = bt[:, body_index[pt.body]]
                np.testing.assert_allclose(s.positions[:, k], t[:, :3, :3] @ pt.location + t[:, :3, 3], atol=1e-14)
            np.testing.assert_array_equal(s.length, L[:, m], err_msg=mu.name)
            seq = s.sequence
            dirs = s.positions if s.direction_positions is None else s.direction_positions
            by_def = np.zeros(len(q))
            for i in range(len(q)):
                sq = seq[i][seq[i] >= 0]
                for a, b in zip(sq[:-1], sq[1:]):
                    if a >= P and b >= P and (a - P) // 2 == (b - P) // 2:
                        by_def[i] += s.wrap_length[i, (a - P) // 2]
                    else:
                        by_def[i] += np.linalg.norm(dirs[i, b] - dirs[i, a])
            # (two PathWraps of one wrap object never meet in these models)
            np.testing.assert_allclose(s.length, by_def, rtol=1e-13, err_msg=mu.name)


def test_moment_arms_are_minus_length_gradient_without_wrapping(mobl):
    """R = -dL/dq (central differences) for every MoBL unit without wrapping (moving and conditional points)."""
    from osim_emb.paths.geometry import lengths_and_moment_arms, muscle_lengths
    q = _random_poses(mobl, 12, 12)
    _, R = lengths_and_moment_arms(mobl, q, wrapping=False)
    h = 1e-6
    for k in range(mobl.n_q):
        e = np.zeros(mobl.n_q)
        e[k] = h
        fd = -(muscle_lengths(mobl, q + e, wrapping=False, allow_out_of_range=True)
               - muscle_lengths(mobl, q - e, wrapping=False, allow_out_of_range=True)) / (2 * h)
        np.testing.assert_allclose(R[:, k], fd, atol=1e-8)


def test_moment_arms_are_minus_length_gradient_over_a_sphere(arm26):
    """Sphere wraps are exact (closed form): R = -dL/dq through the path kernel, with the tangent points
    fixed on the sphere's body.  arm26's wrap objects replaced by one sphere on the humerus."""
    import dataclasses

    from osim_emb.paths.geometry import lengths_and_moment_arms, muscle_lengths
    sphere = WrapSphere("ball", "r_humerus", translation=(0.0, -0.28, 0.0), radius=0.025)
    muscles = []
    for mu in arm26.muscles:
        pw = mu.wraps[0] if mu.wraps else None
        wraps = (dataclasses.replace(pw, wrap_object="ball", range=(-1, -1)),) if pw is not None else ()
        muscles.append(dataclasses.replace(mu, wraps=wraps))
    model = dataclasses.replace(arm26, wrap_objects=(sphere,), muscles=tuple(muscles))
    q = _random_poses(model, 30, 14)
    L, R = lengths_and_moment_arms(model, q)
    L0 = muscle_lengths(model, q, wrapping=False)
    wrapped = (L - L0) > 1e-6
    assert wrapped.sum() > 10
    h = 1e-7
    for k in range(model.n_q):
        e = np.zeros(model.n_q)
        e[k] = h
        fd = -(muscle_lengths(model, q + e, allow_out_of_range=True)
               - muscle_lengths(model, q - e, allow_out_of_range=True)) / (2 * h)
        np.testing.assert_allclose(R[:, k], fd, atol=1e-7)


# ---------------------------------------------------------------------------
# against OpenSim 4.6: getLength and computeMomentArm at random poses (compat mode)
# ---------------------------------------------------------------------------
# computeMomentArm skips a segment between two points of one body: with a MovingPathPoint next to a
# point on its own body it differs from the generalized force (validation/holzbaur_moment_arms)
SAME_BODY = {"PECM1", "PECM2", "PECM3", "LAT1", "LAT2", "LAT3"}


@pytest.mark.opensim
@pytest.mark.parametrize("name,n_poses,coords", [
    ("arm26", 20, None),
    # MoBL: the shoulder coordinates of the validation sweep; about the forearm and wrist coordinates
    # OpenSim's computeMomentArm applies its same-body rule to MovingPathPoints (see SAME_BODY)
    ("mobl_arms_holzbaur", 4, ("elv_angle", "shoulder_elv", "shoulder_rot")),
])
def test_lengths_and_moment_arms_against_opensim(osim, models_dir, name, n_poses, coords):
    """L equals getLength (every unit, every coordinate random) and R equals computeMomentArm."""
    from osim_emb.io import load_osim
    from osim_emb.opensim.bridge import OpenSimReference
    from osim_emb.paths.geometry import lengths_and_moment_arms
    path = str(models_dir / f"{name}.osim")
    model = load_osim(path)
    ref = OpenSimReference(path, model)
    q = _random_poses(model, n_poses, 15)
    L, R = lengths_and_moment_arms(model, q, opensim_compat=True)
    names = model.coordinate_names
    worst_l = worst_r = 0.0
    for n in range(n_poses):
        ref.set_configuration(q[n], names=names, check=None)
        for m, mu in enumerate(model.muscles):
            worst_l = max(worst_l, abs(ref.muscle_length(mu.name) - L[n, m]))
            if mu.name in SAME_BODY:
                continue
            for k, c in enumerate(names):
                if coords is not None and c not in coords:
                    continue
                worst_r = max(worst_r, abs(ref.moment_arm(mu.name, c) - R[n, k, m]))
    assert worst_l < 1e-12
    assert worst_r < 1e-10


def test_unit_the_kernel_cannot_take_is_named(arm26):
    """No silent fallback: a unit whose wrap object the kernel cannot take raises, naming unit and reason."""
    import dataclasses

    from osim_emb.paths.geometry import UnsupportedPathError, lengths_and_moment_arms, path_states

    class Custom(WrapCylinder):
        def wrap_segment(self, p1, p2, method="hybrid", single_wrap=True):
            return super().wrap_segment(p1, p2, method, single_wrap)

    objs = tuple(Custom(**{f.name: getattr(o, f.name) for f in dataclasses.fields(o)}) if o.type_name == "WrapCylinder"
                 else o for o in arm26.wrap_objects)
    model = dataclasses.replace(arm26, wrap_objects=objs)
    user = next(mu.name for mu in model.muscles if any(
        pw.wrap_object in {o.name for o in objs if isinstance(o, Custom)} for pw in mu.wraps))
    q = model.default_q
    for call in (lambda: lengths_and_moment_arms(model, q), lambda: path_states(model, q)):
        with pytest.raises(UnsupportedPathError, match=f"unit '{user}' of model .*class Custom"):
            call()
    # without wrapping the same units are plain polylines
    L, _ = lengths_and_moment_arms(model, q, wrapping=False)
    assert np.all(L > 0)
