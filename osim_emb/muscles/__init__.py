"""Hill-type musculotendon models as OpenSim defines them: force-length-velocity curves and the muscle models.

Paths (lengths, moment arms) are in :mod:`osim_emb.paths`; static optimization in :mod:`osim_emb.simulation`;
reading them from .osim XML in :mod:`osim_emb.io.muscle_xml`."""

from osim_emb.muscles.curves import (
    ActiveForceLengthCurve,
    FiberForceLengthCurve,
    ForceVelocityCurve,
    ForceVelocityInverseCurve,
    SmoothSegmentedCurve,
    TendonForceLengthCurve,
)
from osim_emb.muscles.hill import (
    HillMuscle,
    Millard2012EquilibriumMuscle,
    MuscleModelError,
    RigidPathActuator,
    RigidTendonMuscle,
    RigidTendonForces,
    Schutte1993Muscle,
    Thelen2003Muscle,
    muscle_from_dict,
)

__all__ = [
    "ActiveForceLengthCurve", "FiberForceLengthCurve", "ForceVelocityCurve", "ForceVelocityInverseCurve",
    "SmoothSegmentedCurve", "TendonForceLengthCurve",
    "HillMuscle", "Millard2012EquilibriumMuscle", "MuscleModelError", "RigidPathActuator", "RigidTendonForces", "RigidTendonMuscle",
    "Schutte1993Muscle", "Thelen2003Muscle", "muscle_from_dict",
]
