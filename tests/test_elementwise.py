"""elementwise_vmap against jax.vmap (the oracle), and simulate_batch's element-wise path
against its vmap path: values, gradients, float32, failures, fall-backs."""
import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mechanisms import double_pendulum, four_bar, kitchen_sink, slider_crank

import jaxmbs as mb
from jaxmbs.experimental.elementwise import elementwise_vmap
from jaxmbs.zoo import chain


def _scaled(params, s):
    """The planar bodies' masses and inertias scaled by s."""
    rb = params.bodies["planar_rigid"]
    return params.with_body_fields("planar_rigid", mass=rb["mass"] * s, inertia=rb["inertia"] * s)

S = importlib.import_module("jaxmbs.experimental.elementwise.strategy")
VEC = importlib.import_module("jaxmbs.batch.vectorize")


def test_this_jax_is_supported():
    """The element-wise path reads JAX-internal jaxpr layouts (jaxmbs/experimental/
    elementwise/_jaxpr.py). On a jax release that changed one of them this test fails with
    the reason (as do the comparisons below); it never skips."""
    from jaxmbs.experimental.elementwise import support
    assert support() == "", support()
    assert mb.batch_vectorization(double_pendulum()[0], S.EW_MIN_BATCH) == "elementwise"


def _mixed(p, x):
    """A function that uses the primitives the interpreter rewrites: dot_general, a matrix
    product with a structural zero, reductions, gather / scatter-add with constant indices,
    concatenate, a cond on batched data, a short (unrolled) and a long (lax.scan) loop,
    custom_linear_solve, integer and boolean ops."""
    A = jnp.array([[2.0, 0.0, 0.5], [0.0, 3.0, 0.0], [0.5, 0.0, 4.0]]) * p[0]
    y = A @ x + jnp.sin(x) * p[1]
    z = jnp.zeros(5).at[jnp.array([0, 2, 2, 4])].add(jnp.concatenate([y, x[:1]]))
    w = jax.lax.cond(y[0] > 0.0, lambda v: v * 2.0, lambda v: -v, z)
    s, _ = jax.lax.scan(lambda c, k: (c * 0.5 + 0.3 * jnp.cos(c) + 0.01 * k, None), y, jnp.arange(20.0))
    s2, _ = jax.lax.scan(lambda c, k: (c + k, None), s, jnp.arange(3.0))
    d = jnp.diagonal(A)  # (an exact diagonal solve: its implicit derivative equals the written-out one)
    sol = jax.lax.custom_linear_solve(lambda v: d * v, s2, lambda mv, b: b / d, symmetric=True)
    flag = (jnp.max(jnp.abs(x)) > 1.0).astype(jnp.int32) | jnp.int32(4)
    return dict(w=w, s=s2, sol=sol, n=jnp.sum(w**2) + jnp.prod(x), flag=flag, idx=x[jnp.array([2, 0])])


