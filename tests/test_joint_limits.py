"""Joint limits (`SpatialModel.add_joint_limit`, family 'joint_limit', imported from MJCF
`range` on limited hinge and slide joints) checked against MuJoCo itself.

The law is MuJoCo's soft limit with the joint's acceleration from the other forces
(a0) taken as 0 and its inverse inertia as MuJoCo's dof_invweight0 (jaxmbs.spatial.limits):
its force is compared with MuJoCo's own constraint terms (reference acceleration,
regulariser) on every side of every limit of a model to round-off; the motions it gives
are compared with MuJoCo's on a pendulum falling onto its limit and on gymnasium's
reacher driven into its elbow limit, next to the motion without the limit.

Needs the mujoco package; the gymnasium models also gymnasium (skipped without them). Cost
on the shared 2-core development machine (compilation included, empty compilation cache):
the law 2 s, the pendulum 12 s, builder errors 1 s; marked slow (`pytest -m slow`): the
reacher 29 s and the inverted pendulum 28 s.
"""
import warnings
from pathlib import Path

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco", reason="the MJCF importer needs the mujoco package")

import jaxmbs as mb  # noqa: E402
from jaxmbs.io import MujocoImportWarning, compare_with_mujoco, from_mjcf  # noqa: E402

# independent bodies, one limited joint each, in the states below: deep past the lower
# side (default solref / solimp, moving in), in the upper side's impedance transition with
# a margin (leaving fast: the force is clamped to zero), a slide inside its margin only,
# a slide with the direct solref form, a hinge with a timeconst under 2 timesteps (MuJoCo
# raises it to 2 dt) past its lower side, and a hinge inside its range (no force)
LAW_XML = """<mujoco model="limits">
  <compiler angle="radian" inertiafromgeom="false"/>
  <option timestep="0.01" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="a" pos="0 0 1"><joint name="ha" type="hinge" axis="0 1 0" range="-0.5 0.5"/>
      <inertial pos="0 0 -0.3" mass="1" diaginertia="0.02 0.02 0.001"/></body>
    <body name="b" pos="1 0 1"><joint name="hb" type="hinge" axis="1 0 0" range="-1 0.4"
        margin="0.02" solimplimit="0.8 0.95 0.1 0.3 3" solreflimit="0.03 0.7"/>
      <inertial pos="0 0.1 -0.2" mass="2" diaginertia="0.03 0.02 0.01"/></body>
    <body name="c" pos="2 0 1"><joint name="sc" type="slide" axis="0 0 1" range="-0.2 0.3"
        margin="0.05" solimplimit="0.9 0.99 0.02 0.5 2"/>
      <inertial pos="0 0 0" mass="0.5" diaginertia="0.01 0.01 0.01"/></body>
    <body name="d" pos="3 0 1"><joint name="sd" type="slide" axis="1 0 0" range="-0.2 0.3"
        solreflimit="-2000 -30" armature="0.3"/>
      <inertial pos="0 0 0" mass="0.5" diaginertia="0.01 0.01 0.01"/></body>
    <body name="e" pos="4 0 1"><joint name="he" type="hinge" axis="0 1 0" range="-0.5 0.5"
        solreflimit="0.015 1"/>
      <inertial pos="0 0 -0.3" mass="1" diaginertia="0.02 0.02 0.001"/></body>
    <body name="f" pos="5 0 1"><joint name="hf" type="hinge" axis="0 1 0" range="-0.5 0.5"/>
      <inertial pos="0 0 -0.3" mass="1" diaginertia="0.02 0.02 0.001"/></body>
  </worldbody>
</mujoco>"""
LAW_QPOS = [-0.55, 0.43, -0.17, 0.32, -0.502, 0.1]
LAW_QVEL = [-0.7, -3.0, 0.4, 0.5, -1.0, 2.0]


