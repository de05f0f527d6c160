"""The muscle-driven ODE integrated entirely in compiled code (numba): no Python between stages.

The right-hand side is the one of :class:`osim_emb.simulation.muscle_driven.MuscleDrivenSystem` -- the same compiled
kernels (joint-variable program and dynamics of :mod:`osim_emb.core.compiled`, the path kernel of
``wrapping._kernels_muscles``, the muscle loops of :mod:`osim_emb.muscles.kernels`) called from one compiled
function -- and the integrator is the Dormand-Prince 5(4) pair with SciPy's ``RK45`` step-size control
(same error norm, safety factor and limits, same initial-step heuristic).  Muscles: Thelen2003,
Millard2012Equilibrium and Schutte1993 in any mix; GeometryPath and FunctionBasedPath units (a length function
only: one joint-variable program for all of them) in any mix; PathActuators driven by controls, PathSprings and
Ligaments (their tension laws after the muscles, :func:`_path_forces`).  Steps are shortened to land on the output times
instead of interpolating.  Available when the model has no Python-evaluated functions, conditional path points only on
linear conditions, and excitations/controls are :class:`~osim_emb.simulation.excitations.ExcitationSpec`
(constant, step, sine).
"""

from __future__ import annotations

import math

import numpy as np

from osim_emb.core._accel import njit
from osim_emb.core import compiled_kernels as K
from osim_emb.core.closed_chain_kernels import solve_linear
from osim_emb.muscles.kernels import SQRT_EPS, blankevoort_tension, muscle_derivatives
from osim_emb.paths.wrapping._kernels_muscles import pose_lengths_moment_arms, pose_workspace
from osim_emb.simulation.excitations import EXCITATION_KINDS, ExcitationSpec, excitation_value

__all__ = ["compiled_plan", "rhs", "jacobian", "rk45_start", "rk45_run", "REACHED", "UNDERFLOW", "BUDGET"]


@njit(error_model="numpy", inline="always")
def _paths(y, prog, paths):  # pragma: no cover - compiled
    """L (M,) and R (nq, M) at q = y[:nq] (the plan's output arrays, overwritten by the next call): the geometric
    units by the path kernel, the function-based ones by their joint-variable program.  ``paths`` = (geometric
    plan, function-based program, L, R, columns of the geometric units, columns of the function-based ones,
    whether any unit is geometric).  One layout for every model (an empty plan or program where a model has no
    such units), so that numba compiles the integrators once."""
    if paths[6]:  # (tested here: a call passing the plan's ~90 arrays costs their reference counts, ~3 us)
        _geometric_paths(y, prog, paths)  # (nested tuples passed whole: taking one out costs reference counts)
    function_path_lengths(y, paths[1], paths[5], paths[2], paths[3])
    return paths[2], paths[3]


@njit(error_model="numpy")
def _geometric_paths(y, prog, paths):  # pragma: no cover - compiled
    ints, flts, ext, nodes, ci, zero_qd, _, _, _, chains, _ = prog
    nq = zero_qd.shape[1]
    q2 = np.empty((1, nq))
    for k in range(nq):
        q2[0, k] = y[k]
    v, g, _ = K.program(ints, flts, ext, q2, zero_qd, chains)
    _pose_paths(y, v, g, nodes, ci, paths)
    _scatter(paths, paths[4])


@njit(error_model="numpy", _nrt=False)
def _scatter(paths, cols):  # pragma: no cover - compiled
    """The geometric units' L and R into their columns of the plan's L and R."""
    out = paths[0][5]
    length, r = paths[2], paths[3]
    for j in range(cols.shape[0]):
        length[cols[j]] = out[2][0, j]
        for k in range(r.shape[0]):
            r[k, cols[j]] = out[3][0, k, j]


@njit(error_model="numpy")
def function_path_lengths(q, fb, cols, length, r):  # pragma: no cover - compiled
    """Function-based units at q (its first n_q entries): L[cols[m]] = l_m(c(q)), R[:, cols[m]] = -dl_m/dq by the
    program ``fb`` = (ints, flts, ext, top nodes, value, gradient, H-product and direction work arrays, chains) of
    :class:`osim_emb.simulation.muscle_driven._FunctionPaths` (no second derivatives); nothing without units."""
    if cols.shape[0] == 0:
        return
    ints, flts, ext, top, val, grad, hq, dirs, chains = fb
    K.eval_program(ints, flts, ext, q, dirs, False, val, grad, hq, chains)
    nq = grad.shape[1]
    for m in range(top.shape[0]):
        n = top[m]
        j = cols[m]
        length[j] = val[n]
        for k in range(nq):
            r[k, j] = -grad[n, k]


