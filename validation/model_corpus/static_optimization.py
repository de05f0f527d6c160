"""``osim-emb static-optimization`` over the model corpus, against OpenSim 4.6's StaticOptimization.

    python validation/model_corpus/static_optimization.py                # the corpus of run.py (scratch)
    python validation/model_corpus/static_optimization.py --only gait    # a subset (path substring)

For each model that ``results/corpus.csv`` lists as ``agrees`` or ``opensim_coriolis`` with at least one muscle, in
its own subprocess: a 1 s motion of 11 frames moving every generalized coordinate from its default by 0.05 rad
(2 mm for translations; towards the inside of its range) along a smooth step, written as an OpenSim states file
(values and speeds by path, the dependent coordinates from the package's couplings so that OpenSim's constraints
hold); the command ``osim-emb static-optimization MODEL STATES -o ... --no-passive --reserve NAME=F ...`` on it, and
OpenSim's StaticOptimization (AnalyzeTool, IPOPT convergence 1e-8) on the same file with the same reserve
actuators (CoordinateActuators on the generalized coordinates, optimal force F = max(10, twice the largest
generalized force the motion needs there): :func:`reserve_strengths`) and every force the command does not apply
switched off (it applies muscles, coordinate limits, path springs, ligaments and, since round 19, contact,
bushings, springs and prescribed forces), so that both solve the same problem: min Σ a² + Σ r² with the muscles'
active rigid-tendon forces and the reserves balancing the inverse dynamics of the multibody system with the
model's passive forces.  Compared: the activations and
reserve controls at the 11 frames.

Status: ``agrees`` (activations and reserve controls within 1e-6), ``agrees_opensim_looser`` (within 1e-3, the
package's cost no higher and OpenSim's solution leaving its balance unmet by more than 1e-9: IPOPT stopped short on
a flat cost; the ``cost_*`` and ``opensim_balance_residual`` columns), ``opensim_muscle_forces`` (OpenSim's own
muscle and reserve forces balance the package's generalized forces to 1e-4 of their size — the same τ — but
OpenSim's f_opt is not the muscle's own, docs/muscles.md: Schutte1993's generic force-velocity, Millard2012's
pennation of the normalized fibre length, DeGroote's fibre-direction force; the ``muscle_types`` column),
``opensim_coriolis`` (differs on a model whose forward accelerations OpenSim gets wrong, corpus.csv: the
Rajagopal-type knees; its inverse dynamics inherits the velocity-term defect), ``differs``, ``refused`` (the package says why), ``opensim_suboptimal`` (beyond the loose bound, but the package's activations cost less than OpenSim's and balance
τ, while OpenSim's do not: one optimum, and OpenSim's point is not it), ``opensim_fails``, ``error``, ``timeout``
(``opensim_timeout``: the package's part done, OpenSim's StaticOptimization not within the time).
Writes ``results/static_optimization.csv``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
from run import corpus_study, report_stage, run_command  # noqa: E402  (this folder's corpus study)

TOL, TOL_LOOSE = 1e-6, 1e-3
#: muscle models whose f_opt in OpenSim's StaticOptimization is not the muscle's own force (docs/muscles.md)
OPENSIM_OWN_FOPT = ("Millard2012", "Schutte1993", "DeGrooteFregly2016")
RESERVE = 10.0
FRAMES, DURATION = 11, 1.0
COLUMNS = ["model", "coordinates", "muscles", "muscle_types", "status", "max_activation_diff",
           "max_reserve_control_diff", "max_activation", "cost_package", "cost_opensim", "opensim_balance_residual",
           "largest_generalized_force", "package_s", "opensim_s", "reason", "time_s"]


def motion(model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(time, q, q̇): each generalized coordinate from its default by 0.05 rad or 2 mm along 3 s² - 2 s³."""
    t = np.linspace(0.0, DURATION, FRAMES)
    s, ds = 3 * (t / DURATION) ** 2 - 2 * (t / DURATION) ** 3, (6 * t / DURATION**2) * (1 - t / DURATION)
    q0 = np.asarray(model.default_q, dtype=float)
    amp = np.array([0.05 if c.motion_type == "rotational" else 0.002 for c in model.coordinates])
    hi = np.array([c.range[1] for c in model.coordinates])
    amp = np.where(q0 + amp > hi, -amp, amp)
    return t, q0 + np.outer(s, amp), np.outer(ds, amp)


def reserve_strengths(model) -> dict[str, float]:
    """Each coordinate's reserve optimal force: 10 (N m or N), or twice the largest generalized force the motion
    needs there, so that no reserve control exceeds 0.5 and the cost stays of the muscles' order (a cost dominated
    by a few large reserve controls -- a free pelvis's weight -- leaves IPOPT's relative stopping rule loose on the
    activations)."""
    from osim_emb.simulation.force_elements import model_force_elements
    from osim_emb.simulation.motions import inverse_dynamics_of_motion
    t, q, qd = motion(model)
    tau = inverse_dynamics_of_motion(model, t, q, qd,  # with the contact the command applies (jumper: 20x the rest)
                                     force_elements=model_force_elements(model)).drop(columns="time").to_numpy()
    return {n: float(max(RESERVE, 2.0 * np.abs(tau[:, k]).max())) for k, n in enumerate(model.coordinate_names)}


def write_states(osim_model, model, path: Path) -> None:
    """The study's motion as an OpenSim states file (:func:`osim_emb.opensim.bridge.write_states_file`)."""
    from osim_emb.opensim.bridge import write_states_file
    write_states_file(path, osim_model, model, *motion(model))


