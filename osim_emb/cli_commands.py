"""Subcommands beyond inspect/convert: each registers itself on the parser here."""

from __future__ import annotations

import argparse
from pathlib import Path


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def cmd_rhythm(args: argparse.Namespace) -> int:
    from .io import load_osim
    from .io.osim_writer import moving_points_as_bodies, write_osim
    from .rhythm import apply, load_rhythm
    rhythm = load_rhythm(args.rhythm)
    model = load_osim(args.model, strict=not args.lenient)
    new = apply(model, rhythm)
    out = Path(args.output)
    write_osim(new, out, protect=[args.model])
    print(f"wrote {out}: couplers of {', '.join(t.dependent for t in rhythm.terms)} follow rhythm "
          f"{rhythm.name!r} in {', '.join(rhythm.inputs)}")
    if not args.no_variant:
        mvp = out.with_name(out.stem + "_mvp" + out.suffix)
        write_osim(moving_points_as_bodies(new.extras["document"]), mvp, protect=[args.model])
        print(f"wrote {mvp}: the same model with its moving via points as zero-inertia bodies")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the analysis commands (moment arms, rhythm, simulation, the default study)."""
    s = sub.add_parser("rhythm", help="replace a model's shoulder-rhythm couplers and export it as .osim")
    s.add_argument("model", help=".osim file (e.g. the Holzbaur/MoBL model)")
    s.add_argument("--rhythm", default="degroot2001",
                   help="built-in rhythm (degroot2001, degroot2001-regression, holzbaur2005) or a .csv/.json file")
    s.add_argument("-o", "--output", required=True, help="the new .osim file (OpenSim 4 format)")
    s.add_argument("--no-variant", action="store_true",
                   help="do not also write NEW_mvp.osim (moving via points as zero-inertia bodies)")
    s.add_argument("--lenient", action="store_true", help="import what can be represented and list the rest")
    s.set_defaults(func=cmd_rhythm)
