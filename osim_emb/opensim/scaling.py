"""OpenSim 4.6's ScaleTool and scaled models compared through its API: the references for ``osim-emb scale``."""

from __future__ import annotations

import os
import time as _time
from pathlib import Path

import numpy as np

from osim_emb.opensim.bridge import require_opensim

__all__ = ["opensim_scale_tool", "compare_models", "opensim_upgraded_text"]


def opensim_upgraded_text(path: str | Path) -> str:
    """An .osim file as OpenSim 4.6 reads and writes it (its upgrade of older file versions, the model its ScaleTool
    works on)."""
    import tempfile
    osim = require_opensim()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "upgraded.osim"
        model = osim.Model(str(path))
        model.finalizeConnections()  # (some older files cannot be printed before)
        precision = osim.IO.GetPrecision()
        osim.IO.SetPrecision(20)  # OpenSim writes 8 significant digits by default: arrays (spline knots) lose some
        try:
            model.printToXML(str(out))
        finally:
            osim.IO.SetPrecision(precision)
        return out.read_bytes().decode("utf-8", errors="replace")


def opensim_scale_tool(setup: str | Path) -> float:
    """Run OpenSim's ScaleTool on a setup file as it is (its outputs where it names them, relative to its folder);
    returns the wall time in seconds."""
    osim = require_opensim()
    setup = Path(setup).resolve()
    here = os.getcwd()
    os.chdir(setup.parent)
    try:
        t0 = _time.perf_counter()
        osim.ScaleTool(str(setup)).run()  # False also when a step is not applied: the caller checks the outputs
        return _time.perf_counter() - t0
    finally:
        os.chdir(here)


def compare_models(path_a, path_b, *, poses: int = 5, seed: int = 0) -> dict[str, float]:
    """Largest differences between two models of the same topology, as OpenSim loads them (a path) or holds them (an
    ``opensim.Model``, e.g. one scaled in memory: OpenSim prints spline arrays with 6 significant digits, which
    moves a file's curves by up to ~1e-6): bodies' mass (kg), mass centre (m) and principal moments (kg m²); at
    random poses within the coordinate ranges, bodies' origins and markers in ground (m) and path lengths (m);
    muscles' optimal fibre and tendon slack lengths (m)."""
    osim = require_opensim()
    a, b = (m if isinstance(m, osim.Model) else osim.Model(str(m)) for m in (path_a, path_b))
    sa, sb = a.initSystem(), b.initSystem()
    out: dict[str, list[float]] = {k: [0.0] for k in ("mass", "mass_center", "inertia", "body_origin", "marker",
                                                     "path_length", "optimal_fiber_length", "tendon_slack_length")}

    def vec(v):
        return np.array([v.get(i) for i in range(3)])
    bodies_a, bodies_b = a.getBodySet(), b.getBodySet()
    for k in range(bodies_a.getSize()):
        ba, bb = bodies_a.get(k), bodies_b.get(bodies_a.get(k).getName())
        out["mass"].append(abs(ba.getMass() - bb.getMass()))
        out["mass_center"].append(float(np.abs(vec(ba.getMassCenter()) - vec(bb.getMassCenter())).max()))
        out["inertia"].append(float(np.abs(vec(ba.getInertia().getMoments()) - vec(bb.getInertia().getMoments())).max()))
    muscles_a, muscles_b = a.getMuscles(), b.getMuscles()
    for k in range(muscles_a.getSize()):
        ma, mb = muscles_a.get(k), muscles_b.get(muscles_a.get(k).getName())
        out["optimal_fiber_length"].append(abs(ma.getOptimalFiberLength() - mb.getOptimalFiberLength()))
        out["tendon_slack_length"].append(abs(ma.getTendonSlackLength() - mb.getTendonSlackLength()))
    rng = np.random.default_rng(seed)
    cs_a, cs_b = a.getCoordinateSet(), b.getCoordinateSet()
    markers_b = {b.getMarkerSet().get(i).getName(): b.getMarkerSet().get(i) for i in range(b.getMarkerSet().getSize())}
    for _ in range(poses):
        for i in range(cs_a.getSize()):
            ca = cs_a.get(i)
            if ca.isConstrained(sa):
                continue
            lo, hi = ca.getRangeMin(), ca.getRangeMax()
            value = lo + (hi - lo) * rng.random()
            ca.setValue(sa, value, False)
            cs_b.get(ca.getName()).setValue(sb, value, False)
        a.assemble(sa)
        b.assemble(sb)
        a.realizePosition(sa)
        b.realizePosition(sb)
        for k in range(bodies_a.getSize()):
            pa = vec(bodies_a.get(k).getPositionInGround(sa))
            pb = vec(bodies_b.get(bodies_a.get(k).getName()).getPositionInGround(sb))
            out["body_origin"].append(float(np.abs(pa - pb).max()))
        for k in range(a.getMarkerSet().getSize()):
            m = a.getMarkerSet().get(k)
            if m.getName() in markers_b:
                out["marker"].append(float(np.abs(vec(m.getLocationInGround(sa))
                                                  - vec(markers_b[m.getName()].getLocationInGround(sb))).max()))
        for k in range(muscles_a.getSize()):
            ma = muscles_a.get(k)
            out["path_length"].append(abs(ma.getLength(sa) - muscles_b.get(ma.getName()).getLength(sb)))
    return {k: float(max(v)) for k, v in out.items()}
