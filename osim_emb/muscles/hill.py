"""Hill-type musculotendon models as OpenSim 4.6 defines them, batched over states.

Immutable descriptions of OpenSim's ``Thelen2003Muscle``,
``Schutte1993Muscle_Deprecated``, ``Millard2012EquilibriumMuscle``, ``DeGrooteFregly2016Muscle`` and the stateless
``RigidTendonMuscle`` (plus
:class:`RigidPathActuator` for any other path actuator: force = control x
optimal_force); :func:`osim_emb.io.muscle_xml.hill_muscle_from_xml` reads them from .osim XML.

With a **rigid tendon** (tendon length = tendon_slack_length, the default for
muscle force sharing) the fiber state follows from the musculotendon length
l_MT and lengthening speed v_MT alone, and the tendon force is

    F = a * A(l_MT, v_MT) + P(l_MT, v_MT),

A = F_max f_L(l~) f_V(v~) cos(phi) (per unit activation), P = F_max (f_PE(l~)
+ damping terms) cos(phi).  :meth:`HillMuscle.rigid_tendon` returns A and P
separately (with the curve values), so force sharing is a QP in a.

Geometry (constant-thickness pennation, as OpenSim's
``MuscleFixedWidthPennationModel``): h = l_opt sin(phi_opt) is constant,
l_f cos(phi) = l_MT - l_TS, so l_f = sqrt(h^2 + (l_MT - l_TS)^2),
sin(phi) = h / l_f, and the fiber velocity is v_f = v_MT cos(phi).

All lengths in metres, velocities in m/s, forces in newtons; inputs broadcast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, NamedTuple

import numpy as np

from osim_emb.muscles import curves as C
from osim_emb.muscles.kernels import SIGNIFICANT_REAL, SQRT_EPS  # SimTK::SignificantReal, SqrtEps
from osim_emb.muscles.kernels import fixed_width_pennation_array

__all__ = [
    "MuscleModelError",
    "RigidTendonForces",
    "HillMuscle",
    "Thelen2003Muscle",
    "Schutte1993Muscle",
    "Millard2012EquilibriumMuscle",
    "RigidPathActuator",
    "RigidTendonMuscle",
    "muscle_from_dict",
    "deprecated_pennation",
    "MUSCLE_TYPES",
]



class MuscleModelError(ValueError):
    """A muscle description is incomplete, inconsistent or of an unsupported type."""


class RigidTendonForces(NamedTuple):
    """Fiber state and force coefficients of muscles with a rigid tendon (arrays, broadcast shape).

    Tendon force F = activation * active + passive (before any model-specific clamping,
    see :meth:`HillMuscle.tendon_force`).
    """

    fiber_length: np.ndarray
    norm_fiber_length: np.ndarray
    pennation_angle: np.ndarray
    cos_pennation: np.ndarray
    fiber_velocity: np.ndarray
    norm_fiber_velocity: np.ndarray
    active_force_length: np.ndarray  # f_L
    passive_force_length: np.ndarray  # f_PE
    force_velocity: np.ndarray  # f_V (at the activation requested)
    active: np.ndarray  # A [N per unit activation], along the tendon
    passive: np.ndarray  # P [N], along the tendon

    def tendon_force(self, activation) -> np.ndarray:
        """a A + P (no clamping)."""
        return np.asarray(activation, dtype=float) * self.active + self.passive


# =============================================================================
# Base description
# =============================================================================
_REGISTRY: dict[str, type["HillMuscle"]] = {}


def units_applying_force(units) -> list:
    """The path units with a force model whose ``appliesForce`` is true: OpenSim's tools (StaticOptimization removes
    the others from its copy of the model, issue #2438; a Manager applies no force of theirs) leave the others out."""
    return [m for m in units if m.parameters is not None and m.parameters.applies_force]


@dataclass(frozen=True)
class HillMuscle:
    """Properties every OpenSim ``Muscle`` has.  Subclasses add their model's own."""

    name: str
    max_isometric_force: float = 1000.0
    optimal_fiber_length: float = 0.1
    tendon_slack_length: float = 0.2
    pennation_angle_at_optimal: float = 0.0
    max_contraction_velocity: float = 10.0
    min_control: float = 0.0
    max_control: float = 1.0
    applies_force: bool = True
    ignore_tendon_compliance: bool = False
    ignore_activation_dynamics: bool = False

    type_name: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.type_name:
            _REGISTRY[cls.type_name] = cls

    def __post_init__(self):
        for f in fields(self):
            v = getattr(self, f.name)
            if f.type in ("float", float) and not isinstance(v, float):
                object.__setattr__(self, f.name, float(v))
        for prop in ("max_isometric_force", "optimal_fiber_length", "tendon_slack_length",
                     "pennation_angle_at_optimal", "max_contraction_velocity"):
            if not math.isfinite(getattr(self, prop)):
                raise MuscleModelError(f"{self.type_name} {self.name!r}: {prop} must be finite, got "
                                       f"{getattr(self, prop)}")
        if not self.optimal_fiber_length > 0:
            raise MuscleModelError(f"{self.type_name} {self.name!r}: optimal_fiber_length must be > 0")
        if not 0.0 <= self.pennation_angle_at_optimal < math.pi / 2:
            raise MuscleModelError(
                f"{self.type_name} {self.name!r}: pennation_angle_at_optimal must be in [0, pi/2)"
            )

    # -- serialisation -------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type_name}
        for f in fields(self):
            v = getattr(self, f.name)
            if hasattr(v, "to_dict"):
                v = v.to_dict()
            out[f.name] = v
        return out

    @classmethod
    def _from_dict_fields(cls, d: dict[str, Any]) -> dict[str, Any]:
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "HillMuscle":
        d = dict(d)
        t = d.pop("type", cls.type_name)
        target = _REGISTRY.get(t)
        if target is None:
            raise MuscleModelError(f"unknown muscle type {t!r}; known: {sorted(_REGISTRY)}")
        if cls is not HillMuscle and not issubclass(target, cls):
            raise MuscleModelError(f"expected a {cls.type_name} description, got {t!r}")
        return target(**target._from_dict_fields(d))

    # -- geometry ------------------------------------------------------------
    @property
    def parallelogram_height(self) -> float:
        """h = l_opt sin(phi_opt), the constant muscle thickness."""
        return self.optimal_fiber_length * math.sin(self.pennation_angle_at_optimal)

    # -- curves (normalized) ---------------------------------------------------
    def active_force_length(self, norm_fiber_length) -> np.ndarray:
        raise NotImplementedError

    def passive_force_length(self, norm_fiber_length) -> np.ndarray:
        raise NotImplementedError

    def force_velocity(self, norm_fiber_velocity, activation=1.0) -> np.ndarray:
        raise NotImplementedError

    def tendon_force_length(self, norm_tendon_length) -> np.ndarray:
        raise NotImplementedError

    # -- forces ----------------------------------------------------------------
    def rigid_tendon(self, mt_length, mt_velocity=0.0, fv_activation=1.0) -> RigidTendonForces:
        """Fiber state and force coefficients A, P with a rigid tendon.

        ``fv_activation`` only matters for Thelen2003, whose force-velocity
        relation depends on activation; OpenSim's StaticOptimization uses 1.
        """
        raise NotImplementedError

    def tendon_force(self, activation, mt_length, mt_velocity=0.0) -> np.ndarray:
        """Tendon force [N] with a rigid tendon, as the OpenSim model defines it at that activation."""
        raise NotImplementedError

    def describe(self) -> str:
        return (
            f"{self.type_name} {self.name}: F_max={self.max_isometric_force:g} N, l_opt={self.optimal_fiber_length:g} m, "
            f"l_TS={self.tendon_slack_length:g} m, phi_opt={math.degrees(self.pennation_angle_at_optimal):.3g} deg"
        )


