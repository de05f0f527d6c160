"""Re-run the validation studies into a scratch folder and compare every table with the committed one.

    python validation/rerun.py                        # every study except the corpus (tens of minutes)
    python validation/rerun.py --quick                # only the studies that take about a minute or less
    python validation/rerun.py --studies linkages,planar_chain --keep /tmp/rerun
    python validation/rerun.py --slow                 # also the model corpus (extracts it under the temp folder)
    python validation/rerun.py --compare-only /tmp/rerun   # compare outputs an earlier --keep run left

Each study's scripts run with ``--out`` pointing into a temporary folder, so the committed ``results/`` are never
written.  Then every CSV (also ``.csv.gz``), OpenSim ``.sto``/``.mot``, ``.json`` and ``.txt`` file is compared with
the committed one: same columns and rows; text cells equal; numbers equal within a relative tolerance (default 1e-9;
per-study rules below, each with its reason, e.g. wall times ignored).  Figures (pdf, png, svg) are only listed when
they exist on one side only.  Prints a table (study, files compared, worst relative difference, status) and writes it
to ``validation/rerun_report.md`` with provenance (commit, date, versions).  Exit status 1 if any study changed or
failed.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import fnmatch
import gzip
import io
import json
import logging
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODELS = Path(os.environ.get("OSIM_EMB_MODELS", ROOT.parent / "shared" / "models")).resolve()
sys.path.insert(0, str(ROOT))

from osim_emb.progress import Progress  # noqa: E402

log = logging.getLogger("rerun")

DEFAULT_RTOL = 1e-9
FIGURES = (".pdf", ".png", ".svg")
TABLES = (".csv", ".csv.gz", ".sto", ".mot", ".json", ".txt")


@dataclass(frozen=True)
class Rule:
    """How to compare the cells of files matching ``files`` (glob on the path relative to the study folder),
    columns matching ``columns`` (regex, full match) and rows whose text cells match ``rows`` (regex, searched;
    empty: every row).  ``ignore`` skips them; otherwise |a - b| <= atol + rtol max(|a|, |b|) + scale max|column|
    (``scale``: relative to the largest committed value of the column).  First match wins."""
    files: str
    columns: str = ".*"
    rows: str = ""
    rtol: float = DEFAULT_RTOL
    atol: float = 0.0
    scale: float = 0.0
    ignore: bool = False
    reason: str = ""


@dataclass(frozen=True)
class Study:
    """``scripts``: (script, arguments...) relative to the study folder; ``{results}`` is the scratch counterpart of
    the committed ``results/``, ``{study}`` of the study folder, ``{models}`` the reference models
    (``OSIM_EMB_MODELS``).  ``compared``: committed folders compared.
    ``seconds``: run time on the 2-core development machine with numba's cache warm and OpenSim's values
    computed afresh (for --quick; 2026-11-25)."""
    name: str
    scripts: tuple[tuple[str, ...], ...]
    seconds: float
    compared: tuple[str, ...] = ("results",)
    rules: tuple[Rule, ...] = ()
    keys: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (file glob, key columns): rows matched on them
    slow_only: bool = False
    note: str = ""


WALL_TIME = "wall times of this machine, not results"
TIMING_ROWS = Rule("*", "value", rows=r"(?i)seconds|wall time|/ODE time|best of", ignore=True, reason=WALL_TIME)
TIMING = Rule("*", r"(?i).*(seconds|\btime_s\b|wall|elapsed|per_second|speedup).*",
              ignore=True, reason=WALL_TIME)


def rounding(files: str, columns: str, atol: float = 1e-13) -> Rule:
    """A difference between two exact routes (or its relative size), at rounding level."""
    return Rule(files, columns, atol=atol, reason="difference between two exact routes at rounding level: its last "
                                                 "bits follow the order of floating-point operations")


def digits(files: str, columns: str = "significant_figures.*") -> Rule:
    return Rule(files, columns, atol=0.5, reason="-log10 of a rounding-level difference")


def integrator_error(files: str, columns: str, rtol: float = 1e-2) -> Rule:
    return Rule(files, columns, rtol=rtol, reason="an integration error (drift, step error): its size, not its "
                                                   "last digits, is the result")


STIFF = ("Andrews' squeezer is stiff (beta' up to 1.3e3 rad/s): a rounding-level change moves the adaptive "
         "steps; errors of runs at rtol 1e-10..1e-12 are at that level")


def integrated_states(files: str) -> Rule:
    return Rule(files, atol=1e-15, scale=1e-9, reason="integrated states: a rounding-level change moves the adaptive "
                                                      "steps; compared on the column's scale (values cross zero, "
                                                      "the speed of a coordinate held at 0 is 1e-21)")


STUDIES: tuple[Study, ...] = (
    Study("andrews_squeezer", (("run_andrews.py", "--out", "{results}"),), 25,
          rules=(TIMING_ROWS, TIMING,
                 Rule("results/premodel_fits.csv", "max_error_.*", atol=1e-11,
                      reason="errors of the pre-model fits (1e-5..1e-4): their rounding"),
                 rounding("results/reduced_equation_check.csv", "max_relative_difference"),
                 Rule("results/*.csv", "rhs_evaluations.*", rtol=0.05, reason=STIFF + " (step counts)"),
                 Rule("results/results_t003.csv", r"beta - .*", atol=5e-9, reason=STIFF),
                 Rule("results/results_t003.csv", r"beta_dot - .*", atol=2e-7, reason=STIFF),
                 Rule("results/results_t003.csv", r"digits_.*", atol=1.5, reason=STIFF + " (-log10 of the errors)"),
                 Rule("results/rms_vs_dae.csv", "rms_beta_vs.*|.*position_residual.*", atol=1e-8, reason=STIFF),
                 Rule("results/rms_vs_dae.csv", "rms_beta_dot.*|.*velocity_residual.*", atol=1e-6, reason=STIFF),
                 Rule("results/trajectories.csv", atol=1e-15, scale=1e-8, reason=STIFF + " (states on the "
                      "column's scale)"),
                 Rule("results/residuals.csv", atol=1e-14, scale=1e-2, reason="constraint residuals |g|: rounding "
                      "level, or the integration error of the stabilised DAE at rtol 1e-6"))),
    Study("holzbaur_moment_arms", (("run.py", "--out", "{study}/full", "--results", "{results}"),), 480,
          rules=(Rule("results/*/timings.csv", ignore=True, reason=WALL_TIME), TIMING_ROWS, TIMING,
                 Rule("results/*/summary.csv", "sweep_value_of_max_.*|angle_of_max", ignore=True,
                      reason="where a rounding-level difference (< 5e-15 m; minus_dL_dq: its eps / h noise) peaks: "
                      "ties between last bits that move when OpenSim's references are recomputed (the maxima "
                      "themselves are compared)"),
                 Rule("results/*/summary.csv", ".*difference.*_m", rows="minus_dL_dq", atol=1e-9,
                      reason="finite differences (h = 1e-6) of OpenSim's lengths, whose last bits depend on the "
                      "configuration each worker evaluated before (its wrap-point cache): eps / h"),
                 rounding("results/*/summary.csv", ".*difference.*_m", 1e-14),
                 rounding("results/*/summary.csv", "relative_error", 1e-12),
                 rounding("results/*/leaders.csv.gz", "difference_m", 1e-14),
                 Rule("results/*/leaders.csv.gz", "opensim_m", atol=1e-12,
                      reason="OpenSim's moment arms: rounding of its wrap iterations (1e-13 m)"),
                 rounding("results/*/worst.txt", r"number_\d+", 1e-14))),
    Study("linkages", (("run_linkages.py", "--out", "{results}"),), 15,
          rules=(Rule("results/timings.csv", ignore=True, reason=WALL_TIME), TIMING_ROWS, TIMING,
                 Rule("results/agreement.csv", rows="molecule", rtol=0.05,
                      reason="error of a finite-difference molecule (h = 1e-5): rounding-dominated, eps / h^2"),
                 rounding("results/agreement.csv", "max_abs_difference", 1e-12),
                 rounding("results/agreement.csv", "relative_to_max|max_pointwise_relative"),
                 digits("results/agreement.csv"))),
    Study("model_corpus", (("run.py", "--out", "{results}/corpus.csv"),), 1800, slow_only=True,
          keys=(("results/corpus.csv", ("model",)),),
          rules=(TIMING_ROWS, TIMING,
                 rounding("results/corpus.csv", "max_transform|max_points_m|max_length_m|max_R_m|max_M_rel", 1e-12),
                 Rule("results/corpus.csv", "max_qdd_rel", rtol=1e-3, atol=1e-12, reason="relative difference of the "
                      "accelerations: rounding, or OpenSim's velocity-term defect (~1e-3) on Rajagopal-type knees"),
                 Rule("results/corpus.csv", "coriolis_vs_christoffel_rel", atol=1e-8,
                      reason="central differences of M(q) (~5e-10)")),
          note="needs the corpus (extracted from the git mirrors to the temp folder): --slow"),
    Study("gait_pipeline", (("run.py", "--out", "{results}"),), 15, slow_only=True,
          rules=(TIMING, rounding("results/*.csv", ".*max_diff.*|.*residual.*", 1e-8)),
          note="needs opensim-models' Gait10dof18musc files (the git mirror, or run.py --pipeline DIR): --slow"),
    Study("inverse_kinematics", (("run.py", "--out", "{results}"),), 240, slow_only=True,
          keys=(("results/inverse_kinematics.csv", ("trial",)),),
          rules=(TIMING, Rule("results/*.csv", ".*_over_package", ignore=True, reason=WALL_TIME),
                 Rule("results/*.csv", "max_diff_.*|opensim_objective_above_.*|marker_rms_.*|objective_package_.*",
                      rtol=1e-3, atol=1e-6, reason="OpenSim's LBFGS stopping point and the package's 1e-10 steps")),
          note="needs opensim-models' pipelines (the git mirror, or run.py --models DIR): --slow"),
    Study("muscle_driven", (("run.py", "--out", "{results}"),), 120,
          rules=(TIMING_ROWS, TIMING, integrated_states("results/states_*.csv"),
                 Rule("results/*.csv", "worst_.*|path_length_mismatch_muscle", ignore=True,
                      reason="where a difference at the integrators' error level peaks: ties between muscles"),
                 Rule("results/*.csv", "package_rhs_evaluations", rtol=0.05,
                      reason="step counts of an adaptive integrator: a rounding-level change moves the steps"),
                 Rule("results/*.csv", r"max_abs_.*|package_self_error_rad|max_path_length_mismatch_m", rtol=0.1,
                      atol=1e-10, reason="differences between two integrations at accuracy 1e-9..1e-10 (and the "
                      "trapezoidal check of the paths): their size, not their digits")),
          note="OpenSim's Manager on MoBL with 33 muscles at accuracy 1e-9 takes about 65 s of the 110 s"),
    Study("newton_euler", (("double_pendulum_opensim.py", "--out", "{results}"),
                           ("notebook_vs_equation.py", "--out", "{results}"),
                           ("foot_shank_opensim.py", "--out", "{results}")), 15,
          rules=(TIMING_ROWS, TIMING, integrator_error("results/double_pendulum_opensim.csv", ".*energy_drift_J"),
                 rounding("results/foot_shank_opensim.csv", "max_rel_diff.*"),
                 Rule("results/foot_shank_opensim.csv", "opensim_udot_error", rtol=1e-2,
                      reason="OpenSim's accelerations against ours at 1e-10..1e-12: rounding of its solver"),
                 integrator_error("results/notebook_vs_equation.csv", "equation|code"))),
    Study("passive_swing", (("run_swing.py", "--out", "{results}"),), 30,
          rules=(TIMING_ROWS, TIMING, integrated_states("results/trajectories.csv"),
                 Rule("results/agreement.csv", rtol=0.1, reason="errors of the integrations against the reference "
                      "(OpenSim's Manager at 1e-8..1e-12, DAE, ODE): their size, not their digits"),
                 Rule("results/constraint_errors.csv", atol=1e-11, reason="constraint errors |g| of the "
                      "integrations, at rounding level"),
                 integrator_error("results/dae_drift_nonlinear_coupler.csv", ".*max_abs_g"),
                 Rule("results/summary.csv", "value", rtol=0.1, atol=1e-11, reason="errors, constraint errors and "
                      "step counts of the integrations: their size, not their digits"))),
    Study("planar_chain", (("verify_closed_forms.py", "--out", "{results}"), ("finger.py", "--out", "{results}"),
                           ("leg.py", "--out", "{results}")), 25,
          rules=(Rule("results/timing.csv", ignore=True, reason=WALL_TIME), TIMING_ROWS, TIMING,
                 rounding("results/agreement.csv", "max_rel_diff"))),
    Study("sensitivity", (("run.py", "--out", "{results}"),), 50, compared=("results", "figures"),
          keys=(("results/summary_by_pose.csv.gz", ("muscle", "swept_coordinate", "swept_value_deg_or_mm")),
                ("results/spread_by_muscle.csv", ("muscle", "swept_coordinate"))),
          rules=(TIMING_ROWS, TIMING,
                 Rule("results/run.json", "workers|machine", ignore=True, reason="machine, not results"),
                 rounding("results/*.csv*", ".*_m", 1e-14))),
    Study("shoulder_rhythm", (("run.py", "--out", "{results}"), ("fitted_rhythm.py", "--out", "{results}/fitted")),
          35, rules=(Rule("results/grid_model.txt", "number_1", ignore=True, reason=WALL_TIME),
                      Rule("results/opensim_agreement*.csv", "opensim_minus_dL_dq|minus_dL_dq_difference|"
                           "max_diff_vs_minus_dL_dq", atol=1e-8,
                           reason="central difference of OpenSim's lengths (h = 1e-6): their rounding "
                                  "(1e-16..1e-15 m) / h"),
                      rounding("results/opensim_agreement*.csv", "length_difference|max_length_difference"),
                      rounding("results/*changes*.csv", ".*_m"),
                      Rule("results/fitted/opensim_accelerations*.csv", ".*_qddot_difference", atol=1e-9,
                           reason="OpenSim's accelerations against the package's: rounding of its coupled-constraint "
                                  "solve (1e-11 rad/s^2)"),
                      Rule("results/fitted/grid.txt", "number_3", ignore=True, reason=WALL_TIME), TIMING_ROWS, TIMING),
          note="derive_spartacus.py (data/ from the Spartacus repository) is not re-run: it needs that repository"),
    Study("shoulder_tracking", (("run_tracking.py", "--out", "{results}"),), 90,
          rules=(TIMING_ROWS, TIMING, integrated_states("results/tracking_states.csv"),
                 integrated_states("results/shoulder_tracking_states.sto"),
                 rounding("results/so_comparison.csv", "opensim_.*_minus_package_.*"),
                 rounding("results/tracking_errors.csv", ".*", 1e-12),
                 Rule("results/summary.csv", "value", rtol=1e-3, atol=1e-12,
                      reason="errors and residuals of integrations and optimisations (tracking errors, max|tau - "
                             "ID|, static optimisation residuals): their size, not their last digits"))),
    Study("smooth_paths", (("run.py", "--out", "{results}/arm26"),
                           ("run.py", "{models}/mobl_arms_holzbaur.osim", "--coordinate", "elbow_flexion",
                            "--out", "{results}/mobl_arms_holzbaur"),
                           ("run.py", "{models}/mobl_arms_holzbaur.osim", "--coordinate", "pro_sup",
                            "--out", "{results}/mobl_arms_holzbaur_pro_sup"),
                           ("run.py", "{models}/mobl_arms_holzbaur.osim", "--coordinate", "shoulder_elv",
                            "--out", "{results}/mobl_arms_holzbaur_shoulder_elv"),
                           ("run.py", "models/shoulder3d/shoulder3d.osim", "--coordinate", "shoulder_elv",
                            "--out", "{results}/shoulder3d"),
                           ("hint_sides.py", "--out", "{results}")), 150,
          rules=(TIMING, Rule("results/corpus/*", ignore=True, reason="corpus.py needs the model corpus: not re-run"),
                 Rule("results/*/sweep.csv", ".*minus_dLdq", atol=1e-9,
                      reason="central differences of an iterative path solver's length (h = 1e-6 rad): "
                             "rounding-level changes of L move them by ~1e-10"),
                 Rule("results/*/sweep.csv", ".*_[LR]$", atol=1e-12,
                      reason="lengths and moment arms of an iterative path solver (m): rounding level"),
                 Rule("results/*/summary.csv", r".*R\+dL/dq.*", atol=1e-6,
                      reason="the same central differences, in mm"),
                 Rule("results/*/summary.csv", ".*_mm.*", atol=1e-9,
                      reason="largest steps and differences of the solver's lengths (mm): rounding level")),
          note="corpus.py (needs the model corpus, ~15 min) and geodesic_timing.py (wall times) are not re-run"),
    Study("stale_cache", (("run.py", "--out", "{results}"),), 5, rules=(TIMING_ROWS, TIMING)),
)


# -- reading ----------------------------------------------------------------------------------------------------


def _text(path: Path) -> str:
    if path.name.endswith(".gz"):
        with gzip.open(path, "rt") as f:
            return f.read()
    return path.read_text()


def read_table(path: Path) -> tuple[str, pd.DataFrame]:
    """(header text, table of strings) of a CSV or an OpenSim .sto/.mot (header up to ``endheader``)."""
    text = _text(path)
    header = ""
    if path.suffix in (".sto", ".mot"):
        head, sep, body = text.partition("endheader\n")
        if not sep:
            raise ValueError(f"{path}: no 'endheader' line")
        header, text = head, body
        table = pd.read_csv(io.StringIO(text), sep=r"\s+", dtype=str, keep_default_na=False)
    else:
        table = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    return header, table


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:inf|nan)\b")


def text_as_table(text: str) -> pd.DataFrame:
    """A text file as one row: the text with numbers replaced by ``#`` and each number (``number_<k>``)."""
    numbers = _NUMBER.findall(text)
    cells = {"text": _NUMBER.sub("#", text)}
    cells.update({f"number_{k}": v for k, v in enumerate(numbers)})
    return pd.DataFrame([cells], dtype=str)


