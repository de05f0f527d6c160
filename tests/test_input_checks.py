"""Inputs that used to give a wrong answer or a confusing error are refused with one clear message: --fixed values
outside a range or on a swept coordinate, configurations in degrees or not finite given to the public dynamics
functions and simulate, truncated .trc/.mot files, inverted --time-range, and --q0 in degrees as typed."""

import numpy as np
import pandas as pd
import pytest
from hostile_models import small_osim

import osim_emb as oe
from osim_emb.cli.main import main
from osim_emb.io.markers import MarkerFileError, read_trc, write_trc
from osim_emb.io.motion import MotionFileError, read_motion, write_motion


@pytest.fixture
def model_path(tmp_path):
    p = tmp_path / "small.osim"
    p.write_text(small_osim())
    return p


@pytest.fixture
def model(model_path):
    return oe.load_osim(str(model_path))


def _error(capsys, *argv) -> str:
    """The one error line of a command that must fail with exit status 2."""
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if "error:" in ln]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --fixed (moment-arms, plot)

@pytest.mark.parametrize("command", ["moment-arms", "plot"])
@pytest.mark.parametrize("fixed,message", [
    ("shoulder_q=500", "--fixed: shoulder_q = 500° (8.727 rad) is outside its range [-85.944°, 85.944°]"),
    ("elbow=50", "--fixed: elbow is swept; it cannot also be fixed"),
    ("wrist=5", "--fixed: 'wrist' is not a generalized coordinate of"),
])
def test_fixed_values_outside_a_range_or_swept_are_refused(model_path, tmp_path, capsys, command, fixed, message):
    out = tmp_path / "out"
    line = _error(capsys, command, model_path, "--sweep", "elbow", "--fixed", fixed, "--references", "none",
                  "--out", out)
    assert message in line
    assert not out.exists()


@pytest.mark.parametrize("command", ["moment-arms", "plot"])
@pytest.mark.parametrize("options,message", [
    (["--fixed", "shoulder_q=5"], "--fixed does not apply with a motion"),
    (["--sweep", "elbow", "--fixed", "shoulder_q=5"], "--sweep and --fixed do not apply with a motion"),
])
def test_sweep_options_with_a_motion_are_refused(model_path, tmp_path, capsys, command, options, message):
    """A motion gives every coordinate at every frame: --fixed and --sweep beside it were ignored in silence."""
    mot = tmp_path / "m.mot"
    mot.write_text("m\nversion=1\nnRows=2\nnColumns=2\ninDegrees=yes\nendheader\ntime\telbow\n0\t10\n1\t20\n")
    out = tmp_path / "out"
    line = _error(capsys, command, model_path, "--motion", mot, *options, "--references", "none", "--out", out)
    assert message in line
    assert not out.exists()


def test_make_sweeps_refuses_fixed_values_it_used_to_clamp(model):
    from osim_emb.opensim.moment_arms import make_sweeps
    with pytest.raises(ValueError, match=r"fixed: shoulder_q = 500° \(8\.727 rad\) is outside its range"):
        make_sweeps(model, ["elbow"], 10.0, {"shoulder_q": np.radians(500)})
    with pytest.raises(ValueError, match="fixed: elbow is swept; it cannot also be fixed"):
        make_sweeps(model, ["elbow"], 10.0, {"elbow": 0.5})
    (sweep,) = make_sweeps(model, ["elbow"], 10.0, {"shoulder_q": 1.5 + 1e-7})  # round-off: clamped
    assert np.all(sweep.q[:, model.coordinate_index("shoulder_q")] == 1.5)


# the public dynamics functions and simulate

def _calls(q):
    z = np.zeros(2)
    return {"mass_matrix": lambda m: oe.mass_matrix(m, q), "gravity_forces": lambda m: oe.gravity_forces(m, q),
            "velocity_terms": lambda m: oe.velocity_terms(m, q, z),
            "inverse_dynamics": lambda m: oe.inverse_dynamics(m, q, z, z),
            "forward_dynamics": lambda m: oe.forward_dynamics(m, q, z),
            "simulate": lambda m: oe.simulate(m, 0.01, np.asarray(q, dtype=float), n_output=2)}


