"""Shoulder rhythms as data: replace one-coordinate (SIMM) couplings by functions of several coordinates.

De Groot & Brand (2001) give the clavicle and scapula orientations as linear
functions of *both* the humerus plane of elevation Hy and its elevation Hz
(angles in degrees, thorax frame; C0, S0 rest orientations):

    clavicle protraction   Cy = -4.983 + 0.120 Hy - 0.242 Hz + 0.851 C0y
    clavicle elevation     Cz =  3.917 - 0.046 Hy + 0.123 Hz + 0.493 C0z
    scapula protraction    Sy = -1.203 + 0.140 Hy - 0.049 Hz + 0.901 S0y
    scapula lateral rot.   Sz =  3.095 - 0.079 Hy + 0.396 Hz + 0.414 S0z
    scapula tilt           Sx =  0.659 - 0.028 Hy + 0.184 Hz + 0.886 S0x

The Holzbaur et al. (2005) model, built in SIMM (one coordinate per joint
function), keeps only the Hz slopes, as straight-line couplers in
``shoulder_elv`` through zero at the rest posture (seed section 4-4 A).
Mapping onto the Holzbaur coordinates (see docs/rhythm.md):

    Hy -> elv_angle, Hz -> shoulder_elv (both rad; deg/deg slopes are rad/rad)
    Cy -> sternoclavicular_r2   Cz -> sternoclavicular_r3
    Sx -> acromioclavicular_r1  Sy -> acromioclavicular_r2  Sz -> acromioclavicular_r3
    mirrors (opposite sign): unrotscap_r2/r3 of the clavicle's, unrothum_r1/r2/r3 of the scapula's

The sign of the Hz slopes of the model's couplers equals the regression's for
all five angles, so the coordinates carry the regression's sign convention;
the Hy slopes are taken with the same convention.  The constants (intercept
and rest orientation) are absorbed in the model's rest posture: every coupler
is zero at elv_angle = shoulder_elv = 0, as in the original model.

A :class:`Rhythm` is data: a tuple of :class:`RhythmTerm`, each giving one
dependent coordinate as a function of the rhythm's input coordinates (linear,
polynomial or a spline surface), either replacing the model's coupler or
added to it, with the mirrored couplings kept consistent.  Users supply their
own as a CSV table (linear terms; intercepts in radians, mirrors required) or JSON (any function).

:func:`osim_emb.rhythm.fit.fit` fits a rhythm to measured kinematics as polynomial surfaces
whose every term carries the elevation, so that the girdle does not move with elv_angle at
shoulder_elv = 0; a fitted rhythm carries the ``domain`` of its data, and evaluating or applying it
outside warns or refuses (``outside=``).  Built-in ``spartacus2024`` is such a fit to the Spartacus
dataset (validation/shoulder_rhythm/fitted_rhythm.py).
"""

from __future__ import annotations

import copy
import csv
import json
import logging
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from osim_emb.core import functions as fn
from osim_emb.core.functions.base import JointFunction, function_from_dict
from osim_emb.model import Model

__all__ = ["RhythmTerm", "Rhythm", "apply", "apply_to_document", "builtin_rhythm", "BUILTIN_RHYTHMS",
           "load_rhythm", "linear_coefficients", "pole_motion", "as_polynomial", "RhythmDomainWarning"]

log = logging.getLogger(__name__)

