"""The examples in the public API's docstrings (``osim_emb.__all__``) run and give what they show.

They run on the built-in shoulder model (no files from outside) through the compiled kernels, the one
implementation of the kinematics, dynamics and paths (numba's cache makes every run after the first fast).
Without OpenSim, the examples from the first ``import opensim`` on are left out.
"""

from __future__ import annotations

import doctest
import importlib.util
import inspect

import pytest

import osim_emb

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
HAVE_OPENSIM = importlib.util.find_spec("opensim") is not None


def public_functions() -> list[str]:
    return [name for name in osim_emb.__all__ if inspect.isfunction(getattr(osim_emb, name))]


def test_every_public_function_has_a_documented_example():
    missing = [name for name in public_functions()
               if not all(section in (getattr(osim_emb, name).__doc__ or "")
                          for section in ("Parameters", "Examples", ">>> "))]
    assert not missing, f"public functions without Parameters / Examples sections: {missing}"


@pytest.mark.parametrize("name", public_functions())
def test_docstring_example(name, monkeypatch, tmp_path):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.chdir(tmp_path)  # examples that write files write here
    func = getattr(osim_emb, name)
    tests = doctest.DocTestFinder(exclude_empty=True).find(func, f"osim_emb.{name}", globs={})
    if not HAVE_OPENSIM:  # run the examples before the first one that imports opensim
        for t in tests:
            first = next((k for k, ex in enumerate(t.examples) if ex.source.startswith("import opensim")), None)
            if first is not None:
                t.examples = t.examples[:first]
        if not any(t.examples for t in tests):
            pytest.skip("the examples need OpenSim (pip install 'osim-emb[opensim]')")
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for t in tests:
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of osim_emb.{name} failed"
