"""Kernels of the compiled dynamics, one state at a time or over a batch (numba; plain Python without it).

They evaluate a model flattened by :mod:`osim_emb.core.compiled` into two arrays, ``ints`` (int64) and
``flts`` (float64), whose layout is described there.  Three passes per state:

1. the **joint-variable program**: nodes in topological order, each carrying its value f, its
   gradient (n_q) and its Hessian applied to p directions, H D (n_q, p): the dynamics take D = q̇
   (p = 1; the second part of Eq 126 contracts D'_i with q̇ ⊗ q̇ and needs only H_i q̇), the kinematics
   D = I, the full Hessian (:func:`joint_variable_batch`, behind ``core.kinematics.joint_variables``);
2. the **frames**: ^0_iA_4, the joint twist S_i, the Jacobian columns Ξ_i[k] = Ξ_pr(i)[k] + S_i (∇f_i)_k
   (the closed form of Eq 75) by the package's one frame recursion
   (:func:`osim_emb.core.kinematics_kernels.frame_kinematics`), then the twist V_i = Σ_k Ξ_i[k] q̇_k and the velocity-product
   acceleration a_i = Σ_l q̇_l dΞ_i[l]/dt = a_pr(i) + (∇f_i · q̇)(V_pr(i) × S_i) + (q̇ᵀ H_i q̇) S_i;
3. the **sums over the bodies** of Eqs 145, 126 and 187 written with the spatial inertia I_i of the
   pseudo-inertia J_i (Eq 131), tr(â J⁰_i b̂ᵀ) = a · I_i b for twists a, b (each frame's terms are
   evaluated about its own origin, with the twists shifted there; the pairings do not change):
   M[k, l] = Σ_i Ξ_i[k] · I_i Ξ_i[l]  (= Σ_i tr(∂A_i/∂q_k J_i ∂A_i/∂q_lᵀ), Eq 145),
   (N q̇)[k] = Σ_i Ξ_i[k] · (I_i a_i + V_i ×* I_i V_i)  (second part of Eq 126),
   G[k] = Σ_i Ξ_i[k] · (h_i × g, m_i g)  (Eq 187, h_i = m_i r_cm,i).

All kernels are written in the subset of Python that numba compiles, so that without numba they
still run (slowly) and give the same numbers.
"""

from __future__ import annotations

import math
import types

import numpy as np

from osim_emb.core._accel import njit, prange
from osim_emb.core.functions.kernels import (  # noqa: F401  (UNI_* are the program's OP_UNI kinds)
    END_KNOT_TOLERANCE,
    UNI_CLIP,
    UNI_FOURIER,
    UNI_NATURAL,
    UNI_POLYNOMIAL,
    UNI_PWCONSTANT,
    UNI_PWLINEAR,
    UNI_SIMM,
    _univariate,
    monomials,
    polynomial_jet,
    univariate_batch,
)
from osim_emb.core.closed_chain_kernels import (  # noqa: F401  (CHAIN_INTS, CHAIN_FLOATS: the OP_CHAIN layout)
    CHAIN_FLOATS,
    CHAIN_INTS,
    FRAME_FLOATS,
    FRAME_INTS,
    NEWTON_CONVERGED,
    STATUS_DIVERGED,
    STATUS_OK,
    STATUS_SINGULAR,
    chain_derivatives,
    frame_equations,
    frame_work,
    newton_step,
    solve_linear,
    trig_constraints,
)
from osim_emb.core.kinematics_kernels import frame_jacobian_derivatives, frame_kinematics

# -- opcodes of the joint-variable program (mirrored in osim_emb.core.compiled) ---------------------------
OP_CONST = 0      # f = c
OP_COORD = 1      # f = q[c]
OP_LINQ = 2       # f = sum_j a_j q[c_j] + b        (Linear on the generalized coordinates)
OP_LINCOMB = 3    # f = sum_j a_j u_j + b           (Linear outer function of a Composite)
OP_SCALE = 4      # f = s u                         (Multiplier)
OP_UNI = 5        # f = F(u) for a function of one input (splines, polynomial, Fourier, clamp)
OP_MPOLY = 6      # f = P(u_1, ..., u_d)            (MultivariatePolynomial)
OP_EXT = 7        # f, grad f, Hessian evaluated in Python (functions that are not flattened)
OP_CHAIN = 8      # the m joint variables of a closed chain (Newton + projection, Eqs 100-120) into nodes n..n+m-1
OP_CHAINPART = 9  # a node written by the OP_CHAIN node before it (nothing to do)
OP_EXTIN = 10     # f = F(u_1, ..., u_d), F's value, gradient and Hessian in u evaluated in Python (an external
                  # function of program nodes: functions.program.FunctionProgram), then the chain rule
OP_FRAMECHAIN = 11  # the m dependent coordinates of a model's point, distance, point-on-line and weld constraints
                    # (core.point_constraints): as OP_CHAIN, the constraints from the tree's kinematics, the guess by
                    # continuation from the reference configuration

# -- header of ``ints`` --------------------------------------------------------------------------------
H_NQ = 0
H_NNODES = 1
H_NFRAMES = 2
H_NMASS = 3
H_OFF_NODES = 4
H_OFF_FRAMES = 5
H_OFF_MASS = 6
H_NEXT = 7
H_OFF_TREE = 8          # ints: parent (n_frames), revolute (n_frames) of the compiled frames
H_OFF_TREE_FLOATS = 9   # flts: offsets (n_frames, 4, 4), axes (n_frames, 3), ã (n_frames, 3, 3), ã² (n_frames, 3, 3)
HEADER_SIZE = 10
NODE_STRIDE = 5     # op, first input, number of inputs, int parameters, float parameters
FRAME_STRIDE = 3    # parent, kind (0 revolute, 1 prismatic), node of f_i (the geometry: the tree arrays)
MASS_STRIDE = 2     # frame, float parameters
MASS_FLOATS = 13    # m, h = m c (3), inertia about the frame origin (9), all in frame coordinates
#: rows of the force-element table of :func:`rhs_into` (compiled frames; poses as rotation row-major, then origin):
#: a point-to-point spring (frame a, point a, frame b, point b, stiffness, rest length), a smooth sphere-half-space
#: contact, a Hunt-Crossley contact set (a header, then one row per surface), a bushing (frames, then gains)
ELEMENT_FLOATS = 28
EL_SPRING, EL_SMOOTH_CONTACT, EL_CONTACT_SET, EL_CONTACT_SURFACE, EL_BUSHING, EL_BUSHING_GAINS = 0, 1, 2, 3, 4, 5
EL_COORDINATE_LIMIT = 6  # a CoordinateLimitForce on generalized coordinate k: k, q_up, q_low, K_up, K_low, damping, transition
EL_COORDINATE_SPRING = 7  # a SpringGeneralizedForce on generalized coordinate k: k, stiffness, rest length, viscosity
#: a PrescribedForce: frame, the force frame's pose (12), force global?, point global?, has force?, has point?, has
#: torque?, rows in all; then its functions of time (force, point, torque: three each, those it has) as EL_CURVE rows
EL_PRESCRIBED = 8
EL_CURVE = 9  # a one-input function: int count, float count; the parameters packed in the rows after it
LOAD_INTS = 5       # compiled frames of the applied body, the force's frame, the point's (-1: none); force?, torque?

_KW = dict(cache=True, error_model="numpy")


@njit(**_KW)
def _frame_constraints(ints, flts, ip, fp, ext, z, order, g, gz, gzz, fw):
    """g(z), dg/dz (order >= 1) and d2g/dz2 (order 2) of an OP_FRAMECHAIN node's constraints at z = (f, q) (layout:
    closed_chain_kernels.FRAME_INTS, FRAME_FLOATS): the tree's joint variables by its own program (full Hessians),
    the frames by the package's one frame recursion (kinematics_kernels.frame_kinematics,
    frame_jacobian_derivatives), the pairs' equations by closed_chain_kernels.frame_equations; the equations
    solved and the columns of z picked out.  ``fw``: the work arrays of :func:`_frame_chain_work`."""
    m = ints[ip]
    nq = ints[ip + 1]
    nz = ints[ip + 4]
    nf = ints[ip + 5]
    npairs = ints[ip + 6]
    perm = ip + FRAME_INTS
    fnode = perm + nz
    par = fnode + nf
    rev = par + nf
    pairs = rev + nf
    rows = pairs + 3 * npairs
    zt, dirs, val, grad, hq, fval, fgrad, fhess, rot, pos, twist, jac, djac, eg, egz, egzz, work = fw
    for a in range(nz):
        zt[ints[perm + a]] = z[a]
    second = order >= 2
    _eval_tree_nodes(ints, flts, ip + ints[ip + 8], fp + ints[ip + 9], ext, zt, dirs, second, val, grad, hq, None)
    fval[0] = 0.0
    for k in range(nz):
        fgrad[0, k] = 0.0
    for i in range(1, nf):
        node = ints[fnode + i]
        fval[i] = val[node]
        for k in range(nz):
            fgrad[i, k] = grad[node, k]
            if second:
                for l in range(nz):
                    fhess[i, k, l] = hq[node, k, l]
    to = fp + FRAME_FLOATS + nq + m
    offs, axes, vt, vt2 = _tree_floats(flts, to, nf)
    to += TREE_FLOATS_PER_FRAME * nf
    parent = ints[par:par + nf]
    frame_kinematics(fval, fgrad, parent, ints[rev:rev + nf], offs, axes, vt, vt2, rot, pos, twist, jac)
    if second:
        frame_jacobian_derivatives(fgrad, fhess, parent, twist, jac, djac)
    frame_equations(ints, flts, pairs, to, npairs, order, rot, pos, jac, djac, eg, egz, egzz, work)
    for i in range(m):
        e = ints[rows + i]
        g[i] = eg[e]
        if order >= 1:
            for a in range(nz):
                gz[i, a] = egz[e, ints[perm + a]]
        if order >= 2:
            for a in range(nz):
                ta = ints[perm + a]
                for b in range(nz):
                    gzz[i, a, b] = egzz[e, ta, ints[perm + b]]


