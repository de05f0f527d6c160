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

import numpy as np

from ..model import Model

__all__ = ["require_opensim", "OpenSimReference"]


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


def _transform_to_numpy(t: Any) -> np.ndarray:
    r = t.R()
    out = np.eye(4)
    out[:3, :3] = [[r.get(i, j) for j in range(3)] for i in range(3)]
    out[:3, 3] = t.p().to_numpy()
    return out


class OpenSimReference:
    """An OpenSim model of the same file, driven by the package's generalized coordinates."""

    def __init__(self, path: str, model: Model | None = None, *, disable_forces: bool = False):
        osim = require_opensim()
        self.osim = osim
        self.path = str(path)
        self.model_os = osim.Model(self.path)
        if disable_forces:
            fs = self.model_os.getForceSet()
            for i in range(fs.getSize()):
                fs.get(i).set_appliesForce(False)
        self.state = self.model_os.initSystem()
        self.coords = self.model_os.getCoordinateSet()
        self.names = [self.coords.get(i).getName() for i in range(self.coords.getSize())]
        self.model = model
        self._couplers = []
        cs = self.model_os.getConstraintSet()
        for i in range(cs.getSize()):
            c = self.osim.CoordinateCouplerConstraint.safeDownCast(cs.get(i))
            if c is None or not c.get_isEnforced():
                continue
            ind = c.getIndependentCoordinateNames()
            self._couplers.append((c.getDependentCoordinateName(),
                                   [ind.get(k) for k in range(ind.getSize())], c.getFunction(),
                                   float(c.getPropertyByName("scale_factor").toString())))

    # -- configuration -----------------------------------------------------------
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
        if check is not None:
            err = np.abs(s.getQErr().to_numpy()).max(initial=0.0)
            if err > check:
                raise RuntimeError(f"OpenSim constraint error {err:.3g} after setting the configuration")

    def set_speeds(self, qdot: Sequence[float], names: Sequence[str] | None = None) -> None:
        """Set generalized speeds; coupled speeds follow from OpenSim's function derivatives."""
        if names is None:
            names = self.model.coordinate_names
        s = self.state
        speeds = {c: 0.0 for c in self.names}
        values = {c: self.coords.get(c).getValue(s) for c in self.names}
        for n, v in zip(names, qdot):
            speeds[n] = float(v)
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
        """4x4 ground transform of a body (``getTransformInGround``)."""
        return _transform_to_numpy(self.model_os.getBodySet().get(body).getTransformInGround(self.state))

    def path_point_positions(self, muscle: str) -> np.ndarray:
        """(P, 3) ground positions of every point of a muscle's PathPointSet (active or not)."""
        path = self._path(muscle)
        pps = path.getPathPointSet()
        return np.array([pps.get(i).getLocationInGround(self.state).to_numpy() for i in range(pps.getSize())])

    def _path(self, muscle: str):
        f = self.model_os.getForceSet().get(muscle)
        pa = self.osim.PathActuator.safeDownCast(f)
        gp = pa.getGeometryPath() if pa is not None else None
        if gp is None:
            gp = self.osim.GeometryPath.safeDownCast(f.getPropertyByName("GeometryPath").getValueAsObject())
        return self.osim.GeometryPath.safeDownCast(gp) if not isinstance(gp, self.osim.GeometryPath) else gp

    def muscle_length(self, muscle: str) -> float:
        return self._path(muscle).getLength(self.state)

    def moment_arm(self, muscle: str, coordinate: str) -> float:
        """``computeMomentArm`` at the current state (the generalised-force moment arm of OpenSim)."""
        return self._path(muscle).computeMomentArm(self.state, self.coords.get(coordinate))
