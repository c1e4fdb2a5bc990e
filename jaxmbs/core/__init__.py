"""The dimension-free core: family protocols and registry (`jaxmbs.core.families`).

Nothing under jaxmbs.core, nor the engine modules built on it (equations, saddle,
integrators, stabilize, dynamics, simulate, analysis, fitting, envs), imports the planar
or spatial packages: they register their families here.
"""
from . import families

__all__ = ["families"]
