"""Gauss-Newton covariance and identifiability at the optimum: the rank of the Fisher
information, and which parameter combinations cannot be separated."""
from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .problem import Problem

# =====================================================================================
# Gauss-Newton covariance and identifiability
# =====================================================================================

class Analysis(NamedTuple):
    """Gauss-Newton analysis at theta (physical units unless noted).

    labels; values (p,); jacobian (N, p) d residual / d theta; fisher (p, p) J^T J in
    theta; cov (p, p) covariance of the physical parameters (Gauss-Newton, (J^T W J)^-1
    mapped through the re-parametrisation; pseudo-inverse when rank-deficient); std (p,)
    (inf for parameters in a non-identifiable direction); rel_std (p,) std / |value|;
    correlation (p, p); rank: numerical rank of the Fisher information; singular_values
    (p,) of the relatively scaled Jacobian (d residual / d ln p: dimensionless, largest
    first; 1 / s_k is the standard deviation of the relative parameter combination k);
    null_directions: list of {label: coefficient} (unit vectors in relative parameter
    changes d p / p) that leave the residuals unchanged: those parameters cannot be
    separated; weak_directions: identifiable but with relative std > weak; chi2_dof:
    sum r^2 / (N - p) (about 1 when sigma matches the noise); scaled: whether cov was
    multiplied by chi2_dof.
    """

    labels: tuple
    values: np.ndarray
    jacobian: np.ndarray
    fisher: np.ndarray
    cov: np.ndarray
    std: np.ndarray
    rel_std: np.ndarray
    correlation: np.ndarray
    rank: int
    singular_values: np.ndarray
    null_directions: list
    weak_directions: list
    chi2_dof: float
    scaled: bool

    @property
    def identifiable(self) -> bool:
        return self.rank == len(self.labels)

    @property
    def non_identifiable(self) -> tuple:
        """Labels of parameters involved in a null direction (not separable)."""
        out = []
        for d in self.null_directions:
            out += [k for k in d if k not in out]
        return tuple(out)

    def summary(self) -> str:
        lines = [f"Fisher information: rank {self.rank} of {len(self.labels)}; singular values of "
                 f"the relative sensitivity matrix: " + ", ".join(f"{s:.3g}" for s in self.singular_values)]
        w = max(len(l) for l in self.labels)
        for i, l in enumerate(self.labels):
            rs = self.rel_std[i]
            lines.append(f"  {l:<{w}} = {self.values[i]:.6g} +- {self.std[i]:.3g}"
                         f" ({'inf' if not np.isfinite(rs) else f'{100 * rs:.3g} %'})")
        for d in self.null_directions:
            lines.append("  not separable (null direction in relative changes): "
                         + " ".join(f"{c:+.3f}*d{k}/{k}" for k, c in d.items()))
        for d, s in self.weak_directions:
            lines.append(f"  weakly identifiable (relative std {s:.3g}): "
                         + " ".join(f"{c:+.3f}*d{k}/{k}" for k, c in d.items()))
        return "\n".join(lines)


def _named(vec, labels, drop=0.05):
    vec = np.asarray(vec, float)
    vec = vec / np.linalg.norm(vec)
    i = int(np.argmax(np.abs(vec)))
    if vec[i] < 0:
        vec = -vec
    order = np.argsort(-np.abs(vec))
    return {labels[j]: float(vec[j]) for j in order if abs(vec[j]) >= drop * abs(vec[i])}


def _sparse_basis(V):
    """Rows spanning the same space as the orthonormal rows V (k, p), made sparse by
    Gauss-Jordan elimination with full pivoting (each row has a pivot parameter that the
    others do not contain), then normalised: null directions read like 'this parameter
    trades against those'."""
    A = np.array(V, float)
    k = A.shape[0]
    for r in range(k):
        sub = np.abs(A[r:])
        i, j = np.unravel_index(np.argmax(sub), sub.shape)
        A[[r, r + i]] = A[[r + i, r]]
        A[r] /= A[r, j]
        for o in range(k):
            if o != r:
                A[o] -= A[o, j] * A[r]
        A[np.abs(A) < 1e-12] = 0.0
    return A


def _rank_analysis(Js, rtol, zero_tol=1e-12):
    """SVD-based rank analysis of a column-scaled sensitivity matrix Js (N, p).

    Columns whose norm is <= zero_tol * the largest (parameters with no effect at all)
    are single null directions; the rest are analysed by SVD (singular values <= rtol *
    max count as zero). Returns (rank, s (p,), U, s_thin, Vt (of Js with the zero columns
    zeroed), null basis rows (k, p), sparse).
    """
    N, p = Js.shape
    norms = np.linalg.norm(Js, axis=0)
    nmax = norms.max() if p else 0.0
    zero = norms <= zero_tol * nmax if nmax > 0 else np.ones(p, bool)
    Jz = np.where(zero[None, :], 0.0, Js)
    U, s, Vt = np.linalg.svd(Jz, full_matrices=False)
    s_full = np.zeros(p)
    s_full[: s.size] = s
    rank = int(np.sum(s_full > rtol * s_full[0])) if s_full.size and s_full[0] > 0 else 0
    nulls = [np.eye(p)[j] for j in np.nonzero(zero)[0]]
    live = np.nonzero(~zero)[0]
    if live.size:
        _, s2, Vt2 = np.linalg.svd(Js[:, live], full_matrices=True)
        s2f = np.zeros(live.size)
        s2f[: s2.size] = s2
        r2 = int(np.sum(s2f > rtol * s2f[0])) if s2f[0] > 0 else 0
        if r2 < live.size:
            for v in _sparse_basis(Vt2[r2:]):
                e = np.zeros(p)
                e[live] = v
                nulls.append(e)
    return rank, s_full, U, s, Vt, nulls


