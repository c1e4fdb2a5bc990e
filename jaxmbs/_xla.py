"""What jaxmbs works around in particular jaxlib releases, version-gated here, in one place:
batched CPU LAPACK calls that can deadlock (jaxlib 0.10 to 0.11), XLA:CPU compiling
small loops as one LLVM function (jaxlib >= 0.11) and, before that, every iteration of a
small loop as separate kernels (the banded row loops: ROW_SCAN_UNROLL), and XLA:CPU's fusion
emitters, slower to compile and to run on the scalar batch-minor program (jaxlib 0.10; the
last three at the end of this module).

jaxlib 0.10.0 to 0.11.x split a batched LAPACK call (LU, QR, SVD, eigh, Cholesky, triangular
solve) over XLA:CPU's intra-op thread pool once batch x cost >= 2e5 flops
(jaxlib/cpu/lapack_kernels.cc, GetLapackBatchChunkSize / ParallelBatchMap), and the pool
thread that made the call waits for the pieces. When the program runs as many such calls
at once as the pool has threads (one per core), every thread waits and the process stops
for good, with no error and no CPU use. Seen here (jaxlib 0.10.2, 2 cores, gdb: both
"tf_XLAEigen" threads in LuDecomposition -> ParallelBatchMap -> BlockingCounter::Wait):
`simulate_batch(..., solver=CoordinatePartitioning(), vectorize="vmap")` of the four-bar at
batch 1024 hung in every run. Upstream stopped splitting LAPACK calls in open-source builds
(jax commit 859992407d, 2026-07-21, after jaxlib 0.11.0); jaxlib 0.12 does not hang.

`simulate_batch`'s vmap path therefore runs the batch in groups (`jax.lax.map(...,
batch_size=)`) small enough that every LAPACK call of the member program stays below the
split threshold, on those releases and the CPU backend only, and warns once (throughput
drops; the whole batch at once needs jaxlib >= 0.12). Code that vmaps `jaxmbs.simulate`
itself is not covered: see README, "Large and long runs".
"""
from __future__ import annotations

import re
import warnings


