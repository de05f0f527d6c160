"""``osim-emb convert``: convert an .osim file to the package's JSON model format."""

from __future__ import annotations

import argparse
from pathlib import Path

from osim_emb.cli.common import _load_any


def cmd_convert(args: argparse.Namespace) -> int:
    from osim_emb.io.model_json import save_model
    from osim_emb.io.outputs import atomic_files
    out = args.output or str(Path(args.model).with_suffix("")) + ".emb.json"
    with atomic_files([out], overwrite=args.overwrite, inputs=[args.model]) as (tmp,):
        model = _load_any(args.model, strict=not args.lenient)
        save_model(model, tmp, protect=[args.model])
    skipped = model.extras.get("skipped", [])
    print(f"wrote {out}: {model.n_q} generalized coordinates, {model.n_joints} one-DOF joints, "
          f"{len(model.bodies)} bodies, {len(model.muscles)} musculotendon units"
          + (f"; {len(skipped)} element(s) left out (see 'osim-emb inspect')" if skipped else ""))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("convert", help="convert an .osim file to the package's JSON model format")
    s.add_argument("model", help=".osim file")
    s.add_argument("-o", "--output", help="output .json file (default: MODEL.emb.json next to the input)")
    s.add_argument("--lenient", action="store_true", help="import what can be represented and list the rest")
    s.set_defaults(func=cmd_convert)
