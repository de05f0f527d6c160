"""Forward simulation, inverse dynamics of motions, computed-torque tracking (Eqs 200-201), motion files."""

import numpy as np
import pandas as pd
import pytest

from osim_emb.cli.main import main
from osim_emb.io import load_osim
from osim_emb.io.motion import coordinates_from_motion, from_opensim_states, read_motion, write_motion
from osim_emb.simulation.motions import computed_torque_tracking, inverse_dynamics_of_motion, minimum_jerk, simulate
from osim_emb.core.synthetic import serial_chain_model


def test_motion_file_roundtrip(tmp_path):
    t = pd.DataFrame({"time": np.linspace(0, 1, 11), "a": np.sin(np.arange(11.0)), "b": np.arange(11.0) * 1e-3})
    p = tmp_path / "m.mot"
    write_motion(p, t, in_degrees=False)
    back, head = read_motion(p)
    assert head["inDegrees"] == "no" and int(head["nRows"]) == 11
    np.testing.assert_allclose(back.to_numpy(), t.to_numpy(), rtol=1e-11, atol=1e-15)


def test_inverse_dynamics_of_a_passive_motion_is_zero():
    """Forward simulation under gravity, then inverse dynamics of the sampled motion: ~0 generalized force (away
    from the first and last 10 frames, where the natural quintic spline's end conditions, OpenSim's, perturb q̈)."""
    model = serial_chain_model(3)
    tab = simulate(model, 0.5, [0.4, -0.3, 0.2], None, n_output=501)
    q = tab[model.coordinate_names].to_numpy()
    qd = tab[[c + "_u" for c in model.coordinate_names]].to_numpy()
    tau = inverse_dynamics_of_motion(model, tab.time.to_numpy(), q, qd).iloc[:, 1:].to_numpy()
    scale = np.abs(inverse_dynamics_of_motion(model, tab.time.to_numpy(), q, np.zeros_like(q),
                                              np.zeros_like(q)).iloc[:, 1:].to_numpy()).max()
    assert np.abs(tau[10:-10]).max() < 1e-7 * scale


def test_computed_torque_error_is_critically_damped():
    """Starting off the desired trajectory, each error obeys e'' + 2K e' + K^2 e = 0: e = e0 (1 + K t) exp(-K t)."""
    model = serial_chain_model(2)
    gains = np.array([20.0, 50.0])

    def desired(t):
        q, dq, ddq = minimum_jerk(np.array([t, t]), 0.0, 1.0, np.array([0.2, -0.1]), np.array([0.9, 0.4]))
        return q, dq, ddq

    e0 = np.array([0.05, -0.02])
    res = computed_torque_tracking(model, desired, 1.0, gains, q0=desired(0.0)[0] + e0, qdot0=np.zeros(2),
                                   n_output=101)
    t = res.states.time.to_numpy()
    for k, c in enumerate(model.coordinate_names):
        e = res.states[c].to_numpy() - res.desired[c].to_numpy()
        expected = e0[k] * (1 + gains[k] * t) * np.exp(-gains[k] * t)
        np.testing.assert_allclose(e, expected, atol=1e-8)
    # the torques are the inverse dynamics of the motion with q'' = Q_d
    q = res.states[model.coordinate_names].to_numpy()
    qd = res.states[[c + "_u" for c in model.coordinate_names]].to_numpy()
    from osim_emb.core import dynamics as dyn
    qdd = np.array([desired(ti)[2] for ti in t]) - 2 * gains * (qd - np.array([desired(ti)[1] for ti in t])) \
        - gains ** 2 * (q - np.array([desired(ti)[0] for ti in t]))
    np.testing.assert_allclose(res.torques.iloc[:, 1:].to_numpy(), dyn.inverse_dynamics(model, q, qd, qdd),
                               rtol=1e-10, atol=1e-10)


def test_simulate_and_inverse_dynamics_commands(models_dir, tmp_path):
    path = str(models_dir / "double_pendulum.osim")
    out = tmp_path / "sim.sto"
    assert main(["simulate", path, "-o", str(out), "--t-end", "0.5", "--q0", "q1=30", "--samples", "501"]) == 0
    tab, head = read_motion(out)
    model = load_osim(path)
    _, q, qd = coordinates_from_motion(model, tab, head)
    assert q[0, 0] == pytest.approx(np.radians(30)) and qd is not None
    tau = tmp_path / "tau.sto"
    assert main(["inverse-dynamics", path, str(out), "-o", str(tau)]) == 0
    t, _ = read_motion(tau)
    assert np.abs(t.iloc[5:-5, 1:].to_numpy()).max() < 1e-5


