"""Small models using the planar catalogue's joint and force types (one or more each),
for the JSON model-file round-trip tests (tests/test_io.py)."""
import math

import numpy as np

import jaxmbs as mb


def gears_and_rolling():
    m = mb.Model(gravity=(0.0, -9.81))
    m.add_body("g1", mass=1.0, inertia=0.02, position=(0.0, 0.0))
    m.add_body("g2", mass=0.5, inertia=0.01, position=(0.3, 0.0), angle=0.1)
    m.add_revolute("p1", "ground", "g1", at=(0.0, 0.0))
    m.add_revolute("p2", "ground", "g2", at=(0.3, 0.0))
    m.add_gear("mesh", "g1", "g2", ratio=-2.0)
    m.add_body("rack", mass=0.4, inertia=0.01, position=(0.0, -0.2))
    m.add_prismatic("slide", "ground", "rack", axis=(1.0, 0.0), at=(0.0, -0.2))
    m.add_rack_pinion("rp", "rack", "g1", radius=0.05)
    m.add_body("disc", mass=0.7, inertia=0.005, position=(1.0, 0.12), angular_velocity=-2.0,
               velocity=(0.24, 0.0))
    m.add_rolling_disc("roll", "ground", "disc", radius=0.12, axis=(1.0, 0.0), at=(1.0, 0.0))
    return m


def knife_edge():
    m = mb.Model(gravity=(0.0, 0.0))
    m.add_body("cart", mass=2.0, inertia=0.1, position=(0.0, 0.0), angle=0.3, velocity=(0.955, 0.296))
    m.add_knife_edge("blade", "cart", point=(-0.2, 0.0), axis_local=(1.0, 0.0))
    return m


def contacts():
    m = mb.Model(gravity=(0.0, -9.81))
    m.add_body("ball", mass=0.2, inertia=1e-4, position=(0.0, 0.06))
    m.add_body("ball2", mass=0.2, inertia=1e-4, position=(0.2, 0.06))
    m.add_body("wheel", mass=1.0, inertia=0.02, position=(1.0, 0.3))
    m.add_circle_line_contact("floor", "ground", "ball", radius=0.05, k=1e5, normal=(0.0, 1.0),
                              at_i=(0.0, 0.0), restitution=0.8, impact_velocity=1.0, friction=0.3)
    m.add_circle_circle_contact("bump", "ball", "ball2", radius_i=0.05, radius_j=0.05, k=2e5,
                                damping=0.5, damping_model="hunt-crossley")
    m.add_circle_terrain_contact("tire", "wheel", radius=0.3, xs=[0.0, 1.0, 2.0, 3.0],
                                 ys=[0.0, 0.02, -0.01, 0.0], k=1e5, exponent=1.0, friction=0.5)
    return m


def rotating():
    m = mb.Model(gravity=(0.0, 0.0))
    m.add_rotating_frame(mb.constant(2.0))
    m.add_particle("p", mass=1.0, position=(1.0, 0.0), velocity=(0.0, 0.5))
    m.add_body("b", mass=1.0, inertia=0.1, position=(0.0, 1.0), cg=(0.1, 0.0))
    return m


def cam():
    m = mb.Model(gravity=(0.0, -9.81))
    m.add_body("cam", mass=1.0, inertia=0.01, position=(0.0, 0.0))
    m.add_revolute("pivot", "ground", "cam", at=(0.0, 0.0))
    m.drive_joint("motor", "pivot", mb.constant_velocity(10.0))
    m.add_body("follower", mass=0.2, inertia=1e-3, position=(0.0, 0.07))
    m.add_prismatic("guide", "ground", "follower", axis=(0.0, 1.0), at=(0.0, 0.07))
    pts = [(0.05 * math.cos(2 * math.pi * k / 8), 0.06 * math.sin(2 * math.pi * k / 8)) for k in range(8)]
    m.add_cam("contact", "cam", "follower", ("spline", pts), ("line", (0.0, -0.01), (1.0, 0.0)))
    m.add_body("disc", mass=0.3, inertia=1e-3, position=(1.0, 0.1))
    m.add_cam("roll", "ground", "disc", ("polynomial", [0.0, 0.0, 0.1]), ("circle", (0.0, 0.0), 0.1))
    return m


