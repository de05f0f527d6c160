"""Side-by-side access to OpenSim's own API (the optional ``opensim`` package) for validation.

An :class:`OpenSimReference` loads the same .osim file in OpenSim and sets it to
the configuration the package uses: the generalized coordinates take the
given values, and every coupled coordinate is computed with *OpenSim's own*
coupler function (in dependency order), so that the comparison does not
borrow anything from the package under test.  The constraint error of the
resulting state is checked.
"""

from __future__ import annotations

from typing import Any, Sequence

import logging
import numpy as np

from osim_emb.core.speeds import ANGULAR_VELOCITY_JOINTS, forces_about_speeds
from osim_emb.model import Model

__all__ = ["require_opensim", "OpenSimReference", "ANGULAR_VELOCITY_JOINTS", "moment_arms_about_speeds",
           "opensim_speed_columns", "write_states_file"]

log = logging.getLogger(__name__)


def require_opensim():
    """Import opensim, or raise an ImportError that says how to install it."""
    try:
        import opensim
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("this needs the opensim package: pip install 'osim-emb[opensim]' (OpenSim 4.6)") from err
    try:
        opensim.Logger.setLevelString("error")
    except Exception:  # pragma: no cover
        pass
    return opensim


def moment_arms_about_speeds(model: Model, q: np.ndarray, r: np.ndarray) -> np.ndarray:
    """R (N, n_q, ...) about the generalized coordinates turned into OpenSim's ``computeMomentArm`` basis, about the
    speeds: E^-T R on the rotations of Ball, Free and Ellipsoid joints (:func:`osim_emb.core.speeds.forces_about_speeds`)."""
    return forces_about_speeds(model, q, r)


def _transform_to_numpy(t: Any) -> np.ndarray:
    r = t.R()
    out = np.eye(4)
    out[:3, :3] = [[r.get(i, j) for j in range(3)] for i in range(3)]
    out[:3, 3] = t.p().to_numpy()
    return out


def missing_contact_meshes(path: str) -> dict[str, tuple[str, list[str]]]:
    """The ContactMeshes of an .osim file whose mesh file is neither where the file names it nor beside the model
    (OpenSim's initSystem aborts on them): name -> (file name, the contact forces naming it)."""
    import os
    from osim_emb.io.osim_reader import safe_parse_xml  # the package's reader: OpenSim 3's '::' names included
    root = safe_parse_xml(path, path)
    folder = os.path.dirname(os.path.abspath(path))
    missing = {}
    for mesh in root.iter("ContactMesh"):
        name = (mesh.findtext("filename") or "").strip()
        if not any(os.path.isfile(p) for p in (name, os.path.join(folder, name))):
            missing[mesh.get("name") or ""] = (name, [])
    for force in root.iter("ElasticFoundationForce", "HuntCrossleyForce"):
        named = {n for g in force.iter("geometry") for n in (g.text or "").split()}
        for mesh in named & set(missing):
            missing[mesh][1].append(force.get("name") or force.tag.lower())  # OpenSim's name for an unnamed one
    return missing


def find_mesh_file(model_file: str, name: str) -> str | None:
    """The file OpenSim's visualizer opens for a geometry's ``mesh_file`` (``ModelVisualizer::findGeometryFile``,
    without the user's search path): the name itself if absolute, else beside the model file, else in the
    ``Geometry`` folder beside it; None where none exists."""
    import os
    folder = os.path.dirname(os.path.abspath(model_file))
    tries = [name] if os.path.isabs(name) else [os.path.join(folder, name), os.path.join(folder, "Geometry", name)]
    return next((os.path.realpath(p) for p in tries if name and os.path.isfile(p)), None)


