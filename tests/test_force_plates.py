"""Force platforms of C3D trials (io.force_plates) and ``osim-emb c3d-export``.

A C3D file is written with ezc3d from a load chosen in the lab (force, centre of pressure on the plate's surface,
free moment): its analog channels are that wrench at the plate's sensor origin in the plate's axes (C3D's
FORCE_PLATFORM:ORIGIN runs from the sensor origin to the surface's centre), so what the reader must return is known
without the reader.  OpenSim's own tables of real trials are compared in validation/model_corpus/c3d_forces.py."""

from __future__ import annotations

import numpy as np
import pytest

from c3d_fixtures import write_c3d_file
from osim_emb.cli.main import main
from osim_emb.io.external_loads import read_external_loads
from osim_emb.io.force_plates import (at_center_of_pressure, contact_intervals, lowpass_plates, read_c3d_analogs,
                                      read_force_plates, rotation_from_text, rotated_plates)
from osim_emb.io.markers import MarkerFileError, read_trc

ezc3d = pytest.importorskip("ezc3d")

POINT_RATE, ANALOG_RATE, FRAMES = 100.0, 1000.0, 30
#: C3D stores the channels as 32-bit floats (relative spacing 1.2e-7): forces up to 700 N are kept to 4e-5 N, moments
#: about the sensor (N mm) to ~2e-6 N m, hence the centre of pressure where the normal force is >= 20 N to ~1e-8 m
F32_FORCE, F32_MOMENT, F32_POINT = 1e-4, 1e-5, 3e-8
SUB = int(ANALOG_RATE / POINT_RATE)


def _plate_axes(corners):
    """The plate's axes in the lab (columns x, y, z) by C3D's corner convention: corner 1 at +x +y of the plate,
    corners 2-4 in turn; x from corner 2 to 1, y from corner 4 to 1."""
    x = corners[0] - corners[1]
    y = corners[0] - corners[3]
    x, y = x / np.linalg.norm(x), y / np.linalg.norm(y)
    return np.column_stack([x, y, np.cross(x, y)])


#: two plates on the floor of a Z-up lab (mm): an AMTI-like plate with z down, and one turned 90 degrees about the
#: vertical with its corners listed from another corner; sensor origins 40 and 55 mm below the surface
PLATES = [
    (np.array([[600.0, 400.0, 0.0], [600.0, 900.0, 0.0], [1100.0, 900.0, 0.0], [1100.0, 400.0, 0.0]]), 40.0),
    (np.array([[1200.0, 900.0, 0.0], [1700.0, 900.0, 0.0], [1700.0, 400.0, 0.0], [1200.0, 400.0, 0.0]]), 55.0),
]


def _load(k, t):
    """Plate k's load in the lab (SI): force (T, 3), centre of pressure (T, 3) on the surface, free moment about
    the vertical (T,); a stance between 0.05 and 0.25 s, nothing on the plate outside it."""
    corners, _ = PLATES[k]
    centre = corners.mean(axis=0) * 1e-3
    stance = np.clip(np.sin(np.pi * (t - 0.05) / 0.2), 0.0, None) * ((t > 0.05) & (t < 0.25))
    force = np.column_stack([60.0 * np.cos(9 * t) * stance, (-40.0 + 30 * k) * stance, 700.0 * stance])
    cop = centre + np.column_stack([0.08 * np.sin(5 * t + k), 0.15 * (t - 0.15), 0 * t])
    torque = (4.0 + k) * np.sin(7 * t) * stance
    return force, cop, torque


