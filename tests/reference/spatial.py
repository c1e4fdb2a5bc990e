"""Independent NumPy/SciPy references for the spatial (3-D) examples.

Nothing here imports jaxmbs.  SI units throughout (m, kg, kg m^2, s, rad, N, J),
float64, g = 9.81 m/s^2.  Every integration uses ``scipy.integrate.solve_ivp``
(DOP853, rtol = 1e-12, atol = 1e-14 unless stated otherwise); every derivative
that enters an equation of motion is analytic or a complex-step derivative of
analytic NumPy code (never a finite difference).

Contents
--------
1. :func:`spatial_slider_crank` -- IFToMM spatial slider-crank, free, 1 DOF,
   Lagrange's equation in the crank angle.
2. :func:`bricard` -- Bricard's overconstrained 6R loop (Grubler 0, mobility 1),
   closed-form loop closure in the relative joint angles + Kane's equation.
3. :func:`tennis_racket` -- torque-free asymmetric body (intermediate-axis
   flip): Euler's equations + quaternion, Jacobi-elliptic closed form.
4. :func:`heavy_top` -- Lagrange top on a spherical joint: closed forms
   (cubic in u = cos(theta), elliptic nutation period, precession quadrature)
   and a full 3-D integration.
5. :func:`double_wishbone` -- front-left double-wishbone suspension kinematics in
   minimal coordinates; the geometry is ``examples/models/double_wishbone.json``.

Verification (self-tests in ``test_spatial_refs.py``; figures measured on x86-64,
scipy 1.17, at the default tolerances)
--------------------------------------------------------------------------------
1. Slider-crank: |C - B| = 0.3 and the universal's perpendicularities to 1e-14; energy
   drift 1.9e-12 J over 2 s (E = 0.766 J); the revolution time from the energy integral
   (quadrature, no m', no ODE) T = 0.578897439601 s: the ODE's crank angle is 2 pi
   within 3e-12 rad there (4 pi within 1.3e-11 at 2T); T + V from central differences of
   the returned poses matches to 1e-7 (checks m(phi) physically); rtol 1e-12 vs 1e-13:
   1.3e-10 rad after 2 s, Radau vs DOP853 1.3e-10 rad; MuJoCo (stiff connect, RK4 1 ms)
   within 8.9e-6 rad / 4.1e-7 m after 1 s, while dropping the rod's spin inertia moves
   the crank by 7.5e-2 rad.
2. Bricard: loop closure (product of the six joint transforms) <= 5e-16, loop-twist
   rank 5 all along; Gauss-Newton on the full loop (relation not used) reproduces the
   branch to 1e-13; energy drift 2.7e-11 J over 10 s (|E| = 29.43 J); rest-to-rest
   swing time by quadrature 2.493237607561 s (q: 0 -> pi), where the ODE's qdot is
   1.9e-12 rad/s; rtol 1e-12 vs 1e-13: P3 within 4e-13 m at 2, 5, 10 s.
3. Tennis racket: omega within 8.2e-11 rad/s of the elliptic closed form over 10 s
   (rtol 3e-14), omega_y sign changes within 1.6e-12 s of (2j - 1) K / lam; energy and
   world angular momentum constant to 1.8e-13 / 1.6e-13 relative.
4. Heavy top: simulated theta within 8.9e-13 rad of the closed form over 2 s and inside
   [theta_min, theta_max]; precession at 2 s within 4.6e-12 rad of the quadrature; zeros
   of d(axis_z)/dt at multiples of T/2 to 1e-10 s; energy drift 5.8e-13 J.
5. Double wishbone: link-length / knuckle-rigidity residuals < 1e-12 m at every travel,
   nominal and +-0.5 mm perturbed; an independent Newton solve on 8 unknowns (arm
   angles, knuckle rotation vector and translation) agrees to 1e-11 rad in camber / toe.

Conventions: rotation matrices map body to world coordinates (``x_world = R
x_body``); quaternions are (w, x, y, z); ``omega_body`` is the angular velocity
in body axes.  Run ``python -m tests.reference.spatial`` to print the figures.
"""

from __future__ import annotations

import json
import os

import numpy as np
from scipy.integrate import quad, solve_ivp
from scipy.optimize import brentq
from scipy.special import ellipj, ellipk, ellipkm1

G_EARTH = 9.81  # m/s^2
RTOL = 1e-12
ATOL = 1e-14
CSTEP = 1e-30  # complex-step size (derivative error ~ CSTEP^2, i.e. none)


