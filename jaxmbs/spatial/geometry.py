"""Spatial kinematics kernels, vectorised over leading axes, written component by component.

Conventions: unit quaternions p = (w, x, y, z) (scalar first, Hamilton product);
R(p) rotates body coordinates to global ones; a body's angular velocity omega is given in
BODY axes, so the global angular velocity is R omega, a body point s' moves with
R (omega x s') and qdot = (rdot, pdot) with pdot = p (x) (0, omega) / 2.

Every kernel takes arrays whose last axis holds the components ((..., 3) vectors, (..., 4)
quaternions, (..., 3, 3) matrices) and writes its products out as element-wise
arithmetic: under `jax.vmap` over a batch, XLA:CPU runs tiny `dot_general`s and
reductions over axes of length 3 far slower than element-wise code (DESIGN.md).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

__all__ = ["dot", "cross", "skew_mul", "mv", "mtv", "mm", "mtm", "quat_mul", "quat_conj",
           "quat_to_R", "quat_exp", "quat_rate", "normalize_quat", "rot_axis_angle",
           "safe_norm", "unit"]


def dot(a, b):
    """a . b over the last axis (length 3), written out."""
    return a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1] + a[..., 2] * b[..., 2]


def cross(a, b):
    """a x b of (..., 3) vectors."""
    return jnp.stack([a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1],
                      a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2],
                      a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]], -1)


def skew_mul(a, b):
    """[a]x b = a x b (alias, for reading formulas)."""
    return cross(a, b)


def mv(R, s):
    """R s for R (..., 3, 3), s (..., 3)."""
    return jnp.stack([R[..., i, 0] * s[..., 0] + R[..., i, 1] * s[..., 1] + R[..., i, 2] * s[..., 2]
                      for i in range(3)], -1)


def mtv(R, s):
    """R^T s."""
    return jnp.stack([R[..., 0, i] * s[..., 0] + R[..., 1, i] * s[..., 1] + R[..., 2, i] * s[..., 2]
                      for i in range(3)], -1)


def mm(A, B):
    """A B for (..., 3, 3) matrices."""
    return jnp.stack([mv(A, B[..., :, j]) for j in range(3)], -1)


def mtm(A, B):
    """A^T B for (..., 3, 3) matrices."""
    return jnp.stack([mtv(A, B[..., :, j]) for j in range(3)], -1)


def quat_mul(a, b):
    """Hamilton product a (x) b of (..., 4) quaternions (w, x, y, z)."""
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return jnp.stack([aw * bw - ax * bx - ay * by - az * bz,
                      aw * bx + ax * bw + ay * bz - az * by,
                      aw * by - ax * bz + ay * bw + az * bx,
                      aw * bz + ax * by - ay * bx + az * bw], -1)


def quat_conj(p):
    return p * jnp.asarray([1.0, -1.0, -1.0, -1.0], p.dtype)


def quat_to_R(p):
    """Rotation matrix (..., 3, 3) of the quaternion direction p / |p| (exact rotation for
    any nonzero p, so that off-manifold integrator stages stay smooth)."""
    w, x, y, z = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    n2 = w * w + x * x + y * y + z * z
    s = 2.0 / n2
    xx, yy, zz = s * x * x, s * y * y, s * z * z
    xy, xz, yz = s * x * y, s * x * z, s * y * z
    wx, wy, wz = s * w * x, s * w * y, s * w * z
    rows = [jnp.stack([1.0 - yy - zz, xy - wz, xz + wy], -1),
            jnp.stack([xy + wz, 1.0 - xx - zz, yz - wx], -1),
            jnp.stack([xz - wy, yz + wx, 1.0 - xx - yy], -1)]
    return jnp.stack(rows, -2)


def safe_norm(a):
    """(|a|, |a| with 0 replaced by 1) of (..., 3) vectors, finite in every derivative."""
    n2 = dot(a, a)
    nz = n2 > 0
    ns = jnp.sqrt(jnp.where(nz, n2, 1.0))
    return jnp.where(nz, ns, 0.0), ns


def unit(a):
    """a / |a| (0 for a = 0), finite in every derivative."""
    n, ns = safe_norm(a)
    return jnp.where((n > 0)[..., None], a / ns[..., None], 0.0)


def quat_exp(phi):
    """The unit quaternion exp(phi / 2) of rotation vectors phi (..., 3) (rad): rotation by
    |phi| about phi / |phi|; smooth at 0 (Taylor series below 1e-4 rad)."""
    th2 = dot(phi, phi)
    small = th2 < 1e-8
    th = jnp.sqrt(jnp.where(small, 1.0, th2))
    half = 0.5 * th
    c = jnp.where(small, 1.0 - th2 / 8.0 + th2 * th2 / 384.0, jnp.cos(half))
    sinc = jnp.where(small, 0.5 - th2 / 48.0 + th2 * th2 / 3840.0, jnp.sin(half) / th)
    return jnp.concatenate([c[..., None], sinc[..., None] * phi], -1)


def quat_rate(p, omega):
    """pdot = p (x) (0, omega) / 2 for body-axis angular velocity omega (..., 3)."""
    w, x, y, z = p[..., 0], p[..., 1], p[..., 2], p[..., 3]
    ox, oy, oz = omega[..., 0], omega[..., 1], omega[..., 2]
    return 0.5 * jnp.stack([-x * ox - y * oy - z * oz,
                            w * ox + y * oz - z * oy,
                            w * oy - x * oz + z * ox,
                            w * oz + x * oy - y * ox], -1)


def normalize_quat(p):
    return p / jnp.sqrt(jnp.sum(p * p, -1, keepdims=True))


def rot_axis_angle(axis, angle):
    """Unit quaternion of a rotation by `angle` (rad) about the unit `axis` (..., 3)."""
    h = 0.5 * jnp.asarray(angle)
    return jnp.concatenate([jnp.cos(h)[..., None], jnp.sin(h)[..., None] * axis], -1)


def perp_pair(h):
    """Unit vectors f, g (3,) with (f, g, h) right-handed and orthonormal, for a unit
    NumPy vector h (3,) (builder-side geometry, not traced)."""
    t = np.array([1.0, 0.0, 0.0]) if abs(h[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    f = np.cross(h, t)
    f /= np.linalg.norm(f)
    return f, np.cross(h, f)
