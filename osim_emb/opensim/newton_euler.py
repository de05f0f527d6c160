"""OpenSim's side of the Newton-Euler seed (:mod:`osim_emb.seeds.newton_euler`): a planar pendulum chain
read from an OpenSim model, and the foot-shank joint loads from OpenSim's inverse dynamics (the independent
reference of :func:`~osim_emb.seeds.newton_euler.foot_shank_inverse_dynamics`)."""

from __future__ import annotations

import numpy as np

from osim_emb.seeds.newton_euler import PendulumChain

__all__ = ["pendulum_chain_from_opensim", "opensim_foot_shank_reference"]


def pendulum_chain_from_opensim(model_or_path) -> tuple[PendulumChain, np.ndarray, list[str]]:
    """Read a planar serial chain of pin joints (rotation about z) from an OpenSim model.

    Returns the :class:`PendulumChain` (g from the model), the angle offsets
    ``q_abs = cumsum(q_opensim) + offsets`` and the coordinate names.  For each
    body: proximal joint = its joint's child frame origin, distal joint = the
    next joint's parent frame origin (the last link's axis points to its
    centre of mass).  Frames must have zero orientation offsets.
    """
    import opensim as osim

    model = osim.Model(model_or_path) if isinstance(model_or_path, str) else model_or_path
    model.initSystem()
    joints = [model.getJointSet().get(i) for i in range(model.getJointSet().getSize())]
    g = -model.getGravity().get(1)

    def offset(frame):
        pof = osim.PhysicalOffsetFrame.safeDownCast(frame)
        if pof is None:
            return np.zeros(3)
        o = pof.get_orientation()
        if max(abs(o.get(i)) for i in range(3)) > 0:
            raise ValueError("frames with orientation offsets are not supported")
        t = pof.get_translation()
        return np.array([t.get(0), t.get(1), t.get(2)])

    masses, lengths, lcs, inertias, com_angles, offsets, names = [], [], [], [], [], [], []
    for i, j in enumerate(joints):
        body = osim.Body.safeDownCast(j.getChildFrame().findBaseFrame())
        p = offset(j.getChildFrame())
        c = np.array([body.getMassCenter().get(k) for k in range(3)])
        if i + 1 < len(joints):
            d = offset(joints[i + 1].getParentFrame())
        else:
            d = c
        axis = (d - p)[:2]
        if np.linalg.norm(axis) == 0:
            axis = np.array([0.0, -1.0])
        ang_axis = np.arctan2(axis[0], -axis[1])  # from downward vertical, ccw
        rc = (c - p)[:2]
        lc = float(np.linalg.norm(rc))
        ang_c = np.arctan2(rc[0], -rc[1]) if lc > 0 else ang_axis
        masses.append(body.getMass())
        lengths.append(float(np.linalg.norm(d - p)) if i + 1 < len(joints) else lc)
        lcs.append(lc)
        inertias.append(body.getInertia().getMoments().get(2))
        com_angles.append(float(ang_c - ang_axis))
        offsets.append(float(ang_axis))
        names.append(j.get_coordinates(0).getName())
    return PendulumChain(tuple(masses), tuple(lengths), tuple(lcs), tuple(inertias), tuple(com_angles), g), \
        np.array(offsets), names


