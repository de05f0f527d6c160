"""Moment-arm validation harness: 1-degree sweeps, the package's closed-form R(q) beside OpenSim's.

Three OpenSim references, each named in the tables and figures:

* ``computeMomentArm`` -- OpenSim's ``computeMomentArm`` on the original model;
* ``computeMomentArm_mvp`` -- the same on the model exported with every moving via
  point as a zero-inertia body coupled to its driving coordinate (the seed's set-up);
* ``minus_dL_dq`` -- minus the central difference of OpenSim's own ``getLength``,
  with the coupled coordinates following OpenSim's couplers.

The package computes L and R for all sweep configurations at once (Eq 195).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from ..model import Model
from ..muscles.geometry import lengths_and_moment_arms
from ..progress import Progress

__all__ = ["REFERENCES", "TABLE5_LEADERS", "TABLE5_GROUPS", "Sweep", "make_sweeps", "package_moment_arms",
           "opensim_moment_arms", "run_moment_arm_study", "explain_differences"]

REFERENCES = ("computeMomentArm", "computeMomentArm_mvp", "minus_dL_dq")
#: Seed Table 5: groups of the Holzbaur shoulder muscles by attachment sequence, and their leaders.
TABLE5_GROUPS = {
    "LAT1": ("LAT1", "LAT2", "LAT3"),
    "PECM3": ("PECM2", "PECM3"),
    "DELT1": ("DELT1",),
    "PECM1": ("PECM1",),
    "SUBSC": ("SUBSC", "CORB", "TMAJ", "TMIN", "INFSP", "SUPSP", "DELT3"),
    "DELT2": ("DELT2",),
}
TABLE5_LEADERS = tuple(TABLE5_GROUPS)


@dataclass
class Sweep:
    """One swept coordinate: its angles (degrees) and the full configurations (n, n_q)."""

    coordinate: str
    angles_deg: np.ndarray
    q: np.ndarray


def make_sweeps(model: Model, coordinates: Sequence[str], step_deg: float = 1.0,
                fixed: dict[str, float] | None = None, step_translation: float = 0.005) -> list[Sweep]:
    """Each named coordinate over its range in ``step_deg`` steps (translational coordinates in
    ``step_translation`` metres; their "angles" are then millimetres); the others at ``fixed`` values
    (radians, metres) or their defaults."""
    base = model.default_q.copy()
    for name, v in (fixed or {}).items():
        base[model.coordinate_index(name)] = v
    out = []
    for c in coordinates:
        k = model.coordinate_index(c)
        rotational = model.coordinates[k].motion_type != "translational"
        scale = np.degrees(1.0) if rotational else 1000.0  # degrees, or millimetres
        step = step_deg if rotational else step_translation * 1000.0
        lo, hi = np.asarray(model.coordinates[k].range) * scale
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ValueError(f"coordinate {c!r} has an unbounded range; give a range to sweep it")
        start = math.ceil(lo / step - 1e-9) * step
        ang = np.arange(start, hi + 1e-4, step)  # ranges stored in radians miss whole degrees by ~1e-7
        q = np.repeat(base[None], len(ang), axis=0)
        q[:, k] = np.clip(ang / scale, *model.coordinates[k].range)
        out.append(Sweep(c, ang, q))
    return out


def package_moment_arms(model: Model, sweeps: list[Sweep], muscles: Sequence[str], ma_coordinates: Sequence[str],
                        *, opensim_compat: bool = False, wrapping: bool = True) -> tuple[pd.DataFrame, float]:
    """Tidy table of the package's moment arms (and lengths) for all sweeps; also the computing time (s)."""
    q = np.vstack([s.q for s in sweeps])
    t0 = time.perf_counter()
    length, r = lengths_and_moment_arms(model, q, muscles, wrapping=wrapping, opensim_compat=opensim_compat)
    elapsed = time.perf_counter() - t0
    kidx = [model.coordinate_index(c) for c in ma_coordinates]
    rows = []
    start = 0
    for s in sweeps:
        n = len(s.angles_deg)
        for mi, mu in enumerate(muscles):
            for kk, c in zip(kidx, ma_coordinates):
                rows.append(pd.DataFrame({"muscle": mu, "swept_coordinate": s.coordinate, "angle_deg": s.angles_deg,
                                          "moment_arm_coordinate": c, "ours": r[start:start + n, kk, mi],
                                          "length": length[start:start + n, mi]}))
        start += n
    return pd.concat(rows, ignore_index=True), elapsed


