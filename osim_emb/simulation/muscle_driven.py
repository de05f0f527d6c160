"""Muscle-driven forward simulation: activation dynamics and compliant-tendon muscles in the minimal-coordinate ODE.

The state is y = [q, q̇, a, l_f] (coordinates, speeds, one activation and one fibre length per muscle), and
the right-hand side follows OpenSim 4.6's ``Thelen2003Muscle`` (an ``ActivationFiberLengthMuscle``):

* activation (``MuscleFirstOrderActivationDynamicModel``), with â = clamp(a, a_min, 1):
  ȧ = (u − â) / τ,  τ = τ_act (0.5 + 1.5 â) if u > â else τ_deact / (0.5 + 1.5 â)
* fibre velocity (``calcFiberVelocityInfo``): the fibre is at l_f (≥ its minimum length), the pennation
  angle φ follows the constant-width parallelogram, the tendon is l_T = l_MT − l_f cos φ, its force
  f_SE(l_T / l_TS), and the force-velocity relation of Thelen (2003) Eqs 6-7 (``calcdlceN``) gives
  l̇_f = v_max l_opt ṽ(â, f_L, f_SE / cos φ − f_PE); l̇_f = 0 while the fibre sits at its minimum length
  and would shorten;
* the tendon force F = F_max f_SE acts along the path: τ_muscles = R(q) F, with the path's lengthening
  speed l̇_MT = −R(q)ᵀ q̇ (R as OpenSim applies path forces, ``opensim_compat``);
* ``CoordinateLimitForce`` (smooth-step stiffness and damping beyond the limits) and ``CoordinateActuator``
  (τ = control × optimal_force) add generalized forces;
* the multibody part is the package's M(q) q̈ + N(q, q̇) q̇ = G(q) + τ (:func:`osim_emb.core.dynamics.ode_rhs`).

Initial fibre lengths come from OpenSim's ``Thelen2003Muscle::initMuscleState`` (the Newton iteration of
``computeInitialFiberEquilibrium``), ported step by step so the starting state is OpenSim's.
``Millard2012EquilibriumMuscle`` (elastic tendon, fibre damping: OpenSim's defaults) and
``Schutte1993Muscle_Deprecated`` are supported too, in any mix.  The muscle equations are the compiled loops of
:mod:`osim_emb.muscles.kernels`, called here and by the compiled integrator
(:mod:`osim_emb.simulation.muscle_driven_jit`).  The numpy groups below (``_ThelenArrays``, ``_MillardGroup``,
``_SchutteGroup``: the muscle models' own curves) are the independent reference route (``compiled=False``) the
tests compare with; they also compute the initial equilibria.

Excitations are functions of time (or constants), by muscle name.  Lengths in metres, angles in radians.
"""

from __future__ import annotations

import logging
import weakref
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy.integrate import solve_ivp

from osim_emb.core import dynamics as dyn
from osim_emb.core._accel import use_jit
from osim_emb.core.configuration import initial_configuration, initial_rates
from osim_emb.core.kinematics import dependent_coordinate_columns, speed_columns
from osim_emb.core.speeds import angular_velocity_joints
from osim_emb.io.muscle_xml import (PASSIVE_PATH_FORCE_TYPES, element_applies_force,
                                     force_models_not_imported)
from osim_emb.io.osim_reader import UNAPPLIED_PASSIVE_FORCES
from osim_emb.core.functions.base import JointFunction
from osim_emb.model import Model
from osim_emb.muscles import curves as C
from osim_emb.muscles import kernels as MK
from osim_emb.muscles.kernels import SQRT_EPS  # SimTK::SqrtEps
from osim_emb.core.compiled_kernels import coordinate_limit_force
from osim_emb.simulation.excitations import ExcitationSpec, MuscleSimulationError
from osim_emb.muscles.hill import (SIGNIFICANT_REAL, DeGrooteFregly2016Muscle, Millard2012EquilibriumMuscle,
                                   MuscleModelError, RigidPathActuator, RigidTendonMuscle, Schutte1993Muscle, Thelen2003Muscle,
                                   deprecated_pennation)

__all__ = ["CoordinateLimitForce", "CoordinateActuator", "MuscleDrivenSystem", "coordinate_forces_from_model",
           "passive_path_loads",
           "ExcitationSpec", "thelen_initial_fiber_length", "schutte_initial_fiber_length",
           "simulate_muscles", "MuscleSimulationError"]

log = logging.getLogger(__name__)



# =============================================================================
# Coordinate forces
# =============================================================================
@dataclass(frozen=True)
class CoordinateLimitForce:
    """OpenSim ``CoordinateLimitForce``; limits in degrees (rotational) or metres, stiffness per degree, as in XML."""

    name: str
    coordinate: int
    upper_stiffness: float
    upper_limit: float
    lower_stiffness: float
    lower_limit: float
    damping: float
    transition: float
    rotational: bool = True
    coupling: JointFunction | None = None  # a coupled coordinate's function of q (``coordinate`` is then -1)
    #: on a rotation of a Ball, Free or Ellipsoid joint: (the joint's three angles, each its index in q or its
    #: function of q where it is not a generalized coordinate; this angle's row)
    angular: tuple[tuple, int] | None = None

    def generalized_force(self, q: float, qdot: float) -> float:
        """calcLimitForce: stiffness ramps up (SimTK Step) over ``transition`` beyond each limit; damping scales
        with the ramps."""
        return float(coordinate_limit_force(*self.si_parameters(), q, qdot))

    def si_parameters(self) -> tuple[float, ...]:
        """(q_up, q_low, K_up, K_low, damping, transition) in SI units (rad or m)."""
        w = math.pi / 180.0 if self.rotational else 1.0
        return (w * self.upper_limit, w * self.lower_limit, self.upper_stiffness / w, self.lower_stiffness / w,
                self.damping / w, w * self.transition)


@dataclass(frozen=True)
class CoordinateActuator:
    """OpenSim ``CoordinateActuator``: generalized force = control × optimal_force."""

    name: str
    coordinate: int
    optimal_force: float = 1.0
    coupling: JointFunction | None = None  # a coupled coordinate's function of q (``coordinate`` is then -1)
    angular: tuple[tuple, int] | None = None  # as CoordinateLimitForce's


def coordinate_state(force, q: np.ndarray, qd: np.ndarray) -> tuple[float, float, np.ndarray | None]:
    """(value, speed, gradient over q) of the coordinate a coordinate force acts on; the gradient is None for a
    generalized coordinate.  A coupled coordinate c = f(q) moves at ċ = ∇f·q̇, and by virtual work its
    generalized force τ_c acts on q as ∇f τ_c (what OpenSim's coupler constraint transmits).  On a rotation of a
    Ball, Free or Ellipsoid joint OpenSim's speed is the angular velocity's component u_k = E_k q̇ (the row of
    :func:`osim_emb.core.speeds.euler_rate_matrix`), so the force acts on q as E_kᵀ τ."""
    if force.angular is not None:
        from osim_emb.core.speeds import euler_rate_matrix
        angles, k = force.angular
        values, gradients = [], []
        for a in angles:
            if isinstance(a, (int, np.integer)):
                values.append(float(q[a]))
                gradients.append(np.eye(q.shape[-1])[a])
            else:
                jet = a.evaluate(q[None], order=1)
                values.append(float(jet.value[0]))
                gradients.append(np.asarray(jet.gradient[0], dtype=float))
        row = euler_rate_matrix(values[0], values[1])[0, k]
        gradient = sum(r * g for r, g in zip(row, gradients))
        return values[k], float(gradient @ qd), gradient
    if force.coupling is None:
        return float(q[force.coordinate]), float(qd[force.coordinate]), None
    jet = force.coupling.evaluate(q, order=1)
    g = jet.gradient[0]
    return float(jet.value[0]), float(g @ qd), g


def _add_coordinate_force(tau: np.ndarray, force, value: float, gradient: np.ndarray | None) -> None:
    if gradient is None:
        tau[force.coordinate] += value
    else:
        tau += value * gradient


def coordinate_forces_from_model(model: Model) -> tuple[list[CoordinateLimitForce], list[CoordinateActuator]]:
    """The model's CoordinateLimitForces and CoordinateActuators, read from the document it was imported from
    (:func:`osim_emb.io.muscle_xml.coordinate_force_records`).

    Elements with ``appliesForce`` false are left out, and so are (with a warning) those on a locked coordinate,
    whose lock takes their force; an element on a coupled coordinate acts through its coupling
    (:func:`coordinate_state`)."""
    doc = model.extras.get("document")
    if doc is None:
        return [], []
    from osim_emb.io.muscle_xml import coordinate_force_records
    names = {n: k for k, n in enumerate(model.coordinate_names)}
    motion = {c.name: c.motion_type for c in model.coordinates}
    limits, actuators = [], []
    held = {d.name for d in model.dependent_coordinates if d.kind in ("locked", "constant")}
    coupled = {d.name: d for d in model.dependent_coordinates if d.kind == "coupled"}
    motion.update({d.name: d.motion_type for d in coupled.values()})
    on_locked = []
    spherical = {c: j for j in angular_velocity_joints(model) for c in j.coordinates}
    for f in coordinate_force_records(doc):
        angular = None
        if f.coordinate in spherical and f.coordinate not in held:
            j = spherical[f.coordinate]
            functions = {d.name: d.function for d in model.dependent_coordinates}
            angular = (tuple(names[c] if c in names else functions[c] for c in j.coordinates),
                       j.coordinates.index(f.coordinate))
        if f.coordinate in held:  # the lock takes the force: no effect on the motion (as in OpenSim)
            on_locked.append(f"{f.type} {f.name!r} ({f.coordinate})")
            continue
        if angular is None and f.coordinate not in names and f.coordinate not in coupled:
            raise MuscleSimulationError(f"{doc.path}: {f.type} {f.name!r} acts on coordinate {f.coordinate!r}, "
                                        "which is not a coordinate of the imported model")
        k, coupling = names.get(f.coordinate, -1), None
        if f.coordinate in coupled and angular is None:
            coupling = coupled[f.coordinate].function
            log.info("%s %r acts on the coupled coordinate %r: its generalized force reaches %s through the "
                     "coupling's gradient", f.type, f.name, f.coordinate, model.name)
        p = f.parameters
        if f.type == "CoordinateLimitForce":
            limits.append(CoordinateLimitForce(
                f.name, k, p["upper_stiffness"], p["upper_limit"], p["lower_stiffness"],
                p["lower_limit"], p["damping"], p["transition"], motion[f.coordinate] == "rotational", coupling,
                angular))
        else:
            actuators.append(CoordinateActuator(f.name, k, p["optimal_force"], coupling, angular))
    if on_locked and model not in _SAID_LOCKED:  # (once a model: several commands' steps read its forces)
        _SAID_LOCKED.add(model)
        log.warning("%s: %d force(s) on locked coordinates are left out, as in OpenSim the lock takes their force: %s",
                    model.name, len(on_locked), ", ".join(on_locked))
    return limits, actuators


