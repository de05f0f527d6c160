"""The compiled single-state dynamics (osim_emb.core.compiled) = the numpy reference (dynamics_terms) = the literal
Kronecker formulas (Eqs 126, 145, 187), to rounding: on random trees whose joint variables use every function
type the joint-variable program flattens (and two it does not), and on the reference models.  The dispatch
in osim_emb.core.dynamics is checked with and without numba (OSIM_EMB_NO_JIT), and the kernels are run once as
plain Python (NUMBA_DISABLE_JIT) to show the results do not depend on numba.  No timings here: see
benchmarks/bench_dynamics.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from osim_emb.core import dynamics as dyn
from osim_emb.core import dynamics_kronecker as dk
from osim_emb.core._accel import HAVE_NUMBA
from osim_emb.core.compiled import compiled_model
from osim_emb.core.functions import (Clamped, Composite, Constant, Fourier, GCVSpline, Linear, MultivariatePolynomial,
                                Multiplier, NaturalCubicSpline, PiecewiseConstant, PiecewiseLinear, Polynomial,
                                SimmSpline, SplineSurface)
from osim_emb.model import PRISMATIC, REVOLUTE, Body, GeneralizedCoordinate, Joint, Model, homogeneous
from osim_emb.core.synthetic import random_rotation, random_tree_model

REPO = Path(__file__).resolve().parents[1]
RTOL = 1e-12

needs_numba = pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed (pip install 'osim-emb[speed]')")


class ShiftedSimm(SimmSpline):
    """A user subclass: the program must not assume it evaluates like SimmSpline (it is 'external')."""

    def _derivatives(self, t, order):
        f, d1, d2 = super()._derivatives(t, order)
        return f + 0.01, d1, d2


def _rel(a, b):
    return np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(b).max(), 1e-300)


def _function_zoo(nq: int, rng: np.random.Generator):
    """Joint variables f(q) of nq inputs using every function type (and ways of combining them)."""
    def lin(k=None):
        a = np.zeros(nq)
        idx = rng.choice(nq, size=k or rng.integers(1, nq + 1), replace=False)
        a[idx] = rng.uniform(-1.0, 1.0, idx.size)
        return Linear(a, rng.uniform(-0.3, 0.3))

    def knots(n, lo=-1.5, hi=1.5):
        x = np.sort(rng.uniform(lo, hi, n))
        x[0], x[-1] = lo, hi
        return x, rng.uniform(-0.8, 0.8, n)

    shared = lin()
    x8, y8 = knots(8)
    x6, y6 = knots(6)
    grid = np.linspace(-2, 2, 5)
    surface = SplineSurface(grid, grid, rng.uniform(-0.5, 0.5, (5, 5)))
    zoo = [
        lin(),
        Composite(SimmSpline([-1.0, 1.0], [0.2, -0.3]), [lin(1)]),
        Composite(SimmSpline([-1.0, 0.1, 1.2], [0.1, 0.4, -0.2]), [shared]),
        Composite(SimmSpline(*knots(4)), [lin()]),
        Composite(SimmSpline(x8, y8), [shared]),
        Composite(PiecewiseLinear([-1.0, -0.2, -0.2, 0.5, 1.3], [0.0, 0.3, 0.35, -0.1, 0.2]), [lin()]),
        Composite(PiecewiseConstant(*knots(5)), [lin()]),
        Composite(GCVSpline(*knots(3), half_order=1), [lin()]),
        Composite(GCVSpline(x6, y6, half_order=2), [lin()]),
        Composite(GCVSpline(x6, y6, half_order=3), [lin()]),
        Composite(NaturalCubicSpline(*knots(5)), [lin()]),
        Composite(Polynomial(rng.uniform(-0.5, 0.5, 4)), [lin()]),
        Composite(Fourier(2 * np.pi, 0.1, rng.uniform(-0.3, 0.3, 3), rng.uniform(-0.3, 0.3, 3), secular=1.0),
                  [lin()]),
        Composite(Clamped(SimmSpline(x8, y8), -0.6, 0.8), [lin()]),
        Composite(Clamped(Composite(Polynomial([0.4, -0.2, 1.0, 0.1]), [Linear([1.0])]), -0.5, 0.9), [lin()]),
        Composite(MultivariatePolynomial(2, 3, rng.uniform(-0.5, 0.5, 10)), [lin(), shared]),
        MultivariatePolynomial(nq, 2, rng.uniform(-0.5, 0.5, {2: 6, 3: 10, 4: 15}[nq])),
        Multiplier(1.7, Composite(SimmSpline(x8, y8), [lin()])),
        Composite(Multiplier(-0.8, SimmSpline([-1.0, 0.1, 1.2], [0.1, 0.4, -0.2])), [lin()]),
        Composite(Linear([1.0, -0.5]), [Composite(Polynomial([0.3, 1.0, 0.0]), [shared]),
                                        Multiplier(0.3, Composite(Fourier(3.0, 0.0, [0.2], [0.1], 0.7), [lin()]))]),
        Composite(Polynomial([0.2, 0.9, 0.05]), [Composite(SimmSpline(*knots(4)), [lin()])]),
        Composite(Linear([0.5, 0.5]), [Constant(0.3, nq), lin()]),
        # not flattened: evaluated in Python ("external" nodes)
        Composite(surface, [lin(), shared]),
        Composite(ShiftedSimm(x8, y8), [lin()]),
        # constant: the joint is folded into a fixed transform
        Composite(SimmSpline(x8, y8), [Constant(0.25, nq)]),
        Linear(np.zeros(nq), 0.4),
    ]
    return zoo


def zoo_tree_model(seed: int = 0, nq: int = 3, n_extra: int = 4) -> Model:
    """A random tree whose joints use the whole function zoo (revolute and prismatic), bodies on most frames."""
    rng = np.random.default_rng(seed)
    functions = _function_zoo(nq, rng)
    functions += [functions[k] for k in rng.choice(len(functions), n_extra)]
    joints, bodies = [], []
    for i, f in enumerate(functions, start=1):
        parent = int(rng.integers(max(0, i - 4), i))
        kind = PRISMATIC if rng.random() < 0.3 else REVOLUTE
        if kind == PRISMATIC:  # translations of centimetres, as in musculoskeletal models
            f = Multiplier(0.05, f)
        offset = homogeneous(random_rotation(rng), rng.uniform(-0.3, 0.3, 3))
        joints.append(Joint(f"j{i}", parent, kind, rng.normal(size=3), f, offset))
        if rng.random() < 0.75:
            m = rng.uniform(0.5, 3.0)
            ell = rng.uniform(0.01, 0.1, 3)
            inertia = np.diag([ell[1] + ell[2], ell[0] + ell[2], ell[0] + ell[1]]) * m
            r = random_rotation(rng)
            bodies.append(Body(f"b{i}", i, m, rng.uniform(-0.2, 0.2, 3), r @ inertia @ r.T,
                               homogeneous(random_rotation(rng), rng.uniform(-0.1, 0.1, 3))))
    coords = [GeneralizedCoordinate(f"q{k}", (-np.pi, np.pi), 0.0) for k in range(nq)]
    return Model(f"zoo_tree_{seed}", coords, joints, bodies, gravity=[0.3, -9.81, 0.2])


def _states(model, n, seed, spread=2.0):
    rng = np.random.default_rng(seed)
    lo, hi = model.coordinate_ranges.T
    lo = np.where(np.isfinite(lo), lo, -spread)
    hi = np.where(np.isfinite(hi), hi, spread)
    return rng.uniform(lo, hi, (n, model.n_q)), rng.normal(size=(n, model.n_q)), rng.normal(size=(n, model.n_q))


def _check_against_reference(model, n=20, seed=0, qdd_rtol=RTOL):
    """Compiled M, N q̇, G, forward and inverse dynamics and the ODE right-hand side against dynamics_terms."""
    fast = compiled_model(model)
    q, qd, qdd = _states(model, n, seed)
    ref = dyn.dynamics_terms(model, q, qd)
    m, nqd, g = fast.terms(q, qd)
    assert _rel(m, ref.mass) < RTOL
    assert _rel(nqd, ref.velocity_forces) < RTOL
    assert _rel(g, ref.gravity) < RTOL
    m0, none, g0 = fast.terms(q)
    assert none is None and _rel(m0, ref.mass) < RTOL and _rel(g0, ref.gravity) < RTOL
    tau_ref = np.einsum("nkl,nl->nk", ref.mass, qdd) + ref.velocity_forces - ref.gravity
    assert _rel(fast.inverse(q, qd, qdd), tau_ref) < RTOL
    cond = np.linalg.cond(ref.mass)
    if cond.max() > 1e10:  # a joint map of lower rank than n_q (random trees): no accelerations to compare
        return fast
    tau = np.random.default_rng(seed + 1).normal(size=q.shape)
    rhs_ref = ref.gravity - ref.velocity_forces + tau
    acc_ref = np.linalg.solve(ref.mass, rhs_ref[..., None])[..., 0]
    acc = fast.forward(q, qd, tau)
    for k in range(n):  # the solve loses cond(M) * eps, whichever implementation does it
        assert _rel(acc[k], acc_ref[k]) < max(qdd_rtol, 4e-16 * cond[k]), (k, cond[k])
        y = np.concatenate([q[k], qd[k]])
        out = fast.rhs(y, tau[k])
        np.testing.assert_array_equal(out[:model.n_q], qd[k])
        assert _rel(out[model.n_q:], acc[k]) < RTOL  # (external functions: batch and single-point rounding)
    return fast


# -- the joint-variable program ------------------------------------------------------------------

def test_program_covers_the_zoo_and_folds_constants():
    model = zoo_tree_model(0)
    c = compiled_model(model)
    assert compiled_model(model) is c  # cached on the immutable model
    counts = c.function_counts
    for name in ("Linear", "Composite", "Multiplier", "Clamped", "MultivariatePolynomial", "SimmSpline",
                 "PiecewiseLinear", "PiecewiseConstant", "GCVSpline", "NaturalCubicSpline", "Polynomial", "Fourier"):
        assert counts.get(name, 0) > 0, name
    assert len(c.externals) == 2  # SplineSurface and the user subclass
    assert len(c.folded) >= 2  # the constant joint variables
    assert "CompiledModel" in repr(c)


@pytest.mark.parametrize("seed", [0, 1])
def test_program_equals_the_functions(seed):
    """f, ∇f and H q̇ from the program = each joint variable's own evaluate (value, gradient, Hessian)."""
    model = zoo_tree_model(seed).dynamics_model
    c = compiled_model(model)
    q, qd, _ = _states(model, 40, seed + 10, spread=2.5)
    val, grad, hq = c.joint_variables(q, qd)
    by_name = {j.name: j for j in model.joints}
    for col, name in enumerate(c.frame_names[1:]):
        jet = by_name[name].variable.evaluate(q, 2)
        scale = max(1.0, np.abs(jet.value).max())
        np.testing.assert_allclose(val[:, col], jet.value, rtol=RTOL, atol=RTOL * scale, err_msg=name)
        np.testing.assert_allclose(grad[:, col], jet.gradient, rtol=RTOL, atol=RTOL * scale, err_msg=name)
        np.testing.assert_allclose(hq[:, col], np.einsum("nkl,nl->nk", jet.hessian, qd), rtol=RTOL,
                                   atol=RTOL * scale * 10, err_msg=name)


