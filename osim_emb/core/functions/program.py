"""The joint-variable program: joint functions flattened into nodes (the one place their composition rules live).

:class:`ProgramBuilder` turns functions into the nodes that ``compiled_kernels.eval_program`` runs (value,
gradient and Hessian applied to directions, node by node): Linear forms (OP_LINQ, OP_LINCOMB), Constant
(OP_CONST, folded), Multiplier (OP_SCALE), Composite (the chain rule: the inner nodes feed the outer one),
Clamped (OP_UNI with UNI_CLIP before the function), the one-input types (OP_UNI), MultivariatePolynomial
(OP_MPOLY), closed chains with trigonometric constraints (OP_CHAIN) and a model's point, distance, point-on-line and
weld constraint loops (OP_FRAMECHAIN: the constraints from the spanning tree's kinematics, its own program packed
inside the node).  It is used by

* :class:`osim_emb.core.compiled.JointProgram` and :class:`~osim_emb.core.compiled.CompiledModel` (every joint
  of a model: the kinematics, the paths, the dynamics), and by
* :class:`FunctionProgram`: the program of *one* function, which is how ``Constant``, ``Linear``,
  ``Multiplier``, ``Composite`` and ``Clamped`` evaluate (:func:`function_program`, cached on the object), so
  that scaling, the chain rule and clipping exist once, in the kernel.

A function the program cannot flatten (SplineSurface, a user-defined type, a subclass of a known type that may
evaluate differently) is an *external* node evaluated by its own ``evaluate`` in Python before the kernel runs:
of the generalized coordinates (OP_EXT, in the model programs) or, in a :class:`FunctionProgram`, of other
nodes (OP_EXTIN: its jet in its own inputs, combined by the kernel's chain rule).

Types are recognised by their registered ``type_name`` and module (no import of the function classes, which
import this module to evaluate).
"""

from __future__ import annotations

import contextlib
import contextvars
from typing import Any

import numpy as np

from osim_emb.core import compiled_kernels as K
from osim_emb.core.functions.base import Jet, JointFunction

__all__ = ["ProgramBuilder", "Unflattenable", "frame_chains_in_python", "pack_nodes", "external_jets", "FunctionProgram",
           "function_program", "flattenable_type", "dependent_jet", "COORDINATES"]

COORDINATES = "q"  # the inputs of a top-level function: the generalized coordinates (program inputs) themselves

_UNIVARIATE = ("SimmSpline", "PiecewiseLinear", "PiecewiseConstant", "Polynomial", "Fourier", "GCVSpline",
               "NaturalCubicSpline")
_FLAT_TYPES = {
    "osim_emb.core.functions.basic": ("Constant", "Linear", "Multiplier", "Composite", "Polynomial", "Fourier"),
    "osim_emb.core.functions.multivariate": ("Clamped", "MultivariatePolynomial"),
    "osim_emb.core.functions.splines": ("SimmSpline", "PiecewiseLinear", "PiecewiseConstant", "GCVSpline",
                                        "NaturalCubicSpline"),
    "osim_emb.core.closed_chains": ("ClosedChainVariable",),
}
#: the types whose ``evaluate`` runs a FunctionProgram (never folded by calling their own ``evaluate``)
PROGRAM_EVALUATED = ("Constant", "Linear", "Multiplier", "Composite", "Clamped")


class Unflattenable(Exception):
    pass


#: inside :func:`frame_chains_in_python`: point-constraint loops are not compiled (the reference route)
_FRAME_CHAINS_IN_PYTHON: contextvars.ContextVar = contextvars.ContextVar("osim_emb_frame_chains_in_python",
                                                                         default=False)


@contextlib.contextmanager
def frame_chains_in_python():
    """Within the block, programs built (and cached on their models) leave a model's point, distance, point-on-line
    and weld constraint loops to Python (an external function: ``ClosedChain.evaluate`` on the numpy constraint jets
    of core.point_constraints), the route the compiled OP_FRAMECHAIN node is tested against.  Models loaded inside
    the block keep their programs."""
    token = _FRAME_CHAINS_IN_PYTHON.set(True)
    try:
        yield
    finally:
        _FRAME_CHAINS_IN_PYTHON.reset(token)