#: de Groot & Brand (2001) slopes (deg/deg) mapped onto the Holzbaur coordinates: (Hy slope, Hz slope).
DEGROOT_2001 = {
    "sternoclavicular_r2": (0.120, -0.242),   # clavicle protraction Cy
    "sternoclavicular_r3": (-0.046, 0.123),   # clavicle elevation Cz
    "acromioclavicular_r1": (-0.028, 0.184),  # scapula tilt Sx
    "acromioclavicular_r2": (0.140, -0.049),  # scapula protraction Sy
    "acromioclavicular_r3": (-0.079, 0.396),  # scapula lateral rotation Sz
}
HOLZBAUR_MIRRORS = {
    "sternoclavicular_r2": ("unrotscap_r2",),
    "sternoclavicular_r3": ("unrotscap_r3",),
    "acromioclavicular_r1": ("unrothum_r1",),
    "acromioclavicular_r2": ("unrothum_r2",),
    "acromioclavicular_r3": ("unrothum_r3",),
}
REFERENCE = ("de Groot JH, Brand R (2001) A three-dimensional regression model of the shoulder rhythm. "
             "Clin Biomech 16:735-743")


class RhythmError(ValueError):
    """A rhythm that does not fit the model (unknown coordinate, no coupler to replace, ...)."""


class RhythmDomainWarning(UserWarning):
    """A rhythm evaluated outside the domain of the data it was fitted to."""


@dataclass(frozen=True)
class RhythmTerm:
    """One dependent coordinate as a function of the rhythm's inputs.

    ``mode`` "replace": the coupler becomes ``function(inputs)``; "add": the
    coupler becomes its old function plus ``function(inputs)``.  Each mirror
    coordinate gets the negative of the dependent's new function.
    """

    dependent: str
    function: JointFunction
    mirrors: tuple[str, ...] = ()
    mode: str = "replace"

    def __post_init__(self):
        if self.mode not in ("replace", "add"):
            raise RhythmError(f"rhythm term for {self.dependent!r}: mode must be 'replace' or 'add'")


