"""Static optimization (muscle force sharing): exactness, independent solvers, OpenSim's tool."""

from __future__ import annotations

import numpy as np
import pytest
from lxml import etree

from osim_emb.io.muscle_xml import hill_muscle_from_xml
from osim_emb.simulation.static_optimization import InfeasibleError, muscle_force_coefficients
from osim_emb.simulation.static_optimization import static_optimization
from opensim_builders import opensim_static_optimization, opensim_static_optimization_inputs


def _problem(rng, N=20, nq=3, m=8, scale=1.0):
    R = rng.normal(0.0, 0.03, (N, nq, m))
    A = rng.uniform(200.0, 1500.0, (N, m))
    P = rng.uniform(0.0, 50.0, (N, m))
    a_true = rng.uniform(0.05, 0.6, (N, m))
    tau = np.einsum("nqj,nj->nq", R, scale * a_true * A + P)
    return R, A, P, tau


def _kkt_check(R, A, P, tau, res, lo, hi, w=None):
    """Exact optimality: stationarity w a = (R A)^T lambda on free variables, sign conditions on bounds."""
    N, nq, m = R.shape
    w = np.ones((N, m)) if w is None else w
    C = R * A[:, None, :]
    a = res.activations
    np.testing.assert_allclose(np.einsum("nqj,nj->nq", R, a * A + P), tau, atol=1e-9 * np.abs(tau).max())
    assert np.all(a >= lo - 1e-15) and np.all(a <= hi + 1e-15)
    g = w * a - np.einsum("nqj,nq->nj", C, res.multipliers)  # gradient of the Lagrangian
    free = (a > lo + 1e-12) & (a < hi - 1e-12)
    assert np.abs(g[free]).max(initial=0.0) < 1e-9
    assert np.all(g[np.isclose(a, lo, atol=1e-12)] >= -1e-9)  # at the lower bound the cost would rise
    assert np.all(g[np.isclose(a, hi, atol=1e-12)] <= 1e-9)


def test_unbounded_solution_is_the_analytic_minimum_norm_solution():
    rng = np.random.default_rng(1)
    R, A, P, tau = _problem(rng, scale=0.2)
    res = static_optimization(R, tau, A, P, lower=-np.inf, upper=np.inf)
    C = R * A[:, None, :]
    b = tau - np.einsum("nqj,nj->nq", R, P)
    a_exact = np.einsum("nqj,nq->nj", C, np.linalg.solve(C @ C.transpose(0, 2, 1), b[..., None])[..., 0])
    np.testing.assert_allclose(res.activations, a_exact, rtol=1e-10, atol=1e-13)
    assert np.abs(res.residual).max() < 1e-10
    # weighted: a = W^-1 C^T (C W^-1 C^T)^-1 b
    w = rng.uniform(0.5, 3.0, A.shape)
    resw = static_optimization(R, tau, A, P, lower=-np.inf, upper=np.inf, weights=w)
    Cw = C / w[:, None, :]
    a_w = np.einsum("nqj,nq->nj", Cw, np.linalg.solve(Cw @ C.transpose(0, 2, 1), b[..., None])[..., 0])
    np.testing.assert_allclose(resw.activations, a_w, rtol=1e-10, atol=1e-13)