def _version(text: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def jaxlib_version() -> tuple:
    try:
        from jaxlib import version as v
        return _version(v.__version__)
    except Exception:  # noqa: BLE001  (no jaxlib version: treat as unaffected)
        return (0, 0, 0)


LAPACK_SPLIT = ((0, 10, 0), (0, 12, 0))  # [first, first fixed) releases that split
LAPACK_MIN_WORK = 200_000  # flops of one call below which jaxlib runs it inline
LAPACK_PRIMITIVES = ("lu", "qr", "geqrf", "geqp3", "householder_product", "svd", "eigh", "eig",
                     "cholesky", "triangular_solve", "schur", "hessenberg", "tridiagonal",
                     "tridiagonal_solve")


def lapack_splits(version: tuple | None = None) -> bool:
    """Whether this jaxlib splits batched CPU LAPACK calls over its thread pool (and can
    deadlock doing so)."""
    v = jaxlib_version() if version is None else version
    return LAPACK_SPLIT[0] <= v < LAPACK_SPLIT[1]


def _cost(name: str, shape) -> int:
    """jaxlib's flop estimate per matrix of one LAPACK primitive on an operand (..., r, c)
    (the formulas of lapack_kernels.cc, rounded up)."""
    if len(shape) < 2:
        return 0
    r, c = int(shape[-2]), int(shape[-1])
    k = min(r, c)
    if name in ("svd", "eig", "schur"):
        return 10 * r * c * max(k, 1)
    if name in ("eigh", "hessenberg", "tridiagonal"):
        return 5 * c * c * c
    if name == "cholesky":
        return r * r * r // 3 + 1
    if name in ("triangular_solve", "tridiagonal_solve"):
        return r * c * max(r, c)
    return 2 * r * c * max(k, 1)  # lu, qr, geqrf, householder_product


def _jaxprs_of(params):
    for v in params.values():
        for x in (v if isinstance(v, (tuple, list)) else (v,)):
            if hasattr(x, "jaxpr") and hasattr(x, "consts"):
                yield x.jaxpr
            elif hasattr(x, "eqns"):
                yield x


def lapack_cost(jaxpr) -> int:
    """The largest per-matrix LAPACK cost (flops, jaxlib's estimate) of any LAPACK primitive
    in `jaxpr` (a Jaxpr or ClosedJaxpr of ONE batch member, sub-jaxprs included); 0 if none."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    worst = 0
    for e in jaxpr.eqns:
        if e.primitive.name in LAPACK_PRIMITIVES:
            for v in e.invars:
                worst = max(worst, _cost(e.primitive.name, getattr(v.aval, "shape", ())))
        for sub in _jaxprs_of(e.params):
            worst = max(worst, lapack_cost(sub))
    return worst


def lapack_safe_chunk(cost: int) -> int:
    """Members per vmapped call that keep a batched LAPACK call of `cost` flops per matrix
    below jaxlib's splitting threshold (so it runs inline, on the calling thread)."""
    return max(1, (LAPACK_MIN_WORK - 1) // max(int(cost), 1))


_warned_lapack = set()


def warn_lapack_chunks(batch: int, chunk: int, cost: int) -> None:
    key = (batch, chunk)
    if key in _warned_lapack:
        return
    _warned_lapack.add(key)
    warnings.warn(
        f"jaxmbs: this jaxlib (0.10.0 to 0.11.x) splits batched LAPACK calls on the CPU over its "
        f"thread pool, which can deadlock a vmapped simulation (no error, no CPU use). The "
        f"member program has LAPACK calls of up to {cost} flops per matrix, so simulate_batch "
        f"runs the batch of {batch} in groups of {chunk} members (each call then runs inline); "
        f"throughput drops. Upgrade to jaxlib >= 0.12 (Python >= 3.12), or use a solver without "
        f"LAPACK (the default SchurCholesky), to run the whole batch at once.",
        RuntimeWarning, stacklevel=4)


# ---------------------------------------------------------------- small-while-loop hoisting
# jaxlib >= 0.11: XLA:CPU's SmallWhileLoopHoistingPass (xla/service/cpu/
# small_while_loop_hoisting_pass.cc) turns a `while` whose cost model says it touches under
# 1024 bytes per iteration into one call compiled as a single LLVM function, the whole loop
# body written out, instead of one kernel per fusion. jaxmbs's batch-minor step loops
# qualify. Small programs run faster that way, but LLVM's time on that one function grows
# faster than its size: the spatial slider-crank took 223 s to compile (jaxlib 0.12.0.1, 2
# cores) against 41 s without the hoisting (benchmarks/xla_cpu_flags.py). The
# pass skips any loop that contains a custom call; `keep_loop` puts one (a 1x1 LAPACK
# Cholesky whose operand depends on the loop trip, so that it is not moved out of the
# loop) into a loop body, for programs above a size
# (`jaxmbs.experimental.elementwise.elementwise_vmap(keep_loops=)`). jaxlib 0.10.2 does not
# hoist (the option that switches the pass off changes nothing there); 0.11 was not checked.
HOISTS_SMALL_LOOPS = (0, 11, 0)  # first jaxlib whose XLA:CPU may hoist small while loops
KEEP_LOOPS_EQNS = 8000  # member-program size (jaxpr equations, sub-jaxprs counted once)
# above which `elementwise_vmap` keeps its loops. Measured 2026-11-28, jaxlib 0.12.0.1, 2 cores,
# RK4 + Projection, batch over 2 devices (benchmarks/xla_cpu_flags.py and the spatial
# benchmark): no hoisting at all (the byte threshold set to 0) costs the small programs run
# time: double pendulum (2904 equations) 0.87x steps/s for 0.62x compile time, slider-crank
# (6051) 0.87x for 0.55x. The spatial slider-crank (27664; 9619 with Baumgarte), kept against
# hoisted in one process, batch 4096 (benchmarks/keep_loops.py): compile 28.4 s against
# 211.5 s at 0.87x the steps/s (0.93x in a second run) with Projection, 15.2 s against 70.4 s
# at 0.97x with Baumgarte; identical results. The 183 s are worth 3.7e8 member-steps at the
# Projection rates: shorter runs finish sooner with the loops kept.
KEEP_LOOPS_WORK = 6000  # member evaluations per device per member-program equation: a call
# that evaluates its program fewer times than KEEP_LOOPS_WORK x equations keeps its loops
# whatever its size (`keeps_loops`). The hoisted form saves run time in proportion to the
# evaluations; it costs compile time, which grows with the program. Measured 2026-11-29,
# jaxlib 0.12.0.1, 2 cores, batch 4096 over 2 devices, RK4, 200 steps, kept against hoisted
# in one process (benchmarks/keep_loops.py, results/keep_loops_planar_jax0.12.0.1.json; two
# runs): double pendulum Projection compile 3.9-4.3 against 4.7-5.9 s at 0.68-0.79x the
# steps/s, Baumgarte 2.4-2.8 / 3.0-3.7 s at 0.75-0.80x; slider-crank Projection 5.6-6.4 /
# 11.2-11.7 s at 0.83-0.84x, Baumgarte 3.5-3.9 / 5.8-5.9 s at 0.81-0.86x. Equal total time
# (compile + run) at 2.6e3-2.7e3 (double pendulum, Projection) to 9.1e3 (slider-crank,
# Baumgarte) evaluations per device per equation (spatial slider-crank, Projection: 6.7e3);
# calls near the threshold can lose up to about their compile-time difference.


def hoists_small_loops(version: tuple | None = None) -> bool:
    """Whether this jaxlib's XLA:CPU compiles small while loops as one LLVM function."""
    v = jaxlib_version() if version is None else version
    return v >= HOISTS_SMALL_LOOPS


ROW_SCAN_UNROLL = 4  # rows per loop iteration of the banded Cholesky factorisation and
# substitutions (jaxmbs.banded) on XLA:CPU releases that do not hoist small loops: there
# every iteration of a row loop runs its handful of small kernels and the loop's own
# bookkeeping, and four rows per iteration (`lax.scan(..., unroll=4)`: the same operations
# in the same order) cut that. Measured 2026-11-30 (benchmarks/row_unroll.py,
# results/row_unroll_jax*.json: RK4, 100 steps, batch over 2 devices, whole Trajectory, same
# process, alternating, identical results; steps/s unrolled over rolled, Projection /
# Baumgarte): jaxlib 0.10.2 chain8 1.08 / 1.13, chain16 1.10 / 1.10, chain32 1.20 / 1.16,
# chain64 1.15 / 1.15, compile +0.5-0.8 s (2 and 8 rows gave less on chain16: 1.08x,
# 1.085x); jaxlib 0.12.0.1, which hoists the loops, 0.94-0.99x and +0.5-1.9 s of compile
# time: 1 there, and on other backends (not measured).


def row_scan_unroll(m: int, version: tuple | None = None) -> int:
    """Rows per iteration of a banded row loop of `m` rows (see ROW_SCAN_UNROLL): ROW_SCAN_UNROLL
    on the CPU backend of a jaxlib that does not hoist small loops, else 1."""
    if hoists_small_loops(version):
        return 1
    import jax
    if jax.default_backend() != "cpu":
        return 1
    return max(1, min(ROW_SCAN_UNROLL, int(m)))


def keeps_loops(eqns: int, work: int | None = None) -> bool:
    """Whether a batch-minor program of `eqns` member equations keeps its loops (on a jaxlib
    that hoists small loops; the caller checks that and the backend): above KEEP_LOOPS_EQNS
    equations, or when `work` (member evaluations per device over the calls the compile
    serves, when the caller knows it) is below KEEP_LOOPS_WORK x eqns. Never after
    `keep_loops_above(None)` (KEEP_LOOPS_EQNS >= 2**62)."""
    if KEEP_LOOPS_EQNS >= 2**62:
        return False
    return eqns > KEEP_LOOPS_EQNS or (work is not None and work < KEEP_LOOPS_WORK * eqns)


def keep_loop(x, k):
    """x unchanged, selected on a custom call that depends on the loop counter k (int32):
    inside a loop body, it keeps XLA:CPU from compiling the loop as one function."""
    import jax
    import jax.numpy as jnp
    a = jnp.where(k >= 0, 1.0, 4.0).astype(jnp.float32).reshape(1, 1)
    one = jax.lax.linalg.cholesky(a, symmetrize_input=False)[0, 0]  # 1 for every k >= 0
    return jnp.where(one == 1.0, x, jnp.zeros_like(x))


# ---------------------------------------------------------------- XLA:CPU fusion emitters
# jaxlib 0.10: XLA:CPU emits its fusions through the MLIR "fusion emitters" by default
# (DebugOptions.xla_cpu_use_fusion_emitters). On the scalar batch-minor program (every value
# one batch vector: thousands of small element-wise fusions) the older LLVM IR emitters
# compile faster and run faster. Measured 2026-11-29, jaxlib 0.10.2, 2 cores, batch 4096 over
# 2 XLA devices, RK4, 100 steps, float64, the same lowered program compiled both ways, same
# process, alternating calls (benchmarks/fusion_emitters.py, results/fusion_emitters_jax0.10.2
# .json): double pendulum 1.42x the steps/s with Projection (compile, trace included, 3.9 ->
# 3.1 s), 1.50x with Baumgarte (2.5 -> 2.0 s); slider-crank 1.18x (5.6 -> 4.9 s) and 1.24x
# (3.7 -> 3.3 s); identical results.
# The array form (banded chains) ran at 0.87-0.97x with them (chain8/16/32), so it keeps the
# default. jaxlib 0.12.0.1 takes no such compile option (its emitters ran the same programs 1.7-2x faster
# than 0.10.2's). Only the releases measured get it; the option is probed before use.
LEGACY_EMITTERS = ((0, 10, 0), (0, 11, 0))  # [first, first not) releases that get it
SCALAR_FORM_OPTIONS = {"xla_cpu_use_fusion_emitters": False}
_accepted: dict = {}


def _accepts(options: dict) -> bool:
    """Whether this jaxlib's compiler takes `options` (compiled once on a tiny program)."""
    key = tuple(sorted(options.items()))
    if key not in _accepted:
        import jax
        import jax.numpy as jnp
        try:
            jax.jit(lambda: jnp.zeros((), jnp.float32)).lower().compile(dict(options))
            _accepted[key] = True
        except Exception:  # noqa: BLE001  (an unknown option: INVALID_ARGUMENT)
            _accepted[key] = False
    return _accepted[key]


def at_top_level() -> bool:
    """Whether no jax trace or transformation is active: jax takes `compiler_options` only on a
    top-level `jax.jit` (under an outer jit, and on jax 0.10 under grad, it raises). Reads
    jax's internal trace state; False where that is not there (no options then)."""
    try:
        from jax._src import core
        return bool(core.trace_state_clean())
    except Exception:  # noqa: BLE001
        return False


def scalar_form_options(version: tuple | None = None) -> dict:
    """XLA compiler options for a top-level program built around the scalar batch-minor form
    (`jaxmbs.elementwise_vmap`) on the CPU: {} except on the releases of LEGACY_EMITTERS
    whose compiler takes SCALAR_FORM_OPTIONS (the caller checks `at_top_level`)."""
    v = jaxlib_version() if version is None else version
    if not LEGACY_EMITTERS[0] <= v < LEGACY_EMITTERS[1] or not _accepts(SCALAR_FORM_OPTIONS):
        return {}
    return dict(SCALAR_FORM_OPTIONS)
