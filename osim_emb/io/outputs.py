"""Safe outputs for the commands: names that stay inside their folder, checks before anything is written, and
all-or-nothing writes (a temporary sibling renamed into place at the end).

* :func:`safe_output_name` turns a model name (which comes from the input file) into a plain file-name stem.
* :func:`check_output_file` / :func:`check_output_folder` refuse, before any work, an output that exists (unless
  ``overwrite``), is a folder where a file is expected (or the reverse), has a file as parent, or is an input.
* :func:`atomic_files` and :func:`atomic_folder` hand out temporaries and move them into place only when the block
  ends without an exception; otherwise the temporaries are removed and the old outputs are untouched.  A folder
  that exists keeps what the command does not write (:func:`move_into`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Iterator, Sequence

__all__ = ["OutputError", "safe_output_name", "inside_folder", "check_output_file", "check_output_folder",
           "atomic_files", "atomic_folder", "move_into", "write_atomically"]

log = logging.getLogger(__name__)

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class OutputError(ValueError):
    """An output path that cannot or must not be written."""


def safe_output_name(name: str | None, fallback: str = "model") -> str:
    """A file-name stem from ``name``: only letters, digits, '.', '_' and '-', no leading dot, at most 100 characters.

    >>> safe_output_name("../../etc/x")
    'etc_x'
    """
    stem = _UNSAFE.sub("_", str(name or "")).strip("._-")
    stem = re.sub(r"_+", "_", stem)[:100].strip("._-")
    return stem or fallback


def inside_folder(folder: str | Path, name: str) -> Path:
    """``folder / name``, refused unless it stays inside ``folder`` (no absolute names, no '..')."""
    folder = Path(folder)
    target = folder / name
    root = folder.resolve()
    resolved = target.resolve()
    if Path(name).is_absolute() or (resolved != root and root not in resolved.parents):
        raise OutputError(f"{name!r}: output name would leave the output folder {folder}")
    return target


def _same_file(a: str | Path, b: Path) -> bool:
    try:
        return Path(a).exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def _check_parent(path: Path) -> None:
    for parent in [path.parent, *path.parent.parents]:
        if parent.exists():
            if not parent.is_dir():
                raise OutputError(f"{path}: cannot write here: {parent} is a file, not a folder")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise OutputError(f"{path}: cannot write here: folder {parent} is not writable")
            return


def check_output_file(path: str | Path, *, overwrite: bool = False, inputs: Sequence[str | Path] = ()) -> Path:
    """Refuse an output file that is an input, a folder, under a file, or exists (unless ``overwrite``)."""
    path = Path(path)
    if str(path) == "" or path.name in ("", ".", ".."):
        raise OutputError(f"{str(path)!r}: not a file name")
    for p in inputs:
        if p is not None and (_same_file(p, path) or Path(p).absolute() == path.absolute()):
            raise OutputError(f"{path}: refusing to overwrite the input file {p}")
    if path.is_dir():
        raise OutputError(f"{path}: is a folder; give a file name")
    _check_parent(path)
    if path.exists() and not overwrite:
        raise OutputError(f"{path}: already exists (use --overwrite to replace it)")
    return path


def check_output_folder(path: str | Path, *, overwrite: bool = False, inputs: Sequence[str | Path] = ()) -> Path:
    """Refuse an output folder that is a file, under a file, holds an input, or is not empty (unless ``overwrite``)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{path}: is a file; give a folder name")
    _check_parent(path / "x")
    for p in inputs:
        if p is not None and Path(p).exists():
            resolved = Path(p).resolve()
            if path.resolve() == resolved or path.resolve() in resolved.parents:
                raise OutputError(f"{path}: the output folder contains the input file {p}; choose another folder")
    if path.is_dir() and any(path.iterdir()) and not overwrite:
        raise OutputError(f"{path}: folder exists and is not empty (use --overwrite to replace this command's "
                          "outputs in it; other files are kept)")
    return path


def _missing_parents(path: Path) -> list[Path]:
    """The parent folders of ``path`` that do not exist yet, deepest first (removed again on failure)."""
    out = []
    for parent in [path.parent, *path.parent.parents]:
        if parent.exists():
            break
        out.append(parent)
    return out


def _remove_empty(folders: list[Path]) -> None:
    for f in folders:
        with contextlib.suppress(OSError):
            f.rmdir()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _temporary_sibling(path: Path, folder: bool) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if folder:
        return _temporary_folder(path.parent, path.name)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=f".partial{path.suffix}", dir=path.parent)
    os.close(fd)
    return Path(tmp)


