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

import jax
import jax.numpy as jnp
import numpy as np

from ..core import families as F

__all__ = ["ANCF2D", "shape_functions", "element_energy", "element_forces", "element_damping",
           "element_mass", "beam_shape", "tip_state", "GAUSS_POINTS", "BeamFollower"]

ANCF2D = "ancf2d"

# 5-point Gauss-Legendre on [0, 1]: exact for the axial term (degree 8) and the mass
# (degree 6); the curvature term is rational and integrated to the mesh's order
_gx, _gw = np.polynomial.legendre.leggauss(5)
GAUSS_POINTS = (0.5 * (_gx + 1.0), 0.5 * _gw)


def shape_functions(xi, L, xp=jnp):
    """Hermite shape functions of xi (...) for elements of length L (...):
    S, dS/dxi, d2S/dxi2, each (..., 4) in the order (r_i, r_x,i, r_j, r_x,j).
    xp: the array module (numpy for constants computed at import: no XLA compiles)."""
    xi = xp.asarray(xi)
    L = xp.asarray(L)
    x2, x3 = xi * xi, xi * xi * xi
    S = xp.stack(xp.broadcast_arrays(1 - 3 * x2 + 2 * x3, L * (xi - 2 * x2 + x3), 3 * x2 - 2 * x3,
                                     L * (x3 - x2)), -1)
    dS = xp.stack(xp.broadcast_arrays(-6 * xi + 6 * x2, L * (1 - 4 * xi + 3 * x2), 6 * xi - 6 * x2,
                                      L * (3 * x2 - 2 * xi)), -1)
    ddS = xp.stack(xp.broadcast_arrays(-6 + 12 * xi, L * (-4 + 6 * xi), 6 - 12 * xi,
                                       L * (6 * xi - 2)), -1)
    return S, dS, ddS


def _cross(a, b):
    """Planar cross product a x b (...) of a, b (..., 2)."""
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _cross_v(a, b):
    """a x b as a vector: (..., 1) for planar a, b (..., 2) (the z component), (..., 3) in
    3D."""
    if a.shape[-1] == 2:
        return _cross(a, b)[..., None]
    return jnp.cross(a, b)


def _cross_T(M, a):
    """The vector w (..., d) with w . delta = M . (delta x a) for every delta (..., d): the
    transpose of the map delta -> delta x a applied to M ((..., 1) planar, (..., 3) 3D)."""
    if a.shape[-1] == 2:
        return M * jnp.stack([a[..., 1], -a[..., 0]], -1)
    return jnp.cross(a, M)


def _strains(e, L, d=None):
    """e (k, 4, d) element nodal vectors (r_i, r_x,i, r_j, r_x,j), L (k,) -> at the Gauss
    points (k, g): r_x (k, g, d), r_xx (k, g, d), eps, the curvature vector
    kv = (r_x x r_xx) / |r_x|^3 (k, g, 1) planar (the signed curvature), (k, g, 3) in 3D,
    |r_x|, and the shape derivatives in x: Sx (k, g, 4), Sxx (k, g, 4). e may carry more
    columns (k, 4, c d) when the dimension d is given, e.g. the nodal vectors and their
    rates side by side: r_x and r_xx then have c d columns too and eps, kv, |r_x| are
    those of the first d."""
    d = e.shape[-1] if d is None else d
    xi, _ = GAUSS_POINTS
    _, dS, ddS = shape_functions(jnp.asarray(xi, e.dtype)[None, :], L[:, None])
    Sx = dS / L[:, None, None]
    Sxx = ddS / (L * L)[:, None, None]
    rx_all = jnp.einsum("kga,kac->kgc", Sx, e)
    rxx_all = jnp.einsum("kga,kac->kgc", Sxx, e)
    rx, rxx = rx_all[..., :d], rxx_all[..., :d]
    n2 = jnp.sum(rx * rx, -1)
    n = jnp.sqrt(n2)
    eps = 0.5 * (n2 - 1.0)
    kv = _cross_v(rx, rxx) / (n2 * n)[..., None]
    return rx_all, rxx_all, eps, kv, n, Sx, Sxx


def element_energy(e, L, EA, EI):
    """Strain energy (J) of k elements: e (k, 4, d) nodal vectors (r_i, r_x,i, r_j,
    r_x,j) (m, 1, m, 1), d = 2 (planar) or 3 (spatial cable), L (k,) undeformed length (m),
    EA (k,) axial stiffness (N), EI (k,) bending stiffness (N m^2) -> (k,). The bending
    term uses kappa^2 = |r_x x r_xx|^2 / |r_x|^6 (no square root: smooth where the element
    is straight)."""
    _, w = GAUSS_POINTS
    _, _, eps, kv, _, _, _ = _strains(e, L)
    dens = 0.5 * EA[:, None] * eps * eps + 0.5 * EI[:, None] * jnp.sum(kv * kv, -1)
    return L * (dens @ jnp.asarray(w, e.dtype))


