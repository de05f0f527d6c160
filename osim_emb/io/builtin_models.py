"""The project's own models (``models/`` in the repository)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["BUILTIN_MODELS", "builtin_model_path", "load_builtin"]

BUILTIN_MODELS = {"shoulder3d": "shoulder3d/shoulder3d.osim"}


def _models_dir() -> Path:
    here = Path(__file__).resolve().parents[1]  # the osim_emb package folder
    for cand in (here.parent / "models", here / "data" / "models"):
        if cand.is_dir():
            return cand
    raise FileNotFoundError("the project's models/ folder was not found; install the package from the repository "
                            "with 'pip install -e .'")


def builtin_model_path(name: str = "shoulder3d") -> Path:
    """Path of a built-in model file (``shoulder3d``: the seed's 3D shoulder, section 4-4 C)."""
    if name not in BUILTIN_MODELS:
        raise KeyError(f"no built-in model {name!r}; available: {', '.join(BUILTIN_MODELS)}")
    p = _models_dir() / BUILTIN_MODELS[name]
    if not p.is_file():
        raise FileNotFoundError(f"built-in model file {p} is missing")
    return p


def load_builtin(name: str = "shoulder3d"):
    """A built-in model (no files from outside needed), imported into the empirically-based form.

    Parameters
    ----------
    name : str, default "shoulder3d"
        ``shoulder3d``: the seed's 3D shoulder (section 4-4 C): 3 generalized coordinates (elv_angle,
        shoulder_elv, shoulder_rot; radians), 12 dependent girdle coordinates, 14 muscles with wrapping.

    Returns
    -------
    Model

    Examples
    --------
    >>> import osim_emb as oe
    >>> model = oe.load_builtin("shoulder3d")
    >>> model.n_q, len(model.muscles)
    (3, 14)
    """
    from osim_emb.io import load_osim
    return load_osim(builtin_model_path(name))
