"""Charts of the redundant coordinates for linearisation: coordinate names, global and
body-frame velocities, and the choice of independent position and velocity entries."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax.scipy.linalg import solve_triangular

from ..core import families as F


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
