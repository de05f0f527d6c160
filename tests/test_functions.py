"""Joint-variable functions: derivatives, batching, serialisation, knot checks (no OpenSim needed).

Tolerances of the finite-difference checks: central differences with step
h = 1e-5 * max(1, |x|) have truncation error ~h^2 |f'''| / 6 and rounding
error ~1e-16 |f| / h, so gradients and Hessians must agree to
``FD_RTOL * max(1, |derivative|)`` with FD_RTOL = 2e-6.
"""

from __future__ import annotations

import json

import math

import numpy as np
import pytest

from osim_emb.core.functions import (
    Clamped, Composite, Constant, Fourier, FunctionError, GCVSpline, Jet, JointFunction, Linear, Multiplier,
    MultivariatePolynomial, NaturalCubicSpline, PiecewiseConstant, PiecewiseLinear, Polynomial,
    SimmSpline, SplineSurface, coordinate, function_from_dict, polynomial_exponents,
)

FD_STEP = 1e-5
FD_RTOL = 2e-6
BATCH_RTOL = 1e-14  # relative to the largest entry of the batch

RNG_SEED = 20240611

# Non-uniform knots used throughout.
KX = np.array([-1.2, -0.9, -0.2, 0.15, 0.9, 1.4, 2.6])
KY = np.array([0.3, -0.4, 0.1, 0.8, 0.65, -0.2, 0.5])


