"""The compiled dynamics (osim_emb.core.compiled, the one implementation of M, N, N q̇, G, forward and inverse
dynamics) against independent references: the literal Kronecker formulas (Eqs 126, 145, 187, with the joint
variables from each function's own evaluate), the functions' own values, gradients and Hessians for the
joint-variable program, and conservation of energy.  On random trees whose joint variables use every function
type the program flattens (and two it does not), and on the reference models.  Large batches run in parallel
chunks: the same numbers as one state at a time.  The kernels are run once as plain Python (NUMBA_DISABLE_JIT) to
show the results do not depend on numba.  No timings here: see benchmarks/bench_dynamics.py."""

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


def _kronecker(model, q, qd):
    """M, N q̇ and G state by state from the literal Kronecker forms (an independent reference)."""
    m = np.stack([dk.mass_matrix_eq145(model, x) for x in q])
    nqd = np.stack([dk.velocity_forces_eq126(model, x, v) for x, v in zip(q, qd)])
    g = np.stack([dk.gravity_eq187(model, x) for x in q])
    return m, nqd, g


def _check_against_kronecker(model, n=4, seed=0, qdd_rtol=RTOL):
    """Compiled M, N q̇, G, forward and inverse dynamics and the ODE right-hand side against the Kronecker forms."""
    fast = compiled_model(model)
    q, qd, qdd = _states(model, n, seed)
    ref_m, ref_nqd, ref_g = _kronecker(model, q, qd)
    m, nqd, g = fast.terms(q, qd)
    assert _rel(m, ref_m) < RTOL
    assert _rel(nqd, ref_nqd) < RTOL
    assert _rel(g, ref_g) < RTOL
    m0, none, g0 = fast.terms(q)
    assert none is None and _rel(m0, ref_m) < RTOL and _rel(g0, ref_g) < RTOL
    tau_ref = np.einsum("nkl,nl->nk", ref_m, qdd) + ref_nqd - ref_g
    assert _rel(fast.inverse(q, qd, qdd), tau_ref) < RTOL
    cond = np.linalg.cond(ref_m)
    if cond.max() > 1e10:  # a joint map of lower rank than n_q (random trees): no accelerations to compare
        return fast
    tau = np.random.default_rng(seed + 1).normal(size=q.shape)
    acc_ref = np.linalg.solve(ref_m, (ref_g - ref_nqd + tau)[..., None])[..., 0]
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


# -- dynamics against the Kronecker forms -----------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_zoo_trees_equal_the_kronecker_formulas(seed):
    _check_against_kronecker(zoo_tree_model(seed, n_extra=0), n=2, seed=seed)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_small_trees_equal_the_kronecker_formulas(seed):
    """The literal Eqs 145, 126 (second part) and 187 with Kronecker products, one state at a time."""
    _check_against_kronecker(random_tree_model(n_joints=6, n_q=3, seed=seed), n=5, seed=seed, qdd_rtol=1e-10)


@pytest.mark.parametrize("name", ["double_pendulum", "leg6dof9musc", "mobl_arms_holzbaur"])
def test_reference_models_equal_the_kronecker_formulas(models_dir, name):
    from osim_emb.io import load_osim
    model = load_osim(models_dir / f"{name}.osim")
    c = _check_against_kronecker(model, n=3, seed=3)
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
    _check_against_kronecker(model, n=3, seed=4)


# -- the public functions of osim_emb.core.dynamics -------------------------------------------------

def test_dynamics_functions_and_ode_rhs(monkeypatch):
    """mass_matrix, gravity_forces, velocity_terms, velocity_matrix, inverse and forward dynamics, dynamics_terms and
    ode_rhs against the Kronecker forms; OSIM_EMB_NO_JIT (read by the paths layer only) changes nothing here."""
    monkeypatch.setenv("OSIM_EMB_NO_JIT", "1")
    model = zoo_tree_model(1, n_extra=0)
    q, qd, qdd = _states(model, 2, 21)
    ref_m, ref_nqd, ref_g = _kronecker(model, q, qd)
    assert _rel(dyn.mass_matrix(model, q), ref_m) < RTOL
    assert _rel(dyn.gravity_forces(model, q), ref_g) < RTOL
    assert _rel(dyn.velocity_terms(model, q, qd), ref_nqd) < RTOL
    terms = dyn.dynamics_terms(model, q, qd)
    for k in range(q.shape[0]):
        assert _rel(terms.velocity[k], dk.velocity_matrix_eq126(model, q[k], qd[k])) < RTOL
    np.testing.assert_array_equal(dyn.velocity_matrix(model, q, qd), terms.velocity)
    assert _rel(np.einsum("nkl,nl->nk", terms.velocity, qd), terms.velocity_forces) < RTOL
    assert terms.kinematics.transforms.shape[:2] == (q.shape[0], model.dynamics_model.n_frames)
    static = dyn.dynamics_terms(model, q)
    assert static.velocity is None and static.velocity_forces is None
    np.testing.assert_array_equal(static.mass, terms.mass)
    tau_ref = np.einsum("nkl,nl->nk", ref_m, qdd) + ref_nqd - ref_g
    assert _rel(dyn.inverse_dynamics(model, q, qd, qdd), tau_ref) < RTOL
    acc = dyn.forward_dynamics(model, q, qd, tau_ref)
    assert _rel(acc, qdd) < 1e-10  # round trip through the solve
    assert _rel(dyn.forward_dynamics(model, q[0], qd[0], 0.5), dyn.forward_dynamics(model, q[:1], qd[:1], 0.5)) == 0

    forces = lambda t, qq, qqd: -0.3 * qqd + np.sin(t)  # noqa: E731
    fun = dyn.ode_rhs(model, forces)
    passive = dyn.ode_rhs(model)
    for k in range(q.shape[0]):
        y = np.concatenate([q[k], qd[k]])
        expect = np.linalg.solve(ref_m[k], ref_g[k] - ref_nqd[k] + forces(0.2, q[k], qd[k]))
        out = fun(0.2, y)
        np.testing.assert_array_equal(out[:model.n_q], qd[k])
        assert _rel(out[model.n_q:], expect) < 1e-11
        expect0 = np.linalg.solve(ref_m[k], ref_g[k] - ref_nqd[k])
        assert _rel(passive(0.0, y)[model.n_q:], expect0) < 1e-11
        assert _rel(passive(0.0, list(y))[model.n_q:], expect0) < 1e-11  # any array-like state


