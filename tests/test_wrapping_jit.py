"""The compiled (numba) wrapping and moment arms against the numpy implementation (the reference).

Both paths run in the same process: ``OSIM_EMB_NO_JIT=1`` (set with monkeypatch) selects numpy.
No OpenSim is needed: the inputs are random segments and paths, and the package's own kinematics.

What is bitwise and what is not (see docs/wrapping.md, "Speed"):

* WrapEllipsoid, the torus's circle search, the path bookkeeping (passes, ranges, segment choice,
  stale cache) and the kinematics: the same operations in the same order -> bitwise equal.
* WrapSphere, WrapCylinder and the torus's cylinder call acos / asin / atan2: numpy evaluates them
  with its own SIMD routines, which differ from the C library's (used by the kernels, as by
  OpenSim) by one unit in the last place for a few percent of arguments.  Closed forms then agree
  to ~1e-16 m; the cylinder's over-relaxed tangent adjustment (paths with several PathWraps)
  amplifies that, where it runs away, to ~1e-12 of the (then metres-long) length.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from osim_emb.core import _accel
from osim_emb.paths.wrapping.cylinder import WrapCylinder
from osim_emb.paths.wrapping.ellipsoid import WrapEllipsoid
from osim_emb.paths.wrapping.path import PathWrapSpec, wrap_path
from osim_emb.paths.wrapping.sphere import WrapSphere
from osim_emb.paths.wrapping.torus import WrapTorus

pytestmark = [
    pytest.mark.skipif(not _accel.HAVE_NUMBA, reason="numba is not installed (pip install 'osim-emb[speed]')"),
    pytest.mark.skipif(os.environ.get("OSIM_EMB_NO_JIT", "") in ("1", "true", "yes"),
                       reason="compiled kernels disabled by OSIM_EMB_NO_JIT"),
]

QUADRANTS = ["all", "x", "-x", "y", "-y", "z", "-z"]
TOL = 1e-12  # metres


def both(monkeypatch, fn):
    """(numpy result, compiled result) of fn()."""
    monkeypatch.setenv("OSIM_EMB_NO_JIT", "1")
    ref = fn()
    monkeypatch.delenv("OSIM_EMB_NO_JIT")
    assert _accel.use_jit()
    return ref, fn()


def segments(seed, n, scale, zscale=1.0):
    """Random segments whose end points lie 1.05-3 ``scale`` from the origin (many cross the object)."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=(2, n, 3))
    d /= np.linalg.norm(d, axis=2, keepdims=True)
    p = d * scale * rng.uniform(1.05, 3.0, (2, n, 1))
    p[..., 2] *= zscale
    return p[0], p[1]


def assert_close(a, b, tol, rel=False, what=""):
    a, b = np.asarray(a), np.asarray(b)
    assert np.array_equal(np.isnan(a), np.isnan(b)), f"{what}: NaN pattern"
    d = np.nan_to_num(np.abs(a - b))
    if rel:  # the tolerance scaled by the length (runaway tangent adjustments reach metres)
        scale = np.maximum(1.0, np.nan_to_num(np.abs(a)))
        d = d / (scale if d.ndim == scale.ndim else scale[..., None])
    assert d.max(initial=0.0) <= tol, f"{what}: max difference {d.max():.3g}"


def compare_segments(ref, jit, tol, rel=False):
    assert np.array_equal(ref.status, jit.status)
    assert np.array_equal(ref.code, jit.code)
    assert (ref.raw_status is None) == (jit.raw_status is None)
    assert_close(ref.length, jit.length, tol, rel, "length")
    assert_close(ref.r1, jit.r1, tol, False, "r1")
    assert_close(ref.r2, jit.r2, tol, False, "r2")


# ---------------------------------------------------------------------------
# wrap objects, one segment at a time
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("quadrant", QUADRANTS)
def test_sphere_segments(monkeypatch, quadrant):
    obj = WrapSphere("s", "b", quadrant=quadrant, radius=0.05)
    p1, p2 = segments(1, 1500, 0.05)
    ref, jit = both(monkeypatch, lambda: obj.wrap_segment(p1, p2))
    assert jit.wrapped.sum() > 200
    compare_segments(ref, jit, 1e-15)


@pytest.mark.parametrize("single_wrap", [True, False])
@pytest.mark.parametrize("quadrant", QUADRANTS)
def test_cylinder_segments(monkeypatch, quadrant, single_wrap):
    obj = WrapCylinder("c", "b", quadrant=quadrant, radius=0.03, length=0.2)
    p1, p2 = segments(2, 1500, 0.05, zscale=3.0)
    ref, jit = both(monkeypatch, lambda: obj.wrap_segment(p1, p2, single_wrap=single_wrap))
    assert jit.wrapped.sum() > 100
    if single_wrap:  # closed form
        compare_segments(ref, jit, 1e-15)
    else:  # the adjustment loop: the runaways amplify round-off (lengths of metres)
        compare_segments(ref, jit, TOL, rel=True)