def _temporary_folder(parent: Path, name: str) -> Path:
    """A hidden ``.NAME.XXXX.partial`` folder in ``parent`` with the usual permissions (mkdtemp makes 0700)."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".partial", dir=parent))
    os.chmod(tmp, 0o777 & ~_umask())
    return tmp


def _renamed(err: OSError, names: dict[str, str]) -> OSError:
    def fix(name):
        if name is None:
            return None
        for old, new in names.items():
            if str(name).startswith(old):
                return new + str(name)[len(old):]
        return name
    if err.filename is None or fix(err.filename) == err.filename:
        return err
    return type(err)(err.errno, err.strerror, fix(err.filename), None, fix(err.filename2))


def _remove(p: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()


@contextlib.contextmanager
def atomic_files(paths: Sequence[str | Path], *, overwrite: bool = False,
                 inputs: Sequence[str | Path] = ()) -> Iterator[list[Path]]:
    """Temporary siblings of ``paths`` (same suffix); renamed onto ``paths`` when the block succeeds.

    All paths are checked first (:func:`check_output_file`, and no two the same)."""
    finals = [check_output_file(p, overwrite=overwrite, inputs=inputs) for p in paths]
    seen: dict[Path, Path] = {}
    for p in finals:
        key = p.absolute()
        if key in seen:
            raise OutputError(f"{p}: the same file is given for two outputs")
        seen[key] = p
    temps: list[Path] = []
    created = sorted({d for p in finals for d in _missing_parents(p)}, key=lambda d: -len(d.parts))
    ok = False
    try:
        for p in finals:
            temps.append(_temporary_sibling(p, folder=False))
        try:
            yield temps
        except OSError as err:  # name the output the user asked for, not its temporary sibling
            raise _renamed(err, {str(t): str(f) for t, f in zip(temps, finals)}) from None
        for tmp, final in zip(temps, finals):
            if not tmp.exists() or tmp.stat().st_size == 0:
                continue  # an optional output that was not written
            if final.exists() and not overwrite:  # appeared meanwhile
                raise OutputError(f"{final}: already exists (use --overwrite to replace it)")
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, final)
        ok = True
    finally:
        for tmp in temps:
            _remove(tmp)
        if not ok:
            _remove_empty(created)


def _fix_paths_in_text_files(folder: Path, old: str, new: str) -> None:
    """Reports written in the temporary folder name it; point them at the final folder."""
    for p in folder.rglob("*"):
        if p.suffix.lower() in (".md", ".txt", ".json", ".html") and p.is_file():
            try:
                text = p.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue
            if old in text:
                p.write_text(text.replace(old, new), encoding="utf-8")


def move_into(source: Path, target: Path) -> list[str]:
    """Move the entries of folder ``source`` into the existing folder ``target``, one by one: a file replaces the
    entry of the same name (``os.replace``, atomic), a subfolder is merged the same way into a subfolder of the
    same name; every other entry of ``target`` is kept.  A symbolic link in ``target`` is replaced, never followed.
    Returns the names moved (``source``'s top-level entries)."""
    names = []
    for entry in sorted(source.iterdir()):
        into = target / entry.name
        names.append(entry.name)
        if entry.is_dir() and not entry.is_symlink():
            if into.is_dir() and not into.is_symlink():
                move_into(entry, into)
                continue
        elif not (into.is_dir() and not into.is_symlink()):
            os.replace(entry, into)  # a file over a file (or nothing): atomic
            continue
        _remove(into)  # a folder where a file was, or the reverse
        os.replace(entry, into)
    return names


@contextlib.contextmanager
def atomic_folder(path: str | Path, *, overwrite: bool = False, inputs: Sequence[str | Path] = (),
                  stale: Sequence[str] = ()) -> Iterator[Path]:
    """A temporary folder to write in; when the block succeeds its content goes to ``path``.

    A new ``path`` is the temporary folder renamed.  An existing one (``overwrite``) keeps what the command did not
    write: each file the command wrote replaces the file of the same name, its subfolders are merged
    (:func:`move_into`).  ``stale``: glob patterns of the command's own outputs of an earlier run that are removed
    when this run did not write them again (e.g. a dataset's part files).  On failure nothing in ``path`` changes."""
    final = check_output_folder(path, overwrite=overwrite, inputs=inputs)
    where = Path(os.path.abspath(final))  # "." and ".." have no name of their own
    exists = where.is_dir()
    created = [] if exists else _missing_parents(where)
    if exists:  # built inside the folder: only the folder itself must be writable, and renames stay on its disk
        tmp = _temporary_folder(where, where.name or "out")
    else:
        where.parent.mkdir(parents=True, exist_ok=True)
        tmp = _temporary_folder(where.parent, where.name)
    ok = False
    try:
        try:
            yield tmp
        except OSError as err:
            raise _renamed(err, {str(tmp): str(final)}) from None
        _fix_paths_in_text_files(tmp, str(tmp), str(final))
        if not exists:
            os.replace(tmp, where)
        else:
            written = set(move_into(tmp, where))
            for pattern in stale:
                for old in where.glob(pattern):
                    if old.name not in written:
                        _remove(old)
        ok = True
    finally:
        _remove(tmp)
        if not ok:
            _remove_empty(created)


def write_atomically(path: str | Path, text: str, *, protect: Sequence[str | Path] = ()) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder (never half-written).

    Refuses to write over any path in ``protect`` (the inputs of the command).
    """
    path = Path(path)
    for p in protect:
        if Path(p).exists() and path.exists() and os.path.samefile(p, path):
            raise ValueError(f"refusing to overwrite the input file {p}")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
