"""Independent NumPy/SciPy reference for Andrews' squeezing mechanism.

Problem: Hairer & Wanner, *Solving ODEs II*, Sec. VII.7; Schiehlen (1990);
Test Set for IVP Solvers (Mazzia, Magherini, Iavernaro, Univ. Bari), problem
"andrews"; IFToMM benchmark A03.  Model data: docs/reference_problems.md §1.

Units: SI (m, kg, kg m^2, s, N, N m, rad).

Coordinates (Test Set output convention), all angles in rad:

    q = (beta, Theta, gamma, Phi, delta, Omega, epsilon)

Independence of this reference
------------------------------
The mass matrix ``M(q)`` and the velocity-dependent force vector ``f(q, qd)``
are *not* typed in from the Test Set formulas.  They are derived here from the
geometry alone (positions of the seven centres of gravity, the body rotation
angles, the spring attachment point and the three loop-closure paths to the
common point P), by the generic formulas

    M      = sum_b  m_b J_b^T J_b + I_b c_b c_b^T
    f      = Q_ext - sum_b m_b J_b^T (dJ_b/dt qd)

where ``J_b = d r_b / dq`` is the CG Jacobian and ``c_b = d theta_b / dq`` the
(constant) rotation-angle gradient of body b.  Every point of the mechanism is
a sum of rotating vectors ``r * e(c.q + alpha)`` (``e(a) = (cos a, sin a)``),
which gives J and dJ/dt qd in closed form (no numerical differentiation).

For cross-checking, :func:`mass_matrix_closed_form` and
:func:`force_closed_form` give the entries in the closed form printed in
Hairer & Wanner VII.7 / the Test Set; ``test_references.py`` checks that the
two agree.

The index-3 DAE  M qdd = f - G^T lam,  g(q) = 0  is solved as an index-1 ODE:
at every right-hand-side evaluation the KKT system

    [ M  G^T ] [ qdd ]   [ f                ]
    [ G  0   ] [ lam ] = [ -g_qq(qd, qd)    ]

is solved (G = dg/dq), and (q, qd) is integrated with
``scipy.integrate.solve_ivp``.  The multiplier sign convention is the Test
Set's (residual ``M w - f + G^T lam``), so ``lam`` at t = 0 should equal the
published (98.5668703962410896..., -6.12268834425566265..., 0, 0, 0, 0).
No constraint stabilisation is used; the drift of g(q) is reported.

Published reference solution
----------------------------
``TESTSET_Q_T003`` is the Test Set's reference solution at t = 0.03 (positions
y(1..7)), ``TESTSET_QD_T003`` the velocities y(8..14).  Source: Test Set for
IVP Solvers, problems/andrews.F revision "andrews.F,v 1.2 2006/10/02", routine
SOLN ("computed at Cray C90, using Cray double precision ... PSIDE,
rtol = atol = 1d-14"), as redistributed in the R package deTestSet
(repository rforge/bvpsolve, file pkg/deTestSet/src/Ex_andrews.f, routine
``andsoln``).  The same 16-digit values also appear in an MEBDFI driver for
this problem and in pySDC's AndrewsSqueezingMechanismDAE.u_exact.

Findings (x86-64, scipy 1.17):

* Initial accelerations and multipliers match the published 30-digit values
  to < 1e-14 relative.
* DOP853 (rtol = atol = 1e-13, 3986 f-evals, ~1.5 s), Radau (1e-12) and a
  fixed-step 8th-order run in 80-bit longdouble
  (:func:`solve_fixed_step_longdouble`, 2000 and 4000 steps, agreeing to
  4e-17) all agree on q(0.03) to < 5e-13 relative (scd >= 12.3; the
  largest relative error is in the small gamma = 0.041), on qd(0.03) to
  scd >= 10.5; the longdouble result is stored as ``LONGDOUBLE_Q_T003`` /
  ``LONGDOUBLE_QD_T003``.  Constraint drift of the index-1 runs at t = 0.03
  is ~1e-15 m.
* Against the published positions the agreement is only scd = 9.57 (max.
  relative deviation 2.7e-10, in gamma).  The deviation vector is, component
  by component, qd(0.03) * dt with dt = 1.004e-12 s (each of the 7
  components alone gives dt in [1.002, 1.020] e-12 s): the published
  positions are this solution at t = 0.03 + 1.0e-12 s, i.e. a pure phase /
  end-time offset.  Integrating to 0.03 + 1.004e-12 gives scd = 12.1.
  Published velocities agree only to ~1e-8 relative (scd 7.3), which is
  the expected accuracy of index-2 variables from an index-3 DAE solver.
  We therefore regard ``LONGDOUBLE_Q_T003`` as the more accurate value and
  the published one as accurate to about 10 digits.  This explanation is our
  inference; we found no statement of it in the Test Set material.

Run ``python -m tests.reference.andrews`` to print the results.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp

# --------------------------------------------------------------------------
# Model data (docs/reference_problems.md §1), SI units
# --------------------------------------------------------------------------
M1, M2, M3, M4, M5, M6, M7 = 0.04325, 0.00365, 0.02373, 0.00706, 0.07050, 0.00706, 0.05498  # kg
I1, I2, I3, I4, I5, I6, I7 = 2.194e-6, 4.410e-7, 5.255e-6, 5.667e-7, 1.169e-5, 5.667e-7, 1.912e-5  # kg m^2 (about CG)
XA, YA = -0.06934, -0.00227  # m, fixed point A
XB, YB = -0.03635, 0.03273  # m, fixed point B
XC, YC = 0.014, 0.072  # m, fixed spring anchor C
D, DA = 0.028, 0.0115
E, EA = 0.02, 0.01421
RR, RA = 0.007, 0.00092
SS, SA, SB, SC, SD = 0.035, 0.01874, 0.01043, 0.018, 0.02
TA, TB = 0.02308, 0.00916
U, UA, UB = 0.04, 0.01228, 0.00449
ZF, ZT, FA = 0.02, 0.04, 0.01421
MOM = 0.033  # N m, driving torque on body 1
C0 = 4530.0  # N/m, spring stiffness
L0 = 0.07785  # m, spring free length

NQ = 7  # number of coordinates
NC = 6  # number of constraints

# Consistent initial values at t = 0 (docs/reference_problems.md §1 / Test Set), rad; at rest.
_Q0_STR = (
    "-0.0617138900142764496358948458001",
    "0",
    "0.455279819163070380255912382449",
    "0.222668390165885884674473185609",
    "0.487364979543842550225598953530",
    "-0.222668390165885884674473185609",
    "1.23054744454982119249735015568",
)
Q0 = np.array([float(v) for v in _Q0_STR])

# Published initial accelerations (rad/s^2) and multipliers (Test Set sign).
PUBLISHED_QDD0 = np.array(
    [14222.4439199541138705911625887, -10666.8329399655854029433719415, 0.0, 0.0, 0.0, 0.0, 0.0]
)
PUBLISHED_LAM0 = np.array(
    [98.5668703962410896057654982170, -6.12268834425566265503114393122, 0.0, 0.0, 0.0, 0.0]
)

# Test Set reference solution at t = 0.03 (see module docstring for source).
# Positions y(1..7) in rad:
TESTSET_Q_T003 = np.array(
    [
        0.1581077119629904e2,
        -0.1575637105984298e2,
        0.4082224013073101e-1,
        -0.5347301163226948e0,
        0.5244099658805304e0,
        0.5347301163226948e0,
        0.1048080741042263e1,
    ]
)
# Velocities y(8..14) in rad/s:
TESTSET_QD_T003 = np.array(
    [
        0.1139920302151208e4,
        -0.1424379294994111e4,
        0.1103291221937134e2,
        0.1929337464421385e2,
        0.5735699284790808e0,
        -0.1929337464421385e2,
        0.3231791658026955e0,
    ]
)

T_END = 0.03  # s

# This module's own high-precision solution at t = 0.03, from
# solve_fixed_step_longdouble(n_steps=4000) on x86-64 (80-bit longdouble);
# the 2000-step run agrees with it to < 4e-17 relative in every component.
# Positions [rad]:
LONGDOUBLE_Q_T003 = np.array(
    [
        15.810771195153719273,
        -15.756371058411854645,
        0.0408222401196459394,
        -0.5347301163420794215,
        0.5244099658799540638,
        0.5347301163420794306,
        1.0480807410419378545,
    ]
)
# Velocities [rad/s]:
LONGDOUBLE_QD_T003 = np.array(
    [
        1139.9203022591059807,
        -1424.3792951775397452,
        11.032911910622076497,
        19.293374105038131645,
        0.5735699148296830137,
        -19.29337410503813163,
        0.3231791492492371853,
    ]
)

# --------------------------------------------------------------------------
# Rotating-vector ("phasor") kinematics
# --------------------------------------------------------------------------
# A point is  p(q) = p0 + sum_k r_k * e(c_k . q + alpha_k).
# With a_k = c_k . q and w_k = c_k . qd:
#   dp/dq     = sum_k r_k * e_perp(a_k) c_k^T,   e_perp(a) = (-sin a, cos a)
#   dJ/dt qd  = -sum_k r_k * w_k^2 * e(a_k)


def _as_real(x) -> np.ndarray:
    """Array in float64, or in the caller's wider float type (e.g. longdouble)."""
    x = np.asarray(x)
    return x if np.issubdtype(x.dtype, np.floating) else x.astype(float)