@njit(**_KW)
def _frame_chain_work(ints, ip):
    """The work arrays of :func:`_frame_constraints` (an OP_FRAMECHAIN node at ints[ip:])."""
    nz = ints[ip + 4]
    nf = ints[ip + 5]
    ne = ints[ip + 7]
    sub = ip + ints[ip + 8]
    nn = ints[sub + H_NNODES]
    dirs = np.zeros((nz, nz))
    for k in range(nz):
        dirs[k, k] = 1.0
    return (np.empty(nz), dirs, np.empty(nn), np.empty((nn, nz)), np.empty((nn, nz, nz)), np.empty(nf),
            np.empty((nf, nz)), np.zeros((nf, nz, nz)), np.empty((nf, 3, 3)), np.empty((nf, 3)), np.empty((nf, 6)),
            np.empty((nf, nz, 6)), np.empty((nf, nz, nz, 6)), np.empty(ne), np.empty((ne, nz)),
            np.empty((ne, nz, nz)), frame_work(nz))


@njit(**_KW)
def _chain_constraints(frames, ints, flts, ip, fp, ext, z, order, g, gz, gzz, fw):
    """The constraints of an OP_CHAIN (trigonometric) or OP_FRAMECHAIN (``frames``) node at z = (f, q)."""
    if frames:
        _frame_constraints(ints, flts, ip, fp, ext, z, order, g, gz, gzz, fw)
    else:
        trig_constraints(ints, flts, ip, fp, z, order, g, gz, gzz)


@njit(**_KW)
def _newton(frames, ints, flts, ip, fp, ext, z, m, tol, max_iter, floor, g, gz, gzz, a, b, step, fw):
    """Newton on the node's constraints from z[:m] (updated), the steps of ``closed_chains.solve_constraints``:
    True when it converged; a singular dg/df raises LinAlgError, a non-finite iterate returns False."""
    for _ in range(max_iter):
        _chain_constraints(frames, ints, flts, ip, fp, ext, z, 1, g, gz, gzz, fw)
        st = newton_step(gz, g, z, tol, floor, a, b, step)  # updates z[:m]
        if st == STATUS_SINGULAR:
            raise np.linalg.LinAlgError("closed chain: the constraint Jacobian dg/df is singular (Newton)")
        if st == STATUS_DIVERGED:
            return False
        if st == NEWTON_CONVERGED:
            return True
    return False


@njit(**_KW)
def _continuation(ints, flts, ip, fp, ext, q, z, g, gz, gzz, a, b, step, fw):
    """z[:m] = the guess of an OP_FRAMECHAIN node at q: ``closed_chains.continuation_guess`` (the straight segment
    from the reference configuration (q_ref, f_ref) to q in equal steps of at most the max step, a tangent
    predictor -g_f^-1 g_q and a Newton corrector; on failure 4 and 16 times as many steps).  ValueError when all
    fail."""
    m = ints[ip]
    nq = ints[ip + 1]
    wmax = ints[ip + 3]
    max_step = flts[fp + 4]
    wtol = flts[fp + 5]
    res_tol = flts[fp + 2]
    floor = 4.0 * 2.220446049250313e-16 * flts[fp + 1]
    qr = fp + FRAME_FLOATS
    fr = qr + nq
    dmax = 0.0
    for k in range(nq):
        dmax = max(dmax, abs(q[k] - flts[qr + k]))
    n_steps = max(1, int(math.ceil(dmax / max_step)))
    pred = np.empty(m)
    grad = np.empty((m, nq))
    col = np.empty(m)
    aa = np.empty((m, m))
    for attempt in range(3):
        steps = n_steps * (1, 4, 16)[attempt]
        ok = True
        for j in range(m):
            z[j] = flts[fr + j]
        for s in range(1, steps + 1):
            for k in range(nq):
                z[m + k] = flts[qr + k] + (s - 1) / steps * (q[k] - flts[qr + k])
            _chain_constraints(True, ints, flts, ip, fp, ext, z, 1, g, gz, gzz, fw)
            for c in range(nq):
                for i in range(m):
                    b[i] = gz[i, m + c]
                    for j in range(m):
                        aa[i, j] = gz[i, j]
                if not solve_linear(aa, b, col):
                    ok = False
                    break
                for i in range(m):
                    grad[i, c] = -col[i]
            if not ok:
                break
            for k in range(nq):
                qa = flts[qr + k] + (s - 1) / steps * (q[k] - flts[qr + k])
                z[m + k] = flts[qr + k] + s / steps * (q[k] - flts[qr + k])
                pred_k = z[m + k] - qa
                for i in range(m):
                    grad[i, k] *= pred_k
            for i in range(m):
                acc = 0.0
                for k in range(nq):
                    acc += grad[i, k]
                pred[i] = z[i] + acc
            for i in range(m):
                z[i] = pred[i]
            if not _newton(True, ints, flts, ip, fp, ext, z, m, wtol, wmax, floor, g, gz, gzz, a, b, step, fw):
                ok = False
                break
            _chain_constraints(True, ints, flts, ip, fp, ext, z, 0, g, gz, gzz, fw)
            res = 0.0
            for i in range(m):
                res = max(res, abs(g[i]))
            if not res <= res_tol:
                ok = False
                break
        if ok:
            return
    raise ValueError("closed chain: the continuation from the reference configuration failed")


@njit(**_KW)
def _closed_chain(ints, flts, ib, ip, fp, q, dirs, second, n, val, grad, hq, frames, ext):
    """The OP_CHAIN node (``frames`` False: trigonometric constraints, Newton from the guess nodes) or the
    OP_FRAMECHAIN node (``frames``: a model's point constraints from the tree's kinematics, Newton from the
    continuation guess): Newton, then grad f_i (Eq 102) and H_i D (Eq 120) by the projection method -- the
    closed-chain kernels of :mod:`osim_emb.core.closed_chain_kernels` (the ones ``closed_chains.ClosedChain`` runs);
    writes nodes n..n+m-1.  A failure raises ValueError("closed chain: ..."); the caller explains it through
    ``ClosedChain.evaluate`` (``compiled.raise_joint_function_error``)."""
    m = ints[ip]
    nq = ints[ip + 1]
    max_iter = ints[ip + 2] if frames else ints[ip + 3]
    nz = m + nq
    tol = flts[fp]
    scale = flts[fp + 1]
    res_tol = flts[fp + 2]
    max_cond = flts[fp + 3]
    if not frames and ints[ip + 4] == 1:
        nt = ints[ip + 2]
        rg = fp + CHAIN_FLOATS + nt + nt * nz + m * nz + m
        for k in range(nq):
            if not (q[k] >= flts[rg + k] - 1e-12 and q[k] <= flts[rg + nq + k] + 1e-12):
                raise ValueError("closed chain: a coordinate is outside its range")
    z = np.empty(nz)
    g = np.empty(m)
    gz = np.empty((m, nz))
    gzz = np.empty((m, nz, nz))
    a = np.empty((m, m))
    b = np.empty(m)
    step = np.empty(m)
    fw = _frame_chain_work(ints, ip) if frames else None
    for k in range(nq):
        z[m + k] = q[k]
    if frames:
        _continuation(ints, flts, ip, fp, ext, q, z, g, gz, gzz, a, b, step, fw)
        for k in range(nq):
            z[m + k] = q[k]
    else:
        for j in range(m):
            z[j] = val[ints[ib + j]]
    eps4 = 4.0 * 2.220446049250313e-16 * scale
    done = _newton(frames, ints, flts, ip, fp, ext, z, m, tol, max_iter, eps4, g, gz, gzz, a, b, step, fw)
    if not done:
        for i in range(m):
            if not math.isfinite(z[i]):
                raise ValueError("closed chain: Newton diverged (non-finite iterate)")
    _chain_constraints(frames, ints, flts, ip, fp, ext, z, 2, g, gz, gzz, fw)
    res = 0.0
    for i in range(m):
        res = max(res, abs(g[i]))
    if not done or not res <= res_tol:
        raise ValueError("closed chain: Newton did not converge")
    gr = np.empty((m, nq))
    hs = np.empty((m, nq, nq))
    st, _ = chain_derivatives(gz, gzz, m, max_cond, 2 if second else 1, gr, hs)
    if st == STATUS_SINGULAR:
        raise ValueError("closed chain: the constraint Jacobian dg/df is singular (projection method)")
    if st != STATUS_OK:
        raise ValueError("closed chain: the constraint Jacobian dg/df is ill-conditioned")
    nd = dirs.shape[1]
    for i in range(m):
        val[n + i] = z[i]
        for k in range(nq):
            grad[n + i, k] = gr[i, k]
            for c in range(nd):
                hq[n + i, k, c] = 0.0
    if not second:
        return
    for i in range(m):
        for k in range(nq):
            for c in range(nd):
                s = 0.0
                for l in range(nq):
                    s += hs[i, k, l] * dirs[l, c]
                hq[n + i, k, c] = s


