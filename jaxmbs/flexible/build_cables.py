"""The spatial cable builder methods (mixed into `jaxmbs.SpatialModel`)."""
from __future__ import annotations

import numpy as np

from ..core import build as B
from ..core.build import GROUND, Same, recorded
from .build import _BeamMethods


class CableBuilder(_BeamMethods):
    """Mixin: spatial ANCF cables for `jaxmbs.SpatialModel` (`_BeamMethods` in 3D, plus a
    clamp of a node's slope direction and a weld of a material point to a rigid body)."""

    _beam_dim = 3
    _beam_families = dict(node="ancf3d_node", body="ancf3d_cable", point="ancf3d_point",
                          load="ancf3d_load", body_point="beam3d_point",
                          beam_pin="beam3d_beam_point", point_load="beam3d_load",
                          follower="beam3d_follower")

    @recorded
    def add_node_weld(self, name, node, other=GROUND, direction=None) -> str:
        """Clamp the cable node `node` (a cable has no torsion: position and slope
        direction) to `other`, as in the initial configuration: its position (3 rows,
        'ancf3d_point') and its slope's direction (2 rows; the slope's length, the axial
        strain, stays free). other = the ground (default): the slope stays along
        `direction` (3,) (global, default the node's initial slope; 'ancf3d_slope', rows
        f . r_x = g . r_x = 0 with f, g unit vectors perpendicular to it): a cantilever's
        clamped end. other = another cable node: the two slopes stay parallel
        ('ancf3d_parallel'; valid while they turn less than 90 degrees from their initial
        direction); `direction` must then be None."""
        qi, qj = self._attach(name, "weld", node, other)
        owner = f"weld {name!r}"
        if other != GROUND and direction is not None:
            raise ValueError(f"{owner}: direction is for a weld to the ground; a weld to "
                             f"another cable node keeps the two slopes parallel (give direction=None)")
        if other != GROUND and np.linalg.norm(np.cross(qi[3:], qj[3:])) > 1e-9 * np.linalg.norm(qi[3:]) * np.linalg.norm(qj[3:]):
            raise ValueError(f"{owner}: the slopes of {node!r} and {other!r} are not parallel in "
                             "the initial configuration; weld nodes whose slopes are parallel")
        u = qj[3:] if direction is None else B.vector(direction, 3, f"{owner}: direction")
        nu = float(np.linalg.norm(u))
        if not nu > 0:
            raise ValueError(f"{owner}: direction must be a nonzero (3,) vector, got {u}")
        u = u / nu
        if np.linalg.norm(np.cross(u, qj[3:])) > 1e-9 * np.linalg.norm(qj[3:]):
            raise ValueError(f"{owner}: direction {u} is not along the initial slope {qj[3:]} of "
                             f"{node!r}; give the node's slope direction (or None)")
        f = np.cross(u, np.eye(3)[int(np.argmin(np.abs(u)))])
        f /= np.linalg.norm(f)
        g = np.cross(u, f)
        p1 = self._add_inst("ancf3d_point", other, node, name, point=qj[:3] - qi[:3])
        fam = "ancf3d_slope" if other == GROUND else "ancf3d_parallel"
        p2 = self._add_inst(fam, other, node, name, f_i=f, g_i=g)
        self._add_joint(name, "node_weld", other, node, [p1, p2])
        return name

    @recorded
    def add_beam_body_weld(self, name, node, body, xi=0.0, at=None, point=None, axis=None,
                           axis_i=None) -> str:
        """Clamp a cable to a rigid body or the ground: the spherical pin of
        `add_beam_body_pin` (3 rows, 'beam3d_point') plus the cable's slope at the material
        point kept along an axis fixed in the body (2 rows, 'beam3d_slope'; a cable has no
        torsion, so this is a weld; the slope's length, the axial strain, stays free). The
        axis: `axis_i` in body coordinates, or `axis` its global direction in the initial
        configuration; default: the cable's initial slope there (the ground: global axes).
        The rows are (R_i f_i) . r_x(xi) = (R_i g_i) . r_x(xi) = 0 with f_i, g_i unit
        vectors fixed in the body perpendicular to the axis and to each other (Params
        leaves f'{name}.point_i' (m), '.f_i', '.g_i', '.xi'; the element's length is its
        node's leaf '<node>.length'). A particle has no
        orientation: refused. Reaction reported: force on the cable element (N) and its
        moment about the element's first node."""
        from ..spatial.geometry import perp_pair

        owner, elem, x, L, t, s = self._beam_body(name, "beam-body weld", node, body, xi, at, point)
        self._oriented(owner, body)  # a particle: no axis to weld to
        if axis_i is not None:
            u = B.unit(axis_i, 3, f"{owner}: axis_i")
        else:
            u = self._frame(body, owner)[2].T @ B.unit(t if axis is None else axis, 3, f"{owner}: axis")
        f, g = perp_pair(u)
        p1 = self._add_inst("beam3d_point", body, elem, name, point_i=s, xi=x, length=L)
        p2 = self._add_inst("beam3d_slope", body, elem, name, f_i=f, g_i=g,
                            xi=Same("joints", p1, "xi"), length=Same("joints", p1, "length"))
        self._add_joint(name, "beam_body_weld", body, elem, [p1, p2])
        return name
