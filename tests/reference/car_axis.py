"""Independent NumPy/SciPy reference for the car axis problem.

Problem: Test Set for IVP Solvers (Mazzia, Magherini, Univ. Bari), problem
"caraxis" (index-3 DAE of dimension 10; originally from Rentrop et al.).
Model data: docs/reference_problems.md §5.  Units: consistent
non-dimensional units of the Test Set (lengths L, masses M, time s); read them
as SI (m, kg, s, N) where convenient.

Coordinates q = (xl, yl, xr, yr): positions of the left and right wheel
points, each of mass k = M eps^2 / 2.  The rheonomic point
(xb, yb)(t) = (sqrt(L^2 - yb^2), r sin(w t)) is prescribed.

Forces:
    left spring  (stiffness 1, free length L0) from the origin to (xl, yl),
    right spring (stiffness 1, free length L0) from (xb, yb) to (xr, yr),
    gravity k g along -y on each point.
Constraints:
    Phi1 = xb(t) xl + yb(t) yl                    = 0
    Phi2 = (xl - xr)^2 + (yl - yr)^2 - L^2        = 0

The index-3 DAE  k qdd = F + G^T lam,  Phi(q, t) = 0  (Test Set sign
convention for lam, G = dPhi/dq) is solved as an index-1 ODE: at every
evaluation the KKT system

    [ k I  -G^T ] [ qdd ]   [ F                                   ]
    [ G     0   ] [ lam ] = [ -(dG/dt qd + 2 Phi_qt qd + Phi_tt)   ]

is solved, i.e. the acceleration-level constraint includes the explicit time
derivatives of the rheonomic point, and (q, qd) is integrated with
``scipy.integrate.solve_ivp``.  No stabilisation; the constraint drift is
reported.

Published reference solution
----------------------------
``TESTSET_Y_T3`` holds the Test Set reference solution at t = 3
(y = (xl, yl, xr, yr, xl', yl', xr', yr', lam1, lam2)).  Source: Test Set for
IVP Solvers, problems/caraxis.F revision "caraxis.F,v 1.2 2006/10/02",
routine ``solut``, as redistributed in the R package deTestSet (repository
rforge/bvpsolve, file pkg/deTestSet/src/Ex_car.f, routine ``carsoln``).  How
it was computed (solver, tolerance, precision) is not stated in that file.

Findings (x86-64, scipy 1.17), DOP853 at rtol = atol = 1e-12 (~0.5 s):

* q(3) agrees with the published positions to scd 11.6 (rel. error < 2.3e-12);
  tightening to 3e-14 and Radau at 1e-12 give the same to ~1e-12.
* v(3) agrees to scd 9.2 (absolute error ~5e-12; the relative error is
  largest in the small yl' = 0.0074).
* lam(3) agrees only to scd 7.1 (rel. 3.4e-8 / 7.2e-8).  Our multipliers are
  converged (all our runs agree to ~1e-11 relative) and, recomputed from the
  *published* (q, v) with this module's KKT system, give
  (-0.00473688659083, -0.00110468033125), i.e. our values, not the published
  ones: the published multipliers are the less accurate part of the reference
  (index-3 algebraic variables).
* Constraint drift of the unstabilised index-1 run at t = 3: |Phi| ~ 2e-12.

Run ``python -m tests.reference.car_axis`` to print the results.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

# Test Set parameters
EPS = 1e-2
M_TOTAL = 10.0  # "M"
L = 1.0  # axis length
L0 = 0.5  # spring free length
R = 0.1  # amplitude of the prescribed point
W = 10.0  # angular frequency of the prescribed point (rad/s)
GRAV = 1.0  # gravity
K = M_TOTAL * EPS**2 / 2.0  # mass of each point (= 5e-4)
SPRING = 1.0  # spring stiffness

T_END = 3.0

# Test Set reference solution at t = 3 (see module docstring for the source):
# (xl, yl, xr, yr, xl', yl', xr', yr', lam1, lam2)
TESTSET_Y_T3 = np.array(
    [
        0.4934557842755629e-001,
        0.4969894602303324e000,
        0.1041742524885400e001,
        0.3739110272652214e000,
        -0.7705836840321485e-001,
        0.7446866596327776e-002,
        0.1755681574942899e-001,
        0.7703410437794031e000,
        -0.4736886750784630e-002,
        -0.1104680411345730e-002,
    ]
)


def rheonomic_point(t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(xb, yb), its first and second time derivatives at time t."""
    yb = R * np.sin(W * t)
    ybd = R * W * np.cos(W * t)
    ybdd = -R * W * W * np.sin(W * t)
    xb = np.sqrt(L * L - yb * yb)
    xbd = -yb * ybd / xb
    xbdd = -(ybd * ybd + yb * ybdd + xbd * xbd) / xb
    return np.array([xb, yb]), np.array([xbd, ybd]), np.array([xbdd, ybdd])


def initial_state() -> tuple[np.ndarray, np.ndarray]:
    """Test Set initial state: q0 = (0, L0, L, L0), v0 = (-L0/L, 0, -L0/L, 0)."""
    return np.array([0.0, L0, L, L0]), np.array([-L0 / L, 0.0, -L0 / L, 0.0])


def constraints(q: np.ndarray, t: float) -> np.ndarray:
    """Phi(q, t) (2,)."""
    xl, yl, xr, yr = q
    (xb, yb), _, _ = rheonomic_point(t)
    return np.array([xb * xl + yb * yl, (xl - xr) ** 2 + (yl - yr) ** 2 - L * L])


