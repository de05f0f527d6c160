"""Closed-form planar chain (seed: planar chain, Eqs 1-24, Appendix A) against independent references."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from osim_emb.seeds.planar import (
    Link,
    Muscle,
    PlanarChain,
    base_contact_for_equilibrium,
    com_accelerations,
    com_positions,
    contact_from_vectors,
    contact_vectors,
    count_inertial_terms,
    joint_reactions,
    joint_torques,
    muscle_geometry,
    muscle_torques,
    term_table,
    with_base_equilibrium,
)
from osim_emb.seeds.planar import contributions
from test_planar_chain_reference import random_chain, random_states, recursive_newton_euler

RTOL = 1e-12


def rel_err(a, b):
    return np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300)


@pytest.fixture(params=[1, 2, 3, 4, 6])
def case(request):
    rng = np.random.default_rng(100 + request.param)
    chain = random_chain(rng, request.param, n_muscles=2 * request.param + 1)
    th, dth, ddth, T, R, g = random_states(rng, chain, 25)
    R, g = with_base_equilibrium(chain, th, dth, ddth, R, g)
    return chain, th, dth, ddth, T, R, g


# ------------------------------------------------------------------------------------------------ Eq 4 / 9 / 10
def test_base_contact_satisfies_eq4(case):
    chain, th, dth, ddth, T, R, g = case
    aC = com_accelerations(chain, th, dth, ddth)
    m = chain.array("m")
    F = contact_vectors(chain, th, R, g)
    lhs = (m[None, :, None] * np.array([0.0, -chain.gravity])).sum(axis=1) + F.sum(axis=1)
    rhs = (m[None, :, None] * aC).sum(axis=1)
    np.testing.assert_allclose(lhs, rhs, rtol=0, atol=1e-10)


def test_eq9_equals_eq10_when_eq4_holds(case):
    chain, th, dth, ddth, T, R, g = case
    p9 = joint_reactions(chain, th, dth, ddth, T, R, g, data_set="distal")
    p10 = joint_reactions(chain, th, dth, ddth, T, R, g, data_set="proximal")
    assert rel_err(p9, p10) < RTOL


def test_eq23_equals_eq24_when_eq4_holds(case):
    chain, th, dth, ddth, T, R, g = case
    t23 = joint_torques(chain, th, dth, ddth, R, g, data_set="distal")
    t24 = joint_torques(chain, th, dth, ddth, R, g, data_set="proximal")
    assert rel_err(t23, t24) < RTOL


def test_proximal_set_differs_when_eq4_is_violated():
    rng = np.random.default_rng(7)
    chain = random_chain(rng, 3)
    th, dth, ddth, T, R, g = random_states(rng, chain, 5)  # R_0 random: Eq 4 does not hold
    p9 = joint_reactions(chain, th, dth, ddth, T, R, g, data_set="distal")
    p10 = joint_reactions(chain, th, dth, ddth, T, R, g, data_set="proximal")
    # the difference is the same Eq 4 residual at every joint
    R0, g0 = base_contact_for_equilibrium(chain, th, dth, ddth, R, g)
    Fok = R0[:, None] * np.stack([np.cos(chain.base_angle + g0), np.sin(chain.base_angle + g0)], axis=-1)
    Fgiven = R[:, 0, None] * np.stack([np.cos(chain.base_angle + g[:, 0]), np.sin(chain.base_angle + g[:, 0])], -1)
    np.testing.assert_allclose(p9 - p10, np.broadcast_to((Fgiven - Fok)[:, None, :], p9.shape), atol=1e-9)


# ------------------------------------------------------------------------------------------------ recursive NE
def test_reactions_equal_recursive_newton_euler(case):
    chain, th, dth, ddth, T, R, g = case
    phi, _ = recursive_newton_euler(chain, th, dth, ddth, T, R, g)
    assert rel_err(joint_reactions(chain, th, dth, ddth, T, R, g), phi) < RTOL
    assert rel_err(joint_reactions(chain, th, dth, ddth, T, R, g, data_set="proximal"), phi) < RTOL


def test_torques_equal_recursive_newton_euler(case):
    chain, th, dth, ddth, T, R, g = case
    _, M_no_muscles = recursive_newton_euler(chain, th, dth, ddth, None, R, g)
    assert rel_err(joint_torques(chain, th, dth, ddth, R, g), M_no_muscles) < RTOL
    # with the muscles applied as forces the residual is tau (Eq 23) - tau^M (Eq 22)
    _, M_res = recursive_newton_euler(chain, th, dth, ddth, T, R, g)
    tau = joint_torques(chain, th, dth, ddth, R, g)
    np.testing.assert_allclose(tau - muscle_torques(chain, th, T), M_res, rtol=0, atol=1e-10 * np.abs(tau).max())


# ------------------------------------------------------------------------------------------------ Eqs 5, 8, 11, 12, 22
def test_com_accelerations_eq5_against_finite_differences():
    rng = np.random.default_rng(3)
    chain = random_chain(rng, 4)
    a0, a1, a2 = rng.normal(size=(3, 4))
    th = lambda t: a0 + a1 * t + 0.5 * a2 * t**2 + 0.3 * np.sin(3 * t)  # noqa: E731
    dth = lambda t: a1 + a2 * t + 0.9 * np.cos(3 * t)  # noqa: E731
    ddth = lambda t: a2 - 2.7 * np.sin(3 * t)  # noqa: E731
    t, h = 0.37, 1e-4
    fd = (com_positions(chain, th(t + h)) - 2 * com_positions(chain, th(t)) + com_positions(chain, th(t - h))) / h**2
    np.testing.assert_allclose(com_accelerations(chain, th(t), dth(t), ddth(t)), fd, atol=2e-6)


def test_eq8_and_eq11_literal():
    """The end joints written out as in the seed (Eq 8 both lines, Eq 11 both lines)."""
    rng = np.random.default_rng(11)
    chain = random_chain(rng, 3, n_muscles=6)
    n = chain.n
    th, dth, ddth, T, R, g = random_states(rng, chain, 10)
    R, g = with_base_equilibrium(chain, th, dth, ddth, R, g)
    L = chain.links
    gv = np.array([0.0, -chain.gravity])
    tha = np.hstack([np.full((10, 1), chain.base_angle), th])
    dtha = np.hstack([np.zeros((10, 1)), dth])
    ddtha = np.hstack([np.zeros((10, 1)), ddth])
    u = lambda a: np.stack([np.cos(a), np.sin(a)], -1)  # noqa: E731
    w = lambda a: np.stack([-np.sin(a), np.cos(a)], -1)  # noqa: E731
    Rv = R[..., None] * u(tha + g)
    pa, pb, e = muscle_geometry(chain, th)

    def F_on(link_j, other):  # sum over muscles of F_{link_j, other} (force on link_j by muscles joining `other`)
        out = np.zeros((10, 2))
        for k, m in enumerate(chain.muscles):
            Fb = T[:, k, None] * e[:, k]
            if m.link_b == link_j and m.link_a == other:
                out += Fb
            if m.link_a == link_j and m.link_b == other:
                out -= Fb
        return out

    def lw(i):
        return L[i].length * (ddtha[:, i, None] * w(tha[:, i]) - (dtha[:, i] ** 2)[:, None] * u(tha[:, i]))

    def lcw(i):
        a = tha[:, i] + L[i].com_angle
        return L[i].com_distance * (ddtha[:, i, None] * w(a) - (dtha[:, i] ** 2)[:, None] * u(a))

    # Eq 8, first line: phi_01 = -m0 g - R0 + sum_j F_j0
    eq8a = -L[0].mass * gv - Rv[:, 0] + sum(F_on(j, 0) for j in range(1, n + 1))
    # Eq 8, second line
    eq8b = sum(L[i].mass * gv + Rv[:, i] for i in range(1, n + 1)) + sum(F_on(j, 0) for j in range(1, n + 1))
    eq8b = eq8b - sum(sum(L[j].mass for j in range(i + 1, n + 1)) * lw(i) for i in range(1, n))
    eq8b = eq8b - sum(L[i].mass * lcw(i) for i in range(1, n + 1))
    # Eq 11, first line: phi_{n-1,n}
    Fn = sum(F_on(n, j) for j in range(0, n))
    eq11a = L[n].mass * gv + Rv[:, n] + Fn - L[n].mass * sum(lw(i) for i in range(0, n)) - L[n].mass * lcw(n)
    # Eq 11, second line
    eq11b = -sum(L[i].mass * gv + Rv[:, i] for i in range(0, n)) + Fn
    eq11b = eq11b + sum(sum(L[j].mass for j in range(i + 1, n)) * lw(i) for i in range(0, n - 1))
    eq11b = eq11b + sum(L[i].mass * lcw(i) for i in range(1, n))
    phi = joint_reactions(chain, th, dth, ddth, T, R, g)
    for ref in (eq8a, eq8b):
        np.testing.assert_allclose(phi[:, 0], ref, rtol=1e-12, atol=1e-10)
    for ref in (eq11a, eq11b):
        np.testing.assert_allclose(phi[:, n - 1], ref, rtol=1e-12, atol=1e-10)


def test_eq22_equals_tension_times_length_derivative():
    """tau_k^M = -T dL/dq_k (q_k = theta_k - theta_{k-1}: links k..n rotate about J_k), by finite differences."""
    rng = np.random.default_rng(5)
    chain = random_chain(rng, 4, n_muscles=7)
    th = rng.uniform(-1, 1, (6, 4))
    T = rng.uniform(10, 100, (6, chain.n_muscles))
    tau = muscle_torques(chain, th, T)

    def lengths(t):
        pa, pb, _ = muscle_geometry(chain, t)
        return np.linalg.norm(pa - pb, axis=-1)

    h = 1e-6
    for k in range(1, 5):
        d = np.zeros(4)
        d[k - 1:] = h  # rotating links k..n together about J_k changes q_k only
        dL = (lengths(th + d) - lengths(th - d)) / (2 * h)
        np.testing.assert_allclose(tau[:, k - 1], -(T * dL).sum(axis=1), rtol=1e-7, atol=1e-7)


def test_static_muscle_does_not_load_unspanned_joints():
    """Discussion: in static conditions a muscle force cannot affect the load on joints it does not span."""
    links = tuple(Link(0.3, 1.0, 0.15, 0.1, 0.01) for _ in range(5))
    mus = (Muscle("one_joint", 2, 3, (0.2, 0.02), (0.05, 0.02)),)
    chain = PlanarChain(links, mus)
    th = np.array([[0.3, 0.6, 0.2, -0.4]])
    z = np.zeros_like(th)
    p0 = joint_reactions(chain, th, z, z, [[0.0]])
    p1 = joint_reactions(chain, th, z, z, [[500.0]])
    changed = np.abs(p1 - p0).max(axis=-1)[0] > 1e-9
    assert changed.tolist() == [False, False, True, False]  # only joint 3 (between links 2 and 3)


# ------------------------------------------------------------------------------------------------ Appendix A
def _appendix_a_n2(L, th, dth, ddth, R, gR, g):
    """Appendix A, two-link chain, written out literally (links L[1], L[2])."""
    m2, lC2, e2, l1 = L[2].mass, L[2].com_distance, L[2].com_angle, L[1].length
    IJ1, IJ2 = L[1].inertia_joint, L[2].inertia_joint
    t1, t2 = th[:, 0], th[:, 1]
    a = t2 + e2 - t1
    tau2 = (m2 * g * lC2 * np.cos(t2 + e2) - R[:, 2] * L[2].contact_distance * np.sin(gR[:, 2] - L[2].contact_angle)
            + m2 * lC2 * l1 * (ddth[:, 0] * np.cos(a) + dth[:, 0] ** 2 * np.sin(a)) + IJ2 * ddth[:, 1])
    tau1 = sum(L[k].mass * g * L[k].com_distance * np.cos(th[:, k - 1] + L[k].com_angle)
               - R[:, k] * L[k].contact_distance * np.sin(gR[:, k] - L[k].contact_angle) for k in (1, 2))
    tau1 = tau1 + (m2 * g * l1 * np.cos(t1) - R[:, 2] * l1 * np.sin(gR[:, 2] + t2 - t1))
    tau1 = tau1 + m2 * lC2 * l1 * (ddth[:, 0] * np.cos(a) + dth[:, 0] ** 2 * np.sin(a))
    tau1 = tau1 + (IJ1 + m2 * l1**2) * ddth[:, 0] + IJ2 * ddth[:, 1]
    tau1 = tau1 + l1 * m2 * lC2 * (ddth[:, 1] * np.cos(a) - dth[:, 1] ** 2 * np.sin(a))
    return np.stack([tau1, tau2], axis=1)


def _appendix_a_n3(L, th, dth, ddth, R, gR, g):
    """Appendix A, three-link chain, written out literally."""
    m = [k.mass for k in L]
    l = [k.length for k in L]
    lC = [k.com_distance for k in L]
    eC = [k.com_angle for k in L]
    lR = [k.contact_distance for k in L]
    eR = [k.contact_angle for k in L]
    IJ = [k.inertia_joint for k in L]
    T = {i + 1: th[:, i] for i in range(3)}
    D = {i + 1: dth[:, i] for i in range(3)}
    A = {i + 1: ddth[:, i] for i in range(3)}
    c, s = np.cos, np.sin

    def own(k):
        return m[k] * g * lC[k] * c(T[k] + eC[k]) - R[:, k] * lR[k] * s(gR[:, k] - eR[k])

    def br(i, ang, sign):  # [thdd_i cos(ang) + sign * thd_i^2 sin(ang)]
        return A[i] * c(ang) + sign * D[i] ** 2 * s(ang)

    tau3 = own(3) + m[3] * lC[3] * sum(l[i] * br(i, T[3] + eC[3] - T[i], +1) for i in (1, 2)) + IJ[3] * A[3]
    tau2 = own(2) + own(3) + (m[3] * g * l[2] * c(T[2]) - R[:, 3] * l[2] * s(gR[:, 3] + T[3] - T[2]))
    tau2 = tau2 + m[2] * lC[2] * l[1] * br(1, T[2] + eC[2] - T[1], +1)
    tau2 = tau2 + m[3] * lC[3] * sum(l[i] * br(i, T[3] + eC[3] - T[i], +1) for i in (1, 2))
    tau2 = tau2 + l[2] * m[3] * l[1] * br(1, T[2] - T[1], +1) + (IJ[2] + m[3] * l[2] ** 2) * A[2] + IJ[3] * A[3]
    tau2 = tau2 + l[2] * m[3] * lC[3] * br(3, T[3] + eC[3] - T[2], -1)
    tau1 = own(1) + own(2) + own(3)
    tau1 = tau1 + sum(m[i] * g * l[1] * c(T[1]) - R[:, i] * l[1] * s(gR[:, i] + T[i] - T[1]) for i in (2, 3))
    tau1 = tau1 + m[3] * g * l[2] * c(T[2]) - R[:, 3] * l[2] * s(gR[:, 3] + T[3] - T[2])
    tau1 = tau1 + m[2] * lC[2] * l[1] * br(1, T[2] + eC[2] - T[1], +1)
    tau1 = tau1 + m[3] * lC[3] * sum(l[i] * br(i, T[3] + eC[3] - T[i], +1) for i in (1, 2))
    tau1 = tau1 + l[2] * m[3] * l[1] * br(1, T[2] - T[1], +1)
    tau1 = tau1 + (IJ[1] + (m[2] + m[3]) * l[1] ** 2) * A[1] + (IJ[2] + m[3] * l[2] ** 2) * A[2] + IJ[3] * A[3]
    tau1 = tau1 + l[1] * m[3] * l[2] * br(2, T[2] - T[1], -1)
    tau1 = tau1 + l[1] * sum(m[i] * lC[i] * br(i, T[i] + eC[i] - T[1], -1) for i in (2, 3))
    tau1 = tau1 + l[2] * m[3] * lC[3] * br(3, T[3] + eC[3] - T[2], -1)
    return np.stack([tau1, tau2, tau3], axis=1)


@pytest.mark.parametrize("n, literal", [(2, _appendix_a_n2), (3, _appendix_a_n3)])
def test_appendix_a_literal_generic_links(n, literal):
    """Eqs 13 and 23 reduce to Appendix A (generic links, contacts included)."""
    rng = np.random.default_rng(20 + n)
    chain = random_chain(rng, n, n_muscles=0)
    th, dth, ddth, _, R, g = random_states(rng, chain, 30)
    ref = literal(chain.links, th, dth, ddth, R, g, chain.gravity)
    assert rel_err(joint_torques(chain, th, dth, ddth, R, g), ref) < RTOL


def _joint_space_two_link(m, l, th_rel, dth_rel, ddth_rel, g):
    """Classical joint-space equations of a two-link arm of slender rods (Zatsiorsky 2002, p. 380 form).

    ``alpha_1`` absolute from the horizontal, ``alpha_2`` relative; torques of the
    actuators to produce the motion against gravity (-Y).
    """
    m1, m2 = m
    l1, l2 = l
    lc1, lc2 = l1 / 2, l2 / 2
    I1, I2 = m1 * l1**2 / 12, m2 * l2**2 / 12
    a1, a2 = th_rel[:, 0], th_rel[:, 1]
    d1, d2 = dth_rel[:, 0], dth_rel[:, 1]
    dd1, dd2 = ddth_rel[:, 0], ddth_rel[:, 1]
    c2, s2 = np.cos(a2), np.sin(a2)
    M11 = I1 + I2 + m1 * lc1**2 + m2 * (l1**2 + lc2**2 + 2 * l1 * lc2 * c2)
    M12 = I2 + m2 * (lc2**2 + l1 * lc2 * c2)
    M22 = I2 + m2 * lc2**2
    h = m2 * l1 * lc2 * s2
    G1 = (m1 * lc1 + m2 * l1) * g * np.cos(a1) + m2 * lc2 * g * np.cos(a1 + a2)
    G2 = m2 * lc2 * g * np.cos(a1 + a2)
    tau1 = M11 * dd1 + M12 * dd2 - h * (2 * d1 * d2 + d2**2) + G1
    tau2 = M12 * dd1 + M22 * dd2 + h * d1**2 + G2
    return np.stack([tau1, tau2], axis=1)


def test_appendix_a_slender_rods_match_joint_space_equations():
    """eps = 0, R = 0, theta_k = sum alpha_i: the global-frame form equals the joint-space equations."""
    rng = np.random.default_rng(31)
    m, l = (2.0, 1.3), (0.45, 0.35)
    chain = PlanarChain((Link.slender_rod(0.3, 5.0), Link.slender_rod(l[0], m[0]), Link.slender_rod(l[1], m[1])))
    alpha = rng.uniform(-2, 2, (40, 2))
    dalpha = rng.uniform(-4, 4, (40, 2))
    ddalpha = rng.uniform(-20, 20, (40, 2))
    th, dth, ddth = np.cumsum(alpha, 1), np.cumsum(dalpha, 1), np.cumsum(ddalpha, 1)
    ref = _joint_space_two_link(m, l, alpha, dalpha, ddalpha, chain.gravity)
    assert rel_err(joint_torques(chain, th, dth, ddth), ref) < RTOL


def test_inertial_term_counts_of_appendix_a():
    """Appendix A: 3 and 7 inertial terms for tau_2, tau_1 (n = 2); 5, 13, 22 for tau_3, tau_2, tau_1 (n = 3)."""
    rods = lambda n: PlanarChain(tuple(Link.slender_rod(0.4, 1.0) for _ in range(n + 1)))  # noqa: E731
    assert count_inertial_terms(rods(2)) == {2: 3, 1: 7}
    assert count_inertial_terms(rods(3)) == {3: 5, 2: 13, 1: 22}
    # the counts come from the symbolic term table; each row is one printed monomial
    tab = term_table(rods(2))
    inertial = tab[(tab.joint == 2) & tab.category.str.startswith("inertia")]
    assert sorted(inertial.symbol) == sorted(["m2 l_C2 l1 θ̈1 cos(θ2 + ε_C2 - θ1)", "m2 l_C2 l1 θ̇1² sin(θ2 + ε_C2 - θ1)",
                                              "I_J2 θ̈2"])


def test_term_counts_grow_with_n():
    """Beyond the paper: the global-frame inertial term counts of Eq 23 for n = 1..5 (structure regression)."""
    counts = {}
    for n in range(1, 6):
        c = count_inertial_terms(PlanarChain(tuple(Link.slender_rod(0.4, 1.0) for _ in range(n + 1))))
        counts[n] = c[1]
    assert counts[1] == 1 and counts[2] == 7 and counts[3] == 22
    assert all(counts[n + 1] > counts[n] for n in range(1, 5))


# ------------------------------------------------------------------------------------------------ contributions
@pytest.mark.parametrize("data_set", ["distal", "proximal"])
def test_contributions_sum_to_totals(data_set):
    rng = np.random.default_rng(41)
    chain = random_chain(rng, 4, n_muscles=7)
    N = 12
    th, dth, ddth, T, R, g = random_states(rng, chain, N)
    R, g = with_base_equilibrium(chain, th, dth, ddth, R, g)
    df = contributions(chain, th, dth, ddth, T, R, g, data_set=data_set, include_muscle_torque=True,
                       time=np.linspace(0, 1, N))
    assert {"state", "time", "joint", "quantity", "source", "category", "link", "value"} <= set(df.columns)
    tot = df.groupby(["quantity", "state", "joint"], observed=True)["value"].sum()
    tau = joint_torques(chain, th, dth, ddth, R, g, data_set=data_set)
    phi = joint_reactions(chain, th, dth, ddth, T, R, g, data_set=data_set)
    np.testing.assert_allclose(tot["torque"].to_numpy().reshape(N, 4), tau, rtol=0, atol=1e-11 * np.abs(tau).max())
    np.testing.assert_allclose(tot["reaction_x"].to_numpy().reshape(N, 4), phi[..., 0], rtol=0, atol=1e-10)
    np.testing.assert_allclose(tot["reaction_y"].to_numpy().reshape(N, 4), phi[..., 1], rtol=0, atol=1e-10)
    np.testing.assert_allclose(tot["muscle_torque"].to_numpy().reshape(N, 4), muscle_torques(chain, th, T),
                               rtol=0, atol=1e-10)
    # torque: no muscle rows (Eq 23/24 has no muscle term); reactions: each muscle is a source
    assert set(df[df.quantity == "torque"].category) == {"weight", "contact", "angular_acceleration",
                                                        "angular_velocity"}
    assert set(chain.muscle_names) <= set(df[df.quantity == "reaction_x"].source)


def test_contribution_of_a_muscle_is_its_force_on_spanned_joints_only():
    rng = np.random.default_rng(43)
    chain = random_chain(rng, 4, n_muscles=6)
    th, dth, ddth, T, R, g = random_states(rng, chain, 3)
    df = contributions(chain, th, dth, ddth, T, R, g)
    for m in chain.muscles:
        d = df[(df.source == m.name) & (df.quantity == "reaction_x")]
        spanned = d[d.joint.apply(m.spans)]
        assert (d[~d.joint.apply(m.spans)].value == 0).all()
        assert (spanned.value.abs() > 0).all()


def test_distal_data_set_ignores_proximal_weights():
    rng = np.random.default_rng(44)
    chain = random_chain(rng, 3)
    th, dth, ddth, T, R, g = random_states(rng, chain, 2)
    df = contributions(chain, th, dth, ddth, T, R, g, data_set="distal")
    w = df[(df.category == "weight") & (df.quantity == "reaction_y")]
    # joint k+1 in Eq 9 carries the weights of links k+1..n only
    for _, row in w.iterrows():
        if row["link"] < row["joint"]:
            assert row["value"] == 0.0


# ------------------------------------------------------------------------------------------------ API / validation
def test_single_state_and_batch_agree():
    rng = np.random.default_rng(50)
    chain = random_chain(rng, 3)
    th, dth, ddth, T, R, g = random_states(rng, chain, 4)
    batch = joint_reactions(chain, th, dth, ddth, T, R, g)
    one = joint_reactions(chain, th[2], dth[2], ddth[2], T[2], R[2], g[2])
    assert one.shape == (3, 2)
    np.testing.assert_allclose(one, batch[2], rtol=1e-14)
    assert joint_torques(chain, th[1], dth[1], ddth[1], R[1], g[1]).shape == (3,)


def test_contact_vector_round_trip():
    rng = np.random.default_rng(51)
    chain = random_chain(rng, 2)
    th = rng.uniform(-1, 1, (5, 2))
    F = rng.normal(size=(5, 3, 2))
    R, g = contact_from_vectors(chain, th, F)
    np.testing.assert_allclose(contact_vectors(chain, th, R, g), F, atol=1e-12)


def test_invalid_inputs_raise_clear_errors():
    links = (Link(0.1), Link(0.3, 1.0, 0.1), Link(0.3, 1.0, 0.1))
    with pytest.raises(ValueError, match="to itself"):
        Muscle("bad", 1, 1, (0, 0), (0.1, 0))
    with pytest.raises(ValueError, match="out of range"):
        PlanarChain(links, (Muscle("far", 0, 3, (0, 0), (0.1, 0)),))
    with pytest.raises(ValueError, match="duplicate"):
        PlanarChain(links, (Muscle("x", 0, 1, (0, 0), (0.1, 0)), Muscle("x", 0, 2, (0, 0), (0.1, 0))))
    with pytest.raises(ValueError, match=">= 0"):
        Link(-0.1)
    with pytest.raises(ValueError, match="at least one moving link"):
        PlanarChain((Link(0.1),))
    chain = PlanarChain(links, (Muscle("m", 0, 2, (0, 0.01), (0.1, 0.01)),))
    with pytest.raises(ValueError, match=r"shape \(N, 2\)"):
        joint_torques(chain, np.zeros((4, 3)), np.zeros((4, 3)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="mismatched"):
        joint_torques(chain, np.zeros((4, 2)), np.zeros((3, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="tension"):
        joint_reactions(chain, np.zeros((4, 2)), np.zeros((4, 2)), np.zeros((4, 2)), tension=np.zeros((4, 2)))
    with pytest.raises(ValueError, match="data_set"):
        joint_torques(chain, np.zeros(2), np.zeros(2), np.zeros(2), data_set="middle")
    with pytest.raises(ValueError, match="point_a"):
        Muscle("m2", 0, 1, (0, 0, 0), (0, 0))


def test_chain_is_immutable_and_hashable():
    chain = PlanarChain((Link(0.1), Link(0.3, 1.0, 0.1)))
    with pytest.raises(Exception):
        chain.gravity = 1.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        chain.array("m")[0] = 3.0
    assert hash(chain) == hash(PlanarChain((Link(0.1), Link(0.3, 1.0, 0.1))))
    assert chain.link_names == ["link 0", "link 1"]


def test_term_table_is_tidy():
    chain = PlanarChain(tuple(Link.slender_rod(0.4, 1.0) for _ in range(3)))
    tab = term_table(chain, "reaction", "proximal")
    assert isinstance(tab, pd.DataFrame)
    assert set(tab.equation) <= {"8", "10", "11"}
    assert set(tab.quantity) == {"reaction_x", "reaction_y"}


def test_stacked_contributions_figure_follows_the_project_style(tmp_path):
    from test_figure_style import check_written_figure

    from osim_emb.report import figure_style as fs
    from osim_emb.report.contribution_figures import plot_stacked_contributions
    rng = np.random.default_rng(41)
    chain = random_chain(rng, 3, n_muscles=9)
    N = 12
    th, dth, ddth, T, R, g = random_states(rng, chain, N)
    df = contributions(chain, th, dth, ddth, T, R, g, time=np.linspace(0, 1, N))
    fig = plot_stacked_contributions(df, "reaction_x", max_sources=11, ylabel="force (N)")
    fs.save(fig, tmp_path / "contributions", ("pdf", "svg"))
    check_written_figure(tmp_path / "contributions", fs.DOUBLE_COLUMN)
