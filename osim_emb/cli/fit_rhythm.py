"""``osim-emb fit-rhythm``: fit a pole-safe two-coordinate shoulder rhythm to measured kinematics."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


FIGURE_FORMATS = ("pdf", "png", "svg")


def cmd_fit_rhythm(args: argparse.Namespace) -> int:
    from osim_emb.io.outputs import atomic_files, check_output_file
    from osim_emb.report.rhythm_figures import plot_fit
    from osim_emb.rhythm.fit import fit, read_rhythm_data
    src = Path(args.data)
    if src.is_dir():
        from osim_emb.rhythm.spartacus import CITATION, read_spartacus
        data = read_spartacus(src)
        data.attrs["source"] = str(src)
        reference = CITATION
    else:
        data = read_rhythm_data(src)
        reference = args.reference or f"fitted to {src.name}"
    out = Path(args.output)
    table_path = out.with_name(out.stem + "_fit.csv")
    check_output_file(out, overwrite=args.overwrite, inputs=[src])
    check_output_file(table_path, overwrite=args.overwrite, inputs=[src])
    figure_stem = Path(args.figures) / f"{out.stem}_surfaces" if args.figures else None
    for fmt in FIGURE_FORMATS if figure_stem else ():
        check_output_file(figure_stem.with_name(f"{figure_stem.name}.{fmt}"), overwrite=args.overwrite, inputs=[src])
    result = fit(data, degree=args.degree, plane_degree=args.plane_degree, weights=args.weights,
                 ridge=args.ridge, name=args.name or out.stem, reference=reference,
                 confirm_degrees=args.confirm_degrees or ())
    text = json.dumps(result.rhythm.to_dict(), indent=1)
    table = result.summary()
    with atomic_files([out, table_path], overwrite=args.overwrite, inputs=[src]) as (tmp_json, tmp_table):
        tmp_json.write_text(text + "\n")
        table.to_csv(tmp_table, float_format="%.4f")
    print(f"wrote {out}: rhythm {result.rhythm.name!r} over {', '.join(result.rhythm.inputs)} "
          f"({data['study'].nunique()} studies)")
    print(table.round(2).to_string())
    if args.figures:
        for p in plot_fit(result, data, figure_stem, formats=FIGURE_FORMATS):
            print(f"wrote {p}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("fit-rhythm", help="fit a two-coordinate shoulder rhythm (pole-safe polynomial surfaces) "
                                          "to measured kinematics and write it as JSON")
    s.add_argument("data", help="a derived table (.csv: study, shoulder, plane_of_elevation_deg, elevation_deg, "
                                "one column per dependent coordinate in degrees) or a Spartacus repository folder")
    s.add_argument("-o", "--output", required=True, help="the rhythm .json (also writes NAME_fit.csv)")
    s.add_argument("--degree", type=int, default=2, help="total polynomial order (default 2: the order leave-one-study-out cross-validation chose on the Spartacus data)")
    s.add_argument("--plane-degree", type=int, default=1, help="highest power of the plane of elevation (default 1)")
    s.add_argument("--weights", choices=("study", "sample"), default="study",
                   help="each study weighs the same (default) or each sample")
    s.add_argument("--ridge", type=float, default=1e-6, help="ridge penalty on the surface coefficients")
    s.add_argument("--name", help="rhythm name (default: the output's stem)")
    s.add_argument("--reference", help="citation stored with the rhythm")
    s.add_argument("--figures", help="folder for the figures of each surface with the data")
    s.add_argument("--confirm-degrees", action="append", metavar="COLUMN",
                   help="a dependent column that is in degrees although every value lies within +-3.2 (such a "
                        "column looks like radians and is refused otherwise); repeat for several")
    s.set_defaults(func=cmd_fit_rhythm)
