"""Motions differentiated as OpenSim's tools differentiate them: the natural quintic spline (GCVSplineSet(5)
without smoothing), OpenSim's low-pass filter (pad, resample, third-order Butterworth forwards and backwards), and
the AnalyzeTool's second spline through the speeds — against OpenSim 4.6's InverseDynamicsTool and
StaticOptimization on a noisy motion of the double pendulum."""

from __future__ import annotations

import numpy as np
import pytest

from opensim_builders import model_with_forces, read_sto
from osim_emb.opensim.static_optimization import opensim_inverse_dynamics
from osim_emb.cli.main import main


def noisy_motion(path):
    """60 Hz, 1.5 s, times written with 8 decimals (not uniform to machine precision: OpenSim resamples them before
    filtering), q = smooth swings plus 0.2° noise: the derivatives depend on how the samples are splined."""
    rng = np.random.default_rng(4)
    t = np.round(np.arange(91) / 60.0, 8)
    q1 = 0.4 * np.sin(2.1 * t) + np.radians(0.2) * rng.normal(size=t.size)
    q2 = -0.6 + 0.8 * t - 0.3 * t**2 + np.radians(0.2) * rng.normal(size=t.size)
    rows = "\n".join(f"{a:.8f}\t{np.degrees(b):.8f}\t{np.degrees(c):.8f}" for a, b, c in zip(t, q1, q2))
    path.write_text(f"Coordinates\nversion=1\nnRows={t.size}\nnColumns=3\ninDegrees=yes\nendheader\n"
                    f"time\tq1\tq2\n{rows}\n")
    return path


@pytest.mark.opensim
@pytest.mark.models
def test_inverse_dynamics_differentiates_as_opensims_tool(osim, models_dir, tmp_path):
    """Unfiltered: the command's moments equal the InverseDynamicsTool's at every frame (the same natural quintic
    spline; a cubic spline would differ by N m on this noise).  With --lowpass 6: OpenSim reports the result at its
    resampled times (up to 5e-7 s off the frames); the package's filtered spline evaluated there equals it."""
    from osim_emb import load_osim
    from osim_emb.core import dynamics as dyn
    from osim_emb.io.motion import coordinates_from_motion, read_motion
    from osim_emb.simulation.motions import _natural_quintic, opensim_lowpass
    path = models_dir / "double_pendulum.osim"
    motion = noisy_motion(tmp_path / "motion.mot")
    cols = ["q1_moment", "q2_moment"]
    ref = opensim_inverse_dynamics(path, motion, tmp_path / "raw")
    assert main(["inverse-dynamics", str(path), str(motion), "-o", str(tmp_path / "raw.sto")]) == 0
    ours = read_sto(tmp_path / "raw.sto")
    d_raw = np.abs(ours[cols].to_numpy() - ref[cols].to_numpy()).max()
    scale = np.abs(ref[cols].to_numpy()).max()
    model = load_osim(str(path))
    table, header = read_motion(motion)
    t, q, _ = coordinates_from_motion(model, table, header)
    from scipy.interpolate import CubicSpline
    cubic = CubicSpline(t, q, axis=0)
    d_cubic = np.abs(dyn.inverse_dynamics(model, q, cubic(t, 1), cubic(t, 2)) - ref[cols].to_numpy()).max()
    filtered = opensim_inverse_dynamics(path, motion, tmp_path / "lowpass", lowpass_hz=6.0)
    te = filtered["time"].to_numpy()
    spline = _natural_quintic(*opensim_lowpass(t, q, 6.0))
    tau = dyn.inverse_dynamics(model, spline(te), spline(te, 1), spline(te, 2))
    d_low = np.abs(tau - filtered[cols].to_numpy()).max()
    assert main(["inverse-dynamics", str(path), str(motion), "-o", str(tmp_path / "low.sto"), "--lowpass", "6"]) == 0
    at_frames = np.abs(read_sto(tmp_path / "low.sto")[cols].to_numpy() - filtered[cols].to_numpy()).max()
    print(f"[agreement] inverse dynamics of a noisy motion vs OpenSim's tool: unfiltered {d_raw:.2e} N m (a cubic "
          f"spline: {d_cubic:.2f}); 6 Hz at OpenSim's times {d_low:.2e} N m (at the frames {at_frames:.2e}); "
          f"moments up to {scale:.1f} N m; OpenSim's times off the frames by {np.abs(te - t).max():.1e} s")
    assert d_raw < 1e-6 * scale and d_low < 1e-6 * scale and d_cubic > 1e-2 * scale
    assert np.abs(te - t).max() > 0  # OpenSim resampled (the tested path)
    # --times opensim: the command itself reports at OpenSim's rows
    assert main(["inverse-dynamics", str(path), str(motion), "-o", str(tmp_path / "rows.sto"), "--lowpass", "6",
                 "--times", "opensim"]) == 0
    rows = read_sto(tmp_path / "rows.sto")
    np.testing.assert_allclose(rows["time"], te, rtol=0, atol=1e-12)
    assert np.abs(rows[cols].to_numpy() - filtered[cols].to_numpy()).max() < 1e-6 * scale


