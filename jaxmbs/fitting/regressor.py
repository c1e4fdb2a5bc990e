"""Equation error: the equations of motion are linear in the inertial parameters of each
body (and in stiffness and damping coefficients); the regressor matrix comes from
jax.jacfwd of the engine's own equations of motion, and the parameters from linear least
squares."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ..core import families as _F
from ..core.equations import constraint_terms, generalized_forces, mass_matrix
from .identifiability import _named, _rank_analysis
from .problem import Trainable

# =====================================================================================
# Linear regressor (equation error)
# =====================================================================================

def _inertial_families(mech):
    out = []
    for bb in mech.bodies:
        bf = _F.body_family(bb.kind)
        if not hasattr(bf, "to_inertial"):
            raise ValueError(f"body family {bb.kind!r} has no linear inertial parametrisation; "
                             "use linear_regressor with named parameters instead")
        out.append((bb, bf, mech.nodes[bb.node].names))
    return out


def inertial_labels(mech) -> tuple:
    """Labels of the linear inertial parameters, body family by body family: per planar
    body 'b.m', 'b.mcx', 'b.mcy', 'b.Jref'; per particle 'p.m' (see each body family's
    `inertial_labels`)."""
    return tuple(f"{n}.{lab}" for _, bf, names in _inertial_families(mech)
                 for n in names for lab in bf.inertial_labels)


def inertial_parameters(mech, params):
    """Linear inertial parameter vector: per planar body (m, m c_x, m c_y,
    J_ref = J_G + m |c|^2) with c the CG in body coordinates and J_ref the inertia about the
    body's reference point; then the particle masses (the body families' `to_inertial`)."""
    parts = [bf.to_inertial(params.bodies[bb.kind]).reshape(-1)
             for bb, bf, _ in _inertial_families(mech)]
    return jnp.concatenate(parts)


def params_from_inertial(mech, params, phi):
    """Params with mass, cg and inertia (about the CG) from the linear inertial vector phi."""
    phi = jnp.asarray(phi)
    bodies = {k: dict(v) for k, v in params.bodies.items()}
    i = 0
    for bb, bf, names in _inertial_families(mech):
        L = len(bf.inertial_labels)
        bodies[bb.kind].update(bf.from_inertial(phi[i: i + L * len(names)].reshape(len(names), L)))
        i += L * len(names)
    return params.replace(bodies=bodies)


class Regressor(NamedTuple):
    """Linear equations Y x = b from measured motion (rows: samples x projected equations).

    Y (rows, p); b (rows,); labels (p,); nominal (p,) the parameter values used to build it
    (their null-space components are kept by `solve_linear`); rows_per_sample; to_params:
    function x -> Params.
    """

    Y: Any
    b: Any
    labels: tuple
    nominal: Any
    rows_per_sample: int
    to_params: Callable


def _rows_of(mech, names):
    if names == "all":
        return np.arange(mech.n_constraints)
    if isinstance(names, str):
        names = (names,)
    rows = []
    for nm in names:
        rows += list(mech.joint(nm).rows)
    return np.asarray(sorted(set(rows)), dtype=int)


def regressor(mech, to_params, p0, q, v, a, t, *, lam=None, known=(), u=None, labels=None,
              check_linear: bool = True) -> Regressor:
    """Regressor of parameters x that enter the equations of motion affinely.

    to_params: x (p,) -> Params (pure); p0 (p,): nominal x; q, v, a (s, n): measured
    coordinates, velocities, accelerations; t (s,). lam (s, m): multipliers of the rows
    whose forces are measured or known, and known: the joint/driver names of those rows
    ('all' for every row); for a driver, lam = -effort; for a revolute joint, the reaction
    force on body_j is -lam. u: control inputs (s, n_controls) or None.

    The equations M(x) a + Phi_q^T lam = Q(x) are projected onto the null space N of the
    rows with unknown multipliers (orthonormal, from an SVD at each sample, independent of
    x), N^T (M(x) a - Q(x) + Phi_K^T lam_K) = 0. The left side f(x) is affine in x, so
    Y = jacfwd(f) at p0 is exact and b = Y p0 - f(p0). check_linear verifies the affinity
    (a parameter that enters nonlinearly, e.g. a spring's free length, raises ValueError).
    """
    q, v, a = (jnp.asarray(x, float) for x in (q, v, a))
    t = jnp.asarray(t, float).reshape(-1)
    s, n = q.shape
    p0 = jnp.asarray(p0, float)
    params0 = to_params(p0)
    kr = _rows_of(mech, known) if known is not None and len(known) else np.zeros(0, int)
    ur = np.setdiff1d(np.arange(mech.n_constraints), kr)
    if kr.size and lam is None:
        raise ValueError("known rows given but no multipliers lam (s, m)")
    lamk = jnp.zeros((s, kr.size)) if not kr.size else jnp.asarray(lam, float)[:, kr]
    uu = jnp.zeros((s, mech.n_controls)) if u is None else jnp.broadcast_to(jnp.asarray(u, float), (s, mech.n_controls))
    # null-space bases of the unknown rows
    if ur.size:
        jac0 = np.asarray(constraint_terms(mech, params0, q[0], v[0], t[0]).jac)[ur]
        rank_u = int(np.linalg.matrix_rank(jac0))
        k = n - rank_u

        def basis(qq, tt):
            Ju = constraint_terms(mech, params0, qq, jnp.zeros_like(qq), tt).jac[ur]
            _, _, Vt = jnp.linalg.svd(Ju, full_matrices=True)
            return Vt[rank_u:].T

        Ns = jax.vmap(basis)(q, t)
    else:
        k = n
        Ns = jnp.broadcast_to(jnp.eye(n), (s, n, n))

    def f(x, qq, vv, aa, tt, lk, ui, N):
        P = to_params(x)
        Q, _, _ = generalized_forces(mech, P, qq, vv, tt, ui)
        M = mass_matrix(mech, P, qq)
        r = M.apply(aa) - Q
        if kr.size:
            jac = constraint_terms(mech, P, qq, vv, tt).jac
            r = r + jac[kr].T @ lk
        return N.T @ r

    labels = tuple(labels) if labels is not None else tuple(f"x[{i}]" for i in range(p0.size))
    args = (q, v, a, t, lamk, uu, Ns)
    Ys, fs, err, change, geo = _build_regressor(f, p0, args, mech, to_params, check_linear)
    if check_linear:
        geo, err, change = np.asarray(geo), np.asarray(err), np.asarray(change)
        bad = [labels[i] for i in range(p0.size) if geo[i] > 0]
        if bad:
            raise ValueError("these parameters change the constraint equations (joint geometry), "
                             "which the regressor method holds fixed; fit them with the gradient "
                             f"method instead: {', '.join(bad)}")
        floor = 1e-12 * (float(jnp.max(jnp.abs(fs))) + 1.0)
        bad = [labels[i] for i in range(p0.size) if err[i] > 1e-6 * change[i] + floor]
        if err[-1] > 1e-6 * change[-1] + floor and not bad:
            bad = ["(jointly: a product of the parameters)"] + list(labels)
        if bad:
            raise ValueError("these parameters do not enter the equations of motion linearly, so "
                             f"the regressor method cannot estimate them: {', '.join(bad)}")
    Y = Ys.reshape(s * k, -1)
    b = Y @ p0 - fs.reshape(-1)
    return Regressor(Y, b, labels, p0, k, to_params)


def _build_regressor(f, p0, args, mech, to_params, check):
    """Y per sample by jacfwd, f(p0), and the affinity checks (one jit)."""

    @jax.jit
    def build(p0, args):
        one = lambda *a: (jax.jacfwd(f)(p0, *a), f(p0, *a))
        Ys, fs = jax.vmap(one)(*args)
        if not check:
            return Ys, fs, None, None, None
        # each parameter perturbed by 30 % (0.3 if zero), then all at once, at a few samples
        s = args[0].shape[0]
        idx = np.unique(np.linspace(0, s - 1, min(5, s)).astype(int))
        sub = [x[idx] for x in args]
        step = jnp.where(jnp.abs(p0) > 0, 0.3 * jnp.abs(p0), 0.3)
        signs = jnp.where(jnp.arange(p0.size) % 2 == 0, 1.0, -0.7)
        D = jnp.concatenate([jnp.diag(step), (step * signs)[None]], 0)  # (p + 1, p)
        fp = jax.vmap(lambda d: jax.vmap(lambda *a: f(p0 + d, *a))(*sub))(D)
        f0 = fs[idx]
        pred = f0[None] + jnp.einsum("skj,dj->dsk", Ys[idx], D)
        err = jnp.max(jnp.abs(fp - pred), axis=(1, 2))
        change = jnp.max(jnp.abs(fp - f0[None]), axis=(1, 2))
        # parameters that move the constraint Jacobian
        q0, t0 = args[0][0], args[3][0]
        dJ = jax.jacfwd(lambda x: constraint_terms(mech, to_params(x), q0, jnp.zeros_like(q0), t0).jac)(p0)
        geo = jnp.max(jnp.abs(dJ), axis=(0, 1))
        return Ys, fs, err, change, geo

    return build(p0, args)


def inertial_regressor(mech, params, q, v, a, t, **kw) -> Regressor:
    """Regressor of the linear inertial parameters (see `inertial_labels`); params supplies
    everything else (geometry, springs, loads) and the nominal inertial values."""
    p0 = inertial_parameters(mech, params)
    return regressor(mech, lambda x: params_from_inertial(mech, params, x), p0, q, v, a, t,
                     labels=inertial_labels(mech), **kw)


def linear_regressor(mech, params, names, q, v, a, t, **kw) -> Regressor:
    """Regressor of named scalar parameters that enter the equations affinely, e.g. masses
    (with the CG and the inertia about the CG held at their values in params),
    'spring.k', 'spring.c', 'torsion.c', 'load.torque'. Parameters that enter nonlinearly
    or change the constraints raise ValueError."""
    tr = Trainable(mech, params, names, transforms={n: "identity" for n in names})
    p0 = tr._forward(tr.initial())
    return regressor(mech, tr.to_params, p0, q, v, a, t, labels=tr.labels, **kw)


class LinearFit(NamedTuple):
    """Least-squares solution of a Regressor: x (p,), values {label: x}, params, rank,
    singular_values (column-normalised regressor), null_directions (named, in units of the
    column scaling, i.e. per unit of each column's norm); residual_rms; std (p,) standard
    errors from the residual scatter (inf in null directions)."""

    x: np.ndarray
    values: dict
    params: Any
    rank: int
    singular_values: np.ndarray
    null_directions: list
    residual_rms: float
    std: np.ndarray


def solve_linear(reg: Regressor, weights=None, rcond: float = 1e-10) -> LinearFit:
    """Solve Y x = b by (weighted) linear least squares.

    Columns are normalised to unit norm; directions with singular value <= rcond * max are
    not identifiable from these data: their components keep the nominal values (the
    solution is nominal + the minimum-norm correction). weights: per-row 1/sigma^2.
    """
    Y, b = np.asarray(reg.Y, float), np.asarray(reg.b, float)
    if weights is not None:
        w = np.sqrt(np.asarray(weights, float))
        Y, b = Y * w[:, None], b * w
    x0 = np.asarray(reg.nominal, float)
    norms = np.linalg.norm(Y, axis=0)
    sc = np.where(norms > 1e-12 * norms.max(), 1.0 / np.where(norms > 0, norms, 1.0), 1.0)
    rank, s_full, U, s, Vt, null_rows = _rank_analysis(Y * sc, rcond)
    rhs = b - Y @ x0
    z = Vt[:rank].T @ ((U[:, :rank].T @ rhs) / s[:rank])
    x = x0 + sc * z
    res = b - Y @ x
    s2 = float(res @ res / max(Y.shape[0] - rank, 1))
    inv = np.zeros_like(s)
    inv[:rank] = 1.0 / s[:rank] ** 2
    cov = (Vt.T * inv) @ Vt * np.outer(sc, sc) * s2
    std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    nulls = [_named(v * sc, reg.labels) for v in null_rows]
    for d in nulls:
        for kk in d:
            std[reg.labels.index(kk)] = np.inf
    return LinearFit(x, {l: float(xi) for l, xi in zip(reg.labels, x)}, reg.to_params(jnp.asarray(x)),
                     rank, s_full, nulls, float(np.sqrt(np.mean(res**2))), std)


def trajectory_motion(mech, params, traj, u=None):
    """(t, q, v, a, lam) at a Trajectory's save points, a and lam from the equations of
    motion without stabilisation terms (the "measured" motion of a simulation, e.g. to test
    the regressor). u: None, an array (n_controls,) or (s, n_controls), or a function u(t)."""
    from ..core.dynamics import accelerations

    nu = mech.n_controls
    if u is None:
        us = jnp.zeros((traj.t.shape[0], nu))
    elif callable(u):
        us = jax.vmap(lambda t: jnp.asarray(u(t), float).reshape(nu))(traj.t)
    else:
        us = jnp.broadcast_to(jnp.asarray(u, float), (traj.t.shape[0], nu))

    def one(q, v, t, uu):
        acc = accelerations(mech, params, q, v, t, uu)
        return acc.qdd, acc.lam

    a, lam = jax.jit(jax.vmap(one))(traj.q, traj.v, traj.t, us)
    return traj.t, traj.q, traj.v, a, lam
