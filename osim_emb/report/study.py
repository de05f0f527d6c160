"""The main job (``osim-emb run [MODEL.osim]``): export a model, validate its closed-form moment arms against
OpenSim over 1-degree sweeps, and write a report (Markdown and a self-contained HTML page) with tables, figures
and provenance.

Any model: by default it sweeps the unlocked rotational generalized coordinates that the muscles span (a
non-zero moment arm at the default or the mid-range pose), the other coordinates at their defaults clamped
into range.  On the built-in default (the seed's 3D shoulder, ``models/shoulder3d``, with de Groot & Brand's
two-coordinate rhythm) it needs no file from outside, and runs two comparisons:

A. the model as it is: lengths against OpenSim's ``getLength``, moment arms against ``-dL/dq`` of OpenSim's
   ``getLength`` and ``computeMomentArm`` (on the moving-via-points-as-bodies export when there are moving points);
B. for a model with two-coordinate rhythm couplers, the same model with the elevation-only (Holzbaur/SIMM)
   rhythm, where OpenSim's ``computeMomentArm`` is the partial derivative too.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import html
import importlib.util
import logging
import platform
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from osim_emb.io import load_osim
from osim_emb.io.osim_writer import moving_points_as_bodies, write_osim
from osim_emb.io.outputs import inside_folder, safe_output_name
from osim_emb.model import Model
from osim_emb.paths.geometry import lengths_and_moment_arms
from osim_emb.opensim.moment_arms import TOLERANCE, print_report
from osim_emb.report.comparisons import compare_with_opensim

log = logging.getLogger(__name__)

__all__ = ["run_main_job", "default_sweep", "provenance"]


def default_sweep(model: Model, threshold: float = 1e-6) -> list[str]:
    """The unlocked rotational generalized coordinates that some muscle spans (|R| > ``threshold`` m at the
    default or the mid-range configuration)."""
    rot = [k for k, c in enumerate(model.coordinates) if c.motion_type != "translational"]  # "coupled": angles
    if not model.muscles or not rot:
        return []
    lo = np.array([c.range[0] for c in model.coordinates])
    hi = np.array([c.range[1] for c in model.coordinates])
    d = np.clip(model.default_q, lo, hi)
    mid = np.where(np.isfinite(lo) & np.isfinite(hi), 0.5 * (lo + hi), d)
    _, r = lengths_and_moment_arms(model, np.vstack([d, mid]), opensim_compat=True)
    spanned = np.abs(r).max(axis=(0, 2)) > threshold
    return [model.coordinates[k].name for k in rot
            if spanned[k] and np.isfinite(lo[k]) and np.isfinite(hi[k]) and hi[k] > lo[k]]


def _sweep_guess(model: Model) -> list[str]:
    """What :func:`default_sweep` gives, guessed without the compiled path kernels (so that OpenSim starts on it
    while they compile): its candidate coordinates that move some unit's bodies relative to one another.  A wrong
    guess costs only the cancelled OpenSim evaluations."""
    from osim_emb.core.kinematics import joint_variables
    lo = np.array([c.range[0] for c in model.coordinates])
    hi = np.array([c.range[1] for c in model.coordinates])
    cand = [k for k, c in enumerate(model.coordinates) if c.motion_type != "translational"
            and np.isfinite(lo[k]) and np.isfinite(hi[k]) and hi[k] > lo[k]]
    if not model.muscles or not cand:
        return []
    d = np.clip(model.default_q, lo, hi)
    grad = joint_variables(model, np.vstack([d, 0.5 * (lo + hi)]), order=1).gradient  # (2, 1 + n_joints, n_q)
    moves = np.abs(grad).max(axis=0) > 0  # (frame, coordinate)

    def chain(frame: int) -> set[int]:
        out = set()
        while frame > 0:
            out.add(frame)
            frame = model.joints[frame - 1].parent
        return out
    spanned = np.zeros(model.n_q, dtype=bool)
    for m in model.muscles:  # (a moving point sits on a body of its own, moved by its coordinates' frames)
        chains = [chain(model.bodies[model.body_index(p.body)].frame) for p in m.points]
        between = sorted(set().union(*chains) - set.intersection(*chains)) if chains else []
        spanned |= moves[between].any(axis=0)
    return [model.coordinates[k].name for k in cand if spanned[k]]


def provenance(model_path: Path, command: str | None) -> dict[str, str]:
    """Package, OpenSim, numpy and Python versions, the command, the date and the model file's sha256."""
    from osim_emb._version import __version__
    osim = "not installed"
    if importlib.util.find_spec("opensim") is not None:
        import opensim
        osim = opensim.__version__
    return {"osim-emb": __version__, "OpenSim": osim, "numpy": np.__version__, "pandas": pd.__version__,
            "Python": platform.python_version(),
            "command": command or "run_main_job (Python API)",
            "date (UTC)": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S"),
            "model file": str(model_path),
            "model sha256": hashlib.sha256(Path(model_path).read_bytes()).hexdigest()}