@dataclass(frozen=True)
class Rhythm:
    """A shoulder (or any) rhythm: dependent coordinates as functions of ``inputs``."""

    name: str
    inputs: tuple[str, ...]
    terms: tuple[RhythmTerm, ...]
    description: str = ""
    reference: str = ""
    #: input -> (low, high) in the input's unit (rad): the range of the data (empty: no limits known).
    domain: dict = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "terms", tuple(self.terms))
        object.__setattr__(self, "domain", {k: (float(v[0]), float(v[1])) for k, v in dict(self.domain).items()})
        for k in self.domain:
            if k not in self.inputs:
                raise RhythmError(f"rhythm {self.name!r}: domain names {k!r}, which is not an input {self.inputs}")
        for t in self.terms:
            if t.function.n_inputs != len(self.inputs):
                raise RhythmError(f"rhythm {self.name!r}: the function of {t.dependent!r} takes "
                                  f"{t.function.n_inputs} inputs, the rhythm has {len(self.inputs)}")

    def outside_domain(self, values) -> np.ndarray:
        """Boolean mask of the rows of ``values`` (N, n_inputs), in the inputs' order, outside the domain."""
        x = np.atleast_2d(np.asarray(values, dtype=float))
        out = np.zeros(len(x), dtype=bool)
        for k, name in enumerate(self.inputs):
            if name in self.domain:
                lo, hi = self.domain[name]
                out |= (x[:, k] < lo - 1e-12) | (x[:, k] > hi + 1e-12)
        return out

    def check_domain(self, values, outside: str = "warn", what: str = "") -> None:
        """Warn (``outside="warn"``), raise (``"error"``) or pass (``"ignore"``) when values leave the domain."""
        if outside not in ("warn", "error", "ignore"):
            raise ValueError(f"outside must be 'warn', 'error' or 'ignore', got {outside!r}")
        if outside == "ignore" or not self.domain:
            return
        bad = self.outside_domain(values)
        if bad.any():
            x = np.atleast_2d(np.asarray(values, dtype=float))[bad][0]
            dom = ", ".join(f"{k} [{np.degrees(a):.1f}, {np.degrees(b):.1f}] deg" for k, (a, b) in self.domain.items())
            msg = (f"rhythm {self.name!r}{' ' + what if what else ''}: {int(bad.sum())} point(s) outside the domain of "
                   f"its data ({dom}), e.g. {', '.join(f'{n} = {np.degrees(v):.1f} deg' for n, v in zip(self.inputs, x))}")
            if outside == "error":
                raise RhythmError(msg)
            warnings.warn(msg, RhythmDomainWarning, stacklevel=3)

    def evaluate(self, values, outside: str = "warn") -> dict[str, np.ndarray]:
        """Each term's function (rad) at ``values`` (N, n_inputs) of the inputs (rad), domain checked."""
        x = np.atleast_2d(np.asarray(values, dtype=float))
        self.check_domain(x, outside)
        return {t.dependent: t.function.evaluate(x).value for t in self.terms}

    def with_zero_slopes(self, coordinate: str) -> "Rhythm":
        """The same rhythm with every linear coefficient of ``coordinate`` set to zero."""
        k = self.inputs.index(coordinate)
        terms = []
        for t in self.terms:
            if not isinstance(t.function, fn.Linear):
                raise RhythmError(f"{t.dependent!r}: only linear terms can have a slope set to zero")
            a = t.function.coefficients.copy()
            a[k] = 0.0
            terms.append(RhythmTerm(t.dependent, fn.Linear(a, t.function.intercept), t.mirrors, t.mode))
        return Rhythm(f"{self.name} without {coordinate}", self.inputs, tuple(terms), self.description, self.reference)

    # -- files ----------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"name": self.name, "inputs": list(self.inputs), "description": self.description,
                "reference": self.reference, "domain": {k: list(v) for k, v in self.domain.items()},
                "terms": [{"dependent": t.dependent, "function": t.function.to_dict(), "mirrors": list(t.mirrors),
                           "mode": t.mode} for t in self.terms]}

    @classmethod
    def from_dict(cls, d: dict) -> "Rhythm":
        return cls(d["name"], tuple(d["inputs"]),
                   tuple(RhythmTerm(t["dependent"], function_from_dict(t["function"]), tuple(t.get("mirrors", ())),
                                    t.get("mode", "replace")) for t in d["terms"]),
                   d.get("description", ""), d.get("reference", ""), d.get("domain", {}))

    def to_table(self) -> str:
        """CSV with one row per term: dependent, mirrors, mode, one slope column per input, intercept."""
        rows = [["dependent", "mirrors", "mode", *self.inputs, "intercept"]]
        for t in self.terms:
            if not isinstance(t.function, fn.Linear):
                raise RhythmError("only linear rhythms can be written as a table; use JSON")
            rows.append([t.dependent, " ".join(t.mirrors), t.mode, *(repr(float(c)) for c in t.function.coefficients),
                         repr(t.function.intercept)])
        return "\n".join(",".join(r) for r in rows) + "\n"


def _read_table(path: Path) -> Rhythm:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.reader(fh) if r and not r[0].startswith("#")]
    head = [h.strip() for h in rows[0]]
    for need in ("dependent", "intercept"):
        if need not in head:
            raise RhythmError(f"{path}: the header needs a {need!r} column (got {head})")
    fixed = {"dependent", "mirrors", "mode", "intercept"}
    inputs = tuple(h for h in head if h not in fixed)
    if not inputs:
        raise RhythmError(f"{path}: no input-coordinate columns")
    terms = []
    for n, r in enumerate(rows[1:], start=2):
        d = dict(zip(head, (c.strip() for c in r)))
        if "mirrors" not in head or not d.get("mirrors"):
            raise RhythmError(f"{path}, line {n}: the term for {d.get('dependent')!r} names no mirror coordinate; "
                              "give the coordinates that undo it (e.g. unrotscap_r2 for sternoclavicular_r2) "
                              "or write 'none' in the mirrors column")
        try:
            coef = [float(d[c]) for c in inputs]
            b = float(d["intercept"])
        except (KeyError, ValueError) as err:
            raise RhythmError(f"{path}, line {n}: bad number ({err})") from None
        if not np.isfinite(b) or abs(b) > np.pi:
            raise RhythmError(f"{path}, line {n}, column 'intercept': the intercept of {d['dependent']!r} is {b:g}, "
                              f"more than half a turn: intercepts are in radians (of the dependent coordinate; "
                              f"metres if translational), not degrees: {b:g} deg would be {np.radians(b):.6g} rad")
        mirrors = () if d["mirrors"].lower() == "none" else tuple(d["mirrors"].split())
        terms.append(RhythmTerm(d["dependent"], fn.Linear(coef, b), mirrors,
                                d.get("mode", "replace") or "replace"))
    return Rhythm(path.stem, inputs, tuple(terms), f"read from {path.name}")