def beams():
    """Two planar ANCF beams: one clamped to the ground, the other pinned to its tip, a dead
    load and a follower load on the free end, a torque mid-element of b1 and a line load
    on b2; b2 with Rayleigh damping; rigid bodies pinned to a node and welded to a
    material point."""
    m = mb.Model(gravity=(0.0, -9.81))
    sec = dict(E=2e11, rho=7800.0, A=1e-4, I=1e-9)
    n1 = m.add_beam("b1", (0.0, 0.0), (0.5, 0.0), elements=2, section=sec)
    n2 = m.add_beam("b2", (0.5, 0.0), (1.0, 0.0), elements=1, section=dict(sec, alpha=0.3, beta=1e-4))
    m.add_node_weld("clamp", n1[0])
    m.add_node_pin("hinge", n2[0], n1[-1])
    m.add_node_load("tip", n2[-1], (0.0, -1.0))
    m.add_beam_line_load("wind", "b2", (0.5, -0.25))
    m.add_node_load("push", n2[-1], (-0.5, 0.2), follower=True)  # section frame (t, n)
    m.add_node_torque("twist", n1[1], 0.3, xi=0.5)               # mid-element, N m
    # a rigid link pinned to the free end, a second link welded to b1's mid-element
    m.add_body("link", mass=0.2, inertia=1e-3, position=(1.1, 0.0), angle=0.2)
    m.add_beam_body_pin("tip_pin", n2[-1], "link")
    m.add_body("arm", mass=0.1, inertia=5e-4, position=(0.1, 0.1), angle=-0.3)
    m.add_beam_body_weld("arm_weld", n1[0], "arm", xi=0.4, point=(0.02, -0.01), axis_i=(0.6, 0.8))
    # a collar sliding along b2 (prismatic: it turns with the tangent), a third beam pinned
    # between material points, a dead load between nodes
    m.add_body("collar", mass=0.05, inertia=1e-5, position=(0.8, 0.0))
    m.add_beam_slider("slide", "b2", "collar", prismatic=True)
    n3 = m.add_beam("b3", (0.25, 0.0), (0.25, -0.3), elements=1, section=sec)
    m.add_node_pin("mid_pin", n3[0], n1[0], xi=0.0, xi_other=0.5)
    m.add_node_load("mid_load", n1[1], (0.0, -0.4), xi=0.3)
    return m


def cables():
    """Two spatial ANCF cables: one clamped to the ground, the other welded (slopes
    parallel) to its tip; a dead load and a tangential follower load on the free end, a
    follower load mid-element, a line load, Rayleigh damping, a node pin to the ground, a
    ball hung at a material point by a spherical pin and a hub welded to a material point
    (`add_beam_body_weld`)."""
    m = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    sec = dict(E=2e11, rho=7800.0, A=1e-4, I=1e-9)
    n1 = m.add_beam("c1", (0.0, 0.0, 0.0), (0.5, 0.0, 0.0), elements=2, section=sec)
    n2 = m.add_beam("c2", (0.5, 0.0, 0.0), (0.8, 0.4, 0.0), elements=2,
                    section=dict(sec, alpha=0.3, beta=1e-4))
    n3 = m.add_beam("c3", (0.5, 0.0, 0.0), (1.0, 0.0, 0.0), elements=1, section=sec)
    m.add_node_weld("clamp", n1[0], direction=(2.0, 0.0, 0.0))
    m.add_node_pin("hinge", n2[0], n1[-1])
    m.add_node_weld("joint", n3[0], n1[-1])
    m.add_node_pin("anchor", n3[-1])
    m.add_node_load("tip", n2[-1], (0.0, 0.3, -1.0))
    m.add_node_load("pull", n2[-1], 0.4, follower=True)            # along the tangent, N
    m.add_node_load("push", n1[0], -0.2, follower=True, xi=0.3)
    m.add_beam_line_load("wind", "c2", (0.5, -0.25, 0.1))
    m.add_body("ball", mass=0.2, inertia=(1e-3, 2e-3, 3e-3), position=(0.7, 0.3, -0.1))
    m.add_beam_body_pin("hold", n2[1], "ball", xi=0.4, point=(0.0, 0.02, 0.1))
    m.add_body("hub", mass=0.3, inertia=(1e-3, 1e-3, 2e-3), position=(1.0, 0.0, 0.05),
               orientation=(0.9, 0.0, 0.3, math.sqrt(1.0 - 0.9**2 - 0.3**2)))
    m.add_beam_body_weld("hub_weld", n3[0], "hub", xi=0.6, at=(0.8, 0.0, 0.0),
                         axis=(2.0, 0.0, 0.0))
    return m


