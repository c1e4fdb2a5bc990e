"""The benchmark bicycle in 3D: eigenvalues over forward speed, the weave and capsize speeds, and the self-stable motion.

The Whipple bicycle of Meijaard, Papadopoulos, Ruina and Schwab (2007)
(docs/reference_problems.md §6), built as a jaxmbs `SpatialModel` from its 25 benchmark
parameters (Table 1): rear wheel, rear frame with rider, front handlebar and fork, front
wheel; revolute hubs and a steer revolute along an axis tilted back by lambda = pi/10 that
meets the ground a trail c = 0.08 m ahead of the front contact; two knife-edge wheels
rolling without slip on flat ground (`add_rolling_disc`: one contact row and two
nonholonomic rows each). 4 bodies, 28 coordinates, 21 constraint rows (4 nonholonomic):
7 configuration and 3 velocity degrees of freedom. Axes as in the paper: x forward,
y to the right, z down, gravity 9.81 m/s^2 along +z.

`jaxmbs.linearize` about the upright straight-ahead motion at speed v, with the
independent coordinates named: frame.x, frame.y (position), frame.rz (heading),
frame.rx (lean), fork.rx (lean plus steer), rear_wheel.ry, front_wheel.ry (wheel
angles), and the velocities frame.rx, fork.rx, rear_wheel.ry. The model has 10 states;
position, heading, wheel angles and speed are ignorable (6 eigenvalues 0: the heading
drives the lateral position, the speed the position and wheel angles), so
`LinearModel.without` removes them (exact: nothing else depends on them, coupling
reported) and the remaining lean-steer model's 4 eigenvalues are the benchmark's. The
lean-steer state matrix is a jitted function of v, swept over 0-10 m/s in one vmapped
call (the root locus); the weave speed (the weave pair's real part crosses zero) and the
capsize speed (the capsize eigenvalue crosses zero) are found by narrowing the bracket
with the same vmapped function (201 speeds per round) to 1e-13 m/s. Two nonlinear simulations (RK4, projection, one vmapped batch) start upright
at 4.6 m/s and 3 m/s with a roll-rate disturbance (0.5 rad/s; 0.05 rad/s at 3 m/s):
inside the self-stable speed range the lean dies out; at 3 m/s the weave grows (real part
about +1.7 1/s) until the bicycle falls (|lean| > 0.5 rad: the run is cut there; lying
on the ground is outside this model).

Printed (--json, one line): weave_speed, capsize_speed (m/s), eigenvalues {speed:
[[re, im], ...]} (1/s) at 0, 4, 4.6 and 5 m/s, coupling (of the removed states), status
(of the linearisations), simulations (per speed: roll_rate, fell_at (s, or null), max
|lean| in the first and in the last second of the (cut) run, lean at its end and the
linear model's prediction (rad), status of the whole run: NEWTON_FAILED after a fall is
expected), seconds.

    python examples/bicycle.py [--t1 5] [--no-sim] [--json] [--plot fig.png]
"""
from __future__ import annotations

import argparse
import json
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from scipy.linalg import expm  # noqa: E402

import jaxmbs  # noqa: E402
from jaxmbs.spatial.geometry import quat_to_R  # noqa: E402

# Table 1 of the paper (SI units; inertias about the CGs in the axes above; I_xz is the
# tensor entry)
BENCHMARK = dict(
    w=1.02, c=0.08, lam=np.pi / 10.0, g=9.81,
    rR=0.3, mR=2.0, IRxx=0.0603, IRyy=0.12,
    xB=0.3, zB=-0.9, mB=85.0, IBxx=9.2, IByy=11.0, IBzz=2.8, IBxz=2.4,
    xH=0.9, zH=-0.7, mH=4.0, IHxx=0.05892, IHyy=0.06, IHzz=0.00708, IHxz=-0.00756,
    rF=0.35, mF=3.0, IFxx=0.1405, IFyy=0.28,
)
COORDINATES = ("frame.x", "frame.y", "frame.rz", "frame.rx", "fork.rx", "rear_wheel.ry",
               "front_wheel.ry")
