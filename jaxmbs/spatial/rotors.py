"""Joint rotors: the armature inertia of a joint as a scalar node of its own, spinning
with the joint coordinate (`SpatialModel.add_armature`)."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..core import families as F
from .rows import _dot1_parts, _dot2_parts, _Side, _Spatial


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
