"""Validation against OpenSim's API and the seed's published results (needs the optional opensim package)."""
