"""Closed chains (seed section 3-3, Eqs 100-120): solver, errors, and the four ways to the derivatives of f(q).

References are independent of the code under test: central finite differences of
Newton solutions, the literal Kronecker form of Eqs 102-119, and the
implicit-function theorem solved by LU.
"""

import numpy as np
import pytest

from osim_emb.core import closed_chains as cc
from osim_emb.core.kinematics import joint_variables
from osim_emb.seeds.mechanisms import linkages as lk
from osim_emb.seeds.mechanisms.andrews import Q0, andrews_constraints
from osim_emb.seeds.mechanisms.planar import TrigTerm, trigonometric_constraints


def random_system(m=3, nq=2, seed=0):
    """g_i = f_i + 0.3 sin(w_i . z) + 0.2 cos(v_i . z) - D_i . q: a generic nonlinear system, solvable near f = D q."""
    rng = np.random.default_rng(seed)
    terms = []
    for i in range(m):
        terms.append(TrigTerm(i, 0.3, "sin", tuple(rng.uniform(-1, 1, m + nq))))
        terms.append(TrigTerm(i, 0.2, "cos", tuple(rng.uniform(-1, 1, m + nq))))
    lin = np.zeros((m, m + nq))
    lin[:, :m] = np.eye(m)
    lin[:, m:] = -rng.uniform(-1, 1, (m, nq))
    return trigonometric_constraints(f"random m={m} nq={nq}", m, nq, terms, lin)


def fd_solution_derivatives(cons, q, f, h=1e-5):
    """Gradient and Hessian of the Newton solution f(q) by central differences (independent reference)."""
    nq = cons.n_q
    sol = lambda qq: cc.solve_constraints(cons, qq, f, tol=1e-15, max_condition=np.inf)
    grad = np.zeros((q.shape[0], cons.n_f, nq))
    for k in range(nq):
        e = np.zeros(nq)
        e[k] = h
        grad[:, :, k] = (sol(q + e) - sol(q - e)) / (2 * h)
    return grad


SYSTEMS = [
    ("random-3x2", random_system(), lambda: np.random.default_rng(5).uniform(-0.5, 0.5, (6, 2)), None),
    ("random-4x3", random_system(4, 3, 1), lambda: np.random.default_rng(6).uniform(-0.5, 0.5, (5, 3)), None),
    ("five-bar", lk.five_bar_constraints(), lambda: np.random.default_rng(7).uniform(-2, 2, (6, 2)),
     lk.five_bar_reference_assembly()),
    ("andrews", andrews_constraints(), lambda: Q0[0] + np.linspace(0, 2 * np.pi, 7)[:, None], Q0[1:]),
]


def _solve(cons, q, f_ref):
    if f_ref is None:
        return cc.solve_constraints(cons, q, np.zeros(cons.n_f))
    q_ref = np.zeros((1, cons.n_q)) if cons.n_q == 2 else Q0[:1].reshape(1, 1)
    f0 = cc.solve_constraints(cons, q_ref, f_ref)
    return cc.continuation_guess(cons, q_ref, f0, max_step=0.2)(q)


@pytest.mark.parametrize("name,cons,qgen,f_ref", SYSTEMS, ids=[s[0] for s in SYSTEMS])
def test_gradients_projection_implicit_kronecker_fd(name, cons, qgen, f_ref):
    q = qgen()
    f = _solve(cons, q, f_ref)
    assert np.max(np.abs(cons.evaluate(f, q, 0).value)) < 1e-13 * cons.length_scale * 100
    cj = cons.evaluate(f, q, 2)
    g_proj = cc.projection_gradients(cj)
    g_impl, _ = cc.implicit_derivatives(cj, 1)
    g_fd = fd_solution_derivatives(cons, q, f)
    scale = np.max(np.abs(g_impl))
    np.testing.assert_allclose(g_proj, g_impl, rtol=0, atol=1e-12 * scale)
    np.testing.assert_allclose(g_proj, g_fd, rtol=0, atol=1e-8 * scale)
    for n in range(q.shape[0]):  # Eqs 102-119 literally, with Kronecker products and Definition 1 layout
        lit = cc.projection_gradients_kronecker(cj.f[n], cj.q[n].reshape(-1))
        np.testing.assert_allclose(lit, g_proj[n], rtol=0, atol=1e-12 * scale)