@pytest.mark.parametrize("dtype, tol", [(jnp.float64, 1e-12), (jnp.float32, 2e-5)])
def test_elementwise_vmap_matches_vmap(dtype, tol):
    key = jax.random.PRNGKey(0)
    P = jax.random.uniform(key, (7, 2), dtype, 0.5, 1.5)
    X = jax.random.normal(jax.random.PRNGKey(1), (7, 3), dtype)
    ref = jax.vmap(_mixed)(P, X)
    for in_axes, args in (((0, 0), (P, X)), ((0, -1), (P, X.T))):
        out = jax.jit(elementwise_vmap(_mixed, in_axes=in_axes))(*args)
        for k in ref:
            assert out[k].shape == ref[k].shape and out[k].dtype == ref[k].dtype, k
            np.testing.assert_allclose(out[k], ref[k], rtol=tol, atol=tol, err_msg=k)
    # shared argument (in_axes None) and trailing batch output
    out = elementwise_vmap(_mixed, in_axes=(None, 0), out_axes=-1)(P[0], X)
    ref = jax.vmap(_mixed, in_axes=(None, 0), out_axes=-1)(P[0], X)
    np.testing.assert_allclose(out["w"], ref["w"], rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype, tol", [(jnp.float64, 1e-12), (jnp.float32, 2e-5)])
def test_minor_vmap_matches_vmap(dtype, tol):
    """The array form (batch axis appended last to every array) against jax.vmap."""
    from jaxmbs.experimental.elementwise import minor_vmap
    P = jax.random.uniform(jax.random.PRNGKey(0), (7, 2), dtype, 0.5, 1.5)
    X = jax.random.normal(jax.random.PRNGKey(1), (7, 3), dtype)
    ref = jax.vmap(_mixed)(P, X)
    for in_axes, args, out_axes in (((0, 0), (P, X), 0), ((0, -1), (P, X.T), -1),
                                    ((None, 0), (P[0], X), 0)):
        r = jax.vmap(_mixed, in_axes=(None, 0))(P[0], X) if in_axes[0] is None else ref
        out = jax.jit(minor_vmap(_mixed, in_axes=in_axes, out_axes=out_axes))(*args)
        for k in r:
            got = out[k] if out_axes == 0 else jnp.moveaxis(out[k], -1, 0)
            assert got.shape == r[k].shape and got.dtype == r[k].dtype, k
            np.testing.assert_allclose(got, r[k], rtol=tol, atol=tol, err_msg=k)


def _trig_sites(x, y):
    """Sines and cosines of overlapping selections of one computed array z (gathers with
    known indices, a strided slice, a concatenation with constants, a reshape), one of a
    different array (y) and one of a sum of selections (not a selection itself)."""
    z = 1.7 * x + 0.3
    ze = jnp.concatenate([z, jnp.asarray([0.0, 0.25], z.dtype)])
    a = ze[np.array([0, 2, 4, 6, 7])]
    b = z.reshape(3, 2)[:, 1]
    c = ze[np.array([[1, 7], [2, 6]])]
    return dict(a=jnp.sin(a) * jnp.cos(a), b=jnp.cos(b) - jnp.sin(b), c=jnp.sin(c),
                d=jnp.cos(z[::2]), e=jnp.sin(y), f=jnp.cos(z[:3] + z[3:]))


def test_minor_vmap_writes_each_selected_sine_once():
    """The array form writes the sine and cosine of the entries every sin / cos equation of
    a scope selects from one array once (`_shared_trig`): the same values as jax.vmap
    (1e-15); one polynomial (one conditional of `_sincos`) for the group, one for each site
    outside it (6 if every site had its own); gradients as jax.vmap's."""
    from jaxmbs.experimental.elementwise import minor_vmap

    X = jax.random.uniform(jax.random.PRNGKey(3), (9, 6), jnp.float64, -4.0, 4.0)
    Y = jax.random.normal(jax.random.PRNGKey(4), (9, 2), jnp.float64)
    # (new functions for each setting: jit and make_jaxpr cache traces by function)
    f = lambda: minor_vmap(_trig_sites, in_axes=(0, 0), out_axes=0)
    unfenced = lambda: minor_vmap(_trig_sites, in_axes=(0, 0), out_axes=0, fences=False)
    n_cond = lambda: sum(e.primitive.name == "cond" for e in jax.make_jaxpr(unfenced())(X, Y).eqns)
    shared, shared_conds = jax.jit(f())(X, Y), n_cond()
    ref = jax.vmap(_trig_sites)(X, Y)
    for k in ref:
        np.testing.assert_allclose(shared[k], ref[k], rtol=1e-15, atol=1e-15, err_msg=k)
    # sites a, b, c, d share one table; e (another array) and f (a sum) have their own
    assert shared_conds == 3
    loss = lambda fn: lambda x: sum(jnp.sum(v ** 2) for v in fn(x, Y).values())
    np.testing.assert_allclose(jax.grad(loss(f()))(X), jax.grad(loss(jax.vmap(_trig_sites)))(X),
                               rtol=1e-13, atol=1e-13)


def test_minor_vmap_trig_inside_a_loop_body():
    """Sines of a loop's carry written once per body trace (the body's own table), and of
    a value from outside the loop: the enclosing trace's table never serves the body."""
    from jaxmbs.experimental.elementwise import minor_vmap

    def f(x):
        w = jnp.sin(x[:2]) + jnp.cos(x[1:])

        def body(c, _):
            return c + 0.01 * (jnp.sin(c[:2]) + jnp.cos(c[1:]) + jnp.sin(x[:2])), None
        return jax.lax.scan(body, w, None, length=12)[0] + jnp.cos(x[:2])

    X = jax.random.uniform(jax.random.PRNGKey(5), (7, 3), jnp.float64, -3.0, 3.0)
    np.testing.assert_allclose(jax.jit(minor_vmap(f, out_axes=0))(X), jax.vmap(f)(X), rtol=1e-14,
                               atol=1e-14)


def _factorisations(a, b):
    """Cholesky and every triangular-solve variant of lax.linalg on a member's SPD matrix."""
    A = a @ a.T + 3.0 * jnp.eye(a.shape[0], dtype=a.dtype)
    L = jnp.linalg.cholesky(A)
    out = dict(L=L)
    for left in (True, False):
        for lower in (True, False):
            for trans in (False, True):
                for unit in (False, True):
                    T = L if lower else L.T
                    out[f"ts{left:d}{lower:d}{trans:d}{unit:d}"] = jax.lax.linalg.triangular_solve(
                        T, b if left else b.T, left_side=left, lower=lower, transpose_a=trans,
                        unit_diagonal=unit)
    out["cho_solve"] = jax.scipy.linalg.cho_solve((L, True), b)
    return out


@pytest.mark.parametrize("m", [3, pytest.param(17, marks=pytest.mark.slow)])  # (17: ~30 s)
def test_minor_vmap_factorisations_match_vmap(m):
    """The array form writes Cholesky and triangular solves out over the batch axis (no
    per-member LAPACK call): equal to jax.vmap's to round-off, every variant, a shared
    (unbatched) matrix included."""
    from jaxmbs.experimental.elementwise import minor_vmap
    a = jax.random.normal(jax.random.PRNGKey(2), (5, m, m))
    b = jax.random.normal(jax.random.PRNGKey(3), (5, m, 2))
    for in_axes, args in (((0, 0), (a, b)), ((None, 0), (a[0], b))):
        ref = jax.vmap(_factorisations, in_axes=in_axes)(*args)
        f = minor_vmap(_factorisations, in_axes=in_axes, out_axes=0)
        prims = {e.primitive.name for e in jax.make_jaxpr(f)(*args).jaxpr.eqns}
        if in_axes[0] == 0:  # (a shared matrix is factorised once, as it is)
            assert not prims & {"cholesky", "triangular_solve"}, prims  # (written out)
        out = jax.jit(f)(*args)
        for k in ref:
            np.testing.assert_allclose(out[k], ref[k], rtol=1e-10, atol=1e-12, err_msg=k)


def _with_rare_branch(x):
    """A check that only some members need (branch 1: a sqrt and a sum), marked rare."""
    from jaxmbs.core._rare import rare_cond
    flag = rare_cond(x[0] > 1.0, lambda v: jnp.sqrt(jnp.sum(v * v)) > 2.0,
                     lambda v: jnp.zeros((), bool), x)
    return dict(flag=flag, y=rare_cond(x[1] > 0.0, lambda v: jnp.sqrt(v + 4.0), lambda v: v, x))


def _sqrt_outside_conds(jaxpr):
    return sum(e.primitive.name == "sqrt" for e in jaxpr.eqns)


@pytest.mark.parametrize("form", ["elementwise", "minor"])
def test_rare_branch_runs_only_when_a_member_takes_it(form):
    """A conditional marked by `jaxmbs.core._rare.rare_cond` becomes ONE batch-wide conditional
    (its rare branch's arithmetic is not in the straight-line program: no sqrt outside a
    cond), and the results equal jax.vmap's whichever members take the rare branch: none,
    some, all."""
    from jaxmbs.experimental.elementwise import minor_vmap
    vm = elementwise_vmap if form == "elementwise" else (lambda f: minor_vmap(f, out_axes=0))
    f = vm(_with_rare_branch)
    X0 = jnp.array([[0.5, -1.0, 0.2], [-0.3, -0.2, 0.1], [0.9, -0.7, 3.0]])
    assert _sqrt_outside_conds(jax.make_jaxpr(f)(X0).jaxpr) == 0
    for X in (X0, X0.at[2, :2].set(jnp.array([3.0, 0.5])), X0.at[:, :2].set(2.0)):
        out, ref = jax.jit(f)(X), jax.vmap(_with_rare_branch)(X)
        for k in ref:
            np.testing.assert_array_equal(out[k], ref[k], err_msg=k)


def test_elementwise_vmap_gradients_match_vmap():
    P = jnp.array([[1.0, 0.3], [0.7, 1.2], [1.3, 0.9]])
    X = jnp.array([[0.2, -0.4, 0.9], [1.1, 0.5, -0.3], [-0.6, 0.1, 0.4]])
    loss = lambda vm: lambda P, X: jnp.sum(vm(_mixed)(P, X)["sol"] ** 2)
    g_ref = jax.grad(loss(jax.vmap), argnums=(0, 1))(P, X)
    g_ew = jax.jit(jax.grad(loss(elementwise_vmap), argnums=(0, 1)))(P, X)
    for a, b in zip(g_ew, g_ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_fences_do_not_change_results():
    P = jnp.ones((4, 2))
    X = jnp.linspace(-1.0, 1.0, 12).reshape(4, 3)
    a = elementwise_vmap(_mixed, fences=True)(P, X)
    b = elementwise_vmap(_mixed, fences=False)(P, X)
    for k in a:
        np.testing.assert_array_equal(a[k], b[k])


def test_fences_survive_shared_constant_arguments():
    """The fences' runtime predicate reads a batched argument. It used to read the first
    float argument: a shared one closed over under jit (simulate_batch's params with
    params_axis=None) is a constant, XLA folded every fence away and fused producers into
    every consumer (double pendulum steps about 1000x slower)."""
    def f(p, x):  # (values with several consumers, no loop: fenced at the top level only)
        y = x * p[0] + x[::-1] * p[1]
        z = y * y + jnp.roll(y, 1) * p[1]
        return z * y + jnp.sum(z) * y

    P = jnp.array([1.1, 0.7])
    X = jnp.linspace(-1.0, 1.0, 12).reshape(4, 3)
    count = lambda fences: jax.jit(lambda x: elementwise_vmap(
        f, in_axes=(None, 0), fences=fences)(P, x)).lower(X).compile().as_text().count(
        " conditional(")
    assert count(True) > count(False), (count(True), count(False))


def test_unsupported_primitive_names_it():
    f = lambda x: jax.lax.while_loop(lambda c: c[0] < 10.0, lambda c: c * 2.0, x)
    with pytest.raises(NotImplementedError, match="while"):
        elementwise_vmap(f)(jnp.ones((3, 2)))
    with pytest.raises(ValueError, match="batch axes 0"):
        elementwise_vmap(lambda x: x, in_axes=1)(jnp.ones((3, 2)))
    with pytest.raises(ValueError, match="common batch size"):
        elementwise_vmap(lambda x, y: x + y)(jnp.ones((3, 2)), jnp.ones((4, 2)))


def _compare(a, b, rtol, atol):
    for k in a._fields:
        np.testing.assert_allclose(np.asarray(getattr(a, k)), np.asarray(getattr(b, k)),
                                   rtol=rtol, atol=atol, err_msg=k)


@pytest.mark.parametrize("build, stab", [(double_pendulum, mb.Projection()),
                                         (slider_crank, mb.Baumgarte(10.0)),
                                         (four_bar, mb.Projection())])
def test_simulate_batch_elementwise_matches_vmap(build, stab):
    mech, params, q0, v0 = build()
    B = 5
    Q0 = jnp.tile(q0, (B, 1))
    V0 = jnp.tile(v0, (B, 1)) * jnp.linspace(0.5, 1.5, B)[:, None]
    if mech.n_constraints:  # consistent velocities for every member
        V0 = jnp.stack([mb.assemble(mech, params, q0, V0[k]).v for k in range(B)])
    kw = dict(save_every=25, stabilizer=stab, params_axis=None)
    ew = mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.1), 1e-3, vectorize="elementwise", **kw)
    vm = mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.1), 1e-3, vectorize="vmap", **kw)
    assert ew.q.shape == vm.q.shape == (B, 5, mech.n_coords)
    _compare(ew, vm, 1e-9, 1e-11)  # (status included: equal flags)


