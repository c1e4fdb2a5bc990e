"""Validation of concrete inputs of the entry points.

Outside traced code bad input raises a ValueError that names the item and the fix
(DESIGN.md principle 7); inside traced code (jit, vmap, grad) nothing here runs and a
failure becomes a status flag of the result. Every function here returns at once when its
input holds a tracer.

* `check_params(mech, params)`: every Params leaf a finite real array (bool, complex and
  object arrays refused) and the families' own rules: body families' `validate(p)`
  (mass > 0, inertia > 0; a spatial inertia tensor symmetric, positive definite and
  obeying the triangle inequality), force and constraint families' field rules
  (`FIELD_RULES`: stiffness and damping >= 0, radii > 0, ...), a beam's section (its
  `rules`: E, I, A, rho > 0 on every element). The builders check the same rules
  (`check_rule`), and `params_status` the same in jax.numpy. The error names the
  parameter key ('crank.mass') and, for batched params, the batch member.
* `check_state(mech, q, v)`: shapes (n_coords,) / (n_vel,) (with a leading batch axis
  when asked), real numbers, finite.
* `admissible_coordinates(mech, q)`: the node families' own rules on the coordinates
  (`NodeFamily.coordinate_defects`: a spatial body's quaternion must not be zero; one
  that is not of unit norm is normalised, with a warning saying by how much).
"""
from __future__ import annotations

import jax
import numpy as np

from . import families as F

__all__ = ["is_traced", "check_params", "check_state", "check_value", "RULES", "FIELD_RULES",
           "check_rule", "rule_masks", "field_rule_masks", "params_status", "check_call",
           "admissible_coordinates"]

# The rules a parameter obeys beyond finiteness, by requirement: one table for the
# builders (`check_rule`, eagerly), Mechanism.replace and the checks of concrete Params
# (`check_params`, NumPy) and the PARAMS status flag of traced ones (`params_status`,
# jax.numpy); a family names each of its fields' requirement (`FIELD_RULES` by field name
# for constraint and force families, a body family's `rules`).
RULES = {
    "> 0": lambda a: a > 0,
    ">= 0": lambda a: a >= 0,
    ">= 1": lambda a: a >= 1,
}

# rules by field name for force and constraint families (the builders' rules)
FIELD_RULES = {
    "k": ">= 0",
    "c": ">= 0",
    "k_t": ">= 0",
    "k_r": ">= 0",
    "c_t": ">= 0",
    "c_r": ">= 0",
    "damping": ">= 0",
    "mu": ">= 0",
    "v_eps": "> 0",
    "exponent": ">= 1",
    "radius": "> 0",
    "radius_i": "> 0",
    "radius_j": "> 0",
}


def check_rule(x, rule, what, unit=""):
    """float(x) if x is a finite real number obeying `rule` (a key of `RULES`, e.g. '> 0'),
    else ValueError "<what> must be <rule> (<unit>), got <x>" (bool and text refused): the
    builders' side of a parameter's rule."""
    if isinstance(x, (bool, np.bool_, str, bytes)):
        raise ValueError(f"{what} must be a number, got {x!r}")
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be a number, got {x!r}") from None
    if not np.isfinite(v) or not RULES[rule](v):
        raise ValueError(f"{what} must be finite and {rule}{f' ({unit})' if unit else ''}, got {v!r}")
    return v


def rule_masks(p, rules, xp=np, where=None, note=""):
    """[(field, bad mask (..., k), 'must be <rule>')] of `rules` ({field: rule}) for a
    family's Params dict p (arrays with the instance axis before the field's own axes);
    where: optional bool (..., k) mask of the instances the rules apply to (e.g. the
    nodes that start a beam element), described by `note`; xp: numpy or jax.numpy."""
    out = []
    for f, rule in rules.items():
        if f not in p:
            continue
        with np.errstate(invalid="ignore"):
            bad = ~RULES[rule](p[f])
            if where is not None:
                bad = bad & where
        out.append((f, bad, f"must be {rule}{note}"))
    return out


def is_traced(*xs) -> bool:
    """True if any leaf of xs is a JAX tracer (inside jit / vmap / grad)."""
    return any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(xs))