# ==========================================================================
# Small rotation utilities (real or complex arrays; no abs/conj so that they
# stay analytic for complex-step differentiation)
# ==========================================================================
def skew(a):
    """Cross-product matrix [a]x (3, 3) of a 3-vector."""
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def axis_angle(axis, angle):
    """Rotation matrix (3, 3) of ``angle`` [rad] about the unit vector ``axis`` (Rodrigues)."""
    K = skew(np.asarray(axis, dtype=float))
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def quat_to_R(q):
    """Rotation matrix (..., 3, 3) of quaternion(s) q = (w, x, y, z) (..., 4), normalised first."""
    q = np.asarray(q, dtype=float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    R = np.stack([
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ], axis=-1)
    return R.reshape(q.shape[:-1] + (3, 3))


def quat_mul(p, q):
    """Hamilton product p * q of quaternions (w, x, y, z)."""
    pw, pv = p[0], p[1:]
    qw, qv = q[0], q[1:]
    return np.concatenate([[pw * qw - pv @ qv], pw * qv + qw * pv + np.cross(pv, qv)])


def _rigid_body_rhs(I_body, torque_body):
    """RHS of (q, omega_body): qdot = 1/2 q * (0, omega), I omegadot = tau - omega x I omega."""
    I_body = np.asarray(I_body, dtype=float)
    Iinv = np.linalg.inv(I_body)

    def rhs(t, s):
        q, w = s[:4], s[4:]
        qd = 0.5 * quat_mul(q, np.concatenate([[0.0], w]))
        tau = torque_body(q, w)
        wd = Iinv @ (tau - np.cross(w, I_body @ w))
        return np.concatenate([qd, wd])

    return rhs


def _solve(rhs, t_end, y0, t_eval, method="DOP853", rtol=RTOL, atol=ATOL, dense=False):
    if not np.isfinite(t_end) or t_end < 0:
        raise ValueError(f"bad final time {t_end}")
    sol = solve_ivp(rhs, (0.0, float(t_end)), np.asarray(y0, dtype=float), method=method,
                    t_eval=t_eval, rtol=rtol, atol=atol, dense_output=dense)
    if not sol.success:
        raise RuntimeError(sol.message)
    return sol


# ==========================================================================
# 1. Spatial slider-crank (IFToMM benchmark), free running
# ==========================================================================
SC_A = np.array([0.0, 0.1, 0.12])  # m, crank pivot; revolute about global x
SC_CRANK_L = 0.08  # m, A -> B
SC_CRANK_M = 0.12  # kg
SC_CRANK_CG = 0.04  # m from A along the crank
SC_CRANK_I = np.diag([1e-4, 1e-4, 1e-5])  # kg m^2 about CG; body z along the crank, x = global x
SC_ROD_L = 0.3  # m, B -> C
SC_ROD_M = 0.5  # kg, CG at the middle of BC
SC_ROD_I = np.diag([4e-4, 4e-3, 4e-3])  # kg m^2 about CG; body x along B->C, y = universal axis
SC_SLIDER_M = 2.0  # kg; moves along global x, does not rotate
SC_SLIDER_I = np.diag([1e-4, 1e-4, 1e-4])  # kg m^2 (irrelevant: the slider does not rotate)
SC_X0 = 0.2  # m, slider x at t = 0 (C = (x, 0, 0))
SC_PHI0 = 0.0  # rad, crank along +z at t = 0
SC_OMEGA0 = 6.0  # rad/s, crank rate about +x at t = 0
SC_U0 = np.array([0.0, -2.0, 1.0]) / np.sqrt(5.0)  # universal's rod-fixed axis at t = 0
SC_GRAVITY = np.array([0.0, 0.0, -G_EARTH])


def _sc_kin(phi):
    """Configuration of the spatial slider-crank and its derivatives w.r.t. phi.

    Analytic and complex-safe (so that ``phi`` may carry a complex step).
    Returns a dict of arrays for one scalar phi: B, dB (d/dphi), x, dx, e, de,
    u, du, n = e x u, G (rod CG), dG, cc (crank CG), dcc.
    """
    s, c = np.sin(phi), np.cos(phi)
    L1, L2 = SC_CRANK_L, SC_ROD_L
    B = np.array([SC_A[0] + 0.0 * s, SC_A[1] - L1 * s, SC_A[2] + L1 * c])
    dB = np.array([0.0 * s, -L1 * c, -L1 * s])
    # |C - B| = L2 with C = (x, 0, 0), Bx = 0:  x = sqrt(L2^2 - By^2 - Bz^2) > 0
    w = B[1] * B[1] + B[2] * B[2]
    dw = 2.0 * (B[1] * dB[1] + B[2] * dB[2])
    x = np.sqrt(L2 * L2 - w)
    dx = -dw / (2.0 * x)
    e = np.array([x - B[0], -B[1], -B[2]]) / L2  # unit vector B -> C
    de = np.array([dx - dB[0], -dB[1], -dB[2]]) / L2
    # universal: rod axis u perpendicular to e and to global x, u = e x x_hat / |e x x_hat|
    rho = np.sqrt(e[1] * e[1] + e[2] * e[2])
    drho = (e[1] * de[1] + e[2] * de[2]) / rho
    u = np.array([0.0 * rho, e[2], -e[1]]) / rho
    du = np.array([0.0 * rho, de[2], -de[1]]) / rho - u * (drho / rho)
    n = np.cross(e, u)
    G = 0.5 * (B + np.array([x, 0.0 * x, 0.0 * x]))
    dG = 0.5 * (dB + np.array([dx, 0.0 * x, 0.0 * x]))
    cc = SC_A + SC_CRANK_CG / L1 * (B - SC_A)
    dcc = SC_CRANK_CG / L1 * dB
    return dict(B=B, dB=dB, x=x, dx=dx, e=e, de=de, u=u, du=du, n=n, G=G, dG=dG, cc=cc, dcc=dcc)


def sc_rod_omega_per_rate(phi):
    """Rod angular velocity per unit crank rate, d(omega_rod)/d(phidot) (3,) in world axes.

    For the orthonormal rod frame (e, u, n): omega = (udot . n) e + (ndot . e) u + (edot . u) n;
    with ndot . e = -(edot . n) this is  omega = (udot . n) e + e x edot.
    """
    k = _sc_kin(phi)
    spin = k["du"] @ k["n"]
    return spin * k["e"] + np.cross(k["e"], k["de"])


def sc_mass(phi):
    """Generalised mass m(phi) [kg m^2] in T = 1/2 m(phi) phidot^2 (complex-safe).

    m = J_A + m_rod |dG/dphi|^2 + Ix_rod spin'^2 + Iperp_rod |de/dphi|^2 + m_slider (dx/dphi)^2
    with J_A = Ixx_crank + m_crank * 0.04^2 the crank's inertia about the pivot axis,
    spin' = (du/dphi) . n the rod's spin about its own axis (set by the universal) and
    Iperp = Iyy = Izz of the rod (so its rotational energy is 1/2 (Ix spin^2 + Iperp |edot|^2)).
    """
    k = _sc_kin(phi)
    JA = SC_CRANK_I[0, 0] + SC_CRANK_M * SC_CRANK_CG**2
    spin = k["du"] @ k["n"]
    return (JA + SC_ROD_M * (k["dG"] @ k["dG"]) + SC_ROD_I[0, 0] * spin * spin
            + SC_ROD_I[1, 1] * (k["de"] @ k["de"]) + SC_SLIDER_M * k["dx"] ** 2)


def sc_potential(phi):
    """V(phi) = g (m_crank z_crank_cg + m_rod z_rod_cg) [J] (slider at z = 0), and dV/dphi."""
    k = _sc_kin(phi)
    V = G_EARTH * (SC_CRANK_M * k["cc"][2] + SC_ROD_M * k["G"][2])
    dV = G_EARTH * (SC_CRANK_M * k["dcc"][2] + SC_ROD_M * k["dG"][2])
    return V, dV


def sc_dmass(phi):
    """dm/dphi by the complex step  Im m(phi + i h) / h  (h = 1e-30, exact to round-off)."""
    return float(np.imag(sc_mass(complex(phi, CSTEP))) / CSTEP)


def sc_rhs(t, y):
    """Lagrange's equation  m phidd + 1/2 m' phid^2 + V' = 0  for y = (phi, phid)."""
    phi, w = y
    V, dV = sc_potential(phi)
    return np.array([w, -(0.5 * sc_dmass(phi) * w * w + dV) / sc_mass(phi)])


def sc_energy(phi, phid):
    """Total energy T + V [J] from the minimal coordinates (arrays)."""
    phi = np.atleast_1d(phi)
    phid = np.atleast_1d(phid)
    return np.array([0.5 * sc_mass(p) * w * w + sc_potential(p)[0] for p, w in zip(phi, phid)])


def sc_pose(phi):
    """Body poses at crank angle(s) ``phi`` (n,): dict of B, C, rod_cg, crank_cg (n, 3),
    rod_R (n, 3, 3) (columns e = B->C, u = universal axis, e x u), slider_x (n,)."""
    phi = np.atleast_1d(np.asarray(phi, dtype=float))
    ks = [_sc_kin(p) for p in phi]
    x = np.array([k["x"] for k in ks])
    return dict(
        B=np.array([k["B"] for k in ks]),
        C=np.column_stack([x, np.zeros_like(x), np.zeros_like(x)]),
        rod_cg=np.array([k["G"] for k in ks]),
        crank_cg=np.array([k["cc"] for k in ks]),
        rod_R=np.array([np.column_stack([k["e"], k["u"], k["n"]]) for k in ks]),
        slider_x=x,
        dx=np.array([k["dx"] for k in ks]),
    )


def spatial_slider_crank(t_eval, rtol: float = RTOL, atol: float = ATOL, method: str = "DOP853"):
    """IFToMM spatial slider-crank, free (no drive), g along -z.

    Formulation: one DOF, the crank angle phi (rotation about +x from +z), with
    B = A + 0.08 (0, -sin phi, cos phi), C = (x, 0, 0), x = +sqrt(0.3^2 - By^2 - Bz^2)
    (the spherical joint at B and the prismatic at C fix C; the universal at C fixes
    the rod's spin: its rod axis u = e x x_hat / |e x x_hat| stays perpendicular to the
    rod direction e and to global x).  T = 1/2 m(phi) phidot^2 (:func:`sc_mass`),
    V(phi) (:func:`sc_potential`), Lagrange:  m phidd + 1/2 m'(phi) phid^2 + V'(phi) = 0
    with m' by complex step of the analytic m(phi); solve_ivp DOP853.

    Args:
        t_eval: (n,) increasing times [s], t_eval[0] >= 0.
    Returns:
        dict with ``t`` (n,), ``crank_angle`` (n,) [rad, unwrapped, 0 at t = 0],
        ``crank_rate`` (n,) [rad/s], ``slider_x`` (n,) [m], ``slider_v`` (n,) [m/s],
        ``B``, ``C``, ``rod_cg``, ``crank_cg`` (n, 3) [m], ``rod_R`` (n, 3, 3) (rod body ->
        world; columns x = B->C, y = universal's rod axis, z = x cross y),
        ``rod_omega`` (n, 3) [rad/s] rod angular velocity in world axes,
        ``energy`` (n,) [J] (T + V, datum z = 0), ``nfev``.
    """
    t_eval = np.atleast_1d(np.asarray(t_eval, dtype=float))
    sol = _solve(sc_rhs, t_eval[-1], (SC_PHI0, SC_OMEGA0), t_eval, method, rtol, atol)
    phi, w = sol.y
    out = sc_pose(phi)
    out["slider_v"] = out.pop("dx") * w
    out["rod_omega"] = np.array([sc_rod_omega_per_rate(p) for p in phi]) * w[:, None]
    out.update(t=sol.t, crank_angle=phi, crank_rate=w, energy=sc_energy(phi, w), nfev=sol.nfev)
    return out


# ==========================================================================
# 2. Bricard's overconstrained 6R linkage
# ==========================================================================
BR_P = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [1.0, -1.0, 0.0],
                 [1.0, -1.0, 1.0], [0.0, -1.0, 1.0], [0.0, 0.0, 1.0]])  # m, joint points P0..P5 at t = 0