@njit(inline="always", **_KW)
def _outer_chain_rule(ints, ib, d, out, dirs, second, n, val, grad, hq):
    """Node n = F(u_1..u_d) of the input nodes ints[ib:ib+d], from F's value out[0], gradient out[1:1+d] and
    Hessian out[1+d:] (row-major) in u: the chain rule ∇f = Σ_a F_a ∇u_a,
    H f D = Σ_ab F_ab ∇u_a (∇u_b · D) + Σ_a F_a H u_a D (the one chain rule of the program: OP_MPOLY, OP_EXTIN)."""
    nq = grad.shape[1]
    p = dirs.shape[1]
    val[n] = out[0]
    for k in range(nq):
        grad[n, k] = 0.0
        for j in range(p):
            hq[n, k, j] = 0.0
    for a in range(d):
        ua = ints[ib + a]
        ga = out[1 + a]
        for k in range(nq):
            grad[n, k] += ga * grad[ua, k]
    if second:
        for a in range(d):
            ua = ints[ib + a]
            for bb in range(d):
                ub = ints[ib + bb]
                for j in range(p):
                    db = 0.0
                    for k in range(nq):
                        db += grad[ub, k] * dirs[k, j]
                    hab = out[1 + d + a * d + bb] * db
                    for k in range(nq):
                        hq[n, k, j] += hab * grad[ua, k]
            ga = out[1 + a]
            for k in range(nq):
                for j in range(p):
                    hq[n, k, j] += ga * hq[ua, k, j]


@njit(inline="always", **_KW)
def eval_program(ints, flts, ext, q, dirs, second, val, grad, hq, chains):
    """Run the joint-variable program: val[n] = f_n, grad[n] = ∇f_n and, if ``second``, hq[n] = H_n D for the
    directions D = ``dirs`` (n_q, p): D = q̇ (p = 1) gives H_n q̇, D = I the full Hessian.

    ``chains``: None for a program without closed chains (no OP_CHAIN or OP_FRAMECHAIN node: numba prunes the
    branch that calls the closed-chain kernels, so they are not compiled -- one source, two compiled variants; such
    a node then raises ValueError), True otherwise (:func:`has_chains`)."""
    _eval_nodes(ints, flts, 0, 0, ext, q, dirs, second, val, grad, hq, chains)


@njit(**_KW)
def _eval_nodes(ints, flts, ibase, fbase, ext, q, dirs, second, val, grad, hq, chains):
    """:func:`eval_program` of the program whose header and offsets start at ints[ibase:] and flts[fbase:] (0, 0: the
    model's; an OP_FRAMECHAIN node's tree program is packed inside the node's parameters)."""
    nq = ints[ibase + H_NQ]
    nn = ints[ibase + H_NNODES]
    on = ibase + ints[ibase + H_OFF_NODES]
    p = dirs.shape[1]
    poly = np.empty(0)  # the polynomial nodes' inputs, results and monomials (grown to the largest node)
    basis = (-1, -1)  # (inputs, recurrence) offsets of the monomials in ``poly``: shared by the next such node
    for n in range(nn):
        b = on + NODE_STRIDE * n
        op = ints[b]
        ib = ibase + ints[b + 1]
        nin = ints[b + 2]
        ip = ibase + ints[b + 3]
        fp = fbase + ints[b + 4]
        if op == OP_CONST:
            val[n] = flts[fp]
            for k in range(nq):
                grad[n, k] = 0.0
                for j in range(p):
                    hq[n, k, j] = 0.0
        elif op == OP_COORD:
            c = ints[ip]
            val[n] = q[c]
            for k in range(nq):
                grad[n, k] = 0.0
                for j in range(p):
                    hq[n, k, j] = 0.0
            grad[n, c] = 1.0
        elif op == OP_LINQ:
            cnt = ints[ip]
            for k in range(nq):
                grad[n, k] = 0.0
                for j in range(p):
                    hq[n, k, j] = 0.0
            s = 0.0
            for jj in range(cnt):
                c = ints[ip + 1 + jj]
                a = flts[fp + jj]
                s += a * q[c]
                grad[n, c] = a
            val[n] = s + flts[fp + cnt]
        elif op == OP_LINCOMB:
            for k in range(nq):
                grad[n, k] = 0.0
                for j in range(p):
                    hq[n, k, j] = 0.0
            s = 0.0
            for jj in range(nin):
                u = ints[ib + jj]
                a = flts[fp + jj]
                s += a * val[u]
                for k in range(nq):
                    grad[n, k] += a * grad[u, k]
                if second:
                    for k in range(nq):
                        for j in range(p):
                            hq[n, k, j] += a * hq[u, k, j]
            val[n] = s + flts[fp + nin]
        elif op == OP_SCALE:
            u = ints[ib]
            a = flts[fp]
            val[n] = a * val[u]
            for k in range(nq):
                grad[n, k] = a * grad[u, k]
                for j in range(p):
                    hq[n, k, j] = a * hq[u, k, j] if second else 0.0
        elif op == OP_UNI:
            u = ints[ib]
            f, f1, f2 = _univariate(ints, flts, ip, fp, val[u])
            val[n] = f
            for k in range(nq):
                grad[n, k] = f1 * grad[u, k]
            for j in range(p):
                d1 = 0.0
                if second:
                    for k in range(nq):
                        d1 += grad[u, k] * dirs[k, j]
                for k in range(nq):
                    hq[n, k, j] = (f2 * d1 * grad[u, k] + f1 * hq[u, k, j]) if second else 0.0
        elif op == OP_MPOLY:
            d = nin
            nt = ints[ip]
            ex = ip + 1  # the monomial recurrence, after the number of terms
            ncol = 1 + d + d * d
            if poly.shape[0] < d + ncol + nt:
                poly = np.empty(d + ncol + nt)
                basis = (-1, -1)
            u = poly[:d]
            out = poly[d:d + ncol]
            mono = poly[poly.shape[0] - nt:]
            if basis[0] != ib or basis[1] != ip:  # (equal blocks share their offsets: pack_nodes)
                for v in range(d):
                    u[v] = val[ints[ib + v]]
                monomials(ints, ex, nt, u, mono)
                basis = (ib, ip)
            polynomial_jet(flts, fp, nt, d, mono, out, second)
            _outer_chain_rule(ints, ib, d, out, dirs, second, n, val, grad, hq)
        elif op == OP_EXTIN:
            _outer_chain_rule(ints, ib, nin, ext[ints[ip]], dirs, second, n, val, grad, hq)
        elif op == OP_CHAIN or op == OP_FRAMECHAIN:
            if chains is None:
                raise ValueError("closed chain: an OP_CHAIN node in a program run without closed-chain support")
            _closed_chain(ints, flts, ib, ip, fp, q, dirs, second, n, val, grad, hq, op == OP_FRAMECHAIN, ext)
        elif op == OP_CHAINPART:
            pass
        else:  # OP_EXT
            s = ints[ip]
            val[n] = ext[s, 0]
            for k in range(nq):
                grad[n, k] = ext[s, 1 + k]
                for j in range(p):
                    acc = 0.0
                    if second:
                        for l in range(nq):
                            acc += ext[s, 1 + nq + k * nq + l] * dirs[l, j]
                    hq[n, k, j] = acc


def _renamed(kernel, name: str):
    """The Python function of ``kernel`` under another name: compiled by its own dispatcher (and cached in its own
    files), so that a kernel can run the same source as one of its callers without numba compiling a call of a
    dispatcher into itself (which cached code does not survive)."""
    f = getattr(kernel, "py_func", kernel)
    g = types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__)
    g.__qualname__ = name
    g.__doc__ = f.__doc__
    g.__module__ = f.__module__
    return g


#: :func:`_eval_nodes` for an OP_FRAMECHAIN node's tree program (no closed chains in it): the same source, its own
#: dispatcher (the node runs inside ``_eval_nodes``)
_eval_tree_nodes = njit(**_KW)(_renamed(_eval_nodes, "_eval_tree_nodes"))


def has_chains(ints):
    """``chains`` of :func:`eval_program` for the program in ``ints``: True when it has an OP_CHAIN node, else None."""
    on = int(ints[H_OFF_NODES])
    ops = np.asarray(ints[on:on + NODE_STRIDE * int(ints[H_NNODES]):NODE_STRIDE])
    return True if ((ops == OP_CHAIN) | (ops == OP_FRAMECHAIN)).any() else None


@njit(**_KW)
def tree_arrays(ints, flts):
    """Views of the compiled frames' tree in ``ints`` and ``flts``: (parent, revolute, offsets, axes, ã, ã²), the
    arguments of :func:`osim_emb.core.kinematics_kernels.frame_kinematics`."""
    nf = ints[H_NFRAMES]
    ot = ints[H_OFF_TREE]
    ft = ints[H_OFF_TREE_FLOATS]
    offs, axes, vt, vt2 = _tree_floats(flts, ft, nf)
    return ints[ot:ot + nf], ints[ot + nf:ot + 2 * nf], offs, axes, vt, vt2


#: floats a frame takes in a packed tree: its 4x4 offset, axis, ã and ã²
TREE_FLOATS_PER_FRAME = 16 + 3 + 9 + 9


@njit(inline="always", **_KW)
def _tree_floats(flts, start, nf):
    """(offsets (nf, 4, 4), axes (nf, 3), ã (nf, 3, 3), ã² (nf, 3, 3)): views of a tree's floats packed in ``flts``
    from ``start`` (the model's, and an OP_FRAMECHAIN node's copy)."""
    offs = flts[start:start + 16 * nf].reshape((nf, 4, 4))
    start += 16 * nf
    axes = flts[start:start + 3 * nf].reshape((nf, 3))
    start += 3 * nf
    vt = flts[start:start + 9 * nf].reshape((nf, 3, 3))
    start += 9 * nf
    return offs, axes, vt, flts[start:start + 9 * nf].reshape((nf, 3, 3))


