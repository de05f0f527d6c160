"""Four-bar (Eq 121) and five-bar (Eq 123) linkages: point-p kinematics from the package's closed-form
formulas (Eqs 44, 57 with the chain's f_i(q)) against the traditional body-coordinate method (Shabana),
and projection against numerical-differentiation gradients (seed section 4-3, Figs 6, 9, 10)."""

import numpy as np
import pytest

from osim_emb.core import closed_chains as cc
from osim_emb.seeds.mechanisms import linkages as lk

N_T = 201


def _agreement(a, b):
    """(global, pointwise) relative differences of vector histories; pointwise where |b| >= 1% of max|b|."""
    d = np.linalg.norm(np.reshape(a - b, (len(a), -1)), axis=1)
    nb = np.linalg.norm(np.reshape(b, (len(b), -1)), axis=1)
    keep = nb >= 1e-2 * nb.max()
    return d.max() / nb.max(), np.max(d[keep] / nb[keep])


@pytest.fixture(scope="module")
def four_bar():
    par = lk.FourBarParameters()
    traj = lk.four_bar_trajectory()
    t = np.linspace(*traj.span, N_T)
    q, qd, qdd = traj(t)
    sysb = lk.four_bar_body_system(par)
    f0 = lk.four_bar_chain(par).solve(q[:1])[0]
    x, v, a = sysb.analyse(q, qd, qdd, lk.body_guess_from_angles([par.l1, par.l2, par.l3], f0))
    return par, t, q, qd, qdd, sysb.point_kinematics(x, v, a, 1, par.p)


@pytest.fixture(scope="module")
def five_bar():
    par = lk.FiveBarParameters()
    traj = lk.five_bar_trajectory()
    t = np.linspace(*traj.span, N_T)
    q, qd, qdd = traj(t)
    chain = lk.five_bar_chain(par)
    sysb = lk.five_bar_body_system(par)
    f0 = chain.solve(q[:1])[0]
    x, v, a = sysb.analyse(q, qd, qdd, lk.body_guess_from_angles([par.l1, par.l2, par.l3, par.l4], np.r_[q[0], f0]))
    return par, chain, t, q, qd, qdd, sysb.point_kinematics(x, v, a, 2, (par.lp, 0.0))


def test_traditional_reference_is_self_consistent():
    """The body-coordinate velocity and acceleration are the time derivatives of its positions (central differences)."""
    par = lk.FourBarParameters()
    traj = lk.four_bar_trajectory()
    sysb = lk.four_bar_body_system(par)
    x_prev = lk.body_guess_from_angles([par.l1, par.l2, par.l3], lk.four_bar_chain(par).solve([[-1.5]])[0])
    d = 1e-4
    for tc in (0.37, 1.61, 2.9, 4.45):  # away from the Hermite knots (the acceleration jumps there)
        tt = np.array([tc - d, tc, tc + d])
        q, qd, qdd = traj(tt)
        x, v, a = sysb.analyse(q, qd, qdd, x_prev)
        x_prev = x[1]
        p, pv, pa = sysb.point_kinematics(x, v, a, 1, par.p)
        v_fd = (p[2] - p[0]) / (2 * d)
        a_fd = (p[2] - 2 * p[1] + p[0]) / d ** 2
        assert np.linalg.norm(v_fd - pv[1]) < 1e-7 * max(1.0, np.linalg.norm(pv[1]))
        assert np.linalg.norm(a_fd - pa[1]) < 1e-5 * max(1.0, np.linalg.norm(pa[1]))


def test_four_bar_point_p_closed_form_equals_traditional(four_bar):
    par, t, q, qd, qdd, (p_t, v_t, a_t) = four_bar
    pos, vel, acc = lk.point_p_kinematics(lk.four_bar_model(par), 2, [*par.p, 0.0], q, qd, qdd)
    for a, b in ((pos, p_t), (vel, v_t), (acc, a_t)):
        glob, point = _agreement(a[:, :2], b)
        assert np.max(np.abs(a[:, 2])) == 0.0
        assert glob < 1e-12 and point < 1e-12  # issue target: at least 7 significant figures


def test_four_bar_premodel_splines_accuracy(four_bar):
    """The seed's pre-model (natural cubic splines, step 0.01): 7 figures for |v|, about 5 for |a|."""
    par, t, q, qd, qdd, (p_t, v_t, a_t) = four_bar
    cons = lk.four_bar_constraints(par)
    f_start = lk.four_bar_chain(par).solve([[-2.0]])[0]
    spl = cc.premodel(cons, np.linspace(-2, 2, 401), f_start, kind="spline")
    _, vel, acc = lk.point_p_kinematics(lk.four_bar_model(par, spl), 2, [*par.p, 0.0], q, qd, qdd)
    assert _agreement(vel[:, :2], v_t)[1] < 3e-8
    assert _agreement(acc[:, :2], a_t)[1] < 2e-5


def test_five_bar_point_p_closed_form_equals_traditional(five_bar):
    par, chain, t, q, qd, qdd, (p_t, v_t, a_t) = five_bar
    pos, vel, acc = lk.point_p_kinematics(lk.five_bar_model(par, chain.variables), 3, [par.lp, 0, 0], q, qd, qdd)
    for a, b in ((pos, p_t), (vel, v_t), (acc, a_t)):
        glob, point = _agreement(a[:, :2], b)
        assert glob < 1e-12 and point < 1e-11


def test_five_bar_projection_equals_numerical_differentiation(five_bar):
    """Fig 10: gradients of theta_3, theta_4 by projection and by the computational molecule."""
    par, chain, t, q, qd, qdd, _ = five_bar
    jet = chain.evaluate(q)
    g2, h2 = cc.molecule_derivatives(chain.constraints, q, jet.value, 1e-5, accuracy=2)
    g4, h4 = cc.molecule_derivatives(chain.constraints, q, jet.value, 1e-3, accuracy=4)
    for i in range(2):
        glob, point = _agreement(g2[:, i], jet.gradient[:, i])
        assert glob < 1e-9 and point < 1e-8  # >= 8 significant figures
        glob, point = _agreement(g4[:, i], jet.gradient[:, i])
        assert glob < 1e-10 and point < 1e-9
        glob, point = _agreement(h4[:, i], jet.hessian[:, i])
        assert glob < 1e-8 and point < 1e-7
    # magnitudes as plotted in Fig 10
    np.testing.assert_allclose(np.linalg.norm(g2, axis=2), np.linalg.norm(jet.gradient, axis=2), rtol=0, atol=1e-9)


def test_five_bar_gradient_vanishes_in_the_symmetric_configuration():
    """At q = (0, 0) the five-bar is symmetric and theta_4 is extremal: grad theta_4 = 0 (checks sign and branch)."""
    jet = lk.five_bar_chain().evaluate([[0.0, 0.0]])
    assert np.max(np.abs(jet.gradient[0, 1])) < 1e-14
    assert np.linalg.norm(jet.gradient[0, 0]) > 1.0