@pytest.mark.parametrize("name", list(_calls(None)))
def test_public_dynamics_refuse_degrees_and_non_finite_q(models_dir, name):
    arm = oe.load_osim(str(models_dir / "arm26.osim"))
    with pytest.raises(oe.ConfigurationError, match=r"'r_shoulder_elev' = 30 is outside its range .*the values "
                                                    r"are in range read as degrees"):
        _calls([30.0, 90.0])[name](arm)
    with pytest.raises(oe.ConfigurationError, match="'r_shoulder_elev' is nan .*must be finite"):
        _calls([float("nan"), 1.0])[name](arm)


def test_public_dynamics_take_q_by_name_and_agree_with_arrays(models_dir):
    arm = oe.load_osim(str(models_dir / "arm26.osim"))
    q = np.array([[0.0, 1.0], [0.3, 0.5]])
    by_dict = oe.mass_matrix(arm, {"r_elbow_flex": q[:, 1], "r_shoulder_elev": q[:, 0]})
    np.testing.assert_array_equal(by_dict, oe.mass_matrix(arm, q))
    table = pd.DataFrame({"r_elbow_flex": q[:, 1], "r_shoulder_elev": q[:, 0]})
    np.testing.assert_array_equal(oe.gravity_forces(arm, table), oe.gravity_forces(arm, q))
    qdot = {"r_shoulder_elev": 0.5, "r_elbow_flex": -1.0}
    np.testing.assert_allclose(oe.forward_dynamics(arm, q, qdot), oe.forward_dynamics(arm, q, [0.5, -1.0]))
    with pytest.raises(oe.ConfigurationError, match="qdot: coordinate 'r_elbow_flex' is inf"):
        oe.velocity_terms(arm, q, [0.0, np.inf])
    with pytest.raises(oe.ConfigurationError, match="tau is nan"):
        oe.forward_dynamics(arm, q, q, float("nan"))
    outside = np.array([0.0, 3.0])  # out of range on purpose
    from osim_emb.core import dynamics
    np.testing.assert_array_equal(oe.mass_matrix(arm, outside, allow_out_of_range=True),
                                  dynamics.mass_matrix(arm, outside))
    motion = oe.simulate(arm, 0.01, {"r_elbow_flex": 1.0, "r_shoulder_elev": 0.0}, n_output=2)
    assert motion["r_elbow_flex"].iloc[0] == 1.0
    with pytest.raises(oe.ConfigurationError, match="q0 must be one state"):
        oe.simulate(arm, 0.01, q, n_output=2)


def test_simulate_refuses_defaults_outside_the_ranges_unless_allowed(tmp_path):
    path = tmp_path / "outside.osim"
    path.write_text(small_osim(default="2.5", range="0 2"))  # 2.5 rad beyond [0, 2]: the file's own default
    model = oe.load_osim(str(path))
    with pytest.raises(oe.ConfigurationError, match=r"q0 not given.* = 143\.239° \(2\.5 rad\) is outside its range "
                                                    r"\[0°, 114\.59°\].*allow_out_of_range=True"):
        oe.simulate(model, 0.01, n_output=2)
    motion = oe.simulate(model, 0.01, n_output=2, allow_out_of_range=True)
    assert motion.iloc[0][model.coordinate_names[0]] == 2.5
    start = dict(zip(model.coordinate_names, model.default_q))
    start[model.coordinate_names[0]] = 1.0
    assert oe.simulate(model, 0.01, start, n_output=2).iloc[0][model.coordinate_names[0]] == 1.0


def test_simulate_muscles_checks_q0_as_simulate_does(models_dir):
    arm = oe.load_osim(str(models_dir / "arm26.osim"))
    with pytest.raises(oe.ConfigurationError, match="q0: coordinate 'r_shoulder_elev' = 30 is outside its range.*read as degrees"):
        oe.simulate_muscles(arm, 0.002, {"BIClong": 0.5}, q0=[30.0, 90.0], n_output=2)
    with pytest.raises(oe.ConfigurationError, match="qdot0: coordinate 'r_elbow_flex' is nan"):
        oe.simulate_muscles(arm, 0.002, {"BIClong": 0.5}, qdot0=[0.0, float("nan")], n_output=2)
    by_name = oe.simulate_muscles(arm, 0.002, {"BIClong": 0.5}, q0={"r_elbow_flex": 1.0, "r_shoulder_elev": 0.2},
                                  n_output=2)
    assert by_name[["r_shoulder_elev", "r_elbow_flex"]].iloc[0].tolist() == [0.2, 1.0]


