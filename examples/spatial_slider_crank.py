"""Spatial slider-crank (IFToMM benchmark), free (not driven), in 3D redundant coordinates.

Crank pivot A = (0, 0.1, 0.12) m, revolute about the global x axis; crank 0.08 m along +z
at t = 0 (0.12 kg, CG 0.04 m from A, inertia about its CG diag(1e-4, 1e-4, 1e-5) kg m^2
with the body z axis along the crank); connecting rod 0.3 m from the crank pin B to the
slider point C (0.5 kg, CG at its middle, inertia diag(4e-4, 4e-3, 4e-3) kg m^2 with the
body x axis along the rod); slider 2 kg (1e-4 kg m^2 about each axis) on the global x
axis, C = (0.2, 0, 0) at t = 0. Joints: revolute ground-crank, spherical crank-rod at B,
universal rod-slider at C (the slider's x axis and a rod axis perpendicular to the rod,
(0, -2, 1)/sqrt(5) at t = 0), prismatic ground-slider along x. g = 9.81 m/s^2 along -z.
Initial crank rate 6 rad/s about +x; the other velocities follow from `jaxmbs.assemble`.
RK4, dt = 1e-3 s, coordinate projection.

Printed: crank angle (unwrapped, rad, from +z toward the rotation), slider position and
velocity, total energy (J, potential m g z) at t = 0.1, 0.25, 0.5, 1, 2, 5 s, and the
largest constraint residual over the run.

    python examples/spatial_slider_crank.py [--t1 5] [--dt 1e-3] [--json] [--plot crank3d.png]
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

G = 9.81  # m/s^2
A = np.array([0.0, 0.1, 0.12])  # crank pivot, m
L_CRANK, L_ROD = 0.08, 0.3  # m
C0 = np.array([0.2, 0.0, 0.0])  # slider point at t = 0, m
OMEGA0 = 6.0  # initial crank rate about +x, rad/s
REPORT_TIMES = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0)  # s


def _frame(x_axis, y_hint):
    """Rotation matrix whose first column is x_axis and second lies along y_hint."""
    x = np.asarray(x_axis, float) / np.linalg.norm(x_axis)
    y = np.asarray(y_hint, float) - (np.asarray(y_hint, float) @ x) * x
    y /= np.linalg.norm(y)
    return np.stack([x, y, np.cross(x, y)], 1)


def build():
    """The free spatial slider-crank: (mech, params, q0, v0), v0 from the crank rate only
    (call `jaxmbs.assemble` with the crank's angular velocity fixed for the rest)."""
    m = jaxmbs.SpatialModel(gravity=(0.0, 0.0, -G))
    B = A + np.array([0.0, 0.0, L_CRANK])
    # crank: body z along the crank (A -> B), body x along the global x axis
    m.add_body("crank", mass=0.12, inertia=(1e-4, 1e-4, 1e-5), position=A,
               orientation=np.eye(3), cg=(0.0, 0.0, 0.04), angular_velocity=(OMEGA0, 0.0, 0.0))
    # rod: body x along B -> C, body y along the universal joint's rod axis
    u_rod = (C0 - B) / np.linalg.norm(C0 - B)
    a_rod = np.array([0.0, -2.0, 1.0]) / math.sqrt(5.0)
    m.add_body("rod", mass=0.5, inertia=(4e-4, 4e-3, 4e-3), position=B,
               orientation=_frame(u_rod, a_rod), cg=(L_ROD / 2, 0.0, 0.0))
    m.add_body("slider", mass=2.0, inertia=1e-4, position=C0)
    m.add_revolute("A", "ground", "crank", at=A, axis=(1.0, 0.0, 0.0))
    m.add_spherical("B", "crank", "rod", at=B)
    m.add_universal("C", "rod", "slider", at=C0, axis_i=a_rod, axis_j=(1.0, 0.0, 0.0))
    m.add_prismatic("guide", "ground", "slider", at=C0, axis=(1.0, 0.0, 0.0))
    return m.build()


def initial_state(mech, params, q0, v0):
    """Consistent velocities for the crank rate OMEGA0 (crank angular velocity fixed)."""
    fixed = ("crank.wx", "crank.wy", "crank.wz")
    return jaxmbs.assemble(mech, params, q0, v0, fixed=fixed)


def crank_angle(q):
    """Crank angle (rad) from +z toward the rotation about +x, per saved state, unwrapped."""
    from jaxmbs.spatial.geometry import quat_to_R
    R = np.asarray(jax.vmap(quat_to_R)(q[:, 3:7]))
    z = R[:, :, 2]  # the crank direction (body z) in global coordinates
    return np.unwrap(np.arctan2(-z[:, 1], z[:, 2]))


def run(t1=5.0, dt=1e-3):
    mech, params, q0, v0 = build()
    s0 = initial_state(mech, params, q0, v0)
    save = max(1, int(round(0.01 / dt)))
    t0 = time.perf_counter()
    traj = jaxmbs.simulate(mech, params, s0.q, s0.v, (0.0, t1), dt, save_every=save)
    traj.q.block_until_ready()
    wall = time.perf_counter() - t0
    return mech, params, traj, wall


def main(argv=None):
    ap = argparse.ArgumentParser(description="Free spatial slider-crank (IFToMM) in 3D "
                                 "redundant coordinates: crank angle, slider motion, energy.")
    ap.add_argument("--t1", type=float, default=5.0, help="final time, s (default 5)")
    ap.add_argument("--dt", type=float, default=1e-3, help="RK4 step, s (default 1e-3)")
    ap.add_argument("--json", action="store_true", help="last output line is one JSON object")
    ap.add_argument("--plot", metavar="PATH", help="write a PNG of the motion (needs matplotlib)")
    args = ap.parse_args(argv)
    mech, params, traj, wall = run(args.t1, args.dt)
    t = np.asarray(traj.t)
    q, v = np.asarray(traj.q), np.asarray(traj.v)
    ang = crank_angle(q)
    sx = mech.coordinate_index("slider.x")
    svx = mech.velocity_index("slider.x")
    E = np.asarray(traj.kinetic + traj.potential)
    times = [tt for tt in REPORT_TIMES if tt <= args.t1 + 1e-12]
    idx = [int(np.argmin(np.abs(t - tt))) for tt in times]
    out = {"t": times, "crank_angle": [float(ang[i]) for i in idx],
           "slider_x": [float(q[i, sx]) for i in idx], "slider_v": [float(v[i, svx]) for i in idx],
           "energy": [float(E[i]) for i in idx],
           "max_constraint_error": float(np.max(np.asarray(traj.constraint_error))),
           "energy_drift": float(traj.energy_drift()), "status": int(traj.status),
           "wall_s": wall}
    for tt, i in zip(times, idx):
        print(f"t = {tt:5.2f} s: crank {ang[i]: .9f} rad, slider x {q[i, sx]: .9f} m, "
              f"v {v[i, svx]: .9f} m/s, E {E[i]: .12f} J")
    print(f"max constraint error {out['max_constraint_error']:.2e}, energy drift "
          f"{out['energy_drift']:.2e}, status {out['status']}, {wall:.2f} s (incl. compile)")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig = plt.figure(figsize=(11, 4))
        ax = fig.add_subplot(121)
        ax.plot(t, ang, label="crank angle (rad)")
        ax.plot(t, q[:, sx] * 10, label="slider x (dm)")
        ax.set_xlabel("t (s)"), ax.legend()
        ax3 = fig.add_subplot(122, projection="3d")
        from jaxmbs import plot as jplot
        jplot.draw(mech, params, q[0], ax3)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
