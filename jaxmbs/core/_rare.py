"""Conditionals whose one branch is rarely taken by any member of a batch.

Under `jax.vmap` a `lax.cond` on per-member data becomes a `select`: both branches are
computed for every member. For a check that almost never fires (a dropped row of the
Schur complement, `saddle._check_dropped`) that is most of its cost. `rare_cond` marks
the conditional; the element-wise and batch-minor vectorisers
(`jaxmbs.experimental.elementwise`) then emit one batch-wide conditional: the common
branch alone when no member takes the rare one, both branches and a per-member select
otherwise. The result is the same either way; under `jax.vmap`, `jit` alone, `grad`, it is
an ordinary `lax.cond`.
"""
from __future__ import annotations

import jax
from jax import lax

RARE_SCOPE = "jaxmbs_rare_branch"  # the name scope that marks the conditional


def rare_cond(pred, rare, common, *operands):
    """lax.cond(pred, rare, common, *operands), marked as rarely true (see the module).
    pred: a scalar bool per member; rare, common: functions of the operands with the same
    output structure."""
    with jax.named_scope(RARE_SCOPE):
        return lax.cond(pred, rare, common, *operands)
