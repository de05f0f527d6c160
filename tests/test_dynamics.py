"""M, N, G (seed Eqs 124-198): fast arrays = literal Kronecker formulas = independent references
(body Jacobians by finite differences, Lagrange's identity, potential energy, energy conservation)."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from osim_emb.core import dynamics as dyn
from osim_emb.core import dynamics_kronecker as dk
from osim_emb.core import kinematics as kin
from osim_emb.core.synthetic import random_tree_model, serial_chain_model

MODELS = [random_tree_model(n_joints=6, n_q=3, seed=s) for s in (0, 1, 2)]


def _fd(fun, x, h=1e-6):
    cols = []
    for k in range(x.size):
        dx = np.zeros_like(x)
        dx[k] = h
        cols.append((fun(x + dx) - fun(x - dx)) / (2 * h))
    return np.stack(cols, axis=-1)


def _mass_from_body_jacobians(model, q):
    """Sum over bodies of m Jc^T Jc + Jw^T I Jw, with Jc and Jw from finite differences of positions and rotations."""
    m = np.zeros((model.n_q, model.n_q))
    for b in model.bodies:
        if b.mass == 0:
            continue
        def pose(x):
            t = kin.body_transforms(model, kin.forward_kinematics(model, x, order=0))[0, model.body_index(b.name)]
            return t
        com = lambda x: (pose(x) @ np.append(b.com, 1.0))[:3]
        jc = _fd(com, q)
        r0 = pose(q)[:3, :3]
        dr = _fd(lambda x: pose(x)[:3, :3].ravel(), q).reshape(3, 3, -1)
        jw_body = np.stack([np.array([w[2, 1], w[0, 2], w[1, 0]]) for w in
                            (r0.T @ dr[:, :, k] for k in range(model.n_q))], axis=1)
        m += b.mass * jc.T @ jc + jw_body.T @ b.inertia @ jw_body
    return m


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_mass_matrix_three_ways(model):
    rng = np.random.default_rng(0)
    q = rng.uniform(-1.5, 1.5, model.n_q)
    fast = dyn.mass_matrix(model, q)[0]
    eq145 = dk.mass_matrix_eq145(model, q)
    indep = _mass_from_body_jacobians(model, q)
    np.testing.assert_allclose(eq145, fast, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(indep, fast, rtol=1e-7, atol=1e-8)
    assert np.all(np.linalg.eigvalsh(fast) > -1e-12)  # positive semi-definite (random joint maps may be rank deficient)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_velocity_terms_literal_and_lagrange(model):
    rng = np.random.default_rng(1)
    q = rng.uniform(-1.5, 1.5, model.n_q)
    qd = rng.normal(size=model.n_q)
    terms = dyn.dynamics_terms(model, q, qd)
    c = terms.velocity_forces[0]
    np.testing.assert_allclose(terms.velocity[0] @ qd, c, atol=1e-13)
    np.testing.assert_allclose(dk.velocity_forces_eq126(model, q, qd), c, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(dk.velocity_matrix_eq126(model, q, qd), terms.velocity[0], rtol=1e-11, atol=1e-11)
    # Lagrange: c = Mdot qdot - 1/2 d(qdot^T M qdot)/dq
    mfun = lambda x: dyn.mass_matrix(model, x)[0]
    h = 1e-6
    mdot = (mfun(q + h * qd) - mfun(q - h * qd)) / (2 * h)
    grad_t = _fd(lambda x: np.array(qd @ mfun(x) @ qd), q)
    np.testing.assert_allclose(mdot @ qd - 0.5 * grad_t, c, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.name)
def test_gravity_is_minus_potential_gradient(model):
    rng = np.random.default_rng(2)
    q = rng.uniform(-1.5, 1.5, model.n_q)
    g = dyn.gravity_forces(model, q)[0]

    def potential(x):
        t = kin.body_transforms(model, kin.forward_kinematics(model, x, order=0))[0]
        return -sum(b.mass * model.gravity @ (t[k] @ np.append(b.com, 1.0))[:3] for k, b in enumerate(model.bodies))

    np.testing.assert_allclose(dk.gravity_eq187(model, q), g, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(-_fd(lambda x: np.array(potential(x)), q), g, rtol=1e-7, atol=1e-8)


def test_energy_is_conserved_in_a_passive_swing():
    model = MODELS[1]
    rng = np.random.default_rng(3)
    y0 = np.concatenate([rng.uniform(-1, 1, model.n_q), rng.normal(size=model.n_q)])

    def energy(y):
        q, qd = y[:model.n_q], y[model.n_q:]
        t = kin.body_transforms(model, kin.forward_kinematics(model, q, order=0))[0]
        v = -sum(b.mass * model.gravity @ (t[k] @ np.append(b.com, 1.0))[:3] for k, b in enumerate(model.bodies))
        return 0.5 * qd @ dyn.mass_matrix(model, q)[0] @ qd + v

    sol = solve_ivp(dyn.ode_rhs(model), (0, 1.0), y0, method="DOP853", rtol=1e-11, atol=1e-11)
    e = np.array([energy(y) for y in sol.y.T[:: max(1, sol.y.shape[1] // 20)]])
    assert sol.success
    assert np.max(np.abs(e - e[0])) < 1e-7 * max(1.0, abs(e[0]))


def test_inverse_forward_roundtrip_batch():
    model = serial_chain_model(6)
    rng = np.random.default_rng(4)
    q, qd, qdd = rng.normal(size=(3, 10, model.n_q))
    tau = dyn.inverse_dynamics(model, q, qd, qdd)
    np.testing.assert_allclose(dyn.forward_dynamics(model, q, qd, tau), qdd, rtol=1e-9, atol=1e-9)


def test_a_singular_mass_matrix_names_the_coordinates_that_move_no_mass(tmp_path):
    """A pendulum whose second body has neither mass nor inertia: M is singular; forward dynamics, the ODE and
    simulate raise an error naming the model, the configuration and that body's coordinate (not numpy's bare
    'Singular matrix')."""
    from osim_emb import forward_dynamics, simulate
    from osim_emb.core.compiled import SingularMassMatrixError
    from osim_emb.io import load_osim

    def body(name, mass, inertia):
        return (f'<Body name="{name}"><mass>{mass}</mass><mass_center>0 -0.2 0</mass_center>'
                f'<inertia>{inertia}</inertia></Body>')

    def pin(name, parent, child, coord):
        return (f'<PinJoint name="{name}"><socket_parent_frame>{parent}_offset</socket_parent_frame>'
                f'<socket_child_frame>{child}_offset</socket_child_frame><coordinates><Coordinate name="{coord}">'
                '<range>-3 3</range></Coordinate></coordinates><frames>'
                f'<PhysicalOffsetFrame name="{parent}_offset"><socket_parent>/{"" if parent == "ground" else "bodyset/"}'
                f'{parent}</socket_parent><translation>0 -0.4 0</translation></PhysicalOffsetFrame>'
                f'<PhysicalOffsetFrame name="{child}_offset"><socket_parent>/bodyset/{child}</socket_parent>'
                '</PhysicalOffsetFrame></frames></PinJoint>')

    xml = ('<?xml version="1.0"?><OpenSimDocument Version="40000"><Model name="half_massless">'
           '<gravity>0 -9.80665 0</gravity><Ground name="ground"/><BodySet><objects>'
           + body("upper", 1.0, "0.01 0.01 0.01 0 0 0") + body("lower", 0.0, "0 0 0 0 0 0")
           + '</objects></BodySet><JointSet><objects>' + pin("shoulder", "ground", "upper", "q_shoulder")
           + pin("elbow", "upper", "lower", "q_elbow") + '</objects></JointSet></Model></OpenSimDocument>')
    (tmp_path / "half_massless.osim").write_text(xml)
    model = load_osim(str(tmp_path / "half_massless.osim"))
    q = np.array([[0.3, -0.2]])
    with pytest.raises(SingularMassMatrixError, match=r"'half_massless'.*q_elbow move no mass") as info:
        forward_dynamics(model, q, np.zeros_like(q))
    assert "q_shoulder" not in str(info.value)
    assert "[0.3, -0.2]" in str(info.value)
    with pytest.raises(SingularMassMatrixError, match="q_elbow"):
        simulate(model, 0.01, q0=q[0])
