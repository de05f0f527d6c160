"""The joint-variable functions reproduce OpenSim 4.6's Function evaluation.

Each case builds an OpenSim function the way a model file does (an XML
element read by ``OpenSimObject.makeObjectFromFile``, so the same
``updateFromXMLNode`` path as model loading) and the matching osim_emb
function, and compares ``calcValue`` and ``calcDerivative`` of orders 1 and 2
(every derivative component, as ``osim.StdVectorInt``) at the knots, at many
points between them, near the end knots and outside the knot range.

Tolerance: |ours - OpenSim| <= 1e-12 * max(1, max |OpenSim|) for each
derivative order of a function (relative where its values are large); the
spline coefficients are computed by different (equally accurate) algorithms,
so agreement is to rounding, not bitwise.

Run ``python tests/test_functions_opensim.py`` to print the worst error of each case.
"""

from __future__ import annotations

import atexit
import itertools
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

osim = pytest.importorskip("opensim", reason="opensim is not installed (pip install 'osim-emb[opensim]')")

from osim_emb.core.functions import (  # noqa: E402
    Constant, GCVSpline, Linear, Multiplier, MultivariatePolynomial, PiecewiseConstant,
    PiecewiseLinear, Polynomial, SimmSpline,
)

pytestmark = pytest.mark.opensim

TOL = 1e-12

_KEEP_ALIVE: list = []  # OpenSim objects must outlive the proxies we hand out
_TMP = Path(tempfile.mkdtemp(prefix="osim_emb_fn_"))
atexit.register(shutil.rmtree, _TMP, ignore_errors=True)
_COUNTER = itertools.count()


def _numbers(a) -> str:
    return " ".join(repr(float(v)) for v in np.atleast_1d(a))


def load_function(element: str):
    """An OpenSim Function read from one XML element (as in a model file)."""
    path = _TMP / f"f{next(_COUNTER)}.xml"
    path.write_text('<?xml version="1.0" encoding="UTF-8" ?>\n'
                    f'<OpenSimDocument Version="40000">{element}</OpenSimDocument>\n')
    obj = osim.OpenSimObject.makeObjectFromFile(str(path))
    _KEEP_ALIVE.append(obj)
    f = osim.Function.safeDownCast(obj)
    assert f is not None, element
    return f


def knots_xml(tag: str, x, y, extra: str = "") -> str:
    return f'<{tag} name="f">{extra}<x>{_numbers(x)}</x><y>{_numbers(y)}</y></{tag}>'


def opensim_jet(f, pts: np.ndarray):
    """calcValue, calcDerivative([a]) and calcDerivative([a, b]) at each point (N, k)."""
    n, k = pts.shape
    comps1 = [osim.StdVectorInt([a]) for a in range(k)]
    comps2 = [[osim.StdVectorInt([a, b]) for b in range(k)] for a in range(k)]
    val = np.empty(n)
    grad = np.empty((n, k))
    hess = np.empty((n, k, k))
    for i, p in enumerate(pts):
        v = osim.Vector(1, float(p[0])) if k == 1 else osim.Vector([float(c) for c in p])
        val[i] = f.calcValue(v)
        for a in range(k):
            grad[i, a] = f.calcDerivative(comps1[a], v)
            for b in range(k):
                hess[i, a, b] = f.calcDerivative(comps2[a][b], v)
    return val, grad, hess


def knot_points(x, n_between=120, seed=0) -> np.ndarray:
    """Knots, midpoints, random points between them, points near the ends and outside."""
    x = np.asarray(x, dtype=float)
    span = x[-1] - x[0]
    rng = np.random.default_rng(seed)
    near = [x[0] + 1e-13, x[0] - 1e-13, x[-1] - 1e-13, x[-1] + 1e-13, x[0] + 1e-9, x[-1] - 1e-9]
    outside = np.r_[x[0] - span * rng.uniform(1e-6, 1.0, 6), x[-1] + span * rng.uniform(1e-6, 1.0, 6)]
    pts = np.r_[x, 0.5 * (x[1:] + x[:-1]), rng.uniform(x[0], x[-1], n_between), near, outside]
    return pts[:, None]


