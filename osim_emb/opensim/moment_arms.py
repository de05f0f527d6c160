"""Moment-arm validation harness: sweeps of the coordinates, the package's closed-form R(q) beside OpenSim's.

Three OpenSim references, each named in the tables and figures (:mod:`.reference_values`):

* ``computeMomentArm`` -- OpenSim's ``computeMomentArm`` on the original model;
* ``computeMomentArm_mvp`` -- the same on the model exported with every moving via
  point as a zero-inertia body coupled to its driving coordinate (the seed's set-up);
* ``minus_dL_dq`` -- minus the central difference of OpenSim's own ``getLength``.

The package computes L and R for all configurations at once (Eq 195), in two modes: ``opensim_compat``
(OpenSim's stale wrap-point cache reproduced -- the mode compared with OpenSim by default) and fresh
geometry (the path OpenSim draws).  Every difference above tolerance is given a cause, point by point
(see :data:`CAUSES` and docs/moment_arms.md); "unexplained" means a defect to investigate.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from osim_emb.model import Model
from osim_emb.paths.geometry import lengths_and_moment_arms, muscle_lengths
from osim_emb.opensim.bridge import ANGULAR_VELOCITY_JOINTS, moment_arms_about_speeds
from osim_emb.opensim.reference_values import REFERENCES, evaluate_references, length_derivative

log = logging.getLogger(__name__)

__all__ = ["REFERENCES", "TOLERANCE", "CAUSES", "Sweep", "make_sweeps", "package_evaluation",
           "run_moment_arm_study", "prefetch_moment_arm_study", "explain_differences", "discontinuities",
           "print_report", "write_sto_tables"]

#: tolerance (m) above which a difference needs a cause (finite differences of getLength: 1e-7 m)
TOLERANCE = {"computeMomentArm": 1e-8, "computeMomentArm_mvp": 1e-8, "minus_dL_dq": 1e-7}
FD_STEP = 1e-6
#: a path shorter than this (m; 10 finite-difference steps) has its two ends nearly meeting: a kink, not a wrap
NEAR_ZERO_LENGTH = 10 * FD_STEP
#: causes of a difference above tolerance, in the order they are tested at each sweep point
CAUSES = {
    "discontinuity": "discontinuity of L (a wrap engaging or releasing, a conditional point): reported apart",
    "stale_cache": "OpenSim's stale wrap-point cache (the other package mode agrees)",
    "stale_cache_getLength": "OpenSim's stale wrap-point cache inside getLength (-dL/dq of the package's "
                             "opensim_compat length agrees)",
    "approximate_wrapping": "generalized force vs -dL/dq under approximate (non-geodesic) wrapping",
    "finite_difference_noise": "within the noise of OpenSim's -dL/dq: lengths that agree to eps m give finite "
                               "differences over the step h that agree to 4 eps / h only (iterative wraps)",
    "moving_point_same_body": "moving point beside a point on the same body (OpenSim leaves that segment's "
                              "length change out)",
    "coupler_projection": "coupler of several independent coordinates (OpenSim's coupling projection moves the "
                          "other independent coordinates)",
    "constraint_projection": "point, line or weld constraint loop of more than one degree of freedom (OpenSim "
                             "projects the unit speed on the constraints over all coordinates: the other "
                             "independent ones move too)",
    "near_zero_length": "the path's two ends nearly meet here (L below 1e-5 m): L = |p1 - p2| has a kink at zero "
                        "length, which finite differences straddle; reported apart",
    "zero_length_path": "the path has zero length here (its two ends meet): the moment arm is undefined (OpenSim "
                        "returns NaN); reported apart",
    "unexplained": "unexplained",
}
# Seed Table 5 groups (kept for the Holzbaur study scripts)
TABLE5_GROUPS = {"LAT1": ("LAT1", "LAT2", "LAT3"), "PECM3": ("PECM2", "PECM3"), "DELT1": ("DELT1",),
                 "PECM1": ("PECM1",), "SUBSC": ("SUBSC", "CORB", "TMAJ", "TMIN", "INFSP", "SUPSP", "DELT3"),
                 "DELT2": ("DELT2",)}
TABLE5_LEADERS = tuple(TABLE5_GROUPS)


@dataclass
class Sweep:
    """One swept coordinate: its angles (degrees; millimetres for a translation) and configurations (n, n_q)."""

    coordinate: str
    angles_deg: np.ndarray
    q: np.ndarray


def loop_steps(model: Model, chained, q: np.ndarray, ma_coordinates: Sequence[str], h: float) -> np.ndarray:
    """(N, K, 4, E): the closed loops' coordinates (the package's solution, ``chained``) at q_k - 2h, q_k - h,
    q_k + h, q_k + 2h for each configuration and moment-arm coordinate k -- what OpenSim's difference quotients of
    ``minus_dL_dq`` set with the moved coordinate (its AssemblySolver would not keep the others fixed)."""
    ks = [model.coordinate_index(c) for c in ma_coordinates]
    offsets = np.array([-2.0, -1.0, 1.0, 2.0]) * h
    moved = np.repeat(q[:, None, None, :], len(ks), axis=1).repeat(4, axis=2)  # (N, K, 4, n_q)
    for kk, k in enumerate(ks):
        moved[:, kk, :, k] += offsets
    flat = moved.reshape(-1, q.shape[1])
    cache: dict = {}
    values = np.column_stack([d.function.evaluate(flat, 0, cache).value for d in chained])
    return values.reshape(len(q), len(ks), 4, len(chained))


def closing_part(model: Model, sweep: Sweep) -> Sweep:
    """The part of a sweep where the model's closed loops (point, line and weld constraints) close: the run of configurations
    around the one nearest the coordinate's default where the loop solves (each on its own, by continuation from
    the default configuration); said in a warning when the sweep is cut."""
    from osim_emb.core.closed_chains import ClosedChainError
    from osim_emb.core.kinematics import joint_variables
    ok = np.zeros(len(sweep.q), dtype=bool)
    for n, qn in enumerate(sweep.q):
        try:
            joint_variables(model, qn[None], 0)
            ok[n] = True
        except ClosedChainError:
            pass
    k = model.coordinate_index(sweep.coordinate)
    start = int(np.argmin(np.abs(sweep.q[:, k] - model.coordinates[k].default)))
    if not ok[start]:
        raise ValueError(f"{model.name}: the closed loops do not close when {sweep.coordinate!r} is at its default "
                         f"{model.coordinates[k].default:g} with the other coordinates as set")
    lo = hi = start
    while lo > 0 and ok[lo - 1]:
        lo -= 1
    while hi < len(ok) - 1 and ok[hi + 1]:
        hi += 1
    if lo > 0 or hi < len(ok) - 1:
        log.warning("%s: sweep of %s cut to %.4g..%.4g (of %.4g..%.4g), where the closed loops close", model.name,
                    sweep.coordinate, sweep.angles_deg[lo], sweep.angles_deg[hi], sweep.angles_deg[0],
                    sweep.angles_deg[-1])
    return Sweep(sweep.coordinate, sweep.angles_deg[lo:hi + 1], sweep.q[lo:hi + 1])


def coordinate_unit(model: Model, name: str) -> tuple[str, float]:
    """('deg', 180/pi) for a rotational coordinate, ('mm', 1000) for a translational one."""
    rot = model.coordinates[model.coordinate_index(name)].motion_type != "translational"
    return ("deg", math.degrees(1.0)) if rot else ("mm", 1000.0)


def sweep_unit(model: Model, name: str) -> str:
    """The unit of a sweep's values: 'deg' (rotational coordinate), 'mm' (translational) or 's' (time, a motion)."""
    return "s" if name == "time" else coordinate_unit(model, name)[0]


