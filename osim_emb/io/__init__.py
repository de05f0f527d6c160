"""Input/output: .osim files (OpenSim 1.x to 4.x, docs/importer.md "File versions"), the package's JSON model format, motion files."""

from osim_emb.io.errors import OsimImportError, UnsupportedFeatureError
from osim_emb.io.osim_reader import read_osim, read_osim_string

__all__ = ["OsimImportError", "UnsupportedFeatureError", "read_osim", "read_osim_string", "load_osim"]


def load_osim(path, strict: bool = True, dependent_coordinates=None):
    """Read an .osim file (OpenSim 3.3 or 4.x) into an immutable empirically-based :class:`~osim_emb.model.Model`.

    Parameters
    ----------
    path : str, pathlib.Path or opensim.Model
        The .osim file.  An ``opensim.Model`` object is printed to XML and read back (the object is not
        changed).
    strict : bool, default True
        False imports what can be represented and lists the rest in ``model.extras['skipped']`` instead
        of raising :class:`UnsupportedFeatureError`.
    dependent_coordinates : sequence of str, optional
        The coordinates the model's loop constraints solve, functions of the others: one per independent
        equation (PointConstraint 3, ConstantDistanceConstraint 1, PointOnLineConstraint 2, WeldConstraint 6,
        less the redundant ones); default: chosen at the default configuration (:func:`osim_emb.core.point_constraints.choose_dependent_coordinates`).

    Returns
    -------
    Model
        Generalized coordinates in OpenSim's order and units (radians for rotational, metres for
        translational coordinates), bodies, joints, musculotendon paths, wrap surfaces.

    Raises
    ------
    OsimImportError
        The file is not a readable model; the message names the file, element and line.

    Examples
    --------
    >>> import osim_emb as oe
    >>> from osim_emb.io.builtin_models import builtin_model_path
    >>> model = oe.load_osim(builtin_model_path("shoulder3d"))
    >>> model.coordinate_names
    ['elv_angle', 'shoulder_elv', 'shoulder_rot']
    >>> len(model.muscles)
    14
    """
    from osim_emb.io.convert import document_to_model
    if hasattr(path, "printToXML") and hasattr(path, "getCoordinateSet"):
        return _load_opensim_object(path, strict)
    import os
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"load_osim expects the path of an .osim file (str or pathlib.Path) or an opensim.Model, "
                        f"got {type(path).__name__} {path!r:.60}")
    return document_to_model(read_osim(path, strict=strict), strict=strict, dependent_coordinates=dependent_coordinates)


def _load_opensim_object(osim_model, strict: bool):
    import os
    import tempfile
    from osim_emb.io.convert import document_to_model
    name = osim_model.getName() or "model"
    fd, tmp = tempfile.mkstemp(prefix=f"{name}.", suffix=".osim")
    os.close(fd)
    try:
        if not osim_model.printToXML(tmp):
            raise OsimImportError(f"<opensim.Model {name!r}>", None, "OpenSim could not print the model to XML")
        with open(tmp, encoding="utf-8") as fh:
            doc = read_osim_string(fh.read(), strict=strict, name=f"<opensim.Model {name!r}>")
    finally:
        os.unlink(tmp)
    return document_to_model(doc, strict=strict)
