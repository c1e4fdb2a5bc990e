"""Import MuJoCo (MJCF) and URDF models into exact redundant coordinates.

    model = jaxmbs.from_mjcf("robot.xml")          # a jaxmbs.SpatialModel (add to it, then build)
    model = jaxmbs.from_urdf("arm.urdf")
    mech, params, q0, v0 = model.build()
    model.mujoco.bodies, model.mujoco.joints, model.mujoco.unmapped   # what became what

Files are read by MuJoCo's own compiler (the optional extra ``pip install "jaxmbs[mujoco]"``),
which also reads URDF; every number comes from the compiled ``mujoco.MjModel`` (defaults,
classes, ``inertiafromgeom`` and ``fusestatic`` already applied), so there is no XML
parsing here. Each MuJoCo body that has joints becomes a jaxmbs body with MuJoCo's body
frame as its reference frame, placed where MuJoCo's forward kinematics puts it at the
initial state (``qpos0``, a keyframe, or a given qpos / qvel); bodies without joints are
merged into the body they are welded to (or into the ground). Joints, equality
constraints, passive joint forces, armature, joint limits (io/mjcf_limits.py), gravity,
actuators and (on request) contacts are mapped as docs/import.md says; every feature that is not mapped is named in one
`MujocoImportWarning` (and listed in ``model.mujoco.unmapped``), never dropped silently.

Conventions carried over: a control input u[k] is MuJoCo's ``ctrl[k]`` (actuator k);
jaxmbs measures joint angles from the initial configuration, MuJoCo from ``qpos0``, and
the offsets (``springref``, actuator lengths, joint equalities) are converted.
`compare_with_mujoco` runs an imported file in both simulators side by side.
"""
from __future__ import annotations

import math
import os
import warnings

import numpy as np

from ._mujoco import (
    MujocoImport,
    MujocoImportWarning,
    _fmt,
    _is_xml_text,
    _mujoco,
    _name,
    _Names,
    load_mujoco,
    urdf_base_note,
)
from .mjcf_contacts import add_contacts
from .mjcf_limits import add_joint_limits


# ---------------------------------------------------------------------- the import
def from_mjcf(source, *, keyframe=None, qpos=None, qvel=None, contacts=False, warn=True):
    """Import an MJCF file (or an MJCF string, or any file MuJoCo's compiler reads, e.g.
    URDF) as a `jaxmbs.SpatialModel`.

    keyframe: index or name of a keyframe giving the initial state (default: qpos0 and
    zero velocity); qpos (nq,), qvel (nv,): the initial state directly (override the
    keyframe). contacts: False (contacts are not mapped; listed as unmapped when the model
    has colliding geoms), True (sphere, capsule and plane geoms become penalty contacts
    with the default law below), or a dict of contact-law arguments of
    `SpatialModel.add_sphere_plane_contact` (k N/m^1.5, exponent, damping or restitution
    with impact_velocity, slip_velocity; default k=1e5, exponent 1.5, restitution 0.5 at
    impact_velocity 1 m/s, slip_velocity 1e-3 m/s); friction is MuJoCo's sliding friction
    of the pair (the larger of the two geoms', or the <pair>'s). warn: issue the
    `MujocoImportWarning` listing what was not mapped (it is in ``model.mujoco.unmapped``
    either way) and, for a URDF, saying that its base is welded to the world where it is
    (``model.mujoco.notes``).

    Returns the builder with every mapping done by its public methods (so the model is
    savable with `jaxmbs.save_model` and can be extended before `build()`); the record
    of the import is ``model.mujoco`` (`MujocoImport`). Raises ValueError (starting with
    the file name) for files MuJoCo cannot compile and for structures jaxmbs cannot
    represent exactly (massless moving bodies, joint combinations that are not a joint
    jaxmbs has), naming the body.
    """
    m, src = load_mujoco(source)
    try:
        model, info = _import(m, src, keyframe, qpos, qvel, contacts)
    except ValueError as e:
        raise ValueError(f"{src}: {e}") from None
    if not _is_xml_text(source):
        try:
            with open(os.fspath(source)) as f:
                info.xml = f.read()
        except OSError:  # pragma: no cover
            info.xml = ""
    else:
        info.xml = source
    base = urdf_base_note(info.xml)
    info.notes = [base] if base else []
    said = info.notes + ([f"not mapped to jaxmbs ({len(info.unmapped)}): "
                          + "; ".join(info.unmapped)] if info.unmapped else [])
    if warn and said:
        warnings.warn(f"{src}: " + "; ".join(said), MujocoImportWarning, stacklevel=2)
    model.mujoco = info
    return model


