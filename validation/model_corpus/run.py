"""Model corpus study: every .osim file OpenSim 4.6 loads is imported (or refused by name) and compared with OpenSim.

    python validation/model_corpus/run.py                  # builds the scratch corpus from the git mirrors
    python validation/model_corpus/run.py DIR [DIR ...]    # any folders of .osim files

For each model, in its own subprocess (a timeout and a crash stop only that model):

1. OpenSim 4.6 loads it (``Model(path).initSystem()``); if not, the model is listed as ``opensim_fails``;
2. ``load_osim(path)`` imports it, or refuses it with an :class:`UnsupportedFeatureError` naming the
   element (status ``refused``); any other exception is a defect (status ``error``);
3. at ``--poses`` random configurations (uniform within the coordinate ranges, infinite ranges capped at
   +-pi rad / +-1 m, seed ``--seed``): body transforms (max |entry difference|), active path-point
   positions (m), musculotendon lengths (m) and moment arms R (``opensim_compat=True``, against
   ``computeMomentArm`` of the model with its moving via points as zero-inertia bodies, the
   seed's set-up, docs/moment_arms.md), and forward accelerations with every force removed
   (max |difference| / max |OpenSim's|, ``OpenSimReference.reduced_dynamics``).

Moment arms of large models are compared at fewer poses (``--ma-budget`` computeMomentArm calls per
model; the number used is in column ``poses_R``).  Writes ``results/corpus.csv``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))  # this checkout's osim_emb, in this process and (PYTHONPATH) in the children
MIRRORS = {"opensim-models": "/work/.mirror/opensim-org+opensim-models/repo",
           "opensim-core": "/work/.mirror/opensim-org+opensim-core/repo"}
DEFAULT_CORPUS = Path(tempfile.gettempdir()) / "osim_emb_model_corpus"
COLUMNS = ["model", "bodies", "coordinates", "muscles", "status", "max_transform", "max_points_m",
           "max_length_m", "max_R_m", "max_qdd_rel", "max_M_rel", "coriolis_vs_christoffel_rel", "poses", "poses_R",
           "refused_element", "reason", "note", "time_s"]
TOL_M, TOL_REL = 1e-8, 1e-9


#: mesh files copied beside the models of their folder: OpenSim's initSystem loads a ContactMesh's file (an
#: ElasticFoundationForce's) and refuses the model without it
MESH_SUFFIXES = (".obj", ".vtp", ".stl")


def extract_corpus(dest: Path) -> Path:
    """Copy every .osim file of the two git mirrors into ``dest``, with the mesh files of the folders that hold one
    (scratch; never committed)."""
    for name, repo in MIRRORS.items():
        files = subprocess.run(["git", "-C", repo, "ls-tree", "-r", "--name-only", "HEAD"], check=True,
                               capture_output=True, text=True).stdout.split("\n")
        model_folders = {Path(f).parent for f in files if f.endswith(".osim")}
        for f in files:
            if not (f.endswith(".osim") or (f.lower().endswith(MESH_SUFFIXES) and Path(f).parent in model_folders)):
                continue
            out = dest / name / f
            out.parent.mkdir(parents=True, exist_ok=True)
            blob = subprocess.run(["git", "-C", repo, "show", f"HEAD:{f}"], capture_output=True)
            if blob.returncode == 0:
                out.write_bytes(blob.stdout)
    return dest


# -- one model (runs in the child process) -----------------------------------------------------------------
def mirror_file(repo: str, member: str, folder: Path) -> Path:
    """A file of a mirror's HEAD (``git show``) copied into ``folder`` under its own name (scratch, never committed)."""
    out = Path(folder) / Path(member).name
    out.write_bytes(subprocess.run(["git", "--git-dir", repo, "show", f"HEAD:{member}"], check=True,
                                   capture_output=True).stdout)
    return out


def write_results(rows: list[dict], name: str) -> None:
    """A study's rows printed and written to ``results/NAME`` (three significant digits)."""
    import pandas as pd
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    table.to_csv(HERE / "results" / name, index=False, float_format="%.3g")