def sweep_value_columns(model: Model, swept: np.ndarray, values: np.ndarray, prefix: str = "sweep_value"
                        ) -> dict[str, np.ndarray]:
    """``{prefix}_deg``, ``{prefix}_mm`` and ``{prefix}_s`` (those the swept coordinates need, in that order): each
    row's value in the column of its sweep's unit, NaN in the others -- one unit a column."""
    units = {c: sweep_unit(model, c) for c in dict.fromkeys(np.asarray(swept).tolist())}
    row_units = np.array([units[c] for c in np.asarray(swept).tolist()], dtype=object)
    values = np.asarray(values, dtype=float)
    return {f"{prefix}_{u}": np.where(row_units == u, values, np.nan)
            for u in ("deg", "mm", "s") if u in units.values()}


def make_sweeps(model: Model, coordinates: Sequence[str], step_deg: float = 1.0,
                fixed: dict[str, float] | None = None, step_translation: float = 0.005) -> list[Sweep]:
    """Each named coordinate over its whole range -- both ends included -- in ``step_deg`` steps on whole
    multiples of the step (translations: ``step_translation`` m, labelled in mm); the others at ``fixed``
    values (radians, metres; within round-off of their ranges; a swept coordinate's held while the others are swept,
    so not the only one swept) or their defaults, clamped into their ranges."""
    from osim_emb.core.configuration import RANGE_TOLERANCE, outside_range_text
    if not step_deg > 0 or not step_translation > 0:
        raise ValueError(f"the sweep step must be positive (got {step_deg} deg, {step_translation} m)")
    base = model.default_q.copy()
    for name, v in (fixed or {}).items():
        k = model.coordinate_index(name)
        c = model.coordinates[k]
        if set(coordinates) == {name}:  # held only while the others are swept: here it would be unused
            raise ValueError(f"fixed: {name} is swept; it cannot also be fixed")
        if not c.range[0] - RANGE_TOLERANCE <= v <= c.range[1] + RANGE_TOLERANCE:
            raise ValueError(f"fixed: {outside_range_text(name, v, *c.range, c.motion_type != 'translational')}")
        base[k] = v
    for k, c in enumerate(model.coordinates):
        base[k] = np.clip(base[k], *c.range)
    out = []
    for c in coordinates:
        k = model.coordinate_index(c)
        _, scale = coordinate_unit(model, c)
        step = step_deg if scale != 1000.0 else step_translation * 1000.0
        lo, hi = np.asarray(model.coordinates[k].range) * scale
        if not (np.isfinite(lo) and np.isfinite(hi)):
            raise ValueError(f"coordinate {c!r} has an unbounded range; give a range to sweep it")
        tol = 1e-4 * step  # ranges stored in radians miss whole degrees by ~1e-7
        ang = np.arange(math.ceil((lo - tol) / step), math.floor((hi + tol) / step) + 1) * step
        ang = ang[(ang >= lo - tol) & (ang <= hi + tol)]
        if not len(ang) or ang[0] > lo + tol:
            ang = np.concatenate([[lo], ang])
        if ang[-1] < hi - tol:
            ang = np.concatenate([ang, [hi]])
        q = np.repeat(base[None], len(ang), axis=0)
        q[:, k] = np.clip(ang / scale, *model.coordinates[k].range)
        out.append(Sweep(c, ang, q))
    return out


def _minus_fd(model: Model, q: np.ndarray, k: int, muscles, compat: bool, h: float = FD_STEP) -> np.ndarray:
    """-dL/dq_k (N, M) of the package's length, with the stencil OpenSim's reference uses (one-sided at bounds)."""
    lo, hi = model.coordinates[k].range
    x = q[:, k]

    def at(dx):
        qq = q.copy()
        qq[:, k] = x + dx
        return muscle_lengths(model, qq, muscles, opensim_compat=compat, allow_out_of_range=True)  # steps past a range end

    lp, lm, lp2, lm2, l0 = at(h), at(-h), at(2 * h), at(-2 * h), at(0.0)
    d = (lp - lm) / (2 * h)
    low = x - h < lo
    high = (x + h > hi) & ~low
    d[low] = ((-3 * l0 + 4 * lp - lp2) / (2 * h))[low]
    d[high] = ((3 * l0 - 4 * lm + lm2) / (2 * h))[high]
    return -d


def _notice(msg: str) -> None:
    """An INFO message, shown on stderr even when the application has not configured logging."""
    if logging.getLogger().handlers:
        log.info(msg)
    else:
        import sys
        sys.stderr.write(msg + "\n")
        sys.stderr.flush()


def _warm_up(model: Model, q: np.ndarray, muscles) -> float:
    """Compile the numba kernels outside the timings; if that takes more than 2 s (compiling, not loading
    numba's cache) say so while it runs."""
    import threading
    t0 = time.perf_counter()
    timer = threading.Timer(2.0, _notice, ("  compiling the numba kernels (first use: about a minute; cached "
                                           "afterwards) ...",))
    timer.daemon = True
    timer.start()
    try:
        for compat in (True, False):
            lengths_and_moment_arms(model, q[:1], muscles, opensim_compat=compat, allow_out_of_range=True)
            muscle_lengths(model, q[:1], muscles, opensim_compat=compat, allow_out_of_range=True)
    finally:
        timer.cancel()
    t = time.perf_counter() - t0
    if t > 2.0:
        _notice(f"  numba kernels ready in {t:.1f} s (not counted in the timings)")
    return t


