"""Explicit Runge-Kutta integrators for the mechanism state y = (q, v, w) (diffrax style).

An integrator is a hashable configuration with

    init(term, t0, y0, h) -> state                 (None for one-step methods)
    advance(term, t, y, h, state) -> (y_new, state, status)

and, for the one-step methods, the stateless `step(f, t, y, h) -> (y_new, status)` (f a
term or a plain function (t, y) -> (dy, status), whose q is then advanced by q + h qdot)

where `term` is the vector field (`jaxmbs.core.dynamics.MechanismTerm`): term.vf(t, y) ->
((qdot, vdot, power), status), and the node families' kinematic maps term.qdot(q, v) and
term.retract(q, dv) (q + dv for planar nodes; the quaternion exponential map for spatial
bodies). State lets multistep and implicit methods carry what they need between steps.
The adaptive one implements `attempt(term, t, y, h) -> (y_new, error_norm, status)` and
asks its step-size controller (`jaxmbs.integrators.controllers`) for the next step.
Pass them to `simulate(..., integrator=...)`.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ..core._tree import static_class
from ..core.options import Rule, Validated, boolean, check_tolerances, controller, integer, real

__all__ = ["RK4", "SemiImplicitEuler", "DormandPrince5", "DormandPrince8", "ExplicitRK", "Euler"]



tmap = jax.tree_util.tree_map

def _axpy(y, h, *terms):
    """y + h * sum(c_i k_i) for terms given as (c_i, k_i)."""
    def comb(yy, *ks):
        acc = yy
        for (c, _), kk in zip(terms, ks):
            if c != 0.0:
                acc = acc + (h * c) * kk
        return acc
    return tmap(comb, y, *[k for _, k in terms])


def _rk_stages(term, t, y, h, A, c):
    """Evaluate the s stages of an explicit Runge-Kutta method in a `lax.scan` over stages,
    so the vector field is traced and compiled once instead of s times.

    A: (s, s) strictly lower-triangular tableau, c: (s,) nodes (NumPy constants).
    Returns ks (a pytree like y with a leading stage axis) and the OR of the stage statuses.
    Terms that take it (`MechanismTerm`) are told which stage is the first
    (vf(t, y, check=i == 0)): the later stages are trial states, where the solver does not
    judge its dropped rows (`jaxmbs.formulations.schur.checked_rows`).
    """
    s = len(c)
    A = jnp.asarray(A, jax.tree_util.tree_leaves(y)[0].dtype)
    c = jnp.asarray(c, A.dtype)
    ks0 = tmap(lambda a: jnp.zeros((s,) + a.shape, a.dtype), y)

    def stage(carry, i):
        ks, status = carry
        yi = tmap(lambda a, k: a + h * jnp.tensordot(A[i], k, axes=1), y, ks)
        k, st, _ = _stage_vf(term, t + c[i] * h, yi, i == 0)
        ks = tmap(lambda K, kk: K.at[i].set(kk), ks, k)
        return (ks, status | st), None

    carry = (ks0, jnp.zeros((), jnp.int32))
    (ks, status), _ = jax.lax.scan(stage, carry, jnp.arange(s))
    return ks, status


def _rk_chain(term, t, y, h, a, b, c, unroll=False, record=False, peel=False):
    """One step y + h sum_i b_i k_i of an explicit Runge-Kutta method whose stage i uses the
    stage before it only (tableau A[i, i-1] = a[i], every other entry 0: RK4, the midpoint
    rule), and the OR of the stage statuses; with record=True also the term's Record at
    (t, y) from the first stage (`MechanismTerm.vf_acc` and `record`).

    Rolled (the default), a `lax.scan` over the stages carries the running sum and the last
    stage, and takes a[i], b[i], c[i] as scan inputs: no stage indexes a tableau or a stack
    of stages with the loop counter. `_rk_stages`'s general form does; the element-wise batch
    paths (`jaxmbs.experimental.elementwise`) turn that indexing into selects on every entry
    of every stage: the double pendulum's batch program had 6798 StableHLO operations with
    it and has 4709 without (Projection; Baumgarte 4292 and 2136), and runs 1.07-1.21x faster
    (docs/dev/performance.md#rk-chain-form). a, b, c: (s,) NumPy constants, a[0] = 0.

    Rolled with peel=True (the integrators' `peel_first_stage`, which the batch-minor CPU
    path sets), the first stage is traced apart, before the loop over the others: it is
    evaluated at y itself, and it alone judges the solver's dropped rows (a batch-wide
    conditional there) and reads the Record. In one loop over all stages both are computed
    at every stage and kept at the first (measured:
    docs/dev/performance.md#peel-first-stage).
    """
    A = [[a[i] if j == i - 1 else 0.0 for j in range(i)] for i in range(len(c))]
    return _rk_explicit(term, t, y, h, A, b, c, unroll, record, _CHAIN, list(a), peel)


def _rk_explicit(term, t, y, h, A, b, c, unroll=False, record=False, memory=None, rows=None,
                 peel=False):
    """One step of the explicit Runge-Kutta method of tableau (A, b, c) (A: s rows, row i of
    i entries; NumPy constants), as `_rk_chain`: (y1, status[, Record]).

    Unrolled, every stage is traced with its coefficients folded in (zeros skipped). Rolled,
    one `lax.scan` over the stages: stage i reads the last r stages (r the largest i - j of
    a nonzero A[i, j]) from a shift register carried by the loop (`_Register`), its row of
    A (aligned to the register) taken as a scan input, so no stage indexes with the loop
    counter; methods whose stages read the one before only (r = 1) carry that stage alone
    (`_CHAIN`, rows: the scalars a_i). memory / rows: the stage memory and the rows as it
    reads them, else derived from A. peel: the first stage traced apart (`_rk_chain`)."""
    s = len(c)
    dtype = jax.tree_util.tree_leaves(y)[0].dtype
    if unroll:  # the stages traced one by one, the coefficients folded in
        acc, ks, status, rec = None, [], jnp.zeros((), jnp.int32), None
        for i in range(s):
            yi = _axpy(y, h, *[(A[i][j], ks[j]) for j in range(i)])
            k, st, acc_i = _stage_vf(term, t + c[i] * h, yi, i == 0, record and i == 0)
            rec = term.record(yi, acc_i) if record and i == 0 else rec
            ks.append(k)
            status = status | st
            acc = tmap(lambda kk: b[i] * kk, k) if acc is None else tmap(
                lambda A_, kk: A_ + b[i] * kk, acc, k)
        y1 = tmap(lambda u, A_: u + h * A_, y, acc)
        return (y1, status, rec) if record else (y1, status)

    if memory is None:
        r = _reach(A, 0)
        memory = _CHAIN if r == 1 else _Register(r)
        rows = _register_rows(A, r, 0) if r > 1 else [A[i][i - 1] if i else 0.0 for i in range(s)]
    coeffs = lambda first: tuple(jnp.asarray(z[first:], dtype) for z in (rows, b, c))
    if not peel:
        # every stage in the loop: one copy of the vector field in the program, but the
        # dropped-row conditional and the Record in every stage (the first stage's kept)
        zeros = tmap(jnp.zeros_like, y)
        rec0 = term.record_zeros(dtype) if record else None
        acc, status, rec = _stage_loop(term, t, y, h, coeffs(0) + (jnp.arange(s) == 0,), zeros,
                                       memory.empty(zeros), jnp.zeros((), jnp.int32), rec0,
                                       memory)
    else:
        # The first stage, at y itself (A's first row is empty), traced apart: it alone
        # judges the solver's dropped rows and reads the Record, so the loop over the other
        # stages holds neither the dropped-row conditional nor the Record
        k0, status, acc0 = _stage_vf(term, t + c[0] * h, y, True, record)
        rec = term.record(y, acc0) if record else None
        r1 = _reach(A, 1)
        if memory is not _CHAIN and r1 < memory.r:
            # k0 is known before the loop: the stages read it as a loop constant and the
            # register holds the stages after it only (DOP853: 8 slots instead of 11)
            memory = _Register(max(r1, 1), k0)
            rows = [[A[i][0] if i else 0.0] + row
                    for i, row in enumerate(_register_rows(A, memory.r, 1))]
            xs = tuple(jnp.asarray(z[1:], dtype) for z in (rows, b, c))
            mem0 = memory.empty(tmap(jnp.zeros_like, y))
        else:
            xs, mem0 = coeffs(1), memory.after_first(k0)
        acc, status, _ = _stage_loop(term, t, y, h, xs, tmap(lambda kk: b[0] * kk, k0), mem0,
                                     status, None, memory)
    y1 = tmap(lambda u, A_: u + h * A_, y, acc)
    return (y1, status, rec) if record else (y1, status)


def _reach(A, j0):
    """The largest i - j of a nonzero A[i, j] with j >= j0 (1 at least for j0 = 0)."""
    return max([i - j for i in range(len(A)) for j in range(j0, i) if A[i][j] != 0.0],
               default=1 - j0)


def _register_rows(A, r, j0):
    """A's rows aligned to a register of the last r stages (oldest first), columns j >= j0
    (those below j0 read as 0)."""
    return [[A[i][i - r + p] if i - r + p >= j0 else 0.0 for p in range(r)]
            for i in range(len(A))]


class _Chain:
    """The stage memory of a method whose stages read the one before only: that stage."""
    r = 1

    @staticmethod
    def empty(zeros):
        return zeros

    @staticmethod
    def push(mem, k):
        del mem
        return k

    @staticmethod
    def after_first(k0):
        return k0

    @staticmethod
    def stage_state(y, h, row, mem):
        return tmap(lambda u, kk: u + (h * row) * kk, y, mem)


_CHAIN = _Chain()


class _Register:
    """The stage memory of a general explicit tableau: the last r stages, oldest first (a
    leading axis of r on every leaf), shifted by one at every stage. With k0 (the first
    stage, computed before the loop), a row is (A[i, 0], the register's entries) and the
    stage state adds A[i, 0] k0 (k0 read as a loop constant, not carried)."""

    def __init__(self, r, k0=None):
        self.r = r
        self.k0 = k0

    def empty(self, zeros):
        return tmap(lambda z: jnp.zeros((self.r,) + z.shape, z.dtype), zeros)

    @staticmethod
    def push(mem, k):
        return tmap(lambda R, kk: jnp.concatenate([R[1:], kk[None]], 0), mem, k)

    def after_first(self, k0):
        return tmap(lambda kk: jnp.concatenate(
            [jnp.zeros((self.r - 1,) + kk.shape, kk.dtype), kk[None]], 0), k0)

    def stage_state(self, y, h, row, mem):
        if self.k0 is None:
            return tmap(lambda u, R: u + h * jnp.tensordot(row, R, axes=1), y, mem)
        return tmap(lambda u, k, R: u + h * (row[0] * k + jnp.tensordot(row[1:], R, axes=1)),
                    y, self.k0, mem)


def _stage_loop(term, t, y, h, xs, acc, mem, status, rec=None, memory=_CHAIN):
    """The `lax.scan` over stages of the rolled `_rk_explicit`: xs = (rows, b, c) (the
    stages' rows of A as `memory` reads them, (s', r) or (s',), and their weights and nodes, (s',)),
    stage i at `memory.stage_state(y, h, row_i, mem)`, its k added to the running sum acc
    with weight b_i and pushed into the stage memory mem. With a fourth entry `first`
    ((s',) bool) in xs, the stage where it holds judges the solver's dropped rows, and with
    rec (a Record) also its Record replaces rec (a select: a batch-wide conditional,
    `jaxmbs.core._rare.rare_cond`, ran the scalar batch-minor programs 0.90-0.92x as fast:
    docs/dev/performance.md#save-point-records). Without `first` no stage judges. Returns (acc, status, rec)."""
    def stage(carry, x):
        acc, mem, status, rec = carry
        row, bi, ci, *first = x
        yi = memory.stage_state(y, h, row, mem)
        k, st, solved = _stage_vf(term, t + ci * h, yi, first[0] if first else False,
                                  rec is not None)
        acc = tmap(lambda A_, kk: A_ + bi * kk, acc, k)
        if rec is not None:  # (at yi, which is y at the first stage)
            rec = tmap(lambda new, old: jnp.where(first[0], new, old), term.record(yi, solved), rec)
        return (acc, memory.push(mem, k), status | st, rec), None

    (acc, _, status, rec), _ = jax.lax.scan(stage, (acc, mem, status, rec), xs)
    return acc, status, rec


def _stage_vf(term, t, y, first, record=False):
    """term.vf at a stage: with check=first where the term takes it. Returns (dy, status,
    what the term solved or None): with record=True its Accelerations (`vf_acc`), from
    which `term.record(y, acc)` makes the Record at (t, y)."""
    if record:
        return term.vf_acc(t, y, check=first)
    if getattr(term, "stage_check", False):
        return (*term.vf(t, y, check=first), None)
    return (*term.vf(t, y), None)


def _combine(y, h, b, ks):
    b = jnp.asarray(b, jax.tree_util.tree_leaves(y)[0].dtype)
    return tmap(lambda a, k: a + h * jnp.tensordot(b, k, axes=1), y, ks)


_RK4_A = (0.0, 0.5, 0.5, 1.0)  # A[i, i-1] (`_rk_chain`)
_RK4_B = (1 / 6, 1 / 3, 1 / 3, 1 / 6)
_RK4_C = (0.0, 0.5, 0.5, 1.0)


class _FnTerm:
    """A plain vector field f(t, y) -> (dy, status) as a term (identity kinematic maps)."""

    def __init__(self, f):
        self.vf = f

    @staticmethod
    def qdot(q, v):
        return v

    @staticmethod
    def retract(q, dv):
        return q + dv


def _as_term(f):
    return f if hasattr(f, "vf") else _FnTerm(f)


class _OneStep(Validated):
    """One-step methods carry no state between steps: `advance` is `step`. Those whose
    first evaluation is at (t, y) (`records`) take step(..., record=True) and then also
    return the term's Record there (`jaxmbs.core.dynamics.Record`). Options are checked
    when made (`jaxmbs.core.options`)."""

    records = False

    def init(self, term, t0, y0, h):
        del term, t0, y0, h
        return None

    def advance(self, term, t, y, h, state=None, record=False):
        if record:
            y1, status, rec = self.step(term, t, y, h, record=True)
            return y1, state, status, rec
        y1, status = self.step(term, t, y, h)
        return y1, state, status


@static_class
class Euler(_OneStep):
    """Explicit Euler, order 1 (for tests and comparisons)."""

    order = 1
    adaptive = False
    records = True

    def step(self, f, t, y, h, record=False):
        term = _as_term(f)
        k, s, acc = _stage_vf(term, t, y, True, record)
        y1 = _axpy(y, h, (1.0, k))
        return (y1, s, term.record(y, acc)) if record else (y1, s)


@static_class
class RK4(_OneStep):
    """Classical 4th-order Runge-Kutta, fixed step.

    unroll: trace the 4 stages separately (longer compile) instead of a `lax.scan` over the
      stages.
    peel_first_stage: rolled, trace the first stage apart from the loop over the others
      (same results; it alone then judges dropped rows and reads the Record). The
      batch-minor CPU path of `simulate_batch` sets it, where it runs faster; one loop over
      all stages compiles faster elsewhere (docs/dev/performance.md#peel-first-stage).
    """

    OPTIONS = {"unroll": boolean(), "peel_first_stage": boolean()}
    unroll: bool = False
    peel_first_stage: bool = False
    order = 4
    adaptive = False
    records = True

    def step(self, f, t, y, h, record=False):
        return _rk_chain(_as_term(f), t, y, h, _RK4_A, _RK4_B, _RK4_C, self.unroll, record,
                         self.peel_first_stage)


def _check_tableau(a, b, c, where):
    """ValueError unless (a, b, c) is an explicit tableau: s nodes and weights, row i of a
    with i entries, c[0] = 0, row sums equal to the nodes and weights summing to 1."""
    s = len(c)
    if s < 1 or len(b) != s or len(a) != s or any(len(a[i]) != i for i in range(s)):
        raise ValueError(f"{where}: a must hold s rows of 0, 1, ..., s-1 entries (the strict "
                         f"lower triangle of A) and b, c s entries each; got rows of "
                         f"{[len(r) for r in a]}, {len(b)} weights and {len(c)} nodes")
    vals = [float(x) for r in a for x in r] + [float(x) for x in (*b, *c)]
    if not all(np.isfinite(vals)):
        raise ValueError(f"{where}: the tableau holds a non-finite coefficient")
    if c[0] != 0.0 or any(abs(sum(a[i]) - c[i]) > 1e-12 for i in range(s)) \
            or abs(sum(b) - 1.0) > 1e-12:
        raise ValueError(f"{where}: inconsistent tableau: need c[0] = 0, sum(a[i]) = c[i] and "
                         f"sum(b) = 1 (to 1e-12)")


def _is_coefficients(x):
    """A tuple or list of numbers, or of such tuples (a tableau's rows)."""
    if not isinstance(x, (tuple, list)):
        return False
    return all(_is_coefficients(r) if isinstance(r, (tuple, list)) else real().accepts(r) for r in x)


_TABLEAU = Rule(_is_coefficients, "a tuple of finite numbers (a: a tuple of such rows)")


@static_class
class ExplicitRK(_OneStep):
    """An explicit Runge-Kutta method of a given Butcher tableau, fixed step.

    a: the strict lower triangle of A, row by row (row i holds A[i, 0..i-1]: a[0] = ()),
    b: the weights and c: the nodes (s entries each; dimensionless); order: the method's
    order (reported, not checked); peel_first_stage: as for `RK4`; unroll: trace the stages
    one by one (longer compile)
    instead of a `lax.scan` over them; rarely worth it for many stages: DormandPrince8
    written out on the spatial slider-crank's batch (batch 4096) exceeded the
    element-wise path's MAX_OPS, ran in the array form (with a warning) at 0.14x the
    rolled steps/s, and its first call took 100 s against 26 s. Rolled, stage i reads the
    stages before it from a shift register as long as the largest i - j of a nonzero
    A[i, j] (one stage for RK4's kind), so one compiled stage serves every row. Like RK4,
    q advances by the stages' qdot, and `Projection()` restores |quaternion| = 1 and the
    constraints after the step.
    Example: ExplicitRK(a=((), (0.5,)), b=(0.0, 1.0), c=(0.0, 0.5), order=2) (midpoint).
    """

    OPTIONS = {"a": _TABLEAU, "b": _TABLEAU, "c": _TABLEAU, "order": integer(0),
               "unroll": boolean(), "peel_first_stage": boolean()}
    a: tuple = ()
    b: tuple = ()
    c: tuple = ()
    order: int = 0
    unroll: bool = False
    peel_first_stage: bool = False
    adaptive = False
    records = True

    def __post_init__(self):
        super().__post_init__()
        # (tuples: the configuration is hashed, as part of the compile cache key)
        object.__setattr__(self, "a", tuple(tuple(float(x) for x in r) for r in self.a))
        for name in ("b", "c"):
            object.__setattr__(self, name, tuple(float(x) for x in getattr(self, name)))
        _check_tableau(self.a, self.b, self.c, type(self).__name__)

    def step(self, f, t, y, h, record=False):
        return _rk_explicit(_as_term(f), t, y, h, self.a, self.b, self.c, self.unroll, record,
                            peel=self.peel_first_stage)


# Dormand & Prince's 8th-order formula of 12 stages (Hairer, Norsett & Wanner, Solving
# Ordinary Differential Equations I, 2nd ed., Sec. II.10: the 8th-order solution of DOP853),
# to double precision: rows of A's strict lower triangle, weights, nodes
_DOP853_A = (
    (),
    (0.05260015195876773,),
    (0.0197250569845379, 0.0591751709536137),
    (0.02958758547680685, 0.0, 0.08876275643042054),
    (0.2413651341592667, 0.0, -0.8845494793282861, 0.924834003261792),
    (0.037037037037037035, 0.0, 0.0, 0.17082860872947386, 0.12546768756682242),
    (0.037109375, 0.0, 0.0, 0.17025221101954405, 0.06021653898045596, -0.017578125),
    (0.03709200011850479, 0.0, 0.0, 0.17038392571223998, 0.10726203044637328,
     -0.015319437748624402, 0.008273789163814023),
    (0.6241109587160757, 0.0, 0.0, -3.3608926294469414, -0.868219346841726, 27.59209969944671,
     20.154067550477894, -43.48988418106996),
    (0.47766253643826434, 0.0, 0.0, -2.4881146199716677, -0.590290826836843, 21.230051448181193,
     15.279233632882423, -33.28821096898486, -0.020331201708508627),
    (-0.9371424300859873, 0.0, 0.0, 5.186372428844064, 1.0914373489967295, -8.149787010746927,
     -18.52006565999696, 22.739487099350505, 2.4936055526796523, -3.0467644718982196),
    (2.273310147516538, 0.0, 0.0, -10.53449546673725, -2.0008720582248625, -17.9589318631188,
     27.94888452941996, -2.8589982771350235, -8.87285693353063, 12.360567175794303,
     0.6433927460157636),
)
_DOP853_B = (0.054293734116568765, 0.0, 0.0, 0.0, 0.0, 4.450312892752409, 1.8915178993145003,
             -5.801203960010585, 0.3111643669578199, -0.1521609496625161, 0.20136540080403034,
             0.04471061572777259)
_DOP853_C = (0.0, 0.05260015195876773, 0.0789002279381516, 0.1183503419072274,
             0.2816496580927726, 0.3333333333333333, 0.25, 0.3076923076923077,
             0.6512820512820513, 0.6, 0.8571428571428571, 1.0)


@static_class
class DormandPrince8(_OneStep):
    """Dormand & Prince's 8th-order explicit Runge-Kutta formula (the 12-stage solution of
    Hairer's DOP853), fixed step: `ExplicitRK` with that tableau.

    For smooth problems where accuracy is wanted: its error falls as h^8, so it reaches a
    given accuracy with steps several times RK4's at fewer vector-field evaluations (the
    spatial slider-crank over 1 s: crank-angle error 5.0e-6 rad at h = 12.5 ms, 960 stages
    per simulated second, where RK4 gives 4.5e-6 at h = 2.5 ms with 1600; a stage costs
    about 1.1x RK4's on the batch-minor path, which reads the earlier stages from a shift
    register: 1.35x the simulated seconds per second; at tighter accuracy the gap grows,
    1.9x at 8e-8 rad; benchmarks/spatial_precision.py). Like every
    explicit method it is
    bounded by the fastest mode: stiff springs or contacts need h below their period.
    unroll, peel_first_stage: as for `RK4`.
    """

    OPTIONS = {"unroll": boolean(), "peel_first_stage": boolean()}
    unroll: bool = False
    peel_first_stage: bool = False
    order = 8
    adaptive = False
    records = True

    def step(self, f, t, y, h, record=False):
        return _rk_explicit(_as_term(f), t, y, h, _DOP853_A, _DOP853_B, _DOP853_C, self.unroll,
                            record, peel=self.peel_first_stage)


@static_class
class SemiImplicitEuler(_OneStep):
    """Symplectic (semi-implicit) Euler, order 1: v1 = v + h a(q, v); q1 = q (+) h v1
    (q + h v1 for planar nodes, the exponential map for spatial bodies).

    Expects y = (q, v, *rest) with term.vf returning (qdot, a, *rest_rates).
    """

    order = 1
    adaptive = False
    records = True

    def step(self, f, t, y, h, record=False):
        term = _as_term(f)
        k, s, acc = _stage_vf(term, t, y, True, record)
        q, v, *rest = y
        v1 = v + h * k[1]
        q1 = term.retract(q, h * v1)
        rest1 = [r + h * kr for r, kr in zip(rest, k[2:])]
        return ((q1, v1, *rest1), s, term.record(y, acc)) if record else ((q1, v1, *rest1), s)


# Dormand-Prince 5(4) tableau
_C = (0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0)
_A = (
    (),
    (1 / 5,),
    (3 / 40, 9 / 40),
    (44 / 45, -56 / 15, 32 / 9),
    (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
    (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84),
)
_B5 = (35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0)
_B4 = (5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40)


@static_class
class DormandPrince5(_OneStep):
    """Adaptive Dormand-Prince 5(4) with error control on every component of y.

    rtol, atol: tolerances; max_steps: static budget of step attempts over the whole run
    (accepted + rejected), so the loop is a `lax.scan` that jits and differentiates.
    Running out of budget sets status MAX_STEPS. h0: first step (default: simulate's dt).
    """

    OPTIONS = {"rtol": real(0.0), "atol": real(0.0), "max_steps": integer(1),
               "safety": real(0.0, 1.0, open_lo=True), "min_factor": real(0.0, 1.0, open_lo=True),
               "max_factor": real(1.0), "h0": real(0.0, open_lo=True, optional=True),
               "controller": controller()}
    rtol: float = 1e-8
    atol: float = 1e-10
    max_steps: int = 100_000
    safety: float = 0.9
    min_factor: float = 0.2
    max_factor: float = 10.0
    h0: float | None = None
    controller: object = None  # None: next_h below (safety, min/max factor); or a controller

    def __post_init__(self):
        super().__post_init__()
        check_tolerances(self)

    order = 5
    error_order = 5  # the error estimate is O(h^5): h ~ err^(-1/5)
    adaptive = True

    def attempt(self, f, t, y, h):
        A = [list(row) + [0.0] * (7 - len(row)) for row in _A]
        ks, st = _rk_stages(_as_term(f), t, y, h, A, _C)
        y5 = _combine(y, h, _B5, ks)
        db = jnp.asarray([b5 - b4 for b5, b4 in zip(_B5, _B4)], jax.tree_util.tree_leaves(y)[0].dtype)
        err = tmap(lambda k: h * jnp.tensordot(db, k, axes=1), ks)
        def ratio(e, a, b):
            return e / (self.atol + self.rtol * jnp.maximum(jnp.abs(a), jnp.abs(b)))
        r = jax.tree_util.tree_leaves(tmap(ratio, err, y, y5))
        sq = sum(jnp.sum(x**2) for x in r)
        cnt = sum(x.size for x in r)
        return y5, jnp.sqrt(sq / cnt), st

    def next_h(self, h, err):
        err = jnp.where(jnp.isfinite(err), err, jnp.inf)
        fac = self.safety * jnp.where(err > 0, err, 1e-10) ** (-1.0 / 5.0)
        return h * jnp.clip(fac, self.min_factor, self.max_factor)
