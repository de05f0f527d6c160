"""Definition 1, U_{m,n} and Theorems 1-4 of the seed against finite differences."""

import numpy as np
import pytest

from osim_emb.core import calculus as mc

R = 3  # length of q


def _matrix_fn(m, n, seed):
    """A smooth random matrix-valued function A(q) in R^{m x n}."""
    rng = np.random.default_rng(seed)
    c = rng.normal(size=(m, n, R))
    d = rng.normal(size=(m, n))
    return lambda q: np.sin(c @ q) + d * np.cos(q @ q / 3)


Q0 = np.array([0.3, -0.7, 1.1])


def test_definition1_layout_matches_tensor():
    a = _matrix_fn(2, 3, 0)
    d1 = mc.definition1_derivative(a, Q0)
    assert d1.shape == (2 * R, 3)
    # entry [i*r + j, k] = dA_ik/dq_j
    h = 1e-6
    for j in range(R):
        dq = np.zeros(R)
        dq[j] = h
        fd = (a(Q0 + dq) - a(Q0 - dq)) / (2 * h)
        np.testing.assert_allclose(d1[j::R, :], fd, atol=1e-8)
    t = mc.definition1_to_tensor(d1, R)
    np.testing.assert_allclose(mc.tensor_to_definition1(t), d1)


def test_commutation_matrix_properties():
    rng = np.random.default_rng(1)
    m, n, p, q = 2, 3, 4, 2
    a = rng.normal(size=(m, n))
    b = rng.normal(size=(p, q))
    u = mc.commutation_matrix(m, n)
    # permutation matrix
    assert np.allclose(u @ u.T, np.eye(m * n)) and set(np.unique(u)) == {0.0, 1.0}
    # vec(A^T) = U_{n,m}... check the Magnus-Neudecker relation U_{m,n} vec(A) = vec(A^T)
    np.testing.assert_allclose(mc.commutation_matrix(n, m).T @ mc.vec(a), mc.vec(a.T))
    # commutative rule of the Kronecker product used in Theorem 3 (Eq 20)
    np.testing.assert_allclose(mc.commutation_matrix(p, m) @ np.kron(a, b) @ mc.commutation_matrix(n, q),
                               np.kron(b, a))
    # Eq 87: U_{n,n} (grad f (x) I_n) = I_n (x) grad f
    g = rng.normal(size=(n, 1))
    np.testing.assert_allclose(mc.commutation_matrix(n, n) @ np.kron(g, np.eye(n)), np.kron(np.eye(n), g))


@pytest.mark.parametrize("shapes", [((2, 3), (3, 4)), ((4, 4), (4, 1)), ((1, 2), (2, 2))])
def test_theorem1_product(shapes):
    (m, n), (_, t) = shapes
    a, b = _matrix_fn(m, n, 2), _matrix_fn(n, t, 3)
    lhs = mc.definition1_derivative(lambda q: a(q) @ b(q), Q0)
    rhs = mc.derivative_of_product(a(Q0), mc.definition1_derivative(a, Q0), b(Q0), mc.definition1_derivative(b, Q0))
    np.testing.assert_allclose(rhs, lhs, atol=1e-7)


def test_theorem2_scalar_times_matrix():
    a = _matrix_fn(3, 2, 4)
    s = lambda q: np.exp(0.3 * q[0]) * np.sin(q[1] + q[2])
    ds = mc.definition1_derivative(lambda q: np.array([[s(q)]]), Q0)
    lhs = mc.definition1_derivative(lambda q: s(q) * a(q), Q0)
    rhs = mc.derivative_of_scalar_product(s(Q0), ds, a(Q0), mc.definition1_derivative(a, Q0))
    np.testing.assert_allclose(rhs, lhs, atol=1e-7)


@pytest.mark.parametrize("shapes", [((2, 3), (4, 2)), ((4, 4), (3, 1)), ((1, 1), (2, 3))])
def test_theorem3_kronecker(shapes):
    (m, n), (s_, p) = shapes
    a, c = _matrix_fn(m, n, 5), _matrix_fn(s_, p, 6)
    lhs = mc.definition1_derivative(lambda q: np.kron(a(q), c(q)), Q0)
    rhs = mc.derivative_of_kronecker(a(Q0), mc.definition1_derivative(a, Q0), c(Q0), mc.definition1_derivative(c, Q0))
    np.testing.assert_allclose(rhs, lhs, atol=1e-7)


def test_theorem4_differentials():
    a = _matrix_fn(3, 2, 7)
    dq = np.array([1e-6, -2e-6, 0.5e-6])
    exact = a(Q0 + dq) - a(Q0)
    da = mc.differential_a(mc.definition1_derivative(a, Q0), dq)
    db = mc.differential_b(mc.definition1_derivative(lambda q: a(q).T, Q0), dq)
    np.testing.assert_allclose(da, exact, atol=1e-11)
    np.testing.assert_allclose(db, exact, atol=1e-11)


def test_vec_unvec_and_skew():
    rng = np.random.default_rng(8)
    a = rng.normal(size=(3, 4))
    np.testing.assert_array_equal(mc.unvec(mc.vec(a), 3, 4), a)
    np.testing.assert_array_equal(mc.vec(a)[:3, 0], a[:, 0])
    v, w = rng.normal(size=3), rng.normal(size=3)
    np.testing.assert_allclose(mc.skew(v) @ w, np.cross(v, w))
