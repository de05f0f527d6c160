"""Marker trials in C3D (io.markers.read_c3d, read as OpenSim's C3DFileAdapter reads markers): a file written with
ezc3d from known positions reads back with OpenSim's rules (labels less the ANGLES/FORCES/... points, t = f / rate
from 0, negative residuals missing, units to metres); inverse kinematics from it equals the same trial as .trc;
refusals."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from c3d_fixtures import write_c3d_file
from osim_emb.cli.main import main
from osim_emb.io.markers import MarkerFileError, read_c3d, read_markers, write_trc
from osim_emb.io.motion import read_motion

ezc3d = pytest.importorskip("ezc3d")


def write_c3d(path, rate, names, positions_mm, *, angles=(), units="mm"):
    """A C3D file: markers (T, M, 3) in ``units`` (NaN: missing, residual -1) and angle points listed under
    POINT:ANGLES (values 1, 2, 3)."""
    frames = positions_mm.shape[0]
    labels = list(names) + list(angles)
    points = np.ones((4, len(labels), frames))
    points[:3, :len(names)] = np.nan_to_num(np.transpose(positions_mm, (2, 1, 0)))
    points[:3, len(names):] = np.array([1.0, 2.0, 3.0])[:, None, None]
    residuals = np.zeros((1, len(labels), frames))
    residuals[0, :len(names)] = np.where(np.isnan(positions_mm).any(axis=2).T, -1.0, 0.0)
    return write_c3d_file(path, rate=rate, labels=labels, points=points, units=units, residuals=residuals,
                          angles=angles)


def _trial():
    rng = np.random.default_rng(2)
    positions = rng.uniform(-500.0, 1500.0, (6, 3, 3))
    positions[2:4, 1] = np.nan
    return ["a", "b", "c"], positions


def test_a_c3d_trial_reads_as_opensims_adapter_reads_it(tmp_path):
    names, positions = _trial()
    path = write_c3d(tmp_path / "t.c3d", 200.0, names, positions, angles=("LKneeAngles",))
    data = read_markers(path)
    assert data.names == ("a", "b", "c")  # the angle point left out
    np.testing.assert_allclose(data.times, np.arange(6) / 200.0, rtol=0, atol=1e-15)
    assert data.rate_hz == 200.0 and data.units == "mm"
    stored = positions.astype(np.float32).astype(float)  # C3D keeps float32
    np.testing.assert_allclose(data.positions, stored * 1e-3, rtol=0, atol=1e-12, equal_nan=True)
    assert np.isnan(data.positions[2:4, 1]).all() and not np.isnan(data.positions[:2]).any()
    metres = read_c3d(write_c3d(tmp_path / "m.c3d", 100.0, names, positions * 1e-3, units="m"))
    np.testing.assert_allclose(metres.positions, (positions * 1e-3).astype(np.float32), rtol=0, atol=1e-9,
                               equal_nan=True)


@pytest.mark.models
def test_inverse_kinematics_from_c3d_equals_the_same_trial_as_trc(models_dir, tmp_path):
    """leg6dof9musc's markers at a swing (the package's kinematics, float32 as C3D stores them), one marker missing in
    two frames: `osim-emb inverse-kinematics` from the .c3d and from a .trc of the same numbers give the same
    coordinates (the .trc route is checked against OpenSim's InverseKinematicsTool in test_inverse_kinematics)."""
    from osim_emb.io import load_osim
    from osim_emb.simulation.inverse_kinematics import marker_positions, model_markers
    model = load_osim(models_dir / "leg6dof9musc.osim")
    names = [n for n, _, _ in model.extras["markers"]]
    t = np.linspace(0.0, 0.5, 11)
    q = model.default_q + 0.2 * np.sin(2 * np.pi * t)[:, None] * np.linspace(0.5, 1.0, model.n_q)
    positions_mm = (marker_positions(model, q, model_markers(model, names)) * 1e3).astype(np.float32).astype(float)
    positions_mm[3:5, names.index("R.Heel")] = np.nan
    c3d = write_c3d(tmp_path / "swing.c3d", 20.0, names, positions_mm)
    trc = tmp_path / "swing.trc"
    write_trc(trc, t, names, positions_mm * 1e-3, units="mm")
    for source in (c3d, trc):
        assert main(["inverse-kinematics", str(models_dir / "leg6dof9musc.osim"), str(source), "-o",
                     str(tmp_path / f"{source.suffix[1:]}_ik.mot"), "-q"]) == 0
    a, _ = read_motion(tmp_path / "c3d_ik.mot")
    b, _ = read_motion(tmp_path / "trc_ik.mot")
    assert list(a.columns) == list(b.columns)
    np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=0, atol=1e-9)


def test_c3d_refusals(tmp_path, monkeypatch):
    names, positions = _trial()
    with pytest.raises(MarkerFileError, match="POINT:UNITS 'furlong'"):
        read_c3d(write_c3d(tmp_path / "u.c3d", 100.0, names, positions, units="furlong"))
    with pytest.raises(MarkerFileError, match="marker 'a' appears twice"):
        read_c3d(write_c3d(tmp_path / "d.c3d", 100.0, ["a", "b", "a"], positions))
    bad = tmp_path / "bad.c3d"
    bad.write_bytes(b"not a c3d file at all")
    with pytest.raises(MarkerFileError, match="bad.c3d: not a readable C3D file"):
        read_markers(bad)
    with pytest.raises(MarkerFileError, match="no such file"):
        read_markers(tmp_path / "missing.c3d")
    monkeypatch.setitem(sys.modules, "ezc3d", None)  # as without the extra
    with pytest.raises(MarkerFileError, match=r"needs ezc3d: pip install 'osim-emb\[c3d\]'"):
        read_markers(tmp_path / "u.c3d")


def test_a_missing_marker_is_written_as_opensim_reads_it(osim, tmp_path):
    """A marker missing in a frame is NaN in the .trc (OpenSim's reader drops a row's trailing empty fields and
    refused the row when the last marker was missing: the audit's walking2 export); OpenSim and read_trc read the
    same numbers back; the header names the file given."""
    from osim_emb.io.markers import read_trc
    names, t = ["A", "B", "last"], np.linspace(0.0, 0.2, 5)
    positions = np.random.default_rng(3).random((5, 3, 3))
    positions[1:3, 2] = np.nan  # the last marker missing in two frames
    positions[4, 0] = np.nan
    trc = tmp_path / ".x.partial.trc"
    write_trc(trc, t, names, positions, units="mm", file_name="trial_markers.trc")
    assert trc.read_text().splitlines()[0].endswith("\ttrial_markers.trc")
    table = osim.TimeSeriesTableVec3(str(trc))
    assert table.getNumRows() == 5 and list(table.getColumnLabels()) == names
    for i in range(5):
        for k in range(3):
            got = np.array([table.getRowAtIndex(i)[k].get(a) for a in range(3)])
            np.testing.assert_allclose(got, positions[i, k] * 1e3, rtol=0, atol=1e-7, equal_nan=True)
    back = read_trc(trc)
    np.testing.assert_allclose(back.positions, positions, rtol=0, atol=1e-12, equal_nan=True)
