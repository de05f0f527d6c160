"""The main job (``osim-emb run``): export a model, validate its closed-form moment arms against OpenSim over
1-degree sweeps, and write a report with tables and figures.

On the built-in default (the seed's 3D shoulder, ``models/shoulder3d``) it needs no file from outside.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from .io import load_osim
from .io.osim_writer import moving_points_as_bodies, write_osim
from .muscles.geometry import lengths_and_moment_arms
from .validation.moment_arms import REFERENCES, make_sweeps, print_report, run_moment_arm_study

__all__ = ["run_main_job"]


def _stale_cache_table(model, sweeps) -> pd.DataFrame:
    """Where OpenSim's stale wrap-point cache changes lengths and moment arms (default vs compat mode)."""
    q = np.vstack([s.q for s in sweeps])
    l0, r0 = lengths_and_moment_arms(model, q, opensim_compat=False)
    l1, r1 = lengths_and_moment_arms(model, q, opensim_compat=True)
    rows = []
    for m, mu in enumerate(model.muscles):
        rows.append({"muscle": mu.name, "n_wraps": len(mu.wraps),
                     "max_length_difference_m": float(np.abs(l0[:, m] - l1[:, m]).max()),
                     "max_moment_arm_difference_m": float(np.abs(r0[:, :, m] - r1[:, :, m]).max()),
                     "configurations_affected": int(np.sum(np.abs(l0[:, m] - l1[:, m]) > 1e-9))})
    return pd.DataFrame(rows)


def run_main_job(model_path: str | None = None, out_dir: str | Path = "out", *, step_deg: float = 1.0,
                 sweep: Sequence[str] = ("elv_angle", "shoulder_elv", "shoulder_rot"),
                 fixed_deg: dict[str, float] | None = None, formats: Sequence[str] = ("pdf", "png", "svg"),
                 progress: bool = True) -> dict:
    """Export the model, compare moment arms with OpenSim, write ``out_dir/report.md``; return the results."""
    from .builtin_models import builtin_model_path
    t0 = time.perf_counter()
    path = Path(model_path) if model_path else builtin_model_path("shoulder3d")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model = load_osim(path)
    print(f"model {model.name!r} from {path}: {model.n_q} generalized coordinates "
          f"({', '.join(model.coordinate_names)}), {len(model.muscles)} musculotendon units")
    exported = out / f"{model.name}.osim"
    mvp = out / f"{model.name}_mvp.osim"
    write_osim(model, exported, protect=[path])
    write_osim(moving_points_as_bodies(model.extras["document"]), mvp, protect=[path])
    again = load_osim(exported)
    print(f"exported {exported} (OpenSim 4 format; re-imported model identical: {again == model}) and {mvp}")
    have_osim = importlib.util.find_spec("opensim") is not None
    refs = list(REFERENCES) if have_osim else []
    if not have_osim:
        print("opensim is not installed: computing the package's moment arms only "
              "(pip install 'osim-emb[opensim]' for the side-by-side comparison)")
    fixed = {k: np.radians(v) for k, v in (fixed_deg or {c: 0.0 for c in sweep}).items()}
    sweep = [c for c in sweep if c in model.coordinate_names]
    result = run_moment_arm_study(str(exported), sweep, step_deg=step_deg, references=refs, fixed=fixed,
                                  opensim_compat=True, out_dir=out / "moment_arms", formats=formats,
                                  model=again, progress=progress)
    print_report(result)
    stale = _stale_cache_table(model, make_sweeps(model, sweep, step_deg, fixed))
    stale.to_csv(out / "moment_arms" / "stale_cache_effect.csv", index=False, float_format="%.3e")
    elapsed = time.perf_counter() - t0
    _write_report(out / "report.md", model, path, exported, mvp, result, stale, elapsed)
    print(f"report: {out / 'report.md'} ({elapsed:.1f} s)")
    result["stale_cache"] = stale
    return result


def _write_report(p: Path, model, source, exported, mvp, result, stale, elapsed) -> None:
    t = result["timings"]
    lines = [f"# {model.name}: closed-form moment arms beside OpenSim", "",
             f"- source: `{source}`", f"- exported: `{exported}` and `{mvp}` (moving via points as zero-inertia bodies)",
             f"- {model.n_q} generalized coordinates: {', '.join(model.coordinate_names)}; "
             f"{len(model.dependent_coordinates)} dependent coordinates; {len(model.muscles)} musculotendon units",
             f"- {result['n_configurations']} configurations (1-degree sweeps), package time {t['package']:.3f} s",
             f"- package evaluated in `opensim_compat` mode (OpenSim's wrap-point cache reproduced); "
             f"the effect of that cache is in `moment_arms/stale_cache_effect.csv`", ""]
    if result["worst"]:
        lines += ["| OpenSim reference | worst abs difference (m) | muscle | about | swept | angle (deg) | OpenSim time (s) |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for ref, w in result["worst"].items():
            lines.append(f"| {ref} | {abs(w['difference']):.3e} | {w['muscle']} | {w['moment_arm_coordinate']} | "
                         f"{w['swept_coordinate']} | {w['angle_deg']:g} | {t[ref]:.1f} |")
        lines += ["", "Speed: OpenSim time / package time = " +
                  ", ".join(f"{r}: {t[r] / t['package']:.0f}x" for r in result["worst"]), ""]
    if result["explanations"]:
        lines += ["Where `computeMomentArm` on the original model is expected to differ:", ""]
        lines += [f"- {m}: {why}" for m, why in result["explanations"].items()]
        lines.append("")
    lines += ["Stale wrap-point cache (default mode minus compat mode):", "",
              stale.sort_values("max_length_difference_m", ascending=False).head(10).to_markdown(index=False)
              if _has_tabulate() else stale.to_string(index=False), "",
              "Figures: " + ", ".join(f"`{f.relative_to(p.parent)}`" for f in result.get("figures", [])
                                      if f.suffix == ".png"), "", f"Total time {elapsed:.1f} s.", ""]
    p.write_text("\n".join(lines))


def _has_tabulate() -> bool:
    return importlib.util.find_spec("tabulate") is not None
