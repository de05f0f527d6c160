"""Path-level wrapping (osim_emb.paths.wrapping.path): structure, and agreement with OpenSim 4.6.

Against OpenSim the kinematics are taken from OpenSim itself (path points'
``getLocationInGround``, wrap frames' ground transforms), so that only the
wrapping is compared: ``wrap_path(..., opensim_compat=True)`` must give
``getLength`` to 1e-9 m and the same current path (order of points, tangent
points, wrap lengths).
"""

from __future__ import annotations

import importlib.util
import time

import numpy as np
import pytest

from osim_emb.paths.wrapping.base import WrapStatus
from osim_emb.paths.wrapping.cylinder import WrapCylinder
from osim_emb.paths.wrapping.path import PathWrapSpec, wrap_path
from osim_emb.paths.wrapping.sphere import WrapSphere
from osim_emb.paths.wrapping.torus import WrapTorus

HAVE_ELLIPSOID = importlib.util.find_spec("osim_emb.paths.wrapping.ellipsoid") is not None


def _eye(n, w):
    return np.broadcast_to(np.eye(4), (n, w, 4, 4)).copy()


# ---------------------------------------------------------------------------
# structure, no OpenSim
# ---------------------------------------------------------------------------
def test_no_wrap_objects_is_the_polyline_of_active_points():
    rng = np.random.default_rng(0)
    pg = rng.normal(size=(5, 4, 3))
    act = np.ones((5, 4), dtype=bool)
    act[2, 1] = False
    res = wrap_path(pg, act, np.zeros((5, 0, 4, 4)), [])
    for n in range(5):
        idx = np.flatnonzero(act[n])
        assert list(res.sequence[n][res.sequence[n] >= 0]) == list(idx)
        np.testing.assert_allclose(res.length[n], np.linalg.norm(np.diff(pg[n, idx], axis=0), axis=1).sum())


def test_sphere_path_length_and_sequence():
    R = 0.05
    pg = np.array([[[0.2, 0.0, 0.0], [0.1, 0.01, 0.0], [-0.1, 0.0, 0.0], [-0.2, 0.05, 0.0]]])
    spec = PathWrapSpec(WrapSphere("s", "g", radius=R))
    res = wrap_path(pg, np.ones((1, 4), bool), _eye(1, 1), [spec])
    assert list(res.sequence[0][:6]) == [0, 1, 4, 5, 2, 3]
    r1, r2 = res.tangent_points[0, 0]
    pts = [pg[0, 0], pg[0, 1], r1, r2, pg[0, 2], pg[0, 3]]
    straight = sum(np.linalg.norm(pts[i + 1] - pts[i]) for i in (0, 1, 3, 4))
    np.testing.assert_allclose(res.length[0], straight + res.wrap_length[0, 0], rtol=1e-15)
    np.testing.assert_allclose(res.wrap_length[0, 0], R * np.arccos(r1 @ r2 / R**2), rtol=1e-12)
    # tangent points in ground (identity frame here)
    np.testing.assert_array_equal(res.tangent_points_in_ground(_eye(1, 1)), res.tangent_points)


