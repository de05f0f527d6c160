"""Names in files older than OpenSim 3.5 are read as OpenSim reads them (Component::updateFromXMLNode):
whitespace removed, a missing name becomes the lowercased element type.  4.x files keep the strict check."""

from __future__ import annotations

import re

import pytest

from osim_emb import load_osim
from osim_emb.io.errors import OsimImportError


def _legacy_variant(models_dir, tmp_path, version: str | None = None):
    text = (models_dir / "mobl_arms_holzbaur.osim").read_text()
    text = re.sub(r'<Model name="[^"]*">', '<Model name="MoBL Arms\tModel">', text, count=1)
    text = text.replace('<CoordinateCouplerConstraint name="sternoclavicular_r2_con">',
                        "<CoordinateCouplerConstraint>", 1)
    if version:
        text = re.sub(r'<OpenSimDocument Version="\d+">', f'<OpenSimDocument Version="{version}">', text, count=1)
    path = tmp_path / "legacy.osim"
    path.write_text(text)
    return path


def test_legacy_names_read_as_opensim_reads_them(models_dir, tmp_path):
    path = _legacy_variant(models_dir, tmp_path)
    model = load_osim(path)
    assert model.name == "MoBLArmsModel"
    assert "coordinatecouplerconstraint" in {c.name for c in model.extras["document"].couplers}
    assert model.n_q == load_osim(models_dir / "mobl_arms_holzbaur.osim").n_q


def test_legacy_names_match_opensims(osim, models_dir, tmp_path):
    path = _legacy_variant(models_dir, tmp_path)
    theirs = osim.Model(str(path))
    theirs.finalizeFromProperties()
    names = {theirs.getConstraintSet().get(i).getName() for i in range(theirs.getConstraintSet().getSize())}
    assert theirs.getName() == load_osim(path).name
    assert "coordinatecouplerconstraint" in names


def test_names_with_whitespace_refused_in_4x_files(models_dir, tmp_path):
    path = _legacy_variant(models_dir, tmp_path, version="40000")
    with pytest.raises(OsimImportError, match="OpenSim refuses"):
        load_osim(path)


def test_renamed_muscle_type_read_as_opensim_reads_it(osim, models_dir, tmp_path):
    """OpenSim reads <Schutte1993Muscle> (2.x/3.x files) as Schutte1993Muscle_Deprecated (Object::renameType)."""
    text = (models_dir / "mobl_arms_holzbaur.osim").read_text()
    path = tmp_path / "renamed.osim"
    path.write_text(text.replace("Schutte1993Muscle_Deprecated", "Schutte1993Muscle"))
    ours, original = load_osim(path), load_osim(models_dir / "mobl_arms_holzbaur.osim")
    assert all(m.parameters is not None for m in ours.muscles)
    assert [m.parameters for m in ours.muscles] == [m.parameters for m in original.muscles]
    theirs = osim.Model(str(path))
    assert theirs.getMuscles().get(0).getConcreteClassName() == "Schutte1993Muscle_Deprecated"
