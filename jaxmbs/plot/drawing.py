"""Drawing a planar mechanism with matplotlib (`draw`)."""
from __future__ import annotations

import math

import numpy as np

from .shapes import _draw_contacts, _mpl, _rot, _scale, geometry


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
        from ..spatial.draw import draw3d
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
