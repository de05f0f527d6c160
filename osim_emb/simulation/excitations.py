"""Excitations and controls as functions of time that OpenSim evaluates too (OpenSim's Constant, StepFunction,
Sine), and SimTK's smooth step; the compiled forms (:func:`excitation_value`, :func:`smooth_step`) are the ones both
routes of the muscle-driven simulation evaluate."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from osim_emb.core._accel import njit

from osim_emb.core.compiled_kernels import smooth_step  # noqa: F401  (re-exported: one SimTK step)

__all__ = ["ExcitationSpec", "EXCITATION_KINDS", "excitation_value", "smooth_step", "MuscleSimulationError"]

EXCITATION_KINDS = {"constant": 0, "step": 1, "sine": 2}


class MuscleSimulationError(ValueError):
    """The model cannot be simulated with muscles (unsupported element, bad excitation, no equilibrium)."""


@njit(error_model="numpy")
def excitation_value(kind, v, t):  # pragma: no cover - compiled
    """u(t) of an encoded :class:`ExcitationSpec` (kind: EXCITATION_KINDS; v: its values)."""
    if kind == 0:
        return v[0]
    if kind == 1:
        return smooth_step(v[2], v[3], v[0], v[1], t)
    return v[0] * math.sin(v[1] * t + v[2]) + v[3]


@dataclass(frozen=True)
class ExcitationSpec:
    """An excitation u(t) that OpenSim can also evaluate: ``constant`` (value), ``step`` (t0, t1, u0, u1; SimTK's
    quintic smooth step, OpenSim ``StepFunction``) or ``sine`` (amplitude, omega [rad/s], phase, offset; OpenSim
    ``Sine``: A sin(ω t + φ) + offset)."""

    kind: str
    values: tuple[float, ...]

    def __post_init__(self):
        n = {"constant": 1, "step": 4, "sine": 4}.get(self.kind)
        if n is None:
            raise MuscleSimulationError(f"excitation kind {self.kind!r} is not one of constant, step, sine")
        if len(self.values) != n:
            raise MuscleSimulationError(f"a {self.kind} excitation takes {n} numbers, got {len(self.values)}")
        if self.kind == "step" and not self.values[1] > self.values[0]:
            raise MuscleSimulationError(f"step excitation: the end time {self.values[1]} must follow the start "
                                        f"time {self.values[0]}")

    @classmethod
    def parse(cls, text: str) -> "ExcitationSpec":
        """'0.3' (constant), 'step:T0:T1:U0:U1', 'sine:AMPLITUDE:OMEGA:PHASE:OFFSET'."""
        parts = text.strip().split(":")
        try:
            if len(parts) == 1:
                return cls("constant", (float(parts[0]),))
            return cls(parts[0].strip().lower(), tuple(float(p) for p in parts[1:]))
        except ValueError:
            raise MuscleSimulationError(f"excitation {text!r}: expected a number, 'step:T0:T1:U0:U1' or "
                                        "'sine:AMPLITUDE:OMEGA:PHASE:OFFSET'") from None

    def encoded(self) -> tuple[int, tuple[float, ...]]:
        """(kind number, values padded to 4) for :func:`excitation_value`."""
        return EXCITATION_KINDS[self.kind], (*self.values, *(0.0,) * (4 - len(self.values)))

    def __call__(self, t: float) -> float:
        v = self.values
        if self.kind == "constant":
            return v[0]
        return float(excitation_value(EXCITATION_KINDS[self.kind], np.array(v, dtype=float), float(t)))

    def to_opensim(self, osim: Any):
        v = self.values
        if self.kind == "constant":
            return osim.Constant(v[0])
        if self.kind == "step":
            return osim.StepFunction(v[0], v[1], v[2], v[3])
        return osim.Sine(v[0], v[1], v[2], v[3])