def visual_geometry(osim: Any, model: Any, state: Any) -> dict[str, dict[str, Any]]:
    """OpenSim's view of a model's visual geometry: for each Geometry component of the ground and the bodies (and
    of the frames they own), and of the PhysicalOffsetFrames among the model's own components (the frames' axes,
    FrameGeometry, left out), by path: its class, mesh file (as written,
    and as found by :func:`find_mesh_file`), scale factors, appearance (color, opacity, visible, representation),
    the path of its frame and that frame's ground transform (4, 4) at ``state`` (realized to position)."""
    model.realizePosition(state)
    out = {}
    for c in model.getComponentsList():
        g = osim.Geometry.safeDownCast(c)
        path = c.getAbsolutePathString()
        if g is None or g.getConcreteClassName() == "FrameGeometry":
            continue
        if not (path.startswith("/ground/") or path.startswith("/bodyset/")):
            owner = c.getOwner()  # a model-level offset frame's own geometry: "/FRAME/GEOMETRY"
            if path.count("/") != 2 or osim.PhysicalOffsetFrame.safeDownCast(owner) is None:
                continue
        a = g.get_Appearance()
        mesh = osim.Mesh.safeDownCast(c)
        mesh_file = mesh.get_mesh_file() if mesh is not None else None
        frame = g.getFrame()
        out[path] = {"type": g.getConcreteClassName(), "mesh_file": mesh_file,
                     "found": find_mesh_file(model.getInputFileName(), mesh_file) if mesh_file else None,
                     "scale_factors": g.get_scale_factors().to_numpy(), "color": a.get_color().to_numpy(),
                     "opacity": a.get_opacity(), "visible": a.get_visible(), "representation": a.get_representation(),
                     "frame": frame.getAbsolutePathString(),
                     "transform": _transform_to_numpy(frame.getTransformInGround(state))}
    return out


def display_appearances(osim: Any, model: Any) -> dict[str, dict[str, Any]]:
    """OpenSim's view of the appearance of a model's wrap objects, paths (GeometryPath) and contact geometry, by path:
    color, opacity, visible, representation (what a pre-4.0 file's display properties become in OpenSim 4.6)."""
    out = {}
    for c in model.getComponentsList():
        for cls in (osim.WrapObject, osim.GeometryPath, osim.ContactGeometry):
            x = cls.safeDownCast(c)
            if x is not None:
                a = x.get_Appearance()
                out[c.getAbsolutePathString()] = {"color": a.get_color().to_numpy(), "opacity": a.get_opacity(),
                                                  "visible": a.get_visible(),
                                                  "representation": a.get_representation()}
                break
    return out


def compare_appearances(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> list[str]:
    """The differences between two :func:`display_appearances` results (phrases, by path)."""
    diffs = []
    for path in sorted(set(a) | set(b)):
        if path not in b or path not in a:
            diffs.append(f"{path} only in the {'first' if path in a else 'second'}")
            continue
        for key in ("color", "opacity", "visible", "representation"):
            if not np.array_equal(a[path][key], b[path][key]):
                diffs.append(f"{path} {key} {a[path][key]} != {b[path][key]}")
    return diffs


def compare_visual_geometry(a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]]) -> tuple[list[str], float]:
    """The differences between two :func:`visual_geometry` results (phrases, by path; the mesh files agree where
    written alike or found as the same file), and the largest difference of the frames' ground transforms."""
    diffs, worst = [], 0.0
    for path in sorted(set(a) | set(b)):
        if path not in b or path not in a:
            diffs.append(f"{path} only in the {'first' if path in a else 'second'}")
            continue
        x, y = a[path], b[path]
        for key in ("type", "visible", "representation", "frame"):
            if x[key] != y[key]:
                diffs.append(f"{path} {key} {x[key]!r} != {y[key]!r}")
        if x["mesh_file"] != y["mesh_file"] and (x["found"] is None or x["found"] != y["found"]):
            diffs.append(f"{path} mesh_file {x['mesh_file']!r} != {y['mesh_file']!r}")
        for key in ("scale_factors", "color", "opacity"):
            if not np.array_equal(x[key], y[key]):
                diffs.append(f"{path} {key} {x[key]} != {y[key]}")
        worst = max(worst, float(np.abs(x["transform"] - y["transform"]).max()))
    return diffs, worst