def _one_coordinate_model(functions):
    joints = [Joint(f"j{i}", i - 1, REVOLUTE, [0.0, 0.0, 1.0], f, homogeneous(None, [0.1, 0.0, 0.0]))
              for i, f in enumerate(functions, start=1)]
    bodies = [Body(f"b{i}", i, 1.0, [0.05, 0.0, 0.0], np.eye(3) * 1e-3) for i in range(1, len(functions) + 1)]
    return Model("one_coordinate", [GeneralizedCoordinate("t")], joints, bodies)


def test_splines_at_knots_ends_and_outside():
    """Knot-based functions at their knots, within OpenSim's 2e-13 of the end knots, and outside the range."""
    x = np.array([-1.0, -0.4, 0.0, 0.3, 0.3 + 1e-9, 0.9, 1.5])
    y = np.array([0.1, -0.2, 0.4, 0.0, 0.05, 0.3, -0.1])
    ident = Linear([1.0], 0.0)
    splines = [SimmSpline(x, y), SimmSpline(x[:2], y[:2]), SimmSpline(x[:3], y[:3]), SimmSpline(x[:4], y[:4]),
               PiecewiseLinear(x, y), PiecewiseConstant(x, y), GCVSpline(x, y, 1), GCVSpline(x, y, 2),
               GCVSpline(x, y, 3), NaturalCubicSpline(x, y)]
    functions = [Composite(s, [ident]) for s in splines] + [Clamped(SimmSpline(x, y), -0.5, 1.0),
                                                           Multiplier(2.0, PiecewiseLinear(x, y))]
    model = _one_coordinate_model(functions)
    c = compiled_model(model)
    t = np.concatenate([x, x + 1e-13, x - 1e-13, x + 3e-13, x - 3e-13, [-3.0, 2.5, 0.15, -0.7, 1.2, -0.5, 1.0]])
    val, grad, hq = c.joint_variables(t[:, None], np.full((t.size, 1), 0.7))
    for col, f in enumerate(functions):
        jet = f.evaluate(t[:, None], 2)
        np.testing.assert_allclose(val[:, col], jet.value, rtol=RTOL, atol=1e-14, err_msg=repr(f))
        np.testing.assert_allclose(grad[:, col, 0], jet.gradient[:, 0], rtol=RTOL, atol=1e-12, err_msg=repr(f))
        np.testing.assert_allclose(hq[:, col, 0], 0.7 * jet.hessian[:, 0, 0], rtol=RTOL, atol=1e-9,
                                   err_msg=repr(f))


