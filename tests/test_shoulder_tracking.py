"""3D shoulder tracking (seed section 4-4 C, Eqs 200-201) on the built-in shoulder3d model: the error law, the
torques against OpenSim, R F = τ, and the muscle forces against OpenSim's StaticOptimization (the 2 s study is
validation/shoulder_tracking/run_tracking.py; this test runs its first 0.4 s)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from osim_emb.core import dynamics as dyn
from osim_emb.io.builtin_models import builtin_model_path, load_builtin
from osim_emb.paths.geometry import lengths_and_moment_arms
from osim_emb.simulation.static_optimization import muscle_force_coefficients, static_optimization
from osim_emb.simulation.motions import computed_torque_tracking, muscle_force_sharing

COMMON = Path(__file__).resolve().parents[1] / "validation" / "shoulder_tracking" / "common.py"
T_END = 0.4
SAME_BODY = {"PECM1", "PECM2", "PECM3", "LAT1", "LAT2", "LAT3"}  # a MovingPathPoint next to a point on its body


@pytest.fixture(scope="module")
def C():
    spec = importlib.util.spec_from_file_location("shoulder_tracking_common", COMMON)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["shoulder_tracking_common"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def model():
    return load_builtin("shoulder3d")


@pytest.fixture(scope="module")
def tracked(C, model):
    return computed_torque_tracking(model, C.desired, T_END, C.GAINS, rtol=1e-10, atol=1e-10, n_output=41)


def test_desired_motion_and_rkf45(C):
    t = np.linspace(0.0, C.DURATION, 4001)
    q, dq, ddq = C.rise_and_return(t)
    assert np.degrees(q[0]) == pytest.approx(15.0) and np.degrees(q.max()) == pytest.approx(105.0)
    assert abs(dq[0]) + abs(dq[-1]) + abs(ddq[0]) + abs(ddq[-1]) == 0.0  # rest at both ends
    h = t[1] - t[0]
    np.testing.assert_allclose(np.gradient(q, h)[1:-1], dq[1:-1], atol=2e-5)  # derivatives are consistent
    np.testing.assert_allclose(np.gradient(dq, h)[1:-1], ddq[1:-1], atol=1e-4)
    # Fehlberg's pair is fourth order: halving a fixed step divides the error by about 16
    f = lambda _, y: np.array([y[1], -y[0]])  # noqa: E731
    errs = [abs(solve_ivp(f, (0, 1), [1.0, 0.0], method=C.RKF45, rtol=1e3, atol=1e3, first_step=h, max_step=h
                          ).y[0, -1] - np.cos(1.0)) for h in (0.1, 0.05, 0.025)]
    assert 13 < errs[0] / errs[1] < 19 and 13 < errs[1] / errs[2] < 19
    sol = solve_ivp(f, (0, 10), [1.0, 0.0], method=C.RKF45, rtol=1e-10, atol=1e-10, t_eval=[2.5, 10.0])
    np.testing.assert_allclose(sol.y[0], np.cos(sol.t), atol=1e-7)  # dense output


def test_tracking_from_the_start_is_exact_and_offsets_decay_critically(C, model, tracked):
    names = model.coordinate_names
    err = np.abs(tracked.states[names].to_numpy() - tracked.desired[names].to_numpy())
    # plane of elevation and axial rotation are constant: Q_d = 0 and q̈ = 0 exactly at every stage
    assert err[:, 0].max() == 0.0 and err[:, 2].max() == 0.0
    assert err[:, 1].max() < 1e-9  # elevation: the integrator's error only
    e0 = np.radians([2.0, 3.0, 1.0])
    off = computed_torque_tracking(model, C.desired, 0.2, C.GAINS, q0=C.desired(0.0)[0] + e0,
                                   qdot0=C.desired(0.0)[1], rtol=1e-10, atol=1e-10, n_output=81)
    t = off.states.time.to_numpy()[:, None]
    k = np.asarray(C.GAINS)
    law = e0 * (1 + k * t) * np.exp(-k * t)  # e'' + 2K e' + K² e = 0
    np.testing.assert_allclose(off.states[names].to_numpy() - off.desired[names].to_numpy(), law, atol=1e-9)


def test_torques_equal_opensim_reduced_inverse_dynamics(osim, C, model, tracked):
    from osim_emb.opensim.bridge import OpenSimReference
    names = model.coordinate_names
    times = tracked.states.time.to_numpy()
    q = tracked.states[names].to_numpy()
    qd = tracked.states[[c + "_u" for c in names]].to_numpy()
    q_d, qd_d, qdd_d = C.desired_batch(times)
    k = np.asarray(C.GAINS)
    qdd = qdd_d - 2 * k * (qd - qd_d) - k ** 2 * (q - q_d)  # the accelerations Eq 200 imposed
    tau = tracked.torques[[c + "_moment" for c in names]].to_numpy()
    ref = OpenSimReference(str(builtin_model_path("shoulder3d")), model, disable_forces=True)
    tau_os = np.array([(lambda r: r["mass"] @ qdd[i] + r["bias"])(ref.reduced_dynamics(q[i], qd[i]))
                       for i in range(len(times))])
    assert np.abs(tau - tau_os).max() < 1e-9 * np.abs(tau_os).max()


def test_static_optimization_equals_opensim(osim, C, model, tracked, tmp_path):
    """OpenSim's StaticOptimization on the same motion.  The package's forces differ from OpenSim's through
    documented ingredients, each checked here against OpenSim's API: (1) OpenSim skips a path segment whose
    two points are on one body, so for the six muscles with such a MovingPathPoint its generalized force per
    newton differs from R (the others agree to 1e-10 m); (2) its accelerations are spline derivatives;
    (3) its tension per unit activation uses its lengthening speed, which leaves out the rate of the wrapped
    arc (LAT1-3); (4) it ignores passive fibre force.  With OpenSim's R, accelerations and f_opt and no passive
    force, the package's solver gives OpenSim's forces to within its convergence criterion (1e-8 on the cost:
    activations within ~1e-4, forces within ~0.05 N, measured 6e-3 N over the 2 s study)."""
    names = model.coordinate_names
    muscles = [m.name for m in model.muscles]
    times = tracked.states.time.to_numpy()
    q = tracked.states[names].to_numpy()
    qd = tracked.states[[c + "_u" for c in names]].to_numpy()
    tau = tracked.torques[[c + "_moment" for c in names]].to_numpy()
    path = builtin_model_path("shoulder3d")
    forces, acts, res = muscle_force_sharing(model, times, q, qd, tau)
    L, R = lengths_and_moment_arms(model, q, opensim_compat=True)
    assert np.abs(np.einsum("nkm,nm->nk", R, forces[muscles].to_numpy()) - tau).max() < 1e-9  # R F = τ

    mo = osim.Model(str(path))
    mo.initSystem()
    states = tmp_path / "states.sto"
    C.write_states(states, mo, model, times, q, qd)
    act_os, frc_os = C.run_opensim_static_optimization(osim, path, states, tmp_path / "so", 0.0, T_END)
    assert np.allclose(frc_os.time.to_numpy(), times, atol=1e-9)
    f_os, a_os = frc_os[muscles].to_numpy(), act_os[muscles].to_numpy()
    ing = C.opensim_so_ingredients(path, model, times, q, qd, states)

    same = np.array([m in SAME_BODY for m in muscles])
    d_r = np.abs(ing["R"] - R).max(axis=(0, 1))
    assert d_r[~same].max() < 1e-10 and d_r[same].min() > 1e-3  # (1)
    assert np.abs(ing["length"] - L).max() < 1e-12
    v_pkg = -np.einsum("nkm,nk->nm", R, qd)
    a_pkg, _ = muscle_force_coefficients([m.parameters for m in model.muscles], L, v_pkg)
    dv = np.abs(ing["speed"] - v_pkg).max(axis=0)
    exact_speed = dv < 1e-9
    assert {m for m, ok in zip(muscles, exact_speed) if not ok} <= SAME_BODY | {"TMAJ", "TMIN", "INFSP"}
    rel = np.abs(ing["fopt"] - a_pkg).max(axis=0) / a_pkg.max(axis=0)
    assert rel[exact_speed].max() < 1e-8  # (3): same muscle model at the same length and speed
    tau_spline = dyn.inverse_dynamics(model, q, qd, ing["qdd_spline"])
    # OpenSim's solution satisfies its constraints with these ingredients
    assert np.abs(np.einsum("nkm,nm->nk", ing["R"], f_os) - tau_spline).max() < 1e-5
    lo = np.array([m.parameters.min_control for m in model.muscles])
    hi = np.array([m.parameters.max_control for m in model.muscles])
    matched = static_optimization(ing["R"], tau_spline, ing["fopt"], None, lower=lo, upper=hi)
    df, da = np.abs(matched.forces - f_os).max(), np.abs(matched.activations - a_os).max()
    pkg_df = np.abs(forces[muscles].to_numpy() - f_os).max()
    print(f"[agreement] shoulder SO vs OpenSim: matched ingredients max |dF| {df:.1e} N, |da| {da:.1e}; "
          f"package pipeline as is {pkg_df:.1f} N")
    assert df < 0.05 and da < 1e-3
