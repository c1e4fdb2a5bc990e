"""Benchmark cases shared by the baseline simulators (MuJoCo and NumPy/KKT).

All cases are planar, in the x-y plane, SI units, gravity ``g = 9.81`` along ``-y``
unless said otherwise.  Every body is a rod whose local x-axis runs along the rod, with
the proximal joint at the local origin.  Angles are measured counter-clockwise from +x.

Two state conventions are used and converted here, so that both simulators start from
the *same* consistent state:

* **joint coordinates** (what MuJoCo integrates): hinge angles relative to the parent
  body (for bodies attached to the world: absolute angles) and slide displacements;
* **absolute coordinates** (what the NumPy KKT code integrates): ``(x, y, theta)`` of the
  centre of gravity of every body, stacked body after body.

Cases
-----
``double_pendulum``
    Two uniform rods, 1 kg and 1 m each, pinned in series, the first to ground at the
    origin; released at rest with both rods along +x.  Identical to ``chain2``.
``chainN`` (N = 2, 4, 8, 16, 32, 64)
    N uniform rods, each 1 kg and 1 m (the chain is N metres long), pinned in series to
    ground at the origin, released at rest with all rods along +x.
``slider_crank``
    Free-running (undriven) slider-crank, data of the Test Set problem "crank"
    (Simeon 1996), g = 0.  Crank: L1 = 0.15, m1 = 0.36, J1 = 0.002727 about the pivot
    (its CG is put at L1/2, so I1cg = J1 - m1 (L1/2)^2; without gravity and with the
    pivot fixed the dynamics only depend on J1).  Connecting rod: L2 = 0.30, uniform,
    m2 = 0.151104, J2 = 0.0045339259 about the crank-pin end (CG at L2/2,
    I2cg = J2 - m2 (L2/2)^2).  Slider: m3 = 0.075552 on the x-axis (through the crank
    pivot).  Initial state: crank angle 0 (all three bodies on the +x axis, slider at
    x = L1 + L2 = 0.45), crank angular velocity 150 rad/s, rod angular velocity
    -L1*150/L2 = -75 rad/s (absolute), slider velocity 0 (consistent).
``fourbar``
    Grashof crank-rocker four-bar under gravity, uniform rods of 1 kg/m.
    Ground pivots A = (0, 0) (crank) and D = (0.5, 0) (rocker), ground link AD = 0.5.
    Crank AB: 0.2 m (0.2 kg); coupler BC: 0.6 m (0.6 kg); rocker DC: 0.5 m (0.5 kg).
    Grashof: s + l = 0.2 + 0.6 = 0.8 <= p + q = 0.5 + 0.5 = 1.0 with the shortest link
    (crank) adjacent to the ground link, so it is a crank-rocker.  Initial state: crank at
    60 deg (B = 0.2 (cos 60, sin 60)), the "open" assembly with C above the ground line
    (C = (0.611107.., 0.487524..)), everything at rest.  Joints: revolute at A, B, C, D;
    the loop is closed at C (coupler end to rocker end).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

G = 9.81
DT = 1e-3
CHAIN_SIZES = (2, 4, 8, 16, 32, 64)
CASES = ("double_pendulum", "slider_crank", "fourbar") + tuple(f"chain{n}" for n in CHAIN_SIZES)


def chain_n(case: str) -> int:
    """Number of links of a chain case (``double_pendulum`` is ``chain2``)."""
    if case == "double_pendulum":
        return 2
    if case.startswith("chain"):
        return int(case[5:])
    raise ValueError(f"{case!r} is not a chain case")


def is_chain(case: str) -> bool:
    return case == "double_pendulum" or case.startswith("chain")


def check_case(case: str) -> None:
    if case not in CASES:
        raise ValueError(f"unknown case {case!r}; choose one of {CASES}")


# ---------------------------------------------------------------- case data
# slider-crank (Test Set "crank")
SC_L1, SC_L2 = 0.15, 0.30
SC_M1, SC_J1 = 0.36, 0.002727
SC_M2, SC_J2 = 0.151104, 0.0045339259
SC_M3 = 0.075552
SC_OMEGA0 = 150.0
SC_I1CG = SC_J1 - SC_M1 * (SC_L1 / 2) ** 2
SC_I2CG = SC_J2 - SC_M2 * (SC_L2 / 2) ** 2
SC_I3CG = 1e-4  # slider rotation is locked; any positive value

# four-bar
FB_A = np.array([0.0, 0.0])
FB_D = np.array([0.5, 0.0])
FB_L1, FB_L2, FB_L3 = 0.2, 0.6, 0.5  # crank, coupler, rocker
FB_RHO = 1.0  # kg/m
FB_THETA0 = math.pi / 3


def fourbar_assembly(theta1: float = FB_THETA0):
    """Absolute angles (crank, coupler, rocker) and point C of the open (C above AD) branch."""
    B = FB_A + FB_L1 * np.array([math.cos(theta1), math.sin(theta1)])
    BD = FB_D - B
    d = float(np.hypot(*BD))
    a, b = FB_L2, FB_L3
    along = (a * a - b * b + d * d) / (2 * d)
    h = math.sqrt(a * a - along * along)
    u = BD / d
    n = np.array([-u[1], u[0]])
    C = B + along * u + h * n
    if C[1] < 0:  # pick the branch above the ground line
        C = B + along * u - h * n
    th2 = math.atan2(C[1] - B[1], C[0] - B[0])
    th3 = math.atan2(C[1] - FB_D[1], C[0] - FB_D[0])
    return np.array([theta1, th2, th3]), C


@dataclass
class PlanarBody:
    """A rod body: local x along the rod, proximal joint at local origin."""

    name: str
    mass: float
    icg: float  # moment of inertia about the CG (z axis)
    length: float
    cg: float  # CG position along local x


@dataclass
class CaseData:
    name: str
    gravity: float
    bodies: list = field(default_factory=list)


def case_data(case: str) -> CaseData:
    check_case(case)
    if is_chain(case):
        n = chain_n(case)
        bodies = [PlanarBody(f"link{k}", 1.0, 1.0 / 12.0, 1.0, 0.5) for k in range(n)]
        return CaseData(case, G, bodies)
    if case == "slider_crank":
        return CaseData(case, 0.0, [
            PlanarBody("crank", SC_M1, SC_I1CG, SC_L1, SC_L1 / 2),
            PlanarBody("rod", SC_M2, SC_I2CG, SC_L2, SC_L2 / 2),
            PlanarBody("slider", SC_M3, SC_I3CG, 0.0, 0.0),
        ])
    if case == "fourbar":
        return CaseData(case, G, [
            PlanarBody(nm, FB_RHO * L, FB_RHO * L ** 3 / 12.0, L, L / 2)
            for nm, L in (("crank", FB_L1), ("coupler", FB_L2), ("rocker", FB_L3))
        ])
    raise AssertionError


# ---------------------------------------------------------------- initial states
def initial_joint_state(case: str):
    """(qpos, qvel) in MuJoCo joint coordinates (relative hinge angles, slide x)."""
    check_case(case)
    if is_chain(case):
        n = chain_n(case)
        return np.zeros(n), np.zeros(n)
    if case == "slider_crank":
        w1 = SC_OMEGA0
        w2 = -SC_L1 * w1 / SC_L2  # absolute rod angular velocity at crank angle 0
        return np.array([0.0, 0.0, SC_L1 + SC_L2]), np.array([w1, w2 - w1, 0.0])
    if case == "fourbar":
        th, _ = fourbar_assembly()
        return np.array([th[0], th[1] - th[0], th[2]]), np.zeros(3)
    raise AssertionError


def _e(t):
    return np.array([np.cos(t), np.sin(t)])


def joint_to_absolute(case: str, qpos, qvel):
    """Convert a joint-coordinate state to absolute (x, y, theta) per body CG: (q, v)."""
    cd = case_data(case)
    qpos = np.asarray(qpos, float)
    qvel = np.asarray(qvel, float)
    nb = len(cd.bodies)
    q = np.zeros(3 * nb)
    v = np.zeros(3 * nb)

    def put(k, origin, vorigin, th, w):
        b = cd.bodies[k]
        r = origin + b.cg * _e(th)
        rd = vorigin + b.cg * w * np.array([-np.sin(th), np.cos(th)])
        q[3 * k:3 * k + 3] = [r[0], r[1], th]
        v[3 * k:3 * k + 3] = [rd[0], rd[1], w]

    if is_chain(case) or case in ("slider_crank", "fourbar"):
        # serial part: hinge chain from the origin
        nser = len(cd.bodies) if is_chain(case) else 2
        origin = np.zeros(2)
        vorigin = np.zeros(2)
        th = 0.0
        w = 0.0
        for k in range(nser):
            th += qpos[k]
            w += qvel[k]
            put(k, origin, vorigin, th, w)
            L = cd.bodies[k].length
            origin = origin + L * _e(th)
            vorigin = vorigin + L * w * np.array([-np.sin(th), np.cos(th)])
    if case == "slider_crank":
        q[6:9] = [qpos[2], 0.0, 0.0]
        v[6:9] = [qvel[2], 0.0, 0.0]
    if case == "fourbar":
        put(2, FB_D.copy(), np.zeros(2), qpos[2], qvel[2])
    return q, v


def initial_absolute_state(case: str):
    return joint_to_absolute(case, *initial_joint_state(case))


# ---------------------------------------------------------------- observables
OBSERVABLE_NAMES = {
    "chain": ("tip_x", "tip_y"),
    "slider_crank": ("crank_angle", "slider_x"),
    "fourbar": ("crank_angle", "rocker_angle", "C_x", "C_y"),
}


def observable_names(case: str):
    return OBSERVABLE_NAMES["chain" if is_chain(case) else case]


def observables_from_joint(case: str, qpos):
    """Comparable quantities from joint coordinates; qpos may be batched (..., nq).

    chain: tip (x, y) of the last link; slider_crank: (crank angle, slider x);
    fourbar: (crank angle, rocker angle, C_x, C_y) with C the rocker tip.
    """
    qpos = np.asarray(qpos, float)
    if is_chain(case):
        th = np.cumsum(qpos, axis=-1)
        return np.stack([np.cos(th).sum(-1), np.sin(th).sum(-1)], -1)
    if case == "slider_crank":
        return np.stack([qpos[..., 0], qpos[..., 2]], -1)
    if case == "fourbar":
        th3 = qpos[..., 2]
        return np.stack([qpos[..., 0], th3, FB_D[0] + FB_L3 * np.cos(th3),
                         FB_D[1] + FB_L3 * np.sin(th3)], -1)
    raise ValueError(case)


def observables_from_absolute(case: str, q):
    """Same quantities as :func:`observables_from_joint` from absolute coordinates."""
    q = np.asarray(q, float)
    cd = case_data(case)
    if is_chain(case):
        b = cd.bodies[-1]
        x, y, th = q[..., -3], q[..., -2], q[..., -1]
        return np.stack([x + (b.length - b.cg) * np.cos(th), y + (b.length - b.cg) * np.sin(th)], -1)
    if case == "slider_crank":
        return np.stack([q[..., 2], q[..., 6]], -1)
    if case == "fourbar":
        b = cd.bodies[2]
        x, y, th = q[..., 6], q[..., 7], q[..., 8]
        return np.stack([q[..., 2], th, x + (b.length - b.cg) * np.cos(th),
                         y + (b.length - b.cg) * np.sin(th)], -1)
    raise ValueError(case)


def loop_closure_error_joint(case: str, qpos):
    """Euclidean gap of the loop-closing joint, from joint coordinates (batched ok).

    slider_crank: distance between the rod end and the slider point (x_s, 0);
    fourbar: distance between C computed through crank+coupler and through the rocker.
    Chains have no loop: returns zeros.
    """
    qpos = np.asarray(qpos, float)
    if case == "slider_crank":
        t1 = qpos[..., 0]
        t2 = t1 + qpos[..., 1]
        ex = SC_L1 * np.cos(t1) + SC_L2 * np.cos(t2) - qpos[..., 2]
        ey = SC_L1 * np.sin(t1) + SC_L2 * np.sin(t2)
        return np.hypot(ex, ey)
    if case == "fourbar":
        t1 = qpos[..., 0]
        t2 = t1 + qpos[..., 1]
        t3 = qpos[..., 2]
        ex = FB_L1 * np.cos(t1) + FB_L2 * np.cos(t2) - (FB_D[0] + FB_L3 * np.cos(t3))
        ey = FB_L1 * np.sin(t1) + FB_L2 * np.sin(t2) - (FB_D[1] + FB_L3 * np.sin(t3))
        return np.hypot(ex, ey)
    return np.zeros(qpos.shape[:-1])
