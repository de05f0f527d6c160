"""Hostile and careless input (issue 17): entities, names, numbers, duplicates, unknown elements, motion files,
JSON models, output names.  Each case checks the message names the file, the element or key, and the reason."""

import json
import time

import numpy as np
import pandas as pd
import pytest
from hostile_models import small_osim

from osim_emb.io import OsimImportError, UnsupportedFeatureError, load_osim, read_osim_string
from osim_emb.io.convert import document_to_model
from osim_emb.io.model_json import load_model, save_model
from osim_emb.io.motion import MotionFileError, coordinates_from_motion, read_motion
from osim_emb.io.outputs import OutputError, check_output_file, inside_folder, safe_output_name


def _load(text, strict=True):
    return document_to_model(read_osim_string(text, strict=strict, name="bad.osim"), strict=strict)


def _fails(text, *fragments, error=OsimImportError, strict=True):
    with pytest.raises(error) as info:
        _load(text, strict)
    msg = str(info.value)
    assert msg.startswith("bad.osim"), msg
    for f in fragments:
        assert f in msg, msg
    return msg


def test_small_model_loads():
    m = _load(small_osim())
    assert m.coordinate_names == ["shoulder_q", "elbow"]


# -- entities ---------------------------------------------------------------------------------------

XXE = """<?xml version="1.0"?>
<!DOCTYPE OpenSimDocument [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<OpenSimDocument Version="40000"><Model name="x"><credits>&xxe;</credits></Model></OpenSimDocument>"""

LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
<!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
<!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
<!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
<!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
<!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">]>
<OpenSimDocument Version="40000"><Model name="x"><credits>&lol9;</credits></Model></OpenSimDocument>"""

EXTERNAL_DTD = """<?xml version="1.0"?>
<!DOCTYPE OpenSimDocument SYSTEM "http://example.invalid/evil.dtd">
<OpenSimDocument Version="40000"><Model name="x"/></OpenSimDocument>"""


@pytest.mark.parametrize("text", [XXE, LAUGHS, EXTERNAL_DTD], ids=["xxe", "billion-laughs", "external-dtd"])
def test_doctype_and_entities_refused_fast_without_leak(tmp_path, text):
    p = tmp_path / "evil.osim"
    p.write_text(text)
    t0 = time.perf_counter()
    with pytest.raises(OsimImportError) as info:
        load_osim(p)
    assert time.perf_counter() - t0 < 2.0
    msg = str(info.value)
    assert msg.startswith(f"{p}:") and "DOCTYPE" in msg and "not allowed" in msg
    assert "root:" not in msg and "lollol" not in msg


def test_parser_options_are_safe():
    from osim_emb.io.osim_reader import _xml_parser
    parser = _xml_parser()
    # lxml does not expose the options; parse an internal entity and check it is not expanded
    from lxml import etree
    root = etree.fromstring(b'<!DOCTYPE a [<!ENTITY e "expanded">]><a>&e;</a>', parser)
    assert "expanded" not in (root.text or "")


# -- names ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("field,kind", [("model_name", "model"), ("body_name", "body"), ("joint_name", "joint"),
                                        ("coordinate_name", "coordinate"), ("muscle_name", "force"),
                                        ("wrap_name", "wrap object")])
@pytest.mark.parametrize("bad", ["../x", "/abs/x", "a b", "a\nb", "a*b", "a+b", "a\\b"])
def test_names_opensim_refuses_are_refused(field, kind, bad):
    from xml.sax.saxutils import quoteattr
    text = small_osim(**{field: quoteattr(bad)[1:-1]})
    msg = _fails(text, f"{kind} name", "OpenSim refuses")
    assert repr(bad) in msg


def test_safe_output_name_and_inside_folder(tmp_path):
    assert safe_output_name("../../etc/passwd") == "etc_passwd"
    assert safe_output_name("/abs/x") == "abs_x"
    assert safe_output_name("a'b\"c\nd") == "a_b_c_d"
    assert safe_output_name("..") == "model"
    assert safe_output_name("arm26") == "arm26"
    assert inside_folder(tmp_path, "x.osim") == tmp_path / "x.osim"
    for bad in ("../x.osim", "/etc/x.osim", "a/../../x"):
        with pytest.raises(OutputError, match="leave the output folder"):
            inside_folder(tmp_path, bad)


# -- numbers ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("changes,fragments", [
    (dict(mass="-1"), ["negative mass"]),
    (dict(mass="nan"), ["<mass>", "non-finite"]),
    (dict(mass="inf"), ["<mass>", "non-finite"]),
    (dict(mass="heavy"), ["<mass>", "not a list of numbers"]),
    (dict(inertia="-0.2 0.2 0.02 0 0 0"), ["<inertia>", "negative moment"]),
    (dict(inertia="0.2 0.2 0.02 0.5 0 0"), ["<inertia>", "not positive semi-definite"]),
    (dict(inertia="0.2 0.2 nan 0 0 0"), ["<inertia>", "non-finite"]),
    (dict(range="1 -1"), ["<Coordinate name='shoulder_q'>", "is empty"]),
    (dict(range="0 inf"), ["<range>", "non-finite"]),
    (dict(default="nan"), ["<default_value>", "non-finite"]),
    (dict(elbow_function='<LinearFunction name="function"><coefficients>inf 0</coefficients></LinearFunction>'),
     ["<coefficients>", "non-finite"]),
    (dict(elbow_function='<PolynomialFunction name="function"><coefficients>1 nan</coefficients>'
                         '</PolynomialFunction>'), ["<coefficients>", "non-finite"]),
    (dict(elbow_function='<SimmSpline name="function"><x>0 2 1</x><y>0 1 2</y></SimmSpline>'), ["SimmSpline"]),
    (dict(elbow_function='<Constant name="function"><value>inf</value></Constant>'), ["<value>", "not finite"]),
    (dict(elbow_function='<MultiplierFunction name="function"><function><LinearFunction><coefficients>1 0'
                         '</coefficients></LinearFunction></function><scale>nan</scale></MultiplierFunction>'),
     ["<scale>", "not finite"]),
])
def test_bad_numbers_refused(changes, fragments):
    _fails(small_osim(**changes), *fragments)


def test_triangle_inequality_noted_as_opensim_uses_it():
    m = _load(small_osim(inertia="0 0 0.02 0 0 0"))
    assert any("triangle inequality" in n for n in m.extras["notes"])


# -- unknown elements and duplicates ---------------------------------------------------------------

def test_unknown_function_in_transform_axis_refused_not_identity():
    bad = '<ExpressionBasedFunction name="function"><expression>2*x</expression></ExpressionBasedFunction>'
    msg = _fails(small_osim(elbow_function=bad), "ExpressionBasedFunction", "unsupported function type",
                 error=UnsupportedFeatureError)
    assert "bad.osim:" in msg
    unknown = '<FancyFunction name="function"><a>1</a></FancyFunction>'
    _fails(small_osim(elbow_function=unknown), "FancyFunction", error=UnsupportedFeatureError)
    _fails(small_osim(elbow_function="<function><FancyFunction/></function>"), "FancyFunction",
           error=UnsupportedFeatureError)
    _fails(small_osim(elbow_function="<colour>red</colour>"), "unknown element(s) ['colour'] in a TransformAxis")


def test_lenient_skips_unsupported_joint_and_what_hangs_on_it():
    bad = '<ExpressionBasedFunction name="function"><expression>2*x</expression></ExpressionBasedFunction>'
    m = _load(small_osim(elbow_function=bad), strict=False)
    assert m.coordinate_names == ["shoulder_q"]
    assert [b.name for b in m.bodies if b.mass > 0] == ["upper"]
    assert m.muscles == [] or all(p.body != "lower" for mu in m.muscles for p in mu.points)
    skipped = {(s.kind, s.name) for s in m.extras["skipped"]}
    assert ("joint", "elbow_joint") in skipped and ("body", "lower") in skipped and ("force", "m1") in skipped


def test_reverse_element_in_a_4x_file_is_ignored_as_opensim_ignores_it():
    """<reverse> is no Joint property since version 30514: in a 4.x file OpenSim ignores the element, and so does
    the import (saying so); the model is the one without it."""
    from osim_emb.core import kinematics as kin
    text = small_osim().replace("<socket_parent_frame>upper_offset2", "<reverse>true</reverse>"
                                                                     "<socket_parent_frame>upper_offset2")
    m, plain = _load(text), _load(small_osim())
    assert m.coordinate_names == plain.coordinate_names == ["shoulder_q", "elbow"]
    q = np.array([[0.3, 0.7]])
    np.testing.assert_array_equal(kin.body_transforms(m, kin.forward_kinematics(m, q, order=0)),
                                  kin.body_transforms(plain, kin.forward_kinematics(plain, q, order=0)))
    assert any("<reverse> ignored" in n for n in m.extras["notes"])


@pytest.mark.parametrize("changes,fragment", [
    (dict(muscle_name_2="m1"), "duplicate Force name 'm1'"),
    (dict(wrap_name_2="cyl"), "duplicate WrapObject name 'cyl'"),
    (dict(joint_name="shoulder"), "duplicate Joint name 'shoulder'"),
    (dict(coordinate_name="elbow"), "duplicate coordinate name"),
])
def test_duplicate_names_refused(changes, fragment):
    _fails(small_osim(**changes), fragment)


def test_duplicate_body_refused():
    text = small_osim().replace('<Body name="lower">', '<Body name="upper">')
    _fails(text, "duplicate Body name 'upper'")


# -- motion files -----------------------------------------------------------------------------------

def _motion(tmp_path, rows, in_degrees="no", labels="time\tshoulder_q\telbow"):
    p = tmp_path / "m.mot"
    p.write_text(f"m\nversion=1\ninDegrees={in_degrees}\nendheader\n{labels}\n" +
                 "\n".join("\t".join(str(v) for v in r) for r in rows) + "\n")
    return p


@pytest.mark.parametrize("rows,fragments", [
    ([(0, 0.1, 0.5), (0.1, "inf", 0.5), (0.2, 0.1, 0.5)], [":7:", "column 'shoulder_q'", "non-finite"]),
    ([(0, 0.1, 0.5), (0.1, "nan", 0.5), (0.2, 0.1, 0.5)], [":7:", "column 'shoulder_q'", "non-finite"]),
    ([(0, 0.1, 0.5), (0.1, "x", 0.5)], [":7:", "column 'shoulder_q'", "not a number"]),
    ([(0, 0.1, 0.5), (0.0, 0.1, 0.5)], [":7:", "column 'time'", "increase strictly"]),
    ([(0, 0.1, 0.5), (0.1, 0.1)], [":7:", "row has 2 values"]),
])
def test_motion_file_values(tmp_path, rows, fragments):
    p = _motion(tmp_path, rows)
    with pytest.raises(MotionFileError) as info:
        read_motion(p)
    msg = str(info.value)
    assert msg.startswith(str(p))
    for f in fragments:
        assert f in msg, msg


def test_motion_file_with_trailing_tabs_reads_as_opensim_reads_it(tmp_path):
    """OpenSim's writers end the label line and the rows with a tab (opensim-core's std_walking*_grfs.sto); OpenSim's
    STOFileAdapter reads such a file with the columns named, and so does read_motion."""
    p = _motion(tmp_path, [(0, 0.1, 0.5, ""), (0.1, 0.2, 0.6, "")], labels="time\tshoulder_q\telbow\t")
    table, _ = read_motion(p)
    assert list(table.columns) == ["time", "shoulder_q", "elbow"] and table["elbow"].tolist() == [0.5, 0.6]
    osim = pytest.importorskip("opensim")
    theirs = osim.TimeSeriesTable(str(p))
    assert list(theirs.getColumnLabels()) == ["shoulder_q", "elbow"]
    assert [theirs.getDependentColumn("elbow")[i] for i in range(2)] == [0.5, 0.6]


def test_motion_degrees_in_radians_file_refused(tmp_path):
    m = _load(small_osim())
    p = _motion(tmp_path, [(0, 10, 30), (0.1, 20, 60), (0.2, 30, 90)])
    table, head = read_motion(p)
    with pytest.raises(MotionFileError, match=r"m.mot:6: column 'shoulder_q': coordinate 'shoulder_q' = 10 is "
                                              r"outside its range .*look like degrees"):
        coordinates_from_motion(m, table, head)
    p = _motion(tmp_path, [(0, 10, 30), (0.1, 20, 60), (0.2, 30, 90)], in_degrees="yes")
    _, q, _ = coordinates_from_motion(m, *read_motion(p))
    assert q[1] == pytest.approx(np.radians([20, 60]), rel=1e-15)


def test_motion_roundoff_accepted(tmp_path):
    m = _load(small_osim())
    p = _motion(tmp_path, [(0, 0.1, -2e-8), (0.1, 0.1, 0.5), (0.2, 0.1, 0.5)])
    _, q, _ = coordinates_from_motion(m, *read_motion(p))
    assert q[0, 1] == 0.0


# -- JSON models ------------------------------------------------------------------------------------

@pytest.fixture
def saved(tmp_path):
    p = tmp_path / "m.emb.json"
    save_model(_load(small_osim()), p)
    return p, json.loads(p.read_text())


@pytest.mark.parametrize("mutate,fragment", [
    (lambda d: d.pop("bodies"), "'bodies': missing"),
    (lambda d: d.__setitem__("bodies", {}), "bodies: expected a list"),
    (lambda d: d["bodies"][0].__setitem__("mass", "heavy"), "bodies[0].mass: expected a number"),
    (lambda d: d["bodies"][0].__setitem__("mass", -1.0), "bodies[0].mass: must be >= 0"),
    (lambda d: d["bodies"][0].__setitem__("com", [0, 1]), "bodies[0].com: expected 3 numbers"),
    (lambda d: d["coordinates"][0].__setitem__("range", [1.0, -1.0]), "coordinates[0].range: lower bound"),
    (lambda d: d["joints"][0].__setitem__("parent", 99), "joints[0].parent"),
    (lambda d: d["gravity"].__setitem__(1, "down"), "gravity: expected 3 numbers"),
    (lambda d: d["coordinates"][0].pop("name"), "coordinates[0]: 'name': missing"),
])
def test_json_model_validated_with_file_and_key(saved, mutate, fragment):
    p, d = saved
    mutate(d)
    p.write_text(json.dumps(d))
    with pytest.raises(ValueError) as info:
        load_model(p)
    msg = str(info.value)
    assert msg.startswith(str(p)) and fragment in msg, msg


def test_json_nan_refused(saved):
    p, d = saved
    p.write_text(json.dumps(d).replace('"mass": 2.0', '"mass": NaN'))
    with pytest.raises(ValueError, match=r"bodies\[0\].mass: .*finite"):
        load_model(p)


# -- outputs ------------------------------------------------------------------------------------------

def test_check_output_file(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputError, match="is a folder"):
        check_output_file(tmp_path / "d")
    with pytest.raises(OutputError, match="is a file, not a folder"):
        check_output_file(tmp_path / "f" / "out.sto")
    with pytest.raises(OutputError, match="already exists .*--overwrite"):
        check_output_file(tmp_path / "f")
    assert check_output_file(tmp_path / "f", overwrite=True) == tmp_path / "f"
    with pytest.raises(OutputError, match="input file"):
        check_output_file(tmp_path / "f", overwrite=True, inputs=[tmp_path / "f"])


def test_simulate_api_refuses_bad_options():
    from osim_emb.simulation.motions import IntegrationBudgetExceeded, simulate
    m = _load(small_osim())
    for kw, match in [(dict(t_end=-1), "t_end"), (dict(t_end=1, rtol=0), "rtol"), (dict(t_end=1, n_output=0),
                                                                                     "n_output")]:
        with pytest.raises(ValueError, match=match):
            simulate(m, **kw)
    with pytest.raises(IntegrationBudgetExceeded, match="after 50 right-hand-side evaluations"):
        simulate(m, 1.0, qdot0=[1e12, 0.0], max_steps=50)
    t = simulate(m, 0.01, n_output=3)
    assert isinstance(t, pd.DataFrame) and len(t) == 3


def test_transform_axis_without_function_stays_at_zero_as_opensim():
    """OpenSim's TransformAxis function defaults to Constant(0) (checked against OpenSim 4.6 for 3.3 and 4.0 files
    in tests/test_fuzz_osim.py): the coordinate does not turn the axis."""
    from osim_emb.core import kinematics as kin
    m = _load(small_osim(elbow_function=""))
    assert any("no function for coordinate(s) ['elbow']" in n for n in m.extras["notes"])
    bt = kin.body_transforms(m, kin.forward_kinematics(m, np.array([[0.0, 1.0]]), order=0))[0]
    lower = [k for k, b in enumerate(m.bodies) if b.name == "lower"][0]
    assert np.abs(bt[lower, :3, :3] - np.eye(3)).max() < 1e-15


def test_conditional_point_empty_range_refused():
    point = ('<ConditionalPathPoint name="c"><socket_parent_frame>/bodyset/upper</socket_parent_frame>'
             '<location>0 -0.5 0</location><socket_coordinate>/jointset/elbow_joint/elbow</socket_coordinate>'
             '<range>1 0</range></ConditionalPathPoint>')
    text = small_osim().replace('<PathPoint name="p2"><socket_parent_frame>/bodyset/lower', point +
                                '<PathPoint name="p2"><socket_parent_frame>/bodyset/lower', 1)
    _fails(text, "<ConditionalPathPoint name='c'>", "range [1.0, 0.0] is empty")


def test_doctype_in_utf16_refused_after_parsing_without_leak(tmp_path):
    p = tmp_path / "x16.osim"
    p.write_bytes(XXE.replace('<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>').encode("utf-16"))
    with pytest.raises(OsimImportError, match="DOCTYPE declaration is not allowed") as info:
        load_osim(p)
    assert "root:" not in str(info.value)


def test_function_property_matched_by_name_as_opensim():
    """OpenSim 4 takes <LinearFunction> or <LinearFunction name="function"> as the TransformAxis function and ignores
    one with another name (checked with OpenSim 4.6: Constant 0)."""
    from osim_emb.core import kinematics as kin

    def elbow_angle(tag_name):
        m = _load(small_osim(elbow_function=f'<LinearFunction {tag_name}><coefficients>2 0</coefficients>'
                                            '</LinearFunction>'))
        bt = kin.body_transforms(m, kin.forward_kinematics(m, np.array([[0.0, 0.5]]), order=0))[0]
        r = bt[[b.name for b in m.bodies].index("lower"), :3, :3]
        return np.arctan2(r[1, 0], r[0, 0]), m.extras["notes"]
    assert elbow_angle('name="function"')[0] == pytest.approx(1.0, abs=1e-15)
    assert elbow_angle("")[0] == pytest.approx(1.0, abs=1e-15)
    angle, notes = elbow_angle('name="xyz"')
    assert angle == 0.0 and any("is not the 'function' property and is ignored" in n for n in notes)


def test_missing_mass_and_missing_axes_refused_as_opensim():
    _fails(small_osim().replace("<mass>2</mass>", ""), "<Body name='upper'>", "missing <mass>")
    import re
    text = re.sub(r'<TransformAxis name="rotation2">.*?</TransformAxis>', "", small_osim())
    _fails(text, "<SpatialTransform>", "needs all six TransformAxis elements; missing ['rotation2']")
    text = small_osim().replace('<TransformAxis name="rotation2">', '<TransformAxis name="rotation1">')
    _fails(text, "TransformAxis ['rotation1'] given more than once")


@pytest.mark.parametrize("old,new,kind", [('<PathPoint name="p1">', '<PathPoint name="../p1">', "path point"),
                                          ('<PathWrap name="pw">', '<PathWrap name="a b">', "path wrap")])
def test_path_point_and_wrap_names_checked(old, new, kind):
    _fails(small_osim().replace(old, new, 1), f"{kind} name")
