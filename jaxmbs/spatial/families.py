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

from ..core import families as F
from . import geometry as g3
from .frames import Particle3DBody, Particle3DNode, SpatialFrame, SpatialRigidBody, SpatialRigidNode
from .geometry import cross, dot, mtv, mv
from .rotors import JointRotor, RotorBody, RotorNode
from .rows import _dot1_parts, _dot2_parts, _Side, _Spatial


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


for _f in (SpatialFrame(), SpatialRigidNode(), Particle3DNode(), SpatialRigidBody(),
           Particle3DBody(), Sph(), Dot1(), Dot2(), Dist3(), RotDriver(), DiscContact(),
           DiscNoSlip(), RotorNode(), RotorBody(), JointRotor(), PointOnCylinder()):
    F.register(_f)
