"""osim-emb batch: moment-arm sweeps of perturbed model variants on a local Dask cluster."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("dask.distributed")
pytest.importorskip("pyarrow")


def test_perturbation_moves_fixed_points_within_the_tolerance(models_dir):
    from osim_emb import load_osim
    from osim_emb.opensim.batch import perturb_attachments
    model = load_osim(str(models_dir / "arm26.osim"))
    var = perturb_attachments(model, np.random.default_rng(3), 0.002)
    d = np.array([np.asarray(p.location) - np.asarray(o.location)
                  for m, v in zip(model.muscles, var.muscles) for o, p in zip(m.points, v.points)])
    assert np.abs(d).max() <= 0.002 and np.abs(d).max() > 0.001 and np.all(np.abs(d).min(axis=1) > 0)
    again = perturb_attachments(model, np.random.default_rng(3), 0.002)
    assert all(np.array_equal(a.location, b.location) for m, v in zip(var.muscles, again.muscles)
               for a, b in zip(m.points, v.points))  # seeded: reproducible


def test_batch_cli_on_a_local_cluster(models_dir, tmp_path):
    from osim_emb import load_osim
    from osim_emb.opensim.batch import perturb_attachments
    from osim_emb.cli.main import main
    from osim_emb.paths.geometry import lengths_and_moment_arms
    out = tmp_path / "arm26_variants.parquet"
    model_path = models_dir / "arm26.osim"
    rc = main(["batch", str(model_path), "--variants", "3", "--tolerance-mm", "2", "--sweep", "r_elbow_flex",
               "--step", "30", "--seed", "7", "-o", str(out), "--workers", "2", "--quiet"])
    assert rc == 0
    table = pd.read_parquet(out)
    model = load_osim(str(model_path))
    assert set(table.model) == {"arm26_v0000", "arm26_v0001", "arm26_v0002"}
    n_poses = table.swept_value_deg_or_mm.nunique()
    assert len(table) == 3 * len(model.muscles) * n_poses
    assert {"moment_arm_m", "length_m", "swept_value_deg_or_mm"} <= set(table.columns)
    # variant 1 is seed 7 + 1: the same numbers as perturbing here and sweeping directly
    var = perturb_attachments(model, np.random.default_rng(8), 0.002)
    rows = table[table.model == "arm26_v0001"].sort_values(["muscle", "swept_value_deg_or_mm"])
    q = np.zeros((n_poses, model.n_q))
    k = model.coordinate_index("r_elbow_flex")
    q[:, k] = np.radians(np.sort(rows.swept_value_deg_or_mm.unique()))
    length, r = lengths_and_moment_arms(var, q)
    for mi, m in enumerate(model.muscles):
        got = rows[rows.muscle == m.name]
        assert np.allclose(got.moment_arm_m.to_numpy(), r[:, k, mi], rtol=0, atol=1e-14)
        assert np.allclose(got.length_m.to_numpy(), length[:, mi], rtol=0, atol=1e-14)
    # the variants differ from the nominal model by millimetres, not more
    _, r0 = lengths_and_moment_arms(model, q)
    assert 1e-5 < np.abs(r - r0).max() < 0.01
    # not overwritten without --overwrite; names and the input checked before the cluster starts
    assert main(["batch", str(model_path), "--variants", "1", "--sweep", "r_elbow_flex", "-o", str(out),
                 "--quiet"]) == 2
    assert main(["batch", str(model_path), "--variants", "1", "--sweep", "no_such", "-o", str(tmp_path / "n"),
                 "--quiet"]) == 2 and not (tmp_path / "n").exists()
    assert main(["batch", str(models_dir), "--sweep", "r_elbow_flex", "-o", str(models_dir), "--overwrite",
                 "--quiet"]) == 2
    (out / "notes.txt").write_text("a user's notes")  # --overwrite replaces the dataset's files, keeps these
    (out / "mine").mkdir()
    (out / "mine" / "x.csv").write_text("kept")
    assert main(["batch", str(model_path), "--variants", "1", "--sweep", "r_elbow_flex", "--step", "45", "-o",
                 str(out), "--workers", "1", "--quiet", "--overwrite"]) == 0
    parts = sorted(out.glob("part-*.parquet"))  # the earlier run's 3 part files are gone
    assert len(parts) == 1 and set(pd.read_parquet(parts[0]).model) == {"arm26_v0000"}
    assert (out / "notes.txt").read_text() == "a user's notes" and (out / "mine" / "x.csv").read_text() == "kept"
    assert out.stat().st_mode & 0o777 == 0o777 & ~_umask()
    assert not [p for p in tmp_path.rglob("*") if ".partial" in p.name]  # no temporaries left


def test_a_local_cluster_finds_the_kernels_compiled(models_dir, tmp_path, monkeypatch):
    """Before a local cluster starts, the sweep's kernels are compiled once in this process (its workers share the
    machine's numba cache, where each would otherwise compile them at once); a remote scheduler's workers, or a
    single worker, do not need it; nothing is done when the cache holds the kernels."""
    import osim_emb.core._accel as accel
    import osim_emb.opensim.batch as batch
    from osim_emb.opensim.batch import model_tasks, run_batch
    events = []

    class Stop(Exception):
        pass

    def client(scheduler, n_workers, threads):
        events.append(("cluster", scheduler, n_workers))
        raise Stop
    monkeypatch.setattr(batch, "_client", client)
    real = batch._compile_before_the_workers

    def compile_once(model, muscles, compat):
        events.append(("compiled", real(model, muscles, compat)))
    monkeypatch.setattr(batch, "_compile_before_the_workers", compile_once)
    tasks = model_tasks(models_dir / "arm26.osim")
    for scheduler, workers, expected in ((None, 2, ["compiled", "cluster"]), ("tcp://10.0.0.1:8786", 2, ["cluster"]),
                                         (None, 1, ["cluster"])):
        events.clear()
        with pytest.raises(Stop):
            run_batch(tasks, ["r_elbow_flex"], 30.0, tmp_path / "out", scheduler=scheduler, n_workers=workers,
                      progress=False)
        assert [e[0] for e in events] == expected
    # the kernels in numba's cache or in this process: nothing compiled; as if freshly installed: one configuration
    events.clear()
    with pytest.raises(Stop):
        run_batch(tasks, ["r_elbow_flex"], 30.0, tmp_path / "out", n_workers=2, progress=False)
    assert events[0] == ("compiled", False)
    calls = []
    monkeypatch.setattr(accel, "compiles_at_first_call", lambda k: True)
    import osim_emb.paths.geometry as geometry
    monkeypatch.setattr(geometry, "lengths_and_moment_arms", lambda *a, **k: calls.append(a[1].shape))
    events.clear()
    with pytest.raises(Stop):
        run_batch(tasks, ["r_elbow_flex"], 30.0, tmp_path / "out", n_workers=2, progress=False)
    assert events[0] == ("compiled", True) and calls == [(1, 2)]  # one configuration of arm26's two coordinates
    assert not (tmp_path / "out").exists()


def test_batch_of_a_folder_with_opensim_references(osim, models_dir, tmp_path):
    import shutil
    from osim_emb.cli.main import main
    folder = tmp_path / "cohort"
    folder.mkdir()
    shutil.copy(models_dir / "arm26.osim", folder / "subject01.osim")
    out = tmp_path / "cohort.parquet"
    assert main(["batch", str(folder), "--sweep", "r_elbow_flex", "--step", "40", "--references", "computeMomentArm",
                 "-o", str(out), "--workers", "1", "--quiet"]) == 0
    table = pd.read_parquet(out)
    assert set(table.model) == {"subject01"} and (table.variant == -1).all()
    diff = (table.moment_arm_m - table.opensim_computeMomentArm_m).abs().max()
    print(f"[agreement] batch with OpenSim's computeMomentArm on arm26: {diff:.1e} m")
    assert diff < 1e-10


def test_a_failing_model_is_named_and_keep_going_lists_it(models_dir, tmp_path, capsys):
    import shutil
    from osim_emb.cli.main import main
    folder = tmp_path / "cohort"
    folder.mkdir()
    shutil.copy(models_dir / "arm26.osim", folder / "subject01.osim")
    (folder / "subject02.osim").write_text("<OpenSimDocument Version='40000'><Model name='x'>")
    out = tmp_path / "cohort.parquet"
    args = ["batch", str(folder), "--sweep", "r_elbow_flex", "--step", "60", "-o", str(out), "--workers", "1",
            "--quiet"]
    assert main(args) == 2  # stops, names the model, writes nothing
    err = capsys.readouterr().err
    assert "subject02" in err and "malformed XML" in err and "Traceback" not in err
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(out.name + ".")]
    assert main(args + ["--keep-going"]) == 1
    err = capsys.readouterr().err
    assert "1 of 2 models failed" in err and "Traceback" not in err
    assert set(pd.read_parquet(out).model) == {"subject01"}
    failures = pd.read_csv(out / "_failures.csv")
    assert failures.model.tolist() == ["subject02"] and "malformed XML" in failures.error[0]


def test_options_are_checked_before_any_work(models_dir, tmp_path, capsys):
    from osim_emb.cli.main import main
    out = tmp_path / "x.parquet"
    assert main(["batch", str(models_dir / "arm26.osim"), "--sweep", "r_elbow_flex", "--references", "none",
                 "-o", str(out), "--quiet"]) == 2
    assert "unknown reference(s) none" in capsys.readouterr().err and not out.exists()
    assert main(["batch", str(models_dir / "arm26.osim"), "--variants", "2", "--sweep", "r_elbow_flex",
                 "--references", "computeMomentArm", "-o", str(out), "--quiet"]) == 2
    assert "not for perturbed variants" in capsys.readouterr().err


def test_lenient_batch_imports_what_it_can_and_says_what_it_left_out(models_dir, tmp_path, capsys):
    """A cohort whose models have an element the package does not take (a RollingOnSurfaceConstraint): the batch
    stops naming it (exit 2, nothing written); with --lenient it runs every model, names what it left out of the
    first, and lists every model's omissions in OUTPUT/_left_out.csv (the second model has one more)."""
    from osim_emb.cli.main import main
    folder = tmp_path / "cohort"
    folder.mkdir()
    text = (models_dir / "arm26.osim").read_text()
    start = text.index("<objects />", text.index("<ConstraintSet"))
    text = (text[:start] + '<objects><RollingOnSurfaceConstraint name="roll"/></objects>'
            + text[start + len("<objects />"):])
    (folder / "subject01.osim").write_text(text)
    (folder / "subject02.osim").write_text(text.replace('<RollingOnSurfaceConstraint name="roll"/>',
                                                        '<RollingOnSurfaceConstraint name="roll"/>'
                                                        '<RollingOnSurfaceConstraint name="roll_too"/>'))
    out = tmp_path / "cohort.parquet"
    args = ["batch", str(folder), "--sweep", "r_elbow_flex", "--step", "60", "-o", str(out), "--workers", "1",
            "--quiet"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "RollingOnSurfaceConstraint" in err and "Traceback" not in err and not out.exists()
    assert main([a for a in args if a != "--quiet"] + ["--lenient"]) == 0  # (--quiet hides warnings)
    err = capsys.readouterr().err
    assert "left out constraint 'roll'" in err and "2 of the 2 models were imported leniently" in err
    assert set(pd.read_parquet(out).model) == {"subject01", "subject02"}
    left_out = pd.read_csv(out / "_left_out.csv")
    assert list(zip(left_out.model, left_out.name)) == [("subject01", "roll"), ("subject02", "roll"),
                                                        ("subject02", "roll_too")]
    assert (left_out.kind == "constraint").all() and left_out.reason.str.contains("RollingOnSurface").all()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