def _broadcast(*arrays):
    return np.broadcast_arrays(*[np.asarray(a, dtype=float) for a in arrays])


# =============================================================================
# Thelen 2003
# =============================================================================
@dataclass(frozen=True)
class Thelen2003Muscle(HillMuscle):
    """OpenSim ``Thelen2003Muscle`` (Thelen 2003, with Millard's OpenSim 3 revisions)."""

    min_control: float = 0.01  # OpenSim sets min_control to minimum_activation
    FmaxTendonStrain: float = 0.04
    FmaxMuscleStrain: float = 0.6
    KshapeActive: float = 0.45
    KshapePassive: float = 5.0
    Af: float = 0.25
    Flen: float = 1.4
    fv_linear_extrap_threshold: float = 0.95
    maximum_pennation_angle: float = math.acos(0.1)
    activation_time_constant: float = 0.015
    deactivation_time_constant: float = 0.050
    minimum_activation: float = 0.01
    default_activation: float = 0.05
    default_fiber_length: float = 0.1

    type_name: ClassVar[str] = "Thelen2003Muscle"

    def __post_init__(self):
        super().__post_init__()
        where = f"Thelen2003Muscle {self.name!r}"
        for p in ("FmaxTendonStrain", "FmaxMuscleStrain", "KshapeActive", "KshapePassive", "Af"):
            if not getattr(self, p) > 0:
                raise MuscleModelError(f"{where}: {p} must be greater than zero")
        if not self.Flen > 1.0:
            raise MuscleModelError(f"{where}: Flen must be greater than 1.0")
        if not self.fv_linear_extrap_threshold > 1.0 / self.Flen:
            raise MuscleModelError(f"{where}: fv_linear_extrap_threshold must be greater than 1/Flen")
        if not 0.0 <= self.maximum_pennation_angle <= math.pi / 2:
            raise MuscleModelError(f"{where}: maximum_pennation_angle must be in [0, pi/2]")

    # pennation model ----------------------------------------------------------
    @property
    def minimum_fiber_length(self) -> float:
        if self.maximum_pennation_angle > SIGNIFICANT_REAL:
            return self.parallelogram_height / math.sin(self.maximum_pennation_angle)
        return 0.01 * self.optimal_fiber_length

    def _pennation(self, lf):
        return _fixed_width_pennation(lf, self.parallelogram_height, self.pennation_angle_at_optimal,
                                      self.maximum_pennation_angle, self.minimum_fiber_length)

    # curves -----------------------------------------------------------------------
    def active_force_length(self, norm_fiber_length):
        return C.thelen_active_force_length(norm_fiber_length, self.KshapeActive)

    def passive_force_length(self, norm_fiber_length):
        return C.thelen_passive_force_length(norm_fiber_length, self.FmaxMuscleStrain, self.KshapePassive)

    def force_velocity(self, norm_fiber_velocity, activation=1.0):
        a = np.clip(np.asarray(activation, dtype=float), self.minimum_activation, 1.0)
        return C.thelen_force_velocity(norm_fiber_velocity, a, self.Af, self.Flen, self.fv_linear_extrap_threshold)

    def tendon_force_length(self, norm_tendon_length):
        return C.thelen_tendon_force_length(norm_tendon_length, self.FmaxTendonStrain)

    # forces -------------------------------------------------------------------------
    def rigid_tendon(self, mt_length, mt_velocity=0.0, fv_activation=1.0):
        lmt, vmt, act = _broadcast(mt_length, mt_velocity, fv_activation)
        lf = _rigid_fiber_length(lmt, self.tendon_slack_length, self.parallelogram_height,
                                 self.minimum_fiber_length, self.maximum_pennation_angle)
        phi = self._pennation(lf)
        cphi = np.cos(phi)
        vf = vmt * cphi
        lN = np.maximum(lf, self.minimum_fiber_length) / self.optimal_fiber_length
        vN = vf / (self.optimal_fiber_length * self.max_contraction_velocity)
        fal = self.active_force_length(lN)
        fpe = self.passive_force_length(lN)
        fv = self.force_velocity(vN, act)
        ok = lf > self.minimum_fiber_length  # OpenSim: no force from a fiber at its minimum length
        fmax = self.max_isometric_force
        A = np.where(ok, fmax * fal * fv * cphi, 0.0)
        P = np.where(ok, fmax * fpe * cphi, 0.0)
        return RigidTendonForces(lf, lf / self.optimal_fiber_length, phi, cphi, vf, vN, fal, fpe, fv, A, P)

    def tendon_force(self, activation, mt_length, mt_velocity=0.0):
        a = np.clip(np.asarray(activation, dtype=float), self.minimum_activation, 1.0)
        r = self.rigid_tendon(mt_length, mt_velocity, a)
        return a * r.active + r.passive


