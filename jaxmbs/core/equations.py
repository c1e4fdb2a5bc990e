"""The equations of motion of a whole mechanism: M, Q, Phi, Phi_q, Phi_t, gamma.

This is the one place where node, body, constraint and force families meet, and it knows
none of them: every family is looked up in the registry (`jaxmbs.core.families`),
evaluated with one vectorised expression over its instances and scattered into place;
Python loops here run over *families* (a handful), never over instances.

Velocity space: the Jacobian is taken with respect to the velocity coordinates v
(n_vel,), so `jac` = Phi_q T(q) (m, n_vel) with qdot = T(q) v, M is (n_vel, n_vel) and Q
(n_vel,); for planar mechanisms v = qdot and these are the usual Phi_q, M and Q.
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import profiles
from ..formulations.banded import SparseJacobian, sparse_plan
from . import families as F
from ._small import MINV_MAX, matmul
from .mechanism import Mechanism, Params
from .shared import family_params

__all__ = ["ConstraintTerms", "BlockMass", "constraint_terms", "constraint_rows", "mass_matrix",
           "prepare_params", "generalized_forces", "energy_terms", "force_outputs", "frame_states"]


class ConstraintTerms(NamedTuple):
    """phi (m,), jac = Phi_q T (m, n_vel), phit = Phi_t (m,), gamma (m,) with
    jac vdot = gamma the acceleration-level constraint (no stabilisation)."""

    phi: jax.Array
    jac: jax.Array
    phit: jax.Array
    gamma: jax.Array


def ext_q(q):
    """q extended by the padding entries (0, 1) that ground frames and missing frame
    entries point at (see Mechanism.frame_qcols)."""
    return jnp.concatenate([q, jnp.asarray([0.0, 1.0], q.dtype)])


def ext_v(v):
    return jnp.concatenate([v, jnp.zeros((1,), v.dtype)])


def frame_states(mech, kind, q, v, frames):
    """(X (k, wq), V (k, wv)) of frames (static indices) of frame kind `kind`."""
    idx = np.asarray(frames, dtype=np.int32)
    X = ext_q(q)[mech.frame_qcols(kind)[idx]]
    V = None if v is None else ext_v(v)[mech.frame_vcols(kind)[idx]]
    return X, V


def _extra_vcols(mech, qcols):
    """Indices in v of scalar (extra) coordinates given by their indices in q."""
    out = np.empty(np.shape(qcols), np.int32)
    flat = np.asarray(qcols, np.int64).reshape(-1)
    res = []
    for qi in flat:
        for b in mech.nodes:
            nf = F.node_family(b.kind)
            if b.q0 <= qi < b.q0 + b.size * nf.nq:
                res.append(b.v0 + (qi - b.q0))
                break
        else:
            raise ValueError(f"coordinate {qi} is in no node block")
    out.reshape(-1)[:] = res
    return out


def constraint_rows(mech: Mechanism, params: Params, q, v, t):
    """Per-family row blocks: list of (block, phi, Gi, Gj, phit, gamma).

    Shapes per family: phi/phit/gamma (k, r), Gi/Gj (k, r, wv) (the frame kind's velocity
    width). A family with extra coordinates (`fam.extra_cols`, the cam) returns Gi
    (k, r, wv + e): its trailing e columns are the Jacobian block of the instance's extra
    coordinates fam.extra_cols[k].
    """
    qe, ve = ext_q(q), ext_v(v)
    out = []
    for blk in mech.families:
        fam = F.constraint_family(blk.kind)
        p = family_params(params, "joints", blk)
        qc, vc = mech.frame_qcols(fam.frame), mech.frame_vcols(fam.frame)
        fi, fj = np.asarray(blk.frames_i, np.int32), np.asarray(blk.frames_j, np.int32)
        Xi, Xj, Vi, Vj = qe[qc[fi]], qe[qc[fj]], ve[vc[fi]], ve[vc[fj]]
        if fam.driven:
            f, fd, fdd = profiles.evaluate(p, t)
            for k, fn in blk.user_profiles:
                uf, ufd, ufdd = profiles.evaluate_user(fn, t)
                f, fd, fdd = f.at[k].add(uf), fd.at[k].add(ufd), fdd.at[k].add(ufdd)
            if getattr(fam, "custom_time", False):  # rows nonlinear in f(t)
                phi, Gi, Gj, phit, gamma = fam.evaluate_driven(p, Xi, Xj, Vi, Vj, f, fd, fdd)
                out.append((blk, phi, Gi, Gj, phit, gamma))
                continue
        if blk.extra_cols:  # extra (massless) coordinates: cam curve parameters
            ec = np.asarray(blk.extra_cols, dtype=np.int32)
            g, Gi, Gj, quad, Gs = fam.evaluate(p, Xi, Xj, Vi, Vj, qe[ec], ve[_extra_vcols(mech, ec)],
                                               blk.static)
            Gi = jnp.concatenate([Gi, Gs], -1)
        else:
            g, Gi, Gj, quad = fam.evaluate(p, Xi, Xj, Vi, Vj)
        if fam.driven:
            phi, phit, gamma = g - f[:, None], -fd[:, None], -quad + fdd[:, None]
        else:
            phi, phit, gamma = g, jnp.zeros_like(g), -quad
        out.append((blk, phi, Gi, Gj, phit, gamma))
    return out


def _user_terms(mech, params, q, v, t):
    """User constraints Phi(q, t): Jacobian by autodiff mapped to velocity space
    (Phi_q dq/dv), gamma = -(d/dt)^2 Phi at zero acceleration."""
    phis, jacs, phits, gammas = [], [], [], []
    qd = mech.qdot(q, v)
    one = jnp.ones_like(t)
    for uc in mech.user_constraints:
        extra = (params.user[uc.name],) if uc.with_params else ()
        fn = lambda qq, tt, _f=uc.fn, _e=extra: jnp.atleast_1d(_f(qq, tt, *_e))
        phi = fn(q, t)
        jac = jax.jacfwd(fn, 0)(q, t)
        if not mech.identity_kinematics:
            jac = jac @ mech.dq_dv(q)
        phit = jax.jacfwd(fn, 1)(q, t)
        if mech.identity_kinematics:
            phidot = lambda qq, tt: jax.jacfwd(fn, 0)(qq, tt) @ v + jax.jacfwd(fn, 1)(qq, tt)
        else:
            phidot = lambda qq, tt: jax.jvp(fn, (qq, tt), (mech.qdot(qq, v), one))[1]
        _, gdot = jax.jvp(phidot, (q, t), (qd, one))
        phis.append(phi), jacs.append(jac), phits.append(phit), gammas.append(-gdot)
    return phis, jacs, phits, gammas


def _velocity_terms(mech, params, q, v, t):
    """User velocity constraints fn(q, v, t[, params]) = A(q, t) v - b(q, t) (affine in v):
    A = d fn / d v, phit = fn(q, 0, t) = -b, gamma = -(fn_q qdot + fn_t) at fixed v."""
    jacs, phits, gammas = [], [], []
    zero = jnp.zeros_like(v)
    qd = mech.qdot(q, v)
    for vc in mech.velocity_constraints:
        extra = (params.user[vc.name],) if vc.with_params else ()
        fn = lambda qq, vv, tt, _f=vc.fn, _e=extra: jnp.atleast_1d(_f(qq, vv, tt, *_e)).astype(q.dtype)
        jacs.append(jax.jacfwd(fn, 1)(q, zero, t))
        phits.append(fn(q, zero, t))
        _, hdot = jax.jvp(lambda qq, tt: fn(qq, v, tt), (q, t), (qd, jnp.ones_like(t)))
        gammas.append(-hdot)
    return jacs, phits, gammas


def constraint_terms(mech: Mechanism, params: Params, q, v, t, sparse: bool = False) -> ConstraintTerms:
    """Phi, Phi_q T (dense, m x n_vel), Phi_t and gamma of all constraint rows at (q, v, t).

    sparse=True returns the Jacobian as a `jaxmbs.formulations.banded.SparseJacobian` (per-row nonzero
    blocks, no dense m x n array) for the mechanisms the sparse path covers (no user,
    velocity or cam rows), and the dense array otherwise. Solvers that use it say so
    (`solver.sparse`).

    Nonholonomic rows (`mech.nonholonomic_rows`: knife edges, user velocity constraints
    A(q, t) v = b(q, t)) have phi = 0, jac = A, phit = -b and gamma = -(A_q qdot) v + b_dot,
    so that jac @ v + phit is their residual and jac @ vdot = gamma their acceleration form."""
    nv, m = mech.n_vel, mech.n_constraints
    dtype = q.dtype
    t = jnp.asarray(t, dtype)
    if sparse and m and sparse_plan(mech) is not None:
        return _sparse_terms(mech, params, q, v, t, sparse_plan(mech))
    phi = jnp.zeros((m,), dtype)
    phit = jnp.zeros((m,), dtype)
    gamma = jnp.zeros((m,), dtype)
    jac = jnp.zeros((m, nv + 1), dtype)
    for blk, ph, Gi, Gj, pt, ga in constraint_rows(mech, params, q, v, t):
        k, r = ph.shape
        fam = F.constraint_family(blk.kind)
        vcols = mech.frame_vcols(fam.frame)
        rows = blk.row0 + np.arange(k * r).reshape(k, r)
        phi = phi.at[rows].set(ph)
        phit = phit.at[rows].set(pt)
        gamma = gamma.at[rows].set(ga)
        for frames, G in ((blk.frames_i, Gi), (blk.frames_j, Gj)):
            fc = vcols[np.asarray(frames)]
            if G.shape[-1] > fc.shape[1]:  # trailing extra-coordinate columns (cam)
                ec = _extra_vcols(mech, np.asarray(blk.extra_cols))
                fc = np.concatenate([fc, ec.astype(fc.dtype)], 1)
            c = fc.shape[1]
            R = np.broadcast_to(rows[:, :, None], (k, r, c))
            C = np.broadcast_to(fc[:, None, :], (k, r, c))
            jac = jac.at[R, C].add(G)
    jac = jac[:, :nv]
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
    w = 2 * plan.wv
    vals = jnp.concatenate([jnp.concatenate([Gi, Gj], -1).reshape(-1, w)
                            for _, _, Gi, Gj, _, _ in parts])
    if not plan.identity_order:
        phi, phit, gamma, vals = phi[plan.src], phit[plan.src], gamma[plan.src], vals[plan.src]
    return ConstraintTerms(phi, SparseJacobian(vals, plan), phit, gamma)


# ------------------------------------------------------------------------ mass
class BlockMass:
    """The block-diagonal mass operator of a mechanism in velocity space (n_vel, n_vel).

    parts: ((v0, size, part, frame0, k), ...), one per body block in v order: `part` is
    the body family's mass part for its k instances (apply / solve / dense /
    inverse_dense / frame_inverse on its own size = k * nv entries), frame0 the frame
    index of its first instance. Velocity coordinates after the last part are massless
    (cam curve parameters): then M is singular, `solve` is not available and the saddle
    solvers use an augmented M (`jaxmbs.formulations.schur`).
    """

    def __init__(self, parts, n, n_extra=0, dtype=None):
        self.parts = tuple(parts)
        self.n = n
        self._n_extra = n_extra
        self.dtype = dtype

    @property
    def n_extra(self) -> int:
        return self._n_extra

    @property
    def me(self):
        """(n_extra,) zeros (the massless coordinates), or None when there are none."""
        return jnp.zeros((self._n_extra,), self.dtype) if self._n_extra else None

    def _map(self, X, method):
        outs = []
        for v0, size, part, _, _ in self.parts:
            outs.append(getattr(part, method)(X[v0: v0 + size]))
        if self._n_extra and method == "apply":
            outs.append(jnp.zeros((self._n_extra,) + X.shape[1:], X.dtype))
        if len(outs) == 1:
            return outs[0]
        return jnp.concatenate(outs) if outs else X[:0]

    def apply(self, X):
        """M @ X for X (n,) or (n, k)."""
        return self._map(X, "apply")

    def solve(self, X):
        """M^-1 @ X for X (n,) or (n, k), in closed form per block (ValueError with
        massless extra coordinates)."""
        if self._n_extra:
            raise ValueError("mass matrix solve: this mechanism has massless extra coordinates "
                             "(cam curve parameters), so M is singular; solve the saddle system "
                             "with SchurCholesky or DenseLU, which handle them")
        if X.shape[0] <= MINV_MAX and len(self.parts) > 1:
            return matmul(self.inverse_dense(), X)
        return self._map(X, "solve")

    def inverse_dense(self):
        """M^-1 as an (n, n) array assembled from the parts' closed-form block inverses."""
        if self._n_extra:
            raise ValueError("mass matrix inverse_dense: M is singular (massless extra coordinates)")
        return self._assemble("inverse_dense")

    def dense(self):
        """The full (n, n) matrix (reference and tests)."""
        return self._assemble("dense")

    def _assemble(self, method):
        if len(self.parts) == 1 and not self._n_extra:
            return getattr(self.parts[0][2], method)()
        out = jnp.zeros((self.n, self.n), self.dtype)
        for v0, size, part, _, _ in self.parts:
            out = out.at[v0: v0 + size, v0: v0 + size].set(getattr(part, method)())
        return out

    def frame_inverse(self, frames, X):
        """Per-frame M^-1 x for rows X (N, wv), row i on frame frames[i] (static; the
        ground and frames without mass give 0)."""
        frames = np.asarray(frames)
        out = None
        for _, _, part, f0, k in self.parts:
            if f0 < 0:
                continue
            idx = frames - f0
            idx = np.where((idx >= 0) & (idx < k), idx, -1)
            if not np.any(idx >= 0):
                continue
            y = part.frame_inverse(idx, X)
            out = y if out is None else out + y
        return jnp.zeros_like(X) if out is None else out


