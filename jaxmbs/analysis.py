"""Assembly, kinematic analysis, inverse dynamics, reactions, energy and DOF."""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import status as st
from .core import families as F
from .core.dynamics import _accelerations as accelerations  # (inside jitted analyses)
from .core.equations import constraint_rows, constraint_terms, energy_terms, frame_states
from .core.newton import newton_positions, position_rows
from .core.shared import family_params
from .formulations.schur import CholeskyFactor, SchurCholesky, cholesky_solve
from .simulation import _is_tracer

__all__ = ["AssemblyResult", "assemble", "constraint_report", "dof", "kinematics", "Kinematics",
           "inverse_dynamics", "InverseDynamics", "reactions", "energy"]


class AssemblyResult(NamedTuple):
    """q (n_coords,), v (n_vel,) consistent state; residual = max|Phi|; velocity_residual =
    max|Phi_q v + Phi_t|; rank of Phi_q; status (0 or NEWTON_FAILED)."""

    q: jax.Array
    v: jax.Array
    residual: jax.Array
    velocity_residual: jax.Array
    rank: jax.Array
    status: jax.Array


def _free_mask(mech, fixed):
    """(n_vel,) mask: 0 for the velocity coordinates held fixed (by velocity name, or a
    coordinate name that has its own velocity coordinate, e.g. 'crank.theta'; or index
    into v)."""
    mask = np.ones(mech.n_vel)
    vnames = mech.velocity_names()
    for f in fixed:
        if isinstance(f, str):
            if f not in vnames:
                raise ValueError(f"fixed: {f!r} is not a velocity coordinate of this mechanism; "
                                 f"known: {', '.join(vnames)}")
            idx = vnames.index(f)
        else:
            if isinstance(f, (bool, np.bool_)) or not isinstance(f, (int, np.integer)):
                raise ValueError(f"fixed: {f!r} must be a coordinate name or an integer index "
                                 f"into v; known names: {', '.join(vnames)}")
            idx = int(f)
            if not 0 <= idx < mech.n_vel:
                raise ValueError(f"fixed: index {idx} out of range 0..{mech.n_vel - 1}")
        mask[idx] = 0.0
    return mask


def _min_norm_step(J, r, mask, reg=1e-12):
    """dx minimising |dx| subject to J dx = -r on the free (mask=1) coordinates; damped so
    that redundant (rank-deficient) constraint sets still give a step."""
    Jf = J * mask
    A = Jf @ Jf.T
    mu = reg * (jnp.trace(A) / max(A.shape[0], 1) + 1e-30)
    y, _ = cholesky_solve(A + mu * jnp.eye(A.shape[0], dtype=A.dtype), r)
    return -(Jf.T @ y)


def _square_solve(J, b):
    """Solve the square system J x = b through the normal equations J J^T y = b, x = J^T y
    (Cholesky, unrolled element-wise for small systems) with one step of iterative
    refinement to recover the accuracy the squared condition number costs.

    Used instead of jnp.linalg.solve: under vmap the element-wise Cholesky of small systems
    runs faster on the CPU than a batched LU call.
    """
    f = CholeskyFactor(J @ J.T)
    x = J.T @ f.solve(b)
    return x + J.T @ f.solve(b - J @ x)


