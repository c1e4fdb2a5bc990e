"""The generalized-alpha method for index-3 constrained systems (Arnold & Bruls 2007) on
the Lie group of the coordinates (Bruls, Cardona & Arnold 2012): the unknowns are
velocity-space quantities and positions are moved with `mech.retract(q, dq)` (q + dq in
the plane, the quaternion exponential map in space). Parameters from the spectral radius
at infinity rho_inf (Chung & Hulbert 1993), or HHT-alpha (`HHTAlpha`,
Hilber-Hughes-Taylor). Newton on the residual with the iteration matrix
[M + gamma' C + beta' K, Phi_q^T; Phi_q, 0] (scaled; K and C by autodiff of the
residual, i.e. the exact Jacobian), fixed step or with error control (`adaptive=True`: an
O(h^3) local position error estimate and a step-size controller object). Implicit and
A-stable for rho_inf <= 1: the implicit alternative for stiff springs and penalty contact
(high frequencies are damped, not resolved).

It implements the integrator protocol of `jaxmbs.integrators` (`init`, `advance`;
`attempt` when adaptive) and is run by `jaxmbs.core.dynamics.step`, so
`simulate(..., integrator=GeneralizedAlpha())` and the environments use it; it reads the
mechanism through the term (`term.mass`, `term.forces`, `term.constraints`,
`term.retract`). The acceleration-level stabilisation of the stabiliser (Baumgarte's
gamma) does not enter it; its post-step projection does if one is given (positions are
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

from .. import status as st
from ..core._tree import static_class
from ..core.newton import dense_tangent_solve, newton_root
from ..core.options import Validated, boolean, check_tolerances, choice, controller, integer, real
from .controllers import IController


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


@static_class
class GeneralizedAlpha(Validated):
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

    OPTIONS = {"rho_inf": real(0.0, 1.0), "tol": real(0.0, open_lo=True, optional=True),
               "max_iter": integer(1), "newton": choice("full", "modified"),
               "linear": choice("lu", "lstsq"), "adaptive": boolean(), "rtol": real(0.0),
               "atol": real(0.0), "max_steps": integer(1),
               "h0": real(0.0, open_lo=True, optional=True), "controller": controller()}
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
        super().__post_init__()
        check_tolerances(self)
        if self.adaptive and self.controller is None:
            object.__setattr__(self, "controller", IController())

    # --- protocol ---------------------------------------------------------------
    def init(self, term, t0, y0, h):
        """(vdot0, a0 = vdot0, lam0, h, power0): the consistent accelerations and
        multipliers at t0 (one saddle solve with the term's solver)."""
        from ..core.dynamics import _accelerations as accelerations  # (traced: no input checks)
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
        solve = lambda f, x_init: newton_root(f, x_init, tol_fn=converged, max_iter=self.max_iter,
                                              modified=self.newton == "modified",
                                              lstsq=self.linear == "lstsq")
        tangent_solve = dense_tangent_solve(self.linear == "lstsq")
        x, (ok, _) = jax.lax.custom_root(residual, x0, solve, tangent_solve, has_aux=True)
        ok = jax.lax.stop_gradient(ok) > 0.5
        vdot1, lam1 = x[:n], x[n:]
        q1, v1, a1, _ = kin(vdot1)
        finite = jnp.all(jnp.isfinite(x))
        status = jnp.where(ok & finite, st.OK, st.NEWTON_FAILED) | jnp.where(finite, st.OK, st.SINGULAR)
        # work of non-conservative forces and drivers (the state's third entry):
        # trapezoidal rule on their power
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
        """Power (W) of non-conservative forces and drivers, as in
        `jaxmbs.core.dynamics.accelerations` (`external_power`)."""
        from ..core.dynamics import external_power
        from ..core.equations import generalized_forces
        P = generalized_forces(term.mech, term.params, q, v, t, term.u(t))[2]
        if lam.shape[0] == 0:
            return P
        return external_power(P, lam, term.constraints(t, q, v))


@static_class
class HHTAlpha(GeneralizedAlpha):
    """HHT-alpha (Hilber-Hughes-Taylor) for index-3 mechanisms: the generalized-alpha
    step with alpha_m = 0, alpha_f = alpha in [0, 1/3], gamma = 1/2 + alpha,
    beta = (1 + alpha)^2/4 (rho_inf = (1 - alpha)/(1 + alpha)). Other options as
    GeneralizedAlpha."""

    OPTIONS = {**GeneralizedAlpha.OPTIONS, "alpha": real(0.0, 1.0 / 3.0)}
    alpha: float = 0.1

    def params(self):
        return alpha_parameters(hht_alpha=self.alpha)
