"""Closed-form and minimal-coordinate references (NumPy/SciPy only).

Units: SI throughout (m, kg, kg m^2, s, rad, N, N m, J).  Gravity acts along -y.

(a) Simple pendulum (docs/reference_problems.md §3, IFToMM A01): point mass m on a
    massless rod of length L pinned at the origin, released at rest at angle
    theta0 from the downward vertical on the +x side (theta0 = 90 deg: mass at
    (L, 0)).  theta is measured from -y, positive counter-clockwise, so the
    mass is at (L sin theta, -L cos theta).  Exact solution with
    k = sin(theta0/2), m = k^2, K = K(m), w0 = sqrt(g/L), u = K - w0 t:

        sin(theta/2) = k sn(u | m),    cos(theta/2) = dn(u | m)
        x = 2 L k sn dn,   y = -L (1 - 2 k^2 sn^2),   thetadot = -2 k w0 cn
        period T = 4 sqrt(L/g) K(m)

(b) Slider-crank (docs/reference_problems.md §2; Test Set "crank", rigid variant):
    crank angle phi (= omega t), rod angle psi with L1 sin(phi) + L2 sin(psi) = 0,
    cos(psi) > 0, slider at x = L1 cos(phi) + L2 cos(psi) on the x axis.
    Closed-form x, xdot, xddot; inverse dynamics by two methods that use no
    Lagrange multipliers:
      * Lagrange in the single minimal coordinate phi:  T = 1/2 m(phi) phidot^2,
            m(phi) = J1 + M2 L1^2 + M2 L1 L2 cos(phi - psi) psi' + J2 psi'^2 + M3 x'^2
        (J1 about the crank pivot, J2 about the crank-pin end of the rod; the
        rod's inertia about its CG is J2 - M2 (L2/2)^2),
            torque = m(phi) phidd + 1/2 m'(phi) phidot^2
        with analytic psi', psi'', x', x'' (no numerical differentiation);
      * Newton-Euler on each body with the closed-form accelerations, which also
        gives the bearing reactions and the slider normal force.

(c) N-four-bar (docs/reference_problems.md §4, IFToMM A02): N+1 cranks (uniform rods, m,
    L) pinned at x = 0, L, ..., N L; N couplers (uniform rods m, L).  All cranks
    stay parallel (angle phi from +x) and the couplers translate, so it is one
    DOF:  I_eff phidd = -V_eff cos(phi), with
        I_eff = m L^2 ((N+1)/3 + N),   V_eff = m g L ((N+1)/2 + N),
        E = 1/2 I_eff phidot^2 + V_eff sin(phi).
    Initially phi = pi/2 and B0 = (L cos phi, L sin phi) moves with xdot = 1 m/s,
    i.e. phidot = -1/L.

(d) Double pendulum of two uniform rods (m, L) pinned in series to ground,
    angles theta1, theta2 from -y (positive counter-clockwise, absolute);
    released at rest horizontal along +x (theta1 = theta2 = pi/2).
        M(theta) = m L^2 [[4/3, 1/2 c12], [1/2 c12, 1/3]],  c12 = cos(theta1 - theta2)
        M thetadd + m L^2 / 2 * s12 * [theta2d^2, -theta1d^2]
              = -m g L [3/2 sin(theta1), 1/2 sin(theta2)],   s12 = sin(theta1 - theta2)
        E = 1/2 thetad^T M thetad - m g L (3/2 cos(theta1) + 1/2 cos(theta2))

Run ``python -m tests.reference.closed_forms`` to print the results.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp
from scipy.special import ellipj, ellipk

G_EARTH = 9.81  # m/s^2

# ==========================================================================
# (a) Simple pendulum
# ==========================================================================
PENDULUM_L = 1.0  # m
PENDULUM_MASS = 1.0  # kg
PENDULUM_THETA0 = 0.5 * np.pi  # rad, released horizontal at (L, 0)


def pendulum_period(L: float = PENDULUM_L, g: float = G_EARTH, theta0: float = PENDULUM_THETA0) -> float:
    """Exact period [s]: T = 4 sqrt(L/g) K(m), m = sin^2(theta0/2) (scipy parameter m = k^2)."""
    return float(4.0 * np.sqrt(L / g) * ellipk(np.sin(0.5 * theta0) ** 2))


def pendulum_exact(t, L: float = PENDULUM_L, g: float = G_EARTH, theta0: float = PENDULUM_THETA0):
    """Exact pendulum motion via Jacobi elliptic functions.

    Args:
        t: time(s) [s], scalar or array (any size; the elliptic argument is
           reduced modulo 4K, the period of sn and cn, for long horizons).
    Returns:
        dict with arrays ``theta`` [rad], ``thetad`` [rad/s], ``x``, ``y`` [m],
        ``xd``, ``yd`` [m/s].
    """
    t = np.asarray(t, dtype=float)
    k = np.sin(0.5 * theta0)
    m = k * k
    K = ellipk(m)
    w0 = np.sqrt(g / L)
    u = np.mod(K - w0 * t, 4.0 * K)
    sn, cn, dn, _ = ellipj(u, m)
    theta = 2.0 * np.arctan2(k * sn, dn)
    thetad = -2.0 * k * w0 * cn
    x = 2.0 * L * k * sn * dn
    y = -L * (1.0 - 2.0 * m * sn * sn)
    # xd = L cos(theta) thetad, yd = L sin(theta) thetad
    cos_th = 1.0 - 2.0 * m * sn * sn
    sin_th = 2.0 * k * sn * dn
    return {
        "theta": theta,
        "thetad": thetad,
        "x": x,
        "y": y,
        "xd": L * cos_th * thetad,
        "yd": L * sin_th * thetad,
    }


def pendulum_ode(t_eval, L: float = PENDULUM_L, g: float = G_EARTH, theta0: float = PENDULUM_THETA0,
                 rtol: float = 1e-12, atol: float = 1e-12):
    """Numerical minimal-coordinate solution  thetadd = -(g/L) sin(theta)  (DOP853).

    Returns the same dict as :func:`pendulum_exact` at the times ``t_eval`` [s].
    """
    t_eval = np.atleast_1d(np.asarray(t_eval, dtype=float))
    sol = solve_ivp(lambda t, s: (s[1], -(g / L) * np.sin(s[0])), (0.0, float(t_eval[-1])),
                    (theta0, 0.0), method="DOP853", t_eval=t_eval, rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(sol.message)
    th, thd = sol.y
    return {
        "theta": th,
        "thetad": thd,
        "x": L * np.sin(th),
        "y": -L * np.cos(th),
        "xd": L * np.cos(th) * thd,
        "yd": L * np.sin(th) * thd,
    }


# ==========================================================================
# (b) Slider-crank
# ==========================================================================
CRANK_L1 = 0.15  # m
CRANK_M1 = 0.36  # kg
CRANK_J1 = 0.002727  # kg m^2, about the crank pivot
CRANK_L2 = 0.30  # m
CRANK_M2 = 0.151104  # kg
CRANK_J2 = 0.0045339259  # kg m^2, about the crank-pin end of the rod
CRANK_M3 = 0.075552  # kg
CRANK_OMEGA = 150.0  # rad/s
# Crank CG distance from the pivot: not given in the source (docs/reference_problems.md
# §2); L1/2 is the Test Set value (its gravity term is -L1 g (M1 + 2 M2) cos(phi) / 2).  It only
# affects the pivot bearing reaction (g = 0 here).
CRANK_R1 = 0.5 * CRANK_L1


def slider_kinematics(phi, omega: float = CRANK_OMEGA, L1: float = CRANK_L1, L2: float = CRANK_L2):
    """Closed forms of docs/reference_problems.md §2 at constant crank speed omega.

    Returns (x [m], xd [m/s], xdd [m/s^2]).  At phi = 0, xdd = -5062.5 m/s^2.
    """
    phi = np.asarray(phi, dtype=float)
    s, c = np.sin(phi), np.cos(phi)
    S = np.sqrt(L2 * L2 - L1 * L1 * s * s)
    x = L1 * c + S
    xd = -L1 * omega * s - L1 * L1 * omega * s * c / S
    xdd = (-L1 * omega**2 * c - L1 * L1 * omega**2 * (c * c - s * s) / S
           - L1**4 * omega**2 * s * s * c * c / S**3)
    return x, xd, xdd


def crank_geometry(phi, L1: float = CRANK_L1, L2: float = CRANK_L2):
    """Position-level derivatives w.r.t. phi (analytic).

    Returns dict: psi [rad], dpsi = dpsi/dphi, ddpsi = d2psi/dphi2,
    x [m], dx = dx/dphi [m/rad], ddx = d2x/dphi2 [m/rad^2].
    """
    phi = np.asarray(phi, dtype=float)
    lam = L1 / L2
    s, c = np.sin(phi), np.cos(phi)
    cpsi = np.sqrt(1.0 - lam * lam * s * s)  # cos(psi) > 0
    psi = -np.arcsin(lam * s)
    dpsi = -lam * c / cpsi
    ddpsi = lam * s / cpsi - lam**3 * s * c * c / cpsi**3
    x = L1 * c + L2 * cpsi
    dcpsi = -lam * lam * s * c / cpsi
    ddcpsi = -lam * lam * (c * c - s * s) / cpsi - lam**4 * s * s * c * c / cpsi**3
    dx = -L1 * s + L2 * dcpsi
    ddx = -L1 * c + L2 * ddcpsi
    return {"psi": psi, "dpsi": dpsi, "ddpsi": ddpsi, "x": x, "dx": dx, "ddx": ddx}


def crank_effective_inertia(phi, L1=CRANK_L1, L2=CRANK_L2, J1=CRANK_J1, M2=CRANK_M2, J2=CRANK_J2, M3=CRANK_M3):
    """m(phi) [kg m^2] and dm/dphi [kg m^2/rad] with T = 1/2 m(phi) phidot^2."""
    phi = np.asarray(phi, dtype=float)
    k = crank_geometry(phi, L1, L2)
    d = phi - k["psi"]
    m = (J1 + M2 * L1 * L1 + M2 * L1 * L2 * np.cos(d) * k["dpsi"]
         + J2 * k["dpsi"] ** 2 + M3 * k["dx"] ** 2)
    dm = (M2 * L1 * L2 * (-np.sin(d) * (1.0 - k["dpsi"]) * k["dpsi"] + np.cos(d) * k["ddpsi"])
          + 2.0 * J2 * k["dpsi"] * k["ddpsi"] + 2.0 * M3 * k["dx"] * k["ddx"])
    return m, dm


def crank_torque_lagrange(phi, omega: float = CRANK_OMEGA, phidd: float = 0.0, **params):
    """Driving torque [N m] (motor on crank, positive along the rotation), g = 0.

    torque = m(phi) phidd + 1/2 m'(phi) omega^2   (Lagrange, one coordinate).
    """
    m, dm = crank_effective_inertia(phi, **params)
    return m * phidd + 0.5 * dm * omega**2


def crank_inverse_dynamics_newton_euler(phi, omega: float = CRANK_OMEGA, phidd: float = 0.0,
                                        L1=CRANK_L1, L2=CRANK_L2, M1=CRANK_M1, J1=CRANK_J1,
                                        M2=CRANK_M2, J2=CRANK_J2, M3=CRANK_M3, r1=CRANK_R1):
    """Newton-Euler inverse dynamics with closed-form kinematics (g = 0).

    Conventions (all forces in N, in the ground frame):
      ``R_O``   force of the ground bearing on the crank at the pivot O,
      ``F_A``   force of the crank on the rod at the crank pin A,
      ``F_B``   force of the slider on the rod at the wrist pin B,
      ``N``     force of the guide on the slider (y component; the guide is
                frictionless so its x component is 0),
      ``torque`` motor torque on the crank [N m], positive along the rotation.
    Arrays have shape phi.shape (+ (2,) for vectors).
    """
    phi = np.asarray(phi, dtype=float)
    k = crank_geometry(phi, L1, L2)
    psi = k["psi"]
    psid = k["dpsi"] * omega
    psidd = k["ddpsi"] * omega**2 + k["dpsi"] * phidd
    xdd = k["ddx"] * omega**2 + k["dx"] * phidd
    s, c = np.sin(phi), np.cos(phi)
    sp, cp = np.sin(psi), np.cos(psi)
    # crank pin A and its acceleration
    A = np.stack([L1 * c, L1 * s], axis=-1)
    aA = np.stack([L1 * (-phidd * s - omega**2 * c), L1 * (phidd * c - omega**2 * s)], axis=-1)
    # rod CG (middle of the rod) acceleration
    half = 0.5 * L2
    aG2 = aA + half * np.stack([-psidd * sp - psid**2 * cp, psidd * cp - psid**2 * sp], axis=-1)
    IG2 = J2 - M2 * half**2  # rod inertia about its CG
    rA = -half * np.stack([cp, sp], axis=-1)  # A - G2
    rB = half * np.stack([cp, sp], axis=-1)  # B - G2
    # slider: M3 xdd = -F_Bx ; 0 = N - F_By
    FBx = -M3 * xdd
    FAx = M2 * aG2[..., 0] - FBx
    # rod: FAy + FBy = M2 aG2y ; rA x F_A + rB x F_B = IG2 psidd
    #   rA_x FAy - rA_y FAx + rB_x FBy - rB_y FBx = IG2 psidd
    rhs1 = M2 * aG2[..., 1]
    rhs2 = IG2 * psidd + rA[..., 1] * FAx + rB[..., 1] * FBx
    det = rB[..., 0] - rA[..., 0]
    FBy = (rhs2 - rA[..., 0] * rhs1) / det
    FAy = rhs1 - FBy
    F_A = np.stack([FAx, FAy], axis=-1)
    F_B = np.stack([FBx, FBy], axis=-1)
    N = FBy
    # crank: J1 phidd = torque + A x (-F_A) ;  M1 aG1 = R_O - F_A
    torque = J1 * phidd + (A[..., 0] * FAy - A[..., 1] * FAx)
    aG1 = (r1 / L1) * aA
    R_O = M1 * aG1 + F_A
    return {"torque": torque, "R_O": R_O, "F_A": F_A, "F_B": F_B, "N": N}


# ==========================================================================
# (c) N-four-bar (parallelogram linkage, 1 DOF)
# ==========================================================================
def fourbar_constants(N: int, m: float = 1.0, L: float = 1.0, g: float = G_EARTH) -> tuple[float, float]:
    """(I_eff [kg m^2], V_eff [J]) of the 1-DOF N-four-bar."""
    return m * L * L * ((N + 1) / 3.0 + N), m * g * L * ((N + 1) / 2.0 + N)


def fourbar_energy(phi, phid, N: int, m: float = 1.0, L: float = 1.0, g: float = G_EARTH):
    """Total mechanical energy [J] (zero potential at y = 0)."""
    I_eff, V_eff = fourbar_constants(N, m, L, g)
    return 0.5 * I_eff * np.asarray(phid) ** 2 + V_eff * np.sin(phi)


def fourbar_solve(N: int, T: float, t_eval=None, vx0: float = 1.0, m: float = 1.0, L: float = 1.0,
                  g: float = G_EARTH, rtol: float = 1e-12, atol: float = 1e-12):
    """Integrate  I_eff phidd = -V_eff cos(phi)  (DOP853) from phi = pi/2, phid = -vx0/L.

    Returns dict: ``t`` [s], ``phi`` [rad], ``phid`` [rad/s], ``B0`` [m] (n, 2),
    ``B0d`` [m/s] (n, 2), ``energy`` [J] (n,), and the values at T:
    ``B0_T``, ``B0d_T``, ``energy_T``, plus ``energy_0``.
    """
    I_eff, V_eff = fourbar_constants(N, m, L, g)
    if t_eval is None:
        t_eval = np.array([0.0, T])
    t_eval = np.asarray(t_eval, dtype=float)
    sol = solve_ivp(lambda t, s: (s[1], -V_eff / I_eff * np.cos(s[0])), (0.0, T),
                    (0.5 * np.pi, -vx0 / L), method="DOP853", t_eval=t_eval, rtol=rtol, atol=atol,
                    dense_output=True)
    if not sol.success:
        raise RuntimeError(sol.message)
    phi, phid = sol.y
    B0 = np.stack([L * np.cos(phi), L * np.sin(phi)], axis=-1)
    B0d = np.stack([-L * np.sin(phi) * phid, L * np.cos(phi) * phid], axis=-1)
    phiT, phidT = sol.sol(T)
    return {
        "t": sol.t,
        "phi": phi,
        "phid": phid,
        "B0": B0,
        "B0d": B0d,
        "energy": fourbar_energy(phi, phid, N, m, L, g),
        "B0_T": np.array([L * np.cos(phiT), L * np.sin(phiT)]),
        "B0d_T": np.array([-L * np.sin(phiT) * phidT, L * np.cos(phiT) * phidT]),
        "energy_T": float(fourbar_energy(phiT, phidT, N, m, L, g)),
        "energy_0": float(fourbar_energy(0.5 * np.pi, -vx0 / L, N, m, L, g)),
        "sol": sol,
    }


def fourbar_revolution_period(N: int, vx0: float = 1.0, m: float = 1.0, L: float = 1.0,
                              g: float = G_EARTH, n_nodes: int = 4096) -> float:
    """Time [s] for one full crank revolution, by quadrature (no ODE solve).

    From energy conservation, phid^2 = 2 (E - V_eff sin(phi)) / I_eff, so the
    period is the integral over one revolution of dphi / |phid|.
    """
    I_eff, V_eff = fourbar_constants(N, m, L, g)
    E = 0.5 * I_eff * (vx0 / L) ** 2 + V_eff
    # The integrand is smooth and 2 pi-periodic, so the equispaced trapezoidal
    # rule converges geometrically (machine precision with a few thousand nodes).
    phi = np.linspace(0.0, 2.0 * np.pi, n_nodes, endpoint=False)
    val = 2.0 * np.pi * np.mean(1.0 / np.sqrt(2.0 * (E - V_eff * np.sin(phi)) / I_eff))
    return float(val)


# ==========================================================================
# (d) Double pendulum of two uniform rods
# ==========================================================================
def double_pendulum_rhs(t, s, m: float = 1.0, L: float = 1.0, g: float = G_EARTH):
    """State s = (theta1, theta2, theta1d, theta2d); returns ds/dt."""
    th1, th2, w1, w2 = s
    c12, s12 = np.cos(th1 - th2), np.sin(th1 - th2)
    a, b, d = 4.0 / 3.0, 0.5 * c12, 1.0 / 3.0  # M / (m L^2)
    r1 = -1.5 * (g / L) * np.sin(th1) - 0.5 * s12 * w2 * w2
    r2 = -0.5 * (g / L) * np.sin(th2) + 0.5 * s12 * w1 * w1
    det = a * d - b * b
    return np.array([w1, w2, (d * r1 - b * r2) / det, (a * r2 - b * r1) / det])


def double_pendulum_energy(th1, th2, w1, w2, m: float = 1.0, L: float = 1.0, g: float = G_EARTH):
    """Total mechanical energy [J] (zero potential at the pivot height)."""
    c12 = np.cos(th1 - th2)
    T = 0.5 * m * L * L * (4.0 / 3.0 * w1 * w1 + c12 * w1 * w2 + 1.0 / 3.0 * w2 * w2)
    V = -m * g * L * (1.5 * np.cos(th1) + 0.5 * np.cos(th2))
    return T + V


def double_pendulum_solve(T: float, t_eval=None, m: float = 1.0, L: float = 1.0, g: float = G_EARTH,
                          theta0=(0.5 * np.pi, 0.5 * np.pi), rtol: float = 1e-13, atol: float = 1e-13):
    """Integrate the double pendulum (DOP853) from rest at ``theta0`` [rad].

    Returns dict: ``t`` [s], ``theta1``, ``theta2`` [rad], ``theta1d``,
    ``theta2d`` [rad/s], ``joint`` (n, 2) and ``tip`` (n, 2) positions [m],
    ``energy`` [J].
    """
    if t_eval is None:
        t_eval = np.linspace(0.0, T, 201)
    t_eval = np.asarray(t_eval, dtype=float)
    sol = solve_ivp(double_pendulum_rhs, (0.0, T), (theta0[0], theta0[1], 0.0, 0.0), method="DOP853",
                    t_eval=t_eval, rtol=rtol, atol=atol, args=(m, L, g))
    if not sol.success:
        raise RuntimeError(sol.message)
    th1, th2, w1, w2 = sol.y
    joint = np.stack([L * np.sin(th1), -L * np.cos(th1)], axis=-1)
    tip = joint + np.stack([L * np.sin(th2), -L * np.cos(th2)], axis=-1)
    return {
        "t": sol.t,
        "theta1": th1,
        "theta2": th2,
        "theta1d": w1,
        "theta2d": w2,
        "joint": joint,
        "tip": tip,
        "energy": double_pendulum_energy(th1, th2, w1, w2, m, L, g),
        "nfev": sol.nfev,
    }


# ==========================================================================
def main() -> None:
    np.set_printoptions(precision=15, linewidth=120)
    print("(a) Simple pendulum, L = 1 m, g = 9.81, theta0 = 90 deg")
    T = pendulum_period()
    print(f"  period T = {T:.15f} s  (small-angle 2 pi sqrt(L/g) = {2 * np.pi / np.sqrt(G_EARTH):.15f} s)")
    for t in (0.25 * T, 0.5 * T, T, 1.0, 10.0, 2000.0):
        e = pendulum_exact(t)
        print(f"  t = {t:12.6f} s: x = {float(e['x']): .15f}, y = {float(e['y']): .15f}, "
              f"xd = {float(e['xd']): .12f}, yd = {float(e['yd']): .12f}")
    ts = np.linspace(0.0, 20.0, 401)
    ex, nu = pendulum_exact(ts), pendulum_ode(ts)
    print("  max |x_ode - x_exact|, |y_ode - y_exact| over [0, 20] s:",
          np.max(np.abs(nu["x"] - ex["x"])), np.max(np.abs(nu["y"] - ex["y"])))

    print("\n(b) Slider-crank, omega = 150 rad/s, g = 0")
    x, xd, xdd = slider_kinematics(0.0)
    print(f"  phi = 0: x = {x}, xd = {xd}, xdd = {xdd}")
    phis = np.linspace(0.0, 2 * np.pi, 13)
    tl = crank_torque_lagrange(phis)
    ne = crank_inverse_dynamics_newton_euler(phis)
    print("  phi [deg]   torque_Lagrange [N m]   torque_NE [N m]   N [N]   R_O [N]")
    for p, a_, b_, n_, r_ in zip(np.degrees(phis), tl, ne["torque"], ne["N"], ne["R_O"]):
        print(f"  {p:7.1f}   {a_: .12f}   {b_: .12f}   {n_: .9f}   {r_}")
    phis = np.linspace(0.0, 2 * np.pi, 3601)
    tl = crank_torque_lagrange(phis)
    print(f"  max |torque| over a revolution = {np.max(np.abs(tl)):.9f} N m; "
          f"max |Lagrange - NE| = {np.max(np.abs(tl - crank_inverse_dynamics_newton_euler(phis)['torque'])):.2e}")

    print("\n(c) N-four-bar")
    for N, Tend in ((2, 20.0), (40, 20.0)):
        r = fourbar_solve(N, Tend, t_eval=np.linspace(0, Tend, 2001))
        print(f"  N = {N}, T = {Tend}: B0(T) = {r['B0_T']}, B0d(T) = {r['B0d_T']}, "
              f"E(T) = {r['energy_T']:.15f} J, E(0) = {r['energy_0']:.15f} J, "
              f"max |E - E0| = {np.max(np.abs(r['energy'] - r['energy_0'])):.2e}")
        print(f"         crank revolution period (quadrature) = {fourbar_revolution_period(N):.15f} s")

    print("\n(d) Double pendulum of two uniform 1 kg, 1 m rods, released horizontal")
    r = double_pendulum_solve(10.0, t_eval=np.linspace(0, 10, 11))
    for i in range(len(r["t"])):
        print(f"  t = {r['t'][i]:5.2f}: theta = ({r['theta1'][i]: .12f}, {r['theta2'][i]: .12f}), "
              f"tip = ({r['tip'][i, 0]: .12f}, {r['tip'][i, 1]: .12f}), E = {r['energy'][i]: .3e}")
    print(f"  nfev = {r['nfev']}")


if __name__ == "__main__":
    main()
