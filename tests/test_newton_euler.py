"""Matrix Newton-Euler formalism (seed: Watanabe) against independent references."""

from __future__ import annotations

import numpy as np
import pytest

from osim_emb.seeds.newton_euler import (
    PendulumChain,
    RigidSegment,
    chain_inverse_dynamics,
    energy,
    foot_shank_inverse_dynamics,
    forward_dynamics,
    gravity_vector,
    joint_torque_vector,
    make_rhs,
    mass_matrix,
    notebook_gravity_vector,
    point_force_vector,
    positions,
    simulate,
    skew,
    velocity_vector,
)


def notebook_equation(m1, m2, l1, l2, g, q, qd, M1=0.0, M12=0.0):
    """The notebook's matrix equation for two slender rods, written out literally."""
    t1, t2 = q
    w1, w2 = qd
    d = t1 - t2
    M = np.array([[m1 * l1**2 / 3 + m2 * l1**2, m2 * l1 * l2 * np.cos(d) / 2],
                  [m2 * l1 * l2 * np.cos(d) / 2, m2 * l2**2 / 3]])
    C = np.array([-m2 * l1 * l2 / 2 * w2**2 * np.sin(d), m2 * l1 * l2 / 2 * w1**2 * np.sin(d)])
    G = np.array([-m1 * g * l1 / 2 * np.sin(t1) - m2 * l1 * g * np.sin(t1), -m2 * g * l2 / 2 * np.sin(t2)])
    G_code = np.array([-m1 * g * l1 / 2 * np.sin(t1) - m2 * g * l2 * np.sin(t1), -m2 * g * l2 / 2 * np.sin(t2)])
    Q = np.array([M1 - M12, M12])
    return M, C, G, G_code, Q


@pytest.fixture
def rods():
    return PendulumChain.slender_rods([1.0, 1.0], [1.0, 0.5], g=9.81)  # the notebook's In [139]


