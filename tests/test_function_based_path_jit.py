"""Function-based paths (FunctionBasedPath with a polynomial length function) in the compiled muscle-driven
integrator: the compiled L, R equal the numpy route and central differences; RK45-jit follows SciPy's numpy
route and OpenSim's Manager on arm26 copies whose paths are fitted polynomials (all six, or three beside three
geometric ones); a path with moment-arm functions keeps SciPy's route, saying why."""

from __future__ import annotations

import numpy as np
import pytest

from osim_emb.simulation.excitations import ExcitationSpec

pytest.importorskip("numba")

EXC = {"BIClong": ExcitationSpec.parse("step:0.0:0.05:0.02:0.8"), "TRIlong": ExcitationSpec.parse("0.3"),
       "BRA": ExcitationSpec.parse("sine:0.2:20:0:0.3")}
MIXED = ("TRIlong", "BIClong", "BRA")  # function-based in the mixed copy; TRIlat, TRImed, BICshort stay geometric


def _fitted_copy(src, dst, names=None, order=4, seed=0):
    """``src`` with the paths of ``names`` (all by default) replaced by FunctionBasedPaths of ``order``: the fit of
    ``fit-paths`` on 400 random configurations (a few seconds, instead of its default sample)."""
    from osim_emb.io import load_osim
    from osim_emb.io.osim_writer import write_osim
    from osim_emb.io.function_based_path_xml import document_with_fitted_paths
    from osim_emb.paths.path_fitting import FitSettings
    model = load_osim(str(src))
    lo, hi = model.coordinate_ranges.T
    q = np.random.default_rng(seed).uniform(lo, hi, (400, model.n_q))
    write_osim(document_with_fitted_paths(model, q, names, FitSettings(min_order=order, max_order=order))[0], dst)
    return load_osim(str(dst))


@pytest.fixture(scope="module")
def fitted(models_dir, tmp_path_factory):
    """(model, path) of the all-function-based and of the mixed arm26 copies."""
    tmp = tmp_path_factory.mktemp("fbp_jit")
    out = {}
    for key, names in (("all", None), ("mixed", MIXED)):
        path = tmp / f"arm26_{key}.osim"
        out[key] = (_fitted_copy(models_dir / "arm26.osim", path, names), path)
    return out


def _numpy_paths(model, system, q):
    """L (N, M), R (N, n_q, M) unit by unit: the numpy FunctionBasedPath route and the geometric path kernel."""
    from osim_emb.paths.function_based_path import FunctionBasedMusculotendon, function_path_lengths_and_moment_arms
    from osim_emb.paths.geometry import lengths_and_moment_arms
    by_name = {m.name: m for m in model.muscles}
    lengths, arms = np.empty((len(q), system.n_m)), np.empty((len(q), system.n_q, system.n_m))
    for j, name in enumerate(system.muscle_names):
        unit = by_name[name]
        if isinstance(unit, FunctionBasedMusculotendon):
            lengths[:, j], arms[:, :, j] = function_path_lengths_and_moment_arms(model, unit, q)
        else:
            length, r = lengths_and_moment_arms(model, q, [name])
            lengths[:, j], arms[:, :, j] = length[:, 0], r[:, :, 0]
    return lengths, arms


@pytest.mark.parametrize("key", ["all", "mixed"])
def test_compiled_paths_equal_numpy_and_finite_differences(fitted, key):
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem
    from osim_emb.simulation.muscle_driven_jit import compiled_plan
    model, _ = fitted[key]
    system = MuscleDrivenSystem(model)
    assert system.compiled and compiled_plan(system)[0] is not None
    n_fb = system._paths.fb_cols.size
    assert n_fb == (6 if key == "all" else 3) and (system._paths.plan is None) == (key == "all")
    lo, hi = model.coordinate_ranges.T
    q = np.random.default_rng(1).uniform(lo, hi, (20, model.n_q))
    ref_l, ref_r = _numpy_paths(model, system, q)
    got = [system.path_lengths(qi) for qi in q]
    assert np.abs(np.array([g[0] for g in got]) - ref_l).max() < 1e-14
    assert np.abs(np.array([g[1] for g in got]) - ref_r).max() < 1e-14
    fb = system._paths.fb_cols
    h = 1e-6  # R = -dL/dq of the function-based units by central differences
    for k in range(model.n_q):
        dq = np.zeros(model.n_q)
        dq[k] = h
        fd = [(system.path_lengths(qi + dq)[0] - system.path_lengths(qi - dq)[0])[fb] / (2 * h) for qi in q]
        assert np.abs(-np.array(fd) - np.array([g[1][k, fb] for g in got])).max() < 1e-8


