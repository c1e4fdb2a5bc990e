"""The spatial (3D) families, registered with the core (`jaxmbs.core.families`).

Frame kind 'spatial': X = (r (3,), p (4,)) with p a unit quaternion (w, x, y, z),
V = (rdot (3,), omega (3,)) with omega in BODY axes. Node families 'spatial_rigid'
(7 coordinates, 6 velocity coordinates: qdot = (rdot, p (x) (0, omega) / 2), update
q (+) dv by the quaternion exponential map) and 'particle3d' (3 / 3).

Constraint families are Haug's basic constraints, vectorised over instances; the joints
of `jaxmbs.SpatialModel` are compositions of them:

  sph          P_i - P_j = 0 (3 rows): spherical joint, and the point part of revolute,
               universal and weld joints
  dot1         a_i . b_j = 0 (1 row): two body-fixed directions perpendicular
  dot2         a_i . (P_j - P_i) - f(t) = 0 (1 row): point on a plane / line, prismatic
               displacement (driven)
  dist3        |P_j - P_i| - f(t) = 0 (1 row): massless rod, linear actuator
  rot_driver   sin(theta - f(t)) = 0 (1 row): the rotation theta of body j relative to
               body i about a revolute axis, from the initial configuration
  disc_contact a thin disc touches a plane (1 row, holonomic)
  disc_no_slip the disc's contact point has no velocity in the plane (2 rows,
               nonholonomic)
  joint_rotor  a rotor coordinate (node family 'rotor', body family 'rotor': an armature
               inertia) follows a revolute's angle or a prismatic's displacement (1 row,
               one extra coordinate per instance)

Every family returns its rows' Jacobian blocks with respect to the frames' velocity
coordinates (rdot, omega), and quad = d/dt of the rows at zero acceleration, written from
a few vector quantities (a body point or direction: value, rate, and acceleration at zero
acceleration): the row of a . b has Jacobian b^T J_a + a^T J_b and
quad a . b_q + b . a_q + 2 adot . bdot. tests/families checks every family against
autodiff of the row functions.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..core import families as F
from . import geometry as g3
from .geometry import cross, dot, mtv, mv, quat_to_R

__all__ = ["SPATIAL", "SpatialMass"]

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


class Sph(_Spatial):
    """P_i - P_j = 0 (3 rows): point_i (k, 3) on frame i and point_j on frame j, body
    coordinates (m)."""

    name = "sph"
    rows = 3
    fields = ("point_i", "point_j")

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        si, sj = _Side(Xi, Vi), _Side(Xj, Vj)
        Pi, _, Piq = si.point(p["point_i"])
        Pj, _, Pjq = sj.point(p["point_j"])
        eye = jnp.eye(3, dtype=Xi.dtype)
        Gi = jnp.stack([si.row_point(p["point_i"], jnp.broadcast_to(eye[m], Pi.shape))
                        for m in range(3)], 1)
        Gj = jnp.stack([-sj.row_point(p["point_j"], jnp.broadcast_to(eye[m], Pj.shape))
                        for m in range(3)], 1)
        return Pi - Pj, Gi, Gj, Piq - Pjq


class Dot1(_Spatial):
    """a_i . b_j = 0 (1 row): body directions a_i (frame i) and b_j (frame j), unit
    vectors in body coordinates (perpendicular axes; two rows make parallel axes)."""

    name = "dot1"
    rows = 1
    fields = ("a_i", "b_j")

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        g, Gi, Gj, quad = _dot1_parts(_Side(Xi, Vi), _Side(Xj, Vj), p["a_i"], p["b_j"])
        return g[:, None], Gi[:, None], Gj[:, None], quad[:, None]


class Dot2(_Spatial):
    """a_i . (P_j - P_i) - f(t) = 0 (1 row): a body direction a_i of frame i (unit), points
    point_i, point_j (body coordinates, m). Constant f: point on a plane / line; driven f:
    the displacement of a prismatic joint."""

    name = "dot2"
    rows = 1
    fields = ("a_i", "point_i", "point_j")
    driven = True

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        g, Gi, Gj, quad = _dot2_parts(_Side(Xi, Vi), _Side(Xj, Vj), p["a_i"], p["point_i"],
                                      p["point_j"])
        return g[:, None], Gi[:, None], Gj[:, None], quad[:, None]


class Dist3(_Spatial):
    """|P_j - P_i| - f(t) = 0 (1 row): a massless rod (constant f) or a linear actuator.
    At zero distance the Jacobian is 0 (the saddle solve flags SINGULAR)."""

    name = "dist3"
    rows = 1
    fields = ("point_i", "point_j")
    driven = True

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        si, sj = _Side(Xi, Vi), _Side(Xj, Vj)
        Pi, Pid, Piq = si.point(p["point_i"])
        Pj, Pjd, Pjq = sj.point(p["point_j"])
        d, dd, dq = Pj - Pi, Pjd - Pid, Pjq - Piq
        ell, ns = g3.safe_norm(d)
        u = g3.unit(d)
        Gi = -si.row_point(p["point_i"], u)
        Gj = sj.row_point(p["point_j"], u)
        ud = dot(u, dd)
        quad = (dot(dd, dd) - ud * ud) / ns + dot(u, dq)
        return ell[:, None], Gi[:, None], Gj[:, None], quad[:, None]


class PointOnCylinder(_Spatial):
    """A point of frame j on a cylinder of frame i (1 row): the distance of P_j from the
    axis through P_i along a_i equals `radius`, written as

        g = (|d|^2 - (A . d)^2 - radius^2) / (2 radius),   d = P_j - P_i,  A = R_i a_i

    (zero on the cylinder, its gradient there that of the distance itself). point_i (k, 3)
    on the axis and point_j (k, 3), body coordinates (m); a_i (k, 3) the axis, a unit vector
    in body i's coordinates; radius (k,) m. On the axis (|d - (A . d) A| = 0) the row has
    no gradient (the saddle solve flags SINGULAR)."""

    name = "cyl_point"
    rows = 1
    fields = ("point_i", "a_i", "point_j", "radius")

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        si, sj = _Side(Xi, Vi), _Side(Xj, Vj)
        A, Ad, Aq = si.direction(p["a_i"])
        Pi, Pid, Piq = si.point(p["point_i"])
        Pj, Pjd, Pjq = sj.point(p["point_j"])
        d, dd, dq = Pj - Pi, Pjd - Pid, Pjq - Piq
        R = p["radius"]
        h, hd = dot(A, d), dot(Ad, d) + dot(A, dd)  # the axial coordinate and its rate
        hq = dot(A, dq) + dot(d, Aq) + 2.0 * dot(Ad, dd)  # its second derivative at zero acc.
        g = (dot(d, d) - h * h - R * R) / (2.0 * R)
        # dg = (d . dd - h dh) / R; dh's blocks: the point-on-plane row's (`_dot2_parts`)
        Gi = (-si.row_point(p["point_i"], d)
              - h[:, None] * (si.row_dir(p["a_i"], d) - si.row_point(p["point_i"], A))) / R[:, None]
        Gj = (sj.row_point(p["point_j"], d) - h[:, None] * sj.row_point(p["point_j"], A)) / R[:, None]
        quad = (dot(dd, dd) + dot(d, dq) - hd * hd - h * hq) / R
        return g[:, None], Gi[:, None], Gj[:, None], quad[:, None]


class RotDriver(_Spatial):
    """Prescribed rotation theta(t) of frame j relative to frame i about a revolute axis
    (1 row): sin(theta - f(t)) = 0 with cos(theta) = f_i . f_j, sin(theta) = g_i . f_j;
    f_i, g_i (frame i) and f_j (frame j) unit vectors perpendicular to the axis,
    g_i = axis x f_i, f_j = f_i at the initial configuration (theta = 0 there). Its
    multiplier is the driving torque: effort = -lam acts on body j about the axis."""

    name = "rot_driver"
    rows = 1
    fields = ("f_i", "g_i", "f_j")
    driven = True
    custom_time = True

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        """The rows at f = 0 (the angle's sine), for conformance checks."""
        k = Xi.shape[0]
        z = jnp.zeros((k,), Xi.dtype)
        phi, Gi, Gj, _, gamma = self.evaluate_driven(p, Xi, Xj, Vi, Vj, z, z, z)
        return phi, Gi, Gj, -gamma

    def evaluate_driven(self, p, Xi, Xj, Vi, Vj, f, fd, fdd):
        si, sj = _Side(Xi, Vi), _Side(Xj, Vj)
        C, GCi, GCj, Cq = _dot1_parts(si, sj, p["f_i"], p["f_j"])
        S, GSi, GSj, Sq = _dot1_parts(si, sj, p["g_i"], p["f_j"])
        cf, sf = jnp.cos(f), jnp.sin(f)
        phi = S * cf - C * sf
        Gi = cf[:, None] * GSi - sf[:, None] * GCi
        Gj = cf[:, None] * GSj - sf[:, None] * GCj
        Sd = si.rate(GSi) + sj.rate(GSj)
        Cd = si.rate(GCi) + sj.rate(GCj)
        cos_e = S * sf + C * cf  # cos(theta - f)
        phit = -fd * cos_e
        phidd = (cf * Sq - sf * Cq - 2.0 * fd * (sf * Sd + cf * Cd) - fdd * cos_e
                 - fd * fd * phi)
        return phi[:, None], Gi[:, None], Gj[:, None], phit[:, None], -phidd[:, None]


class DiscContact(_Spatial):
    """A thin disc (frame j: centre point_j, axle a_j unit, body coordinates; radius)
    touching a plane of frame i (through point_i with unit normal n_i, disc on the +n
    side) (1 row): n . (C - P0) - r sqrt(1 - (n . a)^2) = 0."""

    name = "disc_contact"
    rows = 1
    fields = ("point_i", "n_i", "point_j", "a_j", "radius")

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        si, sj = _Side(Xi, Vi), _Side(Xj, Vj)
        al, Gai, Gaj, aq = _dot1_parts(si, sj, p["n_i"], p["a_j"])
        n, nd, nq = si.direction(p["n_i"])
        P0, P0d, P0q = si.point(p["point_i"])
        Cc, Cd, Cq = sj.point(p["point_j"])
        d, dd, dq = Cc - P0, Cd - P0d, Cq - P0q
        be = dot(n, d)
        Gbi = si.row_dir(p["n_i"], d) - si.row_point(p["point_i"], n)
        Gbj = sj.row_point(p["point_j"], n)
        bq = dot(n, dq) + dot(d, nq) + 2.0 * dot(nd, dd)
        r = p["radius"]
        s = jnp.sqrt(1.0 - al * al)
        g = be - r * s
        c1 = r * al / s
        Gi = Gbi + c1[:, None] * Gai
        Gj = Gbj + c1[:, None] * Gaj
        ald = si.rate(Gai) + sj.rate(Gaj)
        quad = bq + r * (ald * ald + al * aq) / s + r * al * al * ald * ald / s**3
        return g[:, None], Gi[:, None], Gj[:, None], quad[:, None]


def _disc_frame(si, sj, p):
    """Contact geometry: n, axle a (global), e1 = unit(a x n) (rolling direction),
    e2 = n x e1, contact point K = C - r w / |w| with w = n - (n . a) a."""
    n = mv(si.R, p["n_i"])
    a = mv(sj.R, p["a_j"])
    Cc = sj.r + mv(sj.R, p["point_j"])
    w = n - dot(n, a)[:, None] * a
    K = Cc - p["radius"][:, None] * g3.unit(w)
    e1 = g3.unit(cross(a, n))
    e2 = cross(n, e1)
    return n, a, K, e1, e2


class DiscNoSlip(_Spatial):
    """No slip of a thin disc on a plane (2 nonholonomic rows): the velocity of the disc's
    material point at the contact point K, relative to the plane's material point there,
    has no component along e1 = unit(a x n) (rolling direction) nor e2 = n x e1 (lateral).
    Fields as `DiscContact`. The normal component is the derivative of the contact row."""

    name = "disc_no_slip"
    rows = 2
    fields = ("point_i", "n_i", "point_j", "a_j", "radius")
    nonholonomic = True

    def _rows(self, p, Xi, Xj, Vi, Vj):
        si, sj = _Side(Xi, Vi), _Side(Xj, Vj)
        n, a, K, e1, e2 = _disc_frame(si, sj, p)
        dj = mtv(sj.R, K - sj.r)  # K in body-j coordinates (instantaneous)
        di = mtv(si.R, K - si.r)
        Gi = jnp.stack([-si.row_point(di, e1), -si.row_point(di, e2)], 1)
        Gj = jnp.stack([sj.row_point(dj, e1), sj.row_point(dj, e2)], 1)
        return Gi, Gj

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        Gi, Gj = self._rows(p, Xi, Xj, Vi, Vj)
        nf = SpatialRigidNode()

        def av(xi, xj):  # A(q) v at fixed v, one call for all instances
            gi, gj = self._rows(p, xi, xj, Vi, Vj)
            return jnp.sum(gi * Vi[:, None, :], -1) + jnp.sum(gj * Vj[:, None, :], -1)

        # quad = d/dt (A(q) v) at fixed v, along qdot = T(q) v (frames' kinematic map)
        _, quad = jax.jvp(av, (Xi, Xj), (nf.qdot(Xi, Vi), nf.qdot(Xj, Vj)))
        g = jnp.zeros(quad.shape, Xi.dtype)
        return g, Gi, Gj, quad


# --------------------------------------------------- joint rotors (armature inertia)
class RotorNode(F.NodeFamily):
    """A joint rotor's coordinate (one scalar, no frame): the angle (rad) of a revolute
    joint or the displacement (m) of a prismatic one that carries an armature (reflected
    rotor inertia), measured from the initial configuration; kept equal to the joint's
    own coordinate by a `joint_rotor` row."""

    name = "rotor"
    nq = nv = 1
    coord_names = vel_names = ("",)


class RotorMass:
    """Mass part of k rotors: diag(inertia) (kg m^2 for rotation, kg for translation)."""

    def __init__(self, a):
        self.a = a
        self.k = a.shape[0]

    def _col(self, X):
        return self.a.reshape((-1,) + (1,) * (X.ndim - 1))

    def apply(self, X):
        return self._col(X) * X

    def solve(self, X):
        return X / self._col(X)

    def dense(self):
        return jnp.diag(self.a)

    def inverse_dense(self):
        return jnp.diag(1.0 / self.a)

    def frame_inverse(self, idx, X):
        idx = np.asarray(idx)
        ok = jnp.asarray(idx >= 0)
        ia = jnp.where(ok, 1.0 / self.a[np.where(idx >= 0, idx, 0)], 0.0)
        return ia[:, None] * X


class RotorBody(F.BodyFamily):
    """inertia (k,): the armature of a joint, kinetic energy inertia * sdot^2 / 2 with s
    the rotor coordinate (MuJoCo's `armature`: inertia added in joint space, e.g. a
    motor's rotor inertia times the gear ratio squared). No gravity, no velocity terms."""

    name = "rotor"
    node = "rotor"
    fields = ("inertia",)

    def mass_part(self, p, X):
        return RotorMass(p["inertia"])

    def loads(self, p, X, V, g):
        a = p["inertia"]
        return jnp.zeros((a.shape[0], 1), a.dtype), jnp.zeros_like(a)

    def inertia_data(self, p):
        a = p["inertia"]
        return a, jnp.zeros(a.shape + (3, 3), a.dtype), jnp.zeros(a.shape + (3,), a.dtype)


def _hinge_parts(si, sj, p):
    """cos and sin of the rotation theta of frame j relative to frame i about a revolute
    axis (f_i, g_i on frame i, f_j on frame j, f_j = f_i at theta = 0): two tuples
    (value, Gi, Gj, quad)."""
    return _dot1_parts(si, sj, p["f_i"], p["f_j"]), _dot1_parts(si, sj, p["g_i"], p["f_j"])


JOINT_KINDS = ("hinge", "slide")


def joint_kind_mask(static_kinds):
    """(k,) bool: True for 'hinge' instances (rotation), False for 'slide' (translation)."""
    kinds = np.asarray(static_kinds)
    bad = set(kinds.tolist()) - set(JOINT_KINDS)
    if bad:
        raise ValueError(f"unknown joint coordinate kind(s) {sorted(bad)}; expected {JOINT_KINDS}")
    return kinds == "hinge"


class JointRotor(_Spatial):
    """The rotor coordinate s (one extra coordinate per instance, node family 'rotor')
    follows a joint coordinate (1 row):

      'hinge': sin(theta - s) = 0, written S cos s - C sin s with C = f_i . f_j,
               S = g_i . f_j (theta: rotation of frame j relative to frame i about the
               axis, 0 in the initial configuration; no wrap-around at +-pi);
      'slide': a_i . (P_j - P_i) - offset - s = 0 (offset: the initial value of
               a_i . (P_j - P_i), m).

    static: (kinds,) one of 'hinge' / 'slide' per instance; both sets of fields are
    present for every instance (unused ones may be anything finite). The row's multiplier
    is the torque (force) that drives the rotor: armature * sddot."""

    name = "joint_rotor"
    rows = 1
    extra = 1
    fields = ("f_i", "g_i", "f_j", "a_i", "point_i", "point_j", "offset")

    def evaluate(self, p, Xi, Xj, Vi, Vj, S, Sd, static):
        si, sj = _Side(Xi, Vi), _Side(Xj, Vj)
        s, sd = S[:, 0], Sd[:, 0]
        (C, GCi, GCj, Cq), (Sn, GSi, GSj, Sq) = _hinge_parts(si, sj, p)
        cf, sf = jnp.cos(s), jnp.sin(s)
        ph = Sn * cf - C * sf
        Ghi = cf[:, None] * GSi - sf[:, None] * GCi
        Ghj = cf[:, None] * GSj - sf[:, None] * GCj
        Ghs = -(Sn * sf + C * cf)
        Sdot = si.rate(GSi) + sj.rate(GSj)
        Cdot = si.rate(GCi) + sj.rate(GCj)
        qh = cf * Sq - sf * Cq - 2.0 * sd * (sf * Sdot + cf * Cdot) - sd * sd * ph
        g2, G2i, G2j, q2 = _dot2_parts(si, sj, p["a_i"], p["point_i"], p["point_j"])
        pt = g2 - p["offset"] - s
        hinge = jnp.asarray(joint_kind_mask(static[0]))
        sel = lambda a, b: jnp.where(hinge.reshape((-1,) + (1,) * (a.ndim - 1)), a, b)
        phi = sel(ph, pt)
        Gi, Gj = sel(Ghi, G2i), sel(Ghj, G2j)
        Gs = sel(Ghs, -jnp.ones_like(pt))
        quad = sel(qh, q2)
        return phi[:, None], Gi[:, None], Gj[:, None], quad[:, None], Gs[:, None, None]

    @staticmethod
    def sample_static(k):
        """Static data for conformance tests: alternating kinds."""
        return (tuple(JOINT_KINDS[i % 2] for i in range(k)),)


for _f in (SpatialFrame(), SpatialRigidNode(), Particle3DNode(), SpatialRigidBody(),
           Particle3DBody(), Sph(), Dot1(), Dot2(), Dist3(), RotDriver(), DiscContact(),
           DiscNoSlip(), RotorNode(), RotorBody(), JointRotor(), PointOnCylinder()):
    F.register(_f)
