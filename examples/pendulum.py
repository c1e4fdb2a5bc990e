"""Simple pendulum (IFToMM benchmark A01, docs/reference_problems.md §3).

A point mass of 1 kg on a massless rod of length 1 m pinned to the ground at the origin,
g = 9.81 m/s^2 along -y, released at rest with the mass at (1, 0) (rod horizontal). Built
from jaxmbs elements: a particle 'bob' and a distance constraint 'rod' between the
ground point (0, 0) and the particle. Simulated with RK4, dt = 1e-3 s and the default
coordinate projection (the benchmark's long horizon is --t1 2000).

Printed: the position of the mass at t = 0.5, 1, 2, 5, 10 s (those <= t1), the relative
energy drift max|E - E0| / max(|E0|, max T) over the saved samples, and the period
measured from the zero crossings of x against the exact period of the nonlinear pendulum
T = 4 sqrt(L/g) K(m), m = sin^2(theta0/2), theta0 = 90 degrees (SciPy's ellipk takes the
parameter m = k^2; the line is skipped without SciPy).

    python examples/pendulum.py [--t1 10] [--dt 1e-3] [--json] [--plot pendulum.png]
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

L, G, MASS = 1.0, 9.81, 1.0  # m, m/s^2, kg
THETA0 = math.pi / 2  # release angle from the downward vertical, rad
REPORT_TIMES = (0.5, 1.0, 2.0, 5.0, 10.0)  # s
SAVE_DT = 0.01  # s, spacing of the saved samples (when it fits the step)


def build():
    """Particle 'bob' at (L, 0) on a massless rod 'rod' to the ground point (0, 0)
    (`jaxmbs.zoo.pendulum`)."""
    return jaxmbs.zoo.pendulum(length=L, mass=MASS, g=G)


def exact_period():
    """T = 4 sqrt(L/g) K(sin^2(theta0/2)) in s, or None without SciPy."""
    try:
        from scipy.special import ellipk
    except ImportError:
        return None
    return 4.0 * math.sqrt(L / G) * float(ellipk(math.sin(THETA0 / 2) ** 2))


def exact_position(t):
    """Exact (x, y) of the mass (m) at times t (s), or None without SciPy:
    theta(t) = 2 arcsin(k sn(K(m) - omega0 t | m)), k = sin(theta0/2), m = k^2,
    omega0 = sqrt(g/L), theta from the downward vertical; the argument is reduced modulo
    the period 4K of sn before the call."""
    try:
        from scipy.special import ellipj, ellipk
    except ImportError:
        return None
    mpar = math.sin(THETA0 / 2) ** 2
    K = float(ellipk(mpar))
    u = np.mod(K - math.sqrt(G / L) * np.asarray(t, float), 4 * K)
    theta = 2 * np.arcsin(math.sqrt(mpar) * ellipj(u, mpar)[0])
    return L * np.sin(theta), -L * np.cos(theta)


def zero_crossings(t, x, xd):
    """Times where x(t) changes sign, located by Newton's method on the cubic Hermite
    interpolant of (x, xd) between consecutive samples (error ~ dt^4)."""
    k = np.nonzero(np.sign(x[:-1]) * np.sign(x[1:]) < 0)[0]
    out = []
    for i in k:
        h = t[i + 1] - t[i]
        x0, x1, d0, d1 = x[i], x[i + 1], xd[i] * h, xd[i + 1] * h
        s = x0 / (x0 - x1)  # linear guess in [0, 1]
        for _ in range(8):
            # Hermite basis h00, h10, h01, h11 and their derivatives
            p = ((2 * s**3 - 3 * s**2 + 1) * x0 + (s**3 - 2 * s**2 + s) * d0
                 + (-2 * s**3 + 3 * s**2) * x1 + (s**3 - s**2) * d1)
            dp = ((6 * s**2 - 6 * s) * x0 + (3 * s**2 - 4 * s + 1) * d0
                  + (-6 * s**2 + 6 * s) * x1 + (3 * s**2 - 2 * s) * d1)
            s = min(max(s - p / dp, 0.0), 1.0)
        out.append(t[i] + s * h)
    return np.array(out)


def main(argv=None):
    """Run the example; returns {'t': [...], 'x': [...], 'y': [...], 'energy_drift': r}
    (times in s, positions in m)."""
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--t1", type=float, default=10.0, help="end time, s (default 10)")
    ap.add_argument("--dt", type=float, default=1e-3, help="RK4 step, s (default 1e-3)")
    ap.add_argument("--json", action="store_true", help="last output line is one JSON object")
    ap.add_argument("--plot", metavar="PATH", help="write a PNG (needs matplotlib)")
    args = ap.parse_args(argv)

    mech, params, q0, v0 = build()
    n_steps = int(round(args.t1 / args.dt))
    save_every = max(1, int(round(SAVE_DT / args.dt)))
    while n_steps % save_every:
        save_every -= 1
    t0 = time.perf_counter()
    traj = jaxmbs.simulate(mech, params, q0, v0, (0.0, args.t1), args.dt,
                           integrator=jaxmbs.RK4(), save_every=save_every)
    jax.block_until_ready(traj.q)
    wall = time.perf_counter() - t0
    if int(traj.status) != 0:
        print(f"warning: status {jaxmbs.status.describe(traj.status)}")

    t, q, v = np.asarray(traj.t), np.asarray(traj.q), np.asarray(traj.v)
    ix, iy = mech.coordinate_index("bob.x"), mech.coordinate_index("bob.y")
    times = [tt for tt in REPORT_TIMES if tt <= args.t1 + 1e-12]
    idx = [int(np.argmin(np.abs(t - tt))) for tt in times]
    drift = float(traj.energy_drift())

    print(f"simple pendulum: RK4 dt = {args.dt:g} s over {args.t1:g} s "
          f"({n_steps} steps, {wall:.2f} s incl. compile)")
    shown = idx + ([len(t) - 1] if abs(t[-1] - times[-1]) > 1e-9 else [])
    for k in shown:
        print(f"  t = {t[k]:7.2f} s   x = {q[k, ix]:+.12f} m   y = {q[k, iy]:+.12f} m")
    ex = exact_position(t[shown])
    if ex is not None:
        err = np.hypot(q[shown, ix] - ex[0], q[shown, iy] - ex[1])
        print(f"  max distance from the exact (Jacobi elliptic) solution at these times: "
              f"{err.max():.2e} m")
    print(f"relative energy drift {drift:.3e}; max constraint error "
          f"{float(np.max(np.asarray(traj.constraint_error))):.2e} m")
    tc = zero_crossings(t, q[:, ix], v[:, ix])
    T_meas = 2.0 * (tc[-1] - tc[0]) / (len(tc) - 1) if len(tc) >= 2 else None
    T_exact = exact_period()
    if T_meas is None:
        print("period: fewer than two zero crossings of x; increase --t1")
    else:
        print(f"period from {len(tc)} zero crossings of x: {T_meas:.10f} s")
    if T_exact is not None:
        line = f"exact period 4 sqrt(L/g) K(sin^2(theta0/2)) = {T_exact:.10f} s"
        if T_meas is not None:
            line += f" (relative difference {abs(T_meas - T_exact) / T_exact:.1e})"
        print(line)

    out = {"t": [float(t[k]) for k in idx], "x": [float(q[k, ix]) for k in idx],
           "y": [float(q[k, iy]) for k in idx], "energy_drift": drift}
    if args.plot:
        _plot(mech, params, traj, args.plot)
        print(f"plot written to {args.plot}")
    if args.json:
        print(json.dumps(out))
    return out


def _plot(mech, params, traj, path):
    """Drawing at the last sample with the bob's path, and the time histories."""
    import matplotlib.pyplot as plt

    from jaxmbs import plot

    fig = plt.figure(figsize=(12, 6.5), layout="constrained")
    left, right = fig.subfigures(1, 2, width_ratios=(1, 1.5))
    ax = left.subplots(1, 1)
    q = np.asarray(traj.q)
    k = min(len(q) - 1, int(np.searchsorted(np.asarray(traj.t), 2.0)))
    ax.plot(q[:, 0], q[:, 1], color="0.7", lw=0.8)
    plot.draw(mech, params, q[k], ax=ax, labels=True, scale=2.0)
    ax.set_title(f"pendulum at t = {float(traj.t[k]):.2f} s")
    plot.plot_trajectory(traj, mech, fig=right, title="simple pendulum, RK4")
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