def test_bounded_solution_matches_trust_constr_and_satisfies_kkt():
    from scipy.optimize import Bounds, LinearConstraint, minimize

    rng = np.random.default_rng(2)
    R, A, P, tau = _problem(rng, N=12, scale=1.4)  # demanding: several activations at their bounds
    lo, hi = 0.01, 1.0
    res = static_optimization(R, tau, A, P, lower=lo, upper=hi)
    _kkt_check(R, A, P, tau, res, lo, hi)
    n_at_bounds = 0
    for i in range(R.shape[0]):
        C = R[i] * A[i]
        b = tau[i] - R[i] @ P[i]
        ref = minimize(lambda x: x @ x, np.full(C.shape[1], 0.5), jac=lambda x: 2 * x,
                       hess=lambda x: 2 * np.eye(x.size), method="trust-constr",
                       constraints=[LinearConstraint(C, b, b)], bounds=Bounds(lo, hi),
                       options={"gtol": 1e-14, "xtol": 1e-16, "barrier_tol": 1e-16, "maxiter": 50000,
                                "initial_barrier_parameter": 1e-3})
        np.testing.assert_allclose(res.activations[i], ref.x, atol=1e-8)
        assert res.cost[i] <= ref.fun + 1e-9
        n_at_bounds += int(np.sum(np.isclose(res.activations[i], hi) | np.isclose(res.activations[i], lo)))
    assert n_at_bounds > 5
    # SciPy's SLSQP through the same interface gives the same solution
    res_s = static_optimization(R, tau, A, P, lower=lo, upper=hi, method="slsqp")
    np.testing.assert_allclose(res_s.activations, res.activations, atol=1e-7)
    # one frame at a time = all frames at once
    one = static_optimization(R[3], tau[3], A[3], P[3], lower=lo, upper=hi)
    np.testing.assert_allclose(one.activations[0], res.activations[3], rtol=1e-12, atol=1e-14)


def test_infeasible_without_reserves_and_solved_with_them():
    rng = np.random.default_rng(3)
    R, A, P, tau = _problem(rng, N=6, nq=2, m=4)
    tau = tau.copy()
    tau[2] *= 50.0  # far beyond the muscles' strength
    with pytest.raises(InfeasibleError, match=r"infeasible at 1 of 6 frames \(frames 2\).*largest unmet "
                                              r"generalized force is at frame 2: .*elbow") as exc:
        static_optimization(R, tau, A, P, coordinate_names=["shoulder", "elbow"])
    assert exc.value.frames.tolist() == [2]
    # reserves (optimal force 10 N m on both coordinates), weighted like OpenSim (weight 1)
    res = static_optimization(R, tau, A, P, reserves=[10.0, 10.0])
    assert np.abs(res.residual).max() < 1e-8 * np.abs(tau).max()
    assert np.abs(res.reserve_forces[2]).max() > 1.0  # frame 2 needs them
    # a heavier reserve weight makes the muscles work harder and the reserves less
    res_heavy = static_optimization(R, tau, A, P, reserves=10.0, reserve_weight=100.0)
    assert np.abs(res_heavy.reserve_forces[0]).sum() < np.abs(res.reserve_forces[0]).sum()
    assert res_heavy.activations[0].sum() > res.activations[0].sum()
    # the KKT system with the reserve columns
    N, nq, m = R.shape
    C = np.concatenate([R * A[:, None, :], np.broadcast_to(10.0 * np.eye(nq), (N, nq, nq))], axis=2)
    x = np.concatenate([res.activations, res.reserve_controls], axis=1)
    g = x - np.einsum("nqj,nq->nj", C, res.multipliers)
    free = np.concatenate([(res.activations > 1e-12) & (res.activations < 1 - 1e-12), np.ones((N, nq), bool)], 1)
    assert np.abs(g[free]).max() < 1e-9


def test_linear_in_activation_model_is_consistent_with_muscle_forces():
    from osim_emb.muscles import Thelen2003Muscle, Millard2012EquilibriumMuscle

    ms = [Thelen2003Muscle("t", max_isometric_force=800, optimal_fiber_length=0.1, tendon_slack_length=0.2,
                           pennation_angle_at_optimal=0.2),
          Millard2012EquilibriumMuscle("m", max_isometric_force=600, optimal_fiber_length=0.12,
                                       tendon_slack_length=0.15, fiber_damping=0.0)]
    L = np.array([[0.30, 0.27], [0.31, 0.26]])
    V = np.array([[0.1, -0.2], [-0.3, 0.05]])
    A, P = muscle_force_coefficients(ms, L, V)
    for j, mus in enumerate(ms):
        np.testing.assert_allclose(mus.tendon_force(1.0, L[:, j], V[:, j]), A[:, j] + P[:, j], rtol=1e-14)


