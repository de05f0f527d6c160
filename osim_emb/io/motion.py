"""OpenSim motion and storage files (.mot, .sto) read and written with pandas.

A file is a header ending with ``endheader`` (``name=value`` lines such as
``inDegrees=yes``), then a tab-separated table whose first column is ``time``.
Columns may be coordinate names or OpenSim 4 state paths
(``/jointset/elbow/elbow_flexion/value``, ``.../speed``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from osim_emb.core.speeds import SpeedMapError, angular_velocity_joints, rates_from_speeds
from osim_emb.io.outputs import write_atomically

log = logging.getLogger(__name__)

__all__ = ["MotionFileError", "read_motion", "write_motion", "coordinates_from_motion", "as_opensim_states",
           "from_opensim_states"]


class MotionFileError(ValueError):
    """A motion file that cannot be used; the message names the file, and the row (line) and column if known."""

    def __init__(self, path: Any, reason: str, line: int | None = None, column: str | None = None):
        where = f"{path}:{line}" if line else str(path)
        col = f" column {column!r}:" if column else ""
        super().__init__(f"{where}:{col} {reason}")


def read_motion(path: str | Path) -> tuple[pd.DataFrame, dict[str, str]]:
    """Read an OpenSim motion or storage file (.mot/.sto).

    Every cell must be a finite number and time strictly increasing, and the rows as many as the header's ``nRows``
    says (when it says); errors name file, line and column.

    Parameters
    ----------
    path : str or pathlib.Path
        The .mot/.sto file (a header ending in ``endheader``, then a row of column labels and the rows).

    Returns
    -------
    table : pandas.DataFrame
        One column per label, ``time`` in seconds; values as in the file (degrees when the header says
        ``inDegrees=yes``: :func:`coordinates_from_motion` converts them).  ``table.attrs['lines']`` holds
        the file line of each row.
    header : dict of str
        The header's ``key=value`` lines (and ``name``, the first line).

    Raises
    ------
    MotionFileError
        The file is not a motion, a cell is not a finite number, or rows are missing (fewer than ``nRows``, a row
        cut short); the message names file, line and column.

    Examples
    --------
    >>> import pandas as pd, osim_emb as oe
    >>> oe.write_motion("swing.sto", pd.DataFrame({"time": [0.0, 0.1], "elbow": [10.0, 20.0]}), in_degrees=True)
    >>> table, header = oe.read_motion("swing.sto")
    >>> header["inDegrees"], table["elbow"].tolist()
    ('yes', [10.0, 20.0])
    """
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise MotionFileError(path, f"cannot read the file: {err.strerror or err}") from None
    lines = text.splitlines()
    header: dict[str, str] = {}
    end = None
    for i, line in enumerate(lines):
        s = line.strip()
        if s.lower() == "endheader":
            end = i
            break
        if "=" in s:
            k, _, v = s.partition("=")
            header[k.strip()] = v.strip()
        elif s and i == 0:
            header["name"] = s
    if end is None:
        raise MotionFileError(path, "no 'endheader' line: not an OpenSim motion/storage file")
    numbered = [(k + 1, ln) for k, ln in enumerate(lines) if k > end and ln.strip()]
    if not numbered:
        raise MotionFileError(path, "no column labels after 'endheader'", end + 1)
    label_line, labels = numbered[0]
    labels = labels.strip()  # a tab after the last label (OpenSim's writers leave one) names no column
    columns = [c.strip() for c in (labels.split("\t") if "\t" in labels else labels.split())]
    rows = numbered[1:]
    if not rows:
        raise MotionFileError(path, "the table has no rows", label_line)
    declared = header.get("nRows", "").strip()
    if declared.isdigit() and int(declared) != len(rows):
        raise MotionFileError(path, f"the header says nRows={declared}, {len(rows)} rows read"
                                    + (" (a truncated file?)" if len(rows) < int(declared) else ""))
    if "time" not in columns:
        raise MotionFileError(path, f"the table has no 'time' column (columns: {columns[:6]}...)", label_line)
    dup = sorted({c for c in columns if columns.count(c) > 1})
    if "time" in dup:
        raise MotionFileError(path, "two 'time' columns", label_line)
    if dup:  # e.g. an IK file with force data columns of both feet under one name: OpenSim's Storage uses the first
        log.warning("%s:%s: duplicate column labels %s: the first of each is kept (as OpenSim's Storage reads it); "
                    "a coordinate among them is refused where it is used", path, label_line, dup)
    data = np.empty((len(rows), len(columns)))
    for r, (line_no, ln) in enumerate(rows):
        cells = ln.split()
        if len(cells) != len(columns):
            cut = " (a truncated file?)" if r == len(rows) - 1 and len(cells) < len(columns) else ""
            raise MotionFileError(path, f"row has {len(cells)} values, the labels {len(columns)}{cut}", line_no)
        for c, cell in enumerate(cells):
            try:
                v = float(cell)
            except ValueError:
                raise MotionFileError(path, f"not a number: {cell!r}", line_no, columns[c]) from None
            if not np.isfinite(v):
                raise MotionFileError(path, f"non-finite value {cell!r}", line_no, columns[c])
            data[r, c] = v
    first = [k for k, c in enumerate(columns) if columns.index(c) == k]
    table = pd.DataFrame(data[:, first], columns=[columns[k] for k in first])
    t = table["time"].to_numpy()
    bad = np.flatnonzero(np.diff(t) <= 0)
    if bad.size:
        r = int(bad[0]) + 1
        raise MotionFileError(path, f"time must increase strictly: {t[r]:.9g} follows {t[r - 1]:.9g}",
                              rows[r][0], "time")
    table.attrs["lines"] = [n for n, _ in rows]
    table.attrs["path"] = str(path)
    table.attrs["duplicate_columns"] = dup
    return table, header


def write_motion(path: str | Path, table: pd.DataFrame, *, name: str | None = None, in_degrees: bool = False,
                 protect: Sequence[str | Path] = ()) -> None:
    """Write a table with a ``time`` column as an OpenSim .mot/.sto file (atomically: all or nothing); a path
    ending in ``.csv`` gets a plain comma-separated table instead (the same column labels, no OpenSim header).

    Parameters
    ----------
    path : str or pathlib.Path
        The file to write (.mot or .sto; .csv for a plain table).
    table : pandas.DataFrame
        Columns ``time`` (seconds; written first) and one per quantity, in the units the header states
        (radians and metres, or degrees for rotational coordinates with ``in_degrees``).
    name : str, optional
        The header's first line (default: the file's stem).
    in_degrees : bool, default False
        Write ``inDegrees=yes`` (the values must then be in degrees; they are written as given).
    protect : sequence of paths, optional
        Files that must not be overwritten (a command's inputs).

    Examples
    --------
    >>> import numpy as np, pandas as pd, osim_emb as oe
    >>> t = np.linspace(0.0, 1.0, 11)
    >>> oe.write_motion("elbow.mot", pd.DataFrame({"time": t, "r_elbow_flex": 90 * t}), in_degrees=True)
    >>> oe.read_motion("elbow.mot")[0].shape
    (11, 2)
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"write_motion takes a pandas DataFrame with a 'time' column, got {type(table).__name__}")
    if "time" not in table.columns:
        raise ValueError("the table needs a 'time' column")
    text = [c for c in table.columns if not pd.api.types.is_numeric_dtype(table[c])]
    if text:
        raise ValueError(f"{path}: column(s) {', '.join(map(repr, text[:5]))} are not numbers; a motion file holds "
                         "numbers only")
    time = table["time"].to_numpy(dtype=float)
    if not np.all(np.isfinite(time)) or np.any(np.diff(time) <= 0):
        finite = np.isfinite(time)
        k = int(np.argmax(~finite)) if not finite.all() else int(np.argmax(np.diff(time) <= 0)) + 1
        raise ValueError(f"{path}: time must be finite and increase strictly (row {k}: {float(time[k])} after "
                         f"{float(time[k - 1]) if k else None}); OpenSim's tables refuse it")
    cols = ["time"] + [c for c in table.columns if c != "time"]
    t = table[cols]
    if Path(path).suffix.lower() == ".csv":
        body = t.to_csv(index=False, float_format="%.12g", lineterminator="\n", na_rep="NaN")
        write_atomically(path, body, protect=protect)
        return
    head = [name or Path(path).stem, "version=1", f"nRows={len(t)}", f"nColumns={len(cols)}",
            f"inDegrees={'yes' if in_degrees else 'no'}", "endheader"]
    body = t.to_csv(sep="\t", index=False, float_format="%.12g", lineterminator="\n", na_rep="NaN")
    write_atomically(path, "\n".join(head) + "\n" + body, protect=protect)


