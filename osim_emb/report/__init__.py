"""Outputs for papers: the project's one figure style, comparison figures, model descriptions."""