# =============================================================================
# OpenSim's StaticOptimization on arm26
# =============================================================================
# q(t) = c0 + c1 t + c2 t^2 + c3 t^3: the speeds are quadratic, so the quintic GCV spline that
# OpenSim's StaticOptimization differentiates for the target accelerations reproduces q'' exactly.
_COEF = {"r_shoulder_elev": (0.2, 0.5, 1.0, -1.2), "r_elbow_flex": (0.3, 2.0, 1.5, -3.0)}


@pytest.mark.opensim
@pytest.mark.models
def test_static_optimization_matches_opensim_arm26(osim, models_dir, tmp_path):
    """arm26 (6 Thelen2003 muscles, 2 coordinates), 26 frames of a 0.5 s motion.

    OpenSim's StaticOptimization (IPOPT) models a muscle's tension as a x f_opt,
    f_opt = calcInextensibleTendonActiveFiberForce(s, 1) (rigid tendon, Thelen's
    force-velocity at activation 1, no passive force), with bounds
    [min_control, max_control] = [0.01, 1].  Ours: the same problem built from our
    Thelen2003 model (A at fv activation 1, passive=None) and OpenSim's moment arms,
    lengths, speeds and muscle-free inverse dynamics, solved by the dual Newton method.
    """
    path = models_dir / "arm26.osim"
    times = np.linspace(0.0, 0.5, 26)
    names, act_tight, frc_tight = opensim_static_optimization(osim, path, tmp_path / "tight", times, 1e-8, _COEF)
    names, act_dflt, _ = opensim_static_optimization(osim, path, tmp_path / "default", times, 1e-4, _COEF)
    mnames, R, L, V, tau, fopt = opensim_static_optimization_inputs(osim, path, names, times, _COEF)
    tree = etree.parse(str(path))
    ours = [hill_muscle_from_xml(tree.find(f".//Thelen2003Muscle[@name='{n}']")) for n in mnames]
    A, _ = muscle_force_coefficients(ours, L, V)
    rel_fopt = np.max(np.abs(A - fopt) / np.abs(fopt))
    assert rel_fopt < 1e-9  # OpenSim's Newton-inverted force-velocity (see test_hill)
    lo = np.array([mus.min_control for mus in ours])
    hi = np.array([mus.max_control for mus in ours])
    assert np.all(lo == 0.01) and np.all(hi == 1.0)
    res = static_optimization(R, tau, A, None, lower=lo, upper=hi)
    a_os = act_tight[mnames].to_numpy()
    f_os = frc_tight[mnames].to_numpy()
    # OpenSim's solution satisfies the same constraints: our tau is the tau it used
    assert np.abs(np.einsum("nqj,nj->nq", R, f_os) - tau).max() < 1e-6 * np.abs(tau).max()
    da_tight = np.abs(res.activations - a_os).max()
    da_dflt = np.abs(res.activations - act_dflt[mnames].to_numpy()).max()
    df = np.abs(res.forces - f_os).max() / np.abs(f_os).max()
    print(f"[agreement] arm26 StaticOptimization: f_opt rel {rel_fopt:.2e}; activations max |diff| "
          f"{da_tight:.2e} (OpenSim convergence 1e-8), {da_dflt:.2e} (default 1e-4); forces {df:.2e} of max")
    assert da_tight < 1e-6
    assert da_dflt < 1e-3
    # same optimal cost (OpenSim's .sto files carry ~8 significant digits)
    cost_os = np.sum(a_os**2, axis=1)
    np.testing.assert_allclose(res.cost, cost_os, rtol=1e-6)
    assert (res.activations == 0.01).any() and (res.activations > 0.05).any()


def test_non_finite_inputs_are_refused_by_name():
    with pytest.raises(ValueError, match="generalized_forces is not finite at frame 0"):
        static_optimization(np.ones((2, 6)) * 0.02, np.array([np.nan, 1.0]), np.ones(6) * 100)
