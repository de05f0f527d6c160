"""The same model as a DAE in full coordinates, index-reduced and stabilized (the ODE's comparison case).

OpenSim (Simbody) keeps every unlocked coordinate of a model as a mobility and enforces each
``CoordinateCouplerConstraint`` as an algebraic equation; the empirically-based formalism embeds
the couplers in the joint functions and integrates an ODE in the independent coordinates only
(seed section 4).  This module builds the first formulation from the same OpenSim document, so
that the two can be compared on the same physics:

* **full coordinates** -- the document with its couplers dropped, converted by
  :func:`osim_emb.io.convert.document_to_model`: every unlocked coordinate becomes generalized,
  and M(q), N(q, q̇) q̇, G(q) of the full model come from :mod:`osim_emb.core.dynamics` (the same code,
  and the same compiled kernels, as the ODE);
* **constraints** -- every coupler becomes g(q) = q_dep - s f(x) = 0 with x its independent
  coordinates (a locked one enters as its constant value), its Jacobian g_q = ∂g/∂q and the
  curvature term (d g_q/dt) q̇ = -s q̇_xᵀ H_f q̇_x from the function's exact gradient and Hessian
  (:mod:`osim_emb.core.functions`).  Affine couplers (``LinearFunction``, a two-knot ``SimmSpline``,
  constants, or any function of locked coordinates only) are gathered once into g = A q + b;
* **index 1** -- the multipliers are eliminated with the acceleration-level constraint::

      [ M     g_qᵀ ] [ q̈  ]   [ G(q) + τ - N q̇                        ]
      [ g_q   0    ] [ -λ ] = [ -(d g_q/dt) q̇ - 2 α g_q q̇ - β² g     ]

  (G(q) the gravity forces, as in the seed) -- this is M q̈ = G + τ - N q̇ + g_qᵀ λ with the
  constraint differentiated twice, g̈ + 2α ġ + β² g = 0

  with Baumgarte's stabilization (1972) of parameters α, β (1/s); α = β = 0 is the plain index-1
  system, whose position and velocity constraint errors drift.  The first-order system
  y = (q, q̇) -> (q̇, q̈) follows SciPy's ``fun(t, y)`` contract (:meth:`FullCoordinateDAE.rhs`).

:meth:`FullCoordinateDAE.consistent_state` maps a state of the minimal-coordinate model (the
ODE) to the full one, :meth:`FullCoordinateDAE.reduced_state` back, and :meth:`FullCoordinateDAE.project`
projects an arbitrary full state onto the constraint manifold (position and velocity level).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from scipy.integrate import solve_ivp

from osim_emb.core import functions as fn
from osim_emb.core.functions.base import JointFunction
from osim_emb.core.speeds import speeds_from_rates
from osim_emb.model import Model

__all__ = ["CouplerConstraint", "FullCoordinateDAE", "affine_form", "full_coordinate_document", "terms_function",
           "ode_tracking_rhs", "simulate_final_state"]


@dataclass(frozen=True)
class CouplerConstraint:
    """g(q) = q[dependent] - scale * function(x),  x_k = q[inputs[k]] (or constants[k] where inputs[k] < 0)."""

    name: str
    dependent: int
    inputs: tuple[int, ...]
    constants: tuple[float, ...]
    function: JointFunction
    scale: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "inputs", tuple(int(i) for i in self.inputs))
        object.__setattr__(self, "constants", tuple(float(c) for c in self.constants))
        if len(self.inputs) != len(self.constants):
            raise ValueError(f"constraint {self.name!r}: {len(self.inputs)} inputs, {len(self.constants)} constants")
        if self.function.n_inputs != len(self.inputs) and not self.function.is_constant:
            raise ValueError(f"constraint {self.name!r}: the function takes {self.function.n_inputs} inputs, "
                             f"{len(self.inputs)} given")


def affine_form(f: JointFunction) -> tuple[np.ndarray, float] | None:
    """(a, c) with f(x) = a·x + c exactly (up to rounding) for every x, or None if f is not affine.

    Recognized: Linear, Constant, a SimmSpline or PiecewiseLinear of two knots (the straight line
    through them, continued outside them), and a Multiplier of one of these."""
    if isinstance(f, fn.Linear):
        return np.array(f.coefficients, dtype=float), float(f.intercept)
    if isinstance(f, fn.Constant):
        return np.zeros(f.n_inputs), float(f.value)
    if isinstance(f, fn.Multiplier):
        inner = affine_form(f.function)
        return None if inner is None else (f.scale * inner[0], f.scale * inner[1])
    if isinstance(f, fn.SimmSpline) and f.x.size == 2:
        slope = float(f.b[0])
        return np.array([slope]), float(f.y[0] - slope * f.x[0])
    if isinstance(f, fn.PiecewiseLinear) and f.x.size == 2:
        slope = float((f.y[1] - f.y[0]) / max(1e-7, f.x[1] - f.x[0]))
        return np.array([slope]), float(f.y[0] - slope * f.x[0])
    return None


def full_coordinate_document(doc: Any) -> Any:
    """The OpenSim document without its couplers: every unlocked coordinate is generalized."""
    return dataclasses.replace(doc, couplers=[])


def coupler_constraints(doc: Any, names: Sequence[str]) -> list[CouplerConstraint]:
    """The document's CoordinateCouplerConstraints as constraint equations on the coordinates ``names`` (a model
    where the couplers' coordinates are free, :func:`full_coordinate_document`).  Couplers whose dependent coordinate
    is locked are ignored (as the minimal-coordinate importer ignores them); a locked independent coordinate enters
    as its default value."""
    names = list(names)
    spec = {c.name: c for c in doc.coordinates}
    cons = []
    for c in doc.couplers:
        if spec[c.dependent].locked:
            continue
        inputs, consts = [], []
        for i in c.independents:
            if spec[i].locked:
                inputs.append(-1)
                consts.append(spec[i].default)
            else:
                inputs.append(names.index(i))
                consts.append(0.0)
        cons.append(CouplerConstraint(c.name, names.index(c.dependent), tuple(inputs), tuple(consts), c.function,
                                      c.scale))
    return cons


def coupler_jacobian(constraints: Sequence[CouplerConstraint], q: Any, n: int) -> np.ndarray:
    """∂g/∂q (N, m, n) of coupler equations g = q[dependent] - scale f(x) at configurations q (N, n)."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    out = np.zeros((q.shape[0], len(constraints), n))
    for r, c in enumerate(constraints):
        idx = np.array(c.inputs, dtype=int)
        mask = idx >= 0
        x = np.tile(np.array(c.constants, dtype=float), (q.shape[0], 1))
        x[:, mask] = q[:, idx[mask]]
        out[:, r, c.dependent] = 1.0
        if not c.function.is_constant:
            gradient = c.function.evaluate(x, 1).gradient
            for j in np.flatnonzero(mask):
                out[:, r, idx[j]] -= c.scale * gradient[:, j]
    return out


