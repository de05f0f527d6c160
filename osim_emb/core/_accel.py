"""Compiled kernels (numba, a core dependency of the package).

numba is installed with the package (the ``speed`` extra is kept as an empty alias).  The
musculotendon paths (wrapping, path construction, lengths and moment arms) have one
implementation, the compiled kernels of ``osim_emb.paths.wrapping``, and always run them.
Elsewhere (dynamics, closed chains) ``OSIM_EMB_NO_JIT=1`` still selects the numpy code
(:func:`use_jit`); it no longer affects the paths.
"""

from __future__ import annotations

import os

__all__ = ["HAVE_NUMBA", "use_jit", "njit"]

try:  # pragma: no cover - depends on the environment
    import numba as _numba

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    _numba = None
    HAVE_NUMBA = False


def use_jit() -> bool:
    """True when compiled kernels are available and not disabled by OSIM_EMB_NO_JIT=1."""
    return HAVE_NUMBA and os.environ.get("OSIM_EMB_NO_JIT", "") not in ("1", "true", "yes")


def njit(*args, **kwargs):
    """numba.njit(cache=True, ...) when numba is installed; otherwise the plain Python function."""
    kwargs.setdefault("cache", True)
    if HAVE_NUMBA:
        return _numba.njit(*args, **kwargs)
    if args and callable(args[0]):
        return args[0]
    return lambda f: f
