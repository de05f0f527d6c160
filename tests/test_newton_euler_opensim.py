"""Matrix Newton-Euler against OpenSim: the double pendulum's forward simulation and the
foot-shank inverse dynamics with joint reactions."""

from __future__ import annotations

import numpy as np
import pytest

from osim_emb.seeds.newton_euler import (
    RigidSegment,
    chain_inverse_dynamics,
    energy,
    foot_shank_inverse_dynamics,
    simulate,
)
from osim_emb.opensim.newton_euler import opensim_foot_shank_reference, pendulum_chain_from_opensim

pytestmark = pytest.mark.opensim


def _opensim_trajectory(osim, path, t_final, accuracy):
    model = osim.Model(str(path))
    state = model.initSystem()
    cs = model.getCoordinateSet()
    q0 = np.array([cs.get(i).getValue(state) for i in range(cs.getSize())])
    u0 = np.array([cs.get(i).getSpeedValue(state) for i in range(cs.getSize())])
    manager = osim.Manager(model)
    manager.setIntegratorAccuracy(accuracy)
    state.setTime(0.0)
    manager.initialize(state)
    manager.integrate(t_final)
    table = manager.getStatesTable()
    labels = list(table.getColumnLabels())
    data = table.getMatrix().to_numpy()
    names = [cs.get(i).getAbsolutePathString() + "/value" for i in range(cs.getSize())]
    q = data[:, [labels.index(nm) for nm in names]]
    return np.array(table.getIndependentColumn()), q, q0, u0


@pytest.mark.models
def test_double_pendulum_matches_opensim_forward_simulation(osim, models_dir):
    """Same parameters (read through the API), same initial state, Manager accuracy 1e-8: within 1e-6 rad over 2 s."""
    path = models_dir / "double_pendulum.osim"
    if not path.exists():
        pytest.skip(f"{path} not found")
    chain, offsets, names = pendulum_chain_from_opensim(str(path))
    assert names == ["q1", "q2"]
    assert chain.masses == (1.0, 1.0) and chain.lengths[0] == pytest.approx(0.5)
    assert chain.g == pytest.approx(9.80665)
    t, q_os, q0, u0 = _opensim_trajectory(osim, path, 2.0, 1e-8)
    theta_os = np.cumsum(q_os, axis=1) + offsets  # relative OpenSim coordinates -> absolute angles
    sol = simulate(chain, np.cumsum(q0) + offsets, np.cumsum(u0), (0.0, 2.0))
    assert sol.status == 0
    theta = sol.sol(t)[:2].T
    err = np.max(np.abs(theta - theta_os))
    assert err < 1e-6, err
    # energy of our trajectory (stated tolerance: 1e-9 relative over 2 s)
    T, V = energy(chain, sol.y[:2].T, sol.y[2:].T)
    E = T + V
    assert np.max(np.abs(E - E[0])) < 1e-9 * abs(E[0])


def _rand_inertia(rng, scale):
    A = rng.normal(size=(3, 3))
    Q, _ = np.linalg.qr(A)
    d = rng.uniform(0.4, 1.0, 3) * scale
    d[2] = min(d[2], d[0] + d[1] - 1e-4 * scale)
    return Q @ np.diag(d) @ Q.T


def test_foot_shank_matches_opensim_inverse_dynamics_and_reactions(osim):
    rng = np.random.default_rng(12)
    N = 12
    m_S, m_F = 3.6, 1.1
    I_S, I_F = _rand_inertia(rng, 0.05), _rand_inertia(rng, 0.006)
    com_S, com_F = np.array([0.012, -0.19, 0.004]), np.array([0.06, -0.025, 0.008])
    ankle_S, ankle_F = np.array([0.0, -0.43, 0.0]), np.array([-0.03, 0.045, 0.0])
    q = rng.uniform(-0.8, 0.8, (N, 9))
    u = rng.uniform(-4, 4, (N, 9))
    udot = rng.uniform(-30, 30, (N, 9))
    GRF = rng.normal(size=(N, 3)) * [120.0, 700.0, 60.0]
    COP = rng.normal(size=(N, 3)) * 0.3
    g = (0.0, -9.80665, 0.0)
    ref = opensim_foot_shank_reference(m_F, I_F, com_F, ankle_F, m_S, I_S, com_S, ankle_S, q, u, udot, GRF, COP, g)
    assert ref["udot_error"].max() < 1e-8
    out = foot_shank_inverse_dynamics(m_F, I_F, m_S, I_S, ref["R_F"], ref["R_S"], ref["a_cmF"], ref["a_cmS"],
                                      ref["w_F"], ref["w_S"], ref["dw_F"], ref["dw_S"], ref["p_A"] - ref["p_cmF"],
                                      COP - ref["p_cmF"], ref["p_A"] - ref["p_cmS"], ref["p_K"] - ref["p_cmS"], GRF, g)
    to_body = lambda R, v: np.einsum("nij,nj->ni", R, v)  # noqa: E731
    pairs = {"F_A": ref["F_A"], "F_K": ref["F_K"], "M_A": to_body(ref["R_F"], ref["M_A"]),
             "M_K": to_body(ref["R_S"], ref["M_K"])}
    for key, b in pairs.items():
        rel = np.max(np.abs(out[key] - b)) / np.max(np.abs(b))
        assert rel < 1e-9, (key, rel)
    F, M = chain_inverse_dynamics([RigidSegment("foot", m_F, I_F), RigidSegment("shank", m_S, I_S)],
                                  np.stack([ref["R_F"], ref["R_S"]], 1), np.stack([ref["p_cmF"], ref["p_cmS"]], 1),
                                  np.stack([ref["a_cmF"], ref["a_cmS"]], 1), np.stack([ref["w_F"], ref["w_S"]], 1),
                                  np.stack([ref["dw_F"], ref["dw_S"]], 1), np.stack([ref["p_A"], ref["p_K"]], 1),
                                  F_ext=np.stack([GRF, np.zeros_like(GRF)], 1), p_ext=np.stack([COP, COP], 1),
                                  gravity=g)
    for key, a in (("F_A", F[:, 0]), ("F_K", F[:, 1]), ("M_A", M[:, 0]), ("M_K", M[:, 1])):
        rel = np.max(np.abs(a - pairs[key])) / np.max(np.abs(pairs[key]))
        assert rel < 1e-9, (key, rel)
