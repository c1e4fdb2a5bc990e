"""The spatial frame kind, node families (rigid body: position and unit quaternion;
particle) and body families with their mass operators."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..core import families as F
from . import geometry as g3
from .geometry import cross, dot, mtv, mv, quat_to_R

SPATIAL = "spatial"


# ------------------------------------------------------------------ frame and nodes
class SpatialFrame(F.FrameKind):
    name = SPATIAL
    wq = 7
    wv = 6
    dim = 3
    ground_q = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)

    def point(self, X, s):
        As = mv(quat_to_R(X[..., 3:7]), s)
        return X[..., :3] + As, As

    def point_velocity(self, X, V, As):
        return V[..., :3] + cross(mv(quat_to_R(X[..., 3:7]), V[..., 3:6]), As)

    def reaction(self, G, X, s):
        """Force (3,) on the frame in global axes and moment (3,) about its point R s,
        global axes (N, N m), from the generalised force G (6,) = (F, body-axes moment
        about the reference point)."""
        R = quat_to_R(X[3:7])
        F_ = G[:3]
        Mref = mv(R, G[3:6])
        return {"force": F_, "moment": Mref - cross(mv(R, s), F_), "generalized": G}


class SpatialRigidNode(F.NodeFamily):
    """Position r (3,) of the reference point and unit quaternion p (4,); velocities
    rdot (3,) (global) and omega (3,) (body axes)."""

    name = "spatial_rigid"
    nq, nv = 7, 6
    frame = SPATIAL
    frame_q = (0, 1, 2, 3, 4, 5, 6)
    frame_v = (0, 1, 2, 3, 4, 5)
    identity = False
    rigid = True
    coord_names = ("x", "y", "z", "q0", "q1", "q2", "q3")
    vel_names = ("x", "y", "z", "wx", "wy", "wz")

    def qdot(self, q, v):
        return jnp.concatenate([v[..., :3], g3.quat_rate(q[..., 3:7], v[..., 3:6])], -1)

    def retract(self, q, dv):
        p = g3.quat_mul(q[..., 3:7], g3.quat_exp(dv[..., 3:6]))
        return jnp.concatenate([q[..., :3] + dv[..., :3], p], -1)

    def normalize(self, q):
        return jnp.concatenate([q[..., :3], g3.normalize_quat(q[..., 3:7])], -1)

    admissible = "a unit orientation quaternion (q0, q1, q2, q3); (1, 0, 0, 0) is no rotation"
    defect = "|quaternion| - 1"

    def coordinate_defects(self, q):
        p = np.asarray(q, float)[..., 3:7]
        n = np.sqrt(np.sum(p * p, -1))
        singular = ~np.isfinite(n) | (n == 0.0)
        return singular, np.where(singular, np.inf, np.abs(n - 1.0))

    # linearisation chart (jaxmbs.linear): rotation vectors and angular velocities in
    # global axes, so that a body spinning about a body-fixed axis (a wheel) has a
    # time-invariant linearisation
    chart_names = ("x", "y", "z", "rx", "ry", "rz")

    def global_velocity(self, q, v):
        return jnp.concatenate([v[..., :3], mv(quat_to_R(q[..., 3:7]), v[..., 3:6])], -1)

    def body_velocity(self, q, V):
        return jnp.concatenate([V[..., :3], mtv(quat_to_R(q[..., 3:7]), V[..., 3:6])], -1)

    def chart_rate(self, q, V, dx):
        return jnp.concatenate([jnp.zeros_like(dx[..., :3]), cross(V[..., 3:6], dx[..., 3:6])], -1)

    def dq_dv(self, q):
        p = q[..., 3:7]
        k = q.shape[0]
        eye = jnp.eye(3, dtype=q.dtype)
        cols = [g3.quat_rate(p, jnp.broadcast_to(eye[i], p.shape[:-1] + (3,))) for i in range(3)]
        Gp = jnp.stack(cols, -1)  # (k, 4, 3)
        top = jnp.concatenate([jnp.broadcast_to(eye, (k, 3, 3)), jnp.zeros((k, 3, 3), q.dtype)], -1)
        bot = jnp.concatenate([jnp.zeros((k, 4, 3), q.dtype), Gp], -1)
        return jnp.concatenate([top, bot], -2)


class Particle3DNode(F.NodeFamily):
    name = "particle3d"
    nq = nv = 3
    frame = SPATIAL
    frame_q = (0, 1, 2, -1, -1, -1, -1)
    frame_v = (0, 1, 2, -1, -1, -1)
    coord_names = vel_names = ("x", "y", "z")


# ------------------------------------------------------------------------- bodies
def _sym_inverse(J):
    """Inverse of symmetric 3x3 matrices (..., 3, 3) by the adjugate, written out."""
    a, b, c = J[..., 0, 0], J[..., 0, 1], J[..., 0, 2]
    d, e, f = J[..., 1, 1], J[..., 1, 2], J[..., 2, 2]
    A = d * f - e * e
    Bc = c * e - b * f
    C = b * e - c * d
    D = a * f - c * c
    E = b * c - a * e
    Fv = a * d - b * b
    det = a * A + b * Bc + c * C
    rows = [jnp.stack([A, Bc, C], -1), jnp.stack([Bc, D, E], -1), jnp.stack([C, E, Fv], -1)]
    return jnp.stack(rows, -2) / det[..., None, None]


class SpatialMass:
    """Mass part of k spatial rigid bodies in velocity coordinates (rdot, omega_body):

        M_b = [[m I, -m R [c]x], [m [c]x R^T, J_G + m ([c]x)^T [c]x]]

    with c the CG in body coordinates and J_G the inertia about the CG (body axes). Its
    inverse in closed form: the Schur complement of m I is J_G, so
    omega = J_G^-1 (y_w - c x R^T y_r), rdot = y_r / m + R (c x omega).
    """

    def __init__(self, m, JG, c, R):
        self.m, self.JG, self.c, self.R = m, JG, c, R
        self.k = m.shape[0]

    # X (6k,) or (6k, cols) -> (k, cols..., 6) with the component axis last
    def _split(self, X):
        k = self.k
        Xb = X.reshape((k, 6) + X.shape[1:])
        return jnp.moveaxis(Xb, 1, -1)

    def _join(self, Y):
        Y = jnp.moveaxis(Y, -1, 1)
        return Y.reshape((-1,) + Y.shape[2:])

    def _bc(self, a, X):
        """Per-instance data a (k, ...) broadcast against X (k, cols..., 3)."""
        extra = X.ndim - 2
        return a.reshape(a.shape[:1] + (1,) * extra + a.shape[1:])

    def _apply_rows(self, m, JG, c, R, Xb):
        xr, xw = Xb[..., :3], Xb[..., 3:6]
        cw = cross(c, xw)
        yr = m[..., None] * (xr - mv(R, cw))
        yw = m[..., None] * cross(c, mtv(R, xr)) + mv(JG, xw) - m[..., None] * cross(c, cw)
        return jnp.concatenate([yr, yw], -1)

    def _solve_rows(self, m, JGi, c, R, Yb):
        yr, yw = Yb[..., :3], Yb[..., 3:6]
        w = mv(JGi, yw - cross(c, mtv(R, yr)))
        r = yr / m[..., None] + mv(R, cross(c, w))
        return jnp.concatenate([r, w], -1)

    def _data(self, X):
        b = lambda a: self._bc(a, X[..., :3])
        return b(self.m), b(self.JG), b(self.c), b(self.R)

    def apply(self, X):
        Xb = self._split(X)
        m, JG, c, R = self._data(Xb)
        return self._join(self._apply_rows(m, JG, c, R, Xb))

    def solve(self, X):
        Xb = self._split(X)
        m, JG, c, R = self._data(Xb)
        JGi = self._bc(_sym_inverse(self.JG), Xb[..., :3])
        return self._join(self._solve_rows(m, JGi, c, R, Xb))

    def _blocks(self, method):
        eye = jnp.eye(6, dtype=self.m.dtype)
        E = jnp.broadcast_to(eye, (self.k, 6, 6))  # (k, col, comp)
        m, JG, c, R = (a[:, None] for a in (self.m, self.JG, self.c, self.R))
        if method == "apply":
            out = self._apply_rows(m, JG, c, R, E)
        else:
            out = self._solve_rows(m, _sym_inverse(self.JG)[:, None], c, R, E)
        return jnp.swapaxes(out, 1, 2)  # (k, row, col)

    def _assemble(self, blocks):
        k = self.k
        out = jnp.zeros((6 * k, 6 * k), blocks.dtype)
        for i in range(k):
            out = out.at[6 * i: 6 * i + 6, 6 * i: 6 * i + 6].set(blocks[i])
        return out

    def dense(self):
        return self._assemble(self._blocks("apply"))

    def inverse_dense(self):
        return self._assemble(self._blocks("solve"))

    def frame_inverse(self, idx, X):
        """Per-frame M^-1 x for rows X (N, 6) on instances idx (N,) (static; -1: zero)."""
        idx = np.asarray(idx)
        sel = np.where(idx >= 0, idx, 0)
        ok = jnp.asarray(idx >= 0)
        m, JGi = self.m[sel], _sym_inverse(self.JG)[sel]
        c, R = self.c[sel], self.R[sel]
        m = jnp.where(ok, m, 1.0)
        out = self._solve_rows(m, JGi, c, R, X)
        return jnp.where(ok[:, None], out, 0.0)


class ParticleMass:
    """Mass part of k particles (3 coordinates each): m I."""

    def __init__(self, m):
        self.m = m
        self.k = m.shape[0]

    def _rep(self, X):
        return jnp.repeat(self.m, 3).reshape((-1,) + (1,) * (X.ndim - 1))

    def apply(self, X):
        return self._rep(X) * X

    def solve(self, X):
        return X / self._rep(X)

    def dense(self):
        return jnp.diag(jnp.repeat(self.m, 3))

    def inverse_dense(self):
        return jnp.diag(1.0 / jnp.repeat(self.m, 3))

    def frame_inverse(self, idx, X):
        idx = np.asarray(idx)
        sel = np.where(idx >= 0, idx, 0)
        ok = jnp.asarray(idx >= 0)
        im = jnp.where(ok, 1.0 / self.m[sel], 0.0)
        return jnp.concatenate([im[:, None] * X[:, :3], jnp.zeros_like(X[:, 3:])], -1)


class SpatialRigidBody(F.BodyFamily):
    """mass (k,) kg; inertia (k, 3, 3) kg m^2 about the CG in body axes (symmetric,
    positive definite, products of inertia allowed); cg (k, 3) m in body coordinates."""

    name = "spatial_rigid"
    node = "spatial_rigid"
    fields = ("mass", "inertia", "cg")
    field_shapes = {"inertia": (3, 3), "cg": (3,)}

    def mass_part(self, p, X):
        return SpatialMass(p["mass"], p["inertia"], p["cg"], quat_to_R(X[:, 3:7]))

    def loads(self, p, X, V, g):
        """Gravity m g at the CG and the quadratic-velocity terms
        (-m R (w x (w x c)), -w x (J_ref w)); potential -m g . r_G."""
        m, JG, c = p["mass"], p["inertia"], p["cg"]
        R = quat_to_R(X[:, 3:7])
        w = V[:, 3:6]
        gb = jnp.broadcast_to(g, c.shape)
        Fg = m[:, None] * gb
        wc = cross(w, c)
        Qr = Fg - m[:, None] * mv(R, cross(w, wc))
        Jw = mv(JG, w) + m[:, None] * cross(c, wc)  # J_ref w = J_G w - m c x (c x w)
        Qw = cross(c, mtv(R, Fg)) - cross(w, Jw)
        rG = X[:, :3] + mv(R, c)
        return jnp.concatenate([Qr, Qw], -1), -m * dot(rG, gb)

    def inertia_data(self, p):
        return p["mass"], p["inertia"], p["cg"]

    def validate(self, p, xp=np):
        """mass > 0 (kg); inertia (3, 3) about the CG symmetric, positive definite and
        obeying the triangle inequality I3 <= I1 + I2 of a physical body (as the builder).
        xp: numpy (concrete checks) or jax.numpy (traced: the PARAMS status)."""
        J = p["inertia"]
        fin = xp.all(xp.isfinite(J), axis=(-2, -1))
        Jf = xp.where(fin[..., None, None], J, xp.eye(3, dtype=J.dtype))
        big = xp.maximum(1.0, xp.max(xp.abs(Jf), axis=(-2, -1)))
        sym = xp.max(xp.abs(Jf - xp.swapaxes(Jf, -1, -2)), axis=(-2, -1)) <= 1e-12 * big
        ev = xp.linalg.eigvalsh(0.5 * (Jf + xp.swapaxes(Jf, -1, -2)))
        pd = ev[..., 0] > 0
        tri = ev[..., 2] <= ev[..., 0] + ev[..., 1] + 1e-12 * xp.abs(ev[..., 2])
        return [("mass", ~(p["mass"] > 0), "must be > 0 (kg)"),
                ("inertia", fin & ~sym, "must be a symmetric 3x3 tensor (kg m^2)"),
                ("inertia", fin & sym & ~pd, "must be positive definite (kg m^2; principal "
                                              "moments > 0)"),
                ("inertia", fin & sym & pd & ~tri, "must obey the triangle inequality "
                                                   "I3 <= I1 + I2 of a physical body")]

    # linear inertial parameters: m, m c (3), J_ref about the reference point (6)
    inertial_labels = ("m", "mcx", "mcy", "mcz", "Jxx", "Jyy", "Jzz", "Jxy", "Jxz", "Jyz")

    def to_inertial(self, p):
        m, JG, c = p["mass"], p["inertia"], p["cg"]
        c2 = dot(c, c)
        Jr = JG + m[:, None, None] * (c2[:, None, None] * jnp.eye(3, dtype=m.dtype)
                                      - c[:, :, None] * c[:, None, :])
        return jnp.stack([m, m * c[:, 0], m * c[:, 1], m * c[:, 2], Jr[:, 0, 0], Jr[:, 1, 1],
                          Jr[:, 2, 2], Jr[:, 0, 1], Jr[:, 0, 2], Jr[:, 1, 2]], -1)

    def from_inertial(self, x):
        m, h = x[:, 0], x[:, 1:4]
        c = h / m[:, None]
        Jr = jnp.stack([jnp.stack([x[:, 4], x[:, 7], x[:, 8]], -1),
                        jnp.stack([x[:, 7], x[:, 5], x[:, 9]], -1),
                        jnp.stack([x[:, 8], x[:, 9], x[:, 6]], -1)], -2)
        c2 = dot(c, c)
        JG = Jr - m[:, None, None] * (c2[:, None, None] * jnp.eye(3, dtype=m.dtype)
                                      - c[:, :, None] * c[:, None, :])
        return {"mass": m, "cg": c, "inertia": JG}


class Particle3DBody(F.PointMassBody):
    """mass (k,) kg."""

    name = "particle3d"
    node = "particle3d"

    def mass_part(self, p, X):
        return ParticleMass(p["mass"])

    def loads(self, p, X, V, g):
        m = p["mass"]
        gb = jnp.broadcast_to(g, X.shape)
        return m[:, None] * gb, -m * dot(X, gb)

    def inertia_data(self, p):
        m = p["mass"]
        return m, jnp.zeros(m.shape + (3, 3), m.dtype), jnp.zeros(m.shape + (3,), m.dtype)
