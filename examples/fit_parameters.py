"""Identify link masses, spring stiffness, damping and friction of a slider-crank from
noisy measured motion, with gradients through the whole simulation (jaxmbs.fitting).

The mechanism (vertical plane, gravity -y): a crank (0.15 m) pinned to the ground at O,
a connecting rod (0.30 m) and a slider on a horizontal guide. A spring-damper ties the
slider to the frame, a viscous torsion damper acts in the crank bearing O, the slider
feels smooth Coulomb friction F = -F_c tanh(v / v_s) (a user force whose F_c is a
trainable parameter), and a known motor torque T(t) = T0 (sin w t + 0.5 sin 2.2 w t)
excites the crank, which swings through about 3.9 rad without turning over. The known
torque fixes the absolute scale (with gravity and springs alone, scaling every mass,
stiffness and damping together would leave the motion unchanged: see the notebook).

Data ("experiment"): the true mechanism simulated with RK4 at 0.5 ms; the crank angle,
the slider position and the bearing force at O (x and y) sampled at 100 Hz for 3 s, with
1 % Gaussian noise (standard deviation 1 % of each channel's RMS about its mean).
Model used by the fit: RK4 at 2 ms (so the fit does not share the data's discretisation).
Fit: the three link masses (the inertias about the CGs are taken as known), spring
stiffness k and damping c, bearing damping and friction force F_c, from a start 30-67 %
off, by L-BFGS (optax, zoom line search) on the log-parameters. Then the Gauss-Newton
covariance / identifiability report, and the linear regressor method for comparison: the
equations of motion are linear in all seven parameters, so with measured (q, v, a) they
follow from linear least squares; exact on noise-free states, but it needs velocities
and accelerations, and noise on those biases it, whereas the output-error fit uses
positions and forces only.

    python examples/fit_parameters.py [--json] [--noise 0.01] [--seed 0] [--horizons 0.5 1 2]

With --json the last output line is {"true": {...}, "fitted": {...}, "max_rel_error": e,
"iterations": n, "seconds": s, ...}; main(argv) returns the same dict.
"""
from __future__ import annotations

import argparse
import json
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402

import jaxmbs as mb  # noqa: E402
from jaxmbs import fitting as fit  # noqa: E402

L1, L2 = 0.15, 0.30
TRUE = {"crank.mass": 0.36, "rod.mass": 0.15, "slider.mass": 0.50, "spring.k": 100.0,
        "spring.c": 2.0, "bearing.c": 0.02, "friction.params": 1.0}
START = {"crank.mass": 0.55, "rod.mass": 0.10, "slider.mass": 0.35, "spring.k": 60.0,
         "spring.c": 3.0, "bearing.c": 0.03, "friction.params": 0.5}
NAMES = tuple(TRUE)
V_SLIP = 0.05  # m/s, smoothing speed of the friction law
THETA0 = -1.0  # initial crank angle, rad (released from rest)
T0, OMEGA = 1.0, 8.0  # excitation torque T0 (sin(w t) + 0.5 sin(2.2 w t)): N m, rad/s

T_END, DT, SAVE_EVERY = 3.0, 2e-3, 5  # the fit's model: RK4 at 2 ms, saves at 100 Hz
DT_DATA, SAVE_DATA = 5e-4, 20  # the "experiment": RK4 at 0.5 ms, sampled at 100 Hz
OUTPUTS = (fit.angle("crank"), fit.point("slider", axis=0), fit.reaction("O", "force"))


def friction(q, v, t, u, p):
    """Smooth Coulomb friction on the slider's x coordinate (index 6), F_c = p[0]."""
    return jnp.zeros(9).at[6].set(-p[0] * jnp.tanh(v[6] / V_SLIP))


def build(values=TRUE):
    """The slider-crank with the given parameter values: (mech, params, q0, v0)."""
    m = mb.Model(gravity=(0.0, -9.81))
    mc, mr = values["crank.mass"], values["rod.mass"]
    m.add_body("crank", mass=mc, inertia=mc * L1**2 / 12, position=(0.0, 0.0), cg=(L1 / 2, 0.0))
    m.add_body("rod", mass=mr, inertia=mr * L2**2 / 12, position=(L1 + L2 / 2, 0.0))
    m.add_body("slider", mass=values["slider.mass"], inertia=1e-4, position=(L1 + L2, 0.0))
    m.add_revolute("O", "ground", "crank", at=(0.0, 0.0))
    m.add_revolute("A", "crank", "rod", at=(L1, 0.0))
    m.add_revolute("B", "rod", "slider", at=(L1 + L2, 0.0))
    m.add_prismatic("P", "ground", "slider", axis=(1.0, 0.0), at=(L1 + L2, 0.0))
    m.add_spring("spring", "ground", "slider", k=values["spring.k"], c=values["spring.c"],
                 at_i=(0.8, 0.0), at_j=(L1 + L2, 0.0), length=0.40)
    m.add_torsion_spring("bearing", "ground", "crank", k=0.0, c=values["bearing.c"])
    m.add_force("friction", friction, params=[values["friction.params"]])
    m.add_load("motor", "crank", fn=lambda t: jnp.array(
        [0.0, 0.0, T0 * (jnp.sin(OMEGA * t) + 0.5 * jnp.sin(2.2 * OMEGA * t))]))
    mech, params, q, v = m.build()
    # start at rest with the crank at THETA0: built straight, then assembled
    s = mb.assemble(mech, params, q.at[2].set(THETA0), v, fixed=("crank.theta",))
    return mb.Built(mech, params, s.q, s.v)