VELOCITIES = ("frame.rx", "fork.rx", "rear_wheel.ry")
IGNORABLE = ("frame.x", "frame.y", "frame.rz", "rear_wheel.ry", "front_wheel.ry",
             "rear_wheel.ry_dot")
REPORT_SPEEDS = (0.0, 4.0, 4.6, 5.0)


def build(speed=0.0, par=None):
    """The Whipple bicycle upright and straight at forward speed `speed` (m/s), consistent
    (wheels rolling without slip). Returns (mech, params, q0, v0); v0 is proportional to
    the speed. Bodies' reference points at their CGs (the wheels': their centres)."""
    p = dict(BENCHMARK if par is None else par)
    w, c, lam = p["w"], p["c"], p["lam"]
    m = jaxmbs.SpatialModel(gravity=(0.0, 0.0, p["g"]))
    vel = (speed, 0.0, 0.0)
    tensor = lambda xx, yy, zz, xz: [[xx, 0.0, xz], [0.0, yy, 0.0], [xz, 0.0, zz]]
    m.add_body("rear_wheel", p["mR"], (p["IRxx"], p["IRyy"], p["IRxx"]), position=(0.0, 0.0, -p["rR"]),
               velocity=vel, angular_velocity=(0.0, -speed / p["rR"], 0.0))
    m.add_body("frame", p["mB"], tensor(p["IBxx"], p["IByy"], p["IBzz"], p["IBxz"]),
               position=(p["xB"], 0.0, p["zB"]), velocity=vel)
    m.add_body("fork", p["mH"], tensor(p["IHxx"], p["IHyy"], p["IHzz"], p["IHxz"]),
               position=(p["xH"], 0.0, p["zH"]), velocity=vel)
    m.add_body("front_wheel", p["mF"], (p["IFxx"], p["IFyy"], p["IFxx"]), position=(w, 0.0, -p["rF"]),
               velocity=vel, angular_velocity=(0.0, -speed / p["rF"], 0.0))
    m.add_revolute("rear_hub", "frame", "rear_wheel", at=(0.0, 0.0, -p["rR"]), axis=(0.0, 1.0, 0.0))
    # the steer axis meets the ground at (w + c, 0, 0), tilted back by lam from the vertical
    m.add_revolute("steer", "frame", "fork", at=(w + c, 0.0, 0.0), axis=(np.sin(lam), 0.0, np.cos(lam)))
    m.add_revolute("front_hub", "fork", "front_wheel", at=(w, 0.0, -p["rF"]), axis=(0.0, 1.0, 0.0))
    for name, wheel, r in (("rear_contact", "rear_wheel", p["rR"]), ("front_contact", "front_wheel", p["rF"])):
        m.add_rolling_disc(name, wheel, r, axle=(0.0, 1.0, 0.0), plane_normal=(0.0, 0.0, -1.0))
    return m.build()


def lean_steer_model(mech, params, q0, v1, speed):
    """(lean-steer LinearModel (4 states), full LinearModel (10 states)) at forward speed
    `speed` about the straight motion (q0, speed * v1); jit / vmap / grad in speed and
    params."""
    lin = jaxmbs.linearize(mech, params, q0, speed * v1, coordinates=COORDINATES,
                           velocities=VELOCITIES)
    return lin.without(IGNORABLE), lin


def state_matrices_fn(mech, params, q0, v1):
    """A jitted, vmapped function speeds (k,) m/s -> (A (k, 4, 4) of the lean-steer model in
    1/s and 1/s^2, coupling (k,) of the removed states, status (k,)). One compilation
    serves the root locus and every refinement of the root finding (same batch shape)."""
    def one(speed):
        red, full = lean_steer_model(mech, params, q0, v1, speed)
        return red.A, full.coupling(IGNORABLE), red.status

    return jax.jit(jax.vmap(one))


def eigenvalues(A):
    """Eigenvalues (k, 4) complex (1/s) of state matrices A (k, 4, 4), each row sorted by
    modulus (a conjugate pair: positive imaginary part first), as `jaxmbs.modes` sorts."""
    lam = np.linalg.eigvals(np.asarray(A))
    order = np.lexsort((-lam.imag, np.round(np.abs(lam), 10)), axis=-1)
    return np.take_along_axis(lam, order, -1)