def _unit(i: int) -> np.ndarray:
    c = np.zeros(NQ)
    c[i] = 1.0
    return c


_BETA, _THETA, _GAMMA, _PHI, _DELTA, _OMEGA, _EPS = (_unit(i) for i in range(NQ))
_HALF_PI = 0.5 * np.pi


class _Point:
    """p(q) = p0 + sum_k r_k e(c_k . q + alpha_k); lengths in m."""

    def __init__(self, p0, terms):
        self.p0 = np.asarray(p0, dtype=float)
        self.r = np.array([t[0] for t in terms], dtype=float)
        self.C = np.array([t[1] for t in terms], dtype=float)  # (K, 7)
        self.alpha = np.array([t[2] for t in terms], dtype=float)

    def eval(self, q, qd):
        """Return position (2,), Jacobian (2, 7) and dJ/dt qd (2,)."""
        a = self.C @ q + self.alpha
        w = self.C @ qd
        ca, sa = np.cos(a), np.sin(a)
        pos = self.p0 + np.array([self.r @ ca, self.r @ sa])
        J = np.vstack([(-self.r * sa) @ self.C, (self.r * ca) @ self.C])
        rw2 = self.r * w * w
        jdqd = -np.array([rw2 @ ca, rw2 @ sa])
        return pos, J, jdqd


