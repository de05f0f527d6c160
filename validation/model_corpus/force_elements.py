"""The passive forces OpenSim applies without a path (contact, springs, bushings, prescribed forces;
``osim_emb.simulation.force_elements``) over the model corpus, against OpenSim 4.6's accelerations.

    python validation/model_corpus/force_elements.py              # the corpus of run.py (scratch), a few minutes
    python validation/model_corpus/force_elements.py --only Walker

For each model of ``results/corpus.csv`` (``agrees``, ``opensim_coriolis``) whose file has a HuntCrossleyForce,
SmoothSphereHalfSpaceForce, PointToPointSpring, BushingForce, SpringGeneralizedForce or PrescribedForce, in its own
subprocess: OpenSim's model with every other force switched off (``appliesForce`` false), then at 24 states -- 12
along the package's own 0.4 s passive simulation of the model (so that it meets the floor where it has one) and 12
drawn as run.py draws configurations, with random rates, at t = 0.25 s -- what the elements add to Simbody's u̇
(``realizeAcceleration`` with them minus without any force: OpenSim's velocity terms, wrong on the models run.py
labels ``opensim_coriolis``, cancel) against what they add to the package's, M⁻¹ τ(force elements) in OpenSim's
speeds; and (round 19) the compiled right-hand side with the force-element table
(``compiled_rows``: every law in the kernels, what stays in Python through a callback) against the Python laws'
q̈ at the same states (``max_compiled_rel``, relative to max(1, |q̈|)).  ``contact_states``: the states with a
contact force.  Where the package's passive run fails or is not
tried (closed loops: SciPy's long trial steps send the loop's continuation far, minutes for one right-hand side of
the bouncing block), the drawn states only, said in ``reason``.

Status: ``agrees`` (max |Δu̇ − Δu̇_OpenSim| ≤ 1e-9 max(1, |Δu̇|) and the compiled q̈ within 1e-12), ``differs``, ``unapplied`` (every element of these
types left out by the package, with the reason), ``error``, ``timeout``. Writes ``results/force_elements.csv``.
"""

from __future__ import annotations

import re
import sys
import time
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
from run import _poses, corpus_study  # noqa: E402  (this folder's corpus study)

TOL_REL = 1e-9
COLUMNS = ["model", "status", "elements", "unapplied", "states", "contact_states", "max_udot_rel", "max_tau",
           "max_compiled_rel", "compiled_rows", "reason", "time_s"]
COMPILED_TOL_REL = 1e-12
TYPES = ("HuntCrossleyForce", "SmoothSphereHalfSpaceForce", "PointToPointSpring", "BushingForce",
         "SpringGeneralizedForce", "PrescribedForce")
PATTERN = re.compile("<(" + "|".join(TYPES) + r")[\s>]")


def has_elements(path: Path) -> bool:
    try:
        return PATTERN.search(path.read_text(errors="replace")) is not None
    except OSError:
        return False