def _has_body(ref, name: str) -> bool:
    """Whether OpenSim's model has this body (BodySet or <components>; the package's moving-point bodies it has
    not)."""
    try:
        ref.body(name)
    except (KeyError, RuntimeError):
        return False
    return True


def _poses(model, n: int, seed: int) -> np.ndarray:
    lo, hi = model.coordinate_ranges.T.copy()
    cap = np.array([np.pi if c.motion_type != "translational" else 1.0 for c in model.coordinates])
    lo, hi = np.maximum(lo, -cap), np.minimum(hi, cap)
    rng = np.random.default_rng(seed)
    if not any(d.source.startswith("point constraint") for d in model.dependent_coordinates):
        return rng.uniform(lo, hi, (n, model.n_q))
    # a closed loop assembles only in part of the coordinates' box: within 10 % of each range of the defaults,
    # the configurations where it assembles (the others are left out, the count reported by "poses")
    from osim_emb.core import kinematics as kin
    from osim_emb.core.closed_chains import ClosedChainError
    q0 = np.array([c.default for c in model.coordinates])
    out = []
    for q in np.clip(q0 + rng.uniform(-0.1, 0.1, (4 * n, model.n_q)) * (hi - lo), lo, hi):
        try:
            kin.joint_variables(model, q[None], 0)
        except ClosedChainError:
            continue
        out.append(q)
        if len(out) == n:
            break
    return np.array(out).reshape(-1, model.n_q)


def study_one(path: str, poses: int, seed: int, ma_budget: int) -> dict:
    from osim_emb.opensim.bridge import require_opensim
    osim = require_opensim()
    row: dict = {"model": path, "poses": 0, "poses_R": 0}
    t0 = time.perf_counter()
    from osim_emb.opensim.bridge import left_out_text, missing_contact_meshes
    missing = missing_contact_meshes(path)  # mesh files not in the corpus: OpenSim's copy leaves them out
    try:
        m = osim.Model(path)
        if missing:
            from osim_emb.opensim.bridge import without_contact_meshes
            without_contact_meshes(m, missing)
        m.initSystem()
    except Exception as err:  # noqa: BLE001 - OpenSim's own refusal is data here
        row.update(status="opensim_fails", reason=str(err).strip().splitlines()[-1][:300] if str(err).strip() else "")
        return row
    forces = [f for f in (osim.Force.safeDownCast(c) for c in m.getComponentsList()) if f is not None]
    row.update(bodies=m.getBodySet().getSize(), coordinates=m.getCoordinateSet().getSize(),
               muscles=sum(1 for f in forces if f.hasProperty("path") or f.hasProperty("GeometryPath")))
    from osim_emb.io import UnsupportedFeatureError, load_osim
    from osim_emb.io.errors import OsimImportError
    try:
        model = load_osim(path)
    except UnsupportedFeatureError as err:
        row.update(status="refused", refused_element=err.element, reason=err.reason.split(" (load with")[0])
        row["time_s"] = time.perf_counter() - t0
        return row
    except OsimImportError as err:  # data the package refuses (named) although OpenSim loads it
        row.update(status="invalid_input", refused_element=err.element, reason=err.reason[:400])
        row["time_s"] = time.perf_counter() - t0
        return row
    except Exception as err:  # noqa: BLE001 - a defect: report it
        row.update(status="error", reason=f"import: {type(err).__name__}: {err}"[:400])
        row["time_s"] = time.perf_counter() - t0
        return row
    try:
        row.update(compare(path, model, poses, seed, ma_budget))
        ok = all(row.get(k, 0.0) <= TOL_M for k in ("max_transform", "max_points_m", "max_length_m", "max_R_m"))
        row["status"] = "agrees" if ok and row.get("max_qdd_rel", 0.0) <= TOL_REL else "differs"
        if (ok and row["status"] == "differs" and row.get("max_M_rel", 1.0) <= TOL_REL
                and row.get("coriolis_vs_christoffel_rel", 1.0) <= 1e-6):
            row["status"] = "opensim_coriolis"
            row["note"] = ("M equals OpenSim's; our velocity terms equal the Christoffel symbols of M (finite "
                           "differences); OpenSim's do not (its CustomJoints with nonlinear rotation functions)")
    except Exception as err:  # noqa: BLE001
        row.update(status="error", reason=f"compare: {type(err).__name__}: {err}"[:400])
        traceback.print_exc()
    if missing:
        row["note"] = left_out_text(missing) + (f"; {row['note']}" if row.get("note") else "")
    row["time_s"] = time.perf_counter() - t0
    return row


