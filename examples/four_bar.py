"""Crank-rocker four-bar swinging under gravity, assembled from a rough guess.

Ground pivots O = (0, 0) and C = (0.5, 0) m; crank O-A 0.2 m, coupler A-B 0.6 m, rocker
C-B 0.5 m (ground link 0.5 m: shortest + longest = 0.8 <= 1.0 = sum of the others, and
the shortest link is the crank, so by Grashof's criterion the crank can turn fully).
Uniform bars of 1 kg/m with inertia m L^2 / 12 about their CG; g = 9.81 m/s^2 along -y.

Each bar is a body with its reference point at its centre and its x axis along the bar,
and the revolutes are given in body coordinates (point_i / point_j = +-L/2 along x), so
the model does not depend on where the bodies are put initially. The initial positions
below are only a rough guess (coupler and rocker a few degrees and centimetres off, the
loop open by several cm); `jaxmbs.assemble` with 'crank.theta' held at 60 degrees closes
the loop (Newton on Phi(q) = 0, least-norm corrections of the free coordinates) and
returns a consistent state at rest. The mechanism is then released and simulated for
5 s with RK4, dt = 1e-3 s and coordinate projection.

Printed / JSON: final crank angle (rad), relative energy drift, max constraint residual.

    python examples/four_bar.py [--t1 5] [--dt 1e-3] [--json] [--plot four_bar.png]
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
RHO = 1.0  # kg/m, bar mass per length
O, C = (0.0, 0.0), (0.5, 0.0)  # ground pivots, m
L_CRANK, L_COUPLER, L_ROCKER = 0.2, 0.6, 0.5  # m
CRANK0 = math.radians(60.0)  # initial crank angle, rad
SAVE_DT = 0.01  # s


def _e(a):
    return np.array([math.cos(a), math.sin(a)])


def build(coupler_guess=math.radians(25.0), rocker_guess=math.radians(85.0)):
    """The four-bar with the crank at 60 degrees and coupler / rocker at the guessed
    angles (rad; the closed loop has them at about 31.6 and 77.2 degrees). The loop is
    open unless the guesses are exact: call `jaxmbs.assemble` before simulating."""
    m = jaxmbs.Model(gravity=(0.0, -G))

    def bar(name, length, start, angle):
        centre = np.asarray(start) + 0.5 * length * _e(angle)
        m.add_body(name, mass=RHO * length, inertia=RHO * length**3 / 12.0,
                   position=centre, angle=angle)

    A = np.asarray(O) + L_CRANK * _e(CRANK0)
    bar("crank", L_CRANK, O, CRANK0)
    bar("coupler", L_COUPLER, A, coupler_guess)
    bar("rocker", L_ROCKER, C, rocker_guess)
    m.add_revolute("O", "ground", "crank", point_i=O, point_j=(-L_CRANK / 2, 0.0))
    m.add_revolute("A", "crank", "coupler", point_i=(L_CRANK / 2, 0.0),
                   point_j=(-L_COUPLER / 2, 0.0))
    m.add_revolute("B", "coupler", "rocker", point_i=(L_COUPLER / 2, 0.0),
                   point_j=(L_ROCKER / 2, 0.0))
    m.add_revolute("C", "ground", "rocker", point_i=C, point_j=(-L_ROCKER / 2, 0.0))
    return m.build()


def main(argv=None):
    """Run the example; returns {'t1', 'crank_angle', 'energy_drift',
    'max_constraint_error', 'assembly_residual_before'} (s, rad, -, m, m)."""
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--t1", type=float, default=5.0, help="end time, s (default 5)")
    ap.add_argument("--dt", type=float, default=1e-3, help="RK4 step, s (default 1e-3)")
    ap.add_argument("--json", action="store_true", help="last output line is one JSON object")
    ap.add_argument("--plot", metavar="PATH", help="write a PNG (needs matplotlib)")
    args = ap.parse_args(argv)

    mech, params, q_guess, v_guess = build()
    phi0 = jaxmbs.constraint_terms(mech, params, q_guess, v_guess, 0.0).phi
    gap = float(np.max(np.abs(np.asarray(phi0))))
    asm = jaxmbs.assemble(mech, params, q_guess, v_guess, fixed=("crank.theta",))
    ic = [mech.coordinate_index(f"{b}.theta") for b in ("crank", "coupler", "rocker")]
    ang = np.degrees(np.asarray(asm.q)[ic])
    print(f"rough guess: max |Phi| = {gap:.3f} m; assembled: max |Phi| = "
          f"{float(asm.residual):.1e} m, angles crank / coupler / rocker = "
          f"{ang[0]:.4f} / {ang[1]:.4f} / {ang[2]:.4f} deg")

    n_steps = int(round(args.t1 / args.dt))
    save_every = max(1, int(round(SAVE_DT / args.dt)))
    while n_steps % save_every:
        save_every -= 1
    t0 = time.perf_counter()
    traj = jaxmbs.simulate(mech, params, asm.q, asm.v, (0.0, args.t1), args.dt,
                           integrator=jaxmbs.RK4(), save_every=save_every)
    jax.block_until_ready(traj.q)
    wall = time.perf_counter() - t0

    crank = np.asarray(traj.q[:, ic[0]])
    drift = float(traj.energy_drift())
    cerr = float(np.max(np.asarray(traj.constraint_error)))
    print(f"four-bar: RK4 dt = {args.dt:g} s over {args.t1:g} s ({n_steps} steps, "
          f"{wall:.2f} s incl. compile), status: {jaxmbs.status.describe(traj.status)}")
    print(f"crank angle: final {crank[-1]:.9f} rad ({math.degrees(crank[-1]):.4f} deg), "
          f"range {math.degrees(crank.min()):.2f} .. {math.degrees(crank.max()):.2f} deg")
    print(f"relative energy drift {drift:.3e}; max constraint error {cerr:.2e} m")

    out = {"t1": float(args.t1), "crank_angle": float(crank[-1]), "energy_drift": drift,
           "max_constraint_error": cerr, "assembly_residual_before": gap}
    if args.plot:
        _plot(mech, params, q_guess, traj, args.plot)
        print(f"plot written to {args.plot}")
    if args.json:
        print(json.dumps(out))
    return out


def _plot(mech, params, q_guess, traj, path):
    """Rough guess vs assembled configuration, and the time histories."""
    import matplotlib.pyplot as plt

    from jaxmbs import plot

    fig = plt.figure(figsize=(12, 7), layout="constrained")
    left, right = fig.subfigures(1, 2, width_ratios=(1, 1.4))
    a1, a2 = left.subplots(2, 1)
    plot.draw(mech, params, np.asarray(q_guess), ax=a1, color="C1", alpha=0.9, labels=True)
    plot.draw(mech, params, np.asarray(traj.q[0]), ax=a1, alpha=0.35)
    a1.set_title("rough guess (orange) and assembled (blue)")
    snaps = np.linspace(0, len(traj.t) - 1, 6).round().astype(int)[:-1]
    for j, k in enumerate(snaps):  # earlier snapshots fainter
        plot.draw(mech, params, np.asarray(traj.q[k]), ax=a2, alpha=0.12 + 0.06 * j)
    plot.draw(mech, params, np.asarray(traj.q[-1]), ax=a2, labels=True)
    a2.set_title(f"motion under gravity (solid: t = {float(traj.t[-1]):g} s; faint: earlier)")
    plot.plot_trajectory(traj, mech, coords=("crank.theta", "coupler.theta", "rocker.theta"),
                         fig=right, title="crank-rocker four-bar, RK4")
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