def prepare_params(mech: Mechanism, params: Params) -> Params:
    """params with each body family's once-per-run data added (`BodyFamily.prepare`: the
    factored constant mass of beams), for a simulation loop to use at every step."""
    bodies = dict(params.bodies)
    for bb in mech.bodies:
        bodies[bb.kind] = F.body_family(bb.kind).prepare(bodies[bb.kind])
    return params.replace(bodies=bodies)


def mass_matrix(mech: Mechanism, params: Params, q) -> BlockMass:
    """The mass operator M(q) (n_vel x n_vel, block-diagonal over bodies)."""
    parts = []
    n_mass = 0
    for bb in mech.bodies:
        nb = mech.nodes[bb.node]
        nf = F.node_family(nb.kind)
        X = q[nb.q0: nb.q0 + nb.size * nf.nq].reshape(nb.size, nf.nq)
        part = F.body_family(bb.kind).mass_part(params.bodies[bb.kind], X)
        parts.append((nb.v0, nb.size * nf.nv, part, nb.frame0, nb.size))
        n_mass += nb.size * nf.nv
    return BlockMass(parts, mech.n_vel, mech.n_vel - n_mass, q.dtype)


# ---------------------------------------------------------------------- forces
def _frame_inertia(mech, params, kind, frames, dtype):
    """(m, J, cg) of frames (static indices) of frame kind `kind`: the body data of the
    frames' body families, zeros for the ground and frames without a body."""
    frames = np.asarray(frames)
    m = J = cg = None
    for bb in mech.bodies:
        nb = mech.nodes[bb.node]
        if nb.frame0 < 0 or F.node_family(nb.kind).frame != kind:
            continue
        mm, JJ, cc = F.body_family(bb.kind).inertia_data(params.bodies[bb.kind])
        idx = frames - nb.frame0
        ok = (idx >= 0) & (idx < nb.size)
        if not np.any(ok):
            continue
        sel = np.where(ok, idx, 0)
        okj = jnp.asarray(ok)
        pick = lambda a: jnp.where(okj.reshape((-1,) + (1,) * (a.ndim - 1)), a[sel], 0.0)
        m, J, cg = ((pick(mm), pick(JJ), pick(cc)) if m is None else
                    (m + pick(mm), J + pick(JJ), cg + pick(cc)))
    return m, J, cg