@njit(**_KW)
def _frames(ints, flts, qd, second, val, grad, hq, rot, pos, xi, vel, acc, dxi):
    """^0_iA_4 (rot, pos) and the Jacobian columns Ξ_i[k] (xi) of every compiled frame by the package's one frame
    recursion (:func:`osim_emb.core.kinematics_kernels.frame_kinematics`); with ``second`` (hq holds H q̇, shape
    (n_nodes, n_q, 1)) also the twist V_i (vel) and a_i (acc), and with ``dxi`` of shape (n_frames, n_q, 6) dΞ_i[l]/dt = dΞ_pr(i)[l]/dt + (∇f_i)_l (V_pr(i) × S_i)
    + (H_i q̇)_l S_i, the columns of the seed's velocity matrix N (Eq 126)."""
    want_dxi = dxi.shape[0] > 0
    nq = ints[H_NQ]
    nf = ints[H_NFRAMES]
    of = ints[H_OFF_FRAMES]
    parent, revolute, offs, axes, vt, vt2 = tree_arrays(ints, flts)
    f = np.empty(nf)
    g = np.empty((nf, nq))
    twist = np.empty((nf, 6))
    f[0] = 0.0
    for k in range(nq):
        g[0, k] = 0.0
    for i in range(1, nf):
        node = ints[of + FRAME_STRIDE * i + 2]
        f[i] = val[node]
        for k in range(nq):
            g[i, k] = grad[node, k]
    frame_kinematics(f, g, parent, revolute, offs, axes, vt, vt2, rot, pos, twist, xi)
    if not second:
        return
    for c in range(6):
        vel[0, c] = 0.0
        acc[0, c] = 0.0
    if want_dxi:
        for k in range(nq):
            for c in range(6):
                dxi[0, k, c] = 0.0
    for i in range(1, nf):
        p = parent[i]
        node = ints[of + FRAME_STRIDE * i + 2]
        s6 = twist[i]
        d1 = 0.0
        d2 = 0.0
        for k in range(nq):
            d1 += grad[node, k] * qd[k]
            d2 += hq[node, k, 0] * qd[k]
        # dS_i/dt = V_p x S_i (spatial cross product of twists)
        w0 = vel[p, 0]
        w1 = vel[p, 1]
        w2 = vel[p, 2]
        v0 = vel[p, 3]
        v1 = vel[p, 4]
        v2 = vel[p, 5]
        cw0 = w1 * s6[2] - w2 * s6[1]
        cw1 = w2 * s6[0] - w0 * s6[2]
        cw2 = w0 * s6[1] - w1 * s6[0]
        cv0 = (w1 * s6[5] - w2 * s6[4]) + (v1 * s6[2] - v2 * s6[1])
        cv1 = (w2 * s6[3] - w0 * s6[5]) + (v2 * s6[0] - v0 * s6[2])
        cv2 = (w0 * s6[4] - w1 * s6[3]) + (v0 * s6[1] - v1 * s6[0])
        for c in range(6):
            vel[i, c] = vel[p, c] + d1 * s6[c]
        acc[i, 0] = acc[p, 0] + d1 * cw0 + d2 * s6[0]
        acc[i, 1] = acc[p, 1] + d1 * cw1 + d2 * s6[1]
        acc[i, 2] = acc[p, 2] + d1 * cw2 + d2 * s6[2]
        acc[i, 3] = acc[p, 3] + d1 * cv0 + d2 * s6[3]
        acc[i, 4] = acc[p, 4] + d1 * cv1 + d2 * s6[4]
        acc[i, 5] = acc[p, 5] + d1 * cv2 + d2 * s6[5]
        if want_dxi:
            for k in range(nq):
                gk = grad[node, k]
                h = hq[node, k, 0]
                dxi[i, k, 0] = dxi[p, k, 0] + gk * cw0 + h * s6[0]
                dxi[i, k, 1] = dxi[p, k, 1] + gk * cw1 + h * s6[1]
                dxi[i, k, 2] = dxi[p, k, 2] + gk * cw2 + h * s6[2]
                dxi[i, k, 3] = dxi[p, k, 3] + gk * cv0 + h * s6[3]
                dxi[i, k, 4] = dxi[p, k, 4] + gk * cv1 + h * s6[4]
                dxi[i, k, 5] = dxi[p, k, 5] + gk * cv2 + h * s6[5]


@njit(**_KW)
def _inertia_apply(io, h, m, tw, out):
    """out = I tw for the spatial inertia [[I_O, ~h], [~h^T, m]] (inertia and first moment about the point
    the twist tw = (w, v) is taken at)."""
    w0 = tw[0]
    w1 = tw[1]
    w2 = tw[2]
    v0 = tw[3]
    v1 = tw[4]
    v2 = tw[5]
    out[0] = io[0, 0] * w0 + io[0, 1] * w1 + io[0, 2] * w2 + (h[1] * v2 - h[2] * v1)
    out[1] = io[1, 0] * w0 + io[1, 1] * w1 + io[1, 2] * w2 + (h[2] * v0 - h[0] * v2)
    out[2] = io[2, 0] * w0 + io[2, 1] * w1 + io[2, 2] * w2 + (h[0] * v1 - h[1] * v0)
    out[3] = (w1 * h[2] - w2 * h[1]) + m * v0
    out[4] = (w2 * h[0] - w0 * h[2]) + m * v1
    out[5] = (w0 * h[1] - w1 * h[0]) + m * v2


@njit(**_KW)
def _shift(src, p, dst):
    """The twist (or spatial acceleration) src = (w, v), taken at the ground origin, taken at the point p:
    (w, v + w x p)."""
    w0 = src[0]
    w1 = src[1]
    w2 = src[2]
    dst[0] = w0
    dst[1] = w1
    dst[2] = w2
    dst[3] = src[3] + (w1 * p[2] - w2 * p[1])
    dst[4] = src[4] + (w2 * p[0] - w0 * p[2])
    dst[5] = src[5] + (w0 * p[1] - w1 * p[0])


@njit(**_KW)
def _velocity_matrix_frame(io, h, m, xs, dxs, vp, nmat):
    """nmat[k, l] += tr(Ξ̂[k] J⁰ (dΞ̂[l]/dt + Ξ̂[l] V̂)ᵀ) for one frame (the seed's N, Eq 126), all twists at the frame
    origin.  The first part pairs twists, Ξ[k] · I dΞ[l]/dt; the second, Σ m (ω_k × r + v_k) · (ω_l × (ω_V × r + v_V))
    over the mass elements r, is  -tr(ω̃_k P E) + (ω_k × h) · c + v_k · (P h + m c)  with P = ω̃_l ω̃_V, c = ω_l × v_V and
    E = Σ m r rᵀ = tr(I_O)/2 - I_O."""
    nq = xs.shape[0]
    half = 0.5 * (io[0, 0] + io[1, 1] + io[2, 2])
    e = np.empty((3, 3))
    for r in range(3):
        for c in range(3):
            e[r, c] = (half if r == c else 0.0) - io[r, c]
    pm = np.empty((3, 3))
    qm = np.empty((3, 3))
    idl = np.empty(6)
    ph = np.empty(3)
    cc = np.empty(3)
    wv0 = vp[0]
    wv1 = vp[1]
    wv2 = vp[2]
    for l in range(nq):
        _inertia_apply(io, h, m, dxs[l], idl)
        b0 = xs[l, 0]
        b1 = xs[l, 1]
        b2 = xs[l, 2]
        dot = b0 * wv0 + b1 * wv1 + b2 * wv2
        pm[0, 0] = wv0 * b0 - dot
        pm[0, 1] = wv0 * b1
        pm[0, 2] = wv0 * b2
        pm[1, 0] = wv1 * b0
        pm[1, 1] = wv1 * b1 - dot
        pm[1, 2] = wv1 * b2
        pm[2, 0] = wv2 * b0
        pm[2, 1] = wv2 * b1
        pm[2, 2] = wv2 * b2 - dot
        for r in range(3):
            for c in range(3):
                qm[r, c] = pm[r, 0] * e[0, c] + pm[r, 1] * e[1, c] + pm[r, 2] * e[2, c]
            ph[r] = pm[r, 0] * h[0] + pm[r, 1] * h[1] + pm[r, 2] * h[2]
        cc[0] = b1 * vp[5] - b2 * vp[4]
        cc[1] = b2 * vp[3] - b0 * vp[5]
        cc[2] = b0 * vp[4] - b1 * vp[3]
        t0 = qm[1, 2] - qm[2, 1]
        t1 = qm[2, 0] - qm[0, 2]
        t2 = qm[0, 1] - qm[1, 0]
        for k in range(nq):
            a0 = xs[k, 0]
            a1 = xs[k, 1]
            a2 = xs[k, 2]
            s = 0.0
            for c in range(6):
                s += xs[k, c] * idl[c]
            s -= a0 * t0 + a1 * t1 + a2 * t2
            s += ((a1 * h[2] - a2 * h[1]) * cc[0] + (a2 * h[0] - a0 * h[2]) * cc[1]
                  + (a0 * h[1] - a1 * h[0]) * cc[2])
            s += (xs[k, 3] * (ph[0] + m * cc[0]) + xs[k, 4] * (ph[1] + m * cc[1])
                  + xs[k, 5] * (ph[2] + m * cc[2]))
            nmat[k, l] += s