def field_rule_masks(p, fields, xp=np):
    """[(field, bad mask (..., k), requirement)] of `FIELD_RULES` for a family's Params
    dict p (arrays with the instance axis before the field's own axes; scalar fields);
    xp: numpy or jax.numpy."""
    return rule_masks(p, {f: FIELD_RULES[f] for f in fields if f in FIELD_RULES}, xp)


def params_status(mech, params):
    """The PARAMS status flag (int32 ()) of one member's Params, traced or not: set if a
    leaf is not finite or a family rule fails (the rules of `check_params`, in jax.numpy).
    Used by simulate / simulate_batch / inverse_dynamics, where traced bad parameters
    would otherwise run silently (e.g. a negative inertia)."""
    import jax.numpy as jnp

    from .. import status as st

    params = jax.lax.stop_gradient(params)  # (a flag: no derivative through eigvalsh & co.)
    bad = jnp.zeros((), bool)
    for _, _, field, leaf in _leaves(params):
        leaf = jnp.asarray(leaf)
        if leaf.size and jnp.issubdtype(leaf.dtype, jnp.inexact):
            # limits (ctrlrange, forcerange) may be +-inf (unlimited), never NaN
            ok = ~jnp.isnan(leaf) if str(field).endswith("range") else jnp.isfinite(leaf)
            bad = bad | ~jnp.all(ok)
    for group, getter in (("bodies", F.body_family), ("joints", F.constraint_family),
                          ("forces", F.force_family)):
        for fam, d in getattr(params, group).items():
            try:
                family = getter(fam)
            except ValueError:
                continue
            p = {k: jnp.asarray(v) for k, v in d.items()}
            if not p or any(v.size == 0 for v in p.values()) or not hasattr(family, "validate"):
                continue
            for _, mask, _ in family.validate(p, jnp):
                bad = bad | jnp.any(mask)
    return jnp.where(bad, st.PARAMS, st.OK).astype(jnp.int32)


def _fmt(x):
    x = np.asarray(x)
    if x.size == 1:
        return f"{x.reshape(()).item()!r}"
    return np.array2string(x, precision=6, separator=", ")


class _Keys:
    """(group, family, field, instance) -> key name, from mech.param_keys."""

    def __init__(self, mech):
        self.map = {}
        for key, (group, fam, field, index, col) in mech.param_keys:
            if col is None:
                self.map.setdefault((group, fam, field, index), key)
            else:
                self.map.setdefault((group, fam, field, index), key)

    def name(self, group, fam, field, index):
        key = self.map.get((group, fam, field, index))
        if key is None:
            key = self.map.get((group, fam, field, None))
        if key is None:  # a field without a named key (e.g. a driver's profile part)
            for (g, f, _fl, i), k in self.map.items():
                if (g, f, i) == (group, fam, index):
                    return f"{k.rsplit('.', 1)[0]}.{field}" if "." in k else f"{k} ({field})"
            return f"params.{group}[{fam!r}][{field!r}][{index}]"
        return key


def _leaves(params):
    """[(group, family, field, leaf)] of a Params pytree."""
    out = []
    for group in ("bodies", "joints", "forces"):
        for fam, d in getattr(params, group).items():
            for field, leaf in d.items():
                out.append((group, fam, field, leaf))
    for name, leaf in params.user.items():
        out.append(("user", name, None, leaf))
    out.append(("gravity", None, None, params.gravity))
    return out


def check_value(key, value, where="params"):
    """A concrete value for a parameter: a real (not bool, complex, text) finite array.
    Returns it as a NumPy array; ValueError naming `key`."""
    if isinstance(value, (str, bytes)):
        raise ValueError(f"{where}: {key!r} must be a number or an array of numbers, got {value!r}")
    try:
        a = np.asarray(value)
    except Exception:  # noqa: BLE001 - report what was given
        raise ValueError(f"{where}: {key!r} must be a number or an array of numbers, "
                         f"got {value!r}") from None
    if a.dtype.kind == "b":
        raise ValueError(f"{where}: {key!r} must be a number, got the boolean {_fmt(a)} "
                         "(True is not 1)")
    if a.dtype.kind not in "iuf":
        raise ValueError(f"{where}: {key!r} must be real numbers, got {a.dtype} {_fmt(a) if a.size < 10 else ''}".rstrip())
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{where}: {key!r} must be finite, got {_fmt(a)}")
    return a


