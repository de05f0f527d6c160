"""The compiled implicit integrator (method="BDF-jit", osim_emb.simulation.muscle_driven_bdf) and the structured
Jacobian it and SciPy's implicit methods use: the Jacobian against forward differences of the whole compiled
right-hand side, the eliminated Newton solve against a dense solve, the trajectory against SciPy's DOP853 at a
tight tolerance (OpenSim's Manager: tests/test_muscle_driven.py, the limit-force test)."""

from __future__ import annotations

import numpy as np
import pytest

from osim_emb.simulation.excitations import ExcitationSpec

pytest.importorskip("numba")

EXC = {"BIClong": ExcitationSpec.parse("step:0.0:0.05:0.02:0.8"), "TRIlong": ExcitationSpec.parse("0.3"),
       "BRA": ExcitationSpec.parse("sine:0.2:20:0:0.3")}


@pytest.fixture(scope="module")
def arm26(models_dir):
    """(model, system, compiled plan, a state mid-motion away from the activation dynamics' kink at a = u)."""
    from osim_emb import load_osim
    from osim_emb.simulation import muscle_driven_jit as jit
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem
    model = load_osim(str(models_dir / "arm26.osim"))
    system = MuscleDrivenSystem(model, EXC)
    plan, why = jit.compiled_plan(system)
    assert plan is not None, why
    y = np.asarray(system.initial_state(), dtype=float)
    nq, nm = system.n_q, system.n_m
    y[:nq] += 0.2
    y[nq:2 * nq] = (0.5, -0.7)
    y[2 * nq:2 * nq + nm] += np.linspace(0.011, 0.037, nm)
    return model, system, plan, y


def test_structured_jacobian_equals_forward_differences_of_the_whole_right_hand_side(arm26):
    """Only the q and q-dot columns are differences of the whole right-hand side; the muscle columns are built
    from each muscle's 2x2 block and M^-1 R dF.  Every column against forward differences of the compiled
    right-hand side (same steps): the structure is exact."""
    from osim_emb.simulation import muscle_driven_jit as jit
    _, system, plan, y = arm26
    t = 0.03
    jac = jit.jacobian(system, plan, t, y)
    f0 = jit.rhs(system, plan, t, y)
    fd = np.empty_like(jac)
    for j in range(y.size):
        yy = y.copy()
        yy[j] = y[j] + 1e-8 * max(1.0, abs(y[j]))
        fd[:, j] = (jit.rhs(system, plan, t, yy) - f0) / (yy[j] - y[j])
    col = np.abs(jac - fd).max(axis=0) / (np.abs(fd).max(axis=0) + 1.0)
    muscle_cols = slice(2 * system.n_q, None)
    print("structured Jacobian - forward differences, largest column error:", col.max())
    assert col.max() < 1e-5, col
    assert np.abs(jac[system.n_q:2 * system.n_q, muscle_cols]).max() > 1.0  # the tendon forces' columns are there
    assert np.all(jac[:system.n_q, :system.n_q] == 0) and np.all(jac[:system.n_q, system.n_q:2 * system.n_q]
                                                                == np.eye(system.n_q))


@pytest.mark.parametrize("c", [1e-5, 1e-3, 3e-2])
def test_eliminated_newton_solve_equals_a_dense_solve(arm26, c):
    """x = (I - c J)^-1 b by the muscle blocks' elimination and the n_q x n_q Schur complement (factor, solve)
    against numpy's dense solve with the assembled J."""
    from osim_emb.simulation import muscle_driven_jit as jit
    from osim_emb.simulation import muscle_driven_bdf as bdf
    _, system, plan, y = arm26
    nq, nm = system.n_q, system.n_m
    jac = jit.jacobian(system, plan, 0.03, y)
    parts = jit.jacobian_workspace(nq, nm)
    jit.jacobian_parts(0.03, y, jit.rhs(system, plan, 0.03, y), *plan, parts)
    fac = (np.empty((nm, 2, 2)), np.empty((nm, 2, nq)), np.empty((nq, nq)),
           (np.empty((nq, nq)), np.empty(nq), np.empty(nq), np.empty((nm, 2))))
    assert bdf.factor(c, parts, fac)
    b = np.random.default_rng(1).normal(size=y.size)
    x = np.empty_like(b)
    assert bdf.solve(c, parts, fac, b, x)
    dense = np.linalg.solve(np.eye(y.size) - c * jac, b)
    print(f"c = {c:g}: eliminated - dense solve {np.abs(x - dense).max():.1e} (|x| {np.abs(dense).max():.1e})")
    np.testing.assert_allclose(x, dense, rtol=1e-10, atol=1e-12 * np.abs(dense).max())


#: the benchmark's arm26 motion (benchmarks/bench_muscle_driven.py): no wrapped path jumps on its way (the motion
#: of EXC crosses one at 0.1 s, where BDF steps over the transient -- SciPy's BDF too -- and ends 0.03 rad away)
SMOOTH = {"BIClong": ExcitationSpec.parse("step:0.1:0.3:0.05:0.5"), "BICshort": ExcitationSpec.parse("0.2"),
          "BRA": ExcitationSpec.parse("0.3"), "TRIlong": ExcitationSpec.parse("sine:0.1:10:0:0.2"),
          "TRIlat": ExcitationSpec.parse("0.2"), "TRImed": ExcitationSpec.parse("0.2")}