BR_AXES = np.eye(3)[[1, 2, 0, 1, 2, 0]]  # joint axes y, z, x, y, z, x (at t = 0)
BR_BAR_M = 1.0  # kg, each of the five bars (bar k: P(k-1) -> P(k), k = 1..5)
BR_BAR_L = 1.0  # m
BR_BAR_I = np.diag([1e-4, 1.0 / 12.0, 1.0 / 12.0])  # kg m^2 about the CG, body x along the bar
BR_GRAVITY = np.array([0.0, -G_EARTH, 0.0])


def _ad(V, J):
    """Lie bracket [V, J] of spatial twists (omega, v_O) (6,): (wV x wJ, wV x vJ - wJ x vV)."""
    return np.concatenate([np.cross(V[:3], J[:3]), np.cross(V[:3], J[3:]) - np.cross(J[:3], V[3:])])


def bricard_chain(theta):
    """Forward kinematics of the open chain ground -(joint 0)- bar 1 - ... - bar 5 -(joint 5)- ground.

    ``theta`` (6,): relative joint angles [rad] about the joint axes (positive by the
    right-hand rule about the axis carried by the proximal body), zero at the t = 0 pose.
    Returns ``(Rs, ps, twists)``: Rs (7, 3, 3), ps (7, 3) the pose  x -> R x + p  of the
    body after joints 0..i-1 relative to its t = 0 pose (index 0: ground, 1..5: bars,
    6: the body after joint 5, which must be the ground again: the loop closure), and
    twists (6, 6) the current unit joint twists (axis a, P x a) in world axes.
    """
    R = np.eye(3)
    p = np.zeros(3)
    Rs, ps, tw = [R], [p], []
    for i in range(6):
        a = R @ BR_AXES[i]
        P = R @ BR_P[i] + p
        tw.append(np.concatenate([a, np.cross(P, a)]))
        Ri = axis_angle(BR_AXES[i], theta[i])
        p = R @ (BR_P[i] - Ri @ BR_P[i]) + p
        R = R @ Ri
        Rs.append(R)
        ps.append(p)
    return np.array(Rs), np.array(ps), np.array(tw)


def bricard_closure_residual(theta):
    """Loop-closure error of the 6R loop (6,): (vee(R - R^T)/2, p) of the body after joint 5."""
    Rs, ps, _ = bricard_chain(theta)
    R = Rs[-1]
    return np.concatenate([0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]),
                           ps[-1]])


def bricard_angles(q, coord: str = "odd"):
    """Joint angles on the mobility branch through the t = 0 pose, and their q-derivatives.

    The loop closes with threefold symmetry theta0 = theta2 = theta4 = a (joints about y, x, z
    at P0, P2, P4) and theta1 = theta3 = theta5 = b, where
        sin a + sin b + sin a sin b = 0,   i.e.   (1 + sin a)(1 + sin b) = 1
    (found numerically by continuation with the full 6 x 6 loop Jacobian, then verified:
    :func:`bricard_closure_residual` vanishes to round-off along the curve).
    ``coord = 'odd'``: q = b, a = arcsin(-sin b / (1 + sin b)); ``'even'``: q = a, b likewise.
    Valid while the dependent angle stays inside (-pi/2, pi/2).
    Returns theta (6,), dtheta/dq (6,), d2theta/dq2 (6,).
    """
    s, c = np.sin(q), np.cos(q)
    x = -s / (1.0 + s)
    dx = -c / (1.0 + s) ** 2
    ddx = s / (1.0 + s) ** 2 + 2.0 * c * c / (1.0 + s) ** 3
    d = np.arcsin(x)
    cd = np.cos(d)
    dd = dx / cd
    ddd = (ddx + np.sin(d) * dd * dd) / cd
    if coord == "odd":
        ev, od = (d, dd, ddd), (q, 1.0, 0.0)
    elif coord == "even":
        ev, od = (q, 1.0, 0.0), (d, dd, ddd)
    else:
        raise ValueError(coord)
    return tuple(np.array([ev[k], od[k], ev[k], od[k], ev[k], od[k]]) for k in range(3))


def _bricard_bodies(theta, thetad, thetadd=None):
    """Bar CGs, velocities, inertias and (optionally) accelerations from the joint motion.

    Spatial velocity of bar k (k = 1..5):  V_k = sum_{i<k} J_i thetad_i;  spatial acceleration
    A_k = sum_{i<k} (J_i thetadd_i + [V_i, J_i] thetad_i)  (d/dt of a body-carried twist is the
    bracket with that body's velocity).  CG velocity v_c = v_O + w x c, acceleration
    a_c = a_O + alpha x c + w x v_c.
    """
    Rs, ps, J = bricard_chain(theta)
    V = np.zeros(6)
    A = np.zeros(6)
    out = []
    for k in range(1, 6):
        i = k - 1
        if thetadd is not None:
            A = A + J[i] * thetadd[i] + _ad(V, J[i]) * thetad[i]
        V = V + J[i] * thetad[i]
        R, p = Rs[k], ps[k]
        e0 = BR_P[k] - BR_P[k - 1]
        c = R @ (0.5 * (BR_P[k] + BR_P[k - 1])) + p
        I0 = BR_BAR_I[1, 1] * np.eye(3) + (BR_BAR_I[0, 0] - BR_BAR_I[1, 1]) * np.outer(e0, e0)
        I = R @ I0 @ R.T
        w = V[:3]
        vc = V[3:] + np.cross(w, c)
        body = dict(R=R, c=c, I=I, w=w, vc=vc)
        if thetadd is not None:
            body["alpha"] = A[:3]
            body["ac"] = A[3:] + np.cross(A[:3], c) + np.cross(w, vc)
        out.append(body)
    return out


