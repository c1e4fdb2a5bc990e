"""Statics, linearisation and modes: static equilibrium, the linear state-space model of a
constrained mechanism about an equilibrium or a steady motion, eigenvalues, natural
frequencies, damping ratios and mode shapes.

Everything here is a pure function of the parameters, so it jits, vmaps (eigenvalues of
thousands of parameter sets in one call) and differentiates (eigenvalues as functions of
the parameters, for stability boundaries and design optimisation).

The linearisation chart
-----------------------
A perturbation of the redundant state (q, v) is written in velocity space with global
axes: dx (n_vel,) moves the coordinates to q (+) dx (a vector increment for planar
bodies, particles and extra coordinates; a rotation vector about the GLOBAL axes for a
spatial body's orientation), and du (n_vel,) is the perturbation of the velocities
expressed in global axes (the angular velocity of a spatial body in global axes). For a
reference motion (q*(t), v*(t)) through the operating point, the perturbation obeys

    d(dx)/dt = du + Omega* x dphi      (the second term only for turning spatial bodies)
    d(du)/dt = (global accelerations at the perturbed state) - (those at the reference)

whose Jacobian at (dx, du) = 0 is the full linearisation. At an equilibrium it is the
linearisation of the vector field; along a steady motion it is time-invariant when the
reference motion is a translation together with spins of bodies about body-fixed axes of
symmetry (wheels rolling straight, a sleeping top), which is what the global-axes chart
is chosen for. (For other steady motions, e.g. a vehicle in a steady turn, it is the
linearisation at the instant t.)

The constraints restrict (dx, du) to a subspace: Phi_q dx = 0 (holonomic rows) and the
linearised velocity constraints (all rows, nonholonomic ones included). Its coordinates
are chosen by coordinate partitioning: n_p independent position entries z of dx and n_w
independent velocity entries w of du (n_w < n_p with nonholonomic rows); every other
entry is a linear function of them. The reduced state is x = (z, w) and

    x' = A x + B du_controls,   y = C x + D du_controls,
    dq ~ Tq x,  dv ~ Tv x       (first-order map back to the redundant coordinates).

Units: SI; state entries in m, rad (positions) and m/s, rad/s (velocities).
"""
from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular

from . import status as st
from ._tree import pytree_dataclass, static_field
from .core import families as F
from .dynamics import accelerations
from .equations import constraint_terms, generalized_forces, mass_matrix
from .saddle import SchurCholesky
from .simulate import _is_tracer

__all__ = ["LinearModel", "Modes", "EquilibriumResult", "equilibrium", "linearize", "modes",
           "chart_names", "mode_motion", "animate_mode"]


# ----------------------------------------------------------------------- chart helpers
def chart_names(mech) -> tuple:
    """Names of the linearisation chart's entries (n_vel,): the velocity names for planar
    bodies, particles and extra coordinates ('arm.theta'); 'body.x', 'body.y', 'body.z',
    'body.rx', 'body.ry', 'body.rz' (translation, and small rotation about the GLOBAL
    axes) for a spatial body. Velocity states are named by appending '_dot' (for a
    spatial body 'body.rx_dot' is its angular velocity about the global x axis)."""
    out = []
    for b in mech.nodes:
        nf = F.node_family(b.kind)
        suff = tuple(getattr(nf, "chart_names", ()) or nf.vel_names)
        for n in b.names:
            out += [f"{n}.{c}" if c else n for c in suff]
    return tuple(out)


def _node_map(mech, method, q, x):
    """Apply the node families' `method(q_block, x_block)` to x (n_vel,) block-wise."""
    if mech.identity_kinematics:
        return x
    out = x
    for b in mech.nodes:
        nf = F.node_family(b.kind)
        if not hasattr(nf, method) or nf.identity:
            continue
        qq = q[b.q0: b.q0 + b.size * nf.nq].reshape(b.size, nf.nq)
        xx = x[b.v0: b.v0 + b.size * nf.nv].reshape(b.size, nf.nv)
        out = out.at[b.v0: b.v0 + b.size * nf.nv].set(getattr(nf, method)(qq, xx).reshape(-1))
    return out


def _to_global(mech, q, v):
    return _node_map(mech, "global_velocity", q, v)


def _to_body(mech, q, V):
    return _node_map(mech, "body_velocity", q, V)


def _chart_rate(mech, q, V, dx):
    if mech.identity_kinematics:
        return jnp.zeros_like(dx)
    out = jnp.zeros_like(dx)
    for b in mech.nodes:
        nf = F.node_family(b.kind)
        if nf.identity:
            continue
        qq = q[b.q0: b.q0 + b.size * nf.nq].reshape(b.size, nf.nq)
        VV = V[b.v0: b.v0 + b.size * nf.nv].reshape(b.size, nf.nv)
        dd = dx[b.v0: b.v0 + b.size * nf.nv].reshape(b.size, nf.nv)
        out = out.at[b.v0: b.v0 + b.size * nf.nv].set(nf.chart_rate(qq, VV, dd).reshape(-1))
    return out


def _chart_state(mech, q, V0, dx, du):
    """(q, v) of the chart point (dx, du) about (q, V0 = global velocities)."""
    qq = mech.retract(q, _to_body(mech, q, dx))
    return qq, _to_body(mech, qq, V0 + du)


