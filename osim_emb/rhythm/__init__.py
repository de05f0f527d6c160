"""Shoulder rhythms: built-in and file rhythms, applying them to a model, fitting them to measured kinematics."""

from osim_emb.rhythm.rhythms import (
    Rhythm,
    RhythmDomainWarning,
    RhythmError,
    RhythmTerm,
    apply,
    builtin_rhythm,
    load_rhythm,
)

__all__ = ["Rhythm", "RhythmDomainWarning", "RhythmError", "RhythmTerm", "apply", "builtin_rhythm", "load_rhythm"]