def _stale_cache_table(result: dict) -> pd.DataFrame:
    """Per unit: fresh-geometry minus opensim_compat (OpenSim's stale wrap-point cache) over the sweeps."""
    t = result["tables"]["package"]
    other = "fresh_geometry" if result["opensim_compat"] else "opensim_compat"
    d = pd.DataFrame({"muscle": t.muscle, "length": (t.length_m - t[f"length_{other}_m"]).abs()})
    for c in result["ma_coordinates"]:
        d[c] = (t[f"moment_arm_{c}_m"] - t[f"moment_arm_{c}_{other}_m"]).abs()
    g = d.groupby("muscle", sort=False)
    out = pd.DataFrame({"max abs ΔL (m)": g.length.max(),
                        "max abs ΔR (m)": g[result["ma_coordinates"]].max().max(axis=1),
                        "configurations with abs ΔL > 1e-9 m": g.length.apply(lambda x: int((x > 1e-9).sum()))})
    return out.reset_index().rename(columns={"muscle": "unit"})


def _has_moving_points(model: Model) -> bool:
    return any(p.kind == "moving" for m in model.muscles for p in m.points)


def run_main_job(model_path: str | None = None, out_dir: str | Path = "out", *, step_deg: float = 1.0,
                 step_mm: float = 5.0, sweep: Sequence[str] | None = None, formats: Sequence[str] = ("pdf", "png", "svg"),
                 progress: bool = True, workers: int | None = None, cache_dir=None,
                 command: str | None = None, shown_as: str | Path | None = None, strict: bool = True) -> dict:
    """Export the model, compare its moment arms with OpenSim, write ``out_dir/report.md`` and
    ``report.html``; return the results.  ``shown_as``: the folder named in the messages (the final name of a
    temporary ``out_dir``); ``strict=False``: load as :func:`osim_emb.load_osim` does without strictness (what the
    package cannot represent left out and listed, an indefinite inertia kept).

    OpenSim's worker processes start at once; its evaluations are submitted as soon as the model is exported
    (on :func:`default_sweep`'s result guessed without the compiled path kernels), so that they run while the
    package's kernels compile (numba's first use)."""
    from osim_emb.io.builtin_models import builtin_model_path
    t0 = time.perf_counter()
    builtin = model_path is None
    path = Path(model_path) if model_path else builtin_model_path("shoulder3d")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    have_osim = importlib.util.find_spec("opensim") is not None
    if have_osim:  # OpenSim's worker processes start (import OpenSim) while the model loads
        from osim_emb.opensim.reference_values import start_workers
        start_workers(workers)
    try:
        return _run_main_job(path, builtin, out, step_deg, sweep, formats, progress, workers, cache_dir, command,
                             shown_as, have_osim, t0, strict, step_mm)
    finally:
        if have_osim:
            from osim_emb.opensim.reference_values import cancel_prefetched
            cancel_prefetched()