def opensim_moment_arms(reference: str, path: str, model: Model, sweeps: list[Sweep], muscles: Sequence[str],
                        ma_coordinates: Sequence[str], *, mvp_path: str | None = None, fd_step: float = 1e-6,
                        progress: bool = True) -> tuple[pd.DataFrame, float]:
    """OpenSim's moment arms at the sweep configurations (one of :data:`REFERENCES`) and the time taken (s)."""
    from .opensim_bridge import OpenSimReference
    if reference not in REFERENCES:
        raise ValueError(f"unknown reference {reference!r}; choose from {REFERENCES}")
    ref = OpenSimReference(mvp_path if reference == "computeMomentArm_mvp" else path, model)
    names = model.coordinate_names
    total = sum(len(s.angles_deg) for s in sweeps)
    rows = []
    t0 = time.perf_counter()
    with Progress(f"OpenSim {reference}", total, enabled=progress) as bar:
        for s in sweeps:
            vals = np.empty((len(s.angles_deg), len(muscles), len(ma_coordinates)))
            for n, q in enumerate(s.q):
                if reference == "minus_dL_dq":
                    for kk, c in enumerate(ma_coordinates):
                        vals[n, :, kk] = -_length_derivative(ref, model, q, names.index(c), muscles, fd_step)
                else:
                    ref.set_configuration(q, names=names, check=None)
                    for mi, m in enumerate(muscles):
                        for kk, c in enumerate(ma_coordinates):
                            vals[n, mi, kk] = ref.moment_arm(m, c)
                bar.advance()
            for mi, m in enumerate(muscles):
                for kk, c in enumerate(ma_coordinates):
                    rows.append(pd.DataFrame({"muscle": m, "swept_coordinate": s.coordinate, "angle_deg": s.angles_deg,
                                              "moment_arm_coordinate": c, "opensim": vals[:, mi, kk]}))
    elapsed = time.perf_counter() - t0
    out = pd.concat(rows, ignore_index=True)
    out.insert(0, "reference", reference)
    return out, elapsed


def _length_derivative(ref, model: Model, q: np.ndarray, k: int, muscles: Sequence[str], h: float) -> np.ndarray:
    """dL/dq_k from OpenSim's getLength: central differences, one-sided (second order) at a range bound,
    where the coordinate can only move inwards (moving-point functions are clamped there)."""
    lo, hi = model.coordinates[k].range
    names = model.coordinate_names

    def lengths(x):
        qq = q.copy()
        qq[k] = x
        ref.set_configuration(qq, names=names, check=None)
        return np.array([ref.muscle_length(m) for m in muscles])

    x = q[k]
    if x - h < lo:
        return (-3 * lengths(x) + 4 * lengths(x + h) - lengths(x + 2 * h)) / (2 * h)
    if x + h > hi:
        return (3 * lengths(x) - 4 * lengths(x - h) + lengths(x - 2 * h)) / (2 * h)
    return (lengths(x + h) - lengths(x - h)) / (2 * h)