def check_params(mech, params, *, keys=None, where="params"):
    """ValueError unless every concrete Params leaf is finite real numbers and obeys its
    family's rules. keys: only report problems of these parameter keys (e.g. the keys
    just set by `Mechanism.replace`). Leaves holding tracers are skipped."""
    from .mechanism import Params

    if not isinstance(params, Params):
        raise ValueError(f"{where} must be the Params of Model.build() / SpatialModel.build() "
                         f"(or Mechanism.replace), got {type(params).__name__}")
    g = params.gravity
    if is_traced(g):
        bshape = None
    else:
        bshape = np.shape(g)[:-1]
    names = _Keys(mech)
    wanted = None if keys is None else set(keys)

    def report(group, fam, field, leaf, bad, why):
        """Raise for the first True of bad (..., k) if its key is wanted."""
        bad = np.asarray(bad)
        if not bad.any():
            return
        nb = len(bshape) if bshape is not None and np.shape(leaf)[:len(bshape)] == bshape else 0
        for idx in (zip(*np.nonzero(bad)) if bad.ndim else [()]):
            inst = idx[nb] if len(idx) > nb else None
            if group == "gravity":
                key = "gravity"
            elif group == "user":
                key = names.map.get(("user", fam, None, None), f"{fam}.params")
            else:
                key = names.name(group, fam, field, inst)
            if wanted is not None and key not in wanted:
                continue
            a = np.asarray(leaf)
            member = f" (batch member {idx[0] if nb == 1 else idx[:nb]})" if nb else ""
            val = a[tuple(idx[:nb + (1 if inst is not None else 0)])] if group not in ("gravity", "user") else a[tuple(idx[:nb])]
            raise ValueError(f"{where}: {key!r}{member} {why}, got {_fmt(val)}")

    traced_fams = set()
    for group, fam, field, leaf in _leaves(params):
        if is_traced(leaf):
            traced_fams.add((group, fam))
            continue
        a = np.asarray(leaf)
        if a.dtype.kind not in "iuf":
            key = "gravity" if group == "gravity" else names.name(group, fam, field, 0) if group != "user" else f"{fam}.params"
            if wanted is None or key in wanted:
                raise ValueError(f"{where}: {key!r} must be real numbers, got dtype {a.dtype}")
            continue
        nb = len(bshape) if bshape is not None and a.shape[:len(bshape)] == bshape else 0
        # limits (ctrlrange, forcerange) may be +-inf (unlimited), never NaN
        fin = ~np.isnan(a) if str(field).endswith("range") else np.isfinite(a)
        if group in ("gravity", "user"):
            bad = ~fin.reshape(a.shape[:nb] + (-1,)).all(-1) if a.ndim > nb else ~fin
        else:
            lead = nb + 1 if a.ndim > nb else nb
            bad = ~fin.reshape(a.shape[:lead] + (-1,)).all(-1) if a.size else np.zeros(a.shape[:lead], bool)
        report(group, fam, field, a, bad, "must be finite")

    # the families' own rules
    for group, getter in (("bodies", F.body_family), ("joints", F.constraint_family),
                          ("forces", F.force_family)):
        for fam, d in getattr(params, group).items():
            if (group, fam) in traced_fams:
                continue
            try:
                family = getter(fam)
            except ValueError:
                continue
            p = {k: np.asarray(v) for k, v in d.items()}
            if not p or any(v.size == 0 for v in p.values()):
                continue
            with np.errstate(invalid="ignore", over="ignore"):
                rules = family.validate(p, np) if hasattr(family, "validate") else []
            for field, bad, why in rules:
                report(group, fam, field, p[field], bad, why)


class _Names:
    """Coordinate or velocity names, computed when first needed (error messages)."""

    def __init__(self, mech, coords):
        self.mech, self.coords = mech, coords

    def _all(self):
        return self.mech.coordinate_names() if self.coords else self.mech.velocity_names()

    def __iter__(self):
        return iter(self._all())

    def __getitem__(self, i):
        return self._all()[i]


