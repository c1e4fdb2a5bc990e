"""Cam-follower: a cam turning at constant speed lifts a spring-loaded follower; at which
cam speed does the follower jump (lose contact)?

The cam (a body on a ground pivot at the origin, driven at constant angular speed w) carries
an eccentric circle (radius R = 30 mm, centre e = 10 mm from the pivot) or, with
--profile spline, a closed C^2 spline profile through 12 points. The follower (m = 0.2 kg)
slides on a vertical prismatic joint above the pivot and is pressed onto the cam by a
spring (k = 500 N/m, preload x0 = 10 mm) and gravity; its face is flat (a line curve) or,
with --follower roller, a roller of radius 10 mm fixed to it. The contact is a cam joint:
two curves in permanent frictionless tangent contact, whose multiplier gives the contact
force N (positive = the cam pushes the follower).

The mechanism is fully driven (DOF 0), so the follower motion is the cam's kinematics and
inverse dynamics gives the contact force exactly (the same as forward dynamics with the
driver, which --forward checks). A real follower leaves the cam where N would have to
become negative: the jump speed is the lowest w at which min over the cam angle of N(w)
reaches 0, found by a sweep and then bisection. For the eccentric cam with a flat follower,
lift x = e (1 - cos theta) and N = k (x0 + x) + m (g + x''), which is smallest at theta = pi
once m w^2 > k: the analytic jump speed is w_j = sqrt((m g + k x0 + 2 k e) / (m e)).

Printed / JSON: jump_speed_rad_s, analytic_jump_speed_rad_s (eccentric + flat only, else
null), max_contact_force (N, over the sweep speeds below the jump speed), speeds and
min contact force per speed, seconds (wall time).

    python examples/cam_follower.py [--profile eccentric|spline] [--follower flat|roller]
        [--plot cam_follower.png] [--forward] [--json]
"""
from __future__ import annotations

import argparse
import json
import math
import time

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

import jaxmbs  # noqa: E402
from jaxmbs import curves  # noqa: E402

G = 9.81  # m/s^2
E, R = 0.010, 0.030  # eccentricity and radius of the circular cam, m
M_F = 0.2  # follower mass, kg
K, X0 = 500.0, 0.010  # spring stiffness N/m, preload compression m
ROLLER = 0.010  # roller radius, m
N_ANGLES = 241  # cam angles per revolution


def spline_profile(n=12, base=0.022, lift=0.018):
    """Points (counter-clockwise) of a smooth closed cam with one lobe: polar radius
    base + lift (1 + sin phi)^2 / 4 at polar angle phi (m), largest pointing down, so the
    follower rests on the base circle at theta = 0 and is lifted around theta = pi."""
    phi = np.linspace(0, 2 * np.pi, n, endpoint=False) + np.pi / 2
    rho = base + lift * (1 - np.sin(phi)) ** 2 / 4
    return np.stack([rho * np.cos(phi), rho * np.sin(phi)], 1)


def build(w=10.0, profile="eccentric", follower="flat"):
    """The driven cam-follower (cam speed w, rad/s). Returns (mech, params, q0, v0)."""
    m = jaxmbs.Model(gravity=(0.0, -G))
    m.add_body("cam", mass=1.0, inertia=1e-3)
    m.add_revolute("pivot", "ground", "cam", at=(0.0, 0.0))
    if profile == "eccentric":
        cam = curves.circle((0.0, -E), R)
        top = R - E  # highest point of the cam on the follower axis at theta = 0
    elif profile == "spline":
        cam = curves.spline(spline_profile())
        r = np.asarray(cam(np.linspace(0, 12, 4801))[0])
        top = float(np.max(r[np.abs(r[:, 0]) < 2e-3, 1]))  # rough, assembled below
    else:
        raise ValueError(f"profile must be 'eccentric' or 'spline', got {profile!r}")
    if follower == "flat":
        face, y0 = curves.line((0.0, 0.0), (1.0, 0.0)), top
    elif follower == "roller":
        face, y0 = curves.circle((0.0, 0.0), ROLLER), top + ROLLER
    else:
        raise ValueError(f"follower must be 'flat' or 'roller', got {follower!r}")
    m.add_body("follower", mass=M_F, inertia=1e-4, position=(0.0, y0))
    m.add_prismatic("slide", "ground", "follower", axis=(0.0, 1.0))
    m.add_cam("contact", "cam", "follower", cam, face)
    m.add_spring("spring", "ground", "follower", k=K, at_i=(0.0, 0.3), at_j=(0.0, y0),
                 length=0.3 - y0 + X0)
    m.drive_angle("motor", "cam", jaxmbs.constant_velocity(w))
    mech, params, q0, v0 = m.build()
    asm = jaxmbs.assemble(mech, params, q0, v0, fixed=("cam.theta", "cam.x", "cam.y"))
    return mech, params, asm.q, asm.v


