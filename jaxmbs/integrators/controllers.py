"""Step-size controllers of the adaptive integrators, apart from the integrators
(diffrax style): `IController` and `PIController`."""
from __future__ import annotations

import jax.numpy as jnp

from ..core._tree import static_class
from ..core.options import Validated, real

__all__ = ["IController", "PIController"]



# ------------------------------------------------------------------ step-size control
@static_class
class IController(Validated):
    """Integral (elementary) step-size controller, separate from the stepping rule:
    h_next = h * clip(safety * err^(-1/k), min_factor, max_factor), k the order of the
    error estimate (`integrator.error_order`), err the integrator's scaled error norm
    (accept when err <= 1). No state."""

    OPTIONS = {"safety": real(0.0, 1.0, open_lo=True), "min_factor": real(0.0, 1.0, open_lo=True),
               "max_factor": real(1.0)}
    safety: float = 0.9
    min_factor: float = 0.2
    max_factor: float = 10.0

    def init(self, dtype):
        return None

    def adapt(self, h, err, accepted, state, k):
        """(h_next, state) after an attempt with step h and error norm err."""
        err = jnp.where(jnp.isfinite(err), err, jnp.inf)
        fac = self.safety * jnp.where(err > 0, err, 1e-10) ** (-1.0 / k)
        return h * jnp.clip(fac, self.min_factor, self.max_factor), state


@static_class
class PIController(Validated):
    """Proportional-integral step-size controller (Gustafsson; Soderlind's PI.4.2 by
    default): h_next = h * safety * err^(-ki/k) * (err/err_prev)^(-kp/k) after accepted
    steps, the integral rule after rejections (no growth), clipped to [min_factor,
    max_factor]. State: the error of the last accepted step. Smoother step sequences than
    the I controller on problems whose step is limited by stability (stiff springs)."""

    OPTIONS = {"ki": real(0.0, open_lo=True), "kp": real(), "safety": real(0.0, 1.0, open_lo=True),
               "min_factor": real(0.0, 1.0, open_lo=True), "max_factor": real(1.0)}
    ki: float = 0.3
    kp: float = 0.4
    safety: float = 0.9
    min_factor: float = 0.2
    max_factor: float = 5.0

    def init(self, dtype):
        return jnp.ones((), dtype)

    def adapt(self, h, err, accepted, state, k):
        err = jnp.where(jnp.isfinite(err), err, jnp.inf)
        e = jnp.maximum(err, 1e-10)
        prev = jnp.maximum(state, 1e-10)
        pi = self.safety * e ** (-self.ki / k) * (e / prev) ** (-self.kp / k)
        i_rule = jnp.minimum(self.safety * e ** (-1.0 / k), 1.0)
        fac = jnp.where(accepted, pi, i_rule)
        return h * jnp.clip(fac, self.min_factor, self.max_factor), jnp.where(accepted, err, state)