# =============================================================================
# Schutte 1993
# =============================================================================
# OpenSim's built-in default curves of Schutte1993Muscle_Deprecated (knots of SimmSplines)
SCHUTTE_DEFAULT_CURVES: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "tendon_force_length_curve": (
        (-10.0, -0.002, -0.001, 0.0, 0.00131, 0.00281, 0.00431, 0.00581, 0.00731, 0.00881, 0.0103, 0.0118,
         0.0123, 9.2, 9.201, 9.202, 20.0),
        (0.0, 0.0, 0.0, 0.0, 0.0108, 0.0257, 0.0435, 0.0652, 0.0915, 0.123, 0.161, 0.208, 0.227, 345.0, 345.0,
         345.0, 345.0),
    ),
    "active_force_length_curve": (
        (-5.307692, -4.307692, -1.923077, -0.884615, -0.269231, 0.230769, 0.461538, 0.52725, 0.62875, 0.71875,
         0.86125, 1.045, 1.2175, 1.43875, 1.5, 1.615385, 2.0, 2.961538, 3.692308, 5.461538, 9.901902),
        (0.012188, 0.021899, 0.036466, 0.052493, 0.075312, 0.114158, 0.157859, 0.226667, 0.636667, 0.856667,
         0.95, 0.993333, 0.77, 0.246667, 0.193821, 0.133252, 0.072683, 0.044417, 0.036341, 0.021899, 0.007332),
    ),
    "passive_force_length_curve": (
        (-5.0, 0.998, 0.999, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.601, 1.602, 5.0),
        (0.0, 0.0, 0.0, 0.0, 0.035, 0.12, 0.26, 0.55, 1.17, 2.0, 2.0, 2.0, 2.0),
    ),
}


def _default_schutte_curve(prop: str):
    try:
        from osim_emb.core.functions import SimmSpline  # type: ignore[attr-defined]
    except ImportError as exc:  # pragma: no cover - depends on the functions package
        raise MuscleModelError(
            f"Schutte1993Muscle: the default {prop} is a SimmSpline, which osim_emb.core.functions does not provide yet"
        ) from exc
    x, y = SCHUTTE_DEFAULT_CURVES[prop]
    return SimmSpline(x, y)


def _function_properties(muscle: "HillMuscle", props) -> None:
    """The curve properties ``props`` of a frozen muscle as function objects: a dict (``to_dict``'s form) rebuilt,
    None (OpenSim's default) kept, anything without ``evaluate`` refused with the muscle and property named."""
    for prop in props:
        f = getattr(muscle, prop)
        if isinstance(f, dict):
            from osim_emb.core.functions import function_from_dict

            object.__setattr__(muscle, prop, function_from_dict(f))
        elif f is not None and not hasattr(f, "evaluate"):
            raise MuscleModelError(f"{muscle.type_name} {muscle.name!r}: {prop} must be a function object "
                                   f"(JointFunction interface), got {type(f).__name__}")


def _eval_function(f, x) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    val = f.evaluate(x.reshape(-1), 0).value
    return np.asarray(val, dtype=float).reshape(x.shape)


@dataclass(frozen=True)
class Schutte1993Muscle(HillMuscle):
    """OpenSim ``Schutte1993Muscle_Deprecated`` (Schutte 1993, the SIMM muscle model).

    The three curves are OpenSim functions of one variable (usually SimmSpline),
    given as objects with the ``JointFunction`` interface of
    :mod:`osim_emb.core.functions`.  ``passive_force_length_curve=None`` means the
    property was not set in the file: OpenSim then uses exp(8(l~ - 1))/exp(4)
    (not its default spline).  ``active_force_length_curve`` or
    ``tendon_force_length_curve`` None means OpenSim's default spline.

    Normalized fiber velocity is v~ = v_f * time_scale / l_opt
    (``max_contraction_velocity`` is not used by the model).
    """

    time_scale: float = 0.1
    activation1: float = 7.667
    activation2: float = 1.459854
    damping: float = 0.1
    tendon_force_length_curve: Any = None
    active_force_length_curve: Any = None
    passive_force_length_curve: Any = None
    default_activation: float = 0.05
    default_fiber_length: float = 0.1

    type_name: ClassVar[str] = "Schutte1993Muscle_Deprecated"

    def __post_init__(self):
        super().__post_init__()
        if not self.time_scale > 0:
            raise MuscleModelError(f"Schutte1993Muscle_Deprecated {self.name!r}: time_scale must be > 0")
        if not self.damping > 0:
            raise MuscleModelError(
                f"Schutte1993Muscle_Deprecated {self.name!r}: damping must be > 0 (OpenSim divides by it)"
            )
        _function_properties(self, ("tendon_force_length_curve", "active_force_length_curve",
                                    "passive_force_length_curve"))

    def _curve(self, prop):
        f = getattr(self, prop)
        return f if f is not None else _default_schutte_curve(prop)

    @property
    def max_shortening_velocity(self) -> float:
        """v_max in m/s: the fiber velocity at v~ = -1 is l_opt / time_scale."""
        return self.optimal_fiber_length / self.time_scale

    def active_force_length(self, norm_fiber_length):
        """The active curve, clamped at 0 as computeActuation does."""
        return np.maximum(_eval_function(self._curve("active_force_length_curve"), norm_fiber_length), 0.0)

    def passive_force_length(self, norm_fiber_length):
        if self.passive_force_length_curve is None:
            lN = np.asarray(norm_fiber_length, dtype=float)
            return np.exp(8.0 * (lN - 1.0)) / math.exp(4.0)
        return _eval_function(self.passive_force_length_curve, norm_fiber_length)

    def force_velocity(self, norm_fiber_velocity, activation=1.0):
        return C.schutte_force_velocity(norm_fiber_velocity) + 0.0 * np.asarray(activation, dtype=float)

    def tendon_force_length(self, norm_tendon_length):
        """Tendon force from tendon length / slack length (0 below slack), as calcTendonForce."""
        strain = np.asarray(norm_tendon_length, dtype=float) - 1.0
        val = _eval_function(self._curve("tendon_force_length_curve"), strain)
        return np.where(strain < 0.0, 0.0, val)

    def pennation_angle(self, fiber_length) -> np.ndarray:
        """OpenSim's calcPennation: asin(l_opt sin(phi_opt) / l_f), pi/2 once that ratio reaches 1."""
        return deprecated_pennation(fiber_length, self.optimal_fiber_length, self.pennation_angle_at_optimal)

    def fiber_forces(self, fiber_length, fiber_velocity, fv_activation=1.0) -> RigidTendonForces:
        """Force coefficients for given fiber length and velocity (tension along the tendon
        F = a A + P): Schutte's computeActuation solved for the tendon force."""
        lf, vf, _ = _broadcast(fiber_length, fiber_velocity, fv_activation)
        phi = self.pennation_angle(lf)
        cphi = np.cos(phi)
        lN = lf / self.optimal_fiber_length
        vN = vf * self.time_scale / self.optimal_fiber_length
        fal = self.active_force_length(lN)
        fpe = self.passive_force_length(lN)
        fv = C.schutte_force_velocity(vN)
        fmax = self.max_isometric_force
        A = fmax * fal * fv * cphi
        P = fmax * (fpe + self.damping * vN) * cphi
        return RigidTendonForces(lf, lN, phi, cphi, vf, vN, fal, fpe, fv, A, P)

    def rigid_tendon(self, mt_length, mt_velocity=0.0, fv_activation=1.0):
        lmt, vmt, _ = _broadcast(mt_length, mt_velocity, fv_activation)
        h = self.parallelogram_height
        along = lmt - self.tendon_slack_length
        lf = np.where(along > 0.0, np.sqrt(h * h + np.maximum(along, 0.0) ** 2), h)
        cphi = np.where(along > 0.0, np.cos(self.pennation_angle(lf)), 0.0)
        r = self.fiber_forces(lf, vmt * cphi)
        if np.any(along <= 0.0):  # slack musculotendon: fibers at 90 degrees, no force along the tendon
            z = along <= 0.0
            r = r._replace(cos_pennation=np.where(z, 0.0, r.cos_pennation), active=np.where(z, 0.0, r.active),
                           passive=np.where(z, 0.0, r.passive), pennation_angle=np.where(z, math.pi / 2, r.pennation_angle))
        return r

    def tendon_force(self, activation, mt_length, mt_velocity=0.0):
        """a A + P, clamped at 0 (a rigid tendon cannot push)."""
        r = self.rigid_tendon(mt_length, mt_velocity)
        return np.maximum(np.asarray(activation, dtype=float) * r.active + r.passive, 0.0)