def _force_blocks(mech, params, q, v, t, u=None):
    """(block, (Qi, Qj, V, P, info)) of every force block, each evaluated with one
    vectorised call of its family."""
    out = []
    for blk in mech.force_blocks:
        if not blk.names:
            continue
        fam = F.force_family(blk.kind)
        Xi, Vi = frame_states(mech, fam.frame, q, v, blk.frames_i)
        Xj, Vj = frame_states(mech, fam.frame, q, v, blk.frames_j)
        mj = Jj = cgj = None
        if fam.needs_inertia:
            mj, Jj, cgj = _frame_inertia(mech, params, fam.frame, blk.frames_j, q.dtype)
        args = F.ForceArgs(Xi, Xj, Vi, Vj, t, mj, Jj, cgj, blk.fns, u, blk.static)
        out.append((blk, fam.evaluate(family_params(params, "forces", blk), args)))
    return out


def _scatter_frames(mech, kind, Qe, frames, F_):
    cols = mech.frame_vcols(kind)[np.asarray(frames, dtype=np.int32)]
    return Qe.at[cols].add(F_)


def force_outputs(mech: Mechanism, params: Params, q, v, t=0.0) -> dict:
    """Per-force diagnostics at (q, v, t): {name: {quantity: scalar}}.

    Contacts report 'normal' (N, >= 0), 'friction' (N, signed along the contact tangent)
    and 'penetration' (m, > 0 in contact); a rotating frame reports 'omega' (rad/s).
    Works under jit/vmap (e.g. `jax.vmap(lambda q, v, t: force_outputs(mech, params, q, v, t))`).
    """
    q = jnp.asarray(q)
    v = jnp.asarray(v, q.dtype)
    u = jnp.zeros((mech.n_controls,), q.dtype)
    out = {}
    for blk, (_, _, _, _, info) in _force_blocks(mech, params, q, v, jnp.asarray(t, q.dtype), u):
        if not info:
            continue
        for k, name in enumerate(blk.names):
            if name not in out:
                out[name] = {key: val[k] for key, val in info.items()}
    return out