def _bricard_rhs(coord):
    def rhs(t, y):
        q, qd = y
        th, dth, ddth = bricard_angles(q, coord)
        # accelerations with qdd = 0 and the partial velocities (qd = 1)
        b0 = _bricard_bodies(th, dth * qd, ddth * qd * qd)
        b1 = _bricard_bodies(th, dth)
        mgen = 0.0
        f = 0.0
        for B0, B1 in zip(b0, b1):
            mgen += BR_BAR_M * (B1["vc"] @ B1["vc"]) + B1["w"] @ B0["I"] @ B1["w"]
            f -= BR_BAR_M * (B1["vc"] @ (B0["ac"] - BR_GRAVITY))
            f -= B1["w"] @ (B0["I"] @ B0["alpha"] + np.cross(B0["w"], B0["I"] @ B0["w"]))
        return np.array([qd, f / mgen])
    return rhs


def bricard_energy(theta, thetad):
    """Kinetic + potential energy [J] (datum y = 0, g along -y) of the five bars."""
    E = 0.0
    for b in _bricard_bodies(theta, thetad):
        E += 0.5 * BR_BAR_M * (b["vc"] @ b["vc"]) + 0.5 * b["w"] @ b["I"] @ b["w"] - BR_BAR_M * (BR_GRAVITY @ b["c"])
    return E


def bricard_generalised_force(q, coord):
    """Gravity's generalised force Q = -dV/dq = sum_k m g . dv_c/dqdot [N m] and V(q) [J] (datum y = 0)."""
    th, dth, _ = bricard_angles(q, coord)
    bs = _bricard_bodies(th, dth)
    Q = sum(BR_BAR_M * (BR_GRAVITY @ b["vc"]) for b in bs)
    V = -sum(BR_BAR_M * (BR_GRAVITY @ b["c"]) for b in _bricard_bodies(th, np.zeros(6)))
    return Q, V


def bricard_coordinate():
    """The independent angle q, chosen to grow in the first swing: 'odd' (q = b) if gravity
    drives b up from rest, else 'even' (q = a; a grows then since da/db = -1 at the start).
    For q in [0, pi] the dependent angle arcsin(-sin q / (1 + sin q)) lies in [-pi/6, 0]."""
    Q, _ = bricard_generalised_force(0.0, "odd")
    return "odd" if Q > 0 else "even"


def bricard_generalised_mass(q, coord):
    """m(q) = sum_k m |dv_c/dqdot|^2 + (dw/dqdot)^T I (dw/dqdot) [kg m^2] (T = 1/2 m(q) qdot^2)."""
    th, dth, _ = bricard_angles(q, coord)
    return sum(BR_BAR_M * (b["vc"] @ b["vc"]) + b["w"] @ b["I"] @ b["w"] for b in _bricard_bodies(th, dth))


def bricard_swing_time(delta: float = 1e-5):
    """Rest-to-rest time of the first swing by quadrature of the energy integral (no ODE).

    Released at rest at q = 0, the mechanism reaches rest again at q1 with V(q1) = V(0)
    (brentq; q1 = pi for this geometry) after
        t1 = int_0^q1 sqrt(m(q) / (2 (V(0) - V(q)))) dq
           = int_0^q1 sqrt(h(q)) / sqrt(q (q1 - q)) dq,   h = m q (q1 - q) / (2 (V0 - V)),
    evaluated by QUADPACK's QAWS (algebraic end-point weight).  h is smooth but 0/0 at the ends;
    within ``delta`` of an end it is extrapolated linearly from h(delta), h(2 delta) (error
    ~delta^2 in h over a range of weight ~sqrt(delta): < 1e-12 s).
    Returns (t1 [s], q1 [rad]).
    """
    coord = bricard_coordinate()  # q grows in the first swing
    V = lambda q: bricard_generalised_force(q, coord)[1]  # noqa: E731
    V0 = V(0.0)
    q1 = brentq(lambda q: V(q) - V0, 0.5 * np.pi, 1.1 * np.pi, xtol=1e-15, rtol=4 * np.finfo(float).eps)

    def h_raw(q):
        return bricard_generalised_mass(q, coord) * q * (q1 - q) / (2.0 * (V0 - V(q)))

    ha = (h_raw(delta), h_raw(2 * delta))
    hb = (h_raw(q1 - delta), h_raw(q1 - 2 * delta))

    def h(q):
        if q < delta:
            return ha[0] + (ha[0] - ha[1]) * (delta - q) / delta
        if q > q1 - delta:
            return hb[0] + (hb[0] - hb[1]) * (q - (q1 - delta)) / delta
        return h_raw(q)

    t1 = quad(lambda q: np.sqrt(h(q)), 0.0, q1, weight="alg", wvar=(-0.5, -0.5), epsabs=1e-13, epsrel=1e-13,
              limit=200)[0]
    return t1, q1


def bricard(t_eval, rtol: float = RTOL, atol: float = ATOL, method: str = "DOP853"):
    """Bricard's linkage released from rest at the t = 0 pose, g = 9.81 along -y.

    Formulation: relative joint angles theta (6,) of the 6R loop; on the mobility branch
    theta = (a, b, a, b, a, b) with (1 + sin a)(1 + sin b) = 1 (:func:`bricard_angles`), so
    one angle q (:func:`bricard_coordinate`) parametrises the motion with analytic
    dtheta/dq, d2theta/dq2.  Kane's equation in q (virtual power of the inertia forces
    m a_c, I alpha + w x I w and of gravity along the partial velocities), with body
    velocities / accelerations from the chain's spatial twists (:func:`_bricard_bodies`).
    No Lagrange multipliers and no redundant constraints; energy conservation is therefore
    a genuine check of the acceleration terms.

    Args:
        t_eval: (n,) increasing times [s] (up to 10 s and beyond).
    Returns:
        dict with ``t`` (n,), ``q``, ``qd`` (n,) [rad, rad/s] the independent angle,
        ``theta`` (n, 6) joint angles [rad], ``P`` (n, 6, 3) joint points P0..P5 [m],
        ``P3`` (n, 3), ``bar_cg`` (n, 5, 3) [m], ``bar_R`` (n, 5, 3, 3) rotation of each bar
        from its t = 0 orientation (body frames = world axes at t = 0), ``bar_axis``
        (n, 5, 3) unit vectors P(k-1) -> P(k), ``energy`` (n,) [J] (datum y = 0),
        ``closure`` (n,) max |loop-closure residual|, ``coord``, ``nfev``.
    """
    t_eval = np.atleast_1d(np.asarray(t_eval, dtype=float))
    coord = bricard_coordinate()
    sol = _solve(_bricard_rhs(coord), t_eval[-1], (0.0, 0.0), t_eval, method, rtol, atol)
    q, qd = sol.y
    if np.any(np.sin(q) <= -0.5):  # the dependent angle's arcsin branch ends at sin q = -1/2
        raise RuntimeError("Bricard: motion left the range of the closed-form branch")
    n = len(q)
    theta = np.empty((n, 6))
    P = np.empty((n, 6, 3))
    cg = np.empty((n, 5, 3))
    Rb = np.empty((n, 5, 3, 3))
    E = np.empty(n)
    clo = np.empty(n)
    for j in range(n):
        th, dth, _ = bricard_angles(q[j], coord)
        theta[j] = th
        Rs, ps, _ = bricard_chain(th)
        P[j] = [Rs[i] @ BR_P[i] + ps[i] for i in range(6)]
        bs = _bricard_bodies(th, dth * qd[j])
        cg[j] = [b["c"] for b in bs]
        Rb[j] = [b["R"] for b in bs]
        E[j] = bricard_energy(th, dth * qd[j])
        clo[j] = np.max(np.abs(bricard_closure_residual(th)))
    axis = P[:, 1:] - P[:, :-1]
    return dict(t=sol.t, q=q, qd=qd, theta=theta, P=P, P3=P[:, 3].copy(), bar_cg=cg, bar_R=Rb,
                bar_axis=axis / np.linalg.norm(axis, axis=-1, keepdims=True), energy=E,
                closure=clo, coord=coord, nfev=sol.nfev)