# -- dynamics against the reference ---------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_zoo_trees_equal_the_reference(seed):
    _check_against_reference(zoo_tree_model(seed), n=15, seed=seed)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_small_trees_equal_the_kronecker_formulas(seed):
    """The literal Eqs 145, 126 (second part) and 187 with Kronecker products, one state at a time."""
    model = random_tree_model(n_joints=6, n_q=3, seed=seed)
    fast = _check_against_reference(model, n=5, seed=seed, qdd_rtol=1e-10)
    q, qd, _ = _states(model, 3, seed + 5)
    m, nqd, g = fast.terms(q, qd)
    for k in range(q.shape[0]):
        assert _rel(m[k], dk.mass_matrix_eq145(model, q[k])) < RTOL
        assert _rel(nqd[k], dk.velocity_forces_eq126(model, q[k], qd[k])) < RTOL
        assert _rel(g[k], dk.gravity_eq187(model, q[k])) < RTOL


def test_zoo_tree_equals_the_kronecker_formulas():
    model = zoo_tree_model(3, n_extra=0)
    fast = compiled_model(model)
    q, qd, _ = _states(model, 2, 7)
    m, nqd, g = fast.terms(q, qd)
    for k in range(q.shape[0]):
        assert _rel(m[k], dk.mass_matrix_eq145(model, q[k])) < RTOL
        assert _rel(nqd[k], dk.velocity_forces_eq126(model, q[k], qd[k])) < RTOL
        assert _rel(g[k], dk.gravity_eq187(model, q[k])) < RTOL