def check_state(mech, q=None, v=None, *, batch=False, names=("q", "v"), where="", finite=True):
    """ValueError unless q (n_coords,) and v (n_vel,) (or (batch, n) with batch=True) are
    real arrays of those shapes, finite unless finite=False. None skips an argument;
    traced arrays get the shape check only. Returns nothing."""
    pre = f"{where}: " if where else ""
    for x, n, name in ((q, mech.n_coords, names[0]), (v, mech.n_vel, names[1])):
        if x is None:
            continue
        kind = "coordinates" if name == names[0] else "velocity coordinates"
        cols = _Names(mech, name == names[0])
        want = f"(batch, {n})" if batch else f"({n},)"
        if isinstance(x, (str, bytes)) or x is True or x is False:
            raise ValueError(f"{pre}{name} must be an array of shape {want} ({kind}: "
                             f"{', '.join(cols)}), got {x!r}")
        if is_traced(x):
            shape, kindc = tuple(x.shape), np.dtype(x.dtype).kind
        else:
            try:
                a = np.asarray(x)
            except Exception:  # noqa: BLE001
                raise ValueError(f"{pre}{name} must be an array of shape {want}, got {x!r}") from None
            shape, kindc = a.shape, a.dtype.kind
        if kindc not in "iuf":
            raise ValueError(f"{pre}{name} must be real numbers (shape {want}), got dtype "
                             f"{np.dtype(x.dtype) if hasattr(x, 'dtype') else kindc}")
        ok = (len(shape) == 2 and shape[1] == n and shape[0] >= 1) if batch else shape == (n,)
        if not ok:
            hint = ""
            if not batch and len(shape) == 2 and shape[-1] == n:
                hint = "; for a batch of states use simulate_batch (or jax.vmap)"
            raise ValueError(f"{pre}{name} must have shape {want} for this mechanism ({kind}: "
                             f"{', '.join(cols)}), got shape {shape}{hint}")
        if finite and not is_traced(x):
            a = np.asarray(x)
            if not np.all(np.isfinite(a)):
                bad = np.argwhere(~np.isfinite(a))[0]
                col = cols[bad[-1]]
                member = f" (batch member {bad[0]})" if batch else ""
                raise ValueError(f"{pre}{name} has non-finite entries: {col} = "
                                 f"{float(a[tuple(bad)])!r}{member}")


def admissible_coordinates(mech, q, *, batch=False, name="q0", where="", tol=None):
    """Concrete q (n_coords,) (or (batch, n_coords) with batch=True) checked against the
    node families' rules (`NodeFamily.coordinate_defects`). ValueError naming the node
    (and the batch member) whose coordinates have no admissible ones near them (a zero
    quaternion; in a batch, members with non-finite entries are left to the run, which
    flags them NONFINITE). Coordinates off by more than tol (default 1000 eps of q's
    dtype) are normalised (`Mechanism.normalize`), with one warning naming the nodes and
    by how much (the largest first). Returns q (normalised where needed); traced q is
    returned as it is."""
    import warnings

    from . import families as fam_registry

    if is_traced(q) or not any(fam_registry.node_family(b.kind).admissible for b in mech.nodes):
        return q
    pre = f"{where}: " if where else ""
    a = np.asarray(q)
    dtype = a.dtype if a.dtype.kind == "f" else np.dtype(float)
    tol = 1000.0 * float(np.finfo(dtype).eps) if tol is None else tol
    coords = mech.coordinate_names()
    off_list = []
    for b in mech.nodes:
        nf = fam_registry.node_family(b.kind)
        if not nf.admissible:
            continue
        block = a[..., b.q0: b.q0 + b.size * nf.nq].reshape(a.shape[:-1] + (b.size, nf.nq))
        with np.errstate(invalid="ignore", over="ignore"):
            singular, off = nf.coordinate_defects(block)
        finite = np.all(np.isfinite(block), -1)
        bad = singular & finite if batch else singular
        if np.any(bad):
            idx = tuple(np.argwhere(bad)[0])
            k = idx[-1]
            cols = coords[b.q0 + k * nf.nq: b.q0 + (k + 1) * nf.nq]
            member = f" (batch member {idx[0]})" if batch else ""
            raise ValueError(f"{pre}{name}: {b.names[k]!r}{member} needs {nf.admissible}; its "
                             f"coordinates {', '.join(cols)} = {_fmt(block[idx])} have none near "
                             "them (zero or not finite)")
        for idx in np.argwhere(finite & ~singular & (off > tol)):
            idx = tuple(idx)
            off_list.append((float(off[idx]), b.names[idx[-1]], idx[0] if batch else None, nf))
    if not off_list:
        return q
    import jax.numpy as jnp

    off_list.sort(key=lambda x: -x[0])
    nodes = sorted({n for _, n, _, _ in off_list})
    worst = ", ".join(f"{n!r}{'' if m is None else f' (member {m})'}: {nf.defect} = {o:.3g}"
                      for o, n, m, nf in off_list[:3])
    more = f" and {len(off_list) - 3} more" if len(off_list) > 3 else ""
    warnings.warn(f"{pre}{name}: normalised the coordinates of {', '.join(map(repr, nodes))} "
                  f"({worst}{more}); each needs {off_list[0][3].admissible}", UserWarning,
                  stacklevel=3)
    qq = jnp.asarray(a, dtype)
    return jax.vmap(mech.normalize)(qq) if batch else mech.normalize(qq)


