"""RATTLE (Andersen 1983; Leimkuhler & Skeel 1994): SHAKE on positions plus a velocity
projection, second order and constraint preserving; symplectic (bounded energy error over
long runs) for identity-kinematics (planar) mechanisms with a constant mass matrix and
position-dependent conservative forces. Run by `jaxmbs.core.dynamics.step` like every
integrator; its Newton solves are differentiated by the implicit function theorem.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from .. import status as st
from ..core._tree import static_class
from ..core.newton import dense_tangent_solve
from ..core.options import Validated, choice, integer, real
from ..formulations.tree import for_mechanism


# ------------------------------------------------------------------------------ RATTLE
@static_class
class Rattle(Validated):
    """RATTLE (SHAKE + velocity projection), second order, constraint preserving.

    One step (h s, from t_n), in velocity space with positions moved by retract:

        v_h = v_n + (h/2) M(q_n)^-1 (Q(q_n, v_h, t_n) - Phi_q(q_n)^T Lam)
        q1  = retract(q_n, h v_h),        Phi(q1, t1) = 0                       (SHAKE)
        v1  = v_h + (h/2) M(q1)^-1 (Q(q1, v_h, t1) - Phi_q(q1)^T mu),
        Phi_q(q1) v1 + Phi_t(q1, t1) = 0                                        (RATTLE)

    The first half-kick is implicit in v_h (the Lobatto IIIA-IIIB pair: second order for
    velocity-dependent forces too) and solved together with SHAKE's multipliers by a
    simplified Newton iteration with the saddle matrix [M(q_n), Phi_q(q_n)^T; Phi_q(q_n), 0]:
    every iteration is one solve of the term's solver (`simulate(..., solver=...)`), so a
    redundancy-tolerant formulation (UdwadiaKalaba, NullSpace, AugmentedLagrangian)
    makes RATTLE run through redundant constraints. The iteration runs to round-off, not
    to a tolerance (a solve stopped at tol perturbs v_h by up to tol/h per step, which is
    neither symplectic nor symmetric): up to `iterations` iterations, until the change of
    h v_h is below 4 eps (1 + max |q|), or below tol (1 + max |q|) (default eps^0.75) and
    no longer contracting (at its round-off floor), with |Phi(q1)| below tol;
    NEWTON_FAILED if |Phi(q1)| is above tol at the end. The second half-kick is one saddle solve. Nonholonomic rows
    enter the velocity projection only.

    Symplectic (the energy error stays bounded over long runs) when the kinematics are
    the identity (planar mechanisms), M is constant (every body's reference point at its
    CG) and the forces are conservative and velocity independent; otherwise it is a
    second-order, symmetric, constraint-preserving method without that guarantee
    (spatial bodies: the quaternion update and the gyroscopic terms are not symplectic
    in this form). Derivatives: the SHAKE solve is a `custom_root` (implicit function
    theorem), the rest is differentiated directly.
    """

    OPTIONS = {"iterations": integer(1), "tol": real(0.0, open_lo=True, optional=True),
               "linear": choice("lu", "lstsq")}
    iterations: int = 20
    tol: float | None = None
    linear: str = "lu"

    order = 2
    adaptive = False
    stateful = False

    def init(self, term, t0, y0, h):
        return None

    def advance(self, term, t, y, h, state=None):
        y1, status = self.step(term, t, y, h)
        return y1, state, status

    def step(self, term, t, y, h):
        q, v, w = y
        dtype = q.dtype
        h = jnp.asarray(h, dtype)
        t1 = t + h
        n = v.shape[0]
        mech = term.mech
        solver = for_mechanism(term.solver, mech)
        eps = float(jnp.finfo(dtype).eps)
        tol = eps ** 0.75 if self.tol is None else self.tol
        qscale = 1.0 + jnp.max(jnp.abs(q))
        M0 = term.mass(q)
        terms0 = term.constraints(t, q, v)
        hol = mech.holonomic_rows if mech.nonholonomic_rows else None
        B0 = terms0.jac if hol is None else terms0.jac[hol]
        mh = B0.shape[0]
        P0 = self._power_nc(term, t, q, v)

        def phi_at(vh):
            q1 = term.retract(q, h * vh)
            ph = term.constraints(t1, q1, vh).phi
            return ph if hol is None else ph[hol]

        def residual(x):
            # (M0 (v_h - v) - h/2 (Q(q, v_h) - B0^T Lam)) * 2/h ;  Phi(q1)/h
            vh, lam = x[:n], x[n:]
            F = term.forces(t, q, vh)
            r1 = (2.0 / h) * M0.apply(vh - v) - F + B0.T @ lam
            return jnp.concatenate([r1, phi_at(vh) / h])

        def shake(_, x0):
            # iterate to round-off, not to tol: a step solved only to tol leaves an error
            # of up to tol/h in v_h that is not symplectic and can add up over 1e5 steps.
            # Stop when the position change is at round-off (4 eps), or once within tol
            # when it stops contracting (the iteration has reached its round-off floor).
            floor = 4.0 * eps * qscale

            def body(c):
                k, vh, lam, _, s, d_prev = c
                F = term.forces(t, q, vh)
                ph = phi_at(vh)
                g = (2.0 / h) * (B0 @ (vh - v) - ph / h)
                x, lam_new, s = solver.solve(M0, B0, F, g)
                vh_new = v + 0.5 * h * x
                dpos = h * jnp.max(jnp.abs(vh_new - vh))
                small = jnp.max(jnp.abs(ph), initial=0.0) <= tol * qscale
                done = small & ((dpos <= floor) | ((dpos <= tol * qscale) & (dpos > 0.25 * d_prev)))
                return k + 1, vh_new, lam_new, done, s, dpos

            def cond(c):
                k, vh, _, done, _, _ = c
                return (k < self.iterations) & ~done & jnp.all(jnp.isfinite(vh))

            c0 = (jnp.zeros((), jnp.int32), x0[:n], x0[n:], jnp.zeros((), bool), jnp.zeros((), jnp.int32),
                  jnp.asarray(jnp.inf, dtype))
            k, vh, lam, _, s, _ = jax.lax.while_loop(cond, body, c0)
            ok = jnp.max(jnp.abs(phi_at(vh)), initial=0.0) <= tol * qscale
            # aux as floats (see core.newton.newton_root)
            return jnp.concatenate([vh, lam]), (ok.astype(dtype), s.astype(dtype))

        tangent_solve = dense_tangent_solve(self.linear == "lstsq")

        x0 = jnp.concatenate([v, jnp.zeros((mh,), dtype)])
        if mh:
            x, (ok, s1) = jax.lax.custom_root(residual, x0, shake, tangent_solve, has_aux=True)
        else:  # no position constraints: the implicit half-kick by fixed point
            x, (ok, s1) = shake(None, x0)
        ok = jax.lax.stop_gradient(ok) > 0.5
        s1 = jax.lax.stop_gradient(s1).astype(jnp.int32)
        vh, Lam = x[:n], x[n:]
        q1 = term.retract(q, h * vh)
        # second half-kick with the velocity projection (all rows)
        M1 = term.mass(q1)
        terms1 = term.constraints(t1, q1, vh)
        F1 = term.forces(t1, q1, vh)
        g1 = (2.0 / h) * (-terms1.phit - terms1.jac @ vh)
        x2, mu, s2 = solver.solve(M1, terms1.jac, F1, g1)
        v1 = vh + 0.5 * h * x2
        # work of non-conservative forces (trapezoidal) and of the drivers: Lam . Phi_t
        # over the first half, mu . Phi_t over the second
        P1 = self._power_nc(term, t1, q1, v1)
        w1 = w + 0.5 * h * (P0 + P1) + self._driver_work(h, Lam, terms0, hol, mu, terms1)
        finite = jnp.all(jnp.isfinite(q1)) & jnp.all(jnp.isfinite(v1))
        status = (s1 | s2 | jnp.where(ok, st.OK, st.NEWTON_FAILED)
                  | jnp.where(finite, st.OK, st.SINGULAR)).astype(jnp.int32)
        return (q1, v1, w1), status

    @staticmethod
    def _power_nc(term, t, q, v):
        from ..core.equations import generalized_forces
        return generalized_forces(term.mech, term.params, q, v, t, term.u(t))[2]

    @staticmethod
    def _driver_work(h, Lam, terms0, hol, mu, terms1):
        """Work of the drivers over the step: (h/2) Lam . Phi_t(t_n) on the first half
        and (h/2) mu . Phi_t(t1) on the second (the power of the constraint forces on the
        constraint manifold, `jaxmbs.core.dynamics.external_power`; zero for scleronomic
        rows)."""
        w = (0.5 * h) * (mu @ terms1.phit) if terms1.phit.shape[0] else 0.0
        if Lam.shape[0]:
            phit0 = terms0.phit if hol is None else terms0.phit[hol]
            w = w + (0.5 * h) * (Lam @ phit0)
        return w
