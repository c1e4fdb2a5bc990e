"""Planar ANCF Euler-Bernoulli beam elements (Shabana; Berzeri and Shabana 2000).

A beam is a chain of nodes of the node family 'ancf2d_node': each node has the absolute
position r (2,) (m) and slope r_x = dr/dx (2,) (dimensionless) of the beam's centre line
at that node, q_node = (x, y, x_x, y_x), nq = nv = 4, v = qdot (no rotation coordinates:
rotations are carried exactly by the slope). Between consecutive nodes i, j of a beam an
element of undeformed length L interpolates the centre line with the cubic Hermite
shape functions of xi = x / L in [0, 1]:

    r(xi) = S1 r_i + S2 r_x,i + S3 r_j + S4 r_x,j,
    S1 = 1 - 3 xi^2 + 2 xi^3, S2 = L (xi - 2 xi^2 + xi^3), S3 = 3 xi^2 - 2 xi^3,
    S4 = L (xi^3 - xi^2).

Strain energy (exact nonlinear strain measures, no small-rotation assumption):

    U = integral_0^L [ E A eps^2 / 2 + E I kappa^2 / 2 ] dx,
    eps = (r_x . r_x - 1) / 2               (Green-Lagrange axial strain of the centre line)
    kappa = (r_x x r_xx) / |r_x|^3          (exact curvature of the deformed centre line)

integrated with 5-point Gauss quadrature per element, vectorised over all elements. The
kernels (strains, energy, forces, damping, mass, the mass part and the body family base
`AncfBeam`) take d = 2 or 3 columns per nodal vector: `jaxmbs.flexible.ancf3d` uses them
for spatial cables, with the curvature vector kv = r_x x r_xx / |r_x|^3 of which the planar
kappa is the one (z) component; the energy's EI kappa^2 / 2 is EI |kv|^2 / 2 in both.
The internal forces -dU/dq are written out analytically (`element_forces`) and checked
against autodiff of U in tests/families and tests/test_ancf.py. The consistent mass
matrix rho A L integral S^T S dxi is constant (independent of q).

Families (registered on import):

* frame kind 'ancf2d': X = (x, y, x_x, y_x), V its rate; the ground frame is r = 0,
  r_x = (1, 0).
* node family 'ancf2d_node' (nq = nv = 4).
* body family 'ancf2d_beam' on 'ancf2d_node': per node instance the section and
  material of the element that starts at that node and ends at the next node of the
  block: rho (kg/m^3), area A (m^2), E (Pa), I (second moment of area, m^4), length L (m;
  0 for the last node of a beam: no element). All five are Params leaves (traced,
  fittable); also the Rayleigh damping coefficients alpha (1/s) and beta (s) and a
  uniform line load (2,) N/m per element (`Ancf2DBeam`). Its mass part is the assembled consistent mass (block tridiagonal, not
  block diagonal), inverted by a dense Cholesky factorisation once per `simulate` run
  (`prepare`; per call elsewhere); its loads are gravity, the line load, the elastic
  and the damping forces (-alpha M qdot and the strain-rate damping of
  `element_damping`), its potential gravity + line load + strain energy.
* constraint families 'ancf_point' (2 rows: r_j - r_i - point = 0, a pin; with frame i
  the ground, r_j = point) and 'ancf_slope' (1 row: (A(angle) r_x,i) x r_x,j = 0: the
  slope of node j keeps the direction of node i's slope turned by angle; with the ground
  (r_x = (1, 0)) the direction (cos angle, sin angle)). A pin + slope to the ground is a
  clamp (weld); the slope's magnitude (axial strain) stays free.
* force family 'ancf_load': a dead force (2,) N on a node (potential -F . r).
* force family 'beam_follower' (frame kind 'planar_beam'): a follower force (2,) N in the
  deformed cross-section frame (tangent, normal) and a torque N m at a material point xi
  of an element; non-conservative (no potential, its power counted as work).
* frame kind 'planar_beam' (a view: a planar frame's (x, y, theta) and an element's two
  nodes, 11 entries) and its constraint families 'beam_point' (2 rows: the material point
  xi of an element on a body point, a pin) and 'beam_slope' (1 row: the slope at xi along
  a body-fixed direction; with 'beam_point' a weld): beams joined to rigid bodies,
  particles and the ground (`Model.add_beam_body_pin`, `add_beam_body_weld`);
  'beam_beam_point' (2 rows: material points xi_i, xi_j of two elements coincide, a
  revolute joint between beams, `Model.add_node_pin(..., xi=, xi_other=)`) and
  'beam_beam_slope' (1 row: the slopes at xi_i, xi_j keep their initial angle; with
  'beam_beam_point' a weld between beams, `Model.add_node_weld(..., xi=, xi_other=)`);
  force family 'beam_load' (a dead force at a material point xi, `add_node_load(..., xi=)`).
* sliding joints along a beam (`Model.add_beam_slider`), on the planar frame of the
  sliding body: 'beam_slider' (2 rows: a body point on the deformed centre line at the
  arc length s, an extra massless coordinate; the instance reads the whole beam's nodes
  through `FamilyBlock.extra_cols`) and 'beam_slider_angle' (1 row: a body axis along the
  tangent at s; with 'beam_slider' a prismatic joint on a flexible guide).

`jaxmbs.Model.add_beam` meshes a straight beam into these families. The body family base
`AncfBeam` (assembled consistent mass, its factorisation once per run, masked elements
between beams) also carries the shear-deformable beam of `jaxmbs.flexible.reissner`,
which overrides the nodal width and the element masses and loads.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..core import families as F

# (re-exported: the spatial cables and the shear beams build on them, tests read them)
from .ancf_element import (  # noqa: F401
    ANCF2D,
    GAUSS_POINTS,
    BeamMass,
    _cross,
    _cross_v,
    _elements,
    _scatter_elements,
    _strains,
    _unit_mass_apply,
    cholesky_solve,
    element_damping,
    element_energy,
    element_forces,
    element_mass,
    shape_functions,
)
from .beam_points import (  # noqa: F401
    BeamBeamPoint,
    BeamBeamSlope,
    BeamFollower,
    BeamLoad,
    BeamPoint,
    BeamSlider,
    BeamSliderAngle,
    BeamSlope,
    PlanarBeamFrame,
    _element_block,
    _material,
    _OnElement,
)

__all__ = ["ANCF2D", "shape_functions", "element_energy", "element_forces", "element_damping",
           "element_mass", "beam_shape", "tip_state", "GAUSS_POINTS", "BeamFollower"]


class AncfFrame(F.FrameKind):
    """X = (r, r_x) (2d,) (m, 1), V its rate. Points: the node itself (an ANCF node has no
    rigid frame; attachment offsets s are ignored)."""

    def point(self, X, s):
        return X[..., : self.dim], jnp.zeros_like(X[..., : self.dim])

    def point_velocity(self, X, V, As):
        return V[..., : self.dim]

    def reaction(self, G, X, s):
        """'force' (d,) N on the node's position; 'moment' (N m; planar a number, 3D (3,)):
        the work of the generalised slope force G_s (d,) in a rotation dphi of the slope
        (dr_x = dphi x r_x), r_x x G_s; 'generalized' (2d,)."""
        d = self.dim
        m = _cross_v(X[d:], G[d:])
        return {"force": G[:d], "moment": m[0] if d == 2 else m, "generalized": G}


class Ancf2DFrame(AncfFrame):
    """Planar: X = (x, y, x_x, y_x) (m, m, 1, 1); the ground r = 0, r_x = (1, 0)."""

    name = ANCF2D
    wq = 4
    wv = 4
    dim = 2
    ground_q = (0.0, 0.0, 1.0, 0.0)


class Ancf2DNode(F.NodeFamily):
    name = "ancf2d_node"
    nq = nv = 4
    frame = ANCF2D
    frame_q = frame_v = (0, 1, 2, 3)
    coord_names = vel_names = ("x", "y", "x_x", "y_x")


class AncfBeam(F.BodyFamily):
    """The elements of ANCF beams (planar) or cables (3D), stored on their first node
    (see the module docstring): rho (k,) kg/m^3, area (k,) m^2, E (k,) Pa, I (k,) m^4,
    length (k,) m (0: no element starts here); Rayleigh damping alpha (k,) 1/s
    (mass-proportional) and beta (k,) s (stiffness-proportional, strain-rate form:
    `element_damping`); line_load (k, d) N/m, a dead load per unit undeformed length in
    fixed global axes, uniform over the element. `dim` d: 2 or 3."""

    fields = ("rho", "area", "E", "I", "length", "alpha", "beta", "line_load")
    coupled = True
    dim = 2

    @property
    def field_shapes(self):
        return {"line_load": (self.dim,)}

    @property
    def width(self):
        """Coordinates per node w (2d: position and slope)."""
        return 2 * self.dim

    def _element_masses(self, p, Ls, mask, dtype):
        """Consistent element masses (k-1, 2w, 2w) of the elements of lengths Ls (k-1,)
        (masked ones: mask False, given zero mass)."""
        k1 = Ls.shape[0]
        rhoA = jnp.where(mask, p["rho"][:k1] * p["area"][:k1], 0.0).astype(dtype)
        return element_mass(Ls, rhoA, self.dim)

    def _mass_dense(self, p, k, dtype):
        """The assembled consistent mass (wk, wk), w = `width`, of the block's k nodes
        (block tridiagonal: element e couples nodes e and e + 1)."""
        w = self.width
        L = p["length"][: k - 1]
        mask = L > 0
        Ls = jnp.where(mask, L, 1.0).astype(dtype)
        Me = self._element_masses(p, Ls, mask, dtype)
        idx = w * np.arange(k - 1)[:, None] + np.arange(2 * w)[None, :]
        return jnp.zeros((w * k, w * k), dtype).at[idx[:, :, None], idx[:, None, :]].add(Me)

    def mass_part(self, p, X):
        w = self.width
        if "mass_inverse" in p:  # prepared once per simulation (see `prepare`)
            return BeamMass(p["mass_dense"], p["mass_inverse"], w)
        return BeamMass(self._mass_dense(p, X.shape[0], X.dtype), w=w)

    def prepare(self, p):
        """Adds 'mass_dense' (wk, wk), the assembled consistent mass, and 'mass_inverse',
        its inverse by one Cholesky factorisation: the mass is constant, so `simulate`
        factors it once per run instead of at every evaluation."""
        k = p["rho"].shape[0]
        D = self._mass_dense(p, k, jnp.result_type(p["rho"], float))
        return {**p, "mass_dense": D, "mass_inverse": cholesky_solve(D, jnp.eye(D.shape[0], dtype=D.dtype))}

    def loads(self, p, X, V, g):
        """Gravity and the line load (consistent: integral S^T (rho A g + line_load) dx,
        exact: S is cubic), the elastic forces and the Rayleigh damping forces
        -alpha M_e ed + `element_damping` (beta); the potential per instance: that of
        gravity and the line load on its coordinates + the strain energy of the element
        that starts at it (damping has none). No velocity terms (constant mass)."""
        k, d = X.shape[0], self.dim
        mask, Ls, e = _elements(p, X)
        ed = jnp.concatenate([V[:-1], V[1:]], -1).reshape(k - 1, 4, d)
        rhoA = jnp.where(mask, p["rho"][: k - 1] * p["area"][: k - 1], 0.0)
        EA = p["E"][: k - 1] * p["area"][: k - 1]
        EI = p["E"][: k - 1] * p["I"][: k - 1]
        wts = jnp.stack([0.5 * jnp.ones_like(Ls), Ls / 12, 0.5 * jnp.ones_like(Ls), -Ls / 12], -1)
        f = rhoA[:, None] * g[None, :] + jnp.where(mask[:, None], p["line_load"][: k - 1], 0.0)
        Qg_e = (Ls[:, None, None] * wts[..., None] * f[:, None, :]).reshape(-1, 4 * d)
        Qg = _scatter_elements(Qg_e, k)
        Qd_mass = -(p["alpha"][: k - 1] * rhoA)[:, None] * _unit_mass_apply(Ls, ed).reshape(-1, 4 * d)
        Qe = element_forces(e, Ls, EA, EI, ed, p["beta"][: k - 1]).reshape(-1, 4 * d) + Qd_mass
        Qe = jnp.where(mask[:, None], Qe, 0.0)
        U = jnp.where(mask, element_energy(e, Ls, EA, EI), 0.0)
        pot = -jnp.sum(Qg * X, -1) + jnp.concatenate([U, jnp.zeros((1,), X.dtype)])
        return Qg + _scatter_elements(Qe, k), pot

    def inertia_data(self, p):
        z = jnp.zeros_like(p["rho"])
        J = z if self.dim == 2 else jnp.zeros(z.shape + (3, 3), z.dtype)
        return z, J, jnp.zeros(z.shape + (self.dim,), z.dtype)

    # the rules of an element's fields, on the nodes that start an element (length > 0;
    # a beam's last node starts none, and its copies of the section are not used): one
    # table for the builders (`add_beam`'s section, `SECTION_FIELDS`), Mechanism.replace
    # and the PARAMS status flag (`jaxmbs.core.validate`)
    rules = {"rho": "> 0", "area": "> 0", "E": "> 0", "I": "> 0", "alpha": ">= 0",
             "beta": ">= 0"}

    def validate(self, p, xp=np):
        """length >= 0 (m; 0: a beam's last node, no element); on every node that starts an
        element (length > 0) the `rules`: rho, area, E, I > 0, alpha, beta >= 0; the line
        load (a vector, any sign) only finite (checked by the core)."""
        from ..core.validate import rule_masks

        with np.errstate(invalid="ignore"):
            L = p["length"]
            out = [("length", ~(L >= 0), "must be >= 0 (m; 0 on a beam's last node, which "
                    "starts no element)")]
            elem = L > 0
        return out + rule_masks(p, self.rules, xp, where=elem,
                                note=" on a node that starts an element")


class Ancf2DBeam(AncfBeam):
    """Planar ANCF beam elements on 'ancf2d_node' (line_load (k, 2) N/m)."""

    name = "ancf2d_beam"
    node = "ancf2d_node"
    dim = 2


class AncfPoint(F.ConstraintFamily):
    """r_j - r_i - point = 0 (2 rows, m): node j at node i's position plus `point` (k, 2)
    m (global axes); with the ground as frame i, node j pinned at `point`. (The 3D
    'ancf3d_point': 3 rows, point (k, 3).)"""

    name = "ancf_point"
    rows = 2
    frame = ANCF2D
    fields = ("point",)

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        k, d = Xi.shape[0], self.rows
        g = Xj[:, :d] - Xi[:, :d] - p["point"]
        E = jnp.broadcast_to(jnp.eye(d, 2 * d, dtype=Xi.dtype), (k, d, 2 * d))
        return g, -E, E, jnp.zeros_like(g)


class AncfSlope(F.ConstraintFamily):
    """(A(angle) r_x,i) x r_x,j = 0 (1 row): node j's slope along node i's slope turned by
    `angle` (k,) rad; with the ground as frame i, along (cos angle, sin angle)."""

    name = "ancf_slope"
    rows = 1
    frame = ANCF2D
    fields = ("angle",)

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        c, s = jnp.cos(p["angle"]), jnp.sin(p["angle"])
        rot = lambda x: jnp.stack([c * x[:, 0] - s * x[:, 1], s * x[:, 0] + c * x[:, 1]], -1)
        rotT = lambda x: jnp.stack([c * x[:, 0] + s * x[:, 1], -s * x[:, 0] + c * x[:, 1]], -1)
        a, b = rot(Xi[:, 2:4]), Xj[:, 2:4]
        g = _cross(a, b)[:, None]
        z = jnp.zeros_like(a)
        Gi = jnp.concatenate([z, rotT(jnp.stack([b[:, 1], -b[:, 0]], -1))], -1)[:, None, :]
        Gj = jnp.concatenate([z, jnp.stack([-a[:, 1], a[:, 0]], -1)], -1)[:, None, :]
        quad = 2.0 * _cross(rot(Vi[:, 2:4]), Vj[:, 2:4])[:, None]
        return g, Gi, Gj, quad


class AncfLoad(F.ForceFamily):
    """A dead force `force` (k, 2) N on node j (frame i unused): Q = (F, 0, 0) on the
    node's position, potential -F . r_j (a constant force is conservative)."""

    name = "ancf_load"
    frame = ANCF2D
    fields = ("force",)
    field_shapes = {"force": (2,)}

    def evaluate(self, p, a):
        Fo = p["force"]
        Qj = jnp.concatenate([Fo, jnp.zeros_like(Fo)], -1)
        V = -jnp.sum(Fo * a.Xj[:, : Fo.shape[-1]], -1)
        z = jnp.zeros_like(V)
        return jnp.zeros_like(Qj), Qj, V, z, {}




for _f in (Ancf2DFrame(), Ancf2DNode(), Ancf2DBeam(), AncfPoint(), AncfSlope(), AncfLoad(),
           PlanarBeamFrame(), BeamPoint(), BeamSlope(), BeamFollower(), BeamBeamPoint(),
           BeamBeamSlope(), BeamLoad(), BeamSlider(), BeamSliderAngle()):
    F.register(_f)


# ------------------------------------------------------------------------ outputs
def beam_shape(X, length, points=8):
    """Centre line of a block of nodes X (k, 4) with element lengths `length` (k,) (0: no
    element) at `points` points per element: (k - 1, points, 2) m (rows of missing
    elements are the straight segment between their nodes' positions, masked by the
    caller if needed)."""
    X = jnp.asarray(X)
    k = X.shape[0]
    L = jnp.asarray(length, X.dtype)[: k - 1]
    Ls = jnp.where(L > 0, L, 1.0)
    e = jnp.concatenate([X[:-1], X[1:]], -1).reshape(k - 1, 4, 2)
    xi = jnp.linspace(0.0, 1.0, points, dtype=X.dtype)
    S, _, _ = shape_functions(xi[None, :], Ls[:, None])
    return jnp.einsum("kpa,kac->kpc", S, e)


def tip_state(x_node):
    """(x, y, angle) of a node's coordinates (4,) = (x, y, x_x, y_x): position (m) and the
    slope's angle atan2(y_x, x_x) (rad)."""
    x_node = jnp.asarray(x_node)
    return x_node[0], x_node[1], jnp.arctan2(x_node[3], x_node[2])
