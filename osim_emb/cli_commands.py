"""Subcommands beyond inspect/convert: each registers itself on the parser here."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add the analysis commands (moment arms, rhythm, simulation, the default study)."""