def test_double_pendulum_matrices_equal_the_notebook_equation(rods):
    rng = np.random.default_rng(0)
    q = rng.uniform(-3, 3, (20, 2))
    qd = rng.uniform(-8, 8, (20, 2))
    tq = rng.uniform(-5, 5, (20, 2))
    M, C, G, Q = mass_matrix(rods, q), velocity_vector(rods, q, qd), gravity_vector(rods, q), joint_torque_vector(
        rods, tq)
    Gc = notebook_gravity_vector(rods, q)
    for s in range(20):
        Mr, Cr, Gr, Gcr, Qr = notebook_equation(1.0, 1.0, 1.0, 0.5, 9.81, q[s], qd[s], tq[s, 0], tq[s, 1])
        np.testing.assert_allclose(M[s], Mr, rtol=1e-14)
        np.testing.assert_allclose(C[s], Cr, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(G[s], Gr, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(Gc[s], Gcr, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(Q[s], Qr, rtol=1e-14)


def test_notebook_code_differs_from_equation_only_in_G1(rods):
    q = np.array([[0.4, -0.2]])
    d = notebook_gravity_vector(rods, q) - gravity_vector(rods, q)
    # m2 g (l1 - l2) sin q1 with m2 = 1, l1 = 1, l2 = 0.5
    np.testing.assert_allclose(d[0], [9.81 * 0.5 * np.sin(0.4), 0.0], rtol=1e-14, atol=1e-15)


def _random_pendulum(rng, n):
    return PendulumChain(tuple(rng.uniform(0.3, 2.0, n)), tuple(rng.uniform(0.2, 0.8, n)),
                         tuple(rng.uniform(0.05, 0.4, n)), tuple(rng.uniform(0.0, 0.05, n)),
                         tuple(rng.uniform(-0.5, 0.5, n)), g=9.80665)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_mass_matrix_from_numerical_jacobians(n):
    """M = sum_k m_k J_k^T J_k + diag(I): J_k = d(C_k)/dq by central differences of the positions."""
    rng = np.random.default_rng(n)
    ch = _random_pendulum(rng, n)
    q = rng.uniform(-2, 2, n)
    h = 1e-6
    J = np.zeros((n, 2, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = h
        J[:, :, j] = (positions(ch, q + e)[1] - positions(ch, q - e)[1]) / (2 * h)
    M_ref = np.einsum("k,kai,kaj->ij", np.array(ch.masses), J, J) + np.diag(ch.inertias)
    np.testing.assert_allclose(mass_matrix(ch, q), M_ref, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_equations_of_motion_from_lagrangian_by_finite_differences(n):
    """M qdd - C - G = Q from Lagrange's equations, with dT/dq, d/dt(dT/dqd) and V by differences."""
    rng = np.random.default_rng(10 + n)
    ch = _random_pendulum(rng, n)
    q, qd, qdd = rng.uniform(-2, 2, n), rng.uniform(-3, 3, n), rng.uniform(-5, 5, n)
    T = lambda q_, qd_: energy(ch, q_, qd_)[0]  # noqa: E731
    V = lambda q_: energy(ch, q_, np.zeros(n))[1]  # noqa: E731
    h = 1e-5
    I = np.eye(n)
    dTdq = np.array([(T(q + h * I[i], qd) - T(q - h * I[i], qd)) / (2 * h) for i in range(n)])
    dVdq = np.array([(V(q + h * I[i]) - V(q - h * I[i])) / (2 * h) for i in range(n)])

    def p(t):  # generalized momentum along q + qd t + qdd t^2/2
        qt, qdt = q + qd * t + 0.5 * qdd * t**2, qd + qdd * t
        return np.array([(T(qt, qdt + h * I[i]) - T(qt, qdt - h * I[i])) / (2 * h) for i in range(n)])

    dpdt = (p(h) - p(-h)) / (2 * h)
    Q_lagrange = dpdt - dTdq + dVdq
    Q = mass_matrix(ch, q) @ qdd - velocity_vector(ch, q, qd) - gravity_vector(ch, q)
    np.testing.assert_allclose(Q, Q_lagrange, rtol=1e-5, atol=1e-5)


def test_point_force_vector_is_virtual_work():
    rng = np.random.default_rng(3)
    ch = _random_pendulum(rng, 3)
    q = rng.uniform(-2, 2, 3)
    F = np.array([3.0, -7.0])
    E = point_force_vector(ch, q, 2, 0.17, 0.3, F)

    def P(q_):
        J, _ = positions(ch, q_)
        ang = q_[2] + 0.3
        return J[2] + 0.17 * np.array([np.sin(ang), -np.cos(ang)])

    h = 1e-6
    ref = [F @ (P(q + h * np.eye(3)[j]) - P(q - h * np.eye(3)[j])) / (2 * h) for j in range(3)]
    np.testing.assert_allclose(E, ref, rtol=1e-8, atol=1e-9)


def test_energy_is_conserved_by_the_equation_not_by_the_notebook_code(rods):
    """Stated tolerance: |E(t) - E(0)| < 1e-8 |E(0)| over 5 s with rtol = atol = 1e-12 (DOP853)."""
    q0, qd0 = [np.pi / 10, np.pi / 3], [2 * np.pi, -6 * np.pi]  # the notebook's initial state
    t = np.linspace(0, 5, 501)
    eq = simulate(rods, q0, qd0, (0, 5), t_eval=t)
    T, V = energy(rods, eq.y[:2].T, eq.y[2:].T)
    E = T + V
    assert np.max(np.abs(E - E[0])) < 1e-8 * abs(E[0])
    nb = simulate(rods, q0, qd0, (0, 5), t_eval=t, gravity="notebook")
    T, V = energy(rods, nb.y[:2].T, nb.y[2:].T)
    assert np.max(np.abs(T + V - (T[0] + V[0]))) > 1.0  # joules: the code's G is not the gradient of V


def test_rhs_contract_and_vectorized(rods):
    fun = make_rhs(rods, torques=lambda t, q, qd: np.array([0.3, -0.1]))
    y = np.array([0.1, 0.2, 0.3, 0.4])
    f1 = fun(0.0, y)
    f2 = fun(0.0, np.stack([y, 2 * y], axis=1))
    assert f1.shape == (4,) and f2.shape == (4, 2)
    np.testing.assert_allclose(f2[:, 0], f1)
    qdd = forward_dynamics(rods, y[:2], y[2:], Q=joint_torque_vector(rods, [0.3, -0.1]))
    np.testing.assert_allclose(f1, np.concatenate([y[2:], qdd]))


def test_pendulum_chain_agrees_with_planar_closed_form():
    """Cross-check: accelerations of the free n-link pendulum give zero closed-form torques (Eq 23)."""
    from osim_emb.seeds.planar import Link, PlanarChain, joint_torques

    rng = np.random.default_rng(5)
    n = 4
    ch = _random_pendulum(rng, n)
    tq = rng.uniform(-3, 3, (10, n))
    q, qd = rng.uniform(-2, 2, (10, n)), rng.uniform(-3, 3, (10, n))
    qdd = forward_dynamics(ch, q, qd, Q=joint_torque_vector(ch, tq))
    links = [Link(0.1)] + [Link(ch.lengths[i], ch.masses[i], ch.com_distances[i], ch.com_angles[i], ch.inertias[i])
                           for i in range(n)]
    planar = PlanarChain(tuple(links), gravity=ch.g)
    tau = joint_torques(planar, q - np.pi / 2, qd, qdd)  # from the downward vertical to from the X axis
    np.testing.assert_allclose(tau, tq, rtol=1e-10, atol=1e-10)


def test_skew():
    rng = np.random.default_rng(0)
    v, w = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    np.testing.assert_allclose(np.einsum("nij,nj->ni", skew(v), w), np.cross(v, w), rtol=1e-14)
    np.testing.assert_allclose(skew(v), -np.swapaxes(skew(v), -1, -2))
    with pytest.raises(ValueError):
        skew(np.zeros(2))


def _rot(rng, N):
    A = rng.normal(size=(N, 3, 3))
    Q, Rr = np.linalg.qr(A)
    Q = Q * np.sign(np.diagonal(Rr, axis1=1, axis2=2))[:, None, :]
    Q[np.linalg.det(Q) < 0, :, 0] *= -1
    return Q


def _sym(rng, s):
    A = rng.normal(size=(3, 3))
    return s * (A @ A.T + 3 * np.eye(3))


def test_general_recipe_equals_the_notebook_foot_shank_system():
    rng = np.random.default_rng(2)
    N = 8
    IF, IS = _sym(rng, 1e-3), _sym(rng, 1e-2)
    RF, RS = _rot(rng, N), _rot(rng, N)
    v = lambda: rng.normal(size=(N, 3))  # noqa: E731
    aF, aS, wF, wS, dwF, dwS, pF, pS, pA, pK, cop, grf = (v() for _ in range(12))
    g = (0.0, -9.81, 0.0)
    lit = foot_shank_inverse_dynamics(1.2, IF, 3.4, IS, RF, RS, aF, aS, wF, wS, dwF, dwS, pA - pF, cop - pF, pA - pS,
                                      pK - pS, grf, g)
    F, M = chain_inverse_dynamics([RigidSegment("foot", 1.2, IF), RigidSegment("shank", 3.4, IS)],
                                  np.stack([RF, RS], 1), np.stack([pF, pS], 1), np.stack([aF, aS], 1),
                                  np.stack([wF, wS], 1), np.stack([dwF, dwS], 1), np.stack([pA, pK], 1),
                                  F_ext=np.stack([grf, 0 * grf], 1), p_ext=np.stack([cop, cop], 1), gravity=g)
    for a, b in ((F[:, 0], lit["F_A"]), (M[:, 0], lit["M_A"]), (F[:, 1], lit["F_K"]), (M[:, 1], lit["M_K"])):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-10)


def test_chain_inverse_dynamics_satisfies_newton_euler_per_segment():
    """Plug the solution back into each segment's Newton and Euler equations (written with np.cross)."""
    rng = np.random.default_rng(4)
    N, S = 5, 4
    segs = [RigidSegment(f"s{i}", float(rng.uniform(0.5, 5)), _sym(rng, 1e-2)) for i in range(S)]
    R = np.stack([_rot(rng, N) for _ in range(S)], 1)
    p_cm, a_cm, w, dw, pj, Fe, pe, Me = (rng.normal(size=(N, S, 3)) for _ in range(8))
    g = np.array([0.0, -9.81, 0.0])
    F, M = chain_inverse_dynamics(segs, R, p_cm, a_cm, w, dw, pj, Fe, pe, Me, gravity=g)
    for s, seg in enumerate(segs):
        Fs, Ms_g = F[:, s], np.einsum("nji,nj->ni", R[:, s], M[:, s])  # moment back to global
        newton = Fs + seg.mass * g + Fe[:, s] - seg.mass * a_cm[:, s]
        mom = Ms_g + np.cross(pj[:, s] - p_cm[:, s], Fs) + np.cross(pe[:, s] - p_cm[:, s], Fe[:, s]) + Me[:, s]
        if s > 0:
            newton -= F[:, s - 1]
            mom -= np.einsum("nji,nj->ni", R[:, s - 1], M[:, s - 1]) + np.cross(pj[:, s - 1] - p_cm[:, s], F[:, s - 1])
        Ig = np.einsum("nji,jk,nkl->nil", R[:, s], seg.I, R[:, s])  # inertia in the global basis
        wg, dwg = np.einsum("nji,nj->ni", R[:, s], w[:, s]), np.einsum("nji,nj->ni", R[:, s], dw[:, s])
        euler = mom - np.einsum("nij,nj->ni", Ig, dwg) - np.cross(wg, np.einsum("nij,nj->ni", Ig, wg))
        np.testing.assert_allclose(newton, 0, atol=1e-9)
        np.testing.assert_allclose(euler, 0, atol=1e-9)


def test_invalid_inputs():
    with pytest.raises(ValueError, match="lengths"):
        PendulumChain((1.0, 1.0), (1.0,), (0.5, 0.5), (0.0, 0.0))
    with pytest.raises(ValueError, match="n = 2"):
        notebook_gravity_vector(PendulumChain.slender_rods([1.0], [1.0]), [0.1])
    with pytest.raises(ValueError, match="symmetric"):
        RigidSegment("x", 1.0, [[1, 2, 0], [0, 1, 0], [0, 0, 1]])
    with pytest.raises(ValueError, match="gravity"):
        forward_dynamics(PendulumChain.slender_rods([1.0], [1.0]), [0.1], [0.0], gravity="code")
    with pytest.raises(ValueError, match="shape"):
        mass_matrix(PendulumChain.slender_rods([1.0, 1.0], [1.0, 1.0]), np.zeros((3, 3)))