# =============================================================================
# Millard 2012
# =============================================================================
MIN_NONZERO_DAMPING_COEFFICIENT = 0.001


def _curve_field(cls):
    return field(default_factory=cls)


@dataclass(frozen=True)
class Millard2012EquilibriumMuscle(HillMuscle):
    """OpenSim ``Millard2012EquilibriumMuscle`` (Millard et al. 2013), damped or classic Hill."""

    min_control: float = 0.01
    fiber_damping: float = 0.1
    default_activation: float = 0.05
    default_fiber_length: float = 0.1
    activation_time_constant: float = 0.010
    deactivation_time_constant: float = 0.040
    minimum_activation: float = 0.01
    maximum_pennation_angle: float = math.acos(0.1)
    active_force_length_curve: C.ActiveForceLengthCurve = _curve_field(C.ActiveForceLengthCurve)
    force_velocity_curve: C.ForceVelocityCurve = _curve_field(C.ForceVelocityCurve)
    fiber_force_length_curve: C.FiberForceLengthCurve = _curve_field(C.FiberForceLengthCurve)
    tendon_force_length_curve: C.TendonForceLengthCurve = _curve_field(C.TendonForceLengthCurve)

    type_name: ClassVar[str] = "Millard2012EquilibriumMuscle"
    _CURVES: ClassVar[dict[str, type]] = {
        "active_force_length_curve": C.ActiveForceLengthCurve,
        "force_velocity_curve": C.ForceVelocityCurve,
        "fiber_force_length_curve": C.FiberForceLengthCurve,
        "tendon_force_length_curve": C.TendonForceLengthCurve,
    }

    def __post_init__(self):
        super().__post_init__()
        for prop, cls in self._CURVES.items():
            v = getattr(self, prop)
            if isinstance(v, dict):
                object.__setattr__(self, prop, cls.from_dict(v))
            elif not isinstance(v, cls):
                raise MuscleModelError(f"Millard2012EquilibriumMuscle {self.name!r}: {prop} must be a {cls.__name__}")
        if not 0.0 <= self.maximum_pennation_angle <= math.pi / 2:
            raise MuscleModelError(f"Millard2012EquilibriumMuscle {self.name!r}: maximum_pennation_angle out of range")

    @property
    def uses_damping(self) -> bool:
        return self.fiber_damping >= MIN_NONZERO_DAMPING_COEFFICIENT

    def curves_in_use(self, rigid_tendon: bool = True):
        """(f_L, f_V) curves after the adjustments OpenSim makes in extendFinalizeFromProperties.

        Rigid tendon or damped model: f_L's minimum_value becomes 0 and the
        force-velocity slopes at +-v_max become 0.  Elastic tendon without
        damping (classic Hill): f_L's minimum_value is raised to 0.1 and the
        slopes at v_max to half the slopes near v_max.
        """
        fal, fv = self.active_force_length_curve, self.force_velocity_curve
        if not rigid_tendon and not self.uses_damping:
            if fal.minimum_value < 0.1:
                fal = replace(fal, minimum_value=0.1)
            con = max(fv.concentric_slope_at_vmax, 0.5 * fv.concentric_slope_near_vmax)
            ecc = max(fv.eccentric_slope_at_vmax, 0.5 * fv.eccentric_slope_near_vmax)
        else:
            if fal.minimum_value > 0.0:
                fal = replace(fal, minimum_value=0.0)
            con = min(fv.concentric_slope_at_vmax, 0.0)
            ecc = min(fv.eccentric_slope_at_vmax, 0.0)
        fv = replace(fv, concentric_slope_at_vmax=con, eccentric_slope_at_vmax=ecc)
        return fal, fv

    @property
    def _rigid_curves(self):
        cache = self.__dict__.get("_rigid_curves_cache")
        if cache is None:
            cache = self.curves_in_use(True)
            self.__dict__["_rigid_curves_cache"] = cache
        return cache

    @property
    def minimum_fiber_length(self) -> float:
        """max(min active length, pennation limit, SignificantReal) (Millard's clamp)."""
        fal = self.active_force_length_curve
        pen = (self.parallelogram_height / math.sin(self.maximum_pennation_angle)
               if self.maximum_pennation_angle > SIGNIFICANT_REAL else 0.01 * self.optimal_fiber_length)
        return max(SIGNIFICANT_REAL, fal.min_norm_active_fiber_length * self.optimal_fiber_length, pen)

    @property
    def _pennation_minimum_fiber_length(self) -> float:
        if self.maximum_pennation_angle > SIGNIFICANT_REAL:
            return self.parallelogram_height / math.sin(self.maximum_pennation_angle)
        return 0.01 * self.optimal_fiber_length

    def _pennation(self, lf):
        return _fixed_width_pennation(lf, self.parallelogram_height, self.pennation_angle_at_optimal,
                                      self.maximum_pennation_angle, self._pennation_minimum_fiber_length)

    # curves (as used with a rigid tendon) ---------------------------------------
    def active_force_length(self, norm_fiber_length):
        return self._rigid_curves[0](norm_fiber_length)

    def passive_force_length(self, norm_fiber_length):
        return self.fiber_force_length_curve(norm_fiber_length)

    def force_velocity(self, norm_fiber_velocity, activation=1.0):
        return self._rigid_curves[1](norm_fiber_velocity) + 0.0 * np.asarray(activation, dtype=float)

    def tendon_force_length(self, norm_tendon_length):
        return self.tendon_force_length_curve(norm_tendon_length)

    def rigid_tendon(self, mt_length, mt_velocity=0.0, fv_activation=1.0):
        lmt, vmt, _ = _broadcast(mt_length, mt_velocity, fv_activation)
        lmin = self.minimum_fiber_length
        lf = _rigid_fiber_length(lmt, self.tendon_slack_length, self.parallelogram_height,
                                 self._pennation_minimum_fiber_length, self.maximum_pennation_angle)
        lf = np.maximum(lf, lmin)
        phi = self._pennation(lf)
        cphi = np.cos(phi)
        lt = lmt - lf * cphi
        buckled = lt < self.tendon_slack_length - SIGNIFICANT_REAL
        vf = np.where(buckled, 0.0, vmt * cphi)
        vN = vf / (self.optimal_fiber_length * self.max_contraction_velocity)
        clamped = ((lf <= lmin) & (vN <= 0.0)) | (lf < lmin)
        vf = np.where(clamped, 0.0, vf)
        vN = np.where(clamped, 0.0, vN)
        fal_c, fv_c = self._rigid_curves
        lN = lf / self.optimal_fiber_length
        fal = fal_c(lN)
        fpe = self.fiber_force_length_curve(lN)
        fv = np.where(clamped | buckled, 1.0, fv_c(vN))
        beta = self.fiber_damping if self.uses_damping else 0.0
        fmax = self.max_isometric_force
        A = np.where(clamped, 0.0, fmax * fal * fv * cphi)
        P = np.where(clamped, 0.0, fmax * (fpe + beta * vN) * cphi)
        return RigidTendonForces(lf, lN, phi, cphi, vf, vN, fal, fpe, fv, A, P)

    def tendon_force(self, activation, mt_length, mt_velocity=0.0):
        """OpenSim's rigid-tendon tendon force: activation clamped to [minimum_activation, 1],
        total fiber force clamped at 0 (the damping force saturates)."""
        lo = min(max(self.minimum_activation, 0.0), 1.0)
        a = np.clip(np.asarray(activation, dtype=float), lo, 1.0)
        r = self.rigid_tendon(mt_length, mt_velocity)
        return np.maximum(a * r.active + r.passive, 0.0)


