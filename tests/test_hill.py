"""Hill-type muscle models against OpenSim 4.6's own implementation.

Agreement criterion for a quantity y (ours) against OpenSim's y_ref:
|y - y_ref| <= rtol * |y_ref| + atol.  rtol = 1e-10 everywhere except where
OpenSim's own iterative solution is less accurate than that (documented at
each test); atol is far below any physical force (1e-13 of the curve scale),
needed only where OpenSim's curve value itself is ~0 and its quintic-Bezier
parameter solve (tolerance 2.2e-14 on x) dominates.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from lxml import etree

from osim_emb.muscles import curves as C
from osim_emb.muscles import (
    MuscleModelError,
    RigidPathActuator,
    Schutte1993Muscle,
    Thelen2003Muscle,
    muscle_from_dict,
)
from osim_emb.io.muscle_xml import hill_muscle_from_xml


def _close(ours, ref, rtol=1e-10, atol=1e-13, label=None):
    ours = np.asarray(ours, dtype=float)
    ref = np.asarray(ref, dtype=float)
    err = np.abs(ours - ref)
    bad = err > rtol * np.abs(ref) + atol
    assert not bad.any(), (
        f"{bad.sum()} of {bad.size} values differ; worst: ours={ours[bad][np.argmax(err[bad])]!r} "
        f"ref={ref[bad][np.argmax(err[bad])]!r}"
    )
    big = np.abs(ref) > 1e-3
    worst_rel = float(np.max(err[big] / np.abs(ref[big]), initial=0.0))
    if label:  # pytest -s -k ... | grep agreement
        print(f"[agreement] {label}: n={ref.size}, max rel err (|ref|>1e-3) {worst_rel:.1e}, "
              f"max abs err {float(err.max(initial=0.0)):.1e} (max |ref| {float(np.abs(ref).max()):.3g})")
    return worst_rel, float(err.max(initial=0.0))


# =============================================================================
# Curves that need no OpenSim
# =============================================================================
def test_thelen_force_velocity_inverts_opensims_forward_relation():
    """Our closed-form f_V(v, a) is the exact inverse of OpenSim's calcdlceN relation."""
    fv = np.linspace(-0.5, 2.2, 2001)
    for a in (0.01, 0.3, 1.0):
        v = C.thelen_fiber_velocity(fv, a, 0.3, 1.8, 0.95)
        back = C.thelen_force_velocity(v, a, 0.3, 1.8, 0.95)
        np.testing.assert_allclose(back, np.maximum(fv, 0.0), rtol=1e-13, atol=1e-14)
    # the branches meet continuously
    v = np.array([-1.0 + 1e-12, -1.0 - 1e-12, 0.0, 1e-12])
    f = C.thelen_force_velocity(v, 1.0, 0.25, 1.4, 0.95)
    assert abs(f[0] - f[1]) < 1e-10 and abs(f[2] - 1.0) < 1e-15 and abs(f[3] - 1.0) < 1e-10


def test_schutte_force_velocity_inverts_opensims_fiber_velocity():
    """schutte_force_velocity is the inverse of Schutte1993Muscle_Deprecated::calcFiberVelocity."""
    rng = np.random.default_rng(0)
    v = np.concatenate([np.linspace(-3, 3, 601), rng.uniform(-1, 1, 400)])
    for a, fal, d in ((1.0, 1.0, 0.1), (0.3, 0.6, 0.017), (0.05, 0.2, 0.05)):
        fvd = a * fal * C.schutte_force_velocity(v) + d * v
        back = C.schutte_fiber_velocity(a, fal, fvd, d)
        np.testing.assert_allclose(back, v, rtol=1e-11, atol=1e-12)


def test_smooth_segmented_curve_derivatives_by_finite_differences():
    curve = C.ActiveForceLengthCurve().curve
    x = np.linspace(0.3, 2.0, 301)
    y, d1, d2 = curve.evaluate(x, 2)
    h = 1e-6
    np.testing.assert_allclose(d1, (curve(x + h) - curve(x - h)) / (2 * h), atol=1e-7)
    np.testing.assert_allclose(d2, (curve.derivative(x + h) - curve.derivative(x - h)) / (2 * h), atol=1e-5)


def test_curve_parameter_errors_are_clear():
    with pytest.raises(ValueError, match="shallow_ascending_slope"):
        C.ActiveForceLengthCurve(shallow_ascending_slope=5.0).curve
    with pytest.raises(ValueError, match="all be set or all be empty"):
        C.FiberForceLengthCurve(curviness=0.5).curve
    with pytest.raises(MuscleModelError, match="Flen"):
        Thelen2003Muscle("m", Flen=0.9)


