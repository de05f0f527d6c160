"""validation/rerun.py: a study re-run into a scratch folder, and the comparison that must see a change above the
tolerance and accept one below it."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
VALIDATION = ROOT / "validation"


@pytest.fixture(scope="module")
def rerun():
    spec = importlib.util.spec_from_file_location("validation_rerun", VALIDATION / "rerun.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def _perturb(src: Path, dst: Path, column: str, row: int, relative: float) -> None:
    """Copy a committed CSV, scaling one cell by (1 + relative), written with 17 significant digits."""
    t = pd.read_csv(src)
    t[column] = t[column].astype(float)
    t.loc[row, column] *= 1.0 + relative
    t.to_csv(dst, index=False, float_format="%.17g")


def test_detects_a_change_above_the_tolerance_and_accepts_one_below(rerun, tmp_path):
    committed = VALIDATION / "linkages" / "results" / "four_bar_point_p.csv"
    column = pd.read_csv(committed).columns[1]
    for relative, expected in ((1e-6, "changed"), (1e-7, "changed"), (1e-12, "same"), (0.0, "same")):
        new = tmp_path / f"p_{relative:g}.csv"
        _perturb(committed, new, column, 5, relative)
        res = rerun.compare_file(committed, new, "results/four_bar_point_p.csv")
        assert res.status == expected, (relative, res)
        if expected == "changed":
            assert res.worst == pytest.approx(relative, rel=1e-3)
            assert "row 5" in res.notes[-1]
    # a study rule loosens a column, with its reason in the notes
    new = tmp_path / "loose.csv"
    _perturb(committed, new, column, 5, 1e-4)
    res = rerun.compare_file(committed, new, "results/four_bar_point_p.csv",
                             (rerun.Rule("results/*.csv", column, rtol=1e-3, reason="looser: a test"),))
    assert res.status == "same" and res.loosened and "looser" in res.notes[0]


def test_shape_text_and_header_changes(rerun, tmp_path):
    old = pd.DataFrame({"case": ["a", "b"], "x": ["1.0", "2.0"]})
    assert rerun.compare_frames(old, old.iloc[:1], "t.csv").status == "changed"  # a row less
    assert rerun.compare_frames(old, old.rename(columns={"x": "y"}), "t.csv").status == "changed"
    assert rerun.compare_frames(old, old.assign(case=["a", "c"]), "t.csv").status == "changed"
    assert rerun.compare_frames(old, old.assign(x=["1.0", "nan"]), "t.csv").status == "changed"
    # rows matched on keys: a new order is no change, a new row is, and the common rows are still compared
    assert rerun.compare_frames(old, old.iloc[::-1], "t.csv", keys=("case",)).status == "same"
    longer = pd.concat([old, pd.DataFrame({"case": ["z"], "x": ["3.0"]})], ignore_index=True)
    res = rerun.compare_frames(old, longer, "t.csv", keys=("case",))
    assert res.status == "changed" and "1 rows new only" in res.notes[0]
    assert rerun.compare_frames(old, old.assign(x=["1.0", "2.5"]).iloc[::-1], "t.csv", keys=("case",)).worst > 0.1
    ignored = rerun.compare_frames(old, old.assign(x=["5", "6"]), "t.csv", (rerun.Rule("*", "x", ignore=True,
                                                                                        reason="timing"),))
    assert ignored.status == "same" and "timing" in ignored.notes[0]
    sto = "name\nversion=1\nendheader\ntime\tq\n0\t{}\n0.1\t2\n"
    (tmp_path / "a.sto").write_text(sto.format("1.0"))
    (tmp_path / "b.sto").write_text(sto.format("1.0000001"))
    assert rerun.compare_file(tmp_path / "a.sto", tmp_path / "b.sto", "a.sto").status == "changed"
    (tmp_path / "c.txt").write_text("grid, 400 configurations, 4.6 s\n")
    (tmp_path / "d.txt").write_text("grid, 400 configurations, 9.1 s\n")
    assert rerun.compare_file(tmp_path / "c.txt", tmp_path / "d.txt", "c.txt").status == "changed"
    rule = rerun.Rule("c.txt", "number_1", ignore=True, reason="a wall time")
    assert rerun.compare_file(tmp_path / "c.txt", tmp_path / "d.txt", "c.txt", (rule,)).status == "same"


def test_compare_only_reports_a_changed_table_and_a_missing_figure(rerun, tmp_path):
    study = "stale_cache"
    out = tmp_path / study / "results"
    shutil.copytree(VALIDATION / study / "results", out)
    report = tmp_path / "report.md"
    assert rerun.main(["--studies", study, "--compare-only", str(tmp_path), "--report", str(report)]) == 0
    assert "| stale_cache | 2 | 0 | same |" in report.read_text()

    table = sorted(out.glob("*.csv"))[0]
    t = pd.read_csv(table)
    col = t.select_dtypes("number").columns[-1]
    t.loc[0, col] = t.loc[0, col] * (1 + 1e-3) + 1e-3
    t.to_csv(table, index=False, float_format="%.17g")
    figure = sorted(out.glob("*.png"))[0]
    figure.unlink()
    assert rerun.main(["--studies", study, "--compare-only", str(tmp_path), "--report", str(report)]) == 1
    text = report.read_text()
    assert "| CHANGED |" in text and f"results/{table.name}" in text and f"results/{figure.name}" in text
    assert "missing" in text and "commit" in text


def test_reruns_one_script_into_a_scratch_folder(rerun, tmp_path):
    """newton_euler/notebook_vs_equation.py (~6 s of CPU) re-run: its two tables equal the committed ones (under
    the study's rules); the committed results are left alone."""
    committed = VALIDATION / "newton_euler" / "results"
    before = {p.name: p.stat().st_mtime_ns for p in committed.iterdir()}
    full = next(s for s in rerun.STUDIES if s.name == "newton_euler")
    one = rerun.Study("newton_euler", (("notebook_vs_equation.py", "--out", "{results}"),), 10, rules=full.rules)
    res = rerun.check_study(one, tmp_path / "newton_euler", run=True, timeout=600)
    by_file = {f.file: f for f in res.files}
    for name in ("results/notebook_vs_equation.csv", "results/notebook_vs_equation_series.csv"):
        assert by_file[name].status == "same", by_file[name]
    assert by_file["results/foot_shank_opensim.csv"].status == "missing"  # written by another script of the study
    assert (tmp_path / "newton_euler" / "results" / "notebook_vs_equation.png").is_file()
    assert {p.name: p.stat().st_mtime_ns for p in committed.iterdir()} == before


def test_a_table_of_a_script_not_rerun_is_ignored_with_its_reason_not_missing(rerun, tmp_path):
    """smooth_paths' corpus tables come from corpus.py, which the re-run leaves out: with the other tables present,
    they are listed as ignored (with the rule's reason); another table absent is still missing."""
    study = "smooth_paths"
    out = tmp_path / study / "results"
    shutil.copytree(VALIDATION / study / "results", out)
    shutil.rmtree(out / "corpus")
    report = tmp_path / "report.md"
    assert rerun.main(["--studies", study, "--compare-only", str(tmp_path), "--report", str(report)]) == 0
    text = report.read_text()
    assert "results/corpus/corpus.csv | ignored" in text and "needs the model corpus" in text
    (out / "hint_sides.csv").unlink()
    assert rerun.main(["--studies", study, "--compare-only", str(tmp_path), "--report", str(report)]) == 1
    assert "results/hint_sides.csv | missing" in report.read_text()
