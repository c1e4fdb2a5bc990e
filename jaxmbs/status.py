"""Per-instance status codes (bit flags): failures are data, not exceptions.

Every result that can fail carries an int32 `status` (one per batch member): 0 is ok, any
other value is an OR of the flags of `Status`. `describe(code)` says in words what a code
means; `Status(int(code))` gives the flags as an `enum.IntFlag`.

    tr = jaxmbs.simulate(...)
    if tr.status:
        print(jaxmbs.status.describe(tr.status))   # e.g. "constraint drift above tolerance"
    failed = (trs.status & jaxmbs.status.SINGULAR) != 0   # batch members that hit a singularity
"""
import enum

import numpy as np

__all__ = ["Status", "describe", "OK", "SINGULAR", "NEWTON_FAILED", "NONFINITE", "MAX_STEPS",
           "DRIFT", "ENERGY", "PARAMS", "UNSTEADY"]


class Status(enum.IntFlag):
    """The status flags (an int subclass: they combine with `|` and test with `&`, also
    against JAX and NumPy integer arrays)."""

    OK = 0
    SINGULAR = 1  # a dependent constraint row contradicts the rows it depends on (a singular
    # configuration; redundant but consistent rows are dropped by SchurCholesky, not flagged)
    NEWTON_FAILED = 2  # assembly / projection Newton iterations did not converge
    NONFINITE = 4  # state became NaN/inf; the instance was frozen at its last finite state
    MAX_STEPS = 8  # adaptive integrator ran out of its static step budget before t1
    DRIFT = 16  # constraint residual exceeded the drift tolerance
    ENERGY = 32  # energy balance violated: kinetic + potential - work changed by more than
    # energy_tol of the energy exchanged (an unstable or badly inaccurate integration)
    PARAMS = 64  # invalid parameters (traced input): a value not finite, a mass or inertia
    # not positive, a spatial inertia tensor not positive definite... (concrete input raises
    # ValueError instead; see jaxmbs.core.validate)
    UNSTEADY = 128  # linearize: the operating point is neither an equilibrium nor a steady
    # motion (its residual acceleration is above tolerance; traced input: concrete input
    # raises ValueError instead; about="any" accepts it)


OK, SINGULAR, NEWTON_FAILED, NONFINITE = Status.OK, Status.SINGULAR, Status.NEWTON_FAILED, Status.NONFINITE
MAX_STEPS, DRIFT, ENERGY, PARAMS = Status.MAX_STEPS, Status.DRIFT, Status.ENERGY, Status.PARAMS
UNSTEADY = Status.UNSTEADY

_WORDS = {SINGULAR: "singular saddle matrix", NEWTON_FAILED: "Newton not converged",
          NONFINITE: "non-finite state", MAX_STEPS: "step budget exhausted",
          DRIFT: "constraint drift above tolerance",
          ENERGY: "energy balance violated (unstable or inaccurate integration)",
          PARAMS: "invalid parameters (non-finite, mass or inertia not positive, ...)",
          UNSTEADY: "operating point not an equilibrium or steady motion (residual acceleration)"}


def describe(code) -> str:
    """Human-readable description of one status code (an int or a 0-d array): "ok", or the
    meanings of its flags joined by ", "."""
    code = int(np.asarray(code))
    if code == OK:
        return "ok"
    return ", ".join(v for k, v in _WORDS.items() if code & k)