def assemble(mech, params, q, v=None, t=0.0, *, fixed=(), iterations=30, tol=1e-10,
             check=True) -> AssemblyResult:
    """Newton's method on Phi(q, t) = 0 from the guess q, then consistent velocities.

    Each Newton step is the least-norm correction of the free coordinates (damped, so
    redundant constraints are tolerated). Velocities: the least-norm change of v (default 0)
    that satisfies Phi_q v = -Phi_t. Nonholonomic rows (knife edges, velocity constraints)
    take part in the velocity step only; the Newton steps use `mech.holonomic_rows`.
    fixed: coordinates kept at their guess values, by name ('crank.theta') or index, both
        in q and in v (e.g. the input angle and speed of a mechanism).
    tol: convergence tolerance on max|Phi| (m or rad), relative to 1 + max|q|.
    check: when called with concrete values, raise ValueError naming the joints whose
        constraints cannot be satisfied near the guess. Traced calls report via status.
    """
    from .core.validate import admissible_coordinates, check_call

    check_call(mech, params, "assemble", q=q, v=v, t=t)
    q = admissible_coordinates(mech, q, name="q", where="assemble")
    if isinstance(fixed, str):
        fixed = (fixed,)
    iterations = _count(iterations, "assemble: iterations")
    tol = _tolerance(tol, "assemble: tol")
    nv = mech.n_vel
    q = jnp.asarray(q)
    v = jnp.zeros((nv,), q.dtype) if v is None else jnp.asarray(v, q.dtype)
    mask = tuple(float(x) for x in _free_mask(mech, fixed))
    t = jnp.asarray(t, q.dtype)
    res = _assemble_jit(mech, params, q, v, t, mask=mask, iterations=iterations, tol=tol)
    if check and not _is_tracer(params, q, v, t) and int(res.status) != 0:
        raise ValueError(_assembly_failure(mech, params, res, t, iterations, mask))
    return res


def _count(x, what):
    """A positive whole number (not bool), or ValueError naming `what`."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) or x < 1:
        raise ValueError(f"{what} must be a positive whole number, got {x!r}")
    return int(x)


def _tolerance(x, what):
    """A positive finite number, or ValueError naming `what`."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, float, np.integer, np.floating)) \
            or not np.isfinite(x) or x <= 0:
        raise ValueError(f"{what} must be a positive finite number, got {x!r}")
    return float(x)


