"""The project figure style, checked on the written files: TrueType in PDF, text in SVG, sizes, palette."""

import os
import re
from pathlib import Path

import numpy as np
import pytest

from osim_emb.report import figure_style as fs

ALLOWED = {c.lower() for c in fs.PALETTE + fs.NEUTRALS}


def check_written_figure(stem: Path, width_in: float | None = None) -> None:
    """Assertions shared by every figure test (also used by the CLI/harness tests)."""
    pdf = stem.with_suffix(".pdf").read_bytes() if stem.with_suffix(".pdf").exists() else \
        Path(str(stem) + ".pdf").read_bytes()
    assert b"/Type3" not in pdf, "Type 3 fonts in the PDF"
    assert b"/FontFile2" in pdf, "no embedded TrueType font"
    svg = Path(str(stem) + ".svg").read_text()
    assert "<text" in svg, "SVG text drawn as outlines"
    sizes = [float(s) for s in re.findall(r"font-size: ?([0-9.]+)px", svg)]
    assert sizes and min(sizes) >= fs.MIN_FONT_PT - 1e-9, sizes
    m = re.search(r'<svg[^>]*width="([0-9.]+)pt"', svg)
    if width_in is not None:
        assert abs(float(m.group(1)) / 72 - width_in) < 0.05
    colours = {c.lower() for c in re.findall(r"stroke: ?(#[0-9a-fA-F]{6})", svg)}
    assert colours <= ALLOWED, colours - ALLOWED


@pytest.mark.parametrize("width,inches", [("single", 3.5), ("double", 7.2)])
def test_written_files_follow_the_style(tmp_path, width, inches, monkeypatch):
    import matplotlib
    monkeypatch.setitem(matplotlib.rcParams, "savefig.bbox", "tight")  # as some study scripts set globally
    fig, axes = fs.figure(width, nrows=2)
    x = np.linspace(0, 90, 50)
    for i in range(10):
        axes[0, 0].plot(x, np.sin(np.radians(x)) * i, label=f"muscle {i}", **fs.cue(i))
    axes[1, 0].plot(x, 0 * x, color=fs.color(0), **fs.reference_style("computeMomentArm"))
    axes[1, 0].set_xlabel("elbow flexion (deg)")
    fs.legend_below(fig)
    paths = fs.save(fig, tmp_path / "fig", ("pdf", "svg", "png"))
    assert [p.suffix for p in paths] == [".pdf", ".svg", ".png"]
    check_written_figure(tmp_path / "fig", inches)
    assert not list(tmp_path.glob(".fig*"))  # no temporary files left
    umask = os.umask(0)
    os.umask(umask)
    assert all(p.stat().st_mode & 0o777 == 0o666 & ~umask for p in paths)  # as any new file, not private


def test_colour_and_line_style_pairs_are_unique():
    pairs = {(fs.color(i), str(fs.line_style(i))) for i in range(40)}
    assert len(pairs) == 40


def test_empty_panel_and_small_text_are_refused(tmp_path):
    fig, axes = fs.figure("single", nrows=2)
    axes[0, 0].plot([0, 1], [0, 1])
    with pytest.raises(fs.EmptyPanelError):
        fs.save(fig, tmp_path / "empty", ("png",))
    assert not (tmp_path / "empty.png").exists()
    fig, axes = fs.figure("single")
    axes[0, 0].plot([0, 1], [0, 1])
    axes[0, 0].set_title("tiny", fontsize=5)
    with pytest.raises(ValueError, match="below 7"):
        fs.save(fig, tmp_path / "tiny", ("png",))


def test_flat_curve_gets_a_readable_axis(tmp_path):
    fig, axes = fs.figure("single")
    axes[0, 0].plot([0, 1], [0, 0])
    fs.save(fig, tmp_path / "flat", ("png",), close=False)
    lo, hi = axes[0, 0].get_ylim()
    assert hi - lo > 0.5


def test_text_cut_off_at_the_edge_is_refused(tmp_path):
    fig, axes = fs.figure("single")
    axes[0, 0].plot([0, 1], [0, 1])
    axes[0, 0].text(1.5, 0.5, "far outside the figure", transform=axes[0, 0].transAxes)
    with pytest.raises(ValueError, match="cut off"):
        fs.save(fig, tmp_path / "cut", ("png",))


