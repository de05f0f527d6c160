"""Moment-arm sweeps over many models at once, as Dask tasks.

The models are either a folder of .osim files (e.g. subject-scaled models) or N variants of one model whose
muscle attachment points (and optionally wrap-object positions) are perturbed uniformly within given
tolerances, each variant from its own seed.  Each model is one task: it is loaded (and perturbed) on the
worker, swept with the package's :func:`osim_emb.opensim.moment_arms.make_sweeps` and
:func:`~osim_emb.paths.geometry.lengths_and_moment_arms` (optionally also OpenSim's ``computeMomentArm``
for files), and returns a table with one row per model, muscle, moment-arm coordinate and pose.  The client
writes each result as it arrives into a Parquet dataset (a folder of part files, read back with
``pandas.read_parquet(folder)``); the folder appears only when every task has finished.

Dask runs the tasks: an embedded ``LocalCluster`` (processes) by default, or an existing cluster given by its
scheduler address.
"""

from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from osim_emb.model import Model

__all__ = ["ModelTask", "perturb_attachments", "model_tasks", "sweep_task", "run_batch", "BatchError"]

log = logging.getLogger(__name__)

#: Output columns (units in the names; a translational swept coordinate's value is in millimetres).
COLUMNS = ["model", "variant", "muscle", "swept_coordinate", "swept_value_deg_or_mm", "moment_arm_coordinate",
           "moment_arm_m", "length_m"]


class BatchError(ValueError):
    """Bad batch input (no models, unknown coordinate, unsupported option)."""


@dataclass(frozen=True)
class ModelTask:
    """One model of a batch: a file, optionally perturbed (``variant`` >= 0 with its own seed)."""

    path: str
    variant: int = -1  # -1: the file as it is
    seed: int | None = None
    tolerance_m: float = 0.0  # attachment points: uniform in [-tol, tol] per axis
    wrap_tolerance_m: float = 0.0  # wrap-object origins likewise
    strict: bool = True  # False: import what can be represented (load_osim(strict=False))

    @property
    def name(self) -> str:
        stem = Path(self.path).stem
        return stem if self.variant < 0 else f"{stem}_v{self.variant:04d}"


def perturb_attachments(model: Model, rng: np.random.Generator, tolerance_m: float,
                        wrap_tolerance_m: float = 0.0) -> Model:
    """A copy of ``model`` with every fixed and conditional path point moved by a uniform offset in
    [-tolerance, tolerance]³ (body frame) and every wrap object's origin by one in [-wrap_tolerance, ...]³.

    Moving path points (imported as bodies moved by joint functions) are left as they are."""
    muscles = []
    for mt in model.muscles:
        pts = []
        for p in mt.points:
            if p.kind == "moving" or tolerance_m == 0.0:
                pts.append(p)
            else:
                pts.append(replace(p, location=np.asarray(p.location) + rng.uniform(-tolerance_m, tolerance_m, 3)))
        muscles.append(replace(mt, points=tuple(pts)))
    wraps = tuple(
        replace(w, translation=tuple(np.asarray(w.translation, dtype=float)
                                     + rng.uniform(-wrap_tolerance_m, wrap_tolerance_m, 3)))
        if wrap_tolerance_m > 0.0 else w for w in model.wrap_objects)
    return replace(model, muscles=tuple(muscles), wrap_objects=wraps)


def model_tasks(source: str | Path, *, variants: int = 0, tolerance_m: float = 0.0, wrap_tolerance_m: float = 0.0,
                seed: int = 0, strict: bool = True) -> list[ModelTask]:
    """The tasks of a batch: every .osim file of a folder, or ``variants`` perturbed copies of one file
    (variant k uses seed ``seed + k``); ``strict=False`` imports each model leniently."""
    source = Path(source)
    if source.is_dir():
        if variants:
            raise BatchError(f"{source}: variants are made from one model file, not a folder")
        files = sorted(source.glob("*.osim"))
        if not files:
            raise BatchError(f"{source}: no .osim files in this folder")
        return [ModelTask(str(f), strict=strict) for f in files]
    if not source.is_file():
        raise BatchError(f"{source}: no such model file or folder")
    if variants <= 0:
        return [ModelTask(str(source), strict=strict)]
    if tolerance_m < 0 or wrap_tolerance_m < 0:
        raise BatchError("tolerances must be >= 0")
    return [ModelTask(str(source), k, seed + k, tolerance_m, wrap_tolerance_m, strict) for k in range(variants)]