def write_trial(path, *, plates=2, markers=("RHEE", "LTOE"), offset_n=0.0, ripple_n=0.0):
    """The C3D trial of :data:`PLATES` and :func:`_load`, with two markers; returns the analog times.
    ``offset_n``: a constant vertical force (N) added to plate 1's channels, as an unzeroed plate records, with a
    150 Hz ripple of amplitude ``ripple_n`` (N)."""
    t = np.arange(FRAMES * SUB) / ANALOG_RATE
    analogs = np.zeros((1, 6 * plates, len(t)))
    corners_all, origins = np.zeros((3, 4, plates)), np.zeros((3, plates))
    for k in range(plates):
        corners, depth = PLATES[k]
        axes = _plate_axes(corners)
        force, cop, torque = _load(k, t)
        if k == 0 and offset_n:
            force = force + np.array([0.0, 0.0, 1.0]) * (offset_n + ripple_n * np.sin(2 * np.pi * 150 * t))[:, None]
        centre = corners.mean(axis=0) * 1e-3
        sensor = centre + axes @ np.array([0.0, 0.0, depth * 1e-3])  # below the surface: the plate's z points down
        about_centre = np.cross(cop - centre, force) + torque[:, None] * np.array([0.0, 0.0, 1.0])
        about_sensor = about_centre + np.cross(centre - sensor, force)
        analogs[0, 6 * k:6 * k + 3] = (force @ axes).T  # N, plate axes
        analogs[0, 6 * k + 3:6 * k + 6] = (about_sensor @ axes).T * 1e3  # N mm
        corners_all[:, :, k] = corners.T
        origins[:, k] = axes.T @ (centre - sensor) * 1e3  # from the sensor origin to the surface's centre
    frames = np.arange(FRAMES)
    points = np.ones((4, len(markers), FRAMES))
    for m in range(len(markers)):
        points[0, m], points[1, m], points[2, m] = 100.0 + 10 * m, 200.0 + frames, 50.0 + m
    write_c3d_file(path, rate=POINT_RATE, labels=markers, points=points, analog_rate=ANALOG_RATE,
                   analogs=analogs if plates else None, corners=corners_all, origins=origins)
    return t


@pytest.fixture(scope="module")
def trial(tmp_path_factory):
    path = tmp_path_factory.mktemp("c3d") / "walk.c3d"
    return path, write_trial(path)


def test_the_wrench_about_each_surface_centre_as_written(trial):
    path, t = trial
    plates = read_force_plates(path)
    assert plates.location == "origin" and plates.rate_hz == ANALOG_RATE
    np.testing.assert_allclose(plates.time, t, rtol=0, atol=1e-15)
    for k, plate in enumerate(plates.plates):
        force, cop, torque = _load(k, t)
        centre = PLATES[k][0].mean(axis=0) * 1e-3
        np.testing.assert_allclose(plate.force, force, rtol=0, atol=F32_FORCE)
        np.testing.assert_allclose(plate.point, np.tile(centre, (len(t), 1)), rtol=0, atol=1e-9)
        about_centre = np.cross(cop - centre, force) + torque[:, None] * np.array([0.0, 0.0, 1.0])
        np.testing.assert_allclose(plate.torque, about_centre, rtol=0, atol=F32_MOMENT)
        assert abs(abs(plate.normal[2]) - 1.0) < 1e-12


def test_center_of_pressure_and_free_moment(trial):
    """The wrench moved to the surface: the centre of pressure and free moment the file was written from; below
    the threshold nothing (force and moment 0, point at the surface's centre)."""
    path, t = trial
    plates = at_center_of_pressure(read_force_plates(path), threshold_n=20.0)
    for k, plate in enumerate(plates.plates):
        force, cop, torque = _load(k, t)
        on = force[:, 2] >= 20.0
        assert 50 < on.sum() < len(t) - 50
        np.testing.assert_allclose(plate.point[on], cop[on], rtol=0, atol=F32_POINT)
        np.testing.assert_allclose(plate.torque[on], torque[on, None] * np.array([0.0, 0.0, 1.0]), rtol=0,
                                   atol=F32_MOMENT)
        np.testing.assert_allclose(plate.force[on], force[on], rtol=0, atol=F32_FORCE)
        assert not plate.force[~on].any() and not plate.torque[~on].any()
        np.testing.assert_allclose(plate.point[~on], np.tile(plate.centre, ((~on).sum(), 1)), rtol=0, atol=0)
    with pytest.raises(ValueError, match="already at the center of pressure"):
        at_center_of_pressure(plates)


