"""``osim-emb inspect``: print a model's bodies, joints, coordinates, functions and muscles.

(Named ``inspect_model``, not ``inspect``, so that the module never shadows the standard library's.)"""

from __future__ import annotations

import argparse

from osim_emb.cli.common import _load_any, add_lenient_option


def cmd_inspect(args: argparse.Namespace) -> int:
    from osim_emb.report.model_description import describe_model
    model = _load_any(args.model, strict=not args.lenient)
    print(describe_model(model, functions=not args.brief))
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("inspect", help="print a model's bodies, joints, coordinates, functions and muscles")
    s.add_argument("model", help=".osim file (OpenSim 3.3 or 4.x) or a saved .emb.json model")
    s.add_argument("--brief", action="store_true", help="omit the joint-variable functions")
    add_lenient_option(s)
    s.set_defaults(func=cmd_inspect)
