"""Units whose relative configuration is the same in a whole batch are evaluated once (paths.geometry)."""

from __future__ import annotations

import numpy as np

from osim_emb.io import load_osim
from osim_emb.paths.geometry import (_jit_plan, _joint_variable_arrays, _point_activity, _units_fixed_in_batch,
                                     lengths_and_moment_arms)


def test_a_shoulder_sweep_evaluates_the_elbow_only_units_once_with_the_same_results(models_dir):
    model = load_osim(models_dir / "arm26.osim")
    names = [m.name for m in model.muscles]
    k_sh, k_el = model.coordinate_index("r_shoulder_elev"), model.coordinate_index("r_elbow_flex")
    q = np.zeros((9, model.n_q))
    q[:, k_sh] = np.linspace(-1.0, 2.5, 9)
    q[:, k_el] = 0.7
    plan = _jit_plan(model, None, True)
    val, grad = _joint_variable_arrays(model, q)
    fixed = _units_fixed_in_batch(plan, val, grad, _point_activity(plan, q))
    # the units from the humerus to the ulna do not depend on the shoulder angle
    assert {n for n, f in zip(names, fixed) if f} == {"TRIlat", "TRImed", "BRA"}
    for compat in (False, True):
        L, R = lengths_and_moment_arms(model, q, opensim_compat=compat)
        for n in range(q.shape[0]):  # one configuration alone: no unit is fixed, the full computation
            Ln, Rn = lengths_and_moment_arms(model, q[n], opensim_compat=compat)
            np.testing.assert_allclose(L[n], Ln[0], rtol=0, atol=1e-14)
            np.testing.assert_allclose(R[n], Rn[0], rtol=0, atol=1e-14)
            if n == 0:
                assert np.array_equal(L[0], Ln[0]) and np.array_equal(R[0], Rn[0])
        assert np.abs(R[:, k_sh][:, fixed]).max() < 1e-14  # no moment about the joint they do not cross


def test_a_batch_that_moves_every_joint_has_no_fixed_unit(models_dir):
    model = load_osim(models_dir / "arm26.osim")
    rng = np.random.default_rng(0)
    lo = np.array([c.range[0] for c in model.coordinates])
    hi = np.array([c.range[1] for c in model.coordinates])
    q = lo + (hi - lo) * rng.random((5, model.n_q))
    plan = _jit_plan(model, None, True)
    val, grad = _joint_variable_arrays(model, q)
    assert not _units_fixed_in_batch(plan, val, grad, _point_activity(plan, q)).any()


def test_a_batch_of_one_repeated_configuration_is_one_evaluation(models_dir):
    model = load_osim(models_dir / "arm26.osim")
    q1 = np.array([0.3, 1.1])[:model.n_q]
    L1, R1 = lengths_and_moment_arms(model, q1)
    L, R = lengths_and_moment_arms(model, np.tile(q1, (4, 1)))
    assert np.array_equal(L, np.repeat(L1, 4, axis=0)) and np.array_equal(R, np.repeat(R1, 4, axis=0))