def _controls(mech, u, dtype):
    nu = mech.n_controls
    if u is None:
        return jnp.zeros((nu,), dtype)
    u = jnp.asarray(u, dtype)
    if u.shape != (nu,):
        raise ValueError(f"u must have shape ({nu},) (one entry per control input of this "
                         f"mechanism), got {u.shape}")
    return u


def _check_shapes(mech, q, v=None):
    n, nv = mech.n_coords, mech.n_vel
    if q.shape != (n,):
        raise ValueError(f"q must have shape ({n},) for this mechanism "
                         f"({', '.join(mech.coordinate_names())}), got {q.shape}")
    if v is not None and v.shape != (nv,):
        raise ValueError(f"v must have shape ({nv},) for this mechanism "
                         f"({', '.join(mech.velocity_names())}), got {v.shape}")


def _lstsq_tall(A, B):
    """X minimising |A X - B| for A (p, d), p >= d, by Householder QR; flag when A is
    (numerically) rank-deficient."""
    p, d = A.shape
    if d == 0:
        return jnp.zeros((0, B.shape[1]), A.dtype), jnp.zeros((), bool)
    Qm, R = jnp.linalg.qr(A)
    diag = jnp.abs(jnp.diagonal(R))
    colmax = jnp.max(jnp.sqrt(jnp.sum(A * A, 0)))
    bad = jnp.min(diag) <= 1e3 * jnp.finfo(A.dtype).eps * jnp.maximum(colmax, jnp.finfo(A.dtype).tiny)
    return solve_triangular(R, Qm.T @ B, lower=False), bad


def _rotation_entries(mech):
    """(n_vel,) bool: the rotation entries of rigid bodies (planar theta; spatial rx..rz),
    which the automatic choice keeps independent when it has a choice."""
    rot = np.zeros(mech.n_vel, bool)
    for b in mech.nodes:
        nf = F.node_family(b.kind)
        if not nf.rigid or not nf.frame:
            continue
        dim = F.frame_kind(nf.frame).dim
        for k in range(b.size):
            rot[b.v0 + k * nf.nv + dim: b.v0 + (k + 1) * nf.nv] = True
    return rot


def _greedy_columns(E, start=(), rtol=1e-9, late=None):
    """Indices of a maximal set of linearly independent columns of E (NumPy), beginning
    with the columns `start` (kept when independent), then by pivoting: among the columns
    whose remaining fraction (not spanned by the chosen ones) is at least a tenth of the
    largest, the ones not flagged `late` first, then the largest fraction, then the
    earlier column."""
    late = np.zeros(np.shape(E)[1], bool) if late is None else np.asarray(late, bool)
    E = np.asarray(E, float)
    m, n = E.shape
    if m == 0 or n == 0:
        return []
    norms = np.linalg.norm(E, axis=0)
    scale = max(float(norms.max()), 1e-300)
    tol = rtol * scale * max(m, n)
    basis = np.zeros((m, 0))
    chosen = []

    def residual(j):
        c = E[:, j]
        return c - basis @ (basis.T @ c)

    for j in start:
        r = residual(j)
        r = r - basis @ (basis.T @ r)
        if np.linalg.norm(r) > tol:
            basis = np.column_stack([basis, r / np.linalg.norm(r)])
            chosen.append(int(j))
    while basis.shape[1] < m:
        cand = {}
        for j in range(n):
            if j in chosen or norms[j] <= tol:
                continue
            r = residual(j)
            r = r - basis @ (basis.T @ r)
            nr = np.linalg.norm(r)
            if nr > tol:
                cand[j] = (nr / norms[j], r)
        if not cand:
            break
        top = max(c[0] for c in cand.values())
        ok = [j for j, c in cand.items() if c[0] >= 0.1 * top]
        best = min(ok, key=lambda j: (bool(late[j]), -round(cand[j][0], 9), j))
        r = cand[best][1]
        basis = np.column_stack([basis, r / np.linalg.norm(r)])
        chosen.append(best)
    return chosen