@pytest.mark.parametrize("name", ["double_pendulum", "leg6dof9musc", "mobl_arms_holzbaur"])
def test_reference_models_equal_the_reference(models_dir, name):
    from osim_emb.io import load_osim
    model = load_osim(models_dir / f"{name}.osim")
    c = _check_against_reference(model, n=30, seed=3)
    assert not c.externals


def test_mobl_with_locked_wrist_and_forearm(models_dir, tmp_path):
    """The benchmark's model: MoBL written with deviation, flexion and pro_sup locked (4 coordinates)."""
    from osim_emb.io import load_osim, read_osim
    from osim_emb.io.osim_writer import write_osim
    doc = read_osim(models_dir / "mobl_arms_holzbaur.osim")
    for cs in doc.coordinates:
        if cs.name in ("deviation", "flexion", "pro_sup"):
            cs.locked = True
    write_osim(doc, tmp_path / "mobl_locked.osim")
    model = load_osim(tmp_path / "mobl_locked.osim")
    assert model.coordinate_names == ["elv_angle", "shoulder_elv", "shoulder_rot", "elbow_flexion"]
    _check_against_reference(model, n=30, seed=4)


# -- dispatch in osim_emb.core.dynamics, with and without numba ------------------------------------------

@pytest.mark.parametrize("jit", [True, False], ids=["numba", "no-jit"])
def test_dynamics_functions_and_ode_rhs_dispatch(monkeypatch, jit):
    if jit and not HAVE_NUMBA:
        pytest.skip("numba is not installed")
    monkeypatch.setenv("OSIM_EMB_NO_JIT", "" if jit else "1")
    model = zoo_tree_model(1)
    assert (dyn._compiled(model) is not None) == jit
    q, qd, qdd = _states(model, 6, 21)
    ref = dyn.dynamics_terms(model, q, qd)
    assert _rel(dyn.mass_matrix(model, q), ref.mass) < RTOL
    assert _rel(dyn.gravity_forces(model, q), ref.gravity) < RTOL
    assert _rel(dyn.velocity_terms(model, q, qd), ref.velocity_forces) < RTOL
    tau_ref = np.einsum("nkl,nl->nk", ref.mass, qdd) + ref.velocity_forces - ref.gravity
    assert _rel(dyn.inverse_dynamics(model, q, qd, qdd), tau_ref) < RTOL
    acc = dyn.forward_dynamics(model, q, qd, tau_ref)
    assert _rel(acc, qdd) < 1e-10  # round trip through the solve
    assert _rel(dyn.forward_dynamics(model, q[0], qd[0], 0.5), dyn.forward_dynamics(model, q[:1], qd[:1], 0.5)) == 0

    forces = lambda t, qq, qqd: -0.3 * qqd + np.sin(t)  # noqa: E731
    fun = dyn.ode_rhs(model, forces)
    passive = dyn.ode_rhs(model)
    for k in range(3):
        y = np.concatenate([q[k], qd[k]])
        expect = np.linalg.solve(ref.mass[k], ref.gravity[k] - ref.velocity_forces[k] + forces(0.2, q[k], qd[k]))
        out = fun(0.2, y)
        np.testing.assert_array_equal(out[:model.n_q], qd[k])
        assert _rel(out[model.n_q:], expect) < 1e-11
        expect0 = np.linalg.solve(ref.mass[k], ref.gravity[k] - ref.velocity_forces[k])
        assert _rel(passive(0.0, y)[model.n_q:], expect0) < 1e-11
        assert _rel(passive(0.0, list(y))[model.n_q:], expect0) < 1e-11  # any array-like state


