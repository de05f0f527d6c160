"""The compliant-tendon muscle equations, compiled (numba): one loop over the muscles of a group, plain arrays.

Called by both routes of the muscle-driven simulation (SciPy's ``fun(t, y)`` in
:mod:`osim_emb.simulation.muscle_driven` and the compiled integrator of
:mod:`osim_emb.simulation.muscle_driven_jit`), one kernel per OpenSim muscle class, each writing the tendon
force [N], the fibre velocity [m/s] and the activation rate [1/s] of its muscles:

* :func:`thelen_kernel` -- ``Thelen2003Muscle`` (activation dynamics, the fixed-width pennation, Thelen's
  curves, ``calcdlceN``: Thelen 2003 Eqs 1-7);
* :func:`schutte_kernel` -- ``Schutte1993Muscle_Deprecated`` (``computeActuation``; the curves through the
  compiled one-input functions of :mod:`osim_emb.core.compiled_kernels`);
* :func:`millard_kernel` -- ``Millard2012EquilibriumMuscle`` with an elastic tendon and fibre damping (OpenSim's
  defaults): the damped force balance F_max (a f_L f_V(v~) + f_PE + beta v~) cos(phi) = F_max f_SE solved for v~
  by Newton's method on OpenSim's quintic Bezier curves (:func:`bezier_curve`, the compiled
  ``SmoothSegmentedFunction``).

:func:`muscle_derivatives` runs all three on the muscles of a mixed model.  The per-group packed parameters
are built by :func:`thelen_parameters`, :func:`millard_parameters` (and the Schutte group of
``muscle_driven``).  :func:`thelen_fiber_velocity` (``calcdlceN``) is also the production form of
:func:`osim_emb.muscles.curves.thelen_fiber_velocity`.
"""

from __future__ import annotations

import math

import numpy as np

from osim_emb.core._accel import njit
from osim_emb.core.compiled_kernels import _univariate as K_univariate

__all__ = ["fixed_width_pennation", "fixed_width_pennation_array", "THELEN_FIELDS", "thelen_parameters", "thelen_kernel", "thelen_fiber_velocity",
           "thelen_fiber_velocity_array", "thelen_tendon_force", "thelen_active_force", "thelen_passive_force",
           "thelen_curve_array", "schutte_kernel", "MILLARD_FIELDS", "millard_parameters", "millard_kernel",
           "millard_length_terms", "millard_static_balance", "bezier_curve", "encode_curves", "muscle_derivatives", "blankevoort_tension",
           "empty_groups", "millard_rigid_kernel", "DEGROOTE_FIELDS", "degroote_parameters", "degroote_kernel"]

ROUNDOFF_ERROR = 2e-13  # OpenSim's SimmMacros.h (EQUAL_WITHIN_ERROR)
_EPS = 2.220446049250313e-16


# =============================================================================
# Thelen 2003
# =============================================================================
THELEN_FIELDS = ("fiso", "lopt", "lts", "h", "sin_max", "phi_max", "lmin", "vmax", "etoe", "klin", "e0m", "kact",
                 "kpe", "fpe_den", "af", "flen", "thr", "tau_act", "tau_deact", "amin", "pennated")


def thelen_parameters(muscles) -> np.ndarray:
    """(M, len(THELEN_FIELDS)) parameters of :func:`thelen_kernel` for ``Thelen2003Muscle``s."""
    rows = []
    e3 = math.exp(3.0)
    for m in muscles:
        e0 = m.FmaxTendonStrain
        etoe = 99.0 * e0 * e3 / (166.0 * e3 - 67.0)
        rows.append([m.max_isometric_force, m.optimal_fiber_length, m.tendon_slack_length,
                     m.optimal_fiber_length * math.sin(m.pennation_angle_at_optimal),
                     math.sin(m.maximum_pennation_angle), m.maximum_pennation_angle, m.minimum_fiber_length,
                     m.max_contraction_velocity, etoe, 0.67 / (e0 - etoe), m.FmaxMuscleStrain, m.KshapeActive,
                     m.KshapePassive, math.exp(m.KshapePassive) - 1.0, m.Af, m.Flen, m.fv_linear_extrap_threshold,
                     m.activation_time_constant, m.deactivation_time_constant, m.minimum_activation,
                     float(m.pennation_angle_at_optimal > np.finfo(float).eps)])
    return np.ascontiguousarray(np.array(rows, dtype=float).reshape(-1, len(THELEN_FIELDS)))