# =============================================================================
# Millard curve objects against OpenSim's
# =============================================================================
MILLARD_CASES = [
    ("ActiveForceLengthCurve", {}, np.linspace(0.0, 2.3, 1501)),
    ("ActiveForceLengthCurve", dict(min_norm_active_fiber_length=0.5, transition_norm_fiber_length=0.75,
                                    max_norm_active_fiber_length=1.7, shallow_ascending_slope=0.5,
                                    minimum_value=0.0), np.linspace(0.0, 2.3, 1501)),
    ("ForceVelocityCurve", {}, np.linspace(-1.4, 1.4, 1501)),
    ("ForceVelocityCurve", dict(concentric_slope_at_vmax=0.1, concentric_slope_near_vmax=0.3, isometric_slope=4.0,
                                eccentric_slope_at_vmax=0.05, eccentric_slope_near_vmax=0.2,
                                max_eccentric_velocity_force_multiplier=1.5, concentric_curviness=0.5,
                                eccentric_curviness=0.7), np.linspace(-1.4, 1.4, 1501)),
    ("ForceVelocityInverseCurve", {}, np.linspace(-0.1, 1.6, 1501)),
    ("FiberForceLengthCurve", {}, np.linspace(0.8, 2.1, 1501)),
    ("FiberForceLengthCurve", dict(strain_at_zero_force=0.1, strain_at_one_norm_force=0.6, stiffness_at_low_force=0.3,
                                   stiffness_at_one_norm_force=5.0, curviness=0.5), np.linspace(0.8, 2.1, 1501)),
    ("TendonForceLengthCurve", {}, np.linspace(0.98, 1.1, 1501)),
    ("TendonForceLengthCurve", dict(strain_at_one_norm_force=0.04, stiffness_at_one_norm_force=40.0,
                                    norm_force_at_toe_end=0.6, curviness=0.4), np.linspace(0.98, 1.1, 1501)),
]


@pytest.mark.opensim
@pytest.mark.parametrize("type_name,params,x", MILLARD_CASES,
                         ids=[f"{c[0]}-{'custom' if c[1] else 'default'}" for c in MILLARD_CASES])
def test_millard_curves_match_opensim(osim, type_name, params, x):
    ours = getattr(C, type_name)(**params)
    ref_obj = getattr(osim, type_name)(*params.values()) if params else getattr(osim, type_name)()
    ref = np.array([ref_obj.calcValue(float(v)) for v in x])
    ref1 = np.array([ref_obj.calcDerivative(float(v), 1) for v in x])
    ref2 = np.array([ref_obj.calcDerivative(float(v), 2) for v in x])
    y, d1, d2 = ours.evaluate(x, 2)
    scale = max(1.0, np.abs(ref).max())
    tag = f"Millard {type_name} ({'custom' if params else 'default'})"
    _close(y, ref, atol=1e-13 * scale, label=tag + " value")
    _close(d1, ref1, rtol=1e-9, atol=1e-12 * max(1.0, np.abs(ref1).max()), label=tag + " dy/dx")
    _close(d2, ref2, rtol=1e-8, atol=1e-10 * max(1.0, np.abs(ref2).max()), label=tag + " d2y/dx2")


# =============================================================================
# Thelen2003Muscle on the reference models
# =============================================================================
def _random_states(osim, model, state, rng, n, speed=20.0):
    cs = model.getCoordinateSet()
    for _ in range(n):
        for i in range(cs.getSize()):
            c = cs.get(i)
            if c.getLocked(state):
                continue
            c.setValue(state, rng.uniform(c.getRangeMin(), c.getRangeMax()), False)
            c.setSpeedValue(state, rng.uniform(-speed, speed))
        model.realizeVelocity(state)
        yield