def write_control_set(path: str | Path, table: pd.DataFrame, *, protect: Sequence[str | Path] = ()) -> None:
    """OpenSim's ControlSet of a table's columns (one ControlLinear per column but ``time``, a node per row, OpenSim's
    defaults otherwise), as OpenSim's StaticOptimization prints its activations (``..._controls.xml``) for the
    forward tools (Forward, CMC); written atomically."""
    times = table["time"].to_numpy(dtype=float)
    parts = ['<?xml version="1.0" encoding="UTF-8" ?>\n<OpenSimDocument Version="40000">\n\t<ControlSet '
             'name="Control Set">\n\t\t<objects>\n']
    for name in (c for c in table.columns if c != "time"):
        nodes = "".join(f"\t\t\t\t\t<ControlLinearNode>\n\t\t\t\t\t\t<t>{t!r}</t>\n\t\t\t\t\t\t<value>{v!r}</value>\n"
                        "\t\t\t\t\t</ControlLinearNode>\n"
                        for t, v in zip(times.tolist(), table[name].to_numpy(dtype=float).tolist()))
        parts.append(f'\t\t\t<ControlLinear name="{name}">\n\t\t\t\t<is_model_control>true</is_model_control>\n'
                     "\t\t\t\t<extrapolate>true</extrapolate>\n\t\t\t\t<default_min>0.02</default_min>\n"
                     "\t\t\t\t<default_max>1</default_max>\n\t\t\t\t<filter_on>false</filter_on>\n"
                     f"\t\t\t\t<use_steps>false</use_steps>\n\t\t\t\t<x_nodes>\n{nodes}\t\t\t\t</x_nodes>\n"
                     "\t\t\t\t<min_nodes />\n\t\t\t\t<max_nodes />\n\t\t\t\t<kp>100</kp>\n\t\t\t\t<kv>20</kv>\n"
                     "\t\t\t</ControlLinear>\n")
    parts.append("\t\t</objects>\n\t\t<groups />\n\t</ControlSet>\n</OpenSimDocument>\n")
    write_atomically(path, "".join(parts), protect=protect)