def _functions() -> dict[str, tuple[object, tuple[float, float], np.ndarray | None]]:
    """name -> (function, sampling box (lo, hi) per input, knots to keep away from or None)."""
    three = Linear([0.5, -0.3, 0.2], 0.1)
    inner_spline = Composite(SimmSpline(KX, KY), [three])
    mvp3 = MultivariatePolynomial(3, 2, np.linspace(-1.0, 1.0, 10))
    nested = Composite(
        MultivariatePolynomial(2, 3, np.linspace(0.3, -0.6, 10)),
        [inner_spline, Multiplier(1.7, mvp3)],
    )
    deeper = Composite(Fourier(2.5, 0.1, [0.3, -0.2], [0.05, 0.4], secular=0.2), [nested])
    grid_x = np.linspace(-1.0, 1.0, 6)
    grid_y = np.linspace(0.0, 2.0, 7)
    surface = SplineSurface(grid_x, grid_y, np.sin(grid_x[:, None] * 1.3 + grid_y[None, :] ** 2 / 3))
    return {
        "Constant": (Constant(2.5), (-2, 2), None),
        "Constant3": (Constant(-1.0, n_inputs=3), (-2, 2), None),
        "Linear1": (Linear([1.7], -0.3), (-2, 2), None),
        "Linear3": (three, (-2, 2), None),
        "coordinate": (coordinate(1, 3), (-2, 2), None),
        "Polynomial": (Polynomial([0.5, -1.0, 2.0, 0.3]), (-2, 2), None),
        "Fourier": (Fourier(1.7, 0.2, [0.5, -0.1, 0.05], [0.3, 0.2, -0.02], secular=0.4), (-2, 2), None),
        "Multiplier": (Multiplier(-2.5, Polynomial([1.0, 0.0, -3.0])), (-2, 2), None),
        "Multiplier2": (Multiplier(0.7, MultivariatePolynomial(2, 3, np.arange(10.0) / 7)), (-2, 2), None),
        "SimmSpline2": (SimmSpline([0.0, 2.61799], [0.0, -0.633555]), (-1, 3.5), None),
        "SimmSpline3": (SimmSpline([-0.174533, 0.0, 0.436332], [-0.174533, 0.05, 0.436332]), (-0.5, 0.8), None),
        "SimmSpline4": (SimmSpline(KX[:4], KY[:4]), (-1.5, 0.5), KX[:4]),
        "SimmSpline7": (SimmSpline(KX, KY), (-1.6, 3.0), KX),
        "NaturalCubicSpline": (NaturalCubicSpline(KX, KY), (-1.6, 3.0), KX),
        "GCVSpline1": (GCVSpline(KX, KY, half_order=1), (-1.6, 3.0), KX),
        "GCVSpline2": (GCVSpline(KX, KY, half_order=2), (-1.6, 3.0), KX),
        "GCVSpline3": (GCVSpline(KX, KY, half_order=3), (-1.6, 3.0), KX),
        "GCVSpline4": (GCVSpline(np.linspace(0, 3, 9), np.cos(np.linspace(0, 3, 9)), half_order=4),
                       (-0.5, 3.5), np.linspace(0, 3, 9)),
        "PiecewiseLinear": (PiecewiseLinear(KX, KY), (-1.6, 3.0), KX),
        "PiecewiseConstant": (PiecewiseConstant(KX, KY), (-1.6, 3.0), KX),
        "MultivariatePolynomial1": (MultivariatePolynomial(1, 4, [0.1, -0.5, 0.3, 0.2, -0.05]), (-2, 2), None),
        "MultivariatePolynomial2": (MultivariatePolynomial(2, 3, np.linspace(-1, 1, 10)), (-1.5, 1.5), None),
        "MultivariatePolynomial3": (mvp3, (-1.5, 1.5), None),
        "Clamped": (Clamped(SimmSpline(KX, KY), -0.5, 1.8), (-1.6, 3.0), np.r_[KX, -0.5, 1.8]),
        "Composite1": (Composite(Polynomial([1.0, -0.5, 0.2]), [SimmSpline(KX, KY)]), (-1.6, 3.0), KX),
        "Composite_nested": (nested, (-1.0, 1.0), None),
        "Composite_deeper": (deeper, (-1.0, 1.0), None),
        "SplineSurface": (surface, (-0.9, 0.9), None),
        # compositions the program evaluates with external nodes inside (their own evaluate, the kernel's chain rule)
        "Composite_surface": (Composite(Multiplier(0.5, surface), [Linear([0.8, 0.0], 0.0), Linear([0.3, 0.5], 1.0)]),
                              (-0.9, 0.9), None),
        "Composite_user_type": (Composite(Multiplier(-1.5, _UserCubic(0.7)), [Clamped(SimmSpline(KX, KY), -0.5, 1.8)]),
                                (-1.6, 3.0), np.r_[KX, -0.5, 1.8]),
        "Multiplier_of_constant": (Multiplier(2.0, Constant(3.0)), (-2, 2), None),
        "Clamped_to_a_point": (Clamped(SimmSpline(KX, KY), 0.3, 0.3), (-1.6, 3.0), None),
    }


class _UserCubic(JointFunction):
    """A user-defined type the compiled program does not know: f(t) = a t^3 (an external node)."""

    type_name = "TestUserCubic"
    n_inputs = 1

    def __init__(self, a: float):
        self.a = float(a)

    def _evaluate(self, x, order, cache):
        t = x[:, 0]
        return Jet(self.a * t ** 3, 3 * self.a * t[:, None] ** 2 if order >= 1 else None,
                   6 * self.a * t[:, None, None] if order >= 2 else None)

    def parameters(self):
        return {"a": self.a}


FUNCTIONS = _functions()


def _sample(f, box, knots, n=40, seed=RNG_SEED):
    """Points in the box, at least 1e-3 away from any knot (in every coordinate)."""
    rng = np.random.default_rng(seed)
    pts = rng.uniform(box[0], box[1], size=(4 * n, f.n_inputs))
    if knots is not None:
        far = np.all(np.min(np.abs(pts[:, :, None] - np.asarray(knots)[None, None, :]), axis=2) > 1e-3, axis=1)
        pts = pts[far]
    return pts[:n]


