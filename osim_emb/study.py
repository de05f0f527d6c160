"""The main job (``osim-emb run``): export a model, validate its closed-form moment arms against OpenSim over
1-degree sweeps, and write a report with tables and figures.

On the built-in default (the seed's 3D shoulder, ``models/shoulder3d``, with de Groot & Brand's two-coordinate
rhythm) it needs no file from outside.  Two comparisons are run:

A. the model as it is: lengths against OpenSim's ``getLength``, moment arms against ``-dL/dq`` of OpenSim's
   ``getLength`` and against ``computeMomentArm`` on the moving-via-points-as-bodies export;
B. the same model with the elevation-only (Holzbaur/SIMM) rhythm, where OpenSim's ``computeMomentArm`` is the
   partial derivative too: the package's closed-form R against it, muscle by muscle.
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
from .io.outputs import inside_folder, safe_output_name
from .muscles.geometry import lengths_and_moment_arms
from .validation.moment_arms import make_sweeps, print_report, run_moment_arm_study

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


def _length_check(path: Path, model, sweeps) -> float:
    """Max |package L - OpenSim getLength| over the sweep configurations (opensim_compat)."""
    from .validation.opensim_bridge import OpenSimReference
    q = np.vstack([s.q for s in sweeps])
    length, _ = lengths_and_moment_arms(model, q, opensim_compat=True)
    ref = OpenSimReference(str(path), model)
    worst = 0.0
    names = [m.name for m in model.muscles]
    for n in range(len(q)):
        ref.set_configuration(q[n], check=None)
        worst = max(worst, max(abs(ref.muscle_length(m) - length[n, j]) for j, m in enumerate(names)))
    return worst


def run_main_job(model_path: str | None = None, out_dir: str | Path = "out", *, step_deg: float = 1.0,
                 sweep: Sequence[str] = ("elv_angle", "shoulder_elv", "shoulder_rot"),
                 formats: Sequence[str] = ("pdf", "png", "svg"), progress: bool = True) -> dict:
    """Export the model, compare its moment arms with OpenSim, write ``out_dir/report.md``; return the results."""
    from .builtin_models import builtin_model_path
    from .rhythm import apply, builtin_rhythm
    t0 = time.perf_counter()
    path = Path(model_path) if model_path else builtin_model_path("shoulder3d")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model = load_osim(path)
    print(f"model {model.name!r} from {path}: {model.n_q} generalized coordinates "
          f"({', '.join(model.coordinate_names)}), {len(model.muscles)} musculotendon units")
    exported = inside_folder(out, f"{safe_output_name(model.name)}.osim")
    mvp = inside_folder(out, f"{safe_output_name(model.name)}_mvp.osim")
    write_osim(model, exported, protect=[path])
    write_osim(moving_points_as_bodies(model.extras["document"]), mvp, protect=[path])
    again = load_osim(exported)
    print(f"exported {exported} (OpenSim 4 format; re-imported model identical: {again == model}) and {mvp}")
    sweep = [c for c in sweep if c in model.coordinate_names]
    fixed = {c: 0.0 for c in sweep}
    sweeps = make_sweeps(model, sweep, step_deg, fixed)
    have_osim = importlib.util.find_spec("opensim") is not None
    results = {"model": model, "exported": exported, "mvp": mvp}
    if not have_osim:
        print("opensim is not installed: computing the package's moment arms only "
              "(pip install 'osim-emb[opensim]' for the side-by-side comparison)")
        results["A"] = run_moment_arm_study(str(exported), sweep, step_deg=step_deg, references=[], fixed=fixed,
                                            opensim_compat=True, out_dir=out / "moment_arms", formats=formats,
                                            model=again, progress=progress)
    else:
        print("\nA. the model as it is (two-coordinate rhythm): lengths, -dL/dq and computeMomentArm")
        results["length_difference"] = _length_check(exported, again, sweeps)
        print(f"  lengths: max |package - OpenSim getLength| = {results['length_difference']:.2e} m "
              f"over {sum(len(s.angles_deg) for s in sweeps)} configurations x {len(model.muscles)} units")
        results["A"] = run_moment_arm_study(str(exported), sweep, step_deg=step_deg,
                                            references=["minus_dL_dq", "computeMomentArm_mvp"], fixed=fixed,
                                            opensim_compat=True, out_dir=out / "moment_arms", formats=formats,
                                            model=again, progress=progress)
        print_report(results["A"])
        has_rhythm = any(len(c.independents) > 1 for c in model.extras["document"].couplers)
        if has_rhythm and all(c in model.coordinate_names for c in ("elv_angle", "shoulder_elv")):
            print("\nB. the same model with the elevation-only rhythm: closed-form R against computeMomentArm")
            one = apply(model, builtin_rhythm("holzbaur2005"))
            one_path = inside_folder(out, f"{safe_output_name(model.name)}_elevation_only_rhythm.osim")
            write_osim(one, one_path, protect=[path])
            results["B"] = run_moment_arm_study(str(one_path), sweep, step_deg=step_deg,
                                                references=["computeMomentArm_mvp"], fixed=fixed,
                                                opensim_compat=True, out_dir=out / "moment_arms_elevation_only_rhythm",
                                                formats=formats, model=load_osim(one_path), progress=progress)
            print_report(results["B"])
    stale = _stale_cache_table(model, sweeps)
    (out / "moment_arms").mkdir(parents=True, exist_ok=True)
    stale.to_csv(out / "moment_arms" / "stale_cache_effect.csv", index=False, float_format="%.3e")
    results["stale_cache"] = stale
    elapsed = time.perf_counter() - t0
    _write_report(out / "report.md", path, results, elapsed)
    print(f"\nreport: {out / 'report.md'} ({elapsed:.1f} s)")
    return results


def _worst_lines(result: dict) -> list[str]:
    t = result["timings"]
    lines = ["| OpenSim reference | worst abs difference (m) | muscle | about | swept | angle (deg) | OpenSim time (s) | package time (s) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for ref, w in result["worst"].items():
        lines.append(f"| {ref} | {abs(w['difference']):.3e} | {w['muscle']} | {w['moment_arm_coordinate']} | "
                     f"{w['swept_coordinate']} | {w['angle_deg']:g} | {t[ref]:.1f} | {t['package']:.3f} |")
    s = result["summary"]
    for ref in result["worst"]:
        d = s[s.reference == ref].groupby("muscle").max_abs_difference.max().sort_values()
        ok = d[d <= 1e-8]
        lines += ["", f"{ref}: {len(ok)} of {len(d)} units agree to 1e-8 m at every sweep point"
                  + (f" ({', '.join(ok.index)})" if 0 < len(ok) < len(d) else "") + "."]
        for m, v in d[d > 1e-8].items():
            why = result["explanations"].get(ref, {}).get(m, "unexplained")
            lines.append(f"- {m}: max {v:.2e} m — {why}")
    return lines


def _write_report(p: Path, source, results: dict, elapsed: float) -> None:
    model = results["model"]
    a = results["A"]
    lines = [f"# {model.name}: closed-form moment arms beside OpenSim", "",
             f"- source: `{source}`",
             f"- exported: `{results['exported']}` and `{results['mvp']}` (moving via points as zero-inertia bodies)",
             f"- {model.n_q} generalized coordinates: {', '.join(model.coordinate_names)}; "
             f"{len(model.dependent_coordinates)} dependent coordinates; {len(model.muscles)} musculotendon units",
             f"- {a['n_configurations']} configurations (1-degree sweeps of each coordinate, the others at 0); the "
             "package is evaluated in `opensim_compat` mode (OpenSim's wrap-point cache reproduced)", ""]
    if "length_difference" in results:
        lines += ["## A. The model as it is", "",
                  f"Lengths: max |package − OpenSim `getLength`| = {results['length_difference']:.2e} m.", ""]
        lines += _worst_lines(a) + [""]
    if "B" in results:
        lines += ["## B. Elevation-only rhythm (computeMomentArm is a partial derivative there)", ""]
        lines += _worst_lines(results["B"]) + [""]
    stale = results["stale_cache"]
    lines += ["## OpenSim's stale wrap-point cache", "",
              "Default mode (current tangent-point positions) minus `opensim_compat` mode, per unit:", "",
              stale.sort_values("max_length_difference_m", ascending=False).to_string(index=False), "",
              f"Figures and tables: `moment_arms/`" + (", `moment_arms_elevation_only_rhythm/`" if "B" in results else ""),
              "", f"Total time {elapsed:.1f} s.", ""]
    p.write_text("\n".join(lines))