def left_out_text(missing: dict[str, tuple[str, list[str]]]) -> str:
    """What OpenSim's copy of a model leaves out for :func:`missing_contact_meshes`, as one sentence."""
    parts = [f"ContactMesh {n!r} ({f} not found)" for n, (f, _) in missing.items()]
    users = sorted({u for _, forces in missing.values() for u in forces})
    if users:
        parts.append(f"the contact force(s) using it ({', '.join(map(repr, users))})")
    return (f"OpenSim's copy for the reference values leaves out {', '.join(parts)}: OpenSim cannot build the model "
            "without the mesh files, and contact changes no muscle path")


def without_contact_meshes(model: Any, missing: dict[str, tuple[str, list[str]]]) -> None:
    """Remove the ContactMeshes of ``missing`` and the contact forces using them from OpenSim's ``model`` (before
    initSystem)."""
    model.finalizeFromProperties()
    users = {u for _, forces in missing.values() for u in forces}
    forces = model.updForceSet()
    for k in reversed(range(forces.getSize())):
        force = forces.get(k)
        if force.getConcreteClassName() in ("ElasticFoundationForce", "HuntCrossleyForce") and force.getName() in users:
            forces.remove(k)
    geometry = model.updContactGeometrySet()
    for name in missing:
        geometry.remove(geometry.getIndex(name))


#: how many times one OpenSimReference rebuilds OpenSim's model after a NaN moment arm (each rebuild reloads the file)
MAX_REBUILDS = 50