# ==========================================================================
# 3. Tennis racket (intermediate-axis flip): torque-free asymmetric body
# ==========================================================================
TR_I = np.array([1e-3, 2e-3, 3e-3])  # kg m^2, principal inertia about the CG (body axes)
TR_OMEGA0 = np.array([0.1, 10.0, 0.0])  # rad/s, body axes, R(0) = I


def tennis_racket_closed_form(t, I=TR_I, omega0=TR_OMEGA0):
    """Jacobi-elliptic solution of Euler's torque-free equations, omega_body(t) (n, 3) [rad/s].

    For I1 < I2 < I3 and D = |L|^2 / (2T) in (I1, I2) (rotation near the axis of least
    inertia, as here), with omega3(0) = 0 and omega1(0), omega2(0) > 0:
        omega1 = A1 dn(tau, m),  omega2 = A2 sn(tau, m),  omega3 = A3 cn(tau, m),
        tau = lam t + K(m),
        A1^2 = (2T I3 - L^2) / (I1 (I3 - I1)),   A2^2 = (L^2 - 2T I1) / (I2 (I2 - I1)),
        A3^2 = (L^2 - 2T I1) / (I3 (I3 - I1)),
        m = (L^2 - 2T I1)(I3 - I2) / ((2T I3 - L^2)(I2 - I1)),  lam = (I3 - I1) A1 A3 / (I2 A2).
    (Substituting into I2 omega2' = (I3 - I1) omega3 omega1 etc. and the two invariants gives
    these identities.)  omega2 changes sign at t_j = (2 j - 1) K / lam, j = 1, 2, ...; the
    period of omega is 4 K / lam.
    Returns (omega (n, 3), info dict with A1, A2, A3, m, K, lam, flip_times (4,)).
    """
    I1, I2, I3 = I
    w1, w2, w3 = omega0
    if not (I1 < I2 < I3 and w3 == 0.0 and w1 > 0 and w2 > 0):
        raise ValueError("closed form implemented for I1 < I2 < I3, omega3(0) = 0, omega1,2(0) > 0")
    T2 = I1 * w1 * w1 + I2 * w2 * w2  # 2 T
    L2 = I1 * I1 * w1 * w1 + I2 * I2 * w2 * w2  # |L|^2
    if not (I1 * T2 < L2 < I2 * T2):
        raise ValueError("needs I1 < D < I2")
    # cancellation-free forms of the expressions above (omega3(0) = 0):
    # L^2 - 2T I1 = I2 (I2 - I1) w2^2,  2T I3 - L^2 = I1 (I3 - I1) w1^2 + I2 (I3 - I2) w2^2
    p1 = I1 * (I3 - I1) * w1 * w1
    p2 = I2 * (I3 - I2) * w2 * w2
    A1 = np.sqrt((p1 + p2) / (I1 * (I3 - I1)))
    A2 = w2
    A3 = np.sqrt(I2 * (I2 - I1) / (I3 * (I3 - I1))) * w2
    m = p2 / (p1 + p2)
    K = float(ellipkm1(p1 / (p1 + p2)))
    lam = (I3 - I1) * A1 * A3 / (I2 * A2)
    t = np.atleast_1d(np.asarray(t, dtype=float))
    tau = np.mod(lam * t + K, 4.0 * K)
    sn, cn, dn, _ = ellipj(tau, m)
    omega = np.column_stack([A1 * dn, A2 * sn, A3 * cn])
    info = dict(A1=A1, A2=A2, A3=A3, m=m, K=K, lam=lam, period=4.0 * K / lam,
                flip_times=(2.0 * np.arange(1, 5) - 1.0) * K / lam)
    return omega, info


TR_RTOL = 3e-14  # the omega(t) phase error grows linearly; at 1e-12 it is ~7e-10 rad/s after 10 s
TR_ATOL = 1e-16


def tennis_racket(t_eval, rtol: float = TR_RTOL, atol: float = TR_ATOL, method: str = "DOP853"):
    """Free rigid body, no gravity, inertia diag(1, 2, 3)e-3 kg m^2, omega0 = (0.1, 10, 0) body.

    Formulation: Euler's equations I omega' = -omega x I omega in body axes and the
    quaternion q' = 1/2 q * (0, omega) (R(0) = I), DOP853 at rtol 3e-14 (omega within
    ~1e-10 rad/s of the elliptic closed form over 10 s).  The sign changes of omega_y are
    roots of the dense-output omega_y(t) (brentq, xtol 1e-13 s).

    Args:
        t_eval: (n,) increasing times [s].
    Returns:
        dict with ``t``, ``omega_body`` (n, 3) [rad/s], ``R`` (n, 3, 3) body -> world,
        ``quat`` (n, 4), ``quat_norm_error`` (n,) (|q| - 1 before normalisation),
        ``omega_y_sign_changes`` (4,) [s], ``energy`` (n,) [J] = 1/2 omega.I omega,
        ``angular_momentum_world`` (n, 3) [kg m^2/s] = R I omega, ``nfev``.
    """
    t_eval = np.atleast_1d(np.asarray(t_eval, dtype=float))
    _, info = tennis_racket_closed_form(0.0)
    t_end = max(float(t_eval[-1]), float(info["flip_times"][-1]) + 0.25 * info["period"])
    I = np.diag(TR_I)
    rhs = _rigid_body_rhs(I, lambda q, w: np.zeros(3))
    sol = _solve(rhs, t_end, np.concatenate([[1.0, 0.0, 0.0, 0.0], TR_OMEGA0]), None, method, rtol, atol,
                 dense=True)
    Y = sol.sol(t_eval)
    q, w = Y[:4].T, Y[4:].T
    R = quat_to_R(q)
    # sign changes of omega_y: bracket on a fine grid of the dense output, then brentq
    tg = np.linspace(0.0, t_end, int(200 * t_end / info["period"]) + 2)
    wy = sol.sol(tg)[5]
    idx = np.nonzero(np.sign(wy[1:]) * np.sign(wy[:-1]) < 0)[0][:4]
    flips = np.array([brentq(lambda s: sol.sol(s)[5], tg[i], tg[i + 1], xtol=1e-13, rtol=4 * np.finfo(float).eps)
                      for i in idx])
    return dict(t=t_eval, omega_body=w, R=R, quat=q, quat_norm_error=np.linalg.norm(q, axis=1) - 1.0,
                omega_y_sign_changes=flips, energy=0.5 * np.einsum("ni,i,ni->n", w, TR_I, w),
                angular_momentum_world=np.einsum("nij,nj->ni", R, w * TR_I), nfev=sol.nfev)


