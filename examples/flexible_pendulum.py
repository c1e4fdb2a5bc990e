"""The flexible pendulum of Berzeri and Shabana (2000): a soft ANCF beam pinned at one end,
released from rest in the horizontal position under gravity.

L = 1.2 m, A = 0.0018 m^2, I = 1.215e-8 m^4, rho = 5540 kg/m^3, E = 0.7 MPa, g = 9.81.
RK4 with coordinate projection (`jaxmbs.simulate`); the energy balance (kinetic + gravity
+ strain energy) is the check: undamped, it must stay constant to the integrator's order.

    python examples/flexible_pendulum.py [--elements 4] [--t1 1.0] [--dt 5e-4] [--json]

JSON: {"elements", "dt", "t", "tip_x", "tip_y" (m, at the save points), "energy_drift"
(max |E(t) - E(0)| / max kinetic energy), "status"}.
"""
from __future__ import annotations

import argparse
import json

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxmbs  # noqa: E402

L = 1.2
SECTION = dict(E=0.7e6, A=0.0018, I=1.215e-8, rho=5540.0)


def build(elements=4, section=SECTION):
    m = jaxmbs.Model(gravity=(0.0, -9.81))
    nodes = m.add_beam("beam", (0.0, 0.0), (L, 0.0), elements=elements, section=section)
    m.add_node_pin("pin", nodes[0])
    mech, params, q0, v0 = m.build()
    return mech, params, q0, v0, nodes[-1]


def run(elements=4, t1=1.0, dt=5e-4, save_every=20):
    mech, params, q0, v0, tip = build(elements)
    tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, t1), dt, save_every=save_every)
    i = mech.coordinate_index(f"{tip}.x")
    E = jax.vmap(lambda q, v: jaxmbs.energy(mech, params, q, v))(tr.q, tr.v)
    drift = float(jnp.max(jnp.abs(E["total"] - E["total"][0])) / jnp.max(E["kinetic"]))
    return {"elements": elements, "dt": dt, "t": np.asarray(tr.t).tolist(),
            "tip_x": np.asarray(tr.q[:, i]).tolist(), "tip_y": np.asarray(tr.q[:, i + 1]).tolist(),
            "energy_drift": drift, "status": int(np.max(np.asarray(tr.status)))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--elements", type=int, default=4, help="ANCF elements (default 4)")
    ap.add_argument("--t1", type=float, default=1.0, help="end time, s (default 1.0)")
    ap.add_argument("--dt", type=float, default=5e-4, help="RK4 step, s (default 5e-4)")
    ap.add_argument("--json", action="store_true",
                    help="print the tip trajectory and energy drift as one JSON object")
    a = ap.parse_args(argv)
    res = run(a.elements, a.t1, a.dt)
    if a.json:
        print(json.dumps(res))
    else:
        print(f"flexible pendulum, {a.elements} elements, dt = {a.dt} s, t1 = {a.t1} s: tip at "
              f"({res['tip_x'][-1]:.4f}, {res['tip_y'][-1]:.4f}) m, energy drift "
              f"{res['energy_drift']:.2e} of max kinetic energy, status {res['status']}")
    return res


if __name__ == "__main__":
    main()
