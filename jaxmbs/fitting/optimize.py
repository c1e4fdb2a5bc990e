"""Output-error fitting with optax (L-BFGS with its zoom line search, or Adam), gradients
by jax.grad through the whole simulation, and vmapped multi-start."""
from __future__ import annotations

import dataclasses
import functools
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from ..core.mechanism import Params
from .problem import Problem, Trainable

# =====================================================================================
# Fitting
# =====================================================================================

class FitResult(NamedTuple):
    """Result of `fit`.

    theta (p,) best unconstrained parameters; params: the fitted Params; values: {label:
    physical value}; loss: final loss; history: loss per iteration (iterations + 1,),
    starting with the initial loss; iterations: optimiser iterations; grad_norm: max |dL/dtheta|
    at the end; converged: bool; seconds: wall time (including compilation); method;
    start_losses: final loss of every start (multi-start), best: index of the best start;
    all_theta: (n_starts, p) final theta of every start.
    """

    theta: Any
    params: Any
    values: dict
    loss: float
    history: np.ndarray
    iterations: int
    grad_norm: float
    converged: bool
    seconds: float
    method: str
    start_losses: np.ndarray
    best: int
    all_theta: np.ndarray


@dataclasses.dataclass(frozen=True)
class _Settings:
    method: str
    max_iter: int
    gtol: float
    ftol: float
    learning_rate: float
    memory_size: int
    linesearch_steps: int
    optimizer: Any = None  # an optax GradientTransformation (hashable by identity)


def _run(problem, theta0, cfg: _Settings):
    """One optimisation from theta0 (p,): (theta, loss, history, iterations, gnorm, converged).

    history[k] is the loss at the k-th iterate (history[0]: the initial guess). The loss
    and gradient graphs appear once per copy needed by the optimiser (L-BFGS: the
    value_and_grad_from_state fallback and the line search), so compile time is about
    twice that of one gradient.
    """
    f = problem.loss
    dtype = theta0.dtype
    hist0 = jnp.zeros((cfg.max_iter + 1,), dtype)  # (no NaN markers: jax_debug_nans)

    if cfg.method == "lbfgs":
        opt = optax.lbfgs(memory_size=cfg.memory_size,
                          linesearch=optax.scale_by_zoom_linesearch(
                              max_linesearch_steps=cfg.linesearch_steps, initial_guess_strategy="one"))
        vag = optax.value_and_grad_from_state(f)

        def body(c):
            theta, state, k, _, hist, _, _, _ = c
            value, grad = vag(theta, state=state)
            hist = hist.at[k].set(value)
            updates, state = opt.update(grad, state, theta, value=value, grad=grad, value_fn=f)
            theta_new = optax.apply_updates(theta, updates)
            fnew = optax.tree.get(state, "value")
            gn = jnp.max(jnp.abs(optax.tree.get(state, "grad")))
            conv = (gn <= cfg.gtol) | (jnp.abs(value - fnew) <= cfg.ftol * jnp.maximum(jnp.abs(fnew), 1e-300))
            # a failed line search (non-finite value) keeps the previous iterate and stops
            ok = jnp.isfinite(fnew)
            theta_new = jnp.where(ok, theta_new, theta)
            return (theta_new, state, k + 1, jnp.where(ok, fnew, value), hist, gn, conv | ~ok,
                    conv & ok)

        state0 = opt.init(theta0)
    else:
        opt = cfg.optimizer if cfg.optimizer is not None else optax.adam(cfg.learning_rate)
        vg = jax.value_and_grad(f)

        def body(c):
            theta, (state, best, fbest), k, _, hist, _, _, _ = c
            value, grad = vg(theta)
            hist = hist.at[k].set(value)
            better = value < fbest
            best, fbest = jnp.where(better, theta, best), jnp.where(better, value, fbest)
            gn = jnp.max(jnp.abs(grad))
            conv = gn <= cfg.gtol
            stop = conv | ~jnp.isfinite(value)
            updates, state = opt.update(grad, state, theta)
            # once stopped, stay at the point whose loss is known
            theta_new = jnp.where(stop, theta, optax.apply_updates(theta, updates))
            return (theta_new, (state, best, fbest), k + jnp.where(stop, 0, 1), value, hist, gn,
                    stop, conv)

        state0 = (opt.init(theta0), theta0, jnp.asarray(jnp.inf, dtype))

    def cond(c):
        return (c[2] < cfg.max_iter) & ~c[6]

    c0 = (theta0, state0, jnp.zeros((), jnp.int32), jnp.asarray(jnp.inf, dtype),
          hist0, jnp.asarray(jnp.inf, dtype), jnp.zeros((), bool), jnp.zeros((), bool))
    theta, state, k, fval, hist, gn, stop, conv = jax.lax.while_loop(cond, body, c0)
    if cfg.method != "lbfgs":
        _, best, fbest = state
        flast = jnp.where(stop, fval, f(theta))  # loss at the last iterate (forward only)
        hist = hist.at[k].set(flast)
        use_last = flast <= fbest  # return the best point seen (e.g. if the steps diverged)
        theta = jnp.where(use_last, theta, best)
        fval = jnp.where(use_last, flast, fbest)
    else:
        hist = hist.at[k].set(fval)
    return theta, fval, hist, k, gn, conv