def _assembly_failure(mech, params, res, t, iterations, mask) -> str:
    """The message of a failed assembly (concrete inputs): where Newton stopped, and why.

    Least-norm Newton spreads the residual over every joint it can move and, when the
    constraints cannot all hold, wanders; the largest residuals alone do not say which
    joints cannot be closed. So the failure is diagnosed here (eagerly, only on failure)
    by a Levenberg-Marquardt least-squares descent from where Newton stopped: if it
    reaches a point where the residual is stationary but not zero, the Jacobian is singular
    there (e.g. a loop stretched straight because its links are too short to reach) and
    the rows carrying the residual that no coordinate change can reduce name the joints
    that cannot be closed; this is reported as such, never as "redundant rows". If it
    reaches Phi = 0, a solution exists and Newton only needed a better guess."""
    names = mech.constraint_names()
    head = "assembly failed: the constraints have no solution near the guess"
    if not (np.all(np.isfinite(np.asarray(res.q))) and np.all(np.isfinite(np.asarray(res.v)))):
        return (f"{head} (the Newton iteration diverged to non-finite coordinates). Check the "
                "joint geometry (link lengths must close the loop) or give a better guess.")
    rows = mech.holonomic_rows if mech.nonholonomic_rows else np.arange(mech.n_constraints)
    zero = jnp.zeros((mech.n_vel,), res.q.dtype)
    maskv = np.asarray(mask, float)

    def at(q):
        terms = position_rows(mech, constraint_terms(mech, params, q, zero, t))
        return np.asarray(terms.phi, float), np.asarray(terms.jac, float) * maskv

    q = res.q
    phi, J = at(q)
    worst = np.argsort(-np.abs(phi))[:4]
    largest = ", ".join(f"{names[rows[i]]} = {phi[i]:.3g}" for i in worst)
    msg = (f"{head} (max|Phi| = {np.max(np.abs(phi)):.3g} after {iterations} Newton "
           f"iterations; largest residuals: {largest})")
    # least squares from where Newton stopped (Levenberg-Marquardt)
    mu = 1e-3 * max(float(np.max(np.abs(J))) ** 2, 1e-30)
    cost = float(phi @ phi)
    for _ in range(200):
        g = J.T @ phi
        step = -np.linalg.solve(J.T @ J + mu * np.eye(J.shape[1]), g)
        q_new = mech.normalize(mech.retract(q, jnp.asarray(step, res.q.dtype)))
        phi_new, J_new = at(q_new)
        c_new = float(phi_new @ phi_new)
        if np.isfinite(c_new) and c_new < cost:
            q, phi, J, cost, mu = q_new, phi_new, J_new, c_new, mu / 3
        else:
            mu *= 4
        if np.linalg.norm(J.T @ phi) <= 1e-12 * max(np.linalg.norm(J) * np.linalg.norm(phi), 1e-300) \
                or mu > 1e20 * max(float(np.max(np.abs(J))) ** 2, 1e-30):
            break
    scale = 1.0 + float(np.max(np.abs(np.asarray(q))))
    if np.sqrt(cost) <= 1e-8 * scale:
        return (msg + ". A configuration satisfying the constraints exists nearby (a "
                "least-squares descent from there reached it): Newton did not converge from "
                "this guess; give a better guess or more iterations.")
    U, S, _ = np.linalg.svd(J, full_matrices=True)
    tol = max(J.shape) * np.finfo(float).eps * 1e3 * (S[0] if S.size else 1.0)
    rank = int(np.sum(S > tol))
    stuck = phi - U[:, :rank] @ (U[:, :rank].T @ phi)  # the residual no coordinate change reduces
    big = np.max(np.abs(stuck))
    bad = np.nonzero(np.abs(stuck) > 0.1 * big)[0] if big > 0 else worst
    joints = sorted({names[rows[i]].split("[")[0] for i in bad})
    where = ("the least-squares closest configuration" + (
        f" is singular (Jacobian rank {rank} of {J.shape[0]} rows) and" if rank < min(J.shape) else ""))
    return (msg + f". The constraints cannot all hold: {where} leaves max|Phi| = "
            f"{np.max(np.abs(phi)):.3g} in the joints {', '.join(joints)}, which no coordinate "
            "change reduces: they cannot be closed as they are (e.g. a loop stretched straight "
            "because its links are too short to reach). Check those joints' "
            "geometry (link lengths must close the loop), or the coordinates held fixed.")


@partial(jax.custom_jvp, nondiff_argnums=(0, 1, 2))
def _newton(mech, mask, iterations, params, q, t):
    """Newton's method on Phi(q, t) = 0 over the free coordinates (mask = 1).

    Differentiated implicitly (custom JVP, transposed automatically for reverse mode):
    at the solution, Phi_q dq = -(dPhi/dparams dparams + dPhi/dt dt), with the fixed
    coordinates' tangents taken from the guess and the free ones of least norm, the same
    choice the Newton steps make. No iteration is differentiated or stored.
    """
    maskv = jnp.asarray(mask, q.dtype)
    step = lambda terms, _q, _last: _min_norm_step(terms.jac, terms.phi, maskv)
    return newton_positions(mech, params, q, t, step, iterations)


@_newton.defjvp
def _newton_jvp(mech, mask, iterations, primals, tangents):
    params, q, t = primals
    dparams, dq, dt = tangents
    qs = _newton(mech, mask, iterations, params, q, t)
    maskv = jnp.asarray(mask, q.dtype)
    zero = jnp.zeros((mech.n_vel,), q.dtype)
    phi = lambda p, tt: position_rows(mech, constraint_terms(mech, p, qs, zero, tt)).phi
    _, dphi = jax.jvp(phi, (params, t), (dparams, dt))
    jac = position_rows(mech, constraint_terms(mech, params, qs, zero, t)).jac
    if mech.identity_kinematics:
        dq_fixed = (1.0 - maskv) * dq
        dq_free = _min_norm_step(jac, dphi + jac @ dq_fixed, maskv)
        return qs, dq_fixed + dq_free
    # velocity-space tangents: the guess's tangent mapped by the pseudo-inverse of
    # dq/dv, the solution's tangent mapped back by dq/dv at the solution
    G0, G = mech.dq_dv(q), mech.dq_dv(qs)
    dv_fixed = (1.0 - maskv) * (jnp.linalg.pinv(G0) @ dq)
    dv_free = _min_norm_step(jac, dphi + jac @ dv_fixed, maskv)
    return qs, G @ (dv_fixed + dv_free)


