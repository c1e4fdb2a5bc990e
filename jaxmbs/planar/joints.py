"""Joint (constraint) families of the planar engine.

Each family maps a batch of k instances to r rows each:

    evaluate(p, Xi, Xj, Vi, Vj) -> (g, Gi, Gj, quad)

with Xi, Xj (k, 3) the coordinates of the two frames, Vi, Vj their velocities,
g (k, r) the position-level rows, Gi, Gj (k, r, 3) the analytic Jacobian blocks
dg/dX, and quad (k, r) = (g_q v)_q v, the part of g'' that does not involve the
accelerations. A driven row is Phi = g - f(t), so gamma = -quad + f''(t).
Analytic forms follow Nikravesh, *Computer-Aided Analysis of Mechanical Systems*, ch. 3-4;
the tests check every one against jax.jacfwd and jax.jvp of g.
"""
import jax.numpy as jnp

from ..core import families as F
from .geometry import dot, perp, point, point_jacobian, point_velocity, rotate, row_jacobian, safe_length


class _Planar(F.ConstraintFamily):
    frame = "planar"


class Coincident(_Planar):
    """Revolute: point s_i on frame i coincides with point s_j on frame j (2 rows)."""

    name = "coincident"
    rows = 2
    fields = ('point_i', 'point_j')

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        Pi, Ai = point(Xi, p["point_i"])
        Pj, Aj = point(Xj, p["point_j"])
        g = Pi - Pj
        Gi = point_jacobian(Ai, 1.0)
        Gj = point_jacobian(Aj, -1.0)
        quad = -Ai * Vi[:, 2:3] ** 2 + Aj * Vj[:, 2:3] ** 2
        return g, Gi, Gj, quad


class Angle(_Planar):
    """Relative angle theta_j - theta_i (1 row); with i = ground, the absolute angle."""

    name = "angle"
    rows = 1
    fields = ()
    driven = True

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        k = Xi.shape[0]
        g = (Xj[:, 2] - Xi[:, 2])[:, None]
        e = jnp.zeros((k, 1, 3), Xi.dtype).at[:, 0, 2].set(1.0)
        return g, -e, e, jnp.zeros((k, 1), Xi.dtype)


class Line(_Planar):
    """Projection w . (P_j - P_i) of the separation on a direction w fixed in frame i (1 row).

    With w perpendicular to a slide axis it keeps P_j on the line through P_i (the
    point-on-line part of a prismatic joint); with w along the axis it is the joint
    displacement that a linear driver prescribes.
    """

    name = "line"
    rows = 1
    fields = ('point_i', 'point_j', 'direction')
    driven = True

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        Pi, Ai = point(Xi, p["point_i"])
        Pj, Aj = point(Xj, p["point_j"])
        w = rotate(Xi[:, 2], p["direction"])
        d = Pj - Pi
        g = dot(w, d)
        Gj = row_jacobian(w, Aj, 1.0)
        Gi = row_jacobian(w, Ai, -1.0).at[:, 2].add(dot(perp(w), d))
        wi = Vi[:, 2]
        dd = point_velocity(Vj, Aj) - point_velocity(Vi, Ai)
        quad = (
            -dot(w, d) * wi**2
            + 2.0 * wi * dot(perp(w), dd)
            + dot(w, -Aj * Vj[:, 2:3] ** 2 + Ai * Vi[:, 2:3] ** 2)
        )
        return g[:, None], Gi[:, None, :], Gj[:, None, :], quad[:, None]