def json_as_table(text: str) -> pd.DataFrame:
    """A JSON document as one row: one column per leaf (``a.b.0``)."""
    flat: dict[str, str] = {}

    def walk(v, key):
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, f"{key}.{k}" if key else str(k))
        elif isinstance(v, list):
            for k, x in enumerate(v):
                walk(x, f"{key}.{k}" if key else str(k))
        else:
            flat[key or "value"] = json.dumps(v) if not isinstance(v, str) else v
    walk(json.loads(text), "")
    return pd.DataFrame([flat], dtype=str)


def load(path: Path) -> tuple[str, pd.DataFrame]:
    name = path.name
    if name.endswith(".json"):
        return "", json_as_table(path.read_text())
    if name.endswith(".txt"):
        return "", text_as_table(path.read_text())
    return read_table(path)


# -- comparing --------------------------------------------------------------------------------------------------


@dataclass
class FileResult:
    file: str
    status: str  # same | changed | ignored | missing | extra | error
    loosened: bool = False  # some cells were equal only under a looser rule
    compared: int = 0  # cells compared as numbers or text
    worst: float = 0.0  # worst relative difference of a compared number
    where: str = ""  # column (and row) of the worst difference, or what differs
    notes: list[str] = field(default_factory=list)


def _as_float(values: pd.Series) -> np.ndarray | None:
    if len(values) == 0:
        return None
    v = pd.to_numeric(values.str.strip().replace("", "nan"), errors="coerce")
    blank = values.str.strip().isin(["", "nan", "NaN"])
    if v.isna().to_numpy()[~blank.to_numpy()].any():
        return None
    return v.to_numpy(dtype=float)


