"""Mechanisms shared by the tests (built with jaxmbs's own bodies, joints and forces)."""
import numpy as np

import jaxmbs as mb


def double_pendulum(g=9.81):
    """Two uniform 1 kg, 1 m rods pinned in series to the ground, released horizontal."""
    m = mb.Model(gravity=(0.0, -g))
    m.add_body("l1", mass=1.0, inertia=1 / 12, position=(0.5, 0.0))
    m.add_body("l2", mass=1.0, inertia=1 / 12, position=(1.5, 0.0))
    m.add_revolute("O", "ground", "l1", at=(0.0, 0.0))
    m.add_revolute("A", "l1", "l2", at=(1.0, 0.0))
    return m.build()


def slider_crank(omega=150.0, driven=True):
    """docs/reference_problems.md §2: crank 0.15 m, rod 0.30 m, crank driven at omega (rad/s)."""
    L1, L2 = 0.15, 0.30
    M1, J1p, M2, J2e, M3 = 0.36, 0.002727, 0.151104, 0.0045339259, 0.075552
    m = mb.Model(gravity=(0.0, 0.0))
    # crank CG at L1/2 (the Test Set's choice; the source gives J1 about the pivot only)
    m.add_body("crank", mass=M1, inertia=J1p - M1 * (L1 / 2) ** 2, position=(0.0, 0.0),
               cg=(L1 / 2, 0.0), angular_velocity=0.0 if driven else omega)
    m.add_body("rod", mass=M2, inertia=J2e - M2 * (L2 / 2) ** 2, position=(L1 + L2 / 2, 0.0))
    m.add_body("slider", mass=M3, inertia=1e-4, position=(L1 + L2, 0.0))
    m.add_revolute("O", "ground", "crank", at=(0.0, 0.0))
    m.add_revolute("A", "crank", "rod", at=(L1, 0.0))
    m.add_revolute("B", "rod", "slider", at=(L1 + L2, 0.0))
    m.add_prismatic("P", "ground", "slider", axis=(1.0, 0.0), at=(L1 + L2, 0.0))
    if driven:
        m.drive_joint("motor", "O", mb.constant_velocity(omega))
    built = m.build()
    if driven:
        return built
    mech, params, q0, v0 = built
    res = mb.assemble(mech, params, q0, v0, fixed=("crank.theta",) + ("crank.x", "crank.y"))
    return mb.Built(mech, params, res.q, res.v)


def four_bar_points(crank_angle=np.pi / 3):
    """Crank-rocker geometry: pivots O = (0,0), D = (0.5,0); crank 0.2, coupler 0.6, rocker
    0.5 m. Returns the pins (A, B, D) with the loop closed exactly (circle intersection)."""
    a, b, c, d = 0.2, 0.6, 0.5, 0.5
    A = np.array([a * np.cos(crank_angle), a * np.sin(crank_angle)])
    D = np.array([d, 0.0])
    r = np.linalg.norm(D - A)
    x = (b**2 - c**2 + r**2) / (2 * r)
    h = np.sqrt(b**2 - x**2)
    e = (D - A) / r
    B = A + x * e + h * np.array([-e[1], e[0]])
    return A, B, D


def four_bar_model(crank_angle=np.pi / 3, gravity=9.81):
    """The crank-rocker of `four_bar` as an unbuilt Model (1 kg/m uniform bars), so that
    tests can add forces; returns (model, A, B, D)."""
    A, B, D = four_bar_points(crank_angle)
    m = mb.Model(gravity=(0.0, -gravity))

    def bar(name, P, Q):
        L = np.linalg.norm(Q - P)
        m.add_body(name, mass=L, inertia=L**3 / 12, position=(P + Q) / 2,
                   angle=np.arctan2(*(Q - P)[::-1]))

    bar("crank", np.zeros(2), A)
    bar("coupler", A, B)
    bar("rocker", D, B)
    m.add_revolute("O", "ground", "crank", at=(0.0, 0.0))
    m.add_revolute("A", "crank", "coupler", at=A)
    m.add_revolute("B", "coupler", "rocker", at=B)
    m.add_revolute("D", "ground", "rocker", at=D)
    return m, A, B, D


def four_bar(crank_angle=np.pi / 3, gravity=9.81):
    """Crank-rocker: pivots (0,0), (0.5,0); crank 0.2, coupler 0.6, rocker 0.5; 1 kg/m bars.

    Returns (mech, params, q_guess, v0) with q_guess only roughly closed: assemble it.
    """
    return four_bar_model(crank_angle, gravity)[0].build()


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