@partial(jax.jit, static_argnames=("mask", "iterations", "tol"))
def _assemble_jit(mech, params, q, v, t, *, mask, iterations, tol):
    m = mech.n_constraints
    if m == 0:
        z = jnp.zeros((), q.dtype)
        return AssemblyResult(q, v, z, z, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32))
    q = _newton(mech, mask, iterations, params, q, t)
    mask = jnp.asarray(mask, q.dtype)
    terms = constraint_terms(mech, params, q, v, t)
    v = v + _min_norm_step(terms.jac, terms.jac @ v + terms.phit, mask)
    terms = constraint_terms(mech, params, q, v, t)
    res = jnp.max(jnp.abs(terms.phi))
    vres = jnp.max(jnp.abs(terms.jac @ v + terms.phit))
    scale = 1.0 + jnp.max(jnp.abs(q))
    ok = (res <= tol * scale) & jnp.all(jnp.isfinite(q)) & jnp.all(jnp.isfinite(v))
    rank = jnp.linalg.matrix_rank(jax.lax.stop_gradient(terms.jac)).astype(jnp.int32)
    return AssemblyResult(q, v, res, vres, rank, jnp.where(ok, st.OK, st.NEWTON_FAILED).astype(jnp.int32))


def constraint_report(mech, params, q, t=0.0, rtol=1e-9, *, check=True, tol=1e-6) -> dict:
    """Eager rank analysis of Phi_q at (q, t): {'rank', 'n_coords', 'n_constraints', 'dof',
    'redundant': names of rows that depend linearly on earlier rows}.

    With nonholonomic rows (knife edges, velocity constraints) 'rank' and 'dof' refer to the
    holonomic rows (dof = dimension of the configuration space, n - rank), and
    'velocity_rank' / 'velocity_dof' to all rows (dof = dimension of the admissible
    velocities); 'nonholonomic' is the number of nonholonomic rows. Holonomic rows are
    tested for redundancy first, then the nonholonomic ones.

    The rank is that of the constraint manifold: with check=True (default) q must satisfy
    the constraints to within tol (m or rad), else ValueError naming the largest residuals
    (an unassembled q can have another rank: a slider-crank with crank and rod both
    vertical reports 2 DOF). Assemble first, or pass check=False to analyse q as it is.
    Needs concrete values (not under jit / vmap)."""
    from .core.validate import check_call, is_traced

    check_call(mech, params, "constraint_report", q=q, t=t)
    if is_traced(params, q, t):
        raise ValueError("constraint_report / dof are eager (NumPy rank tests): call them with "
                         "concrete values, outside jit / vmap / grad")
    tol = _tolerance(tol, "constraint_report: tol")
    q = jnp.asarray(q)
    terms = constraint_terms(mech, params, q, jnp.zeros((mech.n_vel,), q.dtype), jnp.asarray(t, q.dtype))
    J = np.asarray(terms.jac)
    if check and mech.n_constraints:
        rows = mech.holonomic_rows
        phi = np.asarray(terms.phi)[rows]
        if phi.size and np.max(np.abs(phi)) > tol:
            cn = mech.constraint_names()
            worst = np.argsort(-np.abs(phi))[:4]
            raise ValueError(
                "constraint_report / dof: q violates the constraints (largest residuals: "
                f"{', '.join(f'{cn[rows[i]]} = {phi[i]:.3g}' for i in worst)}; tol {tol:g}); the "
                "rank, the redundant rows and the DOF are those of the assembled mechanism: call "
                "jaxmbs.assemble(mech, params, q) first, or pass check=False to analyse this q as "
                "it is")
    names = mech.constraint_names()
    m, n = J.shape  # n: velocity coordinates (the configuration space's dimension before
    # the constraints; equals the number of coordinates for planar mechanisms)
    if m == 0:
        return dict(rank=0, n_coords=n, n_constraints=0, dof=n, redundant=[])
    scale = max(np.max(np.abs(J)), 1e-300)
    tol = rtol * scale * max(m, n)
    redundant, basis = [], np.zeros((0, n))
    nh = np.asarray(mech.nonholonomic_rows, int)
    order = np.concatenate([mech.holonomic_rows, nh]) if nh.size else range(m)
    rank_h = None
    for k, i in enumerate(order):
        if k == m - nh.size:
            rank_h = basis.shape[0]
        trial = np.vstack([basis, J[i]])
        if np.linalg.matrix_rank(trial, tol=tol) > basis.shape[0]:
            basis = trial
        else:
            redundant.append(names[i])
    rank = basis.shape[0]
    if not nh.size:
        return dict(rank=rank, n_coords=n, n_constraints=m, dof=n - rank, redundant=redundant)
    rank_h = rank if rank_h is None else rank_h
    return dict(rank=rank_h, n_coords=n, n_constraints=m, dof=n - rank_h, redundant=redundant,
                velocity_rank=rank, velocity_dof=n - rank, nonholonomic=int(nh.size))


