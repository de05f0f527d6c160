"""A regular (non-editable) install carries the project's own models: the build step copies models/*/*.osim
into the wheel as osim_emb/data/models, where osim_emb.io.builtin_models finds them."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_build_puts_the_builtin_models_in_the_package(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "models", src / "models", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "osim_emb", src / "osim_emb", ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    out = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "-d", str(tmp_path / "lib")], cwd=src,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lib = tmp_path / "lib"
    for model in sorted((REPO / "models").glob("*/*.osim")):
        built = lib / "osim_emb" / "data" / "models" / model.parent.name / model.name
        assert built.read_bytes() == model.read_bytes()
    code = ("import osim_emb as oe, osim_emb.io.builtin_models as b; p = b.builtin_model_path(); "
            "assert 'data' in p.parts, p; print(oe.load_builtin().n_q)")
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(lib), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0 and run.stdout.strip() == "3", run.stderr