def load_rhythm(source: str | Path) -> Rhythm:
    """A built-in rhythm by name, or a rhythm file (.csv linear table, .json any function).

    Parameters
    ----------
    source : str or pathlib.Path
        A name from :data:`BUILTIN_RHYTHMS`, or a file: ``.json`` (``Rhythm.to_dict()``) or a CSV table of
        linear terms (slopes per radian of the inputs).

    Returns
    -------
    Rhythm

    Raises
    ------
    RhythmError
        Neither a built-in name nor a readable file (the message names file and line).

    Examples
    --------
    >>> import json, os, tempfile
    >>> import osim_emb as oe
    >>> oe.load_rhythm("holzbaur2005").inputs
    ('elv_angle', 'shoulder_elv')
    >>> path = os.path.join(tempfile.mkdtemp(), "mine.json")
    >>> with open(path, "w") as fh:
    ...     _ = fh.write(json.dumps(oe.builtin_rhythm("degroot2001").to_dict()))
    >>> [t.dependent for t in oe.load_rhythm(path).terms][:2]
    ['sternoclavicular_r2', 'sternoclavicular_r3']
    """
    if str(source) in BUILTIN_RHYTHMS:
        return builtin_rhythm(str(source))
    p = Path(source)
    if not p.is_file():
        raise RhythmError(f"no built-in rhythm or file named {source!r}; built-in: {', '.join(BUILTIN_RHYTHMS)}")
    if p.suffix.lower() == ".json":
        return Rhythm.from_dict(json.loads(p.read_text()))
    return _read_table(p)


