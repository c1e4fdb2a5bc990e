"""Small pytree helpers: frozen dataclasses whose fields are leaves or static metadata."""
from __future__ import annotations

import dataclasses

import jax

__all__ = ["pytree_dataclass", "static_field", "static_class"]


def static_field(**kwargs):
    """A dataclass field that is part of the treedef (hashable metadata), not a leaf."""
    metadata = dict(kwargs.pop("metadata", {}))
    metadata["static"] = True
    return dataclasses.field(metadata=metadata, **kwargs)


def pytree_dataclass(cls):
    """Frozen dataclass registered as a pytree; fields made with `static_field` are static."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    fields = dataclasses.fields(cls)
    data = [f.name for f in fields if not f.metadata.get("static", False)]
    meta = [f.name for f in fields if f.metadata.get("static", False)]
    jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=meta)
    if "replace" not in cls.__dict__:
        cls.replace = lambda self, **kw: dataclasses.replace(self, **kw)
    return cls


def static_class(cls):
    """Frozen, hashable dataclass that is a pytree with no leaves (pure configuration).

    Passing one to a jitted function makes it part of the cache key, so two equal
    configurations share one compilation and no `static_argnames` is needed.
    """
    cls = dataclasses.dataclass(frozen=True)(cls)
    jax.tree_util.register_pytree_node(
        cls, lambda self: ((), self), lambda aux, _: aux
    )
    return cls