def dof(mech, params, q, t=0.0, *, check=True, tol=1e-6) -> int:
    """Degrees of freedom n - rank(Phi_q) at configuration q (eager): the dimension of the
    configuration space (holonomic rows only). With nonholonomic rows the admissible
    velocities have fewer dimensions: see constraint_report(...)['velocity_dof']. q must
    satisfy the constraints to within tol (check=True; see `constraint_report`)."""
    return constraint_report(mech, params, q, t, check=check, tol=tol)["dof"]


class Kinematics(NamedTuple):
    """t (s,), q (s, n_coords), v, a (s, n_vel); residual (s,) max|Phi| after Newton; status () int32."""

    t: jax.Array
    q: jax.Array
    v: jax.Array
    a: jax.Array
    residual: jax.Array
    status: jax.Array


def kinematics(mech, params, q_guess, ts, *, iterations=8, tol=1e-10) -> Kinematics:
    """Kinematic analysis of a fully driven mechanism (DOF = 0) over the time grid ts (s,).

    At each time Newton solves Phi(q, t) = 0 (warm-started from the previous time,
    extrapolated with its velocity), then Phi_q v = -Phi_t and Phi_q a = gamma.
    """
    _check_kinematics_args(mech, params, q_guess, ts, iterations, tol, "kinematics")
    n, m = mech.n_vel, mech.n_constraints
    if mech.nonholonomic_rows:
        raise ValueError(
            "kinematic analysis solves Phi(q, t) = 0 for q, but this mechanism has nonholonomic "
            f"rows ({len(mech.nonholonomic_rows)}: knife edges / velocity constraints) that only "
            "fix velocities; integrate the prescribed motion with jaxmbs.simulate instead")
    if m != n:
        raise ValueError(
            f"kinematic analysis needs as many constraint rows as coordinates (DOF = 0): this "
            f"mechanism has {m} rows for {n} coordinates; add drivers for its "
            f"{n - m} remaining degrees of freedom" if m < n else
            f"kinematic analysis: {m} constraint rows for {n} coordinates; remove redundant rows")
    ts = jnp.asarray(ts)
    if not jnp.issubdtype(ts.dtype, jnp.floating):
        ts = ts.astype(jnp.asarray(q_guess).dtype if jnp.issubdtype(jnp.asarray(q_guess).dtype, jnp.floating) else float)
    return _kinematics(mech, params, jnp.asarray(q_guess, ts.dtype), ts, iterations=iterations, tol=tol)


