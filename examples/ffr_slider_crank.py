"""The flexible slider-crank with a floating-frame-of-reference (modal) connecting rod,
against the ANCF rod of examples/flexible_slider_crank.py.

Same mechanism (crank 0.15 m driven at 150 rad/s, steel rod 0.30 m of 8 mm square section,
no gravity, start at crank angle 0 with the rod straight and moving rigidly). The rod is
`Model.add_ffr_beam` with `modes` pinned-pinned modes (basis 'pinned': the frame's x axis
through the rod's ends, so the midpoint deflection is the modes' transverse displacement
at mid-length) of an 8-element Euler-Bernoulli model; the crank pin and the slider attach
by `add_revolute` at the rod's ends. RK4 at dt (default 5e-5 s: the rod's second bending
mode, 5.2e3 rad/s, is the fastest retained one; the RK4 bound 2.785 / omega is 5e-4 s).
The ANCF rod (4 elements, generalized-alpha rho_inf = 1 (no numerical damping) at dt 1e-4 s)
is the reference: a geometrically exact model, where the FFR rod is linear-elastic in its
frame.

    python examples/ffr_slider_crank.py [--modes 2] [--revolutions 1] [--dt 5e-5] [--json]

JSON (last line): {"modes", "dt", "revolutions", "peak_deflection_ffr",
"peak_deflection_ancf" (m, max |.| of the midpoint deflection), "final_deflection_ffr",
"final_deflection_ancf" (m), "max_difference" (m, max |FFR - ANCF| over the common saved
times), "coordinates_ffr", "coordinates_ancf", "wall_ffr_s", "wall_ancf_s" (first call,
compile included)}.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxmbs  # noqa: E402
from jaxmbs.cli import J1, M1, M3  # noqa: E402
from jaxmbs.flexible import ffr  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import flexible_slider_crank as fsc  # noqa: E402

CRANK, ROD, OMEGA = fsc.CRANK, fsc.ROD, fsc.OMEGA


def build(modes=2, elements=8):
    """(model, mech, params, q0, v0): the rod an FFR body; v0 the rigid motion at angle 0."""
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    m.add_body("crank", mass=M1, inertia=J1, position=(0.0, 0.0))
    m.add_body("slider", mass=M3, inertia=1e-4, position=(CRANK + ROD, 0.0))
    m.add_ffr_beam("rod", (CRANK, 0.0), (CRANK + ROD, 0.0), section=fsc.section(),
                   elements=elements, modes=modes, basis="pinned")
    m.add_revolute("O", "ground", "crank", at=(0.0, 0.0))
    m.add_revolute("A", "crank", "rod", at=(CRANK, 0.0))
    m.add_revolute("B", "rod", "slider", at=(CRANK + ROD, 0.0))
    m.add_prismatic("P", "ground", "slider", axis=(1.0, 0.0), at=(CRANK + ROD, 0.0))
    m.drive_joint("motor", "O", jaxmbs.constant_velocity(OMEGA))
    mech, params, q0, _ = m.build()
    v0 = np.zeros(mech.n_vel)
    v0[mech.coordinate_index("crank.theta")] = OMEGA
    v0[mech.coordinate_index("rod.y")] = CRANK * OMEGA
    v0[mech.coordinate_index("rod.theta")] = -CRANK * OMEGA / ROD
    return m, mech, params, q0, jnp.asarray(v0)


def midpoint_deflection(model, mech, q):
    """The rod's transverse displacement at mid-length in its frame (m; the frame's x axis
    runs through both ends): q (..., n_coords)."""
    d = model.ffr_data("rod")
    N, _, _ = ffr.beam_rows([ROD / 2], ROD, d["elements"])
    row = N[0, 1] @ d["Phi"]
    i = mech.coordinate_index("rod.eta1")
    return q[..., i: i + row.size] @ row


def grid(revolutions, dt, save_every):
    """(t1, dt) with t1 = revolutions turns and dt adjusted to a whole number of saves."""
    t1 = revolutions * 2 * np.pi / OMEGA
    n = max(1, int(round(t1 / dt / save_every))) * save_every
    return t1, t1 / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--modes", type=int, default=2, help="pinned-pinned modes of the rod (1..8)")
    ap.add_argument("--revolutions", type=float, default=1.0, help="crank revolutions simulated")
    ap.add_argument("--dt", type=float, default=5e-5, help="RK4 step of the FFR model (s)")
    ap.add_argument("--json", action="store_true", help="print the results as one JSON line last")
    a = ap.parse_args(argv)
    model, mech, params, q0, v0 = build(a.modes)
    t1, dt = grid(a.revolutions, a.dt, 10)
    t0 = time.perf_counter()
    tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, t1), dt, save_every=10)
    d_ffr = np.asarray(midpoint_deflection(model, mech, tr.q))
    wall_ffr = time.perf_counter() - t0
    t_ffr = np.asarray(tr.t)

    amech, aparams, aq0, av0, nodes = fsc.build(4)
    _, adt = grid(a.revolutions, 1e-4, 5)
    t0 = time.perf_counter()
    atr = jaxmbs.simulate(amech, aparams, aq0, av0, (0.0, t1), adt, save_every=5,
                          integrator=jaxmbs.GeneralizedAlpha(rho_inf=1.0))
    d_ancf = np.asarray(fsc.midpoint_deflection(amech, atr.q, nodes))
    wall_ancf = time.perf_counter() - t0
    diff = np.interp(np.asarray(atr.t), t_ffr, d_ffr) - d_ancf
    res = dict(modes=a.modes, dt=dt, revolutions=a.revolutions,
               peak_deflection_ffr=float(np.max(np.abs(d_ffr))),
               peak_deflection_ancf=float(np.max(np.abs(d_ancf))),
               final_deflection_ffr=float(d_ffr[-1]), final_deflection_ancf=float(d_ancf[-1]),
               max_difference=float(np.max(np.abs(diff))), coordinates_ffr=mech.n_coords,
               coordinates_ancf=amech.n_coords, wall_ffr_s=wall_ffr, wall_ancf_s=wall_ancf,
               status_ffr=int(np.max(np.asarray(tr.status))),
               status_ancf=int(np.max(np.asarray(atr.status))))
    print(f"midpoint deflection, peak: FFR ({a.modes} modes, {mech.n_coords} coordinates) "
          f"{res['peak_deflection_ffr'] * 1e3:.4f} mm, ANCF (4 elements, {amech.n_coords} "
          f"coordinates) {res['peak_deflection_ancf'] * 1e3:.4f} mm; max difference "
          f"{res['max_difference'] * 1e3:.4f} mm; wall {wall_ffr:.1f} s / {wall_ancf:.1f} s")
    if a.json:
        print(json.dumps(res))
    return res


if __name__ == "__main__":
    main()