@njit(error_model="numpy", _nrt=False)
def _pose_paths(y, v, g, nodes, ci, paths):  # pragma: no cover - compiled
    """The path kernel at the joint variables v, g of the program's nodes (allocation-free)."""
    args1, args2, val, grad, pa, out, cond, ws = paths[0]
    nq = grad.shape[2]
    # conditional path points: condition f(c . q + c0), f the identity (row -1) or a one-input curve
    cpoint, ccoef, cint, clo, chi, crow, cints, cflts = cond
    for i in range(cpoint.shape[0]):
        c = cint[i]
        for k in range(nq):
            c += ccoef[i, k] * y[k]
        if crow[i] >= 0:
            c = K._univariate(cints[crow[i]], cflts[crow[i]], 0, 0, c)[0]
        pa[0, cpoint[i]] = c >= clo[i] - 1e-5 and c <= chi[i] + 1e-5
    for j in range(ci.shape[0]):
        val[0, ci[j]] = v[0, nodes[j]]
        for k in range(nq):
            grad[0, ci[j], k] = g[0, nodes[j], k]
    pose_lengths_moment_arms(val, grad, pa, args1, args2, out, ws)


@njit(error_model="numpy")
def _rest(t, y, length, r, prog, mus, clf, act):  # pragma: no cover - compiled
    """The right-hand side at (t, y) given the muscles' path lengths and moment arms at y's q."""
    _, _, _, _, _, zero_qd, ints, flts, ext, _, chains = prog
    nq = zero_qd.shape[1]
    groups, ekind, evals, work, tau, dyn_ws, elements = mus  # work rows: u, speed, force, dlf, adot, a, l_f
    nm = ekind.shape[0]
    u, speed, force, dlf, adot, a, lf = work[0], work[1], work[2], work[3], work[4], work[5], work[6]
    for m in range(nm):
        u[m] = excitation_value(ekind[m], evals[m], t)
        s = 0.0  # lengthening speed -R^T q-dot (Schutte's fibres at 90 degrees)
        for k in range(nq):
            s -= r[k, m] * y[nq + k]
        speed[m] = s
        a[m] = y[2 * nq + m]
        lf[m] = y[2 * nq + nm + m]
    muscle_derivatives(groups, length, speed, a, lf, u, force, dlf, adot)
    for k in range(nq):
        s = 0.0
        for m in range(nm):
            s += r[k, m] * force[m]
        tau[k] = s
    lim, cmap = clf
    for i in range(lim.shape[0]):  # coordinate row, q_up, q_low, K_up, K_low, damping, transition (SI)
        c = int(lim[i, 0])
        qq, qqd, dc = _coordinate_state(cmap, c, y, nq)
        _add_coordinate_force(cmap, c, dc, K.coordinate_limit_force(lim[i, 1], lim[i, 2], lim[i, 3], lim[i, 4],
                                                                    lim[i, 5], lim[i, 6], qq, qqd), tau)
    acoord, aforce, akind, avals, path_forces, loads = act
    for i in range(acoord.shape[0]):
        c = acoord[i]
        dc = _coordinate_state(cmap, c, y, nq)[2]
        _add_coordinate_force(cmap, c, dc, excitation_value(akind[i], avals[i], t) * aforce[i], tau)
    _path_forces(t, y, length, r, nm, path_forces, tau)
    out = np.empty(y.shape[0])
    K.rhs_into(ints, flts, ext, y, tau, elements, t, loads, dyn_ws, out, chains)
    for m in range(nm):
        out[2 * nq + m] = adot[m]
        out[2 * nq + nm + m] = dlf[m]
    return out


@njit(error_model="numpy")
def _coordinate_state(cmap, i, y, nq):  # pragma: no cover - compiled
    """(c, ċ, dc/dx) of row i of the coordinate forces' coordinates, c = f(x), x = coefficients · q + intercept,
    f the identity (curve row -1) or a one-input curve: a generalized coordinate or a coupled one."""
    coef, intercept, crow, cints, cflts = cmap
    x, xd = intercept[i], 0.0
    for k in range(nq):
        x += coef[i, k] * y[k]
        xd += coef[i, k] * y[nq + k]
    if crow[i] < 0:
        return x, xd, 1.0
    v, d, _ = K._univariate(cints[crow[i]], cflts[crow[i]], 0, 0, x)
    return v, d * xd, d


