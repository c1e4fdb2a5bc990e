"""Force families of the planar engine, vectorised over instances.

Each returns the generalised forces (k, 3) = (f_x, f_y, moment about the frame's
reference point) on the frames it acts on, its potential energy (k,) and the power
(k,) of its non-conservative part (dampers, actuators, applied loads).
"""
import jax.numpy as jnp

from .geometry import cross, dot, point, point_velocity, rotate


def point_force(As, f):
    """Generalised force of a global force f (k,2) applied at a point A s on a frame."""
    return jnp.concatenate([f, cross(As, f)[:, None]], -1)


def spring_damper(p, Xi, Xj, Vi, Vj):
    """Translational spring-damper-actuator between P_i and P_j.

    Tension T = k (l - length) + c l_dot + force (N), pulling the two points together
    when positive. k in N/m, c in N s/m.
    """
    Pi, Ai = point(Xi, p["point_i"])
    Pj, Aj = point(Xj, p["point_j"])
    d = Pj - Pi
    ell = jnp.sqrt(dot(d, d))
    u = d / ell[:, None]
    ld = dot(u, point_velocity(Vj, Aj) - point_velocity(Vi, Ai))
    stretch = ell - p["length"]
    tnc = p["c"] * ld + p["force"]
    T = p["k"] * stretch + tnc
    f = T[:, None] * u
    return point_force(Ai, f), point_force(Aj, -f), 0.5 * p["k"] * stretch**2, -tnc * ld


def torsion_spring(p, Xi, Xj, Vi, Vj):
    """Rotational spring-damper-actuator on the relative angle theta_j - theta_i.

    Torque T = k (dtheta - angle) + c dtheta_dot + torque (N m) acts as -T on j, +T on i.
    """
    rel = Xj[:, 2] - Xi[:, 2] - p["angle"]
    reld = Vj[:, 2] - Vi[:, 2]
    tnc = p["c"] * reld + p["torque"]
    T = p["k"] * rel + tnc
    z = jnp.zeros_like(T)
    Qi = jnp.stack([z, z, T], -1)
    return Qi, -Qi, 0.5 * p["k"] * rel**2, -tnc * reld


def applied_load(p, X, V, scale, local):
    """Force (k,2) at local point (k,2) plus torque (k,), times scale (k,); local: bool mask (k,)."""
    Pj, As = point(X, p["point"])
    f = jnp.where(local[:, None], rotate(X[:, 2], p["force"]), p["force"]) * scale[:, None]
    Q = point_force(As, f).at[:, 2].add(p["torque"] * scale)
    return Q, dot(Q, V)
