"""Muscle paths: path points, wrapping by surface, OpenSim's GeometryPath, function-based paths;
lengths L(q) and moment arms R(q) as arrays and labelled tables."""