def relative_difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| / max(|a|, |b|), 0 where both are equal (zeros, infinities and NaNs included)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        d = np.abs(a - b) / np.maximum(np.abs(a), np.abs(b))
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    d = np.where(same, 0.0, d)
    return np.where(np.isnan(d), np.inf, d)  # NaN on one side only, or inf against a number


def rule_for(rules, file: str, column: str, row: str = "") -> Rule:
    for r in rules:
        if fnmatch.fnmatch(file, r.files) and re.fullmatch(r.columns, column) and \
                (not r.rows or re.search(r.rows, row)):
            return r
    return Rule("*")


def _row_texts(table: pd.DataFrame) -> list[str]:
    """Each row's text cells joined with ' | ' (what a Rule's ``rows`` regex is searched in)."""
    numeric = {c for c in table.columns if _as_float(table[c].astype(str)) is not None}
    text_cols = [c for c in table.columns if c not in numeric]
    return [" | ".join(map(str, r)) for r in table[text_cols].itertuples(index=False)] if text_cols \
        else [""] * len(table)


def compare_frames(old: pd.DataFrame, new: pd.DataFrame, file: str, rules=(), keys=()) -> FileResult:
    """Compare two tables of strings cell by cell under ``rules``.  With ``keys`` (column names), rows are matched
    on them rather than on their order: rows on one side only are reported, the common ones compared."""
    res = FileResult(file, "same")
    if list(old.columns) != list(new.columns):
        gone = [c for c in old.columns if c not in new.columns]
        added = [c for c in new.columns if c not in old.columns]
        res.status, res.where = "changed", f"columns differ (removed {gone}, added {added})" if gone or added \
            else "column order differs"
        return res
    if keys:
        keys = list(keys)
        if old.duplicated(keys).any() or new.duplicated(keys).any():
            res.status, res.where = "error", f"the keys {keys} do not identify the rows"
            return res
        o, n = old.set_index(keys), new.set_index(keys)
        gone, added = o.index.difference(n.index), n.index.difference(o.index)
        common = o.index.intersection(n.index)
        if len(gone) or len(added):
            res.status = "changed"
            for what, idx in (("committed only", gone), ("new only", added)):
                if len(idx):
                    res.notes.append(f"{len(idx)} rows {what}, e.g. {', '.join(map(str, idx[:3]))}")
            res.where = f"{len(common)} rows in common, {len(gone)} committed only, {len(added)} new only"
        sub_res = compare_frames(o.loc[common].reset_index(), n.loc[common].reset_index(), file, rules)
        sub_res.notes = res.notes + sub_res.notes
        if res.status == "changed":
            sub_res.status = "changed"
            sub_res.where = res.where + ("; " + sub_res.where if sub_res.where else "")
        return sub_res
    if len(old) != len(new):
        res.status, res.where = "changed", f"{len(old)} rows committed, {len(new)} now"
        return res
    rows = _row_texts(old)
    ignored = set()
    loosened: dict[str, list] = {}  # reason -> [cells, columns, worst]
    for col in old.columns:
        a_s, b_s = old[col].astype(str), new[col].astype(str)
        row_rules = [rule_for(rules, file, col, r) for r in rows]
        use = np.array([not r.ignore for r in row_rules], dtype=bool)
        for r in row_rules:
            if r.ignore:
                ignored.add(f"{col}{' (some rows)' if r.rows else ''}: {r.reason}")
        if not use.any():
            continue
        idx = np.flatnonzero(use)
        a, b = _as_float(a_s[use]), _as_float(b_s[use])
        res.compared += len(idx)
        if a is None or b is None:  # text
            differ = a_s[use].to_numpy() != b_s[use].to_numpy()
            if differ.any():
                i = int(idx[np.argmax(differ)])
                res.status = "changed"
                res.notes.append(f"text differs in {col!r} row {i}: {a_s.iloc[i]!r} -> {b_s.iloc[i]!r}")
            continue
        used = [row_rules[i] for i in idx]
        rtol = np.array([r.rtol for r in used])
        finite = np.abs(a[np.isfinite(a)])
        atol = np.array([r.atol + r.scale * (finite.max() if finite.size else 0.0) for r in used])
        rel = relative_difference(a, b)
        with np.errstate(invalid="ignore"):
            bad = ~((rel == 0) | (np.abs(a - b) <= atol + rtol * np.maximum(np.abs(a), np.abs(b))))
        k = int(np.argmax(rel))
        if rel[k] > res.worst:
            i = int(idx[k])
            res.worst = float(rel[k])
            res.where = f"{col} row {i} ({rows[i][:60]}): {a_s.iloc[i]} -> {b_s.iloc[i]}"
        loose = [(r, x) for r, x, z in zip(used, rel, bad)
                 if not z and x > DEFAULT_RTOL and (r.rtol > DEFAULT_RTOL or r.atol > 0 or r.scale > 0)]
        for r, x in loose:
            entry = loosened.setdefault(r.reason.split(":")[0], [0, set(), 0.0])
            entry[0] += 1
            entry[1].add(col)
            entry[2] = max(entry[2], x)
        if bad.any():
            res.status = "changed"
            j = int(idx[np.argmax(np.where(bad, rel, -1))])
            res.notes.append(f"{col}: {int(bad.sum())} cells above tolerance, e.g. row {j} ({rows[j][:60]}): "
                             f"{a_s.iloc[j]} -> {b_s.iloc[j]}")
    for reason, (n, cols, worst) in loosened.items():
        res.loosened = True
        shown = ", ".join(sorted(cols)[:3]) + (f" and {len(cols) - 3} more" if len(cols) > 3 else "")
        res.notes.append(f"{n} cells ({shown}) within a looser rule: {reason}; worst {worst:.1e}")
    if ignored:
        res.notes.append("ignored: " + "; ".join(sorted(ignored)))
    return res


