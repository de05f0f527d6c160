"""The planar chain built in OpenSim, and OpenSim's joint reactions and torques at given states.

Used to validate the closed forms (tests and ``validation/planar_chain``).
Needs the optional ``opensim`` package (imported lazily).

Model: link 0 is Ground; body ``link{i}`` has its origin at ``J_i`` and its x
axis along ``u_i``; pin joint ``J_i`` joins the parent frame at ``(l_{i-1}, 0)``
of link ``i-1`` (at the origin of Ground for ``i = 1``) to the child's origin,
so its coordinate is ``q_1 = theta_1`` and ``q_i = theta_i - theta_{i-1}``.
Each muscle is a two-point :class:`opensim.PathActuator` whose tension is set
with ``overrideActuation``; each contact force ``R_i`` (i >= 1) is a
:class:`opensim.PrescribedForce` whose force functions are piecewise-linear in
time with one knot per state (state ``s`` is evaluated at time ``s``), applied
at ``P_Ri`` on the body; each joint has a :class:`opensim.CoordinateActuator`.

At each state, OpenSim's :class:`~opensim.InverseDynamicsSolver` gives

* with the muscles switched off: the generalized force of coordinate ``q_k``,
  which is the net moment about ``J_k`` on links k..n, i.e. ``tau_k`` of
  Eqs 13/23/24;
* with the muscles on: the residual ``tau_k - tau_k^M``, hence the muscles'
  moments ``tau_k^M`` (Eq 22).

The residual is then applied by the coordinate actuators so that OpenSim's
forward dynamics reproduces the prescribed accelerations, and
``Joint.calcReactionOnParentExpressedInGround`` gives the force on link k-1
by link k at ``J_k``: ``phi_{k-1,k}``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from osim_emb.seeds.planar.chain import PlanarChain, as_loads, as_state, point_positions

__all__ = ["OpenSimChain", "build_opensim_chain", "opensim_inverse_dynamics"]


@dataclass
class OpenSimChain:
    model: object
    bodies: list
    joints: list
    coordinates: list
    muscles: list
    coord_actuators: list
    contact_forces: list


def build_opensim_chain(chain: PlanarChain, contact_global=None):
    """Build the OpenSim model of ``chain``.

    ``contact_global``: (N, n+1, 2) contact forces in Ground for each state (the
    knots of the prescribed forces at times 0..N-1); ``None`` for no contacts.
    """
    import opensim as osim

    n = chain.n
    model = osim.Model()
    model.setName("planar_chain")
    model.setGravity(osim.Vec3(0.0, -chain.gravity, 0.0))
    ground = model.getGround()
    bodies, joints = [], []
    parent = ground
    for i in range(1, n + 1):
        L = chain.links[i]
        c = L.com_local
        Izz = L.inertia
        # Ixx, Iyy: any values that make a valid inertia; they do not enter planar motion.
        Ixy = max(Izz, 1e-12)
        body = osim.Body(f"link{i}", L.mass, osim.Vec3(float(c[0]), float(c[1]), 0.0), osim.Inertia(Ixy, Ixy, Izz))
        model.addBody(body)
        loc_parent = osim.Vec3(0.0, 0.0, 0.0) if i == 1 else osim.Vec3(chain.links[i - 1].length, 0.0, 0.0)
        joint = osim.PinJoint(f"J{i}", parent, loc_parent, osim.Vec3(0, 0, 0), body, osim.Vec3(0, 0, 0),
                              osim.Vec3(0, 0, 0))
        model.addJoint(joint)
        bodies.append(body)
        joints.append(joint)
        parent = body
    coords = [j.upd_coordinates(0) for j in joints]
    muscles = []
    base_pts = {}
    for m in chain.muscles:
        pa = osim.PathActuator()
        pa.setName(m.name)
        pa.set_optimal_force(1.0)
        for tag, link, p in (("a", m.link_a, m.point_a), ("b", m.link_b, m.point_b)):
            if link == 0:
                # a point of the base link, fixed in Ground
                P = point_positions(chain, np.zeros(n), [0], [p])[0]
                frame, loc = ground, osim.Vec3(float(P[0]), float(P[1]), 0.0)
            else:
                frame, loc = bodies[link - 1], osim.Vec3(float(p[0]), float(p[1]), 0.0)
            pa.addNewPathPoint(f"{m.name}_{tag}", frame, loc)
        model.addForce(pa)
        muscles.append(pa)
    cacts = []
    for i, c in enumerate(coords):
        a = osim.CoordinateActuator(c.getName())
        a.setName(f"tau{i + 1}")
        a.setOptimalForce(1.0)
        model.addForce(a)
        cacts.append(a)
    contact = []
    if contact_global is not None:
        F = np.asarray(contact_global, dtype=float)
        for i in range(1, n + 1):
            pf = osim.PrescribedForce(f"R{i}", bodies[i - 1])
            fx, fy = osim.PiecewiseLinearFunction(), osim.PiecewiseLinearFunction()
            for s in range(F.shape[0]):
                fx.addPoint(float(s), float(F[s, i, 0]))
                fy.addPoint(float(s), float(F[s, i, 1]))
            if F.shape[0] == 1:  # a single knot: add a second one with the same value
                fx.addPoint(1.0, float(F[0, i, 0]))
                fy.addPoint(1.0, float(F[0, i, 1]))
            pf.setForceFunctions(fx, fy, osim.Constant(0.0))
            p = chain.links[i].contact_local
            pf.setPointFunctions(osim.Constant(float(p[0])), osim.Constant(float(p[1])), osim.Constant(0.0))
            pf.setForceIsInGlobalFrame(True)
            pf.setPointIsInGlobalFrame(False)
            model.addForce(pf)
            contact.append(pf)
    model.finalizeConnections()
    return OpenSimChain(model, bodies, joints, coords, muscles, cacts, contact)


def opensim_inverse_dynamics(chain: PlanarChain, theta, dtheta, ddtheta, tension=None, R=None, gamma_R=None,
                             check_tolerance: float = 1e-8):
    """OpenSim's joint torques, muscle moments and joint reaction forces at a batch of states.

    Returns a dict of arrays: ``tau`` (N, n) net joint moments (ID, muscles off),
    ``tau_muscle`` (N, n) the muscles' moments, ``phi`` (N, n, 2) the force on
    link k-1 by link k at ``J_k`` (in Ground), and ``udot_error`` (N,) the
    largest difference between OpenSim's forward-dynamics accelerations and the
    prescribed ones once the residual torques are applied.
    """
    import opensim as osim

    st = as_state(chain, theta, dtheta, ddtheta)
    T, Rm, gm = as_loads(chain, st.N, tension, R, gamma_R)
    n, N = chain.n, st.N
    Fg = Rm[..., None] * np.stack([np.cos(st.theta + gm), np.sin(st.theta + gm)], axis=-1)
    oc = build_opensim_chain(chain, Fg)
    model = oc.model
    state = model.initSystem()
    q = np.diff(st.theta, axis=1)
    q[:, 0] = st.theta[:, 1]
    u = np.diff(st.dtheta, axis=1)
    u[:, 0] = st.dtheta[:, 1]
    ud = np.diff(st.ddtheta, axis=1)
    ud[:, 0] = st.ddtheta[:, 1]
    solver = osim.InverseDynamicsSolver(model)
    out_tau = np.zeros((N, n))
    out_res = np.zeros((N, n))
    out_phi = np.zeros((N, n, 2))
    err = np.zeros(N)
    for a in oc.muscles + oc.coord_actuators:
        a.overrideActuation(state, True)
    for s in range(N):
        state.setTime(float(s))
        for k in range(n):
            oc.coordinates[k].setValue(state, float(q[s, k]), False)
            oc.coordinates[k].setSpeedValue(state, float(u[s, k]))
        model.assemble(state)
        udot = osim.Vector(n, 0.0)
        for k in range(n):
            udot.set(k, float(ud[s, k]))
        for a in oc.coord_actuators:
            a.setOverrideActuation(state, 0.0)
        for a in oc.muscles:
            a.setOverrideActuation(state, 0.0)
        model.realizeDynamics(state)
        tau = solver.solve(state, udot)
        out_tau[s] = [tau.get(k) for k in range(n)]
        for m, a in enumerate(oc.muscles):
            a.setOverrideActuation(state, float(T[s, m]))
        model.realizeDynamics(state)
        res = solver.solve(state, udot)
        out_res[s] = [res.get(k) for k in range(n)]
        for k, a in enumerate(oc.coord_actuators):
            a.setOverrideActuation(state, float(out_res[s, k]))
        model.realizeAcceleration(state)
        got = state.getUDot()
        err[s] = max(abs(got.get(k) - ud[s, k]) for k in range(n))
        for k, j in enumerate(oc.joints):
            sv = j.calcReactionOnParentExpressedInGround(state)
            f = sv.get(1)
            out_phi[s, k] = (f.get(0), f.get(1))
    if check_tolerance is not None and np.max(err, initial=0.0) > check_tolerance * max(1.0, np.abs(ud).max()):
        raise RuntimeError(f"OpenSim did not reproduce the prescribed accelerations (max error {err.max():.3g})")
    return {"tau": out_tau, "tau_muscle": out_tau - out_res, "phi": out_phi, "udot_error": err}
