"""Dynamics proof against OpenSim (issue 6): at random states, M = J^T M_simbody J (calcM), the velocity and
gravity terms equal the reduced inverse dynamics J^T (c - g + M b), and the forward accelerations equal
Simbody's constrained accelerations reduced to the generalized coordinates -- all forces off."""

import numpy as np
import pytest

from osim_emb.core import dynamics as dyn
from osim_emb.io import load_osim

CASES = [("double_pendulum.osim", 100), ("leg6dof9musc.osim", 100), ("mobl_arms_holzbaur.osim", 100)]


@pytest.mark.parametrize("name,n", CASES)
def test_mass_velocity_gravity_and_accelerations_equal_opensim(osim, models_dir, name, n):
    from osim_emb.opensim.bridge import OpenSimReference
    path = str(models_dir / name)
    model = load_osim(path)
    ref = OpenSimReference(path, model, disable_forces=True)
    rng = np.random.default_rng(11)
    lo, hi = model.coordinate_ranges.T
    q = rng.uniform(lo, hi, (n, model.n_q))
    qd = rng.normal(size=(n, model.n_q))
    terms = dyn.dynamics_terms(model, q, qd)
    qdd = dyn.forward_dynamics(model, q, qd)
    worst = {"mass": 0.0, "bias": 0.0, "qddot": 0.0}
    for k in range(n):
        r = ref.reduced_dynamics(q[k], qd[k])
        ours = {"mass": terms.mass[k], "bias": terms.velocity_forces[k] - terms.gravity[k], "qddot": qdd[k]}
        for key in worst:
            scale = max(np.abs(r[key]).max(), 1e-300)
            worst[key] = max(worst[key], np.abs(ours[key] - r[key]).max() / scale)
    assert worst["mass"] < 1e-9, worst
    assert worst["bias"] < 1e-9, worst
    assert worst["qddot"] < 1e-9, worst


def test_mobl_inertias_read_as_opensim_reads_version_30000(models_dir):
    """OpenSim converts 3.3 inertias with 6 significant digits; the importer reproduces it and says so."""
    model = load_osim(models_dir / "mobl_arms_holzbaur.osim")
    hum = model.body("humerus")
    assert hum.inertia[0, 0] == 0.0122776  # the file says 0.01227763
    assert any("6 significant digits" in s for s in model.extras["notes"])
    assert not np.any(model.body("thorax").inertia)  # massless: OpenSim resets its inertia to zero