def _run_main_job(path, builtin, out, step_deg, sweep, formats, progress, workers, cache_dir, command, shown_as,
                  have_osim, t0, strict=True, step_mm=5.0) -> dict:
    from osim_emb.io.builtin_models import builtin_model_path
    from osim_emb.rhythm.rhythms import apply, builtin_rhythm
    model = load_osim(path, strict=strict)
    for s in model.extras.get("skipped", []):
        log.warning("%s:%s: left out %s %r: %s", path, s.line or "", s.kind, s.name, s.reason)
    print(f"model {model.name!r} from {path}: {model.n_q} generalized coordinates "
          f"({', '.join(model.coordinate_names)}), {len(model.muscles)} musculotendon units")
    if not model.muscles:
        raise ValueError(f"{path}: model {model.name!r} has no musculotendon units: there are no moment arms "
                         "to validate")
    stem = safe_output_name(path.stem)
    exported = inside_folder(out, f"{stem}.osim")
    mvp = inside_folder(out, f"{stem}_mvp.osim")
    write_osim(model, exported, protect=[path])
    write_osim(moving_points_as_bodies(model.extras["document"]), mvp, protect=[path])
    again = load_osim(exported, strict=strict)
    shown = Path(shown_as) if shown_as is not None else out
    print(f"exported {shown / exported.name} (OpenSim 4 format; re-imported model identical: {again == model}) "
          f"and {shown / mvp.name}")
    compile_s = 0.0
    if sweep:
        unknown = [c for c in sweep if c not in model.coordinate_names]
        if unknown:
            raise ValueError(f"{path}: --sweep names no generalized coordinate {', '.join(map(repr, unknown))} "
                             f"(generalized coordinates: {', '.join(model.coordinate_names)})")
        sweep = list(sweep)
    one = one_path = one_model = None
    if have_osim:
        has_rhythm = any(len(c.independents) > 1 for c in model.extras["document"].couplers)
        if has_rhythm and all(c in model.coordinate_names for c in ("elv_angle", "shoulder_elv")):
            one = apply(model, builtin_rhythm("holzbaur2005"))  # part B's model
            one_path = inside_folder(out, f"{stem}_elevation_only_rhythm.osim")
            write_osim(one, one_path, protect=[path])
            one_model = load_osim(one_path, strict=strict)

    def comparisons(sw: list[str]) -> tuple[dict, list[str], dict, dict | None]:
        """The options of compare_with_opensim for A and B (None without B) when sweeping ``sw``."""
        fixed = {c: 0.0 for c in sw} if builtin else None
        cross = len(sw) <= 3  # all moment arms at every point; else only about the swept coordinate
        common = dict(step_deg=step_deg, step_mm=step_mm, fixed=fixed, opensim_compat=True, formats=formats,
                      progress=progress,
                      workers=workers, cache_dir=cache_dir, cross=cross)
        if builtin:
            refs = ["minus_dL_dq", "computeMomentArm_mvp"]
        else:
            refs = ["computeMomentArm", "minus_dL_dq"] + (["computeMomentArm_mvp"] if _has_moving_points(model)
                                                          else [])
        a_common = dict(common)
        if builtin:  # every moment arm against -dL/dq, computeMomentArm about the swept coordinate only:
            a_common["cross"] = ["minus_dL_dq"]  # computeMomentArm's cross terms are part B's subject
        a = dict(references=refs, out_dir=out / "moment_arms", model=again, **a_common)
        b = (dict(references=["computeMomentArm_mvp"], out_dir=out / "moment_arms_elevation_only_rhythm",
                  model=one_model, **common) if one is not None else None)
        return common, refs, a, b

    try:
        guess = sweep or _sweep_guess(again)
    except Exception as err:  # only a head start is lost
        log.debug("no sweep guessed ahead of the compiled kernels: %s", err)
        guess = []
    if have_osim and guess:  # OpenSim's evaluations start now, while the package's kernels compile
        from osim_emb.opensim.moment_arms import prefetch_moment_arm_study
        _, _, a_opts, b_opts = comparisons(guess)
        prefetch_moment_arm_study(str(exported), guess, **a_opts)
        if b_opts is not None:
            prefetch_moment_arm_study(str(one_path), guess, **b_opts)
    if again.muscles:  # numba compiles the path kernels now (first use), saying so; counted apart in the timings
        from osim_emb.opensim.moment_arms import _warm_up
        ranges = np.array([c.range for c in again.coordinates], dtype=float)
        compile_s += _warm_up(again, np.clip(again.default_q, ranges[:, 0], ranges[:, 1])[None],
                              [m.name for m in again.muscles])
    if not sweep:
        sweep = default_sweep(again)
        if not sweep:
            raise ValueError(f"{path}: no unlocked rotational coordinate is spanned by a muscle; give --sweep")
        log.info("sweeping %s (unlocked rotational coordinates the muscles span)", ", ".join(sweep))
        if have_osim and guess and sweep != guess:
            from osim_emb.opensim.reference_values import cancel_prefetched
            log.debug("the sweep guessed for OpenSim (%s) was not the default sweep: cancelled", ", ".join(guess))
            cancel_prefetched()
    common, refs, a_opts, b_opts = comparisons(sweep)
    cross = common["cross"]
    results = {"model": model, "exported": exported, "mvp": mvp, "sweep": sweep, "cross": cross, "step_deg": step_deg,
               "step_mm": step_mm,
               "source": path, "builtin_path": builtin_model_path("shoulder3d")}
    if not have_osim:
        print("opensim is not installed: computing the package's moment arms only "
              "(pip install 'osim-emb[opensim]' for the side-by-side comparison)")
        results["A"] = compare_with_opensim(str(exported), sweep, references=[], out_dir=out / "moment_arms",
                                            model=again, **common)
    else:
        print(f"\nA. the model as it is: lengths (getLength), {', '.join(refs)}")
        results["A"] = compare_with_opensim(str(exported), sweep, **a_opts)
        results["length_difference"] = results["A"]["length_difference"]
        print_report(results["A"])
        if b_opts is not None:
            print("\nB. the same model with the elevation-only rhythm: closed-form R against computeMomentArm")
            results["B"] = compare_with_opensim(str(one_path), sweep, **b_opts)
            print_report(results["B"])
    stale = _stale_cache_table(results["A"])
    stale.to_csv(out / "moment_arms" / "stale_cache_effect.csv", index=False, float_format="%.3e")
    results["stale_cache"] = stale
    elapsed = time.perf_counter() - t0
    compile_s += results["A"]["timings"].get("package_compile", 0.0)
    results["provenance"] = provenance(path, command)
    _write_report(out, results, elapsed, compile_s)
    print(f"\nreport: {shown / 'report.md'} and {shown / 'report.html'} ({elapsed:.1f} s wall time"
          + (f", of which {compile_s:.1f} s compiling the numba kernels" if compile_s > 1 else "") + ")")
    return results


