"""Quarter car on a bumpy road: penalty tire contact that lifts off at speed.

A sprung mass 'body' (300 kg) is driven along x at a constant speed V (a driver on its x;
its angle is held at 0) and is free to heave. The wheel (40 kg, radius 0.3 m) hangs under
it on a vertical guide (point-on-line joint) and a suspension spring-damper (20 kN/m,
1.5 kN s/m). The tire is a penalty contact between the wheel's circle and sampled road
terrain: linear stiffness 200 kN/m (exponent 1), Lankarani-Nikravesh hysteresis damping
designed for e = 0.5 at 1 m/s, friction mu = 0.9 regularised with tanh(v_t / 0.1 m/s), so
the wheel rolls. The road is flat for 2 m, then a sinusoid of 2 cm amplitude and 2 m
wavelength fading in over one wavelength. At V near 22 m/s the excitation frequency V/2 m
meets the wheel-hop mode (sqrt(k_tire / m_wheel) / 2 pi ~ 11 Hz) and the tire force
reaches zero: the wheel leaves the road.

All speeds run as one `jax.vmap`-ed batch (the speed is the driver's Params coefficient,
so the speeds share one compilation). RK4, dt = 2e-4 s (the friction regularisation needs
dt mu F_n (1/m + r^2/J) / v_eps < 2.8).

Printed (--json, one line): speeds (m/s), max_tire_force (N), lift_off_fraction (share of
the saved samples after the first bump with zero tire force), max_heave (m, sprung-mass
travel about its start), energy_drift (relative drift of T + V - work of dampers,
friction and drivers; it checks the bookkeeping), static_tire_force (N), seconds.

    python examples/bumpy_road.py [--t1 3] [--speeds 5,10,15,20,25,30] [--json] [--plot fig.png]
"""
from __future__ import annotations

import argparse
import json
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxmbs  # noqa: E402
from jaxmbs.core.equations import force_outputs  # noqa: E402

G = 9.81
M_BODY, M_WHEEL, J_WHEEL, RADIUS = 300.0, 40.0, 1.8, 0.3  # kg, kg, kg m^2, m
K_SUSP, C_SUSP, K_TIRE = 2.0e4, 1.5e3, 2.0e5  # N/m, N s/m, N/m
MU, V_EPS = 0.9, 0.1  # -, m/s
AMP, WAVE, FLAT = 0.02, 2.0, 2.0  # road amplitude, wavelength, flat run-in (m)
GAP = 0.5  # m, wheel centre to sprung-mass reference point


def friction_rate(slip_velocity=V_EPS):
    """Rate (1/s) of the regularised tire friction on the wheel's spin at the static load:
    mu F_n r^2 / (J v_eps). Explicit steps need h rate below their stability bound (RK4: 2.785)."""
    return MU * (M_BODY + M_WHEEL) * G * RADIUS ** 2 / (J_WHEEL * slip_velocity)


def road(x):
    """Road height (m) at x (m): flat, then a sinusoid faded in over one wavelength."""
    s = np.clip((x - FLAT) / WAVE, 0.0, 1.0)
    ramp = s * s * (3 - 2 * s)
    return AMP * ramp * np.sin(2 * np.pi * (x - FLAT) / WAVE)


def build(speed=10.0, road_length=100.0, slip_velocity=V_EPS):
    """The quarter car at speed (m/s) in static equilibrium at x = 0; slip_velocity (m/s):
    the friction's regularisation velocity v_eps (tanh(v_t / v_eps))."""
    xs = np.arange(-2.0, road_length, 0.1)
    d0 = (M_BODY + M_WHEEL) * G / K_TIRE  # static tire deflection
    yw = RADIUS - d0
    m = jaxmbs.Model(gravity=(0.0, -G))
    m.add_body("body", M_BODY, 50.0, position=(0.0, yw + GAP), velocity=(speed, 0.0))
    m.add_body("wheel", M_WHEEL, J_WHEEL, position=(0.0, yw), velocity=(speed, 0.0),
               angular_velocity=-speed / (RADIUS - d0 / 2))
    m.drive_coordinate("drive_x", "body", "x", jaxmbs.constant_velocity(speed))
    m.drive_coordinate("hold_angle", "body", "theta", 0.0)
    m.add_point_on_line("guide", "body", "wheel", axis=(0.0, 1.0), at=(0.0, yw))
    m.add_spring("suspension", "body", "wheel", k=K_SUSP, c=C_SUSP,
                 length=GAP + M_BODY * G / K_SUSP)  # compressed by the body's weight
    m.add_circle_terrain_contact("tire", "wheel", RADIUS, xs, road(xs), k=K_TIRE, exponent=1.0,
                                 restitution=0.5, impact_velocity=1.0, friction=MU,
                                 slip_velocity=slip_velocity)
    return m.build()


