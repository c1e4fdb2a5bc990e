"""The elastica of a clamped cantilever under a dead tip load perpendicular to its
undeformed axis, independent of jaxmbs (SciPy): arc length s in [0, 1] (per L), tangent
angle theta(s), EI theta'' = -P cos(theta), theta(0) = 0, theta'(1) = 0 (moment-free tip);
alpha = P L^2 / EI. Shooting on theta'(0) with a high-order ODE integrator and Brent's
method; x' = cos theta, y' = sin theta."""
import functools

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq


def _shoot(alpha, k0):
    rhs = lambda s, z: [z[1], -alpha * np.cos(z[0]), np.cos(z[0]), np.sin(z[0])]
    sol = solve_ivp(rhs, (0.0, 1.0), [0.0, k0, 0.0, 0.0], method="DOP853", rtol=1e-13, atol=1e-14)
    return sol.y[:, -1]


@functools.cache
def elastica_tip(alpha):
    """(tip vertical deflection / L, tip shortening / L, tip rotation rad) for alpha > 0."""
    k0 = brentq(lambda k: _shoot(alpha, k)[1], 1e-9, alpha, xtol=1e-15, rtol=1e-15)
    th, _, x, y = _shoot(alpha, k0)
    return y, 1.0 - x, th


# Euler-Bernoulli clamped-free: roots of cos(b) cosh(b) = -1
def beta_L(n=4):
    """The first n roots b of 1 + cos(b) cosh(b) = 0 (beta_n L)."""
    f = lambda b: 1.0 + np.cos(b) * np.cosh(b)
    return [brentq(f, (k + 0.5) * np.pi - 1.2, (k + 0.5) * np.pi + 0.6, xtol=1e-15) for k in range(n)]


if __name__ == "__main__":
    for a in (1, 2, 5, 10):
        print(a, elastica_tip(a))
    print(beta_L())