class Distance(_Planar):
    """Distance |P_j - P_i| between two points (1 row): a massless rod, or a linear actuator.

    At zero distance the direction is undefined: the row's Jacobian is then 0 (the saddle
    solve flags SINGULAR) but values and derivatives stay finite."""

    name = "distance"
    rows = 1
    fields = ('point_i', 'point_j')
    driven = True

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        Pi, Ai = point(Xi, p["point_i"])
        Pj, Aj = point(Xj, p["point_j"])
        d = Pj - Pi
        ell, u, ell_s = safe_length(d)
        Gj = row_jacobian(u, Aj, 1.0)
        Gi = row_jacobian(u, Ai, -1.0)
        dd = point_velocity(Vj, Aj) - point_velocity(Vi, Ai)
        ud = dot(u, dd)
        quad = (dot(dd, dd) - ud**2) / ell_s + dot(u, -Aj * Vj[:, 2:3] ** 2 + Ai * Vi[:, 2:3] ** 2)
        return ell[:, None], Gi[:, None, :], Gj[:, None, :], quad[:, None]


class Gear(_Planar):
    """Gear pair theta_j - ratio * theta_i = offset (1 row), absolute angles.

    ratio: signed speed ratio omega_j / omega_i (external pair -r_i / r_j, internal
    +r_i / r_j). Exact for gears whose centres do not move relative to each other's
    frame of reference for angles, i.e. both pivot on the ground (or on non-rotating bodies).
    """

    name = "gear"
    rows = 1
    fields = ('ratio', 'offset')

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        k = Xi.shape[0]
        tau = p["ratio"]
        g = (Xj[:, 2] - tau * Xi[:, 2] - p["offset"])[:, None]
        z = jnp.zeros((k, 1, 3), Xi.dtype)
        return g, z.at[:, 0, 2].set(-tau), z.at[:, 0, 2].set(1.0), jnp.zeros((k, 1), Xi.dtype)


def _roll_row(p, Xi, Xj, Vi, Vj):
    """No-slip row u . (P_j - P_i) + r (theta_j - theta_i) - offset, u = A_i axis.

    P_i is a point of the pitch line (rack / rolling line) fixed in frame i, P_j the
    pinion / disc centre on frame j, r its radius; the disc lies on the +perp(u) side.
    Its time derivative is exactly the slip velocity at the contact point along u
    (Nikravesh ch. 4 for the rack; here also with a rotating frame i).
    """
    Pi, Ai = point(Xi, p["point_i"])
    Pj, Aj = point(Xj, p["point_j"])
    u = rotate(Xi[:, 2], p["axis"])
    r = p["radius"]
    d = Pj - Pi
    g = dot(u, d) + r * (Xj[:, 2] - Xi[:, 2]) - p["offset"]
    Gj = row_jacobian(u, Aj, 1.0).at[:, 2].add(r)
    Gi = row_jacobian(u, Ai, -1.0).at[:, 2].add(dot(perp(u), d) - r)
    wi = Vi[:, 2]
    dd = point_velocity(Vj, Aj) - point_velocity(Vi, Ai)
    quad = (-dot(u, d) * wi**2 + 2.0 * wi * dot(perp(u), dd)
            + dot(u, -Aj * Vj[:, 2:3] ** 2 + Ai * Vi[:, 2:3] ** 2))
    return g, Gi, Gj, quad, (Pi, Ai, Pj, Aj, u, d, dd)


class RackPinion(_Planar):
    """Rack (frame i, pitch line through point_i along axis) and pinion (frame j, centre
    point_j, pitch radius `radius`): u . (P_j - P_i) + r (theta_j - theta_i) = offset (1 row),
    i.e. the rack displacement s = r theta + const for a fixed pinion centre."""

    name = "rack_pinion"
    rows = 1
    fields = ('point_i', 'point_j', 'axis', 'radius', 'offset')

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        g, Gi, Gj, quad, _ = _roll_row(p, Xi, Xj, Vi, Vj)
        return g[:, None], Gi[:, None, :], Gj[:, None, :], quad[:, None]


