"""Normalized Hill-type muscle curves as OpenSim 4.6 defines them, vectorized with numpy.

Three families:

* **Millard 2012** smooth curves (``ActiveForceLengthCurve``, ``ForceVelocityCurve``,
  ``FiberForceLengthCurve``, ``TendonForceLengthCurve``): C2-continuous chains of
  quintic Bezier "corner" segments, linear outside their domain.  The segments
  are built from the curve parameters exactly as OpenSim's
  ``SmoothSegmentedFunctionFactory`` builds them; a value y(x) is found by
  solving x(u) = x for the Bezier parameter u (safeguarded Newton, to machine
  precision) and evaluating y(u).
* **Thelen 2003** closed forms (Gaussian active force-length, exponential
  passive force-length, the activation-dependent force-velocity relation
  inverted in closed form, the exponential/linear tendon).
* **Schutte 1993** force-velocity: OpenSim's ``Schutte1993Muscle_Deprecated``
  computes fiber *velocity* from force; :func:`schutte_force_velocity` is its
  closed-form inverse (force from velocity), which a rigid tendon needs.

All functions take and return arrays of any shape (broadcast).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any

import numpy as np

from osim_emb.muscles.kernels import thelen_curve_array, thelen_fiber_velocity_array

__all__ = [
    "SmoothSegmentedCurve",
    "quintic_bezier_corner",
    "ActiveForceLengthCurve",
    "ForceVelocityCurve",
    "ForceVelocityInverseCurve",
    "FiberForceLengthCurve",
    "TendonForceLengthCurve",
    "thelen_active_force_length",
    "thelen_passive_force_length",
    "thelen_tendon_force_length",
    "thelen_force_velocity",
    "thelen_fiber_velocity",
    "schutte_force_velocity",
    "schutte_fiber_velocity",
    "SCHUTTE_KV",
    "SCHUTTE_SLOPE_K",
    "SCHUTTE_FMAX",
]

_EPS = np.finfo(float).eps
_ROOT_EPS = np.sqrt(_EPS)


# =============================================================================
# Quintic Bezier segments (SegmentedQuinticBezierToolkit)
# =============================================================================
def quintic_bezier_corner(x0, y0, dydx0, x1, y1, dydx1, curviness):
    """Control points (6 x, 6 y) of a quintic Bezier 'corner' from (x0, y0) with slope
    dydx0 to (x1, y1) with slope dydx1; ``curviness`` in [0, 1] (already scaled).

    The two end tangents meet at a corner point C; the inner control points sit
    at the fraction ``curviness`` of the way from each end point towards C, each
    doubled, which makes the curve's first and second derivatives at both ends
    equal those of the straight tangent lines.
    """
    if not 0.0 <= curviness <= 1.0:
        raise ValueError("curviness must be between 0 and 1")
    if abs(dydx0 - dydx1) > _ROOT_EPS:
        xc = (y1 - y0 - x1 * dydx1 + x0 * dydx0) / (dydx0 - dydx1)
    else:
        xc = 0.5 * (x1 + x0)
    yc = (xc - x1) * dydx1 + y1
    a = (xc - x0) ** 2 + (yc - y0) ** 2
    b = (xc - x1) ** 2 + (yc - y1) ** 2
    c = (x1 - x0) ** 2 + (y1 - y0) ** 2
    if not (c > a and c > b):
        raise ValueError(
            "the tangent lines of a Bezier corner must intersect between its end points "
            "(a C-shaped corner); check the curve parameters"
        )
    x0m = x0 + curviness * (xc - x0)
    y0m = y0 + curviness * (yc - y0)
    x1m = x1 + curviness * (xc - x1)
    y1m = y1 + curviness * (yc - y1)
    return (
        np.array([x0, x0m, x0m, x1m, x1m, x1], dtype=float),
        np.array([y0, y0m, y0m, y1m, y1m, y1], dtype=float),
    )


_BINOM5 = np.array([1.0, 5.0, 10.0, 10.0, 5.0, 1.0])
_BINOM4 = np.array([1.0, 4.0, 6.0, 4.0, 1.0])
_BINOM3 = np.array([1.0, 3.0, 3.0, 1.0])


def _bernstein(u: np.ndarray, binom: np.ndarray) -> np.ndarray:
    """Bernstein basis of degree len(binom)-1 at u, shape (N, degree+1)."""
    n = binom.size - 1
    k = np.arange(n + 1)
    u = u[:, None]
    return binom * u**k * (1.0 - u) ** (n - k)


def _bezier(p: np.ndarray, u: np.ndarray, order: int) -> np.ndarray:
    """Derivative ``order`` (0, 1, 2) with respect to u of quintic Bezier curves
    with control points p (N, 6) at parameters u (N,)."""
    if order == 0:
        return np.einsum("nk,nk->n", p, _bernstein(u, _BINOM5))
    if order == 1:
        return 5.0 * np.einsum("nk,nk->n", np.diff(p, axis=1), _bernstein(u, _BINOM4))
    if order == 2:
        return 20.0 * np.einsum("nk,nk->n", np.diff(p, n=2, axis=1), _bernstein(u, _BINOM3))
    raise ValueError("order must be 0, 1 or 2")


@dataclass(frozen=True, eq=False)
class SmoothSegmentedCurve:
    """OpenSim's ``SmoothSegmentedFunction``: quintic Bezier segments on [x0, x1],
    straight lines (slopes dydx0, dydx1) outside."""

    ctrl_x: np.ndarray  # (m, 6)
    ctrl_y: np.ndarray  # (m, 6)
    x0: float
    x1: float
    y0: float
    y1: float
    dydx0: float
    dydx1: float

    def __post_init__(self):
        for name in ("ctrl_x", "ctrl_y"):
            a = np.array(getattr(self, name), dtype=float, copy=True).reshape(-1, 6)
            a.setflags(write=False)
            object.__setattr__(self, name, a)
        if self.ctrl_x.shape != self.ctrl_y.shape:
            raise ValueError("ctrl_x and ctrl_y must have the same shape")

    @cached_property
    def _tables(self):
        # monotone samples of x(u) per segment, for the initial guess of u
        u = np.linspace(0.0, 1.0, 65)
        xs = [_bezier(np.broadcast_to(px, (u.size, 6)), u, 0) for px in self.ctrl_x]
        return u, xs

    def _solve_u(self, x: np.ndarray, seg: int) -> np.ndarray:
        """u in [0, 1] with x_seg(u) = x (x inside the segment), to machine precision."""
        px = np.broadcast_to(self.ctrl_x[seg], (x.size, 6))
        ugrid, xs = self._tables
        u = np.interp(x, xs[seg], ugrid)
        lo = np.zeros_like(x)
        hi = np.ones_like(x)
        scale = max(abs(self.ctrl_x[seg, 0]), abs(self.ctrl_x[seg, 5]), 1.0)
        for _ in range(60):
            f = _bezier(px, u, 0) - x
            done = np.abs(f) <= 2.0 * _EPS * scale
            if np.all(done):
                break
            # keep a bracket (x(u) increases with u on these curves)
            lo = np.where(f < 0, np.maximum(lo, u), lo)
            hi = np.where(f > 0, np.minimum(hi, u), hi)
            df = _bezier(px, u, 1)
            with np.errstate(divide="ignore", invalid="ignore"):
                un = u - f / df
            bad = ~np.isfinite(un) | (un <= lo) | (un >= hi)
            un = np.where(bad, 0.5 * (lo + hi), un)
            step = np.abs(un - u)
            u = np.where(done, u, un)
            if np.all(done | (step <= 4 * _EPS)):
                break
        return np.clip(u, 0.0, 1.0)

    def evaluate(self, x: Any, order: int = 0) -> tuple[np.ndarray, ...]:
        """(y, dy/dx, d2y/dx2) up to ``order`` (0, 1 or 2), each shaped like ``x``."""
        xa = np.asarray(x, dtype=float)
        shape = xa.shape
        xf = xa.reshape(-1)
        y = np.empty_like(xf)
        d1 = np.empty_like(xf)
        d2 = np.zeros_like(xf)
        left = xf < self.x0
        right = xf > self.x1
        y[left] = self.y0 + self.dydx0 * (xf[left] - self.x0)
        d1[left] = self.dydx0
        y[right] = self.y1 + self.dydx1 * (xf[right] - self.x1)
        d1[right] = self.dydx1
        inside = ~(left | right)
        nan = np.isnan(xf)
        y[nan] = d1[nan] = d2[nan] = np.nan
        inside &= ~nan
        if np.any(inside):
            xi = xf[inside]
            starts = self.ctrl_x[:, 0]
            ends = self.ctrl_x[:, 5]
            # first segment with start <= x < end (OpenSim's calcIndex); the last end belongs to the last
            member = (xi[:, None] >= starts[None, :]) & (xi[:, None] < ends[None, :])
            idx = np.where(member.any(axis=1), member.argmax(axis=1), self.ctrl_x.shape[0] - 1)
            yi = np.empty_like(xi)
            d1i = np.empty_like(xi)
            d2i = np.empty_like(xi)
            for s in np.unique(idx):
                m = idx == s
                u = self._solve_u(xi[m], int(s))
                px = np.broadcast_to(self.ctrl_x[s], (u.size, 6))
                py = np.broadcast_to(self.ctrl_y[s], (u.size, 6))
                yi[m] = _bezier(py, u, 0)
                if order >= 1:
                    dx = _bezier(px, u, 1)
                    dy = _bezier(py, u, 1)
                    d1i[m] = dy / dx
                    if order >= 2:
                        ddx = _bezier(px, u, 2)
                        ddy = _bezier(py, u, 2)
                        d2i[m] = (ddy * dx - dy * ddx) / dx**3
            y[inside] = yi
            if order >= 1:
                d1[inside] = d1i
            if order >= 2:
                d2[inside] = d2i
        out = [y.reshape(shape)]
        if order >= 1:
            out.append(d1.reshape(shape))
        if order >= 2:
            out.append(d2.reshape(shape))
        return tuple(out)

    def __call__(self, x: Any) -> np.ndarray:
        return self.evaluate(x, 0)[0]

    def derivative(self, x: Any, order: int = 1) -> np.ndarray:
        return self.evaluate(x, order)[order]


def _scale_curviness(c: float) -> float:
    return 0.1 + 0.8 * c


# =============================================================================
# Millard 2012 curve objects
# =============================================================================
class _MillardCurve:
    """Shared behaviour of the Millard curve descriptions (frozen dataclasses)."""

    type_name = ""

    def __call__(self, x: Any) -> np.ndarray:
        return self.curve(x)

    def evaluate(self, x: Any, order: int = 0):
        return self.curve.evaluate(x, order)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type_name, **asdict(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]):
        d = dict(d)
        t = d.pop("type", cls.type_name)
        if t != cls.type_name:
            raise ValueError(f"expected a {cls.type_name} description, got {t!r}")
        return cls(**d)


@dataclass(frozen=True)
class ActiveForceLengthCurve(_MillardCurve):
    """Millard's active force-length multiplier f_L(l~) (OpenSim ``ActiveForceLengthCurve``)."""

    min_norm_active_fiber_length: float = 0.47 - 0.0259
    transition_norm_fiber_length: float = 0.73
    max_norm_active_fiber_length: float = 1.8123
    shallow_ascending_slope: float = 0.8616
    minimum_value: float = 0.1
    type_name = "ActiveForceLengthCurve"

    @cached_property
    def curve(self) -> SmoothSegmentedCurve:
        x0 = self.min_norm_active_fiber_length
        x1 = self.transition_norm_fiber_length
        x2 = 1.0
        x3 = self.max_norm_active_fiber_length
        ylow = self.minimum_value
        dydx = self.shallow_ascending_slope
        if not (x0 >= 0 and x1 > x0 + _ROOT_EPS and x2 > x1 + _ROOT_EPS and x3 > x2 + _ROOT_EPS):
            raise ValueError(
                "ActiveForceLengthCurve: need 0 <= min_norm_active_fiber_length < "
                "transition_norm_fiber_length < 1 < max_norm_active_fiber_length"
            )
        if ylow < 0:
            raise ValueError("ActiveForceLengthCurve: minimum_value must be >= 0")
        if not (0 <= dydx < (1 - ylow) / (x2 - x1)):
            raise ValueError(
                f"ActiveForceLengthCurve: shallow_ascending_slope must be in [0, {(1 - ylow) / (x2 - x1):g})"
            )
        c = _scale_curviness(1.0)
        x_delta = 0.05 * x2
        xs = x2 - x_delta
        y0, dydx0 = 0.0, 0.0
        y1 = 1.0 - dydx * (xs - x1)
        dydx01 = 1.25 * (y1 - y0) / (x1 - x0)
        x01 = x0 + 0.5 * (x1 - x0)
        y01 = y0 + 0.5 * (y1 - y0)
        x1s = x1 + 0.5 * (xs - x1)
        y1s = y1 + 0.5 * (1.0 - y1)
        dydx1s = dydx
        y2, dydx2 = 1.0, 0.0
        y3, dydx3 = 0.0, 0.0
        x23 = (x2 + x_delta) + 0.5 * (x3 - (x2 + x_delta))
        y23 = y2 + 0.5 * (y3 - y2)
        dydx23 = (y3 - y2) / ((x3 - x_delta) - (x2 + x_delta))
        segs = [
            quintic_bezier_corner(x0, ylow, dydx0, x01, y01, dydx01, c),
            quintic_bezier_corner(x01, y01, dydx01, x1s, y1s, dydx1s, c),
            quintic_bezier_corner(x1s, y1s, dydx1s, x2, y2, dydx2, c),
            quintic_bezier_corner(x2, y2, dydx2, x23, y23, dydx23, c),
            quintic_bezier_corner(x23, y23, dydx23, x3, ylow, dydx3, c),
        ]
        return SmoothSegmentedCurve(
            np.array([s[0] for s in segs]), np.array([s[1] for s in segs]), x0, x3, ylow, ylow, 0.0, 0.0
        )


