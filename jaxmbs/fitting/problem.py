"""Trainable parameters (which Params entries are fitted, and their re-parametrisation for
positivity and bounds) and the fitting problem (model, initial state, time grid, data)."""
from __future__ import annotations

import dataclasses
import math
import re

import jax
import jax.numpy as jnp
import numpy as np

from ..core.stabilize import Projection
from ..formulations.schur import SchurCholesky
from ..integrators.runge_kutta import RK4
from ..simulation import simulate
from .outputs import Measurement, align, residuals

# =====================================================================================
# Trainable parameters and re-parametrisation
# =====================================================================================

_LOG_SUFFIXES = (".mass", ".inertia", ".k", ".c")


def default_transform(key: str, value) -> str:
    """'log' for masses, inertias, stiffness and damping coefficients (when positive),
    'identity' otherwise."""
    v = np.asarray(value)
    if key.endswith(_LOG_SUFFIXES) and np.all(v > 0):
        return "log"
    return "identity"


_KEY_RE = re.compile(r"^(.*)\[(\d+)\]$")


class Trainable:
    """Which Params entries are fitted, and how they are re-parametrised.

    Construct with ``Trainable(mech, params, names, transforms=None, bounds=None)``:

    names: parameter keys of ``mech.param_names()`` ('crank.mass', 'spring.k', ...);
      'key[i]' selects one component of a vector parameter ('crank.cg[0]'); a dict
      {key: bool} works as a mask.
    transforms: {key: 'log' | 'identity'}; default `default_transform` (log for masses,
      inertias, stiffness and damping).
    bounds: {key: (lo, hi)}: the parameter is lo + (hi - lo) * sigmoid(theta) (a box).

    theta is the flat vector of unconstrained values; `to_params(theta)` is pure (works
    under jit / vmap / grad); `initial()` gives theta of the base params.
    """

    # slots: ((label, key, component or -1, transform, lo, hi), ...)

    def __init__(self, mech, params, names=(), transforms=None, bounds=None, *, _slots=None):
        self.mech = mech
        self.base = params
        if _slots is not None:
            self.slots = _slots
            return
        if isinstance(names, dict):
            names = [k for k, on in names.items() if on]
        if isinstance(names, str):
            names = [names]
        transforms = dict(transforms or {})
        bounds = dict(bounds or {})
        known = mech.param_names()
        slots = []
        for name in names:
            m = _KEY_RE.match(name)
            key, comp = (m.group(1), int(m.group(2))) if m else (name, None)
            if key not in known:
                raise ValueError(f"unknown parameter {key!r}; known parameters: {', '.join(known)}")
            val = np.asarray(mech.get(params, key), float)
            comps = range(val.size) if comp is None else [comp]
            if comp is not None and not (0 <= comp < val.size):
                raise ValueError(f"{name!r}: component {comp} out of range for a parameter of size {val.size}")
            for c in comps:
                label = key if val.size == 1 else f"{key}[{c}]"
                v = float(val.reshape(-1)[c])
                b = bounds.get(name, bounds.get(key))
                tf = transforms.get(name, transforms.get(key))
                if b is not None:
                    lo, hi = float(b[0]), float(b[1])
                    if not lo < hi:
                        raise ValueError(f"bounds of {label}: need lo < hi, got {b}")
                    tf = "box"
                else:
                    lo = hi = None
                    tf = tf or default_transform(key, v)
                    if tf not in ("log", "identity"):
                        raise ValueError(f"transform of {label}: 'log' or 'identity' (or give bounds), got {tf!r}")
                    if tf == "log" and not v > 0:
                        raise ValueError(f"{label}: a log transform needs a positive value, got {v}")
                if any(s[0] == label for s in slots):
                    raise ValueError(f"parameter {label} listed twice")
                slots.append((label, key, -1 if val.size == 1 else c, tf, lo, hi))
        if not slots:
            raise ValueError("no trainable parameters selected")
        self.slots = tuple(slots)

    # pytree plumbing: rebuild without validation
    @classmethod
    def _rebuild(cls, base, mech, slots):
        return cls(mech, base, _slots=slots)

    @property
    def labels(self) -> tuple:
        return tuple(s[0] for s in self.slots)

    @property
    def size(self) -> int:
        return len(self.slots)

    @property
    def keys(self) -> tuple:
        return tuple(dict.fromkeys(s[1] for s in self.slots))

    def _forward(self, theta):
        """Physical values (p,) from theta (p,)."""
        out = []
        for i, (_, _, _, tf, lo, hi) in enumerate(self.slots):
            x = theta[i]
            if tf == "log":
                out.append(jnp.exp(x))
            elif tf == "box":
                out.append(lo + (hi - lo) * jax.nn.sigmoid(x))
            else:
                out.append(x)
        return jnp.stack(out)

    def _inverse(self, p):
        p = np.asarray(p, float)
        out = []
        for i, (label, _, _, tf, lo, hi) in enumerate(self.slots):
            x = float(p[i])
            if tf == "log":
                if not x > 0:
                    raise ValueError(f"{label} must be positive (log-parametrised), got {x}")
                out.append(math.log(x))
            elif tf == "box":
                if not lo < x < hi:
                    raise ValueError(f"{label} = {x} is outside its bounds ({lo}, {hi})")
                z = (x - lo) / (hi - lo)
                out.append(math.log(z / (1 - z)))
            else:
                out.append(x)
        return jnp.asarray(out)

    def physical(self, theta):
        """Physical values (p,) (or (batch, p)) of theta."""
        theta = jnp.asarray(theta)
        if theta.ndim == 2:
            return jax.vmap(self._forward)(theta)
        return self._forward(theta)

    def dphysical(self, theta):
        """d physical / d theta (p,), the diagonal of the re-parametrisation's Jacobian."""
        return jax.jvp(self._forward, (jnp.asarray(theta),), (jnp.ones_like(jnp.asarray(theta)),))[1]

    def to_params(self, theta):
        """Params with the trainable entries set from theta (pure)."""
        p = self._forward(jnp.asarray(theta))
        vals = {}
        for i, (_, key, comp, _, _, _) in enumerate(self.slots):
            if comp < 0:
                vals[key] = p[i]
            else:
                cur = vals.get(key)
                if cur is None:
                    cur = jnp.asarray(self.mech.get(self.base, key)).reshape(-1).astype(p.dtype)
                vals[key] = cur.at[comp].set(p[i])
        vals = {k: (v.reshape(jnp.shape(self.mech.get(self.base, k))) if jnp.ndim(v) else v)
                for k, v in vals.items()}
        return self.mech.replace(self.base, vals)

    def to_theta(self, values=None):
        """theta from a dict {label or key: value}, a Params, or None (the base params)."""
        if values is None:
            values = self.base
        if isinstance(values, dict):
            cur = np.asarray(list(self.values(self.initial()).values()), float)
            p = []
            for i, (label, key, comp, *_r) in enumerate(self.slots):
                if label in values:
                    p.append(float(np.asarray(values[label])))
                elif key in values:
                    p.append(float(np.asarray(values[key], float).reshape(-1)[max(comp, 0)]))
                else:
                    p.append(float(cur[i]))
            return self._inverse(p)
        p = [float(np.asarray(self.mech.get(values, key), float).reshape(-1)[max(comp, 0)])
             for (_, key, comp, *_r) in self.slots]
        return self._inverse(p)

    def initial(self):
        """theta of the base params."""
        p = [float(np.asarray(self.mech.get(self.base, key), float).reshape(-1)[max(comp, 0)])
             for (_, key, comp, *_r) in self.slots]
        return self._inverse(p)

    def values(self, theta) -> dict:
        """{label: float} physical values of theta."""
        p = np.asarray(self._forward(jnp.asarray(theta)))
        return {label: float(x) for label, x in zip(self.labels, p)}