def compare(path: str, model, poses: int, seed: int, ma_budget: int) -> dict:
    from osim_emb.core import dynamics as dyn
    from osim_emb.core import kinematics as kin
    from osim_emb.io.osim_writer import moving_points_as_bodies, write_osim
    from osim_emb.paths import geometry
    from osim_emb.core.speeds import angular_velocity_joints, speed_accelerations, speed_jacobian, speeds_from_rates
    from osim_emb.opensim.bridge import ANGULAR_VELOCITY_JOINTS, OpenSimReference, moment_arms_about_speeds
    q = _poses(model, poses, seed)
    poses = len(q)
    out = {"poses": poses}
    ref = OpenSimReference(path, model)
    bt = kin.body_transforms(model, kin.forward_kinematics(model, q, order=0))
    real = [k for k, b in enumerate(model.bodies) if _has_body(ref, b.name)]
    states = geometry.path_states(model, q, wrapping=False) if model.muscles else []
    worst_t = worst_p = 0.0
    for n in range(poses):
        ref.set_configuration(q[n])
        for k in real:
            worst_t = max(worst_t, np.abs(ref.body_transform(model.bodies[k].name) - bt[n, k]).max())
        for ps in states:
            seq = ps.sequence[n][ps.sequence[n] >= 0]
            pts = ref.path_point_positions(ps.muscle.name)
            worst_p = max(worst_p, np.abs(ps.positions[n, seq] - pts[seq]).max())
    out["max_transform"], out["max_points_m"] = worst_t, worst_p
    doc = model.extras["document"]
    spherical = {c.name for j in doc.joints if j.type in ("BallJoint", "FreeJoint") for c in j.coordinates}
    spherical |= {c.name for j in doc.joints if j.type in ANGULAR_VELOCITY_JOINTS for c in j.coordinates[:3]}
    # the angles of Ball, Free and Ellipsoid mobilizers: OpenSim's speeds are w_FM in F = E(q) qdot, so its moment
    # arms about them are E^-T R (bridge.moment_arms_about_speeds)
    rotations = [[c.name for c in j.coordinates[:3]] for j in doc.joints if j.type in ANGULAR_VELOCITY_JOINTS]
    rotations = [r for r in rotations if all(c in model.coordinate_names for c in r)]
    in_rotations = {c for r in rotations for c in r}
    arm_coords = [c for c in model.coordinate_names if c not in spherical or c not in in_rotations]
    looped = set()
    if doc.point_constraints and model.muscles:
        from osim_emb.opensim.moment_arms import explain_differences
        looped = set(explain_differences(model, [model.muscles[0].name])[model.muscles[0].name]["loop"])
        arm_coords = [c for c in arm_coords if c not in looped]
        out["note"] = ((out.get("note", "") + "; ") if out.get("note") else "") + (
            f"closed loops (point, distance, line and weld constraints): "
            f"{sum(d.source.startswith('point constraint') for d in model.dependent_coordinates)} "
            "dependent coordinates solved by the package (OpenSim's "
            f"constraint error <= 1e-9 at every pose); R about the loop's coordinates {sorted(looped)} not compared "
            "(computeMomentArm projects the unit speed on the constraints over all coordinates)")
    if spherical:
        out["note"] = ((out["note"] + "; ") if out.get("note") else "") + (
            "Ball/Free/Ellipsoid/ScapulothoracicJoint: OpenSim's speeds of their rotations are angular "
            "velocities u = E qdot (R about them compared as E^-T R, M as J^T M_u J, qdd as udot = E qdd + Edot qdot: "
            "osim_emb.core.speeds)")
    if model.muscles:
        n_r = int(min(poses, max(1, ma_budget // max(1, len(model.muscles) * model.n_q))))
        out["poses_R"] = n_r
        lengths, arms = geometry.lengths_and_moment_arms(model, q[:n_r], opensim_compat=True)
        about_speeds = moment_arms_about_speeds(model, q[:n_r], arms)  # OpenSim's basis for Ball-type angles
        ref_ma = ref
        if any(p.kind == "moving" for f in doc.forces if f.has_path for p in f.points):
            mvp = Path(tempfile.mkdtemp()) / "model_mvp.osim"
            write_osim(moving_points_as_bodies(doc), mvp)
            ref_ma = OpenSimReference(str(mvp), model)
        el = er = 0.0
        for n in range(n_r):
            ref_ma.set_configuration(q[n])
            for m, mu in enumerate(model.muscles):
                el = max(el, abs(lengths[n, m] - ref_ma.muscle_length(mu.name)))
                for c in arm_coords:
                    k = model.coordinate_index(c)
                    er = max(er, abs(arms[n, k, m] - ref_ma.moment_arm(mu.name, c)))
                for names in rotations:
                    idx = [model.coordinate_index(c) for c in names]
                    theirs = np.array([ref_ma.moment_arm(mu.name, c) for c in names])
                    er = max(er, np.abs(about_speeds[n, idx, m] - theirs).max())
        out["max_length_m"], out["max_R_m"] = el, er
    if model.n_q and not any(b.mass > 0 for b in model.bodies):
        out["note"] = "no body has mass: qdd not compared"
    partial = [j.name for j in angular_velocity_joints(model) if j.index is None]
    if partial:
        out["note"] = ((out["note"] + "; ") if out.get("note") else "") + (
            f"a rotation of {', '.join(partial)} is locked or coupled: OpenSim constrains its angle, so its "
            "independent speeds are not a subset of u (the bridge's reduction); qdd not compared")
    if model.n_q and any(b.mass > 0 for b in model.bodies) and not partial:
        ref_d = OpenSimReference(path, model, disable_forces=True)
        qd = np.random.default_rng(seed + 1).normal(size=q.shape)
        terms = dyn.dynamics_terms(model, q, qd)
        try:
            qdd = dyn.forward_dynamics(model, q, qd)
        except np.linalg.LinAlgError:
            out["note"] = "the mass matrix is singular (a coordinate moves no mass): qdd not compared"
            return out
        # OpenSim's basis (its speeds): u = J qdot, udot = J qdd + Jdot qdot, M_q = J^T M_u J (J = I without such joints)
        u, udot, jac = speeds_from_rates(model, q, qd), speed_accelerations(model, q, qd, qdd), speed_jacobian(model, q)
        worst = worst_m = 0.0
        for n in range(poses):
            r = ref_d.reduced_dynamics(q[n], u[n])
            mass = jac[n].T @ r["mass"] @ jac[n]
            # relative to OpenSim's largest |udot|, absolute below 1 (a weightless pendulum's qdd is round-off)
            worst = max(worst, np.abs(udot[n] - r["qddot"]).max() / max(np.abs(r["qddot"]).max(), 1.0))
            worst_m = max(worst_m, np.abs(terms.mass[n] - mass).max() / max(np.abs(mass).max(), 1e-300))
        out["max_qdd_rel"], out["max_M_rel"] = worst, worst_m
        if worst > TOL_REL:  # independent check of our velocity terms: Christoffel symbols of M(q)
            out["coriolis_vs_christoffel_rel"] = christoffel_check(model, q[0], qd[0])
    return out


def christoffel_check(model, q: np.ndarray, qd: np.ndarray, h: float = 1e-5) -> float:
    """max |N qd - c| / max |c|, c_i = sum_jk (dM_ij/dq_k - dM_jk/dq_i / 2) qd_j qd_k from central
    differences of M (which equals OpenSim's): an independent check of the velocity terms."""
    from osim_emb.core import dynamics as dyn
    nq = model.n_q
    dm = np.empty((nq, nq, nq))
    for k in range(nq):
        e = np.zeros(nq)
        e[k] = h
        m = dyn.dynamics_terms(model, np.stack([q + e, q - e]), np.zeros((2, nq))).mass
        dm[k] = (m[0] - m[1]) / (2 * h)
    c = np.einsum("kij,j,k->i", dm, qd, qd) - 0.5 * np.einsum("ijk,j,k->i", dm, qd, qd)
    ours = dyn.dynamics_terms(model, q[None], qd[None])
    zero = dyn.dynamics_terms(model, q[None], np.zeros((1, nq)))
    velocity = ours.velocity_forces[0] - zero.velocity_forces[0]
    return float(np.abs(velocity - c).max() / max(np.abs(c).max(), 1e-300))


# -- the study (parent process) ------------------------------------------------------------------------------
def run_json_child(cmd: list[str], timeout: float, crash: str = "crash") -> dict:
    """Run ``cmd`` (a ``--one`` call of a corpus script) with this checkout first on PYTHONPATH and one thread: the
    JSON row it prints last, or a ``timeout`` / ``crash`` row with the reason (a crash stops only that model)."""
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                                "PYTHONPATH": os.pathsep.join([str(REPO)] + [p for p in
                                                              os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])})
    except subprocess.TimeoutExpired as err:
        said = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        partial = [ln for ln in said.splitlines() if ln.startswith("{")]
        row = json.loads(partial[-1]) if partial else {}
        stage = row.pop("stage", None)  # a study's row so far (report_stage): who ran out of time
        if stage:
            return {**row, "status": f"{stage}_timeout", "reason": f"{stage} gave no result within {timeout} s",
                    "time_s": timeout}
        return {"status": "timeout", "reason": f"no result within {timeout} s", "time_s": timeout}
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"status": crash, "reason": f"exit {p.returncode}: {tail}"[:400], "time_s": time.perf_counter() - t0}
    return json.loads(lines[-1])


