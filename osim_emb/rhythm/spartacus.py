"""Reader of the Spartacus shoulder-kinematics dataset, converted to the Holzbaur/MoBL rhythm coordinates.

Spartacus (Moissenet, Puchaud, Naaïm, Holzer & Begon 2024, Zenodo doi 10.5281/zenodo.11455521,
github.com/Spartacus-shoulder-kinematics-dataset/shoulder-kinematics, GPL-3.0) gathers the
sternoclavicular (SC) and scapulothoracic (ST) angles of some twenty studies against the
humerothoracic angle, each study in its own Euler sequence and segment frames.  This module reads a
fetched copy and returns one row per sample with:

1. the humerus plane of elevation and elevation (the abscissa; the plane from the task, or the
   horizontal-flexion angle itself),
2. the ISB angles (after the dataset's per-file sign fixes, corrections.csv) (Wu et al. 2005, right side): SC and ST in the Y-X'-Z'' sequence, obtained by
   rebuilding the study's rotation matrix from its own sequence, turning its parent and child axes
   into ISB directions, mirroring left shoulders, applying the Kolz et al. (2020) scapular-frame
   correction where the dataset names one, and decomposing in Y-X'-Z'',
3. the MoBL dependent coordinates (:data:`ISB_TO_MOBL`).

The steps are documented in docs/rhythm.md.  Only rotations are read; translations are ignored.
"""

from __future__ import annotations

import csv
import logging
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.spatial.transform import Rotation

log = logging.getLogger(__name__)

__all__ = ["read_spartacus", "ISB_TO_MOBL", "PLANE_OF_TASK_DEG", "CITATION", "LICENCE_NOTE"]

CITATION = ("Moissenet F, Puchaud P, Naaïm A, Holzer N, Begon M (2024) Spartacus shoulder-kinematics dataset. "
            "Zenodo, doi 10.5281/zenodo.11455521; "
            "github.com/Spartacus-shoulder-kinematics-dataset/shoulder-kinematics")
LICENCE_NOTE = ("Derived from the Spartacus dataset (GPL-3.0 repository); the numbers are the published kinematics "
                "of the cited studies, re-expressed in ISB and MoBL conventions. Cite the dataset and its studies.")

#: Humerus plane of elevation (deg, MoBL elv_angle: 0 frontal/abduction, 90 sagittal/flexion) of each task.
PLANE_OF_TASK_DEG = {"frontal plane elevation": 0.0, "scapular plane elevation": 30.0,
                     "sagittal plane elevation": 90.0}
#: Elevation (deg) assumed for horizontal flexion, whose abscissa is the plane of elevation.
HORIZONTAL_FLEXION_ELEVATION_DEG = 90.0

#: Consistency fixes (ours, see docs/rhythm.md): Moissenet et al.'s horizontal-flexion plane grows toward
#: extension (their scapular protraction falls as the arm crosses the body, Oki et al.'s rises), so its sign is
#: turned; the horizontal-flexion ST medial rotation of both studies has the opposite sign of the same studies'
#: elevation tasks at 90 deg and is left out.
HORIZONTAL_PLANE_SIGN = {"#14": -1.0}
EXCLUDED = {("horizontal flexion", "ST_medial_rotation")}

#: Curves left out by default (study, joint): their converted trends contradict all other studies.  Kijima et al.
#: and Kim et al. (one mean curve each): ST protraction grows 0.33-0.40 deg per deg of elevation against -0.17..0.13
#: in the other 11 ST studies, and upward rotation only 0.11-0.20 against 0.25-0.44 (validation/shoulder_rhythm/
#: data/spartacus_trends.csv); a frame or sequence definition the dataset does not capture is suspected.
SUSPECT = {("#8", "ST"): "trends contradict the other studies", ("#9", "ST"): "trends contradict the other studies"}

#: MoBL coordinate = sign * ISB angle (see docs/rhythm.md for the axes).
ISB_TO_MOBL = {
    "sternoclavicular_r2": ("SC", 0, 1.0),    # clavicle protraction (+) about thorax Y
    "sternoclavicular_r3": ("SC", 1, -1.0),   # clavicle elevation: MoBL axis ~ -X, ISB X positive = depression
    "acromioclavicular_r2": ("ST", 0, 1.0),   # scapula protraction / internal rotation about Y
    "acromioclavicular_r3": ("ST", 1, -1.0),  # scapula upward (lateral) rotation: ISB X negative
    "acromioclavicular_r1": ("ST", 2, 1.0),   # scapula posterior tilt about Z
}
ISB_NAMES = {"SC": ("SC_protraction", "SC_depression", "SC_axial_rotation"),
             "ST": ("ST_protraction", "ST_medial_rotation", "ST_posterior_tilt")}

