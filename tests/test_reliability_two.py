"""Reliability, round two: the energy check of blown-up runs, linearisation away from an
equilibrium, quaternions in q0 and the validation of the option classes."""
import numpy as np
import pytest

import jaxmbs as mb
from jaxmbs.integrators import GeneralizedAlpha
from jaxmbs.simulation import ENERGY_TOL


def arm(angle=0.0, *, damping=0.0, torque=0.0):
    """A uniform 1 m, 1 kg rod pinned to the ground at the origin, at `angle` (rad) from
    the +x axis; an optional viscous damper (N m s/rad) and constant torque (N m) on it."""
    m = mb.Model(gravity=(0.0, -9.81))
    m.add_body("arm", mass=1.0, inertia=1.0 / 12.0,
               position=(0.5 * np.cos(angle), 0.5 * np.sin(angle)), angle=angle)
    m.add_revolute("O", "ground", "arm", at=(0.0, 0.0))
    if damping:
        m.add_torsion_spring("damper", "ground", "arm", k=0.0, c=damping)
    if torque:
        m.add_load("motor", "arm", torque=torque)
    return m.build()


# ------------------------------------------------------------------ the energy check
def test_blown_up_run_scores_far_above_the_energy_tolerance():
    """Generalized-alpha at 0.5 s steps on a pendulum released 45 degrees below the
    horizontal (its period is 1.6 s) blows up: the arm spins at hundreds of rad/s. The
    measure was bounded by about 1 (the kinetic energy and the work of the constraint
    forces the error produced were counted in the energy exchanged); it now divides by
    what the initial state can exchange (1.4 J of potential energy) and exceeds the
    tolerance a hundredfold."""
    mech, params, q0, v0 = arm(-np.pi / 4)
    tr = mb.simulate(mech, params, q0, v0, (0.0, 5.0), 0.5, integrator=GeneralizedAlpha())
    assert float(np.max(np.asarray(tr.kinetic))) > 100.0  # (the blow-up: T(t0) = 0, 3.5 J at most)
    assert float(tr.energy_error()) > 100 * ENERGY_TOL, float(tr.energy_error())
    assert int(tr.status) & mb.status.ENERGY


@pytest.mark.parametrize("case", ["pendulum", "slider-crank driven", "torque", "damped"])
def test_healthy_runs_score_far_below_the_energy_tolerance(case):
    """Accurate RK4 runs: a pendulum, the slider-crank driven at 150 rad/s (its motor does
    work), a pendulum driven by a constant torque and a damped one: the balance error is
    at truncation-error level, far below the tolerance, and no ENERGY flag."""
    built, dt, t1 = {"pendulum": (mb.zoo.pendulum(), 1e-2, 1.0),
                     "slider-crank driven": (mb.zoo.slider_crank(), 2e-4, 0.04),
                     "torque": (arm(torque=5.0), 1e-2, 1.0),
                     "damped": (arm(damping=0.5), 1e-2, 1.0)}[case]
    mech, params, q0, v0 = built
    s0 = mb.assemble(mech, params, q0, v0)
    tr = mb.simulate(mech, params, s0.q, s0.v, (0.0, t1), dt)
    assert int(tr.status) == 0, mb.status.describe(tr.status)
    if case != "pendulum":  # (work done on the system: motor, torque, damper)
        assert float(np.max(np.abs(np.asarray(tr.work)))) > 0.1
    assert float(tr.energy_error()) < 1e-3 * ENERGY_TOL, float(tr.energy_error())

