"""The full-coordinate index-1 DAE (osim_emb.simulation.dae) against the minimal-coordinate ODE, OpenSim and finite differences.

References: the ODE of the same document (an independent formulation: couplers embedded in the joint
functions instead of enforced by multipliers), Simbody's constrained accelerations, central differences
of the constraint functions, and the property that Runge-Kutta methods preserve linear invariants.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy.integrate import solve_ivp

from osim_emb.core import dynamics as dyn
from osim_emb.core import functions as fn
from osim_emb.simulation.dae import FullCoordinateDAE, affine_form
from osim_emb.io import read_osim
from osim_emb.io.osim_document import CouplerSpec

LOCKED = ("pro_sup", "deviation", "flexion")


def mobl_locked_document(models_dir):
    """MoBL with the forearm and wrist locked (the passive-swing set-up of issue 6)."""
    doc = read_osim(models_dir / "mobl_arms_holzbaur.osim")
    for c in doc.coordinates:
        if c.name in LOCKED:
            c.locked = True
    return doc


def nonlinear_pendulum_document(models_dir):
    """double_pendulum.osim with q2 coupled to q1 by a nonlinear 9-knot SimmSpline: one degree of freedom."""
    x = np.linspace(-1.6, 1.6, 9)
    y = 0.6 * np.sin(2 * x) + 0.2 * x ** 2 - 0.3
    doc = read_osim(models_dir / "double_pendulum.osim")
    return dataclasses.replace(doc, couplers=[CouplerSpec("q2_con", "q2", ["q1"], fn.SimmSpline(x, y))])


def swing_initial(model):
    q0 = model.default_q.copy()
    q0[model.coordinate_index("elbow_flexion")] = 0.5
    q0[model.coordinate_index("shoulder_elv")] = 0.8
    return q0


def test_affine_forms_equal_the_functions():
    rng = np.random.default_rng(0)
    cases = [fn.Linear([0.3, -1.2], 0.4), fn.Constant(0.7, 2), fn.SimmSpline([0.0, 2.6], [0.0, -0.63]),
             fn.PiecewiseLinear([-1.0, 1.5], [0.2, 0.9]), fn.Multiplier(-2.0, fn.SimmSpline([-1.5, 3.1], [0.1, 0.5]))]
    for f in cases:
        a, c = affine_form(f)
        x = rng.uniform(-4.0, 4.0, (50, f.n_inputs))  # inside and outside the knots
        np.testing.assert_allclose(x @ a + c, f(x), rtol=1e-13, atol=1e-14)
    assert affine_form(fn.SimmSpline([0.0, 1.0, 2.0], [0.0, 1.0, 0.5])) is None
    assert affine_form(fn.Polynomial([0.0, 1.0, 0.3])) is None


def test_constraint_jacobian_and_curvature_against_finite_differences(models_dir):
    dae = FullCoordinateDAE.from_document(nonlinear_pendulum_document(models_dir))
    assert (dae.n, dae.m, len(dae._nonlinear)) == (2, 1, 1)
    rng = np.random.default_rng(1)
    h = 1e-6
    for _ in range(10):
        q, qd = rng.uniform(-1.4, 1.4, 2), rng.normal(size=2)
        g, jac, curv = dae.constraint_terms(q, qd)
        fd = np.array([(dae.constraint_terms(q + h * e)[0] - dae.constraint_terms(q - h * e)[0]) / (2 * h)
                       for e in np.eye(2)]).T
        np.testing.assert_allclose(jac, fd, atol=1e-8)
        # (d g_q/dt) q̇ = d/ds [g_q(q + s q̇) q̇] at s = 0
        fd_curv = (dae.constraint_terms(q + h * qd)[1] @ qd - dae.constraint_terms(q - h * qd)[1] @ qd) / (2 * h)
        np.testing.assert_allclose(curv, fd_curv, atol=1e-7)


def test_projection_onto_the_constraints(models_dir):
    dae = FullCoordinateDAE.from_document(nonlinear_pendulum_document(models_dir))
    q, qd = dae.project([0.4, 0.1], [1.0, -2.0])
    g, jac, _ = dae.constraint_terms(q)
    assert abs(g).max() < 1e-13 and abs(jac @ qd).max() < 1e-13


def test_dae_accelerations_equal_ode_and_opensim_on_mobl_locked(osim, models_dir, tmp_path):
    """At random consistent states: the DAE's accelerations reduced to the independent coordinates equal the
    ODE's, and all of them equal Simbody's constrained accelerations (forces off)."""
    from osim_emb.io.osim_writer import write_osim
    from osim_emb.opensim.bridge import OpenSimReference
    doc = mobl_locked_document(models_dir)
    path = tmp_path / "mobl_locked.osim"
    write_osim(doc, path)
    dae = FullCoordinateDAE.from_document(doc)
    red = dae.reduced
    assert red.coordinate_names == ["elv_angle", "shoulder_elv", "shoulder_rot", "elbow_flexion"]
    assert (dae.n, dae.m, len(dae._nonlinear)) == (17, 13, 0)  # all MoBL couplers are affine here
    ref = OpenSimReference(str(path), red, disable_forces=True)
    idx = ref.speed_indices()
    rng = np.random.default_rng(2)
    lo, hi = red.coordinate_ranges.T
    worst_ode = worst_os = 0.0
    for _ in range(20):
        q, qd = rng.uniform(lo, hi), rng.normal(size=red.n_q)
        y = dae.consistent_state(q, qd)
        qdd_full, _ = dae.accelerations(y[:dae.n], y[dae.n:])
        qdd_ode = dyn.forward_dynamics(red, q, qd)[0]
        _, qdd_red = dae.reduced_state(np.concatenate([y[:dae.n], qdd_full]))
        worst_ode = max(worst_ode, np.abs(qdd_red - qdd_ode).max() / np.abs(qdd_ode).max())
        ref.set_configuration(q, qd)
        udot = ref.accelerations()
        os_full = np.array([udot[idx[c]] for c in dae.coordinate_names])
        worst_os = max(worst_os, np.abs(qdd_full - os_full).max() / np.abs(os_full).max())
    print(f"[agreement] DAE vs ODE accelerations {worst_ode:.2e}, DAE vs Simbody {worst_os:.2e} (relative)")
    assert worst_ode < 1e-10
    assert worst_os < 1e-9


def test_dae_swing_equals_ode_and_linear_couplers_do_not_drift(models_dir):
    """The 1 s passive swing of the MoBL shoulder and elbow (wrist and forearm locked, forces off): the DAE in
    17 coordinates and the ODE in 4 agree within 1e-6 rad.  MoBL's couplers are affine, g = A q + b, and a
    Runge-Kutta method preserves linear invariants, so g stays at round-off with or without stabilization."""
    doc = mobl_locked_document(models_dir)
    dae = FullCoordinateDAE.from_document(doc)
    red = dae.reduced
    q0 = swing_initial(red)
    te = np.linspace(0.0, 1.0, 101)
    ode = solve_ivp(dyn.ode_rhs(red), (0, 1), np.concatenate([q0, np.zeros(4)]), method="DOP853", rtol=1e-11,
                    atol=1e-11, t_eval=te)
    y0 = dae.consistent_state(q0, np.zeros(4))
    worst = {}
    for alpha in (0.0, 10.0):
        tab = dae.with_stabilization(alpha, alpha).simulate(1.0, y0, rtol=1e-11, atol=1e-11, t_eval=te)
        diff = np.abs(tab[red.coordinate_names].to_numpy() - ode.y[:4].T).max()
        worst[alpha] = diff
        assert diff < 1e-6
        assert tab.constraint_error.max() < 1e-12
        assert tab.velocity_constraint_error.max() < 1e-11
    print(f"[agreement] MoBL swing DAE vs ODE: {worst[0.0]:.2e} rad (alpha=beta=0), {worst[10.0]:.2e} rad (10)")


def test_nonlinear_coupler_drift_and_baumgarte(models_dir):
    """A nonlinear coupler: the plain index-1 DAE drifts off g = 0, Baumgarte's stabilization holds it, and the
    stabilized DAE follows the one-coordinate ODE."""
    doc = nonlinear_pendulum_document(models_dir)
    plain = FullCoordinateDAE.from_document(doc, alpha=0.0, beta=0.0)
    stab = plain.with_stabilization(10.0, 10.0)
    red = plain.reduced
    assert red.coordinate_names == ["q1"]
    y0 = plain.consistent_state([0.3], [0.0])
    te = np.linspace(0.0, 5.0, 51)
    g_plain = plain.simulate(5.0, y0, method="RK45", rtol=1e-6, atol=1e-6, t_eval=te).constraint_error.to_numpy()
    g_stab = stab.simulate(5.0, y0, method="RK45", rtol=1e-6, atol=1e-6, t_eval=te).constraint_error.to_numpy()
    late = te >= 2.5
    print(f"[drift] plain: max|g| {g_plain[te <= 1].max():.1e} on [0, 1] s, {g_plain[late].max():.1e} on "
          f"[2.5, 5] s; Baumgarte 10/10: {g_stab[late].max():.1e} on [2.5, 5] s")
    assert g_plain[late].max() > 2 * g_plain[te <= 1].max()  # the drift grows
    assert g_stab[late].max() < 0.25 * g_plain[late].max()
    ode = solve_ivp(dyn.ode_rhs(red), (0, 5), [0.3, 0.0], method="DOP853", rtol=1e-12, atol=1e-12, t_eval=te)
    tight = stab.simulate(5.0, y0, rtol=1e-12, atol=1e-12, t_eval=te)
    assert np.abs(tight.q1.to_numpy() - ode.y[0]).max() < 1e-9
    assert tight.constraint_error.max() < 1e-11


def test_leg6dof9musc_dae_equals_ode(models_dir):
    doc = read_osim(models_dir / "leg6dof9musc.osim")
    dae = FullCoordinateDAE.from_document(doc)
    red = dae.reduced
    assert dae.n == red.n_q + 1 and dae.m == 1  # knee_angle_pat_r = knee_angle_r
    q0 = red.default_q.copy()
    q0[red.coordinate_index("hip_flexion_r")] = 0.6
    q0[red.coordinate_index("knee_angle_r")] = -0.8
    te = np.linspace(0.0, 0.3, 31)
    ode = solve_ivp(dyn.ode_rhs(red), (0, 0.3), np.concatenate([q0, np.zeros(red.n_q)]), method="DOP853",
                    rtol=1e-11, atol=1e-11, t_eval=te)
    tab = dae.simulate(0.3, dae.consistent_state(q0), rtol=1e-11, atol=1e-11, t_eval=te)
    assert np.abs(tab[red.coordinate_names].to_numpy() - ode.y[:red.n_q].T).max() < 1e-8


def test_dae_tracking_equals_ode_tracking_on_the_shoulder():
    """Eq 200 in full coordinates (torques on the three independent coordinates, multipliers for the rhythm)
    gives the torques of the minimal-coordinate Eq 200 along the same motion."""
    from osim_emb.io.builtin_models import builtin_model_path
    from osim_emb.simulation.motions import minimum_jerk
    doc = read_osim(builtin_model_path("shoulder3d"))
    dae = FullCoordinateDAE.from_document(doc)
    red = dae.reduced
    act = [dae.coordinate_names.index(c) for c in red.coordinate_names]
    gains = np.array([100.0, 100.0, 1000.0])

    def desired(t):
        q, dq, ddq = minimum_jerk(np.full(3, t), 0.0, 0.4, np.radians([90, 15, -30]), np.radians([90, 40, -30]))
        return q, dq, ddq

    rng = np.random.default_rng(3)
    for t in (0.05, 0.2, 0.33):
        q = desired(t)[0] + rng.normal(0, 0.01, 3)
        qd = desired(t)[1] + rng.normal(0, 0.1, 3)
        y = dae.consistent_state(q, qd)
        qdd_full, tau, _ = dae.tracking_solution(t, y[:dae.n], y[dae.n:], desired, gains, act)
        q_d, qd_d, qdd_d = desired(t)
        qdd = qdd_d - 2 * gains * (qd - qd_d) - gains ** 2 * (q - q_d)
        np.testing.assert_allclose(qdd_full[act], qdd, rtol=1e-12, atol=1e-10)
        np.testing.assert_allclose(tau, dyn.inverse_dynamics(red, q, qd, qdd)[0], rtol=1e-9, atol=1e-9)
