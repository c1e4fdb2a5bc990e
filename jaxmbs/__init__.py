"""jaxmbs: constrained multibody dynamics in redundant coordinates, in pure JAX.

Build a mechanism with `Model`, then assemble, analyse and simulate it with pure
functions that compose with `jax.jit`, `jax.vmap` and `jax.grad`.
"""
from . import checks, io, profiles, status
from .analysis import (
    AssemblyResult,
    InverseDynamics,
    Kinematics,
    assemble,
    constraint_report,
    dof,
    energy,
    inverse_dynamics,
    kinematics,
    reactions,
)
from .batch import batch_mesh, load_batch, run_batch, shard_batch
from .dynamics import Accelerations, accelerations
from .elementwise import elementwise_vmap
from .equations import constraint_terms, force_outputs, generalized_forces, mass_matrix
from .integrators import (RK4, DormandPrince5, DormandPrince8, Euler, ExplicitRK, IController,
                          PIController, SemiImplicitEuler)
from .implicit import GeneralizedAlpha, HHTAlpha, Rattle
from .formulations import AugmentedLagrangian, CoordinatePartitioning, NullSpace, UdwadiaKalaba
from .linear import EquilibriumResult, LinearModel, Modes, equilibrium, linearize, modes
from .mechanism import Mechanism, Params, State
from .io import load_model, save_model
from .importers import MujocoImportWarning, compare_with_mujoco, from_mjcf, from_urdf
from .model import Built, Model
from .profiles import constant, constant_velocity, polynomial, sinusoid
from .planar import curves
from .spatial import SpatialModel
from .flexible import ancf as _ancf  # noqa: F401  registers the ANCF beam families (after planar and spatial)
from .flexible import ancf3d as _ancf3d  # noqa: F401  registers the spatial ANCF cable families
from .flexible import reissner as _reissner  # noqa: F401  registers the shear-deformable planar beam families
from .flexible import ffr as _ffr  # noqa: F401  registers the floating-frame (modal) body families
from .saddle import DenseLU, SchurCholesky
from .simulate import Trajectory, batch_vectorization, simulate_batch
from . import simulate  # the module, callable as the function simulate (see its docstring)
from .stabilize import Baumgarte, NoStabilization, Projection, project
from . import fitting  # after the engine modules it builds on

__version__ = "0.1.0"

__all__ = [
    "Model", "SpatialModel", "Built", "Mechanism", "Params", "State",
    "assemble", "kinematics", "inverse_dynamics", "reactions", "energy", "dof",
    "constraint_report", "accelerations", "simulate", "simulate_batch", "batch_vectorization", "Trajectory",
    "elementwise_vmap",
    "constraint_terms", "mass_matrix", "generalized_forces", "force_outputs",
    "RK4", "SemiImplicitEuler", "Euler", "DormandPrince5", "DormandPrince8", "ExplicitRK", "IController", "PIController",
    "GeneralizedAlpha", "HHTAlpha", "Rattle",
    "NullSpace", "CoordinatePartitioning", "UdwadiaKalaba", "AugmentedLagrangian",
    "Baumgarte", "Projection", "NoStabilization", "project",
    "SchurCholesky", "DenseLU",
    "constant", "constant_velocity", "polynomial", "sinusoid", "profiles", "status", "curves",
    "Accelerations", "AssemblyResult", "Kinematics", "InverseDynamics",
    "run_batch", "load_batch", "shard_batch", "batch_mesh",
    "io", "save_model", "load_model", "checks",
    "from_mjcf", "from_urdf", "compare_with_mujoco", "MujocoImportWarning",
    "fitting",
    "equilibrium", "linearize", "modes", "EquilibriumResult", "LinearModel", "Modes",
]
