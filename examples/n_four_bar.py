"""N-four-bar mechanism (IFToMM benchmark A02): N parallelogram loops in a row.

docs/reference_problems.md §4: N+1 vertical cranks of length 1 m pinned to the ground at
x = 0, 1, ..., N and N horizontal couplers of length 1 m joining the crank tops; all
2N+1 links uniform rods of 1 kg; g = 9.81 m/s^2 along -y.  At t = 0 the cranks are
vertical and the top of the leftmost crank, B0 = (0, 1), moves with x' = 1 m/s.

Model (jaxmbs elements only): 2N+1 bodies, 3N+1 revolute joints (N+1 ground pivots,
2N crank-coupler hinges), so 3(2N+1) = 6N+3 coordinates and 6N+2 constraint rows
(N = 40: 81 bodies, 243 coordinates, 242 rows).  Crank i has its frame at its ground
pivot with the rod along its body x axis (angle pi/2 initially), coupler i its frame at
its left end.  The exact motion is one-DOF: every crank turns by the same angle phi,
I_eff phi'' = -V_eff cos(phi), which tests/reference/closed_forms.fourbar_solve
integrates independently.

Singular configurations and how they are handled
------------------------------------------------
With the benchmark's initial speed the cranks turn all the way round (about 10
revolutions in 20 s), so twice per revolution every link is horizontal.  There the
6N+2 constraint rows, independent elsewhere, lose rank by N (each loop's parallelogram
and anti-parallelogram branches meet), so the Schur complement A = Phi_q M^-1 Phi_q^T
of the saddle-point system is singular: plain Cholesky fails there (the unrolled small
factorisation flags SINGULAR, LAPACK's returns NaN and the run freezes with NONFINITE),
and near it A is ill-conditioned (smallest eigenvalue ~ phi^2 at crank angle phi from
horizontal).  We use

* ``SchurCholesky(regularization=eps)`` with eps = 1e-12 (default): A + eps mean(diag A) I
  is factorised, i.e. the multipliers minimise |A lam - r|^2 + eps' |lam|^2.  This never
  breaks down, also exactly at the singular configuration, where it returns the
  least-norm multipliers (the redundant components, which the physics leaves
  undetermined, are set to zero) and the accelerations of Gauss's principle subject to
  the (then weaker) acceleration constraints.  Those are finite but not the branch's
  accelerations (crank acceleration off by 0.74 rad/s^2 at N = 2, 0.94 at N = 40, out
  of 11): the exactly singular instant is a set of measure zero that a step hits only
  by accident, and its O(dt) effect is bounded.  The price is a bias of the accelerations inside a window |phi| ~ sqrt(eps)
  around the singular configuration (measured at N = 40, phi = 1e-4: crank acceleration
  error 1e-7 rad/s^2 with eps = 0, 3.5e-3 with eps = 1e-12, 0.14 with eps = 1e-10), and
  O(eps cond A) elsewhere.  With RK4 at dt = 2e-3 (truncation error ~5e-9 m) the B0
  error after 20 s at N = 2 is 5e-9 m for eps = 0, 6e-9 m for eps = 1e-12, but 6e-6 m
  for eps = 1e-10 and 3e-5 m (energy drift 7e-7) for eps = 1e-8.  So eps is taken as
  small as possible while keeping the factorisation regular (below ~2e-13 the pivot
  test of the Cholesky flags SINGULAR again at an exactly singular configuration).
* ``Projection`` stabilisation with the same regularised solver: after every step q is
  projected back onto Phi(q) = 0 and v onto Phi_q v = 0 by the M-weighted least-norm
  correction.  This keeps the state on the constraint manifold to round-off, so the
  acceleration bias near the singularity cannot accumulate into drift, and because the
  correction is the smallest one from the current state it does not jump to the other
  (anti-parallelogram) branch: the branch is decided by the velocity, which carries the
  cranks through the singular configuration.  Even a run that *starts* exactly at the
  singular configuration keeps the branch (crank angles equal to 1e-12 rad; see
  tests/test_validation.py).
* Fixed-step RK4, default dt = 5e-3 s (B0 error ~4e-7 m and energy drift ~1e-8 over
  20 s, both N = 2 and N = 40).  ``--integrator dopri5`` uses the adaptive
  DormandPrince5 instead.

The result records whether the branch was kept (``crank_angle_spread``: max over the
save points of the spread of the N+1 crank angles, all equal on the parallelogram
branch), B0 against the reference, and the relative drift of the total energy.

    python examples/n_four_bar.py --n 2 --t1 20 [--dt 5e-3] [--json]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxmbs as mb  # noqa: E402

G = 9.81


def build(N, vx0=1.0, phi=math.pi / 2, phid=None):
    """The N-four-bar with all cranks at angle phi (rad; default pi/2, the benchmark's
    initial configuration) turning at phid (rad/s; default -vx0, i.e. B0 moving with
    x' = vx0 m/s at phi = pi/2).  phi = 0 or pi is the singular, all-horizontal
    configuration.  Returns jaxmbs.Built."""
    phid = -vx0 if phid is None else phid
    top = np.array([math.cos(phi), math.sin(phi)])
    vtop = phid * np.array([-math.sin(phi), math.cos(phi)])
    m = mb.Model(gravity=(0.0, -G))
    for i in range(N + 1):
        # crank i: frame at its ground pivot, rod along body x
        m.add_body(f"crank{i}", mass=1.0, inertia=1.0 / 12.0, position=(float(i), 0.0),
                   angle=phi, cg=(0.5, 0.0), angular_velocity=phid)
    for i in range(N):
        # coupler i from the top of crank i to the top of crank i+1; it translates
        m.add_body(f"coupler{i}", mass=1.0, inertia=1.0 / 12.0, position=top + (i, 0.0),
                   cg=(0.5, 0.0), velocity=vtop)
    for i in range(N + 1):
        m.add_revolute(f"O{i}", "ground", f"crank{i}", at=(float(i), 0.0))
    for i in range(N):
        m.add_revolute(f"L{i}", f"crank{i}", f"coupler{i}", point_i=(1.0, 0.0), point_j=(0.0, 0.0))
        m.add_revolute(f"R{i}", f"crank{i + 1}", f"coupler{i}", point_i=(1.0, 0.0),
                       point_j=(1.0, 0.0))
    return m.build()


def crank_angles(q, N):
    """(..., N+1) crank angles from jaxmbs coordinates (crank bodies come first)."""
    return jnp.asarray(q)[..., 2: 3 * (N + 1): 3]


def run(N=2, t1=20.0, dt=5e-3, integrator="rk4", regularization=1e-12, save_dt=0.05,
        rtol=1e-10, atol=1e-12, max_steps=20_000):
    """Simulate and return a dict with the trajectory and summary numbers."""
    mech, params, q0, v0 = build(N)
    solver = mb.SchurCholesky(regularization=regularization)
    if integrator == "rk4":
        integ = mb.RK4()
        step = dt
        save_every = max(1, int(round(save_dt / dt)))
        n = int(round(t1 / dt))
        while n % save_every:
            save_every -= 1
    elif integrator == "dopri5":
        integ = mb.DormandPrince5(rtol=rtol, atol=atol, max_steps=max_steps,
                                  h0=1e-3)
        step, save_every = save_dt, 1
    else:
        raise ValueError(f"unknown integrator {integrator!r}: rk4 or dopri5")
    t0 = time.perf_counter()
    tr = mb.simulate(mech, params, q0, v0, (0.0, t1), step, integrator=integ,
                     stabilizer=mb.Projection(), solver=solver, save_every=save_every)
    jax.block_until_ready(tr.q)
    wall = time.perf_counter() - t0
    th = np.asarray(crank_angles(tr.q, N))
    thd = np.asarray(crank_angles(tr.v, N))
    B0 = np.stack([np.cos(th[:, 0]), np.sin(th[:, 0])], -1)
    B0d = np.stack([-np.sin(th[:, 0]) * thd[:, 0], np.cos(th[:, 0]) * thd[:, 0]], -1)
    # total mechanical energy (no non-conservative forces act; constraint work is ~0)
    E = np.asarray(tr.kinetic + tr.potential)
    spread = float(np.max(np.ptp(th, axis=-1)))
    return dict(traj=tr, t=np.asarray(tr.t), B0=B0, B0d=B0d, E=E, wall_s=wall,
                energy_drift=float(np.max(np.abs(E - E[0])) / abs(E[0])),
                constraint_error=float(np.max(np.asarray(tr.constraint_error))),
                crank_angle_spread=spread, n_revolutions=float((th[0, 0] - th[-1, 0]) / (2 * np.pi)),
                status=int(tr.status), n_steps=int(tr.n_steps),
                settings=dict(integrator=f"RK4(dt={dt:g})" if integrator == "rk4"
                              else f"DormandPrince5(rtol={rtol:g}, atol={atol:g})",
                              stabilizer="Projection()",
                              solver=f"SchurCholesky(regularization={regularization:g})"))


def reference(N, t1, t_eval=None):
    """tests/reference/closed_forms.fourbar_solve (needs SciPy and the repository's tests/)."""
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(os.path.dirname(here), "tests"))
    from reference.closed_forms import fourbar_solve

    return fourbar_solve(N, t1, t_eval=t_eval)


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--n", type=int, default=2, help="number of loops N (default 2)")
    ap.add_argument("--t1", type=float, default=20.0, help="end time, s (default 20)")
    ap.add_argument("--dt", type=float, default=5e-3, help="RK4 step, s (default 5e-3)")
    ap.add_argument("--integrator", choices=("rk4", "dopri5"), default="rk4",
                    help="RK4 with step --dt, or adaptive DormandPrince5 (default rk4)")
    ap.add_argument("--regularization", type=float, default=1e-12,
                    help="SchurCholesky regularization eps (default 1e-12)")
    ap.add_argument("--no-reference", action="store_true", help="skip the SciPy reference")
    ap.add_argument("--json", action="store_true", help="last output line is one JSON object")
    a = ap.parse_args(argv)
    if a.n < 1:
        ap.error("--n must be >= 1")
    r = run(a.n, a.t1, a.dt, a.integrator, a.regularization)
    out = {
        "t": a.t1,
        "N": a.n,
        "B0": [float(x) for x in r["B0"][-1]],
        "B0_velocity": [float(x) for x in r["B0d"][-1]],
        "energy_drift": r["energy_drift"],
        "constraint_error": r["constraint_error"],
        "crank_angle_spread": r["crank_angle_spread"],
        "revolutions": r["n_revolutions"],
        "status": r["status"],
        "n_steps": r["n_steps"],
        "n_bodies": 2 * a.n + 1,
        "n_constraints": 6 * a.n + 2,
        "wall_s": r["wall_s"],
        **r["settings"],
    }
    if not a.no_reference:
        try:
            ref = reference(a.n, a.t1, r["t"])
        except ImportError as e:  # SciPy missing
            print(f"(no reference: {e})", file=sys.stderr)
        else:
            err = np.max(np.linalg.norm(r["B0"] - ref["B0"], axis=-1))
            out["B0_error"] = float(np.linalg.norm(r["B0"][-1] - ref["B0_T"]))
            out["B0_error_max"] = float(err)
            out["B0_velocity_error"] = float(np.linalg.norm(r["B0d"][-1] - ref["B0d_T"]))
            out["B0_reference"] = [float(x) for x in ref["B0_T"]]
    if not a.json:
        print(f"N-four-bar N = {a.n}: {out['n_bodies']} bodies, {out['n_constraints']} constraint "
              f"rows; {out['integrator']}, {out['solver']}, {out['stabilizer']}")
        print(f"  t = {a.t1} s: B0 = {out['B0']}, B0' = {out['B0_velocity']}")
        if "B0_error" in out:
            print(f"  |B0 - reference| = {out['B0_error']:.2e} m at t1, max over the save points "
                  f"{out['B0_error_max']:.2e} m")
        print(f"  energy drift {out['energy_drift']:.2e} (relative), constraint error max "
              f"{out['constraint_error']:.2e}, crank-angle spread {out['crank_angle_spread']:.1e} rad, "
              f"{out['revolutions']:.2f} revolutions, status {out['status']}")
        print(f"  wall time {out['wall_s']:.1f} s (incl. compilation)")
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