# --------------------------------------------------------------------------- results
@pytree_dataclass
class LinearModel:
    """Linear state-space model x' = A x + B du, y = C x + D du of a constrained mechanism
    about the operating point (q, v, t, u), in independent coordinates.

    The state x (n,) = (z (n_position,), w (n - n_position,)): the perturbations of the
    independent chart entries `coordinates` (m or rad) and of the independent global
    velocities `velocities` (m/s or rad/s); `names` lists them ('arm.theta',
    'arm.theta_dot'). See the module docstring for the chart.

    A (n, n) 1/s and 1/s^2 blocks; B (n, n_controls) response to the control inputs u;
    C (p, n), D (p, n_controls) for the outputs (C = I, D = 0 when no outputs were
    given); Tq (n_coords, n) and Tv (n_vel, n): the first-order map back to the redundant
    coordinates, dq = Tq x, dv = Tv x; N (2 n_vel, n): the chart perturbation (dx, du) of
    each state; q, v, t, u: the operating point; acceleration (n_vel,): the global-axes
    accelerations there (zero at an equilibrium or a steady motion); residual: max |Phi|
    of the holonomic rows and |Phi_q v + Phi_t| of all rows at the operating point;
    status: int32 bit flags (SINGULAR: the dependent coordinates cannot be solved for, or
    the saddle system is singular; DRIFT: the operating point violates the constraints).
    """

    A: Any
    B: Any
    C: Any
    D: Any
    Tq: Any
    Tv: Any
    N: Any
    q: Any
    v: Any
    t: Any
    u: Any
    acceleration: Any
    residual: Any
    status: Any
    names: tuple = static_field(default=())
    n_position: int = static_field(default=0)

    @property
    def coordinates(self) -> tuple:
        """Chart names of the independent position states."""
        return self.names[: self.n_position]

    @property
    def velocities(self) -> tuple:
        """Chart names of the independent velocity states (without '_dot')."""
        return tuple(n[:-4] for n in self.names[self.n_position:])

    def index(self, name: str) -> int:
        """Index of a state by name ('arm.theta', 'arm.theta_dot')."""
        if name not in self.names:
            raise ValueError(f"unknown state {name!r}; states: {', '.join(self.names)}")
        return self.names.index(name)

    def without(self, names) -> "LinearModel":
        """The model with the named states removed (rows and columns of A, rows of B,
        columns of C, Tq, Tv, N): the quotient by ignorable states, e.g. the position of a
        vehicle along the road, its heading, its wheels' rotation angles and its
        (conserved) speed. Exact when the removed states do not influence the others,
        A[kept, removed] = 0; `coupling(names)` measures it. The eigenvalues of the result
        are those of A without the removed states' (zero) eigenvalues."""
        drop = [self.index(n) for n in names]
        keep = np.asarray([i for i in range(len(self.names)) if i not in drop], int)
        n_pos = int(sum(1 for i in keep if i < self.n_position))
        sel = lambda a, ax: jnp.take(a, keep, axis=ax)
        return LinearModel(sel(sel(self.A, -1), -2), sel(self.B, -2), sel(self.C, -1), self.D,
                           sel(self.Tq, -1), sel(self.Tv, -1), sel(self.N, -1), self.q, self.v,
                           self.t, self.u, self.acceleration, self.residual, self.status,
                           names=tuple(self.names[i] for i in keep), n_position=n_pos)

    def coupling(self, names):
        """max |A[kept, removed]| / max |A| for removing `names` with `without` (0 when
        they are ignorable)."""
        drop = np.asarray([self.index(n) for n in names], int)
        keep = np.asarray([i for i in range(len(self.names)) if i not in drop], int)
        sub = jnp.take(jnp.take(self.A, keep, axis=-2), drop, axis=-1)
        return jnp.max(jnp.abs(sub), axis=(-2, -1)) / jnp.max(jnp.abs(self.A), axis=(-2, -1))


@pytree_dataclass
class Modes:
    """Eigen-analysis of a LinearModel (one member; vmap for batches).

    eigenvalues (n,) complex, 1/s, sorted by modulus (a conjugate pair: positive imaginary
    part first); frequencies (n,) undamped natural frequencies |lambda| (rad/s);
    damped_frequencies (n,) |Im lambda| (rad/s); damping_ratios (n,) -Re lambda / |lambda|
    (NaN for lambda = 0); vectors (n, n) complex eigenvectors in the reduced state
    (column k for eigenvalue k); shapes_q (n_coords, n) and shapes_v
    (n_vel, n): the mode shapes in the redundant coordinates (Tq @ vectors, Tv @ vectors).
    Each vector is scaled so that its largest position entry is 1 (its largest entry for
    a mode without position part).
    """

    eigenvalues: Any
    frequencies: Any
    damped_frequencies: Any
    damping_ratios: Any
    vectors: Any
    shapes_q: Any
    shapes_v: Any


@pytree_dataclass
class EquilibriumResult:
    """Static equilibrium: q (n_coords,) and multipliers lam (m,) with Q(q) = Phi_q^T lam
    and Phi(q) = 0; stiffness (n_dof,): eigenvalues (ascending; N/m, N m/rad, mixed) of the
    reduced tangent stiffness, the Hessian of the potential on the constraint manifold
    (constraint curvature included), in velocity-space coordinates; stable: all of them
    positive (a strict minimum of the potential: stable by Lagrange-Dirichlet; one
    negative means unstable unless gyroscopic forces stabilise it); neutral: the number of
    eigenvalues that vanish (|s| <= 1e-9 max |s|: directions without stiffness, such as a
    free wheel's angle; then `stable` is False); force_residual: max
    |Q - Phi_q^T lam| (N, N m); residual: max |Phi| (m, rad); status: 0 or NEWTON_FAILED
    (or SINGULAR)."""

    q: Any
    lam: Any
    stiffness: Any
    stable: Any
    neutral: Any
    force_residual: Any
    residual: Any
    status: Any


