"""OpenSim's ScaleTool on opensim-models' pipelines: ``osim-emb scale --setup`` against OpenSim 4.6's ScaleTool on
copies of the same folders.

    python validation/scaling/run.py                 # the files from the opensim-models git mirror (≈ 1 min)
    python validation/scaling/run.py --only Gait2354

Each pipeline's scale setup as committed (Gait2354 and Gait2392: measurements then manual scales, a static trial,
the subject's mass, marker placement with IK tasks; Rajagopal's walking subject, scaling only; Hamner's runner,
whose setup leaves model_file Unassigned for the GUI: the pipeline's model is named in a copy of the setup), the
generic model copied where the setup expects it (and, where the ModelScaler writes no model, ``scaled_only.osim``
named in both copies of the setup). Compared, through OpenSim's API (``osim_emb.opensim.scaling
.compare_models``): the scaled models before marker placement (bodies' mass properties, bodies and markers at 5
random poses, path lengths there, muscles' optimal fibre and tendon slack lengths); the placed markers, both as
placed and with the package's placement at OpenSim's own static pose (its output motion); the static poses' IK
objectives (the package's IK solves OpenSim's problem to convergence, OpenSim's assembler stops at its default
accuracy). Writes ``results/scaling.csv``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
MIRROR = Path("/work/.mirror/opensim-org+opensim-models/repo")

#: (name, pipeline folder, setup inside it, generic model in the repository, where the setup expects it (relative to
#: the setup's folder), the model_file to write into a copy of the setup, or None to keep it)
CASES = [
    ("Gait2354", "Pipelines/Gait2354_Simbody", "subject01_Setup_Scale.xml",
     "Models/Gait2354_Simbody/gait2354_simbody.osim", "gait2354_simbody.osim", None),
    ("Gait2392", "Pipelines/Gait2392_Simbody", "subject01_Setup_Scale.xml",
     "Models/Gait2392_Simbody/gait2392_thelen2003muscle.osim", "gait2392_simbody.osim", None),
    ("Rajagopal_walk", "Pipelines/Rajagopal", "Scale/scale_setup_walk_scaleOnly.xml",
     "Models/Rajagopal/Rajagopal2016.osim", "../generic_unscaled.osim", None),
    ("Hamner_run", "Pipelines/Hamner", "Setup_Scale.xml", "Pipelines/Hamner/FullBodyModel_Hamner2010_v2_0.osim",
     "FullBodyModel_Hamner2010_v2_0.osim", "FullBodyModel_Hamner2010_v2_0.osim"),
]


def git_files(prefix: str) -> list[str]:
    out = subprocess.run(["git", "-C", str(MIRROR), "ls-tree", "-r", "--name-only", "HEAD", prefix],
                         capture_output=True, text=True, check=True).stdout.split()
    return [f for f in out if "OutputReference" not in f and "/Results" not in f and not f.endswith((".sto", ".mat",
                                                                                                    ".anc"))]


def copy_case(case, dest: Path) -> Path:
    """The pipeline folder (without results) and the generic model in ``dest``; returns the setup's path."""
    name, folder, setup, model, target, model_file = case
    for f in git_files(folder):
        data = subprocess.run(["git", "-C", str(MIRROR), "show", f"HEAD:{f}"], capture_output=True, check=True).stdout
        out = dest / Path(f).relative_to(folder)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
    setup_path = dest / setup
    model_data = subprocess.run(["git", "-C", str(MIRROR), "show", f"HEAD:{model}"], capture_output=True,
                                check=True).stdout
    (setup_path.parent / target).resolve().write_bytes(model_data)
    from lxml import etree
    tree = etree.parse(str(setup_path))
    if model_file is not None:
        tree.find(".//GenericModelMaker/model_file").text = model_file
    scaler_output = tree.find(".//ModelScaler/output_model_file")
    if scaler_output is not None and (scaler_output.text or "").strip() in ("", "Unassigned"):
        scaler_output.text = "scaled_only.osim"  # so that the scaled model (before placement) is compared too
    tree.write(str(setup_path), xml_declaration=True, encoding="UTF-8")
    return setup_path


