"""Per-instance status codes (bit flags): failures are data, not exceptions."""
import numpy as np

OK = 0
SINGULAR = 1  # singular configuration: a dependent constraint row contradicts the rows it
# depends on (redundant but consistent rows are dropped by SchurCholesky, not flagged)
NEWTON_FAILED = 2  # assembly / projection Newton iterations did not converge
NONFINITE = 4  # state became NaN/inf; the instance was frozen at its last finite state
MAX_STEPS = 8  # adaptive integrator ran out of its static step budget before t1
DRIFT = 16  # constraint residual exceeded the drift tolerance
ENERGY = 32  # energy balance violated: kinetic + potential - work changed by more than
# energy_tol of the energy exchanged (an unstable or badly inaccurate integration)
PARAMS = 64  # invalid parameters (traced input): a value not finite, a mass or inertia not
# positive, a spatial inertia tensor not positive definite... (concrete input raises
# ValueError instead; see jaxmbs.core.validate)

_NAMES = {SINGULAR: "singular saddle matrix", NEWTON_FAILED: "Newton not converged",
          NONFINITE: "non-finite state", MAX_STEPS: "step budget exhausted",
          DRIFT: "constraint drift above tolerance",
          ENERGY: "energy balance violated (unstable or inaccurate integration)",
          PARAMS: "invalid parameters (non-finite, mass or inertia not positive, ...)"}


def describe(code) -> str:
    """Human-readable description of a status code (int)."""
    code = int(np.asarray(code))
    if code == OK:
        return "ok"
    return ", ".join(v for k, v in _NAMES.items() if code & k)
