"""Inverse kinematics from marker trials (.trc), against OpenSim 4.6: marker data made by OpenSim's kinematics are
recovered exactly, and noisy data with weights, missing markers, a clamped knee and coordinate tasks give OpenSim's
InverseKinematicsTool solution; the .trc reader against OpenSim's; the command's setup files, outputs and
refusals."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from osim_emb.cli.main import main
from osim_emb.io import load_osim
from osim_emb.io.markers import MarkerFileError, read_trc
from osim_emb.io.markers import write_trc as io_write_trc
from osim_emb.io.motion import coordinates_from_motion, read_motion
from osim_emb.simulation.inverse_kinematics import (CoordinateReference, InverseKinematicsError, inverse_kinematics,
                                                    marker_positions, model_markers)

LEG = "leg6dof9musc.osim"
T = np.linspace(0.0, 1.0, 31)
COORDS = ["pelvis_tilt", "pelvis_tx", "pelvis_ty", "hip_flexion_r", "knee_angle_r", "ankle_angle_r"]


def leg_motion(knee_peak: float = -0.25) -> np.ndarray:
    """A swing of leg6dof9musc (T, 6): the knee reaches ``knee_peak`` (its clamp is 0.1745 rad)."""
    w = 2 * np.pi * T
    knee = -0.9 + (knee_peak + 0.9) * (0.5 - 0.5 * np.cos(w))
    return np.column_stack([0.05 * np.sin(w), 0.4 * T, 0.95 + 0.02 * np.sin(2 * w), 0.6 * np.sin(w), knee,
                            0.2 * np.sin(w + 0.5)])


def opensim_marker_positions(osim, model_path, q):
    """Every marker of the model in ground at configurations q (T, 6), by OpenSim's kinematics (the coupled
    patella through the constraint), and the coordinates OpenSim holds after enforcing it (its projection moves
    them by ~1e-10)."""
    model = osim.Model(str(model_path))
    state = model.initSystem()
    markers = model.getMarkerSet()
    names = [markers.get(i).getName() for i in range(markers.getSize())]
    out = np.empty((len(q), len(names), 3))
    held = np.empty_like(q)
    for i, row in enumerate(q):
        for k, (name, value) in enumerate(zip(COORDS, row)):
            model.getCoordinateSet().get(name).setValue(state, float(value), k == len(COORDS) - 1)
        model.realizePosition(state)
        held[i] = [model.getCoordinateSet().get(name).getValue(state) for name in COORDS]
        for j in range(len(names)):
            p = markers.get(j).getLocationInGround(state)
            out[i, j] = [p.get(0), p.get(1), p.get(2)]
    return names, out, held


def write_trc(path, times, names, positions_m, units: str = "mm"):
    io_write_trc(path, times, names, positions_m, units)
    return path


def write_setup(path, model, trc, *, marker_tasks, coordinate_tasks=(), coordinate_file=None, time_range=None,
                name="trial", output="trial_ik.mot", results="results", accuracy=1e-5):
    tasks = "".join(f"<IKMarkerTask name=\"{n}\"><apply>{'true' if w is not None else 'false'}</apply>"
                    f"<weight>{w if w is not None else 1}</weight></IKMarkerTask>" for n, w in marker_tasks.items())
    tasks += "".join(f"<IKCoordinateTask name=\"{n}\"><apply>true</apply><weight>{w}</weight><value_type>{k}"
                     f"</value_type><value>{v}</value></IKCoordinateTask>" for n, w, k, v in coordinate_tasks)
    span = f"<time_range>{time_range[0]} {time_range[1]}</time_range>" if time_range else ""
    path.write_text(
        f"<?xml version=\"1.0\" encoding=\"UTF-8\" ?><OpenSimDocument Version=\"40000\"><InverseKinematicsTool "
        f"name=\"{name}\"><results_directory>{results}</results_directory><model_file>{model}</model_file>"
        f"<constraint_weight>Inf</constraint_weight><accuracy>{accuracy}</accuracy><IKTaskSet><objects>{tasks}"
        f"</objects></IKTaskSet><marker_file>{trc}</marker_file><coordinate_file>{coordinate_file or ''}"
        f"</coordinate_file>{span}<report_errors>true</report_errors><output_motion_file>{output}"
        "</output_motion_file></InverseKinematicsTool></OpenSimDocument>")
    return path


def package_q(model, table):
    """The independent coordinates (rad, m) of a .mot table written in degrees."""
    _, q, _ = coordinates_from_motion(model, table, {"inDegrees": "yes"}, outside="warn")
    return q


@pytest.mark.opensim
@pytest.mark.models
def test_recovers_the_motion_that_made_the_markers(models_dir, osim, tmp_path):
    """Markers placed by OpenSim's kinematics along a known motion (mm, 0.1 µm resolution): every frame's
    coordinates come back, and the package's markers at the solution are OpenSim's."""
    q_true = leg_motion()
    names, positions, held = opensim_marker_positions(osim, models_dir / LEG, q_true)
    trc = write_trc(tmp_path / "leg.trc", T, names, positions)
    model = load_osim(models_dir / LEG)
    result = inverse_kinematics(model, read_trc(trc), progress=False)
    err = np.abs(result.q - q_true).max()
    print(f"\nrecovered motion: max |q - q_true| = {err:.2e}; marker RMS max "
          f"{result.marker_errors().marker_error_RMS.max():.2e} m")
    assert err < 1e-6
    assert result.marker_errors().marker_error_max.max() < 1e-6
    mk = model_markers(model, names)
    assert np.abs(marker_positions(model, held, mk) - positions).max() < 1e-12


KNEE_MAX = -0.2  # the clamped knee's upper limit in the tests' copy of the model (the file's: 0.1745)


def clamped_leg(models_dir, tmp_path):
    """leg6dof9musc with the knee clamped at KNEE_MAX rad."""
    text = (models_dir / LEG).read_text()
    old = "<range>-2.0943950999999998 0.17453293</range>"
    assert text.count(old) == 1
    path = tmp_path / "leg_clamped.osim"
    path.write_text(text.replace(old, f"<range>-2.0943950999999998 {KNEE_MAX}</range>"))
    return path


def noisy_trial(osim, models_dir, tmp_path, units="mm"):
    """Noisy markers (2 mm, seeded) of a swing whose knee passes KNEE_MAX, R.Heel missing in five frames."""
    q_true = leg_motion(knee_peak=0.0)
    names, positions, _ = opensim_marker_positions(osim, models_dir / LEG, q_true)
    positions = positions + np.random.default_rng(7).normal(0.0, 0.002, positions.shape)
    positions[10:15, names.index("R.Heel")] = np.nan
    return names, write_trc(tmp_path / "leg.trc", T, names, positions, units)


WEIGHTS = {"R.ASIS": 5.0, "L.ASIS": 5.0, "V.Sacral": 2.0, "R.Thigh.Upper": 1.0, "R.Thigh.Front": 1.0,
           "R.Thigh.Rear": 0.5, "R.Shank.Upper": 1.0, "R.Shank.Front": 2.0, "R.Shank.Rear": 1.0, "R.Heel": 3.0,
           "R.Midfoot.Lat": 1.0, "R.Toe.Tip": 1.0}


@pytest.mark.opensim
@pytest.mark.models
def test_equals_opensim_inverse_kinematics_tool(models_dir, osim, tmp_path):
    """Weighted noisy markers, a missing marker, the knee at its clamp, coordinate tasks of every value type (one
    on the coupled patella coordinate), a time range: OpenSim's InverseKinematicsTool on the same setup file at
    accuracies 1e-8 and 1e-9 approaches the command's solution as its accuracy tightens."""
    from osim_emb.opensim.inverse_kinematics import opensim_inverse_kinematics
    names, trc = noisy_trial(osim, models_dir, tmp_path)
    leg = clamped_leg(models_dir, tmp_path)
    model = load_osim(leg)
    hint = tmp_path / "hint.mot"  # a coordinate file for the from_file task (degrees)
    hint.write_text("hint\nversion=1\nnRows=31\nnColumns=2\ninDegrees=yes\nendheader\ntime\tankle_angle_r\n"
                    + "".join(f"{t:.6f}\t{10 * np.sin(3 * t):.10f}\n" for t in T))
    tasks = [("pelvis_tilt", 1e-3, "default_value", 0.0), ("ankle_angle_r", 1e-3, "from_file", 0.0),
             ("hip_flexion_r", 1e-4, "manual_value", 0.3), ("knee_angle_pat_r", 1e-4, "manual_value", -0.5)]
    setup = write_setup(tmp_path / "setup.xml", leg, trc, marker_tasks=WEIGHTS | {"L.ASIS": None},
                        coordinate_tasks=tasks, coordinate_file=hint, time_range=(0.1, 0.9))
    assert main(["inverse-kinematics", "--setup", str(setup), "--marker-locations", "--plot", "-q"]) == 0
    assert (tmp_path / "trial_ik.png").stat().st_size > 0  # the coordinates' small multiples
    mine, _ = read_motion(tmp_path / "trial_ik.mot")
    errors, _ = read_motion(tmp_path / "results" / "trial_ik_marker_errors.sto")
    locations, _ = read_motion(tmp_path / "results" / "trial_ik_model_marker_locations.sto")
    gaps = {}
    for accuracy in (1e-8, 1e-9):  # OpenSim's LBFGS stops at its accuracy (1e-10 fails at the clamp)
        reference = opensim_inverse_kinematics(setup=setup, accuracy=accuracy, out_dir=tmp_path / "opensim")
        assert np.allclose(mine["time"], reference["coordinates"]["time"], atol=1e-9)
        dq = np.abs(package_q(model, mine) - package_q(model, reference["coordinates"])).max()
        de = np.abs(errors["marker_error_RMS"].to_numpy() - reference["errors"]["marker_error_RMS"].to_numpy()).max()
        dl = np.abs(locations.drop(columns="time").to_numpy()
                    - reference["locations"][list(locations.columns[1:])].to_numpy()).max()
        assert list(locations.columns) == list(reference["locations"].columns)  # OpenSim's labels and order
        gaps[accuracy] = dq, de, dl
    knee = package_q(model, mine)[:, COORDS.index("knee_angle_r")]
    print(f"\nagainst OpenSim's IK tool (25 frames), accuracy 1e-8: max |Δq| {gaps[1e-8][0]:.2e} rad or m, "
          f"max |ΔRMS| {gaps[1e-8][1]:.2e} m; 1e-9: {gaps[1e-9][0]:.2e}, {gaps[1e-9][1]:.2e}, model markers "
          f"{gaps[1e-9][2]:.2e} m; knee at its clamp in "
          f"{np.sum(knee >= KNEE_MAX - 1e-9)} frames")
    assert gaps[1e-9][0] < 2e-6 and gaps[1e-9][1] < 1e-7 and gaps[1e-9][2] < 1e-6
    assert gaps[1e-9][0] < gaps[1e-8][0] / 5  # OpenSim converges onto the package's solution
    assert np.sum(knee >= KNEE_MAX - 1e-9) >= 3 and knee.max() <= KNEE_MAX + 1e-12
    assert abs(mine["knee_angle_pat_r"].to_numpy() - reference["coordinates"]["knee_angle_pat_r"].to_numpy()).max() \
        < 2e-4  # the coupled coordinate, written unconverted by both (motion type coupled)