def builtin_rhythm(name: str) -> Rhythm:
    """``degroot2001``: the model's elevation couplers plus de Groot & Brand's plane-of-elevation slopes;
    ``degroot2001-regression``: both slopes from the regression (replaces the elevation slopes too);
    ``holzbaur2005``: the Holzbaur model's elevation-only rhythm written as two-coordinate couplers;
    ``spartacus2024``: polynomial surfaces fitted to the Spartacus dataset (zero at shoulder_elv = 0 for every
    elv_angle; validation/shoulder_rhythm/fitted_rhythm.py).

    Parameters
    ----------
    name : str
        One of :data:`BUILTIN_RHYTHMS`.

    Returns
    -------
    Rhythm
        Dependent girdle coordinates (radians) as functions of ``inputs`` (elv_angle, shoulder_elv;
        radians).

    Examples
    --------
    >>> import osim_emb as oe
    >>> rhythm = oe.builtin_rhythm("degroot2001")
    >>> rhythm.inputs
    ('elv_angle', 'shoulder_elv')
    >>> [t.dependent for t in rhythm.terms]  # doctest: +NORMALIZE_WHITESPACE
    ['sternoclavicular_r2', 'sternoclavicular_r3', 'acromioclavicular_r1', 'acromioclavicular_r2',
     'acromioclavicular_r3']

    The slopes are de Groot & Brand's regression coefficients (degrees per degree):

    >>> rhythm.terms[0].function
    Linear(0.12*x1)
    """
    inputs = ("elv_angle", "shoulder_elv")
    if name == "degroot2001":
        terms = [RhythmTerm(d, fn.Linear([hy, 0.0], 0.0), HOLZBAUR_MIRRORS[d], "add")
                 for d, (hy, hz) in DEGROOT_2001.items()]
        desc = "Holzbaur's elevation (shoulder_elv) couplers plus the plane-of-elevation (elv_angle) slopes of de Groot & Brand"
    elif name == "degroot2001-regression":
        terms = [RhythmTerm(d, fn.Linear([hy, hz], 0.0), HOLZBAUR_MIRRORS[d], "replace")
                 for d, (hy, hz) in DEGROOT_2001.items()]
        desc = "both slopes of de Groot & Brand's regression, zero at the rest posture"
    elif name == "spartacus2024":
        data = Path(__file__).parents[1] / "data" / "rhythm" / "spartacus2024.json"
        if not data.is_file():
            raise RhythmError(f"built-in rhythm {name!r}: {data} is missing (run validation/shoulder_rhythm/fitted_rhythm.py)")
        return Rhythm.from_dict(json.loads(data.read_text()))
    elif name == "holzbaur2005":
        slopes = {"sternoclavicular_r2": -0.633555 / 2.61799, "sternoclavicular_r3": 0.322013 / 3.14159,
                  "acromioclavicular_r1": 0.466003 / 2.61799, "acromioclavicular_r2": -0.128282 / 2.61799,
                  "acromioclavicular_r3": 1.03673 / 2.61799}
        terms = [RhythmTerm(d, fn.Linear([0.0, s], 0.0), HOLZBAUR_MIRRORS[d], "replace") for d, s in slopes.items()]
        desc = "Holzbaur et al. (2005): elevation slopes only (the SIMM rhythm)"
    else:
        raise RhythmError(f"unknown rhythm {name!r}; built-in: {', '.join(BUILTIN_RHYTHMS)}")
    return Rhythm(name, inputs, tuple(terms), desc, REFERENCE)


BUILTIN_RHYTHMS = ("degroot2001", "degroot2001-regression", "holzbaur2005", "spartacus2024")


def linear_coefficients(f: JointFunction, lo: float = -1.0, hi: float = 1.0, tol: float = 1e-12):
    """(slopes, intercept) if ``f`` is affine (checked at sample points), else None."""
    if isinstance(f, fn.Linear):
        return f.coefficients.copy(), f.intercept
    k = f.n_inputs
    x = np.vstack([np.zeros(k), np.eye(k) * (hi - lo) * 0.5, np.random.default_rng(0).uniform(lo, hi, (8, k))])
    jet = f.evaluate(x, 2)
    if np.abs(jet.hessian).max() > tol or np.ptp(jet.gradient, axis=0).max() > tol * max(1.0, np.abs(jet.gradient).max()):
        return None
    a = jet.gradient[0]
    return a, float(jet.value[0] - x[0] @ a)


def _negated(f: JointFunction) -> JointFunction:
    if isinstance(f, fn.Linear):
        return fn.Linear(-f.coefficients, -f.intercept)
    if isinstance(f, fn.MultivariatePolynomial):
        return fn.MultivariatePolynomial(f.dimension, f.order, -f.coefficients)
    return fn.Multiplier(-1.0, f)