def study_one(path: str, args) -> dict:
    from osim_emb.core.kinematics import forward_kinematics
    from osim_emb.io import load_osim
    from osim_emb.opensim.bridge import OpenSimReference
    from osim_emb.simulation import force_elements as fe
    from osim_emb.simulation.motions import simulate
    from osim_emb import forward_dynamics
    t0 = time.perf_counter()
    model = load_osim(path)
    elements = fe.model_force_elements(model)
    row = {"model": path, "elements": elements.describe(),
           "unapplied": "; ".join(f"{u.type} {u.name!r}: {u.reason}" for u in elements.unapplied)}
    if not elements:
        row.update(status="unapplied", time_s=time.perf_counter() - t0)
        return row
    keep = {law.name for law in elements.laws}
    refs = []
    for applied in (keep, set()):  # OpenSim with only the elements, and with no force at all
        ref = OpenSimReference(path, model)
        for c in ref.model_os.getComponentsList():
            f = ref.osim.Force.safeDownCast(c)
            if f is not None and f.getName() not in applied:
                f.set_appliesForce(False)
        ref.state = ref.model_os.initSystem()
        ref.coords = ref.model_os.getCoordinateSet()
        ref.state.setTime(0.25)
        refs.append(ref)
    seed = zlib.crc32(path.encode())
    rng = np.random.default_rng(seed)
    q_drawn = _poses(model, 12, seed)
    q, qd = q_drawn, rng.normal(scale=0.5, size=q_drawn.shape)
    try:  # states along the package's own passive motion (where a model meets its floor)
        if any(d.source.startswith("point constraint") for d in model.dependent_coordinates):
            raise RuntimeError("closed loops: a long trial step sends one right-hand side's continuation far")
        run = simulate(model, 0.4, n_output=13, rtol=1e-8, atol=1e-8, max_seconds=60.0,
                       allow_out_of_range=True)  # OpenSim starts from the file's defaults, in range or not
        names = model.coordinate_names
        q = np.vstack([run[names].to_numpy()[1:], q])
        qd = np.vstack([np.gradient(run[names].to_numpy(), run["time"].to_numpy(), axis=0)[1:], qd])
    except Exception as err:  # noqa: BLE001 - the drawn states only, said in the row
        row["reason"] = f"drawn states only: the passive run failed ({type(err).__name__}: {err})"[:300]
    idx = refs[0].speed_indices()
    cols = [idx[c] for c in model.coordinate_names]
    from osim_emb.core.speeds import speed_jacobian
    contact = fe.ForceElements(tuple(law for law in elements.laws
                                     if isinstance(law, (fe.HuntCrossleyContact, fe.SmoothSphereHalfSpaceContact))))
    worst, largest_tau, done, touching, compiled_worst = 0.0, 0.0, 0, 0, 0.0
    from osim_emb.core.dynamics import ode_rhs
    try:
        table, rest = fe.compiled_rows(model, elements)
        row["compiled_rows"] = len(table)
        compiled_rhs = ode_rhs(model, (lambda t, q_, qd_: fe.force_element_forces(model, rest, [t], q_[None],
                                                                                   qd_[None])[0]) if rest else None,
                               elements=table)
    except ValueError as err:  # a body the compiled dynamics leaves out
        compiled_rhs = None
        row["reason"] = f"{row.get('reason', '')} compiled table not built: {err}".strip()[:300]
    for i in range(len(q)):
        udot = []
        try:
            for ref in refs:
                ref.set_configuration(q[i])
                ref.set_rates(q[i], qd[i])
                udot.append(ref.accelerations()[cols])
        except RuntimeError:  # a loop OpenSim's functions cannot close there: that state is left out
            continue
        theirs = udot[0] - udot[1]  # what the elements add (OpenSim's velocity terms, wrong on some models, cancel)
        tau = fe.force_element_forces(model, elements, [0.25], q[i][None], qd[i][None])
        added = forward_dynamics(model, q[i], qd[i], tau) - forward_dynamics(model, q[i], qd[i])
        ours = np.einsum("nij,nj->ni", speed_jacobian(model, q[i][None]), added)[0]
        worst = max(worst, np.abs(ours - theirs).max() / max(1.0, np.abs(theirs).max()))
        if compiled_rhs is not None:
            python_qdd = forward_dynamics(model, q[i], qd[i], tau)[0]
            kernel_qdd = compiled_rhs(0.25, np.concatenate([q[i], qd[i]]))[model.n_q:]
            compiled_worst = max(compiled_worst, np.abs(kernel_qdd - python_qdd).max()
                                 / max(1.0, np.abs(python_qdd).max()))
        largest_tau = max(largest_tau, np.abs(tau).max())
        if contact:
            kin = forward_kinematics(model, q[i][None], order=1)
            ws = fe.force_element_wrenches(model, kin, qd[i][None], 0.25, contact)
            touching += any(np.abs(w.force).max() > 1e-3 for w in ws)
        done += 1
    row.update(states=done, contact_states=touching, max_udot_rel=worst, max_tau=largest_tau)
    if compiled_rhs is not None:
        row["max_compiled_rel"] = compiled_worst
    row["status"] = "agrees" if done and worst <= TOL_REL and compiled_worst <= COMPILED_TOL_REL else "differs"
    row["time_s"] = time.perf_counter() - t0
    return row


def main(argv=None) -> int:
    return corpus_study(argv, script=__file__, description=__doc__.split("\n")[0], study=study_one,
                        out=HERE / "results" / "force_elements.csv", columns=COLUMNS, timeout=600.0,
                        select=has_elements,
                        summary=lambda r: f"{r.get('elements', '')} {r.get('max_udot_rel', '')}")


if __name__ == "__main__":
    sys.exit(main())
