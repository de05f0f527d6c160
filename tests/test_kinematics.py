"""Kinematics (seed Eqs 38-99, 177-180): closed form = recursive = finite differences = fast batched arrays,
on random trees of revolute and prismatic joints with nonlinear multi-coordinate joint functions."""

import numpy as np
import pytest

from osim_emb.core import calculus as mc
from osim_emb.core import kinematics as kin
from osim_emb.core import kinematics_kronecker as kk
from osim_emb.core.synthetic import random_tree_model

MODELS = [random_tree_model(n_joints=7, n_q=3, seed=s) for s in range(4)]


def _b(model, q, i):
    return kin.frame_transforms(model, q)[0, i].T


def _fast_d(model, q, i, order=1):
    fk = kin.forward_kinematics(model, q, order=order)
    a = fk.transforms[0, i]
    xi = fk.jacobian[0, i]
    da = kin.twist_matrix(xi) @ a  # (nq, 4, 4): dA/dq_k
    return mc.tensor_to_definition1(np.swapaxes(da, -1, -2)), fk


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_first_derivative_closed_recursive_fd_fast(model):
    rng = np.random.default_rng(1)
    for _ in range(3):
        q = rng.uniform(-1.5, 1.5, model.n_q)
        sk = kk.SeedKinematics(model, q)
        rec = kk.d_recursive(sk)
        for i in range(1, model.n_frames):
            closed = kk.d_closed_form(sk, i)
            fd = mc.definition1_derivative(lambda x: _b(model, x, i), q, step=1e-6)
            fast, _ = _fast_d(model, q, i)
            np.testing.assert_allclose(closed, rec[i], atol=1e-12, rtol=1e-10)
            np.testing.assert_allclose(closed, fd, atol=2e-8)
            np.testing.assert_allclose(fast, closed, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_second_derivative_closed_recursive_fd_fast(model):
    rng = np.random.default_rng(2)
    q = rng.uniform(-1.5, 1.5, model.n_q)
    sk = kk.SeedKinematics(model, q)
    rec = kk.dprime_recursive(sk)
    fk = kin.forward_kinematics(model, q, order=2)
    for i in range(1, model.n_frames):
        closed = kk.dprime_closed_form(sk, i)
        fd = mc.definition1_derivative(lambda x: kk.d_closed_form(kk.SeedKinematics(model, x), i), q, step=1e-5)
        np.testing.assert_allclose(closed, rec[i], atol=1e-11, rtol=1e-9)
        np.testing.assert_allclose(closed, fd, atol=1e-7)
        # fast: d2A/dq_k dq_l = (dXi[k]/dq_l)^ A + Xi[k]^ Xi[l]^ A
        a = fk.transforms[0, i]
        xi = kin.twist_matrix(fk.jacobian[0, i])
        dxi = kin.twist_matrix(fk.jacobian_derivative[0, i])
        d2a = dxi @ a + np.einsum("kab,lbc,cd->klad", xi, xi, a)
        nq = model.n_q
        t = np.swapaxes(d2a, -1, -2)  # d2B[k, l]
        fast = np.zeros((4 * nq * nq, 4))
        for k in range(nq):
            for l in range(nq):
                fast[np.arange(4) * nq * nq + k * nq + l, :] = t[k, l]
        np.testing.assert_allclose(fast, closed, atol=1e-11, rtol=1e-9)


@pytest.mark.parametrize("model", MODELS[:2], ids=lambda m: m.name)
def test_point_velocity_acceleration_and_angular_velocity(model):
    """Eqs 44, 57, 177-180 against finite differences along a smooth trajectory q(t)."""
    rng = np.random.default_rng(3)
    q0, q1, q2 = rng.normal(size=(3, model.n_q))
    path = lambda t: q0 + q1 * np.sin(t) + q2 * t ** 2
    t0, h = 0.4, 1e-4
    q = path(t0)
    qd = (path(t0 + h) - path(t0 - h)) / (2 * h)
    qdd = (path(t0 + h) - 2 * q + path(t0 - h)) / h ** 2
    qd_exact = q1 * np.cos(t0) + 2 * q2 * t0
    qdd_exact = -q1 * np.sin(t0) + 2 * q2
    np.testing.assert_allclose(qd, qd_exact, atol=1e-7)
    sk = kk.SeedKinematics(model, q)
    fk = kin.forward_kinematics(model, q, order=2)
    for i in range(1, model.n_frames):
        r = rng.uniform(-0.3, 0.3, 3)
        pos = lambda t: kin.point_positions(kin.forward_kinematics(model, path(t), order=0), i, r)[0]
        hv = 1e-5
        v_fd = (pos(t0 + hv) - pos(t0 - hv)) / (2 * hv)
        a_fd = (pos(t0 + h) - 2 * pos(t0) + pos(t0 - h)) / h ** 2
        v44 = kk.point_velocity(sk, i, r, qd_exact)
        a57 = kk.point_acceleration(sk, i, r, qd_exact, qdd_exact)
        np.testing.assert_allclose(v44, v_fd, atol=1e-7)
        np.testing.assert_allclose(a57, a_fd, atol=5e-5)
        np.testing.assert_allclose(kin.point_velocities(fk, i, r, qd_exact)[0], v44, atol=1e-12)
        np.testing.assert_allclose(kin.point_accelerations(fk, i, r, qd_exact, qdd_exact)[0], a57, atol=1e-11)
        # angular velocity from the rotation: ~w = R^T dR/dt in the frame's basis
        rot = lambda t: kin.frame_transforms(model, path(t))[0, i, :3, :3]
        w_skew = rot(t0).T @ (rot(t0 + hv) - rot(t0 - hv)) / (2 * hv)
        w_fd = np.array([w_skew[2, 1], w_skew[0, 2], w_skew[1, 0]])
        w180 = kk.angular_velocity(sk, i, qd_exact)
        np.testing.assert_allclose(w180, w_fd, rtol=2e-6, atol=1e-7)
        np.testing.assert_allclose(kin.angular_velocities(model, fk, i, qd_exact)[0], w180, atol=1e-12)


def test_batch_equals_single():
    model = MODELS[0]
    rng = np.random.default_rng(4)
    q = rng.uniform(-1, 1, (5, model.n_q))
    fk = kin.forward_kinematics(model, q, order=2)
    for n in range(5):
        one = kin.forward_kinematics(model, q[n], order=2)
        np.testing.assert_allclose(fk.transforms[n], one.transforms[0], atol=1e-15)
        np.testing.assert_allclose(fk.jacobian_derivative[n], one.jacobian_derivative[0], atol=1e-14)


def test_seed_form_joints():
    """A revolute joint built from (V_d, d, V_theta) and a prismatic one from (V_d, V_theta, theta) follow Eq 38."""
    from osim_emb.core.functions import Constant
    from osim_emb.model import Joint, rotation_about_axis
    v_d = np.array([0.0, 0.6, 0.8])
    v_t = np.array([1.0, 0.0, 0.0])
    rev = Joint.seed_revolute("r", 0, v_d, 0.5, v_t, Constant(0.0))
    pri = Joint.seed_prismatic("p", 0, v_d, Constant(0.0), v_t, 0.3)
    for f in (-0.4, 0.9):
        expect = np.eye(4)
        expect[:3, :3] = rotation_about_axis(v_t, f)
        expect[:3, 3] = 0.5 * v_d
        np.testing.assert_allclose(rev.local_transform(f), expect, atol=1e-15)
        expect = np.eye(4)
        expect[:3, :3] = rotation_about_axis(v_t, 0.3)
        expect[:3, 3] = f * v_d
        np.testing.assert_allclose(pri.local_transform(f), expect, atol=1e-15)
    # Eq 39 is Rodrigues' formula
    from scipy.spatial.transform import Rotation
    np.testing.assert_allclose(rotation_about_axis(v_d, 0.7), Rotation.from_rotvec(0.7 * v_d).as_matrix(), atol=1e-15)


def test_parallel_batch_equals_serial_and_kernel_is_callable_from_njit():
    """The compiled recursion over a batch in parallel gives bitwise the serial numbers, and its single-configuration
    entry points (the contract for other kernels, e.g. the paths kernel) run inside another njit function."""
    from osim_emb.core import kinematics_kernels as KK
    from osim_emb.core._accel import njit
    model = MODELS[1]
    rng = np.random.default_rng(6)
    q = rng.uniform(-1, 1, (9, model.n_q))
    jv = kin.joint_variables(model, q, order=2)
    tree = KK.frame_tree(model)
    nf, nq = model.n_frames, model.n_q
    outs = []
    for kernel in (KK._batch_serial, KK._batch_parallel):
        out = (np.empty((9, nf, 3, 3)), np.empty((9, nf, 3)), np.empty((9, nf, 6)), np.empty((9, nf, nq, 6)),
               np.empty((9, nf, nq, nq, 6)))
        kernel(2, jv.value, jv.gradient, jv.hessian, *tree.arrays(), *out)
        outs.append(out)
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)

    @njit(cache=False)
    def point_jacobian_of_last_frame(val, grad, parent, revolute, offs, axes, vt, vt2, r):
        nf, nq = grad.shape
        rot, pos, twist = np.empty((nf, 3, 3)), np.empty((nf, 3)), np.empty((nf, 6))
        jac = np.empty((nf, nq, 6))
        KK.frame_kinematics(val, grad, parent, revolute, offs, axes, vt, vt2, rot, pos, twist, jac)
        p = rot[nf - 1] @ r + pos[nf - 1]
        out = np.empty((3, nq))
        for k in range(nq):
            w = jac[nf - 1, k]
            out[0, k] = w[1] * p[2] - w[2] * p[1] + w[3]
            out[1, k] = w[2] * p[0] - w[0] * p[2] + w[4]
            out[2, k] = w[0] * p[1] - w[1] * p[0] + w[5]
        return out

    r = np.array([0.1, -0.2, 0.05])
    fk = kin.forward_kinematics(model, q[:1], order=1)
    got = point_jacobian_of_last_frame(jv.value[0], np.ascontiguousarray(jv.gradient[0]), *tree.arrays(), r)
    np.testing.assert_allclose(got, kin.point_jacobians(fk, nf - 1, r)[0], atol=1e-14)
