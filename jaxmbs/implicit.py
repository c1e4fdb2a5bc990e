"""Integrators that work on the constrained equations of motion directly (issue 17):

* `GeneralizedAlpha` -- the generalized-alpha method for index-3 constrained systems
  (Arnold & Bruls 2007) on the Lie group of the coordinates (Bruls, Cardona & Arnold
  2012): the unknowns are velocity-space quantities and positions are moved with
  `mech.retract(q, dq)` (q + dq in the plane, the quaternion exponential map in space).
  Parameters from the spectral radius at infinity rho_inf (Chung & Hulbert 1993), or
  HHT-alpha (`HHTAlpha`, Hilber-Hughes-Taylor). Newton on the residual with the
  iteration matrix [M + gamma' C + beta' K, Phi_q^T; Phi_q, 0] (scaled; K and C by
  autodiff of the residual, i.e. the exact Jacobian), fixed step or with error control
  (`adaptive=True`: an O(h^3) local position error estimate and a step-size controller
  object). Implicit and A-stable for rho_inf <= 1: the implicit alternative for stiff
  springs and penalty contact (high frequencies are damped, not resolved).
* `Rattle` -- RATTLE (Andersen 1983; Leimkuhler & Skeel 1994): SHAKE on positions plus a
  velocity projection, second order and constraint preserving; symplectic (bounded
  energy error over long runs) for identity-kinematics (planar) mechanisms with a
  constant mass matrix and position-dependent conservative forces.

Both implement the integrator protocol of `jaxmbs.integrators` (`init`, `advance`; and
`attempt` for the adaptive generalized-alpha) and are run by `jaxmbs.dynamics.step`, so
`simulate(..., integrator=GeneralizedAlpha())` and the environments use them; they read
the mechanism through the term (`term.mass`, `term.forces`, `term.constraints`,
`term.retract`). The acceleration-level stabilisation of the stabiliser (Baumgarte's
gamma) does not enter them; its post-step projection does if one is given (positions are
already on Phi = 0; `NoStabilization()` is the natural choice, `Projection()` adds a
velocity projection).

Derivatives: the Newton solve of each step is a `jax.lax.custom_root`, differentiated by
the implicit function theorem (exact derivatives of the converged step; the Newton loop
itself is a while loop and is never differentiated).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from . import status as st
from ._tree import static_class
from .integrators import IController

__all__ = ["GeneralizedAlpha", "HHTAlpha", "Rattle", "alpha_parameters", "amplification_matrix",
           "INTEGRATORS"]


def alpha_parameters(rho_inf=None, *, hht_alpha=None):
    """(alpha_m, alpha_f, gamma, beta) of the generalized-alpha method.

    rho_inf in [0, 1]: Chung & Hulbert's optimal parameters, alpha_m = (2 rho - 1)/(rho + 1),
    alpha_f = rho/(rho + 1), gamma = 1/2 - alpha_m + alpha_f, beta = (gamma + 1/2)^2 / 4
    (second order, unconditionally stable, spectral radius rho_inf at h omega -> inf).
    hht_alpha in [0, 1/3]: HHT-alpha, alpha_m = 0, alpha_f = hht_alpha, gamma = 1/2 +
    alpha, beta = (1 + alpha)^2 / 4 (rho_inf = (1 - alpha)/(1 + alpha)).
    Convention of Arnold & Bruls: (1 - alpha_m) a_{n+1} + alpha_m a_n =
    (1 - alpha_f) vdot_{n+1} + alpha_f vdot_n.
    """
    if hht_alpha is not None:
        a = float(hht_alpha)
        if not 0.0 <= a <= 1.0 / 3.0:
            raise ValueError(f"HHT alpha must lie in [0, 1/3], got {a}")
        return 0.0, a, 0.5 + a, 0.25 * (1.0 + a) ** 2
    r = float(rho_inf)
    if not 0.0 <= r <= 1.0:
        raise ValueError(f"rho_inf must lie in [0, 1], got {r}")
    am = (2.0 * r - 1.0) / (r + 1.0)
    af = r / (r + 1.0)
    g = 0.5 - am + af
    return am, af, g, 0.25 * (g + 0.5) ** 2


def amplification_matrix(params, h_omega, zeta=0.0):
    """Amplification matrix T (4, 4) of the generalized-alpha recursion s_{n+1} = T s_n on
    the linear oscillator x'' + 2 zeta omega x' + omega^2 x = 0, state
    s = (x, h v, h^2 a, h^2 x''), written from the method's defining equations with time
    scaled by h (so only h omega enters): the closed form the tests compare the
    numerical damping against (its spectral radius tends to rho_inf as h omega -> inf).
    params: (alpha_m, alpha_f, gamma, beta)."""
    am, af, g, b = params
    w = h_omega
    # unknowns at n+1: (x, v, a, xdd); equations:
    # x1 = x + h v + h^2 ((1/2 - b) a + b a1); v1 = v + h ((1 - g) a + g a1)
    # (1 - am) a1 + am a = (1 - af) xdd1 + af xdd;   xdd = -w^2 x - 2 zeta w v (h = 1 units)
    # state s = (x, v, a, xdd) with h = 1 (time scaled), omega -> w
    A = np.zeros((4, 4))
    B = np.zeros((4, 4))
    # x1 - b a1 = x + v + (1/2 - b) a
    A[0, 0], A[0, 2] = 1.0, -b
    B[0, 0], B[0, 1], B[0, 2] = 1.0, 1.0, 0.5 - b
    # v1 - g a1 = v + (1 - g) a
    A[1, 1], A[1, 2] = 1.0, -g
    B[1, 1], B[1, 2] = 1.0, 1.0 - g
    # (1 - am) a1 - (1 - af) xdd1 = -am a + af xdd
    A[2, 2], A[2, 3] = 1.0 - am, -(1.0 - af)
    B[2, 2], B[2, 3] = -am, af
    # xdd1 + w^2 x1 + 2 zeta w v1 = 0
    A[3, 3], A[3, 0], A[3, 1] = 1.0, w * w, 2.0 * zeta * w
    T = np.linalg.solve(A, B)
    return T


def _newton(f, x0, *, tol_fn, max_iter, modified, lstsq):
    """Newton's method for f(x) = 0 from x0 in a while loop (not differentiated: wrapped
    in custom_root by the caller). tol_fn(x, dx, r) -> converged flag. Returns (x,
    (converged, iterations))."""
    jac = jax.jacfwd(f)
    lin = (lambda A, r: jnp.linalg.lstsq(A, r)[0]) if lstsq else jnp.linalg.solve

    def body(c):
        k, x, _, A = c
        r = f(x)
        A = A if modified else jac(x)
        dx = lin(A, -r)
        x = x + dx
        return k + 1, x, tol_fn(x, dx, r), A

    def cond(c):
        k, x, done, _ = c
        return (k < max_iter) & ~done & jnp.all(jnp.isfinite(x))

    A0 = jac(x0)
    k, x, done, _ = jax.lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), x0,
                                                     jnp.zeros((), bool), A0))
    # aux as floats: custom_root differentiates its aux too, and bool/int aux have no
    # (float0) tangent there in jax 0.10
    return x, (done.astype(x.dtype), k.astype(x.dtype))


@static_class
class GeneralizedAlpha:
    """Generalized-alpha for index-3 constrained mechanisms (Arnold-Bruls), Lie-group form.

    State between steps: vdot_n (n_vel,) accelerations, a_n (n_vel,) the method's
    pseudo-accelerations, lam_n (m,) multipliers (Newton predictor) and the last step h.
    One step (h s, from t_n):

        dq  = h v_n + h^2 (1/2 - beta) a_n + h^2 beta a_{n+1}       (velocity space)
        q1  = retract(q_n, dq)          v1 = v_n + h (1 - gamma) a_n + h gamma a_{n+1}
        (1 - alpha_m) a_{n+1} + alpha_m a_n = (1 - alpha_f) vdot_{n+1} + alpha_f vdot_n
        M(q1) vdot_{n+1} + Phi_q(q1)^T lam = Q(q1, v1, t1),   Phi(q1, t1) = 0

    solved for (vdot_{n+1}, lam) by Newton on the residual with the constraint rows
    scaled by beta' = (1 - alpha_m) / (h^2 beta (1 - alpha_f)), so that the iteration
    matrix is [M + (gamma' C + K)/beta', Phi_q^T; Phi_q, 0] + O(h) (well conditioned as
    h -> 0; C, K the damping and stiffness matrices, here the exact Jacobian by autodiff).
    Nonholonomic rows A v = b are imposed at v1 (scaled by beta'/gamma'). The position
    constraints hold to the Newton tolerance at every step (no drift); the velocity
    constraints are met to O(h^2) (index-3).

    rho_inf: spectral radius at infinity (1: no numerical damping, the trapezoidal rule;
      0: asymptotic annihilation of the highest frequencies); ignored by HHTAlpha.
    tol: Newton tolerance on the position correction and on Phi, relative to
      1 + max |q| (default eps^0.75: 1.8e-12 in float64, 6.5e-6 in float32).
    max_iter: Newton iteration budget per step (NEWTON_FAILED if not converged).
    newton: "full" (the exact Jacobian at every iteration, quadratic convergence) or
      "modified" (the Jacobian of the predictor, kept for the step).
    linear: "lu" (dense LU of the iteration matrix) or "lstsq" (least squares: redundant
      constraints, e.g. Bricard, and singular configurations).
    adaptive, rtol, atol, max_steps, h0, controller: error control. The local position
      error estimate e = (beta - gamma/2 + 1/12) h^2 (a_{n+1} - a_n) (O(h^3); its
      constant vanishes for no scheme of this family), its RMS norm scaled by
      atol + rtol |q| is the err the controller (default `IController`) sees; after a
      step-size change a_n is rescaled (a_n - vdot_n ~ h).
    """

    rho_inf: float = 0.8
    tol: float | None = None
    max_iter: int = 8
    newton: str = "full"
    linear: str = "lu"
    adaptive: bool = False
    rtol: float = 1e-6
    atol: float = 1e-8
    max_steps: int = 100_000
    h0: float | None = None
    controller: object = None

    order = 2
    error_order = 3
    stateful = True

    def params(self):
        return alpha_parameters(self.rho_inf)

    def __post_init__(self):
        if self.newton not in ("full", "modified"):
            raise ValueError(f"GeneralizedAlpha: newton must be 'full' or 'modified', got {self.newton!r}")
        if self.linear not in ("lu", "lstsq"):
            raise ValueError(f"GeneralizedAlpha: linear must be 'lu' or 'lstsq', got {self.linear!r}")
        self.params()  # validates rho_inf / alpha
        if self.adaptive and self.controller is None:
            object.__setattr__(self, "controller", IController())

    # --- protocol ---------------------------------------------------------------
    def init(self, term, t0, y0, h):
        """(vdot0, a0 = vdot0, lam0, h, power0): the consistent accelerations and
        multipliers at t0 (one saddle solve with the term's solver)."""
        from .dynamics import _accelerations as accelerations  # (traced: no input checks)
        q, v = y0[0], y0[1]
        if self.linear == "lstsq":
            # redundant rows: the KKT system by least squares (the term's solver may be
            # one that flags them, e.g. CoordinatePartitioning or DenseLU)
            terms = term.constraints(t0, q, v)
            n, m = v.shape[0], terms.jac.shape[0]
            K = jnp.block([[term.mass(q).dense(), terms.jac.T], [terms.jac, jnp.zeros((m, m), q.dtype)]])
            x = jnp.linalg.lstsq(K, jnp.concatenate([term.forces(t0, q, v), terms.gamma]))[0]
            qdd, lam = x[:n], x[n:]
            return (qdd, qdd, lam, jnp.asarray(h, q.dtype), self._power(term, t0, q, v, lam))
        acc = accelerations(term.mech, term.params, q, v, t0, term.u(t0), solver=term.solver)
        return (acc.qdd, acc.qdd, acc.lam, jnp.asarray(h, q.dtype), acc.power)

    def advance(self, term, t, y, h, state):
        y1, _, state1, status = self._step(term, t, y, h, state)
        return y1, state1, status

    def attempt(self, term, t, y, h, state):
        y1, err, state1, status = self._step(term, t, y, h, state)
        return y1, err, state1, status

    # --- one step -----------------------------------------------------------------
    def _step(self, term, t, y, h, state):
        q, v, w = y
        vdot_n, a_n, lam_n, h_prev, p_n = state
        am, af, g, b = self.params()
        dtype = q.dtype
        h = jnp.asarray(h, dtype)
        # a_n - vdot_n ~ (alpha_m - alpha_f) h vddot: rescale after a step-size change
        a_n = vdot_n + (h / h_prev) * (a_n - vdot_n)
        t1 = t + h
        n, m = v.shape[0], lam_n.shape[0]
        beta_p = (1.0 - am) / (h * h * b * (1.0 - af))
        gamma_p = g / (h * b)
        mech = term.mech
        nh = np.asarray(mech.nonholonomic_rows, int)
        hol_mask = np.ones(m, bool)
        hol_mask[nh] = False
        scale = jnp.where(jnp.asarray(hol_mask), beta_p, beta_p / gamma_p)
        eps = float(jnp.finfo(dtype).eps)
        tol = eps ** 0.75 if self.tol is None else self.tol

        def kin(vdot1):
            a1 = ((1.0 - af) * vdot1 + af * vdot_n - am * a_n) / (1.0 - am)
            dq = h * v + h * h * ((0.5 - b) * a_n + b * a1)
            q1 = term.retract(q, dq)
            v1 = v + h * ((1.0 - g) * a_n + g * a1)
            return q1, v1, a1, dq

        def residual(x):
            vdot1, lam = x[:n], x[n:]
            q1, v1, _, _ = kin(vdot1)
            M = term.mass(q1)
            Q = term.forces(t1, q1, v1)
            if m == 0:
                return M.apply(vdot1) - Q
            terms = term.constraints(t1, q1, v1)
            r1 = M.apply(vdot1) + terms.jac.T @ lam - Q
            c = jnp.where(jnp.asarray(hol_mask), terms.phi, terms.jac @ v1 + terms.phit)
            return jnp.concatenate([r1, scale * c])

        qscale = 1.0 + jnp.max(jnp.abs(q))

        def converged(x, dx, r):
            # position correction of this iteration and the constraint residual
            dpos = jnp.max(jnp.abs(dx[:n])) / beta_p
            ok = dpos <= tol * qscale
            if m:
                ok = ok & (jnp.max(jnp.abs(r[n:])) / beta_p <= tol * qscale)
            return ok

        # predictor: vdot_{n+1} = vdot_n, lam = lam_n
        x0 = jnp.concatenate([vdot_n, lam_n])
        solve = lambda f, x_init: _newton(f, x_init, tol_fn=converged, max_iter=self.max_iter,
                                          modified=self.newton == "modified",
                                          lstsq=self.linear == "lstsq")

        def tangent_solve(g_lin, yv):
            A = jax.jacfwd(g_lin)(jnp.zeros_like(yv))
            if self.linear == "lstsq":
                return jnp.linalg.lstsq(A, yv)[0]
            return jnp.linalg.solve(A, yv)

        x, (ok, _) = jax.lax.custom_root(residual, x0, solve, tangent_solve, has_aux=True)
        ok = jax.lax.stop_gradient(ok) > 0.5
        vdot1, lam1 = x[:n], x[n:]
        q1, v1, a1, _ = kin(vdot1)
        finite = jnp.all(jnp.isfinite(x))
        status = jnp.where(ok & finite, st.OK, st.NEWTON_FAILED) | jnp.where(finite, st.OK, st.SINGULAR)
        # work of non-conservative forces, drivers and constraint forces (the state's
        # third entry): trapezoidal rule on their power
        p1 = self._power(term, t1, q1, v1, lam1)
        w1 = w + 0.5 * h * (p_n + p1)
        # local error estimate (position, velocity space), mapped to coordinates
        c_err = b - 0.5 * g + 1.0 / 12.0
        e = c_err * h * h * (a1 - a_n)
        eq = term.retract(q1, e) - q1
        sc = self.atol + self.rtol * jnp.maximum(jnp.abs(q), jnp.abs(q1))
        err = jnp.sqrt(jnp.mean((eq / sc) ** 2))
        return (q1, v1, w1), err, (vdot1, a1, lam1, h, p1), status.astype(jnp.int32)

    @staticmethod
    def _power(term, t, q, v, lam):
        """Power (W) of non-conservative forces and of the constraint forces -jac^T lam
        (drivers), as in `jaxmbs.dynamics.accelerations`."""
        from .equations import generalized_forces
        P = generalized_forces(term.mech, term.params, q, v, t, term.u(t))[2]
        if lam.shape[0] == 0:
            return P
        return P - lam @ (term.constraints(t, q, v).jac @ v)


@static_class
class HHTAlpha(GeneralizedAlpha):
    """HHT-alpha (Hilber-Hughes-Taylor) for index-3 mechanisms: the generalized-alpha
    step with alpha_m = 0, alpha_f = alpha in [0, 1/3], gamma = 1/2 + alpha,
    beta = (1 + alpha)^2/4 (rho_inf = (1 - alpha)/(1 + alpha)). Other options as
    GeneralizedAlpha."""

    alpha: float = 0.1

    def params(self):
        return alpha_parameters(hht_alpha=self.alpha)


# ------------------------------------------------------------------------------ RATTLE
@static_class
class Rattle:
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
        solver = term.solver
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
            # aux as floats (see _newton)
            return jnp.concatenate([vh, lam]), (ok.astype(dtype), s.astype(dtype))

        def tangent_solve(g_lin, yv):
            A = jax.jacfwd(g_lin)(jnp.zeros_like(yv))
            if self.linear == "lstsq":
                return jnp.linalg.lstsq(A, yv)[0]
            return jnp.linalg.solve(A, yv)

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
        # work of non-conservative forces (trapezoidal) and of the constraint forces
        # (drivers): -Lam . (jac v) over the first half, -mu . (jac v1) over the second
        P1 = self._power_nc(term, t1, q1, v1)
        w1 = w + 0.5 * h * (P0 + P1) + self._driver_work(h, Lam, B0, v, terms0, hol, mu, terms1, v1)
        finite = jnp.all(jnp.isfinite(q1)) & jnp.all(jnp.isfinite(v1))
        status = (s1 | s2 | jnp.where(ok, st.OK, st.NEWTON_FAILED)
                  | jnp.where(finite, st.OK, st.SINGULAR)).astype(jnp.int32)
        return (q1, v1, w1), status

    @staticmethod
    def _power_nc(term, t, q, v):
        from .equations import generalized_forces
        return generalized_forces(term.mech, term.params, q, v, t, term.u(t))[2]

    @staticmethod
    def _driver_work(h, Lam, B0, v0, terms0, hol, mu, terms1, v1):
        """Work of the constraint forces over the step: -(h/2) Lam . (jac0 v0) on the first
        half and -(h/2) mu . (jac1 v1) on the second (zero for scleronomic rows, where
        jac v = 0 at both ends: the drivers' work)."""
        if B0.shape[0] == 0 and terms1.jac.shape[0] == 0:
            return 0.0
        w = -(0.5 * h) * (mu @ (terms1.jac @ v1))
        if B0.shape[0]:
            w = w - (0.5 * h) * (Lam @ (B0 @ v0))
        return w


def _explicit(name):
    def make(**kw):
        from . import integrators
        return getattr(integrators, name)(**kw)
    return make


# registry for the conformance suite and the comparison script: name -> factory
INTEGRATORS = {
    "rk4": _explicit("RK4"),
    "dop853": _explicit("DormandPrince8"),
    "semi_implicit_euler": _explicit("SemiImplicitEuler"),
    "dopri5": _explicit("DormandPrince5"),
    "generalized_alpha": GeneralizedAlpha,
    "hht_alpha": HHTAlpha,
    "rattle": Rattle,
}
