"""Input/output: .osim files (OpenSim 3.3 and 4.x), the package's JSON model format, motion files."""

from .errors import OsimImportError, UnsupportedFeatureError
from .osim_reader import read_osim, read_osim_string

__all__ = ["OsimImportError", "UnsupportedFeatureError", "read_osim", "read_osim_string", "load_osim"]


def load_osim(path, strict: bool = True):
    """Read an .osim file (OpenSim 3.3 or 4.x) into an immutable empirically-based :class:`~osim_emb.model.Model`.

    ``strict=False`` imports what can be represented and lists the rest in
    ``model.extras['skipped']`` instead of raising :class:`UnsupportedFeatureError`.
    """
    from .convert import document_to_model
    return document_to_model(read_osim(path, strict=strict), strict=strict)