# ------------------------------------------------------------------------ equilibrium
def equilibrium(mech, params, q_guess, u=None, t=0.0, *, iterations=40, tol=None,
                check=True) -> EquilibriumResult:
    """Static equilibrium under gravity, springs and loads, by Newton's method on the
    constrained statics Q(q, 0, t, u) - Phi_q(q)^T lam = 0, Phi(q, t) = 0 (q and the
    multipliers lam together), from q_guess (n_coords,) (need not satisfy the
    constraints).

    Every constraint row takes part in the force balance (a nonholonomic row, e.g. a
    wheel's no-slip condition, can carry a static load); the position rows are the
    holonomic ones. Each step is the least-squares solution of the linearised system
    (QR, column-scaled, with a tiny Levenberg-Marquardt term, so equilibria that form a
    continuum, e.g. a vehicle anywhere on flat ground, are handled).
    u: (n_controls,) control inputs held constant; t: time (s) of driven constraints.
    tol: convergence tolerance on max|Phi| relative to 1 + max|q| and on the force
    residual relative to 1 + the largest generalised force; default max(1e-10, 100 eps)
    for q's dtype (1e-10 in float64, 1.2e-5 in float32). The force test also admits the
    residual's rounding floor, 16 eps (1 + max|q|) max|K| with K the tangent stiffness
    (stiff elements: EA / L = 4e6 N/m leaves ~1e-9 N however many iterations run).
    check: with concrete inputs, raise ValueError when Newton does not converge. Traced
    (jit / vmap): per-member `status`.
    Returns an `EquilibriumResult` with the reduced stiffness's eigenvalues and stability.
    With non-conservative forces that depend on q (follower loads on beams,
    `add_node_load(..., follower=True)`) the tangent stiffness K is not symmetric:
    `stiffness` and `neutral` describe its symmetric part only, and `stable` follows
    Ziegler's kinetic criterion instead: every eigenvalue omega^2 of M_r^-1 K_r on the
    tangent space of the constraints real and positive (a complex pair is flutter, a
    negative one divergence; Beck's column: stable below 20.05 EI/L^2, flutter above).
    It is the undamped criterion: damping can lower the flutter load (Ziegler's paradox),
    so with damping judge by the eigenvalues of `linearize` (examples/beck_column.py).
    """
    q = jnp.asarray(q_guess)
    if not jnp.issubdtype(q.dtype, jnp.floating):
        q = q.astype(jnp.result_type(float))
    _check_shapes(mech, q)
    uu = _controls(mech, u, q.dtype)
    t = jnp.asarray(t, q.dtype)
    h = mech.holonomic_rows
    traced = _is_tracer(params, q, uu, t)
    if traced or len(h) == 0:
        rank = len(h)
    else:
        J = np.asarray(constraint_terms(mech, params, q, jnp.zeros((mech.n_vel,), q.dtype), t).jac)[h]
        rank = int(np.linalg.matrix_rank(J, tol=1e-9 * max(np.abs(J).max(), 1e-300) * max(J.shape)))
    if tol is None:
        tol = max(1e-10, 100.0 * float(jnp.finfo(q.dtype).eps))
    res = _equilibrium_jit(mech, params, q, uu, t, iterations=int(iterations), tol=float(tol),
                           rank=rank)
    if check and not traced and int(res.status) != 0:
        raise ValueError(
            f"equilibrium: Newton did not converge in {iterations} iterations from this guess "
            f"(max|Phi| = {float(res.residual):.3g}, max force residual "
            f"{float(res.force_residual):.3g} N or N m; status: {st.describe(res.status)}). "
            "Give a guess nearer an equilibrium, or check that one exists (a mechanism "
            "driven by a constant load with no restoring force has none).")
    return res


def _circulatory(K):
    """True when the tangent stiffness K (n, n) has a non-symmetric part above what the
    equilibrium's residual forces leave (max(1e-9, 1000 eps) of its largest entry: 1e-9 in
    float64, 1.2e-4 in float32): position-dependent non-conservative forces."""
    K = jax.lax.stop_gradient(K)
    rel = max(1e-9, 1e3 * float(jnp.finfo(K.dtype).eps))
    return jnp.max(jnp.abs(K - K.T)) > rel * jnp.maximum(jnp.max(jnp.abs(K)), jnp.finfo(K.dtype).tiny)


def _kinetic_stable(K, M, P, rank):
    """Ziegler's kinetic criterion for an undamped system with circulatory forces: on the
    tangent space of the position constraints (orthonormal basis N from the projector P
    (n, n), None without constraints; `rank` constraint rows), every eigenvalue s = omega^2
    of M_r^-1 K_r (K_r = N^T K N, M_r = N^T M N) real and positive: small oscillations
    about the equilibrium. A complex pair is flutter, a negative real s divergence. K and
    M are in the velocity-space chart of `mech.retract`; the eigenvalues carry no
    derivatives (stop_gradient). Massless coordinates make M_r singular: not stable."""
    K = jax.lax.stop_gradient(K)
    Md = jax.lax.stop_gradient(M.dense())
    if P is not None:
        N = jnp.linalg.eigh(jax.lax.stop_gradient(P))[1][:, rank:]  # eigenvalues 0 (rank), then 1
        K, Md = N.T @ K @ N, N.T @ Md @ N
    s = jnp.linalg.eigvals(jnp.linalg.solve(0.5 * (Md + Md.T), K))
    tol = jnp.finfo(K.dtype).eps ** 0.5 * jnp.max(jnp.abs(s))
    return jnp.all(jnp.isfinite(s)) & jnp.all(jnp.abs(jnp.imag(s)) <= tol) & jnp.all(jnp.real(s) > tol)


def _lm_solve(K, r):
    """s minimising |K s + r|^2 + mu |D s|^2 (D: column norms of K, mu tiny) by QR."""
    col = jnp.sqrt(jnp.sum(K * K, 0))
    col = jnp.where(col > 0, col, 1.0)
    Ks = K / col
    n = K.shape[1]
    mu = jnp.finfo(K.dtype).eps ** 0.6
    aug = jnp.concatenate([Ks, mu * jnp.eye(n, dtype=K.dtype)], 0)
    rhs = jnp.concatenate([-r, jnp.zeros((n,), K.dtype)])
    Qm, R = jnp.linalg.qr(aug)
    return solve_triangular(R, Qm.T @ rhs, lower=False) / col


