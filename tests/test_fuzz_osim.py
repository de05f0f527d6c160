"""Fuzzing the importer (issue 17 item 8): mutate a model's XML (delete or duplicate an element, put nan, inf, a
huge or negative number or text in place of a number, rename) and require a clean OsimImportError/ValueError with a
message, or a model; no file is written on failure; where OpenSim is installed, a sample of the accepted small models
must give OpenSim's body transforms."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from hostile_models import small_osim
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from osim_emb.io import read_osim_string
from osim_emb.io.convert import document_to_model

NUMBERS = ["nan", "inf", "-inf", "1e308", "-1", "-1e6", "0", "abc", "", "1 2 3 4 5 6 7"]
NAMES = ["x", "../evil", "a b", "ground", "upper", "m2", "cyl2", "elbow", "a*b"]
OPERATIONS = ["delete", "duplicate", "number", "rename"]
HAVE_OPENSIM = importlib.util.find_spec("opensim") is not None
FUZZ = settings(max_examples=100, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def _mutate(text: str, element_index: int, operation: str, value: str) -> tuple[str, str]:
    root = etree.fromstring(text.encode())
    elements = [e for e in root.iter() if isinstance(e.tag, str) and e is not root]
    e = elements[element_index % len(elements)]
    what = f"{operation} <{e.tag} name={e.get('name')!r}> line {e.sourceline}"
    if operation == "delete":
        e.getparent().remove(e)
    elif operation == "duplicate":
        e.addnext(etree.fromstring(etree.tostring(e)))
    elif operation == "number":
        numeric = [x for x in e.iter() if isinstance(x.tag, str) and x.text and x.text.strip()
                   and _is_number_list(x.text)]
        if numeric:
            numeric[0].text = value
            what += f" <{numeric[0].tag}>={value!r}"
    elif operation == "rename" and e.get("name") is not None:
        e.set("name", value)
        what += f" -> {value!r}"
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8").decode(), what


def _is_number_list(text: str) -> bool:
    try:
        [float(t) for t in text.split()]
        return True
    except ValueError:
        return False


def _import_or_clean_error(text: str, what: str, name: str = "fuzz.osim"):
    try:
        return document_to_model(read_osim_string(text, name=name))
    except (ValueError, KeyError) as err:  # OsimImportError, UnsupportedFeatureError, FunctionError are ValueErrors
        assert not isinstance(err, KeyError), f"{what}: bare KeyError {err}"
        msg = str(err)
        assert msg and name in msg, f"{what}: message without the file: {msg!r}"
        assert "\n" not in msg.strip(), f"{what}: multi-line message {msg!r}"
        return None


def _check_model(model, what: str):
    from osim_emb.core import kinematics as kin
    q = np.clip(np.zeros(model.n_q), *model.coordinate_ranges.T)
    bt = kin.body_transforms(model, kin.forward_kinematics(model, q, order=0))
    assert np.all(np.isfinite(bt)), f"{what}: accepted model with non-finite body transforms"
    for b in model.bodies:
        assert np.isfinite(b.mass) and b.mass >= 0, what
        assert np.linalg.eigvalsh(b.inertia).min() >= -1e-12, what


@FUZZ
@given(index=st.integers(0, 10_000), operation=st.sampled_from(OPERATIONS),
       value=st.sampled_from(NUMBERS + NAMES))
def test_fuzz_small_model(index, operation, value):
    text, what = _mutate(small_osim(), index, operation, value)
    model = _import_or_clean_error(text, what)
    if model is not None:
        _check_model(model, what)


@pytest.mark.parametrize("name,examples", [("arm26.osim", 40), ("double_pendulum.osim", 40),
                                           ("leg6dof9musc.osim", 25), ("mobl_arms_holzbaur_nowrap_variant.osim", 15)])
def test_fuzz_reference_models(models_dir, name, examples):
    source = (models_dir / name).read_text()

    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(index=st.integers(0, 100_000), operation=st.sampled_from(OPERATIONS),
           value=st.sampled_from(NUMBERS + NAMES))
    def run(index, operation, value):
        text, what = _mutate(source, index, operation, value)
        model = _import_or_clean_error(text, what)
        if model is not None:
            _check_model(model, what)
    run()


def test_fuzz_cli_writes_nothing_on_failure(tmp_path):
    """convert on mutated files: exit 0 and the output, or exit != 0 and no file at all."""
    from osim_emb.cli.main import main
    rng = np.random.default_rng(17)
    for k in range(15):
        text, what = _mutate(small_osim(), int(rng.integers(0, 10_000)), OPERATIONS[k % 4],
                             (NUMBERS + NAMES)[k % len(NUMBERS + NAMES)])
        src = tmp_path / f"m{k}.osim"
        src.write_text(text)
        out = tmp_path / "out" / f"m{k}.emb.json"
        code = main(["convert", str(src), "-o", str(out), "-q"])
        assert (code == 0) == out.exists(), what
        leftovers = [p for p in (tmp_path / "out").glob("*")] if (tmp_path / "out").exists() else []
        assert all(".partial" not in p.name for p in leftovers), what


@pytest.mark.opensim
@pytest.mark.skipif(not HAVE_OPENSIM, reason="opensim is not installed")
def test_fuzz_accepted_models_agree_with_opensim(tmp_path):
    """For a sample of mutated small models that both accept, the body transforms equal OpenSim's."""
    import opensim
    from osim_emb.core import kinematics as kin
    from osim_emb.opensim.bridge import OpenSimReference
    rng = np.random.default_rng(4)
    compared = 0
    for k in range(25):
        text, what = _mutate(small_osim(), int(rng.integers(0, 10_000)), ["number", "delete", "duplicate"][k % 3],
                             ["-1", "0", "1e6", "0.5", "2"][k % 5])
        model = _import_or_clean_error(text, what)
        if model is None:
            continue
        p = tmp_path / f"m{k}.osim"
        p.write_text(text)
        try:
            opensim.Logger.setLevelString("off")
            ref = OpenSimReference(str(p), model)
        except Exception:  # OpenSim refuses something the package accepts (e.g. a duplicated frame): not compared
            continue
        q = np.clip(np.full(model.n_q, 0.3), *model.coordinate_ranges.T)
        bt = kin.body_transforms(model, kin.forward_kinematics(model, q[None], order=0))[0]
        ref.set_configuration(q)
        for b, body in enumerate(model.bodies):
            if ref.model_os.getBodySet().contains(body.name):
                assert np.abs(ref.body_transform(body.name) - bt[b]).max() < 1e-12, what
        compared += 1
    assert compared >= 5