def _fd_gradient(f, x, order):
    """Central differences of the value (order 0) or gradient (order 1) along each input."""
    n, k = x.shape
    cols = []
    for i in range(k):
        h = FD_STEP * np.maximum(1.0, np.abs(x[:, i]))
        xp, xm = x.copy(), x.copy()
        xp[:, i] += h
        xm[:, i] -= h
        jp, jm = f.evaluate(xp, order=order), f.evaluate(xm, order=order)
        a, b = (jp.value, jm.value) if order == 0 else (jp.gradient, jm.gradient)
        cols.append((a - b) / (2 * h if order == 0 else 2 * h[:, None]))
    return np.stack(cols, axis=1)  # (N, k) or (N, k_diff, k_out)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_gradient_and_hessian_match_finite_differences(name):
    f, box, knots = FUNCTIONS[name]
    x = _sample(f, box, knots)
    jet = f.evaluate(x, order=2)
    n, k = x.shape
    assert jet.value.shape == (n,)
    assert jet.gradient.shape == (n, k)
    assert jet.hessian.shape == (n, k, k)
    fd_g = _fd_gradient(f, x, 0)
    np.testing.assert_allclose(jet.gradient, fd_g, rtol=0, atol=FD_RTOL * max(1.0, np.abs(fd_g).max()),
                               err_msg=f"{name}: gradient vs central differences of the value")
    fd_h = _fd_gradient(f, x, 1)  # fd_h[n, i, j] = d grad_j / d x_i
    np.testing.assert_allclose(jet.hessian, fd_h, rtol=0, atol=FD_RTOL * max(1.0, np.abs(fd_h).max()),
                               err_msg=f"{name}: Hessian vs central differences of the gradient")
    np.testing.assert_allclose(jet.hessian, np.swapaxes(jet.hessian, 1, 2), rtol=1e-14, atol=1e-14,
                               err_msg=f"{name}: Hessian symmetric")


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_batch_equals_single_points_and_orders(name):
    f, box, _ = FUNCTIONS[name]
    rng = np.random.default_rng(1)
    x = rng.uniform(box[0] - 0.3, box[1] + 0.3, size=(25, f.n_inputs))  # includes extrapolation
    batch = f.evaluate(x, order=2)
    for i in range(x.shape[0]):
        single = f.evaluate(x[i], order=2)
        for part in ("value", "gradient", "hessian"):
            a, b = getattr(batch, part)[i], getattr(single, part)[0]
            scale = max(1.0, np.abs(getattr(batch, part)).max())  # summation order may differ in BLAS
            np.testing.assert_allclose(a, b, rtol=0, atol=BATCH_RTOL * scale, err_msg=f"{name} {part} point {i}")
    j0, j1 = f.evaluate(x, order=0), f.evaluate(x, order=1)
    assert j0.gradient is None and j0.hessian is None and j1.hessian is None
    np.testing.assert_allclose(j0.value, batch.value, rtol=BATCH_RTOL, atol=BATCH_RTOL)
    np.testing.assert_allclose(j1.gradient, batch.gradient, rtol=BATCH_RTOL, atol=BATCH_RTOL)
    np.testing.assert_allclose(f(x), batch.value, rtol=BATCH_RTOL, atol=BATCH_RTOL)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_dict_round_trip(name):
    f, box, _ = FUNCTIONS[name]
    d = json.loads(json.dumps(f.to_dict()))  # JSON-compatible
    g = function_from_dict(d)
    assert g == f and hash(g) == hash(f)
    assert type(g) is type(f)
    x = np.random.default_rng(2).uniform(box[0], box[1], size=(7, f.n_inputs))
    a, b = f.evaluate(x), g.evaluate(x)
    for part in ("value", "gradient", "hessian"):
        np.testing.assert_array_equal(getattr(a, part), getattr(b, part))
    assert isinstance(f.describe(), str) and f.describe()


