"""The frame recursion, compiled (numba): transforms ^0_iA_4, joint twists S_i, spatial Jacobians Ξ_i[k] and
their derivatives dΞ_i[k]/dq_l (seed section 3-2, Eqs 39, 41, 75, 89, 99; see :mod:`osim_emb.core.kinematics`).

One recursion, written once, callable

* from other njit kernels for one configuration: :func:`frame_kinematics` (order 0 and 1) and
  :func:`frame_jacobian_derivatives` (order 2), on the arrays of :func:`frame_tree`;
* from Python for a batch: :func:`batch_frame_kinematics` (parallel over configurations from
  :data:`PARALLEL_MIN_CONFIGURATIONS` on), which :func:`osim_emb.core.kinematics.forward_kinematics` calls.

The joint variables f_i(q), their gradients and Hessians come in as arrays
(:func:`osim_emb.core.kinematics.joint_variables`).  Every sum is accumulated in the order numpy's matrix
products use (OpenBLAS on x86-64 accumulates with fused multiply-adds: :func:`_fma`), so that the
numbers are bitwise those of the batched numpy recursion this kernel replaced, and the kinematic inputs
of the wrapping algorithms, which amplify a difference of 1e-16 m in a path point to ~1e-12 m in a length,
do not move.

Arrays of one configuration: ``val`` (n_frames,), ``grad`` (n_frames, n_q), ``hess`` (n_frames, n_q, n_q)
(index 0, the ground, ignored); ``rot`` (n_frames, 3, 3), ``pos`` (n_frames, 3), ``twist`` (n_frames, 6) =
S_i = (ω, v) in ground, ``jac`` (n_frames, n_q, 6), ``djac`` (n_frames, n_q, n_q, 6) with
[i, k, l] = dΞ_i[k]/dq_l.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from osim_emb.core._accel import HAVE_NUMBA, njit, prange, thread_count
from osim_emb.core.calculus import skew

if TYPE_CHECKING:  # annotations only: osim_emb.model imports the functions, whose programs import these kernels
    from osim_emb.model import Model

__all__ = ["FrameTree", "frame_tree", "frame_kinematics", "frame_jacobian_derivatives", "batch_frame_kinematics",
           "PARALLEL_MIN_CONFIGURATIONS"]

_KW = dict(cache=True, error_model="numpy")
_KW0 = dict(_KW, _nrt=False)  # allocation-free kernels (callable from other allocation-free kernels)

#: from this many configurations on, :func:`batch_frame_kinematics` runs in parallel over numba's threads (a
#: configuration takes ~1-2 µs: below, the threads cost more than they save; see docs/kinematics.md)
PARALLEL_MIN_CONFIGURATIONS = 4096

def _jit_enabled() -> bool:
    if not HAVE_NUMBA:
        return False
    from numba.core import config
    return not config.DISABLE_JIT


if _jit_enabled():
    from llvmlite import ir
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic
    def _fma(typingctx, a, b, c):
        """Fused multiply-add a * b + c, rounded once (LLVM's llvm.fma)."""
        sig = types.float64(types.float64, types.float64, types.float64)

        def codegen(context, builder, signature, args):
            d = ir.DoubleType()
            fnty = ir.FunctionType(d, [d, d, d])
            try:
                fn = builder.module.get_global("llvm.fma.f64")
            except KeyError:
                fn = ir.Function(builder.module, fnty, "llvm.fma.f64")
            a_, b_, c_ = (context.cast(builder, v, t, types.float64) for v, t in zip(args, signature.args))
            return builder.call(fn, [a_, b_, c_])

        return sig, codegen
else:  # plain Python (no numba, or NUMBA_DISABLE_JIT=1): a * b + c rounded once, as the fused operation
    from fractions import Fraction

    def _fma(a, b, c):
        return float(Fraction(a) * Fraction(b) + Fraction(c))


@njit(**_KW0)
def _mm3(a0, a1, a2, b0, b1, b2):
    """Matrix-matrix entry sum_k a_k b_k as numpy's (N,3,3) @ (3,3): fma chain k = 0, 1, 2."""
    return _fma(a2, b2, _fma(a1, b1, a0 * b0))


@njit(**_KW0)
def _mv3(a0, a1, a2, b0, b1, b2):
    """Matrix-vector entry as numpy's (N,3,3) @ (3,): fma(a2 b2, fma(a0 b0, a1 b1))."""
    return _fma(a2, b2, _fma(a0, b0, a1 * b1))


class FrameTree:
    """The arrays the recursion reads, per frame (index 0 the ground): ``parent`` (int64), ``revolute`` (bool),
    ``offsets`` (4x4 C_i), ``axes`` (a_i in the offset frame), ``skew_axes`` (ã_i), ``skew_axes2`` (ã_i²)."""

    __slots__ = ("parent", "revolute", "offsets", "axes", "skew_axes", "skew_axes2")

    def __init__(self, model: Model):
        nf = model.n_frames
        self.parent = np.zeros(nf, dtype=np.int64)
        self.revolute = np.zeros(nf, dtype=np.bool_)
        self.offsets = np.zeros((nf, 4, 4))
        self.axes = np.zeros((nf, 3))
        self.skew_axes = np.zeros((nf, 3, 3))
        self.skew_axes2 = np.zeros((nf, 3, 3))
        for i, j in enumerate(model.joints, start=1):
            self.parent[i] = j.parent
            self.revolute[i] = j.is_revolute
            self.offsets[i] = j.offset
            self.axes[i] = j.axis
            self.skew_axes[i] = skew(j.axis)
            self.skew_axes2[i] = self.skew_axes[i] @ self.skew_axes[i]
        for a in (self.parent, self.revolute, self.offsets, self.axes, self.skew_axes, self.skew_axes2):
            a.setflags(write=False)

    def arrays(self) -> tuple:
        """(parent, revolute, offsets, axes, skew_axes, skew_axes2): the tree arguments of the kernels."""
        return self.parent, self.revolute, self.offsets, self.axes, self.skew_axes, self.skew_axes2


def frame_tree(model: Model) -> FrameTree:
    """The model's :class:`FrameTree`, built once and cached on the (immutable) model."""
    cached = model.__dict__.get("_frame_tree")
    if cached is None:
        cached = FrameTree(model)
        object.__setattr__(model, "_frame_tree", cached)
    return cached


@njit(**_KW0)
def frame_kinematics(val, grad, parent, revolute, offs, axes, vt, vt2, rot, pos, twist, jac):
    """Rotations, origins, joint twists and spatial Jacobians (Ξ_i[k] = Ξ_pr(i)[k] + S_i (∇f_i)_k, Eq 75) of one
    configuration.  Order 0 only: pass ``grad`` and ``jac`` with n_q = 0 columns."""
    nf = rot.shape[0]
    nq = jac.shape[1]
    for a in range(3):
        for b in range(3):
            rot[0, a, b] = 1.0 if a == b else 0.0
        pos[0, a] = 0.0
    for c in range(6):
        twist[0, c] = 0.0
    for k in range(nq):
        for c in range(6):
            jac[0, k, c] = 0.0
    for i in range(1, nf):
        p = parent[i]
        f = val[i]
        # r_c = R_p C, o_c = o_p + R_p c
        rc = ((_mm3(rot[p, 0, 0], rot[p, 0, 1], rot[p, 0, 2], offs[i, 0, 0], offs[i, 1, 0], offs[i, 2, 0]),
               _mm3(rot[p, 0, 0], rot[p, 0, 1], rot[p, 0, 2], offs[i, 0, 1], offs[i, 1, 1], offs[i, 2, 1]),
               _mm3(rot[p, 0, 0], rot[p, 0, 1], rot[p, 0, 2], offs[i, 0, 2], offs[i, 1, 2], offs[i, 2, 2])),
              (_mm3(rot[p, 1, 0], rot[p, 1, 1], rot[p, 1, 2], offs[i, 0, 0], offs[i, 1, 0], offs[i, 2, 0]),
               _mm3(rot[p, 1, 0], rot[p, 1, 1], rot[p, 1, 2], offs[i, 0, 1], offs[i, 1, 1], offs[i, 2, 1]),
               _mm3(rot[p, 1, 0], rot[p, 1, 1], rot[p, 1, 2], offs[i, 0, 2], offs[i, 1, 2], offs[i, 2, 2])),
              (_mm3(rot[p, 2, 0], rot[p, 2, 1], rot[p, 2, 2], offs[i, 0, 0], offs[i, 1, 0], offs[i, 2, 0]),
               _mm3(rot[p, 2, 0], rot[p, 2, 1], rot[p, 2, 2], offs[i, 0, 1], offs[i, 1, 1], offs[i, 2, 1]),
               _mm3(rot[p, 2, 0], rot[p, 2, 1], rot[p, 2, 2], offs[i, 0, 2], offs[i, 1, 2], offs[i, 2, 2])))
        oc0 = pos[p, 0] + _mv3(rot[p, 0, 0], rot[p, 0, 1], rot[p, 0, 2], offs[i, 0, 3], offs[i, 1, 3], offs[i, 2, 3])
        oc1 = pos[p, 1] + _mv3(rot[p, 1, 0], rot[p, 1, 1], rot[p, 1, 2], offs[i, 0, 3], offs[i, 1, 3], offs[i, 2, 3])
        oc2 = pos[p, 2] + _mv3(rot[p, 2, 0], rot[p, 2, 1], rot[p, 2, 2], offs[i, 0, 3], offs[i, 1, 3], offs[i, 2, 3])
        ax0 = axes[i, 0]
        ax1 = axes[i, 1]
        ax2 = axes[i, 2]
        ag0 = _mv3(rc[0][0], rc[0][1], rc[0][2], ax0, ax1, ax2)
        ag1 = _mv3(rc[1][0], rc[1][1], rc[1][2], ax0, ax1, ax2)
        ag2 = _mv3(rc[2][0], rc[2][1], rc[2][2], ax0, ax1, ax2)
        if revolute[i]:
            # Eq 39: R_c exp(ã f) = R_c (I + ã sin f + ã² (1 - cos f))
            s = math.sin(f)
            h = 1.0 - math.cos(f)
            for b in range(3):
                e0 = (1.0 if b == 0 else 0.0) + vt[i, 0, b] * s + vt2[i, 0, b] * h
                e1 = (1.0 if b == 1 else 0.0) + vt[i, 1, b] * s + vt2[i, 1, b] * h
                e2 = (1.0 if b == 2 else 0.0) + vt[i, 2, b] * s + vt2[i, 2, b] * h
                for a in range(3):
                    rot[i, a, b] = _mm3(rc[a][0], rc[a][1], rc[a][2], e0, e1, e2)
            pos[i, 0] = oc0
            pos[i, 1] = oc1
            pos[i, 2] = oc2
            twist[i, 0] = ag0
            twist[i, 1] = ag1
            twist[i, 2] = ag2
            twist[i, 3] = oc1 * ag2 - oc2 * ag1
            twist[i, 4] = oc2 * ag0 - oc0 * ag2
            twist[i, 5] = oc0 * ag1 - oc1 * ag0
        else:
            for a in range(3):
                for b in range(3):
                    rot[i, a, b] = rc[a][b]
            pos[i, 0] = oc0 + ag0 * f
            pos[i, 1] = oc1 + ag1 * f
            pos[i, 2] = oc2 + ag2 * f
            twist[i, 0] = 0.0
            twist[i, 1] = 0.0
            twist[i, 2] = 0.0
            twist[i, 3] = ag0
            twist[i, 4] = ag1
            twist[i, 5] = ag2
        for k in range(nq):
            g = grad[i, k]
            for c in range(6):
                jac[i, k, c] = jac[p, k, c] + g * twist[i, c]


@njit(**_KW0)
def frame_jacobian_derivatives(grad, hess, parent, twist, jac, djac):
    """dΞ_i[k]/dq_l = dΞ_pr(i)[k]/dq_l + (∇f_i)_k [Ξ_pr(i)[l], S_i] + (H_i)_kl S_i (Eqs 89, 99; [,] the spatial cross
    product of twists) of one configuration, after :func:`frame_kinematics`."""
    nf = jac.shape[0]
    nq = jac.shape[1]
    for k in range(nq):
        for l in range(nq):
            for c in range(6):
                djac[0, k, l, c] = 0.0
    for i in range(1, nf):
        p = parent[i]
        s0 = twist[i, 0]
        s1 = twist[i, 1]
        s2 = twist[i, 2]
        s3 = twist[i, 3]
        s4 = twist[i, 4]
        s5 = twist[i, 5]
        for l in range(nq):
            w0 = jac[p, l, 0]
            w1 = jac[p, l, 1]
            w2 = jac[p, l, 2]
            v0 = jac[p, l, 3]
            v1 = jac[p, l, 4]
            v2 = jac[p, l, 5]
            ds = (w1 * s2 - w2 * s1, w2 * s0 - w0 * s2, w0 * s1 - w1 * s0,
                  (w1 * s5 - w2 * s4) + (v1 * s2 - v2 * s1), (w2 * s3 - w0 * s5) + (v2 * s0 - v0 * s2),
                  (w0 * s4 - w1 * s3) + (v0 * s1 - v1 * s0))
            for k in range(nq):
                g = grad[i, k]
                h = hess[i, k, l]
                for c in range(6):
                    djac[i, k, l, c] = (djac[p, k, l, c] + g * ds[c]) + h * twist[i, c]


@njit(**_KW0)
def _configuration(n, order, val, grad, hess, parent, revolute, offs, axes, vt, vt2, rot, pos, twist, jac, djac):
    frame_kinematics(val[n], grad[n], parent, revolute, offs, axes, vt, vt2, rot[n], pos[n], twist[n], jac[n])
    if order >= 2:
        frame_jacobian_derivatives(grad[n], hess[n], parent, twist[n], jac[n], djac[n])


@njit(**_KW0)
def _batch_serial(order, val, grad, hess, parent, revolute, offs, axes, vt, vt2, rot, pos, twist, jac, djac):
    for n in range(val.shape[0]):
        _configuration(n, order, val, grad, hess, parent, revolute, offs, axes, vt, vt2, rot, pos, twist, jac, djac)


@njit(parallel=True, **_KW0)
def _batch_parallel(order, val, grad, hess, parent, revolute, offs, axes, vt, vt2, rot, pos, twist, jac, djac):
    for n in prange(val.shape[0]):
        _configuration(n, order, val, grad, hess, parent, revolute, offs, axes, vt, vt2, rot, pos, twist, jac, djac)


def batch_frame_kinematics(tree: FrameTree, order: int, value: np.ndarray, gradient: np.ndarray | None = None,
                           hessian: np.ndarray | None = None):
    """The recursion for N configurations: rot (N, nf, 3, 3), pos (N, nf, 3), twist (N, nf, 6), jac (N, nf, nq, 6)
    (nq = 0 at order 0), djac (N, nf, nq, nq, 6) (empty below order 2), from the joint variables ``value`` (N, nf),
    ``gradient`` (N, nf, nq) (order >= 1) and ``hessian`` (N, nf, nq, nq) (order 2)."""
    value = np.ascontiguousarray(value, dtype=float)
    n, nf = value.shape
    nq = gradient.shape[2] if order >= 1 else 0
    grad = np.ascontiguousarray(gradient, dtype=float) if order >= 1 else np.zeros((n, nf, 0))
    hess = np.ascontiguousarray(hessian, dtype=float) if order >= 2 else np.zeros((n, 0, 0, 0))
    rot = np.empty((n, nf, 3, 3))
    pos = np.empty((n, nf, 3))
    twist = np.empty((n, nf, 6))
    jac = np.empty((n, nf, nq, 6))
    djac = np.empty((n, nf, nq, nq, 6) if order >= 2 else (n, 0, 0, 0, 6))
    kernel = _batch_parallel if n >= PARALLEL_MIN_CONFIGURATIONS and thread_count() > 1 else _batch_serial
    kernel(order, value, grad, hess, *tree.arrays(), rot, pos, twist, jac, djac)
    return rot, pos, twist, jac, djac