def test_parallel_batches_equal_one_state_at_a_time():
    """A batch large enough to run in parallel chunks gives, state by state, the numbers of the serial kernel."""
    from osim_emb.core import compiled_kernels as K
    from osim_emb.core.compiled import PARALLEL_MIN_STATES
    model = zoo_tree_model(2)
    c = compiled_model(model)
    n = 67
    q, qd, qdd = _states(model, n, 31)
    ext = c.external_jets(q)
    for mode in (K.MODE_TERMS, K.MODE_FORWARD, K.MODE_INVERSE, K.MODE_STATIC, K.MODE_MATRIX_N):
        serial = K.batch(c.ints, c.flts, ext, q, qd, qdd, mode, c.chains)
        for chunks in (1, 3, 8):
            *parallel, done = K.batch_parallel(c.ints, c.flts, ext, q, qd, qdd, mode, chunks, c.chains)
            assert done.all()
            for a, b in zip(serial, parallel):
                np.testing.assert_array_equal(a, b)
    n = PARALLEL_MIN_STATES + 1
    q, qd, _ = _states(model, n, 32)
    m, nqd, g = c.terms(q, qd)  # the dispatch (parallel when numba has more than one thread)
    one = [c.terms(q[k:k + 1], qd[k:k + 1]) for k in (0, n // 2, n - 1)]
    for k, (mk, nk, gk) in zip((0, n // 2, n - 1), one):
        np.testing.assert_array_equal(m[k], mk[0])
        np.testing.assert_array_equal(nqd[k], nk[0])
        np.testing.assert_array_equal(g[k], gk[0])


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


def test_energy_is_conserved_on_a_zoo_tree():
    """A passive swing of a tree that uses the whole function zoo (external nodes included): kinetic plus potential
    energy, the potential from the frame transforms (not from G), stays constant."""
    from scipy.integrate import solve_ivp
    from osim_emb.core import kinematics as kin
    model = zoo_tree_model(0, n_extra=0)
    rng = np.random.default_rng(5)
    y0 = np.concatenate([rng.uniform(-0.5, 0.5, model.n_q), rng.normal(size=model.n_q)])

    def energy(y):
        q, qd = y[:model.n_q], y[model.n_q:]
        t = kin.body_transforms(model, kin.forward_kinematics(model, q, order=0))[0]
        v = -sum(b.mass * model.gravity @ (t[k] @ np.append(b.com, 1.0))[:3] for k, b in enumerate(model.bodies))
        return 0.5 * qd @ dyn.mass_matrix(model, q)[0] @ qd + v

    sol = solve_ivp(dyn.ode_rhs(model), (0, 0.3), y0, method="DOP853", rtol=1e-11, atol=1e-11)
    assert sol.success
    e = np.array([energy(y) for y in sol.y.T[:: max(1, sol.y.shape[1] // 10)]])
    assert np.max(np.abs(e - e[0])) < 1e-7 * max(1.0, abs(e[0]))


def test_kernels_as_plain_python():
    """NUMBA_DISABLE_JIT=1: the very same kernels run as Python and give the Kronecker forms' numbers."""
    script = r"""
import numpy as np
from osim_emb.core import dynamics_kronecker as dk
from osim_emb.core.compiled import compiled_model
from osim_emb.core.synthetic import random_tree_model
import osim_emb.core.compiled_kernels as K
assert not hasattr(K.rhs, "py_func")  # plain Python functions
model = random_tree_model(n_joints=5, n_q=3, seed=1)
rng = np.random.default_rng(0)
q, qd = rng.uniform(-1, 1, (3, 3)), rng.normal(size=(3, 3))
c = compiled_model(model)
m, nqd, g = c.terms(q, qd)
rel = lambda a, b: np.abs(a - b).max() / np.abs(b).max()
for k in range(3):
    assert rel(m[k], dk.mass_matrix_eq145(model, q[k])) < 1e-12
    assert rel(nqd[k], dk.velocity_forces_eq126(model, q[k], qd[k])) < 1e-12
    assert rel(g[k], dk.gravity_eq187(model, q[k])) < 1e-12
out = c.rhs(np.concatenate([q[0], qd[0]]))
acc = np.linalg.solve(m[0], g[0] - nqd[0])
assert rel(out[3:], acc) < 1e-10
print("ok")
"""
    env = dict(os.environ, NUMBA_DISABLE_JIT="1", PYTHONPATH=str(REPO))
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.strip().endswith("ok")
