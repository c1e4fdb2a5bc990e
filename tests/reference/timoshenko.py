"""Natural frequencies of a clamped-free Timoshenko beam, independent of jaxmbs (SciPy).

Free vibration at angular frequency omega of a uniform beam with deflection w(x) and
section rotation psi(x):

    k G A (w'' - psi') + rho A omega^2 w = 0,
    E I psi'' + k G A (w' - psi) + rho I omega^2 psi = 0,

clamped at x = 0 (w = psi = 0), free at x = L (E I psi' = 0, k G A (w' - psi) = 0). The
system y' = B(omega) y, y = (w, w', psi, psi'), has constant coefficients: the two
solutions that satisfy the clamped conditions reach x = L through expm(B L), and the
frequencies are the roots of the 2 x 2 determinant of the free-end conditions (bracketed
on a grid, refined by Brent's method).
"""
import numpy as np
from scipy.linalg import expm
from scipy.optimize import brentq


def _free_end_det(omega, L, EI, kGA, rhoA, rhoI):
    w2 = omega * omega
    B = np.array([[0.0, 1.0, 0.0, 0.0],
                  [-rhoA * w2 / kGA, 0.0, 0.0, 1.0],          # w'' = psi' - rho A w2 w / kGA
                  [0.0, 0.0, 0.0, 1.0],
                  [0.0, -kGA / EI, (kGA - rhoI * w2) / EI, 0.0]])
    Y = expm(B * L)[:, [1, 3]]                                # initial w' = 1 or psi' = 1
    # free end: psi'(L) = 0 and w'(L) - psi(L) = 0 (the w'' equation's psi' enters w'')
    C = np.array([Y[3], Y[1] - Y[2]])
    return np.linalg.det(C)


def timoshenko_cantilever_omegas(n, L, EI, kGA, rhoA, rhoI, omega_max=None, grid=4000):
    """The first n angular frequencies (rad/s) of the clamped-free Timoshenko beam (length
    L m, E I N m^2, k G A N, rho A kg/m, rho I kg m)."""
    if omega_max is None:  # well above the n-th Euler-Bernoulli frequency
        omega_max = ((n + 0.5) * np.pi / L) ** 2 * np.sqrt(EI / rhoA) * 1.5
    f = lambda w: _free_end_det(w, L, EI, kGA, rhoA, rhoI)
    ws = np.linspace(omega_max * 1e-4, omega_max, grid)
    vals = np.array([f(w) for w in ws])
    out = []
    for a, b, fa, fb in zip(ws[:-1], ws[1:], vals[:-1], vals[1:]):
        if np.sign(fa) != np.sign(fb):
            out.append(brentq(f, a, b, xtol=1e-14, rtol=1e-14))
            if len(out) == n:
                return np.array(out)
    raise ValueError(f"found {len(out)} of {n} frequencies below {omega_max}")
