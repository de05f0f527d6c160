"""Forward simulation, inverse dynamics of motions, computed-torque tracking (Eqs 198, 200-201), force sharing.

All of these work on the package's minimal-coordinate equations of motion
M(q) q̈ + N(q, q̇) q̇ = G(q) + τ, with SciPy's ``solve_ivp`` (``fun(t, y)``
contract) and results as pandas tables (``time`` column, one column per
coordinate, radians and metres).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
from scipy.integrate import solve_ivp
from scipy.interpolate import make_interp_spline, make_smoothing_spline

from osim_emb.core import dynamics as dyn
from osim_emb.core.configuration import initial_configuration, initial_rates
from osim_emb.simulation.compiled_runs import IntegrationBudgetExceeded
from osim_emb.core.kinematics import dependent_coordinate_columns, speed_columns
from osim_emb.core.speeds import angular_velocity_joints, forces_about_speeds
from osim_emb.model import Model
from osim_emb.progress import Progress

log = logging.getLogger(__name__)

__all__ = ["simulate", "IntegrationBudgetExceeded", "motion_derivatives", "opensim_lowpass", "analysis_states",
           "inverse_dynamics_of_motion", "TrackingResult",
           "computed_torque_tracking", "minimum_jerk", "muscle_force_sharing", "limit_generalized_forces"]


def _budgeted(fun: Callable, max_steps: int | None, max_seconds: float | None) -> Callable:
    """``fun(t, y)`` that raises :class:`IntegrationBudgetExceeded` past ``max_steps`` right-hand sides or
    ``max_seconds`` of wall time, or when the state or its derivative is not finite."""
    import time as _time
    start = _time.perf_counter()
    calls = [0]

    def wrapped(t, y):
        calls[0] += 1
        if max_steps is not None and calls[0] > max_steps:
            raise IntegrationBudgetExceeded(f"integration stopped at t = {t:.6g} s after {max_steps} right-hand-side "
                                            "evaluations (raise --max-steps, or check the initial state; stiff contact takes "
                                            "fewer steps with --method BDF-jit)")
        if max_seconds is not None and calls[0] % 50 == 0 and _time.perf_counter() - start > max_seconds:
            raise IntegrationBudgetExceeded(f"integration stopped at t = {t:.6g} s after {max_seconds:g} s of wall "
                                            "time (raise --max-seconds, or check the initial state; stiff contact takes fewer "
                                            "steps with --method BDF-jit)")
        # a trial step too long for stiff contact can overflow: its non-finite stages make the integrator reject
        # the step and shorten it; only a run of them means the motion itself has left the finite numbers
        if not np.all(np.isfinite(y)):
            dy = np.full(np.shape(y), np.nan)
        else:
            dy = fun(t, y)
        if np.all(np.isfinite(dy)):
            bad[0] = 0
            return dy
        bad[0] += 1
        if bad[0] > NONFINITE_TRIALS:
            what = "state" if not np.all(np.isfinite(y)) else "accelerations"
            raise IntegrationBudgetExceeded(f"integration stopped at t = {t:.6g} s: the {what} are not finite "
                                            f"({NONFINITE_TRIALS} right-hand sides in a row)")
        return dy
    bad = [0]
    wrapped.nonfinite_in_a_row = bad  # read when the integrator gives up (simulate)
    return wrapped


#: non-finite right-hand sides in a row after which :func:`simulate` stops (trial steps the integrator rejects)
NONFINITE_TRIALS = 200


def simulate(model: Model, t_end: float, q0: Any = None, qdot0: Any = None, *,
             generalized_forces: Callable[[float, np.ndarray, np.ndarray], Any] | None = None,
             external_loads: Any = None, method: str = "DOP853", rtol: float = 1e-10, atol: float = 1e-10, n_output: int = 201,
             t_eval: Sequence[float] | None = None, max_steps: int | None = 1_000_000,
             max_seconds: float | None = None, model_forces: bool = True, progress: bool = False,
             allow_out_of_range: bool = False) -> pd.DataFrame:
    """Integrate M q̈ + N q̇ = G + τ from (q0, q̇0) over [0, t_end]; a table of q and speeds (columns NAME, NAME_u).

    The integration stops with :class:`IntegrationBudgetExceeded` after ``max_steps`` right-hand sides or
    ``max_seconds`` of wall time, or when the state stops being finite.

    Parameters
    ----------
    model : Model
    t_end : float
        End time, seconds.
    q0, qdot0 : array_like or dict, optional
        (n_q,) initial configuration (rad, m; default: the model's default values) and speeds (rad/s,
        m/s; default: the model's default speeds, as OpenSim's default state: 0 unless the file sets
        ``default_speed_value``), or dicts by coordinate name (:func:`osim_emb.as_configuration`; a dict may leave
        coordinates out: they start at their defaults, as the commands' --q0).  A q0
        outside the coordinate ranges is refused (the message says when it would be in range read as degrees)
        unless ``allow_out_of_range``; so are the model's default values when q0 is not given.
    generalized_forces : callable, optional
        ``tau(t, q, qdot)`` -> (n_q,) applied generalized forces (N m, N); default none (passive motion).
    external_loads : ExternalLoads, optional
        Forces from outside the model (:func:`osim_emb.io.external_loads.read_external_loads`), applied in the
        compiled right-hand side at each time (their data must cover [0, t_end]).
    method, rtol, atol : str, float, float
        SciPy's ``solve_ivp`` integrator and tolerances, or a compiled integrator of
        :mod:`osim_emb.simulation.muscle_driven` ("RK45-jit": SciPy's RK45 step control, "BDF-jit"; the whole
        integration in compiled code, the model's force elements and limits in the kernel,
        docs/simulation.md): for a model whose passive forces are all compiled (not a spring or limit on a
        coupled or Ball angle, not a PrescribedForce with a function such as MultiplierFunction; docs/forces.md),
        without ``generalized_forces``; they report only ``t_eval`` (the progress bar and ``max_seconds``
        read between calls of a growing number of output times; the states are those of one call, bitwise).
    n_output : int, default 201
        Number of equally spaced output times (ignored when ``t_eval`` is given).
    t_eval : sequence of float, optional
        Output times, seconds.
    max_steps, max_seconds : int, float, optional
        Budget of right-hand-side evaluations and wall time.
    model_forces : bool, default True
        Apply the model's passive forces as OpenSim's Manager does: contact (HuntCrossleyForce and
        SmoothSphereHalfSpaceForce on spheres and half spaces), PointToPointSpring, BushingForce,
        SpringGeneralizedForce, PrescribedForce (:mod:`osim_emb.simulation.force_elements`),
        CoordinateLimitForce, and along their paths PathSpring, Ligament and Blankevoort1991Ligament (R(q) T, the
        muscle-driven simulation's tension laws and moment arms); muscles and actuators without controls apply none.
    progress : bool, default False
        A progress bar over the output times the integration has passed (:class:`osim_emb.progress.Progress`; a
        compiled integrator: one step, done when it returns).
    allow_out_of_range : bool, default False
        Start from a q0 outside the coordinate ranges.

    Returns
    -------
    pandas.DataFrame
        Columns ``time`` (s), one per coordinate (rad, m) and ``NAME_u`` per speed (rad/s, m/s: OpenSim's speeds,
        q̇ except on the rotations of Ball, Free and Ellipsoid joints, :mod:`osim_emb.core.speeds`), then the
        dependent coordinates (coupled, locked) the same way;
        ``attrs['nfev']``: right-hand-side evaluations.

    Examples
    --------
    >>> import numpy as np
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()
    >>> motion = oe.simulate(model, 0.2, n_output=5)
    >>> list(motion.columns[:7])
    ['time', 'elv_angle', 'shoulder_elv', 'shoulder_rot', 'elv_angle_u', 'shoulder_elv_u', 'shoulder_rot_u']
    >>> motion.filter(like="sternoclavicular_r2").columns.tolist()  # a coupled coordinate, from the rhythm
    ['sternoclavicular_r2', 'sternoclavicular_r2_u']

    Over a short time from rest, q - q0 = q̈(0) t² / 2 to third order in t:

    >>> short = oe.simulate(model, 1e-3, n_output=2)
    >>> moved = short[model.coordinate_names].to_numpy()[-1] - model.default_q
    >>> qddot0 = oe.forward_dynamics(model, model.default_q, np.zeros(model.n_q))[0]
    >>> bool(np.allclose(moved, 0.5 * qddot0 * 1e-6, rtol=1e-4))
    True
    """
    q0 = initial_configuration(model, q0, allow_out_of_range=allow_out_of_range)
    qdot0 = initial_rates(model, qdot0)
    if not (np.isfinite(t_end) and t_end > 0):
        raise ValueError(f"t_end must be a positive number of seconds, got {t_end}")
    if not (np.isfinite(rtol) and rtol > 0 and np.isfinite(atol) and atol > 0):
        raise ValueError(f"rtol and atol must be positive, got rtol={rtol}, atol={atol}")
    if t_eval is None and (int(n_output) != n_output or n_output < 2):
        raise ValueError(f"n_output must be an integer >= 2, got {n_output}")
    y0 = np.concatenate([q0, qdot0])
    if y0.shape != (2 * model.n_q,) or not np.all(np.isfinite(y0)):
        raise ValueError(f"q0 and qdot0 must be {model.n_q} finite numbers each")
    te = np.linspace(0.0, t_end, n_output) if t_eval is None else np.asarray(t_eval, dtype=float)
    if external_loads is not None:
        external_loads.at([0.0, t_end])  # refused here, naming the file, when the data do not cover the run
    if method in COMPILED_METHODS:
        t, y, nfev = _integrate_compiled(model, t_end, y0, te, method, rtol, atol, generalized_forces,
                                         external_loads, model_forces, progress, max_steps, max_seconds)
        return _motion_table(model, t, y, nfev)
    elements = None
    if model_forces:
        generalized_forces, elements = _with_model_forces(model, generalized_forces)
    fun = _budgeted(dyn.ode_rhs(model, generalized_forces, external_loads, elements), max_steps, max_seconds)
    with Progress(f"simulating {t_end:g} s ({method})", len(te), enabled=progress, unit="output time") as bar:
        sol = solve_ivp(bar.following(fun, te), (0.0, t_end), y0, method=method, rtol=rtol, atol=atol, t_eval=te)
        if sol.success:
            bar.complete()
    if not sol.success and fun.nonfinite_in_a_row[0]:  # it shortened the step to nothing on non-finite values
        raise IntegrationBudgetExceeded(f"integration stopped at t = {sol.t[-1] if len(sol.t) else 0.0:.6g} s: the "
                                        f"accelerations are not finite ({sol.message})")
    if not sol.success:
        raise RuntimeError(f"integration failed: {sol.message}")
    return _motion_table(model, sol.t, sol.y, sol.nfev)


#: the compiled integrators :func:`simulate` can run (:mod:`osim_emb.simulation.muscle_driven`)
COMPILED_METHODS = ("RK45-jit", "BDF-jit")


def _integrate_compiled(model: Model, t_end: float, y0: np.ndarray, te: np.ndarray, method: str, rtol: float,
                        atol: float, generalized_forces, external_loads, model_forces: bool, progress: bool = False,
                        max_steps: int | None = None, max_seconds: float | None = None):
    """(t, y (2 n_q, T), nfev) of the passive system by a compiled integrator: the muscle-driven system without
    muscles (its compiled plan holds the contact, springs, bushings, coordinate limits, PathSprings, Ligaments and
    external loads)."""
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, integrate_system
    from osim_emb.simulation.muscle_driven_jit import compiled_plan
    if generalized_forces is not None:
        raise ValueError(f"method {method!r} cannot apply generalized_forces given from Python; use a SciPy method "
                         "(e.g. 'DOP853')")
    system = MuscleDrivenSystem(model, with_muscles=False, path_forces=model_forces, report=False,
                                external_loads=external_loads, model_forces=model_forces,
                                coordinate_forces=None if model_forces else ((), ()))
    plan, why = compiled_plan(system)
    if plan is None:
        raise ValueError(f"method {method!r} cannot run {model.name}: {why}; use a SciPy method (e.g. 'DOP853')")
    if te[0] < 0.0 or te[-1] > t_end or np.any(np.diff(te) <= 0):
        raise ValueError(f"t_eval must increase strictly within [0, t_end = {t_end:g}] s")
    try:
        sol = integrate_system(system, y0, te, method=method, rtol=rtol, atol=atol, plan=plan, t_span=(0.0, t_end),
                               progress=progress, max_steps=max_steps, max_seconds=max_seconds)
    except RuntimeError as err:  # the step size underflowed: a state or acceleration stopped being finite
        raise IntegrationBudgetExceeded(f"integration of {model.name} stopped ({method}): {err}") from None
    return sol.t, sol.y, sol.nfev


def _motion_table(model: Model, t: np.ndarray, y: np.ndarray, nfev: int) -> pd.DataFrame:
    """time, q, OpenSim's speeds and the dependent coordinates of states y (2 n_q, T); ``attrs['nfev']``."""
    n = model.n_q
    data = {"time": t}
    for k, name in enumerate(model.coordinate_names):
        data[name] = y[k]
    data.update(speed_columns(model, y[:n].T, y[n:2 * n].T))
    data.update(dependent_coordinate_columns(model, y[:n].T, y[n:2 * n].T))
    out = pd.DataFrame(data)
    out.attrs["nfev"] = int(nfev)
    return out


def _with_model_forces(model: Model, generalized_forces):
    """(the user's ``generalized_forces`` (a function, an array or None) plus the model's passive forces applied
    from Python, the compiled force-element table or None): the elements in the kernel where their bodies are
    part of the compiled dynamics and their laws compiled (:func:`~osim_emb.simulation.force_elements.compiled_rows`),
    the rest from Python."""
    from osim_emb.core import compiled_kernels as K
    from osim_emb.core.compiled import element_table
    from osim_emb.simulation import force_elements as fe
    from osim_emb.simulation.muscle_driven import coordinate_forces_from_model
    elements, table = fe.model_force_elements(model), None
    try:
        table, elements = fe.compiled_rows(model, elements)
    except ValueError as exc:
        log.info("the model's force elements are applied from Python: %s", exc)
    limits = coordinate_forces_from_model(model)[0]
    plain = [f for f in limits if f.coupling is None and f.angular is None]  # on a generalized coordinate
    if plain:
        rows = element_table([[K.EL_COORDINATE_LIMIT, f.coordinate, *f.si_parameters()] for f in plain])
        table = rows if table is None else np.vstack([table, rows])
    passive = _passive_force_function(model, elements, [f for f in limits if f.coupling is not None or f.angular is not None],
                                      _path_force_system(model))
    if passive is None:
        return generalized_forces, table
    if generalized_forces is None:
        return passive, table
    if callable(generalized_forces):
        return (lambda t, q, qdot: passive(t, q, qdot) + np.asarray(generalized_forces(t, q, qdot), dtype=float)), table
    fixed = np.asarray(generalized_forces, dtype=float)
    return (lambda t, q, qdot: passive(t, q, qdot) + fixed), table


def _path_force_system(model: Model):
    """The muscle-driven system holding only the model's PathSprings, Ligaments and Blankevoort1991Ligaments (their
    generalized forces: :meth:`~osim_emb.simulation.muscle_driven.MuscleDrivenSystem.path_force_generalized_forces`,
    the muscle-driven simulation's own), or None when the model has none."""
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, passive_path_forces_from_model
    if not passive_path_forces_from_model(model):
        return None
    return MuscleDrivenSystem(model, with_muscles=False, path_forces=True, model_forces=False,
                              coordinate_forces=((), ()), compiled=False, report=False)


def _passive_force_function(model: Model, elements=None, limits: Any = None, path_forces: Any = None):
    """``tau(t, q, qdot)`` (n_q,) of the model's passive forces applied from Python: force elements (default
    :func:`model_force_elements`), CoordinateLimitForces (default the model's,
    :func:`osim_emb.simulation.muscle_driven.coordinate_forces_from_model`) and the path forces of ``path_forces``
    (:func:`_path_force_system`); None when there are none."""
    from osim_emb.simulation.force_elements import force_element_forces, model_force_elements
    from osim_emb.simulation.muscle_driven import _add_coordinate_force, coordinate_forces_from_model, coordinate_state
    elements = model_force_elements(model) if elements is None else elements
    limits = coordinate_forces_from_model(model)[0] if limits is None else list(limits)
    if not elements and not limits and path_forces is None:
        return None

    def forces(t, q, qdot):
        tau = force_element_forces(model, elements, [t], q[None, :], qdot[None, :])[0] if elements \
            else np.zeros(model.n_q)
        if path_forces is not None:
            tau = tau + path_forces.path_force_generalized_forces(t, q, qdot)
        for f in limits:
            c, cd, g = coordinate_state(f, q, qdot)
            _add_coordinate_force(tau, f, f.generalized_force(c, cd), g)
        return tau
    return forces


def _natural_quintic(knots: np.ndarray, values: np.ndarray):
    """OpenSim's ``GCVSpline`` of degree 5 without smoothing: the natural quintic interpolating spline (third and
    fourth derivatives zero at the ends), of every column of ``values`` (T, n)."""
    zero = np.zeros(values.shape[1])
    return make_interp_spline(knots, values, k=5, bc_type=([(3, zero), (4, zero)], [(3, zero), (4, zero)]), axis=0)


def opensim_lowpass(time: np.ndarray, values: np.ndarray, cutoff_hz: float) -> tuple[np.ndarray, np.ndarray]:
    """OpenSim's low-pass filter of coordinate data (``lowpass_cutoff_frequency_for_coordinates`` of its
    InverseDynamicsTool and AnalyzeTool), step by step as ``Storage::pad`` and ``Storage::lowpassIIR`` take them:
    the samples padded by half their number at each end (reflected and negated, times too); where the padded times
    are not uniform to machine precision, resampled at their smallest step (``x += dt`` from the first time while
    within the last) by the natural quintic spline; then a third-order Butterworth filter run forwards and backwards
    with its first four outputs set to its inputs (``Signal::LowpassIIR``; a cutoff at or above half the sampling
    rate becomes 0.49 of it).  Returns (times, filtered values (T', n)), which OpenSim then splines as they are."""
    t = np.asarray(time, dtype=float)
    x = np.asarray(values, dtype=float).reshape(len(t), -1)
    if len(t) < 4:
        raise ValueError("the low-pass filter needs at least 4 samples")
    pad = len(t) // 2

    def padded(a):
        return np.concatenate([2.0 * a[0] - a[pad:0:-1], a, 2.0 * a[-1] - a[-2:-2 - pad:-1]])
    tp = padded(t)
    xp = np.column_stack([padded(x[:, k]) for k in range(x.shape[1])])
    step = float(np.diff(tp).min())
    if (tp[-1] - tp[0]) / (len(tp) - 1) - step > np.finfo(float).eps:  # OpenSim's Storage::resample
        grid, v = [], float(tp[0])
        while v <= tp[-1]:
            grid.append(v)
            v += step
        grid = np.array(grid)
        tp, xp = grid, _natural_quintic(tp, xp)(grid)
    fc = 0.49 / step if cutoff_hz >= 0.5 / step else float(cutoff_hz)
    wa = math.tan(2.0 * math.pi * fc * step / 2.0)
    wa2, wa3 = wa * wa, wa * wa * wa
    denom = (wa + 1) * (wa * wa + wa + 1.0)
    a = (wa3 / denom, 3 * wa3 / denom, 3 * wa3 / denom, wa3 / denom)
    b = ((3 * wa3 + 2 * wa2 - 2 * wa - 3) / denom, (3 * wa3 - 2 * wa2 - 2 * wa + 3) / denom,
         (wa - 1) * (wa2 - wa + 1) / denom)

    def one_pass(sig):
        out = np.empty_like(sig)
        out[:4] = sig[:4]
        for i in range(3, len(sig)):
            out[i] = (a[0] * sig[i] + a[1] * sig[i - 1] + a[2] * sig[i - 2] + a[3] * sig[i - 3]
                      - b[0] * out[i - 1] - b[1] * out[i - 2] - b[2] * out[i - 3])
        return out
    return tp, np.column_stack([one_pass(one_pass(xp[:, k])[::-1])[::-1] for k in range(xp.shape[1])])


def motion_derivatives(time: np.ndarray, q: np.ndarray, smoothing: float | None = None, *,
                       lowpass_hz: float | None = None, at: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, q̇, q̈ at ``time`` of a sampled motion (T, n), differentiated as OpenSim's tools do: a natural quintic
    interpolating spline (OpenSim's ``GCVSplineSet(5, ...)`` without smoothing; third and fourth derivatives zero
    at the ends), after OpenSim's low-pass filter when ``lowpass_hz`` is given (:func:`opensim_lowpass`); or SciPy's
    cubic smoothing spline with penalty ``smoothing`` (``make_smoothing_spline``, lam).  ``at``: other times (the
    interpolating spline only), e.g. the rows OpenSim's InverseDynamicsTool reports (:func:`analyze_tool_rows`)."""
    time = np.asarray(time, dtype=float)
    if at is not None and smoothing is not None:
        raise ValueError("the smoothing spline is evaluated at the motion's frames only")
    q = np.asarray(q, dtype=float)
    if smoothing is not None:
        out = []
        for k in range(q.shape[1]):
            s = make_smoothing_spline(time, q[:, k], lam=smoothing)
            out.append((s(time), s(time, 1), s(time, 2)))
        return tuple(np.stack([o[i] for o in out], axis=1) for i in range(3))
    knots, values = (time, q) if lowpass_hz is None else opensim_lowpass(time, q, lowpass_hz)
    s = _natural_quintic(knots, values)
    at = time if at is None else np.asarray(at, dtype=float)
    return s(at), s(at, 1), s(at, 2)


def analysis_states(time: np.ndarray, q: np.ndarray, qdot: np.ndarray | None = None, *,
                    lowpass_hz: float | None = None, at: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """q, q̇, q̈ at ``time`` as OpenSim's AnalyzeTool hands them to its analyses (StaticOptimization): from
    coordinates, q and q̇ of their natural quintic spline (after :func:`opensim_lowpass` with ``lowpass_hz``) and
    q̈ the derivative of a second such spline through the speeds at the spline's knots; with speeds (a states file),
    q̈ the derivative of the speeds' spline.  (OpenSim's InverseDynamicsTool instead takes q̈ from the coordinates'
    spline itself: :func:`motion_derivatives`.)  ``at``: other times than the motion's (coordinates only), e.g. the
    rows of OpenSim's filtered states (:func:`analyze_tool_rows`)."""
    time = np.asarray(time, dtype=float)
    if qdot is not None:
        return np.asarray(q, dtype=float), np.asarray(qdot, dtype=float), _natural_quintic(time, qdot)(time, 1)
    knots, values = (time, np.asarray(q, dtype=float)) if lowpass_hz is None else opensim_lowpass(time, q, lowpass_hz)
    coordinates = _natural_quintic(knots, values)
    speeds = _natural_quintic(knots, coordinates(knots, 1))
    at = time if at is None else np.asarray(at, dtype=float)
    return coordinates(at), coordinates(at, 1), speeds(at, 1)


def analyze_tool_rows(time: np.ndarray, q: np.ndarray, lowpass_hz: float | None, t0: float, t1: float,
                      step_interval: int = 1) -> np.ndarray:
    """The times OpenSim's AnalyzeTool reports for a coordinates file: the rows of its states storage (the motion's
    rows, or with a low-pass filter its padded, resampled grid, :func:`opensim_lowpass`) from the last at or before
    ``t0`` to the last at or before ``t1`` (``Storage::findIndex``), with ``step_interval`` N the first, the last
    and those whose row index is a multiple of N (``Analysis::proceed``)."""
    time = np.asarray(time, dtype=float)
    grid = time if lowpass_hz is None else opensim_lowpass(time, np.asarray(q, dtype=float)[:, :1], lowpass_hz)[0]
    first = max(int(np.searchsorted(grid, t0, side="right")) - 1, 0)
    last = max(int(np.searchsorted(grid, t1, side="right")) - 1, 0)
    index = np.arange(first, last + 1)
    if step_interval > 1:
        index = index[(index % step_interval == 0) | (index == first) | (index == last)]
    return grid[index]


def inverse_dynamics_of_motion(model: Model, time: np.ndarray, q: np.ndarray, qdot: np.ndarray | None = None,
                               qddot: np.ndarray | None = None, *, smoothing: float | None = None,
                               lowpass_hz: float | None = None, external_loads: Any = None,
                               limit_forces: Sequence[Any] = (), path_forces: Sequence[Any] = (),
                               force_elements: Any = None) -> pd.DataFrame:
    """Generalized forces τ = M q̈ + N q̇ - G - τ_ext - τ_passive along a motion (about the coordinates: on a Ball,
    Free or Ellipsoid joint's rotations OpenSim's are about its speeds, :func:`osim_emb.core.speeds.forces_about_speeds`,
    as the ``inverse-dynamics`` command writes them; columns NAME_moment or NAME_force, as
    OpenSim).

    Parameters
    ----------
    model : Model
    time : array_like
        (T,) strictly increasing times, seconds (T >= 3).
    q : array_like
        (T, n_q) coordinates along the motion: rad, m.
    qdot, qddot : array_like, optional
        Speeds (rad/s, m/s) and accelerations (rad/s², m/s²); missing ones come from differentiating
        a spline of q (or of qdot).
    smoothing : float, optional
        Penalty of SciPy's smoothing spline (``make_smoothing_spline``); None interpolates (OpenSim's natural
        quintic spline, :func:`motion_derivatives`).
    lowpass_hz : float, optional
        OpenSim's low-pass filter of the coordinates first (:func:`opensim_lowpass`; its
        ``lowpass_cutoff_frequency_for_coordinates``).
    external_loads : ExternalLoads, optional
        Forces from outside the model (ground reactions; :func:`osim_emb.io.external_loads.read_external_loads`),
        interpolated at ``time`` and applied as τ_ext (:func:`osim_emb.core.dynamics.external_load_forces`).
    limit_forces : sequence of CoordinateLimitForce, optional
        The model's passive coordinate limits (:func:`osim_emb.simulation.muscle_driven.coordinate_forces_from_model`),
        applied as OpenSim's InverseDynamicsTool applies the forces it does not exclude.
    path_forces : sequence of PassivePathForce, optional
        The model's PathSprings and Ligaments (:func:`osim_emb.simulation.muscle_driven.passive_path_forces_from_model`),
        applied likewise (:func:`osim_emb.simulation.muscle_driven.passive_path_loads`).
    force_elements : ForceElements, optional
        The model's contact, bushings, springs and prescribed forces
        (:func:`osim_emb.simulation.force_elements.model_force_elements`), applied likewise at each frame's state.

    Returns
    -------
    pandas.DataFrame
        ``time`` and NAME_moment (N m) per rotational, NAME_force (N) per translational coordinate.

    Examples
    --------
    >>> import numpy as np
    >>> import osim_emb as oe
    >>> model = oe.load_builtin()

    A passive fall needs no generalized forces (up to the spline's differentiation error, largest at the first and
    last frames, where the natural spline's end conditions hold):

    >>> fall = oe.simulate(model, 0.2, n_output=201)
    >>> tau = oe.inverse_dynamics_of_motion(model, fall["time"], fall[model.coordinate_names])
    >>> list(tau.columns)
    ['time', 'elv_angle_moment', 'shoulder_elv_moment', 'shoulder_rot_moment']
    >>> gravity = np.abs(oe.gravity_forces(model, model.default_q)).max()
    >>> bool(np.abs(tau.iloc[5:-5, 1:].to_numpy()).max() < 1e-4 * gravity)
    True
    """
    time, q = np.asarray(time, dtype=float), np.asarray(q, dtype=float)
    if time.ndim != 1 or time.size < 3 or q.shape != (time.size, model.n_q):
        raise ValueError(f"a motion needs at least 3 frames and {model.n_q} coordinates; got time {time.shape}, "
                         f"q {q.shape}")
    if not (np.all(np.isfinite(time)) and np.all(np.isfinite(q))):
        raise ValueError("the motion has non-finite times or coordinates")
    if np.any(np.diff(time) <= 0):
        k = int(np.flatnonzero(np.diff(time) <= 0)[0]) + 1
        raise ValueError(f"time must increase strictly: frame {k} (t = {time[k]:.9g}) follows t = {time[k - 1]:.9g}")
    if qdot is None:
        q, qdot, qddot = motion_derivatives(time, q, smoothing, lowpass_hz=lowpass_hz)
    elif qddot is None:  # speeds given: differentiate them once
        _, qddot, _ = motion_derivatives(time, np.asarray(qdot, dtype=float), smoothing, lowpass_hz=lowpass_hz)
    tau = dyn.inverse_dynamics(model, q, qdot, qddot)
    if external_loads is not None:
        tau = tau - dyn.external_load_forces(model, q, external_loads.at(time))
    if len(limit_forces):
        tau = tau - limit_generalized_forces(limit_forces, q, qdot)
    if len(path_forces):
        from osim_emb.simulation.muscle_driven import passive_path_loads
        tau = tau - passive_path_loads(model, path_forces, q, qdot)[2]
    if force_elements:
        from osim_emb.simulation.force_elements import force_element_forces
        tau = tau - force_element_forces(model, force_elements, time, q, qdot)
    data = {"time": np.asarray(time)}
    for k, c in enumerate(model.coordinates):
        data[f"{c.name}_{'moment' if c.motion_type == 'rotational' else 'force'}"] = tau[:, k]
    return pd.DataFrame(data)


def limit_generalized_forces(limit_forces: Sequence[Any], q: np.ndarray, qdot: np.ndarray) -> np.ndarray:
    """Generalized forces (N, n_q) of CoordinateLimitForces (:func:`osim_emb.simulation.muscle_driven.
    coordinate_forces_from_model`) along configurations q and speeds q̇ (N, n_q); on a coupled coordinate through
    its gradient."""
    from osim_emb.simulation.muscle_driven import coordinate_state
    q, qdot = np.atleast_2d(q), np.atleast_2d(qdot)
    out = np.zeros(q.shape)
    for i in range(q.shape[0]):
        for f in limit_forces:
            c, cd, g = coordinate_state(f, q[i], qdot[i])
            value = f.generalized_force(c, cd)
            if g is None:
                out[i, f.coordinate] += value
            else:
                out[i] += value * g
    return out


def _terms_function(model: Model):
    """(q, q̇) -> (M, N q̇, G) at one state: one call of the compiled model."""
    from osim_emb.core.compiled import compiled_model
    cm = compiled_model(model)

    def compiled_terms(q, qd):
        m, nqd, g = cm.terms(np.asarray(q, dtype=float)[None], np.asarray(qd, dtype=float)[None])
        return m[0], nqd[0], g[0]
    return compiled_terms


def minimum_jerk(t: np.ndarray, t0: float, t1: float, a: float, b: float) -> tuple[np.ndarray, ...]:
    """Minimum-jerk move from a (at t0) to b (at t1): value, first and second time derivative."""
    t = np.asarray(t, dtype=float)
    d = t1 - t0
    s = np.clip((t - t0) / d, 0.0, 1.0)
    inside = (t > t0) & (t < t1)
    p = 10 * s ** 3 - 15 * s ** 4 + 6 * s ** 5
    dp = (30 * s ** 2 - 60 * s ** 3 + 30 * s ** 4) / d * inside
    ddp = (60 * s - 180 * s ** 2 + 120 * s ** 3) / d ** 2 * inside
    return a + (b - a) * p, (b - a) * dp, (b - a) * ddp


@dataclass
class TrackingResult:
    """Computed-torque tracking: states, desired states, torques (all tables with a time column)."""

    states: pd.DataFrame
    desired: pd.DataFrame
    torques: pd.DataFrame
    nfev: int
    max_error: dict[str, float]


def computed_torque_tracking(model: Model, desired: Callable[[float], tuple[np.ndarray, np.ndarray, np.ndarray]],
                             t_end: float, gains: Sequence[float], *, q0: Any = None, qdot0: Any = None,
                             method: str = "RK45", rtol: float = 1e-10, atol: float = 1e-10,
                             n_output: int = 401) -> TrackingResult:
    """Eqs 200-201: solve [[M, -I], [I, 0]] [q̈; τ] = [G - N q̇; Q_d], Q_d = q̈_d - 2K(q̇ - q̇_d) - K²(q - q_d).

    ``desired(t)`` returns (q_d, q̇_d, q̈_d); K = diag(gains) (critically damped PD).
    The default integrator is SciPy's RK45 (Dormand-Prince), the embedded 4(5) Runge-Kutta pair that
    replaced Fehlberg's; pass ``method`` for another.
    """
    n = model.n_q
    k = np.diag(np.asarray(gains, dtype=float))
    qd0, qdd0, _ = desired(0.0)
    q0 = qd0 if q0 is None else np.asarray(q0, dtype=float)
    qdot0 = qdd0 if qdot0 is None else np.asarray(qdot0, dtype=float)

    terms_at = _terms_function(model)

    def solve(t, q, qd):
        q_d, qd_d, qdd_d = desired(t)
        qq = qdd_d - 2 * k @ (qd - qd_d) - k @ k @ (q - q_d)
        mass, nqd, grav = terms_at(q, qd)
        a = np.block([[mass, -np.eye(n)], [np.eye(n), np.zeros((n, n))]])
        b = np.concatenate([grav - nqd, qq])
        x = np.linalg.solve(a, b)
        return x[:n], x[n:]

    def fun(t, y):
        qdd, _ = solve(t, y[:n], y[n:])
        return np.concatenate([y[n:], qdd])

    te = np.linspace(0.0, t_end, n_output)
    sol = solve_ivp(fun, (0.0, t_end), np.concatenate([q0, qdot0]), method=method, rtol=rtol, atol=atol, t_eval=te)
    if not sol.success:
        raise RuntimeError(f"integration failed: {sol.message}")
    names = model.coordinate_names
    q, qd = sol.y[:n].T, sol.y[n:].T
    tau = np.array([solve(t, q[i], qd[i])[1] for i, t in enumerate(sol.t)])
    des = [desired(t) for t in sol.t]
    q_d, qd_d = np.array([d[0] for d in des]).reshape(q.shape), np.array([d[1] for d in des]).reshape(q.shape)
    states = pd.DataFrame({"time": sol.t, **{c: q[:, i] for i, c in enumerate(names)}, **speed_columns(model, q, qd)})
    desired_t = pd.DataFrame({"time": sol.t, **{c: q_d[:, i] for i, c in enumerate(names)},
                              **speed_columns(model, q_d, qd_d)})
    torques = pd.DataFrame({"time": sol.t, **{f"{c}_moment": tau[:, i] for i, c in enumerate(names)}})
    err = {c: float(np.abs(states[c] - desired_t[c]).max()) for c in names}
    return TrackingResult(states, desired_t, torques, sol.nfev, err)


def muscle_force_sharing(model: Model, time: np.ndarray, q: np.ndarray, qdot: np.ndarray, tau: np.ndarray, *,
                         opensim_compat: bool = True, passive: bool = True, reserves: Any = None,
                         **options) -> tuple[pd.DataFrame, pd.DataFrame, Any]:
    """Static optimization along a motion: minimize the sum of squared activations subject to R(q) F(a, l, l̇) = τ
    with the rigid-tendon Hill models of the model's muscles (seed section 4-4 C).

    On the rotations of Ball, Free and Ellipsoid joints the equations are taken about OpenSim's speeds (E⁻ᵀ R F =
    E⁻ᵀ τ, :mod:`osim_emb.core.speeds`), where OpenSim's reserve actuators act: the result's reserve forces and
    residual are OpenSim's there.

    Parameters
    ----------
    model : Model
    time : array_like
        (N,) frame times, s.
    q, qdot : array_like
        (N, n_q) coordinates (rad, m) and their rates along the motion.
    tau : array_like
        (N, n_q) generalized forces the muscles must produce (N m, N), e.g. :func:`inverse_dynamics_of_motion`.
    opensim_compat : bool, default True
        Moment arms and lengthening speeds as OpenSim computes them (its stale wrap-point cache).
    passive : bool, default True
        Include the passive fibre forces (OpenSim's StaticOptimization leaves them out: ``passive=False``).
    reserves : float or array_like, optional
        Reserve actuators' optimal forces, one for all coordinates or (n_q,).
    **options
        Passed to :func:`osim_emb.simulation.static_optimization.static_optimization` (e.g. ``actuators``).

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame, StaticOptimizationResult)
        The muscle forces (N) and activations, columns ``time`` and one per muscle, and the full result
        (reserves, residual ``tau - R F``, multipliers).

    Examples
    --------
    Holding the built-in shoulder still at its default pose against gravity:

    >>> import numpy as np, osim_emb as oe
    >>> model = oe.load_builtin()
    >>> q = np.tile(model.default_q, (5, 1))
    >>> tau = oe.inverse_dynamics(model, q, np.zeros_like(q), np.zeros_like(q))
    >>> forces, activations, result = oe.muscle_force_sharing(model, np.linspace(0, 0.2, 5), q, np.zeros_like(q), tau)
    >>> forces.shape
    (5, 15)
    >>> bool(np.abs(result.residual).max() < 1e-9)  # R F balances tau at every frame
    True
    """
    from osim_emb.io.muscle_xml import PASSIVE_PATH_FORCE_TYPES
    from osim_emb.paths.geometry import lengths_and_moment_arms, lengthening_speeds
    from osim_emb.muscles.hill import units_applying_force
    from osim_emb.simulation.static_optimization import muscle_force_coefficients, static_optimization
    muscles = units_applying_force(model.muscles)
    applying = {m.name for m in muscles}
    off = [m.name for m in model.muscles if m.parameters is not None and m.name not in applying]
    if off:
        log.warning("static optimization of %s leaves out %d unit(s) whose appliesForce is false, as OpenSim's "
                    "StaticOptimization removes them: %s", model.name, len(off),
                    ", ".join(off[:8]) + (", ..." if len(off) > 8 else ""))
    others = [m.name for m in model.muscles if m.parameters is None]
    if not muscles:
        raise ValueError(f"{model.name}: no muscle with a force model to share the generalized forces"
                         + (f" ({len(off)} switched off: appliesForce false)" if off else "")
                         + (f" ({len(others)} path unit(s) without one: {', '.join(others[:5])}"
                            f"{', ...' if len(others) > 5 else ''})" if others else ""))
    springs = {m.name for m in model.muscles if m.type_name in PASSIVE_PATH_FORCE_TYPES}
    others = [n for n in others if n not in springs]  # path springs and ligaments act through τ (path_forces)
    if others:  # path actuators and other units without a muscle model: not shared, not applied
        log.warning(
            "static optimization of %s shares the forces among its %d muscles; it leaves out %d path unit(s) "
            "without a muscle model (path actuators): %s", model.name, len(muscles),
            len(others), ", ".join(others[:8]) + (", ..." if len(others) > 8 else ""))
    length, r = lengths_and_moment_arms(model, q, [m.name for m in muscles], opensim_compat=opensim_compat,
                                        allow_out_of_range=True)
    speed = lengthening_speeds(model, q, qdot, [m.name for m in muscles], opensim_compat=opensim_compat,
                               allow_out_of_range=True)  # dL/dt (OpenSim's sum over the path's point pairs)
    a_coef, p_coef = muscle_force_coefficients([m.parameters for m in muscles], length, speed)
    lo = np.array([getattr(m.parameters, "min_control", 0.0) for m in muscles])
    hi = np.array([getattr(m.parameters, "max_control", 1.0) for m in muscles])
    if angular_velocity_joints(model):  # OpenSim's reserves act on its speeds: the equations about the speeds
        r, tau = forces_about_speeds(model, q, r), forces_about_speeds(model, q, tau)
        if options.get("actuators") is not None:
            b, lo_a, hi_a = options["actuators"]
            b = np.broadcast_to(np.asarray(b, dtype=float), (len(q), *np.shape(b)[-2:]))
            options["actuators"] = (forces_about_speeds(model, q, b), lo_a, hi_a)
    res = static_optimization(r, tau, a_coef, p_coef if passive else None, lower=lo, upper=hi, reserves=reserves,
                              coordinate_names=model.coordinate_names, **options)
    names = [m.name for m in muscles]
    forces = pd.DataFrame({"time": time, **{n: res.forces[:, i] for i, n in enumerate(names)}})
    acts = pd.DataFrame({"time": time, **{n: res.activations[:, i] for i, n in enumerate(names)}})
    return forces, acts, res