def _check_kinematics_args(mech, params, q_guess, ts, iterations, tol, where):
    """Checks of kinematics / inverse_dynamics arguments: q_guess (n_coords,), ts a 1-D
    array of finite times (s) with at least one entry, iterations, tol."""
    from .core.validate import check_array, check_call

    check_call(mech, params, where, q=q_guess, names=("q_guess", "v"))
    check_array(ts, "ts", "a 1-D array of finite times (s) with at least one entry",
                lambda s: len(s) == 1 and s[0] >= 1, where, "finite times in s")
    _count(iterations, f"{where}: iterations")
    _tolerance(tol, f"{where}: tol")


@partial(jax.jit, static_argnames=("iterations", "tol"))
def _kinematics(mech, params, q_guess, ts, *, iterations, tol):
    zeros = jnp.zeros((mech.n_vel,), q_guess.dtype)

    def at_time(carry, t):
        q, v_prev, t_prev = carry
        q = mech.normalize(mech.retract(q, v_prev * (t - t_prev)))

        step = lambda terms, _q, _last: -_square_solve(terms.jac, terms.phi)
        q = newton_positions(mech, params, q, t, step, iterations)
        terms = constraint_terms(mech, params, q, zeros, t)
        v = _square_solve(terms.jac, -terms.phit)
        terms = constraint_terms(mech, params, q, v, t)
        a = _square_solve(terms.jac, terms.gamma)
        res = jnp.max(jnp.abs(terms.phi))
        return (q, v, t), (q, v, a, res)

    # first time point: start from the guess with more iterations
    _, (qs, vs, as_, res) = jax.lax.scan(at_time, (q_guess, zeros, ts[0]), ts)
    scale = 1.0 + jnp.max(jnp.abs(qs))
    ok = jnp.all(res <= tol * scale) & jnp.all(jnp.isfinite(qs))
    return Kinematics(ts, qs, vs, as_, res, jnp.where(ok, st.OK, st.NEWTON_FAILED).astype(jnp.int32))


class InverseDynamics(NamedTuple):
    """Kinematics plus lam (s, m) and the named reactions (dict name -> dict of (s, ...))."""

    t: jax.Array
    q: jax.Array
    v: jax.Array
    a: jax.Array
    lam: jax.Array
    reactions: dict
    status: jax.Array


def inverse_dynamics(mech, params, q_guess, ts, *, u=None, solver=SchurCholesky(),
                     iterations=8, tol=1e-10) -> InverseDynamics:
    """Inverse dynamics of a fully driven mechanism over ts: the multipliers that realise
    the prescribed motion and, from them, every joint's reaction and every driver's effort
    (see `reactions`). u: optional (n_controls,) control inputs held constant."""
    from .core.validate import check_controls

    _check_kinematics_args(mech, params, q_guess, ts, iterations, tol, "inverse_dynamics")
    check_controls(mech, u, "inverse_dynamics")
    if not hasattr(solver, "solve"):
        raise ValueError(f"inverse_dynamics: solver must be jaxmbs.SchurCholesky() or DenseLU(), "
                         f"got {solver!r}")
    kin = kinematics(mech, params, q_guess, ts, iterations=iterations, tol=tol)
    return _inverse(mech, params, kin, u, solver)


@partial(jax.jit, static_argnames=("solver",))
def _inverse(mech, params, kin, u, solver):
    def one(q, v, t):
        acc = accelerations(mech, params, q, v, t, u, solver=solver)
        return acc.lam, acc.status, acc.qdd

    lam, sts, qdd = jax.vmap(one)(kin.q, kin.v, kin.t)
    reac = jax.vmap(lambda q, l: reactions(mech, params, q, l))(kin.q, lam)
    from .core.validate import params_status

    status = kin.status | jnp.bitwise_or.reduce(sts) | params_status(mech, params)
    return InverseDynamics(kin.t, kin.q, kin.v, kin.a, lam, reac, status)


