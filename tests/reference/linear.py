"""Closed forms for statics, linearisation and modes (NumPy/SciPy only, no jaxmbs).

Units: SI (m, kg, kg m^2, s, rad, N, N m). Planar problems have gravity g along -y.

(a) Compound pendulum: a rigid body of mass m, inertia J_G about its CG, pinned at a
    point a distance d from the CG: hanging, lambda = +-i sqrt(m g d / (J_G + m d^2));
    upright, +-sqrt(m g d / (J_G + m d^2)).

(b) Double pendulum of two uniform rods (m1, L1), (m2, L2) pinned in series, hanging:
    M = [[(m1/3 + m2) L1^2, m2 L1 L2 / 2], [m2 L1 L2 / 2, m2 L2^2 / 3]],
    K = g diag((m1/2 + m2) L1, m2 L2 / 2)  (absolute angles from the downward vertical);
    omega^2 are the roots of det(K - omega^2 M) = 0 (quadratic formula), and the mode
    shapes (theta2 / theta1) = (K11 - omega^2 M11) / (omega^2 M12).

(c) Spring-loaded four-bar (one DOF, crank angle theta2): ground pivots O2 = (0, 0) and
    O4 = (d, 0); uniform crank (m1, a), coupler (m2, b), rocker (m3, c); a torsion spring
    k_t (free angle theta0) between the ground and the crank and a translational spring
    k_s (free length L0) from the ground point S to the coupler's midpoint. The loop is
    closed by the circle intersection (the branch with the coupler-rocker joint above the
    line from O4 to the crank pin), velocities and accelerations per unit crank rate by
    the 2x2 linear loop-closure equations, so that the potential
        V = k_t (theta2 - theta0)^2 / 2 + k_s (l - L0)^2 / 2 + g sum m_i y_Gi
    and its first two derivatives along the mechanism, V' and V'', are in closed form.
    Equilibrium: V'(theta2) = 0 (brentq); natural frequency omega^2 = V'' / m_eff with
    m_eff = sum m_i |v_Gi|^2 + J_i omega_i^2 (per unit crank rate).

(d) Quarter car (two masses): sprung mass m_s on a spring k_s and damper c_s above the
    unsprung mass m_u, which stands on a tire of stiffness k_t; a linear penalty tire
    k_t delta (1 + chi delta_dot) (Lankarani-Nikravesh form, exponent 1) linearised at
    the static deflection delta0 = (m_s + m_u) g / k_t has the damping c_t = k_t delta0 chi.
    Ride: static spring compression m_s g / k_s, tire deflection delta0. Eigenvalues:
    the roots of the characteristic quartic det(M s^2 + C s + K) = 0, its coefficients
    written out; undamped natural frequencies from the quadratic formula.

(e) Sleeping top: a symmetric top (mass m, CG at l from the fixed tip, moments I1 about a
    transverse axis through the tip, I3 about the symmetry axis) spinning at omega about
    the upward vertical: the tilt obeys I1 u'' - i I3 omega u' - m g l u = 0 (u = complex
    tilt), lambda = i (I3 omega +- sqrt(I3^2 omega^2 - 4 I1 m g l)) / (2 I1) and the
    complex conjugates; stable (purely imaginary) for I3^2 omega^2 > 4 I1 m g l.

(f) Towed caster: a knife-edge wheel at distance e behind a pivot that moves straight at
    speed v: the caster angle psi obeys psi' = -(v / e) sin psi, lambda = -v / e (one
    state: the knife edge leaves no velocity freedom).
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

G = 9.81


# (a) --------------------------------------------------------------------------------
def compound_pendulum_omega(m, J_G, d, g=G):
    """sqrt(m g d / (J_G + m d^2)) (rad/s)."""
    return np.sqrt(m * g * d / (J_G + m * d * d))


# (b) --------------------------------------------------------------------------------
def double_pendulum_matrices(m1, L1, m2, L2, g=G):
    M = np.array([[(m1 / 3 + m2) * L1**2, m2 * L1 * L2 / 2], [m2 * L1 * L2 / 2, m2 * L2**2 / 3]])
    K = g * np.diag([(m1 / 2 + m2) * L1, m2 * L2 / 2])
    return M, K


def double_pendulum_modes(m1, L1, m2, L2, g=G):
    """(omega (2,) ascending rad/s, ratios theta2/theta1 (2,))."""
    M, K = double_pendulum_matrices(m1, L1, m2, L2, g)
    a = M[0, 0] * M[1, 1] - M[0, 1] ** 2
    b = -(M[0, 0] * K[1, 1] + M[1, 1] * K[0, 0])
    c = K[0, 0] * K[1, 1]
    disc = np.sqrt(b * b - 4 * a * c)
    w2 = np.array([(-b - disc) / (2 * a), (-b + disc) / (2 * a)])
    ratios = (K[0, 0] - w2 * M[0, 0]) / (w2 * M[0, 1])
    return np.sqrt(w2), ratios


# (c) --------------------------------------------------------------------------------
FOURBAR = dict(a=0.3, b=0.8, c=0.6, d=0.7, m1=1.0, m2=2.0, m3=1.5, k_t=60.0, theta0=1.6,
               k_s=400.0, L0=0.45, S=(0.2, -0.3))


def fourbar_kinematics(th2, p=None):
    """Positions, velocities and accelerations per unit crank rate (alpha2 = 0) of the
    four-bar at crank angle th2: dict with th3, th4, w3, w4, al3, al4, A, B (2,)."""
    p = dict(FOURBAR if p is None else p)
    a, b, c, d = p["a"], p["b"], p["c"], p["d"]
    A = a * np.array([np.cos(th2), np.sin(th2)])
    O4 = np.array([d, 0.0])
    D = A - O4
    s = np.hypot(*D)
    e = D / s
    x = (c * c - b * b + s * s) / (2 * s)
    hgt = np.sqrt(c * c - x * x)
    eperp = np.array([-e[1], e[0]])
    B1, B2 = O4 + x * e + hgt * eperp, O4 + x * e - hgt * eperp
    B = B1 if B1[1] >= B2[1] else B2  # the branch with the coupler-rocker joint above
    th3 = np.arctan2(*(B - A)[::-1])
    th4 = np.arctan2(*(B - O4)[::-1])
    s2, c2, s3, c3, s4, c4 = np.sin(th2), np.cos(th2), np.sin(th3), np.cos(th3), np.sin(th4), np.cos(th4)
    # velocity loop: a i e2 + b w3 i e3 - c w4 i e4 = 0 (w2 = 1)
    Mv = np.array([[-b * s3, c * s4], [b * c3, -c * c4]])
    w3, w4 = np.linalg.solve(Mv, np.array([a * s2, -a * c2]))
    # acceleration loop (alpha2 = 0): unknowns al3, al4
    rhs = np.array([a * c2 + b * c3 * w3**2 - c * c4 * w4**2,
                    a * s2 + b * s3 * w3**2 - c * s4 * w4**2])
    al3, al4 = np.linalg.solve(Mv, rhs)
    return dict(th3=th3, th4=th4, w3=w3, w4=w4, al3=al3, al4=al4, A=A, B=B)


def fourbar_potential_derivatives(th2, p=None, g=G):
    """(V'(th2), V''(th2), m_eff(th2)) in N m, N m/rad, kg m^2."""
    p = dict(FOURBAR if p is None else p)
    k = fourbar_kinematics(th2, p)
    a, b, c = p["a"], p["b"], p["c"]
    m1, m2, m3 = p["m1"], p["m2"], p["m3"]
    th3, th4, w3, w4, al3, al4 = (k[n] for n in ("th3", "th4", "w3", "w4", "al3", "al4"))
    s2, c2, s3, c3, s4, c4 = np.sin(th2), np.cos(th2), np.sin(th3), np.cos(th3), np.sin(th4), np.cos(th4)
    # CG velocities and accelerations (per unit crank rate, alpha2 = 0)
    vG1 = a / 2 * np.array([-s2, c2])
    aG1 = -a / 2 * np.array([c2, s2])
    vG2 = a * np.array([-s2, c2]) + b / 2 * w3 * np.array([-s3, c3])
    aG2 = -a * np.array([c2, s2]) + b / 2 * (al3 * np.array([-s3, c3]) - w3**2 * np.array([c3, s3]))
    vG3 = c / 2 * w4 * np.array([-s4, c4])
    aG3 = c / 2 * (al4 * np.array([-s4, c4]) - w4**2 * np.array([c4, s4]))
    G2 = k["A"] + b / 2 * np.array([c3, s3])
    dV = p["k_t"] * (th2 - p["theta0"]) + g * (m1 * vG1[1] + m2 * vG2[1] + m3 * vG3[1])
    ddV = p["k_t"] + g * (m1 * aG1[1] + m2 * aG2[1] + m3 * aG3[1])
    r = G2 - np.asarray(p["S"], float)
    ell = np.hypot(*r)
    dl = r @ vG2 / ell
    ddl = (vG2 @ vG2 + r @ aG2 - dl * dl) / ell
    dV += p["k_s"] * (ell - p["L0"]) * dl
    ddV += p["k_s"] * (dl * dl + (ell - p["L0"]) * ddl)
    meff = (m1 * a * a / 3 + m2 * (vG2 @ vG2) + m2 * b * b / 12 * w3**2 + m3 * c * c / 3 * w4**2)
    return dV, ddV, meff


def fourbar_equilibrium(p=None, bracket=(0.6, 2.2), g=G):
    """(theta2, omega_n, th3, th4) of the spring-loaded four-bar's equilibrium in the
    bracket (brentq on V', xtol 1e-15)."""
    th = brentq(lambda x: fourbar_potential_derivatives(x, p, g)[0], *bracket, xtol=1e-15,
                rtol=1e-15)
    _, ddV, meff = fourbar_potential_derivatives(th, p, g)
    k = fourbar_kinematics(th, p)
    return th, np.sqrt(ddV / meff), k["th3"], k["th4"]


# (d) --------------------------------------------------------------------------------
def quarter_car(m_s, m_u, k_s, c_s, k_t, chi, g=G):
    """dict: delta0 (m), spring compression (m), eigenvalues (4,) complex (sorted by
    modulus), undamped natural frequencies (2,) rad/s, c_t (N s/m)."""
    delta0 = (m_s + m_u) * g / k_t
    c_t = k_t * delta0 * chi
    # det([[m_s s^2 + c_s s + k_s, -(c_s s + k_s)], [-(c_s s + k_s), m_u s^2 + (c_s + c_t) s + k_s + k_t]])
    p4 = m_s * m_u
    p3 = m_s * (c_s + c_t) + m_u * c_s
    p2 = m_s * (k_s + k_t) + m_u * k_s + c_s * c_t
    p1 = c_s * k_t + c_t * k_s
    p0 = k_s * k_t
    ev = np.roots([p4, p3, p2, p1, p0])
    ev = ev[np.lexsort((-ev.imag, np.abs(ev)))]
    a, b = k_s / m_s, (k_s + k_t) / m_u
    disc = np.sqrt((a + b) ** 2 - 4 * a * b + 4 * k_s * k_s / (m_s * m_u))
    w = np.sqrt(np.array([(a + b - disc) / 2, (a + b + disc) / 2]))
    return dict(delta0=delta0, compression=m_s * g / k_s, eigenvalues=ev, undamped=w, c_t=c_t)


# (e) --------------------------------------------------------------------------------
def sleeping_top_eigenvalues(m, l, I1, I3, omega, g=G):
    """The four eigenvalues (complex) of the linearised tilt of a sleeping top."""
    root = np.sqrt(complex(I3 * I3 * omega * omega - 4 * I1 * m * g * l))
    lam = 1j * (I3 * omega + np.array([root, -root])) / (2 * I1)
    return np.concatenate([lam, np.conj(lam)])
