"""Joint limits: a unilateral compliant law on a joint coordinate, MuJoCo's soft limit
constraint written as a force (family 'joint_limit', `SpatialModel.add_joint_limit`).

MuJoCo's limit is a soft constraint in acceleration space (MuJoCo documentation,
Computation, soft constraints). For one side of a limit with violation
r = dist - margin < 0 (dist = y - lower or upper - y, y the joint position) and
constraint velocity v = +-ydot, it forms the reference acceleration

    a_ref = -B v - K d(r) r,   K = 1 / (dmax^2 timeconst^2 dampratio^2),  B = 2 / (dmax timeconst)

(solref = (timeconst, dampratio); the direct form solref = (-k, -b) gives K = k / dmax^2,
B = b / dmax), the impedance d(r) in (0, 1) of solimp = (dmin, dmax, width, midpoint,
power), and the regulariser R = (1 - d) / d * A0 with A0 = 1 / reference_inertia, the
joint's inverse inertia at MuJoCo's qpos0 (``dof_invweight0``, without armature). Its
constraint force is

    f = max(0, (a_ref - a0) / (A + R)),

A the current inverse inertia of the joint (the joint's diagonal entry of the inverse
joint-space mass matrix, armature included) and a0 the joint's acceleration without the
limit (from every other force). A force law sees the state only, not a0 nor A; this
family takes a0 = 0 and A = 1 / inertia, a fixed inertia (the import: the joint's
inertia in the initial state):

    f = max(0, a_ref(r, v) / (1 / inertia + R)).

It differs from MuJoCo's by a0 / (A + R) (the fraction d A0 / (d A + (1 - d) A0), about
d, of the other forces that MuJoCo's soft limit absorbs) and by the change of A with the
configuration (none for a joint whose inertia does not change, e.g. the only joint of a
chain or a slide of a lone body). An impact on a limit (a_ref large) is close to MuJoCo's;
a joint resting on its limit under a steady load sinks about 1 / (1 - d) times deeper
into it than in MuJoCo, d at MuJoCo's penetration (0.9 to 0.95 with the default solimp:
10 to 20 times; under a load of 15 rad/s^2 at MuJoCo's default solref and solimp,
6.0e-3 rad instead of 4.9e-4 rad, measured). Not conservative: no
potential, power f ydot.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..core import families as F
from .forces import _SpatialForce, joint_coordinate
from .rotors import JOINT_KINDS, joint_kind_mask
from .rows import _Side

__all__ = ["JointLimit", "impedance", "solref_gains"]

MINVAL = 1e-15  # MuJoCo's mjMINVAL


def impedance(solimp, r):
    """MuJoCo's constraint impedance d(r) (k,) for solimp (k, 5) = (dmin, dmax, width,
    midpoint, power) at violations r (k,) (m or rad): dmin at r = 0, dmax for
    |r| >= width, a polynomial sigmoid of |r| / width in between (as MuJoCo's
    getimpedance)."""
    dmin, dmax, width, mid, power = (solimp[:, i] for i in range(5))
    flat = (dmin == dmax) | (width <= MINVAL)
    x = jnp.clip(jnp.abs(r) / jnp.where(flat, 1.0, width), 0.0, 1.0)
    a = 1.0 / jnp.power(mid, power - 1.0)
    b = 1.0 / jnp.power(1.0 - mid, power - 1.0)
    y = jnp.where(x <= mid, a * jnp.power(x, power), 1.0 - b * jnp.power(1.0 - x, power))
    y = jnp.where(power == 1.0, x, y)
    return jnp.where(flat, 0.5 * (dmin + dmax), dmin + y * (dmax - dmin))


def solref_gains(solref, dmax):
    """(K 1/s^2, B 1/s) of MuJoCo's reference acceleration a_ref = -B v - K d r from solref
    = (timeconst s, dampratio) (both > 0) or the direct form (-stiffness, -damping) (both
    <= 0), and the impedance's dmax."""
    tc, dr = float(solref[0]), float(solref[1])
    if tc > 0:
        K = 1.0 / max(MINVAL, dmax * dmax * tc * tc * dr * dr)
    else:
        K = -tc / max(MINVAL, dmax * dmax)
    B = 2.0 / max(MINVAL, dmax * tc) if dr > 0 else -dr / max(MINVAL, dmax)
    return K, B


