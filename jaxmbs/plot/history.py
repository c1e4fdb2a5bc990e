"""Time histories of a trajectory (`plot_trajectory`) and GIF animations (`animate`)."""
from __future__ import annotations

import numpy as np

from .drawing import draw
from .shapes import _mpl, _scale, geometry


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
        from ..spatial.draw import animate3d
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