@pytest.mark.parametrize("stab", [mb.Projection(), mb.Baumgarte(10.0)])
def test_simulate_batch_elementwise_matches_vmap_dop853(stab):
    """DormandPrince8 (a 12-stage tableau read through a shift register in the stage loop)
    on the batch-minor path: the same trajectories as vmap (slider-crank, 2 ms steps)."""
    mech, params, q0, v0 = slider_crank()
    B = 4
    Q0 = jnp.tile(q0, (B, 1))
    V0 = jnp.stack([mb.assemble(mech, params, q0, v0 * s).v for s in (0.5, 0.8, 1.2, 1.5)])
    kw = dict(save_every=5, stabilizer=stab, params_axis=None, integrator=mb.DormandPrince8())
    assert mb.batch_vectorization(mech, 4096, integrator=mb.DormandPrince8(),
                                  stabilizer=stab) == "elementwise"  # (what auto takes)
    ew = mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.02), 2e-3, vectorize="elementwise", **kw)
    vm = mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.02), 2e-3, vectorize="vmap", **kw)
    assert ew.q.shape == vm.q.shape == (B, 3, mech.n_coords)
    assert float(jnp.max(jnp.abs(ew.q[:, -1] - ew.q[:, 0]))) > 1e-2  # (it moved)
    _compare(ew, vm, 1e-9, 1e-11)


def test_array_form_matches_vmap(monkeypatch):
    """Mechanisms above EW_MAX_COORDS or on the banded solve take the array form of the
    batch-minor path: a chain of 8 bodies (banded Schur complement, batched parameters,
    Projection) and the kitchen sink (14 coordinates, every joint family, drivers of
    every profile type, a user constraint, springs, loads, a controlled load and a user
    force; Baumgarte, controls a function of t; EW_MAX_COORDS lowered to 12, the value
    before the scalar form took it) agree with vmap."""
    assert S._ew_form(chain(8)[0], mb.SchurCholesky()) == "array"
    mech, params, q0, v0 = chain(8)
    scale = jnp.asarray([0.8, 1.0, 1.3, 0.9, 1.1])
    P = jax.vmap(lambda s: _scaled(params, s))(scale)
    Q0, V0 = jnp.broadcast_to(q0, (5, q0.size)), jnp.broadcast_to(v0, (5, q0.size))
    kw = dict(save_every=20)
    ew = mb.simulate_batch(mech, P, Q0, V0, (0.0, 0.06), 1e-3, vectorize="elementwise", **kw)
    vm = mb.simulate_batch(mech, P, Q0, V0, (0.0, 0.06), 1e-3, vectorize="vmap", **kw)
    _compare(ew, vm, 1e-9, 1e-12)
    mech, params, q0, v0 = kitchen_sink()
    monkeypatch.setattr(S, "EW_MAX_COORDS", 12)
    jax.clear_caches()  # (module constants shape the trace, not the compilation cache's key)
    assert S._ew_form(mech, mb.SchurCholesky()) == "array"
    Q0 = jnp.tile(q0, (3, 1)) + 1e-3 * jnp.arange(3)[:, None]
    V0 = jnp.tile(v0, (3, 1))
    kw = dict(save_every=5, stabilizer=mb.Baumgarte(5.0), params_axis=None,
              controls=lambda t: jnp.array([jnp.sin(t)]), check_initial=False)
    ew = mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.01), 1e-3, vectorize="elementwise", **kw)
    vm = mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.01), 1e-3, vectorize="vmap", **kw)
    _compare(ew, vm, 1e-9, 1e-11)


def _controlled_double_pendulum():
    """A double pendulum with a vertical load on its second link set by control 0."""
    m = mb.Model(gravity=(0.0, -9.81))
    m.add_body("l1", mass=1.0, inertia=1 / 12, position=(0.5, 0.0))
    m.add_body("l2", mass=1.0, inertia=1 / 12, position=(1.5, 0.0))
    m.add_revolute("O", "ground", "l1", at=(0.0, 0.0))
    m.add_revolute("A", "l1", "l2", at=(1.0, 0.0))
    m.add_load("f", "l2", force=(0.0, 1.0), control=0)
    return m.build()


@pytest.mark.parametrize("form", ["scalar", "array", "array_large"])
def test_batch_in_tiles_matches_vmap(monkeypatch, form):
    """Batches above EW_TILE_SCALAR / EW_TILE (scalar / array form; EW_TILE_LARGE for
    members above EW_TILE_LARGE_ABOVE velocity coordinates) run tile by tile (padded):
    batched parameters and state, per member controls, both forms, against vmap."""
    monkeypatch.setattr(S, "EW_TILE", 4 if form != "array_large" else 16)
    monkeypatch.setattr(S, "EW_TILE_SCALAR", 4)
    monkeypatch.setattr(S, "EW_TILE_LARGE", 3)
    jax.clear_caches()  # (module constants shape the trace, not the compilation cache's key)
    mech, params, q0, v0 = _controlled_double_pendulum()
    if form == "array_large":
        monkeypatch.setattr(S, "EW_TILE_LARGE_ABOVE", mech.n_vel - 1)
    if form != "scalar":
        monkeypatch.setattr(S, "EW_MAX_COORDS", 4)
    assert S._ew_form(mech, mb.SchurCholesky()) == form.split("_")[0]
    assert S._ew_tile(mech, form == "scalar") == {"scalar": 4, "array": 4, "array_large": 3}[form]
    B = 10
    P = jax.vmap(lambda x: mech.replace(params, {"l2.mass": x}))(jnp.linspace(0.5, 2.0, B))
    Q0, V0 = jnp.tile(q0, (B, 1)), jnp.tile(v0, (B, 1))
    U = jnp.linspace(-1.0, 1.0, B * 20).reshape(B, 20, 1)
    kw = dict(save_every=10, controls=U)
    ew = mb.simulate_batch(mech, P, Q0, V0, (0.0, 0.02), 1e-3, vectorize="elementwise", **kw)
    vm = mb.simulate_batch(mech, P, Q0, V0, (0.0, 0.02), 1e-3, vectorize="vmap", **kw)
    assert ew.q.shape == (B, 3, 6)
    _compare(ew, vm, 1e-9, 1e-12)


def test_large_program_is_refused_and_auto_takes_the_array_form(monkeypatch):
    """A written-out program above MAX_OPS scalar operations is refused (XLA's compiler
    recurses over a program's depth and overflowed its stack on one of 1.5e5 operations):
    "elementwise" raises naming MAX_OPS; "auto" warns once, naming the reason, and runs
    the batch-minor array form (minor_vmap), equal to vmap to round-off, so that
    batch_vectorization's "elementwise" stays true before and after. (MAX_OPS lowered here
    to 200, below the double pendulum's step, so that the test is quick.)"""
    import warnings

    from jaxmbs.experimental.elementwise import _interp
    monkeypatch.setattr(_interp, "MAX_OPS", 200)
    jax.clear_caches()  # (module constants shape the trace, not the compilation cache's key)
    monkeypatch.setattr(VEC, "_WARNED", set())
    monkeypatch.setattr(S, "_EW_REFUSED", {})
    mech, params, q0, v0 = double_pendulum()
    B = S.EW_MIN_BATCH
    Q0 = jnp.tile(q0, (B, 1))
    V0 = jnp.tile(v0, (B, 1)) * jnp.linspace(0.5, 1.5, B)[:, None]
    kw = dict(save_every=5, stabilizer=mb.Baumgarte(7.0), params_axis=None)  # (a new program)
    with pytest.raises(NotImplementedError, match="MAX_OPS"):
        mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.01), 1e-3, vectorize="elementwise", **kw)
    assert mb.batch_vectorization(mech, B, stabilizer=mb.Baumgarte(7.0)) == "elementwise"
    with pytest.warns(RuntimeWarning, match="MAX_OPS") as rec:
        auto = mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.01), 1e-3, **kw)
    assert sum("MAX_OPS" in str(r.message) for r in rec) == 1
    assert "array form" in str(rec[0].message)
    assert mb.batch_vectorization(mech, B, stabilizer=mb.Baumgarte(7.0)) == "elementwise"
    ref = mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.01), 1e-3, vectorize="vmap", **kw)
    _compare(auto, ref, 1e-9, 1e-12)
    with warnings.catch_warnings():  # the same reason again: no second warning
        warnings.simplefilter("error")
        mb.simulate_batch(mech, params, Q0, V0 * 0.5, (0.0, 0.01), 1e-3, **kw)
        mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.02), 1e-3, **kw)  # (traced again:
        # straight to the array form, the scalar one is not tried again)


