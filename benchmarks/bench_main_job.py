"""Wall time of the main job (``osim-emb run`` on the built-in shoulder), from a cold start and re-run.

Each run is a fresh Python process (``python -m osim_emb.cli run``):

1. cold: an empty OpenSim reference cache (a new temporary folder), so every OpenSim evaluation is done,
   spread over the worker processes;
2. warm: the same command again, OpenSim's values read from that cache.

numba's compiled kernels are cached by numba itself (``__pycache__``); ``--numba-cold`` points numba at an
empty cache folder (``NUMBA_CACHE_DIR``) so that the first run compiles too.  A run that compiled says so
in its last line ("of which N s compiling").  The machine's load average is printed before each run.

    python benchmarks/bench_main_job.py [--numba-cold] [--step 1] [--workers N] [--model PATH]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(args, cache: Path, out: Path, numba_dir: Path | None) -> tuple[float, str]:
    cmd = [sys.executable, "-m", "osim_emb.cli.main", "run"] + ([args.model] if args.model else []) + [
        "--out", str(out), "--step", str(args.step), "--formats", args.formats, "--quiet", "--overwrite"]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    env = dict(os.environ, OSIM_EMB_CACHE=str(cache), MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    if numba_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(numba_dir)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit(f"the main job failed (exit {p.returncode})")
    last = [ln for ln in p.stdout.splitlines() if ln.startswith("report:")]
    return wall, (last[-1] if last else "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="an .osim file (default: the built-in shoulder)")
    ap.add_argument("--step", type=float, default=1.0)
    ap.add_argument("--workers", type=int)
    ap.add_argument("--formats", default="pdf,png,svg")
    ap.add_argument("--numba-cold", action="store_true", help="start with an empty numba cache too")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        for label in ("cold (empty OpenSim cache)", "warm (OpenSim values cached)"):
            load = os.getloadavg()
            wall, line = run(args, cache, Path(tmp) / "out", Path(tmp) / "numba" if args.numba_cold else None)
            print(f"main job, {label}: {wall:.1f} s wall time on {os.cpu_count()} CPUs "
                  f"(load average before: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f})\n    {line}")


if __name__ == "__main__":
    main()
