"""The package's C3D marker reader against OpenSim's own: opensim-core's test trials ``walking2.c3d`` and
``walking5.c3d`` and the marker tables OpenSim's C3DFileAdapter wrote from them (``std_walking*_markers.trc``, every
tenth frame, 0.1 mm), from the opensim-core mirror (scratch, never committed).

    python validation/model_corpus/c3d_markers.py      # a few seconds (ezc3d: pip install 'osim-emb[c3d]')

Compared: marker names and their order, times, which samples are missing, positions (m). Writes
``results/c3d_markers.csv``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from run import MIRRORS, mirror_file, write_results  # noqa: E402  (this folder's corpus study: where the mirrors are)

FILES = {"walking2": ("OpenSim/Tests/shared/walking2.c3d", "OpenSim/Common/Test/std_walking2_markers.trc"),
         "walking5": ("OpenSim/Tests/shared/walking5.c3d", "OpenSim/Common/Test/std_walking5_markers.trc")}


def main() -> int:
    from osim_emb.io.markers import read_c3d, read_trc
    repo = MIRRORS["opensim-core"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for trial, (c3d_path, trc_path) in FILES.items():
            files = [mirror_file(repo, member, Path(tmp)) for member in (c3d_path, trc_path)]
            ours, theirs = read_c3d(files[0]), read_trc(files[1])
            frames = np.searchsorted(ours.times, theirs.times - 1e-9)
            same_times = bool(np.allclose(ours.times[frames], theirs.times, rtol=0, atol=1e-12))
            mine = ours.positions[frames]
            rows.append({"trial": trial, "markers": len(ours.names), "frames_c3d": len(ours.times),
                         "frames_opensim": len(theirs.times), "same_names_and_order": ours.names == theirs.names,
                         "same_times": same_times, "missing_samples": int(np.isnan(theirs.positions).sum()),
                         "same_missing": bool((np.isnan(mine) == np.isnan(theirs.positions)).all()),
                         "max_position_diff_m": float(np.nanmax(np.abs(mine - theirs.positions)))})
    write_results(rows, "c3d_markers.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