def test_unsupported_jax_warns_once_and_batch_vectorization_says_vmap(monkeypatch):
    """Where this jax's jaxprs cannot be read (support() gives a reason), auto runs vmap
    with one warning naming the reason, and batch_vectorization answers "vmap"."""
    from jaxmbs.experimental import elementwise as E
    monkeypatch.setattr(E, "support", lambda: "the element-wise path does not support jax 9.9 (test)")
    jax.clear_caches()
    monkeypatch.setattr(VEC, "_WARNED", set())
    mech, params, q0, v0 = double_pendulum()
    B = S.EW_MIN_BATCH
    assert mb.batch_vectorization(mech, B) == "vmap"
    kw = dict(save_every=5, stabilizer=mb.Baumgarte(9.0), params_axis=None)  # (a new program)
    with pytest.warns(RuntimeWarning, match="jax 9.9"):
        mb.simulate_batch(mech, params, jnp.tile(q0, (B, 1)), jnp.tile(v0, (B, 1)), (0.0, 0.01),
                          1e-3, **kw)
    with pytest.raises(NotImplementedError, match="jax 9.9"):
        mb.simulate_batch(mech, params, jnp.tile(q0, (B, 1)), jnp.tile(v0, (B, 1)), (0.0, 0.01),
                          1e-3, vectorize="elementwise", **kw)


def test_second_call_does_not_trace_again():
    """simulate_batch compiles once per topology, shapes and options, with and without a
    mesh, on both paths: a second call with new values (state, t_offset) traces nothing.
    Traces are counted by a controls function, which every trace of a step calls."""
    mech, params, q0, v0 = double_pendulum()
    traces = []

    def u(t):
        traces.append(1)
        return jnp.zeros((0,), t.dtype)

    B = S.EW_MIN_BATCH
    for vec in ("elementwise", "vmap"):
        for mesh in (None, mb.batch_mesh()):
            traces.clear()
            outs = []
            for k in range(3):
                Q0 = jnp.tile(q0, (B, 1))
                V0 = jnp.tile(v0, (B, 1)) * (1.0 + 0.1 * k)
                outs.append(mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.01), 1e-3,
                                              params_axis=None, controls=u, vectorize=vec,
                                              mesh=mesh, save_every=5, t_offset=0.1 * k))
                if k == 0:
                    first = len(traces)
                    assert first > 0
            assert len(traces) == first, (vec, mesh, first, len(traces))
            np.testing.assert_allclose(outs[2].t - outs[1].t, 0.1)  # (the new t_offset ran)


_COMPILES = []
jax.monitoring.register_event_duration_secs_listener(
    lambda name, secs, **kw: _COMPILES.append(name) if name.endswith("backend_compile_duration") else None)


def test_second_call_compiles_nothing():
    """A second simulate_batch call with new values compiles no XLA program at all, with
    and without a mesh, initial-consistency check included (counted by jax.monitoring's
    backend-compile events): the chunks of a long run (same t_span, the start time in
    t_offset, as the README shows) cost run time only, whether they start from NumPy
    arrays or from the previous chunk's output."""
    mech, params, q0, v0 = double_pendulum()
    B = 2 * S.EW_MIN_BATCH
    for mesh in (None, mb.batch_mesh()):
        kw = dict(params_axis=None, mesh=mesh, save_every=5)
        tr = mb.simulate_batch(mech, params, np.tile(q0, (B, 1)), np.tile(v0, (B, 1)), (0.0, 0.01),
                               1e-3, t_offset=0.0, **kw)
        q1, v1 = np.asarray(tr.q[:, -1]), np.asarray(tr.v[:, -1])  # (new values, same shapes)
        _COMPILES.clear()
        tr2 = mb.simulate_batch(mech, params, q1, v1, (0.0, 0.01), 1e-3, t_offset=0.01, **kw)
        jax.block_until_ready(tr2.q)
        assert _COMPILES == [], (mesh, _COMPILES)
        # (nor when the next chunk skips the initial check: it is not part of the program)
        tr3 = mb.simulate_batch(mech, params, q1, v1, (0.0, 0.01), 1e-3, t_offset=0.02,
                                check_initial=False, **kw)
        jax.block_until_ready(tr3.q)
        assert _COMPILES == [], (mesh, _COMPILES)
        # (nor when it continues from the previous call's own output arrays, sharded over
        # the mesh: the arguments are placed as the program reads them; this compiled the
        # whole program again before)
        q2, v2 = jax.block_until_ready((tr3.q[:, -1], tr3.v[:, -1]))
        _COMPILES.clear()
        tr4 = mb.simulate_batch(mech, params, q2, v2, (0.0, 0.01), 1e-3, t_offset=0.03,
                                check_initial=False, **kw)
        jax.block_until_ready(tr4.q)
        assert _COMPILES == [], (mesh, _COMPILES)
        assert np.all(np.asarray(tr2.status) == 0)


def test_fold_zeros_folds_only_what_every_member_has():
    """fold_zeros compiles in the entries of params that are zero in every member, and no
    other: a batch whose last member alone has gravity (zero in all the others) gets that
    member's reactions, equal to the vmap path's and to the unfolded program's; a call whose
    params have another zero pattern compiles its own program (an entry folded before is
    not folded again once it is nonzero), while new nonzero values of the same pattern
    trace nothing. Traces counted by a controls function, as above."""
    mech, params, q0, v0 = slider_crank()
    B = S.EW_MIN_BATCH
    traces = []

    def u(t):
        traces.append(1)
        return jnp.zeros((0,), t.dtype)

    v0 = mb.assemble(mech, params, q0, v0).v
    Q0, V0 = jnp.tile(q0, (B, 1)), jnp.tile(v0, (B, 1))
    P = jax.tree_util.tree_map(lambda x: jnp.stack([x] * B), params)
    assert not np.any(np.asarray(params.gravity))  # (every member: zero gravity)

    def run(P, **kw):
        return mb.simulate_batch(mech, P, Q0, V0, (0.0, 0.05), 1e-3, save_every=10, **kw)

    def gravity(*g):  # (B, 2): member i gets g[i] (the last value repeated)
        g = [g[min(i, len(g) - 1)] for i in range(B)]
        return P.replace(gravity=jnp.array([[0.0, gi] for gi in g]))

    one = gravity(*([0.0] * (B - 1) + [-9.81]))
    ew, vm = run(one, vectorize="elementwise"), run(one, vectorize="vmap")
    off = run(one, vectorize="elementwise", fold_zeros=False)
    for tr in (vm, off):
        np.testing.assert_allclose(ew.q, tr.q, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(ew.lam, tr.lam, rtol=1e-10, atol=1e-9)
    # (the crank is driven: gravity changes the last member's reactions and driver effort)
    assert np.max(np.abs(np.asarray(ew.lam[-1] - ew.lam[0]))) > 1e-2
    # the pattern changes between calls: zero everywhere, then nonzero everywhere
    traces.clear()
    for g, expect_trace in ((0.0, True), (-9.81, True), (-3.0, False)):
        n = len(traces)
        P2 = gravity(g)
        ew = run(P2, vectorize="elementwise", controls=u)
        assert (len(traces) > n) == expect_trace, (g, n, len(traces))
        vm = run(P2, vectorize="vmap")
        np.testing.assert_allclose(ew.q, vm.q, rtol=1e-12, atol=1e-12, err_msg=str(g))
        np.testing.assert_allclose(ew.lam, vm.lam, rtol=1e-10, atol=1e-9, err_msg=str(g))


def test_fold_zeros_under_jit_warns_and_runs_unfolded():
    """params traced by an enclosing jax.jit cannot be read: nothing is folded, the results
    are those of the vmap path, and a RuntimeWarning says so once."""
    mech, params, q0, v0 = double_pendulum()
    B = S.EW_MIN_BATCH
    Q0, V0 = jnp.tile(q0, (B, 1)), jnp.tile(v0, (B, 1))
    VEC._WARNED.discard(S._TRACED_PARAMS)
    f = jax.jit(lambda p: mb.simulate_batch(mech, p, Q0, V0, (0.0, 0.02), 1e-3, params_axis=None,
                                            vectorize="elementwise", save_every=20).q)
    with pytest.warns(RuntimeWarning, match="fold_zeros"):
        q = f(params)
    ref = mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.02), 1e-3, params_axis=None,
                            vectorize="vmap", save_every=20).q
    np.testing.assert_allclose(q, ref, rtol=1e-12, atol=1e-12)


