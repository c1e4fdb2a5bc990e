"""Spatial ANCF cable elements: position and slope in 3D (Gerstmayr and Shabana 2006).

A cable is a chain of nodes of the node family 'ancf3d_node': each node has the absolute
position r (3,) (m) and slope r_x = dr/dx (3,) (dimensionless) of the centre line at that
node, q_node = (x, y, z, x_x, y_x, z_x), nq = nv = 6, v = qdot. Between consecutive nodes
i, j an element of undeformed length L (12 coordinates) interpolates the centre line with
the cubic Hermite shape functions of the planar beam (`jaxmbs.flexible.ancf`), now per
space axis:

    r(xi) = S1 r_i + S2 r_x,i + S3 r_j + S4 r_x,j,  xi = x / L in [0, 1].

Strain energy (exact nonlinear strain measures; a cable: no torsion, isotropic bending):

    U = integral_0^L [ E A eps^2 / 2 + E I kappa^2 / 2 ] dx,
    eps = (r_x . r_x - 1) / 2,   kappa^2 = |r_x x r_xx|^2 / |r_x|^6,

written with the curvature vector kv = r_x x r_xx / |r_x|^3 (|kv| = kappa; no square
root, so U and its derivatives are smooth where the cable is straight). The kernels are
those of the planar element made dimension-generic (the planar curvature is kv's one
component): 5-point Gauss quadrature vectorised over all elements, analytic internal
forces (`ancf.element_forces`, checked against jax.grad of U in tests/test_ancf3d.py; as
fast as jax.grad of U, 42 vs 45 us per jitted call for 32 elements on a loaded 2-core CPU,
and they give the strain-rate damping forces in the same pass),
constant consistent mass rho A L integral S^T S dxi (x) I3 factored once per `simulate`
run, gravity, a uniform dead line load (3,) N/m, Rayleigh damping (alpha: -alpha M qdot;
beta: the strain-rate viscous force beta EA eps_dot and moment beta EI kv_dot).

Families (registered on import, after the planar ones):

* frame kind 'ancf3d': X = (r, r_x) (6,), V its rate; the ground r = 0, r_x = (1, 0, 0).
* node family 'ancf3d_node' (nq = nv = 6).
* body family 'ancf3d_cable' on 'ancf3d_node': per node the section of the element that
  starts there: rho (kg/m^3), area A (m^2), E (Pa), I (m^4), length L (m; 0 for a cable's
  last node), alpha (1/s), beta (s), line_load (3,) N/m: all Params leaves (fittable).
* constraint families 'ancf3d_point' (3 rows: r_j - r_i - point = 0; with the ground
  r_j = point), 'ancf3d_slope' (2 rows: f_i . r_x,j = 0, g_i . r_x,j = 0 with f_i, g_i
  unit vectors perpendicular to a fixed direction: the slope stays along it, its length
  free; with 'ancf3d_point' a clamp) and 'ancf3d_parallel' (2 rows: f_i . (r_x,i x
  r_x,j) = 0, g_i . (...) = 0: two nodes' slopes stay parallel, f_i, g_i perpendicular to
  the initial common slope; valid while the slopes turn less than 90 degrees from it).
* force family 'ancf3d_load': a dead force (3,) N on a node.
* frame kind 'spatial_beam' (a view: a spatial rigid frame's (r, quaternion) and an
  element's two nodes, 19 coordinates, 18 velocities) and its constraint family
  'beam3d_point' (3 rows: the material point xi of an element on a body point: a
  spherical joint between a cable and a rigid body, a particle or the ground),
  'beam3d_slope' (2 rows: (R_i f_i) . r_x(xi) = 0, (R_i g_i) . r_x(xi) = 0, the slope at
  the material point kept along an axis fixed in a rigid body or the ground; with
  'beam3d_point' a weld of a cable to a body, `add_beam_body_weld`),
  'beam3d_beam_point' (3 rows: a spherical joint between material points of two cable
  elements) and the force families 'beam3d_load' (a dead force at a material point) and
  'beam3d_follower' (a tangential follower force F_t t at a material point, t the unit
  tangent r_x / |r_x| there; non-conservative: no potential, its power counted as work).

`jaxmbs.SpatialModel.add_beam` meshes a straight cable into these families
(`jaxmbs.flexible.build_cables.CableBuilder`).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..core import families as F
from ..spatial.frames import SPATIAL
from ..spatial.geometry import cross, mv, quat_to_R
from ..spatial.rows import _Side
from . import ancf as A

__all__ = ["ANCF3D", "SPATIAL_BEAM", "tip_direction"]

ANCF3D = "ancf3d"
SPATIAL_BEAM = "spatial_beam"


class Ancf3DFrame(A.AncfFrame):
    """X = (x, y, z, x_x, y_x, z_x) (m, m, m, 1, 1, 1); V its rate; the ground r = 0,
    r_x = (1, 0, 0)."""

    name = ANCF3D
    wq = wv = 6
    dim = 3
    ground_q = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0)


class Ancf3DNode(F.NodeFamily):
    name = "ancf3d_node"
    nq = nv = 6
    frame = ANCF3D
    frame_q = frame_v = (0, 1, 2, 3, 4, 5)
    coord_names = vel_names = ("x", "y", "z", "x_x", "y_x", "z_x")


class Ancf3DCable(A.AncfBeam):
    """Spatial ANCF cable elements on 'ancf3d_node' (line_load (k, 3) N/m); see
    `ancf.AncfBeam`."""

    name = "ancf3d_cable"
    node = "ancf3d_node"
    dim = 3


class Ancf3DPoint(A.AncfPoint):
    """r_j - r_i - point = 0 (3 rows, m): node j at node i's position plus `point` (k, 3) m
    (global axes); with the ground as frame i, node j pinned at `point`."""

    name = "ancf3d_point"
    rows = 3
    frame = ANCF3D


class Ancf3DSlope(F.ConstraintFamily):
    """f_i . r_x,j = 0, g_i . r_x,j = 0 (2 rows): node j's slope stays perpendicular to the
    unit vectors f_i, g_i (k, 3) (global axes), i.e. along the direction f_i x g_i; its
    length (the axial strain) is free. Frame i is not used (the builder gives the
    ground)."""

    name = "ancf3d_slope"
    rows = 2
    frame = ANCF3D
    fields = ("f_i", "g_i")

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        H = jnp.stack([p["f_i"], p["g_i"]], 1)                      # (k, 2, 3)
        g = jnp.einsum("krc,kc->kr", H, Xj[:, 3:6])
        Gj = jnp.concatenate([jnp.zeros_like(H), H], -1)
        return g, jnp.zeros_like(Gj), Gj, jnp.zeros_like(g)


class Ancf3DParallel(Ancf3DSlope):
    """f_i . (r_x,i x r_x,j) = 0, g_i . (r_x,i x r_x,j) = 0 (2 rows): the slopes of nodes
    i and j stay parallel (f_i, g_i (k, 3) unit vectors perpendicular to their initial
    common direction, global axes). A weld of two cable nodes with 'ancf3d_point'."""

    name = "ancf3d_parallel"

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        H = jnp.stack([p["f_i"], p["g_i"]], 1)                      # (k, 2, 3)
        a, b = Xi[:, None, 3:6], Xj[:, None, 3:6]
        g = jnp.sum(H * cross(a, b), -1)
        z = jnp.zeros_like(H)
        Gi = jnp.concatenate([z, cross(b, H)], -1)                   # h . (a x b) = a . (b x h)
        Gj = jnp.concatenate([z, cross(H, a)], -1)                   # = b . (h x a)
        quad = 2.0 * jnp.sum(H * cross(Vi[:, None, 3:6], Vj[:, None, 3:6]), -1)
        return g, Gi, Gj, quad


class Ancf3DLoad(A.AncfLoad):
    """A dead force `force` (k, 3) N on node j (frame i unused), potential -F . r_j."""

    name = "ancf3d_load"
    frame = ANCF3D
    field_shapes = {"force": (3,)}


# ------------------------------------------------------- rigid body <-> cable element
class SpatialBeamFrame(F.FrameKind):
    """The frame of a joint between a spatial rigid frame (body, particle or the ground)
    and a material point of a cable element: X = (r, p | r_a, r_x,a, r_b, r_x,b) (19,),
    V = (rdot, omega (body axes) | the element's 12 rates) (18,). A rigid frame fills the
    first 7 / 6 entries, a cable node a the last 12 (its own coordinates and those of the
    next node b of its block); the others are the ground pattern."""

    name = SPATIAL_BEAM
    wq, wv = 19, 18
    dim = 3
    ground_q = (0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0) + (0.0, 0.0, 0.0, 1.0, 0.0, 0.0) * 2
    _elem = tuple((0, e) for e in range(6)) + tuple((1, e) for e in range(6))
    views = {SPATIAL: tuple((0, e) for e in range(7)) + (None,) * 12,
             ANCF3D: (None,) * 7 + _elem}
    vviews = {SPATIAL: tuple((0, e) for e in range(6)) + (None,) * 12,
              ANCF3D: (None,) * 6 + _elem}

    def point(self, X, s):
        """The rigid part's point r + R s (and R s), as the 'spatial' frame kind."""
        return F.frame_kind(SPATIAL).point(X[..., :7], s)

    def point_velocity(self, X, V, As):
        return F.frame_kind(SPATIAL).point_velocity(X[..., :7], V[..., :6], As)

    def reaction(self, G, X, s):
        """'force' (3,) N: the resultant of G (18,) (rigid frame: its rdot part; element:
        the sum over its two nodes' positions, the shape functions being a partition of
        unity); 'moment' (3,) N m: about the rigid frame's point R s (global axes), or,
        on an element, about its first node a, from both nodes' position and slope parts;
        'generalized' (18,)."""
        R = quat_to_R(X[3:7])
        F_ = G[:3] + G[6:9] + G[12:15]
        m_rigid = mv(R, G[3:6]) - cross(mv(R, s), G[:3])
        m_elem = cross(X[10:13], G[9:12]) + cross(X[13:16] - X[7:10], G[12:15]) \
            + cross(X[16:19], G[15:18])
        return {"force": F_, "moment": m_rigid + m_elem, "generalized": G}


class Beam3DPoint(A._OnElement):
    """r(xi) - (r_i + R_i point_i) = 0 (3 rows, m): the material point xi in [0, 1] of the
    cable element of length `length` (m; the element's Params leaf '<node>.length', read,
    not copied) on frame j coincides with the point `point_i` (body coordinates, m) of the
    rigid frame i (the ground: a global
    point): a spherical joint between a cable and a body."""

    name = "beam3d_point"
    rows = 3
    frame = SPATIAL_BEAM
    fields = ("point_i", "xi", "length")

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        e, _, S, _ = A._material(p, Xj, Vj, d=3)
        side = _Side(Xi[:, :7], Vi[:, :6])
        P, _, Pq = side.point(p["point_i"])
        g = jnp.einsum("ka,kac->kc", S, e) - P
        eye = jnp.eye(3, dtype=Xi.dtype)
        k = Xi.shape[0]
        Gi = jnp.stack([-side.row_point(p["point_i"], jnp.broadcast_to(eye[m], P.shape))
                        for m in range(3)], 1)
        Gi = jnp.concatenate([Gi, jnp.zeros((k, 3, 12), Xi.dtype)], -1)
        Gj = A._element_block(jnp.einsum("ka,rc->krac", S, eye), rigid=6)
        return g, Gi, Gj, -Pq


class Beam3DSlope(A._OnElement):
    """(R_i f_i) . r_x(xi) = 0, (R_i g_i) . r_x(xi) = 0 (2 rows): the cable's slope at the
    material point xi in [0, 1] of the element of length `length` (m; the element's Params
    leaf '<node>.length', read, not copied) on frame j stays perpendicular to the vectors
    f_i, g_i fixed in the rigid frame i
    (body axes; the ground: global), i.e. along the axis f_i x g_i fixed in the body (the
    builder gives unit f_i, g_i perpendicular to each other and to that axis); the slope's
    length (the axial strain) is free. With 'beam3d_point' a weld (clamp) of a cable to a
    body: a cable has no torsion, so position and slope direction fix it. The rows stay
    independent for any slope (r_x != 0): f_i, g_i turn with the body."""

    name = "beam3d_slope"
    rows = 2
    frame = SPATIAL_BEAM
    fields = ("f_i", "g_i", "xi", "length")

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        e, ed, _, Sx = A._material(p, Xj, Vj, d=3)
        b = jnp.einsum("ka,kac->kc", Sx, e)                          # r_x(xi) (k, 3)
        bd = jnp.einsum("ka,kac->kc", Sx, ed)
        side = _Side(Xi[:, :7], Vi[:, :6])
        k = Xi.shape[0]
        g, Gi, Gj, quad = [], [], [], []
        for h in (p["f_i"], p["g_i"]):
            H, Hd, Hq = side.direction(h)                            # R h and its rates
            g.append(jnp.sum(H * b, -1))
            Gi.append(side.row_dir(h, b))                            # b . d(R h)/dV
            Gj.append(jnp.einsum("ka,kc->kac", Sx, H))               # H . S_x(xi) de
            # d2/dt2 of H . b at zero acceleration (omega_dot = 0, e_ddot = 0)
            quad.append(jnp.sum(Hq * b, -1) + 2.0 * jnp.sum(Hd * bd, -1))
        Gi = jnp.concatenate([jnp.stack(Gi, 1), jnp.zeros((k, 2, 12), Xi.dtype)], -1)
        Gj = A._element_block(jnp.stack(Gj, 1), rigid=6)
        return jnp.stack(g, 1), Gi, Gj, jnp.stack(quad, 1)


class Beam3DBeamPoint(A.BeamBeamPoint):
    """r_j(xi_j) - r_i(xi_i) - point = 0 (3 rows, m): a spherical joint between the
    material points xi_i, xi_j in [0, 1] of two cable elements (lengths `length_i`,
    `length_j`, m), `point` (k, 3) m the constant offset (global axes); frames i and j
    are elements (view kind 'spatial_beam', rigid part unused). See `ancf.BeamBeamPoint`."""

    name = "beam3d_beam_point"
    rows = 3
    frame = SPATIAL_BEAM
    rigid = 6


class Beam3DLoad(A.BeamLoad):
    """A dead force `force` (k, 3) N at the material point xi of a cable element (view kind
    'spatial_beam'): Q = S(xi)^T F, potential -F . r(xi). See `ancf.BeamLoad`."""

    name = "beam3d_load"
    frame = SPATIAL_BEAM
    field_shapes = {"force": (3,)}
    rigid = 6


class Beam3DFollower(F.ForceFamily):
    """A tangential follower force `force_t` (k,) N at the material point xi in [0, 1] of a
    cable element of length `length` (m; the element's Params leaf '<node>.length', read,
    not copied) on frame j (view kind 'spatial_beam'; frame i unused): the force f = F_t t
    along the unit tangent
    t = r_x(xi) / |r_x(xi)| of the deformed centre line (F_t > 0 pulls along the
    direction of increasing x: tension at a cable's end), so it turns with the cable;
    Q = S(xi)^T f on the element's nodal positions (the virtual work f . delta r(xi) at
    fixed f). A cable has no cross-section frame, so a follower force has no normal
    component here (planar beams: 'beam_follower'). Non-conservative: V = 0 and the power
    P = Q . V (W), which `simulate` integrates into the work of non-conservative forces.
    info: 'force_x', 'force_y', 'force_z' (N), the force in global axes."""

    name = "beam3d_follower"
    frame = SPATIAL_BEAM
    fields = ("force_t", "xi", "length")
    rigid = 6

    def evaluate(self, p, a):
        e, _, S, Sx = A._material(p, a.Xj, a.Vj, d=3)
        rx = jnp.einsum("ka,kac->kc", Sx, e)
        t = rx / jnp.linalg.norm(rx, axis=-1, keepdims=True)
        f = p["force_t"][:, None] * t
        Qj = A._element_block(jnp.einsum("ka,kc->kac", S, f)[:, None], self.rigid)[:, 0]
        P = jnp.sum(Qj * a.Vj, -1)
        info = {"force_x": f[:, 0], "force_y": f[:, 1], "force_z": f[:, 2]}
        return jnp.zeros_like(Qj), Qj, jnp.zeros_like(P), P, info

    def validate(self, p, xp=np):
        return A._OnElement.validate(self, p, xp)


for _f in (Ancf3DFrame(), Ancf3DNode(), Ancf3DCable(), Ancf3DPoint(), Ancf3DSlope(),
           Ancf3DParallel(), Ancf3DLoad(), SpatialBeamFrame(), Beam3DPoint(), Beam3DSlope(),
           Beam3DBeamPoint(), Beam3DLoad(), Beam3DFollower()):
    F.register(_f)


def tip_direction(x_node):
    """The unit slope direction (3,) of a node's coordinates (6,) = (r, r_x)."""
    x_node = jnp.asarray(x_node)
    return x_node[3:6] / jnp.linalg.norm(x_node[3:6])
