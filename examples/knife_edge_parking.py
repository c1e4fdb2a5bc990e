"""A knife-edge cart parks sideways: nonholonomic constraints and velocity drivers.

The cart is one rigid body (20 kg, 8 kg m^2 about its CG, CG 1.2 m ahead of the rear
axle). Its rear axle is a knife edge (`Model.add_knife_edge`): the axle point cannot move
sideways, -sin(theta) x_dot + cos(theta) y_dot = 0 — a nonholonomic constraint, so the cart
can reach any (x, y, theta) but never slide directly sideways.

It is driven by two user velocity constraints (`Model.add_velocity_constraint`, rows
affine in v with a time-dependent right-hand side):

    u . r_axle_dot = V(t)      (forward speed of the rear axle, u = (cos theta, sin theta))
    theta_dot      = Omega(t)  (turning rate)

Each maneuver segment lasts T = 2 s with V = +-V0 e(tau), Omega = +-W0 e(tau) and the
smooth envelope e = sin^2(pi tau / T) (V, Omega and their derivatives are continuous), so
every segment is a circular arc of radius R = V0 / W0 turning by phi = W0 T / 2. The
cycle forward-left, forward-right, back-right, back-left (signs (+,+), (+,-), (-,-),
(-,+)) returns the heading to zero and the cart to its original x, displaced sideways by
4 R (1 - cos phi) (the Lie bracket of "drive" and "turn" is "slide sideways").

The saddle solve returns the multipliers of the drivers: the traction force along the
cart and the steering torque that realise the maneuver.

Printed / JSON (last line with --json): lateral_displacement (m), expected_lateral (m),
forward_displacement (m), final_heading (rad), max_constraint_error (max over the run of
|Phi| and |A v - b| of every row, m/s), max_traction (N), max_steering_torque (N m),
seconds (wall time of the simulation including compilation).

    python examples/knife_edge_parking.py [--cycles 2] [--dt 1e-3] [--json] [--plot fig.png]
"""
from __future__ import annotations

import argparse
import json
import math
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxmbs  # noqa: E402

MASS, INERTIA, CG = 20.0, 8.0, 1.2  # kg, kg m^2, m (CG ahead of the rear axle)
V0 = 1.0  # m/s, peak forward speed
SEG = 2.0  # s, duration of one maneuver segment
PHI = math.radians(30.0)  # rad, heading change per segment
W0 = 2.0 * PHI / SEG  # rad/s, peak turning rate (the envelope's mean is 1/2)
SIGNS = ((1.0, 1.0), (1.0, -1.0), (-1.0, -1.0), (-1.0, 1.0))  # (drive, turn) per segment


def schedule(cycles):
    """JAX function t -> (V(t), Omega(t)) in (m/s, rad/s) for `cycles` parking cycles."""
    s = np.array(SIGNS * cycles + ((0.0, 0.0),))

    def f(t):
        k = jnp.clip(jnp.floor(t / SEG), 0, len(s) - 1).astype(jnp.int32)
        e = jnp.sin(math.pi * (t - k * SEG) / SEG) ** 2
        sk = jnp.asarray(s, t.dtype)[k]
        return V0 * sk[0] * e, W0 * sk[1] * e

    return f


def build(cycles):
    """The cart at the origin heading along +x, at rest, with its two velocity drivers."""
    sched = schedule(cycles)
    m = jaxmbs.Model(gravity=(0.0, 0.0))  # horizontal plane
    m.add_body("cart", mass=MASS, inertia=INERTIA, position=(0.0, 0.0), angle=0.0, cg=(CG, 0.0))
    m.add_knife_edge("rear_axle", "cart", point=(0.0, 0.0), axis_local=(1.0, 0.0))

    def drive(q, v, t):  # rows affine in v: A(q) v - b(t)
        V, W = sched(t)
        return jnp.stack([jnp.cos(q[2]) * v[0] + jnp.sin(q[2]) * v[1] - V, v[2] - W])

    m.add_velocity_constraint("drive", drive)
    return m.build()