def compare_file(old: Path, new: Path, file: str, rules=(), keys=()) -> FileResult:
    whole = next((r for r in rules if fnmatch.fnmatch(file, r.files) and r.columns == ".*"), None)
    if whole is not None and whole.ignore:
        return FileResult(file, "ignored", notes=[whole.reason])
    try:
        h_old, t_old = load(old)
        h_new, t_new = load(new)
    except Exception as exc:  # a file that cannot be read is a difference, not a crash of the check
        return FileResult(file, "error", where=f"{type(exc).__name__}: {exc}")
    res = compare_frames(t_old, t_new, file, rules, keys)
    if h_old != h_new:
        hres = compare_frames(text_as_table(h_old), text_as_table(h_new), file, rules)
        if hres.status != "same":
            res.status = "changed"
            res.notes.append("header differs: " + "; ".join(hres.notes or [hres.where]))
    return res


def is_table(name: str) -> bool:
    return name.endswith(TABLES)


def is_figure(name: str) -> bool:
    return name.endswith(FIGURES)


def compare_folders(committed: Path, produced: Path, prefix: str, rules=(), keys=()) -> list[FileResult]:
    """Every table of ``committed`` against ``produced``; figures and tables present on one side only."""
    def files(d: Path):
        return {p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file()} if d.is_dir() else set()
    old, new = files(committed), files(produced)
    out = []
    for rel in sorted(old | new):
        name = f"{prefix}/{rel}"
        if not (is_table(rel) or is_figure(rel)):
            continue
        skip = next((r for r in rules if r.ignore and r.columns == ".*" and fnmatch.fnmatch(name, r.files)), None)
        if rel not in new and skip is not None:  # a whole table a rule leaves out (a script not re-run)
            out.append(FileResult(name, "ignored", where=skip.reason))
        elif rel not in new:
            out.append(FileResult(name, "missing", where="committed, not produced by the re-run"))
        elif rel not in old:
            out.append(FileResult(name, "extra", where="produced by the re-run, not committed"))
        elif is_table(rel):
            key = next((k for glob, k in keys if fnmatch.fnmatch(name, glob)), ())
            out.append(compare_file(committed / rel, produced / rel, name, rules, key))
    return out


