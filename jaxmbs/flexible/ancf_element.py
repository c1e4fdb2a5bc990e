"""The planar ANCF beam element (Shabana; Berzeri and Shabana 2000): shape functions,
strains, elastic energy, forces and damping, the consistent mass matrix and the block mass
operator of a beam's nodes. Pure kernels, vectorised over elements."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

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