def _curvature_rate(rx, rxx, kv, n, rxd, rxxd):
    """d kv / dt (k, g, 1 or 3) for the rates rxd, rxxd of r_x, r_xx (k, g, d)."""
    n3 = (n * n * n)[..., None]
    return (_cross_v(rxd, rxx) + _cross_v(rx, rxxd)) / n3 \
        - 3.0 * kv * (jnp.sum(rx * rxd, -1) / (n * n))[..., None]


def _work_conjugate(L, rx, rxx, kv, n, Sx, Sxx, N, Mb, dtype):
    """-integral (N d eps/de + Mb . d kv/de) dx (k, 4, d): the generalised force of an
    axial force N (k, g) (N) and a bending moment vector Mb (k, g, 1 or 3) (N m) at the
    Gauss points (kv: the curvature vector, `_strains`)."""
    _, w = GAUSS_POINTS
    n3 = (n * n * n)[..., None]
    g_rx = N[..., None] * rx + _cross_T(Mb, rxx) / n3 \
        - (3.0 * jnp.sum(kv * Mb, -1) / (n * n))[..., None] * rx
    g_rxx = -_cross_T(Mb, rx) / n3
    ww = jnp.asarray(w, dtype)
    dU = jnp.einsum("g,kga,kgc->kac", ww, Sx, g_rx) + jnp.einsum("g,kga,kgc->kac", ww, Sxx, g_rxx)
    return -L[:, None, None] * dU


def element_forces(e, L, EA, EI, ed=None, beta=None):
    """Generalised internal (elastic) forces -dU/de (k, 4, d) of k elements, analytic (see
    `element_energy` for the arguments; checked against jax.grad in the tests). With the
    nodal rates ed (k, 4, d) and beta (k,) s: plus the damping forces of
    `element_damping` (one pass: the axial force EA (eps + beta eps_dot) and the moment
    EI (kv + beta kv_dot) at the Gauss points, kv the curvature vector)."""
    d = e.shape[-1]
    both = e if ed is None else jnp.concatenate([e, ed], -1)  # one pass for q and qdot
    rx, rxx, eps, kv, n, Sx, Sxx = _strains(both, L, d)
    rx, rxd, rxx, rxxd = rx[..., :d], rx[..., d:], rxx[..., :d], rxx[..., d:]
    Mb = kv
    if ed is not None:
        b = beta[:, None]
        eps = eps + b * jnp.sum(rx * rxd, -1)
        Mb = kv + b[..., None] * _curvature_rate(rx, rxx, kv, n, rxd, rxxd)
    return _work_conjugate(L, rx, rxx, kv, n, Sx, Sxx, EA[:, None] * eps,
                           EI[:, None, None] * Mb, e.dtype)


def element_damping(e, ed, L, EA, EI, beta):
    """Stiffness-proportional (Kelvin-Voigt) damping forces (k, 4, d) of k elements in the
    strain-rate form: the viscous axial force beta EA eps_dot (N) and moment beta EI
    kv_dot (N m) do the work of `element_forces`' stresses,

        Q_d = -beta integral (EA eps_dot d eps/de + EI kv_dot . d kv/de) dx,

    eps_dot = r_x . r_x_dot, kv_dot = dkv/dr_x r_x_dot + dkv/dr_xx r_xx_dot (kv = r_x x
    r_xx / |r_x|^3 the curvature vector, a signed scalar in the plane); e, ed (k, 4, d)
    nodal vectors and their rates (m, 1; m/s, 1/s), L, EA, EI as `element_energy`, beta
    (k,) s. Objective (a rigid motion has eps_dot = kv_dot = 0: no force), and about the
    undeformed straight state Q_d = -beta K ed, K the tangent stiffness, i.e. the
    stiffness part of Rayleigh damping. Dissipates ed . Q_d = -beta integral (EA
    eps_dot^2 + EI |kv_dot|^2) dx <= 0."""
    return element_forces(e, L, EA, EI, ed, beta) - element_forces(e, L, EA, EI)


