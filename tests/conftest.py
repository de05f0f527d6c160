"""Shared fixtures: where the reference models are, and skips when they or OpenSim are absent."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

# OpenSim reference values are cached on disk by the harness; tests never read or fill the user's cache.
os.environ["OSIM_EMB_CACHE"] = tempfile.mkdtemp(prefix="osim_emb_test_cache_")


def reference_models_dir() -> Path:
    """The folder of reference models: $OSIM_EMB_MODELS, else ../shared/models beside the repository."""
    env = os.environ.get("OSIM_EMB_MODELS")
    return Path(env).resolve() if env else (REPO_ROOT.parent / "shared" / "models")


@pytest.fixture(scope="session")
def models_dir() -> Path:
    d = reference_models_dir()
    if not d.is_dir():
        pytest.skip(f"reference models not found at {d} (set OSIM_EMB_MODELS to the folder of ../shared/models)")
    return d


@pytest.fixture(scope="session")
def osim():
    """The opensim module, or a skip when it is not installed (pip install 'osim-emb[opensim]')."""
    return pytest.importorskip("opensim", reason="opensim is not installed (pip install 'osim-emb[opensim]')")
