"""3D drawings and GIF animations of spatial mechanisms (matplotlib's mplot3d).

Conventions: every body is drawn as the lines joining its reference point to the points
where joints, springs and loads attach to it (a bar for a link, a star for a plate),
with short red-green-blue arrows for its body axes (`axes=True`); joint points are
white dots (ball, revolute, universal) with a short line along revolute / prismatic /
cylindrical axes; distance constraints are thin lines; springs are zigzags; particles
are dots; rolling discs are circles; the ground plane z = 0 (or the plane of the first
rolling disc / sphere-plane contact) is a light grid. Lengths in m.
"""
from __future__ import annotations

import numpy as np

__all__ = ["geometry3d", "draw3d", "animate3d"]


def _R(p):
    w, x, y, z = np.asarray(p, float) / np.linalg.norm(p)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _frames(mech, q):
    """(n_frames, 3) positions and (n_frames, 3, 3) rotations (ground: origin, identity)."""
    qe = np.concatenate([np.asarray(q, float), [0.0, 1.0]])
    X = qe[mech.frame_qcols("spatial")]
    return X[:, :3], np.stack([_R(x[3:7]) for x in X])


def geometry3d(mech, params, q) -> dict:
    """Drawable geometry at q (NumPy): 'bodies': (name, origin (3,), R (3, 3), (N, 3)
    attachment points); 'joints': (name, kind, (3,) point, (3,) axis or None);
    'cables': (name, (N, 3) deformed centre line, (k, 3) nodes) of ANCF cables
    (`jaxmbs.plot.beam_lines`);
    'rods', 'springs': (name, P_i, P_j); 'particles': (name, (3,)); 'discs': (name,
    centre, axle, radius); 'planes': (point, normal); 'points': every point (limits)."""
    q = np.asarray(q, float)
    if q.shape != (mech.n_coords,):
        raise ValueError(f"q must have shape ({mech.n_coords},) for this mechanism, got {q.shape}; "
                         "pass one configuration (e.g. traj.q[-1])")
    r, R = _frames(mech, q)
    glob = lambda f, s: r[f] + R[f] @ np.asarray(s, float)
    names = mech.frame_names
    kinds = mech.frame_kinds()
    rigid = {f for f in range(1, len(names)) if names[f] in mech.body_names}
    attach = {f: [np.zeros(3)] for f in rigid}
    from ..core.shared import block_params

    jp = block_params(mech, params, "joints")
    out = dict(bodies=[], joints=[], rods=[], springs=[], particles=[], discs=[], planes=[])
    for blk in mech.families:
        p = jp.get(blk.kind, {})
        for k, (fi, fj) in enumerate(zip(blk.frames_i, blk.frames_j)):
            for f, key in ((fi, "point_i"), (fj, "point_j")):
                if key in p and f in attach:
                    attach[f].append(p[key][k])
            if blk.kind == "dist3":
                out["rods"].append((blk.owners[k], glob(fi, p["point_i"][k]), glob(fj, p["point_j"][k])))
            if blk.kind == "disc_contact":
                out["discs"].append((blk.owners[k], glob(fj, p["point_j"][k]), R[fj] @ p["a_j"][k],
                                     float(p["radius"][k])))
                out["planes"].append((glob(fi, p["point_i"][k]), R[fi] @ p["n_i"][k]))
    from ..plot import beam_lines, element_point

    out["cables"], E = beam_lines(mech, params, q, 3)
    for blk in mech.families:  # pins of cables: a body point, a node's position, or a
        # material point of an element pinned to another cable's
        if blk.kind in ("beam3d_point", "ancf3d_point", "beam3d_beam_point"):
            p = jp[blk.kind]
            for k, (fi, fj) in enumerate(zip(blk.frames_i, blk.frames_j)):
                if blk.kind == "beam3d_point":
                    P = glob(fi, p["point_i"][k])
                elif blk.kind == "beam3d_beam_point":
                    P = element_point(E, fj, p["xi_j"][k], p["length_j"][k], 3)
                else:
                    P = E[fj, :3].copy()
                out["joints"].append((blk.owners[k], "spherical", P, None))
    for j in mech.joints:
        if not j.point_ref or j.kind in ("driver", "constraint", "distance", "rolling_disc"):
            continue
        fam, k = j.point_ref
        if "point_j" not in jp[fam]:  # (joints of cables: above)
            continue
        P = glob(j.frame_j, jp[fam]["point_j"][k])
        axis = None
        for blk in mech.families:
            if blk.kind == "dot1" and j.name in blk.owners and j.kind in ("revolute", "cylindrical", "prismatic"):
                kk = blk.owners.index(j.name)
                axis = R[j.frame_j] @ jp["dot1"]["b_j"][kk]
                break
        out["joints"].append((j.name, j.kind, P, axis))
    fp = block_params(mech, params, "forces")
    for blk in mech.force_blocks:
        p = fp.get(blk.kind, {})
        for k, (fi, fj) in enumerate(zip(blk.frames_i, blk.frames_j)):
            for f, key in ((fi, "point_i"), (fj, "point_j"), (fj, "point")):
                if key in p and f in attach:
                    attach[f].append(p[key][k])
            if blk.kind == "spring3":
                out["springs"].append((blk.names[k], glob(fi, p["point_i"][k]), glob(fj, p["point_j"][k])))
            if blk.kind == "sphere_plane":
                out["planes"].append((glob(fi, p["point_i"][k]), R[fi] @ p["normal_i"][k]))
    for f in sorted(rigid):
        out["bodies"].append((names[f], r[f], R[f], np.array([glob(f, s) for s in attach[f]])))
    for f in range(1, len(names)):
        if f not in rigid and kinds[f] == "spatial":
            out["particles"].append((names[f], r[f].copy()))
    pts = [r[1:]] + [b[3] for b in out["bodies"]] + [np.array([x[2]]) for x in out["joints"]]
    pts += [np.array([x[1], x[2]]) for x in out["rods"] + out["springs"]]
    pts += [c[1] for c in out["cables"]]
    out["points"] = np.concatenate([np.atleast_2d(x) for x in pts if np.size(x)])
    return out


