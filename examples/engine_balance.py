"""Engine balance: shaking forces and rocking couples of crank trains by inverse dynamics.

Five layouts (`jaxmbs.planar.engines.LAYOUTS`): a single cylinder, an inline-4 (flat-plane crank
0-180-180-0), a flat-4 boxer (opposed pistons on throws 180 degrees apart, each cylinder
on its own station), a flat-4 non-boxer (opposed cylinders share a crank pin) and an
inline-3 (120-degree crank). Each is a `jaxmbs.Model` (`engines.CrankTrain`): a
crankshaft driven at a constant speed (6000 rpm), one crank throw, connecting rod and
piston per cylinder, zero gravity. Inverse dynamics over one revolution (uniform crank
angles) gives the joint reactions; the shaking force on the block is the sum of the
forces the mechanism exerts on the ground through its ground joints (main bearing and
cylinder walls), the rocking couple is sum_k (z_k - z_ref) e_z x F_k from the
per-cylinder block forces F_k and the axial stations z_k (a planar model: z_k enters only
the couple; see the module docstring of `jaxmbs.planar.engines` for every assumption).

An FFT over the revolution gives the harmonic orders 1x, 2x, ... of the force (x, y) and
of the couple (about x, y); the table compares them with the closed-form phasor sums
(`engines.phasor_harmonics`: exact, rotating mass at the pin plus reciprocating mass
with the Fourier coefficients A_n of the exact piston motion, computed in NumPy
independently of the model). Also printed: the textbook formulas (first order
m r omega^2, exact; inline-4 second order 4 m_rec r omega^2 (r/l), leading order only).

    python examples/engine_balance.py [--json] [--plot fig.png] [--samples 72]
                                      [--layouts single,inline-4,...] [--rpm 6000]
"""
from __future__ import annotations

import argparse
import json
import math
import time

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

from jaxmbs.planar import engines  # noqa: E402

KEYS = ("force_x", "force_y", "couple_x", "couple_y")


def analyse(name, samples, orders, rpm):
    """Build one layout, run the inverse dynamics, return (train, loads, table)."""
    train = engines.CrankTrain.layout(name, omega=rpm * 2 * math.pi / 60)
    mech, params, q0, _ = train.build()
    loads = engines.block_loads(train, mech, params, q0, samples)
    if int(loads["status"]) != 0:
        import jaxmbs
        raise RuntimeError(f"{name}: inverse dynamics failed: {jaxmbs.status.describe(loads['status'])}")
    return train, loads, engines.balance_table(train, loads, orders)


def main(argv=None):
    """Run the example; returns the JSON dict (amplitudes in N and N m)."""
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--json", action="store_true", help="last output line is one JSON object")
    ap.add_argument("--plot", metavar="PATH", help="write a PNG (needs matplotlib)")
    ap.add_argument("--out", dest="plot", help=argparse.SUPPRESS)  # the old name of --plot
    ap.add_argument("--samples", type=int, default=72, help="crank angles per revolution")
    ap.add_argument("--orders", type=int, default=6, help="harmonic orders reported")
    ap.add_argument("--rpm", type=float, default=6000.0, help="crank speed, rev/min")
    ap.add_argument("--layouts", default=",".join(engines.LAYOUTS),
                    help="comma-separated subset of " + ", ".join(engines.LAYOUTS))
    args = ap.parse_args(argv)
    names = [s.strip() for s in args.layouts.split(",") if s.strip()]
    for nm in names:
        if nm not in engines.LAYOUTS:
            raise SystemExit(f"--layouts: unknown layout {nm!r}; known: {', '.join(engines.LAYOUTS)}")

    t0 = time.perf_counter()
    results = {nm: analyse(nm, args.samples, args.orders, args.rpm) for nm in names}
    seconds = time.perf_counter() - t0

    ref = next(iter(results.values()))[0]
    lam = ref.crank_radius / ref.rod_length
    w = ref.omega
    print(f"engine balance at {args.rpm:g} rpm: r = {ref.crank_radius * 1e3:g} mm, "
          f"l = {ref.rod_length * 1e3:g} mm (r/l = {lam:.4f}), m_rec = {ref.reciprocating_mass:.4f} kg, "
          f"m_rot = {ref.rotating_mass:.4f} kg per cylinder; {args.samples} crank angles per "
          f"revolution; {seconds:.1f} s incl. compilation")
    print("amplitudes of the harmonic orders: force on the block (N), rocking couple about "
          "x and y through the middle station (N m); 'closed' = phasor sum; rel.err compares "
          "the complex phasors (0 where both vanish)")
    out_layouts, worst = {}, 0.0
    for nm, (train, _loads, tab) in results.items():
        print(f"\n{nm}: phases {np.degrees(train.phases).round(1).tolist()} deg, banks "
              f"{np.degrees(train.banks).round(1).tolist()} deg, stations {list(train.z)} m")
        print(f"{'order':>5} " + " ".join(f"{k:>12} {'closed':>12}" for k in KEYS) + f" {'rel.err':>9}")
        for i, n in enumerate(tab["orders"]):
            row = " ".join(f"{tab[k][i]:12.5g} {tab['phasor_' + k][i]:12.5g}" for k in KEYS)
            print(f"{n:5d} {row} {np.max(tab['rel_error'][i]):9.1e}")
        worst = max(worst, tab["max_rel_error"])
        out_layouts[nm] = {k: tab[k] for k in ("orders", *KEYS, "torque")}
        out_layouts[nm]["max_rel_error"] = tab["max_rel_error"]

    print(f"\nmax relative error against the phasor sums over all layouts and orders: {worst:.2e}")
    if "single" in results:
        train, _, tab = results["single"]
        r = train.crank_radius
        fx, fy = train.rotating_mass * r * w ** 2, (train.rotating_mass + train.reciprocating_mass) * r * w ** 2
        print(f"single cylinder, 1st order: |F_x| = {tab['force_x'][0]:.6f} N vs m_rot r w^2 = {fx:.6f} N; "
              f"|F_y| = {tab['force_y'][0]:.6f} N vs (m_rot + m_rec) r w^2 = {fy:.6f} N (exact formulas)")
    if "inline-4" in results and args.orders >= 2:
        train, _, tab = results["inline-4"]
        lead = 4 * train.reciprocating_mass * train.crank_radius * w ** 2 * lam
        print(f"inline-4, 2nd order: |F_y| = {tab['force_y'][1]:.4f} N vs 4 m_rec r w^2 (r/l) = {lead:.4f} N "
              f"(leading order only: ratio {tab['force_y'][1] / lead:.6f}, 1 + (r/l)^2/4 = {1 + lam ** 2 / 4:.6f})")
    out = {"layouts": out_layouts, "max_rel_error_vs_phasor": worst, "seconds": seconds}
    if args.plot:
        _plot(results, args.plot, args.rpm)
        print(f"plot written to {args.plot}")
    if args.json:
        print(json.dumps(out))
    return out