def test_range_and_inactive_points():
    R = 0.05
    # segments 1-2 (through the centre) and 5-6 (near the rim) both cross the sphere
    pg = np.array([[[0.1, 0.001, 0.0], [-0.1, 0.0, 0.0], [-0.1, 0.3, 0.0], [0.0, 0.3, 0.0],
                    [0.1, 0.045, 0.0], [-0.1, 0.045, 0.0]]])
    act = np.ones((1, 6), bool)
    obj = WrapSphere("s", "g", radius=R)
    seg = obj.wrap_segment(pg[0, :-1], pg[0, 1:])
    assert list(seg.status) == [WrapStatus.WRAPPED, 0, 0, 0, WrapStatus.WRAPPED]
    # both WRAPPED: the one that lengthens the path least is taken
    full = wrap_path(pg, act, _eye(1, 1), [PathWrapSpec(obj)])
    assert list(full.sequence[0]) == [0, 1, 2, 3, 4, 6, 7, 5]
    only12 = wrap_path(pg, act, _eye(1, 1), [PathWrapSpec(obj, range=(1, 2))])
    assert list(only12.sequence[0]) == [0, 6, 7, 1, 2, 3, 4, 5]
    assert only12.length[0] > full.length[0]
    # range (2, 5): no crossing segment inside it
    mid = wrap_path(pg, act, _eye(1, 1), [PathWrapSpec(obj, range=(2, 5))])
    assert not mid.wrapped[0, 0]
    np.testing.assert_allclose(mid.length[0], np.linalg.norm(np.diff(pg[0], axis=0), axis=1).sum())
    # point 6 inactive: range (5, 6) narrows to point 5 alone, nothing to wrap
    act2 = act.copy()
    act2[0, 5] = False
    none = wrap_path(pg, act2, _eye(1, 1), [PathWrapSpec(obj, range=(5, 6))])
    assert not none.wrapped[0, 0]
    assert list(none.sequence[0][:5]) == [0, 1, 2, 3, 4] and none.sequence[0][5] == -1
    # point 2 inactive: the segment 1-3 is tried instead of 1-2
    act3 = act.copy()
    act3[0, 1] = False
    r13 = wrap_path(pg, act3, _eye(1, 1), [PathWrapSpec(obj, range=(1, 3))])
    assert list(r13.sequence[0][:3]) == [0, 2, 3]
    # no active point at all in the range: OpenSim abandons the wrapping step
    act4 = act.copy()
    act4[0, 2:4] = False
    gone = wrap_path(pg, act4, _eye(1, 1), [PathWrapSpec(obj, range=(3, 4))])
    assert not gone.wrapped.any()
    # inactive wrap object
    off = wrap_path(pg, act, _eye(1, 1), [PathWrapSpec(WrapSphere("s", "g", radius=R, active=False))])
    assert not off.wrapped.any()
    np.testing.assert_allclose(off.length[0], np.linalg.norm(np.diff(pg[0], axis=0), axis=1).sum())


def test_compat_and_default_agree_with_one_wrap_object():
    rng = np.random.default_rng(1)
    pg = rng.normal(size=(200, 3, 3)) * 0.1
    spec = PathWrapSpec(WrapCylinder("c", "g", quadrant="-y", radius=0.02, length=0.3))
    a = wrap_path(pg, np.ones((200, 3), bool), _eye(200, 1), [spec], opensim_compat=True)
    b = wrap_path(pg, np.ones((200, 3), bool), _eye(200, 1), [spec], opensim_compat=False)
    assert a.wrapped.any()
    np.testing.assert_array_equal(a.length, b.length)
    np.testing.assert_array_equal(a.sequence, b.sequence)


def test_default_length_is_the_length_of_the_current_path():
    """Default mode: the length is the geometric length of the path it reports."""
    rng = np.random.default_rng(2)
    n = 300
    pg = rng.normal(size=(n, 4, 3)) * 0.08
    specs = [PathWrapSpec(WrapCylinder("c", "g", quadrant="x", radius=0.015, length=0.1)),
             PathWrapSpec(WrapSphere("s", "g", radius=0.03)),
             PathWrapSpec(WrapTorus("t", "g", inner_radius=0.01, outer_radius=0.06))]
    T = _eye(n, 3)
    T[:, 0, :3, 3] = [0.02, 0.0, 0.0]
    T[:, 2, :3, 3] = [0.0, 0.0, 0.03]
    res = wrap_path(pg, np.ones((n, 4), bool), T, specs)
    pts = res.points_in_ground(pg, T)
    seq = res.sequence
    d = np.linalg.norm(np.diff(pts, axis=1), axis=-1)
    a, b = seq[:, :-1], seq[:, 1:]
    arc = (a >= 4) & (b == a + 1) & ((a - 4) % 2 == 0)
    L = np.where(arc, 0.0, np.nan_to_num(d)).sum(axis=1) + res.wrap_length.sum(axis=1)
    np.testing.assert_allclose(res.length, L, rtol=0, atol=1e-14)
    assert res.wrapped.sum(axis=1).max() >= 2


