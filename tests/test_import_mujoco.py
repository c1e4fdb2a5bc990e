"""MJCF / URDF import (`jaxmbs.from_mjcf`, `from_urdf`, `compare_with_mujoco`) checked
against MuJoCo itself: tree models (no constraints in MuJoCo, so its dynamics are exact up
to its RK4) agree body by body; joint reactions at rest against MuJoCo's inverse dynamics
and interaction forces; closed loops stay closed in jaxmbs while MuJoCo's soft equality
constraints open; what is not mapped is named; malformed files fail with MuJoCo's message
and the file name; imported models batch, differentiate, save and run in environments.

Needs the mujoco package (the `mujoco` / `test` extras); skipped without it.

Cost (CPU seconds on the shared 2-core development machine, jax 0.10.2, with compilation):
the default run keeps a fast subset (free body vs MuJoCo 2 s, arm reactions 11-14 s,
four-bar loop over 0.5 s 17-19 (compilation: 20 over 2 s), contacts 3 s, CLI on an MJCF file and a malformed URDF, the example's JSON
contract 5 s, save / load, unmapped features and errors: well under a second each); the
tests over 20 s are marked slow (`pytest -m slow`): the 3D double pendulum 30, the arm 21
and the every-feature model 42 vs MuJoCo, the four-bar 20 and the delta robot 26 over 2 s,
weld 40, joint / tendon equalities 57, the CLI on the four-bar and the arm URDF 31, batch /
gradient / environment 25.
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
from jaxmbs.io import MujocoImportWarning, compare_with_mujoco, from_mjcf, from_urdf  # noqa: E402

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
# CPU seconds per test on the 2-core development machine are in the module docstring; the
# ones over 20 s are marked slow (`pytest -m slow`), a fast subset stays in the default run
SLOW = pytest.mark.slow


@pytest.mark.parametrize("case", [pytest.param("double_pendulum_3d", marks=SLOW), "free_body",
                                  pytest.param("arm6", marks=SLOW),
                                  pytest.param("features", marks=SLOW)])
def test_tree_models_agree_with_mujoco_body_by_body(case):
    """No loops, no contacts: MuJoCo's RK4 (joint coordinates) and jaxmbs's RK4 (redundant
    coordinates, exact constraints) at the same small dt give every body's position to
    1e-8 m over 2 s. MuJoCo runs the file's physics; the arm's wrist friction (not mapped)
    and joint limits (mapped to a law close to MuJoCo's, not equal to it:
    tests/test_joint_limits.py) are switched off in both simulators for the comparison."""
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


# a pendulum whose body frame origin swings (the hinge is 0.4 m above it): both simulators
# integrate the same ODE with RK4 at the same dt, so they agree to RK4's truncation error
PENDULUM_XML = """<mujoco model="pendulum">
  <compiler angle="radian" inertiafromgeom="false"/>
  <option timestep="0.001" integrator="RK4" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="link" pos="0 0 0.6">
      <joint name="hinge" type="hinge" pos="0 0 0.4" axis="0 1 0"/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.02 0.02 0.001"/>
    </body>
  </worldbody>
  <keyframe><key name="k" qpos="1.2" qvel="0.5"/></keyframe>
