"""Independent references for the planar chain tests (no code shared with osim_emb.seeds.planar).

* :func:`recursive_newton_euler` — link-by-link Newton-Euler from the distal
  link, with vectors and cross products (no closed-form trigonometry).
* :func:`random_chain` — random chains with offset centres of mass, contacts
  and muscles spanning 1..n joints (some attached to the base).
"""

from __future__ import annotations

import numpy as np

from osim_emb.seeds.planar import Link, Muscle, PlanarChain


def cross2(a, b):
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def kcross(alpha, r):
    """(alpha k) x r for scalar alpha (...,) and planar r (..., 2)."""
    return alpha[..., None] * np.stack([-r[..., 1], r[..., 0]], axis=-1)


def rot(theta, p):
    """Rotate local points p (..., 2) by angles theta (...,)."""
    c, s = np.cos(theta), np.sin(theta)
    return np.stack([c * p[..., 0] - s * p[..., 1], s * p[..., 0] + c * p[..., 1]], axis=-1)


def recursive_newton_euler(chain, theta, dtheta, ddtheta, tension=None, R=None, gamma_R=None, g=None):
    """Joint forces and residual joint moments by the recursive Newton-Euler method.

    Returns ``phi`` (N, n, 2): force on link k-1 by link k at J_k, and ``Mres``
    (N, n): moment about J_k on link k by link k-1 other than the pin force,
    needed to produce the motion with the given muscle forces, weights and
    contacts (= required joint torque minus the muscles' moments).
    """
    n = chain.n
    N = theta.shape[0]
    g = chain.gravity if g is None else g
    th = np.hstack([np.full((N, 1), chain.base_angle), theta])
    w = np.hstack([np.zeros((N, 1)), dtheta])
    al = np.hstack([np.zeros((N, 1)), ddtheta])
    tension = np.zeros((N, chain.n_muscles)) if tension is None else tension
    R = np.zeros((N, n + 1)) if R is None else R
    gamma_R = np.zeros((N, n + 1)) if gamma_R is None else gamma_R
    links = chain.links
    # positions of the joints J_0..J_{n+1}
    J = np.zeros((N, n + 2, 2))
    J[:, 0] = -rot(th[:, 0], np.array([links[0].length, 0.0]))
    for i in range(1, n + 1):
        J[:, i + 1] = J[:, i] + rot(th[:, i], np.array([links[i].length, 0.0]))
    # accelerations of J_i and C_i
    aJ = np.zeros((N, n + 2, 2))
    aC = np.zeros((N, n + 1, 2))
    rC = np.zeros((N, n + 1, 2))
    for i in range(1, n + 1):
        c = np.array([links[i].com_distance * np.cos(links[i].com_angle),
                      links[i].com_distance * np.sin(links[i].com_angle)])
        rC[:, i] = rot(th[:, i], c)
        aC[:, i] = aJ[:, i] + kcross(al[:, i], rC[:, i]) - (w[:, i] ** 2)[:, None] * rC[:, i]
        rJ = J[:, i + 1] - J[:, i]
        aJ[:, i + 1] = aJ[:, i] + kcross(al[:, i], rJ) - (w[:, i] ** 2)[:, None] * rJ
    # applied forces on each link and their moments about J_i
    F = np.zeros((N, n + 1, 2))
    Mo = np.zeros((N, n + 1))
    for i in range(n + 1):
        Wt = np.array([0.0, -links[i].mass * g])
        F[:, i] += Wt
        Mo[:, i] += cross2(rC[:, i], np.broadcast_to(Wt, (N, 2))) if i > 0 else 0.0
        pR = rot(th[:, i], np.array([links[i].contact_distance * np.cos(links[i].contact_angle),
                                     links[i].contact_distance * np.sin(links[i].contact_angle)]))
        FR = R[:, i, None] * np.stack([np.cos(th[:, i] + gamma_R[:, i]), np.sin(th[:, i] + gamma_R[:, i])], axis=-1)
        F[:, i] += FR
        Mo[:, i] += cross2(pR, FR)
    for m_idx, mus in enumerate(chain.muscles):
        Pa = J[:, mus.link_a] + rot(th[:, mus.link_a], np.array(mus.point_a))
        Pb = J[:, mus.link_b] + rot(th[:, mus.link_b], np.array(mus.point_b))
        e = (Pa - Pb) / np.linalg.norm(Pa - Pb, axis=-1, keepdims=True)
        Fb = tension[:, m_idx, None] * e
        F[:, mus.link_b] += Fb
        Mo[:, mus.link_b] += cross2(Pb - J[:, mus.link_b], Fb)
        F[:, mus.link_a] -= Fb
        Mo[:, mus.link_a] += cross2(Pa - J[:, mus.link_a], -Fb)
    # backward recursion
    phi = np.zeros((N, n, 2))
    Mres = np.zeros((N, n))
    phi_next = np.zeros((N, 2))  # phi_{i,i+1}, force on link i by link i+1
    M_next = np.zeros(N)  # moment on link i+1 by link i (other than the pin force)
    for i in range(n, 0, -1):
        mi = links[i].mass
        phi_i_im1 = mi * aC[:, i] - F[:, i] - phi_next  # force on link i by link i-1
        rJ = J[:, i + 1] - J[:, i]
        # moment about J_i: Mres_i - M_next + Mo_i + rJ x phi_next = I_C al + rC x m aC
        Mi = links[i].inertia * al[:, i] + cross2(rC[:, i], mi * aC[:, i]) - Mo[:, i] - cross2(rJ, phi_next) + M_next
        phi[:, i - 1] = -phi_i_im1  # phi_{i-1,i}: force on link i-1 by link i
        Mres[:, i - 1] = Mi
        phi_next = -phi_i_im1  # becomes phi_{i-1,i} for link i-1
        M_next = Mi
    return phi, Mres