def test_float32_run_continues_from_its_last_state():
    """A float32 Baumgarte run continued from its own last state (chunked simulation) is
    not refused by the initial check: the threshold is at least 1000 float32 ulps (its
    velocity residuals after 400 steps are ~1e-6, above the float64 default 1e-6), while
    a state off by 1 mm still is."""
    mech, params, q0, v0 = double_pendulum()
    B = S.EW_MIN_BATCH
    p32 = jax.tree_util.tree_map(lambda x: jnp.asarray(x, jnp.float32), params)
    Q = jnp.tile(q0, (B, 1)).astype(jnp.float32)
    V = jnp.tile(v0, (B, 1)).astype(jnp.float32)
    kw = dict(params_axis=None, save_every=100, stabilizer=mb.Baumgarte(10.0))
    for k in range(4):
        tr = mb.simulate_batch(mech, p32, Q, V, (0.1 * k, 0.1 * (k + 1)), 1e-3, **kw)
        Q, V = tr.q[:, -1], tr.v[:, -1]
    assert np.all(np.isfinite(np.asarray(Q)))
    with pytest.raises(ValueError, match="inconsistent initial state of batch member 0"):
        mb.simulate_batch(mech, p32, Q + 1e-3, V, (0.4, 0.5), 1e-3, **kw)


def test_elementwise_batched_params_gradient_and_float32():
    mech, params, q0, v0 = double_pendulum()
    masses = jnp.array([0.5, 1.0, 2.0])
    P = jax.vmap(lambda m: mech.replace(params, {"l2.mass": m}))(masses)

    def loss(vec):
        def f(m):
            Pm = jax.vmap(lambda mm: mech.replace(params, {"l2.mass": mm}))(m)
            tr = mb.simulate_batch(mech, Pm, q0, v0, (0.0, 0.05), 1e-3, save_every=25,
                                   state_axis=None, vectorize=vec)
            return jnp.sum(tr.q[:, -1, :] ** 2)
        return f

    g_ew = jax.grad(loss("elementwise"))(masses)
    g_vm = jax.grad(loss("vmap"))(masses)
    np.testing.assert_allclose(g_ew, g_vm, rtol=1e-8, atol=1e-12)
    assert np.all(np.abs(np.asarray(g_vm)) > 0)
    # float32 runs and agrees with float64 to float32 accuracy
    P32 = jax.tree_util.tree_map(lambda x: x.astype(jnp.float32), P)
    t32 = mb.simulate_batch(mech, P32, q0.astype(jnp.float32), v0.astype(jnp.float32),
                            (0.0, 0.2), 1e-3, save_every=100, state_axis=None,
                            vectorize="elementwise")
    t64 = mb.simulate_batch(mech, P, q0, v0, (0.0, 0.2), 1e-3, save_every=100,
                            state_axis=None, vectorize="elementwise")
    assert t32.q.dtype == jnp.float32
    np.testing.assert_allclose(t32.q, t64.q, rtol=0, atol=2e-5)


def test_elementwise_failing_member_keeps_the_others():
    """A member with a NaN mass is flagged NONFINITE and frozen; the healthy members agree
    with vmap and are bit for bit those of the same batch without the bad member (issue
    21: its NaN angles used to switch the whole batch's sine to lax.sin)."""
    mech, params, q0, v0 = double_pendulum()
    masses = jnp.array([1.0, jnp.nan, 2.0])
    P = jax.vmap(lambda m: mech.replace(params, {"l2.mass": m}))(masses)
    kw = dict(save_every=100, state_axis=None)
    ew = mb.simulate_batch(mech, P, q0, v0, (0.0, 0.3), 1e-3, vectorize="elementwise", **kw)
    vm = mb.simulate_batch(mech, P, q0, v0, (0.0, 0.3), 1e-3, vectorize="vmap", **kw)
    st = np.asarray(ew.status)
    assert st[0] == 0 and st[2] == 0 and st[1] & mb.status.NONFINITE
    assert np.all(np.isfinite(np.asarray(ew.q[1])))
    healthy = jnp.array([0, 2])
    np.testing.assert_allclose(ew.q[healthy], vm.q[healthy], rtol=1e-12, atol=1e-14)
    P2 = jax.vmap(lambda m: mech.replace(params, {"l2.mass": m}))(masses[healthy])
    clean = mb.simulate_batch(mech, P2, q0, v0, (0.0, 0.3), 1e-3, vectorize="elementwise", **kw)
    for k in ("q", "v", "lam", "kinetic"):
        np.testing.assert_array_equal(getattr(ew, k)[healthy], getattr(clean, k), err_msg=k)


def test_sin_cos_is_decided_per_member():
    """sin / cos of one batch vector: a NaN or inf member leaves every other member's
    result bit-identical to the batch without it (993 angles, one poisoned)."""
    f = lambda t: jnp.stack([jnp.sin(t), jnp.cos(t), jnp.sin(2.0 * t)])
    x = np.random.default_rng(7).uniform(-20.0, 20.0, 993)
    clean = np.asarray(jax.jit(elementwise_vmap(f))(jnp.asarray(x)))
    for bad in (np.nan, np.inf, 3e6):
        xb = np.insert(x, 500, bad)
        got = np.asarray(jax.jit(elementwise_vmap(f))(jnp.asarray(xb)))
        np.testing.assert_array_equal(np.delete(got, 500, axis=0), clean, err_msg=str(bad))
        want = np.asarray(jax.vmap(f)(jnp.asarray(xb[500:501])))[0]
        np.testing.assert_array_equal(got[500], want)  # (NaN for inf / NaN; lax beyond 1e6)


def test_auto_choice_and_fallbacks(monkeypatch):
    mech, params, q0, v0 = double_pendulum()
    calls = []
    real = S._simulate_batch_elementwise
    monkeypatch.setattr(S, "_simulate_batch_elementwise",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    Q0, V0 = jnp.tile(q0, (S.EW_MIN_BATCH, 1)), jnp.tile(v0, (S.EW_MIN_BATCH, 1))
    mb.simulate_batch(mech, params, Q0[:2], V0[:2], (0.0, 0.01), 1e-3, params_axis=None)
    assert calls == []  # a batch of 2: vmap
    mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.01), 1e-3, params_axis=None)
    n = len(calls)
    assert n >= 1  # small mechanism, fixed step, CPU, batch >= EW_MIN_BATCH: element-wise
    mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.01), 1e-3, params_axis=None,
                      integrator=mb.DormandPrince5(max_steps=50))
    assert len(calls) == n  # adaptive: vmap
    with pytest.raises(ValueError, match="adaptive"):
        mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.01), 1e-3, params_axis=None,
                          integrator=mb.DormandPrince5(max_steps=50), vectorize="elementwise")
    with pytest.raises(ValueError, match="vectorize must be"):
        mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.01), 1e-3, vectorize="fast")
    # an array of controls (shared, or one per member) takes the element-wise path too
    m = mb.Model()
    m.add_body("b", mass=1.0, inertia=0.1, position=(0.0, 0.0))
    m.add_load("f", "b", force=(1.0, 0.0), control=0)
    mech2, p2, q2, v2 = m.build()
    B = S.EW_MIN_BATCH
    for U in (jnp.linspace(-1.0, 1.0, 10)[:, None],
              jnp.linspace(-1.0, 1.0, 10 * B).reshape(B, 10, 1)):
        k = len(calls)
        args = (mech2, p2, jnp.tile(q2, (B, 1)), jnp.tile(v2, (B, 1)), (0.0, 0.01), 1e-3)
        tr = mb.simulate_batch(*args, params_axis=None, controls=U)
        assert len(calls) == k + 1 and tr.q.shape == (B, 11, 3)
        ref = mb.simulate_batch(*args, params_axis=None, controls=U, vectorize="vmap")
        _compare(tr, ref, 1e-12, 1e-14)
        assert float(jnp.max(jnp.abs(tr.v[:, -1, 0]))) > 0
    # batch_vectorization names the same choices
    assert mb.batch_vectorization(mech, 2) == "vmap"
    assert mb.batch_vectorization(mech, S.EW_MIN_BATCH) == "elementwise"
    assert mb.batch_vectorization(mech, 64, integrator=mb.DormandPrince5(max_steps=50)) == "vmap"


def _ulps(got, want):
    return np.abs(np.asarray(got) - want) / np.spacing(np.abs(want))


