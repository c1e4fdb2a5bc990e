"""Time integrators (diffrax style: hashable configurations with init / step / state):
explicit Runge-Kutta methods, adaptive Dormand-Prince with step-size controllers, and the
integrators of the constrained equations themselves (generalized-alpha, RATTLE)."""
from .controllers import IController, PIController
from .generalized_alpha import GeneralizedAlpha, HHTAlpha
from .registry import INTEGRATORS
from .runge_kutta import RK4, DormandPrince5, DormandPrince8, Euler, ExplicitRK, SemiImplicitEuler
from .symplectic import Rattle

__all__ = ["RK4", "SemiImplicitEuler", "Euler", "DormandPrince5", "DormandPrince8", "ExplicitRK",
           "IController", "PIController", "GeneralizedAlpha", "HHTAlpha", "Rattle", "INTEGRATORS"]
