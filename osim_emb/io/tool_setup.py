"""OpenSim tool setup files (``<InverseDynamicsTool>`` XML): the inputs a user's pipeline already names, paths
resolved against the setup file's folder as OpenSim resolves them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lxml import etree

__all__ = ["InverseDynamicsSetup", "ToolSetupError", "read_inverse_dynamics_setup"]


class ToolSetupError(ValueError):
    """A setup file that cannot be used; the message names the file and element."""


@dataclass(frozen=True)
class InverseDynamicsSetup:
    """What an ``InverseDynamicsTool`` setup names (None where it leaves a value unset)."""

    path: str
    model: Path | None
    coordinates: Path | None
    external_loads: Path | None
    lowpass_hz: float | None  # None: no filter (OpenSim: a negative cutoff)
    time_range: tuple[float, float] | None
    output: Path | None  # results_directory / output_gen_force_file
    excluded_forces: tuple[str, ...]


def element_text(parent, tag: str, default: str = "") -> str:
    """The stripped text of ``parent``'s child ``tag`` (``default`` when absent, empty or OpenSim's "Unassigned")."""
    e = parent.find(tag)
    text = e.text.strip() if e is not None and e.text else ""
    return text if text and text != "Unassigned" else default


def opensim_element(path: Path, tag: str, error: type[ValueError]):
    """The ``tag`` element of an OpenSim XML file (its root or a child of <OpenSimDocument>); ``error`` names the
    file when it is not readable XML or has no such element."""
    try:
        root = etree.parse(str(path)).getroot()
    except (OSError, etree.XMLSyntaxError) as err:
        raise error(f"{path}: not a readable XML file: {err}") from None
    found = root if root.tag == tag else root.find(tag)
    if found is None:
        raise error(f"{path}: no <{tag}> element"
                    + (" (a setup file of another tool?)" if tag.endswith("Tool") else ""))
    return found


def read_inverse_dynamics_setup(path: str | Path) -> InverseDynamicsSetup:
    """Read an InverseDynamicsTool setup file (OpenSim 3.x or 4.x)."""
    path = Path(path)
    tool = opensim_element(path, "InverseDynamicsTool", ToolSetupError)
    here = path.resolve().parent

    def file(tag: str) -> Path | None:
        text = element_text(tool, tag)
        return (here / text).resolve() if text else None

    def number(tag: str) -> float | None:
        text = element_text(tool, tag)
        try:
            return float(text) if text else None
        except ValueError:
            raise ToolSetupError(f"{path}: <{tag}> must be a number, not {text!r}") from None
    cutoff = number("lowpass_cutoff_frequency_for_coordinates")
    span = element_text(tool, "time_range").split()
    try:
        time_range = (float(span[0]), float(span[1])) if len(span) == 2 else None
    except ValueError:
        raise ToolSetupError(f"{path}: <time_range> must be two numbers, not {' '.join(span)!r}") from None
    output = None
    if element_text(tool, "output_gen_force_file"):
        folder = element_text(tool, "results_directory") or "."
        output = (here / folder / element_text(tool, "output_gen_force_file")).resolve()
    return InverseDynamicsSetup(str(path), file("model_file"), file("coordinates_file"), file("external_loads_file"),
                                cutoff if cutoff is not None and cutoff >= 0 else None, time_range, output,
                                tuple(element_text(tool, "forces_to_exclude").split()))