def element_mass(L, rhoA, d=2):
    """Consistent mass matrices (k, 4d, 4d) (kg, kg m, kg m^2 entries) of k elements of
    length L (k,) and mass per length rhoA (k,) (kg/m) in d = 2 or 3 dimensions, in the
    order of the element's coordinates (r_i, r_x,i, r_j, r_x,j), each d entries: rho A L
    integral S^T S dxi (x) I_d, constant."""
    xi, w = GAUSS_POINTS
    S, _, _ = shape_functions(jnp.asarray(xi, L.dtype)[None, :], L[:, None])  # (k, g, 4)
    H = jnp.einsum("g,kga,kgb->kab", jnp.asarray(w, L.dtype), S, S)
    M = jnp.einsum("kab,cd->kacbd", H, jnp.eye(d, dtype=L.dtype)).reshape(-1, 4 * d, 4 * d)
    return (rhoA * L)[:, None, None] * M


# integral_0^1 S_a S_b dxi of the shape functions with the slope ones (S2, S4) divided by L
_H1 = np.einsum("g,ga,gb->ab", GAUSS_POINTS[1], *[shape_functions(GAUSS_POINTS[0], 1.0, np)[0]] * 2)


def _unit_mass_apply(L, ed):
    """M_e ed / (rho A) (k, 4, d) for elements of length L (k,) and nodal rates ed (k, 4, d):
    L D H1 D ed, D = diag(1, L, 1, L) (the slope shape functions scale with L); the same
    as `element_mass` (tested there) without forming the (k, 4d, 4d) matrices."""
    d = jnp.stack([jnp.ones_like(L), L, jnp.ones_like(L), L], -1)[..., None]  # (k, 4, 1)
    return L[:, None, None] * d * jnp.matmul(jnp.asarray(_H1, ed.dtype), d * ed)


