"""Closed-chain mechanisms of the seed (section 4-3 and 4-4 B) built on :mod:`osim_emb.core.closed_chains`.

* :mod:`.planar` - trigonometric loop constraints, planar joints, Hermite trajectories and the
  traditional body-coordinate kinematics (Shabana) used as the independent reference;
* :mod:`.linkages` - the four-bar (Eq 121) and five-bar (Eq 123) linkages;
* :mod:`.andrews` - Andrews' squeezing mechanism (Eq 199 / Hairer & Wanner): the seven-body model
  with beta as the only generalized coordinate, the reduced ODE and the DAE for comparison.
"""