def make_data(noise=0.01, seed=0):
    """The true mechanism, its fine-step trajectory and the noisy measurements."""
    mech, params, q0, v0 = build(TRUE)
    traj = mb.simulate(mech, params, q0, v0, (0.0, T_END), DT_DATA, save_every=SAVE_DATA)
    if noise > 0:
        data = fit.synthetic(mech, params, traj, OUTPUTS, rel_noise=noise, key=jax.random.PRNGKey(seed))
    else:
        data = fit.synthetic(mech, params, traj, OUTPUTS, sigma=[1e-3, 1e-3, 1e-2])
    return mech, params, q0, v0, traj, data


def start_params(mech, ptrue):
    return mech.replace(ptrue, {k: (jnp.asarray([v]) if k == "friction.params" else v)
                                for k, v in START.items()})


def problem(mech, params_start, q0, v0, data):
    tr = fit.Trainable(mech, params_start, NAMES, transforms={"friction.params": "log"})
    return fit.Problem(mech, tr, q0, v0, (0.0, T_END), DT, data, save_every=SAVE_EVERY)


def regressor_fit(mech, ptrue, traj, noise=0.0, seed=1):
    """Linear least squares for the same seven parameters from (q, v, a) along the true
    motion, optionally with Gaussian noise of `noise` x RMS on every q, v, a channel.
    No multiplier is measured: each sample gives the one equation of the 1-DOF motion."""
    t, q, v, a, _ = fit.trajectory_motion(mech, ptrue, traj)
    if noise > 0:
        keys = jax.random.split(jax.random.PRNGKey(seed), 3)
        q, v, a = (x + noise * jnp.std(x, 0) * jax.random.normal(k, x.shape)
                   for x, k in zip((q, v, a), keys))
    guess = start_params(mech, ptrue)
    reg = fit.linear_regressor(mech, guess, NAMES, q, v, a, t)
    return fit.solve_linear(reg)


def _rel(values):
    return {k: abs(values[k] - TRUE[k]) / abs(TRUE[k]) for k in NAMES}


def main(argv=None):
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--noise", type=float, default=0.01, help="relative noise (default 0.01)")
    ap.add_argument("--seed", type=int, default=0, help="PRNG seed of the noise (default 0)")
    ap.add_argument("--max-iter", type=int, default=150, help="L-BFGS iterations (per stage)")
    ap.add_argument("--horizons", type=float, nargs="*", default=[],
                    help="optional continuation stages in s (e.g. 0.5 1 2): fit growing windows")
    ap.add_argument("--no-regressor", action="store_true", help="skip the linear comparison")
    ap.add_argument("--json", action="store_true", help="last output line is one JSON object")
    a = ap.parse_args(argv)

    mech, ptrue, q0, v0, traj, data = make_data(a.noise, a.seed)
    prob = problem(mech, start_params(mech, ptrue), q0, v0, data)
    t0 = time.perf_counter()
    res = fit.fit(prob, max_iter=a.max_iter, memory_size=20, horizons=a.horizons)
    seconds = time.perf_counter() - t0
    rel = _rel(res.values)
    an = fit.analyze(prob, res.theta)
    out = {
        "true": dict(TRUE),
        "start": dict(START),
        "fitted": res.values,
        "rel_error": rel,
        "max_rel_error": max(rel.values()),
        "rel_std": {k: float(s) for k, s in zip(an.labels, an.rel_std)},
        "rank": an.rank,
        "n_params": len(NAMES),
        "identifiable": an.identifiable,
        "iterations": res.iterations,
        "loss_start": float(res.history[0]),
        "loss": res.loss,
        "converged": res.converged,
        "seconds": seconds,
        "noise": a.noise,
        "n_residuals": prob.n_residuals,
    }
    if not a.no_regressor:
        t1 = time.perf_counter()
        exact = regressor_fit(mech, ptrue, traj)
        noisy = regressor_fit(mech, ptrue, traj, noise=a.noise)
        out["regressor"] = {
            "exact_states_max_rel_error": max(_rel(exact.values).values()),
            "noisy_states_max_rel_error": max(_rel(noisy.values).values()),
            "noisy_states_fitted": noisy.values,
            "rank": exact.rank,
            "seconds": time.perf_counter() - t1,
        }
    if not a.json:
        print(f"slider-crank, {len(NAMES)} parameters from {prob.n_residuals} samples "
              f"({100 * a.noise:g} % noise): L-BFGS {res.iterations} iterations, loss "
              f"{res.history[0]:.4g} -> {res.loss:.4g}, {seconds:.1f} s (incl. compilation)")
        for k in NAMES:
            print(f"  {k:<16} true {TRUE[k]:<7g} start {START[k]:<7g} fitted {res.values[k]:<9.5g} "
                  f"error {100 * rel[k]:6.3f} %  (1-sigma {100 * out['rel_std'][k]:.3f} %)")
        print(an.summary())
        if "regressor" in out:
            r = out["regressor"]
            print(f"linear regressor (rank {r['rank']}): max relative error {r['exact_states_max_rel_error']:.2e} "
                  f"on exact (q, v, a); {100 * r['noisy_states_max_rel_error']:.1f} % with "
                  f"{100 * a.noise:g} % noise on (q, v, a)")
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main()
