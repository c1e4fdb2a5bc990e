"""Double-wishbone front suspension: camber and toe over wheel travel, and a Monte-Carlo
batch of hardpoint tolerances, in one vmapped kinematic analysis.

Geometry: examples/models/double_wishbone.json, a front-left passenger-car corner (ISO
8855 axes: x forward, y left, z up; m). Upper and lower A-arms on revolutes to the
chassis (axis through their front and rear pivots), the knuckle (with the wheel) on two
ball joints, the tie rod a massless rod with ball joints at both ends (rack held still),
the coil-over a spring-damper from the lower arm to the chassis. The wheel travel
(vertical displacement of the wheel centre) is prescribed, -80 ... +80 mm, so the
mechanism has no degree of freedom left and `jaxmbs.kinematics` solves it.

Every body's reference frame sits at the origin with the global axes in the design
pose, so body coordinates of the hardpoints equal their global design coordinates: a
set of hardpoints maps to Params by a few array expressions (`params_for`), and 4096 sets
with every hardpoint moved by up to +-0.5 mm (uniform, per coordinate) run as one jitted,
vmapped call: assembly at the first travel, then the travel sweep.

Printed: camber and toe (deg) at -80, -40, 0, +40, +80 mm for the nominal geometry and
the 5 / 50 / 95 % percentiles of the batch, and the throughput (member-travel points per
second, compile time excluded).

    python examples/double_wishbone.py [--batch 4096] [--points 33] [--json] [--plot dw.png]
"""
from __future__ import annotations

import argparse
import json
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxmbs  # noqa: E402
from jaxmbs.spatial.geometry import cross, mv, quat_to_R  # noqa: E402

MODEL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models", "double_wishbone.json")
REPORT_MM = (-80, -40, 0, 40, 80)
TOL = 0.5e-3  # m, hardpoint tolerance (uniform +- per coordinate)


def load():
    with open(MODEL) as f:
        return json.load(f)


def _perp_pair(h):
    """(f, g) unit vectors with (f, g, h) right-handed (the builder's branch: h is far from
    the x axis for both arm axes, whose x component is about 0.99 -- so the y branch)."""
    t = jnp.where(jnp.abs(h[0]) < 0.9, jnp.asarray([1.0, 0.0, 0.0]), jnp.asarray([0.0, 1.0, 0.0]))
    f = cross(h, t)
    f = f / jnp.linalg.norm(f)
    return f, cross(h, f)


def build(data=None):
    """The suspension with its bodies' frames at the origin (design pose): (mech, params,
    q0, v0); wheel travel driven as f(t) = t (m)."""
    d = load() if data is None else data
    hp = {k: np.asarray(v, float) for k, v in d["hardpoints"].items()}
    b = d["bodies"]
    m = jaxmbs.SpatialModel(gravity=d["gravity"])
    for name in ("lower_arm", "upper_arm", "knuckle_wheel"):
        m.add_body(name, mass=b[name]["mass"], inertia=b[name]["inertia"], cg=b[name]["cg"])
    m.add_revolute("LA", "ground", "lower_arm", at=hp["lower_arm_front"],
                   axis=hp["lower_arm_rear"] - hp["lower_arm_front"])
    m.add_revolute("UA", "ground", "upper_arm", at=hp["upper_arm_front"],
                   axis=hp["upper_arm_rear"] - hp["upper_arm_front"])
    m.add_spherical("LBJ", "lower_arm", "knuckle_wheel", at=hp["lower_ball_joint"])
    m.add_spherical("UBJ", "upper_arm", "knuckle_wheel", at=hp["upper_ball_joint"])
    m.add_distance("tie", "ground", "knuckle_wheel", at_i=hp["tie_rod_inner"],
                   at_j=hp["tie_rod_outer"])
    s = d["spring"]
    m.add_spring("coil", "ground", "lower_arm", k=s["stiffness"], c=s["damper"],
                 length=s["free_length"], at_i=hp["spring_upper"], at_j=hp["spring_lower"])
    m.drive_point("travel", "knuckle_wheel", jaxmbs.polynomial([0.0, 1.0]),
                  at=hp["wheel_centre"], axis=(0.0, 0.0, 1.0))
    return m.build()


def params_for(mech, params, hp):
    """Params for hardpoints hp (dict name -> (3,) array, global design coordinates =
    body coordinates); pure JAX, so it vmaps over a batch of hardpoint sets."""
    vals = {}
    for arm, front, rear in (("LA", "lower_arm_front", "lower_arm_rear"),
                             ("UA", "upper_arm_front", "upper_arm_rear")):
        h = hp[rear] - hp[front]
        h = h / jnp.linalg.norm(h)
        f, g = _perp_pair(h)
        vals.update({f"{arm}.point_i": hp[front], f"{arm}.point_j": hp[front],
                     f"{arm}.a_i": f, f"{arm}.b_j": h, f"{arm}.dot1.a_i": g})
    for bj, key in (("LBJ", "lower_ball_joint"), ("UBJ", "upper_ball_joint")):
        vals.update({f"{bj}.point_i": hp[key], f"{bj}.point_j": hp[key]})
    vals.update({"tie.point_i": hp["tie_rod_inner"], "tie.point_j": hp["tie_rod_outer"],
                 "tie.length": jnp.linalg.norm(hp["tie_rod_outer"] - hp["tie_rod_inner"]),
                 "coil.point_i": hp["spring_upper"], "coil.point_j": hp["spring_lower"],
                 "travel.point_j": hp["wheel_centre"],
                 "travel.coef": jnp.asarray([0.0, 1.0, 0, 0, 0, 0]).at[0].set(hp["wheel_centre"][2])})
    return mech.replace(params, vals)


