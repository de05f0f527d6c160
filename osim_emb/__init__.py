"""osim-emb: empirically-based multibody dynamics for OpenSim musculoskeletal models."""

from ._version import __version__

__all__ = ["__version__"]
