"""Spatial force families, vectorised over instances, registered with the core.

Every family returns generalised forces on the frames' velocity coordinates (rdot,
omega_body): a global force f at the body point s gives (f, s x R^T f), a global torque
tau gives (0, R^T tau). Potential energies (J) and the power (W) of the non-conservative
parts follow the conventions of `jaxmbs.core.families.ForceFamily`.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..core import families as F
from ..planar.forces import contact_law
from . import geometry as g3
from .frames import SPATIAL
from .geometry import cross, dot, mtv, mv
from .rotors import _hinge_parts, joint_kind_mask
from .rows import _dot1_parts, _dot2_parts, _Side

__all__ = ["point_force"]


def point_force(side, s, f):
    """Generalised force (k, 6) of global forces f (k, 3) at body points s (k, 3)."""
    return jnp.concatenate([f, cross(s, mtv(side.R, f))], -1)


def torque(side, tau):
    """Generalised force (k, 6) of global torques tau (k, 3)."""
    return jnp.concatenate([jnp.zeros_like(tau), mtv(side.R, tau)], -1)


class _SpatialForce(F.ForceFamily):
    frame = SPATIAL


class Spring3(_SpatialForce):
    """Translational spring-damper-actuator between P_i and P_j: tension
    T = k (l - length) + c ldot + force (N), pulling the points together when positive;
    k N/m, c N s/m. Written as f = k d + (c ldot + force - k length) u on j (finite for
    coincident points)."""

    name = "spring3"
    fields = ("point_i", "point_j", "k", "c", "length", "force")

    def evaluate(self, p, a):
        si, sj = _Side(a.Xi, a.Vi), _Side(a.Xj, a.Vj)
        Pi, Pid, _ = si.point(p["point_i"])
        Pj, Pjd, _ = sj.point(p["point_j"])
        d = Pj - Pi
        ell, _ = g3.safe_norm(d)
        u = g3.unit(d)
        ld = dot(u, Pjd - Pid)
        tnc = p["c"] * ld + p["force"]
        f = p["k"][:, None] * d + (tnc - p["k"] * p["length"])[:, None] * u
        V = 0.5 * p["k"] * (ell - p["length"]) ** 2
        return (point_force(si, p["point_i"], f), point_force(sj, p["point_j"], -f), V,
                -tnc * ld, {})


class Torsion3(_SpatialForce):
    """Torsion spring-damper-actuator on the rotation theta of frame j relative to frame i
    about a revolute axis (theta = atan2(g_i . f_j, f_i . f_j), from the initial
    configuration, in (-pi, pi]): torque T = k (theta - angle) + c thetadot + torque (N m)
    acting -T on j about the axis. Its generalised force is the exact gradient of
    k (theta - angle)^2 / 2 (also where the revolute is not exactly closed)."""

    name = "torsion3"
    fields = ("f_i", "g_i", "f_j", "k", "c", "angle", "torque")

    def evaluate(self, p, a):
        si, sj = _Side(a.Xi, a.Vi), _Side(a.Xj, a.Vj)
        C, GCi, GCj, _ = _dot1_parts(si, sj, p["f_i"], p["f_j"])
        S, GSi, GSj, _ = _dot1_parts(si, sj, p["g_i"], p["f_j"])
        th = jnp.arctan2(S, C)
        n2 = C * C + S * S
        Gti = (C[:, None] * GSi - S[:, None] * GCi) / n2[:, None]
        Gtj = (C[:, None] * GSj - S[:, None] * GCj) / n2[:, None]
        thd = si.rate(Gti) + sj.rate(Gtj)
        rel = th - p["angle"]
        tnc = p["c"] * thd + p["torque"]
        T = p["k"] * rel + tnc
        return -T[:, None] * Gti, -T[:, None] * Gtj, 0.5 * p["k"] * rel**2, -tnc * thd, {}


class Axial3(_SpatialForce):
    """Spring-damper-actuator on the displacement s of frame j relative to frame i along a
    prismatic (or cylindrical) axis: s = a_i . (P_j - P_i) - offset (m, 0 in the initial
    configuration); force F = k (s - length) + c sdot + force (N) acting -F on j along
    the axis (+F on i). k N/m, c N s/m. Exact gradient of k (s - length)^2 / 2."""

    name = "axial3"
    fields = ("a_i", "point_i", "point_j", "offset", "k", "c", "length", "force")

    def evaluate(self, p, a):
        si, sj = _Side(a.Xi, a.Vi), _Side(a.Xj, a.Vj)
        g, Gi, Gj, _ = _dot2_parts(si, sj, p["a_i"], p["point_i"], p["point_j"])
        sd = si.rate(Gi) + sj.rate(Gj)
        rel = g - p["offset"] - p["length"]
        tnc = p["c"] * sd + p["force"]
        F_ = p["k"] * rel + tnc
        return -F_[:, None] * Gi, -F_[:, None] * Gj, 0.5 * p["k"] * rel**2, -tnc * sd, {}


def control_inputs(u, ctrl, fill, dtype, what):
    """u[ctrl[k]] per instance k, `fill` where ctrl[k] < 0 (no control channel); a clear
    error when some instance has a channel and no u was passed."""
    if not np.any(ctrl >= 0):
        return jnp.full(ctrl.shape, fill, dtype)
    if u is None:
        raise ValueError(f"this mechanism has {what} driven by control inputs; pass u "
                         f"(shape ({int(ctrl.max()) + 1},) at least)")
    return jnp.where(ctrl >= 0, jnp.asarray(u, dtype)[np.maximum(ctrl, 0)], fill)


def joint_coordinate(si, sj, p, hinge):
    """A joint's coordinate x, its rate and its Jacobian blocks (k,), (k,), (k, 6), (k, 6):
    the rotation theta = atan2(g_i . f_j, f_i . f_j) (rad, in (-pi, pi], 0 in the initial
    configuration) for `hinge` instances (static (k,) bool), the displacement
    a_i . (P_j - P_i) (m) for the others."""
    (C, GCi, GCj, _), (S, GSi, GSj, _) = _hinge_parts(si, sj, p)
    n2 = C * C + S * S
    th = jnp.arctan2(S, C)
    Gti = (C[:, None] * GSi - S[:, None] * GCi) / n2[:, None]
    Gtj = (C[:, None] * GSj - S[:, None] * GCj) / n2[:, None]
    d, Gdi, Gdj, _ = _dot2_parts(si, sj, p["a_i"], p["point_i"], p["point_j"])
    h = jnp.asarray(hinge)
    x = jnp.where(h, th, d)
    Gi = jnp.where(h[:, None], Gti, Gdi)
    Gj = jnp.where(h[:, None], Gtj, Gdj)
    return x, si.rate(Gi) + sj.rate(Gj), Gi, Gj


class JointActuator(_SpatialForce):
    """An actuator on a joint coordinate, as MuJoCo defines a joint-transmission actuator
    with fixed or affine gain and affine bias:

      length L = gear (x + offset), velocity Ldot = gear xdot (x: the joint coordinate,
      see `joint_coordinate`; offset: its value in the initial configuration in the
      user's convention, e.g. MuJoCo's qpos there);
      u_c = clip(u[control], ctrlrange) (u = 0 for instances without a control channel);
      F = clip((gain_0 + gain_1 L + gain_2 Ldot) u_c + bias_0 + bias_1 L + bias_2 Ldot,
               forcerange);
      generalised force gear F on the joint coordinate: torque (N m) on frame j about the
      axis for a hinge, force (N) along it for a slide, the opposite on frame i.

    static: (control channel per instance (-1: none), 'hinge' / 'slide' per instance).
    Fields f_i, g_i, f_j (rotation) and a_i, point_i, point_j (translation) are present
    for every instance (f_i, g_i, f_j must be valid perpendicular unit vectors of the
    axis, as the builder gives them). Not conservative: potential 0, power Q . V."""

    name = "joint_actuator"
    fields = ("f_i", "g_i", "f_j", "a_i", "point_i", "point_j", "offset", "gear", "gain",
              "bias", "ctrlrange", "forcerange")
    uses_controls = True

    def evaluate(self, p, a):
        ctrl = np.asarray(a.static[0])
        hinge = joint_kind_mask(a.static[1])
        dtype = a.Xj.dtype
        si, sj = _Side(a.Xi, a.Vi), _Side(a.Xj, a.Vj)
        x, xd, Gi, Gj = joint_coordinate(si, sj, p, hinge)
        gear = p["gear"]
        L, Ld = gear * (x + p["offset"]), gear * xd
        u = control_inputs(a.u, ctrl, 0.0, dtype, "joint actuators")
        uc = jnp.clip(u, p["ctrlrange"][:, 0], p["ctrlrange"][:, 1])
        g, b = p["gain"], p["bias"]
        F_ = (g[:, 0] + g[:, 1] * L + g[:, 2] * Ld) * uc + b[:, 0] + b[:, 1] * L + b[:, 2] * Ld
        F_ = jnp.clip(F_, p["forcerange"][:, 0], p["forcerange"][:, 1])
        tau = gear * F_
        Qi, Qj = tau[:, None] * Gi, tau[:, None] * Gj
        P = jnp.sum(Qi * a.Vi, -1) + jnp.sum(Qj * a.Vj, -1)
        return Qi, Qj, jnp.zeros_like(P), P, {"force": F_, "length": L}


def _rotvec(q):
    """Rotation vector (k, 3) of unit quaternions q (k, 4) (the shorter rotation)."""
    q = q * jnp.where(q[:, :1] < 0, -1.0, 1.0)
    v = q[:, 1:]
    s, ss = g3.safe_norm(v)
    ang = 2.0 * jnp.arctan2(s, q[:, 0])
    small = s < 1e-8
    fac = jnp.where(small, 2.0 / q[:, 0], ang / ss)
    return fac[:, None] * v


class Bushing(_SpatialForce):
    """Six-axis linear spring-damper between a marker on frame i (point_i, orientation
    quaternion r_i, body coordinates) and one on frame j (point_j, r_j), coincident and
    aligned at rest: potential (d^T K_t d + phi^T K_r phi) / 2 with d the displacement of
    marker j from marker i and phi the rotation vector of marker j relative to marker i,
    both in marker-i axes; K_t = diag(k_t) N/m, K_r = diag(k_r) N m/rad; dampers
    C_t = diag(c_t) on ddot and C_r = diag(c_r) on the relative angular velocity (marker-i
    axes). The elastic forces are the exact gradient of the potential (autodiff)."""

    name = "bushing"
    fields = ("point_i", "point_j", "r_i", "r_j", "k_t", "k_r", "c_t", "c_r")

    def _strain(self, p, Xi, Xj):
        Ri, Rj = g3.quat_to_R(Xi[:, 3:7]), g3.quat_to_R(Xj[:, 3:7])
        Pi = Xi[:, :3] + mv(Ri, p["point_i"])
        Pj = Xj[:, :3] + mv(Rj, p["point_j"])
        qi = g3.quat_mul(g3.normalize_quat(Xi[:, 3:7]), p["r_i"])
        qj = g3.quat_mul(g3.normalize_quat(Xj[:, 3:7]), p["r_j"])
        Rm = g3.quat_to_R(qi)
        d = mtv(Rm, Pj - Pi)
        phi = _rotvec(g3.quat_mul(g3.quat_conj(qi), qj))
        return d, phi

    def evaluate(self, p, a):
        from .frames import SpatialRigidNode

        nf = SpatialRigidNode()

        def energy(Xi, Xj):
            d, phi = self._strain(p, Xi, Xj)
            return 0.5 * (jnp.sum(p["k_t"] * d * d, -1) + jnp.sum(p["k_r"] * phi * phi, -1))

        V = energy(a.Xi, a.Xj)
        gi, gj = jax.grad(lambda xi, xj: jnp.sum(energy(xi, xj)), (0, 1))(a.Xi, a.Xj)
        # q-space gradient -> velocity space: Q = -(dq/dv)^T dV/dq
        Qi = -jnp.einsum("kqv,kq->kv", nf.dq_dv(a.Xi), gi)
        Qj = -jnp.einsum("kqv,kq->kv", nf.dq_dv(a.Xj), gj)
        # dampers on the rates of (d, phi) (linearised: rates of the strain measures)
        _, rates = jax.jvp(lambda xi, xj: self._strain(p, xi, xj), (a.Xi, a.Xj),
                           (nf.qdot(a.Xi, a.Vi), nf.qdot(a.Xj, a.Vj)))
        dd, phid = rates
        fd = p["c_t"] * dd
        md = p["c_r"] * phid

        def damp_work(Xi, Xj):
            d, phi = self._strain(p, Xi, Xj)
            return jnp.sum(jax.lax.stop_gradient(fd) * d + jax.lax.stop_gradient(md) * phi)

        hi, hj = jax.grad(damp_work, (0, 1))(a.Xi, a.Xj)
        Qi = Qi - jnp.einsum("kqv,kq->kv", nf.dq_dv(a.Xi), hi)
        Qj = Qj - jnp.einsum("kqv,kq->kv", nf.dq_dv(a.Xj), hj)
        P = -(jnp.sum(fd * dd, -1) + jnp.sum(md * phid, -1))
        return Qi, Qj, V, P, {}


class Load3(_SpatialForce):
    """Applied force 'force' (k, 3) N at 'point' (k, 3) m and torque 'torque' (k, 3) N m on
    frame j; static = (control channel per instance (-1: none), force in body axes
    (bool), torque in body axes (bool)); fns: f(t) -> (6,) (force, torque, global axes)
    added. Control u[channel] scales the constant part."""

    name = "load3"
    fields = ("point", "force", "torque")
    field_shapes = {"force": (3,), "torque": (3,)}
    uses_controls = True

    def evaluate(self, p, a):
        ctrl = np.asarray(a.static[0])
        floc, tloc = np.asarray(a.static[1], bool), np.asarray(a.static[2], bool)
        dtype = a.Xj.dtype
        scale = control_inputs(a.u, ctrl, 1.0, dtype, "loads")
        sj = _Side(a.Xj, a.Vj)
        f = jnp.where(floc[:, None], mv(sj.R, p["force"]), p["force"]) * scale[:, None]
        tau = jnp.where(tloc[:, None], mv(sj.R, p["torque"]), p["torque"]) * scale[:, None]
        for k, fn in a.fns:
            ft = jnp.asarray(fn(a.t), dtype).reshape(6)
            f = f.at[k].add(ft[:3])
            tau = tau.at[k].add(ft[3:])
        Q = point_force(sj, p["point"], f) + torque(sj, tau)
        P = jnp.sum(Q * a.Vj, -1)
        return jnp.zeros_like(Q), Q, jnp.zeros_like(P), P, {}


CONTACT_FIELDS = ("k", "exponent", "damping", "mu", "v_eps")


def _contact(p, si, sj, nrm, K, delta, vrel_fn):
    """Normal force along nrm (on j) through K and regularised Coulomb friction
    -mu F_n v_t / sqrt(|v_t|^2 + v_eps^2) at K; returns (Qi, Qj, V, P, info)."""
    vrel = vrel_fn(K)
    delta_dot = -dot(nrm, vrel)
    Fn, Vel, Pdis = contact_law(p, delta, delta_dot)
    vt = vrel - dot(nrm, vrel)[:, None] * nrm
    denom = jnp.sqrt(dot(vt, vt) + p["v_eps"] ** 2)
    Ft = -(p["mu"] * Fn / denom)[:, None] * vt
    F_ = Fn[:, None] * nrm + Ft
    Qj = point_force(sj, mtv(sj.R, K - sj.r), F_)
    Qi = point_force(si, mtv(si.R, K - si.r), -F_)
    Pfr = dot(Ft, vt)
    return Qi, Qj, Vel, Pdis + Pfr, {"normal": Fn, "friction": jnp.sqrt(dot(Ft, Ft)),
                                      "penetration": delta}


def _rel_velocity(si, sj):
    def at(K):
        vj = sj.v + cross(mv(sj.R, sj.w), K - sj.r)
        vi = si.v + cross(mv(si.R, si.w), K - si.r)
        return vj - vi
    return at


class SpherePlane(_SpatialForce):
    """Penalty contact of a sphere (frame j: centre point_j, radius) with the plane of
    frame i through point_i with unit normal normal_i (sphere on the + side, planes are
    infinite). delta = radius - n . (C - P_i); contact law of the planar contacts
    (Hunt-Crossley normal force, never pulling; its potential counts), friction
    -mu F_n v_t / sqrt(|v_t|^2 + v_eps^2) at the contact point K = C - (radius - delta/2) n."""

    name = "sphere_plane"
    fields = ("point_i", "normal_i", "point_j", "radius") + CONTACT_FIELDS

    def evaluate(self, p, a):
        si, sj = _Side(a.Xi, a.Vi), _Side(a.Xj, a.Vj)
        nrm = mv(si.R, p["normal_i"])
        Pi = si.r + mv(si.R, p["point_i"])
        Cc = sj.r + mv(sj.R, p["point_j"])
        delta = p["radius"] - dot(nrm, Cc - Pi)
        K = Cc - (p["radius"] - 0.5 * delta)[:, None] * nrm
        return _contact(p, si, sj, nrm, K, delta, _rel_velocity(si, sj))


class SphereSphere(_SpatialForce):
    """Penalty contact of two spheres (centres point_i / point_j, radii radius_i /
    radius_j), external: delta = radius_i + radius_j - |C_j - C_i|, normal
    n = unit(C_j - C_i), contact point K = C_i + (radius_i - delta/2) n."""

    name = "sphere_sphere"
    fields = ("point_i", "point_j", "radius_i", "radius_j") + CONTACT_FIELDS

    def evaluate(self, p, a):
        si, sj = _Side(a.Xi, a.Vi), _Side(a.Xj, a.Vj)
        Ci = si.r + mv(si.R, p["point_i"])
        Cj = sj.r + mv(sj.R, p["point_j"])
        d = Cj - Ci
        ell, _ = g3.safe_norm(d)
        nrm = jnp.where((ell > 0)[:, None], g3.unit(d), jnp.asarray([0.0, 0.0, 1.0], d.dtype))
        delta = p["radius_i"] + p["radius_j"] - ell
        K = Ci + (p["radius_i"] - 0.5 * delta)[:, None] * nrm
        return _contact(p, si, sj, nrm, K, delta, _rel_velocity(si, sj))


for _f in (Spring3(), Torsion3(), Axial3(), Bushing(), SpherePlane(), SphereSphere(), Load3(),
           JointActuator()):
    F.register(_f)