@pytest.mark.opensim
@pytest.mark.models
@pytest.mark.parametrize("model_file", ["arm26.osim", "leg6dof9musc.osim"])
def test_thelen_rigid_tendon_matches_opensim(osim, models_dir, model_file):
    """Thelen2003Muscle with a rigid tendon, 6 + 9 real muscles at 80 random states each.

    f_L, f_PE, pennation and passive fiber force: the muscle's reported values
    with its fiber at the rigid-tendon length (1e-12).  Active force along the
    tendon at activation a: ``calcInextensibleTendonActiveFiberForce(s, a)``
    (what StaticOptimization uses).  OpenSim inverts the force-velocity relation
    by Newton's method stopped at |dv~| < 1e-6 (then one more step), so its
    value carries ~1e-10 relative error; ours is the exact inverse (see
    test_thelen_force_velocity_inverts_opensims_forward_relation).
    """
    path = models_dir / model_file
    tree = etree.parse(str(path))
    ours = {e.get("name"): hill_muscle_from_xml(e) for e in tree.iter("Thelen2003Muscle")}
    model = osim.Model(str(path))
    state = model.initSystem()
    muscles = model.getMuscles()
    rng = np.random.default_rng(7)
    rows = []
    for _ in _random_states(osim, model, state, rng, 80):
        for j in range(muscles.getSize()):
            m = osim.Thelen2003Muscle.safeDownCast(muscles.get(j))
            o = ours[m.getName()]
            l, v = m.getLength(state), m.getLengtheningSpeed(state)
            a = float(rng.uniform(0.0, 1.0))
            r = o.rigid_tendon(l, v, max(a, o.minimum_activation))
            ref_active = m.calcInextensibleTendonActiveFiberForce(state, a)
            m.setFiberLength(state, float(r.fiber_length))
            model.realizeDynamics(state)
            rows.append((
                float(max(a, o.minimum_activation) * r.active), ref_active,
                float(r.active_force_length), m.getActiveForceLengthMultiplier(state),
                float(r.passive_force_length), m.getPassiveForceMultiplier(state),
                float(r.pennation_angle), m.getPennationAngle(state),
                float(r.passive), m.getPassiveFiberForce(state) * math.cos(m.getPennationAngle(state)),
                float(r.norm_fiber_velocity), float(o.tendon_force(a, l, v)),
                0.25 + 0.75 * max(a, o.minimum_activation),
                float(C.thelen_fiber_velocity(o.fv_linear_extrap_threshold * o.Flen, max(a, o.minimum_activation),
                                              o.Af, o.Flen, o.fv_linear_extrap_threshold)),
            ))
    d = np.array(rows)
    tag = f"Thelen2003 {model_file}"
    _close(d[:, 2], d[:, 3], rtol=1e-12, label=tag + " f_L")
    _close(d[:, 4], d[:, 5], rtol=1e-12, label=tag + " f_PE")
    _close(d[:, 6], d[:, 7], rtol=1e-12, label=tag + " pennation")
    _close(d[:, 8], d[:, 9], rtol=1e-12, label=tag + " passive force")
    _close(d[:, 0], d[:, 1], rtol=2e-9, atol=1e-10, label=tag + " active force a*f_L*f_V*cos (f_V by OpenSim's Newton)")
    # all force-velocity branches were visited (linear concentric, hyperbolic, eccentric, linear eccentric)
    vN, k, v_thr = d[:, 10], d[:, 12], d[:, 13]
    assert (vN <= -k).any() and ((vN > -k) & (vN < 0)).any() and ((vN > 0) & (vN < v_thr)).any()
    assert (vN >= v_thr).any()
    assert (d[:, 11] >= 0).all()


# =============================================================================
# Schutte1993Muscle_Deprecated on MoBL
# =============================================================================
def _lenient_parse_function(e):
    """The package's SimmSpline (it accepts the repeated knot x = 1.15 of MoBL's passive curves, as OpenSim does)."""
    from osim_emb.core.functions import SimmSpline

    x = [float(t) for t in e.find("x").text.split()]
    y = [float(t) for t in e.find("y").text.split()]
    return SimmSpline(x, y)


