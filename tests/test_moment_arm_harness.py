"""The moment-arm harness on every reference model with muscles (coarse sweeps), and arm26's wrapped moment arms."""

import numpy as np
import pytest

from osim_emb.validation.moment_arms import make_sweeps, run_moment_arm_study


@pytest.mark.parametrize("name,sweep,limits", [
    ("arm26.osim", ["r_shoulder_elev", "r_elbow_flex"], {"computeMomentArm": 1e-8, "computeMomentArm_mvp": 1e-8}),
    ("leg6dof9musc.osim", ["pelvis_tilt", "pelvis_tx", "hip_flexion_r", "knee_angle_r", "ankle_angle_r"],
     {"computeMomentArm": 1e-8, "computeMomentArm_mvp": 1e-8, "minus_dL_dq": 1e-7}),
])
def test_harness_against_opensim(osim, models_dir, tmp_path, name, sweep, limits):
    res = run_moment_arm_study(str(models_dir / name), sweep, step_deg=15.0, opensim_compat=True,
                               out_dir=tmp_path, formats=("png",), progress=False)
    s = res["summary"]
    for ref, lim in limits.items():
        assert s[s.reference == ref].max_abs_difference.max() < lim, ref
    assert (tmp_path / "moment_arms.csv.gz").exists() and (tmp_path / "error_heatmap_computeMomentArm.png").exists()
    cols = list(res["table"].columns)
    assert cols[:9] == ["model", "reference", "muscle", "swept_coordinate", "angle_deg", "moment_arm_coordinate",
                        "ours", "opensim", "difference"]


def test_sweeps_are_one_degree_over_the_range(models_dir):
    from osim_emb.io import load_osim
    m = load_osim(models_dir / "mobl_arms_holzbaur.osim")
    sw = make_sweeps(m, ["elv_angle", "shoulder_elv", "shoulder_rot"], 1.0, {"elv_angle": 0, "shoulder_elv": 0,
                                                                            "shoulder_rot": 0})
    assert [len(s.angles_deg) for s in sw] == [221, 181, 111]  # 513 configurations, as in the issue
    assert sw[1].angles_deg[0] == 0 and sw[1].angles_deg[-1] == 180
    assert np.all(sw[1].q[:, m.coordinate_index("elv_angle")] == 0)


def test_no_muscles_is_a_clear_error(models_dir):
    with pytest.raises(ValueError, match="no musculotendon units"):
        run_moment_arm_study(str(models_dir / "double_pendulum.osim"), ["q1"], references=[])