@partial(jax.jit, static_argnames=("iterations", "tol", "rank"))
def _equilibrium_jit(mech, params, q, u, t, *, iterations, tol, rank):
    nv, m = mech.n_vel, mech.n_constraints
    h = mech.holonomic_rows
    zv = jnp.zeros((nv,), q.dtype)

    def parts(qq, lam):
        terms = constraint_terms(mech, params, qq, zv, t)
        Q, _, _ = generalized_forces(mech, params, qq, zv, t, u)
        return Q, terms.jac, terms.phi[h]

    def resid(qq, lam):
        Q, jac, phi = parts(qq, lam)
        return jnp.concatenate([Q - jac.T @ lam, phi])

    # initial multipliers: least squares Q = jac^T lam at the guess
    Q0, jac0, _ = parts(q, jnp.zeros((m,), q.dtype))
    lam0 = _lm_solve(jac0.T, -Q0) if m else jnp.zeros((0,), q.dtype)

    def newton(carry, _):
        qq, lam = carry
        r = resid(qq, lam)
        Kx = jax.jacfwd(lambda dx: resid(mech.retract(qq, dx), lam))(zv)
        Kl = jax.jacfwd(lambda ll: resid(qq, ll))(lam) if m else jnp.zeros((nv + len(h), 0), q.dtype)
        s = _lm_solve(jnp.concatenate([Kx, Kl], 1), r)
        return (mech.normalize(mech.retract(qq, s[:nv])), lam + s[nv:]), None

    (q, lam), _ = jax.lax.scan(newton, (q, lam0), None, length=iterations)
    Q, jac, phi = parts(q, lam)
    f = Q - jac.T @ lam
    fres = jnp.max(jnp.abs(f)) if nv else jnp.zeros((), q.dtype)
    res = jnp.max(jnp.abs(phi)) if len(h) else jnp.zeros((), q.dtype)
    # reduced tangent stiffness: -d(Q - jac^T lam)/dx on the tangent space of Phi_h = 0,
    # as the eigenvalues of P K P + c (I - P) without the r eigenvalues equal to c
    Kfull = -jax.jacfwd(lambda dx: resid(mech.retract(q, dx), lam)[:nv])(zv)
    fscale = 1.0 + jnp.maximum(jnp.max(jnp.abs(Q)), jnp.max(jnp.abs(jac.T @ lam)) if m else 0.0)
    # the force residual cannot be resolved below its rounding floor: moving q by one ulp
    # (eps (1 + max|q|)) changes the forces by that times the stiffness (a stiff beam,
    # EA / L = 4e6 N/m: ~1e-9 N, above tol * fscale when the net loads are ~1 N)
    qscale = 1.0 + jnp.max(jnp.abs(q))
    ffloor = 16.0 * jnp.finfo(q.dtype).eps * qscale * (jnp.max(jnp.abs(Kfull)) if nv else 0.0)
    ok = (res <= tol * qscale) & (fres <= tol * fscale + ffloor)
    ok = ok & jnp.all(jnp.isfinite(q)) & jnp.all(jnp.isfinite(lam))
    K = 0.5 * (Kfull + Kfull.T)
    if len(h):
        Jh = jac[h]
        G = Jh @ Jh.T
        G = G + jnp.finfo(q.dtype).eps * jnp.trace(G) * jnp.eye(len(h), dtype=q.dtype)
        P = jnp.eye(nv, dtype=q.dtype) - Jh.T @ _spd_solve(G, Jh)
        P = 0.5 * (P + P.T)
        c = -(2.0 * jnp.sqrt(jnp.sum(K * K)) + 1.0)
        ev = jnp.linalg.eigvalsh(P @ K @ P + c * (jnp.eye(nv, dtype=q.dtype) - P))[rank:]
    else:
        P = None
        ev = jnp.linalg.eigvalsh(K)
    scale = jnp.max(jnp.abs(ev)) if ev.shape[0] else jnp.zeros((), q.dtype)
    stable = jnp.all(ev > 1e-9 * scale) & (scale > 0) if ev.shape[0] else jnp.ones((), bool)
    neutral = jnp.sum(jnp.abs(ev) <= 1e-9 * scale).astype(jnp.int32)
    if nv > rank:
        # circulatory (non-symmetric) stiffness, e.g. follower loads: the kinetic criterion
        stable = jnp.where(_circulatory(Kfull), _kinetic_stable(Kfull, mass_matrix(mech, params, q), P, rank),
                           stable)
    status = jnp.where(ok, st.OK, st.NEWTON_FAILED).astype(jnp.int32)
    return EquilibriumResult(q, lam, ev, stable, neutral, fres, res, status)


def _spd_solve(G, B):
    """G^-1 B for a symmetric positive definite G by Cholesky (no LU under vmap)."""
    L = jnp.linalg.cholesky(G)
    return solve_triangular(L.T, solve_triangular(L, B, lower=True), lower=False)


