"""LQR balancing of the cart-pole environment's mechanism: linearised about the upright, an LQR gain from it, and the closed loop run from 1000 perturbed starts in one batch.

`jaxmbs.linearize` gives the linear model of the `cartpole_continuous` environment's
mechanism (cart on a prismatic joint, pole on a revolute joint, 6 redundant coordinates,
4 constraint rows) about the upright, in the independent coordinates cart x and pole
angle (named; the automatic choice would take the pole's x, equal to the cart's) with B the response to the push force (control input 0, N). It is checked
against the closed-form linearisation of the cart-pole (uniform pole of mass m and
half-length l on a cart of mass M: (M + m) x'' - m l theta'' = F,
-m l x'' + (4/3) m l^2 theta'' - m g l theta = 0). The LQR gain K minimises
int (x^T Q x + R F^2) dt: from SciPy's continuous algebraic Riccati solver when SciPy is
installed, otherwise from the stable invariant subspace of the Hamiltonian matrix (a few
lines of NumPy). The closed loop F = -K x, clipped to the environment's +-10 N, runs in
the environment itself (RK4, dt = 0.02 s, zero-order hold) from 1000 random starts
(uniform in +-x0, +-xdot0, +-theta0, +-thetadot0), all in one vmapped `lax.scan`; a start
counts as stabilised when the episode never terminates (|x| <= 2.4 m, |theta| <= 12 deg)
and ends within 1 cm and 0.01 rad of the upright.

Printed (--json, one line): coordinates, A, B (the linear model), linearization_error
(max rel. difference from the closed form), gain K (N per unit of the state: x, theta,
xdot, thetadot), closed_loop_eigenvalues ([re, im] pairs), fraction_stabilized,
fraction_saturated (starts whose force reached the limit), n_starts, seconds (the
batch run) and compile_seconds.

    python examples/lqr_cartpole.py [--n 1000] [--steps 500] [--json] [--plot fig.png]
"""
from __future__ import annotations

import argparse
import json
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import jaxmbs  # noqa: E402
from jaxmbs import envs  # noqa: E402
from jaxmbs.envs.core import EnvState  # noqa: E402

ORDER = ("cart.x", "pole.theta", "cart.x_dot", "pole.theta_dot")  # the linear model's state


def closed_form(M=1.0, m=0.1, l=0.5, g=9.8):
    """(A, B) of the cart-pole about the upright, state (x, theta, xdot, thetadot)."""
    Mm = np.array([[M + m, -m * l], [-m * l, m * l * l / 3 + m * l * l]])
    K = np.array([[0.0, 0.0], [0.0, -m * g * l]])
    Mi = np.linalg.inv(Mm)
    A = np.block([[np.zeros((2, 2)), np.eye(2)], [-Mi @ K, np.zeros((2, 2))]])
    B = np.concatenate([np.zeros(2), Mi @ np.array([1.0, 0.0])])[:, None]
    return A, B


def care(A, B, Q, R):
    """Solution P of A^T P + P A - P B R^-1 B^T P + Q = 0 (SciPy if available, else the
    stable invariant subspace of the Hamiltonian matrix)."""
    try:
        from scipy.linalg import solve_continuous_are
        return solve_continuous_are(A, B, Q, R)
    except ImportError:
        n = A.shape[0]
        H = np.block([[A, -B @ np.linalg.solve(R, B.T)], [-Q, -A.T]])
        w, V = np.linalg.eig(H)
        U = V[:, w.real < 0]
        return np.real(U[n:] @ np.linalg.inv(U[:n]))


def linear_model():
    env = envs.make("cartpole_continuous")
    mech, params = env.mechanism, env.default_params.mech
    q = jnp.zeros(mech.n_coords)  # upright: theta = 0, cart at x = 0
    lin = jaxmbs.linearize(mech, params, q, jnp.zeros(mech.n_vel), u=jnp.zeros(1),
                           coordinates=("cart.x", "pole.theta"))
    perm = [lin.index(n) for n in ORDER]
    A = np.asarray(lin.A)[np.ix_(perm, perm)]
    B = np.asarray(lin.B)[perm]
    return env, lin, A, B


def closed_loop(env, K, starts, steps):
    """Run the environment from each start (rows x, xdot, theta, thetadot) with
    F = clip(-K x, +-max_force): (alive (n,), final obs (n, 4), saturated (n,), theta
    (n, steps) for plotting, compile seconds, run seconds)."""
    params = env.default_params
    fmax = params.task["max_force"]
    Kj = jnp.asarray(K)

    def one(s0):
        q, v = env._state_from(*s0)
        state = EnvState(q, v, jnp.zeros(()), jnp.zeros((), jnp.int32), {})
        obs0 = env._observe(state, params)

        def body(carry, _):
            state, obs, alive, sat = carry
            x = jnp.stack([obs[0], obs[2], obs[1], obs[3]])  # (x, theta, xdot, thetadot)
            force = -Kj @ x
            action = jnp.clip(force / fmax, -1.0, 1.0)
            obs, state, _, term, _, _ = env.step_env(jax.random.PRNGKey(0), state, action, params)
            return (state, obs, alive & ~term, sat | (jnp.abs(force) >= fmax)), obs[2]

        (state, obs, alive, sat), theta = jax.lax.scan(
            body, (state, obs0, jnp.ones((), bool), jnp.zeros((), bool)), None, length=steps)
        return alive, obs, sat, theta

    t0 = time.perf_counter()
    run = jax.jit(jax.vmap(one)).lower(starts).compile()
    t1 = time.perf_counter()
    alive, obs, sat, theta = jax.block_until_ready(run(starts))
    t2 = time.perf_counter()
    return (np.asarray(alive), np.asarray(obs), np.asarray(sat), np.asarray(theta),
            t1 - t0, t2 - t1)