def report_stage(row: dict, stage: str) -> None:
    """Print the row so far with the stage about to run (e.g. ``"opensim"``): if the model then times out, its row
    keeps what was measured and the status ``STAGE_timeout``."""
    print(json.dumps({**row, "stage": stage}, default=float), flush=True)


def run_command(argv: list[str]) -> tuple[float, str | None]:
    """``osim-emb ARGV`` in this process: (its wall time in seconds, None when it succeeded, else the last line it
    wrote on stderr -- its refusal, naming why)."""
    import contextlib
    import io
    from osim_emb.cli.main import main as cli
    said = io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stderr(said):
        code = cli([str(a) for a in argv])
    seconds = time.perf_counter() - t0
    if code == 0:
        return seconds, None
    lines = said.getvalue().strip().splitlines() or [f"exit code {code}"]
    return seconds, lines[-1][:300]


def corpus_rows(script: str, models: list[tuple[str, str]], corpus: Path, timeout: float,
                summary=lambda row: "", options: tuple[str, ...] = ()) -> list[dict]:
    """Every (model, corpus status) of ``models`` through ``script --one PATH`` in its own niced subprocess, with a
    progress bar and one line per model (``summary(row)`` after its status): the rows, each with ``model``,
    ``corpus_status`` and ``time_s`` — the main loop of the corpus studies that run one command per model
    (``options`` follow ``--one PATH``)."""
    from tqdm import tqdm
    rows = []
    for rel, corpus_status in tqdm(models, desc="models", unit="model"):
        t0 = time.perf_counter()
        row = run_json_child(["nice", "-n", "10", sys.executable, script, "--one", str(corpus / rel), *options],
                             timeout, crash="error")
        row.setdefault("time_s", time.perf_counter() - t0)
        row.update(model=rel, corpus_status=corpus_status)
        rows.append(row)
        tqdm.write(f"{rel}: {row['status']} {summary(row)} {row.get('reason', '') or ''}"[:220])
    return rows


