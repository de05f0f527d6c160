"""Closed chains in the compiled program (OP_CHAIN: Newton + the projection method, Eqs 100-120, the kernels of
core/closed_chain_kernels in one program node) equal independent references to round-off: the joint variables with
their gradients and H q̇ against the implicit-function theorem (numpy LU solves on the constraint jets at the
solution), the dynamics of a two-coordinate chain against the literal Kronecker forms, and Andrews' reduced
right-hand side with its spring in the kernel against reduced_rhs_reference (the spring's generalized force in
numpy, Eq 46) at random states.  Failures in the kernel raise ClosedChain's detailed errors (its status codes).
No timings here: see benchmarks/bench_andrews.py."""

from __future__ import annotations

import numpy as np
import pytest

from osim_emb.core import dynamics as dyn
from osim_emb.core import dynamics_kronecker as dk
from osim_emb.core._accel import HAVE_NUMBA
from osim_emb.core.closed_chains import (AssemblyError, ClosedChain, SingularConstraintError, constraint_condition,
                                         implicit_derivatives, solve_constraints)
from osim_emb.core.compiled import compiled_model
from osim_emb.seeds.mechanisms import andrews as A
from osim_emb.seeds.mechanisms import linkages as L

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed (pip install 'osim-emb[speed]')")

PAR = A.AndrewsParameters()


def _kronecker_forward(model, q, qd, tau):
    """q̈ from the literal Kronecker forms of M, N q̇ and G (Eqs 145, 126, 187), state by state."""
    out = []
    for x, v, t in zip(q, qd, np.broadcast_to(tau, q.shape)):
        rhs = dk.gravity_eq187(model, x) - dk.velocity_forces_eq126(model, x, v) + t
        out.append(np.linalg.solve(dk.mass_matrix_eq145(model, x), rhs))
    return np.array(out)


@pytest.fixture(scope="module")
def andrews():
    chain = A.andrews_chain(PAR)
    return chain, A.andrews_model(PAR, chain.variables)


@pytest.fixture(scope="module")
def five_bar():
    par = L.FiveBarParameters()
    cons = L.five_bar_constraints(par)
    f0 = solve_constraints(cons, [[0.0, 0.0]], L.five_bar_reference_assembly(par))[0]
    chain = ClosedChain(cons, f0)  # a constant guess: the compiled program evaluates it
    return chain, L.five_bar_model(par, chain.variables)


def test_andrews_chain_is_compiled(andrews):
    _, model = andrews
    cm = compiled_model(model)
    assert not cm.externals and cm.function_counts.get("ClosedChain") == 1


