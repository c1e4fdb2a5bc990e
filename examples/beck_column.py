"""Beck's column: flutter of a cantilever under a follower (tangential) tip force.

A clamped-free column of planar ANCF elements (L = 1 m, EI = 1 N m^2, rho A = 1 kg/m,
EA = 1e6 N, no gravity) is compressed at its tip by a force P that stays tangent to the
deformed centre line (`add_node_load(..., follower=True)`, force (-P, 0) in the
cross-section frame). Around the straight compressed equilibrium (`jaxmbs.equilibrium`)
the linearisation (`jaxmbs.linearize`) has only imaginary eigenvalues until the first
two frequencies coalesce; beyond P_cr a complex pair with positive real part appears:
flutter, at P_cr = 20.051 EI / L^2 (Beck 1952; Timoshenko and Gere). The same force as a
DEAD load (fixed direction, `add_node_load(..., follower=False)`) loses stability by
divergence (a real positive eigenvalue, buckling) at Euler's pi^2 / 4 EI / L^2 = 2.467.

P_cr is found by bisection on "the largest real part of an eigenvalue exceeds
GROWTH_TOL (1/s)" (the undamped stable column has real parts at rounding level, about
1e-12 1/s).

    python examples/beck_column.py [--elements 4 8 16] [--json]

JSON (last line): {"elements": [...], "P_cr": [...] (N, follower), "P_cr_exact": 20.051,
"euler_dead_load": [...] (N, dead load, per mesh), "euler_exact": 2.4674,
"flutter_frequency": [...] (rad/s, |Im lambda| at the onset), "dead_onset_imag": [...]
(|Im lambda| of the dead load's unstable eigenvalue: 0, divergence)}.
"""
from __future__ import annotations

import argparse
import json

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxmbs  # noqa: E402

L, EI, EA, RHOA = 1.0, 1.0, 1.0e6, 1.0
SECTION = dict(E=EA, A=1.0, I=EI / EA, rho=RHOA)  # E A = 1e6 N, E I = 1 N m^2, rho A = 1 kg/m
P_CR_EXACT = 20.051      # Beck 1952, EI / L^2
EULER_EXACT = np.pi ** 2 / 4
GROWTH_TOL = 1e-6        # 1/s: "unstable" when some eigenvalue has a larger real part


def build(elements):
    """(mech, params, q0, coordinates) of the column along +x clamped at the origin with
    two tip loads at zero: 'follower' (force in the cross-section frame) and 'dead'
    (global axes); coordinates: the independent chart entries of the clamped beam (all
    but the root node's position and slope direction)."""
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    nodes = m.add_beam("col", (0.0, 0.0), (L, 0.0), elements=elements, section=SECTION)
    m.add_node_weld("clamp", nodes[0])
    m.add_node_load("follower", nodes[-1], (0.0, 0.0), follower=True)
    m.add_node_load("dead", nodes[-1], (0.0, 0.0))
    mech, params, q0, _ = m.build()
    fixed = {f"{nodes[0]}.x", f"{nodes[0]}.y", f"{nodes[0]}.y_x"}
    coords = tuple(n for n in jaxmbs.linear.chart_names(mech) if n not in fixed)
    return mech, params, q0, coords


def growth_function(elements):
    """A jitted function (P_follower, P_dead) (N, compressive) -> (largest real part of
    the eigenvalues (1/s), |imaginary part| of that eigenvalue (rad/s), status) of the
    linearisation about the straight compressed equilibrium."""
    mech, params, q0, coords = build(elements)

    @jax.jit
    def growth(P_follower, P_dead):
        p = mech.replace(params, {"follower.force": jnp.stack([-P_follower, 0.0 * P_follower]),
                                  "dead.force": jnp.stack([-P_dead, 0.0 * P_dead])})
        # the straight compressed column: Newton converges in a few steps (status checked)
        eq = jaxmbs.equilibrium(mech, p, q0, tol=1e-8, iterations=12, check=False)
        lin = jaxmbs.linearize(mech, p, eq.q, jnp.zeros(mech.n_vel, q0.dtype), coordinates=coords)
        lam = jnp.linalg.eigvals(lin.A)
        k = jnp.argmax(jnp.real(lam))
        return jnp.real(lam[k]), jnp.abs(jnp.imag(lam[k])), eq.status | lin.status

    return growth


def critical_load(unstable, lo, hi, rtol=1e-7):
    """Bisection: the load P in [lo, hi] (N) where unstable(P) (bool) switches on; ValueError
    unless lo is stable and hi unstable."""
    if unstable(lo) or not unstable(hi):
        raise ValueError(f"critical_load: need a stable lo and an unstable hi, got [{lo}, {hi}]")
    while hi - lo > rtol * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if unstable(mid) else (mid, hi)
    return 0.5 * (lo + hi)


def analyse(elements):
    """{'P_cr', 'flutter_frequency', 'euler_dead_load', 'dead_onset_imag'} for one mesh."""
    growth = growth_function(elements)

    def unstable(Pf, Pd):
        re, _, status = growth(Pf, Pd)
        if int(status) != 0:
            raise RuntimeError(f"{elements} elements, P = ({Pf}, {Pd}): status {int(status)}")
        return float(re) > GROWTH_TOL

    Pf = critical_load(lambda P: unstable(P, 0.0), 10.0, 30.0)
    Pd = critical_load(lambda P: unstable(0.0, P), 1.0, 4.0)
    return {"P_cr": Pf, "flutter_frequency": float(growth(Pf * (1 + 1e-5), 0.0)[1]),
            "euler_dead_load": Pd, "dead_onset_imag": float(growth(0.0, Pd * (1 + 1e-5))[1])}


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Beck's column: the flutter load of a cantilever under a follower tip "
                    "force (exact 20.051 EI/L^2) against the Euler buckling load of the same "
                    "force as a dead load (pi^2/4 EI/L^2), from the eigenvalues of "
                    "jaxmbs.linearize for planar ANCF meshes.")
    ap.add_argument("--elements", type=int, nargs="+", default=[4, 8, 16],
                    help="ANCF element counts to analyse (default 4 8 16)")
    ap.add_argument("--json", action="store_true",
                    help="print the results as one JSON object (last output line)")
    a = ap.parse_args(argv)
    if any(n < 1 for n in a.elements):
        raise SystemExit("--elements: element counts must be >= 1")
    res = {"elements": list(a.elements), "P_cr": [], "P_cr_exact": P_CR_EXACT,
           "euler_dead_load": [], "euler_exact": float(EULER_EXACT), "flutter_frequency": [],
           "dead_onset_imag": []}
    for n in a.elements:
        r = analyse(n)
        for k in ("P_cr", "euler_dead_load", "flutter_frequency", "dead_onset_imag"):
            res[k].append(r[k])
        if not a.json:
            print(f"{n:3d} elements: follower P_cr = {r['P_cr']:.5f} EI/L^2 "
                  f"({r['P_cr'] / P_CR_EXACT - 1:+.2e} vs 20.051; flutter at "
                  f"{r['flutter_frequency']:.4f} rad/s), dead load: divergence at "
                  f"{r['euler_dead_load']:.5f} ({r['euler_dead_load'] / EULER_EXACT - 1:+.2e} vs "
                  f"pi^2/4; Im lambda = {r['dead_onset_imag']:.1e})")
    if a.json:
        print(json.dumps(res))
    return res


if __name__ == "__main__":
    main()
