"""Wall time of the main job (``osim-emb run`` on the built-in shoulder), from a cold start and re-run, with
the CPU seconds behind it.

Each run is a fresh Python process (``python -m osim_emb.cli run``, started through this script so that it can
count):

1. cold: an empty OpenSim reference cache (a new temporary folder), so every OpenSim evaluation is done,
   spread over the worker processes;
2. warm: the same command again, OpenSim's values read from that cache.

numba's compiled kernels are cached by numba itself (``__pycache__``); ``--numba-cold`` points numba at an
empty cache folder (``NUMBA_CACHE_DIR``) so that the first run compiles too.  The machine's load average is
printed before each run (the machine may be shared: compare CPU seconds, not only wall times).

Per run it prints the wall time and the CPU seconds: the main process (``package``, of which ``compile``: the
thread CPU time of numba's "numba:compile" events, outermost only, so nested compilations count once; the
number of compile events -- 0 on a warm numba cache) and the OpenSim worker processes (``OpenSim``, summed over
the workers, their start-up and ``import opensim`` included).  ``--compiles`` lists the compile CPU seconds per
dispatcher and signature.  The floor on N cores is (package CPU + OpenSim CPU) / N.

    python benchmarks/bench_main_job.py [--numba-cold] [--step 1] [--workers N] [--model PATH] [--compiles]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _child(argv: list[str], report: str) -> int:
    """Run ``osim-emb`` with ``argv`` in this process, counting numba's compilations; write the counts to
    ``report`` (JSON)."""
    import resource
    import threading
    from collections import defaultdict

    from numba.core import event

    compiles: dict[str, float] = defaultdict(float)
    count = [0]
    local = threading.local()
    lock = threading.Lock()

    class CompileTimes(event.Listener):
        def on_start(self, ev):
            stack = getattr(local, "stack", None)
            if stack is None:
                stack = local.stack = []
            stack.append(time.thread_time())

        def on_end(self, ev):
            t0 = local.stack.pop()
            if local.stack:  # nested in another compilation: counted by the outermost one
                return
            d = ev.data["dispatcher"]
            name = f"{d.py_func.__module__}.{d.py_func.__qualname__}{tuple(ev.data['args'])}"
            with lock:
                compiles[name] += time.thread_time() - t0
                count[0] += 1

    event.register("numba:compile", CompileTimes())
    from osim_emb.cli.main import main
    try:
        rc = main(argv)
    finally:
        from osim_emb.opensim import reference_values
        for pool in list(reference_values._POOLS.values()):  # reap the workers: their CPU time is then counted
            pool.shutdown(wait=True)
        me = resource.getrusage(resource.RUSAGE_SELF)
        kids = resource.getrusage(resource.RUSAGE_CHILDREN)
        Path(report).write_text(json.dumps({
            "package_cpu": me.ru_utime + me.ru_stime, "opensim_cpu": kids.ru_utime + kids.ru_stime,
            "compile_cpu": sum(compiles.values()), "compile_events": count[0], "compiles": compiles}))
    return rc


def run(args, cache: Path, out: Path, numba_dir: Path | None) -> tuple[float, str, dict]:
    fd, report = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cli = ["run"] + ([args.model] if args.model else []) + [
        "--out", str(out), "--step", str(args.step), "--formats", args.formats, "--quiet", "--overwrite"]
    if args.workers:
        cli += ["--workers", str(args.workers)]
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", report, "--"] + cli
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
    counts = json.loads(Path(report).read_text())
    os.unlink(report)
    return wall, (last[-1] if last else ""), counts


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        sys.path.insert(0, str(ROOT))
        raise SystemExit(_child(sys.argv[4:], sys.argv[2]))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="an .osim file (default: the built-in shoulder)")
    ap.add_argument("--step", type=float, default=1.0)
    ap.add_argument("--workers", type=int)
    ap.add_argument("--formats", default="pdf,png,svg")
    ap.add_argument("--numba-cold", action="store_true", help="start with an empty numba cache too")
    ap.add_argument("--compiles", action="store_true", help="list the compile CPU seconds per kernel")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "cache"
        for label in ("cold (empty OpenSim cache)", "warm (OpenSim values cached)"):
            load = os.getloadavg()
            wall, line, c = run(args, cache, Path(tmp) / "out", Path(tmp) / "numba" if args.numba_cold else None)
            print(f"main job, {label}: {wall:.1f} s wall time on {os.cpu_count()} CPUs "
                  f"(load average before: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f})\n    {line}\n"
                  f"    CPU: package {c['package_cpu']:.1f} s (of which compile {c['compile_cpu']:.1f} s in "
                  f"{c['compile_events']} compile events), OpenSim workers {c['opensim_cpu']:.1f} s; "
                  f"floor (sum / {os.cpu_count()} CPUs) "
                  f"{(c['package_cpu'] + c['opensim_cpu']) / (os.cpu_count() or 1):.1f} s", flush=True)
            if args.compiles and c["compiles"]:
                for name, s in sorted(c["compiles"].items(), key=lambda kv: -kv[1]):
                    print(f"      {s:6.2f} s  {name}")


if __name__ == "__main__":
    main()
