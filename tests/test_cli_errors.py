"""One error path in the CLI (issue 17): every expected failure is one line naming the file and the reason, a
non-zero exit, no traceback (unless --debug), and no output written or replaced."""

import errno
import json
import os
import sys

import numpy as np
import pytest
from hostile_models import run_cli, small_model_file, small_osim

from osim_emb.cli.main import main


@pytest.fixture
def model(tmp_path):
    return small_model_file(tmp_path)


_run = run_cli


def _error_line(err):
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert len(lines) == 1, err
    return lines[0]


def _files(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.parametrize("options,fragment", [
    (["--t-end", "-1"], "--t-end must be a positive number"),
    (["--t-end", "nan"], "--t-end must be a positive number"),
    (["--rtol", "0"], "--rtol must be a positive number"),
    (["--samples", "0"], "--samples must be at least 2"),
    (["--max-steps", "0"], "--max-steps must be at least 1"),
    (["--method", "Euler"], "--method 'Euler' is neither a solve_ivp method nor a compiled one"),
    (["--q0", "nonexistent=3"], "--q0: 'nonexistent' is not a generalized coordinate"),
    (["--q0", "shoulder_q=abc"], "--q0 expects NAME=VALUE"),
    (["--q0", "shoulder_q=170"], "--q0: shoulder_q = 170° (2.967 rad) is outside its range [-85.944°, 85.944°]"),
    (["--qdot0", "shoulder_q=1e12", "--max-steps", "200"], "integration stopped"),
])
def test_simulate_bad_options(model, tmp_path, capsys, options, fragment):
    before = _files(tmp_path)
    code, _, err = _run(capsys, "simulate", model, "-o", tmp_path / "out.sto", *options)
    assert code == 2
    assert fragment in _error_line(err)
    assert _files(tmp_path) == before


def test_simulate_plot_does_not_clobber_and_outputs_are_protected(model, tmp_path, capsys):
    code, _, err = _run(capsys, "simulate", model, "-o", tmp_path / "out.png", "--plot", "--t-end", "0.01")
    assert code == 2 and "out.png: a table is written as OpenSim's .sto or .mot, or as .csv" in _error_line(err)
    out = tmp_path / "out.sto"
    code, _, err = _run(capsys, "simulate", model, "-o", out, "--plot", "--t-end", "0.01", "--samples", "3")
    assert code == 0 and out.exists() and out.with_suffix(".png").exists()
    assert "does not apply the model's 2 PathActuator force(s): m1, m2" in err
    assert "CoordinateLimitForce" not in err  # applied, as OpenSim's Manager applies it
    first = out.read_bytes()
    code, _, err = _run(capsys, "simulate", model, "-o", tmp_path / "bare.sto", "--t-end", "0.01", "--samples", "3",
                        "--no-model-forces")
    assert code == 0 and "CoordinateLimitForce force(s): limit" in err
    code, _, err = _run(capsys, "simulate", model, "-o", out, "--t-end", "0.02")
    assert code == 2 and f"{out}: already exists (use --overwrite" in _error_line(err)
    assert out.read_bytes() == first
    code, _, err = _run(capsys, "simulate", model, "-o", out, "--t-end", "0.02", "--overwrite", "-q")
    assert code == 0 and out.read_bytes() != first and err == ""
    before = model.read_bytes()
    code, _, err = _run(capsys, "simulate", model, "-o", model, "--overwrite")  # not a table's name either
    assert code == 2 and "small.osim: a table is written as OpenSim's .sto or .mot" in _error_line(err)
    assert model.read_bytes() == before
    assert not [p for p in tmp_path.iterdir() if ".partial" in p.name]


def test_simulate_output_folder_and_parent_file(model, tmp_path, capsys):
    (tmp_path / "d").mkdir()
    code, _, err = _run(capsys, "simulate", model, "-o", tmp_path / "d")
    assert code == 2 and "is a folder" in _error_line(err)
    code, _, err = _run(capsys, "simulate", model, "-o", tmp_path / "small.osim" / "x.sto")
    assert code == 2 and "is a file, not a folder" in _error_line(err)


@pytest.mark.skipif(sys.platform == "win32" or os.geteuid() == 0, reason="root ignores folder permissions")
def test_read_only_folder(model, tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        code, _, err = _run(capsys, "simulate", model, "-o", ro / "x.sto")
        assert code == 2 and "not writable" in _error_line(err)
    finally:
        ro.chmod(0o755)


def test_disk_full_and_interrupt_leave_nothing(model, tmp_path, capsys, monkeypatch):
    import osim_emb.io.motion as motion

    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device", str(a[0]))
    monkeypatch.setattr(motion, "write_motion", full)
    before = _files(tmp_path)
    code, _, err = _run(capsys, "simulate", model, "-o", tmp_path / "x.sto", "--t-end", "0.01")
    assert code == 2 and "no space left on the device" in _error_line(err)
    assert _files(tmp_path) == before

    def interrupt(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(motion, "write_motion", interrupt)
    code, _, err = _run(capsys, "simulate", model, "-o", tmp_path / "x.sto", "--t-end", "0.01")
    assert code == 130 and "interrupted; no output was written" in err
    assert _files(tmp_path) == before


def test_debug_shows_traceback(model, tmp_path, capsys):
    code = main(["simulate", str(model), "-o", str(tmp_path / "x.sto"), "--t-end", "-1", "--debug"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" in err and "--t-end must be a positive number" in err


def test_default_within_roundoff_and_q0_degrees_for_coupled(tmp_path, capsys):
    p = tmp_path / "m.osim"
    p.write_text(small_osim(default="-2e-08", range="0 1.5"))
    out = tmp_path / "x.sto"
    code, _, err = _run(capsys, "simulate", p, "-o", out, "--t-end", "0.001", "--samples", "2")
    assert code == 0, err
    # a coupled coordinate (slope 2 on a rotation) is read in degrees too
    p2 = tmp_path / "c.osim"
    p2.write_text(small_osim(elbow_function='<LinearFunction name="function"><coefficients>2 0</coefficients>'
                                            '</LinearFunction>'))
    from osim_emb.io import load_osim
    from osim_emb.io.motion import from_opensim_states, read_motion
    assert load_osim(p2).coordinates[1].motion_type == "coupled"
    code, _, err = _run(capsys, "simulate", p2, "-o", tmp_path / "c.sto", "--t-end", "0.001", "--samples", "2",
                        "--q0", "elbow=20")
    assert code == 0, err
    table = from_opensim_states(read_motion(tmp_path / "c.sto")[0])  # OpenSim's state labels in the file
    assert table["elbow"].iloc[0] == pytest.approx(np.radians(20), rel=1e-12)


def test_inverse_dynamics_degrees_in_radians_file(model, tmp_path, capsys):
    mot = tmp_path / "m.mot"
    mot.write_text("m\ninDegrees=no\nendheader\ntime\tshoulder_q\telbow\n0\t10\t30\n0.1\t20\t60\n0.2\t30\t90\n")
    code, _, err = _run(capsys, "inverse-dynamics", model, mot, "-o", tmp_path / "tau.sto")
    line = _error_line(err)
    assert code == 2 and f"{mot}:5: column 'shoulder_q'" in line and "look like degrees" in line
    assert not (tmp_path / "tau.sto").exists()
    mot.write_text("m\ninDegrees=no\nendheader\ntime\tshoulder_q\telbow\n0\t0.1\t0.3\n0.1\tinf\t0.6\n0.2\t0.3\t0.9\n")
    code, _, err = _run(capsys, "inverse-dynamics", model, mot, "-o", tmp_path / "tau.sto")
    assert code == 2 and f"{mot}:6: column 'shoulder_q': non-finite value 'inf'" in _error_line(err)
    mot.write_text("m\ninDegrees=no\nendheader\ntime\tshoulder_q\telbow\n0\t0.1\t0.3\n0\t0.2\t0.6\n0.2\t0.3\t0.9\n")
    code, _, err = _run(capsys, "inverse-dynamics", model, mot, "-o", tmp_path / "tau.sto")
    assert code == 2 and "column 'time': time must increase strictly" in _error_line(err)


def test_inverse_dynamics_of_a_motion_that_left_a_range(model, tmp_path, capsys):
    """A simulation may leave a range (the package applies no coordinate limits): refused by default with the way
    out named, computed as it is with --outside-range warn (no degrees hint for small radian values)."""
    from osim_emb import load_osim
    from osim_emb.io.motion import read_motion
    from osim_emb.simulation.motions import inverse_dynamics_of_motion
    mot = tmp_path / "m.mot"
    rows = [(0.1 * i, 1.3 + 0.05 * i, -0.02 + 0.01 * i) for i in range(6)]  # shoulder_q reaches 1.55 > 1.5
    mot.write_text("m\ninDegrees=no\nendheader\ntime\tshoulder_q\telbow\n"
                   + "".join(f"{t}\t{a}\t{b}\n" for t, a, b in rows))
    code, _, err = _run(capsys, "inverse-dynamics", model, mot, "-o", tmp_path / "tau.sto")
    line = _error_line(err)
    assert code == 2 and "outside its range" in line and "--outside-range warn" in line and "degrees" not in line
    code, _, err = _run(capsys, "inverse-dynamics", model, mot, "-o", tmp_path / "tau.sto", "--outside-range", "warn")
    assert code == 0 and "used as they are" in err and "column 'shoulder_q'" in err and "column 'elbow'" in err
    table, _ = read_motion(tmp_path / "tau.sto")
    m = load_osim(str(model))
    t = np.array([r[0] for r in rows])
    q = np.zeros((len(rows), m.n_q))  # unclamped
    q[:, m.coordinate_index("shoulder_q")] = [r[1] for r in rows]
    q[:, m.coordinate_index("elbow")] = [r[2] for r in rows]
    from osim_emb.simulation.muscle_driven import coordinate_forces_from_model
    ref = inverse_dynamics_of_motion(m, t, q, None, limit_forces=coordinate_forces_from_model(m)[0])  # as applied
    for name in ref.columns:
        np.testing.assert_allclose(table[name].to_numpy(), ref[name].to_numpy(), rtol=1e-7, atol=1e-9)
    # the same for moment arms along the motion (tables only, no OpenSim)
    opts = ["--references", "none", "--no-plot", "--out"]
    code, _, err = _run(capsys, "moment-arms", model, "--motion", mot, *opts, tmp_path / "ma")
    assert code == 2 and "--outside-range warn" in _error_line(err) and not (tmp_path / "ma").exists()
    code, _, err = _run(capsys, "moment-arms", model, "--motion", mot, *opts, tmp_path / "ma", "--outside-range",
                        "warn")
    assert code == 0 and "used as they are" in err
    import pandas as pd
    from osim_emb.paths.geometry import lengths_and_moment_arms
    frames = pd.read_csv(tmp_path / "ma" / "motion_moment_arms.csv.gz")
    length, _ = lengths_and_moment_arms(m, q, [mu.name for mu in m.muscles], allow_out_of_range=True)
    np.testing.assert_allclose(frames["length_m"].to_numpy(), length.ravel(), rtol=1e-12)


def test_moment_arms_options_checked_before_writing(model, tmp_path, capsys):
    out = tmp_path / "ma"
    for opts, fragment in [(["--step", "-5"], "--step must be a positive number"),
                           (["--step", "0"], "--step must be a positive number"),
                           (["--formats", "png,doc"], "unknown figure format(s) ['doc']"),
                           (["--references", "bogus"], "unknown reference 'bogus'")]:
        code, _, err = _run(capsys, "moment-arms", model, "--sweep", "elbow", "--out", out, *opts)
        assert code == 2 and fragment in _error_line(err)
        assert not out.exists()


def test_run_and_convert_outputs(model, tmp_path, capsys):
    code, _, err = _run(capsys, "run", model, "--out", model)
    assert code == 2 and "is a file; give a folder name" in _error_line(err)
    code, _, err = _run(capsys, "run", model, "--out", tmp_path, "--step", "5")
    assert code == 2 and "contains the input file" in _error_line(err)
    out = tmp_path / "m.emb.json"
    out.write_text("keep")
    code, _, err = _run(capsys, "convert", model, "-o", out)
    assert code == 2 and "already exists" in _error_line(err) and out.read_text() == "keep"
    assert _run(capsys, "convert", model, "-o", out, "--overwrite")[0] == 0
    assert json.loads(out.read_text())["name"] == "small"


def test_traversal_model_name_refused(tmp_path, capsys):
    p = tmp_path / "evil.osim"
    p.write_text(small_osim(model_name="../../x"))
    code, _, err = _run(capsys, "run", p, "--out", tmp_path / "out")
    line = _error_line(err)
    assert code == 2 and str(p) in line and "model name '../../x'" in line
    assert not (tmp_path / "out").exists() and not (tmp_path.parent / "x.osim").exists()


def test_rhythm_bad_input_writes_nothing(model, tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    out = tmp_path / "new" / "deeper" / "new.osim"
    code, _, err = _run(capsys, "rhythm", model, "--rhythm", empty, "-o", out)
    assert code == 2 and f"{empty}: the rhythm file is empty" in _error_line(err)
    assert not (tmp_path / "new").exists()  # folders created for the output are removed again
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": [1')
    code, _, err = _run(capsys, "rhythm", model, "--rhythm", bad, "-o", out)
    assert code == 2 and f"{bad}:1: not valid JSON" in _error_line(err)
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("number,fragment", [(errno.EACCES, "permission denied"), (errno.EROFS, "read-only file system"),
                                             (errno.EISDIR, "Is a directory")])
def test_os_errors_are_one_line(model, tmp_path, capsys, monkeypatch, number, fragment):
    import osim_emb.io.motion as motion

    def fail(path, *a, **k):
        raise OSError(number, os.strerror(number), str(path))
    monkeypatch.setattr(motion, "write_motion", fail)
    code, _, err = _run(capsys, "simulate", model, "-o", tmp_path / "x.sto", "--t-end", "0.01")
    line = _error_line(err)
    assert code == 2 and f"{tmp_path / 'x.sto'}: {fragment}" in line
    assert not (tmp_path / "x.sto").exists()


def test_json_model_wrong_types(tmp_path, capsys):
    p = tmp_path / "m.emb.json"
    p.write_text(json.dumps({"format": "osim-emb-model", "version": 1, "name": "x", "coordinates": []}))
    code, _, err = _run(capsys, "inspect", p)
    assert code == 2 and f"{p}: top level: 'joints': missing" in _error_line(err)
    p.write_text("{not json")
    code, _, err = _run(capsys, "inspect", p)
    assert code == 2 and f"{p}:1: not valid JSON" in _error_line(err)
    code, _, err = _run(capsys, "inspect", tmp_path / "missing.osim")
    assert code == 2 and "missing.osim: no such file" in _error_line(err)
    code, _, err = _run(capsys, "inspect", tmp_path)
    assert code == 2 and "is a folder" in _error_line(err)


def test_verbose_and_quiet_configure_logging(model, tmp_path, capsys, monkeypatch):
    import logging

    import osim_emb.cli.main as cli
    levels = []
    monkeypatch.setattr(cli, "_run_command", lambda args: levels.append(logging.getLogger("osim_emb").level) or 0)
    before = logging.getLogger("osim_emb").level
    assert main(["-v", "inspect", str(model)]) == 0
    assert main(["inspect", str(model), "-q"]) == 0
    assert main(["inspect", str(model)]) == 0
    assert main(["-vv", "inspect", str(model)]) == 0
    assert levels == [logging.INFO, logging.ERROR, logging.WARNING, logging.DEBUG]
    assert logging.getLogger("osim_emb").level == before


def test_new_commands_refuse_to_overwrite_and_check_options_first(tmp_path, capsys):
    """fit-rhythm, fit-paths and simulate-muscles share the CLI's output rules: an existing output is kept
    unless --overwrite, and bad options fail before any work or file."""
    data = tmp_path / "rhythm.csv"
    data.write_text("study,shoulder,plane_of_elevation_deg,elevation_deg,sternoclavicular_r2\n")
    out = tmp_path / "r.json"
    out.write_text("keep")
    assert main(["fit-rhythm", str(data), "-o", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err and out.read_text() == "keep"
    sto = tmp_path / "s.sto"
    assert main(["simulate-muscles", str(tmp_path / "none.osim"), "-o", str(sto), "--t-end", "-1"]) == 2
    assert "--t-end" in capsys.readouterr().err and not sto.exists()
    osim = tmp_path / "m.osim"
    osim.write_text("x")
    sto.write_text("keep")
    assert main(["fit-paths", str(osim), "-o", str(sto)]) == 2
    assert "already exists" in capsys.readouterr().err and sto.read_text() == "keep"


def test_a_closed_pipe_ends_quietly(model, capsys, monkeypatch):
    """`osim-emb inspect M.osim | head`: no error line when the reader goes away."""
    def closed(*_, **__):
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")
    monkeypatch.setattr("osim_emb.report.model_description.describe_model", closed)
    code, out, err = _run(capsys, "inspect", model)
    assert code == 141 and "error" not in err


def test_every_command_that_reads_a_model_takes_lenient(tmp_path, capsys):
    """A model with an element the package does not take (a RollingOnSurfaceConstraint): every command that reads
    a model refuses it naming the element (exit 2, nothing written); with --lenient each one runs and names what it
    left out."""
    text = small_osim().replace("</JointSet>", '</JointSet>\n    <ConstraintSet name="constraintset"><objects>'
                                               '<RollingOnSurfaceConstraint name="roll"/></objects></ConstraintSet>')
    model = tmp_path / "rolling.osim"
    model.write_text(text)
    motion = tmp_path / "motion.sto"
    forces = tmp_path / "forces.sto"  # the path actuators' tensions over the simulated motion's 0.05 s
    forces.write_text("forces\nversion=1\nnRows=2\nnColumns=3\ninDegrees=no\nendheader\ntime\tm1\tm2\n"
                      "0\t10\t20\n0.05\t30\t40\n")
    commands = [
        ["simulate", model, "-o", motion, "--t-end", "0.05", "--samples", "6"],
        ["inverse-dynamics", model, motion, "-o", tmp_path / "id.sto"],
        ["joint-reactions", model, motion, "-o", tmp_path / "jr", "--forces", forces],
        ["body-kinematics", model, motion, "-o", tmp_path / "bk"],
        ["simulate-muscles", model, "-o", tmp_path / "muscles.sto", "--t-end", "0.01"],
        ["moment-arms", model, "--sweep", "elbow", "--step", "30", "--references", "none", "--out",
         tmp_path / "ma", "--formats", "png", "--no-plot"],
        ["plot", model, "--sweep", "elbow", "--step", "30", "--references", "none", "--out", tmp_path / "plots",
         "--formats", "png"],
        ["inspect", model],
        ["convert", model, "-o", tmp_path / "model.json"],
    ]
    for argv in commands:
        before = _files(tmp_path)
        code, _, err = _run(capsys, *argv)
        assert code == 2 and "RollingOnSurfaceConstraint" in _error_line(err), (argv[0], err)
        assert _files(tmp_path) == before, argv[0]
        code, _, err = _run(capsys, *argv, "--lenient")
        assert code == 0, (argv[0], err)
        assert "left out constraint 'roll'" in err, (argv[0], err)


def test_unsupported_element_error_gives_the_command_lines_remedy(models_dir, tmp_path, capsys):
    """A model with a force the importer does not read: the command names it and says --lenient, not the Python
    API's strict=False."""
    text = (models_dir / "arm26.osim").read_text()
    head, sep, tail = text.partition("<objects>\n\t\t\t\t<Thelen2003Muscle")
    assert sep, "arm26's ForceSet layout changed"
    path = tmp_path / "arm26_piston.osim"
    path.write_text(head + "<objects>\n<PistonActuator name=\"piston\"/>\n\t\t\t\t<Thelen2003Muscle" + tail)
    assert main(["inspect", str(path)]) == 2
    err = capsys.readouterr().err
    assert "PistonActuator" in err and "use --lenient to" in err and "strict=False" not in err


def test_a_figure_that_fails_costs_no_results(tmp_path, monkeypatch, caplog):
    """--plot: a figure's error is said and the command ends with 1, its other outputs written (a simulation that
    took minutes is not lost to a layout check); the figure's file is not left behind."""
    from hostile_models import small_osim
    from osim_emb.cli.main import main
    from osim_emb.report import figure_style

    def refuse(*args, **kwargs):
        raise ValueError("text cut off at the figure's edge: ['generalized coordinates (deg; m for tran']")
    monkeypatch.setattr(figure_style, "check_figure", refuse)
    model = tmp_path / "small.osim"
    model.write_text(small_osim())
    out = tmp_path / "swing.sto"
    with caplog.at_level("ERROR"):
        assert main(["simulate", str(model), "-o", str(out), "--t-end", "0.05", "--samples", "5", "--plot",
                     "-q"]) == 1
    assert out.exists() and not out.with_suffix(".png").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.osim", "swing.sto"]  # no temporary file left
    assert f"the plot {out.with_suffix('.png')} was not written (ValueError: text cut off" in caplog.text
