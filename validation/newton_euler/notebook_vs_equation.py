"""The notebook's code (m2 g l2 sin q1 in G) against its equation (m2 g l1 sin q1), double pendulum.

Parameters and initial state of the notebook (cell In [139]): m1 = m2 = 1 kg, l1 = 1 m, l2 = 0.5 m, slender
rods, g = 9.81, q = (pi/10, pi/3), qd = (2 pi, -6 pi), no torques.  Three runs over 5 s:
  equation   G of the equation, solve_ivp DOP853 (rtol = atol = 1e-12)
  code       G of the notebook's code, same integrator
  notebook   G of the code and the notebook's explicit Euler with dt = 1e-4 (as written in the cell)
The mechanical energy T + V is that of the physical double pendulum (its V is the one whose gradient is the
equation's G).

Writes validation/newton_euler/results/notebook_vs_equation.csv (summary), notebook_vs_equation_series.csv
(every 10 ms) and notebook_vs_equation.pdf/.png.

Run:  python validation/newton_euler/notebook_vs_equation.py
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from osim_emb.seeds.newton_euler import (  # noqa: E402
    PendulumChain,
    energy,
    gravity_vector,
    mass_matrix,
    notebook_gravity_vector,
    simulate,
    velocity_vector,
)

OUT = Path(__file__).resolve().parent / "results"
T_FINAL = 5.0


def notebook_euler(chain, q0, qd0, dt=1e-4, t_final=T_FINAL):
    """The notebook's loop: state = [omega1, omega2, theta1, theta2], explicit Euler, code's G."""
    n_steps = int(round(t_final / dt))
    q = np.array(q0, dtype=float)
    qd = np.array(qd0, dtype=float)
    out = np.empty((n_steps + 1, 4))
    out[0] = [*q, *qd]
    for i in range(1, n_steps + 1):  # the integration is sequential by nature
        qdd = np.linalg.solve(mass_matrix(chain, q), velocity_vector(chain, q, qd) + notebook_gravity_vector(chain, q))
        q, qd = q + dt * qd, qd + dt * qdd  # both from the previous state, as in the notebook
        out[i] = [*q, *qd]
    return np.arange(n_steps + 1) * dt, out


def main():
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT, help="output folder (default: this study's results/)")
    OUT = ap.parse_args().out
    OUT.mkdir(parents=True, exist_ok=True)
    chain = PendulumChain.slender_rods([1.0, 1.0], [1.0, 0.5], g=9.81)
    q0, qd0 = [np.pi / 10, np.pi / 3], [2 * np.pi, -6 * np.pi]
    t = np.linspace(0, T_FINAL, 501)
    eq = simulate(chain, q0, qd0, (0, T_FINAL), t_eval=t)
    code = simulate(chain, q0, qd0, (0, T_FINAL), t_eval=t, gravity="notebook")
    tn, yn = notebook_euler(chain, q0, qd0)
    yn = yn[::100]  # every 10 ms = t
    runs = {"equation": eq.y.T, "code": code.y.T, "notebook (code + Euler dt=1e-4)": yn}
    E = {}
    for name, y in runs.items():
        T_, V_ = energy(chain, y[:, :2], y[:, 2:])
        E[name] = T_ + V_
    series = pd.DataFrame({"time": t})
    for name, y in runs.items():
        key = name.split(" ")[0]
        series[f"theta1_{key}"], series[f"theta2_{key}"] = y[:, 0], y[:, 1]
        series[f"energy_{key}"] = E[name]
    series.to_csv(OUT / "notebook_vs_equation_series.csv", index=False, float_format="%.10g")

    G1_eq = (1.0 * 1.0 / 2 + 1.0 * 1.0) * 9.81
    G1_code = (1.0 * 1.0 / 2 + 1.0 * 0.5) * 9.81
    qs = np.array([[0.3, 0.0]])
    rows = [
        dict(quantity="coefficient of -sin(q1) in G1 (N m)", equation=G1_eq, code=G1_code,
             difference=G1_code - G1_eq),
        dict(quantity="G1 at q = (0.3, 0) (N m)", equation=gravity_vector(chain, qs)[0, 0],
             code=notebook_gravity_vector(chain, qs)[0, 0],
             difference=notebook_gravity_vector(chain, qs)[0, 0] - gravity_vector(chain, qs)[0, 0]),
    ]
    d = np.abs(code.y.T[:, :2] - eq.y.T[:, :2])
    first = t[np.argmax(d.max(axis=1) > 0.1)] if np.any(d.max(axis=1) > 0.1) else np.nan
    rows.append(dict(quantity="first time |theta_code - theta_equation| > 0.1 rad (s)", equation=np.nan, code=first,
                     difference=np.nan))
    for tt in (0.5, 1.0, 2.0, 5.0):
        i = int(np.argmin(np.abs(t - tt)))
        rows.append(dict(quantity=f"theta2 at t = {tt:g} s (rad)", equation=eq.y[1, i], code=code.y[1, i],
                         difference=code.y[1, i] - eq.y[1, i]))
    for name, e in E.items():
        rows.append(dict(quantity=f"max |E(t) - E(0)| over {T_FINAL:g} s, {name} (J)",
                         equation=np.abs(e - e[0]).max() if name == "equation" else np.nan,
                         code=np.abs(e - e[0]).max() if name != "equation" else np.nan, difference=np.nan))
    summary = pd.DataFrame(rows)
    summary.to_csv(OUT / "notebook_vs_equation.csv", index=False, float_format="%.6g")

    fig, axs = plt.subplots(1, 3, figsize=(10, 2.9))
    styles = {"equation": dict(color="k", lw=1.2), "code": dict(color="tab:red", lw=1.0),
              "notebook (code + Euler dt=1e-4)": dict(color="tab:orange", lw=0.8, ls="--")}
    for name, y in runs.items():
        axs[0].plot(t, y[:, 0], **styles[name], label=name)
        axs[1].plot(t, y[:, 1], **styles[name])
        axs[2].plot(t, E[name] - E[name][0], **styles[name])
    axs[0].set_ylabel("θ1 (rad)")
    axs[1].set_ylabel("θ2 (rad)")
    axs[2].set_ylabel("E(t) − E(0) (J)")
    for ax in axs:
        ax.set_xlabel("time (s)")
    axs[0].legend(fontsize=6, frameon=False)
    fig.suptitle("Double pendulum of the notebook: G1 = −(m1 l1/2 + m2 l1) g sin θ1 (equation) vs "
                 "−(m1 l1/2 + m2 l2) g sin θ1 (code)", fontsize=9)
    fig.tight_layout()
    for ext in ("pdf", "png"):
        fig.savefig(OUT / f"notebook_vs_equation.{ext}", dpi=200 if ext == "png" else None, bbox_inches="tight",
                    metadata={"CreationDate": None} if ext == "pdf" else None)
    pd.set_option("display.width", 200)
    print(summary.to_string(index=False))


if __name__ == "__main__":
    main()