def test_reference_rhs_stays_on_the_reference(monkeypatch):
    """An ode_rhs made with OSIM_EMB_NO_JIT=1 never dispatches to the compiled model later."""
    model = random_tree_model(n_joints=5, n_q=3, seed=1)
    monkeypatch.setenv("OSIM_EMB_NO_JIT", "1")
    fun = dyn.ode_rhs(model)
    monkeypatch.delenv("OSIM_EMB_NO_JIT")

    def forbidden(m):
        raise AssertionError("the reference right-hand side dispatched to the compiled model")

    monkeypatch.setattr(dyn, "_compiled", forbidden)
    y = np.linspace(-0.5, 0.5, 6)
    out = fun(0.0, y)
    ref = dyn.dynamics_terms(model, y[:3], y[3:])
    expect = np.linalg.solve(ref.mass[0], ref.gravity[0] - ref.velocity_forces[0])
    assert _rel(out[3:], expect) < 1e-14


@needs_numba
def test_fast_rhs_checks_the_state_and_singular_mass_matrix():
    model = random_tree_model(n_joints=4, n_q=2, seed=0)
    fun = compiled_model(model).ode_rhs()
    with pytest.raises(ValueError, match="shape"):
        fun(0.0, np.zeros(3))
    # a coordinate that drives nothing: M has a zero row, singular as np.linalg.solve says
    coords = [GeneralizedCoordinate("a"), GeneralizedCoordinate("unused")]
    joints = [Joint("j1", 0, REVOLUTE, [0, 0, 1], Linear([1.0, 0.0]))]
    bodies = [Body("b1", 1, 1.0, [0.2, 0.0, 0.0], np.eye(3) * 0.01)]
    singular = Model("singular", coords, joints, bodies)
    with pytest.raises(np.linalg.LinAlgError):
        compiled_model(singular).ode_rhs()(0.0, np.zeros(4))