@pytest.mark.opensim
@pytest.mark.models
def test_objective_not_above_opensims(models_dir, osim, tmp_path):
    """At OpenSim's default accuracy (1e-5) its solution stops short: the package's weighted objective is lower
    or equal at every frame (OpenSim's coordinates scored by the package's objective, an independent reading of
    Simbody's Markers and QValue goals), and the two solutions differ by OpenSim's tolerance only."""
    from osim_emb.opensim.inverse_kinematics import opensim_inverse_kinematics
    names, trc = noisy_trial(osim, models_dir, tmp_path, units="m")
    leg = clamped_leg(models_dir, tmp_path)
    model = load_osim(leg)
    reference = opensim_inverse_kinematics(leg, trc, marker_weights=WEIGHTS)
    data = read_trc(trc)
    mine = inverse_kinematics(model, data, marker_weights=WEIGHTS, progress=False)
    theirs = package_q(model, reference["coordinates"])
    worse = []
    for i, q in enumerate(theirs):  # OpenSim's point scored with the package's J
        scored = inverse_kinematics(model, data, marker_weights=WEIGHTS, frames=[i], q0=q, progress=False,
                                    max_evaluations=1)
        worse.append(scored.objective[0] - mine.objective[i])
    worse = np.array(worse)
    print(f"\nOpenSim's objective above the package's by {worse.min():.2e} to {worse.max():.2e}; "
          f"max |Δq| {np.abs(theirs - mine.q).max():.2e}")
    assert worse.min() > -1e-12 * mine.objective.max()
    assert np.abs(theirs - mine.q).max() < 2e-2  # OpenSim at 1e-5 stops up to ~0.4 deg short (measured 6.2e-3)