def reactions(mech, params, q, lam) -> dict:
    """Named joint reactions and driver efforts from the multipliers lam (m,) at q.

    For each joint/driver name: 'force' (d,) N, the constraint force that the joint
    applies to its body_j (the second body given when it was added) in global axes;
    'moment' N m, the constraint moment on body_j about the joint's point on body_j
    (about body_j's reference point for joints without a point): a scalar for planar
    joints, (3,) in global axes for spatial ones; 'generalized' (wv,) the generalised
    constraint force on body_j's velocity coordinates. The force on body_i is the opposite
    (action = reaction; for distance joints the moment arms differ).
    Drivers also get 'effort' () = -lam: the torque (N m) or force (N) the driver applies
    to body_j in the direction of increasing f(t). User constraints report 'generalized'
    (n_vel,), the generalized constraint force -jac^T lam on all velocity coordinates.
    """
    from .core.validate import check_array, check_call

    check_call(mech, params, "reactions", q=q)
    m = mech.n_constraints
    check_array(lam, "lam", f"an array of shape ({m},) (one multiplier per constraint row)",
                lambda s: s == (m,), "reactions")
    q = jnp.asarray(q)
    zv = jnp.zeros((mech.n_vel,), q.dtype)
    t0 = jnp.zeros((), q.dtype)
    blocks = {}
    for blk, ph, _Gi, Gj, _, _ in constraint_rows(mech, params, q, zv, t0):
        k, r = ph.shape
        blocks[blk.kind] = (blk, Gj.reshape(k * r, Gj.shape[-1]))
    out = {}
    terms = None
    for j in mech.joints:
        rows = np.asarray(j.rows)
        if j.kind in ("constraint", "velocity_constraint"):
            if terms is None:
                terms = constraint_terms(mech, params, q, zv, t0)
            out[j.name] = {"generalized": -(terms.jac[rows].T @ lam[rows])}
            continue
        gen = None
        kind = None
        for fname, (blk, G) in blocks.items():
            sel = [(i, r - blk.row0) for i, r in enumerate(rows)
                   if blk.row0 <= r < blk.row0 + blk.size * blk.rows_per]
            if not sel:
                continue
            loc = np.asarray([x for _, x in sel])
            ii = np.asarray([i for i, _ in sel])
            contrib = -(G[loc, : F.frame_kind(F.constraint_family(fname).frame).wv].T @ lam[rows[ii]])
            gen = contrib if gen is None else gen + contrib
            kind = F.constraint_family(fname).frame
        fk = F.frame_kind(kind)
        X, _ = frame_states(mech, kind, q, None, [j.frame_j])
        if j.point_ref:
            pfam, k = j.point_ref
            s = family_params(params, "joints", blocks[pfam][0])["point_j"][k]
        else:
            s = jnp.zeros((fk.dim,), q.dtype)
        d = dict(fk.reaction(gen, X[0], s))
        for fname, (blk, _) in blocks.items():
            fam = F.constraint_family(fname)
            if hasattr(fam, "reaction_extra") and j.name in blk.owners:
                d.update(fam.reaction_extra(mech, params, q, lam, j, blk))
        if j.driver:
            d["effort"] = -lam[rows[-1]]
        out[j.name] = d
    return out


def energy(mech, params, q, v, t=0.0) -> dict:
    """{'kinetic', 'potential', 'total'} in J at (q, v): potential of gravity and springs."""
    from .core.validate import check_call

    check_call(mech, params, "energy", q=q, v=v, t=t, require=("q", "v"))
    T, V = energy_terms(mech, params, jnp.asarray(q), jnp.asarray(v), t)
    return {"kinetic": T, "potential": V, "total": T + V}
