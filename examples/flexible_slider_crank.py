"""Slider-crank with an elastic connecting rod (planar ANCF beam) against the rigid one.

Crank 0.15 m (rigid, driven at 150 rad/s by a driving constraint, angle = omega t),
connecting rod 0.30 m of steel (E = 2.1e11 Pa, rho = 7850 kg/m^3, 8 mm square section:
A = 6.4e-5 m^2, I = a^4 / 12 = 3.41e-10 m^4) meshed into ANCF Euler-Bernoulli elements,
slider on a prismatic joint along x; no gravity. Crank and slider masses as the rigid
slider-crank of examples/slider_crank.py (docs/reference_problems.md section 2): crank
0.36 kg, 0.002727 kg m^2 about its pivot, slider 0.075552 kg. The rod is joined to the
crank pin and to the slider by `add_beam_body_pin` (its end nodes pinned to the bodies).

Start: crank angle 0, the rod straight and undeformed, moving as the rigid rod does
(analytic velocities at angle 0). The rod's midpoint deflection is its midpoint node's
distance from the chord between its end nodes (m, positive to the left of the chord from
the crank pin to the slider). It is compared with a quasi-static estimate: the rod as a
simply supported beam under the transverse d'Alembert load of the rigid rod, -rho A a_perp(s),
linear along the rod (a_perp(s) = a_perp,A + alpha s), whose midspan deflection is
5 (q_A + q_B) L^4 / (768 EI) (the rigid kinematics are analytic, independent of jaxmbs).

Integrator: the implicit generalized-alpha (`jaxmbs.GeneralizedAlpha`, rho_inf = 0.8) at
dt = 1e-4 s. The explicit RK4 would need dt < 2.785 / omega_max, omega_max the rod's
highest (axial) mode: 2.2e5 rad/s with 2 elements, 4.5e5 rad/s with 4 (dt < 1.2e-5 and
6.2e-6 s; the example prints the bound for its mesh), for the sake of axial modes that
carry no information here; generalized-alpha damps them and resolves the first bending
mode (1310 rad/s, pinned-pinned; h omega = 0.13) with about 48 steps per period.
The rigid slider-crank (the 3-body model of examples/slider_crank.py) is simulated over
the same time with RK4 at the same dt for comparison.

    python examples/flexible_slider_crank.py [--elements 4] [--revolutions 2] [--dt 1e-4]
        [--E 2.1e11] [--side 0.008] [--rho-inf 0.8] [--json]

JSON (last line): {"elements", "dt", "integrator", "rk4_dt_limit" (s), "t" (s), "theta"
(rad), "midpoint_deflection" (m), "quasi_static_deflection" (m), "slider_x" (m, flexible),
"slider_x_rigid" (m, rigid model), "slider_x_analytic" (m), "peak_deflection",
"peak_quasi_static" (m, max |.| over the last revolution), "max_slider_difference" (m,
flexible vs rigid model), "status", "wall_s"}.
"""
from __future__ import annotations

import argparse
import json
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxmbs  # noqa: E402
from jaxmbs.cli import J1, M1, M3  # noqa: E402  (crank and slider of the rigid model)
from jaxmbs.cli import slider_crank as rigid_model  # noqa: E402

CRANK, ROD, OMEGA = 0.15, 0.30, 150.0  # m, m, rad/s
E, RHO, SIDE = 2.1e11, 7850.0, 0.008  # Pa, kg/m^3, m


def section(side=SIDE, E=E, rho=RHO):
    """The square section of side `side` (m) as an `add_beam` section dict."""
    return dict(E=E, rho=rho, A=side**2, I=side**4 / 12.0)


def build(elements=4, E=E, side=SIDE):
    """(mech, params, q0, v0, rod node names): crank angle 0, the rod straight and moving
    rigidly (v0 from the analytic rigid kinematics at angle 0)."""
    if elements < 2 or elements % 2:
        raise ValueError(f"elements must be even and >= 2 (a node at the midpoint), got {elements}")
    m = jaxmbs.Model(gravity=(0.0, 0.0))
    m.add_body("crank", mass=M1, inertia=J1, position=(0.0, 0.0))
    m.add_body("slider", mass=M3, inertia=1e-4, position=(CRANK + ROD, 0.0))
    nodes = m.add_beam("rod", (CRANK, 0.0), (CRANK + ROD, 0.0), elements=elements,
                       section=section(side, E))
    m.add_revolute("O", "ground", "crank", at=(0.0, 0.0))
    m.add_beam_body_pin("A", nodes[0], "crank")
    m.add_beam_body_pin("B", nodes[-1], "slider")
    m.add_prismatic("P", "ground", "slider", axis=(1.0, 0.0), at=(CRANK + ROD, 0.0))
    m.drive_joint("motor", "O", jaxmbs.constant_velocity(OMEGA))
    mech, params, q0, v0 = m.build()
    # rigid motion at angle 0: crank pin velocity (0, r omega), rod angular velocity
    # -r omega / l, slider at rest
    v0 = np.zeros(mech.n_vel)
    v0[mech.coordinate_index("crank.theta")] = OMEGA
    w_rod = -CRANK * OMEGA / ROD
    for k, nd in enumerate(nodes):
        s = ROD * k / elements
        v0[mech.coordinate_index(f"{nd}.y")] = CRANK * OMEGA + w_rod * s
        v0[mech.coordinate_index(f"{nd}.y_x")] = w_rod
    return mech, params, q0, jnp.asarray(v0), nodes