def package_evaluation(model: Model, q: np.ndarray, muscles: Sequence[str], ma_coordinates: Sequence[str], *,
                       derivatives: bool = True) -> dict:
    """The package's L and R at configurations ``q`` (N, n_q) in both modes, and -dL/dq of both lengths.

    Keys: ``length``/``length_fresh`` (N, M); ``r``/``r_fresh`` (N, n_q, M) (``opensim_compat`` / fresh
    geometry); ``fd``/``fd_fresh`` (N, M, K) minus the difference quotients of the lengths about the
    moment-arm coordinates (with ``derivatives``); ``seconds`` (compiled kernels warm) and ``compile_seconds``."""
    compile_s = _warm_up(model, q, muscles)
    t0 = time.perf_counter()
    out = {}
    out["length"], out["r"] = lengths_and_moment_arms(model, q, muscles, opensim_compat=True)
    out["seconds"] = time.perf_counter() - t0
    out["length_fresh"], out["r_fresh"] = lengths_and_moment_arms(model, q, muscles, opensim_compat=False)
    if derivatives:
        kidx = [model.coordinate_index(c) for c in ma_coordinates]
        out["fd"] = np.stack([_minus_fd(model, q, k, muscles, True) for k in kidx], axis=2)
        out["fd_fresh"] = np.stack([_minus_fd(model, q, k, muscles, False) for k in kidx], axis=2)
        # the same quotient over a 4x wider stencil: differs where L is not smooth inside the stencil
        out["fd_wide"] = np.stack([_minus_fd(model, q, k, muscles, True, 4 * FD_STEP) for k in kidx], axis=2)
    out["compile_seconds"] = compile_s
    return out


def _package_r(pkg: dict, ref: str, fresh: bool) -> np.ndarray:
    """The package's R (N, n_q, M) in the basis of reference ``ref``: ``computeMomentArm`` is about OpenSim's speeds
    (angular velocities for Ball, Free and Ellipsoid joints' angles: :func:`.bridge.moment_arms_about_speeds`),
    ``minus_dL_dq`` about the coordinates."""
    key = "r_fresh" if fresh else "r"
    if ref.startswith("computeMomentArm") and key + "_speeds" in pkg:
        key += "_speeds"
    return pkg[key]


def _outliers(d: np.ndarray, floor: float) -> np.ndarray:
    """Indices i where |d[i]| stands out from its neighbours at distance 2 and 3 (a local, scale-free test)."""
    n = len(d)
    a = np.abs(d)
    nb = np.zeros(n)
    for off in (-3, -2, 2, 3):
        sh = np.full(n, np.nan)
        if off < 0:
            sh[-off:] = a[:off]
        else:
            sh[:-off] = a[off:]
        nb = np.fmax(nb, sh)
    return np.nonzero(a > 10.0 * nb + floor)[0]


def discontinuities(length: np.ndarray, moment_arm: np.ndarray | None = None, *, length_floor: float = 1e-7,
                    moment_arm_floor: float = 1e-5) -> np.ndarray:
    """Boolean mask (n,) of the sweep points beside a jump or kink of L along one sweep.

    A jump of L shows as an isolated spike of its second difference; a kink (a wrap engaging or releasing,
    a conditional point switching) as a spike of the first difference of the moment arm."""
    n = len(length)
    mask = np.zeros(n, dtype=bool)
    if n < 5:
        return mask
    for i in _outliers(np.diff(length, 2), length_floor):
        mask[i:i + 3] = True
    if moment_arm is not None:
        for i in _outliers(np.diff(moment_arm), moment_arm_floor):
            mask[i:i + 2] = True
    return mask


def explain_differences(model: Model, muscles: Iterable[str]) -> dict[str, dict[str, list[str]]]:
    """The structural causes that apply to each muscle: ``{muscle: {"same_body": [...], "projection": [...],
    "loop": [...]}}`` (a moving point beside a point on the same body; couplers of several independent coordinates,
    listing the coordinates whose moment arms OpenSim's coupling projection changes; the generalized coordinates of
    a point, line or weld constraint loop of several degrees of freedom, whose moment arms OpenSim's constraint projection
    changes)."""
    by = {m.name: m for m in model.muscles}
    doc = model.extras.get("document")
    multi = [c for c in (doc.couplers if doc is not None else []) if len(c.independents) > 1]
    projected = sorted({i for c in multi for i in c.independents})
    chained = [d for d in model.dependent_coordinates if d.source.startswith("point constraint")]
    looped = []
    if chained:  # the generalized coordinates the loops' dependents move with (OpenSim's projection moves them all)
        q0 = np.array([c.default for c in model.coordinates])
        lo, hi = model.coordinate_ranges.T
        span = np.where(np.isfinite(hi - lo), hi - lo, 1.0)
        q = np.vstack([q0, np.clip(q0 + np.random.default_rng(0).uniform(-0.02, 0.02, (3, q0.size)) * span, lo, hi)])
        cache: dict = {}
        moved = np.zeros(model.n_q, dtype=bool)
        for d in chained:
            moved |= np.any(d.function.evaluate(q, 1, cache).gradient != 0.0, axis=0)
        looped = [model.coordinate_names[k] for k in np.flatnonzero(moved)]
        looped = looped if len(looped) > 1 else []
    out = {}
    for name in muscles:
        pts = by[name].points
        same = []
        for i, p in enumerate(pts):
            if p.kind == "moving" and any(0 <= j < len(pts) and pts[j].source_body == p.source_body
                                          for j in (i - 1, i + 1)):
                same.append(p.name)
        out[name] = {"same_body": same, "projection": projected, "loop": looped}
    return out