@pytest.mark.parametrize("name,cons,qgen,f_ref", SYSTEMS, ids=[s[0] for s in SYSTEMS])
def test_hessians_projection_implicit_fd(name, cons, qgen, f_ref):
    q = qgen()
    f = _solve(cons, q, f_ref)
    cj = cons.evaluate(f, q, 2)
    grad = cc.projection_gradients(cj)
    h_proj = cc.projection_hessians(cj, grad)
    _, h_impl = cc.implicit_derivatives(cj, 2)
    # reference: central differences of the exact gradients (-g_f^-1 g_q at re-solved configurations)
    h = 1e-5
    h_fd = np.zeros_like(h_proj)
    for k in range(cons.n_q):
        e = np.zeros(cons.n_q)
        e[k] = h
        gp = cc.implicit_derivatives(cons.evaluate(cc.solve_constraints(cons, q + e, f, tol=1e-15), q + e, 1), 1)[0]
        gm = cc.implicit_derivatives(cons.evaluate(cc.solve_constraints(cons, q - e, f, tol=1e-15), q - e, 1), 1)[0]
        h_fd[:, :, :, k] = (gp - gm) / (2 * h)
    scale = np.max(np.abs(h_impl))
    np.testing.assert_allclose(h_proj, h_impl, rtol=0, atol=1e-11 * scale)
    np.testing.assert_allclose(h_proj, h_fd, rtol=0, atol=1e-7 * scale)
    np.testing.assert_allclose(h_proj, np.swapaxes(h_proj, -1, -2), atol=1e-14 * scale)


def test_molecule_matches_projection_to_seven_significant_figures():
    cons = lk.five_bar_constraints()
    q = np.random.default_rng(3).uniform(-2.5, 2.5, (20, 2))
    f = _solve(cons, q, lk.five_bar_reference_assembly())
    cj = cons.evaluate(f, q, 2)
    grad = cc.projection_gradients(cj)
    hess = cc.projection_hessians(cj, grad)
    for acc, step, gtol, htol in ((2, 1e-4, 1e-7, 1e-5), (4, 1e-3, 1e-9, 1e-7)):
        g_num, h_num = cc.molecule_derivatives(cons, q, f, step, accuracy=acc)
        rel_g = np.linalg.norm(g_num - grad, axis=2) / np.linalg.norm(grad, axis=2)
        assert rel_g.max() < gtol, (acc, rel_g.max())
        rel_h = np.linalg.norm(h_num - hess, axis=(2, 3)) / np.linalg.norm(hess, axis=(2, 3))
        assert rel_h.max() < htol, (acc, rel_h.max())


def test_molecule_offsets_count():
    assert cc.molecule_offsets(2, 2).shape == (9, 2)  # the seed's 2-D molecule (Fig 2)
    assert cc.molecule_offsets(3, 4).shape == (1 + 12 + 3 * 16, 3)


@pytest.mark.parametrize("first", [True, False])
def test_numerical_fallback_derivatives(first):
    exact = lk.four_bar_constraints()
    cons = cc.HolonomicConstraints("fallback", 3, 1, exact.residual, exact.first if first else None)
    q = np.linspace(-2, 2, 7)[:, None]
    f = lk.four_bar_chain().solve(q)
    a, b = exact.evaluate(f, q, 2), cons.evaluate(f, q, 2)
    np.testing.assert_allclose(b.f, a.f, atol=1e-9)
    np.testing.assert_allclose(b.q, a.q, atol=1e-9)
    tol2 = 1e-8 if first else 1e-6
    for k in ("ff", "fq", "qq"):
        np.testing.assert_allclose(getattr(b, k), getattr(a, k), atol=tol2)


# ---------------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------------
def _parabola():
    """g = f^2 - q: f = sqrt(q); singular at q = 0, no solution for q < 0."""
    return cc.HolonomicConstraints("parabola", 1, 1, lambda f, q: f ** 2 - q,
                                   lambda f, q: (2 * f[:, :, None], -np.ones((f.shape[0], 1, 1))))


def test_singular_jacobian_error_names_configuration_and_condition():
    with pytest.raises(cc.SingularConstraintError, match="condition number") as err:
        cc.solve_constraints(_parabola(), [[1.0], [1e-24]], [[1.0], [1e-12]])
    assert err.value.index == 1 and err.value.condition > 1e10
    assert isinstance(err.value, ValueError)
    with pytest.raises(cc.SingularConstraintError, match="singular"):
        cc.projection_matrices(np.array([[[1.0, 2.0], [2.0, 4.0]]]))