def test_andrews_compiled_rhs_equals_numpy_reference(andrews):
    _, model = andrews
    fast, ref = A.reduced_rhs(model, PAR), A.reduced_rhs_reference(model, PAR)
    rng = np.random.default_rng(15)
    for _ in range(20):
        y = np.array([rng.uniform(-np.pi, np.pi), rng.uniform(-1500.0, 1500.0)])
        a, b = fast(0.0, y), ref(0.0, y)
        assert a[0] == y[1]
        np.testing.assert_allclose(a[1], b[1], rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("which", ["andrews", "five_bar"])
def test_compiled_chain_variables_equal_closed_chain(which, request):
    chain, model = request.getfixturevalue(which)
    cm = compiled_model(model)
    nq = model.n_q
    rng = np.random.default_rng(3)
    q = rng.uniform(-np.pi, np.pi, (8, nq)) if nq == 1 else rng.uniform(-0.2, 0.2, (8, nq))
    qd = rng.normal(size=(8, nq))
    val, grad, hq = cm.joint_variables(q, qd)
    cols = [cm.frame_names.index(n) - 1 for n in chain.constraints.variable_names]
    f = val[:, cols]
    cj = chain.constraints.evaluate(f, q, order=2)
    np.testing.assert_array_less(np.abs(cj.value), 1e-12)  # f solves the constraint equations
    ref_grad, ref_hess = implicit_derivatives(cj, 2)  # independent: LU solves, numpy
    np.testing.assert_allclose(grad[:, cols], ref_grad, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(hq[:, cols], np.einsum("nikl,nl->nik", ref_hess, qd), rtol=1e-10, atol=1e-11)
    jet = chain.evaluate(q, order=2)  # the Python route through the same kernels: the same branch and numbers
    np.testing.assert_allclose(jet.value, f, rtol=0, atol=1e-12)


def test_two_coordinate_chain_dynamics(five_bar):
    _, model = five_bar
    rng = np.random.default_rng(4)
    q, qd, tau = rng.uniform(-0.2, 0.2, (6, 2)), rng.normal(size=(6, 2)), rng.normal(size=(6, 2))
    np.testing.assert_allclose(dyn.forward_dynamics(model, q, qd, tau), _kronecker_forward(model, q, qd, tau),
                               rtol=1e-10, atol=1e-10)


def test_kernel_failure_raises_the_detailed_error():
    par = L.FiveBarParameters(l3=1.5, l4=1.5)  # joint 3 at distance 5 > l3 + l4 from the ground pivot at q = (pi, 0)
    cons = L.five_bar_constraints(par)
    f0 = solve_constraints(cons, [[0.0, 0.0]], L.five_bar_reference_assembly(par))[0]
    model = L.five_bar_model(par, ClosedChain(cons, f0).variables)
    assert dyn.forward_dynamics(model, [[0.1, 0.1]], [[0.0, 0.0]]).shape == (1, 2)
    with pytest.raises(AssemblyError, match="cannot assemble"):
        dyn.forward_dynamics(model, [[np.pi, 0.0]], [[0.0, 0.0]])
    with pytest.raises(AssemblyError, match="cannot assemble"):
        dyn.ode_rhs(model)(0.0, np.array([np.pi, 0.0, 0.0, 0.0]))
    from osim_emb.core.compiled import PARALLEL_MIN_STATES
    q = np.full((PARALLEL_MIN_STATES + 50, 2), 0.1)  # large enough for the parallel kernel: the error is not lost
    q[PARALLEL_MIN_STATES - 3] = [np.pi, 0.0]
    with pytest.raises(AssemblyError, match="cannot assemble"):
        dyn.forward_dynamics(model, q, np.zeros_like(q))


def test_condition_limit_as_in_numpy():
    """The kernel's condition check (a Frobenius bound, then the SVD) flags exactly what constraint_condition flags."""
    par = L.FiveBarParameters()
    cons = L.five_bar_constraints(par)
    f0 = solve_constraints(cons, [[0.0, 0.0]], L.five_bar_reference_assembly(par))[0]
    q = np.array([[0.15, -0.1]])
    cj = cons.evaluate(ClosedChain(cons, f0).solve(q), q, order=1)
    cond = float(constraint_condition(cj.f, cj.q)[0])
    ok = L.five_bar_model(par, ClosedChain(cons, f0, max_condition=cond * (1 + 1e-9)).variables)
    assert np.all(np.isfinite(dyn.forward_dynamics(ok, q, [[0.0, 0.0]])))
    bad = L.five_bar_model(par, ClosedChain(cons, f0, max_condition=cond * (1 - 1e-9)).variables)
    assert not compiled_model(bad).externals
    with pytest.raises(SingularConstraintError, match="condition number"):
        dyn.forward_dynamics(bad, q, [[0.0, 0.0]])


def test_point_to_point_spring_in_the_kernel(five_bar):
    """A spring from a point of link 3 to a ground point, two coordinates: kernel = numpy (Eq 46) + forward dynamics."""
    from osim_emb.core.kinematics import forward_kinematics, point_positions
    _, model = five_bar
    cm = compiled_model(model)
    r, anchor, k, l0 = np.array([0.7, 0.1, 0.0]), np.array([1.0, 2.0, 0.0]), 50.0, 1.2
    fun = cm.ode_rhs(np.array([0.3, -0.2]), cm.springs(model, [(3, r, 0, anchor, k, l0)]))
    rng = np.random.default_rng(7)
    for _ in range(4):
        q, qd = rng.uniform(-0.2, 0.2, (1, 2)), rng.normal(size=(1, 2))
        kin = forward_kinematics(model, q, order=1)
        rel = point_positions(kin, 3, r) - anchor
        length = np.linalg.norm(rel, axis=1)
        tau = dyn.point_force_generalized(kin, 3, r, (-k * (length - l0) / length)[:, None] * rel) + [0.3, -0.2]
        ref = _kronecker_forward(model, q, qd, tau)[0]
        np.testing.assert_allclose(fun(0.0, np.concatenate([q[0], qd[0]]))[2:], ref, rtol=1e-10, atol=1e-10)
