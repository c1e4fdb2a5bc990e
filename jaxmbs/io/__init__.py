"""Model files (versioned JSON) and the import of MuJoCo (MJCF) and URDF models."""
from ._mujoco import MujocoImportWarning
from .compare import compare_with_mujoco
from .files import FORMAT, VERSION, load_model, model_from_dict, model_to_dict, save_model
from .mjcf import from_mjcf, from_urdf

__all__ = ["save_model", "load_model", "model_to_dict", "model_from_dict", "FORMAT", "VERSION",
           "from_mjcf", "from_urdf", "compare_with_mujoco", "MujocoImportWarning"]
