"""What a drawing is made of, computed from params and q: body outlines, joint and force
markers, beam centre lines, cam curves and contacts (`geometry`)."""
from __future__ import annotations

import math

import numpy as np

from ..planar.geometry import rot2 as _rot

_GROUND = 0


def _mpl():
    """Import matplotlib (an optional dependency) with a helpful error message."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "jaxmbs.plot needs matplotlib, an optional dependency: pip install jaxmbs[plot]"
        ) from e
    return plt



# ----------------------------------------------------------------------------- geometry
def geometry(mech, params, q) -> dict:
    """Global drawing primitives of a mechanism at configuration q (numpy, no matplotlib).

    Args:
      mech, params: from `Model.build()` (one member: params leaves without batch axes).
      q: (n,) coordinates (m, rad).
    Returns a dict of lists (all coordinates global, m):
      'bodies': (name, (k, 2) hull vertices, theta) per body (k = 1: a single point);
      'particles': (name, (2,) position); 'revolutes': (name, (2,) point, grounded);
      'guides': (name, (2,) point on the line, (2,) unit axis, grounded, (2,) point of
      body_j, kind) for prismatic / point-on-line joints; 'rods': (name, P_i, P_j,
      grounded_i) for distance constraints; 'springs': (name, P_i, P_j, ground_i, ground_j);
      'discs': (name, centre, radius, theta) for rack-pinion / rolling-disc pitch circles
      (their lines are 'guides'); 'blades': (name, (2,) point, (2,) axis) for knife edges;
      'grounds': (2,) ground attachment points; 'curves': (name, (N, 2) polyline,
      grounded, (2,) contact point) for each curve of a cam joint; 'circles': (name,
      centre, radius), 'lines': (name, point, unit normal) and 'profiles': (name, xs, ys) or
      (name, fn, None) of penalty contacts; 'beams': (name, (N, 2) deformed centre line,
      (k, 2) node positions) per ANCF beam (each element's cubic interpolation sampled at
      `BEAM_SAMPLES` points; its pins to bodies, the ground and other nodes are
      'revolutes'), per shear beam (`Model.add_shear_beam`: linear elements, the line
      through its nodes; its joints are those of planar frames) and per FFR beam
      (`Model.add_ffr_beam`: its modal deformation at `ffr.DRAW_POINTS` points, its ends as
      the nodes); 'points': (N, 2) every
      point above (for axis limits).
    """
    q = np.asarray(q, dtype=float)
    if q.shape != (mech.n_coords,):
        raise ValueError(
            f"q must have shape ({mech.n_coords},) for this mechanism, got {q.shape}; "
            "pass one configuration (e.g. traj.q[-1]), not a trajectory or a batch")
    qe = np.append(q, 0.0)
    cols = mech.frame_qcols("planar")
    X = qe[cols]  # (n_frames, 3): x, y, theta of every frame (ground = 0)
    body_frames = _node_frames(mech, "planar_rigid")

    def glob(frame, s):
        return X[frame, :2] + _rot(X[frame, 2]) @ np.asarray(s, float)

    local = {f: [np.zeros(2)] for _, f in body_frames}  # body frame -> local points

    def attach(frame, s):
        if frame in local:
            local[frame].append(np.asarray(s, float))

    from ..core.shared import block_params

    joints_p = block_params(mech, params, "joints")
    for fam in mech.families:
        if fam.kind == "knife_edge":  # a blade point on body j only
            for k, fj in enumerate(fam.frames_j):
                attach(fj, joints_p["knife_edge"]["point_j"][k])
            continue
        if fam.kind not in ("coincident", "line", "distance", "rack_pinion", "rolling"):
            continue
        p = joints_p[fam.kind]
        for k, (fi, fj) in enumerate(zip(fam.frames_i, fam.frames_j)):
            if fam.kind == "line" and mech.joint(fam.owners[k]).kind == "driver":
                continue  # a linear driver measures along an axis; it attaches nothing
            attach(fi, p["point_i"][k])
            attach(fj, p["point_j"][k])

    out = dict(bodies=[], particles=[], revolutes=[], guides=[], rods=[], springs=[],
               grounds=[], discs=[], blades=[], beams=[])
    _beam_geometry(mech, params, q, joints_p, out, glob, attach)
    _ffr_geometry(mech, params, q, joints_p, out, attach)
    shear = {}
    for name, f in _node_frames(mech, "reissner2d_node"):  # shear beams: linear elements
        shear.setdefault(name.rsplit(".n", 1)[0], []).append(f)
    out["beams"] += [(beam, X[fs, :2].copy(), X[fs, :2].copy()) for beam, fs in shear.items()]
    forces = block_params(mech, params, "forces")
    springs, loads = mech.force_block("spring"), mech.force_block("load")
    if springs.names:
        sp = forces["spring"]
        for k, name in enumerate(springs.names):
            fi, fj = springs.frames_i[k], springs.frames_j[k]
            attach(fi, sp["point_i"][k])
            attach(fj, sp["point_j"][k])
            Pi, Pj = glob(fi, sp["point_i"][k]), glob(fj, sp["point_j"][k])
            out["springs"].append((name, Pi, Pj, fi == _GROUND, fj == _GROUND))
            out["grounds"] += [P for P, f in ((Pi, fi), (Pj, fj)) if f == _GROUND]
    if loads.names:
        for k, f in enumerate(loads.frames):
            attach(f, forces["load"]["point"][k])
    _contact_geometry(mech, forces, out, glob, attach)

    for name, b in body_frames:
        pts = np.array([glob(b, s) for s in _hull(np.array(local[b]))])
        out["bodies"].append((name, pts, X[b, 2]))
    for name, f in _node_frames(mech, "particle2d"):
        out["particles"].append((name, X[f, :2].copy()))

    for j in mech.joints:
        if not j.point_ref or j.kind in ("driver", "constraint"):
            continue
        fam, k = j.point_ref
        p = joints_p[fam]
        if "point_j" not in p or fam == "ffr_point":  # (joints of beams: drawn with the
            continue                                  # beams, _beam_geometry / _ffr_geometry)
        Pj = glob(j.frame_j, p["point_j"][k])
        Pi = glob(j.frame_i, p["point_i"][k]) if "point_i" in p else Pj
        grounded = _GROUND in (j.frame_i, j.frame_j)
        if j.kind in ("revolute", "weld"):
            if j.kind == "revolute":
                out["revolutes"].append((j.name, Pj, grounded))
            if grounded:
                out["grounds"].append(Pj)
        elif j.kind in ("prismatic", "point_on_line"):
            n = p["direction"][k]  # normal of the line in frame i
            axis = _rot(X[j.frame_i, 2]) @ np.array([n[1], -n[0]])
            out["guides"].append((j.name, Pi, axis / np.linalg.norm(axis), j.frame_i == _GROUND,
                                  Pj, j.kind))
        elif j.kind in ("rack_pinion", "rolling_disc"):  # pitch circle on its line
            axis = _rot(X[j.frame_i, 2]) @ p["axis"][k]
            out["guides"].append((j.name, Pi, axis, j.frame_i == _GROUND, Pj, j.kind))
            out["discs"].append((j.name, Pj, float(p["radius"][k]), X[j.frame_j, 2]))
        elif j.kind == "knife_edge":
            out["blades"].append((j.name, Pj, _rot(X[j.frame_j, 2]) @ p["axis"][k]))
        elif j.kind == "distance":
            out["rods"].append((j.name, Pi, Pj, j.frame_i == _GROUND))
            out["grounds"] += [P for P, f in ((Pi, j.frame_i), (Pj, j.frame_j)) if f == _GROUND]

    out["curves"] = _cam_curves(mech, joints_p, X, q)
    pts = [b[1] for b in out["bodies"]] + [np.atleast_2d(p[1]) for p in out["particles"]]
    pts += [c[1] + c[2] * np.array([[-1, -1], [1, 1]]) for c in out["circles"]]
    pts += [c[1] for c in out["curves"]]
    pts += [np.atleast_2d(P) for P in out["grounds"]]
    pts += [np.stack([g[1], g[4]]) for g in out["guides"]]
    pts += [np.stack([r[1], r[2]]) for r in out["rods"]]
    pts += [np.stack([d[1] - d[2], d[1] + d[2]]) for d in out["discs"]]
    pts += [b[1] for b in out["beams"]]
    out["points"] = np.concatenate(pts, 0) if pts else np.zeros((1, 2))
    return out


BEAM_SAMPLES = 9  # points per beam element on the drawn centre line


def _node_frames(mech, node_kind):
    """[(name, frame index)] of the nodes of a node family, in order."""
    return [(n, b.frame0 + i) for b in mech.nodes if b.kind == node_kind and b.frame0 >= 0
            for i, n in enumerate(b.names)]


_BEAM_KINDS = {2: ("ancf2d_node", "ancf2d", "ancf2d_beam"), 3: ("ancf3d_node", "ancf3d", "ancf3d_cable")}


def beam_lines(mech, params, q, dim=2):
    """[(beam name, (N, dim) deformed centre line, (k, dim) node positions)] of the ANCF
    beams of a mechanism at q (n,) (dim 2: planar beams, 3: spatial cables), m: each
    element's cubic interpolation r(xi) = S(xi) e (`jaxmbs.flexible.ancf.shape_functions`)
    sampled at `BEAM_SAMPLES` points. Also returns, as a second value, the (n_frames,
    2 dim) nodal (r, r_x) table by frame index."""
    from ..flexible.ancf import shape_functions

    node_kind, frame_kind, body_kind = _BEAM_KINDS[dim]
    nodes = _node_frames(mech, node_kind)
    if not nodes:
        return [], None
    E = np.append(np.asarray(q, float), [0.0, 1.0])[mech.frame_qcols(frame_kind)]
    length = {}
    for bb in mech.bodies:
        if bb.kind == body_kind:
            blk = mech.nodes[bb.node]
            L = np.asarray(params.bodies[bb.kind]["length"], float)
            length.update({blk.frame0 + i: float(L[i]) for i in range(blk.size)})
    xi = np.linspace(0.0, 1.0, BEAM_SAMPLES)
    beams = {}
    for name, f in nodes:
        beams.setdefault(name.rsplit(".n", 1)[0], []).append(f)
    out = []
    for beam, frames in beams.items():
        line = [E[frames[0], :dim][None]]
        for f in frames[:-1]:
            L = length.get(f, 0.0)
            if L > 0:  # the element from node f to node f + 1
                S = shape_functions(xi, L, np)[0]  # (s, 4)
                e = np.stack([E[f, :dim], E[f, dim:], E[f + 1, :dim], E[f + 1, dim:]])
                line.append((S @ e)[1:])
        out.append((beam, np.concatenate(line), E[frames, :dim].copy()))
    return out, E


def element_point(E, f, xi, L, dim):
    """The material point xi (m) of the element that starts at frame f, length L, from the
    node table E of `beam_lines` (NumPy; for drawing pins between beams)."""
    from ..flexible.ancf import shape_functions

    S, _, _ = (np.asarray(a) for a in shape_functions(float(xi), float(L), np))
    return S @ np.stack([E[f, :dim], E[f, dim:], E[f + 1, :dim], E[f + 1, dim:]])


def _beam_geometry(mech, params, q, joints_p, out, glob, attach):
    """Planar ANCF beams: out['beams'] (`beam_lines`); pins of beams to bodies / the
    ground ('beam_point', 'ancf_point') go to out['revolutes'] (and ground symbols), their
    body points into the bodies' hulls."""
    out["beams"], E = beam_lines(mech, params, q, 2)
    if E is None:
        return
    for fam in mech.families:
        if fam.kind not in ("beam_point", "ancf_point", "beam_beam_point"):
            continue
        p = joints_p[fam.kind]
        for k, (fi, fj) in enumerate(zip(fam.frames_i, fam.frames_j)):
            if fam.kind == "beam_point":  # material point on a body point: a pin
                P = glob(fi, p["point_i"][k])
                attach(fi, p["point_i"][k])
            elif fam.kind == "beam_beam_point":  # material points of two elements
                P = element_point(E, fj, p["xi_j"][k], p["length_j"][k], 2)
            else:  # a node on the ground or on another node
                P = E[fj, :2].copy()
            out["revolutes"].append((fam.owners[k], P, fi == _GROUND))
            if fi == _GROUND:
                out["grounds"].append(P)