_ORIGIN = (0.0, 0.0)
_A = (XA, YA)
_B = (XB, YB)

# Centres of gravity (the direction of the CG of bodies 1, 3, 5, 7, which turn
# about fixed points, is irrelevant: only its distance enters).
_CG = [
    _Point(_ORIGIN, [(RA, _BETA, 0.0)]),  # body 1 about O
    _Point(_ORIGIN, [(RR, _BETA, 0.0), (DA, _BETA + _THETA, np.pi)]),  # body 2: R - da e(b+T)
    _Point(_B, [(np.hypot(SA, SB), _GAMMA, 0.0)]),  # body 3 about B
    _Point(_A, [(ZT, _DELTA, 0.0), (E - EA, _PHI + _DELTA, -_HALF_PI)]),  # body 4
    _Point(_A, [(np.hypot(TA, TB), _DELTA, 0.0)]),  # body 5 about A
    _Point(_A, [(U, _EPS, -_HALF_PI), (ZF - FA, _OMEGA + _EPS, 0.0)]),  # body 6
    _Point(_A, [(np.hypot(UA, UB), _EPS, 0.0)]),  # body 7 about A
]
_MASS = np.array([M1, M2, M3, M4, M5, M6, M7])
_INERTIA = np.array([I1, I2, I3, I4, I5, I6, I7])
# Rotation angle gradient of each body: theta_b = c_b . q
_ROT = np.array(
    [_BETA, _BETA + _THETA, _GAMMA, _PHI + _DELTA, _DELTA, _OMEGA + _EPS, _EPS]
)

# Spring attachment point D on body 3: B + sd e(gamma) + sc (sin g, -cos g)
_SPRING_D = _Point(_B, [(SD, _GAMMA, 0.0), (SC, _GAMMA, -_HALF_PI)])

# The common point P reached along the four paths.
_P_12 = _Point(_ORIGIN, [(RR, _BETA, 0.0), (D, _BETA + _THETA, np.pi)])  # R - d e(b+T)
_P_3 = _Point(_B, [(SS, _GAMMA, -_HALF_PI)])  # B + ss (sin g, -cos g)
_P_45 = _Point(_A, [(ZT, _DELTA, 0.0), (E, _PHI + _DELTA, -_HALF_PI)])
_P_67 = _Point(_A, [(U, _EPS, -_HALF_PI), (ZF, _OMEGA + _EPS, 0.0)])


