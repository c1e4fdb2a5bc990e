"""The equations of motion of a whole mechanism: M, Q, Phi, Phi_q, Phi_t, gamma.

This is the one place where body, joint and force families meet. Every family is
evaluated with one vectorised expression over its instances and scattered into place;
Python loops here run over *families* (a handful), never over instances.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import profiles
from ._small import MINV_MAX, matmul
from .banded import SparseJacobian, sparse_plan
from .mechanism import Mechanism, Params
from .planar import forces as pf
from .planar.geometry import perp, rotate
from .planar.joints import FAMILIES

__all__ = ["ConstraintTerms", "MassMatrix", "constraint_terms", "constraint_rows", "mass_matrix",
           "generalized_forces", "energy_terms", "force_outputs"]


class ConstraintTerms(NamedTuple):
    """phi (m,), jac = Phi_q (m, n), phit = Phi_t (m,), gamma (m,) with
    Phi_q qdd = gamma the acceleration-level constraint (no stabilisation)."""

    phi: jax.Array
    jac: jax.Array
    phit: jax.Array
    gamma: jax.Array


def _ext(x):
    return jnp.concatenate([x, jnp.zeros((1,), x.dtype)])


def _gather(xe, cols, frames):
    return xe[cols[np.asarray(frames, dtype=np.int32)]]


def constraint_rows(mech: Mechanism, params: Params, q, v, t):
    """Per-family row blocks: list of (row0, frames_i, frames_j, phi, Gi, Gj, phit, gamma).

    Shapes per family: phi/phit/gamma (k, r), Gi/Gj (k, r, 3). A family with extra
    coordinates (`fam.extra_cols`, the cam) returns Gi (k, r, 3 + e): its trailing e
    columns are the Jacobian block of the instance's extra coordinates fam.extra_cols[k].
    """
    cols = mech.frame_cols()
    qe, ve = _ext(q), _ext(v)
    out = []
    for fam in mech.families:
        ev, r, _, driven = FAMILIES[fam.kind]
        p = params.joints[fam.kind]
        Xi, Xj = _gather(qe, cols, fam.frames_i), _gather(qe, cols, fam.frames_j)
        Vi, Vj = _gather(ve, cols, fam.frames_i), _gather(ve, cols, fam.frames_j)
        if fam.extra_cols:  # extra (massless) coordinates: cam curve parameters
            ec = np.asarray(fam.extra_cols, dtype=np.int32)
            g, Gi, Gj, quad, Gs = ev(p, Xi, Xj, Vi, Vj, qe[ec], ve[ec], fam.static)
            Gi = jnp.concatenate([Gi, Gs], -1)
        else:
            g, Gi, Gj, quad = ev(p, Xi, Xj, Vi, Vj)
        if driven:
            f, fd, fdd = profiles.evaluate(p, t)
            for k, fn in fam.user_profiles:
                uf, ufd, ufdd = profiles.evaluate_user(fn, t)
                f, fd, fdd = f.at[k].add(uf), fd.at[k].add(ufd), fdd.at[k].add(ufdd)
            phi, phit, gamma = g - f[:, None], -fd[:, None], -quad + fdd[:, None]
        else:
            phi, phit, gamma = g, jnp.zeros_like(g), -quad
        out.append((fam, phi, Gi, Gj, phit, gamma))
    return out


def _user_terms(mech, params, q, v, t):
    phis, jacs, phits, gammas = [], [], [], []
    for uc in mech.user_constraints:
        extra = (params.user[uc.name],) if uc.with_params else ()
        fn = lambda qq, tt, _f=uc.fn, _e=extra: jnp.atleast_1d(_f(qq, tt, *_e))
        phi = fn(q, t)
        jac = jax.jacfwd(fn, 0)(q, t)
        phit = jax.jacfwd(fn, 1)(q, t)
        phidot = lambda qq, tt: jax.jacfwd(fn, 0)(qq, tt) @ v + jax.jacfwd(fn, 1)(qq, tt)
        _, gdot = jax.jvp(phidot, (q, t), (v, jnp.ones_like(t)))
        phis.append(phi), jacs.append(jac), phits.append(phit), gammas.append(-gdot)
    return phis, jacs, phits, gammas


def _velocity_terms(mech, params, q, v, t):
    """User velocity constraints fn(q, v, t[, params]) = A(q, t) v - b(q, t) (affine in v):
    A = d fn / d v, phit = fn(q, 0, t) = -b, gamma = -(fn_q v + fn_t) at fixed v."""
    jacs, phits, gammas = [], [], []
    zero = jnp.zeros_like(v)
    for vc in mech.velocity_constraints:
        extra = (params.user[vc.name],) if vc.with_params else ()
        fn = lambda qq, vv, tt, _f=vc.fn, _e=extra: jnp.atleast_1d(_f(qq, vv, tt, *_e)).astype(q.dtype)
        jacs.append(jax.jacfwd(fn, 1)(q, zero, t))
        phits.append(fn(q, zero, t))
        _, hdot = jax.jvp(lambda qq, tt: fn(qq, v, tt), (q, t), (v, jnp.ones_like(t)))
        gammas.append(-hdot)
    return jacs, phits, gammas


def constraint_terms(mech: Mechanism, params: Params, q, v, t, sparse: bool = False) -> ConstraintTerms:
    """Phi, Phi_q (dense, m x n), Phi_t and gamma of all constraint rows at (q, v, t).

    sparse=True returns Phi_q as a `jaxmbs.banded.SparseJacobian` (per-row nonzero blocks,
    no dense m x n array) for the mechanisms the sparse path covers (no user, velocity or
    cam rows), and the dense array otherwise. Solvers that use it say so (`solver.sparse`).

    Nonholonomic rows (`mech.nonholonomic_rows`: knife edges, user velocity constraints
    A(q, t) v = b(q, t)) have phi = 0, jac = A, phit = -b and gamma = -(A_q v) v + b_dot,
    so that jac @ v + phit is their residual and jac @ qdd = gamma their acceleration form."""
    n, m = mech.n_coords, mech.n_constraints
    dtype = q.dtype
    t = jnp.asarray(t, dtype)
    if sparse and m and sparse_plan(mech) is not None:
        return _sparse_terms(mech, params, q, v, t, sparse_plan(mech))
    cols = mech.frame_cols()
    phi = jnp.zeros((m,), dtype)
    phit = jnp.zeros((m,), dtype)
    gamma = jnp.zeros((m,), dtype)
    jac = jnp.zeros((m, n + 1), dtype)
    for fam, ph, Gi, Gj, pt, ga in constraint_rows(mech, params, q, v, t):
        k, r = ph.shape
        rows = fam.row0 + np.arange(k * r).reshape(k, r)
        phi = phi.at[rows].set(ph)
        phit = phit.at[rows].set(pt)
        gamma = gamma.at[rows].set(ga)
        for frames, G in ((fam.frames_i, Gi), (fam.frames_j, Gj)):
            fc = cols[np.asarray(frames)]
            if G.shape[-1] > 3:  # trailing extra-coordinate columns (cam)
                fc = np.concatenate([fc, np.asarray(fam.extra_cols, dtype=fc.dtype)], 1)
            c = fc.shape[1]
            R = np.broadcast_to(rows[:, :, None], (k, r, c))
            C = np.broadcast_to(fc[:, None, :], (k, r, c))
            jac = jac.at[R, C].add(G)
    jac = jac[:, :n]
    for uc, ph, jc, pt, ga in zip(mech.user_constraints, *_user_terms(mech, params, q, v, t)):
        rows = np.arange(uc.row0, uc.row0 + uc.rows)
        phi, phit, gamma = phi.at[rows].set(ph), phit.at[rows].set(pt), gamma.at[rows].set(ga)
        jac = jac.at[rows].set(jc)
    for vc, jc, pt, ga in zip(mech.velocity_constraints, *_velocity_terms(mech, params, q, v, t)):
        rows = np.arange(vc.row0, vc.row0 + vc.rows)
        phit, gamma, jac = phit.at[rows].set(pt), gamma.at[rows].set(ga), jac.at[rows].set(jc)
    return ConstraintTerms(phi, jac, phit, gamma)


def _sparse_terms(mech, params, q, v, t, plan):
    """ConstraintTerms with a SparseJacobian: the family blocks concatenated, no scatter."""
    parts = constraint_rows(mech, params, q, v, t)
    phi = jnp.concatenate([ph.reshape(-1) for _, ph, _, _, _, _ in parts])
    phit = jnp.concatenate([pt.reshape(-1) for _, _, _, _, pt, _ in parts])
    gamma = jnp.concatenate([ga.reshape(-1) for _, _, _, _, _, ga in parts])
    vals = jnp.concatenate([jnp.concatenate([Gi, Gj], -1).reshape(-1, 6)
                            for _, _, Gi, Gj, _, _ in parts])
    if not plan.identity_order:
        phi, phit, gamma, vals = phi[plan.src], phit[plan.src], gamma[plan.src], vals[plan.src]
    return ConstraintTerms(phi, SparseJacobian(vals, plan), phit, gamma)


class MassMatrix(NamedTuple):
    """Block-diagonal mass matrix in reference-point coordinates.

    Body b's 3x3 block is [[m I, m perp(c)], [m perp(c)^T, J + m |c|^2]] with c = A s_G the
    global CG offset and J the inertia about the CG; a particle's block is m I.
    """

    m: jax.Array  # (nb,)
    J: jax.Array  # (nb,) about the CG
    c: jax.Array  # (nb, 2) global CG offset A s_G
    mp: jax.Array  # (np,)
    # (e,) zeros: the extra coordinates (cam curve parameters) carry no mass, so M is then
    # singular: `solve` is not available and the saddle solvers use an augmented M
    # (`jaxmbs.saddle`); None (the default) when there are none
    me: jax.Array = None

    @property
    def n_extra(self) -> int:
        return 0 if self.me is None else self.me.shape[0]

    def _split(self, X):
        nb, npt = self.m.shape[0], self.mp.shape[0]
        Xb = X[: 3 * nb].reshape((nb, 3) + X.shape[1:])
        Xp = X[3 * nb: 3 * nb + 2 * npt].reshape((-1, 2) + X.shape[1:])
        return Xb, Xp

    def _join(self, Xb, Xp):
        tail = Xb.shape[2:]
        parts = [Xb.reshape((-1,) + tail), Xp.reshape((-1,) + tail)]
        if self.n_extra:  # massless extra coordinates: M X has zeros there
            parts.append(jnp.zeros((self.n_extra,) + tail, Xb.dtype))
        return jnp.concatenate(parts)

    def _bc(self, a, X):
        return a.reshape(a.shape + (1,) * (X.ndim - a.ndim))

    def apply(self, X):
        """M @ X for X (n,) or (n, k)."""
        Xb, Xp = self._split(X)
        pc = perp(self.c)
        m, J = self._bc(self.m, Xb[:, 0]), self._bc(self.J, Xb[:, 0])
        px, py = self._bc(pc[:, 0], Xb[:, 0]), self._bc(pc[:, 1], Xb[:, 0])
        c2 = self._bc(jnp.sum(self.c**2, -1), Xb[:, 0])
        yb = jnp.stack([
            m * (Xb[:, 0] + px * Xb[:, 2]),
            m * (Xb[:, 1] + py * Xb[:, 2]),
            m * (px * Xb[:, 0] + py * Xb[:, 1]) + (J + m * c2) * Xb[:, 2],
        ], 1)
        yp = self._bc(self.mp, Xp[:, 0])[:, None] * Xp
        return self._join(yb, yp)

    def solve(self, X):
        """M^-1 @ X for X (n,) or (n, k), in closed form per block (not defined with
        massless extra coordinates: ValueError)."""
        if self.n_extra:
            raise ValueError("MassMatrix.solve: this mechanism has massless extra coordinates "
                             "(cam curve parameters), so M is singular; solve the saddle system "
                             "with SchurCholesky or DenseLU, which handle them")
        if X.shape[0] <= MINV_MAX:  # small: dense M^-1 and an element-wise product
            return matmul(self.inverse_dense(), X)
        Xb, Xp = self._split(X)
        pc = perp(self.c)
        m, J = self._bc(self.m, Xb[:, 0]), self._bc(self.J, Xb[:, 0])
        px, py = self._bc(pc[:, 0], Xb[:, 0]), self._bc(pc[:, 1], Xb[:, 0])
        th = (Xb[:, 2] - px * Xb[:, 0] - py * Xb[:, 1]) / J
        yb = jnp.stack([Xb[:, 0] / m - px * th, Xb[:, 1] / m - py * th, th], 1)
        yp = Xp / self._bc(self.mp, Xp[:, 0])[:, None]
        return self._join(yb, yp)

    def inverse_dense(self):
        """M^-1 as an (n, n) array, assembled entry by entry from the closed-form 3x3
        block inverses (for small n; ValueError with massless extra coordinates)."""
        if self.n_extra:
            raise ValueError("MassMatrix.inverse_dense: M is singular (massless extra coordinates)")
        nb, npt = self.m.shape[0], self.mp.shape[0]
        n = 3 * nb + 2 * npt
        zero = jnp.zeros((), self.m.dtype)
        rows = [[zero] * n for _ in range(n)]
        pc = perp(self.c)
        for b in range(nb):
            im, iJ, px, py = 1.0 / self.m[b], 1.0 / self.J[b], pc[b, 0], pc[b, 1]
            blk = ((im + px * px * iJ, px * py * iJ, -px * iJ),
                   (px * py * iJ, im + py * py * iJ, -py * iJ),
                   (-px * iJ, -py * iJ, iJ))
            for i in range(3):
                for j in range(3):
                    rows[3 * b + i][3 * b + j] = blk[i][j]
        for k in range(npt):
            r = 3 * nb + 2 * k
            rows[r][r] = rows[r + 1][r + 1] = 1.0 / self.mp[k]
        return jnp.stack([jnp.stack(r) for r in rows])

    def dense(self):
        """The full (n, n) matrix (reference and tests)."""
        nb = self.m.shape[0]
        n = 3 * nb + 2 * self.mp.shape[0] + self.n_extra
        return self.apply(jnp.eye(n, dtype=self.m.dtype))


def mass_matrix(mech: Mechanism, params: Params, q) -> MassMatrix:
    nb = mech.n_bodies
    th = q[2: 3 * nb: 3]
    me = jnp.zeros((mech.n_extra,), q.dtype) if getattr(mech, "n_extra", 0) else None
    return MassMatrix(params.mass, params.inertia, rotate(th, params.cg), params.particle_mass, me)


def _scatter_frames(mech, Qe, frames, F):
    cols = mech.frame_cols()[np.asarray(frames, dtype=np.int32)]
    return Qe.at[cols].add(F)


def _force_blocks(mech, params, q, v, t):
    """(block, (Qi, Qj, V, P, info)) of every force block (springs, torsions and
    `mech.force_blocks`), each evaluated with one vectorised call of its family."""
    blocks = [b for b in (mech.springs, mech.torsions) + tuple(getattr(mech, "force_blocks", ()))
              if b.names]
    if not blocks:
        return []
    dtype = q.dtype
    cols = mech.frame_cols()
    qe, ve = _ext(q), _ext(v)
    z = jnp.zeros((1,), dtype)
    npart = mech.n_particles
    # inertial data per frame (ground, bodies, particles)
    fm = jnp.concatenate([z, params.mass, params.particle_mass])
    fJ = jnp.concatenate([z, params.inertia, jnp.zeros((npart,), dtype)])
    fcg = jnp.concatenate([jnp.zeros((1, 2), dtype), params.cg.reshape(-1, 2), jnp.zeros((npart, 2), dtype)])
    out = []
    for blk in blocks:
        fam = pf.FORCE_FAMILIES[blk.kind]
        fj = np.asarray(blk.frames_j, dtype=np.int32)
        args = pf.ForceArgs(_gather(qe, cols, blk.frames_i), _gather(qe, cols, blk.frames_j),
                            _gather(ve, cols, blk.frames_i), _gather(ve, cols, blk.frames_j),
                            t, fm[fj], fJ[fj], fcg[fj], blk.fns)
        out.append((blk, fam.evaluate(params.forces[blk.kind], args)))
    return out


def force_outputs(mech: Mechanism, params: Params, q, v, t=0.0) -> dict:
    """Per-force diagnostics at (q, v, t): {name: {quantity: scalar}}.

    Contacts report 'normal' (N, >= 0), 'friction' (N, signed along the contact tangent)
    and 'penetration' (m, > 0 in contact); a rotating frame reports 'omega' (rad/s).
    Works under jit/vmap (e.g. `jax.vmap(lambda q, v, t: force_outputs(mech, params, q, v, t))`).
    """
    q = jnp.asarray(q)
    v = jnp.asarray(v, q.dtype)
    out = {}
    for blk, (_, _, _, _, info) in _force_blocks(mech, params, q, v, jnp.asarray(t, q.dtype)):
        if not info:
            continue
        for k, name in enumerate(blk.names):
            if name not in out:
                out[name] = {key: val[k] for key, val in info.items()}
    return out


def generalized_forces(mech: Mechanism, params: Params, q, v, t, u=None):
    """Q (n,), potential energy V (J) and non-conservative power P (W) at (q, v, t, u).

    Q = gravity + quadratic-velocity (inertial) terms of offset CGs + springs, dampers,
    actuators, applied loads and user forces. u: (n_controls,) control inputs.
    """
    n, nb = mech.n_coords, mech.n_bodies
    dtype = q.dtype
    t = jnp.asarray(t, dtype)
    cols = mech.frame_cols()
    qe, ve = _ext(q), _ext(v)
    Qe = jnp.zeros((n + 1,), dtype)
    g = params.gravity
    # bodies: gravity at the CG, and m c theta_dot^2 (c = A s_G)
    c = rotate(q[2: 3 * nb: 3], params.cg)
    thd = v[2: 3 * nb: 3]
    fg = params.mass[:, None] * g
    Qb = jnp.concatenate([fg + params.mass[:, None] * c * thd[:, None] ** 2,
                          (c[:, 0] * fg[:, 1] - c[:, 1] * fg[:, 0])[:, None]], -1)
    Qp = params.particle_mass[:, None] * g
    Qe = Qe.at[: 3 * nb].add(Qb.reshape(-1)).at[3 * nb: 3 * nb + Qp.size].add(Qp.reshape(-1))
    rG = q[: 3 * nb].reshape(nb, 3)[:, :2] + c
    V = -jnp.sum(params.mass * (rG @ g)) - jnp.sum(params.particle_mass * (q[3 * nb: 3 * nb + Qp.size].reshape(-1, 2) @ g))
    P = jnp.zeros((), dtype)
    for blk, (Qi, Qj, pot, pow_, _) in _force_blocks(mech, params, q, v, t):
        Qe = _scatter_frames(mech, _scatter_frames(mech, Qe, blk.frames_i, Qi), blk.frames_j, Qj)
        V, P = V + jnp.sum(pot), P + jnp.sum(pow_)
    Qnc = jnp.zeros((n + 1,), dtype)
    if mech.loads.names:
        lb = mech.loads
        ctrl = np.asarray(lb.control)
        if np.any(ctrl >= 0):
            if u is None:
                raise ValueError("this mechanism has loads driven by control inputs; pass u "
                                 f"(shape ({mech.n_controls},))")
            uu = jnp.asarray(u, dtype)
            scale = jnp.where(ctrl >= 0, uu[np.maximum(ctrl, 0)], 1.0)
        else:
            scale = jnp.ones((len(lb.names),), dtype)
        p = params.forces["load"]
        X, Vv = _gather(qe, cols, lb.frames), _gather(ve, cols, lb.frames)
        Ql, _ = pf.applied_load(p, X, Vv, scale, np.asarray(lb.local, bool))
        for k, fn in lb.fns:
            ft = jnp.asarray(fn(t), dtype)
            Ql = Ql.at[k].add(pf.point_force(rotate(X[k:k + 1, 2], p["point"][k:k + 1]), ft[None, :2])[0]
                              .at[2].add(ft[2]))
        Qnc = _scatter_frames(mech, Qnc, lb.frames, Ql)
    Qnc = Qnc[:n]
    for uf in mech.user_forces:
        extra = (params.user[uf.name],) if uf.with_params else ()
        uu = None if u is None else jnp.asarray(u, dtype)
        Qnc = Qnc + jnp.asarray(uf.fn(q, v, t, uu, *extra), dtype).reshape(n)
    P = P + Qnc @ v
    return Qe[:n] + Qnc, V, P


def energy_terms(mech: Mechanism, params: Params, q, v, t=0.0):
    """Kinetic energy T = v^T M v / 2 and potential energy V (gravity and springs), J."""
    M = mass_matrix(mech, params, q)
    T = 0.5 * v @ M.apply(v)
    _, V, _ = generalized_forces(mech, params, q, v, t, jnp.zeros((mech.n_controls,), q.dtype))
    return T, V