def flattenable_type(f: JointFunction) -> str | None:
    """The type name of ``f`` if the program knows its exact type (not a subclass that may evaluate differently)."""
    t = type(f)
    name = t.__dict__.get("type_name")
    if name and name in _FLAT_TYPES.get(t.__module__, ()):
        return name
    return None


class ProgramBuilder:
    """Collects program nodes (deduplicated by their operation, inputs and parameters).

    ``inner_externals``: a function the program cannot flatten becomes an OP_EXTIN node of its input nodes
    (a :class:`FunctionProgram`); otherwise only a whole top-level function becomes an external (OP_EXT).
    """

    def __init__(self, nq: int, inner_externals: bool = False):
        self.nq = nq
        self.nodes: list[tuple[int, tuple[int, ...], tuple[int, ...], tuple[float, ...]]] = []
        self.index: dict[Any, int] = {}
        self.const: dict[int, float] = {}
        self.memo: dict[tuple[int, Any], int] = {}
        self.externals: list[JointFunction] = []
        self.external_inputs: list[tuple[int, ...] | None] = []  # None: the coordinates (OP_EXT)
        self.kinds: dict[str, int] = {}
        self.chains: dict[int, int] = {}  # id(ClosedChain) -> its OP_CHAIN node
        self.chain_objects: list = []
        self.inner_externals = inner_externals

    def node(self, op: int, inputs=(), ints=(), floats=()) -> int:
        key = (op, tuple(int(i) for i in inputs), tuple(int(i) for i in ints),
               tuple(float(x) for x in floats))
        hit = self.index.get(key)
        if hit is not None:
            return hit
        self.nodes.append(key)
        n = len(self.nodes) - 1
        self.index[key] = n
        if op == K.OP_CONST:
            self.const[n] = key[3][0]
        return n

    def constant(self, value: float) -> int:
        return self.node(K.OP_CONST, floats=(float(value),))

    def coordinate(self, k: int) -> int:
        return self.node(K.OP_COORD, ints=(k,))

    def inputs_as_nodes(self, inputs) -> tuple[int, ...]:
        return tuple(self.coordinate(k) for k in range(self.nq)) if inputs == COORDINATES else tuple(inputs)

    # -- functions -> nodes ---------------------------------------------------------------
    def compile(self, f: JointFunction, inputs) -> int:
        key = (id(f), inputs)
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        try:
            n = self._compile(f, inputs)
        except Unflattenable:
            if inputs != COORDINATES and not self.inner_externals:
                raise
            n = self._external(f, inputs)
        self.memo[key] = n
        return n

    def _external(self, f: JointFunction, inputs) -> int:
        self.externals.append(f)
        self.kinds["external"] = self.kinds.get("external", 0) + 1
        slot = len(self.externals) - 1
        if inputs == COORDINATES:
            self.external_inputs.append(None)
            return self.node(K.OP_EXT, ints=(slot,))
        self.external_inputs.append(tuple(inputs))
        return self.node(K.OP_EXTIN, inputs=inputs, ints=(slot,))

    def _count(self, name: str) -> None:
        self.kinds[name] = self.kinds.get(name, 0) + 1

    def _chain(self, chain) -> int:
        """The OP_CHAIN node of a closed chain and its m - 1 OP_CHAINPART nodes (consecutive)."""
        hit = self.chains.get(id(chain))
        if hit is not None:
            return hit
        cons = chain.constraints
        if cons.trigonometric is None and cons.frames is not None:
            return self._frame_chain(chain)
        if chain.method != "projection" or cons.trigonometric is None or cons.n_q != self.nq:
            raise Unflattenable("ClosedChain")
        rows, coef, is_sin, w, lin, const = cons.trigonometric
        m, nq = cons.n_f, cons.n_q
        guess = chain.guess
        if hasattr(guess, "functions"):
            ins = tuple(self.compile(g, COORDINATES) for g in guess.functions)
        elif callable(guess):
            raise Unflattenable("ClosedChain guess")
        else:
            ins = tuple(self.constant(v) for v in np.broadcast_to(np.asarray(guess, dtype=float).ravel(), (m,)))
        if any(self.nodes[i][0] in (K.OP_EXT, K.OP_EXTIN) for i in ins):
            raise Unflattenable("ClosedChain guess")
        rng = cons.coordinate_range
        check = bool(chain.check_range and np.any(np.isfinite(rng)))
        n_nodes = len(self.nodes)
        base = self.node(K.OP_CHAIN, inputs=ins,
                         ints=(m, nq, len(coef), chain.max_iter, int(check), *rows.tolist(),
                               *is_sin.astype(int).tolist()),
                         floats=(chain.tol, cons.length_scale, 1e-9 * cons.length_scale,
                                 np.inf if chain.max_condition is None else chain.max_condition,
                                 *coef.tolist(), *w.ravel().tolist(), *lin.ravel().tolist(), *const.tolist(),
                                 *rng[:, 0].tolist(), *rng[:, 1].tolist()))
        return self._register_chain(chain, base, n_nodes, m)

    def _register_chain(self, chain, base: int, n_nodes: int, m: int) -> int:
        """A chain's node just added at ``base`` (OP_CHAIN or OP_FRAMECHAIN): its m - 1 OP_CHAINPART nodes, or the
        identical node compiled before under another identity, reused."""
        if base != n_nodes:  # an identical chain compiled before under another identity: reuse it
            self.chains[id(chain)] = base
            return base
        for i in range(1, m):
            part = self.node(K.OP_CHAINPART, ints=(base, i))
            assert part == base + i
        self._count("ClosedChain")
        self.chains[id(chain)] = base
        self.chain_objects.append(chain)
        return base

    def _frame_chain(self, chain) -> int:
        """The OP_FRAMECHAIN node of a model's point-constraint loops (core.point_constraints) and its m - 1
        OP_CHAINPART nodes: the constraints from the tree's kinematics, the guess by the continuation walk of
        ``closed_chains.continuation_guess`` from its reference configuration.  Unflattenable (the loop stays a
        Python-evaluated external) for the implicit method, a guess other than the continuation, a tree with
        Python-evaluated functions, a range check, or inside :func:`frame_chains_in_python`."""
        cons = chain.constraints
        frames = cons.frames
        walk = getattr(chain.guess, "continuation", None)
        m, nq = cons.n_f, cons.n_q
        if (_FRAME_CHAINS_IN_PYTHON.get() or chain.method != "projection" or walk is None or not frames.compilable
                or nq != self.nq or (chain.check_range and np.any(np.isfinite(cons.coordinate_range)))):
            raise Unflattenable("ClosedChain")
        q_ref, f_ref, max_step, walk_tol, walk_iter = walk
        ints, floats = frames.layout(
            (m, nq, chain.max_iter, walk_iter),
            (chain.tol, cons.length_scale, 1e-9 * cons.length_scale,
             np.inf if chain.max_condition is None else chain.max_condition, max_step, walk_tol,
             *np.asarray(q_ref, dtype=float).tolist(), *np.asarray(f_ref, dtype=float).tolist()))
        n_nodes = len(self.nodes)
        base = self.node(K.OP_FRAMECHAIN, ints=ints, floats=floats)
        return self._register_chain(chain, base, n_nodes, m)

    def _compile(self, f: JointFunction, inputs) -> int:
        name = flattenable_type(f)
        if name is None:
            raise Unflattenable(type(f).__name__)
        if name == "ClosedChainVariable":
            if inputs != COORDINATES:
                raise Unflattenable("ClosedChain")
            return self._chain(f.chain) + f.index
        if inputs != COORDINATES and all(i in self.const for i in inputs):
            # every input is constant: so is f (its gradient is zero through the chain rule)
            x = np.array([[self.const[i] for i in inputs]])
            return self.constant(float(f.evaluate(x, order=0).value[0]))
        if f.is_constant and name not in PROGRAM_EVALUATED:
            return self.constant(float(f.evaluate(np.zeros((1, f.n_inputs)), order=0).value[0]))
        if name == "Constant":
            return self.constant(f.value)
        if name == "Linear":
            self._count("Linear")
            a = f.coefficients
            nz = np.flatnonzero(a)
            if inputs == COORDINATES:
                if nz.size == 0:
                    return self.constant(f.intercept)
                return self.node(K.OP_LINQ, ints=(nz.size, *nz.tolist()), floats=(*a[nz].tolist(), f.intercept))
            ins = [inputs[j] for j in nz]
            if not ins:
                return self.constant(f.intercept)
            return self.node(K.OP_LINCOMB, inputs=ins, floats=(*a[nz].tolist(), f.intercept))
        if name == "Multiplier":
            self._count("Multiplier")
            inner = self.compile(f.function, inputs)
            if inner in self.const:
                return self.constant(f.scale * self.const[inner])
            return self.node(K.OP_SCALE, inputs=(inner,), floats=(f.scale,))
        if name == "Composite":
            self._count("Composite")
            inner = tuple(self.compile(g, inputs) for g in f.inners)
            return self.compile(f.outer, inner)
        if name == "Clamped":
            self._count("Clamped")
            if f.lower == f.upper:
                return self.compile(f.function, (self.constant(f.lower),))
            (u,) = self.inputs_as_nodes(inputs)
            clip = self.node(K.OP_UNI, inputs=(u,), ints=(K.UNI_CLIP,), floats=(f.lower, f.upper))
            return self.compile(f.function, (clip,))
        if name == "MultivariatePolynomial":
            self._count("MultivariatePolynomial")
            ins = self.inputs_as_nodes(inputs)
            ints, floats = f.node_parameters()
            return self.node(K.OP_MPOLY, inputs=ins, ints=ints, floats=floats)
        # the one-input types
        self._count(name)
        (u,) = self.inputs_as_nodes(inputs)
        ints, floats = f.node_parameters()
        return self.node(K.OP_UNI, inputs=(u,), ints=ints, floats=floats)


