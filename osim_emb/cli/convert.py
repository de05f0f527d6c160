"""``osim-emb convert``: convert an .osim file to the package's JSON model format, or to an OpenSim 4 .osim."""

from __future__ import annotations

import argparse
from pathlib import Path

from osim_emb.cli.common import _load_any, add_lenient_option


def cmd_convert(args: argparse.Namespace) -> int:
    from osim_emb.io.outputs import atomic_files
    out = args.output or str(Path(args.model).with_suffix("")) + ".emb.json"
    suffix = Path(out).suffix.lower()
    if suffix not in (".json", ".osim"):
        raise ValueError(f"{out}: the output must end in .json (the package's model) or .osim (OpenSim 4 format)")
    with atomic_files([out], overwrite=args.overwrite, inputs=[args.model]) as (tmp,):
        model = _load_any(args.model, strict=not args.lenient)
        if suffix == ".osim":
            from osim_emb.io.osim_writer import write_osim
            write_osim(model, tmp, protect=[args.model], opensim4=True)
        else:
            from osim_emb.io.model_json import save_model
            save_model(model, tmp, protect=[args.model])
    skipped = model.extras.get("skipped", [])
    print(f"wrote {out}{' (OpenSim 4 format)' if suffix == '.osim' else ''}: {model.n_q} generalized coordinates, "
          f"{model.n_joints} one-DOF joints, {len(model.bodies)} bodies, {len(model.muscles)} musculotendon units"
          + (f"; {len(skipped)} element(s) left out (see 'osim-emb inspect')" if skipped else ""))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("convert", help="convert an .osim file to the package's JSON model format, or to an OpenSim 4 "
                                       ".osim (e.g. a 3.3 file, for smooth-paths)")
    s.add_argument("model", help=".osim file")
    s.add_argument("-o", "--output", help="output .json file (the package's model; default: MODEL.emb.json next to the input) "
                                             "or .osim file (OpenSim 4 format)")
    add_lenient_option(s)
    s.set_defaults(func=cmd_convert)
