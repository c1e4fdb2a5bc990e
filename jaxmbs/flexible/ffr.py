"""Floating frame of reference (FFR) bodies with modal reduction, planar.

A body's motion is the large motion of a reference frame (x, y, theta) plus a small elastic
deformation in that frame, the sum of m <= MAX_MODES mode shapes of a small finite-element
model of the body: the coordinates of one FFR body are q = (x, y, theta, eta_1..eta_m)
(m, m, rad, m: a mode shape is scaled so that its largest nodal displacement is 1 m per unit
eta). A material point at x0 (body coordinates of the undeformed body) is at

    r = R + A(theta) (x0 + S(x0) eta),     S (2, m) the modes' displacements at x0,

and its cross-section turns by psi(x0) . eta. The mass matrix M(q) ((3 + m)^2) and the
quadratic-velocity forces follow from T = 1/2 integral rho |rdot|^2 dV exactly (Shabana,
Dynamics of Multibody Systems, ch. 5, the planar case), written with the inertia shape
integrals of the body (per unit density, computed once at build time by Gauss quadrature
of the finite-element shape functions):

    vol = integral dV (m^3), s0 = integral x0 dV (2,), S1 = integral S dV (2, m),
    J0 = integral |x0|^2 dV, j1 = integral S^T x0 dV (m,), c0 = integral S^T I~ x0 dV (m,),
    Mff = integral S^T S dV (m, m), Gff = integral S^T I~^T S dV (m, m, skew),

I~ = [[0, -1], [1, 0]] the planar cross-product matrix; the modal stiffness is E Kff
(Kff per unit Young's modulus, (m, m)); Rayleigh damping alpha rho Mff + beta E Kff acts
on the elastic coordinates. The mode shapes stay fixed when rho and E change (a uniform
beam's modes do not depend on them), so rho and E are Params leaves that fit and
differentiate exactly; the section (A, I) enters the shape integrals and is fixed at
build time.

The finite-element model (`beam_fe`) is a straight Euler-Bernoulli beam along the body x
axis (nodes (u, v, phi): axial, transverse displacement and rotation; linear axial and
Hermite cubic transverse interpolation, consistent mass without rotary inertia). Its
reduction basis (`modal_basis`) is one of:

* 'clamped': the frame is clamped to the cross-section at the start (x = 0): the
  cantilever's (fixed-interface) normal modes;
* 'pinned': the frame's origin at the start and its x axis through the end (u = v = 0 at
  the start, v = 0 at the end): the pinned-pinned modes of a connecting rod;
* 'free': free-interface modes (free-free elastic modes; being mass-orthogonal to the
  rigid-body modes, they satisfy the mean-axis conditions);
* 'craig_bampton': the frame clamped at the start and the end node the interface: the
  3 static constraint modes of the end (u, v, phi) and m - 3 fixed-fixed normal modes.

Families: frame kind 'ffr2d' (X = (x, y, theta, eta_1..eta_MAX_MODES); planar rigid frames,
particles and the ground are viewed into it with zero modal entries), node families
'ffr2d_m<m>' (m = 1..MAX_MODES) and body families 'ffr2d_body_m<m>', constraint families
'ffr_point' (a pin between material points of two frames) and 'ffr_angle' (their
cross-sections keep a relative angle: with 'ffr_point' a weld), force family 'ffr_load' (a
dead force at a material point); the planar kind views an FFR body's reference frame, so
the planar families (drivers, prismatic joints, springs, loads, contacts) act on points
fixed to the frame. `Model.add_ffr_beam` builds such a body; `centerline` and `curvature` give its deformed shape
and bending strain;
`Model.add_revolute`, `add_weld` and `add_load` (a dead force) take it by name.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..core import families as F

__all__ = ["MAX_MODES", "BASES", "FE_BASES", "beam_fe", "beam_rows", "modal_basis",
           "shape_integrals", "fe_basis", "fe_shape_integrals", "centerline", "curvature"]

MAX_MODES = 8
DRAW_POINTS = 17  # points of the drawn centre line (jaxmbs.plot), equally spaced
FFR2D = "ffr2d"
BASES = ("clamped", "pinned", "free", "craig_bampton")
FE_BASES = ("free", "craig_bampton")  # bases of a general finite-element model (fe_basis)
_GAUSS = np.polynomial.legendre.leggauss(4)  # exact for the cubic x cubic mass integrands


# ----------------------------------------------------------- finite-element model (NumPy)
def beam_rows(x, length, elements):
    """Interpolation rows at positions x (P,) in [0, length] of a straight beam meshed
    into `elements` equal elements, dofs (u, v, phi) per node (3 (n + 1) in all):
    N (P, 2, ndof) (axial and transverse displacement), slope rows (P, ndof) (dv/dx: the
    cross-section's rotation) and curvature rows (P, ndof) (d2v/dx2, 1/m)."""
    x = np.atleast_1d(np.asarray(x, float))
    h = length / elements
    e = np.clip(np.floor(x / h).astype(int), 0, elements - 1)
    xi = x / h - e
    ndof = 3 * (elements + 1)
    P = x.shape[0]
    N = np.zeros((P, 2, ndof))
    slope = np.zeros((P, ndof))
    curv = np.zeros((P, ndof))
    H = np.stack([1 - 3 * xi**2 + 2 * xi**3, h * (xi - 2 * xi**2 + xi**3), 3 * xi**2 - 2 * xi**3,
                  h * (xi**3 - xi**2)], 1)
    dH = np.stack([(-6 * xi + 6 * xi**2) / h, 1 - 4 * xi + 3 * xi**2, (6 * xi - 6 * xi**2) / h,
                   3 * xi**2 - 2 * xi], 1)
    d2H = np.stack([(-6 + 12 * xi) / h**2, (-4 + 6 * xi) / h, (6 - 12 * xi) / h**2,
                    (6 * xi - 2) / h], 1)
    rows = np.arange(P)
    a = 3 * e  # first dof of the element's first node
    N[rows, 0, a] = 1 - xi
    N[rows, 0, a + 3] = xi
    for c, off in enumerate((1, 2, 4, 5)):
        N[rows, 1, a + off] = H[:, c]
        slope[rows, a + off] = dH[:, c]
        curv[rows, a + off] = d2H[:, c]
    return N, slope, curv


def beam_fe(length, elements, area, inertia):
    """The finite-element model of a straight uniform beam along x from 0 to `length` (m)
    in `elements` elements, per unit density and unit Young's modulus: dict with
    'mass' (ndof, ndof) (consistent, kg per kg/m^3), 'stiffness' (ndof, ndof) (per Pa),
    'points' (P,) x of the Gauss points, 'weights' (P,) their volumes (m^3), 'N' (P, 2,
    ndof) their interpolation rows, 'length', 'elements'. dofs: (u, v, phi) per node."""
    n, L, A, I = int(elements), float(length), float(area), float(inertia)
    h = L / n
    gx, gw = _GAUSS
    xs = (np.arange(n)[:, None] + (gx[None, :] + 1) / 2) * h
    x = xs.reshape(-1)
    w = np.tile(gw / 2 * h * A, n)
    N, _, _ = beam_rows(x, L, n)
    M = np.einsum("p,pai,paj->ij", w, N, N)
    ndof = 3 * (n + 1)
    K = np.zeros((ndof, ndof))
    ka = A / h * np.array([[1.0, -1.0], [-1.0, 1.0]])
    kb = I / h**3 * np.array([[12, 6 * h, -12, 6 * h], [6 * h, 4 * h * h, -6 * h, 2 * h * h],
                              [-12, -6 * h, 12, -6 * h], [6 * h, 2 * h * h, -6 * h, 4 * h * h]])
    for k in range(n):
        ia = np.array([3 * k, 3 * k + 3])
        ib = np.array([3 * k + 1, 3 * k + 2, 3 * k + 4, 3 * k + 5])
        K[np.ix_(ia, ia)] += ka
        K[np.ix_(ib, ib)] += kb
    return dict(mass=M, stiffness=K, points=x, weights=w, N=N, length=L, elements=n)


def _eig(K, M, free):
    """Generalized eigenpairs of (K, M) restricted to the dofs `free`, ascending."""
    Kf, Mf = K[np.ix_(free, free)], M[np.ix_(free, free)]
    Lc = np.linalg.cholesky(Mf)
    Li = np.linalg.inv(Lc)
    lam, Y = np.linalg.eigh(Li @ Kf @ Li.T)
    return lam, Li.T @ Y


def modal_basis(fe, basis, modes):
    """Reduction basis Phi (ndof, modes) of a `beam_fe` model (see the module docstring
    for the bases), each column scaled so that its largest nodal displacement (u or v) is
    1 (and positive)."""
    K, M = fe["stiffness"], fe["mass"]
    n = fe["elements"]
    ndof = K.shape[0]
    last = 3 * n
    if basis == "clamped":
        fixed = [0, 1, 2]
    elif basis == "pinned":
        fixed = [0, 1, last + 1]
    elif basis == "free":
        fixed = []
    elif basis == "craig_bampton":
        fixed = [0, 1, 2]
    else:
        raise ValueError(f"basis must be one of {BASES}, got {basis!r}")
    Phi = np.zeros((ndof, modes))
    if basis == "craig_bampton":
        bnd = [last, last + 1, last + 2]
        inner = [i for i in range(ndof) if i not in fixed + bnd]
        psi = np.zeros((ndof, 3))
        psi[bnd, [0, 1, 2]] = 1.0
        psi[inner] = -np.linalg.solve(K[np.ix_(inner, inner)], K[np.ix_(inner, bnd)])
        Phi[:, :3] = psi
        if modes > 3:
            Phi[inner, 3:] = _eig(K, M, inner)[1][:, : modes - 3]
    else:
        free = [i for i in range(ndof) if i not in fixed]
        lam, V = _eig(K, M, free)
        skip = 3 if basis == "free" else 0  # the rigid-body modes of the free beam
        Phi[free] = V[:, skip: skip + modes]
    disp = np.r_[np.arange(0, ndof, 3), np.arange(1, ndof, 3)]
    for c in range(modes):
        k = disp[np.argmax(np.abs(Phi[disp, c]))]
        Phi[:, c] /= Phi[k, c]
    return Phi


def shape_integrals(fe, Phi):
    """The inertia shape integrals (module docstring) of a `beam_fe` model reduced by Phi
    (ndof, m), per unit density, and the modal stiffness per unit Young's modulus: dict
    vol, s0 (2,), S1 (2, m), J0, j1 (m,), c0 (m,), Mff (m, m), Gff (m, m), Kff (m, m)."""
    w = fe["weights"]
    x0 = np.stack([fe["points"], np.zeros_like(fe["points"])], 1)
    S = fe["N"] @ Phi  # (P, 2, m)
    It = np.array([[0.0, -1.0], [1.0, 0.0]])
    return dict(vol=w.sum(), s0=w @ x0, S1=np.einsum("p,pam->am", w, S),
                J0=np.einsum("p,pa,pa->", w, x0, x0), j1=np.einsum("p,pam,pa->m", w, S, x0),
                c0=np.einsum("p,pam,ab,pb->m", w, S, It, x0),
                Mff=np.einsum("p,pam,pan->mn", w, S, S),
                Gff=np.einsum("p,pam,ba,pbn->mn", w, S, It, S),
                Kff=Phi.T @ fe["stiffness"] @ Phi)


def _body_rows(data, x, which):
    N, slope, curv = beam_rows(x, data["length"], data["elements"])
    Phi = data["Phi"]
    return {"N": np.einsum("pai,im->pam", N, Phi), "curv": curv @ Phi}[which]


def draw_rows(length, elements, Phi):
    """A beam's drawing data: (draw_points (DRAW_POINTS, 2), draw_shape (DRAW_POINTS, 2, m))
    at equally spaced points of its centre line."""
    x = np.linspace(0.0, length, DRAW_POINTS)
    return (np.stack([x, np.zeros_like(x)], 1),
            _body_rows(dict(length=length, elements=elements, Phi=Phi), x, "N"))


def centerline(q_body, data, points=21):
    """The deformed centre line of an FFR beam, global coordinates (points, 2) m.

    q_body: (3 + m,) the body's coordinates (x, y, theta, eta_1..eta_m), e.g.
    q[mech.coordinate_index('rod.x'):][:3 + m]; data: `Model.ffr_data(name)`; points along
    the undeformed centre line, equally spaced from start to end. Traceable in q_body."""
    q_body = jnp.asarray(q_body)
    x = np.linspace(0.0, data["length"], points)
    S = _body_rows(data, x, "N")
    u = np.stack([x, np.zeros_like(x)], 1) + jnp.einsum("pam,m->pa", S, q_body[3:])
    return q_body[:2] + jnp.einsum("ab,pb->pa", _rot(q_body[2]), u)


def curvature(q_body, data, x):
    """Bending curvature (1/m) of an FFR beam at distances x (P,) m from its start: the
    second derivative of the modal transverse displacement (linear in eta). The axial
    bending strain at distance y from the centre line is -y kappa, the stress -E y kappa."""
    return jnp.asarray(_body_rows(data, x, "curv")) @ jnp.asarray(q_body)[3:]


def _normalize_columns(Phi):
    """Scale each column so that its largest displacement entry is 1 (and positive)."""
    for c in range(Phi.shape[1]):
        k = np.argmax(np.abs(Phi[:, c]))
        Phi[:, c] /= Phi[k, c]
    return Phi


def fe_basis(nodes, mass, stiffness, basis, modes, interface=()):
    """Reduction basis Phi (2n, modes) of a general planar finite-element model: nodes
    (n, 2) m (body coordinates), `mass` (n, n) the mass matrix of one displacement
    component (kg; it acts alike on x and y: lumped or consistent), `stiffness` (2n, 2n)
    N/m on the dofs (u_0, v_0, u_1, v_1, ...). basis 'free': the lowest free-interface
    elastic modes (the 3 rigid-body modes dropped; mass-orthogonal to them: mean axes);
    'craig_bampton': the static constraint modes of the `interface` nodes' dofs and the
    lowest fixed-interface modes, with the rigid-body motion projected out (mass-orthogonal
    to it: mean axes) and the reduced basis diagonalised (modes = 2 len(interface) - 3 +
    fixed-interface modes). Columns scaled to a largest nodal displacement of 1."""
    X0 = np.asarray(nodes, float)
    n = X0.shape[0]
    M2 = np.kron(np.asarray(mass, float), np.eye(2))
    K = np.asarray(stiffness, float)
    if basis == "free":
        lam, V = _eig(K, M2, list(range(2 * n)))
        return _normalize_columns(V[:, 3: 3 + modes].copy())
    if basis != "craig_bampton":
        raise ValueError(f"basis must be one of {FE_BASES}, got {basis!r}")
    bnd = [2 * k + a for k in interface for a in (0, 1)]
    inner = [i for i in range(2 * n) if i not in bnd]
    nfix = modes - (len(bnd) - 3)
    B = np.zeros((2 * n, len(bnd) + nfix))
    B[bnd, range(len(bnd))] = 1.0
    B[inner, : len(bnd)] = -np.linalg.solve(K[np.ix_(inner, inner)], K[np.ix_(inner, bnd)])
    if nfix:
        B[inner, len(bnd):] = _eig(K, M2, inner)[1][:, :nfix]
    R = np.zeros((2 * n, 3))
    R[0::2, 0] = R[1::2, 1] = 1.0
    R[0::2, 2], R[1::2, 2] = -X0[:, 1], X0[:, 0]
    B = B - R @ np.linalg.solve(R.T @ M2 @ R, R.T @ M2 @ B)  # mean axes: no rigid part
    _, _, Vt = np.linalg.svd(np.linalg.cholesky(M2).T @ B, full_matrices=False)
    B = B @ Vt[: modes].T  # the rigid parts removed leave 3 dependent columns
    _, Y = _eig(B.T @ K @ B, B.T @ M2 @ B, list(range(modes)))  # diagonalised, ascending
    return _normalize_columns(B @ Y)


def fe_shape_integrals(nodes, mass, stiffness, Phi):
    """`shape_integrals` of a general finite-element model (see `fe_basis` for the
    arguments): the integrals become bilinear forms of the component mass matrix, exact
    for the kinetic energy T = 1/2 sum_kl mass_kl rdot_k . rdot_l of the nodes."""
    X0 = np.asarray(nodes, float)
    n, m = X0.shape[0], Phi.shape[1]
    Ms = np.asarray(mass, float)
    S = Phi.reshape(n, 2, m)
    It = np.array([[0.0, -1.0], [1.0, 0.0]])
    return dict(vol=Ms.sum(), s0=np.einsum("ij,jb->b", Ms, X0), S1=np.einsum("ij,jam->am", Ms, S),
                J0=np.einsum("ij,ia,ja->", Ms, X0, X0), j1=np.einsum("ij,iam,ja->m", Ms, S, X0),
                c0=np.einsum("ij,iam,ab,jb->m", Ms, S, It, X0),
                Mff=np.einsum("ij,iam,jan->mn", Ms, S, S),
                Gff=np.einsum("ij,iam,ba,jbn->mn", Ms, S, It, S),
                Kff=Phi.T @ np.asarray(stiffness, float) @ Phi)


# ----------------------------------------------------------------- kernels (JAX)
def _rot(th):
    c, s = jnp.cos(th), jnp.sin(th)
    return jnp.stack([jnp.stack([c, -s], -1), jnp.stack([s, c], -1)], -2)


def _perp(a):
    """I~ a: a (..., 2) turned by +90 degrees."""
    return jnp.stack([-a[..., 1], a[..., 0]], -1)


class FfrFrame(F.FrameKind):
    """X = (x, y, theta, eta_1..eta_MAX_MODES) (3 + MAX_MODES,), V its rate: an FFR body's
    reference frame and modal coordinates (modes beyond its own m are the ground pattern,
    0); planar rigid frames, particles and the ground are viewed into it with zero modal
    entries (their Jacobian columns are dropped)."""

    name = FFR2D
    wq = wv = 3 + MAX_MODES
    dim = 2
    ground_q = (0.0,) * (3 + MAX_MODES)
    views = {"planar": ((0, 0), (0, 1), (0, 2)) + (None,) * MAX_MODES}

    def point(self, X, s):
        """The reference frame's point: R + A(theta) s (the undeformed position)."""
        from ..planar.geometry import point
        return point(X[..., :3], s)

    def point_velocity(self, X, V, As):
        from ..planar.geometry import point_velocity
        return point_velocity(V[..., :3], As)

    def reaction(self, G, X, s):
        """'force' (2,) N: G's (x, y) part (the resultant on the body); 'moment' () N m
        about the point R + A(theta) s of the reference frame; 'modal' (MAX_MODES,) the
        generalised forces on the modal coordinates (N per unit eta); 'generalized'."""
        from ..planar.geometry import cross, rotate
        return {"force": G[:2], "moment": G[2] - cross(rotate(X[2], s), G[:2]),
                "modal": G[3:], "generalized": G}


class FfrNode(F.NodeFamily):
    """(x, y, theta, eta_1..eta_m): m, m, rad, m; presents the frame kind 'ffr2d'."""

    rigid = True
    frame = FFR2D

    def __init__(self, m):
        self.m = m
        self.name = f"ffr2d_m{m}"
        self.nq = self.nv = 3 + m
        self.frame_q = self.frame_v = tuple(range(3 + m)) + (-1,) * (MAX_MODES - m)
        self.coord_names = self.vel_names = ("x", "y", "theta") + tuple(f"eta{k + 1}" for k in range(m))


class FfrMass:
    """The mass part of k FFR bodies: per body the dense block (3 + m)^2 of M(q), solved
    by its Cholesky factor."""

    def __init__(self, blocks):
        self.B = blocks  # (k, n, n)
        self.k, self.n = blocks.shape[0], blocks.shape[1]

    def _split(self, X):
        return X.reshape((self.k, self.n) + X.shape[1:])

    def apply(self, X):
        Y = jnp.einsum("kab,kb...->ka...", self.B, self._split(X))
        return Y.reshape(X.shape)

    def _chol(self):
        return jnp.linalg.cholesky(self.B)

    def _solve_blocks(self, Lc, Xb):
        y = jax.scipy.linalg.solve_triangular(Lc, Xb, lower=True)
        return jax.scipy.linalg.solve_triangular(jnp.swapaxes(Lc, -1, -2), y, lower=False)

    def solve(self, X):
        Xb = self._split(X)
        vec = Xb.ndim == 2
        Xb = Xb[..., None] if vec else Xb
        Y = self._solve_blocks(self._chol(), Xb)
        return (Y[..., 0] if vec else Y).reshape(X.shape)

    def inverse_blocks(self):
        eye = jnp.broadcast_to(jnp.eye(self.n, dtype=self.B.dtype), self.B.shape)
        return self._solve_blocks(self._chol(), eye)

    def _assemble(self, blocks):
        return jax.scipy.linalg.block_diag(*[blocks[i] for i in range(self.k)])

    def dense(self):
        return self._assemble(self.B)

    def inverse_dense(self):
        return self._assemble(self.inverse_blocks())

    def frame_inverse(self, idx, X):
        """Per-frame M^-1 x for rows X (N, 3 + MAX_MODES) on instances idx (N,) (static;
        -1: zero); entries beyond the body's own 3 + m are zero."""
        idx = np.asarray(idx)
        sel = np.where(idx >= 0, idx, 0)
        Binv = self.inverse_blocks()[sel]
        out = jnp.einsum("nab,nb->na", Binv, X[:, : self.n])
        out = jnp.where(jnp.asarray(idx >= 0)[:, None], out, 0.0)
        return jnp.concatenate([out, jnp.zeros_like(X[:, self.n:])], -1)


_SHAPE_FIELDS = ("vol", "s0", "S1", "J0", "j1", "c0", "Mff", "Gff", "Kff")


class FfrBody(F.BodyFamily):
    """k FFR bodies with m modes each (module docstring): rho (k,) kg/m^3, E (k,) Pa,
    alpha (k,) 1/s and beta (k,) s (Rayleigh damping of the elastic coordinates:
    alpha rho Mff + beta E Kff), and the shape integrals per unit density vol (k,) m^3,
    s0 (k, 2), S1 (k, 2, m), J0 (k,), j1 (k, m), c0 (k, m), Mff (k, m, m), Gff (k, m, m)
    and the modal stiffness per unit E Kff (k, m, m); for drawing only (`jaxmbs.plot`):
    draw_points (k, DRAW_POINTS, 2) m, points of the undeformed body (a beam's centre line,
    a general body's outline) and draw_shape (k, DRAW_POINTS, 2, m), the modes'
    displacements there."""

    fields = ("rho", "E", "alpha", "beta") + _SHAPE_FIELDS + ("draw_points", "draw_shape")

    def __init__(self, m):
        self.m = m
        self.name = f"ffr2d_body_m{m}"
        self.node = f"ffr2d_m{m}"

    @property
    def field_shapes(self):
        m = self.m
        return {"s0": (2,), "S1": (2, m), "j1": (m,), "c0": (m,), "Mff": (m, m), "Gff": (m, m),
                "Kff": (m, m), "draw_points": (DRAW_POINTS, 2), "draw_shape": (DRAW_POINTS, 2, m)}

    def sample(self, rng, k):
        """Shape integrals of k random point clouds (12 points, positive volumes, random
        mode displacements) and a random SPD modal stiffness; rho, E > 0, no damping."""
        m, P = self.m, 12
        w = rng.uniform(0.1, 1.0, (k, P))
        x0 = rng.normal(size=(k, P, 2))
        S = rng.normal(size=(k, P, 2, m)) * 0.3
        It = np.array([[0.0, -1.0], [1.0, 0.0]])
        A = rng.normal(size=(k, m, m))
        return dict(
            vol=w.sum(1), s0=np.einsum("kp,kpa->ka", w, x0), S1=np.einsum("kp,kpam->kam", w, S),
            J0=np.einsum("kp,kpa,kpa->k", w, x0, x0), j1=np.einsum("kp,kpam,kpa->km", w, S, x0),
            c0=np.einsum("kp,kpam,ab,kpb->km", w, S, It, x0),
            Mff=np.einsum("kp,kpam,kpan->kmn", w, S, S),
            Gff=np.einsum("kp,kpam,ba,kpbn->kmn", w, S, It, S),
            Kff=np.einsum("kab,kcb->kac", A, A) + np.eye(m), rho=rng.uniform(0.5, 2.0, k),
            E=rng.uniform(0.5, 2.0, k), alpha=np.zeros(k), beta=np.zeros(k),
            draw_points=rng.normal(size=(k, DRAW_POINTS, 2)),
            draw_shape=rng.normal(size=(k, DRAW_POINTS, 2, m)))

    def _parts(self, p, X):
        """(rho, A (k, 2, 2), eta (k, m), s (k, 2) = s0 + S1 eta, u (k, m) = j1 + Mff eta)."""
        eta = X[:, 3:]
        s = p["s0"] + jnp.einsum("kam,km->ka", p["S1"], eta)
        u = p["j1"] + jnp.einsum("kmn,kn->km", p["Mff"], eta)
        return p["rho"], _rot(X[:, 2]), eta, s, u

    def mass_part(self, p, X):
        rho, A, eta, s, u = self._parts(p, X)
        r = rho[:, None]
        MRR = (rho * p["vol"])[:, None, None] * jnp.eye(2, dtype=X.dtype)
        MRt = r * jnp.einsum("kab,kb->ka", A, _perp(s))                       # (k, 2)
        MRf = r[..., None] * jnp.einsum("kab,kbm->kam", A, p["S1"])            # (k, 2, m)
        Mtt = rho * (p["J0"] + 2 * jnp.sum(p["j1"] * eta, -1) + jnp.einsum("km,kmn,kn->k", eta, p["Mff"], eta))
        Mtf = r * (p["c0"] + jnp.einsum("kl,klm->km", eta, p["Gff"]))          # (k, m)
        Mff = r[..., None] * p["Mff"]
        top = jnp.concatenate([MRR, MRt[..., None], MRf], -1)                  # (k, 2, n)
        mid = jnp.concatenate([MRt, Mtt[:, None], Mtf], -1)[:, None]           # (k, 1, n)
        bot = jnp.concatenate([jnp.swapaxes(MRf, 1, 2), Mtf[..., None], Mff], -1)  # (k, m, n)
        return FfrMass(jnp.concatenate([top, mid, bot], 1))

    def loads(self, p, X, V, g):
        """Gravity, the quadratic-velocity forces (centrifugal, Coriolis), the elastic
        forces -E Kff eta and the Rayleigh damping forces; potential per body: gravity's
        -g . (rho vol R + rho A s) plus the strain energy E eta^T Kff eta / 2."""
        rho, A, eta, s, u = self._parts(p, X)
        w, etad = V[:, 2], V[:, 3:]
        r = rho[:, None]
        ga = jnp.einsum("kba,b->ka", A, g)  # A^T g
        # gravity
        QR = (rho * p["vol"])[:, None] * g[None, :]
        Qt = rho * jnp.sum(_perp(s) * ga, -1)
        Qf = r * jnp.einsum("kam,ka->km", p["S1"], ga)
        # quadratic velocity
        S1e = jnp.einsum("kam,km->ka", p["S1"], etad)
        QR = QR + r * jnp.einsum("kab,kb->ka", A, (w * w)[:, None] * s - 2 * w[:, None] * _perp(S1e))
        Qt = Qt - 2 * rho * w * jnp.sum(u * etad, -1)
        Qf = Qf + r * ((w * w)[:, None] * u - 2 * w[:, None] * jnp.einsum("klm,kl->km", p["Gff"], etad))
        # elasticity and damping
        Ke = p["E"][:, None, None] * p["Kff"]
        Qf = Qf - jnp.einsum("kmn,kn->km", Ke, eta) - jnp.einsum(
            "kmn,kn->km", (p["alpha"] * rho)[:, None, None] * p["Mff"] + p["beta"][:, None, None] * Ke, etad)
        Q = jnp.concatenate([QR, Qt[:, None], Qf], -1)
        pot = -rho * (p["vol"] * jnp.sum(g[None, :] * X[:, :2], -1) + jnp.sum(jnp.einsum("kab,kb->ka", A, s) * g, -1)) \
            + 0.5 * jnp.einsum("km,kmn,kn->k", eta, Ke, eta)
        return Q, pot

    def inertia_data(self, p):
        """(mass (k,), inertia about the CG in the undeformed state (k,), CG (k, 2))."""
        m = p["rho"] * p["vol"]
        cg = p["s0"] / p["vol"][:, None]
        J = p["rho"] * p["J0"] - m * jnp.sum(cg * cg, -1)
        return m, J, cg

    # (one table for the builder's section, Mechanism.replace and the PARAMS flag)
    rules = {"rho": "> 0", "E": "> 0", "vol": "> 0", "alpha": ">= 0", "beta": ">= 0"}

    def validate(self, p, xp=np):
        """The `rules`: rho, E, vol > 0; alpha, beta >= 0 (the shape integrals are the
        builder's)."""
        from ..core.validate import rule_masks
        return rule_masks(p, self.rules, xp)


# ------------------------------------------------------------- joints and loads
def _marker(X, V, point, shape):
    """A material point of k frames X, V (k, 3 + MAX_MODES) at `point` (k, 2) (body
    coordinates, undeformed) with mode displacements `shape` (k, 2, MAX_MODES):
    (position r (k, 2), Jacobian dr/dV (k, 2, 3 + MAX_MODES), d2r/dt2 at zero acceleration
    (k, 2))."""
    A = _rot(X[:, 2])
    eta, etad, w = X[:, 3:], V[:, 3:], V[:, 2]
    ub = point + jnp.einsum("kam,km->ka", shape, eta)
    Au = jnp.einsum("kab,kb->ka", A, ub)
    AS = jnp.einsum("kab,kbm->kam", A, shape)
    k = X.shape[0]
    eye = jnp.broadcast_to(jnp.eye(2, dtype=X.dtype), (k, 2, 2))
    G = jnp.concatenate([eye, _perp(Au)[..., None], AS], -1)
    acc = -(w * w)[:, None] * Au + 2 * w[:, None] * _perp(jnp.einsum("kam,km->ka", AS, etad))
    return X[:, :2] + Au, G, acc


class FfrPoint(F.ConstraintFamily):
    """r_j - r_i = 0 (2 rows, m): the material point of frame j at `point_j` (body
    coordinates of the undeformed body, m; mode displacements `shape_j` (2, MAX_MODES))
    coincides with that of frame i: a pin between FFR bodies, rigid bodies, particles or
    the ground (rigid frames: shape 0)."""

    name = "ffr_point"
    rows = 2
    frame = FFR2D
    fields = ("point_i", "point_j", "shape_i", "shape_j")
    field_shapes = {"shape_i": (2, MAX_MODES), "shape_j": (2, MAX_MODES)}

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        ri, Gi, ai = _marker(Xi, Vi, p["point_i"], p["shape_i"])
        rj, Gj, aj = _marker(Xj, Vj, p["point_j"], p["shape_j"])
        return rj - ri, -Gi, Gj, aj - ai


class FfrAngle(F.ConstraintFamily):
    """theta_j + slope_j . eta_j - theta_i - slope_i . eta_i - angle = 0 (1 row, rad): the
    cross-sections at two material points (rotations per unit eta `slope_i`, `slope_j`
    (MAX_MODES,); rigid frames 0) keep the relative angle `angle`; with 'ffr_point' a weld.
    Linear in the coordinates: quad = 0."""

    name = "ffr_angle"
    rows = 1
    frame = FFR2D
    fields = ("angle", "slope_i", "slope_j")
    field_shapes = {"slope_i": (MAX_MODES,), "slope_j": (MAX_MODES,)}

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        def side(X, psi):
            return X[:, 2] + jnp.sum(psi * X[:, 3:], -1), jnp.concatenate(
                [jnp.zeros_like(X[:, :2]), jnp.ones_like(X[:, 2:3]), psi], -1)[:, None, :]
        ai, Gi = side(Xi, p["slope_i"])
        aj, Gj = side(Xj, p["slope_j"])
        g = (aj - ai - p["angle"])[:, None]
        return g, -Gi, Gj, jnp.zeros_like(g)


class FfrLoad(F.ForceFamily):
    """A dead force `force` (k, 2) N (global axes, constant) at the material point `point`
    (k, 2) (body coordinates, undeformed; mode displacements `shape` (k, 2, MAX_MODES)) of
    frame j (frame i unused): Q = (dr/dq)^T F, potential -F . r."""

    name = "ffr_load"
    frame = FFR2D
    fields = ("force", "point", "shape")
    field_shapes = {"force": (2,), "shape": (2, MAX_MODES)}

    def evaluate(self, p, a):
        r, G, _ = _marker(a.Xj, a.Vj, p["point"], p["shape"])
        Fo = p["force"]
        Qj = jnp.einsum("kac,ka->kc", G, Fo)
        V = -jnp.sum(Fo * r, -1)
        z = jnp.zeros_like(V)
        return jnp.zeros_like(Qj), Qj, V, z, {}


F.register(FfrFrame())
# the planar kind views an FFR body's reference frame (x, y, theta), so that every planar
# joint, driver, spring, load and contact acts on a point fixed to the frame (the planar
# package does not know this module; jaxmbs.core.mechanism._frame_tables reads views in a second
# pass, so the two kinds may view each other)
_planar = F.frame_kind("planar")
_planar.views = {**_planar.views, FFR2D: ((0, 0), (0, 1), (0, 2))}
for _m in range(1, MAX_MODES + 1):
    F.register(FfrNode(_m))
    F.register(FfrBody(_m))
for _f in (FfrPoint(), FfrAngle(), FfrLoad()):
    F.register(_f)
