"""Optional compiled kernels (numba).

The package's results never depend on numba: every accelerated kernel has a
numpy reference implementation it is tested against.  ``pip install
'osim-emb[speed]'`` installs numba; setting OSIM_EMB_NO_JIT=1 disables it.
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
