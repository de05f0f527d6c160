"""Progress of long work: a tqdm bar on a terminal, one log line per stage otherwise (redirected output)."""

from __future__ import annotations

import logging
import sys
import time

__all__ = ["Progress", "CompileProgress"]

log = logging.getLogger(__name__)


class Progress:
    """``with Progress("OpenSim computeMomentArm", total) as p: ... p.advance()``.

    On a terminal a tqdm bar (to stderr); when stderr is not a terminal, one line when the stage ends.  numba
    compiling inside the stage is shown too (:class:`CompileProgress`)."""

    def __init__(self, label: str, total: int, stream=None, enabled: bool = True, unit: str = "configuration"):
        self.label = label
        self.total = max(int(total), 1)
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.unit = unit
        self._bar = None
        self._compiling = None
        self._t0 = time.perf_counter()

    def __enter__(self) -> "Progress":
        self._t0 = time.perf_counter()
        self._compiling = CompileProgress(stream=self.stream, enabled=self.enabled).__enter__()
        if self.enabled and getattr(self.stream, "isatty", lambda: False)():
            from tqdm import tqdm
            self._bar = tqdm(total=self.total, desc=f"  {self.label}", unit=self.unit[:4], file=self.stream,
                             leave=True, dynamic_ncols=True)
        return self

    def advance(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)

    def following(self, fun, times):
        """``fun(t, y)`` that also advances the bar to the number of ``times`` (sorted) at or before each t it is
        called at: an integrator's progress over its output times."""
        import numpy as np

        def followed(t, y):
            passed = int(np.searchsorted(times, t, side="right"))
            if passed > self.done:
                self.advance(passed - self.done)
            return fun(t, y)
        return followed

    def complete(self) -> None:
        """Advance the bar to its total (the work ended successfully)."""
        if self.done < self.total:
            self.advance(self.total - self.done)

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self._t0

    def __exit__(self, *exc) -> None:
        if self._compiling is not None:
            self._compiling.__exit__(*exc)
        if self._bar is not None:
            self._bar.close()
        elif self.enabled:
            self.stream.write(f"  {self.label}: {self.done}/{self.total} {self.unit}s in {self.elapsed:.1f} s\n")
            self.stream.flush()


class CompileProgress:
    """While numba compiles kernels inside the ``with`` block, say so: on a terminal a tqdm counter of the compiled
    functions with the one being compiled and the elapsed time (a first run after installation compiles for minutes);
    otherwise one line at the end, "numba compiled N functions in T s".  Nothing when nothing compiles (the kernels
    come from numba's cache) or numba is not installed.

    A numba ``numba:compile`` event listener (registered for the block only) counts the functions numba compiles,
    each callee of a kernel included, so the counter moves every few seconds.  Inside another CompileProgress
    (a command's, around a :class:`Progress` stage's) it does nothing: the outer one counts."""

    _active = 0  # CompileProgress blocks listening now (in this process)

    def __init__(self, label: str = "numba compiling kernels", stream=None, enabled: bool = True):
        self.label = label
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.compiled = 0
        self.seconds = 0.0
        self._depth = 0
        self._started = None
        self._bar = None
        self._listener = None

    def __enter__(self) -> "CompileProgress":
        if not self.enabled or CompileProgress._active:
            return self
        try:
            from numba.core import event
        except ImportError:
            return self
        progress = self

        class _Listener(event.Listener):
            def on_start(self, ev):
                progress._start(ev)

            def on_end(self, ev):
                progress._end(ev)

        self._listener = _Listener()
        event.register("numba:compile", self._listener)
        CompileProgress._active += 1
        return self

    def _start(self, ev) -> None:
        if self._depth == 0:
            self._started = time.perf_counter()
        self._depth += 1
        if self._bar is None and getattr(self.stream, "isatty", lambda: False)():
            from tqdm import tqdm
            self._bar = tqdm(desc=f"  {self.label}", unit="function", file=self.stream, leave=False,
                             dynamic_ncols=True, bar_format="{desc}: {n} compiled, {elapsed}{postfix}")
        if self._bar is not None:
            self._bar.set_postfix_str(_compiled_name(ev), refresh=True)

    def _end(self, ev) -> None:
        self._depth = max(self._depth - 1, 0)
        self.compiled += 1
        if self._depth == 0 and self._started is not None:
            self.seconds += time.perf_counter() - self._started
            self._started = None
        if self._bar is not None:
            self._bar.update(1)

    def __exit__(self, *exc) -> None:
        if self._listener is not None:
            from numba.core import event
            event.unregister("numba:compile", self._listener)
            self._listener = None
            CompileProgress._active -= 1
        if self._bar is not None:
            self._bar.close()
        if self.compiled and self.enabled:
            plural = "s" if self.compiled != 1 else ""
            self.stream.write(f"  numba compiled {self.compiled} function{plural} in {self.seconds:.0f} s (cached for "
                              "later runs)\n")
            self.stream.flush()


def _compiled_name(ev) -> str:
    """The name of the function a numba:compile event is about."""
    data = getattr(ev, "data", None) or {}
    func = getattr(data.get("dispatcher"), "py_func", None)
    return getattr(func, "__name__", "")