def _classify(reference: str, diff: np.ndarray, other_mode_diff: np.ndarray, pkg: dict, pkg_r: np.ndarray,
              os_vals: np.ndarray, disc: np.ndarray, structural: dict, muscles, ma_coordinates, tol: float,
              compat: bool, fd_noise: np.ndarray | None = None) -> np.ndarray:
    """Cause key (N, M, K) of every difference above tolerance ('' where within tolerance).

    ``fd_noise`` (M,): for ``minus_dL_dq``, the bound 4 eps / h on a difference of two finite differences (the
    one-sided stencil at a range end; 2 eps / h for the central one) of lengths that agree to eps (the largest
    |L - L_OpenSim| of the muscle over the sweeps)."""
    undefined = ~np.isfinite(diff)  # a NaN is a difference, never an agreement
    above = (np.abs(diff) > tol) | undefined
    cause = np.full(diff.shape, "", dtype=object)
    cause[above] = "unexplained"
    zero_length = undefined & (np.abs(pkg["length"]) < 1e-12)[:, :, None] if "length" in pkg else undefined & False
    cause[zero_length] = "zero_length_path"
    above = above & ~zero_length
    todo = above & ~disc
    cause[above & disc] = "discontinuity"
    if reference == "minus_dL_dq":
        fd, fdf = pkg["fd"], pkg["fd_fresh"]
        noise = 0.0 if fd_noise is None else fd_noise[None, :, None]
        reproduced = np.abs(fd - os_vals) <= tol + noise  # the package's getLength derivative = OpenSim's
        stale = np.abs(fdf - fd) > tol / 2
        approx = np.abs(pkg_r - fdf) > tol / 2
        rough = np.abs(pkg["fd_wide"] - fd) > 1e-6  # a jump or kink of L within the difference stencil
        cause[todo & reproduced & rough] = "discontinuity"
        todo = todo & ~rough
        within_noise = todo & (np.abs(diff) <= tol + noise)
        cause[within_noise] = "finite_difference_noise"
        todo = todo & ~within_noise
        both = todo & reproduced & stale & approx
        cause[todo & reproduced & stale & ~approx] = "stale_cache_getLength"
        cause[todo & reproduced & ~stale] = "approximate_wrapping"
        cause[both] = "stale_cache_getLength+approximate_wrapping"
        return _near_zero_length(cause, pkg)
    cause[todo & (np.abs(other_mode_diff) <= tol)] = "stale_cache"
    left = todo & (cause == "unexplained")
    for mi, m in enumerate(muscles):
        s = structural[m]
        for kk, c in enumerate(ma_coordinates):
            sel = left[:, mi, kk]
            if not sel.any():
                continue
            if reference == "computeMomentArm" and s["same_body"]:
                cause[sel, mi, kk] = "moving_point_same_body"
            elif c in s["projection"]:
                cause[sel, mi, kk] = "coupler_projection"
            elif c in s["loop"]:
                cause[sel, mi, kk] = "constraint_projection"
    return _near_zero_length(cause, pkg)


def _near_zero_length(cause: np.ndarray, pkg: dict) -> np.ndarray:
    """A discontinuity where the path is shorter than NEAR_ZERO_LENGTH: its two ends nearly meet (Tug_of_War's
    block at its range end), not a wrap or a conditional point."""
    if "length" in pkg:
        short = (np.abs(pkg["length"]) < NEAR_ZERO_LENGTH)[:, :, None] & (cause == "discontinuity")
        cause[short] = "near_zero_length"
    return cause


def _cause_text(keys: Iterable[str]) -> str:
    parts = []
    for k in keys:
        for p in k.split("+"):
            if p and CAUSES[p] not in parts:
                parts.append(CAUSES[p])
    return "; ".join(parts)


def _summaries(model, sweeps, muscles, mac, refs, pkg, osv, compat, structural) -> tuple[pd.DataFrame, dict]:
    """Per reference, muscle, swept coordinate and moment-arm coordinate: the statistics and causes."""
    rows = []
    causes_all = {}
    kidx = [model.coordinate_index(c) for c in mac]
    units = [u for u in ("deg", "mm", "s") if u in {sweep_unit(model, s.coordinate) for s in sweeps}]
    os_len = next((osv[r]["lengths"] for r in ("computeMomentArm", "minus_dL_dq", "computeMomentArm_mvp")
                   if r in osv), None)
    for ref in refs:
        r_cmp = _package_r(pkg, ref, not compat)[:, kidx, :].transpose(0, 2, 1)  # (N, M, K)
        r_oth = _package_r(pkg, ref, compat)[:, kidx, :].transpose(0, 2, 1)
        vals = osv[ref]["values"]
        diff = r_cmp - vals
        other = r_oth - vals
        disc = np.zeros(diff.shape, dtype=bool)
        start = 0
        for s in sweeps:
            n = len(s.angles_deg)
            sl = slice(start, start + n)
            ks = model.coordinate_index(s.coordinate)
            for mi in range(len(muscles)):
                lens = [pkg["length"][sl, mi]] + ([os_len[sl, mi]] if os_len is not None else [])
                m = np.zeros(n, dtype=bool)
                for ln in lens:
                    m |= discontinuities(ln, pkg["r"][sl, ks, mi])
                disc[sl, mi, :] = m[:, None]
            start += n
        noise = None
        if ref == "minus_dL_dq" and osv[ref].get("lengths") is not None:
            eps = np.nanmax(np.abs(pkg["length"] - osv[ref]["lengths"]), axis=0)  # (M,) lengths' agreement, m
            noise = 4.0 * eps / FD_STEP  # the one-sided stencil at a range end: (3 + 4 + 1) eps / (2 h)
        cause = _classify(ref, diff, other, pkg, r_cmp, vals, disc, structural, muscles, mac, TOLERANCE[ref],
                          compat, noise)
        causes_all[ref] = cause
        start = 0
        for s in sweeps:
            n = len(s.angles_deg)
            sl = slice(start, start + n)
            for mi, mu in enumerate(muscles):
                for kk, c in enumerate(mac):
                    if np.isnan(vals[sl, mi, kk]).all():
                        continue  # not evaluated (cross=False)
                    cs = cause[sl, mi, kk]
                    defined = cs != "zero_length_path"  # the moment arm exists (other NaNs stay in, as NaN)
                    d = np.abs(diff[sl, mi, kk])
                    o = np.abs(vals[sl, mi, kk][defined])
                    dm = disc[sl, mi, kk] | (cs == "discontinuity") | (cs == "near_zero_length") | ~defined
                    i = int(np.argmax(np.where(defined, d, -1.0)))
                    smooth = d[~dm]
                    keys = [k for k in dict.fromkeys(cs[np.argsort(-np.where(np.isnan(d), np.inf, d))]) if k]
                    dd = d[defined] if defined.any() else np.zeros(1)
                    rows.append({
                        "reference": ref, "muscle": mu, "swept_coordinate": s.coordinate,
                        "moment_arm_coordinate": c, "points": n,
                        "max_abs_difference_m": dd.max(), "median_abs_difference_m": float(np.median(dd)),
                        "p95_abs_difference_m": float(np.percentile(dd, 95)),
                        "relative_error": dd.max() / o.max() if len(o) and o.max() > 1e-6 else np.nan,
                        **{f"sweep_value_of_max_{u}": s.angles_deg[i] if u == sweep_unit(model, s.coordinate)
                           else np.nan for u in units},
                        "max_abs_difference_smooth_m": smooth.max() if len(smooth) else 0.0,
                        "discontinuity_points": int((dm & defined).sum()),
                        "zero_length_points": int((~defined).sum()),
                        **{f"discontinuity_sweep_values_{u}": "" for u in units},
                        f"discontinuity_sweep_values_{sweep_unit(model, s.coordinate)}": " ".join(f"{a:g}" for a in s.angles_deg[dm & defined][:8])
                        + (" ..." if (dm & defined).sum() > 8 else ""),
                        "other_mode_max_abs_difference_m": np.abs(other[sl, mi, kk][defined]).max(initial=0.0),
                        "points_above_tolerance": int((((d > TOLERANCE[ref]) | np.isnan(d)) & defined).sum()),
                        "unexplained_points": int((cs == "unexplained").sum()),
                        "cause": _cause_text(keys)})
            start += n
    return pd.DataFrame(rows), causes_all