# ------------------------------------------------------------------------ linearise
def linearize(mech, params, q, v, t=0.0, u=None, *, coordinates=None, velocities=None,
              outputs=None, solver=SchurCholesky(), tol=1e-8) -> LinearModel:
    """The linear state-space model of the constrained mechanism about (q, v, t, u).

    Args:
      q (n_coords,), v (n_vel,): a consistent operating point (see `assemble`): an
        equilibrium, or a state on a steady motion (a vehicle rolling straight at speed).
      t: time (s); u: (n_controls,) control inputs (B is the response to their change).
      coordinates: names of the independent position entries of the chart
        (`chart_names(mech)`, e.g. ('crank.theta',) or ('frame.rx', ...)); default: chosen
        automatically at the operating point by pivoting on the holonomic Jacobian (as
        many as the configuration space has dimensions). Required when the inputs are
        traced (jit / vmap): call once eagerly and pass `lin.coordinates`.
      velocities: names (chart names, without '_dot') of the independent velocity
        entries; default: the same as `coordinates` without nonholonomic rows, otherwise
        chosen automatically (fewer than the positions).
      outputs: optional JAX function y = outputs(q, v, u) -> (p,); C and D are its
        Jacobians with respect to the state and u. Default: the state itself.
      solver: the saddle solver of the dynamics (SchurCholesky(regularization=...) for
        redundant constraints).
      tol: operating-point consistency tolerance (max|Phi|, |Phi_q v + Phi_t|, relative to
        1 + max|q| and 1 + max|v|): with concrete inputs a violation raises ValueError,
        traced it sets status DRIFT.
    Returns a `LinearModel` (module docstring: chart, reduced state, map back).
    """
    q = jnp.asarray(q)
    if not jnp.issubdtype(q.dtype, jnp.floating):
        q = q.astype(jnp.result_type(float))
    v = jnp.asarray(v, q.dtype)
    _check_shapes(mech, q, v)
    uu = _controls(mech, u, q.dtype)
    t = jnp.asarray(t, q.dtype)
    if outputs is not None and not callable(outputs):
        raise ValueError("outputs must be a JAX function outputs(q, v, u) -> (p,) array")
    names = chart_names(mech)
    nv = mech.n_vel
    traced = _is_tracer(params, q, v, t, uu)
    ix = _indices(names, coordinates, "coordinates")
    iu = _indices(names, velocities, "velocities")
    nonholonomic = bool(mech.nonholonomic_rows)
    if traced:
        if ix is None:
            raise ValueError(
                "linearize: with traced inputs (jit / vmap / grad) the independent coordinates "
                "must be named (coordinates=...): call linearize once with concrete values and "
                "pass its lin.coordinates and lin.velocities")
        if iu is None:
            if nonholonomic:
                raise ValueError("linearize: with traced inputs and nonholonomic rows, name the "
                                 "independent velocities too (velocities=...)")
            iu = ix
    else:
        E = _constraint_chart_jacobian(mech, params, q, v, t)
        ix, iu = _partition(mech, names, E, ix, iu)
        _check_operating_point(mech, params, q, v, t, tol)
    lin = _linearize_jit(mech, params, q, v, t, uu, ix=tuple(ix), iu=tuple(iu), outputs=outputs,
                         solver=solver, tol=float(tol))
    state_names = tuple(names[i] for i in ix) + tuple(names[i] + "_dot" for i in iu)
    return lin.replace(names=state_names, n_position=len(ix))


def _indices(names, given, what):
    if given is None:
        return None
    if isinstance(given, str):
        given = (given,)
    out = []
    for g in given:
        if g not in names:
            raise ValueError(f"linearize: {what}: unknown chart entry {g!r}; known: "
                             f"{', '.join(names)} (see jaxmbs.linear.chart_names)")
        if names.index(g) in out:
            raise ValueError(f"linearize: {what}: {g!r} is named twice")
        out.append(names.index(g))
    return out


@jax.jit
def _constraint_chart_jacobian(mech, params, q, v, t):
    """Jacobian (m_h + m, 2 n_vel) of (Phi_h, Phi_q v + Phi_t) with respect to (dx, du)."""
    nv = mech.n_vel
    h = mech.holonomic_rows
    V0 = _to_global(mech, q, v)

    def cons(d):
        qq, vv = _chart_state(mech, q, V0, d[:nv], d[nv:])
        terms = constraint_terms(mech, params, qq, vv, t)
        return jnp.concatenate([terms.phi[h], terms.jac @ vv + terms.phit])

    return jax.jacfwd(cons)(jnp.zeros((2 * nv,), q.dtype))


def _partition(mech, names, E, ix, iu):
    """Static independent position (ix) and velocity (iu) indices from the constraint
    Jacobian E at a concrete operating point; validates named choices."""
    nv = mech.n_vel
    mh = len(mech.holonomic_rows)
    E = np.asarray(E)
    Ehx, Evu = E[:mh, :nv], E[mh:, nv:]

    def rank(a):
        if a.size == 0:
            return 0
        return int(np.linalg.matrix_rank(a, tol=1e-9 * max(np.abs(a).max(), 1e-300) * max(a.shape)))

    rh, rv = rank(Ehx), rank(Evu)
    if ix is None:
        dep = _greedy_columns(Ehx, late=_rotation_entries(mech))
        ix = [i for i in range(nv) if i not in dep]
    else:
        dep = [i for i in range(nv) if i not in ix]
        if len(ix) != nv - rh or rank(Ehx[:, dep]) < rh:
            raise ValueError(
                f"linearize: coordinates {tuple(names[i] for i in ix)} are not a set of "
                f"independent coordinates at this configuration: the configuration space has "
                f"{nv - rh} dimensions and the other entries must be determined by the "
                f"constraints (leave coordinates=None for an automatic choice)")
    if iu is None:
        if not mech.nonholonomic_rows:
            iu = list(ix)
        else:
            depu = _greedy_columns(Evu, start=[i for i in range(nv) if i not in ix],
                                   late=_rotation_entries(mech))
            iu = [i for i in range(nv) if i not in depu]
    depu = [i for i in range(nv) if i not in iu]
    if len(iu) != nv - rv or rank(Evu[:, depu]) < rv:
        raise ValueError(
            f"linearize: velocities {tuple(names[i] for i in iu)} are not a set of independent "
            f"velocities at this state: the admissible velocities have {nv - rv} dimensions "
            "and the other entries must be determined by the constraints (leave "
            "velocities=None for an automatic choice)")
    return ix, iu


