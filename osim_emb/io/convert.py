"""Convert an :class:`OsimDocument` into the empirically-based :class:`~osim_emb.model.Model`.

* The generalized coordinates are the unlocked coordinates that no coupler drives.
* Every OpenSim coordinate becomes a function of them: itself, a constant
  (locked), or ``scale * f(independent coordinates)`` of its coupler, composed
  recursively (couplers may chain).
* A joint becomes a chain of one-DOF joints composed as OpenSim composes it:
  X_GB = X_G,parent . X_parent,F . T(v4 a4) T(v5 a5) T(v6 a6) . R(v1, a1) R(v2, a2) R(v3, a3) . X_child,M^-1,
  where each a_k = f_k(coordinates) is the joint variable; axes whose variable
  is constant are folded into the next joint's constant offset.
* A MovingPathPoint becomes a zero-inertia body on its frame, moved by three
  prismatic joints whose variables are the point's coordinate functions of the
  clamped coordinate (seed section 4-4 A, Table 5).
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

import numpy as np

from osim_emb.core import functions as fn
from osim_emb.core.functions.base import JointFunction
from osim_emb.model import (
    PRISMATIC,
    REVOLUTE,
    Body,
    DependentCoordinate,
    GeneralizedCoordinate,
    Joint,
    Model,
    homogeneous,
    rotation_about_axis,
)
from osim_emb.paths.musculotendon import Musculotendon, PathPoint, PathWrap
from osim_emb.io.errors import OsimImportError, UnsupportedFeatureError
from osim_emb.io.osim_document import JointSpec, OsimDocument, Skipped

__all__ = ["document_to_model", "compose", "simplify"]


def simplify(f: JointFunction) -> JointFunction:
    """Fold constants and identities so that joint variables stay small."""
    if isinstance(f, fn.Multiplier):
        inner = simplify(f.function)
        if isinstance(inner, fn.Constant):
            return fn.Constant(f.scale * inner.value, inner.n_inputs)
        if isinstance(inner, fn.Linear):
            return fn.Linear(f.scale * inner.coefficients, f.scale * inner.intercept)
        if f.scale == 1.0:
            return inner
        return fn.Multiplier(f.scale, inner)
    if isinstance(f, fn.Composite):
        return compose(f.outer, [simplify(g) for g in f.inners])
    return f


def compose(outer: JointFunction, inners: list[JointFunction]) -> JointFunction:
    """outer(inners(q)), simplified."""
    n = inners[0].n_inputs
    if all(g.is_constant for g in inners):
        x = np.array([[g.evaluate(np.zeros((1, n)), 0).value[0] for g in inners]])
        return fn.Constant(float(outer.evaluate(x, 0).value[0]), n)
    if outer.is_constant:
        return fn.Constant(float(outer.evaluate(np.zeros((1, outer.n_inputs)), 0).value[0]), n)
    if isinstance(outer, fn.Linear):
        if outer.n_inputs == 1 and outer.coefficients[0] == 1.0 and outer.intercept == 0.0:
            return inners[0]
        if all(isinstance(g, (fn.Linear, fn.Constant)) for g in inners):
            a = np.zeros(n)
            b = outer.intercept
            for c, g in zip(outer.coefficients, inners):
                if isinstance(g, fn.Linear):
                    a = a + c * g.coefficients
                    b += c * g.intercept
                else:
                    b += c * g.value
            return fn.Linear(a, b)
    if isinstance(outer, fn.Multiplier):
        return simplify(fn.Multiplier(outer.scale, compose(outer.function, inners)))
    return fn.Composite(outer, inners)


def _fixed_step(ax, value: float) -> np.ndarray:
    """The 4x4 transform of a TransformAxis held at ``value`` (rad about, or m along, its axis)."""
    return homogeneous(rotation_about_axis(ax.axis, value)) if ax.is_rotation else homogeneous(None, value * ax.axis)


def _line_normals(direction: np.ndarray) -> np.ndarray:
    """Two unit normals (2, 3) of a line direction, perpendicular to each other (any pair defines the line)."""
    d = np.asarray(direction, dtype=float)
    d = d / np.linalg.norm(d)
    helper = np.eye(3)[int(np.argmin(np.abs(d)))]
    n1 = np.cross(d, helper)
    n1 /= np.linalg.norm(n1)
    return np.array([n1, np.cross(d, n1)])


class _Converter:
    def __init__(self, doc: OsimDocument, strict: bool, dependent_coordinates: Sequence[str] | None = None,
                 tree_only: bool = False):
        self.doc = doc
        self.strict = strict
        self.log: list[str] = []
        self.skipped: list[Skipped] = list(doc.skipped)
        self.dependent_coordinates = dependent_coordinates
        self.tree_only = tree_only  # the spanning tree: every point-constrained coordinate generalized
        self.chain_exprs: dict[str, JointFunction] = {}
        self.point_constraint_loop = None  # core.point_constraints.PointConstraintLoop once the loops are solved
        self.assembled_defaults: dict[str, float] = {}  # tree coordinates OpenSim's assembly moves off their default

    def fail(self, element: str, reason: str, line: int | None = None) -> OsimImportError:
        return OsimImportError(self.doc.path, element, reason, line)

    def unsupported(self, kind: str, name: str, reason: str, line: int | None = None) -> None:
        if self.strict:
            raise UnsupportedFeatureError(self.doc.path, f"<{kind} name='{name}'>",
                                          reason + " (load with strict=False to import the rest)", line)
        self.skipped.append(Skipped(kind, name, line, reason))

    # -- coordinates -----------------------------------------------------------
    def prune_unreachable(self) -> None:
        """Lenient import: drop what hangs on a skipped joint (bodies beyond it, their wrap objects and markers,
        paths touching them, couplers and points using their coordinates), each listed in ``skipped``."""
        import dataclasses
        doc = self.doc
        neighbours: dict[str, list[str]] = {}  # either way: a joint whose child is the tree parent connects too
        for j in doc.joints:
            neighbours.setdefault(j.parent.body, []).append(j.child.body)
            neighbours.setdefault(j.child.body, []).append(j.parent.body)
        reached, stack = {doc.ground}, [doc.ground]
        while stack:
            for body in neighbours.get(stack.pop(), []):
                if body not in reached:
                    reached.add(body)
                    stack.append(body)
        dropped = [b for b in doc.bodies if b.name not in reached]
        if not dropped:
            return
        for b in dropped:
            self.skipped.append(Skipped("body", b.name, b.line, "not connected to the ground once the joints above "
                                                                "were skipped"))
        joints = [j for j in doc.joints if j.parent.body in reached and j.child.body in reached]
        coords = {c.name for j in joints for c in j.coordinates}
        couplers = []
        for c in doc.couplers:
            if c.dependent in coords and all(i in coords for i in c.independents):
                couplers.append(c)
            else:
                self.skipped.append(Skipped("constraint", c.name, c.line, "uses a coordinate of a skipped joint"))
        wraps = {w.name for b in doc.bodies if b.name in reached for w in b.wrap_objects}
        forces = []
        for f in doc.forces:
            bad = None
            for p in (f.points or []):
                uses = [p.coordinate] if p.kind == "conditional" else list(p.function_coordinates or [])
                if p.body not in reached or any(u not in coords for u in uses):
                    bad = f"path point {p.name!r} is on a skipped body or uses a skipped coordinate"
                    break
            for w in (f.wraps or []):
                if bad is None and w.wrap_object not in wraps:
                    bad = f"wraps over {w.wrap_object!r}, which is on a skipped body"
            if bad is None:
                forces.append(f)
            else:
                self.skipped.append(Skipped("force", f.name, f.line, bad))
        self.doc = dataclasses.replace(doc, bodies=[b for b in doc.bodies if b.name in reached], joints=joints,
                                       couplers=couplers, forces=forces,
                                       markers=[m for m in doc.markers if m.body in reached])

    def coordinates(self) -> None:
        doc = self.doc
        self.coord_spec = {c.name: c for c in doc.coordinates}
        self.coupler = {}
        for c in doc.couplers:
            if c.dependent not in self.coord_spec:
                raise self.fail(f"<CoordinateCouplerConstraint name='{c.name}'>",
                                f"dependent coordinate {c.dependent!r} does not exist", c.line)
            for ind in c.independents:
                if ind not in self.coord_spec:
                    raise self.fail(f"<CoordinateCouplerConstraint name='{c.name}'>",
                                    f"independent coordinate {ind!r} does not exist", c.line)
            if c.dependent in self.coupler:
                raise self.fail(f"<CoordinateCouplerConstraint name='{c.name}'>",
                                f"coordinate {c.dependent!r} is already driven by coupler "
                                f"{self.coupler[c.dependent].name!r}", c.line)
            if self.coord_spec[c.dependent].locked:
                self.log.append(f"coupler {c.name!r} ignored: its dependent coordinate {c.dependent!r} is locked")
                continue
            self.coupler[c.dependent] = c
        self.generalized = [c for c in doc.coordinates if not c.locked and c.name not in self.coupler
                            and c.name not in self.chain_exprs]
        self.gindex = {c.name: k for k, c in enumerate(self.generalized)}
        self.nq = len(self.generalized)
        self._expr: dict[str, JointFunction] = {}
        for c in doc.coordinates:
            self.expr(c.name)

    def expr(self, name: str, stack: tuple[str, ...] = ()) -> JointFunction:
        """The OpenSim coordinate ``name`` as a function of the generalized coordinates."""
        if name in self._expr:
            return self._expr[name]
        if name in stack:
            cyc = " -> ".join(stack + (name,))
            c = self.coupler[name]
            raise self.fail(f"<CoordinateCouplerConstraint name='{c.name}'>", f"couplers form a cycle: {cyc}", c.line)
        spec = self.coord_spec[name]
        if name in self.chain_exprs:
            f = self.chain_exprs[name]
        elif name in self.gindex:
            f = fn.coordinate(self.gindex[name], self.nq)
        elif spec.locked:
            f = fn.Constant(spec.default, self.nq)
        else:
            c = self.coupler[name]
            inner = [self.expr(i, stack + (name,)) for i in c.independents]
            f = compose(c.function if c.scale == 1.0 else fn.Multiplier(c.scale, c.function), inner)
        self._expr[name] = f
        return f

    # -- joints ------------------------------------------------------------------
    def tree_order(self) -> list[JointSpec]:
        """The joints from the ground outwards.  A joint whose child body is reached first (its parent only
        through it) is *reversed*: its child body becomes the tree parent, as Simbody reverses such a mobilizer
        (``self.reversed``; OpenSim's 3.x ``<reverse>true</reverse>`` swaps the frames and lands here too)."""
        by_body: dict[str, list[JointSpec]] = {}
        for j in self.doc.joints:
            by_body.setdefault(j.parent.body, []).append(j)
            if j.child.body != j.parent.body:
                by_body.setdefault(j.child.body, []).append(j)
        order, stack = [], [self.doc.ground]
        reached = {self.doc.ground}
        used: set[str] = set()
        self.reversed: set[str] = set()
        while stack:
            b = stack.pop(0)
            for j in by_body.get(b, []):
                if j.name in used:
                    continue
                outward = j.parent.body == b
                other = j.child.body if outward else j.parent.body
                if other in reached:
                    continue  # a second joint onto a placed body: left to the check below
                used.add(j.name)
                if not outward:
                    self.reversed.add(j.name)
                order.append(j)
                reached.add(other)
                stack.append(other)
        for j in self.doc.joints:
            if j.name not in used and j.parent.body in reached and j.child.body in reached:
                raise self.fail(f"<{j.type} name='{j.name}'>", f"the joint closes a loop of joints (bodies "
                                f"{j.parent.body!r} and {j.child.body!r} are already joined through others; closed "
                                "loops of joints are not supported: close the loop with a constraint)", j.line)
        for b in self.doc.bodies:
            if b.name not in reached:
                raise self.fail(f"<Body name='{b.name}'>", "the body is not connected to the ground by joints", b.line)
        return order

    def reversed_joint(self, j: JointSpec, steps, placement: dict, joints: list) -> int:
        """A joint whose child body is the tree parent: the inverse of parent · pre · (before_i · E_i(v_i))_i ·
        post · child⁻¹, i.e. child · post⁻¹ · (E_i(−v_i) · before_i⁻¹) in reverse order · pre⁻¹ · parent⁻¹, each
        motion about its own axis by the negated joint variable (the coordinates keep OpenSim's meaning)."""
        cframe, cbody = placement[j.child.body]
        acc = cbody @ j.child.transform()
        if j.post is not None:
            acc = acc @ np.linalg.inv(j.post)
        current = cframe
        for before, ax in reversed(steps):
            var = self.axis_variable(j, ax)
            rot = ax.is_rotation
            if var.is_constant:
                acc = acc @ _fixed_step(ax, -float(var.evaluate(np.zeros((1, self.nq)), 0).value[0]))
            else:
                joints.append(Joint(f"{j.name}/{ax.name}", current, REVOLUTE if rot else PRISMATIC, ax.axis,
                                    compose(fn.Linear([-1.0], 0.0), [var]), acc,
                                    source=f"{j.type} {j.name!r} {ax.name} ({', '.join(ax.coordinates)}), reversed"))
                current = len(joints)
                acc = np.eye(4)
            if before is not None:
                acc = acc @ np.linalg.inv(before)
        if j.pre is not None:
            acc = acc @ np.linalg.inv(j.pre)
        placement[j.parent.body] = (current, acc @ np.linalg.inv(j.parent.transform()))
        self.log.append(f"joint {j.name!r} ({j.type}) reversed: its child {j.child.body!r} is the tree parent of "
                        f"{j.parent.body!r}")
        return current

    def axis_variable(self, j: JointSpec, ax) -> JointFunction:
        inner = [self.expr(c) for c in ax.coordinates]
        f = ax.function
        if not inner:
            if f is None:
                return fn.Constant(0.0, self.nq)
            return fn.Constant(float(f.evaluate(np.zeros((1, f.n_inputs)), 0).value[0]), self.nq)
        if f is None:
            if len(inner) != 1:
                raise self.fail(f"<{j.type} name='{j.name}'>",
                                f"TransformAxis {ax.name} lists {len(inner)} coordinates but no function", j.line)
            return inner[0]
        if f.is_constant:
            return fn.Constant(float(f.evaluate(np.zeros((1, f.n_inputs)), 0).value[0]), self.nq)
        return compose(f, inner)

    def point_constraint_chain(self) -> None:
        """The point constraints' dependent coordinates as ClosedChain variables of the others
        (:mod:`osim_emb.core.point_constraints`), from the spanning tree where every coordinate is free."""
        from osim_emb.core import point_constraints as pc
        doc = self.doc
        tree = _Converter(doc, self.strict, tree_only=True).build()
        pairs = self._point_pairs(tree)
        names = tree.coordinate_names
        z_ref = np.array([self.coord_spec_default(n) for n in names])
        c0 = doc.point_constraints[0]
        where = f"<{c0.type} name='{c0.name}'>"
        n_all = sum(p.n_equations for p in pairs)
        equations = pc.independent_equations(tree, pairs, z_ref, range(len(names)))
        free = [k for k, n in enumerate(names) if self.coord_spec[n].free_to_satisfy_constraints]
        try:
            assembled = pc.assembled_configuration(tree, pairs, z_ref, equations, free)
        except ValueError as err:
            return self._point_constraints_left_out(f"the constraints cannot be solved from the default "
                                                    f"configuration: {err}")
        moved = [(n, z_ref[k], assembled[k]) for k, n in enumerate(names) if abs(assembled[k] - z_ref[k]) > 1e-12]
        if moved:  # (a coordinate moved by round-off only keeps its default)
            self.assembled_defaults = {n: v for n, _, v in moved}
            self.log.append("the default coordinates do not satisfy the constraints: assembled as OpenSim's initSystem "
                            "does (nearest the defaults of the coordinates not marked is_free_to_satisfy_constraints): "
                            + ", ".join(f"{n} {a:.6g} -> {b:.6g}" for n, a, b in moved))
            logging.getLogger(__name__).info("%s", self.log[-1])
            z_ref = np.array([self.assembled_defaults.get(n, z_ref[k]) for k, n in enumerate(names)])
        if self.dependent_coordinates is not None:
            unknown = [n for n in self.dependent_coordinates if n not in names]
            if unknown:
                raise self.fail(where, f"dependent coordinate(s) {unknown} are not free coordinates of the model")
            dependent = [names.index(n) for n in self.dependent_coordinates]
            if len(dependent) != len(equations):
                raise self.fail(where, f"{len(equations)} dependent coordinates needed (one per independent constraint "
                                       f"equation: 3 per PointConstraint, 1 per ConstantDistanceConstraint, 2 per "
                                       f"PointOnLineConstraint, 6 per WeldConstraint, less the {n_all - len(equations)}"
                                       f" redundant), {len(dependent)} given")
        else:
            try:
                dependent = pc.choose_dependent_coordinates(tree, pairs, z_ref, range(len(names)), equations,
                                                            preferred=free)
            except ValueError as err:
                return self._point_constraints_left_out(str(err))
        ranges = np.array([tree.coordinates[k].range for k in range(len(names)) if k not in dependent])
        try:
            chain = pc.point_constraint_chain(tree, pairs, dependent, z_ref, coordinate_range=ranges,
                                              name=", ".join(c.name for c in doc.point_constraints),
                                              equations=equations)
        except pc.RedundantConstraintsError as err:
            return self._point_constraints_left_out(str(err))
        except ValueError as err:  # ClosedChainError: no assembly from the default configuration, singular, ...
            return self._point_constraints_left_out(f"the constraints cannot be solved from the default "
                                                    f"configuration: {err}")
        if len(equations) < n_all:
            msg = (f"{where}: {n_all - len(equations)} of the loops' {n_all} constraint equations are redundant (rank "
                   f"{len(equations)} at the default configuration) and left out of the solve; they hold within "
                   f"{pc.CONSISTENT:g} m at the solved default configuration and around it (OpenSim satisfies them in the "
                   f"least-squares sense)")
            self.log.append(msg)
            logging.getLogger(__name__).warning("%s", msg)
        for var in chain.variables:
            self.chain_exprs[var.name] = var
        if doc.couplers:  # the constraint forces are solved where the couplers' coordinates are free too
            import dataclasses
            tree = _Converter(dataclasses.replace(doc, couplers=[]), self.strict, tree_only=True).build()
            pairs = self._point_pairs(tree)
        self.point_constraint_loop = pc.PointConstraintLoop(tree, tuple(pairs), tuple(equations))
        self.log.append(f"point constraints {chain.constraints.name}: coordinates {list(chain.constraints.variable_names)}"
                        " solved from the others (closed chain, projection method)")

    def _point_pairs(self, tree: Model) -> list:
        """The document's point constraints as PointPairs on the frames of ``tree`` (a spanning tree of it)."""
        from osim_emb.core import point_constraints as pc
        frames = {b.name: (b.frame, b.frame_to_body) for b in tree.bodies}
        frames.setdefault(self.doc.ground, (0, np.eye(4)))
        pairs = []
        for c in self.doc.point_constraints:
            ends, turns = [], []
            for body, location in ((c.body1, c.location1), (c.body2, c.location2)):
                if body not in frames:
                    raise self.fail(f"<{c.type} name='{c.name}'>", f"body {body!r} does not exist", c.line)
                frame, to_body = frames[body]
                ends.append((frame, (to_body @ np.append(location, 1.0))[:3]))
                turns.append(to_body[:3, :3])
            axes1 = axes2 = None
            if c.type == "PointOnLineConstraint":
                axes1 = _line_normals(turns[0] @ c.direction)
            elif c.type == "WeldConstraint":
                axes1, axes2 = turns[0] @ c.rotation1, turns[1] @ c.rotation2
            pairs.append(pc.PointPair(c.name, ends[0][0], ends[0][1], ends[1][0], ends[1][1], c.distance, axes1, axes2))
        return pairs

    def _point_constraints_left_out(self, reason: str) -> None:
        """What the minimal-coordinate form cannot do with these PointConstraints (redundant, not assembled from the
        defaults): refused by name, or (not strict) left out, the model kept as its spanning tree."""
        c = self.doc.point_constraints[0]
        self.unsupported(c.type, c.name, reason, c.line)
        for other in self.doc.point_constraints[1:]:
            self.skipped.append(Skipped("constraint", other.name, other.line, "left out with " + repr(c.name)))

    def coord_spec_default(self, name: str) -> float:
        return next(c.default for c in self.doc.coordinates if c.name == name)

    def build(self) -> Model:
        if not self.strict:
            self.prune_unreachable()
        doc = self.doc
        if doc.point_constraints and not self.tree_only:
            self.coord_spec = {c.name: c for c in doc.coordinates}
            self.point_constraint_chain()
        self.coordinates()
        joints: list[Joint] = []
        # body name -> (frame index, frame_to_body)
        placement: dict[str, tuple[int, np.ndarray]] = {doc.ground: (0, np.eye(4))}
        order = ["translation1", "translation2", "translation3", "rotation1", "rotation2", "rotation3"]
        for j in self.tree_order():
            steps = [(None, ax) for ax in sorted(j.axes, key=lambda a: order.index(a.name))] + list(j.tail)
            if j.name in self.reversed:
                current = self.reversed_joint(j, steps, placement, joints)
                continue
            pframe, pbody = placement[j.parent.body]
            acc = pbody @ j.parent.transform()
            if j.pre is not None:
                acc = acc @ j.pre
            current = pframe
            for before, ax in steps:
                if before is not None:
                    acc = acc @ before
                var = self.axis_variable(j, ax)
                rot = ax.is_rotation
                if var.is_constant:
                    acc = acc @ _fixed_step(ax, float(var.evaluate(np.zeros((1, self.nq)), 0).value[0]))
                    continue
                joints.append(Joint(f"{j.name}/{ax.name}", current, REVOLUTE if rot else PRISMATIC,
                                    ax.axis, var, acc, source=f"{j.type} {j.name!r} {ax.name} ({', '.join(ax.coordinates)})"))
                current = len(joints)
                acc = np.eye(4)
            if j.post is not None:
                acc = acc @ j.post
            placement[j.child.body] = (current, acc @ np.linalg.inv(j.child.transform()))
            self.log.append(f"joint {j.name!r} ({j.type}): {sum(1 for jj in joints if jj.name.startswith(j.name + '/'))}"
                            f" one-DOF joint(s) from {j.parent.body!r} to {j.child.body!r}")
        bodies = []
        for b in doc.bodies:
            if b.name == doc.ground:
                continue
            frame, x = placement[b.name]
            inertia = b.inertia
            if b.mass == 0 and np.any(inertia):
                self.log.append(f"body {b.name!r}: massless with nonzero inertia; inertia set to zero as OpenSim does")
                inertia = np.zeros(6)
            bodies.append(Body(b.name, frame, b.mass, b.com, inertia, x))
        self.placement = placement
        muscles = self.muscles(joints, bodies)
        default = {c.name: self.assembled_defaults.get(c.name, c.default) for c in doc.coordinates}
        coords = [GeneralizedCoordinate(c.name, c.range, default[c.name], c.motion_type, c.clamped, c.default_speed)
                  for c in self.generalized]
        deps = []
        for c in doc.coordinates:
            if c.name in self.gindex:
                continue
            kind = "locked" if c.locked else "coupled"
            if c.locked:
                src = f"locked at {c.default:g}"
            elif c.name in self.chain_exprs:
                src = f"point constraint(s) {self.chain_exprs[c.name].chain.constraints.name}"
            else:
                src = f"coupler {self.coupler[c.name].name!r}"
            deps.append(DependentCoordinate(c.name, self._expr[c.name], kind, src, c.range, default[c.name],
                                            c.motion_type))
        wraps = self.wrap_objects()
        extras = {
            "source": doc.path, "version": doc.version, "document": doc, "conversion": self.log,
            "skipped": self.skipped, "notes": doc.notes,
            "markers": [(m.name, m.body, m.location) for m in doc.markers],
            "controllers": list(doc.controllers),
            "forces": [(f.name, f.type) for f in doc.forces
                       if not f.has_path and f.function_path is None and f.scholz_path is None],
            "point_constraint_loop": self.point_constraint_loop,
        }
        return Model(doc.name, coords, joints, bodies, doc.gravity, deps, muscles, wraps, extras)

    # -- paths -----------------------------------------------------------------
    def clamped_expr(self, coordinate: str) -> tuple[JointFunction, tuple[float, float]]:
        return self.expr(coordinate), self.coord_spec[coordinate].range

    def muscles(self, joints: list[Joint], bodies: list[Body]) -> list[Musculotendon]:
        from osim_emb.io.model_parts import muscle_parameters
        from osim_emb.io.muscle_xml import PASSIVE_PATH_FORCE_TYPES
        out = []
        without_model: dict[str, list[str]] = {}  # reason -> muscles imported as paths only
        known_bodies = {b.name for b in self.doc.bodies}
        for f in self.doc.forces:
            if f.function_path is not None:
                from osim_emb.io.function_based_path_xml import function_based_unit
                out.append(function_based_unit(f, self))
                continue
            if f.scholz_path is not None:  # Scholz2015GeometryPath (paths.scholz)
                from osim_emb.io.scholz_xml import scholz_unit
                out.append(scholz_unit(f, self, known_bodies))
                continue
            if not f.has_path:
                continue
            points = []
            used: set[str] = set()
            for k, p in enumerate(f.points):
                if p.body not in known_bodies:
                    raise self.fail(f"<{f.type} name='{f.name}'>", f"path point {p.name!r} is on body {p.body!r}, which does not exist", p.line)
                if p.kind == "moving":
                    points.append(self.moving_point(f.name, k, p, joints, bodies, used))
                elif p.kind == "conditional":
                    if p.coordinate not in self.coord_spec:
                        raise self.fail(f"<ConditionalPathPoint name='{p.name}'>", f"coordinate {p.coordinate!r} does not exist", p.line)
                    points.append(PathPoint(p.name, p.body, p.location, "conditional", self.expr(p.coordinate),
                                            p.range, p.coordinate, p.body))
                else:
                    points.append(PathPoint(p.name, p.body, p.location, "fixed", source_body=p.body))
            wrap_names = {w.name for w in self.doc.wrap_objects}
            pw = []
            for w in f.wraps:
                if w.wrap_object not in wrap_names:
                    raise self.fail(f"<{f.type} name='{f.name}'>", f"PathWrap names wrap object {w.wrap_object!r}, which does not exist", f.line)
                pw.append(PathWrap(w.wrap_object, w.method, w.range))
            params = None
            if f.type in PASSIVE_PATH_FORCE_TYPES:  # no muscle model: the simulation reads their tension laws
                out.append(Musculotendon(f.name, f.type, points, pw, params))
                continue
            try:
                params = muscle_parameters(f.element, self.doc)
            except Exception as err:  # parameters are optional for geometry; say why they are missing
                self.log.append(f"muscle {f.name!r}: force model not imported ({err})")
                reason = " ".join(str(err).split()).replace(f"muscle {f.name!r}: ", "")
                without_model.setdefault(reason, []).append(f.name)
            out.append(Musculotendon(f.name, f.type, points, pw, params))
        for reason, names in without_model.items():  # one warning per reason, not per muscle
            shown = ", ".join(names[:5]) + (f", ... ({len(names)} in all)" if len(names) > 5 else "")
            logging.getLogger(__name__).warning("%s: %d path unit(s) imported as paths only, force model not imported "
                                                "(%s): %s", self.doc.path, len(names), reason, shown)
        return out

    def moving_point(self, muscle: str, k: int, p, joints: list[Joint], bodies: list[Body], used: set[str]) -> PathPoint:
        frame, x = self.placement[p.body]
        acc = x @ (p.offset if p.offset is not None else np.eye(4))
        current = frame
        base = f"{muscle}/{p.name or 'point'}"
        name = base if base not in used else f"{base}_{k + 1}"
        used.add(name)
        for axis, f, c in zip(np.eye(3), p.functions, p.function_coordinates):
            if c not in self.coord_spec:
                raise self.fail(f"<MovingPathPoint name='{p.name}'>", f"coordinate {c!r} does not exist", p.line)
            inner, (lo, hi) = self.clamped_expr(c)
            outer = f if not (np.isfinite(lo) and np.isfinite(hi)) else fn.Clamped(f, lo, hi)
            var = compose(outer, [inner]) if not f.is_constant else fn.Constant(
                float(f.evaluate(np.zeros((1, 1)), 0).value[0]), self.nq)
            if var.is_constant:
                v = float(var.evaluate(np.zeros((1, self.nq)), 0).value[0])
                acc = acc @ homogeneous(None, v * axis)
                continue
            joints.append(Joint(f"{name}/{'xyz'[int(np.argmax(axis))]}", current, PRISMATIC, axis, var, acc,
                                source=f"MovingPathPoint {p.name!r} of {muscle!r} ({c})"))
            current = len(joints)
            acc = np.eye(4)
        bodies.append(Body(name, current, 0.0, np.zeros(3), np.zeros((3, 3)), acc))
        self.placement[name] = (current, acc)
        return PathPoint(p.name, name, np.zeros(3), "moving", source_body=p.body)

    def wrap_objects(self) -> list[Any]:
        from osim_emb.io.model_parts import wrap_object_from_spec
        try:
            return [wrap_object_from_spec(w) for w in self.doc.wrap_objects]
        except ImportError as err:  # a wrap type not available in this build
            self.log.append(f"wrap objects not imported: {err}")
            return []


def document_to_model(doc: OsimDocument, strict: bool = True,
                      dependent_coordinates: Sequence[str] | None = None) -> Model:
    """Build the empirically-based model of an OpenSim document (``dependent_coordinates``: the coordinates its
    loop constraints solve, one per independent equation; default chosen by :mod:`osim_emb.core.point_constraints`)."""
    from osim_emb.model import ModelError
    try:
        return _Converter(doc, strict, dependent_coordinates).build()
    except ModelError as err:  # a consistency check of the model: say which file
        raise OsimImportError(doc.path, "<Model>", str(err)) from None
