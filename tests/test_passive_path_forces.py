"""PathSprings and Ligaments applied where OpenSim's tools apply them: inverse dynamics, static optimization and joint
reactions, against OpenSim 4.6's InverseDynamicsTool, StaticOptimization and JointReaction on arm26 with a PathSpring
and a Ligament along copies of BRA's path."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from osim_emb.cli.main import main
from opensim_builders import read_sto, write_motion_file

pytestmark = [pytest.mark.opensim, pytest.mark.models]

COEF = {"r_shoulder_elev": (0.2, 0.3, -0.1), "r_elbow_flex": (0.4, 1.2, 0.3)}  # q = a + b t + c t² (rad)


def arm26_with_path_forces(models_dir, path, forces):
    """arm26 plus path forces on copies of BRA's path: ``forces`` = (tag, name, properties) each."""
    from lxml import etree
    tree = etree.parse(str(models_dir / "arm26.osim"))
    bra = next(e for e in tree.iter("Thelen2003Muscle") if e.get("name") == "BRA")
    for tag, name, props in forces:
        el = etree.SubElement(bra.getparent(), tag, name=name)
        el.append(copy.deepcopy(bra.find("GeometryPath")))
        for k, v in props.items():
            etree.SubElement(el, k).text = v
    tree.write(str(path))
    return path


def arm26_with_springs(models_dir, path, *, stiffness="2000", pcsa="300"):
    """arm26 plus a PathSpring and a Ligament on BRA's path, both taut along the motion (resting lengths below BRA's)."""
    return arm26_with_path_forces(models_dir, path, [
        ("PathSpring", "bra_pathspring", {"resting_length": "0.1", "stiffness": stiffness, "dissipation": "0.5"}),
        ("Ligament", "bra_ligament", {"resting_length": "0.1", "pcsa_force": pcsa})])


def inverse_dynamics_against_opensim(models_dir, path, tmp_path):
    """(largest |τ − OpenSim's InverseDynamicsTool's| away from the ends, largest change from arm26 without the path
    forces) of the `inverse-dynamics` command on the model at ``path`` along the test motion (N m)."""
    from osim_emb.opensim.static_optimization import opensim_inverse_dynamics
    motion = _motion(tmp_path)
    ref = opensim_inverse_dynamics(path, motion, tmp_path / "osim_id")
    assert main(["inverse-dynamics", str(path), str(motion), "-o", str(tmp_path / "id.sto")]) == 0
    assert main(["inverse-dynamics", str(models_dir / "arm26.osim"), str(motion), "-o", str(tmp_path / "bare.sto")]) == 0
    ours, bare = read_sto(tmp_path / "id.sto"), read_sto(tmp_path / "bare.sto")
    cols = [c for c in ours.columns if c != "time"]
    inner = slice(3, -3)  # away from the ends, where the two programs' splines of the quadratic motion differ most
    d = np.abs(ours[cols].to_numpy()[inner] - ref[cols].to_numpy()[inner]).max()
    return d, np.abs(ours[cols].to_numpy() - bare[cols].to_numpy()).max()


def _motion(tmp_path, coef=COEF):
    return write_motion_file(tmp_path / "motion.mot", list(coef), coef, np.linspace(0.0, 1.0, 41))


def test_inverse_dynamics_applies_path_springs_and_ligaments_as_opensim(osim, models_dir, tmp_path, capsys):
    path = arm26_with_springs(models_dir, tmp_path / "arm26_springs.osim")
    d, moved = inverse_dynamics_against_opensim(models_dir, path, tmp_path)
    with capsys.disabled():
        print(f"\n[agreement] inverse dynamics with a PathSpring and a Ligament vs OpenSim's tool: {d:.2e} N m "
              f"(they move it by {moved:.3g} N m)")
    assert moved > 1.0 and d < 1e-6 * moved


