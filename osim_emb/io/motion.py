"""OpenSim motion and storage files (.mot, .sto) read and written with pandas.

A file is a header ending with ``endheader`` (``name=value`` lines such as
``inDegrees=yes``), then a tab-separated table whose first column is ``time``.
Columns may be coordinate names or OpenSim 4 state paths
(``/jointset/elbow/elbow_flexion/value``, ``.../speed``).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from .model_json import write_atomically

__all__ = ["read_motion", "write_motion", "coordinates_from_motion"]


def read_motion(path: str | Path) -> tuple[pd.DataFrame, dict[str, str]]:
    """(table, header) of a .mot/.sto file; the table has a ``time`` column."""
    text = Path(path).read_text()
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
        raise ValueError(f"{path}: no 'endheader' line: not an OpenSim motion/storage file")
    body = "\n".join(lines[end + 1:])
    table = pd.read_csv(io.StringIO(body), sep=r"\s+", engine="python")
    table.columns = [str(c).strip() for c in table.columns]
    if "time" not in table.columns:
        raise ValueError(f"{path}: the table has no 'time' column (columns: {list(table.columns)[:6]}...)")
    return table, header


def write_motion(path: str | Path, table: pd.DataFrame, *, name: str | None = None, in_degrees: bool = False,
                 protect: Sequence[str | Path] = ()) -> None:
    """Write a table with a ``time`` column as an OpenSim .mot/.sto file (atomically)."""
    if "time" not in table.columns:
        raise ValueError("the table needs a 'time' column")
    cols = ["time"] + [c for c in table.columns if c != "time"]
    t = table[cols]
    head = [name or Path(path).stem, "version=1", f"nRows={len(t)}", f"nColumns={len(cols)}",
            f"inDegrees={'yes' if in_degrees else 'no'}", "endheader"]
    body = t.to_csv(sep="\t", index=False, float_format="%.12g", lineterminator="\n")
    write_atomically(path, "\n".join(head) + "\n" + body, protect=protect)


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


def coordinates_from_motion(model: Any, table: pd.DataFrame, header: dict[str, str] | None = None,
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(time (T,), q (T, n_q), qdot (T, n_q) or None) of the model's generalized coordinates in radians/metres."""
    header = header or {}
    in_deg = header.get("inDegrees", "no").lower() == "yes"
    time = table["time"].to_numpy(dtype=float)
    q = np.empty((len(table), model.n_q))
    qd = np.empty((len(table), model.n_q))
    have_speed = True
    for k, c in enumerate(model.coordinates):
        col = _column_for(table.columns, c.name)
        if col is None:
            raise ValueError(f"the motion has no column for coordinate {c.name!r}")
        v = table[col].to_numpy(dtype=float)
        if in_deg and c.motion_type == "rotational":
            v = np.radians(v)
        q[:, k] = v
        scol = _column_for(table.columns, c.name, "speed")
        if scol is None:
            have_speed = False
        else:
            s = table[scol].to_numpy(dtype=float)
            qd[:, k] = np.radians(s) if in_deg and c.motion_type == "rotational" else s
    return time, q, (qd if have_speed else None)