_JOINTS = {"sternoclavicular": ("SC", "thorax", "clavicle"), "scapulothoracic": ("ST", "thorax", "scapula")}
_SENSE = {"posteroanterior": 0, "inferosuperior": 1, "mediolateral": 2}
# Kolz et al. (2020): R such that a_PA = R a_AC (acromion-based scapular frame -> ISB PA frame); orthonormalized.
_KOLZ_AC_TO_PA = np.array([[0.964732483180704, 0.0100557410449752, -0.263040145164248],
                           [-0.0568391733041278, 0.983654375192805, -0.170860699232318],
                           [0.257022458695919, 0.17978585104532, 0.949534887979275]])


class SpartacusError(ValueError):
    """A Spartacus file that cannot be read or converted."""


def _orthonormal(m: np.ndarray) -> np.ndarray:
    u, _, vt = np.linalg.svd(m)
    return u @ vt


def _axes_to_isb(senses: list[str], where: str) -> np.ndarray:
    """Columns: the study's x, y, z axes in ISB directions (X anterior, Y superior, Z lateral-right)."""
    b = np.zeros((3, 3))
    for k, s in enumerate(senses):
        s = s.strip()
        if not s or s[0] not in "+-" or s[1:] not in _SENSE:
            raise SpartacusError(f"{where}: axis sense {s!r} not understood")
        b[_SENSE[s[1:]], k] = 1.0 if s[0] == "+" else -1.0
    if abs(np.linalg.det(b) - 1.0) > 1e-12:
        raise SpartacusError(f"{where}: axes {senses} are not a right-handed frame")
    return b


def _sequence(text: str, where: str) -> str:
    """"zy'x''" -> "ZYX" (intrinsic, scipy's upper case)."""
    letters = "".join(ch for ch in text if ch.isalpha()).upper()
    if len(letters) != 3 or set(letters) - set("XYZ"):
        raise SpartacusError(f"{where}: Euler sequence {text!r} not understood")
    return letters


def _read_curve(path: Path) -> tuple[np.ndarray, np.ndarray]:
    try:
        a = pd.read_csv(path, header=None, encoding="utf-8-sig").apply(pd.to_numeric, errors="coerce")
    except (ValueError, pd.errors.ParserError) as err:
        raise SpartacusError(f"{path}: {err}") from None
    a = a.dropna(how="any").to_numpy(float)  # blank cells and lines
    if a.ndim != 2 or a.shape[1] != 2 or len(a) < 2:
        raise SpartacusError(f"{path}: expected two columns (humerothoracic angle, joint angle) and two rows or more")
    order = np.argsort(a[:, 0], kind="stable")
    return a[order, 0], a[order, 1]


def _manual_signs(folder: Path) -> dict[str, float]:
    """The dataset's per-file sign fixes (corrections.csv: file name, +1 or -1), applied to the raw angles."""
    p = folder / "corrections.csv"
    if not p.is_file():
        return {}
    out = {}
    with open(p, newline="", encoding="utf-8-sig") as fh:
        for r in csv.reader(fh):
            if len(r) >= 2 and r[0].strip():
                out[r[0].strip()] = float(r[1])
    return out


def _find(data_dir: Path, folder: str, name: str) -> Path:
    p = data_dir / folder / name
    if p.is_file():
        return p
    hits = sorted((data_dir / folder.split("/")[0]).rglob(name))
    if not hits:
        raise SpartacusError(f"{data_dir / folder}: no file {name}")
    return hits[0]


def isb_matrix(angles_deg: np.ndarray, sequence: str, parent_axes: np.ndarray, child_axes: np.ndarray,
               mirror: bool, child_correction: np.ndarray | None) -> np.ndarray:
    """The joint rotation in ISB frames (right side) from a study's Euler angles (N, 3) in degrees."""
    r = Rotation.from_euler(sequence, angles_deg, degrees=True).as_matrix()
    r = parent_axes @ r @ child_axes.T
    if mirror:
        d = np.diag([1.0, 1.0, -1.0])
        r = d @ r @ d
    if child_correction is not None:
        r = r @ child_correction.T
    return r