def test_contact_intervals_are_the_stance(trial):
    """The written stance has F_z = 700 sin(pi (t - 0.05) / 0.2) N: at least 20 N from 0.05 + 0.2 asin(20/700) / pi
    to 0.25 minus the same, to the 1 ms sampling."""
    path, _ = trial
    plates = read_force_plates(path)
    edge = 0.2 * np.arcsin(20.0 / 700.0) / np.pi
    for plate in plates.plates:
        (on, off), = contact_intervals(plates, plate, 20.0)
        assert abs(on - (0.05 + edge)) <= 1e-3 and abs(off - (0.25 - edge)) <= 1e-3
    assert contact_intervals(plates, plates.plates[0], 800.0) == []


def test_rotation_turns_a_z_up_lab_into_y_up():
    r = rotation_from_text("x:-90")
    np.testing.assert_allclose(r @ [0.0, 0.0, 1.0], [0.0, 1.0, 0.0], atol=1e-15)  # up is +Y
    np.testing.assert_allclose(r @ [1.0, 0.0, 0.0], [1.0, 0.0, 0.0], atol=1e-15)
    np.testing.assert_allclose(rotation_from_text("x:90,z:90") @ [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], atol=1e-15)
    for bad in ("q:90", "x:", "x:ninety"):
        with pytest.raises(ValueError, match="rotation"):
            rotation_from_text(bad)


def test_rotation_before_or_after_the_center_of_pressure_agrees(trial):
    """The centre of pressure is a property of the wrench, not of the frame: turning then moving equals moving then
    turning."""
    path, _ = trial
    r = rotation_from_text("x:-90,y:30")
    a = at_center_of_pressure(rotated_plates(read_force_plates(path), r), 20.0)
    b = rotated_plates(at_center_of_pressure(read_force_plates(path), 20.0), r)
    for p, q in zip(a.plates, b.plates):
        for x, y in ((p.force, q.force), (p.point, q.point), (p.torque, q.torque)):
            np.testing.assert_allclose(x, y, rtol=0, atol=1e-11)


def test_lowpass_gain_is_the_butterworth_response():
    """A sinusoid through the filter keeps the amplitude of a zero-lag second-order Butterworth run both ways:
    |H|^2 = 1 / (1 + (tan(pi f / fs) / tan(pi fc / fs))^4) (the bilinear transform's frequency warping); no lag."""
    from osim_emb.io.force_plates import ForcePlate, ForcePlates
    fs, fc = 1000.0, 20.0
    t = np.arange(4000) / fs
    for f in (5.0, 20.0, 40.0):
        signal = np.column_stack([np.sin(2 * np.pi * f * t), 0 * t, 300.0 + 0 * t])
        plate = ForcePlate(1, signal, np.zeros_like(signal), signal.copy(), np.zeros(3), np.array([0.0, 0.0, 1.0]),
                           np.zeros((4, 3)))
        out = lowpass_plates(ForcePlates("sine", t, fs, (plate,)), fc).plates[0]
        middle = slice(1000, 3000)
        gain = 1.0 / (1.0 + (np.tan(np.pi * f / fs) / np.tan(np.pi * fc / fs)) ** 4)
        np.testing.assert_allclose(out.force[middle, 0], gain * signal[middle, 0], rtol=0, atol=2e-3)
        np.testing.assert_allclose(out.force[:, 2], 300.0, rtol=0, atol=1e-9)
    with pytest.raises(ValueError, match="half the analog rate"):
        lowpass_plates(ForcePlates("sine", t, fs, (plate,)), 600.0)