def _plot(results, path, rpm):
    """Top: shaking force vs crank angle; middle: rocking couple; bottom: orders (log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k = len(results)
    fig, axes = plt.subplots(3, k, figsize=(3.6 * k + 1, 9.5), squeeze=False, sharey="row",
                             layout="constrained")
    for c, (nm, (train, loads, tab)) in enumerate(results.items()):
        deg = np.degrees(np.asarray(loads["psi"]))
        deg = np.r_[deg, 360.0]
        close = lambda x: np.r_[np.asarray(x), np.asarray(x)[:1]]
        F, C = np.asarray(loads["force"]), np.asarray(loads["couple"])
        a0, a1, a2 = axes[0, c], axes[1, c], axes[2, c]
        a0.plot(deg, close(F[:, 0]) / 1e3, label="F_x")
        a0.plot(deg, close(F[:, 1]) / 1e3, label="F_y")
        a0.set_title(f"{nm} ({train.n} cyl.)")
        a1.plot(deg, close(C[:, 0]) / 1e3, label="M_x")
        a1.plot(deg, close(C[:, 1]) / 1e3, label="M_y")
        for a, lab in ((a0, "shaking force (kN)"), (a1, "rocking couple (kN m)")):
            a.set_xlim(0, 360)
            a.set_xticks(range(0, 361, 90))
            a.grid(alpha=0.3)
            a.legend(fontsize=7, loc="upper right")
            if c == 0:
                a.set_ylabel(lab)
            else:
                a.tick_params(labelleft=True)
        a1.set_xlabel("crank angle (deg)")
        orders = np.asarray(tab["orders"])
        width = 0.2
        floor = 1e-3
        for i, (key, lab) in enumerate(zip(KEYS, ("|F_x| N", "|F_y| N", "|M_x| N m", "|M_y| N m"))):
            vals = np.asarray(tab[key])
            a2.bar(orders + (i - 1.5) * width, np.where(vals > floor, vals, np.nan), width, label=lab)
            a2.plot(orders + (i - 1.5) * width, tab["phasor_" + key], "k_", ms=9, mew=1.5,
                    label="closed form" if i == 0 else None)
        a2.set_yscale("log")
        a2.set_ylim(floor, 1e5)
        a2.set_xticks(orders)
        a2.set_xlabel("order (multiple of crank speed)")
        a2.grid(alpha=0.3, axis="y")
        if c == 0:
            a2.set_ylabel("amplitude (N, N m); below 1e-3: cancelled")
            a2.legend(fontsize=6, loc="upper right")
    fig.suptitle(f"engine balance at {rpm:g} rpm: inverse dynamics over one revolution "
                 "(bars) vs phasor sums (black ticks)")
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    main()