@lru_cache(maxsize=8)
def _load(path: str, strict: bool = True) -> Model:
    from osim_emb.io import load_osim
    return load_osim(path, strict=strict)


def sweep_task(task: ModelTask, sweep: Sequence[str], step_deg: float, *, muscles: Sequence[str] | None = None,
               ma_coordinates: Sequence[str] | None = None, opensim_compat: bool = False,
               references: Sequence[str] = (), step_mm: float = 5.0) -> pd.DataFrame:
    """One model's sweep table (:data:`COLUMNS`, plus ``opensim_<reference>_m`` per reference)."""
    from osim_emb.paths.geometry import lengths_and_moment_arms
    from osim_emb.opensim.moment_arms import FD_STEP, REFERENCES, make_sweeps
    model = _load(task.path, task.strict)
    if task.variant >= 0:
        model = perturb_attachments(model, np.random.default_rng(task.seed), task.tolerance_m,
                                    task.wrap_tolerance_m)
    names = list(muscles) if muscles else [m.name for m in model.muscles]
    coords = list(ma_coordinates) if ma_coordinates else list(sweep)
    for c in list(sweep) + coords:
        if c not in model.coordinate_names:
            raise BatchError(f"{task.path}: no coordinate {c!r} (coordinates: {', '.join(model.coordinate_names)})")
    unknown = [r for r in references if r not in REFERENCES]
    if unknown:
        raise BatchError(f"unknown reference(s) {', '.join(unknown)}; choose from {', '.join(REFERENCES)}")
    if references and task.variant >= 0:
        raise BatchError("OpenSim references are computed for model files only, not for perturbed variants")
    sweeps = make_sweeps(model, sweep, step_deg, step_translation=step_mm / 1000.0)
    q = np.vstack([s.q for s in sweeps])
    length, r = lengths_and_moment_arms(model, q, names, opensim_compat=opensim_compat)  # (N, M), (N, n_q, M)
    kidx = [model.coordinate_index(c) for c in coords]
    n, m, k = len(q), len(names), len(kidx)
    idx = np.indices((n, m, k)).reshape(3, -1)  # point, muscle, moment-arm coordinate
    swept = np.concatenate([[s.coordinate] * len(s.angles_deg) for s in sweeps])
    values = np.concatenate([s.angles_deg for s in sweeps])
    table = pd.DataFrame({
        "model": task.name, "variant": task.variant,
        "muscle": np.asarray(names, dtype=object)[idx[1]], "swept_coordinate": swept[idx[0]],
        "swept_value_deg_or_mm": values[idx[0]], "moment_arm_coordinate": np.asarray(coords, dtype=object)[idx[2]],
        "moment_arm_m": r[:, kidx, :].transpose(0, 2, 1).ravel(), "length_m": np.repeat(length.ravel(), k)})
    table = table[COLUMNS]
    if references:
        from osim_emb.opensim.reference_values import evaluate_references
        with tempfile.TemporaryDirectory() as tmp:
            jobs = []
            for ref in references:
                path = task.path
                if ref == "computeMomentArm_mvp":
                    from osim_emb.io.osim_writer import moving_points_as_bodies, write_osim
                    path = str(Path(tmp) / (Path(task.path).stem + "_mvp.osim"))
                    write_osim(moving_points_as_bodies(model.extras["document"]), path, protect=[task.path])
                jobs.append((ref, path))
            ranges = np.array([c.range for c in model.coordinates], dtype=float)
            osv = evaluate_references(jobs, q, model.coordinate_names, ranges, names, coords, fd_step=FD_STEP,
                                      workers=1, cache_dir=False, progress=False)
        for ref in references:
            table[f"opensim_{ref}_m"] = osv[ref]["values"].ravel()  # (N, M, K), the table's row order
    return table


@dataclass(frozen=True)
class TaskFailure:
    """A model whose sweep failed: its name, variant and the error in one line (plain data, picklable)."""

    model: str
    variant: int
    error: str