def _ffr_geometry(mech, params, q, joints_p, out, attach):
    """Floating-frame (modal) beams (`Model.add_ffr_beam`): out['beams'] gets each deformed
    centre line or outline (DRAW_POINTS points, its ends as the 'nodes'); their pins ('ffr_point')
    go to out['revolutes'] at the deformed material point, ground symbols for grounded
    pins and welds, the rigid side's point into its body's hull."""
    bodies = [bb for bb in mech.bodies if bb.kind.startswith("ffr2d_body_m")]
    if not bodies:
        return
    X = np.append(np.asarray(q, float), 0.0)[mech.frame_qcols("ffr2d")]

    def marker(f, s, S):
        return X[f, :2] + _rot(X[f, 2]) @ (np.asarray(s) + np.asarray(S) @ X[f, 3:])

    for bb in bodies:
        blk = mech.nodes[bb.node]
        p = params.bodies[bb.kind]
        P0, Sd = np.asarray(p["draw_points"], float), np.asarray(p["draw_shape"], float)
        for i, name in enumerate(blk.names):
            f = blk.frame0 + i
            u = P0[i] + Sd[i] @ X[f, 3: 3 + Sd.shape[-1]]
            line = X[f, :2] + u @ _rot(X[f, 2]).T
            out["beams"].append((name, line, line[[0, -1]]))
    for fam in mech.families:
        if fam.kind != "ffr_point":
            continue
        p = joints_p["ffr_point"]
        for k, (fi, fj) in enumerate(zip(fam.frames_i, fam.frames_j)):
            P = marker(fj, p["point_j"][k], p["shape_j"][k])
            attach(fi, p["point_i"][k])
            attach(fj, p["point_j"][k])
            grounded = _GROUND in (fi, fj)
            if mech.joint(fam.owners[k]).kind == "revolute":
                out["revolutes"].append((fam.owners[k], P, grounded))
            if grounded:
                out["grounds"].append(P)