def _check_operating_point(mech, params, q, v, t, tol):
    if mech.n_constraints == 0:
        return
    terms = constraint_terms(mech, params, q, v, t)
    h = mech.holonomic_rows
    res = float(np.max(np.abs(np.asarray(terms.phi)[h]))) if len(h) else 0.0
    vres = float(np.max(np.abs(np.asarray(terms.jac @ v + terms.phit))))
    if res > tol * (1.0 + float(np.max(np.abs(q)))) or vres > tol * (1.0 + float(np.max(np.abs(v)))):
        raise ValueError(
            f"linearize: the operating point violates the constraints (max|Phi| = {res:.3g}, "
            f"max|Phi_q v + Phi_t| = {vres:.3g}); make it consistent first with "
            "jaxmbs.assemble or jaxmbs.equilibrium")


@partial(jax.jit, static_argnames=("ix", "iu", "outputs", "solver", "tol"))
def _linearize_jit(mech, params, q, v, t, u, *, ix, iu, outputs, solver, tol):
    nv, nu = mech.n_vel, u.shape[0]
    dtype = q.dtype
    V0 = _to_global(mech, q, v)
    ixa, iua = np.asarray(ix, int), np.asarray(iu, int)
    depx = np.asarray([i for i in range(nv) if i not in ix], int)
    depu = np.asarray([i for i in range(nv) if i not in iu], int)
    npos, nw = len(ix), len(iu)

    # full linearisation of the perturbation dynamics
    def field(z):
        dx, du, dU = z[:nv], z[nv:2 * nv], z[2 * nv:]
        qq, vv = _chart_state(mech, q, V0, dx, du)
        acc = accelerations(mech, params, qq, vv, t, u + dU, solver=solver)
        xdot = du + _chart_rate(mech, q, V0, dx)
        return jnp.concatenate([xdot, _to_global(mech, qq, acc.qdd)]), acc.status

    z0 = jnp.zeros((2 * nv + nu,), dtype)
    Jf, status = jax.jacfwd(field, has_aux=True)(z0)
    f0, _ = field(z0)
    Afull, Bfull = Jf[:, :2 * nv], Jf[:, 2 * nv:]

    # the constrained subspace, by coordinate partitioning
    E = _constraint_chart_jacobian(mech, params, q, v, t)
    mh = len(mech.holonomic_rows)
    Ehx, Evx, Evu = E[:mh, :nv], E[mh:, :nv], E[mh:, nv:]
    Nx = jnp.zeros((nv, npos), dtype).at[ixa, np.arange(npos)].set(1.0)
    bad = jnp.zeros((), bool)
    if depx.size:
        X, b1 = _lstsq_tall(Ehx[:, depx], -Ehx[:, ixa])
        Nx = Nx.at[depx].set(X)
        bad = bad | b1
    Nu = jnp.zeros((nv, nw), dtype).at[iua, np.arange(nw)].set(1.0)
    Pu = jnp.zeros((nv, npos), dtype)
    if depu.size:
        rhs = jnp.concatenate([-Evu[:, iua], -Evx @ Nx], 1)
        X, b2 = _lstsq_tall(Evu[:, depu], rhs)
        Nu = Nu.at[depu].set(X[:, :nw])
        Pu = Pu.at[depu].set(X[:, nw:])
        bad = bad | b2
    N = jnp.concatenate([jnp.concatenate([Nx, jnp.zeros((nv, nw), dtype)], 1),
                         jnp.concatenate([Pu, Nu], 1)], 0)
    rows = np.concatenate([ixa, nv + iua])
    A = Afull[rows] @ N
    B = Bfull[rows]

    # map back to the redundant coordinates
    def qv(d):
        return _chart_state(mech, q, V0, d[:nv], d[nv:])

    dq, dv = jax.jacfwd(qv)(jnp.zeros((2 * nv,), dtype))
    Tq, Tv = dq @ N, dv @ N
    if outputs is None:
        C = jnp.eye(npos + nw, dtype=dtype)
        D = jnp.zeros((npos + nw, nu), dtype)
    else:
        def out(z):
            qq, vv = qv(z[:2 * nv])
            return jnp.atleast_1d(jnp.asarray(outputs(qq, vv, u + z[2 * nv:]), dtype))

        Jo = jax.jacfwd(out)(z0)
        C, D = Jo[:, :2 * nv] @ N, Jo[:, 2 * nv:]

    terms = constraint_terms(mech, params, q, v, t)
    h = mech.holonomic_rows
    res = jnp.max(jnp.abs(terms.phi[h])) if mh else jnp.zeros((), dtype)
    vres = jnp.max(jnp.abs(terms.jac @ v + terms.phit)) if mech.n_constraints else jnp.zeros((), dtype)
    drift = (res > tol * (1.0 + jnp.max(jnp.abs(q)))) | (vres > tol * (1.0 + jnp.max(jnp.abs(v))))
    status = (status | jnp.where(bad, st.SINGULAR, 0) | jnp.where(drift, st.DRIFT, 0)
              | jnp.where(jnp.all(jnp.isfinite(A)), 0, st.NONFINITE)).astype(jnp.int32)
    return LinearModel(A, B, C, D, Tq, Tv, N, q, v, t, u, f0[nv:], jnp.maximum(res, vres), status)