def test_trc_reader_units_missing_and_errors(tmp_path):
    names = ["A", "B"]
    pos = np.arange(12, dtype=float).reshape(2, 2, 3) / 10
    pos[1, 0] = np.nan
    data = read_trc(write_trc(tmp_path / "a.trc", [0.0, 0.1], names, pos, units="cm"))
    assert data.names == ("A", "B") and data.units == "cm"
    assert np.allclose(data.positions[0], pos[0]) and np.isnan(data.positions[1, 0]).all()
    bad = tmp_path / "bad.trc"
    text = (tmp_path / "a.trc").read_text()
    bad.write_text(text.replace("\tcm\t", "\tfurlongs\t"))
    with pytest.raises(MarkerFileError, match=r"bad.trc, line 3: Units 'furlongs'"):
        read_trc(bad)
    lines = text.splitlines()
    bad.write_text("\n".join(lines[:6] + ["1\tzero\t1\t2\t3", lines[7]]) + "\n")  # as many rows as NumFrames
    with pytest.raises(MarkerFileError, match=r"line 7: a data row"):
        read_trc(bad)
    bad.write_text("\n".join(lines[:6] + [lines[7], lines[6]]) + "\n")
    with pytest.raises(MarkerFileError, match="times must increase"):
        read_trc(bad)
    bad.write_text("hello\n")
    with pytest.raises(MarkerFileError, match="not a .trc file"):
        read_trc(bad)


