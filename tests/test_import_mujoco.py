"""MJCF / URDF import (`jaxmbs.from_mjcf`, `from_urdf`, `compare_with_mujoco`) checked
against MuJoCo itself: tree models (no constraints in MuJoCo, so its dynamics are exact up
to its RK4) agree body by body; joint reactions at rest against MuJoCo's inverse dynamics
and interaction forces; closed loops stay closed in jaxmbs while MuJoCo's soft equality
constraints open; what is not mapped is named; malformed files fail with MuJoCo's message
and the file name; imported models batch, differentiate, save and run in environments.

Needs the mujoco package (the `mujoco` / `test` extras); skipped without it.
"""
import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="the MJCF / URDF importer needs the mujoco "
                             "package (pip install 'jaxmbs[mujoco]')")

import jaxmbs as mb  # noqa: E402
from jaxmbs.importers import MujocoImportWarning, compare_with_mujoco, from_mjcf, from_urdf  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "examples" / "models"
ARM_QPOS = np.array([0.3, 0.8, 0.9, -0.5, 0.7, 0.2])  # a bent pose of arm6.urdf

# every element of this model maps exactly: slide with spring, damper and armature; a
# massive body without joint (merged into its parent) and a massless marker body; a hinge
# with spring (springref), damper and armature; hinge + slide on one axis (cylindrical),
# two perpendicular hinges (universal), three hinges through a point (spherical), two
# slides (planar translation); motor (ctrl clipped by ctrlrange), position servo (force
# clipped by forcerange), velocity servo, general affine actuator with gear
FEATURES_XML = """
<mujoco model="features">
  <compiler angle="radian" inertiafromgeom="false" autolimits="true" fusestatic="false"/>
  <option gravity="0 0 -9.81"/>
  <worldbody>
    <body name="cart" pos="0 0 0.5" euler="0 0 0.3">
      <joint name="rail" type="slide" axis="1 0 0" stiffness="5" springref="0.1" damping="0.3"
             armature="0.2"/>
      <inertial pos="0.01 0 0" mass="1" diaginertia="0.01 0.01 0.01"/>
      <body name="cart_top" pos="0.05 0.02 0.1" euler="0.1 0.2 0">
        <inertial pos="0 0.01 0.02" mass="0.5" diaginertia="0.002 0.003 0.004"/>
        <body name="pole" pos="0 0 0.05">
          <joint name="pole" type="hinge" axis="0 1 0" damping="0.02" armature="0.01"
                 stiffness="0.3" springref="-0.2"/>
          <inertial pos="0 0 -0.2" mass="0.3" diaginertia="0.004 0.004 0.0003"/>
          <body name="tip_marker" pos="0 0 -0.4"/>
        </body>
      </body>
    </body>
    <body name="spinner" pos="0.5 0 0.3">
      <joint name="spin" type="hinge" axis="0 0.3 1" damping="0.05"/>
      <joint name="lift" type="slide" axis="0 0.3 1" stiffness="8" damping="0.1" armature="0.05"/>
      <inertial pos="0.05 0 0" mass="0.4" diaginertia="0.001 0.002 0.0025"/>
    </body>
    <body name="gimbal" pos="-0.5 0 0.3">
      <joint name="gx" type="hinge" axis="1 0 0"/>
      <joint name="gy" type="hinge" axis="0 1 0"/>
      <inertial pos="0 0.02 -0.1" mass="0.3" diaginertia="0.002 0.0015 0.001"/>
    </body>
    <body name="wrist" pos="0 0.5 0.3">
      <joint name="wx" type="hinge" axis="1 0 0"/>
      <joint name="wy" type="hinge" axis="0 1 0"/>
      <joint name="wz" type="hinge" axis="0 0 1"/>
      <inertial pos="0.03 0 -0.08" mass="0.3" diaginertia="0.002 0.0015 0.001"/>
    </body>
    <body name="slider2" pos="0 -0.5 0.3">
      <joint name="sx" type="slide" axis="1 0 0"/>
      <joint name="sy" type="slide" axis="0 1 0.2"/>
      <inertial pos="0 0 0" mass="0.2" diaginertia="0.001 0.001 0.001"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="m_pole" joint="pole" gear="0.4" ctrlrange="-1 1"/>
    <position name="p_rail" joint="rail" kp="20" kv="1" forcerange="-3 3"/>
    <velocity name="v_spin" joint="spin" kv="0.5"/>
    <general name="g_lift" joint="lift" gainprm="2 0.5 0" biasprm="0.1 -1 -0.2"
             gaintype="affine" biastype="affine" ctrlrange="-2 2" gear="1.5"/>
  </actuator>
</mujoco>
"""
FEATURES_CTRL = [1.5, 0.3, 0.4, 3.0]  # the motor's and the general actuator's are clipped


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MujocoImportWarning)
        return fn(*a, **k)