@njit(error_model="numpy")
def _add_coordinate_force(cmap, i, dc, force, tau):  # pragma: no cover - compiled
    """tau += ∇c force for row i (∇c = dc/dx × coefficients)."""
    coef = cmap[0]
    for k in range(tau.shape[0]):
        if coef[i, k] != 0.0:
            tau[k] += dc * coef[i, k] * force


#: kinds of the path forces without muscle states (compiled_plan's ``act[4]``)
PATH_ACTUATOR, PATH_SPRING, LIGAMENT, RIGID_TENDON_MUSCLE, BLANKEVOORT = 0, 1, 2, 3, 4


@njit(error_model="numpy")
def _path_forces(t, y, length, r, nm, path_forces, tau):  # pragma: no cover - compiled
    """tau += R_e T_e for the path units after the muscles (columns nm + e): a driven PathActuator (control x
    optimal force), a RigidTendonMuscle (F_max (u f_L f_V + clamp(f_PE, 0, 10)) cos(phi), its curves in rows
    crow, crow + 1, crow + 2), a PathSpring (k max(L - L0, 0) (1 + d dL/dt)), a Ligament (F_pcsa f(L / L0) where
    L > L0), a Blankevoort1991Ligament (:func:`osim_emb.muscles.kernels.blankevoort_tension`), as
    OpenSim 4.6's getTension / calcTotalForce / computeActuation; ``path_forces`` = (kind, parameters (force, L0,
    dissipation or width, l_opt, l_opt v_max), control kind, control values, curve row, curve ints, curve
    floats)."""
    kind, par, ckind, cvals, crow, cints, cflts = path_forces
    nq = tau.shape[0]
    for e in range(kind.shape[0]):
        col = nm + e
        if kind[e] == PATH_ACTUATOR:
            tension = excitation_value(ckind[e], cvals[e], t) * par[e, 0]
        elif kind[e] == RIGID_TENDON_MUSCLE:
            speed = 0.0
            for k in range(nq):
                speed -= r[k, col] * y[nq + k]
            along = length[col] - par[e, 1] if length[col] > par[e, 1] else 0.0
            width = par[e, 2]
            if width > SQRT_EPS:
                lf = math.sqrt(along * along + width * width)
                cphi = along / lf
            else:
                lf, cphi = along, 1.0
            row = crow[e]
            fl = K._univariate(cints[row], cflts[row], 0, 0, lf / par[e, 3])[0]
            fp = K._univariate(cints[row + 1], cflts[row + 1], 0, 0, lf / par[e, 3])[0]
            fv = K._univariate(cints[row + 2], cflts[row + 2], 0, 0, speed / par[e, 4])[0]
            fp = min(max(fp, 0.0), 10.0)
            tension = par[e, 0] * (excitation_value(ckind[e], cvals[e], t) * fl * fv + fp) * cphi
        elif kind[e] == PATH_SPRING:
            speed = 0.0
            for k in range(nq):
                speed -= r[k, col] * y[nq + k]
            stretch = length[col] - par[e, 1] if length[col] > par[e, 1] else 0.0
            tension = par[e, 0] * stretch * (1.0 + par[e, 2] * speed)
        elif kind[e] == BLANKEVOORT:
            speed = 0.0
            for k in range(nq):
                speed -= r[k, col] * y[nq + k]
            tension = blankevoort_tension(length[col], speed, par[e, 1], par[e, 0], par[e, 2], par[e, 3])
        else:
            tension = 0.0
            if length[col] > par[e, 1]:
                tension = K._univariate(cints[crow[e]], cflts[crow[e]], 0, 0, length[col] / par[e, 1])[0] * par[e, 0]
        for k in range(nq):
            tau[k] += r[k, col] * tension


@njit(error_model="numpy", inline="always")  # (a call level passing the plan's tuples costs their reference counts)
def _rhs(t, y, prog, geo, mus, clf, act):  # pragma: no cover - compiled
    length, r = _paths(y, prog, geo)
    return _rest(t, y, length, r, prog, mus, clf, act)


def _raise_singular(system, y, err):
    """A singular mass matrix: the SingularMassMatrixError naming the coordinates that move no mass."""
    from osim_emb.core.compiled import compiled_model
    compiled_model(system.model)._raise_singular_mass(np.asarray(y, dtype=float)[None, :system.n_q], err)


#: :func:`rk45_run`'s ``max_rhs`` that evaluates the right-hand side at (st[0], y) into f and returns, no step
RHS_ONLY = -1
_NO_OUTPUT, _NO_TIMES = np.empty((0, 0)), np.empty(0)