# -- running ----------------------------------------------------------------------------------------------------


@dataclass
class StudyResult:
    study: Study
    status: str = "same"
    files: list[FileResult] = field(default_factory=list)
    seconds: float = 0.0
    message: str = ""

    @property
    def compared(self) -> int:
        return sum(f.status not in ("missing", "extra", "ignored") for f in self.files)

    @property
    def worst(self) -> float:
        return max((f.worst for f in self.files), default=0.0)


def script_environment() -> dict[str, str]:
    """This checkout first on PYTHONPATH, figures without a display."""
    return dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))


def run_study(study: Study, scratch: Path, timeout: float) -> tuple[bool, str, float]:
    folder = HERE / study.name
    env = script_environment()
    t0 = time.perf_counter()
    for script, *args in study.scripts:
        argv = [a.format(results=scratch / "results", study=scratch, models=MODELS) for a in args]
        cmd = [sys.executable, str(folder / script), *argv]
        log.info("%s: %s", study.name, " ".join(cmd))
        logfile = scratch / f"{Path(script).stem}.log"
        scratch.mkdir(parents=True, exist_ok=True)
        with open(logfile, "w") as f:
            try:
                p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=timeout)
            except subprocess.TimeoutExpired:
                return False, f"{script}: timed out after {timeout:.0f} s (log {logfile})", time.perf_counter() - t0
        if p.returncode != 0:
            tail = logfile.read_text().strip().splitlines()[-1:] or [""]
            return False, f"{script} exited {p.returncode}: {tail[0]} (log {logfile})", time.perf_counter() - t0
    return True, "", time.perf_counter() - t0