# truncated input files

def _trc(path, frames=51):
    t = np.linspace(0.0, 1.0, frames)
    write_trc(path, t, ["A", "B"], np.random.default_rng(1).random((frames, 2, 3)))
    return path.read_text()


def test_a_trc_with_fewer_rows_than_its_header_says_is_refused(tmp_path):
    text = _trc(tmp_path / "arm.trc")
    lines = text.splitlines(keepends=True)
    short = tmp_path / "short.trc"
    short.write_text("".join(lines[:6 + 14]))  # the header (6 lines) and 14 rows
    with pytest.raises(MarkerFileError, match=r"short\.trc: the header says NumFrames=51, 14 rows read "
                                              r"\(a truncated file\?\)"):
        read_trc(short)
    cut = tmp_path / "cut.trc"
    cut.write_text(text[:1500])  # head -c 1500
    with pytest.raises(MarkerFileError, match=r"cut\.trc: the header says NumFrames=51, \d+ rows read"):
        read_trc(cut)
    assert len(read_trc(tmp_path / "arm.trc").times) == 51


def test_a_trc_that_ends_in_the_middle_of_its_last_row_is_refused(tmp_path):
    text = _trc(tmp_path / "arm.trc", frames=3).replace("\t3\t2\tmm", "\t\t2\tmm")  # no NumFrames to compare
    path = tmp_path / "cut.trc"
    path.write_text(text.rstrip("\n").rsplit("\t", 2)[0])  # the last two values cut off
    with pytest.raises(MarkerFileError, match=r"cut\.trc, line 9: the last row has 4 of the 6 marker values and "
                                              r"the file ends without a line break"):
        read_trc(path)
    whole = tmp_path / "whole.trc"
    whole.write_text(text.rstrip("\n").rsplit("\t", 2)[0] + "\n")  # a last marker missing, the row ended
    assert np.isnan(read_trc(whole).positions[-1, 1, 1:]).all()


def test_a_mot_with_fewer_rows_than_its_header_says_is_refused(tmp_path):
    t = np.linspace(0.0, 1.0, 51)
    write_motion(tmp_path / "arm.mot", pd.DataFrame({"time": t, "q": t}))
    lines = (tmp_path / "arm.mot").read_text().splitlines(keepends=True)
    short = tmp_path / "short.mot"
    short.write_text("".join(lines[:7 + 23]))  # 6 header lines, the labels and 23 rows
    with pytest.raises(MotionFileError, match=r"short\.mot: the header says nRows=51, 23 rows read "
                                              r"\(a truncated file\?\)"):
        read_motion(short)
    cut = tmp_path / "cut.mot"
    cut.write_text("m\nendheader\ntime\tq\tr\n0\t1\t2\n0.1\t1")  # no nRows; the last row cut short
    with pytest.raises(MotionFileError, match=r"cut\.mot:5: row has 2 values, the labels 3 \(a truncated file\?\)"):
        read_motion(cut)


def test_a_truncated_motion_is_refused_by_the_commands(model_path, tmp_path, capsys):
    t = np.linspace(0.0, 1.0, 11)
    write_motion(tmp_path / "m.mot", pd.DataFrame({"time": t, "shoulder_q": 0.1 * t, "elbow": 0.2 * t}))
    lines = (tmp_path / "m.mot").read_text().splitlines(keepends=True)
    (tmp_path / "m.mot").write_text("".join(lines[:-3]))
    line = _error(capsys, "inverse-dynamics", model_path, tmp_path / "m.mot", "-o", tmp_path / "tau.sto")
    assert "m.mot: the header says nRows=11, 8 rows read (a truncated file?)" in line
    assert not (tmp_path / "tau.sto").exists()


# --time-range