@functools.partial(jax.jit, static_argnames=("cfg",))
def _run_jit(problem, theta0, cfg):
    return _run(problem, theta0, cfg)


@functools.partial(jax.jit, static_argnames=("cfg",))
def _run_batch_jit(problem, theta0, cfg):
    return jax.vmap(lambda th: _run(problem, th, cfg))(theta0)


def fit(problem: Problem, theta0=None, *, method="lbfgs", max_iter: int = 100, gtol: float = 1e-8,
        ftol: float = 1e-10, learning_rate: float = 0.05, memory_size: int = 10,
        linesearch_steps: int = 20, horizons=None) -> FitResult:
    """Minimise problem.loss over theta.

    theta0: initial theta (p,), a dict {label: physical value}, Params, or a batch
      (n_starts, p) of initial guesses (multi-start: all run at once as a vmapped batch,
      the best final loss wins; see `random_starts`). Default: the trainable's base params.
    method: 'lbfgs' (optax.lbfgs with the zoom line search, gradients reused through
      optax.value_and_grad_from_state), 'adam' (optax.adam(learning_rate)), or any optax
      GradientTransformation (used like Adam: one gradient per iteration).
    max_iter: iteration budget (per stage); stops earlier when max |dL/dtheta| <= gtol or
      (L-BFGS) when an iteration changes the loss by at most ftol relative.
    horizons: optional increasing times (s): fit the data up to each time in turn, each
      stage starting where the previous one ended, then all data (continuation in the
      horizon; one compilation serves all stages). history then concatenates the stages.
    """
    tr = problem.trainable
    if theta0 is None:
        theta0 = tr.initial()
    elif isinstance(theta0, (dict, Params)):
        theta0 = tr.to_theta(theta0)
    theta0 = jnp.asarray(theta0, float)
    if theta0.ndim not in (1, 2) or theta0.shape[-1] != tr.size:
        raise ValueError(f"theta0 must have shape ({tr.size},) or (n_starts, {tr.size}) for "
                         f"parameters {tr.labels}, got {theta0.shape}")
    if isinstance(method, str):
        if method not in ("lbfgs", "adam"):
            raise ValueError(f"method must be 'lbfgs', 'adam' or an optax GradientTransformation, got {method!r}")
        cfg = _Settings(method, int(max_iter), float(gtol), float(ftol), float(learning_rate),
                        int(memory_size), int(linesearch_steps))
        name = method
    else:
        cfg = _Settings("optax", int(max_iter), float(gtol), float(ftol), float(learning_rate),
                        int(memory_size), int(linesearch_steps), optimizer=method)
        name = "optax"
    t_start = time.perf_counter()
    stages = [float(h) for h in (horizons or ())] + [None]
    hists, k_total = [], 0
    th = theta0
    for h in stages:
        prob = problem if h is None else problem.up_to(h)
        if th.ndim == 1:
            theta, fval, hist, k, gn, conv = jax.block_until_ready(_run_jit(prob, th, cfg))
            th = theta
        else:
            thetas, fvals, hist_b, ks, gns, convs = jax.block_until_ready(_run_batch_jit(prob, th, cfg))
            th = thetas
            losses = np.asarray(fvals)
            best = int(np.argmin(np.where(np.isfinite(losses), losses, np.inf)))
            theta, fval, hist, k, gn, conv = (thetas[best], fvals[best], hist_b[best], ks[best],
                                              gns[best], convs[best])
        k = int(k)
        hists.append(np.asarray(hist)[: k + 1])
        k_total += k
    if th.ndim == 1:
        all_theta, losses, best = np.asarray(theta)[None], np.asarray([float(fval)]), 0
    else:
        all_theta = np.asarray(th)
    seconds = time.perf_counter() - t_start
    return FitResult(theta=theta, params=tr.to_params(theta), values=tr.values(theta),
                     loss=float(fval), history=np.concatenate(hists), iterations=k_total,
                     grad_norm=float(gn), converged=bool(conv), seconds=seconds, method=name,
                     start_losses=losses, best=best, all_theta=all_theta)


def random_starts(trainable: Trainable, key, n: int, spread: float = 0.5, center=None):
    """(n, p) initial thetas: `center` (default the base params' theta) plus uniform noise
    in [-spread, spread] (in theta units: for log parameters a factor of up to e^spread).
    Row 0 is the centre itself."""
    c = trainable.initial() if center is None else jnp.asarray(center, float)
    d = jax.random.uniform(key, (n, c.size), c.dtype, -spread, spread)
    return (c + d).at[0].set(c)
