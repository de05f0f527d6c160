"""Human-readable descriptions of models (``osim-emb inspect``)."""

from __future__ import annotations

import numpy as np

from osim_emb.model import Model

__all__ = ["describe_model"]


def _rng(r) -> str:
    lo, hi = r
    if not np.isfinite(lo) and not np.isfinite(hi):
        return "unbounded"
    return f"[{lo:.6g}, {hi:.6g}]"


def describe_model(model: Model, functions: bool = True) -> str:
    """A text report: source, coordinates, joints (with f_i(q)), bodies, muscles (Gamma_k), conversion notes."""
    ex = model.extras
    import re
    names = model.coordinate_names

    def named(text: str) -> str:  # a function's inputs x1..xN are the generalized coordinates: their names
        return re.sub(r"\bx(\d+)\b", lambda m: names[int(m[1]) - 1] if 0 < int(m[1]) <= len(names) else m[0], text)
    version = f" (format {ex['version']})" if ex.get("version") is not None else ""
    out = [f"model {model.name!r}" + (f" from {ex['source']}{version}" if ex.get("source") else ""),
           f"  gravity {model.gravity.tolist()}",
           f"  {model.n_q} generalized coordinates, {len(model.dependent_coordinates)} dependent coordinates, "
           f"{model.n_joints} one-DOF joints, {len(model.bodies)} bodies, {len(model.muscles)} musculotendon units, "
           f"{len(model.wrap_objects)} wrap objects", "", "generalized coordinates q:"]
    from osim_emb.core.configuration import rotational_coordinates
    for k, (c, angle) in enumerate(zip(model.coordinates, rotational_coordinates(model))):
        unit = "rad" if angle else "m"
        degrees = (f" = {_rng(tuple(np.degrees(c.range)))} default {np.degrees(c.default):.6g} (deg)"
                   if angle and _rng(c.range) != "unbounded" else "")
        out.append(f"  q{k + 1} {c.name:24s} {c.motion_type:13s} range {_rng(c.range)} default {c.default:.6g} "
                   f"({unit}){degrees}")
    from osim_emb.core.speeds import angular_velocity_joints
    spherical = angular_velocity_joints(model)
    if spherical:
        out += ["", "joints whose rotations' OpenSim speeds are angular velocities u = E(q) q̇ (docs/speeds.md; states "
                "files are read and written so):"]
        out += [f"  {j.type} {j.name!r}: {', '.join(j.coordinates)}" for j in spherical]
    out += ["", "dependent coordinates (functions of q):"]
    for d in model.dependent_coordinates:
        line = f"  {d.name:24s} {d.kind:8s} {d.source}"
        if functions:
            line += f"\n      = {named(d.function.describe())}"
        out.append(line)
    out += ["", "one-DOF joints (frame: parent, kind, axis, joint variable f_i(q)):"]
    for i, j in enumerate(model.joints, start=1):
        line = f"  {i:3d} {j.name:36s} <- {j.parent:3d} {j.kind:9s} axis {np.round(j.axis, 6).tolist()}"
        if j.source:
            line += f"  [{j.source}]"
        if functions:
            line += f"\n      f = {named(j.variable.describe())}"
        out.append(line)
    out += ["", "bodies (frame, mass, centre of mass):"]
    for b in model.bodies:
        out.append(f"  {b.name:36s} frame {b.frame:3d} mass {b.mass:.6g} kg com {np.round(b.com, 6).tolist()} m")
    if model.muscles:
        out += ["", "musculotendon units (type, attachment sequence Gamma_k, wraps):"]
        for m in model.muscles:
            w = ", ".join(x.wrap_object for x in m.wraps)
            out.append(f"  {m.name:12s} {m.type_name:30s} {' - '.join(m.attachment_sequence)}"
                       + (f"  (wraps: {w})" if w else "")
                       + ("" if m.parameters is not None else "  (force model not imported)"))
    if model.wrap_objects:
        out += ["", "wrap objects:"]
        for w in model.wrap_objects:
            out.append(f"  {w.name:20s} {type(w).__name__:14s} on {w.body:16s} quadrant {w.quadrant}")
    if ex.get("forces"):
        from osim_emb.simulation.force_elements import model_force_elements
        elements = model_force_elements(model)
        applied = {law.name for law in elements.laws}
        applied |= {n for n, t in ex["forces"] if t == "CoordinateLimitForce"}
        why = {u.name: u.reason for u in elements.unapplied}
        used = [f"{n} ({t})" for n, t in ex["forces"] if n in applied]
        kept = [f"{n} ({t}{': ' + why[n] if n in why else ''})" for n, t in ex["forces"] if n not in applied]
        if used:
            out += ["", "passive forces the simulations apply (docs/forces.md): " + ", ".join(used)]
        if kept:
            out += ["", "other forces (kept as data, not applied): " + ", ".join(kept)]
    if ex.get("conversion"):
        out += ["", "conversion:"] + [f"  {s}" for s in ex["conversion"]]
    if ex.get("skipped"):
        out += ["", "left out:"]
        for s in ex["skipped"]:
            d = s if isinstance(s, dict) else s.__dict__
            out.append(f"  {d['kind']} {d['name']!r} (line {d['line']}): {d['reason']}")
    if ex.get("notes"):
        out += ["", "notes:"] + [f"  {s}" for s in ex["notes"]]
    return "\n".join(out)
