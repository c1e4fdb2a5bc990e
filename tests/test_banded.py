"""The sparse Jacobian and the banded Schur path (`jaxmbs.formulations.banded`), against the dense
Jacobian, the dense Schur complement and the dense KKT solve (DenseLU) as references."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from mechanisms import double_pendulum, kitchen_sink

import jaxmbs as mb
from jaxmbs.formulations.banded import schur_band, sparse_plan, wants_sparse
from jaxmbs.zoo import chain


def tree():
    """A driven hub with three 4-link branches, offset CGs, a particle on a distance joint
    and a slider on a prismatic joint: every coupling pattern of a tree (30 rows, n = 44)."""
    m = mb.Model(gravity=(0.2, -9.81))
    m.add_body("hub", mass=2.0, inertia=0.2, position=(0.0, 0.0), cg=(0.02, -0.01))
    m.add_revolute("h", "ground", "hub", at=(0.0, 0.0))
    m.drive_joint("hd", "h", mb.polynomial([0.0, 1.0, 0.3]))
    for b, ang in enumerate((0.3, 2.2, 4.1)):
        e = np.array([np.cos(ang), np.sin(ang)])
        prev, p0 = "hub", 0.2 * e
        for k in range(4):
            name = f"b{b}l{k}"
            m.add_body(name, mass=0.5 + 0.1 * k, inertia=0.02, position=p0 + 0.25 * e, angle=ang,
                       cg=(0.01 * b, 0.0))
            m.add_revolute(f"{name}j", prev, name, at=p0)
            prev, p0 = name, p0 + 0.5 * e
    m.add_particle("p", mass=0.3, position=(2.3, 1.0))
    m.add_distance("rod", "b0l3", "p", at_i=tuple(p0 - 0.0 * e), at_j=(2.3, 1.0))
    m.add_body("s", mass=0.4, inertia=0.01, position=(-1.0, -1.0))
    m.add_prismatic("ps", "b1l3", "s", axis=(0.6, 0.8), at=(-1.0, -1.0))
    return m.build()


def kitchen_sink_no_user():
    """kitchen_sink without its user constraint (which the sparse path does not cover)."""
    import inspect
    import textwrap
    src = textwrap.dedent(inspect.getsource(kitchen_sink))
    src = "\n".join(line for line in src.splitlines() if 'add_constraint("uc"' not in line)
    src = src.replace("def kitchen_sink():", "def _ks():")
    ns = {"mb": mb, "np": np}
    exec(src, ns)
    return ns["_ks"]()


def _rand_state(mech, q0, seed):
    rng = np.random.default_rng(seed)
    q = jnp.asarray(q0) + 0.05 * rng.standard_normal(q0.shape)
    v = jnp.asarray(rng.standard_normal(q0.shape))
    return q, v


@pytest.mark.parametrize("build", [kitchen_sink_no_user, tree, lambda: chain(12)])
def test_sparse_terms_match_dense(build):
    mech, params, q0, _ = build()
    assert sparse_plan(mech) is not None
    q, v = _rand_state(mech, np.asarray(q0), 0)
    d = mb.constraint_terms(mech, params, q, v, 0.37)
    s = mb.constraint_terms(mech, params, q, v, 0.37, sparse=True)
    for a, b in ((s.phi, d.phi), (s.phit, d.phit), (s.gamma, d.gamma), (s.jac.dense(), d.jac)):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-13)
    np.testing.assert_allclose(s.jac @ v, d.jac @ v, rtol=0, atol=1e-12)
    lam = jnp.asarray(np.random.default_rng(1).standard_normal(d.jac.shape[0]))
    np.testing.assert_allclose(s.jac.rmatvec(lam), d.jac.T @ lam, rtol=0, atol=1e-12)


@pytest.mark.parametrize("build", [kitchen_sink_no_user, tree, lambda: chain(12)])
def test_schur_band_matches_dense_schur(build):
    """Every band entry equals the dense Phi_q M^-1 Phi_q^T in the plan's row order, and
    nothing outside the band is nonzero."""
    mech, params, q0, _ = build()
    q, v = _rand_state(mech, np.asarray(q0), 2)
    s = mb.constraint_terms(mech, params, q, v, 0.0, sparse=True)
    M = mb.mass_matrix(mech, params, q)
    J = np.asarray(s.jac.dense())
    A = J @ np.linalg.solve(np.asarray(M.dense()), J.T)
    plan = s.jac.plan
    Ap = A[np.ix_(plan.perm, plan.perm)]
    B = np.asarray(schur_band(M, s.jac))
    m, w = plan.m, plan.w
    for i in range(m):
        for d in range(w + 1):
            ref = Ap[i, i - d] if i - d >= 0 else 0.0
            assert abs(B[i, d] - ref) <= 1e-12 * max(1.0, abs(Ap).max()), (i, d)
    outside = np.abs(np.tril(Ap, -(w + 1)))
    assert outside.max(initial=0.0) <= 1e-12 * abs(Ap).max()


def test_chain_bandwidth_is_constant_and_auto_mode():
    """A pendulum chain's Schur complement has bandwidth 3 at any length (rows renumbered
    by reverse Cuthill-McKee); the automatic mode takes the banded path from 16 rows."""
    for n in (4, 16, 64):
        mech = chain(n)[0]
        assert sparse_plan(mech).w == 3
    assert wants_sparse(mb.SchurCholesky(), chain(8)[0])
    assert not wants_sparse(mb.SchurCholesky(), double_pendulum()[0])
    assert not wants_sparse(mb.SchurCholesky(banded=False), chain(64)[0])
    assert wants_sparse(mb.SchurCholesky(banded=True), double_pendulum()[0])
    assert not wants_sparse(mb.DenseLU(), chain(64)[0])
    assert not wants_sparse(mb.SchurCholesky(banded=True), kitchen_sink()[0])  # user row


@pytest.mark.parametrize("build", [tree, pytest.param(lambda: chain(32), marks=pytest.mark.slow, id="chain32"),  # (~100 s)
                                   double_pendulum])
def test_banded_accelerations_match_dense_lu(build):
    mech, params, q0, v0 = build()
    res = mb.assemble(mech, params, jnp.asarray(q0), jnp.asarray(v0))
    qs, vs = [], []
    rng = np.random.default_rng(3)
    for _ in range(4):  # assembled positions, random consistent velocities
        v = jnp.asarray(rng.standard_normal(np.shape(q0)))
        r = mb.assemble(mech, params, res.q, v)
        qs.append(r.q), vs.append(r.v)
    Q, V = jnp.stack(qs), jnp.stack(vs)
    acc = lambda solver: jax.vmap(lambda q, v: mb.accelerations(
        mech, params, q, v, 0.2, solver=solver, stabilizer=mb.Baumgarte(5.0)))(Q, V)
    a, b = acc(mb.SchurCholesky(banded=True)), acc(mb.DenseLU())
    assert np.all(np.asarray(a.status) == 0)
    np.testing.assert_allclose(a.qdd, b.qdd, rtol=0, atol=1e-10 * float(jnp.max(jnp.abs(b.qdd))))
    np.testing.assert_allclose(a.lam, b.lam, rtol=0, atol=1e-10 * float(jnp.max(jnp.abs(b.lam))))
    np.testing.assert_allclose(a.power, b.power, rtol=1e-9, atol=1e-9)


def test_banded_simulation_matches_dense_and_float32_works():
    mech, params, q0, v0 = chain(16)
    q0, v0 = jnp.asarray(q0), jnp.asarray(v0)
    run = lambda solver, p, q, v: mb.simulate(mech, p, q, v, (0.0, 0.2), 1e-3, solver=solver,
                                              stabilizer=mb.Projection(), save_every=50)
    a = run(mb.SchurCholesky(banded=True), params, q0, v0)
    b = run(mb.SchurCholesky(banded=False), params, q0, v0)
    assert int(a.status) == 0
    np.testing.assert_allclose(a.q, b.q, rtol=0, atol=1e-11)
    np.testing.assert_allclose(a.lam, b.lam, rtol=1e-9, atol=1e-9)
    assert float(jnp.max(a.constraint_error)) < 1e-12
    f32 = lambda x: jnp.asarray(x, jnp.float32)
    c = run(mb.SchurCholesky(banded=True), jax.tree_util.tree_map(f32, params), f32(q0), f32(v0))
    assert c.q.dtype == jnp.float32 and int(c.status) == 0
    np.testing.assert_allclose(c.q, a.q, rtol=0, atol=2e-4)


def test_banded_gradient_matches_dense():
    """Reverse-mode gradient of a rollout through the implicit banded solve."""
    mech, params, q0, v0 = chain(16)
    q0, v0 = jnp.asarray(q0), jnp.asarray(v0)

    def loss(mass, solver):
        p = params.with_body_fields("planar_rigid", mass=mass)
        tr = mb.simulate(mech, p, q0, v0, (0.0, 0.05), 1e-3, solver=solver,
                         stabilizer=mb.Baumgarte(10.0), save_every=50)
        return jnp.sum(tr.q[-1] ** 2) + jnp.sum(tr.lam[-1] ** 2) * 1e-3

    mass0 = params.bodies["planar_rigid"]["mass"]
    ga = jax.grad(loss)(mass0, mb.SchurCholesky(banded=True))
    gb = jax.grad(loss)(mass0, mb.SchurCholesky(banded=False))
    assert float(jnp.max(jnp.abs(gb))) > 1e-3
    np.testing.assert_allclose(ga, gb, rtol=1e-8, atol=1e-10 * float(jnp.max(jnp.abs(gb))))
    # forward mode through the same implicit solve
    fa = jax.jacfwd(loss)(mass0, mb.SchurCholesky(banded=True))
    np.testing.assert_allclose(fa, gb, rtol=1e-8, atol=1e-10 * float(jnp.max(jnp.abs(gb))))


def test_banded_batch_with_batched_params():
    """simulate_batch with a batch of parameter sets (vmapped SparseJacobian values, one
    static plan): each member equals its own dense run."""
    mech, params, q0, v0 = chain(8)
    scale = jnp.asarray([0.8, 1.0, 1.3])
    P = jax.vmap(lambda s: params.with_body_fields("planar_rigid", mass=params.bodies["planar_rigid"]["mass"] * s,
                                      inertia=params.bodies["planar_rigid"]["inertia"] * s))(scale)
    Q0 = jnp.broadcast_to(jnp.asarray(q0), (3, q0.size))
    V0 = jnp.broadcast_to(jnp.asarray(v0), (3, q0.size))
    tr = mb.simulate_batch(mech, P, Q0, V0, (0.0, 0.1), 1e-3, save_every=100,
                           solver=mb.SchurCholesky(banded=True))
    for k in range(3):
        pk = jax.tree_util.tree_map(lambda x: x[k], P)
        ref = mb.simulate(mech, pk, Q0[k], V0[k], (0.0, 0.1), 1e-3, save_every=100,
                          solver=mb.SchurCholesky(banded=False))
        np.testing.assert_allclose(tr.q[k], ref.q, rtol=0, atol=1e-11)
        np.testing.assert_allclose(tr.lam[k], ref.lam, rtol=1e-9, atol=1e-9)


def test_redundant_rows_are_dropped_on_the_banded_path():
    """Two revolutes between the same bodies at the same point: rank-deficient rows. The
    banded factorisation drops the dependent rows (issue 21, as the dense paths do):
    status 0, the accelerations of the chain without the duplicate pin, and the two pins
    together carry that chain's pin force."""
    def build(dup):
        m = mb.Model(gravity=(0.0, -9.81))
        L, a = 0.5, np.deg2rad(-60.0)
        e = np.array([np.cos(a), np.sin(a)])
        for k in range(10):
            m.add_body(f"l{k}", mass=1.0, inertia=L**2 / 12, position=(k + 0.5) * L * e, angle=a,
                       angular_velocity=0.3 * k)
            m.add_revolute(f"j{k}", "ground" if k == 0 else f"l{k - 1}", f"l{k}", at=k * L * e)
        if dup:
            m.add_revolute("dup", "l3", "l4", at=4 * L * e)
        mech, params, q0, _ = m.build()
        s0 = mb.assemble(mech, params, q0, jnp.zeros_like(jnp.asarray(q0)).at[2].set(1.0),
                         fixed=("l0.theta",))
        return mech, params, s0.q, s0.v

    mech, params, q0, v0 = build(True)
    ref_mech, ref_params, _, _ = build(False)
    ref = mb.accelerations(ref_mech, ref_params, q0, v0, 0.0, solver=mb.SchurCholesky(banded=False))
    for banded in (True, False):
        acc = mb.accelerations(mech, params, q0, v0, 0.0, solver=mb.SchurCholesky(banded=banded))
        assert int(acc.status) == 0
        np.testing.assert_allclose(acc.qdd, ref.qdd, rtol=0, atol=1e-9)
        pins = np.asarray(acc.lam)[list(mech.joint("j4").rows)] + np.asarray(acc.lam)[list(mech.joint("dup").rows)]
        np.testing.assert_allclose(pins, np.asarray(ref.lam)[list(ref_mech.joint("j4").rows)], atol=1e-9)


def test_uncovered_rows_fall_back_to_dense():
    """A user constraint row is not covered by the sparse plan: banded=True then solves
    densely, with the same result as banded=False."""
    mech, params, q0, _ = kitchen_sink()
    assert sparse_plan(mech) is None
    s = mb.constraint_terms(mech, params, jnp.asarray(q0), jnp.zeros_like(jnp.asarray(q0)), 0.0,
                            sparse=True)
    assert isinstance(s.jac, jax.Array)