def rhs(system, plan, t, y):
    """The compiled right-hand side of ``system`` at (t, y) for its :func:`compiled_plan` (a fresh array).

    Evaluated by :func:`rk45_run` (``max_rhs`` = RHS_ONLY), whose compiled code holds the right-hand side already:
    a kernel of its own would be a second compiled copy of it (about 100 s of compilation a model layout)."""
    y = np.array(y, dtype=float)
    f = np.empty(y.shape[0])
    try:
        rk45_run(y, f, np.array([float(t), 0.0]), np.zeros(2, dtype=np.int64), _NO_OUTPUT, _NO_TIMES, 0, RHS_ONLY,
                 1.0, 1.0, *plan)
    except np.linalg.LinAlgError as err:
        _raise_singular(system, y, err)
    return f


@njit(error_model="numpy")
def jacobian_workspace(n_q, n_m):  # pragma: no cover - compiled
    """The arrays of :func:`jacobian_parts`: (columns of q and q-dot (n, 2 n_q), each muscle's 2x2 block (n_m, 2, 2),
    each tendon force's derivatives by the muscle's activation and fibre length (n_m, 2), M^-1 R (n_q, n_m), M)."""
    n = 2 * n_q + 2 * n_m
    return (np.zeros((n, 2 * n_q)), np.zeros((n_m, 2, 2)), np.zeros((n_m, 2)), np.zeros((n_q, n_m)),
            np.zeros((n_q, n_q)))


@njit(error_model="numpy")
def jacobian_parts(t, y, f0, prog, geo, mus, clf, act, parts):  # pragma: no cover - compiled
    """d rhs / d y at (t, y) (f0 = rhs there) in the muscle-driven ODE's structure, into ``parts``
    (:func:`jacobian_workspace`).  A muscle's activation and fibre length enter only that muscle's two rates and,
    through its tendon force F_m, q-ddot = M^-1 (R F + ...): their columns are a 2x2 block and
    M^-1 R[:, m] dF_m.  The q and q-dot columns are forward differences of the whole right-hand side (step
    1e-8 max(1, |y_j|)); the muscle blocks and dF forward differences of the muscle equations alone, every
    muscle at once.  2 n_q right-hand sides instead of n."""
    jcols, jmm, dforce, minv_r, mass = parts
    _, _, _, _, _, zero_qd, ints, flts, ext, _, chains = prog
    dyn_ws = mus[5]
    nq = zero_qd.shape[1]
    length, r = _paths(y, prog, geo)  # the plan's arrays: used before the q columns' right-hand sides overwrite them
    yy = y.copy()
    for j in range(nq, 2 * nq):  # q-dot: L and R do not change
        yy[j] = y[j] + 1e-8 * max(1.0, abs(y[j]))
        _forward_column(jcols, j, _rest(t, yy, length, r, prog, mus, clf, act), f0, yy[j] - y[j])
        yy[j] = y[j]
    _muscle_columns(t, y, length, r, mus, jmm, dforce)
    K.mass_matrix_into(ints, flts, ext, y, dyn_ws, mass, chains)
    _solve_columns(mass, r, minv_r)
    for j in range(nq):
        yy[j] = y[j] + 1e-8 * max(1.0, abs(y[j]))
        _forward_column(jcols, j, _rhs(t, yy, prog, geo, mus, clf, act), f0, yy[j] - y[j])
        yy[j] = y[j]


@njit(error_model="numpy", inline="always")
def _forward_column(jcols, j, fj, f0, h):  # pragma: no cover - compiled
    """Column j = (f(y + h e_j) - f(y)) / h, h the step actually taken."""
    for i in range(f0.shape[0]):
        jcols[i, j] = (fj[i] - f0[i]) / h


@njit(error_model="numpy")
def _solve_columns(mass, r, minv_r):  # pragma: no cover - compiled
    """minv_r = M^-1 R for the muscles' columns (the first minv_r.shape[1] of R), column by column."""
    nq = mass.shape[0]
    work, col, sol = np.empty((nq, nq)), np.empty(nq), np.empty(nq)
    for m in range(minv_r.shape[1]):
        work[:, :] = mass
        col[:] = r[:, m]
        if not solve_linear(work, col, sol):
            raise np.linalg.LinAlgError("Singular matrix")
        minv_r[:, m] = sol


