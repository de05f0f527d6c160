"""OpenSim's ``Manager`` on a muscle-driven model with prescribed excitations (reference for
:mod:`osim_emb.simulation.muscle_driven`)."""

from __future__ import annotations

import logging
import time as _time
from typing import Mapping, Sequence

import numpy as np

from osim_emb.opensim.bridge import require_opensim

__all__ = ["opensim_muscle_simulation", "largest_differences", "degroote_time_constant_note"]

log = logging.getLogger(__name__)


def opensim_muscle_simulation(path: str, times: Sequence[float], excitations: Mapping[str, object], *,
                              accuracy: float = 1e-8, controls: Mapping[str, object] | None = None,
                              q0: Mapping[str, float] | None = None, one_shot: bool = False,
                              own_controllers: bool = True, disabled_forces: Sequence[str] = (),
                              external_loads: str | None = None) -> dict:
    """Run OpenSim 4.6's Manager (RungeKuttaMerson, ``accuracy``) from the equilibrated default state.

    ``excitations`` / ``controls`` map muscle / CoordinateActuator names to :class:`ExcitationSpec` (a
    PrescribedController drives them; actuators not named get 0). Returns q (T, n), u (T, n), activation and
    fiber_length (T, M) at ``times`` (integrating to each in turn), the coordinate and muscle names, and
    ``seconds`` (wall time of the integration; with ``one_shot`` one integrate call to the last time, whose
    states are then only the final one, and the Manager's own counts: ``realizations``, ``steps_taken``,
    ``steps_attempted``).  ``own_controllers=False`` disables the controllers the file defines (the package's
    simulations do not apply them), so that both integrate the same inputs; ``disabled_forces`` names forces
    switched off (``appliesForce`` false), e.g. the passive forces the package's simulation says it leaves out
    (``MuscleDrivenSystem.unapplied_passive_forces``); ``external_loads``: an ExternalLoads file added to the
    model."""
    osim = require_opensim()
    model = osim.Model(str(path))
    if external_loads is not None:
        model.addModelComponent(osim.ExternalLoads(str(external_loads), True))
    if not own_controllers:  # the file's own controllers off: only the controls given here (the package's inputs)
        own = model.updControllerSet()
        for i in range(own.getSize()):
            own.get(i).setEnabled(False)
    if disabled_forces:
        found = set()
        forces = model.updForceSet()
        for name in disabled_forces:
            if forces.contains(name):
                forces.get(name).set_appliesForce(False)
                found.add(name)
        if set(disabled_forces) - found:  # forces among the model's <components>
            model.finalizeFromProperties()
            for c in model.getComponentsList():
                f = osim.Force.safeDownCast(c)
                if f is not None and f.getName() in disabled_forces:
                    f.set_appliesForce(False)
                    found.add(f.getName())
        missing = sorted(set(disabled_forces) - found)
        if missing:
            raise ValueError(f"{path}: no force named {', '.join(missing)} to disable")
    ctrl = osim.PrescribedController()
    ctrl.setName("osim_emb_excitations")
    named = {**dict(excitations), **dict(controls or {})}
    actuators = _actuators(osim, model)
    muscle_paths = [a.getAbsolutePathString() for a in actuators if osim.Muscle.safeDownCast(a) is not None]
    for a in actuators:
        spec = named.get(a.getName())
        ctrl.addActuator(a)
        ctrl.prescribeControlForActuator(a.getName(), spec.to_opensim(osim) if spec is not None else osim.Constant(0.0))
    model.addController(ctrl)
    state = model.initSystem()
    cs = model.getCoordinateSet()
    names = [cs.get(i).getName() for i in range(cs.getSize())]
    for n, v in (q0 or {}).items():
        cs.get(n).setValue(state, float(v))
    model.equilibrateMuscles(state)
    ms = [osim.Muscle.safeDownCast(model.getComponent(p)) for p in muscle_paths]
    mnames = [m.getName() for m in ms]
    notes = [n for n in (degroote_time_constant_note(osim, ms, path),) if n]
    for n in notes:
        log.warning(n)

    def record(s):
        model.realizeVelocity(s)
        return ([cs.get(n).getValue(s) for n in names], [cs.get(n).getSpeedValue(s) for n in names],
                [m.getActivation(s) for m in ms], [m.getFiberLength(s) for m in ms])

    manager = osim.Manager(model)
    manager.setIntegratorAccuracy(accuracy)
    state.setTime(0.0)
    manager.initialize(state)
    rows = []
    t0 = _time.perf_counter()
    if one_shot:
        sink = osim.StringLogSink()  # the Manager logs its counts at level info
        level = osim.Logger.getLevelString()
        osim.Logger.setLevelString("info")
        osim.Logger.addSink(sink)
        try:
            t0 = _time.perf_counter()
            s = manager.integrate(float(times[-1]))
            seconds = _time.perf_counter() - t0
        finally:
            osim.Logger.removeSink(sink)
            osim.Logger.setLevelString(level)
        rows.append(record(s))
        counts = _manager_counts(sink.getString())
    else:
        rows.append(record(state))
        for t in times[1:]:
            s = manager.integrate(float(t))
            rows.append(record(s))
        seconds = _time.perf_counter() - t0
    q, u, a, lf = (np.array([r[k] for r in rows]) for k in range(4))
    return {"q": q, "u": u, "activation": a, "fiber_length": lf, "names": names, "muscles": mnames,
            "seconds": seconds, "notes": notes, **(counts if one_shot else {})}


