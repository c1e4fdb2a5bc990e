"""MuJoCo baseline of the IFToMM spatial slider-crank (free running, g along -z).

The mechanism and its data are those of ``tests/reference/spatial.py`` (section 1), whose
minimal-coordinate DOP853 solution is the reference here:
crank pivot A = (0, 0.1, 0.12) m, revolute about global x, crank 0.08 m (0.12 kg, CG at
0.04 m, I_cg = diag(1e-4, 1e-4, 1e-5) with body z along the crank); rod 0.3 m from the
crank pin B to C (0.5 kg, CG mid-rod, I_cg = diag(4e-4, 4e-3, 4e-3) with body x along
B -> C); slider 2 kg on the global x axis (C = (x, 0, 0), x = 0.2 at t = 0); spherical
joint at B, universal at C (axes: global x on the slider, (0, -2, 1)/sqrt(5) fixed in the
rod at t = 0), prismatic ground-slider along x; crank rate 6 rad/s at t = 0.

Model (same conventions as ``mujoco_models.py``: explicit inertias,
``inertiafromgeom="false"``, no geoms, contacts disabled, joint armature / damping /
friction / stiffness 0, RK4, Newton solver to 1e-10)
------------------------------------------------------------------------------------
Two kinematic trees:

* world -> ``crank`` (hinge about x at A);
* world -> ``slider`` (slide along x, body at (0.2, 0, 0)) -> ``rod`` (body frame at C with
  the rod axes of the reference: x along B -> C, y = the universal's rod axis, z = x cross y)
  with two hinges at C: the first about global x (its axis written in rod coordinates,
  R0^T e_x), the second about the rod's y axis.  MuJoCo composes the joints of one body in
  order, so the second axis is carried by the first rotation: the pair is exactly the
  universal joint (rod y axis perpendicular to global x and to the rod at all times).

The loop is closed at the **spherical joint B** by a site-based ``<connect>`` equality
(crank-pin site on the crank, rod-end site at -0.3 m on the rod's x axis).  A ball joint is
exactly what ``connect`` enforces (3 translational rows, rotation free), so this closure
adds no redundant row (4 joint DOF - 3 rows = 1 DOF) and needs no special joint; closing
at C instead would need a universal + prismatic as equalities, which MuJoCo does not have.
The equality is soft (see ``mujoco_models``): :data:`TIGHT` = the project's stiffest
setting solref (0.002, 1), solimp (0.9999, 0.9999, 0.001, 0.5, 2); :data:`DEFAULT` =
MuJoCo's solref (0.02, 1), solimp (0.9, 0.95, 0.001, 0.5, 2).

Initial state: qpos = 0 (the tree is built in the t = 0 pose), qvel = (6, xdot, w.e_x, w.u)
with xdot and the rod angular velocity w from the reference (w lies in span(e_x, u)).

Functions: :func:`spatial_slider_crank_xml`, :func:`make_model`, :func:`initial_state`,
:func:`rollout_throughput` (``mujoco.rollout``, all cores, batch 4096),
:func:`accuracy` (errors against the reference, loop gap), :func:`main` (one JSON line):

    python benchmarks/baselines/mujoco_spatial.py [--batch 4096] [--nstep 300] [--repeats 5]
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout

_HERE = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(os.path.dirname(_HERE))


def _load_reference():
    """tests/reference/spatial.py, loaded by path (the reference never imports jaxmbs)."""
    name = "jaxmbs_spatial_reference"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, os.path.join(_ROOT, "tests", "reference", "spatial.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


REF = _load_reference()

DT = 1e-3
SOLVER_TOLERANCE = 1e-10
TIGHT = dict(solref=(0.002, 1.0), solimp=(0.9999, 0.9999, 0.001, 0.5, 2.0))
DEFAULT = dict(solref=(0.02, 1.0), solimp=(0.9, 0.95, 0.001, 0.5, 2.0))
SETTINGS = {"tight": TIGHT, "default": DEFAULT}
_STATE_SPEC = mujoco.mjtState.mjSTATE_FULLPHYSICS


def _fmt(*xs) -> str:
    return " ".join(repr(float(x)) for x in xs)


def rod_frame0() -> np.ndarray:
    """Rod orientation at t = 0 (3, 3): columns e (B -> C), u (universal axis), e x u."""
    return REF.sc_pose([REF.SC_PHI0])["rod_R"][0]


def spatial_slider_crank_xml(timestep: float = DT, solref=TIGHT["solref"], solimp=TIGHT["solimp"]) -> str:
    """MJCF of the spatial slider-crank (see the module docstring)."""
    R0 = rod_frame0()
    q = np.empty(4)
    mujoco.mju_mat2Quat(q, R0.ravel())
    ax1 = R0.T @ np.array([1.0, 0.0, 0.0])  # global x in rod coordinates
    A, L1, L2 = REF.SC_A, REF.SC_CRANK_L, REF.SC_ROD_L
    Ic, Ir, Is = (np.diag(REF.SC_CRANK_I), np.diag(REF.SC_ROD_I), np.diag(REF.SC_SLIDER_I))
    return f"""<mujoco model="spatial_slider_crank">
  <compiler angle="radian" inertiafromgeom="false" autolimits="true"/>
  <option integrator="RK4" timestep="{timestep!r}" gravity="{_fmt(*REF.SC_GRAVITY)}"
          solver="Newton" iterations="50" tolerance="{SOLVER_TOLERANCE!r}">
    <flag contact="disable"/>
  </option>
  <default>
    <joint armature="0" damping="0" frictionloss="0" stiffness="0" limited="false"/>
  </default>
  <worldbody>
    <body name="crank" pos="{_fmt(*A)}">
      <joint name="crank" type="hinge" axis="1 0 0"/>
      <inertial pos="0 0 {REF.SC_CRANK_CG!r}" mass="{REF.SC_CRANK_M!r}" diaginertia="{_fmt(*Ic)}"/>
      <site name="crank_pin" pos="0 0 {L1!r}"/>
    </body>
    <body name="slider" pos="{REF.SC_X0!r} 0 0">
      <joint name="slider" type="slide" axis="1 0 0"/>
      <inertial pos="0 0 0" mass="{REF.SC_SLIDER_M!r}" diaginertia="{_fmt(*Is)}"/>
      <body name="rod" pos="0 0 0" quat="{_fmt(*q)}">
        <joint name="u_slider" type="hinge" axis="{_fmt(*ax1)}"/>
        <joint name="u_rod" type="hinge" axis="0 1 0"/>
        <inertial pos="{-0.5 * L2!r} 0 0" mass="{REF.SC_ROD_M!r}" diaginertia="{_fmt(*Ir)}"/>
        <site name="rod_end" pos="{-L2!r} 0 0"/>
      </body>
    </body>
  </worldbody>
  <equality>
    <connect name="B" site1="rod_end" site2="crank_pin" solref="{_fmt(*solref)}" solimp="{_fmt(*solimp)}"/>
  </equality>
