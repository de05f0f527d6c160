"""Errors of the .osim reader and writer: every message names the file, the element and the line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["OsimImportError", "UnsupportedFeatureError", "describe_element"]


def describe_element(element: Any) -> str:
    """``<Tag name='x'>`` for an lxml element (or a plain string)."""
    if element is None:
        return "<document>"
    if isinstance(element, str):
        return element
    name = element.get("name")
    return f"<{element.tag} name='{name}'>" if name is not None else f"<{element.tag}>"


class OsimImportError(ValueError):
    """A .osim file cannot be read: malformed XML, a missing or inconsistent reference, a bad value."""

    def __init__(self, path: str | Path | None, element: Any, reason: str, line: int | None = None):
        self.path = str(path) if path is not None else "<string>"
        self.element = describe_element(element)
        if line is None and element is not None and not isinstance(element, str):
            line = getattr(element, "sourceline", None)
        self.line = line
        self.reason = reason
        where = f"{self.path}:{line}" if line else self.path
        super().__init__(f"{where}: {self.element}: {reason}")


class UnsupportedFeatureError(OsimImportError):
    """The file uses something the empirically-based form cannot represent (yet).

    ``load_osim(path, strict=False)`` imports the rest and lists what was left out.
    """
