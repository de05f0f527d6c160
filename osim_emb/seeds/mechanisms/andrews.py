"""Andrews' squeezing mechanism (seed section 4-4 B, Eq 199; Hairer & Wanner II, sec. VII.7).

Seven planar bodies, one degree of freedom.  The standard coordinates are
q = (beta, Theta, gamma, Phi, delta, Omega, epsilon) (Hairer & Wanner; the
reference file ``shared/reference/andrews_squeezer.md``): the seed's generalized
coordinate is the drive angle beta, and the six other angles are the dependent
joint variables f = (Theta, gamma, Phi, delta, Omega, epsilon) tied to beta by
the six loop-closure constraints g_1..g_6 (the seed's Eq 199 writes the same
three loops with its own angle names, plus q - theta_1 = 0).

This module gives

* :class:`AndrewsParameters` (every parameter of the reference) and the
  consistent initial values;
* :func:`andrews_constraints` - g(f, beta) with exact derivatives;
* :func:`andrews_premodel` - method (a): sweep beta over one revolution (step
  about 0.01 rad as in the seed), solve, fit Fourier series with the secular term;
* :func:`andrews_chain` - method (b): the exact chain (Newton at every evaluation,
  projection derivatives), with the pre-model as the Newton guess;
* :func:`andrews_model` - the seven-body :class:`~osim_emb.model.Model` whose
  joint variables are f_i(beta) (from (a) or (b)); with the reference masses,
  inertias and geometry it has the reference's kinetic energy;
* :func:`reduced_equation_premodel` - the reduced equation m(beta) beta'' + c(beta) beta'^2 =
  tau(beta) with m, c, tau sampled from the package's dynamics and fitted with Fourier series
  (a fast right-hand side, the counterpart of the seed's symbolic MATLAB derivation);
* :func:`reduced_rhs` - the reduced equation (J^T M J) beta'' = J^T (f - M b) from
  the package's dynamics machinery: M_red = (J^T M J) and N_red beta' =
  J^T M b - J^T f_v are what :func:`~osim_emb.core.dynamics.dynamics_terms` returns for
  the one-coordinate model; the spring and the drive torque enter as generalized
  forces (:func:`~osim_emb.core.dynamics.point_force_generalized`);
* the reference's M(q), f(q, qdot), G(q) (:func:`reference_mass_matrix`,
  :func:`reference_forces`, :func:`reference_constraint_jacobian`) and
  :func:`dae_rhs` - the DAE in all seven coordinates reduced to index 1 (the
  acceleration-level constraint) with optional Baumgarte stabilization.

Geometry of the model (derived from the reference's constraints and mass
matrix; every joint is a revolute about z, frames in Featherstone order):

====  ========  ======  ====================  ===========================================
frame joint     parent  joint position         body: centre of mass, points
====  ========  ======  ====================  ===========================================
1     beta      ground  O = (0, 0)             body 1: com (ra, 0); F = (rr, 0)
2     Theta     1       F                      body 2: com (-da, 0); E = (-d, 0)
3     gamma     ground  B = (xb, yb)           body 3: com (sa, sb); E = (0, -ss); D = (sd, -sc)
4     delta     ground  A = (xa, ya)           body 5: com (ta, tb); joint Phi at (zt, 0)
5     Phi       4       (zt, 0) in frame 4     body 4: com (0, -(e - ea)); E = (0, -e)
6     epsilon   ground  A                      body 7: com (ua, ub); joint Omega at (0, -u)
7     Omega     6       (0, -u) in frame 6     body 6: com (zf - fa, 0); E = (zf, 0)
====  ========  ======  ====================  ===========================================

Only |com|^2 of the bodies that turn about a fixed pivot (3, 5, 7) enters the
dynamics (no gravity), so the direction of their centre of mass is free.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable

import numpy as np

from osim_emb.core.closed_chains import ClosedChain, HolonomicConstraints, function_guess, premodel
from osim_emb.core.dynamics import dynamics_terms, point_force_generalized
from osim_emb.core.functions import Fourier, JointFunction, coordinate
from osim_emb.core.kinematics import joint_variables, point_positions
from osim_emb.model import Body, GeneralizedCoordinate, Joint, Model, homogeneous
from osim_emb.seeds.mechanisms.planar import TrigTerm, trigonometric_constraints

__all__ = [
    "AndrewsParameters",
    "COORDINATE_NAMES",
    "DEPENDENT_NAMES",
    "Q0",
    "QDDOT0",
    "LAMBDA0",
    "PUBLISHED_T003",
    "PUBLISHED_SOURCE",
    "andrews_constraints",
    "andrews_premodel",
    "andrews_chain",
    "andrews_model",
    "spring_point",
    "generalized_forces",
    "reduced_rhs",
    "reduced_rhs_reference",
    "ReducedEquation",
    "reduced_equation_premodel",
    "full_state",
    "reference_mass_matrix",
    "reference_forces",
    "reference_constraints",
    "reference_constraint_jacobian",
    "constraint_curvature",
    "dae_accelerations",
    "dae_rhs",
    "dae_initial_state",
]

COORDINATE_NAMES = ("beta", "Theta", "gamma", "Phi", "delta", "Omega", "epsilon")
DEPENDENT_NAMES = COORDINATE_NAMES[1:]

#: Consistent initial values (Hairer & Wanner; IVP test set), in the order of COORDINATE_NAMES.
Q0 = np.array([-0.0617138900142764496358948458001, 0.0, 0.455279819163070380255912382449,
               0.222668390165885884674473185609, 0.487364979543842550225598953530,
               -0.222668390165885884674473185609, 1.23054744454982119249735015568])
QDDOT0 = np.array([14222.4439199541138705911625887, -10666.8329399655854029433719415, 0, 0, 0, 0, 0])
LAMBDA0 = np.array([98.5668703962410896057654982170, -6.12268834425566265503114393122, 0, 0, 0, 0])

#: Reference solution at t = 0.03 of the IVP test set (Mazzia & Magherini, problem ``andrews``), q then qdot.
PUBLISHED_T003 = {
    "q": np.array([0.1581077119629904e+2, -0.1575637105984298e+2, 0.4082224013073101e-1,
                   -0.5347301163226948e+0, 0.5244099658805304e+0, 0.5347301163226948e+0,
                   0.1048080741042263e+1]),
    "qdot": np.array([0.1139920302151208e+4, -0.1424379294994111e+4, 0.1103291221937134e+2,
                      0.1929337464421385e+2, 0.5735699284790808e+0, -0.1929337464421385e+2,
                      0.3231791658026955e+0]),
}
PUBLISHED_SOURCE = ("IVP test set (Mazzia & Magherini, Univ. Bari), problem 'andrews', subroutine SOLN/andsoln: "
                    "computed with PSIDE, rtol = atol = 1e-14, Cray C90 double precision; as distributed in "
                    "src/problems/andrews.f of the test set and in the R package deTestSet (src/Ex_andrews.f)")


@dataclass(frozen=True)
class AndrewsParameters:
    """Every parameter of the reference formulation (SI units)."""

    m1: float = 0.04325
    m2: float = 0.00365
    m3: float = 0.02373
    m4: float = 0.00706
    m5: float = 0.07050
    m6: float = 0.00706
    m7: float = 0.05498
    i1: float = 2.194e-6
    i2: float = 4.410e-7
    i3: float = 5.255e-6
    i4: float = 5.667e-7
    i5: float = 1.169e-5
    i6: float = 5.667e-7
    i7: float = 1.912e-5
    xa: float = -0.06934
    ya: float = -0.00227
    xb: float = -0.03635
    yb: float = 0.03273
    xc: float = 0.014
    yc: float = 0.072
    c0: float = 4530.0
    l0: float = 0.07785
    mom: float = 0.033
    d: float = 0.028
    da: float = 0.0115
    e: float = 0.02
    ea: float = 0.01421
    rr: float = 0.007
    ra: float = 0.00092
    ss: float = 0.035
    sa: float = 0.01874
    sb: float = 0.01043
    sc: float = 0.018
    sd: float = 0.02
    ta: float = 0.02308
    tb: float = 0.00916
    u: float = 0.04
    ua: float = 0.01228
    ub: float = 0.00449
    zf: float = 0.02
    zt: float = 0.04
    fa: float = 0.01421

    def as_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


# --------------------------------------------------------------------------------------------
# constraints and the closed chain
# --------------------------------------------------------------------------------------------
def andrews_constraints(par: AndrewsParameters = AndrewsParameters()) -> HolonomicConstraints:
    """g_1..g_6 of the reference with f = (Theta, gamma, Phi, delta, Omega, epsilon) and q = beta.

    z = (Theta, gamma, Phi, delta, Omega, epsilon, beta); exact first and second derivatives.
    """
    def w(**k):
        order = ("Theta", "gamma", "Phi", "delta", "Omega", "epsilon", "beta")
        return tuple(float(k.get(n, 0.0)) for n in order)

    b, bt = w(beta=1), w(beta=1, Theta=1)
    terms = []
    for row in (0, 2, 4):  # x rows: rr cos(beta) - d cos(beta + Theta)
        terms += [TrigTerm(row, par.rr, "cos", b), TrigTerm(row, -par.d, "cos", bt)]
    for row in (1, 3, 5):  # y rows: rr sin(beta) - d sin(beta + Theta)
        terms += [TrigTerm(row, par.rr, "sin", b), TrigTerm(row, -par.d, "sin", bt)]
    terms += [
        TrigTerm(0, -par.ss, "sin", w(gamma=1)), TrigTerm(1, par.ss, "cos", w(gamma=1)),
        TrigTerm(2, -par.e, "sin", w(Phi=1, delta=1)), TrigTerm(2, -par.zt, "cos", w(delta=1)),
        TrigTerm(3, par.e, "cos", w(Phi=1, delta=1)), TrigTerm(3, -par.zt, "sin", w(delta=1)),
        TrigTerm(4, -par.zf, "cos", w(Omega=1, epsilon=1)), TrigTerm(4, -par.u, "sin", w(epsilon=1)),
        TrigTerm(5, -par.zf, "sin", w(Omega=1, epsilon=1)), TrigTerm(5, par.u, "cos", w(epsilon=1)),
    ]
    const = [-par.xb, -par.yb, -par.xa, -par.ya, -par.xa, -par.ya]
    return trigonometric_constraints("Andrews' squeezer", 6, 1, terms, None, const,
                                     variable_names=DEPENDENT_NAMES, coordinate_names=("beta",),
                                     length_scale=0.01)


def andrews_premodel(par: AndrewsParameters = AndrewsParameters(), n_harmonics: int = 40,
                     n_samples: int = 629, beta_start: float = Q0[0]) -> tuple[JointFunction, ...]:
    """Method (a): sweep beta over one revolution, solve g = 0, fit Fourier series with a secular term.

    ``n_samples`` points over [beta_start, beta_start + 2 pi) (629: a step of
    0.00999 rad, the seed's 0.01), period 2 pi; Theta turns one revolution
    backwards per turn of beta (secular term -1), the others oscillate.
    """
    grid = beta_start + 2 * np.pi * np.arange(n_samples) / n_samples
    return premodel(andrews_constraints(par), grid, Q0[1:], kind="fourier", n_harmonics=n_harmonics,
                    period=2 * np.pi, secular=True)


def andrews_chain(par: AndrewsParameters = AndrewsParameters(), guess_functions: Any = None,
                  method: str = "projection", tol: float = 1e-14) -> ClosedChain:
    """Method (b): f(beta) solved at every evaluation (Newton), derivatives by projection (Eqs 102-120).

    The Newton guess is a pre-model (default: :func:`andrews_premodel` with 12 harmonics).
    """
    if guess_functions is None:
        guess_functions = andrews_premodel(par, n_harmonics=12, n_samples=181)
    return ClosedChain(andrews_constraints(par), function_guess(guess_functions), method=method, tol=tol)


# --------------------------------------------------------------------------------------------
# the seven-body model
# --------------------------------------------------------------------------------------------
def _body(name: str, frame: int, mass: float, inertia: float, com) -> Body:
    return Body(name, frame, mass, (com[0], com[1], 0.0), np.diag([inertia, inertia, inertia]))


def _joint(name: str, parent: int, at, variable: JointFunction) -> Joint:
    return Joint(name, parent, "revolute", (0.0, 0.0, 1.0), variable, homogeneous(None, (at[0], at[1], 0.0)))


def andrews_model(par: AndrewsParameters = AndrewsParameters(), variables: Any = None) -> Model:
    """The seven-body model with beta as its only generalized coordinate (no gravity).

    ``variables``: six JointFunctions of beta in the order (Theta, gamma, Phi,
    delta, Omega, epsilon) - a pre-model (method a) or the variables of
    :func:`andrews_chain` (method b, the default).
    """
    if variables is None:
        variables = andrews_chain(par).variables
    th, ga, ph, de, om, ep = variables
    joints = (
        _joint("beta", 0, (0.0, 0.0), coordinate(0, 1)),
        _joint("Theta", 1, (par.rr, 0.0), th),
        _joint("gamma", 0, (par.xb, par.yb), ga),
        _joint("delta", 0, (par.xa, par.ya), de),
        _joint("Phi", 4, (par.zt, 0.0), ph),
        _joint("epsilon", 0, (par.xa, par.ya), ep),
        _joint("Omega", 6, (0.0, -par.u), om),
    )
    bodies = (
        _body("body1", 1, par.m1, par.i1, (par.ra, 0.0)),
        _body("body2", 2, par.m2, par.i2, (-par.da, 0.0)),
        _body("body3", 3, par.m3, par.i3, (par.sa, par.sb)),
        _body("body5", 4, par.m5, par.i5, (par.ta, par.tb)),
        _body("body4", 5, par.m4, par.i4, (0.0, -(par.e - par.ea))),
        _body("body7", 6, par.m7, par.i7, (par.ua, par.ub)),
        _body("body6", 7, par.m6, par.i6, (par.zf - par.fa, 0.0)),
    )
    coords = (GeneralizedCoordinate("beta", default=float(Q0[0])),)
    return Model("andrews-squeezer", coords, joints, bodies, gravity=[0.0, 0.0, 0.0])


def spring_point(par: AndrewsParameters = AndrewsParameters()) -> np.ndarray:
    """Point D of the spring in frame 3 (the gamma body)."""
    return np.array([par.sd, -par.sc, 0.0])


def generalized_forces(model: Model, kin, par: AndrewsParameters = AndrewsParameters()) -> np.ndarray:
    """Generalized forces (N, 1) of the drive torque (mom on body 1) and the spring (on point D of body 3).

    The spring pulls D towards C with F = -c0 (L - l0) / L (D - C); its
    generalized force is F . dD/dbeta (Eq 46, :func:`~osim_emb.core.dynamics.point_force_generalized`).
    The drive torque acts about the beta joint: mom * d(beta)/d(beta) = mom.
    """
    r_d = spring_point(par)
    d = point_positions(kin, 3, r_d)
    rel = d - np.array([par.xc, par.yc, 0.0])
    length = np.linalg.norm(rel, axis=1)
    force = (-par.c0 * (length - par.l0) / length)[:, None] * rel
    tau = point_force_generalized(kin, 3, r_d, force)
    return tau + par.mom * kin.variables.gradient[:, 1]  # d(beta)/dq for the drive joint


def reduced_rhs(model: Model,
                par: AndrewsParameters = AndrewsParameters()) -> Callable[[float, np.ndarray], np.ndarray]:
    """The reduced ODE y = (beta, beta') -> (beta', beta'') with SciPy's ``fun(t, y)`` contract.

    beta'' = (tau - N beta') / M with M = J^T M_7 J and N beta' = J^T (M_7 b - f_v)
    (b = J' beta'^2, f_v the velocity-dependent part of the reference's f), tau the drive
    torque and the spring (:func:`generalized_forces`).  With numba this is the compiled model
    (:meth:`osim_emb.core.compiled.CompiledModel.ode_rhs`): the closed chain (Newton and the projection
    method, Eqs 100-120), the dynamics and the spring in one kernel call; with joint variables the compiled
    program cannot flatten it is :func:`reduced_rhs_reference`.
    """
    from osim_emb.core.compiled import compiled_model
    cm = compiled_model(model)
    if not cm.externals:
        spring = (3, spring_point(par), 0, (par.xc, par.yc, 0.0), par.c0, par.l0)
        drive = par.mom * joint_variables(model, np.zeros((1, 1)), order=1).gradient[0, 1]
        return cm.ode_rhs(drive, cm.springs(model, [spring]))
    return reduced_rhs_reference(model, par)


def reduced_rhs_reference(model: Model,
                          par: AndrewsParameters = AndrewsParameters()) -> Callable[[float, np.ndarray], np.ndarray]:
    """Test reference (and the route for joint variables the compiled program cannot flatten) of :func:`reduced_rhs`.

    M, N beta' from :func:`~osim_emb.core.dynamics.dynamics_terms` (the closed chain by
    :class:`~osim_emb.core.closed_chains.ClosedChain` in numpy), tau from :func:`generalized_forces`.
    """
    def fun(t: float, y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        terms = dynamics_terms(model, y[:1].reshape(1, 1), y[1:2].reshape(1, 1))
        tau = generalized_forces(model, terms.kinematics, par)
        acc = (tau[0, 0] + terms.gravity[0, 0] - terms.velocity_forces[0, 0]) / terms.mass[0, 0, 0]
        return np.array([y[1], acc])

    return fun


@dataclass(frozen=True)
class ReducedEquation:
    """m(beta) beta'' + c(beta) beta'^2 = tau(beta): the reduced equation of the one-coordinate model.

    With one generalized coordinate and forces that depend on beta only (the
    drive torque and the spring; no gravity), the package's M, N beta' and
    generalized force are M = m(beta), N beta' = c(beta) beta'^2 and tau(beta),
    with c = m'/2 (Lagrange).  ``mass``, ``coriolis`` and ``force`` are Fourier
    series (period 2 pi) fitted to them - the reduced equation itself pre-modeled,
    the counterpart of the seed's symbolic derivation of the ODE in MATLAB.
    """

    mass: Fourier
    coriolis: Fourier
    force: Fourier

    def rhs(self) -> Callable[[float, np.ndarray], np.ndarray]:
        """y = (beta, beta') -> (beta', beta'') with SciPy's ``fun(t, y)`` contract (one trigonometric evaluation)."""
        fns = (self.mass, self.coriolis, self.force)
        if len({(f.period, f.cos.size) for f in fns}) != 1:
            raise ValueError("ReducedEquation.rhs needs three Fourier series with the same period and harmonics")
        k = fns[0]._k
        a0 = np.array([f.a0 for f in fns])
        sec = np.array([f.secular for f in fns])
        cc_ = np.stack([f.cos for f in fns])
        ss_ = np.stack([f.sin for f in fns])

        def fun(t: float, y: np.ndarray) -> np.ndarray:
            arg = k * y[0]
            m, c, tau = a0 + sec * y[0] + cc_ @ np.cos(arg) + ss_ @ np.sin(arg)
            return np.array([y[1], (tau - c * y[1] ** 2) / m])

        return fun


def reduced_equation_premodel(model: Model, par: AndrewsParameters = AndrewsParameters(), n_harmonics: int = 40,
                              n_samples: int = 629, beta_start: float = Q0[0]) -> ReducedEquation:
    """Sample M, N beta' (at beta' = 1) and tau of the model over one revolution and fit Fourier series.

    The samples come from :func:`~osim_emb.core.dynamics.dynamics_terms` and
    :func:`generalized_forces` (one batched call); 40 harmonics on 629 samples fit
    them to about 1e-14 relative.
    """
    beta = beta_start + 2 * np.pi * np.arange(n_samples) / n_samples
    terms = dynamics_terms(model, beta[:, None], np.ones((n_samples, 1)))
    tau = generalized_forces(model, terms.kinematics, par)[:, 0] + terms.gravity[:, 0]
    fit = lambda y: Fourier.fit(beta, y, n_harmonics, period=2 * np.pi, secular=False)
    return ReducedEquation(fit(terms.mass[:, 0, 0]), fit(terms.velocity_forces[:, 0]), fit(tau))


def full_state(model: Model, beta: Any, betadot: Any) -> tuple[np.ndarray, np.ndarray]:
    """All seven coordinates and speeds (N, 7) from beta and beta' through the model's joint variables."""
    from osim_emb.core.kinematics import joint_variables
    beta = np.asarray(beta, dtype=float).reshape(-1, 1)
    betadot = np.asarray(betadot, dtype=float).reshape(-1)
    jv = joint_variables(model, beta, order=1)
    names = model.joint_names
    idx = [names.index(n) + 1 for n in COORDINATE_NAMES]
    q = jv.value[:, idx]
    qd = jv.gradient[:, idx, 0] * betadot[:, None]
    return q, qd


# --------------------------------------------------------------------------------------------
# the reference DAE in seven coordinates (Hairer & Wanner)
# --------------------------------------------------------------------------------------------
def _q(q):
    q = np.atleast_2d(np.asarray(q, dtype=float))
    return q


def reference_mass_matrix(q: Any, par: AndrewsParameters = AndrewsParameters()) -> np.ndarray:
    """M(q) (N, 7, 7) of the reference formulation."""
    q = _q(q)
    p = par
    th, ph, om = q[:, 1], q[:, 3], q[:, 5]
    m = np.zeros((q.shape[0], 7, 7))
    m[:, 0, 0] = p.m1 * p.ra ** 2 + p.m2 * (p.rr ** 2 - 2 * p.da * p.rr * np.cos(th) + p.da ** 2) + p.i1 + p.i2
    m[:, 1, 0] = m[:, 0, 1] = p.m2 * (p.da ** 2 - p.da * p.rr * np.cos(th)) + p.i2
    m[:, 1, 1] = p.m2 * p.da ** 2 + p.i2
    m[:, 2, 2] = p.m3 * (p.sa ** 2 + p.sb ** 2) + p.i3
    c4 = p.e - p.ea
    m[:, 3, 3] = p.m4 * c4 ** 2 + p.i4
    m[:, 4, 3] = m[:, 3, 4] = p.m4 * (c4 ** 2 + p.zt * c4 * np.sin(ph)) + p.i4
    m[:, 4, 4] = (p.m4 * (p.zt ** 2 + 2 * p.zt * c4 * np.sin(ph) + c4 ** 2) + p.m5 * (p.ta ** 2 + p.tb ** 2)
                  + p.i4 + p.i5)
    c6 = p.zf - p.fa
    m[:, 5, 5] = p.m6 * c6 ** 2 + p.i6
    m[:, 6, 5] = m[:, 5, 6] = p.m6 * (c6 ** 2 - p.u * c6 * np.sin(om)) + p.i6
    m[:, 6, 6] = (p.m6 * (c6 ** 2 - 2 * p.u * c6 * np.sin(om) + p.u ** 2) + p.m7 * (p.ua ** 2 + p.ub ** 2)
                  + p.i6 + p.i7)
    return m


def reference_forces(q: Any, qd: Any, par: AndrewsParameters = AndrewsParameters(),
                     parts: bool = False):
    """f(q, qdot) (N, 7) of the reference; with ``parts`` also (f_applied, f_velocity) separately."""
    q, qd = _q(q), _q(qd)
    p = par
    be, th, ga, ph, de, om, ep = q.T
    bep, thp, gap, php, dep, omp, epp = qd.T
    xd = p.sd * np.cos(ga) + p.sc * np.sin(ga) + p.xb
    yd = p.sd * np.sin(ga) - p.sc * np.cos(ga) + p.yb
    length = np.sqrt((xd - p.xc) ** 2 + (yd - p.yc) ** 2)
    force = -p.c0 * (length - p.l0) / length
    fx, fy = force * (xd - p.xc), force * (yd - p.yc)
    fa = np.zeros_like(q)
    fa[:, 0] = p.mom
    fa[:, 2] = fx * (p.sc * np.cos(ga) - p.sd * np.sin(ga)) + fy * (p.sd * np.cos(ga) + p.sc * np.sin(ga))
    fv = np.zeros_like(q)
    c4, c6 = p.zt * (p.e - p.ea), p.u * (p.zf - p.fa)
    fv[:, 0] = -p.m2 * p.da * p.rr * thp * (thp + 2 * bep) * np.sin(th)
    fv[:, 1] = p.m2 * p.da * p.rr * bep ** 2 * np.sin(th)
    fv[:, 3] = p.m4 * c4 * dep ** 2 * np.cos(ph)
    fv[:, 4] = -p.m4 * c4 * php * (php + 2 * dep) * np.cos(ph)
    fv[:, 5] = -p.m6 * c6 * epp ** 2 * np.cos(om)
    fv[:, 6] = p.m6 * c6 * omp * (omp + 2 * epp) * np.cos(om)
    if parts:
        return fa + fv, fa, fv
    return fa + fv


_PERM = np.array([6, 0, 1, 2, 3, 4, 5])  # q = (beta, Theta, ...) from z = (Theta, ..., epsilon, beta)


def reference_constraints(q: Any, cons: HolonomicConstraints | None = None) -> np.ndarray:
    """g(q) (N, 6)."""
    q = _q(q)
    cons = cons or andrews_constraints()
    return cons.residual(q[:, 1:], q[:, :1])


def reference_constraint_jacobian(q: Any, cons: HolonomicConstraints | None = None) -> np.ndarray:
    """G = dg/dq (N, 6, 7) in the order of COORDINATE_NAMES."""
    q = _q(q)
    cons = cons or andrews_constraints()
    cj = cons.evaluate(q[:, 1:], q[:, :1], order=1)
    return np.concatenate([cj.q, cj.f], axis=2)


def constraint_curvature(q: Any, qd: Any, cons: HolonomicConstraints | None = None) -> np.ndarray:
    """(d G/dt) qdot = sum_kl d2g/dq_k dq_l qdot_k qdot_l (N, 6): the velocity term of the acceleration constraint."""
    q, qd = _q(q), _q(qd)
    cons = cons or andrews_constraints()
    cj = cons.evaluate(q[:, 1:], q[:, :1], order=2)
    zd = np.concatenate([qd[:, 1:], qd[:, :1]], axis=1)
    m = 6
    hz = np.zeros((q.shape[0], m, 7, 7))
    hz[:, :, :6, :6] = cj.ff
    hz[:, :, :6, 6:] = cj.fq
    hz[:, :, 6:, :6] = np.swapaxes(cj.fq, -1, -2)
    hz[:, :, 6:, 6:] = cj.qq
    return np.einsum("nizy,nz,ny->ni", hz, zd, zd)


def dae_accelerations(q: Any, qd: Any, par: AndrewsParameters = AndrewsParameters(), alpha: float = 0.0,
                      beta_b: float = 0.0, cons: HolonomicConstraints | None = None) -> tuple[np.ndarray, np.ndarray]:
    """qddot (N, 7) and the multipliers lambda (N, 6) of the index-1 system (sign: M qddot = f - G^T lambda).

    Index reduction: g(q) = 0 differentiated twice, G qddot + (dG/dt) qdot = 0, and
    stabilized (Baumgarte 1972): G qddot = -(dG/dt) qdot - 2 alpha G qdot - beta_b^2 g.
    With the multipliers:

        [ M  G^T ] [qddot ]   [ f(q, qdot)                                 ]
        [ G  0   ] [lambda] = [ -(dG/dt) qdot - 2 alpha G qdot - beta_b^2 g ]
    """
    q, qd = _q(q), _q(qd)
    cons = cons or andrews_constraints(par)
    n = q.shape[0]
    m = reference_mass_matrix(q, par)
    f = reference_forces(q, qd, par)
    cj = cons.evaluate(q[:, 1:], q[:, :1], order=1)
    gm = np.concatenate([cj.q, cj.f], axis=2)
    rhs2 = -constraint_curvature(q, qd, cons)
    if alpha or beta_b:
        rhs2 = rhs2 - 2 * alpha * np.einsum("nij,nj->ni", gm, qd) - beta_b ** 2 * cj.value
    kkt = np.zeros((n, 13, 13))
    kkt[:, :7, :7] = m
    kkt[:, :7, 7:] = np.swapaxes(gm, 1, 2)
    kkt[:, 7:, :7] = gm
    sol = np.linalg.solve(kkt, np.concatenate([f, rhs2], axis=1)[..., None])[..., 0]
    return sol[:, :7], sol[:, 7:]


def dae_rhs(par: AndrewsParameters = AndrewsParameters(), alpha: float = 0.0,
            beta_b: float = 0.0) -> Callable[[float, np.ndarray], np.ndarray]:
    """The index-1 DAE in all seven coordinates as an ODE y = (q, qdot) (14,) -> (qdot, qddot) (``fun(t, y)``).

    See :func:`dae_accelerations`; alpha = beta_b = 0 is the plain index-1
    system, whose solution drifts off g = 0 (the drift is O(tolerance x t^2)).
    """
    cons = andrews_constraints(par)

    def fun(t: float, y: np.ndarray) -> np.ndarray:
        qdd, _ = dae_accelerations(y[:7], y[7:], par, alpha, beta_b, cons)
        return np.concatenate([y[7:], qdd[0]])

    return fun


def dae_initial_state() -> np.ndarray:
    """(q0, qdot0) of the reference: consistent positions, zero velocities."""
    return np.concatenate([Q0, np.zeros(7)])