@njit(**_KW)
def _bodies(ints, flts, second, want_mass, rot, pos, xi, vel, acc, dxi, mass, nmat, nqd, grav, work):
    """M (Eq 145), N q̇ (Eq 126, second part) and G (Eq 187) summed over the frames that carry mass; with ``nmat`` of
    shape (n_q, n_q) (and ``dxi`` from :func:`_frames`) also the matrix N itself (Eq 126, :func:`_velocity_matrix_frame`).

    Each frame's terms are evaluated about its own origin p_i (ground axes): the twists are shifted
    there, (w, v + w x p_i), and the spatial inertia is that of J_i about the frame origin, so that
    nothing of size m |p_i|^2 cancels.  The pairings twist . wrench do not depend on the point.
    """
    nq = ints[H_NQ]
    nm = ints[H_NMASS]
    om = ints[H_OFF_MASS]
    g0 = flts[0]
    g1 = flts[1]
    g2 = flts[2]
    want_n = second and nmat.shape[0] > 0
    for k in range(nq):
        nqd[k] = 0.0
        grav[k] = 0.0
        if want_mass:
            for l in range(nq):
                mass[k, l] = 0.0
        if want_n:
            for l in range(nq):
                nmat[k, l] = 0.0
    dxs = np.empty((nq if want_n else 0, 6))
    io = np.empty((3, 3))
    il = np.empty((3, 3))
    h = np.empty(3)
    p = np.empty(3)
    f6 = np.empty(6)
    iv = np.empty(6)
    tw = np.empty(6)
    vp = np.empty(6)
    xs = work[:, :6]
    fs = work[:, 6:]
    for e in range(nm):
        i = ints[om + MASS_STRIDE * e]
        fp = ints[om + MASS_STRIDE * e + 1]
        m = flts[fp]
        for r in range(3):
            p[r] = pos[i, r]
        # first moment and inertia about the frame origin, in ground axes: R h', R I' R^T
        for r in range(3):
            h[r] = rot[i, r, 0] * flts[fp + 1] + rot[i, r, 1] * flts[fp + 2] + rot[i, r, 2] * flts[fp + 3]
        for r in range(3):
            for c in range(3):
                il[r, c] = (rot[i, r, 0] * flts[fp + 4 + c] + rot[i, r, 1] * flts[fp + 7 + c]
                            + rot[i, r, 2] * flts[fp + 10 + c])
        for r in range(3):
            for c in range(3):
                io[r, c] = il[r, 0] * rot[i, c, 0] + il[r, 1] * rot[i, c, 1] + il[r, 2] * rot[i, c, 2]
        # Jacobian columns at the frame origin
        for k in range(nq):
            _shift(xi[i, k], p, tw)
            for c in range(6):
                xs[k, c] = tw[c]
        if want_mass:
            for k in range(nq):
                _inertia_apply(io, h, m, xs[k], f6)
                for c in range(6):
                    fs[k, c] = f6[c]
            for k in range(nq):
                for l in range(k + 1):
                    s = 0.0
                    for c in range(6):
                        s += xs[l, c] * fs[k, c]
                    mass[k, l] += s
        # gravity wrench about the frame origin (h x g, m g): G[k] = sum_i m_i g . d r_cm,i / dq_k
        f6[0] = h[1] * g2 - h[2] * g1
        f6[1] = h[2] * g0 - h[0] * g2
        f6[2] = h[0] * g1 - h[1] * g0
        f6[3] = m * g0
        f6[4] = m * g1
        f6[5] = m * g2
        for k in range(nq):
            s = 0.0
            for c in range(6):
                s += xs[k, c] * f6[c]
            grav[k] += s
        if second:
            # f = I a + V x* (I V), all at the frame origin
            _shift(vel[i], p, vp)
            _inertia_apply(io, h, m, vp, iv)
            _shift(acc[i], p, tw)
            _inertia_apply(io, h, m, tw, f6)
            w0 = vp[0]
            w1 = vp[1]
            w2 = vp[2]
            v0 = vp[3]
            v1 = vp[4]
            v2 = vp[5]
            f6[0] += (w1 * iv[2] - w2 * iv[1]) + (v1 * iv[5] - v2 * iv[4])
            f6[1] += (w2 * iv[0] - w0 * iv[2]) + (v2 * iv[3] - v0 * iv[5])
            f6[2] += (w0 * iv[1] - w1 * iv[0]) + (v0 * iv[4] - v1 * iv[3])
            f6[3] += w1 * iv[5] - w2 * iv[4]
            f6[4] += w2 * iv[3] - w0 * iv[5]
            f6[5] += w0 * iv[4] - w1 * iv[3]
            for k in range(nq):
                s = 0.0
                for c in range(6):
                    s += xs[k, c] * f6[c]
                nqd[k] += s
            if want_n:
                for l in range(nq):
                    _shift(dxi[i, l], p, tw)
                    for c in range(6):
                        dxs[l, c] = tw[c]
                _velocity_matrix_frame(io, h, m, xs, dxs, vp, nmat)
    if want_mass:
        for k in range(nq):
            for l in range(k):
                mass[l, k] = mass[k, l]


@njit(**_KW)
def _solve(a, b, x):
    """x = a^-1 b (closed_chain_kernels.solve_linear: Gaussian elimination, partial pivoting; a and b are
    overwritten); an exactly singular a raises numpy's LinAlgError, as np.linalg.solve does."""
    if not solve_linear(a, b, x):
        raise np.linalg.LinAlgError("Singular matrix")


@njit(inline="always", **_KW)
def _state(ints, flts, ext, q, qd, second, want_mass, val, grad, hq, rot, pos, xi, vel, acc, dxi,
           mass, nmat, nqd, grav, work, chains):
    # chains: None compiles the dynamics without the closed-chain kernels (most models: a much smaller compile)
    eval_program(ints, flts, ext, q, qd.reshape((qd.shape[0], 1)), second, val, grad, hq, chains)
    _frames(ints, flts, qd, second, val, grad, hq, rot, pos, xi, vel, acc, dxi)
    _bodies(ints, flts, second, want_mass, rot, pos, xi, vel, acc, dxi, mass, nmat, nqd, grav, work)


@njit(inline="always", **_KW)
def rhs(ints, flts, ext, y, tau, chains):
    """(q̇, q̈) with q̈ = M⁻¹(G + τ − N q̇) at y = (q, q̇): the right-hand side of the first-order ODE.  ``chains``
    (here and in every dynamics kernel): as :func:`eval_program` (:func:`has_chains` of ``ints``)."""
    return rhs_elements(ints, flts, ext, y, tau, np.zeros((0, ELEMENT_FLOATS)), chains)


@njit(**_KW)
def smooth_step(y0, y1, x0, x1, x):
    """SimTK::Function::Step(y0, y1, x0, x1): y0 before x0, y1 after x1, the quintic 10s³ − 15s⁴ + 6s⁵
    between."""
    if x <= x0:
        return y0
    if x >= x1:
        return y1
    s = (x - x0) / (x1 - x0)
    return y0 + (y1 - y0) * (s * s * s * (10.0 + s * (6.0 * s - 15.0)))


@njit(**_KW)
def coordinate_limit_force(q_up, q_low, k_up, k_low, damping, transition, q, qd):
    """OpenSim's CoordinateLimitForce (SI): the stiffness ramps up over ``transition`` beyond each limit (SimTK
    Step), the damping with the ramps."""
    kup = smooth_step(0.0, k_up, q_up, q_up + transition, q)
    klow = smooth_step(k_low, 0.0, q_low - transition, q_low, q)
    ramp = (kup / k_up if k_up != 0.0 else 0.0) + (klow / k_low if k_low != 0.0 else 0.0)
    return -kup * (q - q_up) + klow * (q_low - q) - damping * ramp * qd


@njit(**_KW)
def _pose(rot, pos, fr, row, o, r_out, p_out):
    """The pose (rotation, origin) in ground of a frame given in compiled frame ``fr`` by row[o:o+12]."""
    for a in range(3):
        p_out[a] = pos[fr, a]
        for b in range(3):
            v = 0.0
            for k in range(3):
                v += rot[fr, a, k] * row[o + 3 * k + b]
            r_out[a, b] = v
            p_out[a] += rot[fr, a, b] * row[o + 9 + b]


@njit(**_KW)
def _point(rot, pos, fr, row, o, p):
    for r in range(3):
        p[r] = pos[fr, r] + rot[fr, r, 0] * row[o] + rot[fr, r, 1] * row[o + 1] + rot[fr, r, 2] * row[o + 2]


@njit(**_KW)
def _point_velocity(nq, xi, qd, fr, p, v):
    """Ground velocity v of frame fr's material point at the ground point p: Σ_k q̇_k (ω_k × p + v_k)."""
    v[0] = 0.0
    v[1] = 0.0
    v[2] = 0.0
    for k in range(nq):
        w = xi[fr, k]
        v[0] += qd[k] * (w[1] * p[2] - w[2] * p[1] + w[3])
        v[1] += qd[k] * (w[2] * p[0] - w[0] * p[2] + w[4])
        v[2] += qd[k] * (w[0] * p[1] - w[1] * p[0] + w[5])


@njit(**_KW)
def _angular_velocity(nq, xi, qd, fr, w_out):
    for a in range(3):
        s = 0.0
        for k in range(nq):
            s += qd[k] * xi[fr, k, a]
        w_out[a] = s


@njit(**_KW)
def _apply_wrench(nq, xi, fr, p, f, m, sign, out):
    """out_k += sign (F·(ω_k × p + v_k) + M·ω_k) for frame fr's material point at p (Eq 46)."""
    for k in range(nq):
        w = xi[fr, k]
        u0 = w[1] * p[2] - w[2] * p[1] + w[3]
        u1 = w[2] * p[0] - w[0] * p[2] + w[4]
        u2 = w[0] * p[1] - w[1] * p[0] + w[5]
        out[k] += sign * (f[0] * u0 + f[1] * u1 + f[2] * u2 + m[0] * w[0] + m[1] * w[1] + m[2] * w[2])


@njit(**_KW)
def _spring(nq, rot, pos, xi, row, out):
    """A linear point-to-point spring: F = -k (L - L0) / L (p_a - p_b) on p_a and -F on p_b (PointToPointSpring)."""
    pa = np.empty(3)
    pb = np.empty(3)
    fa = int(row[1])
    fb = int(row[5])
    _point(rot, pos, fa, row, 2, pa)
    _point(rot, pos, fb, row, 6, pb)
    d = pa - pb
    length = math.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2])
    f = (-row[9] * (length - row[10]) / length) * d
    zero = np.zeros(3)
    _apply_wrench(nq, xi, fa, pa, f, zero, 1.0, out)
    _apply_wrench(nq, xi, fb, pb, f, zero, -1.0, out)


@njit(**_KW)
def _friction_magnitude(f, slip, transition, us, ud, uv):
    rel = slip / transition
    return f * (min(rel, 1.0) * (ud + 2.0 * (us - ud) / (1.0 + rel * rel)) + uv * slip)