SECONDS_FILE = "rerun_seconds.txt"  # the run time of the study's scripts, beside its outputs


def check_study(study: Study, scratch: Path, run: bool, timeout: float, reference: Path = HERE) -> StudyResult:
    res = StudyResult(study)
    if run:
        ok, msg, res.seconds = run_study(study, scratch, timeout)
        (scratch / SECONDS_FILE).write_text(f"{res.seconds:.1f}\n")
        if not ok:
            res.status, res.message = "FAILED", msg
            return res
    elif not scratch.is_dir():
        res.status, res.message = "skipped", f"no outputs in {scratch}"
        return res
    elif (scratch / SECONDS_FILE).is_file():
        res.seconds = float((scratch / SECONDS_FILE).read_text())
    for folder in study.compared:
        res.files += compare_folders(reference / study.name / folder, scratch / folder, folder, study.rules,
                                     study.keys)
    bad = [f for f in res.files if f.status in ("changed", "error", "missing")]
    extra = [f for f in res.files if f.status == "extra"]
    res.status = "CHANGED" if bad else ("extra files" if extra else
                                        "same under rules" if any(f.loosened for f in res.files) else "same")
    for f in res.files:
        level = logging.WARNING if f.status in ("changed", "error", "missing", "extra") else logging.DEBUG
        log.log(level, "%s %s: %s %s %s", study.name, f.file, f.status, f.where, "; ".join(f.notes))
    return res