@pytest.mark.opensim
def test_trc_reader_equals_opensims(osim, tmp_path):
    """OpenSim's TRCFileAdapter reads the same numbers (mm, a missing marker)."""
    pos = np.random.default_rng(1).normal(size=(4, 3, 3))
    pos[2, 1] = np.nan
    path = write_trc(tmp_path / "m.trc", [0.0, 0.01, 0.02, 0.03], ["a", "b", "c"], pos)
    table = osim.TimeSeriesTableVec3(str(path))
    mine = read_trc(path)
    theirs = np.array([[[table.getRowAtIndex(i)[j].get(k) for k in range(3)] for j in range(3)] for i in range(4)])
    assert list(table.getColumnLabels()) == list(mine.names)
    assert np.allclose(mine.positions * 1e3, theirs, equal_nan=True, rtol=0, atol=1e-9)
    # names two tabs apart after an empty field, as in opensim-core's own std_walking2_markers.trc: OpenSim reads the
    # names whatever the tabs between them, and so does the package
    lines = path.read_text().splitlines()
    lines[3] = "Frame#\tTime\t\ta\t\tb\t\tc"
    odd = tmp_path / "odd.trc"
    odd.write_text("\n".join(lines) + "\n")
    assert list(osim.TimeSeriesTableVec3(str(odd)).getColumnLabels()) == list(read_trc(odd).names) == ["a", "b", "c"]
    assert np.allclose(read_trc(odd).positions, mine.positions, equal_nan=True, rtol=0, atol=0)