def test_simulate_with_the_compiled_integrators_leaves_the_muscles_out_as_scipys_route(models_dir, tmp_path, capsys):
    """``simulate --method RK45-jit`` / ``BDF-jit`` on arm26 (six muscles, which ``simulate`` does not apply) equals
    SciPy's DOP853 route (independent integrator, the numpy-side force bookkeeping) to the tolerance, and the
    muscle-driven system still holds the muscles by default."""
    from osim_emb.simulation.muscle_driven import MuscleDrivenSystem
    path = models_dir / "arm26.osim"
    model = load_osim(path)
    assert MuscleDrivenSystem(model, {}).n_m == 6 and MuscleDrivenSystem(model, {}, with_muscles=False).n_m == 0
    q0 = model.default_q + np.radians([30.0, 40.0])
    reference = simulate(model, 0.4, q0, n_output=5, rtol=1e-12, atol=1e-12)
    for method in ("RK45-jit", "BDF-jit"):
        ours = simulate(model, 0.4, q0, n_output=5, method=method, rtol=1e-10, atol=1e-10)
        assert list(ours.columns) == list(reference.columns)
        diff = np.abs(ours.to_numpy() - reference.to_numpy()).max()
        with capsys.disabled():
            print(f"[agreement] arm26 passive swing, {method} against DOP853: {diff:.1e} "
                  f"({ours.attrs['nfev']} right-hand sides)")
        assert diff < 1e-7
    out = tmp_path / "swing.sto"
    assert main(["simulate", str(path), "-o", str(out), "--t-end", "0.4", "--samples", "5", "--method", "BDF-jit",
                 "--q0", "r_shoulder_elev=30,r_elbow_flex=40"]) == 0
    assert "right-hand sides, BDF-jit)" in capsys.readouterr().out
    tab = from_opensim_states(read_motion(out)[0])
    assert np.abs(tab[model.coordinate_names].to_numpy() - reference[model.coordinate_names].to_numpy()).max() < 1e-6
    assert main(["simulate", str(path), "-o", str(tmp_path / "x.sto"), "--method", "RK4-jit"]) == 2
    assert "neither a solve_ivp method nor a compiled one" in capsys.readouterr().err
    assert not (tmp_path / "x.sto").exists()


def test_simulate_reports_its_progress_over_the_output_times(models_dir, capsys):
    """With ``progress`` (the command line's default; ``-q`` turns it off) a simulation says how far it got: on a
    terminal a bar over the output times, otherwise one line when it ends; the compiled integrators too (they
    run in calls of a growing number of output times, the bar advanced between them)."""
    model = load_osim(models_dir / "double_pendulum.osim")
    simulate(model, 0.2, n_output=11, progress=True)
    assert "simulating 0.2 s (DOP853): 11/11 output times in" in capsys.readouterr().err
    simulate(model, 0.2, n_output=11, method="RK45-jit", progress=True)
    assert "simulating 0.2 s (RK45-jit): 11/11 output times in" in capsys.readouterr().err
    simulate(model, 0.2, n_output=11)
    assert capsys.readouterr().err == ""


def _path_forces_pendulum(folder):
    """The small two-link pendulum (tests/hostile_models.py) with a PathSpring wrapping a cylinder at the elbow, a
    Ligament across the elbow and a Blankevoort1991Ligament from ground across the shoulder, all taut at the start."""
    from hostile_models import small_osim
    text = small_osim()
    upper, lower = text.split('<Body name="lower">')
    text = upper + '<Body name="lower">' + lower.replace("<radius>0.02</radius>", "<radius>0.08</radius>", 1)

    def path(points, wrap=""):
        pts = "".join(f'<PathPoint name="p{i}"><socket_parent_frame>{frame}</socket_parent_frame>'
                      f'<location>{loc}</location></PathPoint>' for i, (frame, loc) in enumerate(points))
        wraps = (f'<PathWrapSet><objects><PathWrap name="pw"><wrap_object>{wrap}</wrap_object></PathWrap>'
                 '</objects></PathWrapSet>') if wrap else ""
        return f'<GeometryPath name="path"><PathPointSet><objects>{pts}</objects></PathPointSet>{wraps}</GeometryPath>'
    elbow = [("/bodyset/upper", "{x} -0.8 0"), ("/bodyset/lower", "{x} -0.2 0")]
    forces = (
        '<PathSpring name="spring">' + path([(f, p.format(x="0.02")) for f, p in elbow], "cyl2")
        + "<resting_length>0.3</resting_length><stiffness>200</stiffness><dissipation>0.5</dissipation></PathSpring>"
        '<Ligament name="ligament">' + path([(f, p.format(x="-0.02")) for f, p in elbow])
        + "<resting_length>0.37</resting_length><pcsa_force>80</pcsa_force></Ligament>"
        '<Blankevoort1991Ligament name="blankevoort">' + path([("/ground", "0.05 0 0"), ("/bodyset/upper", "0.05 -0.3 0")])
        + "<slack_length>0.28</slack_length><linear_stiffness>300</linear_stiffness>"
          "<transition_strain>0.06</transition_strain><damping_coefficient>5</damping_coefficient>"
          "</Blankevoort1991Ligament>")
    start, end = text.index("<ForceSet"), text.index("</ForceSet>")
    out = folder / "pendulum_path_forces.osim"
    out.write_text(text[:start] + f'<ForceSet name="forceset"><objects>{forces}</objects>' + text[end:])
    return out