def _coordinate_columns(model: Model, q: np.ndarray) -> dict[str, np.ndarray]:
    out = {}
    for k, c in enumerate(model.coordinates):
        unit, scale = coordinate_unit(model, c.name)
        out[f"{c.name}_{'deg' if unit == 'deg' else 'm'}"] = q[:, k] * (scale if unit == "deg" else 1.0)
    return out


def _tables(model, sweeps, q, muscles, mac, refs, pkg, osv, compat) -> dict[str, pd.DataFrame]:
    """The written tables: one package table (rows: configuration x muscle; every coordinate's value) and one
    per reference (OpenSim's values and the differences), joined on ``configuration`` and ``muscle``."""
    n, m = len(q), len(muscles)
    sw = np.concatenate([[s.coordinate] * len(s.angles_deg) for s in sweeps])
    ang = np.concatenate([s.angles_deg for s in sweeps])
    rep = lambda a: np.repeat(a, m)  # noqa: E731
    kidx = [model.coordinate_index(c) for c in mac]
    base = {"configuration": rep(np.arange(n)), "swept_coordinate": rep(sw)}
    base.update({k: rep(v) for k, v in sweep_value_columns(model, sw, ang).items()})
    base.update({k: rep(v) for k, v in _coordinate_columns(model, q).items()})
    base["muscle"] = np.tile(np.asarray(muscles, dtype=object), n)
    cmp_key, oth_key = ("", "_fresh") if compat else ("_fresh", "")
    other = "fresh_geometry" if compat else "opensim_compat"
    pk = dict(base)
    pk["length_m"] = pkg["length" + cmp_key].ravel()
    pk[f"length_{other}_m"] = pkg["length" + oth_key].ravel()
    for kk, c in zip(kidx, mac):
        pk[f"moment_arm_{c}_m"] = pkg["r" + cmp_key][:, kk, :].ravel()
    for kk, c in zip(kidx, mac):
        pk[f"moment_arm_{c}_{other}_m"] = pkg["r" + oth_key][:, kk, :].ravel()
    tables = {"package": pd.DataFrame(pk)}
    os_len = next((osv[r]["lengths"] for r in ("computeMomentArm", "minus_dL_dq", "computeMomentArm_mvp")
                   if r in osv), None)
    for ref in refs:
        r_cmp = _package_r(pkg, ref, not compat)
        t = {"configuration": rep(np.arange(n)), "muscle": base["muscle"]}
        t["opensim_length_m"] = osv[ref]["lengths"].ravel()
        for kk, (k, c) in enumerate(zip(kidx, mac)):
            t[f"opensim_moment_arm_{c}_m"] = osv[ref]["values"][:, :, kk].ravel()
            t[f"difference_{c}_m"] = (r_cmp[:, k, :] - osv[ref]["values"][:, :, kk]).ravel()
        tables[ref] = pd.DataFrame(t)
    if os_len is not None:
        tables["package"]["opensim_length_m"] = os_len.ravel()
    return tables


def write_sto_tables(out: Path, model: Model, time_or_index: np.ndarray, length: np.ndarray, r: np.ndarray,
                     muscles: Sequence[str], ma_coordinates: Sequence[str], prefix: str, q: np.ndarray | None = None,
                     protect: Sequence = ()) -> list[Path]:
    """MuscleAnalysis-like storage files: ``PREFIX_Length.sto`` and ``PREFIX_MomentArm_<coordinate>.sto``
    (columns: time, then one per muscle) and, with ``q``, ``PREFIX_coordinates.mot`` (rotational coordinates in
    degrees, the others -- translations, OpenSim's "coupled" -- in metres and radians, as OpenSim reads them)."""
    from osim_emb.io.motion import write_motion
    out.mkdir(parents=True, exist_ok=True)
    written = []
    t = pd.DataFrame({"time": time_or_index})
    tab = pd.concat([t, pd.DataFrame(length, columns=list(muscles))], axis=1)
    p = out / f"{prefix}_Length.sto"
    write_motion(p, tab, name="Length", protect=protect)
    written.append(p)
    for c in ma_coordinates:
        k = model.coordinate_index(c)
        tab = pd.concat([t, pd.DataFrame(r[:, k, :], columns=list(muscles))], axis=1)
        p = out / f"{prefix}_MomentArm_{c}.sto"
        write_motion(p, tab, name=f"MomentArm_{c}", protect=protect)
        written.append(p)
    if q is not None:
        cols = {}
        for k, c in enumerate(model.coordinates):  # OpenSim reads only Rotational coordinates as degrees
            cols[c.name] = np.degrees(q[:, k]) if c.motion_type == "rotational" else q[:, k]
        p = out / f"{prefix}_coordinates.mot"
        write_motion(p, pd.concat([t, pd.DataFrame(cols)], axis=1), name="Coordinates", in_degrees=True,
                     protect=protect)
        written.append(p)
    return written


def _reference_jobs(model: Model, model_path, sweeps: list[Sweep], refs: Sequence[str], ma_coordinates, cross,
                    mvp_dir: Path | None, prefetch: bool = False):
    """OpenSim's jobs ``[(reference, .osim path)]`` (the _mvp model written to ``mvp_dir``, once for a prefetch and
    the study of the same model that follows), the coordinate ranges and the masks of the moment arms to evaluate."""
    jobs = []
    if refs:
        mvp_path = None
        if "computeMomentArm_mvp" in refs:
            from osim_emb.io.osim_writer import moving_points_as_bodies, write_osim
            mvp_dir.mkdir(parents=True, exist_ok=True)
            mvp_path = mvp_dir / (Path(model_path).stem + "_mvp.osim")
            done = _prefetched_mvp.pop(str(mvp_path), None)
            if done is None or done[0] is not model or done[1] != _mtime(mvp_path):  # not written by a prefetch
                write_osim(moving_points_as_bodies(model.extras["document"]), mvp_path, protect=[model_path])
            if prefetch:
                _prefetched_mvp[str(mvp_path)] = (model, _mtime(mvp_path))
            mvp_path = str(mvp_path)
        jobs = [(r, mvp_path if r == "computeMomentArm_mvp" else str(model_path)) for r in refs]
    ranges = np.array([c.range for c in model.coordinates], dtype=float)
    mask = None
    if cross is not True:
        diagonal = np.concatenate([np.repeat(np.array([[c == s.coordinate for c in ma_coordinates]]),
                                             len(s.angles_deg), 0) for s in sweeps])
        mask = {r: diagonal for r in refs if not (cross and r in cross)}
    return jobs, ranges, mask


