"""Progress lines for long work (to stderr, one updating line per task)."""

from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


class Progress:
    """``with Progress("OpenSim computeMomentArm", total) as p: ... p.advance()`` prints done/total and a rate."""

    def __init__(self, label: str, total: int, stream=None, enabled: bool = True, every: float = 0.25):
        self.label = label
        self.total = max(int(total), 1)
        self.done = 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.every = every
        self._t0 = self._last = time.perf_counter()

    def __enter__(self) -> "Progress":
        self._show(force=True)
        return self

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._show()

    def _show(self, force: bool = False, end: str = "\r") -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self._last < self.every and self.done < self.total:
            return
        self._last = now
        el = now - self._t0
        rate = self.done / el if el > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else float("nan")
        self.stream.write(f"  {self.label}: {self.done}/{self.total} ({100 * self.done / self.total:5.1f}%)"
                          f" {el:6.1f} s elapsed" + (f", ~{left:.0f} s left" if rate > 0 and self.done < self.total else "")
                          + " " * 4 + end)
        self.stream.flush()

    def __exit__(self, *exc) -> None:
        self._show(force=True, end="\n")
