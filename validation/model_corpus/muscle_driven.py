"""Muscle-driven simulation over the model corpus: every model the corpus study imports, with its muscles driven
for a short time, against OpenSim 4.6's Manager.

    python validation/model_corpus/muscle_driven.py                # the corpus of run.py (scratch, from the mirrors)
    python validation/model_corpus/muscle_driven.py --only gait    # a subset (path substring)
    python validation/model_corpus/muscle_driven.py --method BDF-jit --out results/muscle_driven_bdf.csv

For each model that ``results/corpus.csv`` lists as ``agrees`` or ``opensim_coriolis`` with at least one muscle, in
its own subprocess (a timeout and a crash stop only that model): ``simulate_muscles`` (``method="auto"``: the
compiled integrator where the model allows it, rtol 1e-10) and ``opensim_muscle_simulation`` (Runge-Kutta-Merson,
accuracy 1e-9) from the same equilibrium state over ``--t-end`` (0.02 s) with the same excitations: the first four
muscles (file order) at 0.3, the fifth a 20 rad/s sine, the others 0 (the file's own controllers, which the package
does not apply and says so, disabled in OpenSim, and so are the contact, bushing and spring forces it does not
apply: ``MuscleDrivenSystem.unapplied_passive_forces``, named in the ``reason`` column).  Models whose forward accelerations OpenSim gets wrong
(``opensim_coriolis`` in corpus.csv: the Rajagopal-type knee, run.py's docstring) are reported as such. Compared at 6 instants: coordinates (rad, m),
the fibre lengths and activations OpenSim's getters report.

Status: ``agrees`` (q within 1e-6, fibre lengths within 1e-7 m, activations within 1e-7), ``differs``,
``opensim_coriolis`` (differs where OpenSim's accelerations are known to be wrong),
``refused`` (the package says why it does not simulate the model: a muscle type or option, a singular mass
matrix), ``opensim_fails`` (OpenSim's Manager stops; its message), ``error`` (any other exception: a defect),
``timeout`` (``opensim_timeout``: the package's simulation done, OpenSim's not within the time). Writes
``results/muscle_driven.csv``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
from run import corpus_study, report_stage  # noqa: E402  (this folder's corpus study)

TOL_Q, TOL_LF, TOL_A = 1e-6, 1e-7, 1e-7
COLUMNS = ["model", "coordinates", "muscles", "status", "max_q_rad_or_m", "max_fiber_length_m", "max_activation",
           "method", "right_hand_sides", "package_s", "opensim_s", "reason", "time_s"]


def excitations(names: list[str]) -> dict:
    from osim_emb.simulation.muscle_driven import ExcitationSpec
    out = {n: ExcitationSpec.parse("0.3") for n in names[:4]}
    if len(names) > 4:
        out[names[4]] = ExcitationSpec.parse("sine:0.2:20:0:0.3")
    return out


def study_one(path: str, t_end: float, method: str = "auto") -> dict:
    from osim_emb import load_osim
    from osim_emb.core.compiled import SingularMassMatrixError
    from osim_emb.opensim.muscle_simulation import largest_differences, opensim_muscle_simulation
    from osim_emb.simulation.excitations import MuscleSimulationError
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, simulate_muscles
    row: dict = {}
    model = load_osim(path)
    row["coordinates"] = model.n_q
    try:
        system = MuscleDrivenSystem(model)
    except MuscleSimulationError as err:
        return {**row, "status": "refused", "reason": str(err)[:300]}
    driven = set(system.muscle_names) | {m.name for m in system.rigid_tendon_muscles}
    names = [m.name for m in model.muscles if m.name in driven]  # file order, stateless muscles included
    row["muscles"] = len(names)
    if method.endswith("-jit"):
        from osim_emb.simulation.muscle_driven_jit import compiled_plan
        plan, why = compiled_plan(system)
        if plan is None:
            return {**row, "status": "refused", "reason": f"{method}: {why}"[:300]}
    exc = excitations(names)
    times = np.linspace(0.0, t_end, 6)
    t0 = time.perf_counter()
    try:
        ours = simulate_muscles(model, t_end, exc, t_eval=times, rtol=1e-10, atol=1e-12, method=method,
                                allow_out_of_range=True)  # OpenSim starts from the file's defaults
    except (MuscleSimulationError, SingularMassMatrixError) as err:
        return {**row, "status": "refused", "reason": str(err)[:300]}
    row.update(method=ours.attrs["method"], right_hand_sides=ours.attrs["nfev"], package_s=time.perf_counter() - t0)
    report_stage(row, "opensim")
    t0 = time.perf_counter()
    try:
        ref = opensim_muscle_simulation(path, times, exc, accuracy=1e-9, own_controllers=False,
                                        disabled_forces=system.unapplied_passive_forces)
    except Exception as err:  # noqa: BLE001 - OpenSim's exceptions are RuntimeErrors or SWIG's
        return {**row, "status": "opensim_fails", "reason": str(err).replace("\n", " ")[:300]}
    row["opensim_s"] = time.perf_counter() - t0
    if system.unapplied_passive_forces:
        row["reason"] = (f"OpenSim run without the {len(system.unapplied_passive_forces)} passive force(s) the "
                         f"package does not apply: {', '.join(system.unapplied_passive_forces)}")[:300]
    dq, dl, da = largest_differences(ours, ref).values()
    row.update(max_q_rad_or_m=dq, max_fiber_length_m=dl, max_activation=da,
               status="agrees" if dq <= TOL_Q and dl <= TOL_LF and da <= TOL_A else "differs")
    if ref["notes"]:  # what OpenSim runs differently from the model's definition (its DeGroote time constants)
        row["reason"] = "; ".join([*filter(None, [row.get("reason")]), *ref["notes"]])[:300]
        if row["status"] == "differs":
            row["status"] = "opensim_time_constants"
    return row


def main(argv=None) -> int:
    def options(parser):
        parser.add_argument("--t-end", type=float, default=0.02, help="seconds simulated (default 0.02)")
        parser.add_argument("--method", default="auto",
                            help="simulate_muscles' method (default auto: RK45-jit where the model allows it); e.g. "
                                 "BDF-jit (a model it cannot run is refused, saying why)")
    return corpus_study(argv, script=__file__, description=__doc__.split("\n")[0],
                        study=lambda path, args: study_one(path, args.t_end, args.method),
                        out=HERE / "results" / "muscle_driven.csv", columns=COLUMNS, timeout=600.0,
                        muscles_only=True, add_options=options,
                        child_options=lambda args: ("--t-end", str(args.t_end), "--method", args.method),
                        relabel_coriolis=True)  # OpenSim's forward accelerations are off already (corpus.csv)


if __name__ == "__main__":
    sys.exit(main())
