"""RATTLE's energy error over a long run of the double pendulum (issue 17).

    python benchmarks/rattle_long.py [--steps 1000000] [--dt 1e-3] [--every 100]

Prints the statistics of tests/problems17.py::energy_trend of E - E0 (saved every
`every` steps): the largest |E - E0| (J) in the first and last tenth of the run, the
mean of E - E0 there, the change of a straight-line fit over the run against the
scatter (std) of the error, and the largest |Phi| -- what
tests/test_integrators_implicit.py::test_rattle_energy_bounded_million_steps asserts.
"""
import argparse
import os
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
from mechanisms import double_pendulum  # noqa: E402
from problems17 import energy_trend  # noqa: E402

import jaxmbs as mb  # noqa: E402


def run(steps, dt=1e-3, every=100):
    """(energy_trend statistics, max |Phi|, status, wall s) of `steps` RATTLE steps."""
    mech, params, q0, v0 = double_pendulum()
    t0 = time.perf_counter()
    tr = mb.simulate(mech, params, q0, v0, (0.0, steps * dt), dt, save_every=every,
                     integrator=mb.Rattle(), stabilizer=mb.NoStabilization())
    E = np.asarray(tr.energy)
    wall = time.perf_counter() - t0
    return (energy_trend(np.asarray(tr.t), E - E[0]), float(np.max(np.asarray(tr.constraint_error))),
            int(tr.status), wall)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--dt", type=float, default=1e-3)
    ap.add_argument("--every", type=int, default=100)
    a = ap.parse_args()
    s, phi, status, wall = run(a.steps, a.dt, a.every)
    print(f"{a.steps} RATTLE steps of {a.dt:g} s (saved every {a.every}), status {status}, "
          f"wall {wall:.0f} s (incl. compile)")
    print(f"|E - E0| max: first tenth {s['first_max']:.3e} J, last tenth {s['last_max']:.3e} J, "
          f"whole run {s['max']:.3e} J; mean first/last tenth {s['first_mean']:.2e} / {s['last_mean']:.2e} J")
    print(f"linear trend over the run {s['trend']:.3e} J (std of the error {s['std']:.3e} J); "
          f"max |Phi| {phi:.1e}")


if __name__ == "__main__":
    main()