# =============================================================================
# Any other path actuator
# =============================================================================
@dataclass(frozen=True)
class RigidPathActuator(HillMuscle):
    """A path actuator without muscle physiology: tension = control x optimal_force."""

    optimal_force: float = 1.0
    min_control: float = -math.inf
    max_control: float = math.inf
    source_type: str = "PathActuator"

    type_name: ClassVar[str] = "PathActuator"

    def active_force_length(self, norm_fiber_length):
        return np.ones_like(np.asarray(norm_fiber_length, dtype=float))

    def passive_force_length(self, norm_fiber_length):
        return np.zeros_like(np.asarray(norm_fiber_length, dtype=float))

    def force_velocity(self, norm_fiber_velocity, activation=1.0):
        return np.ones_like(np.asarray(norm_fiber_velocity, dtype=float))

    def rigid_tendon(self, mt_length, mt_velocity=0.0, fv_activation=1.0):
        lmt, vmt, _ = _broadcast(mt_length, mt_velocity, fv_activation)
        one = np.ones_like(lmt)
        zero = np.zeros_like(lmt)
        nan = np.full_like(lmt, np.nan)
        return RigidTendonForces(nan, nan, zero, one, nan, nan, one, zero, one,
                                 self.optimal_force * one, zero)

    def tendon_force(self, activation, mt_length, mt_velocity=0.0):
        r = self.rigid_tendon(mt_length, mt_velocity)
        return np.asarray(activation, dtype=float) * r.active


# =============================================================================
# RigidTendonMuscle (OpenSim's stateless muscle)
# =============================================================================
# OpenSim's built-in default curves of RigidTendonMuscle (knots of SimmSplines, RigidTendonMuscle.cpp)
RIGID_TENDON_DEFAULT_CURVES: dict[str, tuple[tuple[float, ...], tuple[float, ...]]] = {
    "active_force_length_curve": SCHUTTE_DEFAULT_CURVES["active_force_length_curve"],
    "passive_force_length_curve": SCHUTTE_DEFAULT_CURVES["passive_force_length_curve"],
    "force_velocity_curve": (
        (-1.001, -1.0, -0.95, -0.9, -0.85, -0.8, -0.75, -0.7, -0.65, -0.6, -0.55, -0.5, -0.45, -0.4, -0.35, -0.3,
         -0.25, -0.2, -0.15, -0.1, -0.05, 0.0, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6,
         0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0),
        (0.0, 0.0, 0.010417, 0.021739, 0.034091, 0.047619, 0.0625, 0.078947, 0.097222, 0.117647, 0.140625,
         0.166667, 0.196429, 0.230769, 0.270833, 0.318182, 0.375, 0.444444, 0.53125, 0.642857, 0.791667, 1.0,
         1.482014, 1.601571, 1.655791, 1.686739, 1.706751, 1.720753, 1.731099, 1.739055, 1.745365, 1.75049,
         1.754736, 1.758312, 1.761364, 1.763999, 1.766298, 1.768321, 1.770115, 1.771717, 1.773155, 1.774455),
    ),
}