class Rolling(_Planar):
    """Disc (frame j, centre point_j, radius r) rolling without slip on a straight line
    fixed in frame i (through point_i along axis u, disc on the +perp(u) side), 2 rows:
    contact n . (P_j - P_i) - r = 0 with n = perp(u), and the no-slip row of `rack_pinion`."""

    name = "rolling"
    rows = 2
    fields = ('point_i', 'point_j', 'axis', 'radius', 'offset')

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        g1, Gi1, Gj1, quad1, (Pi, Ai, Pj, Aj, u, d, dd) = _roll_row(p, Xi, Xj, Vi, Vj)
        n = perp(u)
        g0 = dot(n, d) - p["radius"]
        Gj0 = row_jacobian(n, Aj, 1.0)
        Gi0 = row_jacobian(n, Ai, -1.0).at[:, 2].add(dot(perp(n), d))
        wi = Vi[:, 2]
        quad0 = (-dot(n, d) * wi**2 + 2.0 * wi * dot(perp(n), dd)
                 + dot(n, -Aj * Vj[:, 2:3] ** 2 + Ai * Vi[:, 2:3] ** 2))
        g = jnp.stack([g0, g1], 1)
        return g, jnp.stack([Gi0, Gi1], 1), jnp.stack([Gj0, Gj1], 1), jnp.stack([quad0, quad1], 1)


class KnifeEdge(_Planar):
    """Knife edge (nonholonomic, velocity level only, 1 row): the blade point P_j = r_j +
    A_j point_j of frame j has no velocity across the blade axis n-perp, relative to the
    material point of frame i under it:

        n . (P_j_dot - r_i_dot - theta_i_dot perp(P_j - r_i)) = 0,   n = perp(A_j axis).

    Returned in the family form with g = 0 (no position-level row), Gi, Gj the blocks of
    A(q) (so that A v is the row) and quad = (A(q) v)_q v, gamma = -quad.
    """

    name = "knife_edge"
    rows = 1
    fields = ('point_j', 'axis')
    nonholonomic = True  # rows only at the velocity level (A(q) v = b): no position residual

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        k = Xi.shape[0]
        Pj, Aj = point(Xj, p["point_j"])
        n = perp(rotate(Xj[:, 2], p["axis"]))
        d = Pj - Xi[:, :2]
        Gj = row_jacobian(n, Aj, 1.0)
        Gi = -jnp.concatenate([n, dot(n, perp(d))[:, None]], -1)
        wi, wj = Vi[:, 2], Vj[:, 2]
        pd = point_velocity(Vj, Aj)
        rel = pd - Vi[:, :2]
        pn = perp(n)
        quad = (wj * dot(pn, rel) - wj**2 * dot(n, Aj) - wi * wj * dot(n, d) - wi * dot(n, perp(rel)))
        return (jnp.zeros((k, 1), Xi.dtype), Gi[:, None, :], Gj[:, None, :], quad[:, None])



