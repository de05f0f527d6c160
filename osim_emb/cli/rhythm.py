"""``osim-emb rhythm``: replace a model's shoulder-rhythm couplers and export it as .osim."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from osim_emb.cli.common import add_lenient_option


def _load_rhythm_file(source: str, load_rhythm):
    """load_rhythm with a message naming the file for an empty or malformed table."""
    p = Path(source)
    if p.is_file() and not p.read_text(encoding="utf-8", errors="replace").strip():
        raise ValueError(f"{source}: the rhythm file is empty")
    try:
        return load_rhythm(source)
    except json.JSONDecodeError as err:
        raise ValueError(f"{source}:{err.lineno}: not valid JSON ({err.msg}, column {err.colno})") from None
    except (IndexError, KeyError, TypeError, AttributeError) as err:
        raise ValueError(f"{source}: not a valid rhythm file ({type(err).__name__}: {err})") from None


def cmd_rhythm(args: argparse.Namespace) -> int:
    from osim_emb.io import load_osim
    from osim_emb.io.osim_writer import moving_points_as_bodies, write_osim
    from osim_emb.io.outputs import atomic_files
    from osim_emb.rhythm.rhythms import apply, load_rhythm
    out = Path(args.output)
    mvp = out.with_name(out.stem + "_mvp" + out.suffix)
    outs = [out] if args.no_variant else [out, mvp]
    inputs = [args.model] + ([args.rhythm] if Path(args.rhythm).exists() else [])
    with atomic_files(outs, overwrite=args.overwrite, inputs=inputs) as tmps:
        rhythm = _load_rhythm_file(args.rhythm, load_rhythm)
        if str(args.model).lower().endswith(".json"):  # a saved model keeps its OpenSim document
            from osim_emb.io.model_json import load_model
            model = load_model(args.model)
        else:
            model = load_osim(args.model, strict=not args.lenient)
        new = apply(model, rhythm, outside=args.outside)
        write_osim(new, tmps[0], protect=[args.model])
        if not args.no_variant:
            write_osim(moving_points_as_bodies(new.extras["document"]), tmps[1], protect=[args.model])
    print(f"wrote {out}: couplers of {', '.join(t.dependent for t in rhythm.terms)} follow rhythm "
          f"{rhythm.name!r} in {', '.join(rhythm.inputs)}")
    if not args.no_variant:
        print(f"wrote {mvp}: the same model with its moving via points as zero-inertia bodies")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("rhythm", help="replace a model's shoulder-rhythm couplers and export it as .osim")
    s.add_argument("model", help=".osim file (e.g. the Holzbaur/MoBL model)")
    s.add_argument("--rhythm", default="degroot2001",
                   help="built-in rhythm (degroot2001, degroot2001-regression, holzbaur2005, spartacus2024) "
                        "or a .csv/.json file")
    s.add_argument("-o", "--output", required=True, help="the new .osim file (OpenSim 4 format)")
    s.add_argument("--no-variant", action="store_true",
                   help="do not also write NEW_mvp.osim (moving via points as zero-inertia bodies)")
    add_lenient_option(s)
    s.add_argument("--outside", choices=("warn", "error", "ignore"), default="warn",
                   help="when the model's coordinate ranges leave the domain of the rhythm's data (default warn)")
    s.set_defaults(func=cmd_rhythm)