def as_opensim_states(model: Any, table: pd.DataFrame) -> pd.DataFrame:
    """A simulation table (:func:`osim_emb.simulate`, :func:`osim_emb.simulate_muscles`) with OpenSim 4's labels,
    so that the file is a states file (OpenSim's ``StatesTrajectory.createFromStatesTable``, the Analyze tool's
    states): ``NAME`` and ``NAME_u`` of every coordinate in the model's file (generalized, coupled, locked) become
    ``/jointset/JOINT/NAME/value`` and ``.../speed``; a muscle's ``M_activation`` and ``M_fiber_length`` become
    ``/forceset/M/activation`` and ``/forceset/M/fiber_length``; ``M_tendon_force`` (an output, not a state) becomes
    ``/forceset/M|tendon_force``, OpenSim's label of an output.  A quantity that is not a state of that muscle in
    OpenSim is written as its output: the fibre length of a rigid tendon (``ignore_tendon_compliance``), the
    activation without activation dynamics; a DeGrooteFregly2016Muscle's elastic-tendon state is OpenSim's
    ``normalized_tendon_force`` (the tendon force over the maximum isometric force), added beside its fibre length.
    A model without its .osim document (read from JSON) keeps the coordinates' names."""
    doc = getattr(model, "extras", {}).get("document")
    paths = {c.name: f"/jointset/{j.name}/{c.name}" for j in doc.joints for c in j.coordinates} if doc else {}
    states = {m.name: _muscle_states(m.parameters) for m in getattr(model, "muscles", ())}
    force_paths = {f.name: _force_path(f) for f in (doc.forces if doc else ())}
    table = _with_normalized_tendon_forces(model, table)
    renamed = {}
    for col in table.columns:
        base, _, kind = col.rpartition("_")
        if col in paths:
            renamed[col] = paths[col] + "/value"
        elif kind == "u" and base in paths:
            renamed[col] = paths[base] + "/speed"
        else:
            for state in ("normalized_tendon_force", "activation", "fiber_length", "tendon_force"):
                name = col[:-len(state) - 1] if col.endswith("_" + state) else None
                if name in states:
                    renamed[col] = force_paths.get(name, f"/forceset/{name}") + (
                        "/" if state in states[name] else "|") + state
                    break
    out = table.rename(columns=renamed)
    out.attrs = dict(table.attrs)
    return out


