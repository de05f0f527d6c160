"""WrapSphere, WrapCylinder, WrapTorus: geometry checks, and agreement with OpenSim 4.6.

The OpenSim tests build small models with the API: each path point sits on its own
free-floating body, and the wrap object on another free body (so that the wrap
frame has a non-trivial pose); many random configurations are compared one by one
with ``GeometryPath.getLength`` and the wrap points of ``getCurrentPath``.
"""

from __future__ import annotations

import numpy as np
import pytest

from osim_emb.paths.wrapping.base import WrapStatus, euler_xyz_body_fixed, parse_quadrant
from osim_emb.paths.wrapping.cylinder import WrapCylinder
from osim_emb.paths.wrapping.path import PathWrapSpec, wrap_path
from osim_emb.paths.wrapping.sphere import WrapSphere
from osim_emb.paths.wrapping.torus import WrapTorus, find_circle_point

QUADRANTS = ["all", "x", "-x", "y", "-y", "z", "-z"]


# ---------------------------------------------------------------------------
# geometry, no OpenSim
# ---------------------------------------------------------------------------
def _planar_exact(d1, d2, gamma, R):
    """Shortest path length around a circle of radius R from points at distances d1, d2, angle gamma apart."""
    return (np.sqrt(d1**2 - R**2) + np.sqrt(d2**2 - R**2)
            + R * (gamma - np.arccos(R / d1) - np.arccos(R / d2)))