def read_spartacus(root: str | Path, step_deg: float | None = 5.0,
                   exclude: dict[tuple[str, str], str] | None = None) -> pd.DataFrame:
    """SC and ST angles of the elevation and horizontal-flexion tasks, in ISB and MoBL conventions (degrees).

    ``root``: the repository's top folder (with spartacus/dataset and spartacus/data).  Columns: study,
    authors, year, doi, shoulder, side, task, plane_of_elevation_deg, elevation_deg, the six ISB angles
    (NaN for a joint the row does not have) and the five MoBL coordinates.  ``step_deg``: each curve is
    resampled (linear interpolation) at the multiples of this step of its abscissa inside its range
    (None: the published samples).  ``exclude``: (study, "SC"|"ST") -> reason, curves left out (default
    :data:`SUSPECT`; ``{}`` keeps everything).
    """
    exclude = SUSPECT if exclude is None else exclude
    root = Path(root)
    base = root / "spartacus" if (root / "spartacus").is_dir() else root
    ds = pd.read_csv(base / "dataset" / "dataset_of_datasets.csv", dtype=str).set_index("dataset_id")
    senses = pd.read_csv(base / "dataset" / "dataset_segment_directions.csv", dtype=str).set_index("dataset_id")
    joints = pd.read_csv(base / "dataset" / "dataset_clean_of_joint_data.csv", dtype=str).fillna("")
    tasks = set(PLANE_OF_TASK_DEG) | {"horizontal flexion"}
    curves = []
    skipped = []
    for n, row in joints.iterrows():
        if row.joint not in _JOINTS or row.humeral_motion not in tasks:
            continue
        where = f"dataset_clean_of_joint_data.csv line {n + 2} ({row.dataset_id} {row.joint}, {row.humeral_motion})"
        horizontal = row.humeral_motion == "horizontal flexion"
        abscissa = row.thoracohumeral_angle.strip()
        # angle(yh,yt), between the long axes, is the elevation of the Y-X-Y sequence: cos(elevation) = yh . yt
        if (horizontal and abscissa != "y") or (not horizontal and abscissa not in ("x'", "y'", "angle(yh,yt)")):
            skipped.append(f"{where}: abscissa {abscissa!r} is not the elevation (or the plane, horizontal flexion)")
            continue
        short, parent, child = _JOINTS[row.joint]
        sid = row.dataset_id
        if (sid, short) in exclude:
            skipped.append(f"{where}: excluded, {exclude[(sid, short)]}")
            continue
        info, sense = ds.loc[sid], senses.loc[sid]
        try:
            seq = _sequence(row.euler_sequence, where)
            pax = _axes_to_isb([sense[f"{parent}_{a}_sense"] for a in "xyz"], f"{where}, {parent}")
            cax = _axes_to_isb([sense[f"{child}_{a}_sense"] for a in "xyz"], f"{where}, {child}")
        except (SpartacusError, TypeError, KeyError) as err:
            skipped.append(f"{where}: {err}")
            continue
        files = [row[f"dof_{k}_euler"].strip() for k in ("1st", "2nd", "3rd")]
        if not all(files):
            skipped.append(f"{where}: not all three Euler angles are given")
            continue
        xs, ys = zip(*(_read_curve(_find(base / "data", row.folder, f)) for f in files))
        signs = _manual_signs(base / "data" / row.folder)
        ys = [y * signs.get(f, 1.0) for y, f in zip(ys, files)]
        lo, hi = max(x[0] for x in xs), min(x[-1] for x in xs)
        if hi <= lo:
            skipped.append(f"{where}: the three angles share no abscissa range")
            continue
        # the three angles on the abscissa of the first one, within the common range
        x = xs[0][(xs[0] >= lo) & (xs[0] <= hi)] if step_deg is None else \
            np.arange(np.ceil(lo / step_deg), np.floor(hi / step_deg) + 1) * step_deg
        if x.size == 0:
            skipped.append(f"{where}: range [{lo:g}, {hi:g}] holds no sample")
            continue
        angles = np.column_stack([np.interp(x, xk, yk) for xk, yk in zip(xs, ys)])
        correction = str(info.get(f"{child}_correction_method", "") or "").strip()
        kolz = None
        if correction == "kolz_AC_to_PA":
            kolz = _orthonormal(_KOLZ_AC_TO_PA)
        elif correction and correction != "nan":
            skipped.append(f"{where}: scapular correction {correction!r} not supported")
            continue
        mirror = row.side.strip() == "left" and str(info.side_as_right).strip() != "True"
        r = isb_matrix(angles, seq, pax, cax, mirror, kolz)
        isb = Rotation.from_matrix(r).as_euler("YXZ", degrees=True)
        if horizontal:
            plane = HORIZONTAL_PLANE_SIGN.get(sid, 1.0) * x
            elevation = np.full_like(x, HORIZONTAL_FLEXION_ELEVATION_DEG)
        else:
            plane, elevation = np.full_like(x, PLANE_OF_TASK_DEG[row.humeral_motion]), np.abs(x)
        df = pd.DataFrame({"study": sid, "authors": info.dataset_authors, "year": int(info.dataset_year),
                           "doi": info.dataset_doi.strip('"'), "shoulder": f"{sid}/{row.shoulder_id}/{row.side}",
                           "side": row.side, "task": row.humeral_motion, "euler_sequence": row.euler_sequence,
                           "plane_of_elevation_deg": plane, "elevation_deg": elevation})
        for k, name in enumerate(ISB_NAMES[short]):
            df[name] = np.nan if (row.humeral_motion, name) in EXCLUDED else isb[:, k]
        curves.append(df)
    for s in skipped:
        log.debug("Spartacus: skipped %s", s)
    if skipped:
        log.warning("Spartacus: skipped %d curve(s) (details at DEBUG level), e.g. %s", len(skipped), skipped[0])
    if not curves:
        raise SpartacusError(f"{root}: no sternoclavicular or scapulothoracic elevation data found")
    out = pd.concat(curves, ignore_index=True)
    for name in (n for v in ISB_NAMES.values() for n in v):
        if name not in out:
            out[name] = np.nan
    for coord, (joint, k, sign) in ISB_TO_MOBL.items():
        out[coord] = sign * out[ISB_NAMES[joint][k]]
    return out