@pytest.mark.parametrize("key", ["all", "mixed"])
def test_compiled_integrator_follows_the_numpy_route(fitted, key):
    """RK45-jit against SciPy's RK45 on the numpy route (compiled=False: numpy paths and muscle equations)."""
    from osim_emb.simulation.muscle_driven import simulate_muscles
    model, _ = fitted[key]
    times = np.linspace(0.0, 0.1, 5)
    jit = simulate_muscles(model, 0.1, EXC, t_eval=times, method="RK45-jit", rtol=1e-12, atol=1e-14)
    ref = simulate_muscles(model, 0.1, EXC, t_eval=times, method="RK45", rtol=1e-12, atol=1e-14, compiled=False)
    assert jit.attrs["method"] == "RK45-jit" and ref.attrs["method"] == "RK45"
    q = list(model.coordinate_names)
    # the integrators' step sequences differ (RK45-jit lands on the output times): 1e-8 rad apart at rtol 1e-10
    # on the mixed copy, 1e-9 on geometric arm26 at rtol 1e-11; hence rtol 1e-12 here
    dq = np.abs(jit[q].to_numpy() - ref[q].to_numpy()).max()
    dl = np.abs(jit.filter(like="_fiber_length").to_numpy() - ref.filter(like="_fiber_length").to_numpy()).max()
    print(f"[agreement] arm26 with {key} paths fitted, RK45-jit - numpy RK45: {dq:.1e} rad, {dl:.1e} m")
    assert dq < 2e-9
    assert dl < 1e-9
    assert np.abs(jit[q].to_numpy()[-1] - jit[q].to_numpy()[0]).max() > 0.01  # it moves


def test_function_based_paths_equal_opensim_manager(osim, fitted):
    from osim_emb.opensim.muscle_simulation import largest_differences, opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import simulate_muscles
    model, path = fitted["all"]
    times = np.linspace(0.0, 0.1, 6)
    ours = simulate_muscles(model, 0.1, EXC, t_eval=times, method="RK45-jit", rtol=1e-10, atol=1e-12)
    ref = opensim_muscle_simulation(path, times, EXC, accuracy=1e-9)
    d = largest_differences(ours, ref)
    print(f"[agreement] arm26 with 6 fitted FunctionBasedPaths, 0.1 s (compiled integrator): "
          f"{d['q']:.2e} rad, {d['fiber_length']:.2e} m")
    assert np.abs(ref["q"][-1] - ref["q"][0]).max() > 0.01
    assert d["q"] < 1e-7
    assert d["fiber_length"] < 1e-8


def test_path_coordinate_that_is_coupled(models_dir):
    """A path over a coupled (dependent) coordinate of MoBL-ARMS: the compiled program equals the numpy route."""
    from osim_emb import load_osim
    from osim_emb.core.functions.multivariate import MultivariatePolynomial, polynomial_exponents
    from osim_emb.paths.function_based_path import (FunctionBasedMusculotendon, FunctionBasedPath,
                                                    function_path_lengths_and_moment_arms)
    from osim_emb.simulation.muscle_driven import _FunctionPaths
    from osim_emb.simulation.muscle_driven_jit import function_path_lengths
    model = load_osim(str(models_dir / "mobl_arms_holzbaur.osim"))
    coupled = [d.name for d in model.dependent_coordinates if d.kind == "coupled"]
    assert coupled
    rng = np.random.default_rng(3)
    units = []
    for k, name in enumerate(coupled[:3]):
        coords = (name, model.coordinate_names[k], coupled[-1 - k]) if coupled[-1 - k] != name else \
            (name, model.coordinate_names[k])
        d = len(coords)
        poly = MultivariatePolynomial(d, 3, rng.uniform(-0.05, 0.05, len(polynomial_exponents(d, 3))) + 0.2)
        units.append(FunctionBasedMusculotendon(f"fb{k}", "PathActuator", (), (), None,
                                                function_path=FunctionBasedPath(coords, poly)))
    program = _FunctionPaths(model, units)
    lo, hi = model.coordinate_ranges.T
    q = rng.uniform(lo, hi, (10, model.n_q))
    cols = np.arange(len(units), dtype=np.int64)
    for qi in q:
        length, r = np.empty(len(units)), np.empty((model.n_q, len(units)))
        function_path_lengths(qi.copy(), program.args, cols, length, r)
        for j, unit in enumerate(units):
            ref_l, ref_r = function_path_lengths_and_moment_arms(model, unit, qi[None])
            assert abs(length[j] - ref_l[0]) < 1e-14
            assert np.abs(r[:, j] - ref_r[0]).max() < 1e-14
            assert np.abs(r[:, j]).max() > 0.0


