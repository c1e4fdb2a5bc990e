"""Material points of planar beams (the frame kind 'planar_beam' that presents a rigid body
or a beam element to a joint): joints and forces at a material point xi of an element
(welds, pins, followers, loads, sliders along a beam)."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..core import families as F
from .ancf_element import ANCF2D, _cross, shape_functions

# ------------------------------------------------------- rigid body <-> beam element
PLANAR_BEAM = "planar_beam"



_UNIT = (lambda a: (a >= 0) & (a <= 1), "must lie in [0, 1]")
_POSITIVE = (lambda a: a > 0, "must be > 0")


def _checks(p, **rules):
    """[(field, bad, why)] of rules {field: (test, why)} for the fields that p holds (a
    field an instance shares with another leaf, e.g. an element's length, is checked
    where it is held)."""
    return [(f, ~test(p[f]), why) for f, (test, why) in rules.items() if f in p]

class PlanarBeamFrame(F.FrameKind):
    """The frame of a joint between a planar rigid frame (body, particle or the ground)
    and a material point of an ANCF element: X = (x, y, theta | r_a, r_x,a, r_b, r_x,b)
    (11,), V its rate. A planar frame fills the first three entries, an ANCF node a the
    last eight: its own coordinates and those of the next node b of its block (the
    element a -> b; the builder attaches such joints to an element's first node only).
    The other entries are the ground pattern (their Jacobian columns are dropped)."""

    name = PLANAR_BEAM
    wq = wv = 11
    dim = 2
    ground_q = (0.0, 0.0, 0.0) + (0.0, 0.0, 1.0, 0.0) * 2
    views = {"planar": ((0, 0), (0, 1), (0, 2)) + (None,) * 8,
             ANCF2D: (None,) * 3 + tuple((0, e) for e in range(4)) + tuple((1, e) for e in range(4))}

    def point(self, X, s):
        """The planar part: r + A(theta) s."""
        from ..planar.geometry import point
        return point(X[..., :3], s)

    def point_velocity(self, X, V, As):
        from ..planar.geometry import point_velocity
        return point_velocity(V[..., :3], As)

    def reaction(self, G, X, s):
        """'force' (2,) N: the resultant of the generalised constraint force G (11,) on the
        frame (on a rigid frame its (x, y) part; on an element the sum over its two nodes'
        positions, the shape functions being a partition of unity); 'moment' () N m: about
        the rigid frame's point A s, or, on an element, about its first node a (the
        material point when xi = 0), summed over both nodes' position and slope parts;
        'generalized' (11,)."""
        from ..planar.geometry import cross as cr
        from ..planar.geometry import rotate
        F_ = G[:2] + G[3:5] + G[7:9]
        m_rigid = G[2] - cr(rotate(X[2], s), G[:2])
        m_elem = cr(X[5:7], G[5:7]) + cr(X[7:9] - X[3:5], G[7:9]) + cr(X[9:11], G[9:11])
        return {"force": F_, "moment": m_rigid + m_elem, "generalized": G}


def _material(p, X, V, d=2):
    """Material point data of k element frames X, V (k, n + 4d) (a rigid frame's n
    entries first, the element's last): the element's nodal vectors e, edot (k, 4, d) and the shape rows
    S, S_x = dS/dx (k, 4) at p['xi'] for elements of length p['length']."""
    L = p["length"]
    S, dS, _ = shape_functions(p["xi"], L)
    return X[:, -4 * d:].reshape(-1, 4, d), V[:, -4 * d:].reshape(-1, 4, d), S, dS / L[:, None]


def _element_block(rows, rigid=3):
    """Jacobian block (k, r, rigid + 4d) of rows w (k, r, 4, d) on the element entries
    (d row / d e_a,c = w[a, c]), zero on the `rigid` entries of the rigid frame."""
    k, r = rows.shape[:2]
    return jnp.concatenate([jnp.zeros((k, r, rigid), rows.dtype), rows.reshape(k, r, -1)], -1)


class _OnElement(F.ConstraintFamily):
    """Rows between a rigid frame i and the material point xi (in [0, 1]) of an element of
    length `length` (m) > 0 on frame j (frame kind 'planar_beam')."""

    frame = PLANAR_BEAM

    def validate(self, p, xp=np):
        return _checks(p, xi=_UNIT, length=_POSITIVE)


class BeamPoint(_OnElement):
    """r(xi) - (r_i + A(theta_i) point_i) = 0 (2 rows, m): the material point xi in [0, 1]
    of the element of length `length` (m; the element's
    Params leaf '<node>.length', read through `FamilyBlock.shared`) on frame j coincides
    with the point `point_i` (body coordinates, m) of the rigid frame i (the ground: a
    global point): a pin between a beam and a body."""

    name = "beam_point"
    rows = 2
    fields = ("point_i", "xi", "length")

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        from ..planar.geometry import point_jacobian, rotate
        e, _, S, _ = _material(p, Xj, Vj)
        As = rotate(Xi[:, 2], p["point_i"])
        g = jnp.einsum("ka,kac->kc", S, e) - Xi[:, :2] - As
        Gi = jnp.concatenate([point_jacobian(As, -1.0), jnp.zeros((Xi.shape[0], 2, 8), Xi.dtype)], -1)
        eye = jnp.eye(2, dtype=Xi.dtype)
        Gj = _element_block(jnp.einsum("ka,rc->krac", S, eye))
        quad = (Vi[:, 2] ** 2)[:, None] * As      # d2/dt2 of -A s at zero acceleration
        return g, Gi, Gj, quad


class BeamSlope(_OnElement):
    """(A(theta_i) axis_i) x r_x(xi) = 0 (1 row): the slope of the beam at the material
    point xi keeps the direction of the unit vector `axis_i` fixed in the rigid frame i
    (body coordinates; the ground: global). With `beam_point` a weld (clamp) of the beam
    to the body; the slope's length (the axial strain) stays free."""

    name = "beam_slope"
    rows = 1
    fields = ("axis_i", "xi", "length")

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        from ..planar.geometry import dot, perp, rotate
        e, ed, _, Sx = _material(p, Xj, Vj)
        a = rotate(Xi[:, 2], p["axis_i"])
        b = jnp.einsum("ka,kac->kc", Sx, e)
        bd = jnp.einsum("ka,kac->kc", Sx, ed)
        g = _cross(a, b)
        w = Vi[:, 2]
        Gi = jnp.concatenate([jnp.zeros_like(a), -dot(a, b)[:, None],
                              jnp.zeros((a.shape[0], 8), a.dtype)], -1)[:, None, :]
        Gj = _element_block(jnp.einsum("ka,kc->kac", Sx, perp(a))[:, None])
        quad = -w * w * g - 2.0 * w * dot(a, bd)
        return g[:, None], Gi, Gj, quad[:, None]


class BeamFollower(F.ForceFamily):
    """A follower force and a torque at the material point xi in [0, 1] of an element of
    length `length` (m; the element's Params leaf '<node>.length', read, not copied) on frame j
    (frame kind 'planar_beam'; frame i unused):

    * `force` (k, 2) N in the deformed cross-section frame at xi: components along the
      unit tangent t = r_x / |r_x| and the normal n = z x t = (-t_y, t_x), so the force
      turns with the beam: f = F_t t + F_n n, Q = S(xi)^T f (S the shape functions).
    * `torque` (k,) N m about z: the work conjugate of the section angle
      theta = atan2(y_x, x_x) at xi, Q = M S_x(xi)^T dtheta/dr_x,
      dtheta/dr_x = (-y_x, x_x) / |r_x|^2 (in the plane a moment is the same dead or
      following).

    Both are non-conservative (a follower force has no potential; the torque's potential
    -M theta is multi-valued, theta winding past +-pi): V = 0 and the power
    P = Q . V (W), which `simulate` integrates into the work of non-conservative forces.
    info: 'force_x', 'force_y' (N), the follower force in global axes."""

    name = "beam_follower"
    frame = PLANAR_BEAM
    fields = ("force", "torque", "xi", "length")
    field_shapes = {"force": (2,)}

    def evaluate(self, p, a):
        from ..planar.geometry import perp
        e, _, S, Sx = _material(p, a.Xj, a.Vj)
        rx = jnp.einsum("ka,kac->kc", Sx, e)
        n2 = jnp.sum(rx * rx, -1)
        t = rx / jnp.sqrt(n2)[:, None]
        f = p["force"][:, :1] * t + p["force"][:, 1:] * perp(t)
        dth = (p["torque"] / n2)[:, None] * perp(rx)           # M dtheta/dr_x (k, 2)
        rows = jnp.einsum("ka,kc->kac", S, f) + jnp.einsum("ka,kc->kac", Sx, dth)
        Qj = _element_block(rows[:, None])[:, 0]
        P = jnp.sum(Qj * a.Vj, -1)
        return jnp.zeros_like(Qj), Qj, jnp.zeros_like(P), P, {"force_x": f[:, 0], "force_y": f[:, 1]}

    def validate(self, p, xp=np):
        return _OnElement.validate(self, p, xp)


def _element_point(X, xi, L, d):
    """r(xi) (k, d) and the shape row S(xi) (k, 4) of the element on k view frames X
    (k, n + 4d) (the element's nodal vectors last), xi (k,), element length L (k,) m."""
    S, _, _ = shape_functions(xi, L)
    return jnp.einsum("ka,kac->kc", S, X[:, -4 * d:].reshape(-1, 4, d)), S


class BeamBeamPoint(_OnElement):
    """r_j(xi_j) - r_i(xi_i) - point = 0 (2 rows, m): the material point xi_j in [0, 1]
    of the element (length `length_j`, m) on frame j stays at the material point xi_i of
    the element (length `length_i`) on frame i plus the constant offset `point` (k, 2) m
    (global axes; 0 for coincident points): a revolute joint between two beams at any
    material points (`Model.add_node_pin` with xi / xi_other; nodes are xi = 0 or 1).
    Frames i and j are elements (view kind 'planar_beam', their rigid part unused). The
    rows are linear in the nodal coordinates: quad = 0. (3D: 'beam3d_beam_point', a
    spherical joint, 3 rows.)"""

    name = "beam_beam_point"
    rows = 2
    rigid = 3  # velocity entries of the view's rigid part (unused, zero columns)
    fields = ("point", "xi_i", "xi_j", "length_i", "length_j")

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        d = self.rows
        ri, Si = _element_point(Xi, p["xi_i"], p["length_i"], d)
        rj, Sj = _element_point(Xj, p["xi_j"], p["length_j"], d)
        eye = jnp.eye(d, dtype=Xi.dtype)
        Gi = _element_block(jnp.einsum("ka,rc->krac", -Si, eye), self.rigid)
        Gj = _element_block(jnp.einsum("ka,rc->krac", Sj, eye), self.rigid)
        g = rj - ri - p["point"]
        return g, Gi, Gj, jnp.zeros_like(g)

    def validate(self, p, xp=np):
        return _checks(p, xi_i=_UNIT, xi_j=_UNIT, length_i=_POSITIVE, length_j=_POSITIVE)


class BeamBeamSlope(_OnElement):
    """(A(angle) r_x,i(xi_i)) x r_x,j(xi_j) = 0 (1 row): the slope r_x = dS/dx(xi) e at the
    material point xi_j in [0, 1] of the element (length `length_j`, m) on frame j keeps
    the direction of the slope at the material point xi_i of the element (length
    `length_i`) on frame i turned by `angle` (k,) rad. With 'beam_beam_point' a weld
    (clamp) between two beams at any material points (`BeamBuilder.add_node_weld` with
    xi / xi_other); the slopes' lengths (axial strains) stay free. Frames as
    'beam_beam_point' (view kind 'planar_beam', rigid part unused). The row is bilinear in
    the two elements' nodal vectors: quad = 2 (A rdot_x,i) x rdot_x,j."""

    name = "beam_beam_slope"
    rows = 1
    rigid = 3
    fields = ("angle", "xi_i", "xi_j", "length_i", "length_j")

    def evaluate(self, p, Xi, Xj, Vi, Vj):
        from ..planar.geometry import perp, rotate
        ei, edi, _, Sxi = _material({"xi": p["xi_i"], "length": p["length_i"]}, Xi, Vi)
        ej, edj, _, Sxj = _material({"xi": p["xi_j"], "length": p["length_j"]}, Xj, Vj)
        slope = lambda Sx, e: jnp.einsum("ka,kac->kc", Sx, e)
        a = rotate(p["angle"], slope(Sxi, ei))
        b = slope(Sxj, ej)
        g = _cross(a, b)
        # d/da_i of (A a_i) x b = A^T (b_y, -b_x) = -A^T perp(b)
        Gi = _element_block(jnp.einsum("ka,kc->kac", Sxi, -rotate(-p["angle"], perp(b)))[:, None],
                            self.rigid)
        Gj = _element_block(jnp.einsum("ka,kc->kac", Sxj, perp(a))[:, None], self.rigid)
        quad = 2.0 * _cross(rotate(p["angle"], slope(Sxi, edi)), slope(Sxj, edj))
        return g[:, None], Gi, Gj, quad[:, None]

    def validate(self, p, xp=np):
        return BeamBeamPoint.validate(self, p, xp)


class BeamLoad(F.ForceFamily):
    """A dead force `force` (k, 2) N (global axes, constant) at the material point xi in
    [0, 1] of an element of length `length` (m; the element's Params leaf '<node>.length',
    read, not copied) on frame j (view kind 'planar_beam'; frame i unused): Q = S(xi)^T F on
    the element's nodal coordinates
    (the virtual work F . delta r(xi)), potential -F . r(xi) (conservative).
    (3D: 'beam3d_load', force (k, 3).)"""

    name = "beam_load"
    frame = PLANAR_BEAM
    fields = ("force", "xi", "length")
    field_shapes = {"force": (2,)}
    rigid = 3

    def evaluate(self, p, a):
        Fo = p["force"]
        d = Fo.shape[-1]
        r, S = _element_point(a.Xj, p["xi"], p["length"], d)
        Qj = _element_block(jnp.einsum("ka,kc->kac", S, Fo)[:, None], self.rigid)[:, 0]
        V = -jnp.sum(Fo * r, -1)
        z = jnp.zeros_like(V)
        return jnp.zeros_like(Qj), Qj, V, z, {}

    def validate(self, p, xp=np):
        return _OnElement.validate(self, p, xp)


def _slider_element(p, S, Sd, static):
    """The element under a slider's arc length s: S, Sd (k, 1 + 4n) = (s, the beam's n
    nodes' coordinates) and rates, static = (n_e per instance,), p['length'] (k,) m ->
    (k, n, sdot (k,), element index el (k,), xi (k,), L (k,), the element's nodal
    vectors e and rates ed (k, 4, 2)); el = clip(floor(s / L), 0, n_e - 1)."""
    k = S.shape[0]
    n = (S.shape[1] - 1) // 4
    ne = jnp.asarray(np.asarray(static[0], np.int32))
    L = p["length"]
    s, sd = S[:, 0], Sd[:, 0]
    N, Nd = S[:, 1:].reshape(k, n, 4), Sd[:, 1:].reshape(k, n, 4)
    el = jnp.clip(jnp.floor(s / L).astype(jnp.int32), 0, ne - 1)
    take = lambda A: jnp.concatenate([jnp.take_along_axis(A, el[:, None, None], 1),
                                      jnp.take_along_axis(A, el[:, None, None] + 1, 1)],
                                     1).reshape(k, 4, 2)
    return k, n, sd, el, s / L - el, L, take(N), take(Nd)


def _on_beam_nodes(w, el, n):
    """(k, r, 4n) Jacobian of rows w (k, r, 4) . (element nodal coordinates) over the
    whole beam's n nodes: the element's first node's part on node el, the second's on
    el + 1, zero elsewhere; w's 4 entries per element node pair as (position, slope)
    shape weights, applied per coordinate: w (k, r, 2 (element node), 2 (pos/slope), 2
    (x, y))."""
    nodes = jnp.arange(n)[None, :, None, None, None]
    first = (nodes == el[:, None, None, None, None])
    second = (nodes == el[:, None, None, None, None] + 1)
    k, r = w.shape[:2]
    out = first * w[:, None, :, 0] + second * w[:, None, :, 1]       # (k, n, r, 2, 2)
    return jnp.moveaxis(out, 2, 1).reshape(k, r, 4 * n)


class BeamSlider(F.ConstraintFamily):
    """Sliding joint along a planar ANCF beam (Sugiyama, Escalona and Shabana 2003):

        r_beam(s) - (r_j + A(theta_j) point_j) = 0   (2 rows, m)

    the point `point_j` (k, 2) (body coordinates, m; a particle: 0) of the planar frame j
    (body or particle) stays on the deformed centre line of a beam and slides freely along
    it. s (m) is one extra, massless coordinate per instance: the undeformed arc length
    from the beam's first node, so the point is on element e = clip(floor(s / L), 0,
    n_e - 1) at xi = s / L - e (L = `length` (k,) m, the beam's uniform element length,
    the beam's first node's Params leaf, read; n_e its number of elements). ANCF elements are C1 at the nodes,
    so r(s) and dr/ds = r_x are continuous where the element changes and the Jacobian
    stays exact on both sides (r_xx, hence gamma, may jump there, as the beam's curvature
    does). Beyond the ends (s < 0 or s > n_e L) the end elements' cubics are
    extrapolated: stop the motion there (the joint does not).

    Frame i is unused (the builder gives the ground). The instance reads further
    coordinates besides its frames (`FamilyBlock.extra_cols`): S (k, 1 + 4 n) = (s, the
    coordinates (x, y, x_x, y_x) of the beam's n nodes) and their rates Sd; beams with
    fewer nodes than the widest of the block repeat their last node's columns (never
    selected: e + 1 <= n_e). static = (n_e per instance,). Returns (g, Gi, Gj, quad, Gs),
    Gs (k, 2, 1 + 4 n): column 0 is dr/ds = r_x(xi) (the tangent), the others S(xi) on
    the element's two nodes. Frictionless: the joint's generalised force on s, r_x . lam,
    vanishes (M has no s entries), so the reaction is normal to the beam's tangent."""

    name = "beam_slider"
    rows = 2
    frame = "planar"
    fields = ("point_j", "length")
    extra = 1

    def evaluate(self, p, Xi, Xj, Vi, Vj, S, Sd, static):
        from ..planar.geometry import point_jacobian, rotate
        k, n, sd, el, xi, L, e, ed = _slider_element(p, S, Sd, static)
        Sh, dS, ddS = shape_functions(xi, L)
        Sx, Sxx = dS / L[:, None], ddS / (L * L)[:, None]
        r = jnp.einsum("ka,kac->kc", Sh, e)
        t = jnp.einsum("ka,kac->kc", Sx, e)                  # dr/ds (k, 2)
        As = rotate(Xj[:, 2], p["point_j"])
        g = r - Xj[:, :2] - As
        Gj = point_jacobian(As, -1.0)
        # d r / d (node n's (r, r_x)): S of the element's first node on node el, of its
        # second on el + 1, zero elsewhere
        w = jnp.einsum("ka,rc->krac", Sh, jnp.eye(2, dtype=S.dtype)).reshape(k, 2, 2, 2, 2)
        Gn = _on_beam_nodes(w, el, n)
        Gs = jnp.concatenate([t[:, :, None], Gn], -1)
        quad = (sd * sd)[:, None] * jnp.einsum("ka,kac->kc", Sxx, e) \
            + 2.0 * sd[:, None] * jnp.einsum("ka,kac->kc", Sx, ed) + (Vj[:, 2] ** 2)[:, None] * As
        return g, jnp.zeros_like(Gj), Gj, quad, Gs

    def extra_width(self, static):
        """Columns of S for the static data of a block: 1 + 4 (max n_e + 1)."""
        return 1 + 4 * (max(static[0]) + 1)

    def sample_static(self, k):
        """Static data for the conformance test: beams of 1 to 3 elements."""
        return (tuple(int(1 + i % 3) for i in range(k)),)

    def validate(self, p, xp=np):
        return _checks(p, length=_POSITIVE)



class BeamSliderAngle(BeamSlider):
    """The prismatic part of a sliding joint along a planar beam (with 'beam_slider': a
    prismatic joint on a flexible guide):

        (A(theta_j) axis_j) x r_x(s) = 0   (1 row)

    the unit vector `axis_j` (k, 2) fixed in body j stays along the beam's deformed
    tangent at the slider's arc length s (the same extra coordinate as its
    'beam_slider' row pair: `FamilyBlock.extra_cols` point at it, `extra` = 0 here: the
    family owns no coordinate of its own). S, Sd, static and `length` as 'beam_slider'.
    Gs (k, 1, 1 + 4n): column 0 is axis x r_xx(s), the others axis x S_x(xi) on the
    element's nodes; r_xx jumps where the element changes (ANCF is C1), so this row's
    Jacobian in s does too."""

    name = "beam_slider_angle"
    rows = 1
    fields = ("axis_j", "length")
    extra = 1  # reads one extra coordinate (built with its slider; see the builder)

    def evaluate(self, p, Xi, Xj, Vi, Vj, S, Sd, static):
        from ..planar.geometry import dot, perp, rotate
        k, n, sd, el, xi, L, e, ed = _slider_element(p, S, Sd, static)
        _, dS, ddS = shape_functions(xi, L)
        Sx, Sxx = dS / L[:, None], ddS / (L * L)[:, None]
        S3 = jnp.stack(jnp.broadcast_arrays(12.0, 6.0 * L, -12.0, 6.0 * L), -1) / (L * L * L)[:, None]
        t = jnp.einsum("ka,kac->kc", Sx, e)
        c = jnp.einsum("ka,kac->kc", Sxx, e)
        a = rotate(Xj[:, 2], p["axis_j"])
        w = Vj[:, 2]
        g = _cross(a, t)
        Gj = jnp.concatenate([jnp.zeros_like(a), -dot(a, t)[:, None]], -1)[:, None, :]
        wn = jnp.einsum("ka,kc->kac", Sx, perp(a)).reshape(k, 1, 2, 2, 2)
        Gs = jnp.concatenate([_cross(a, c)[:, None, None], _on_beam_nodes(wn, el, n)], -1)
        td = c * sd[:, None] + jnp.einsum("ka,kac->kc", Sx, ed)           # d r_x / dt
        tdd = jnp.einsum("ka,kac->kc", S3, e) * (sd * sd)[:, None] \
            + 2.0 * sd[:, None] * jnp.einsum("ka,kac->kc", Sxx, ed)      # at zero acceleration
        quad = -w * w * g - 2.0 * w * dot(a, td) + _cross(a, tdd)
        return g[:, None], jnp.zeros_like(Gj), Gj, quad[:, None], Gs
