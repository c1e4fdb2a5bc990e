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
from .drawing import draw
from .history import animate, plot_trajectory, select_coordinates
from .shapes import BEAM_SAMPLES, beam_lines, element_point, geometry

__all__ = ["plot_trajectory", "draw", "animate", "geometry", "beam_lines", "element_point", "select_coordinates",
           "BEAM_SAMPLES"]