def opensim_foot_shank_reference(m_F, I_F, com_F, ankle_F, m_S, I_S, com_S, ankle_S, q, u, udot, GRF, COP,
                                 gravity=(0.0, -9.80665, 0.0)):
    """Inverse dynamics of an equivalent two-body 3D model in OpenSim, at given states.

    Shank: body with origin at the knee, joined to Ground by a FreeJoint (its
    reaction is the load of the thigh on the shank); foot: joined to the shank by
    a BallJoint at the ankle (``ankle_S`` in the shank frame, ``ankle_F`` in the
    foot frame).  ``com_*`` centre of mass in the body frame, ``I_*`` inertia
    about it in the body frame.  The GRF is a PrescribedForce on the foot at the
    global point COP (piecewise linear in time, state s at time s).  For each
    state (q, u, udot of the 9 coordinates, prescribed motion) OpenSim's
    InverseDynamicsSolver gives the generalized forces, which coordinate
    actuators then apply so that ``Joint.calcReactionOnChildExpressedInGround``
    returns the complete joint loads.

    Returns a dict of arrays: the kinematic inputs of the matrix method
    (``R_F``, ``R_S`` global -> body, ``w_*``, ``dw_*`` in the body basis,
    ``a_cm*``, ``p_cm*``, ``p_A``, ``p_K`` global) and OpenSim's loads
    ``F_A``, ``M_A`` (on the foot at the ankle, global basis) and ``F_K``,
    ``M_K`` (on the shank at the knee, global basis); ``udot_error``.
    """
    import opensim as osim

    q, u, udot = (np.atleast_2d(np.asarray(a, dtype=float)) for a in (q, u, udot))
    GRF, COP = np.atleast_2d(GRF), np.atleast_2d(COP)
    N = q.shape[0]
    model = osim.Model()
    model.setGravity(osim.Vec3(*map(float, gravity)))

    def inertia(I):
        I = np.asarray(I, dtype=float)
        return osim.Inertia(I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2])

    shank = osim.Body("shank", float(m_S), osim.Vec3(*map(float, com_S)), inertia(I_S))
    foot = osim.Body("foot", float(m_F), osim.Vec3(*map(float, com_F)), inertia(I_F))
    model.addBody(shank)
    model.addBody(foot)
    z = osim.Vec3(0.0, 0.0, 0.0)
    knee = osim.FreeJoint("knee", model.getGround(), z, z, shank, z, z)
    ankle = osim.BallJoint("ankle", shank, osim.Vec3(*map(float, ankle_S)), z, foot, osim.Vec3(*map(float, ankle_F)), z)
    model.addJoint(knee)
    model.addJoint(ankle)
    pf = osim.PrescribedForce("grf", foot)
    fns = []
    for arr in (GRF, COP):
        for c in range(3):
            f = osim.PiecewiseLinearFunction()
            for s in range(N):
                f.addPoint(float(s), float(arr[s, c]))
            if N == 1:
                f.addPoint(1.0, float(arr[0, c]))
            fns.append(f)
    pf.setForceFunctions(*fns[:3])
    pf.setPointFunctions(*fns[3:])
    pf.setForceIsInGlobalFrame(True)
    pf.setPointIsInGlobalFrame(True)
    model.addForce(pf)
    cs = model.getCoordinateSet()
    nc = cs.getSize()
    acts = []
    for i in range(nc):
        a = osim.CoordinateActuator(cs.get(i).getName())
        a.setName(f"act{i}")
        a.setOptimalForce(1.0)
        model.addForce(a)
        acts.append(a)
    state = model.initSystem()
    solver = osim.InverseDynamicsSolver(model)
    for a in acts:
        a.overrideActuation(state, True)

    def v3(v):
        return np.array([v.get(0), v.get(1), v.get(2)])

    def mat(R):
        return np.array([[R.get(i, j) for j in range(3)] for i in range(3)])

    keys = ["R_F", "R_S", "w_F", "w_S", "dw_F", "dw_S", "a_cmF", "a_cmS", "p_cmF", "p_cmS", "p_A", "p_K", "F_A", "M_A",
            "F_K", "M_K"]
    out = {k: np.zeros((N, 3, 3) if k.startswith("R_") else (N, 3)) for k in keys}
    out["udot_error"] = np.zeros(N)
    cF, cS = osim.Vec3(*map(float, com_F)), osim.Vec3(*map(float, com_S))
    for s in range(N):
        state.setTime(float(s))
        for i in range(nc):
            cs.get(i).setValue(state, float(q[s, i]), False)
            cs.get(i).setSpeedValue(state, float(u[s, i]))
        model.assemble(state)
        for a in acts:
            a.setOverrideActuation(state, 0.0)
        model.realizeDynamics(state)
        ud = osim.Vector(nc, 0.0)
        for i in range(nc):
            ud.set(i, float(udot[s, i]))
        tau = solver.solve(state, ud)
        for i, a in enumerate(acts):
            a.setOverrideActuation(state, tau.get(i))
        model.realizeAcceleration(state)
        out["udot_error"][s] = max(abs(state.getUDot().get(i) - udot[s, i]) for i in range(nc))
        RGS, RGF = mat(shank.getTransformInGround(state).R()), mat(foot.getTransformInGround(state).R())
        out["R_S"][s], out["R_F"][s] = RGS.T, RGF.T
        out["w_S"][s] = RGS.T @ v3(shank.getVelocityInGround(state).get(0))
        out["w_F"][s] = RGF.T @ v3(foot.getVelocityInGround(state).get(0))
        out["dw_S"][s] = RGS.T @ v3(shank.getAccelerationInGround(state).get(0))
        out["dw_F"][s] = RGF.T @ v3(foot.getAccelerationInGround(state).get(0))
        out["a_cmS"][s] = v3(shank.findStationAccelerationInGround(state, cS))
        out["a_cmF"][s] = v3(foot.findStationAccelerationInGround(state, cF))
        out["p_cmS"][s] = v3(shank.findStationLocationInGround(state, cS))
        out["p_cmF"][s] = v3(foot.findStationLocationInGround(state, cF))
        out["p_K"][s] = v3(shank.findStationLocationInGround(state, z))
        out["p_A"][s] = v3(shank.findStationLocationInGround(state, osim.Vec3(*map(float, ankle_S))))
        rk = knee.calcReactionOnChildExpressedInGround(state)
        ra = ankle.calcReactionOnChildExpressedInGround(state)
        out["M_K"][s], out["F_K"][s] = v3(rk.get(0)), v3(rk.get(1))
        out["M_A"][s], out["F_A"][s] = v3(ra.get(0)), v3(ra.get(1))
    return out
