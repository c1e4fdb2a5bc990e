"""Every formulation by name, for the conformance suite, the comparison benchmark and the
CLI."""
from __future__ import annotations

from .augmented_lagrangian import AugmentedLagrangian
from .nullspace import NullSpace
from .partitioning import CoordinatePartitioning
from .udwadia_kalaba import UdwadiaKalaba

FORMULATIONS = {
    "schur": lambda: __import__("jaxmbs.formulations.schur", fromlist=["SchurCholesky"]).SchurCholesky(),
    "dense_lu": lambda: __import__("jaxmbs.formulations.schur", fromlist=["DenseLU"]).DenseLU(),
    "nullspace": NullSpace,
    "partition": CoordinatePartitioning,
    "udwadia_kalaba": UdwadiaKalaba,
    "augmented_lagrangian": AugmentedLagrangian,
}
REDUNDANCY_TOLERANT = ("nullspace", "udwadia_kalaba", "augmented_lagrangian")