# ---------------------------------------------------------------------------
# against OpenSim: small models with several wrap objects
# ---------------------------------------------------------------------------
def _build(osim, wraps, n_points, conditional=None):
    m = osim.Model()
    g = m.getGround()
    bodies = []
    for k in range(n_points + 1):
        b = osim.Body(f"b{k}", 1.0, osim.Vec3(0), osim.Inertia(1, 1, 1))
        m.addBody(b)
        m.addJoint(osim.FreeJoint(f"j{k}", g, osim.Vec3(0), osim.Vec3(0), b, osim.Vec3(0), osim.Vec3(0)))
        bodies.append(b)
    for w in wraps:
        bodies[n_points].addWrapObject(w)
    sp = osim.PathSpring("sp", 0.1, 1.0, 0.0)
    m.addForce(sp)
    gp = sp.updGeometryPath()
    for k in range(n_points):
        if conditional is not None and k == conditional:
            cp = osim.ConditionalPathPoint()
            cp.setName(f"p{k}")
            cp.setParentFrame(bodies[k])
            cp.set_location(osim.Vec3(0))
            cp.setRangeMin(-0.5)
            cp.setRangeMax(0.5)
            cp.setCoordinate(m.getCoordinateSet().get(f"j{k}_coord_0"))
            gp.updPathPointSet().adoptAndAppend(cp)
        else:
            gp.appendNewPathPoint(f"p{k}", bodies[k], osim.Vec3(0))
    for w in wraps:
        gp.addPathWrap(w)
    return m, m.initSystem(), sp


def _osim_wrap(osim, kind, name, quad, rot, trans, dims):
    w = {"sphere": osim.WrapSphere, "cylinder": osim.WrapCylinder, "torus": osim.WrapTorus}[kind]()
    if kind == "sphere":
        w.set_radius(dims[0])
    elif kind == "cylinder":
        w.set_radius(dims[0])
        w.set_length(dims[1])
    else:
        w.set_inner_radius(dims[0])
        w.set_outer_radius(dims[1])
    w.setName(name)
    w.set_quadrant(quad)
    w.set_xyz_body_rotation(osim.Vec3(*rot))
    w.set_translation(osim.Vec3(*trans))
    return w


def _ours(kind, name, body, quad, rot, trans, dims):
    if kind == "sphere":
        return WrapSphere(name, body, rot, trans, quad, radius=dims[0])
    if kind == "cylinder":
        return WrapCylinder(name, body, rot, trans, quad, radius=dims[0], length=dims[1])
    return WrapTorus(name, body, rot, trans, quad, inner_radius=dims[0], outer_radius=dims[1])


def _osim_current_path(osim, s, gp, P, wnames, pnames):
    cur = gp.getCurrentPath(s)
    codes, locs, wl = [], {}, {}
    for i in range(cur.getSize()):
        pt = cur.get(i)
        pw = osim.PathWrapPoint.safeDownCast(pt)
        if pw is None:
            codes.append(pnames.index(pt.getName()))
            continue
        w = wnames.index(pw.getWrapObject().getName())
        k = 0 if pt.getName().endswith("1") else 1
        codes.append(P + 2 * w + k)
        loc = pw.getLocation(s)
        locs[(w, k)] = np.array([loc[0], loc[1], loc[2]])
        if k == 1:
            wl[w] = pw.getWrapLength(s)
    return codes, locs, wl


def _check_against_paths(res, specs, paths, tol):
    dr = 0.0
    for n, (codes, locs, wl) in enumerate(paths):
        assert [c for c in res.sequence[n] if c >= 0] == codes, f"configuration {n}"
        for (w, k), loc in locs.items():
            ours = specs[w].wrap_object.transform_in_body @ np.append(res.tangent_points[n, w, k], 1.0)
            dr = max(dr, np.abs(ours[:3] - loc).max())
        for w, x in wl.items():
            assert abs(res.wrap_length[n, w] - x) < tol
    assert dr < tol
    return dr