@pytest.mark.models
def test_refusals_and_what_is_left_out(models_dir, tmp_path, caplog):
    model = load_osim(models_dir / LEG)
    pos = marker_positions(model, np.tile(model.default_q, (3, 1)), model_markers(model))
    names = [n for n, _, _ in model.extras["markers"]]
    trc = write_trc(tmp_path / "s.trc", [0.0, 0.1, 0.2], names, pos)
    data = read_trc(trc)
    with pytest.raises(InverseKinematicsError, match="no marker .* both in model"):
        inverse_kinematics(model, data, marker_weights={"nowhere": 1.0}, progress=False)
    with pytest.raises(InverseKinematicsError, match="coordinate task 'elbow'.*no such coordinate"):
        inverse_kinematics(model, data, coordinate_references=[CoordinateReference("elbow", 1.0, 0.0)],
                           progress=False)
    with pytest.raises(InverseKinematicsError, match="weight"):
        inverse_kinematics(model, data, marker_weights={"R.ASIS": -1.0}, progress=False)
    with caplog.at_level(logging.WARNING, logger="osim_emb"):  # pelvis markers only: the leg is free
        inverse_kinematics(model, data, marker_weights={"R.ASIS": 1, "L.ASIS": 1, "V.Sacral": 1}, progress=False)
    assert "'hip_flexion_r' is determined by no tracked marker" in caplog.text
    out = tmp_path / "out.mot"
    out.write_text("keep")
    assert main(["inverse-kinematics", str(models_dir / LEG), str(trc), "-o", str(out), "-q"]) != 0
    assert out.read_text() == "keep"  # an existing output is not replaced without --overwrite
    assert main(["inverse-kinematics", str(models_dir / LEG), str(trc), "-o", str(tmp_path / "w.mot"),
                 "--weight", "R.ASIS", "-q"]) != 0
    assert main(["inverse-kinematics", str(models_dir / LEG), str(trc), "-o", str(tmp_path / "w.mot"),
                 "--time-range", "5", "6", "-q"]) != 0
    assert not (tmp_path / "w.mot").exists() and not (tmp_path / "w_ik_marker_errors.sto").exists()
    assert main(["inverse-kinematics", str(models_dir / LEG), str(trc), "-o", str(tmp_path / "w.mot"),
                 "--marker-locations", "--marker-distances", "-q"]) == 0
    locations, _ = read_motion(tmp_path / "w_ik_model_marker_locations.sto")
    assert np.allclose(locations[["R.Heel_tx", "R.Heel_ty", "R.Heel_tz"]].to_numpy(),
                       pos[:, names.index("R.Heel")], atol=1e-8)


@pytest.mark.opensim
@pytest.mark.models
def test_scipy_route_agrees(models_dir, osim, tmp_path, monkeypatch):
    """Models with functions the kernels cannot compile take SciPy's least squares on numpy kinematics: the same
    minimum as the compiled Levenberg-Marquardt (a second solver and a second evaluation of r and ∂r/∂q), with a
    coordinate task on the coupled patella coordinate."""
    import osim_emb.simulation.inverse_kinematics as ik
    _, trc = noisy_trial(osim, models_dir, tmp_path)
    model = load_osim(clamped_leg(models_dir, tmp_path))
    data = read_trc(trc)
    tasks = [CoordinateReference("knee_angle_pat_r", 1e-4, -0.5), CoordinateReference("ankle_angle_r", 1e-3, 0.1)]
    compiled = inverse_kinematics(model, data, marker_weights=WEIGHTS, coordinate_references=tasks, progress=False)
    monkeypatch.setattr(ik, "_compiled_problem", lambda *a: None)
    scipy = inverse_kinematics(model, data, marker_weights=WEIGHTS, coordinate_references=tasks, progress=False)
    dq = np.abs(compiled.q - scipy.q).max()
    dj = np.abs(compiled.objective - scipy.objective).max() / compiled.objective.max()
    print(f"\ncompiled Levenberg-Marquardt against SciPy's trf: max |Δq| {dq:.2e}, objective {dj:.2e} relative; "
          f"{compiled.evaluations.mean():.1f} evaluations a frame")
    assert dq < 1e-7 and dj < 1e-12
    assert np.abs(compiled.locations - scipy.locations).max() < 1e-7
    assert np.array_equal(compiled.squared_errors == 0, scipy.squared_errors == 0)


@pytest.mark.models
def test_output_names(models_dir, tmp_path):
    """`-o trial_ik.mot` writes trial_ik_marker_errors.sto beside it (not trial_ik_ik_...)."""
    model = load_osim(models_dir / LEG)
    pos = marker_positions(model, np.tile(model.default_q, (2, 1)), model_markers(model))
    trc = write_trc(tmp_path / "s.trc", [0.0, 0.1], [n for n, _, _ in model.extras["markers"]], pos)
    assert main(["inverse-kinematics", str(models_dir / LEG), str(trc), "-o", str(tmp_path / "trial_ik.mot"),
                 "-q"]) == 0
    assert (tmp_path / "trial_ik_marker_errors.sto").exists()