def box_points(k, lo=-2.0, hi=2.0, n=60, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(lo, hi, size=(n, k))


def worst_errors(ours, opensim_f, pts, orders=(0, 1, 2)) -> dict[int, float]:
    """Worst scaled error |ours - OpenSim| / max(1, max |OpenSim|) for each derivative order."""
    jet = ours.evaluate(pts, order=2)
    theirs = opensim_jet(opensim_f, pts)
    mine = (jet.value, jet.gradient, jet.hessian)
    out = {}
    for order in orders:
        scale = max(1.0, float(np.abs(theirs[order]).max()))
        out[order] = float(np.abs(mine[order] - theirs[order]).max()) / scale
    return out


def assert_matches(ours, opensim_f, pts, label, orders=(0, 1, 2), tol=TOL):
    errs = worst_errors(ours, opensim_f, pts, orders)
    bad = {o: e for o, e in errs.items() if not e <= tol}
    assert not bad, f"{label}: scaled errors vs OpenSim above {tol:g} for derivative orders {bad}"
    return errs


# --- cases: label -> (our function, OpenSim function factory, points) ------------------------

NONUNIFORM_X = np.array([-1.2, -0.9, -0.2, 0.15, 0.9, 1.4, 2.6])
NONUNIFORM_Y = np.array([0.3, -0.4, 0.1, 0.8, 0.65, -0.2, 0.5])


def _spline_cases():
    cases = {}
    sets = {
        2: ([0.0, 2.61799], [0.0, -0.633555]),
        3: ([-0.174533, 0.0, 0.436332], [-0.174533, 0.05, 0.436332]),
        4: (NONUNIFORM_X[:4], NONUNIFORM_Y[:4]),
        7: (NONUNIFORM_X, NONUNIFORM_Y),
    }
    for n, (x, y) in sets.items():
        cases[f"SimmSpline-{n}"] = (SimmSpline(x, y), lambda x=x, y=y: load_function(knots_xml("SimmSpline", x, y)),
                                    knot_points(x))
    # large values and tiny spacing near the floor's scale
    xb = np.array([0.0, 1e-5, 3e-5, 0.2, 0.21, 5.0])
    yb = np.array([100.0, 100.5, 99.0, -250.0, -249.0, 1000.0])
    cases["SimmSpline-6-large"] = (SimmSpline(xb, yb), lambda: load_function(knots_xml("SimmSpline", xb, yb)),
                                   knot_points(xb))
    cases["NaturalCubicSpline-tag"] = (
        SimmSpline(NONUNIFORM_X, NONUNIFORM_Y),
        lambda: load_function(knots_xml("NaturalCubicSpline", NONUNIFORM_X, NONUNIFORM_Y)),
        knot_points(NONUNIFORM_X))
    for n, (x, y) in {2: sets[2], 3: sets[3], 7: sets[7]}.items():
        cases[f"PiecewiseLinear-{n}"] = (
            PiecewiseLinear(x, y), lambda x=x, y=y: load_function(knots_xml("PiecewiseLinearFunction", x, y)),
            knot_points(x))
        cases[f"PiecewiseConstant-{n}"] = (
            PiecewiseConstant(x, y), lambda x=x, y=y: load_function(knots_xml("PiecewiseConstantFunction", x, y)),
            knot_points(x))
    for m in (1, 2, 3, 4, 5):
        n = 2 * m + 5
        x = np.linspace(-1.0, 2.0, n) + 0.04 * np.sin(3.0 * np.arange(n))
        y = np.sin(1.7 * x) + 0.1 * x ** 2
        cases[f"GCVSpline-degree{2 * m - 1}"] = (
            GCVSpline(x, y, half_order=m),
            lambda x=x, y=y, m=m: load_function(knots_xml("GCVSpline", x, y, f"<half_order>{m}</half_order>")),
            knot_points(x))
    return cases


def _other_cases():
    cases = {
        "Constant": (Constant(-3.25), lambda: load_function('<Constant name="f"><value>-3.25</value></Constant>'),
                     box_points(1)),
        "LinearFunction-1": (Linear([1.75], -0.3),
                             lambda: load_function('<LinearFunction name="f"><coefficients>1.75 -0.3</coefficients>'
                                                   '</LinearFunction>'), box_points(1)),
        "LinearFunction-2": (Linear([-0.242, 0.12], 0.05),
                             lambda: load_function('<LinearFunction name="f"><coefficients>-0.242 0.12 0.05'
                                                   '</coefficients></LinearFunction>'), box_points(2)),
        "PolynomialFunction": (Polynomial([0.5, -1.0, 2.0, 0.3, -7.0]),
                               lambda: load_function('<PolynomialFunction name="f"><coefficients>0.5 -1 2 0.3 -7'
                                                     '</coefficients></PolynomialFunction>'), box_points(1, -3, 3)),
        "MultiplierFunction-SimmSpline": (
            Multiplier(-2.5, SimmSpline(NONUNIFORM_X, NONUNIFORM_Y)),
            lambda: load_function('<MultiplierFunction name="f"><function>'
                                  + knots_xml("SimmSpline", NONUNIFORM_X, NONUNIFORM_Y)
                                  + '</function><scale>-2.5</scale></MultiplierFunction>'),
            knot_points(NONUNIFORM_X)),
        "MultiplierFunction-Linear2": (
            Multiplier(0.75, Linear([1.5, -2.0], 0.25)),
            lambda: load_function('<MultiplierFunction name="f"><function><LinearFunction><coefficients>'
                                  '1.5 -2 0.25</coefficients></LinearFunction></function><scale>0.75</scale>'
                                  '</MultiplierFunction>'), box_points(2)),
        "MultiplierFunction-nested": (
            Multiplier(2.0, Multiplier(-0.5, Polynomial([1.0, -2.0, 0.5]))),
            lambda: load_function('<MultiplierFunction name="f"><function><MultiplierFunction><function>'
                                  '<PolynomialFunction><coefficients>1 -2 0.5</coefficients></PolynomialFunction>'
                                  '</function><scale>-0.5</scale></MultiplierFunction></function><scale>2</scale>'
                                  '</MultiplierFunction>'), box_points(1)),
    }
    return cases


def _mvp_cases():
    cases = {}
    for dim, order in ((1, 3), (2, 2), (2, 4), (3, 3)):
        n = len(list(itertools.combinations(range(dim + order), order)))
        c = np.round(np.random.default_rng(dim * 10 + order).uniform(-2, 2, n), 6)
        xml = (f'<MultivariatePolynomialFunction name="f"><coefficients>{_numbers(c)}</coefficients>'
               f'<dimension>{dim}</dimension><order>{order}</order></MultivariatePolynomialFunction>')
        cases[f"MultivariatePolynomial-d{dim}-o{order}"] = (
            MultivariatePolynomial(dim, order, c), lambda xml=xml: load_function(xml), box_points(dim, -1.5, 1.5))
    return cases


SPLINE_CASES = _spline_cases()
OTHER_CASES = _other_cases()
MVP_CASES = _mvp_cases()


@pytest.mark.parametrize("label", sorted(SPLINE_CASES))
def test_knot_functions_match_opensim(label):
    ours, make, pts = SPLINE_CASES[label]
    f = make()
    if label.startswith("NaturalCubicSpline"):
        # OpenSim 4.6 renames the XML type on load: a <NaturalCubicSpline> *is* a SimmSpline.
        assert f.getConcreteClassName() == "SimmSpline"
    assert_matches(ours, f, pts, label)


@pytest.mark.parametrize("label", sorted(OTHER_CASES))
def test_elementary_functions_match_opensim(label):
    ours, make, pts = OTHER_CASES[label]
    assert_matches(ours, make(), pts, label)


@pytest.mark.parametrize("label", sorted(MVP_CASES))
def test_multivariate_polynomial_value_and_gradient_match_opensim(label):
    ours, make, pts = MVP_CASES[label]
    assert_matches(ours, make(), pts, label, orders=(0, 1))


def _fd_of_opensim_gradient(f, pts, h=1e-6):
    """Central differences of OpenSim's own first derivatives: fd[n, a, b] = d(df/dx_b)/dx_a."""
    n, k = pts.shape
    fd = np.empty((n, k, k))
    for a in range(k):
        step = np.zeros(k)
        step[a] = h
        gp = opensim_jet(f, pts + step)[1]
        gm = opensim_jet(f, pts - step)[1]
        fd[:, a, :] = (gp - gm) / (2 * h)
    return fd


@pytest.mark.parametrize("label", ["MultivariatePolynomial-d2-o4", "MultivariatePolynomial-d3-o3"])
def test_multivariate_polynomial_hessian_matches_derivative_of_opensim_gradient(label):
    ours, make, pts = MVP_CASES[label]
    pts = pts[:15]
    fd = _fd_of_opensim_gradient(make(), pts)
    np.testing.assert_allclose(ours.evaluate(pts).hessian, fd, rtol=0, atol=1e-7 * max(1, np.abs(fd).max()))


@pytest.mark.xfail(reason="OpenSim 4.6 defect: MultivariatePolynomialFunction::calcDerivative returns the "
                          "first partial derivative w.r.t. the first index for any derivative order, so its "
                          "second derivatives are wrong (documented in docs/functions.md)", strict=False)
def test_opensim_multivariate_polynomial_second_derivatives_are_wrong():
    """Documents OpenSim's defect: its 'second derivatives' are not derivatives of its first derivatives."""
    ours, make, pts = MVP_CASES["MultivariatePolynomial-d2-o4"]
    f = make()
    pts = pts[:10]
    _, grad, hess = opensim_jet(f, pts)
    # What OpenSim actually returns: d2f/dx_a dx_b := df/dx_a.
    np.testing.assert_array_equal(hess, np.repeat(grad[:, :, None], 2, axis=2))
    fd = _fd_of_opensim_gradient(f, pts)
    np.testing.assert_allclose(hess, fd, rtol=0, atol=1e-6 * max(1, np.abs(fd).max()),
                               err_msg="OpenSim's second derivatives vs central differences of its first")


# --- knots taken from real models --------------------------------------------------------------

_MODEL_TAGS = {
    "SimmSpline": SimmSpline,
    "NaturalCubicSpline": SimmSpline,  # OpenSim loads it as a SimmSpline
    "PiecewiseLinearFunction": PiecewiseLinear,
    "PiecewiseConstantFunction": PiecewiseConstant,
}


def _model_functions(path: Path):
    """Distinct knot functions (tag, x text, y text) of a model file."""
    from lxml import etree

    seen = {}
    for el in etree.parse(str(path)).iter(*_MODEL_TAGS):
        xs, ys = el.findtext("x"), el.findtext("y")
        if xs is None or ys is None:
            continue
        seen.setdefault((el.tag, " ".join(xs.split()), " ".join(ys.split())), None)
    return list(seen)


@pytest.mark.models
@pytest.mark.parametrize("model", ["mobl_arms_holzbaur.osim", "leg6dof9musc.osim"])
def test_model_knot_functions_match_opensim(models_dir, model):
    path = models_dir / model
    if not path.is_file():
        pytest.skip(f"{path} not found")
    functions = _model_functions(path)
    assert functions, f"no knot functions found in {model}"
    worst = 0.0
    for tag, xs, ys in functions:
        x, y = np.array(xs.split(), float), np.array(ys.split(), float)
        ours = _MODEL_TAGS[tag](x, y)
        f = load_function(f"<{tag}><x>{xs}</x><y>{ys}</y></{tag}>")
        errs = assert_matches(ours, f, knot_points(x, n_between=25), f"{model} {tag} x=[{xs}]")
        worst = max(worst, *errs.values())
    assert worst <= TOL


if __name__ == "__main__":  # print the worst errors of each case
    rows = []
    for label, (ours, make, pts) in {**SPLINE_CASES, **OTHER_CASES}.items():
        rows.append((label, worst_errors(ours, make(), pts)))
    for label, (ours, make, pts) in MVP_CASES.items():
        rows.append((label, worst_errors(ours, make(), pts, orders=(0, 1))))
    models = Path(os.environ.get("OSIM_EMB_MODELS", Path(__file__).resolve().parents[2] / "shared" / "models"))
    for model in ("mobl_arms_holzbaur.osim", "leg6dof9musc.osim"):
        if (models / model).is_file():
            by_tag: dict = {}
            for tag, xs, ys in _model_functions(models / model):
                x, y = np.array(xs.split(), float), np.array(ys.split(), float)
                e = worst_errors(_MODEL_TAGS[tag](x, y), load_function(f"<{tag}><x>{xs}</x><y>{ys}</y></{tag}>"),
                                 knot_points(x, n_between=25))
                n, prev = by_tag.get(tag, (0, {}))
                by_tag[tag] = (n + 1, {o: max(prev.get(o, 0.0), v) for o, v in e.items()})
            for tag, (n, e) in by_tag.items():
                rows.append((f"{model} {tag} (x{n})", e))
    for label, e in rows:
        print(f"{label:45s} " + "  ".join(f"d{o}: {v:.2e}" for o, v in e.items()))
