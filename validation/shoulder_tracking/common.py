"""Shared parts of the 3D shoulder tracking study (seed section 4-4 C): the desired motion, a
Runge-Kutta-Fehlberg 4(5) solver for ``solve_ivp``, and the OpenSim side of the static-optimization
comparison.  Used by ``run_tracking.py``, ``tests/test_shoulder_tracking.py`` and
``benchmarks/bench_ode_vs_dae.py``.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy.integrate._ivp.rk import RungeKutta  # SciPy's base of RK23/RK45/DOP853 (Butcher tableau + control)

# -- the tracking problem ----------------------------------------------------------------------------
PLANE_OF_ELEVATION = np.radians(90.0)  # elv_angle: forward flexion plane
AXIAL_ROTATION = np.radians(-30.0)     # shoulder_rot
ELEVATION_START = np.radians(15.0)     # shoulder_elv at rest
ELEVATION_PEAK = np.radians(105.0)     # shoulder_elv at the turning point
DURATION = 2.0                          # s: rise over the first half, return over the second
GAINS = (100.0, 100.0, 1000.0)          # K = diag(100, 100, 1000), seed Eq 201
COORDINATES = ("elv_angle", "shoulder_elv", "shoulder_rot")


def rise_and_return(t: Any, duration: float = DURATION, start: float = ELEVATION_START,
                    peak: float = ELEVATION_PEAK) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minimum-jerk rise from ``start`` to ``peak`` and return, through the via point (peak at duration/2).

    With s = t/(T/2) on the rise and s = (T - t)/(T/2) on the return,
    q = start + (peak - start) p(s),  p(s) = (20 s³ - 25 s⁴ + 8 s⁵)/3:
    rest (zero velocity and acceleration) at both ends, and at the peak zero velocity and jerk, so that
    q is C⁴ -- the minimum-jerk movement through a via point with the symmetric boundary conditions
    (Flash & Hogan 1985).  Returns q, q̇, q̈ (constant outside [0, T])."""
    t = np.asarray(t, dtype=float)
    h = duration / 2.0
    rising = t <= h
    s = np.clip(np.where(rising, t, duration - t) / h, 0.0, 1.0)
    sign = np.where(rising, 1.0, -1.0)
    d = peak - start
    p = (20 * s ** 3 - 25 * s ** 4 + 8 * s ** 5) / 3.0
    dp = (60 * s ** 2 - 100 * s ** 3 + 40 * s ** 4) / 3.0 / h
    ddp = (120 * s - 300 * s ** 2 + 160 * s ** 3) / 3.0 / h ** 2
    return start + d * p, d * dp * sign, d * ddp


def desired(t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q_d, q̇_d, q̈_d) of (elv_angle, shoulder_elv, shoulder_rot) at time t (scalar arithmetic: this is called
    at every right-hand-side evaluation; equal to :func:`rise_and_return`)."""
    h = DURATION / 2.0
    rising = t <= h
    s = min(max((t if rising else DURATION - t) / h, 0.0), 1.0)
    d = ELEVATION_PEAK - ELEVATION_START
    s2 = s * s
    e = ELEVATION_START + d * s2 * s * (20.0 - 25.0 * s + 8.0 * s2) / 3.0
    de = d * s2 * (60.0 - 100.0 * s + 40.0 * s2) / (3.0 * h) * (1.0 if rising else -1.0)
    dde = d * s * (120.0 - 300.0 * s + 160.0 * s2) / (3.0 * h * h)
    return (np.array([PLANE_OF_ELEVATION, e, AXIAL_ROTATION]), np.array([0.0, de, 0.0]), np.array([0.0, dde, 0.0]))


def desired_batch(times: Sequence[float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(q_d, q̇_d, q̈_d), each (T, 3)."""
    times = np.asarray(times, dtype=float)
    e, de, dde = rise_and_return(times)
    z = np.zeros_like(times)
    return (np.stack([z + PLANE_OF_ELEVATION, e, z + AXIAL_ROTATION], axis=1), np.stack([z, de, z], axis=1),
            np.stack([z, dde, z], axis=1))


