"""Mechanism (static topology) and Params (differentiable numbers).

A `Mechanism` is hashable and carries no arrays: counts, per-family index tables, row
offsets, names and user functions. Two mechanisms built with the same topology compare
equal, so jitted functions compiled for one serve the other. It is a pytree with no
leaves, so it can be passed straight to `jax.jit`-ed functions.

`Params` holds every physical number as an array leaf, grouped by family so that each
family is evaluated with one vectorised array expression.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ._tree import pytree_dataclass, static_class, static_field

__all__ = ["Mechanism", "Params", "State", "JointInfo", "FamilyBlock"]


class State(NamedTuple):
    """Mechanism state: time t (s), coordinates q (n,), velocities v (n,)."""

    t: Any
    q: Any
    v: Any


@pytree_dataclass
class Params:
    """Every physical number of a mechanism, SI units.

    mass (nb,) kg, inertia (nb,) kg m^2 about the CG, cg (nb, 2) m (CG in the body frame),
    particle_mass (np,) kg, gravity (2,) m/s^2, joints[family][field] (k, ...),
    forces[family][field] (k, ...), user[name]: parameters of user constraints/forces.
    """

    mass: Any
    inertia: Any
    cg: Any
    particle_mass: Any
    gravity: Any
    joints: dict
    forces: dict
    user: dict


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
    # families with extra (massless) coordinates (cam): per instance, the indices in q of
    # its extra coordinates, and the family's static data (the cam's curve codes)
    extra_cols: tuple = ()
    static: tuple = ()

    @property
    def size(self):
        return len(self.frames_i)


@static_class
class ForceBlock:
    """k instances of one force family (`jaxmbs.planar.forces.FORCE_FAMILIES[kind]`)
    between frames_i and frames_j, with their names and static user functions."""

    kind: str
    frames_i: tuple
    frames_j: tuple
    names: tuple
    fns: tuple = ()  # ((instance, fn), ...) static user functions (profiles, terrain)


@static_class
class LoadBlock:
    frames: tuple
    names: tuple
    control: tuple  # channel or -1
    local: tuple
    fns: tuple  # ((instance, fn), ...)


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
    """Static topology of a planar mechanism; see `jaxmbs.Model` to build one.

    Coordinates q (n,) are [x, y, theta] of every body (in order of creation) followed
    by [x, y] of every particle, then the extra (massless) coordinates `extra_names`
    (cam curve parameters). Constraint rows are grouped by family.
    """

    body_names: tuple
    particle_names: tuple
    families: tuple
    user_constraints: tuple
    joints: tuple
    springs: ForceBlock
    torsions: ForceBlock
    loads: LoadBlock
    user_forces: tuple
    n_controls: int
    param_keys: tuple  # ((key, (group, family, field, index, column)), ...)
    # velocity-level (nonholonomic) rows A(q, t) v = b(q, t): user velocity constraints
    # (UserFunction, fn(q, v, t[, params]) affine in v) and the indices of every
    # nonholonomic row (knife edges included); position-level code skips these rows
    velocity_constraints: tuple = ()
    nonholonomic_rows: tuple = ()
    # force families beyond springs and torsions (contact, rotating frame, ...): one
    # ForceBlock per family, evaluated generically through FORCE_FAMILIES
    force_blocks: tuple = ()
    # extra (massless) scalar coordinates appended to q after the particles, e.g. a cam
    # joint's curve parameters 'cam.s_i', 'cam.s_j'
    extra_names: tuple = ()

    # --- sizes ---------------------------------------------------------------
    @property
    def n_bodies(self) -> int:
        return len(self.body_names)

    @property
    def n_particles(self) -> int:
        return len(self.particle_names)

    @property
    def n_coords(self) -> int:
        """Number of coordinates n = 3 n_bodies + 2 n_particles + n_extra."""
        return 3 * self.n_bodies + 2 * self.n_particles + len(self.extra_names)

    @property
    def n_extra(self) -> int:
        """Number of extra (massless) coordinates at the end of q (cam curve parameters)."""
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

    @property
    def frame_names(self) -> tuple:
        return ("ground",) + self.body_names + self.particle_names

    def frame_cols(self) -> np.ndarray:
        """(n_frames, 3) indices of each frame's (x, y, theta) in q extended by one zero.

        The ground's entries and a particle's theta point at the extra zero at index n.
        """
        n, nb, npart = self.n_coords, self.n_bodies, self.n_particles
        cols = [(n, n, n)]
        cols += [(3 * b, 3 * b + 1, 3 * b + 2) for b in range(nb)]
        cols += [(3 * nb + 2 * p, 3 * nb + 2 * p + 1, n) for p in range(npart)]
        return np.asarray(cols, dtype=np.int32)

    def coordinate_names(self) -> tuple:
        """Names 'body.x', 'body.y', 'body.theta', 'particle.x', ... of q's entries."""
        out = [f"{b}.{c}" for b in self.body_names for c in ("x", "y", "theta")]
        out += [f"{p}.{c}" for p in self.particle_names for c in ("x", "y")]
        out += list(self.extra_names)
        return tuple(out)

    def constraint_names(self) -> tuple:
        """Name of the joint owning each constraint row, with the row's index within it."""
        names = [None] * self.n_constraints
        for j in self.joints:
            for k, r in enumerate(j.rows):
                names[r] = f"{j.name}[{k}]"
        return tuple(names)

    def coordinate_index(self, name: str) -> int:
        """Index in q of 'body.x' / 'body.y' / 'body.theta' / 'particle.x' / 'particle.y'."""
        names = self.coordinate_names()
        if name not in names:
            raise ValueError(f"unknown coordinate {name!r}; known: {', '.join(names)}")
        return names.index(name)

    def joint(self, name: str) -> JointInfo:
        for j in self.joints:
            if j.name == name:
                return j
        raise ValueError(f"unknown joint {name!r}; known: {', '.join(j.name for j in self.joints)}")

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
        """
        new = {g: params.__dict__[g] for g in ("mass", "inertia", "cg", "particle_mass", "gravity")}
        joints = {f: dict(d) for f, d in params.joints.items()}
        forces = {f: dict(d) for f, d in params.forces.items()}
        user = dict(params.user)
        for key, value in values.items():
            group, fam, field, index, col = self._where(key)
            arr = _leaf(params, group, fam, field)
            if group in ("joints", "forces"):
                src = joints if group == "joints" else forces
                arr = src[fam][field]
            elif group == "user":
                arr = user[fam]
            else:
                arr = new[group]
            value = jnp.asarray(value, dtype=arr.dtype)
            if index is None:
                arr = jnp.broadcast_to(value, arr.shape)
            elif col is None:
                arr = arr.at[index].set(value)
            else:
                arr = arr.at[index, col].set(value)
            if group in ("joints", "forces"):
                src[fam][field] = arr
            elif group == "user":
                user[fam] = arr
            else:
                new[group] = arr
        return Params(joints=joints, forces=forces, user=user, **new)


def _leaf(params, group, fam, field):
    if group in ("joints", "forces"):
        return getattr(params, group)[fam][field]
    if group == "user":
        return params.user[fam]
    return getattr(params, group)