def test_float64_sin_cos_within_one_ulp():
    """The vectorised sin / cos of the float64 path against NumPy's (correctly rounded
    libm): random angles up to the polynomial's range, and angles next to multiples of pi/2
    (where the reduction must keep the low bits)."""
    from jaxmbs.experimental.elementwise._interp import _SINCOS_MAX, _sincos_poly
    rng = np.random.default_rng(3)
    k = np.arange(-600_000, 600_000, 7, dtype=float)
    for x in (rng.uniform(-4, 4, 100_000), rng.uniform(-_SINCOS_MAX, _SINCOS_MAX, 100_000),
              k * np.pi / 2, np.nextafter(k * np.pi / 2, np.inf), k * np.pi / 2 + 1e-9,
              rng.uniform(-1e-8, 1e-8, 1000)):
        s, c = jax.jit(_sincos_poly)(jnp.asarray(x))
        assert _ulps(s, np.sin(x)).max() <= 1.0
        assert _ulps(c, np.cos(x)).max() <= 1.0


def test_sin_cos_beyond_the_polynomial_range_use_lax():
    """Finite angles above _SINCOS_MAX take lax.sin / lax.cos (bit-identical to jax.vmap),
    the others the polynomial (within 1 ulp); inf and NaN give NaN."""
    f = lambda t: jnp.stack([jnp.sin(t) * 2.0, jnp.cos(t) + 1.0, jnp.sin(t) * jnp.cos(t)])
    for x in (np.array([0.3, 2e6, -1.0, -7e7]), np.array([0.3, np.inf, np.nan]), np.linspace(-9, 9, 7)):
        got = np.asarray(elementwise_vmap(f)(jnp.asarray(x)))
        want = np.asarray(jax.vmap(f)(jnp.asarray(x)))
        big = np.abs(x) > 1e6
        np.testing.assert_array_equal(got[big], want[big])
        assert np.all(np.isnan(got[~np.isfinite(x)]))
        ok = np.isfinite(x) & ~big
        assert np.max(np.abs(got[ok] - want[ok])) <= 4e-16
    # float32 keeps lax.sin / lax.cos
    x32 = jnp.linspace(-3, 3, 5, dtype=jnp.float32)
    np.testing.assert_array_equal(elementwise_vmap(f)(x32), jax.vmap(f)(x32))


SHARDED = """
import os, sys, json
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
import jax
jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp, numpy as np
sys.path.insert(0, sys.argv[1])
import jaxmbs as mb
from mechanisms import double_pendulum
mech, params, q0, v0 = double_pendulum()
mesh = mb.batch_mesh()
B = 19  # not a multiple of the 2 devices: padded
masses = jnp.linspace(0.5, 2.0, B)
batch = jax.vmap(lambda m: mech.replace(params, {"l2.mass": m}))(masses)
Q, V = jnp.tile(q0, (B, 1)), jnp.tile(v0, (B, 1))
out = {}
kw = dict(save_every=25)
# vmap path: batched parameters, padded batch
ref = mb.simulate_batch(mech, batch, Q, V, (0.0, 0.05), 1e-3, vectorize="vmap", **kw)
got = jax.jit(lambda p, q, v: mb.simulate_batch(mech, p, q, v, (0.0, 0.05), 1e-3, mesh=mesh,
                                                vectorize="vmap", **kw))(batch, Q, V)
diff = lambda x, y: max(float(np.max(np.abs(np.asarray(a, float) - np.asarray(b, float)))) for a, b in zip(x, y))
out["vmap"] = dict(shape=list(got.q.shape), diff=diff(got, ref))
# element-wise path: shared parameters, t_offset, padded batch; gradient w.r.t. a shared mass
def run(m, mesh_):
    p = mech.replace(params, {"l2.mass": m})
    return mb.simulate_batch(mech, p, Q, V, (0.0, 0.05), 1e-3, params_axis=None, t_offset=0.1,
                             mesh=mesh_, vectorize="elementwise", **kw)
got, ref = run(1.3, mesh), run(1.3, None)
loss = lambda m, mesh_: jnp.sum(run(m, mesh_).q[:, -1] ** 2)
out["elementwise"] = dict(shape=list(got.q.shape), diff=diff(got, ref),
                          grad=float(jax.grad(loss)(1.3, mesh)), grad_ref=float(jax.grad(loss)(1.3, None)))
print(json.dumps(out))
"""


@pytest.mark.slow  # (~90 s: a subprocess compiling for 2 host devices; sharding in the default run: test_batch_runner.py)
def test_sharded_simulate_batch_matches_one_device(tmp_path):
    """simulate_batch(mesh=...) over 2 host devices (a subprocess: XLA_FLAGS must be set
    before JAX starts) against the unsharded call, on a batch of 19 that needs padding:
    the vmap path with batched parameters; the element-wise path with shared parameters
    and t_offset, and its gradient with respect to a shared mass."""
    import json
    import os
    import subprocess
    import sys
    path = tmp_path / "sharded.py"
    path.write_text(SHARDED)
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    r = subprocess.run([sys.executable, str(path), tests_dir], capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    assert set(res) == {"vmap", "elementwise"}
    for vec, d in res.items():
        assert d["shape"] == [19, 3, 6], vec
        assert d["diff"] <= 1e-13, (vec, d)
    d = res["elementwise"]
    assert d["grad_ref"] != 0.0 and abs(d["grad"] - d["grad_ref"]) <= 1e-10 * abs(d["grad_ref"]), d


def test_mesh_argument_is_checked():
    import jax.sharding as js
    mech, params, q0, v0 = double_pendulum()
    mesh2d = js.Mesh(np.asarray(jax.devices()[:1]).reshape(1, 1), ("a", "b"))
    with pytest.raises(ValueError, match="one axis"):
        mb.simulate_batch(mech, params, q0[None], v0[None], (0.0, 0.01), 1e-3, params_axis=None,
                          mesh=mesh2d)


def _movement_eqns(fn, args):
    """(eqn, its input values, JAX's results) for each gather / scatter / scatter-add of
    fn's jaxpr, every equation evaluated eagerly by JAX."""
    jaxpr = jax.make_jaxpr(fn)(*args)
    env = dict(zip(jaxpr.jaxpr.constvars, jaxpr.consts))
    env.update(zip(jaxpr.jaxpr.invars, args))
    for eqn in jaxpr.jaxpr.eqns:
        vals = [np.asarray(v.val) if hasattr(v, "val") else np.asarray(env[v]) for v in eqn.invars]
        with jax.ensure_compile_time_eval():
            ref = eqn.primitive.bind(*vals, **eqn.params)
        ref = [np.asarray(r) for r in (ref if eqn.primitive.multiple_results else [ref])]
        env.update(zip(eqn.outvars, ref))
        if eqn.primitive.name in ("gather", "scatter", "scatter-add"):
            yield eqn, vals, ref


def test_known_gathers_and_scatters_are_evaluated_with_numpy_as_jax_does():
    """The interpreter folds data movement on known values (entry ids, index arithmetic)
    with NumPy (`_numpy_eval`) instead of compiling a small XLA program per signature.
    Its gather / scatter / scatter-add agree exactly with JAX's on every mode (clamped,
    filled or dropped out-of-bounds indices), windows and dimension layouts below; where
    the result would depend on XLA's order (overlapping replaced windows, float sums) it
    declines (None) and JAX evaluates."""
    from jaxmbs.experimental.elementwise import _numpy_eval
    lax = jax.lax

    x1 = np.arange(8, dtype=np.int32) * 3 - 5
    x2 = np.arange(30, dtype=np.float64).reshape(5, 6) * 0.5 - 3.0
    i_in, i_out = np.array([[1], [4], [0]]), np.array([[1], [9], [-3]])
    dup = np.array([[2], [2], [5]])
    cases = [
        (lambda x, i: x[i[:, 0]], (x1, i_in)),
        (lambda x, i: x[:, i[:, 0]], (x2, i_in)),
        (lambda x, i: x[i[:, 0], i[::-1, 0]], (x2, i_in)),
        (lambda x, i: jnp.take(x, i[:, 0], axis=1, mode="clip"), (x2, i_out)),
        (lambda x, i: jnp.take(x, i[:, 0], axis=0, mode="fill"), (x2, i_out)),
        (lambda x, i: jnp.take(x, i[:, 0], axis=0, mode="fill", fill_value=-7), (x1, i_out)),
        (lambda x, i: lax.gather(x, i, lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                                                   start_index_map=(0,)), (1, 3),
                                 mode=lax.GatherScatterMode.CLIP), (x2, i_out)),
        (lambda x, i: lax.gather(x, i, lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
                                                                   start_index_map=(0,)), (1, 6),
                                 mode=lax.GatherScatterMode.FILL_OR_DROP), (x2, i_out)),
        (lambda x, i: lax.gather(x, i, lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,),
                                                                   start_index_map=(0,)), (1,),
                                 mode=lax.GatherScatterMode.FILL_OR_DROP, fill_value=3), (x1, i_out)),
        (lambda x, i: lax.scatter(x, i, jnp.array([7, 8, 9], x.dtype), lax.ScatterDimensionNumbers(
            update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)),
            mode=lax.GatherScatterMode.PROMISE_IN_BOUNDS), (x1, i_out)),
        (lambda x, i: x.at[i[:, 0]].set(jnp.array([7, 8, 9], x.dtype)), (x1, i_in)),
        (lambda x, i: x.at[i[:, 0]].set(jnp.array([7, 8, 9], x.dtype)), (x1, i_out)),
        (lambda x, i: x.at[i[:, 0]].set(jnp.array([7, 8, 9], x.dtype), mode="clip"), (x1, i_out)),
        (lambda x, i: x.at[:, i[:, 0]].set(jnp.ones((5, 3), x.dtype)), (x2, i_in)),
        (lambda x, i: x.at[i[:, 0]].set(jnp.ones((3, 6), x.dtype)), (x2, i_in)),
        (lambda x, i: x.at[i[:, 0]].add(jnp.array([4, 5, 6], x.dtype)), (x1, dup)),
        (lambda x, i: x.at[i[:, 0]].add(jnp.full((3, 6), 0.25, x.dtype)), (x2, i_in)),
    ]
    seen = set()
    for fn, args in cases:
        for eqn, vals, ref in _movement_eqns(fn, args):
            got = _numpy_eval.evaluate(eqn.primitive.name, vals, dict(eqn.params), [v.aval for v in eqn.outvars])
            assert got is not None, (eqn.primitive.name, eqn.params)
            np.testing.assert_array_equal(got[0], ref[0])
            assert got[0].dtype == ref[0].dtype
            seen.add((eqn.primitive.name, str(eqn.params["mode"])))
    assert {n for n, _ in seen} == {"gather", "scatter", "scatter-add"} and len(seen) >= 7, seen
    # overlapping replaced windows (XLA's order decides) and overlapping float sums: declined
    declined = [(lambda x, i: x.at[i[:, 0]].set(jnp.array([7, 8, 9], x.dtype)), (x1, dup)),
                (lambda x, i: x.at[i[:, 0]].add(jnp.full((3, 6), 0.1, x.dtype)), (x2, dup))]
    for fn, args in declined:
        (eqn, vals, _), = _movement_eqns(fn, args)
        assert _numpy_eval.evaluate(eqn.primitive.name, vals, dict(eqn.params), [v.aval for v in eqn.outvars]) is None