@pytest.mark.parametrize("command,arguments", [
    ("inverse-kinematics", ["markers.trc", "-o", "ik.mot"]),
    ("inverse-dynamics", ["motion.mot", "-o", "tau.sto"]),
    ("static-optimization", ["motion.mot", "-o", "so"]),
    ("joint-reactions", ["motion.mot", "-o", "jr"]),
    ("body-kinematics", ["motion.mot", "-o", "bk"]),
    ("scale", ["--static", "static.trc", "-o", "scaled.osim"]),
])
@pytest.mark.parametrize("span", [("0.5", "0.2"), ("0.5", "0.5")])
def test_an_inverted_time_range_is_refused_by_every_command(model_path, tmp_path, capsys, command, arguments, span):
    line = _error(capsys, command, model_path, *[tmp_path / a if "." in a else a for a in arguments],
                  "--time-range", *span)
    if command == "scale" and span[0] == span[1]:  # one frame of a static trial: allowed
        assert "--time-range" not in line
    else:
        assert f"--time-range {span[0]} {span[1]}: T0 must be less than T1" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.osim"]


def test_an_inverted_time_range_of_a_setup_is_refused():
    from argparse import Namespace
    from osim_emb.cli.common import fill_from_setup
    args = Namespace(setup="setup.xml", time_range=None, model=None)
    with pytest.raises(ValueError, match=r"setup\.xml: <time_range> 0\.4 0\.1: T0 must be less than T1"):
        fill_from_setup(args, {}, {}, (0.4, 0.1))


# output names

@pytest.mark.parametrize("command,arguments,name", [
    ("simulate", [], "run.xlsx"),
    ("simulate-muscles", [], "run"),
    ("inverse-dynamics", ["motion.mot"], "tau.txt"),
    ("inverse-kinematics", ["markers.trc"], "ik.parquet"),
])
def test_a_table_output_named_for_another_format_is_refused(model_path, tmp_path, capsys, command, arguments, name):
    line = _error(capsys, command, model_path, *[tmp_path / a for a in arguments], "-o", tmp_path / name)
    assert "a table is written as OpenSim's .sto or .mot, or as .csv; name the file with one of these" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.osim"]


def test_an_input_table_is_never_the_output(model_path, tmp_path, capsys):
    t = np.linspace(0.0, 1.0, 11)
    write_motion(tmp_path / "m.mot", pd.DataFrame({"time": t, "shoulder_q": 0.1 * t, "elbow": 0.2 * t}))
    before = (tmp_path / "m.mot").read_bytes()
    line = _error(capsys, "inverse-dynamics", model_path, tmp_path / "m.mot", "-o", tmp_path / "m.mot", "--overwrite")
    assert "refusing to overwrite the input file" in line
    assert (tmp_path / "m.mot").read_bytes() == before


@pytest.mark.parametrize("command,first", [
    ("static-optimization", "so_StaticOptimization_activation.sto"),
    ("joint-reactions", "so_JointReaction_ReactionLoads.sto"),
    ("body-kinematics", "so_BodyKinematics_pos_global.sto"),
])
def test_an_output_prefix_with_a_file_suffix_is_refused(model_path, tmp_path, capsys, command, first):
    line = _error(capsys, command, model_path, tmp_path / "motion.mot", "-o", tmp_path / "so.csv")
    assert f"this is a prefix, not a file name (the command writes {tmp_path / first}, ...); give -o {tmp_path}/so" \
        in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.osim"]


# --q0 in the units typed

def test_q0_outside_its_range_is_said_in_degrees(model_path, tmp_path, capsys):
    for command in ("simulate", "simulate-muscles"):
        line = _error(capsys, command, model_path, "-o", tmp_path / "x.sto", "--q0", "elbow=500")
        assert "--q0: elbow = 500° (8.727 rad) is outside its range" in line
    assert not (tmp_path / "x.sto").exists()


def test_a_swept_coordinate_may_be_fixed_for_the_sweeps_of_the_others(model):
    from osim_emb.opensim.moment_arms import make_sweeps
    first, second = make_sweeps(model, ["shoulder_q", "elbow"], 10.0, {"elbow": 0.25, "shoulder_q": 0.5})
    assert np.all(first.q[:, model.coordinate_index("elbow")] == 0.25)
    assert np.all(second.q[:, model.coordinate_index("shoulder_q")] == 0.5)