@njit(nogil=True, error_model="numpy")
def thelen_fiber_velocity(k, afl, fm, af, flen, thr):  # pragma: no cover - compiled
    """OpenSim's ``calcdlceN``: the normalized fibre velocity at the normalized fibre force ``fm`` (Thelen 2003
    Eqs 6-7, continued linearly below 0 and above ``thr`` F_len a f_L); k = 0.25 + 0.75 a, afl = a f_L."""
    c = (2.0 + 2.0 / af) / (flen - 1.0)
    if fm > 0.0 and fm < afl * flen * thr:
        b = afl + fm / af if fm <= afl else c * (afl * flen - fm)
        return k * (fm - afl) / b
    if fm <= 0.0:
        fm0 = 0.0
        b0 = afl
        db0 = 1.0 / af
    else:
        fm0 = afl * flen * thr
        b0 = c * (afl * flen - fm0)
        db0 = -c
    return k * (fm0 - afl) / b0 + (k / b0 - k * (fm0 - afl) / (b0 * b0) * db0) * (fm - fm0)


@njit(nogil=True, error_model="numpy")
def thelen_tendon_force(tlN, etoe, klin):  # pragma: no cover - compiled
    """Thelen 2003 Eq 1 as OpenSim's ``calcfse``: f_SE at normalized tendon length tlN (toe region to
    strain etoe, then linear with slope klin)."""
    x = tlN - 1.0
    if x > etoe:
        return klin * (x - etoe) + 0.33
    if x > 0.0:
        return 0.33 / (math.exp(3.0) - 1.0) * (math.exp(3.0 * x / etoe) - 1.0)
    return 0.0


@njit(nogil=True, error_model="numpy")
def thelen_active_force(lN, kact):  # pragma: no cover - compiled
    """Thelen 2003 Eq 3: f_L = exp(-(l~ - 1)^2 / gamma)."""
    return math.exp(-((lN - 1.0) * (lN - 1.0)) / kact)


@njit(nogil=True, error_model="numpy")
def thelen_passive_force(lN, kpe, e0m, fpe_den):  # pragma: no cover - compiled
    """Thelen 2003 Eq 2 (0 below l~ = 1); fpe_den = exp(kpe) - 1."""
    return (math.exp(kpe * (lN - 1.0) / e0m) - 1.0) / fpe_den if lN > 1.0 else 0.0


@njit(nogil=True, error_model="numpy")
def thelen_curve_array(which, x, p0, p1, p2, out):  # pragma: no cover - compiled
    """One Thelen curve over an array: which 0 = f_SE(x; etoe p0, klin p1), 1 = f_L(x; gamma p0),
    2 = f_PE(x; kpe p0, e0m p1, exp(kpe) - 1 p2)."""
    for i in range(x.shape[0]):
        if which == 0:
            out[i] = thelen_tendon_force(x[i], p0, p1)
        elif which == 1:
            out[i] = thelen_active_force(x[i], p0)
        else:
            out[i] = thelen_passive_force(x[i], p0, p1, p2)


@njit(nogil=True, error_model="numpy")
def thelen_fiber_velocity_array(k, fv, af, flen, thr, out):  # pragma: no cover - compiled
    """:func:`thelen_fiber_velocity` at a f_L = 1 over arrays: the normalized fibre velocity at force-velocity
    multipliers ``fv`` (k = 0.25 + 0.75 a)."""
    for i in range(fv.shape[0]):
        out[i] = thelen_fiber_velocity(k[i], 1.0, fv[i], af, flen, thr)


@njit(nogil=True, inline="always")
def fixed_width_pennation(lf, h, sin_max, phi_max, lmin):  # pragma: no cover - compiled
    """MuscleFixedWidthPennationModel's angle [rad] at fibre length lf [m]: asin(h / lf) below the maximum angle,
    phi_max at or past it and at or below the minimum length lmin (also for lf = 0 or nan).  h is the constant
    parallelogram height l_opt sin(phi_opt); callers with phi_opt = 0 use phi = 0 without calling this."""
    if not lf > lmin:
        return phi_max
    s = h / lf
    return math.asin(min(max(s, -1.0), 1.0)) if s < sin_max else phi_max


@njit(nogil=True)
def fixed_width_pennation_array(lf, h, sin_max, phi_max, lmin):  # pragma: no cover - compiled
    """:func:`fixed_width_pennation` at every fibre length of the float array lf (same shape)."""
    flat = lf.ravel()
    out = np.empty(flat.size)
    for i in range(flat.size):
        out[i] = fixed_width_pennation(flat[i], h, sin_max, phi_max, lmin)
    return out.reshape(lf.shape)