def apply_to_document(doc, rhythm: Rhythm):
    """A copy of an OsimDocument whose couplers follow ``rhythm`` (the input document is not changed)."""
    out = copy.deepcopy(doc)
    coords = {c.name for c in out.coordinates}
    for c in rhythm.inputs:
        if c not in coords:
            raise RhythmError(f"rhythm {rhythm.name!r} uses coordinate {c!r}, which model {doc.name!r} does not have")
    by_dep = {c.dependent: c for c in out.couplers}
    _check_mirrors(rhythm, by_dep, doc.name)
    for t in rhythm.terms:
        if t.dependent not in coords:
            raise RhythmError(f"rhythm {rhythm.name!r}: model {doc.name!r} has no coordinate {t.dependent!r}")
        old = by_dep.get(t.dependent)
        if old is None:
            raise RhythmError(f"rhythm {rhythm.name!r}: no coupler drives {t.dependent!r} in model {doc.name!r}")
        new = t.function
        if t.mode == "add":
            if isinstance(new, fn.Linear) and not np.any(new.coefficients) and new.intercept == 0.0:
                continue  # adding zero leaves the model unchanged
            if any(i not in rhythm.inputs for i in old.independents):
                raise RhythmError(f"{t.dependent!r}: its coupler uses {old.independents}, not among the rhythm's inputs")
            base_lin = linear_coefficients(old.function if old.scale == 1.0 else fn.Multiplier(old.scale, old.function))
            new_lin = linear_coefficients(new)
            if base_lin is not None and new_lin is not None:
                a = np.array(new_lin[0], dtype=float)
                for slope, name in zip(base_lin[0], old.independents):
                    a[rhythm.inputs.index(name)] += slope
                new = fn.Linear(a, base_lin[1] + new_lin[1])
            elif base_lin is not None and isinstance(new, fn.MultivariatePolynomial):
                # a linear coupler plus a polynomial is a polynomial: stays exportable to OpenSim
                order = max(new.order, 1)
                exps = [tuple(e) for e in fn.polynomial_exponents(new.dimension, order).tolist()]
                c = np.zeros(len(exps))
                for e, v in zip(new.exponents.tolist(), new.coefficients):
                    c[exps.index(tuple(e))] += v
                c[exps.index((0,) * new.dimension)] += base_lin[1]
                for slope, name in zip(base_lin[0], old.independents):
                    unit = [0] * new.dimension
                    unit[rhythm.inputs.index(name)] = 1
                    c[exps.index(tuple(unit))] += slope
                new = fn.MultivariatePolynomial(new.dimension, order, c)
            else:
                picks = [fn.coordinate(rhythm.inputs.index(i), len(rhythm.inputs)) for i in old.independents]
                oldf = old.function if old.scale == 1.0 else fn.Multiplier(old.scale, old.function)
                new = fn.Composite(fn.Linear([1.0, 1.0], 0.0), [fn.Composite(oldf, picks), new])
        old.function, old.independents, old.scale = new, list(rhythm.inputs), 1.0
        for mname in t.mirrors:
            mc = by_dep.get(mname)
            if mc is None:
                raise RhythmError(f"rhythm {rhythm.name!r}: no coupler drives the mirror {mname!r}")
            mc.function, mc.independents, mc.scale = _negated(new), list(rhythm.inputs), 1.0
    out.notes = list(out.notes) + [f"couplers replaced by rhythm {rhythm.name!r}"]
    return out


def _coupler_values(c, names, x):
    f = c.function if c.scale == 1.0 else fn.Multiplier(c.scale, c.function)
    return f.evaluate(x[:, [names.index(i) for i in c.independents]]).value


def _check_mirrors(rhythm: Rhythm, by_dep: dict, model_name: str) -> None:
    """A coupler of the model that undoes a term's dependent (the negative of its old function) must be
    among the term's mirrors: otherwise the next body would not follow the new rhythm."""
    names = sorted({i for c in by_dep.values() for i in c.independents})
    x = np.random.default_rng(7).uniform(-1.0, 1.0, (6, len(names)))
    for t in rhythm.terms:
        old = by_dep.get(t.dependent)
        if old is None:
            continue
        v = _coupler_values(old, names, x)
        if not np.any(v):
            continue
        for dep, c in by_dep.items():
            if dep == t.dependent or dep in t.mirrors or sorted(c.independents) != sorted(old.independents):
                continue
            if np.allclose(_coupler_values(c, names, x), -v, rtol=1e-9, atol=1e-12):
                raise RhythmError(f"rhythm {rhythm.name!r}: the term for {t.dependent!r} does not name its mirror "
                                  f"{dep!r} (model {model_name!r} undoes {t.dependent!r} with it); add it to the "
                                  "term's mirrors")