_prefetched_mvp: dict[str, tuple] = {}  # _mvp file -> (model, mtime) written for a prefetch, until the study runs


def _mtime(path: Path):
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def prefetch_moment_arm_study(model_path: str, sweep: Sequence[str], *, model: Model, out_dir: str | Path,
                              step_deg: float = 1.0, muscles: Sequence[str] | None = None,
                              ma_coordinates: Sequence[str] | None = None, references: Sequence[str] = REFERENCES,
                              fixed: dict[str, float] | None = None, workers: int | None = None, cache_dir=None,
                              cross: bool | Sequence[str] = True, step_mm: float = 5.0, **_ignored) -> int:
    """Submit OpenSim's evaluations of :func:`run_moment_arm_study` with the same arguments to the worker
    processes and return at once (the number of references submitted), so that they run while this process
    does other work (compiles); the study collects them.  Writes the _mvp model into ``out_dir`` as the study
    does.  :func:`.reference_values.cancel_prefetched` drops what no study collected."""
    from osim_emb.opensim.reference_values import prefetch_references
    muscles = list(muscles) if muscles else [m.name for m in model.muscles]
    ma_coordinates = list(ma_coordinates) if ma_coordinates else list(sweep)
    sweeps = make_sweeps(model, sweep, step_deg, fixed, step_translation=step_mm / 1000.0)
    q = np.vstack([s.q for s in sweeps])
    jobs, ranges, mask = _reference_jobs(model, model_path, sweeps, list(references), ma_coordinates, cross,
                                         Path(out_dir), prefetch=True)
    return prefetch_references(jobs, q, model.coordinate_names, ranges, muscles, ma_coordinates, fd_step=FD_STEP,
                               workers=workers, cache_dir=cache_dir, mask=mask)


