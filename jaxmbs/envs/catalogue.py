"""The environment catalogue: each one a jaxmbs mechanism in redundant coordinates.

All environments: `make(name, **kwargs)`; SI units; angles in rad, counterclockwise;
continuous actions are normalised to [-1, 1] and scaled by a task constant (so the limits
can be randomised through params); out-of-range actions are clipped.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from ..core.stabilize import NoStabilization
from ..integrators.runge_kutta import RK4
from ..planar.builder import Model
from .core import MechanismEnv
from .spaces import Box, Discrete

__all__ = ["CartPole", "CartPoleSwingUp", "Acrobot", "Pendulum", "FiveBarReach",
           "SliderCrankEngine", "make", "ENVIRONMENTS"]

_INF = np.inf


def _angle_normalize(x):
    return ((x + jnp.pi) % (2 * jnp.pi)) - jnp.pi


def _cart_pole_model(cart_mass, pole_mass, half_length):
    m = Model(gravity=(0.0, -9.8))
    m.add_body("cart", mass=cart_mass, inertia=0.1, position=(0.0, 0.0))
    # pole frame at the pin, pointing up at theta = 0; uniform rod of length 2 l
    m.add_body("pole", mass=pole_mass, inertia=pole_mass * half_length**2 / 3.0,
               position=(0.0, 0.0), cg=(0.0, half_length))
    m.add_prismatic("rail", "ground", "cart", axis=(1.0, 0.0))
    m.add_revolute("pin", "cart", "pole", at=(0.0, 0.0))
    m.add_load("push", "cart", force=(1.0, 0.0), control=0)
    return m


class CartPole(MechanismEnv):
    """Cart-pole balancing (Gymnasium CartPole-v1 constants), a cart on a prismatic joint
    with a pole on a revolute joint: 2 bodies, 6 coordinates, 4 constraint rows.

    | | |
    |---|---|
    | observation | (4,) [x (m), x_dot (m/s), theta (rad, 0 = up, counterclockwise), theta_dot (rad/s)] |
    | action | Discrete(2): 0 push left, 1 push right with `max_force` (10 N); `continuous=True`: Box(-1, 1, (1,)), force = a max_force |
    | reward | 1 every step (including the terminating one) |
    | termination | \\|x\\| > 2.4 m or \\|theta\\| > 12 deg (0.2095 rad) |
    | truncation | 500 steps (dt = 0.02 s: 10 s) |
    | reset | x, x_dot, theta, theta_dot ~ U(-0.05, 0.05) |

    Masses: cart 1 kg, pole 0.1 kg (uniform rod, half-length 0.5 m), gravity 9.8 m/s^2.
    """

    name = "cartpole"
    # the constraints (cart on the x-axis, pole pinned at the cart's reference point) are
    # linear in q, which RK4 preserves exactly: no projection needed (drift is tested)
    stabilizer = NoStabilization()
    # the 4 RK stages traced separately: 1.2-1.3x more env-steps/s than the stage scan for
    # this 6-coordinate mechanism, at a compile time of a few seconds
    integrator = RK4(unroll=True)

    def __init__(self, continuous=False, substeps=1, differentiable=False, **kw):
        super().__init__(substeps, differentiable, **kw)
        self.continuous = bool(continuous)
        self.mechanism, self._mech_params, _, _ = _cart_pole_model(1.0, 0.1, 0.5).build()
        self._task = dict(dt=0.02, max_steps=500, max_force=10.0, x_limit=2.4,
                          theta_limit=12 * 2 * math.pi / 360, reset_noise=0.05)
        self.observation_space = Box(-_INF, _INF, (4,), self.dtype)
        self.action_space = Box(-1.0, 1.0, (1,), self.dtype) if self.continuous else Discrete(2)

    def _state_from(self, x, xd, th, thd):
        z = jnp.zeros_like(x)
        q = jnp.stack([x, z, z, x, z, th])
        v = jnp.stack([xd, z, z, xd, z, thd])
        return q, v

    def _initial(self, key, p):
        s = p.task["reset_noise"]
        x, xd, th, thd = jax.random.uniform(key, (4,), self.dtype, -s, s)
        q, v = self._state_from(x, xd, th, thd)
        return q, v, {}

    def _controls(self, action, state, p):
        if self.continuous:
            a = jnp.clip(jnp.reshape(jnp.asarray(action, self.dtype), (-1,))[0], -1.0, 1.0)
        else:
            a = 2.0 * jnp.asarray(action, self.dtype) - 1.0
        return jnp.reshape(a * p.task["max_force"], (1,))

    def _observe(self, s, p):
        return jnp.stack([s.q[0], s.v[0], s.q[5], s.v[5]]).astype(self.dtype)

    def _reward(self, s, action, u, new, p):
        return jnp.ones((), self.dtype)

    def _terminated(self, s, p):
        return (jnp.abs(s.q[0]) > p.task["x_limit"]) | (jnp.abs(s.q[5]) > p.task["theta_limit"])


class CartPoleSwingUp(CartPole):
    """Cart-pole swing-up: the pole starts hanging down and must be swung up and balanced.

    | | |
    |---|---|
    | observation | (5,) [x (m), x_dot (m/s), cos theta, sin theta, theta_dot (rad/s)], theta = 0 up |
    | action | Box(-1, 1, (1,)): cart force = a max_force (10 N) |
    | reward | (1 + cos theta) / 2 - 0.001 a^2 per step (1 when upright, 0 hanging) |
    | termination | \\|x\\| > 2.4 m (the end of the rail) |
    | truncation | 200 steps (dt = 0.05 s, 2 RK4 substeps: 10 s) |
    | reset | theta = pi + U(-0.05, 0.05), x, x_dot, theta_dot ~ U(-0.05, 0.05) |
    """

    name = "cartpole_swingup"

    def __init__(self, substeps=2, differentiable=False, **kw):
        super().__init__(True, substeps, differentiable, **kw)
        self._task = dict(dt=0.05, max_steps=200, max_force=10.0, x_limit=2.4, reset_noise=0.05,
                          action_cost=0.001)
        self.observation_space = Box(-_INF, _INF, (5,), self.dtype)

    def _initial(self, key, p):
        s = p.task["reset_noise"]
        x, xd, th, thd = jax.random.uniform(key, (4,), self.dtype, -s, s)
        q, v = self._state_from(x, xd, th + jnp.pi, thd)
        return q, v, {}

    def _observe(self, s, p):
        th = s.q[5]
        return jnp.stack([s.q[0], s.v[0], jnp.cos(th), jnp.sin(th), s.v[5]]).astype(self.dtype)

    def _reward(self, s, action, u, new, p):
        a = u[0] / p.task["max_force"]
        return 0.5 * (1.0 + jnp.cos(new.q[5])) - p.task["action_cost"] * a**2

    def _terminated(self, s, p):
        return jnp.abs(s.q[0]) > p.task["x_limit"]


class Acrobot(MechanismEnv):
    """Acrobot swing-up (Gymnasium Acrobot-v1 constants): two links on revolute joints,
    torque at the elbow only. 2 bodies, 6 coordinates, 4 constraint rows.

    | | |
    |---|---|
    | observation | (6,) [cos t1, sin t1, cos t2, sin t2, t1_dot, t2_dot]; t1 from hanging down, t2 relative (rad, rad/s) |
    | action | Discrete(3): elbow torque -1, 0, +1 N m (times `max_torque` = 1) |
    | reward | -1 every step, 0 on the terminating step |
    | termination | tip height -cos t1 - cos(t1 + t2) > 1 (m, link lengths 1) |
    | truncation | 500 steps (dt = 0.2 s, 4 RK4 substeps) |
    | reset | t1, t2, t1_dot, t2_dot ~ U(-0.1, 0.1) |

    Links: 1 m, 1 kg, CG at 0.5 m, inertia 1 kg m^2 about the CG; gravity 9.8 m/s^2.
    Unlike Gymnasium, velocities are not clipped (the mechanism has no speed limit).
    """

    name = "acrobot"
    integrator = RK4(unroll=True)  # small mechanism: unrolled stages run faster (see CartPole)

    def __init__(self, substeps=4, differentiable=False, **kw):
        super().__init__(substeps, differentiable, **kw)
        m = Model(gravity=(0.0, -9.8))
        m.add_body("link1", mass=1.0, inertia=1.0, position=(0.0, 0.0), cg=(0.0, -0.5))
        m.add_body("link2", mass=1.0, inertia=1.0, position=(0.0, -1.0), cg=(0.0, -0.5))
        m.add_revolute("shoulder", "ground", "link1", at=(0.0, 0.0))
        m.add_revolute("elbow", "link1", "link2", at=(0.0, -1.0))
        m.add_load("motor", "link2", torque=1.0, control=0)
        m.add_load("motor_reaction", "link1", torque=-1.0, control=0)
        self.mechanism, self._mech_params, _, _ = m.build()
        self._task = dict(dt=0.2, max_steps=500, max_torque=1.0, link_length=1.0, reset_noise=0.1)
        self.observation_space = Box(-_INF, _INF, (6,), self.dtype)
        self.action_space = Discrete(3)

    def _initial(self, key, p):
        s = p.task["reset_noise"]
        t1, t2, w1, w2 = jax.random.uniform(key, (4,), self.dtype, -s, s)
        L = p.task["link_length"]  # elbow position from the shoulder angle
        ex, ey = L * jnp.sin(t1), -L * jnp.cos(t1)
        evx, evy = L * jnp.cos(t1) * w1, L * jnp.sin(t1) * w1
        z = jnp.zeros_like(t1)
        q = jnp.stack([z, z, t1, ex, ey, t1 + t2])
        v = jnp.stack([z, z, w1, evx, evy, w1 + w2])
        return q, v, {}

    def _controls(self, action, state, p):
        return jnp.reshape((jnp.asarray(action, self.dtype) - 1.0) * p.task["max_torque"], (1,))

    def _observe(self, s, p):
        t1, t2 = s.q[2], s.q[5] - s.q[2]
        return jnp.stack([jnp.cos(t1), jnp.sin(t1), jnp.cos(t2), jnp.sin(t2),
                          s.v[2], s.v[5] - s.v[2]]).astype(self.dtype)

    def _height(self, s, p):
        return -p.task["link_length"] * (jnp.cos(s.q[2]) + jnp.cos(s.q[5]))

    def _reward(self, s, action, u, new, p):
        return jnp.where(self._terminated(new, p), 0.0, -1.0)

    def _terminated(self, s, p):
        return self._height(s, p) > p.task["link_length"]


class Pendulum(MechanismEnv):
    """Pendulum swing-up (Gymnasium Pendulum-v1 constants): a uniform rod on a revolute
    joint with a torque motor. 1 body, 3 coordinates, 2 constraint rows.

    | | |
    |---|---|
    | observation | (3,) [cos theta, sin theta, theta_dot (rad/s)], theta = 0 up, counterclockwise |
    | action | Box(-1, 1, (1,)): torque = a max_torque (2 N m) |
    | reward | -(wrap(theta)^2 + 0.1 theta_dot^2 + 0.001 torque^2), from the state before the step |
    | termination | never |
    | truncation | 200 steps (dt = 0.05 s, 2 RK4 substeps) |
    | reset | theta ~ U(-pi, pi), theta_dot ~ U(-1, 1) |

    Rod: 1 kg, 1 m, gravity 10 m/s^2. Unlike Gymnasium the speed is not clipped at 8 rad/s.
    """

    name = "pendulum"
    integrator = RK4(unroll=True)  # small mechanism: unrolled stages run faster (see CartPole)
    stabilizer = NoStabilization()  # pinned at its reference point: linear constraints

    def __init__(self, substeps=2, differentiable=False, **kw):
        super().__init__(substeps, differentiable, **kw)
        m = Model(gravity=(0.0, -10.0))
        m.add_body("rod", mass=1.0, inertia=1.0 / 12.0, position=(0.0, 0.0), cg=(0.0, 0.5))
        m.add_revolute("pivot", "ground", "rod", at=(0.0, 0.0))
        m.add_load("motor", "rod", torque=1.0, control=0)
        self.mechanism, self._mech_params, _, _ = m.build()
        self._task = dict(dt=0.05, max_steps=200, max_torque=2.0, max_reset_speed=1.0)
        self.observation_space = Box(-_INF, _INF, (3,), self.dtype)
        self.action_space = Box(-1.0, 1.0, (1,), self.dtype)

    def _initial(self, key, p):
        k1, k2 = jax.random.split(key)
        th = jax.random.uniform(k1, (), self.dtype, -jnp.pi, jnp.pi)
        w = p.task["max_reset_speed"] * jax.random.uniform(k2, (), self.dtype, -1.0, 1.0)
        z = jnp.zeros_like(th)
        return jnp.stack([z, z, th]), jnp.stack([z, z, w]), {}

    def _controls(self, action, state, p):
        a = jnp.clip(jnp.reshape(jnp.asarray(action, self.dtype), (-1,))[0], -1.0, 1.0)
        return jnp.reshape(a * p.task["max_torque"], (1,))

    def _observe(self, s, p):
        return jnp.stack([jnp.cos(s.q[2]), jnp.sin(s.q[2]), s.v[2]]).astype(self.dtype)

    def _reward(self, s, action, u, new, p):
        return -(_angle_normalize(s.q[2]) ** 2 + 0.1 * s.v[2] ** 2 + 0.001 * u[0] ** 2)

    def _terminated(self, s, p):
        return jnp.zeros((), bool)


class FiveBarReach(MechanismEnv):
    """Five-bar closed-loop linkage (horizontal plane) reaching a target with its
    end-effector, torque-actuated at the two ground joints. 4 bodies, 12 coordinates,
    10 constraint rows (5 revolutes, one closed loop), 2 degrees of freedom. The loop is
    exact: no soft constraints, no cut joint.

    Geometry: ground pivots A = (-0.25, 0), B = (0.25, 0) m; proximal links 0.5 m
    (0.3 kg), distal links 0.7 m (0.2 kg) meeting at the end-effector E. With these lengths
    the loop can never be fully collinear, so Phi_q keeps full rank everywhere, including
    the parallel singularities where the distal links align.

    | | |
    |---|---|
    | observation | (10,) [cos t1, sin t1, cos t2, sin t2, t1_dot, t2_dot (rad/s), E (2, m), target - E (2, m)]; t1, t2 proximal link angles |
    | action | Box(-1, 1, (2,)): torques at A and B = a max_torque (0.5 N m) |
    | reward | -\\|E - target\\| - 0.01 \\|a\\|^2 per step (m) |
    | termination | never (non-finite physics only) |
    | truncation | 100 steps (dt = 0.05 s, 2 RK4 substeps: 5 s) |
    | reset | t1 ~ 2.0 + U(-0.3, 0.3), t2 ~ pi - 2.0 + U(-0.3, 0.3) rad, at rest, elbow-up branch; target = E of an independent random configuration t1 ~ U(1.3, 2.3), t2 ~ U(0.84, 1.84) (always reachable) |

    Viscous damping `damping` = 0.05 N m s at the two ground joints.
    """

    name = "five_bar"
    L1, L2, A = 0.5, 0.7, 0.25

    def __init__(self, substeps=2, differentiable=False, **kw):
        super().__init__(substeps, differentiable, **kw)
        L1, L2, a = self.L1, self.L2, self.A
        q0 = np.asarray(self._fk(2.0, math.pi - 2.0, np))
        m = Model(gravity=(0.0, 0.0))
        for name, k, mass, L in (("link1", 0, 0.3, L1), ("link2", 3, 0.3, L1),
                                 ("link3", 6, 0.2, L2), ("link4", 9, 0.2, L2)):
            m.add_body(name, mass=mass, inertia=mass * L**2 / 12, position=q0[k:k + 2],
                       angle=q0[k + 2], cg=(L / 2, 0.0))
        m.add_revolute("A", "ground", "link1", point_i=(-a, 0.0), point_j=(0.0, 0.0))
        m.add_revolute("B", "ground", "link2", point_i=(a, 0.0), point_j=(0.0, 0.0))
        m.add_revolute("C", "link1", "link3", point_i=(L1, 0.0), point_j=(0.0, 0.0))
        m.add_revolute("D", "link2", "link4", point_i=(L1, 0.0), point_j=(0.0, 0.0))
        m.add_revolute("E", "link3", "link4", point_i=(L2, 0.0), point_j=(L2, 0.0))
        m.add_torsion_spring("damper_A", "ground", "link1", k=0.0, c=0.05)
        m.add_torsion_spring("damper_B", "ground", "link2", k=0.0, c=0.05)
        m.add_load("motor_A", "link1", torque=1.0, control=0)
        m.add_load("motor_B", "link2", torque=1.0, control=1)
        self.mechanism, self._mech_params, _, _ = m.build()
        self._task = dict(dt=0.05, max_steps=100, max_torque=0.5, action_cost=0.01, reset_noise=0.3)
        self.observation_space = Box(-_INF, _INF, (10,), self.dtype)
        self.action_space = Box(-1.0, 1.0, (2,), self.dtype)

    @classmethod
    def _fk(cls, t1, t2, xp=jnp):
        """Closed-form position analysis (elbow-up branch): q (12,) from the two input angles."""
        L1, L2, a = cls.L1, cls.L2, cls.A
        cx, cy = -a + L1 * xp.cos(t1), L1 * xp.sin(t1)
        dx, dy = a + L1 * xp.cos(t2), L1 * xp.sin(t2)
        ux, uy = dx - cx, dy - cy
        d = xp.sqrt(ux**2 + uy**2)
        h = xp.sqrt(xp.maximum(L2**2 - (d / 2) ** 2, 0.0))
        ex, ey = (cx + dx) / 2 - h * uy / d, (cy + dy) / 2 + h * ux / d
        t3, t4 = xp.arctan2(ey - cy, ex - cx), xp.arctan2(ey - dy, ex - dx)
        z = 0.0 * t1
        return xp.stack([z - a, z, t1, z + a, z, t2, cx, cy, t3, dx, dy, t4])

    def end_effector(self, q):
        """E (2,) in m from coordinates q (12,): the tip of link3."""
        return q[6:8] + self.L2 * jnp.stack([jnp.cos(q[8]), jnp.sin(q[8])])

    def _initial(self, key, p):
        k1, k2, k3 = jax.random.split(key, 3)
        s = p.task["reset_noise"]
        d1, d2 = jax.random.uniform(k1, (2,), self.dtype, -s, s)
        q = self._fk(2.0 + d1, jnp.pi - 2.0 + d2)
        t1 = jax.random.uniform(k2, (), self.dtype, 1.3, 2.3)
        t2 = jax.random.uniform(k3, (), self.dtype, 0.84, 1.84)
        target = self.end_effector(self._fk(t1, t2))
        return q, jnp.zeros_like(q), {"target": target}

    def _controls(self, action, state, p):
        a = jnp.clip(jnp.reshape(jnp.asarray(action, self.dtype), (2,)), -1.0, 1.0)
        return a * p.task["max_torque"]

    def _observe(self, s, p):
        e = self.end_effector(s.q)
        return jnp.concatenate([jnp.stack([jnp.cos(s.q[2]), jnp.sin(s.q[2]), jnp.cos(s.q[5]),
                                           jnp.sin(s.q[5]), s.v[2], s.v[5]]),
                                e, s.extra["target"] - e]).astype(self.dtype)

    def _reward(self, s, action, u, new, p):
        e = self.end_effector(new.q)
        a = u / p.task["max_torque"]
        dist = jnp.sqrt(jnp.sum((e - new.extra["target"]) ** 2) + 1e-12)
        return -dist - p.task["action_cost"] * jnp.sum(a**2)

    def _terminated(self, s, p):
        return jnp.zeros((), bool)


class SliderCrankEngine(MechanismEnv):
    """Slider-crank engine speed regulation: a flywheel-loaded crank train (crank +
    flywheel, connecting rod, piston on a prismatic guide: 3 bodies, 9 coordinates,
    8 constraint rows, one closed loop) under an unobserved load-torque disturbance that
    jumps to a new level once per episode; the action is the drive torque on the crank.

    | | |
    |---|---|
    | observation | (3,) [cos phi, sin phi, (omega - omega_ref) / omega_ref]; phi crank angle (rad), omega crank speed (rad/s) |
    | action | Box(-1, 1, (1,)): drive torque = a max_torque (5 N m) |
    | reward | -\\|omega - omega_ref\\| / omega_ref - 0.01 a^2 per step |
    | termination | stall or overspeed: omega <= 0 or omega > 3 omega_ref |
    | truncation | 200 steps (dt = 0.05 s, 4 RK4 substeps: 10 s) |
    | reset | phi ~ U(-pi, pi), omega = omega_ref (20 rad/s) (1 + U(-0.2, 0.2)); load torque L0 ~ U(0, 2) N m switching to L1 ~ U(0, 2) N m at a random step in [50, 150) |

    Crank radius 0.05 m, rod 0.2 m; crank + flywheel 2 kg, 0.05 kg m^2 (balanced); rod
    0.3 kg; piston 0.5 kg; viscous friction 0.02 N m s on the crank.
    """

    name = "slider_crank"
    R, L = 0.05, 0.2

    def __init__(self, substeps=4, differentiable=False, **kw):
        super().__init__(substeps, differentiable, **kw)
        r, l = self.R, self.L
        m = Model(gravity=(0.0, -9.81))
        m.add_body("crank", mass=2.0, inertia=0.05, position=(0.0, 0.0))
        m.add_body("rod", mass=0.3, inertia=0.3 * l**2 / 12, position=(r, 0.0), cg=(l / 2, 0.0))
        m.add_body("piston", mass=0.5, inertia=1e-3, position=(r + l, 0.0))
        m.add_revolute("main", "ground", "crank", at=(0.0, 0.0))
        m.add_revolute("crank_pin", "crank", "rod", at=(r, 0.0))
        m.add_revolute("wrist_pin", "rod", "piston", at=(r + l, 0.0))
        m.add_prismatic("cylinder", "ground", "piston", axis=(1.0, 0.0))
        m.add_torsion_spring("friction", "ground", "crank", k=0.0, c=0.02)
        m.add_load("drive", "crank", torque=1.0, control=0)
        m.add_load("load", "crank", torque=-1.0, control=1)
        self.mechanism, self._mech_params, _, _ = m.build()
        self._task = dict(dt=0.05, max_steps=200, max_torque=5.0, omega_ref=20.0, max_load=2.0,
                          action_cost=0.01, reset_speed_noise=0.2)
        self.observation_space = Box(-_INF, _INF, (3,), self.dtype)
        self.action_space = Box(-1.0, 1.0, (1,), self.dtype)

    def _state(self, phi, w):
        """Consistent (q, v) from crank angle and speed (closed-form position and velocity
        analysis of the slider-crank)."""
        r, l = self.R, self.L
        ax, ay = r * jnp.cos(phi), r * jnp.sin(phi)
        beta = jnp.arcsin(-ay / l)
        xb = ax + l * jnp.cos(beta)
        avx, avy = -ay * w, ax * w
        bd = -avy / (l * jnp.cos(beta))
        xbd = avx - l * jnp.sin(beta) * bd
        z = jnp.zeros_like(phi)
        q = jnp.stack([z, z, phi, ax, ay, beta, xb, z, z])
        v = jnp.stack([z, z, w, avx, avy, bd, xbd, z, z])
        return q, v

    def _initial(self, key, p):
        k1, k2, k3, k4 = jax.random.split(key, 4)
        phi = jax.random.uniform(k1, (), self.dtype, -jnp.pi, jnp.pi)
        s = p.task["reset_speed_noise"]
        w = p.task["omega_ref"] * (1.0 + jax.random.uniform(k2, (), self.dtype, -s, s))
        q, v = self._state(phi, w)
        loads = jax.random.uniform(k3, (2,), self.dtype, 0.0, 1.0) * p.task["max_load"]
        switch = jax.random.randint(k4, (), 50, 150, jnp.int32)
        return q, v, {"load": loads, "switch": switch}

    def load_torque(self, state):
        """The current disturbance (N m, resisting the rotation)."""
        return jnp.where(state.step < state.extra["switch"], state.extra["load"][0], state.extra["load"][1])

    def _controls(self, action, state, p):
        a = jnp.clip(jnp.reshape(jnp.asarray(action, self.dtype), (-1,))[0], -1.0, 1.0)
        return jnp.stack([a * p.task["max_torque"], self.load_torque(state)])

    def _observe(self, s, p):
        w_ref = p.task["omega_ref"]
        return jnp.stack([jnp.cos(s.q[2]), jnp.sin(s.q[2]), (s.v[2] - w_ref) / w_ref]).astype(self.dtype)

    def _reward(self, s, action, u, new, p):
        w_ref = p.task["omega_ref"]
        a = u[0] / p.task["max_torque"]
        return -jnp.abs(new.v[2] - w_ref) / w_ref - p.task["action_cost"] * a**2

    def _terminated(self, s, p):
        return (s.v[2] <= 0.0) | (s.v[2] > 3.0 * p.task["omega_ref"])


ENVIRONMENTS = {
    "cartpole": CartPole,
    "cartpole_continuous": lambda **kw: CartPole(continuous=True, **kw),
    "cartpole_swingup": CartPoleSwingUp,
    "acrobot": Acrobot,
    "pendulum": Pendulum,
    "five_bar": FiveBarReach,
    "slider_crank": SliderCrankEngine,
}


def make(name, **kwargs):
    """Create an environment by name: one of ENVIRONMENTS ('cartpole',
    'cartpole_continuous', 'cartpole_swingup', 'acrobot', 'pendulum', 'five_bar',
    'slider_crank'). kwargs: substeps, differentiable, integrator, stabilizer (and continuous for
    CartPole)."""
    if name not in ENVIRONMENTS:
        raise ValueError(f"unknown environment {name!r}; choose one of {', '.join(ENVIRONMENTS)}")
    env = ENVIRONMENTS[name](**kwargs)
    env.name = name
    return env