def explain_differences(model: Model, muscles: Iterable[str]) -> dict[str, dict[str, str]]:
    """Why each OpenSim reference may differ from the package, per reference and muscle.

    * ``computeMomentArm``: a moving via point next to a point on its own body (OpenSim leaves that
      segment's length change out); couplers of several independent coordinates (OpenSim's coupling
      projection moves the other independent coordinates too).
    * ``computeMomentArm_mvp``: couplers of several independent coordinates.
    * ``minus_dL_dq``: cylinder, ellipsoid and torus wraps are not geodesics, so the generalized force
      per newton (Eq 195, and OpenSim's computeMomentArm) is not -dL/dq; lengths also have kinks where a
      wrap engages.
    """
    by = {m.name: m for m in model.muscles}
    wraps = {w.name: type(w).__name__ for w in model.wrap_objects}
    doc = model.extras.get("document")
    multi = [c for c in (doc.couplers if doc is not None else []) if len(c.independents) > 1]
    coupled_bodies = set()
    if multi:
        deps = {c.dependent for c in multi}
        for j in model.joints:
            if any(d in j.source for d in deps):
                coupled_bodies.add(j.name)
    out: dict[str, dict[str, str]] = {r: {} for r in REFERENCES}
    for name in muscles:
        m = by[name]
        pts = m.points
        same_body = []
        for i, p in enumerate(pts):
            if p.kind != "moving":
                continue
            for j in (i - 1, i + 1):
                if 0 <= j < len(pts) and pts[j].source_body == p.source_body:
                    same_body.append(f"moving point {p.name!r} next to point {pts[j].name!r} on its own body "
                                     f"{p.source_body!r}: OpenSim leaves that segment's length change out")
                    break
        proj = ([f"{len(multi)} couplers with several independent coordinates: OpenSim's coupling projection "
                 "moves the other independent coordinates, so computeMomentArm is not the partial derivative"]
                if multi else [])
        approx = sorted({wraps.get(w.wrap_object, "?") for w in m.wraps} - {"WrapSphere"})
        for ref, why in (("computeMomentArm", same_body + proj), ("computeMomentArm_mvp", proj),
                         ("minus_dL_dq", [f"approximate wrapping ({', '.join(approx)}): R is the generalized "
                                          "force per newton, not -dL/dq"] if approx else [])):
            if why:
                out[ref][name] = "; ".join(dict.fromkeys(why))
    return out


def _figures(table: pd.DataFrame, out: Path, formats: Sequence[str], model_name: str,
             leaders: Sequence[str]) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []

    def save(fig, stem):
        for fmt in formats:
            p = out / f"{stem}.{fmt}"
            fig.savefig(p, bbox_inches="tight", dpi=200)
            written.append(p)
        plt.close(fig)

    swept = list(dict.fromkeys(table.swept_coordinate))
    macs = list(dict.fromkeys(table.moment_arm_coordinate))
    refs = list(dict.fromkeys(table.reference)) if "reference" in table else []
    lead = [m for m in leaders if m in set(table.muscle)]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    preferred = [r for r in ("computeMomentArm_mvp", "minus_dL_dq", "computeMomentArm") if r in refs]
    main_ref = preferred[0] if preferred else None
    # seed Figs 14-15: leaders' moment arms, package solid, OpenSim dashed, one panel per condition
    if lead:
        fig, axes = plt.subplots(len(macs), len(swept), figsize=(4.2 * len(swept), 3.2 * len(macs)), squeeze=False)
        for i, c in enumerate(macs):
            for j, s in enumerate(swept):
                ax = axes[i, j]
                for k, m in enumerate(lead):
                    d = table[(table.muscle == m) & (table.swept_coordinate == s) & (table.moment_arm_coordinate == c)]
                    if main_ref is not None:
                        d = d[d.reference == main_ref]
                    ax.plot(d.angle_deg, 100 * d.ours, "-", color=colors[k % len(colors)], lw=1.6, label=m)
                    if main_ref is not None:
                        ax.plot(d.angle_deg, 100 * d.opensim, "--", color="k", lw=0.8, dashes=(3, 3))
                ax.set_xlabel(f"{s} (deg)")
                ax.set_ylabel(f"moment arm about {c} (cm)")
                lim = np.abs(ax.get_ylim()).max()
                if lim < 1e-9:  # identically zero (e.g. the plane of elevation at zero elevation)
                    ax.set_ylim(-1, 1)
                ax.grid(alpha=0.3)
        axes[0, 0].legend(fontsize=7, ncol=2, title="package (solid)" + (f"\nOpenSim {main_ref} (dashed)" if main_ref else ""),
                          title_fontsize=7)
        fig.suptitle(f"{model_name}: moment arms of the Table 5 group leaders")
        fig.tight_layout()
        save(fig, "leaders_moment_arms")
    for ref in refs:
        d = table[table.reference == ref].copy()
        d["abs_diff"] = d.difference.abs()
        piv = d.groupby(["muscle", "swept_coordinate", "moment_arm_coordinate"]).abs_diff.max().unstack([1, 2])
        piv = piv.reindex(columns=[(s, c) for s in swept for c in macs])
        fig, ax = plt.subplots(figsize=(1.0 + 0.6 * piv.shape[1], 0.6 + 0.18 * piv.shape[0]))
        with np.errstate(divide="ignore"):
            im = ax.imshow(np.log10(np.maximum(piv.values, 1e-16)), aspect="auto", cmap="viridis", vmin=-16, vmax=-1)
        ax.set_yticks(range(piv.shape[0]), piv.index, fontsize=6)
        ax.set_xticks(range(piv.shape[1]), [f"{s}\n/{c}" for s, c in piv.columns], fontsize=6, rotation=90)
        cb = fig.colorbar(im, ax=ax)
        cb.set_label("log10 max |package - OpenSim| (m)")
        ax.set_title(f"{model_name}: worst difference per muscle and condition\nreference: {ref}", fontsize=9)
        fig.tight_layout()
        save(fig, f"error_heatmap_{ref}")
        fig, ax = plt.subplots(figsize=(7, 4))
        for s in swept:
            e = d[d.swept_coordinate == s].groupby("muscle").abs_diff.max().reindex(piv.index)
            ax.semilogy(range(len(e)), np.maximum(e.values, 1e-17), "o", ms=3, label=f"swept {s}")
        ax.set_xticks(range(len(piv.index)), piv.index, rotation=90, fontsize=6)
        ax.set_ylabel("max |package - OpenSim| over the sweep (m)")
        ax.axhline(1e-8, color="r", lw=0.8, ls=":")
        ax.legend(fontsize=7)
        ax.set_title(f"{model_name}: per-muscle error, reference {ref}", fontsize=9)
        fig.tight_layout()
        save(fig, f"errors_per_muscle_{ref}")
    return written