def weave_real_part(lam):
    """Largest real part of the oscillatory eigenvalues (-inf when there are none)."""
    lam = np.asarray(lam)
    osc = lam[np.abs(lam.imag) > 1e-9]
    return float(osc.real.max()) if osc.size else -np.inf


def capsize_eigenvalue(lam):
    """The largest real eigenvalue (above the weave speed: the capsize mode's)."""
    lam = np.asarray(lam)
    return float(lam[np.abs(lam.imag) <= 1e-9].real.max())


def crossing(matrices, crit, a, b, n, xtol=1e-13):
    """The speed in [a, b] where crit(eigenvalues) changes sign from negative to positive
    or back: the bracket is narrowed n - 1 times per round by evaluating n speeds in one
    vmapped call (`matrices`, batch n), then the root is interpolated linearly in the last
    bracket (error ~ bracket^2)."""
    f = lambda s: np.array([crit(z) for z in eigenvalues(matrices(jnp.asarray(s))[0])])
    fa, fb = f(np.array([a] * (n - 1) + [b]))[[0, -1]]
    if fa * fb > 0:
        raise ValueError(f"no sign change of the criterion between {a} and {b} m/s")
    while b - a > xtol:
        s = np.linspace(a, b, n)
        c = f(s)
        i = int(np.where(np.sign(c[:-1]) != np.sign(c[1:]))[0][0])
        a, b, fa, fb = s[i], s[i + 1], c[i], c[i + 1]
    return float(a - fa * (b - a) / (fb - fa))


def stability_speeds(matrices, sweep_v, sweep_lam):
    """(weave speed, capsize speed) m/s: bracketed by the sweep (the weave pair's real part
    falls through zero, the capsize eigenvalue rises through zero), then refined."""
    wr = np.array([weave_real_part(z) for z in sweep_lam])
    cr = np.array([capsize_eigenvalue(z) for z in sweep_lam])
    iw = np.where((wr[:-1] > 0) & (wr[1:] <= 0))[0]
    ic = np.where((cr[:-1] < 0) & (cr[1:] >= 0))[0]
    if not iw.size or not ic.size:
        raise ValueError("the sweep does not bracket the weave and capsize speeds")
    n = len(sweep_v)
    vw = crossing(matrices, weave_real_part, sweep_v[iw[0]], sweep_v[iw[0] + 1], n)
    vc = crossing(matrices, capsize_eigenvalue, sweep_v[ic[0]], sweep_v[ic[0] + 1], n)
    return vw, vc


def lean_and_steer(mech, q, steer_axis):
    """Lean (rad, about the heading; positive to the right) and steer angle (rad, about
    steer_axis (3,) in frame coordinates) of states q (s, 28)."""
    names = mech.coordinate_names()
    fb = names.index("frame.q0")
    fh = names.index("fork.q0")
    RB = np.asarray(jax.vmap(quat_to_R)(jnp.asarray(q[:, fb:fb + 4])))
    RH = np.asarray(jax.vmap(quat_to_R)(jnp.asarray(q[:, fh:fh + 4])))
    lean = np.arcsin(np.clip(RB[:, 2, 1], -1.0, 1.0))
    Rr = np.einsum("sji,sjk->sik", RB, RH)
    vee = 0.5 * np.stack([Rr[:, 2, 1] - Rr[:, 1, 2], Rr[:, 0, 2] - Rr[:, 2, 0], Rr[:, 1, 0] - Rr[:, 0, 1]], -1)
    steer = np.arctan2(vee @ steer_axis, 0.5 * (np.trace(Rr, axis1=1, axis2=2) - 1.0))
    return lean, steer