def test_known_zeros_fold_with_numpy_exactly_as_jax():
    """The folded constants of zero parameters: sin and cos of exact zeros, sums and dot
    products of +0 entries are evaluated with NumPy (`_numpy_eval`), bit for bit what JAX
    computes (sign of zero included); any other argument is declined (None) and JAX,
    whose rounding it is, evaluates it."""
    from jaxmbs.experimental.elementwise import _numpy_eval
    lax = jax.lax
    pz, nz = np.zeros((2, 3)), -np.zeros((2, 3))
    cases = [  # (function, arguments, NumPy evaluates it)
        (lax.sin, (pz,), True), (lax.sin, (nz,), True), (lax.cos, (nz,), True),
        (lax.sin, (np.zeros((1, 1)),), True), (lax.cos, (np.zeros(()),), True),
        (lambda x: jnp.sum(x, axis=0), (pz,), True), (lambda x: jnp.sum(x, axis=1), (pz,), True),
        (lambda x, y: jnp.dot(x, y), (np.zeros(9), np.zeros(9)), True),
        (lambda x, y: x @ y, (pz, np.zeros((3, 4))), True),
        (lax.sin, (np.array([0.0, 1e-300]),), False), (lax.cos, (np.array([2.0]),), False),
        (lambda x: jnp.sum(x, axis=0), (nz,), False),
        (lambda x, y: jnp.dot(x, y), (np.zeros(3), np.array([0.0, -1.0, 2.0])), False),
    ]
    for fn, args, folds in cases:
        closed = jax.make_jaxpr(fn)(*args)
        env = dict(zip(closed.jaxpr.invars, args))
        for eqn in closed.jaxpr.eqns:
            vals = [np.asarray(env[v]) if not hasattr(v, "val") else np.asarray(v.val) for v in eqn.invars]
            with jax.ensure_compile_time_eval():
                ref = eqn.primitive.bind(*vals, **eqn.params)
            ref = np.asarray(ref)
            env[eqn.outvars[0]] = ref
            if eqn.primitive.name not in ("sin", "cos", "reduce_sum", "dot_general"):
                continue
            got = _numpy_eval.evaluate(eqn.primitive.name, vals, dict(eqn.params),
                                       [v.aval for v in eqn.outvars])
            if not folds:
                assert got is None, (eqn.primitive.name, args)
                continue
            assert got is not None, (eqn.primitive.name, eqn.params)
            np.testing.assert_array_equal(got[0], ref)
            assert got[0].dtype == ref.dtype and got[0].shape == ref.shape
            np.testing.assert_array_equal(np.signbit(got[0]), np.signbit(ref))


def test_scalar_form_writes_out_the_whole_factor_above_unroll_max(monkeypatch):
    """A dense mechanism of 13 to 24 coordinates with more rows than the solver's
    unroll_max (a chain of 7 bodies: 21 coordinates, 14 rows, below the banded path's 16)
    takes the scalar form under "auto" (EW_MAX_COORDS is 24), its Cholesky factor written
    out for every row (`_scalar_solver`; the column-by-column factor's LAPACK triangular
    solves ran 3x slower there), and agrees with vmap: batched masses, Projection."""
    assert S.EW_MAX_COORDS == 24
    mech, params, q0, v0 = chain(7)
    assert (mech.n_coords, mech.n_constraints) == (21, 14)
    assert S._ew_form(mech, mb.SchurCholesky()) == "scalar"
    assert S._scalar_solver(mb.SchurCholesky(), mech).unroll_max == 14
    assert S._scalar_solver(mb.SchurCholesky(unroll_max=20), mech).unroll_max == 20
    B = S.EW_MIN_BATCH
    assert mb.batch_vectorization(mech, B) == "elementwise"
    scale = jnp.linspace(0.8, 1.2, B)
    P = jax.vmap(lambda s: _scaled(params, s))(scale)
    Q0, V0 = jnp.broadcast_to(q0, (B, q0.size)), jnp.broadcast_to(v0, (B, q0.size))
    kw = dict(save_every=10)
    ew = mb.simulate_batch(mech, P, Q0, V0, (0.0, 0.02), 1e-3, **kw)
    vm = mb.simulate_batch(mech, P, Q0, V0, (0.0, 0.02), 1e-3, vectorize="vmap", **kw)
    _compare(ew, vm, 1e-9, 1e-12)


def _dp_elementwise_program(keep, monkeypatch):
    """(result q, lowered StableHLO text, compiled HLO text) of a short element-wise
    double-pendulum run, its loops kept (`xla_cpu.keep_loop`) or not."""
    from jaxmbs.experimental import xla_cpu
    monkeypatch.setattr(xla_cpu, "KEEP_LOOPS_EQNS", 0 if keep else 10**9)
    monkeypatch.setattr(xla_cpu, "KEEP_LOOPS_WORK", 0)  # (the choice by size alone)
    jax.clear_caches()  # (simulate_batch's jit cache does not see module-level settings)
    mech, params, q0, v0 = double_pendulum()
    B = 6
    Q0 = jnp.tile(q0, (B, 1)) + jnp.linspace(0.0, 0.05, B)[:, None]
    V0 = jnp.tile(v0, (B, 1))
    f = jax.jit(lambda q, v: mb.simulate_batch(
        mech, params, q, v, (0.0, 0.02), 1e-3, save_every=10, params_axis=None,
        vectorize="elementwise", check_initial=False).q)
    low = f.lower(Q0, V0)
    comp = low.compile()
    out = np.asarray(comp(Q0, V0))
    jax.clear_caches()
    return out, low.as_text(), comp.as_text()


