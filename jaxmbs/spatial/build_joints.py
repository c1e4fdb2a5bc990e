"""The joint and driver methods of the spatial builder (`jaxmbs.SpatialModel`)."""
from __future__ import annotations

import numpy as np

from .. import profiles as prof
from ..core import build as B
from ..core.build import GROUND, Same, recorded
from . import families as _families  # noqa: F401  (registers the spatial families)
from . import forces as _forces  # noqa: F401
from .geometry import perp_pair
from .inputs import _unit3, _vec3


class JointMethods:
    """Spherical, revolute, universal, cylindrical, prismatic and weld joints, Haug's basic constraints, drivers and rolling discs."""

    def _axis_frames(self, owner, bi, bj, axis, axis_i, axis_j):
        """Axis h_i (body i), h_j (body j) and perpendicular f_i, g_i (body i), f_j, g_j
        (body j, equal to f_i, g_i at the initial configuration)."""
        if axis_i is not None:
            hi = _unit3(axis_i, f"{owner}: axis_i")
        else:
            hi = self._dir_local(bi, owner, axis)
        Ri, Rj = self._frame(bi, owner)[2], self._frame(bj, owner)[2]
        hg = Ri @ hi
        if axis_j is not None:
            hj = _unit3(axis_j, f"{owner}: axis_j")
            if np.linalg.norm(np.cross(Rj @ hj, hg)) > 1e-9:
                raise ValueError(f"{owner}: axis_i and axis_j are not parallel in the initial "
                                 "configuration; call jaxmbs.assemble after building, or give "
                                 "one global axis")
        else:
            hj = Rj.T @ hg
        fi, gi = perp_pair(hi)
        fj, gj = Rj.T @ (Ri @ fi), Rj.T @ (Ri @ gi)
        return dict(h_i=hi, f_i=fi, g_i=gi, h_j=hj, f_j=fj, g_j=gj)

    def _points(self, owner, bi, bj, at, point_i, point_j):
        si = self._local(bi, owner, at, point_i, "_i")
        sj = self._local(bj, owner, at, point_j, "_j")
        return si, sj

    def _dot2_value(self, bi, bj, a_i, si, sj):
        _, ri, Ri = self._frame(bi, "")
        d = self._global_point(bj, sj) - self._global_point(bi, si)
        return float((Ri @ a_i) @ d)

    @staticmethod
    def _refs(**where):
        """{geometry name: Same} of the joint parts' fields holding a joint's geometry (the
        joint-coordinate features, `_joint_coordinate`, read them instead of copying)."""
        return {k: Same("joints", part, field) for k, (part, field) in where.items()}

    def _axis_and_line(self, name, owner, bi, bj, si, sj, ax):
        """The parallel-axis rows (f_i . h_j = 0, g_i . h_j = 0) and the point-on-line rows
        of a cylindrical or prismatic joint, each value stored once: (p1, p2, line parts,
        refs of the geometry)."""
        p1 = self._add_inst("dot1", bi, bj, name, a_i=ax["f_i"], b_j=ax["h_j"])
        p2 = self._add_inst("dot1", bi, bj, name, a_i=ax["g_i"], b_j=Same("joints", p1, "b_j"))
        lines = self._line_parts(owner, name, bi, bj, si, sj, ax,
                                 refs=dict(f_i=Same("joints", p1, "a_i"), g_i=Same("joints", p2, "a_i")))
        refs = self._refs(point_i=(lines[0], "point_i"), point_j=(lines[0], "point_j"),
                          f_i=(p1, "a_i"), g_i=(p2, "a_i"), h_j=(p1, "b_j"))
        return p1, p2, lines, refs

    # ------------------------------------------------------------------ joints
    @recorded
    def add_spherical(self, name, body_i, body_j, at=None, point_i=None, point_j=None) -> str:
        """Ball joint: a point of body_i coincides with a point of body_j (3 equations).

        at: (3,) global position in the initial configuration, m; point_i / point_j: the
        point in body coordinates, m (override `at` for that body).
        Reaction: 'force' (3,) on body_j (N, global axes), 'moment' (3,) (zero up to
        round-off for a ball joint)."""
        owner = f"spherical {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        part = self._add_inst("sph", body_i, body_j, name, point_i=si, point_j=sj)
        self._add_joint(name, "spherical", body_i, body_j, [part], point_ref=part,
                        geo=dict(point_i=si, point_j=sj))
        return name

    @recorded
    def add_revolute(self, name, body_i, body_j, at=None, axis=None, point_i=None,
                     point_j=None, axis_i=None, axis_j=None) -> str:
        """Revolute (hinge): coincident points and parallel axes (5 equations); body_j
        turns relative to body_i about the axis.

        at / point_i / point_j: a point of the axis (m); axis: (3,) global direction in the
        initial configuration, or axis_i / axis_j in body coordinates.
        Reaction: force (3,) and moment (3,) on body_j about the joint point (global)."""
        owner = f"revolute {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        self._oriented(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        ax = self._axis_frames(owner, body_i, body_j, axis, axis_i, axis_j)
        p1 = self._add_inst("sph", body_i, body_j, name, point_i=si, point_j=sj)
        p2 = self._add_inst("dot1", body_i, body_j, name, a_i=ax["f_i"], b_j=ax["h_j"])
        p3 = self._add_inst("dot1", body_i, body_j, name, a_i=ax["g_i"], b_j=Same("joints", p2, "b_j"))
        self._add_joint(name, "revolute", body_i, body_j, [p1, p2, p3], point_ref=p1,
                        geo=dict(point_i=si, point_j=sj, **ax),
                        refs=self._refs(point_i=(p1, "point_i"), point_j=(p1, "point_j"),
                                        f_i=(p2, "a_i"), g_i=(p3, "a_i"), h_j=(p2, "b_j")))
        return name

    @recorded
    def add_universal(self, name, body_i, body_j, at=None, axis_i=None, axis_j=None,
                      point_i=None, point_j=None, axis_i_local=None, axis_j_local=None) -> str:
        """Universal (Cardan) joint: coincident points and an axis of body_i perpendicular
        to an axis of body_j (4 equations).

        axis_i, axis_j: (3,) global directions in the initial configuration (must be
        perpendicular), or axis_i_local / axis_j_local in body coordinates."""
        owner = f"universal {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        self._oriented(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        ai = self._dir_local(body_i, owner, axis_i, axis_i_local, "axis_i")
        aj = self._dir_local(body_j, owner, axis_j, axis_j_local, "axis_j")
        Ri, Rj = self._frame(body_i, owner)[2], self._frame(body_j, owner)[2]
        if abs((Ri @ ai) @ (Rj @ aj)) > 1e-9:
            raise ValueError(f"{owner}: the two axes must be perpendicular in the initial "
                             f"configuration (their dot product is {(Ri @ ai) @ (Rj @ aj):.3g})")
        p1 = self._add_inst("sph", body_i, body_j, name, point_i=si, point_j=sj)
        p2 = self._add_inst("dot1", body_i, body_j, name, a_i=ai, b_j=aj)
        self._add_joint(name, "universal", body_i, body_j, [p1, p2], point_ref=p1,
                        geo=dict(point_i=si, point_j=sj, a_i=ai, b_j=aj))
        return name

    def _line_parts(self, owner, name, bi, bj, si, sj, ax, refs=None):
        """Point of body_j on the axis line of body_i: f_i . d = c1, g_i . d = c2 (the
        second row reads the first one's points; refs: `Same` values of f_i / g_i where
        another part of the joint holds them)."""
        parts = []
        refs = refs or {}
        for key in ("f_i", "g_i"):
            a = ax[key]
            c = self._dot2_value(bi, bj, a, si, sj)
            pts = (dict(point_i=si, point_j=sj) if not parts else
                   {f: Same("joints", parts[0], f) for f in ("point_i", "point_j")})
            parts.append(self._add_inst("dot2", bi, bj, name, a_i=refs.get(key, a), **pts,
                                        profile=prof.constant(c)))
        return parts

    @recorded
    def add_cylindrical(self, name, body_i, body_j, at=None, axis=None, point_i=None,
                        point_j=None, axis_i=None, axis_j=None) -> str:
        """Cylindrical joint: body_j slides along and turns about an axis fixed in body_i
        (4 equations: parallel axes, and body_j's point on the axis line)."""
        owner = f"cylindrical {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        self._oriented(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        ax = self._axis_frames(owner, body_i, body_j, axis, axis_i, axis_j)
        p1, p2, lines, refs = self._axis_and_line(name, owner, body_i, body_j, si, sj, ax)
        self._add_joint(name, "cylindrical", body_i, body_j, [p1, p2] + lines, point_ref=lines[0],
                        geo=dict(point_i=si, point_j=sj, **ax), refs=refs)
        return name

    @recorded
    def add_prismatic(self, name, body_i, body_j, at=None, axis=None, point_i=None,
                      point_j=None, axis_i=None, axis_j=None) -> str:
        """Prismatic (slider): body_j translates along an axis fixed in body_i without
        relative rotation (5 equations)."""
        owner = f"prismatic {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        self._oriented(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        ax = self._axis_frames(owner, body_i, body_j, axis, axis_i, axis_j)
        p1, p2, lines, refs = self._axis_and_line(name, owner, body_i, body_j, si, sj, ax)
        p5 = self._add_inst("dot1", body_i, body_j, name, a_i=Same("joints", p1, "a_i"),
                            b_j=ax["g_j"])
        parts = [p1, p2] + lines + [p5]
        self._add_joint(name, "prismatic", body_i, body_j, parts, point_ref=lines[0],
                        geo=dict(point_i=si, point_j=sj, **ax), refs=refs)
        return name

    @recorded
    def add_weld(self, name, body_i, body_j, at=None, point_i=None, point_j=None) -> str:
        """Rigid connection: coincident points and fixed relative orientation (6 eqs)."""
        owner = f"weld {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        self._oriented(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        Ri, Rj = self._frame(body_i, owner)[2], self._frame(body_j, owner)[2]
        E = np.eye(3)
        loc_j = [Rj.T @ (Ri @ E[k]) for k in range(3)]
        p1 = self._add_inst("sph", body_i, body_j, name, point_i=si, point_j=sj)
        parts = [p1] + [self._add_inst("dot1", body_i, body_j, name, a_i=E[a], b_j=loc_j[b])
                        for a, b in ((0, 1), (1, 2), (2, 0))]
        self._add_joint(name, "weld", body_i, body_j, parts, point_ref=p1,
                        geo=dict(point_i=si, point_j=sj))
        return name

    @recorded
    def add_distance(self, name, body_i, body_j, at_i=None, at_j=None, point_i=None,
                     point_j=None, length=None) -> str:
        """Massless rod with ball joints at both ends: |P_j - P_i| = length (1 equation).

        length: m, a number or a profile (a linear actuator); default: the initial
        distance. The multiplier is the rod's compression (N)."""
        owner = f"distance {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        si = self._local(body_i, owner, at_i, point_i, "_i", "at_i")
        sj = self._local(body_j, owner, at_j, point_j, "_j", "at_j")
        d0 = float(np.linalg.norm(self._global_point(body_j, sj) - self._global_point(body_i, si)))
        if d0 < 1e-12:
            raise ValueError(f"{owner}: the two points coincide in the initial configuration; "
                             "a distance constraint needs distinct points (use add_spherical)")
        profile = prof.constant(d0) if length is None else prof.as_profile(length, f"{owner}: length")
        if length is not None and profile.fn is None and profile == prof.constant(profile.coef[0]):
            B.positive(profile.coef[0], f"{owner}: length")
        part = self._add_inst("dist3", body_i, body_j, name, point_i=si, point_j=sj, profile=profile)
        driver = profile.fn is not None or any(profile.coef[1:]) or profile.amp != 0
        self._add_joint(name, "distance", body_i, body_j, [part], point_ref=part, driver=driver)
        return name

    @recorded
    def add_point_on_line(self, name, body_i, body_j, at=None, axis=None, point_i=None,
                          point_j=None, axis_i=None) -> str:
        """A point of body_j stays on a line fixed in body_i (2 equations); rotation free.
        at / point_i: a point of the line; point_j: the point of body_j (default the same
        global point `at`); axis / axis_i: line direction."""
        owner = f"point-on-line {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        hi = _unit3(axis_i, f"{owner}: axis_i") if axis_i is not None else \
            self._dir_local(body_i, owner, axis)
        fi, gi = perp_pair(hi)
        parts = self._line_parts(owner, name, body_i, body_j, si, sj, dict(f_i=fi, g_i=gi))
        self._add_joint(name, "point_on_line", body_i, body_j, parts, point_ref=parts[0],
                        geo=dict(point_i=si, point_j=sj, h_i=hi, f_i=fi, g_i=gi))
        return name

    @recorded
    def add_point_on_plane(self, name, body_i, body_j, at=None, normal=None, point_i=None,
                           point_j=None, normal_i=None) -> str:
        """A point of body_j stays on a plane fixed in body_i (1 equation). at / point_i: a
        point of the plane; point_j: the point of body_j; normal / normal_i: the plane's
        normal (global initial / body_i coordinates)."""
        owner = f"point-on-plane {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        si, sj = self._points(owner, body_i, body_j, at, point_i, point_j)
        n = _unit3(normal_i, f"{owner}: normal_i") if normal_i is not None else \
            self._dir_local(body_i, owner, normal, what="normal")
        c = self._dot2_value(body_i, body_j, n, si, sj)
        part = self._add_inst("dot2", body_i, body_j, name, a_i=n, point_i=si, point_j=sj,
                              profile=prof.constant(c))
        self._add_joint(name, "point_on_plane", body_i, body_j, [part], point_ref=part)
        return name

    @recorded
    def add_point_on_cylinder(self, name, body_i, body_j, radius=None, at=None, axis=None,
                              point_i=None, point_j=None, axis_i=None) -> str:
        """A point of body_j stays on a cylinder fixed in body_i (1 equation): its distance
        from the cylinder's axis equals `radius` (a bead on a cylindrical surface).

        at / point_i: a point of the axis (global initial / body_i coordinates, m); axis /
        axis_i: the axis direction; point_j: the point of body_j (body_j coordinates; default
        body_j's reference point); radius (m): default the point's initial distance from the
        axis. The multiplier is the normal force on body_j, outward positive (N)."""
        owner = f"point-on-cylinder {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        si = self._local(body_i, owner, at, point_i, "_i")
        sj = self._local(body_j, owner, None, point_j, "_j")
        a = _unit3(axis_i, f"{owner}: axis_i") if axis_i is not None else \
            self._dir_local(body_i, owner, axis)
        d = self._global_point(body_j, sj) - self._global_point(body_i, si)
        A = self._frame(body_i, owner)[2] @ a
        rho = float(np.linalg.norm(d - np.dot(A, d) * A))
        if radius is None:
            if rho < 1e-12:
                raise ValueError(f"{owner}: the point lies on the axis in the initial "
                                 "configuration; give a radius and a point off the axis")
            radius = rho
        B.positive(radius, f"{owner}: radius")
        part = self._add_inst("cyl_point", body_i, body_j, name, point_i=si, a_i=a, point_j=sj,
                              radius=float(radius))
        self._add_joint(name, "point_on_cylinder", body_i, body_j, [part], point_ref=part)
        return name

    @recorded
    def add_parallel_axes(self, name, body_i, body_j, axis=None, axis_i=None, axis_j=None) -> str:
        """An axis of body_j stays parallel to an axis of body_i (2 equations)."""
        owner = f"parallel axes {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        self._oriented(owner, body_i, body_j)
        ax = self._axis_frames(owner, body_i, body_j, axis, axis_i, axis_j)
        p1 = self._add_inst("dot1", body_i, body_j, name, a_i=ax["f_i"], b_j=ax["h_j"])
        p2 = self._add_inst("dot1", body_i, body_j, name, a_i=ax["g_i"], b_j=Same("joints", p1, "b_j"))
        self._add_joint(name, "parallel_axes", body_i, body_j, [p1, p2])
        return name

    @recorded
    def add_perpendicular_axes(self, name, body_i, body_j, axis_i=None, axis_j=None,
                               axis_i_local=None, axis_j_local=None) -> str:
        """An axis of body_i stays perpendicular to an axis of body_j (1 equation)."""
        owner = f"perpendicular axes {name!r}"
        self._new_name(name, "joint")
        self._two(owner, body_i, body_j)
        self._oriented(owner, body_i, body_j)
        ai = self._dir_local(body_i, owner, axis_i, axis_i_local, "axis_i")
        aj = self._dir_local(body_j, owner, axis_j, axis_j_local, "axis_j")
        part = self._add_inst("dot1", body_i, body_j, name, a_i=ai, b_j=aj)
        self._add_joint(name, "perpendicular_axes", body_i, body_j, [part])
        return name

    # ----------------------------------------------------------------- drivers
    @recorded
    def drive_joint(self, name, joint, profile, motion=None) -> str:
        """Prescribe a joint's relative motion as a function of time (1 equation).

        revolute (motion 'angle'): the rotation of body_j relative to body_i about the
        axis, rad, measured from the initial configuration (f(0) = 0 keeps the initial
        pose); prismatic (motion 'displacement'): the displacement of body_j's point
        along the axis from its initial position, m; cylindrical: motion 'angle' or
        'displacement'. profile: number, jaxmbs profile or JAX function f(t). Effort
        reported: torque (N m) / force (N) the driver applies to body_j in the direction
        of increasing f."""
        owner = f"driver {name!r}"
        if joint not in self._joint_geo:
            raise ValueError(f"{owner}: unknown joint {joint!r}; known: {', '.join(self._joint_geo)}")
        geo = self._joint_geo[joint]
        kind, bi, bj = geo["kind"], geo["bi"], geo["bj"]
        default = {"revolute": "angle", "prismatic": "displacement"}.get(kind)
        motion = motion or default
        if kind not in ("revolute", "prismatic", "cylindrical") or motion is None:
            raise ValueError(f"{owner}: joint {joint!r} is a {kind}; only revolute, prismatic and "
                             "cylindrical joints can be driven (use add_distance(length=f) or "
                             "add_constraint for other motions)")
        if motion not in ("angle", "displacement") or (kind == "revolute" and motion != "angle") \
                or (kind == "prismatic" and motion != "displacement"):
            raise ValueError(f"{owner}: motion {motion!r} does not apply to a {kind}")
        profile = prof.as_profile(profile, f"{owner}: profile")
        self._new_name(name, "driver")
        if motion == "angle":
            f_i, g_i, f_j = self._geo(joint, "f_i", "g_i", "f_j")
            part = self._add_inst("rot_driver", bi, bj, name, f_i=f_i, g_i=g_i, f_j=f_j,
                                  profile=profile)
        else:
            c0 = self._dot2_value(bi, bj, geo["h_i"], geo["point_i"], geo["point_j"])
            if profile.fn is None:
                profile = profile._replace(coef=(profile.coef[0] + c0,) + tuple(profile.coef[1:]))
            else:
                fn = profile.fn
                profile = profile._replace(coef=(c0,) + tuple(profile.coef[1:]), fn=fn)
            h_i, point_i, point_j = self._geo(joint, "h_i", "point_i", "point_j")
            part = self._add_inst("dot2", bi, bj, name, a_i=h_i, point_i=point_i,
                                  point_j=point_j, profile=profile)
        self._add_joint(name, "driver", bi, bj, [part], driver=True)
        return name

    @recorded
    def drive_point(self, name, body, profile, at=None, point=None, axis=(0.0, 0.0, 1.0)) -> str:
        """Prescribe the displacement of a body point along a fixed global axis from its
        initial position, f(t) in m (1 equation): axis . (P(t) - P(0)) = f(t), e.g. the
        vertical wheel travel of a suspension. at / point: the point (global initial /
        body coordinates). Effort: the force (N) applied to the body along the axis."""
        owner = f"driver {name!r}"
        self._frame(body, owner)
        if body == GROUND:
            raise ValueError(f"{owner}: the ground cannot be driven")
        s = self._local(body, owner, at, point, "")
        a = _unit3(axis, f"{owner}: axis")
        profile = prof.as_profile(profile, f"{owner}: profile")
        c0 = float(a @ self._global_point(body, s))
        profile = profile._replace(coef=(profile.coef[0] + c0,) + tuple(profile.coef[1:]))
        self._new_name(name, "driver")
        part = self._add_inst("dot2", GROUND, body, name, a_i=a, point_i=np.zeros(3),
                              point_j=s, profile=profile)
        self._add_joint(name, "driver", GROUND, body, [part], driver=True)
        return name

    # ------------------------------------------------------- rolling (nonholonomic)
    @recorded
    def add_rolling_disc(self, name, disc, radius, axle=None, center=None, axle_local=None,
                         center_local=None, surface=GROUND, plane_point=(0.0, 0.0, 0.0),
                         plane_normal=(0.0, 0.0, 1.0)) -> str:
        """A thin disc (wheel) rolling without slip on a plane: 1 holonomic row (the disc
        touches the plane) and 2 nonholonomic rows (its contact point has no velocity in
        the plane relative to the surface).

        disc: body; radius: m; axle / axle_local: the disc's axis (global initial / body);
        center / center_local: its centre (global initial / body; default the reference
        point); surface: 'ground' or a body carrying the plane through plane_point with
        unit normal plane_normal (global initial coordinates), the disc on its + side.
        Reaction: 'force' (3,) on the disc at its centre and 'moment'."""
        owner = f"rolling disc {name!r}"
        self._two(owner, surface, disc)
        self._oriented(owner, disc)
        r = B.positive(radius, f"{owner}: radius")
        sj = self._local(disc, owner, center, center_local, "", "center", "center_local")
        aj = self._dir_local(disc, owner, axle, axle_local, "axle")
        si = self._local(surface, owner, _vec3(plane_point, f"{owner}: plane_point"), None, "")
        ni = self._to_local(surface, _unit3(plane_normal, f"{owner}: plane_normal"))
        self._new_name(name, "joint")
        fields = dict(point_i=si, n_i=ni, point_j=sj, a_j=aj, radius=r)
        p1 = self._add_inst("disc_contact", surface, disc, name, **fields)
        # (one disc: the no-slip rows read the contact row's geometry and radius)
        p2 = self._add_inst("disc_no_slip", surface, disc, name,
                            **{f: Same("joints", p1, f) for f in fields})
        self._add_joint(name, "rolling_disc", surface, disc, [p1, p2], point_ref=p1)
        return name