def _task_or_failure(task: ModelTask, *args, **kwargs):
    """(:func:`sweep_task`'s table, what a lenient import left out of the model as rows of :data:`LEFT_OUT_COLUMNS`),
    or a :class:`TaskFailure` naming the model and the error (no traceback on the worker)."""
    try:
        table = sweep_task(task, *args, **kwargs)
        skipped = _load(task.path, task.strict).extras.get("skipped", [])
        return table, [(task.name, task.variant, s.kind, s.name, s.line or "", s.reason) for s in skipped]
    except Exception as err:  # noqa: BLE001 - every failure of one model is reported, the others go on
        return TaskFailure(task.name, task.variant, f"{type(err).__name__}: {err}".replace("\n", " "))


#: ``_left_out.csv``: one row per element a lenient import left out of a model (file line, reason)
LEFT_OUT_COLUMNS = ["model", "variant", "kind", "name", "line", "reason"]


def _client(scheduler: str | None, n_workers: int, threads_per_worker: int):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("osim-emb batch needs dask: pip install 'osim-emb[batch]'") from err
    if scheduler:
        return Client(scheduler), None
    # the workers' own logs stay quiet: a failing model comes back as a TaskFailure, reported once by run_batch
    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=threads_per_worker, processes=True,
                           dashboard_address=":0", silence_logs=logging.CRITICAL)  # no fixed port to clash on
    return Client(cluster), cluster


def _first_model(tasks: Sequence[ModelTask], keep_going: bool) -> tuple[ModelTask, Model]:
    """The first model that imports (with ``keep_going``; otherwise the first model, or its import error)."""
    for task in tasks if keep_going else tasks[:1]:
        try:
            model = _load(task.path, task.strict)
            # what lenient loading left out, said once for the first model (a cohort's files share their form)
            for s in model.extras.get("skipped", []):
                log.warning("%s:%s: left out %s %r: %s", task.path, s.line or "", s.kind, s.name, s.reason)
            return task, model
        except Exception:  # noqa: BLE001 - reported again by its task, with the others
            if not keep_going:
                raise
    raise BatchError(f"none of the {len(tasks)} models imports; the first: {tasks[0].path}")


def _compile_before_the_workers(model: Model, muscles: Sequence[str] | None, opensim_compat: bool) -> bool:
    """Compile the sweep's kernels here, once, before a local cluster starts: its workers share this machine's
    numba cache and then load them, where each would otherwise compile the same kernels at once (minutes of CPU
    each after installation).  True when something was compiled (nothing when the cache already holds them)."""
    from osim_emb.core._accel import compiles_at_first_call
    from osim_emb.core.compiled_kernels import joint_variable_batch
    from osim_emb.paths.geometry import lengths_and_moment_arms
    from osim_emb.paths.wrapping._kernels_muscles import lengths_moment_arms_kernel
    if not any(compiles_at_first_call(k) for k in (lengths_moment_arms_kernel, joint_variable_batch)):
        return False
    names = list(muscles) if muscles else [m.name for m in model.muscles]
    log.info("compiling the sweep's kernels once, before the local cluster's workers start")
    try:
        lengths_and_moment_arms(model, model.default_q[None], names, opensim_compat=opensim_compat)
    except Exception as err:  # noqa: BLE001 - the model's own task reports it (--keep-going runs the others)
        log.debug("compiling before the workers stopped: %s", err)
        return False
    return True


#: the files of a dataset folder that a batch writes (an earlier run's ones are replaced)
DATASET_FILES = ("part-*.parquet", "_failures.csv", "_left_out.csv")