def test_moment_arm_functions_keep_scipys_route(fitted, tmp_path):
    """A unit with moment-arm functions: compiled_plan names it, and simulate_muscles runs on SciPy's RK45."""
    import dataclasses
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem, simulate_muscles
    from osim_emb.simulation.muscle_driven_jit import compiled_plan
    model, _ = fitted["all"]
    unit = next(m for m in model.muscles if m.name == "BRA")
    path = unit.function_path
    arms = tuple(_minus_partial(path.length_function, i) for i in range(len(path.coordinates)))  # r_i = -dl/dc_i
    with_arms = dataclasses.replace(unit, function_path=dataclasses.replace(path, moment_arm_functions=arms))
    changed = dataclasses.replace(model, muscles=tuple(with_arms if m is unit else m for m in model.muscles))
    system = MuscleDrivenSystem(changed)
    plan, why = compiled_plan(system)
    assert plan is None and "'BRA'" in why and "moment-arm" in why
    times = np.linspace(0.0, 0.02, 3)
    out = simulate_muscles(changed, 0.02, EXC, t_eval=times, rtol=1e-10, atol=1e-12)
    assert out.attrs["method"] == "RK45"
    ref = simulate_muscles(model, 0.02, EXC, t_eval=times, rtol=1e-10, atol=1e-12)  # the same R, compiled
    q = list(model.coordinate_names)
    assert np.abs(out[q].to_numpy() - ref[q].to_numpy()).max() < 1e-8


def _minus_partial(poly, i):
    """-dp/dc_i of a MultivariatePolynomial as a MultivariatePolynomial of the same order (a second formula:
    the exponents differentiated term by term)."""
    from osim_emb.core.functions.multivariate import MultivariatePolynomial, polynomial_exponents
    e = polynomial_exponents(poly.n_inputs, poly.order)
    index = {tuple(row): t for t, row in enumerate(e)}
    coef = np.zeros(len(e))
    for t, row in enumerate(e):
        if row[i] > 0:
            lower = list(row)
            lower[i] -= 1
            coef[index[tuple(lower)]] -= row[i] * poly.coefficients[t]
    return MultivariatePolynomial(poly.n_inputs, poly.order, coef)


def test_compiled_jacobian_equals_central_differences_of_the_numpy_route(models_dir):
    """muscle_driven_jit.jacobian (forward differences of the compiled right-hand side, given to SciPy's implicit
    methods) against central differences of the numpy route's right-hand side (compiled=False), arm26 mid-motion."""
    from osim_emb import load_osim
    from osim_emb.simulation import muscle_driven_jit as jit
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem
    model = load_osim(str(models_dir / "arm26.osim"))
    system = MuscleDrivenSystem(model, EXC)
    reference = MuscleDrivenSystem(model, EXC, compiled=False)
    plan, why = jit.compiled_plan(system)
    assert plan is not None, why
    y = np.asarray(system.initial_state(), dtype=float)
    y[:model.n_q] += 0.2
    y[model.n_q:2 * model.n_q] = 0.5
    jac = jit.jacobian(system, plan, 0.03, y)
    central = np.empty_like(jac)
    for j in range(y.size):
        h = 1e-6 * max(1.0, abs(y[j]))
        yp, ym = y.copy(), y.copy()
        yp[j] += h
        ym[j] -= h
        central[:, j] = (reference.rhs(0.03, yp) - reference.rhs(0.03, ym)) / (2 * h)
    column_error = np.abs(jac - central).max(axis=0) / (np.abs(central).max(axis=0) + 1.0)
    print("largest column error of the compiled Jacobian", column_error.max())
    assert column_error.max() < 1e-4, column_error  # forward differences: 9e-6 here
    np.testing.assert_allclose(jit.rhs(system, plan, 0.03, y), reference.rhs(0.03, y), rtol=1e-12, atol=1e-9)


