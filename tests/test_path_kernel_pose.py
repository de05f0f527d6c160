"""The single-pose entry of the path kernel (``pose_lengths_moment_arms`` with a reused workspace, what the
compiled muscle-driven right-hand side calls) against the batch kernel of ``lengths_and_moment_arms`` (itself
checked against OpenSim in test_moment_arms.py and test_wrapping_*.py): bitwise the same, in any order of
poses (nothing of one call leaks into the next through the workspace)."""

import numpy as np
import pytest

from osim_emb.io import load_osim
from osim_emb.paths.geometry import _jit_plan, _joint_variable_arrays, lengths_and_moment_arms


@pytest.mark.parametrize("compat", [True, False])
def test_single_pose_entry_with_a_reused_workspace_equals_the_batch(models_dir, compat):
    from osim_emb.paths.wrapping._kernels_muscles import pose_lengths_moment_arms, pose_workspace

    model = load_osim(str(models_dir / "arm26.osim"))  # cylinders and ellipsoids
    rng = np.random.default_rng(3)
    lo = np.array([c.range[0] for c in model.coordinates])
    hi = np.array([c.range[1] for c in model.coordinates])
    q = lo + (hi - lo) * rng.random((40, model.n_q))
    L, R = lengths_and_moment_arms(model, q, opensim_compat=compat)

    plan = _jit_plan(model, None, True)
    val, grad = _joint_variable_arrays(model, q)
    mp, mw = plan.path[0], plan.path[1]
    n_m = mp.shape[0] - 1
    pa = np.ones((1, plan.points[0].shape[0]), dtype=np.bool_)
    out = (np.empty((1, mp[-1], 3)), np.empty((1, mw[-1], 4, 4)), np.empty((1, n_m)),
           np.full((1, model.n_q, n_m), np.nan))  # R need not be zeroed
    ws = pose_workspace(model.n_frames, model.n_q, plan.bodies[0], *plan.path[:3])
    model_arrays = (*plan.kin, *plan.bodies, *plan.points)
    path_arrays = (*plan.wraps, *plan.frames, *plan.path, compat, True)
    for n in [*range(len(q)), *range(len(q) - 1, -1, -3)]:  # forwards, then backwards: one workspace throughout
        pose_lengths_moment_arms(val[n:n + 1], grad[n:n + 1], pa, model_arrays, path_arrays, out, ws)
        np.testing.assert_array_equal(out[2][0], L[n])
        np.testing.assert_array_equal(out[3][0], R[n])
    assert np.isfinite(L).all() and np.abs(R).max() > 0.01  # the sweep wraps and has moment arms of cm
