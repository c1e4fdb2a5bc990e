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

from .geometry import dot, perp, point, point_jacobian, point_velocity, row_jacobian, rotate


def coincident(p, Xi, Xj, Vi, Vj):
    """Revolute: point s_i on frame i coincides with point s_j on frame j (2 rows)."""
    Pi, Ai = point(Xi, p["point_i"])
    Pj, Aj = point(Xj, p["point_j"])
    g = Pi - Pj
    Gi = point_jacobian(Ai, 1.0)
    Gj = point_jacobian(Aj, -1.0)
    quad = -Ai * Vi[:, 2:3] ** 2 + Aj * Vj[:, 2:3] ** 2
    return g, Gi, Gj, quad


def angle(p, Xi, Xj, Vi, Vj):
    """Relative angle theta_j - theta_i (1 row); with i = ground, the absolute angle."""
    k = Xi.shape[0]
    g = (Xj[:, 2] - Xi[:, 2])[:, None]
    e = jnp.zeros((k, 1, 3), Xi.dtype).at[:, 0, 2].set(1.0)
    return g, -e, e, jnp.zeros((k, 1), Xi.dtype)


def line(p, Xi, Xj, Vi, Vj):
    """Projection w . (P_j - P_i) of the separation on a direction w fixed in frame i (1 row).

    With w perpendicular to a slide axis it keeps P_j on the line through P_i (the
    point-on-line part of a prismatic joint); with w along the axis it is the joint
    displacement that a linear driver prescribes.
    """
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


def distance(p, Xi, Xj, Vi, Vj):
    """Distance |P_j - P_i| between two points (1 row): a massless rod, or a linear actuator."""
    Pi, Ai = point(Xi, p["point_i"])
    Pj, Aj = point(Xj, p["point_j"])
    d = Pj - Pi
    ell = jnp.sqrt(dot(d, d))
    u = d / ell[:, None]
    Gj = row_jacobian(u, Aj, 1.0)
    Gi = row_jacobian(u, Ai, -1.0)
    dd = point_velocity(Vj, Aj) - point_velocity(Vi, Ai)
    ud = dot(u, dd)
    quad = (dot(dd, dd) - ud**2) / ell + dot(u, -Aj * Vj[:, 2:3] ** 2 + Ai * Vi[:, 2:3] ** 2)
    return ell[:, None], Gi[:, None, :], Gj[:, None, :], quad[:, None]


# name -> (evaluator, rows per instance, geometric parameter fields, driven by a profile)
FAMILIES = {
    "coincident": (coincident, 2, ("point_i", "point_j"), False),
    "angle": (angle, 1, (), True),
    "line": (line, 1, ("point_i", "point_j", "direction"), True),
    "distance": (distance, 1, ("point_i", "point_j"), True),
}