# Each benchmark once, small, to show it runs (its ratios are wall times: not compared).
BENCHMARKS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("bench_import.py", ()), ("bench_kinematics.py", ()), ("bench_planar_chain.py", ()),
    ("bench_closed_chains.py", ()), ("bench_andrews.py", ("--repeat", "1")),
    ("bench_moment_arms.py", ("--repeat", "1")),
    ("bench_dynamics.py", ("--t-end", "0.2", "--accuracies", "1e-8")), ("bench_muscle_driven.py", ()),
    ("bench_ode_vs_dae.py", ("--repeat", "1")), ("bench_fit_paths.py", ("--frames", "10", "--samples-per-frame", "5")),
    ("bench_batch.py", ("--variants", "4")), ("bench_main_job.py", ()), ("bench_path_kernel.py", ()))


def run_benchmarks(scratch: Path, timeout: float) -> list[tuple[str, str, int | str, float, str]]:
    """(script, arguments, exit status, seconds, last line of output) of every benchmarks/*.py."""
    folder = ROOT / "benchmarks"
    known = dict(BENCHMARKS)
    on_disk = sorted(p.name for p in folder.glob("bench_*.py"))
    for name in on_disk:
        if name not in known:
            log.warning("benchmarks/%s is not in rerun.py's BENCHMARKS: run without arguments", name)
    env = script_environment()
    scratch.mkdir(parents=True, exist_ok=True)
    rows = []
    with Progress("benchmarks", len(on_disk), unit="benchmark") as bar:
        for name in on_disk:
            args = known.get(name, ())
            logfile = scratch / f"{Path(name).stem}.log"
            t0 = time.perf_counter()
            with open(logfile, "w") as f:
                try:
                    rc = subprocess.run([sys.executable, str(folder / name), *args], cwd=ROOT, env=env, stdout=f,
                                        stderr=subprocess.STDOUT, timeout=timeout).returncode
                except subprocess.TimeoutExpired:
                    rc = "timeout"
            lines = [x for x in logfile.read_text().splitlines() if x.strip()]
            rows.append((name, " ".join(args), rc, time.perf_counter() - t0, lines[-1].strip() if lines else ""))
            if rc != 0:
                log.warning("benchmarks/%s exited %s (log %s)", name, rc, logfile)
            bar.advance()
    return rows


# -- reporting --------------------------------------------------------------------------------------------------