def _muscle_states(parameters: Any) -> tuple[str, ...]:
    """The state variables OpenSim gives a muscle of these parameters (none for a path-only unit)."""
    kind = type(parameters).__name__
    if parameters is None or kind == "RigidTendonMuscle":
        return ()
    activation = () if getattr(parameters, "ignore_activation_dynamics", False) else ("activation",)
    if getattr(parameters, "ignore_tendon_compliance", False):
        return activation
    return activation + (("normalized_tendon_force",) if kind == "DeGrooteFregly2016Muscle" else ("fiber_length",))


def _with_normalized_tendon_forces(model: Any, table: pd.DataFrame) -> pd.DataFrame:
    """``M_normalized_tendon_force`` (OpenSim's state) after ``M_tendon_force`` of each elastic-tendon
    DeGrooteFregly2016Muscle."""
    added = {}
    for m in getattr(model, "muscles", ()):
        if "normalized_tendon_force" in _muscle_states(m.parameters) and f"{m.name}_tendon_force" in table:
            added[f"{m.name}_normalized_tendon_force"] = (table[f"{m.name}_tendon_force"]
                                                         / m.parameters.max_isometric_force)
    if not added:
        return table
    out = pd.concat([table, pd.DataFrame(added, index=table.index)], axis=1)
    out.attrs = dict(table.attrs)
    return out


def _force_path(force: Any) -> str:
    """A force's component path in OpenSim 4: ``/forceset/NAME`` in the ForceSet, ``/NAME`` among the model's own
    <components> (e.g. Moco's 2D_gait muscles)."""
    parent = force.element.getparent() if getattr(force, "element", None) is not None else None
    if parent is not None and parent.tag == "components" and parent.getparent() is not None \
            and parent.getparent().tag == "Model":
        return f"/{force.name}"
    return f"/forceset/{force.name}"


def from_opensim_states(table: pd.DataFrame) -> pd.DataFrame:
    """A states table with OpenSim 4's labels (a Manager's or ``simulate``'s file, :func:`read_motion`) with the
    package's column names: ``.../NAME/value`` -> ``NAME``, ``.../NAME/speed`` -> ``NAME_u``,
    ``/forceset/M/STATE`` -> ``M_STATE`` (activation, fiber_length, ...), an output ``/forceset/M|OUTPUT`` ->
    ``M_OUTPUT``; other labels as they are.  The inverse of :func:`as_opensim_states`."""
    renamed = {}
    for col in table.columns:
        if not col.startswith("/"):
            continue
        path, _, output = col.partition("|")
        parts = path.strip("/").split("/")
        if output:
            renamed[col] = f"{parts[-1]}_{output}"
        elif parts[-1] == "value" and len(parts) >= 2:
            renamed[col] = parts[-2]
        elif parts[-1] == "speed" and len(parts) >= 2:
            renamed[col] = parts[-2] + "_u"
        elif parts[0] == "forceset" and len(parts) == 3:
            renamed[col] = f"{parts[1]}_{parts[2]}"
        elif len(parts) == 2 and parts[1] in ("activation", "fiber_length", "normalized_tendon_force"):  # a force among the model's components
            renamed[col] = f"{parts[0]}_{parts[1]}"
    out = table.rename(columns=renamed)
    out.attrs = dict(table.attrs)
    return out


def in_degrees_flag(header: dict, path: Any) -> str:
    """'yes' or 'no' (or the header's unknown value): the header's inDegrees, else OpenSim's rule for a file
    without it -- a .mot file of no version (version < 1, SIMM's motion files) is in degrees (Storage.cpp)."""
    if "inDegrees" in header:
        return header["inDegrees"].strip().lower()
    try:
        version = float(header.get("version", "0").strip() or 0)
    except ValueError:
        version = 0.0
    return "yes" if version < 1 and str(path).lower().endswith(".mot") else "no"


def _column_for(columns: Sequence[str], coordinate: str, kind: str = "value") -> str | None:
    for c in columns:
        if c == coordinate and kind == "value":
            return c
        parts = c.strip("/").split("/")
        if len(parts) >= 2 and parts[-2] == coordinate and parts[-1] == kind:
            return c
    if kind == "speed":
        for c in columns:
            if c in (f"{coordinate}_u", f"{coordinate}_speed"):
                return c
    return None


