"""Registry-driven conformance of every registered family (planar and spatial).

For every constraint family: its analytic Jacobian blocks (velocity space) against
autodiff of its rows through the node family's update map q (+) dv, and its quad term
(gamma = -quad) against the second derivative of the rows along the motion
q(tau) = q (+) tau v (zero acceleration); nonholonomic families: A(q) against the
velocity derivative of their rows and quad against d/dtau of A(q(tau)) v.
For every force family: conservative forces against -grad V (through the update map),
and the power balance Q . V + dV/dtau = P. For every node family: qdot and dq/dv
against derivatives of the update map. For every body family: the mass part's apply,
solve, dense, inverse and per-frame inverse agree, gravity is -grad V, and the
quadratic-velocity forces satisfy v . Q_v = -v^T Mdot v / 2 (energy consistency).

Every family provides random valid instances through its `sample(rng, k)` (by default
each field from `jaxmbs.core.sampling` by its name): a field with no sampler fails here,
naming the field and where to add one.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmbs  # noqa: F401  (registers the planar and spatial families)
from jaxmbs import profiles
from jaxmbs.core import families as F

K = 4  # instances per family


def _unit(rng, d):
    x = rng.normal(size=(K, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _vec(rng, d, scale=0.5):
    return rng.normal(size=(K, d)) * scale


def _pos(rng, lo=0.5, hi=2.0):
    return rng.uniform(lo, hi, size=K)


def _params(fam, rng):
    """K random instances of a family's Params (its `sample`), as jax arrays."""
    return {k: jnp.asarray(v) for k, v in fam.sample(rng, K).items()}