def test_passive_swing_fast_and_reference_agree(monkeypatch):
    """solve_ivp on the compiled right-hand side and on the numpy one: the same trajectory."""
    from scipy.integrate import solve_ivp
    model = random_tree_model(n_joints=6, n_q=3, seed=1)
    rng = np.random.default_rng(5)
    y0 = np.concatenate([rng.uniform(-0.5, 0.5, model.n_q), rng.normal(size=model.n_q)])
    runs = []
    for flag in (["", "1"] if HAVE_NUMBA else ["1"]):
        monkeypatch.setenv("OSIM_EMB_NO_JIT", flag)
        sol = solve_ivp(dyn.ode_rhs(model), (0, 0.5), y0, method="DOP853", rtol=1e-11, atol=1e-11)
        assert sol.success
        runs.append(sol.y[:, -1])
    assert np.abs(runs[0] - runs[-1]).max() < 1e-9


def test_kernels_as_plain_python():
    """NUMBA_DISABLE_JIT=1: the very same kernels run as Python and give the same numbers."""
    script = r"""
import numpy as np
from osim_emb.core import dynamics as dyn
from osim_emb.core.compiled import compiled_model
from osim_emb.core.synthetic import random_tree_model
import osim_emb.core.compiled_kernels as K
assert not hasattr(K.rhs, "py_func")  # plain Python functions
model = random_tree_model(n_joints=5, n_q=3, seed=1)
rng = np.random.default_rng(0)
q, qd = rng.uniform(-1, 1, (3, 3)), rng.normal(size=(3, 3))
ref = dyn.dynamics_terms(model, q, qd)
c = compiled_model(model)
m, nqd, g = c.terms(q, qd)
rel = lambda a, b: np.abs(a - b).max() / np.abs(b).max()
assert rel(m, ref.mass) < 1e-12 and rel(nqd, ref.velocity_forces) < 1e-12 and rel(g, ref.gravity) < 1e-12
out = c.rhs(np.concatenate([q[0], qd[0]]))
acc = np.linalg.solve(ref.mass[0], ref.gravity[0] - ref.velocity_forces[0])
assert rel(out[3:], acc) < 1e-10
print("ok")
"""
    env = dict(os.environ, NUMBA_DISABLE_JIT="1", PYTHONPATH=str(REPO))
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().endswith("ok")