#: the models whose forces on locked coordinates were said to be left out
_SAID_LOCKED: "weakref.WeakSet" = weakref.WeakSet()


#: passive path forces the muscle-driven simulation applies (their tension laws from the document)
PASSIVE_PATH_FORCES = PASSIVE_PATH_FORCE_TYPES


@dataclass(frozen=True)
class PassivePathForce:
    """A PathSpring (tension k max(L - L0, 0) (1 + d dL/dt)), a Ligament (tension F_pcsa f(L / L0) where L > L0,
    else 0) or a Blankevoort1991Ligament (:func:`osim_emb.muscles.kernels.blankevoort_tension`), as OpenSim 4.6's
    getTension / calcTotalForce define them."""

    name: str
    type: str
    parameters: dict

    def tension(self, length: float, speed: float) -> float:
        p = self.parameters
        if self.type == "PathSpring":
            stretch = length - p["resting_length"] if length > p["resting_length"] else 0.0
            return p["stiffness"] * stretch * (1.0 + p["dissipation"] * speed)
        if self.type == "Blankevoort1991Ligament":
            from osim_emb.muscles.kernels import blankevoort_tension
            return blankevoort_tension(length, speed, p["slack_length"], p["linear_stiffness"],
                                       p["transition_strain"], p["damping_coefficient"])
        if length <= p["resting_length"]:
            return 0.0
        x = np.array([[length / p["resting_length"]]])
        return float(p["force_length_curve"].evaluate(x, 0).value[0]) * p["pcsa_force"]


def passive_path_forces_from_model(model: Model) -> tuple[PassivePathForce, ...]:
    """The model's PathSprings and Ligaments that apply force, read from the document it was imported from
    (:func:`osim_emb.io.muscle_xml.passive_path_force_records`); their paths are the model's units of the same
    names."""
    doc = model.extras.get("document")
    if doc is None:
        return ()
    from osim_emb.io.muscle_xml import passive_path_force_records
    units = {m.name for m in model.muscles}
    return tuple(PassivePathForce(r.name, r.type, r.parameters) for r in passive_path_force_records(doc)
                 if r.name in units)