def jacobian_report(J, labels, scale=None, rtol=1e-7, weak=None):
    """Rank, singular values and named null directions of a sensitivity matrix J (N, p).

    scale (p,): column scaling (e.g. |p| so that the columns are sensitivities to relative
    changes); rtol: singular values <= rtol * max are treated as zero (a column with no
    effect at all is its own null direction); weak: optional threshold on 1 / s_k to list
    weakly identifiable directions. Returns (rank, singular values, null directions, weak
    directions [(dir, 1/s)]), the directions as {label: coefficient} unit vectors in the
    scaled coordinates.
    """
    J = np.asarray(J, float)
    p = J.shape[1]
    sc = np.ones(p) if scale is None else np.asarray(scale, float)
    Js = J * sc
    if not np.all(np.isfinite(Js)):
        raise ValueError("sensitivity matrix has non-finite entries (simulation failed at theta?)")
    rank, s_full, _, _, Vt, null_rows = _rank_analysis(Js, rtol)
    nulls = [_named(v, labels) for v in null_rows]
    weaks = []
    if weak is not None:
        for k in range(rank):
            if 1.0 / s_full[k] > weak:
                weaks.append((_named(Vt[k], labels), float(1.0 / s_full[k])))
    return rank, s_full, nulls, weaks


@functools.partial(jax.jit)
def _jac(problem, theta):
    return jax.jacfwd(problem.residuals)(theta), problem.residuals(theta)


def analyze(problem: Problem, theta, *, rtol: float = 1e-7, weak: float = 1.0,
            scale_by_residual: bool = False) -> Analysis:
    """Gauss-Newton covariance and identifiability at theta (e.g. `fit(...).theta`).

    The residual Jacobian J = d r / d theta comes from `jax.jacfwd` (one forward-mode pass
    per parameter). Fisher information F = J^T J = J_u^T W J_u; covariance F^-1 in theta,
    mapped to physical parameters by the re-parametrisation's derivative. Identifiability
    uses the Jacobian w.r.t. relative parameter changes (d r / d ln p; columns of
    parameters whose value is 0 are taken per unit change): its numerical rank (singular
    values <= rtol * max count as zero), and the null directions, named by parameter.
    weak: report identifiable directions whose relative standard deviation exceeds it.
    scale_by_residual: multiply the covariance by chi2 / dof (use when sigma is unknown).
    """
    tr = problem.trainable
    theta = jnp.asarray(theta, float)
    J, r = _jac(problem, theta)
    J, r = np.asarray(J), np.asarray(r)
    vals = np.asarray(tr.physical(theta))
    dp = np.asarray(tr.dphysical(theta))
    Jp = J / dp  # d r / d p
    scale = np.where(np.abs(vals) > 0, np.abs(vals), 1.0)
    rank, s, nulls, weaks = jacobian_report(Jp, tr.labels, scale, rtol, weak)
    N, p = J.shape
    chi2 = float(np.sum(r**2) / max(N - p, 1))
    F = J.T @ J
    # covariance of the relative changes, then physical
    Js = Jp * scale
    U, sv, Vt = np.linalg.svd(Js, full_matrices=False)
    inv = np.where(sv > rtol * sv[0], 1.0 / np.where(sv > 0, sv, 1.0) ** 2, 0.0)
    C_rel = (Vt.T * inv) @ Vt
    cov = C_rel * np.outer(scale, scale)
    if scale_by_residual:
        cov = cov * chi2
    std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    for d in nulls:
        for k in d:
            std[tr.labels.index(k)] = np.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = std / np.abs(vals)
        dd = np.sqrt(np.diag(cov))
        corr = cov / np.outer(dd, dd)
    return Analysis(tr.labels, vals, J, F, cov, std, rel, corr, rank, s, nulls, weaks, chi2,
                    bool(scale_by_residual))


def covariance(problem: Problem, theta, **kw) -> np.ndarray:
    """Gauss-Newton covariance (p, p) of the physical parameters at theta (see `analyze`)."""
    return analyze(problem, theta, **kw).cov


def identifiability(problem: Problem, theta, **kw) -> Analysis:
    """Identifiability report at theta: same as `analyze` (rank, singular values,
    null_directions, summary())."""
    return analyze(problem, theta, **kw)