def _elements(p, X, rows=4):
    """Element data of a block of k nodes X (k, w): element e joins nodes e and e + 1 when
    e < k - 1 and length[e] > 0. Returns (mask (k-1,), safe L (k-1,), e (k-1, rows,
    2w / rows)): for ANCF nodes (w = 2d) the nodal vectors (r_i, r_x,i, r_j, r_x,j) (k-1, 4,
    d); rows=2 gives the two nodes' coordinates (k-1, 2, w)."""
    k, w = X.shape
    L = p["length"][: k - 1]
    mask = L > 0
    Ls = jnp.where(mask, L, 1.0)
    e = jnp.concatenate([X[:-1], X[1:]], -1).reshape(k - 1, rows, 2 * w // rows)
    return mask, Ls, e


def cholesky_solve(D, X):
    """D^-1 X for a symmetric positive definite D (n, n) by its Cholesky factor."""
    Lc = jnp.linalg.cholesky(D)
    y = jax.scipy.linalg.solve_triangular(Lc, X, lower=True)
    return jax.scipy.linalg.solve_triangular(Lc.T, y, lower=False)


def _scatter_elements(vals, k):
    """(k-1, 2w) element vectors -> (k, w) node vectors (element e on nodes e, e + 1)."""
    w = vals.shape[1] // 2
    out = jnp.zeros((k, w), vals.dtype)
    return out.at[: k - 1].add(vals[:, :w]).at[1:].add(vals[:, w:])


class BeamMass:
    """The consistent mass of a block of k ANCF nodes of w = 2d coordinates each: (wk, wk),
    block tridiagonal (elements couple consecutive nodes), constant. apply / solve /
    dense / inverse_dense / frame_inverse as the other mass parts. solve: by the inverse
    `inv` (wk, wk) when given (computed once per simulation from a Cholesky factor,
    `AncfBeam.prepare`), else by a dense Cholesky factorisation at each call."""

    coupled = True  # not block diagonal over nodes: frame_inverse is a block of M^-1

    def __init__(self, D, inv=None, w=4):
        self._D = D
        self._inv = inv
        self._w = w

    def dense(self):
        return self._D

    def apply(self, X):
        return self._D @ X

    def solve(self, X):
        if self._inv is not None:
            return self._inv @ X
        return cholesky_solve(self._D, X)

    def inverse_dense(self):
        if self._inv is not None:
            return self._inv
        n = self._D.shape[0]
        return self.solve(jnp.eye(n, dtype=self._D.dtype))

    def frame_inverse(self, idx, X):
        """Rows X (N, w) on instances idx (N,) (-1: none, gives 0) -> the diagonal
        w x w blocks of M^-1 applied to them (N, w)."""
        w = self._w
        idx = np.asarray(idx)
        Minv = self.inverse_dense().reshape(self._D.shape[0] // w, w, -1, w)
        blocks = Minv[np.maximum(idx, 0), :, np.maximum(idx, 0), :]  # (N, w, w)
        out = jnp.einsum("nab,nb->na", blocks, X)
        return jnp.where(jnp.asarray(idx >= 0)[:, None], out, 0.0)


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

    def validate(self, p, xp=np):
        """rho, area, E, I >= 0, length >= 0 (0: the last node of a beam), alpha, beta >= 0;
        the line load (a vector, any sign) only finite (checked by the core)."""
        return [(f, ~(p[f] >= 0), "must be >= 0") for f in self.fields if f != "line_load"]


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

    def evaluate(self, p, a):
        Fo = p["force"]
        Qj = jnp.concatenate([Fo, jnp.zeros_like(Fo)], -1)
        V = -jnp.sum(Fo * a.Xj[:, : Fo.shape[-1]], -1)
        z = jnp.zeros_like(V)
        return jnp.zeros_like(Qj), Qj, V, z, {}


# ------------------------------------------------------- rigid body <-> beam element
PLANAR_BEAM = "planar_beam"


class PlanarBeamFrame(F.FrameKind):
    """The frame of a joint between a planar rigid frame (body, particle or the ground)
    and a material point of an ANCF element: X = (x, y, theta | r_a, r_x,a, r_b, r_x,b)
    (11,), V its rate. A planar frame fills the first three entries, an ANCF node a the
    last eight: its own coordinates and those of the next node b of its block (the
    element a -> b; the builder attaches such joints to an element's first node only).
    The other entries are the ground pattern (their Jacobian columns are dropped)."""

    name = PLANAR_BEAM
    wq = wv = 11
    dim = 2
    ground_q = (0.0, 0.0, 0.0) + (0.0, 0.0, 1.0, 0.0) * 2
    views = {"planar": ((0, 0), (0, 1), (0, 2)) + (None,) * 8,
             ANCF2D: (None,) * 3 + tuple((0, e) for e in range(4)) + tuple((1, e) for e in range(4))}

    def point(self, X, s):
        """The planar part: r + A(theta) s."""
        from ..planar.geometry import point
        return point(X[..., :3], s)

    def point_velocity(self, X, V, As):
        from ..planar.geometry import point_velocity
        return point_velocity(V[..., :3], As)

    def reaction(self, G, X, s):
        """'force' (2,) N: the resultant of the generalised constraint force G (11,) on the
        frame (on a rigid frame its (x, y) part; on an element the sum over its two nodes'
        positions, the shape functions being a partition of unity); 'moment' () N m: about
        the rigid frame's point A s, or, on an element, about its first node a (the
        material point when xi = 0), summed over both nodes' position and slope parts;
        'generalized' (11,)."""
        from ..planar.geometry import cross as cr
        from ..planar.geometry import rotate
        F_ = G[:2] + G[3:5] + G[7:9]
        m_rigid = G[2] - cr(rotate(X[2], s), G[:2])
        m_elem = cr(X[5:7], G[5:7]) + cr(X[7:9] - X[3:5], G[7:9]) + cr(X[9:11], G[9:11])
        return {"force": F_, "moment": m_rigid + m_elem, "generalized": G}


def _material(p, X, V, d=2):
    """Material point data of k element frames X, V (k, n + 4d) (a rigid frame's n
    entries first, the element's last): the element's nodal vectors e, edot (k, 4, d) and the shape rows
    S, S_x = dS/dx (k, 4) at p['xi'] for elements of length p['length']."""
    L = p["length"]
    S, dS, _ = shape_functions(p["xi"], L)
    return X[:, -4 * d:].reshape(-1, 4, d), V[:, -4 * d:].reshape(-1, 4, d), S, dS / L[:, None]


def _element_block(rows, rigid=3):
    """Jacobian block (k, r, rigid + 4d) of rows w (k, r, 4, d) on the element entries
    (d row / d e_a,c = w[a, c]), zero on the `rigid` entries of the rigid frame."""
    k, r = rows.shape[:2]
    return jnp.concatenate([jnp.zeros((k, r, rigid), rows.dtype), rows.reshape(k, r, -1)], -1)


class _OnElement(F.ConstraintFamily):
    """Rows between a rigid frame i and the material point xi (in [0, 1]) of an element of
    length `length` (m) > 0 on frame j (frame kind 'planar_beam')."""

    frame = PLANAR_BEAM

    def validate(self, p, xp=np):
        return [("xi", ~((p["xi"] >= 0) & (p["xi"] <= 1)), "must lie in [0, 1]"),
                ("length", ~(p["length"] > 0), "must be > 0")]


class BeamPoint(_OnElement):
    """r(xi) - (r_i + A(theta_i) point_i) = 0 (2 rows, m): the material point xi in [0, 1]
    of the element of length `length` (m; a copy of the element's length made at build
    time) on frame j coincides with the point `point_i` (body coordinates, m) of the rigid
    frame i (the ground: a global point): a pin between a beam and a body."""

    name = "beam_point"
    rows = 2
    fields = ("point_i", "xi", "length")

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        from ..planar.geometry import point_jacobian, rotate
        e, _, S, _ = _material(p, Xj, Vj)
        As = rotate(Xi[:, 2], p["point_i"])
        g = jnp.einsum("ka,kac->kc", S, e) - Xi[:, :2] - As
        Gi = jnp.concatenate([point_jacobian(As, -1.0), jnp.zeros((Xi.shape[0], 2, 8), Xi.dtype)], -1)
        eye = jnp.eye(2, dtype=Xi.dtype)
        Gj = _element_block(jnp.einsum("ka,rc->krac", S, eye))
        quad = (Vi[:, 2] ** 2)[:, None] * As      # d2/dt2 of -A s at zero acceleration
        return g, Gi, Gj, quad


class BeamSlope(_OnElement):
    """(A(theta_i) axis_i) x r_x(xi) = 0 (1 row): the slope of the beam at the material
    point xi keeps the direction of the unit vector `axis_i` fixed in the rigid frame i
    (body coordinates; the ground: global). With `beam_point` a weld (clamp) of the beam
    to the body; the slope's length (the axial strain) stays free."""

    name = "beam_slope"
    rows = 1
    fields = ("axis_i", "xi", "length")

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        from ..planar.geometry import dot, perp, rotate
        e, ed, _, Sx = _material(p, Xj, Vj)
        a = rotate(Xi[:, 2], p["axis_i"])
        b = jnp.einsum("ka,kac->kc", Sx, e)
        bd = jnp.einsum("ka,kac->kc", Sx, ed)
        g = _cross(a, b)
        w = Vi[:, 2]
        Gi = jnp.concatenate([jnp.zeros_like(a), -dot(a, b)[:, None],
                              jnp.zeros((a.shape[0], 8), a.dtype)], -1)[:, None, :]
        Gj = _element_block(jnp.einsum("ka,kc->kac", Sx, perp(a))[:, None])
        quad = -w * w * g - 2.0 * w * dot(a, bd)
        return g[:, None], Gi, Gj, quad[:, None]


class BeamFollower(F.ForceFamily):
    """A follower force and a torque at the material point xi in [0, 1] of an element of
    length `length` (m; a copy of the element's length made at build time) on frame j
    (frame kind 'planar_beam'; frame i unused):

    * `force` (k, 2) N in the deformed cross-section frame at xi: components along the
      unit tangent t = r_x / |r_x| and the normal n = z x t = (-t_y, t_x), so the force
      turns with the beam: f = F_t t + F_n n, Q = S(xi)^T f (S the shape functions).
    * `torque` (k,) N m about z: the work conjugate of the section angle
      theta = atan2(y_x, x_x) at xi, Q = M S_x(xi)^T dtheta/dr_x,
      dtheta/dr_x = (-y_x, x_x) / |r_x|^2 (in the plane a moment is the same dead or
      following).

    Both are non-conservative (a follower force has no potential; the torque's potential
    -M theta is multi-valued, theta winding past +-pi): V = 0 and the power
    P = Q . V (W), which `simulate` integrates into the work of non-conservative forces.
    info: 'force_x', 'force_y' (N), the follower force in global axes."""

    name = "beam_follower"
    frame = PLANAR_BEAM
    fields = ("force", "torque", "xi", "length")

    def evaluate(self, p, a):
        from ..planar.geometry import perp
        e, _, S, Sx = _material(p, a.Xj, a.Vj)
        rx = jnp.einsum("ka,kac->kc", Sx, e)
        n2 = jnp.sum(rx * rx, -1)
        t = rx / jnp.sqrt(n2)[:, None]
        f = p["force"][:, :1] * t + p["force"][:, 1:] * perp(t)
        dth = (p["torque"] / n2)[:, None] * perp(rx)           # M dtheta/dr_x (k, 2)
        rows = jnp.einsum("ka,kc->kac", S, f) + jnp.einsum("ka,kc->kac", Sx, dth)
        Qj = _element_block(rows[:, None])[:, 0]
        P = jnp.sum(Qj * a.Vj, -1)
        return jnp.zeros_like(Qj), Qj, jnp.zeros_like(P), P, {"force_x": f[:, 0], "force_y": f[:, 1]}

    def validate(self, p, xp=np):
        return _OnElement.validate(self, p, xp)


def _element_point(X, xi, L, d):
    """r(xi) (k, d) and the shape row S(xi) (k, 4) of the element on k view frames X
    (k, n + 4d) (the element's nodal vectors last), xi (k,), element length L (k,) m."""
    S, _, _ = shape_functions(xi, L)
    return jnp.einsum("ka,kac->kc", S, X[:, -4 * d:].reshape(-1, 4, d)), S


class BeamBeamPoint(_OnElement):
    """r_j(xi_j) - r_i(xi_i) - point = 0 (2 rows, m): the material point xi_j in [0, 1]
    of the element (length `length_j`, m) on frame j stays at the material point xi_i of
    the element (length `length_i`) on frame i plus the constant offset `point` (k, 2) m
    (global axes; 0 for coincident points): a revolute joint between two beams at any
    material points (`Model.add_node_pin` with xi / xi_other; nodes are xi = 0 or 1).
    Frames i and j are elements (view kind 'planar_beam', their rigid part unused). The
    rows are linear in the nodal coordinates: quad = 0. (3D: 'beam3d_beam_point', a
    spherical joint, 3 rows.)"""

    name = "beam_beam_point"
    rows = 2
    rigid = 3  # velocity entries of the view's rigid part (unused, zero columns)
    fields = ("point", "xi_i", "xi_j", "length_i", "length_j")

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        d = self.rows
        ri, Si = _element_point(Xi, p["xi_i"], p["length_i"], d)
        rj, Sj = _element_point(Xj, p["xi_j"], p["length_j"], d)
        eye = jnp.eye(d, dtype=Xi.dtype)
        Gi = _element_block(jnp.einsum("ka,rc->krac", -Si, eye), self.rigid)
        Gj = _element_block(jnp.einsum("ka,rc->krac", Sj, eye), self.rigid)
        g = rj - ri - p["point"]
        return g, Gi, Gj, jnp.zeros_like(g)

    def validate(self, p, xp=np):
        return [(f, ~((p[f] >= 0) & (p[f] <= 1)), "must lie in [0, 1]") for f in ("xi_i", "xi_j")] \
            + [(f, ~(p[f] > 0), "must be > 0") for f in ("length_i", "length_j")]


class BeamBeamSlope(_OnElement):
    """(A(angle) r_x,i(xi_i)) x r_x,j(xi_j) = 0 (1 row): the slope r_x = dS/dx(xi) e at the
    material point xi_j in [0, 1] of the element (length `length_j`, m) on frame j keeps
    the direction of the slope at the material point xi_i of the element (length
    `length_i`) on frame i turned by `angle` (k,) rad. With 'beam_beam_point' a weld
    (clamp) between two beams at any material points (`BeamBuilder.add_node_weld` with
    xi / xi_other); the slopes' lengths (axial strains) stay free. Frames as
    'beam_beam_point' (view kind 'planar_beam', rigid part unused). The row is bilinear in
    the two elements' nodal vectors: quad = 2 (A rdot_x,i) x rdot_x,j."""

    name = "beam_beam_slope"
    rows = 1
    rigid = 3
    fields = ("angle", "xi_i", "xi_j", "length_i", "length_j")

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        from ..planar.geometry import perp, rotate
        ei, edi, _, Sxi = _material({"xi": p["xi_i"], "length": p["length_i"]}, Xi, Vi)
        ej, edj, _, Sxj = _material({"xi": p["xi_j"], "length": p["length_j"]}, Xj, Vj)
        slope = lambda Sx, e: jnp.einsum("ka,kac->kc", Sx, e)
        a = rotate(p["angle"], slope(Sxi, ei))
        b = slope(Sxj, ej)
        g = _cross(a, b)
        # d/da_i of (A a_i) x b = A^T (b_y, -b_x) = -A^T perp(b)
        Gi = _element_block(jnp.einsum("ka,kc->kac", Sxi, -rotate(-p["angle"], perp(b)))[:, None],
                            self.rigid)
        Gj = _element_block(jnp.einsum("ka,kc->kac", Sxj, perp(a))[:, None], self.rigid)
        quad = 2.0 * _cross(rotate(p["angle"], slope(Sxi, edi)), slope(Sxj, edj))
        return g[:, None], Gi, Gj, quad[:, None]

    def validate(self, p, xp=np):
        return BeamBeamPoint.validate(self, p, xp)


class BeamLoad(F.ForceFamily):
    """A dead force `force` (k, 2) N (global axes, constant) at the material point xi in
    [0, 1] of an element of length `length` (m; copied at build time) on frame j (view
    kind 'planar_beam'; frame i unused): Q = S(xi)^T F on the element's nodal coordinates
    (the virtual work F . delta r(xi)), potential -F . r(xi) (conservative).
    (3D: 'beam3d_load', force (k, 3).)"""

    name = "beam_load"
    frame = PLANAR_BEAM
    fields = ("force", "xi", "length")
    rigid = 3

    def evaluate(self, p, a):
        Fo = p["force"]
        d = Fo.shape[-1]
        r, S = _element_point(a.Xj, p["xi"], p["length"], d)
        Qj = _element_block(jnp.einsum("ka,kc->kac", S, Fo)[:, None], self.rigid)[:, 0]
        V = -jnp.sum(Fo * r, -1)
        z = jnp.zeros_like(V)
        return jnp.zeros_like(Qj), Qj, V, z, {}

    def validate(self, p, xp=np):
        return _OnElement.validate(self, p, xp)


def _slider_element(p, S, Sd, static):
    """The element under a slider's arc length s: S, Sd (k, 1 + 4n) = (s, the beam's n
    nodes' coordinates) and rates, static = (n_e per instance,), p['length'] (k,) m ->
    (k, n, sdot (k,), element index el (k,), xi (k,), L (k,), the element's nodal
    vectors e and rates ed (k, 4, 2)); el = clip(floor(s / L), 0, n_e - 1)."""
    k = S.shape[0]
    n = (S.shape[1] - 1) // 4
    ne = jnp.asarray(np.asarray(static[0], np.int32))
    L = p["length"]
    s, sd = S[:, 0], Sd[:, 0]
    N, Nd = S[:, 1:].reshape(k, n, 4), Sd[:, 1:].reshape(k, n, 4)
    el = jnp.clip(jnp.floor(s / L).astype(jnp.int32), 0, ne - 1)
    take = lambda A: jnp.concatenate([jnp.take_along_axis(A, el[:, None, None], 1),
                                      jnp.take_along_axis(A, el[:, None, None] + 1, 1)],
                                     1).reshape(k, 4, 2)
    return k, n, sd, el, s / L - el, L, take(N), take(Nd)


def _on_beam_nodes(w, el, n):
    """(k, r, 4n) Jacobian of rows w (k, r, 4) . (element nodal coordinates) over the
    whole beam's n nodes: the element's first node's part on node el, the second's on
    el + 1, zero elsewhere; w's 4 entries per element node pair as (position, slope)
    shape weights, applied per coordinate: w (k, r, 2 (element node), 2 (pos/slope), 2
    (x, y))."""
    nodes = jnp.arange(n)[None, :, None, None, None]
    first = (nodes == el[:, None, None, None, None])
    second = (nodes == el[:, None, None, None, None] + 1)
    k, r = w.shape[:2]
    out = first * w[:, None, :, 0] + second * w[:, None, :, 1]       # (k, n, r, 2, 2)
    return jnp.moveaxis(out, 2, 1).reshape(k, r, 4 * n)


class BeamSlider(F.ConstraintFamily):
    """Sliding joint along a planar ANCF beam (Sugiyama, Escalona and Shabana 2003):

        r_beam(s) - (r_j + A(theta_j) point_j) = 0   (2 rows, m)

    the point `point_j` (k, 2) (body coordinates, m; a particle: 0) of the planar frame j
    (body or particle) stays on the deformed centre line of a beam and slides freely along
    it. s (m) is one extra, massless coordinate per instance: the undeformed arc length
    from the beam's first node, so the point is on element e = clip(floor(s / L), 0,
    n_e - 1) at xi = s / L - e (L = `length` (k,) m, the beam's uniform element length,
    copied at build time; n_e its number of elements). ANCF elements are C1 at the nodes,
    so r(s) and dr/ds = r_x are continuous where the element changes and the Jacobian
    stays exact on both sides (r_xx, hence gamma, may jump there, as the beam's curvature
    does). Beyond the ends (s < 0 or s > n_e L) the end elements' cubics are
    extrapolated: stop the motion there (the joint does not).

    Frame i is unused (the builder gives the ground). The instance reads further
    coordinates besides its frames (`FamilyBlock.extra_cols`): S (k, 1 + 4 n) = (s, the
    coordinates (x, y, x_x, y_x) of the beam's n nodes) and their rates Sd; beams with
    fewer nodes than the widest of the block repeat their last node's columns (never
    selected: e + 1 <= n_e). static = (n_e per instance,). Returns (g, Gi, Gj, quad, Gs),
    Gs (k, 2, 1 + 4 n): column 0 is dr/ds = r_x(xi) (the tangent), the others S(xi) on
    the element's two nodes. Frictionless: the joint's generalised force on s, r_x . lam,
    vanishes (M has no s entries), so the reaction is normal to the beam's tangent."""

    name = "beam_slider"
    rows = 2
    frame = "planar"
    fields = ("point_j", "length")
    extra = 1

    def evaluate(self, p, Xi, Xj, Vi, Vj, S, Sd, static):
        from ..planar.geometry import point_jacobian, rotate
        k, n, sd, el, xi, L, e, ed = _slider_element(p, S, Sd, static)
        Sh, dS, ddS = shape_functions(xi, L)
        Sx, Sxx = dS / L[:, None], ddS / (L * L)[:, None]
        r = jnp.einsum("ka,kac->kc", Sh, e)
        t = jnp.einsum("ka,kac->kc", Sx, e)                  # dr/ds (k, 2)
        As = rotate(Xj[:, 2], p["point_j"])
        g = r - Xj[:, :2] - As
        Gj = point_jacobian(As, -1.0)
        # d r / d (node n's (r, r_x)): S of the element's first node on node el, of its
        # second on el + 1, zero elsewhere
        w = jnp.einsum("ka,rc->krac", Sh, jnp.eye(2, dtype=S.dtype)).reshape(k, 2, 2, 2, 2)
        Gn = _on_beam_nodes(w, el, n)
        Gs = jnp.concatenate([t[:, :, None], Gn], -1)
        quad = (sd * sd)[:, None] * jnp.einsum("ka,kac->kc", Sxx, e) \
            + 2.0 * sd[:, None] * jnp.einsum("ka,kac->kc", Sx, ed) + (Vj[:, 2] ** 2)[:, None] * As
        return g, jnp.zeros_like(Gj), Gj, quad, Gs

    def extra_width(self, static):
        """Columns of S for the static data of a block: 1 + 4 (max n_e + 1)."""
        return 1 + 4 * (max(static[0]) + 1)

    def sample_static(self, k):
        """Static data for the conformance test: beams of 1 to 3 elements."""
        return (tuple(int(1 + i % 3) for i in range(k)),)

    def validate(self, p, xp=np):
        return [("length", ~(p["length"] > 0), "must be > 0")]



class BeamSliderAngle(BeamSlider):
    """The prismatic part of a sliding joint along a planar beam (with 'beam_slider': a
    prismatic joint on a flexible guide):

        (A(theta_j) axis_j) x r_x(s) = 0   (1 row)

    the unit vector `axis_j` (k, 2) fixed in body j stays along the beam's deformed
    tangent at the slider's arc length s (the same extra coordinate as its
    'beam_slider' row pair: `FamilyBlock.extra_cols` point at it, `extra` = 0 here: the
    family owns no coordinate of its own). S, Sd, static and `length` as 'beam_slider'.
    Gs (k, 1, 1 + 4n): column 0 is axis x r_xx(s), the others axis x S_x(xi) on the
    element's nodes; r_xx jumps where the element changes (ANCF is C1), so this row's
    Jacobian in s does too."""

    name = "beam_slider_angle"
    rows = 1
    fields = ("axis_j", "length")
    extra = 1  # reads one extra coordinate (built with its slider; see the builder)

    def evaluate(self, p, Xi, Xj, Vi, Vj, S, Sd, static):
        from ..planar.geometry import dot, perp, rotate
        k, n, sd, el, xi, L, e, ed = _slider_element(p, S, Sd, static)
        _, dS, ddS = shape_functions(xi, L)
        Sx, Sxx = dS / L[:, None], ddS / (L * L)[:, None]
        S3 = jnp.stack(jnp.broadcast_arrays(12.0, 6.0 * L, -12.0, 6.0 * L), -1) / (L * L * L)[:, None]
        t = jnp.einsum("ka,kac->kc", Sx, e)
        c = jnp.einsum("ka,kac->kc", Sxx, e)
        a = rotate(Xj[:, 2], p["axis_j"])
        w = Vj[:, 2]
        g = _cross(a, t)
        Gj = jnp.concatenate([jnp.zeros_like(a), -dot(a, t)[:, None]], -1)[:, None, :]
        wn = jnp.einsum("ka,kc->kac", Sx, perp(a)).reshape(k, 1, 2, 2, 2)
        Gs = jnp.concatenate([_cross(a, c)[:, None, None], _on_beam_nodes(wn, el, n)], -1)
        td = c * sd[:, None] + jnp.einsum("ka,kac->kc", Sx, ed)           # d r_x / dt
        tdd = jnp.einsum("ka,kac->kc", S3, e) * (sd * sd)[:, None] \
            + 2.0 * sd[:, None] * jnp.einsum("ka,kac->kc", Sxx, ed)      # at zero acceleration
        quad = -w * w * g - 2.0 * w * dot(a, td) + _cross(a, tdd)
        return g[:, None], jnp.zeros_like(Gj), Gj, quad[:, None], Gs



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