def degroote_time_constant_note(osim, muscles, path) -> str:
    """What differs in OpenSim 4.6 when a model's DeGrooteFregly2016Muscles have different activation or
    deactivation time constants ('' when they do not): ``computeStateVariableDerivatives`` keeps them in
    function-static variables, so every such muscle in the process uses the first one's; the package uses each
    muscle's own (docs/simulation.md)."""
    constants = {}
    for m in muscles:
        d = osim.DeGrooteFregly2016Muscle.safeDownCast(m)
        if d is not None:
            constants[d.getName()] = (d.get_activation_time_constant(), d.get_deactivation_time_constant())
    if len(set(constants.values())) <= 1:
        return ""
    first, (ta, td) = next(iter(constants.items()))
    other = sorted(n for n, c in constants.items() if c != (ta, td))
    return (f"{path}: OpenSim 4.6 runs every DeGrooteFregly2016Muscle with the time constants of the first one it "
            f"evaluates in the process (function-static in computeStateVariableDerivatives; in a fresh process "
            f"the model's first, {first}: {ta:g} / {td:g} s); "
            f"{len(other)} muscle(s) define others ({', '.join(other[:5])}{', ...' if len(other) > 5 else ''}), "
            "so OpenSim's activations of those differ from the model's definition (and from the package's)")


def _actuators(osim, model) -> list:
    """The model's actuators: its ForceSet's, then those among its <components> (Moco's models list their muscles
    there; ``Model::getActuators`` leaves them out)."""
    acts = model.getActuators()
    out = [acts.get(i) for i in range(acts.getSize())]
    seen = {a.getAbsolutePathString() for a in out}
    model.finalizeFromProperties()
    for c in model.getComponentsList():
        a = osim.Actuator.safeDownCast(c)
        if a is not None and a.getAbsolutePathString() not in seen:
            out.append(a)
            seen.add(a.getAbsolutePathString())
    return out


def _manager_counts(log: str) -> dict:
    """realizations, steps_taken, steps_attempted from the summary OpenSim's Manager logs after integrating."""
    import re
    out = {}
    m = re.search(r"number of realizations:\s*(\d+)", log)
    if m:
        out["realizations"] = int(m.group(1))
    m = re.search(r"number of steps taken / attempted:\s*(\d+)\s*/\s*(\d+)", log)
    if m:
        out["steps_taken"], out["steps_attempted"] = int(m.group(1)), int(m.group(2))
    return out


def largest_differences(table, reference: dict) -> dict:
    """Largest |package - OpenSim| over the common instants of a ``simulate_muscles`` table and an
    :func:`opensim_muscle_simulation` result, matched by name (OpenSim's coordinate and muscle orders may differ
    from the model's): ``q`` (rad, m), ``fiber_length`` (m) and ``activation`` over the muscles both have (0 when
    none). Both must hold the same output times."""
    if len(table) != len(reference["q"]):
        raise ValueError(f"the table has {len(table)} instants, OpenSim's result {len(reference['q'])}")
    names = [n for n in reference["names"] if n in table.columns]
    cols = [reference["names"].index(n) for n in names]
    out = {"q": float(np.abs(table[names].to_numpy() - reference["q"][:, cols]).max(initial=0.0))}
    muscles = [m for m in reference["muscles"] if f"{m}_fiber_length" in table.columns]
    k = [reference["muscles"].index(m) for m in muscles]
    for what in ("fiber_length", "activation"):
        ours = table[[f"{m}_{what}" for m in muscles]].to_numpy()
        out[what] = float(np.abs(ours - reference[what][:, k]).max(initial=0.0))
    return out