class Cam(_Planar):
    """Cam (curve-on-curve): curve r_i(s_i) on frame i and r_j(s_j) on frame j in permanent
    tangent contact (3 rows): P_i(s_i) - P_j(s_j) = 0 (2) and cross(t_i, t_j) = 0 (1),
    with P = R + A r(s) and t = A r'(s). Frictionless: the curves slide on each other.

    A family with extra (massless) coordinates: S, Sd (k, 2) are (s_i, s_j) and their
    rates; static = (codes_i, codes_j), the curves' static (kind, size) codes
    (`jaxmbs.planar.curves`); p['data_i'], p['data_j'] (k, D) their numbers.
    Returns (g, Gi, Gj, quad, Gs) with Gs (k, 3, 2) = dg/d(s_i, s_j); quad includes the
    curvature terms (r'') and, in the tangent row, its rate (third derivative of r).
    """

    name = "cam"
    rows = 3
    fields = ('data_i', 'data_j')
    extra = 2  # massless extra coordinates per instance (s_i, s_j)

    def evaluate(self, p, Xi, Xj, Vi, Vj, S, Sd, static):
        from .curves import evaluate
        from .geometry import cross

        codes_i, codes_j = static
        si, sj, sid, sjd = S[:, 0], S[:, 1], Sd[:, 0], Sd[:, 1]
        ri, r1i, r2i, r3i = evaluate(codes_i, p["data_i"], si)
        rj, r1j, r2j, r3j = evaluate(codes_j, p["data_j"], sj)
        thi, thj = Xi[:, 2], Xj[:, 2]
        wi, wj = Vi[:, 2], Vj[:, 2]
        Ari, Arj = rotate(thi, ri), rotate(thj, rj)
        ti, tj = rotate(thi, r1i), rotate(thj, r1j)  # tangents A r'
        ki, kj = rotate(thi, r2i), rotate(thj, r2j)  # A r''
        li, lj = rotate(thi, r3i), rotate(thj, r3j)  # A r3 (third derivative of r)
        k = Xi.shape[0]
        # rows 0, 1: coincident contact points
        g01 = Xi[:, :2] + Ari - Xj[:, :2] - Arj
        Gi01 = point_jacobian(Ari, 1.0)
        Gj01 = point_jacobian(Arj, -1.0)

        def acc(Ar, t, kk, w, sd):  # P'' at qdd = 0: -A r w^2 + 2 perp(A r') w sd + A r'' sd^2
            return -Ar * w[:, None] ** 2 + 2.0 * perp(t) * (w * sd)[:, None] + kk * sd[:, None] ** 2

        quad01 = acc(Ari, ti, ki, wi, sid) - acc(Arj, tj, kj, wj, sjd)
        # row 2: cross(t_i, t_j)
        g2 = cross(ti, tj)
        z = jnp.zeros_like(g2)
        Gi2 = jnp.stack([z, z, cross(perp(ti), tj)], -1)
        Gj2 = jnp.stack([z, z, cross(ti, perp(tj))], -1)
        # t_dot = perp(t) w + A r'' sd;  t_ddot at qdd = 0 = -t w^2 + 2 perp(A r'') w sd + A r3 sd^2
        tdi = perp(ti) * wi[:, None] + ki * sid[:, None]
        tdj = perp(tj) * wj[:, None] + kj * sjd[:, None]
        tddi = -ti * wi[:, None] ** 2 + 2.0 * perp(ki) * (wi * sid)[:, None] + li * sid[:, None] ** 2
        tddj = -tj * wj[:, None] ** 2 + 2.0 * perp(kj) * (wj * sjd)[:, None] + lj * sjd[:, None] ** 2
        quad2 = cross(tddi, tj) + 2.0 * cross(tdi, tdj) + cross(ti, tddj)
        g = jnp.concatenate([g01, g2[:, None]], -1)
        Gi = jnp.concatenate([Gi01, Gi2[:, None, :]], 1)
        Gj = jnp.concatenate([Gj01, Gj2[:, None, :]], 1)
        quad = jnp.concatenate([quad01, quad2[:, None]], -1)
        Gs = jnp.zeros((k, 3, 2), Xi.dtype)
        Gs = Gs.at[:, 0:2, 0].set(ti).at[:, 0:2, 1].set(-tj)
        Gs = Gs.at[:, 2, 0].set(cross(ki, tj)).at[:, 2, 1].set(cross(ti, kj))
        return g, Gi, Gj, quad, Gs


def cam_contact(p, Xi, S, static):
    """Contact point (k, 2) (global, m) and unit normal n_i (k, 2) of curve i at s_i: the
    right-hand normal -perp(t_i)/|t_i| (outward for a counter-clockwise closed curve), so
    that n_i . lam[0:2] is the force with which body i pushes body j (N, > 0 pushing)."""
    from .curves import evaluate

    ri, r1i, _, _ = evaluate(static[0], p["data_i"], S[:, 0])
    P = Xi[:, :2] + rotate(Xi[:, 2], ri)
    t = rotate(Xi[:, 2], r1i)
    n = -perp(t) / jnp.sqrt(dot(t, t))[:, None]
    return P, n
