"""Closed-form moment arms (Eq 195) and lengths: against -dL/dq by finite differences, the literal
body-frame Eq 195, and OpenSim (lengths; moment arms on the moving-via-points-as-bodies export)."""

import numpy as np
import pytest

from osim_emb.io import load_osim
from osim_emb.paths.geometry import lengths_and_moment_arms, moment_arms_eq195, muscle_lengths


@pytest.fixture(scope="module")
def nowrap(models_dir):
    path = models_dir / "mobl_arms_holzbaur_nowrap_variant.osim"
    return str(path), load_osim(path)


def _random_q(model, n, seed):
    rng = np.random.default_rng(seed)
    lo, hi = model.coordinate_ranges.T
    return rng.uniform(lo, hi, (n, model.n_q))


def test_moment_arms_equal_minus_length_gradient(nowrap):
    _, model = nowrap
    q = _random_q(model, 6, 0)
    _, r = lengths_and_moment_arms(model, q, wrapping=False)
    h = 1e-6
    for k in range(model.n_q):
        dq = np.zeros(model.n_q)
        dq[k] = h
        fd = -(muscle_lengths(model, q + dq, wrapping=False) - muscle_lengths(model, q - dq, wrapping=False)) / (2 * h)
        np.testing.assert_allclose(r[:, k, :], fd, atol=2e-9)


def test_eq195_literal_body_frame_form(nowrap):
    _, model = nowrap
    q = _random_q(model, 3, 1)
    _, r = lengths_and_moment_arms(model, q, wrapping=False)
    names = [m.name for m in model.muscles]
    for n in range(3):
        for name in ("DELT1", "DELT2", "PECM1", "LAT1", "SUBSC", "BIClong", "BRA"):
            np.testing.assert_allclose(moment_arms_eq195(model, q[n], name), r[n, :, names.index(name)], atol=1e-14)


def test_lengths_and_moment_arms_equal_opensim_on_mvp_export(osim, nowrap, tmp_path):
    """Lengths equal OpenSim's getLength; R equals computeMomentArm on the model whose moving via points
    are zero-inertia bodies (the seed's comparison), to 1e-8 m."""
    from osim_emb.io.osim_writer import moving_points_as_bodies, write_osim
    from osim_emb.opensim.bridge import OpenSimReference
    path, model = nowrap
    mvp = tmp_path / "mvp.osim"
    write_osim(moving_points_as_bodies(model.extras["document"]), mvp)
    ref = OpenSimReference(str(mvp))
    q = _random_q(model, 4, 2)
    length, r = lengths_and_moment_arms(model, q, wrapping=False)
    worst_l = worst_r = 0.0
    for n in range(len(q)):
        ref.set_configuration(q[n], names=model.coordinate_names)
        for m, mu in enumerate(model.muscles):
            worst_l = max(worst_l, abs(ref.muscle_length(mu.name) - length[n, m]))
            for k, c in enumerate(model.coordinate_names):
                worst_r = max(worst_r, abs(ref.moment_arm(mu.name, c) - r[n, k, m]))
    assert worst_l < 1e-12
    assert worst_r < 1e-8