# --------------------------------------------------------------------------
# Public model functions
# --------------------------------------------------------------------------
def initial_state(dtype=np.float64) -> tuple[np.ndarray, np.ndarray]:
    """Consistent initial state at t = 0: (q0 [rad], qd0 [rad/s]) (at rest).

    ``dtype=np.longdouble`` parses the published 30-digit values at that
    precision.
    """
    if dtype == np.float64:
        return Q0.copy(), np.zeros(NQ)
    return np.array([dtype(v) for v in _Q0_STR]), np.zeros(NQ, dtype=dtype)


def mass_matrix(q: np.ndarray) -> np.ndarray:
    """Generalised mass matrix M(q) (7x7; kg m^2) from the body geometry."""
    q = _as_real(q)
    zero = np.zeros(NQ, dtype=q.dtype)
    M = np.zeros((NQ, NQ), dtype=q.dtype)
    for cg, m, inertia, c in zip(_CG, _MASS, _INERTIA, _ROT):
        _, J, _ = cg.eval(q, zero)
        M += m * J.T @ J + inertia * np.outer(c, c)
    return M


def spring_force(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spring force on body 3 at D [N] (2,) and its generalised force [N m] (7,)."""
    q = _as_real(q)
    pD, JD, _ = _SPRING_D.eval(q, np.zeros(NQ, dtype=q.dtype))
    dvec = pD - np.array([XC, YC])
    length = np.hypot(dvec[0], dvec[1])
    F = -C0 * (length - L0) / length * dvec
    return F, JD.T @ F


def force(q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """Generalised force f(q, qd) [N m]: drive torque + spring - Coriolis/centrifugal.

    Sign convention: M qdd = f - G^T lam.
    """
    q = _as_real(q)
    qd = _as_real(qd)
    f = np.zeros(NQ, dtype=np.result_type(q, qd))
    f[0] += MOM  # drive torque on body 1, whose angle is beta
    f += spring_force(q)[1]
    for cg, m in zip(_CG, _MASS):
        _, J, jdqd = cg.eval(q, qd)
        f -= m * J.T @ jdqd
    return f


def _loop_terms(q, qd):
    p12, J12, a12 = _P_12.eval(q, qd)
    dt = np.result_type(q, qd)
    g = np.empty(NC, dtype=dt)
    G = np.empty((NC, NQ), dtype=dt)
    gqq = np.empty(NC, dtype=dt)
    for i, other in enumerate((_P_3, _P_45, _P_67)):
        p, J, a = other.eval(q, qd)
        g[2 * i : 2 * i + 2] = p12 - p
        G[2 * i : 2 * i + 2] = J12 - J
        gqq[2 * i : 2 * i + 2] = a12 - a
    return g, G, gqq


def constraints(q: np.ndarray) -> np.ndarray:
    """Position constraints g1..g6(q) [m] (zero on the manifold)."""
    q = _as_real(q)
    return _loop_terms(q, np.zeros(NQ, dtype=q.dtype))[0]


def constraint_jacobian(q: np.ndarray) -> np.ndarray:
    """G(q) = dg/dq (6x7) [m/rad]."""
    q = _as_real(q)
    return _loop_terms(q, np.zeros(NQ, dtype=q.dtype))[1]


def _gauss_solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Gaussian elimination with partial pivoting in the dtype of A (any float)."""
    A = A.copy()
    b = b.copy()
    n = b.shape[0]
    for k in range(n):
        p = k + int(np.argmax(np.abs(A[k:, k])))
        if p != k:
            A[[k, p]] = A[[p, k]]
            b[[k, p]] = b[[p, k]]
        fac = A[k + 1 :, k] / A[k, k]
        A[k + 1 :, k:] -= np.outer(fac, A[k, k:])
        b[k + 1 :] -= fac * b[k]
    x = np.zeros(n, dtype=A.dtype)
    for k in range(n - 1, -1, -1):
        x[k] = (b[k] - A[k, k + 1 :] @ x[k + 1 :]) / A[k, k]
    return x


def accelerations(q: np.ndarray, qd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve the KKT system; return (qdd [rad/s^2] (7,), lam [N] (6,)).

    lam follows the Test Set sign convention  M qdd = f - G^T lam.
    Works in float64 (LAPACK) or, for wider inputs such as np.longdouble,
    in that precision (own elimination).
    """
    q = _as_real(q)
    qd = _as_real(qd)
    dt = np.result_type(q, qd)
    M = mass_matrix(q)
    f = force(q, qd)
    _, G, gqq = _loop_terms(q, qd)
    K = np.zeros((NQ + NC, NQ + NC), dtype=dt)
    K[:NQ, :NQ] = M
    K[:NQ, NQ:] = G.T
    K[NQ:, :NQ] = G
    rhs = np.concatenate([f, -gqq])
    if dt == np.float64:
        sol = np.linalg.solve(K, rhs)
    else:
        sol = _gauss_solve(K, rhs)
    return sol[:NQ], sol[NQ:]


def _rhs(t, y):
    q, qd = y[:NQ], y[NQ:]
    qdd, _ = accelerations(q, qd)
    return np.concatenate([qd, qdd])


def solve(
    t1: float = T_END,
    rtol: float = 1e-13,
    atol: float = 1e-13,
    method: str = "DOP853",
    return_result: bool = False,
):
    """Integrate from the consistent initial state to time t1 [s].

    Returns (q(t1) [rad], qd(t1) [rad/s]); with ``return_result=True`` also the
    ``scipy`` OdeResult as a third item.
    """
    q0, qd0 = initial_state()
    res = solve_ivp(
        _rhs, (0.0, t1), np.concatenate([q0, qd0]), method=method, rtol=rtol, atol=atol
    )
    if not res.success:
        raise RuntimeError(f"solve_ivp failed: {res.message}")
    y = res.y[:, -1]
    if return_result:
        return y[:NQ], y[NQ:], res
    return y[:NQ], y[NQ:]


def scd(q: np.ndarray, q_ref: np.ndarray = TESTSET_Q_T003) -> float:
    """Test Set accuracy measure: -log10(max_i |q_i - qref_i| / |qref_i|)."""
    q = np.asarray(q, dtype=float)
    return float(-np.log10(np.max(np.abs(q - q_ref) / np.abs(q_ref))))


def solve_fixed_step_longdouble(n_steps: int = 2000, t1: float = T_END):
    """Precision check: fixed-step integration in numpy longdouble.

    Uses the 12-stage, 8th-order Dormand-Prince tableau (the one behind
    scipy's DOP853, taken from ``scipy.integrate._ivp.dop853_coefficients``)
    with ``n_steps`` equal steps, every right-hand side evaluated in
    ``np.longdouble`` (80-bit extended on x86-64: ~19 digits; on platforms
    where longdouble is float64 this is just a float64 run).  Model parameters
    are the float64 roundings of the decimal data.  About 7 ms per step.

    Returns (q(t1), qd(t1)) as longdouble arrays.
    """
    from scipy.integrate._ivp import dop853_coefficients as dc

    ld = np.longdouble
    A = dc.A[: dc.N_STAGES, : dc.N_STAGES].astype(ld)
    B = dc.B.astype(ld)
    h = ld(t1) / n_steps if t1 != T_END else (ld(3) / ld(100)) / n_steps
    q0, qd0 = initial_state(ld)
    y = np.concatenate([q0, qd0])

    def rhs(y):
        return np.concatenate([y[NQ:], accelerations(y[:NQ], y[NQ:])[0]])

    for _ in range(n_steps):
        k = np.zeros((dc.N_STAGES, 2 * NQ), dtype=ld)
        for i in range(dc.N_STAGES):
            k[i] = rhs(y + h * (A[i, :i] @ k[:i]))
        y = y + h * (B @ k)
    return y[:NQ], y[NQ:]


# --------------------------------------------------------------------------
# Closed-form M and f as printed in Hairer & Wanner VII.7 / Test Set
# (used only to cross-check the geometric derivation above)
# --------------------------------------------------------------------------
def mass_matrix_closed_form(q: np.ndarray) -> np.ndarray:
    """M(q) in the closed form of Hairer & Wanner VII.7 (kg m^2)."""
    _, th, _, ph, _, om, _ = np.asarray(q, dtype=float)
    ee, zz = E - EA, ZF - FA
    M = np.zeros((NQ, NQ))
    M[0, 0] = M1 * RA**2 + M2 * (RR**2 - 2 * DA * RR * np.cos(th) + DA**2) + I1 + I2
    M[1, 0] = M[0, 1] = M2 * (DA**2 - DA * RR * np.cos(th)) + I2
    M[1, 1] = M2 * DA**2 + I2
    M[2, 2] = M3 * (SA**2 + SB**2) + I3
    M[3, 3] = M4 * ee**2 + I4
    M[4, 3] = M[3, 4] = M4 * (ee**2 + ZT * ee * np.sin(ph)) + I4
    M[4, 4] = M4 * (ZT**2 + 2 * ZT * ee * np.sin(ph) + ee**2) + M5 * (TA**2 + TB**2) + I4 + I5
    M[5, 5] = M6 * zz**2 + I6
    M[6, 5] = M[5, 6] = M6 * (zz**2 - U * zz * np.sin(om)) + I6
    M[6, 6] = M6 * (zz**2 - 2 * U * zz * np.sin(om) + U**2) + M7 * (UA**2 + UB**2) + I6 + I7
    return M


def force_closed_form(q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """f(q, qd) in the closed form of Hairer & Wanner VII.7 (N m)."""
    _, th, ga, ph, _, om, _ = np.asarray(q, dtype=float)
    bd, thd, _, phd, dd, omd, epd = np.asarray(qd, dtype=float)
    ee, zz = E - EA, ZF - FA
    xd = SD * np.cos(ga) + SC * np.sin(ga) + XB
    yd = SD * np.sin(ga) - SC * np.cos(ga) + YB
    length = np.hypot(xd - XC, yd - YC)
    fs = -C0 * (length - L0) / length
    fx, fy = fs * (xd - XC), fs * (yd - YC)
    return np.array(
        [
            MOM - M2 * DA * RR * thd * (thd + 2 * bd) * np.sin(th),
            M2 * DA * RR * bd**2 * np.sin(th),
            fx * (SC * np.cos(ga) - SD * np.sin(ga)) + fy * (SD * np.cos(ga) + SC * np.sin(ga)),
            M4 * ZT * ee * dd**2 * np.cos(ph),
            -M4 * ZT * ee * phd * (phd + 2 * dd) * np.cos(ph),
            -M6 * U * zz * epd**2 * np.cos(om),
            M6 * U * zz * omd * (omd + 2 * epd) * np.cos(om),
        ]
    )


def main() -> None:
    import time

    np.set_printoptions(precision=16, linewidth=120)
    q0, qd0 = initial_state()
    print("Andrews' squeezing mechanism (Hairer & Wanner VII.7 / Test Set 'andrews')")
    print(f"|g(q0)|_max = {np.max(np.abs(constraints(q0))):.3e} m")
    print("max |M - M_closed_form| at q0 =",
          np.max(np.abs(mass_matrix(q0) - mass_matrix_closed_form(q0))))
    qdd0, lam0 = accelerations(q0, qd0)
    print("initial accelerations qdd0 [rad/s^2]:", qdd0)
    rel = np.abs(qdd0[:2] - PUBLISHED_QDD0[:2]) / np.abs(PUBLISHED_QDD0[:2])
    print("  rel. error vs published (beta, Theta):", rel)
    print("  max |qdd0[2:]| :", np.max(np.abs(qdd0[2:])))
    print("initial multipliers lam0 [N]:", lam0)
    print("  rel. error vs published (lam1, lam2):",
          np.abs(lam0[:2] - PUBLISHED_LAM0[:2]) / np.abs(PUBLISHED_LAM0[:2]))
    for method, tol in (("DOP853", 1e-13), ("Radau", 1e-12)):
        t0 = time.perf_counter()
        q, qd, res = solve(T_END, rtol=tol, atol=tol, method=method, return_result=True)
        dt = time.perf_counter() - t0
        print(f"\n{method} rtol=atol={tol:g}: nfev={res.nfev}, {dt:.1f} s")
        print("  q(0.03)  =", q)
        print("  qd(0.03) =", qd)
        print(f"  |g(q(0.03))|_max (drift)  = {np.max(np.abs(constraints(q))):.3e} m")
        print(f"  scd(q)  vs Test Set        = {scd(q):.2f}")
        print(f"  scd(qd) vs Test Set        = {scd(qd, TESTSET_QD_T003):.2f}")
        print(f"  scd(q)  vs own longdouble  = {scd(q, LONGDOUBLE_Q_T003):.2f}")
        print(f"  scd(qd) vs own longdouble  = {scd(qd, LONGDOUBLE_QD_T003):.2f}")
        if method == "DOP853":
            dev = TESTSET_Q_T003 - q
            print("  (Test Set - q) / qd  [s]   =", dev / qd)
    print("\nscd(Test Set q vs own longdouble) =", f"{scd(TESTSET_Q_T003, LONGDOUBLE_Q_T003):.2f}")


if __name__ == "__main__":
    main()
