"""Force families of the planar engine, vectorised over instances.

Each returns the generalised forces (k, 3) = (f_x, f_y, moment about the frame's
reference point) on the frames it acts on, its potential energy (k,) and the power
(k,) of its non-conservative part (dampers, actuators, applied loads).
"""
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import profiles as _profiles
from ..core import families as F
from .geometry import cross, dot, perp, point, point_velocity, rotate, safe_length


def point_force(As, f):
    """Generalised force of a global force f (k,2) applied at a point A s on a frame."""
    return jnp.concatenate([f, cross(As, f)[:, None]], -1)


def spring_damper(p, Xi, Xj, Vi, Vj):
    """Translational spring-damper-actuator between P_i and P_j.

    Tension T = k (l - length) + c l_dot + force (N), pulling the two points together
    when positive. k in N/m, c in N s/m. Written as f = k d + (c l_dot + force - k length) u
    (d = P_j - P_i, u = d / l): finite with finite derivatives when the two points meet
    (l = 0, where the undefined direction u is taken as 0), and smooth there for a spring
    of zero free length without damper or actuator (f = k d).
    """
    Pi, Ai = point(Xi, p["point_i"])
    Pj, Aj = point(Xj, p["point_j"])
    d = Pj - Pi
    ell, u, _ = safe_length(d)
    ld = dot(u, point_velocity(Vj, Aj) - point_velocity(Vi, Ai))
    stretch = ell - p["length"]
    tnc = p["c"] * ld + p["force"]
    f = p["k"][:, None] * d + (tnc - p["k"] * p["length"])[:, None] * u
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


# ----------------------------------------------------------------------------------------
# Generic force families: a registry like `joints.FAMILIES`.
#
# Every family evaluates k instances at once:
#
#     evaluate(p, a: ForceArgs) -> (Qi, Qj, V, P, info)
#
# p: the family's Params dict (fields (k, ...)); Qi, Qj (k, 3) generalised forces on
# frames i and j (f_x, f_y, moment about the frame's reference point); V (k,) potential
# energy (J); P (k,) power (W) of the non-conservative part *plus* the explicit time
# derivative dV/dt|_q of a time-dependent potential, so that d(T + V)/dt = sum P along a
# solution (the bookkeeping `simulate` uses for its energy check); info: dict of (k,)
# arrays reported by `jaxmbs.core.equations.force_outputs` (e.g. contact normal force).
# ----------------------------------------------------------------------------------------

class ForceArgs(NamedTuple):
    """What a force family sees of its k instances (all arrays stacked over instances).

    Xi, Xj, Vi, Vj (k, 3): coordinates and velocities of frames i and j (ground: zeros,
    particle: theta = 0); t: time (s); mj (k,) kg, Jj (k,) kg m^2 about the CG and cgj
    (k, 2) m (body coordinates): inertial data of frame j (ground: zeros, particle: J = 0,
    cg = 0); fns: static tuple ((instance, fn), ...) of user functions of the block.
    """

    Xi: object
    Xj: object
    Vi: object
    Vj: object
    t: object
    mj: object
    Jj: object
    cgj: object
    fns: tuple = ()


class _PlanarForce(F.ForceFamily):
    frame = "planar"


class Spring(_PlanarForce):
    """Spring-damper between points of frames i and j, with an actuator force (N)."""

    name = "spring"
    fields = ("point_i", "point_j", "k", "c", "length", "force")

    def evaluate(self, p, a):
        Qi, Qj, V, P = spring_damper(p, a.Xi, a.Xj, a.Vi, a.Vj)
        return Qi, Qj, V, P, {}


class Torsion(_PlanarForce):
    """Torsion spring-damper between frames i and j, with a constant torque (N m)."""

    name = "torsion"
    fields = ("k", "c", "angle", "torque")

    def evaluate(self, p, a):
        Qi, Qj, V, P = torsion_spring(p, a.Xi, a.Xj, a.Vi, a.Vj)
        return Qi, Qj, V, P, {}


# ------------------------------------------------------------------ penalty contact
CONTACT_FIELDS = ("k", "exponent", "damping", "mu", "v_eps")


def _safe_pow(x, n):
    """max(x, 0)**n with value and derivatives finite everywhere (the double-where trick)."""
    pos = x > 0
    xs = jnp.where(pos, x, jnp.ones_like(x))
    return jnp.where(pos, xs ** n, jnp.zeros_like(x))


