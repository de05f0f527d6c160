"""Importer without OpenSim: every reference model loads, inspects, and round-trips through the JSON format;
malformed and unsupported inputs give errors that name the file, element and line."""

import json
import re

import numpy as np
import pytest
from lxml import etree

from osim_emb.cli.main import main
from osim_emb.io import OsimImportError, UnsupportedFeatureError, load_osim, read_osim_string
from osim_emb.io.convert import document_to_model
from osim_emb.io.model_json import load_model, model_to_dict, save_model

MODEL_FILES = ["double_pendulum.osim", "arm26.osim", "leg6dof9musc.osim",
               "mobl_arms_holzbaur_nowrap_variant.osim", "mobl_arms_holzbaur.osim"]


@pytest.mark.parametrize("name", MODEL_FILES)
def test_load_inspect_roundtrip(models_dir, tmp_path, name, capsys):
    path = models_dir / name
    model = load_osim(path)
    out = tmp_path / "m.emb.json"
    save_model(model, out)
    again = load_model(out)
    assert again == model
    assert json.loads(out.read_text())["format"] == "osim-emb-model"
    assert main(["inspect", str(path)]) == 0
    text = capsys.readouterr().out
    for c in model.coordinate_names:
        assert c in text
    for m in model.muscles:
        assert m.name in text
    for c in model.coordinates:  # ranges and defaults with their units
        line = next(ln for ln in text.splitlines() if f" {c.name} " in ln and " range " in ln)
        if c.motion_type == "translational" or not np.isfinite(c.range).any():
            assert line.endswith("(m)" if c.motion_type == "translational" else "(rad)"), line
        else:  # radians, then the same in degrees (OpenSim users read angles in degrees)
            lo, hi = np.degrees(c.range)
            assert "(rad)" in line and line.endswith(f"= [{lo:.6g}, {hi:.6g}] default {np.degrees(c.default):.6g} "
                                                      "(deg)"), line
    assert " kg com " in text
    assert main(["inspect", str(out)]) == 0 and "(format None)" not in capsys.readouterr().out


def test_mobl_structure(models_dir):
    """The Holzbaur shoulder: 7 generalized coordinates, the rhythm couplers as functions of shoulder_elv,
    23 moving via points as zero-inertia bodies, Table 5 attachment sequences."""
    model = load_osim(models_dir / "mobl_arms_holzbaur.osim")
    assert model.coordinate_names == ["elv_angle", "shoulder_elv", "shoulder_rot", "elbow_flexion", "pro_sup",
                                      "deviation", "flexion"]
    dep = {d.name: d for d in model.dependent_coordinates}
    k = model.coordinate_index("shoulder_elv")
    q = np.zeros((1, model.n_q))
    for name, slope in [("sternoclavicular_r2", -0.242), ("sternoclavicular_r3", 0.1025),
                        ("acromioclavicular_r1", 0.178), ("acromioclavicular_r2", -0.049),
                        ("acromioclavicular_r3", 0.396), ("unrotscap_r2", 0.242), ("unrothum_r1", -0.178)]:
        g = dep[name].function.evaluate(q).gradient[0]
        assert g[k] == pytest.approx(slope, abs=5e-4), name
        assert np.count_nonzero(g) == 1
    moving = [p for m in model.muscles for p in m.points if p.kind == "moving"]
    assert len(moving) == 23
    assert all(model.body(p.body).mass == 0 for p in moving)
    seq = {m.name: m.attachment_sequence for m in model.muscles}
    assert set(seq["SUBSC"]) == {"scapula", "humerus"} and len(seq["SUBSC"]) == 2
    # path order in this file runs from insertion to origin (Table 5 lists origin first)
    assert seq["DELT1"] == ("humerus", "scapula", "clavicle")
    assert seq["LAT1"][0] == "humerus" and seq["LAT1"][-1] == "thorax" and len(seq["LAT1"]) == 4
    assert all(model.body(b).mass == 0 for b in seq["LAT1"][1:3])


def test_convert_command_never_overwrites_input(models_dir, tmp_path):
    src = tmp_path / "arm26.osim"
    src.write_bytes((models_dir / "arm26.osim").read_bytes())
    before = src.read_bytes()
    assert main(["convert", str(src), "-o", str(src)]) == 2
    assert src.read_bytes() == before
    out = tmp_path / "sub" / "arm26.emb.json"
    assert main(["convert", str(src), "-o", str(out)]) == 0
    assert load_model(out) == load_osim(src)
    assert not list(out.parent.glob(".*.tmp"))


# -- malformed and unsupported inputs -------------------------------------------------------------

def _pendulum_xml(models_dir):
    return etree.parse(str(models_dir / "double_pendulum.osim")).getroot()


def _load_string(root, strict=True):
    text = etree.tostring(root, encoding="unicode")
    return document_to_model(read_osim_string(text, strict=strict, name="bad.osim"), strict=strict)


def _expect(err, *needles):
    msg = str(err.value)
    assert msg.startswith("bad.osim:") or "bad.osim" in msg
    assert re.search(r"bad\.osim:\d+", msg), f"no line number in: {msg}"
    for n in needles:
        assert n in msg, f"{n!r} not in: {msg}"