def expected_lateral(cycles):
    """Closed form: 4 R (1 - cos phi) per cycle, R = V0 / W0 (m)."""
    return cycles * 4.0 * (V0 / W0) * (1.0 - math.cos(PHI))


def run(cycles=2, dt=1e-3):
    mech, params, q0, v0 = build(cycles)
    t1 = len(SIGNS) * cycles * SEG + 1.0  # one second at rest at the end
    t_start = time.perf_counter()
    tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, t1), dt, save_every=int(round(0.05 / dt)))
    tr.q.block_until_ready()
    seconds = time.perf_counter() - t_start
    rows = mech.joint("drive").rows
    lam = np.asarray(tr.lam)
    return mech, params, tr, dict(
        lateral_displacement=float(tr.q[-1, 1] - q0[1]),
        expected_lateral=expected_lateral(cycles),
        forward_displacement=float(tr.q[-1, 0] - q0[0]),
        final_heading=float(tr.q[-1, 2]),
        max_constraint_error=float(max(np.max(np.asarray(tr.constraint_error)),
                                       np.max(np.asarray(tr.velocity_error)))),
        max_traction=float(np.max(np.abs(lam[:, rows[0]]))),
        max_steering_torque=float(np.max(np.abs(lam[:, rows[1]]))),
        status=int(tr.status),
        seconds=seconds,
    )


def plot(mech, params, tr, path, summary):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxmbs import plot as mplot

    q = np.asarray(tr.q)
    t = np.asarray(tr.t)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7, 8), layout="constrained",
                                  gridspec_kw=dict(height_ratios=[2, 1]))
    cg = q[:, :2] + CG * np.stack([np.cos(q[:, 2]), np.sin(q[:, 2])], 1)
    ax.plot(q[:, 0], q[:, 1], "C0", label="rear axle (knife edge)")
    ax.plot(cg[:, 0], cg[:, 1], "C1--", lw=1, label="centre of gravity")
    for k in np.linspace(0, len(t) - 1, 9).round().astype(int):
        # outline of the cart: a 1.8 m x 0.7 m box from 0.3 m behind the axle
        c, s = math.cos(q[k, 2]), math.sin(q[k, 2])
        box = np.array([[-0.3, -0.35], [1.5, -0.35], [1.5, 0.35], [-0.3, 0.35], [-0.3, -0.35]])
        pts = q[k, :2] + box @ np.array([[c, s], [-s, c]])
        ax.plot(pts[:, 0], pts[:, 1], "0.6", lw=0.8)
        mplot.draw(mech, params, q[k], ax=ax, alpha=0.6, scale=3.0)
    ax.set_aspect("equal")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title(f"sideways by {summary['lateral_displacement']:.4f} m "
                 f"(closed form {summary['expected_lateral']:.4f} m)")
    rows = mech.joint("drive").rows
    lam = np.asarray(tr.lam)
    ax2.plot(t, -lam[:, rows[0]], label="traction force (N)")
    ax2.plot(t, -lam[:, rows[1]], label="steering torque (N m)")
    ax2.set_xlabel("t (s)")
    ax2.legend(fontsize=8)
    ax2.grid(alpha=0.3)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    """Run the example; returns the summary dict (see the module docstring)."""
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--cycles", type=int, default=2, help="parking cycles (default 2)")
    ap.add_argument("--dt", type=float, default=1e-3, help="RK4 step, s (default 1e-3)")
    ap.add_argument("--json", action="store_true", help="last output line is one JSON object")
    ap.add_argument("--plot", metavar="PATH", help="write a PNG of the path and driver efforts")
    ap.add_argument("--out", dest="plot", help=argparse.SUPPRESS)  # the old name of --plot
    args = ap.parse_args(argv)
    if args.cycles < 1:
        raise ValueError(f"--cycles must be >= 1, got {args.cycles}")
    mech, params, tr, summary = run(args.cycles, args.dt)
    if args.plot:
        plot(mech, params, tr, args.plot, summary)
    if args.json:
        print(json.dumps(summary))
    else:
        for k, v in summary.items():
            print(f"{k:>22}: {v:.6g}" if isinstance(v, float) else f"{k:>22}: {v}")
    return summary


if __name__ == "__main__":
    main()
