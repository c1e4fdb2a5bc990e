"""Dimension-free pieces of the model builders (`jaxmbs.Model`, `jaxmbs.SpatialModel`).

A builder collects nodes (bodies, particles), constraint instances per constraint family,
named joints, force instances per force family and user functions, validating each call
eagerly; `build()` turns them into a static `Mechanism` and a `Params` pytree with the
helpers here: node layout (q and v index spaces, frames), one block per constraint and
force family with its Params and named keys, user constraint rows.
"""
from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from . import families as F
from .mechanism import BodyBlock, FamilyBlock, ForceBlock, NodeBlock, UserFunction
from .shared import Aliases, Same

__all__ = ["BuilderBase", "recorded", "GROUND", "finite", "positive", "vector", "user_params",
           "Same"]

GROUND = "ground"


def _number(x, what):
    """float(x), or ValueError naming `what` unless x is a real number (bool and text
    refused)."""
    if isinstance(x, (bool, np.bool_, str, bytes)):
        raise ValueError(f"{what} must be a number, got {x!r}")
    try:
        return float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {x!r}") from None


def finite(x, what):
    """float(x), or ValueError naming `what` unless x is a finite real number (bool and
    text refused)."""
    v = _number(x, what)
    if not math.isfinite(v):
        raise ValueError(f"{what} must be finite, got {v!r}")
    return v


def positive(x, what):
    """float(x), or ValueError naming `what` unless x is a positive finite number (bool
    and text refused)."""
    v = _number(x, what)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{what} must be positive and finite, got {v!r}")
    return v


def control_channel(control, owner):
    """A control channel: None, or a non-negative int (index into the controls u); else
    ValueError naming `owner`."""
    if control is not None and (isinstance(control, bool) or not isinstance(control, int)
                                or control < 0):
        raise ValueError(f"{owner}: control must be a non-negative integer channel, got {control!r}")
    return control


def contact_law(owner, k, exponent, damping, restitution, impact_velocity, damping_model,
                friction, slip_velocity) -> dict:
    """The validated penalty-contact law of every contact force (planar and spatial):
    stiffness k, force exponent, damping chi (s/m; from a coefficient of restitution at an
    impact velocity when given, Lankarani-Nikravesh or Hunt-Crossley), Coulomb friction mu
    and the slip velocity that regularises it. ValueError naming `owner` and the item."""
    k = positive(k, f"{owner}: k")
    if damping_model not in ("lankarani-nikravesh", "hunt-crossley"):
        raise ValueError(f"{owner}: damping_model must be 'lankarani-nikravesh' or "
                         f"'hunt-crossley', got {damping_model!r}")
    n = finite(exponent, f"{owner}: exponent")
    if n < 1.0:
        raise ValueError(f"{owner}: exponent must be >= 1 (1.5 for Hertz, 1 for a linear "
                         f"penalty), got {n}")
    if restitution is not None:
        if damping is not None:
            raise ValueError(f"{owner}: give either damping (chi, s/m) or restitution with "
                             "impact_velocity, not both")
        e = finite(restitution, f"{owner}: restitution")
        if not 0.0 < e <= 1.0:
            raise ValueError(f"{owner}: restitution must be in (0, 1], got {e}")
        if impact_velocity is None:
            raise ValueError(f"{owner}: restitution needs impact_velocity (m/s, > 0), the "
                             "approach speed for which the damping is designed")
        vi = positive(impact_velocity, f"{owner}: impact_velocity")
        if damping_model == "lankarani-nikravesh":
            chi = 3.0 * (1.0 - e * e) / (4.0 * vi)
        elif damping_model == "hunt-crossley":
            chi = 3.0 * (1.0 - e) / (2.0 * vi)
        else:
            raise ValueError(f"{owner}: damping_model must be 'lankarani-nikravesh' or "
                             f"'hunt-crossley', got {damping_model!r}")
    else:
        chi = 0.0 if damping is None else finite(damping, f"{owner}: damping")
        if chi < 0:
            raise ValueError(f"{owner}: damping must be >= 0 s/m, got {chi}")
    mu = finite(friction, f"{owner}: friction")
    if mu < 0:
        raise ValueError(f"{owner}: friction coefficient must be >= 0, got {mu}")
    return dict(k=k, exponent=n, damping=chi, mu=mu,
                v_eps=positive(slip_velocity, f"{owner}: slip_velocity"))