def _trainable_flatten(t):
    return (t.base,), (t.mech, t.slots)


def _trainable_unflatten(aux, children):
    return Trainable._rebuild(children[0], aux[0], aux[1])



# =====================================================================================
# Problem
# =====================================================================================

class Problem:
    """A parameter-identification problem: simulate with trial parameters and compare.

    Problem(mech, trainable, q0, v0, t_span, dt, measurements, *, save_every=1,
            integrator=RK4(), stabilizer=Projection(), solver=SchurCholesky(),
            controls=None, initial_state=None)

    mech: the Mechanism; trainable: a `Trainable` (its base params supply every value not
    trained); q0, v0: consistent initial state; t_span, dt, save_every, integrator,
    stabilizer, solver, controls: as for `jaxmbs.simulate`; measurements: list of
    `Measurement` whose times lie on the save grid t0 + k dt save_every.
    initial_state: optional function (params, q0, v0) -> (q0, v0), e.g. re-assembly when
    geometry is trained (must be JAX-traceable).

    A Problem is a pytree (arrays are leaves, configuration is static), so jitted fits
    of problems with the same structure share one compilation.
    """

    def __init__(self, mech, trainable, q0, v0, t_span, dt, measurements, *, save_every=1,
                 integrator=RK4(), stabilizer=Projection(), solver=SchurCholesky(),
                 controls=None, initial_state=None):
        if not isinstance(trainable, Trainable):
            raise TypeError("trainable must be a fitting.Trainable")
        if trainable.mech != mech:
            raise ValueError("the Trainable was built for a different mechanism")
        t0, t1 = float(t_span[0]), float(t_span[1])
        n_steps = int(round((t1 - t0) / dt))
        if n_steps < 1 or abs(n_steps * dt - (t1 - t0)) > 1e-9 * max(1.0, abs(t1 - t0)):
            raise ValueError(f"t1 - t0 = {t1 - t0} must be a positive whole number of steps dt = {dt}")
        if save_every < 1 or n_steps % save_every:
            raise ValueError(f"save_every={save_every} must divide the number of steps {n_steps}")
        if isinstance(measurements, Measurement):
            measurements = [measurements]
        if not measurements:
            raise ValueError("no measurements given")
        ms = align(mech, measurements, (t0, t1), dt, save_every)
        n, nv = mech.n_coords, mech.n_vel
        q0, v0 = jnp.asarray(q0, float), jnp.asarray(v0, float)
        if q0.shape != (n,) or v0.shape != (nv,):
            raise ValueError(f"q0 must have shape ({n},) and v0 ({nv},), got {q0.shape}, {v0.shape}")
        self.mech = mech
        self.trainable = trainable
        self.q0, self.v0 = q0, v0
        self.measurements = tuple(ms)
        self.controls = None if controls is None or callable(controls) else jnp.asarray(controls, float)
        self._static = dict(t_span=(t0, t1), dt=float(dt), save_every=int(save_every),
                            integrator=integrator, stabilizer=stabilizer, solver=solver,
                            ctrl_fn=controls if callable(controls) else None,
                            initial_state=initial_state)

    # ---- pytree ------------------------------------------------------------------------
    def tree_flatten(self):
        children = (self.trainable.base, self.q0, self.v0, self.measurements, self.controls)
        aux = (self.mech, self.trainable.slots, tuple(sorted(self._static.items(), key=lambda kv: kv[0])))
        return children, aux

    @classmethod
    def tree_unflatten(cls, aux, children):
        mech, slots, static = aux
        obj = object.__new__(cls)
        base, obj.q0, obj.v0, obj.measurements, obj.controls = children
        obj.mech = mech
        obj.trainable = Trainable(mech, base, _slots=slots)
        obj._static = dict(static)
        return obj

    def up_to(self, t_max):
        """The same problem with the samples after t_max (s) weighted zero (sigma = inf).

        Same structure, so jitted fits reuse their compilation: `fit(..., horizons=...)`
        uses this to fit a growing time window (continuation), which avoids the local
        minima that long horizons of oscillating or rotating mechanisms create."""
        children, aux = self.tree_flatten()
        ms = tuple(dataclasses.replace(m, sigma=jnp.where(m.times[:, None] > t_max + 1e-12, jnp.inf, m.sigma))
                   for m in self.measurements)
        children = children[:3] + (ms,) + children[4:]
        return Problem.tree_unflatten(aux, children)

    # ---- evaluation --------------------------------------------------------------------
    @property
    def labels(self):
        return self.trainable.labels

    @property
    def n_residuals(self) -> int:
        return int(sum(np.asarray(m.values).size for m in self.measurements))

    def params(self, theta):
        return self.trainable.to_params(theta)

    def simulate(self, theta=None, params=None):
        """The Trajectory for theta (or for explicit params)."""
        s = self._static
        if params is None:
            params = self.trainable.to_params(self.trainable.initial() if theta is None else theta)
        q0, v0 = self.q0, self.v0
        if s["initial_state"] is not None:
            q0, v0 = s["initial_state"](params, q0, v0)
        controls = s["ctrl_fn"] if s["ctrl_fn"] is not None else self.controls
        return simulate(self.mech, params, q0, v0, s["t_span"], s["dt"], integrator=s["integrator"],
                        stabilizer=s["stabilizer"], solver=s["solver"], controls=controls,
                        save_every=s["save_every"], check_initial=False)

    def predictions(self, theta=None, params=None):
        """Simulated outputs at the measurement times: list of (k, d), one per measurement."""
        if params is None:
            params = self.trainable.to_params(self.trainable.initial() if theta is None else theta)
        traj = self.simulate(params=params)
        return [m.output.evaluate(self.mech, params, traj.q[m.index], traj.v[m.index], traj.lam[m.index])
                for m in self.measurements]

    def residuals(self, theta):
        """Weighted residual vector (simulated - measured) / sigma over all measurements;
        +inf everywhere if the simulation failed (non-finite state)."""
        params = self.trainable.to_params(theta)
        return residuals(self.mech, params, self.simulate(params=params), self.measurements)

    def loss(self, theta):
        """0.5 * mean(residuals^2)."""
        r = self.residuals(theta)
        return 0.5 * jnp.mean(r**2)


jax.tree_util.register_pytree_node(Problem, Problem.tree_flatten, Problem.tree_unflatten)
jax.tree_util.register_pytree_node(Trainable, _trainable_flatten, _trainable_unflatten)
