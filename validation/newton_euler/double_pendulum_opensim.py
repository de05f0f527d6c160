"""The n-link matrix formalism (M qdd = C + G + Q + E) against OpenSim's forward simulation of double_pendulum.osim.

Masses, lengths, inertias and joint frames are read from the model through the OpenSim API
(``pendulum_chain_from_opensim``); both start from the model's default state.  Ours: solve_ivp (DOP853,
rtol = atol = 1e-12).  OpenSim: Manager (RungeKuttaMerson) at accuracies 1e-6, 1e-8 and 1e-10.

Writes validation/newton_euler/results/double_pendulum_opensim.csv (agreement per accuracy),
double_pendulum_trajectories.csv (t, OpenSim and our absolute angles at accuracy 1e-8) and the figure
double_pendulum_opensim.pdf/.png.

Run:  python validation/newton_euler/double_pendulum_opensim.py
      (the model folder is $OSIM_EMB_MODELS, default ../shared/models beside the repository)
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import opensim as osim  # noqa: E402

from osim_emb.opensim.newton_euler import pendulum_chain_from_opensim  # noqa: E402
from osim_emb.seeds.newton_euler import energy, simulate  # noqa: E402

HERE = Path(__file__).resolve().parent
OUT = HERE / "results"
MODELS = Path(os.environ.get("OSIM_EMB_MODELS", HERE.parents[2] / "shared" / "models"))
T_FINAL = 2.0


def opensim_run(path, accuracy):
    model = osim.Model(str(path))
    state = model.initSystem()
    cs = model.getCoordinateSet()
    q0 = np.array([cs.get(i).getValue(state) for i in range(cs.getSize())])
    u0 = np.array([cs.get(i).getSpeedValue(state) for i in range(cs.getSize())])
    manager = osim.Manager(model)
    manager.setIntegratorAccuracy(accuracy)
    state.setTime(0.0)
    manager.initialize(state)
    manager.integrate(T_FINAL)
    table = manager.getStatesTable()
    labels = list(table.getColumnLabels())
    data = table.getMatrix().to_numpy()
    qn = [cs.get(i).getAbsolutePathString() + "/value" for i in range(cs.getSize())]
    un = [cs.get(i).getAbsolutePathString() + "/speed" for i in range(cs.getSize())]
    t = np.array(table.getIndependentColumn())
    return t, data[:, [labels.index(c) for c in qn]], data[:, [labels.index(c) for c in un]], q0, u0, \
        manager.getIntegratorMethod() if hasattr(manager, "getIntegratorMethod") else "RungeKuttaMerson"


def main():
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT, help="output folder (default: this study's results/)")
    OUT = ap.parse_args().out
    OUT.mkdir(parents=True, exist_ok=True)
    path = MODELS / "double_pendulum.osim"
    chain, offsets, names = pendulum_chain_from_opensim(str(path))
    rows = []
    runs = {}
    for acc in (1e-6, 1e-8, 1e-10):
        t, q, u, q0, u0, _ = opensim_run(path, acc)
        theta_os, omega_os = np.cumsum(q, 1) + offsets, np.cumsum(u, 1)
        sol = simulate(chain, np.cumsum(q0) + offsets, np.cumsum(u0), (0.0, T_FINAL))
        y = sol.sol(t).T
        d = np.abs(y[:, :2] - theta_os)
        T_, V_ = energy(chain, theta_os, omega_os)
        E_os = T_ + V_
        rows.append(dict(opensim_accuracy=acc, opensim_steps=len(t) - 1, max_abs_diff_theta1_rad=d[:, 0].max(),
                         max_abs_diff_theta2_rad=d[:, 1].max(), opensim_energy_drift_J=np.abs(E_os - E_os[0]).max()))
        runs[acc] = (t, theta_os, y, sol)
    t, theta_os, y, sol = runs[1e-8]
    tt = np.linspace(0, T_FINAL, 2001)
    ys = sol.sol(tt).T
    T_, V_ = energy(chain, ys[:, :2], ys[:, 2:])
    E = T_ + V_
    for r in rows:
        r["ours_energy_drift_J"] = np.abs(E - E[0]).max()
        r["ours_energy_J"] = E[0]
    df = pd.DataFrame(rows)
    df.to_csv(OUT / "double_pendulum_opensim.csv", index=False, float_format="%.3e")
    pd.DataFrame({"time": t, "theta1_opensim": theta_os[:, 0], "theta2_opensim": theta_os[:, 1],
                  "theta1_matrix": y[:, 0], "theta2_matrix": y[:, 1]}).to_csv(
        OUT / "double_pendulum_trajectories.csv", index=False, float_format="%.12g")
    params = pd.DataFrame({"link": [1, 2], "coordinate": names, "mass_kg": chain.masses, "length_m": chain.lengths,
                           "com_distance_m": chain.com_distances, "inertia_kgm2": chain.inertias,
                           "angle_offset_rad": offsets})
    params.to_csv(OUT / "double_pendulum_parameters_from_opensim.csv", index=False)

    fig, axs = plt.subplots(1, 3, figsize=(9.5, 2.8))
    for k in range(2):
        axs[0].plot(t, theta_os[:, k], lw=2.5, alpha=0.4, label=f"θ{k + 1} OpenSim (accuracy 1e-8)")
        axs[0].plot(t, y[:, k], "k--", lw=0.8, label=f"θ{k + 1} matrix formalism" if k == 0 else None)
    axs[0].set_xlabel("time (s)")
    axs[0].set_ylabel("absolute angle (rad)")
    axs[0].legend(fontsize=6, frameon=False)
    for acc, (tq, th_os, yq, _) in runs.items():
        axs[1].semilogy(tq, np.abs(yq[:, :2] - th_os).max(axis=1) + 1e-16, label=f"OpenSim accuracy {acc:g}")
    axs[1].axhline(1e-6, color="r", lw=0.8, ls=":", label="1e-6 rad")
    axs[1].set_xlabel("time (s)")
    axs[1].set_ylabel("max |Δθ| (rad)")
    axs[1].legend(fontsize=6, frameon=False)
    axs[2].plot(tt, E - E[0])
    axs[2].set_xlabel("time (s)")
    axs[2].set_ylabel("E(t) − E(0) (J), matrix formalism")
    fig.tight_layout()
    for ext in ("pdf", "png"):
        fig.savefig(OUT / f"double_pendulum_opensim.{ext}", dpi=200 if ext == "png" else None, bbox_inches="tight",
                    metadata={"CreationDate": None} if ext == "pdf" else None)
    print(params.to_string(index=False))
    print(df.to_string(index=False))


if __name__ == "__main__":
    main()
