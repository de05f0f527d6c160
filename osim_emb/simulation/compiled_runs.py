"""Compiled integrations (RK45-jit, BDF-jit) run to their end in calls that stop at output times: the kernels keep
their state in arrays they update in place (:func:`~osim_emb.simulation.muscle_driven_jit.rk45_run`,
:func:`~osim_emb.simulation.muscle_driven_bdf.bdf_run`), so that between calls a progress bar advances and a wall-time
budget is read, and the states are those of one call, bitwise."""

from __future__ import annotations

import time

import numpy as np

from osim_emb.progress import Progress
from osim_emb.simulation.muscle_driven_bdf import bdf_run, bdf_start
from osim_emb.simulation.muscle_driven_jit import (BUDGET, REACHED, UNDERFLOW, _raise_singular, compiled_plan,
                                                   rk45_run, rk45_start)

__all__ = ["IntegrationBudgetExceeded", "CompiledRun", "advance_compiled", "REACHED", "UNDERFLOW", "BUDGET"]


class IntegrationBudgetExceeded(RuntimeError):
    """An integration stopped by its step or wall-time budget, or by a non-finite state."""


class CompiledRun:
    """A compiled integration that can stop at any output time and go on (a progress bar, a wall-time budget):
    :meth:`advance` to an output index; ``out`` holds the states written, ``reached`` how many, ``nfev`` the
    right-hand sides used.  ``method``: "RK45-jit" (:func:`~osim_emb.simulation.muscle_driven_jit.rk45_run`) or
    "BDF-jit" (:func:`~osim_emb.simulation.muscle_driven_bdf.bdf_run`); runs to successive stops give the one run's states
    bitwise."""

    def __init__(self, system, method: str, y0: np.ndarray, t_eval: np.ndarray, rtol: float, atol: float, plan=None):
        if plan is None:
            plan, why = compiled_plan(system)
            if plan is None:
                raise ValueError(f"the compiled integrator cannot run this system: {why}")
        self.system, self.method, self.plan = system, method, plan
        self.t_eval = np.ascontiguousarray(t_eval, dtype=float)
        self.rtol, self.atol = float(rtol), float(atol)
        self.y0 = np.ascontiguousarray(y0, dtype=float)
        self.out = np.empty((self.t_eval.shape[0], self.y0.shape[0]))
        self.out[0] = self.y0
        if method == "RK45-jit":  # (the first advance evaluates the start: a singular M at y0 is named there)
            f, st, cnt = rk45_start(self.t_eval[0], self.y0)
            self._state = (self.y0.copy(), f, st, cnt)
        else:
            self._state = bdf_start(self.t_eval[0], self.y0, plan[0], plan[2])

    @property
    def reached(self) -> int:
        return int(self._state[3][1] if self.method == "RK45-jit" else self._state[2][3])

    @property
    def counts(self) -> dict:
        if self.method == "RK45-jit":
            return {"nfev": int(self._state[3][0])}
        return dict(zip(("nfev", "njev", "nlu", "steps", "rejected"), (int(s) for s in self._state[2][4:])))

    @property
    def nfev(self) -> int:
        return self.counts["nfev"]

    def advance(self, stop: int, max_rhs: int | None = None) -> int:
        """Integrate until out[stop - 1] is written; REACHED, UNDERFLOW or BUDGET (more than ``max_rhs``
        right-hand sides)."""
        limit = np.iinfo(np.int64).max if max_rhs is None else int(max_rhs)
        try:
            if self.method == "RK45-jit":
                return rk45_run(*self._state, self.out, self.t_eval, int(stop), limit, self.rtol, self.atol,
                                *self.plan)
            return bdf_run(*self._state, self.out, self.t_eval, int(stop), limit, self.rtol, self.atol, *self.plan)
        except np.linalg.LinAlgError as err:
            _raise_singular(self.system, self.y0, err)

    def underflow_error(self) -> RuntimeError:
        what = "compiled" if self.method == "RK45-jit" else "implicit"
        return RuntimeError(f"the {what} integrator's step size underflowed after t = "
                            f"{self.t_eval[self.reached - 1]}")


def advance_compiled(run, progress: bool, max_steps: int | None, max_seconds: float | None) -> None:
    """Run a :class:`CompiledRun` to its last output time: in one call, or (with a progress bar or
    a wall-time budget) in calls of a growing number of output times, each about a tenth of a second or more, the
    bar advanced and the clock read between them (the states are those of one call, bitwise)."""
    total = len(run.t_eval)
    chunked = progress or max_seconds is not None
    start, size = time.perf_counter(), 1
    with Progress(f"simulating {run.t_eval[-1]:g} s ({run.method})", total, enabled=progress,
                  unit="output time") as bar:
        bar.advance(run.reached)  # the initial state
        while run.reached < total:
            before, began = run.reached, time.perf_counter()
            status = run.advance(min(total, before + size) if chunked else total, max_steps)
            bar.advance(run.reached - before)
            where = f"t = {run.t_eval[run.reached - 1]:.6g} s"
            if status == UNDERFLOW:
                raise run.underflow_error()
            if status == BUDGET:
                raise IntegrationBudgetExceeded(f"integration stopped after {where} ({run.method}): more than "
                                                f"{max_steps} right-hand sides")
            now = time.perf_counter()
            if max_seconds is not None and now - start > max_seconds and run.reached < total:
                raise IntegrationBudgetExceeded(f"integration stopped after {where} ({run.method}): {max_seconds:g} s "
                                                "of wall time spent")
            size = size * 2 if now - began < 0.1 else size
