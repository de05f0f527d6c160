"""Legacy wrap objects vs smooth obstacles (Scholz2015GeometryPath) on arm26 (issue 13).

    PYTHONPATH=. python validation/smooth_paths/run.py [MODEL.osim] [--coordinate r_elbow_flex] [--no-opensim]

Converts the model with ``osim-emb smooth-paths`` (its sphere and cylinder wraps become obstacles), then
sweeps one coordinate in 1-degree steps over its range (the others at their defaults) and writes, for each
converted unit:

* the moment arm R of the legacy path (the package's, = OpenSim's computeMomentArm) and its tendon-
  excursion moment arm -dL/dq (central differences, h = 1e-6 rad);
* the same for the smooth path, and OpenSim 4.6's getLength / computeMomentArm of the written file (each
  degree from a State initialized there, i.e. from the contact hints);
* the largest length step between neighbouring degrees (a jump where a legacy wrap engages).

Results in ``results/<model>/``: ``sweep.csv`` (every degree), ``summary.csv`` (per unit),
``smooth_paths.{pdf,svg,png}`` (at most four units the coordinate moves: those whose legacy R departs most
from -dL/dq).
A 3.3 file (MoBL) is first saved as a 4.x file by OpenSim.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent


def _opensim_sweep(path: Path, coordinate_names, q: np.ndarray, units, coordinate: str):
    """OpenSim's getLength and computeMomentArm (about ``coordinate``) per configuration, each from a State
    initialized there (OpenSim 4.6 otherwise starts the wrapping solver from the State's previous solution)."""
    import opensim as osim
    model = osim.Model(str(path))
    model.initSystem()
    cs = model.getCoordinateSet()
    lengths = np.zeros((len(q), len(units)))
    arms = np.zeros((len(q), len(units)))
    from osim_emb.progress import Progress
    with Progress("OpenSim getLength / computeMomentArm (initSystem at each)", len(q)) as bar:
        for n, qn in enumerate(q):
            for name, v in zip(coordinate_names, qn):  # the State starts there: the solver starts from the hints
                cs.get(name).setDefaultValue(float(v))
            s = model.initSystem()
            model.realizePosition(s)
            for m, u in enumerate(units):
                path_ = osim.PathActuator.safeDownCast(model.getForceSet().get(u)).getPath()
                lengths[n, m] = path_.getLength(s)
                arms[n, m] = path_.computeMomentArm(s, cs.get(coordinate))
            bar.advance()
    return lengths, arms


def _ok(model, unit, q) -> bool:
    from osim_emb.paths.geometry import muscle_lengths
    try:
        muscle_lengths(model, q, [unit], allow_out_of_range=True)
        return True
    except (ValueError, RuntimeError):
        return False


def main(argv=None) -> int:
    from osim_emb.io import load_osim
    from osim_emb.io.scholz_convert import solvable_smooth_paths_tree, write_tree
    from osim_emb.paths.geometry import lengths_and_moment_arms, muscle_lengths

    models = Path(os.environ.get("OSIM_EMB_MODELS", HERE.parents[2] / "shared" / "models"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default=str(models / "arm26.osim"))
    ap.add_argument("--coordinate", default="r_elbow_flex")
    ap.add_argument("--no-opensim", action="store_true", help="skip OpenSim's evaluation of the written file")
    ap.add_argument("--out", help="results folder (default results/<model name>)")
    args = ap.parse_args(argv)
    out = Path(args.out or HERE / "results" / Path(args.model).stem)
    out.mkdir(parents=True, exist_ok=True)

    legacy = load_osim(args.model)
    if legacy.extras["document"].version < 40000:  # Scholz paths are OpenSim 4.6 elements: upgrade with OpenSim
        import opensim as osim
        upgraded = Path(tempfile.mkdtemp(prefix="smooth_paths_")) / Path(args.model).name
        osim.Model(str(args.model)).printToXML(str(upgraded))
        print(f"note: {args.model} is an OpenSim 3.3 file; converted with OpenSim 4.6 to {upgraded}")
        legacy = load_osim(upgraded)
    check = None
    if not args.no_opensim:  # as `osim-emb smooth-paths`: every written unit checked against OpenSim's getLength
        from osim_emb.cli.smooth_paths import OpenSimLengthCheck
        check = OpenSimLengthCheck()
    tree, converted, warnings = solvable_smooth_paths_tree(legacy, check=check)
    for w in warnings:
        print("note:", w)
    tmp = Path(tempfile.mkdtemp(prefix="smooth_paths_")) / (Path(args.model).stem + "_smooth.osim")
    write_tree(tree, tmp)
    smooth = load_osim(tmp)
    units = [u.name for u in converted]
    k = legacy.coordinate_names.index(args.coordinate)
    lo, hi = legacy.coordinate_ranges[k]
    degrees = np.arange(np.ceil(np.degrees(lo)), np.floor(np.degrees(hi)) + 0.5, 1.0)
    q = np.tile(legacy.default_q.reshape(1, -1), (len(degrees), 1))
    q[:, k] = np.radians(degrees)
    h = np.zeros(legacy.n_q)
    h[k] = 1e-6
    t0 = time.perf_counter()
    rows = {}
    if not units:
        print(f"{args.model}: no unit converts (see the notes); nothing to compare")
        return 0

    def evaluate(model):
        """L, R about the coordinate and -dL/dq per degree; NaN where a path point lies inside an obstacle."""
        length = np.full((len(q), len(units)), np.nan)
        arm, fd = length.copy(), length.copy()
        for m, u in enumerate(units):
            for rows_ in ([slice(None)] if _ok(model, u, q) else [[n] for n in range(len(q))]):
                try:
                    lq, rq = lengths_and_moment_arms(model, q[rows_], [u], allow_out_of_range=True)
                    lp = muscle_lengths(model, q[rows_] + h, [u], allow_out_of_range=True)
                    lm = muscle_lengths(model, q[rows_] - h, [u], allow_out_of_range=True)
                except (ValueError, RuntimeError):  # a point inside an obstacle; a geodesic that does not converge
                    continue
                length[rows_, m], arm[rows_, m], fd[rows_, m] = lq[:, 0], rq[:, k, 0], -(lp - lm)[:, 0] / 2e-6
        skipped = np.isnan(length).any(axis=0)
        for u, s_ in zip(units, skipped):
            if s_:
                print(f"note: {u}: a path point lies inside an obstacle, or the path does not converge, at some "
                      "degrees (NaN there)")
        return length, arm, fd

    for label, model in (("legacy", legacy), ("smooth", smooth)):
        rows[label] = evaluate(model)
    t_package = time.perf_counter() - t0
    osim_l = osim_r = None
    if not args.no_opensim:
        t0 = time.perf_counter()
        try:
            osim_l, osim_r = _opensim_sweep(tmp, legacy.coordinate_names, q, units, args.coordinate)
        except RuntimeError as err:
            print(f"note: OpenSim cannot evaluate the written file: {str(err).splitlines()[-1]}")
        t_opensim = time.perf_counter() - t0
    table = []
    for m, u in enumerate(units):
        for n, d in enumerate(degrees):
            row = {"unit": u, "degree": d}
            for label, (length, arm, fd) in rows.items():
                row[f"{label}_L"] = length[n, m]
                row[f"{label}_R"] = arm[n, m]
                row[f"{label}_minus_dLdq"] = fd[n, m]
            if osim_l is not None:
                row["opensim_smooth_L"] = osim_l[n, m]
                row["opensim_smooth_R"] = osim_r[n, m]
            table.append(row)
    sweep = pd.DataFrame(table)
    sweep.to_csv(out / "sweep.csv", index=False, float_format="%.12g")
    summary = []
    for u, g in sweep.groupby("unit", sort=False):
        s = {"unit": u}
        for label in ("legacy", "smooth"):
            s[f"{label}_max_|R+dL/dq|_mm"] = 1e3 * np.abs(g[f"{label}_R"] - g[f"{label}_minus_dLdq"]).max()
            s[f"{label}_max_step_L_mm"] = 1e3 * np.abs(np.diff(g[f"{label}_L"])).max()
            s[f"{label}_max_step_R_mm"] = 1e3 * np.abs(np.diff(g[f"{label}_R"])).max()
        if osim_l is not None:
            agree = np.abs(g["smooth_L"] - g["opensim_smooth_L"]) < 1e-8
            s["opensim_L_agrees_1e-8_degrees"] = f"{int(agree.sum())}/{len(g)}"
            s["max_|L-opensim_L|_mm"] = 1e3 * np.abs(g["smooth_L"] - g["opensim_smooth_L"]).max()
            s["max_|R-opensim_R|_mm_where_L_agrees"] = (1e3 * np.abs(g["smooth_R"] - g["opensim_smooth_R"])[agree].max()
                                                        if agree.any() else np.nan)
        summary.append(s)
    summary = pd.DataFrame(summary)
    summary.to_csv(out / "summary.csv", index=False, float_format="%.6g")
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(summary.to_string(index=False))
    print(f"package: L, R and -dL/dq of {len(units)} units x {len(degrees)} degrees, both models, {t_package:.2f} s"
          + ("" if osim_l is None else f"; OpenSim (initSystem per degree): {t_opensim:.1f} s"))
    # the figure: at most four units that the coordinate moves (|R| > 1 mm somewhere), those whose legacy
    # moment arm departs most from -dL/dq
    moved = sweep.groupby("unit", sort=False).smooth_R.apply(lambda r: np.nanmax(np.abs(r)) > 1e-3)
    ranked = summary[summary.unit.map(moved)].sort_values("legacy_max_|R+dL/dq|_mm", ascending=False, kind="stable")
    shown = list(ranked.unit[:4])
    _figure(sweep, [u for u in units if u in shown], args.coordinate, out / "smooth_paths", osim_l is not None)
    return 0


def _figure(sweep: pd.DataFrame, units, coordinate: str, stem: Path, with_opensim: bool) -> None:
    from osim_emb.report import figure_style as fs
    fig, axes = fs.figure("double", height=4.6, nrows=2, ncols=len(units), sharex=True)
    for c, u in enumerate(units):
        g = sweep[sweep.unit == u]
        d = g.degree.to_numpy()
        ax = axes[0, c]
        ax.plot(d, 1e3 * g.legacy_R, color=fs.color(1), linestyle="-", label="legacy: R (computeMomentArm)")
        ax.plot(d, 1e3 * g.legacy_minus_dLdq, color=fs.color(1), linestyle=":", label="legacy: -dL/dq")
        ax.plot(d, 1e3 * g.smooth_R, color=fs.color(0), linestyle="-", label="smooth: R = -dL/dq")
        if with_opensim:
            ax.plot(d[::5], 1e3 * g.opensim_smooth_R.to_numpy()[::5], color=fs.color(2), linestyle="none",
                    marker="o", markersize=2.5, label="smooth: OpenSim computeMomentArm")
        ax.set_title(u)
        if c == 0:
            ax.set_ylabel("moment arm (mm)")
        ax = axes[1, c]
        ax.plot(d[1:], 1e3 * np.diff(g.legacy_L), color=fs.color(1), linestyle="-")
        ax.plot(d[1:], 1e3 * np.diff(g.smooth_L), color=fs.color(0), linestyle="-")
        ax.set_xlabel(f"{coordinate} (deg)")
        if c == 0:
            ax.set_ylabel("length change per degree (mm)")
    fs.legend_below(fig, ncol=2)
    fs.save(fig, stem)


if __name__ == "__main__":
    sys.exit(main())
