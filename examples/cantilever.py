"""A cantilever of planar ANCF beam elements: large-deflection statics and natural frequencies.

L = 1 m, EI = 1 N m^2, EA = 1e6 N, rho A = 1 kg/m, clamped at x = 0 (add_node_weld), a
dead tip load P perpendicular to the undeformed beam (add_node_load), load parameter
alpha = P L^2 / EI in {1, 2, 5, 10}. Statics: `jaxmbs.equilibrium` (Newton on the
constrained statics), load stepped up from the previous equilibrium. Frequencies: the
first four of the straight, unloaded beam from `jaxmbs.linearize` + `jaxmbs.modes`
(the constrained linearisation; no gravity).

    python examples/cantilever.py [--elements 16] [--json]

JSON: {"elements", "alpha", "tip_vertical", "tip_shortening", "tip_rotation" (per L, rad),
"frequencies_hz"}. The reference (tests/test_ancf.py): the elastica (shooting on
theta'' = -alpha cos theta) and the Euler-Bernoulli clamped-free beta_n L = 1.8751,
4.6941, 7.8548, 10.9955.
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
# a section with these products: E A = 1e6 N, E I = 1 N m^2, rho A = 1 kg/m
SECTION = dict(E=1.0e9, A=1.0e-3, I=1.0e-9, rho=1.0e3)
ALPHAS = (1.0, 2.0, 5.0, 10.0)


def build(elements, spatial=False):
    """(mech, params, q0, tip node name): the cantilever along +x, clamped at the origin,
    a tip load (0, P) with P = 0 (set 'tip_load.force'). spatial=True: the same cantilever
    of spatial ANCF cable elements in a `jaxmbs.SpatialModel` (3D; tip load (3,))."""
    d = 3 if spatial else 2
    m = jaxmbs.SpatialModel(gravity=(0.0,) * 3) if spatial else jaxmbs.Model(gravity=(0.0, 0.0))
    nodes = m.add_beam("beam", (0.0,) * d, (L,) + (0.0,) * (d - 1), elements=elements, section=SECTION)
    m.add_node_weld("clamp", nodes[0])
    m.add_node_load("tip_load", nodes[-1], (0.0,) * d)
    mech, params, q0, _ = m.build()
    return mech, params, q0, nodes[-1]


def tip_values(mech, q, tip):
    """(vertical deflection / L, shortening / L, rotation rad) of the tip node."""
    i = mech.coordinate_index(f"{tip}.x")
    x, y, xx, yx = (float(v) for v in q[i:i + 4])
    return y / L, (L - x) / L, float(np.arctan2(yx, xx))


def statics(elements, alphas=ALPHAS, substeps=2):
    """Tip values per alpha (lists), by Newton from the previous equilibrium with the load
    stepped in `substeps` increments between the given alphas."""
    mech, params, q, tip = build(elements)
    out = {"tip_vertical": [], "tip_shortening": [], "tip_rotation": []}
    a_prev = 0.0
    for a in alphas:
        for s in np.linspace(a_prev, a, substeps + 1)[1:]:
            P = s * EI / L**2
            p = mech.replace(params, {"tip_load.force": [0.0, P]})
            # tol: the force residual stalls near 1e-10 N (EA / EI = 1e6 conditions the
            # tangent stiffness); 1e-8 N is far below the 1e-4 accuracy asked of the tip
            q = jaxmbs.equilibrium(mech, p, q, tol=1e-8).q
        a_prev = a
        tv, ts, tr = tip_values(mech, np.asarray(q), tip)
        out["tip_vertical"].append(tv)
        out["tip_shortening"].append(ts)
        out["tip_rotation"].append(tr)
    return out


def frequencies(elements, n=4):
    """The first n natural frequencies (Hz) of the straight, unloaded cantilever."""
    mech, params, q0, _ = build(elements)
    lin = jaxmbs.linearize(mech, params, q0, jnp.zeros(mech.n_vel))
    w = np.sort(np.asarray(jaxmbs.modes(lin).frequencies))
    w = w[w > 1e-6][::2]  # each undamped mode is a conjugate pair +- i w
    return [float(x) / (2 * np.pi) for x in w[:n]]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=16,
                    help="ANCF elements along the beam (default 16; 32 for the 1e-4 tip values)")
    ap.add_argument("--json", action="store_true",
                    help="print the tip values and frequencies as one JSON object")
    a = ap.parse_args(argv)
    res = {"elements": a.elements, "alpha": list(ALPHAS)}
    res.update(statics(a.elements))
    res["frequencies_hz"] = frequencies(a.elements)
    if a.json:
        print(json.dumps(res))
        return res
    print(f"cantilever, {a.elements} ANCF elements")
    print(" alpha   tip_vertical/L  tip_shortening/L  tip_rotation (rad)")
    for k, al in enumerate(ALPHAS):
        print(f"{al:6.1f}   {res['tip_vertical'][k]:.6f}        {res['tip_shortening'][k]:.6f}"
              f"          {res['tip_rotation'][k]:.6f}")
    print("frequencies (Hz):", ", ".join(f"{f:.5f}" for f in res["frequencies_hz"]))
    return res


if __name__ == "__main__":
    main()