def coordinates_from_motion(model: Any, table: pd.DataFrame, header: dict[str, str] | None = None, *,
                            range_tolerance: float = 1e-6,
                            outside: str = "error") -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(time (T,), q (T, n_q), qdot (T, n_q) or None) of the model's generalized coordinates in radians/metres.

    The speeds of a states file are OpenSim's: on the rotations of Ball, Free and Ellipsoid joints the angular
    velocity, turned here into the angles' rates (:func:`osim_emb.core.speeds.rates_from_speeds`; a frame in
    gimbal lock is refused).

    ``inDegrees=yes`` converts the coordinates whose motion type is rotational, as OpenSim does (coupled
    coordinates are stored unconverted by OpenSim).  Values outside a coordinate's range by more than
    ``range_tolerance`` are refused with the file, line and column, with a hint when they look like degrees;
    with ``outside="warn"`` they are used as they are and named in a warning (a simulation that left a range)."""
    if outside not in ("error", "warn"):
        raise ValueError(f"outside must be 'error' or 'warn', not {outside!r}")
    header = header or {}
    path = table.attrs.get("path", "<motion>")
    lines = table.attrs.get("lines") or list(range(1, len(table) + 1))
    deg_flag = in_degrees_flag(header, path)
    if deg_flag not in ("yes", "no"):
        raise MotionFileError(path, f"inDegrees must be yes or no, not {header.get('inDegrees')!r}")
    in_deg = deg_flag == "yes"
    time = table["time"].to_numpy(dtype=float)
    q = np.empty((len(table), model.n_q))
    qd = np.empty((len(table), model.n_q))
    have_speed = True
    for k, c in enumerate(model.coordinates):
        col = _column_for(table.columns, c.name)
        if col is None:
            raise MotionFileError(path, f"no column for coordinate {c.name!r} of model {model.name!r}")
        if col in table.attrs.get("duplicate_columns", ()):
            raise MotionFileError(path, f"coordinate {c.name!r} has two columns labelled {col!r}: which one is meant?")
        v = table[col].to_numpy(dtype=float)
        rotational = c.motion_type == "rotational"
        if in_deg and rotational:
            v = np.radians(v)
        lo, hi = c.range
        out = np.flatnonzero((v < lo - range_tolerance) | (v > hi + range_tolerance))
        if out.size:
            r = int(out[0])
            hint = ""
            # degrees read as radians: most values beyond pi (a simulation in radians that passes pi is not)
            if rotational and not in_deg and np.median(np.abs(v)) > np.pi and np.all(
                    (np.radians(v) >= lo - range_tolerance) & (np.radians(v) <= hi + range_tolerance)):
                hint = "; the values look like degrees but the header says inDegrees=no"
            elif c.motion_type == "coupled" and in_deg and np.all(
                    (np.radians(v) >= lo - range_tolerance) & (np.radians(v) <= hi + range_tolerance)):
                hint = ("; a coupled coordinate, which OpenSim does not convert from degrees (only rotational "
                        "ones): the file must give it in radians")
            err = MotionFileError(path, f"coordinate {c.name!r} = {v[r]:.6g} is outside its range "
                                        f"[{lo:.6g}, {hi:.6g}]{hint}", lines[r], col)
            if outside == "error":
                raise err
            log.warning("%s (%d of %d frames outside; used as they are)", err, out.size, len(v))
            q[:, k] = v
        else:
            q[:, k] = np.clip(v, lo, hi)
        scol = _column_for(table.columns, c.name, "speed")
        if scol is None:
            have_speed = False
        else:
            s = table[scol].to_numpy(dtype=float)
            qd[:, k] = np.radians(s) if in_deg and rotational else s
    if have_speed:  # OpenSim's speeds: on Ball, Free and Ellipsoid joints' rotations the angular velocity
        others = {}  # such a joint's angles that are not generalized coordinates (solved from a loop, say)
        for j in angular_velocity_joints(model):
            for name in j.coordinates:
                vcol, scol = _column_for(table.columns, name), _column_for(table.columns, name, "speed")
                if name in model.coordinate_names or vcol is None or scol is None:
                    continue
                rotational = next((d.motion_type for d in model.dependent_coordinates if d.name == name),
                                  "rotational") == "rotational"
                v, s = table[vcol].to_numpy(dtype=float), table[scol].to_numpy(dtype=float)
                others[name] = (np.radians(v), np.radians(s)) if in_deg and rotational else (v, s)
        try:
            qd = rates_from_speeds(model, q, qd, others=others)
        except SpeedMapError as err:
            raise MotionFileError(path, str(err)) from None
    return time, q, (qd if have_speed else None)