# ==========================================================================
# 4. Heavy symmetric (Lagrange) top on a spherical joint at its tip
# ==========================================================================
TOP_M = 1.0  # kg
TOP_L = 0.1  # m, tip -> CG along body z
TOP_I_CG = np.diag([2e-3, 2e-3, 4e-3])  # kg m^2 about the CG (body axes)
TOP_THETA0 = np.radians(30.0)  # rad, initial tilt about global +x
TOP_SPIN = 100.0  # rad/s about body z
TOP_T_END = 2.0  # s
TOP_GRAVITY = np.array([0.0, 0.0, -G_EARTH])


def top_closed_form(m=TOP_M, l=TOP_L, I_cg=TOP_I_CG, theta0=TOP_THETA0, spin=TOP_SPIN, g=G_EARTH):
    """Closed-form quantities of the Lagrange top released with thetadot = phidot = 0.

    I1 = I_cg,xx + m l^2 (about the tip, transverse), I3 = I_cg,zz.  Conserved: p_psi = I3 w3,
    p_phi = I1 sin^2(theta) phidot + p_psi cos(theta) = p_psi u0, and the energy, so with
    u = cos(theta), a = p_psi / I1, alpha = 2 m g l / I1:
        udot^2 = f(u) = (u0 - u) [alpha (1 - u^2) - a^2 (u0 - u)] = alpha (u0 - u)(u - u1)(u2 - u)
    with u1 < u0 < 1 < u2 the roots of the quadratic factor  alpha u^2 - a^2 u + a^2 u0 - alpha.
    theta_min = theta0, theta_max = arccos(u1).  From t = 0 at u = u0:
        u(t) = u1 + (u0 - u1) sn^2(s t + K, k^2),  s = sqrt(alpha (u2 - u1)) / 2,  k^2 = (u0 - u1)/(u2 - u1)
    (then u - u1 ~ sn^2, u0 - u ~ cn^2, u2 - u = (u2 - u1) dn^2, and udot^2 = f(u) term by term),
    nutation period  T = 2 int_{u1}^{u0} du / sqrt(f) = 4 K(k^2) / sqrt(alpha (u2 - u1)),
        phidot = a (u0 - u) / (1 - u^2)  (integrated by quadrature for the precession).
    """
    I1 = I_cg[0, 0] + m * l * l
    I3 = I_cg[2, 2]
    a = I3 * spin / I1
    alpha = 2.0 * m * g * l / I1
    u0 = np.cos(theta0)
    disc = np.sqrt(a**4 - 4.0 * alpha * (a * a * u0 - alpha))
    u1 = (a * a - disc) / (2.0 * alpha)
    u2 = (a * a + disc) / (2.0 * alpha)
    k2 = (u0 - u1) / (u2 - u1)
    s = 0.5 * np.sqrt(alpha * (u2 - u1))
    K = float(ellipk(k2))
    return dict(I1=I1, I3=I3, a=a, alpha=alpha, u0=u0, u1=u1, u2=u2, k2=k2, s=s, K=K,
                theta_min=float(theta0), theta_max=float(np.arccos(u1)), nutation_period=2.0 * K / s)


def top_u_exact(t, cf=None):
    """u(t) = cos(theta(t)) = u1 + (u0 - u1) sn^2(s t + K | k^2) (closed form)."""
    cf = top_closed_form() if cf is None else cf
    t = np.asarray(t, dtype=float)
    sn = ellipj(np.mod(cf["s"] * t + cf["K"], 4.0 * cf["K"]), cf["k2"])[0]
    return cf["u1"] + (cf["u0"] - cf["u1"]) * sn * sn


def top_precession_angle(t, cf=None):
    """phi(t) - phi(0) = int_0^t a (u0 - u) / (1 - u^2) dt' with the closed-form u(t) [rad]
    (adaptive Gauss-Kronrod, split at the half nutation periods where phidot = 0 is extremal)."""
    cf = top_closed_form() if cf is None else cf
    T = cf["nutation_period"]

    def f(x):
        u = top_u_exact(x, cf)
        return cf["a"] * (cf["u0"] - u) / (1.0 - u * u)

    edges = np.unique(np.concatenate([np.arange(0.0, t, 0.5 * T), [t]]))
    return float(sum(quad(f, lo, hi, epsabs=1e-14, epsrel=1e-13, limit=200)[0]
                     for lo, hi in zip(edges[:-1], edges[1:])))


def heavy_top(t_eval=None, rtol: float = RTOL, atol: float = ATOL, method: str = "DOP853"):
    """Heavy symmetric top, spherical joint at the tip (origin), g along -z, released with the
    axis tilted 30 deg about +x (axis = (0, -sin 30, cos 30)) spinning at 100 rad/s.

    Closed forms from :func:`top_closed_form` (theta bounds, nutation period, theta(t)) and
    :func:`top_precession_angle`.  With ``t_eval`` a full 3-D integration is added: Euler's
    equations about the tip (I_tip = I_cg + m l^2 diag(1, 1, 0)) with the gravity torque
    l e3 x R^T m g in body axes, quaternion kinematics, DOP853.

    Returns dict: ``theta_min``, ``theta_max`` [rad], ``nutation_period`` [s],
    ``precession_angle_t2`` [rad] (azimuth of the axis about +z at t = 2 s minus at t = 0),
    ``theta_t`` dict {0.5, 1.0, 2.0: theta [rad]} (closed form), ``closed_form`` (dict);
    with ``t_eval`` (n,) also ``t``, ``theta`` (n,), ``phi`` (n,) (unwrapped azimuth minus its
    start), ``axis`` (n, 3), ``R`` (n, 3, 3), ``omega_body`` (n, 3), ``energy`` (n,) [J],
    ``theta_exact`` (n,), ``phi_exact`` (n,), ``sol`` (the solve_ivp result, dense).
    """
    cf = top_closed_form()
    out = dict(theta_min=cf["theta_min"], theta_max=cf["theta_max"],
               nutation_period=cf["nutation_period"], precession_angle_t2=top_precession_angle(TOP_T_END, cf),
               theta_t={t: float(np.arccos(top_u_exact(t, cf))) for t in (0.5, 1.0, 2.0)}, closed_form=cf)
    if t_eval is None:
        return out
    t_eval = np.atleast_1d(np.asarray(t_eval, dtype=float))
    I_tip = TOP_I_CG + TOP_M * TOP_L**2 * np.diag([1.0, 1.0, 0.0])
    r_cg = np.array([0.0, 0.0, TOP_L])

    def torque(q, w):
        return np.cross(r_cg, quat_to_R(q).T @ (TOP_M * TOP_GRAVITY))

    h = 0.5 * TOP_THETA0
    q0 = np.array([np.cos(h), np.sin(h), 0.0, 0.0])
    sol = _solve(_rigid_body_rhs(I_tip, torque), t_eval[-1], np.concatenate([q0, [0.0, 0.0, TOP_SPIN]]),
                 None, method, rtol, atol, dense=True)
    Y = sol.sol(t_eval)
    q, w = Y[:4].T, Y[4:].T
    R = quat_to_R(q)
    axis = R[:, :, 2]
    theta = np.arccos(np.clip(axis[:, 2], -1.0, 1.0))
    az = np.unwrap(np.arctan2(axis[:, 1], axis[:, 0]))
    energy = 0.5 * np.einsum("ni,ij,nj->n", w, I_tip, w) + TOP_M * G_EARTH * TOP_L * axis[:, 2]
    out.update(t=t_eval, theta=theta, phi=az - az[0], axis=axis, R=R, omega_body=w, energy=energy,
               theta_exact=np.arccos(top_u_exact(t_eval, cf)), sol=sol, nfev=sol.nfev)
    return out