# ------------------------------------------------------------------------------ modes
def modes(lin) -> Modes:
    """Eigenvalues, natural frequencies, damping ratios and mode shapes of a LinearModel
    (or of a square matrix A, then with shapes in its own coordinates). jit / vmap / grad:
    the eigenvalues (and frequencies, damping ratios) are differentiable where they are
    simple; the eigenvectors and mode shapes are not differentiated (stop_gradient)."""
    A = lin.A if isinstance(lin, LinearModel) else jnp.asarray(lin)
    # eigenvalues differentiable (eigvals), eigenvectors not (JAX differentiates
    # non-symmetric eigenvectors only under assumptions it cannot check); both sorted by
    # the same key (modulus, then imaginary part descending)
    lam0, V = jnp.linalg.eig(jax.lax.stop_gradient(A))
    lam = jnp.linalg.eigvals(A)
    key = lambda z: jnp.lexsort((-jnp.imag(z), jnp.round(jnp.abs(z), 10)))
    lam, V = lam[key(lam)], V[:, key(lam0)]
    # scale: the largest position entry 1 (the largest entry for a pure velocity mode)
    npos = lin.n_position if isinstance(lin, LinearModel) else V.shape[0]
    mag_v = jnp.abs(V)
    pos_max = jnp.max(mag_v[:npos], axis=0) if npos else jnp.zeros(V.shape[1])
    use_pos = pos_max > 1e-9 * jnp.max(mag_v, axis=0)
    k = jnp.where(use_pos, jnp.argmax(mag_v.at[npos:].set(-1.0), axis=0), jnp.argmax(mag_v, axis=0))
    V = V / V[k, jnp.arange(V.shape[1])][None, :]
    mag = jnp.abs(lam)
    zeta = jnp.where(mag > 0, -jnp.real(lam) / jnp.where(mag > 0, mag, 1.0), jnp.nan)
    if isinstance(lin, LinearModel):
        sq, sv = lin.Tq.astype(V.dtype) @ V, lin.Tv.astype(V.dtype) @ V
    else:
        sq = sv = V
    return Modes(lam, mag, jnp.abs(jnp.imag(lam)), zeta, V, sq, sv)


def mode_motion(mech, lin, m, k, amplitude=0.1, n_frames=48, cycles=1.0):
    """A motion (t (s,), q (s, n_coords)) that shows mode k of Modes m: the operating
    point moved along the mode's position part, scaled so that its largest chart entry
    is `amplitude` (m or rad), over `cycles` periods of the damped frequency (one
    back-and-forth swing for a real eigenvalue), without growth or decay. First order:
    the constraints are satisfied to O(amplitude^2) (for drawing, not analysis)."""
    vec = np.asarray(m.vectors)[:, k]
    lam = complex(np.asarray(m.eigenvalues)[k])
    npos = lin.n_position
    Nx = np.asarray(lin.N)[: mech.n_vel, :]
    dxc = Nx @ vec  # chart position perturbation (complex)
    scale = np.max(np.abs(dxc))
    if scale == 0:
        dxc = np.asarray(lin.N)[mech.n_vel:, :] @ vec  # a pure velocity mode: show its motion
        scale = max(np.max(np.abs(dxc)), 1e-300)
    dxc = dxc * amplitude / scale
    wd = abs(lam.imag)
    period = 2 * np.pi / wd if wd > 0 else 1.0
    t = np.linspace(0.0, cycles * period, int(n_frames))
    phase = np.exp(1j * wd * t) if wd > 0 else np.sin(2 * np.pi * t / period)
    q0 = jnp.asarray(lin.q)
    V0 = _to_global(mech, q0, jnp.asarray(lin.v))
    qs = []
    for ph in phase:
        dx = jnp.asarray(np.real(dxc * ph), q0.dtype)
        qq, _ = _chart_state(mech, q0, V0, dx, jnp.zeros_like(dx))
        qs.append(np.asarray(mech.normalize(qq)))
    del npos
    return t, np.stack(qs)


def animate_mode(mech, params, lin, m, k, path, *, amplitude=0.1, n_frames=48, fps=20,
                 title=None):
    """Write an animated GIF of mode k (see `mode_motion`) with `jaxmbs.plot.animate`."""
    from types import SimpleNamespace

    from . import plot

    t, q = mode_motion(mech, lin, m, k, amplitude, n_frames)
    lam = complex(np.asarray(m.eigenvalues)[k])
    if title is None:
        title = f"mode {k}: lambda = {lam.real:.4g} {'+' if lam.imag >= 0 else '-'} {abs(lam.imag):.4g}i 1/s"
    return plot.animate(mech, params, SimpleNamespace(t=t, q=q), path, fps=fps,
                        max_frames=n_frames, title=title)