def corpus_study(argv, *, script: str, description: str, study, out: Path, columns: list[str], timeout: float,
                 muscles_only: bool = False, summary=lambda row: "", add_options=lambda parser: None,
                 child_options=lambda args: (), relabel_coriolis: bool = False, select=None) -> int:
    """The command line of a corpus study that runs one command per model: ``--one PATH`` (a child: the JSON row of
    ``study(path, args)``, an exception reported as an ``error`` row) or every model ``results/corpus.csv`` lists as
    ``agrees`` or ``opensim_coriolis`` (with a muscle, with ``muscles_only``) through :func:`corpus_rows`, the table
    written to ``--out`` with ``columns``. ``relabel_coriolis``: a row that ``differs`` on a model whose forward
    accelerations OpenSim gets wrong (corpus.csv) becomes ``opensim_coriolis``. ``select(path)``: run only the
    models (paths in the corpus folder) for which it is true."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS, help="the corpus folder of run.py")
    ap.add_argument("--timeout", type=float, default=timeout, help="seconds per model")
    ap.add_argument("--only", default="", help="substring: only the models whose path contains it")
    ap.add_argument("--out", type=Path, default=out)
    ap.add_argument("--one", help=argparse.SUPPRESS)
    add_options(ap)
    args = ap.parse_args(argv)
    if args.one:
        try:
            row = study(args.one, args)
        except Exception as err:  # noqa: BLE001 - reported as a defect
            row = {"status": "error", "reason": f"{type(err).__name__}: {err}"[:400]}
        print(json.dumps(row, default=float))
        return 0
    import pandas as pd
    corpus = pd.read_csv(HERE / "results" / "corpus.csv")
    chosen = corpus[corpus["status"].isin(["agrees", "opensim_coriolis"])
                    & ((corpus["muscles"] > 0) if muscles_only else True)
                    & corpus["model"].str.contains(args.only, regex=False)]
    models = [(m, s) for m, s in zip(chosen["model"], chosen["status"]) if select is None or select(args.corpus / m)]
    rows = corpus_rows(script, models, args.corpus, args.timeout, summary, tuple(child_options(args)))
    for row in rows:
        if relabel_coriolis and row["status"] == "differs" and row["corpus_status"] == "opensim_coriolis":
            row["status"] = "opensim_coriolis"
    table = pd.DataFrame(rows).reindex(columns=columns)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False, float_format="%.3g")
    print(f"wrote {args.out}: {len(table)} models, {table['status'].value_counts().to_dict()}")
    return 0


def run_child(path: Path, args) -> dict:
    return run_json_child(["nice", "-n", "10", sys.executable, __file__, "--one", str(path), "--poses", str(args.poses),
                           "--seed", str(args.seed), "--ma-budget", str(args.ma_budget)], args.timeout)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="*", type=Path, help=f"folders of .osim files (default: {DEFAULT_CORPUS})")
    ap.add_argument("--poses", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ma-budget", type=int, default=30000, help="computeMomentArm calls per model (default 30000)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per model")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "corpus.csv")
    ap.add_argument("--only", default="", help="substring: study only the models whose path contains it")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        row = study_one(args.one, args.poses, args.seed, args.ma_budget)
        print(json.dumps(row, default=float))
        return 0
    import pandas as pd
    from tqdm import tqdm
    folders = args.folders
    if not folders:
        if not DEFAULT_CORPUS.is_dir():
            extract_corpus(DEFAULT_CORPUS)
        folders = [DEFAULT_CORPUS]
    files = sorted(f for d in folders for f in Path(d).rglob("*.osim") if args.only in str(f))
    rows = []
    for f in tqdm(files, desc="models", unit="model"):
        row = run_child(f, args)
        base = next((Path(d) for d in folders if str(f).startswith(str(d))), f.parent)
        row["model"] = str(f.relative_to(base))
        rows.append(row)
        tqdm.write(f"{row['model']}: {row['status']} {row.get('reason', '') or ''}"[:200])
    table = pd.DataFrame(rows).reindex(columns=COLUMNS)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out, index=False, float_format="%.3g")
    counts = table["status"].value_counts().to_dict()
    print(f"wrote {args.out}: {len(table)} models, {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