def test_shared_inner_function_is_evaluated_once():
    """A function used twice in a Composite is one node of the compiled program the Composite evaluates through."""
    from osim_emb.core.functions.program import function_program
    inner = SimmSpline(KX, KY)
    f = Composite(Linear([1.0, 2.0], 0.0), [inner, inner])
    x = np.linspace(-1, 2, 5)
    jet = f.evaluate(x, cache={})
    assert function_program(f).n_nodes == 3  # the input, the spline, the linear outer function
    np.testing.assert_allclose(jet.value, 3 * inner(x))


# --- semantics -----------------------------------------------------------------------------

def test_simmspline_two_knots_is_a_line():
    s = SimmSpline([0.0, 2.0], [1.0, 5.0])
    t = np.array([-1.0, 0.0, 0.7, 2.0, 3.5])
    np.testing.assert_allclose(s(t), 1.0 + 2.0 * t, rtol=1e-15)
    np.testing.assert_allclose(s.derivative(t, 1), 2.0)
    np.testing.assert_allclose(s.derivative(t, 2), 0.0)


def test_simmspline_three_knots_is_the_parabola():
    x, y = np.array([-0.4, 0.1, 1.3]), np.array([0.2, -0.5, 0.9])
    p = np.polyfit(x, y, 2)
    s = SimmSpline(x, y)
    t = np.linspace(x[0], x[-1], 17)
    np.testing.assert_allclose(s(t), np.polyval(p, t), atol=1e-14)
    np.testing.assert_allclose(s.derivative(t, 1), np.polyval(np.polyder(p), t), atol=1e-13)
    np.testing.assert_allclose(s.derivative(t[1:-1], 2), 2 * p[0], atol=1e-13)


def test_simmspline_four_knots_is_the_cubic():
    x, y = KX[:4], KY[:4]
    p = np.polyfit(x, y, 3)
    s = SimmSpline(x, y)
    t = np.linspace(x[0], x[-1], 23)
    np.testing.assert_allclose(s(t), np.polyval(p, t), atol=1e-13)
    np.testing.assert_allclose(s.derivative(t, 1), np.polyval(np.polyder(p), t), atol=1e-12)
    np.testing.assert_allclose(s.derivative(t, 2), np.polyval(np.polyder(p, 2), t), atol=1e-11)


def test_simmspline_fmm_end_conditions_and_continuity():
    s = SimmSpline(KX, KY)
    np.testing.assert_allclose(s(KX), KY, atol=1e-15)
    # third derivative on the first / last interval = that of the cubic through the end four knots
    for sl, interval in ((slice(0, 4), 0), (slice(-4, None), len(KX) - 2)):
        cubic = np.polyfit(KX[sl], KY[sl], 3)
        np.testing.assert_allclose(6 * s.d[interval], 6 * cubic[0], rtol=1e-10)
    # C2 at interior knots
    for xi in KX[1:-1]:
        for k in (0, 1, 2):
            left, right = s.derivative(xi - 1e-9, k), s.derivative(xi + 1e-9, k)
            assert abs(left - right) < 1e-6 * max(1, abs(left)), (xi, k)


def test_simmspline_extrapolation_and_end_tolerance():
    s = SimmSpline(KX, KY)
    b0, bn = s.derivative(KX[0], 1), s.derivative(KX[-1], 1)
    t = np.array([KX[0] - 2.0, KX[0] - 1e-3, KX[-1] + 1e-3, KX[-1] + 5.0])
    expected = np.r_[KY[0] + (t[:2] - KX[0]) * b0, KY[-1] + (t[2:] - KX[-1]) * bn]
    np.testing.assert_allclose(s(t), expected, rtol=1e-15)
    np.testing.assert_array_equal(s.derivative(t, 2), 0.0)
    # within 2e-13 of an end knot (inside) the end value and second derivative are returned exactly
    assert s(KX[0] + 1e-13) == KY[0] and s(KX[-1] - 1e-13) == KY[-1]
    assert s.derivative(KX[0] + 1e-13, 2) == s.derivative(KX[0], 2) == 2 * s.c[0] != 0.0


