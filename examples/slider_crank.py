"""Driven slider-crank: inverse dynamics over one crank revolution (docs/reference_problems.md §2).

Crank L1 = 0.15 m (M1 = 0.36 kg, J1 = 0.002727 kg m^2 about the pivot), connecting rod
L2 = 0.30 m (uniform, M2 = 0.151104 kg, J2 = 0.0045339259 kg m^2 about the crank-pin
end), slider M3 = 0.075552 kg on the line through the crank pivot; no gravity. A driving
constraint turns the crank at the constant speed omega = 150 rad/s (angle = omega t), and
inverse dynamics gives the motor torque that realises this motion, the joint reactions
and the slider acceleration.

Model (jaxmbs elements only):
* 'crank': a body whose reference point is the pivot O = (0, 0). Its CG is also put at
  the pivot, so that J1 (given about the pivot) is its inertia about the CG. This is an
  assumption (Sec. 2 does not locate the crank's CG), and it is harmless here: with
  g = 0 and a constant crank speed the CG of the crank moves on a circle at constant
  speed and exerts no torque about O, so the motor torque and the slider motion do not
  depend on it (only the pivot reaction does).
* 'rod': reference point at its centre (its CG), inertia about the CG
  J2 - M2 (L2/2)^2 (parallel-axis theorem).
* 'slider': a body on a prismatic joint 'P' along the x axis; revolutes 'O'
  (ground-crank), 'A' (crank-rod at the crank pin), 'B' (rod-slider).
* 'motor': `drive_joint` on 'O' with `constant_velocity(150)`; its reaction
  reactions['motor']['effort'] is the torque the motor applies to the crank, positive
  in the direction of rotation (counter-clockwise).

Checks printed: the slider acceleration against the closed form of Sec. 2, and the
power balance tau * omega = dT/dt = v^T M a (no gravity, constant mass matrix in these
coordinates), which checks the multipliers independently of how they were computed.

    python examples/slider_crank.py [--json] [--plot slider_crank.png]
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

# the model is the one `jaxmbs demo` uses (docs/reference_problems.md §2; see its docstring)
from jaxmbs.cli import L1, L2, OMEGA  # noqa: E402
from jaxmbs.cli import slider_crank as build  # noqa: E402


def slider_acceleration_exact(phi, omega=OMEGA):
    """Closed-form slider acceleration (m/s^2) at crank angle phi (rad);
    docs/reference_problems.md §2."""
    s, c = np.sin(phi), np.cos(phi)
    S = np.sqrt(L2**2 - L1**2 * s**2)
    return (-L1 * omega**2 * c - L1**2 * omega**2 * (c**2 - s**2) / S
            - L1**4 * omega**2 * s**2 * c**2 / S**3)


def main(argv=None):
    """Run the example; returns the JSON dict (crank angles in deg, torque in N m,
    slider acceleration in m/s^2)."""
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--json", action="store_true", help="last output line is one JSON object")
    ap.add_argument("--plot", metavar="PATH", help="write a PNG (needs matplotlib)")
    args = ap.parse_args(argv)

    mech, params, q0, v0 = build()
    angles = np.arange(0, 360, 15)  # deg
    ts = jnp.asarray(np.radians(angles) / OMEGA)
    t0 = time.perf_counter()
    res = jaxmbs.inverse_dynamics(mech, params, q0, ts)
    jax.block_until_ready(res.lam)
    wall = time.perf_counter() - t0
    if int(res.status) != 0:
        raise RuntimeError(f"inverse dynamics failed: {jaxmbs.status.describe(res.status)}")

    torque = np.asarray(res.reactions["motor"]["effort"])
    xdd = np.asarray(res.a[:, mech.coordinate_index("slider.x")])
    exact = slider_acceleration_exact(np.radians(angles))
    dev = float(np.max(np.abs(xdd - exact)))
    # power balance: tau * omega = dT/dt = v^T M a (every body's reference point is its CG)
    Mdiag = np.concatenate([[m, m, i] for m, i in
                            zip(np.asarray(params.bodies["planar_rigid"]["mass"]),
                                np.asarray(params.bodies["planar_rigid"]["inertia"]))])
    dTdt = np.sum(np.asarray(res.v) * Mdiag * np.asarray(res.a), axis=1)
    power_err = float(np.max(np.abs(torque * OMEGA - dTdt)))

    print(f"slider-crank inverse dynamics at {OMEGA:g} rad/s ({len(angles)} crank angles, "
          f"{wall:.2f} s incl. compile)")
    print(f"{'angle':>6} {'torque (N m)':>13} {'slider acc (m/s^2)':>19} {'closed form':>13}")
    for a, tq, x, e in zip(angles, torque, xdd, exact):
        print(f"{a:6.0f} {tq:13.6f} {x:19.6f} {e:13.6f}")
    print(f"max |slider acceleration - closed form| = {dev:.3e} m/s^2 "
          f"(relative {dev / np.max(np.abs(exact)):.1e})")
    print(f"max |torque * omega - dT/dt| = {power_err:.3e} W "
          f"(peak power {np.max(np.abs(torque)) * OMEGA:.1f} W)")
    print(f"driving torque on this grid: max {torque.max():+.4f} N m at "
          f"{angles[np.argmax(torque)]} deg, min {torque.min():+.4f} N m at "
          f"{angles[np.argmin(torque)]} deg")

    out = {"crank_angle_deg": [int(a) for a in angles],
           "driving_torque": [float(x) for x in torque],
           "slider_acceleration": [float(x) for x in xdd]}
    if args.plot:
        _plot(mech, params, q0, args.plot, angles, torque)
        print(f"plot written to {args.plot}")
    if args.json:
        print(json.dumps(out))
    return out


def _plot(mech, params, q0, path, angles, torque):
    """Mechanism drawing at 60 deg, torque and slider acceleration over a revolution."""
    import matplotlib.pyplot as plt

    from jaxmbs import plot

    # a finer revolution for smooth curves
    fine = np.linspace(0, 360, 181)
    r = jaxmbs.inverse_dynamics(mech, params, q0, jnp.asarray(np.radians(fine) / OMEGA))
    fig = plt.figure(figsize=(11, 7), layout="constrained")
    top, bottom = fig.subfigures(2, 1, height_ratios=(1, 1.3))
    ax = top.subplots(1, 1)
    for a in (0, 120, 60):
        k = int(np.argmin(np.abs(fine - a)))
        plot.draw(mech, params, np.asarray(r.q[k]), ax=ax, alpha=1.0 if a == 60 else 0.25,
                  labels=a == 60)
    ax.set_title("slider-crank at crank angle 60 deg (faint: 0 and 120 deg)")
    a1, a2 = bottom.subplots(1, 2)
    a1.plot(fine, np.asarray(r.reactions["motor"]["effort"]), label="inverse dynamics")
    a1.plot(angles, torque, "o", ms=4, label="15-degree grid")
    a1.set_xlabel("crank angle (deg)")
    a1.set_ylabel("driving torque (N m)")
    a1.legend(fontsize=8)
    a2.plot(fine, np.asarray(r.a[:, mech.coordinate_index("slider.x")]), label="jaxmbs")
    a2.plot(fine, slider_acceleration_exact(np.radians(fine)), "--", label="closed form")
    a2.set_xlabel("crank angle (deg)")
    a2.set_ylabel("slider acceleration (m/s²)")
    a2.legend(fontsize=8)
    for a in (a1, a2):
        a.set_xlim(0, 360)
        a.set_xticks(range(0, 361, 60))
        a.grid(alpha=0.3)
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
