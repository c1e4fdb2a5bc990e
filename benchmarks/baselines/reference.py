"""High-accuracy reference solutions (SciPy DOP853, tight tolerances) for the baselines.

These are *not* benchmarks; they tell how far each fixed-step baseline is from the
exact solution of the same model.

* chains (incl. the double pendulum): minimal coordinates (absolute link angles),
  ``M(theta) theta'' + c(theta, theta') = -dV/dtheta`` of N uniform rods, each of mass
  m = 1 and length L = 1:  ``M_ij = m L^2 a_max(i,j) cos(theta_i - theta_j)`` with
  ``a_k = N - k - 1/2`` off the diagonal, ``M_ii = m L^2 (N - i - 2/3)``,
  ``c_i = sum_j M'_ij sin(theta_i - theta_j) theta_j'^2`` (M' = off-diagonal factor),
  ``dV/dtheta_i = m g L (N - i - 1/2) cos theta_i`` (0-based i).
* slider_crank: one degree of freedom and no external forces, so the generalised
  momentum equation reduces to energy conservation ``J(phi) phi'^2 = J(0) omega0^2``;
  ``phi' = omega0 sqrt(J(0) / J(phi))`` with the closed-form kinematic coefficients.
* fourbar: the absolute-coordinate index-1 ODE of ``numpy_kkt`` (exact for consistent
  initial values; Baumgarte only damps drift), integrated with DOP853.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.integrate import solve_ivp

try:
    from . import cases as C
except ImportError:  # pragma: no cover
    import cases as C

RTOL = 1e-12
ATOL = 1e-12


def chain_rhs(n: int, m: float = 1.0, L: float = 1.0, g: float = C.G):
    k = np.arange(n)
    a = (n - k - 0.5)  # off-diagonal factor of link index max(i, j)
    A = a[np.maximum.outer(k, k)]
    np.fill_diagonal(A, n - k - 2.0 / 3.0)
    A *= m * L * L
    Aoff = A.copy()
    np.fill_diagonal(Aoff, 0.0)
    dV = m * g * L * (n - k - 0.5)

    def rhs(t, y):
        th, w = y[:n], y[n:]
        d = th[:, None] - th[None, :]
        M = A * np.cos(d)
        c = (Aoff * np.sin(d)) @ (w * w)
        acc = np.linalg.solve(M, -c - dV * np.cos(th))
        return np.concatenate([w, acc])

    return rhs


def chain_reference(n: int, t_end: float):
    """Tip (x, y) of the N-link chain at ``t_end`` (released horizontal at rest)."""
    sol = solve_ivp(chain_rhs(n), (0.0, t_end), np.zeros(2 * n), method="DOP853",
                    rtol=RTOL, atol=ATOL)
    th = sol.y[:n, -1]
    return np.array([np.cos(th).sum(), np.sin(th).sum()])


def _slider_crank_J(phi):
    L1, L2 = C.SC_L1, C.SC_L2
    s, c = math.sin(phi), math.cos(phi)
    S = math.sqrt(L2 * L2 - L1 * L1 * s * s)
    sin2, cos2 = -L1 * s / L2, S / L2   # rod absolute angle phi2 = -asin(L1 sin(phi)/L2)
    k2 = -L1 * c / S                    # dphi2/dphi
    gx = -L1 * s - 0.5 * L2 * sin2 * k2  # d(rod CG)/dphi
    gy = L1 * c + 0.5 * L2 * cos2 * k2
    k3 = -L1 * s - L1 * L1 * s * c / S  # dx_slider/dphi
    return C.SC_J1 + C.SC_M2 * (gx * gx + gy * gy) + C.SC_I2CG * k2 * k2 + C.SC_M3 * k3 * k3


def slider_crank_reference(t_end: float):
    """(crank angle, slider x) at ``t_end`` of the free-running slider-crank."""
    J0 = _slider_crank_J(0.0)
    w0 = C.SC_OMEGA0
    sol = solve_ivp(lambda t, y: [w0 * math.sqrt(J0 / _slider_crank_J(y[0]))], (0.0, t_end),
                    [0.0], method="DOP853", rtol=1e-13, atol=1e-13)
    phi = sol.y[0, -1]
    x = C.SC_L1 * math.cos(phi) + math.sqrt(C.SC_L2 ** 2 - (C.SC_L1 * math.sin(phi)) ** 2)
    return np.array([phi, x])


def fourbar_reference(t_end: float):
    """(crank angle, rocker angle, C_x, C_y) of the four-bar at ``t_end``."""
    try:
        from . import numpy_kkt as N
    except ImportError:  # pragma: no cover
        import numpy_kkt as N
    model = N.build_model("fourbar")
    q0, v0 = C.initial_absolute_state("fourbar")
    n = model.n

    def rhs(t, y):
        a, _ = model.accelerations(y[:n], y[n:])
        return np.concatenate([y[n:], a])

    sol = solve_ivp(rhs, (0.0, t_end), np.concatenate([q0, v0]), method="DOP853",
                    rtol=RTOL, atol=ATOL)
    return C.observables_from_absolute("fourbar", sol.y[:n, -1])


def reference_observables(case: str, t_end: float):
    C.check_case(case)
    if C.is_chain(case):
        return chain_reference(C.chain_n(case), t_end)
    if case == "slider_crank":
        return slider_crank_reference(t_end)
    return fourbar_reference(t_end)