CASES = {
    "cylinder+sphere": [("cylinder", "c0", "-y", (0.3, -0.2, 0.1), (0.0, 0.0, 0.0), (0.02, 0.15)),
                        ("sphere", "s1", "all", (0.0, 0.0, 0.0), (0.0, 0.03, 0.01), (0.035,))],
    "torus+cylinder": [("torus", "t0", "all", (0.2, 0.1, -0.3), (0.0, 0.0, 0.0), (0.015, 0.07)),
                       ("cylinder", "c1", "x", (1.2, 0.0, 0.4), (0.01, 0.0, 0.0), (0.02, 0.2))],
    "3 wraps": [("cylinder", "c0", "all", (0.0, 0.5, 0.0), (0.0, 0.0, 0.0), (0.025, 0.1)),
                ("cylinder", "c1", "-x", (1.0, 0.2, 0.0), (0.0, 0.02, 0.0), (0.015, 0.12)),
                ("sphere", "s2", "-z", (0.0, 0.0, 0.0), (0.0, -0.03, 0.0), (0.03,))],
}


@pytest.mark.opensim
@pytest.mark.parametrize("case", list(CASES))
def test_several_wrap_objects_against_opensim(osim, case):
    from osim_emb.opensim.wrap_objects import path_inputs_from_opensim

    osim.Logger.setLevelString("error")
    wr = CASES[case]
    n_points = 4
    m, s, sp = _build(osim, [_osim_wrap(osim, k, nm, q, r, t, d) for k, nm, q, r, t, d in wr], n_points,
                      conditional=2)
    specs = [PathWrapSpec(_ours(k, nm, f"b{n_points}", q, r, t, d)) for k, nm, q, r, t, d in wr]
    if case == "3 wraps":
        gp0 = sp.updGeometryPath()
        gp0.updWrapSet().get(1).set_range(0, 2)
        gp0.updWrapSet().get(1).set_range(1, 4)
        specs[1] = PathWrapSpec(specs[1].wrap_object, range=(2, 4))
        s = m.initSystem()
    gp = sp.getGeometryPath()
    P = n_points
    pnames = [f"p{k}" for k in range(P)]
    wnames = [w[1] for w in wr]
    rng = np.random.default_rng(20)
    cs = m.getCoordinateSet()
    N = 120
    L, inputs, paths = [], [], []
    for _ in range(N):
        d = rng.normal(size=3)
        for k in range(P):
            d = -d * rng.uniform(0.5, 1.5) + rng.normal(size=3) * 0.5
            for i in range(3):
                cs.get(f"j{k}_coord_{3 + i}").setValue(s, 0.06 * d[i], False)
            cs.get(f"j{k}_coord_0").setValue(s, rng.uniform(-1, 1), False)
        for i in range(3):
            cs.get(f"j{P}_coord_{i}").setValue(s, rng.uniform(-0.4, 0.4), False)
        m.realizePosition(s)
        L.append(sp.getLength(s))
        inputs.append(path_inputs_from_opensim(s, gp))
        paths.append(_osim_current_path(osim, s, gp, P, wnames, pnames))
    pg, act, T = (np.concatenate([x[i] for x in inputs]) for i in range(3))
    assert 0 < act[:, 2].sum() < N  # the conditional point is sometimes inactive
    res = wrap_path(pg, act, T, specs, opensim_compat=True)
    # 1e-10 m, relative 1e-10 for the few paths of metres: when OpenSim's cylinder
    # tangent adjustment runs away (tangent points far along the axis), its 100
    # over-relaxed steps amplify round-off
    err = np.abs(res.length - np.array(L))
    print(f"\n{case}: max |L - getLength| {err.max():.1e} m; lengths > 1 m: {(np.array(L) > 1).sum()}")
    np.testing.assert_allclose(res.length, L, rtol=1e-10, atol=1e-10)
    _check_against_paths(res, specs, paths, 1e-9)
    assert (res.wrapped.sum(axis=1) >= 2).sum() > 5
    fresh = wrap_path(pg, act, T, specs)
    diff = np.abs(fresh.length - res.length)
    print(f"\n{case}: {N} configurations, {(res.passes > 1).sum()} with several passes; default vs compat differ "
          f"in {(diff > 1e-12).sum()} (max {diff.max():.2e} m)")


# ---------------------------------------------------------------------------
# against OpenSim: real models
# ---------------------------------------------------------------------------
def _dependents(osim, m):
    deps = set()
    cs = m.getConstraintSet()
    for i in range(cs.getSize()):
        c = osim.CoordinateCouplerConstraint.safeDownCast(cs.get(i))
        if c is not None:
            deps.add(c.getDependentCoordinateName())
    return deps