def _frames(kind, rng, n=K):
    """Random frame coordinates X (n, wq) and velocities V (n, wv) of a frame kind (a view
    kind: each source frame's entries sampled as that kind's)."""
    fk = F.frame_kind(kind)
    # a kind that node families present directly (planar, 'ffr2d': every entry a
    # coordinate) is sampled whole even when it also views other kinds
    presented = any(F.node_family(nm).frame == kind and F.node_family(nm).nq == fk.wq
                    for nm in F.registered("node"))
    if fk.views and not presented:
        X, V = np.zeros((n, fk.wq)), np.zeros((n, fk.wv))
        for src, qe, ve in _view_groups(fk):
            Xs, Vs = _frames(src, rng, n)
            X[:, qe], V[:, ve] = np.asarray(Xs), np.asarray(Vs)
        return jnp.asarray(X), jnp.asarray(V)
    if kind != "spatial":  # vector coordinates: planar (x, y, theta), ANCF (r, r_x), ...
        return jnp.asarray(rng.normal(size=(n, fk.wq))), jnp.asarray(rng.normal(size=(n, fk.wv)))
    q = rng.normal(size=(n, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    X = np.concatenate([rng.normal(size=(n, 3)), q], 1)
    assert X.shape[1] == fk.wq
    return jnp.asarray(X), jnp.asarray(rng.normal(size=(n, fk.wv)))


def _view_groups(fk):
    """[(source kind, q entries, v entries)]: one group per source frame (kind, offset) of
    a view kind, each a whole frame of that kind in its order."""
    out = []
    for src, specs in fk.views.items():
        vspecs = fk.vviews.get(src, specs)
        for off in sorted({s[0] for s in specs if s is not None}):
            qe = [e for e, s in enumerate(specs) if s is not None and s[0] == off]
            ve = [e for e, s in enumerate(vspecs) if s is not None and s[0] == off]
            sk = F.frame_kind(src)
            assert [specs[e][1] for e in qe] == list(range(sk.wq)), (fk.name, src, off)
            assert [vspecs[e][1] for e in ve] == list(range(sk.wv)), (fk.name, src, off)
            out.append((src, qe, ve))
    return out


def _node_for(kind):
    """The rigid node family presenting frames of this kind (its update map), else the
    first node family presenting it (an ANCF node: position and slope); for a view kind
    (rigid body <-> beam element) the composition of its sources' update maps."""
    fams = [F.node_family(n) for n in F.registered("node")]
    fk = F.frame_kind(kind)
    # a node family presenting the whole frame (an FFR body with all MAX_MODES modes)
    for nf in sorted((f for f in fams if f.frame == kind),
                     key=lambda f: (f.nq != fk.wq, not f.rigid)):
        return nf
    fk = F.frame_kind(kind)
    if fk.views:
        return _ViewNode(fk)
    raise AssertionError(f"no rigid node family for frame kind {kind}")


class _ViewNode(F.NodeFamily):
    """The update map of a view frame kind: each source frame's entries retracted by the
    node family presenting that source kind."""

    def __init__(self, fk):
        self.nq, self.nv = fk.wq, fk.wv
        self.groups = [(_node_for(src), qe, ve) for src, qe, ve in _view_groups(fk)]

    def retract(self, q, dv):
        out = q
        for nf, qe, ve in self.groups:
            out = out.at[..., jnp.asarray(qe)].set(nf.retract(q[..., jnp.asarray(qe)], dv[..., jnp.asarray(ve)]))
        return out


def _jac_v(fn, X, nf):
    """d fn(X (+) dv) / d dv at dv = 0, per instance: (K, rows, wv)."""
    def one(x):
        return jax.jacfwd(lambda dv: fn(nf.retract(x[None], dv[None])[0]))(jnp.zeros(nf.nv, x.dtype))
    return jax.vmap(one)(X)


CONSTRAINTS = [n for n in F.registered("constraint") if not F.constraint_family(n).extra]


@pytest.mark.parametrize("name", CONSTRAINTS)
def test_constraint_family_jacobian_and_gamma(name):
    fam = F.constraint_family(name)
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    nf = _node_for(fam.frame)
    p = _params(fam, rng)
    Xi, Vi = _frames(fam.frame, rng)
    Xj, Vj = _frames(fam.frame, rng)
    g, Gi, Gj, quad = fam.evaluate(p, Xi, Xj, Vi, Vj)
    assert g.shape == (K, fam.rows) and Gi.shape == (K, fam.rows, nf.nv)

    def rows_at(xi, xj, vi=Vi, vj=Vj):
        # one instance evaluated through the family's vectorised kernel: rows (r,)
        out = fam.evaluate(p, xi, xj, vi, vj)
        return out[0]

    if fam.nonholonomic:
        # A(q) v: the rows' velocity form; A against the derivative in v, quad against
        # d/dtau A(q(tau)) v along q(tau) = q (+) tau v
        av = lambda xi, xj, vi, vj: jnp.sum(fam.evaluate(p, xi, xj, vi, vj)[1] * vi[:, None], -1) \
            + jnp.sum(fam.evaluate(p, xi, xj, vi, vj)[2] * vj[:, None], -1)
        Ai = jax.jacfwd(lambda vi: av(Xi, Xj, vi, Vj))(Vi)
        Ai = jnp.stack([Ai[k, :, k] for k in range(K)])
        np.testing.assert_allclose(Ai, Gi, atol=1e-12)
        tau_path = lambda tau: av(nf.retract(Xi, tau * Vi), nf.retract(Xj, tau * Vj), Vi, Vj)
        dquad = jax.jvp(tau_path, (0.0,), (1.0,))[1]
        np.testing.assert_allclose(quad, dquad, rtol=1e-10, atol=1e-10)
        return

    # Jacobian blocks against autodiff through the update map, instance by instance
    Ji = jnp.stack([_jac_v(lambda x, k=k: rows_at(Xi.at[k].set(x), Xj)[k], Xi[k:k + 1], nf)[0]
                    for k in range(K)])
    Jj = jnp.stack([_jac_v(lambda x, k=k: rows_at(Xi, Xj.at[k].set(x))[k], Xj[k:k + 1], nf)[0]
                    for k in range(K)])
    np.testing.assert_allclose(Gi, Ji, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Gj, Jj, rtol=1e-12, atol=1e-12)
    # quad = second derivative of the rows along q (+) tau v (zero acceleration)
    path = lambda tau: rows_at(nf.retract(Xi, tau * Vi), nf.retract(Xj, tau * Vj))
    d1 = lambda tau: jax.jvp(path, (tau,), (1.0,))[1]
    d2 = jax.jvp(d1, (0.0,), (1.0,))[1]
    np.testing.assert_allclose(quad, d2, rtol=1e-10, atol=1e-10)


EXTRA = [n for n in F.registered("constraint") if F.constraint_family(n).extra]


@pytest.mark.parametrize("name", EXTRA)
def test_extra_coordinate_family_jacobian_and_gamma(name):
    """Families with extra scalar coordinates S (one block Gs of the Jacobian per
    instance): Gi, Gj and Gs against autodiff of the rows through the update map and in
    S, quad against the second derivative along (q (+) tau v, S + tau Sd). A family
    provides `sample_static(k)` for its static data; the planar cam (curve codes, tested
    in tests/test_cam.py) is the one exception."""
    fam = F.constraint_family(name)
    if not hasattr(fam, "sample_static"):
        assert name == "cam", f"family {name!r}: add sample_static(k) for this test"
        pytest.skip("the cam's curves are tested in tests/test_cam.py")
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    nf = _node_for(fam.frame)
    p = _params(fam, rng)
    static = fam.sample_static(K)
    Xi, Vi = _frames(fam.frame, rng)
    Xj, Vj = _frames(fam.frame, rng)
    # a family that reads further coordinates besides its extra ones (a beam slider: the
    # beam's nodes) says how many per instance
    e = fam.extra_width(static) if hasattr(fam, "extra_width") else fam.extra
    S = jnp.asarray(rng.normal(size=(K, e)))
    Sd = jnp.asarray(rng.normal(size=(K, e)))
    g, Gi, Gj, quad, Gs = fam.evaluate(p, Xi, Xj, Vi, Vj, S, Sd, static)
    assert g.shape == (K, fam.rows) and Gs.shape == (K, fam.rows, e)
    rows = lambda xi, xj, ss: fam.evaluate(p, xi, xj, Vi, Vj, ss, Sd, static)[0]
    Ji = jnp.stack([_jac_v(lambda x, k=k: rows(Xi.at[k].set(x), Xj, S)[k], Xi[k:k + 1], nf)[0]
                    for k in range(K)])
    Jj = jnp.stack([_jac_v(lambda x, k=k: rows(Xi, Xj.at[k].set(x), S)[k], Xj[k:k + 1], nf)[0]
                    for k in range(K)])
    Js = jnp.stack([jax.jacfwd(lambda s, k=k: rows(Xi, Xj, S.at[k].set(s))[k])(S[k])
                    for k in range(K)])
    np.testing.assert_allclose(Gi, Ji, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Gj, Jj, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Gs, Js, rtol=1e-12, atol=1e-12)
    path = lambda tau: rows(nf.retract(Xi, tau * Vi), nf.retract(Xj, tau * Vj), S + tau * Sd)
    d1 = lambda tau: jax.jvp(path, (tau,), (1.0,))[1]
    d2 = jax.jvp(d1, (0.0,), (1.0,))[1]
    np.testing.assert_allclose(quad, d2, rtol=1e-10, atol=1e-10)


def test_joint_actuator_against_autodiff_of_its_joint_coordinate():
    """joint_actuator: Q = gear F dx/dv with x the joint coordinate (atan2 angle or
    displacement, autodiff through the update map) and F written out here in NumPy."""
    fam = F.force_family("joint_actuator")
    rng = np.random.default_rng(21)
    nf = _node_for("spatial")
    p = _params(fam, rng)
    (Xi, Xj, Vi, Vj), kw = _force_args(fam, rng, p)
    Qi, Qj, _, _, info = _eval_force(fam, p, (Xi, Xj, Vi, Vj), kw)
    ctrl, kinds = kw["static"]
    P = {k: np.asarray(v) for k, v in p.items()}
    from jaxmbs.spatial.geometry import quat_to_R

    def coord(xi, xj, k):
        Ri, Rj = quat_to_R(xi[3:7]), quat_to_R(xj[3:7])
        if kinds[k] == "hinge":
            fj = Rj @ p["f_j"][k]
            return jnp.arctan2((Ri @ p["g_i"][k]) @ fj, (Ri @ p["f_i"][k]) @ fj)
        d = xj[:3] + Rj @ p["point_j"][k] - xi[:3] - Ri @ p["point_i"][k]
        return (Ri @ p["a_i"][k]) @ d

    u = np.asarray(kw["u"])
    for k in range(K):
        gi = jax.grad(lambda dv: coord(nf.retract(Xi[k:k + 1], dv[None])[0], Xj[k], k))(jnp.zeros(6))
        gj = jax.grad(lambda dv: coord(Xi[k], nf.retract(Xj[k:k + 1], dv[None])[0], k))(jnp.zeros(6))
        x = float(coord(Xi[k], Xj[k], k))
        xd = float(gi @ Vi[k] + gj @ Vj[k])
        gear = P["gear"][k]
        L, Ld = gear * (x + P["offset"][k]), gear * xd
        uc = np.clip(u[ctrl[k]] if ctrl[k] >= 0 else 0.0, *P["ctrlrange"][k])
        g, b = P["gain"][k], P["bias"][k]
        F_ = np.clip((g[0] + g[1] * L + g[2] * Ld) * uc + b[0] + b[1] * L + b[2] * Ld,
                     *P["forcerange"][k])
        np.testing.assert_allclose(info["force"][k], F_, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(Qi[k], gear * F_ * np.asarray(gi), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(Qj[k], gear * F_ * np.asarray(gj), rtol=1e-10, atol=1e-12)
    # some instances clip (control or force) and some do not: the test sees both branches
    assert len({bool(abs(info["force"][k]) in np.abs(P["forcerange"][k])) for k in range(K)}) == 2


def test_custom_time_driver_rows_against_autodiff_in_time():
    """rot_driver: phi_t and gamma of sin(theta - f(t)) against autodiff in t and tau."""
    fam = F.constraint_family("rot_driver")
    rng = np.random.default_rng(7)
    nf = _node_for(fam.frame)
    p = _params(fam, rng)
    Xi, Vi = _frames("spatial", rng)
    Xj, Vj = _frames("spatial", rng)
    t = 0.37

    def rows(tau, tt):
        f, fd, fdd = profiles.evaluate(p, tt)
        return fam.evaluate_driven(p, nf.retract(Xi, tau * Vi), nf.retract(Xj, tau * Vj),
                                   Vi, Vj, f, fd, fdd)[0][:, 0]

    f, fd, fdd = profiles.evaluate(p, jnp.asarray(t))
    phi, Gi, Gj, phit, gamma = fam.evaluate_driven(p, Xi, Xj, Vi, Vj, f, fd, fdd)
    np.testing.assert_allclose(phit[:, 0], jax.jacfwd(lambda tt: rows(0.0, tt))(t), rtol=1e-10,
                               atol=1e-12)
    # total second derivative along (tau, t) = (s, t + s) at zero acceleration
    path = lambda s: rows(s, t + s)
    d1 = lambda s: jax.jvp(path, (s,), (1.0,))[1]
    d2 = jax.jvp(d1, (0.0,), (1.0,))[1]
    np.testing.assert_allclose(-gamma[:, 0], d2, rtol=1e-10, atol=1e-10)


FORCES = list(F.registered("force"))
# (family, field) values that make a family conservative at rest (no explicit time
# dependence): the rotating frame at constant omega
CONSERVATIVE_SETUP = {"rotating_frame": {"amp": 0.0, "coef": [1.3, 0, 0, 0, 0, 0]}}
# non-conservative: no potential, power P = Q . v (the follower force and torque on a
# beam: tests/test_flexible_follower.py checks them against autodiff of the virtual work;
# the cable's tangential follower force: tests/test_ancf3d.py)
NO_POTENTIAL = {"load", "load3", "joint_actuator", "joint_limit", "beam_follower",
                "beam3d_follower"}
# actuator fields (constant force / torque: not conservative) zeroed for the gradient check
ACTUATOR_OFF = {"spring": {"force": 0.0}, "torsion": {"torque": 0.0},
                "spring3": {"force": 0.0}, "torsion3": {"torque": 0.0},
                "axial3": {"force": 0.0}}  # applied loads: no potential, power = Q . V


def _force_args(fam, rng, p, t=0.3):
    Xi, Vi = _frames(fam.frame, rng)
    Xj, Vj = _frames(fam.frame, rng)
    kw = {}
    if fam.needs_inertia:
        if fam.frame == "planar":
            kw = dict(mj=jnp.asarray(_pos(rng)), Jj=jnp.asarray(_pos(rng, 0.1, 0.3)),
                      cgj=jnp.asarray(_vec(rng, 2)))
        else:
            kw = dict(mj=jnp.asarray(_pos(rng)), Jj=jnp.asarray(np.tile(np.eye(3), (K, 1, 1))),
                      cgj=jnp.asarray(_vec(rng, 3)))
    static = ()
    fns = ()
    if fam.name in ("load", "load3"):
        static = ((-1,) * K, (False, True) * (K // 2)) + (((True, False) * (K // 2),) if fam.name == "load3" else ())
    if fam.name == "joint_actuator":  # hinge and slide instances, with and without controls
        static = ((0, -1, 1, -1)[:K], ("hinge", "slide") * (K // 2))
    if fam.name != "joint_actuator" and hasattr(fam, "sample_static"):  # e.g. joint_limit
        static = fam.sample_static(K)
    if fam.name == "circle_profile":
        fns = tuple((k, lambda x: 0.2 * jnp.sin(x) + 0.05 * x * x) for k in range(K))
    if fam.uses_controls:
        kw["u"] = jnp.asarray(rng.normal(size=2))
    return (Xi, Xj, Vi, Vj), dict(t=jnp.asarray(t), fns=fns, static=static, **kw)


def _eval_force(fam, p, X4, kw):
    Xi, Xj, Vi, Vj = X4
    return fam.evaluate(p, F.ForceArgs(Xi, Xj, Vi, Vj, kw["t"], kw.get("mj"), kw.get("Jj"),
                                       kw.get("cgj"), kw["fns"], kw.get("u"), kw["static"]))


@pytest.mark.parametrize("name", FORCES)
def test_force_family_gradient_and_power(name):
    fam = F.force_family(name)
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    nf = _node_for(fam.frame)
    p = _params(fam, rng)
    for f, val in CONSERVATIVE_SETUP.get(name, {}).items():
        p[f] = jnp.broadcast_to(jnp.asarray(val, float), p[f].shape)
    (Xi, Xj, Vi, Vj), kw = _force_args(fam, rng, p)
    Qi, Qj, V, P, _ = _eval_force(fam, p, (Xi, Xj, Vi, Vj), kw)
    assert Qi.shape == (K, nf.nv) and V.shape == (K,) and P.shape == (K,)
    # power balance along q(tau) = q (+) tau V at fixed t: Q . V + dV/dtau = P
    Vpath = lambda tau: _eval_force(fam, p, (nf.retract(Xi, tau * Vi), nf.retract(Xj, tau * Vj),
                                             Vi, Vj), kw)[2]
    dV = jax.jvp(Vpath, (0.0,), (1.0,))[1]
    lhs = jnp.sum(Qi * Vi, -1) + jnp.sum(Qj * Vj, -1) + dV
    np.testing.assert_allclose(lhs, P, rtol=1e-9, atol=1e-9)
    if name in NO_POTENTIAL:
        return
    # at rest and without actuator parts the forces are conservative: Q = -dV/dv through
    # the update map
    for f, val in ACTUATOR_OFF.get(name, {}).items():
        p[f] = jnp.zeros_like(p[f]) + val
    Z = jnp.zeros_like(Vi)
    Qi0, Qj0, _, _, _ = _eval_force(fam, p, (Xi, Xj, Z, jnp.zeros_like(Vj)), kw)
    for k in range(K):
        gi = jax.grad(lambda dv: _eval_force(fam, p, (Xi.at[k].set(nf.retract(Xi[k:k + 1], dv[None])[0]),
                                                      Xj, Z, jnp.zeros_like(Vj)), kw)[2][k])(
            jnp.zeros(nf.nv))
        gj = jax.grad(lambda dv: _eval_force(fam, p, (Xi, Xj.at[k].set(nf.retract(Xj[k:k + 1], dv[None])[0]),
                                                      Z, jnp.zeros_like(Vj)), kw)[2][k])(
            jnp.zeros(nf.nv))
        np.testing.assert_allclose(Qi0[k], -gi, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(Qj0[k], -gj, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("name", list(F.registered("node")))
def test_node_family_maps(name):
    nf = F.node_family(name)
    rng = np.random.default_rng(3)
    if nf.rigid and nf.frame == "spatial":
        q = np.concatenate([rng.normal(size=(K, 3)), _unit(rng, 4)], 1)
    else:
        q = rng.normal(size=(K, nf.nq))
    q, v = jnp.asarray(q), jnp.asarray(rng.normal(size=(K, nf.nv)))
    # qdot = d/dtau (q (+) tau v) at 0
    dq = jax.jvp(lambda tau: nf.retract(q, tau * v), (0.0,), (1.0,))[1]
    np.testing.assert_allclose(nf.qdot(q, v), dq, rtol=1e-13, atol=1e-14)
    J = jnp.stack([jax.jacfwd(lambda dv: nf.retract(q[k:k + 1], dv[None])[0])(jnp.zeros(nf.nv))
                   for k in range(K)])
    np.testing.assert_allclose(nf.dq_dv(q), J, rtol=1e-13, atol=1e-14)
    qn = nf.normalize(q + 0.01)
    np.testing.assert_allclose(nf.normalize(qn), qn, rtol=1e-14, atol=1e-15)
    assert len(nf.coord_names) == nf.nq and len(nf.vel_names) == nf.nv


def _body_params(bf, rng):
    return _params(bf, rng)


@pytest.mark.parametrize("name", list(F.registered("body")))
def test_body_family_mass_and_loads(name):
    bf = F.body_family(name)
    nf = F.node_family(bf.node)
    rng = np.random.default_rng(11)
    p = _body_params(bf, rng)
    if nf.frame == "spatial" and nf.rigid:
        X = jnp.asarray(np.concatenate([rng.normal(size=(K, 3)), _unit(rng, 4)], 1))
    else:
        X = jnp.asarray(rng.normal(size=(K, nf.nq)))
    V = jnp.asarray(rng.normal(size=(K, nf.nv)))
    part = bf.mass_part(p, X)
    n = K * nf.nv
    D = np.asarray(part.dense())
    assert np.allclose(D, D.T, atol=1e-13) and np.all(np.linalg.eigvalsh(D) > 0)
    x = jnp.asarray(rng.normal(size=(n, 2)))
    np.testing.assert_allclose(part.apply(x), D @ np.asarray(x), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(part.solve(x), np.linalg.solve(D, x), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(part.inverse_dense(), np.linalg.inv(D), rtol=1e-10, atol=1e-12)
    # per-frame inverse (banded path): rows on instances (padding -1 gives 0)
    idx = np.array([2, 0, -1, 3])
    rows = jnp.asarray(rng.normal(size=(4, nf.nv)))
    fi = part.frame_inverse(idx, rows)
    Dinv = np.linalg.inv(D)
    for r, k in enumerate(idx):
        want = np.zeros(nf.nv) if k < 0 else Dinv[k * nf.nv:(k + 1) * nf.nv, k * nf.nv:(k + 1) * nf.nv] @ np.asarray(rows[r])
        np.testing.assert_allclose(fi[r][: nf.nv], want, rtol=1e-10, atol=1e-12)
    # gravity and elastic forces: conservative (Q at rest = -dV/dv of the block's total
    # potential; per instance for bodies on one node, and for beam elements, whose
    # strain energy couples consecutive nodes), and the velocity terms do no work
    g = jnp.asarray(rng.normal(size=(F.frame_kind(nf.frame).dim if nf.frame else 3,)))
    Q0, V0 = bf.loads(p, X, jnp.zeros_like(V), g)
    grad = jax.grad(lambda dv: jnp.sum(bf.loads(p, nf.retract(X, dv), jnp.zeros_like(V), g)[1]))(
        jnp.zeros((K, nf.nv)))
    np.testing.assert_allclose(Q0, -grad, rtol=1e-10, atol=1e-12)
    # velocity terms: energy consistency v . Q_v = -(1/2) v^T (dM/dtau) v along q (+) tau v
    # (so that dT/dt = v . Q_applied), per instance
    # (the velocity part: loads at V minus loads at rest, which removes elastic forces)
    Qv = bf.loads(p, X, V, jnp.zeros_like(g))[0] - bf.loads(p, X, jnp.zeros_like(V), jnp.zeros_like(g))[0]
    vflat = V.reshape(-1)
    Mdot = jax.jvp(lambda tau: bf.mass_part(p, nf.retract(X, tau * V)).dense(), (0.0,), (1.0,))[1]
    for k in range(K):
        sl = slice(k * nf.nv, (k + 1) * nf.nv)
        want = -0.5 * vflat[sl] @ Mdot[sl, sl] @ vflat[sl]
        np.testing.assert_allclose(jnp.sum(Qv[k] * V[k]), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", [n for n in F.registered("body") if "cg" in F.body_family(n).fields])
def test_body_family_offset_cg_matches_newton_euler_at_the_cg(name):
    """The same free body described about an offset reference point and about its CG
    (cg = 0) must move alike: equal angular accelerations and equal CG accelerations,
    with gravity. Independent of the family's formulas except through the frame kind's
    point kinematics."""
    bf = F.body_family(name)
    nf = F.node_family(bf.node)
    fk = F.frame_kind(nf.frame)
    rng = np.random.default_rng(5)
    p = _body_params(bf, rng)
    if nf.frame == "spatial":
        X = jnp.asarray(np.concatenate([rng.normal(size=(K, 3)), _unit(rng, 4)], 1))
    else:
        X = jnp.asarray(rng.normal(size=(K, nf.nq)))
    V = jnp.asarray(rng.normal(size=(K, nf.nv)))
    d = fk.dim
    g = jnp.asarray(rng.normal(size=(d,)))

    def vdot(pp, XX, VV):
        Q, _ = bf.loads(pp, XX, VV, g)
        return bf.mass_part(pp, XX).solve(Q.reshape(-1)).reshape(K, nf.nv)

    a = vdot(p, X, V)
    # the CG body: reference point at the CG, same orientation, CG velocity
    c = p["cg"]
    PG, Ac = fk.point(X, c)
    vG = fk.point_velocity(X, V, Ac)
    XG = X.at[:, :d].set(PG)
    VG = V.at[:, :d].set(vG)
    aG_ref = vdot({**p, "cg": jnp.zeros_like(c)}, XG, VG)
    # CG acceleration of the offset description: d/dtau of the CG velocity along
    # X(tau) = X (+) tau V, V(tau) = V + tau a
    cg_vel = lambda tau: fk.point_velocity(nf.retract(X, tau * V), V + tau * a,
                                           fk.point(nf.retract(X, tau * V), c)[1])
    aG = jax.jvp(cg_vel, (0.0,), (1.0,))[1]
    np.testing.assert_allclose(a[:, d:], aG_ref[:, d:], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(aG, aG_ref[:, :d], rtol=1e-10, atol=1e-10)


def test_the_core_imports_no_dimension_package():
    """The dimension-free core never imports jaxmbs.planar, jaxmbs.spatial or
    jaxmbs.flexible (they register their families with it): every module of core/,
    formulations/, integrators/, batch/ and linear/, and simulation.py, analysis.py,
    envs/core.py, envs/spaces.py, checked on the source, statically (relative imports
    resolved), lazy imports inside functions included."""
    import ast
    from pathlib import Path

    root = Path(jaxmbs.__file__).parent
    files = [p for d in ("core", "formulations", "integrators", "batch", "linear")
             for p in sorted((root / d).rglob("*.py"))]
    files += [root / f for f in ("simulation.py", "analysis.py", "envs/core.py", "envs/spaces.py")]
    assert len(files) > 30
    bad = []
    for path in files:
        rel = path.relative_to(root.parent).with_suffix("")
        package = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
        for node in ast.walk(ast.parse(path.read_text())):
            mods = []
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[:len(package) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                mods = [target] + [f"{target}.{a.name}" for a in node.names]
            bad += [f"{rel}: {m}" for m in mods
                    if m.startswith("jaxmbs.") and m.split(".")[1] in ("planar", "spatial", "flexible")]
    assert not bad, bad


def test_a_field_with_no_sampler_is_named():
    """A family field that `sample` cannot draw fails naming the family, the field and
    where to add a sampler."""

    class Wobbly(F.ConstraintFamily):
        name, rows, frame, fields = "wobbly", 1, "planar", ("point_i", "wobble")

    with pytest.raises(KeyError, match=r"'wobbly'.*'wobble'.*FIELD_SAMPLERS"):
        Wobbly().sample(np.random.default_rng(0), K)
    shaped = type("Shaped", (Wobbly,), {"field_shapes": {"wobble": (2, 3)}})()
    assert shaped.sample(np.random.default_rng(0), K)["wobble"].shape == (K, 2, 3)