def test_joint_reactions_and_static_optimization_apply_them_as_opensim(osim, models_dir, tmp_path, capsys):
    from osim_emb.opensim.joint_reactions import opensim_joint_reactions
    from osim_emb.opensim.static_optimization import opensim_static_optimization
    path = arm26_with_springs(models_dir, tmp_path / "arm26_springs.osim", stiffness="300", pcsa="60")
    motion = _motion(tmp_path, {"r_shoulder_elev": (0.3, 0.1, -0.1), "r_elbow_flex": (0.9, 0.5, -0.2)})
    assert main(["static-optimization", str(path), str(motion), "-o", str(tmp_path / "so"), "--no-passive"]) == 0
    ours = read_sto(tmp_path / "so_StaticOptimization_activation.sto")
    ref = opensim_static_optimization(path, motion, convergence=1e-10, out_dir=tmp_path / "osim_so")["activation"]
    muscles = [c for c in ours.columns if c != "time"]
    da = np.abs(ours[muscles].to_numpy() - ref[muscles].to_numpy()).max()
    assert main(["static-optimization", str(models_dir / "arm26.osim"), str(motion), "-o", str(tmp_path / "bare"),
                 "--no-passive"]) == 0
    moved = np.abs(read_sto(tmp_path / "bare_StaticOptimization_activation.sto")[muscles].to_numpy()
                   - ours[muscles].to_numpy()).max()
    forces = tmp_path / "so_StaticOptimization_force.sto"
    jr = opensim_joint_reactions(path, motion, forces_file=forces)["loads"]
    assert main(["joint-reactions", str(path), str(motion), "-o", str(tmp_path / "jr"), "--forces", str(forces)]) == 0
    mine = read_sto(tmp_path / "jr_JointReaction_ReactionLoads.sto")
    labels = [c for c in mine.columns if c != "time"]
    dj = np.abs(mine[labels].to_numpy() - jr[labels].to_numpy()).max()
    scale = np.abs(jr[labels].to_numpy()).max()
    with capsys.disabled():
        print(f"\n[agreement] with a PathSpring and a Ligament: static optimization {da:.2e} in activation (they "
              f"move it by {moved:.3g}); joint reactions {dj:.2e} of {scale:.4g} N, N m, m")
    assert moved > 1e-2 and da < 1e-6 and dj < 1e-8 * scale


def test_lengthening_speeds_sum_opensims_point_pairs(osim, models_dir, capsys):
    """OpenSim's GeometryPath::getLengtheningSpeed on MoBL's 50 wrapped paths (moving points next to points of their
    own body, ellipsoid tangent points) at random states: `lengthening_speeds(..., opensim_compat=True)` sums the same
    point pairs; −Rᵀq̇ (the generalized-force rule, which leaves the pairs on one body out) differs."""
    import osim_emb as oe
    from osim_emb.core.speeds import speeds_from_rates
    from osim_emb.opensim.bridge import OpenSimReference
    path = models_dir / "mobl_arms_holzbaur.osim"
    model = oe.load_osim(path)
    names = [m.name for m in model.muscles]
    ref = OpenSimReference(str(path), model)
    rng = np.random.default_rng(2)
    lo, hi = model.coordinate_ranges.T
    worst = worst_r = 0.0
    for _ in range(3):
        q = np.clip(model.default_q + 0.3 * rng.standard_normal(model.n_q), lo, hi)
        qd = rng.normal(size=model.n_q)
        ref.set_configuration(q)
        ref.set_speeds(speeds_from_rates(model, q, qd)[0])
        ref.model_os.realizeVelocity(ref.state)
        theirs = np.array([ref._path(n).getLengtheningSpeed(ref.state) for n in names])
        ours = oe.lengthening_speeds(model, q, qd, names, opensim_compat=True)[0]
        minus_rt = -np.einsum("km,k->m", oe.moment_arms(model, q, names, opensim_compat=True)[0], qd)
        worst, worst_r = max(worst, np.abs(ours - theirs).max()), max(worst_r, np.abs(minus_rt - theirs).max())
    with capsys.disabled():
        print(f"\n[agreement] MoBL lengthening speeds vs OpenSim's: {worst:.1e} m/s (-R^T qdot: {worst_r:.1e})")
    assert worst < 1e-12 and worst_r > 1e-6