def provenance(compare_only: Path | None) -> list[tuple[str, str]]:
    def git(*args):
        try:
            return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                                  check=True).stdout.strip()
        except Exception:
            return "?"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    versions = []
    for mod in ("numpy", "scipy", "pandas", "matplotlib", "numba", "opensim"):
        try:
            m = __import__(mod)
            versions.append(f"{mod} {getattr(m, '__version__', '?')}")
        except Exception:
            versions.append(f"{mod} absent")
    from osim_emb import __version__
    rows = [("commit", f"{git('rev-parse', '--short=12', 'HEAD')} ({git('rev-parse', '--abbrev-ref', 'HEAD')})"
             + (" with uncommitted changes" if dirty and dirty != "?" else "")),
            ("date", _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
            ("python", platform.python_version()), ("osim_emb", __version__), ("versions", ", ".join(versions)),
            ("machine", f"{platform.machine()}, {os.cpu_count()} cores")]
    if compare_only is not None:
        rows.append(("mode", f"compared the outputs in {compare_only} (made earlier by the same scripts and "
                                     "arguments, e.g. with --keep); not re-run"))
    return rows


def fmt(x: float) -> str:
    return "0" if x == 0 else ("inf" if math.isinf(x) else f"{x:.1e}")


def markdown(results: list[StudyResult], prov, command: str, benchmarks=()) -> str:
    lines = ["# Re-run of the validation studies", "",
             f"`{command}`", "", "| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in prov] + [
        "", "| study | tables compared | worst relative difference | status | run time (s) | note |",
        "|---|---:|---:|---|---:|---|"]
    for r in results:
        lines.append(f"| {r.study.name} | {r.compared} | {fmt(r.worst)} | {r.status} | "
                     f"{f'{r.seconds:.0f}' if r.seconds else '-'} | {(r.message or r.study.note).replace('|', '/')} |")
    details = [(r, f) for r in results for f in r.files if f.status != "same" or f.notes]
    if details:
        lines += ["", "## Files that differ, and what was not compared", "",
                  "| study | file | status | worst relative difference | where / notes |", "|---|---|---|---:|---|"]
        for r, f in details:
            where = "; ".join(([f.where] if f.where and f.status != "same" else []) + f.notes).replace("|", "/")
            lines.append(f"| {r.study.name} | {f.file} | {f.status} | {fmt(f.worst)} | {where} |")
    if benchmarks:
        lines += ["", "## Benchmarks (run once each, small; their ratios are wall times and not compared)", "",
                  "| benchmark | arguments | exit status | seconds | last line of its output |",
                  "|---|---|---|---:|---|"]
        lines += [f"| {n} | {a} | {rc} | {sec:.0f} | {last[:140].replace('|', '/')} |"
                  for n, a, rc, sec, last in benchmarks]
    lines += ["", "Tolerance: |a - b| <= atol + rtol max(|a|, |b|), rtol = 1e-9 and atol = 0 unless a rule in "
              "`validation/rerun.py` (STUDIES) says otherwise, with its reason.  Status *same*: every number within "
              "1e-9; *same under rules*: some only within a study's looser rule (listed above); *CHANGED*: some "
              "above tolerance, or a table missing.", ""]
    return "\n".join(lines)


def table(results: list[StudyResult]) -> str:
    rows = [("study", "files", "worst rel. diff", "status")] + [
        (r.study.name, str(r.compared), fmt(r.worst), r.status + (f": {r.message}" if r.message else ""))
        for r in results]
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{a:<{w[0]}}  {b:>{w[1]}}  {c:>{w[2]}}  {d}" for a, b, c, d in rows)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--studies", default="", help="comma-separated study names (default: all; 'none': none)")
    ap.add_argument("--quick", action="store_true", help="skip the studies that take more than about a minute")
    ap.add_argument("--slow", action="store_true", help="also the model corpus (about 15 min)")
    ap.add_argument("--keep", type=Path, help="write the outputs here (a folder per study) and keep them")
    ap.add_argument("--compare-only", type=Path, metavar="DIR",
                    help="do not run: compare the outputs an earlier run left in DIR/<study>/")
    ap.add_argument("--against", type=Path, default=HERE, metavar="DIR",
                    help="compare with DIR/<study>/results (e.g. another checkout's validation/ after running its "
                         "scripts) instead of the committed results")
    ap.add_argument("--report", type=Path, default=HERE / "rerun_report.md", help="Markdown report ('-': none)")
    ap.add_argument("--benchmarks", action="store_true", help="also run each benchmarks/*.py once (small)")
    ap.add_argument("--fresh-opensim", action="store_true",
                    help="an empty cache of OpenSim's reference values (default: the harness's cache, "
                         "$OSIM_EMB_CACHE, keyed by the model file's sha256 and the configurations)")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per script")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")

    known = {s.name: s for s in STUDIES}
    on_disk = sorted(p.name for p in HERE.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    for name in on_disk:
        if name not in known:
            logging.warning("validation/%s is not in rerun.py's STUDIES: not re-run", name)
    if args.studies == "none":
        chosen = []
    elif args.studies:
        names = [s.strip() for s in args.studies.split(",") if s.strip()]
        unknown = [n for n in names if n not in known]
        if unknown:
            ap.error(f"unknown studies {unknown}; known: {', '.join(known)}")
        chosen = [known[n] for n in names]
    else:
        chosen = [s for s in STUDIES if (args.slow or not s.slow_only) and not (args.quick and s.seconds > 60)]
        left = [s.name for s in STUDIES if s not in chosen]
        if left:
            logging.warning("not re-run: %s (%s)", ", ".join(left), "--quick / --slow" if args.quick else "--slow")

    base = args.compare_only or args.keep or Path(tempfile.mkdtemp(prefix="osim_emb_rerun_"))
    if args.fresh_opensim:
        os.environ["OSIM_EMB_CACHE"] = tempfile.mkdtemp(prefix="osim_emb_rerun_cache_")
    marker = base / "rerun_opensim.txt"  # where OpenSim's values came from, for a later --compare-only
    if args.compare_only is None:
        opensim_source = "computed afresh (--fresh-opensim)" if args.fresh_opensim else \
            "from the harness's cache where the same model file and configurations were computed before " \
            "(--fresh-opensim to recompute)"
        base.mkdir(parents=True, exist_ok=True)
        marker.write_text(opensim_source + "\n")
    else:
        opensim_source = marker.read_text().strip() if marker.is_file() else ""
    results = []
    with Progress("studies", len(chosen), unit="study folder") as bar:
        for s in chosen:
            scratch = base / s.name
            if args.compare_only is None and scratch.exists():
                shutil.rmtree(scratch)
            results.append(check_study(s, scratch, run=args.compare_only is None, timeout=args.timeout,
                                       reference=args.against))
            bar.advance()
    bench = run_benchmarks(base / "benchmarks", args.timeout) if args.benchmarks else []
    if args.compare_only is None and args.keep is None:
        shutil.rmtree(base, ignore_errors=True)

    print(table(results))
    for n, a, rc, sec, _ in bench:
        print(f"benchmarks/{n} {a}: exit {rc}, {sec:.0f} s")
    if str(args.report) != "-":
        command = "python validation/rerun.py " + " ".join(argv if argv is not None else sys.argv[1:])
        prov = provenance(args.compare_only)
        if opensim_source:
            prov.append(("OpenSim reference values", opensim_source))
        if args.against.resolve() != HERE:
            prov.append(("reference", f"{args.against} (not the committed results)"))
        args.report.write_text(markdown(results, prov, command.strip(), bench))
        print(f"wrote {args.report}")
    return 1 if any(r.status in ("CHANGED", "FAILED") for r in results) or any(b[2] != 0 for b in bench) else 0


if __name__ == "__main__":
    sys.exit(main())
