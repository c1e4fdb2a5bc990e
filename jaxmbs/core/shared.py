"""One physical value, one Params leaf: fields that a family instance shares with another.

A builder method often makes several constraint parts (families) from one physical value:
a spatial rolling disc's contact row and no-slip rows both need the disc's radius, a
revolute's two parallel-axis rows the same axis of body j, a beam's material-point joint
the length of the element it sits on. The value is stored once, where it is first made
(its owner: a field of a constraint part, a force instance or a body); every other
instance names it with `Same` instead of holding a copy. At build time `Aliases` keeps
the owned rows only in Params (so `Mechanism.get` / `replace` and gradients see one
leaf and one key) and gives each block a static table (`FamilyBlock.shared`,
`ForceBlock.shared`) from which `family_params` gathers every instance's values when the
rows or forces are evaluated.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from . import families as F

__all__ = ["Same", "Aliases", "family_params"]


class Same(NamedTuple):
    """A field value that is another instance's field (the one Params leaf of that value).

    group: 'joints' (ref: a constraint part (family, instance) of the builder), 'forces'
    (ref: a force instance (family, instance)) or 'bodies' (ref: a node name; the field
    of its body family, e.g. a beam element's 'length'); field: the owner's field name."""

    group: str
    ref: Any
    field: str


def _fields(group, fam):
    if group == "joints":
        return F.constraint_family(fam).fields
    return F.force_family(fam).fields


class Aliases:
    """The owned rows of every constraint and force family field, and the resolution of
    `Same` values into (group, family, field, row) of the leaf that holds them.

    inst / forces: {family: [instance dicts]} of the builder (constraint parts, forces);
    nblocks / bblocks: the node and body blocks of `layout_nodes`."""

    def __init__(self, inst, forces, nblocks, bblocks):
        self.tables = {"joints": inst, "forces": forces}
        self.own, self.size = {}, {}
        for group, table in self.tables.items():
            for fam, items in table.items():
                if not items or (group == "joints" and F.constraint_family(fam).extra):
                    continue
                for field in _fields(group, fam):
                    rows = [k for k, x in enumerate(items) if not isinstance(x.get(field), Same)]
                    self.own[(group, fam, field)] = {k: r for r, k in enumerate(rows)}
                    self.size[(group, fam, field)] = len(rows)
        self.body = {}
        for bb in bblocks:
            nb = nblocks[bb.node]
            for r, name in enumerate(nb.names):
                self.body[name] = (bb.kind, r)
            for field in F.body_family(bb.kind).fields:
                self.size[("bodies", bb.kind, field)] = nb.size

    def row(self, group, fam, field, k):
        """The row of instance k's field in its family's leaf, None if it is shared (k for
        the families a builder assembles itself, which `Aliases` does not see)."""
        if (group, fam, field) not in self.own:
            return k
        return self.own[(group, fam, field)].get(k)

    def resolve(self, s: Same, seen=()):
        """(group, family, field, row) of the leaf entry that holds the value of `s`."""
        if s.group == "bodies":
            if s.ref not in self.body:
                raise ValueError(f"shared field {s.field!r}: {s.ref!r} is not a body")
            kind, r = self.body[s.ref]
            return ("bodies", kind, s.field, r)
        fam, k = s.ref
        if (s, k) in seen:
            raise ValueError(f"shared field {s.field!r} of {fam!r} refers to itself")
        v = self.tables[s.group][fam][k][s.field]
        if isinstance(v, Same):
            return self.resolve(v, seen + ((s, k),))
        return (s.group, fam, s.field, self.own[(s.group, fam, s.field)][k])

    def value(self, x):
        """A field value, a `Same` one looked up in the builder's tables (for build-time
        evaluations of rows)."""
        while isinstance(x, Same):
            if x.group == "bodies":
                raise ValueError("a body field cannot be read at build time here")
            fam, k = x.ref
            x = self.tables[x.group][fam][k][x.field]
        return x

    def own_params(self, group, fam, items, fields, dtype=float):
        """The family's Params dict: each field's owned rows only (fields every instance
        shares are left out)."""
        import jax.numpy as jnp

        out = {}
        for f in fields:
            rows = [x[f] for x in items if not isinstance(x[f], Same)]
            if rows:
                out[f] = jnp.asarray(np.array(rows, dtype))
        return out

    def shared(self, group, fam, items, fields):
        """The static gather table of a block: ((field, sources, index), ...) for every
        field that some instance shares; sources: the leaves concatenated, None for the
        family's own leaf, else (group, family, field); index: per instance, its entry in
        the concatenation."""
        out = []
        for f in fields:
            if not any(isinstance(x[f], Same) for x in items):
                continue
            sources, offsets, index = [], {}, []
            n_own = sum(not isinstance(x[f], Same) for x in items)
            if n_own:
                sources.append(None)
                offsets[None], end = 0, n_own
            else:
                end = 0
            own = iter(range(n_own))
            for x in items:
                if not isinstance(x[f], Same):
                    index.append(next(own))
                    continue
                g, sf, sfield, r = self.resolve(x[f])
                key = (g, sf, sfield)
                if key not in offsets:
                    sources.append(key)
                    offsets[key], end = end, end + self.size[key]
                index.append(offsets[key] + r)
            out.append((f, tuple(sources), tuple(index)))
        return tuple(out)


def _leaf(params, group, fam, field):
    return getattr(params, group)[fam][field]


def family_params(params, group, blk) -> dict:
    """{field: (k, ...) array} of the k instances of a constraint block (group 'joints')
    or a force block ('forces'): the family's own Params dict, with the fields that its
    instances share with another family (`blk.shared`) gathered from the one leaf that
    holds each value. Works on concrete and traced Params (one member)."""
    import jax.numpy as jnp

    p = getattr(params, group).get(blk.kind, {})
    if not blk.shared:
        return p
    p = dict(p)
    for field, sources, index in blk.shared:
        parts = [p[field] if s is None else _leaf(params, *s) for s in sources]
        cat = parts[0] if len(parts) == 1 else jnp.concatenate(
            [jnp.asarray(a) for a in parts], 0)
        p[field] = jnp.asarray(cat)[np.asarray(index, np.int32)]
    return p


def block_params(mech, params, group) -> dict:
    """{family: `family_params`} of every constraint block (group 'joints') or force block
    ('forces') of `mech`, as NumPy arrays (for drawing and reports of concrete Params)."""
    blocks = mech.families if group == "joints" else mech.force_blocks
    return {blk.kind: {k: np.asarray(v) for k, v in family_params(params, group, blk).items()}
            for blk in blocks}