def node_program_arrays(builder: "ProgramBuilder", n_inputs: int) -> tuple[np.ndarray, np.ndarray]:
    """The read-only ``ints``, ``flts`` of a program made of the builder's nodes alone (header, parameters, node
    table): what ``compiled_kernels.eval_program`` runs for a model's joint variables or for one function."""
    ints: list[int] = [0] * K.HEADER_SIZE
    flts: list[float] = []
    off_nodes = pack_nodes(builder.nodes, ints, flts)
    ints[K.H_NQ] = n_inputs
    ints[K.H_NNODES] = len(builder.nodes)
    ints[K.H_OFF_NODES] = off_nodes
    ints[K.H_NEXT] = len(builder.externals)
    out = np.array(ints, dtype=np.int64), np.array(flts, dtype=np.float64)
    for a in out:
        a.setflags(write=False)
    return out


def pack_nodes(nodes, ints: list[int], flts: list[float]) -> int:
    """Append the program's node parameters and then its node table to ``ints`` and ``flts``; the table's offset.
    Equal input lists and equal int parameters are stored once (read-only): two polynomial nodes of the same
    inputs and monomials then have the same offsets, which is how ``eval_program`` shares their monomials."""
    node_rows = []
    blocks: dict[tuple[int, ...], int] = {}

    def block(values):
        start = blocks.get(values)
        if start is None:
            start = blocks[values] = len(ints)
            ints.extend(values)
        return start

    for op, ins, ipar, fpar in nodes:
        in_start = block(tuple(ins))
        ip = block(tuple(ipar))
        fp = len(flts)
        flts.extend(fpar)
        node_rows.append((op, in_start, len(ins), ip, fp))
    off_nodes = len(ints)
    for row in node_rows:
        ints.extend(row)
    return off_nodes