def test_a_q0_of_the_wrong_length_is_named(models_dir):
    from osim_emb import load_osim, simulate
    from osim_emb.core.configuration import ConfigurationError
    model = load_osim(models_dir / "arm26.osim")
    with pytest.raises(ConfigurationError, match=r"^q0 must have shape .* got \(3,\)"):
        simulate(model, 0.1, [0.1, 0.2, 0.3])


def test_a_marker_on_a_missing_frame_is_refused_as_opensim_refuses_it(models_dir, tmp_path, osim):
    text = (models_dir / "arm26.osim").read_text()
    at = text.index('<Marker name="r_acromion">')
    start = text.index("<socket_parent_frame>/bodyset/base</socket_parent_frame>", at)
    bad = tmp_path / "bad.osim"
    bad.write_text(text[:start] + "<socket_parent_frame>/bodyset/nobody</socket_parent_frame>"
                   + text[start + len("<socket_parent_frame>/bodyset/base</socket_parent_frame>"):])
    with pytest.raises(Exception, match="parent_frame"):  # OpenSim's own verdict on the file
        osim.Model(str(bad)).initSystem()
    from osim_emb.io.errors import OsimImportError
    with pytest.raises(OsimImportError, match=r"bad\.osim:\d+: <Marker name='r_acromion'>: frame '/bodyset/nobody' "
                                                 r"does not exist \(load with strict=False"):
        oe.load_osim(str(bad))
    lenient = oe.load_osim(str(bad), strict=False)
    assert "r_acromion" not in [m.name for m in lenient.extras["document"].markers]


def test_a_radian_value_just_past_a_range_end_is_not_called_degrees(models_dir):
    mobl = oe.load_osim(str(models_dir / "mobl_arms_holzbaur.osim"))
    q = mobl.default_q.copy()
    q[mobl.coordinate_index("shoulder_rot")] = 0.349575  # 0.03 degrees past the end 0.349066
    with pytest.raises(oe.ConfigurationError, match="outside its range") as err:
        oe.muscle_lengths(mobl, q, ["DELT1"])
    assert "degrees" not in str(err.value)
    q[mobl.coordinate_index("shoulder_rot")] = 20.0  # 20 degrees typed as radians
    with pytest.raises(oe.ConfigurationError, match="in range read as degrees"):
        oe.muscle_lengths(mobl, q, ["DELT1"])


def test_write_motion_refuses_what_read_motion_and_opensim_refuse(tmp_path):
    with pytest.raises(TypeError, match="takes a pandas DataFrame with a 'time' column, got ndarray"):
        write_motion(tmp_path / "a.mot", np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"time must be finite and increase strictly \(row 1: 0.0 after 0.1\)"):
        write_motion(tmp_path / "b.mot", pd.DataFrame({"time": [0.1, 0.0], "q": [1.0, 2.0]}))
    with pytest.raises(ValueError, match="column\\(s\\) 'label' are not numbers"):
        write_motion(tmp_path / "c.mot", pd.DataFrame({"time": [0.0, 0.1], "label": ["x", "y"]}))
    assert not list(tmp_path.iterdir())


def test_one_muscle_name_is_a_name_and_a_misspelt_one_gets_suggestions(models_dir):
    arm = oe.load_osim(str(models_dir / "arm26.osim"))
    q = [0.1, 0.2]
    np.testing.assert_array_equal(oe.muscle_lengths(arm, q, "BIClong"), oe.muscle_lengths(arm, q, ["BIClong"]))
    with pytest.raises(KeyError, match="no musculotendon unit named 'BIClnog' in model 'arm26'; did you mean 'BIClong'"):
        oe.moment_arms(arm, q, ["BIClnog"])


def test_state_arrays_of_another_length_than_q_are_refused_by_name(models_dir):
    arm = oe.load_osim(str(models_dir / "arm26.osim"))
    q = np.full((3, 2), 0.1)
    with pytest.raises(oe.ConfigurationError, match="qdot has 2 rows for 3 configurations of q"):
        oe.inverse_dynamics(arm, q, np.zeros((2, 2)), np.zeros((3, 2)))
    one = oe.inverse_dynamics(arm, q, np.zeros((1, 2)), np.zeros((3, 2)))  # one row for all
    np.testing.assert_array_equal(one, oe.inverse_dynamics(arm, q, np.zeros((3, 2)), np.zeros((3, 2))))


