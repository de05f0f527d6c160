"""Command line: ``osim-emb <command> ...`` (``osim-emb --help`` lists the commands)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from ._version import __version__

__all__ = ["main", "build_parser"]


def _load_any(path: str, strict: bool = True):
    """An .osim file or a saved .json model."""
    if str(path).endswith(".json"):
        from .io.model_json import load_model
        return load_model(path)
    from .io import load_osim
    return load_osim(path, strict=strict)


def cmd_inspect(args: argparse.Namespace) -> int:
    from .report import describe_model
    model = _load_any(args.model, strict=not args.lenient)
    print(describe_model(model, functions=not args.brief))
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    from .io.model_json import save_model
    model = _load_any(args.model, strict=not args.lenient)
    out = args.output or str(Path(args.model).with_suffix("")) + ".emb.json"
    save_model(model, out, protect=[args.model])
    skipped = model.extras.get("skipped", [])
    print(f"wrote {out}: {model.n_q} generalized coordinates, {model.n_joints} one-DOF joints, "
          f"{len(model.bodies)} bodies, {len(model.muscles)} musculotendon units"
          + (f"; {len(skipped)} element(s) left out (see 'osim-emb inspect')" if skipped else ""))
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="osim-emb",
        description="Empirically-based multibody dynamics for OpenSim models: import .osim files into "
                    "minimal-coordinate form, compute moment arms, apply shoulder rhythms, simulate.")
    p.add_argument("--version", action="version", version=f"osim-emb {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    s = sub.add_parser("inspect", help="print a model's bodies, joints, coordinates, functions and muscles")
    s.add_argument("model", help=".osim file (OpenSim 3.3 or 4.x) or a saved .emb.json model")
    s.add_argument("--brief", action="store_true", help="omit the joint-variable functions")
    s.add_argument("--lenient", action="store_true", help="import what can be represented and list the rest")
    s.set_defaults(func=cmd_inspect)

    s = sub.add_parser("convert", help="convert an .osim file to the package's JSON model format")
    s.add_argument("model", help=".osim file")
    s.add_argument("-o", "--output", help="output .json file (default: MODEL.emb.json next to the input)")
    s.add_argument("--lenient", action="store_true", help="import what can be represented and list the rest")
    s.set_defaults(func=cmd_convert)

    from . import cli_commands
    cli_commands.register(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except (ValueError, KeyError, FileNotFoundError, ImportError, RuntimeError) as err:
        print(f"osim-emb {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