def with_section(mech, params, E=None, side=None):
    """params with Young's modulus E (Pa) and / or the square section's side (m) set on all
    rod elements (traceable: E and side may be tracers, e.g. under vmap or grad)."""
    b = dict(params.bodies["ancf2d_beam"])
    if E is not None:
        b["E"] = jnp.full_like(b["E"], E)
    if side is not None:
        b["area"] = jnp.full_like(b["area"], side * side)
        b["I"] = jnp.full_like(b["I"], side**4 / 12.0)
    return params.replace(bodies={**params.bodies, "ancf2d_beam": b})


def midpoint_deflection(mech, q, nodes):
    """Distance (m) of the rod's midpoint node from the chord between its end nodes,
    positive to the left of crank pin -> slider; q (..., n_coords)."""
    idx = lambda nd: mech.coordinate_index(f"{nd}.x")
    ra, rm, rb = (q[..., idx(nd): idx(nd) + 2] for nd in (nodes[0], nodes[len(nodes) // 2], nodes[-1]))
    d = rb - ra
    d = d / jnp.linalg.norm(d, axis=-1, keepdims=True)
    w = rm - ra
    return d[..., 0] * w[..., 1] - d[..., 1] * w[..., 0]


def rigid_kinematics(theta, r=CRANK, l=ROD, omega=OMEGA):
    """Analytic slider-crank at crank angles theta (constant omega): slider x (m), crank
    pin A (..., 2), slider accel (m/s^2), crank pin accel (..., 2)."""
    s, c = np.sin(theta), np.cos(theta)
    S = np.sqrt(l * l - r * r * s * s)
    x = r * c + S
    A = np.stack([r * c, r * s], -1)
    xdd = -r * omega**2 * c - r * r * omega**2 * ((c * c - s * s) / S + r * r * s * s * c * c / S**3)
    aA = -r * omega**2 * np.stack([c, s], -1)
    return x, A, xdd, aA


def quasi_static_deflection(theta, E=E, side=SIDE, rho=RHO, r=CRANK, l=ROD, omega=OMEGA):
    """Midspan deflection (m, the sign convention of `midpoint_deflection`) of the rod as a
    simply supported beam under its rigid-body transverse inertia load q(s) = -rho A
    a_perp(s), linear from the crank pin A to the slider B: 5 (q_A + q_B) l^4 / (768 EI)
    (half the uniform-load value 5 q l^4 / 384 EI for each triangular part)."""
    x, A, xdd, aA = rigid_kinematics(theta, r, l, omega)
    B = np.stack([x, np.zeros_like(x)], -1)
    d = (B - A) / l
    n = np.stack([-d[..., 1], d[..., 0]], -1)
    aB = np.stack([xdd, np.zeros_like(xdd)], -1)
    qA = -rho * side**2 * np.sum(n * aA, -1)
    qB = -rho * side**2 * np.sum(n * aB, -1)
    EI = E * side**4 / 12.0
    return 5.0 * (qA + qB) * l**4 / (768.0 * EI)


def rk4_dt_limit(mech, params, q0, v0, nodes):
    """2.785 / omega_max, omega_max the highest natural frequency (rad/s) of the rod alone,
    pinned at both ends, in its initial straight state (K by autodiff of the elastic
    forces, M the consistent mass)."""
    import scipy.linalg as sl

    cols = np.r_[[np.arange(mech.coordinate_index(f"{nd}.x"), mech.coordinate_index(f"{nd}.x") + 4)
                  for nd in nodes]].ravel()
    keep = cols[2:-4].tolist() + cols[-2:].tolist()  # drop the end nodes' positions
    M = np.asarray(jaxmbs.mass_matrix(mech, params, q0).dense())[np.ix_(keep, keep)]
    K = -np.asarray(jax.jacfwd(lambda q: jaxmbs.generalized_forces(mech, params, q, v0, 0.0)[0])(q0))
    w2 = sl.eigh(K[np.ix_(keep, keep)], M, eigvals_only=True)
    return 2.785 / float(np.sqrt(np.max(w2)))


def integrator(rho_inf=0.8):
    return jaxmbs.GeneralizedAlpha(rho_inf=rho_inf)


def t_end(revolutions, dt, save_every):
    """`revolutions` crank turns (s), rounded to a whole number of save intervals."""
    return round(revolutions * 2 * np.pi / OMEGA / (dt * save_every)) * dt * save_every


def simulate(mech, params, q0, v0, revolutions=2.0, dt=1e-4, save_every=5, rho_inf=0.8):
    """The flexible slider-crank over `revolutions` crank turns: a `jaxmbs.Trajectory`."""
    t1 = t_end(revolutions, dt, save_every)
    return jaxmbs.simulate(mech, params, q0, v0, (0.0, t1), dt, integrator=integrator(rho_inf),
                           stabilizer=jaxmbs.NoStabilization(), save_every=save_every,
                           energy_tol=None)


def run(elements=4, revolutions=2.0, dt=1e-4, E=E, side=SIDE, rho_inf=0.8, save_every=5):
    mech, params, q0, v0, nodes = build(elements, E, side)
    t0 = time.perf_counter()
    tr = simulate(mech, params, q0, v0, revolutions, dt, save_every, rho_inf)
    jax.block_until_ready(tr.q)
    wall = time.perf_counter() - t0
    t = np.asarray(tr.t)
    theta = OMEGA * t
    defl = np.asarray(midpoint_deflection(mech, tr.q, nodes))
    qs = quasi_static_deflection(theta, E, side)
    x_flex = np.asarray(tr.q[:, mech.coordinate_index("slider.x")])
    # the rigid model over the same grid
    rm, rp, rq0, _ = rigid_model(OMEGA)
    rig = jaxmbs.assemble(rm, rp, rq0)  # consistent velocities (the crank at omega)
    rq0, rv0 = rig.q, rig.v
    rtr = jaxmbs.simulate(rm, rp, rq0, rv0, (0.0, float(t[-1])), dt, save_every=save_every,
                          energy_tol=None)
    x_rigid = np.asarray(rtr.q[:, rm.coordinate_index("slider.x")])
    last = t >= t[-1] - 2 * np.pi / OMEGA - 1e-12
    return {"elements": elements, "dt": dt, "integrator": f"GeneralizedAlpha(rho_inf={rho_inf})",
            "rk4_dt_limit": rk4_dt_limit(mech, params, q0, v0, nodes),
            "E": E, "side": side, "t": t.tolist(), "theta": theta.tolist(),
            "midpoint_deflection": defl.tolist(), "quasi_static_deflection": qs.tolist(),
            "slider_x": x_flex.tolist(), "slider_x_rigid": x_rigid.tolist(),
            "slider_x_analytic": rigid_kinematics(theta)[0].tolist(),
            "peak_deflection": float(np.max(np.abs(defl[last]))),
            "peak_quasi_static": float(np.max(np.abs(qs[last]))),
            "max_slider_difference": float(np.max(np.abs(x_flex - x_rigid))),
            "status": int(np.max(np.asarray(tr.status))), "wall_s": wall}


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--elements", type=int, default=4,
                    help="ANCF elements of the rod, even (a node at the midpoint; default 4)")
    ap.add_argument("--revolutions", type=float, default=2.0,
                    help="crank revolutions to simulate (default 2)")
    ap.add_argument("--dt", type=float, default=1e-4, help="generalized-alpha step, s (default 1e-4)")
    ap.add_argument("--E", type=float, default=E, help="Young's modulus of the rod, Pa (default 2.1e11)")
    ap.add_argument("--side", type=float, default=SIDE,
                    help="side of the rod's square section, m (default 0.008)")
    ap.add_argument("--rho-inf", type=float, default=0.8,
                    help="generalized-alpha spectral radius at infinity (default 0.8)")
    ap.add_argument("--json", action="store_true",
                    help="print the deflection histories and peaks as one JSON object (last line)")
    a = ap.parse_args(argv)
    res = run(a.elements, a.revolutions, a.dt, a.E, a.side, a.rho_inf)
    if a.json:
        print(json.dumps(res))
    else:
        print(f"flexible slider-crank, {a.elements} elements, {res['integrator']}, dt = {a.dt} s "
              f"(RK4 would need dt < {res['rk4_dt_limit']:.2e} s), {a.revolutions} revolutions "
              f"in {res['wall_s']:.1f} s: peak midpoint deflection over the last revolution "
              f"{res['peak_deflection'] * 1e3:.4f} mm (quasi-static estimate "
              f"{res['peak_quasi_static'] * 1e3:.4f} mm); slider position vs the rigid model: "
              f"max difference {res['max_slider_difference']:.2e} m; status {res['status']}")
    return res


if __name__ == "__main__":
    main()