# -- the report -----------------------------------------------------------------------------------------------

def _fmt(v) -> str:
    if isinstance(v, (float, np.floating)):
        return "" if np.isnan(v) else f"{v:.3g}"
    return str(v)


def _md_table(df: pd.DataFrame) -> list[str]:
    cols = [str(c).replace("|", "\\|") for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join(" --- " for _ in cols) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_fmt(v).replace("|", "\\|") for v in row) + " |")
    return lines


def _html_table(df: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>"
                   for row in df.itertuples(index=False))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def _comparison_table(result: dict) -> pd.DataFrame:
    s = result["summary"]
    rows = []
    for ref in result["references"]:
        d = s[s.reference == ref]
        tol = TOLERANCE[ref]
        per = d.groupby("muscle", sort=False).agg(mx=("max_abs_difference_m", "max"),
                                                  smooth=("max_abs_difference_smooth_m", "max"),
                                                  une=("unexplained_points", "sum"))
        w = d.loc[d.max_abs_difference_smooth_m.idxmax()]
        rows.append({"OpenSim reference": ref, "tolerance (m)": tol,
                     "units within tolerance everywhere": f"{int((per.mx <= tol).sum())} of {len(per)}",
                     "units within tolerance away from discontinuities": f"{int((per.smooth <= tol).sum())} of {len(per)}",
                     "worst away from discontinuities (m)": w.max_abs_difference_smooth_m,
                     "where": f"{w.muscle} about {w.moment_arm_coordinate}, swept {w.swept_coordinate}",
                     "median (m)": d.median_abs_difference_m.median(),
                     "unexplained points": int(per.une.sum()),
                     "OpenSim time (s)": "cached" if result["cached"].get(ref) else round(result["timings"][ref], 1)})
    return pd.DataFrame(rows)


