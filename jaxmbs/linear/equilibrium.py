"""Static equilibrium: Newton (Levenberg-Marquardt) on the generalized forces with the
constraints, and the stability of the equilibrium found."""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular

from .. import status as st
from ..core.equations import constraint_terms, generalized_forces, mass_matrix
from ..core.newton import iterate
from ..simulation import _is_tracer
from .chart import _check_shapes, _controls
from .results import EquilibriumResult


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

    def newton(carry, _last):
        qq, lam = carry
        r = resid(qq, lam)
        Kx = jax.jacfwd(lambda dx: resid(mech.retract(qq, dx), lam))(zv)
        Kl = jax.jacfwd(lambda ll: resid(qq, ll))(lam) if m else jnp.zeros((nv + len(h), 0), q.dtype)
        s = _lm_solve(jnp.concatenate([Kx, Kl], 1), r)
        return mech.normalize(mech.retract(qq, s[:nv])), lam + s[nv:]

    q, lam = iterate(newton, (q, lam0), iterations)
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
