"""The four-bar linkage (seed Eq 121): a short import path for :mod:`osim_emb.seeds.mechanisms.linkages`."""

from osim_emb.seeds.mechanisms.linkages import (
    FourBarParameters,
    four_bar_body_system,
    four_bar_chain,
    four_bar_constraints,
    four_bar_model,
    four_bar_reference_assembly,
    four_bar_trajectory,
)

__all__ = ["FourBarParameters", "four_bar_constraints", "four_bar_reference_assembly", "four_bar_chain",
           "four_bar_model", "four_bar_body_system", "four_bar_trajectory"]
