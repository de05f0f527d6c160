"""The compiled kernels' disk cache is keyed on every kernel source (osim_emb.core._accel): numba keys a cached
function on its own file only, so after an edit to a kernel in another module (a ``git pull`` on an editable
install) a cached caller would run the callee's old code; a new fingerprint starts a fresh cache instead."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from osim_emb.core import _accel


def _package_copy(tmp_path: Path) -> Path:
    root = tmp_path / "pkg"
    (root / "core").mkdir(parents=True)
    (root / "core" / "kernels.py").write_text("from x import njit\n@njit\ndef f(a):\n    return a + 1\n")
    (root / "core" / "plain.py").write_text("def g():\n    return 2\n")
    return root


def test_the_fingerprint_follows_every_kernel_source_and_nothing_else(tmp_path):
    root = _package_copy(tmp_path)
    first = _accel.kernel_fingerprint(root)
    (root / "core" / "plain.py").write_text("def g():\n    return 3\n")  # no kernel: the cache stays valid
    assert _accel.kernel_fingerprint(root) == first
    kernels = root / "core" / "kernels.py"
    kernels.write_text(kernels.read_text().replace("a + 1", "a + 2"))  # a callee another module inlines
    edited = _accel.kernel_fingerprint(root)
    assert edited != first
    stamp = kernels.stat()
    kernels.write_text(kernels.read_text().replace("a + 2", "a + 1"))
    os.utime(kernels, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # content counts, not the file's time stamp
    assert _accel.kernel_fingerprint(root) == first


def test_the_cache_folder_honours_numba_cache_dir_and_xdg_cache_home(tmp_path, monkeypatch):
    assert _accel.kernel_cache_dir("abc", str(tmp_path)) == tmp_path / "osim_emb-abc"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _accel.kernel_cache_dir("abc") == tmp_path / "xdg" / "osim_emb" / "numba" / "abc"


@pytest.mark.skipif(not _accel.HAVE_NUMBA, reason="numba is not installed")
def test_the_kernels_are_cached_under_the_fingerprint_of_this_installation():
    from numba.core import config
    from osim_emb.core import compiled_kernels
    expected = _accel.kernel_cache_dir(_accel.kernel_fingerprint(), os.environ.get("NUMBA_CACHE_DIR"))
    assert Path(config.CACHE_DIR) == expected
    assert Path(compiled_kernels.rhs_into._cache._cache_path).is_relative_to(expected)


def test_old_fingerprint_folders_are_pruned_and_other_folders_kept(tmp_path):
    base = tmp_path / "numba_cache"
    base.mkdir()
    (base / "someone_else").mkdir()  # a user's NUMBA_CACHE_DIR holds other projects' caches too
    for k in range(_accel.KEPT_CACHES + 3):
        old = base / f"osim_emb-{k:04d}"
        old.mkdir()
        os.utime(old, (1000.0 + k, 1000.0 + k))
    current = _accel.kernel_cache_dir("ffff", str(base))
    _accel._prune(current)
    left = sorted(p.name for p in base.iterdir())
    assert "someone_else" in left and current.name in left
    kept = [n for n in left if n.startswith("osim_emb-") and n != current.name]
    assert kept == [f"osim_emb-{k:04d}" for k in range(3, _accel.KEPT_CACHES + 3)]  # the most recent ones
    shutil.rmtree(base)
    _accel._prune(tmp_path / "missing" / "osim_emb-1")  # created when absent
    assert (tmp_path / "missing" / "osim_emb-1").is_dir()