def test_natural_cubic_spline_is_natural_and_equals_gcv_cubic():
    n = NaturalCubicSpline(KX, KY)
    np.testing.assert_allclose(n(KX), KY, atol=1e-15)
    np.testing.assert_allclose(n.derivative(KX[[0, -1]], 2), 0.0, atol=1e-13)
    t = np.array([-3.0, -1.5, 2.9, 4.0])
    np.testing.assert_array_equal(n.derivative(t, 2), 0.0)
    g = GCVSpline(KX, KY, half_order=2)
    tt = np.linspace(-2, 3.5, 101)
    for k in (0, 1, 2):
        np.testing.assert_allclose(n.derivative(tt, k), g.derivative(tt, k), atol=1e-13)
    # ... and differs from the SimmSpline of the same knots (OpenSim's "NaturalCubicSpline")
    assert abs(SimmSpline(KX, KY).derivative(KX[0], 2)) > 0.1


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_gcv_spline_interpolates_and_continues_as_taylor_polynomial(m):
    x = np.linspace(0.0, 3.0, 2 * m + 3) + 0.05 * np.sin(np.arange(2 * m + 3))
    y = np.cos(1.3 * x)
    g = GCVSpline(x, y, half_order=m)
    np.testing.assert_allclose(g(x), y, atol=1e-13)
    def end_derivative(first, j):  # s^(j) at an end knot from the local pieces a[i, p] tau^p (tau = 0 or 1)
        a, h, tau = (g._coef[0], g._h[0], 0.0) if first else (g._coef[-1], g._h[-1], 1.0)
        return sum(a[p] * math.perm(p, j) * tau ** (p - j) for p in range(j, 2 * m)) / h ** j

    # derivatives m..2m-2 vanish at the end knots (checked on the internal polynomial pieces)
    for j in range(m, 2 * m - 1):
        np.testing.assert_allclose([end_derivative(True, j), end_derivative(False, j)], 0.0, atol=1e-9)
    # outside: Taylor polynomial of degree m-1 at the end knot
    for end, direction in ((x[0], -1.0), (x[-1], 1.0)):
        dt = direction * np.array([0.1, 0.7])
        ders = [end_derivative(direction < 0, j) for j in range(m)]
        taylor = sum(ders[j] * dt ** j / np.prod(range(1, j + 1)) for j in range(m))
        np.testing.assert_allclose(g(end + dt), taylor, atol=1e-12)
    if m == 1:  # linear: derivative is the right-hand slope at knots, zero outside and from the last knot on
        np.testing.assert_allclose(g.derivative(x[1], 1), (y[2] - y[1]) / (x[2] - x[1]), rtol=1e-12)
        assert g.derivative(x[-1], 1) == 0.0 and g.derivative(x[0] - 1, 1) == 0.0


def test_gcv_spline_rejects_smoothing_and_bad_half_order():
    with pytest.raises(FunctionError, match="error_variance=0.001 is not supported"):
        GCVSpline(KX, KY, half_order=2, error_variance=1e-3)
    with pytest.raises(FunctionError, match="generalized cross-validation"):
        GCVSpline(KX, KY, half_order=2, error_variance=-1)
    with pytest.raises(FunctionError, match="half_order must be a positive integer"):
        GCVSpline(KX, KY, half_order=0)
    with pytest.raises(FunctionError, match="needs at least 6 knots, got 5"):
        GCVSpline(KX[:5], KY[:5], half_order=3)


