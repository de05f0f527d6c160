"""Calculus of matrix-valued functions (Ehsani, seed section 2).

Definition 1 (Eq 3): for A(q) in R^{m x n} and q in R^r,

    dA/dq = sum_ik E_ik^{m x n} (x) dA_ik/dq        in R^{(m r) x n},

so entry ``[i*r + j, k]`` is dA_ik/dq_j.  The array form used everywhere else
in the package stores the same numbers as a tensor ``T[j, i, k] = dA_ik/dq_j``
(derivative index first); :func:`tensor_to_definition1` and
:func:`definition1_to_tensor` convert between the two.

The functions below are literal implementations of the seed's theorems.  They
are the reference against which the fast array kinematics are tested; they are
not used in hot paths.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = [
    "elementary",
    "commutation_matrix",
    "vec",
    "unvec",
    "definition1_derivative",
    "tensor_to_definition1",
    "definition1_to_tensor",
    "derivative_of_product",
    "derivative_of_scalar_product",
    "derivative_of_kronecker",
    "differential_a",
    "differential_b",
    "skew",
]


def elementary(i: int, k: int, m: int, n: int) -> np.ndarray:
    """Elementary matrix E_ik^{m x n}: zero except a 1 at row i, column k (0-based)."""
    e = np.zeros((m, n))
    e[i, k] = 1.0
    return e


def commutation_matrix(m: int, n: int) -> np.ndarray:
    """Permutation matrix U_{m,n} = sum_ik E_ik^{m x n} (x) E_ki^{n x m} (Eq 2), (mn) x (mn).

    It satisfies U_{m,n} vec(A^T) = vec(A) for A in R^{m x n}... (see tests) and
    the commutative rule U_{p,m} (A (x) B) U_{n,q} = B (x) A for A m x n, B p x q.
    """
    u = np.zeros((m * n, m * n))
    for i in range(m):
        for k in range(n):
            # E_ik (x) E_ki has its single 1 at row i*n + k, column k*m + i.
            u[i * n + k, k * m + i] = 1.0
    return u


def vec(a: np.ndarray) -> np.ndarray:
    """Stack the columns of ``a`` into one column vector (Neudecker's vec), shape (m n, 1)."""
    a = np.asarray(a)
    return a.reshape(-1, 1, order="F")


def unvec(v: np.ndarray, m: int, n: int) -> np.ndarray:
    """Inverse of :func:`vec`."""
    return np.asarray(v).reshape((m, n), order="F")


def tensor_to_definition1(t: np.ndarray) -> np.ndarray:
    """Tensor ``t[..., j, i, k] = dA_ik/dq_j`` (shape (..., r, m, n)) to Definition-1 layout (..., m r, n)."""
    t = np.asarray(t)
    r, m, n = t.shape[-3:]
    return np.swapaxes(t, -3, -2).reshape(t.shape[:-3] + (m * r, n))


def definition1_to_tensor(d: np.ndarray, r: int) -> np.ndarray:
    """Definition-1 layout (..., m r, n) to tensor (..., r, m, n)."""
    d = np.asarray(d)
    mr, n = d.shape[-2:]
    m = mr // r
    return np.swapaxes(d.reshape(d.shape[:-2] + (m, r, n)), -3, -2)


def definition1_derivative(
    func: Callable[[np.ndarray], np.ndarray], q: np.ndarray, step: float = 1e-6
) -> np.ndarray:
    """dA/dq of Definition 1 (Eq 3) by central differences of ``func`` at ``q``.

    Builds the result literally as sum_ik E_ik (x) dA_ik/dq.
    """
    q = np.asarray(q, dtype=float)
    r = q.size
    a0 = np.atleast_2d(func(q))
    m, n = a0.shape
    grads = np.empty((m, n, r))
    for j in range(r):
        dq = np.zeros(r)
        dq[j] = step
        grads[:, :, j] = (np.atleast_2d(func(q + dq)) - np.atleast_2d(func(q - dq))) / (2 * step)
    out = np.zeros((m * r, n))
    for i in range(m):
        for k in range(n):
            out += np.kron(elementary(i, k, m, n), grads[i, k, :].reshape(r, 1))
    return out


def derivative_of_product(a: np.ndarray, da: np.ndarray, b: np.ndarray, db: np.ndarray) -> np.ndarray:
    """Theorem 1 (Eq 4): d(AB)/dq = (dA/dq) B + (A (x) I_r) dB/dq."""
    m = a.shape[0]
    r = da.shape[0] // m
    return da @ b + np.kron(a, np.eye(r)) @ db


def derivative_of_scalar_product(
    s: float, ds: np.ndarray, a: np.ndarray, da: np.ndarray
) -> np.ndarray:
    """Theorem 2 (Eq 11): d(sA)/dq = A (x) ds/dq + s dA/dq, with ds/dq an r x 1 column."""
    ds = np.asarray(ds, dtype=float).reshape(-1, 1)
    return np.kron(a, ds) + s * da


def derivative_of_kronecker(a: np.ndarray, da: np.ndarray, c: np.ndarray, dc: np.ndarray) -> np.ndarray:
    """Theorem 3 (Eq 14): d(A (x) C)/dq = (I_m (x) U_{s,r}) (dA/dq (x) C) + A (x) dC/dq."""
    m = a.shape[0]
    s = c.shape[0]
    r = da.shape[0] // m
    return np.kron(np.eye(m), commutation_matrix(s, r)) @ np.kron(da, c) + np.kron(a, dc)


def differential_a(da_dq: np.ndarray, dq: np.ndarray) -> np.ndarray:
    """Theorem 4a (Eq 27): dA = (I_m (x) dq^T) dA/dq."""
    dq = np.asarray(dq, dtype=float).reshape(-1, 1)
    r = dq.shape[0]
    m = da_dq.shape[0] // r
    return np.kron(np.eye(m), dq.T) @ da_dq


def differential_b(dat_dq: np.ndarray, dq: np.ndarray) -> np.ndarray:
    """Theorem 4b (Eq 28): dA = (dA^T/dq)^T (I_n (x) dq), given dA^T/dq of A in R^{m x n}."""
    dq = np.asarray(dq, dtype=float).reshape(-1, 1)
    r = dq.shape[0]
    n = dat_dq.shape[0] // r
    return dat_dq.T @ np.kron(np.eye(n), dq)


def skew(v: np.ndarray) -> np.ndarray:
    """Skew matrix ~v with ~v w = v x w; works on (..., 3) arrays."""
    v = np.asarray(v, dtype=float)
    out = np.zeros(v.shape[:-1] + (3, 3))
    out[..., 0, 1] = -v[..., 2]
    out[..., 0, 2] = v[..., 1]
    out[..., 1, 0] = v[..., 2]
    out[..., 1, 2] = -v[..., 0]
    out[..., 2, 0] = -v[..., 1]
    out[..., 2, 1] = v[..., 0]
    return out
