"""Andrews' squeezing mechanism (seven-body mechanism), forward dynamics to t = 0.03 s.

Hairer & Wanner, *Solving ODEs II*, Sec. VII.7; Test Set for IVP Solvers, problem
"andrews"; IFToMM benchmark A03.  Model data: docs/reference_problems.md §1 (SI units).

The model is built from jaxmbs's own elements only: 7 rigid bodies in absolute
coordinates (x, y, theta) each, 10 revolute joints (the three pivots O, B, A(x2) to the
ground, the hinges R, body5-body4 and body7-body6, and the three loop closures at the
common point P, as revolutes between body 2 and bodies 3, 4 and 6), a translational
spring from body 3's point D to the ground point C, and a constant torque on body 1.
21 coordinates, 20 constraint rows, 1 degree of freedom.

Body frames.  Every body's reference point is its pivot or hinge and its frame angle is
the Test Set's absolute direction angle of that body:

    body 1: at O,            theta1 = beta;          R = (rr, 0), CG (ra, 0)
    body 2: at R,            theta2 = beta + Theta;  P = (-d, 0), CG (-da, 0)
    body 3: at B,            theta3 = gamma;         P = (0, -ss), D = (sd, -sc), CG (sa, sb)
    body 4: at A + zt e(delta), theta4 = Phi + delta; P = (0, -e), CG (0, -(e - ea))
    body 5: at A,            theta5 = delta;         hinge 4 = (zt, 0), CG (ta, tb)
    body 6: at A + u (sin eps, -cos eps), theta6 = Omega + eps; P = (zf, 0), CG (zf - fa, 0)
    body 7: at A,            theta7 = eps;           hinge 6 = (0, -u), CG (ua, ub)

(the vectors are in body coordinates; (sin g, -cos g) = R(g) (0, -1)).  So the Test
Set's q follows from the frame angles: beta = th1, Theta = th2 - th1, gamma = th3,
Phi = th4 - th5, delta = th5, Omega = th6 - th7, epsilon = th7.  The CG directions of
bodies 1, 3, 5, 7 do not matter (fixed pivots, no gravity); their distances do.

Integrator: adaptive Dormand-Prince 5(4) with coordinate projection after each step.

    python examples/andrews_squeezer.py [--rtol 1e-12] [--atol 1e-14] [--json]
"""
from __future__ import annotations

import argparse
import json
import math
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxmbs as mb  # noqa: E402

# ---------------------------------------------------------------- model data (SI)
MASS = (0.04325, 0.00365, 0.02373, 0.00706, 0.07050, 0.00706, 0.05498)
INERTIA = (2.194e-6, 4.410e-7, 5.255e-6, 5.667e-7, 1.169e-5, 5.667e-7, 1.912e-5)
XA, YA = -0.06934, -0.00227
XB, YB = -0.03635, 0.03273
XC, YC = 0.014, 0.072
D, DA, E, EA = 0.028, 0.0115, 0.02, 0.01421
RR, RA = 0.007, 0.00092
SS, SA, SB, SC, SD = 0.035, 0.01874, 0.01043, 0.018, 0.02
TA, TB = 0.02308, 0.00916
U, UA, UB = 0.04, 0.01228, 0.00449
ZF, ZT, FA = 0.02, 0.04, 0.01421
MOM = 0.033  # N m
C0, L0 = 4530.0, 0.07785  # N/m, m
T_END = 0.03

# Consistent initial values (Test Set), rad, at rest.
Q0_TESTSET = (-0.0617138900142764496358948458001, 0.0, 0.455279819163070380255912382449,
              0.222668390165885884674473185609, 0.487364979543842550225598953530,
              -0.222668390165885884674473185609, 1.23054744454982119249735015568)
# Published initial accelerations (beta'', Theta'') in rad/s^2.
PUBLISHED_QDD0 = (14222.4439199541138705911625887, -10666.8329399655854029433719415)
# Test Set reference positions at t = 0.03 (problems/andrews.F, routine SOLN).
TESTSET_Q_T003 = (0.1581077119629904e2, -0.1575637105984298e2, 0.4082224013073101e-1,
                  -0.5347301163226948e0, 0.5244099658805304e0, 0.5347301163226948e0,
                  0.1048080741042263e1)

