"""RATTLE's energy error over a long run of the double pendulum (issue 17).

    python benchmarks/rattle_long.py [--steps 1000000] [--dt 1e-3]

Prints the largest |E - E0| (J) in the first and last tenth of the run, the change of a
straight-line fit of E - E0 over the run, and the largest |Phi| (what
tests/test_integrators_implicit.py::test_rattle_energy_bounded_million_steps asserts).
"""
import argparse
import os
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
import jaxmbs as mb  # noqa: E402
from mechanisms import double_pendulum  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--dt", type=float, default=1e-3)
    a = ap.parse_args()
    mech, params, q0, v0 = double_pendulum()
    t0 = time.perf_counter()
    tr = mb.simulate(mech, params, q0, v0, (0.0, a.steps * a.dt), a.dt, save_every=1000,
                     integrator=mb.Rattle(), stabilizer=mb.NoStabilization())
    E = np.asarray(tr.energy)
    wall = time.perf_counter() - t0
    err = E - E[0]
    k = len(err) // 10
    t = np.asarray(tr.t)
    slope = np.polyfit(t, err, 1)[0]
    print(f"{a.steps} RATTLE steps of {a.dt:g} s, status {int(tr.status)}, wall {wall:.0f} s (incl. compile)")
    print(f"|E - E0| max: first tenth {np.max(np.abs(err[1:k])):.3e} J, last tenth {np.max(np.abs(err[-k:])):.3e} J, "
          f"whole run {np.max(np.abs(err)):.3e} J (E0 = {E[0]:.6f} J)")
    print(f"linear trend over the run {slope * (t[-1] - t[0]):.3e} J (std of the error {np.std(err):.3e} J); "
          f"max |Phi| {float(np.max(np.asarray(tr.constraint_error))):.1e}")


if __name__ == "__main__":
    main()