</mujoco>"""


def test_comparison_reads_mujoco_at_the_same_instant():
    """compare_with_mujoco recomputes MuJoCo's body poses and energy from the state mj_step
    leaves (after mj_step, d.xpos is that of RK4's last stage, not of the new state). On a
    pendulum both RK4 runs agree to 2.5e-12 m and 4e-11 J over 1 s at dt = 1e-3 s; read
    straight after mj_step, MuJoCo's positions lagged by 3.8e-9 m and its energy by 8.8e-9
    J (measured), so the bounds below fail on the stale reading."""
    res = compare_with_mujoco(PENDULUM_XML, 1.0, 1e-3, keyframe="k")
    assert np.max(np.ptp(res["mujoco_pos"], axis=0)) > 0.1  # the body swings
    assert res["max_position_difference"] < 1e-10
    assert res["max_orientation_difference"] < 1e-10
    Ej, Em = res["energy"]["jaxmbs"], res["energy"]["mujoco"]
    assert np.max(np.abs(Ej - Em)) < 1e-9


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
    for _k, (mjn, j) in enumerate(zip(("shoulder_pan", "shoulder_lift", "elbow", "wrist_roll1",
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


# ------------------------------------------------------------------- closed loops
@pytest.mark.parametrize("name,t1", [("spatial_four_bar", 0.5),
                                     pytest.param("spatial_four_bar", 2.0, marks=SLOW),
                                     pytest.param("delta_robot", 2.0, marks=SLOW)])
def test_shipped_loops_stay_closed_while_mujoco_equalities_open(name, t1):
    """t1 s (2 s in the slow run), RK4, dt 1e-3, from rest under gravity: jaxmbs keeps
    every loop closed to 1e-10 m; MuJoCo (the file's own, default, equality settings) opens
    them by more than 1e-5 m (measured over 2 s: 1.4e-3 m and 6e-4 m, BENCHMARKS.md)."""
    res = compare_with_mujoco(MODELS / f"{name}.xml", t1, 1e-3)
    assert res["jaxmbs_status"] == 0
    assert np.max(res["loop_gap"]["jaxmbs"]) < 1e-10
    assert np.max(res["loop_gap"]["mujoco"]) > 1e-5
    assert res["jaxmbs_energy_balance_drift"] < 1e-6


# ------------------------------------------------------------------ equalities
TIGHT = 'solref="0.002 1" solimp="0.9999 0.9999 0.001 0.5 2"'


@SLOW
def test_weld_equality_moves_like_the_rigidly_merged_body():
    """A body welded to a pendulum by a <weld> equality (jaxmbs: exact weld) moves as MuJoCo
    moves the same body attached without a joint (a tree: exact in MuJoCo)."""
    merged = """<mujoco><compiler angle="radian" inertiafromgeom="false" fusestatic="false"/>
    <option gravity="0 0 -9.81"/><worldbody>
     <body name="A"><joint name="h" type="hinge" axis="0.2 1 0"/>
      <inertial pos="0 0 -0.3" mass="1" diaginertia="0.01 0.01 0.002"/>
      <body name="B" pos="0.1 0.05 -0.3" euler="0.3 -0.2 0.5">
       <inertial pos="0.02 0 -0.05" quat="0.9 0.1 0.3 0.2" mass="0.7" diaginertia="0.004 0.003 0.002"/>
      </body></body></worldbody>
    <keyframe><key name="k" qpos="0.4" qvel="2.0"/></keyframe></mujoco>"""
    m = mujoco.MjModel.from_xml_string(merged)
    d = mujoco.MjData(m)
    mujoco.mj_forward(m, d)  # qpos0: the pose of B written into the welded file
    xpos0, xquat0 = d.xpos[2].copy(), d.xquat[2].copy()
    f = lambda x: " ".join(repr(float(v)) for v in x)
    welded = f"""<mujoco><compiler angle="radian" inertiafromgeom="false"/>
    <option gravity="0 0 -9.81"/><worldbody>
     <body name="A"><joint name="h" type="hinge" axis="0.2 1 0"/>
      <inertial pos="0 0 -0.3" mass="1" diaginertia="0.01 0.01 0.002"/></body>
     <body name="B" pos="{f(xpos0)}" quat="{f(xquat0)}"><freejoint/>
      <inertial pos="0.02 0 -0.05" quat="0.9 0.1 0.3 0.2" mass="0.7" diaginertia="0.004 0.003 0.002"/>
     </body></worldbody>
    <equality><weld name="glue" body1="A" body2="B" anchor="0.01 0.02 0.03"/></equality></mujoco>"""
    d.qpos[:], d.qvel[:] = m.key_qpos[0], m.key_qvel[0]  # the initial state of both
    mujoco.mj_forward(m, d)
    jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    mujoco.mj_jac(m, d, jp, jr, d.xpos[2], 2)
    qpos = np.r_[d.qpos[0], d.xpos[2], d.xquat[2]]
    qvel = np.r_[d.qvel[0], jp @ d.qvel, d.xmat[2].reshape(3, 3).T @ (jr @ d.qvel)]
    model = from_mjcf(welded, qpos=qpos, qvel=qvel)
    assert model.mujoco.equalities == {"glue": ("glue", "weld")}
    ref = compare_with_mujoco(merged, 1.0, 2.5e-4, keyframe="k")
    res = compare_with_mujoco(welded, 1.0, 2.5e-4, qpos=qpos, qvel=qvel)
    assert ref["bodies"] == res["bodies"] == ["A", "B"]
    assert np.ptp(ref["mujoco_pos"][:, 1], axis=0).max() > 0.1
    assert np.max(np.abs(res["jaxmbs_pos"] - ref["mujoco_pos"])) < 1e-8
    assert np.max(res["loop_gap"]["jaxmbs"]) < 1e-12


@SLOW
def test_joint_and_tendon_equalities_are_exact_and_agree_with_a_stiff_mujoco():
    """<joint> equalities (polynomial couplings, with joint refs and a keyframe that is not
    qpos0) and a fixed-length two-site <tendon> (a distance constraint) hold exactly in
    jaxmbs; MuJoCo with its stiffest equality settings follows within a few times its own
    constraint violation (a wrong offset, sign or coefficient would show as an O(0.1)
    difference, or as an inconsistent initial state that jaxmbs.simulate refuses)."""
    xml = f"""<mujoco><compiler angle="radian" inertiafromgeom="false"/>
    <option gravity="0 0 -9.81"/><worldbody>
     <site name="hook" pos="0.8 0 0.2"/>
     <body name="a"><joint name="j1" type="hinge" axis="0 1 0" ref="0.3"/>
      <inertial pos="0 0 -0.3" mass="1" diaginertia="0.01 0.01 0.002"/></body>
     <body name="b" pos="0.5 0 0"><joint name="j2" type="hinge" axis="1 0 0" ref="-0.1"/>
      <inertial pos="0 0.1 -0.2" mass="0.5" diaginertia="0.01 0.01 0.002"/></body>
     <body name="c" pos="0 0.6 0"><joint name="s3" type="slide" axis="0 0 1"/>
      <inertial pos="0 0 0" mass="0.5" diaginertia="0.01 0.01 0.002"/></body>
     <body name="bob" pos="0.8 0.3 -0.2"><freejoint/>
      <inertial pos="0.02 0 -0.03" mass="0.4" diaginertia="0.002 0.003 0.001"/>
      <site name="eye" pos="0 0 0.05"/></body>
    </worldbody>
    <tendon><spatial name="rope"><site site="hook"/><site site="eye"/></spatial></tendon>
    <equality>
     <joint name="gear" joint1="j1" joint2="j2" polycoef="0.1 2 0.3 0 0" {TIGHT}/>
     <joint name="lift" joint1="s3" joint2="j2" polycoef="-0.05 0.2 0 0 0" {TIGHT}/>
     <tendon name="rod" tendon1="rope" {TIGHT}/>
    </equality>
    <keyframe><key name="k" qpos="0.812 0.1 -0.01  0.8 0.3 -0.2 1 0 0 0"/></keyframe></mujoco>"""
    model = from_mjcf(xml, keyframe="k")
    eq = model.mujoco.equalities
    assert eq == {"gear": ("gear", "joint"), "lift": ("lift", "joint"), "rod": ("rod", "distance")}
    assert model.mujoco.unmapped == []
    res = compare_with_mujoco(xml, 1.0, 5e-4, keyframe="k")
    assert res["jaxmbs_status"] == 0
    assert np.max(res["loop_gap"]["jaxmbs"]) < 1e-10
    gap = np.max(res["loop_gap"]["mujoco"])
    assert gap < 1e-4  # MuJoCo holds them too (softly)
    assert np.ptp(res["mujoco_pos"][:, -1], axis=0).max() > 0.01  # the bob swings
    bd = res["body_differences"]
    # the coupled joints (angles: rad, displacement: m) and the bob's path on the rod; the
    # bob's own rotation about its eye is a chaotic double-pendulum motion that any
    # difference (here MuJoCo's softness) amplifies, so its orientation is not compared
    for b in ("a", "b", "c"):
        assert bd[b][0] < 10 * gap and bd[b][1] < 10 * gap, (b, bd[b], gap)
    assert bd["bob"][0] < 10 * gap, (bd["bob"], gap)


# ------------------------------------------------------------- unmapped features
EXPECTED_UNMAPPED = {
    "double_pendulum_3d.xml": [],
    "free_body.xml": [],
    "arm6.urdf": ["frictionloss of joint 'wrist_roll2'"],
    "spatial_four_bar.xml": ["sensors ('crank_angle', 'coupler_mid_pos')",
                             "sites used only by sensors ('coupler_mid')"],
    "delta_robot.xml": [],
}


@pytest.mark.parametrize("name", sorted(EXPECTED_UNMAPPED))
def test_every_unmapped_feature_of_the_shipped_models_is_named_in_one_warning(name):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        model = from_mjcf(MODELS / name)
    mine = [x for x in w if issubclass(x.category, MujocoImportWarning)]
    assert sorted(model.mujoco.unmapped) == sorted(EXPECTED_UNMAPPED[name])
    if not EXPECTED_UNMAPPED[name]:
        assert not mine
        return
    assert len(mine) == 1
    text = str(mine[0].message)
    assert str(MODELS / name) in text
    for item in EXPECTED_UNMAPPED[name]:
        assert item in text


def test_unmapped_features_of_a_synthetic_model_are_all_named():
    xml = """<mujoco><compiler angle="radian" inertiafromgeom="false" autolimits="true"/>
    <option gravity="0 0 -9.81" density="1.2" viscosity="1e-5"/>
    <worldbody>
     <geom name="floor" type="plane" size="1 1 0.1"/>
     <body name="a" pos="0 0 1" gravcomp="0.5"><joint name="ja" type="hinge" axis="0 1 0" frictionloss="0.1"/>
      <inertial pos="0 0 -0.2" mass="1" diaginertia="0.01 0.01 0.002"/>
      <geom name="abox" type="box" size="0.05 0.05 0.05"/>
      <body name="b" pos="0 0 -0.4"><joint name="jb" type="ball" damping="0.1"/>
       <inertial pos="0 0 -0.2" mass="1" diaginertia="0.01 0.01 0.002"/>
       <site name="sb"/></body></body>
     <body name="g" pos="1 0 1"><joint name="g1" type="hinge" axis="1 0 0" armature="0.1"/>
      <joint name="g2" type="hinge" axis="0 1 0"/>
      <inertial pos="0 0 -0.2" mass="1" diaginertia="0.01 0.01 0.002"/><site name="sg"/></body>
     <body name="f" pos="2 0 1"><joint name="ff" type="free" armature="0.01"/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.01 0.01 0.01"/></body>
    </worldbody>
    <tendon><spatial name="cable"><site site="sb"/><site site="sg"/></spatial></tendon>
    <equality><connect name="off" body1="a" body2="f" anchor="0 0 0" active="false"/></equality>
    <actuator><position name="slow" joint="ja" kp="10" timeconst="0.1"/>
     <motor name="pull" tendon="cable"/></actuator>
    </mujoco>"""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        model = from_mjcf(xml)
    text = str([x for x in w if issubclass(x.category, MujocoImportWarning)][0].message)
    for item in ["frictionloss of joint 'ja'", "damping of ball joint 'jb'",
                 "armature of joint 'g1' (part of a composite joint)", "armature of free joint 'ff'",
                 "tendon 'cable'", "connect equality 'off' (inactive)",
                 "actuator 'slow' (activation dynamics)",
                 "actuator 'pull' (transmission other than a joint)",
                 "fluid forces", "gravity compensation (gravcomp) of bodies 'a'", "contacts ("]:
        assert item in text, item
    assert len(model.mujoco.unmapped) == 11
    model.build()  # the rest still builds


_LINK = ('<link name="{}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1" '
         'ixy="0" ixz="0" iyz="0"/></inertial></link>')
_URDF = ('<robot name="r">{world}' + _LINK.format("base") + _LINK.format("arm") +
         '<joint name="hinge" type="continuous"><parent link="base"/><child link="arm"/>'
         '<origin xyz="0 0 0.5"/><axis xyz="0 1 0"/></joint></robot>')
_FLOAT = ('<link name="world"/><joint name="float" type="floating"><parent link="world"/>'
          '<child link="base"/></joint>')


def test_urdf_import_says_the_base_is_welded_to_the_world_and_how_to_float_it(tmp_path):
    fixed, floating = tmp_path / "fixed.urdf", tmp_path / "floating.urdf"
    fixed.write_text(_URDF.format(world=""))
    floating.write_text(_URDF.format(world=_FLOAT))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        model = from_urdf(fixed)
    text = " ".join(str(x.message) for x in w if issubclass(x.category, MujocoImportWarning))
    assert str(fixed) in text and "root link 'base'" in text and "welded to the world" in text
    assert "type 'floating'" in text
    assert model.mujoco.notes and not model.mujoco.unmapped
    assert model.build().mechanism.body_names == ("arm",)  # the base is the ground
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        model = from_urdf(floating)
    assert not [x for x in w if issubclass(x.category, MujocoImportWarning)]
    assert model.mujoco.notes == []
    assert model.build().mechanism.body_names == ("base", "arm")  # a free base


def test_missing_or_empty_model_file_names_the_problem(tmp_path):
    with pytest.raises(ValueError, match="empty file name ''"):
        from_mjcf("")
    with pytest.raises(ValueError, match=re.escape(str(tmp_path / "none.xml")) + ": no such file"):
        from_mjcf(tmp_path / "none.xml")
    with pytest.raises(ValueError, match="is a folder"):
        from_mjcf(tmp_path)


def test_import_errors_name_the_file_and_the_body(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text('<mujoco><worldbody><body><joint type="hinge" axis="0 0 0"/>'
                   '<geom size=".1"/></body></worldbody></mujoco>')
    with pytest.raises(ValueError, match=re.escape(str(bad)) + ".*axis too small"):
        from_mjcf(bad)
    with pytest.raises(ValueError, match="<MJCF string>: .*Schema violation"):
        from_mjcf("<mujoco><worldbody><nonsense/></worldbody></mujoco>")
    # a massless body with a joint carries its mass in a child without joint: merged, so
    # the jaxmbs body has the child's mass (MuJoCo itself refuses massless moving bodies
    # that carry nothing)
    merged = """<mujoco><compiler inertiafromgeom="false" fusestatic="false"/><worldbody>
      <body name="rod"><joint type="ball"/>
       <body name="bob" pos="0.3 0 -0.4"><inertial pos="0.05 0 0" mass="1" diaginertia="0.01 0.02 0.03"/>
      </body></body></worldbody></mujoco>"""
    mech, params, _, _ = from_mjcf(merged).build()
    assert mech.body_names == ("rod",) and float(mech.get(params, "rod.mass")) == 1.0
    np.testing.assert_allclose(mech.get(params, "rod.cg"), [0.35, 0.0, -0.4], atol=1e-15)
    skew = """<mujoco><compiler inertiafromgeom="false"/><worldbody>
      <body name="odd"><joint name="h" type="hinge" axis="1 0 0"/><joint name="s" type="slide" axis="0 1 0"/>
       <inertial pos="0 0 0" mass="1" diaginertia="1 1 1"/></body></worldbody></mujoco>"""
    with pytest.raises(ValueError, match="MuJoCo body 'odd' has joints 'h' \\(hinge\\), 's' \\(slide\\)"):
        from_mjcf(skew)
    with pytest.raises(ValueError, match="from_urdf expects a .urdf file"):
        from_urdf(MODELS / "delta_robot.xml")


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "jaxmbs.cli", "simulate", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=900,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def _assert_cli_rejects_a_malformed_urdf(tmp_path):
    bad = tmp_path / "broken.urdf"
    bad.write_text("<robot name='r'><link name='a'/><joint name='j' type='revolute'>"
                   "<parent link='a'/><child link='missing'/></joint></robot>")
    out = _cli(str(bad), "--t1", "0.1")
    assert out.returncode == 2
    assert f"model file {bad}:" in out.stderr and "error" in out.stderr.lower()


def test_cli_simulates_an_mjcf_file_and_rejects_a_malformed_urdf(tmp_path):
    out = _cli(str(MODELS / "free_body.xml"), "--t1", "0.05", "--json")
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["failed"] == 0
    _assert_cli_rejects_a_malformed_urdf(tmp_path)


@SLOW
def test_cli_simulates_mjcf_and_urdf_files_and_rejects_malformed_ones(tmp_path):
    for f in ("spatial_four_bar.xml", "arm6.urdf"):
        out = _cli(str(MODELS / f), "--t1", "0.05", "--json")
        assert out.returncode == 0, out.stderr
        res = json.loads(out.stdout.strip().splitlines()[-1])
        assert res["failed"] == 0 and res["max_constraint_error"] < 1e-10
        assert "not mapped to jaxmbs" in out.stderr  # the warning reaches the user
    _assert_cli_rejects_a_malformed_urdf(tmp_path)


# ---------------------------------------------------------------------- contacts
def test_contacts_map_sphere_capsule_and_plane_geoms_with_the_geoms_friction():
    xml = """<mujoco><compiler angle="radian" inertiafromgeom="false"/>
    <option gravity="0 0 -9.81"/><worldbody>
     <geom name="floor" type="plane" size="2 2 0.1" friction="0.6 0.005 0.0001"/>
     <body name="ball" pos="0 0 0.3"><freejoint/>
      <inertial pos="0 0 0" mass="0.5" diaginertia="2e-3 2e-3 2e-3"/>
      <geom name="ball" type="sphere" size="0.1" friction="0.9"/></body>
     <body name="pill" pos="0.6 0 0.3" euler="0 1.5707963267948966 0"><freejoint/>
      <inertial pos="0 0 0" mass="0.3" diaginertia="1e-3 1e-3 4e-4"/>
      <geom name="pill" type="capsule" size="0.05 0.1" friction="0.3"/></body>
     <body name="cube" pos="-0.6 0 0.3"><freejoint/>
      <inertial pos="0 0 0" mass="0.2" diaginertia="1e-4 1e-4 1e-4"/>
      <geom name="cube" type="box" size="0.05 0.05 0.05"/></body>
    </worldbody></mujoco>"""
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        plain = from_mjcf(xml)
    assert any("contacts (6 geom pair(s) can collide" in str(x.message) for x in w)
    assert plain.build()[0].force_blocks == ()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        model = from_mjcf(xml, contacts=dict(k=1e5, damping=20.0))  # damped: rests soon
    assert sorted(model.mujoco.unmapped) == [
        "contacts of box-capsule geom pairs (1: pill-cube)",
        "contacts of box-plane geom pairs (1: floor-cube)",
        "contacts of box-sphere geom pairs (1: ball-cube)",
        "contacts of capsule-sphere geom pairs (1: ball-pill)"]
    mech, params, q0, v0 = model.build()
    names = [n for b in mech.force_blocks for n in b.names]
    assert sorted(names) == ["floor-ball", "floor-pill_end0", "floor-pill_end1"]
    assert float(mech.get(params, "floor-ball.mu")) == 0.9  # the larger of the pair's
    assert float(mech.get(params, "floor-pill_end0.mu")) == 0.6
    assert float(mech.get(params, "floor-ball.damping")) == 20.0
    tr = mb.simulate(mech, params, q0, v0, (0.0, 1.5), 1e-3, save_every=1500)
    assert int(tr.status) == 0
    k = float(mech.get(params, "floor-ball.k"))
    z = lambda body: float(tr.q[-1, mech.coordinate_index(f"{body}.z")])
    # at rest on the floor: k delta^1.5 = m g (Hunt-Crossley static equilibrium)
    for body, r, mass in (("ball", 0.1, 0.5), ("pill", 0.05, 0.3 / 2)):
        delta = (mass * 9.81 / k) ** (1 / 1.5)
        assert abs(z(body) - (r - delta)) < 1e-5, (body, z(body), r - delta)
    assert z("cube") < -1.0  # the box has no contact: it falls through


# ------------------------------------------------- batches, gradients, environments
def test_imported_models_save_and_load_bit_for_bit(tmp_path):
    # the import is recorded as builder calls, and the file rebuilds bit for bit
    # (armature, springs, ball joint with armature as inertia)
    model = from_mjcf(MODELS / "double_pendulum_3d.xml", keyframe="swing")
    mech, params, q0, v0 = model.build()
    assert "elbow_armature.inertia" in mech.param_names()
    path = tmp_path / "dp.json"
    mb.save_model(model, path)
    mech2, params2, q02, v02 = mb.load_model(path).build()
    assert mech2.coordinate_names() == mech.coordinate_names()
    np.testing.assert_array_equal(q02, q0)
    np.testing.assert_array_equal(v02, v0)
    for a, b in zip(jax.tree_util.tree_leaves(params2), jax.tree_util.tree_leaves(params)):
        np.testing.assert_array_equal(a, b)


@SLOW
def test_imported_models_batch_differentiate_and_run_in_an_environment():
    from jaxmbs.envs.core import MechanismEnv
    from jaxmbs.envs.spaces import Box

    # batch over a parameter of an imported model
    mech, params, q0, v0 = from_mjcf(MODELS / "free_body.xml", keyframe="spin").build()
    J0 = mech.get(params, "racket.inertia")
    E = jnp.zeros((3, 3)).at[0, 0].set(1.0)
    inertia = lambda ds: J0 + ds * E  # about the CG, body axes: changes the tumbling
    P = jax.vmap(lambda ds: mech.replace(params, {"racket.inertia": inertia(ds)}))(
        jnp.array([0.0, 2e-4, 4e-4]))
    tr = mb.simulate_batch(mech, P, q0, v0, (0.0, 0.2), 1e-3, state_axis=None, save_every=200)
    assert np.all(np.asarray(tr.status) == 0)
    Q = np.asarray(tr.q[:, -1, 3:7])
    assert np.all(np.linalg.norm(np.diff(Q, axis=0), axis=1) > 1e-6)
    # gradient through the simulation against central differences
    ci = mech.coordinate_index("racket.q1")

    def final(ds):
        p = mech.replace(params, {"racket.inertia": inertia(ds)})
        return mb.simulate(mech, p, q0, v0, (0.0, 0.2), 1e-3, save_every=200).q[-1, ci]
    g = float(jax.grad(final)(1e-4))
    h = 1e-6
    fd = (float(final(1e-4 + h)) - float(final(1e-4 - h))) / (2 * h)
    assert abs(g) > 1.0 and g == pytest.approx(fd, rel=1e-5)
    # an environment on an imported model with a MuJoCo motor as its action
    four_bar = _quiet(from_mjcf, MODELS / "spatial_four_bar.xml")

    class FourBarEnv(MechanismEnv):
        def __init__(self, **kw):
            super().__init__(substeps=10, **kw)  # 10 ms control period, 1 ms physics steps
            self.mechanism, self._mech_params, self._q0, self._v0 = four_bar.build()
            self._task = dict(dt=0.01, max_steps=20)
            self.observation_space = Box(-np.inf, np.inf, (self.mechanism.n_coords + self.mechanism.n_vel,), self.dtype)
            self.action_space = Box(-1.0, 1.0, (1,), self.dtype)

        def _initial(self, key, p):
            return self._q0, self._v0, {}

        def _controls(self, action, state, p):
            return jnp.asarray(action, self.dtype)

        def _observe(self, s, p):
            return jnp.concatenate([s.q, s.v])

        def _reward(self, s, action, u, new, p):
            return -jnp.sum(new.v ** 2)

        def _terminated(self, s, p):
            return jnp.zeros((), bool)

    env = FourBarEnv()
    p = env.default_params
    step = jax.jit(env.step)
    finals = []
    for a in (-1.0, 1.0, 3.0):  # 3 is clipped to the motor's ctrlrange (-1, 1)
        obs, s = env.reset(jax.random.key(0), p)
        for k in range(5):
            obs, s, r, term, trunc, info = step(jax.random.key(k), s, jnp.asarray([a]), p)
            assert int(info["status"]) == 0
        assert float(env.constraint_error(s, p)) < 1e-10
        finals.append(np.asarray(s.q))
    assert np.max(np.abs(finals[0] - finals[1])) > 1e-4
    np.testing.assert_allclose(finals[1], finals[2], atol=1e-14)


# ------------------------------------------------------------------------ example
def test_import_example_json_contract(tmp_path):
    """examples/import_mujoco.py --json (short horizon here; the full run's figures are in
    VALIDATION.md section 8): the free body agrees with MuJoCo and the figure is written."""
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "import_mujoco.py"), "--json",
                        "--models", "free_body", "--t1", "0.5", "--plot-dir", str(tmp_path)],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path,
                       env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stderr[-2000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])["free_body"]
    assert out["jaxmbs_status"] == 0 and out["t1"] == 0.5 and out["loop_gap_jaxmbs"] is None
    assert out["max_position_difference"] < 1e-8 and out["max_orientation_difference"] < 1e-7
    assert out["energy_drift_jaxmbs"] < 1e-8 and out["unmapped"] == []
    assert (tmp_path / "import_free_body.png").stat().st_size > 10_000
