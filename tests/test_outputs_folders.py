"""Output folders and files of the commands (docs/cli.md, "Outputs are all-or-nothing"): --overwrite replaces
only what a command writes, folders follow the umask, SIGTERM cleans up as Ctrl-C does, -o x.csv writes a CSV,
and errors are plain sentences."""

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from hostile_models import run_cli, small_model_file

from osim_emb.cli.main import error_message
from osim_emb.io.motion import read_motion, write_motion
from osim_emb.io.outputs import OutputError, atomic_folder, move_into

REPO_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def model(tmp_path):
    return small_model_file(tmp_path)


_run = run_cli


def _unrelated(folder: Path) -> None:
    """A user's files in an output folder: one beside the outputs, one in a subfolder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "thesis.tex").write_text("keep me")
    (folder / "mydata").mkdir()
    (folder / "mydata" / "trial.trc").write_text("keep me too")


def _assert_unrelated_kept(folder: Path) -> None:
    assert (folder / "thesis.tex").read_text() == "keep me"
    assert (folder / "mydata" / "trial.trc").read_text() == "keep me too"


def _no_partial(folder: Path) -> None:
    assert not [p for p in folder.rglob("*") if ".partial" in p.name]


# -- atomic_folder ------------------------------------------------------------------------------------

def test_overwrite_keeps_what_the_command_does_not_write(tmp_path):
    out = tmp_path / "out"
    _unrelated(out)
    (out / "table.csv").write_text("old")
    (out / "figures").mkdir()
    (out / "figures" / "mine.png").write_text("a user's figure")
    (out / "figures" / "a.png").write_text("old a")
    with pytest.raises(OutputError, match="not empty .*--overwrite"):
        with atomic_folder(out):
            pass
    with atomic_folder(out, overwrite=True) as tmp:
        (tmp / "table.csv").write_text("new")
        (tmp / "figures").mkdir()
        (tmp / "figures" / "a.png").write_text("new a")
    _assert_unrelated_kept(out)
    assert (out / "table.csv").read_text() == "new"
    assert (out / "figures" / "a.png").read_text() == "new a"
    assert (out / "figures" / "mine.png").read_text() == "a user's figure"  # subfolders are merged
    _no_partial(tmp_path)


def test_failure_changes_nothing_in_an_existing_folder(tmp_path):
    out = tmp_path / "out"
    _unrelated(out)
    (out / "table.csv").write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_folder(out, overwrite=True) as tmp:
            (tmp / "table.csv").write_text("half")
            raise RuntimeError("failed")
    _assert_unrelated_kept(out)
    assert (out / "table.csv").read_text() == "old"
    _no_partial(tmp_path)


def test_stale_outputs_of_an_earlier_run_are_removed(tmp_path):
    out = tmp_path / "data"
    _unrelated(out)
    for k in range(3):
        (out / f"part-{k:05d}.parquet").write_text("old")
    with atomic_folder(out, overwrite=True, stale=("part-*.parquet",)) as tmp:
        (tmp / "part-00000.parquet").write_text("new")
    assert sorted(p.name for p in out.glob("part-*")) == ["part-00000.parquet"]
    assert (out / "part-00000.parquet").read_text() == "new"
    _assert_unrelated_kept(out)


def test_move_into_replaces_a_link_without_following_it(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    src, dst = tmp_path / "src", tmp_path / "dst"
    src.mkdir()
    dst.mkdir()
    (src / "a.txt").write_text("new")
    (dst / "a.txt").symlink_to(victim)
    assert move_into(src, dst) == ["a.txt"]
    assert victim.read_text() == "untouched" and not (dst / "a.txt").is_symlink()
    assert (dst / "a.txt").read_text() == "new"


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_folders_follow_the_umask(tmp_path, umask):
    old = os.umask(umask)
    try:
        new = tmp_path / "parent" / "new"
        with atomic_folder(new) as tmp:
            (tmp / "sub").mkdir()
            (tmp / "t.csv").write_text("x")
        existing = tmp_path / "existing"
        existing.mkdir()
        (existing / "keep").write_text("x")
        with atomic_folder(existing, overwrite=True) as tmp:
            (tmp / "sub").mkdir()
    finally:
        os.umask(old)
    expected = 0o777 & ~umask
    for folder in (tmp_path / "parent", new, new / "sub", existing, existing / "sub"):
        assert folder.stat().st_mode & 0o777 == expected, folder


def test_the_current_folder_as_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("x")
    with atomic_folder(".", overwrite=True) as tmp:
        (tmp / "table.csv").write_text("new")
    assert (tmp_path / "table.csv").read_text() == "new" and (tmp_path / "keep.txt").read_text() == "x"
    _no_partial(tmp_path)


# -- the commands -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["moment-arms", "plot"])
def test_overwrite_keeps_unrelated_files_and_the_working_folder(model, tmp_path, capsys, monkeypatch, command):
    out = tmp_path / "x"
    _unrelated(out)
    monkeypatch.chdir(out / "mydata")  # the working folder inside the output folder survives as well
    argv = [command, model, "--sweep", "elbow", "--step", "30", "--references", "none", "--out", out,
            "--formats", "png", "-q"]
    code, _, err = _run(capsys, *argv)
    assert code == 2 and "--overwrite" in err
    code, _, err = _run(capsys, *argv, "--overwrite")
    assert code == 0, err
    written = {p.name for p in out.iterdir()} - {"thesis.tex", "mydata"}
    assert any(n.endswith(".png") for n in written)
    _assert_unrelated_kept(out)
    _no_partial(tmp_path)
    for p in out.iterdir():
        if p.suffix == ".png":
            p.write_text("stale")
    assert _run(capsys, *argv, "--overwrite")[0] == 0
    assert all(p.read_bytes() != b"stale" for p in out.iterdir() if p.suffix == ".png")  # outputs updated
    _assert_unrelated_kept(out)


def test_out_dot_and_unknown_sweep_are_plain_messages(model, tmp_path, capsys, monkeypatch):
    here = tmp_path / "here"
    here.mkdir()
    (here / "keep.txt").write_text("x")
    monkeypatch.chdir(here)
    argv = ["moment-arms", model, "--step", "30", "--references", "none", "--formats", "png", "-q"]
    code, _, err = _run(capsys, *argv, "--sweep", "elbow", "--out", ".", "--overwrite")
    assert code == 0 and "PosixPath" not in err, err
    assert (here / "keep.txt").read_text() == "x" and any(p.suffix == ".png" for p in here.iterdir())
    code, _, err = _run(capsys, *argv, "--sweep", "nosuch", "--out", tmp_path / "o")
    assert code == 2 and not (tmp_path / "o").exists()
    assert "no coordinate named 'nosuch' to sweep (--sweep)" in err
    assert "['" not in err and "\"" not in err and "missing or unknown name" not in err


def test_key_error_sentences_are_printed_plainly():
    import argparse
    args = argparse.Namespace(model="m.osim")
    assert error_message(KeyError("no body named 'x'"), args) == "m.osim: no body named 'x'"
    assert error_message(KeyError("x"), args) == "m.osim: missing or unknown name 'x'"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_removes_the_temporary_folder(tmp_path):
    """A command sent SIGTERM (kill, timeout) stops as with Ctrl-C: no .partial folder is left, exit 143."""
    script = textwrap.dedent("""
        import sys, time
        import osim_emb.cli.moment_arms as moment_arms
        from osim_emb.cli.main import main
        from osim_emb.io.outputs import atomic_folder

        def slow(args):
            with atomic_folder(args.out, overwrite=args.overwrite) as tmp:
                (tmp / "table.csv").write_text("half")
                print("ready", flush=True)
                time.sleep(60)
            return 0

        moment_arms.cmd_moment_arms = slow
        sys.exit(main(["moment-arms", "m.osim", "--sweep", "q", "--out", sys.argv[1]]))
    """)
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-c", script, str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path, env=env)
    try:
        assert proc.stdout.readline().strip() == "ready"
        assert [p.name for p in tmp_path.iterdir() if ".partial" in p.name]  # the temporary exists meanwhile
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err
    assert "terminated (SIGTERM); no output was written or replaced" in err and "Traceback" not in err
    assert not out.exists()
    _no_partial(tmp_path)


# -- motion tables ---------------------------------------------------------------------------------------

def test_write_motion_csv_is_a_plain_table(tmp_path):
    table = pd.DataFrame({"time": [0.0, 0.1], "elbow": [10.0, 20.0]})
    write_motion(tmp_path / "m.csv", table, in_degrees=True)
    text = (tmp_path / "m.csv").read_text()
    assert text.splitlines()[0] == "time,elbow" and "endheader" not in text and "\t" not in text
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "m.csv"), table, check_dtype=False)


def test_simulate_to_csv_writes_a_csv(model, tmp_path, capsys):
    sto, csv = tmp_path / "s.sto", tmp_path / "s.csv"
    for out in (sto, csv):
        code, _, err = _run(capsys, "simulate", model, "-o", out, "--t-end", "0.02", "--samples", "5", "-q")
        assert code == 0, err
    text = csv.read_text()
    assert "endheader" not in text and "\t" not in text
    from_csv = pd.read_csv(csv)
    from_sto, _ = read_motion(sto)
    assert list(from_csv.columns) == list(from_sto.columns)
    pd.testing.assert_frame_equal(from_csv, from_sto, check_dtype=False, check_exact=False, rtol=1e-10)
    _no_partial(tmp_path)