def external_jets(functions, q: np.ndarray, n_q: int, order: int = 2) -> np.ndarray:
    """(N, n_external, 1 + n_q + n_q^2): value, gradient and (order 2; zeros otherwise) Hessian of the external
    functions of the coordinates, from their own ``evaluate``."""
    out = np.zeros((q.shape[0], len(functions), 1 + n_q + n_q * n_q))
    cache: dict = {}
    for s, f in enumerate(functions):
        jet = f.evaluate(q, max(order, 1), cache)
        out[:, s, 0] = jet.value
        out[:, s, 1:1 + n_q] = jet.gradient
        if order >= 2:
            out[:, s, 1 + n_q:] = jet.hessian.reshape(q.shape[0], n_q * n_q)
    return out


class FunctionProgram:
    """The program of one function of ``n_inputs`` inputs: :meth:`evaluate` gives its :class:`Jet` by
    ``compiled_kernels.joint_variable_batch`` (full Hessians).  External functions are evaluated first, in the
    program's order (an external of other nodes gets their values from a kernel pass of order 0)."""

    def __init__(self, function: JointFunction):
        n = function.n_inputs
        b = ProgramBuilder(n, inner_externals=True)
        top = b.compile(function, COORDINATES)
        self.ints, self.flts = node_program_arrays(b, n)
        self.n_inputs = n
        self.externals = tuple(b.externals)
        self.external_inputs = tuple(None if ins is None else np.array(ins, dtype=np.int64)
                                     for ins in b.external_inputs)
        widths = [n if ins is None else len(ins) for ins in b.external_inputs]
        self._width = max([1 + d + d * d for d in widths], default=1)
        self.chains = tuple(b.chain_objects)
        self._chain_support = K.has_chains(self.ints)  # None: the kernels compiled without closed-chain support
        self.top = np.array([top], dtype=np.int64)
        self.n_nodes = len(b.nodes)

    def _run(self, ext, x, nodes, order):
        n, k = x.shape[0], nodes.size
        val = np.empty((n, k))
        grad = np.empty((n if order >= 1 else 0, k, self.n_inputs))
        hess = np.empty((n if order >= 2 else 0, k, self.n_inputs, self.n_inputs))
        try:
            K.joint_variable_batch(readonly(self.ints), readonly(self.flts), ext, x, nodes, order, val, grad, hess,
                                   self._chain_support)
        except ValueError:
            for chain in self.chains:  # a closed chain failed: its own evaluation raises the detailed error
                chain.evaluate(x, 2)
            raise
        return val, grad, hess

    def evaluate(self, x: np.ndarray, order: int = 2, cache: dict | None = None) -> Jet:
        """The Jet of the function at x (N, n_inputs); the derivatives ``order`` does not ask for are None."""
        x = np.asarray(x, dtype=float)
        if not (x.flags.c_contiguous and x.flags.writeable):
            x = np.array(x, dtype=float, order="C")
        n = x.shape[0]
        ext = np.zeros((n if self.externals else 1, len(self.externals), self._width))
        for s, (f, ins) in enumerate(zip(self.externals, self.external_inputs)):
            if ins is None:
                d, u, c = self.n_inputs, x, cache
            else:
                d, u, c = ins.size, np.ascontiguousarray(self._run(ext, x, ins, 0)[0]), None
            jet = f.evaluate(u, order, c)
            ext[:, s, 0] = jet.value
            if order >= 1:
                ext[:, s, 1:1 + d] = jet.gradient
            if order >= 2:
                ext[:, s, 1 + d:1 + d + d * d] = jet.hessian.reshape(n, d * d)
        val, grad, hess = self._run(ext, x, self.top, order)
        return Jet(val[:, 0], grad[:, 0] if order >= 1 else None, hess[:, 0] if order >= 2 else None)


