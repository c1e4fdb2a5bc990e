"""Mechanisms shared by the tests: the canonical ones of `jaxmbs.zoo`, and the kitchen sink
(one of everything, for Jacobian and gamma identities)."""

import jaxmbs as mb
from jaxmbs.zoo import (  # noqa: F401
    double_pendulum,
    four_bar,
    four_bar_model,
    four_bar_moving,
    four_bar_points,
    slider_crank,
)


def kitchen_sink():
    """One of everything: bodies with offset CGs, a particle, every joint family, drivers
    with every profile type, a user constraint, springs, a torsion spring, loads, a user force.
    Not meant to be assemblable: used for Jacobian/gamma identities at arbitrary (q, v, t)."""
    import jax.numpy as jnp

    m = mb.Model(gravity=(0.3, -9.81))
    m.add_body("a", mass=1.2, inertia=0.1, position=(0.1, 0.2), angle=0.3, cg=(0.05, -0.02))
    m.add_body("b", mass=0.7, inertia=0.05, position=(0.8, -0.1), angle=-0.4, cg=(0.1, 0.03))
    m.add_body("c", mass=0.4, inertia=0.02, position=(1.3, 0.4), angle=1.1)
    m.add_body("d", mass=0.9, inertia=0.03, position=(0.4, 1.0), angle=0.2, cg=(-0.03, 0.01))
    m.add_particle("p", mass=0.3, position=(1.5, 1.2))
    m.add_revolute("r1", "ground", "a", at=(0.0, 0.0))
    m.add_revolute("r2", "a", "b", at=(0.5, 0.1))
    m.add_revolute("r3", "c", "p", at=(1.5, 1.2))
    m.add_prismatic("pr", "b", "c", axis=(0.6, 0.8), at=(1.0, 0.2))
    m.add_weld("w", "ground", "d", at=(0.4, 0.9))
    m.add_distance("rod", "a", "p", at_i=(0.2, 0.3), at_j=(1.5, 1.2))
    m.add_distance("act", "b", "d", at_i=(0.9, 0.0), at_j=(0.4, 1.1), length=mb.sinusoid(0.1, 3.0, 0.2, 1.2))
    m.add_point_on_line("pol", "ground", "p", axis=(1.0, 0.3), at=(0.0, 1.0), point_j=(0.0, 0.0))
    m.drive_joint("dr1", "r2", mb.polynomial([0.1, 0.5, -0.2, 0.05]))
    m.drive_joint("dr2", "pr", lambda t: 0.1 * jnp.cos(2.0 * t) + 0.02 * t**2)
    m.drive_coordinate("dx", "c", "x", mb.constant_velocity(0.3, 1.0))
    m.drive_coordinate("dth", "a", "theta", mb.sinusoid(0.2, 1.5))
    m.drive_angle("da", "c", mb.constant(0.7), relative_to="b")
    m.add_constraint("uc", lambda q, t, p: jnp.array([q[0] * q[4] - p[0] * jnp.sin(q[5] + t)]), params=[0.4])
    m.add_spring("s1", "a", "c", k=50.0, c=2.0, at_i=(0.0, 0.2), at_j=(1.3, 0.5), force=1.0)
    m.add_spring("s2", "ground", "p", k=20.0, c=0.0, length=0.5, at_i=(2.0, 2.0), at_j=(1.5, 1.2))
    m.add_torsion_spring("ts", "a", "b", k=3.0, c=0.1, torque=0.2)
    m.add_load("f1", "b", force=(1.0, -2.0), torque=0.3, at=(0.9, 0.0))
    m.add_load("f2", "c", force=(0.0, 1.0), local=True, control=0)
    m.add_load("f3", "a", fn=lambda t: jnp.array([jnp.sin(t), 0.5, 0.1 * t]))
    m.add_force("uf", lambda q, v, t, u: -0.1 * v)
    return m.build()