# ----------------------------------------------------------------- tree models
@pytest.mark.parametrize("case", ["double_pendulum_3d", "free_body", "arm6", "features"])
def test_tree_models_agree_with_mujoco_body_by_body(case):
    """No loops, no contacts: MuJoCo's RK4 (joint coordinates) and jaxmbs's RK4 (redundant
    coordinates, exact constraints) at the same small dt give every body's position to
    1e-8 m over 2 s. MuJoCo runs the file's physics; features jaxmbs does not map (the
    arm's joint limits and wrist friction) are switched off in MuJoCo for the comparison."""
    kw = dict(t1=2.0, dt=2.5e-4)
    if case == "double_pendulum_3d":
        res = compare_with_mujoco(MODELS / "double_pendulum_3d.xml", keyframe="swing", **kw)
    elif case == "free_body":
        res = compare_with_mujoco(MODELS / "free_body.xml", keyframe="spin", **kw)
    elif case == "arm6":
        res = compare_with_mujoco(MODELS / "arm6.urdf", qpos=ARM_QPOS,
                                  disable=("frictionloss", "limit"), **kw)
    else:
        res = compare_with_mujoco(FEATURES_XML, ctrl=FEATURES_CTRL, **kw)
    assert res["jaxmbs_status"] == 0
    # the bodies move (a test that cannot fail on a resting model would prove nothing)
    travel = np.max(np.ptp(res["mujoco_pos"], axis=0))
    assert travel > 0.05
    assert res["max_position_difference"] < 1e-8, res["body_differences"]
    assert res["max_orientation_difference"] < 1e-7, res["body_differences"]
    # the mechanical energy (dissipative elements included) agrees too
    Ej, Em = res["energy"]["jaxmbs"], res["energy"]["mujoco"]
    np.testing.assert_allclose(Ej, Em, atol=1e-7 * (1 + np.max(np.abs(Em))))


def test_arm_joint_reactions_at_rest_match_mujoco_inverse_dynamics():
    """The arm held at rest in a bent pose (every revolute driven to stay put): the
    drivers' torques equal MuJoCo's inverse dynamics qfrc_inverse (qacc = 0), and each
    joint's reaction (force on the child link, and moment about the joint point plus the
    driver torque about the axis) equals MuJoCo's interaction force cfrc_int of the child
    body, moved from the subtree centre of mass to the joint point."""
    model = _quiet(from_urdf, MODELS / "arm6.urdf", qpos=ARM_QPOS)
    info = model.mujoco
    joints = [info.joints[n][0] for n in ("shoulder_pan", "shoulder_lift", "elbow",
                                          "wrist_roll1", "wrist_pitch", "wrist_roll2")]
    for j in joints:
        model.drive_joint(f"{j}_hold", j, 0.0)
    mech, params, q0, v0 = model.build()
    inv = mb.inverse_dynamics(mech, params, q0, jnp.zeros(1))
    assert int(inv.status) == 0
    m = mujoco.MjModel.from_xml_path(str(MODELS / "arm6.urdf"))
    d = mujoco.MjData(m)
    d.qpos[:] = ARM_QPOS
    mujoco.mj_forward(m, d)
    d.qacc[:] = 0.0
    mujoco.mj_inverse(m, d)
    tau = d.qfrc_inverse.copy()
    mujoco.mj_rnePostConstraint(m, d)
    scale = np.max(np.abs(tau))
    assert scale > 1.0  # gravity loads the joints
    for k, (mjn, j) in enumerate(zip(("shoulder_pan", "shoulder_lift", "elbow", "wrist_roll1",
                                      "wrist_pitch", "wrist_roll2"), joints)):
        jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, mjn)
        b = m.jnt_bodyid[jid]
        eff = float(inv.reactions[f"{j}_hold"]["effort"][0])
        np.testing.assert_allclose(eff, tau[m.jnt_dofadr[jid]], rtol=1e-9, atol=1e-9 * scale)
        c = d.subtree_com[m.body_rootid[b]]
        torque_c, force = d.cfrc_int[b, :3], d.cfrc_int[b, 3:]
        anchor = d.xanchor[jid]
        moment_anchor = torque_c + np.cross(c - anchor, force)
        r = inv.reactions[j]
        np.testing.assert_allclose(r["force"][0], force, rtol=1e-9, atol=1e-9 * scale)
        np.testing.assert_allclose(np.asarray(r["moment"][0]) + eff * d.xaxis[jid], moment_anchor,
                                   rtol=1e-9, atol=1e-9 * scale)