def as_polynomial(rhythm: Rhythm, order: int = 4, n: int = 41) -> tuple[Rhythm, dict[str, float]]:
    """The rhythm with every term that is not linear or polynomial (e.g. a SplineSurface) replaced by its
    least-squares ``MultivariatePolynomial`` of ``order`` on an n^d grid over the rhythm's domain, so that
    OpenSim can load it.  Returns the new rhythm and, per replaced term, the largest error on the grid (rad)."""
    if any(k not in rhythm.domain for k in rhythm.inputs):
        raise RhythmError(f"rhythm {rhythm.name!r}: as_polynomial needs a domain for every input")
    axes = [np.linspace(*rhythm.domain[k], n) for k in rhythm.inputs]
    x = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(axes))
    terms, errors = [], {}
    for t in rhythm.terms:
        if isinstance(t.function, (fn.Linear, fn.MultivariatePolynomial)):
            terms.append(t)
            continue
        probe = fn.MultivariatePolynomial(len(axes), order, np.zeros(len(fn.polynomial_exponents(len(axes), order))))
        mono = probe._monomials(x)
        y = t.function.evaluate(x).value
        c = np.linalg.lstsq(mono, y, rcond=None)[0]
        poly = fn.MultivariatePolynomial(len(axes), order, c)
        errors[t.dependent] = float(np.abs(poly.evaluate(x).value - y).max())
        terms.append(RhythmTerm(t.dependent, poly, t.mirrors, t.mode))
    return Rhythm(rhythm.name, rhythm.inputs, tuple(terms), rhythm.description, rhythm.reference, rhythm.domain), errors


def pole_motion(rhythm: Rhythm, plane: str = "elv_angle", elevation: str = "shoulder_elv",
                lo: float = -np.pi / 2, hi: float = 3 * np.pi / 4) -> dict[str, float]:
    """Per term, the range (rad) its value sweeps when ``plane`` goes from lo to hi at ``elevation`` = 0
    (the pole, arm at the side): zero for a rhythm defined at the pole.  ``lo``, ``hi`` (rad): the plane's
    range; :func:`apply` passes the model's range of the coordinate (the defaults are MoBL's, -90...135 deg)."""
    if plane not in rhythm.inputs or elevation not in rhythm.inputs:
        return {}
    x = np.zeros((91, len(rhythm.inputs)))
    x[:, rhythm.inputs.index(plane)] = np.linspace(lo, hi, 91)
    return {t.dependent: float(np.ptp(t.function.evaluate(x).value)) for t in rhythm.terms}


#: inputs whose range is wider than this (rad, a full turn each way) are taken over +-this by the full-turn check
_FULL_TURN_CLIP = 2 * np.pi


def _check_full_turn(model: Model, rhythm: Rhythm) -> None:
    """Refuse a term whose value reaches beyond a full turn (2 pi rad, or 2 pi m) anywhere on the model's ranges
    of the rhythm's inputs: an intercept in degrees, a slope or a fit to radians taken for degrees."""
    axes = []
    for c in rhythm.inputs:
        lo, hi = model.coordinates[model.coordinate_index(c)].range if c in model.coordinate_names else (0.0, 0.0)
        lo, hi = max(lo, -_FULL_TURN_CLIP), min(hi, _FULL_TURN_CLIP)
        axes.append(np.linspace(lo, hi, 41) if hi > lo else np.array([lo]))
    x = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, len(axes))
    for t in rhythm.terms:
        v = np.asarray(t.function.evaluate(x).value, dtype=float)
        k = int(np.nanargmax(np.abs(v))) if np.isfinite(v).any() else 0
        if not np.isfinite(v).all() or abs(v[k]) > 2 * np.pi:
            at = ", ".join(f"{n} = {np.degrees(a):.1f} deg" for n, a in zip(rhythm.inputs, x[k]))
            src = f" ({rhythm.description})" if rhythm.description.startswith("read from") else ""
            raise RhythmError(
                f"rhythm {rhythm.name!r}{src}: the term for {t.dependent!r} reaches {v[k]:.4g} rad "
                f"({np.degrees(v[k]):.1f} deg) at {at}, within the ranges of model {model.name!r}: more than a full "
                "turn. Rhythm intercepts are in radians and slopes in rad/rad; a fitted rhythm needs its data in "
                "degrees (osim-emb fit-rhythm)")