def passive_path_loads(model: Model, path_forces: Sequence[PassivePathForce], q: Any, qdot: Any
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The loads of PathSprings and Ligaments along configurations q and rates q̇ (N, n_q): their tensions (N, k) from
    their paths' lengths and lengthening speeds (as OpenSim sums them,
    :func:`osim_emb.paths.geometry.path_lengthening_speeds`), then the body wrenches (N, n_bodies, 6) and generalized forces (N, n_q) of :func:`osim_emb.paths.loads.path_loads`."""
    from osim_emb.paths.geometry import lengths_and_moment_arms, path_lengthening_speeds
    from osim_emb.paths.loads import path_loads
    q, qdot = np.atleast_2d(np.asarray(q, dtype=float)), np.atleast_2d(np.asarray(qdot, dtype=float))
    names = [f.name for f in path_forces]
    if not names:
        return np.zeros((len(q), 0)), np.zeros((len(q), len(model.bodies), 6)), np.zeros(q.shape)
    length, _ = lengths_and_moment_arms(model, q, names, opensim_compat=True, allow_out_of_range=True)
    speed = path_lengthening_speeds(model, q, qdot, names)
    tensions = np.array([[f.tension(float(length[n, k]), float(speed[n, k])) for k, f in enumerate(path_forces)]
                         for n in range(len(q))]).reshape(len(q), len(names))
    wrenches, generalized = path_loads(model, q, tensions, names)
    return tensions, wrenches, generalized


# =============================================================================
# Thelen 2003, vectorized over muscles
# =============================================================================
class _ThelenArrays:
    """Thelen2003Muscles: the packed parameters of the compiled loop (:func:`osim_emb.muscles.kernels.thelen_kernel`)
    and, for the numpy reference route (``compiled=False``, tests), the same derivatives from the muscle models'
    own numpy curves (:class:`osim_emb.muscles.hill.Thelen2003Muscle`)."""

    def __init__(self, muscles: Sequence[Thelen2003Muscle]):
        self.muscles = list(muscles)
        g = lambda attr: np.array([getattr(m, attr) for m in muscles], dtype=float)  # noqa: E731
        self.fiso, self.lopt, self.lts = g("max_isometric_force"), g("optimal_fiber_length"), g("tendon_slack_length")
        self.lmin, self.vmax = g("minimum_fiber_length"), g("max_contraction_velocity")
        self.tau_act, self.tau_deact = g("activation_time_constant"), g("deactivation_time_constant")
        self.amin = g("minimum_activation")
        self.packed = MK.thelen_parameters(muscles)

    def activation_rate(self, a, u):
        ac = np.clip(a, self.amin, 1.0)
        tau = np.where(u > ac, self.tau_act * (0.5 + 1.5 * ac), self.tau_deact / (0.5 + 1.5 * ac))
        return (u - ac) / tau

    def state_derivatives(self, lmt, a, lf_state):
        """(tendon force [N], fibre velocity [m/s]) at musculotendon lengths, activations and fibre lengths."""
        ac = np.clip(a, self.amin, 1.0)
        lf = np.maximum(lf_state, self.lmin)
        fse, dlN = np.empty_like(lf), np.empty_like(lf)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for k, m in enumerate(self.muscles):
                cphi = math.cos(float(m._pennation(lf[k])))
                lN = lf[k] / self.lopt[k]
                fse[k] = m.tendon_force_length((lmt[k] - lf[k] * cphi) / self.lts[k])
                afl = ac[k] * float(m.active_force_length(lN))
                fm = fse[k] / cphi - float(m.passive_force_length(lN))
                # calcdlceN depends on the force only through f_M / (a f_L) (the force-velocity multiplier)
                dlN[k] = C.thelen_fiber_velocity(fm / afl, ac[k], m.Af, m.Flen, m.fv_linear_extrap_threshold)
        clamped = (lf_state <= self.lmin) & (dlN <= 0.0)
        dl = np.where(clamped, 0.0, dlN * self.vmax * self.lopt)
        return self.fiso * fse, dl


# --- scalar port of Thelen2003Muscle::initMuscleState --------------------------------------
def _scalar_dlceN(m: Thelen2003Muscle, a, fal, fm):
    return MK.thelen_fiber_velocity(0.25 + 0.75 * a, a * fal, fm, m.Af, m.Flen, m.fv_linear_extrap_threshold)


def _scalar_ddlce(m: Thelen2003Muscle, a, fal, fm):
    afl = a * fal
    flen, af, thr = m.Flen, m.Af, m.fv_linear_extrap_threshold
    asy_e = a * fal * flen
    if 0.0 < fm < asy_e * thr:
        f0 = fm
        if fm <= afl:
            b, db = afl + fm / af, 1 / af
        else:
            b, db = ((2 + 2 / af) * (afl * flen - fm)) / (flen - 1), ((2 + 2 / af) * (-1)) / (flen - 1)
    else:
        if fm <= 0.0:
            f0 = 0.0
            b, db = afl + f0 / af, 1 / af
        else:
            f0 = thr * asy_e
            b, db = ((2 + 2 / af) * (afl * flen - f0)) / (flen - 1), ((2 + 2 / af) * (-1)) / (flen - 1)
    return (0.25 + 0.75 * a) / b - ((0.25 + 0.75 * a) * (f0 - afl) / (b * b)) * db


def _scalar_fv_inverse(m: Thelen2003Muscle, a, fal, dlceN, tol, max_iter=100):
    """calcfvInv: Newton on calcdlceN for the force-velocity multiplier."""
    ferr, it, fm = 1.0, 0, a * fal
    while abs(ferr) >= tol and it < max_iter:
        d1 = _scalar_dlceN(m, a, fal, fm)
        ferr = d1 - dlceN
        dd = _scalar_ddlce(m, a, fal, fm)
        if abs(dd) > SIGNIFICANT_REAL:
            fm = fm - ferr / dd
        it += 1
    if abs(ferr) < tol:
        return max(0.0, fm / (a * fal))
    raise MuscleSimulationError(f"{m.name}: the force-velocity inverse did not converge")


def _thelen_curves(m: Thelen2003Muscle):
    """The Thelen curves (the compiled loop's formulas) and their derivatives, scalar, for the initial
    equilibrium."""
    e0, e3 = m.FmaxTendonStrain, math.exp(3.0)
    etoe = (99.0 * e0 * e3) / (166.0 * e3 - 67.0)
    klin = 0.67 / (e0 - etoe)
    fpe_den = math.exp(m.KshapePassive) - 1.0

    def fse(tlN):
        return MK.thelen_tendon_force(tlN, etoe, klin)

    def dfse(tlN):
        x = tlN - 1
        return klin if x > etoe else ((0.33 / (math.exp(3.0) - 1)) * (3 / etoe) * math.exp(3 * x / etoe)
                                      if x > 0 else 0.0)

    def fal(lN):
        return MK.thelen_active_force(lN, m.KshapeActive)

    def dfal(lN):
        t1 = lN - 1
        return -2 * t1 / m.KshapeActive * math.exp(-t1 * t1 / m.KshapeActive)

    def fpe(lN):
        return MK.thelen_passive_force(lN, m.KshapePassive, m.FmaxMuscleStrain, fpe_den)

    def dfpe(lN):
        if lN > 1.0:
            k, e = m.KshapePassive, m.FmaxMuscleStrain
            return (k / e) * math.exp(k * (lN - 1) / e) / (math.exp(k) - 1)
        return 0.0

    return fse, dfse, fal, dfal, fpe, dfpe


def thelen_initial_fiber_length(m: Thelen2003Muscle, activation: float, mt_length: float,
                                mt_speed: float = 0.0) -> float:
    """Fibre length of OpenSim's ``computeInitialFiberEquilibrium`` (Thelen2003Muscle::initMuscleState)."""
    fse_f, dfse_f, fal_f, dfal_f, fpe_f, dfpe_f = _thelen_curves(m)
    ma, ml, dml = activation, mt_length, mt_speed
    tsl, ofl, fiso, vmax = m.tendon_slack_length, m.optimal_fiber_length, m.max_isometric_force, m.max_contraction_velocity
    vol = ofl * math.sin(m.pennation_angle_at_optimal)
    lmin = m.minimum_fiber_length
    tol = max(1e-8 * fiso, SIGNIFICANT_REAL * 10)
    max_iter = 20

    pennated = m.pennation_angle_at_optimal > np.finfo(float).eps
    width, sin_max, phi_max = m.parallelogram_height, math.sin(m.maximum_pennation_angle), m.maximum_pennation_angle

    def pennation(lf):
        return MK.fixed_width_pennation(lf, width, sin_max, phi_max, lmin) if pennated else 0.0

    tl = tsl * 1.01
    along = ml - tl
    lce = math.sqrt(vol * vol + along * along) if along >= lmin * math.cos(m.maximum_pennation_angle) else lmin
    st: dict[str, float] = {}

    def position():
        st["phi"] = pennation(lce)
        st["cosphi"] = math.cos(st["phi"])
        st["tl"] = ml - lce * st["cosphi"]
        st["lceN"], st["tlN"] = lce / ofl, st["tl"] / tsl

    def multipliers():
        st["fse"], st["fal"], st["fpe"] = fse_f(st["tlN"]), fal_f(st["lceN"]), fpe_f(st["lceN"])

    def ferr_f():
        st["Fm"] = (ma * st["fal"] * st["fv"] + st["fpe"]) * fiso
        return st["Fm"] * st["cosphi"] - st["fse"] * fiso

    def partials():
        lceN = lce / ofl
        dfm = ((ma * st["fv"]) * dfal_f(lceN) + dfpe_f(lceN)) * fiso / ofl
        t1, t2 = vol * vol, lce * lce
        dcos = t1 / (t2 * lce * (1 - t1 / t2) ** 0.5)
        st["dFmAT_dlce"] = dfm * st["cosphi"] + st["Fm"] * dcos
        st["dFmAT_dlceAT"] = st["dFmAT_dlce"] * st["cosphi"]
        st["dFt_dtl"] = dfse_f(st["tl"] / tsl) * fiso / tsl
        tmp = vol / lce
        dphi = -vol / (lce * lce * (1 - tmp * tmp) ** 0.5)
        dtl = -math.cos(st["phi"]) + lce * math.sin(st["phi"]) * dphi
        st["dFt_dlce"] = dfse_f(st["tl"] / tsl) * dtl * fiso / tsl

    def velocity():
        if abs(st["dFmAT_dlceAT"] + st["dFt_dtl"]) > SIGNIFICANT_REAL and st["tl"] > tsl:
            dtl = st["dFmAT_dlceAT"] / (st["dFmAT_dlceAT"] + st["dFt_dtl"]) * dml
        else:
            dtl = dml
        dlce = (dml - dtl) * st["cosphi"]
        st["fv"] = _scalar_fv_inverse(m, ma, st["fal"], dlce / (vmax * ofl), tol, 100)

    position()
    multipliers()
    st["fv"] = 1.0
    st["Fm"] = 0.0
    partials()
    velocity()
    ferr = ferr_f()
    partials()
    ferr_prev, lce_prev, it = ferr, lce, 0
    while abs(ferr) > tol and it < max_iter:
        dferr = st["dFmAT_dlce"] - st["dFt_dlce"]
        h = 1.0
        while abs(ferr) >= abs(ferr_prev):
            delta = -h * ferr_prev / dferr
            if abs(delta) > SIGNIFICANT_REAL:
                lce = lce_prev + delta
            else:
                lce = lce_prev - math.copysign(1.0, delta) * SQRT_EPS
                h = 0.0
            if lce < lmin:
                lce = lmin
            position()
            multipliers()
            ferr = ferr_f()
            if h <= SQRT_EPS:
                break
            h = 0.5 * h
        ferr_prev, lce_prev = ferr, lce
        partials()
        velocity()
        it += 1
    if abs(ferr) < tol:
        return lce
    if lce <= lmin:
        log.warning("Thelen2003Muscle %s: initial fibre length at its minimum %g m", m.name, lmin)
        return lmin
    raise MuscleSimulationError(f"muscle {m.name!r}: no fibre equilibrium (error {abs(ferr):.3g} N > {tol:.3g} N "
                                f"after {max_iter} Newton iterations, activation {activation:g})")


# =============================================================================
# Millard 2012 (damped, compliant tendon), vectorized over muscles (numpy)
# =============================================================================
class _MillardGroup:
    """``Millard2012EquilibriumMuscle``s with an elastic tendon and fibre damping (OpenSim's defaults):
    ``calcFiberVelocityInfo``'s damped branch -- the normalized fibre velocity solves
    F_max (a f_L f_V(ṽ) + f_PE + β ṽ) cos φ = F_max f_SE by Newton's method -- and the tendon force F_max f_SE."""

    def __init__(self, muscles):
        from osim_emb.muscles.curves import ForceVelocityInverseCurve
        self.muscles = list(muscles)
        g = lambda attr: np.array([getattr(m, attr) for m in muscles], dtype=float)  # noqa: E731
        self.fiso, self.lopt, self.lts = g("max_isometric_force"), g("optimal_fiber_length"), g("tendon_slack_length")
        self.vmax, self.beta = g("max_contraction_velocity"), g("fiber_damping")
        self.tau_act, self.tau_deact = g("activation_time_constant"), g("deactivation_time_constant")
        self.amin = np.clip(g("minimum_activation"), 0.0, 1.0)
        self.lmin = g("minimum_fiber_length")
        # (f_L, f_V) as OpenSim adjusts them
        self.curves = [m.curves_in_use(rigid_tendon=m.ignore_tendon_compliance) for m in muscles]
        self.fv_inverse = []
        for fal, fv in self.curves:
            d = {k: getattr(fv, k) for k in fv.__dataclass_fields__}
            d["concentric_slope_at_vmax"] = max(d["concentric_slope_at_vmax"], 1e-3)
            d["eccentric_slope_at_vmax"] = max(d["eccentric_slope_at_vmax"], 1e-3)
            self.fv_inverse.append(ForceVelocityInverseCurve(**d))
        # (packed parameters, curve index, encoded curves) of the compiled loop
        self.kernel_args = MK.millard_parameters(self.muscles, self.curves, self.fv_inverse)

    def activation_rate(self, a, u):
        ac = np.clip(a, self.amin, 1.0)
        tau = np.where(u > ac, self.tau_act * (0.5 + 1.5 * ac), self.tau_deact / (0.5 + 1.5 * ac))
        return (u - ac) / tau

    def _groups(self, which):
        """[(indices, curve)] with the muscles that share a curve evaluated together."""
        cache = self.__dict__.setdefault("_group_cache", {})
        if which not in cache:
            groups: list = []
            for k, m in enumerate(self.muscles):
                c = {"fal": self.curves[k][0], "fv": self.curves[k][1], "fvinv": self.fv_inverse[k],
                     "fpe": m.fiber_force_length_curve, "fse": m.tendon_force_length_curve}[which]
                for idx, cc in groups:
                    if cc == c:
                        idx.append(k)
                        break
                else:
                    groups.append(([k], c))
            cache[which] = [(np.array(i), c) for i, c in groups]
        return cache[which]

    def _eval(self, which, x, order=0):
        out = [np.empty_like(x) for _ in range(order + 1)]
        for idx, c in self._groups(which):
            vals = c.evaluate(x[idx], order)
            for o in range(order + 1):
                out[o][idx] = vals[o]
        return out if order else out[0]

    def _length_terms(self, lmt, lf_state):
        lf = np.maximum(lf_state, self.lmin)
        phi = np.array([float(m._pennation(np.array(l))) for m, l in zip(self.muscles, lf)])
        cphi = np.cos(phi)
        lN = lf / self.lopt
        return lf, cphi, self._eval("fal", lN), self._eval("fpe", lN), self._eval("fse", (lmt - lf * cphi) / self.lts)

    def state_derivatives(self, lmt, a, lf_state):
        ac = np.clip(a, self.amin, 1.0)
        lf, cphi, fal, fpe, fse = self._length_terms(lmt, lf_state)
        fiso, beta = self.fiso, self.beta
        fv0 = (fse / np.maximum(cphi, 0.01) - fpe) / (np.maximum(ac, 0.01) * np.maximum(fal, 0.01))
        d = np.clip(self._eval("fvinv", fv0), -1.0, 1.0)
        for _ in range(50):  # Newton's method on the damped equilibrium (a unique root: f_V' >= 0, beta > 0)
            fv, dfv = self._eval("fv", d, 1)
            err = (ac * fal * fv + fpe + beta * d) * cphi - fse
            step = -err / ((ac * fal * dfv + beta) * cphi)
            d = d + step
            if np.all(np.abs(step) < 1e-14):
                break
        dl = d * self.vmax * self.lopt
        dl = np.where((lf <= self.lmin) & (dl <= 0.0), 0.0, dl)
        return fse * fiso, dl

    def initial_fiber_length(self, k, activation, lmt):
        """The fibre length of the static equilibrium F_max (a f_L + f_PE) cos φ = F_max f_SE (OpenSim's
        computeFiberEquilibrium at zero speed, solved here to round-off with Brent's method on the compiled
        :func:`osim_emb.muscles.kernels.millard_static_balance`)."""
        from scipy.optimize import brentq
        m = self.muscles[k]
        args = self.kernel_args

        def balance(lf):
            return MK.millard_static_balance(*args, k, float(lmt), float(activation), float(lf))

        lo = self.lmin[k]
        hi = math.hypot(lmt - self.lts[k], m.parallelogram_height) + 1e-9  # tendon at slack: no tendon force
        if balance(lo) >= 0.0:
            log.warning("Millard2012EquilibriumMuscle %s: initial fibre length at its minimum %g m", m.name, lo)
            return lo
        if balance(hi) <= 0.0:
            raise MuscleSimulationError(f"muscle {m.name!r}: no fibre equilibrium at path length {lmt:g} m")
        return brentq(balance, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)


# =============================================================================
# Schutte 1993 (OpenSim's Schutte1993Muscle_Deprecated), vectorized over muscles (numpy)
# =============================================================================
ROUNDOFF_ERROR = MK.ROUNDOFF_ERROR


class _SchutteGroup:
    """``Schutte1993Muscle_Deprecated``s: ``computeActuation`` -- activation rate (u − a)(c₁u + c₂) (or
    (u − a) c₂ when deactivating) / time_scale, the tendon force from the tendon strain, and the fibre
    velocity of the inverse force-velocity relation with damping -- on the raw states (no clamping),
    in OpenSim's normalization (lengths by l_opt, times by ``time_scale``)."""

    def __init__(self, muscles):
        self.muscles = list(muscles)
        g = lambda attr: np.array([getattr(m, attr) for m in muscles], dtype=float)  # noqa: E731
        self.fiso, self.lopt, self.lts = g("max_isometric_force"), g("optimal_fiber_length"), g("tendon_slack_length")
        self.phi_opt, self.time_scale, self.damping = g("pennation_angle_at_optimal"), g("time_scale"), g("damping")
        self.act1, self.act2 = g("activation1"), g("activation2")
        self._groups = {}
        for which, prop in (("active", "active_force_length_curve"), ("passive", "passive_force_length_curve"),
                            ("tendon", "tendon_force_length_curve")):
            groups: list = []
            for k, m in enumerate(self.muscles):
                c = m._curve(prop) if prop != "passive_force_length_curve" else m.passive_force_length_curve
                for idx, cc in groups:
                    if (cc is None and c is None) or (cc is not None and c is not None and cc == c):
                        idx.append(k)
                        break
                else:
                    groups.append(([k], c))
            self._groups[which] = [(np.array(i), c) for i, c in groups]
        self.packed, self.curve_index, self.curve_ints, self.curve_floats = self._encode()

    def _encode(self):
        """The compiled kernel's inputs: per-muscle parameters, the curve of each muscle (active, passive,
        tendon; -1 for the default passive exponential) and the distinct curves as padded rows of the
        compiled one-input function encoding of :mod:`osim_emb.core.compiled` (None when a curve has none)."""
        from osim_emb.core.compiled import _univariate_parameters, univariate_rows  # adapter: K._univariate's encoding
        packed = np.ascontiguousarray(np.stack([self.fiso, self.lopt, self.lts, self.phi_opt, self.time_scale,
                                                self.damping, self.act1, self.act2], axis=1).reshape(-1, 8))
        index = np.full((len(self.muscles), 3), -1, dtype=np.int64)
        encoded = []
        for col, which in enumerate(("active", "passive", "tendon")):
            for idx, c in self._groups[which]:
                if c is None:
                    continue
                enc = _univariate_parameters(c)
                if enc is None:
                    return packed, index, None, None
                index[idx, col] = len(encoded)
                encoded.append(enc)
        return (packed, index, *univariate_rows(encoded))

    def curve(self, which, x):
        out = np.empty_like(x)
        for idx, c in self._groups[which]:
            if c is None:  # the passive curve left at its default: OpenSim's exponential
                out[idx] = np.exp(8.0 * (x[idx] - 1.0)) / math.exp(4.0)
            else:
                out[idx] = c.evaluate(x[idx], 0).value
        return out

    def activation_rate(self, a, u):
        return np.where(u >= a, (u - a) * (self.act1 * u + self.act2), (u - a) * self.act2) / self.time_scale

    def state_derivatives(self, lmt, speed, a, lf):
        """(tendon force [N], fibre velocity [m/s]) at path lengths and lengthening speeds, raw activations
        and fibre lengths."""
        lopt = self.lopt
        lN = lf / lopt
        ca = np.cos(deprecated_pennation(lN, 1.0, self.phi_opt))
        nmtl = lmt / lopt
        rest = self.lts / lopt
        strain = (nmtl - lN * ca - rest) / rest
        tendon = np.where(strain < 0.0, 0.0, self.curve("tendon", strain))
        passive = self.curve("passive", lN)
        active = np.maximum(self.curve("active", lN), 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            vdf = np.maximum(tendon / ca - passive, 0.0)
        dl = C.schutte_fiber_velocity(a, active, vdf, self.damping)
        at90 = np.abs(ca) <= ROUNDOFF_ERROR
        if at90.any():  # fibres at 90 degrees: the stiff-tendon velocity once the tendon pulls (OpenSim's mix
            h = nmtl - self.lts  # of normalized and absolute lengths kept)
            w = lopt * np.sin(self.phi_opt)
            new_ca = np.cos(deprecated_pennation(np.sqrt(h * h + w * w) / lopt, 1.0, self.phi_opt))
            v90 = np.where(np.abs(tendon) <= ROUNDOFF_ERROR, 0.0, speed * self.time_scale / lopt * new_ca)
            dl = np.where(at90, v90, dl)
        return tendon * self.fiso, dl * lopt / self.time_scale


def schutte_initial_fiber_length(m: Schutte1993Muscle, activation: float, mt_length: float) -> float:
    """Fibre length of OpenSim's ``Schutte1993Muscle_Deprecated::computeIsometricForce`` (the equilibrium
    that ``equilibrateMuscles`` sets: tendon and fibre forces within 0.01 N), ported step by step."""
    def value(prop, x):
        return float(m._curve(prop).evaluate(np.array([x]), 0).value[0])

    def passive(lN):
        return float(m.passive_force_length(np.array(lN)))

    lopt, lts, fiso, phi_opt = (m.optimal_fiber_length, m.tendon_slack_length, m.max_isometric_force,
                                m.pennation_angle_at_optimal)
    length = mt_length
    if lopt < ROUNDOFF_ERROR:
        return 0.0
    width = lopt * math.sin(phi_opt)
    if lts < ROUNDOFF_ERROR:
        return length / math.cos(math.atan(width / length))
    if length < lts:
        return width
    lf = lopt
    cos_factor = math.cos(float(deprecated_pennation(lf, lopt, phi_opt)))
    tendon_length = length - lf * cos_factor
    if tendon_length < lts:
        tendon_length = lts
        cos_factor = math.cos(math.atan(width / (length - tendon_length)))
        lf = (length - tendon_length) / cos_factor
        if lf < width:
            lf = width
    old_lf = math.nan
    error_force = 0.0
    for i in range(100):
        active = value("active_force_length_curve", lf / lopt) * activation
        active = max(active, 0.0)
        pas = max(passive(lf / lopt), 0.0)
        fiber_force = (active + pas) * fiso * cos_factor
        strain = tendon_length / lts - 1.0
        tendon_force = 0.0 if strain < 0.0 else value("tendon_force_length_curve", strain) * fiso
        old_error = error_force
        error_force = tendon_force - fiber_force
        if abs(error_force) <= 0.01:
            break
        if i == 0:
            old_error = error_force
        if (1 if error_force >= 0.0 else -1) != (1 if old_error >= 0.0 else -1):
            percent = abs(error_force) / (abs(error_force) + abs(old_error))
            tmp = old_lf
            old_lf = lf
            lf += percent * (tmp - lf)
        else:
            tendon_stiffness = value("tendon_force_length_curve", strain) * fiso / lts
            min_stiffness = (active + pas) * 1200.0 * fiso / (32.0 * lts)
            tendon_stiffness = max(tendon_stiffness, min_stiffness)
            fiber_stiffness = fiso / lopt * (value("active_force_length_curve", lf / lopt) + passive(lf / lopt))
            change = abs(error_force / (fiber_stiffness / cos_factor + tendon_stiffness))
            if abs(change / lopt) > 0.5:
                change = 0.5 * lopt
            old_lf = lf
            lf = lf + change if error_force > 0.0 else lf - change
        cos_factor = math.cos(float(deprecated_pennation(lf, lopt, phi_opt)))
        tendon_length = length - lf * cos_factor
        if tendon_length < lts:
            tendon_length = lts
            cos_factor = math.cos(math.atan(width / (length - tendon_length)))
            lf = (length - tendon_length) / cos_factor
    return lf


# =============================================================================
# The system
# =============================================================================
Excitation = Callable[[float], float] | float


class _FunctionPaths:
    """The function-based units (FunctionBasedPath, length function only) as one joint-variable program of the
    generalized coordinates: each unit's length function of its path coordinates, each path coordinate a
    generalized coordinate or a dependent coordinate's function of them.  ``args`` is the ``fb`` argument of
    :func:`osim_emb.simulation.muscle_driven_jit.function_path_lengths` (L = l(c(q)), R = -dl/dq)."""

    def __init__(self, model: Model, units: Sequence[Any]):
        from osim_emb.core import compiled_kernels as K
        from osim_emb.core.functions.program import COORDINATES, ProgramBuilder, Unflattenable, node_program_arrays
        from osim_emb.paths.geometry import UnsupportedPathError
        nq = model.n_q
        generalized = {c: k for k, c in enumerate(model.coordinate_names)}
        builder = ProgramBuilder(nq)
        top = [0] * len(units)
        def basis(i):  # units of one basis compiled one after another: their polynomials share the monomials
            path = units[i].function_path
            return tuple(path.coordinates), type(path.length_function).__name__, getattr(path.length_function,
                                                                                        "order", 0)

        for i in sorted(range(len(units)), key=basis):
            unit = units[i]
            path = unit.function_path
            where = f"unit {unit.name!r} of model {model.name!r}"
            if path.moment_arm_functions or path.speed_function is not None:
                raise UnsupportedPathError(f"{where}: its FunctionBasedPath has moment-arm or lengthening-speed "
                                           "functions (SciPy's route evaluates them)")
            n_ext = len(builder.externals)
            try:
                nodes = []
                for name in path.coordinates:
                    if name in generalized:
                        nodes.append(builder.coordinate(generalized[name]))
                    else:
                        nodes.append(builder.compile(model.dependent_coordinate(name).function, COORDINATES))
                top[i] = builder.compile(path.length_function, tuple(nodes))
            except (Unflattenable, KeyError) as err:
                raise UnsupportedPathError(f"{where}: its FunctionBasedPath cannot be compiled ({err})") from None
            if len(builder.externals) > n_ext:
                raise UnsupportedPathError(f"{where}: its FunctionBasedPath has a function evaluated in Python "
                                           f"({type(builder.externals[n_ext]).__name__})")
        ints, flts = node_program_arrays(builder, nq)
        nn = len(builder.nodes)
        self.args = (ints, flts, np.zeros((0, 1 + nq + nq * nq)), np.array(top, dtype=np.int64), np.zeros(nn),
                     np.zeros((nn, nq)), np.zeros((nn, nq, 0)), np.zeros((nq, 0)), K.has_chains(ints))

    def work_copy(self) -> tuple:
        """``args`` with work arrays of its own (for a second user of the program)."""
        a = self.args
        return (*a[:4], a[4].copy(), a[5].copy(), *a[6:])


class _CompiledPaths:
    """L and R of the muscles at one configuration, without the per-call checks of ``lengths_and_moment_arms``:
    geometric units through the package's compiled path kernel (``wrapping._kernels_muscles``), the joint variables
    from one compiled program of every joint (the massless frames of moving path points included, which the
    compiled dynamics model leaves out), any joint it folds evaluated in Python; function-based units through
    their compiled program (:class:`_FunctionPaths`).  Columns in the order of ``muscles``."""

    def __init__(self, model: Model, muscles: Sequence[str], wrapping: bool, opensim_compat: bool):
        from types import SimpleNamespace
        from osim_emb.core.compiled import CompiledModel, compiled_model
        from osim_emb.paths.function_based_path import split_units
        from osim_emb.paths.geometry import _jit_plan, _muscle_list
        from osim_emb.paths.wrapping._kernels_muscles import lengths_moment_arms_kernel
        units = _muscle_list(model, list(muscles))
        fb, geometric = split_units(units)
        self.fb_cols, self.geo_cols = np.array(fb, dtype=np.int64), np.array(geometric, dtype=np.int64)
        # both raise UnsupportedPathError (naming the unit) for a unit they cannot take
        self.function_based = _FunctionPaths(model, [units[k] for k in fb]) if fb else None
        self.plan = _jit_plan(model, [units[k].name for k in geometric], wrapping) if geometric else None
        self.kernel = lengths_moment_arms_kernel
        self.model, self.cm = model, compiled_model(model)  # the dynamics
        # adapter: CompiledModel compiles its argument's dynamics_model; given the full model it compiles the
        # joint variable of every frame (the massless ones add no mass, so nothing else changes)
        self.jv = (self.cm if model.dynamics_model is model
                   else CompiledModel(SimpleNamespace(dynamics_model=model, name=model.name)))
        names = {n: k for k, n in enumerate(self.jv.frame_names)}
        self.compiled = [(i, names[j.name]) for i, j in enumerate(model.joints, start=1) if j.name in names]
        self.python = [(i, j.variable) for i, j in enumerate(model.joints, start=1) if j.name not in names]
        nq, nf = model.n_q, model.n_frames
        self.n_q, self.n_f, self.n_m = nq, nf, len(units)
        self.ci = np.array([c[0] for c in self.compiled], dtype=np.intp)
        self.ck = np.array([c[1] for c in self.compiled], dtype=np.intp)
        self.opensim_compat, self.wrapping = bool(opensim_compat), bool(wrapping)
        self._zero_qd = np.zeros((1, nq))
        self.nodes = self.jv._frame_nodes[self.ck - 1] if self.ck.size else self.ck
        self._val, self._grad = np.zeros((1, nf)), np.zeros((1, nf, nq))
        if self.plan is None:
            return
        self._pa, self._args1, self._args2, self._out = self.kernel_arrays(self.plan, len(geometric))

    def uniform_arrays(self) -> tuple:
        """(path plan, point activity, kernel argument tuples, kernel outputs, function-based program) with an
        empty plan or program standing in where the model has no such units: the compiled integrators' one
        layout (:func:`osim_emb.simulation.muscle_driven_jit.compiled_plan`)."""
        from osim_emb.paths.geometry import _jit_plan
        if self.plan is not None:
            plan, arrays = self.plan, (self._pa, self._args1, self._args2, self._out)
        else:
            plan = _jit_plan(self.model, [], self.wrapping)
            arrays = self.kernel_arrays(plan, 0)
        fb = (self.function_based.work_copy() if self.function_based is not None
              else _FunctionPaths(self.model, []).args)
        return (plan, *arrays, fb)

    def kernel_arrays(self, plan, n_units: int) -> tuple:
        """(point activity, the path kernel's two argument tuples, its output arrays) of a path plan."""
        mp, mw = plan.path[0], plan.path[1]
        pt_body, pt_loc = plan.points
        pa = np.ones((1, pt_body.shape[0]), dtype=np.bool_)
        args1 = (*plan.kin, *plan.bodies, pt_body, pt_loc)
        args2 = (*plan.wraps, *plan.frames, *plan.path, self.opensim_compat, True)
        out = (np.empty((1, mp[-1], 3)), np.empty((1, mw[-1], 4, 4)), np.zeros((1, n_units)),
               np.zeros((1, self.n_q, n_units)))
        return pa, args1, args2, out

    def _geometric(self, q2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        from osim_emb.core import compiled_kernels as K
        val, grad = self._val, self._grad
        cm = self.jv
        if self.ci.size:
            ext = cm.external_jets(q2) if cm.externals else cm._no_ext
            v, g, _ = K.program(cm.ints, cm.flts, ext, q2, self._zero_qd, cm.chains)
            val[0, self.ci] = v[0, self.nodes]
            grad[0, self.ci] = g[0, self.nodes]
        cache: dict = {}
        for i, f in self.python:
            jet = f.evaluate(q2, 1, cache)
            val[:, i] = jet.value
            grad[:, i] = jet.gradient
        pa = self._pa
        for k, cond, (lo, hi) in self.plan.conditional:
            v = cond.evaluate(q2, 0, cache).value
            pa[:, k] = (v >= lo - 1e-5) & (v <= hi + 1e-5)
        out = self._out
        out[2].fill(0.0)
        out[3].fill(0.0)
        self.kernel(val, grad, *self._args1, pa, *self._args2, 0, 1, *out)
        return out[2][0], out[3][0]

    def __call__(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q2 = np.array(q, dtype=float).reshape(1, self.n_q)
        length, r = np.empty(self.n_m), np.empty((self.n_q, self.n_m))
        if self.plan is not None:
            length[self.geo_cols], r[:, self.geo_cols] = self._geometric(q2)
        if self.function_based is not None:
            from osim_emb.simulation.muscle_driven_jit import function_path_lengths
            function_path_lengths(q2[0], self.function_based.args, self.fb_cols, length, r)
        return length, r


class MuscleDrivenSystem:
    """The ODE y = [q, q̇, a, l_f] of a model driven by muscle excitations (see the module docstring).

    ``excitations`` maps muscle names to a constant or a function of time (others get ``default_excitation``,
    OpenSim's default control for a muscle without a controller is 0, i.e. activation decays to its minimum);
    ``controls`` maps CoordinateActuator names likewise (default 0).  ``coordinate_forces`` is (limit forces,
    actuators), read from the model's document by default.  With numba (``compiled``) the paths go through the
    package's compiled path kernel and the muscle equations through one compiled loop; otherwise numpy (the
    two agree to round-off, tests/test_muscle_driven.py).  ``with_muscles=False`` leaves the model's muscles and
    path actuators out (y = [q, q̇]: the passive system :func:`osim_emb.simulate` runs); ``path_forces`` keeps or
    leaves out its PathSprings, Ligaments and Blankevoort1991Ligaments (default: ``with_muscles``);
    ``report=False`` does not warn about what the system leaves out (the caller says it).
    """

    def __init__(self, model: Model, excitations: Mapping[str, Excitation] | None = None, *,
                 controls: Mapping[str, Excitation] | None = None, default_excitation: float = 0.0,
                 coordinate_forces: tuple[Sequence[CoordinateLimitForce], Sequence[CoordinateActuator]] | None = None,
                 opensim_compat: bool = True, wrapping: bool = True, compiled: bool = True, external_loads=None,
                 model_forces: bool = True, with_muscles: bool = True, path_forces: bool | None = None,
                 report: bool = True):
        from osim_emb.simulation.force_elements import NO_FORCE_ELEMENTS, model_force_elements, warn_unapplied
        self.model = model
        self.external_loads = external_loads  # io.external_loads.ExternalLoads applied along the run (SciPy's route)
        #: the model's contact, springs, bushings, prescribed forces (simulation.force_elements)
        self.force_elements = model_force_elements(model) if model_forces else NO_FORCE_ELEMENTS
        if report:
            warn_unapplied(self.force_elements, f"muscle-driven simulation of {model.name}")
        applied_elements = {law.name for law in self.force_elements.laws} | {
            u.name for u in self.force_elements.unapplied}  # the latter warned with their reasons
        self.opensim_compat, self.wrapping = opensim_compat, wrapping
        muscles, skipped, path_actuators, stateless, disabled = [], [], [], [], []
        not_imported = force_models_not_imported(model) if with_muscles else {}  # a supported type, bad values
        for mt in model.muscles if with_muscles else ():
            p = mt.parameters
            if p is None:  # passive path forces (below), or a type whose force model is not read
                if mt.type_name not in PASSIVE_PATH_FORCES:
                    if mt.name in not_imported:
                        raise MuscleSimulationError(f"{not_imported[mt.name]}: a muscle-driven simulation needs it")
                    skipped.append((mt.type_name, mt.name))
                continue
            if not p.applies_force:
                disabled.append(mt.name)
                continue
            if isinstance(p, RigidPathActuator):  # tension = control x optimal force along its path
                path_actuators.append((mt.name, mt.type_name, p.optimal_force))
                continue
            if isinstance(p, RigidTendonMuscle):  # no states: a tension of length, speed and excitation
                stateless.append(p)
                continue
            if not isinstance(p, (Thelen2003Muscle, Millard2012EquilibriumMuscle, Schutte1993Muscle,
                                  DeGrooteFregly2016Muscle)):
                skipped.append((mt.type_name, mt.name))
                continue
            if isinstance(p, DeGrooteFregly2016Muscle):
                if p.tendon_compliance_dynamics_mode != "explicit" and not p.ignore_tendon_compliance:
                    raise MuscleSimulationError(f"muscle {mt.name!r}: DeGrooteFregly2016Muscle with tendon_compliance_"
                                                "dynamics_mode 'implicit' (its tendon-force rate is a variable an "
                                                "optimal-control solver sets) cannot be simulated forward; use "
                                                "'explicit' or ignore_tendon_compliance")
                muscles.append(mt)
                continue
            millard = isinstance(p, Millard2012EquilibriumMuscle)
            if (p.ignore_tendon_compliance or p.ignore_activation_dynamics) and not millard:
                raise MuscleSimulationError(f"muscle {mt.name!r}: ignore_tendon_compliance / ignore_activation_"
                                            "dynamics are supported for Millard2012EquilibriumMuscle, not "
                                            f"{mt.type_name}")
            if millard and not p.uses_damping and not p.ignore_tendon_compliance:
                raise MuscleSimulationError(f"muscle {mt.name!r}: Millard2012EquilibriumMuscle without fibre damping "
                                            "(fiber_damping < 0.001) is not supported")
            muscles.append(mt)
        if skipped:
            by_type: dict[str, list[str]] = {}
            for kind, name in skipped:
                by_type.setdefault(kind, []).append(name)
            has = "; ".join(f"{len(v)} {k} ({', '.join(v[:6])}{', ...' if len(v) > 6 else ''})"
                            for k, v in by_type.items())
            raise MuscleSimulationError("muscle-driven simulation supports Thelen2003Muscle, Millard2012Equilibrium"
                                        "Muscle, Schutte1993Muscle_Deprecated, DeGrooteFregly2016Muscle and "
                                        "RigidTendonMuscle; model "
                                        f"{model.name!r} has {has}")
        if disabled and report:  # OpenSim integrates their states but applies no force of theirs
            log.warning("muscle-driven simulation of %s leaves out %d unit(s) whose appliesForce is false (OpenSim "
                        "applies no force of theirs): %s", model.name, len(disabled),
                        ", ".join(disabled[:8]) + (", ..." if len(disabled) > 8 else ""))
        self.muscles = tuple(muscles)
        self.muscle_names = tuple(m.name for m in muscles)
        # rigid tendon (no fibre-length state: its entry of y stays constant) and activation = clamped excitation
        # (no activation state: likewise), as OpenSim's Millard2012EquilibriumMuscle with those flags
        # DeGrooteFregly2016Muscles: their own activation dynamics, a rigid tendon or the fibre length as
        # the state (OpenSim's is the normalized tendon force: the same ODE in other coordinates)
        self._degroote = np.array([isinstance(m.parameters, DeGrooteFregly2016Muscle) for m in muscles], dtype=bool)
        self._millard_rigid = (np.array([m.parameters.ignore_tendon_compliance for m in muscles], dtype=bool)
                               & ~self._degroote)
        self._direct = np.array([m.parameters.ignore_activation_dynamics for m in muscles], dtype=bool)
        # the activations' lower bounds (:meth:`activations`): none for Schutte's state and DeGroote's
        self._clamp_lo = np.array([-np.inf if isinstance(m.parameters, (Schutte1993Muscle, DeGrooteFregly2016Muscle))
                                   else min(max(m.parameters.minimum_activation, 0.0), 1.0) for m in muscles])
        self._thelen = np.array([isinstance(m.parameters, Thelen2003Muscle) for m in muscles], dtype=bool)
        self._schutte = np.array([isinstance(m.parameters, Schutte1993Muscle) for m in muscles], dtype=bool)
        self._millard = ~(self._thelen | self._schutte | self._millard_rigid | self._degroote)
        self.schutte = _SchutteGroup([m.parameters for m in muscles if isinstance(m.parameters, Schutte1993Muscle)])
        self.params = _ThelenArrays([m.parameters for m in muscles if isinstance(m.parameters, Thelen2003Muscle)])
        self.millard = _MillardGroup([m.parameters for m, k in zip(muscles, self._millard) if k])
        self.millard_rigid = _MillardGroup([m.parameters for m, k in zip(muscles, self._millard_rigid) if k])
        # RigidTendonMuscles: path forces whose tension follows from L, dL/dt and the excitation (columns after
        # the driven PathActuators')
        self.rigid_tendon_muscles = tuple(stateless)
        excitations = dict(excitations or {})
        every = [*self.muscle_names, *(m.name for m in stateless)]
        unknown = sorted(set(excitations) - set(every) - set(disabled))
        if set(excitations) & set(disabled):
            log.warning("excitations of %s ignored: appliesForce false", ", ".join(sorted(set(excitations) & set(disabled))))
        if unknown:
            raise MuscleSimulationError(f"excitation for unknown muscle(s) {', '.join(unknown)}; "
                                        f"muscles: {', '.join(every)}")
        self._excitation = [excitations.get(n, default_excitation) for n in self.muscle_names]
        self._stateless_excitation = [excitations.get(m.name, default_excitation) for m in stateless]
        _say_excitations_outside_unit_interval({"the default excitation": default_excitation,
                                                **{n: e for n, e in excitations.items() if n in every}})
        limits, actuators = coordinate_forces_from_model(model) if coordinate_forces is None else coordinate_forces
        # the model's forces without a path of any kind (GeometryPath, FunctionBasedPath, Scholz2015GeometryPath)
        self._passive = passive_path_forces_from_model(model) if (with_muscles if path_forces is None
                                                                  else path_forces) else ()
        controls = dict(controls or {})
        # path actuators with a control here (tension = control x optimal force); the others apply no force
        self._path_actuators = tuple((n, f) for n, _, f in path_actuators if n in controls)
        self._path_controls = [controls[n] for n, _ in self._path_actuators]
        other: dict[str, list[str]] = {}
        passive: dict[str, list[str]] = {}
        doc = model.extras.get("document")
        applied_in_file = {f.name for f in (doc.forces if doc is not None else ())
                           if f.type in UNAPPLIED_PASSIVE_FORCES and element_applies_force(f.element, f.name)}
        for name, kind in [(n, k) for n, k, _ in path_actuators if n not in controls] + [
                (n, k) for n, k in model.extras.get("forces", ()) if k not in ("CoordinateLimitForce",
                                                                               "CoordinateActuator")]:
            if kind in UNAPPLIED_PASSIVE_FORCES:
                if name in applied_in_file and name not in applied_elements:
                    passive.setdefault(kind, []).append(name)
            else:
                other.setdefault(kind, []).append(name)

        def listed(by_kind):
            return "; ".join(f"{len(v)} {k} ({', '.join(v[:6])}{', ...' if len(v) > 6 else ''})"
                             for k, v in by_kind.items())
        if other and report:
            log.warning("muscle-driven simulation of %s leaves out %s (actuators without a controller here: "
                        "control 0, no force)", model.name, listed(other))
        if passive and report:
            log.warning("muscle-driven simulation of %s does not apply %s: OpenSim's Manager applies them, so the "
                        "trajectories differ from OpenSim's wherever they act",
                        model.name, listed(passive))
        #: names of the passive forces this simulation leaves out (OpenSim applies them)
        self.unapplied_passive_forces = tuple(n for v in passive.values() for n in v)
        if model.extras.get("controllers") and report:
            log.warning("muscle-driven simulation of %s does not apply the model's controllers (%s): the excitations "
                        "and controls given here drive its actuators (OpenSim's Manager would add the controllers' "
                        "controls)", model.name, ", ".join(n if n == k else f"{n} ({k})" for n, k in model.extras["controllers"]))
        self.limit_forces, self.actuators = tuple(limits), tuple(actuators)
        unknown = sorted(set(controls) - {a.name for a in self.actuators} - {n for n, _, _ in path_actuators})
        if unknown:
            raise MuscleSimulationError(f"control for unknown actuator(s) {', '.join(unknown)} (controls drive the "
                                        "model's CoordinateActuators and PathActuators)")
        self._controls = [controls.get(a.name, 0.0) for a in self.actuators]
        self.n_q, self.n_m = model.n_q, len(self.muscles)
        self._tau = np.zeros(self.n_q)
        self._mech = dyn.ode_rhs(model, lambda t, q, qd: self._tau)
        self._paths = None
        # the path units the compiled route evaluates: the muscles', then the driven PathActuators' and the
        # PathSprings' and Ligaments' (columns n_m.. of its L and R)
        self.path_force_names = ([n for n, _ in self._path_actuators] + [m.name for m in stateless]
                                 + [f.name for f in self._passive])
        units = list(self.muscle_names) + self.path_force_names
        # a model without path units runs compiled too (no paths: contact, springs, limits, actuators)
        self._paths_refused = ""
        if compiled and use_jit():  # the paths compiled whatever the muscle model
            from osim_emb.paths.geometry import _NotCompilable
            try:
                self._paths = _CompiledPaths(model, units, wrapping, opensim_compat)
            except _NotCompilable as err:
                self._paths_refused = str(err)
        # the compiled muscle loops (any mix of Thelen2003, Millard2012 and Schutte1993 with compilable curves)
        self._muscles_refused = "a Schutte1993Muscle_Deprecated curve is not compilable"
        self.compiled = bool(self._paths is not None and (not self._schutte.any()
                                                          or self.schutte.curve_ints is not None))
        self.groups = self._muscle_groups() if self.compiled else None

    def _muscle_groups(self):
        """The ``groups`` argument of :func:`osim_emb.muscles.kernels.muscle_derivatives`."""
        th, sc, mi, mr, dg = MK.empty_groups()
        index = lambda mask: np.flatnonzero(mask).astype(np.int64)  # noqa: E731
        if self._thelen.any():
            th = (index(self._thelen), self.params.packed)
        if self._schutte.any():
            sg = self.schutte
            sc = (index(self._schutte), sg.packed, sg.curve_index, sg.curve_ints, sg.curve_floats)
        if self._millard.any():
            mi = (index(self._millard), *self.millard.kernel_args)
        if self._millard_rigid.any():
            mr = (index(self._millard_rigid), *self.millard_rigid.kernel_args)
        if self._degroote.any():
            dg = (index(self._degroote),
                  MK.degroote_parameters([m.parameters for m, k in zip(self.muscles, self._degroote) if k]))
        return th, sc, mi, mr, dg

    # -- inputs -----------------------------------------------------------------------------------
    @staticmethod
    def _value(f: Excitation, t: float) -> float:
        return float(f(t)) if callable(f) else float(f)

    def excitations(self, t: float) -> np.ndarray:
        return np.array([self._value(f, t) for f in self._excitation])

    def path_lengths(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """L (M,) and R (n_q, M) at one configuration."""
        if not self.n_m:
            return np.zeros(0), np.zeros((self.n_q, 0))
        if self._paths is not None:
            length, r = self._paths(q)
            return length[:self.n_m], r[:, :self.n_m]
        from osim_emb.paths.geometry import lengths_and_moment_arms
        length, r = lengths_and_moment_arms(self.model, q[None], list(self.muscle_names), wrapping=self.wrapping,
                                            opensim_compat=self.opensim_compat, allow_out_of_range=True)
        return length[0], r[0]

    def generalized_forces(self, t: float, q: np.ndarray, qd: np.ndarray, tendon_force: np.ndarray,
                           r: np.ndarray) -> np.ndarray:
        tau = r @ tendon_force + self.path_force_generalized_forces(t, q, qd)
        for f in self.limit_forces:
            c, cd, g = coordinate_state(f, q, qd)
            _add_coordinate_force(tau, f, f.generalized_force(c, cd), g)
        for a, c in zip(self.actuators, self._controls):
            _add_coordinate_force(tau, a, self._value(c, t) * a.optimal_force, coordinate_state(a, q, qd)[2])
        if self.external_loads is not None:
            from osim_emb.core.dynamics import external_load_forces
            tau = tau + external_load_forces(self.model, q[None, :], self.external_loads.at([t]))[0]
        if self.force_elements:
            from osim_emb.simulation.force_elements import force_element_forces
            tau = tau + force_element_forces(self.model, self.force_elements, [t], q[None, :], qd[None, :])[0]
        return tau

    def path_force_generalized_forces(self, t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        """R(q) T (n_q,) of the path forces without muscle states (:meth:`path_force_tensions`; zero without any)."""
        if not self.path_force_names:
            return np.zeros(self.n_q)
        tension, rp = self.path_force_tensions(t, q, qd)
        return rp @ tension

    def path_force_tensions(self, t: float, q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tensions [N] of the path forces without muscle states (``path_force_names``) and their moment arms
        (n_q, E), by the numpy route: a PathActuator's control x optimal force (no clamping, as OpenSim), a
        RigidTendonMuscle's :meth:`~osim_emb.muscles.hill.RigidTendonMuscle.tendon_force`, a PathSpring's or
        Ligament's :meth:`PassivePathForce.tension`."""
        from osim_emb.paths.geometry import lengths_and_moment_arms
        lp, rp = lengths_and_moment_arms(self.model, q[None], self.path_force_names, wrapping=self.wrapping,
                                         opensim_compat=self.opensim_compat, allow_out_of_range=True)
        length, speed = lp[0], -(rp[0].T @ qd)
        tension = [self._value(c, t) * f for c, (_, f) in zip(self._path_controls, self._path_actuators)]
        for m, u in zip(self.rigid_tendon_muscles, self._stateless_excitation):
            k = len(tension)
            tension.append(float(m.tendon_force(self._value(u, t), length[k], speed[k])))
        k = len(tension)
        tension += [f.tension(length[k + i], speed[k + i]) for i, f in enumerate(self._passive)]
        return np.asarray(tension, dtype=float), rp[0]

    def rigid_tendon_muscle_outputs(self, t: float, q: np.ndarray, qd: np.ndarray) -> np.ndarray:
        """(activation, fibre length [m], tendon force [N]) of each RigidTendonMuscle at one state: (3, K)."""
        if not self.rigid_tendon_muscles:
            return np.zeros((3, 0))
        from osim_emb.paths.geometry import lengths_and_moment_arms
        names = [m.name for m in self.rigid_tendon_muscles]
        lp, rp = lengths_and_moment_arms(self.model, q[None], names, wrapping=self.wrapping,
                                         opensim_compat=self.opensim_compat, allow_out_of_range=True)
        speed = -(rp[0].T @ qd)
        out = np.empty((3, len(names)))
        for k, (m, u) in enumerate(zip(self.rigid_tendon_muscles, self._stateless_excitation)):
            a = self._value(u, t)
            r = m.rigid_tendon(lp[0, k], speed[k])
            out[:, k] = a, float(r.fiber_length), float(r.tendon_force(a))
        return out

    # -- the right-hand side -------------------------------------------------------------------------
    def split(self, y: np.ndarray):
        n, m = self.n_q, self.n_m
        return y[:n], y[n:2 * n], y[2 * n:2 * n + m], y[2 * n + m:]

    def rhs(self, t: float, y: np.ndarray) -> np.ndarray:
        """SciPy's ``fun(t, y)``: ẏ = [q̇, q̈, ȧ, l̇_f]."""
        q, qd, a, lf = self.split(y)
        length, r = self.path_lengths(q)
        u = self.excitations(t)
        if self.compiled:
            force, dlf, adot = np.empty(self.n_m), np.empty(self.n_m), np.empty(self.n_m)
            MK.muscle_derivatives(self.groups, length, -(r.T @ qd), np.ascontiguousarray(a), np.ascontiguousarray(lf),
                                  u, force, dlf, adot)
        else:
            force, dlf, adot = self._muscle_derivatives(length, a, lf, u, -(r.T @ qd))
        self._tau = self.generalized_forces(t, q, qd, force, r)
        mech = self._mech(t, y[:2 * self.n_q])
        return np.concatenate([mech, adot, dlf])

    __call__ = rhs

    def activations(self, a: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The activations the muscles use, which OpenSim's getActivation reports: Thelen's and Millard's state
        clamped to [minimum_activation, 1] (clampActivation), or for muscles without activation dynamics the
        excitation so clamped; Schutte's state as it is."""
        a = np.array(a, dtype=float)
        a[self._direct] = np.asarray(u, dtype=float)[self._direct]
        clamped = np.isfinite(self._clamp_lo)
        a[clamped] = np.minimum(np.maximum(a[clamped], self._clamp_lo[clamped]), 1.0)
        return a

    def _rigid_tendons(self) -> np.ndarray:
        """Muscles whose tendon is rigid (their fibre-length entry of y stays constant)."""
        return np.array([m.parameters.ignore_tendon_compliance for m in self.muscles], dtype=bool)

    def fiber_lengths(self, length: np.ndarray, speed: np.ndarray, lf: np.ndarray) -> np.ndarray:
        """The fibre lengths: the state, or for rigid-tendon muscles the length the path gives them."""
        rigid = self._rigid_tendons()
        if not rigid.any():
            return lf
        lf = np.array(lf, dtype=float)
        for i in np.flatnonzero(rigid):
            lf[i] = float(self.muscles[i].parameters.rigid_tendon(length[i], speed[i]).fiber_length)
        return lf

    def _muscle_derivatives(self, length, a, lf, u, speed):
        th, mi, sc = self._thelen, self._millard, self._schutte
        force, dlf, adot = np.empty(self.n_m), np.empty(self.n_m), np.empty(self.n_m)
        a = self.activations(a, u)
        if th.any():
            force[th], dlf[th] = self.params.state_derivatives(length[th], a[th], lf[th])
            adot[th] = self.params.activation_rate(a[th], u[th])
        if mi.any():
            force[mi], dlf[mi] = self.millard.state_derivatives(length[mi], a[mi], lf[mi])
            adot[mi] = self.millard.activation_rate(a[mi], u[mi])
        if sc.any():
            force[sc], dlf[sc] = self.schutte.state_derivatives(length[sc], speed[sc], a[sc], lf[sc])
            adot[sc] = self.schutte.activation_rate(a[sc], u[sc])
        for i in np.flatnonzero(self._millard_rigid):
            force[i] = float(self.muscles[i].parameters.tendon_force(a[i], length[i], speed[i]))
            dlf[i] = 0.0
        for i in np.flatnonzero(self._millard_rigid & ~self._direct):  # the activation dynamics of the compiled loops
            p = self.muscles[i].parameters
            adot[i] = MK._activation_rate(a[i], u[i], min(max(p.minimum_activation, 0.0), 1.0),
                                          p.activation_time_constant, p.deactivation_time_constant)
        for i in np.flatnonzero(self._degroote):
            p = self.muscles[i].parameters
            if p.ignore_tendon_compliance:
                force[i], dlf[i] = float(p.tendon_force(a[i], length[i], speed[i])), 0.0
            else:
                force[i], dlf[i] = (float(x) for x in p.compliant_state(a[i], length[i], lf[i]))
            adot[i] = float(p.activation_rate(a[i], u[i]))
        adot[self._direct] = 0.0
        return force, dlf, adot

    def tendon_forces(self, y: np.ndarray, t: float = 0.0) -> np.ndarray:
        """Tendon forces [N] at a state and time (the time sets the excitation of muscles without activation
        dynamics; the same muscle loops as :meth:`rhs`)."""
        q, qd, a, lf = self.split(y)
        length, r = self.path_lengths(q)
        if not self.compiled:
            return self._muscle_derivatives(length, a, lf, self.excitations(t), -(r.T @ qd))[0]
        force, dlf, adot = np.empty(self.n_m), np.empty(self.n_m), np.empty(self.n_m)
        MK.muscle_derivatives(self.groups, length, -(r.T @ qd), np.ascontiguousarray(a), np.ascontiguousarray(lf),
                              self.excitations(t), force, dlf, adot)
        return force

    def initial_state(self, q0: Any = None, qdot0: Any = None, activations: Any = None) -> np.ndarray:
        """[q0, q̇0, a0, l_f0] with OpenSim's equilibrium fibre lengths (activations default to each muscle's
        ``default_activation``; 0 for Schutte1993Muscle_Deprecated, which has no such property in OpenSim)."""
        q0 = self.model.default_q if q0 is None else np.asarray(q0, dtype=float)
        qdot0 = self.model.default_qdot if qdot0 is None else np.asarray(qdot0, dtype=float)
        default = [0.0 if isinstance(m.parameters, Schutte1993Muscle) else m.parameters.default_activation
                   for m in self.muscles]
        if activations is None:
            a0 = np.array(default, dtype=float)
        elif isinstance(activations, Mapping):
            a0 = np.array([activations.get(m.name, d) for m, d in zip(self.muscles, default)], float)
        else:
            a0 = np.broadcast_to(np.asarray(activations, dtype=float), (self.n_m,)).copy()
        length, r = self.path_lengths(q0)
        speed = -(r.T @ qdot0)
        lf0, k_millard = [], 0
        used = self.activations(a0, self.excitations(0.0))  # without activation dynamics: the excitation at 0
        for m, a, lm, v, rigid in zip(self.muscles, used, length, speed, self._rigid_tendons()):
            if rigid:
                lf0.append(float(m.parameters.rigid_tendon(lm, v).fiber_length))
            elif isinstance(m.parameters, DeGrooteFregly2016Muscle):
                try:
                    lf0.append(m.parameters.equilibrium_fiber_length(float(a), float(lm), float(v)))
                except MuscleModelError as err:  # OpenSim's equilibrateMuscles fails the same way
                    raise MuscleSimulationError(f"no initial state: {err}") from None
            elif isinstance(m.parameters, Thelen2003Muscle):
                lf0.append(thelen_initial_fiber_length(m.parameters, float(a), float(lm), float(v)))
            elif isinstance(m.parameters, Schutte1993Muscle):
                lf0.append(schutte_initial_fiber_length(m.parameters, float(a), float(lm)))
            else:
                lf0.append(self.millard.initial_fiber_length(k_millard, float(a), float(lm)))
                k_millard += 1
        lf0 = np.array(lf0)
        return np.concatenate([q0, qdot0, a0, lf0])

    def state_names(self) -> list[str]:
        names = self.model.coordinate_names
        return ([*names, *[f"{n}_u" for n in names], *[f"{m}_activation" for m in self.muscle_names],
                 *[f"{m}_fiber_length" for m in self.muscle_names]])


@dataclass
class _Solution:
    t: np.ndarray
    y: np.ndarray
    nfev: int
    method: str = ""
    counts: dict = field(default_factory=dict)


#: SciPy's methods that use a Jacobian (given the compiled one where the model has a compiled plan)
IMPLICIT_METHODS = ("BDF", "Radau", "LSODA")


def excitation_bounds(excitation: Excitation) -> tuple[float, float] | None:
    """(least, greatest) value over all times of a constant or an :class:`ExcitationSpec` (a step's two levels, a
    sine's offset -/+ its amplitude); None for a Python function of time."""
    if isinstance(excitation, ExcitationSpec):
        v = excitation.values
        if excitation.kind == "constant":
            return v[0], v[0]
        if excitation.kind == "step":
            return min(v[2], v[3]), max(v[2], v[3])
        return v[3] - abs(v[0]), v[3] + abs(v[0])
    if callable(excitation):
        return None
    value = float(excitation)
    return value, value


def _say_excitations_outside_unit_interval(excitations: Mapping[str, Excitation]) -> None:
    """Refuse an excitation that is not finite; warn, once for all, where one leaves [0, 1] (it is applied as
    given, as OpenSim's Manager applies a control: the activation follows it past 1 or below its minimum and each
    muscle model clamps the activation it uses)."""
    outside = []
    for name, excitation in excitations.items():
        bounds = excitation_bounds(excitation)
        if bounds is None:
            continue
        if not all(math.isfinite(b) for b in bounds):
            raise MuscleSimulationError(f"excitation of {name}: {excitation!r} is not finite")
        if bounds[0] < 0.0 or bounds[1] > 1.0:
            outside.append(f"{name} {bounds[0]:g}" if bounds[0] == bounds[1] else f"{name} [{bounds[0]:g}, {bounds[1]:g}]")
    if outside:
        log.warning("excitation outside [0, 1]: %s; applied as given, as OpenSim applies a control (an excitation "
                    "in percent must be divided by 100)", ", ".join(outside))


def simulate_muscles(model: Model, t_end: float, excitations: Mapping[str, Excitation] | None = None, *,
                     q0: Any = None, qdot0: Any = None, activations: Any = None, method: str = "auto",
                     rtol: float = 1e-8, atol: float = 1e-10, n_output: int = 101,
                     t_eval: Sequence[float] | None = None, progress: bool = False, allow_out_of_range: bool = False,
                     **system_options) -> pd.DataFrame:
    """Integrate a muscle-driven model from OpenSim's equilibrium state over [0, t_end].

    A table with ``time`` and one column per state (NAME, NAME_u, MUSCLE_activation, MUSCLE_fiber_length;
    radians, rad/s, metres) and MUSCLE_tendon_force [N]; ``attrs['nfev']`` holds the number of right-hand-side
    evaluations and ``attrs['method']`` the integrator that ran.  The integrator is the Dormand-Prince pair
    (RK45): an explicit method follows the fast fibre transients that OpenSim's (explicit) Runge-Kutta-Merson
    follows; implicit methods (BDF, LSODA) can step over a short transient of a wrapped path and end on another
    trajectory (docs/simulation.md).  ``method="auto"`` (the default) runs it entirely in compiled code,
    ``"RK45-jit"`` (:mod:`osim_emb.simulation.muscle_driven_jit`: SciPy's step control, landing on the output
    times instead of interpolating to them; about 3x faster than SciPy's loop once numba has compiled it, a
    one-time cost of about a minute), where the model allows it (ExcitationSpec excitations, no Python-evaluated
    joint functions, conditional path points linear in q or on a coupled coordinate, FunctionBasedPaths without moment-arm or
    lengthening-speed functions), and SciPy's ``"RK45"`` otherwise (the reason logged
    at INFO).  ``"BDF-jit"`` (:mod:`osim_emb.simulation.muscle_driven_bdf`, same conditions): variable-order
    BDF/NDF compiled, with the structured Jacobian (2 n_q right-hand sides) and an n_q x n_q Newton system;
    for stiff models (many muscles, light segments: fitted MoBL 0.1 s at rtol 1e-7 takes 0.2 s, RK45-jit
    1.6 s).  Any other name is passed to :func:`scipy.integrate.solve_ivp`, with the compiled right-hand side
    (and, for BDF, Radau and LSODA, its structured Jacobian) where the compiled integrators could run the
    model.  ``attrs`` also holds the integrator's counts (``njev``, ``nlu``; BDF-jit: ``steps``,
    ``rejected``).  ``progress``: a progress bar
    (:class:`osim_emb.progress.Progress`) over the output times the integration has passed (the compiled
    integrator: one step, done when it returns).

    Parameters
    ----------
    model : Model
        A model with Thelen2003, Millard2012, Schutte1993 or DeGrooteFregly2016 muscles (and RigidTendonMuscles,
        path actuators and springs).
    t_end : float
        End time, seconds.
    excitations : mapping, optional
        Muscle name -> excitation (a constant in [0, 1], an :class:`ExcitationSpec`, or a function of
        time); others get ``default_excitation`` (0).  Values outside [0, 1] are applied as OpenSim applies
        them (not clamped), with a warning; non-finite ones are refused.
    q0, qdot0 : array_like or dict, optional
        Initial coordinates (rad, m) and speeds (rad/s, m/s), arrays in the model's order or dicts by coordinate
        name (a dict may leave coordinates out: their defaults); default: the model's default values and speeds
        (``default_speed_value``, 0 unless the file sets it),
        OpenSim's default state.  A q0 (or default) outside the coordinate ranges is refused, as in
        :func:`osim_emb.simulate`, unless ``allow_out_of_range``.
    activations : array_like, optional
        Initial activations (default: OpenSim's defaults).
    method, rtol, atol, n_output, t_eval
        Integrator, tolerances and output times (seconds), as in :func:`osim_emb.simulate`.
    **system_options
        Passed to :class:`MuscleDrivenSystem` (``wrapping``, ``opensim_compat``, ``controls``, ...).

    Returns
    -------
    pandas.DataFrame
        ``time`` (s); NAME (rad, m), NAME_u (rad/s, m/s: OpenSim's speeds, :mod:`osim_emb.core.speeds`);
        MUSCLE_activation, MUSCLE_fiber_length (m),
        MUSCLE_tendon_force (N); then the dependent coordinates (coupled, locked) as NAME and NAME_u;
        ``attrs['nfev']``, ``attrs['method']``.

    Examples
    --------
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> out = oe.simulate_muscles(model, 0.002, {"DELT1": 0.5}, n_output=2, wrapping=False)
    >>> out.shape  # 3 coordinates and speeds, 14 muscles x 3, 12 dependent coordinates and speeds
    (2, 73)
    >>> out.filter(like="DELT1").columns.tolist()
    ['DELT1_activation', 'DELT1_fiber_length', 'DELT1_tendon_force']
    >>> bool((out.filter(like="_tendon_force") >= 0).all().all())
    True
    """
    te = np.linspace(0.0, t_end, n_output) if t_eval is None else np.asarray(t_eval, dtype=float)
    if not (te.ndim == 1 and te.size and np.all(np.isfinite(te)) and te[0] >= 0.0 and te[-1] <= t_end
            and np.all(np.diff(te) > 0)):
        raise ValueError(f"t_eval must be output times (seconds) that increase strictly within [0, t_end = {t_end:g}]"
                         f", got {te}")
    q0 = initial_configuration(model, q0, allow_out_of_range=allow_out_of_range)
    qdot0 = initial_rates(model, qdot0)
    system = MuscleDrivenSystem(model, excitations, **system_options)
    if system.external_loads is not None:
        system.external_loads.at([0.0, t_end])  # refused here, naming the file, when the data do not cover the run
    y0 = system.initial_state(q0, qdot0, activations)
    sol = integrate_system(system, y0, te, method=method, rtol=rtol, atol=atol, progress=progress,
                           t_span=(0.0, t_end))
    method = sol.method
    forces = np.array([system.tendon_forces(sol.y[:, i], sol.t[i])
                       for i in range(sol.y.shape[1])]).reshape(len(sol.t), -1)
    n, m = system.n_q, system.n_m
    for i, t in enumerate(sol.t):  # the activations and fibre lengths the muscles use (OpenSim's getters)
        q, qd, a, lf = system.split(sol.y[:, i])
        sol.y[2 * n:2 * n + m, i] = system.activations(a, system.excitations(t))
        if system._rigid_tendons().any():
            length, r = system.path_lengths(q)
            sol.y[2 * n + m:, i] = system.fiber_lengths(length, -(r.T @ qd), lf)
    columns = ["time", *system.state_names(), *[f"{n}_tendon_force" for n in system.muscle_names]]
    blocks = [sol.t, sol.y.T, forces]
    if system.rigid_tendon_muscles:  # stateless muscles: what OpenSim's getters report, from the path
        extra = np.array([system.rigid_tendon_muscle_outputs(t, *system.split(sol.y[:, i])[:2])
                          for i, t in enumerate(sol.t)])  # (T, 3, K)
        names = [m.name for m in system.rigid_tendon_muscles]
        for j, what in enumerate(("activation", "fiber_length", "tendon_force")):
            blocks.append(extra[:, j, :])
            columns += [f"{n}_{what}" for n in names]
    dependent = dependent_coordinate_columns(model, sol.y[:n].T, sol.y[n:2 * n].T)
    blocks += list(dependent.values())
    columns += list(dependent)
    out = pd.DataFrame(np.column_stack(blocks), columns=columns)  # one block: no consolidation
    for name, u in speed_columns(model, sol.y[:n].T, sol.y[n:2 * n].T).items():  # OpenSim's speeds
        out[name] = u
    out.attrs["nfev"] = sol.nfev
    out.attrs["method"] = method
    out.attrs.update(sol.counts)
    return out


#: the compiled integrators (:mod:`muscle_driven_jit`, :mod:`muscle_driven_bdf`)
COMPILED_METHODS = ("RK45-jit", "BDF-jit")


def integrate_system(system: MuscleDrivenSystem, y0: np.ndarray, t_eval: np.ndarray, *, method: str = "auto",
                     rtol: float = 1e-8, atol: float = 1e-10, progress: bool = False, plan: Any = None,
                     t_span: tuple[float, float] | None = None, max_steps: int | None = None,
                     max_seconds: float | None = None) -> _Solution:
    """The states of ``system`` at ``t_eval`` from y0 at t_eval[0] (what :func:`simulate_muscles` integrates,
    without building the system, its equilibrium or the output table: the part OpenSim's ``Manager.integrate``
    does).  ``method``: "RK45-jit", "BDF-jit", "auto" (RK45-jit where the model has a compiled plan, else SciPy's
    RK45) or a :func:`scipy.integrate.solve_ivp` method; ``plan``: :func:`muscle_driven_jit.compiled_plan`'s,
    if already built; ``t_span``: the interval (default t_eval's first and last; the compiled integrators start
    at t_span[0] and report only t_eval); ``max_steps`` / ``max_seconds``: the compiled integrators stop with
    :class:`~osim_emb.simulation.compiled_runs.IntegrationBudgetExceeded` past that many right-hand sides or seconds of
    wall time.  Returns (t, y (n, T), nfev, method, counts)."""
    from osim_emb.simulation import muscle_driven_jit as jit
    from osim_emb.progress import Progress
    te = np.asarray(t_eval, dtype=float)
    why = ""
    if plan is None:
        plan, why = jit.compiled_plan(system)
    if method == "auto":
        method = "RK45-jit" if plan is not None else "RK45"
        if plan is None:
            log.info("simulate_muscles: SciPy's RK45 (the compiled integrator cannot run this model: %s)", why)
    if method in COMPILED_METHODS and t_span is not None and te.ndim == 1 and te.size and t_span[0] < te[0]:
        # the compiled integrators start at their first output time: start them at t_span[0], drop that row
        sol = integrate_system(system, y0, np.concatenate([[t_span[0]], te]), method=method, rtol=rtol, atol=atol,
                               progress=progress, plan=plan, max_steps=max_steps, max_seconds=max_seconds)
        return _Solution(sol.t[1:], sol.y[:, 1:], sol.nfev, sol.method, sol.counts)
    if method in COMPILED_METHODS:
        if plan is None:
            raise ValueError(f"method {method!r} cannot run this model: {why}")
        if not (math.isfinite(rtol) and rtol > 0 and math.isfinite(atol) and atol > 0):
            raise ValueError(f"method {method!r} needs positive, finite rtol and atol, got {rtol} and {atol}")
        if te.ndim != 1 or te.size == 0 or not np.all(np.isfinite(te)) or np.any(np.diff(te) <= 0):
            raise ValueError(f"method {method!r} needs output times that increase strictly (seconds), got {te}")
        from osim_emb.simulation.compiled_runs import CompiledRun, advance_compiled
        run = CompiledRun(system, method, y0, te, rtol, atol, plan)
        advance_compiled(run, progress, max_steps, max_seconds)
        counts = run.counts
        nfev = counts.pop("nfev")
        return _Solution(te, run.out.T.copy(), nfev, method, counts if method == "BDF-jit" else {})
    # SciPy's methods call the compiled right-hand side where there is one (and, for the implicit ones, its
    # structured Jacobian, one compiled call); otherwise the system's, evaluated from Python
    evaluate = system.rhs if plan is None else (lambda t, y: jit.rhs(system, plan, t, y))
    jac = jit.jacobian if plan is not None and method in IMPLICIT_METHODS else None
    with Progress(f"simulating {te[-1]:g} s", len(te), enabled=progress, unit="output time") as bar:
        sol = solve_ivp(bar.following(evaluate, te), t_span or (te[0], te[-1]), y0, method=method, rtol=rtol,
                        atol=atol, t_eval=te,
                        **({"jac": lambda t, y: jac(system, plan, t, y)} if jac is not None else {}))
        if sol.success:
            bar.complete()
    if not sol.success:
        raise RuntimeError(f"integration failed: {sol.message}")
    return _Solution(sol.t, sol.y, sol.nfev, method, {"njev": int(sol.njev), "nlu": int(sol.nlu)})