def test_the_limit_law_is_mujocos_soft_limit_with_a0_zero():
    """jaxmbs's limit force on each joint equals MuJoCo's constraint force with a0 = 0,
    max(0, aref / (A + R)) per side (A: the joint's inverse inertia in this, the initial,
    state), from MuJoCo's own aref and R (its solref, solimp, margin, refsafe clamp,
    direct form, dof_invweight0 without the armature); MuJoCo's actual limit force is
    (aref - a0) / (A + R), a0 from the other forces (what the law leaves out)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MujocoImportWarning)
        model = from_mjcf(LAW_XML, qpos=LAW_QPOS, qvel=LAW_QVEL)
    assert model.mujoco.unmapped == []
    mech, params, q0, v0 = model.build()
    out = mb.force_outputs(mech, params, q0, v0)

    m = mujoco.MjModel.from_xml_string(LAW_XML)
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = LAW_QPOS, LAW_QVEL
    mujoco.mj_forward(m, d)
    expected = np.zeros(m.njnt)
    rows, differences = 0, []
    Minv = np.zeros((m.nv, m.nv))
    mujoco.mj_solveM(m, d, Minv, np.eye(m.nv))  # the inverse joint-space mass matrix
    for i in range(d.nefc):
        if d.efc_type[i] != mujoco.mjtConstraint.mjCNSTR_LIMIT_JOINT:
            continue
        j = d.efc_id[i]
        dof = m.jnt_dofadr[j]
        J = d.efc_J.reshape(d.nefc, m.nv)[i]  # dense Jacobian (nv < 60)
        sign = np.sign(J[dof])  # +1: lower side, -1: upper side
        A = Minv[dof, dof]  # the joint's inverse inertia in this (the initial) state
        mine = max(0.0, d.efc_aref[i] / (A + d.efc_R[i]))
        expected[j] += sign * mine
        # MuJoCo's force: (aref - a0) / (A + R), a0 from all the other forces
        a0 = sign * d.qacc_smooth[dof]
        np.testing.assert_allclose(d.efc_force[i], max(0.0, (d.efc_aref[i] - a0) / (A + d.efc_R[i])),
                                   rtol=1e-6, atol=1e-9)
        if mine > 0 and d.efc_force[i] > 0:  # the difference: a0 / (A + R)
            np.testing.assert_allclose(mine - d.efc_force[i], a0 / (A + d.efc_R[i]),
                                       rtol=1e-6, atol=1e-9)
            differences.append(abs(mine - d.efc_force[i]))
        rows += 1
    assert rows == 5  # every joint but hf has an active side
    names = ["ha", "hb", "sc", "sd", "he", "hf"]
    got = np.array([float(out[f"{n}_limit"]["force"]) for n in names])
    pos = np.array([float(out[f"{n}_limit"]["position"]) for n in names])
    np.testing.assert_allclose(pos, LAW_QPOS, rtol=0, atol=1e-12)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)
    assert np.count_nonzero(got) == 4  # hb is leaving fast: clamped to zero, hf inside
    assert len(differences) == 4


PENDULUM_XML = """<mujoco model="limited pendulum">
  <compiler angle="radian" inertiafromgeom="false"/>
  <option timestep="0.001" integrator="RK4" gravity="0 0 -9.81"/>
  <worldbody>
    <body name="link" pos="0 0 0.6">
      <joint name="hinge" type="hinge" pos="0 0 0.4" axis="0 1 0" range="-0.3 1.5"/>
      <inertial pos="0 0 0" mass="1" diaginertia="0.02 0.02 0.001"/>
    </body>
  </worldbody>
  <keyframe><key name="k" qpos="1.2"/></keyframe>