def apply(model: Model, rhythm: Rhythm | str, outside: str = "warn") -> Model:
    """A new model whose couplers follow ``rhythm`` (a Rhythm, a built-in name or a file).

    ``outside`` ("warn", "error", "ignore"): what to do when the model's ranges of the rhythm's inputs
    reach beyond the domain of the rhythm's data.  A rhythm that moves the girdle when the plane of
    elevation changes at zero elevation (e.g. the linear de Groot & Brand rhythm) is logged.

    Parameters
    ----------
    model : Model
        A model imported from .osim with the rhythm's input and dependent coordinates (the model is not
        changed).
    rhythm : Rhythm or str
        A rhythm, a built-in name or a file (:func:`load_rhythm`).
    outside : {"warn", "error", "ignore"}
        What to do when the model's input ranges reach beyond the rhythm's data.

    Returns
    -------
    Model
        A new model whose couplers follow the rhythm (``extras['rhythm']`` holds it).

    Examples
    --------
    >>> import numpy as np
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> simm = oe.apply_rhythm(model, "holzbaur2005")
    >>> simm.coordinate_names == model.coordinate_names
    True

    The girdle moves differently, so the paths change (lengths in metres):

    >>> q = oe.degrees_to_q(model, [20, 60, 0])
    >>> change = np.abs(oe.muscle_lengths(simm, q) - oe.muscle_lengths(model, q)).max()
    >>> bool(1e-4 < change < 0.05)
    True
    """
    from osim_emb.io.convert import document_to_model
    if not isinstance(rhythm, Rhythm):
        rhythm = load_rhythm(rhythm)
    doc = model.extras.get("document")
    if doc is None:
        raise RhythmError("apply() needs a model imported from an .osim file (it edits the model's couplers)")
    names = {c.name for c in doc.coordinates}
    for c in rhythm.inputs:  # before any warning about the rhythm itself
        if c not in names:
            raise RhythmError(f"rhythm {rhythm.name!r} uses coordinate {c!r}, which model {doc.name!r} does not have")
    _check_full_turn(model, rhythm)
    if rhythm.domain:
        corners = []
        ranges = [model.coordinates[model.coordinate_index(c)].range if c in model.coordinate_names else (0.0, 0.0)
                  for c in rhythm.inputs]
        for k in range(2 ** len(ranges)):
            corners.append([r[(k >> i) & 1] for i, r in enumerate(ranges)])
        rhythm.check_domain(np.array(corners), outside, what=f"on the ranges of model {model.name!r}")
    plane = "elv_angle"
    if plane in model.coordinate_names:
        lo, hi = model.coordinates[model.coordinate_index(plane)].range
        moves = {k: v for k, v in pole_motion(rhythm, plane, lo=lo, hi=hi).items() if v > 1e-9}
    else:
        moves = {}
    if moves:
        order = sorted(moves, key=moves.get, reverse=True)
        log.warning("rhythm %r moves %s when %s sweeps its range %.1f...%.1f deg in model %r at shoulder_elv = 0 "
                    "(arm at the side); a fitted rhythm (osim-emb fit-rhythm) does not", rhythm.name,
                    ", ".join(f"{d} by {np.degrees(moves[d]):.1f} deg" for d in order), plane,
                    np.degrees(lo), np.degrees(hi), model.name)
    new = document_to_model(apply_to_document(doc, rhythm), strict=False)
    new.extras["rhythm"] = rhythm
    return new