def contact_law(p, delta, delta_dot):
    """Hunt-Crossley normal force F_n = max(k d^n (1 + chi d_dot), 0) for d = max(delta, 0).

    p: k (N/m^n), exponent n (>= 1), damping chi (s/m: Lankarani-Nikravesh chi =
    3 (1 - e^2) / (4 v_impact), Hunt-Crossley chi = 3 (1 - e) / (2 v_impact)).
    delta (k,) penetration (m, > 0 in contact), delta_dot (k,) its rate (m/s, > 0 closing).
    Returns F_n (k,) >= 0 (N), the elastic potential k d^(n+1)/(n+1) (k,) (J), and the
    power of the dissipative part -(F_n - k d^n) delta_dot <= 0 (k,) (W).
    """
    n = p["exponent"]
    Fel = p["k"] * _safe_pow(delta, n)
    V = p["k"] * _safe_pow(delta, n + 1.0) / (n + 1.0)
    Fn = jnp.maximum(Fel * (1.0 + p["damping"] * delta_dot), 0.0)
    return Fn, V, -(Fn - Fel) * delta_dot


def _friction(p, Fn, t_dir, vrel):
    """Regularised Coulomb friction on the j side: -mu F_n tanh(v_t / v_eps) t (k, 2)."""
    vt = dot(t_dir, vrel)
    Ft = -p["mu"] * Fn * jnp.tanh(vt / p["v_eps"])
    return Ft, Ft[:, None] * t_dir, Ft * vt


def _contact_out(p, a, Fn_vec_j, K, Ft_vec_j, Vel, Pdis, Pfr, Fn, Ft, delta):
    """Assemble Q on i and j for a normal force Fn_vec_j whose line of action passes
    through K, and friction Ft_vec_j at K (both the forces on j; i gets the opposite)."""
    F = Fn_vec_j + Ft_vec_j
    Qj = point_force(K - a.Xj[:, :2], F)
    Qi = point_force(K - a.Xi[:, :2], -F)
    return Qi, Qj, Vel, Pdis + Pfr, {"normal": Fn, "friction": Ft, "penetration": delta}


class CircleLine(_PlanarForce):
    """Circle (centre point_j on frame j, radius) against a line through point_i of frame i
    with unit normal `normal` (frame i coordinates) pointing to the side the circle is on.

    Penetration delta = radius - normal . (C - P_i) (m); normal force along the normal on
    the circle (exactly -grad of the elastic potential), friction along the line at the
    contact point K = C - (radius - delta/2) normal. Lines are infinite.
    """

    name = "circle_line"
    fields = ("point_i", "point_j", "normal", "radius") + CONTACT_FIELDS

    def evaluate(self, p, a):
        C, Aj = point(a.Xj, p["point_j"])
        Pi, _ = point(a.Xi, p["point_i"])
        nrm = rotate(a.Xi[:, 2], p["normal"])
        delta = p["radius"] - dot(nrm, C - Pi)
        K = C - (p["radius"] - 0.5 * delta)[:, None] * nrm
        vrel = point_velocity(a.Vj, K - a.Xj[:, :2]) - point_velocity(a.Vi, K - a.Xi[:, :2])
        delta_dot = -dot(nrm, vrel)
        Fn, Vel, Pdis = contact_law(p, delta, delta_dot)
        Ft, Ftv, Pfr = _friction(p, Fn, perp(nrm), vrel)
        return _contact_out(p, a, Fn[:, None] * nrm, K, Ftv, Vel, Pdis, Pfr, Fn, Ft, delta)


class CircleCircle(_PlanarForce):
    """Two circles (centres point_i / point_j, radii radius_i / radius_j), external contact.

    delta = radius_i + radius_j - |C_j - C_i| (m); normal n = (C_j - C_i)/|C_j - C_i|
    (finite even for coincident centres); contact point K = C_i + (radius_i - delta/2) n.
    """

    name = "circle_circle"
    fields = ("point_i", "point_j", "radius_i", "radius_j") + CONTACT_FIELDS

    def evaluate(self, p, a):
        Ci, _ = point(a.Xi, p["point_i"])
        Cj, _ = point(a.Xj, p["point_j"])
        d = Cj - Ci
        d2 = dot(d, d)
        pos = d2 > 0
        ell = jnp.where(pos, jnp.sqrt(jnp.where(pos, d2, 1.0)), 0.0)
        nrm = jnp.where(pos[:, None], d / jnp.where(pos, ell, 1.0)[:, None],
                        jnp.array([1.0, 0.0], d.dtype))
        delta = p["radius_i"] + p["radius_j"] - ell
        K = Ci + (p["radius_i"] - 0.5 * delta)[:, None] * nrm
        vrel = point_velocity(a.Vj, K - a.Xj[:, :2]) - point_velocity(a.Vi, K - a.Xi[:, :2])
        delta_dot = -dot(nrm, vrel)
        Fn, Vel, Pdis = contact_law(p, delta, delta_dot)
        Ft, Ftv, Pfr = _friction(p, Fn, perp(nrm), vrel)
        return _contact_out(p, a, Fn[:, None] * nrm, K, Ftv, Vel, Pdis, Pfr, Fn, Ft, delta)