def generalized_forces(mech: Mechanism, params: Params, q, v, t, u=None):
    """Q (n_vel,), potential energy V (J) and non-conservative power P (W) at (q, v, t, u).

    Q = gravity + quadratic-velocity (inertial) terms of the bodies + springs, dampers,
    actuators, contacts, applied loads and user forces. u: (n_controls,) control inputs.
    """
    nv = mech.n_vel
    dtype = q.dtype
    t = jnp.asarray(t, dtype)
    Qe = jnp.zeros((nv + 1,), dtype)
    g = params.gravity
    V = jnp.zeros((), dtype)
    for bb in mech.bodies:
        nb = mech.nodes[bb.node]
        nf = F.node_family(nb.kind)
        X = q[nb.q0: nb.q0 + nb.size * nf.nq].reshape(nb.size, nf.nq)
        Vb = v[nb.v0: nb.v0 + nb.size * nf.nv].reshape(nb.size, nf.nv)
        Qb, pot = F.body_family(bb.kind).loads(params.bodies[bb.kind], X, Vb, g)
        Qe = Qe.at[nb.v0: nb.v0 + nb.size * nf.nv].add(Qb.reshape(-1))
        V = V + jnp.sum(pot)
    P = jnp.zeros((), dtype)
    uu = None if u is None else jnp.asarray(u, dtype)
    for blk, (Qi, Qj, pot, pow_, _) in _force_blocks(mech, params, q, v, t, uu):
        kind = F.force_family(blk.kind).frame
        Qe = _scatter_frames(mech, kind, _scatter_frames(mech, kind, Qe, blk.frames_i, Qi),
                             blk.frames_j, Qj)
        V, P = V + jnp.sum(pot), P + jnp.sum(pow_)
    Q = Qe[:nv]
    if mech.user_forces:
        Qnc = jnp.zeros((nv,), dtype)
        for uf in mech.user_forces:
            extra = (params.user[uf.name],) if uf.with_params else ()
            Qnc = Qnc + jnp.asarray(uf.fn(q, v, t, uu, *extra), dtype).reshape(nv)
        P = P + Qnc @ v
        Q = Q + Qnc
    return Q, V, P


def energy_terms(mech: Mechanism, params: Params, q, v, t=0.0):
    """Kinetic energy T = v^T M v / 2 and potential energy V (gravity and springs), J."""
    M = mass_matrix(mech, params, q)
    T = 0.5 * v @ M.apply(v)
    _, V, _ = generalized_forces(mech, params, q, v, t, jnp.zeros((mech.n_controls,), q.dtype))
    return T, V
