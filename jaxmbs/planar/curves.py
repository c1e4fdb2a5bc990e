"""Plane curves in body coordinates for cam (curve-on-curve) joints.

A curve is r(s), a point in its body's frame (m) as a function of a scalar parameter s.
Four kinds, each evaluated with its first three derivatives in s (needed by the cam
joint's Jacobian and by gamma, where the curvature and its rate enter):

  circle(center, radius)      r = c + R (cos s, sin s), s an angle in rad (period 2 pi),
                              counter-clockwise, so the right-hand normal -perp(r') points out;
  line(point, direction)      r = p + s d, s in units of |d| (m if d is a unit vector);
  polynomial(coefficients)    r = (s, a0 + a1 s + ... + an s^n), s = the local x in m;
  spline(points)              the closed, periodic C^2 cubic spline through N points
                              (N >= 3) with knots at s = 0, 1, ..., N-1 (period N; s is a
                              knot index, not arc length). Give the points counter-clockwise
                              for an outward right-hand normal.

Numbers live in a flat `data` vector per curve (a Params leaf of the cam joint, so circle
centres and radii, line points, polynomial coefficients and spline points are all
differentiable and fittable). The spline's coefficients are computed *in JAX* from its
points: second derivatives M = B P with B = 6 C^-1 D, C the circulant (1, 4, 1) matrix
and D the periodic second difference, a constant that depends only on N and is built in
NumPy at trace time. So dr/dpoints is exact.

Curves are evaluated vectorised over instances; instances of different kinds (or spline
sizes) are grouped by their static (kind, size) code, each group evaluated with one
array expression and scattered into place (no Python loop over instances).
"""
from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

__all__ = ["Curve", "circle", "line", "polynomial", "spline", "as_curve", "evaluate", "KINDS"]

KINDS = ("circle", "line", "polynomial", "spline")