def _circle_on_profile(p, a, h, h1, h2):
    """Circle on the ground profile y = h(x), given h, h', h'' (k,) at the centre's x.

    Approximation (good when the profile's radius of curvature >> radius): the profile is
    replaced by its tangent line at x = C_x, so delta = radius - (C_y - h) / sqrt(1 + h'^2)
    and the normal is n = (-h', 1) / sqrt(1 + h'^2). The normal force is -F_n grad_C delta,
    exactly conservative (grad_C delta includes the h'' term, and equals -n when h'' = 0).
    """
    C, _ = point(a.Xj, p["point_j"])
    w = jnp.sqrt(1.0 + h1 * h1)
    gap = C[:, 1] - h
    delta = p["radius"] - gap / w
    # grad_C delta
    gx = h1 / w + gap * h1 * h2 / w**3
    gy = -1.0 / w
    g = jnp.stack([gx, gy], -1)
    nrm = jnp.stack([-h1, jnp.ones_like(h1)], -1) / w[:, None]
    K = C - (p["radius"] - 0.5 * delta)[:, None] * nrm
    vK = point_velocity(a.Vj, K - a.Xj[:, :2])
    delta_dot = dot(g, point_velocity(a.Vj, C - a.Xj[:, :2]))
    Fn, Vel, Pdis = contact_law(p, delta, delta_dot)
    Ft, Ftv, Pfr = _friction(p, Fn, perp(nrm), vK)
    # normal force has its line of action through C, so apply it there (K - C is along n,
    # not along g when h'' != 0); friction at K.
    Fnv = -Fn[:, None] * g
    Qj = point_force(C - a.Xj[:, :2], Fnv) + point_force(K - a.Xj[:, :2], Ftv)
    Qi = jnp.zeros_like(Qj)
    return Qi, Qj, Vel, Pdis + Pfr, {"normal": Fn, "friction": Ft, "penetration": delta}


class CircleProfile(_PlanarForce):
    """Circle (centre point_j on frame j, radius) on the ground profile y = f(x), f a user
    JAX function of a scalar x (m -> m), in a.fns; f' and f'' by autodiff."""

    name = "circle_profile"
    fields = ("point_j", "radius") + CONTACT_FIELDS

    def evaluate(self, p, a):
        x = point(a.Xj, p["point_j"])[0][:, 0]
        h = h1 = h2 = jnp.zeros_like(x)
        fns = {}
        for k, fn in a.fns:
            fns.setdefault(fn, []).append(k)
        for fn, ks in fns.items():
            mask = np.zeros(x.shape[0], bool)
            mask[ks] = True
            f1 = jax.grad(fn)
            f2 = jax.grad(f1)
            vals = [jax.vmap(f)(x) for f in (fn, f1, f2)]
            h, h1, h2 = (jnp.where(mask, jnp.asarray(v, x.dtype), o) for v, o in zip(vals, (h, h1, h2)))
        return _circle_on_profile(p, a, h, h1, h2)


def terrain_tangents(xs, ys):
    """Slopes (..., N) at the samples: derivative of the parabola through each sample and its
    neighbours (exact for quadratics on any grid); one-sided parabolas at the two ends."""
    h = jnp.diff(xs, axis=-1)
    s = jnp.diff(ys, axis=-1) / h
    h0, h1, s0, s1 = h[..., :-1], h[..., 1:], s[..., :-1], s[..., 1:]
    mid = (h1 * s0 + h0 * s1) / (h0 + h1)
    first = s[..., 0] + (s[..., 0] - s[..., 1]) * h[..., 0] / (h[..., 0] + h[..., 1])
    last = s[..., -1] + (s[..., -1] - s[..., -2]) * h[..., -1] / (h[..., -1] + h[..., -2])
    return jnp.concatenate([first[..., None], mid, last[..., None]], -1)


