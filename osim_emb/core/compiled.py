"""A model compiled once into flat arrays for fast single-state dynamics (the ODE right-hand side).

:func:`compiled_model` turns the mass-carrying part of an immutable :class:`~osim_emb.model.Model`
(``model.dynamics_model``) into

* a **joint-variable program**: the graph of coordinate expressions and functions behind every
  f_i(q) (Linear forms, Constant, Multiplier, Composite, SimmSpline, PiecewiseLinear,
  PiecewiseConstant, Polynomial, Fourier, GCVSpline / NaturalCubicSpline, Clamped,
  MultivariatePolynomial, and closed chains with trigonometric constraints: one OP_CHAIN node that
  solves the chain and writes its m variables, Newton + projection, Eqs 100-120; a model's point, distance,
  point-on-line and weld constraint loops: one OP_FRAMECHAIN node, the constraints from the spanning tree's
  kinematics), as a topologically
  ordered list of nodes with their parameters
  (linear forms, spline coefficient tables, ...), built by
  :class:`osim_emb.core.functions.program.ProgramBuilder`.  Identical sub-expressions are evaluated once,
  and constant ones are folded at compile time.  A function the program cannot flatten
  (SplineSurface, a user-defined type, a subclass that may evaluate differently) becomes an
  *external* node: its ``evaluate`` is called from Python before the kernel runs, so the results
  stay correct;
* the **tree**: parents, joint kinds, axes, offsets.  A joint whose variable is constant is folded
  into its children's offsets and its bodies into its parent frame, so it costs nothing;
* the **inertias**: for every frame that carries mass, m, m c and the inertia about the frame
  origin (from the pseudo-inertia J_i of Eq 131, summed over the bodies on the frame).

Everything is packed into one int64 and one float64 array, which the kernels of
:mod:`osim_emb.core.compiled_kernels` evaluate (numba).  The compiled model is cached on the model
(``model.compiled`` is not a field: use :func:`compiled_model`).  It is the one implementation of the
dynamics: every function of :mod:`osim_emb.core.dynamics` calls it, for one state or a batch (in
parallel chunks from :data:`PARALLEL_MIN_STATES` states on).

Packed layout (see the constants of :mod:`osim_emb.core.compiled_kernels`)::

    ints[0:10]  n_q, n_nodes, n_frames (ground included), n_massive, offsets of the node, frame and
                mass tables, n_external, offsets of the tree (ints, flts)
    node n      op, first input (index into ints), number of inputs, int parameters, float parameters
    frame i     parent, kind (0 revolute, 1 prismatic), node of f_i
    tree        parent and revolute (ints), offsets C_i, axes a_i, ã_i, ã_i² (flts) of every compiled frame: the
                arrays of the one frame recursion, osim_emb.core.kinematics_kernels.frame_kinematics
    mass e      frame, float parameters (13: m, m c, inertia about the frame origin, frame coordinates)
    flts[0:3]   gravity
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from osim_emb.core import compiled_kernels as K
from osim_emb.core._accel import thread_count
from osim_emb.core.calculus import skew
from osim_emb.core.functions.base import JointFunction
from osim_emb.core.functions.program import (
    _UNIVARIATE,
    COORDINATES,
    ProgramBuilder,
    flattenable_type,
)
from osim_emb.core.functions.program import readonly
from osim_emb.core.functions.program import external_jets as _external_jets
from osim_emb.core.functions.program import node_program_arrays
from osim_emb.core.functions.program import pack_nodes as _pack_nodes
from osim_emb.model import Model

__all__ = ["CompiledModel", "compiled_model", "JointProgram", "joint_program", "raise_joint_function_error", "warm_up",
           "PARALLEL_MIN_STATES"]

#: from this many states on, batches run in parallel chunks over numba's threads.  A state takes ~5 µs; below
#: ~10 ms of work the threads' start and, on a loaded machine, their waiting for a core cost more than they save
#: (measured on 2 shared cores: docs/dynamics.md)
PARALLEL_MIN_STATES = 2048
_NO_ELEMENTS = np.zeros((0, K.ELEMENT_FLOATS))  # rhs without force elements

_Q = COORDINATES  # the inputs of a top-level joint variable: the generalized coordinates themselves


def _univariate_parameters(f: JointFunction):
    """(int parameters, float parameters) of a one-input function node, or None (a type the program does not know,
    or a subclass of one, which may evaluate differently)."""
    if flattenable_type(f) in _UNIVARIATE:
        return f.node_parameters()
    return None


def univariate_rows(encoded) -> tuple[np.ndarray, np.ndarray]:
    """One-input functions' (int parameters, float parameters) as zero-padded rows (ints (C, ni), floats (C, nf);
    one zero row when there are none): row k is what ``compiled_kernels._univariate(ints[k], flts[k], 0, 0, x)``
    evaluates (muscle curves, Ligament curves)."""
    ni = max([len(e[0]) for e in encoded], default=1)
    nf = max([len(e[1]) for e in encoded], default=1)
    ints = np.zeros((max(len(encoded), 1), ni), dtype=np.int64)
    flts = np.zeros((max(len(encoded), 1), nf))
    for k, (i, f) in enumerate(encoded):
        ints[k, :len(i)] = i
        flts[k, :len(f)] = f
    return ints, flts


def raise_joint_function_error(model: Model, q: np.ndarray, exc: Exception):
    """A joint-variable program failed at the configurations q (a closed chain's Newton or projection): raise the
    detailed error (configuration, residual, condition number) through
    :class:`~osim_emb.core.closed_chains.ClosedChain`, which runs the same compiled closed-chain kernels
    (:mod:`osim_emb.core.closed_chain_kernels`) batched and turns their status codes into the exception; if that
    passes, raise ``exc``."""
    if "closed chain" in str(exc) or isinstance(exc, np.linalg.LinAlgError):
        cache: dict = {}
        for joint in model.joints:
            joint.variable.evaluate(q, 2, cache)
    raise exc


class SingularMassMatrixError(np.linalg.LinAlgError):
    """M(q) is singular: some coordinates move no mass or inertia (forward dynamics undefined)."""


class JointProgram:
    """The joint-variable program of *every* joint of a model (nothing folded, massless frames included): f_i,
    ∇f_i and the full Hessian H_i for a batch, by :func:`~osim_emb.core.compiled_kernels.joint_variable_batch`.
    The kinematics and the paths use it (``core.kinematics.joint_variables``); build with :func:`joint_program`.

    Functions the program cannot flatten (``externals``: SplineSurface, user-defined types, closed chains that
    are not trigonometric) are evaluated by their own ``evaluate`` before the kernel runs, as in the dynamics.
    """

    def __init__(self, model: Model):
        nq = model.n_q
        b = ProgramBuilder(nq)
        frame_nodes = [b.compile(joint.variable, _Q) for joint in model.joints]
        self.ints, self.flts = node_program_arrays(b, nq)
        self.chains = K.has_chains(self.ints)  # None: the kernels compiled without closed-chain support
        self.n_q = nq
        self.n_nodes = len(b.nodes)
        self.externals = tuple(b.externals)
        self.frame_nodes = np.array(frame_nodes, dtype=np.int64)
        self._with_ground = np.array([-1] + frame_nodes, dtype=np.int64)
        self.function_counts = dict(b.kinds)
        self._model = model
        self._no_ext = np.zeros((1, 0, 1 + nq + nq * nq))

    def __repr__(self) -> str:
        return (f"JointProgram({self._model.name!r}: {len(self.frame_nodes)} joint variables, {self.n_nodes} "
                f"nodes, {len(self.externals)} external functions)")

    def evaluate(self, q: np.ndarray, order: int = 2, with_ground: bool = False):
        """f (N, n_joints), ∇f (N, n_joints, n_q) and H (N, n_joints, n_q, n_q) of the joints' variables at q
        (N, n_q); the derivatives ``order`` does not ask for are None.  ``with_ground`` puts a zero column first
        (the frames' numbering: frame 0 is the ground)."""
        q = _writable(q)
        n, nq = q.shape[0], self.n_q
        nodes = self._with_ground if with_ground else self.frame_nodes
        k = nodes.size
        val = np.empty((n, k))
        grad = np.empty((n if order >= 1 else 0, k, nq))
        hess = np.empty((n if order >= 2 else 0, k, nq, nq))
        ext = _external_jets(self.externals, q, nq, order) if self.externals else self._no_ext
        threads = thread_count()
        ints, flts = readonly(self.ints), readonly(self.flts)  # one compiled signature (copies are writable)
        try:
            done = None
            if threads > 1 and n >= PARALLEL_MIN_STATES:
                done = K.joint_variable_batch_parallel(ints, flts, ext, q, nodes, order, val, grad, hess,
                                                       min(n, 4 * threads), self.chains)
            if done is None or not done.all():  # serially, or again to raise a chunk's error
                K.joint_variable_batch(ints, flts, ext, q, nodes, order, val, grad, hess, self.chains)
        except ValueError as exc:
            raise_joint_function_error(self._model, q, exc)
        return val, (grad if order >= 1 else None), (hess if order >= 2 else None)


def joint_program(model: Model) -> JointProgram:
    """The joint-variable program of all of a model's joints, built once and cached on the (immutable) model."""
    cached = model.__dict__.get("_joint_program")
    if cached is None:
        cached = JointProgram(model)
        object.__setattr__(model, "_joint_program", cached)
    return cached


class CompiledModel:
    """The flattened dynamics model (see the module docstring).  Immutable; build with :func:`compiled_model`.

    Attributes: ``ints``, ``flts`` (the packed arrays), ``n_q``, ``n_nodes``, ``n_frames``
    (compiled frames, the ground included), ``n_massive``, ``externals`` (functions evaluated in
    Python), ``frame_names`` (the joint of every compiled frame), ``folded`` (joints with a constant
    variable, folded into fixed transforms), ``function_counts``.
    """

    def __init__(self, model: Model):
        dm = model.dynamics_model
        nq = dm.n_q
        self.n_q = nq
        b = ProgramBuilder(nq)
        # frames: original frame -> (compiled frame, constant transform from it to the original frame)
        where: dict[int, tuple[int, np.ndarray]] = {0: (0, np.eye(4))}
        frames: list[tuple[int, int, int, np.ndarray, np.ndarray]] = []  # parent, kind, node, axis, offset
        names: list[str] = ["ground"]
        folded: list[str] = []
        frame_nodes: list[int] = []
        for i, joint in enumerate(dm.joints, start=1):
            node = b.compile(joint.variable, _Q)
            cp, tp = where[joint.parent]
            offset = tp @ joint.offset
            if node in b.const:
                where[i] = (cp, tp @ joint.local_transform(b.const[node]))
                folded.append(joint.name)
                continue
            frames.append((cp, 0 if joint.is_revolute else 1, node, np.asarray(joint.axis), offset))
            frame_nodes.append(node)
            names.append(joint.name)
            where[i] = (len(frames), np.eye(4))
        nf = len(frames) + 1
        pj = np.zeros((nf, 4, 4))
        pji = dm.frame_pseudo_inertia
        for i in range(1, dm.n_frames):
            if not np.any(pji[i]):
                continue
            cp, t = where[i]
            pj[cp] += t @ pji[i] @ t.T
        massive = [i for i in range(1, nf) if np.any(pj[i])]

        nodes = b.nodes
        ints: list[int] = [0] * K.HEADER_SIZE
        flts: list[float] = [float(g) for g in dm.gravity]
        off_nodes = _pack_nodes(nodes, ints, flts)
        off_frames = len(ints)
        ints.extend([0] * K.FRAME_STRIDE)  # the ground
        for parent, kind, node, axis, offset in frames:
            ints.extend((parent, kind, node))
        # the tree arrays of the frame recursion (kinematics_kernels.frame_kinematics)
        off_tree = len(ints)
        ints.extend([0] + [fr[0] for fr in frames])
        ints.extend([0] + [int(fr[1] == 0) for fr in frames])
        off_tree_floats = len(flts)
        geometry = [(np.zeros((4, 4)), np.zeros(3))] + [(fr[4], np.asarray(fr[3], dtype=float)) for fr in frames]
        for offset, _ in geometry:
            flts.extend(np.asarray(offset, dtype=float).ravel().tolist())
        for _, axis in geometry:
            flts.extend(axis.tolist())
        for _, axis in geometry:
            flts.extend(skew(axis).ravel().tolist())
        for _, axis in geometry:
            flts.extend((skew(axis) @ skew(axis)).ravel().tolist())
        off_mass = len(ints)
        for i in massive:
            j = pj[i]
            e = j[:3, :3]
            inertia = np.trace(e) * np.eye(3) - e  # I_O = tr(E) I - E, about the frame origin
            fp = len(flts)
            flts.extend([j[3, 3]] + j[:3, 3].tolist() + inertia.ravel().tolist())
            ints.extend((i, fp))
        ints[K.H_NQ] = nq
        ints[K.H_NNODES] = len(nodes)
        ints[K.H_NFRAMES] = nf
        ints[K.H_NMASS] = len(massive)
        ints[K.H_OFF_NODES] = off_nodes
        ints[K.H_OFF_FRAMES] = off_frames
        ints[K.H_OFF_MASS] = off_mass
        ints[K.H_NEXT] = len(b.externals)
        ints[K.H_OFF_TREE] = off_tree
        ints[K.H_OFF_TREE_FLOATS] = off_tree_floats
        self.ints = np.array(ints, dtype=np.int64)
        self.flts = np.array(flts, dtype=np.float64)
        self.ints.setflags(write=False)
        self.flts.setflags(write=False)
        self.chains = K.has_chains(self.ints)  # None: the dynamics kernels compiled without closed-chain support
        self.n_nodes = len(nodes)
        self.n_frames = nf
        self.n_massive = len(massive)
        self.externals = tuple(b.externals)
        self.frame_names = tuple(names)
        self._frame_nodes = np.array(frame_nodes, dtype=np.intp)
        self.folded = tuple(folded)
        self.function_counts = dict(b.kinds)
        self.name = model.name
        self._model = dm
        self._frame_of = {j.name: where[i] for i, j in enumerate(dm.joints, start=1)}
        self._ext_width = 1 + nq + nq * nq
        self._no_ext = np.zeros((1, 0, self._ext_width))
        self._zero_tau = np.zeros(nq)

    def __repr__(self) -> str:
        return (f"CompiledModel({self.name!r}: {self.n_q} coordinates, {self.n_frames - 1} moving frames "
                f"({self.n_massive} with mass, {len(self.folded)} constant joints folded), {self.n_nodes} "
                f"program nodes, {len(self.externals)} external functions)")

    # -- external functions ----------------------------------------------------------------
    def external_jets(self, q: np.ndarray) -> np.ndarray:
        """(N, n_external, 1 + n_q + n_q^2): value, gradient and Hessian of every external function."""
        if not self.externals:
            return self._no_ext
        return _external_jets(self.externals, np.atleast_2d(q), self.n_q)

    # -- evaluation ------------------------------------------------------------------------
    def rhs(self, y: np.ndarray, tau: np.ndarray | None = None) -> np.ndarray:
        """(q̇, q̈) at y = (q, q̇) with generalized forces tau (n_q,) added to G."""
        y = _state_vector(y, self.n_q)
        ext = self._no_ext if not self.externals else self.external_jets(y[None, :self.n_q])
        tau = self._zero_tau if tau is None else _forces(tau, self.n_q)
        return K.rhs_loaded(self.ints, self.flts, ext, y, tau, _NO_ELEMENTS, 0.0, K.no_loads(), self.chains)

    def body_frame(self, model: Model, name: str, where: str) -> tuple[int, np.ndarray]:
        """(compiled frame, 4x4 pose of the body's frame in it) of body ``name`` of ``model`` (the ground: frame 0);
        a ValueError naming ``where`` when the body is not in the model or not in the compiled dynamics."""
        frame, pose = model.body_pose(name, where)
        if frame == 0:
            return 0, pose
        joint = model.joints[frame - 1].name
        if joint not in self._frame_of:
            raise ValueError(f"{where} acts on {name!r}, which carries no mass and is not part of the compiled "
                             "dynamics model")
        cf, to_frame = self._frame_of[joint]
        return cf, np.asarray(to_frame, dtype=float) @ pose

    def springs(self, model: Model, springs) -> np.ndarray:
        """Point-to-point springs as force-element rows (ELEMENT_FLOATS): ``springs`` holds tuples (frame a, point a,
        frame b, point b, stiffness, rest length) with frames of ``model`` (0 the ground) and points in them."""
        rows = []
        for fa, ra, fb, rb, k, l0 in springs:
            row = [float(K.EL_SPRING)]
            for fr, r in ((fa, ra), (fb, rb)):
                if fr == 0:
                    cf, t = 0, np.eye(4)
                else:
                    name = model.joints[fr - 1].name
                    if name not in self._frame_of:
                        raise ValueError(f"{model.name}: a spring is attached to frame {fr} ({name!r}), which carries "
                                         f"no mass and is not part of the compiled dynamics model")
                    cf, t = self._frame_of[name]
                p = t @ np.append(np.asarray(r, dtype=float).reshape(3), 1.0)
                row += [float(cf), *p[:3].tolist()]
            rows.append(row + [float(k), float(l0)])
        return element_table(rows)

    def external_loads(self, model: Model, loads) -> tuple:
        """An ExternalLoads (:class:`osim_emb.io.external_loads.ExternalLoads`) as the ``loads`` of
        :func:`compiled_kernels.rhs_into`: each element's applied body, force frame and point frame as compiled frames
        with the body's frame in them, and the piecewise coefficients of ``loads.spline()``."""
        rows, frames = [], []
        for e in loads.forces:
            row, mats = [], []
            for name, present in ((e.body, True), (e.force_frame, True), (e.point_frame, e.point is not None)):
                if not present:
                    row.append(-1)
                    mats.append(np.zeros(12))
                    continue
                cf, t = self.body_frame(model, name, f"{loads.path}: ExternalForce {e.name!r}")
                row.append(cf)
                mats.append(np.concatenate([t[:3, :3].ravel(), t[:3, 3]]))
            rows.append(row + [int(e.force is not None), int(e.torque is not None)])
            frames.append(mats)
        spline = loads.spline()
        return (np.array(rows, dtype=np.int64).reshape(-1, K.LOAD_INTS), np.array(frames, dtype=float).reshape(-1, 3, 12),
                np.ascontiguousarray(spline.x, dtype=float), np.ascontiguousarray(spline.c, dtype=float))

    def ode_rhs(self, generalized_forces: Callable[[float, np.ndarray, np.ndarray], Any] | Any | None = None,
                elements: np.ndarray | None = None, loads: tuple | None = None):
        """``fun(t, y)`` for ``solve_ivp`` (see :func:`osim_emb.core.dynamics.ode_rhs`).

        ``generalized_forces`` is a callable (t, q, q̇) -> τ or constant generalized forces (n_q,);
        ``elements`` (a force-element table: :meth:`springs`, :func:`osim_emb.simulation.force_elements.compiled_rows`)
        add their forces in the kernel, and
        ``loads`` (of :meth:`external_loads`) external loads at time t.
        """
        ints, flts, nq, chains = self.ints, self.flts, self.n_q, self.chains
        zero, no_ext, has_ext = self._zero_tau, self._no_ext, bool(self.externals)
        external_jets = self.external_jets
        sp = np.ascontiguousarray(elements if elements is not None else np.zeros((0, K.ELEMENT_FLOATS)), dtype=float)
        # one kernel whatever the elements and loads (each compiled kernel holds the whole dynamics: compile time)
        loads = K.no_loads() if loads is None else loads
        kernel = lambda i, f, e, y, tau, t: K.rhs_loaded(i, f, e, y, tau, sp, t, loads, chains)  # noqa: E731
        if generalized_forces is not None and not callable(generalized_forces):
            zero = _forces(generalized_forces, nq)
            generalized_forces = None

        f8 = np.dtype(float)
        shape = (2 * nq,)

        explain = self._explain

        if generalized_forces is None and not has_ext:
            def fun(t: float, y: np.ndarray) -> np.ndarray:
                if y.shape != shape or y.dtype != f8 or not (y.flags.c_contiguous and y.flags.writeable):
                    y = _state_vector(y, nq)
                try:
                    return kernel(ints, flts, no_ext, y, zero, t)
                except ValueError as exc:
                    explain(y[None, :nq], exc)
            return fun

        def fun(t: float, y: np.ndarray) -> np.ndarray:
            y = _state_vector(y, nq)
            ext = external_jets(y[None, :nq]) if has_ext else no_ext
            if generalized_forces is None:
                tau = zero
            else:
                tau = _forces(generalized_forces(t, y[:nq], y[nq:]), nq)
            try:
                return kernel(ints, flts, ext, y, tau, t)
            except ValueError as exc:
                explain(y[None, :nq], exc)

        return fun

    def _explain(self, q: np.ndarray, exc: ValueError):
        """The kernel failed at the states q (N, n_q): a closed chain (:func:`raise_joint_function_error`) or a
        singular mass matrix (:class:`SingularMassMatrixError`)."""
        try:
            raise_joint_function_error(self._model, q, exc)
        except np.linalg.LinAlgError as err:
            if "closed chain" in str(err):
                raise
            self._raise_singular_mass(np.atleast_2d(q), err)

    def _raise_singular_mass(self, q: np.ndarray, err: Exception):
        """Name the configuration and the coordinates that move no mass; re-raise ``err`` if M is regular."""
        m, _, _ = self.terms(q)
        names = self._model.coordinate_names
        for k in range(len(q)):
            w, v = np.linalg.eigh(0.5 * (m[k] + m[k].T))
            null = w <= 1e-13 * max(abs(w).max(), 1e-300)
            if not null.any():
                continue
            weight = np.linalg.norm(v[:, null], axis=1)  # each coordinate's share of the null space
            free = [names[i] for i in np.flatnonzero(weight > 0.1)]
            free = free[:12] + ([f"... ({len(free) - 12} more)"] if len(free) > 12 else [])
            raise SingularMassMatrixError(
                f"model {self._model.name!r}: the mass matrix M(q) is singular at q = {np.round(q[k], 6).tolist()} "
                f"({int(null.sum())} of {len(w)} eigenvalues zero; coordinate(s) {', '.join(free)} move no mass or "
                "inertia there): forward dynamics is undefined (OpenSim 4.6's integrator refuses such models too: "
                "'Matrix is singular'); give the bodies these coordinates move mass and inertia, or lock the "
                "coordinates") from err
        raise err

    def _batch(self, q: np.ndarray, qd: np.ndarray | None, arg: np.ndarray | None, mode: int):
        """The kernel :func:`~osim_emb.core.compiled_kernels.batch` over the states (in parallel chunks over
        numba's threads from :data:`PARALLEL_MIN_STATES` states on): (M, N, N q̇, G, result)."""
        q = _writable(q)
        n = q.shape[0]
        qd = self._zeros(n) if qd is None else _writable(qd)
        arg = self._zeros(n) if arg is None else _writable(arg)
        ext = self.external_jets(q) if self.externals else self._no_ext
        threads = thread_count()
        try:
            if threads > 1 and n >= PARALLEL_MIN_STATES:
                *out, done = K.batch_parallel(self.ints, self.flts, ext, q, qd, arg, mode, min(n, 4 * threads),
                                                   self.chains)
                if done.all():
                    return tuple(out)
                # a chunk stopped on an error (errors do not leave numba's parallel region): raise it serially
            return K.batch(self.ints, self.flts, ext, q, qd, arg, mode, self.chains)
        except ValueError as exc:
            self._explain(q, exc)

    def _zeros(self, n: int) -> np.ndarray:
        return np.zeros((n, self.n_q))

    def joint_variables(self, q: Any, qdot: Any):
        """f_i, ∇f_i (N, n, nq) and H_i q̇ (N, n, nq) of the n = n_frames - 1 compiled frames' joint variables
        (in the order of ``frame_names[1:]``), from the program: for checking it against the functions."""
        q = _writable(np.atleast_2d(q))
        qd = _writable(np.broadcast_to(np.asarray(qdot, dtype=float), q.shape))
        ext = self.external_jets(q) if self.externals else self._no_ext
        try:
            val, grad, hq = K.program(self.ints, self.flts, ext, q, qd, self.chains)
        except ValueError as exc:
            self._explain(q, exc)
        k = self._frame_nodes
        return val[:, k], grad[:, k], hq[:, k]

    def terms(self, q: np.ndarray, qdot: np.ndarray | None = None):
        """M (N, nq, nq), N q̇ (N, nq) (None without qdot) and G (N, nq) at N states (arrays of shape (N, nq))."""
        m, _, nqd, g, _ = self._batch(q, qdot, None, K.MODE_TERMS if qdot is not None else K.MODE_STATIC)
        return m, (nqd if qdot is not None else None), g

    def terms_with_velocity_matrix(self, q: np.ndarray, qdot: np.ndarray):
        """M, the seed's velocity matrix N (Eq 126; N(q, q̇) q̇ = N q̇), N q̇ and G at N states."""
        m, nmat, nqd, g, _ = self._batch(q, qdot, None, K.MODE_MATRIX_N)
        return m, nmat, nqd, g

    def forward(self, q: np.ndarray, qdot: np.ndarray, tau: np.ndarray) -> np.ndarray:
        """q̈ = M⁻¹(G + τ − N q̇) at N states (Eq 198 with R F = τ)."""
        return self._batch(q, qdot, tau, K.MODE_FORWARD)[4]

    def inverse(self, q: np.ndarray, qdot: np.ndarray, qddot: np.ndarray) -> np.ndarray:
        """τ = M q̈ + N q̇ − G at N states."""
        return self._batch(q, qdot, qddot, K.MODE_INVERSE)[4]


def _writable(a: Any) -> np.ndarray:
    """A C-contiguous, writable float64 array (the one type the kernels are compiled for)."""
    a = np.asarray(a, dtype=float)
    if not (a.flags.c_contiguous and a.flags.writeable):
        a = np.array(a, dtype=float, order="C")
    return a


def _forces(tau: Any, nq: int) -> np.ndarray:
    """Generalized forces as a writable (nq,) float array: a scalar, (nq,) or (1, nq)."""
    tau = np.asarray(tau, dtype=float)
    if tau.shape != (nq,) or not (tau.flags.c_contiguous and tau.flags.writeable):
        tau = np.array(np.broadcast_to(tau.reshape(nq) if tau.size == nq else tau, (nq,)), dtype=float)
    return tau


def _state_vector(y: Any, nq: int) -> np.ndarray:
    y = _writable(y)
    if y.shape != (2 * nq,):
        raise ValueError(f"the state y = (q, qdot) must have shape ({2 * nq},), got {y.shape}")
    return y


def compiled_model(model: Model) -> CompiledModel:
    """The model compiled for fast single-state dynamics, built once and cached on the (immutable) model."""
    cached = model.__dict__.get("_compiled_model")
    if cached is None:
        cached = CompiledModel(model)
        object.__setattr__(model, "_compiled_model", cached)
    return cached


def warm_up(model: Model | None = None) -> None:
    """Compile (or load from numba's disk cache) the kernels by running them once on ``model``."""
    if model is None:
        from osim_emb.core.synthetic import serial_chain_model
        model = serial_chain_model(2)
    c = compiled_model(model)
    y = np.zeros(2 * c.n_q)
    c.rhs(y)
    q = np.zeros((1, c.n_q))
    c.terms(q, q)
    c.terms(q)
    c.terms_with_velocity_matrix(q, q)
    c.forward(q, q, q)
    if thread_count() > 1:
        qs = np.zeros((PARALLEL_MIN_STATES, c.n_q))
        c.terms(qs, qs)


def element_table(rows) -> np.ndarray:
    """Force-element rows (lists of at most ELEMENT_FLOATS numbers) as the kernels' table, zero-padded."""
    table = np.zeros((len(rows), K.ELEMENT_FLOATS))
    for i, row in enumerate(rows):
        table[i, :len(row)] = row
    return table
