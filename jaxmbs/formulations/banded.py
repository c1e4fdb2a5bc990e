"""Sparse constraint Jacobian and a banded Schur-complement solve (O(m w^2) per solve).

A joint row touches at most two frames, so Phi_q has at most 2 wv nonzeros per row (wv
the frame kind's velocity width: 3 planar, 6 spatial). `SparseJacobian` keeps exactly
those: `vals` (m, 2 wv) and the static column indices of a
`SparsePlan` built once per mechanism (NumPy, at trace time). The banded path never forms
the dense m x n Jacobian: `SchurCholesky` (banded=True, or automatically for long
chains) assembles the Schur complement A = Phi_q M^-1 Phi_q^T directly in
band storage from the per-row blocks (two rows are coupled only if they share a body),
with the rows renumbered by reverse Cuthill-McKee so that the band is narrow (bandwidth
w = 3 for a pendulum chain, whatever its length), and factorises it with a banded
Cholesky in a `lax.scan` over the rows. Work and memory are linear in the number of
bodies for chains and trees of bounded branching, against cubic for the dense Schur path.

Everything indexed here is static (NumPy tables from the topology), so gathers replace
scatters and the compiled program does not grow with the number of bodies.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from .. import status as st

__all__ = ["SparseJacobian", "SparsePlan", "sparse_plan", "banded_schur", "banded_projector",
           "wants_sparse", "band_factor", "band_solve", "band_matvec"]


class SparsePlan:
    """Static sparsity data of one mechanism's constraint rows (see `sparse_plan`).

    Attributes (NumPy): m, n (= n_vel); wv; frames (m, 2) frame index of each row's two
    blocks; cols (m, 2 wv) columns of v (extended by one zero at index n) of each row's
    entries;
    src (m,) position of natural row r in the family-concatenated row order; perm (m,)
    natural row of band row i (reverse Cuthill-McKee), w the bandwidth; band_idx
    (m * (w + 1), c) indices into the list of Schur contributions (pad = K) and
    pair_a / pair_b (K,) the (row, slot) pairs of each contribution; colT (n, c2) indices
    into the flattened (m * 2 wv) entries of each coordinate's column (pad = 2 wv m).

    Compared by identity: `sparse_plan` caches one plan per (equal) mechanism.
    """

    def __init__(self, mech):
        n, m = mech.n_vel, mech.n_constraints
        self.kind = mech.frame_kind()
        fc = mech.frame_vcols(self.kind)
        self.wv = wv = fc.shape[1]
        frames, order = [], []
        for fam in mech.families:
            r = fam.rows_per
            order.append(fam.row0 + np.arange(fam.size * r))
            frames.append(np.stack([np.repeat(np.asarray(fam.frames_i, np.int64), r),
                                    np.repeat(np.asarray(fam.frames_j, np.int64), r)], 1))
        order = np.concatenate(order) if order else np.zeros((0,), np.int64)
        frames = np.concatenate(frames) if frames else np.zeros((0, 2), np.int64)
        self.m, self.n = m, n
        self.src = np.argsort(order)
        self.identity_order = bool(np.array_equal(self.src, np.arange(m)))
        self.frames = frames[self.src]
        self.cols = fc[self.frames].reshape(m, 2 * wv)
        # rows coupled through a shared body (the ground carries no mass: no coupling)
        touching = {}
        for r in range(m):
            for s in range(2):
                f = int(self.frames[r, s])
                if f != 0:
                    touching.setdefault(f, []).append((r, s))
        adj = [set() for _ in range(m)]
        for ent in touching.values():
            for a, _ in ent:
                for b, _ in ent:
                    if a != b:
                        adj[a].add(b)
        self.perm = _reverse_cuthill_mckee(adj)
        pos = np.empty(m, np.int64)
        pos[self.perm] = np.arange(m)
        self.pos = pos
        w = max((abs(pos[a] - pos[b]) for a in range(m) for b in adj[a]), default=0)
        self.w = w = max(int(w), 1)
        # Schur contributions c_k = J[a_k] . (M^-1 J^T)[b_k] summed into band entries
        pair_a, pair_b, target = [], [], []
        for ent in touching.values():
            for ra, sa in ent:
                for rb, sb in ent:
                    i, j = pos[ra], pos[rb]
                    if i >= j:
                        pair_a.append(2 * ra + sa)
                        pair_b.append(2 * rb + sb)
                        target.append(i * (w + 1) + (i - j))
        self.pair_a = np.asarray(pair_a, np.int64)
        self.pair_b = np.asarray(pair_b, np.int64)
        self.band_idx = _gather_table(np.asarray(target, np.int64), m * (w + 1))
        # transposed product: entries of each coordinate column (the padding column n drops)
        flat = self.cols.reshape(-1)
        keep = flat < n
        self.colT = _gather_table(np.nonzero(keep)[0], n, keys=flat[keep], pad=2 * wv * m)


def _gather_table(values, n_keys, keys=None, pad=None):
    """(n_keys, c) table listing, for every key, the positions k with keys[k] == key
    (keys defaults to `values` themselves being the keys of positions 0..K-1), padded
    with `pad` (default K). Turns a scatter-add into a gather and a sum."""
    if keys is None:
        keys, values = values, np.arange(len(values))
    pad = len(values) if pad is None else pad
    buckets = [[] for _ in range(n_keys)]
    for k, v in zip(keys, values):
        buckets[int(k)].append(int(v))
    c = max((len(b) for b in buckets), default=0)
    c = max(c, 1)
    out = np.full((n_keys, c), pad, np.int64)
    for i, b in enumerate(buckets):
        out[i, :len(b)] = b
    return out


def _reverse_cuthill_mckee(adj):
    """Reverse Cuthill-McKee ordering of a graph given as adjacency sets (a narrow band)."""
    m = len(adj)
    deg = np.array([len(a) for a in adj])
    seen = np.zeros(m, bool)
    order = []
    for start in np.argsort(deg, kind="stable"):
        if seen[start]:
            continue
        seen[start] = True
        queue = [int(start)]
        head = 0
        while head < len(queue):
            node = queue[head]
            head += 1
            for nb in sorted(adj[node], key=lambda x: (deg[x], x)):
                if not seen[nb]:
                    seen[nb] = True
                    queue.append(nb)
        order.extend(queue)
    return np.asarray(order[::-1], np.int64)


@functools.lru_cache(maxsize=64)
def sparse_plan(mech):
    """The `SparsePlan` of a mechanism, or None when it has rows the sparse path does not
    cover (user constraints, velocity constraints, nonholonomic rows, cam extra
    coordinates, body families whose mass couples nodes, e.g. beam elements): those go
    through the dense `constraint_terms`."""
    from ..core import families as F

    if (mech.user_constraints or mech.velocity_constraints or mech.nonholonomic_rows
            or mech.n_extra or len({k for k in mech.frame_kinds() if k}) != 1
            or any(F.body_family(b.kind).coupled for b in mech.bodies)):
        return None
    return SparsePlan(mech)


@jax.tree_util.register_pytree_node_class
class SparseJacobian:
    """Phi_q (m, n) stored as its per-row nonzero blocks.

    vals (m, 2 wv): for row r, the entries at columns plan.cols[r] (the velocity columns
    of the row's two frames; entries pointing at the padding column n are ignored).
    Supports `J @ v` for v (n,), `J.rmatvec(lam)` = J^T lam, `J.dense()`, `J.shape`.
    """

    def __init__(self, vals, plan: SparsePlan):
        self.vals = vals
        self.plan = plan

    def tree_flatten(self):
        return (self.vals,), self.plan

    @classmethod
    def tree_unflatten(cls, plan, leaves):
        return cls(leaves[0], plan)

    @property
    def shape(self):
        return (self.plan.m, self.plan.n)

    @property
    def dtype(self):
        return self.vals.dtype

    def __matmul__(self, v):
        ve = jnp.concatenate([v, jnp.zeros((1,), v.dtype)])
        return jnp.sum(self.vals * ve[self.plan.cols], -1)

    def rmatvec(self, lam):
        """J^T lam (n,)."""
        e = jnp.concatenate([(self.vals * lam[:, None]).reshape(-1), jnp.zeros((1,), lam.dtype)])
        return jnp.sum(e[self.plan.colT], -1)

    def dense(self):
        """The dense (m, n) Jacobian (reference and tests)."""
        m, n = self.shape
        R = np.broadcast_to(np.arange(m)[:, None], (m, 2 * self.plan.wv))
        return jnp.zeros((m, n + 1), self.vals.dtype).at[R, self.plan.cols].add(self.vals)[:, :n]


def schur_band(M, jac: SparseJacobian):
    """A = Phi_q M^-1 Phi_q^T in band storage B (m, w + 1), B[i, d] = A[p_i, p_(i-d)] with
    p = plan.perm (rows renumbered for a narrow band)."""
    plan = jac.plan
    m, wv = plan.m, plan.wv
    J2 = jac.vals.reshape(m * 2, wv)
    Y2 = M.frame_inverse(plan.frames.reshape(-1), J2)
    # gather per component from 1-D arrays: XLA:CPU gathers scalars ~10x faster than
    # length-3 rows out of a batch-major (batch, 2m, 3) array
    c = sum(J2[:, k][plan.pair_a] * Y2[:, k][plan.pair_b] for k in range(wv))
    c = jnp.concatenate([c, jnp.zeros((1,), c.dtype)])
    return jnp.sum(c[plan.band_idx], -1).reshape(m, plan.w + 1)


def band_matvec(B, y):
    """A y for the symmetric band matrix stored as B[i, d] = A[i, i - d] (d = 0..w)."""
    m, w1 = B.shape
    out = B[:, 0] * y
    for d in range(1, min(w1, m)):
        lo = B[d:, d]  # A[i, i - d] for i >= d
        # shifted adds by padding: `.at[d:].add` lowers to a scatter, which XLA:CPU runs
        # as a loop over the batch (1.8e3 of the 3.9e3 flops of a chain16 solve's cost)
        out = out + jnp.pad(lo * y[:-d], (d, 0)) + jnp.pad(lo * y[d:], (0, d))
    return out


def band_factor(B, tol, rhs=None):
    """Banded Cholesky A = L L^T of B (m, w + 1) in a `lax.scan` over the rows.

    Row i of L is found from the trailing w x w block T of L (rows i-w..i-1): its
    off-diagonal part x solves T x = A[i, i-w:i], and L_ii = sqrt(A_ii - x.x).
    Returns R (m, w + 1) = [x, L_ii] per row, and dropped (m,) bool: rows whose pivot fell
    below tol * A_ii depend on the rows before them and are dropped (L_ii = +inf, so that
    `band_solve` gives them 0 and they do not enter the other rows; as
    `jaxmbs.formulations.schur.CholeskyFactor`).

    rhs (m,), optional: the forward substitution L y = rhs runs in the same scan (row i of
    y needs row i of L and the w values of y before it); returns (R, dropped, y, s) with y
    and the numerators s of `_band_forward`. One scan over the rows instead of two: on the
    batch-minor array form every scan step is a few small kernels that slice and stack.

    The carried window is one array (not a tuple of scalars): XLA copies every carried
    buffer that the loop body permutes, and a shifted tuple costs one copy kernel per
    entry and row.
    """
    m, w1 = B.shape
    w = w1 - 1
    dtype = B.dtype
    zero = jnp.zeros((), dtype)
    tri = [(a, b) for a in range(w) for b in range(a + 1)]  # packed lower triangle of T
    T0 = jnp.asarray([1.0 if a == b else 0.0 for a, b in tri], dtype)

    def factor_row(Tv, Bi):
        T = {ab: Tv[k] for k, ab in enumerate(tri)}
        x = []
        for k in range(w):  # T x = A[i, i - w + k] = Bi[w - k]
            s = Bi[w - k] - sum((T[k, j] * x[j] for j in range(k)), zero)
            x.append(s / T[k, k])
        d = Bi[0] - sum((xk * xk for xk in x), zero)
        small = d <= tol * jnp.abs(Bi[0])
        lii = jnp.sqrt(jnp.where(small, jnp.inf, d))
        full = {**T, **{(w, b): x[b] for b in range(w)}, (w, w): lii}
        Tn = jnp.stack([full[a + 1, b + 1] for a, b in tri])
        return Tn, x, lii, small

    if rhs is None:
        def row(Tv, Bi):
            Tn, x, lii, small = factor_row(Tv, Bi)
            return Tn, (jnp.stack(x + [lii]), small)

        _, (R, dropped) = jax.lax.scan(row, T0, B)
        return R, dropped

    def row_fwd(carry, xs):
        Tv, prev = carry
        Bi, bi = xs
        Tn, x, lii, small = factor_row(Tv, Bi)
        nxt, y, s = _forward_row(x, lii, bi, prev)
        return (Tn, nxt), (jnp.stack(x + [lii]), small, y, s)

    _, (R, dropped, y, s) = jax.lax.scan(row_fwd, (T0, jnp.zeros((w,), dtype)), (B, rhs))
    return R, dropped, y, s


def _forward_row(x, lii, bi, prev):
    """One row of the forward substitution L y = b: row i of L as its off-diagonal part x
    (w entries, against the w values of y before it, `prev`) and diagonal lii. Returns the
    shifted window, y_i and the numerator s_i = b_i - x . prev."""
    w = len(x)
    s = bi - sum((x[k] * prev[k] for k in range(w)), jnp.zeros((), bi.dtype))
    y = s / lii
    return jnp.stack([prev[k] for k in range(1, w)] + [y]), y, s


def _band_forward(R, b):
    """Forward substitution L y = b with the factor R of `band_factor`: returns y and the
    numerators s_i = b_i - sum_k L_ik y_k (y_i = s_i / L_ii). A dropped row has L_ii = inf
    and y_i = 0, and its s_i is minus its residual in A z = b (the row is the combination
    of the rows before it that its row of L is: see `banded_schur`)."""
    m, w1 = R.shape
    w = w1 - 1

    def fwd(prev, xs):
        Ri, bi = xs
        nxt, y, s = _forward_row([Ri[k] for k in range(w)], Ri[w], bi, prev)
        return nxt, (y, s)

    _, (y, s) = jax.lax.scan(fwd, jnp.zeros((w,), R.dtype), (R, b))
    return y, s


def _band_backward(R, y):
    """Back substitution L^T z = y with the factor R of `band_factor`."""
    m, w1 = R.shape
    w = w1 - 1
    zero = jnp.zeros((), R.dtype)
    # column i of L below the diagonal: L[i + d, i] = R[i + d, w - d], d = 1..w
    C = jnp.stack([jnp.pad(R[d:, w - d], (0, d)) for d in range(1, w + 1)], 1)

    def bwd(nxt, xs):
        Ci, Ri, yi = xs
        z = (yi - sum((Ci[d] * nxt[d] for d in range(w)), zero)) / Ri[w]
        return jnp.stack([z] + [nxt[k] for k in range(w - 1)]), z

    _, z = jax.lax.scan(bwd, jnp.zeros((w,), R.dtype), (C, R, y), reverse=True)
    return z


def band_solve(R, b):
    """Solve L L^T z = b with the banded factor R of `band_factor` (two scans)."""
    return _band_backward(R, _band_forward(R, b)[0])


@jax.custom_jvp
def _band_lam(B, R, rhs):
    """(z, s): z solves A z = rhs (A in band storage B, factor R = band_factor(B), dropped
    rows 0) and s the forward numerators of `_band_forward` (the dropped rows' residuals,
    read off the solve at no extra cost; no derivative). Differentiated implicitly, as
    `lax.custom_linear_solve` would: dz = A^-1 (drhs - dA z), the factor never is."""
    y, s = _band_forward(R, rhs)
    return _band_backward(R, y), s


@_band_lam.defjvp
def _band_lam_jvp(primals, tangents):
    B, R, rhs = primals
    dB, _, drhs = tangents
    z, s = _band_lam(B, R, rhs)
    return (z, s), (band_solve(R, drhs - band_matvec(dB, z)), jnp.zeros_like(s))


@functools.partial(jax.custom_jvp, nondiff_argnums=(2,))
def _band_factor_lam(B, rhs, tol):
    """(z, s, R): the factor R of `band_factor` at stop_gradient(B) (dropped rows: R[:, -1]
    = inf), z solving A z = rhs (dropped rows 0) and the forward numerators s of
    `_band_forward`, the factorisation and the forward substitution in one scan (`band_factor`
    with rhs), then the back substitution. Differentiated implicitly as `_band_lam`:
    dz = A^-1 (drhs - dA z)."""
    R, _, y, s = band_factor(jax.lax.stop_gradient(B), tol, rhs)
    return _band_backward(R, y), s, R


@_band_factor_lam.defjvp
def _band_factor_lam_jvp(tol, primals, tangents):
    B, rhs = primals
    dB, drhs = tangents
    z, s, R = _band_factor_lam(B, rhs, tol)
    dz = band_solve(R, drhs - band_matvec(dB, z))
    return (z, s, R), (dz, jnp.zeros_like(s), jnp.zeros_like(R))


BANDED_MIN_ROWS = 16  # auto mode: below this the unrolled / LAPACK dense path is faster


def wants_sparse(solver, mech) -> bool:
    """Whether `solver` solves `mech` on the banded path (so `constraint_terms` should
    return a SparseJacobian): solver.banded True always (where the plan exists), None
    (auto) for at least BANDED_MIN_ROWS rows with a band narrower than a quarter of them."""
    mode = getattr(solver, "banded", False)
    m = mech.n_constraints
    if mode is False or m == 0:
        return False
    plan = sparse_plan(mech)
    if plan is None:
        return False
    return bool(mode) or (m >= BANDED_MIN_ROWS and 4 * plan.w <= m)


def _regularized_schur_band(M, jac: SparseJacobian, regularization):
    """The Schur complement in band storage (`schur_band`), its diagonal raised by
    regularization x its mean."""
    B = schur_band(M, jac)
    if regularization:
        B = B.at[:, 0].add(regularization * jnp.mean(B[:, 0]))
    return B


def _schur_band_factor(M, jac: SparseJacobian, regularization, tol):
    """(B, stop_gradient(B), R, dropped): the Schur complement in band storage
    (`_regularized_schur_band`) and its `band_factor` at the pivot tolerance `schur_tol`."""
    from .schur import schur_tol

    B = _regularized_schur_band(M, jac, regularization)
    Bs = jax.lax.stop_gradient(B)
    R, dropped = band_factor(Bs, schur_tol(B.dtype, tol))
    return B, Bs, R, dropped


def banded_projector(M, jac: SparseJacobian, regularization=0.0, tol=None):
    """correction(r) = -M^-1 Phi_q^T A^-1 r (n,) for r (m,), from one banded factor of
    A = Phi_q M^-1 Phi_q^T (see `jaxmbs.formulations.schur.SchurCholesky.projector`)."""
    plan = jac.plan
    B, _, R, _ = _schur_band_factor(M, jac, regularization, tol)

    def correction(r):
        lam_p, _ = _band_lam(B, R, r[plan.perm])
        return -M.solve(jac.rmatvec(lam_p[plan.pos]))
    return correction


def banded_schur(M, jac: SparseJacobian, Q, gamma, regularization=0.0, tol=None, check=True):
    """(qdd, lam, status) of the saddle system by the banded Schur complement.

    A = Phi_q M^-1 Phi_q^T is assembled in band storage from the per-row Jacobian blocks
    and factorised by `band_factor`; derivatives flow implicitly through
    `lax.custom_linear_solve` (the factorisation is never differentiated)."""
    from .schur import checked_rows, inconsistent, row_scale, schur_tol
    MinvQ = M.solve(Q)
    plan = jac.plan
    B = _regularized_schur_band(M, jac, regularization)
    Bs = jax.lax.stop_gradient(B)
    # J M^-1 Q and, for the check below, the magnitude of its terms sum_k |J_ik (M^-1 Q)_k|
    # (same gathers); both permuted into band order by one gather
    ve = jnp.concatenate([MinvQ, jnp.zeros((1,), MinvQ.dtype)])
    prods = jac.vals * ve[plan.cols]
    JMQ = jnp.sum(prods, -1)
    mag = jax.lax.stop_gradient(jnp.sum(jnp.abs(prods), -1) + jnp.abs(gamma))
    rhs, mag = jnp.stack([JMQ - gamma, mag])[:, plan.perm]
    # (the factorisation and the forward substitution in one scan over the rows)
    lam_p, num, R = _band_factor_lam(B, rhs, schur_tol(B.dtype, tol))
    dropped = jnp.isinf(R[:, -1])
    lam = lam_p[plan.pos]
    qdd = MinvQ - M.solve(jac.rmatvec(lam))
    # Dropped (dependent) rows must hold: else a singular configuration (SINGULAR). Their
    # residuals are -num (the forward substitution's numerators). Scale (`row_scale` with
    # cheaper terms): the magnitudes of the terms of J M^-1 Q and gamma, and
    # sqrt(A_jj) |M^-1 J^T lam|_M with |M^-1 J^T lam|_M^2 = lam.A lam = lam.rhs (A lam =
    # rhs on the kept rows, lam = 0 on the dropped ones). No product with A and no
    # reduction over the coordinates: on chain16 (batch 2048, XLA:CPU) those made the
    # check cost 18 % of an RK4 + projection step, this form costs none measurable.
    sg = jax.lax.stop_gradient
    lp, rp, num = sg(lam_p), sg(rhs), sg(num)
    scale = row_scale(Bs[:, 0], 0.0, lp, rp, mag, 0.0)
    judged = checked_rows(dropped, check)  # (not at a step's later stages: check=False)
    bad = jnp.zeros((), bool) if judged is None else inconsistent(num, scale, judged, B.dtype, tol)
    return qdd, lam, jnp.where(bad, st.SINGULAR, st.OK).astype(jnp.int32)