def terrain_eval(xs, ys, x):
    """Cubic Hermite interpolant (C^1) of samples (xs, ys) (k, N) at x (k,): h, h', h'' (k,).

    Tangents from `terrain_tangents`; beyond the ends the terrain continues as the end
    tangent lines (C^1, h'' = 0)."""
    N = xs.shape[-1]
    m = terrain_tangents(xs, ys)
    i = jax.vmap(jnp.searchsorted)(xs, x) - 1
    i = jnp.clip(i, 0, N - 2)
    take = lambda arr, j: jnp.take_along_axis(arr, j[:, None], -1)[:, 0]
    x0, x1, y0, y1 = take(xs, i), take(xs, i + 1), take(ys, i), take(ys, i + 1)
    m0, m1 = take(m, i), take(m, i + 1)
    hh = x1 - x0
    u = (x - x0) / hh
    u2, u3 = u * u, u * u * u
    h = (2 * u3 - 3 * u2 + 1) * y0 + (u3 - 2 * u2 + u) * hh * m0 + (-2 * u3 + 3 * u2) * y1 + (u3 - u2) * hh * m1
    d1 = ((6 * u2 - 6 * u) * y0 + (3 * u2 - 4 * u + 1) * hh * m0 + (-6 * u2 + 6 * u) * y1
          + (3 * u2 - 2 * u) * hh * m1) / hh
    d2 = ((12 * u - 6) * y0 + (6 * u - 4) * hh * m0 + (-12 * u + 6) * y1 + (6 * u - 2) * hh * m1) / hh**2
    left, right = x < xs[:, 0], x > xs[:, -1]
    xa, ya, ma = xs[:, 0], ys[:, 0], m[:, 0]
    xb, yb, mb = xs[:, -1], ys[:, -1], m[:, -1]
    h = jnp.where(left, ya + ma * (x - xa), jnp.where(right, yb + mb * (x - xb), h))
    d1 = jnp.where(left, ma, jnp.where(right, mb, d1))
    d2 = jnp.where(left | right, 0.0, d2)
    return h, d1, d2


class CircleTerrain(_PlanarForce):
    """Circle (centre point_j on frame j, radius) on sampled ground terrain y(x) through
    (xs, ys) (k, N) m, interpolated by `terrain_eval` (C^1 cubic Hermite)."""

    name = "circle_terrain"
    fields = ("point_j", "radius", "xs", "ys") + CONTACT_FIELDS

    def evaluate(self, p, a):
        x = point(a.Xj, p["point_j"])[0][:, 0]
        h, h1, h2 = terrain_eval(p["xs"], p["ys"], x)
        return _circle_on_profile(p, a, h, h1, h2)


# ------------------------------------------------------------------- rotating frame
def frame_rate(p, t, fns):
    """omega (rad/s) and omega_dot (rad/s^2) of the frame's rotation profile (instance 0)."""
    f, fd, fdd = _profiles.evaluate({k: v[:1] for k, v in p.items()}, t)
    w, wd = f[0], fd[0]
    for _, fn in fns:
        uf, ufd, _ = _profiles.evaluate_user(fn, t)
        w, wd = w + uf, wd + ufd
    return w, wd


class RotatingFrame(_PlanarForce):
    """Pseudo-forces of a model written in a frame turning about the origin with omega(t)
    (counter-clockwise, rad/s) on frames j (bodies and particles), k instances.

    Per frame, with r_G, v_G the CG position and velocity in the rotating frame (m, m/s):
    centrifugal m omega^2 r_G, Coriolis -2 m omega z x v_G, Euler -m omega_dot z x r_G, all
    at the CG (moment about the reference point when the CG is offset), and the Euler
    torque -J omega_dot. Potential V = -m omega^2 |r_G|^2 / 2 (centrifugal); the power P
    is that of the Coriolis (zero) and Euler terms plus dV/dt = -m omega omega_dot |r_G|^2.
    """

    name = "rotating_frame"
    fields = ("coef", "amp", "omega", "phase")
    needs_inertia = True

    def evaluate(self, p, a):
        w, wd = frame_rate(p, a.t, a.fns)
        c = rotate(a.Xj[:, 2], a.cgj)
        rG = a.Xj[:, :2] + c
        vG = a.Vj[:, :2] + perp(c) * a.Vj[:, 2:3]
        m = a.mj[:, None]
        Fc = m * w**2 * rG
        Fnc = -2.0 * m * w * perp(vG) - m * wd * perp(rG)
        Qc = point_force(c, Fc)
        Qnc = point_force(c, Fnc).at[:, 2].add(-a.Jj * wd)
        r2 = dot(rG, rG)
        V = -0.5 * a.mj * w**2 * r2
        P = dot(Qnc, a.Vj) - a.mj * w * wd * r2
        return jnp.zeros_like(Qc), Qc + Qnc, V, P, {"omega": jnp.broadcast_to(w, r2.shape)}