def terms_function(model: Model) -> Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """(q, q̇) -> (M, N q̇ - G) of one state: one call of the compiled model's ``terms`` (what
    :func:`osim_emb.core.dynamics.mass_matrix` and :func:`~osim_emb.core.dynamics.velocity_terms` evaluate)."""
    from osim_emb.core.compiled import compiled_model
    n = model.n_q
    fast = compiled_model(model)

    def terms(q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        m, nqd, g = fast.terms(np.array(q, dtype=float).reshape(1, n), np.array(qd, dtype=float).reshape(1, n))
        return m[0], nqd[0] - g[0]
    return terms


def ode_tracking_rhs(model: Model, desired: Callable[[float], tuple[np.ndarray, np.ndarray, np.ndarray]],
                     gains: Any) -> Callable[[float, np.ndarray], np.ndarray]:
    """Eq 200 in minimal coordinates evaluated the way :meth:`FullCoordinateDAE.tracking_rhs` is (one call of
    the dynamics for M and N q̇ - G, one dense solve of [[M, -I], [I, 0]] [q̈; τ] = [G - N q̇; Q_d]): the ODE
    side of a like-for-like timing comparison (the equations of
    :func:`osim_emb.simulation.motions.computed_torque_tracking`, which also returns the torques)."""
    n = model.n_q
    terms = terms_function(model)
    kk = np.asarray(gains, dtype=float)
    a = np.zeros((2 * n, 2 * n))
    a[:n, n:] = -np.eye(n)
    a[n:, :n] = np.eye(n)

    def fun(t: float, y: np.ndarray) -> np.ndarray:
        q, qd = y[:n], y[n:]
        q_d, qd_d, qdd_d = desired(t)
        mass, bias = terms(q, qd)
        a[:n, :n] = mass
        x = np.linalg.solve(a, np.concatenate([-bias, qdd_d - 2.0 * kk * (qd - qd_d) - kk ** 2 * (q - q_d)]))
        return np.concatenate([qd, x[:n]])

    return fun


class FullCoordinateDAE:
    """M q̈ = G(q) + τ - N q̇ + g_qᵀλ, g(q) = 0, in all unlocked coordinates (see the module docstring).

    ``model`` is the full-coordinate model (no couplers), ``constraints`` its couplers; ``reduced``
    (optional) the minimal-coordinate model of the same document, used to map states.
    """

    def __init__(self, model: Model, constraints: Sequence[CouplerConstraint], *, alpha: float = 10.0,
                 beta: float = 10.0, reduced: Model | None = None):
        self.model = model
        self.constraints = tuple(constraints)
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.reduced = reduced
        self.n = model.n_q
        self.m = len(self.constraints)
        n, m = self.n, self.m
        a_rows, b_vals, self._affine_rows = [], [], []
        self._nonlinear = []
        for r, c in enumerate(self.constraints):
            if not 0 <= c.dependent < n:
                raise ValueError(f"constraint {c.name!r}: dependent index {c.dependent} outside 0..{n - 1}")
            mask = np.array([i >= 0 for i in c.inputs], dtype=bool)
            idx = np.array([i if i >= 0 else 0 for i in c.inputs], dtype=int)
            if np.any(idx[mask] >= n):
                raise ValueError(f"constraint {c.name!r}: input index outside 0..{n - 1}")
            consts = np.array(c.constants, dtype=float)
            form = affine_form(c.function)
            if form is None and not mask.any():  # a function of locked coordinates only: a constant
                x = consts[None, :]
                form = (np.zeros(len(c.inputs)), float(c.function.evaluate(x, 0).value[0]))
            if form is not None:
                a, const = form
                row = np.zeros(n)
                row[c.dependent] += 1.0
                np.add.at(row, idx[mask], -c.scale * a[mask])
                a_rows.append(row)
                b_vals.append(-c.scale * (const + float(a[~mask] @ consts[~mask])))
                self._affine_rows.append(r)
            else:
                self._nonlinear.append((r, c.dependent, idx, mask, consts, c.function, c.scale))
        self._a = np.array(a_rows).reshape(-1, n)
        self._b = np.array(b_vals)
        self._affine_rows = np.array(self._affine_rows, dtype=int)
        self._kkt = np.zeros((n + m, n + m))
        self._kkt_rhs = np.zeros(n + m)
        if self._affine_rows.size:
            self._kkt[n + self._affine_rows, :n] = self._a
            self._kkt[:n, n + self._affine_rows] = self._a.T
        self._zero = np.zeros(n)
        self._terms = terms_function(model)

    # -- construction from OpenSim documents ------------------------------------------------
    @classmethod
    def from_document(cls, doc: Any, *, alpha: float = 10.0, beta: float = 10.0) -> "FullCoordinateDAE":
        """The full-coordinate DAE of an :class:`~osim_emb.io.osim_document.OsimDocument`.

        Couplers whose dependent coordinate is locked are ignored (as the minimal-coordinate
        importer ignores them); a locked independent coordinate enters as its default value."""
        from osim_emb.io.convert import document_to_model
        full = document_to_model(full_coordinate_document(doc))
        reduced = document_to_model(doc)
        cons = coupler_constraints(doc, full.coordinate_names)
        return cls(full, cons, alpha=alpha, beta=beta, reduced=reduced)

    @classmethod
    def from_osim(cls, path: Any, **kw: Any) -> "FullCoordinateDAE":
        from osim_emb.io import read_osim
        return cls.from_document(read_osim(path), **kw)

    def with_stabilization(self, alpha: float, beta: float) -> "FullCoordinateDAE":
        """The same DAE with other Baumgarte parameters."""
        return FullCoordinateDAE(self.model, self.constraints, alpha=alpha, beta=beta, reduced=self.reduced)

    # -- constraints --------------------------------------------------------------------------
    @property
    def coordinate_names(self) -> list[str]:
        return self.model.coordinate_names

    def constraint_terms(self, q: np.ndarray, qdot: np.ndarray | None = None
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """g(q) (m,), g_q = ∂g/∂q (m, n) and, with q̇, the curvature (d g_q/dt) q̇ (m,) at one state."""
        q = np.asarray(q, dtype=float)
        g = np.empty(self.m)
        jac = self._kkt[self.n:, :self.n].copy() if self._nonlinear else self._kkt[self.n:, :self.n]
        curv = np.zeros(self.m) if qdot is not None else None
        if self._affine_rows.size:
            g[self._affine_rows] = self._a @ q + self._b
        for r, dep, idx, mask, consts, f, s in self._nonlinear:
            x = consts.copy()
            x[mask] = q[idx[mask]]
            jet = f.evaluate(x[None, :], 2 if qdot is not None else 1)
            g[r] = q[dep] - s * jet.value[0]
            row = np.zeros(self.n)
            row[dep] = 1.0
            np.add.at(row, idx[mask], -s * jet.gradient[0][mask])
            jac[r] = row
            if qdot is not None:
                v = np.where(mask, np.asarray(qdot, dtype=float)[idx], 0.0)
                curv[r] = -s * v @ jet.hessian[0] @ v
        return g, jac, curv

    def residuals(self, q: Any, qdot: Any | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """Position and velocity constraint errors g(q) and g_q(q) q̇ along a trajectory ((T, n) -> (T, m))."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        qd = None if qdot is None else np.atleast_2d(np.asarray(qdot, dtype=float))
        gs, vs = [], []
        for k in range(q.shape[0]):
            g, jac, _ = self.constraint_terms(q[k])
            gs.append(g)
            if qd is not None:
                vs.append(jac @ qd[k])
        return np.array(gs), (np.array(vs) if qd is not None else None)

    # -- dynamics ------------------------------------------------------------------------------
    def accelerations(self, q: np.ndarray, qdot: np.ndarray, tau: Any = None) -> tuple[np.ndarray, np.ndarray]:
        """(q̈, λ) of the index-1 system with Baumgarte stabilization at one state."""
        n = self.n
        q = np.asarray(q, dtype=float)
        qdot = np.asarray(qdot, dtype=float)
        mass, bias = self._terms(q, qdot)  # M and N q̇ - G
        g, jac, curv = self.constraint_terms(q, qdot)
        k = self._kkt
        k[:n, :n] = mass
        if self._nonlinear:
            k[n:, :n] = jac
            k[:n, n:] = jac.T
        r = self._kkt_rhs
        r[:n] = -bias if tau is None else np.asarray(tau, dtype=float) - bias
        r[n:] = -curv - 2.0 * self.alpha * (jac @ qdot) - self.beta ** 2 * g
        sol = np.linalg.solve(k, r)
        return sol[:n], -sol[n:]

    def rhs(self, generalized_forces: Callable[[float, np.ndarray, np.ndarray], Any] | None = None
            ) -> Callable[[float, np.ndarray], np.ndarray]:
        """y = (q, q̇) -> (q̇, q̈) with SciPy's ``fun(t, y)`` contract; ``generalized_forces(t, q, q̇)``
        returns τ (n,) in the full coordinates."""
        n = self.n
        acc = self.accelerations

        def fun(t: float, y: np.ndarray) -> np.ndarray:
            q, qd = y[:n], y[n:]
            tau = None if generalized_forces is None else generalized_forces(t, q, qd)
            return np.concatenate([qd, acc(q, qd, tau)[0]])

        return fun

    # -- computed-torque tracking (the DAE form of Eqs 200-201) -----------------------------------
    def tracking_solution(self, t: float, q: np.ndarray, qdot: np.ndarray,
                          desired: Callable[[float], tuple[np.ndarray, np.ndarray, np.ndarray]], gains: Any,
                          actuated: Sequence[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(q̈, τ, λ) of Eq 200 in full coordinates: torques τ on the ``actuated`` coordinates (indices into the
        full coordinates) with the error law S q̈ = Q_d = q̈_d - 2K(q̇_a - q̇_d) - K²(q_a - q_d) (Eq 201)::

            [ M     -g_qᵀ  -B ] [ q̈ ]   [ G(q) - N q̇                          ]
            [ g_q    0      0 ] [ λ  ] = [ -(d g_q/dt) q̇ - 2α g_q q̇ - β² g    ]
            [ Bᵀ     0      0 ] [ τ  ]   [ Q_d                                ]
        """
        n, m = self.n, self.m
        act = np.asarray(actuated, dtype=int)
        k = act.size
        kk = np.asarray(gains, dtype=float)
        q_d, qd_d, qdd_d = desired(t)
        qq = qdd_d - 2.0 * kk * (qdot[act] - qd_d) - kk ** 2 * (q[act] - q_d)
        mass, bias = self._terms(q, qdot)
        g, jac, curv = self.constraint_terms(q, qdot)
        a = np.zeros((n + m + k, n + m + k))
        a[:n, :n] = mass
        a[:n, n:n + m] = -jac.T
        a[act, n + m + np.arange(k)] = -1.0
        a[n:n + m, :n] = jac
        a[n + m + np.arange(k), act] = 1.0
        r = np.concatenate([-bias, -curv - 2.0 * self.alpha * (jac @ qdot) - self.beta ** 2 * g, qq])
        x = np.linalg.solve(a, r)
        return x[:n], x[n + m:], x[n:n + m]

    def tracking_rhs(self, desired: Callable[[float], tuple[np.ndarray, np.ndarray, np.ndarray]], gains: Any,
                     actuated: Sequence[int]) -> Callable[[float, np.ndarray], np.ndarray]:
        """``fun(t, y)`` of the tracking problem in full coordinates (see :meth:`tracking_solution`)."""
        n = self.n

        def fun(t: float, y: np.ndarray) -> np.ndarray:
            q, qd = y[:n], y[n:]
            return np.concatenate([qd, self.tracking_solution(t, q, qd, desired, gains, actuated)[0]])

        return fun

    # -- states ---------------------------------------------------------------------------------
    def consistent_state(self, q_reduced: Any, qdot_reduced: Any | None = None) -> np.ndarray:
        """y = (q, q̇) in full coordinates from a state of the minimal-coordinate model (``reduced``):
        dependent coordinates from its coupler functions, their speeds from the exact gradients."""
        if self.reduced is None:
            raise ValueError("this DAE has no reduced model: build it with from_document or pass reduced=")
        red = self.reduced
        qr = np.asarray(q_reduced, dtype=float).reshape(1, -1)
        qdr = np.zeros(red.n_q) if qdot_reduced is None else np.asarray(qdot_reduced, dtype=float)
        q, qd = np.empty(self.n), np.empty(self.n)
        gen = {c: k for k, c in enumerate(red.coordinate_names)}
        for i, name in enumerate(self.coordinate_names):
            if name in gen:
                q[i], qd[i] = qr[0, gen[name]], qdr[gen[name]]
            else:
                jet = red.dependent_coordinate(name).function.evaluate(qr, 1)
                q[i], qd[i] = jet.value[0], jet.gradient[0] @ qdr
        return np.concatenate([q, qd])

    def reduced_state(self, y: Any) -> tuple[np.ndarray, np.ndarray]:
        """(q, q̇) of the minimal-coordinate model's coordinates picked from full states y ((T, 2n) or (2n,))."""
        if self.reduced is None:
            raise ValueError("this DAE has no reduced model")
        y = np.asarray(y, dtype=float)
        idx = [self.coordinate_names.index(c) for c in self.reduced.coordinate_names]
        return y[..., idx], y[..., [self.n + i for i in idx]]

    def project(self, q: Any, qdot: Any, *, tol: float = 1e-14, max_iter: int = 20
                ) -> tuple[np.ndarray, np.ndarray]:
        """The nearest consistent state (minimum-norm Gauss-Newton on g(q) = 0, then q̇ onto g_q q̇ = 0)."""
        q = np.array(q, dtype=float)
        if self.m == 0:
            return q, np.array(qdot, dtype=float)
        for _ in range(max_iter):
            g, jac, _ = self.constraint_terms(q)
            if np.abs(g).max(initial=0.0) <= tol:
                break
            q -= jac.T @ np.linalg.solve(jac @ jac.T, g)
        _, jac, _ = self.constraint_terms(q)
        qd = np.array(qdot, dtype=float)
        qd -= jac.T @ np.linalg.solve(jac @ jac.T, jac @ qd)
        return q, qd

    # -- simulation -----------------------------------------------------------------------------
    def simulate(self, t_end: float, y0: Any, *, method: str = "DOP853", rtol: float = 1e-10,
                 atol: float = 1e-10, t_eval: Sequence[float] | None = None, n_output: int = 201,
                 generalized_forces: Callable[[float, np.ndarray, np.ndarray], Any] | None = None
                 ) -> pd.DataFrame:
        """Integrate from the full state y0 = (q, q̇) over [0, t_end]: a table of q and OpenSim's speeds (columns NAME,
        NAME_u: q̇, on the rotations of Ball, Free and Ellipsoid joints the angular velocity, :mod:`osim_emb.core.
        speeds`) and the constraint errors max|g| (``constraint_error``) and max|g_q q̇| (``velocity_constraint_error``)."""
        te = np.linspace(0.0, t_end, n_output) if t_eval is None else np.asarray(t_eval, dtype=float)
        sol = solve_ivp(self.rhs(generalized_forces), (0.0, t_end), np.asarray(y0, dtype=float), method=method,
                        rtol=rtol, atol=atol, t_eval=te)
        if not sol.success:
            raise RuntimeError(f"integration failed: {sol.message}")
        n = self.n
        g, v = self.residuals(sol.y[:n].T, sol.y[n:].T)
        data = {"time": sol.t}
        for k, c in enumerate(self.coordinate_names):
            data[c] = sol.y[k]
        speeds = speeds_from_rates(self.model, sol.y[:n].T, sol.y[n:].T)
        for k, c in enumerate(self.coordinate_names):
            data[f"{c}_u"] = speeds[:, k]
        data["constraint_error"] = np.abs(g).max(axis=1, initial=0.0)
        data["velocity_constraint_error"] = np.abs(v).max(axis=1, initial=0.0)
        out = pd.DataFrame(data)
        out.attrs["nfev"] = sol.nfev
        return out


def simulate_final_state(osim_path: Any, q0: Any, qdot0: Any, t_end: float, tol: float, *, method: str = "DOP853",
                         alpha: float = 10.0, beta: float = 10.0) -> tuple[np.ndarray, np.ndarray, float, int]:
    """Integrate the full-coordinate DAE of an .osim file from the minimal-coordinate state (q0, q̇0) with
    rtol = atol = ``tol``: (q, q̇ of the generalized coordinates at ``t_end``, seconds, evaluations).

    The signature of the DAE hook of ``benchmarks/bench_dynamics.py`` (``simulate``)."""
    import time
    dae = FullCoordinateDAE.from_osim(osim_path, alpha=alpha, beta=beta)
    fun = dae.rhs()
    y0 = dae.consistent_state(q0, qdot0)
    fun(0.0, y0)  # compile / warm up outside the timing
    t0 = time.perf_counter()
    sol = solve_ivp(fun, (0.0, t_end), y0, method=method, rtol=tol, atol=tol)
    seconds = time.perf_counter() - t0
    if not sol.success:
        raise RuntimeError(f"integration failed: {sol.message}")
    q, qd = dae.reduced_state(sol.y[:, -1])
    return q, qd, seconds, int(sol.nfev)
