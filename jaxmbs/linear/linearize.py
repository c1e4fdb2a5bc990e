"""The linear state-space model of a constrained mechanism about an equilibrium or a steady
motion, in independent coordinates chosen by coordinate partitioning."""
from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from .. import status as st
from ..core.dynamics import accelerations
from ..core.equations import constraint_terms
from ..formulations.schur import SchurCholesky
from ..simulation import _is_tracer
from .chart import (
    _chart_rate,
    _chart_state,
    _check_shapes,
    _controls,
    _greedy_columns,
    _lstsq_tall,
    _rotation_entries,
    _to_global,
    chart_names,
)
from .results import LinearModel


# ------------------------------------------------------------------------ linearise
def linearize(mech, params, q, v, t=0.0, u=None, *, about="steady", coordinates=None,
              velocities=None, outputs=None, solver=SchurCholesky(), tol=1e-8) -> LinearModel:
    """The linear state-space model of the constrained mechanism about (q, v, t, u).

    Args:
      q (n_coords,), v (n_vel,): a consistent operating point (see `assemble`): an
        equilibrium, or a state on a steady motion (a vehicle rolling straight at speed).
      t: time (s); u: (n_controls,) control inputs (B is the response to their change).
      about: what the operating point is. "steady" (default): an equilibrium or a steady
        motion, so its accelerations vanish; "equilibrium": also at rest (v = 0); "any":
        any consistent state, accepted as it is (the linearisation at the instant t of
        the motion through it; `lin.acceleration` holds its accelerations). Checked for
        "steady" and "equilibrium": the residual acceleration a (n_vel,) must satisfy
        max|a| <= tol s, s = max|a_x| (1 + max|q|) + max|a_u| (1 + max|v|) with a_x, a_u
        the Jacobians of the accelerations with respect to the chart perturbations of the
        positions and the velocities (s: the acceleration that a perturbation of the
        state's size produces, in m/s^2 or rad/s^2), and for "equilibrium" also
        max|v| <= tol; with concrete inputs a violation raises ValueError naming the
        residual accelerations, traced it sets status UNSTEADY.
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
      tol: operating-point tolerance: of its consistency (max|Phi|, |Phi_q v + Phi_t|,
        relative to 1 + max|q| and 1 + max|v|; with concrete inputs a violation raises
        ValueError, traced it sets status DRIFT) and of its residual acceleration (about).
    Returns a `LinearModel` (module docstring: chart, reduced state, map back).
    """
    q = jnp.asarray(q)
    if not jnp.issubdtype(q.dtype, jnp.floating):
        q = q.astype(jnp.result_type(float))
    v = jnp.asarray(v, q.dtype)
    _check_shapes(mech, q, v)
    uu = _controls(mech, u, q.dtype)
    t = jnp.asarray(t, q.dtype)
    if about not in _ABOUT:
        raise ValueError(f"linearize: about must be one of {', '.join(map(repr, _ABOUT))} (what "
                         f"the operating point is), got {about!r}")
    if outputs is not None and not callable(outputs):
        raise ValueError("outputs must be a JAX function outputs(q, v, u) -> (p,) array")
    names = chart_names(mech)
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
    lin, scale = _linearize_jit(mech, params, q, v, t, uu, ix=tuple(ix), iu=tuple(iu),
                                outputs=outputs, solver=solver, tol=float(tol), about=about)
    state_names = tuple(names[i] for i in ix) + tuple(names[i] + "_dot" for i in iu)
    lin = lin.replace(names=state_names, n_position=len(ix))
    if not traced and int(lin.status) & st.UNSTEADY:
        _refuse_unsteady(lin, names, about, float(tol), float(scale))
    return lin


_ABOUT = ("steady", "equilibrium", "any")


def _steady_scale(Jf, nv, q, v):
    """The acceleration (m/s^2, rad/s^2) that a perturbation of the state's size produces:
    max|a_x| (1 + max|q|) + max|a_u| (1 + max|v|), with a_x = Jf[nv:2nv, :nv] and
    a_u = Jf[nv:2nv, nv:2nv] the Jacobians of the accelerations with respect to the chart
    perturbations (dx, du) (Jf: the full linearisation, rows (xdot, acceleration))."""
    ax, au = Jf[nv:2 * nv, :nv], Jf[nv:2 * nv, nv:2 * nv]
    return (jnp.max(jnp.abs(ax)) * (1.0 + jnp.max(jnp.abs(q)))
            + jnp.max(jnp.abs(au)) * (1.0 + jnp.max(jnp.abs(v))))


def _refuse_unsteady(lin, names, about, tol, scale):
    """ValueError naming the residual accelerations (or velocities) of an operating point
    that is not what `about` says."""
    a, v = np.asarray(lin.acceleration), np.asarray(lin.v)
    if about == "equilibrium" and np.max(np.abs(v), initial=0.0) > tol:
        worst = ", ".join(f"{names[i]}_dot = {v[i]:.3g}" for i in np.argsort(-np.abs(v))[:3] if v[i])
        raise ValueError(
            f"linearize: about='equilibrium' but the mechanism is not at rest ({worst} m/s or "
            "rad/s); for a steady motion pass about='steady', to linearise about this state "
            "as it is about='any'")
    worst = ", ".join(f"{names[i]} = {a[i]:.3g}" for i in np.argsort(-np.abs(a))[:3] if a[i])
    what = "an equilibrium" if about == "equilibrium" else "an equilibrium or a steady motion"
    raise ValueError(
        f"linearize: the operating point is not {what}: its residual accelerations are "
        f"{worst} (m/s^2 or rad/s^2; max {np.max(np.abs(a)):.3g} > tol {tol:g} x {scale:.3g}, "
        "the acceleration a perturbation of the state's size produces). Find the "
        "equilibrium with jaxmbs.equilibrium(mech, params, q) and linearise about its q, or "
        "pass about='any' to linearise about this state as it is (the linearisation at "
        "this instant of the motion through it)")


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


@partial(jax.jit, static_argnames=("ix", "iu", "outputs", "solver", "tol", "about"))
def _linearize_jit(mech, params, q, v, t, u, *, ix, iu, outputs, solver, tol, about="steady"):
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
    scale = _steady_scale(Jf, nv, q, v)
    unsteady = jnp.zeros((), bool)
    if about != "any":
        unsteady = jnp.max(jnp.abs(f0[nv:])) > tol * scale
        if about == "equilibrium":
            unsteady = unsteady | (jnp.max(jnp.abs(v)) > tol)
    status = (status | jnp.where(bad, st.SINGULAR, 0) | jnp.where(drift, st.DRIFT, 0)
              | jnp.where(unsteady, st.UNSTEADY, 0)
              | jnp.where(jnp.all(jnp.isfinite(A)), 0, st.NONFINITE)).astype(jnp.int32)
    return (LinearModel(A, B, C, D, Tq, Tv, N, q, v, t, u, f0[nv:], jnp.maximum(res, vres), status),
            scale)
