"""Hill-type musculotendon models as OpenSim defines them, and static optimization (muscle force sharing)."""

from .curves import (
    ActiveForceLengthCurve,
    FiberForceLengthCurve,
    ForceVelocityCurve,
    ForceVelocityInverseCurve,
    SmoothSegmentedCurve,
    TendonForceLengthCurve,
)
from .hill import (
    HillMuscle,
    Millard2012EquilibriumMuscle,
    MuscleModelError,
    RigidPathActuator,
    RigidTendonForces,
    Schutte1993Muscle,
    Thelen2003Muscle,
    hill_muscle_from_xml,
    muscle_from_dict,
)
from .static_optimization import (
    InfeasibleError,
    StaticOptimizationResult,
    muscle_force_coefficients,
    static_optimization,
)

__all__ = [
    "ActiveForceLengthCurve", "FiberForceLengthCurve", "ForceVelocityCurve", "ForceVelocityInverseCurve",
    "SmoothSegmentedCurve", "TendonForceLengthCurve",
    "HillMuscle", "Millard2012EquilibriumMuscle", "MuscleModelError", "RigidPathActuator", "RigidTendonForces",
    "Schutte1993Muscle", "Thelen2003Muscle", "hill_muscle_from_xml", "muscle_from_dict",
    "InfeasibleError", "StaticOptimizationResult", "muscle_force_coefficients", "static_optimization",
]
