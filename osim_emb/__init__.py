"""osim-emb: empirically-based multibody dynamics for OpenSim musculoskeletal models."""

from ._version import __version__
from .io import load_osim
from .model import Body, DependentCoordinate, GeneralizedCoordinate, Joint, Model

__all__ = ["__version__", "load_osim", "Model", "Joint", "Body", "GeneralizedCoordinate", "DependentCoordinate"]