def sweep_one(mech, params, q0, w, theta):
    """Inverse dynamics over one revolution at speed w: (lift m, contact force N) per angle."""
    p = mech.replace(params, {"motor.coef": [0.0, w, 0.0, 0.0, 0.0, 0.0]})
    res = jaxmbs.inverse_dynamics(mech, p, q0, theta / w)
    if int(res.status) != 0:
        raise RuntimeError(f"inverse dynamics failed at w = {w}: {jaxmbs.status.describe(res.status)}")
    iy = mech.coordinate_index("follower.y")
    lift = np.asarray(res.q[:, iy]) - float(q0[iy])
    return lift, np.asarray(res.reactions["contact"]["normal_force"])


def jump_speed(mech, params, q0, theta, speeds):
    """Sweep `speeds` (increasing) and bisect the first bracket where min N crosses 0."""
    mins = []
    for w in speeds:
        mins.append(float(np.min(sweep_one(mech, params, q0, w, theta)[1])))
        if mins[-1] <= 0:
            break
    if mins[-1] > 0:
        return None, mins
    if len(mins) == 1 and np.min(sweep_one(mech, params, q0, 1e-9, theta)[1]) <= 0:
        return 0.0, mins  # no contact force even at rest: the spring cannot hold the follower
    lo, hi = (speeds[len(mins) - 2], speeds[len(mins) - 1]) if len(mins) > 1 else (0.0, speeds[0])
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if np.min(sweep_one(mech, params, q0, mid, theta)[1]) > 0:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi), mins


def analytic_jump_speed():
    """Eccentric cam, flat follower: w_j = sqrt((m g + k x0 + 2 k e) / (m e))."""
    return math.sqrt((M_F * G + K * X0 + 2 * K * E) / (M_F * E))