class Curve(NamedTuple):
    """A curve in body coordinates: kind ('circle', 'line', 'polynomial', 'spline') and
    its constructor arguments a, b (see the constructors). As a plain tuple
    (kind, a[, b]) it is also what `Model.add_cam` accepts."""

    kind: str
    a: Any
    b: Any = None

    @property
    def data(self) -> np.ndarray:
        """Flat float vector of the curve's numbers (the Params leaf)."""
        if self.kind == "circle":
            return np.r_[np.asarray(self.a, float), float(self.b)]
        if self.kind == "line":
            return np.r_[np.asarray(self.a, float), np.asarray(self.b, float)]
        if self.kind == "polynomial":
            return np.asarray(self.a, float).reshape(-1)
        return np.asarray(self.a, float).reshape(-1)

    @property
    def code(self) -> tuple:
        """Static (kind, size): size = number of coefficients / points (0 for circle, line)."""
        if self.kind in ("circle", "line"):
            return (self.kind, 0)
        if self.kind == "polynomial":
            return (self.kind, len(self.data))
        return (self.kind, len(self.data) // 2)

    @property
    def period(self):
        """Parameter period (2 pi for a circle, N for a spline) or None for open curves."""
        return {"circle": 2 * math.pi, "spline": float(self.code[1])}.get(self.kind)

    def __call__(self, s):
        """(r, r', r'', r''') at parameter values s (numpy/JAX, shape (k,)) -> four (k, 2)."""
        s = jnp.atleast_1d(jnp.asarray(s, float))
        data = jnp.broadcast_to(jnp.asarray(self.data, s.dtype), (s.shape[0], len(self.data)))
        return evaluate((self.code,) * s.shape[0], data, s)


def _vec2(x, what):
    a = np.asarray(x, dtype=float)
    if a.shape != (2,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{what}: expected a finite 2-vector (x, y), got {x!r}")
    return a


def circle(center, radius) -> Curve:
    """Circle of `radius` (m, > 0) about `center` (2,) (m, body coordinates); s = polar
    angle about the centre (rad), counter-clockwise."""
    c = _vec2(center, "circle center")
    try:
        R = float(radius)
    except (TypeError, ValueError):
        raise ValueError(f"circle radius must be a number, got {radius!r}") from None
    if not (math.isfinite(R) and R > 0):
        raise ValueError(f"circle radius must be positive and finite, got {radius!r}")
    return Curve("circle", tuple(c), R)


def line(point, direction=(1.0, 0.0)) -> Curve:
    """Straight line through `point` (2,) (m) along `direction` (2,) (nonzero; its length
    sets the unit of s: s = 1 is one |direction| along the line)."""
    p = _vec2(point, "line point")
    d = _vec2(direction, "line direction")
    if np.linalg.norm(d) < 1e-12:
        raise ValueError(f"line direction must be nonzero, got {direction!r}")
    return Curve("line", tuple(p), tuple(d))


def polynomial(coefficients) -> Curve:
    """Graph y = sum_k a_k x^k (ascending coefficients a_0..a_n, n >= 1, units m^(1-k))
    in body coordinates, parametrised by s = x (m)."""
    a = np.asarray(coefficients, float).reshape(-1)
    if a.size < 2 or not np.all(np.isfinite(a)):
        raise ValueError(f"polynomial curve: give at least 2 finite coefficients a0, a1, ..., got {coefficients!r}")
    return Curve("polynomial", tuple(a.tolist()))


def spline(points) -> Curve:
    """Closed periodic C^2 cubic spline through `points` (N, 2) (m, N >= 3, body
    coordinates), knots at s = 0..N-1, period N; counter-clockwise for an outward normal."""
    P = np.asarray(points, float)
    if P.ndim != 2 or P.shape[1] != 2 or P.shape[0] < 3 or not np.all(np.isfinite(P)):
        raise ValueError(f"spline curve: points must be a finite (N, 2) array with N >= 3, got shape {P.shape}")
    if np.any(np.linalg.norm(P - np.roll(P, 1, 0), axis=1) < 1e-12):
        raise ValueError("spline curve: consecutive points coincide; give distinct points")
    return Curve("spline", tuple(map(tuple, P.tolist())))


_CONSTRUCTORS = {"circle": circle, "line": line, "polynomial": polynomial, "spline": spline}


def as_curve(spec, what="curve") -> Curve:
    """A Curve from a Curve or a sequence (kind, arg[, arg]): ('circle', center, radius),
    ('line', point, direction), ('polynomial', coefficients), ('spline', points)."""
    if isinstance(spec, Curve):
        return _CONSTRUCTORS[spec.kind](*[x for x in spec[1:] if x is not None])
    if isinstance(spec, (list, tuple)) and spec and isinstance(spec[0], str):
        kind = spec[0]
        if kind not in _CONSTRUCTORS:
            raise ValueError(f"{what}: unknown curve kind {kind!r}; use one of {', '.join(KINDS)}")
        args = [x for x in spec[1:] if x is not None]
        try:
            return _CONSTRUCTORS[kind](*args)
        except TypeError as e:
            raise ValueError(f"{what}: bad arguments for a {kind} curve: {e}") from None
    raise ValueError(f"{what}: expected a jaxmbs.curves.Curve or a tuple (kind, args...), "
                     f"e.g. ('circle', (0, 0), 0.1); got {spec!r}")


# ----------------------------------------------------------------------------- evaluation
def _circle(d, s):
    c, R = d[:, 0:2], d[:, 2:3]
    cs, sn = jnp.cos(s)[:, None], jnp.sin(s)[:, None]
    u = jnp.concatenate([cs, sn], -1)
    du = jnp.concatenate([-sn, cs], -1)
    return c + R * u, R * du, -R * u, -R * du


def _line(d, s):
    p, v = d[:, 0:2], d[:, 2:4]
    z = jnp.zeros_like(v)
    return p + s[:, None] * v, v, z, z


def _polynomial(d, s, n):
    a = d[:, :n]
    k = np.arange(n)
    pows = [jnp.ones_like(s)]
    for _ in range(n - 1):  # s^0..s^(n-1) by products (no s**0 at s = 0 under autodiff)
        pows.append(pows[-1] * s)
    pw = jnp.stack(pows, -1)  # (k, n)
    ones, zeros = jnp.ones_like(s), jnp.zeros_like(s)

    def deriv(order):
        # d^order/ds^order sum_k a_k s^k = sum_{k >= order} a_k k!/(k-order)! s^(k-order)
        if order >= n:
            return zeros
        fac = np.array([math.perm(int(kk), order) for kk in k[order:]], float)
        return jnp.sum(a[:, order:] * fac * pw[:, : n - order], -1)

    r = jnp.stack([s, deriv(0)], -1)
    r1 = jnp.stack([ones, deriv(1)], -1)
    r2 = jnp.stack([zeros, deriv(2)], -1)
    r3 = jnp.stack([zeros, deriv(3)], -1)
    return r, r1, r2, r3


@functools.cache
def spline_matrix(N: int) -> np.ndarray:
    """(N, N) constant B with knot second derivatives M = B P of the periodic cubic spline
    with unit knot spacing through points P (N, 2): M_{k-1} + 4 M_k + M_{k+1} = 6 (P_{k-1} - 2 P_k + P_{k+1})."""
    eye = np.eye(N)
    C = 4 * eye + np.roll(eye, 1, 1) + np.roll(eye, -1, 1)
    D = -2 * eye + np.roll(eye, 1, 1) + np.roll(eye, -1, 1)
    return 6.0 * np.linalg.solve(C, D)


def _spline(d, s, N):
    k = d.shape[0]
    P = d[:, : 2 * N].reshape(k, N, 2)
    M = jnp.einsum("ab,kbd->kad", jnp.asarray(spline_matrix(N), d.dtype), P)
    u = jnp.mod(s, N)
    i = jnp.clip(jnp.floor(u), 0, N - 1)
    tau = u - i
    i = i.astype(jnp.int32)
    i1 = jnp.where(i + 1 >= N, 0, i + 1)
    take = lambda A, idx: jnp.take_along_axis(A, idx[:, None, None], 1)[:, 0]
    P0, P1, M0, M1 = take(P, i), take(P, i1), take(M, i), take(M, i1)
    t, w = tau[:, None], 1.0 - tau[:, None]
    r = w * P0 + t * P1 + (w**3 - w) * M0 / 6.0 + (t**3 - t) * M1 / 6.0
    r1 = P1 - P0 + (1.0 - 3.0 * w**2) * M0 / 6.0 + (3.0 * t**2 - 1.0) * M1 / 6.0
    r2 = w * M0 + t * M1
    r3 = M1 - M0
    return r, r1, r2, r3


def _eval_group(kind, size, d, s):
    if kind == "circle":
        return _circle(d, s)
    if kind == "line":
        return _line(d, s)
    if kind == "polynomial":
        return _polynomial(d, s, size)
    if kind == "spline":
        return _spline(d, s, size)
    raise ValueError(f"unknown curve kind {kind!r}")


def evaluate(codes: tuple, data, s):
    """r, r', r'', r''' (each (k, 2), body coordinates) of k curves at parameters s (k,).

    codes: static tuple of (kind, size) per instance (`Curve.code`); data: (k, D) padded
    curve numbers (`Curve.data` in the first entries of each row).
    """
    groups = {}
    for idx, c in enumerate(codes):
        groups.setdefault(tuple(c), []).append(idx)
    if len(groups) == 1:
        (kind, size), = groups
        return _eval_group(kind, size, data, s)
    k = len(codes)
    out = [jnp.zeros((k, 2), data.dtype) for _ in range(4)]
    for (kind, size), idx in groups.items():
        idx = np.asarray(idx)
        parts = _eval_group(kind, size, data[idx], s[idx])
        out = [o.at[idx].set(p) for o, p in zip(out, parts)]
    return tuple(out)


# ----------------------------------------------------------------------------- build time
def _candidates(curve, other_pts_local):
    """Candidate parameters of `curve` near points given in its own body coordinates."""
    if curve.period is not None:
        return np.linspace(0.0, curve.period, 73)[:-1]
    if curve.kind == "line":
        p, d = np.asarray(curve.a, float), np.asarray(curve.b, float)
        return (other_pts_local - p) @ d / (d @ d)
    return other_pts_local[:, 0]  # polynomial: s = local x


def initial_parameters(curve_i, curve_j, Xi, Xj, s_i=None, s_j=None):
    """Curve parameters (s_i, s_j) of the contact (or closest approach with parallel
    tangents) of two curves on frames at Xi, Xj = (x, y, theta) (numpy, build time).

    Given values are kept; missing ones are found by sampling and a least-squares
    refinement of [P_i - P_j, L cross(t_i, t_j)/(|t_i||t_j|)] (L: size of the curves).
    """
    from scipy.optimize import least_squares

    Xi, Xj = np.asarray(Xi, float), np.asarray(Xj, float)

    def rot(th):
        c, s = np.cos(th), np.sin(th)
        return np.array([[c, -s], [s, c]])

    def ev(curve, X, s):
        r, r1, _, _ = (np.asarray(a) for a in curve(np.atleast_1d(s)))
        return X[:2] + r @ rot(X[2]).T, r1 @ rot(X[2]).T

    def to_local(X, P):
        return (P - X[:2]) @ rot(X[2])

    fixed_i, fixed_j = s_i is not None, s_j is not None
    if fixed_i and fixed_j:
        return float(s_i), float(s_j)
    # sample a closed / given curve first, then project onto the other
    if fixed_i:
        Si = np.array([float(s_i)])
    elif curve_i.period is not None or curve_j.period is None:
        Si = _candidates(curve_i, np.zeros((0, 2))) if curve_i.period is not None else np.linspace(-1, 1, 41)
    else:
        Sj0 = np.array([float(s_j)]) if fixed_j else _candidates(curve_j, None)
        Si = _candidates(curve_i, to_local(Xi, ev(curve_j, Xj, Sj0)[0]))
    Pi, _ = ev(curve_i, Xi, Si)
    Sj = np.array([float(s_j)]) if fixed_j else _candidates(curve_j, to_local(Xj, Pi))
    Pj, _ = ev(curve_j, Xj, Sj)
    L = max(np.ptp(np.r_[Pi, Pj], 0).max(), 1e-9)

    def resid(x):
        a = x[0] if not fixed_i else float(s_i)
        b = x[-1] if not fixed_j else float(s_j)
        P1, t1 = ev(curve_i, Xi, a)
        P2, t2 = ev(curve_j, Xj, b)
        t1, t2 = t1[0], t2[0]
        c = (t1[0] * t2[1] - t1[1] * t2[0]) / (np.linalg.norm(t1) * np.linalg.norm(t2))
        return np.r_[P1[0] - P2[0], L * c]

    best = None
    D = np.linalg.norm(Pi[:, None, :] - Pj[None, :, :], axis=-1)  # (ni, nj)
    order = np.argsort(D, axis=None)[:8]
    for flat in order:
        a, b = np.unravel_index(flat, D.shape)
        x0 = [x for x, f in ((Si[a], fixed_i), (Sj[b], fixed_j)) if not f]
        sol = least_squares(resid, np.asarray(x0, float), xtol=1e-15, ftol=1e-15, gtol=1e-15)
        if best is None or sol.cost < best.cost:
            best = sol
    x = best.x
    return (float(s_i) if fixed_i else float(x[0]), float(s_j) if fixed_j else float(x[-1]))