@dataclass(frozen=True)
class RigidTendonMuscle(HillMuscle):
    """OpenSim ``RigidTendonMuscle``: no states; activation = control, tendon length = slack length.

    Fibre length l_f = sqrt((l_MT - l_TS)_+^2 + w^2), w = l_opt sin(phi_opt) (only (l_MT - l_TS)_+ where
    w <= SqrtEps), cos(phi) = (l_MT - l_TS)_+ / l_f; the fibre velocity is the path's lengthening speed (not
    projected), normalized by l_opt v_max; tension F_max (a f_L(l~) f_V(v~) + clamp(f_PE(l~), 0, 10)) cos(phi)
    (RigidTendonMuscle::calcMuscleLengthInfo, calcFiberVelocityInfo, computeActuation).  The three curves are
    OpenSim functions of one variable (None: OpenSim's default SimmSpline)."""

    active_force_length_curve: Any = None
    passive_force_length_curve: Any = None
    force_velocity_curve: Any = None
    min_control: float = 0.0
    max_control: float = 1.0

    type_name: ClassVar[str] = "RigidTendonMuscle"
    CURVES: ClassVar[tuple[str, ...]] = ("active_force_length_curve", "passive_force_length_curve",
                                         "force_velocity_curve")

    def __post_init__(self):
        super().__post_init__()
        if not self.max_contraction_velocity > 0:
            raise MuscleModelError(f"RigidTendonMuscle {self.name!r}: max_contraction_velocity must be > 0")
        _function_properties(self, self.CURVES)

    def curve(self, prop: str):
        """The curve of ``prop``: the file's function or OpenSim's default SimmSpline."""
        f = getattr(self, prop)
        if f is not None:
            return f
        from osim_emb.core.functions import SimmSpline
        return SimmSpline(*RIGID_TENDON_DEFAULT_CURVES[prop])

    def active_force_length(self, norm_fiber_length):
        return _eval_function(self.curve("active_force_length_curve"), norm_fiber_length)

    def passive_force_length(self, norm_fiber_length):
        return np.clip(_eval_function(self.curve("passive_force_length_curve"), norm_fiber_length), 0.0, 10.0)

    def force_velocity(self, norm_fiber_velocity, activation=1.0):
        return _eval_function(self.curve("force_velocity_curve"), norm_fiber_velocity) + 0.0 * np.asarray(
            activation, dtype=float)

    def rigid_tendon(self, mt_length, mt_velocity=0.0, fv_activation=1.0) -> RigidTendonForces:
        lmt, vmt, _ = _broadcast(mt_length, mt_velocity, fv_activation)
        along = np.maximum(lmt - self.tendon_slack_length, 0.0)
        w = self.parallelogram_height
        if w > SQRT_EPS:
            lf = np.sqrt(along * along + w * w)
            cphi = along / lf
        else:
            lf, cphi = along, np.ones_like(along)
        lN = lf / self.optimal_fiber_length
        vN = vmt / (self.optimal_fiber_length * self.max_contraction_velocity)
        fal, fpe, fv = self.active_force_length(lN), self.passive_force_length(lN), self.force_velocity(vN)
        fmax = self.max_isometric_force
        return RigidTendonForces(lf, lN, np.arccos(np.clip(cphi, -1.0, 1.0)), cphi, vmt, vN, fal, fpe, fv,
                                 fmax * fal * fv * cphi, fmax * fpe * cphi)

    def tendon_force(self, activation, mt_length, mt_velocity=0.0):
        """a A + P with a = the control as given (OpenSim neither clamps nor delays it)."""
        return self.rigid_tendon(mt_length, mt_velocity).tendon_force(activation)


# =============================================================================
# DeGroote & Fregly 2016
# =============================================================================
# the curves' constants of OpenSim 4.6's DeGrooteFregly2016Muscle.h (De Groote et al. 2016, b11 modified there)
_DG_B = ((0.8150671134243542, 1.055033428970575, 0.162384573599574, 0.063303448465465),
         (0.433004984392647, 0.716775413397760, -0.029947116970696, 0.200356847296188),
         (0.1, 1.0, 0.353553390593274, 0.0))
_DG_KPE = 4.0
_DG_C1, _DG_C2, _DG_C3 = 0.200, 1.0, 0.200
_DG_D1, _DG_D2, _DG_D3, _DG_D4 = -0.3211346127989808, -8.149, -0.374, 0.8825327733249912
_DG_MIN_NORM_FIBER_LENGTH = 0.2
_DG_TENDON_FORCE_BOUNDS = (0.0, 5.0)


