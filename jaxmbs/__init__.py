"""jaxmbs: constrained multibody dynamics in redundant coordinates, in pure JAX.

Build a mechanism with `Model` (planar) or `SpatialModel` (3D), then assemble, analyse and
simulate it with pure functions that compose with `jax.jit`, `jax.vmap` and `jax.grad`.
"""
from importlib.metadata import PackageNotFoundError as _PackageNotFoundError
from importlib.metadata import version as _version

from . import profiles, status, zoo
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
from .batch.vectorize import batch_vectorization, simulate_batch
from .core.dynamics import Accelerations, accelerations
from .core.equations import constraint_terms, force_outputs, generalized_forces, mass_matrix
from .core.mechanism import Built, Mechanism, Params
from .core.stabilize import Baumgarte, NoStabilization, Projection, project
from .formulations import (
    AugmentedLagrangian,
    CoordinatePartitioning,
    DenseLU,
    NullSpace,
    SchurCholesky,
    TreeSchur,
    UdwadiaKalaba,
)
from .integrators import (
    RK4,
    DormandPrince5,
    DormandPrince8,
    Euler,
    ExplicitRK,
    GeneralizedAlpha,
    HHTAlpha,
    IController,
    PIController,
    Rattle,
    SemiImplicitEuler,
)
from .linear import EquilibriumResult, LinearModel, Modes, equilibrium, linearize, modes
from .planar import curves
from .planar.builder import Model
from .profiles import constant, constant_velocity, polynomial, sinusoid
from .simulation import Trajectory, simulate
from .spatial import SpatialModel

# isort: off
# (the family registry's order is the import order: planar and spatial first, then the
# beam and floating-frame families)
from .flexible import ancf as _ancf  # noqa: F401
from .flexible import ancf3d as _ancf3d  # noqa: F401
from .flexible import reissner as _reissner  # noqa: F401
from .flexible import ffr as _ffr  # noqa: F401
# (families added after these: joint limits)
from .spatial import limits as _limits  # noqa: F401
# isort: on

# isort: split
from . import fitting, io
from .io import MujocoImportWarning, compare_with_mujoco, from_mjcf, from_urdf, load_model, save_model

try:
    __version__ = _version("jaxmbs")
except _PackageNotFoundError:  # (running from a source tree that is not installed)
    __version__ = "0+unknown"

__all__ = [
    "Model", "SpatialModel", "Built", "Mechanism", "Params",
    "assemble", "kinematics", "inverse_dynamics", "reactions", "energy", "dof",
    "constraint_report", "accelerations", "simulate", "simulate_batch", "batch_vectorization",
    "Trajectory",
    "constraint_terms", "mass_matrix", "generalized_forces", "force_outputs",
    "RK4", "SemiImplicitEuler", "Euler", "DormandPrince5", "DormandPrince8", "ExplicitRK",
    "IController", "PIController", "GeneralizedAlpha", "HHTAlpha", "Rattle",
    "NullSpace", "CoordinatePartitioning", "UdwadiaKalaba", "AugmentedLagrangian",
    "Baumgarte", "Projection", "NoStabilization", "project",
    "SchurCholesky", "TreeSchur", "DenseLU",
    "constant", "constant_velocity", "polynomial", "sinusoid", "profiles", "status", "curves", "zoo",
    "Accelerations", "AssemblyResult", "Kinematics", "InverseDynamics",
    "run_batch", "load_batch", "shard_batch", "batch_mesh",
    "io", "save_model", "load_model",
    "from_mjcf", "from_urdf", "compare_with_mujoco", "MujocoImportWarning",
    "fitting",
    "equilibrium", "linearize", "modes", "EquilibriumResult", "LinearModel", "Modes",
]