@njit(**_KW)
def _smooth_contact(nq, rot, pos, xi, qd, row, out):
    """Simbody's SmoothSphereHalfSpaceForce (row: 1, sphere frame, centre (3), radius, half-space frame, its x axis
    (3), origin (3), stiffness, dissipation, us, ud, uv, transition velocity, cf, bd, bv)."""
    fs = int(row[1])
    fh = int(row[6])
    c = np.empty(3)
    _point(rot, pos, fs, row, 2, c)
    n = np.empty(3)
    o = np.empty(3)
    for a in range(3):
        n[a] = rot[fh, a, 0] * row[7] + rot[fh, a, 1] * row[8] + rot[fh, a, 2] * row[9]
    _point(rot, pos, fh, row, 10, o)
    r = row[5]
    depth = r
    for a in range(3):
        depth += (c[a] - o[a]) * n[a]
    p = np.empty(3)
    for a in range(3):
        p[a] = c[a] + (r - 0.5 * depth) * n[a]
    vs = np.empty(3)
    vh = np.empty(3)
    _point_velocity(nq, xi, qd, fs, p, vs)
    _point_velocity(nq, xi, qd, fh, p, vh)
    v = vs - vh
    vn = v[0] * n[0] + v[1] * n[1] + v[2] * n[2]
    vt = v - vn * n
    k = 0.5 * row[13] ** (2.0 / 3.0)
    cf = row[19]
    hertz = (4.0 / 3.0) * k * math.sqrt(r * k) * math.sqrt(depth * depth + cf) ** 1.5
    hertz *= 0.5 + 0.5 * math.tanh(row[20] * depth)
    hc = hertz * (1.0 + 1.5 * row[14] * vn)
    hc *= 0.5 + 0.5 * math.tanh(row[21] * (vn + 2.0 / (3.0 * row[14])))
    slip = math.sqrt(vt[0] * vt[0] + vt[1] * vt[1] + vt[2] * vt[2] + cf)
    ff = _friction_magnitude(hc, slip, row[18], row[15], row[16], row[17]) / slip
    f = hc * n + ff * vt
    zero = np.zeros(3)
    _apply_wrench(nq, xi, fs, p, f, zero, -1.0, out)
    _apply_wrench(nq, xi, fh, p, f, zero, 1.0, out)


@njit(**_KW)
def _pair_friction(u1, u2):
    if u1 == 0.0 and u2 == 0.0:
        return 0.0
    return 2.0 * u1 * u2 / (u1 + u2)


@njit(**_KW)
def _contact_set(nq, rot, pos, xi, qd, table, first, count, transition, out):
    """Simbody's HuntCrossleyForce on one contact set (rows first..first+count: 3, frame, sphere?, radius, pose (12),
    stiffness^(2/3), dissipation, us, ud, uv): contacts as GeneralContactSubsystem finds and orders them (sweep and
    prune along the axis of largest spread), stopping at the first whose force would pull, as Simbody does."""
    rs = np.empty((count, 3, 3))
    cs = np.empty((count, 3))
    for i in range(count):
        row = table[first + i]
        _pose(rot, pos, int(row[1]), row, 4, rs[i], cs[i])
    mean = np.zeros(3)
    for i in range(count):
        mean += cs[i]
    mean /= count
    spread = np.zeros(3)
    for i in range(count):
        for a in range(3):
            spread[a] += abs(cs[i, a] - mean[a])
    axis = 0 if spread[0] > spread[1] else 1
    if spread[2] > spread[axis]:
        axis = 2
    start = np.empty(count)
    end = np.empty(count)
    for i in range(count):
        rad = table[first + i, 3] if table[first + i, 2] > 0.5 else np.inf
        start[i] = cs[i, axis] - rad
        end[i] = cs[i, axis] + rad
    order = np.argsort(start, kind="mergesort")
    loc = np.empty(3)
    nrm = np.empty(3)
    v1 = np.empty(3)
    v2 = np.empty(3)
    zero = np.zeros(3)
    for a in range(count):
        i = order[a]
        for b in range(a + 1, count):
            j = order[b]
            if start[j] > end[i]:
                break
            si = table[first + i, 2] > 0.5
            sj = table[first + j, 2] > 0.5
            ri = table[first + i, 3] if si else np.inf
            rj = table[first + j, 3] if sj else np.inf
            d2 = 0.0
            for e in range(3):
                d2 += (cs[i, e] - cs[j, e]) ** 2
            if not d2 <= (ri + rj) * (ri + rj):
                continue
            if not si and not sj:
                continue
            i1, i2 = (j, i) if (si and not sj) else (i, j)
            found = False
            radius = 0.0
            depth = 0.0
            if table[first + i1, 2] < 0.5:  # half space i1, sphere i2
                r = table[first + i2, 3]
                local = np.zeros(3)
                for e in range(3):
                    for f in range(3):
                        local[e] += rs[i1, f, e] * (cs[i2, f] - cs[i1, f])
                depth = r + local[0]
                if depth > 0.0:
                    found = True
                    radius = r
                    for e in range(3):
                        nrm[e] = -rs[i1, e, 0]
                        loc[e] = cs[i1, e] + rs[i1, e, 0] * (depth / 2) + rs[i1, e, 1] * local[1] \
                            + rs[i1, e, 2] * local[2]
            else:
                r1 = table[first + i1, 3]
                r2 = table[first + i2, 3]
                dist = 0.0
                for e in range(3):
                    nrm[e] = cs[i2, e] - cs[i1, e]
                    dist += nrm[e] * nrm[e]
                dist = math.sqrt(dist)
                depth = r1 + r2 - dist
                if dist != 0.0 and depth > 0.0:
                    found = True
                    radius = r1 * r2 / (r1 + r2)
                    for e in range(3):
                        nrm[e] /= dist
                        loc[e] = cs[i1, e] + (r1 - depth / 2) * nrm[e]
            if not found:
                continue
            row1 = table[first + i1]
            row2 = table[first + i2]
            k1 = row1[16]
            k2 = row2[16]
            s1 = k2 / (k1 + k2)
            s2 = 1.0 - s1
            for e in range(3):
                loc[e] += depth * (0.5 - s1) * nrm[e]
            k = k1 * s1
            c = row1[17] * s1 + row2[17] * s2
            hertz = (4.0 / 3.0) * k * depth * math.sqrt(radius * k * depth)
            f1 = int(row1[1])
            f2 = int(row2[1])
            _point_velocity(nq, xi, qd, f1, loc, v1)
            _point_velocity(nq, xi, qd, f2, loc, v2)
            v = v1 - v2
            vn = v[0] * nrm[0] + v[1] * nrm[1] + v[2] * nrm[2]
            f = hertz * (1.0 + 1.5 * c * vn)
            if f <= 0.0:
                return
            force = f * nrm
            vt = v - vn * nrm
            slip = math.sqrt(vt[0] * vt[0] + vt[1] * vt[1] + vt[2] * vt[2])
            if slip != 0.0:
                ff = _friction_magnitude(f, slip, transition, _pair_friction(row1[18], row2[18]),
                                         _pair_friction(row1[19], row2[19]), _pair_friction(row1[20], row2[20]))
                force += (ff / slip) * vt
            _apply_wrench(nq, xi, f1, loc, force, zero, -1.0, out)
            _apply_wrench(nq, xi, f2, loc, force, zero, 1.0, out)


@njit(**_KW)
def _bushing(nq, rot, pos, xi, qd, row, gains, out):
    """Simbody's LinearBushing between frame F (row[2:14] on compiled frame row[1]) and M (row[15:27] on row[14]):
    f = -(K q_b + C q̇_b) on the body-fixed X-Y-Z angles of M in F and M's origin in F; the moment on M is E⁻ᵀ f in
    F's axes (E: ω_FM = E q̇_angles), the force f (in F) at M's origin, the opposite on F's body there."""
    f1 = int(row[1])
    f2 = int(row[14])
    r_gf = np.empty((3, 3))
    r_gm = np.empty((3, 3))
    o_f = np.empty(3)
    o_m = np.empty(3)
    _pose(rot, pos, f1, row, 2, r_gf, o_f)
    _pose(rot, pos, f2, row, 15, r_gm, o_m)
    r_fm = r_gf.T @ r_gm
    cos_b = math.sqrt((r_fm[0, 0] ** 2 + r_fm[0, 1] ** 2 + r_fm[1, 2] ** 2 + r_fm[2, 2] ** 2) / 2.0)
    qa = math.atan2(-r_fm[1, 2], r_fm[2, 2])
    qb = math.atan2(r_fm[0, 2], cos_b)
    qc = math.atan2(-r_fm[0, 1], r_fm[0, 0])
    ca, sa, cb, sb = math.cos(qa), math.sin(qa), math.cos(qb), math.sin(qb)
    e = np.zeros((3, 3))
    e[0, 0] = 1.0
    e[1, 1] = ca
    e[2, 1] = sa
    e[0, 2] = sb
    e[1, 2] = -sa * cb
    e[2, 2] = ca * cb
    w1 = np.empty(3)
    w2 = np.empty(3)
    _angular_velocity(nq, xi, qd, f1, w1)
    _angular_velocity(nq, xi, qd, f2, w2)
    w_fm = r_gf.T @ (w2 - w1)
    rates = np.linalg.solve(e, w_fm)
    vm2 = np.empty(3)
    vm1 = np.empty(3)
    _point_velocity(nq, xi, qd, f2, o_m, vm2)
    _point_velocity(nq, xi, qd, f1, o_m, vm1)
    offset = r_gf.T @ (o_m - o_f)
    offset_rate = r_gf.T @ (vm2 - vm1)
    fq = np.empty(6)
    fq[0] = -(gains[1] * qa + gains[7] * rates[0])
    fq[1] = -(gains[2] * qb + gains[8] * rates[1])
    fq[2] = -(gains[3] * qc + gains[9] * rates[2])
    for a in range(3):
        fq[3 + a] = -(gains[4 + a] * offset[a] + gains[10 + a] * offset_rate[a])
    moment = r_gf @ np.linalg.solve(e.T, fq[:3].copy())
    force = r_gf @ fq[3:].copy()
    _apply_wrench(nq, xi, f2, o_m, force, moment, 1.0, out)
    _apply_wrench(nq, xi, f1, o_m, force, moment, -1.0, out)