def test_truncated_xml(models_dir, tmp_path):
    text = (models_dir / "double_pendulum.osim").read_text()
    bad = tmp_path / "bad.osim"
    bad.write_text(text[: len(text) // 2])
    with pytest.raises(OsimImportError) as err:
        load_osim(bad)
    assert "malformed XML" in str(err.value) and "bad.osim" in str(err.value)


def test_missing_body_reference(models_dir):
    root = _pendulum_xml(models_dir)
    sp = root.find(".//JointSet/objects/PinJoint//PhysicalOffsetFrame/socket_parent")
    sp.text = "/bodyset/no_such_body"
    with pytest.raises(OsimImportError) as err:
        _load_string(root)
    _expect(err, "PhysicalOffsetFrame", "no_such_body")


def test_coupler_naming_unknown_coordinate(models_dir):
    root = _pendulum_xml(models_dir)
    model = root.find("Model")
    cs = model.find("ConstraintSet")
    if cs is None:
        cs = etree.SubElement(model, "ConstraintSet")
    objs = cs.find("objects")
    if objs is None:
        objs = etree.SubElement(cs, "objects")
    c = etree.SubElement(objs, "CoordinateCouplerConstraint", name="bad_coupler")
    etree.SubElement(etree.SubElement(c, "coupled_coordinates_function"), "LinearFunction").append(
        etree.fromstring("<coefficients>1 0</coefficients>"))
    etree.SubElement(c, "independent_coordinate_names").text = "q_missing"
    etree.SubElement(c, "dependent_coordinate_name").text = "q2"
    root = etree.fromstring(etree.tostring(root))  # give the new elements line numbers
    with pytest.raises(OsimImportError) as err:
        _load_string(root)
    _expect(err, "bad_coupler", "q_missing")


def test_unsupported_function(models_dir):
    root = _pendulum_xml(models_dir)
    root.find(".//JointSet/objects/PinJoint").tag = "PinJointX"
    with pytest.raises(UnsupportedFeatureError) as err:
        _load_string(root)
    _expect(err, "PinJointX", "unsupported joint type")
    body = """<OpenSimDocument Version="40000"><Model name="m"><Ground name="ground"/><BodySet><objects>
<Body name="b"><mass>1</mass></Body></objects></BodySet><JointSet><objects>
<CustomJoint name="cj"><socket_parent_frame>/ground</socket_parent_frame><socket_child_frame>/bodyset/b</socket_child_frame>
<coordinates><Coordinate name="c"/></coordinates><SpatialTransform>
<TransformAxis name="rotation1"><coordinates>c</coordinates><axis>0 0 1</axis>
<ExpressionBasedFunction name="function"><expression>sin(x)</expression></ExpressionBasedFunction></TransformAxis>
</SpatialTransform></CustomJoint></objects></JointSet></Model></OpenSimDocument>"""
    with pytest.raises(OsimImportError) as err:
        document_to_model(read_osim_string(body, name="bad.osim"))
    _expect(err, "ExpressionBasedFunction", "unsupported function type")


def test_non_monotonic_spline(models_dir):
    body = """<OpenSimDocument Version="40000"><Model name="m"><Ground name="ground"/><BodySet><objects>
<Body name="b"><mass>1</mass></Body></objects></BodySet><JointSet><objects>
<CustomJoint name="cj"><socket_parent_frame>/ground</socket_parent_frame><socket_child_frame>/bodyset/b</socket_child_frame>
<coordinates><Coordinate name="c"/></coordinates><SpatialTransform>
<TransformAxis name="rotation1"><coordinates>c</coordinates><axis>0 0 1</axis>
<SimmSpline name="function"><x>0 0.5 0.4 1</x><y>0 1 2 3</y></SimmSpline></TransformAxis>
</SpatialTransform></CustomJoint></objects></JointSet></Model></OpenSimDocument>"""
    with pytest.raises(OsimImportError) as err:
        document_to_model(read_osim_string(body, name="bad.osim"))
    _expect(err, "SimmSpline", "decreasing")


def test_unsupported_constraint_strict_and_lenient(models_dir):
    root = _pendulum_xml(models_dir)
    model = root.find("Model")
    cs = model.find("ConstraintSet") if model.find("ConstraintSet") is not None else etree.SubElement(model, "ConstraintSet")
    objs = cs.find("objects") if cs.find("objects") is not None else etree.SubElement(cs, "objects")
    etree.SubElement(objs, "RollingOnSurfaceConstraint", name="roll_it")
    root = etree.fromstring(etree.tostring(root))
    with pytest.raises(UnsupportedFeatureError) as err:
        _load_string(root)
    _expect(err, "RollingOnSurfaceConstraint", "roll_it", "strict=False")
    m = _load_string(root, strict=False)
    skipped = m.extras["skipped"]
    assert [s.name for s in skipped] == ["roll_it"] and skipped[0].line is not None
    assert m.n_q == 2


def test_out_of_range_configuration(models_dir):
    model = load_osim(models_dir / "arm26.osim")
    with pytest.raises(ValueError, match="r_elbow_flex.*outside its range"):
        model.check_configuration([0.0, 3.0])