@njit(error_model="numpy")
def _muscle_columns(t, y, length, r, mus, jmm, dforce):  # pragma: no cover - compiled
    """Each muscle's 2x2 block and dF_m by forward differences of the muscle equations, every muscle at once."""
    groups, ekind, evals, _, _, _, _ = mus
    nq = r.shape[0]
    nm = ekind.shape[0]
    u, speed, a, lf = np.empty(nm), np.empty(nm), np.empty(nm), np.empty(nm)
    for m in range(nm):
        u[m] = excitation_value(ekind[m], evals[m], t)
        s = 0.0
        for k in range(nq):
            s -= r[k, m] * y[nq + k]
        speed[m] = s
        a[m] = y[2 * nq + m]
        lf[m] = y[2 * nq + nm + m]
    force0, dlf0, adot0 = np.empty(nm), np.empty(nm), np.empty(nm)
    force, dlf, adot = np.empty(nm), np.empty(nm), np.empty(nm)
    muscle_derivatives(groups, length, speed, a, lf, u, force0, dlf0, adot0)
    step = np.empty(nm)
    for state in range(2):  # 0: activations, 1: fibre lengths, every muscle perturbed at once
        x = a if state == 0 else lf
        for m in range(nm):
            x0 = x[m]
            x[m] = x0 + 1e-8 * max(1.0, abs(x0))
            step[m] = x[m] - x0
        muscle_derivatives(groups, length, speed, a, lf, u, force, dlf, adot)
        for m in range(nm):
            x[m] = y[2 * nq + state * nm + m]
            jmm[m, 0, state] = (adot[m] - adot0[m]) / step[m]
            jmm[m, 1, state] = (dlf[m] - dlf0[m]) / step[m]
            dforce[m, state] = (force[m] - force0[m]) / step[m]


def jacobian(system, plan, t, y):
    """The n x n Jacobian of the compiled right-hand side (for SciPy's implicit methods): :func:`jacobian_parts`
    (the kernel BDF-jit calls, so compiled once for both) assembled here."""
    y = np.array(y, dtype=float)
    parts = jacobian_workspace(system.n_q, system.n_m)
    f0 = rhs(system, plan, t, y)
    try:
        jacobian_parts(float(t), y, f0, *plan, parts)
    except np.linalg.LinAlgError as err:
        _raise_singular(system, y, err)
    jcols, jmm, dforce, minv_r, _ = parts
    nq, nm = minv_r.shape
    n = y.shape[0]
    jac = np.zeros((n, n))
    jac[:, :2 * nq] = jcols
    rows = 2 * nq + np.arange(nm)[:, None] + np.array([0, nm])  # each muscle's activation and fibre-length rows
    for i in range(2):
        for k in range(2):
            jac[rows[:, i], rows[:, k]] = jmm[:, i, k]
    jac[nq:2 * nq, rows[:, 0]] = minv_r * dforce[:, 0]
    jac[nq:2 * nq, rows[:, 1]] = minv_r * dforce[:, 1]
    return jac


@njit(error_model="numpy")
def _rms(x):  # pragma: no cover - compiled
    return math.sqrt(np.sum(x * x) / x.shape[0])


@njit(error_model="numpy", inline="always")  # (inlined: not a third compiled copy of the right-hand side)
def initial_step(t, y, f, order, rtol, atol, prog, geo, mus, clf, act):  # pragma: no cover - compiled
    """The first step for a method whose error estimate has this order (SciPy's select_initial_step: Hairer,
    Norsett & Wanner, Solving ODEs I, II.4), one right-hand side."""
    scale = atol + np.abs(y) * rtol
    d0, d1 = _rms(y / scale), _rms(f / scale)
    h0 = 1e-6 if (d0 < 1e-5 or d1 < 1e-5) else 0.01 * d0 / d1
    f1 = _rhs(t + h0, y + h0 * f, prog, geo, mus, clf, act)
    d2 = _rms((f1 - f) / scale) / h0
    h1 = max(1e-6, h0 * 1e-3) if (d1 <= 1e-15 and d2 <= 1e-15) else (0.01 / max(d1, d2)) ** (1.0 / (order + 1))
    return min(100.0 * h0, h1)


#: what a compiled run returns: the last output time it was asked for reached, the step size underflowed (a state
#: or derivative stopped being finite), the budget of right-hand sides spent
REACHED, UNDERFLOW, BUDGET = 0, 1, 2