def _crossing_segments(rng, n, R, scale=3.0):
    """Segments whose straight line crosses the sphere/cylinder of radius R at the origin."""
    d = rng.normal(size=(n, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    off = rng.normal(size=(n, 3)) * 0.4 * R
    p1 = off + d * R * rng.uniform(1.5, scale, n)[:, None]
    p2 = off - d * R * rng.uniform(1.5, scale, n)[:, None]
    return p1, p2


def test_quadrant_parser():
    assert parse_quadrant("all") == (0, 0)
    assert parse_quadrant("Unassigned") == (0, 0)
    assert parse_quadrant("-y") == (1, -1)
    assert parse_quadrant("+Z") == (2, 1)
    with pytest.raises(ValueError):
        parse_quadrant("xy")
    with pytest.raises(ValueError):
        WrapSphere("s", "b", quadrant="up", radius=1.0)


def test_sphere_geometry_is_exact():
    R = 0.05
    rng = np.random.default_rng(0)
    p1, p2 = _crossing_segments(rng, 400, R)
    res = WrapSphere("s", "b", radius=R).wrap_segment(p1, p2)
    w = res.wrapped
    assert w.sum() > 300
    r1, r2 = res.r1[w], res.r2[w]
    q1, q2 = p1[w], p2[w]
    # tangent points on the sphere, segments tangent there
    np.testing.assert_allclose(np.linalg.norm(r1, axis=1), R, atol=1e-14)
    np.testing.assert_allclose(np.linalg.norm(r2, axis=1), R, atol=1e-14)
    np.testing.assert_allclose(np.sum(r1 * (q1 - r1), axis=1), 0.0, atol=1e-15)
    np.testing.assert_allclose(np.sum(r2 * (q2 - r2), axis=1), 0.0, atol=1e-15)
    # r1, r2 in the plane of P1, P2 and the centre; arc = great circle
    n = np.cross(q1, q2)
    np.testing.assert_allclose(np.sum(n * r1, axis=1) / np.linalg.norm(n, axis=1), 0.0, atol=1e-14)
    ang = np.arccos(np.clip(np.sum(r1 * r2, axis=1) / R**2, -1, 1))
    np.testing.assert_allclose(res.length[w], R * ang, atol=1e-13)
    # the whole path equals the exact shortest path around the sphere
    total = np.linalg.norm(q1 - r1, axis=1) + res.length[w] + np.linalg.norm(q2 - r2, axis=1)
    d1, d2 = np.linalg.norm(q1, axis=1), np.linalg.norm(q2, axis=1)
    gamma = np.arccos(np.clip(np.sum(q1 * q2, axis=1) / (d1 * d2), -1, 1))
    np.testing.assert_allclose(total, _planar_exact(d1, d2, gamma, R), atol=1e-13)


def test_sphere_status_codes():
    R = 0.05
    s = WrapSphere("s", "b", radius=R)
    p1 = np.array([[0.1, 0.0, 0.0], [0.1, 0.2, 0.0], [0.01, 0.0, 0.0], [0.1, 0.01, 0.0]])
    p2 = np.array([[-0.1, 0.01, 0.0], [-0.1, 0.2, 0.0], [-0.1, 0.0, 0.0], [0.08, 0.2, 0.0]])
    res = s.wrap_segment(p1, p2)
    assert list(res.status) == [WrapStatus.WRAPPED, WrapStatus.NO_WRAP, WrapStatus.INSIDE_RADIUS, WrapStatus.NO_WRAP]
    assert np.isnan(res.r1[1]).all() and res.length[1] == 0.0
    # with a quadrant, a segment crossing the sphere from the active side is mandatory
    res = WrapSphere("s", "b", quadrant="y", radius=R).wrap_segment(p1[:1] + [0, 0.01, 0], p2[:1])
    assert res.status[0] == WrapStatus.MANDATORY_WRAP


def test_cylinder_planar_case_is_exact():
    R = 0.03
    rng = np.random.default_rng(1)
    n = 300
    a1, a2 = rng.uniform(0, 2 * np.pi, n), rng.uniform(0, 2 * np.pi, n)
    d1, d2 = rng.uniform(1.5 * R, 5 * R, n), rng.uniform(1.5 * R, 5 * R, n)
    z = rng.uniform(-0.05, 0.05, n)
    p1 = np.stack([d1 * np.cos(a1), d1 * np.sin(a1), z], axis=1)
    p2 = np.stack([d2 * np.cos(a2), d2 * np.sin(a2), z], axis=1)
    res = WrapCylinder("c", "b", radius=R, length=0.2).wrap_segment(p1, p2)
    w = res.wrapped
    assert 50 < w.sum() < n
    r1, r2, q1, q2 = res.r1[w], res.r2[w], p1[w], p2[w]
    np.testing.assert_allclose(np.hypot(r1[:, 0], r1[:, 1]), R, atol=1e-14)
    np.testing.assert_allclose(np.hypot(r2[:, 0], r2[:, 1]), R, atol=1e-14)
    np.testing.assert_allclose(r1[:, 2], q1[:, 2], atol=1e-14)
    np.testing.assert_allclose(np.sum(r1[:, :2] * (q1 - r1)[:, :2], axis=1), 0.0, atol=1e-15)
    total = np.linalg.norm(q1 - r1, axis=1) + res.length[w] + np.linalg.norm(q2 - r2, axis=1)
    gamma = np.abs(np.angle(np.exp(1j * (a1[w] - a2[w]))))
    np.testing.assert_allclose(total, _planar_exact(d1[w], d2[w], gamma, R), atol=1e-13)
    # unwrapped ones: the straight segment misses the circle
    t = np.clip(-np.sum(p1[~w, :2] * (p2 - p1)[~w, :2], 1) / np.sum((p2 - p1)[~w, :2] ** 2, 1), 0, 1)
    closest = p1[~w, :2] + t[:, None] * (p2 - p1)[~w, :2]
    assert np.all(np.linalg.norm(closest, axis=1) >= R - 1e-12)


def test_cylinder_helix_length_and_surface():
    R = 0.02
    rng = np.random.default_rng(2)
    p1, p2 = _crossing_segments(rng, 300, R)
    for single in (True, False):
        res = WrapCylinder("c", "b", radius=R, length=1.0).wrap_segment(p1, p2, single_wrap=single)
        w = res.wrapped
        r1, r2 = res.r1[w], res.r2[w]
        np.testing.assert_allclose(np.hypot(r1[:, 0], r1[:, 1]), R, rtol=1e-12)
        np.testing.assert_allclose(np.hypot(r2[:, 0], r2[:, 1]), R, rtol=1e-12)
        theta = np.abs(np.angle((r1[:, 0] + 1j * r1[:, 1]) / (r2[:, 0] + 1j * r2[:, 1])))
        helix = np.sqrt((R * theta) ** 2 + (r2[:, 2] - r1[:, 2]) ** 2)
        np.testing.assert_allclose(res.length[w], helix, rtol=1e-12, atol=1e-15)


def test_torus_search_and_tangent_points():
    ri, ro = 0.015, 0.08
    rng = np.random.default_rng(3)
    p1 = rng.normal(size=(300, 3)) * 0.12
    p2 = rng.normal(size=(300, 3)) * 0.12
    # OpenSim's lmdif stops at a zero of its residual: the stationarity condition of the
    # squared distance to a circle of radius 2R (the circle term is counted twice)
    from osim_emb.paths.wrapping._kernels import circle_line_search
    u, d, res = circle_line_search(p1, p2, ro)
    assert np.median(np.abs(res)) < 1e-10
    x = p1 + u[:, None] * d
    rho = np.hypot(x[:, 0], x[:, 1])
    good = np.abs(res) < 1e-9
    # the residual recomputed here from its definition (not by the kernel)
    stationary_2r = np.sum(x * d, axis=1) - 2 * ro * (x[:, 0] * d[:, 0] + x[:, 1] * d[:, 1]) / rho
    np.testing.assert_allclose(stationary_2r[good], 0.0, atol=1e-9)
    # the circle point lies on the centre circle
    found, c = find_circle_point(ro, p1, p2)
    assert found.all()
    np.testing.assert_allclose(np.hypot(c[:, 0], c[:, 1]), ro, rtol=1e-12)
    np.testing.assert_allclose(c[:, 2], 0.0, atol=0)
    # tangent points lie on the temporary cylinder of radius ri around the circle's tangent
    out = WrapTorus("t", "b", inner_radius=ri, outer_radius=ro).wrap_segment(p1, p2)
    w = out.wrapped
    assert w.sum() > 50
    assert np.all(out.raw_status[w] == WrapStatus.WRAPPED)
    for r in (out.r1[w], out.r2[w]):
        assert np.all(np.isfinite(r))


def test_batch_equals_single():
    rng = np.random.default_rng(4)
    p1 = rng.normal(size=(40, 3)) * 0.08
    p2 = rng.normal(size=(40, 3)) * 0.08
    objs = [WrapSphere("s", "b", quadrant="-y", radius=0.04),
            WrapCylinder("c", "b", quadrant="x", radius=0.02, length=0.1),
            WrapTorus("t", "b", quadrant="z", inner_radius=0.01, outer_radius=0.05)]
    for obj in objs:
        for single in (True, False):
            kw = {} if isinstance(obj, WrapSphere) else {"single_wrap": single}
            full = obj.wrap_segment(p1, p2, **kw)
            for i in range(0, 40, 7):
                one = obj.wrap_segment(p1[i:i + 1], p2[i:i + 1], **kw)
                assert one.status[0] == full.status[i]
                np.testing.assert_array_equal(one.r1[0], full.r1[i])
                np.testing.assert_array_equal(one.length[0], full.length[i])


# ---------------------------------------------------------------------------
# against OpenSim
# ---------------------------------------------------------------------------
def build_model(osim, wraps, n_points):
    """A model with n_points free bodies (one path point each) and a free body carrying the wraps.

    ``wraps``: list of (osim wrap object).  Returns (model, state, spring).
    """
    m = osim.Model()
    g = m.getGround()
    bodies = []
    for k in range(n_points + 1):
        b = osim.Body(f"b{k}", 1.0, osim.Vec3(0), osim.Inertia(1, 1, 1))
        m.addBody(b)
        m.addJoint(osim.FreeJoint(f"j{k}", g, osim.Vec3(0), osim.Vec3(0), b, osim.Vec3(0), osim.Vec3(0)))
        bodies.append(b)
    carrier = bodies[n_points]
    for w in wraps:
        carrier.addWrapObject(w)
    sp = osim.PathSpring("sp", 0.1, 1.0, 0.0)
    for k in range(n_points):
        sp.updGeometryPath().appendNewPathPoint(f"p{k}", bodies[k], osim.Vec3(0))
    m.addForce(sp)
    for w in wraps:
        sp.updGeometryPath().addPathWrap(w)
    s = m.initSystem()
    return m, s, sp


def make_osim_wrap(osim, kind, dims, quadrant, rot, trans, name="w0"):
    if kind == "sphere":
        w = osim.WrapSphere()
        w.set_radius(dims[0])
    elif kind == "cylinder":
        w = osim.WrapCylinder()
        w.set_radius(dims[0])
        w.set_length(dims[1])
    else:
        w = osim.WrapTorus()
        w.set_inner_radius(dims[0])
        w.set_outer_radius(dims[1])
    w.setName(name)
    w.set_quadrant(quadrant)
    w.set_xyz_body_rotation(osim.Vec3(*rot))
    w.set_translation(osim.Vec3(*trans))
    return w


def evaluate_opensim(osim, m, s, sp, configs):
    """Per configuration: OpenSim's length, path inputs, and current path (codes, locations, wrap lengths)."""
    from osim_emb.opensim.wrap_objects import path_inputs_from_opensim

    cs = m.getCoordinateSet()
    gp = sp.getGeometryPath()
    ws = gp.getWrapSet()
    wnames = [ws.get(i).getWrapObject().getName() for i in range(ws.getSize())]
    pps = gp.getPathPointSet()
    pnames = [pps.get(i).getName() for i in range(pps.getSize())]
    P = len(pnames)
    L, inputs, paths = [], [], []
    for q in configs:
        for i in range(cs.getSize()):
            cs.get(i).setValue(s, float(q[i]), False)
        m.realizePosition(s)
        L.append(sp.getLength(s))
        inputs.append(path_inputs_from_opensim(s, gp))
        cur = gp.getCurrentPath(s)
        codes, locs, wl = [], {}, {}
        for i in range(cur.getSize()):
            pt = cur.get(i)
            pw = osim.PathWrapPoint.safeDownCast(pt)
            if pw is None:
                codes.append(pnames.index(pt.getName()))
            else:
                w = wnames.index(pw.getWrapObject().getName())
                k = 0 if pt.getName().endswith("1") else 1
                codes.append(P + 2 * w + k)
                loc = pw.getLocation(s)
                locs[(w, k)] = np.array([loc[0], loc[1], loc[2]])
                if k == 1:
                    wl[w] = pw.getWrapLength(s)
        paths.append((codes, locs, wl))
    pg = np.concatenate([x[0] for x in inputs])
    act = np.concatenate([x[1] for x in inputs])
    T = np.concatenate([x[2] for x in inputs])
    return np.array(L), (pg, act, T), paths


def compare_with_opensim(result, L, paths, specs, tol=1e-10):
    """Max differences (length, tangent point, wrap length) and the number of wrapped cases."""
    np.testing.assert_allclose(result.length, L, rtol=0, atol=tol)
    dr = dl = 0.0
    nw = 0
    for n, (codes, locs, wl) in enumerate(paths):
        seq = [c for c in result.sequence[n] if c >= 0]
        assert seq == codes
        for (w, k), loc in locs.items():
            ours = specs[w].wrap_object.transform_in_body @ np.append(result.tangent_points[n, w, k], 1.0)
            dr = max(dr, np.abs(ours[:3] - loc).max())
        for w, x in wl.items():
            dl = max(dl, abs(result.wrap_length[n, w] - x))
            nw += 1
    assert dr < tol and dl < tol
    return dr, dl, nw


KINDS = {"sphere": (WrapSphere, dict(radius=0.05), (0.05,)),
         "cylinder": (WrapCylinder, dict(radius=0.03, length=0.2), (0.03, 0.2)),
         "torus": (WrapTorus, dict(inner_radius=0.02, outer_radius=0.08), (0.02, 0.08))}


@pytest.mark.opensim
@pytest.mark.parametrize("kind", ["sphere", "cylinder", "torus"])
@pytest.mark.parametrize("n_points", [2, 3])
def test_single_wrap_object_against_opensim(osim, kind, n_points):
    """One wrap object, 7 quadrants, random frame poses; 2-point (one segment) and 3-point paths."""
    osim.Logger.setLevelString("error")
    cls, kw, dims = KINDS[kind]
    rng = np.random.default_rng(10 + n_points)
    n = 40
    total = 0
    for quad in QUADRANTS:
        rot = tuple(rng.uniform(-1.5, 1.5, 3))
        trans = tuple(rng.uniform(-0.02, 0.02, 3))
        m, s, sp = build_model(osim, [make_osim_wrap(osim, kind, dims, quad, rot, trans)], n_points)
        spec = PathWrapSpec(cls("w0", f"b{n_points}", rot, trans, quad, **kw))
        nc = m.getCoordinateSet().getSize()
        q = np.zeros((n, nc))
        scale = 0.15 if kind == "torus" else 0.1
        # point bodies: alternately on opposite sides of the wrap object, so that many paths wrap
        d = rng.normal(size=(n, 3))
        for k in range(n_points):
            d = -d * rng.uniform(0.6, 1.6, (n, 1)) + rng.normal(size=(n, 3)) * 0.3
            q[:, 6 * k + 3: 6 * k + 6] = d * scale
        c = 6 * n_points  # the wrap carrier: rotation and a small translation
        q[:, c: c + 3] = rng.uniform(-np.pi, np.pi, (n, 3))
        q[:, c + 3: c + 6] = rng.normal(size=(n, 3)) * 0.01
        L, (pg, act, T), paths = evaluate_opensim(osim, m, s, sp, q)
        res = wrap_path(pg, act, T, [spec], opensim_compat=True)
        _, _, nw = compare_with_opensim(res, L, paths, [spec])
        # with a single PathWrap there is nothing stale: both modes agree
        res2 = wrap_path(pg, act, T, [spec])
        np.testing.assert_array_equal(res2.length, res.length)
        if n_points == 2:  # the segment-level API gives the same status
            Tw = T[:, 0]
            to = lambda g: np.einsum("nji,nj->ni", Tw[:, :3, :3], g - Tw[:, :3, 3])  # noqa: E731
            seg = spec.wrap_object.wrap_segment(to(pg[:, 0]), to(pg[:, 1]))
            np.testing.assert_array_equal(seg.wrapped, res.wrapped[:, 0])
        total += nw
    assert total > 70  # enough wrapped cases to mean something
