"""The planar families, registered with the core (`jaxmbs.core.families`).

Frame kind 'planar': X = (x, y, theta), V = (xd, yd, omega). Node families:
'planar_rigid' (a body: x, y, theta) and 'particle2d' (x, y; presents theta = 0). Body
families of the same names (mass, inertia about the CG and CG offset; particle mass).
Constraint families: the rows of `jaxmbs.planar.joints`; force families: springs,
torsion springs, loads, contacts and the rotating frame of `jaxmbs.planar.forces`.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..core import families as F
from . import forces as pf
from . import joints as pj
from .geometry import cross, point, point_velocity, rotate
from .mass import MassMatrix

__all__ = ["PLANAR"]

PLANAR = "planar"


class PlanarFrame(F.FrameKind):
    name = PLANAR
    wq = 3
    wv = 3
    dim = 2
    ground_q = (0.0, 0.0, 0.0)

    def point(self, X, s):
        return point(X, s)

    def point_velocity(self, X, V, As):
        return point_velocity(V, As)

    def reaction(self, G, X, s):
        """Force (2,) on the frame and moment () about its point A s (N, N m)."""
        F_, Mref = G[:2], G[2]
        Mp = Mref - cross(rotate(X[2], s), F_)
        return {"force": F_, "moment": Mp, "generalized": G}


class PlanarRigidNode(F.NodeFamily):
    name = "planar_rigid"
    nq = nv = 3
    frame = PLANAR
    frame_q = frame_v = (0, 1, 2)
    rigid = True
    coord_names = vel_names = ("x", "y", "theta")


class Particle2DNode(F.NodeFamily):
    name = "particle2d"
    nq = nv = 2
    frame = PLANAR
    frame_q = frame_v = (0, 1, -1)
    coord_names = vel_names = ("x", "y")


class PlanarRigidBody(F.BodyFamily):
    """mass (k,) kg, inertia (k,) kg m^2 about the CG, cg (k, 2) m in body coordinates."""

    name = "planar_rigid"
    node = "planar_rigid"
    fields = ("mass", "inertia", "cg")

    def mass_part(self, p, X):
        z = jnp.zeros((0,), X.dtype)
        return MassMatrix(p["mass"], p["inertia"], rotate(X[:, 2], p["cg"]), z)

    def loads(self, p, X, V, g):
        """Gravity at the CG and the centripetal term m c theta_dot^2 (c = A s_G), and the
        potential energy -m g . r_G."""
        c = rotate(X[:, 2], p["cg"])
        m = p["mass"]
        fg = m[:, None] * g
        Q = jnp.concatenate([fg + m[:, None] * c * V[:, 2:3] ** 2,
                             (c[:, 0] * fg[:, 1] - c[:, 1] * fg[:, 0])[:, None]], -1)
        rG = X[:, :2] + c
        return Q, -m * (rG @ g)

    def inertia_data(self, p):
        return p["mass"], p["inertia"], p["cg"]

    def validate(self, p, xp=np):
        """mass > 0 (kg) and inertia > 0 (kg m^2 about the CG)."""
        return [("mass", ~(p["mass"] > 0), "must be > 0 (kg)"),
                ("inertia", ~(p["inertia"] > 0), "must be > 0 (kg m^2, about the CG)")]

    # linear inertial parameters (m, m c_x, m c_y, J_ref = J_G + m |c|^2) for regressors
    inertial_labels = ("m", "mcx", "mcy", "Jref")

    def to_inertial(self, p):
        m, c, J = p["mass"], p["cg"], p["inertia"]
        return jnp.stack([m, m * c[:, 0], m * c[:, 1], J + m * jnp.sum(c**2, -1)], -1)

    def from_inertial(self, x):
        m, h = x[:, 0], x[:, 1:3]
        return {"mass": m, "cg": h / m[:, None], "inertia": x[:, 3] - jnp.sum(h**2, -1) / m}


class Particle2DBody(F.PointMassBody):
    """mass (k,) kg."""

    name = "particle2d"
    node = "particle2d"

    def mass_part(self, p, X):
        z = jnp.zeros((0,), X.dtype)
        return MassMatrix(z, z, jnp.zeros((0, 2), X.dtype), p["mass"])

    def loads(self, p, X, V, g):
        m = p["mass"]
        return m[:, None] * g, -m * (X @ g)

    def inertia_data(self, p):
        m = p["mass"]
        return m, jnp.zeros_like(m), jnp.zeros(m.shape + (2,), m.dtype)



class CamConstraint(pj.Cam):
    """The cam family with its reaction report (the contact force, point and normal)."""

    def reaction_extra(self, mech, params, q, lam, j, blk):
        """'normal_force' () N: the contact force body_i exerts on body_j along curve_i's
        right-hand unit normal (> 0 pushing); 'contact_point' (2,) m; 'normal' (2,)."""
        from ..core.equations import ext_q, frame_states

        k = (j.rows[0] - blk.row0) // blk.rows_per
        Xi, _ = frame_states(mech, PLANAR, q, None, [j.frame_i])
        S = ext_q(q)[np.asarray(blk.extra_cols[k:k + 1])]
        p = {f: params.joints["cam"][f][k:k + 1] for f in ("data_i", "data_j")}
        P, n = pj.cam_contact(p, Xi, S, (blk.static[0][k:k + 1], blk.static[1][k:k + 1]))
        F_ = lam[np.asarray(j.rows[:2])]  # force on body_j: -(dPhi/dr_j)^T lam = lam[0:2]
        return {"normal_force": n[0] @ F_, "contact_point": P[0], "normal": n[0]}


class PlanarLoad(F.ForceFamily):
    """Applied force (fields 'force' (k, 2) N, global or body axes) at 'point' (k, 2) m
    plus 'torque' (k,) N m on frame j; static = (control channel per instance (-1: none),
    local flag per instance); fns: f(t) -> (fx, fy, torque) added (global axes)."""

    name = "load"
    frame = PLANAR
    fields = ("point", "force", "torque")
    field_shapes = {"force": (2,)}
    uses_controls = True

    def evaluate(self, p, a):
        ctrl, local = np.asarray(a.static[0]), np.asarray(a.static[1], bool)
        dtype = a.Xj.dtype
        if np.any(ctrl >= 0):
            if a.u is None:
                raise ValueError("this mechanism has loads driven by control inputs; pass u "
                                 f"(shape ({int(ctrl.max()) + 1},) at least)")
            uu = jnp.asarray(a.u, dtype)
            scale = jnp.where(ctrl >= 0, uu[np.maximum(ctrl, 0)], 1.0)
        else:
            scale = jnp.ones(ctrl.shape, dtype)
        Q, P = pf.applied_load(p, a.Xj, a.Vj, scale, local)
        for k, fn in a.fns:
            ft = jnp.asarray(fn(a.t), dtype)
            Qk = pf.point_force(rotate(a.Xj[k:k + 1, 2], p["point"][k:k + 1]), ft[None, :2])[0]
            Q = Q.at[k].add(Qk.at[2].add(ft[2]))
        if a.fns:
            P = jnp.sum(Q * a.Vj, -1)
        return jnp.zeros_like(Q), Q, jnp.zeros_like(P), P, {}


for _f in (PlanarFrame(), PlanarRigidNode(), Particle2DNode(), PlanarRigidBody(), Particle2DBody()):
    F.register(_f)

# constraint families (jaxmbs.planar.joints), in the order of their rows in a mechanism
for _f in (pj.Coincident(), pj.Angle(), pj.Line(), pj.Distance(), pj.Gear(), pj.RackPinion(),
           pj.Rolling(), pj.KnifeEdge(), CamConstraint()):
    F.register(_f)

# force families (jaxmbs.planar.forces), in evaluation order
for _f in (pf.Spring(), pf.Torsion(), pf.CircleLine(), pf.CircleCircle(), pf.CircleProfile(),
           pf.CircleTerrain(), pf.RotatingFrame(), PlanarLoad()):
    F.register(_f)