def camber_toe(mech, q, spindle0):
    """Camber (rad; negative: top of the wheel toward the vehicle centre) and toe (rad;
    positive: toe-in) of the left wheel from the knuckle's orientation, per state."""
    i = mech.coordinate_index("knuckle_wheel.q0")
    s = mv(quat_to_R(q[..., i:i + 4]), jnp.asarray(spindle0))
    camber = -jnp.arctan2(s[..., 2], jnp.sqrt(s[..., 0] ** 2 + s[..., 1] ** 2))
    toe = jnp.arctan2(s[..., 0], s[..., 1])
    return camber, toe


def sweep(mech, params, q0, travel, spindle0):
    """Kinematics over the travel grid (s,): (camber, toe, status) for one member."""
    kin = jaxmbs.kinematics(mech, params, q0, travel, iterations=12)
    c, t = camber_toe(mech, kin.q, spindle0)
    return c, t, kin.status


def draws(data, n, key):
    """n hardpoint sets: nominal + uniform +-TOL per coordinate, (n, 3) per name."""
    names = sorted(data["hardpoints"])
    keys = jax.random.split(key, len(names))
    return {nm: jnp.asarray(data["hardpoints"][nm]) + jax.random.uniform(k, (n, 3), minval=-TOL, maxval=TOL)
            for nm, k in zip(names, keys)}


def main(argv=None):
    ap = argparse.ArgumentParser(description="Double-wishbone suspension: camber and toe over "
                                 "wheel travel for the nominal geometry and a Monte-Carlo batch "
                                 "of hardpoint tolerances (+-0.5 mm).")
    ap.add_argument("--batch", type=int, default=4096, help="Monte-Carlo members (default 4096)")
    ap.add_argument("--points", type=int, default=33, help="travel points over +-80 mm (default 33)")
    ap.add_argument("--seed", type=int, default=0, help="random seed of the hardpoint draws")
    ap.add_argument("--json", action="store_true", help="last output line is one JSON object")
    ap.add_argument("--plot", metavar="PATH", help="write a PNG of the camber / toe bands")
    args = ap.parse_args(argv)
    data = load()
    mech, params, q0, v0 = build(data)
    travel = jnp.linspace(-0.08, 0.08, args.points)
    spindle0 = np.asarray(data["spindle_axis"], float)
    cam, toe, st = sweep(mech, params, q0, travel, spindle0)
    hp = draws(data, args.batch, jax.random.PRNGKey(args.seed))

    @jax.jit
    def batch(hp):
        P = jax.vmap(lambda h: params_for(mech, params, h))(hp)
        return jax.vmap(lambda p: sweep(mech, p, q0, travel, spindle0))(P)

    t0 = time.perf_counter()
    jax.block_until_ready(batch(hp))
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    bc, bt, bs = jax.block_until_ready(batch(hp))
    run_s = time.perf_counter() - t0
    ok = np.asarray(bs) == 0
    pct = lambda x: np.percentile(np.degrees(np.asarray(x)[ok]), [5, 50, 95], axis=0)
    pc, pt = pct(bc), pct(bt)
    tr_mm = np.asarray(travel) * 1e3
    idx = [int(np.argmin(np.abs(tr_mm - r))) for r in REPORT_MM]
    out = {"travel_mm": [float(tr_mm[i]) for i in idx],
           "camber_deg": [float(np.degrees(cam[i])) for i in idx],
           "toe_deg": [float(np.degrees(toe[i])) for i in idx],
           "camber_p5_p50_p95": [[float(pc[k, i]) for k in range(3)] for i in idx],
           "toe_p5_p50_p95": [[float(pt[k, i]) for k in range(3)] for i in idx],
           "batch": args.batch, "failed": int(np.sum(~ok)), "status_nominal": int(st),
           "throughput_member_points_per_s": args.batch * args.points / run_s,
           "run_s": run_s, "compile_s": compile_s}
    for k, i in enumerate(idx):
        print(f"travel {tr_mm[i]:+6.1f} mm: camber {out['camber_deg'][k]:+.4f} deg "
              f"[{pc[0, i]:+.4f}, {pc[2, i]:+.4f}], toe {out['toe_deg'][k]:+.4f} deg "
              f"[{pt[0, i]:+.4f}, {pt[2, i]:+.4f}] (5-95 %)")
    print(f"{args.batch} members x {args.points} travel points in {run_s:.3f} s "
          f"({out['throughput_member_points_per_s']:.3g} member-points/s; compile {compile_s:.1f} s); "
          f"failed: {out['failed']}")
    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(1, 2, figsize=(10, 4))
        for a, nom, p, lab in ((ax[0], cam, pc, "camber"), (ax[1], toe, pt, "toe")):
            a.fill_between(tr_mm, p[0], p[2], alpha=0.3, label="5-95 % (+-0.5 mm hardpoints)")
            a.plot(tr_mm, np.degrees(np.asarray(nom)), "k", label="nominal")
            a.set_xlabel("wheel travel (mm)"), a.set_ylabel(f"{lab} (deg)"), a.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