def test_a_range_exit_within_round_off_is_not_warned(models_dir, caplog):
    from osim_emb.cli.simulate import warn_range_exits
    arm = oe.load_osim(str(models_dir / "arm26.osim"))
    lo, hi = arm.coordinates[1].range
    table = pd.DataFrame({"time": [0.0, 0.1, 0.2], "r_shoulder_elev": [0.0, 0.0, 0.0],
                          "r_elbow_flex": [lo - 2e-9, 0.5, hi + 1e-12]})  # an integrator's round-off at the ends
    with caplog.at_level("WARNING"):
        warn_range_exits(arm, table)
    assert "leaves its range" not in caplog.text
    table.loc[1, "r_elbow_flex"] = hi + 0.01
    with caplog.at_level("WARNING"):
        warn_range_exits(arm, table)
    assert "coordinate 'r_elbow_flex' leaves its range [0°, 130°] at t = 0.1 s" in caplog.text


def test_inverse_dynamics_does_not_warn_about_muscles_the_user_excluded(models_dir, tmp_path, capsys):
    t = np.linspace(0.0, 0.5, 11)
    motion = tmp_path / "m.mot"
    write_motion(motion, pd.DataFrame({"time": t, "r_shoulder_elev": 0.2 + 0.1 * t, "r_elbow_flex": 0.5 + t}))
    arm = models_dir / "arm26.osim"
    assert main(["inverse-dynamics", str(arm), str(motion), "-o", str(tmp_path / "a.sto")]) == 0
    assert "does not apply the model's 6 Thelen2003Muscle force(s)" in capsys.readouterr().err
    assert main(["inverse-dynamics", str(arm), str(motion), "-o", str(tmp_path / "b.sto"),
                 "--exclude-forces", "Muscles"]) == 0
    assert "Thelen2003Muscle" not in capsys.readouterr().err
    setup = tmp_path / "id_setup.xml"  # OpenSim's usual setup: muscles excluded by keyword
    setup.write_text(f"<OpenSimDocument><InverseDynamicsTool><model_file>{arm}</model_file><coordinates_file>{motion}"
                     "</coordinates_file><forces_to_exclude>Muscles</forces_to_exclude><output_gen_force_file>c.sto"
                     f"</output_gen_force_file><results_directory>{tmp_path}</results_directory></InverseDynamicsTool>"
                     "</OpenSimDocument>")
    assert main(["inverse-dynamics", "--setup", str(setup)]) == 0
    err = capsys.readouterr().err
    assert "Thelen2003Muscle" not in err and "forces_to_exclude does not list Muscles" not in err


def test_legacy_external_loads_of_prescribed_forces_are_refused_for_what_they_are(tmp_path):
    from osim_emb.io.external_loads import ExternalLoadsError, read_external_loads
    legacy = tmp_path / "foot_floor_loads.xml"
    legacy.write_text("<OpenSimDocument Version='20302'><ExternalLoads name='loads'><objects>"
                      "<PrescribedForce name='right'><body>calcn_r</body></PrescribedForce>"
                      "</objects></ExternalLoads></OpenSimDocument>")
    with pytest.raises(ExternalLoadsError, match="hold PrescribedForce objects \\(OpenSim 2.x's format"):
        read_external_loads(legacy)


def test_a_setups_step_interval_keeps_the_rows_opensims_analyze_tool_reports():
    """Analysis::proceed(row index): rows 4 (begin) and 16 (end) and the multiples of 3 between them."""
    from argparse import Namespace
    from osim_emb.cli.common import time_range_frames
    t = np.round(np.arange(0.0, 1.0001, 0.05), 10)
    keep = time_range_frames(Namespace(time_range=(0.2, 0.8), step_interval=3, motion="m.mot"), t)
    np.testing.assert_allclose(t[keep], [0.2, 0.3, 0.45, 0.6, 0.75, 0.8])
    assert time_range_frames(Namespace(time_range=None, motion="m.mot"), t).all()


