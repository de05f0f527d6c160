"""Progress of long work: a tqdm bar on a terminal, one log line per stage otherwise (redirected output)."""

from __future__ import annotations

import logging
import sys
import time

__all__ = ["Progress"]

log = logging.getLogger(__name__)


class Progress:
    """``with Progress("OpenSim computeMomentArm", total) as p: ... p.advance()``.

    On a terminal a tqdm bar (to stderr); when stderr is not a terminal, one line when the stage ends."""

    def __init__(self, label: str, total: int, stream=None, enabled: bool = True, unit: str = "configuration"):
        self.label = label
        self.total = max(int(total), 1)
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.unit = unit
        self._bar = None
        self._t0 = time.perf_counter()

    def __enter__(self) -> "Progress":
        self._t0 = time.perf_counter()
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
        if self._bar is not None:
            self._bar.close()
        elif self.enabled:
            self.stream.write(f"  {self.label}: {self.done}/{self.total} {self.unit}s in {self.elapsed:.1f} s\n")
            self.stream.flush()