def _fv_control_points(fmax_e, dydx_c, dydx_near_c, dydx_iso, dydx_e, dydx_near_e, conc_curv, ecc_curv):
    c_c = _scale_curviness(conc_curv)
    c_e = _scale_curviness(ecc_curv)
    x_c, y_c = -1.0, 0.0
    x_near_c = -0.9
    y_near_c = y_c + 0.5 * dydx_near_c * (x_near_c - x_c) + 0.5 * dydx_c * (x_near_c - x_c)
    x_iso, y_iso = 0.0, 1.0
    x_e, y_e = 1.0, fmax_e
    x_near_e = 0.9
    y_near_e = y_e + 0.5 * dydx_near_e * (x_near_e - x_e) + 0.5 * dydx_e * (x_near_e - x_e)
    segs = [
        quintic_bezier_corner(x_c, y_c, dydx_c, x_near_c, y_near_c, dydx_near_c, c_c),
        quintic_bezier_corner(x_near_c, y_near_c, dydx_near_c, x_iso, y_iso, dydx_iso, c_c),
        quintic_bezier_corner(x_iso, y_iso, dydx_iso, x_near_e, y_near_e, dydx_near_e, c_e),
        quintic_bezier_corner(x_near_e, y_near_e, dydx_near_e, x_e, y_e, dydx_e, c_e),
    ]
    return np.array([s[0] for s in segs]), np.array([s[1] for s in segs]), (x_c, x_e, y_c, y_e)