def readonly(a: np.ndarray) -> np.ndarray:
    """``a`` itself if read-only, else a read-only view: the program's arrays reach the kernels read-only, so that
    each kernel is compiled for one signature (a deep copy or an unpickled program has writable copies, which
    would compile every kernel a second time)."""
    if not a.flags.writeable:
        return a
    v = a.view()
    v.setflags(write=False)
    return v


def function_program(f: JointFunction) -> FunctionProgram:
    """The :class:`FunctionProgram` of ``f``, built once and cached on the (immutable) function object."""
    prog = f.__dict__.get("_function_program")
    if prog is None:
        prog = FunctionProgram(f)
        f.__dict__["_function_program"] = prog
    return prog


def dependent_jet(f: JointFunction, q: np.ndarray, order: int = 1) -> Jet:
    """The jet of a dependent coordinate's function ``f`` at q (N, n_q): a closed chain's variable by its compiled
    program (:func:`function_program`: an OP_CHAIN or OP_FRAMECHAIN node; a chain the program cannot flatten is
    evaluated by its own ``evaluate`` inside it), anything else by its own ``evaluate``."""
    if flattenable_type(f) == "ClosedChainVariable" and not _FRAME_CHAINS_IN_PYTHON.get():
        return function_program(f).evaluate(q, order)
    return f.evaluate(q, order=order)