# -- Runge-Kutta-Fehlberg 4(5) -----------------------------------------------------------------------
class RKF45(RungeKutta):
    """Fehlberg's embedded 4(5) pair (Fehlberg 1969), the integrator of the seed's tracking problem.

    The fourth-order solution is propagated and the fifth-order one estimates its local error (no
    local extrapolation, unlike SciPy's RK45 = Dormand-Prince); step-size control is SciPy's
    (``RungeKutta``).  Dense output (``t_eval``) is the cubic Hermite interpolant of the step's end
    values and slopes.  Pass the class as ``solve_ivp(..., method=RKF45)``.
    """

    order = 4
    error_estimator_order = 4
    n_stages = 6
    C = np.array([0.0, 1 / 4, 3 / 8, 12 / 13, 1.0, 1 / 2])
    A = np.array([
        [0.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        [1 / 4, 0.0, 0.0, 0.0, 0.0, 0.0],
        [3 / 32, 9 / 32, 0.0, 0.0, 0.0, 0.0],
        [1932 / 2197, -7200 / 2197, 7296 / 2197, 0.0, 0.0, 0.0],
        [439 / 216, -8.0, 3680 / 513, -845 / 4104, 0.0, 0.0],
        [-8 / 27, 2.0, -3544 / 2565, 1859 / 4104, -11 / 40, 0.0],
    ])
    B = np.array([25 / 216, 0.0, 1408 / 2565, 2197 / 4104, -1 / 5, 0.0])  # 4th order (propagated)
    B5 = np.array([16 / 135, 0.0, 6656 / 12825, 28561 / 56430, -9 / 50, 2 / 55])  # 5th order (error estimate)
    E = np.append(B - B5, 0.0)
    # cubic Hermite dense output: y(t_old + x h) = y_old + h K^T P [x, x^2, x^3]
    _b = np.append(B, 0.0)
    _e0 = np.eye(7)[0]
    _e6 = np.eye(7)[6]
    P = np.stack([_e0, 3 * _b - 2 * _e0 - _e6, _e0 + _e6 - 2 * _b], axis=1)


# -- OpenSim's StaticOptimization -------------------------------------------------------------------------
def read_sto(path: str | Path) -> pd.DataFrame:
    lines = Path(path).read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if line.strip() == "endheader")
    return pd.read_csv(io.StringIO("\n".join(lines[i + 1:])), sep=r"\s+")