def rk45_start(t0: float, y0: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The state :func:`rk45_run` continues: (f at (t0, y0), [t, h], [right-hand sides, next output]); its first
    call evaluates f and the first step (not a kernel of its own: each compiled kernel holds a copy of the whole
    right-hand side, which is most of the compile time)."""
    return np.zeros(len(y0)), np.array([float(t0), 0.0]), np.array([0, 1], dtype=np.int64)


@njit(error_model="numpy")
def rk45_run(y, f, st, cnt, out, t_eval, stop, max_rhs, rtol, atol, prog, geo, mus, clf,
             act):  # pragma: no cover - compiled
    """Dormand-Prince 5(4) (SciPy RK45's tableau and step control) from the state (y, f, st = [t, h], cnt =
    [right-hand sides, next output]) until out[stop - 1] is written (REACHED), the step underflows (UNDERFLOW) or
    more than ``max_rhs`` right-hand sides have been used (BUDGET); the state is updated in place, so that runs to
    successive ``stop`` give the states of one run to the last (bitwise).  ``max_rhs`` = RHS_ONLY with cnt[0] = 0:
    f = the right-hand side at (st[0], y), nothing else (:func:`rhs`)."""
    c = np.array([0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0])
    a = np.zeros((6, 5))
    a[1, 0] = 1 / 5
    a[2, 0], a[2, 1] = 3 / 40, 9 / 40
    a[3, 0], a[3, 1], a[3, 2] = 44 / 45, -56 / 15, 32 / 9
    a[4, 0], a[4, 1], a[4, 2], a[4, 3] = 19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729
    a[5, 0], a[5, 1], a[5, 2], a[5, 3], a[5, 4] = 9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656
    b = np.array([35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84])
    e = np.array([-71 / 57600, 0.0, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525, 1 / 40])
    n = y.shape[0]
    t, h = st[0], st[1]
    nfev, nxt = cnt[0], cnt[1]
    if nfev == 0:  # the start (rk45_start): f at (t, y) and the first step; or the right-hand side alone (rhs)
        f[:] = _rhs(t, y, prog, geo, mus, clf, act)
        if max_rhs == RHS_ONLY:
            return REACHED
        h = initial_step(t, y, f, 4, rtol, atol, prog, geo, mus, clf, act)
        nfev = 2
    kk = np.empty((7, n))
    stage = np.empty(n)  # the stages' states, the new state and the scaled error: written in place
    ynew = np.empty(n)
    scaled = np.empty(n)
    status = REACHED
    while nxt < stop:
        target = t_eval[nxt]
        rejected = False
        while True:
            if nfev > max_rhs:
                status = BUDGET
                break
            hh = min(h, target - t)
            kk[0] = f
            for s in range(1, 6):
                for i in range(n):
                    dy = 0.0
                    for j in range(s):
                        dy += a[s, j] * kk[j, i]
                    stage[i] = y[i] + hh * dy
                kk[s] = _rhs(t + c[s] * hh, stage, prog, geo, mus, clf, act)
            for i in range(n):
                yi = y[i]
                for s in range(6):
                    yi += hh * b[s] * kk[s, i]
                ynew[i] = yi
            kk[6] = _rhs(t + hh, ynew, prog, geo, mus, clf, act)
            nfev += 6
            for i in range(n):
                err = 0.0
                for s in range(7):
                    err += e[s] * kk[s, i]
                err *= hh
                scaled[i] = err / (atol + np.maximum(abs(y[i]), abs(ynew[i])) * rtol)
            en = _rms(scaled)
            if en < 1.0:
                factor = 10.0 if en == 0.0 else min(10.0, 0.9 * en ** -0.2)
                if rejected:
                    factor = min(1.0, factor)
                last = hh == target - t
                clipped = hh < h
                t = target if last else t + hh
                y[:] = ynew
                f[:] = kk[6]
                if not (clipped and factor >= 1.0):
                    h = hh * factor
                break
            h = hh * (0.2 if math.isnan(en) else max(0.2, 0.9 * en ** -0.2))
            rejected = True
            if h < 1e-14:
                status = UNDERFLOW
                break
        if status != REACHED:
            break
        if t == target:
            out[nxt] = y
            nxt += 1
    st[0], st[1] = t, h
    cnt[0], cnt[1] = nfev, nxt
    return status


def compiled_plan(system):
    """The arguments of :func:`rk45_run` for a :class:`MuscleDrivenSystem`, or None (with the
    reason) when the system has something only Python evaluates."""
    paths = system._paths
    if paths is None:
        return None, system._paths_refused or "numba is off or compiled=False"
    if not system.compiled:
        return None, system._muscles_refused
    from osim_emb.core.compiled import univariate_rows
    if paths.python or paths.jv.externals or paths.cm.externals:
        funcs = [f for _, f in paths.python] + list(paths.jv.externals) + list(paths.cm.externals)
        named = list(dict.fromkeys(f.describe() for f in funcs))  # e.g. a loop whose tree has a SplineSurface
        more = f", ... ({len(named) - 3} more)" if len(named) > 3 else ""
        return None, f"the model has joint functions evaluated in Python ({'; '.join(named[:3])}{more})"
    conditional = paths.plan.conditional if paths.plan is not None else []
    conditions = [_condition(c, system.n_q) for _, c, _ in conditional]
    if any(c is None for c in conditions):
        return None, ("a conditional path point depends on the coordinates through a function other than a "
                      "one-input curve of a linear combination")
    specs = (list(system._excitation) + list(system._controls) + list(system._path_controls)
             + list(system._stateless_excitation))
    if not all(isinstance(s, ExcitationSpec) or isinstance(s, (int, float)) for s in specs):
        return None, "an excitation or control is a Python function"
    path_forces = _path_force_arrays(system)
    if isinstance(path_forces, str):
        return None, path_forces
    loads = K.no_loads()
    if system.external_loads is not None:
        try:
            loads = paths.cm.external_loads(system.model, system.external_loads)
        except ValueError as err:  # a load on a body the compiled dynamics leaves out (massless, unsupported)
            return None, str(err)
    cmap = _coordinate_force_map(system)
    if isinstance(cmap, str):
        return None, cmap
    from osim_emb.simulation.force_elements import compiled_rows
    try:
        elements, rest = compiled_rows(system.model, system.force_elements)
    except ValueError as err:  # a contact or spring on a body the compiled dynamics leaves out
        return None, str(err)
    if rest:
        return None, f"the model's {rest.describe()} are evaluated in Python"

    def encode(items):
        kind = np.array([EXCITATION_KINDS[s.kind] if isinstance(s, ExcitationSpec) else 0 for s in items],
                        dtype=np.int64)
        vals = np.zeros((len(items), 4))
        for i, s in enumerate(items):
            v = s.values if isinstance(s, ExcitationSpec) else (float(s),)
            vals[i, :len(v)] = v
        return kind, vals

    jv, cm = paths.jv, paths.cm
    prog = (jv.ints, jv.flts, jv._no_ext, np.ascontiguousarray(paths.nodes), np.ascontiguousarray(paths.ci),
            paths._zero_qd, cm.ints, cm.flts, cm._no_ext, jv.chains, cm.chains)
    curves = [c[2] for c in conditions if c[2] is not None]
    rows = np.cumsum([c[2] is not None for c in conditions]) - 1
    cond = (np.array([k for k, _, _ in conditional], dtype=np.int64),
            np.array([c[0] for c in conditions], dtype=float).reshape(-1, system.n_q),
            np.array([c[1] for c in conditions], dtype=float),
            np.array([r[0] for _, _, r in conditional], dtype=float),
            np.array([r[1] for _, _, r in conditional], dtype=float),
            np.array([rows[i] if c[2] is not None else -1 for i, c in enumerate(conditions)], dtype=np.int64),
            *univariate_rows(curves))
    # one layout whatever the units (an empty plan or program stands in), so that numba compiles one version
    gplan, pa, args1, args2, out, fb = paths.uniform_arrays()
    geo = (args1, args2, paths._val.copy(), paths._grad.copy(), pa.copy(), tuple(o.copy() for o in out), cond,
           pose_workspace(paths.n_f, paths.n_q, gplan.bodies[0], *gplan.path[:3]))
    layout = (geo, fb, np.zeros(paths.n_m), np.zeros((system.n_q, paths.n_m)), paths.geo_cols, paths.fb_cols,
              paths.plan is not None)
    ek, ev = encode(system._excitation)
    mus = (system.groups, ek, ev, np.zeros((7, system.n_m)), np.zeros(system.n_q), K.dynamics_workspace(cm.ints),
           elements)
    rows = []
    for i, f in enumerate(system.limit_forces):
        rows.append([i, *f.si_parameters()])
    clf = (np.array(rows, dtype=float).reshape(-1, 7), cmap)
    ak, av = encode(system._controls)
    pk, pv = encode(system._path_controls + system._stateless_excitation + [0.0] * len(system._passive))
    act = (np.arange(len(system.limit_forces), len(system.limit_forces) + len(system.actuators), dtype=np.int64),
           np.array([a.optimal_force for a in system.actuators], dtype=float), ak, av,
           (path_forces[0], path_forces[1], pk, pv, *path_forces[2:]),
           loads)
    return (prog, layout, mus, clf, act), ""


def _condition(f, n_q):
    """(coefficients, intercept, curve encoding or None) of a conditional path point's condition f(q): a linear
    combination of q, or a one-input curve of one (a coupled coordinate's, e.g. the WristModel's auxiliary
    coordinates), or a constant (a locked coordinate's, e.g. ToyLandingModel's knees: zero coefficients); None for
    anything else."""
    from osim_emb.core.compiled import _univariate_parameters
    from osim_emb.core.functions import Composite, Linear
    if type(f) is Linear and f.coefficients.size == n_q:
        return f.coefficients, f.intercept, None
    if f.is_constant:
        return np.zeros(n_q), float(f(np.zeros(f.n_inputs))[0]), None
    if type(f) is Composite and len(f.inners) == 1:
        inner, enc = f.inners[0], _univariate_parameters(f.outer)
        if type(inner) is Linear and inner.coefficients.size == n_q and enc is not None:
            return inner.coefficients, inner.intercept, enc
    return None


def _coordinate_force_map(system):
    """(coefficients, intercept, curve row, curve ints, curve floats) of the coordinates of the system's
    CoordinateLimitForces then CoordinateActuators (rows in that order, :func:`_coordinate_state`); a string (the
    reason) if a coupled one is not a one-input curve of a linear combination of q."""
    from osim_emb.core.compiled import univariate_rows
    n_q = system.n_q
    coef, intercept, rows, curves = [], [], [], []
    for f in (*system.limit_forces, *system.actuators):
        if f.angular is not None:
            return (f"{type(f).__name__} {f.name!r} acts on a rotation of a Ball, Free or Ellipsoid joint (its speed an "
                    "angular velocity component)")
        if f.coupling is None:
            c, c0, enc = np.eye(n_q)[f.coordinate], 0.0, None
        else:
            form = _condition(f.coupling, n_q)
            if form is None:
                return (f"{type(f).__name__} {f.name!r} acts on a coupled coordinate through a function other than "
                        "a one-input curve of a linear combination of the coordinates")
            c, c0, enc = form
        coef.append(c)
        intercept.append(c0)
        rows.append(-1 if enc is None else len(curves))
        if enc is not None:
            curves.append(enc)
    cints, cflts = univariate_rows(curves)
    return (np.array(coef, dtype=float).reshape(-1, n_q), np.array(intercept, dtype=float),
            np.array(rows, dtype=np.int64), cints, cflts)


def _path_force_arrays(system):
    """(kind, parameters, curve row, curve ints, curve floats) of the system's path forces without muscle states,
    in the order of ``system.path_force_names``; a string (the reason) if a Ligament's curve is not compilable."""
    from osim_emb.core.compiled import _univariate_parameters, univariate_rows  # adapter: K._univariate's encoding
    kind, par, row, curves = [], [], [], []
    for _, optimal_force in system._path_actuators:
        kind.append(PATH_ACTUATOR)
        par.append((optimal_force, 0.0, 0.0, 0.0, 0.0))
        row.append(0)
    for m in system.rigid_tendon_muscles:
        enc = [_univariate_parameters(m.curve(prop)) for prop in m.CURVES]
        if any(e is None for e in enc):
            bad = next(prop for prop, e in zip(m.CURVES, enc) if e is None)
            return (f"RigidTendonMuscle {m.name!r}: its {bad} ({type(m.curve(bad)).__name__}) is evaluated in "
                    "Python")
        kind.append(RIGID_TENDON_MUSCLE)
        par.append((m.max_isometric_force, m.tendon_slack_length, m.parallelogram_height, m.optimal_fiber_length,
                    m.optimal_fiber_length * m.max_contraction_velocity))
        row.append(len(curves))
        curves.extend(enc)
    for f in system._passive:
        p = f.parameters
        if f.type == "PathSpring":
            kind.append(PATH_SPRING)
            par.append((p["stiffness"], p["resting_length"], p["dissipation"], 0.0, 0.0))
            row.append(0)
            continue
        if f.type == "Blankevoort1991Ligament":
            kind.append(BLANKEVOORT)
            par.append((p["linear_stiffness"], p["slack_length"], p["transition_strain"], p["damping_coefficient"],
                        0.0))
            row.append(0)
            continue
        enc = _univariate_parameters(p["force_length_curve"])
        if enc is None:
            return (f"Ligament {f.name!r}: its force-length curve ({type(p['force_length_curve']).__name__}) is "
                    "evaluated in Python")
        kind.append(LIGAMENT)
        par.append((p["pcsa_force"], p["resting_length"], 0.0, 0.0, 0.0))
        row.append(len(curves))
        curves.append(enc)
    cints, cflts = univariate_rows(curves)
    return (np.array(kind, dtype=np.int64), np.array(par, dtype=float).reshape(-1, 5),
            np.array(row, dtype=np.int64), cints, cflts)