def test_kept_loops_give_the_same_results_and_stay_loops(monkeypatch):
    """Above KEEP_LOOPS_EQNS the element-wise program passes its loops through a custom call
    (`xla_cpu.keep_loop`) so that XLA:CPU does not compile them as one LLVM function
    (minutes of compile time for the spatial slider-crank): same results, and no loop is
    hoisted into a "small call" (this fails if a jaxlib changes the rule the work-around
    relies on)."""
    q_keep, low_keep, hlo_keep = _dp_elementwise_program(True, monkeypatch)
    q_free, low_free, hlo_free = _dp_elementwise_program(False, monkeypatch)
    # (equal to round-off: XLA compiles the two forms' arithmetic apart. They were bitwise
    # equal before fold_zeros; with it, jax 0.12.0.1 gave 15 of 108 entries 1 ulp apart,
    # 2.0e-17 absolute, 3.2e-14 relative)
    np.testing.assert_allclose(q_keep, q_free, rtol=1e-13, atol=1e-16)
    assert "custom_call" in low_keep and "custom_call" not in low_free
    assert 'xla_cpu_small_call="true"' in hlo_free  # (what the work-around is for)
    assert 'xla_cpu_small_call="true"' not in hlo_keep


def test_keep_loops_is_chosen_by_program_size():
    from jaxmbs.experimental import xla_cpu as _xla
    from jaxmbs.experimental.elementwise import _interp as I
    small = jax.make_jaxpr(lambda x: jnp.sin(x) * 2.0)(1.0)
    big = jax.make_jaxpr(lambda x: jax.lax.fori_loop(0, 3, lambda i, y: y + jnp.sin(y), x))(1.0)
    assert I._size(big) > I._size(small)
    expect = jax.default_backend() == "cpu"
    try:
        old = _xla.KEEP_LOOPS_EQNS
        _xla.KEEP_LOOPS_EQNS = I._size(small)
        assert not I._keeps_loops(small)
        assert I._keeps_loops(big) == expect
    finally:
        _xla.KEEP_LOOPS_EQNS = old
    f = elementwise_vmap(lambda x: jnp.sin(x) * 2.0, keep_loops=True)
    np.testing.assert_allclose(f(jnp.linspace(0.0, 1.0, 4)), np.sin(np.linspace(0.0, 1.0, 4)) * 2.0)
    assert f.keeps_loops is True


def test_keep_loops_follows_the_run_length(monkeypatch):
    """A program below KEEP_LOOPS_EQNS keeps its loops when the call evaluates it fewer than
    KEEP_LOOPS_WORK times per equation per device (its compile time would not pay off), and
    is hoisted for a long run; keep_loops_above(None) means never."""
    from jaxmbs.experimental import xla_cpu as _xla
    from jaxmbs.experimental.elementwise import keep_loops_above
    assert _xla.keeps_loops(100, 10**5) == (10**5 < _xla.KEEP_LOOPS_WORK * 100)
    assert _xla.keeps_loops(100, None) == (100 > _xla.KEEP_LOOPS_EQNS)
    assert _xla.keeps_loops(_xla.KEEP_LOOPS_EQNS + 1, 10**15)
    assert not _xla.keeps_loops(100, _xla.KEEP_LOOPS_WORK * 100)
    mech, params, q0, v0 = double_pendulum()
    B = 4
    Q0, V0 = jnp.tile(q0, (B, 1)), jnp.tile(v0, (B, 1))

    def lowered(n_steps):
        jax.clear_caches()  # (simulate_batch's jit cache does not see module-level settings)
        f = jax.jit(lambda q, v: mb.simulate_batch(
            mech, params, q, v, (0.0, n_steps * 1e-3), 1e-3, save_every=n_steps,
            params_axis=None, vectorize="elementwise", check_initial=False).q)
        return f.lower(Q0, V0).as_text()

    # (the double pendulum's member program, about 3e3 equations, is below KEEP_LOOPS_EQNS:
    # the long run is hoisted)
    short, long_ = 10, 10**9 // B
    assert "custom_call" in lowered(short)
    assert "custom_call" not in lowered(long_)
    old = keep_loops_above(None)
    try:
        assert "custom_call" not in lowered(short)
    finally:
        keep_loops_above(old)
        jax.clear_caches()


def test_keep_loops_above_sets_and_restores():
    from jaxmbs.experimental import xla_cpu as _xla
    from jaxmbs.experimental.elementwise import keep_loops_above
    default = _xla.KEEP_LOOPS_EQNS
    try:
        assert keep_loops_above(None) == default
        assert _xla.KEEP_LOOPS_EQNS >= 2**62  # never
        assert keep_loops_above(123) is None
        assert _xla.KEEP_LOOPS_EQNS == 123
    finally:
        keep_loops_above(default)
    assert _xla.KEEP_LOOPS_EQNS == default


def test_save_point_records_match_the_solve_at_the_save_points(monkeypatch):
    """The batch-minor loop reads each save point's multipliers, errors and energies off
    the next step's first stage, and steps once past the last save point for its own
    (`jaxmbs.core.dynamics.Record`; the scalar form). Against the same loop that solves at the
    save points instead (an integrator without `records`: RK4 with it switched off), one
    save point every step and every 7 steps, per member controls (the extra step reads
    the last row): the Trajectories agree to round-off, status included."""
    mech, params, q0, v0 = _controlled_double_pendulum()
    B, n_steps = 6, 14
    Q0, V0 = jnp.tile(q0, (B, 1)), jnp.tile(v0, (B, 1))
    ctrl = jnp.sin(jnp.arange(B * n_steps, dtype=Q0.dtype)).reshape(B, n_steps, 1)
    for save_every in (1, 7):
        runs = []
        for rec in (True, False):
            monkeypatch.setattr(mb.RK4, "records", rec)
            jax.clear_caches()
            runs.append(S._simulate_batch_elementwise(
                mech, params, Q0, V0, ctrl, (0.0, n_steps * 1e-3), 1e-3, None, 0, None,
                save_every=save_every, form="scalar"))
        assert runs[0].lam.shape == (B, n_steps // save_every + 1, mech.n_constraints)
        assert np.all(np.asarray(runs[0].lam[:, -1]) != 0.0)  # (the last save point's too)
        _compare(runs[0], runs[1], 1e-10, 1e-11)


def test_scalar_form_at_top_level_under_jit_and_under_grad():
    """A simulate_batch that takes the scalar batch-minor form gives the same results at top
    level and under an outer jit, and differentiates under grad (derivatives of the vmap
    path)."""
    mech, params, q0, v0 = double_pendulum()
    B = S.EW_MIN_BATCH
    Q0, V0 = jnp.tile(q0, (B, 1)), jnp.tile(v0, (B, 1))
    assert mb.batch_vectorization(mech, B) == "elementwise"
    kw = dict(params_axis=None, save_every=50, check_initial=False)
    top = mb.simulate_batch(mech, params, Q0, V0, (0.0, 0.1), 1e-3, **kw)
    nested = jax.jit(lambda q, v: mb.simulate_batch(mech, params, q, v, (0.0, 0.1), 1e-3,
                                                    **kw))(Q0, V0)
    for a, b in ((top.q, nested.q), (top.v, nested.v), (top.lam, nested.lam)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(top.status), np.asarray(nested.status))
    g = jax.grad(lambda s: mb.simulate_batch(mech, params, Q0 * s, V0, (0.0, 0.01), 1e-3,
                                             **dict(kw, save_every=10)).q[:, -1].sum())(1.0)
    assert np.isfinite(float(g))


def test_sin_cos_polynomial_is_written_once_per_site():
    """float64 sin / cos of one batch vector write FDLIBM's polynomial once (a call before
    the conditional that mends angles beyond _SINCOS_MAX), not once in each of its branches
    (2 copies): counted by the reduction constant 2/pi in the lowered program."""
    f = elementwise_vmap(lambda t: jnp.sin(t) * jnp.cos(t))
    x = jnp.linspace(-3.0, 3.0, 16)
    const = "0.63661977236758138"

    def copies():
        jax.clear_caches()
        return jax.jit(f).lower(x).as_text().count(const)

    assert copies() == 1
    np.testing.assert_allclose(jax.jit(f)(x), np.sin(x) * np.cos(x), rtol=0, atol=4e-16)