# The independent reference solution at t = 0.03 of tests/reference/andrews.py
# (LONGDOUBLE_Q_T003: 8th-order fixed-step run in 80-bit long double, converged to ~1e-17).
# The published positions above equal this solution at t = 0.03 + 1.0e-12 s (see there),
# so agreement with the Test Set saturates at scd ~ 9.6.
REFERENCE_Q_T003 = (15.810771195153719273, -15.756371058411854645, 0.0408222401196459394,
                    -0.5347301163420794215, 0.5244099658799540638, 0.5347301163420794306,
                    1.0480807410419378545)

BODIES = ("b1", "b2", "b3", "b4", "b5", "b6", "b7")


def _e(a):
    return np.array([math.cos(a), math.sin(a)])


def _rot(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s], [s, c]])


def build(q_testset=Q0_TESTSET):
    """Build the mechanism in the configuration q_testset (Test Set coordinates), at rest.

    Returns jaxmbs.Built (mech, params, q0, v0).
    """
    be, Th, ga, Ph, de, Om, ep = q_testset
    A, B = np.array([XA, YA]), np.array([XB, YB])
    th = (be, be + Th, ga, Ph + de, de, Om + ep, ep)
    R = RR * _e(be)
    H4 = A + ZT * _e(de)
    H6 = A + _rot(ep) @ np.array([0.0, -U])
    pos = (np.zeros(2), R, B, H4, A, H6, A)
    cg = ((RA, 0.0), (-DA, 0.0), (SA, SB), (0.0, -(E - EA)), (TA, TB), (ZF - FA, 0.0), (UA, UB))

    m = mb.Model(gravity=(0.0, 0.0))
    for k, name in enumerate(BODIES):
        m.add_body(name, mass=MASS[k], inertia=INERTIA[k], position=pos[k], angle=th[k], cg=cg[k])
    m.add_revolute("O", "ground", "b1", at=(0.0, 0.0))
    m.add_revolute("R", "b1", "b2", point_i=(RR, 0.0), point_j=(0.0, 0.0))
    m.add_revolute("B", "ground", "b3", at=B)
    m.add_revolute("A5", "ground", "b5", at=A)
    m.add_revolute("A7", "ground", "b7", at=A)
    m.add_revolute("H45", "b5", "b4", point_i=(ZT, 0.0), point_j=(0.0, 0.0))
    m.add_revolute("H76", "b7", "b6", point_i=(0.0, -U), point_j=(0.0, 0.0))
    # the three loop closures at the common point P
    m.add_revolute("P3", "b2", "b3", point_i=(-D, 0.0), point_j=(0.0, -SS))
    m.add_revolute("P4", "b2", "b4", point_i=(-D, 0.0), point_j=(0.0, -E))
    m.add_revolute("P6", "b2", "b6", point_i=(-D, 0.0), point_j=(ZF, 0.0))
    m.add_spring("spring", "b3", "ground", k=C0, length=L0, point_i=(SD, -SC), at_j=(XC, YC))
    m.add_load("drive", "b1", torque=MOM)
    return m.build()


def to_testset(q):
    """jaxmbs coordinates (..., 21) -> Test Set q = (beta, Theta, gamma, Phi, delta, Omega, eps)."""
    q = jnp.asarray(q)
    th = q[..., 2:21:3]
    return jnp.stack([th[..., 0], th[..., 1] - th[..., 0], th[..., 2], th[..., 3] - th[..., 4],
                      th[..., 4], th[..., 5] - th[..., 6], th[..., 6]], -1)


def scd(q, q_ref=TESTSET_Q_T003):
    """Test Set accuracy: -log10(max_i |q_i - q_ref,i| / |q_ref,i|)."""
    q, q_ref = np.asarray(q, float), np.asarray(q_ref, float)
    return float(-np.log10(np.max(np.abs(q - q_ref) / np.abs(q_ref))))


def initial_accelerations(built=None):
    """The seven accelerations at t = 0 in Test Set coordinates (rad/s^2), from the
    engine's saddle-point solve at the built (consistent, at rest) initial state."""
    mech, params, q0, v0 = build() if built is None else built
    acc = mb.accelerations(mech, params, q0, v0, 0.0)
    return np.asarray(to_testset(acc.qdd))