def _cam_curves(mech, joints_p, X, q):
    """Cam joints' curves as global polylines: [(name, (N, 2) points, grounded, contact
    point (2,))], closed curves over a period, open ones (lines, polynomials) over a
    stretch around the contact point as long as the closed partner (or 0.1 m)."""
    from ..planar import curves as cv

    fam = next((f for f in mech.families if f.kind == "cam"), None)
    if fam is None:
        return []
    out = []
    for k, name in enumerate(fam.owners):
        ext = []
        items = []
        for side, frames in ((0, fam.frames_i), (1, fam.frames_j)):
            code = fam.static[side][k]
            data = joints_p["cam"][("data_i", "data_j")[side]][k]
            s_now = float(q[fam.extra_cols[k][side]])
            items.append((frames[k], code, data, s_now))
        for f, code, data, s_now in items:
            if code[0] in ("circle", "spline"):
                per = 2 * math.pi if code[0] == "circle" else float(code[1])
                pts = _curve_points(cv, code, data, np.linspace(0, per, 200), X[f])
                ext.append(np.ptp(pts, 0).max())
        half = max(ext) if ext else 0.1
        for f, code, data, s_now in items:
            if code[0] in ("circle", "spline"):
                per = 2 * math.pi if code[0] == "circle" else float(code[1])
                s = np.linspace(0, per, 200)
            else:
                unit = 1.0 if code[0] == "polynomial" else float(np.linalg.norm(np.asarray(data)[2:4]))
                s = s_now + np.linspace(-half, half, 101) / unit
            out.append((name, _curve_points(cv, code, data, s, X[f]), f == _GROUND,
                        _curve_points(cv, code, data, np.array([s_now]), X[f])[0]))
    return out