def velocity_constraints(q: np.ndarray, v: np.ndarray, t: float) -> np.ndarray:
    """dPhi/dt = G v + Phi_t (2,)."""
    xl, yl, xr, yr = q
    ul, vl, ur, vr = v
    (xb, yb), (xbd, ybd), _ = rheonomic_point(t)
    return np.array(
        [
            xb * ul + yb * vl + xbd * xl + ybd * yl,
            2 * (xl - xr) * (ul - ur) + 2 * (yl - yr) * (vl - vr),
        ]
    )


def applied_forces(q: np.ndarray, t: float) -> np.ndarray:
    """Spring + gravity forces F(q, t) on (xl, yl, xr, yr) (4,)."""
    xl, yl, xr, yr = q
    (xb, yb), _, _ = rheonomic_point(t)
    ll = np.hypot(xl, yl)
    lr = np.hypot(xr - xb, yr - yb)
    fl = SPRING * (L0 - ll) / ll
    fr = SPRING * (L0 - lr) / lr
    return np.array(
        [fl * xl, fl * yl - K * GRAV, fr * (xr - xb), fr * (yr - yb) - K * GRAV]
    )


def accelerations(q: np.ndarray, v: np.ndarray, t: float) -> tuple[np.ndarray, np.ndarray]:
    """Solve the KKT system; return (qdd (4,), lam (2,)) with k qdd = F + G^T lam."""
    xl, yl, xr, yr = q
    ul, vl, ur, vr = v
    (xb, yb), (xbd, ybd), (xbdd, ybdd) = rheonomic_point(t)
    dx, dy = xl - xr, yl - yr
    G = np.array([[xb, yb, 0.0, 0.0], [2 * dx, 2 * dy, -2 * dx, -2 * dy]])
    # Phi1'' = G1 qdd + 2 (xb' ul + yb' vl) + xb'' xl + yb'' yl
    # Phi2'' = G2 qdd + 2 ((ul - ur)^2 + (vl - vr)^2)
    gamma = -np.array(
        [
            2 * (xbd * ul + ybd * vl) + xbdd * xl + ybdd * yl,
            2 * ((ul - ur) ** 2 + (vl - vr) ** 2),
        ]
    )
    KKT = np.zeros((6, 6))
    KKT[:4, :4] = K * np.eye(4)
    KKT[:4, 4:] = -G.T
    KKT[4:, :4] = G
    sol = np.linalg.solve(KKT, np.concatenate([applied_forces(q, t), gamma]))
    return sol[:4], sol[4:]


def _rhs(t, y):
    qdd, _ = accelerations(y[:4], y[4:], t)
    return np.concatenate([y[4:], qdd])


def solve(
    t1: float = T_END,
    rtol: float = 1e-12,
    atol: float = 1e-12,
    method: str = "DOP853",
    return_result: bool = False,
):
    """Integrate to t1; return (q(t1), v(t1), lam(t1)) [+ OdeResult]."""
    q0, v0 = initial_state()
    res = solve_ivp(_rhs, (0.0, t1), np.concatenate([q0, v0]), method=method, rtol=rtol, atol=atol)
    if not res.success:
        raise RuntimeError(f"solve_ivp failed: {res.message}")
    q, v = res.y[:4, -1], res.y[4:, -1]
    lam = accelerations(q, v, t1)[1]
    if return_result:
        return q, v, lam, res
    return q, v, lam


def scd(y: np.ndarray, y_ref: np.ndarray) -> float:
    """-log10(max_i |y_i - yref_i| / |yref_i|)."""
    return float(-np.log10(np.max(np.abs(np.asarray(y) - y_ref) / np.abs(y_ref))))


def main() -> None:
    import time

    np.set_printoptions(precision=16, linewidth=120)
    q0, v0 = initial_state()
    print("Car axis (Test Set 'caraxis')")
    print("Phi(q0, 0) =", constraints(q0, 0.0), " dPhi/dt =", velocity_constraints(q0, v0, 0.0))
    qdd0, lam0 = accelerations(q0, v0, 0.0)
    print("qdd(0) =", qdd0, " lam(0) =", lam0)
    for method, tol in (("DOP853", 1e-12), ("Radau", 1e-12)):
        t0 = time.perf_counter()
        q, v, lam, res = solve(T_END, rtol=tol, atol=tol, method=method, return_result=True)
        dt = time.perf_counter() - t0
        print(f"\n{method} rtol=atol={tol:g}: nfev={res.nfev}, {dt:.1f} s")
        print("  q(3)   =", q)
        print("  v(3)   =", v)
        print("  lam(3) =", lam)
        print(f"  drift: |Phi| = {np.max(np.abs(constraints(q, T_END))):.2e}, "
              f"|dPhi/dt| = {np.max(np.abs(velocity_constraints(q, v, T_END))):.2e}")
        y = np.concatenate([q, v, lam])
        print("  rel. error vs Test Set:", np.abs(y - TESTSET_Y_T3) / np.abs(TESTSET_Y_T3))
        print(f"  scd(q) = {scd(q, TESTSET_Y_T3[:4]):.2f}, scd(v) = {scd(v, TESTSET_Y_T3[4:8]):.2f}, "
              f"scd(lam) = {scd(lam, TESTSET_Y_T3[8:]):.2f}, scd(all 10) = {scd(y, TESTSET_Y_T3):.2f}")


if __name__ == "__main__":
    main()