@pytest.mark.parametrize("single_wrap", [True, False])
@pytest.mark.parametrize("quadrant", QUADRANTS)
def test_torus_segments(monkeypatch, quadrant, single_wrap):
    obj = WrapTorus("t", "b", quadrant=quadrant, inner_radius=0.03, outer_radius=0.08)
    p1, p2 = segments(3, 800, 0.12)
    ref, jit = both(monkeypatch, lambda: obj.wrap_segment(p1, p2, single_wrap=single_wrap))
    assert jit.wrapped.sum() > 100
    compare_segments(ref, jit, 1e-15 if single_wrap else TOL, rel=not single_wrap)


@pytest.mark.parametrize("method", ["hybrid", "midpoint", "axial"])
@pytest.mark.parametrize("quadrant", QUADRANTS)
def test_ellipsoid_segments_bitwise(monkeypatch, quadrant, method):
    obj = WrapEllipsoid("e", "b", quadrant=quadrant, dimensions=(0.04, 0.07, 0.05))
    p1, p2 = segments(4, 300, 0.06)
    ref, jit = both(monkeypatch, lambda: obj.wrap_segment_details(p1, p2, method, keep_points=True))
    assert jit.result.wrapped.sum() > 40
    for name in ("status", "r1", "r2", "length"):
        np.testing.assert_array_equal(getattr(ref.result, name), getattr(jit.result, name), err_msg=name)
    assert (ref.result.raw_status is None) == (jit.result.raw_status is None)
    for name in ("c1", "sv", "plane", "far_side", "points", "n_points", "closest_point_failed", "tangent_converged"):
        np.testing.assert_array_equal(getattr(ref, name), getattr(jit, name), err_msg=name)


def test_ellipsoid_previous_c1_and_single_points(monkeypatch):
    obj = WrapEllipsoid("e", "b", quadrant="-y", dimensions=(0.03, 0.06, 0.045))
    p1, p2 = segments(5, 50, 0.05)
    prev = np.random.default_rng(0).normal(size=(50, 3))
    ref, jit = both(monkeypatch, lambda: obj.wrap_segment(p1, p2, "midpoint", previous_c1=prev))
    for name in ("status", "r1", "r2", "length"):
        np.testing.assert_array_equal(getattr(ref, name), getattr(jit, name))
    ref, jit = both(monkeypatch, lambda: obj.surface_path(p1[7], p2[7]))
    np.testing.assert_array_equal(ref[0], jit[0])


# ---------------------------------------------------------------------------
# the path: passes, ranges, segment choice, stale cache
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


@pytest.mark.parametrize("compat", [True, False])
@pytest.mark.parametrize("case", list(CASES))
def test_random_paths(monkeypatch, case, compat):
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
    ref, jit = both(monkeypatch, lambda: wrap_path(pg, active, T, specs, opensim_compat=compat))
    assert jit.wrapped.any()
    np.testing.assert_array_equal(ref.sequence, jit.sequence)
    np.testing.assert_array_equal(ref.wrapped, jit.wrapped)
    np.testing.assert_array_equal(ref.passes, jit.passes)
    assert_close(ref.length, jit.length, TOL, rel=True, what="length")
    assert_close(ref.wrap_length, jit.wrap_length, TOL, rel=True, what="wrap length")
    assert_close(ref.tangent_points, jit.tangent_points, TOL, what="tangent points")
    assert (ref.queried_ground is None) == (jit.queried_ground is None)
    if compat:
        assert_close(ref.queried_ground, jit.queried_ground, TOL, what="queried ground positions")


def test_unknown_wrap_object_class_uses_numpy(monkeypatch):
    class MySphere(WrapSphere):
        pass

    specs = [PathWrapSpec(MySphere("m", "b", radius=0.05))]
    pg = np.array([[[0.2, 0.0, 0.0], [-0.2, 0.01, 0.0]]])
    ref, jit = both(monkeypatch, lambda: wrap_path(pg, np.ones((1, 2), bool), np.eye(4)[None, None], specs))
    np.testing.assert_array_equal(ref.length, jit.length)
    assert jit.wrapped[0, 0]


# ---------------------------------------------------------------------------
# real models (the package's kinematics; no OpenSim)
# ---------------------------------------------------------------------------
def _random_poses(model, n, seed):
    rng = np.random.default_rng(seed)
    lo = np.array([c.range[0] for c in model.coordinates])
    hi = np.array([c.range[1] for c in model.coordinates])
    return lo + (hi - lo) * rng.random((n, model.n_q))


@pytest.fixture(scope="module")
def mobl(models_dir):
    from osim_emb.io import load_osim
    return load_osim(str(models_dir / "mobl_arms_holzbaur.osim"))


@pytest.fixture(scope="module")
def arm26(models_dir):
    from osim_emb.io import load_osim
    return load_osim(str(models_dir / "arm26.osim"))