def _mpl():
    try:
        import matplotlib
        matplotlib.use("Agg") if not matplotlib.get_backend() else None
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover
        raise ImportError("plotting needs matplotlib: pip install 'jaxmbs[plot]'") from e
    return plt


def draw3d(mech, params, q, ax=None, *, color="C0", alpha=1.0, axes=True, limits=None):
    """Draw a spatial mechanism at q on a 3D matplotlib axis (made if None); returns ax."""
    plt = _mpl()
    geo = geometry3d(mech, params, q)
    if ax is None:
        fig = plt.figure(figsize=(6, 5))
        ax = fig.add_subplot(111, projection="3d")
    P = geo["points"]
    lo, hi = (P.min(0), P.max(0)) if limits is None else limits
    span = float(np.max(hi - lo)) or 1.0
    for _name, o, R, pts in geo["bodies"]:
        for s in pts[1:]:
            ax.plot(*np.stack([o, s]).T, color=color, lw=3, alpha=alpha)
        if axes:
            for c, col in enumerate(("r", "g", "b")):
                ax.plot(*np.stack([o, o + 0.08 * span * R[:, c]]).T, color=col, lw=1, alpha=alpha)
    for _name, _kind, Pj, axis in geo["joints"]:
        ax.scatter(*Pj, s=30, facecolor="white", edgecolor="k", alpha=alpha, depthshade=False)
        if axis is not None:
            ax.plot(*np.stack([Pj - 0.06 * span * axis, Pj + 0.06 * span * axis]).T, "k-", lw=1)
    for _name, Pi, Pj in geo["rods"]:
        ax.plot(*np.stack([Pi, Pj]).T, color="0.3", lw=1, alpha=alpha)
    for _name, Pi, Pj in geo["springs"]:
        d = Pj - Pi
        n = np.cross(d, [0.0, 0.0, 1.0] if abs(d[2]) < 0.9 * np.linalg.norm(d) else [1.0, 0, 0])
        n = 0.03 * span * n / (np.linalg.norm(n) or 1.0)
        s = np.linspace(0, 1, 16)
        zig = Pi + s[:, None] * d + np.where(np.arange(16) % 2, 1, -1)[:, None] * n * ((s > 0.1) & (s < 0.9))[:, None]
        ax.plot(*zig.T, color="C3", lw=1, alpha=alpha)
    for _name, Pc in geo["particles"]:
        ax.scatter(*Pc, s=25, color=color, alpha=alpha)
    for _name, line, nodes in geo["cables"]:
        ax.plot(*line.T, color=color, lw=2.5, alpha=alpha)
        ax.scatter(*nodes.T, s=8, color=color, edgecolor="k", alpha=alpha, depthshade=False)
    for _name, Cc, a, rr in geo["discs"]:
        u = np.cross(a, [0.0, 0.0, 1.0])
        u = u / (np.linalg.norm(u) or 1.0)
        w = np.cross(a, u)
        t = np.linspace(0, 2 * np.pi, 60)
        ax.plot(*(Cc[:, None] + rr * (np.outer(u, np.cos(t)) + np.outer(w, np.sin(t)))), color="k", lw=1)
    if geo["planes"]:
        P0, nrm = geo["planes"][0]
        if abs(nrm[2]) > 0.5:
            xs = np.linspace(lo[0] - 0.1 * span, hi[0] + 0.1 * span, 6)
            ys = np.linspace(lo[1] - 0.1 * span, hi[1] + 0.1 * span, 6)
            Xg, Yg = np.meshgrid(xs, ys)
            Zg = P0[2] - (nrm[0] * (Xg - P0[0]) + nrm[1] * (Yg - P0[1])) / nrm[2]
            ax.plot_wireframe(Xg, Yg, Zg, color="0.8", lw=0.5)
    c = 0.5 * (lo + hi)
    for setl, k in ((ax.set_xlim, 0), (ax.set_ylim, 1), (ax.set_zlim, 2)):
        setl(c[k] - 0.6 * span, c[k] + 0.6 * span)
    ax.set_xlabel("x (m)"), ax.set_ylabel("y (m)"), ax.set_zlabel("z (m)")
    return ax


def animate3d(mech, params, traj, path, *, fps=25, max_frames=150, title=None):
    """Write a GIF of a spatial trajectory (one member) to `path` (Pillow writer)."""
    plt = _mpl()
    from matplotlib.animation import FuncAnimation, PillowWriter

    q = np.asarray(traj.q)
    t = np.asarray(traj.t)
    if q.ndim != 2:
        raise ValueError("animate3d needs one trajectory (q of shape (s, n)); index a batch first")
    idx = np.unique(np.linspace(0, len(t) - 1, min(max_frames, len(t))).astype(int))
    allp = np.concatenate([geometry3d(mech, params, q[i])["points"] for i in idx[:: max(1, len(idx) // 10)]])
    limits = (allp.min(0), allp.max(0))
    fig = plt.figure(figsize=(6, 5))
    ax = fig.add_subplot(111, projection="3d")

    def frame(i):
        ax.cla()
        draw3d(mech, params, q[idx[i]], ax, limits=limits)
        ax.set_title(f"{title + ': ' if title else ''}t = {t[idx[i]]:.3f} s")

    anim = FuncAnimation(fig, frame, frames=len(idx))
    anim.save(path, writer=PillowWriter(fps=fps))
    plt.close(fig)
    return path