def study_one(path: str) -> dict:
    import opensim as osim
    from osim_emb import load_osim
    from osim_emb.opensim.static_optimization import opensim_static_optimization, read_storage
    model = load_osim(path)
    row: dict = {"coordinates": model.n_q, "muscles": len(model.muscles),
                 "muscle_types": " ".join(sorted({m.type_name for m in model.muscles}))}
    with tempfile.TemporaryDirectory() as tmp:
        states = Path(tmp) / "states.sto"
        write_states(osim.Model(path), model, states)
        prefix = Path(tmp) / "ours"
        reserves = reserve_strengths(model)
        row["package_s"], refusal = run_command(["static-optimization", path, str(states), "-o", str(prefix), "--no-passive", "--quiet",
                        "--outside-range", "warn",  # a file's default may lie outside its range (OpenSim's too)
                        *[f"--reserve={n}={f:.17g}" for n, f in reserves.items()]])
        if refusal is not None:
            return {**row, "status": "refused", "reason": refusal}
        ours = read_storage(f"{prefix}_StaticOptimization_activation.sto")
        report_stage(row, "opensim")
        t0 = time.perf_counter()
        try:
            ref = opensim_static_optimization(path, states, reserves=reserves, muscles_only=True)
        except Exception as err:  # noqa: BLE001 - OpenSim's exceptions are RuntimeErrors or SWIG's
            return {**row, "status": "opensim_fails", "reason": str(err).replace("\n", " ")[:300]}
        row["opensim_s"] = time.perf_counter() - t0
    theirs = ref["activation"]
    muscles = [m.name for m in model.muscles if m.parameters is not None]  # path springs etc. are left out
    missing = [n for n in muscles if n not in theirs.columns]
    if missing or len(theirs) != len(ours):
        return {**row, "status": "differs",
                "reason": (f"OpenSim's StaticOptimization has no column for {', '.join(missing[:5])} (muscles "
                           "among <components>: getActuators leaves them out)" if missing else
                           f"OpenSim reports {len(theirs)} frames, the package {len(ours)}")[:300]}
    names = [f"reserve_{n}" for n in model.coordinate_names]
    da = float(np.abs(ours[muscles].to_numpy() - theirs[muscles].to_numpy()).max())
    dr = float(np.abs(ours[names].to_numpy() - theirs[names].to_numpy()).max())
    cost = {k: float((tab[muscles + names].to_numpy() ** 2).sum())
            for k, tab in (("package", ours), ("opensim", theirs))}
    balance, scale = balance_residual(model, ref["force"], muscles, names)
    row.update(max_activation_diff=da, max_reserve_control_diff=dr,
               max_activation=float(ours[muscles].to_numpy().max()), cost_package=cost["package"],
               cost_opensim=cost["opensim"], opensim_balance_residual=balance, largest_generalized_force=scale)
    if da <= TOL and dr <= TOL:
        row["status"] = "agrees"
    elif da <= TOL_LOOSE and dr <= TOL_LOOSE and cost["package"] <= cost["opensim"] * (1 + 1e-5) and balance > 1e-9:
        row["status"] = "agrees_opensim_looser"  # OpenSim's IPOPT stopped short of the optimum on a flat cost
    elif balance <= 1e-4 * scale and any(k in row["muscle_types"] for k in OPENSIM_OWN_FOPT):
        row["status"] = "opensim_muscle_forces"  # the same τ; OpenSim's f_opt is not the muscle's own (docs/muscles.md)
    elif cost["package"] < cost["opensim"] and balance > 1e-9 * scale:
        # the package's point balances τ (the command checks it) and costs less than OpenSim's, which does not balance
        # it: the problem is strictly convex, so OpenSim's point is not its optimum (its IPOPT stopped short)
        row["status"] = "opensim_suboptimal"
    else:
        row["status"] = "differs"
    return row


def balance_residual(model, forces, muscles: list[str], reserves: list[str]) -> tuple[float, float]:
    """(largest |τ − R F − reserve forces|, largest |τ|) (N m, N) of OpenSim's solution — its own muscle and reserve
    forces — in the package's R and τ on the study's motion: small when both solved for the same generalized forces,
    whatever each program's muscle model.  R as OpenSim applies tensions (``opensim_compat``: its stale wrap points,
    docs/moment_arms.md), as the command's force sharing uses it."""
    from osim_emb.core.speeds import forces_about_speeds
    from osim_emb.paths.geometry import lengths_and_moment_arms
    from osim_emb.simulation.motions import inverse_dynamics_of_motion
    from osim_emb.simulation.force_elements import model_force_elements
    from osim_emb.simulation.muscle_driven import passive_path_forces_from_model
    t, q, qd = motion(model)
    springs = passive_path_forces_from_model(model)  # applied by both programs (PathSprings, Ligaments)
    tau = inverse_dynamics_of_motion(model, t, q, qd, path_forces=springs,  # and contact, bushings, springs
                                     force_elements=model_force_elements(model)).drop(columns="time").to_numpy()
    _, r = lengths_and_moment_arms(model, q, muscles, allow_out_of_range=True, opensim_compat=True)  # as applied
    unmet = forces_about_speeds(model, q, tau - np.einsum("nkm,nm->nk", r, forces[muscles].to_numpy()))
    residual = unmet - forces[reserves].to_numpy()  # about OpenSim's speeds, where its reserves act
    return float(np.abs(residual).max()), float(np.abs(tau).max())


def main(argv=None) -> int:
    return corpus_study(argv, script=__file__, description=__doc__.split("\n")[0],
                        study=lambda path, _: study_one(path),
                        out=HERE / "results" / "static_optimization.csv", columns=COLUMNS, timeout=300.0,
                        muscles_only=True, summary=lambda row: row.get("max_activation_diff", ""),
                        relabel_coriolis=True)  # OpenSim's velocity terms are off on these knees (corpus.csv)


if __name__ == "__main__":
    sys.exit(main())