def test_c3d_export_writes_files_opensim_reads(trial, tmp_path):
    """The .trc, .mot and ExternalLoads XML of ``c3d-export``: OpenSim's ExternalForces (on a model with the named
    bodies) give the written loads, turned into Y-up ground, at times between samples too; the package's reader
    gives the same."""
    path, t = trial
    out = tmp_path / "out"
    assert main(["c3d-export", str(path), "-o", str(out), "--rotate", "x:-90", "--apply", "1=rod1", "2=rod2"]) == 0
    markers = read_trc(out / "walk_markers.trc")
    np.testing.assert_allclose(markers.positions[3, 0], [0.100, 0.050, -0.203], atol=1e-9)  # (x, z, -y)
    r = rotation_from_text("x:-90")
    loads = read_external_loads(out / "walk_external_loads.xml")
    assert [(f.name, f.body) for f in loads.forces] == [("plate1", "rod1"), ("plate2", "rod2")]
    for k, f in enumerate(loads.forces):
        force, cop, torque = _load(k, t)
        on = force[:, 2] >= 20.0
        np.testing.assert_allclose(f.force[on], force[on] @ r.T, rtol=0, atol=F32_FORCE)
        np.testing.assert_allclose(f.point[on], cop[on] @ r.T, rtol=0, atol=F32_POINT)
        np.testing.assert_allclose(f.torque[on], np.outer(torque[on], r @ [0.0, 0.0, 1.0]), rtol=0, atol=F32_MOMENT)
    osim = pytest.importorskip("opensim")
    import os
    model = osim.Model(os.path.join(os.environ.get("OSIM_EMB_MODELS", "../shared/models"), "double_pendulum.osim"))
    external = osim.ExternalLoads(str(out / "walk_external_loads.xml"), True)
    model.addModelComponent(external)
    model.initSystem()
    times = [0.1, 0.1234, 0.2]
    ours = loads.at(times)
    for k in range(2):
        ef = osim.ExternalForce.safeDownCast(external.get(k))
        for i, time in enumerate(times):
            theirs = [np.array([v.get(j) for j in range(3)]) for v in
                      (ef.getForceAtTime(time), ef.getPointAtTime(time), ef.getTorqueAtTime(time))]
            for mine, their in zip(ours[k][1:], theirs):
                np.testing.assert_allclose(mine[i], their, rtol=1e-10, atol=1e-10)


def test_c3d_export_plot(trial, tmp_path, capsys):
    """--plot: the forces and centres of pressure in the project's figure style (fs.save checks fonts and panels),
    as PNG and editable SVG; the contact intervals printed."""
    path, _ = trial
    out = tmp_path / "plot"
    assert main(["c3d-export", str(path), "-o", str(out), "--rotate", "x:-90", "--plot"]) == 0
    printed = capsys.readouterr().out
    assert "platform 1: contact 0.05" in printed and "platform 2: contact 0.05" in printed
    assert (out / "walk_grf.png").stat().st_size > 10_000
    svg = (out / "walk_grf.svg").read_text()
    assert "<text" in svg and "y (vertical)" in svg  # text kept as text, the vertical axis named
    assert main(["c3d-export", str(path), "-o", str(tmp_path / "o2"), "--plot", "--forces-at", "origin"]) == 2
    assert "--forces-at cop" in capsys.readouterr().err


def test_c3d_export_refusals_write_nothing(trial, tmp_path, capsys):
    path, _ = trial
    out = tmp_path / "refused"
    for argv, message in ((["--apply", "3=rod1"], "no platform 3"), (["--apply", "1:rod1"], "PLATFORM=BODY"),
                          (["--rotate", "w:90"], "rotation"), (["--lowpass", "900"], "half the analog rate"),
                          (["--threshold", "-1"], "threshold")):
        assert main(["c3d-export", str(path), "-o", str(out), *argv]) == 2
        assert message in capsys.readouterr().err
        assert not out.exists() or not any(out.iterdir())
    assert main(["c3d-export", str(path), "-o", str(out)]) == 0
    assert "no ExternalLoads file" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["walk_grf.mot", "walk_markers.trc"]
    assert main(["c3d-export", str(path), "-o", str(out)]) == 2  # outputs exist: refused without --overwrite
    assert "--overwrite" in capsys.readouterr().err


