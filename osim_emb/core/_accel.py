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

import os

__all__ = ["HAVE_NUMBA", "compiles_at_first_call", "use_jit", "njit", "prange", "thread_count"]

try:  # pragma: no cover - depends on the environment
    import numba as _numba

    HAVE_NUMBA = True
    prange = _numba.prange
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