@njit(**_KW)
def _curve_value(table, i, t):
    """(f(t), the row after the curve) of the one-input function whose EL_CURVE header is row i."""
    ni = int(table[i, 1])
    nf = int(table[i, 2])
    ints = np.empty(max(ni, 1), dtype=np.int64)
    flts = np.empty(max(nf, 1))
    for k in range(ni):
        ints[k] = int(table[i + 1 + k // ELEMENT_FLOATS, k % ELEMENT_FLOATS])
    for k in range(nf):
        m = ni + k
        flts[k] = table[i + 1 + m // ELEMENT_FLOATS, m % ELEMENT_FLOATS]
    return _univariate(ints, flts, 0, 0, t)[0], i + 1 + (ni + nf + ELEMENT_FLOATS - 1) // ELEMENT_FLOATS


@njit(**_KW)
def _prescribed(nq, rot, pos, xi, t, table, i, out):
    """A PrescribedForce at time t: the force (in ground or the force frame) at its point (a ground point, a point of
    the frame, or the frame's origin) and the torque, on the frame's body."""
    row = table[i]
    fr = int(row[1])
    r = np.empty((3, 3))
    o = np.empty(3)
    _pose(rot, pos, fr, row, 2, r, o)
    values = np.zeros(9)
    j = i + 1
    for group in range(3):
        if row[16 + group] != 0.0:
            for a in range(3):
                values[3 * group + a], j = _curve_value(table, j, t)
    zero = np.zeros(3)
    if row[16] != 0.0:
        force = values[0:3].copy() if row[14] != 0.0 else r @ values[0:3]
        point = o.copy()
        if row[17] != 0.0:
            point = values[3:6].copy() if row[15] != 0.0 else r @ values[3:6] + o
        _apply_wrench(nq, xi, fr, point, force, zero, 1.0, out)
    if row[18] != 0.0:
        torque = values[6:9].copy() if row[14] != 0.0 else r @ values[6:9]
        _apply_wrench(nq, xi, fr, o, zero, torque, 1.0, out)


@njit(**_KW)
def _element_forces(nq, rot, pos, xi, t, q, qd, table, out):
    """out += generalized forces at time t of the force-element table's rows (:data:`ELEMENT_FLOATS`)."""
    i = 0
    while i < table.shape[0]:
        kind = int(table[i, 0])
        if kind == EL_SPRING:
            _spring(nq, rot, pos, xi, table[i], out)
        elif kind == EL_SMOOTH_CONTACT:
            _smooth_contact(nq, rot, pos, xi, qd, table[i], out)
        elif kind == EL_CONTACT_SET:
            count = int(table[i, 1])
            _contact_set(nq, rot, pos, xi, qd, table, i + 1, count, table[i, 2], out)
            i += count
        elif kind == EL_BUSHING:
            _bushing(nq, rot, pos, xi, qd, table[i], table[i + 1], out)
            i += 1
        elif kind == EL_COORDINATE_LIMIT:
            row = table[i]
            k = int(row[1])
            out[k] += coordinate_limit_force(row[2], row[3], row[4], row[5], row[6], row[7], q[k], qd[k])
        elif kind == EL_COORDINATE_SPRING:
            row = table[i]
            k = int(row[1])
            out[k] += -row[2] * (q[k] - row[3]) - row[4] * qd[k]
        elif kind == EL_PRESCRIBED:
            _prescribed(nq, rot, pos, xi, t, table, i, out)
            i += int(table[i, 19]) - 1
        i += 1


@njit(**_KW)
def no_loads():
    """The ``loads`` of :func:`rhs_into` that apply nothing (the layout of :meth:`CompiledModel.external_loads`)."""
    return (np.zeros((0, LOAD_INTS), dtype=np.int64), np.zeros((0, 3, 12)), np.zeros(2), np.zeros((4, 1, 0)))


@njit(**_KW)
def _external_forces(t, nq, rot, pos, xi, loads, out):
    """out += generalized forces of external loads at time t (ExternalForces: Eq 46, τ_k = F·(ω_k × p + v_k) + M·ω_k
    in ground, (ω_k, v_k) the applied body's Jacobian column).  ``loads`` = (rows (n, LOAD_INTS), the three bodies'
    frames in their compiled frames (n, 3, 12: rotation row-major, then origin), spline breakpoints (T,),
    coefficients (4, T - 1, 9 n): force, point, torque of each load, as scipy's CubicSpline)."""
    rows, frames, x, c = loads
    if rows.shape[0] == 0:
        return
    i = np.searchsorted(x, t, side="right") - 1
    i = min(max(i, 0), x.shape[0] - 2)
    s = t - x[i]
    data = np.empty(c.shape[2])
    for j in range(c.shape[2]):
        data[j] = ((c[0, i, j] * s + c[1, i, j]) * s + c[2, i, j]) * s + c[3, i, j]
    rb = np.empty((3, 3, 3))  # the three bodies' rotations in ground
    ob = np.empty((3, 3))  # and origins
    for e in range(rows.shape[0]):
        for m in range(3):
            fr = rows[e, m]
            if fr < 0:
                continue
            a = frames[e, m]
            for r in range(3):
                ob[m, r] = pos[fr, r]
                for col in range(3):
                    v = 0.0
                    for k in range(3):
                        v += rot[fr, r, k] * a[3 * k + col]
                    rb[m, r, col] = v
                    ob[m, r] += rot[fr, r, col] * a[9 + col]
        base = 9 * e
        force = np.empty(3)
        point = np.empty(3)
        torque = np.empty(3)
        for r in range(3):
            force[r] = 0.0
            torque[r] = 0.0
            point[r] = ob[0, r] if rows[e, 2] < 0 else ob[2, r]
            for k in range(3):
                force[r] += rb[1, r, k] * data[base + k]
                torque[r] += rb[1, r, k] * data[base + 6 + k]
                if rows[e, 2] >= 0:
                    point[r] += rb[2, r, k] * data[base + 3 + k]
        if rows[e, 3] == 0:
            force[:] = 0.0
        if rows[e, 4] == 0:
            torque[:] = 0.0
        fa = rows[e, 0]
        for k in range(nq):
            w = xi[fa, k]
            u0 = w[1] * point[2] - w[2] * point[1] + w[3]
            u1 = w[2] * point[0] - w[0] * point[2] + w[4]
            u2 = w[0] * point[1] - w[1] * point[0] + w[5]
            out[k] += force[0] * u0 + force[1] * u1 + force[2] * u2 + torque[0] * w[0] + torque[1] * w[1] \
                + torque[2] * w[2]


@njit(**_KW)
def dynamics_workspace(ints):
    """The arrays :func:`rhs_into` works in, allocated once for many right-hand sides of one model."""
    nq = ints[H_NQ]
    nn = ints[H_NNODES]
    nf = ints[H_NFRAMES]
    return (np.empty(nq), np.empty(nq), np.empty(nn), np.empty((nn, nq)), np.empty((nn, nq, 1)), np.empty((nf, 3, 3)),
            np.empty((nf, 3)), np.empty((nf, nq, 6)), np.empty((nf, 6)), np.empty((nf, 6)), np.empty((0, nq, 6)),
            np.empty((nq, nq)), np.empty((0, nq)), np.empty(nq), np.empty(nq), np.empty((nq, 12)), np.empty(nq),
            np.empty(nq))


@njit(**_KW)
def rhs_into(ints, flts, ext, y, tau, elements, t, loads, ws, out, chains):
    """out = (q̇, q̈) of :func:`rhs_elements` with the external loads ``loads`` at time t (:func:`_external_forces`;
    :func:`no_loads` for none), in the arrays of ``ws`` (:func:`dynamics_workspace`)."""
    q, qd, val, grad, hq, rot, pos, xi, vel, acc, no_dxi, mass, no_n, nqd, grav, work, b, x = ws
    nq = ints[H_NQ]
    for k in range(nq):
        q[k] = y[k]
        qd[k] = y[nq + k]
    yes = nq >= 0  # (a run-time boolean: the same specialisation of _state as ``batch`` uses)
    _state(ints, flts, ext[0], q, qd, yes, yes, val, grad, hq, rot, pos, xi, vel, acc, no_dxi, mass, no_n, nqd, grav,
           work, chains)
    for k in range(nq):
        out[k] = qd[k]
        b[k] = grav[k] - nqd[k] + tau[k]
    _element_forces(nq, rot, pos, xi, t, q, qd, elements, b)
    _external_forces(t, nq, rot, pos, xi, loads, b)
    _solve(mass, b, x)
    for k in range(nq):
        out[nq + k] = x[k]


@njit(**_KW)
def mass_matrix_into(ints, flts, ext, y, ws, out, chains):
    """out = M(q) at y = (q, q̇), in the arrays of ``ws`` (:func:`dynamics_workspace`): the matrix that
    :func:`rhs_into` solves with (it factorizes its copy in place)."""
    q, qd, val, grad, hq, rot, pos, xi, vel, acc, no_dxi, mass, no_n, nqd, grav, work, b, x = ws
    nq = ints[H_NQ]
    for k in range(nq):
        q[k] = y[k]
        qd[k] = y[nq + k]
    yes = nq >= 0  # the specialisation of _state that rhs_into uses
    _state(ints, flts, ext[0], q, qd, yes, yes, val, grad, hq, rot, pos, xi, vel, acc, no_dxi, mass, no_n, nqd, grav,
           work, chains)
    for k in range(nq):
        for l in range(nq):
            out[k, l] = mass[k, l]


@njit(inline="always", **_KW)
def rhs_elements(ints, flts, ext, y, tau, elements, chains):
    """:func:`rhs` with the generalized forces of a force-element table (rows of ELEMENT_FLOATS) added to τ."""
    return rhs_loaded(ints, flts, ext, y, tau, elements, 0.0, no_loads(), chains)


@njit(**_KW)
def rhs_loaded(ints, flts, ext, y, tau, elements, t, loads, chains):
    """:func:`rhs_elements` with external loads at time t (:meth:`CompiledModel.external_loads`)."""
    out = np.empty(2 * ints[H_NQ])
    rhs_into(ints, flts, ext, y, tau, elements, t, loads, dynamics_workspace(ints), out, chains)
    return out


#: modes of :func:`batch`
MODE_TERMS = 0     # M, N q̇, G
MODE_FORWARD = 1   # q̈ = M⁻¹(G + τ − N q̇), arg = τ
MODE_INVERSE = 2   # τ = M q̈ + N q̇ − G, arg = q̈
MODE_STATIC = 3    # M and G only (no velocities)
MODE_MATRIX_N = 4  # M, the matrix N, N q̇ and G


@njit(**_KW)
def _batch_outputs(n, nq, mode):
    """(M, N, N q̇, G, q̈ or τ) arrays for ``n`` states; the ones ``mode`` does not fill have length 0."""
    with_m = mode == MODE_TERMS or mode == MODE_STATIC or mode == MODE_MATRIX_N
    m_out = np.empty((n if with_m else 0, nq, nq))
    n_out = np.empty((n if mode == MODE_MATRIX_N else 0, nq, nq))
    res = np.empty((n if (mode == MODE_FORWARD or mode == MODE_INVERSE) else 0, nq))
    return m_out, n_out, np.empty((n, nq)), np.empty((n, nq)), res


@njit(**_KW)
def _batch_range(ints, flts, ext, q, qd, arg, mode, start, stop, m_out, n_out, nqd_out, g_out, res, chains):
    """States start..stop-1 of :func:`batch` (one work space, reused from state to state)."""
    nq = ints[H_NQ]
    nn = ints[H_NNODES]
    nf = ints[H_NFRAMES]
    second = mode != MODE_STATIC
    yes = nq >= 0
    val = np.empty(nn)
    grad = np.empty((nn, nq))
    hq = np.empty((nn, nq, 1))
    rot = np.empty((nf, 3, 3))
    pos = np.empty((nf, 3))
    xi = np.empty((nf, nq, 6))
    vel = np.empty((nf, 6))
    acc = np.empty((nf, 6))
    dxi = np.empty((nf if mode == MODE_MATRIX_N else 0, nq, 6))
    nmat = np.empty((nq if mode == MODE_MATRIX_N else 0, nq))
    work = np.empty((nq, 12))
    b = np.empty(nq)
    x = np.empty(nq)
    mass = np.empty((nq, nq))
    nqd = np.empty(nq)
    grav = np.empty(nq)
    qs = np.empty(nq)
    qds = np.empty(nq)
    for s in range(start, stop):
        ext_s = ext[s] if ext.shape[0] > 1 else ext[0]
        for k in range(nq):
            qs[k] = q[s, k]
            qds[k] = qd[s, k]
        _state(ints, flts, ext_s, qs, qds, second, yes, val, grad, hq, rot, pos, xi, vel, acc, dxi,
               mass, nmat, nqd, grav, work, chains)
        for k in range(nq):
            nqd_out[s, k] = nqd[k]
            g_out[s, k] = grav[k]
        if mode == MODE_FORWARD:
            for k in range(nq):
                b[k] = grav[k] - nqd[k] + arg[s, k]
            _solve(mass, b, x)
            for k in range(nq):
                res[s, k] = x[k]
        elif mode == MODE_INVERSE:
            for k in range(nq):
                t = 0.0
                for l in range(nq):
                    t += mass[k, l] * arg[s, l]
                res[s, k] = t + nqd[k] - grav[k]
        else:
            m_out[s] = mass
            if mode == MODE_MATRIX_N:
                n_out[s] = nmat


@njit(**_KW)
def batch(ints, flts, ext, q, qd, arg, mode, chains):
    """Over N states (q, q̇, arg of shape (N, n_q); ext (N or 1, n_external, ...)), one after the other: returns
    (M, N, N q̇, G, result) as :data:`MODE_TERMS` ... :data:`MODE_MATRIX_N` ask (unused outputs have length 0)."""
    m_out, n_out, nqd_out, g_out, res = _batch_outputs(q.shape[0], ints[H_NQ], mode)
    _batch_range(ints, flts, ext, q, qd, arg, mode, 0, q.shape[0], m_out, n_out, nqd_out, g_out, res, chains)
    return m_out, n_out, nqd_out, g_out, res


@njit(parallel=True, **_KW)
def batch_parallel(ints, flts, ext, q, qd, arg, mode, n_chunks, chains):
    """:func:`batch` with the states split into ``n_chunks`` contiguous chunks evaluated in parallel (numba's
    threads): the same numbers, state by state, and ``done`` (n_chunks,).  An error inside a parallel region does
    not propagate: it ends its chunk, whose ``done`` stays 0, and the caller must then run :func:`batch` to raise it."""
    n = q.shape[0]
    m_out, n_out, nqd_out, g_out, res = _batch_outputs(n, ints[H_NQ], mode)
    done = np.zeros(n_chunks, dtype=np.int64)
    for c in prange(n_chunks):
        _batch_range(ints, flts, ext, q, qd, arg, mode, (c * n) // n_chunks, ((c + 1) * n) // n_chunks,
                     m_out, n_out, nqd_out, g_out, res, chains)
        done[c] = 1
    return m_out, n_out, nqd_out, g_out, res, done


@njit(**_KW)
def program(ints, flts, ext, q, qd, chains):
    """Values, gradients and H q̇ of every program node at N states: (N, n_nodes), (N, n_nodes, n_q) twice."""
    nq = ints[H_NQ]
    nn = ints[H_NNODES]
    n = q.shape[0]
    val = np.empty((n, nn))
    grad = np.empty((n, nn, nq))
    hq = np.empty((n, nn, nq))
    hqs = np.empty((nn, nq, 1))
    dirs = np.empty((nq, 1))
    yes = nq >= 0
    for s in range(n):
        ext_s = ext[s] if ext.shape[0] > 1 else ext[0]
        for k in range(nq):
            dirs[k, 0] = qd[s, k]
        eval_program(ints, flts, ext_s, q[s], dirs, yes, val[s], grad[s], hqs, chains)
        for i in range(nn):
            for k in range(nq):
                hq[s, i, k] = hqs[i, k, 0]
    return val, grad, hq


@njit(**_KW)
def _joint_variable_range(ints, flts, ext, q, nodes, order, start, stop, val_out, grad_out, hess_out, chains):
    """States start..stop-1 of :func:`joint_variable_batch` (one work space, reused from state to state)."""
    nq = ints[H_NQ]
    nn = ints[H_NNODES]
    m = nodes.shape[0]
    second = order >= 2
    p = nq if second else 0
    dirs = np.zeros((nq, p))
    for k in range(p):
        dirs[k, k] = 1.0
    val = np.empty(nn)
    grad = np.empty((nn, nq))
    hq = np.empty((nn, nq, p))
    qs = np.empty(nq)
    for s in range(start, stop):
        ext_s = ext[s] if ext.shape[0] > 1 else ext[0]
        for k in range(nq):
            qs[k] = q[s, k]
        eval_program(ints, flts, ext_s, qs, dirs, second, val, grad, hq, chains)
        for i in range(m):
            node = nodes[i]
            val_out[s, i] = val[node] if node >= 0 else 0.0
            if order >= 1:
                for k in range(nq):
                    grad_out[s, i, k] = grad[node, k] if node >= 0 else 0.0
            if second:
                for k in range(nq):
                    for l in range(nq):
                        hess_out[s, i, k, l] = hq[node, k, l] if node >= 0 else 0.0


@njit(**_KW)
def joint_variable_batch(ints, flts, ext, q, nodes, order, val_out, grad_out, hess_out, chains):
    """f, ∇f (order >= 1) and the full Hessian H (order 2) of the program nodes ``nodes`` (a node < 0 gives 0: the
    ground) at N states into val_out (N, k), grad_out (N, k, n_q) and hess_out (N, k, n_q, n_q) (the outputs
    ``order`` does not ask for are not touched).  ``ext`` (N or 1, n_external, 1 + n_q + n_q²) holds the external
    nodes' jets (their Hessians are read for order 2 only).  ``chains``: as :func:`eval_program` (None: compiled
    without the closed-chain kernels)."""
    _joint_variable_range(ints, flts, ext, q, nodes, order, 0, q.shape[0], val_out, grad_out, hess_out, chains)


@njit(parallel=True, **_KW)
def joint_variable_batch_parallel(ints, flts, ext, q, nodes, order, val_out, grad_out, hess_out, n_chunks,
                                  chains):
    """:func:`joint_variable_batch` in ``n_chunks`` contiguous chunks on numba's threads; ``done`` (n_chunks,) as
    :func:`batch_parallel` (a chunk that stopped on an error stays 0: run the serial kernel to raise it)."""
    n = q.shape[0]
    done = np.zeros(n_chunks, dtype=np.int64)
    for c in prange(n_chunks):
        _joint_variable_range(ints, flts, ext, q, nodes, order, (c * n) // n_chunks, ((c + 1) * n) // n_chunks,
                              val_out, grad_out, hess_out, chains)
        done[c] = 1
    return done
