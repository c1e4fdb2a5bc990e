"""Mechanism (static topology) and Params (differentiable numbers).

A `Mechanism` is hashable and carries no arrays: node blocks (which coordinates q and
velocity coordinates v belong to which family), body blocks, per-family constraint and
force blocks with their frame index tables and row offsets, names and user functions. Two
mechanisms built with the same topology compare equal, so jitted functions compiled for
one serve the other. It is a pytree with no leaves, so it can be passed straight to
`jax.jit`-ed functions.

q (n_coords,) and v (n_vel,) may have different lengths (a spatial body has 7 position
coordinates, position and unit quaternion, and 6 velocity coordinates); the constraint
Jacobian `jac` is taken with respect to v (m, n_vel), and M is (n_vel, n_vel).

`Params` holds every physical number as an array leaf, grouped by family (bodies, joints,
forces, user), so that each family is evaluated with one vectorised array expression.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from . import families as fam_registry
from ._tree import pytree_dataclass, static_class

__all__ = ["Mechanism", "Params", "Built", "JointInfo", "FamilyBlock", "ForceBlock",
           "NodeBlock", "BodyBlock", "UserFunction"]


class Built(NamedTuple):
    """Result of `Model.build()`: unpack as `mech, params, q0, v0 = model.build()`."""

    mechanism: Mechanism
    params: Params
    q0: object
    v0: object



@pytree_dataclass
class Params:
    """Every physical number of a mechanism, SI units.

    bodies[family][field] (k, ...): body data per body family (e.g. planar bodies: mass
    (k,) kg, inertia (k,) kg m^2 about the CG, cg (k, 2) m; spatial bodies: inertia
    (k, 3, 3)); gravity (d,) m/s^2; joints[family][field] (k, ...);
    forces[family][field] (k, ...); user[name]: parameters of user constraints/forces.
    By name: `Mechanism.get(params, "crank.mass")`, `Mechanism.replace(params, {...})`.
    """

    bodies: dict
    gravity: Any
    joints: dict
    forces: dict
    user: dict

    def replace(self, **kw):
        """New Params with some of the fields bodies, gravity, joints, forces, user replaced."""
        fields = {"bodies": self.bodies, "gravity": self.gravity, "joints": self.joints,
                  "forces": self.forces, "user": self.user}
        for k, v in kw.items():
            if k not in fields:
                raise TypeError(f"Params.replace: unknown field {k!r}; fields: {', '.join(fields)}")
            fields[k] = v
        return Params(**fields)

    def with_body_fields(self, family, **values):
        """New Params with body family `family`'s fields replaced, each by an array of one
        entry per body of the family (e.g. with_body_fields("planar_rigid", mass=m) with
        m (n_bodies,) kg). For single bodies by name, use `Mechanism.replace`."""
        bodies = {f: dict(d) for f, d in self.bodies.items()}
        if family not in bodies:
            raise ValueError(f"Params.with_body_fields: no body family {family!r} here; "
                             f"families: {', '.join(bodies)}")
        unknown = set(values) - set(bodies[family])
        if unknown:
            raise ValueError(f"Params.with_body_fields: {family!r} has no field "
                             f"{', '.join(sorted(unknown))}; fields: {', '.join(bodies[family])}")
        bodies[family].update(values)
        return self.replace(bodies=bodies)


@static_class
class NodeBlock:
    """k nodes of one node family, contiguous in q (from q0) and in v (from v0); frame0:
    frame index of the first node (-1 for frame-less nodes, e.g. cam curve parameters)."""

    kind: str
    names: tuple
    q0: int
    v0: int
    frame0: int = -1

    @property
    def size(self):
        return len(self.names)


@static_class
class BodyBlock:
    """The bodies of one body family, one per node of `mechanism.nodes[node]`."""

    kind: str
    node: int


@static_class
class FamilyBlock:
    """k instances of one constraint family: frames, first row, owning joint names."""

    kind: str
    frames_i: tuple
    frames_j: tuple
    row0: int
    rows_per: int
    owners: tuple
    user_profiles: tuple = ()  # ((instance, fn), ...)
    # families with extra (massless) coordinates (cam): per instance, the indices in v
    # (= in q: extra coordinates are scalars) of its extra coordinates, and the family's
    # static data (the cam's curve codes)
    extra_cols: tuple = ()
    static: tuple = ()
    # fields whose values some instances share with another family's instance (one
    # Params leaf per physical value): ((field, sources, index), ...), see
    # `jaxmbs.core.shared.family_params`
    shared: tuple = ()

    @property
    def size(self):
        return len(self.frames_i)


@static_class
class ForceBlock:
    """k instances of one force family between frames_i and frames_j, with their names,
    static user functions ((instance, fn), ...) and static per-instance data."""

    kind: str
    frames_i: tuple
    frames_j: tuple
    names: tuple
    fns: tuple = ()
    static: tuple = ()
    shared: tuple = ()  # (as FamilyBlock.shared)

    @property
    def frames(self):
        """frames_j (the frame a load acts on)."""
        return self.frames_j


@static_class
class UserFunction:
    name: str
    fn: Callable
    with_params: bool
    row0: int = 0
    rows: int = 0


@static_class
class JointInfo:
    """A named joint or driver: kind, its two frames, its constraint rows, and where its
    attachment point on frame j lives in Params (family, instance) for reporting."""

    name: str
    kind: str
    frame_i: int
    frame_j: int
    rows: tuple
    point_ref: tuple = ()  # (family, instance) holding point_j, or ()
    driver: bool = False


@static_class
class Mechanism:
    """Static topology of a mechanism; see `jaxmbs.Model` (planar) and
    `jaxmbs.SpatialModel` (3D) to build one.

    Coordinates q (n_coords,) and velocities v (n_vel,) are the node blocks' entries in
    order (`coordinate_names()`, `velocity_names()`); for planar mechanisms, [x, y, theta]
    of every body followed by [x, y] of every particle, then the extra (massless)
    coordinates (cam curve parameters), and v has the same layout. Frames are the ground
    (frame 0) and every node that has one. Constraint rows are grouped by family.
    """

    nodes: tuple
    bodies: tuple
    families: tuple
    user_constraints: tuple
    joints: tuple
    force_blocks: tuple
    user_forces: tuple
    n_controls: int
    param_keys: tuple  # ((key, (group, family, field, index, column)), ...)
    # velocity-level (nonholonomic) rows A(q, t) v = b(q, t): user velocity constraints
    # (UserFunction, fn(q, v, t[, params]) affine in v) and the indices of every
    # nonholonomic row (knife edges included); position-level code skips these rows
    velocity_constraints: tuple = ()
    nonholonomic_rows: tuple = ()

    # --- sizes ---------------------------------------------------------------
    @property
    def n_coords(self) -> int:
        """Number of coordinates (length of q)."""
        return sum(b.size * fam_registry.node_family(b.kind).nq for b in self.nodes)

    @property
    def n_vel(self) -> int:
        """Number of velocity coordinates (length of v; equals n_coords when every node's
        velocities are the derivatives of its coordinates)."""
        return sum(b.size * fam_registry.node_family(b.kind).nv for b in self.nodes)

    @property
    def identity_kinematics(self) -> bool:
        """True when qdot = v and q (+) dv = q + dv for every node (planar mechanisms)."""
        return all(fam_registry.node_family(b.kind).identity for b in self.nodes)

    def _names(self, pred):
        return tuple(n for b in self.nodes if pred(fam_registry.node_family(b.kind)) for n in b.names)

    @property
    def body_names(self) -> tuple:
        """Names of the rigid bodies (nodes with orientation), in order."""
        return self._names(lambda f: f.rigid)

    @property
    def particle_names(self) -> tuple:
        """Names of the particles (nodes with a frame but no orientation), in order."""
        return self._names(lambda f: bool(f.frame) and not f.rigid)

    @property
    def extra_names(self) -> tuple:
        """Names of the extra (massless, frame-less) coordinates, e.g. 'cam.s_i'."""
        return self._names(lambda f: not f.frame)

    @property
    def n_bodies(self) -> int:
        return len(self.body_names)

    @property
    def n_particles(self) -> int:
        return len(self.particle_names)

    @property
    def n_extra(self) -> int:
        """Number of extra (massless) coordinates (cam curve parameters)."""
        return len(self.extra_names)

    @property
    def n_constraints(self) -> int:
        """Number of constraint rows m (joints, drivers and user constraints)."""
        m = sum(f.size * f.rows_per for f in self.families)
        m += sum(u.rows for u in self.velocity_constraints)
        return m + sum(u.rows for u in self.user_constraints)

    @property
    def holonomic_rows(self) -> np.ndarray:
        """Indices (int array) of the position-level rows: all rows except
        `nonholonomic_rows`, whose Phi is identically 0 and which exist only as
        velocity-level rows A(q, t) v = b(q, t)."""
        return np.setdiff1d(np.arange(self.n_constraints), np.asarray(self.nonholonomic_rows, int))

    # --- frames --------------------------------------------------------------
    @property
    def frame_names(self) -> tuple:
        return ("ground",) + tuple(n for b in self.nodes if b.frame0 >= 0 for n in b.names)

    def frame_kinds(self) -> tuple:
        """FrameKind name of every frame ('' for the ground, which fits every kind)."""
        return _frame_tables(self)[0]

    def frame_qcols(self, kind: str) -> np.ndarray:
        """(n_frames, wq) indices of each frame's coordinates X in q extended by (0, 1)
        (index n_coords holds 0, n_coords + 1 holds 1): the ground and missing entries
        (a particle's orientation) point at the kind's ground pattern."""
        return _frame_tables(self)[1][kind]

    def frame_vcols(self, kind: str) -> np.ndarray:
        """(n_frames, wv) indices of each frame's velocities V in v extended by one 0
        (index n_vel)."""
        return _frame_tables(self)[2][kind]

    def frame_kind(self) -> str:
        """The one frame kind of this mechanism's frames ('' if it has none)."""
        kinds = {k for k in self.frame_kinds() if k}
        if len(kinds) > 1:
            raise ValueError(f"mechanism mixes frame kinds {sorted(kinds)}")
        return kinds.pop() if kinds else ""

    # --- kinematic maps ------------------------------------------------------
    def _map_nodes(self, fn, q, v=None):
        """Concatenate fn(node family, q block (k, nq)[, v block (k, nv)]) over the node
        blocks in order (each returning (k, nq))."""
        parts = []
        for b in self.nodes:
            nf = fam_registry.node_family(b.kind)
            qq = q[b.q0: b.q0 + b.size * nf.nq].reshape(b.size, nf.nq)
            if v is None:
                out = fn(nf, qq)
            else:
                out = fn(nf, qq, v[b.v0: b.v0 + b.size * nf.nv].reshape(b.size, nf.nv))
            parts.append(out.reshape(-1))
        return jnp.concatenate(parts) if parts else q

    def qdot(self, q, v):
        """qdot = T(q) v (n_coords,): the time derivative of the coordinates."""
        if self.identity_kinematics:
            return v
        return self._map_nodes(lambda nf, qq, vv: nf.qdot(qq, vv), q, v)

    def retract(self, q, dv):
        """q (+) dv: the coordinates moved by the velocity-space increment dv (n_vel,)
        (q + dv for planar nodes, the quaternion exponential map for spatial bodies)."""
        if self.identity_kinematics:
            return q + dv
        return self._map_nodes(lambda nf, qq, dd: nf.retract(qq, dd), q, dv)

    def normalize(self, q):
        """The admissible coordinates nearest q (unit quaternions); identity for planar."""
        if self.identity_kinematics:
            return q
        return self._map_nodes(lambda nf, qq: nf.normalize(qq), q)

    def dq_dv(self, q):
        """(n_coords, n_vel) Jacobian of retract(q, dv) with respect to dv at dv = 0."""
        n, nv = self.n_coords, self.n_vel
        if self.identity_kinematics:
            return jnp.eye(n, nv, dtype=q.dtype)
        out = jnp.zeros((n, nv), q.dtype)
        for b in self.nodes:
            nf = fam_registry.node_family(b.kind)
            blocks = nf.dq_dv(q[b.q0: b.q0 + b.size * nf.nq].reshape(b.size, nf.nq))
            for k in range(b.size):
                out = out.at[b.q0 + k * nf.nq: b.q0 + (k + 1) * nf.nq,
                             b.v0 + k * nf.nv: b.v0 + (k + 1) * nf.nv].set(blocks[k])
        return out

    # --- names -----------------------------------------------------------------
    def coordinate_names(self) -> tuple:
        """Names of q's entries: 'body.x', 'body.y', 'body.theta', 'particle.x', ... for
        planar nodes; 'body.x', ..., 'body.q0' .. 'body.q3' (quaternion) for spatial ones."""
        out = []
        for b in self.nodes:
            nf = fam_registry.node_family(b.kind)
            for n in b.names:
                out += [f"{n}.{c}" if c else n for c in nf.coord_names]
        return tuple(out)

    def velocity_names(self) -> tuple:
        """Names of v's entries (the coordinate names where v = qdot; 'body.wx' .. for the
        angular velocity of spatial bodies, body axes)."""
        out = []
        for b in self.nodes:
            nf = fam_registry.node_family(b.kind)
            for n in b.names:
                out += [f"{n}.{c}" if c else n for c in nf.vel_names]
        return tuple(out)

    def constraint_names(self) -> tuple:
        """Name of the joint owning each constraint row, with the row's index within it."""
        names = [None] * self.n_constraints
        for j in self.joints:
            for k, r in enumerate(j.rows):
                names[r] = f"{j.name}[{k}]"
        return tuple(names)

    def coordinate_index(self, name: str) -> int:
        """Index in q of a coordinate name (see `coordinate_names`)."""
        names = self.coordinate_names()
        if name not in names:
            raise ValueError(f"unknown coordinate {name!r}; known: {', '.join(names)}")
        return names.index(name)

    def velocity_index(self, name: str) -> int:
        """Index in v of a velocity name (see `velocity_names`); a coordinate name is
        accepted where the coordinate has its own velocity (planar nodes, positions)."""
        names = self.velocity_names()
        if name in names:
            return names.index(name)
        raise ValueError(f"unknown velocity coordinate {name!r}; known: {', '.join(names)}")

    def joint(self, name: str) -> JointInfo:
        for j in self.joints:
            if j.name == name:
                return j
        raise ValueError(f"unknown joint {name!r}; known: {', '.join(j.name for j in self.joints)}")

    def force_block(self, kind: str):
        """The ForceBlock of a force family (an empty block if the mechanism has none)."""
        for b in self.force_blocks:
            if b.kind == kind:
                return b
        return ForceBlock(kind, (), (), ())

    # --- named parameter access ----------------------------------------------
    def param_names(self) -> tuple:
        """All keys accepted by `get` and `replace`, e.g. 'crank.mass', 'rod_pin.point_j'."""
        return tuple(k for k, _ in self.param_keys)

    def _where(self, key):
        for k, w in self.param_keys:
            if k == key:
                return w
        raise ValueError(
            f"unknown parameter {key!r}; known parameters: {', '.join(self.param_names())}"
        )

    def get(self, params: Params, key: str):
        """Value of the named parameter (e.g. 'crank.mass', 'spring.k', 'gravity')."""
        group, fam, field, index, col = self._where(key)
        arr = _leaf(params, group, fam, field)
        if index is None:
            return arr
        arr = arr[index]
        return arr if col is None else arr[col]

    def replace(self, params: Params, values: dict) -> Params:
        """New Params with the named parameters set (pure: works under jit/vmap/grad).

        Example: mech.replace(params, {"crank.mass": 0.4, "crank_pin.point_i": [0.16, 0]}).
        A key is one physical value, stored in one leaf: every row and force that uses it
        reads that leaf (`jaxmbs.core.shared`), e.g. a rolling disc's radius sets its
        contact and its no-slip rows.

        Concrete values are checked (ValueError naming the key): real finite numbers (not
        bool or text) of the parameter's shape, obeying the family's rules (a mass > 0, a
        spatial inertia tensor positive definite, ...; `jaxmbs.core.validate.check_params`).
        Traced values (under jit / vmap / grad) are not checked: a bad one shows as a
        status flag of the simulation. For one value per batch member, vmap this call:
        jax.vmap(lambda m: mech.replace(params, {"crank.mass": m}))(masses).
        """
        from . import validate as checks

        where = "mech.replace(params, ...)"
        if not isinstance(values, dict):
            raise ValueError(f"{where}: values must be a dict {{key: value}}, got "
                             f"{type(values).__name__}")
        if not isinstance(params, Params):
            raise ValueError(f"{where}: params must be the Params of build(), got "
                             f"{type(params).__name__}")
        groups = {g: {f: dict(d) for f, d in getattr(params, g).items()}
                  for g in ("bodies", "joints", "forces")}
        user = dict(params.user)
        gravity = params.gravity
        concrete = True
        for key, value in values.items():
            if not isinstance(key, str):
                raise ValueError(f"{where}: keys must be parameter names (str), got {key!r}")
            group, fam, field, index, col = self._where(key)
            if group in groups:
                arr = groups[group][fam][field]
            elif group == "user":
                arr = user[fam]
            else:
                arr = gravity
            if checks.is_traced(value):
                concrete = False
            else:
                checks.check_value(key, value, where)
            value = jnp.asarray(value, dtype=arr.dtype)
            slot = tuple(arr.shape) if index is None else tuple(np.shape(np.empty(arr.shape)[index])) \
                if col is None else tuple(np.shape(np.empty(arr.shape)[index, col]))
            try:
                ok = np.broadcast_shapes(tuple(value.shape), slot) == slot
            except ValueError:
                ok = False
            if not ok:
                raise ValueError(f"{where}: {key!r} must have shape {slot}, got {tuple(value.shape)}; "
                                 "for one value per batch member use jax.vmap(lambda x: "
                                 f"mech.replace(params, {{{key!r}: x}}))(values)")
            if index is None:
                arr = jnp.broadcast_to(value, arr.shape)
            elif col is None:
                arr = arr.at[index].set(value)
            else:
                arr = arr.at[index, col].set(value)
            if group in groups:
                groups[group][fam][field] = arr
            elif group == "user":
                user[fam] = arr
            else:
                gravity = arr
        out = Params(bodies=groups["bodies"], gravity=gravity, joints=groups["joints"],
                     forces=groups["forces"], user=user)
        if concrete and values and not checks.is_traced(out):
            checks.check_params(self, out, keys=tuple(values), where=where)
        return out


def _leaf(params, group, fam, field):
    if group in ("bodies", "joints", "forces"):
        return getattr(params, group)[fam][field]
    if group == "user":
        return params.user[fam]
    return params.gravity


@functools.lru_cache(maxsize=256)
def _frame_tables(mech):
    """(kinds per frame, {kind: qcols (n_frames, wq)}, {kind: vcols (n_frames, wv)}).

    A frame kind with `views` (e.g. 'planar_beam') presents frames of other kinds: entry e
    of frame f is entry views[kind of f][e] = (offset, source entry) of frame f + offset
    in that kind's table (offset 1: the next node of the same node block, an element's
    second node), or the kind's ground pattern where the view gives None or frame
    f + offset is not in f's block. Velocity entries follow `vviews` where the kind
    gives them (its sources' wq != wv, e.g. a spatial rigid frame), else `views`."""
    nq, nv = mech.n_coords, mech.n_vel
    kinds = [""]
    qsrc, blocks = [None], [-1]  # per frame: (node family, q start, v start); node block
    for ib, b in enumerate(mech.nodes):
        nf = fam_registry.node_family(b.kind)
        if b.frame0 < 0:
            continue
        for k in range(b.size):
            kinds.append(nf.frame)
            qsrc.append((nf, b.q0 + k * nf.nq, b.v0 + k * nf.nv))
            blocks.append(ib)
    # pass 1: every kind's entries of the frames that present it directly; pass 2: the
    # view entries, read from the sources' direct entries (so two kinds may view each
    # other: the planar kind views an FFR body's reference frame, 'ffr2d' views rigid ones)
    names = fam_registry.registered("frame")
    direct = {}
    for kname in names:
        fk = fam_registry.frame_kind(kname)
        gq = [nq if float(x) == 0.0 else nq + 1 for x in fk.ground_q]
        Q = np.empty((len(kinds), fk.wq), np.int32)
        V = np.empty((len(kinds), fk.wv), np.int32)
        for f, (kind, src) in enumerate(zip(kinds, qsrc)):
            Q[f], V[f] = gq, nv
            if src is not None and kind == kname:
                nf, q0, v0 = src
                Q[f] = [q0 + e if e >= 0 else gq[i] for i, e in enumerate(nf.frame_q)]
                V[f] = [v0 + e if e >= 0 else nv for e in nf.frame_v]
        direct[kname] = (Q, V)
    qtab, vtab = {}, {}
    for kname in names:
        fk = fam_registry.frame_kind(kname)
        Q, V = (a.copy() for a in direct[kname])
        for f, (kind, src) in enumerate(zip(kinds, qsrc)):
            if src is None or kind == kname or kind not in fk.views:
                continue
            for i, out, specs in ((0, Q, fk.views[kind]), (1, V, fk.vviews.get(kind, fk.views[kind]))):
                for e, spec in enumerate(specs):
                    g = f + spec[0] if spec is not None else -1
                    if 0 <= g < len(kinds) and blocks[g] == blocks[f]:
                        out[f, e] = direct[kind][i][g, spec[1]]
        qtab[kname], vtab[kname] = Q, V
    return tuple(kinds), qtab, vtab