@pytest.mark.opensim
@pytest.mark.models
@pytest.mark.slow
def test_schutte_matches_opensim_on_mobl(osim, models_dir):
    """Schutte1993Muscle_Deprecated, all 50 MoBL muscles at 8 poses.

    OpenSim's computeActuation takes fiber length, activation and musculotendon
    length, and returns the tendon force (from the tendon curve) and the fiber
    velocity (from its force-velocity relation).  With that fiber length and
    fiber velocity our fiber-force formula a A + P must give back the tendon
    force: this checks our closed-form inverse of OpenSim's velocity relation,
    the curves, damping, pennation and normalisation (time_scale) at once.
    (OpenSim's Python API does not wrap Schutte1993Muscle_Deprecated; the
    generic Muscle interface and its state variables are used.)
    """
    path = models_dir / "mobl_arms_holzbaur.osim"
    tree = etree.parse(str(path))
    ours = {e.get("name"): hill_muscle_from_xml(e, _lenient_parse_function)
            for e in tree.iter("Schutte1993Muscle_Deprecated")}
    assert len(ours) == 50
    model = osim.Model(str(path))
    state = model.initSystem()
    muscles = model.getMuscles()
    cs = model.getCoordinateSet()
    rng = np.random.default_rng(3)
    rows = []
    for pose in range(8):
        model.realizeVelocity(state)
        pending = []
        for j in range(muscles.getSize()):
            m = muscles.get(j)
            o = ours[m.getName()]
            l = m.getLength(state)
            strain = rng.uniform(0.0005, 0.04)
            along = l - o.tendon_slack_length * (1 + strain)
            if along <= 0.2 * o.optimal_fiber_length:
                continue
            lf = math.hypot(o.parallelogram_height, along)
            a = float(rng.uniform(0.05, 1.0))
            m.setStateVariableValue(state, "activation", a)
            m.setStateVariableValue(state, "fiber_length", lf)
            pending.append((m, o, lf, a))
        state.invalidateAll(osim.Stage(osim.Stage.Position))
        model.realizeDynamics(state)
        for m, o, lf, a in pending:
            ft, vf, phi = m.getTendonForce(state), m.getFiberVelocity(state), m.getPennationAngle(state)
            fpe_ref = m.getPassiveForceMultiplier(state)
            if ft / math.cos(phi) / o.max_isometric_force - fpe_ref <= 0:
                continue  # OpenSim clamps the velocity-dependent force at 0 there
            r = o.fiber_forces(lf, vf)
            fal_raw = o.active_force_length_curve.evaluate(np.array([lf / o.optimal_fiber_length]), 0).value[0]
            rows.append((float(a * r.active + r.passive), ft, float(r.passive_force_length), fpe_ref,
                         float(fal_raw), m.getActiveForceLengthMultiplier(state),
                         float(r.pennation_angle), phi))
        for i in range(cs.getSize()):
            c = cs.get(i)
            if c.getName() in ("elv_angle", "shoulder_elv", "shoulder_rot", "elbow_flexion", "pro_sup"):
                c.setValue(state, rng.uniform(c.getRangeMin(), c.getRangeMax()), False)
        model.assemble(state)
    d = np.array(rows)
    assert len(d) > 150
    _close(d[:, 0], d[:, 1], rtol=1e-10, atol=1e-9, label="Schutte1993 MoBL tendon force (f_V inverse)")
    _close(d[:, 2], d[:, 3], rtol=1e-10, atol=1e-13, label="Schutte1993 MoBL f_PE")
    _close(d[:, 4], d[:, 5], rtol=1e-10, atol=1e-13, label="Schutte1993 MoBL f_L")
    _close(d[:, 6], d[:, 7], rtol=1e-12, label="Schutte1993 MoBL pennation")


def test_schutte_rigid_tendon_consistency():
    """Rigid-tendon kinematics: l_f cos(phi) = l_MT - l_TS, l_f sin(phi) = h, v_f = v_MT cos(phi)."""
    from osim_emb.core.functions import SimmSpline

    x, y = zip(*[(0.4, 0.0), (0.7, 0.6), (1.0, 1.0), (1.3, 0.6), (1.6, 0.0)])
    m = Schutte1993Muscle("m", max_isometric_force=500, optimal_fiber_length=0.1, tendon_slack_length=0.2,
                          pennation_angle_at_optimal=0.3, damping=0.05,
                          active_force_length_curve=SimmSpline(x, y),
                          tendon_force_length_curve=SimmSpline([0, 0.1], [0, 10]))
    lmt = np.linspace(0.22, 0.36, 15)
    vmt = np.linspace(-0.5, 0.5, 15)
    r = m.rigid_tendon(lmt, vmt)
    np.testing.assert_allclose(r.fiber_length * r.cos_pennation, lmt - 0.2, rtol=1e-14)
    np.testing.assert_allclose(r.fiber_length * np.sin(r.pennation_angle), 0.1 * math.sin(0.3), rtol=1e-14)
    np.testing.assert_allclose(r.norm_fiber_velocity, vmt * r.cos_pennation * 0.1 / 0.1, rtol=1e-14)
    # passive curve absent from the file: OpenSim's exponential
    np.testing.assert_allclose(r.passive_force_length, np.exp(8 * (r.norm_fiber_length - 1)) / math.exp(4))
    # slack musculotendon: no force
    r0 = m.rigid_tendon(0.19, 0.0)
    assert r0.active == 0 and r0.passive == 0