</mujoco>"""


def _mujoco_run(xml, dt, n, limit, qpos=None, qvel=None, key=None):
    """MuJoCo alone (RK4 at dt): qpos (n + 1, nq) and body positions (n + 1, nbody, 3)."""
    m = mujoco.MjModel.from_xml_string(xml) if xml.lstrip().startswith("<") else \
        mujoco.MjModel.from_xml_path(xml)
    m.opt.timestep = dt
    m.opt.integrator = int(mujoco.mjtIntegrator.mjINT_RK4)
    if not limit:
        m.opt.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_LIMIT)
    d = mujoco.MjData(m)
    if key is not None:
        mujoco.mj_resetDataKeyframe(m, d, key)
    if qpos is not None:
        d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(m, d)
    qs, xs = [d.qpos.copy()], [d.xpos.copy()]
    for _ in range(n):
        mujoco.mj_step(m, d)
        mujoco.mj_kinematics(m, d)
        qs.append(d.qpos.copy())
        xs.append(d.xpos.copy())
    return np.array(qs), np.array(xs)


def test_a_pendulum_falls_onto_its_limit_as_in_mujoco():
    """Released at 1.2 rad, the pendulum swings down onto its lower limit (-0.3 rad, MuJoCo's
    default solref / solimp) at 4.6 rad/s, sinks to -0.338 rad in MuJoCo and bounces back.
    Over 1 s (RK4, dt 1e-3) jaxmbs's angle stays within 8.8e-3 rad of MuJoCo's (3.5e-3 m at
    the body origin, 0.4 m from the axis; measured); without the limit (MuJoCo, which then
    agrees with jaxmbs to round-off) the angle differs by 1.31 rad."""
    res = compare_with_mujoco(PENDULUM_XML, 1.0, 1e-3, keyframe="k")
    P = res["jaxmbs_pos"][:, 0]
    angle_j = np.arctan2(-P[:, 0], 1.0 - P[:, 2])
    step = int(round((res["t"][1] - res["t"][0]) / 1e-3))
    qm, _ = _mujoco_run(PENDULUM_XML, 1e-3, 1000, True, key=0)
    q_free, _ = _mujoco_run(PENDULUM_XML, 1e-3, 1000, False, key=0)
    angle_m, angle_free = qm[::step, 0], q_free[::step, 0]
    assert angle_m.min() < -0.33  # the limit engaged: MuJoCo sinks past it
    assert res["jaxmbs_status"] == 0
    assert np.max(np.abs(angle_j - angle_m)) < 0.015
    assert res["max_position_difference"] < 6e-3
    assert np.max(np.abs(angle_free - angle_m)) > 1.0


GYM_ASSETS = ("envs", "mujoco", "assets")


def _gym_file(name):
    gym = pytest.importorskip("gymnasium")
    return str(Path(gym.__file__).parent.joinpath(*GYM_ASSETS, name))


def _against_mujoco_without_limits(xml, res, bodies, dt, qpos, qvel):
    """(jaxmbs - MuJoCo, MuJoCo without limits - MuJoCo) largest body position differences
    (m) over `bodies`, and MuJoCo's qpos history. MuJoCo without limits stands for jaxmbs
    without them (the two agree to round-off: 5.7e-13 m on the reacher, measured)."""
    n = len(res["t"]) - 1
    qm, xm = _mujoco_run(xml, dt, n, True, qpos, qvel)
    _, x_free = _mujoco_run(xml, dt, n, False, qpos, qvel)
    m = mujoco.MjModel.from_xml_path(xml)
    ids = [mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, b) for b in bodies]
    cols = [res["bodies"].index(b) for b in bodies]
    np.testing.assert_allclose(res["mujoco_pos"][:, cols], xm[:, ids], rtol=0, atol=1e-15)
    diff = np.max(np.linalg.norm(res["jaxmbs_pos"][:, cols] - xm[:, ids], axis=-1))
    free = np.max(np.linalg.norm(x_free[:, ids] - xm[:, ids], axis=-1))
    return diff, free, qm


@pytest.mark.slow
def test_reacher_driven_into_its_elbow_limit_moves_as_in_mujoco():
    """gymnasium's reacher.xml (armature 1, damping 1, elbow range +-3 rad; the target's two
    slides form a planar translation, whose limits stay unmapped, at rest here), the elbow
    thrown at 8 rad/s from 2.5 rad into its upper limit (MuJoCo: to 3.039 rad), at the
    file's RK4 dt 0.01 s for 1 s: the arm's bodies stay within 7.7e-4 m of MuJoCo's
    (fingertip; body1's orientation 7.0e-3 rad), measured; without the limit they differ
    by 0.22 m."""
    xml = _gym_file("reacher.xml")
    qpos, qvel = [0.0, 2.5, 0.1, -0.1], [1.0, 8.0, 0.0, 0.0]
    res = compare_with_mujoco(xml, 1.0, 0.01, qpos=qpos, qvel=qvel, save_every=1)
    assert res["unmapped"] and all("target_" in u for u in res["unmapped"])
    assert res["jaxmbs_status"] == 0
    diff, free, qm = _against_mujoco_without_limits(xml, res, ["body0", "body1", "fingertip"],
                                                     0.01, qpos, qvel)
    assert qm[:, 1].max() > 3.0  # the elbow went past its limit
    assert diff < 1.5e-3
    assert free > 0.1


@pytest.mark.slow
def test_inverted_pendulum_falls_onto_its_hinge_limit_as_in_mujoco():
    """gymnasium's inverted_pendulum.xml (slider range +-1 m, hinge +-90 degrees, damping 1),
    the pole pushed over at 2 rad/s from 0.4 rad: it falls onto its 90-degree limit and
    rests there under its weight, at the file's RK4 dt 0.02 s (MuJoCo's limit time
    constant: 2 dt = 0.04 s) for 1 s. The cart stays within 4.1e-4 m of MuJoCo's and the
    pole's orientation within 0.046 rad (measured): the pole rests 10 to 20 times deeper
    in its limit than in MuJoCo (the law's a0 = 0); without the limits the cart differs by
    0.18 m and the pole by 2.7 rad."""
    xml = _gym_file("inverted_pendulum.xml")
    qpos, qvel = [0.0, 0.4], [0.5, 2.0]
    res = compare_with_mujoco(xml, 1.0, 0.02, qpos=qpos, qvel=qvel, save_every=1)
    assert res["unmapped"] == [] and res["jaxmbs_status"] == 0
    diff, free, qm = _against_mujoco_without_limits(xml, res, ["cart", "pole"], 0.02, qpos,
                                                    qvel)
    assert qm[:, 1].max() > np.pi / 2  # the pole reached its limit
    assert diff < 1e-3
    assert res["body_differences"]["pole"][1] < 0.08
    assert free > 0.1


def test_joint_limit_builder_errors_name_the_problem():
    model = mb.SpatialModel()
    model.add_body("b", mass=1.0, inertia=[0.1, 0.1, 0.1], position=[0, 0, 0])
    model.add_revolute("r", "ground", "b", at=[0, 0, 0], axis=[0, 0, 1])
    model.add_spherical("s", "ground", "b", at=[0, 0, 0])
    cases = [(dict(range=(0.5, -0.5)), "lower < upper"),
             (dict(range=(None, None)), "at least one side finite"),
             (dict(range=0.5), "range must be"),
             (dict(inertia=-1.0), "inertia"),
             (dict(solimp=(0.9, 1.2, 0.001, 0.5, 2)), "solimp"),
             (dict(solref=(0.02, -1.0)), "solref"),
             (dict(joint="s"), "revolute, a prismatic"),
             (dict(joint="nope"), "unknown joint")]
    for kw, msg in cases:
        args = dict(joint="r", range=(-0.5, 0.5), inertia=0.1) | kw
        with pytest.raises(ValueError, match=msg):
            model.add_joint_limit("lim", **args)
    model.add_joint_limit("lim", "r", range=(None, 0.5), inertia=0.1)
    mech, params, q0, v0 = model.build()
    assert float(mb.force_outputs(mech, params, q0, v0)["lim"]["force"]) == 0.0
    # the same rules for parameters set after the build
    p2 = mech.replace(params, {"lim.range": [0.05, 0.5]})  # y = 0: 0.05 below the lower side
    assert float(mb.force_outputs(mech, p2, q0, v0)["lim"]["force"]) > 0.0  # pushes it up
    for key, val, msg in (("lim.range", [0.6, 0.5], "lower < upper"),
                          ("lim.inertia", -1.0, "must be > 0"),
                          ("lim.solimp", [0.9, 1.5, 0.001, 0.5, 2.0], "dmin, dmax, midpoint in")):
        with pytest.raises(ValueError, match=f"'{key}' .*{msg}"):
            mech.replace(params, {key: val})