def run_moment_arm_study(model_path: str, sweep: Sequence[str], *, step_deg: float = 1.0,
                         muscles: Sequence[str] | None = None, ma_coordinates: Sequence[str] | None = None,
                         references: Sequence[str] = REFERENCES, fixed: dict[str, float] | None = None,
                         opensim_compat: bool = False, out_dir: str | Path | None = None,
                         formats: Sequence[str] = ("pdf", "png", "svg"), leaders: Sequence[str] = TABLE5_LEADERS,
                         model: Model | None = None, progress: bool = True) -> dict:
    """Run the whole comparison; write tables and figures to ``out_dir``; return the tables and a summary."""
    from ..io import load_osim
    is_json = str(model_path).lower().endswith(".json")
    if model is None:
        if is_json:
            from ..io.model_json import load_model
            model = load_model(model_path)
        else:
            model = load_osim(model_path)
    if is_json and references:  # OpenSim's references need the .osim the JSON model keeps
        import tempfile
        from ..io.osim_writer import write_osim
        doc = model.extras.get("document")
        if doc is None:
            raise ValueError(f"{model_path}: this JSON model keeps no OpenSim document, which the OpenSim references "
                             "need (save it again from an .osim import, or pass --references none)")
        osim_copy = Path(tempfile.mkdtemp()) / (Path(model_path).name.split(".")[0] + ".osim")
        write_osim(doc, osim_copy)
        model_path = str(osim_copy)
    muscles = list(muscles) if muscles else [m.name for m in model.muscles]
    if not muscles:
        raise ValueError(f"model {model.name!r} has no musculotendon units: there are no moment arms to compare")
    ma_coordinates = list(ma_coordinates) if ma_coordinates else list(sweep)
    sweeps = make_sweeps(model, sweep, step_deg, fixed)
    ours, t_ours = package_moment_arms(model, sweeps, muscles, ma_coordinates, opensim_compat=opensim_compat)
    tables = []
    timings = {"package": t_ours}
    mvp_path = None
    if "computeMomentArm_mvp" in references:
        import tempfile
        from ..io.osim_writer import moving_points_as_bodies, write_osim
        tmp = Path(out_dir) if out_dir else Path(tempfile.mkdtemp())
        tmp.mkdir(parents=True, exist_ok=True)
        mvp_path = str(tmp / (Path(model_path).stem + "_mvp.osim"))
        write_osim(moving_points_as_bodies(model.extras["document"]), mvp_path, protect=[model_path])
    for ref in references:
        t, el = opensim_moment_arms(ref, model_path, model, sweeps, muscles, ma_coordinates, mvp_path=mvp_path,
                                    progress=progress)
        timings[ref] = el
        tables.append(t)
    keys = ["muscle", "swept_coordinate", "angle_deg", "moment_arm_coordinate"]
    if tables:
        table = pd.concat(tables, ignore_index=True).merge(ours, on=keys, how="left")
        table["difference"] = table.ours - table.opensim
    else:
        table = ours.assign(reference="none", opensim=np.nan, difference=np.nan)
    table.insert(0, "model", model.name)
    cols = ["model", "reference", "muscle", "swept_coordinate", "angle_deg", "moment_arm_coordinate", "ours",
            "opensim", "difference", "length"]
    table = table[cols]
    why = explain_differences(model, muscles)
    summary_rows = []
    for ref, d in table.groupby("reference", sort=False):
        g = d.assign(abs_diff=d.difference.abs()).groupby(["muscle", "swept_coordinate", "moment_arm_coordinate"])
        s = g.abs_diff.max().rename("max_abs_difference").reset_index()
        s["reference"] = ref
        reasons = why.get(ref, {})
        s["reason"] = [reasons.get(m, "") for m in s.muscle]
        summary_rows.append(s)
    summary = pd.concat(summary_rows, ignore_index=True) if summary_rows else pd.DataFrame()
    worst = {}
    for ref, d in table.groupby("reference", sort=False):
        if d.difference.isna().all():
            continue
        i = d.difference.abs().idxmax()
        worst[ref] = table.loc[i, ["muscle", "swept_coordinate", "angle_deg", "moment_arm_coordinate", "difference"]].to_dict()
    result = {"table": table, "summary": summary, "worst": worst, "timings": timings, "model": model,
              "explanations": why, "n_configurations": sum(len(s.angles_deg) for s in sweeps)}
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        table.to_csv(out / "moment_arms.csv.gz", index=False, float_format="%.12e")
        summary.to_csv(out / "summary.csv", index=False, float_format="%.3e")
        pd.DataFrame([{"what": k, "seconds": v} for k, v in timings.items()]).to_csv(out / "timings.csv", index=False)
        result["figures"] = _figures(table, out, formats, model.name, leaders)
    return result


def print_report(result: dict, stream=None) -> None:
    """The summary the command prints: per reference, the worst muscle, coordinate, angle and error."""
    import sys
    stream = stream or sys.stdout
    t = result["timings"]
    n = result["n_configurations"]
    stream.write(f"{result['model'].name}: {n} configurations, package {t['package']:.3f} s\n")
    model = result["model"]
    for ref, w in result["worst"].items():
        unit = "mm" if model.coordinates[model.coordinate_index(w["swept_coordinate"])].motion_type == \
            "translational" else "deg"
        stream.write(f"  {ref:22s} worst |diff| {abs(w['difference']):.3e} m: {w['muscle']} about "
                     f"{w['moment_arm_coordinate']} at {w['swept_coordinate']} = {w['angle_deg']:g} {unit}"
                     f"  (OpenSim {t[ref]:.1f} s)\n")
    s = result["summary"]
    if len(s):
        for ref in result["worst"]:
            bad = s[(s.reference == ref) & (s.max_abs_difference > 1e-8)]
            for m, g in bad.groupby("muscle"):
                stream.write(f"  {ref} differs for {m} (max {g.max_abs_difference.max():.2e} m): "
                             f"{result['explanations'].get(ref, {}).get(m, 'unexplained')}\n")