@pytest.mark.parametrize("compat", [True, False])
def test_real_muscle_paths(monkeypatch, mobl, arm26, compat):
    """wrap_path on every MoBL and arm26 muscle at random poses (same kinematic inputs for both)."""
    from osim_emb.paths.geometry import path_states
    for model, n in ((mobl, 40), (arm26, 40)):
        q = _random_poses(model, n, 11)
        ref, jit = both(monkeypatch, lambda: path_states(model, q, opensim_compat=compat))
        for a, b in zip(ref, jit):
            name = a.muscle.name
            np.testing.assert_array_equal(a.sequence, b.sequence, err_msg=name)
            assert_close(a.length, b.length, TOL, rel=True, what=name)
            if a.wrap_length is not None:
                np.testing.assert_array_equal(a.wrapped, b.wrapped, err_msg=name)
                assert_close(a.wrap_length, b.wrap_length, TOL, rel=True, what=name)
                assert_close(a.tangent_points, b.tangent_points, TOL, what=name)
            if a.direction_positions is not None:
                assert_close(a.direction_positions, b.direction_positions, TOL, what=name)


def _kinematics_bitwise(model, q):
    """Whether the compiled kinematics equal forward_kinematics bitwise here (they follow numpy's BLAS
    accumulation order, measured with numpy's bundled OpenBLAS on x86-64)."""
    from osim_emb.core.kinematics import forward_kinematics, joint_variables
    from osim_emb.paths.geometry import _jit_plan
    from osim_emb.paths.wrapping._kernels_muscles import _kinematics
    jv = joint_variables(model, q, order=1)
    kin = forward_kinematics(model, q, 1, jv)
    plan = _jit_plan(model, None, True)
    rot = np.empty((model.n_frames, 3, 3))
    pos = np.empty((model.n_frames, 3))
    jac = np.empty((model.n_frames, model.n_q, 6))
    same = True
    for n in range(q.shape[0]):
        _kinematics(np.ascontiguousarray(jv.value[n]), np.ascontiguousarray(jv.gradient[n]), *plan.kin, rot, pos, jac)
        same &= (np.array_equal(rot, kin.transforms[n, :, :3, :3]) and np.array_equal(pos, kin.transforms[n, :, :3, 3])
                 and np.array_equal(jac, kin.jacobian[n]))
    np.testing.assert_allclose(rot, kin.transforms[-1, :, :3, :3], atol=1e-14)
    np.testing.assert_allclose(jac, kin.jacobian[-1], atol=1e-13)
    return same


@pytest.mark.parametrize("compat", [True, False])
def test_lengths_and_moment_arms_mobl(monkeypatch, mobl, compat):
    """The whole call (kinematics, wrapping, moment arms): the issue's sweep (every 4th configuration)
    and random poses."""
    from osim_emb.paths.geometry import lengths_and_moment_arms, muscle_lengths
    from osim_emb.opensim.moment_arms import make_sweeps
    sweep = ["elv_angle", "shoulder_elv", "shoulder_rot"]
    q_sweep = np.vstack([s.q for s in make_sweeps(mobl, sweep, 1.0, {c: 0.0 for c in sweep})])
    q = np.vstack([q_sweep[::4], _random_poses(mobl, 60, 12)])
    ref, jit = both(monkeypatch, lambda: lengths_and_moment_arms(mobl, q, opensim_compat=compat))
    # bitwise kinematic inputs: the wrapping differences are those of the wrap objects (~1e-15 m);
    # with another BLAS the kinematics differ by round-off, which the wrapping amplifies to ~1e-11 m
    tol = TOL if _kinematics_bitwise(mobl, q[:20]) else 1e-9
    assert_close(ref[0], jit[0], tol, rel=True, what="L")
    assert_close(ref[1], jit[1], tol, what="R")
    no_round = [k for k, m in enumerate(mobl.muscles) if not any(
        type(o) in (WrapSphere, WrapCylinder, WrapTorus) for o in mobl.wrap_objects
        if o.name in {w.wrap_object for w in m.wraps})]
    if tol == TOL:  # no acos / asin / atan2 on these paths: bitwise
        np.testing.assert_array_equal(ref[0][:, no_round], jit[0][:, no_round])
        np.testing.assert_array_equal(ref[1][:, :, no_round], jit[1][:, :, no_round])
    lm = muscle_lengths(mobl, q[:30], opensim_compat=compat)
    np.testing.assert_array_equal(lm, jit[0][:30])


def test_lengths_and_moment_arms_arm26(monkeypatch, arm26):
    from osim_emb.paths.geometry import lengths_and_moment_arms
    q = _random_poses(arm26, 100, 13)
    for compat in (True, False):
        ref, jit = both(monkeypatch, lambda: lengths_and_moment_arms(arm26, q, opensim_compat=compat))
        assert_close(ref[0], jit[0], TOL, what="L")
        assert_close(ref[1], jit[1], TOL, what="R")
    # a subset of the muscles, and no wrapping
    names = [m.name for m in arm26.muscles][::2]
    ref, jit = both(monkeypatch, lambda: lengths_and_moment_arms(arm26, q, names, wrapping=False))
    assert_close(ref[0], jit[0], TOL, what="L")
    assert_close(ref[1], jit[1], TOL, what="R")