def test_newton_failures_come_back_as_detailed_errors():
    """The compiled Newton step's status codes: an exactly singular dg/df at the iterate (g = f^2 - q at f = 0) and
    a non-finite iterate (g = cbrt(f - q): Newton's step doubles |f - q| with alternating sign, until it
    overflows) name the configuration."""
    with pytest.raises(cc.SingularConstraintError, match=r"singular during Newton .*configuration 1") as err:
        cc.solve_constraints(_parabola(), [[1.0], [2.0]], [[1.0], [0.0]])
    assert err.value.index == 1 and err.value.condition == np.inf
    cube_root = cc.HolonomicConstraints("cube root", 1, 1, lambda f, q: np.cbrt(f - q),
                                        lambda f, q: ((np.abs(f - q) ** (-2 / 3) / 3)[:, :, None],
                                                      (-np.abs(f - q) ** (-2 / 3) / 3)[:, :, None]))
    with np.errstate(all="ignore"), pytest.raises(cc.AssemblyError, match=r"Newton diverged \(non-finite") as err:
        cc.solve_constraints(cube_root, [[0.0], [0.5]], [[0.0], [1.0]], max_iter=3000)
    assert err.value.index == 1


def test_assembly_error_reports_residual_and_iterations():
    with pytest.raises(cc.AssemblyError, match=r"residual \|g\| = .* iterations|did not converge") as err:
        cc.solve_constraints(_parabola(), [[4.0], [-1.0]], [[2.0], [0.5]], max_iter=20)
    assert err.value.index == 1 and err.value.residual > 0.5 and err.value.iterations == 20
    assert "q = [-1.]" in str(err.value)


def test_coordinate_range_error():
    chain = lk.four_bar_chain()
    with pytest.raises(cc.CoordinateRangeError, match=r"'q' = 2.5 is outside its range \[-2, 2\]"):
        chain.solve([[0.0], [2.5]])
    with pytest.raises(cc.CoordinateRangeError):
        chain.variables[0].evaluate(np.array([[-3.0]]))


def test_four_bar_dead_point_is_singular():
    """Beyond the range [-2, 2]: at the dead point (q ~ 3.6505) dq/dtheta = 0 and dg/df is singular."""
    par = lk.FourBarParameters()
    exact = lk.four_bar_constraints(par)
    cons = cc.HolonomicConstraints("four-bar wide", 3, 1, exact.residual, exact.first)
    f = cc.solve_path(cons, np.linspace(0.0, 3.6504, 60)[:, None], lk.four_bar_reference_assembly(par, 0.0))
    j0, j1 = cons.evaluate(f[:1], [[0.0]], 1), cons.evaluate(f[-1:], [[3.6504]], 1)
    c0, c1 = cc.constraint_condition(j0.f, j0.q), cc.constraint_condition(j1.f, j1.q)
    assert c1[0] > 30 * c0[0]
    with pytest.raises(cc.AssemblyError, match="dead point"):
        cc.solve_path(cons, np.linspace(0.0, 3.7, 60)[:, None], lk.four_bar_reference_assembly(par, 0.0))


# ---------------------------------------------------------------------------------------------
# continuation, pre-modeling, chain variables in a Model
# ---------------------------------------------------------------------------------------------
def test_continuation_guess_reaches_far_configurations_on_the_branch():
    cons = lk.five_bar_constraints()
    f0 = cc.solve_constraints(cons, [[0.0, 0.0]], lk.five_bar_reference_assembly())
    q = np.array([[2.5, -1.8], [-3.0, 3.0], [0.1, 0.2]])
    f = cc.continuation_guess(cons, [0.0, 0.0], f0)(q)
    assert np.max(np.abs(cons.evaluate(f, q, 0).value)) < 1e-12
    # same branch: joint 4 stays on the side of link 3 where it starts (sin theta_4 < 0 at q = 0)
    assert np.all(np.sin(f[:, 1]) < 0)
    path = cc.solve_path(cons, np.linspace([0.0, 0.0], [2.5, -1.8], 5), f0[0])
    np.testing.assert_allclose(path[-1], f[0], atol=1e-12)