def test_simulate_plot_follows_the_style(tmp_path, capsys, monkeypatch):
    """simulate --plot (and inverse-dynamics --plot, same writer) draws in the project style."""
    import pandas as pd
    from hostile_models import small_osim
    from matplotlib.image import imread

    from osim_emb.cli.main import main
    import matplotlib

    from osim_emb.cli.common import _plot_table
    monkeypatch.setitem(matplotlib.rcParams, "savefig.bbox", "tight")  # as some study scripts set globally
    model = tmp_path / "small.osim"
    model.write_text(small_osim())
    out = tmp_path / "swing.sto"
    assert main(["simulate", str(model), "-o", str(out), "--t-end", "0.05", "--samples", "5", "--plot", "-q"]) == 0
    height_px, width_px = imread(out.with_suffix(".png")).shape[:2]
    assert abs(width_px / fs.RC["savefig.dpi"] - fs.DOUBLE_COLUMN) < 0.05
    table = pd.DataFrame({"time": np.linspace(0, 1, 20)})
    for i in range(9):
        table[f"coordinate_{i}"] = np.sin(table["time"] * i)
    title = "a model with a long name: inverse dynamics of " + "a_long_motion_file_name_" * 4 + ".sto"
    columns = [c for c in table.columns if c != "time"]
    for fmt in ("pdf", "svg"):
        _plot_table(table, [("", columns, "q (rad)")], tmp_path / f"table.{fmt}", title)
    check_written_figure(tmp_path / "table", fs.DOUBLE_COLUMN)
    for fmt in ("pdf", "svg"):  # moments and forces on their own axes (inverse dynamics)
        _plot_table(table, [("a joint", columns[:6], "moment (N m)"), ("another", columns[6:], "force (N)")],
                    tmp_path / f"panels.{fmt}", title)
    check_written_figure(tmp_path / "panels", fs.DOUBLE_COLUMN)
    # a static optimization's 92 muscles and 23 reserves with OpenSim's long names: small multiples on one page
    names = [f"a_muscle_name_{i}_r" for i in range(92)] + [f"reserve_subtalar_angle_{i}" for i in range(23)]
    big = pd.DataFrame({"time": np.linspace(0, 1, 20), **{c: np.linspace(0, 1, 20) ** (1 + i % 5)
                                                           for i, c in enumerate(names)}})
    panels = [("", names[i:i + 6], "activation") for i in range(0, 92, 6)] + \
        [("actuators", names[92 + i:98 + i], "control") for i in range(0, 23, 6)]
    for fmt in ("pdf", "svg", "png"):  # the reserves named by their coordinates under a panel title, as the command
        _plot_table(big, panels, tmp_path / f"many.{fmt}", title, labels={c: c[8:] for c in names[92:]})
    check_written_figure(tmp_path / "many", fs.DOUBLE_COLUMN)
    assert imread(tmp_path / "many.png").shape[0] / fs.RC["savefig.dpi"] < 10  # inches: one page
    long_names = {c: c * 2 for c in columns}  # 26 characters: fewer panels a row, the names whole
    for fmt in ("pdf", "svg"):
        _plot_table(table, [(str(i), [c], "q (rad)") for i, c in enumerate(columns)], tmp_path / f"long.{fmt}", title,
                    labels=long_names)
    check_written_figure(tmp_path / "long", fs.DOUBLE_COLUMN)


def test_a_plot_of_coordinates_groups_them_by_joint_and_unit(models_dir):
    """Each coordinate once; one unit a panel; a joint's coordinates together where they fit; at most 4 lines."""
    from osim_emb.cli.common import LINES_A_PANEL, coordinate_panels
    from osim_emb.io import load_osim
    model = load_osim(str(models_dir / "leg6dof9musc.osim"))
    joints = {c.name: j.name for j in model.extras["document"].joints for c in j.coordinates}
    kinds = {c.name: c.motion_type for c in model.coordinates}
    panels = coordinate_panels(model, {c: c + "_x" for c in model.coordinate_names}, ("moment (N m)", "force (N)"))
    shown = [c[:-2] for _, cols, _ in panels for c in cols]
    assert shown == model.coordinate_names  # each once, in the table's order
    for title, cols, ylabel in panels:
        names = [c[:-2] for c in cols]
        assert len(cols) <= LINES_A_PANEL and len({kinds[c] for c in names}) == 1
        assert ylabel == ("force (N)" if kinds[names[0]] == "translational" else "moment (N m)")
        assert title.split(", ") == list(dict.fromkeys(joints[c] for c in names))
    for j in set(joints.values()):  # a joint with at most 4 coordinates of one kind: in one panel
        for kind in ("rotational", "translational"):
            mine = [c for c in model.coordinate_names if joints[c] == j and kinds[c] == kind]
            if 0 < len(mine) <= LINES_A_PANEL:
                assert sum(any(c + "_x" in cols for c in mine) for _, cols, _ in panels) == 1