# =============================================================================
# Millard2012EquilibriumMuscle with a rigid tendon, in OpenSim
# =============================================================================
_MILLARD_CURVES = {
    "TRIlong": "",
    "TRIlat": """<ActiveForceLengthCurve><min_norm_active_fiber_length>0.5</min_norm_active_fiber_length>
        <transition_norm_fiber_length>0.75</transition_norm_fiber_length>
        <max_norm_active_fiber_length>1.7</max_norm_active_fiber_length>
        <shallow_ascending_slope>0.5</shallow_ascending_slope><minimum_value>0.1</minimum_value></ActiveForceLengthCurve>
        <ForceVelocityCurve><concentric_slope_at_vmax>0.1</concentric_slope_at_vmax>
        <concentric_slope_near_vmax>0.3</concentric_slope_near_vmax><isometric_slope>4</isometric_slope>
        <eccentric_slope_at_vmax>0.05</eccentric_slope_at_vmax><eccentric_slope_near_vmax>0.2</eccentric_slope_near_vmax>
        <max_eccentric_velocity_force_multiplier>1.5</max_eccentric_velocity_force_multiplier>
        <concentric_curviness>0.5</concentric_curviness><eccentric_curviness>0.7</eccentric_curviness></ForceVelocityCurve>""",
    "TRImed": """<fiber_damping>0</fiber_damping><FiberForceLengthCurve>
        <strain_at_zero_force>0.1</strain_at_zero_force><strain_at_one_norm_force>0.6</strain_at_one_norm_force>
        <stiffness_at_low_force>0.3</stiffness_at_low_force><stiffness_at_one_norm_force>5</stiffness_at_one_norm_force>
        <curviness>0.5</curviness></FiberForceLengthCurve>""",
    "BIClong": "<fiber_damping>0.3</fiber_damping><maximum_pennation_angle>1.2</maximum_pennation_angle>",
    "BICshort": "<max_contraction_velocity>1</max_contraction_velocity>",
    "BRA": "<max_contraction_velocity>1.5</max_contraction_velocity>",
}
_THELEN_ONLY = ("FmaxTendonStrain", "FmaxMuscleStrain", "KshapeActive", "KshapePassive", "Af", "Flen",
                "fv_linear_extrap_threshold")


def _millard_arm26(path_in, path_out):
    tree = etree.parse(str(path_in))
    for e in list(tree.iter("Thelen2003Muscle")):
        e.tag = "Millard2012EquilibriumMuscle"
        for c in list(e):
            if c.tag in _THELEN_ONLY:
                e.remove(c)
        extra = etree.fromstring(f"<x><ignore_tendon_compliance>true</ignore_tendon_compliance>"
                                 f"{_MILLARD_CURVES[e.get('name')]}</x>")
        for c in extra:
            old = e.find(c.tag)
            if old is not None:
                e.remove(old)
            e.append(c)
    tree.write(str(path_out))
    return tree


