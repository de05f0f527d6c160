"""Energy drift of a passive model under gravity (forces disabled): OpenSim's Manager against osim-emb.

Both trajectories' energies are evaluated by OpenSim (kinetic + potential), whose mass matrix equals the
package's to 1e-15, so the drift measures each code's velocity terms (docs/dynamics.md, "OpenSim's CustomJoint
velocity terms").  Usage (the Rajagopal leg of opensim-core's sandbox, fetched into a scratch folder):

    python validation/model_corpus/coriolis_energy.py Rajagopal2015_right_leg_9musc.osim --coordinate knee_angle_r
"""

from __future__ import annotations

import argparse

import numpy as np


def main(argv=None) -> None:
    import opensim as osim

    from osim_emb import load_osim, simulate
    from osim_emb.opensim.bridge import OpenSimReference

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--coordinate", required=True, help="coordinate given an initial speed")
    p.add_argument("--q0", type=float, default=0.5, help="its initial value (rad)")
    p.add_argument("--speed", type=float, default=3.0, help="its initial speed (rad/s)")
    p.add_argument("--time", type=float, default=0.3, help="simulated time (s)")
    p.add_argument("--accuracy", type=float, default=1e-10, help="OpenSim integrator accuracy; package rtol/atol")
    a = p.parse_args(argv)
    model = load_osim(a.model)
    ref = OpenSimReference(a.model, model, disable_forces=True)
    m = ref.model_os
    q0 = np.array([c.default for c in model.coordinates])
    qd0 = np.zeros(model.n_q)
    k = model.coordinate_index(a.coordinate)
    q0[k], qd0[k] = a.q0, a.speed

    def energy(q, qd):
        ref.set_configuration(q, qd)
        m.realizeDynamics(ref.state)
        return m.calcKineticEnergy(ref.state) + m.calcPotentialEnergy(ref.state)

    e0 = energy(q0, qd0)
    state = ref.state
    state.setTime(0.0)
    manager = osim.Manager(m)
    manager.setIntegratorAccuracy(a.accuracy)
    manager.initialize(state)
    final = manager.integrate(a.time)
    m.realizeDynamics(final)
    drift_opensim = m.calcKineticEnergy(final) + m.calcPotentialEnergy(final) - e0
    res = simulate(model, a.time, q0=q0, qdot0=qd0, rtol=a.accuracy / 10, atol=a.accuracy / 10, n_output=2)
    names = model.coordinate_names
    drift_package = energy(res[names].to_numpy()[-1], res[[n + "_u" for n in names]].to_numpy()[-1]) - e0
    print(f"initial energy {e0:.6f} J; energy change over {a.time:g} s:")
    print(f"  OpenSim Manager (accuracy {a.accuracy:g}): {drift_opensim:+.3e} J")
    print(f"  osim-emb (rtol = atol = {a.accuracy / 10:g}):   {drift_package:+.3e} J")


if __name__ == "__main__":
    main()