def test_piecewise_linear_and_constant():
    pl, pc = PiecewiseLinear(KX, KY), PiecewiseConstant(KX, KY)
    mids = 0.5 * (KX[1:] + KX[:-1])
    slopes = np.diff(KY) / np.diff(KX)
    np.testing.assert_allclose(pl(mids), 0.5 * (KY[1:] + KY[:-1]), atol=1e-15)
    np.testing.assert_allclose(pl.derivative(mids, 1), slopes, rtol=1e-14)
    np.testing.assert_array_equal(pl.derivative(mids, 2), 0.0)
    np.testing.assert_allclose(pl([KX[0] - 1, KX[-1] + 1]), [KY[0] - slopes[0], KY[-1] + slopes[-1]], rtol=1e-14)
    np.testing.assert_array_equal(pc(mids), KY[:-1])  # the left knot's value
    np.testing.assert_array_equal(pc([KX[0] - 1, KX[0], KX[-1], KX[-1] + 1]), KY[[0, 0, -1, -1]])
    np.testing.assert_array_equal(pc.derivative(mids, 1), 0.0)


def test_repeated_knot_accepted_where_opensim_floors_the_spacing():
    # MoBL's Schutte1993 passive force-length curves repeat x = 1.15; OpenSim floors the spacing at 1e-7.
    x = [1.1, 1.14, 1.15, 1.15, 1.25, 1.35]
    y = [0.0, 0.0, 0.0, 0.0, 0.035, 0.12]
    for cls in (SimmSpline, PiecewiseLinear, PiecewiseConstant):
        f = cls(x, y)
        assert np.all(np.isfinite(f.evaluate(np.linspace(1.0, 1.4, 41)).gradient))
        if cls is PiecewiseConstant:
            np.testing.assert_array_equal(f([1.12, 1.2, 1.3]), [0.0, 0.0, 0.035])
        else:
            np.testing.assert_allclose(f([1.1, 1.25, 1.35]), [0.0, 0.035, 0.12], atol=1e-15)


def test_multivariate_polynomial_term_order():
    np.testing.assert_array_equal(polynomial_exponents(2, 2), [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0)])
    assert polynomial_exponents(3, 3).shape == (20, 3)
    p = MultivariatePolynomial(2, 2, [1, 2, 3, 4, 5, 6])
    x, y = 0.3, -0.7
    jet = p.evaluate([x, y])
    assert jet.value[0] == pytest.approx(1 + 2 * y + 3 * y ** 2 + 4 * x + 5 * x * y + 6 * x ** 2, rel=1e-15)
    np.testing.assert_allclose(jet.gradient[0], [4 + 5 * y + 12 * x, 2 + 6 * y + 5 * x], rtol=1e-15)
    np.testing.assert_allclose(jet.hessian[0], [[12, 5], [5, 6]], rtol=1e-15)
    assert MultivariatePolynomial(2, 0, [3.0]).is_constant


@pytest.mark.parametrize("dimension,order", [(1, 0), (1, 6), (2, 3), (3, 6), (4, 5), (5, 6), (6, 2)])
def test_multivariate_polynomial_kernel_matches_the_power_sum(dimension, order):
    """The compiled kernel (monomial recurrence, value and gradient alone without ``second``) against the sum
    of c_t prod_v x_v^e_tv and its analytic derivatives written with numpy's powers."""
    from osim_emb.core.functions.kernels import multivariate_polynomial
    rng = np.random.default_rng(dimension * 10 + order)
    e = polynomial_exponents(dimension, order)
    c = rng.normal(size=e.shape[0])
    p = MultivariatePolynomial(dimension, order, c)
    x = rng.uniform(-1.5, 1.5, size=(7, dimension))

    def power(base, k):
        return np.where(k >= 0, base ** np.maximum(k, 0), 0.0)

    for xi in x:
        value = np.sum(c * np.prod(xi ** e, axis=1))
        grad = np.array([np.sum(c * e[:, a] * np.prod(power(xi, e - np.eye(dimension, dtype=int)[a]), axis=1))
                         for a in range(dimension)])
        hess = np.array([[np.sum(c * e[:, a] * (e[:, b] - (a == b))
                                 * np.prod(power(xi, e - np.eye(dimension, dtype=int)[a]
                                                 - np.eye(dimension, dtype=int)[b]), axis=1))
                          for b in range(dimension)] for a in range(dimension)])
        jet = p.evaluate(xi[None])
        scale = np.sum(np.abs(c) * np.prod(np.abs(xi) ** e, axis=1)) + 1.0
        assert jet.value[0] == pytest.approx(value, abs=1e-14 * scale)
        np.testing.assert_allclose(jet.gradient[0], grad, rtol=0, atol=1e-13 * order * scale)
        np.testing.assert_allclose(jet.hessian[0], hess, rtol=0, atol=1e-13 * order ** 2 * scale)
        ints, flts = (np.array(a) for a in p.node_parameters())
        first = np.full(1 + dimension + dimension ** 2, np.nan)
        multivariate_polynomial(ints, flts, 1, 0, int(ints[0]), xi.copy(), first, False, np.empty(int(ints[0])))
        np.testing.assert_array_equal(first[:1 + dimension], np.concatenate([jet.value, jet.gradient[0]]))