@dataclass(frozen=True)
class DeGrooteFregly2016Muscle(HillMuscle):
    """OpenSim ``DeGrooteFregly2016Muscle`` (De Groote et al. 2016; Moco's muscle): closed-form curves, no iteration.

    Curves (normalized): f_L a sum of three Gaussian-like terms b1 exp(-(x - b2)^2 / (2 (b3 + b4 x)^2)) of
    x = (l~ - 1) / active_force_width_scale + 1; f_PE = (exp(k_PE (l~ - 1) / e0) - o) / (exp(k_PE) - o),
    o = exp(k_PE (0.2 - 1) / e0); f_V = d1 ln(d2 v~ + d3 + sqrt((d2 v~ + d3)^2 + 1)) + d4 with the closed-form
    inverse (sinh((f_V - d4) / d1) - d3) / d2; tendon f_T = c1 exp(k_T (l~_T - c2)) - c3, k_T = ln((1 + c3) / c1)
    / (1 + tendon_strain_at_one_norm_force - c2).  Fibre force F_max (a f_L f_V + f_PE + fiber_damping v~); the
    fibre at constant width w = l_opt sin(phi_opt): l_f = sqrt((l_MT - l_T)^2 + w^2), cos(phi) = (l_MT - l_T) / l_f.

    * ``ignore_tendon_compliance``: l_T = l_TS, v_f = v_MT cos(phi), tendon force = fibre force cos(phi);
    * otherwise (explicit tendon dynamics): with the fibre length as the state, the tendon length follows, the
      tendon force F_max f_T(l_T / l_TS), and f_V = (f_T / cos(phi) - f_PE) / (a f_L), hence l'_f =
      v~ v_max l_opt from the inverse curve (OpenSim's state is the normalized tendon force; the two are one ODE
      in other coordinates; the damping term does not enter this velocity, as in OpenSim's explicit mode);
    * activation: a' = (u - a) ((f + 1/2) / (tau_a (1/2 + 3a/2)) + (1/2 - f)(1/2 + 3a/2) / tau_d),
      f = tanh(activation_dynamics_smoothing (u - a)) / 2, no clamping (``ignore_activation_dynamics``: a = u).

    (``DeGrooteFregly2016Muscle::calcMuscleLengthInfoHelper``, ``calcFiberVelocityInfoHelper``,
    ``calcMuscleDynamicsInfoHelper``, ``computeStateVariableDerivatives``.)
    """

    activation_time_constant: float = 0.015
    deactivation_time_constant: float = 0.060
    default_activation: float = 0.5
    default_normalized_tendon_force: float = 0.5
    active_force_width_scale: float = 1.0
    fiber_damping: float = 0.0
    passive_fiber_strain_at_one_norm_force: float = 0.6
    tendon_strain_at_one_norm_force: float = 0.049
    ignore_passive_fiber_force: bool = False
    tendon_compliance_dynamics_mode: str = "explicit"
    activation_dynamics_smoothing: float = 0.1

    type_name: ClassVar[str] = "DeGrooteFregly2016Muscle"

    def __post_init__(self):
        super().__post_init__()
        checks = (("activation_time_constant", self.activation_time_constant > 0, "> 0"),
                  ("deactivation_time_constant", self.deactivation_time_constant > 0, "> 0"),
                  ("default_activation", self.default_activation > 0, "> 0"),
                  ("default_normalized_tendon_force", 0 <= self.default_normalized_tendon_force <= 5, "in [0, 5]"),
                  ("active_force_width_scale", self.active_force_width_scale >= 1, ">= 1"),
                  ("fiber_damping", self.fiber_damping >= 0, ">= 0"),
                  ("passive_fiber_strain_at_one_norm_force", self.passive_fiber_strain_at_one_norm_force > 0, "> 0"),
                  ("tendon_strain_at_one_norm_force", self.tendon_strain_at_one_norm_force > 0, "> 0"),
                  ("activation_dynamics_smoothing", self.activation_dynamics_smoothing > 0, "> 0"),
                  ("max_contraction_velocity", self.max_contraction_velocity > 0, "> 0"),
                  ("tendon_compliance_dynamics_mode", self.tendon_compliance_dynamics_mode in ("explicit", "implicit"),
                   "'explicit' or 'implicit'"))
        for prop, ok, need in checks:
            if not ok:
                raise MuscleModelError(f"DeGrooteFregly2016Muscle {self.name!r}: {prop} must be {need}, got "
                                       f"{getattr(self, prop)!r} (OpenSim refuses it too)")

    # -- curves ---------------------------------------------------------------------------------------
    def active_force_length(self, norm_fiber_length):
        x = (np.asarray(norm_fiber_length, dtype=float) - 1.0) / self.active_force_width_scale + 1.0
        out = 0.0
        for b1, b2, b3, b4 in _DG_B:
            out = out + b1 * np.exp(-0.5 * (x - b2) ** 2 / (b3 + b4 * x) ** 2)
        return out

    def passive_force_length(self, norm_fiber_length):
        lN = np.asarray(norm_fiber_length, dtype=float)
        if self.ignore_passive_fiber_force:
            return np.zeros_like(lN)
        e0 = self.passive_fiber_strain_at_one_norm_force
        offset = math.exp(_DG_KPE * (_DG_MIN_NORM_FIBER_LENGTH - 1.0) / e0)
        return (np.exp(_DG_KPE * (lN - 1.0) / e0) - offset) / (math.exp(_DG_KPE) - offset)

    def force_velocity(self, norm_fiber_velocity, activation=1.0):
        v = _DG_D2 * np.asarray(norm_fiber_velocity, dtype=float) + _DG_D3
        return _DG_D1 * np.log(v + np.sqrt(v * v + 1.0)) + _DG_D4 + 0.0 * np.asarray(activation, dtype=float)

    @staticmethod
    def force_velocity_inverse(multiplier):
        """v~ of f_V = multiplier (closed form)."""
        return (np.sinh((np.asarray(multiplier, dtype=float) - _DG_D4) / _DG_D1) - _DG_D3) / _DG_D2

    @property
    def tendon_stiffness_parameter(self) -> float:
        return math.log((1.0 + _DG_C3) / _DG_C1) / (1.0 + self.tendon_strain_at_one_norm_force - _DG_C2)

    def tendon_force_length(self, norm_tendon_length):
        return _DG_C1 * np.exp(self.tendon_stiffness_parameter * (np.asarray(norm_tendon_length, dtype=float)
                                                                  - _DG_C2)) - _DG_C3

    def tendon_force_length_inverse(self, norm_tendon_force):
        """l~_T of f_T = norm_tendon_force (closed form)."""
        return (np.log((np.asarray(norm_tendon_force, dtype=float) + _DG_C3) / _DG_C1)
                / self.tendon_stiffness_parameter + _DG_C2)

    # -- states -----------------------------------------------------------------------------------------
    def _fiber(self, along):
        """l_f and cos(phi) of the fibre length along the tendon."""
        w = self.parallelogram_height
        lf = np.sqrt(along * along + w * w)
        return lf, along / lf

    def rigid_tendon(self, mt_length, mt_velocity=0.0, fv_activation=1.0) -> RigidTendonForces:
        lmt, vmt, _ = _broadcast(mt_length, mt_velocity, fv_activation)
        lf, cphi = self._fiber(lmt - self.tendon_slack_length)
        lopt = self.optimal_fiber_length
        vf = vmt * cphi
        vN = vf / (self.max_contraction_velocity * lopt)
        lN = lf / lopt
        fal, fpe, fv = self.active_force_length(lN), self.passive_force_length(lN), self.force_velocity(vN)
        fmax = self.max_isometric_force
        return RigidTendonForces(lf, lN, np.arccos(np.clip(cphi, -1.0, 1.0)), cphi, vf, vN, fal, fpe, fv,
                                 fmax * fal * fv * cphi, fmax * (fpe + self.fiber_damping * vN) * cphi)

    def tendon_force(self, activation, mt_length, mt_velocity=0.0):
        """Rigid tendon: a A + P, the activation as given (no clamping)."""
        return self.rigid_tendon(mt_length, mt_velocity).tendon_force(activation)

    def activation_rate(self, activation, excitation):
        a = np.asarray(activation, dtype=float)
        u = np.asarray(excitation, dtype=float)
        factor = 0.5 + 1.5 * a
        f = 0.5 * np.tanh(self.activation_dynamics_smoothing * (u - a))
        rate = (1.0 / (self.activation_time_constant * factor)) * (f + 0.5) + (factor
                                                                                / self.deactivation_time_constant) * (-f + 0.5)
        return rate * (u - a)

    def compliant_state(self, activation, mt_length, fiber_length):
        """Elastic tendon, explicit dynamics: (tendon force [N], fibre velocity [m/s]) at a fibre length."""
        a, lmt, lf = _broadcast(activation, mt_length, fiber_length)
        w = self.parallelogram_height
        along = np.sqrt(lf * lf - w * w)
        cphi = along / lf
        lopt = self.optimal_fiber_length
        norm_tendon_force = self.tendon_force_length((lmt - along) / self.tendon_slack_length)
        lN = lf / lopt
        fv = (norm_tendon_force / cphi - self.passive_force_length(lN)) / (a * self.active_force_length(lN))
        velocity = self.force_velocity_inverse(fv) * self.max_contraction_velocity * lopt
        return self.max_isometric_force * norm_tendon_force, velocity

    def equilibrium_fiber_length(self, activation: float, mt_length: float, mt_velocity: float) -> float:
        """The fibre length of OpenSim's ``computeInitialFiberEquilibrium``: bisection (tolerance 1e-10, at most
        100 steps, as ``OpenSim::solveBisection``) on the normalized tendon force in [0, 5] for the equilibrium
        of tendon and fibre force along it, the tendon's rate 0 (the path's speed all in the fibre)."""
        lopt, fmax = self.optimal_fiber_length, self.max_isometric_force

        def residual(norm_tendon_force):
            along = mt_length - self.tendon_slack_length * float(self.tendon_force_length_inverse(norm_tendon_force))
            lf, cphi = self._fiber(along)
            vN = mt_velocity * cphi / (self.max_contraction_velocity * lopt)
            lN = lf / lopt
            fiber = fmax * (activation * self.active_force_length(lN) * self.force_velocity(vN)
                            + self.passive_force_length(lN) + self.fiber_damping * vN)
            return float(norm_tendon_force - fiber * cphi / fmax)

        left, right = _DG_TENDON_FORCE_BOUNDS
        if residual(left) * residual(right) >= 0:
            raise MuscleModelError(f"DeGrooteFregly2016Muscle {self.name!r}: no fibre equilibrium at path length "
                                   f"{mt_length:.6g} m (the residual has one sign over normalized tendon forces "
                                   "0..5; OpenSim's bisection fails the same way)")
        midpoint, r_left, steps = left, residual(left), 0
        while steps < 100 and right - left > 1e-10:
            midpoint = 0.5 * (left + right)
            r_mid = residual(midpoint)
            if r_mid * r_left < 0:
                right = midpoint
            else:
                left = midpoint
                r_left = residual(left)
            steps += 1
        along = mt_length - self.tendon_slack_length * float(self.tendon_force_length_inverse(midpoint))
        return float(self._fiber(along)[0])


