"""Reliability, round two: the energy check of blown-up runs, linearisation away from an
equilibrium, quaternions in q0 and the validation of the option classes."""
import warnings

import jax
import jax.numpy as jnp
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



# ------------------------------------------------------- linearising off an equilibrium
def test_linearize_refuses_a_point_that_is_neither_an_equilibrium_nor_a_steady_motion():
    """A rod pendulum at rest 45 degrees from the vertical accelerates at
    3g/(2L) sin 45 = 10.4 rad/s^2: linearize said ok and gave +-3.23j (its true
    equilibrium: +-sqrt(3g/2L) = +-3.84j). It is refused, naming the residual
    acceleration; about="any" linearises it as it is, on request."""
    mech, params, q0, _ = arm(-np.pi / 4)
    z = jnp.zeros(mech.n_vel)
    with pytest.raises(ValueError, match=r"not an equilibrium.*arm\.theta = -10\.4"):
        mb.linearize(mech, params, q0, z)  # (default: about="steady")
    with pytest.raises(ValueError, match=r"not an equilibrium:.*arm\.theta = -10\.4"):
        mb.linearize(mech, params, q0, z, about="equilibrium")
    lin = mb.linearize(mech, params, q0, z, about="any")
    assert int(lin.status) == 0
    assert float(lin.acceleration[mech.coordinate_index("arm.theta")]) == pytest.approx(
        -1.5 * 9.81 * np.sin(np.pi / 4), rel=1e-12)
    w_any = np.abs(np.asarray(mb.modes(lin).eigenvalues))
    np.testing.assert_allclose(w_any, np.sqrt(1.5 * 9.81 * np.cos(np.pi / 4)), rtol=1e-9)
    eq = mb.equilibrium(mech, params, q0)
    lin = mb.linearize(mech, params, eq.q, z)
    assert int(lin.status) == 0
    np.testing.assert_allclose(np.abs(np.asarray(mb.modes(lin).eigenvalues)), np.sqrt(1.5 * 9.81),
                               rtol=1e-9)


def test_linearize_traced_flags_unsteady_members():
    """Traced (vmap over the release angle): the members off the equilibrium get status
    UNSTEADY, the one at it none; about="any" flags none."""
    mech, params, q0, _ = arm(-np.pi / 2)
    z = jnp.zeros(mech.n_vel)
    angles = jnp.array([-np.pi / 2, -np.pi / 4, 0.1])

    def state(a):
        return jnp.stack([0.5 * jnp.cos(a), 0.5 * jnp.sin(a), a])

    def lin(a, about):
        return mb.linearize(mech, params, state(a), z, about=about, coordinates=("arm.theta",)).status

    status = np.asarray(jax.vmap(lambda a: lin(a, "steady"))(angles))
    assert list(status) == [0, mb.status.UNSTEADY, mb.status.UNSTEADY]
    assert not np.any(np.asarray(jax.vmap(lambda a: lin(a, "any"))(angles)))


def test_linearize_about_equilibrium_needs_rest_and_about_is_checked():
    """A free body gliding at 1 m/s (no gravity) is a steady motion, not an equilibrium."""
    m = mb.Model(gravity=(0.0, 0.0))
    m.add_body("puck", mass=1.0, inertia=0.1, velocity=(1.0, 0.0))
    mech, params, q0, v0 = m.build()
    assert int(mb.linearize(mech, params, q0, v0).status) == 0
    with pytest.raises(ValueError, match="about='equilibrium' but the mechanism is not at rest"):
        mb.linearize(mech, params, q0, v0, about="equilibrium")
    with pytest.raises(ValueError, match="about must be one of"):
        mb.linearize(mech, params, q0, v0, about="steady motion")



# ------------------------------------------------------------------ quaternions in q0
def top():
    """A symmetric top (1 kg, CG 0.1 m above the tip) on a ball joint at the origin,
    upright; q: top.x, top.y, top.z, top.q0 .. top.q3."""
    m = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    m.add_body("top", mass=1.0, inertia=(2e-3, 2e-3, 4e-3), cg=(0.0, 0.0, 0.1),
               angular_velocity_body=(0.0, 0.0, 30.0))
    m.add_spherical("tip", "ground", "top", at=(0.0, 0.0, 0.0))
    return m.build()


def _with_quaternion(mech, q0, p):
    i = mech.coordinate_index("top.q0")
    return jnp.asarray(q0).at[i:i + 4].set(jnp.asarray(p, jnp.result_type(float)))


def test_zero_quaternion_is_refused_naming_the_body():
    """A zero quaternion ran to a non-finite status with no cause named: simulate,
    simulate_batch (naming the member) and assemble refuse it."""
    mech, params, q0, v0 = top()
    bad = _with_quaternion(mech, q0, [0.0, 0.0, 0.0, 0.0])
    msg = r"'top'.* needs a unit orientation quaternion.*top\.q0, top\.q1, top\.q2, top\.q3"
    with pytest.raises(ValueError, match="simulate: q0: " + msg):
        mb.simulate(mech, params, bad, v0, (0.0, 0.01), 1e-3)
    with pytest.raises(ValueError, match=r"simulate_batch: q0: 'top' \(batch member 1\)"):
        mb.simulate_batch(mech, params, jnp.stack([q0, bad]), jnp.stack([v0, v0]), (0.0, 0.01),
                          1e-3, params_axis=None, vectorize="vmap")
    with pytest.raises(ValueError, match="assemble: q: " + msg):
        mb.assemble(mech, params, bad)


