"""Marker trajectories: OpenSim's .trc files (``PathFileType 4 (X/Y/Z)``) and C3D files (read as OpenSim's
C3DFileAdapter reads their markers, through ezc3d: ``pip install 'osim-emb[c3d]'``), positions converted to metres.

Missing samples (empty fields, NaN; in a C3D file a point whose residual is negative) stay NaN: inverse kinematics
leaves such a marker out of that frame, as OpenSim's IK does."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["MarkerFileError", "MarkerTrajectories", "read_markers", "read_trc", "read_c3d", "open_c3d", "c3d_labels", "write_trc",
           "UNITS_IN_METRES"]

#: POINT parameters whose labels name points that are not markers (OpenSim's C3DFileAdapter leaves them out)
C3D_NON_MARKER_GROUPS = ("ANGLES", "FORCES", "MOMENTS", "POWERS", "SCALARS")

#: length units of a .trc header, in metres (OpenSim's Units: mm, cm, m, and their long names)
UNITS_IN_METRES = {"mm": 1e-3, "millimeters": 1e-3, "millimetres": 1e-3, "cm": 1e-2, "centimeters": 1e-2,
                   "centimetres": 1e-2, "m": 1.0, "meters": 1.0, "metres": 1.0}


class MarkerFileError(ValueError):
    """A marker file that cannot be read; the message names the file, the line and the reason."""

    def __init__(self, path, reason: str, line: int | None = None):
        self.path, self.reason, self.line = str(path), reason, line
        super().__init__(f"{path}{f', line {line}' if line else ''}: {reason}")


@dataclass(frozen=True)
class MarkerTrajectories:
    """Marker positions over time: ``positions`` (T, M, 3) in metres, NaN where a marker is missing."""

    path: str
    times: np.ndarray  # (T,) s
    names: tuple[str, ...]
    positions: np.ndarray  # (T, M, 3) m
    units: str  # the file's units (positions are converted to metres)
    rate_hz: float | None = None

    def __post_init__(self):
        if self.positions.shape != (len(self.times), len(self.names), 3):
            raise ValueError(f"positions must have shape ({len(self.times)}, {len(self.names)}, 3), "
                             f"got {self.positions.shape}")

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"{self.path}: no marker {name!r}") from None


def read_markers(path: str | Path) -> MarkerTrajectories:
    """A marker file by its extension: .c3d (:func:`read_c3d`), otherwise .trc (:func:`read_trc`)."""
    return read_c3d(path) if Path(path).suffix.lower() == ".c3d" else read_trc(path)


def open_c3d(path: str | Path, *, force_platforms: bool = False, hint: str = ""):
    """A C3D file read by ezc3d (with its force-platform module's results: ``force_platforms``); a missing ezc3d,
    file or C3D structure refused by name (``hint``: what the user can do instead)."""
    path = Path(path)
    try:
        import ezc3d
    except ImportError:
        raise MarkerFileError(path, f"reading .c3d files needs ezc3d: pip install 'osim-emb[c3d]'{hint}") from None
    if not path.is_file():
        raise MarkerFileError(path, "cannot read: no such file")
    try:
        return ezc3d.c3d(str(path), extract_forceplat_data=force_platforms)
    except Exception as err:  # noqa: BLE001 - ezc3d raises RuntimeError or IOError with its reason
        what = "not a readable C3D file, or its FORCE_PLATFORM parameters are incomplete" if force_platforms else \
            "not a readable C3D file"
        raise MarkerFileError(path, f"{what} ({str(err).strip() or type(err).__name__})") from None


def c3d_labels(group: dict, count: int) -> list[str]:
    """A C3D group's LABELS, then LABELS2, LABELS3 ... (past 255 entries), stripped, the first ``count``."""
    return [str(x).strip() for key in ["LABELS"] + [f"LABELS{k}" for k in range(2, 100)] if key in group
            for x in group[key]["value"]][:count]


def read_c3d(path: str | Path) -> MarkerTrajectories:
    """The markers of a C3D file as OpenSim's C3DFileAdapter reads them: every POINT label except those the ANGLES,
    FORCES, MOMENTS, POWERS and SCALARS parameters list, frame f at t = f / POINT:RATE (from 0, as OpenSim), a point
    with a negative residual missing (NaN), POINT:UNITS converted to metres."""
    path = Path(path)
    c3d = open_c3d(path, hint=" (or convert the markers to .trc)")
    point = c3d["parameters"]["POINT"]
    data = np.asarray(c3d["data"]["points"], dtype=float)  # (4, points, frames), NaN where the residual is -1
    labels = c3d_labels(point, data.shape[1])
    rate = float(np.asarray(point["RATE"]["value"], dtype=float).ravel()[0]) if "RATE" in point else 0.0
    if not rate > 0.0:
        raise MarkerFileError(path, f"POINT:RATE is {rate:g}: no point frame rate")
    units = str(point["UNITS"]["value"][0]).strip() if "UNITS" in point and len(point["UNITS"]["value"]) else ""
    if units.lower() not in UNITS_IN_METRES:
        raise MarkerFileError(path, f"POINT:UNITS {units!r} is not a length unit OpenSim reads (mm, cm, m)")
    others = {str(x).strip() for g in C3D_NON_MARKER_GROUPS if g in point for x in point[g]["value"]}
    keep = [k for k, name in enumerate(labels) if name not in others]
    if not keep:
        raise MarkerFileError(path, "no marker among its points")
    dup = sorted({labels[k] for k in keep if sum(labels[j] == labels[k] for j in keep) > 1})
    if dup:
        raise MarkerFileError(path, f"marker {dup[0]!r} appears twice in POINT:LABELS")
    positions = np.transpose(data[:3, keep, :], (2, 1, 0)) * UNITS_IN_METRES[units.lower()]
    times = np.arange(positions.shape[0]) / rate
    return MarkerTrajectories(str(path), times, tuple(labels[k] for k in keep), positions, units, rate)


def read_trc(path: str | Path) -> MarkerTrajectories:
    """Read a .trc marker file (tab-separated; header keys DataRate ... Units; a row of marker names, a row of
    X1 Y1 Z1 ... labels, then Frame#, Time and three values a marker, empty where it is missing).  A file with
    fewer or more rows than its NumFrames, or that ends in the middle of a row, is refused."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise MarkerFileError(path, f"cannot read: {err.strerror or err}") from None
    lines = text.splitlines()
    if len(lines) < 5 or not lines[0].startswith("PathFileType"):
        raise MarkerFileError(path, "not a .trc file (the first line must start with PathFileType)", 1)
    keys, values = lines[1].split("\t"), lines[2].split("\t")
    header = {k.strip(): v.strip() for k, v in zip(keys, values) if k.strip()}
    units = header.get("Units", "")
    if units.lower() not in UNITS_IN_METRES:
        raise MarkerFileError(path, f"Units {units!r} not understood (mm, cm or m)", 3)
    scale = UNITS_IN_METRES[units.lower()]
    label_fields = lines[3].split("\t")
    if len(label_fields) < 2 or label_fields[0].strip() != "Frame#" or label_fields[1].strip() != "Time":
        raise MarkerFileError(path, "the fourth line must start with Frame# and Time", 4)
    # the names, whatever the tabs between them (OpenSim's TRCFileAdapter erases the empty fields of this line)
    names = [f.strip() for f in label_fields[2:] if f.strip()]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise MarkerFileError(path, f"marker {dup[0]!r} appears twice", 4)
    declared = header.get("NumMarkers")
    if declared is not None and declared.isdigit() and int(declared) != len(names):
        raise MarkerFileError(path, f"NumMarkers is {declared} but line 4 names {len(names)} markers", 3)
    data_lines = [(number, line) for number, line in enumerate(lines[5:], start=6) if line.strip()]
    frames = header.get("NumFrames", "")
    if frames.isdigit() and int(frames) != len(data_lines):
        raise MarkerFileError(path, f"the header says NumFrames={frames}, {len(data_lines)} rows read"
                                    + (" (a truncated file?)" if len(data_lines) < int(frames) else ""))
    if data_lines and not text.endswith(("\n", "\r")):  # ends mid-line: is the last row whole?
        number, line = data_lines[-1]
        values = len(line.split("\t")) - 2
        if values < 3 * len(names):
            raise MarkerFileError(path, f"the last row has {max(values, 0)} of the {3 * len(names)} marker values and "
                                        "the file ends without a line break (a truncated file?)", number)
    times, rows = [], []
    for number, line in data_lines:
        fields = line.split("\t")
        try:
            t = float(fields[1])
            values = [float(v) if v.strip() else np.nan for v in fields[2:2 + 3 * len(names)]]
        except (IndexError, ValueError):
            raise MarkerFileError(path, "a data row must hold Frame#, Time and numbers", number) from None
        values += [np.nan] * (3 * len(names) - len(values))
        times.append(t)
        rows.append(values)
    if not times:
        raise MarkerFileError(path, "no data rows")
    times = np.asarray(times)
    if np.any(np.diff(times) <= 0):
        bad = int(np.flatnonzero(np.diff(times) <= 0)[0])
        raise MarkerFileError(path, f"times must increase (t = {times[bad + 1]:g} after {times[bad]:g})")
    positions = np.asarray(rows, dtype=float).reshape(len(times), len(names), 3) * scale
    rate = header.get("DataRate")
    try:
        rate_hz = float(rate) if rate else None
    except ValueError:
        rate_hz = None
    return MarkerTrajectories(str(path), times, tuple(names), positions, units, rate_hz)


def write_trc(path: str | Path, times, names, positions_m, units: str = "mm", *, protect=(),
              file_name: str | None = None) -> None:
    """Write marker positions (T, M, 3) in metres as a .trc file in ``units`` (a missing marker as NaN, as OpenSim
    writes it: OpenSim's reader drops a row's trailing empty fields and refuses the row), atomically; OpenSim's
    TRCFileAdapter reads it (tests/test_inverse_kinematics.py).  ``file_name``: the name in the header (default
    the path's; a temporary sibling's caller gives the final name)."""
    from osim_emb.io.outputs import write_atomically
    if units.lower() not in UNITS_IN_METRES:
        raise ValueError(f"units {units!r}: mm, cm or m")
    positions = np.asarray(positions_m, dtype=float)
    times = np.asarray(times, dtype=float)
    names = list(names)
    if positions.shape != (len(times), len(names), 3):
        raise ValueError(f"positions must have shape ({len(times)}, {len(names)}, 3), got {positions.shape}")
    scale = 1.0 / UNITS_IN_METRES[units.lower()]
    rate = 1.0 / np.median(np.diff(times)) if len(times) > 1 else 0.0
    head = [f"PathFileType\t4\t(X/Y/Z)\t{file_name or Path(path).name}",
            "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\tOrigDataStartFrame\tOrigNumFrames",
            f"{rate:.6g}\t{rate:.6g}\t{len(times)}\t{len(names)}\t{units}\t{rate:.6g}\t1\t{len(times)}",
            "Frame#\tTime\t" + "\t\t\t".join(names),
            "\t\t" + "\t".join(f"{a}{k + 1}" for k in range(len(names)) for a in "XYZ"), ""]
    rows = []
    for i, t in enumerate(times):
        values = ["NaN" if not np.isfinite(v) else f"{v * scale:.10f}" for v in positions[i].ravel()]
        rows.append(f"{i + 1}\t{t:.8g}\t" + "\t".join(values))
    write_atomically(path, "\n".join(head + rows) + "\n", protect=protect)
