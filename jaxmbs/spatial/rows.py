"""What the spatial constraint families are written with: one side's points and directions
with their rates and Jacobian rows (`_Side`), and the dot-product constraints' parts."""
from __future__ import annotations

import jax.numpy as jnp

from ..core import families as F
from .frames import SPATIAL
from .geometry import cross, dot, mtv, mv, quat_to_R


# --------------------------------------------------------- vector quantities of frames
class _Side:
    """One side (frame) of k constraint instances: r, R, rdot, omega (body axes)."""

    def __init__(self, X, V):
        self.r = X[:, :3]
        self.R = quat_to_R(X[:, 3:7])
        self.v = V[:, :3]
        self.w = V[:, 3:6]

    def point(self, s):
        """(P, Pdot, P_quad) of body points s (k, 3): P = r + R s."""
        ws = cross(self.w, s)
        return self.r + mv(self.R, s), self.v + mv(self.R, ws), mv(self.R, cross(self.w, ws))

    def direction(self, a):
        """(A, Adot, A_quad) of body directions a (k, 3): A = R a."""
        wa = cross(self.w, a)
        return mv(self.R, a), mv(self.R, wa), mv(self.R, cross(self.w, wa))

    def row_point(self, s, e):
        """e^T dP/dV (k, 6) for the body point s and global row vectors e (k, 3)."""
        return jnp.concatenate([e, cross(s, mtv(self.R, e))], -1)

    def row_dir(self, a, e):
        """e^T dA/dV (k, 6) for the body direction a."""
        return jnp.concatenate([jnp.zeros_like(e), cross(a, mtv(self.R, e))], -1)

    def rate(self, G):
        """G . V for row blocks G (k, 6)."""
        return dot(G[:, :3], self.v) + dot(G[:, 3:], self.w)


def _dot1_parts(si, sj, a, b):
    A, Ad, Aq = si.direction(a)
    Bv, Bd, Bq = sj.direction(b)
    return (dot(A, Bv), si.row_dir(a, Bv), sj.row_dir(b, A),
            dot(A, Bq) + dot(Bv, Aq) + 2.0 * dot(Ad, Bd))


def _dot2_parts(si, sj, a, s_i, s_j):
    """a . (P_j - P_i) for a body direction a of frame i and body points s_i, s_j:
    (value, Gi, Gj, quad) (k,), (k, 6), (k, 6), (k,)."""
    A, Ad, Aq = si.direction(a)
    Pi, Pid, Piq = si.point(s_i)
    Pj, Pjd, Pjq = sj.point(s_j)
    d, dd, dq = Pj - Pi, Pjd - Pid, Pjq - Piq
    g = dot(A, d)
    Gi = si.row_dir(a, d) - si.row_point(s_i, A)
    Gj = sj.row_point(s_j, A)
    return g, Gi, Gj, dot(A, dq) + dot(d, Aq) + 2.0 * dot(Ad, dd)


class _Spatial(F.ConstraintFamily):
    frame = SPATIAL