def from_urdf(path, **kwargs):
    """Import a URDF file through MuJoCo's URDF compiler (`from_mjcf` arguments apply).

    MuJoCo reads URDF with its URDF defaults: links without joints are fused into their
    parent (``fusestatic``), visual geometry is discarded, joint <dynamics damping>
    and <limit> become damping and ranges, ``friction`` becomes frictionloss (listed
    as unmapped), and the root link is welded to the world: a URDF gives its root link no
    joint. The `MujocoImportWarning` says so, naming the link. For a floating base, give
    the URDF a link named 'world' and a joint of type 'floating' from it to the base link:
    MuJoCo makes it a free joint, and the base a free jaxmbs body."""
    p = os.fspath(path)
    if not p.lower().endswith(".urdf"):
        raise ValueError(f"{p}: from_urdf expects a .urdf file (use from_mjcf for MJCF)")
    return from_mjcf(p, **kwargs)


def _import(m, src, keyframe, qpos, qvel, contacts):
    mj = _mujoco()
    from ..spatial import SpatialModel

    OB = mj.mjtObj
    JT = mj.mjtJoint
    HINGE, SLIDE, BALL, FREE = (int(JT.mjJNT_HINGE), int(JT.mjJNT_SLIDE), int(JT.mjJNT_BALL),
                                int(JT.mjJNT_FREE))
    unmapped = []
    info = MujocoImport(source=src)
    names = _Names()

    # ---- initial state
    d = mj.MjData(m)
    if keyframe is not None:
        k = keyframe
        if isinstance(keyframe, str):
            k = mj.mj_name2id(m, OB.mjOBJ_KEY, keyframe)
            if k < 0:
                raise ValueError(f"no keyframe named {keyframe!r}")
        if not (isinstance(k, (int, np.integer)) and 0 <= k < m.nkey):
            raise ValueError(f"keyframe {keyframe!r}: the model has {m.nkey} keyframe(s)")
        d.qpos[:] = m.key_qpos[k]
        d.qvel[:] = m.key_qvel[k]
    else:
        d.qpos[:] = m.qpos0
    if qpos is not None:
        qp = np.asarray(qpos, float).reshape(-1)
        if qp.shape != (m.nq,):
            raise ValueError(f"qpos: expected {m.nq} entries, got {qp.size}")
        d.qpos[:] = qp
    if qvel is not None:
        qv = np.asarray(qvel, float).reshape(-1)
        if qv.shape != (m.nv,):
            raise ValueError(f"qvel: expected {m.nv} entries, got {qv.size}")
        d.qvel[:] = qv
    mj.mj_forward(m, d)
    info.qpos, info.qvel = d.qpos.copy(), d.qvel.copy()
    xpos, xmat = d.xpos.copy(), d.xmat.reshape(-1, 3, 3).copy()

    dis = int(m.opt.disableflags)
    disabled = lambda bit: bool(dis & int(bit))
    DB = mj.mjtDisableBit
    g = np.zeros(3) if disabled(DB.mjDSBL_GRAVITY) else np.array(m.opt.gravity, float)
    model = SpatialModel(gravity=g)

    # ---- bodies: moving ones (with joints) become jaxmbs bodies; the others are merged
    bname = [_name(m, OB.mjOBJ_BODY, b, "body") for b in range(m.nbody)]
    parent = np.asarray(m.body_parentid)
    rep = {0: 0}  # MuJoCo body -> the MuJoCo body whose jaxmbs frame carries it (0: ground)
    for b in range(1, m.nbody):
        moving = m.body_jntnum[b] > 0 and m.body_mocapid[b] < 0
        if m.body_mocapid[b] >= 0:
            unmapped.append(f"mocap body {bname[b]!r} (treated as fixed to the world)")
        rep[b] = b if moving else rep[parent[b]]
    frame_name = {0: "ground"}
    for b in range(1, m.nbody):
        if rep[b] == b:
            frame_name[b] = names(bname[b], "body")

    def frame_of(b):
        """(jaxmbs frame name, r (3,), R (3, 3)) of the frame carrying MuJoCo body b."""
        r = rep[b]
        if r == 0:
            return "ground", np.zeros(3), np.eye(3)
        return frame_name[r], xpos[r], xmat[r]

    def local(b, p_body):
        """(frame name, point in jaxmbs frame coordinates) of a point given in MuJoCo body
        b's frame."""
        fname, r, R = frame_of(b)
        glob = xpos[b] + xmat[b] @ np.asarray(p_body, float)
        return fname, R.T @ (glob - r)

    for b in range(m.nbody):
        fname, r, R = frame_of(b)
        info.bodies[bname[b]] = (fname, R.T @ (xpos[b] - r), R.T @ xmat[b])
        info.body_ids[bname[b]] = b

    # joints of every body, their armature (free / ball to the ground: exact as inertia)
    jtype = np.asarray(m.jnt_type)
    jname = [_name(m, OB.mjOBJ_JOINT, j, "joint") for j in range(m.njnt)]
    body_joints = {b: list(range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]))
                   for b in range(m.nbody)}
    armature = np.asarray(m.dof_armature, float)
    extra_inertia = {}  # rep body -> list of (mass, global cg, global inertia)
    for b in range(1, m.nbody):
        js = body_joints[b]
        if rep[b] != b or len(js) != 1 or jtype[js[0]] not in (FREE, BALL):
            continue
        j = js[0]
        a = armature[m.jnt_dofadr[j]: m.jnt_dofadr[j] + (6 if jtype[j] == FREE else 3)]
        if not np.any(a):
            continue
        if jtype[j] == FREE:
            # 1/2 a |rdot_origin|^2 would be a point mass without weight at the body origin:
            # not a body property
            unmapped.append(f"armature of free joint {jname[j]!r}")
        elif rep[parent[b]] == 0 and np.ptp(a) == 0:
            # 1/2 a |omega|^2 with the parent fixed: an isotropic inertia added to the body
            extra_inertia.setdefault(b, []).append((0.0, xpos[b], a[0] * np.eye(3)))
        else:
            unmapped.append(f"armature of ball joint {jname[j]!r} (its parent moves)")

    # inertia of each jaxmbs body: its own and every merged body's, about the common CG
    members = {}
    for b in range(1, m.nbody):
        if rep[b]:
            members.setdefault(rep[b], []).append(b)
    ximat = d.ximat.reshape(-1, 3, 3)
    for b in range(1, m.nbody):
        if rep[b] != b:
            continue
        parts = []
        for c in members[b]:
            Rc = ximat[c]
            parts.append((float(m.body_mass[c]), d.xipos[c].copy(),
                          Rc @ np.diag(m.body_inertia[c]) @ Rc.T))
        parts += extra_inertia.get(b, [])
        mass = sum(p[0] for p in parts)
        if not mass > 0:
            raise ValueError(f"MuJoCo body {bname[b]!r} moves (it has joints) but has no mass"
                             + (f" (with the bodies merged into it: "
                                f"{', '.join(bname[c] for c in members[b] if c != b)})"
                                if len(members[b]) > 1 else "")
                             + "; jaxmbs needs every moving body to have a positive mass and "
                             "inertia (a massless intermediate body between joints is not "
                             "representable in redundant coordinates)")
        cg = sum(p[0] * p[1] for p in parts) / mass
        J = np.zeros((3, 3))
        for mm, c, Jc in parts:
            dc = c - cg
            J += Jc + mm * (dc @ dc * np.eye(3) - np.outer(dc, dc))
        R = xmat[b]
        Jb = R.T @ J @ R
        Jb = 0.5 * (Jb + Jb.T)
        if np.min(np.linalg.eigvalsh(Jb)) <= 0:
            raise ValueError(f"MuJoCo body {bname[b]!r} moves (it has joints) but its inertia "
                             f"about the centre of gravity is not positive definite "
                             f"(principal moments {_fmt(np.linalg.eigvalsh(Jb))}); jaxmbs needs "
                             "a positive definite inertia for every moving body")
        # initial velocity of the body frame origin and angular velocity (global)
        jp, jr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
        mj.mj_jac(m, d, jp, jr, xpos[b], b)
        model.add_body(frame_name[b], mass=mass, inertia=Jb, position=xpos[b],
                       orientation=np.asarray(d.xquat[b], float), cg=R.T @ (cg - xpos[b]),
                       velocity=jp @ d.qvel, angular_velocity=jr @ d.qvel)

    # ---- joints
    stiffness = np.asarray(m.jnt_stiffness, float)
    damping = np.asarray(m.dof_damping, float)
    frictionloss = np.asarray(m.dof_frictionloss, float)
    springs_on = not disabled(DB.mjDSBL_SPRING)
    dampers_on = not disabled(DB.mjDSBL_DAMPER)
    limits_on = not disabled(DB.mjDSBL_LIMIT)
    poly_k = getattr(m, "jnt_stiffnesspoly", np.zeros((m.njnt, 0)))
    poly_c = getattr(m, "dof_dampingpoly", np.zeros((m.nv, 0)))
    coord = {}  # MuJoCo joint -> (jaxmbs joint, motion) for single hinge / slide coordinates
    loops = []

    def ndof(j):
        return {FREE: 6, BALL: 3}.get(int(jtype[j]), 1)

    for j in range(m.njnt):
        dofs = slice(m.jnt_dofadr[j], m.jnt_dofadr[j] + ndof(j))
        if np.any(frictionloss[dofs] > 0):
            unmapped.append(f"frictionloss of joint {jname[j]!r}")
        if np.ndim(poly_k) == 2 and poly_k.shape[1] and np.any(poly_k[j] != 0):
            unmapped.append(f"polynomial stiffness of joint {jname[j]!r}")
        if np.ndim(poly_c) == 2 and poly_c.shape[1] and np.any(poly_c[dofs] != 0):
            unmapped.append(f"polynomial damping of joint {jname[j]!r}")

    for b in range(1, m.nbody):
        if rep[b] != b:
            continue
        js = body_joints[b]
        P = frame_of(parent[b])[0]
        Bn = frame_name[b]
        types = [int(jtype[j]) for j in js]
        anchors = [d.xanchor[j].copy() for j in js]
        axes = [d.xaxis[j].copy() for j in js]
        scale = 1.0 + max(np.linalg.norm(a) for a in anchors)
        same_point = all(np.linalg.norm(a - anchors[0]) <= 1e-9 * scale for a in anchors)
        single = None
        if types == [FREE]:
            single = "free"
        elif types == [BALL]:
            name = names(jname[js[0]], "joint")
            model.add_spherical(name, P, Bn, at=anchors[0])
            info.joints[jname[js[0]]] = (name, None)
            single = "ball"
        elif types == [HINGE]:
            name = names(jname[js[0]], "joint")
            model.add_revolute(name, P, Bn, at=anchors[0], axis=axes[0])
            coord[js[0]] = (name, "angle")
        elif types == [SLIDE]:
            name = names(jname[js[0]], "joint")
            model.add_prismatic(name, P, Bn, at=anchors[0], axis=axes[0])
            coord[js[0]] = (name, "displacement")
        elif sorted(types) == sorted([HINGE, SLIDE]):
            h = js[types.index(HINGE)]
            s = js[types.index(SLIDE)]
            if np.linalg.norm(np.cross(d.xaxis[h], d.xaxis[s])) > 1e-9:
                raise ValueError(_combo_error(bname[b], js, jname, types,
                                              "a hinge and a slide on different axes"))
            name = names(f"{jname[h]}+{jname[s]}", "joint")
            model.add_cylindrical(name, P, Bn, at=d.xanchor[h], axis=d.xaxis[h])
            coord[h] = (name, "angle")
            coord[s] = (name, "displacement")
        elif types == [HINGE, HINGE]:
            if not same_point:
                raise ValueError(_combo_error(bname[b], js, jname, types,
                                              "two hinges whose axes do not intersect"))
            if abs(axes[0] @ axes[1]) > 1e-9:
                raise ValueError(_combo_error(bname[b], js, jname, types,
                                              f"two hinges at an angle of "
                                              f"{math.degrees(math.acos(np.clip(abs(axes[0] @ axes[1]), -1, 1))):.6g} "
                                              "degrees (a universal joint needs 90)"))
            name = names("+".join(jname[j] for j in js), "joint")
            model.add_universal(name, P, Bn, at=anchors[0], axis_i=axes[0], axis_j=axes[1])
            info.joints.update({jname[j]: (name, None) for j in js})
            single = "composite"
        elif types == [HINGE] * 3:
            if not same_point or abs(np.linalg.det(np.array(axes))) < 1e-9:
                raise ValueError(_combo_error(bname[b], js, jname, types,
                                              "three hinges that do not intersect in one point "
                                              "with independent axes"))
            name = names("+".join(jname[j] for j in js), "joint")
            model.add_spherical(name, P, Bn, at=anchors[0])
            info.joints.update({jname[j]: (name, None) for j in js})
            single = "composite"
        elif set(types) == {SLIDE} and len(types) in (2, 3):
            A = np.array(axes)
            if np.linalg.matrix_rank(A, 1e-9) != len(types):
                raise ValueError(_combo_error(bname[b], js, jname, types,
                                              "slides with dependent axes"))
            name = names("+".join(jname[j] for j in js), "joint")
            e = np.eye(3)
            if len(types) == 3:  # pure translation: orientation fixed (3 rows)
                n = np.array([0.0, 0.0, 1.0])
            else:  # translation in the plane of the two axes
                n = np.cross(A[0], A[1])
                n /= np.linalg.norm(n)
            t = e[np.argmin(np.abs(e @ n))]
            u = np.cross(n, t)
            u /= np.linalg.norm(u)
            model.add_parallel_axes(name, P, Bn, axis=n)
            model.add_perpendicular_axes(names(f"{name}_twist", "joint"), P, Bn, axis_i=u,
                                         axis_j=np.cross(n, u))
            if len(types) == 2:
                model.add_point_on_plane(names(f"{name}_plane", "joint"), P, Bn,
                                         at=anchors[0], normal=n)
            info.joints.update({jname[j]: (name, None) for j in js})
            single = "composite"
        else:
            raise ValueError(_combo_error(bname[b], js, jname, types,
                                          "a combination jaxmbs has no joint for"))
        for j in js:
            if j in coord:
                info.joints[jname[j]] = coord[j]
                continue
            if single == "free":
                info.joints[jname[j]] = (None, None)
            dofs = slice(m.jnt_dofadr[j], m.jnt_dofadr[j] + ndof(j))
            what = {"free": "free joint", "ball": "ball joint"}.get(single, "joint")
            if springs_on and stiffness[j] > 0:
                unmapped.append(f"stiffness of {what} {jname[j]!r}")
            if dampers_on and np.any(damping[dofs] > 0):
                unmapped.append(f"damping of {what} {jname[j]!r}")
            if single == "composite" and np.any(armature[dofs] > 0):
                unmapped.append(f"armature of joint {jname[j]!r} (part of a composite joint)")

    # passive forces and armature of hinge / slide coordinates
    for j, (jn, motion) in coord.items():
        dof = m.jnt_dofadr[j]
        q_init = float(d.qpos[m.jnt_qposadr[j]])
        k = stiffness[j] if springs_on else 0.0
        c = damping[dof] if dampers_on else 0.0
        ref = float(m.qpos_spring[m.jnt_qposadr[j]]) - q_init
        if k > 0 or c > 0:
            nm = names(f"{jname[j]}_spring", "force")
            if motion == "angle":
                model.add_torsion_spring(nm, jn, k=k, c=c, angle=ref)
            else:
                model.add_axial_spring(nm, jn, k=k, c=c, length=ref, motion=motion)
        if armature[dof] > 0:
            model.add_armature(names(f"{jname[j]}_armature", "joint"), jn, armature[dof],
                               motion=motion)

    # limits of hinge / slide coordinates (the others listed as unmapped)
    add_joint_limits(m, d, mj, coord, jname, names, model, unmapped, limits_on)

    # ---- equality constraints
    ET = mj.mjtEq
    ename = [_name(m, OB.mjOBJ_EQUALITY, e, "equality") for e in range(m.neq)]
    used_tendons = set()
    for e in range(m.neq):
        et = int(m.eq_type[e])
        data = np.asarray(m.eq_data[e], float)
        active = bool(m.eq_active0[e]) and not disabled(DB.mjDSBL_EQUALITY)
        tname = {int(ET.mjEQ_CONNECT): "connect", int(ET.mjEQ_WELD): "weld",
                 int(ET.mjEQ_JOINT): "joint", int(ET.mjEQ_TENDON): "tendon"}.get(et, f"type {et}")
        label = f"{tname} equality {ename[e]!r}"
        if not active:
            unmapped.append(f"{label} (inactive)")
            continue
        if et in (int(ET.mjEQ_CONNECT), int(ET.mjEQ_WELD)):
            site = int(m.eq_objtype[e]) == int(OB.mjOBJ_SITE)
            o1, o2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
            if site:
                b1, b2 = int(m.site_bodyid[o1]), int(m.site_bodyid[o2])
                p1, p2 = m.site_pos[o1].copy(), m.site_pos[o2].copy()
            elif et == int(ET.mjEQ_CONNECT):
                b1, b2 = o1, o2
                p1, p2 = data[0:3], data[3:6]
            else:  # weld: anchor data[0:3] on body2, its image data[3:6] on body1
                b1, b2 = o1, o2
                p1, p2 = data[3:6], data[0:3]
            (f1, s1), (f2, s2) = local(b1, p1), local(b2, p2)
            if f1 == f2:
                unmapped.append(f"{label} (both sides on {f1!r}: nothing to constrain)")
                continue
            name = names(ename[e], "joint")
            if et == int(ET.mjEQ_CONNECT):
                model.add_spherical(name, f1, f2, point_i=s1, point_j=s2)
            else:
                _check_weld(m, d, e, site, b1, b2, p1, p2, label, mj)
                model.add_weld(name, f1, f2, point_i=s1, point_j=s2)
            info.equalities[ename[e]] = (name, tname)
            loops.append(name)
        elif et == int(ET.mjEQ_JOINT):
            j1, j2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
            if j1 not in coord or (j2 >= 0 and j2 not in coord):
                bad = [jname[j] for j in (j1, j2) if j >= 0 and j not in coord]
                unmapped.append(f"{label} (joint(s) {', '.join(map(repr, bad))} not a single "
                                "hinge / slide coordinate)")
                continue
            name = names(ename[e], "joint")
            off = lambda j: float(d.qpos[m.jnt_qposadr[j]] - m.qpos0[m.jnt_qposadr[j]])
            model.add_joint_coupling(name, coord[j1][0], coord[j2][0] if j2 >= 0 else None,
                                     polycoef=data[0:5], offset1=off(j1),
                                     offset2=off(j2) if j2 >= 0 else 0.0,
                                     motion1=coord[j1][1], motion2=coord[j2][1] if j2 >= 0 else None)
            info.equalities[ename[e]] = (name, tname)
            loops.append(name)
        elif et == int(ET.mjEQ_TENDON):
            t1, t2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
            ends = _two_site_tendon(m, t1, mj)
            if t2 >= 0 or ends is None:  # (without tendon2 only polycoef[0] counts)
                unmapped.append(f"{label} (only a fixed length of a spatial tendon between two "
                                "sites maps, to a distance constraint)")
                continue
            (b1, p1), (b2, p2) = ends
            (f1, s1), (f2, s2) = local(b1, p1), local(b2, p2)
            length = float(m.tendon_length0[t1] + data[0])
            if f1 == f2 or not length > 0:
                unmapped.append(f"{label} (degenerate: same frame or length {length:.3g})")
                continue
            name = names(ename[e], "joint")
            model.add_distance(name, f1, f2, point_i=s1, point_j=s2, length=length)
            info.equalities[ename[e]] = (name, "distance")
            used_tendons.add(t1)
            loops.append(name)
        else:
            unmapped.append(label)
    info.loop_joints = tuple(loops)

    # ---- actuators
    TR, DY, GA, BI = mj.mjtTrn, mj.mjtDyn, mj.mjtGain, mj.mjtBias
    clamp_ctrl = not disabled(DB.mjDSBL_CLAMPCTRL)
    actuation_on = not disabled(DB.mjDSBL_ACTUATION)
    for a in range(m.nu):
        an = _name(m, OB.mjOBJ_ACTUATOR, a, "actuator")
        label = f"actuator {an!r}"
        trn, jid = int(m.actuator_trntype[a]), int(m.actuator_trnid[a, 0])
        why = None
        if not actuation_on:
            why = "actuation disabled"
        elif trn not in (int(TR.mjTRN_JOINT), int(TR.mjTRN_JOINTINPARENT)):
            why = "transmission other than a joint"
        elif jid not in coord:
            why = f"joint {jname[jid]!r} is not a single hinge / slide coordinate"
        elif int(m.actuator_dyntype[a]) != int(DY.mjDYN_NONE):
            why = "activation dynamics"
        elif int(m.actuator_gaintype[a]) not in (int(GA.mjGAIN_FIXED), int(GA.mjGAIN_AFFINE)):
            why = "gain type other than fixed / affine"
        elif int(m.actuator_biastype[a]) not in (int(BI.mjBIAS_NONE), int(BI.mjBIAS_AFFINE)):
            why = "bias type other than none / affine"
        else:
            extra = [k for k in ("actuator_damping", "actuator_armature", "actuator_delay")
                     if hasattr(m, k) and np.any(np.asarray(getattr(m, k))[a] != 0)]
            if extra:
                why = ", ".join(k.split("_")[1] for k in extra)
        if why is not None:
            unmapped.append(f"{label} ({why})")
            info.actuators[an] = (None, a, None)
            continue
        if getattr(m, "jnt_actfrclimited", None) is not None and m.jnt_actfrclimited[jid]:
            unmapped.append(f"actuatorfrcrange of joint {jname[jid]!r}")
        jn, motion = coord[jid]
        gain = np.asarray(m.actuator_gainprm[a, :3], float)
        if int(m.actuator_gaintype[a]) == int(GA.mjGAIN_FIXED):
            gain = np.array([gain[0], 0.0, 0.0])
        bias = (np.zeros(3) if int(m.actuator_biastype[a]) == int(BI.mjBIAS_NONE)
                else np.asarray(m.actuator_biasprm[a, :3], float))
        cr = tuple(m.actuator_ctrlrange[a]) if (m.actuator_ctrllimited[a] and clamp_ctrl) else None
        fr = tuple(m.actuator_forcerange[a]) if m.actuator_forcelimited[a] else None
        nm = names(an, "actuator")
        model.add_joint_actuator(nm, jn, control=a, gear=float(m.actuator_gear[a, 0]),
                                 gain=gain, bias=bias, ctrlrange=cr, forcerange=fr,
                                 offset=float(d.qpos[m.jnt_qposadr[jid]]), motion=motion)
        info.actuators[an] = (nm, a, cr)

    # ---- contacts
    add_contacts(m, d, mj, contacts, frame_of, rep, parent, bname, names, model, unmapped,
                 disabled(DB.mjDSBL_CONTACT) or disabled(DB.mjDSBL_CONSTRAINT))

    # ---- everything else that has physics
    tn = [_name(m, OB.mjOBJ_TENDON, t, "tendon") for t in range(m.ntendon)]
    for t in range(m.ntendon):
        if t not in used_tendons:
            unmapped.append(f"tendon {tn[t]!r}")
    if m.nsensor:
        sn = [_name(m, OB.mjOBJ_SENSOR, s, "sensor") for s in range(m.nsensor)]
        unmapped.append(f"sensors ({', '.join(map(repr, sn))})")
        used_sites = set()
        for e in range(m.neq):
            if int(m.eq_objtype[e]) == int(OB.mjOBJ_SITE):
                used_sites |= {int(m.eq_obj1id[e]), int(m.eq_obj2id[e])}
        for w in range(m.nwrap):
            if int(m.wrap_type[w]) == int(mj.mjtWrap.mjWRAP_SITE):
                used_sites.add(int(m.wrap_objid[w]))
        sensor_sites = {int(m.sensor_objid[s]) for s in range(m.nsensor)
                        if int(m.sensor_objtype[s]) == int(OB.mjOBJ_SITE)} - used_sites
        if sensor_sites:
            unmapped.append("sites used only by sensors ("
                            + ", ".join(repr(_name(m, OB.mjOBJ_SITE, s, "site"))
                                        for s in sorted(sensor_sites)) + ")")
    if m.opt.density or m.opt.viscosity or np.any(m.opt.wind):
        unmapped.append("fluid forces (density / viscosity / wind)")
    if np.any(np.asarray(m.body_gravcomp) != 0):
        unmapped.append("gravity compensation (gravcomp) of bodies "
                        + ", ".join(repr(bname[b]) for b in np.nonzero(m.body_gravcomp)[0]))
    if m.nflex:
        unmapped.append(f"flexes ({m.nflex})")
    if m.nplugin:
        unmapped.append(f"plugins ({m.nplugin})")
    info.unmapped = unmapped
    return model, info


