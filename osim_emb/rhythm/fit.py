"""Fitting a two-coordinate shoulder rhythm to measured kinematics (issue 14).

Each dependent coordinate d (MoBL convention, rad) is a polynomial surface in the plane of elevation
p = elv_angle and the elevation e = shoulder_elv (rad):

    d(p, e) = sum_{k >= 1, j <= J, j + k <= K} c_jk p^j e^k            (every term has e^k, k >= 1)

so d(p, 0) = 0 and dd/dp (p, 0) = 0 for every p: at the pole (arm at the side, where the plane of
elevation is undefined) the rhythm is the model's rest posture whatever elv_angle says.  The surface
is a ``MultivariatePolynomial`` (OpenSim's ``MultivariatePolynomialFunction``, order K).

Each shoulder of the data gets its own offset (a nuisance intercept): the studies' static postures and
frame definitions differ, and the model needs the change from rest.  Weighted least squares, each study
weighing the same in total (``weights="study"``), a small ridge on the surface coefficients.
Cross-validation leaves one study out, refits, fits only the left-out shoulders' offsets, and reports
the weighted RMS of the remaining error (deg).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from osim_emb.core import functions as fn
from osim_emb.core.functions.multivariate import polynomial_exponents
from osim_emb.rhythm.rhythms import Rhythm, RhythmTerm

log = logging.getLogger(__name__)

__all__ = ["fit", "RhythmFit", "surface_terms", "read_rhythm_data", "check_degree_columns", "MOBL_DEPENDENTS"]

#: MoBL dependent coordinates and their mirrors (the couplers that undo them for the next body).
MOBL_DEPENDENTS = {
    "sternoclavicular_r2": ("unrotscap_r2",),
    "sternoclavicular_r3": ("unrotscap_r3",),
    "acromioclavicular_r1": ("unrothum_r1",),
    "acromioclavicular_r2": ("unrothum_r2",),
    "acromioclavicular_r3": ("unrothum_r3",),
}
PLANE, ELEVATION = "plane_of_elevation_deg", "elevation_deg"
#: A degree column whose every value lies within this bound (deg) while it spans at least RADIAN_SPAN looks like
#: radians: radians of a joint angle never exceed pi (3.1416), a shoulder's degrees exceed 3.2 as soon as they move.
RADIAN_BOUND, RADIAN_SPAN = 3.2, 0.01


def surface_terms(degree: int, plane_degree: int) -> list[tuple[int, int]]:
    """Exponents (j of the plane, k of the elevation) of the surface: k >= 1, j <= plane_degree, j + k <= degree."""
    return [(j, k) for j, k in polynomial_exponents(2, degree).tolist() if k >= 1 and j <= plane_degree]


def _basis(p: np.ndarray, e: np.ndarray, terms) -> np.ndarray:
    return np.column_stack([p ** j * e ** k for j, k in terms])


def read_rhythm_data(path: str | Path) -> pd.DataFrame:
    """A derived table (e.g. validation/shoulder_rhythm/data/spartacus_derived.csv): one row per sample with
    study, shoulder, plane_of_elevation_deg, elevation_deg and dependent-coordinate columns in degrees."""
    path = Path(path)
    df = pd.read_csv(path)
    missing = [c for c in ("study", "shoulder", PLANE, ELEVATION) if c not in df]
    if missing:
        raise ValueError(f"{path}: rhythm data need the columns {missing}")
    df.attrs["source"] = str(path)  # named in the messages of fit()
    return df


def check_degree_columns(df: pd.DataFrame, dependents, source: str = "rhythm data",
                         confirm_degrees=()) -> None:
    """Refuse angle columns that look like radians: every value within +-3.2 while the column spans a range.

    Checked: plane_of_elevation_deg, elevation_deg and each dependent column.  A rhythm needs elevations over
    tens of degrees and the planes of the data are tens of degrees apart, so the two input columns are always
    checked; a dependent coordinate that truly moves less than 3.2 deg may be named in ``confirm_degrees``."""
    confirm = set(confirm_degrees)
    for c in confirm & {PLANE, ELEVATION}:
        raise ValueError(f"{source}: {c} cannot be confirmed as degrees: a rhythm needs the elevation over tens of "
                         "degrees and planes tens of degrees apart (confirm_degrees is for dependent columns)")
    bad = []
    for c in (PLANE, ELEVATION, *dependents):
        if c not in df or c in confirm:
            continue
        v = pd.to_numeric(df[c], errors="coerce").to_numpy(float)
        v = v[np.isfinite(v)]
        if v.size and np.abs(v).max() <= RADIAN_BOUND and np.ptp(v) >= RADIAN_SPAN:
            bad.append(f"{c} [{v.min():.3g}, {v.max():.3g}]")
    if not bad:
        return
    deps = [b.split(" ")[0] for b in bad if b.split(" ")[0] not in (PLANE, ELEVATION)]
    hint = (f". A dependent column truly in degrees that moves less than {RADIAN_BOUND} deg: name it with "
            f"--confirm-degrees {deps[0]} (confirm_degrees=[...] in Python)" if deps and len(deps) == len(bad) else "")
    raise ValueError(f"{source}: the degree column(s) {', '.join(bad)} look like radians: every value lies within "
                     f"+-{RADIAN_BOUND}. The columns must be in degrees: convert them (numpy.degrees, or multiply by "
                     f"180/pi = 57.2958) and run again{hint}")


@dataclass
class RhythmFit:
    """A fitted rhythm and its diagnostics (angles in degrees)."""

    rhythm: "object"
    coefficients: dict[str, np.ndarray]
    terms: list[tuple[int, int]]
    degree: int
    plane_degree: int
    rms_fit_deg: dict[str, float]
    rms_cv_deg: dict[str, float]
    cv_by_study: pd.DataFrame
    n_samples: dict[str, int]
    domain_deg: dict[str, tuple[float, float]]
    offsets: dict[str, pd.Series] = field(default_factory=dict)

    def summary(self) -> pd.DataFrame:
        return pd.DataFrame({"n_samples": self.n_samples, "rms_fit_deg": self.rms_fit_deg,
                             "rms_cv_leave_one_study_out_deg": self.rms_cv_deg}).rename_axis("dependent")


def _solve(basis, groups, values, w, ridge):
    """Weighted least squares for surface coefficients + one offset per group; returns (coef, offsets)."""
    ug, gi = np.unique(groups, return_inverse=True)
    g = np.zeros((len(values), len(ug)))
    g[np.arange(len(values)), gi] = 1.0
    a = np.hstack([basis, g]) * np.sqrt(w)[:, None]
    b = values * np.sqrt(w)
    nb = basis.shape[1]
    reg = np.zeros((nb, nb + len(ug)))
    reg[:, :nb] = np.sqrt(ridge) * np.eye(nb)
    sol = np.linalg.lstsq(np.vstack([a, reg]), np.concatenate([b, np.zeros(nb)]), rcond=None)[0]
    return sol[:nb], pd.Series(sol[nb:], index=ug)


def _weights(df: pd.DataFrame, mode: str) -> np.ndarray:
    if mode == "study":
        return 1.0 / df.groupby("study")["study"].transform("size").to_numpy(float)
    if mode == "sample":
        return np.ones(len(df))
    raise ValueError(f"weights must be 'study' or 'sample', got {mode!r}")


def _wrms(r, w):
    return float(np.sqrt(np.sum(w * r ** 2) / np.sum(w)))


def fit(data: pd.DataFrame | str | Path, dependents: dict[str, tuple[str, ...]] | None = None, *,
        degree: int = 2, plane_degree: int = 1, weights: str = "study", ridge: float = 1e-6,
        inputs: tuple[str, str] = ("elv_angle", "shoulder_elv"), name: str = "fitted",
        reference: str = "", cross_validate: bool = True, confirm_degrees=()) -> RhythmFit:
    """Fit each dependent coordinate as a pole-safe polynomial surface of (plane of elevation, elevation).

    ``data``: a table (or CSV path) with study, shoulder, plane_of_elevation_deg, elevation_deg and one
    column per dependent coordinate in degrees, in the model's convention (NaN: not measured).
    ``dependents``: dependent -> mirror coordinates (default: the MoBL shoulder girdle).
    Returns a :class:`RhythmFit` whose ``rhythm`` (a :class:`~osim_emb.rhythm.rhythms.Rhythm`) replaces the couplers.

    Parameters
    ----------
    data : pandas.DataFrame, str or pathlib.Path
        Rows of measured postures: ``study``, ``shoulder``, ``plane_of_elevation_deg``, ``elevation_deg``
        and one column per dependent coordinate (degrees).
    dependents : dict, optional
        Dependent coordinate -> its mirror coordinates (default: the MoBL shoulder girdle).
    degree, plane_degree : int
        Polynomial degree in elevation and in the plane of elevation.
    weights : str
        "study" (each study weighs the same) or per-row weights.
    ridge : float
        Ridge penalty of the least-squares fit.
    inputs : (str, str)
        The model's plane-of-elevation and elevation coordinates.
    name, reference : str
        Labels of the fitted rhythm.
    cross_validate : bool
        Leave-one-study-out errors (``rms_cv_deg``).
    confirm_degrees : iterable of str
        Dependent columns that are in degrees although every value lies within +-3.2 (otherwise such a column,
        which looks like radians, is refused; the plane and elevation columns always are).

    Returns
    -------
    RhythmFit
        ``rhythm`` (apply it with :func:`osim_emb.apply_rhythm`), fit and cross-validation RMS errors in
        degrees, coefficients.

    Examples
    --------
    A surface the model can represent exactly (zero at zero elevation) is recovered:

    >>> import numpy as np, pandas as pd
    >>> import osim_emb as oe
    >>> plane, elevation = np.meshgrid(np.linspace(0, 90, 7), np.linspace(10, 120, 8))
    >>> data = pd.DataFrame({"study": np.repeat(["A", "B"], plane.size // 2 + 1)[:plane.size],
    ...                      "shoulder": "right", "plane_of_elevation_deg": plane.ravel(),
    ...                      "elevation_deg": elevation.ravel()})
    >>> data["sternoclavicular_r2"] = -0.2 * data.elevation_deg + 1e-3 * data.elevation_deg * data.plane_of_elevation_deg
    >>> result = oe.fit_rhythm(data, {"sternoclavicular_r2": ("unrotscap_r2",)}, cross_validate=False)
    >>> bool(result.rms_fit_deg["sternoclavicular_r2"] < 1e-3)
    True
    >>> result.rhythm.inputs
    ('elv_angle', 'shoulder_elv')
    """
    df = read_rhythm_data(data) if not isinstance(data, pd.DataFrame) else data
    for col in ("study", "shoulder", PLANE, ELEVATION):
        if col not in df:
            raise ValueError(f"rhythm data need a column {col!r}")
    bad = ~np.isfinite(df[[PLANE, ELEVATION]].to_numpy(float)).all(axis=1)
    if bad.any():
        raise ValueError(f"rhythm data: {int(bad.sum())} row(s) without a finite plane of elevation and elevation "
                         f"(first: row {int(np.flatnonzero(bad)[0])})")
    dependents = dict(MOBL_DEPENDENTS if dependents is None else dependents)
    check_degree_columns(df, [d for d in dependents if d in df], df.attrs.get("source", "rhythm data"),
                         confirm_degrees)
    if degree < 1 or plane_degree < 0:
        raise ValueError("degree must be >= 1 and plane_degree >= 0")
    terms = surface_terms(degree, plane_degree)
    exps = [tuple(e) for e in polynomial_exponents(2, degree).tolist()]
    out_terms, coefs, rms_fit, rms_cv, counts, offsets, cv_rows = [], {}, {}, {}, {}, {}, []
    for dep, mirrors in dependents.items():
        if dep not in df:
            raise ValueError(f"rhythm data have no column {dep!r} (columns: {', '.join(df.columns)})")
        d = df[df[dep].notna()]
        if d.empty:
            raise ValueError(f"no samples of {dep!r} in the rhythm data")
        p, e = np.radians(d[PLANE].to_numpy(float)), np.radians(d[ELEVATION].to_numpy(float))
        y = np.radians(d[dep].to_numpy(float))
        w = _weights(d, weights)
        basis = _basis(p, e, terms)
        c, off = _solve(basis, d["shoulder"].to_numpy(), y, w, ridge)
        resid = y - basis @ c - off.loc[d["shoulder"]].to_numpy()
        rms_fit[dep] = float(np.degrees(_wrms(resid, w)))
        counts[dep] = len(d)
        offsets[dep] = off
        coefs[dep] = c
        if cross_validate and d["study"].nunique() > 1:
            errs, ws = [], []
            for s in sorted(d["study"].unique()):
                train, test = (d["study"] != s).to_numpy(), (d["study"] == s).to_numpy()
                ct, _ = _solve(basis[train], d["shoulder"].to_numpy()[train], y[train], w[train], ridge)
                r = y[test] - basis[test] @ ct
                sh = d["shoulder"].to_numpy()[test]
                r = r - pd.Series(r).groupby(sh).transform("mean").to_numpy()  # the held-out shoulders' offsets
                errs.append(r)
                ws.append(w[test])
                cv_rows.append({"dependent": dep, "left_out_study": s, "n": int(test.sum()),
                                "rms_deg": float(np.degrees(np.sqrt(np.mean(r ** 2))))})
            rms_cv[dep] = float(np.degrees(_wrms(np.concatenate(errs), np.concatenate(ws))))
        else:
            rms_cv[dep] = float("nan")
        full = np.zeros(len(exps))
        for (j, k), v in zip(terms, c):
            full[exps.index((j, k))] = v
        out_terms.append(RhythmTerm(dep, fn.MultivariatePolynomial(2, degree, full), tuple(mirrors), "replace"))
    domain = {inputs[0]: (float(df[PLANE].min()), float(df[PLANE].max())),
              inputs[1]: (0.0, float(df[ELEVATION].max()))}
    desc = (f"polynomial surfaces (order {degree}, plane degree <= {plane_degree}, every term has the elevation) "
            f"fitted to {df['study'].nunique()} studies; zero at {inputs[1]} = 0")
    rhythm = Rhythm(name, inputs, tuple(out_terms), desc, reference,
                    domain={k: (float(np.radians(a)), float(np.radians(b))) for k, (a, b) in domain.items()})
    return RhythmFit(rhythm, coefs, terms, degree, plane_degree, rms_fit, rms_cv, pd.DataFrame(cv_rows),
                     counts, domain, offsets)