@pytest.mark.opensim
@pytest.mark.models
def test_millard_rigid_tendon_matches_opensim(osim, models_dir, tmp_path):
    """arm26 with its muscles turned into rigid-tendon Millard2012EquilibriumMuscles (default, custom
    and undamped curves), 60 random states: OpenSim's reported f_L, f_V, f_PE, pennation, fiber
    velocity and tendon force against ours (OpenSim adjusts f_L's minimum and f_V's end slopes for a
    rigid tendon; so do we)."""
    out = tmp_path / "arm26_millard.osim"
    tree = _millard_arm26(models_dir / "arm26.osim", out)
    ours = {e.get("name"): hill_muscle_from_xml(e) for e in tree.iter("Millard2012EquilibriumMuscle")}
    assert ours["TRIlat"].force_velocity_curve.concentric_slope_at_vmax == 0.1  # as in the file
    model = osim.Model(str(out))
    state = model.initSystem()
    muscles = model.getMuscles()
    rng = np.random.default_rng(11)
    rows = []
    for _ in _random_states(osim, model, state, rng, 60, speed=15.0):
        acts = {}
        for j in range(muscles.getSize()):
            m = muscles.get(j)
            acts[m.getName()] = float(rng.uniform(0.0, 1.0))
            m.setActivation(state, acts[m.getName()])
        model.realizeDynamics(state)
        for j in range(muscles.getSize()):
            m = osim.Millard2012EquilibriumMuscle.safeDownCast(muscles.get(j))
            o = ours[m.getName()]
            l, v, a = m.getLength(state), m.getLengtheningSpeed(state), acts[m.getName()]
            r = o.rigid_tendon(l, v)
            rows.append((float(r.active_force_length), m.getActiveForceLengthMultiplier(state),
                         float(r.force_velocity), m.getForceVelocityMultiplier(state),
                         float(r.passive_force_length), m.getPassiveForceMultiplier(state),
                         float(r.pennation_angle), m.getPennationAngle(state),
                         float(r.fiber_velocity), m.getFiberVelocity(state),
                         float(o.tendon_force(a, l, v)), m.getTendonForce(state),
                         float(r.norm_fiber_velocity)))
    d = np.array(rows)
    tag = "Millard2012 rigid-tendon arm26"
    _close(d[:, 0], d[:, 1], atol=1e-13, label=tag + " f_L")
    _close(d[:, 2], d[:, 3], atol=1e-13, label=tag + " f_V")
    _close(d[:, 4], d[:, 5], atol=1e-13, label=tag + " f_PE")
    _close(d[:, 6], d[:, 7], rtol=1e-12, label=tag + " pennation")
    _close(d[:, 8], d[:, 9], rtol=1e-12, atol=1e-15, label=tag + " fiber velocity")
    _close(d[:, 10], d[:, 11], rtol=1e-10, atol=1e-9, label=tag + " tendon force")
    assert (d[:, 12] < -1).any() and (d[:, 12] > 1).any()  # beyond +-v_max: the adjusted end slopes


# =============================================================================
# Parsing: 3.3 / 4.x spellings, <defaults>, errors, serialisation
# =============================================================================
THELEN_33 = """<OpenSimDocument Version="30000"><Model name="m"><defaults>
  <Thelen2003Muscle name="default"><min_control>0.02</min_control><max_control>1</max_control>
    <FmaxTendonStrain>0.05</FmaxTendonStrain><KshapeActive>0.3</KshapeActive><Af>0.2</Af>
    <max_contraction_velocity>8</max_contraction_velocity></Thelen2003Muscle></defaults>
  <ForceSet><objects>
  <Thelen2003Muscle name="a"><isDisabled>true</isDisabled><min_control>0</min_control><max_control>1</max_control>
    <max_isometric_force>300</max_isometric_force><optimal_fiber_length>0.1</optimal_fiber_length>
    <tendon_slack_length>0.2</tendon_slack_length><pennation_angle>0.1</pennation_angle>
    <Af>0.35</Af></Thelen2003Muscle>
  </objects></ForceSet></Model></OpenSimDocument>"""


def test_thelen_parsing_33_with_defaults():
    root = etree.fromstring(THELEN_33)
    el = root.find(".//ForceSet//Thelen2003Muscle")
    dflt = root.find(".//defaults/Thelen2003Muscle")
    m = hill_muscle_from_xml(el, defaults=dflt)
    assert m.applies_force is False  # isDisabled
    assert m.pennation_angle_at_optimal == 0.1  # the 2.x spelling
    assert m.Af == 0.35  # the muscle's own value wins
    assert m.FmaxTendonStrain == 0.05 and m.KshapeActive == 0.3  # from <defaults>
    assert m.max_contraction_velocity == 8.0
    assert m.min_control == 0.02  # min_control 0 is dropped from files < 30513, then the default object's
    assert m.FmaxMuscleStrain == 0.6  # OpenSim's built-in default
    m2 = hill_muscle_from_xml(el)
    assert m2.FmaxTendonStrain == 0.04 and m2.min_control == 0.01


