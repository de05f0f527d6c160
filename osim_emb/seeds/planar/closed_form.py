"""Closed-form joint reaction forces and joint torques of the planar chain.

Seed: ``planar_musculoskeletal_chain_closed_form.txt``, Eqs 8-13 and 20-24.

Every closed-form expression is held as a list of :class:`Term` objects, one
per monomial of the seed's formula with every sum written out (the sums of
masses ``sum_j m_j`` included), e.g. ``m_3 l_C3 l_1 thdd_1 cos(theta_3 + eps_C3
- theta_1)``.  Each term carries the variable it multiplies (a link's weight
``m_i g``, contact ``R_i``, angular acceleration ``thdd_i`` or squared angular
velocity ``thd_i^2``), so the same list gives

* the totals, evaluated for a batch of states in one array expression
  (:func:`joint_reactions`, :func:`joint_torques`);
* the contribution of each variable (:mod:`osim_emb.seeds.planar.contributions`);
* the symbolic structure: printable formulas and the counts of inertial terms
  of Appendix A (:func:`term_table`, :func:`count_inertial_terms`).

Terms of the base link's motion (``thd_0 = thdd_0 = 0``) are omitted.
Muscle forces are not trigonometric monomials in the seed: they enter the
reactions through Eq 12 (:func:`~osim_emb.seeds.planar.chain.spanning_muscle_force`)
and the torques through Eq 22 (:func:`~osim_emb.seeds.planar.chain.muscle_torques`).

Joint indexing: joint ``k = 1..n`` is ``J_k``.  ``joint_reactions(...)[:, k-1]``
is ``phi_{k-1,k}``, the force exerted *on link k-1 by link k* at ``J_k`` (Eq 9
or Eq 10 with their ``k`` equal to ``k-1`` here).  ``joint_torques(...)[:, k-1]``
is ``tau_k`` (Eq 13 for ``k = n``, Eq 23 or Eq 24).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd

from osim_emb.seeds.planar.chain import PlanarChain, _out, as_loads, as_state, spanning_muscle_force

__all__ = [
    "Term",
    "CompiledTerms",
    "DATA_SETS",
    "torque_terms",
    "reaction_terms",
    "compiled_terms",
    "evaluate_terms",
    "joint_reactions",
    "joint_torques",
    "term_table",
    "count_inertial_terms",
]

DATA_SETS = ("distal", "proximal")
INERTIAL = ("inertia_acc", "inertia_vel")
CATEGORY_CODES = ("weight", "contact", "inertia_acc", "inertia_vel")
_COMPONENT = {"torque": 0, "reaction_x": 1, "reaction_y": 2}


@dataclass(frozen=True)
class Term:
    """One monomial ``coef * trig(angle) * variable`` of a closed-form expression.

    ``angle = sum_i theta_coeffs[i] theta_i + sum_i gamma_coeffs[i] gamma_Ri + offset``
    (coefficients as ``((index, multiplier), ...)``).  ``variable`` is one of
    ``"one"`` (weights: the factor ``g`` is in ``coef``), ``"R"``, ``"thdd"`` or
    ``"thd2"``, of link ``link``.
    """

    equation: str
    quantity: str  # "torque" | "reaction_x" | "reaction_y"
    joint: int  # 1..n
    category: str  # "weight" | "contact" | "inertia_acc" | "inertia_vel"
    link: int
    coef: float
    trig: str  # "cos" | "sin"
    theta_coeffs: tuple[tuple[int, float], ...]
    gamma_coeffs: tuple[tuple[int, float], ...]
    offset: float
    variable: str
    symbol: str  # human-readable formula of the term


# ----------------------------------------------------------------------------- term builders
class _Builder:
    """Collects terms; ``angle`` specs are dicts {('t', i): c, ('g', i): c} plus an offset."""

    def __init__(self, chain: PlanarChain, equation: str):
        self.chain = chain
        self.eq = equation
        self.terms: list[Term] = []

    def add(self, quantity, joint, category, link, coef, trig, angle, offset, variable, symbol, skip_base=True):
        if skip_base and category in INERTIAL and link == 0:
            return  # thd_0 = thdd_0 = 0
        th = tuple(sorted((i, c) for (kind, i), c in angle.items() if kind == "t" and c != 0))
        ga = tuple(sorted((i, c) for (kind, i), c in angle.items() if kind == "g" and c != 0))
        self.terms.append(Term(self.eq, quantity, joint, category, link, float(coef), trig, th, ga, float(offset),
                               variable, symbol))

    # vector helpers: coef * var * u(phi) and coef * var * w(phi) as x/y scalar terms
    def vec_u(self, joint, category, link, coef, angle, offset, variable, symbol):
        self.add("reaction_x", joint, category, link, coef, "cos", angle, offset, variable, symbol + " [u_x]")
        self.add("reaction_y", joint, category, link, coef, "sin", angle, offset, variable, symbol + " [u_y]")

    def vec_w(self, joint, category, link, coef, angle, offset, variable, symbol):
        self.add("reaction_x", joint, category, link, -coef, "sin", angle, offset, variable, symbol + " [w_x]")
        self.add("reaction_y", joint, category, link, coef, "cos", angle, offset, variable, symbol + " [w_y]")


def _angle(*pairs, **_):
    """_angle(('t', 3, 1), ('t', 1, -1)) -> {('t',3): 1, ('t',1): -1} (summing repeats)."""
    out: dict = {}
    for kind, i, c in pairs:
        out[(kind, i)] = out.get((kind, i), 0.0) + c
    return out


def _fmt_angle(*parts: str) -> str:
    s = " + ".join(p for p in parts if p)
    return s.replace("+ -", "- ")


def _torque_terms_distal(chain: PlanarChain) -> list[Term]:
    """Eq 23 (with Eq 13 as its case k* = n), every sum written out."""
    n = chain.n
    L = chain.links
    g = chain.gravity
    l = [k.length for k in L]
    m = [k.mass for k in L]
    lC = [k.com_distance for k in L]
    eC = [k.com_angle for k in L]
    lR = [k.contact_distance for k in L]
    eR = [k.contact_angle for k in L]
    IJ = [k.inertia_joint for k in L]
    b = _Builder(chain, "23" if n > 1 else "13")
    for ks in range(1, n + 1):
        eq = "13" if ks == n else "23"
        b.eq = eq
        # (a) sum_{k=k*}^{n} [m_k g l_Ck cos(theta_k + eps_Ck) - R_k l_Rk sin(gamma_Rk - eps_Rk)]
        for k in range(ks, n + 1):
            b.add("torque", ks, "weight", k, m[k] * g * lC[k], "cos", _angle(("t", k, 1)), eC[k], "one",
                  f"m{k} g l_C{k} cos(θ{k} + ε_C{k})")
            b.add("torque", ks, "contact", k, -lR[k], "sin", _angle(("g", k, 1)), -eR[k], "R",
                  f"-R{k} l_R{k} sin(γ_R{k} - ε_R{k})")
        # (b) sum_{k=k*}^{n-1} sum_{i=k+1}^{n} [m_i g l_k cos theta_k - R_i l_k sin(gamma_Ri + theta_i - theta_k)]
        for k in range(ks, n):
            for i in range(k + 1, n + 1):
                b.add("torque", ks, "weight", i, m[i] * g * l[k], "cos", _angle(("t", k, 1)), 0.0, "one",
                      f"m{i} g l{k} cos θ{k}")
                b.add("torque", ks, "contact", i, -l[k], "sin", _angle(("g", i, 1), ("t", i, 1), ("t", k, -1)), 0.0,
                      "R", f"-R{i} l{k} sin(γ_R{i} + θ{i} - θ{k})")
        # (c) sum_{k=k*}^{n} m_k l_Ck sum_{i=0}^{k-1} l_i [thdd_i cos(theta_k + eps_Ck - theta_i) + thd_i^2 sin(...)]
        for k in range(ks, n + 1):
            for i in range(0, k):
                ang = _angle(("t", k, 1), ("t", i, -1))
                a = f"θ{k} + ε_C{k} - θ{i}"
                b.add("torque", ks, "inertia_acc", i, m[k] * lC[k] * l[i], "cos", ang, eC[k], "thdd",
                      f"m{k} l_C{k} l{i} θ̈{i} cos({a})")
                b.add("torque", ks, "inertia_vel", i, m[k] * lC[k] * l[i], "sin", ang, eC[k], "thd2",
                      f"m{k} l_C{k} l{i} θ̇{i}² sin({a})")
        # (d) sum_{k=k*}^{n-1} l_k (sum_{j=k+1}^{n} m_j) sum_{i=0}^{k-1} l_i [thdd_i cos(theta_k - theta_i) + thd_i^2 sin(.)]
        for k in range(ks, n):
            for j in range(k + 1, n + 1):
                for i in range(0, k):
                    ang = _angle(("t", k, 1), ("t", i, -1))
                    b.add("torque", ks, "inertia_acc", i, l[k] * m[j] * l[i], "cos", ang, 0.0, "thdd",
                          f"l{k} m{j} l{i} θ̈{i} cos(θ{k} - θ{i})")
                    b.add("torque", ks, "inertia_vel", i, l[k] * m[j] * l[i], "sin", ang, 0.0, "thd2",
                          f"l{k} m{j} l{i} θ̇{i}² sin(θ{k} - θ{i})")
        # (e) sum_{k=k*}^{n-1} (I_Jk + sum_{j=k+1}^{n} m_j l_k^2) thdd_k + I_Jn thdd_n
        for k in range(ks, n + 1):
            b.add("torque", ks, "inertia_acc", k, IJ[k], "cos", {}, 0.0, "thdd", f"I_J{k} θ̈{k}")
            if k < n:
                for j in range(k + 1, n + 1):
                    b.add("torque", ks, "inertia_acc", k, m[j] * l[k] ** 2, "cos", {}, 0.0, "thdd",
                          f"m{j} l{k}² θ̈{k}")
        # (f) sum_{k=k*}^{n-1} (1 - delta_{k,n-1}) l_k sum_{i=k+1}^{n-1} (sum_{j=i+1}^{n} m_j) l_i
        #     [thdd_i cos(theta_i - theta_k) - thd_i^2 sin(theta_i - theta_k)]
        for k in range(ks, n - 1):
            for i in range(k + 1, n):
                for j in range(i + 1, n + 1):
                    ang = _angle(("t", i, 1), ("t", k, -1))
                    b.add("torque", ks, "inertia_acc", i, l[k] * m[j] * l[i], "cos", ang, 0.0, "thdd",
                          f"l{k} m{j} l{i} θ̈{i} cos(θ{i} - θ{k})")
                    b.add("torque", ks, "inertia_vel", i, -l[k] * m[j] * l[i], "sin", ang, 0.0, "thd2",
                          f"-l{k} m{j} l{i} θ̇{i}² sin(θ{i} - θ{k})")
        # (g) sum_{k=k*}^{n-1} l_k sum_{i=k+1}^{n} m_i l_Ci [thdd_i cos(theta_i + eps_Ci - theta_k) - thd_i^2 sin(.)]
        for k in range(ks, n):
            for i in range(k + 1, n + 1):
                ang = _angle(("t", i, 1), ("t", k, -1))
                a = f"θ{i} + ε_C{i} - θ{k}"
                b.add("torque", ks, "inertia_acc", i, l[k] * m[i] * lC[i], "cos", ang, eC[i], "thdd",
                      f"l{k} m{i} l_C{i} θ̈{i} cos({a})")
                b.add("torque", ks, "inertia_vel", i, -l[k] * m[i] * lC[i], "sin", ang, eC[i], "thd2",
                      f"-l{k} m{i} l_C{i} θ̇{i}² sin({a})")
    return b.terms


def _torque_terms_proximal(chain: PlanarChain) -> list[Term]:
    """Eq 24 (Eq 13 for k* = n is the same in both data sets), every sum written out."""
    n = chain.n
    L = chain.links
    g = chain.gravity
    l = [k.length for k in L]
    m = [k.mass for k in L]
    lC = [k.com_distance for k in L]
    eC = [k.com_angle for k in L]
    lR = [k.contact_distance for k in L]
    eR = [k.contact_angle for k in L]
    IJ = [k.inertia_joint for k in L]
    b = _Builder(chain, "24")
    for ks in range(1, n + 1):
        b.eq = "13" if ks == n else "24"
        # (a) as Eq 23
        for k in range(ks, n + 1):
            b.add("torque", ks, "weight", k, m[k] * g * lC[k], "cos", _angle(("t", k, 1)), eC[k], "one",
                  f"m{k} g l_C{k} cos(θ{k} + ε_C{k})")
            b.add("torque", ks, "contact", k, -lR[k], "sin", _angle(("g", k, 1)), -eR[k], "R",
                  f"-R{k} l_R{k} sin(γ_R{k} - ε_R{k})")
        # (b) - sum_{k=k*}^{n-1} sum_{i=0}^{k} [m_i g l_k cos theta_k - R_i l_k sin(gamma_Ri + theta_i - theta_k)]
        for k in range(ks, n):
            for i in range(0, k + 1):
                b.add("torque", ks, "weight", i, -m[i] * g * l[k], "cos", _angle(("t", k, 1)), 0.0, "one",
                      f"-m{i} g l{k} cos θ{k}")
                b.add("torque", ks, "contact", i, l[k], "sin", _angle(("g", i, 1), ("t", i, 1), ("t", k, -1)), 0.0,
                      "R", f"R{i} l{k} sin(γ_R{i} + θ{i} - θ{k})")
        # (c) as Eq 23
        for k in range(ks, n + 1):
            for i in range(0, k):
                ang = _angle(("t", k, 1), ("t", i, -1))
                a = f"θ{k} + ε_C{k} - θ{i}"
                b.add("torque", ks, "inertia_acc", i, m[k] * lC[k] * l[i], "cos", ang, eC[k], "thdd",
                      f"m{k} l_C{k} l{i} θ̈{i} cos({a})")
                b.add("torque", ks, "inertia_vel", i, m[k] * lC[k] * l[i], "sin", ang, eC[k], "thd2",
                      f"m{k} l_C{k} l{i} θ̇{i}² sin({a})")
        # (d) - sum_{k=k*}^{n-1} l_k sum_{i=0}^{k-1} (sum_{j=i+1}^{k} m_j) l_i [thdd_i cos(theta_k - theta_i) + thd_i^2 sin(.)]
        for k in range(ks, n):
            for i in range(0, k):
                for j in range(i + 1, k + 1):
                    ang = _angle(("t", k, 1), ("t", i, -1))
                    b.add("torque", ks, "inertia_acc", i, -l[k] * m[j] * l[i], "cos", ang, 0.0, "thdd",
                          f"-l{k} m{j} l{i} θ̈{i} cos(θ{k} - θ{i})")
                    b.add("torque", ks, "inertia_vel", i, -l[k] * m[j] * l[i], "sin", ang, 0.0, "thd2",
                          f"-l{k} m{j} l{i} θ̇{i}² sin(θ{k} - θ{i})")
        # (e) + sum_{k=k*}^{n} I_Jk thdd_k
        for k in range(ks, n + 1):
            b.add("torque", ks, "inertia_acc", k, IJ[k], "cos", {}, 0.0, "thdd", f"I_J{k} θ̈{k}")
        # (f) - sum_{k=k*}^{n-1} l_k sum_{i=1}^{k} m_i l_Ci [thdd_i cos(theta_k - theta_i - eps_Ci) + thd_i^2 sin(.)]
        for k in range(ks, n):
            for i in range(1, k + 1):
                ang = _angle(("t", k, 1), ("t", i, -1))
                a = f"θ{k} - θ{i} - ε_C{i}"
                b.add("torque", ks, "inertia_acc", i, -l[k] * m[i] * lC[i], "cos", ang, -eC[i], "thdd",
                      f"-l{k} m{i} l_C{i} θ̈{i} cos({a})")
                b.add("torque", ks, "inertia_vel", i, -l[k] * m[i] * lC[i], "sin", ang, -eC[i], "thd2",
                      f"-l{k} m{i} l_C{i} θ̇{i}² sin({a})")
    return b.terms


def _reaction_terms_distal(chain: PlanarChain) -> list[Term]:
    """Eq 9 (Eq 8 second line for k = 0, Eq 11 first line for k = n-1), muscles excluded (Eq 12)."""
    n = chain.n
    L = chain.links
    g = chain.gravity
    l = [k.length for k in L]
    m = [k.mass for k in L]
    lC = [k.com_distance for k in L]
    eC = [k.com_angle for k in L]
    b = _Builder(chain, "9")
    for k in range(0, n):
        J = k + 1
        b.eq = "8" if k == 0 else ("11" if k == n - 1 else "9")
        for i in range(k + 1, n + 1):
            # m_i g (vector (0, -m_i g)); R_i u(theta_i + gamma_i)
            b.add("reaction_y", J, "weight", i, -m[i] * g, "cos", {}, 0.0, "one", f"-m{i} g")
            b.vec_u(J, "contact", i, 1.0, _angle(("t", i, 1), ("g", i, 1)), 0.0, "R", f"R{i} u(θ{i} + γ_R{i})")
        # -(sum_{j=k+1}^n m_j) sum_{i=0}^{k} (thdd_i l_i w_i - thd_i^2 l_i u_i)
        for j in range(k + 1, n + 1):
            for i in range(0, k + 1):
                b.vec_w(J, "inertia_acc", i, -m[j] * l[i], _angle(("t", i, 1)), 0.0, "thdd", f"-m{j} l{i} θ̈{i} w{i}")
                b.vec_u(J, "inertia_vel", i, m[j] * l[i], _angle(("t", i, 1)), 0.0, "thd2", f"m{j} l{i} θ̇{i}² u{i}")
        # -(1 - delta_{k,n-1}) sum_{i=k+1}^{n-1} (sum_{j=i+1}^n m_j) (thdd_i l_i w_i - thd_i^2 l_i u_i)
        for i in range(k + 1, n):
            for j in range(i + 1, n + 1):
                b.vec_w(J, "inertia_acc", i, -m[j] * l[i], _angle(("t", i, 1)), 0.0, "thdd", f"-m{j} l{i} θ̈{i} w{i}")
                b.vec_u(J, "inertia_vel", i, m[j] * l[i], _angle(("t", i, 1)), 0.0, "thd2", f"m{j} l{i} θ̇{i}² u{i}")
        # - sum_{i=k+1}^{n} m_i (thdd_i l_Ci w_Ci - thd_i^2 l_Ci u_Ci)
        for i in range(k + 1, n + 1):
            b.vec_w(J, "inertia_acc", i, -m[i] * lC[i], _angle(("t", i, 1)), eC[i], "thdd",
                    f"-m{i} l_C{i} θ̈{i} w_C{i}")
            b.vec_u(J, "inertia_vel", i, m[i] * lC[i], _angle(("t", i, 1)), eC[i], "thd2",
                    f"m{i} l_C{i} θ̇{i}² u_C{i}")
    return b.terms


def _reaction_terms_proximal(chain: PlanarChain) -> list[Term]:
    """Eq 10 (Eq 8 first line for k = 0, Eq 11 second line for k = n-1), muscles excluded (Eq 12)."""
    n = chain.n
    L = chain.links
    g = chain.gravity
    l = [k.length for k in L]
    m = [k.mass for k in L]
    lC = [k.com_distance for k in L]
    eC = [k.com_angle for k in L]
    b = _Builder(chain, "10")
    for k in range(0, n):
        J = k + 1
        b.eq = "8" if k == 0 else ("11" if k == n - 1 else "10")
        for i in range(0, k + 1):
            b.add("reaction_y", J, "weight", i, m[i] * g, "cos", {}, 0.0, "one", f"m{i} g")
            b.vec_u(J, "contact", i, -1.0, _angle(("t", i, 1), ("g", i, 1)), 0.0, "R", f"-R{i} u(θ{i} + γ_R{i})")
        # + sum_{i=0}^{k-1} (sum_{j=i+1}^{k} m_j)(thdd_i l_i w_i - thd_i^2 l_i u_i)
        for i in range(0, k):
            for j in range(i + 1, k + 1):
                b.vec_w(J, "inertia_acc", i, m[j] * l[i], _angle(("t", i, 1)), 0.0, "thdd", f"m{j} l{i} θ̈{i} w{i}")
                b.vec_u(J, "inertia_vel", i, -m[j] * l[i], _angle(("t", i, 1)), 0.0, "thd2",
                        f"-m{j} l{i} θ̇{i}² u{i}")
        # + sum_{i=1}^{k} m_i (thdd_i l_Ci w_Ci - thd_i^2 l_Ci u_Ci)
        for i in range(1, k + 1):
            b.vec_w(J, "inertia_acc", i, m[i] * lC[i], _angle(("t", i, 1)), eC[i], "thdd", f"m{i} l_C{i} θ̈{i} w_C{i}")
            b.vec_u(J, "inertia_vel", i, -m[i] * lC[i], _angle(("t", i, 1)), eC[i], "thd2",
                    f"-m{i} l_C{i} θ̇{i}² u_C{i}")
    return b.terms


def _check_data_set(data_set: str) -> str:
    if data_set not in DATA_SETS:
        raise ValueError(f"data_set must be one of {DATA_SETS} (Eq 9/23: 'distal', Eq 10/24: 'proximal'), got {data_set!r}")
    return data_set


def torque_terms(chain: PlanarChain, data_set: str = "distal") -> list[Term]:
    """Terms of ``tau_k`` for k = 1..n: Eq 23 (``"distal"``) or Eq 24 (``"proximal"``); Eq 13 for k = n."""
    return list(compiled_terms(chain, "torque", _check_data_set(data_set)).terms)


def reaction_terms(chain: PlanarChain, data_set: str = "distal") -> list[Term]:
    """Terms of ``phi_{k,k+1}`` for joints 1..n: Eq 9 (``"distal"``) or Eq 10 (``"proximal"``), muscles excluded."""
    return list(compiled_terms(chain, "reaction", _check_data_set(data_set)).terms)


# ----------------------------------------------------------------------------- compiled evaluation
@dataclass(frozen=True)
class CompiledTerms:
    """Terms as arrays for batched evaluation (built once per chain and data set)."""

    terms: tuple[Term, ...]
    coef: np.ndarray  # (T,)
    is_cos: np.ndarray  # (T,) bool
    A: np.ndarray  # (T, n+1) theta coefficients
    B: np.ndarray  # (T, n+1) gamma coefficients
    offset: np.ndarray  # (T,)
    var_index: np.ndarray  # (T,) column of the variable matrix [1, thdd_0..n, thd2_0..n, R_0..n]
    joint: np.ndarray  # (T,) 1..n
    component: np.ndarray  # (T,) 0 torque, 1 reaction_x, 2 reaction_y
    category: np.ndarray  # (T,) index into CATEGORY_CODES
    link: np.ndarray  # (T,)

    def values(self, theta_all, dtheta_all, ddtheta_all, R, gamma) -> np.ndarray:
        """Value of every term for every state, (N, T)."""
        # sin x = cos(x - pi/2): one trigonometric evaluation per term
        ang = theta_all @ self.A.T + gamma @ self.B.T + (self.offset - np.where(self.is_cos, 0.0, np.pi / 2))[None, :]
        N = theta_all.shape[0]
        V = np.concatenate([np.ones((N, 1)), ddtheta_all, dtheta_all**2, R], axis=1)
        return self.coef[None, :] * np.cos(ang) * V[:, self.var_index]

    def grouped(self, G: np.ndarray, theta_all, dtheta_all, ddtheta_all, R, gamma,
                chunk_elements: int = 2_000_000) -> np.ndarray:
        """``values(...) @ G`` for (T, K) group matrix G, by chunks of states to bound the memory, (N, K)."""
        N = theta_all.shape[0]
        step = max(1, chunk_elements // max(len(self.terms), 1))
        out = np.empty((N, G.shape[1]))
        for s in range(0, N, step):  # chunks of states, each evaluated as one array expression
            sl = slice(s, s + step)
            out[sl] = self.values(theta_all[sl], dtheta_all[sl], ddtheta_all[sl], R[sl], gamma[sl]) @ G
        return out


def _compile(chain: PlanarChain, terms: list[Term]) -> CompiledTerms:
    n1 = chain.n + 1
    T = len(terms)
    A = np.zeros((T, n1))
    B = np.zeros((T, n1))
    var_index = np.zeros(T, dtype=int)
    base = {"one": 0, "thdd": 1, "thd2": 1 + n1, "R": 1 + 2 * n1}
    for t, term in enumerate(terms):
        for i, c in term.theta_coeffs:
            A[t, i] += c
        for i, c in term.gamma_coeffs:
            B[t, i] += c
        var_index[t] = 0 if term.variable == "one" else base[term.variable] + term.link
    arrs = dict(coef=np.array([t.coef for t in terms]), is_cos=np.array([t.trig == "cos" for t in terms], dtype=bool),
                A=A, B=B, offset=np.array([t.offset for t in terms]), var_index=var_index,
                joint=np.array([t.joint for t in terms], dtype=int),
                component=np.array([_COMPONENT[t.quantity] for t in terms], dtype=int),
                category=np.array([CATEGORY_CODES.index(t.category) for t in terms], dtype=int),
                link=np.array([t.link for t in terms], dtype=int))
    for v in arrs.values():
        v.setflags(write=False)
    return CompiledTerms(tuple(terms), **arrs)


@lru_cache(maxsize=64)
def compiled_terms(chain: PlanarChain, kind: str, data_set: str) -> CompiledTerms:
    """Cached compiled terms; ``kind`` is ``"torque"`` or ``"reaction"``."""
    builders = {
        ("torque", "distal"): _torque_terms_distal,
        ("torque", "proximal"): _torque_terms_proximal,
        ("reaction", "distal"): _reaction_terms_distal,
        ("reaction", "proximal"): _reaction_terms_proximal,
    }
    if (kind, data_set) not in builders:
        raise ValueError(f"unknown term set {kind!r}/{data_set!r}")
    return _compile(chain, builders[(kind, data_set)](chain))


def evaluate_terms(chain: PlanarChain, kind: str, data_set: str, theta, dtheta=None, ddtheta=None, R=None,
                   gamma_R=None) -> tuple[CompiledTerms, np.ndarray]:
    """Compiled terms and their values (N, T) at a batch of states."""
    st = as_state(chain, theta, dtheta, ddtheta)
    _, Rm, gm = as_loads(chain, st.N, None, R, gamma_R)
    ct = compiled_terms(chain, kind, _check_data_set(data_set))
    return ct, ct.values(st.theta, st.dtheta, st.ddtheta, Rm, gm)


def _group_matrix(ct: CompiledTerms, n: int, kind: str) -> np.ndarray:
    """Incidence matrix term -> joint (torque) or term -> (joint, component) (reactions)."""
    T = len(ct.terms)
    if kind == "torque":
        G = np.zeros((T, n))
        G[np.arange(T), ct.joint - 1] = 1.0
        return G
    G = np.zeros((T, n * 2))
    G[np.arange(T), (ct.joint - 1) * 2 + (ct.component - 1)] = 1.0
    return G


def joint_torques(chain: PlanarChain, theta, dtheta, ddtheta, R=None, gamma_R=None, data_set: str = "distal"):
    """Joint torques ``tau_k`` (k = 1..n), shape (N, n).

    ``data_set="distal"``: Eq 23 (weights and contacts of links k..n, motion of
    all links); ``"proximal"``: Eq 24 (weights and contacts of links 0..k,
    ``R_0`` included — it must satisfy Eq 4 for the two to agree, see
    :func:`~osim_emb.seeds.planar.chain.with_base_equilibrium`).  ``tau_n`` is Eq 13.

    ``tau_k`` is the moment about ``J_k`` that the muscles spanning joint ``k``
    must exert on the distal links (Eq 22); it equals the net joint moment of
    inverse dynamics.  ``R``, ``gamma_R``: (N, n+1) contact magnitudes and
    angles from ``u_i`` (None: no contact).
    """
    st = as_state(chain, theta, dtheta, ddtheta)
    _, Rm, gm = as_loads(chain, st.N, None, R, gamma_R)
    ct = compiled_terms(chain, "torque", _check_data_set(data_set))
    tau = ct.grouped(_group_matrix(ct, chain.n, "torque"), st.theta, st.dtheta, st.ddtheta, Rm, gm)
    return _out(tau, st.single)


def joint_reactions(chain: PlanarChain, theta, dtheta, ddtheta, tension=None, R=None, gamma_R=None,
                    data_set: str = "distal"):
    """Joint reaction forces, shape (N, n, 2): column ``k-1`` is ``phi_{k-1,k}`` at joint ``J_k``.

    ``phi_{k-1,k}`` is the force exerted on link ``k-1`` by link ``k`` (its
    opposite acts on link ``k``).  ``data_set="distal"``: Eq 9 (Eq 8 for joint
    1, Eq 11 for joint n); ``"proximal"``: Eq 10 (needs ``R_0`` from Eq 4).
    The muscles enter through Eq 12 (all muscles spanning the joint, whatever
    their attachments).
    """
    st = as_state(chain, theta, dtheta, ddtheta)
    T, Rm, gm = as_loads(chain, st.N, tension, R, gamma_R)
    ct = compiled_terms(chain, "reaction", _check_data_set(data_set))
    phi = ct.grouped(_group_matrix(ct, chain.n, "reaction"), st.theta, st.dtheta, st.ddtheta, Rm, gm)
    phi = phi.reshape(st.N, chain.n, 2)
    phi = phi + spanning_muscle_force(chain, st.theta[:, 1:], T)
    return _out(phi, st.single)


# ----------------------------------------------------------------------------- symbolic structure
def term_table(chain: PlanarChain, kind: str = "torque", data_set: str = "distal") -> pd.DataFrame:
    """The closed-form terms as a table: equation, quantity, joint, category, link, symbol, coefficient."""
    ct = compiled_terms(chain, kind, _check_data_set(data_set))
    return pd.DataFrame(
        {
            "equation": [t.equation for t in ct.terms],
            "quantity": [t.quantity for t in ct.terms],
            "joint": [t.joint for t in ct.terms],
            "category": [t.category for t in ct.terms],
            "link": [t.link for t in ct.terms],
            "variable": [t.variable for t in ct.terms],
            "symbol": [t.symbol for t in ct.terms],
            "coefficient": ct.coef,
        }
    )


def count_inertial_terms(chain: PlanarChain, data_set: str = "distal") -> dict[int, int]:
    """Number of inertial monomials (``thdd`` and ``thd^2`` terms) in ``tau_k``, per joint k.

    Appendix A counts 3 and 7 for ``tau_2``, ``tau_1`` (n = 2) and 5, 13, 22 for
    ``tau_3``, ``tau_2``, ``tau_1`` (n = 3) with Eqs 13 and 23: each product of
    a mass or ``I_J`` with lengths, a trigonometric factor and one kinematic
    variable is one term, sums of masses written out.
    """
    tab = term_table(chain, "torque", data_set)
    tab = tab[tab["category"].isin(INERTIAL)]
    counts = tab.groupby("joint").size()
    return {k: int(counts.get(k, 0)) for k in range(1, chain.n + 1)}