def run_batch(tasks: Iterable[ModelTask], sweep: Sequence[str], step_deg: float, output: str | Path, *,
              muscles: Sequence[str] | None = None, ma_coordinates: Sequence[str] | None = None,
              opensim_compat: bool = False, references: Sequence[str] = (), scheduler: str | None = None,
              n_workers: int = 2, threads_per_worker: int = 1, progress: bool = True,
              overwrite: bool = False, keep_going: bool = False, step_mm: float = 5.0) -> dict:
    """Run the tasks on Dask and write the Parquet dataset ``output`` (a folder of part files).

    Returns a summary: number of models and rows, wall time, models per second.  ``output`` must not exist
    unless ``overwrite`` (then its part files are replaced only when every task succeeded, and files the batch does
    not write are kept); it is written under a temporary name and moved into place at the end.

    A model that fails (cannot be imported, lacks a coordinate, ...) stops the batch with a
    :class:`BatchError` naming it, and nothing is written; with ``keep_going`` the other models run, the
    failures are listed in ``_failures.csv`` inside the dataset (Parquet readers skip names starting with
    ``_``), and the summary's ``failures`` counts them."""
    tasks = list(tasks)
    if not tasks:
        raise BatchError("no models to run")
    out = Path(output)
    if out.exists() and not (overwrite and out.is_dir()):
        raise BatchError(f"{out}: already exists (use --overwrite to replace it)" if out.is_dir() else
                         f"{out}: is a file; the Parquet dataset is a folder")
    if not step_deg > 0:
        raise BatchError(f"--step must be a positive number, got {step_deg}")
    if not step_mm > 0:
        raise BatchError(f"--step-mm must be a positive number, got {step_mm}")
    from osim_emb.opensim.moment_arms import REFERENCES
    unknown = [r for r in references if r not in REFERENCES]
    if unknown:
        raise BatchError(f"unknown reference(s) {', '.join(unknown)}; choose from {', '.join(REFERENCES)}")
    if references and any(t.variant >= 0 for t in tasks):
        raise BatchError("OpenSim references are computed for model files only, not for perturbed variants")
    first_task, first = _first_model(tasks, keep_going)  # names checked before the cluster starts
    for c in list(sweep) + list(ma_coordinates or []):
        if c not in first.coordinate_names:
            raise BatchError(f"{first_task.path}: no coordinate {c!r} (coordinates: "
                             f"{', '.join(first.coordinate_names)})")
    unknown = [m for m in (muscles or []) if m not in {mu.name for mu in first.muscles}]
    if unknown:
        raise BatchError(f"{first_task.path}: no muscle named {', '.join(map(repr, unknown))}")
    from dask.distributed import as_completed
    from osim_emb.progress import Progress
    from osim_emb.io.outputs import atomic_folder
    rows = 0
    failures: list[TaskFailure] = []
    left_out: list[tuple] = []
    # a folder that exists keeps what the batch does not write; its old part files go
    if scheduler is None and n_workers > 1:  # a remote cluster's workers have caches of their own
        _compile_before_the_workers(first, muscles, opensim_compat)
    with atomic_folder(out, overwrite=overwrite, stale=DATASET_FILES) as tmp:
        client, cluster = _client(scheduler, n_workers, threads_per_worker)
        t0 = time.perf_counter()
        try:
            futures = client.map(_task_or_failure, tasks, sweep=list(sweep), step_deg=step_deg, muscles=muscles,
                                 ma_coordinates=ma_coordinates, opensim_compat=opensim_compat,
                                 references=list(references), step_mm=step_mm, pure=False)
            index = {f.key: i for i, f in enumerate(futures)}
            with Progress("moment-arm sweeps", len(tasks), enabled=progress, unit="model") as bar:
                for fut in as_completed(futures):
                    result = fut.result()
                    bar.advance()
                    if isinstance(result, TaskFailure):
                        if not keep_going:
                            client.cancel(futures)
                            raise BatchError(f"model {result.model}: {result.error} (nothing written; --keep-going "
                                             f"runs the other models and lists the failures)")
                        log.warning("model %s failed: %s", result.model, result.error)
                        failures.append(result)
                        continue
                    table, skipped = result
                    table.to_parquet(tmp / f"part-{index[fut.key]:05d}.parquet", index=False)
                    rows += len(table)
                    left_out += skipped
            if failures:
                pd.DataFrame([vars(f) for f in failures]).sort_values(["model", "variant"]).to_csv(
                    tmp / "_failures.csv", index=False)
            if left_out:
                table = pd.DataFrame(left_out, columns=LEFT_OUT_COLUMNS).sort_values(["model", "variant"],
                                                                                     kind="stable")
                table.to_csv(tmp / "_left_out.csv", index=False)
                log.warning("%d of the %d models were imported leniently with elements left out (%d in all): each "
                            "is listed in %s", table["model"].nunique(), len(tasks), len(table), out / "_left_out.csv")
            if len(failures) == len(tasks):
                raise BatchError(f"every model failed; the first: {failures[0].model}: {failures[0].error}")
            wall = time.perf_counter() - t0
            n_workers_used = len(client.scheduler_info().get("workers", {}))
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    return {"models": len(tasks), "rows": rows, "seconds": wall, "models_per_second": len(tasks) / wall,
            "workers": n_workers_used, "output": str(out), "failures": len(failures),
            "models_with_left_out_elements": len({r[0] for r in left_out})}