def test_every_model_gives_the_compiled_integrators_one_plan_type(fitted, models_dir, tmp_path):
    """numba compiles a kernel once per argument type: the plans of a geometric, an all-function-based and a mixed
    model, with and without conditional points, couplers, limit forces and Schutte muscles (MoBL), have one numba
    type (before round 8 they had three, and the integrators were compiled three times, minutes of CI)."""
    import numba
    from osim_emb import load_osim
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem
    from osim_emb.simulation.muscle_driven_jit import compiled_plan
    models = [fitted["all"][0], fitted["mixed"][0], load_osim(str(models_dir / "arm26.osim")),
              load_osim(str(models_dir / "leg6dof9musc.osim")), load_osim(str(models_dir / "mobl_arms_holzbaur.osim"))]
    types = set()
    for model in models:
        plan, why = compiled_plan(MuscleDrivenSystem(model, EXC if model.name.startswith("arm26") else {}))
        assert plan is not None, why
        types.add(str(numba.typeof(plan)))
    assert len(types) == 1


def test_polynomials_of_the_same_inputs_share_their_monomials(models_dir):
    """Polynomial paths of the same coordinates (interleaved with others: another order, the inputs in another
    order, one input) are compiled one after another and evaluate their monomials once; every L and R equals the
    sum over the terms c_t prod x^e and its derivative written out with numpy."""
    from osim_emb import load_osim
    from osim_emb.core import compiled_kernels as K
    from osim_emb.core.functions.multivariate import MultivariatePolynomial, polynomial_exponents
    from osim_emb.paths.function_based_path import FunctionBasedMusculotendon, FunctionBasedPath
    from osim_emb.simulation.muscle_driven import _FunctionPaths
    from osim_emb.simulation.muscle_driven_jit import function_path_lengths
    model = load_osim(str(models_dir / "arm26.osim"))
    a, b = model.coordinate_names
    rng = np.random.default_rng(5)
    specs = [((a, b), 3), ((b,), 3), ((a, b), 3), ((b, a), 3), ((a, b), 2), ((a, b), 3), ((b, a), 3)]
    units, polys = [], []
    for k, (coords, order) in enumerate(specs):
        e = polynomial_exponents(len(coords), order)
        poly = MultivariatePolynomial(len(coords), order, rng.uniform(-0.1, 0.1, len(e)))
        polys.append((coords, e, poly.coefficients))
        units.append(FunctionBasedMusculotendon(f"fb{k}", "PathActuator", (), (), None,
                                                function_path=FunctionBasedPath(coords, poly)))
    program = _FunctionPaths(model, units)
    ints = program.args[0]
    on, nn = ints[K.H_OFF_NODES], ints[K.H_NNODES]
    rows = ints[on:on + K.NODE_STRIDE * nn].reshape(nn, K.NODE_STRIDE)
    rows = rows[rows[:, 0] == K.OP_MPOLY]
    bases = [(r[1], r[3]) for r in rows]
    assert len(bases) == 7 and len(set(bases)) == 4  # (a,b) order 3 thrice, (b,a) twice: one basis each
    assert sum(1 for i in range(7) if i == 0 or bases[i] != bases[i - 1]) == 4  # each computed once
    cols = np.arange(len(units), dtype=np.int64)
    lo, hi = model.coordinate_ranges.T
    for qi in rng.uniform(lo, hi, (20, model.n_q)):
        length, r = np.empty(len(units)), np.empty((model.n_q, len(units)))
        function_path_lengths(qi.copy(), program.args, cols, length, r)
        for j, (coords, e, c) in enumerate(polys):
            x = np.array([qi[model.coordinate_names.index(n)] for n in coords])
            assert abs(length[j] - np.sum(c * np.prod(x ** e, axis=1))) < 1e-14
            for v, name in enumerate(coords):
                ev = e.copy()
                ev[:, v] = np.maximum(ev[:, v] - 1, 0)
                dv = np.sum(c * e[:, v] * np.prod(x ** ev, axis=1))
                assert abs(r[model.coordinate_names.index(name), j] + dv) < 1e-13