def vector(x, n, what):
    """x as a finite float array of shape (n,), or ValueError naming `what` (bool and text
    refused)."""
    names = "(x, y)" if n == 2 else "(x, y, z)" if n == 3 else f"of {n} numbers"
    if isinstance(x, (bool, np.bool_, str, bytes)) or x is None:
        raise ValueError(f"{what}: expected a finite {n}-vector {names}, got {x!r}")
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected a finite {n}-vector {names}, got {x!r}") from None
    if a.shape != (n,) or not np.all(np.isfinite(a)):
        raise ValueError(f"{what}: expected a finite {n}-vector {names}, got {x!r}")
    return a


def unit(x, n, what):
    """`vector(x, n, what)` divided by its length; ValueError for a zero-length one."""
    a = vector(x, n, what)
    norm = np.linalg.norm(a)
    if norm < 1e-12:
        raise ValueError(f"{what}: zero-length direction {a}; give a nonzero vector")
    return a / norm


def user_params(params, what):
    """None, or the parameters of a user function as a finite real float array (ValueError
    naming `what` otherwise: bool, text, NaN, inf)."""
    if params is None:
        return None
    if isinstance(params, (bool, np.bool_, str, bytes)):
        raise ValueError(f"{what}: params must be an array of numbers, got {params!r}")
    try:
        a = np.asarray(params, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: params must be an array of numbers, got {params!r}") from None
    if np.asarray(params).dtype.kind == "b" or not np.all(np.isfinite(a)):
        raise ValueError(f"{what}: params must be finite real numbers, got {params!r}")
    return params


def recorded(method):
    """Record a successful public builder call (outermost only) so that the model can be
    written to and re-read from a JSON model file (see `jaxmbs.io`). A call that raises
    leaves the builder unchanged (names are taken only by successful calls)."""
    sig = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        self._depth += 1
        if self._depth == 1:
            snapshot = self._snapshot()
        try:
            out = method(self, *args, **kwargs)
        except BaseException:
            if self._depth == 1:
                self._restore(snapshot)
            raise
        finally:
            self._depth -= 1
        if self._depth == 0:
            bound = sig.bind(self, *args, **kwargs)
            call = {k: v for k, v in bound.arguments.items() if k != "self"}
            self._calls.append((method.__name__, call))
        return out

    return wrapper


def _copy_state(obj):
    """Deep enough copy of a builder's containers (lists / dicts / sets of plain values)."""
    if isinstance(obj, dict):
        return {k: _copy_state(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_copy_state(v) for v in obj]
    if isinstance(obj, set):
        return set(obj)
    return obj


class BuilderBase:
    """Names, call recording and the dimension-free builder methods (user constraints,
    velocity constraints, user forces) shared by the planar and spatial builders."""

    def _init_base(self):
        self._names = {GROUND}
        self._calls, self._depth = [], 0
        self._user_constraints, self._user_forces = [], []

    # all mutable builder state lives in attributes starting with '_' that hold lists,
    # dicts, sets or None/plain values; a failed call restores them (see `recorded`)
    def _snapshot(self):
        return {k: _copy_state(v) for k, v in self.__dict__.items()
                if k.startswith("_") and k not in ("_depth", "_calls")}

    def _restore(self, snap):
        self.__dict__.update(snap)

    def _new_name(self, name, what):
        if not isinstance(name, str) or not name:
            raise ValueError(f"{what} name must be a non-empty string, got {name!r}")
        if "." in name:
            raise ValueError(f"{what} name {name!r} must not contain '.'")
        if name in self._names:
            raise ValueError(f"duplicate name {name!r}: every body, particle, joint and force needs its own name")
        self._names.add(name)
        return name

    @recorded
    def add_constraint(self, name, fn: Callable, params=None) -> str:
        """User constraint Phi(q, t) = 0 (or fn(q, t, params) when params is given).

        fn: JAX function of the coordinates q (n_coords,) and t returning a (k,) array;
        Jacobian and gamma come from autodiff. params: optional array of parameters (a
        Params leaf under params.user[name]).
        """
        self._new_name(name, "constraint")
        if not callable(fn):
            raise ValueError(f"constraint {name!r}: fn must be a function Phi(q, t[, params])")
        user_params(params, f"constraint {name!r}")
        self._user_constraints.append(dict(name=name, fn=fn, params=params))
        return name

    @recorded
    def add_velocity_constraint(self, name, fn: Callable, params=None) -> str:
        """User nonholonomic (velocity-level) constraint A(q, t) v = b(q, t).

        fn(q, v, t) (or fn(q, v, t, params)): JAX function returning the (k,) residual rows
        A(q, t) v - b(q, t); it must be linear (affine) in v: A = d fn / d v and
        b = -fn(q, 0, t) come from autodiff, and gamma from a jvp. Checked at build time
        (second derivative in v must vanish at the initial state), else ValueError.
        Units: those of the rows (e.g. m/s). params: optional array (params.user[name]).
        Such rows fix no positions: assemble only corrects velocities for them.
        """
        self._new_name(name, "constraint")
        if not callable(fn):
            raise ValueError(f"velocity constraint {name!r}: fn must be a function "
                             "fn(q, v, t[, params]) -> rows affine in v")
        user_params(params, f"velocity constraint {name!r}")
        self._user_constraints.append(dict(name=name, fn=fn, params=params, velocity=True))
        return name

    @recorded
    def add_force(self, name, fn: Callable, params=None) -> str:
        """User generalised force Q(q, v, t, u) (or fn(q, v, t, u, params)) -> (n_vel,) array
        (N, N m; in velocity space: for spatial bodies the moment part is in body axes)."""
        self._new_name(name, "force")
        if not callable(fn):
            raise ValueError(f"force {name!r}: fn must be a function Q(q, v, t, u[, params])")
        user_params(params, f"force {name!r}")
        self._user_forces.append(dict(name=name, fn=fn, params=params))
        return name


    # ------------------------------------------------------------------ build
    # What a builder declares (class attributes) and provides (hooks) to the one build():
    RIGID_BODIES = ()  # body families of the rigid bodies and particles, in node order
    # {(joint kind, constraint family): key}: the driven row's value, named "<joint>.<key>",
    # of joints that are not drivers (a distance constraint's length, ...)
    VALUE_KEYS = {}

    def _node_specs(self) -> list:
        """Every node (dicts for `layout_nodes`), rigid bodies and particles first."""
        raise NotImplementedError

    def _has_bodies(self) -> bool:
        raise NotImplementedError

    def _extra_rows(self, nblocks, fidx, q0, v0, families, jparams, where, row, aliases=None):
        """Rows with extra (massless) coordinates or nodes of their own, appended after the
        joint families (aliases: `jaxmbs.core.shared.Aliases` of the build, for fields
        they share): returns (row, q0, v0)."""
        return row, q0, v0

    def _generated_constraints(self, nblocks) -> list:
        """User-constraint entries the builder makes itself (joint couplings)."""
        return []

    def _force_instances(self) -> dict:
        raise NotImplementedError

    def _extra_forces(self, fblocks, fparams, keys):
        """Force blocks the builder assembles itself (appended in place)."""

    def _n_controls(self) -> int:
        raise NotImplementedError

    def build(self):
        """Validate and return (mechanism, params, q0, v0) (a `jaxmbs.Built`)."""
        from .mechanism import Built, JointInfo, Mechanism, Params

        if not self._has_bodies():
            raise ValueError("the model has no bodies; add one with add_body, add_particle or add_beam")
        nblocks, bblocks, bparams, keys, fidx, q0, v0 = layout_nodes(self._node_specs(),
                                                                    self.RIGID_BODIES)
        keys.append(("gravity", ("gravity", None, None, None, None)))
        forces = self._force_instances()
        aliases = Aliases(self._inst, forces, nblocks, bblocks)
        families, jparams, where, row = constraint_blocks(self._inst, fidx, aliases=aliases)
        row, q0, v0 = self._extra_rows(nblocks, fidx, q0, v0, families, jparams, where, row,
                                       aliases=aliases)
        user_params_out = {}
        ucons, _, uwhere, nonholonomic, row = user_rows(
            self._user_constraints + self._generated_constraints(nblocks), q0, v0, row,
            user_params_out, keys)
        where.update(uwhere)
        for fam in families:
            if F.constraint_family(fam.kind).nonholonomic:
                nonholonomic += range(fam.row0, fam.row0 + fam.size * fam.rows_per)
        vcons, row = velocity_rows(self._user_constraints, q0, v0, row, user_params_out, keys,
                                   where, nonholonomic)
        joints = []
        for j in self._joints:
            rows = tuple(r for part in j["parts"] for r in where[part])
            joints.append(JointInfo(j["name"], j["kind"], fidx[j["bi"]], fidx[j["bj"]], rows,
                                    j["point_ref"], j["driver"]))
            keys += joint_keys(j, self.VALUE_KEYS, aliases, jparams)
        for uc in ucons:
            joints.append(JointInfo(uc.name, "constraint", 0, 0, where[("user", uc.name)]))
        for uc in vcons:
            joints.append(JointInfo(uc.name, "velocity_constraint", 0, 0, where[("user", uc.name)]))
        fblocks, fparams, fkeys = force_blocks(forces, fidx, aliases)
        keys += fkeys
        uforces = user_force_entries(self._user_forces, user_params_out, keys)
        self._extra_forces(fblocks, fparams, keys)
        mech = Mechanism(tuple(nblocks), tuple(bblocks), tuple(families), tuple(ucons),
                         tuple(joints), tuple(fblocks), tuple(uforces), self._n_controls(),
                         tuple(keys), velocity_constraints=tuple(vcons),
                         nonholonomic_rows=tuple(int(r) for r in nonholonomic))
        params = Params(bodies=bparams, gravity=jnp.asarray(self.gravity), joints=jparams,
                        forces=fparams, user=user_params_out)
        return Built(mech, params, jnp.asarray(q0), jnp.asarray(v0))


def joint_keys(j, value_keys, aliases=None, jparams=None) -> list:
    """The named parameter keys of one joint (the one rule of every builder): each field of
    each constraint part as "<joint>.<field>"; a field whose name an earlier part of the
    joint took as "<joint>.<family>.<field>" (and "<joint>.<family>_<n>.<field>", n = 2,
    3, ... for a family's further parts); a driver's profile as "<joint>.coef", ".amp",
    ".omega", ".phase"; and the driven value of a non-driver named by `value_keys`
    ({(joint kind, family): key}, e.g. a distance constraint's "<joint>.length"). A field
    that the part shares with another instance (`jaxmbs.core.shared.Same`) has no key of
    its own: the owner's key names it (its name stays taken, so that the other fields'
    keys are those of a joint without shared fields). Keys point at the field's row in its leaf
    (`Aliases.row`: the owned rows); jparams (the built Params of the joints): a field
    that is not in its family's Params dict has no key (the blocks a builder makes itself,
    whose shared fields `Aliases` does not see)."""
    out, used = [], set()
    for fam, k in j["parts"]:
        cf = F.constraint_family(fam)
        fields = list(cf.fields) + (["coef", "amp", "omega", "phase"] if cf.driven and j["driver"] else [])
        for field in fields:
            key, n = f"{j['name']}.{field}", 1
            if key in used:
                key = f"{j['name']}.{fam}.{field}"
            while key in used:
                n += 1
                key = f"{j['name']}.{fam}_{n}.{field}"
            used.add(key)  # (a shared field's name is taken too: the others keep theirs)
            if jparams is not None and field not in jparams.get(fam, {}):
                continue
            r = k if aliases is None or field in PROFILE_FIELDS else aliases.row("joints", fam, field, k)
            if r is None:
                continue
            out.append((key, ("joints", fam, field, r, None)))
        value = value_keys.get((j["kind"], fam))
        if cf.driven and not j["driver"] and value:
            out.append((f"{j['name']}.{value}", ("joints", fam, "coef", k, 0)))
    return out


# ------------------------------------------------------------------ build helpers
def layout_nodes(nodes, body_families=()):
    """Node layout: nodes is a list of dicts (name, node (node family), body (body family
    or None), q (nq,), v (nv,), params (dict field -> value)) in creation order.

    Nodes are grouped by node family, families with frames first in registration order,
    frame-less ones (scalars) last. Returns (node_blocks, body_blocks, bodies_params,
    body_keys, frame_index (name -> frame), q0, v0). `body_families`: body families that
    get a (possibly empty) Params entry even without instances.
    """
    order = F.order_key("node")
    kinds = sorted({n["node"] for n in nodes},
                   key=lambda k: (not F.node_family(k).frame, order(k)))
    blocks, bblocks, bparams, keys = [], [], {}, []
    frame_index = {GROUND: 0}
    q0, v0 = [], []
    qi = vi = 0
    frame = 1
    for kind in kinds:
        nf = F.node_family(kind)
        members = [n for n in nodes if n["node"] == kind]
        names = tuple(n["name"] for n in members)
        f0 = -1
        if nf.frame:
            f0 = frame
            for n in names:
                frame_index[n] = frame
                frame += 1
        blocks.append(NodeBlock(kind, names, qi, vi, f0))
        for n in members:
            q0.append(np.asarray(n["q"], float).reshape(nf.nq))
            v0.append(np.asarray(n["v"], float).reshape(nf.nv))
        qi += len(names) * nf.nq
        vi += len(names) * nf.nv
        bodies = {n["body"] for n in members if n.get("body")}
        if len(bodies) > 1:
            raise ValueError(f"nodes of family {kind!r} carry different body families {bodies}")
        if bodies:
            bf = F.body_family(bodies.pop())
            bblocks.append(BodyBlock(bf.name, len(blocks) - 1))
            bparams[bf.name] = {f: jnp.asarray(np.array([n["params"][f] for n in members], float))
                                for f in bf.fields}
            for i, n in enumerate(members):
                keys += [(f"{n['name']}.{f}", ("bodies", bf.name, f, i, None)) for f in bf.fields]
    for name in body_families:
        if name not in bparams:
            bf = F.body_family(name)
            nf = F.node_family(bf.node)
            shapes = getattr(bf, "field_shapes", {})
            bparams[name] = {f: jnp.zeros((0,) + tuple(shapes.get(f, ())), float) for f in bf.fields}
    q0 = np.concatenate(q0) if q0 else np.zeros(0)
    v0 = np.concatenate(v0) if v0 else np.zeros(0)
    return blocks, bblocks, bparams, keys, frame_index, q0, v0


PROFILE_FIELDS = F.PROFILE_FIELDS


def constraint_blocks(inst, frame_index, row=0, aliases=None):
    """One FamilyBlock per constraint family with instances, in registration order.

    inst: family -> list of instance dicts (fi, fj frame names, owner, family fields,
    profile for driven families; a field may be a `jaxmbs.core.shared.Same`, resolved by
    `aliases`). Returns (blocks, params, where, row) with where[(family, k)] the rows of
    instance k and row the next free row."""
    blocks, params, where = [], {}, {}
    for name in sorted((f for f in inst if inst[f]), key=F.order_key("constraint")):
        fam = F.constraint_family(name)
        if fam.extra:
            continue  # families with extra coordinates are built by their builder (cam)
        items = inst[name]
        if aliases is None:
            aliases = Aliases({}, {}, [], [])
        p = aliases.own_params("joints", name, items, fam.fields)
        if fam.driven:
            pr = [x["profile"] for x in items]
            p["coef"] = jnp.asarray(np.array([x.coef for x in pr], float))
            p["amp"] = jnp.asarray(np.array([x.amp for x in pr], float))
            p["omega"] = jnp.asarray(np.array([x.omega for x in pr], float))
            p["phase"] = jnp.asarray(np.array([x.phase for x in pr], float))
        params[name] = p
        ufn = tuple((k, x["profile"].fn) for k, x in enumerate(items)
                    if x.get("profile") is not None and x["profile"].fn is not None)
        blocks.append(FamilyBlock(name, tuple(frame_index[x["fi"]] for x in items),
                                  tuple(frame_index[x["fj"]] for x in items), row, fam.rows,
                                  tuple(x["owner"] for x in items), ufn,
                                  shared=aliases.shared("joints", name, items, fam.fields)))
        for k in range(len(items)):
            where[(name, k)] = tuple(range(row + k * fam.rows, row + (k + 1) * fam.rows))
        row += len(items) * fam.rows
    return blocks, params, where, row


def force_blocks(forces, frame_index, aliases=None):
    """One ForceBlock per force family with instances (registration order), its Params and
    keys '<name>.<field>'. forces: family -> list of dicts (name, fi, fj, fields, optional
    fn, optional static); a field may be a `jaxmbs.core.shared.Same` (no key of its own),
    resolved by `aliases`."""
    blocks, params, keys = [], {}, []
    aliases = aliases or Aliases({}, forces, [], [])
    for name in sorted((f for f in forces if forces[f]), key=F.order_key("force")):
        fam = F.force_family(name)
        items = forces[name]
        params[name] = aliases.own_params("forces", name, items, fam.fields)
        fns = tuple((k, x["fn"]) for k, x in enumerate(items) if x.get("fn") is not None)
        static = items[0]["static_block"](items) if "static_block" in items[0] else ()
        blocks.append(ForceBlock(name, tuple(frame_index[x["fi"]] for x in items),
                                 tuple(frame_index[x["fj"]] for x in items),
                                 tuple(x["name"] for x in items), fns, static,
                                 shared=aliases.shared("forces", name, items, fam.fields)))
        for k, x in enumerate(items):
            keys += [(f"{x['name']}.{f}", ("forces", name, f, aliases.row("forces", name, f, k), None))
                     for f in fam.fields if aliases.row("forces", name, f, k) is not None]
    return blocks, params, keys


def user_rows(user_constraints, q0, v0, row, params_out, keys):
    """UserFunction entries of user position and velocity constraints, checked at the
    initial state. Returns (position ones, velocity ones, where, nonholonomic rows, row)."""
    where, ucons, vcons, nonholonomic = {}, [], [], []
    for uc in user_constraints:
        if uc.get("velocity"):
            continue
        if uc["params"] is not None:
            params_out[uc["name"]] = jnp.asarray(uc["params"], float)
        args = (jnp.asarray(q0), jnp.asarray(0.0))
        args += (params_out[uc["name"]],) if uc["params"] is not None else ()
        try:
            out = np.asarray(uc["fn"](*args))
        except Exception as e:  # noqa: BLE001 - report the user's error with context
            raise ValueError(f"constraint {uc['name']!r}: calling fn(q, t{', params' if uc['params'] is not None else ''}) "
                             f"failed at the initial state: {e}") from e
        if out.ndim != 1 or out.size == 0:
            raise ValueError(f"constraint {uc['name']!r}: fn must return a 1-D array of rows, got shape {out.shape}")
        ucons.append(UserFunction(uc["name"], uc["fn"], uc["params"] is not None, row, out.size))
        where[("user", uc["name"])] = tuple(range(row, row + out.size))
        if uc["params"] is not None:
            keys.append((f"{uc['name']}.params", ("user", uc["name"], None, None, None)))
        row += out.size
    return ucons, vcons, where, nonholonomic, row


def velocity_rows(user_constraints, q0, v0, row, params_out, keys, where, nonholonomic):
    vcons = []
    for uc in user_constraints:
        if not uc.get("velocity"):
            continue
        if uc["params"] is not None:
            params_out[uc["name"]] = jnp.asarray(uc["params"], float)
            keys.append((f"{uc['name']}.params", ("user", uc["name"], None, None, None)))
        size = _check_velocity_fn(uc, q0, v0, params_out.get(uc["name"]))
        vcons.append(UserFunction(uc["name"], uc["fn"], uc["params"] is not None, row, size))
        where[("user", uc["name"])] = tuple(range(row, row + size))
        nonholonomic += range(row, row + size)
        row += size
    return vcons, row


def user_force_entries(user_forces, params_out, keys):
    out = []
    for uf in user_forces:
        if uf["params"] is not None:
            params_out[uf["name"]] = jnp.asarray(uf["params"], float)
            keys.append((f"{uf['name']}.params", ("user", uf["name"], None, None, None)))
        out.append(UserFunction(uf["name"], uf["fn"], uf["params"] is not None))
    return out


def _check_velocity_fn(uc, q0, v0, params):
    """Rows of a user velocity constraint; ValueError unless fn(q, v, t[, params]) is a
    1-D array affine in v at the initial state."""
    name = uc["name"]
    extra = (params,) if params is not None else ()
    f = lambda vv: jnp.atleast_1d(uc["fn"](jnp.asarray(q0), vv, jnp.asarray(0.0), *extra))
    try:
        out = np.asarray(uc["fn"](jnp.asarray(q0), jnp.asarray(v0), jnp.asarray(0.0), *extra))
        A = np.asarray(jax.jacfwd(f)(jnp.zeros_like(jnp.asarray(v0))))
        H = np.asarray(jax.jacfwd(jax.jacfwd(f))(jnp.asarray(v0)))
    except Exception as e:  # noqa: BLE001 - report the user's error with context
        raise ValueError(f"velocity constraint {name!r}: calling fn(q, v, t"
                         f"{', params' if params is not None else ''}) failed at the initial "
                         f"state: {e}") from e
    if out.ndim != 1 or out.size == 0:
        raise ValueError(f"velocity constraint {name!r}: fn must return a 1-D array of rows, "
                         f"got shape {out.shape}")
    # affine in v: zero second derivative, and f(v) = f(0) + A v at v0 and at a probe
    probe = np.random.default_rng(0).normal(size=np.shape(v0)) * (1.0 + np.max(np.abs(v0)))
    scale = 1.0 + np.max(np.abs(A))
    tol = max(1e-8, 100.0 * float(np.finfo(A.dtype).eps))  # float32 rounding allowed for
    bad = np.max(np.abs(H)) > tol * scale
    for vv in (np.asarray(v0, float), probe):
        lin = np.asarray(f(jnp.zeros_like(jnp.asarray(v0)))) + A @ vv
        bad |= np.max(np.abs(np.asarray(f(jnp.asarray(vv, A.dtype))) - lin)) > tol * scale * (1 + np.max(np.abs(vv)))
    if bad:
        raise ValueError(f"velocity constraint {name!r}: fn must be linear (affine) in v, "
                         "A(q, t) v - b(q, t); its second derivative in v is not zero at the "
                         "initial state. Write the rows as (matrix depending on q, t) @ v - b")
    return int(out.size)