def run_moment_arm_study(model_path: str, sweep: Sequence[str], *, step_deg: float = 1.0,
                         muscles: Sequence[str] | None = None, ma_coordinates: Sequence[str] | None = None,
                         references: Sequence[str] = REFERENCES, fixed: dict[str, float] | None = None,
                         opensim_compat: bool = True, out_dir: str | Path | None = None, model: Model | None = None,
                         progress: bool = True, workers: int | None = None, cache_dir=None,
                         cross: bool | Sequence[str] = True, step_mm: float = 5.0, **_ignored) -> dict:
    """Run the whole comparison; write its tables to ``out_dir``; return the tables and a summary.

    Figures are drawn from the result by :func:`osim_emb.report.comparison_figures.moment_arm_figures`
    (:func:`osim_emb.report.comparisons.compare_with_opensim` runs both).

    ``opensim_compat`` chooses the package mode compared with OpenSim (default: the one that reproduces
    OpenSim's wrap-point cache); the other mode's differences are reported beside it.  ``cross=False``
    asks OpenSim only for the moment arm about the swept coordinate in each sweep (the others are NaN);
    a list of references asks those for every moment-arm coordinate and the others for the swept one.

    Parameters
    ----------
    model_path : str
        The .osim (or JSON model) file.
    sweep : sequence of str
        Coordinates swept one at a time (the others at their defaults or ``fixed``).
    step_deg : float
        Sweep step of rotational coordinates, degrees (translational ones: 5 mm; :func:`make_sweeps`).
    muscles, ma_coordinates : sequence of str, optional
        Muscles and moment-arm coordinates compared (default: all).
    references : sequence of str
        OpenSim references: ``computeMomentArm``, ``computeMomentArm_mvp``, ``minus_dL_dq`` (OpenSim's
        lengths differentiated); empty: the package alone, without OpenSim.
    fixed : dict, optional
        Coordinate -> value (rad, m) held during the sweeps.
    out_dir : path, optional
        Where tables (CSV, .sto) are written; None writes nothing.
    progress : bool
        Show a progress bar.

    Returns
    -------
    dict
        ``table`` (one row per pose, reference, muscle and coordinate: ``package_m``, ``opensim_m``,
        ``difference_m`` in metres), ``summary`` (worst differences and their causes), ``timings``, ...

    Examples
    --------
    Package only (no OpenSim needed):

    >>> import osim_emb as oe
    >>> from osim_emb.io.builtin_models import builtin_model_path
    >>> study = oe.run_moment_arm_study(str(builtin_model_path()), ["shoulder_elv"], step_deg=30,
    ...                                 muscles=["DELT1"], references=(), progress=False)
    >>> len(study["table"])  # 0, 30, ..., 180 degrees
    7

    With OpenSim: the package's R against OpenSim's own -dL/dq (metres):

    >>> import opensim  # the test of this example is skipped without OpenSim
    >>> study = oe.run_moment_arm_study(str(builtin_model_path()), ["shoulder_elv"], step_deg=30,
    ...                                 muscles=["DELT1"], references=("minus_dL_dq",), progress=False)
    >>> bool(study["table"]["difference_m"].abs().max() < 1e-8)
    True
    """
    from osim_emb.io import load_osim
    if _ignored.get("plot"):
        raise TypeError("run_moment_arm_study computes and writes tables only: draw the figures with "
                        "osim_emb.compare_with_opensim or osim_emb.report.comparison_figures.moment_arm_figures")
    if _ignored:
        log.debug("ignored options: %s", sorted(_ignored))
    is_json = str(model_path).lower().endswith(".json")
    if model is None:
        if is_json:
            from osim_emb.io.model_json import load_model
            model = load_model(model_path)
        else:
            model = load_osim(model_path)
    if is_json and references:  # OpenSim's references need the .osim the JSON model keeps
        import tempfile
        from osim_emb.io.osim_writer import write_osim
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
    unknown = [m for m in muscles if m not in {mu.name for mu in model.muscles}]
    if unknown:
        raise ValueError(f"{model_path}: no muscle named {', '.join(map(repr, unknown))}")
    ma_coordinates = list(ma_coordinates) if ma_coordinates else list(sweep)
    for names, what in ((sweep, "to sweep (--sweep)"), (ma_coordinates, "for the moment arms (--coordinates)")):
        unknown = [c for c in names if c not in model.coordinate_names]
        if unknown:
            raise ValueError(f"{model_path}: no coordinate named {', '.join(map(repr, unknown))} {what}; the "
                             f"model's coordinates: {', '.join(model.coordinate_names)}")
    sweeps = make_sweeps(model, sweep, step_deg, fixed, step_translation=step_mm / 1000.0)
    if any(d.source.startswith("point constraint") for d in model.dependent_coordinates):
        sweeps = [closing_part(model, s) for s in sweeps]
    q = np.vstack([s.q for s in sweeps])
    refs = list(references)
    chained = [d for d in model.dependent_coordinates if d.source.startswith("point constraint")]
    # the package's side runs in a thread while OpenSim's workers run (numba's first compilation overlaps them)
    from concurrent.futures import ThreadPoolExecutor
    side = ThreadPoolExecutor(1)
    pkg_future = side.submit(package_evaluation, model, q, muscles, ma_coordinates,
                             derivatives="minus_dL_dq" in refs)
    scratch = None  # a temporary folder for the _mvp model when there is no output folder (removed below)
    if "computeMomentArm_mvp" in refs and not out_dir:
        import tempfile
        scratch = tempfile.mkdtemp(prefix="osim_emb_mvp_")
    jobs, ranges, mask = _reference_jobs(model, model_path, sweeps, refs, ma_coordinates, cross,
                                         Path(out_dir) if out_dir else Path(scratch) if scratch else None)
    names_os, q_os, steps = model.coordinate_names, q, None
    if chained:  # OpenSim gets the loop's coordinates too (its constraint error checks them: bridge)
        cache = {}
        q_os = np.column_stack([q] + [d.function.evaluate(q, 0, cache).value for d in chained])
        names_os = model.coordinate_names + [d.name for d in chained]
        ranges = np.vstack([ranges, [d.range for d in chained]])
        if "minus_dL_dq" in refs:
            steps = loop_steps(model, chained, q, ma_coordinates, FD_STEP)
    try:
        osv = evaluate_references(jobs, q_os, names_os, ranges, muscles, ma_coordinates,
                                  fd_step=FD_STEP, workers=workers, cache_dir=cache_dir, progress=progress,
                                  mask=mask, steps=steps) if jobs else {}
        pkg = pkg_future.result()
        doc = model.extras.get("document")
        if doc is not None and any(j.type in ANGULAR_VELOCITY_JOINTS for j in doc.joints):
            for key in ("r", "r_fresh"):
                pkg[key + "_speeds"] = moment_arms_about_speeds(model, q, pkg[key])
    finally:
        side.shutdown(wait=True, cancel_futures=True)
        if scratch is not None:
            import shutil
            shutil.rmtree(scratch, ignore_errors=True)
    timings = {"package": pkg["seconds"], "package_compile": pkg["compile_seconds"]}
    for r in refs:
        timings[r] = osv[r]["seconds"]
    structural = explain_differences(model, muscles)
    summary, causes = _summaries(model, sweeps, muscles, ma_coordinates, refs, pkg, osv, opensim_compat, structural)
    tables = _tables(model, sweeps, q, muscles, ma_coordinates, refs, pkg, osv, opensim_compat)
    long = _long_table(model, sweeps, muscles, ma_coordinates, refs, pkg, osv, opensim_compat)
    os_len = tables["package"].get("opensim_length_m")
    length_summary = None
    if os_len is not None:
        d = pd.DataFrame({"muscle": tables["package"].muscle,
                          "opensim_compat": (tables["package"]["length_m" if opensim_compat else
                                                               "length_opensim_compat_m"] - os_len).abs(),
                          "fresh": (tables["package"]["length_fresh_geometry_m" if opensim_compat else
                                                      "length_m"] - os_len).abs()})
        length_summary = d.groupby("muscle", sort=False).max().rename(columns={
            "opensim_compat": "max_abs_length_difference_opensim_compat_m",
            "fresh": "max_abs_length_difference_fresh_geometry_m"}).reset_index()
    worst = {}
    for ref in refs:
        s = summary[summary.reference == ref] if len(summary) else summary
        if not len(s):
            continue
        w = s.loc[s.max_abs_difference_smooth_m.fillna(np.inf).idxmax()]  # a NaN left in is the worst
        worst[ref] = {"muscle": w.muscle, "swept_coordinate": w.swept_coordinate,
                      "moment_arm_coordinate": w.moment_arm_coordinate, "difference": w.max_abs_difference_smooth_m,
                      "max_with_discontinuities": w.max_abs_difference_m}
    result = {"table": long, "tables": tables, "summary": summary, "causes": causes, "worst": worst,
              "timings": timings, "model": model, "model_path": str(model_path), "sweeps": sweeps,
              "muscles": muscles, "ma_coordinates": ma_coordinates, "references": refs,
              "opensim_compat": opensim_compat, "length_summary": length_summary,
              "length_difference": float(length_summary.iloc[:, 1].max()) if length_summary is not None else None,
              "cached": {r: osv[r]["cached"] for r in refs},
              "n_configurations": len(q), "figures": []}
    if out_dir is not None:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        tables["package"].to_csv(out / "package_moment_arms.csv.gz", index=False, float_format="%.12e")
        for ref in refs:
            tables[ref].to_csv(out / f"opensim_{ref}.csv.gz", index=False, float_format="%.12e")
        summary.to_csv(out / "summary.csv", index=False, float_format="%.3e")
        if length_summary is not None:
            length_summary.to_csv(out / "lengths_summary.csv", index=False, float_format="%.3e")
        pd.DataFrame([{"what": k, "seconds": v} for k, v in timings.items()]).to_csv(out / "timings.csv", index=False)
        start = 0
        r_cmp = pkg["r"] if opensim_compat else pkg["r_fresh"]
        l_cmp = pkg["length"] if opensim_compat else pkg["length_fresh"]
        for s in sweeps:
            sl = slice(start, start + len(s.angles_deg))
            write_sto_tables(out / "sto", model, np.arange(len(s.angles_deg), dtype=float), l_cmp[sl], r_cmp[sl],
                             muscles, ma_coordinates, f"sweep_{s.coordinate}", q=q[sl], protect=[model_path])
            start += len(s.angles_deg)
    return result