def _curve_points(cv, code, data, s, X):
    d = np.broadcast_to(np.asarray(data, float), (len(s), len(data)))
    r = np.asarray(cv.evaluate((tuple(code),) * len(s), d, np.asarray(s, float))[0])
    return X[:2] + r @ _rot(X[2]).T


def _contact_geometry(mech, forces, out, glob, attach):
    """Contact circles ('circles': (name, centre, radius)), contact lines ('lines': (name,
    point, global unit normal)) and ground profiles ('profiles': (name, xs, ys) samples or
    (name, fn, None) for a profile function) of the contact force blocks."""
    out["circles"], out["lines"], out["profiles"] = [], [], []
    for blk in getattr(mech, "force_blocks", ()):
        if not blk.kind.startswith("circle_"):
            continue
        p = forces[blk.kind]
        fns = dict(blk.fns)
        for k, (name, fi, fj) in enumerate(zip(blk.names, blk.frames_i, blk.frames_j)):
            rj = p["radius_j"][k] if blk.kind == "circle_circle" else p["radius"][k]
            out["circles"].append((name, glob(fj, p["point_j"][k]), float(rj)))
            attach(fj, p["point_j"][k])
            if blk.kind == "circle_circle":
                out["circles"].append((name, glob(fi, p["point_i"][k]), float(p["radius_i"][k])))
                attach(fi, p["point_i"][k])
            elif blk.kind == "circle_line":
                n = glob(fi, p["normal"][k]) - glob(fi, np.zeros(2))  # A_i normal
                out["lines"].append((name, glob(fi, p["point_i"][k]), n))
            elif blk.kind == "circle_terrain":
                out["profiles"].append((name, p["xs"][k], p["ys"][k]))
            elif blk.kind == "circle_profile":
                out["profiles"].append((name, fns[k], None))