@njit(nogil=True, error_model="numpy")
def _activation_rate(a, u, amin, tau_act, tau_deact):  # pragma: no cover - compiled
    """MuscleFirstOrderActivationDynamicModel: (u - a) / tau, a clamped to [a_min, 1]."""
    ac = min(max(a, amin), 1.0)
    tau = tau_act * (0.5 + 1.5 * ac) if u > ac else tau_deact / (0.5 + 1.5 * ac)
    return (u - ac) / tau


@njit(nogil=True, error_model="numpy")  # divisions by zero give inf/nan as numpy does
def thelen_kernel(p, idx, lmt, a, lf_state, u, force, dlf, adot):  # pragma: no cover - compiled
    """Muscles idx[j] (parameters p[j]) of the model's arrays: tendon force, fibre velocity, activation rate."""
    for j in range(idx.shape[0]):
        m = idx[j]
        (fiso, lopt, lts, h, sin_max, phi_max, lmin, vmax, etoe, klin, e0m, kact, kpe, fpe_den, af, flen, thr,
         tau_act, tau_deact, amin, pennated) = p[j]
        adot[m] = _activation_rate(a[m], u[m], amin, tau_act, tau_deact)
        ac = min(max(a[m], amin), 1.0)
        lf = max(lf_state[m], lmin)
        phi = fixed_width_pennation(lf, h, sin_max, phi_max, lmin) if pennated > 0.5 else 0.0
        cphi = math.cos(phi)
        lN = lf / lopt
        fse = thelen_tendon_force((lmt[m] - lf * cphi) / lts, etoe, klin)
        fal = thelen_active_force(lN, kact)
        fpe = thelen_passive_force(lN, kpe, e0m, fpe_den)
        fm = fse / cphi - fpe
        dlN = thelen_fiber_velocity(0.25 + 0.75 * ac, ac * fal, fm, af, flen, thr)
        force[m] = fiso * fse
        dlf[m] = 0.0 if (lf_state[m] <= lmin and dlN <= 0.0) else dlN * vmax * lopt


# =============================================================================
# Schutte 1993 (Schutte1993Muscle_Deprecated)
# =============================================================================
@njit(nogil=True, error_model="numpy")
def _schutte_curve(cints, cflts, k, x):  # pragma: no cover - compiled
    return K_univariate(cints[k], cflts[k], 0, 0, x)[0]


@njit(nogil=True, error_model="numpy")
def deprecated_pennation_scalar(lf, lopt, phi_opt):  # pragma: no cover - compiled
    """ActivationFiberLengthMuscle_Deprecated::calcPennation (:func:`osim_emb.muscles.hill.deprecated_pennation`)."""
    if lf < _EPS:
        return 0.0
    v = lopt * math.sin(phi_opt) / lf
    if math.isnan(v) or v <= 0.0:
        return 0.0
    if v >= 1.0:
        return 0.5 * math.pi
    return math.asin(v)


@njit(nogil=True, error_model="numpy")
def schutte_kernel(p, idx, cidx, cints, cflts, lmt, speed, a, lf, u, force, dlf, adot):  # pragma: no cover
    """``computeActuation`` of Schutte1993Muscle_Deprecated for muscles idx[j]; p rows: F_max, l_opt, l_TS,
    phi_opt, time_scale, damping, activation1, activation2; cidx: (active, passive, tendon) curve rows of
    cints/cflts (-1 passive: OpenSim's default exponential)."""
    kv, slope_k, fmax = 0.15, 0.13, 1.4
    for j in range(idx.shape[0]):
        m = idx[j]
        fiso, lopt, lts, phi_opt, ts, d, act1, act2 = p[j]
        am, um = a[m], u[m]
        adot[m] = ((um - am) * (act1 * um + act2) if um >= am else (um - am) * act2) / ts
        ln = lf[m] / lopt
        ca = math.cos(deprecated_pennation_scalar(ln, 1.0, phi_opt))
        nmtl = lmt[m] / lopt
        rest = lts / lopt
        strain = (nmtl - ln * ca - rest) / rest
        tendon = 0.0 if strain < 0.0 else _schutte_curve(cints, cflts, cidx[j, 2], strain)
        if cidx[j, 1] < 0:
            passive = math.exp(8.0 * (ln - 1.0)) / math.exp(4.0)
        else:
            passive = _schutte_curve(cints, cflts, cidx[j, 1], ln)
        active = max(_schutte_curve(cints, cflts, cidx[j, 0], ln), 0.0)
        if abs(ca) <= ROUNDOFF_ERROR:
            if abs(tendon) <= ROUNDOFF_ERROR:
                v = 0.0
            else:  # fibres at 90 degrees: OpenSim's mix of normalized and absolute lengths kept
                h = nmtl - lts
                w = lopt * math.sin(phi_opt)
                new_ca = math.cos(deprecated_pennation_scalar(math.sqrt(h * h + w * w) / lopt, 1.0, phi_opt))
                v = speed[m] * ts / lopt * new_ca
        else:
            vdf = tendon / ca - passive
            if vdf < 0.0:
                vdf = 0.0
            aa = am * active
            if vdf < -d:
                v = vdf / d
            elif vdf < aa:
                c = kv * (vdf - aa) / d
                b = -kv * (vdf / kv + aa + d) / d
                v = (-b - math.sqrt(b * b - 4.0 * c)) / 2.0
            else:
                c = -(slope_k * kv / (d * (kv + 1.0))) * (vdf - aa)
                b = -(vdf / d - fmax * aa / d - slope_k * kv / (kv + 1.0))
                v = (-b + math.sqrt(b * b - 4.0 * c)) / 2.0
        force[m] = tendon * fiso
        dlf[m] = v * lopt / ts