def all_coordinates(model, q: np.ndarray, qd: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Values and speeds of every OpenSim coordinate (generalized, coupled and locked) along a motion, from the
    package's joint functions: {name: (values (T,), speeds (T,))}."""
    out = {}
    for k, c in enumerate(model.coordinate_names):
        out[c] = (q[:, k], qd[:, k])
    for d in model.dependent_coordinates:
        jet = d.function.evaluate(q, 1)
        out[d.name] = (jet.value, np.einsum("nk,nk->n", jet.gradient, qd))
    return out


def write_states(path: str | Path, model_os, model, times: np.ndarray, q: np.ndarray, qd: np.ndarray) -> None:
    """An OpenSim 4 states file (columns /jointset/J/C/value and /speed for every coordinate):
    :func:`osim_emb.opensim.bridge.write_states_file`."""
    from osim_emb.opensim.bridge import write_states_file
    write_states_file(path, model_os, model, times, q, qd)


def write_coordinates_motion(path: str | Path, model, times: np.ndarray, q: np.ndarray, qd: np.ndarray) -> None:
    """A .mot of every coordinate's value (degrees), the usual input of OpenSim's tools."""
    from osim_emb.io.motion import write_motion
    values = all_coordinates(model, q, qd)
    write_motion(path, pd.DataFrame({"time": times, **{n: np.degrees(v) for n, (v, _) in values.items()}}),
                 name="coordinates", in_degrees=True)


def run_opensim_static_optimization(osim, model_path: str | Path, states_path: str | Path, out_dir: str | Path,
                                    t0: float, t1: float, *, convergence: float = 1e-8,
                                    coordinates_file: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """OpenSim's AnalyzeTool with a StaticOptimization analysis (as tests/test_static_optimization.py drives it
    on arm26): (activations, forces) tables.  ``coordinates_file``: the input is a .mot of coordinates (OpenSim
    differentiates it for the speeds) instead of a states file."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tool = osim.AnalyzeTool()
    tool.setName("so")
    tool.setModelFilename(str(model_path))
    if coordinates_file:
        tool.setCoordinatesFileName(str(states_path))
        tool.setLowpassCutoffFrequency(-1.0)
    else:
        tool.setStatesFileName(str(states_path))
    tool.setInitialTime(float(t0))
    tool.setFinalTime(float(t1))
    tool.setResultsDir(str(out_dir / "results"))
    tool.setSolveForEquilibrium(False)
    so = osim.StaticOptimization()
    so.setStartTime(float(t0))
    so.setEndTime(float(t1))
    so.setConvergenceCriterion(convergence)
    so.setMaxIterations(1000)
    tool.getAnalysisSet().cloneAndAppend(so)
    setup = out_dir / "setup_static_optimization.xml"
    tool.printToXML(str(setup))
    osim.AnalyzeTool(str(setup)).run()
    act = read_sto(out_dir / "results" / "so_StaticOptimization_activation.sto")
    frc = read_sto(out_dir / "results" / "so_StaticOptimization_force.sto")
    return act, frc


def opensim_so_ingredients(model_path: str | Path, model, times: np.ndarray, q: np.ndarray, qd: np.ndarray,
                           states_path: str | Path | None = None) -> dict[str, np.ndarray]:
    """What OpenSim's StaticOptimization uses at each frame, measured through OpenSim's API:

    * ``R`` (T, 3, m): the generalized forces of a unit tension reduced to the three generalized
      coordinates, J^T Q: each muscle's tension overridden to 1 N (``overrideActuation``) and the
      mobility forces Q read with ``InverseDynamicsSolver`` (unit tension minus none), J the
      coupling of OpenSim's own coupler functions (``OpenSimReference.coupling``);
    * ``fopt`` (T, m): ``calcInextensibleTendonActiveFiberForce(s, 1)`` (rigid tendon, activation 1),
      the tension per unit activation; ``length``, ``speed``: ``getLength``, ``getLengtheningSpeed``;
    * ``qdd_spline`` (T, 3): the accelerations StaticOptimization takes, the first derivative of the
      quintic GCV splines of the speeds in the states file (``GCVSplineSet(5, Storage)``).
    """
    import opensim as osim
    from osim_emb.opensim.bridge import OpenSimReference
    ref = OpenSimReference(str(model_path), model)
    mo, s = ref.model_os, ref.state
    names = [m.name for m in model.muscles]
    fs = mo.getForceSet()
    muscles = [osim.Muscle.safeDownCast(fs.get(n)) for n in names]
    thelen = [osim.Thelen2003Muscle.safeDownCast(fs.get(n)) for n in names]
    ids = osim.InverseDynamicsSolver(mo)
    T, m, n = len(times), len(names), model.n_q
    R = np.zeros((T, n, m))
    fopt, length, speed = (np.zeros((T, m)) for _ in range(3))
    for mu in muscles:
        mu.overrideActuation(s, False)
    for i in range(T):
        ref.set_configuration(q[i], qd[i])
        for j, mu in enumerate(thelen):
            fopt[i, j] = mu.calcInextensibleTendonActiveFiberForce(s, 1.0)
            length[i, j] = mu.getLength(s)
            speed[i, j] = mu.getLengtheningSpeed(s)
    for mu in muscles:
        mu.overrideActuation(s, True)
        mu.setOverrideActuation(s, 0.0)
    zero = osim.Vector(s.getNU(), 0.0)
    for i in range(T):
        ref.set_configuration(q[i], np.zeros(n))
        jac, _ = ref.coupling()
        mo.realizeDynamics(s)
        base = ids.solve(s, zero).to_numpy()
        for j, mu in enumerate(muscles):
            mu.setOverrideActuation(s, 1.0)
            mo.realizeDynamics(s)
            R[i, :, j] = -jac.T @ (ids.solve(s, zero).to_numpy() - base)
            mu.setOverrideActuation(s, 0.0)
    out = {"R": R, "fopt": fopt, "length": length, "speed": speed}
    if states_path is not None:
        splines = osim.GCVSplineSet(5, osim.Storage(str(states_path)))
        cs = mo.getCoordinateSet()
        qdd = np.zeros((T, n))
        d1 = osim.StdVectorInt()
        d1.append(0)
        for k, c in enumerate(model.coordinate_names):
            sp = splines.get(cs.get(c).getAbsolutePathString() + "/speed")
            for i, t in enumerate(times):
                qdd[i, k] = sp.calcDerivative(d1, osim.Vector(1, float(t)))
        out["qdd_spline"] = qdd
    return out


# -- ODE against DAE on the tracking problem ---------------------------------------------------------------
def tracking_timings(doc, tolerances: Sequence[float], integrators: Sequence[Any] = ("RK45",), repeat: int = 3,
                     t_end: float = DURATION, n_samples: int = 201) -> pd.DataFrame:
    """Time Eq 200 integrated in minimal coordinates (:func:`osim_emb.simulation.dae.ode_tracking_rhs`) and in full
    coordinates with the couplers as constraints (:meth:`osim_emb.simulation.dae.FullCoordinateDAE.tracking_rhs`,
    Baumgarte 10/10), both starting on the desired trajectory, so that the exact solution is q = q_d:
    the error is max |q - q_d| over ``n_samples`` times.  Best of ``repeat`` runs."""
    import time

    from scipy.integrate import solve_ivp

    from osim_emb.simulation.dae import FullCoordinateDAE, ode_tracking_rhs
    dae = FullCoordinateDAE.from_document(doc)
    red = dae.reduced
    assert tuple(red.coordinate_names) == COORDINATES
    act = [dae.coordinate_names.index(c) for c in COORDINATES]
    te = np.linspace(0.0, t_end, n_samples)
    qd_ref, _, _ = desired_batch(te)
    q0, qd0, _ = desired(0.0)
    problems = {
        "ODE (3 coordinates)": (ode_tracking_rhs(red, desired, GAINS), np.concatenate([q0, qd0]),
                                lambda y: y[:3]),
        f"DAE ({dae.n} coordinates, {dae.m} constraints)": (dae.tracking_rhs(desired, GAINS, act),
                                                            dae.consistent_state(q0, qd0),
                                                            lambda y: dae.reduced_state(y.T)[0].T),
    }
    rows = []
    for integ in integrators:
        iname = integ if isinstance(integ, str) else integ.__name__
        for tol in tolerances:
            for label, (fun, y0, pick) in problems.items():
                fun(0.0, y0)
                best = np.inf
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    sol = solve_ivp(fun, (0.0, t_end), y0, method=integ, rtol=tol, atol=tol, t_eval=te)
                    best = min(best, time.perf_counter() - t0)
                if not sol.success:
                    raise RuntimeError(sol.message)
                err = np.abs(pick(sol.y).T - qd_ref).max()
                rows.append({"formulation": label, "integrator": iname, "tolerance": tol, "evaluations": sol.nfev,
                             "seconds": best, "max_tracking_error_rad": err,
                             "microseconds_per_evaluation": 1e6 * best / sol.nfev})
    return pd.DataFrame(rows)