def run(speeds, t1, dt, save_dt=2e-3):
    mech, params, q0, v0 = build(road_length=max(speeds) * t1 + 10.0)
    coef = np.zeros((len(speeds), 6))
    coef[:, 1] = speeds
    batch = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (len(speeds),) + a.shape), params)
    batch = jax.vmap(lambda p, c: mech.replace(p, {"drive_x.coef": c}))(batch, jnp.asarray(coef))
    d0 = (M_BODY + M_WHEEL) * G / K_TIRE
    v0s = np.tile(np.asarray(v0), (len(speeds), 1))
    v0s[:, 0] = v0s[:, 3] = speeds
    v0s[:, 5] = -np.asarray(speeds) / (RADIUS - d0 / 2)
    every = int(round(save_dt / dt))
    start = time.perf_counter()
    tr = jaxmbs.simulate_batch(mech, batch, jnp.tile(q0, (len(speeds), 1)), jnp.asarray(v0s),
                               (0.0, t1), dt, save_every=every)
    jax.block_until_ready(tr.q)
    seconds = time.perf_counter() - start
    tire = jax.vmap(jax.vmap(lambda p, q, v, t: force_outputs(mech, p, q, v, t)["tire"],
                             in_axes=(None, 0, 0, 0)))(batch, tr.q, tr.v, tr.t)
    return mech, batch, tr, {k: np.asarray(x) for k, x in tire.items()}, seconds


def summary(speeds, tr, tire, seconds):
    t = np.asarray(tr.t[0])
    x = np.asarray(tr.q[:, :, 3])
    bumpy = x > FLAT  # samples after the road starts to undulate
    Fn = tire["normal"]
    lift = [float(np.mean(Fn[i][bumpy[i]] <= 0.0)) if bumpy[i].any() else 0.0
            for i in range(len(speeds))]
    heave = np.asarray(tr.q[:, :, 1] - tr.q[:, :1, 1])
    return {
        "speeds": [float(s) for s in speeds],
        "max_tire_force": [float(f) for f in Fn.max(1)],
        "min_tire_force": [float(f) for f in Fn.min(1)],
        "lift_off_fraction": lift,
        "max_heave": [float(h) for h in np.abs(heave).max(1)],
        "energy_drift": [float(e) for e in np.asarray(tr.energy_drift())],
        "status": [int(s) for s in np.asarray(tr.status)],
        "static_tire_force": (M_BODY + M_WHEEL) * G,
        "t1": float(t[-1]),
        "seconds": seconds,
    }


def plot(path, mech, params, speeds, tr, tire, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxmbs import plot as jplot

    lo, hi = 0, len(speeds) - 1
    fig, ax = plt.subplots(2, 2, figsize=(11, 7))
    t = np.asarray(tr.t[0])
    for i, ls in ((lo, "-"), (hi, "-")):
        lab = f"V = {speeds[i]:g} m/s"
        ax[0, 0].plot(t, 1e3 * (np.asarray(tr.q[i, :, 1]) - float(tr.q[i, 0, 1])), ls, label=lab)
        ax[0, 1].plot(t, 1e-3 * tire["normal"][i], ls, lw=0.8, label=lab)
    ax[0, 0].set(xlabel="t (s)", ylabel="sprung-mass heave (mm)", title="body heave")
    ax[0, 1].axhline(0.0, color="k", lw=0.6)
    ax[0, 1].axhline(1e-3 * out["static_tire_force"], color="0.5", lw=0.6, ls="--")
    ax[0, 1].set(xlabel="t (s)", ylabel="tire normal force (kN)",
                 title="tire force (zero: wheel off the road)")
    for a in ax[0]:
        a.legend(fontsize=8)
    ax[1, 0].plot(speeds, out["lift_off_fraction"], "o-")
    ax[1, 0].set(xlabel="speed (m/s)", ylabel="share of time airborne",
                 title="lift-off fraction on the bumpy section")
    p_hi = jax.tree_util.tree_map(lambda a: a[hi], params)
    k = int(np.argmin(tire["normal"][hi]))
    jplot.draw(mech, p_hi, np.asarray(tr.q[hi, k]), ax=ax[1, 1])
    ax[1, 1].set_title(f"V = {speeds[hi]:g} m/s, t = {t[k]:.2f} s (least tire force)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--t1", type=float, default=3.0, help="end time, s")
    ap.add_argument("--dt", type=float, default=2e-4, help="RK4 step, s")
    ap.add_argument("--speeds", default="5,10,15,20,25,30", help="comma-separated speeds, m/s")
    ap.add_argument("--json", action="store_true", help="print a one-line JSON summary")
    ap.add_argument("--plot", metavar="PATH", help="write the figure to this file (png)")
    ap.add_argument("--out", dest="plot", help=argparse.SUPPRESS)  # the old name of --plot
    a = ap.parse_args(argv)
    speeds = [float(s) for s in a.speeds.split(",")]
    mech, params, tr, tire, seconds = run(speeds, a.t1, a.dt)
    out = summary(speeds, tr, tire, seconds)
    if a.plot:
        plot(a.plot, mech, params, speeds, tr, tire, out)
    if a.json:
        print(json.dumps(out))
    else:
        for i, s in enumerate(speeds):
            print(f"V = {s:5.1f} m/s: max tire force {out['max_tire_force'][i]:8.0f} N, "
                  f"airborne {100 * out['lift_off_fraction'][i]:5.1f} % of the bumpy section, "
                  f"max heave {1e3 * out['max_heave'][i]:6.1f} mm, "
                  f"energy drift {out['energy_drift'][i]:.1e}")
        print(f"static tire force {out['static_tire_force']:.0f} N; {seconds:.1f} s for the batch")
    return out


if __name__ == "__main__":
    main()