def _real_model_data(osim, path, n_poses, seed):
    """Per muscle: specs, stacked path inputs at n_poses random assembled poses, getLength, current paths."""
    from osim_emb.opensim.wrap_objects import path_inputs_from_opensim, path_specs_from_opensim

    osim.Logger.setLevelString("error")
    m = osim.Model(str(path))
    s = m.initSystem()
    rng = np.random.default_rng(seed)
    coords = m.getCoordinateSet()
    deps = _dependents(osim, m)
    mus = m.getMuscles()
    cache, data = {}, {}
    for i in range(mus.getSize()):
        gp = mus.get(i).getGeometryPath()
        try:
            specs = path_specs_from_opensim(gp, cache)
        except (ImportError, NotImplementedError):
            continue
        ws = gp.getWrapSet()
        pps = gp.getPathPointSet()
        data[mus.get(i).getName()] = dict(
            specs=specs, inputs=[], L=[], paths=[],
            pnames=[pps.get(k).getName() for k in range(pps.getSize())],
            wnames=[ws.get(k).getWrapObject().getName() for k in range(ws.getSize())])
    for _ in range(n_poses):
        for i in range(coords.getSize()):
            c = coords.get(i)
            if c.getName() in deps or c.getLocked(s):
                continue
            c.setValue(s, rng.uniform(c.getRangeMin(), c.getRangeMax()), False)
        m.assemble(s)
        m.realizePosition(s)
        for name, d in data.items():
            mu = mus.get(name)
            gp = mu.getGeometryPath()
            d["L"].append(mu.getLength(s))
            d["inputs"].append(path_inputs_from_opensim(s, gp))
            d["paths"].append(_osim_current_path(osim, s, gp, len(d["pnames"]), d["wnames"], d["pnames"]))
    for d in data.values():
        d["inputs"] = tuple(np.concatenate([x[i] for x in d["inputs"]]) for i in range(3))
        d["L"] = np.array(d["L"])
        d["kinds"] = {type(sp.wrap_object).__name__ for sp in d["specs"]}
    return data


_DATA = {}


def _data(osim, models_dir, model):
    if model not in _DATA:
        _DATA[model] = _real_model_data(osim, models_dir / model, 20, 3)
    return _DATA[model]


@pytest.mark.opensim
@pytest.mark.models
@pytest.mark.parametrize("model", ["arm26.osim", "mobl_arms_holzbaur.osim"])
@pytest.mark.parametrize("ellipsoids", [False, True])
def test_real_models_against_opensim(osim, models_dir, model, ellipsoids):
    if ellipsoids and not HAVE_ELLIPSOID:
        pytest.skip("osim_emb.paths.wrapping.ellipsoid is not available yet")
    data = _data(osim, models_dir, model)
    sel = {k: d for k, d in data.items() if ("WrapEllipsoid" in d["kinds"]) == ellipsoids}
    if not sel:
        pytest.skip("no such muscle in this model")
    n_cases = n_diff = 0
    max_diff = max_err = 0.0
    t0 = time.perf_counter()
    for name, d in sel.items():
        pg, act, T = d["inputs"]
        res = wrap_path(pg, act, T, d["specs"], opensim_compat=True)
        err = np.abs(res.length - d["L"])
        max_err = max(max_err, err.max())
        assert err.max() < 1e-9, f"{name}: {err.max():.3e}"
        _check_against_paths(res, d["specs"], d["paths"], 1e-9)
        fresh = wrap_path(pg, act, T, d["specs"])
        diff = np.abs(fresh.length - res.length)
        n_cases += diff.size
        n_diff += int((diff > 1e-12).sum())
        max_diff = max(max_diff, diff.max())
    print(f"\n{model} ({'with' if ellipsoids else 'without'} ellipsoids): {len(sel)} muscles x 20 poses, "
          f"max |L - getLength| {max_err:.1e} m; default vs compat differ in {n_diff}/{n_cases} "
          f"(max {max_diff:.3e} m); {time.perf_counter() - t0:.1f} s")
