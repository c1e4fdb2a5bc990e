"""Device sharding of a batch: a one-axis mesh over the devices and the batch placed on it."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec


def batch_mesh(devices=None) -> Mesh:
    """A 1-D mesh with axis name 'batch' over `devices` (default: all devices; with
    `jax.distributed.initialize()` this spans every host's devices)."""
    devices = jax.devices() if devices is None else devices
    return Mesh(np.asarray(devices), ("batch",))


def shard_batch(tree, mesh: Mesh | None = None):
    """Place every leaf's leading (batch) axis across the mesh's 'batch' axis.

    Jitted functions applied to the result (e.g. `simulate_batch`) then run partitioned
    over the devices (GSPMD), each device computing its slice of the batch. The batch
    size must be a multiple of the number of devices.
    """
    mesh = batch_mesh() if mesh is None else mesh
    n = mesh.devices.size

    def put(x):
        x = jnp.asarray(x)
        if x.ndim == 0:
            return jax.device_put(x, NamedSharding(mesh, PartitionSpec()))
        if x.shape[0] % n:
            raise ValueError(f"batch size {x.shape[0]} is not a multiple of the {n} devices; "
                             "pad the batch or choose another size")
        return jax.device_put(x, NamedSharding(mesh, PartitionSpec("batch")))

    return jax.tree_util.tree_map(put, tree)