@dataclass(frozen=True)
class ForceVelocityCurve(_MillardCurve):
    """Millard's force-velocity multiplier f_V(v~), v~ = fiber velocity / (v_max l_opt),
    negative when shortening (OpenSim ``ForceVelocityCurve``)."""

    concentric_slope_at_vmax: float = 0.0
    concentric_slope_near_vmax: float = 0.25
    isometric_slope: float = 5.0
    eccentric_slope_at_vmax: float = 0.0
    eccentric_slope_near_vmax: float = 0.15
    max_eccentric_velocity_force_multiplier: float = 1.4
    concentric_curviness: float = 0.6
    eccentric_curviness: float = 0.9
    type_name = "ForceVelocityCurve"

    @cached_property
    def curve(self) -> SmoothSegmentedCurve:
        fmax = self.max_eccentric_velocity_force_multiplier
        if not fmax > 1.0:
            raise ValueError("ForceVelocityCurve: max_eccentric_velocity_force_multiplier must be > 1")
        if not 0.0 <= self.concentric_slope_at_vmax < 1:
            raise ValueError("ForceVelocityCurve: concentric_slope_at_vmax must be in [0, 1)")
        if not self.concentric_slope_at_vmax < self.concentric_slope_near_vmax <= 1:
            raise ValueError("ForceVelocityCurve: need concentric_slope_at_vmax < concentric_slope_near_vmax <= 1")
        if not self.isometric_slope > 1:
            raise ValueError("ForceVelocityCurve: isometric_slope must be > 1")
        if not 0.0 <= self.eccentric_slope_at_vmax < fmax - 1:
            raise ValueError("ForceVelocityCurve: eccentric_slope_at_vmax must be in [0, fmax-1)")
        if not self.eccentric_slope_at_vmax <= self.eccentric_slope_near_vmax < fmax - 1:
            raise ValueError("ForceVelocityCurve: need eccentric_slope_at_vmax <= eccentric_slope_near_vmax < fmax-1")
        for name in ("concentric_curviness", "eccentric_curviness"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"ForceVelocityCurve: {name} must be in [0, 1]")
        cx, cy, (x_c, x_e, y_c, y_e) = _fv_control_points(
            fmax, self.concentric_slope_at_vmax, self.concentric_slope_near_vmax, self.isometric_slope,
            self.eccentric_slope_at_vmax, self.eccentric_slope_near_vmax,
            self.concentric_curviness, self.eccentric_curviness,
        )
        return SmoothSegmentedCurve(cx, cy, x_c, x_e, y_c, y_e, self.concentric_slope_at_vmax,
                                    self.eccentric_slope_at_vmax)