@pytest.mark.opensim
@pytest.mark.models
def test_static_optimization_target_accelerations_are_opensims(osim, models_dir, tmp_path):
    """OpenSim's StaticOptimization takes q̈ from a spline through the speeds of the coordinates' spline: on the
    noisy motion, with reserves only (the pendulum has no muscles: its two CoordinateActuators are the reserves'
    stand-ins), OpenSim's solution balances the package's analysis-state inverse dynamics to 1e-6 of its size, and
    the inverse dynamics of the coordinates' spline (the InverseDynamicsTool's) does not."""
    from osim_emb import load_osim
    from osim_emb.io.motion import coordinates_from_motion, read_motion
    from osim_emb.opensim.static_optimization import opensim_static_optimization
    from osim_emb.simulation.motions import analysis_states, inverse_dynamics_of_motion, motion_derivatives
    path = models_dir / "double_pendulum.osim"
    motion = noisy_motion(tmp_path / "motion.mot")
    ref = opensim_static_optimization(path, motion)
    model = load_osim(str(path))
    t, q, _ = coordinates_from_motion(model, *read_motion(motion))
    forces = ref["force"][["Torq1", "Torq2"]].to_numpy()  # CoordinateActuators on q1, q2 (optimal force 1)
    out = {}
    for name, states in (("analysis", analysis_states(t, q)), ("inverse dynamics tool", motion_derivatives(t, q))):
        tau = inverse_dynamics_of_motion(model, t, *states).drop(columns="time").to_numpy()
        out[name] = np.abs(tau - forces).max() / np.abs(tau).max()
    print(f"[agreement] OpenSim's StaticOptimization balance with the package's q̈: {out}")
    assert out["analysis"] < 1e-6 and out["inverse dynamics tool"] > 1e-3


@pytest.mark.opensim
@pytest.mark.models
def test_coupled_coordinates_forces_are_projected_onto_the_generalized_coordinates(osim, models_dir, tmp_path,
                                                                                   capsys):
    """leg6dof9musc (its patella's coordinate knee_angle_pat_r coupled to the knee): OpenSim's InverseDynamicsTool
    reports every mobility's force with the constraints ignored, the coupled coordinate's included; the package's
    generalized forces on the independent coordinates equal OpenSim's plus the coupled ones' through the
    coupling's gradient, τ_q = τ_q,OpenSim + Σ_c ∇c(q) τ_c,OpenSim (virtual work)."""
    from osim_emb import load_osim
    from osim_emb.core.kinematics import dependent_coordinate_columns
    from osim_emb.io.motion import write_motion
    import pandas as pd
    path = models_dir / "leg6dof9musc.osim"
    model = load_osim(str(path))
    t = np.linspace(0.0, 0.6, 37)
    coef = np.array([[0.1, -0.2, 0.3], [0.0, 0.4, 0.2], [0.95, 0.0, -0.1], [0.3, 0.8, -1.0], [-0.6, -1.0, 1.5],
                     [0.1, 0.5, -0.8]])  # (n_q, 3): q = a + b t + c t² (the splines' q̈ exact)
    q = coef[:, 0] + np.outer(t, coef[:, 1]) + np.outer(t * t, coef[:, 2])
    qd = coef[:, 1] + 2 * np.outer(t, coef[:, 2])
    dependent = dependent_coordinate_columns(model, q, qd)
    table = pd.DataFrame({"time": t, **{n: q[:, k] for k, n in enumerate(model.coordinate_names)},
                          "knee_angle_pat_r": dependent["knee_angle_pat_r"]})
    motion = tmp_path / "motion.mot"
    write_motion(motion, table)
    ref = opensim_inverse_dynamics(path, motion, tmp_path / "opensim")
    assert main(["inverse-dynamics", str(path), str(motion), "-o", str(tmp_path / "ours.sto")]) == 0
    assert "knee_angle_pat_r is coupled" in capsys.readouterr().err  # the command says how it relates to OpenSim's
    ours = read_sto(tmp_path / "ours.sto")
    names = [f"{c.name}_{'moment' if c.motion_type == 'rotational' else 'force'}" for c in model.coordinates]
    coupling = model.dependent_coordinate("knee_angle_pat_r").function.evaluate(q, order=1).gradient  # (T, n_q)
    patella = next(c for c in ref.columns if c.startswith("knee_angle_pat_r_"))  # _force: it moves the patella
    projected = ref[names].to_numpy() + coupling * ref[[patella]].to_numpy()
    d = np.abs(ours[names].to_numpy() - projected).max()
    raw = np.abs(ours[names].to_numpy() - ref[names].to_numpy()).max()
    print(f"[agreement] leg6dof9musc, OpenSim's per-mobility forces projected through the patella coupling: {d:.2e} "
          f"(unprojected {raw:.2e}) N m or N")
    assert d < 1e-7 and raw > 1e-3