def random_chain(rng, n, n_muscles=5, base_muscles=True, name_prefix="m"):
    """A chain with generic link shapes, contacts and muscles spanning 1..n joints."""
    links = []
    for i in range(n + 1):
        links.append(Link(length=rng.uniform(0.2, 0.5), mass=rng.uniform(0.5, 3.0),
                          com_distance=rng.uniform(0.05, 0.3), com_angle=rng.uniform(-0.6, 0.6),
                          inertia=rng.uniform(0.005, 0.08), contact_distance=rng.uniform(0.0, 0.3),
                          contact_angle=rng.uniform(-1.0, 1.0)))
    muscles = []
    lo = 0 if base_muscles else 1
    spans = list(range(1, n + 1))
    for k in range(n_muscles):
        span = spans[k % len(spans)]
        a = int(rng.integers(lo, n - span + 1)) if n - span + 1 > lo else lo
        b = a + span
        if b > n:
            a, b = n - span, n
        pa = tuple(rng.uniform(-0.04, 0.25, 2))
        pb = tuple(rng.uniform(-0.04, 0.25, 2))
        # alternate which end is called "a"
        muscles.append(Muscle(f"{name_prefix}{k}", b, a, pb, pa) if k % 2 else Muscle(f"{name_prefix}{k}", a, b, pa, pb))
    return PlanarChain(tuple(links), tuple(muscles), base_angle=float(rng.uniform(-1.0, 1.0)))


def random_states(rng, chain, N):
    n = chain.n
    theta = rng.uniform(-np.pi, np.pi, (N, n))
    dtheta = rng.uniform(-4.0, 4.0, (N, n))
    ddtheta = rng.uniform(-20.0, 20.0, (N, n))
    tension = rng.uniform(0.0, 200.0, (N, chain.n_muscles))
    R = rng.uniform(0.0, 60.0, (N, n + 1))
    gamma = rng.uniform(-np.pi, np.pi, (N, n + 1))
    return theta, dtheta, ddtheta, tension, R, gamma


# ---------------------------------------------------------------------------- checks of the reference itself
def test_reference_single_pendulum_by_hand():
    """One link pinned at J_1: joint force and moment written by hand."""
    chain = PlanarChain((Link(0.2), Link(0.5, 2.0, 0.3, 0.0, 0.04)))
    th, w, a = 0.7, 1.3, -2.1
    phi, M = recursive_newton_euler(chain, np.array([[th]]), np.array([[w]]), np.array([[a]]))
    g = chain.gravity
    r = 0.3 * np.array([np.cos(th), np.sin(th)])
    aC = a * np.array([-r[1], r[0]]) - w**2 * r
    # force on link 1 by the base: m aC - m g ; phi_01 (on the base) is its opposite
    np.testing.assert_allclose(phi[0, 0], -(2.0 * aC - np.array([0.0, -2.0 * g])), rtol=1e-14)
    # moment about J_1: I_J a + m g x-offset
    np.testing.assert_allclose(M[0, 0], (0.04 + 2.0 * 0.3**2) * a + 2.0 * g * r[0], rtol=1e-14)


def test_reference_static_two_links_with_muscle_by_hand():
    """Two horizontal massless links, a muscle from the base to link 2 and a tip load: statics by hand."""
    chain = PlanarChain((Link(0.1), Link(0.4), Link(0.3, 0.0, 0.0, 0.0, 0.0, 0.3, 0.0)),
                        (Muscle("m", 0, 2, (0.1, 0.05), (0.1, 0.05)),))
    z = np.zeros((1, 2))
    T = np.array([[100.0]])
    R = np.array([[0.0, 0.0, 10.0]])
    gam = np.array([[0.0, 0.0, np.pi / 2]])  # upward tip load on link 2 at x = 0.7
    phi, M = recursive_newton_euler(chain, z, z, z, T, R, gam)
    # muscle: base point (0, 0.05) (J_0 at (-0.1, 0)), link-2 point (0.5, 0.05): force on link 2 = (-100, 0)
    # link 2: muscle (-100, 0) + load (0, 10) + force by link 1 = 0, so the force on link 1 by link 2 is (-100, 10)
    np.testing.assert_allclose(phi[0, 1], [-100.0, 10.0], atol=1e-12)
    # moment about J_2 (x = 0.4) needed on link 2: -(0.3 * 10) - (0.05 * 100)... muscle at y = 0.05 pulling -x
    np.testing.assert_allclose(M[0, 1], -(0.3 * 10.0) - 0.05 * 100.0, atol=1e-12)