def forward_check(mech, params, q0, v0, w, theta, n_steps=2000):
    """Forward dynamics with the driver over one revolution (RK4): max |N_forward - N_inverse|."""
    p = mech.replace(params, {"motor.coef": [0.0, w, 0.0, 0.0, 0.0, 0.0]})
    asm = jaxmbs.assemble(mech, p, q0, 0 * v0, fixed=("cam.theta",))
    T = 2 * math.pi / w
    traj = jaxmbs.simulate(mech, p, asm.q, asm.v, (0.0, T), T / n_steps, save_every=n_steps // 20)
    N_fwd = np.array([float(jaxmbs.reactions(mech, p, q, l)["contact"]["normal_force"])
                      for q, l in zip(traj.q, traj.lam)])
    _, N_inv = sweep_one(mech, params, q0, w, w * np.asarray(traj.t))
    return float(np.max(np.abs(N_fwd - N_inv))), float(np.max(np.asarray(traj.constraint_error)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--profile", default="eccentric", choices=("eccentric", "spline"),
                    help="cam profile: eccentric circle or closed C^2 spline (default eccentric)")
    ap.add_argument("--follower", default="flat", choices=("flat", "roller"),
                    help="follower face: flat or a 10 mm roller (default flat)")
    ap.add_argument("--speeds", default="20:200:10", help="sweep lo:hi:step in rad/s (default 20:200:10)")
    ap.add_argument("--plot", metavar="PATH", help="write a PNG of lift and contact force vs cam angle")
    ap.add_argument("--out", dest="plot", help=argparse.SUPPRESS)  # the old name of --plot
    ap.add_argument("--forward", action="store_true", help="cross-check one speed by forward dynamics")
    ap.add_argument("--json", action="store_true", help="last output line is one JSON object")
    args = ap.parse_args(argv)
    t_start = time.perf_counter()

    mech, params, q0, v0 = build(10.0, args.profile, args.follower)
    lo, hi, step = (float(x) for x in args.speeds.split(":"))
    speeds = np.arange(lo, hi + 1e-9, step)
    theta = np.linspace(0.0, 2 * np.pi, N_ANGLES)
    wj, mins = jump_speed(mech, params, q0, theta, speeds)
    w_an = analytic_jump_speed() if (args.profile, args.follower) == ("eccentric", "flat") else None
    below = [w for w in speeds[: len(mins)] if wj is None or w < wj]
    fmax = max(float(np.max(sweep_one(mech, params, q0, w, theta)[1])) for w in below) if below else None
    lift, _ = sweep_one(mech, params, q0, speeds[0], theta)
    print(f"cam-follower ({args.profile} cam, {args.follower} follower): stroke "
          f"{1e3 * np.ptp(lift):.2f} mm; min contact force per speed: "
          + ", ".join(f"{w:g}: {f:.2f} N" for w, f in zip(speeds, mins)))
    if wj is None:
        print(f"no follower jump up to {speeds[-1]:g} rad/s")
    else:
        print(f"follower jump (contact force reaches 0) at w = {wj:.4f} rad/s"
              + (f"; analytic {w_an:.4f} rad/s" if w_an else ""))
    out = {"profile": args.profile, "follower": args.follower,
           "jump_speed_rad_s": wj, "analytic_jump_speed_rad_s": w_an,
           "max_contact_force": fmax, "speeds": [float(w) for w in speeds[: len(mins)]],
           "min_contact_force": mins}
    if args.forward:
        w = 0.8 * wj if wj else float(speeds[0])
        err, cerr = forward_check(mech, params, q0, v0, w, theta)
        print(f"forward dynamics at w = {w:.2f} rad/s: max |N_forward - N_inverse| = {err:.2e} N, "
              f"max constraint error {cerr:.1e}")
        out["forward_force_error"], out["forward_constraint_error"] = err, cerr
    if args.plot:
        _plot(mech, params, q0, theta, wj or float(speeds[-1]), args.plot, args)
        print(f"plot written to {args.plot}")
    out["seconds"] = time.perf_counter() - t_start
    if args.json:
        print(json.dumps(out))
    return out


def _plot(mech, params, q0, theta, wj, path, args):
    import matplotlib.pyplot as plt

    from jaxmbs import plot

    fig, ax = plt.subplots(1, 3, figsize=(15, 4.5), layout="constrained")
    plot.draw(mech, params, np.asarray(q0), ax=ax[0], labels=True)
    ax[0].set_title(f"{args.profile} cam, {args.follower} follower (theta = 0)")
    deg = np.degrees(theta)
    for f in (0.5, 0.8, 1.0, 1.2):
        w = f * wj
        lift, N = sweep_one(mech, params, q0, w, theta)
        ax[1].plot(deg, 1e3 * lift, label=f"{w:.0f} rad/s")
        ax[2].plot(deg, N, label=f"{w:.0f} rad/s" + (" (jump)" if f == 1.0 else ""))
    ax[1].set(xlabel="cam angle (deg)", ylabel="follower lift (mm)", title="lift (same at every speed)")
    ax[2].axhline(0, color="k", lw=0.8)
    ax[2].set(xlabel="cam angle (deg)", ylabel="contact force (N)",
              title="contact force; < 0: the follower would jump")
    ax[2].legend()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