@pytest.mark.models
def test_differentiation_and_setup_refusals(models_dir, tmp_path, capsys):
    """--smoothing with --lowpass, a non-positive cutoff, a motion too short to filter, a setup file of another tool
    and a setup's non-numeric cutoff: each refused by name (exit 2, nothing written)."""
    path = models_dir / "double_pendulum.osim"
    motion = noisy_motion(tmp_path / "motion.mot")
    short = tmp_path / "short.mot"
    short.write_text("s\nversion=1\nnRows=3\nnColumns=3\ninDegrees=no\nendheader\ntime\tq1\tq2\n"
                     "0\t0.1\t0.2\n0.01\t0.11\t0.21\n0.02\t0.12\t0.22\n")
    other = tmp_path / "ik_setup.xml"
    other.write_text("<OpenSimDocument><InverseKinematicsTool/></OpenSimDocument>")
    bad_cutoff = tmp_path / "id_setup.xml"
    bad_cutoff.write_text("<OpenSimDocument><InverseDynamicsTool><model_file>m.osim</model_file>"
                          "<lowpass_cutoff_frequency_for_coordinates>six</lowpass_cutoff_frequency_for_coordinates>"
                          "</InverseDynamicsTool></OpenSimDocument>")
    out = tmp_path / "tau.sto"
    cases = [([str(path), str(motion), "--smoothing", "1e-6", "--lowpass", "6"], "alternatives"),
             ([str(path), str(motion), "--lowpass", "0"], "--lowpass"),
             ([str(path), str(short), "--lowpass", "6"], "at least 4 samples"),
             (["--setup", str(other)], "no <InverseDynamicsTool> element"),
             (["--setup", str(bad_cutoff)], "must be a number, not 'six'")]
    for args, message in cases:
        assert main(["inverse-dynamics", *args, "-o", str(out)]) == 2, args
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, (args, err)
        assert not out.exists()


@pytest.mark.opensim
@pytest.mark.models
def test_coordinate_limit_forces_in_inverse_dynamics_as_opensims_tool(osim, models_dir, tmp_path, capsys):
    """arm26 with a CoordinateLimitForce on the elbow, the motion through its limit: OpenSim's InverseDynamicsTool
    applies every force it does not exclude, the limit among them, and so does `inverse-dynamics`; excluded by name
    (`--exclude-forces`, a setup's forces_to_exclude) or by OpenSim's keyword All it is left out on both sides; a
    name the model does not have is refused (OpenSim only warns, and the force would act)."""
    path = model_with_forces(osim, models_dir / "arm26.osim",
                             {"elbow_limit": osim.CoordinateLimitForce("r_elbow_flex", 60.0, 3.0, 10.0, 2.0, 0.05, 5.0)},
                             tmp_path / "arm26_limit.osim")
    t = np.linspace(0.0, 0.5, 26)
    rows = "\n".join(f"{ti:.6f}\t{0.3 + 0.2 * ti:.12f}\t{0.5 + 1.5 * ti + 0.8 * ti * ti:.12f}" for ti in t)
    motion = tmp_path / "through_limit.mot"
    motion.write_text(f"m\nversion=1\nnRows=26\nnColumns=3\ninDegrees=no\nendheader\n"
                      f"time\tr_shoulder_elev\tr_elbow_flex\n{rows}\n")  # the elbow from 29 to 72 degrees
    cols = ["r_shoulder_elev_moment", "r_elbow_flex_moment"]
    out = {}
    for case, excluded in enumerate(((), ("elbow_limit",), ("all",))):  # (OpenSim's keywords in any case)
        ref = opensim_inverse_dynamics(path, motion, tmp_path / f"opensim{case}", excluded=("Muscles", *excluded))
        ours_path = tmp_path / f"ours{case}.sto"
        args = ["inverse-dynamics", str(path), str(motion), "-o", str(ours_path)]
        assert main(args + (["--exclude-forces", ",".join(excluded)] if excluded else [])) == 0
        ours = read_sto(ours_path)
        out[excluded] = (np.abs(ours[cols].to_numpy() - ref[cols].to_numpy()).max(), ref)
    effect = np.abs(out[()][1][cols].to_numpy() - out[("elbow_limit",)][1][cols].to_numpy()).max()
    print(f"[agreement] inverse dynamics with a CoordinateLimitForce vs OpenSim's tool: {out[()][0]:.2e} N m; "
          f"excluded {out[('elbow_limit',)][0]:.2e} N m (the limit's moment up to {effect:.2f} N m)")
    assert out[()][0] < 1e-7 and out[("elbow_limit",)][0] < 1e-7 and out[("all",)][0] < 1e-7 and effect > 1.0
    assert main(["inverse-dynamics", str(path), str(motion), "-o", str(tmp_path / "refused.sto"),
                 "--exclude-forces", "elbow_limt"]) == 2
    assert "'elbow_limt' (did you mean 'elbow_limit'?) is neither a force of model" in capsys.readouterr().err
    assert not (tmp_path / "refused.sto").exists()