@dataclass(frozen=True)
class ForceVelocityInverseCurve(ForceVelocityCurve):
    """The inverse v~(f_V) of a force-velocity curve (OpenSim ``ForceVelocityInverseCurve``);
    its end slopes must be positive."""

    concentric_slope_at_vmax: float = 0.1
    eccentric_slope_at_vmax: float = 0.1
    type_name = "ForceVelocityInverseCurve"

    @cached_property
    def curve(self) -> SmoothSegmentedCurve:
        if not self.concentric_slope_at_vmax > 0 or not self.eccentric_slope_at_vmax > 0:
            raise ValueError("ForceVelocityInverseCurve: the slopes at vmax must be > 0")
        cx, cy, (x_c, x_e, y_c, y_e) = _fv_control_points(
            self.max_eccentric_velocity_force_multiplier, self.concentric_slope_at_vmax,
            self.concentric_slope_near_vmax, self.isometric_slope, self.eccentric_slope_at_vmax,
            self.eccentric_slope_near_vmax, self.concentric_curviness, self.eccentric_curviness,
        )
        return SmoothSegmentedCurve(cy, cx, y_c, y_e, x_c, x_e, 1.0 / self.concentric_slope_at_vmax,
                                    1.0 / self.eccentric_slope_at_vmax)