def shear_beams():
    """Two shear-deformable planar beams (`add_shear_beam`, G given / nu given with k and
    damping): one clamped to the ground, the other pinned to its tip and welded to a rigid
    body, dead, following and torque loads on nodes, a line load."""
    m = mb.Model(gravity=(0.0, -9.81))
    sec = dict(E=2e11, rho=7800.0, A=1e-4, I=1e-9)
    n1 = m.add_shear_beam("s1", (0.0, 0.0), (0.5, 0.0), elements=2, section=dict(sec, G=8e10))
    n2 = m.add_shear_beam("s2", (0.5, 0.0), (0.5, -0.4), elements=2,
                          section=dict(sec, nu=0.3, k=0.9, alpha=0.2, beta=1e-4))
    m.add_node_weld("clamp", n1[0])
    m.add_node_pin("hinge", n2[0], n1[-1])
    m.add_body("hub", mass=0.2, inertia=1e-3, position=(0.5, -0.4))
    m.add_node_weld("hub_weld", n2[-1], "hub")
    m.add_node_load("tip", n1[-1], (0.0, -1.0))
    m.add_node_load("push", n2[1], (0.1, 0.2), follower=True)
    m.add_node_torque("twist", n1[1], 0.3)
    m.add_beam_line_load("wind", "s2", (0.5, -0.25))
    return m


def ffr_bodies():
    """Floating-frame (modal) beams (`add_ffr_beam`): a Craig-Bampton cantilever welded to
    the ground, a free-interface beam pinned to its mid-length, a rigid body welded to that
    beam's end, a dead load at a material point."""
    m = mb.Model(gravity=(0.0, -9.81))
    sec = dict(E=2e11, rho=7800.0, A=1e-4, I=1e-9, alpha=0.1)
    m.add_ffr_beam("f1", (0.0, 0.0), (0.5, 0.0), section=sec, elements=4, modes=5,
                   basis="craig_bampton")
    m.add_ffr_beam("f2", (0.25, 0.0), (0.25, -0.3), section=dict(sec, beta=1e-4), elements=2,
                   modes=2, basis="free", angular_velocity=0.5)
    m.add_weld("clamp", "ground", "f1", at=(0.0, 0.0))
    m.add_revolute("mid", "f1", "f2", at=(0.25, 0.0))
    m.add_body("hub", mass=0.2, inertia=1e-3, position=(0.25, -0.3))
    m.add_weld("hub_weld", "f2", "hub", at=(0.25, -0.3))
    m.add_load("tip", "f1", force=(0.0, -1.0), at=(0.5, 0.0))
    # a general finite-element body (a triangle of bars, lumped masses) pinned to f1's tip
    nodes = [[0.5, 0.0], [0.7, 0.0], [0.6, 0.15]]
    K = np.zeros((6, 6))
    for a, b in ((0, 1), (1, 2), (0, 2)):
        d = np.subtract(nodes[b], nodes[a]) / np.linalg.norm(np.subtract(nodes[b], nodes[a]))
        e = np.zeros(6)
        e[2 * a: 2 * a + 2], e[2 * b: 2 * b + 2] = -d, d
        K += 1e5 * np.outer(e, e)
    m.add_ffr_body("tri", nodes, np.diag([0.1, 0.2, 0.1]), K, modes=3, basis="craig_bampton",
                   interface=(0, 1), alpha=0.5)
    m.add_revolute("tri_pin", "f1", "tri", at=(0.5, 0.0))
    return m


CATALOGUE = {"gears_and_rolling": gears_and_rolling, "beams": beams, "cables": cables, "knife_edge": knife_edge, "contacts": contacts,
             "rotating": rotating, "cam": cam, "shear_beams": shear_beams,
             "ffr_bodies": ffr_bodies}