def _sweep_value_text(model, g: pd.DataFrame, i) -> str:
    """'COORD = VALUE UNIT' of summary row i (the sweep value of the largest difference)."""
    from osim_emb.opensim.moment_arms import sweep_unit
    unit = sweep_unit(model, g.swept_coordinate[i])
    return f"{g.swept_coordinate[i]} = {g[f'sweep_value_of_max_{unit}'][i]:g} {unit}"


def _steps_text(model, results: dict) -> str:
    """'1-degree steps', '5-mm steps' or both, as the swept coordinates need."""
    from osim_emb.opensim.moment_arms import sweep_unit
    units = {sweep_unit(model, c) for c in results["sweep"]}
    parts = ([f"{results['step_deg']:g}-degree"] if "deg" in units else []) + \
        ([f"{results.get('step_mm', 5.0):g}-mm"] if "mm" in units else [])
    return " and ".join(parts) + " steps"


def _differences_table(result: dict) -> pd.DataFrame:
    s = result["summary"]
    model = result["model"]
    rows = []
    for ref in result["references"]:
        d = s[(s.reference == ref) & (s.max_abs_difference_m > TOLERANCE[ref])]
        for (m, c), g in d.groupby(["muscle", "moment_arm_coordinate"], sort=False):
            i = g.max_abs_difference_m.idxmax()
            rows.append({"reference": ref, "unit": m, "moment arm about": c,
                         "max (m)": g.max_abs_difference_m.max(),
                         "at": _sweep_value_text(model, g, i),
                         "p95 (m)": g.p95_abs_difference_m.max(),
                         "away from discontinuities (m)": g.max_abs_difference_smooth_m.max(),
                         "discontinuity points": int(g.discontinuity_points.sum()),
                         "cause": "; ".join(dict.fromkeys(x for cc in g.cause for x in cc.split("; ") if x))})
    return pd.DataFrame(rows)


