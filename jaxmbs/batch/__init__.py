"""Batches: `simulate_batch` and its vectorisation strategies, device sharding, and the
resumable, chunked runner of large batches."""
from .runner import load_batch, run_batch
from .shard import batch_mesh, shard_batch

__all__ = ["batch_mesh", "shard_batch", "run_batch", "load_batch"]
