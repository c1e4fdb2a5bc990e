"""Car axis (Test Set for IVP Solvers, problem "caraxis"), forward dynamics to t = 3.

docs/reference_problems.md §5: two point masses l = (xl, yl) and r = (xr, yr), each of mass
k = M eps^2 / 2, joined by an axis of length L, with a prescribed (rheonomic) point
B(t) = (xb, yb) = (sqrt(L^2 - yb^2), r sin(w t)); constraints xb xl + yb yl = 0 and
|l - r| = L; springs of stiffness 1 and free length L0 from the origin to l and from B to
r; gravity k g along -y on each point.  Test Set units (read as SI).

Built from jaxmbs elements only:

* the prescribed point B lies at distance L from the origin, so it is the tip (L, 0) of
  a body "arm" pinned to the ground at the origin (revolute) whose angle is driven by the
  user profile theta_B(t) = arcsin(r sin(w t) / L) (drive_angle with a JAX function;
  its derivatives come from autodiff);
* xb xl + yb yl = 0 says that l lies on the line through the origin perpendicular to
  the arm: add_point_on_line(body_i = arm, point_i = (0, 0), axis_i = (0, 1), body_j = l);
  the jaxmbs row is -(B/L) . l, i.e. the Test Set's constraint divided by -L;
* |l - r| = L is add_distance between the two particles;
* the springs are add_spring (ground origin -> l, arm tip -> r), gravity is
  Model(gravity=(0, -g)) acting on the particles' mass k, so their weight is k g.

The arm is fully prescribed (3 coordinates, 3 constraint rows: pin and driver), so its
mass and inertia (1 kg, 1 kg m^2 here) do not affect the particles; the forces on it
are absorbed by the pin and the driver.  7 coordinates, 5 rows, 2 DOF.

Integrator: adaptive DormandPrince5 (default rtol = 1e-11, atol = 1e-13) with
coordinate projection after every step.

    python examples/car_axis.py [--t1 3] [--rtol 1e-11] [--json]
"""
from __future__ import annotations

import argparse
import json
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxmbs as mb  # noqa: E402

EPS, M, L, L0, R, W, GRAV = 1e-2, 10.0, 1.0, 0.5, 0.1, 10.0, 1.0
K = M * EPS**2 / 2.0  # mass of each wheel point
T_END = 3.0

# Test Set reference solution at t = 3 (problems/caraxis.F, routine solut):
# (xl, yl, xr, yr, xl', yl', xr', yr')
TESTSET_Y_T3 = (0.4934557842755629e-001, 0.4969894602303324e000, 0.1041742524885400e001,
                0.3739110272652214e000, -0.7705836840321485e-001, 0.7446866596327776e-002,
                0.1755681574942899e-001, 0.7703410437794031e000)


def arm_angle(t):
    """theta_B(t) = arcsin(r sin(w t) / L): the angle of the prescribed point B (rad)."""
    return jnp.arcsin(R * jnp.sin(W * t) / L)


def build():
    """The car axis at t = 0 (Test Set initial state). Returns jaxmbs.Built; the particle
    coordinates are q[3:7] = (xl, yl, xr, yr)."""
    m = mb.Model(gravity=(0.0, -GRAV))
    m.add_body("arm", mass=1.0, inertia=1.0, position=(0.0, 0.0), angle=0.0,
               angular_velocity=float(jax.grad(arm_angle)(0.0)))
    m.add_particle("l", mass=K, position=(0.0, L0), velocity=(-L0 / L, 0.0))
    m.add_particle("r", mass=K, position=(L, L0), velocity=(-L0 / L, 0.0))
    m.add_revolute("O", "ground", "arm", at=(0.0, 0.0))
    m.drive_angle("B", "arm", arm_angle)
    m.add_point_on_line("perp", "arm", "l", point_i=(0.0, 0.0), axis_i=(0.0, 1.0))
    m.add_distance("axis", "l", "r", length=L)
    m.add_spring("left", "ground", "l", k=1.0, length=L0, at_i=(0.0, 0.0))
    m.add_spring("right", "arm", "r", k=1.0, length=L0, point_i=(L, 0.0))
    return m.build()


def run(t1=T_END, rtol=1e-11, atol=1e-13, max_steps=6000, h0=1e-4, save_dt=None):
    """Simulate to t1; returns dict(traj, q (4,), v (4,) at t1, wall_s)."""
    mech, params, q0, v0 = build()
    integ = mb.DormandPrince5(rtol=rtol, atol=atol, max_steps=max_steps, h0=h0)
    dt = t1 if save_dt is None else save_dt
    t0 = time.perf_counter()
    tr = mb.simulate(mech, params, q0, v0, (0.0, t1), dt, integrator=integ,
                     stabilizer=mb.Projection())
    jax.block_until_ready(tr.q)
    wall = time.perf_counter() - t0
    return dict(traj=tr, q=np.asarray(tr.q[-1, 3:7]), v=np.asarray(tr.v[-1, 3:7]), wall_s=wall)


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--t1", type=float, default=T_END, help="end time (default 3)")
    ap.add_argument("--rtol", type=float, default=1e-11,
                    help="relative tolerance of DormandPrince5 (default 1e-11)")
    ap.add_argument("--atol", type=float, default=1e-13,
                    help="absolute tolerance of DormandPrince5 (default 1e-13)")
    ap.add_argument("--max-steps", type=int, default=6000,
                    help="step budget of the adaptive integrator (default 6000)")
    ap.add_argument("--json", action="store_true", help="last output line is one JSON object")
    a = ap.parse_args(argv)
    r = run(a.t1, a.rtol, a.atol, a.max_steps)
    tr = r["traj"]
    out = {
        "t": a.t1,
        "q": [float(x) for x in r["q"]],
        "v": [float(x) for x in r["v"]],
        "wall_s": r["wall_s"],
        "integrator": f"DormandPrince5(rtol={a.rtol:g}, atol={a.atol:g}) + Projection",
        "n_steps": int(tr.n_steps),
        "n_rejected": int(tr.n_rejected),
        "status": int(tr.status),
        "constraint_error": float(np.max(np.asarray(tr.constraint_error))),
    }
    if a.t1 == T_END:
        y = np.r_[r["q"], r["v"]]
        ref = np.asarray(TESTSET_Y_T3)
        out["scd_testset"] = float(-np.log10(np.max(np.abs(y[:4] - ref[:4]) / np.abs(ref[:4]))))
        out["max_abs_error_testset"] = float(np.max(np.abs(y - ref)))
    if not a.json:
        print(f"Car axis, jaxmbs: {out['integrator']}, {out['n_steps']} steps "
              f"(+{out['n_rejected']} rejected), status {out['status']}")
        print(f"  t = {a.t1}: q = {np.array2string(r['q'], precision=14)}")
        print(f"          v = {np.array2string(r['v'], precision=14)}")
        if "scd_testset" in out:
            print(f"  vs Test Set: scd(q) = {out['scd_testset']:.2f}, "
                  f"max |y - y_ref| = {out['max_abs_error_testset']:.1e}")
        print(f"  constraint error max {out['constraint_error']:.1e}; wall {out['wall_s']:.1f} s")
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