def test_non_unit_quaternion_is_normalised_with_one_warning():
    """A quaternion of norm 1.1 was used as it is in the first step; it is normalised,
    with one warning per call (not per member) saying by how much."""
    mech, params, q0, v0 = top()
    i = mech.coordinate_index("top.q0")
    long = _with_quaternion(mech, q0, 1.1 * np.asarray(q0[i:i + 4]))
    with pytest.warns(UserWarning, match=r"simulate: q0: normalised .*'top': \|quaternion\| - 1 = 0\.1\b"):
        tr = mb.simulate(mech, params, long, v0, (0.0, 0.01), 1e-3)
    np.testing.assert_allclose(np.asarray(tr.q[0]), np.asarray(q0), atol=1e-15)
    assert int(tr.status) == 0
    batch = jnp.stack([long, q0, _with_quaternion(mech, q0, 0.5 * np.asarray(q0[i:i + 4]))])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        b = mb.simulate_batch(mech, params, batch, jnp.stack([v0] * 3), (0.0, 0.01), 1e-3,
                              params_axis=None, vectorize="vmap")
    mine = [w for w in caught if "normalised" in str(w.message)]
    assert len(mine) == 1, [str(w.message) for w in caught]
    assert "(member 2): |quaternion| - 1 = 0.5" in str(mine[0].message)
    np.testing.assert_allclose(np.asarray(b.q[:, 0]), np.stack([q0] * 3), atol=1e-15)
    with pytest.warns(UserWarning, match=r"assemble: q: normalised"):
        res = mb.assemble(mech, params, long)
    assert float(jnp.linalg.norm(res.q[i:i + 4])) == pytest.approx(1.0, abs=1e-14)


# ------------------------------------------------------------------ option validation
def _option_classes():
    """Every integrator and formulation of the registries, the step-size controllers and
    explicit methods outside them, and the stabilisers."""
    from jaxmbs.core import stabilize
    from jaxmbs.formulations.registry import FORMULATIONS
    from jaxmbs.integrators import runge_kutta
    from jaxmbs.integrators.controllers import IController, PIController
    from jaxmbs.integrators.registry import INTEGRATORS

    classes = [type(make()) for make in (*INTEGRATORS.values(), *FORMULATIONS.values())]
    classes += [runge_kutta.Euler, runge_kutta.ExplicitRK, IController, PIController, mb.TreeSchur]
    classes += [getattr(stabilize, name) for name in stabilize.__all__ if name[0].isupper()]
    return list(dict.fromkeys(classes))


# a value out of range for the option of that name, in every class that has it
OUT_OF_RANGE = {
    "rtol": -1.0, "atol": -1.0, "tol": -1.0, "max_steps": 0, "max_iter": 0, "iterations": -1,
    "unroll_max": -1, "refine": -1, "order": -1, "safety": 1.5, "min_factor": 0.0,
    "max_factor": 0.5, "h0": 0.0, "rho_inf": 2.0, "alpha": -1.0, "beta": -1.0, "ki": 0.0,
    "kp": float("inf"), "regularization": -1.0, "penalty": 0.0, "threshold": 0.0,
    "newton": "exact", "linear": "qr", "controller": object(), "a": ((), ("x",)), "b": (0.0, "x"),
    "c": (0.0, float("nan")), "unroll": 1, "peel_first_stage": 1, "adaptive": 1,
    "multipliers": 1, "step_rank": 1, "refactor": 1, "banded": 1, "plan": 3,
}
BASE = {"ExplicitRK": dict(a=((), (0.5,)), b=(0.0, 1.0), c=(0.0, 0.5), order=2)}


@pytest.mark.parametrize("cls", _option_classes(), ids=lambda c: c.__name__)
def test_every_option_refuses_an_invalid_value_at_construction(cls):
    """Each option of each integrator, controller, formulation and stabiliser refuses an
    out-of-range value, a string and NaN when the object is made, naming the class and
    the option (GeneralizedAlpha(max_iter=0) was accepted, to fail inside the run)."""
    import dataclasses

    base = BASE.get(cls.__name__, {})
    cls(**base)  # the defaults are valid
    fields = [f.name for f in dataclasses.fields(cls)]
    missing = [f for f in fields if f not in OUT_OF_RANGE]
    assert not missing, f"{cls.__name__}: no invalid value listed for {missing}"
    for name in fields:
        for bad in (OUT_OF_RANGE[name], "bogus", float("nan")):
            with pytest.raises(ValueError, match=rf"^{cls.__name__}: {name} must be "):
                cls(**{**base, name: bad})


def test_error_tolerances_cannot_both_vanish():
    from jaxmbs.integrators.runge_kutta import DormandPrince5

    for cls in (DormandPrince5, GeneralizedAlpha):
        with pytest.raises(ValueError, match="rtol and atol are both 0"):
            cls(rtol=0.0, atol=0.0)
        cls(rtol=0.0, atol=1e-9)
