"""Planar kinematics of body points, vectorised over instances.

A frame's coordinates are (x, y, theta); a particle's theta is a constant 0 and its
local points are (0, 0); the ground's coordinates are all a constant 0.
A(theta) rotates local to global; perp(a) = (-a_y, a_x) so that B s = perp(A s).
"""
import math

import jax.numpy as jnp
import numpy as np


def rot2(theta):
    """The rotation matrix (2, 2) of a Python / NumPy angle theta (rad): builder-side
    geometry (NumPy, not traced; `rotate` is the traced kernel)."""
    c, s = math.cos(theta), math.sin(theta)
    return np.array([[c, -s], [s, c]])


def rotate(theta, s):
    """A(theta) s for theta (...,) and s (..., 2)."""
    c, sn = jnp.cos(theta), jnp.sin(theta)
    return jnp.stack([c * s[..., 0] - sn * s[..., 1], sn * s[..., 0] + c * s[..., 1]], -1)


def perp(a):
    """Rotation by +90 degrees of a (..., 2)."""
    return jnp.stack([-a[..., 1], a[..., 0]], -1)


def cross(a, b):
    """Scalar cross product a x b of (..., 2) vectors."""
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def dot(a, b):
    """Scalar product over the last axis (length 2 or 3: vectors, or force/velocity
    triples (x, y, theta)), written out: a reduce over so short an axis is slow under
    vmap on XLA:CPU."""
    k = max(a.shape[-1], b.shape[-1])
    if k > 4:
        return jnp.sum(a * b, -1)
    a, b = jnp.broadcast_to(a, a.shape[:-1] + (k,)), jnp.broadcast_to(b, b.shape[:-1] + (k,))
    out = a[..., 0] * b[..., 0]
    for j in range(1, k):
        out = out + a[..., j] * b[..., j]
    return out


def point(X, s):
    """Global position r + A s of local points s (k,2) on frames X (k,3); also A s."""
    As = rotate(X[:, 2], s)
    return X[:, :2] + As, As


def point_velocity(V, As):
    """r_dot + perp(A s) theta_dot."""
    return V[:, :2] + perp(As) * V[:, 2:3]


def point_jacobian(As, sign=1.0):
    """d(r + A s)/d(x, y, theta): (k, 2, 3) = sign * [I | perp(A s)]."""
    k = As.shape[0]
    eye = jnp.broadcast_to(jnp.eye(2, dtype=As.dtype), (k, 2, 2))
    return sign * jnp.concatenate([eye, perp(As)[:, :, None]], -1)


def row_jacobian(w, As, sign=1.0):
    """d(w . (r + A s))/d(x, y, theta) for fixed w: (k, 3) = sign * [w, w . perp(A s)]."""
    return sign * jnp.concatenate([w, dot(w, perp(As))[:, None]], -1)


def safe_length(d):
    """|d| and the unit vector d / |d| of (k, 2) vectors, finite in value and in every
    derivative at d = 0 (length 0, unit vector 0 there: the direction is undefined).

    The double-where pattern: the norm is taken of a substituted 1 where d = 0, so neither
    the forward values nor the derivative rules (1 / |d|) see a division by zero.
    """
    dd = dot(d, d)
    nz = dd > 0
    ell_s = jnp.sqrt(jnp.where(nz, dd, 1.0))
    ell = jnp.where(nz, ell_s, 0.0)
    u = jnp.where(nz[:, None], d / ell_s[:, None], 0.0)
    return ell, u, ell_s