def run(n, steps, ranges, seed=0):
    env, lin, A, B = linear_model()
    A_ref, B_ref = closed_form()
    err = max(np.max(np.abs(A - A_ref)) / np.max(np.abs(A_ref)), np.max(np.abs(B - B_ref)) / np.max(np.abs(B_ref)))
    Q = np.diag([1.0, 10.0, 1.0, 1.0])
    R = np.array([[0.1]])
    P = care(A, B, Q, R)
    K = np.linalg.solve(R, B.T @ P)[0]  # F = -K x
    cl = np.linalg.eigvals(A - B @ K[None, :])
    rng = np.random.default_rng(seed)
    starts = rng.uniform(-1.0, 1.0, (n, 4)) * np.asarray(ranges)  # x, xdot, theta, thetadot
    alive, obs, sat, theta, compile_s, seconds = closed_loop(env, K, jnp.asarray(starts), steps)
    ok = alive & (np.abs(obs[:, 0]) < 0.01) & (np.abs(obs[:, 2]) < 0.01)
    return dict(env=env, lin=lin, A=A, B=B, err=err, K=K, cl=cl, starts=starts, ok=ok, sat=sat,
                theta=theta, seconds=seconds, compile_seconds=compile_s)


def plot(path, r, dt):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(12, 4.5))
    t = dt * np.arange(1, r["theta"].shape[1] + 1)
    for i in range(min(40, len(r["ok"]))):
        ax[0].plot(t, r["theta"][i], color="C0" if r["ok"][i] else "C3", lw=0.7)
    ax[0].set(xlabel="t (s)", ylabel="pole angle (rad)", ylim=(-0.3, 0.3),
              title="closed loop, 40 of the starts (red: not stabilised)")
    s = r["starts"]
    ax[1].scatter(s[:, 2], s[:, 3], c=np.where(r["ok"], "C0", "C3"), s=6)
    ax[1].set(xlabel="initial theta (rad)", ylabel="initial theta_dot (rad/s)",
              title=f"stabilised: {100 * r['ok'].mean():.1f} % of {len(r['ok'])} starts")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].strip())
    ap.add_argument("--n", type=int, default=1000, help="number of perturbed starts")
    ap.add_argument("--steps", type=int, default=500, help="control steps of 0.02 s per run")
    ap.add_argument("--x0", type=float, default=1.0, help="initial cart position range +-, m")
    ap.add_argument("--xdot0", type=float, default=1.0, help="initial cart velocity range +-, m/s")
    ap.add_argument("--theta0", type=float, default=0.2, help="initial pole angle range +-, rad")
    ap.add_argument("--thetadot0", type=float, default=1.0, help="initial pole rate range +-, rad/s")
    ap.add_argument("--json", action="store_true", help="print a one-line JSON summary")
    ap.add_argument("--plot", metavar="PATH", help="write the figure to this file (png)")
    a = ap.parse_args(argv)
    r = run(a.n, a.steps, (a.x0, a.xdot0, a.theta0, a.thetadot0))
    out = {
        "coordinates": list(ORDER),
        "A": r["A"].tolist(), "B": r["B"][:, 0].tolist(),
        "linearization_error": float(r["err"]),
        "K": r["K"].tolist(),
        "closed_loop_eigenvalues": [[float(z.real), float(z.imag)] for z in r["cl"]],
        "fraction_stabilized": float(r["ok"].mean()),
        "fraction_saturated": float(r["sat"].mean()),
        "n_starts": int(a.n),
        "seconds": r["seconds"],
        "compile_seconds": r["compile_seconds"],
    }
    if a.plot:
        plot(a.plot, r, float(r["env"].default_params.task["dt"]))
    if a.json:
        print(json.dumps(out))
    else:
        print(f"linear model in {out['coordinates']}: max rel. difference from the closed form "
              f"{out['linearization_error']:.1e}")
        print(f"LQR gain K = {np.round(r['K'], 4).tolist()} (N per m, rad, m/s, rad/s); closed-loop "
              f"eigenvalues {np.round(r['cl'], 3).tolist()}")
        print(f"{100 * out['fraction_stabilized']:.1f} % of {a.n} starts stabilised "
              f"({100 * out['fraction_saturated']:.1f} % hit the force limit); "
              f"{out['seconds']:.2f} s for the batch ({out['compile_seconds']:.1f} s compiling)")
    return out


if __name__ == "__main__":
    main()