# ==========================================================================
# 5. Double-wishbone front suspension kinematics (front left corner)
# ==========================================================================
DW_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                       "examples", "models", "double_wishbone.json")
DW_POINTS = ("lower_arm_front", "lower_arm_rear", "lower_ball_joint", "upper_arm_front", "upper_arm_rear",
             "upper_ball_joint", "tie_rod_inner", "tie_rod_outer", "wheel_centre", "spring_lower",
             "spring_upper")


def load_double_wishbone(path: str | None = None) -> dict:
    """The suspension model dict of ``examples/models/double_wishbone.json``."""
    with open(DW_PATH if path is None else path) as f:
        return json.load(f)


def _circle(p0, a, b):
    """Centre c, radius r and in-plane unit vectors (e1, e2) of the circle swept by point
    ``p0`` rotating about the line through ``a`` and ``b``; returns (c, r, e1, e2, axis)."""
    k = (b - a) / np.linalg.norm(b - a)
    c = a + ((p0 - a) @ k) * k
    d = p0 - c
    r = np.linalg.norm(d)
    e1 = d / r
    return c, r, e1, np.cross(k, e1), k


def _solve_cos_sin(a, b, c, sign):
    """Root x of a cos x + b sin x = c on the branch ``sign`` (x = atan2(b, a) + sign arccos)."""
    rho2 = a * a + b * b
    if c * c > rho2:
        raise ValueError("closure impossible (link lengths cannot be met)")
    x = np.arctan2(b, a) + sign * np.arctan2(np.sqrt(rho2 - c * c), c)
    return float(np.remainder(x + np.pi, 2.0 * np.pi) - np.pi)


def _rotation_between(u, v):
    """Smallest rotation (3, 3) taking unit vector u to unit vector v."""
    w = np.cross(u, v)
    s = np.linalg.norm(w)
    c = u @ v
    if s < 1e-300:
        return np.eye(3)
    return axis_angle(w / s, np.arctan2(s, c))


class _Wishbone:
    """Precomputed geometry of one hardpoint set (design = the given points)."""

    def __init__(self, points, spindle_axis):
        P = {k: np.asarray(points[k], dtype=float) for k in DW_POINTS}
        self.P = P
        self.lo = _circle(P["lower_ball_joint"], P["lower_arm_front"], P["lower_arm_rear"])
        self.up = _circle(P["upper_ball_joint"], P["upper_arm_front"], P["upper_arm_rear"])
        self.kp = P["upper_ball_joint"] - P["lower_ball_joint"]
        self.d_bj = np.linalg.norm(self.kp)
        self.k0 = self.kp / self.d_bj
        self.L_tr = np.linalg.norm(P["tie_rod_outer"] - P["tie_rod_inner"])
        s = np.asarray(spindle_axis, dtype=float)
        self.s0 = s / np.linalg.norm(s)
        self.z0 = P["wheel_centre"][2]
        # branches of the two closed-form circle intersections that pass through the design
        self.sign_up = 1.0 if abs(self._upper(P["lower_ball_joint"], 1.0)) < abs(self._upper(P["lower_ball_joint"], -1.0)) else -1.0
        kn = self._knuckle_terms(P["lower_ball_joint"], P["upper_ball_joint"])
        self.sign_st = 1.0 if abs(_solve_cos_sin(*kn[:3], 1.0)) < abs(_solve_cos_sin(*kn[:3], -1.0)) else -1.0

    def _upper(self, lbj, sign):
        """Upper-arm angle putting the upper ball joint at |UBJ - LBJ| = d_bj."""
        c, r, e1, e2, _ = self.up
        dc = c - lbj
        return _solve_cos_sin(2 * r * (e1 @ dc), 2 * r * (e2 @ dc), self.d_bj**2 - dc @ dc - r * r, sign)

    def _knuckle_terms(self, lbj, ubj):
        """Coefficients (a, b, c) of the tie-rod closure in the steer angle beta about the
        kingpin, the kingpin unit vector k and the aligning rotation R_align."""
        P = self.P
        k = (ubj - lbj) / np.linalg.norm(ubj - lbj)
        Ra = _rotation_between(self.k0, k)
        w = Ra @ (P["tie_rod_outer"] - P["lower_ball_joint"])
        wpar = (w @ k) * k
        e1 = w - wpar
        e2 = np.cross(k, e1)
        # TRO(beta) = lbj + wpar + cos(beta) e1 + sin(beta) e2
        d = lbj + wpar - P["tie_rod_inner"]
        return 2 * (e1 @ d), 2 * (e2 @ d), self.L_tr**2 - d @ d - e1 @ e1, k, Ra

    def pose(self, alpha):
        """Suspension state at lower-arm angle ``alpha`` [rad] (0 at design)."""
        P = self.P
        c, r, e1, e2, _ = self.lo
        lbj = c + r * (np.cos(alpha) * e1 + np.sin(alpha) * e2)
        au = self._upper(lbj, self.sign_up)
        cu, ru, f1, f2, _ = self.up
        ubj = cu + ru * (np.cos(au) * f1 + np.sin(au) * f2)
        a, b, cc, k, Ra = self._knuckle_terms(lbj, ubj)
        beta = _solve_cos_sin(a, b, cc, self.sign_st)
        R = axis_angle(k, beta) @ Ra  # knuckle rotation from its design orientation

        def kn(p):
            return lbj + R @ (p - P["lower_ball_joint"])

        lo_axis = self.lo[4]
        Rl = axis_angle(lo_axis, alpha)
        spl = P["lower_arm_front"] + Rl @ (P["spring_lower"] - P["lower_arm_front"])
        return dict(alpha=alpha, alpha_upper=au, beta=beta, R=R, lbj=lbj, ubj=ubj, tro=kn(P["tie_rod_outer"]),
                    wc=kn(P["wheel_centre"]), spindle=R @ self.s0, spring_lower=spl,
                    spring_length=np.linalg.norm(P["spring_upper"] - spl))

    def alpha_for_travel(self, travel):
        """Lower-arm angle giving wheel-centre z = design z + travel (brentq, xtol 1e-15; the
        bracket grows symmetrically about alpha = 0 in steps of 0.05 rad until it holds a root)."""
        f = lambda al: self.pose(al)["wc"][2] - self.z0 - travel  # noqa: E731
        h = 0.05
        lo, hi = -h, h
        while f(lo) * f(hi) > 0:
            lo, hi = lo - h, hi + h
            if hi - lo > 2.0:
                raise ValueError(f"travel {travel} m out of reach")
        return brentq(f, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=200)


