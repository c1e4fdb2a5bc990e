"""Spatial (3D) rigid bodies: quaternion node family, body, constraint and force
families, and the `SpatialModel` builder."""
from . import families, forces, geometry
from .builder import SpatialModel

__all__ = ["SpatialModel", "families", "forces", "geometry"]