def test_analog_channels_as_written(trial, tmp_path, capsys):
    """The analog channels (here the platforms' six each) read back as written, in the file's units (N, N mm), at the
    analog rate from 0; ``--analogs`` writes them as TRIAL_analog.sto, which OpenSim reads."""
    path, t = trial
    analogs = read_c3d_analogs(path)
    assert analogs.labels == tuple(f"{c}{k}" for k in (1, 2) for c in ("Fx", "Fy", "Fz", "Mx", "My", "Mz"))
    assert analogs.units == ("N", "N", "N", "Nmm", "Nmm", "Nmm") * 2 and analogs.rate_hz == ANALOG_RATE
    np.testing.assert_allclose(analogs.time, t, rtol=0, atol=1e-15)
    corners, depth = PLATES[0]
    force, _, _ = _load(0, t)
    np.testing.assert_allclose(analogs.values[:, :3], force @ _plate_axes(corners), rtol=0, atol=F32_FORCE)
    assert main(["c3d-export", str(path), "-o", str(tmp_path / "a"), "--analogs"]) == 0
    assert "12 analog channels" in capsys.readouterr().out
    osim = pytest.importorskip("opensim")
    table = osim.TimeSeriesTable(str(tmp_path / "a" / "walk_analog.sto"))
    assert list(table.getColumnLabels()) == list(analogs.labels) and table.getNumRows() == len(t)
    np.testing.assert_allclose([table.getDependentColumn("Fz1")[i] for i in range(0, len(t), 50)],
                               analogs.values[::50, 2], rtol=1e-11, atol=1e-9)


def test_trial_without_force_platforms(tmp_path, capsys):
    path = tmp_path / "static.c3d"
    write_trial(path, plates=0)
    with pytest.raises(MarkerFileError, match="no force platform"):
        read_force_plates(path)
    assert main(["c3d-export", str(path), "-o", str(tmp_path / "out")]) == 0
    assert "2 markers" in capsys.readouterr().out
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["static_markers.trc"]
    assert main(["c3d-export", str(path), "-o", str(tmp_path / "other"), "--apply", "1=rod1"]) == 2
    assert "no force platform" in capsys.readouterr().err
    with pytest.raises(MarkerFileError, match="no analog channels"):
        read_c3d_analogs(path)


def test_a_platform_that_never_unloads_is_warned_about(tmp_path, caplog):
    """An unzeroed plate (a 35 N offset on plate 1) stays above the 20 N threshold all trial: its centre of
    pressure is computed from the offset while nobody stands on it. The command names the platform, its least and
    largest normal force; the zeroed plate 2 is not named."""
    path = tmp_path / "offset.c3d"
    write_trial(path, offset_n=35.0)
    with caplog.at_level("WARNING"):
        assert main(["c3d-export", str(path), "-o", str(tmp_path / "out")]) == 0
    warned = [r.getMessage() for r in caplog.records if "never falls below" in r.getMessage()]
    assert len(warned) == 1 and "platform 1" in warned[0] and "least 35 N" in warned[0]
    assert "platform 2" not in warned[0]
    caplog.clear()
    with caplog.at_level("WARNING"):  # a zeroed trial: no such warning
        assert main(["c3d-export", str(tmp_path / "offset.c3d"), "-o", str(tmp_path / "out2"), "--threshold",
                     "40"]) == 0
    assert not any("never falls below" in r.getMessage() for r in caplog.records)


def test_a_platform_chattering_about_the_threshold_is_warned_about(tmp_path, caplog):
    """opensim-core's walking trials have plates resting at 14-20 N (unzeroed): with the 20 N threshold, walking2's
    plate 2 makes 956 'contacts', 952 shorter than 10 ms, and its centre of pressure jumps between them. A plate
    at 19 N with a 3 N ripple: the command names it with its resting level; a higher threshold is quiet."""
    path = tmp_path / "ripple.c3d"
    write_trial(path, offset_n=19.0, ripple_n=3.0)
    with caplog.at_level("WARNING"):
        assert main(["c3d-export", str(path), "-o", str(tmp_path / "out")]) == 0
    warned = [r.getMessage() for r in caplog.records if "shorter than 10 ms" in r.getMessage()]
    assert len(warned) == 1 and "platform 1" in warned[0] and "resting level about 1" in warned[0]
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert main(["c3d-export", str(path), "-o", str(tmp_path / "out2"), "--threshold", "40"]) == 0
    assert not any("shorter than 10 ms" in r.getMessage() for r in caplog.records)