MUSCLE_TYPES = dict(_REGISTRY)


def muscle_from_dict(d: dict[str, Any]) -> HillMuscle:
    """Rebuild any muscle description from :meth:`HillMuscle.to_dict`."""
    return HillMuscle.from_dict(d)


def deprecated_pennation(fiber_length, optimal_fiber_length, pennation_at_optimal) -> np.ndarray:
    """ActivationFiberLengthMuscle_Deprecated::calcPennation (arrays broadcast): asin(l_opt sin(phi_opt) / l_f);
    0 for a fibre shorter than SimTK::Eps or a ratio that is NaN or <= 0, pi/2 once the ratio reaches 1.
    OpenSim calls it with lengths in metres (l_opt) or normalized (l_opt = 1)."""
    lf = np.asarray(fiber_length, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = optimal_fiber_length * np.sin(pennation_at_optimal) / lf
    s = np.where(np.isnan(s) | (lf < np.finfo(float).eps), 0.0, s)
    return np.where(s <= 0.0, 0.0, np.where(s >= 1.0, math.pi / 2, np.arcsin(np.clip(s, 0.0, 1.0))))


# =============================================================================
# Pennation helpers (MuscleFixedWidthPennationModel)
# =============================================================================
def _fixed_width_pennation(lf, h, phi_opt, phi_max, lmin):
    """:func:`osim_emb.muscles.kernels.fixed_width_pennation` at every fibre length of lf (0 when phi_opt = 0)."""
    lf = np.asarray(lf, dtype=float)
    if phi_opt <= np.finfo(float).eps:
        return np.zeros_like(lf)
    return fixed_width_pennation_array(lf, h, math.sin(phi_max), phi_max, lmin)


def _rigid_fiber_length(lmt, lts, h, lmin, phi_max):
    """calcFiberLength(l_MT, l_TS): sqrt(h^2 + (l_MT - l_TS)^2), or the minimum fiber length
    when the fiber along the tendon would be shorter than lmin cos(phi_max)."""
    along = lmt - lts
    lmin_at = lmin * math.cos(phi_max)
    return np.where(along >= lmin_at, np.sqrt(h * h + along * along), lmin)