def run(rtol=1e-12, atol=1e-14, h0=1e-6, max_steps=4000, t1=T_END, repeat=True):
    """Forward dynamics to t1 with DormandPrince5(rtol, atol) + Projection.

    max_steps is the static budget of step attempts (the adaptive loop is a fixed-length
    `lax.scan`, so every budgeted attempt costs time even after t1 is reached: keep it
    near the need, about 1700 accepted steps at rtol = 1e-12).
    Returns a dict: traj (jaxmbs.Trajectory, save points t = 0 and t1), q, v (Test Set
    coordinates at t1), wall_s (first call: compilation + run), wall_run_s (a second,
    compiled call; None unless repeat).
    """
    mech, params, q0, v0 = build()
    integ = mb.DormandPrince5(rtol=rtol, atol=atol, max_steps=max_steps, h0=h0)

    def go():
        t0 = time.perf_counter()
        tr = mb.simulate(mech, params, q0, v0, (0.0, t1), t1, integrator=integ,
                         stabilizer=mb.Projection())
        jax.block_until_ready(tr.q)
        return tr, time.perf_counter() - t0

    traj, wall = go()
    wall_run = go()[1] if repeat else None
    q = np.asarray(to_testset(traj.q[-1]))
    v = np.asarray(to_testset(traj.v[-1]))
    return dict(traj=traj, q=q, v=v, wall_s=wall, wall_run_s=wall_run)


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--rtol", type=float, default=1e-12,
                    help="relative tolerance of DormandPrince5 (default 1e-12)")
    ap.add_argument("--atol", type=float, default=1e-14,
                    help="absolute tolerance of DormandPrince5 (default 1e-14)")
    ap.add_argument("--max-steps", type=int, default=4000,
                    help="step budget of the adaptive integrator (default 4000)")
    ap.add_argument("--json", action="store_true", help="last output line is one JSON object")
    a = ap.parse_args(argv)

    qdd0 = initial_accelerations()
    rel_acc = np.abs(qdd0[:2] - np.array(PUBLISHED_QDD0)) / np.abs(PUBLISHED_QDD0)
    r = run(rtol=a.rtol, atol=a.atol, max_steps=a.max_steps)
    tr = r["traj"]
    out = {
        "t": T_END,
        "q": [float(x) for x in r["q"]],
        "v": [float(x) for x in r["v"]],
        "scd": scd(r["q"]),
        "scd_reference": scd(r["q"], REFERENCE_Q_T003),
        "wall_s": r["wall_s"],
        "wall_run_s": r["wall_run_s"],
        "rtol": a.rtol,
        "atol": a.atol,
        "integrator": f"DormandPrince5(rtol={a.rtol:g}, atol={a.atol:g}) + Projection",
        "n_steps": int(tr.n_steps),
        "n_rejected": int(tr.n_rejected),
        "status": int(tr.status),
        "constraint_error": float(tr.constraint_error[-1]),
        "energy_drift": float(tr.energy_drift()),
        "qdd0": [float(x) for x in qdd0[:2]],
        "qdd0_rel_error": [float(x) for x in rel_acc],
        "qdd0_others_max": float(np.max(np.abs(qdd0[2:]))),
    }
    if not a.json:
        print("Andrews' squeezing mechanism, jaxmbs (7 bodies, 10 revolutes, spring, torque)")
        print(f"  initial accelerations beta'', Theta'' = {qdd0[0]:.16g}, {qdd0[1]:.16g}"
              f" (rel. error vs published {rel_acc[0]:.1e}, {rel_acc[1]:.1e}; "
              f"others max {out['qdd0_others_max']:.1e})")
        print(f"  q(0.03) = {np.array2string(r['q'], precision=14)}")
        print(f"  scd vs Test Set = {out['scd']:.2f}, vs the independent reference "
              f"{out['scd_reference']:.2f}; steps {out['n_steps']} "
              f"(+{out['n_rejected']} rejected); status {out['status']}")
        print(f"  constraint error {out['constraint_error']:.2e}, energy drift {out['energy_drift']:.2e}")
        print(f"  wall time {out['wall_s']:.1f} s (incl. compile), run alone {out['wall_run_s']:.1f} s")
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
