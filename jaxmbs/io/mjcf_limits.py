"""Joint limits of an MJCF / URDF import: MuJoCo's limited hinge and slide joints become
`SpatialModel.add_joint_limit` laws (MuJoCo's soft limit written as a force on the joint
coordinate; jaxmbs.spatial.limits says what it approximates); the limits that do not map
(ball-joint cones, hinges and slides that are part of a composite joint) are listed."""
from __future__ import annotations

import numpy as np

MINIMP, MAXIMP = 0.0001, 0.9999  # MuJoCo's mjMINIMP, mjMAXIMP
DEFAULT_SOLREF = (0.02, 1.0)


def limit_parameters(m, j, mj):
    """(solref, solimp) MuJoCo uses for joint j's limit: solimp clamped as MuJoCo clamps it,
    a mixed-sign solref replaced by MuJoCo's default (as MuJoCo does), timeconst raised to
    2 timesteps unless the integrator safety (refsafe) is disabled."""
    solref = np.array(m.jnt_solref[j], float)
    solimp = np.array(m.jnt_solimp[j], float)
    if (solref[0] > 0) != (solref[1] > 0):
        solref = np.array(DEFAULT_SOLREF)
    if solref[0] > 0 and not int(m.opt.disableflags) & int(mj.mjtDisableBit.mjDSBL_REFSAFE):
        solref[0] = max(solref[0], 2.0 * float(m.opt.timestep))
    solimp[[0, 1, 3]] = np.clip(solimp[[0, 1, 3]], MINIMP, MAXIMP)
    solimp[2] = max(0.0, solimp[2])
    solimp[4] = max(1.0, solimp[4])
    return solref, solimp


def add_joint_limits(m, d, mj, coord, jname, names, model, unmapped, limits_on):
    """Map the limits of MuJoCo's limited joints: single hinge / slide coordinates (coord:
    MuJoCo joint -> (jaxmbs joint, motion)) get a joint limit named '<joint>_limit' with
    the joint's inertia in the initial state d (1 / the diagonal entry of MuJoCo's inverse
    mass matrix, armature included) and MuJoCo's regulariser scale (1 / dof_invweight0);
    the others are appended to `unmapped`."""
    if not limits_on:
        return
    JT = mj.mjtJoint
    minv = np.zeros((m.nv, m.nv))  # inverse joint-space mass matrix in the initial state
    if m.nv:
        mj.mj_solveM(m, d, minv, np.eye(m.nv))
    for j in range(m.njnt):
        if not m.jnt_limited[j]:
            continue
        jt = int(m.jnt_type[j])
        if j not in coord:
            if jt == int(JT.mjJNT_BALL):
                unmapped.append(f"cone limit (range) of ball joint {jname[j]!r}")
            else:
                unmapped.append(f"limits (range) of joint {jname[j]!r} (part of a composite "
                                "joint; limits map on single hinge / slide coordinates)")
            continue
        jn, motion = coord[j]
        solref, solimp = limit_parameters(m, j, mj)
        dof = m.jnt_dofadr[j]
        model.add_joint_limit(names(f"{jname[j]}_limit", "force"), jn,
                              range=tuple(float(x) for x in m.jnt_range[j]),
                              inertia=1.0 / float(minv[dof, dof]), solref=tuple(solref),
                              solimp=tuple(solimp), margin=float(m.jnt_margin[j]),
                              offset=float(d.qpos[m.jnt_qposadr[j]]),
                              reference_inertia=1.0 / float(m.dof_invweight0[dof]),
                              motion=motion)
