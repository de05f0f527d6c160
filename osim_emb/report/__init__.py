"""Outputs for papers: the one figure style, figures drawn from results, comparisons with their figures,
the main job's report, model descriptions."""