def _draw_contacts(ax, geo, alpha):
    """Draw contact circles, lines and ground profiles within the current x limits."""
    from matplotlib import patches

    for _, C, r in geo["circles"]:
        ax.add_patch(patches.Circle(C, r, fill=False, edgecolor="0.15", lw=1.5, alpha=alpha,
                                    zorder=4))
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    for _, P, n in geo["lines"]:
        t = np.array([n[1], -n[0]]) * 2 * (x1 - x0 + y1 - y0)
        ax.plot(*np.stack([P - t, P + t]).T, "-", color="0.3", lw=1.5, alpha=alpha, zorder=2)
    for _, a, b in geo["profiles"]:
        x = np.linspace(x0, x1, 400)
        if b is None:
            import jax

            y = np.asarray(jax.vmap(a)(np.asarray(x)))
        else:
            y = np.interp(x, a, b)  # drawing only: linear between samples
        ax.fill_between(x, y, min(y0, y.min()) - 1.0, color="0.85", alpha=alpha, zorder=1)
        ax.plot(x, y, "-", color="0.3", lw=1.5, alpha=alpha, zorder=2)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)


def _cross2(a, b):
    """z component of the cross product of 2-vectors."""
    return a[0] * b[1] - a[1] * b[0]


def _hull(P):
    """Convex hull (counter-clockwise, collinear points dropped) of (k, 2) points."""
    P = np.unique(np.round(P, 12), axis=0)
    if len(P) <= 2:
        return P
    P = P[np.lexsort((P[:, 1], P[:, 0]))]

    def half(points):
        h = []
        for p in points:
            while len(h) >= 2 and _cross2(h[-1] - h[-2], p - h[-2]) <= 1e-15:
                h.pop()
            h.append(p)
        return h

    lower, upper = half(P), half(P[::-1])
    return np.array(lower[:-1] + upper[:-1])


def _scale(points):
    ext = np.ptp(points, axis=0).max() if len(points) > 1 else 0.0
    return ext if ext > 1e-9 else 1.0