def arm26_with_blankevoort(models_dir, path, *, slack="0.1", stiffness="500", damping="20"):
    """arm26 plus a Blankevoort1991Ligament on BRA's path (taut along the motion: slack length below BRA's)."""
    return arm26_with_path_forces(models_dir, path, [(
        "Blankevoort1991Ligament", "bra_blankevoort",
        {"linear_stiffness": stiffness, "transition_strain": "0.06", "damping_coefficient": damping, "slack_length": slack})])


def test_blankevoort_ligament_tension_equals_opensims(osim, models_dir, tmp_path):
    """Blankevoort1991Ligament::getTotalForce at states through every branch (slack, toe region with the damping
    phased in, linear region, stretching and shortening): the package's tension law on its path's length and
    OpenSim's lengthening speed."""
    import osim_emb as oe
    from osim_emb.opensim.bridge import OpenSimReference
    from osim_emb.simulation.muscle_driven import passive_path_forces_from_model
    model = None
    worst, seen = 0.0, set()
    for slack in ("0.1", "0.11", "0.118", "0.13"):  # (BRA's path is 0.10-0.13 m over the elbow's range)
        path = arm26_with_blankevoort(models_dir, tmp_path / f"b{slack}.osim", slack=slack)
        model = oe.load_osim(path)
        (force,) = passive_path_forces_from_model(model)
        ref = OpenSimReference(str(path), model)
        lig = osim.Blankevoort1991Ligament.safeDownCast(ref.model_os.getForceSet().get("bra_blankevoort"))
        rng = np.random.default_rng(4)
        for _ in range(12):
            q = np.array([0.3, rng.uniform(0.0, 2.2)])
            qd = rng.normal(scale=2.0, size=2)
            ref.set_configuration(q)
            ref.set_speeds(qd)
            ref.model_os.realizeVelocity(ref.state)
            length = oe.muscle_lengths(model, q, ["bra_blankevoort"], opensim_compat=True)[0, 0]
            speed = oe.lengthening_speeds(model, q, qd, ["bra_blankevoort"], opensim_compat=True)[0, 0]
            strain = lig.getStrain(ref.state)
            seen.add("slack" if strain <= 0 else "toe" if strain < 0.06 else "linear")
            worst = max(worst, abs(force.tension(length, speed) - lig.getTotalForce(ref.state)))
    assert seen == {"slack", "toe", "linear"} and worst < 1e-9, (seen, worst)


def test_blankevoort_ligament_in_inverse_dynamics_and_simulation_equals_opensim(osim, models_dir, tmp_path, capsys):
    """The Blankevoort1991Ligament applied by `inverse-dynamics` (OpenSim's InverseDynamicsTool) and by the compiled
    muscle-driven simulation (OpenSim's Manager, 0.1 s)."""
    import osim_emb as oe
    from osim_emb.opensim.muscle_simulation import largest_differences, opensim_muscle_simulation
    from osim_emb.simulation.muscle_driven import ExcitationSpec, simulate_muscles
    path = arm26_with_blankevoort(models_dir, tmp_path / "arm26_blankevoort.osim")
    d, moved = inverse_dynamics_against_opensim(models_dir, path, tmp_path)
    exc = {"BIClong": ExcitationSpec.parse("step:0.0:0.05:0.05:0.6"), "TRIlong": ExcitationSpec.parse("0.2")}
    times = np.linspace(0.0, 0.1, 6)
    sim = opensim_muscle_simulation(path, times, exc, accuracy=1e-9)
    model = oe.load_osim(path)
    mine = simulate_muscles(model, times[-1], exc, t_eval=times, method="RK45-jit", rtol=1e-10, atol=1e-12)
    dq = largest_differences(mine, sim)["q"]
    with capsys.disabled():
        print(f"\n[agreement] Blankevoort1991Ligament: inverse dynamics {d:.2e} N m from OpenSim's tool (it moves it by "
              f"{moved:.3g} N m); muscle-driven 0.1 s {dq:.2e} rad from OpenSim's Manager ({mine.attrs['method']})")
    assert moved > 1.0 and d < 1e-6 * moved and dq < 1e-7 and mine.attrs["method"] == "RK45-jit"