def simulate(mech, params, q0, v1, speeds, roll_rates, t1, dt):
    """Nonlinear simulations (one vmapped batch) from upright at each speed, the frame and
    fork given the roll rate (rad/s about the forward axis) and the state made consistent
    by the velocity constraints. Returns (trajectory, initial v (n, 24))."""
    names = mech.velocity_names()
    v0s = []
    for s, roll_rate in zip(speeds, roll_rates):
        v = np.asarray(s * v1).copy()
        for b in ("frame", "fork"):
            v[names.index(f"{b}.wx")] = roll_rate
        res = jaxmbs.assemble(mech, params, q0, jnp.asarray(v), fixed=("frame.wx", "rear_wheel.wy", "fork.wx"))
        v0s.append(np.asarray(res.v))
    v0s = jnp.asarray(np.stack(v0s))
    q0s = jnp.tile(q0, (len(speeds), 1))
    tr = jaxmbs.simulate_batch(mech, params, q0s, v0s, (0.0, t1), dt, save_every=int(round(0.01 / dt)),
                               params_axis=None)
    return tr, v0s


def linear_analysis(sweep=np.linspace(0.0, 10.0, 201)):
    """The root locus over `sweep` (m/s), the weave and capsize speeds (m/s) and the
    eigenvalues (1/s) at REPORT_SPEEDS (`jaxmbs.modes` of the lean-steer state matrix).
    One compilation (the vmapped batch of len(sweep) speeds) serves all of it; `at`
    (speeds -> A (k, 4, 4)) reuses it. Returns a dict."""
    mech, params, q0, v1 = build(speed=1.0)
    matrices = state_matrices_fn(mech, params, q0, v1)
    A, coupling, status = matrices(jnp.asarray(sweep))  # the root locus, one vmapped call
    lam_sweep = eigenvalues(A)
    vw, vc = stability_speeds(matrices, sweep, lam_sweep)
    at = lambda speeds: np.asarray(matrices(jnp.asarray(np.resize(speeds, len(sweep))))[0][:len(speeds)])
    report = {s: np.asarray(jaxmbs.modes(a).eigenvalues) for s, a in zip(REPORT_SPEEDS, at(REPORT_SPEEDS))}
    return dict(model=(mech, params, q0, v1), at=at, sweep=sweep, lam_sweep=lam_sweep,
                coupling=float(np.max(np.asarray(coupling))),
                status=int(np.bitwise_or.reduce(np.asarray(status))), weave=vw, capsize=vc,
                report=report)


def run(t1=5.0, dt=1e-3, roll_rate=0.5, simulate_too=True, fall=0.5):
    start = time.perf_counter()
    r = linear_analysis()
    r["linear_seconds"] = time.perf_counter() - start
    r["sims"] = []
    if simulate_too:
        # nonlinear simulations at 4.6 and 3 m/s, and the linear prediction of the lean
        mech, params, q0, v1 = r["model"]
        speeds = (4.6, 3.0)
        rates = (roll_rate, 0.1 * roll_rate)
        tr, v0s = simulate(mech, params, q0, v1, speeds, rates, t1, dt)
        steer_axis = np.array([np.sin(BENCHMARK["lam"]), 0.0, np.cos(BENCHMARK["lam"])])
        A = r["at"](speeds)  # lean-steer state matrices (same compiled batch as the sweep)
        for i, s in enumerate(speeds):
            lean, steer = lean_and_steer(mech, np.asarray(tr.q[i]), steer_axis)
            x0 = np.zeros(4)  # lean-steer state (frame.rx, fork.rx, their rates)
            x0[2] = x0[3] = rates[i]
            t = np.asarray(tr.t[i])
            lin_lean = np.array([(expm(A[i] * tt) @ x0)[0] for tt in t])
            fallen = np.abs(lean) > fall
            t_fall = float(t[np.argmax(fallen)]) if fallen.any() else None
            if t_fall is not None:  # cut the run where the bicycle falls
                keep = t <= t_fall
                t, lean, steer, lin_lean = t[keep], lean[keep], steer[keep], lin_lean[keep]
            r["sims"].append(dict(speed=s, roll_rate=rates[i], t=t, lean=lean, steer=steer,
                                  lin_lean=lin_lean, fell_at=t_fall,
                                  status=int(np.asarray(tr.status)[i])))
    r["seconds"] = time.perf_counter() - start
    return r


