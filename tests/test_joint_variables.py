"""joint_variables (f_i, ∇f_i and the full Hessian H_i of every joint, from the compiled joint-variable program)
against independent references: central finite differences of the values (for ∇f) and of the gradients (for H),
and the closed chain's constraint equations g(f, q) = 0.  One model carries every function type the program
flattens (splines, polynomials, Fourier, multivariate polynomial, clamping, composition, scaling) and two it cannot
(SplineSurface, a user-defined type), which stay external and are evaluated by their own ``evaluate``."""

from __future__ import annotations

import numpy as np
import pytest

from osim_emb.core import functions as fn
from osim_emb.core.closed_chains import AssemblyError, ClosedChain, solve_constraints
from osim_emb.core.compiled import joint_program
from osim_emb.core.kinematics import joint_variables
from osim_emb.model import PRISMATIC, REVOLUTE, Body, GeneralizedCoordinate, Joint, Model
from osim_emb.seeds.mechanisms import linkages as L

NQ = 3


class Cubed(fn.UnivariateFunction):
    """A user-defined function type: t³ (the program cannot flatten it)."""

    type_name = "TestCubed"

    def _derivatives(self, t, order):
        return t ** 3, 3 * t ** 2, 6 * t

    def parameters(self):
        return {}


def _lin(*a, b=0.0):
    return fn.Linear(list(a) + [0.0] * (NQ - len(a)), b)


def _variables():
    x = np.linspace(-2.0, 2.0, 7)
    y = np.sin(1.3 * x) + 0.2 * x
    q0, q1, q2 = (fn.coordinate(k, NQ) for k in range(NQ))
    gy, gx = np.meshgrid(np.linspace(-2, 2, 6), np.linspace(-2, 2, 5))
    return [
        fn.Composite(fn.SimmSpline(x, y), [_lin(0.8, 0.3, b=0.1)]),
        fn.Composite(fn.GCVSpline(x, y, half_order=3), [q1]),
        fn.Composite(fn.NaturalCubicSpline(x, np.cos(x)), [_lin(0.5, 0.5)]),
        fn.Composite(fn.Clamped(fn.SimmSpline(x, y), -1.9, 1.9), [q2]),
        fn.Composite(fn.MultivariatePolynomial(2, 3, np.linspace(-0.5, 0.6, 10)),
                     [q0, fn.Composite(fn.Fourier(4.0, 0.1, [0.3, -0.2], [0.1, 0.05], secular=0.4), [q1])]),
        fn.Multiplier(0.7, fn.Composite(fn.Polynomial([0.2, -0.1, 0.5, 0.3]), [_lin(0.0, 0.6, 0.4)])),
        fn.Composite(fn.PiecewiseLinear(x, y), [q2]),
        fn.Composite(fn.SplineSurface(gx[:, 0], gy[0], np.sin(gx) * np.cos(0.5 * gy)), [q0, q2]),
        fn.Composite(Cubed(), [_lin(0.3, -0.2, 0.4)]),
        fn.Composite(fn.Linear([1.0, -0.5]), [fn.Composite(fn.Polynomial([0.4, 0.0, 1.0]), [q1]),
                                               fn.Composite(fn.SimmSpline(x, y), [q0])]),
    ]


@pytest.fixture(scope="module")
def model():
    rng = np.random.default_rng(2)
    joints, bodies = [], []
    for i, f in enumerate(_variables(), start=1):
        offset = np.eye(4)
        offset[:3, 3] = rng.uniform(-0.2, 0.2, 3)
        joints.append(Joint(f"j{i}", i - 1, PRISMATIC if i % 3 == 0 else REVOLUTE, rng.normal(size=3), f, offset))
        bodies.append(Body(f"b{i}", i, 1.0, [0.1, 0.0, 0.0], np.eye(3) * 0.01))
    coords = [GeneralizedCoordinate(f"q{k}", (-1.5, 1.5), 0.0) for k in range(NQ)]
    return Model("all_function_types", coords, joints, bodies)


def _central(fun, q, h):
    """Central differences of fun (N, ...) at q (N, nq): (N, ..., nq)."""
    cols = []
    for k in range(q.shape[1]):
        e = np.zeros(q.shape[1])
        e[k] = h
        cols.append((fun(q + e) - fun(q - e)) / (2 * h))
    return np.stack(cols, axis=-1)


def test_program_flattens_all_but_the_external_types(model):
    prog = joint_program(model)
    assert len(prog.externals) == 2  # the SplineSurface and the user type
    assert {type(f.outer) for f in prog.externals} == {fn.SplineSurface, Cubed}


