"""Double pendulum of two uniform rods, released horizontal.

Two uniform rods of 1 kg and 1 m (inertia m L^2 / 12 = 1/12 kg m^2 about the CG) pinned in
series: 'upper' to the ground at the origin (revolute 'O'), 'lower' to the free end of
'upper' (revolute 'A'); g = 9.81 m/s^2 along -y. Both rods start at rest along +x, so the
tip starts at (2, 0). Each rod's reference point is its centre (its CG), with its body x
axis along the rod. The motion is chaotic: the tip position after 10 s is sensitive to
everything (step, round-off), while the energy (conserved: no friction) and the
constraint residual measure the integration quality.

Simulated with RK4, dt = 1e-3 s and the default coordinate projection over 10 s.
Printed / JSON: final tip position (m), relative energy drift, max constraint residual.

    python examples/double_pendulum.py [--t1 10] [--dt 1e-3] [--json] [--plot double.png]
"""
from __future__ import annotations

import argparse
import json
import time

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

import jaxmbs  # noqa: E402

G, MASS, LENGTH = 9.81, 1.0, 1.0  # m/s^2, kg, m
SAVE_DT = 0.01  # s


def build():
    """The two rods 'upper' and 'lower' along +x at rest (`jaxmbs.zoo.double_pendulum`)."""
    return jaxmbs.zoo.double_pendulum(G, length=LENGTH, mass=MASS, names=("upper", "lower"))


def tip(q):
    """Global position (m) of the free end of 'lower' from coordinates q (..., 6)."""
    q = np.asarray(q)
    x, y, th = q[..., 3], q[..., 4], q[..., 5]
    return np.stack([x + 0.5 * LENGTH * np.cos(th), y + 0.5 * LENGTH * np.sin(th)], -1)


def main(argv=None):
    """Run the example; returns {'t1', 'tip': [x, y], 'energy_drift',
    'max_constraint_error'} (s, m, -, m)."""
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--t1", type=float, default=10.0, help="end time, s (default 10)")
    ap.add_argument("--dt", type=float, default=1e-3, help="RK4 step, s (default 1e-3)")
    ap.add_argument("--json", action="store_true", help="last output line is one JSON object")
    ap.add_argument("--plot", metavar="PATH", help="write a PNG (needs matplotlib)")
    args = ap.parse_args(argv)

    mech, params, q0, v0 = build()
    n_steps = int(round(args.t1 / args.dt))
    save_every = max(1, int(round(SAVE_DT / args.dt)))
    while n_steps % save_every:
        save_every -= 1
    t0 = time.perf_counter()
    traj = jaxmbs.simulate(mech, params, q0, v0, (0.0, args.t1), args.dt,
                           integrator=jaxmbs.RK4(), save_every=save_every)
    jax.block_until_ready(traj.q)
    wall = time.perf_counter() - t0

    p = tip(traj.q[-1])
    drift = float(traj.energy_drift())
    cerr = float(np.max(np.asarray(traj.constraint_error)))
    print(f"double pendulum: RK4 dt = {args.dt:g} s over {args.t1:g} s ({n_steps} steps, "
          f"{wall:.2f} s incl. compile), status: {jaxmbs.status.describe(traj.status)}")
    print(f"tip at t = {args.t1:g} s: ({p[0]:+.9f}, {p[1]:+.9f}) m")
    print(f"relative energy drift {drift:.3e}; max constraint error {cerr:.2e} m")

    out = {"t1": float(args.t1), "tip": [float(p[0]), float(p[1])], "energy_drift": drift,
           "max_constraint_error": cerr}
    if args.plot:
        _plot(mech, params, traj, args.plot)
        print(f"plot written to {args.plot}")
    if args.json:
        print(json.dumps(out))
    return out


def _plot(mech, params, traj, path):
    """Drawing at t1 with the tip's path, and the time histories of the angles."""
    import matplotlib.pyplot as plt

    from jaxmbs import plot

    fig = plt.figure(figsize=(12, 6.5), layout="constrained")
    left, right = fig.subfigures(1, 2, width_ratios=(1, 1.5))
    ax = left.subplots(1, 1)
    path_xy = tip(traj.q)
    ax.plot(*path_xy.T, color="0.75", lw=0.6)
    plot.draw(mech, params, np.asarray(traj.q[0]), ax=ax, alpha=0.25, scale=3.0)
    plot.draw(mech, params, np.asarray(traj.q[-1]), ax=ax, labels=True, scale=3.0)
    ax.set_title(f"t = {float(traj.t[-1]):g} s (faint: t = 0; grey: tip path)")
    plot.plot_trajectory(traj, mech, coords=("upper.theta", "lower.theta"), fig=right,
                         title="double pendulum, RK4")
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
