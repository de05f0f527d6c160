"""osim-emb: empirically-based multibody dynamics for OpenSim musculoskeletal models."""

from ._version import __version__
from .configuration import ConfigurationError, as_configuration, degrees_to_q
from .io import load_osim
from .io.model_json import load_model, save_model
from .model import Body, DependentCoordinate, GeneralizedCoordinate, Joint, Model
from .muscles.geometry import lengths_and_moment_arms, moment_arm_table

__all__ = ["__version__", "load_osim", "load_model", "save_model", "Model", "Joint", "Body",
           "GeneralizedCoordinate", "DependentCoordinate", "ConfigurationError", "as_configuration", "degrees_to_q",
           "lengths_and_moment_arms", "moment_arm_table"]
