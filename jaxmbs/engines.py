"""Engine balance of planar crank trains: see `jaxmbs.planar.engines` (kept importable as
`jaxmbs.engines`)."""
import sys as _sys

from .planar import engines as _engines

_sys.modules[__name__] = _engines