# =============================================================================
# OpenSim's SmoothSegmentedFunction (quintic Bezier segments), compiled
# =============================================================================
def encode_curves(curves) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(segment rows (C, 2): first segment and count; ctrl_x (S, 6); ctrl_y (S, 6); ends (C, 6): x0, x1, y0, y1,
    dydx0, dydx1) of :class:`osim_emb.muscles.curves.SmoothSegmentedCurve`s, for :func:`bezier_curve`."""
    rows, cx, cy, ends, s = [], [], [], [], 0
    for c in curves:
        n = c.ctrl_x.shape[0]
        rows.append((s, n))
        cx.append(c.ctrl_x)
        cy.append(c.ctrl_y)
        ends.append((c.x0, c.x1, c.y0, c.y1, c.dydx0, c.dydx1))
        s += n
    return (np.array(rows, dtype=np.int64).reshape(-1, 2),
            np.ascontiguousarray(np.vstack(cx) if cx else np.zeros((1, 6))),
            np.ascontiguousarray(np.vstack(cy) if cy else np.zeros((1, 6))),
            np.array(ends, dtype=float).reshape(-1, 6))


@njit(nogil=True, error_model="numpy")
def _bezier5(p, u):  # pragma: no cover - compiled
    """(B(u), B'(u)) of the quintic Bezier curve with control values p (6,)."""
    v = 1.0 - u
    u2, v2 = u * u, v * v
    b0 = v2 * v2 * v
    b1 = 5.0 * u * v2 * v2
    b2 = 10.0 * u2 * v2 * v
    b3 = 10.0 * u2 * u * v2
    b4 = 5.0 * u2 * u2 * v
    b5 = u2 * u2 * u
    val = p[0] * b0 + p[1] * b1 + p[2] * b2 + p[3] * b3 + p[4] * b4 + p[5] * b5
    d0, d1, d2, d3, d4 = p[1] - p[0], p[2] - p[1], p[3] - p[2], p[4] - p[3], p[5] - p[4]
    der = 5.0 * (d0 * v2 * v2 + 4.0 * d1 * u * v2 * v + 6.0 * d2 * u2 * v2 + 4.0 * d3 * u2 * u * v + d4 * u2 * u2)
    return val, der


@njit(nogil=True, error_model="numpy")
def bezier_curve(rows, cx, cy, ends, k, x):  # pragma: no cover - compiled
    """(y, dy/dx) of curve k at x: straight lines outside [x0, x1], inside the first segment with
    start <= x < end (OpenSim's calcIndex), its parameter u solved by bracketed Newton to round-off."""
    x0, x1, y0, y1, dydx0, dydx1 = ends[k]
    if x < x0:
        return y0 + dydx0 * (x - x0), dydx0
    if x > x1:
        return y1 + dydx1 * (x - x1), dydx1
    if math.isnan(x):
        return math.nan, math.nan
    first, n = rows[k]
    s = first + n - 1
    for j in range(first, first + n):
        if x >= cx[j, 0] and x < cx[j, 5]:
            s = j
            break
    px, py = cx[s], cy[s]
    scale = max(abs(px[0]), abs(px[5]), 1.0)
    # initial guess: the chord, then Newton kept inside a bracket (x(u) increases with u)
    u = (x - px[0]) / (px[5] - px[0]) if px[5] > px[0] else 0.5
    u = min(max(u, 0.0), 1.0)
    lo, hi = 0.0, 1.0
    for _ in range(100):
        f, df = _bezier5(px, u)
        f -= x
        if abs(f) <= 2.0 * _EPS * scale:
            break
        if f < 0.0:
            lo = max(lo, u)
        else:
            hi = min(hi, u)
        un = u - f / df if df != 0.0 else math.nan
        if not (un > lo and un < hi):
            un = 0.5 * (lo + hi)
        if abs(un - u) <= 4.0 * _EPS:
            u = un
            break
        u = un
    u = min(max(u, 0.0), 1.0)
    y, dy = _bezier5(py, u)
    _, dx = _bezier5(px, u)
    return y, dy / dx


# =============================================================================
# Millard 2012 (damped equilibrium model, elastic tendon)
# =============================================================================
MILLARD_FIELDS = ("fiso", "lopt", "lts", "vmax", "beta", "tau_act", "tau_deact", "amin", "lmin", "h", "sin_max",
                  "phi_max", "lmin_pennation", "pennated", "direct")
#: SimTK::SignificantReal (eps^(7/8)); e.g. a rigid tendon shorter than its slack length by more is buckled
SIGNIFICANT_REAL = float(np.finfo(float).eps ** (7.0 / 8.0))
SQRT_EPS = float(np.sqrt(np.finfo(float).eps))  # SimTK::SqrtEps


def millard_parameters(muscles, fal_fv, fv_inverse):
    """(packed (M, len(MILLARD_FIELDS)), curve index (M, 5): f_L, f_V, f_V inverse, f_PE, f_SE rows of the
    encoded curves, *encoded curves) of :func:`millard_kernel` (damped, elastic tendon) or
    :func:`millard_rigid_kernel` (rigid tendon) for ``Millard2012EquilibriumMuscle``s, given each muscle's (f_L,
    f_V) as OpenSim adjusts them (``curves_in_use``) and an inverse force-velocity curve (the Newton start).
    ``direct``: ignore_activation_dynamics (the activation is the clamped excitation); beta: the fibre damping
    where the muscle uses it, else 0."""
    rows, index, curves, keys = [], [], [], {}

    def add(c):
        key = id(c)
        if key not in keys:
            keys[key] = len(curves)
            curves.append(c)
        return keys[key]

    for m, (fal, fv), fvinv in zip(muscles, fal_fv, fv_inverse):
        index.append([add(fal.curve), add(fv.curve), add(fvinv.curve), add(m.fiber_force_length_curve.curve),
                      add(m.tendon_force_length_curve.curve)])
        rows.append([m.max_isometric_force, m.optimal_fiber_length, m.tendon_slack_length,
                     m.max_contraction_velocity, m.fiber_damping if m.uses_damping else 0.0, m.activation_time_constant,
                     m.deactivation_time_constant, min(max(m.minimum_activation, 0.0), 1.0), m.minimum_fiber_length,
                     m.parallelogram_height, math.sin(m.maximum_pennation_angle), m.maximum_pennation_angle,
                     m._pennation_minimum_fiber_length, float(m.pennation_angle_at_optimal > np.finfo(float).eps),
                     float(m.ignore_activation_dynamics)])
    packed = np.ascontiguousarray(np.array(rows, dtype=float).reshape(-1, len(MILLARD_FIELDS)))
    return (packed, np.array(index, dtype=np.int64).reshape(-1, 5), *encode_curves(curves))


@njit(nogil=True, error_model="numpy")
def millard_length_terms(p, cidx, rows, cx, cy, ends, j, lmt, lf_state):  # pragma: no cover - compiled
    """(l_f clamped to its minimum, cos phi, f_L, f_PE, f_SE) of the Millard muscle in row j at path length lmt."""
    lopt, lts, lmin, h, sin_max, phi_max, lmin_pen, pennated = (p[j, 1], p[j, 2], p[j, 8], p[j, 9], p[j, 10],
                                                                p[j, 11], p[j, 12], p[j, 13])
    lf = max(lf_state, lmin)
    phi = fixed_width_pennation(lf, h, sin_max, phi_max, lmin_pen) if pennated > 0.5 else 0.0
    cphi = math.cos(phi)
    lN = lf / lopt
    fal = bezier_curve(rows, cx, cy, ends, cidx[j, 0], lN)[0]
    fpe = bezier_curve(rows, cx, cy, ends, cidx[j, 3], lN)[0]
    fse = bezier_curve(rows, cx, cy, ends, cidx[j, 4], (lmt - lf * cphi) / lts)[0]
    return lf, cphi, fal, fpe, fse


@njit(nogil=True, error_model="numpy")
def millard_static_balance(p, cidx, rows, cx, cy, ends, j, lmt, a, lf):  # pragma: no cover - compiled
    """F_max-normalized fibre force along the tendon minus tendon force at zero fibre velocity,
    (a f_L + f_PE) cos phi - f_SE (a clamped to [a_min, 1]): zero at the initial equilibrium."""
    ac = min(max(a, p[j, 7]), 1.0)
    _, cphi, fal, fpe, fse = millard_length_terms(p, cidx, rows, cx, cy, ends, j, lmt, lf)
    return (ac * fal + fpe) * cphi - fse


@njit(nogil=True, error_model="numpy")
def millard_kernel(p, idx, cidx, rows, cx, cy, ends, lmt, a, lf_state, u, force, dlf, adot):  # pragma: no cover
    """``Millard2012EquilibriumMuscle::calcFiberVelocityInfo``'s damped branch for muscles idx[j]."""
    for j in range(idx.shape[0]):
        m = idx[j]
        fiso, lopt, _, vmax, beta, tau_act, tau_deact, amin, lmin, _, _, _, _, _, direct = p[j]
        ac = _millard_activation(a[m], u[m], amin, tau_act, tau_deact, direct, adot, m)
        lf, cphi, fal, fpe, fse = millard_length_terms(p, cidx, rows, cx, cy, ends, j, lmt[m], lf_state[m])
        fv0 = (fse / max(cphi, 0.01) - fpe) / (max(ac, 0.01) * max(fal, 0.01))
        d = min(max(bezier_curve(rows, cx, cy, ends, cidx[j, 2], fv0)[0], -1.0), 1.0)
        for _ in range(50):  # Newton on the damped balance (one root: f_V' >= 0, beta > 0)
            fv, dfv = bezier_curve(rows, cx, cy, ends, cidx[j, 1], d)
            err = (ac * fal * fv + fpe + beta * d) * cphi - fse
            step = -err / ((ac * fal * dfv + beta) * cphi)
            d += step
            if abs(step) < 1e-14:
                break
        v = d * vmax * lopt
        force[m] = fse * fiso
        dlf[m] = 0.0 if (lf <= lmin and v <= 0.0) else v


@njit(nogil=True, error_model="numpy")
def _millard_activation(a, u, amin, tau_act, tau_deact, direct, adot, m):  # pragma: no cover - compiled
    """The activation a Millard muscle uses, clamped to [a_min, 1] (the state, or the excitation without
    activation dynamics); its rate into adot[m] (0 without activation dynamics)."""
    if direct > 0.5:
        adot[m] = 0.0
        return min(max(u, amin), 1.0)
    adot[m] = _activation_rate(a, u, amin, tau_act, tau_deact)
    return min(max(a, amin), 1.0)


@njit(nogil=True, error_model="numpy")
def millard_rigid_kernel(p, idx, cidx, rows, cx, cy, ends, lmt, speed, a, u, force, dlf, adot):  # pragma: no cover
    """``Millard2012EquilibriumMuscle`` with ``ignore_tendon_compliance`` for muscles idx[j]: the fibre length from
    the path (calcFiberLength: sqrt(h^2 + (l_MT - l_TS)^2), at least the minimum), its velocity l_MT' cos phi (0 when
    the tendon is buckled), the force F_max (a f_L f_V + f_PE + beta v~) cos phi saturated at 0, nothing from a fibre
    clamped at its minimum length (:meth:`osim_emb.muscles.hill.Millard2012EquilibriumMuscle.rigid_tendon`, the
    numpy reference of the tests); no fibre state (dlf 0)."""
    for j in range(idx.shape[0]):
        m = idx[j]
        fiso, lopt, lts, vmax, beta, tau_act, tau_deact, amin, lmin, h, _, phi_max, lmin_pen, _, direct = p[j]
        ac = _millard_activation(a[m], u[m], amin, tau_act, tau_deact, direct, adot, m)
        along = lmt[m] - lts
        lf_path = math.sqrt(h * h + along * along) if along >= lmin_pen * math.cos(phi_max) else lmin_pen
        lf, cphi, fal, fpe, _ = millard_length_terms(p, cidx, rows, cx, cy, ends, j, lmt[m], lf_path)
        buckled = lmt[m] - lf * cphi < lts - SIGNIFICANT_REAL
        vn = 0.0 if buckled else speed[m] * cphi / (lopt * vmax)
        clamped = (lf <= lmin and vn <= 0.0) or lf < lmin
        dlf[m] = 0.0
        if clamped:  # OpenSim: no force from a fibre at its minimum length
            force[m] = 0.0
            continue
        fv = 1.0 if buckled else bezier_curve(rows, cx, cy, ends, cidx[j, 1], vn)[0]
        force[m] = max(ac * (fiso * fal * fv * cphi) + fiso * (fpe + beta * vn) * cphi, 0.0)


# =============================================================================
# DeGroote & Fregly 2016 (DeGrooteFregly2016Muscle)
# =============================================================================
DEGROOTE_FIELDS = ("fiso", "lopt", "lts", "w", "vmax", "width_scale", "e0", "passive", "kT", "beta", "tau_act",
                   "tau_deact", "smoothing", "rigid", "direct")
# the curves' constants (DeGrooteFregly2016Muscle.h; osim_emb.muscles.hill keeps the same numbers)
_DG_B = np.array([[0.8150671134243542, 1.055033428970575, 0.162384573599574, 0.063303448465465],
                  [0.433004984392647, 0.716775413397760, -0.029947116970696, 0.200356847296188],
                  [0.1, 1.0, 0.353553390593274, 0.0]])
_DG_D1, _DG_D2, _DG_D3, _DG_D4 = -0.3211346127989808, -8.149, -0.374, 0.8825327733249912


def degroote_parameters(muscles) -> np.ndarray:
    """(K, len(DEGROOTE_FIELDS)) rows of :func:`degroote_kernel` for DeGrooteFregly2016Muscle descriptions."""
    rows = []
    for m in muscles:
        rows.append((m.max_isometric_force, m.optimal_fiber_length, m.tendon_slack_length, m.parallelogram_height,
                     m.max_contraction_velocity * m.optimal_fiber_length, m.active_force_width_scale,
                     m.passive_fiber_strain_at_one_norm_force, 0.0 if m.ignore_passive_fiber_force else 1.0,
                     m.tendon_stiffness_parameter, m.fiber_damping, m.activation_time_constant,
                     m.deactivation_time_constant, m.activation_dynamics_smoothing,
                     1.0 if m.ignore_tendon_compliance else 0.0, 1.0 if m.ignore_activation_dynamics else 0.0))
    return np.array(rows, dtype=float).reshape(-1, len(DEGROOTE_FIELDS))


@njit(nogil=True, error_model="numpy")
def _degroote_length_curves(lN, width_scale, e0, passive):  # pragma: no cover - compiled
    """(f_L, f_PE) at the normalized fibre length."""
    x = (lN - 1.0) / width_scale + 1.0
    fal = 0.0
    for k in range(3):
        b1, b2, b3, b4 = _DG_B[k, 0], _DG_B[k, 1], _DG_B[k, 2], _DG_B[k, 3]
        fal += b1 * math.exp(-0.5 * (x - b2) ** 2 / (b3 + b4 * x) ** 2)
    fpe = 0.0
    if passive > 0.5:
        offset = math.exp(4.0 * (0.2 - 1.0) / e0)
        fpe = (math.exp(4.0 * (lN - 1.0) / e0) - offset) / (math.exp(4.0) - offset)
    return fal, fpe


@njit(nogil=True, error_model="numpy")
def degroote_kernel(p, idx, lmt, speed, a, lf_state, u, force, dlf, adot):  # pragma: no cover - compiled
    """``DeGrooteFregly2016Muscle``s idx[j]: activation rate (smoothed time constants, no clamping; the excitation
    itself without activation dynamics), and a rigid tendon (fibre from the path, F_max (a f_L f_V + f_PE + beta v~)
    cos phi, no fibre state) or an elastic one in explicit mode (the fibre length as the state: tendon force
    F_max f_T, fibre velocity from the inverse force-velocity curve) -- the numpy reference is
    :class:`osim_emb.muscles.hill.DeGrooteFregly2016Muscle`."""
    for j in range(idx.shape[0]):
        m = idx[j]
        (fiso, lopt, lts, w, vmax, width_scale, e0, passive, kT, beta, tau_act, tau_deact, smoothing, rigid,
         direct) = p[j]
        if direct > 0.5:
            act = u[m]
            adot[m] = 0.0
        else:
            act = a[m]
            factor = 0.5 + 1.5 * act
            f = 0.5 * math.tanh(smoothing * (u[m] - act))
            adot[m] = ((1.0 / (tau_act * factor)) * (f + 0.5) + (factor / tau_deact) * (-f + 0.5)) * (u[m] - act)
        if rigid > 0.5:
            along = lmt[m] - lts
            lf = math.sqrt(along * along + w * w)
            cphi = along / lf
            vN = speed[m] * cphi / vmax
            fal, fpe = _degroote_length_curves(lf / lopt, width_scale, e0, passive)
            t = _DG_D2 * vN + _DG_D3
            fv = _DG_D1 * math.log(t + math.sqrt(t * t + 1.0)) + _DG_D4
            force[m] = act * (fiso * fal * fv * cphi) + fiso * (fpe + beta * vN) * cphi
            dlf[m] = 0.0
        else:
            lf = lf_state[m]
            along = math.sqrt(lf * lf - w * w)
            cphi = along / lf
            ftn = 0.2 * math.exp(kT * ((lmt[m] - along) / lts - 1.0)) - 0.2
            fal, fpe = _degroote_length_curves(lf / lopt, width_scale, e0, passive)
            fv = (ftn / cphi - fpe) / (act * fal)
            force[m] = fiso * ftn
            dlf[m] = (math.sinh((fv - _DG_D4) / _DG_D1) - _DG_D3) / _DG_D2 * vmax


# =============================================================================
# All muscles of a model
# =============================================================================
def empty_groups():
    """The ``groups`` of :func:`muscle_derivatives` with no muscle in any group."""
    i0, i2 = np.zeros(0, dtype=np.int64), np.zeros((1, 1), dtype=np.int64)
    millard = (i0, np.zeros((0, len(MILLARD_FIELDS))), np.zeros((0, 5), dtype=np.int64), np.zeros((0, 2), np.int64),
               np.zeros((1, 6)), np.zeros((1, 6)), np.zeros((0, 6)))
    return ((i0, np.zeros((0, len(THELEN_FIELDS)))),
            (i0, np.zeros((0, 8)), np.zeros((0, 3), dtype=np.int64), i2, np.zeros((1, 1))), millard, millard,
            (i0, np.zeros((0, len(DEGROOTE_FIELDS)))))


@njit(nogil=True, error_model="numpy")
def muscle_derivatives(groups, lmt, speed, a, lf, u, force, dlf, adot):  # pragma: no cover - compiled
    """Tendon forces, fibre velocities and activation rates of every muscle: ``groups`` = (Thelen (indices,
    parameters), Schutte (indices, parameters, curve index, curve ints, curve floats), Millard with an elastic
    tendon and Millard with a rigid one (indices, *:func:`millard_parameters`), DeGroote (indices, parameters));
    speed: the paths' lengthening speeds (Schutte's 90-degree case, the rigid tendons' fibre velocities)."""
    th, sc, mi, mr, dg = groups
    thelen_kernel(th[1], th[0], lmt, a, lf, u, force, dlf, adot)
    schutte_kernel(sc[1], sc[0], sc[2], sc[3], sc[4], lmt, speed, a, lf, u, force, dlf, adot)
    millard_kernel(mi[1], mi[0], mi[2], mi[3], mi[4], mi[5], mi[6], lmt, a, lf, u, force, dlf, adot)
    millard_rigid_kernel(mr[1], mr[0], mr[2], mr[3], mr[4], mr[5], mr[6], lmt, speed, a, u, force, dlf, adot)
    degroote_kernel(dg[1], dg[0], lmt, speed, a, lf, u, force, dlf, adot)


@njit(nogil=True, error_model="numpy")
def blankevoort_tension(length, speed, slack, stiffness, transition, damping):  # pragma: no cover - compiled
    """OpenSim 4.6's Blankevoort1991Ligament::calcTotalForce: strain e = L / L_slack - 1, rate de = (dL/dt) / L_slack;
    spring 0 (e <= 0), k e² / (2 e_t) (e < e_t), k (e - e_t / 2) beyond; damping c de where e > 0 and de > 0, phased
    in over 0 < e < 0.01 by SimTK's quintic step; the sum, never below 0."""
    strain = length / slack - 1.0
    rate = speed / slack
    spring = 0.0
    if strain > 0.0:
        spring = 0.5 * stiffness / transition * strain * strain if strain < transition else \
            stiffness * (strain - transition / 2.0)
    damper = 0.0
    if strain > 0.0 and rate > 0.0:
        x = strain / 0.01
        step = 1.0 if x >= 1.0 else x * x * x * (10.0 + x * (6.0 * x - 15.0))
        damper = damping * rate * step
    total = spring + damper
    return total if total > 0.0 else 0.0
