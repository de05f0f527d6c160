"""C3D files for the tests, written by ezc3d in a fresh interpreter: once OpenSim's std::vector<int> wrapper has been
used in a process (osim.StdVectorInt, tests/test_functions_opensim.py), ezc3d's writer fails there ("Wrong number or
type of arguments for overloaded function 'Parameter_set'": the two SWIG modules share the type); reading is not
affected."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

#: the writer: points (with residuals and POINT:ANGLES), then, with platforms, their six channels each (type 2,
#: N and N mm) and FORCE_PLATFORM parameters, integer ones marked INT as capture systems write them
_WRITER = """
import sys, json, numpy as np, ezc3d
spec = json.loads(sys.argv[1])
data = np.load(spec["npz"])
c3d = ezc3d.c3d()
c3d["parameters"]["POINT"]["RATE"]["value"] = [spec["rate"]]
c3d["parameters"]["POINT"]["LABELS"]["value"] = tuple(spec["labels"])
c3d["parameters"]["POINT"]["UNITS"]["value"] = [spec["units"]]
c3d["data"]["points"] = data["points"]
if "residuals" in data:
    c3d["data"]["meta_points"]["residuals"] = data["residuals"]
if spec["angles"]:
    c3d.add_parameter("POINT", "ANGLES", spec["angles"])
if spec["plates"]:
    n = 6 * spec["plates"]
    c3d["parameters"]["ANALOG"]["RATE"]["value"] = [spec["analog_rate"]]
    c3d["parameters"]["ANALOG"]["LABELS"]["value"] = tuple(f"{c}{k + 1}" for k in range(spec["plates"])
                                                           for c in ("Fx", "Fy", "Fz", "Mx", "My", "Mz"))
    c3d["parameters"]["ANALOG"]["UNITS"]["value"] = tuple(["N"] * 3 + ["Nmm"] * 3) * spec["plates"]
    c3d["parameters"]["ANALOG"]["SCALE"]["value"] = [1.0] * n
    c3d["parameters"]["ANALOG"]["OFFSET"]["value"] = [0] * n
    c3d["parameters"]["ANALOG"]["GEN_SCALE"]["value"] = [1.0]
    c3d["data"]["analogs"] = data["analogs"]
    def ints(name, values):
        c3d.add_parameter("FORCE_PLATFORM", name, np.asarray(values, dtype=float))
        c3d["parameters"]["FORCE_PLATFORM"][name]["type"] = ezc3d.ezc3d.INT
    ints("USED", [spec["plates"]])
    ints("TYPE", [2] * spec["plates"])
    ints("ZERO", [1, 0])
    ints("CHANNEL", np.arange(1, n + 1).reshape(spec["plates"], 6).T)
    c3d.add_parameter("FORCE_PLATFORM", "CORNERS", data["corners"])
    c3d.add_parameter("FORCE_PLATFORM", "ORIGIN", data["origins"])
c3d.write(spec["path"])
"""


def write_c3d_file(path, *, rate: float, labels, points: np.ndarray, units: str = "mm", residuals=None, angles=(),
                   analog_rate: float | None = None, analogs=None, corners=None, origins=None):
    """A C3D file: ``points`` (4, labels, frames) with ``residuals`` (1, labels, frames) and the labels listed under
    POINT:ANGLES; with ``analogs`` (1, 6 k, samples), k type-2 platforms of ``corners`` (3, 4, k) and ``origins``
    (3, k) at ``analog_rate``."""
    arrays = {"points": points}
    if residuals is not None:
        arrays["residuals"] = residuals
    plates = 0 if analogs is None else analogs.shape[1] // 6
    if plates:
        arrays.update(analogs=analogs, corners=corners, origins=origins)
    npz = path.with_suffix(".npz")
    np.savez(npz, **arrays)
    spec = {"npz": str(npz), "rate": float(rate), "labels": list(labels), "units": units, "angles": list(angles),
            "plates": plates, "analog_rate": analog_rate, "path": str(path)}
    subprocess.run([sys.executable, "-c", _WRITER, json.dumps(spec)], check=True)
    return path