def test_gradient_and_full_hessian_match_finite_differences(model):
    rng = np.random.default_rng(7)
    q = rng.uniform(-1.4, 1.4, (12, NQ))
    jv = joint_variables(model, q, order=2)
    assert jv.value.shape == (12, model.n_frames) and jv.hessian.shape == (12, model.n_frames, NQ, NQ)
    assert not np.any(jv.value[:, 0]) and not np.any(jv.hessian[:, 0])
    h = 1e-6
    fd_grad = _central(lambda x: joint_variables(model, x, order=0).value, q, h)
    fd_hess = _central(lambda x: joint_variables(model, x, order=1).gradient, q, h)
    np.testing.assert_allclose(jv.gradient, fd_grad, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(jv.hessian, fd_hess, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(jv.hessian, np.swapaxes(jv.hessian, 2, 3), rtol=1e-15, atol=1e-15)
    # orders 0 and 1 are the leading parts of order 2
    for order in (0, 1):
        low = joint_variables(model, q, order=order)
        np.testing.assert_array_equal(low.value, jv.value)
        assert (low.gradient is None) == (order == 0) and low.hessian is None
        if order == 1:
            np.testing.assert_array_equal(low.gradient, jv.gradient)


def test_values_are_the_functions_values(model):
    """Each joint's value equals its function evaluated at the composed arguments by hand (the elementary
    types' values are checked against OpenSim in test_functions_opensim.py)."""
    q = np.array([[0.3, -0.7, 1.1], [-1.2, 0.4, -0.05]])
    f = _variables()
    x = np.linspace(-2.0, 2.0, 7)
    y = np.sin(1.3 * x) + 0.2 * x
    jv = joint_variables(model, q, order=0).value
    np.testing.assert_allclose(jv[:, 9], (0.3 * q[:, 0] - 0.2 * q[:, 1] + 0.4 * q[:, 2]) ** 3, rtol=1e-14)
    np.testing.assert_allclose(jv[:, 6], 0.7 * np.polyval([0.2, -0.1, 0.5, 0.3], 0.6 * q[:, 1] + 0.4 * q[:, 2]),
                               rtol=1e-14)
    np.testing.assert_allclose(jv[:, 7], np.interp(q[:, 2], x, y), rtol=1e-14)
    np.testing.assert_allclose(jv[:, 8], f[7].outer(q[:, [0, 2]]), rtol=1e-14)


def test_closed_chain_variables_solve_the_constraints_with_fd_derivatives():
    par = L.FiveBarParameters()
    cons = L.five_bar_constraints(par)
    f0 = solve_constraints(cons, [[0.0, 0.0]], L.five_bar_reference_assembly(par))[0]
    chain = ClosedChain(cons, f0)
    model = L.five_bar_model(par, chain.variables)
    prog = joint_program(model)
    assert not prog.externals and prog.function_counts.get("ClosedChain") == 1
    names = [j.name for j in model.joints]
    cols = [names.index(n) + 1 for n in cons.variable_names]
    rng = np.random.default_rng(5)
    q = rng.uniform(-0.2, 0.2, (6, 2))
    jv = joint_variables(model, q, order=2)
    assert np.abs(cons.evaluate(jv.value[:, cols], q, order=0).value).max() < 1e-12
    h = 1e-6
    fd_grad = _central(lambda x: joint_variables(model, x, order=0).value[:, cols], q, h)
    fd_hess = _central(lambda x: joint_variables(model, x, order=1).gradient[:, cols], q, h)
    np.testing.assert_allclose(jv.gradient[:, cols], fd_grad, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(jv.hessian[:, cols], fd_hess, rtol=1e-6, atol=1e-7)


def test_closed_chain_failure_raises_the_detailed_error():
    par = L.FiveBarParameters(l3=1.5, l4=1.5)  # cannot assemble at q = (pi, 0)
    cons = L.five_bar_constraints(par)
    f0 = solve_constraints(cons, [[0.0, 0.0]], L.five_bar_reference_assembly(par))[0]
    model = L.five_bar_model(par, ClosedChain(cons, f0).variables)
    assert joint_variables(model, [[0.1, 0.1]], 2).value.shape == (1, model.n_frames)
    with pytest.raises(AssemblyError, match="cannot assemble"):
        joint_variables(model, [[np.pi, 0.0]], 1)


def test_large_batches_in_parallel_equal_serial_and_keep_errors():
    """From PARALLEL_MIN_STATES states on the batch runs in chunks on numba's threads: the same numbers, and a
    chain that fails inside a chunk still raises the chain solver's error."""
    from osim_emb.core.compiled import PARALLEL_MIN_STATES
    par = L.FiveBarParameters(l3=1.5, l4=1.5)
    cons = L.five_bar_constraints(par)
    f0 = solve_constraints(cons, [[0.0, 0.0]], L.five_bar_reference_assembly(par))[0]
    model = L.five_bar_model(par, ClosedChain(cons, f0).variables)
    q = np.random.default_rng(8).uniform(-0.2, 0.2, (PARALLEL_MIN_STATES + 50, 2))
    big = joint_variables(model, q, 2)
    for rows in (slice(0, 7), slice(PARALLEL_MIN_STATES - 3, PARALLEL_MIN_STATES + 4)):
        small = joint_variables(model, q[rows], 2)
        np.testing.assert_array_equal(big.value[rows], small.value)
        np.testing.assert_array_equal(big.hessian[rows], small.hessian)
    q[PARALLEL_MIN_STATES - 3] = [np.pi, 0.0]
    with pytest.raises(AssemblyError, match="cannot assemble"):
        joint_variables(model, q, 1)