def test_premodel_splines_four_bar():
    """Pre-modeling as in the seed: sweep q in [-2, 2] with step 0.01, natural cubic splines."""
    par = lk.FourBarParameters()
    cons = lk.four_bar_constraints(par)
    grid = np.linspace(-2, 2, 401)
    f_start = cc.solve_constraints(cons, [[-2.0]], lk.four_bar_reference_assembly(par, -2.0))[0]
    spl = cc.premodel(cons, grid, f_start, kind="spline")
    q = np.linspace(-1.9, 1.9, 53)[:, None] + 0.003
    exact = lk.four_bar_chain(par).evaluate(q)
    for i, fn in enumerate(spl):
        jet = fn.evaluate(q)
        assert np.max(np.abs(jet.value - exact.value[:, i])) < 1e-8
        assert np.max(np.abs(jet.gradient[:, 0] - exact.gradient[:, i, 0])) < 1e-5
        assert np.max(np.abs(jet.hessian[:, 0, 0] - exact.hessian[:, i, 0, 0])) < 5e-3


def test_premodel_spline_surface_two_coordinates():
    cons = lk.five_bar_constraints()
    f0 = cc.solve_constraints(cons, [[-1.0, -1.0]], lk.five_bar_reference_assembly())[0]
    g = np.linspace(-1.0, 1.0, 41)
    surf = cc.premodel(cons, g, f0, kind="spline", grid2=g)
    q = np.array([[0.13, -0.41], [-0.77, 0.52]])
    exact = cc.continuation_guess(cons, [-1.0, -1.0], f0)(q)
    for i in range(2):
        np.testing.assert_allclose(surf[i].evaluate(q, 0).value, exact[:, i], atol=1e-5)


class _CountingGuess:
    def __init__(self, inner):
        self.inner, self.calls = inner, 0

    def __call__(self, q):
        self.calls += 1
        return self.inner(q)


def test_chain_variables_share_one_solve_in_a_model():
    par = lk.FiveBarParameters()
    base = lk.five_bar_chain(par)
    counting = _CountingGuess(base.guess)
    chain = cc.ClosedChain(base.constraints, counting)
    model = lk.five_bar_model(par, chain.variables)
    q = np.random.default_rng(0).uniform(-1, 1, (11, 2))
    jv = joint_variables(model, q, order=2)
    assert counting.calls == 1
    ref = base.evaluate(q)
    np.testing.assert_allclose(jv.value[:, 3:], ref.value, atol=1e-14)
    np.testing.assert_allclose(jv.gradient[:, 3:], ref.gradient, atol=1e-13)
    np.testing.assert_allclose(jv.hessian[:, 3:], ref.hessian, atol=1e-12)
    assert "closed chain" in chain.variables[0].describe()
    with pytest.raises(Exception, match="cannot be rebuilt"):
        cc.ChainVariable.from_parameters(chain.variables[0].parameters())


def test_implicit_method_chain_equals_projection_chain():
    par = lk.FiveBarParameters()
    q = np.random.default_rng(2).uniform(-2, 2, (8, 2))
    a = lk.five_bar_chain(par, "projection").evaluate(q)
    b = lk.five_bar_chain(par, "implicit").evaluate(q)
    np.testing.assert_allclose(a.gradient, b.gradient, atol=1e-13)
    np.testing.assert_allclose(a.hessian, b.hessian, atol=1e-12)
    assert np.max(a.residual) < 1e-14


@pytest.mark.parametrize("cons", [lk.four_bar_constraints(), lk.five_bar_constraints(), andrews_constraints()],
                         ids=["four-bar", "five-bar", "andrews"])
def test_trigonometric_constraints_combined_equals_separate_and_fd(cons):
    rng = np.random.default_rng(4)
    f = rng.uniform(-3, 3, (5, cons.n_f))
    q = rng.uniform(-3, 3, (5, cons.n_q))
    jet = cons.evaluate(f, q, 2)
    np.testing.assert_allclose(cons.residual(f, q), jet.value, atol=1e-15)
    for a, b in zip(cons.first(f, q), (jet.f, jet.q)):
        np.testing.assert_allclose(a, b, atol=1e-15)
    for a, b in zip(cons.second(f, q), (jet.ff, jet.fq, jet.qq)):
        np.testing.assert_allclose(a, b, atol=1e-15)
    fd = cc.HolonomicConstraints("fd", cons.n_f, cons.n_q, cons.residual).evaluate(f, q, 2)
    scale = max(1.0, np.max(np.abs(jet.f)))
    for k in ("f", "q"):
        np.testing.assert_allclose(getattr(fd, k), getattr(jet, k), atol=1e-9 * scale)
    for k in ("ff", "fq", "qq"):
        np.testing.assert_allclose(getattr(fd, k), getattr(jet, k), atol=1e-6 * scale)