def test_clamped_has_zero_slope_outside():
    f = SimmSpline(KX, KY)
    c = Clamped(f, -0.5, 1.8)
    t = np.array([-1.0, -0.5, 0.3, 1.8, 2.5])
    jet = c.evaluate(t)
    np.testing.assert_array_equal(jet.value, f(np.clip(t, -0.5, 1.8)))
    np.testing.assert_array_equal(jet.gradient[[0, 4], 0], 0.0)
    np.testing.assert_array_equal(jet.hessian[[0, 4], 0, 0], 0.0)
    np.testing.assert_array_equal(jet.gradient[1:4, 0], f.derivative(t[1:4], 1))


def test_spline_surface_interpolates_grid():
    gx, gy = np.linspace(-1, 1, 6), np.linspace(0, 2, 7)
    z = np.sin(gx[:, None] * 1.3 + gy[None, :] ** 2 / 3)
    s = SplineSurface(gx, gy, z)
    X, Y = np.meshgrid(gx, gy, indexing="ij")
    np.testing.assert_allclose(s(np.c_[X.ravel(), Y.ravel()]), z.ravel(), atol=1e-14)


# --- error messages ------------------------------------------------------------------------

BAD = [
    (lambda: SimmSpline([0.0, 0.7, 0.2, 0.5], [1, 2, 3, 4]),
     r"SimmSpline: knots are decreasing at x\[2\]=0.2 < x\[1\]=0.7"),
    (lambda: NaturalCubicSpline([0.0, 0.7, 0.7], [1, 2, 3]), r"not strictly increasing at x\[2\]=0.7 <= x\[1\]=0.7"),
    (lambda: SimmSpline([0.0, 0.7, 0.7, 0.6], [1, 2, 3, 4]), r"SimmSpline: knots are decreasing at x\[3\]=0.6 < x\[2\]=0.7"),
    (lambda: SimmSpline([0.0], [1.0]), r"SimmSpline: needs at least 2 knots, got 1"),
    (lambda: SimmSpline([0.0, 1.0, 2.0], [1.0, 2.0]), r"x has 3 values but y has 2"),
    (lambda: SimmSpline([0.0, np.nan, 2.0], [1.0, 2.0, 3.0]), r"x\[1\]=nan is not finite"),
    (lambda: SimmSpline([0.0, 1.0, 2.0], [1.0, np.inf, 3.0]), r"y\[1\]=inf is not finite"),
    (lambda: SimmSpline([[0.0, 1.0]], [[1.0, 2.0]]), r"one-dimensional"),
    (lambda: SimmSpline(["a", "b"], [1, 2]), r"knots must be numbers"),
    (lambda: NaturalCubicSpline([0.0, 1.0, 0.5], [1, 2, 3]), r"NaturalCubicSpline: knots are not strictly"),
    (lambda: PiecewiseLinear([1.0, 0.0], [1, 2]), r"PiecewiseLinear: knots are decreasing at x\[1\]=0.0 < x\[0\]=1.0"),
    (lambda: GCVSpline([0, 1, 2, 2, 3, 4], [0] * 6, half_order=2), r"GCVSpline: knots are not strictly increasing"),
    (lambda: PiecewiseConstant([3.0], [1.0]), r"PiecewiseConstant: needs at least 2 knots"),
    (lambda: GCVSpline([0, 1, 2, 3, 2.5, 5], [0] * 6, half_order=2), r"GCVSpline: knots are not strictly .* x\[4\]=2.5"),
    (lambda: MultivariatePolynomial(2, 2, [1, 2, 3]), r"dimension 2, order 2 needs 6 coefficients, got 3"),
    (lambda: MultivariatePolynomial(0, 2, [1]), r"dimension must be a positive integer"),
    (lambda: Clamped(SimmSpline(KX, KY), 1.0, 0.0), r"need lower <= upper"),
    (lambda: Clamped(Linear([1.0, 2.0]), 0.0, 1.0), r"must take one input"),
    (lambda: SplineSurface([0, 1, 2, 3], [0, 1, 2, 3], np.zeros((4, 3))), r"expected \(len\(x\), len\(y\)\)"),
    (lambda: SplineSurface([0, 1, 3, 2], [0, 1, 2, 3], np.zeros((4, 4))), r"SplineSurface \(x grid\): knots are not"),
]


