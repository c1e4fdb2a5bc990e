"""Parameter identification: fit `Params` to measured motion.

Two routes:

* **Output error (gradient fit).** Simulate with trial parameters, compare chosen outputs
  with measurements at the measurement times, and minimise the weighted least-squares
  loss with optax (L-BFGS with its zoom line search, or Adam), gradients by `jax.grad`
  through the whole simulation. Any `Params` entry can be fitted; positivity and bounds
  are handled by re-parametrisation. Multi-start runs a vmapped batch of initial guesses.
  At the optimum a Gauss-Newton covariance and an identifiability report (rank of the
  Fisher information, which parameter combinations cannot be separated).

* **Equation error (linear regressor).** The equations of motion are linear in the
  inertial parameters of each body, (m, m c_x, m c_y, J_ref) with c the CG in body
  coordinates and J_ref = J_G + m |c|^2 the inertia about the body's reference point
  (and in stiffness and damping coefficients). With measured motion (q, v, a) and
  measured or known forces, the parameters follow from linear least squares on a
  regressor matrix, which is obtained here by `jax.jacfwd` of the engine's own equations
  of motion (mass matrix, generalized forces, constraint Jacobian).

Example (see examples/fit_parameters.py and notebooks/fitting.ipynb)::

    from jaxmbs import fitting as fit
    outputs = [fit.coordinate("crank.theta"), fit.point("slider")]
    data = fit.synthetic(mech, params_true, traj_true, outputs, times, rel_noise=0.01, key=key)
    tr = fit.Trainable(mech, params_guess, ["crank.mass", "spring.k", "spring.c"])
    prob = fit.Problem(mech, tr, q0, v0, (0.0, 2.0), 2e-3, data, save_every=10)
    res = fit.fit(prob)                  # L-BFGS
    res.values                           # {'crank.mass': ..., ...}
    rep = fit.analyze(prob, res.theta)   # covariance + identifiability
    print(rep.summary())

Loss convention: residuals r = (simulated - measured) / sigma, stacked over all
measurements; loss = 0.5 * mean(r^2) (about 0.5 at the optimum when sigma is the true
noise level). The Gauss-Newton Fisher information is J^T J with J = dr/dtheta (that is,
J^T W J with W = 1/sigma^2 for the unweighted residuals).
"""

from .identifiability import Analysis, analyze, covariance, identifiability, jacobian_report
from .optimize import FitResult, fit, random_starts
from .outputs import (
    Measurement,
    Output,
    align,
    angle,
    coordinate,
    evaluate_outputs,
    loss,
    point,
    reaction,
    residuals,
    synthetic,
    velocity,
)
from .problem import Problem, Trainable, default_transform
from .regressor import (
    LinearFit,
    Regressor,
    inertial_labels,
    inertial_parameters,
    inertial_regressor,
    linear_regressor,
    params_from_inertial,
    regressor,
    solve_linear,
    trajectory_motion,
)

__all__ = [
    "Output",
    "coordinate",
    "velocity",
    "angle",
    "point",
    "reaction",
    "Measurement",
    "synthetic",
    "evaluate_outputs",
    "align",
    "residuals",
    "loss",
    "Trainable",
    "default_transform",
    "Problem",
    "FitResult",
    "fit",
    "random_starts",
    "Analysis",
    "analyze",
    "covariance",
    "identifiability",
    "jacobian_report",
    "Regressor",
    "LinearFit",
    "inertial_labels",
    "inertial_parameters",
    "params_from_inertial",
    "regressor",
    "inertial_regressor",
    "linear_regressor",
    "solve_linear",
    "trajectory_motion",
]
