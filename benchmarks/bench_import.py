"""Import time of the MoBL model: osim_emb.load_osim against opensim.Model(path).initSystem(), in one run.

    python benchmarks/bench_import.py [MODEL.osim]
"""

import os
import sys
from pathlib import Path

from _timing import best  # this folder's timing helper
from osim_emb.io import load_osim


def best_of(fn, repeat=5):
    return best(fn, repeat)[0]


def main():
    models = Path(os.environ.get("OSIM_EMB_MODELS", Path(__file__).resolve().parents[2] / "shared" / "models"))
    path = sys.argv[1] if len(sys.argv) > 1 else str(models / "mobl_arms_holzbaur.osim")
    ours = best_of(lambda: load_osim(path))
    print(f"{Path(path).name}")
    print(f"  osim_emb.load_osim                    {ours * 1e3:8.1f} ms (best of 5)")
    try:
        import opensim as osim
        osim.Logger.setLevelString("error")
    except ImportError:
        print("  opensim not installed: no comparison")
        return
    theirs = best_of(lambda: osim.Model(path).initSystem())
    print(f"  opensim.Model(path).initSystem()      {theirs * 1e3:8.1f} ms (best of 5)")
    print(f"  ratio OpenSim / osim-emb              {theirs / ours:8.2f}")


if __name__ == "__main__":
    main()