def camber_toe(spindle):
    """Camber and toe [rad] of a front-LEFT wheel from its unit spin axis (pointing outboard, +y).

    camber = -arcsin(s_z): the angle between the wheel plane and the vertical, negative when
    the top of the wheel leans toward the vehicle centre (spin axis tilted up outboard);
    toe = atan2(s_x, s_y): positive (toe-in) when the front of the wheel points toward the
    vehicle centre (-y), i.e. the heading s x z_hat = (s_y, -s_x, 0) has a negative y.
    """
    s = np.asarray(spindle, dtype=float)
    s = s / np.linalg.norm(s, axis=-1, keepdims=True)
    return -np.arcsin(s[..., 2]), np.arctan2(s[..., 0], s[..., 1])


def double_wishbone(points=None, travel=0.0, spindle_axis=None) -> dict:
    """Kinematics of the front-left double-wishbone corner versus wheel travel.

    Minimal coordinates: the lower-arm angle alpha about its chassis axis (front -> rear
    pivots) is found by brentq so that the wheel centre is ``travel`` above its design
    height; the upper-arm angle follows in closed form from |UBJ - LBJ| = const (a circle /
    sphere intersection, a cos x + b sin x = c); the knuckle is rotated by the smallest
    rotation taking the design kingpin (LBJ -> UBJ) to the current one, then by the steer
    angle beta about the kingpin, again in closed form from the tie-rod length
    |TRO - TRI| = const (rack fixed).  Branches: those through the design pose.

    Args:
        points: mapping hardpoint name -> (3,) [m] (keys :data:`DW_POINTS`, vehicle axes
            ISO 8855: x forward, y left, z up), or the whole model dict of the JSON file, or
            None for the nominal file.  The given points ARE the design pose (travel 0):
            link lengths are taken from them, so a perturbed set is a different mechanism.
        travel: scalar or (n,) vertical wheel-centre displacements from design [m] (+ = bump).
        spindle_axis: (3,) wheel spin axis at design (outboard); default: ``points
            ['spindle_axis']`` if present, else the nominal file's.
    Returns:
        dict with (n,) arrays ``travel``, ``camber`` [rad] (negative = top of the wheel toward
        the vehicle centre), ``toe`` [rad] (positive = toe-in), ``spring_length`` [m] (spring
        upper mount to lower mount), ``lower_arm_angle``, ``upper_arm_angle``, ``steer_angle``
        [rad] (knuckle about the kingpin, relative to design), and (n, 3) ``wheel_centre``,
        ``lower_ball_joint``, ``upper_ball_joint``, ``tie_rod_outer``, ``spring_lower``,
        ``spindle_axis``; ``knuckle_R`` (n, 3, 3) knuckle rotation from its design orientation.
    """
    if points is None:
        points = load_double_wishbone()
    if "hardpoints" in points:  # the whole model dict
        model = points
        points = model["hardpoints"]
        if spindle_axis is None:
            spindle_axis = model["spindle_axis"]
    if spindle_axis is None:
        spindle_axis = points.get("spindle_axis", None)
    if spindle_axis is None:
        spindle_axis = load_double_wishbone()["spindle_axis"]
    wb = _Wishbone(points, spindle_axis)
    travel = np.atleast_1d(np.asarray(travel, dtype=float))
    states = [wb.pose(wb.alpha_for_travel(tr)) for tr in travel]
    spin = np.array([s["spindle"] for s in states])
    camber, toe = camber_toe(spin)
    return dict(travel=travel, camber=camber, toe=toe, spring_length=np.array([s["spring_length"] for s in states]),
                lower_arm_angle=np.array([s["alpha"] for s in states]),
                upper_arm_angle=np.array([s["alpha_upper"] for s in states]),
                steer_angle=np.array([s["beta"] for s in states]),
                wheel_centre=np.array([s["wc"] for s in states]),
                lower_ball_joint=np.array([s["lbj"] for s in states]),
                upper_ball_joint=np.array([s["ubj"] for s in states]),
                tie_rod_outer=np.array([s["tro"] for s in states]),
                spring_lower=np.array([s["spring_lower"] for s in states]),
                spindle_axis=spin, knuckle_R=np.array([s["R"] for s in states]))


# ==========================================================================
def main() -> None:
    np.set_printoptions(precision=15, linewidth=140)
    print("1. Spatial slider-crank (free, g along -z)")
    t = np.array([0.0, 0.4, 1.0, 2.0])
    r = spatial_slider_crank(t)
    for i, ti in enumerate(t):
        print(f"  t = {ti:4.1f} s: crank angle = {r['crank_angle'][i]:.12f} rad, rate = {r['crank_rate'][i]:.10f} rad/s, "
              f"slider x = {r['slider_x'][i]:.12f} m, v = {r['slider_v'][i]:.10f} m/s, E = {r['energy'][i]:.14f} J")
    print("\n2. Bricard linkage (g along -y, from rest)")
    t1, q1 = bricard_swing_time()
    print(f"  coordinate: {bricard_coordinate()} joints; first swing 0 -> {q1:.15f} rad in {t1:.12f} s (quadrature)")
    t = np.array([0.0, 1.0, 2.0, 5.0, 10.0])
    r = bricard(t)
    for i, ti in enumerate(t):
        print(f"  t = {ti:4.1f} s: P3 = {r['P3'][i]}, E = {r['energy'][i]:.12f} J, closure = {r['closure'][i]:.1e}")
    print("\n3. Tennis racket")
    r = tennis_racket(np.array([0.0, 5.0, 10.0]))
    w, info = tennis_racket_closed_form(r["t"])
    print(f"  omega_y sign changes (ODE): {r['omega_y_sign_changes']}")
    print(f"  closed form (2j-1) K/lam  : {info['flip_times']}  (m = {info['m']!r}, period {info['period']:.12f} s)")
    print(f"  omega(10 s) ODE {r['omega_body'][-1]}, closed form {w[-1]}")
    print("\n4. Heavy top")
    r = heavy_top()
    print(f"  theta_min = {r['theta_min']:.15f}, theta_max = {r['theta_max']:.15f} rad, "
          f"nutation period = {r['nutation_period']:.15f} s, precession(2 s) = {r['precession_angle_t2']:.12f} rad")
    print(f"  theta(0.5, 1, 2 s) = {[round(v, 15) for v in r['theta_t'].values()]}")
    print("\n5. Double wishbone (nominal)")
    tr = np.linspace(-0.08, 0.08, 9)
    r = double_wishbone(None, tr)
    for i in range(len(tr)):
        print(f"  travel {tr[i]:+.3f} m: camber {np.degrees(r['camber'][i]):+.6f} deg, toe {np.degrees(r['toe'][i]):+.6f} deg, "
              f"spring {r['spring_length'][i]:.9f} m, wheel centre {r['wheel_centre'][i]}")


if __name__ == "__main__":
    main()