@dataclass(frozen=True)
class FiberForceLengthCurve(_MillardCurve):
    """Millard's passive fiber force-length multiplier f_PE(l~) (OpenSim ``FiberForceLengthCurve``).

    The optional stiffness_at_low_force, stiffness_at_one_norm_force and curviness
    must be all given or all None; when None OpenSim uses k_iso = 2/(e1 - e0),
    k_low = 0.2, curviness 0.75.
    """

    strain_at_zero_force: float = 0.0
    strain_at_one_norm_force: float = 0.7
    stiffness_at_low_force: float | None = None
    stiffness_at_one_norm_force: float | None = None
    curviness: float | None = None
    type_name = "FiberForceLengthCurve"

    def parameters_in_use(self) -> tuple[float, float, float]:
        """(k_low, k_iso, curviness) actually used."""
        opt = (self.stiffness_at_low_force, self.stiffness_at_one_norm_force, self.curviness)
        if all(v is not None for v in opt):
            return float(opt[0]), float(opt[1]), float(opt[2])
        if all(v is None for v in opt):
            e0, e1 = self.strain_at_zero_force, self.strain_at_one_norm_force
            return 0.2, 2.0 / (e1 - e0), 0.75
        raise ValueError(
            "FiberForceLengthCurve: stiffness_at_low_force, stiffness_at_one_norm_force and "
            "curviness must either all be set or all be empty"
        )

    @cached_property
    def curve(self) -> SmoothSegmentedCurve:
        e_zero, e_iso = self.strain_at_zero_force, self.strain_at_one_norm_force
        k_low, k_iso, curv = self.parameters_in_use()
        if not e_iso > e_zero:
            raise ValueError("FiberForceLengthCurve: need strain_at_one_norm_force > strain_at_zero_force")
        if not k_iso > 1.0 / (e_iso - e_zero):
            raise ValueError("FiberForceLengthCurve: stiffness_at_one_norm_force must be > 1/(e_iso - e_zero)")
        if not 0.0 < k_low < 1.0 / (e_iso - e_zero):
            raise ValueError("FiberForceLengthCurve: stiffness_at_low_force must be in (0, 1/(e_iso - e_zero))")
        if not 0.0 <= curv <= 1.0:
            raise ValueError("FiberForceLengthCurve: curviness must be in [0, 1]")
        c = _scale_curviness(curv)
        x_zero, y_zero = 1.0 + e_zero, 0.0
        x_iso, y_iso = 1.0 + e_iso, 1.0
        delta_x = min(0.1 * (1.0 / k_iso), 0.1 * (x_iso - x_zero))
        x_low = x_zero + delta_x
        x_foot = x_zero + 0.5 * (x_low - x_zero)
        y_low = 0.0 + k_low * (x_low - x_foot)
        segs = [
            quintic_bezier_corner(x_zero, y_zero, 0.0, x_low, y_low, k_low, c),
            quintic_bezier_corner(x_low, y_low, k_low, x_iso, y_iso, k_iso, c),
        ]
        return SmoothSegmentedCurve(
            np.array([s[0] for s in segs]), np.array([s[1] for s in segs]), x_zero, x_iso, y_zero, y_iso, 0.0, k_iso
        )