@pytest.mark.parametrize("make, message", BAD, ids=[m for _, m in BAD])
def test_bad_parameters_raise_function_error(make, message):
    with pytest.raises(FunctionError, match=message):
        make()


def test_unknown_type_in_dict():
    with pytest.raises(FunctionError, match="unknown function type 'NoSuch'"):
        function_from_dict({"type": "NoSuch"})


def test_compositions_run_the_program_with_external_nodes_inside():
    """Multiplier, Composite and Clamped evaluate through their compiled program; a type the program cannot flatten
    enters as an external node of its input nodes (its own evaluate, the kernel's chain rule); constants fold."""
    from osim_emb.core.functions.program import function_program
    prog = function_program(FUNCTIONS["Composite_surface"][0])
    assert [type(f).__name__ for f in prog.externals] == ["SplineSurface"] and prog.external_inputs[0].size == 2
    prog = function_program(FUNCTIONS["Composite_user_type"][0])
    assert [type(f).__name__ for f in prog.externals] == ["_UserCubic"]
    assert function_program(FUNCTIONS["Multiplier_of_constant"][0]).n_nodes == 2  # the constants 3 and 6
    assert function_program(FUNCTIONS["Clamped_to_a_point"][0]).n_nodes == 2  # 0.3 and the spline there
    np.testing.assert_array_equal(FUNCTIONS["Clamped_to_a_point"][0](np.array([-1.0, 2.0])),
                                  SimmSpline(KX, KY)(np.array([0.3, 0.3])))


def test_an_affine_function_describes_its_nonzero_terms():
    """`inspect` on a 29-coordinate model printed '0*x1 + ... + 1*x10 + ... + 0*x29 + 0' for one coordinate."""
    from osim_emb.core.functions.basic import Linear
    assert Linear([0.0] * 9 + [1.0] + [0.0] * 19).describe() == "x10"
    assert Linear([2.0, 0.0, -1.0], 0.1).describe() == "2*x1 - x3 + 0.1"
    assert Linear([0.0, 0.0]).describe() == "0"
    assert Linear([-0.5], -2.0).describe() == "-0.5*x1 - 2"


def test_inspect_names_the_coordinates_in_the_joint_functions(models_dir, capsys):
    from osim_emb.cli.main import main
    assert main(["inspect", str(models_dir / "arm26.osim")]) == 0
    out = capsys.readouterr().out
    assert "f = r_elbow_flex" in out and "*x" not in out
