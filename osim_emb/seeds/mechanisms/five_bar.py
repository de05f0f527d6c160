"""The five-bar linkage (seed Eq 123, Table 2): a short import path for :mod:`osim_emb.seeds.mechanisms.linkages`."""

from osim_emb.seeds.mechanisms.linkages import (
    FiveBarParameters,
    five_bar_body_system,
    five_bar_chain,
    five_bar_constraints,
    five_bar_model,
    five_bar_reference_assembly,
    five_bar_trajectory,
)

__all__ = ["FiveBarParameters", "five_bar_constraints", "five_bar_reference_assembly", "five_bar_chain",
           "five_bar_model", "five_bar_body_system", "five_bar_trajectory"]