@dataclass(frozen=True)
class TendonForceLengthCurve(_MillardCurve):
    """Millard's tendon force-length multiplier f_T(l~_T), l~_T = tendon length / slack length
    (OpenSim ``TendonForceLengthCurve``).  Optional parameters all given or all None
    (then k_iso = 1.375/e_iso, f_toe = 2/3, curviness 0.5)."""

    strain_at_one_norm_force: float = 0.049
    stiffness_at_one_norm_force: float | None = None
    norm_force_at_toe_end: float | None = None
    curviness: float | None = None
    type_name = "TendonForceLengthCurve"

    def parameters_in_use(self) -> tuple[float, float, float]:
        """(k_iso, f_toe, curviness) actually used."""
        opt = (self.stiffness_at_one_norm_force, self.norm_force_at_toe_end, self.curviness)
        if all(v is not None for v in opt):
            return float(opt[0]), float(opt[1]), float(opt[2])
        if all(v is None for v in opt):
            return 1.375 / self.strain_at_one_norm_force, 2.0 / 3.0, 0.5
        raise ValueError(
            "TendonForceLengthCurve: stiffness_at_one_norm_force, norm_force_at_toe_end and "
            "curviness must either all be set or all be empty"
        )

    @cached_property
    def curve(self) -> SmoothSegmentedCurve:
        e_iso = self.strain_at_one_norm_force
        k_iso, f_toe, curv = self.parameters_in_use()
        if not e_iso > 0:
            raise ValueError("TendonForceLengthCurve: strain_at_one_norm_force must be > 0")
        if not 0 < f_toe < 1:
            raise ValueError("TendonForceLengthCurve: norm_force_at_toe_end must be in (0, 1)")
        if not k_iso > 1.0 / e_iso:
            raise ValueError("TendonForceLengthCurve: stiffness_at_one_norm_force must be > 1/strain_at_one_norm_force")
        if not 0 <= curv <= 1:
            raise ValueError("TendonForceLengthCurve: curviness must be in [0, 1]")
        c = _scale_curviness(curv)
        x0, y0, dydx0 = 1.0, 0.0, 0.0
        x_iso, y_iso = 1.0 + e_iso, 1.0
        y_toe = f_toe
        x_toe = (y_toe - 1.0) / k_iso + x_iso
        x_foot = 1.0 + (x_toe - 1.0) / 10.0
        y_foot = 0.0
        y_toe_mid = 0.5 * y_toe
        x_toe_mid = (y_toe_mid - y_iso) / k_iso + x_iso
        dydx_toe_mid = (y_toe_mid - y_foot) / (x_toe_mid - x_foot)
        x_toe_ctrl = x_foot + 0.5 * (x_toe_mid - x_foot)
        y_toe_ctrl = y_foot + dydx_toe_mid * (x_toe_ctrl - x_foot)
        segs = [
            quintic_bezier_corner(x0, y0, dydx0, x_toe_ctrl, y_toe_ctrl, dydx_toe_mid, c),
            quintic_bezier_corner(x_toe_ctrl, y_toe_ctrl, dydx_toe_mid, x_toe, y_toe, k_iso, c),
        ]
        return SmoothSegmentedCurve(
            np.array([s[0] for s in segs]), np.array([s[1] for s in segs]), x0, x_toe, y0, y_toe, dydx0, k_iso
        )


