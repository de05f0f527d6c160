"""`simulate` on models with PathSprings and Ligaments against OpenSim 4.6's Manager (RungeKuttaMerson) from the same
state: largest coordinate difference and the wall times of both.

    python run.py MODEL.osim [--t-end 0.2] [--q0 NAME=DEG,...] [--method DOP853] [--accuracy 1e-9]
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None) -> None:
    import osim_emb as oe
    from osim_emb.opensim.muscle_simulation import opensim_muscle_simulation
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("--t-end", type=float, default=0.2)
    p.add_argument("--samples", type=int, default=11)
    p.add_argument("--q0", default="", help="NAME=DEGREES (metres for translations),...")
    p.add_argument("--method", default="DOP853", help="one or more, comma-separated (e.g. DOP853,RK45-jit)")
    p.add_argument("--accuracy", type=float, default=1e-9)
    a = p.parse_args(argv)
    model = oe.load_osim(a.model)
    q0 = model.default_q.copy()
    for item in filter(None, a.q0.split(",")):
        name, value = item.split("=")
        k = model.coordinate_index(name)
        q0[k] = np.radians(float(value)) if model.coordinates[k].motion_type == "rotational" else float(value)
    times = np.linspace(0.0, a.t_end, a.samples)
    muscles = [m.name for m in model.muscles if m.parameters is not None]  # `simulate` applies no muscle force
    methods = a.method.split(",")
    bare = oe.simulate(model, a.t_end, q0, t_eval=times, method=methods[0], rtol=1e-10, atol=1e-10, model_forces=False)
    ref = opensim_muscle_simulation(a.model, times, {}, accuracy=a.accuracy, disabled_forces=muscles,
                                    q0=dict(zip(model.coordinate_names, q0)))
    cols = [n for n in ref["names"] if n in bare.columns]
    theirs = ref["q"][:, [ref["names"].index(n) for n in cols]]
    moved = np.abs(theirs - bare[cols].to_numpy()).max()
    print(f"{model.name}: {a.t_end} s, {len(cols)} coordinates; the model's forces move q by {moved:.3g}; OpenSim "
          f"Manager (accuracy {a.accuracy:g}) {ref['seconds']:.3f} s")
    for method in methods:
        start = time.perf_counter()
        ours = oe.simulate(model, a.t_end, q0, t_eval=times, method=method, rtol=1e-10, atol=1e-10)
        seconds = time.perf_counter() - start
        d = np.abs(ours[cols].to_numpy() - theirs).max()
        print(f"  simulate {method} (rtol=atol=1e-10): max |q - q_OpenSim| = {d:.2e} (rad or m), {seconds:.3f} s "
              f"({ours.attrs['nfev']} right-hand sides)")

if __name__ == "__main__":
    main()
