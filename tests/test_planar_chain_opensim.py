"""The closed forms against the same chain built in OpenSim (pin joints, offset centres of mass,
two-point PathActuators with given tension, PrescribedForces): reactions and torques to 1e-9 relative."""

from __future__ import annotations

import numpy as np
import pytest

from osim_emb.seeds.planar import (
    Link,
    Muscle,
    PlanarChain,
    joint_reactions,
    joint_torques,
    muscle_torques,
    with_base_equilibrium,
)
from test_planar_chain_reference import random_chain, random_states

pytestmark = pytest.mark.opensim
REL = 1e-9


def rel_err(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


@pytest.mark.parametrize("n, seed", [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5)])
def test_closed_forms_match_opensim_at_random_states(osim, n, seed):
    from osim_emb.opensim.planar_chain import opensim_inverse_dynamics

    rng = np.random.default_rng(1000 + seed)
    chain = random_chain(rng, n, n_muscles=2 * n + 1)
    assert chain.max_span == n
    th, dth, ddth, T, R, g = random_states(rng, chain, 20)
    R, g = with_base_equilibrium(chain, th, dth, ddth, R, g)
    ref = opensim_inverse_dynamics(chain, th, dth, ddth, T, R, g)
    assert ref["udot_error"].max() < 1e-9
    for data_set in ("distal", "proximal"):
        assert rel_err(joint_reactions(chain, th, dth, ddth, T, R, g, data_set=data_set), ref["phi"]) < REL
        assert rel_err(joint_torques(chain, th, dth, ddth, R, g, data_set=data_set), ref["tau"]) < REL
    assert rel_err(muscle_torques(chain, th, T), ref["tau_muscle"]) < REL


def test_forward_dynamics_with_muscles_matches_eq22(osim):
    """When OpenSim's forward dynamics with the muscles alone produces the motion, Eq 23 equals Eq 22."""
    from osim_emb.opensim.planar_chain import build_opensim_chain

    rng = np.random.default_rng(77)
    chain = random_chain(rng, 3, n_muscles=6)
    th, dth, _, T, _, _ = random_states(rng, chain, 5)
    oc = build_opensim_chain(chain)
    state = oc.model.initSystem()
    for a in oc.muscles + oc.coord_actuators:
        a.overrideActuation(state, True)
    for s in range(5):
        q = np.diff(np.concatenate([[0.0], th[s]]))
        u = np.diff(np.concatenate([[0.0], dth[s]]))
        for k in range(3):
            oc.coordinates[k].setValue(state, float(q[k]), False)
            oc.coordinates[k].setSpeedValue(state, float(u[k]))
        for a in oc.coord_actuators:
            a.setOverrideActuation(state, 0.0)
        for m, a in enumerate(oc.muscles):
            a.setOverrideActuation(state, float(T[s, m]))
        oc.model.realizeAcceleration(state)
        ud = np.array([state.getUDot().get(k) for k in range(3)])
        ddth = np.cumsum(ud)[None]
        tau = joint_torques(chain, th[s:s + 1], dth[s:s + 1], ddth)
        np.testing.assert_allclose(tau, muscle_torques(chain, th[s:s + 1], T[s:s + 1]), rtol=1e-9, atol=1e-9)


def test_base_attached_muscles_and_generic_link_shapes(osim):
    """A hand-built chain: muscles from the base spanning 1, 2 and 3 joints, contacts on every link."""
    from osim_emb.opensim.planar_chain import opensim_inverse_dynamics

    links = (
        Link(0.12, 1.0, 0.05, 0.2, 0.01, name="base"),
        Link(0.40, 2.5, 0.18, 0.15, 0.030, 0.30, -0.2),
        Link(0.30, 1.5, 0.14, -0.25, 0.015, 0.10, 0.4),
        Link(0.20, 0.6, 0.09, 0.40, 0.004, 0.18, 0.1),
    )
    muscles = (
        Muscle("one", 0, 1, (0.02, 0.03), (0.10, 0.02)),
        Muscle("two", 0, 2, (0.05, -0.04), (0.06, -0.02)),
        Muscle("three", 3, 0, (0.05, 0.015), (0.08, 0.05)),
        Muscle("inner", 1, 3, (0.30, -0.02), (0.04, -0.01)),
    )
    chain = PlanarChain(links, muscles, base_angle=0.3)
    rng = np.random.default_rng(8)
    th, dth, ddth, T, R, g = random_states(rng, chain, 15)
    R, g = with_base_equilibrium(chain, th, dth, ddth, R, g)
    ref = opensim_inverse_dynamics(chain, th, dth, ddth, T, R, g)
    assert rel_err(joint_reactions(chain, th, dth, ddth, T, R, g), ref["phi"]) < REL
    assert rel_err(joint_torques(chain, th, dth, ddth, R, g), ref["tau"]) < REL
    assert rel_err(muscle_torques(chain, th, T), ref["tau_muscle"]) < REL
