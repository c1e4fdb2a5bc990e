"""Quarter car at its static equilibrium: ride height, ride and wheel-hop modes, against the closed-form two-mass values.

The quarter car of examples/bumpy_road.py (sprung mass 300 kg on a 20 kN/m, 1.5 kN s/m
suspension above a 40 kg wheel; linear penalty tire 200 kN/m with Lankarani-Nikravesh
hysteresis damping chi = 3 (1 - e^2) / (4 v) for e = 0.5 at 1 m/s, and regularised
friction), standing still. `jaxmbs.equilibrium` finds its static equilibrium under its
own weight from a guess 5 cm off (Newton on the constrained statics, with the
multipliers), `jaxmbs.linearize` gives the linear model about it in independent
coordinates (body heave, wheel heave, wheel angle) and `jaxmbs.modes` its eigenvalues.

The closed-form two-mass model: static tire deflection delta0 = (m_s + m_u) g / k_t,
suspension compression m_s g / k_s, and the damped eigenvalues from the characteristic
quartic det(M s^2 + C s + K) = 0 with the linearised tire damping c_t = k_t delta0 chi;
the undamped natural frequencies from the quadratic formula. The wheel's spin adds a zero
eigenvalue (its angle is ignorable) and a real one, -mu F_n r_K^2 / (J v_eps), from the
regularised friction at the contact point (r_K = r - delta0 / 2).

Printed (--json, one line): ride_height (m, body reference point), wheel_height (m),
tire_deflection (m), spring_compression (m), frequencies_hz (heave, hop: |lambda| / 2 pi),
damping_ratios, the same from the closed form (closed_form), max_rel_error of the
eigenvalues and of the heights, spin_eigenvalue (1/s), stiffness (the reduced stiffness's
eigenvalues), stable and neutral (their signs: the free wheel angle is a neutral
direction, so the equilibrium is not a strict minimum) and seconds.

    python examples/suspension_modes.py [--json] [--plot fig.png] [--animate hop.gif]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxmbs  # noqa: E402
from jaxmbs.linear import animate_mode  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def quarter_car_module():
    """examples/bumpy_road.py, whose `build` makes the quarter car (and whose constants are
    its data)."""
    spec = importlib.util.spec_from_file_location("bumpy_road", os.path.join(HERE, "bumpy_road.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def closed_form(c):
    """Two-mass quarter car from the module constants c: dict with delta0, compression,
    eigenvalues (4,) (sorted: ride pair, hop pair), undamped (2,) rad/s, spin (1/s)."""
    g = c.G
    m_s, m_u, k_s, c_s, k_t = c.M_BODY, c.M_WHEEL, c.K_SUSP, c.C_SUSP, c.K_TIRE
    chi = 3.0 * (1.0 - 0.5**2) / (4.0 * 1.0)  # restitution 0.5 at 1 m/s (bumpy_road.build)
    delta0 = (m_s + m_u) * g / k_t
    c_t = k_t * delta0 * chi
    coef = [m_s * m_u, m_s * (c_s + c_t) + m_u * c_s, m_s * (k_s + k_t) + m_u * k_s + c_s * c_t,
            c_s * k_t + c_t * k_s, k_s * k_t]
    ev = np.roots(coef)
    ev = ev[np.lexsort((-ev.imag, np.abs(ev)))]
    a, b = k_s / m_s, (k_s + k_t) / m_u
    disc = np.sqrt((a - b) ** 2 + 4 * k_s * k_s / (m_s * m_u))
    undamped = np.sqrt([(a + b - disc) / 2, (a + b + disc) / 2])
    r_k = c.RADIUS - delta0 / 2
    spin = -c.MU * (m_s + m_u) * g / c.V_EPS * r_k**2 / c.J_WHEEL
    return dict(delta0=delta0, compression=m_s * g / k_s, eigenvalues=ev, undamped=undamped,
                spin=spin, c_t=c_t)


def analyse():
    c = quarter_car_module()
    mech, params, q0, _ = c.build(speed=0.0, road_length=10.0)
    guess = np.asarray(q0).copy()
    guess[1] += 0.05  # body 5 cm high
    guess[4] -= 0.02  # wheel 2 cm low
    start = time.perf_counter()
    eq = jaxmbs.equilibrium(mech, params, jnp.asarray(guess))
    lin = jaxmbs.linearize(mech, params, eq.q, jnp.zeros(mech.n_vel))
    md = jaxmbs.modes(lin)
    jax.block_until_ready(md.eigenvalues)
    seconds = time.perf_counter() - start
    return c, mech, params, eq, lin, md, seconds


def summary(c, eq, lin, md, seconds):
    cf = closed_form(c)
    q = np.asarray(eq.q)
    lam = np.asarray(md.eigenvalues)
    osc = lam[np.imag(lam) > 0]
    osc = osc[np.argsort(np.abs(osc))]  # ride (heave), then wheel hop
    want = cf["eigenvalues"][np.imag(cf["eigenvalues"]) > 0]
    want = want[np.argsort(np.abs(want))]
    real = np.sort(np.real(lam[np.imag(lam) == 0]))
    heights_ref = np.array([c.RADIUS - cf["delta0"] + c.GAP, c.RADIUS - cf["delta0"]])
    zeta = lambda z: (-np.real(z) / np.abs(z)).tolist()
    return {
        "ride_height": float(q[1]),
        "wheel_height": float(q[4]),
        "tire_deflection": float(c.RADIUS - q[4]),
        "spring_compression": float(c.M_BODY * c.G / c.K_SUSP + c.GAP - (q[1] - q[4])),
        "frequencies_hz": (np.abs(osc) / (2 * np.pi)).tolist(),
        "damping_ratios": zeta(osc),
        "closed_form": {
            "ride_height": float(heights_ref[0]), "wheel_height": float(heights_ref[1]),
            "tire_deflection": float(cf["delta0"]), "spring_compression": float(cf["compression"]),
            "frequencies_hz": (np.abs(want) / (2 * np.pi)).tolist(), "damping_ratios": zeta(want),
            "undamped_frequencies_hz": (cf["undamped"] / (2 * np.pi)).tolist(),
            "spin_eigenvalue": float(cf["spin"]),
        },
        "max_rel_error_eigenvalues": float(np.max(np.abs(osc - want) / np.abs(want))),
        "max_error_heights": float(np.max(np.abs(q[[1, 4]] - heights_ref))),
        "spin_eigenvalue": float(real[0]),
        "coordinates": list(lin.coordinates),
        "stiffness": np.asarray(eq.stiffness).tolist(),
        "stable": bool(eq.stable),
        "neutral": int(eq.neutral),
        "status": int(eq.status) | int(lin.status),
        "seconds": seconds,
    }


def plot(path, mech, params, eq, lin, md, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from jaxmbs import plot as jplot

    lam = np.asarray(md.eigenvalues)
    osc = np.where(np.imag(lam) > 0)[0]
    osc = osc[np.argsort(np.abs(lam[osc]))]
    fig, ax = plt.subplots(1, 3, figsize=(14, 4.5))
    jplot.draw(mech, params, np.asarray(eq.q), ax=ax[0])
    ax[0].set_title(f"static equilibrium: ride height {out['ride_height']:.4f} m")
    ax[0].set_xlim(-0.6, 0.6)
    t = np.linspace(0.0, 1.0, 400)
    sq = np.asarray(md.shapes_q)
    for k, name in zip(osc, ("ride (heave)", "wheel hop")):
        z = lam[k]
        for idx, lab, ls in ((1, "body", "-"), (4, "wheel", "--")):
            ax[1 if name.startswith("ride") else 2].plot(
                t, np.real(sq[idx, k] * np.exp(z * t)), ls, label=f"{lab} heave")
        ax[1 if name.startswith("ride") else 2].set(
            xlabel="t (s)", ylabel="mode shape (largest position entry 1)",
            title=f"{name}: {abs(z) / (2 * np.pi):.2f} Hz, zeta = {-z.real / abs(z):.3f}")
    ax[2].set_xlim(0.0, 0.15)
    for a in ax[1:]:
        a.legend(fontsize=8)
        a.axhline(0.0, color="k", lw=0.5)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].strip())
    ap.add_argument("--json", action="store_true", help="print a one-line JSON summary")
    ap.add_argument("--plot", metavar="PATH", help="write the figure (equilibrium, mode shapes) to this file (png)")
    ap.add_argument("--animate", metavar="PATH",
                    help="write an animated GIF of the wheel-hop mode to this file (needs Pillow)")
    a = ap.parse_args(argv)
    c, mech, params, eq, lin, md, seconds = analyse()
    out = summary(c, eq, lin, md, seconds)
    if a.plot:
        plot(a.plot, mech, params, eq, lin, md, out)
    if a.animate:
        lam = np.asarray(md.eigenvalues)
        hop = int(np.argmax(np.where(np.imag(lam) > 0, np.abs(lam), -1.0)))
        animate_mode(mech, params, lin, md, hop, a.animate, amplitude=0.03)
    if a.json:
        print(json.dumps(out))
    else:
        cf = out["closed_form"]
        print(f"ride height {out['ride_height']:.10f} m (closed form {cf['ride_height']:.10f}), "
              f"tire deflection {1e3 * out['tire_deflection']:.4f} mm, spring compression "
              f"{1e3 * out['spring_compression']:.4f} mm")
        for name, f, z, fc, zc in zip(("ride", "hop"), out["frequencies_hz"], out["damping_ratios"],
                                      cf["frequencies_hz"], cf["damping_ratios"]):
            print(f"{name:5s}: {f:.6f} Hz, zeta {z:.6f}   closed form {fc:.6f} Hz, zeta {zc:.6f}")
        print(f"undamped closed form: {cf['undamped_frequencies_hz'][0]:.4f} Hz, "
              f"{cf['undamped_frequencies_hz'][1]:.4f} Hz; wheel spin eigenvalue "
              f"{out['spin_eigenvalue']:.3f} 1/s (closed form {cf['spin_eigenvalue']:.3f}); "
              f"max rel. error of the eigenvalues {out['max_rel_error_eigenvalues']:.1e}; "
              f"reduced stiffness {np.round(out['stiffness'], 3).tolist()} "
              f"({out['neutral']} neutral: the free wheel angle)")
    return out


if __name__ == "__main__":
    main()