def test_bdf_jit_converges_to_the_dop853_reference(arm26):
    """0.3 s of arm26 (a biceps step, a triceps sine): BDF-jit's error against SciPy's DOP853 at rtol 1e-11 falls
    with rtol and is below 1e-7 rad / 1e-9 m at rtol 1e-8; its counts are in attrs."""
    from osim_emb.simulation.muscle_driven import simulate_muscles
    model = arm26[0]
    times = np.linspace(0.0, 0.3, 7)
    ref = simulate_muscles(model, 0.3, SMOOTH, t_eval=times, method="DOP853", rtol=1e-11, atol=1e-13)
    lf = [c for c in ref.columns if c.endswith("_fiber_length")]
    errors = {}
    for rtol in (1e-5, 1e-8):
        out = simulate_muscles(model, 0.3, SMOOTH, t_eval=times, method="BDF-jit", rtol=rtol, atol=rtol * 1e-2)
        assert out.attrs["method"] == "BDF-jit" and out.attrs["njev"] >= 1 and out.attrs["steps"] > 10
        errors[rtol] = (np.abs(out[model.coordinate_names].to_numpy() - ref[model.coordinate_names].to_numpy()).max(),
                        np.abs(out[lf].to_numpy() - ref[lf].to_numpy()).max())
        print(f"BDF-jit rtol {rtol:.0e}: {errors[rtol][0]:.1e} rad, {errors[rtol][1]:.1e} m, {out.attrs}")
    assert errors[1e-8][0] < 1e-7 and errors[1e-8][1] < 1e-9
    assert errors[1e-8][0] < errors[1e-5][0] / 30


def test_bdf_jit_refuses_a_model_without_a_compiled_plan(arm26):
    from osim_emb.simulation.muscle_driven import simulate_muscles
    with pytest.raises(ValueError, match="BDF-jit.*Python function"):
        simulate_muscles(arm26[0], 0.01, {"BIClong": lambda t: 0.4}, method="BDF-jit")


@pytest.mark.parametrize("kwargs, message", [
    ({"rtol": 0.0}, "positive, finite rtol and atol"),
    ({"atol": -1e-9}, "positive, finite rtol and atol"),
    ({"t_eval": [0.0, 0.02, 0.01]}, "increase strictly"),
])
def test_compiled_methods_refuse_bad_tolerances_and_output_times(arm26, kwargs, message):
    from osim_emb.simulation.muscle_driven import simulate_muscles
    for method in ("BDF-jit", "RK45-jit"):
        with pytest.raises(ValueError, match=message):
            simulate_muscles(arm26[0], 0.02, EXC, method=method, **kwargs)


def test_mass_matrix_into_equals_the_dynamics_mass_matrix(arm26, models_dir):
    """compiled_kernels.mass_matrix_into (the M of the structured Jacobian) against core.dynamics.mass_matrix, on
    arm26 and on MoBL (13 couplers) at a non-default pose."""
    from osim_emb import load_osim
    from osim_emb.core import compiled_kernels as K
    from osim_emb.core import dynamics as dyn
    from osim_emb.core.compiled import compiled_model
    for model in (arm26[0], load_osim(str(models_dir / "mobl_arms_holzbaur.osim"))):
        lo, hi = model.coordinate_ranges.T
        q = lo + 0.37 * (hi - lo)
        cm = compiled_model(model)
        out = np.empty((model.n_q, model.n_q))
        K.mass_matrix_into(cm.ints, cm.flts, cm._no_ext, np.r_[q, np.zeros(model.n_q)],
                           K.dynamics_workspace(cm.ints), out, cm.chains)
        ref = dyn.mass_matrix(model, q)
        np.testing.assert_allclose(out, ref.reshape(out.shape), rtol=1e-12, atol=1e-14 * np.abs(ref).max())


@pytest.mark.parametrize("order, ratio", [(1, 0.5), (3, 0.2), (5, 1.7)])
def test_rescaled_differences_represent_the_same_polynomial(order, ratio):
    """_rescale: backward differences of a degree-`order` polynomial at spacing h, re-expressed for r h, equal the
    backward differences computed directly from samples at spacing r h (the polynomial is interpolated exactly)."""
    from osim_emb.simulation.muscle_driven_bdf import _rescale
    rng = np.random.default_rng(order)
    coef = rng.normal(size=(order + 1, 3))  # a vector polynomial p(s) in the step count s = (t - t_n) / h

    def differences(spacing):
        s = -spacing * np.arange(order + 1)  # t_n, t_n - h', ...
        d = np.zeros((8, 3))
        vals = np.array([np.polynomial.polynomial.polyval(x, coef) for x in s])  # (order + 1, 3)
        for j in range(order + 1):  # D[j] = j-th backward difference at t_n
            d[j] = vals[0]
            vals = vals[:-1] - vals[1:]
        return d

    d = differences(1.0)
    _rescale(d, order, ratio)
    np.testing.assert_allclose(d[:order + 1], differences(ratio)[:order + 1], rtol=1e-12, atol=1e-12)