def test_a_time_range_beyond_the_motion_is_said():
    from argparse import Namespace
    import logging
    from osim_emb.cli.common import time_range_frames
    t = np.round(np.arange(0.5, 1.6001, 0.1), 10)
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger("osim_emb").addHandler(handler)
    try:
        keep = time_range_frames(Namespace(time_range=(0.4, 1.6), motion="m.mot"), t)
    finally:
        logging.getLogger("osim_emb").removeHandler(handler)
    assert keep.all()
    assert any("time range 0.4 to 1.6 s reaches beyond the motion (0.5 to 1.6 s): its frames 0.5 to 1.6 s" in
               r.getMessage() for r in records)


def test_duplicate_columns_the_model_does_not_use_are_read_as_opensim_reads_them(models_dir, tmp_path, caplog):
    """opensim-core's subject01_walk1_ik.mot repeats its force columns' labels: OpenSim's Storage keeps the first of
    each and its tools run; so does read_motion (said); a coordinate with two columns is refused where it is used."""
    from osim_emb.io import load_osim
    from osim_emb.io.motion import MotionFileError, coordinates_from_motion, read_motion
    model = load_osim(str(models_dir / "arm26.osim"))
    names = model.coordinate_names

    def motion(labels, path):
        rows = "\n".join("\t".join([f"{0.1 * i:g}"] + [f"{0.01 * (i + k):g}" for k in range(len(labels))])
                         for i in range(3))
        path.write_text("m\nversion=1\nnRows=3\nnColumns=%d\ninDegrees=no\nendheader\ntime\t%s\n%s\n"
                        % (len(labels) + 1, "\t".join(labels), rows))
        return path
    ok = motion([*names, "ground_force_vx", "ground_force_vx"], tmp_path / "ok.mot")
    with caplog.at_level("WARNING"):
        table, header = read_motion(ok)
    assert "duplicate column labels ['ground_force_vx']: the first of each is kept" in caplog.text
    assert list(table.columns) == ["time", *names, "ground_force_vx"]
    assert table["ground_force_vx"].tolist() == pytest.approx([0.02, 0.03, 0.04])  # the first (third column)
    _, q, _ = coordinates_from_motion(model, table, header)
    assert q[:, 1].tolist() == pytest.approx([0.01, 0.02, 0.03])
    bad = motion([names[0], names[1], names[1]], tmp_path / "bad.mot")
    table, header = read_motion(bad)
    with pytest.raises(MotionFileError, match=f"coordinate '{names[1]}' has two columns"):
        coordinates_from_motion(model, table, header)


def test_a_motion_file_without_version_or_in_degrees_is_read_as_opensims_storage_reads_it(osim, tmp_path):
    """A SIMM-era .mot (no version line, no inDegrees: opensim-core's subject01_walk1_ik.mot) is in degrees for
    OpenSim's Storage; a .sto, or a versioned file, in radians."""
    from osim_emb.io.motion import in_degrees_flag, read_motion
    body = "time\tq\n0\t10\n0.1\t20\n"
    cases = {"simm.mot": "first trial\nnRows=2\nnColumns=2\nendheader\n",
             "simm.sto": "first trial\nnRows=2\nnColumns=2\nendheader\n",
             "versioned.mot": "trial\nversion=1\nnRows=2\nnColumns=2\nendheader\n"}
    for name, head in cases.items():
        path = tmp_path / name
        path.write_text(head + body)
        _, header = read_motion(path)
        assert (in_degrees_flag(header, path) == "yes") == bool(osim.Storage(str(path)).isInDegrees()), name
    assert in_degrees_flag(read_motion(tmp_path / "simm.mot")[1], tmp_path / "simm.mot") == "yes"