def check_mech(mech, where=""):
    """ValueError unless mech is a Mechanism."""
    from .mechanism import Mechanism

    if not isinstance(mech, Mechanism):
        pre = f"{where}: " if where else ""
        raise ValueError(f"{pre}mech must be the Mechanism of Model.build() / "
                         f"SpatialModel.build(), got {type(mech).__name__}")


def check_time(t, name="t", where=""):
    """A finite real scalar time (s), or ValueError; tracers pass."""
    pre = f"{where}: " if where else ""
    if is_traced(t):
        if np.ndim(t) != 0:
            raise ValueError(f"{pre}{name} must be a scalar time (s), got shape {np.shape(t)}")
        return
    if isinstance(t, (str, bytes, bool, np.bool_)):
        raise ValueError(f"{pre}{name} must be a finite time in s, got {t!r}")
    try:
        a = np.asarray(t)
    except Exception:  # noqa: BLE001
        raise ValueError(f"{pre}{name} must be a finite time in s, got {t!r}") from None
    if a.shape != () or a.dtype.kind not in "iuf" or not np.isfinite(a):
        raise ValueError(f"{pre}{name} must be a finite scalar time in s, got {t!r}")


def check_array(x, name, want, shape_ok, where="", values="finite real numbers"):
    """ValueError unless x is an array whose shape passes shape_ok(shape) and, when
    concrete, holds finite real numbers; want describes the shape in the messages (e.g.
    "an array of shape (3,) (control inputs)"); tracers get the shape check only."""
    pre = f"{where}: " if where else ""
    if isinstance(x, (str, bytes, bool, np.bool_)):
        raise ValueError(f"{pre}{name} must be {want}, got {x!r}")
    shape = tuple(np.shape(x))
    if not shape_ok(shape):
        raise ValueError(f"{pre}{name} must be {want}, got shape {shape}")
    if not is_traced(x):
        a = np.asarray(x)
        if a.dtype.kind not in "iuf" or not np.all(np.isfinite(a)):
            raise ValueError(f"{pre}{name} must be {values}, got {_fmt(a)}")


def check_controls(mech, u, where=""):
    """u: None or (n_controls,) finite real numbers; tracers get the shape check."""
    if u is not None:
        nu = mech.n_controls
        check_array(u, "u", f"None or an array of shape ({nu},) (this mechanism's control "
                    "inputs)", lambda s: s == (nu,), where)


def check_call(mech, params, where, *, q=None, v=None, t=None, u=None, names=("q", "v"),
               params_check=True, require=("q",)):
    """The common checks of an analysis entry point: mech a Mechanism, concrete params
    valid (`check_params`), q / v of the right shapes and finite, t a finite scalar, u of
    shape (n_controls,); the arguments named in `require` ('q', 'v') must be given."""
    check_mech(mech, where)
    for arg, x, name, n in (("q", q, names[0], mech.n_coords), ("v", v, names[1], mech.n_vel)):
        if arg in require and x is None:
            raise ValueError(f"{where}: {name} must be an array of shape ({n},), got None")
    if params_check:
        check_params(mech, params, where=f"{where}: params")
    check_state(mech, q, v, names=names, where=where)
    if t is not None:
        check_time(t, "t", where)
    check_controls(mech, u, where)