def _panel_with_colorbar():
    fig, axes = fs.figure("single", nrows=2, height=3.2)
    x = np.linspace(0, 90, 40)
    for i in range(3):
        axes[0, 0].plot(x, np.cos(np.radians(x)) * (i + 1), label=f"muscle {i}", **fs.cue(i))
    im = axes[1, 0].imshow(np.arange(12.0).reshape(3, 4), aspect="auto", interpolation="nearest")
    fig.colorbar(im, ax=axes[1, 0]).set_label("log10 difference (m)")
    axes[1, 0].set_xlabel("condition")
    fs.legend_below(fig)
    fig.suptitle("a figure laid out once")
    return fig


def test_one_layout_for_every_format_matches_matplotlibs_own(tmp_path):
    """save lays the figure out once (at savefig.dpi) and freezes it for every format: the PNG is the one
    matplotlib's savefig (which lays out before each format) writes for the same figure, pixel for pixel;
    the figure keeps its layout engine afterwards."""
    import matplotlib
    from PIL import Image
    fig = _panel_with_colorbar()
    engine = fig.get_layout_engine()
    fs.save(fig, tmp_path / "once", ("pdf", "svg", "png"), close=False)
    assert fig.get_layout_engine() is engine
    fs.save(fig, tmp_path / "vector", ("svg",), check=False, close=False)  # no PNG, no check: laid out all the same
    assert fig.get_layout_engine() is engine and "<text" in (tmp_path / "vector.svg").read_text()
    fs.save(fig, tmp_path / "again", ("png",))  # saving again works (layout engine restored)
    plain = _panel_with_colorbar()
    with matplotlib.rc_context({**fs.RC, "savefig.bbox": "standard"}):
        plain.savefig(tmp_path / "plain.png", dpi=fs.RC["savefig.dpi"])
    a, b = (np.asarray(Image.open(tmp_path / f).convert("RGB"), dtype=int) for f in ("once.png", "plain.png"))
    assert a.shape == b.shape
    assert np.abs(a - b).max() == 0
    check_written_figure(tmp_path / "once", 3.5)


def test_figures_written_on_forked_workers_equal_those_written_here(tmp_path):
    """save_all on two processes (figures inherited by fork) writes what save writes, in the items' order."""
    from matplotlib.image import imread

    def figures():
        out = []
        for k in range(3):
            fig, axes = fs.figure("single", height=2.4)
            x = np.linspace(0, 1, 30)
            axes[0, 0].plot(x, x ** (k + 1), label=f"power {k + 1}", **fs.cue(k))
            axes[0, 0].set_xlabel("x (m)")
            fs.legend_below(fig)
            out.append(fig)
        return out
    here = [p for k, fig in enumerate(figures()) for p in fs.save(fig, tmp_path / "here" / f"f{k}", ("png", "svg"))]
    items = [(fig, tmp_path / "forked" / f"f{k}") for k, fig in enumerate(figures())]
    forked = fs.save_all(items, ("png", "svg"), workers=2)
    assert [p.relative_to(tmp_path / "forked") for p in forked] == [p.relative_to(tmp_path / "here") for p in here]
    for a, b in zip(here, forked):
        if a.suffix == ".png":
            assert np.array_equal(imread(a), imread(b))
        else:  # the same drawing; only the date and the clip paths' generated ids differ
            def strip(p):
                return [re.sub(r"\b[a-z][0-9a-f]{10}\b", "ID", ln) for ln in p.read_text().splitlines()
                        if "<dc:date>" not in ln]
            assert strip(a) == strip(b)
