"""MJCF import: MuJoCo's geom pairs as jaxmbs penalty contacts (sphere, capsule and
plane geoms), with MuJoCo's collision filtering (contype / conaffinity, parent filter,
<exclude>, explicit <pair>s); every pair that is not mapped is named as unmapped."""
from __future__ import annotations

import numpy as np

from ._mujoco import _name, _quat_R

DEFAULT_CONTACT = dict(k=1e5, exponent=1.5, restitution=0.5, impact_velocity=1.0,
                       slip_velocity=1e-3)


def add_contacts(m, d, mj, contacts, frame_of, rep, parent, bname, names, model, unmapped,
                 disabled):
    """Add the contacts of the compiled model m (data d at the initial state) to `model`
    (see `from_mjcf`'s contacts=), appending what is not mapped to `unmapped`."""
    GT = mj.mjtGeom
    SPH, CAP, PLANE = int(GT.mjGEOM_SPHERE), int(GT.mjGEOM_CAPSULE), int(GT.mjGEOM_PLANE)
    tname = {int(getattr(GT, k)): k[7:].lower() for k in dir(GT) if k.startswith("mjGEOM_")}
    gname = lambda g: _name(m, mj.mjtObj.mjOBJ_GEOM, g, "geom")
    filterparent = not (int(m.opt.disableflags) & int(mj.mjtDisableBit.mjDSBL_FILTERPARENT))
    excluded = {(int(s) >> 16, int(s) & 0xFFFF) for s in np.asarray(m.exclude_signature)}
    pairs = {}
    if not disabled:
        for g1 in range(m.ngeom):
            for g2 in range(g1 + 1, m.ngeom):
                b1, b2 = int(m.geom_bodyid[g1]), int(m.geom_bodyid[g2])
                r1, r2 = rep[b1], rep[b2]
                if r1 == r2:
                    continue
                if not ((m.geom_contype[g1] & m.geom_conaffinity[g2])
                        or (m.geom_contype[g2] & m.geom_conaffinity[g1])):
                    continue
                if filterparent and r1 and r2 and (rep[parent[r1]] == r2 or rep[parent[r2]] == r1):
                    continue
                if (min(b1, b2), max(b1, b2)) in {(min(a, b), max(a, b)) for a, b in excluded}:
                    continue
                mu = max(m.geom_friction[g1, 0], m.geom_friction[g2, 0])
                pairs[(g1, g2)] = mu
        for p in range(m.npair):
            g1, g2 = int(m.pair_geom1[p]), int(m.pair_geom2[p])
            pairs[(min(g1, g2), max(g1, g2))] = float(m.pair_friction[p, 0])
    if not pairs:
        return
    if not contacts:
        unmapped.append(f"contacts ({len(pairs)} geom pair(s) can collide; pass contacts=True "
                        "to map sphere / capsule / plane pairs)")
        return
    law = dict(DEFAULT_CONTACT)
    if isinstance(contacts, dict):
        if "damping" in contacts and "restitution" not in contacts:
            law.pop("restitution"), law.pop("impact_velocity")
        law.update(contacts)
    skipped = {}

    def spheres(g):
        """[(MuJoCo body, centre in body coordinates)] of a sphere or capsule geom."""
        c, R = m.geom_pos[g], _quat_R(m.geom_quat[g])
        if int(m.geom_type[g]) == SPH:
            return [c.copy()]
        h = m.geom_size[g, 1]
        return [c + R[:, 2] * h, c - R[:, 2] * h]

    def to_frame(b, p):
        fname, r, Rf = frame_of(b)
        glob = d.xpos[b] + d.xmat[b].reshape(3, 3) @ p
        return fname, glob, Rf.T @ (glob - r)

    for (g1, g2), mu in sorted(pairs.items()):
        t1, t2 = int(m.geom_type[g1]), int(m.geom_type[g2])
        label = f"{gname(g1)}-{gname(g2)}"
        if t1 == PLANE and t2 in (SPH, CAP) or t2 == PLANE and t1 in (SPH, CAP):
            gp, gs = (g1, g2) if t1 == PLANE else (g2, g1)
            bp, bs = int(m.geom_bodyid[gp]), int(m.geom_bodyid[gs])
            fp, Pp, _ = to_frame(bp, m.geom_pos[gp])
            nrm = d.xmat[bp].reshape(3, 3) @ _quat_R(m.geom_quat[gp])[:, 2]
            for i, c in enumerate(spheres(gs)):
                fs, _, cs = to_frame(bs, c)
                nm = names(f"{label}" + (f"_end{i}" if len(spheres(gs)) > 1 else ""), "contact")
                model.add_sphere_plane_contact(nm, fp, fs, radius=float(m.geom_size[gs, 0]),
                                               plane_point=Pp, normal=nrm, center_local=cs,
                                               friction=mu, **law)
        elif t1 == SPH and t2 == SPH:
            b1, b2 = int(m.geom_bodyid[g1]), int(m.geom_bodyid[g2])
            f1, _, c1 = to_frame(b1, m.geom_pos[g1])
            f2, _, c2 = to_frame(b2, m.geom_pos[g2])
            model.add_sphere_sphere_contact(names(label, "contact"), f1, f2,
                                            radius_i=float(m.geom_size[g1, 0]),
                                            radius_j=float(m.geom_size[g2, 0]), point_i=c1,
                                            point_j=c2, friction=mu, **law)
        else:
            key = "-".join(sorted((tname.get(t1, str(t1)), tname.get(t2, str(t2)))))
            skipped.setdefault(key, []).append(label)
    for key, labels in sorted(skipped.items()):
        unmapped.append(f"contacts of {key} geom pairs ({len(labels)}: "
                        + ", ".join(labels[:4]) + (", ..." if len(labels) > 4 else "") + ")")