# =============================================================================
# Thelen 2003 (as implemented in OpenSim's Thelen2003Muscle)
# =============================================================================
def _thelen_curve(which: int, x, p0: float, p1: float = 0.0, p2: float = 0.0) -> np.ndarray:
    """A Thelen curve over an array, by the compiled muscle loop's own formula (osim_emb.muscles.kernels)."""
    xa = np.asarray(x, dtype=float)
    out = np.empty(xa.shape)
    thelen_curve_array(which, np.ascontiguousarray(xa).reshape(-1), float(p0), float(p1), float(p2), out.reshape(-1))
    return out


def thelen_active_force_length(norm_fiber_length, k_shape_active: float) -> np.ndarray:
    """f_L = exp(-(l~ - 1)^2 / gamma)  (Thelen 2003 Eq. 3; gamma = KshapeActive)."""
    return _thelen_curve(1, norm_fiber_length, k_shape_active)


def thelen_passive_force_length(norm_fiber_length, fmax_muscle_strain: float, k_shape_passive: float) -> np.ndarray:
    """f_PE = (exp(k_PE (l~ - 1)/e0_M) - 1) / (exp(k_PE) - 1) for l~ > 1, else 0 (Thelen 2003 Eq. 2)."""
    return _thelen_curve(2, norm_fiber_length, k_shape_passive, fmax_muscle_strain, np.exp(k_shape_passive) - 1.0)


def _thelen_tendon_constants(e0: float):
    k_toe = 3.0
    f_toe = 33.0 / 100.0
    e3 = np.exp(3.0)
    e_toe = 99.0 * e0 * e3 / (166.0 * e3 - 67.0)
    k_lin = 0.67 / (e0 - e_toe)
    return k_toe, f_toe, e_toe, k_lin


def thelen_tendon_force_length(norm_tendon_length, fmax_tendon_strain: float) -> np.ndarray:
    """Thelen 2003 Eq. 1 tendon force (OpenSim's exact e_toe, k_lin so that f_T(1 + e0) = 1)."""
    _, _, e_toe, k_lin = _thelen_tendon_constants(fmax_tendon_strain)
    return _thelen_curve(0, norm_tendon_length, e_toe, k_lin)


def _thelen_ecc_constants(activation, af, flen, threshold):
    k = 0.25 + 0.75 * activation
    c = (2.0 + 2.0 / af) / (flen - 1.0)  # b = c (a f_L Flen - F) on the eccentric branch
    return k, c


def thelen_fiber_velocity(fv, activation, af: float, flen: float, threshold: float) -> np.ndarray:
    """Normalized fiber velocity v~ (per v_max l_opt; > 0 lengthening) at which the Thelen
    force-velocity multiplier equals ``fv`` (OpenSim's ``calcdlceN`` at a f_L = 1; it depends on the force only
    through F / (a f_L)).  Linear extrapolation below fv = 0 and above threshold*Flen.  Evaluated by the
    compiled muscle loop's :func:`osim_emb.muscles.kernels.thelen_fiber_velocity`."""
    fv, a = np.broadcast_arrays(np.asarray(fv, dtype=float), np.asarray(activation, dtype=float))
    out = np.empty(fv.shape)
    thelen_fiber_velocity_array(np.ascontiguousarray(0.25 + 0.75 * a).reshape(-1),
                                np.ascontiguousarray(fv).reshape(-1), float(af), float(flen), float(threshold),
                                out.reshape(-1))
    return out