@pytest.mark.opensim
@pytest.mark.models
def test_marker_distances_sum_to_opensims_error_report(models_dir, osim, tmp_path):
    """`--marker-distances`: per marker and frame |model marker − observation| (NaN where missing), from the
    written model-marker locations and the .trc; their squares sum to the error file's total, and the largest is
    its marker_error_max."""
    _, trc = noisy_trial(osim, models_dir, tmp_path)
    out = tmp_path / "trial_ik.mot"
    assert main(["inverse-kinematics", str(models_dir / LEG), str(trc), "-o", str(out), "--marker-locations",
                 "--marker-distances", "-q"]) == 0
    from osim_emb.opensim.static_optimization import read_storage
    dist = read_storage(tmp_path / "trial_ik_marker_distances.sto")  # NaN where missing: not a motion
    loc, _ = read_motion(tmp_path / "trial_ik_model_marker_locations.sto")
    errors, _ = read_motion(tmp_path / "trial_ik_marker_errors.sto")
    data = read_trc(trc)
    names = [c for c in dist.columns if c != "time"]
    for n in names:
        model_xyz = loc[[f"{n}_tx", f"{n}_ty", f"{n}_tz"]].to_numpy()
        expected = np.linalg.norm(model_xyz - data.positions[:, data.index(n)], axis=1)
        assert np.allclose(dist[n].to_numpy(), expected, rtol=0, atol=1e-9, equal_nan=True), n
    assert dist["R.Heel"].isna().sum() == 5
    d = dist[names].to_numpy()
    assert np.allclose(np.nansum(d ** 2, axis=1), errors["total_squared_error"], rtol=1e-9, atol=1e-15)
    assert np.allclose(np.nanmax(d, axis=1), errors["marker_error_max"], rtol=1e-9)


@pytest.mark.opensim
@pytest.mark.models
def test_task_set_in_its_own_file(models_dir, osim, tmp_path, capsys):
    """A setup whose IKTaskSet is another file (<IKTaskSet file="...">, relative to the setup): read as OpenSim
    reads it — the command equals OpenSim's tool at 1e-9 on the same setup. A from_file coordinate task whose file
    holds degrees under inDegrees=no is refused with the hint."""
    from osim_emb.opensim.inverse_kinematics import opensim_inverse_kinematics
    _, trc = noisy_trial(osim, models_dir, tmp_path)
    leg = clamped_leg(models_dir, tmp_path)
    model = load_osim(leg)
    tasks = "".join(f"<IKMarkerTask name=\"{n}\"><apply>true</apply><weight>{w}</weight></IKMarkerTask>"
                    for n, w in WEIGHTS.items())
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "leg_tasks.xml").write_text(
        f"<OpenSimDocument Version=\"40000\"><IKTaskSet name=\"leg\"><objects>{tasks}</objects></IKTaskSet>"
        "</OpenSimDocument>")
    setup = write_setup(tmp_path / "setup.xml", leg, trc, marker_tasks={})
    setup.write_text(setup.read_text().replace("<IKTaskSet><objects></objects></IKTaskSet>",
                                               "<IKTaskSet file=\"tasks/leg_tasks.xml\" />"))
    reference = opensim_inverse_kinematics(setup=setup, accuracy=1e-9, out_dir=tmp_path / "opensim")
    assert main(["inverse-kinematics", "--setup", str(setup), "-q"]) == 0
    mine, _ = read_motion(tmp_path / "trial_ik.mot")
    dq = np.abs(package_q(model, mine) - package_q(model, reference["coordinates"])).max()
    with capsys.disabled():
        print(f"\n[agreement] IKTaskSet from its own file: {dq:.2e} from OpenSim's tool at 1e-9")
    assert dq < 2e-6
    hint = tmp_path / "hint.mot"
    hint.write_text("hint\nversion=1\nnRows=31\nnColumns=2\ninDegrees=no\nendheader\ntime\tankle_angle_r\n"
                    + "".join(f"{t:.6f}\t{20 + 10 * np.sin(3 * t):.10f}\n" for t in T))
    bad = write_setup(tmp_path / "bad.xml", leg, trc, marker_tasks=WEIGHTS, output="bad_ik.mot", name="bad",
                      coordinate_tasks=[("ankle_angle_r", 1e-3, "from_file", 0.0)], coordinate_file=hint)
    assert main(["inverse-kinematics", "--setup", str(bad), "-q"]) == 2
    assert "look like degrees but the header says inDegrees=no" in capsys.readouterr().err
    assert not (tmp_path / "bad_ik.mot").exists()
