"""The package's force-platform reader against OpenSim's: opensim-core's test trials ``walking2.c3d`` and
``walking5.c3d`` and the force tables OpenSim's C3DFileAdapter wrote from them (every hundredth analog sample):
``std_walking*_grfs.sto`` (ForceLocation OriginOfForcePlate: the force, the surface's centre, the moment about it)
and ``std_cop_walking*_grfs.sto`` (CenterOfPressure: the force, the centre of pressure, the free moment), from the
opensim-core mirror (scratch, never committed).

    python validation/model_corpus/c3d_forces.py      # a few seconds (ezc3d: pip install 'osim-emb[c3d]')

The origin form is ezc3d's force-platform module, as in OpenSim; the centre-of-pressure form is the package's own
transfer of that wrench (:func:`osim_emb.io.force_plates.at_center_of_pressure`), compared with the one ezc3d
computed inside OpenSim.  The tables hold 8 decimals in N, mm and N mm; differences are reported in SI (N, m, N m)
with the largest magnitude of each quantity.  Writes ``results/c3d_forces.csv``; and the analog channels
(:func:`osim_emb.io.force_plates.read_c3d_analogs`) against OpenSim's ``std_walking*_analog.sto`` (its
``getAnalogDataTable``), ``results/c3d_analogs.csv``; and, as a physical check of the whole chain, the centre of
pressure at mid-stance beside the trials' foot markers (also opensim-core's ``test_walking.c3d``),
``results/c3d_cop_beside_feet.csv``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from run import MIRRORS, mirror_file, write_results  # noqa: E402  (this folder's corpus study: where the mirrors are)

TRIALS = {"walking2": "OpenSim/Tests/shared/walking2.c3d", "walking5": "OpenSim/Tests/shared/walking5.c3d"}
TABLES = {"origin": "OpenSim/Common/Test/std_{trial}_grfs.sto",
          "center_of_pressure": "OpenSim/Common/Test/std_cop_{trial}_grfs.sto"}
#: the tables' units (N, mm, N mm) in SI
SCALE = {"f": 1.0, "p": 1e-3, "m": 1e-3}
QUANTITY = {"f": "force_N", "p": "point_m", "m": "moment_N_m"}
#: OpenSim's analog tables of the same trials (every thousandth sample, the file's units)
ANALOGS = "OpenSim/Common/Test/std_{trial}_analog.sto"


#: foot markers of the trials' marker set (either side: R or L before each)
FOOT_MARKERS = ("CAL", "MT1", "MT2", "MMAL", "LMAL", "AJC")
#: opensim-core's third walking trial (no OpenSim table of it): the physical check only
OTHER_TRIALS = {"test_walking": "OpenSim/Sandbox/MatlabScripts/test_walking.c3d"}


def cop_beside_feet(repo: str) -> list[dict]:
    """The whole chain against the trials' own markers: at mid-stance on each platform (normal force >= 100 N), the
    horizontal distance of the centre of pressure to the nearest foot marker, which must be the stance foot's."""
    from osim_emb.io.force_plates import at_center_of_pressure, read_force_plates
    from osim_emb.io.markers import read_c3d
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for trial, member in {**TRIALS, **OTHER_TRIALS}.items():
            c3d = mirror_file(repo, member, Path(tmp))
            markers, plates = read_c3d(c3d), at_center_of_pressure(read_force_plates(c3d), 100.0)
            for plate in plates.plates:
                on = np.flatnonzero(np.any(plate.force != 0.0, axis=1))
                mid = on[len(on) // 2]
                frame = int(round(plates.time[mid] * markers.rate_hz))
                distance, name = min((float(np.linalg.norm(markers.positions[frame, j, :2] - plate.point[mid, :2])), n)
                                     for j, n in enumerate(markers.names)
                                     if n[1:] in FOOT_MARKERS and np.isfinite(markers.positions[frame, j]).all())
                rows.append({"trial": trial, "plate": plate.number, "mid_stance_s": float(plates.time[mid]),
                             "nearest_foot_marker": name, "horizontal_distance_m": distance})
    return rows


def main() -> int:
    from osim_emb.io.force_plates import at_center_of_pressure, read_c3d_analogs, read_force_plates
    from osim_emb.io.motion import read_motion
    repo = MIRRORS["opensim-core"]
    rows, analog_rows = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for trial, member in TRIALS.items():
            c3d = mirror_file(repo, member, Path(tmp))
            origin = read_force_plates(c3d)
            analogs = read_c3d_analogs(c3d)
            theirs, _ = read_motion(mirror_file(repo, ANALOGS.format(trial=trial), Path(tmp)))
            samples = np.searchsorted(analogs.time, theirs["time"].to_numpy() - 1e-9)
            ref = theirs[list(analogs.labels)].to_numpy()
            analog_rows.append({"trial": trial, "channels": len(analogs.labels), "samples_c3d": len(analogs.time),
                                "samples_opensim": len(theirs),
                                "same_labels": list(analogs.labels) == [c for c in theirs.columns if c != "time"],
                                "same_times": bool(np.allclose(analogs.time[samples], theirs["time"], rtol=0,
                                                               atol=1e-12)),
                                "max_diff": float(np.abs(analogs.values[samples] - ref).max()),
                                "largest": float(np.abs(ref).max())})
            for location, table_member in TABLES.items():
                ours = origin if location == "origin" else at_center_of_pressure(origin)
                theirs, _ = read_motion(mirror_file(repo, table_member.format(trial=trial), Path(tmp)))
                t = theirs["time"].to_numpy()
                samples = np.searchsorted(origin.time, t - 1e-9)
                row = {"trial": trial, "location": location, "plates": len(ours.plates),
                       "samples_c3d": len(origin.time), "samples_opensim": len(t),
                       "same_times": bool(np.allclose(origin.time[samples], t, rtol=0, atol=1e-12)),
                       "same_columns": sorted(c for c in theirs.columns if c != "time") == sorted(
                           f"{k}{p.number}_{i}" for p in ours.plates for k in "fpm" for i in (1, 2, 3))}
                for key in "fpm":
                    diff = largest = 0.0
                    for plate in ours.plates:
                        mine = {"f": plate.force, "p": plate.point, "m": plate.torque}[key][samples]
                        ref = theirs[[f"{key}{plate.number}_{i}" for i in (1, 2, 3)]].to_numpy() * SCALE[key]
                        diff = max(diff, float(np.abs(mine - ref).max()))
                        largest = max(largest, float(np.abs(ref).max()))
                    row[f"max_{QUANTITY[key]}_diff"] = diff
                    row[f"largest_{QUANTITY[key]}"] = largest
                rows.append(row)
    write_results(rows, "c3d_forces.csv")
    write_results(analog_rows, "c3d_analogs.csv")
    write_results(cop_beside_feet(repo), "c3d_cop_beside_feet.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
