"""Plots and animations of mechanisms and trajectories (needs matplotlib: ``pip install
jaxmbs[plot]``).

    traj = jaxmbs.simulate(mech, params, q0, v0, (0, 5), 1e-3)
    jaxmbs.plot.plot_trajectory(traj, mech, path="run.png")   # time histories
    jaxmbs.plot.draw(mech, params, traj.q[-1])                # the mechanism at t1
    jaxmbs.plot.animate(mech, params, traj, "run.gif")        # a GIF

Drawing conventions (`draw`): every body is the convex hull of its reference point and
the points where joints, springs and loads attach to it (a thick line for a bar, a
shaded polygon for a plate, a small block for a body with a single point, e.g. a
slider); revolute joints are white circles; joints to the ground stand on a hatched
ground symbol; prismatic and point-on-line joints show their guide line; distance
constraints (massless rods) are thin lines; springs are zigzags; particles are dots;
pinions and rolling discs are their pitch circles (with a spoke) on their guide line;
knife edges are short black blades.
Everything is computed from `params` and `q`, so the drawing follows parameter changes
(`mech.replace`) and batched members alike. Lengths in the model's units (m).

matplotlib is imported inside the functions, so ``import jaxmbs`` never needs it.
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["plot_trajectory", "draw", "animate", "geometry"]

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


def _rot(th):
    c, s = math.cos(th), math.sin(th)
    return np.array([[c, -s], [s, c]])


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
    cols = mech.frame_cols()
    X = qe[cols]  # (n_frames, 3): x, y, theta of every frame (ground = 0)
    body_frames = _node_frames(mech, "planar_rigid")

    def glob(frame, s):
        return X[frame, :2] + _rot(X[frame, 2]) @ np.asarray(s, float)

    local = {f: [np.zeros(2)] for _, f in body_frames}  # body frame -> local points

    def attach(frame, s):
        if frame in local:
            local[frame].append(np.asarray(s, float))

    joints_p = {fam: {k: np.asarray(v) for k, v in d.items()} for fam, d in params.joints.items()}
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
    forces = {fam: {k: np.asarray(v) for k, v in d.items()} for fam, d in params.forces.items()}
    if mech.springs.names:
        sp = forces["spring"]
        for k, name in enumerate(mech.springs.names):
            fi, fj = mech.springs.frames_i[k], mech.springs.frames_j[k]
            attach(fi, sp["point_i"][k])
            attach(fj, sp["point_j"][k])
            Pi, Pj = glob(fi, sp["point_i"][k]), glob(fj, sp["point_j"][k])
            out["springs"].append((name, Pi, Pj, fi == _GROUND, fj == _GROUND))
            out["grounds"] += [P for P, f in ((Pi, fi), (Pj, fj)) if f == _GROUND]
    if mech.loads.names:
        for k, f in enumerate(mech.loads.frames):
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
    from .flexible.ancf import shape_functions

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
    from .flexible.ancf import shape_functions

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
    from .planar import curves as cv

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


def _hull(P):
    """Convex hull (counter-clockwise, collinear points dropped) of (k, 2) points."""
    P = np.unique(np.round(P, 12), axis=0)
    if len(P) <= 2:
        return P
    P = P[np.lexsort((P[:, 1], P[:, 0]))]

    def half(points):
        h = []
        for p in points:
            while len(h) >= 2 and np.cross(h[-1] - h[-2], p - h[-2]) <= 1e-15:
                h.pop()
            h.append(p)
        return h

    lower, upper = half(P), half(P[::-1])
    return np.array(lower[:-1] + upper[:-1])


def _scale(points):
    ext = np.ptp(points, axis=0).max() if len(points) > 1 else 0.0
    return ext if ext > 1e-9 else 1.0


# --------------------------------------------------------------------------------- draw
def draw(mech, params, q, ax=None, *, color="C0", alpha=1.0, scale=None, labels=False):
    """Draw the mechanism at configuration q (n,) on a matplotlib Axes.

    Args:
      mech, params: the mechanism and one member's parameters.
      q: (n,) coordinates (m, rad), e.g. q0 or traj.q[k].
      ax: Axes to draw on (default: a new figure's).
      color: colour of the bodies. alpha: opacity of everything drawn (e.g. 0.3 for a
        ghost of the initial configuration).
      scale: size of the joint symbols' reference length in m (default: the extent of
        the mechanism), so that frames of an animation keep equal symbols.
      labels: write body names next to the bodies.
    Returns the Axes (equal aspect ratio, axes in m). Spatial mechanisms are drawn in 3D
    (`jaxmbs.spatial.draw.draw3d`; ax then must be a 3D Axes or None).
    """
    if "spatial" in mech.frame_kinds():
        from .spatial.draw import draw3d
        return draw3d(mech, params, q, ax, color=color, alpha=alpha)
    plt = _mpl()
    from matplotlib import patches

    geo = geometry(mech, params, q)
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 5))
    L = _scale(geo["points"]) if scale is None else float(scale)
    r = 0.02 * L  # joint circle radius
    zb, zj = 3, 5

    for _, P, axis, grounded, Pj, kind in geo["guides"]:
        s = np.dot(Pj - P, axis)
        half = 0.35 * L
        a, b = P + axis * (s - half), P + axis * (s + half)
        ax.plot(*np.stack([a, b]).T, "--", color="0.45", lw=1, alpha=alpha, zorder=1)
        if grounded:
            nrm = np.array([-axis[1], axis[0]])
            off = 1.92 * r if kind == "prismatic" else 0.5 * r  # under the slider block
            c0, c1 = a - nrm * off, b - nrm * off
            poly = np.stack([c0, c1, c1 - nrm * 1.2 * r, c0 - nrm * 1.2 * r])
            ax.add_patch(patches.Polygon(poly, closed=True, fill=False, hatch="////", lw=0,
                                         edgecolor="0.4", alpha=alpha, zorder=1))
            ax.plot(*np.stack([c0, c1]).T, color="0.3", lw=1.2, alpha=alpha, zorder=1)

    for P in geo["grounds"]:
        _ground_symbol(ax, patches, P, r, alpha)

    for name, pts, th in geo["bodies"]:
        if len(pts) == 1:  # single point: a block (e.g. a slider) turned with the body
            w = 3.2 * r
            R = _rot(th)
            corners = np.array([[-w, -0.6 * w], [w, -0.6 * w], [w, 0.6 * w], [-w, 0.6 * w]])
            poly = pts[0] + corners @ R.T
            ax.add_patch(patches.Polygon(poly, closed=True, facecolor=color, edgecolor="k",
                                         lw=1, alpha=0.6 * alpha, zorder=zb))
        elif len(pts) == 2:
            ax.plot(*pts.T, "-", color=color, lw=5, solid_capstyle="round", alpha=alpha,
                    zorder=zb)
        else:
            ax.add_patch(patches.Polygon(pts, closed=True, facecolor=color, edgecolor=color,
                                         lw=2, alpha=0.35 * alpha, zorder=zb))
            ax.add_patch(patches.Polygon(pts, closed=True, fill=False, edgecolor=color, lw=2,
                                         alpha=alpha, zorder=zb))
        if labels:
            c = pts.mean(0)
            ax.annotate(name, c, xytext=(4, 4), textcoords="offset points", fontsize=8,
                        alpha=alpha, zorder=zj + 1)

    for _, Pi, Pj, _g in geo["rods"]:
        ax.plot(*np.stack([Pi, Pj]).T, "-", color="0.2", lw=1.5, alpha=alpha, zorder=zb)
        for P in (Pi, Pj):
            ax.add_patch(patches.Circle(P, 0.6 * r, facecolor="white", edgecolor="k", lw=1,
                                        alpha=alpha, zorder=zj))

    for _, Pi, Pj, _gi, _gj in geo["springs"]:
        ax.plot(*_zigzag(Pi, Pj, 0.8 * r).T, "-", color="C3", lw=1.2, alpha=alpha, zorder=zb + 1)

    for _, C, rad, th in geo["discs"]:  # pitch circles with a spoke showing rotation
        ax.add_patch(patches.Circle(C, rad, fill=False, edgecolor=color, lw=1.5, alpha=alpha,
                                    zorder=zb + 1))
        ax.plot(*np.stack([C, C + rad * np.array([math.cos(th), math.sin(th)])]).T, "-",
                color=color, lw=1, alpha=alpha, zorder=zb + 1)

    for _, P, a in geo["blades"]:  # knife edges: a short dark blade along its axis
        a = a / max(np.linalg.norm(a), 1e-300)
        ax.plot(*np.stack([P - 2.5 * r * a, P + 2.5 * r * a]).T, "-", color="k", lw=3,
                solid_capstyle="butt", alpha=alpha, zorder=zj)

    for _, pts, grounded, _c in geo.get("curves", ()):  # cam curves (ground's in grey)
        ax.plot(*pts.T, "-", color="0.35" if grounded else color, lw=1.8, alpha=alpha, zorder=zb + 1)
    for _, _p, _g, P in geo.get("curves", ())[1::2]:  # contact points
        ax.plot(*P, "o", color="C3", ms=4, alpha=alpha, zorder=zj)

    for _, line, nodes in geo["beams"]:  # deformed centre lines, nodes as dots
        ax.plot(*line.T, "-", color=color, lw=3, solid_capstyle="round", alpha=alpha, zorder=zb)
        ax.plot(*nodes.T, "o", color=color, mec="k", mew=0.5, ms=3, alpha=alpha, zorder=zb + 1)

    for _, P, _g in geo["revolutes"]:
        ax.add_patch(patches.Circle(P, r, facecolor="white", edgecolor="k", lw=1.2,
                                    alpha=alpha, zorder=zj))

    for name, P in geo["particles"]:
        ax.add_patch(patches.Circle(P, 1.6 * r, facecolor="k", edgecolor="k", alpha=alpha,
                                    zorder=zj))
        if labels:
            ax.annotate(name, P, xytext=(6, 6), textcoords="offset points", fontsize=8,
                        alpha=alpha)

    ax.set_aspect("equal")
    ax.autoscale_view()
    if scale is None:
        lo, hi = geo["points"].min(0), geo["points"].max(0)
        pad = 0.12 * L
        ax.set_xlim(min(ax.get_xlim()[0], lo[0] - pad), max(ax.get_xlim()[1], hi[0] + pad))
        ax.set_ylim(min(ax.get_ylim()[0], lo[1] - pad), max(ax.get_ylim()[1], hi[1] + pad))
    if geo.get("circles") or geo.get("profiles"):
        _draw_contacts(ax, geo, alpha)
    ax.set_xlabel("x (m)")
    ax.set_ylabel("y (m)")
    return ax


def _ground_symbol(ax, patches, P, r, alpha):
    """A fixed pivot: a triangle under P standing on a hatched strip."""
    h, w = 2.4 * r, 1.6 * r
    tri = np.array([P, P + [-w, -h], P + [w, -h]])
    ax.add_patch(patches.Polygon(tri, closed=True, facecolor="0.85", edgecolor="0.3", lw=1,
                                 alpha=alpha, zorder=2))
    base = P + [-1.6 * w, -h - 1.2 * r]
    ax.add_patch(patches.Rectangle(base, 3.2 * w, 1.2 * r, fill=False, hatch="////", lw=0,
                                   edgecolor="0.4", alpha=alpha, zorder=2))
    ax.plot([P[0] - 1.6 * w, P[0] + 1.6 * w], [P[1] - h, P[1] - h], color="0.3", lw=1.2,
            alpha=alpha, zorder=2)


def _zigzag(Pi, Pj, amp, coils=7):
    """(k, 2) polyline of a spring from Pi to Pj: straight ends, `coils` zigzags."""
    d = Pj - Pi
    ell = np.linalg.norm(d)
    if ell < 1e-12:
        return np.stack([Pi, Pj])
    u = d / ell
    nrm = np.array([-u[1], u[0]])
    amp = min(amp, 0.25 * ell)
    s = np.linspace(0.15, 0.85, 2 * coils + 1)
    off = np.where(np.arange(s.size) % 2 == 0, 0.0, np.where(np.arange(s.size) % 4 == 1, amp, -amp))
    mid = Pi + np.outer(s * ell, u) + np.outer(off, nrm)
    return np.concatenate([Pi[None], mid, Pj[None]])


# ------------------------------------------------------------------------- time plots
def _one_member(traj):
    if np.ndim(traj.t) != 1:
        raise ValueError(
            "plot a single trajectory: this one is batched (t has shape "
            f"{np.shape(traj.t)}); select a member with "
            "jax.tree_util.tree_map(lambda a: a[i], traj)")


def select_coordinates(mech, coords=None, max_default=6) -> list:
    """Indices in q of `coords`: None (all coordinates when there are at most
    `max_default`, else the first `max_default`), "all", or a sequence of names
    ('crank.theta', ...) and indices; ValueError naming an unknown name or index."""
    names = mech.coordinate_names()
    if coords is None:
        return list(range(min(len(names), max_default)))
    if isinstance(coords, str):
        if coords != "all":
            raise ValueError(f"coords must be 'all' or a list of coordinate names / indices, "
                             f"got the string {coords!r}; e.g. [{coords!r}]")
        return list(range(len(names)))
    idx = []
    for c in coords:
        if isinstance(c, str):
            idx.append(mech.coordinate_index(c))
        elif isinstance(c, (int, np.integer)) and not isinstance(c, bool) and -len(names) <= c < len(names):
            idx.append(int(c) % len(names))
        else:
            raise ValueError(f"coords: {c!r} is not a coordinate name or an index in "
                             f"[0, {len(names)}); known: {', '.join(names)}")
    if not idx:
        raise ValueError("coords is empty; give at least one coordinate name or index, or 'all'")
    return idx


def plot_trajectory(traj, mech, coords=None, path=None, *, fig=None, title=None):
    """Time histories of a simulation: coordinates, constraint error and energy.

    Args:
      traj: a `Trajectory` from `jaxmbs.simulate` (one member, not a batch).
      mech: its mechanism (for coordinate names).
      coords: names ('crank.theta', 'bob.x', ...) or indices of the coordinates to plot,
        or "all"; default: all of them when there are at most 6, else the first 6 (the
        figure then says so: pass coords to choose).
      path: if given, the figure is saved there (PNG, PDF, ... by extension) and closed.
      fig: a matplotlib Figure or SubFigure to draw into (default: a new figure).
      title: optional title.
    Panels: lengths (m) and angles (rad) of the selected coordinates; constraint residual
    max|Phi| (log scale); kinetic, potential and total energy E = T + V - W (J), with its
    relative drift. Returns the figure.
    """
    plt = _mpl()
    _one_member(traj)
    names = mech.coordinate_names()
    idx = select_coordinates(mech, coords)
    note = (f"coordinates: the first 6 of {len(names)} (coords= selects others)"
            if coords is None and len(idx) < len(names) else None)
    t = np.asarray(traj.t)
    q = np.asarray(traj.q)
    lin = [i for i in idx if not names[i].endswith(".theta")]
    ang = [i for i in idx if names[i].endswith(".theta")]
    panels = [p for p in ("lin", "ang") if (lin if p == "lin" else ang)] + ["err", "energy"]

    own = fig is None
    if own:
        fig = plt.figure(figsize=(8, 2.2 * len(panels) + 0.6), layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True)
    axes = np.atleast_1d(axes)
    for ax, p in zip(axes, panels):
        if p in ("lin", "ang"):
            for i in (lin if p == "lin" else ang):
                ax.plot(t, q[:, i], label=names[i])
            ax.set_ylabel("m" if p == "lin" else "rad")
            ax.legend(loc="best", fontsize=8, ncol=min(3, len(lin if p == "lin" else ang)))
        elif p == "err":
            err = np.asarray(traj.constraint_error)
            floor = np.finfo(q.dtype).eps * 1e-3  # exact zeros are drawn at this floor
            ax.semilogy(t, np.maximum(err, floor), color="C3")
            ax.set_ylabel("max |Φ|")
            if np.any(err < floor):
                ax.set_title(f"constraint residual (values < {floor:.0e} drawn at {floor:.0e})",
                             fontsize=9, loc="right")
        else:
            T, V, E = (np.asarray(x) for x in (traj.kinetic, traj.potential, traj.energy))
            ax.plot(t, T, label="kinetic T")
            ax.plot(t, V, label="potential V")
            ax.plot(t, E, "k", label="E = T + V − W")
            drift = float(np.asarray(traj.energy_drift()))
            ax.set_ylabel("J")
            ax.set_title(f"relative energy drift {drift:.2e}", fontsize=9, loc="right")
            ax.legend(loc="best", fontsize=8, ncol=3)
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel("t (s)")
    if note:
        axes[0].set_title(note, fontsize=9, loc="left")
    if title:
        fig.suptitle(title)
    if path is not None:
        fig.savefig(path, dpi=120)
        if own:
            plt.close(fig)
    return fig


# --------------------------------------------------------------------------- animation
def animate(mech, params, traj, path, *, fps=25, max_frames=150, trail=None, title=None):
    """Write an animated GIF of a trajectory (matplotlib's PillowWriter, needs Pillow).

    Args:
      mech, params: the mechanism and the member's parameters.
      traj: a `Trajectory` (one member), or any object with t (s,) and q (s, n).
      path: output file, e.g. 'run.gif'.
      fps: frames per second of the GIF. max_frames: the saved samples are thinned to at
        most this many frames (evenly spaced in time).
      trail: optional coordinate pair names, e.g. ('bob.x', 'bob.y'), whose path is drawn
        up to the current frame.
      title: optional title; the time is shown in the corner.
    Returns path.
    """
    if "spatial" in mech.frame_kinds():
        from .spatial.draw import animate3d
        return animate3d(mech, params, traj, path, fps=fps, max_frames=max_frames, title=title)
    plt = _mpl()
    from matplotlib.animation import FuncAnimation, PillowWriter

    t = np.asarray(traj.t)
    q = np.asarray(traj.q)
    if q.ndim != 2:
        raise ValueError(f"animate needs one trajectory with q of shape (s, n), got {q.shape}")
    frames = np.unique(np.linspace(0, len(t) - 1, min(max_frames, len(t))).round().astype(int))
    pts = np.concatenate([geometry(mech, params, q[k])["points"] for k in frames], 0)
    L = _scale(pts)
    lo, hi = pts.min(0) - 0.15 * L, pts.max(0) + 0.15 * L
    tr = None
    if trail is not None:
        tr = q[:, [mech.coordinate_index(c) for c in trail]]

    aspect = min(2.0, max(0.5, (hi[1] - lo[1]) / (hi[0] - lo[0])))
    fig, ax = plt.subplots(figsize=(5.5, 1.0 + 4.5 * aspect), layout="constrained")

    def frame(i):
        k = frames[i]
        ax.clear()
        if tr is not None:
            ax.plot(tr[: k + 1, 0], tr[: k + 1, 1], "-", color="0.6", lw=0.8)
        draw(mech, params, q[k], ax=ax, scale=L)
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.text(0.02, 0.96, f"t = {t[k]:.3f} s", transform=ax.transAxes, va="top")
        if title:
            ax.set_title(title)
        return []

    anim = FuncAnimation(fig, frame, frames=len(frames), blit=False)
    anim.save(path, writer=PillowWriter(fps=fps))
    plt.close(fig)
    return path