def plot(path, r):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(13, 5))
    v, lam = r["sweep"], r["lam_sweep"]
    for k in range(lam.shape[1]):
        ax[0].plot(v, lam[:, k].real, "k.", ms=2)
        ax[0].plot(v, np.abs(lam[:, k].imag), "C0.", ms=2)
    ax[0].axvspan(r["weave"], r["capsize"], color="C2", alpha=0.15, label="self-stable")
    ax[0].axhline(0.0, color="k", lw=0.5)
    ax[0].set(xlabel="forward speed v (m/s)", ylabel="eigenvalues (1/s)", ylim=(-10, 10),
              title=f"real parts (black), |imaginary parts| (blue); weave {r['weave']:.4f}, "
                    f"capsize {r['capsize']:.4f} m/s")
    ax[0].legend(loc="lower left", fontsize=8)
    for s, col in zip(r["sims"], ("C2", "C3")):
        ax[1].plot(s["t"], s["lean"], color=col,
                   label=f"lean, {s['speed']} m/s, {s['roll_rate']:g} rad/s (nonlinear)")
        ax[1].plot(s["t"], s["lin_lean"], "--", color=col, lw=0.8, label="linear model")
        ax[1].plot(s["t"], s["steer"], ":", color=col, label=f"steer, {s['speed']} m/s")
    ax[1].set(xlabel="t (s)", ylabel="angle (rad)", title="roll-rate disturbance; cut where |lean| > 0.5 rad",
              ylim=(-0.5, 0.5))
    ax[1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].strip())
    ap.add_argument("--t1", type=float, default=5.0, help="length of the nonlinear simulations, s")
    ap.add_argument("--dt", type=float, default=1e-3, help="RK4 step of the simulations, s")
    ap.add_argument("--roll-rate", type=float, default=0.5, help="initial roll-rate disturbance, rad/s")
    ap.add_argument("--no-sim", action="store_true", help="the linear analysis only")
    ap.add_argument("--json", action="store_true", help="print a one-line JSON summary")
    ap.add_argument("--plot", metavar="PATH", help="write the root locus and the simulations to this file (png)")
    a = ap.parse_args(argv)
    r = run(a.t1, a.dt, a.roll_rate, simulate_too=not a.no_sim)
    out = {
        "weave_speed": r["weave"],
        "capsize_speed": r["capsize"],
        "eigenvalues": {f"{s:g}": [[float(z.real), float(z.imag)] for z in r["report"][s]]
                        for s in REPORT_SPEEDS},
        "coupling": r["coupling"],
        "status": r["status"],
        "simulations": [{"speed": s["speed"], "roll_rate": s["roll_rate"], "status": s["status"],
                         "fell_at": s["fell_at"],
                         "max_lean_last_second": float(np.max(np.abs(s["lean"][s["t"] >= s["t"][-1] - 1.0]))),
                         "max_lean_first_second": float(np.max(np.abs(s["lean"][s["t"] <= 1.0]))),
                         "lean_end": float(s["lean"][-1]), "linear_lean_end": float(s["lin_lean"][-1])}
                        for s in r["sims"]],
        "seconds": r["seconds"],
        "linear_seconds": r["linear_seconds"],
    }
    if a.plot:
        plot(a.plot, r)
    if a.json:
        print(json.dumps(out))
    else:
        print(f"weave speed {r['weave']:.12f} m/s, capsize speed {r['capsize']:.12f} m/s "
              f"(removed states' coupling {r['coupling']:.1e})")
        for s in REPORT_SPEEDS:
            print(f"v = {s:4.1f} m/s: " + ", ".join(f"{z.real:+.10f}{z.imag:+.10f}i" for z in r["report"][s]))
        for s in out["simulations"]:
            print(f"{s['speed']} m/s: lean at most {s['max_lean_first_second']:.4f} rad in the first "
                  f"second, {s['max_lean_last_second']:.4f} rad in the last; at the end "
                  f"{s['lean_end']:+.5f} rad (linear model {s['linear_lean_end']:+.5f})")
        print(f"{r['seconds']:.0f} s ({r['linear_seconds']:.0f} s for the linear analysis)")
    return out


if __name__ == "__main__":
    main()