def _combo_error(body, js, jname, types, what):
    kinds = {0: "free", 1: "ball", 2: "slide", 3: "hinge"}
    listed = ", ".join(f"{jname[j]!r} ({kinds.get(t, t)})" for j, t in zip(js, types))
    return (f"MuJoCo body {body!r} has joints {listed}: {what}. jaxmbs maps one hinge, slide, "
            "ball or free joint per body, and these combinations in one body: two "
            "intersecting perpendicular hinges (universal), a hinge and a slide on one axis "
            "(cylindrical), three hinges through one point (spherical), two or three slides "
            "(translation); split the body or change the joints")


def _check_weld(m, d, e, site, b1, b2, p1, p2, label, mj):
    """A weld maps to jaxmbs's weld (the initial relative pose held) only when MuJoCo's
    weld is satisfied in the initial configuration."""
    x1 = d.xpos[b1] + d.xmat[b1].reshape(3, 3) @ p1
    x2 = d.xpos[b2] + d.xmat[b2].reshape(3, 3) @ p2
    gap = np.linalg.norm(x1 - x2)
    if site:
        q1, q2 = np.zeros(4), np.zeros(4)
        s1, s2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        mj.mju_mat2Quat(q1, d.site_xmat[s1])
        mj.mju_mat2Quat(q2, d.site_xmat[s2])
        target = q2
        have = q1
    else:
        rel = np.asarray(m.eq_data[e][6:10], float)
        have = np.zeros(4)
        mj.mju_mulQuat(have, d.xquat[b1], rel / np.linalg.norm(rel))
        target = d.xquat[b2]
    err = min(np.linalg.norm(have - target), np.linalg.norm(have + target))
    if gap > 1e-9 * (1 + np.linalg.norm(x1)) or err > 1e-9:
        raise ValueError(f"{label} is not satisfied in the initial configuration (gap "
                         f"{gap:.3g} m, orientation error {err:.3g}); jaxmbs's weld holds the "
                         "initial relative pose, so give an initial state (keyframe or qpos) "
                         "where the weld holds")


def _two_site_tendon(m, t, mj):
    """((body, point), (body, point)) of a spatial tendon made of exactly two sites, else
    None."""
    if t < 0 or m.tendon_num[t] != 2:
        return None
    adr = m.tendon_adr[t]
    if any(int(m.wrap_type[adr + i]) != int(mj.mjtWrap.mjWRAP_SITE) for i in range(2)):
        return None
    s = [int(m.wrap_objid[adr + i]) for i in range(2)]
    return tuple((int(m.site_bodyid[k]), m.site_pos[k].copy()) for k in s)
