"""Static optimization (muscle force sharing), batched over time frames.

At each frame, with moment arms R (n_q x m), generalized forces tau (n_q) the
muscles must produce, and rigid-tendon force coefficients A, P (m) so that the
muscle tensions are F = a A + P:

    minimize    sum_j w_j a_j^2  +  sum_k w_r x_k^2
    subject to  R (a * A + P) + diag(r) x = tau,
                a_min <= a <= a_max  (and optional bounds on x)

x are optional reserve (coordinate) actuators of optimal force r_k, as OpenSim's
StaticOptimization allows: their generalized force is x_k r_k and they enter
the cost like any actuator (OpenSim uses w = 1 for all).  This is a strictly
convex QP with equality constraints and box bounds.

Solver: the dual of the QP is an unconstrained, convex, piecewise-quadratic
function of the n_q multipliers lambda, with a(lambda) = clip(C^T lambda / w,
a_min, a_max) (C = R diag(A) with the reserve columns).  A semismooth Newton
method on lambda with a backtracking line search finds the exact active set
in a few iterations (finite termination, then a = the KKT solution to round-off);
all frames are solved together (batched n_q x n_q systems).  Frames that do not
converge fall back to SciPy's SLSQP; infeasible frames (no a in the bounds can
produce tau) are confirmed with a linear program and reported by
:class:`InfeasibleError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = [
    "InfeasibleError",
    "StaticOptimizationResult",
    "static_optimization",
    "muscle_force_coefficients",
    "solve_force_sharing_qp",
]


class InfeasibleError(ValueError):
    """No activations within their bounds produce the required generalized forces."""

    def __init__(self, message: str, frames: np.ndarray, min_residual: np.ndarray):
        super().__init__(message)
        self.frames = frames
        self.min_residual = min_residual


@dataclass(frozen=True)
class StaticOptimizationResult:
    """Solution for N frames.

    activations (N, m); forces (N, m) = a A + P; reserve_controls (N, n_q) and
    reserve_forces (N, n_q) (generalized forces, zero where a coordinate has no
    reserve); residual (N, n_q) = tau - R F - reserve_forces; cost (N,);
    multipliers (N, n_q) (Lagrange multipliers of the equality constraints);
    iterations (N,); method (N,) "dual-newton" or "slsqp"; actuator_controls (N, k) of the ``actuators``
    (CoordinateActuators, PointActuators, TorqueActuators of an actuator file).
    """

    activations: np.ndarray
    forces: np.ndarray
    reserve_controls: np.ndarray
    reserve_forces: np.ndarray
    residual: np.ndarray
    cost: np.ndarray
    multipliers: np.ndarray
    iterations: np.ndarray
    method: np.ndarray
    actuator_controls: np.ndarray | None = None


def muscle_force_coefficients(muscles: Sequence, lengths, velocities=None, fv_activation=1.0):
    """A, P (each (N, m)) of rigid-tendon muscles at musculotendon lengths (N, m) and
    lengthening speeds (N, m): tension F = a A + P.  ``fv_activation`` is the
    activation at which Thelen2003's activation-dependent force-velocity curve is
    evaluated (OpenSim's StaticOptimization uses 1)."""
    L = np.atleast_2d(np.asarray(lengths, dtype=float))
    V = np.zeros_like(L) if velocities is None else np.broadcast_to(np.asarray(velocities, dtype=float), L.shape)
    if L.shape[1] != len(muscles):
        raise ValueError(f"lengths have {L.shape[1]} columns for {len(muscles)} muscles")
    A = np.empty_like(L)
    P = np.empty_like(L)
    for j, mus in enumerate(muscles):
        r = mus.rigid_tendon(L[:, j], V[:, j], fv_activation)
        A[:, j] = r.active
        P[:, j] = r.passive
    return A, P


def _as_frames(a, n_frames, shape, name):
    a = np.asarray(a, dtype=float)
    try:
        return np.broadcast_to(a, (n_frames, *shape)).astype(float, copy=True)
    except ValueError:
        raise ValueError(f"{name} has shape {a.shape}; expected {shape} or ({n_frames}, {', '.join(map(str, shape))})")


def _dual(C, b, w, lo, hi, lam):
    s = np.einsum("nqj,nq->nj", C, lam)
    x = np.clip(s / w, lo, hi)
    phi = np.einsum("nj,nj->n", s, x) - 0.5 * np.einsum("nj,nj,nj->n", w, x, x) - np.einsum("nq,nq->n", lam, b)
    g = np.einsum("nqj,nj->nq", C, x) - b
    return x, s, phi, g


def solve_force_sharing_qp(C, b, w, lo, hi, *, tol=1e-12, max_iter=100):
    """Batched dual semismooth Newton for  min 1/2 sum w x^2  s.t.  C x = b, lo <= x <= hi.

    C (N, n_q, n), b (N, n_q), w, lo, hi (N, n).  Returns x (N, n), lambda (N, n_q),
    iterations (N,), converged (N,) flags.  Convergence: ||C x - b||_inf <= tol * scale.
    """
    N, nq, n = C.shape
    scale = np.maximum(np.maximum(np.abs(b).max(axis=1), np.abs(C).max(axis=(1, 2))), np.finfo(float).tiny)
    H_full = np.einsum("nqj,nj,npj->nqp", C, 1.0 / w, C)
    reg = 1e-13 * np.maximum(np.trace(H_full, axis1=1, axis2=2) / nq, np.finfo(float).tiny)
    eye = np.eye(nq)
    # start from the solution without bounds (all free)
    try:
        lam = np.linalg.solve(H_full + reg[:, None, None] * eye, b[..., None])[..., 0]
    except np.linalg.LinAlgError:
        lam = np.zeros((N, nq))
    x, s, phi, g = _dual(C, b, w, lo, hi, lam)
    iters = np.zeros(N, dtype=int)
    conv = np.abs(g).max(axis=1) <= tol * scale
    for it in range(max_iter):
        act = ~conv
        if not act.any():
            break
        idx = np.nonzero(act)[0]
        Ca, wa, loa, hia, ba = C[idx], w[idx], lo[idx], hi[idx], b[idx]
        free = (s[idx] / wa > loa) & (s[idx] / wa < hia)
        H = np.einsum("nqj,nj,npj->nqp", Ca, free / wa, Ca) + reg[idx, None, None] * eye
        ga = g[idx]
        d = -np.linalg.solve(H, ga[..., None])[..., 0]
        slope = np.einsum("nq,nq->n", ga, d)
        t = np.ones(idx.size)
        lam_a = lam[idx]
        phi_a = phi[idx]
        accepted = np.zeros(idx.size, dtype=bool)
        new = [lam_a.copy(), x[idx], s[idx], phi_a.copy(), ga.copy()]
        for _ in range(60):
            trial = lam_a + t[:, None] * d
            xt, st, pt, gt = _dual(Ca, ba, wa, loa, hia, trial)
            ok = (pt <= phi_a + 1e-4 * t * slope + 1e-14 * np.abs(phi_a)) & ~accepted
            for arr, val in zip(new, (trial, xt, st, pt, gt)):
                arr[ok] = val[ok]
            accepted |= ok
            if accepted.all():
                break
            t = np.where(accepted, t, 0.5 * t)
        # frames whose line search failed stay where they are (and fall back to SLSQP)
        lam[idx], x[idx], s[idx], phi[idx], g[idx] = new
        iters[idx] += 1
        conv = np.abs(g).max(axis=1) <= tol * scale
    return x, lam, iters, conv


def _slsqp_frame(C, b, w, lo, hi, x0, tol):
    from scipy.optimize import minimize

    bounds = [(None if not np.isfinite(l) else l, None if not np.isfinite(h) else h) for l, h in zip(lo, hi)]
    res = minimize(
        lambda x: 0.5 * np.dot(w * x, x),
        x0,
        jac=lambda x: w * x,
        method="SLSQP",
        bounds=bounds,
        constraints=[{"type": "eq", "fun": lambda x: C @ x - b, "jac": lambda x: C}],
        options={"ftol": 1e-15, "maxiter": 500},
    )
    return res.x, res.nit


def _min_residual_lp(C, b, lo, hi):
    """min ||C x - b||_1 over lo <= x <= hi (linear program); returns the residual b - C x."""
    from scipy.optimize import linprog

    nq, n = C.shape
    # variables: x (n), s+ (nq), s- (nq):  C x + s+ - s- = b
    c = np.concatenate([np.zeros(n), np.ones(2 * nq)])
    A_eq = np.hstack([C, np.eye(nq), -np.eye(nq)])
    bounds = [(None if not np.isfinite(l) else l, None if not np.isfinite(h) else h) for l, h in zip(lo, hi)]
    bounds += [(0, None)] * (2 * nq)
    res = linprog(c, A_eq=A_eq, b_eq=b, bounds=bounds, method="highs")
    if not res.success:  # pragma: no cover
        return np.full(nq, np.nan)
    x = res.x[:n]
    return b - C @ x


def static_optimization(
    moment_arms,
    generalized_forces,
    active,
    passive=None,
    *,
    lower=0.0,
    upper=1.0,
    weights=None,
    reserves=None,
    reserve_weight=1.0,
    reserve_bounds=(-np.inf, np.inf),
    actuators=None,
    method="dual-newton",
    tol=1e-12,
    max_iter=100,
    coordinate_names=None,
) -> StaticOptimizationResult:
    """Muscle activations minimizing sum w a^2 with R (a A + P) [+ reserves] = tau, per frame.

    The seed's force sharing (section 4-4 C), as OpenSim's StaticOptimization with its default cost
    (the module's docstring has the dual semismooth-Newton solver).

    Parameters
    ----------
    moment_arms : array_like
        R, (n_q, m) or (N, n_q, m): metres about rotational coordinates (N m per newton of tension),
        dimensionless along translational ones; e.g. from :func:`osim_emb.lengths_and_moment_arms`.
    generalized_forces : array_like
        tau, (n_q,) or (N, n_q): N m about rotational coordinates, N along translational ones; e.g. from
        :func:`osim_emb.inverse_dynamics`.
    active, passive : array_like
        A, P, (m,) or (N, m), newtons: tension F = a A + P (:func:`muscle_force_coefficients`; with a rigid
        tendon at optimal length, A is the maximum isometric force).  ``passive`` None means 0 (OpenSim's
        StaticOptimization ignores passive fiber force).
    lower, upper : float or array_like
        Activation bounds, scalars or (m,) or (N, m) (OpenSim: the muscles' min_control, max_control).
    weights : array_like, optional
        Cost weight of each muscle (default 1).
    reserves : float or array_like, optional
        Optimal force of a reserve actuator on each coordinate (N m or N per unit control), scalar or (n_q,)
        (0 or nan: no reserve there); ``reserve_weight``, ``reserve_bounds``: their cost weight and control
        bounds.
    actuators : tuple, optional
        Other actuators ``(B, lower, upper)``: B (n_q, k) or (N, n_q, k) their generalized forces per unit control
        (e.g. :func:`osim_emb.core.dynamics.actuator_generalized_forces`), ``lower``, ``upper`` (k,) their control
        bounds; cost weight 1, as OpenSim's StaticOptimization weighs every actuator's control.
    method : {"dual-newton", "slsqp"}
        Batched semismooth Newton on the dual (default) or SciPy's SLSQP frame by frame.
    tol, max_iter : float, int
        Tolerance and iteration limit of the solver.
    coordinate_names : sequence of str, optional
        Names used in the error message of an infeasible frame.

    Returns
    -------
    StaticOptimizationResult
        ``activations`` (N, m), ``forces`` (N, m) in newtons, ``reserve_controls`` and ``reserve_forces``
        (N, n_q), ``actuator_controls`` (N, k), ``residual`` (N, n_q) = tau - R F - reserve and actuator forces
        (N m, N), ``cost`` (N,),
        ``multipliers``, ``iterations``, ``method``.

    Raises
    ------
    InfeasibleError
        Some frames admit no activations within the bounds; the message names the frames and the
        generalized force left unmet.

    Examples
    --------
    Two muscles about one joint, 1 N m to produce: the activations are proportional to R A
    (minimum sum of squares on the line 20 a1 + 5 a2 = 1):

    >>> import osim_emb as oe
    >>> res = oe.static_optimization([[0.02, 0.01]], [1.0], active=[1000.0, 500.0])
    >>> res.activations.round(5)
    array([[0.04706, 0.01176]])
    >>> float(abs(res.residual).max()) < 1e-12
    True
    """
    tau = np.asarray(generalized_forces, dtype=float)
    if tau.ndim == 1:
        tau = tau[None, :]
    N, nq = tau.shape
    R = np.asarray(moment_arms, dtype=float)
    m = R.shape[-1]
    R = _as_frames(R, N, (nq, m), "moment_arms")
    A = _as_frames(active, N, (m,), "active")
    P = np.zeros((N, m)) if passive is None else _as_frames(passive, N, (m,), "passive")
    lo_m = _as_frames(lower, N, (m,), "lower")
    hi_m = _as_frames(upper, N, (m,), "upper")
    if np.any(lo_m > hi_m):
        raise ValueError("lower bounds exceed upper bounds")
    w_m = _as_frames(1.0 if weights is None else weights, N, (m,), "weights")
    if np.any(w_m <= 0):
        raise ValueError("weights must be positive")
    for what, values in (("generalized_forces", tau), ("moment_arms", R), ("active", A), ("passive", P)):
        if not np.all(np.isfinite(values)):
            frame = int(np.argwhere(~np.isfinite(values))[0][0])
            raise ValueError(f"{what} is not finite at frame {frame}: static optimization needs finite inputs")

    # reserve actuators
    r = np.zeros(nq) if reserves is None else np.broadcast_to(np.asarray(reserves, dtype=float), (nq,)).copy()
    r = np.where(np.isfinite(r), r, 0.0)
    has_r = r != 0.0
    kr = int(has_r.sum())
    Cr = np.zeros((nq, kr))
    Cr[np.nonzero(has_r)[0], np.arange(kr)] = r[has_r]
    if actuators is None:
        B, lo_a, hi_a = np.zeros((N, nq, 0)), np.zeros(0), np.zeros(0)
    else:
        B, lo_a, hi_a = actuators
        lo_a, hi_a = np.asarray(lo_a, dtype=float), np.asarray(hi_a, dtype=float)
        B = _as_frames(np.asarray(B, dtype=float), N, (nq, lo_a.size), "actuators")
    ka = B.shape[2]
    C = np.concatenate([R * A[:, None, :], np.broadcast_to(Cr, (N, nq, kr)), B], axis=2)
    b = tau - np.einsum("nqj,nj->nq", R, P)
    w = np.concatenate([w_m, np.full((N, kr), float(reserve_weight)), np.ones((N, ka))], axis=1)
    if np.any(w <= 0):
        raise ValueError("reserve_weight must be positive")
    lo = np.concatenate([lo_m, np.full((N, kr), float(reserve_bounds[0])), np.broadcast_to(lo_a, (N, ka))], axis=1)
    hi = np.concatenate([hi_m, np.full((N, kr), float(reserve_bounds[1])), np.broadcast_to(hi_a, (N, ka))], axis=1)

    meth = np.empty(N, dtype=object)
    if method == "dual-newton":
        x, lam, iters, conv = solve_force_sharing_qp(C, b, w, lo, hi, tol=tol, max_iter=max_iter)
        meth[:] = "dual-newton"
    elif method == "slsqp":
        x = np.clip(np.zeros((N, C.shape[2])), lo, hi)
        lam = np.full((N, nq), np.nan)
        iters = np.zeros(N, dtype=int)
        conv = np.zeros(N, dtype=bool)
    else:
        raise ValueError(f"unknown method {method!r}; use 'dual-newton' or 'slsqp'")

    scale = np.maximum(np.abs(b).max(axis=1), 1.0)
    bad = np.nonzero(~conv)[0]
    infeasible = []
    infeasible_res = []
    for i in bad:
        res_lp = _min_residual_lp(C[i], b[i], lo[i], hi[i])
        if np.abs(res_lp).max() > max(1e-8 * scale[i], 1e-9):
            infeasible.append(i)
            infeasible_res.append(res_lp)
            continue
        x0 = np.clip(x[i], lo[i], hi[i]) if np.all(np.isfinite(x[i])) else np.clip(0.0, lo[i], hi[i])
        x[i], iters[i] = _slsqp_frame(C[i], b[i], w[i], lo[i], hi[i], x0, tol)
        meth[i] = "slsqp"
    if infeasible:
        frames = np.array(infeasible)
        resid = np.array(infeasible_res)
        names = list(coordinate_names) if coordinate_names is not None else [f"q{k}" for k in range(nq)]
        worst = frames[np.argmax(np.abs(resid).max(axis=1))]
        wr = resid[np.argmax(np.abs(resid).max(axis=1))]
        detail = ", ".join(f"{names[k]}: {wr[k]:.4g}" for k in range(nq) if abs(wr[k]) > 1e-9)
        raise InfeasibleError(
            f"static optimization is infeasible at {frames.size} of {N} frames (frames "
            f"{', '.join(map(str, frames[:10].tolist()))}{', ...' if frames.size > 10 else ''}): the muscles within "
            f"their activation bounds cannot produce the generalized forces. The largest unmet generalized force is "
            f"at frame {worst}: {detail}. "
            "Add reserve actuators (reserves=...) or check the model's strength and moment arms.",
            frames,
            resid,
        )

    a = x[:, :m]
    xr = x[:, m:m + kr]
    xa = x[:, m + kr:]
    F = a * A + P
    reserve_controls = np.zeros((N, nq))
    reserve_controls[:, has_r] = xr
    reserve_forces = reserve_controls * r
    residual = tau - np.einsum("nqj,nj->nq", R, F) - reserve_forces - np.einsum("nqj,nj->nq", B, xa)
    cost = np.einsum("nj,nj,nj->n", w, x, x)
    return StaticOptimizationResult(a, F, reserve_controls, reserve_forces, residual, cost, lam, iters, meth, xa)
