"""Point, distance, point-on-line and weld constraint loops in the compiled program (OP_FRAMECHAIN: the tree's
program, the frame recursion and the pair equations in one node, then the closed-chain kernels' Newton and
projection method) against the Python route they replace (``frame_chains_in_python``: ClosedChain on the numpy
constraint jets of core.point_constraints) and OpenSim's Manager: the joint variables with gradients and Hessians,
``simulate`` with SciPy's DOP853 (now on a compiled right-hand side) and with the compiled integrators (which
refused these models before).  No timings here: benchmarks/bench_point_constraints.py."""

from __future__ import annotations

import numpy as np
import pytest

from osim_emb import load_osim
from osim_emb.core._accel import HAVE_NUMBA
from osim_emb.core.closed_chains import AssemblyError
from osim_emb.core.compiled import compiled_model, joint_program
from osim_emb.core.functions.program import frame_chains_in_python
from osim_emb.simulation.motions import simulate
from test_point_constraints import build_loop, build_weld_chain

pytestmark = pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed (pip install 'osim-emb[speed]')")

KINDS = ["point", "distance", "line", "planar", "weld"]


def _write(osim, tmp_path, kind):
    path = tmp_path / f"{kind}.osim"
    if kind == "weld":
        build_weld_chain(osim, path)
    else:
        build_loop(osim, path, distance=kind == "distance", line=kind == "line", planar=kind == "planar")
    return path


def _both(path):
    """The model with its loops compiled, and the same file with its loops solved in Python."""
    model = load_osim(path)
    with frame_chains_in_python():
        python_model = load_osim(path)
        assert joint_program(python_model).externals and compiled_model(python_model).externals
    return model, python_model


@pytest.mark.parametrize("kind", KINDS)
def test_compiled_loop_equals_the_python_route(osim, tmp_path, kind):
    """Every joint variable with its gradient and Hessian, and the dynamics terms, at random poses: the compiled node
    (no external function left) equals ClosedChain's Python solve to round-off."""
    from osim_emb.core import dynamics as dyn
    model, python_model = _both(_write(osim, tmp_path, kind))
    jp, cm = joint_program(model), compiled_model(model)
    assert not jp.externals and not cm.externals and jp.function_counts.get("ClosedChain") == 1
    q0 = np.array([c.default for c in model.coordinates])
    spread = 0.15 if model.n_q == 1 else 0.05
    q = q0 + np.random.default_rng(7).uniform(-spread, spread, (6, model.n_q))
    qd = np.random.default_rng(8).normal(size=q.shape)
    ours, ref = jp.evaluate(q, 2), joint_program(python_model).evaluate(q, 2)
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-11)
    for d, d_ref in zip(model.dependent_coordinates, python_model.dependent_coordinates):
        from osim_emb.core.functions.program import dependent_jet
        jet = dependent_jet(d.function, q, 1)
        np.testing.assert_allclose(jet.value, d_ref.function.evaluate(q, 1).value, rtol=0, atol=1e-12)
        np.testing.assert_allclose(jet.gradient, d_ref.function.evaluate(q, 1).gradient, rtol=0, atol=1e-11)
    t1, t2 = dyn.dynamics_terms(model, q, qd), dyn.dynamics_terms(python_model, q, qd)
    np.testing.assert_allclose(t1.mass, t2.mass, rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(dyn.forward_dynamics(model, q, qd), dyn.forward_dynamics(python_model, q, qd),
                               rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kind", ["point", "line", "weld"])
def test_simulate_compiled_equals_the_python_route(osim, tmp_path, kind):
    """``simulate`` (SciPy's DOP853) through the loop under gravity for 0.05 s: the compiled right-hand side and the
    compiled RK45 (refused before: 'joint functions evaluated in Python', naming the loop's variables) against the
    Python route, within 1e-9 rad; the motion tables' dependent coordinates too."""
    model, python_model = _both(_write(osim, tmp_path, kind))
    t_eval = np.linspace(0.0, 0.05, 6)
    ours = simulate(model, 0.05, t_eval=t_eval, rtol=1e-11, atol=1e-11)
    with frame_chains_in_python():
        ref = simulate(python_model, 0.05, t_eval=t_eval, rtol=1e-11, atol=1e-11)
        with pytest.raises(ValueError, match=r"joint functions evaluated in Python \(.* of closed chain '"):
            simulate(python_model, 0.05, t_eval=t_eval, method="RK45-jit")
    jit = simulate(model, 0.05, t_eval=t_eval, method="RK45-jit", rtol=1e-11, atol=1e-11)
    names = [c for c in ref.columns if c != "time"]
    assert list(ours.columns) == list(ref.columns) == list(jit.columns)
    assert np.abs(np.diff(ref[model.coordinate_names].to_numpy(), axis=0)).max() > 1e-4  # it moves
    assert np.abs(ours[names].to_numpy() - ref[names].to_numpy()).max() < 1e-9
    assert np.abs(jit[names].to_numpy() - ref[names].to_numpy()).max() < 1e-8


def test_compiled_integrators_equal_opensim_manager(osim, tmp_path):
    """The spatial PointConstraint loop falling under gravity for 0.1 s: ``simulate`` with RK45-jit and BDF-jit (the
    loop solved in the compiled integrators) against OpenSim's Manager enforcing the constraint."""
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    path = _write(osim, tmp_path, "point")
    model = load_osim(path)
    times = np.linspace(0.0, 0.1, 3)
    ref = opensim_muscle_simulation(path, times, {}, accuracy=1e-9)
    q_ref = ref["q"][:, [ref["names"].index(c) for c in model.coordinate_names]]
    for method, tol in (("RK45-jit", 1e-7), ("BDF-jit", 1e-6)):
        ours = simulate(model, times[-1], t_eval=times, method=method, rtol=1e-10, atol=1e-10)
        assert np.abs(np.diff(ours[model.coordinate_names].to_numpy(), axis=0)).max() > 1e-3  # it moves
        assert np.abs(ours[model.coordinate_names].to_numpy() - q_ref).max() < tol, method


def test_kernel_failure_raises_the_closed_chain_error(osim, tmp_path):
    """The distance loop's free coordinates moved by 0.5 to 2 rad: where the compiled continuation walk cannot
    close the loop, neither can ClosedChain's Python walk, and the compiled node's failure is explained by the same
    AssemblyError (its configuration and residual); where one closes it, so does the other, to round-off."""
    model, python_model = _both(_write(osim, tmp_path, "distance"))
    failed = 0
    for dq in (0.5, 1.0, 2.0):
        for sign in ((1, 1, 1), (1, -1, 1)):
            q = model.default_q[None] + dq * np.array(sign, dtype=float)
            try:
                ref = joint_program(python_model).evaluate(q, 2)
            except AssemblyError as err:
                failed += 1
                with pytest.raises(AssemblyError) as compiled_error:
                    joint_program(model).evaluate(q, 2)
                assert str(compiled_error.value) == str(err)
                continue
            for a, b in zip(joint_program(model).evaluate(q, 2), ref):
                np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
    assert 0 < failed < 6