def test_a_radian_simulation_past_pi_is_not_taken_for_degrees(models_dir, tmp_path, capsys):
    """A simulate-muscles result in radians whose elbow passes pi (audit r23: 1.05 -> 3.16 rad, beyond the 2.27 rad
    range end) was refused as 'looks like degrees' even with --outside-range warn. Degrees are suspected only where
    most values exceed pi; --outside-range warn uses the values; a file in degrees is still named as such."""
    from osim_emb.io.motion import coordinates_from_motion
    arm = oe.load_osim(str(models_dir / "arm26.osim"))
    t = np.linspace(0.0, 0.5, 51)
    elbow = 1.05 + 2.11 * t / 0.5  # radians, past the range end 2.27 for the last ~40% of the frames
    path = tmp_path / "fwd.sto"
    write_motion(path, pd.DataFrame({"time": t, "r_shoulder_elev": 0.3, "r_elbow_flex": elbow}), name="fwd")
    err = _error(capsys, "inverse-dynamics", str(models_dir / "arm26.osim"), str(path), "-o", str(tmp_path / "id.sto"))
    assert "outside its range" in err and "look like degrees" not in err and "--outside-range warn" in err
    assert main(["inverse-dynamics", str(models_dir / "arm26.osim"), str(path), "-o", str(tmp_path / "id.sto"),
                 "--outside-range", "warn"]) == 0
    degrees = tmp_path / "deg.sto"  # the same motion in degrees, labelled radians
    write_motion(degrees, pd.DataFrame({"time": t, "r_shoulder_elev": 17.0, "r_elbow_flex": np.degrees(elbow) / 1.5}),
                 name="deg")
    table, header = read_motion(degrees)
    with pytest.raises(MotionFileError, match="look like degrees"):
        coordinates_from_motion(arm, table, header)


def test_a_coupled_coordinate_in_degrees_is_refused_with_its_reason(models_dir, tmp_path):
    """OpenSim converts only rotational coordinates from degrees (MoBL's deviation and flexion are 'coupled'): a
    file in degrees giving deviation = 5 is refused, now with that reason, and used as given with outside='warn'."""
    from osim_emb.io.motion import coordinates_from_motion
    mobl = oe.load_osim(str(models_dir / "mobl_arms_holzbaur.osim"))
    values = {c.name: np.degrees(c.default) if c.motion_type == "rotational" else c.default for c in mobl.coordinates}
    values["deviation"] = 5.0  # degrees, inside [-10, 25] degrees
    path = tmp_path / "mobl.mot"
    write_motion(path, pd.DataFrame({"time": [0.0, 0.1], **{k: [v, v] for k, v in values.items()}}), name="m",
                 in_degrees=True)
    table, header = read_motion(path)
    with pytest.raises(MotionFileError, match="'deviation' = 5 is outside its range.*coupled coordinate, which "
                                              "OpenSim does not convert from degrees"):
        coordinates_from_motion(mobl, table, header)
    _, q, _ = coordinates_from_motion(mobl, table, header, outside="warn")
    assert q[0, mobl.coordinate_index("deviation")] == 5.0  # as OpenSim's Storage keeps it


def test_a_start_state_may_name_some_coordinates_only(models_dir):
    """simulate(q0={...}) and simulate_muscles take a dict naming some coordinates, the others at their defaults (as
    the commands' --q0; audit r23: a notebook user had to type all of MoBL's seven): the run equals the one from the
    full arrays; an unknown name and degrees are still refused."""
    from osim_emb.core.configuration import ConfigurationError
    arm = oe.load_osim(str(models_dir / "arm26.osim"))
    q0, qd0 = arm.default_q.copy(), arm.default_qdot.copy()
    q0[arm.coordinate_index("r_elbow_flex")] = 1.0
    qd0[arm.coordinate_index("r_shoulder_elev")] = 0.1
    for run in (oe.simulate, oe.simulate_muscles):
        partial = run(arm, 0.02, q0={"r_elbow_flex": 1.0}, qdot0={"r_shoulder_elev": 0.1})
        full = run(arm, 0.02, q0=q0, qdot0=qd0)
        pd.testing.assert_frame_equal(partial, full)
    with pytest.raises(ConfigurationError, match="unknown coordinates \\['elbow'\\]"):
        oe.simulate(arm, 0.02, q0={"elbow": 1.0})
    with pytest.raises(ConfigurationError, match="degrees"):
        oe.simulate(arm, 0.02, q0={"r_elbow_flex": 90.0})


def test_load_osim_names_what_it_got_instead_of_a_path():
    with pytest.raises(TypeError, match="expects the path of an .osim file .* or an opensim.Model, got int 42"):
        oe.load_osim(42)