def static_pose_objective(setup_path: Path, scaled: Path, pose_file: Path | None):
    """(the package's static pose and its IK objective, OpenSim's pose's objective in the same problem, max |Δq|
    in degrees); None without a pose file."""
    from osim_emb.cli.inverse_kinematics import _coordinate_references
    from osim_emb.io.markers import read_trc
    from osim_emb.io.tool_setup import read_scale_setup
    from osim_emb.opensim.static_optimization import read_storage
    from osim_emb.simulation.scaling import model_from_text, place_markers
    setup = read_scale_setup(setup_path)
    placer = setup.placer
    if placer is None or not placer.apply or pose_file is None or not pose_file.exists():
        return None
    text = scaled.read_text()
    model = model_from_text(text)
    trial = read_trc(placer.markers)
    t0 = placer.time_range[0] if placer.time_range else float(trial.times[0])
    refs = _coordinate_references(model, placer, np.array([max(t0, float(trial.times[0]))]))
    pose = read_storage(pose_file)
    columns = {c.split("/")[-2]: c for c in pose.columns if c.endswith("/value")}
    q_os = np.array([pose[columns[n]].iloc[0] for n in model.coordinate_names])
    ours = place_markers(text, trial, weights=placer.marker_weights, coordinate_references=refs,
                         time_range=placer.time_range)
    theirs = place_markers(text, trial, weights=placer.marker_weights, coordinate_references=refs,
                           time_range=placer.time_range, q=q_os)
    return ours, theirs, float(np.degrees(np.abs(ours.q - q_os)).max())


def study(case) -> dict:
    import opensim as osim
    from osim_emb.cli.main import main as cli
    from osim_emb.io.tool_setup import read_scale_setup
    from osim_emb.opensim.scaling import compare_models, opensim_scale_tool
    name = case[0]
    row: dict = {"pipeline": name}
    with tempfile.TemporaryDirectory() as scratch:
        ours_setup = copy_case(case, Path(scratch) / "ours")
        theirs_setup = copy_case(case, Path(scratch) / "theirs")
        setup = read_scale_setup(ours_setup)
        row["seconds_opensim"] = opensim_scale_tool(theirs_setup)
        t0 = time.perf_counter()
        assert cli(["scale", "--setup", str(ours_setup), "--quiet", "--overwrite"]) == 0  # some folders hold outputs
        row["seconds_package"] = time.perf_counter() - t0
        rel = lambda p: Path(p).relative_to(ours_setup.parent) if p is not None else None  # noqa: E731
        scaled = rel(setup.output_model)
        model = osim.Model(str(ours_setup.parent / scaled)) if scaled else None
        row["bodies"] = model.getBodySet().getSize() if model is not None else 0
        if scaled is not None:
            d = compare_models(ours_setup.parent / scaled, theirs_setup.parent / scaled)
            row.update({f"scaled_{k}": v for k, v in d.items()})
        placer = setup.placer
        if placer is not None and placer.apply and placer.output_model is not None and scaled is not None:
            placed = rel(placer.output_model)
            d = compare_models(ours_setup.parent / placed, theirs_setup.parent / placed)
            row["placed_markers_as_placed_m"] = d["marker"]
            pose = rel(placer.output_motion)
            objectives = static_pose_objective(ours_setup, ours_setup.parent / scaled,
                                               theirs_setup.parent / pose if pose else None)
            if objectives is not None:
                ours, theirs, dq = objectives
                m = osim.Model(str(theirs_setup.parent / placed))
                row["placed_at_opensim_pose_m"] = max(
                    float(np.abs(np.array([m.getMarkerSet().get(n).get_location().get(k) for k in range(3)])
                                 - loc).max()) for n, loc in theirs.moved.items())
                row["ik_objective_package"] = float(ours.inverse_kinematics.objective[0])
                row["ik_objective_opensim_pose"] = float(theirs.inverse_kinematics.objective[0])
                row["ik_objective_opensim_over_package"] = row["ik_objective_opensim_pose"] / row["ik_objective_package"]
                row["static_pose_max_diff_deg"] = dq
                row["markers_placed"] = len(ours.moved)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="")
    ap.add_argument("--out", type=Path, default=HERE / "results")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    for case in CASES:
        if args.only and args.only not in case[0]:
            continue
        try:
            rows.append(study(case))
        except Exception as err:  # noqa: BLE001 - reported in the table
            rows.append({"pipeline": case[0], "error": f"{type(err).__name__}: {err}"[:300]})
        print(pd.Series(rows[-1]).to_string(), flush=True)
    table = pd.DataFrame(rows)
    table.to_csv(args.out / "scaling.csv", index=False, float_format="%.4g")
    return 0


if __name__ == "__main__":
    sys.exit(main())