class JointLimit(_SpatialForce):
    """Unilateral limits lower <= y <= upper on a joint position y = x + offset (x: the
    joint coordinate, see `joint_coordinate`), each side MuJoCo's soft limit law with
    a0 = 0 and A = 1 / inertia (module docstring):

      side active while dist < margin (dist = y - lower, or upper - y), r = dist - margin,
      v = +ydot (lower) or -ydot (upper), a_ref = -damping v - stiffness d(r) r,
      f = max(0, a_ref / (1 / inertia + (1 - d(r)) / (d(r) reference_inertia))),

    and the joint gets f_lower - f_upper along y (torque N m on frame j about the axis for
    a hinge, force N along it for a slide; the opposite on frame i). Fields: the joint
    geometry (f_i, g_i, f_j, a_i, point_i, point_j), offset, range (k, 2) (lower, upper;
    +-inf for an open side), margin, stiffness K (1/s^2), damping B (1/s), solimp (k, 5),
    inertia and reference_inertia (kg m^2 or kg). static: ('hinge' / 'slide' per
    instance,). Not conservative: potential 0, power Q . V. info: 'force' (k,) (N m or N
    along y), 'position' y (k,)."""

    name = "joint_limit"
    fields = ("f_i", "g_i", "f_j", "a_i", "point_i", "point_j", "offset", "range", "margin",
              "stiffness", "damping", "solimp", "inertia", "reference_inertia")

    def evaluate(self, p, a):
        hinge = joint_kind_mask(a.static[0])
        si, sj = _Side(a.Xi, a.Vi), _Side(a.Xj, a.Vj)
        x, xd, Gi, Gj = joint_coordinate(si, sj, p, hinge)
        y = x + p["offset"]
        tau = jnp.zeros_like(y)
        for dist, v, sign in ((y - p["range"][:, 0], xd, 1.0), (p["range"][:, 1] - y, -xd, -1.0)):
            active = dist < p["margin"]
            r = jnp.where(active, dist - p["margin"], 0.0)  # finite for open sides (+-inf)
            d = impedance(p["solimp"], r)
            aref = -p["damping"] * v - p["stiffness"] * d * r
            f = aref / (1.0 / p["inertia"] + (1.0 - d) / (d * p["reference_inertia"]))
            tau = tau + sign * jnp.where(active, jnp.maximum(f, 0.0), 0.0)
        Qi, Qj = tau[:, None] * Gi, tau[:, None] * Gj
        P = jnp.sum(Qi * a.Vi, -1) + jnp.sum(Qj * a.Vj, -1)
        return Qi, Qj, jnp.zeros_like(P), P, {"force": tau, "position": y}

    def validate(self, p, xp=np):
        """Rules beyond finiteness (see ForceFamily.validate): a range (lower < upper, at
        least one side finite), positive inertias, stiffness >= 0, a valid solimp."""
        from ..core.validate import field_rule_masks

        lo, hi = p["range"][..., 0], p["range"][..., 1]
        si = p["solimp"]
        bad_imp = ~((si[..., 0] > 0) & (si[..., 0] < 1) & (si[..., 1] > 0) & (si[..., 1] < 1)
                    & (si[..., 2] >= 0) & (si[..., 3] > 0) & (si[..., 3] < 1) & (si[..., 4] >= 1))
        return field_rule_masks(p, self.fields, xp) + [
            ("range", ~(lo < hi) | (xp.isinf(lo) & xp.isinf(hi)),
             "must be (lower, upper) with lower < upper, at least one side finite"),
            ("inertia", ~(p["inertia"] > 0), "must be > 0 (kg m^2 or kg)"),
            ("reference_inertia", ~(p["reference_inertia"] > 0), "must be > 0 (kg m^2 or kg)"),
            ("stiffness", ~(p["stiffness"] >= 0), "must be >= 0 (1/s^2)"),
            ("solimp", bad_imp, "must be (dmin, dmax, width, midpoint, power) with dmin, dmax, "
             "midpoint in (0, 1), width >= 0, power >= 1")]

    @staticmethod
    def sample_static(k):
        """Static data for conformance tests: alternating hinge and slide instances."""
        return (tuple(JOINT_KINDS[i % 2] for i in range(k)),)


F.register(JointLimit())
