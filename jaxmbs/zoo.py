"""Canonical mechanisms, built with jaxmbs's own bodies, joints and forces.

One definition of each textbook mechanism, shared by the tests, the benchmarks, the CLI,
the environments and the examples. Every function returns what `Model.build()` returns,
`(mech, params, q0, v0)` (a `jaxmbs.Built`), unless it says otherwise. SI units: m, kg,
kg m^2, s, rad.

    mech, params, q0, v0 = jaxmbs.zoo.double_pendulum()
    mech, params, q0, v0 = jaxmbs.zoo.slider_crank(omega=150.0)       # driven at 150 rad/s
    mech, params, q0, v0 = jaxmbs.zoo.chain(16)                       # 16 links
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["pendulum", "double_pendulum", "slider_crank", "SLIDER_CRANK", "SliderCrankData",
           "four_bar", "four_bar_model", "four_bar_points", "four_bar_moving", "chain"]


def _model(gravity):
    from .planar.builder import Model
    return Model(gravity=gravity)


def pendulum(length=1.0, mass=1.0, g=9.81):
    """A particle 'bob' of `mass` (kg) at (length, 0) on a massless rod 'rod' (a distance
    constraint) to the ground point (0, 0): released horizontal, at rest."""
    m = _model((0.0, -g))
    m.add_particle("bob", mass=mass, position=(length, 0.0))
    m.add_distance("rod", "ground", "bob", at_i=(0.0, 0.0), at_j=(length, 0.0))
    return m.build()


def double_pendulum(g=9.81, *, length=1.0, mass=1.0, names=("l1", "l2")):
    """Two uniform rods of `length` (m) and `mass` (kg) pinned in series to the ground
    (revolutes 'O' at the origin and 'A' between the rods), released horizontal along +x,
    at rest. `names`: the two bodies' names."""
    upper, lower = names
    m = _model((0.0, -g))
    inertia = mass * length**2 / 12.0
    m.add_body(upper, mass=mass, inertia=inertia, position=(length / 2, 0.0))
    m.add_body(lower, mass=mass, inertia=inertia, position=(1.5 * length, 0.0))
    m.add_revolute("O", "ground", upper, at=(0.0, 0.0))
    m.add_revolute("A", upper, lower, at=(length, 0.0))
    return m.build()


class SliderCrankData(NamedTuple):
    """The slider-crank of docs/reference_problems.md §2 (Simeon's "crank" problem, rigid
    variant)."""
    L1: float = 0.15  # crank length, m
    L2: float = 0.30  # connecting-rod length, m
    M1: float = 0.36  # crank mass, kg
    J1: float = 0.002727  # crank inertia about the pivot, kg m^2
    M2: float = 0.151104  # rod mass, kg
    J2: float = 0.0045339259  # rod inertia about its crank-pin end, kg m^2
    M3: float = 0.075552  # slider mass, kg
    OMEGA: float = 150.0  # crank speed, rad/s


SLIDER_CRANK = SliderCrankData()


