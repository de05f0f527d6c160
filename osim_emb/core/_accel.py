"""The compiled kernels' plumbing (numba, a core dependency; the ``speed`` extra is an empty alias).

Every algorithm of the core and of the muscle paths is written once, as a numba kernel
(:mod:`osim_emb.core.compiled_kernels`, :mod:`osim_emb.core.kinematics_kernels`,
``osim_emb.paths.wrapping._kernels*``).  :func:`njit` and :data:`prange` fall back to the plain Python
function and ``range`` when numba is missing (or ``NUMBA_DISABLE_JIT=1``), so the same kernels still run,
slowly, and give the same numbers.  ``OSIM_EMB_NO_JIT=1`` no longer selects other code in the dynamics,
the kinematics or the paths; only the muscle-driven simulation reads it (:func:`use_jit`) to choose between its
two routes (docs/architecture.md, "Implementations").
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

__all__ = ["HAVE_NUMBA", "compiles_at_first_call", "use_jit", "njit", "prange", "thread_count", "kernel_fingerprint",
           "kernel_cache_dir"]

#: fingerprint folders kept beside the current one (other checkouts, earlier versions); older ones are removed
KEPT_CACHES = 4


def kernel_fingerprint(package: Path | None = None) -> str:
    """A hash of the package's kernel sources (every module that compiles with numba).  numba keys a cached
    function on its own file only, so a cached caller would keep a stale copy of a callee edited in another
    module (a ``git pull`` on an editable install); caching under this fingerprint starts afresh instead."""
    root = Path(__file__).resolve().parents[1] if package is None else Path(package)
    digest = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        text = path.read_bytes()
        if b"njit" in text:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + text)
    return digest.hexdigest()[:16]


def kernel_cache_dir(fingerprint: str, base: str | None = None) -> Path:
    """Where the kernels are cached: ``$NUMBA_CACHE_DIR/osim_emb-FINGERPRINT`` when that is set, else
    ``$XDG_CACHE_HOME/osim_emb/numba/FINGERPRINT`` (``~/.cache``)."""
    if base:
        return Path(base) / f"osim_emb-{fingerprint}"
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(home) / "osim_emb" / "numba" / fingerprint


def _prune(current: Path) -> None:
    """Remove all but the :data:`KEPT_CACHES` most recently used fingerprint folders beside ``current``."""
    prefix = "osim_emb-" if current.name.startswith("osim_emb-") else ""  # in a user's NUMBA_CACHE_DIR: ours only
    try:
        os.makedirs(current, exist_ok=True)
        os.utime(current)
        others = sorted((p for p in current.parent.iterdir() if p.is_dir() and p != current
                         and p.name.startswith(prefix)), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in others[KEPT_CACHES:]:
            shutil.rmtree(old, ignore_errors=True)
    except OSError:  # a read-only cache folder: numba then compiles in memory
        pass


try:  # pragma: no cover - depends on the environment
    import numba as _numba
    from numba.core import config as _numba_config

    HAVE_NUMBA = True
    prange = _numba.prange
    _CACHE = kernel_cache_dir(kernel_fingerprint(), os.environ.get("NUMBA_CACHE_DIR"))
    _prune(_CACHE)
    _numba_config.CACHE_DIR = str(_CACHE)  # read when a kernel is decorated: before any kernel module
except ImportError:  # pragma: no cover
    _numba = None
    HAVE_NUMBA = False
    prange = range


def use_jit() -> bool:
    """True when numba is installed and OSIM_EMB_NO_JIT=1 is not set: read only by the muscle-driven simulation to
    choose its compiled muscle loops (simulation/muscle_driven.py); every other kernel is compiled regardless."""
    return HAVE_NUMBA and os.environ.get("OSIM_EMB_NO_JIT", "") not in ("1", "true", "yes")


def thread_count() -> int:
    """The number of threads numba's parallel kernels use (``NUMBA_NUM_THREADS``, ``numba.set_num_threads``); 1
    without numba."""
    return int(_numba.get_num_threads()) if HAVE_NUMBA else 1


def njit(*args, **kwargs):
    """numba.njit(cache=True, ...) when numba is installed; otherwise the plain Python function."""
    kwargs.setdefault("cache", True)
    if HAVE_NUMBA:
        return _numba.njit(*args, **kwargs)
    if args and callable(args[0]):
        return args[0]
    return lambda f: f


def compiles_at_first_call(dispatcher) -> bool:
    """True when numba will compile ``dispatcher`` at its next call: nothing compiled for it in this process and no
    cache index on disk (a fresh installation, or an empty ``NUMBA_CACHE_DIR``).  A stale index (the source
    changed) is not detected: numba then recompiles without this saying so."""
    if not HAVE_NUMBA or getattr(dispatcher, "signatures", None) is None or dispatcher.signatures:
        return False
    try:
        index = dispatcher._cache._cache_file._index_path  # numba's cache implementation (0.5x-0.6x)
    except AttributeError:
        return False
    return not os.path.exists(index)
