"""The seed's planar closed-chain linkages (section 4-3): the four-bar (Eq 121) and the five-bar (Eq 123).

Both are built as :class:`~osim_emb.model.Model` objects whose joint variables
are the chain's f_i(q) (:class:`~osim_emb.core.closed_chains.ChainVariable`), so that
the package's closed-form kinematics (Eqs 44, 57 with Eqs 75, 99) give the
velocity and acceleration of a point p; :class:`~osim_emb.seeds.mechanisms.planar.PlanarBodySystem`
models give the same quantities by the traditional method (Shabana 2005).

Conventions.  Every link i has a frame at its proximal joint with x along the
link; theta_i is the angle of link i relative to link i-1 (theta_1 from the
ground's x axis), so that the absolute angle of link i is theta_1 + ... + theta_i
(the S_12..i, C_12..i of Eq 122).  The inertial frame is at the ground pivot O.

Four-bar (Fig 3, Eq 121).  Links 1 (crank, l1), 2 (coupler, l2, centre of mass
at l_cm2 from joint 2) and 3 (l3) and the ground link l0 from O to the second
ground pivot.  The generalized coordinate q is the height of the coupler's
centre of mass; all three angles are dependent:

    l1 S1 + l_cm2 S12 - q = 0
    (l2 - l_cm2) S12 + l3 S123 + q = 0
    l1 C1 + l2 C12 + l3 C123 - l0 = 0

The seed's Table 1 (the lengths) is missing from the text; the values used here
are our choice: l0 = 2, l1 = 3, l2 = 4, l_cm2 = 2, l3 = 4.5, a Grashof drag-link
(shortest link = ground).  On the assembly branch used (coupler above the line
from joint 2 to the rocker pivot) q moves over (-2.62, 3.65) between two dead
points (dq/dtheta = 0, where dg/df is singular), so the seed's sweep range
[-2, 2] lies inside.  Point p (not defined in the text) is taken on the coupler
at (l2/2, 1) in the coupler frame - a coupler point off the link's line.

Five-bar (Fig 7, Eq 123, Table 2: l0 = 3, l1 = 1, l2 = 1, l3 = 3, l4 = 3, lp = 2).
q = (theta_1, theta_2) are generalized coordinates, theta_3 and theta_4 dependent:

    l1 S1 + l2 S12 + l3 S123 + l4 S1234 = 0
    l1 C1 + l2 C12 + l3 C123 + l4 C1234 = l0

Point p is read from the figures as the point of link 3 at distance lp = 2 from
joint 3 (on the link's line).  Since |E - D| (E the end of link 2, D the ground
pivot) stays within [1, 5], strictly between |l3 - l4| = 0 and l3 + l4 = 6, the
chain never reaches a singular configuration: every (theta_1, theta_2) assembles,
on the branch chosen at q = 0 (joint 4 above the ground line).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from osim_emb.core.closed_chains import ClosedChain, HolonomicConstraints, continuation_guess, solve_constraints
from osim_emb.core.functions import coordinate
from osim_emb.core.kinematics import forward_kinematics, point_accelerations, point_positions, point_velocities
from osim_emb.model import Body, GeneralizedCoordinate, Model
from osim_emb.seeds.mechanisms.planar import (
    AngleDriver,
    HermiteTrajectory,
    PlanarBodySystem,
    PointDriver,
    Revolute2D,
    TrigTerm,
    planar_revolute,
    trigonometric_constraints,
)

__all__ = [
    "FourBarParameters",
    "FiveBarParameters",
    "four_bar_constraints",
    "four_bar_reference_assembly",
    "four_bar_chain",
    "four_bar_model",
    "four_bar_body_system",
    "four_bar_trajectory",
    "five_bar_constraints",
    "five_bar_reference_assembly",
    "five_bar_chain",
    "five_bar_model",
    "five_bar_body_system",
    "five_bar_trajectory",
    "point_p_kinematics",
    "body_guess_from_angles",
]


# --------------------------------------------------------------------------------------------
# four-bar
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FourBarParameters:
    """Lengths of the four-bar (our choice; the seed's Table 1 is missing) and point p in the coupler frame."""

    l0: float = 2.0
    l1: float = 3.0
    l2: float = 4.0
    l3: float = 4.5
    lcm2: float = 2.0
    p: tuple[float, float] = (2.0, 1.0)
    q_range: tuple[float, float] = (-2.0, 2.0)
    masses: tuple[float, float, float] = (1.0, 1.5, 1.2)


def _cum(n: int, upto: int, extra: int = 0) -> tuple[float, ...]:
    """Weights of theta_1 + ... + theta_upto over z = (theta_1..theta_n, q...)."""
    w = [1.0 if i < upto else 0.0 for i in range(n)]
    return tuple(w + [0.0] * extra)


def four_bar_constraints(par: FourBarParameters = FourBarParameters()) -> HolonomicConstraints:
    """Eq 121 with f = (theta_1, theta_2, theta_3), q = coupler centre-of-mass height; exact derivatives."""
    n, e = 3, 1
    t = [
        TrigTerm(0, par.l1, "sin", _cum(n, 1, e)), TrigTerm(0, par.lcm2, "sin", _cum(n, 2, e)),
        TrigTerm(1, par.l2 - par.lcm2, "sin", _cum(n, 2, e)), TrigTerm(1, par.l3, "sin", _cum(n, 3, e)),
        TrigTerm(2, par.l1, "cos", _cum(n, 1, e)), TrigTerm(2, par.l2, "cos", _cum(n, 2, e)),
        TrigTerm(2, par.l3, "cos", _cum(n, 3, e)),
    ]
    linear = np.zeros((3, 4))
    linear[0, 3], linear[1, 3] = -1.0, 1.0
    return trigonometric_constraints("four-bar (Eq 121)", 3, 1, t, linear, [0.0, 0.0, -par.l0],
                                     variable_names=("theta1", "theta2", "theta3"), coordinate_names=("q",),
                                     coordinate_range=[par.q_range], length_scale=par.l1)


def four_bar_reference_assembly(par: FourBarParameters = FourBarParameters(), q: float = 0.0) -> np.ndarray:
    """(theta_1, theta_2, theta_3) at coupler height q on the branch used here, by a 1-D search over theta_1.

    Triangle closure of joint 2 - joint 3 - rocker pivot (coupler above the
    diagonal), then the crank angle on the arc where q increases with theta_1.
    Used once, as the starting point of continuation.
    """
    th = np.linspace(-np.pi, np.pi, 20001)
    a = np.stack([par.l1 * np.cos(th), par.l1 * np.sin(th)], 1)
    dvec = np.array([par.l0, 0.0]) - a
    d = np.linalg.norm(dvec, axis=1)
    phi2 = np.arctan2(dvec[:, 1], dvec[:, 0]) + np.arccos(
        np.clip((par.l2 ** 2 + d ** 2 - par.l3 ** 2) / (2 * par.l2 * d), -1, 1))
    qq = par.l1 * np.sin(th) + par.lcm2 * np.sin(phi2)
    rising = np.gradient(qq) > 0
    k = int(np.argmin(np.where(rising, np.abs(qq - q), np.inf)))
    c = a[k] + par.l2 * np.array([np.cos(phi2[k]), np.sin(phi2[k])])
    phi3 = np.arctan2(-c[1], par.l0 - c[0])
    return np.angle(np.exp(1j * np.array([th[k], phi2[k] - th[k], phi3 - phi2[k]])))  # wrapped to (-pi, pi]


def four_bar_chain(par: FourBarParameters = FourBarParameters(), method: str = "projection") -> ClosedChain:
    """The four-bar's three angles as exact functions of q (Newton + projection derivatives)."""
    cons = four_bar_constraints(par)
    f0 = solve_constraints(cons, [[0.0]], four_bar_reference_assembly(par, 0.0))[0]
    return ClosedChain(cons, continuation_guess(cons, [0.0], f0), method=method)


def _link_body(name: str, frame: int, length: float, mass: float, com_x: float | None = None) -> Body:
    cx = length / 2 if com_x is None else com_x
    izz = mass * length ** 2 / 12
    return Body(name, frame, mass, (cx, 0.0, 0.0), np.diag([izz / 10, izz, izz]))


def four_bar_model(par: FourBarParameters = FourBarParameters(), variables: Any = None,
                   method: str = "projection") -> Model:
    """The four-bar as a Model: three revolute joints whose variables are f_i(q) of the chain.

    ``variables`` (three JointFunctions of q, e.g. a pre-model) replaces the exact chain variables.
    """
    if variables is None:
        variables = four_bar_chain(par, method).variables
    v1, v2, v3 = variables
    joints = (planar_revolute("theta1", 0, 0.0, v1), planar_revolute("theta2", 1, par.l1, v2),
              planar_revolute("theta3", 2, par.l2, v3))
    bodies = (_link_body("crank", 1, par.l1, par.masses[0]),
              _link_body("coupler", 2, par.l2, par.masses[1], par.lcm2),
              _link_body("rocker", 3, par.l3, par.masses[2]))
    coords = (GeneralizedCoordinate("q", par.q_range, 0.0, "translational"),)
    return Model("four-bar", coords, joints, bodies, gravity=[0.0, -9.80665, 0.0])


def four_bar_body_system(par: FourBarParameters = FourBarParameters()) -> PlanarBodySystem:
    """Traditional model: 3 bodies (frame at the proximal joint, x along the link), 4 pins, 1 driver y_cm2 = q."""
    pins = (Revolute2D(-1, (0.0, 0.0), 0, (0.0, 0.0)), Revolute2D(0, (par.l1, 0.0), 1, (0.0, 0.0)),
            Revolute2D(1, (par.l2, 0.0), 2, (0.0, 0.0)), Revolute2D(2, (par.l3, 0.0), -1, (par.l0, 0.0)))
    return PlanarBodySystem(3, pins, (PointDriver(1, (par.lcm2, 0.0), 1, 0),))


def four_bar_trajectory() -> HermiteTrajectory:
    """q(t) (seed Fig 4): piecewise cubic Hermite through six knots in [-2, 2] over t in [0, 5] s."""
    t = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    q = [-1.5, 0.2, 1.8, 0.5, -1.2, -1.5]
    dq = [0.0, 2.0, 0.0, -1.8, -0.6, 0.0]
    return HermiteTrajectory(t, q, dq)


# --------------------------------------------------------------------------------------------
# five-bar
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FiveBarParameters:
    """Table 2 of the seed; p is on link 3 at distance lp from joint 3."""

    l0: float = 3.0
    l1: float = 1.0
    l2: float = 1.0
    l3: float = 3.0
    l4: float = 3.0
    lp: float = 2.0
    masses: tuple[float, float, float, float] = (0.5, 0.5, 1.5, 1.5)


def five_bar_constraints(par: FiveBarParameters = FiveBarParameters()) -> HolonomicConstraints:
    """Eq 123 with f = (theta_3, theta_4), q = (theta_1, theta_2); exact derivatives.

    z = (theta_3, theta_4, theta_1, theta_2): the weights of S_12..k select the
    angles in that order.
    """
    def w(k):  # theta_1 + ... + theta_k in z = (th3, th4, th1, th2)
        return (1.0 if k >= 3 else 0.0, 1.0 if k >= 4 else 0.0, 1.0, 1.0 if k >= 2 else 0.0)

    ls = (par.l1, par.l2, par.l3, par.l4)
    t = [TrigTerm(0, ls[k - 1], "sin", w(k)) for k in range(1, 5)]
    t += [TrigTerm(1, ls[k - 1], "cos", w(k)) for k in range(1, 5)]
    return trigonometric_constraints("five-bar (Eq 123)", 2, 2, t, None, [0.0, -par.l0],
                                     variable_names=("theta3", "theta4"), coordinate_names=("theta1", "theta2"),
                                     length_scale=par.l0)


def five_bar_reference_assembly(par: FiveBarParameters = FiveBarParameters()) -> np.ndarray:
    """(theta_3, theta_4) at q = (0, 0) with joint 4 above the ground line (triangle closure; a starting point)."""
    e = np.array([par.l1 + par.l2, 0.0])
    dvec = np.array([par.l0, 0.0]) - e
    d = np.linalg.norm(dvec)
    phi3 = np.arctan2(dvec[1], dvec[0]) + np.arccos((par.l3 ** 2 + d ** 2 - par.l4 ** 2) / (2 * par.l3 * d))
    j4 = e + par.l3 * np.array([np.cos(phi3), np.sin(phi3)])
    phi4 = np.arctan2(-j4[1], par.l0 - j4[0])
    return np.array([phi3, phi4 - phi3])


def five_bar_chain(par: FiveBarParameters = FiveBarParameters(), method: str = "projection") -> ClosedChain:
    """theta_3, theta_4 as exact functions of (theta_1, theta_2) (Newton + projection derivatives)."""
    cons = five_bar_constraints(par)
    f0 = solve_constraints(cons, [[0.0, 0.0]], five_bar_reference_assembly(par))[0]
    return ClosedChain(cons, continuation_guess(cons, [0.0, 0.0], f0), method=method)


def five_bar_model(par: FiveBarParameters = FiveBarParameters(), variables: Any = None,
                   method: str = "projection") -> Model:
    """The five-bar as a Model: theta_1 = q_1, theta_2 = q_2 and theta_3(q), theta_4(q) of the chain."""
    if variables is None:
        variables = five_bar_chain(par, method).variables
    v3, v4 = variables
    joints = (planar_revolute("theta1", 0, 0.0, coordinate(0, 2)),
              planar_revolute("theta2", 1, par.l1, coordinate(1, 2)),
              planar_revolute("theta3", 2, par.l2, v3), planar_revolute("theta4", 3, par.l3, v4))
    bodies = tuple(_link_body(f"link{i + 1}", i + 1, length, mass)
                   for i, (length, mass) in enumerate(zip((par.l1, par.l2, par.l3, par.l4), par.masses)))
    coords = (GeneralizedCoordinate("theta1"), GeneralizedCoordinate("theta2"))
    return Model("five-bar", coords, joints, bodies, gravity=[0.0, -9.80665, 0.0])


def five_bar_body_system(par: FiveBarParameters = FiveBarParameters()) -> PlanarBodySystem:
    """Traditional model: 4 bodies, 5 pins, drivers phi_1 = q_1 and phi_2 - phi_1 = q_2."""
    pins = (Revolute2D(-1, (0.0, 0.0), 0, (0.0, 0.0)), Revolute2D(0, (par.l1, 0.0), 1, (0.0, 0.0)),
            Revolute2D(1, (par.l2, 0.0), 2, (0.0, 0.0)), Revolute2D(2, (par.l3, 0.0), 3, (0.0, 0.0)),
            Revolute2D(3, (par.l4, 0.0), -1, (par.l0, 0.0)))
    return PlanarBodySystem(4, pins, (AngleDriver(-1, 0, 0), AngleDriver(0, 1, 1)))


def five_bar_trajectory() -> HermiteTrajectory:
    """q(t) = (theta_1, theta_2) (seed Fig 8): piecewise cubic Hermite over t in [0, 4] s."""
    t = [0.0, 1.0, 2.0, 3.0, 4.0]
    q = [[0.0, 0.0], [1.2, 0.8], [2.4, -0.6], [1.0, -1.8], [0.3, -0.4]]
    dq = [[0.0, 0.0], [1.5, 0.2], [0.0, -1.5], [-1.2, 0.3], [0.0, 0.0]]
    return HermiteTrajectory(t, q, dq)


# --------------------------------------------------------------------------------------------
# shared helpers
# --------------------------------------------------------------------------------------------
def point_p_kinematics(model: Model, frame: int, r_p: Any, q: np.ndarray, qdot: np.ndarray, qddot: np.ndarray):
    """Position, velocity (Eq 44) and acceleration (Eq 57) of point p of ``frame`` (all (N, 3))."""
    kin = forward_kinematics(model, q, order=2)
    r_p = np.asarray(r_p, dtype=float)
    return (point_positions(kin, frame, r_p), point_velocities(kin, frame, r_p, qdot),
            point_accelerations(kin, frame, r_p, qdot, qddot))


def body_guess_from_angles(lengths: Any, angles: np.ndarray) -> np.ndarray:
    """Body coordinates (x, y, phi) of a serial chain of links from relative angles (a starting guess)."""
    lengths = np.asarray(lengths, dtype=float)
    phi = np.cumsum(angles)
    x = np.zeros(3 * len(angles))
    pos = np.zeros(2)
    for i, (length, ph) in enumerate(zip(lengths, phi)):
        x[3 * i:3 * i + 3] = pos[0], pos[1], ph
        pos = pos + length * np.array([np.cos(ph), np.sin(ph)])
    return x
