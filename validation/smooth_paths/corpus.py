"""``osim-emb smooth-paths`` over a folder of models (the model corpus), each checked against OpenSim 4.6.

    PYTHONPATH=. python validation/smooth_paths/corpus.py [DIR ...] [--samples 300]

Default folders: the scratch corpus of ``validation/model_corpus/run.py`` (/tmp/osim_emb_model_corpus) and
$OSIM_EMB_MODELS.  For each .osim file with wrap objects on its muscles' paths (a ``<PathWrap>``), in its own
subprocess (a crash or a timeout stops only that model):

1. a file older than 4.0 is first opened and saved by OpenSim 4.6 (a scratch copy);
2. ``osim-emb smooth-paths FILE -o OUT --lenient``: the units converted, and the warnings (units kept as
   legacy GeometryPaths, by reason; units written without their contact hints); the command itself compares
   every written unit with OpenSim's getLength at the default pose and 32 sampled configurations;
3. independently of the command, OpenSim 4.6 loads OUT (initSystem) and its ``getLength`` of every
   Scholz2015GeometryPath at the default pose is compared with the package's.

Writes ``results/corpus/corpus.csv`` (one row per model) and ``results/corpus/kept_legacy.csv`` (per reason).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

HERE = Path(__file__).resolve().parent
_CHECK = r'''
import json, sys
import numpy as np
import opensim as osim
from osim_emb.io import load_osim
from osim_emb.paths.geometry import muscle_lengths
from osim_emb.paths.scholz import ScholzMusculotendon
model = load_osim(sys.argv[1], strict=False)
names = [u.name for u in model.muscles if isinstance(u, ScholzMusculotendon)]
ours = muscle_lengths(model, model.default_q, names)[0]
m = osim.Model(sys.argv[1])
s = m.initSystem()
m.realizePosition(s)
ref = np.array([osim.PathActuator.safeDownCast(m.getForceSet().get(n)).getPath().getLength(s) for n in names])
diff = np.abs(ref - ours)
print(json.dumps({"units": len(names), "agree_1e-8": int((diff < 1e-8).sum()), "max_diff_m": float(diff.max()),
                  "worst": names[int(np.argmax(diff))], "disagree": [n for n, d in zip(names, diff) if d >= 1e-8]}))
'''


def _run(cmd, timeout, env):
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired:
        return "timeout", "", ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*")
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--timeout", type=float, default=900)
    args = ap.parse_args(argv)
    folders = [Path(f) for f in args.folders] or [Path("/tmp/osim_emb_model_corpus"),
                                                  Path(os.environ.get("OSIM_EMB_MODELS", "/work/shared/models"))]
    files = sorted(p for f in folders for p in f.rglob("*.osim")
                   if re.search(r"<PathWrap[\s>]", p.read_text(errors="ignore")))
    env = dict(os.environ, PYTHONPATH=str(HERE.parents[1]), MPLBACKEND="Agg")
    py = sys.executable
    rows, reasons = [], collections.Counter()
    from osim_emb.progress import Progress
    with tempfile.TemporaryDirectory() as scratch, Progress("smooth-paths over the corpus", len(files), unit="model") as bar:
        check = Path(scratch) / "check.py"
        check.write_text(_CHECK)
        for k, f in enumerate(files):
            t0 = time.perf_counter()
            row = {"model": str(f), "upgraded": False}
            src = f
            version = re.search(r'Version="(\d+)"', f.read_text(errors="ignore")[:2000])
            if version and int(version.group(1)) < 40000:
                src = Path(scratch) / f"v4_{k}.osim"
                code, _, err = _run([py, "-c", "import opensim as o, sys; o.Model(sys.argv[1]).printToXML(sys.argv[2])",
                                     str(f), str(src)], args.timeout, env)
                row["upgraded"] = True
                if code != 0 or not src.exists():
                    row.update(status="opensim cannot open the file", reason=(err.strip().splitlines() or ["?"])[-1])
                    rows.append(row)
                    bar.advance()
                    continue
            out = Path(scratch) / f"smooth_{k}.osim"
            code, so, se = _run([py, "-m", "osim_emb.cli", "smooth-paths", str(src), "-o", str(out), "--overwrite",
                                 "--samples", str(args.samples), "--lenient"], args.timeout, env)
            for line in se.splitlines():
                m = re.search(r"kept as a legacy GeometryPath: (.*)", line)
                if m and m.group(1).startswith("OpenSim's evaluation of its smooth path differs"):
                    last = m.group(1).split("; with its contact hints:")[0]  # the reason without hints
                    why = re.search(r"\(obstacles .*?\): ([^;]*)", last)  # the cause after the obstacles' list
                    reasons[f"OpenSim's evaluation differs: {why.group(1) if why else last[:120]}"] += 1
                elif m:
                    reason = re.sub(r" in \d+ of \d+ sampled configurations \(e\.g\. [^)]*\)",
                                    " in some sampled configurations", m.group(1))  # one row a reason
                    reasons[re.sub(r"'[^']*'", "X", re.sub(r" \(unit .*", "", reason))] += 1
            row["written_without_hints"] = sum("written without contact hints" in line for line in se.splitlines())
            row["opensim_check_run"] = "OpenSim check: " in so
            converted = re.search(r"(\d+) Scholz2015GeometryPaths", so)
            row["converted"] = int(converted.group(1)) if converted else 0
            row["kept_legacy"] = sum("kept as a legacy GeometryPath" in line for line in se.splitlines())
            if code != 0:
                message = (se.strip().splitlines() or ["?"])[-1]
                row.update(status="nothing to convert" if "nothing written" in message else "failed",
                           reason=re.sub(r"\S*/", "", message)[:300])
            else:
                code, so, se = _run([py, str(check), str(out)], args.timeout, env)
                lines = [line for line in so.splitlines() if line.startswith("{")]
                if lines:
                    row.update(status="converted", **json.loads(lines[-1]))
                else:
                    row.update(status="converted; OpenSim check failed", reason=(se.strip().splitlines() or ["?"])[-1])
            row["seconds"] = round(time.perf_counter() - t0, 1)
            rows.append(row)
            bar.advance()
    res = HERE / "results" / "corpus"
    res.mkdir(parents=True, exist_ok=True)
    table = pd.DataFrame(rows)
    table.to_csv(res / "corpus.csv", index=False)
    pd.DataFrame(sorted(reasons.items(), key=lambda x: -x[1]), columns=["reason", "units"]).to_csv(
        res / "kept_legacy.csv", index=False)
    print(table["status"].value_counts().to_string())
    print(f"units converted: {int(table['converted'].fillna(0).sum())}, of which written without their contact hints: "
          f"{int(table['written_without_hints'].fillna(0).sum())}; agreeing with OpenSim at the default pose: "
          f"{int(table['agree_1e-8'].fillna(0).sum())} of {int(table['units'].fillna(0).sum())}")
    for reason, n in reasons.most_common():
        print(f"{n:5d} kept legacy: {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