def test_simulate_applies_path_springs_and_ligaments_as_opensims_manager(osim, tmp_path, capsys):
    """`simulate` applies a PathSpring (wrapping a cylinder), a Ligament and a Blankevoort1991Ligament along their paths
    as OpenSim 4.6's Manager does (accuracy 1e-9, 0.3 s, the same start): SciPy's route and the compiled integrators;
    the command line no longer says it leaves them out."""
    import osim_emb as oe
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import passive_path_forces_from_model
    path = _path_forces_pendulum(tmp_path)
    model = load_osim(path)
    assert sorted(f.type for f in passive_path_forces_from_model(model)) == [
        "Blankevoort1991Ligament", "Ligament", "PathSpring"]
    q0 = {"shoulder_q": 0.4, "elbow": 0.5}
    times = np.linspace(0.0, 0.3, 7)
    ref = opensim_muscle_simulation(path, times, {}, accuracy=1e-9, q0=q0)
    cols = model.coordinate_names
    theirs = ref["q"][:, [ref["names"].index(n) for n in cols]]
    bare = oe.simulate(model, 0.3, q0, t_eval=times, model_forces=False)
    moved = np.abs(bare[cols].to_numpy() - theirs).max()
    lengths = oe.muscle_lengths(model, theirs, ["spring", "ligament", "blankevoort"], opensim_compat=True)
    assert (lengths > [0.3, 0.37, 0.28]).all()  # taut all along OpenSim's motion
    for method in ("DOP853", "RK45-jit", "BDF-jit"):
        ours = oe.simulate(model, 0.3, q0, t_eval=times, method=method, rtol=1e-11, atol=1e-11)
        d = np.abs(ours[cols].to_numpy() - theirs).max()
        with capsys.disabled():
            print(f"\n[agreement] pendulum with a PathSpring, a Ligament and a Blankevoort1991Ligament, 0.3 s "
                  f"({method}): {d:.2e} rad from OpenSim's Manager (they move it by {moved:.3g} rad)")
        assert moved > 1e-2 and d < 1e-6
    capsys.readouterr()
    assert main(["-v", "simulate", str(path), "-o", str(tmp_path / "sim.sto"), "--t-end", "0.05", "--samples", "3"]) == 0
    err = capsys.readouterr().err
    assert "simulate applies the model's 3 PathSpring(s) and Ligament(s)" in err and "does not apply" not in err


def test_compiled_simulate_refuses_a_ligament_it_cannot_evaluate_and_scipys_route_applies_it(tmp_path):
    """A Ligament whose force-length curve is a Constant (not in the compiled encoding): `simulate --method RK45-jit`
    refuses, naming the model, the Ligament and the curve type, rather than leaving it out; SciPy's route applies it
    (the motion differs from the one without the model's forces)."""
    path = _path_forces_pendulum(tmp_path)
    text = path.read_text().replace("<pcsa_force>80</pcsa_force>", "<pcsa_force>80</pcsa_force><force_length_curve>"
                                    "<Constant><value>1</value></Constant></force_length_curve>")
    path.write_text(text)
    model = load_osim(path)
    with pytest.raises(ValueError, match=r"'RK45-jit' cannot run .*Ligament 'ligament'.*\(Constant\)"):
        simulate(model, 0.05, {"shoulder_q": 0.4, "elbow": 0.5}, method="RK45-jit")
    ours = simulate(model, 0.05, {"shoulder_q": 0.4, "elbow": 0.5}, n_output=3)
    bare = simulate(model, 0.05, {"shoulder_q": 0.4, "elbow": 0.5}, n_output=3, model_forces=False)
    assert np.abs(ours.to_numpy() - bare.to_numpy()).max() > 1e-4
