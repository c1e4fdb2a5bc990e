"""Statics, linearisation and modes: static equilibrium, the linear state-space model of a
constrained mechanism about an equilibrium or a steady motion, eigenvalues, natural
frequencies, damping ratios and mode shapes.

Everything here is a pure function of the parameters, so it jits, vmaps (eigenvalues of
thousands of parameter sets in one call) and differentiates (eigenvalues as functions of
the parameters, for stability boundaries and design optimisation).

The linearisation chart
-----------------------
A perturbation of the redundant state (q, v) is written in velocity space with global
axes: dx (n_vel,) moves the coordinates to q (+) dx (a vector increment for planar
bodies, particles and extra coordinates; a rotation vector about the GLOBAL axes for a
spatial body's orientation), and du (n_vel,) is the perturbation of the velocities
expressed in global axes (the angular velocity of a spatial body in global axes). For a
reference motion (q*(t), v*(t)) through the operating point, the perturbation obeys

    d(dx)/dt = du + Omega* x dphi      (the second term only for turning spatial bodies)
    d(du)/dt = (global accelerations at the perturbed state) - (those at the reference)

whose Jacobian at (dx, du) = 0 is the full linearisation. At an equilibrium it is the
linearisation of the vector field; along a steady motion it is time-invariant when the
reference motion is a translation together with spins of bodies about body-fixed axes of
symmetry (wheels rolling straight, a sleeping top), which is what the global-axes chart
is chosen for. (For other steady motions, e.g. a vehicle in a steady turn, it is the
linearisation at the instant t: `linearize(..., about="any")`, since their global-axes
accelerations do not vanish; by default `linearize` refuses an operating point whose
accelerations do not vanish, see its `about`.)

The constraints restrict (dx, du) to a subspace: Phi_q dx = 0 (holonomic rows) and the
linearised velocity constraints (all rows, nonholonomic ones included). Its coordinates
are chosen by coordinate partitioning: n_p independent position entries z of dx and n_w
independent velocity entries w of du (n_w < n_p with nonholonomic rows); every other
entry is a linear function of them. The reduced state is x = (z, w) and

    x' = A x + B du_controls,   y = C x + D du_controls,
    dq ~ Tq x,  dv ~ Tv x       (first-order map back to the redundant coordinates).

Units: SI; state entries in m, rad (positions) and m/s, rad/s (velocities).
"""
from .chart import chart_names
from .equilibrium import equilibrium
from .linearize import linearize
from .modes import animate_mode, mode_motion, modes
from .results import EquilibriumResult, LinearModel, Modes

__all__ = ["LinearModel", "Modes", "EquilibriumResult", "equilibrium", "linearize", "modes",
           "chart_names", "mode_motion", "animate_mode"]
