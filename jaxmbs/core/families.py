"""The family protocols and their one registry.

The core of jaxmbs (equations, saddle solvers, integrators, stabilisation, simulate,
analysis, fitting, environments) never knows what a body is. It sees *families*: groups
of instances that share one vectorised kernel. A family is one class in one file,
registered here by name; the core looks kinds up in this registry at trace time and
applies each kernel to all instances of its family at once (MJX style: static NumPy
selection of the instances, one array expression over them, scatter into place).

Four kinds of family, and the frame kinds that connect them:

* `FrameKind` -- what a joint or force sees of a node: the frame's coordinates X (wq,)
  and velocities V (wv,), e.g. planar (x, y, theta) / (xd, yd, omega) and spatial
  (r, quaternion) / (rd, omega in body axes). Ground frames and nodes without
  orientation (particles) are padded with the kind's `ground_q` pattern.
* `NodeFamily` -- what coordinates are: nq per instance in q, nv in v (nq may differ
  from nv), the kinematic map qdot = T(q) v, the update q (+) dv (`retract`), and the
  frame kind it presents (or none, for massless scalar coordinates).
* `BodyFamily` -- mass and body loads of one node per instance: its part of the mass
  operator (apply, closed-form solve, dense blocks), gravity and quadratic-velocity
  forces, potential energy, inertial data for forces that need it.
* `ConstraintFamily` -- r primitive rows per instance between frames i and j:
  evaluate(p, Xi, Xj, Vi, Vj) -> (g, Gi, Gj, quad) with Gi, Gj the Jacobian blocks
  with respect to the frames' *velocity* coordinates and quad = (d/dt of the rows at
  zero acceleration), so that gamma = -quad (+ f''(t) for driven rows).
* `ForceFamily` -- generalised forces of k instances between frames i and j:
  evaluate(p, args) -> (Qi, Qj, V, P, info).

Adding a family is one class and one `register(...)` call in the file that defines it
(see jaxmbs/planar/families.py and jaxmbs/spatial/families.py), plus its builder method;
tests/families/ runs every registered family through the same conformance checks.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

__all__ = ["FrameKind", "NodeFamily", "BodyFamily", "PointMassBody", "ConstraintFamily", "ForceFamily",
           "ForceArgs", "register", "frame_kind", "node_family", "body_family",
           "constraint_family", "force_family", "registered", "REGISTRY"]


class FrameKind:
    """A kind of frame (the marker interface between nodes and joints/forces).

    name; wq, wv: width of a frame's coordinates X and velocities V; ground_q (wq,): the
    coordinates of the ground frame (and the padding of missing entries, e.g. a
    particle's orientation); dim: dimension of points (2 or 3).
    Kernels of the kind: point(X, s) -> (P, As) global position (k, dim) of body points s
    (k, dim) and the rotated offset; reaction(G, X, s) -> dict of named force / moment
    components from the generalised constraint force G (wv,) on the frame at local
    point s (dim,) (one instance).
    """

    name: str = ""
    wq: int = 0
    wv: int = 0
    dim: int = 0
    ground_q: tuple = ()
    # a kind that presents frames of other kinds (a joint between a rigid body and a beam
    # element): {other kind: per entry, (frame offset, entry of the other kind) or None
    # (the ground pattern)}; offset 1 is the next node of the same node block. No node
    # family presents such a kind directly (see jaxmbs.core.mechanism._frame_tables).
    views: dict = {}
    # the same for the velocity entries where they differ from `views` (a source kind with
    # wq != wv, e.g. a spatial rigid frame: 7 coordinates, 6 velocities); default: views
    vviews: dict = {}

    def point(self, X, s):
        raise NotImplementedError

    def point_velocity(self, X, V, As):
        raise NotImplementedError

    def reaction(self, G, X, s):
        raise NotImplementedError


class NodeFamily:
    """Coordinates of one kind of node.

    nq, nv: coordinates and velocity coordinates per instance; frame: name of the
    FrameKind the node presents to joints and forces ('' for none); frame_q, frame_v:
    for each frame entry, the node entry it comes from (-1: the ground pattern), so that
    a particle presents (x, y, -) as a planar frame with theta from the ground pattern.
    identity: True when qdot(q, v) = v and retract(q, dv) = q + dv (the core then skips
    the maps, at no cost). coord_names / vel_names: suffixes of q / v entries.
    """

    name: str = ""
    nq: int = 0
    nv: int = 0
    frame: str = ""
    frame_q: tuple = ()
    frame_v: tuple = ()
    identity: bool = True
    rigid: bool = False  # a body with orientation (counts in Mechanism.body_names)
    coord_names: tuple = ()
    vel_names: tuple = ()

    def qdot(self, q, v):
        """q (k, nq), v (k, nv) -> qdot (k, nq)."""
        return v

    def retract(self, q, dv):
        """q (+) dv: q (k, nq) moved along the velocity-space increment dv (k, nv)."""
        return q + dv

    def normalize(self, q):
        """The nearest admissible coordinates (e.g. unit quaternions), (k, nq)."""
        return q

    # what the coordinates of an instance must satisfy, in words ('' when any real values
    # are admissible), and the name of the measure `coordinate_defects` returns
    admissible: str = ""
    defect: str = ""

    def coordinate_defects(self, q):
        """Concrete coordinates q (..., nq) (NumPy) -> (singular (...,) bool, off (...,)):
        singular where no admissible coordinates are near q (`normalize` is undefined
        there, e.g. a zero quaternion), off how far q is from the admissible coordinates
        `normalize` gives, in the measure `defect` (0 when admissible). Default: every q
        is admissible."""
        shape = np.shape(q)[:-1]
        return np.zeros(shape, bool), np.zeros(shape)

    def dq_dv(self, q):
        """d retract(q, dv) / d dv at dv = 0: (k, nq, nv) (identity by default)."""
        import jax.numpy as jnp
        return jnp.broadcast_to(jnp.eye(self.nq, self.nv, dtype=q.dtype), q.shape[:1] + (self.nq, self.nv))

    # --- linearisation chart (jaxmbs.linear) -------------------------------------------
    # Perturbations of a node are velocity-space increments in GLOBAL axes (a rotation
    # vector about the global axes for an orientation), and its velocity perturbations
    # are those of the velocities in global axes. Vector coordinates (planar bodies,
    # particles, extra coordinates) need none of the three methods below.
    chart_names: tuple = ()  # names of the chart's entries (default: vel_names)

    def global_velocity(self, q, v):
        """The velocity coordinates v (k, nv) expressed in global axes (k, nv); linear in
        v (identity by default)."""
        return v

    def body_velocity(self, q, V):
        """Inverse of `global_velocity` at q: global-axes V (k, nv) -> v (k, nv)."""
        return V

    def chart_rate(self, q, V, dx):
        """(k, nv): d/dt of a global-chart perturbation dx of the node beyond the
        perturbation of its global velocity V, for the node moving with V (zero for vector
        coordinates; Omega x dphi for an orientation turning at Omega)."""
        return dx * 0.0


class BodyFamily:
    """Mass and body loads of k instances, each on one node of family `node`.

    fields: Params fields per instance (e.g. mass (k,), inertia (k, 3, 3), cg (k, 3));
    mass_part(p, X) -> a mass part object with apply(X), solve(X), dense_blocks() ->
    (k, nv, nv), inverse_blocks() -> (k, nv, nv), frame_solve(X) (per-frame M^-1 x for
    x (k, nv)); loads(p, X, V, g) -> (Q (k, nv), V (k,)): gravity at the CG and the
    quadratic-velocity (gyroscopic, centripetal) terms; inertia_data(p) -> dict of
    per-instance inertial data for force families that need it.
    """

    name: str = ""
    node: str = ""
    fields: tuple = ()
    # True when the mass couples the instances (beam elements between consecutive nodes):
    # the mass part is then not block diagonal per node, and the banded path (which uses
    # per-frame blocks of M^-1) is not taken
    coupled: bool = False

    def mass_part(self, p, X):
        raise NotImplementedError

    def loads(self, p, X, V, g):
        raise NotImplementedError

    def inertia_data(self, p):
        return {}

    def sample(self, rng, k):
        """Random valid Params of k instances (see ConstraintFamily.sample): mass > 0, a
        positive inertia (an SPD (3, 3) tensor where `field_shapes` says so), the CG and
        any other field by its name."""
        shapes = dict(getattr(self, "field_shapes", {}))
        p = {"mass": rng.uniform(0.5, 2.0, size=k)} if "mass" in self.fields else {}
        if "inertia" in self.fields:
            if tuple(shapes.get("inertia", ())) == (3, 3):
                A = rng.normal(size=(k, 3, 3)) * 0.1
                p["inertia"] = np.einsum("kij,klj->kil", A, A) + 0.05 * np.eye(3)
            else:
                p["inertia"] = rng.uniform(0.05, 0.2, size=k)
        if "cg" in self.fields:
            p["cg"] = rng.normal(size=(k,) + tuple(shapes.pop("cg", (2,)))) * 0.5
        from .sampling import sample_fields
        nf = node_family(self.node)
        dim = frame_kind(nf.frame).dim if nf.frame else 2
        p.update(sample_fields([f for f in self.fields if f not in p], rng, k, dim, shapes,
                               f"body family {self.name!r}"))
        return p

    def prepare(self, p):
        """p with data derived once per simulation from the parameters, for mass parts
        that are constant (a beam's factored consistent mass): extra entries of the
        family's params dict that `mass_part` uses instead of recomputing them at every
        evaluation. Computed from the current parameters at the start of `simulate`
        (traced, so it batches and differentiates), never stored in the model. Default:
        p unchanged."""
        return p

    def validate(self, p, xp=np):
        """Rules of parameters beyond finiteness (which the core checks):
        p {field: array (..., k, *field shape)} -> [(field, bad (..., k) bool,
        'must be ...')]; leading axes are batch axes. xp: numpy for concrete Params
        (`jaxmbs.core.validate.check_params`: Mechanism.replace, simulate, assemble, ... raise
        ValueError) or jax.numpy for traced ones (`jaxmbs.core.validate.params_status`: the PARAMS
        status flag of simulate)."""
        return []


class PointMassBody(BodyFamily):
    """What a particle body family (mass (k,) kg, no orientation) shares in every dimension:
    its validation and its inertial parameters (m,). Subclasses give the name, the node
    family, `mass_part`, `loads` and `inertia_data`."""

    fields = ("mass",)
    inertial_labels = ("m",)

    def validate(self, p, xp=np):
        return [("mass", ~(p["mass"] > 0), "must be > 0 (kg)")]

    def to_inertial(self, p):
        return p["mass"][:, None]

    def from_inertial(self, x):
        return {"mass": x[:, 0]}


PROFILE_FIELDS = ("coef", "amp", "omega", "phase")  # Params of a driven row's time profile


def _sample(fam, fields, rng, k):
    from .sampling import sample_fields
    dim = frame_kind(fam.frame).dim
    return sample_fields(fields, rng, k, dim, getattr(fam, "field_shapes", None),
                         f"family {fam.name!r}")


class ConstraintFamily:
    """r rows per instance between frames of kind `frame`.

    fields: Params fields per instance; driven: rows are g - f(t) with a time profile f
    (Params coef/amp/omega/phase); nonholonomic: rows exist only at the velocity level
    (g = 0, Gi/Gj the blocks of A(q) with A v = 0); extra: extra (massless) scalar
    coordinates per instance (evaluate then takes S, Sd, static and returns Gs too).
    evaluate(p, Xi, Xj, Vi, Vj) -> (g (k, r), Gi (k, r, wv), Gj (k, r, wv), quad (k, r)).
    """

    name: str = ""
    rows: int = 0
    frame: str = ""
    fields: tuple = ()
    driven: bool = False
    nonholonomic: bool = False
    extra: int = 0

    def evaluate(self, p, Xi, Xj, Vi, Vj, *extra):
        raise NotImplementedError

    def sample(self, rng, k):
        """Random valid Params of k instances, {field: (k, ...) array} (the time profile's
        fields too for a driven family): what the conformance suite evaluates. By default
        each field from `jaxmbs.core.sampling` by its name (or `field_shapes`)."""
        fields = self.fields + (PROFILE_FIELDS if self.driven else ())
        return _sample(self, fields, rng, k)

    def validate(self, p, xp=np):
        """Rules of parameters (see BodyFamily.validate); by default the field rules of
        `jaxmbs.core.validate.FIELD_RULES` (e.g. radius > 0)."""
        from .validate import field_rule_masks
        return field_rule_masks(p, self.fields, xp)


class ForceArgs(NamedTuple):
    """What a force family sees of its k instances (arrays stacked over instances).

    Xi, Xj, Vi, Vj (k, wq) / (k, wv): frames i and j (ground: the ground pattern);
    t: time (s); mj, Jj, cgj: inertial data of frame j for families with
    `needs_inertia` (mass (k,), inertia about the CG, CG in body coordinates; planar:
    Jj (k,), cgj (k, 2)); fns: static ((instance, fn), ...) user functions of the block;
    u: control inputs (n_controls,) or None; static: the block's static per-instance data.
    """

    Xi: Any
    Xj: Any
    Vi: Any
    Vj: Any
    t: Any
    mj: Any = None
    Jj: Any = None
    cgj: Any = None
    fns: tuple = ()
    u: Any = None
    static: tuple = ()


class ForceFamily:
    """Forces of k instances between frames of kind `frame`.

    fields: Params fields per instance; needs_inertia: ForceArgs gets frame j's inertial
    data; uses_controls: the family reads ForceArgs.u.
    evaluate(p, args) -> (Qi (k, wv), Qj (k, wv), V (k,) potential energy (J),
    P (k,) power (W) of the non-conservative part plus dV/dt at fixed q of a
    time-dependent potential, info: dict of (k,) diagnostics).
    """

    name: str = ""
    frame: str = ""
    fields: tuple = ()
    needs_inertia: bool = False
    uses_controls: bool = False

    def evaluate(self, p, a: ForceArgs):
        raise NotImplementedError

    def sample(self, rng, k):
        """Random valid Params of k instances (see ConstraintFamily.sample)."""
        return _sample(self, self.fields, rng, k)

    def validate(self, p, xp=np):
        """Rules of parameters (see BodyFamily.validate); by default the field rules of
        `jaxmbs.core.validate.FIELD_RULES` (stiffness, damping, friction >= 0, radii and slip
        velocity > 0, contact exponent >= 1)."""
        from .validate import field_rule_masks
        return field_rule_masks(p, self.fields, xp)


class _Registry(NamedTuple):
    frame: dict
    node: dict
    body: dict
    constraint: dict
    force: dict


REGISTRY = _Registry({}, {}, {}, {}, {})
_ORDER = {k: [] for k in _Registry._fields}


def register(family):
    """Register a family instance (FrameKind, NodeFamily, BodyFamily, ConstraintFamily or
    ForceFamily) under its `name`; returns it. Registration order is the order of nodes
    in q and of constraint rows. Re-registering an equal name replaces the entry."""
    for kind, cls in (("frame", FrameKind), ("node", NodeFamily), ("body", BodyFamily),
                      ("constraint", ConstraintFamily), ("force", ForceFamily)):
        if isinstance(family, cls):
            table = getattr(REGISTRY, kind)
            if not family.name:
                raise ValueError(f"{type(family).__name__}: a family needs a name")
            if family.name not in table:
                _ORDER[kind].append(family.name)
            table[family.name] = family
            return family
    raise TypeError(f"register: {family!r} is not a family")


def _get(kind, name):
    table = getattr(REGISTRY, kind)
    try:
        return table[name]
    except KeyError:
        raise ValueError(f"unknown {kind} family {name!r}; registered: {', '.join(table)}") from None


def frame_kind(name) -> FrameKind:
    return _get("frame", name)


def node_family(name) -> NodeFamily:
    return _get("node", name)


def body_family(name) -> BodyFamily:
    return _get("body", name)


def constraint_family(name) -> ConstraintFamily:
    return _get("constraint", name)


def force_family(name) -> ForceFamily:
    return _get("force", name)


def registered(kind) -> tuple:
    """Names of the registered families of a kind ('frame', 'node', 'body', 'constraint',
    'force'), in registration order."""
    return tuple(_ORDER[kind])


def order_key(kind):
    """Sort key: registration order of the families of a kind."""
    order = _ORDER[kind]
    return lambda name: order.index(name) if name in order else len(order)


def as_index(x):
    return np.asarray(x, dtype=np.int32)


FunctionFamily = Callable  # (documentation alias)


class ScalarNode(NodeFamily):
    """A massless scalar coordinate without a frame (e.g. a cam joint's curve
    parameter): nq = nv = 1, named by its node name."""

    name = "scalar"
    nq = nv = 1
    coord_names = vel_names = ("",)


register(ScalarNode())