def slider_crank(omega=SLIDER_CRANK.OMEGA, driven=True, *, crank_cg=0.5):
    """The slider-crank of docs/reference_problems.md §2 at crank angle 0, no gravity.

    Bodies: 'crank' (reference point at the pivot O = (0, 0), its CG at crank_cg x L1 along
    the crank; inertia J1 about the pivot), 'rod' (reference point at its centre, uniform:
    inertia J2 - M2 (L2/2)^2 about its CG) and 'slider' (on a prismatic joint along the x
    axis through O; its inertia, 1e-4, is irrelevant because it cannot turn). Joints:
    revolutes 'O' (ground-crank), 'A' (crank-rod, at (L1, 0)), 'B' (rod-slider), prismatic
    'P' (ground-slider).

    driven=True: the driver 'motor' holds crank angle = omega t (rad);
      reactions['motor']['effort'] is the motor torque on the crank in N m, positive in
      the direction of rotation. With g = 0 and a constant speed, crank_cg does not change
      the torque.
    driven=False: no driver; the crank starts at omega (rad/s) and the state is assembled
      (consistent velocities).
    crank_cg: 0.5 is the Test Set's choice (the source gives J1 about the pivot only);
      0 puts the crank's CG on the pivot.
    """
    from .analysis import assemble
    from .core.mechanism import Built
    from .profiles import constant_velocity

    d = SLIDER_CRANK
    m = _model((0.0, 0.0))
    c = crank_cg * d.L1
    m.add_body("crank", mass=d.M1, inertia=d.J1 - d.M1 * c**2, position=(0.0, 0.0),
               **({"cg": (c, 0.0)} if c else {}),
               **({} if driven else {"angular_velocity": omega}))
    m.add_body("rod", mass=d.M2, inertia=d.J2 - d.M2 * (d.L2 / 2) ** 2,
               position=(d.L1 + d.L2 / 2, 0.0))
    m.add_body("slider", mass=d.M3, inertia=1e-4, position=(d.L1 + d.L2, 0.0))
    m.add_revolute("O", "ground", "crank", at=(0.0, 0.0))
    m.add_revolute("A", "crank", "rod", at=(d.L1, 0.0))
    m.add_revolute("B", "rod", "slider", at=(d.L1 + d.L2, 0.0))
    m.add_prismatic("P", "ground", "slider", axis=(1.0, 0.0), at=(d.L1 + d.L2, 0.0))
    if driven:
        m.drive_joint("motor", "O", constant_velocity(omega))
        return m.build()
    mech, params, q0, v0 = m.build()
    res = assemble(mech, params, q0, v0, fixed=("crank.theta", "crank.x", "crank.y"))
    return Built(mech, params, res.q, res.v)


def four_bar_points(crank_angle=np.pi / 3):
    """Crank-rocker geometry: pivots O = (0, 0), D = (0.5, 0); crank 0.2, coupler 0.6,
    rocker 0.5 m. Returns the pins (A, B, D) with the loop closed exactly (circle
    intersection)."""
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
    forces can be added; returns (model, A, B, D)."""
    A, B, D = four_bar_points(crank_angle)
    m = _model((0.0, -gravity))

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
    """Crank-rocker: pivots (0, 0), (0.5, 0); crank 0.2, coupler 0.6, rocker 0.5 m; 1 kg/m
    bars (`four_bar_model`). Its q0 is closed exactly at the given crank angle, v0 = 0."""
    return four_bar_model(crank_angle, gravity)[0].build()


def four_bar_moving(crank_rate=4.0):
    """The crank-rocker of `four_bar` assembled (crank angle held) and moving: the crank
    at crank_rate (rad/s), consistent velocities."""
    import jax.numpy as jnp

    from .analysis import assemble

    mech, params, q0, _ = four_bar()
    res = assemble(mech, params, q0, fixed=("crank.theta",))
    v = jnp.zeros_like(res.q).at[mech.coordinate_index("crank.theta")].set(crank_rate)
    res = assemble(mech, params, res.q, v, fixed=("crank.theta",))
    return mech, params, res.q, res.v


def chain(n, L=0.5):
    """n rods of length L (m) pinned in series to the ground (revolutes 'j0'..), hanging at
    30 degrees below the horizontal, at rest; rod k ('l<k>') has mass 1 + 0.1 k kg
    (uniform). The banded saddle solve takes chains of 16 rows and more."""
    m = _model((0.0, -9.81))
    a = np.deg2rad(-60.0)
    e = np.array([np.cos(a), np.sin(a)])
    for k in range(n):
        m.add_body(f"l{k}", mass=1.0 + 0.1 * k, inertia=(1.0 + 0.1 * k) * L**2 / 12,
                   position=(k + 0.5) * L * e, angle=a)
        m.add_revolute(f"j{k}", "ground" if k == 0 else f"l{k - 1}", f"l{k}", at=k * L * e)
    return m.build()