def _long_table(model, sweeps, muscles, mac, refs, pkg, osv, compat) -> pd.DataFrame:
    """Tidy comparison table (in memory, for analysis): one row per reference, point, muscle, coordinate."""
    kidx = [model.coordinate_index(c) for c in mac]
    r_cmp = (pkg["r"] if compat else pkg["r_fresh"])[:, kidx, :].transpose(0, 2, 1)
    r_oth = (pkg["r_fresh"] if compat else pkg["r"])[:, kidx, :].transpose(0, 2, 1)
    n, m, k = r_cmp.shape
    sw = np.concatenate([[s.coordinate] * len(s.angles_deg) for s in sweeps])
    ang = np.concatenate([s.angles_deg for s in sweeps])
    idx = np.indices((n, m, k)).reshape(3, -1)
    base = {"muscle": np.asarray(muscles, dtype=object)[idx[1]], "swept_coordinate": sw[idx[0]],
            **sweep_value_columns(model, sw[idx[0]], ang[idx[0]]),
            "moment_arm_coordinate": np.asarray(mac, dtype=object)[idx[2]],
            "package_m": r_cmp.ravel(), "package_other_mode_m": r_oth.ravel(),
            "length_m": np.repeat((pkg["length"] if compat else pkg["length_fresh"]).ravel(), k)}
    parts = []
    for ref in refs or ["none"]:
        d = dict(base)
        if ref in osv and ref.startswith("computeMomentArm") and "r_speeds" in pkg:  # about OpenSim's speeds
            d["package_m"] = _package_r(pkg, ref, not compat)[:, kidx, :].transpose(0, 2, 1).ravel()
            d["package_other_mode_m"] = _package_r(pkg, ref, compat)[:, kidx, :].transpose(0, 2, 1).ravel()
        d["reference"] = ref
        d["opensim_m"] = osv[ref]["values"].ravel() if ref in osv else np.nan
        d["difference_m"] = d["package_m"] - d["opensim_m"]
        d = pd.DataFrame(d)
        parts.append(d[d.opensim_m.notna()] if ref in osv else d)
    t = pd.concat(parts, ignore_index=True)
    t.insert(0, "model", model.name)
    cols = ["model", "reference", "muscle", "swept_coordinate",
            *[c for c in t.columns if c.startswith("sweep_value_")], "moment_arm_coordinate", "package_m", "opensim_m", "difference_m", "package_other_mode_m", "length_m"]
    return t[cols]


def _length_derivative(ref, model: Model, q: np.ndarray, k: int, muscles: Sequence[str], h: float) -> np.ndarray:
    """dL/dq_k of OpenSim's getLength (kept for the study scripts; see :func:`.reference_values.length_derivative`)."""
    names = model.coordinate_names

    def lengths(qq):
        ref.set_configuration(qq, names=names, check=None)
        return np.array([ref.muscle_length(m) for m in muscles])
    lo, hi = model.coordinates[k].range
    return length_derivative(lengths, q, k, lo, hi, h)


def print_report(result: dict, stream=None, detail: bool | None = None) -> None:
    """What the command prints: the mode compared, per reference the worst smooth difference and the units
    above tolerance counted by cause, then every unexplained unit; with ``detail`` (``-v``) every unit above
    tolerance with its causes (discontinuities apart; by default when the ``osim_emb`` logger shows INFO, as
    with ``-v``).  The summary table has one row per unit in any case."""
    import logging
    import sys
    if detail is None:
        detail = logging.getLogger("osim_emb").isEnabledFor(logging.INFO)
    stream = stream or sys.stdout
    t = result["timings"]
    model = result["model"]
    mode = "opensim_compat" if result["opensim_compat"] else "fresh-geometry"
    other = "fresh-geometry" if result["opensim_compat"] else "opensim_compat"
    stream.write(f"{model.name}: {result['n_configurations']} configurations x {len(result['muscles'])} units, "
                 f"package {t['package']:.3f} s (compiled kernels warm)\n")
    if not result["references"]:
        return
    stream.write(f"  the package is compared in {mode} mode (reproduces OpenSim's wrap-point cache)\n"
                 if result["opensim_compat"] else f"  the package is compared in {mode} mode\n")
    if result.get("length_difference") is not None:
        ls = result["length_summary"]
        stream.write(f"  lengths: max |package - OpenSim getLength| = "
                     f"{ls.max_abs_length_difference_opensim_compat_m.max():.2e} m (opensim_compat), "
                     f"{ls.max_abs_length_difference_fresh_geometry_m.max():.2e} m (fresh geometry)\n")
    s = result["summary"]
    for ref, w in result["worst"].items():
        src = "cache" if result["cached"].get(ref) else f"{t[ref]:.1f} s summed over workers"
        d = s[s.reference == ref]
        tol = TOLERANCE[ref]
        ok = d.groupby("muscle").max_abs_difference_m.max() <= tol
        stream.write(f"  {ref:22s} {ok.sum()}/{len(ok)} units within {tol:g} m everywhere; worst away from "
                     f"discontinuities {w['difference']:.3e} m ({w['muscle']} about {w['moment_arm_coordinate']}, "
                     f"swept {w['swept_coordinate']}); {other} mode: max "
                     f"{d.other_mode_max_abs_difference_m.max():.2e} m  (OpenSim {src})\n")
        if d.zero_length_points.sum():
            zero = d[d.zero_length_points > 0]
            stream.write(f"    {int(zero.zero_length_points.sum())} point(s) left out where a path has zero length (its "
                         "two ends meet: the moment arm is undefined; OpenSim returns NaN there) -- "
                         f"{', '.join(dict.fromkeys(zero.muscle))}\n")
        above = d[d.max_abs_difference_m > tol]
        units = above.groupby(["muscle", "moment_arm_coordinate"], sort=False)
        if len(units):
            by_cause: dict[str, int] = {}
            for _, g in units:
                for x in dict.fromkeys(x for cc in g.cause for x in cc.split("; ") if x):
                    by_cause[x] = by_cause.get(x, 0) + 1
            short = {text: key.replace("_", " ") for key, text in CAUSES.items()}
            n_units = above.muscle.nunique()
            stream.write(f"    {n_units} unit(s) above tolerance about {len(units)} (unit, coordinate) pair(s); "
                         "pairs by cause: "
                         + ", ".join(f"{short.get(k, k)} {n}" for k, n in sorted(by_cause.items(),
                                                                                   key=lambda kv: -kv[1]))
                         + ("" if detail else "  (each unit: -v, or the summary table)") + "\n")
        for (m, c), g in units:
            if not detail and not (g.unexplained_points > 0).any():
                continue
            i = g.max_abs_difference_m.idxmax()
            disc = int(g.discontinuity_points.sum())
            causes = "; ".join(dict.fromkeys(x for cc in g.cause for x in cc.split("; ") if x))
            unit = sweep_unit(model, g.swept_coordinate[i])
            stream.write(f"    {m} about {c}: max {g.max_abs_difference_m.max():.2e} m at {g.swept_coordinate[i]} = "
                         f"{g[f'sweep_value_of_max_{unit}'][i]:g} {unit}, {g.max_abs_difference_smooth_m.max():.2e} m away from "
                         f"{disc} discontinuity point(s) -- {causes}\n")
