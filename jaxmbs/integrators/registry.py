"""Every integrator by name, for the conformance suite and the comparison benchmark."""
from __future__ import annotations

from .generalized_alpha import GeneralizedAlpha, HHTAlpha
from .symplectic import Rattle


def _explicit(name):
    def make(**kw):
        from . import runge_kutta as integrators
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
