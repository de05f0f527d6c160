"""Simulation: forward dynamics ODEs, inverse dynamics of motions, tracking, the DAE comparison,
muscle-driven simulation and static optimization."""