@pytest.mark.opensim
def test_defaults_section_semantics_in_opensim(osim, tmp_path):
    """What OpenSim does with <defaults>: a property missing from a muscle takes the value of the
    <defaults> object of its type (Thelen2003Muscle here); the muscle's own values win."""
    doc = f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000"><Model name="m"><defaults>
  <Thelen2003Muscle name="default"><FmaxTendonStrain>0.05</FmaxTendonStrain><KshapeActive>0.3</KshapeActive>
  <Af>0.2</Af><max_contraction_velocity>8</max_contraction_velocity></Thelen2003Muscle></defaults>
  <ForceSet><objects>
  <Thelen2003Muscle name="a"><max_isometric_force>300</max_isometric_force><Af>0.35</Af></Thelen2003Muscle>
  </objects></ForceSet></Model></OpenSimDocument>"""
    p = tmp_path / "defaults.osim"
    p.write_text(doc)
    model = osim.Model(str(p))
    m = osim.Thelen2003Muscle.safeDownCast(model.getForceSet().get("a"))
    root = etree.parse(str(p)).getroot()
    ours = hill_muscle_from_xml(root.find(".//ForceSet//Thelen2003Muscle"),
                                defaults=root.find(".//defaults/Thelen2003Muscle"))
    for prop in ("FmaxTendonStrain", "KshapeActive", "Af", "max_contraction_velocity", "FmaxMuscleStrain",
                 "max_isometric_force"):
        assert getattr(m, f"get_{prop}")() == getattr(ours, prop), prop
    assert ours.FmaxTendonStrain == 0.05 and ours.Af == 0.35
    # OpenSim registers the <defaults> object globally: restore the built-in default for later tests
    osim.OpenSimObject.registerType(osim.Thelen2003Muscle())


def test_schutte_parsing_33_and_40_spellings():
    from osim_emb.core.functions import SimmSpline

    calls = []

    def pf(e):
        calls.append(e.getparent().tag if e.get("name") is None else e.get("name"))
        return SimmSpline([float(t) for t in e.find("x").text.split()], [float(t) for t in e.find("y").text.split()])

    spline = "<x>0 0.5 1 1.5 2</x><y>0 0.5 1 0.5 0</y>"
    el33 = etree.fromstring(f"""<Schutte1993Muscle_Deprecated name="s">
        <max_isometric_force>100</max_isometric_force><damping>0.02</damping><time_scale>0.2</time_scale>
        <SimmSpline name="active_force_length_curve">{spline}</SimmSpline>
        <SimmSpline name="tendon_force_length_curve">{spline}</SimmSpline>
        <SimmSpline name="passive_force_length_curve">{spline}</SimmSpline></Schutte1993Muscle_Deprecated>""")
    el40 = etree.fromstring(f"""<Schutte1993Muscle_Deprecated name="s">
        <max_isometric_force>100</max_isometric_force><damping>0.02</damping><time_scale>0.2</time_scale>
        <active_force_length_curve><SimmSpline name="f">{spline}</SimmSpline></active_force_length_curve>
        <tendon_force_length_curve><SimmSpline>{spline}</SimmSpline></tendon_force_length_curve>
        <passive_force_length_curve><SimmSpline>{spline}</SimmSpline></passive_force_length_curve>
        </Schutte1993Muscle_Deprecated>""")
    a = hill_muscle_from_xml(el33, pf)
    b = hill_muscle_from_xml(el40, pf)
    assert len(calls) == 6
    assert a.to_dict() == b.to_dict()
    assert a.time_scale == 0.2 and a.damping == 0.02
    back = muscle_from_dict(a.to_dict())
    assert back == a or back.to_dict() == a.to_dict()
    lN = np.linspace(0.2, 1.8, 7)
    np.testing.assert_allclose(back.active_force_length(lN), a.active_force_length(lN))
    # no parse_function for a function-valued property: a clear error
    with pytest.raises(MuscleModelError, match="'s'.*_force_length_curve.*parse_function"):
        hill_muscle_from_xml(el33)


def test_errors_name_muscle_and_property():
    with pytest.raises(MuscleModelError, match="'x'.*not supported"):
        hill_muscle_from_xml(etree.fromstring('<McKibbenActuator name="x"/>'))
    with pytest.raises(MuscleModelError, match="'t'.*'max_isometric_force'.*not a number"):
        hill_muscle_from_xml(etree.fromstring(
            '<Thelen2003Muscle name="t"><max_isometric_force>big</max_isometric_force></Thelen2003Muscle>'))
    with pytest.raises(MuscleModelError, match="'t'.*FmaxMuscleStrain"):
        hill_muscle_from_xml(etree.fromstring(
            '<Thelen2003Muscle name="t"><FmaxMuscleStrain>-1</FmaxMuscleStrain></Thelen2003Muscle>'))
    with pytest.raises(MuscleModelError, match="'mm'.*ActiveForceLengthCurve"):
        hill_muscle_from_xml(etree.fromstring(
            '<Millard2012EquilibriumMuscle name="mm"><ActiveForceLengthCurve>'
            '<shallow_ascending_slope>9</shallow_ascending_slope></ActiveForceLengthCurve>'
            '</Millard2012EquilibriumMuscle>'))
    with pytest.raises(MuscleModelError, match="'mm'.*all be set or all be empty"):
        hill_muscle_from_xml(etree.fromstring(
            '<Millard2012EquilibriumMuscle name="mm"><FiberForceLengthCurve>'
            '<curviness>0.3</curviness></FiberForceLengthCurve></Millard2012EquilibriumMuscle>'))


def test_serialisation_and_immutability():
    el = etree.fromstring("""<Millard2012EquilibriumMuscle name="mm"><max_isometric_force>400</max_isometric_force>
        <FiberForceLengthCurve><strain_at_zero_force>0</strain_at_zero_force>
        <strain_at_one_norm_force>0.6</strain_at_one_norm_force><stiffness_at_low_force></stiffness_at_low_force>
        <stiffness_at_one_norm_force></stiffness_at_one_norm_force><curviness></curviness>
        </FiberForceLengthCurve></Millard2012EquilibriumMuscle>""")
    m = hill_muscle_from_xml(el)
    assert m.fiber_force_length_curve.strain_at_one_norm_force == 0.6
    assert m.fiber_force_length_curve.curviness is None
    for obj in (m, Thelen2003Muscle("t", max_isometric_force=10.0), RigidPathActuator("p", optimal_force=5.0)):
        back = muscle_from_dict(copy.deepcopy(obj.to_dict()))
        assert back == obj and type(back) is type(obj)
        with pytest.raises(AttributeError):
            obj.max_isometric_force = 1.0
    p = RigidPathActuator("p", optimal_force=5.0)
    np.testing.assert_allclose(p.tendon_force([0.5, 1.0], [0.3, 0.3]), [2.5, 5.0])
    path_act = hill_muscle_from_xml(etree.fromstring(
        '<PathActuator name="pa"><optimal_force>20</optimal_force><min_control>-1</min_control></PathActuator>'))
    assert path_act.optimal_force == 20 and path_act.min_control == -1 and path_act.max_control == math.inf


def test_forces_are_batched():
    m = Thelen2003Muscle("t", max_isometric_force=1000.0, optimal_fiber_length=0.1, tendon_slack_length=0.2,
                         pennation_angle_at_optimal=0.2)
    L = np.linspace(0.25, 0.36, 12).reshape(3, 4)
    V = np.linspace(-0.8, 0.8, 12).reshape(3, 4)
    r = m.rigid_tendon(L, V)
    assert r.active.shape == (3, 4)
    for i in range(3):
        for j in range(4):
            rij = m.rigid_tendon(L[i, j], V[i, j])
            assert float(rij.active) == r.active[i, j] and float(rij.passive) == r.passive[i, j]


def test_fixed_width_pennation_keeps_the_width_and_clamps_at_every_branch():
    """One pennation (muscles.kernels.fixed_width_pennation) for the kernels, the equilibrium and the arrays:
    above the limits the fibre keeps its width (l_f sin(phi) = h, the constant-width parallelogram); at or below
    the minimum length, at or past the maximum angle, at l_f = 0: phi_max; phi_opt = 0: no pennation."""
    from osim_emb.muscles.hill import _fixed_width_pennation
    from osim_emb.muscles.kernels import fixed_width_pennation
    lf = np.concatenate([np.linspace(0.001, 0.3, 301), [0.0, 0.01, 0.0101, 0.02 / np.sin(1.2), 1.0]])
    for h, phi_opt, phi_max, lmin in ((0.02, 0.3, 1.2, 0.01), (0.05, 0.5, np.arccos(0.1), 0.0502),
                                      (0.0, 0.0, 1.2, 0.01), (0.02, 0.3, 1.2, 0.0)):
        got = _fixed_width_pennation(lf, h, phi_opt, phi_max, lmin)
        if phi_opt == 0.0:
            assert not got.any()
            continue
        free = (lf > lmin) & (h < lf * np.sin(phi_max))
        assert free.sum() > 250 and (~free).sum() >= 2
        np.testing.assert_allclose(lf[free] * np.sin(got[free]), h, rtol=1e-14)
        assert np.all((got[free] >= 0.0) & (got[free] < phi_max))
        assert np.all(got[~free] == phi_max)
        scalar = np.array([fixed_width_pennation(x, h, np.sin(phi_max), phi_max, lmin) for x in lf])
        assert np.array_equal(scalar, got)
