"""osim-emb: empirically-based multibody dynamics for OpenSim musculoskeletal models.

The functions people call, by task (each has a numpydoc docstring with units and an example):

- load: :func:`load_osim` (.osim, OpenSim 3.3/4.x), :func:`load_model` (the package's JSON),
  :func:`load_builtin` (the project's own shoulder model, no files needed)
- convert and export: :func:`save_model` (JSON), :func:`write_osim` (.osim)
- motions: :func:`read_motion`, :func:`write_motion` (.mot/.sto)
- configurations: :func:`as_configuration`, :func:`degrees_to_q` (q in radians and metres)
- lengths and moment arms: :func:`lengths_and_moment_arms` (arrays L, R), :func:`moment_arms`, :func:`muscle_lengths`,
  :func:`moment_arm_table` (a labelled table), :func:`lengthening_speeds` (dL/dt), :func:`path_states` (the
  effective path points, wrap tangent points and lengths, for drawing a path or exporting it)
- dynamics: :func:`mass_matrix`, :func:`velocity_terms`, :func:`gravity_forces`, :func:`inverse_dynamics`,
  :func:`forward_dynamics`
- simulate: :func:`simulate`, :func:`inverse_dynamics_of_motion`, :func:`simulate_muscles`,
  :func:`muscle_force_sharing` (static optimization along a motion of a model), :func:`static_optimization` (the
  same problem from arrays: moment arms, generalized forces, muscle force coefficients), :func:`joint_reactions_of_motion`
  (joint loads)
- scale: :func:`scale_model` (OpenSim's Model::scale on a model file's text)
- shoulder rhythm: :func:`builtin_rhythm`, :func:`load_rhythm`, :func:`apply_rhythm`, :func:`fit_rhythm`
- compare with OpenSim: :func:`compare_with_opensim` (tables and figures), :func:`run_moment_arm_study` (tables)

Every name is imported on first use, so ``import osim_emb`` is quick and never imports opensim or matplotlib.
The layers behind these functions: docs/architecture.md.
"""

from importlib import import_module

from osim_emb._version import __version__

# name -> (module, attribute): imported on first access (module-level __getattr__, PEP 562), so that
# ``import osim_emb`` (and the command line's --help, --version) costs milliseconds, not the numerical stack
_LAZY = {
    "load_builtin": ("osim_emb.io.builtin_models", "load_builtin"),
    "ConfigurationError": ("osim_emb.core.configuration", "ConfigurationError"),
    "as_configuration": ("osim_emb.core.configuration", "as_configuration"),
    "degrees_to_q": ("osim_emb.core.configuration", "degrees_to_q"),
    **{name: ("osim_emb.core.public_dynamics", name)
       for name in ("forward_dynamics", "gravity_forces", "inverse_dynamics", "mass_matrix", "velocity_terms")},
    "load_osim": ("osim_emb.io", "load_osim"),
    "load_model": ("osim_emb.io.model_json", "load_model"),
    "save_model": ("osim_emb.io.model_json", "save_model"),
    "read_motion": ("osim_emb.io.motion", "read_motion"),
    "write_motion": ("osim_emb.io.motion", "write_motion"),
    "write_osim": ("osim_emb.io.osim_writer", "write_osim"),
    **{name: ("osim_emb.model", name)
       for name in ("Body", "DependentCoordinate", "GeneralizedCoordinate", "Joint", "Model")},
    **{name: ("osim_emb.paths.geometry", name)
       for name in ("PathState", "lengthening_speeds", "lengths_and_moment_arms", "moment_arm_table", "moment_arms",
                    "muscle_lengths", "path_states")},
    "simulate": ("osim_emb.simulation.motions", "simulate"),
    "inverse_dynamics_of_motion": ("osim_emb.simulation.motions", "inverse_dynamics_of_motion"),
    "simulate_muscles": ("osim_emb.simulation.muscle_driven", "simulate_muscles"),
    "static_optimization": ("osim_emb.simulation.static_optimization", "static_optimization"),
    "muscle_force_sharing": ("osim_emb.simulation.motions", "muscle_force_sharing"),
    "joint_reactions_of_motion": ("osim_emb.simulation.joint_reactions", "joint_reactions_of_motion"),
    "scale_model": ("osim_emb.simulation.scaling", "scale_model"),
    "apply_rhythm": ("osim_emb.rhythm.rhythms", "apply"),
    "builtin_rhythm": ("osim_emb.rhythm.rhythms", "builtin_rhythm"),
    "load_rhythm": ("osim_emb.rhythm.rhythms", "load_rhythm"),
    "fit_rhythm": ("osim_emb.rhythm.fit", "fit"),
    "run_moment_arm_study": ("osim_emb.opensim.moment_arms", "run_moment_arm_study"),
    "compare_with_opensim": ("osim_emb.report.comparisons", "compare_with_opensim"),
}
#: the subpackages, importable as attributes (``osim_emb.io.motion``) on first access
_SUBPACKAGES = ("cli", "core", "io", "muscles", "opensim", "paths", "report", "rhythm", "seeds", "simulation", "data")

__all__ = ["__version__",
           "load_osim", "load_model", "load_builtin", "save_model", "write_osim", "read_motion", "write_motion",
           "as_configuration", "degrees_to_q", "ConfigurationError",
           "lengths_and_moment_arms", "moment_arms", "muscle_lengths", "moment_arm_table", "lengthening_speeds",
           "path_states", "PathState",
           "mass_matrix", "velocity_terms", "gravity_forces", "inverse_dynamics", "forward_dynamics",
           *_LAZY,
           "Model", "Joint", "Body", "GeneralizedCoordinate", "DependentCoordinate"]


def __getattr__(name):
    if name in _LAZY:
        module, attribute = _LAZY[name]
        value = getattr(import_module(module), attribute)
        globals()[name] = value
        return value
    if name in _SUBPACKAGES or name in ("model", "progress"):
        return import_module(f"osim_emb.{name}")
    raise AttributeError(f"module 'osim_emb' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
