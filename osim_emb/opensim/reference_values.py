"""OpenSim's reference values at many configurations: spread over worker processes, cached on disk.

Each worker process loads its own OpenSim model (one per file) and evaluates a chunk of configurations:
OpenSim's ``getLength`` at every configuration, and one of

* ``computeMomentArm`` / ``computeMomentArm_mvp`` -- ``GeometryPath::computeMomentArm`` (the second on the
  model whose moving via points are zero-inertia bodies);
* ``minus_dL_dq`` -- minus the central difference of OpenSim's ``getLength`` (one-sided at a range bound),
  the coupled coordinates following OpenSim's own couplers.

Results are cached on disk by the model file's sha256, the reference, the configurations, the muscles and
coordinates, the difference step and the OpenSim version (``~/.cache/osim-emb/opensim_references`` or
``OSIM_EMB_CACHE`` or ``cache_dir``), so a re-run does not repeat them.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Sequence

import numpy as np

log = logging.getLogger(__name__)

__all__ = ["REFERENCES", "evaluate_references", "prefetch_references", "cancel_prefetched", "start_workers",
           "default_cache_dir", "file_sha256", "length_derivative"]

REFERENCES = ("computeMomentArm", "computeMomentArm_mvp", "minus_dL_dq")
_CACHE_FORMAT = 2  # 2: a path's values after an OpenSim NaN come from a rebuilt model (OpenSimReference.moment_arm)
_WORKER_REFS: dict = {}
_POOLS: dict = {}
#: cache key -> [(future, slice)] of an evaluation submitted by prefetch_references, not yet collected
_PENDING: dict[str, list] = {}


#: the workers' niceness above the main process: when they run beside the package's own work (numba compiling
#: its kernels on first use, while OpenSim's evaluations were submitted ahead) that work keeps its CPU, and the
#: workers take what is left (all of it once the package waits for them)
WORKER_NICENESS = 10


def _lower_priority() -> None:
    try:
        os.nice(WORKER_NICENESS)
    except (AttributeError, OSError):  # pragma: no cover - Windows, or not permitted
        pass


def _worker_count(workers: int | None) -> int:
    return workers if workers is not None else min(os.cpu_count() or 1, 4)


def _warm_worker() -> None:
    import opensim  # noqa: F401  (the worker's start-up: OpenSim's libraries)
    from osim_emb.opensim import bridge  # noqa: F401


def start_workers(workers: int | None = None) -> int:
    """Start the worker processes now (each imports OpenSim), so that their start-up overlaps the caller's own
    work; returns the number of workers (1: no pool, the evaluations run in this process)."""
    workers = _worker_count(workers)
    if workers > 1:
        pool = _pool(workers)
        for _ in range(workers):
            pool.submit(_warm_worker)
    return workers


def _pool(workers: int):
    """A process pool kept for the whole run (workers import OpenSim once; each keeps its models loaded)."""
    pool = _POOLS.get(workers)
    if pool is None:
        import atexit
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        pool = _POOLS[workers] = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"),
                                                     initializer=_lower_priority)
        atexit.register(pool.shutdown, wait=True, cancel_futures=True)
    return pool


def default_cache_dir() -> Path:
    env = os.environ.get("OSIM_EMB_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "osim-emb" / "opensim_references"


def file_sha256(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def length_derivative(lengths, q: np.ndarray, k: int, lo: float, hi: float, h: float) -> np.ndarray:
    """dL/dq_k by central differences of ``lengths(q)``, one-sided (second order) at a range bound, where the
    coordinate can only move inwards (moving-point functions are clamped there).  ``q`` is one configuration."""
    def at(x):
        qq = q.copy()
        qq[k] = x
        return lengths(qq)
    x = q[k]
    if x - h < lo:
        return (-3 * at(x) + 4 * at(x + h) - at(x + 2 * h)) / (2 * h)
    if x + h > hi:
        return (3 * at(x) - 4 * at(x - h) + at(x - 2 * h)) / (2 * h)
    return (at(x + h) - at(x - h)) / (2 * h)


def _reference(path: str):
    from osim_emb.opensim.bridge import OpenSimReference
    st = os.stat(path)
    key = (str(Path(path).resolve()), st.st_mtime_ns, st.st_size)  # a file rewritten in place is reloaded
    ref = _WORKER_REFS.get(key)
    if ref is None:
        ref = _WORKER_REFS[key] = OpenSimReference(path, None, say_left_out=False)  # said by evaluate_references
    return ref


def _evaluate_chunk(reference: str, path: str, q: np.ndarray, names: Sequence[str], ranges: np.ndarray,
                    muscles: Sequence[str], ma_coordinates: Sequence[str], fd_step: float, mask=None, steps=None):
    """(values (n, M, K), lengths (n, M), seconds) at the configurations ``q`` (n, n_q); runs in a worker.
    ``mask`` (n, K): the moment arms to evaluate (the others are NaN).  ``steps`` (n, K, 4, E): for
    ``minus_dL_dq`` on a model with closed loops, the values of the last E of ``names`` (the loops' coordinates,
    the package's solution) at q_k - 2h, q_k - h, q_k + h, q_k + 2h: the difference quotients move the loop with
    the coordinate."""
    t0 = time.perf_counter()
    ref = _reference(path)
    names = list(names)
    if mask is None:
        mask = np.ones((len(q), len(ma_coordinates)), dtype=bool)
    vals = np.full((len(q), len(muscles), len(ma_coordinates)), np.nan)
    lengths = np.empty((len(q), len(muscles)))

    def lengths_at(qq):
        ref.set_configuration(qq, names=names, check=None)
        return np.array([ref.muscle_length(m) for m in muscles])

    for n, qn in enumerate(q):
        lengths[n] = lengths_at(qn)
        if reference == "minus_dL_dq":
            for kk, c in enumerate(ma_coordinates):
                if not mask[n, kk]:
                    continue
                k = names.index(c)
                at = lengths_at if steps is None else _with_loop(lengths_at, steps[n, kk], qn, k, fd_step)
                vals[n, :, kk] = -length_derivative(at, qn, k, ranges[k, 0], ranges[k, 1], fd_step)
        else:
            for mi, m in enumerate(muscles):
                for kk, c in enumerate(ma_coordinates):
                    if mask[n, kk]:
                        vals[n, mi, kk] = ref.moment_arm(m, c)
    return vals, lengths, time.perf_counter() - t0


def _with_loop(lengths_at, steps: np.ndarray, q0: np.ndarray, k: int, h: float):
    """``lengths_at`` with the loop's coordinates (the last ``steps.shape[1]`` entries) set to their values at the
    step q_k = q0_k + j h, j in (-2, -1, 1, 2) (``steps`` (4, E)); at j = 0 as in q0."""
    extra = steps.shape[1]

    def at(qq):
        j = int(round((qq[k] - q0[k]) / h))
        if j:
            qq = qq.copy()
            qq[-extra:] = steps[(-2, -1, 1, 2).index(j)]
        return lengths_at(qq)
    return at


def _cache_key(reference, path, q, names, muscles, mac, fd_step, mask, steps=None) -> str:
    import opensim
    h = hashlib.sha256()
    h.update(json.dumps({"format": _CACHE_FORMAT, "reference": reference, "model_sha256": file_sha256(path),
                         "names": list(names), "muscles": list(muscles), "ma_coordinates": list(mac),
                         "fd_step": fd_step, "opensim": opensim.__version__}).encode())
    h.update(np.ascontiguousarray(q, dtype=float).tobytes())
    h.update(np.ascontiguousarray(mask, dtype=bool).tobytes())
    if steps is not None:
        h.update(np.ascontiguousarray(steps, dtype=float).tobytes())
    return h.hexdigest()


def _chunks(n: int, workers: int) -> list[slice]:
    k = max(1, min(n, 4 * workers, -(-n // 8)))
    edges = np.linspace(0, n, k + 1).round().astype(int)
    return [slice(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]


def _lookup(jobs, q, names, muscles, ma_coordinates, fd_step, cache_dir, mask, steps=None):
    """(results read from the disk cache, [(reference, path, cache file, key, mask)] still to evaluate)."""
    full = np.ones((len(q), len(ma_coordinates)), dtype=bool)
    masks = {r: np.asarray((mask.get(r, full) if isinstance(mask, dict) else full if mask is None else mask),
                           dtype=bool) for r, _ in jobs}
    out: dict[str, dict] = {}
    cache = None if cache_dir is False else Path(cache_dir) if cache_dir else default_cache_dir()
    todo = []
    for reference, path in jobs:
        if reference not in REFERENCES:
            raise ValueError(f"unknown reference {reference!r}; choose from {', '.join(REFERENCES)}")
        key = _cache_key(reference, path, q, names, muscles, ma_coordinates, fd_step, masks[reference],
                         steps if reference == "minus_dL_dq" else None)
        hit = cache / f"{key}.npz" if cache is not None else None
        if hit is not None and hit.exists():
            try:
                with np.load(hit) as z:
                    out[reference] = {"values": z["values"], "lengths": z["lengths"], "seconds": 0.0, "cached": True}
                log.info("OpenSim %s: %d configurations from the cache (%s)", reference, len(q), hit)
                continue
            except Exception as err:  # a damaged cache file is recomputed
                log.warning("ignoring unreadable cache file %s: %s", hit, err)
        todo.append((reference, path, hit, key, masks[reference]))
    return out, todo


def _submit(pool, reference, path, q, names, ranges, muscles, ma_coordinates, fd_step, mask, workers,
            steps=None) -> list:
    return [(pool.submit(_evaluate_chunk, reference, path, q[s], list(names), ranges, list(muscles),
                         list(ma_coordinates), fd_step, mask[s], _steps_for(reference, steps, s)), s)
            for s in _chunks(len(q), max(workers, 1))]


def _steps_for(reference, steps, s):
    """The rows ``s`` of the loop steps, for ``minus_dL_dq`` only."""
    return steps[s] if steps is not None and reference == "minus_dL_dq" else None


def prefetch_references(jobs: Sequence[tuple[str, str]], q: np.ndarray, names: Sequence[str], ranges: np.ndarray,
                        muscles: Sequence[str], ma_coordinates: Sequence[str], *, fd_step: float = 1e-6,
                        workers: int | None = None, cache_dir: str | Path | None | bool = None, mask=None) -> int:
    """Submit to the worker processes the evaluations that :func:`evaluate_references` with the same arguments
    would do, and return at once (the number of references submitted); that call then collects them instead of
    submitting them again.  Nothing is submitted with a single worker (no pool) or for cached values.
    :func:`cancel_prefetched` drops what no call collected."""
    workers = _worker_count(workers)
    if workers <= 1 or not jobs:
        return 0
    q = np.ascontiguousarray(q, dtype=float)
    ranges = np.asarray(ranges, dtype=float)
    _, todo = _lookup(jobs, q, names, muscles, ma_coordinates, fd_step, cache_dir, mask)
    pool = _pool(workers)
    n = 0
    for reference, path, _, key, m in todo:
        if key not in _PENDING:
            _PENDING[key] = _submit(pool, reference, path, q, names, ranges, muscles, ma_coordinates, fd_step, m,
                                    workers)
            n += 1
    return n


def cancel_prefetched() -> None:
    """Cancel the prefetched evaluations that no :func:`evaluate_references` call collected (those running
    finish in the background)."""
    for parts in _PENDING.values():
        for f, _ in parts:
            f.cancel()
    _PENDING.clear()


def evaluate_references(jobs: Sequence[tuple[str, str]], q: np.ndarray, names: Sequence[str], ranges: np.ndarray,
                        muscles: Sequence[str], ma_coordinates: Sequence[str], *, fd_step: float = 1e-6,
                        workers: int | None = None, cache_dir: str | Path | None | bool = None,
                        progress: bool = True, mask=None, steps=None) -> dict[str, dict]:
    """OpenSim's values for every ``(reference, model path)`` job at the configurations ``q`` (N, n_q).

    Returns ``{reference: {"values": (N, M, K), "lengths": (N, M), "seconds": float, "cached": bool}}``.
    ``workers`` processes (default: the number of CPUs, at most 4) share all jobs; ``cache_dir=False``
    disables the disk cache; ``mask`` (N, K), or a dict of them by reference, selects the moment arms to
    evaluate (default: all); ``steps`` (N, K, 4, E): the closed loops' coordinates (the last E of ``names``) at the
    difference steps of ``minus_dL_dq`` (:func:`_evaluate_chunk`).  Evaluations submitted earlier by
    :func:`prefetch_references` with the same arguments are collected, not repeated."""
    from osim_emb.progress import Progress
    q = np.ascontiguousarray(q, dtype=float)
    ranges = np.asarray(ranges, dtype=float)
    out, todo = _lookup(jobs, q, names, muscles, ma_coordinates, fd_step, cache_dir, mask, steps)
    if not todo:
        return out
    from osim_emb.opensim.bridge import left_out_text, missing_contact_meshes
    said = set()
    for path in dict.fromkeys(path for _, path, *_ in todo):  # the model's own file first, then its copies
        text = left_out_text(missing) if (missing := missing_contact_meshes(path)) else None
        if text and text not in said:
            said.add(text)
            log.warning("%s: %s", path, text)
    workers = _worker_count(workers)
    vals = {r: np.empty((len(q), len(muscles), len(ma_coordinates))) for r, *_ in todo}
    lens = {r: np.empty((len(q), len(muscles))) for r, *_ in todo}
    total = len(q) * len(todo)
    label = "OpenSim " + ", ".join(r for r, *_ in todo)
    t0 = time.perf_counter()
    seconds = {r: 0.0 for r, *_ in todo}  # OpenSim's time, summed over the workers
    with Progress(label, total, enabled=progress) as bar:
        if workers <= 1:
            for reference, path, _, _, m in todo:
                for s in _chunks(len(q), 1):
                    v, ln, sec = _evaluate_chunk(reference, path, q[s], names, ranges, muscles, ma_coordinates,
                                                 fd_step, m[s], _steps_for(reference, steps, s))
                    vals[reference][s], lens[reference][s] = v, ln
                    seconds[reference] += sec
                    bar.advance(s.stop - s.start)
        else:
            from concurrent.futures import as_completed
            log.info("OpenSim references on %d worker processes (one OpenSim model each)", workers)
            pool = _pool(workers)
            futures = {}
            for reference, path, _, key, m in todo:
                parts = _PENDING.pop(key, None)
                if parts is None:
                    parts = _submit(pool, reference, path, q, names, ranges, muscles, ma_coordinates, fd_step, m,
                                    workers, steps)
                for f, s in parts:
                    futures[f] = (reference, s)
            for f in as_completed(futures):
                reference, s = futures[f]
                vals[reference][s], lens[reference][s], sec = f.result()
                seconds[reference] += sec
                bar.advance(s.stop - s.start)
    log.info("OpenSim references: %.1f s wall time for %d configurations x %d reference(s)",
             time.perf_counter() - t0, len(q), len(todo))
    for reference, path, hit, _, _ in todo:
        out[reference] = {"values": vals[reference], "lengths": lens[reference], "seconds": seconds[reference],
                          "cached": False}
        if hit is not None:
            try:
                hit.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=hit.parent, suffix=".npz")
                os.close(fd)
                np.savez(tmp, values=vals[reference], lengths=lens[reference])
                os.replace(tmp, hit)
            except OSError as err:
                log.warning("could not write the OpenSim cache %s: %s", hit, err)
    return out