class OpenSimReference:
    """An OpenSim model of the same file, driven by the package's generalized coordinates."""

    def __init__(self, path: str, model: Model | None = None, *, disable_forces: bool = False,
                 say_left_out: bool = True):
        osim = require_opensim()
        self.osim = osim
        self.path = str(path)
        self.model_os = osim.Model(self.path)
        self._disable_forces = disable_forces
        self._poisoned: set[str] = set()  # paths whose OpenSim moment-arm solver holds a NaN (moment_arm)
        self._rebuilds = getattr(self, "_rebuilds", 0)  # kept across rebuilds (moment_arm)
        missing = missing_contact_meshes(self.path)
        if missing:  # OpenSim cannot build the model: leave them out (contact changes no path)
            without_contact_meshes(self.model_os, missing)
            if say_left_out:
                log.warning("%s: %s", self.path, left_out_text(missing))
        #: the ContactMeshes (and forces using them) OpenSim's copy leaves out: name -> (file, forces)
        self.left_out = missing
        if disable_forces:  # every Force, in the ForceSet or among the model's <components>
            self.model_os.finalizeFromProperties()
            for c in self.model_os.getComponentsList():
                f = osim.Force.safeDownCast(c)
                if f is not None:
                    f.set_appliesForce(False)
        self.state = self.model_os.initSystem()
        self.coords = self.model_os.getCoordinateSet()
        self.names = [self.coords.get(i).getName() for i in range(self.coords.getSize())]
        self.model = model
        self._couplers = []
        constraints = self._constraints()
        #: enforced constraints that close loops (PointConstraint, ...): a configuration must satisfy them
        self._closed_loops = [c.getName() for c in constraints if c.get_isEnforced()
                              and self.osim.CoordinateCouplerConstraint.safeDownCast(c) is None]
        for one in constraints:
            c = self.osim.CoordinateCouplerConstraint.safeDownCast(one)
            if c is None or not c.get_isEnforced():
                continue
            ind = c.getIndependentCoordinateNames()
            self._couplers.append((c.getDependentCoordinateName(),
                                   [ind.get(k) for k in range(ind.getSize())], c.getFunction(),
                                   float(c.getPropertyByName("scale_factor").toString())))

    # -- configuration -----------------------------------------------------------
    def _closed_chain_jets(self, values: dict) -> dict:
        """The package model's PointConstraint-dependent coordinates (no OpenSim function gives them) at the
        generalized coordinates in ``values``: name -> (value, gradient, Hessian) in those coordinates.  OpenSim's
        constraint error after they are set checks them (``set_configuration``'s ``check``)."""
        deps = [d for d in (self.model.dependent_coordinates if self.model is not None else ())
                if d.source.startswith("point constraint")]
        if not deps:
            return {}
        qm = np.array([[values[c] for c in self.model.coordinate_names]])
        cache: dict = {}
        out = {}
        for d in deps:
            jet = d.function.evaluate(qm, 2, cache)
            out[d.name] = (float(jet.value[0]), jet.gradient[0], jet.hessian[0])
        return out

    def set_configuration(self, q: Sequence[float], qdot: Sequence[float] | None = None,
                          names: Sequence[str] | None = None, *, check: float = 1e-9) -> None:
        """Set the generalized coordinates (names default to the package model's) and the coupled ones."""
        if names is None:
            names = self.model.coordinate_names
        s = self.state
        values = {c: self.coords.get(c).getValue(s) for c in self.names}
        for n, v in zip(names, q):
            values[n] = float(v)
        done = set(names) | {c for c in self.names if self.coords.get(c).getLocked(s)}
        for c, (v, _, _) in self._closed_chain_jets(values).items():
            values[c] = v
            done.add(c)
        pending = list(self._couplers)
        while pending:
            rest = []
            for dep, ind, f, scale in pending:
                if all(i in done or i not in {d for d, *_ in pending} for i in ind):
                    x = self.osim.Vector(len(ind), 0.0)
                    for k, i in enumerate(ind):
                        x.set(k, values[i])
                    values[dep] = scale * f.calcValue(x)
                    done.add(dep)
                else:
                    rest.append((dep, ind, f, scale))
            if len(rest) == len(pending):
                raise RuntimeError("coupler dependencies form a cycle")
            pending = rest
        for c in self.names:
            co = self.coords.get(c)
            if not co.getLocked(s):
                co.setValue(s, values[c], False)
        if qdot is not None:
            self.set_speeds(qdot, names)
        self.model_os.realizePosition(s)
        if check is None and self._closed_loops:  # a closed loop's configuration must satisfy it, whoever set it
            check = 1e-9
        if check is not None:
            err = np.abs(s.getQErr().to_numpy()).max(initial=0.0)
            if err > check:
                raise RuntimeError(f"OpenSim constraint error {err:.3g} after setting the configuration"
                                   + (f" (closed loops: {', '.join(self._closed_loops)}; their dependent coordinates "
                                      "must be given)" if self._closed_loops else ""))

    def set_rates(self, q: Sequence[float], qdot: Sequence[float]) -> None:
        """Set OpenSim's speed of every coordinate from the package model's rates q̇ at its configuration q (after
        :meth:`set_configuration`): :func:`opensim_speed_columns`, as :func:`write_states_file` writes them — exact
        also for a loop's dependent angle on a Ball, Free or Ellipsoid joint, where :meth:`set_speeds`, which takes
        speeds and applies the chain rule to them, is not."""
        columns = opensim_speed_columns(self.model, np.atleast_2d(np.asarray(q, dtype=float)),
                                        np.atleast_2d(np.asarray(qdot, dtype=float)))
        s = self.state
        for c in self.names:
            co = self.coords.get(c)
            if not co.getLocked(s) and f"{c}_u" in columns:
                co.setSpeedValue(s, float(columns[f"{c}_u"][0]))
        self.model_os.realizeVelocity(s)

    def set_speeds(self, qdot: Sequence[float], names: Sequence[str] | None = None) -> None:
        """Set OpenSim's generalized speeds u (on the rotations of Ball, Free and Ellipsoid joints the angular velocity,
        :func:`osim_emb.core.speeds.speeds_from_rates`); coupled speeds follow from OpenSim's function derivatives."""
        if names is None:
            names = self.model.coordinate_names
        s = self.state
        speeds = {c: 0.0 for c in self.names}
        values = {c: self.coords.get(c).getValue(s) for c in self.names}
        for n, v in zip(names, qdot):
            speeds[n] = float(v)
        chains = self._closed_chain_jets(values)
        if chains:
            qd = np.array([speeds[c] for c in self.model.coordinate_names])
            for c, (_, g, _) in chains.items():
                speeds[c] = float(g @ qd)
        for dep, ind, f, scale in self._couplers:
            x = self.osim.Vector(len(ind), 0.0)
            for k, i in enumerate(ind):
                x.set(k, values[i])
            total = 0.0
            for k, i in enumerate(ind):
                d = self.osim.StdVectorInt()
                d.append(k)
                total += f.calcDerivative(d, x) * speeds[i]
            speeds[dep] = scale * total
        for c in self.names:
            co = self.coords.get(c)
            if not co.getLocked(s):
                co.setSpeedValue(s, speeds[c])
        self.model_os.realizeVelocity(s)

    # -- kinematics ------------------------------------------------------------------
    def body_transform(self, body: str) -> np.ndarray:
        """4x4 ground transform of a body (``getTransformInGround``): a BodySet member, or a body among the model's
        <components> (path /NAME)."""
        return _transform_to_numpy(self.body(body).getTransformInGround(self.state))

    def _constraints(self) -> list:
        """The ConstraintSet's constraints and those among the model's <components>."""
        cs = self.model_os.getConstraintSet()
        out = [cs.get(i) for i in range(cs.getSize())]
        seen = {c.getAbsolutePathString() for c in out}
        for c in self.model_os.getComponentsList():
            k = self.osim.Constraint.safeDownCast(c)
            if k is not None and k.getAbsolutePathString() not in seen:
                out.append(k)
        return out

    def body(self, name: str):
        """OpenSim's Body of that name (BodySet, else /NAME among the model's components)."""
        bodies = self.model_os.getBodySet()
        if bodies.contains(name):
            return bodies.get(name)
        body = self.osim.Body.safeDownCast(self.model_os.getComponent(f"/{name}"))
        if body is None:
            raise KeyError(f"{self.path}: OpenSim's model has no body {name!r}")
        return body

    def path_point_positions(self, muscle: str) -> np.ndarray:
        """(P, 3) ground positions of every point of a muscle's PathPointSet (active or not)."""
        path = self._path(muscle)
        pps = path.getPathPointSet()
        return np.array([pps.get(i).getLocationInGround(self.state).to_numpy() for i in range(pps.getSize())])

    def _force(self, name: str):
        fs = self.model_os.getForceSet()
        if fs.contains(name):
            return fs.get(name)
        for c in self.model_os.getComponentsList():  # a force among the model's <components>
            f = self.osim.Force.safeDownCast(c)
            if f is not None and f.getName() == name:
                return f
        raise KeyError(f"OpenSim model {self.path!r} has no force named {name!r}")

    def _path(self, muscle: str):
        f = self._force(muscle)
        pa = self.osim.PathActuator.safeDownCast(f)
        gp = pa.getGeometryPath() if pa is not None else None
        if gp is None:  # Ligament, PathSpring: the property is 'path' in OpenSim 4.5+, 'GeometryPath' before
            prop = "path" if f.hasProperty("path") else "GeometryPath"
            gp = self.osim.GeometryPath.safeDownCast(f.getPropertyByName(prop).getValueAsObject())
        return self.osim.GeometryPath.safeDownCast(gp) if not isinstance(gp, self.osim.GeometryPath) else gp

    # -- dynamics (the reduction recipe of the notes) ------------------------------
    def speed_indices(self) -> dict[str, int]:
        """Index of each coordinate's speed in the state's U (the order of calcM)."""
        if getattr(self, "_uidx", None) is None:
            s = self.state
            saved = s.getU().to_numpy().copy()
            idx = {}
            for c in self.names:
                co = self.coords.get(c)
                u = self.osim.Vector(s.getNU(), 0.0)
                s.setU(u)
                co.setSpeedValue(s, 1.0)
                idx[c] = int(np.argmax(np.abs(s.getU().to_numpy())))
            s.setU(self.osim.Vector(saved.tolist()) if hasattr(self.osim.Vector, "__init__") else saved)
            self._uidx = idx
        return self._uidx

    def coupling(self, names: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """J = d(all speeds)/d(generalized speeds) (nU, nq) and the second derivatives H (nU, nq, nq),
        from OpenSim's own coupler functions at the current configuration (locked coordinates: zero rows)."""
        if names is None:
            names = self.model.coordinate_names
        s = self.state
        nq = len(names)
        grad = {c: np.zeros(nq) for c in self.names}
        hess = {c: np.zeros((nq, nq)) for c in self.names}
        for k, n in enumerate(names):
            grad[n][k] = 1.0
        values = {c: self.coords.get(c).getValue(s) for c in self.names}
        done = set(names)
        if list(names) == list(self.model.coordinate_names):
            for c, (_, g, h) in self._closed_chain_jets(values).items():
                grad[c], hess[c] = g, h
                done.add(c)
        pending = list(self._couplers)
        while pending:
            rest = []
            for dep, ind, f, scale in pending:
                if not all(i in done or self.coords.get(i).getLocked(s) for i in ind):
                    rest.append((dep, ind, f, scale))
                    continue
                x = self.osim.Vector(len(ind), 0.0)
                for k, i in enumerate(ind):
                    x.set(k, values[i])
                d1 = np.zeros(len(ind))
                d2 = np.zeros((len(ind), len(ind)))
                for a in range(len(ind)):
                    d = self.osim.StdVectorInt()
                    d.append(a)
                    d1[a] = f.calcDerivative(d, x)
                    for b in range(len(ind)):
                        d = self.osim.StdVectorInt()
                        d.append(a)
                        d.append(b)
                        d2[a, b] = f.calcDerivative(d, x)
                g = sum(d1[a] * grad[i] for a, i in enumerate(ind))
                h = sum(d1[a] * hess[i] for a, i in enumerate(ind))
                h = h + sum(d2[a, b] * np.outer(grad[i], grad[j]) for a, i in enumerate(ind) for b, j in enumerate(ind))
                grad[dep], hess[dep] = scale * g, scale * h
                done.add(dep)
            if len(rest) == len(pending):
                raise RuntimeError("coupler dependencies form a cycle")
            pending = rest
        idx = self.speed_indices()
        nu = s.getNU()
        jac = np.zeros((nu, nq))
        h2 = np.zeros((nu, nq, nq))
        for c in self.names:
            if self.coords.get(c).getLocked(s):
                continue
            jac[idx[c]] = grad[c]
            h2[idx[c]] = hess[c]
        return jac, h2

    def mass_matrix(self) -> np.ndarray:
        """Simbody's full mass matrix M (nU, nU) at the current state (``calcM``)."""
        m = self.osim.Matrix()
        self.model_os.getMatterSubsystem().calcM(self.state, m)
        return m.to_numpy()

    def inverse_dynamics(self, udot: np.ndarray | None = None) -> np.ndarray:
        """M udot + c - g - applied forces, constraints ignored (``InverseDynamicsSolver``)."""
        s = self.state
        self.model_os.realizeVelocity(s)
        u = self.osim.Vector(s.getNU(), 0.0)
        if udot is not None:
            for k, v in enumerate(udot):
                u.set(k, float(v))
        return self.osim.InverseDynamicsSolver(self.model_os).solve(s, u).to_numpy()

    def accelerations(self) -> np.ndarray:
        """Simbody's constrained accelerations udot (nU,) at the current state."""
        self.model_os.realizeAcceleration(self.state)
        return self.state.getUDot().to_numpy()

    def reduced_dynamics(self, q: Sequence[float], qdot: Sequence[float]) -> dict[str, np.ndarray]:
        """OpenSim's equations reduced to the generalized coordinates (notes: u = J u_ind, udot = J udot_ind + b):
        mass J^T M J, the velocity-and-gravity forces J^T (c - g + M b), and the constrained accelerations."""
        self.set_configuration(q)
        self.set_speeds(qdot)
        jac, hess = self.coupling()
        qd = np.asarray(qdot, dtype=float)
        b = np.einsum("uij,i,j->u", hess, qd, qd)
        m = self.mass_matrix()
        c_minus_g = self.inverse_dynamics(None)
        idx = self.speed_indices()
        udot = self.accelerations()
        ind = [idx[c] for c in self.model.coordinate_names]
        return {"mass": jac.T @ m @ jac, "bias": jac.T @ (c_minus_g + m @ b), "qddot": udot[ind],
                "jacobian": jac}

    def muscle_length(self, muscle: str) -> float:
        return self._path(muscle).getLength(self.state)

    def moment_arm(self, muscle: str, coordinate: str) -> float:
        """``computeMomentArm`` at the current state (the generalised-force moment arm of OpenSim).

        After a NaN (a zero-length path segment, e.g. a point passing through another) OpenSim's moment-arm
        solver of that path returns NaN for good (MomentArmSolver clears its body forces with ``*= 0``, which keeps
        a NaN); the model is then rebuilt, at the same state, before the path's next moment arm."""
        if muscle in self._poisoned and self._rebuilds < MAX_REBUILDS:
            self._rebuilds += 1
            self._rebuild()
            if self._rebuilds == MAX_REBUILDS:
                log.warning("%s: OpenSim's moment arms were NaN %d times; its model is not rebuilt again, so a path's "
                            "values after its next NaN stay NaN (reported as differences, never as agreement)",
                            self.path, MAX_REBUILDS)
        value = self._path(muscle).computeMomentArm(self.state, self.coords.get(coordinate))
        if not np.isfinite(value):
            self._poisoned.add(muscle)
        return value

    def _rebuild(self) -> None:
        """A fresh OpenSim model of the same file at the current coordinate values and speeds."""
        values = {c: (self.coords.get(c).getValue(self.state), self.coords.get(c).getSpeedValue(self.state))
                  for c in self.names}
        self.__init__(self.path, self.model, disable_forces=self._disable_forces, say_left_out=False)
        for c, (value, speed) in values.items():
            co = self.coords.get(c)
            if not co.getLocked(self.state):
                co.setValue(self.state, value, False)
                co.setSpeedValue(self.state, speed)
        self.model_os.realizeVelocity(self.state)


def opensim_speed_columns(model: Model, q: Any, qdot: Any) -> dict[str, np.ndarray]:
    """Every coordinate's value NAME and OpenSim speed NAME_u along configurations q and rates q̇ (N, n_q) of the
    package's model: the generalized coordinates' (on Ball, Free and Ellipsoid rotations the angular velocity) and the
    dependent ones' through their functions."""
    from osim_emb.core.kinematics import dependent_coordinate_columns, speed_columns
    q, qdot = np.atleast_2d(np.asarray(q, dtype=float)), np.atleast_2d(np.asarray(qdot, dtype=float))
    columns = {n: q[:, k] for k, n in enumerate(model.coordinate_names)}
    columns.update(speed_columns(model, q, qdot))
    columns.update(dependent_coordinate_columns(model, q, qdot))
    return columns


def write_states_file(path: Any, osim_model: Any, model: Model, t: Any, q: Any, qdot: Any) -> None:
    """An OpenSim states file of a motion of the package's model: for every coordinate of OpenSim's model (by its
    path, ``/jointset/J/C/value`` and ``/speed``) the value and OpenSim's speed (the dependent coordinates from the
    package's functions; on Ball, Free and Ellipsoid rotations the angular velocity, :mod:`osim_emb.core.speeds`),
    17 significant digits; coordinates the package's model does not have are left out."""
    from pathlib import Path

    columns = opensim_speed_columns(model, q, qdot)
    cs = osim_model.getCoordinateSet()
    labels, data = [], []
    for i in range(cs.getSize()):
        c = cs.get(i)
        if c.getName() not in columns:
            continue
        labels += [c.getAbsolutePathString() + "/value", c.getAbsolutePathString() + "/speed"]
        data += [columns[c.getName()], columns[f"{c.getName()}_u"]]
    rows = np.column_stack([np.asarray(t, dtype=float), *data])
    head = f"states\nversion=1\nnRows={len(rows)}\nnColumns={len(labels) + 1}\ninDegrees=no\nendheader\n"
    body = "\n".join("\t".join(f"{v:.17g}" for v in row) for row in rows)
    Path(path).write_text(head + "\t".join(["time", *labels]) + "\n" + body + "\n")
