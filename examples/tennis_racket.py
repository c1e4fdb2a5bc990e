"""Tennis racket theorem (Dzhanibekov effect): a free rigid body spun about its
intermediate principal axis flips over periodically.

Inertia about the CG diag(1, 2, 3)e-3 kg m^2 (body axes), no gravity, initial angular
velocity (0.1, 10, 0) rad/s in body axes. One `SpatialModel` body (position and unit
quaternion; angular velocity in body axes), RK4 with dt = 1e-3 s, every step saved.

Printed: the body-axis angular velocity at t = 0.5, 1, 2, 5 s, the first four times at
which omega_y changes sign (found between samples by cubic Hermite interpolation with
omega_y' from Euler's equations), the relative drift of the kinetic energy and of the
angular momentum in global axes, max |L(t) - L(0)| / |L(0)|.

    python examples/tennis_racket.py [--t1 10] [--dt 1e-3] [--json] [--plot racket.png]
"""
from __future__ import annotations

import argparse
import json

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

import jaxmbs  # noqa: E402
from jaxmbs.spatial.geometry import quat_to_R  # noqa: E402

J = np.array([1e-3, 2e-3, 3e-3])  # principal moments about the CG, kg m^2
OMEGA0 = np.array([0.1, 10.0, 0.0])  # body axes, rad/s
REPORT_TIMES = (0.5, 1.0, 2.0, 5.0)


def build():
    m = jaxmbs.SpatialModel(gravity=(0.0, 0.0, 0.0))
    m.add_body("racket", mass=1.0, inertia=J, angular_velocity_body=OMEGA0)
    return m.build()


def sign_changes(t, w, J=J, count=4):
    """Times (s) where w[:, 1] changes sign: cubic Hermite interpolation between samples,
    with wdot_y = (J3 - J1)/J2 w_z w_x (Euler's equations), refined by bisection."""
    wy = w[:, 1]
    dwy = (J[2] - J[0]) / J[1] * w[:, 2] * w[:, 0]
    out = []
    for i in np.nonzero(np.sign(wy[:-1]) * np.sign(wy[1:]) < 0)[0]:
        h = t[i + 1] - t[i]
        y0, y1, m0, m1 = wy[i], wy[i + 1], dwy[i] * h, dwy[i + 1] * h

        def H(s):
            return ((2 * s**3 - 3 * s**2 + 1) * y0 + (s**3 - 2 * s**2 + s) * m0
                    + (-2 * s**3 + 3 * s**2) * y1 + (s**3 - s**2) * m1)
        a, b = 0.0, 1.0
        for _ in range(60):
            c = 0.5 * (a + b)
            a, b = (c, b) if np.sign(H(c)) == np.sign(y0) else (a, c)
        out.append(float(t[i] + 0.5 * (a + b) * h))
        if len(out) == count:
            break
    return out


def run(t1=5.0, dt=1e-3):
    mech, params, q0, v0 = build()
    traj = jaxmbs.simulate(mech, params, q0, v0, (0.0, t1), dt)
    t, q, v = np.asarray(traj.t), np.asarray(traj.q), np.asarray(traj.v)
    w = v[:, 3:6]
    R = np.asarray(jax.vmap(quat_to_R)(q[:, 3:7]))
    L = np.einsum("sij,sj->si", R, w * J)  # angular momentum, global axes
    return mech, traj, t, w, L


def main(argv=None):
    ap = argparse.ArgumentParser(description="Tennis racket theorem: a free body spun about "
                                 "its intermediate axis flips; flip times and drifts.")
    ap.add_argument("--t1", type=float, default=10.0, help="final time, s (default 10: four flips)")
    ap.add_argument("--dt", type=float, default=1e-3, help="RK4 step, s (default 1e-3)")
    ap.add_argument("--json", action="store_true", help="last output line is one JSON object")
    ap.add_argument("--plot", metavar="PATH", help="write a PNG of omega(t) (needs matplotlib)")
    args = ap.parse_args(argv)
    mech, traj, t, w, L = run(args.t1, args.dt)
    times = [tt for tt in REPORT_TIMES if tt <= args.t1 + 1e-12]
    idx = [int(np.argmin(np.abs(t - tt))) for tt in times]
    out = {"t": times, "omega_body": [[float(x) for x in w[i]] for i in idx],
           "omega_y_sign_changes": sign_changes(t, w),
           "energy_drift": float(traj.energy_drift()),
           "momentum_drift": float(np.max(np.linalg.norm(L - L[0], axis=1)) / np.linalg.norm(L[0])),
           "status": int(traj.status)}
    for tt, i in zip(times, idx):
        print(f"t = {tt:4.1f} s: omega_body = {np.array2string(w[i], precision=9)} rad/s")
    print(f"omega_y changes sign at {', '.join(f'{x:.9f}' for x in out['omega_y_sign_changes'])} s")
    print(f"energy drift {out['energy_drift']:.2e}, angular momentum drift {out['momentum_drift']:.2e}")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 3.5))
        for k, c in enumerate("xyz"):
            ax.plot(t, w[:, k], label=f"omega_{c} (body)")
        ax.set_xlabel("t (s)"), ax.set_ylabel("rad/s"), ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