def thelen_force_velocity(norm_fiber_velocity, activation, af: float, flen: float, threshold: float) -> np.ndarray:
    """Thelen 2003 force-velocity multiplier f_V(v~, a) as OpenSim's Thelen2003Muscle defines it.

    OpenSim gives fiber velocity as a function of force (Thelen 2003 Eqs. 6-7:
    v~ = (0.25 + 0.75 a)(F - a f_L) / b, b = a f_L + F/A_f when shortening,
    b = (2 + 2/A_f)(a f_L F_len - F)/(F_len - 1) when lengthening, continued
    linearly above F = threshold * F_len * a f_L and below F = 0) and inverts
    it with Newton's method; that relation is inverted here in closed form.
    Because F enters only as F/(a f_L), the multiplier does not depend on f_L,
    but it does on the activation a (through 0.25 + 0.75 a).  OpenSim then
    clamps the result at 0.  ``activation`` should already be clamped to
    [minimum_activation, 1].
    """
    v = np.asarray(norm_fiber_velocity, dtype=float)
    a = np.asarray(activation, dtype=float)
    k, c = _thelen_ecc_constants(a, af, flen, threshold)
    fv_thr = threshold * flen
    b0 = c * flen * (1.0 - threshold)
    v_thr = k * (fv_thr - 1.0) / b0
    slope = k / b0 + k * (fv_thr - 1.0) * c / (b0 * b0)
    with np.errstate(divide="ignore", invalid="ignore"):
        conc = (k + v) / (k - v / af)  # -k < v <= 0
        ecc = (k + v * c * flen) / (k + v * c)  # 0 < v < v_thr
        ecc_lin = fv_thr + (v - v_thr) / slope
        conc_lin = (v + k) / (k * (1.0 + 1.0 / af))  # v <= -k (<= 0, clamped below)
    fv = np.where(v <= -k, conc_lin, np.where(v <= 0.0, conc, np.where(v < v_thr, ecc, ecc_lin)))
    return np.maximum(fv, 0.0)


# =============================================================================
# Schutte 1993 (OpenSim's Schutte1993Muscle_Deprecated)
# =============================================================================
SCHUTTE_KV = 0.15
SCHUTTE_SLOPE_K = 0.13
SCHUTTE_FMAX = 1.4


def schutte_force_velocity(norm_fiber_velocity) -> np.ndarray:
    """Schutte's force-velocity multiplier f_V(v~), v~ = fiber velocity * time_scale / l_opt.

    OpenSim's ``Schutte1993Muscle_Deprecated::calcFiberVelocity`` returns the
    fiber velocity that makes the "velocity dependent force" F_v (tendon force /
    cos(pennation) minus passive force, normalized) equal to
        F_v = a f_L f_V(v~) + d v~          (d = damping)
    with
        f_V = (1 + v~)/(1 - v~/k_v)                          for -1 <= v~ <= 0,
        f_V = (F_max v~ + s)/(v~ + s),  s = slope_k k_v/(k_v + 1)   for v~ >= 0,
        f_V = 0                                              for v~ < -1,
    k_v = 0.15, slope_k = 0.13, F_max = 1.4: the roots of its quadratics solved
    for F_v.  This function is that f_V.
    """
    v = np.asarray(norm_fiber_velocity, dtype=float)
    kv, sk, fmax = SCHUTTE_KV, SCHUTTE_SLOPE_K, SCHUTTE_FMAX
    s = sk * kv / (kv + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        conc = (1.0 + v) * kv / (kv - v)
        ecc = (fmax * v + s) / (v + s)
    return np.where(v < -1.0, 0.0, np.where(v <= 0.0, conc, ecc))


def schutte_fiber_velocity(activation, active_force, velocity_dependent_force, damping: float) -> np.ndarray:
    """OpenSim's ``Schutte1993Muscle_Deprecated::calcFiberVelocity`` (normalized fiber velocity
    from force), vectorized: the forward relation that :func:`schutte_force_velocity` inverts."""
    a = np.asarray(activation, dtype=float)
    fa = np.asarray(active_force, dtype=float)
    fvd = np.asarray(velocity_dependent_force, dtype=float)
    kv, sk, fmax, d = SCHUTTE_KV, SCHUTTE_SLOPE_K, SCHUTTE_FMAX, damping
    afl = a * fa
    c2 = kv * (fvd - afl) / d
    b2 = -kv * (fvd / kv + afl + d) / d
    c3 = -(sk * kv / (d * (kv + 1.0))) * (fvd - afl)
    b3 = -(fvd / d - fmax * afl / d - sk * kv / (kv + 1.0))
    with np.errstate(invalid="ignore"):
        v2 = (-b2 - np.sqrt(b2 * b2 - 4.0 * c2)) / 2.0
        v3 = (-b3 + np.sqrt(b3 * b3 - 4.0 * c3)) / 2.0
    return np.where(fvd < -d, fvd / d, np.where(fvd < afl, v2, v3))