</mujoco>
"""


def make_model(timestep: float = DT, setting: str = "tight") -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(spatial_slider_crank_xml(timestep, **SETTINGS[setting]))


def initial_qvel() -> np.ndarray:
    """(crank rate, slider rate, universal rate about x, universal rate about u) at t = 0."""
    w = REF.SC_OMEGA0
    R0 = rod_frame0()
    om = REF.sc_rod_omega_per_rate(REF.SC_PHI0) * w
    ex = np.array([1.0, 0.0, 0.0])
    u = R0[:, 1]
    assert abs(om @ np.cross(ex, u)) < 1e-14  # universal: no third rotation
    xdot = REF.sc_pose([REF.SC_PHI0])["dx"][0] * w
    return np.array([w, xdot, om @ ex, om @ u])


def initial_state(model: mujoco.MjModel) -> np.ndarray:
    """Full-physics MuJoCo state at t = 0 (qpos = 0: the model is built in that pose)."""
    d = mujoco.MjData(model)
    d.qpos[:] = 0.0
    d.qvel[:] = initial_qvel()
    mujoco.mj_forward(model, d)
    s = np.empty(mujoco.mj_stateSize(model, _STATE_SPEC))
    mujoco.mj_getState(model, d, s, _STATE_SPEC)
    return s


def loop_gap(model: mujoco.MjModel, qpos: np.ndarray) -> np.ndarray:
    """|rod_end - crank_pin| [m] for each row of qpos (n, nq)."""
    d = mujoco.MjData(model)
    a, b = model.site("rod_end").id, model.site("crank_pin").id
    out = np.empty(len(qpos))
    for i, q in enumerate(np.atleast_2d(qpos)):
        d.qpos[:] = q
        mujoco.mj_kinematics(model, d)
        out[i] = np.linalg.norm(d.site_xpos[a] - d.site_xpos[b])
    return out


def trajectory(nstep: int, timestep: float = DT, setting: str = "tight"):
    """One rollout of ``nstep`` steps: (t (nstep+1,), qpos (nstep+1, 4), qvel) including t = 0."""
    model = make_model(timestep, setting)
    s0 = initial_state(model)
    nq, nv = model.nq, model.nv
    with mj_rollout.Rollout(nthread=1) as pool:
        st, _ = pool.rollout(model, mujoco.MjData(model), s0[None], nstep=nstep)
    st = np.concatenate([s0[None], st[0]], axis=0)
    return st[:, 0], st[:, 1:1 + nq], st[:, 1 + nq:1 + nq + nv], model


def accuracy(setting: str = "tight", timestep: float = DT, t_end: float = 1.0, checkpoints=(0.4, 1.0)) -> dict:
    """Errors of MuJoCo's trajectory against the DOP853 reference.

    Returns dict: ``crank_angle_error`` and ``slider_x_error`` {t: MuJoCo - reference} [rad, m]
    at ``checkpoints``; ``max_crank_angle_error``, ``max_slider_x_error`` over [0, t_end];
    ``max_loop_gap`` [m] (|rod end - crank pin| over the run); ``energy_drift`` [J] (MuJoCo's
    T + V at t_end minus at 0, from its own mj_energy with the equality's soft energy off).
    """
    nstep = int(round(t_end / timestep))
    t, qpos, qvel, model = trajectory(nstep, timestep, setting)
    ref = REF.spatial_slider_crank(t)
    dphi = qpos[:, 0] - ref["crank_angle"]
    dx = (REF.SC_X0 + qpos[:, 1]) - ref["slider_x"]
    idx = {c: int(round(c / timestep)) for c in checkpoints}
    gap = loop_gap(model, qpos)
    d = mujoco.MjData(model)
    model.opt.enableflags |= mujoco.mjtEnableBit.mjENBL_ENERGY
    E = []
    for k in (0, nstep):
        d.qpos[:], d.qvel[:] = qpos[k], qvel[k]
        mujoco.mj_forward(model, d)
        E.append(float(d.energy.sum()))
    return dict(setting=setting, dt=timestep, solref=SETTINGS[setting]["solref"], solimp=SETTINGS[setting]["solimp"],
                crank_angle_error={c: float(dphi[i]) for c, i in idx.items()},
                slider_x_error={c: float(dx[i]) for c, i in idx.items()},
                max_crank_angle_error=float(np.max(np.abs(dphi))), max_slider_x_error=float(np.max(np.abs(dx))),
                max_loop_gap=float(gap.max()), energy_drift=E[1] - E[0],
                reference_energy_drift=float(ref["energy"][-1] - ref["energy"][0]))


def rollout_throughput(batch: int = 4096, nstep: int = 300, repeats: int = 5, nthread: int | None = None,
                       setting: str = "tight", timestep: float = DT) -> dict:
    """Mechanism-steps per second of ``mujoco.rollout`` (thread pool of ``nthread`` threads,
    default all cores, one MjData per thread), ``batch`` identical copies, ``nstep`` steps;
    median over ``repeats`` timed runs after a 1-step warm-up (compile, MjData and thread-pool
    creation excluded).  The full-physics state of every step is written (as rollout does)."""
    nthread = os.cpu_count() if nthread is None else int(nthread)
    model = make_model(timestep, setting)
    s0 = np.tile(initial_state(model), (batch, 1))
    datas = [mujoco.MjData(model) for _ in range(nthread)]
    out = np.empty((batch, nstep, s0.shape[1]))
    walls = []
    with mj_rollout.Rollout(nthread=nthread) as pool:
        pool.rollout(model, datas, s0[:1], nstep=1)
        for _ in range(repeats):
            t0 = time.perf_counter()
            pool.rollout(model, datas, s0, nstep=nstep, state=out)
            walls.append(time.perf_counter() - t0)
    wall = float(np.median(walls))
    # sanity: every copy identical and still closed
    gap = loop_gap(model, out[:2, -1, 1:1 + model.nq])
    return dict(batch=batch, nstep=nstep, repeats=repeats, nthread=nthread, setting=setting, dt=timestep,
                wall_s=walls, median_wall_s=wall, steps_per_s=batch * nstep / wall, final_gap=float(gap.max()))


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--nstep", type=int, default=300)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--nthread", type=int, default=None)
    a = p.parse_args(argv)
    res = dict(case="spatial_slider_crank", mujoco=mujoco.__version__, dt=DT, integrator="RK4",
               cpu_count=os.cpu_count())
    res["accuracy"] = {s: accuracy(s) for s in SETTINGS}
    res["throughput"] = {s: rollout_throughput(a.batch, a.nstep, a.repeats, a.nthread, s) for s in SETTINGS}
    print(json.dumps(res))
    return res


if __name__ == "__main__":
    main()