def _blocks(results: dict, elapsed: float, compile_s: float) -> list[tuple]:
    model = results["model"]
    a = results["A"]
    b = [("h1", f"{model.name}: closed-form moment arms beside OpenSim"),
         ("list", [f"source: `{results['source']}`",
                   f"exported: `{results['exported'].name}` and `{results['mvp'].name}` (moving via points as "
                   "zero-inertia bodies)",
                   f"{model.n_q} generalized coordinates ({', '.join(model.coordinate_names)}); "
                   f"{len(model.dependent_coordinates)} dependent coordinates; {len(model.muscles)} musculotendon units",
                   f"swept: {', '.join(results['sweep'])} in {_steps_text(model, results)} over their whole "
                   f"ranges (both ends), "
                   f"{a['n_configurations']} configurations; the other coordinates at their defaults clamped into "
                   "range" + ("" if results["cross"] else "; moment arms about the swept coordinate")
                   + ("; in A, computeMomentArm_mvp about the swept coordinate (all moment arms in -dL/dq and in B)"
                      if results["source"] == results.get("builtin_path") else ""),
                   "the package is compared in `opensim_compat` mode, which reproduces OpenSim's stale wrap-point "
                   "cache; its fresh-geometry mode (the path OpenSim draws) is reported beside"])]
    if "length_difference" in results and results["length_difference"] is not None:
        ls = a["length_summary"]
        b += [("h2", "A. The model as it is"),
              ("p", f"Lengths: max |package − OpenSim getLength| = "
                    f"{ls.max_abs_length_difference_opensim_compat_m.max():.2e} m (opensim_compat), "
                    f"{ls.max_abs_length_difference_fresh_geometry_m.max():.2e} m (fresh geometry)."),
              ("table", _comparison_table(a))]
        diffs = _differences_table(a)
        if len(diffs):
            b += [("p", "Every difference above tolerance, with its cause (a cause is tested at each sweep point; "
                        "points beside a jump or kink of L are reported apart):"), ("table", diffs)]
    if "B" in results:
        b += [("h2", "B. Elevation-only rhythm (computeMomentArm is a partial derivative there)"),
              ("table", _comparison_table(results["B"]))]
        diffs = _differences_table(results["B"])
        if len(diffs):
            b += [("table", diffs)]
    differs = (results["stale_cache"]["max abs ΔL (m)"] > 0) | (results["stale_cache"]["max abs ΔR (m)"] > 0)
    stale = results["stale_cache"][differs]
    b += [("h2", "OpenSim's stale wrap-point cache")]
    if len(stale):
        b += [("p", "Fresh geometry minus `opensim_compat` mode, per unit (only units with a difference):"),
              ("table", stale.sort_values("max abs ΔL (m)", ascending=False))]
    else:
        b += [("p", f"None: the fresh-geometry and `opensim_compat` modes give the same lengths and moment arms for "
                    f"all {len(results['stale_cache'])} units over the sweeps (no wrap point goes stale).")]
    files = list(a.get("figures", [])) + (list(results["B"].get("figures", [])) if "B" in results else [])
    figs = []
    for p in dict.fromkeys(f.with_suffix("") for f in files):
        have = {f.suffix for f in files if f.with_suffix("") == p}
        if ".svg" in have or ".png" in have:
            figs.append(p.with_suffix(".svg" if ".svg" in have else ".png"))
    if figs:
        b.append(("h2", "Figures"))
        for p in figs:
            b.append(("figure", p))
    b += [("h2", "Provenance"), ("table", pd.DataFrame({"": list(results["provenance"]),
                                                          "value": list(results["provenance"].values())})),
          ("p", f"Wall time {elapsed:.1f} s" + (f", of which {compile_s:.1f} s compiling the numba kernels"
                                                if compile_s > 1 else "") +
           f"; the package's moment arms took {a['timings']['package']:.3f} s. Tables: `moment_arms/` "
           "(package_moment_arms.csv.gz, opensim_<reference>.csv.gz, summary.csv, sto/).")]
    return b


def _write_report(out: Path, results: dict, elapsed: float, compile_s: float) -> None:
    blocks = _blocks(results, elapsed, compile_s)
    md, body = [], []
    for blk in blocks:
        kind = blk[0]
        if kind in ("h1", "h2"):
            md += [("# " if kind == "h1" else "## ") + blk[1], ""]
            body.append(f"<{kind}>{html.escape(blk[1])}</{kind}>")
        elif kind == "p":
            md += [blk[1], ""]
            body.append(f"<p>{html.escape(blk[1])}</p>")
        elif kind == "list":
            md += [f"- {x}" for x in blk[1]] + [""]
            body.append("<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in blk[1]) + "</ul>")
        elif kind == "table":
            md += _md_table(blk[1]) + [""]
            body.append(_html_table(blk[1]))
        elif kind == "figure":
            p = blk[1]
            rel = p.relative_to(out)
            png = p.with_suffix(".png")
            md += [f"![{p.stem}]({(rel.with_suffix('.png') if png.exists() else rel).as_posix()})", ""]
            if p.suffix == ".svg":
                svg = p.read_text()
                img = svg[svg.index("<svg"):]
            else:
                img = f"<img alt='{html.escape(p.stem)}' src='{_png_data_uri(p)}' style='max-width:100%'>"
            body.append(f"<figure>{img}<figcaption>{html.escape(p.stem)}</figcaption></figure>")
    (out / "report.md").write_text("\n".join(md))
    style = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;line-height:1.4}"
             "table{border-collapse:collapse;margin:1em 0;font-size:90%}td,th{border:1px solid #ccc;padding:2px 6px}"
             "figure svg{max-width:100%;height:auto}")
    title = html.escape(blocks[0][1])
    (out / "report.html").write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>"
                                     f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n")


def _png_data_uri(p: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode()
