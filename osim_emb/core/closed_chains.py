"""Closed kinematic chains: joint variables f(q) defined by holonomic constraints g(f, q) = 0 (seed section 3-3).

A closed chain has ``m`` *dependent* joint variables f = (f_1..f_m) tied to the
``n_q`` generalized coordinates q by ``m`` algebraic constraints

    g_i(f(q), q) = 0,   i = 1..m                                            (Eq 100)

(the seed writes g_i(q) = 0; the constraints depend on q both directly and
through the joint variables, which is what Eq 101 differentiates).  Every
joint variable is then a smooth function f_i(q) whose value, gradient
grad f_i and Hessian H_i feed the kinematics (Eqs 75, 99) and dynamics.
This module provides

* :class:`HolonomicConstraints` - g with its first and second partial derivatives
  (analytic callables, or central differences as a documented fallback);
* :func:`solve_constraints` - batched Newton solve of g(f, q) = 0 from a guess,
  :func:`solve_path` - the same by continuation along an ordered path, and
  :func:`continuation_guess` / :func:`function_guess` - guess strategies;
* the derivatives of f by the seed's three methods and an independent check:
  (a) pre-modeling, :func:`premodel` (sweep, solve, fit natural cubic splines or
  Fourier series, return :class:`~osim_emb.core.functions.JointFunction` objects);
  (b) numerical differentiation on a computational molecule,
  :func:`molecule_derivatives` (the seed's Fig 2 stencil);
  (c) the analytical projection method, :func:`projection_gradients` (Eqs 102-119)
  and :func:`projection_hessians` (Eq 120; its right-hand side Gamma is derived at :func:`hessian_rhs`);
  (d) the implicit-function theorem, :func:`implicit_derivatives`
  (grad f = -g_f^-1 g_q and the corresponding Hessian);
* :class:`ClosedChain` and :class:`ChainVariable`: a JointFunction f_i(q) that
  solves the constraints at every evaluation and returns value, gradient and
  Hessian by the projection method, so that a closed chain plugs into
  :class:`~osim_emb.model.Model`; the m variables of one chain share one solve
  through the ``cache`` argument of :meth:`JointFunction.evaluate`.

Array conventions (batched over N configurations): q (N, n_q); f (N, m);
g (N, m); g_f[n, i, j] = dg_i/df_j (N, m, m); g_q[n, i, k] = dg_i/dq_k
(N, m, n_q); g_ff (N, m, m, m); g_fq[n, i, j, k] = d2 g_i / df_j dq_k
(N, m, m, n_q); g_qq (N, m, n_q, n_q); gradients (N, m, n_q); Hessians
(N, m, n_q, n_q).  The seed's column vector g-bar_j of Eq 104 is the column
``g_f[n, :, j]``.

Errors are :class:`ClosedChainError` (a ``ValueError``) subclasses that say what
failed: :class:`SingularConstraintError` (configuration and condition number of
dg/df), :class:`AssemblyError` (Newton did not converge: residual and
iterations), :class:`CoordinateRangeError` (a coordinate outside its range).

Where the algorithm lives (issue 16: once)
------------------------------------------
Newton's step, the projection matrices (Eqs 110, 114-117), the recursive solve (Eqs 118-119), Gamma of
Eq 120 and the condition test exist once, compiled, in :mod:`osim_emb.core.closed_chain_kernels`.  The
compiled joint-variable program's OP_CHAIN node runs them on trigonometric constraints;
:func:`solve_constraints` and :meth:`ClosedChain.evaluate` evaluate the constraints here (their Python
callables, batched) and call the same kernels, which return status codes that become the errors above
with their details (no numpy re-solve).  :func:`projection_matrices`, :func:`projection_solve`,
:func:`projection_gradients`, :func:`projection_hessians` and :func:`constraint_condition` are thin
wrappers of those kernels.  What stays numpy is independent of them and serves as a reference in the
tests: the implicit-function theorem (:func:`implicit_derivatives` with :func:`hessian_rhs`, LU
solves; also ``ClosedChain(method='implicit')``), the computational molecule
(:func:`molecule_derivatives`) and the literal Kronecker form (:func:`projection_gradients_kronecker`);
the continuation predictors of :func:`solve_path` and :func:`continuation_guess` use the
implicit-function tangent.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from osim_emb.core import closed_chain_kernels as CK
from osim_emb.core.functions.base import FunctionError, Jet, JointFunction

__all__ = [
    "ClosedChainError",
    "SingularConstraintError",
    "AssemblyError",
    "CoordinateRangeError",
    "ConstraintJet",
    "HolonomicConstraints",
    "check_coordinates",
    "constraint_condition",
    "solve_constraints",
    "solve_path",
    "continuation_guess",
    "function_guess",
    "projection_matrices",
    "projection_solve",
    "projection_gradients",
    "projection_gradients_kronecker",
    "hessian_rhs",
    "projection_hessians",
    "implicit_derivatives",
    "molecule_offsets",
    "molecule_derivatives",
    "premodel",
    "ChainJet",
    "ClosedChain",
    "ChainVariable",
]


# --------------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------------
class ClosedChainError(ValueError):
    """A closed-chain computation failed (base class)."""


class SingularConstraintError(ClosedChainError):
    """The constraint Jacobian dg/df is singular (or nearly): f is not a smooth function of q there."""

    def __init__(self, message: str, q: np.ndarray | None = None, f: np.ndarray | None = None,
                 condition: float = np.inf, index: int | None = None):
        super().__init__(message)
        self.q, self.f, self.condition, self.index = q, f, condition, index


class AssemblyError(ClosedChainError):
    """The constraints could not be solved at a configuration (Newton did not converge)."""

    def __init__(self, message: str, q: np.ndarray | None = None, residual: float = np.inf,
                 iterations: int = 0, index: int | None = None):
        super().__init__(message)
        self.q, self.residual, self.iterations, self.index = q, residual, iterations, index


class CoordinateRangeError(ClosedChainError):
    """A generalized coordinate lies outside the range in which the chain is defined."""


def _fmt(v: np.ndarray) -> str:
    return np.array2string(np.asarray(v, dtype=float), precision=8, separator=", ")


# --------------------------------------------------------------------------------------------
# the constraints
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ConstraintJet:
    """g and its partial derivatives at a batch of (f, q); derivatives above the requested order are None."""

    value: np.ndarray  # (N, m)
    f: np.ndarray | None = None  # (N, m, m)      dg_i/df_j
    q: np.ndarray | None = None  # (N, m, nq)     dg_i/dq_k
    ff: np.ndarray | None = None  # (N, m, m, m)  d2g_i/df_j df_k
    fq: np.ndarray | None = None  # (N, m, m, nq) d2g_i/df_j dq_k
    qq: np.ndarray | None = None  # (N, m, nq, nq)


Residual = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True, eq=False)
class HolonomicConstraints:
    """m holonomic constraints g(f, q) = 0 between m joint variables f and n_q coordinates q (Eq 100).

    ``residual(f, q)`` maps f (N, m) and q (N, n_q) to g (N, m).  ``first(f, q)``
    returns ``(g_f, g_q)`` and ``second(f, q)`` returns ``(g_ff, g_fq, g_qq)`` with
    the shapes of the module docstring.  Either may be omitted: the documented
    fallback is central differences,

    * first derivatives from ``residual`` with the step ``fd_step`` (default
      eps^(1/3) ~ 6e-6 in the units of f and q; truncation and round-off errors
      of about 1e-10 relative);
    * second derivatives from ``first`` (analytic, step eps^(1/3)) or, when
      ``first`` is numerical too, from ``residual`` by second differences with
      the step eps^(1/4) ~ 1.2e-4 (errors of about 1e-8 relative).

    ``coordinate_range`` (n_q, 2) bounds q (checked by the solvers);
    ``length_scale`` is a typical size of g, used to judge convergence.
    ``combined(f, q, order)``, if given, returns (g, g_f, g_q, g_ff, g_fq, g_qq)
    at once (None above ``order``), sharing work between the orders; it must
    agree with ``residual``, ``first`` and ``second``.
    """

    name: str
    n_f: int
    n_q: int
    residual: Residual
    first: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None
    second: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None
    variable_names: tuple[str, ...] = ()
    coordinate_names: tuple[str, ...] = ()
    coordinate_range: Any = None
    length_scale: float = 1.0
    fd_step: float | None = None
    combined: Callable[[np.ndarray, np.ndarray, int], tuple] | None = None
    trigonometric: Any = None  # the data of planar.trigonometric_constraints, for the compiled path
    #: a model's point constraints packed for the compiled path (core.point_constraints.FrameConstraintData)
    frames: Any = None
    #: a hashable description of how the constraints were built (e.g. a model's PointConstraints): two chains with
    #: equal keys are the same mechanism (their variables compare equal); None: only the object itself
    key: Any = None

    def __post_init__(self):
        if self.n_f < 1 or self.n_q < 1:
            raise ValueError(f"constraints {self.name!r}: need n_f >= 1 and n_q >= 1, got {self.n_f}, {self.n_q}")
        vn = tuple(self.variable_names) or tuple(f"f{i + 1}" for i in range(self.n_f))
        cn = tuple(self.coordinate_names) or tuple(f"q{k + 1}" for k in range(self.n_q))
        if len(vn) != self.n_f or len(cn) != self.n_q:
            raise ValueError(f"constraints {self.name!r}: {len(vn)} variable names for {self.n_f} variables, "
                             f"{len(cn)} coordinate names for {self.n_q} coordinates")
        object.__setattr__(self, "variable_names", vn)
        object.__setattr__(self, "coordinate_names", cn)
        rng = (np.tile([-np.inf, np.inf], (self.n_q, 1)) if self.coordinate_range is None
               else np.array(self.coordinate_range, dtype=float).reshape(self.n_q, 2))
        rng.setflags(write=False)
        object.__setattr__(self, "coordinate_range", rng)

    @property
    def analytic_first(self) -> bool:
        return self.first is not None or self.combined is not None

    @property
    def analytic_second(self) -> bool:
        return self.second is not None or self.combined is not None

    def evaluate(self, f: Any, q: Any, order: int = 1) -> ConstraintJet:
        """g (order 0), with g_f and g_q (order >= 1), and g_ff, g_fq, g_qq (order 2), at a batch."""
        f, q = self._batch(f, q)
        if self.combined is not None:
            return ConstraintJet(*self.combined(f, q, order))
        g = np.asarray(self.residual(f, q), dtype=float).reshape(f.shape[0], self.n_f)
        if order < 1:
            return ConstraintJet(g)
        gf, gq = self._first(f, q)
        if order < 2:
            return ConstraintJet(g, gf, gq)
        gff, gfq, gqq = self._second(f, q)
        return ConstraintJet(g, gf, gq, gff, gfq, gqq)

    def _batch(self, f: Any, q: Any) -> tuple[np.ndarray, np.ndarray]:
        f = np.atleast_2d(np.asarray(f, dtype=float))
        q = np.atleast_2d(np.asarray(q, dtype=float))
        if q.shape[1] != self.n_q and q.shape[0] == self.n_q and self.n_q == 1:
            q = q.T
        if f.shape[1] != self.n_f or q.shape[1] != self.n_q:
            raise ValueError(f"constraints {self.name!r}: expected f (N, {self.n_f}) and q (N, {self.n_q}), "
                             f"got {f.shape} and {q.shape}")
        n = max(f.shape[0], q.shape[0])
        return (np.broadcast_to(f, (n, self.n_f)).astype(float, copy=True),
                np.broadcast_to(q, (n, self.n_q)).astype(float, copy=True))

    # -- derivatives: analytic or central differences -------------------------------------------
    def _step(self, order: int) -> float:
        if self.fd_step is not None:
            return float(self.fd_step)
        eps = np.finfo(float).eps
        return eps ** (1 / 3) if order == 1 else eps ** 0.25

    def _first(self, f, q):
        if self.first is not None:
            gf, gq = self.first(f, q)
            return np.asarray(gf, dtype=float), np.asarray(gq, dtype=float)
        return self._fd_first(self.residual, f, q, self._step(1))

    def _fd_first(self, fun, f, q, h):
        """Central differences of ``fun`` (N, ...) in every f_j and q_k: (N, ..., m) and (N, ..., nq)."""
        cols_f, cols_q = [], []
        for j in range(self.n_f):
            d = np.zeros(self.n_f)
            d[j] = h
            cols_f.append((np.asarray(fun(f + d, q)) - np.asarray(fun(f - d, q))) / (2 * h))
        for k in range(self.n_q):
            d = np.zeros(self.n_q)
            d[k] = h
            cols_q.append((np.asarray(fun(f, q + d)) - np.asarray(fun(f, q - d))) / (2 * h))
        return np.stack(cols_f, axis=-1), np.stack(cols_q, axis=-1)

    def _second(self, f, q):
        if self.second is not None:
            gff, gfq, gqq = self.second(f, q)
            return np.asarray(gff, dtype=float), np.asarray(gfq, dtype=float), np.asarray(gqq, dtype=float)
        m, nq = self.n_f, self.n_q
        if self.first is not None:
            h = self._step(1)
            # differentiate (g_f, g_q) once more: d/df_k of g_f[..., j] and d/dq_k ...
            stacked = lambda ff, qq: np.concatenate(self.first(ff, qq), axis=-1)  # (N, m, m + nq)
            d_df, d_dq = self._fd_first(stacked, f, q, h)  # (N, m, m+nq, m), (N, m, m+nq, nq)
            gff = d_df[:, :, :m, :]
            gfq = 0.5 * (d_dq[:, :, :m, :] + np.swapaxes(d_df[:, :, m:, :], -1, -2))
            gqq = d_dq[:, :, m:, :]
            gff = 0.5 * (gff + np.swapaxes(gff, -1, -2))
            gqq = 0.5 * (gqq + np.swapaxes(gqq, -1, -2))
            return gff, gfq, gqq
        # second differences of the residual in z = (f, q)
        h = self._step(2)
        z = np.concatenate([f, q], axis=1)
        nz = m + nq
        fun = lambda zz: np.asarray(self.residual(zz[:, :m], zz[:, m:]), dtype=float)
        g0 = fun(z)
        hz = np.zeros((z.shape[0], m, nz, nz))
        for a in range(nz):
            ea = np.zeros(nz)
            ea[a] = h
            hz[:, :, a, a] = (fun(z + ea) - 2 * g0 + fun(z - ea)) / h ** 2
            for b in range(a + 1, nz):
                eb = np.zeros(nz)
                eb[b] = h
                v = (fun(z + ea + eb) - fun(z + ea - eb) - fun(z - ea + eb) + fun(z - ea - eb)) / (4 * h * h)
                hz[:, :, a, b] = hz[:, :, b, a] = v
        return hz[:, :, :m, :m], hz[:, :, :m, m:], hz[:, :, m:, m:]


def check_coordinates(constraints: HolonomicConstraints, q: np.ndarray, tolerance: float = 1e-12) -> None:
    """Raise :class:`CoordinateRangeError` if any q lies outside ``constraints.coordinate_range``."""
    lo, hi = constraints.coordinate_range.T
    bad = (q < lo - tolerance) | (q > hi + tolerance) | ~np.isfinite(q)
    if np.any(bad):
        n, k = np.argwhere(bad)[0]
        raise CoordinateRangeError(
            f"{constraints.name}: coordinate {constraints.coordinate_names[k]!r} = {q[n, k]:.10g} is outside its "
            f"range [{lo[k]:.6g}, {hi[k]:.6g}] (configuration {n})")


# --------------------------------------------------------------------------------------------
# Newton solver and continuation
# --------------------------------------------------------------------------------------------
def _as_q(constraints: HolonomicConstraints, q: Any) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    if q.ndim == 0:
        q = q.reshape(1, 1)
    elif q.ndim == 1:
        q = q.reshape(-1, 1) if constraints.n_q == 1 else q.reshape(1, -1)
    if q.ndim != 2 or q.shape[1] != constraints.n_q:
        raise ValueError(f"{constraints.name}: q must have shape (N, {constraints.n_q}), got {q.shape}")
    return q


def _guess_array(constraints, guess, q) -> np.ndarray:
    g = guess(q) if callable(guess) else guess
    g = np.asarray(g, dtype=float)
    g = np.broadcast_to(np.atleast_2d(g), (q.shape[0], constraints.n_f)).copy()
    return g


def _c(a: Any) -> np.ndarray:
    """A C-contiguous float64 array (the one type the closed-chain kernels are compiled for)."""
    return np.ascontiguousarray(a, dtype=float)


def solve_constraints(constraints: HolonomicConstraints, q: Any, guess: Any, *, tol: float = 1e-12,
                      max_iter: int = 30, residual_tol: float | None = None, max_condition: float = 1e10,
                      check_range: bool = True, return_jet: int | None = None):
    """Solve g(f, q) = 0 for f at a batch of q by Newton's method (all configurations at once).

    ``guess`` is an array (m,) or (N, m), or a callable q (N, n_q) -> (N, m).
    Iterates f <- f - g_f^-1 g until every Newton step is below ``tol`` relative
    to 1 + |f| (or the residual is at round-off level, 4 eps ``length_scale``),
    then checks the residual against ``residual_tol`` (default 1e-9 * ``length_scale``).
    The constraints are evaluated here (batched, by their Python callables); the Newton step, the
    condition test and the projection method are the compiled kernels of
    :mod:`osim_emb.core.closed_chain_kernels` (the ones the compiled program's closed chains run).

    Raises :class:`CoordinateRangeError` (q outside the constraints' range),
    :class:`SingularConstraintError` (the condition number of dg/df, as defined by
    :func:`constraint_condition`, above ``max_condition``, with the configuration), :class:`AssemblyError` (no
    convergence in ``max_iter`` iterations, with the residual).

    Returns f (N, m); with ``return_jet`` = 1 or 2, (f, the
    :class:`ConstraintJet` of that order at the solution), sparing a re-evaluation.
    """
    f, g, _, _ = _solve_and_derive(constraints, q, guess, tol=tol, max_iter=max_iter, residual_tol=residual_tol,
                                   max_condition=max_condition, check_range=check_range,
                                   jet_order=max(1, return_jet or 1), order=0)
    if return_jet:
        return f, g
    return f


def _solve_and_derive(constraints: HolonomicConstraints, q: Any, guess: Any, *, tol: float, max_iter: int,
                      residual_tol: float | None, max_condition: float | None, check_range: bool, jet_order: int,
                      order: int):
    """Newton (:func:`~osim_emb.core.closed_chain_kernels.newton_steps`), the residual check, then the condition
    test and, for ``order`` >= 1, the gradients and Hessians by the projection method
    (:func:`~osim_emb.core.closed_chain_kernels.chain_derivatives_batch`): (f, jet of ``jet_order``, grad, hess).
    Every failure comes back from the kernels as a status code and is raised here with its details."""
    q = _as_q(constraints, q)
    if check_range:
        check_coordinates(constraints, q)
    f = _guess_array(constraints, guess, q)
    if residual_tol is None:
        residual_tol = 1e-9 * constraints.length_scale
    floor = 4 * np.finfo(float).eps * constraints.length_scale
    n = q.shape[0]
    active = np.ones(n, dtype=bool)
    iters = np.zeros(n, dtype=int)
    for it in range(1, max_iter + 1):
        idx = np.flatnonzero(active)
        cj = constraints.evaluate(f[idx], q[idx], order=1)
        fa = _c(f[idx])
        status = CK.newton_steps(_c(cj.f), _c(cj.value), fa, float(tol), float(floor))
        singular = status == CK.STATUS_SINGULAR
        if np.any(singular):
            cond = CK.condition_numbers(_c(cj.f), _c(cj.q))
            k = int(np.argmax(np.where(singular, cond, -1.0)))
            _raise_singular(constraints, q[idx[k]], f[idx[k]], float(cond[k]), int(idx[k]), "during Newton")
        f[idx] = fa
        iters[idx] = it
        bad = status == CK.STATUS_DIVERGED
        if np.any(bad):
            k = int(idx[np.flatnonzero(bad)[0]])
            raise AssemblyError(
                f"{constraints.name}: cannot assemble at q = {_fmt(q[k])} (configuration {k}): Newton diverged "
                f"(non-finite iterate after {it} iterations)", q[k], np.inf, it, k)
        active[idx[status == CK.NEWTON_CONVERGED]] = False
        if not active.any():
            break
    g = constraints.evaluate(f, q, order=max(jet_order, order, 1))
    res = np.max(np.abs(g.value), axis=1)
    failed = active | ~(res <= residual_tol)
    if np.any(failed):
        k = int(np.flatnonzero(failed)[np.argmax(res[failed])])
        raise AssemblyError(
            f"{constraints.name}: cannot assemble at q = {_fmt(q[k])} (configuration {k}): Newton did not converge "
            f"in {iters[k]} iterations, residual |g| = {res[k]:.3e} (tolerance {residual_tol:.1e})",
            q[k], float(res[k]), int(iters[k]), k)
    max_cond = np.inf if max_condition is None else float(max_condition)
    grad = hess = None
    if order >= 1 or np.isfinite(max_cond):
        m, nq = constraints.n_f, constraints.n_q
        if order >= 2:
            second = (_c(g.ff), _c(g.fq), _c(g.qq))
        else:
            second = (np.zeros((0, m, m, m)), np.zeros((0, m, m, nq)), np.zeros((0, m, nq, nq)))
        grad, hess, status, cond = CK.chain_derivatives_batch(_c(g.f), _c(g.q), *second, max_cond, int(order))
        if np.any(status != CK.STATUS_OK):
            k = int(np.argmax(np.where(status != CK.STATUS_OK, cond, -1.0)))
            _raise_singular(constraints, q[k], f[k], float(cond[k]), k)
    return f, g, (grad if order >= 1 else None), (hess if order >= 2 else None)


def _raise_singular(constraints, q, f, cond, index, when=""):
    raise SingularConstraintError(
        f"{constraints.name}: the constraint Jacobian dg/df is singular {when} at q = {_fmt(q)} "
        f"(configuration {index}, f = {_fmt(f)}): condition number {cond:.3e}; the joint variables are not "
        f"smooth functions of the generalized coordinates there (a dead point or a change of branch)",
        q, f, cond, index)


def constraint_condition(gf: np.ndarray, gq: np.ndarray) -> np.ndarray:
    """Condition number (N,) of dg/df relative to the whole constraint Jacobian: ||[g_f g_q]||_F / sigma_min(g_f).

    Large when f is a steep or non-smooth function of q (||grad f|| <= ||g_q|| / sigma_min);
    unlike cond(g_f) it also flags a single constraint (m = 1) whose derivative vanishes.
    (The Frobenius norm bounds the 2-norm from above within a factor sqrt(m).)  The compiled
    :func:`~osim_emb.core.closed_chain_kernels.condition_number`, at every configuration.
    """
    gf, gq = _c(gf), _c(gq)
    return CK.condition_numbers(gf.reshape(-1, *gf.shape[-2:]), gq.reshape(-1, *gq.shape[-2:]))


def solve_path(constraints: HolonomicConstraints, q_path: Any, f_start: Any, *, tol: float = 1e-12,
               max_iter: int = 30, max_halvings: int = 12, max_condition: float = 1e10,
               check_range: bool = True) -> np.ndarray:
    """Solve g(f, q) = 0 along an ordered path q_path (N, n_q) by continuation.

    ``f_start`` (m,) is a guess at ``q_path[0]``.  Each next point is predicted
    from the previous solution along the tangent, f + grad f (q_k+1 - q_k), with
    the gradient by the implicit-function theorem, and corrected by Newton; a step
    that fails, or whose Newton correction exceeds half the predictor step (Newton
    jumped to another branch), is halved (up to ``max_halvings`` times) so that
    the solution stays on the branch it started on.  At a dead point (fold) the
    halvings run out and :class:`AssemblyError` is raised.
    """
    q_path = _as_q(constraints, q_path)
    if check_range:
        check_coordinates(constraints, q_path)
    kw = dict(tol=tol, max_iter=max_iter, max_condition=max_condition, check_range=False)
    out = np.empty((q_path.shape[0], constraints.n_f))
    f = solve_constraints(constraints, q_path[:1], f_start, **kw)[0]
    out[0] = f
    for k in range(1, q_path.shape[0]):
        q_from, q_to = q_path[k - 1], q_path[k]
        s, ds = 0.0, 1.0
        halvings = 0
        while s < 1.0:
            ds = min(ds, 1.0 - s)
            q_a = q_from + s * (q_to - q_from)
            q_b = q_from + (s + ds) * (q_to - q_from)
            cj = constraints.evaluate(f[None], q_a[None], order=1)
            grad = -np.linalg.solve(cj.f[0], cj.q[0])
            pred = f + grad @ (q_b - q_a)
            try:
                f_new = solve_constraints(constraints, q_b[None], pred, **kw)[0]
                # a corrector much larger than the predictor step means Newton left the branch
                if np.max(np.abs(f_new - pred)) > max(0.5 * np.max(np.abs(pred - f)), 1e-8 * (1 + np.max(np.abs(f)))):
                    raise AssemblyError("jump")
            except (AssemblyError, SingularConstraintError):
                halvings += 1
                if halvings > max_halvings:
                    raise AssemblyError(
                        f"{constraints.name}: continuation failed between q = {_fmt(q_from)} and {_fmt(q_to)} "
                        f"(path points {k - 1}, {k}) after {max_halvings} step halvings, stuck at q = "
                        f"{_fmt(q_a)}: a dead point (fold) of the branch or no solution beyond it", q_to, np.inf,
                        max_iter, k)
                ds /= 2
                continue
            f, s = f_new, s + ds
            ds *= 2
        out[k] = f
    return out


def continuation_guess(constraints: HolonomicConstraints, q_ref: Any, f_ref: Any, max_step: float = 0.25,
                       tol: float = 1e-10, max_iter: int = 30) -> Callable[[np.ndarray], np.ndarray]:
    """A guess q -> f by batched continuation from an assembled reference (q_ref, f_ref).

    Every configuration walks the straight segment from q_ref to q in equal
    steps (tangent predictor, Newton corrector), all configurations at once;
    the number of steps is the largest |q - q_ref|_inf of the batch divided by
    ``max_step`` (in the units of q), at least one.  On failure the number of
    steps is multiplied by 4 (twice).
    The result is a converged solution on the reference's branch, so the final
    Newton solve that follows takes one step.  When the walk of a batch fails, every configuration walks on its
    own (its own number of steps), so a configuration's result does not depend on the batch it is in.
    """
    q_ref = np.asarray(q_ref, dtype=float).reshape(1, constraints.n_q)
    f_ref = np.asarray(f_ref, dtype=float).reshape(1, constraints.n_f)

    def guess(q: np.ndarray) -> np.ndarray:
        q = _as_q(constraints, q)
        try:
            return walk(q)
        except AssemblyError:
            if q.shape[0] == 1:
                raise
        # one configuration's walk failed: each on its own, with its own number of steps (a batch's result is then
        # the configurations' own, whatever else is in the batch)
        return np.vstack([walk(q[n:n + 1]) for n in range(q.shape[0])])

    def walk(q: np.ndarray) -> np.ndarray:
        last_error: Exception | None = None
        n_steps = max(1, int(np.ceil(np.max(np.abs(q - q_ref)) / max_step)))
        for steps in (n_steps, 4 * n_steps, 16 * n_steps):
            f = np.repeat(f_ref, q.shape[0], axis=0)
            try:
                for k in range(1, steps + 1):
                    qa = q_ref + (k - 1) / steps * (q - q_ref)
                    qb = q_ref + k / steps * (q - q_ref)
                    cj = constraints.evaluate(f, qa, order=1)
                    grad = -np.linalg.solve(cj.f, cj.q)
                    pred = f + np.einsum("nik,nk->ni", grad, qb - qa)
                    f = solve_constraints(constraints, qb, pred, tol=tol, max_iter=max_iter,
                                          max_condition=np.inf, check_range=False)
                return f
            except (AssemblyError, np.linalg.LinAlgError) as exc:
                last_error = exc
        raise AssemblyError(f"{constraints.name}: continuation from the reference configuration failed: "
                            f"{last_error}")

    # lets osim_emb.core.compiled run the same walk in the compiled program (an OP_FRAMECHAIN node)
    guess.continuation = (q_ref[0].copy(), f_ref[0].copy(), float(max_step), float(tol), int(max_iter))
    return guess


def function_guess(functions: Sequence[JointFunction]) -> Callable[[np.ndarray], np.ndarray]:
    """A guess q -> f from m JointFunctions (e.g. a pre-model), one per dependent joint variable."""
    functions = tuple(functions)

    def guess(q: np.ndarray) -> np.ndarray:
        return np.stack([fn.evaluate(q, order=0).value for fn in functions], axis=1)

    guess.functions = functions  # lets osim_emb.core.compiled evaluate the guess in the compiled program
    return guess


# --------------------------------------------------------------------------------------------
# (c) the analytical projection method, Eqs 101-120
# --------------------------------------------------------------------------------------------
def projection_matrices(gbar: np.ndarray, *, singular_tol: float = 1e-13) -> tuple[np.ndarray, np.ndarray]:
    """The projection matrices gamma_i of Eqs 110, 114-117 and the norms ||gamma_{i+1} g-bar_i||^2.

    ``gbar`` (N, m, m) holds the columns g-bar_j of Eq 104 (``gbar[:, :, j]``, i.e.
    the constraint Jacobian dg/df).  With gamma_{m+1} = I_m,

        sigma_i = I_m - g-bar_i g-bar_i^T gamma_{i+1} / ||gamma_{i+1} g-bar_i||^2     (Eq 116)
        gamma_i = gamma_{i+1} sigma_i,   i = m, m-1, ..., 2                          (Eq 117)

    (gamma_m = sigma_m is Eq 110).  Returns ``gammas`` (N, m + 2, m, m) with
    ``gammas[:, i]`` = gamma_i for i = 2..m+1 (entries 0 and 1 unused), and
    ``norms2`` (N, m + 1) with ``norms2[:, i]`` = ||gamma_{i+1} g-bar_i||^2 for i = 1..m.
    A norm that vanishes relative to ||g-bar_i||^2 (below ``singular_tol``) means
    that g-bar_i lies in the span of g-bar_{i+1..m}: dg/df is singular, and
    :class:`SingularConstraintError` is raised.  The compiled
    :func:`~osim_emb.core.closed_chain_kernels.projection_factor` at every configuration.
    """
    gbar = _c(gbar)
    gammas, norms2, ok = CK.projection_factor_batch(gbar, float(singular_tol))
    if not ok.all():
        k = int(np.flatnonzero(~ok)[0])
        cond = float(np.linalg.cond(gbar[k]))
        raise SingularConstraintError(
            f"projection method: a norm ||gamma_(i+1) g-bar_i||^2 vanishes (configuration {k}); "
            f"the constraint Jacobian dg/df is singular, condition number {cond:.3e}", None, None, cond, k)
    return gammas, norms2


def projection_solve(gbar: np.ndarray, rhs: np.ndarray, projections: tuple | None = None) -> np.ndarray:
    """Solve sum_j g-bar_j (x) x_j = rhs for the vectors x_j by the seed's recursive elimination (Eqs 105-119).

    ``gbar`` (N, m, m) as in :func:`projection_matrices`; ``rhs`` (N, m, p): the
    (m p)-vector of the right-hand side as m blocks of p.  For p = n_q and
    rhs = -dG/dq this is Eq 102 and x_j = grad f_j (Eq 118); for p = n_q^2 and
    rhs = Gamma it is Eq 120 and x_j = vec(H_j).  With eta^(0) = 0,

        x_i = (1 / ||gamma_{i+1} g-bar_i||^2) (g-bar_i^T gamma_{i+1} (x) I_p) (rhs - eta^(i-1))   (Eq 118)
        eta^(i) = eta^(i-1) + g-bar_i (x) x_i                                               (Eq 119)

    for i = 1..m.  A product (a^T (x) I_p) v with v stacked as m blocks of p is
    a^T V for the (m, p) matrix V of blocks, and g-bar (x) x is the outer product;
    these identities replace the Kronecker products (the literal version is
    :func:`projection_gradients_kronecker`).  The compiled
    :func:`~osim_emb.core.closed_chain_kernels.projection_solve` at every configuration.
    """
    gbar = _c(gbar)
    gammas, norms2 = projection_matrices(gbar) if projections is None else projections
    return CK.projection_solve_batch(gbar, _c(gammas), _c(norms2), _c(rhs))


def projection_gradients(cj: ConstraintJet, projections: tuple | None = None) -> np.ndarray:
    """grad f_i (N, m, n_q) by the analytical projection method: Eq 102 solved with Eqs 116-119."""
    return projection_solve(cj.f, -cj.q, projections)


def projection_gradients_kronecker(gbar: np.ndarray, dG_dq: np.ndarray) -> np.ndarray:
    """Eqs 102-119 for one configuration, literally, with numpy Kronecker products.

    ``gbar`` (m, m) (columns g-bar_j), ``dG_dq`` (m n_q,) = dG/dq in the seed's
    Definition 1 layout (the gradients of g_1..g_m stacked).  Returns the
    gradients (m, n_q).  A reference for :func:`projection_gradients`.
    """
    gbar = np.asarray(gbar, dtype=float)
    m = gbar.shape[0]
    nq = dG_dq.size // m
    eye_m, eye_q = np.eye(m), np.eye(nq)
    gamma = {m + 1: eye_m}
    for i in range(m, 1, -1):
        gi = gbar[:, [i - 1]]
        nrm2 = float(np.linalg.norm(gamma[i + 1] @ gi) ** 2)
        sigma = eye_m - (gi @ gi.T @ gamma[i + 1]) / nrm2  # Eq 116
        gamma[i] = gamma[i + 1] @ sigma  # Eq 117
    eta = np.zeros(m * nq)  # eta^(0)
    grads = []
    for i in range(1, m + 1):
        gi = gbar[:, [i - 1]]
        nrm2 = float(np.linalg.norm(gamma[i + 1] @ gi) ** 2)
        gf = -np.kron(gi.T @ gamma[i + 1], eye_q) @ (eta + dG_dq) / nrm2  # Eq 118
        grads.append(gf)
        eta = eta + np.kron(gi[:, 0], gf)  # Eq 119
    return np.array(grads)


def hessian_rhs(cj: ConstraintJet, grad: np.ndarray) -> np.ndarray:
    """Gamma of Eq 120 (N, m, n_q, n_q): the right-hand side of sum_j g-bar_j (x) vec(H_j) = Gamma.

    Differentiating Eq 101, sum_j (dg_i/df_j) grad f_j + dg_i/dq = 0, once more
    with respect to q (Theorem 3; the joint variables inside dg_i/df_j and
    dg_i/dq are functions of q) gives

        sum_j (dg_i/df_j) H_j = Gamma_i = -Z^T (d2 g_i / dz^2) Z,    z = (f, q),   Z = dz/dq = [grad f^T; I_nq]

    that is, block by block,

        Gamma_i = -( sum_jk g_i,f_j f_k grad f_j grad f_k^T
                     + sum_j (grad f_j g_i,f_j q^T + g_i,q f_j grad f_j^T) + g_i,qq ).

    In the seed's Kronecker notation, Gamma = -(I_m (x) Z^T (x) Z^T) d2G/dz2 with
    d2G/dz2 the (m (m+n_q)^2)-vector of vec(d2 g_i/dz2) (Definition 1 applied twice).
    """
    a = np.einsum("nijk,njp,nkr->nipr", cj.ff, grad, grad)
    b = np.einsum("njp,nijr->nipr", grad, cj.fq)
    return -(a + b + np.swapaxes(b, -1, -2) + cj.qq)


def projection_hessians(cj: ConstraintJet, grad: np.ndarray, projections: tuple | None = None) -> np.ndarray:
    """H_i (N, m, n_q, n_q) by the projection method on Eq 120 (the algorithm of Eqs 116-119 with I_{n_q^2}): the
    compiled :func:`~osim_emb.core.closed_chain_kernels.hessian_rhs` and ``projection_solve``."""
    gammas, norms2 = projection_matrices(cj.f) if projections is None else projections
    return CK.projection_hessians_batch(_c(cj.f), _c(cj.q), _c(cj.ff), _c(cj.fq), _c(cj.qq), _c(grad), _c(gammas),
                                        _c(norms2))


# --------------------------------------------------------------------------------------------
# (d) implicit-function theorem
# --------------------------------------------------------------------------------------------
def implicit_derivatives(cj: ConstraintJet, order: int = 2) -> tuple[np.ndarray, np.ndarray | None]:
    """grad f = -g_f^-1 g_q and, for order 2, H by g_f vec(H) = Gamma solved with LU (independent check of (c))."""
    grad = -np.linalg.solve(cj.f, cj.q)
    if order < 2:
        return grad, None
    n, m, nq = grad.shape
    gam = hessian_rhs(cj, grad).reshape(n, m, nq * nq)
    hess = np.linalg.solve(cj.f, gam).reshape(n, m, nq, nq)
    return grad, 0.5 * (hess + np.swapaxes(hess, -1, -2))


# --------------------------------------------------------------------------------------------
# (b) numerical differentiation on a computational molecule (Fig 2)
# --------------------------------------------------------------------------------------------
_D1 = {2: {-1: -0.5, 1: 0.5}, 4: {-2: 1 / 12, -1: -8 / 12, 1: 8 / 12, 2: -1 / 12}}
_D2 = {2: {-1: 1.0, 0: -2.0, 1: 1.0}, 4: {-2: -1 / 12, -1: 16 / 12, 0: -30 / 12, 1: 16 / 12, 2: -1 / 12}}


def molecule_offsets(n_q: int, accuracy: int = 2) -> np.ndarray:
    """The abscissae of the computational molecule in units of the steps: (n_points, n_q) integer offsets.

    accuracy 2 (the seed's Fig 2 for n_q = 2): the centre, +-1 along each
    coordinate and the four diagonal points (+-1, +-1) of every pair - nine
    points for two coordinates (the seed's text counts ten abscissae; nine are
    what second-order central differences need).  accuracy 4: +-1, +-2 along
    each axis and the 16 points {+-1, +-2}^2 of every pair (fourth-order formulas).
    """
    if accuracy not in (2, 4):
        raise ValueError(f"molecule accuracy must be 2 or 4, got {accuracy}")
    pts = [np.zeros(n_q, dtype=int)]
    axis_steps = (-1, 1) if accuracy == 2 else (-2, -1, 1, 2)
    for k in range(n_q):
        for s in axis_steps:
            e = np.zeros(n_q, dtype=int)
            e[k] = s
            pts.append(e)
    for k in range(n_q):
        for l in range(k + 1, n_q):
            for a in axis_steps:
                for b in axis_steps:
                    e = np.zeros(n_q, dtype=int)
                    e[k], e[l] = a, b
                    pts.append(e)
    return np.array(pts)


def molecule_derivatives(constraints: HolonomicConstraints, q: Any, f: Any, steps: Any = 1e-4,
                         accuracy: int = 2, tol: float = 1e-14, max_iter: int = 30) -> tuple[np.ndarray, np.ndarray]:
    """grad f_i and H_i by numerical differentiation on the computational molecule (seed Fig 2).

    The constraints are solved (Newton from the centre solution ``f``) at every
    abscissa q + offset * steps of :func:`molecule_offsets`, for all N
    configurations at once, and central-difference formulas of order
    ``accuracy`` give the gradient (N, m, n_q) and Hessian (N, m, n_q, n_q).
    ``steps`` is a scalar or one step per coordinate.  Errors: truncation
    O(h^accuracy) plus round-off ~ (Newton tolerance)/h for the gradient and
    /h^2 for the Hessian; h ~ 1e-4 (accuracy 2) or 1e-3 (accuracy 4) balance them.
    """
    q = _as_q(constraints, q)
    f = np.atleast_2d(np.asarray(f, dtype=float))
    n, nq, m = q.shape[0], constraints.n_q, constraints.n_f
    h = np.broadcast_to(np.asarray(steps, dtype=float), (nq,))
    offs = molecule_offsets(nq, accuracy)
    npts = offs.shape[0]
    qq = (q[:, None, :] + offs[None, :, :] * h).reshape(n * npts, nq)
    guess = np.repeat(f, npts, axis=0)
    sol = solve_constraints(constraints, qq, guess, tol=tol, max_iter=max_iter, max_condition=np.inf,
                            check_range=False).reshape(n, npts, m)
    lookup = {tuple(o): p for p, o in enumerate(offs)}

    def at(offset: dict[int, int]) -> np.ndarray:
        e = [0] * nq
        for k, s in offset.items():
            e[k] = s
        return sol[:, lookup[tuple(e)]]

    grad = np.zeros((n, m, nq))
    hess = np.zeros((n, m, nq, nq))
    for k in range(nq):
        grad[:, :, k] = sum(c * at({k: s}) for s, c in _D1[accuracy].items()) / h[k]
        hess[:, :, k, k] = sum(c * at({k: s}) for s, c in _D2[accuracy].items()) / h[k] ** 2
        for l in range(k + 1, nq):
            v = sum(ca * cb * at({k: a, l: b}) for a, ca in _D1[accuracy].items()
                    for b, cb in _D1[accuracy].items()) / (h[k] * h[l])
            hess[:, :, k, l] = hess[:, :, l, k] = v
    return grad, hess


# --------------------------------------------------------------------------------------------
# (a) pre-modeling
# --------------------------------------------------------------------------------------------
def premodel(constraints: HolonomicConstraints, grid: Any, f_start: Any, kind: str = "spline", *,
             n_harmonics: int = 20, period: float | None = None, secular: bool = True,
             grid2: Any = None, tol: float = 1e-13) -> tuple[JointFunction, ...]:
    """The seed's pre-modeling: sweep q over a grid, solve the constraints, fit smooth functions.

    One coordinate (n_q = 1): ``grid`` is the ordered sweep (e.g. step 0.01 over
    the range), solved by continuation from the guess ``f_start`` at ``grid[0]``;
    ``kind='spline'`` fits natural cubic splines
    (:class:`~osim_emb.core.functions.NaturalCubicSpline`), ``kind='fourier'`` a
    least-squares Fourier series of ``n_harmonics`` harmonics with period
    ``period`` and, if ``secular``, the secular term s q
    (:meth:`~osim_emb.core.functions.Fourier.fit`; for an angle that turns whole
    revolutions per period, sample one period without its end point).

    Two coordinates (n_q = 2, ``kind='spline'``): ``grid`` and ``grid2`` are the
    axes of a tensor grid, swept row by row by continuation, fitted with a
    bicubic :class:`~osim_emb.core.functions.SplineSurface`.

    Returns one JointFunction of the n_q coordinates per dependent variable.
    """
    from osim_emb.core.functions import Fourier, NaturalCubicSpline, SplineSurface

    grid = np.asarray(grid, dtype=float)
    if constraints.n_q == 1:
        sol = solve_path(constraints, grid[:, None], f_start, tol=tol)
        if kind == "spline":
            return tuple(NaturalCubicSpline(grid, sol[:, i]) for i in range(constraints.n_f))
        if kind == "fourier":
            return tuple(Fourier.fit(grid, sol[:, i], n_harmonics, period=period, secular=secular)
                         for i in range(constraints.n_f))
        raise ValueError(f"premodel: kind must be 'spline' or 'fourier', got {kind!r}")
    if constraints.n_q == 2 and kind == "spline":
        if grid2 is None:
            raise ValueError("premodel: two coordinates need grid (first axis) and grid2 (second axis)")
        grid2 = np.asarray(grid2, dtype=float)
        first_col = solve_path(constraints, np.column_stack([grid, np.full(grid.size, grid2[0])]), f_start, tol=tol)
        values = np.empty((grid.size, grid2.size, constraints.n_f))
        for a in range(grid.size):
            row = np.column_stack([np.full(grid2.size, grid[a]), grid2])
            values[a] = solve_path(constraints, row, first_col[a], tol=tol)
        return tuple(SplineSurface(grid, grid2, values[:, :, i]) for i in range(constraints.n_f))
    raise ValueError(f"premodel supports one coordinate (spline or fourier) or two (spline); got n_q = "
                     f"{constraints.n_q}, kind = {kind!r}")


# --------------------------------------------------------------------------------------------
# the closed chain as joint-variable functions of a Model
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ChainJet:
    """One solve of a closed chain at a batch: f (N, m), gradients (N, m, n_q), Hessians (N, m, n_q, n_q)."""

    value: np.ndarray
    gradient: np.ndarray | None
    hessian: np.ndarray | None
    residual: np.ndarray  # (N,) max |g| at the solution


@dataclass(frozen=True, eq=False)
class ClosedChain:
    """The dependent joint variables of a closed chain, solved exactly at every evaluation.

    ``guess`` (a callable q -> f, e.g. :func:`function_guess` of a pre-model or
    :func:`continuation_guess` from an assembled configuration, or a constant
    array) selects the branch; Newton (:func:`solve_constraints`) then converges
    to ``tol``.  Derivatives come from the projection method (Eqs 102-120,
    ``method='projection'``) or from the implicit-function theorem
    (``method='implicit'``).
    """

    constraints: HolonomicConstraints
    guess: Any
    method: str = "projection"
    tol: float = 1e-13
    max_iter: int = 30
    max_condition: float = 1e10
    check_range: bool = True
    _variables: tuple = field(default=(), init=False, repr=False)

    def __post_init__(self):
        if self.method not in ("projection", "implicit"):
            raise ValueError(f"ClosedChain: method must be 'projection' or 'implicit', not {self.method!r}")
        object.__setattr__(self, "_variables",
                           tuple(ChainVariable(self, i) for i in range(self.constraints.n_f)))

    @property
    def n_q(self) -> int:
        return self.constraints.n_q

    @property
    def n_f(self) -> int:
        return self.constraints.n_f

    @property
    def variables(self) -> tuple["ChainVariable", ...]:
        """The m JointFunctions f_1(q)..f_m(q) (they share one solve per evaluation through ``cache``)."""
        return self._variables

    def variable(self, name_or_index: str | int) -> "ChainVariable":
        if isinstance(name_or_index, str):
            return self._variables[self.constraints.variable_names.index(name_or_index)]
        return self._variables[name_or_index]

    def solve(self, q: Any) -> np.ndarray:
        """f (N, m) at a batch of q."""
        return solve_constraints(self.constraints, q, self.guess, tol=self.tol, max_iter=self.max_iter,
                                 max_condition=self.max_condition, check_range=self.check_range)

    def evaluate(self, q: Any, order: int = 2) -> ChainJet:
        """Solve at q and return f with its gradients (order >= 1) and Hessians (order 2): Newton, the condition
        test and the projection method in the compiled closed-chain kernels (one call each per Newton iteration
        and for the derivatives), with the constraints evaluated in Python."""
        projection = self.method == "projection"
        f, cj, grad, hess = _solve_and_derive(self.constraints, q, self.guess, tol=self.tol, max_iter=self.max_iter,
                                              residual_tol=None, max_condition=self.max_condition,
                                              check_range=self.check_range, jet_order=max(order, 1),
                                              order=order if projection else 0)
        residual = np.max(np.abs(cj.value), axis=1)
        if order >= 1 and not projection:
            grad, hess = implicit_derivatives(cj, order)
        return ChainJet(f, grad, hess, residual)


#: (chain name, variable name) -> ChainVariable while a model is read back (:func:`rebuilt_variables`)
_REBUILT: contextvars.ContextVar = contextvars.ContextVar("osim_emb_rebuilt_chain_variables", default=None)


@contextlib.contextmanager
def rebuilt_variables(chains: Sequence["ClosedChain"]):
    """Within the block, function records of these chains' variables (``to_dict``) rebuild to the variables
    themselves (how a model's JSON record gets back the PointConstraint loops rebuilt from its OpenSim document)."""
    token = _REBUILT.set({(c.constraints.name, v.name): v for c in chains for v in c.variables})
    try:
        yield
    finally:
        _REBUILT.reset(token)


class ChainVariable(JointFunction):
    """f_i(q) of a :class:`ClosedChain`: value, gradient and Hessian from one shared constraint solve."""

    type_name = "ClosedChainVariable"

    def __init__(self, chain: ClosedChain, index: int):
        self.chain = chain
        self.index = int(index)
        self.n_inputs = chain.constraints.n_q

    @property
    def name(self) -> str:
        return self.chain.constraints.variable_names[self.index]

    def _evaluate(self, x, order, cache):
        jet = None
        if cache is not None:
            for o in range(order, 3):
                jet = cache.get(("closed_chain", id(self.chain), o))
                if jet is not None:
                    break
        if jet is None:
            jet = self.chain.evaluate(x, order)
            if cache is not None:
                cache[("closed_chain", id(self.chain), order)] = jet
        i = self.index
        return Jet(jet.value[:, i].copy(),
                   jet.gradient[:, i].copy() if order >= 1 else None,
                   jet.hessian[:, i].copy() if order >= 2 else None)

    def parameters(self):
        return {"chain": self.chain.constraints.name, "variable": self.name, "index": self.index}

    @classmethod
    def from_parameters(cls, params):
        known = _REBUILT.get()
        if known is not None and (params.get("chain"), params.get("variable")) in known:
            return known[params.get("chain"), params.get("variable")]
        raise FunctionError(
            f"a closed-chain variable ({params.get('chain')!r}: {params.get('variable')!r}) cannot be rebuilt from "
            f"a dict: its constraints are code; rebuild the mechanism (e.g. osim_emb.seeds.mechanisms, or a model's "
            f"PointConstraints from its OpenSim document) instead")

    def describe(self):
        return f"{self.name} of closed chain {self.chain.constraints.name!r} ({self.chain.method})"

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, ChainVariable) or self.chain.constraints.key is None:
            return False
        return (self.index == other.index and self.chain.method == other.chain.method
                and self.chain.constraints.key == other.chain.constraints.key)

    def __hash__(self):
        key = self.chain.constraints.key
        return id(self) if key is None else hash((key, self.index, self.chain.method))
