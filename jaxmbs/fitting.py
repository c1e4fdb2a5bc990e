"""Parameter identification: fit `Params` to measured motion.

Two routes:

* **Output error (gradient fit).** Simulate with trial parameters, compare chosen outputs
  with measurements at the measurement times, and minimise the weighted least-squares
  loss with optax (L-BFGS with its zoom line search, or Adam), gradients by `jax.grad`
  through the whole simulation. Any `Params` entry can be fitted; positivity and bounds
  are handled by re-parametrisation. Multi-start runs a vmapped batch of initial guesses.
  At the optimum a Gauss-Newton covariance and an identifiability report (rank of the
  Fisher information, which parameter combinations cannot be separated).

* **Equation error (linear regressor).** The equations of motion are linear in the
  inertial parameters of each body, (m, m c_x, m c_y, J_ref) with c the CG in body
  coordinates and J_ref = J_G + m |c|^2 the inertia about the body's reference point
  (and in stiffness and damping coefficients). With measured motion (q, v, a) and
  measured or known forces, the parameters follow from linear least squares on a
  regressor matrix, which is obtained here by `jax.jacfwd` of the engine's own equations
  of motion (mass matrix, generalized forces, constraint Jacobian).

Example (see examples/fit_parameters.py and notebooks/fitting.ipynb)::

    from jaxmbs import fitting as fit
    outputs = [fit.coordinate("crank.theta"), fit.point("slider")]
    data = fit.synthetic(mech, params_true, traj_true, outputs, times, rel_noise=0.01, key=key)
    tr = fit.Trainable(mech, params_guess, ["crank.mass", "spring.k", "spring.c"])
    prob = fit.Problem(mech, tr, q0, v0, (0.0, 2.0), 2e-3, data, save_every=10)
    res = fit.fit(prob)                  # L-BFGS
    res.values                           # {'crank.mass': ..., ...}
    rep = fit.analyze(prob, res.theta)   # covariance + identifiability
    print(rep.summary())

Loss convention: residuals r = (simulated - measured) / sigma, stacked over all
measurements; loss = 0.5 * mean(r^2) (about 0.5 at the optimum when sigma is the true
noise level). The Gauss-Newton Fisher information is J^T J with J = dr/dtheta (that is,
J^T W J with W = 1/sigma^2 for the unweighted residuals).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import re
import time
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax

from . import status as st
from .analysis import reactions as _reactions
from .equations import constraint_terms, generalized_forces, mass_matrix
from .integrators import RK4
from .mechanism import Params
from .core import families as _F
from .equations import frame_states as _frame_states
from .saddle import SchurCholesky
from .simulate import simulate
from .stabilize import Projection

__all__ = [
    # outputs and measurements
    "Output", "coordinate", "velocity", "angle", "point", "reaction",
    "Measurement", "synthetic", "evaluate_outputs", "align", "residuals", "loss",
    # trainable parameters
    "Trainable", "default_transform",
    # problem and fit
    "Problem", "FitResult", "fit", "random_starts",
    # Gauss-Newton analysis
    "Analysis", "analyze", "covariance", "identifiability", "jacobian_report",
    # linear regressor
    "Regressor", "LinearFit", "inertial_labels", "inertial_parameters", "params_from_inertial",
    "regressor", "inertial_regressor", "linear_regressor", "solve_linear", "trajectory_motion",
]


# =====================================================================================
# Outputs: what is measured
# =====================================================================================

@dataclasses.dataclass(frozen=True)
class Output:
    """A measured quantity evaluated on a trajectory at chosen save points.

    Build with `coordinate`, `velocity`, `angle`, `point` or `reaction`.
    kind: 'coordinate' | 'velocity' | 'point' | 'reaction'; target: coordinate name, body
    name or joint name; local: (x, y) body-frame point for 'point'; component: reaction
    component ('force', 'moment', 'effort'); axis: optional component index.
    """

    kind: str
    target: str
    local: tuple = (0.0, 0.0)
    component: str = ""
    axis: Optional[int] = None

    # ---- description -------------------------------------------------------------
    @property
    def name(self) -> str:
        if self.kind == "coordinate":
            return self.target
        if self.kind == "velocity":
            return f"{self.target}_dot"
        if self.kind == "point":
            loc = "" if not any(self.local) else "@(" + ",".join(f"{x:g}" for x in self.local) + ")"
            return f"{self.target}{loc}"
        ax = "" if self.axis is None else f"[{self.axis}]"
        return f"{self.target}.{self.component}{ax}"

    def size(self, mech) -> int:
        if self.kind in ("coordinate", "velocity"):
            return 1
        if self.axis is not None:
            return 1
        if self.kind == "point":
            return _frame_kind_of(mech, self.target).dim
        j = mech.joint(self.target)
        if j.kind in ("constraint", "velocity_constraint"):
            return mech.n_vel if self.component == "generalized" else 1
        fk = _frame_kind_of(mech, mech.frame_names[j.frame_j])
        if self.component == "force":
            return fk.dim
        if self.component == "generalized":
            return fk.wv
        if self.component == "moment":
            return 1 if fk.dim == 2 else 3
        return 1

    def labels(self, mech) -> tuple:
        d = self.size(mech)
        if d == 1:
            return (self.name,)
        if self.kind == "point" or self.component == "force":
            return tuple(f"{self.name}.{c}" for c in "xyz"[:d])
        return tuple(f"{self.name}[{i}]" for i in range(d))

    def validate(self, mech):
        if self.kind == "coordinate":
            mech.coordinate_index(self.target)
        elif self.kind == "velocity":
            mech.velocity_index(self.target)
        elif self.kind == "point":
            if self.target not in mech.body_names + mech.particle_names:
                raise ValueError(f"point output: unknown body {self.target!r}; known: "
                                 f"{', '.join(mech.body_names + mech.particle_names)}")
        elif self.kind == "reaction":
            j = mech.joint(self.target)
            allowed = ("force", "moment", "generalized") + (("effort",) if j.driver else ())
            if j.kind == "constraint":
                allowed = ("generalized",)
            if self.component not in allowed:
                raise ValueError(f"reaction output of {self.target!r}: component must be one of "
                                 f"{allowed}, got {self.component!r}")
        else:
            raise ValueError(f"unknown output kind {self.kind!r}")
        if self.axis is not None and not (0 <= self.axis < _full_size(self, mech)):
            raise ValueError(f"output {self.name}: axis {self.axis} out of range")
        return self

    # ---- evaluation ----------------------------------------------------------------
    def evaluate(self, mech, params, q, v, lam):
        """Values (s, d) at the states q, v (s, n) with multipliers lam (s, m)."""
        if self.kind == "coordinate":
            return q[:, mech.coordinate_index(self.target)][:, None]
        if self.kind == "velocity":
            return v[:, mech.velocity_index(self.target)][:, None]
        if self.kind == "point":
            fk = _frame_kind_of(mech, self.target)
            f = mech.frame_names.index(self.target)
            X = jax.vmap(lambda qq: _frame_states(mech, fk.name, qq, None, [f])[0][0])(q)
            s = jnp.broadcast_to(jnp.asarray(self.local, q.dtype)[: fk.dim], (X.shape[0], fk.dim))
            out = fk.point(X, s)[0]
            return out if self.axis is None else out[:, self.axis: self.axis + 1]
        # reaction
        name, comp = self.target, self.component

        def one(qq, ll):
            return jnp.atleast_1d(_reactions(mech, params, qq, ll)[name][comp])

        out = jax.vmap(one)(q, lam)
        return out if self.axis is None else out[:, self.axis: self.axis + 1]


def _frame_kind_of(mech, name):
    """The FrameKind of the frame (body or particle) called name."""
    if name not in mech.frame_names[1:]:
        raise ValueError(f"unknown body {name!r}; known: {', '.join(mech.frame_names[1:])}")
    return _F.frame_kind(mech.frame_kinds()[mech.frame_names.index(name)])


def _full_size(o, mech):
    return dataclasses.replace(o, axis=None).size(mech)


def coordinate(name: str) -> Output:
    """Coordinate q[name], e.g. 'crank.theta' (rad) or 'slider.x' (m)."""
    return Output("coordinate", name)


def velocity(name: str) -> Output:
    """Velocity v[name] (m/s or rad/s)."""
    return Output("velocity", name)


def angle(body: str) -> Output:
    """A body's absolute angle theta (rad)."""
    return Output("coordinate", f"{body}.theta")


def point(body: str, local=(0.0, 0.0), axis: Optional[int] = None) -> Output:
    """Global position (x, y) (planar) or (x, y, z) (spatial) in m of the body-frame point
    `local` of `body` (axis: one component only). For a particle: its position."""
    loc = tuple(float(x) for x in np.asarray(local, float).reshape(-1))
    return Output("point", body, local=loc, axis=axis)


def reaction(joint: str, component: str = "force", axis: Optional[int] = None) -> Output:
    """A joint reaction from `jaxmbs.reactions` at the saved states with the trajectory's
    multipliers: 'force' (2,) N on body_j, 'moment' N m, 'effort' (drivers: torque/force
    the driver applies), 'generalized' (3,). axis selects one component."""
    return Output("reaction", joint, component=component, axis=axis)


def evaluate_outputs(mech, params, traj, outputs, index=None):
    """Evaluate `outputs` on a Trajectory at save-point indices (default all): list of (s, d)."""
    q, v, lam = traj.q, traj.v, traj.lam
    if index is not None:
        q, v, lam = q[index], v[index], lam[index]
    return [o.evaluate(mech, params, q, v, lam) for o in outputs]


# =====================================================================================
# Measurements
# =====================================================================================

@dataclasses.dataclass(frozen=True)
class Measurement:
    """Measured samples of one output.

    Measurement(output, times, values, sigma): output an `Output`; times (k,) s, each on
    the simulation's save grid; values (k, d) (or (k,) for d = 1); sigma: noise standard
    deviation, scalar, (d,) or (k, d), in the output's units; the residual weight is
    1 / sigma^2.
    """

    output: Output
    times: Any
    values: Any
    sigma: Any
    index: Any = None  # (k,) save-point indices, set by Problem

    def weighted_residual(self, sim):
        """((sim - values) / sigma).ravel() for sim (k, d)."""
        vals = jnp.reshape(self.values, sim.shape)
        return ((sim - vals) / jnp.broadcast_to(self.sigma, sim.shape)).reshape(-1)


jax.tree_util.register_dataclass(Measurement, data_fields=["times", "values", "sigma", "index"],
                                 meta_fields=["output"])


def _as_measurement(meas, mech):
    if not isinstance(meas, Measurement):
        raise TypeError(f"expected a fitting.Measurement, got {type(meas).__name__}")
    if meas.output is None:
        raise ValueError("Measurement needs an output (fitting.coordinate(...), point(...), ...)")
    meas.output.validate(mech)
    d = meas.output.size(mech)
    t = np.asarray(meas.times, float).reshape(-1)
    vals = np.asarray(meas.values, float)
    if vals.ndim == 1 and d == 1:
        vals = vals[:, None]
    if vals.shape != (t.size, d):
        raise ValueError(f"measurement of {meas.output.name}: values must have shape "
                         f"({t.size}, {d}) (times x output size), got {np.shape(meas.values)}")
    sig = np.asarray(meas.sigma, float)
    try:
        sig_b = np.broadcast_to(sig, vals.shape)
    except ValueError:
        raise ValueError(f"measurement of {meas.output.name}: sigma of shape {sig.shape} does "
                         f"not broadcast to the values' shape {vals.shape}") from None
    if not np.all(np.isfinite(sig_b)) or np.any(sig_b <= 0):
        raise ValueError(f"measurement of {meas.output.name}: sigma must be positive and finite")
    if not np.all(np.isfinite(vals)):
        raise ValueError(f"measurement of {meas.output.name}: values contain NaN/inf")
    return Measurement(meas.output, jnp.asarray(t), jnp.asarray(vals), jnp.asarray(np.array(sig_b)), None)


def synthetic(mech, params, traj, outputs, times=None, *, rel_noise=0.0, abs_noise=0.0,
              key=None, sigma=None) -> list:
    """Measurements of `outputs` taken from a (true) Trajectory, with optional Gaussian noise.

    times: measurement times on the trajectory's save grid (default: every save point).
    Noise standard deviation per output channel: rel_noise * RMS(channel about its mean)
    + abs_noise, which is also the measurement's sigma unless `sigma` (a number or a list
    per output) is given. key: jax PRNG key (required if there is noise).
    Returns a list of `Measurement`.
    """
    tt = np.asarray(traj.t)
    if times is None:
        idx = np.arange(tt.size)
    else:
        idx = _grid_index(tt[0], tt[1] - tt[0] if tt.size > 1 else 1.0, tt.size, np.asarray(times))
    vals = evaluate_outputs(mech, params, traj, outputs, jnp.asarray(idx))
    noisy = rel_noise > 0 or abs_noise > 0
    if noisy and key is None:
        raise ValueError("synthetic: noise requested, pass key=jax.random.PRNGKey(...)")
    out = []
    keys = jax.random.split(key, len(outputs)) if noisy else [None] * len(outputs)
    for i, (o, y) in enumerate(zip(outputs, vals)):
        y = np.asarray(y)
        scale = rel_noise * np.sqrt(np.mean((y - y.mean(0)) ** 2, axis=0)) + abs_noise
        scale = np.where(scale > 0, scale, 1.0) if not noisy else scale
        if noisy:
            y = y + scale * np.asarray(jax.random.normal(keys[i], y.shape, y.dtype))
        s = sigma[i] if isinstance(sigma, (list, tuple)) else sigma
        s = scale if s is None else s
        out.append(Measurement(o, tt[idx], y, np.asarray(s, float)))
    return out


def _grid_index(t0, h, n_save, times, what="measurement"):
    times = np.asarray(times, float).reshape(-1)
    k = np.rint((times - t0) / h).astype(int)
    err = np.abs(t0 + k * h - times)
    bad = (k < 0) | (k >= n_save) | (err > 1e-9 * (np.abs(times) + h))
    if np.any(bad):
        i = int(np.nonzero(bad)[0][0])
        raise ValueError(
            f"{what} time {times[i]:.9g} s is not on the simulation's save grid "
            f"t0 + k * {h:.6g} s, k = 0..{n_save - 1} (t0 = {t0:g}); choose times on the grid, "
            "or change dt / save_every")
    return k


def align(mech, measurements, t_span, dt, save_every=1) -> tuple:
    """Validate measurements and attach their save-point indices for a simulation over
    t_span with step dt saving every `save_every` steps (times must lie on that grid)."""
    t0, t1 = float(t_span[0]), float(t_span[1])
    n_steps = int(round((t1 - t0) / dt))
    h = dt * save_every
    n_save = n_steps // save_every + 1
    out = []
    for meas in ([measurements] if isinstance(measurements, Measurement) else measurements):
        mm = _as_measurement(meas, mech)
        k = _grid_index(t0, h, n_save, np.asarray(mm.times), f"{mm.output.name} measurement")
        out.append(dataclasses.replace(mm, index=jnp.asarray(k, jnp.int32)))
    return tuple(out)


def residuals(mech, params, traj, measurements):
    """Weighted residuals (simulated - measured) / sigma of `measurements` against a
    Trajectory, stacked; +inf everywhere if the simulation went non-finite. Measurements
    need their indices (`align`, or a `Problem`'s) when traj is traced; otherwise they are
    aligned here from traj.t."""
    ms = measurements
    if any(m.index is None for m in ms):
        tt = np.asarray(traj.t)
        h = float(tt[1] - tt[0]) if tt.size > 1 else 1.0
        aligned = []
        for x in ms:
            m = _as_measurement(x, mech)
            k = _grid_index(tt[0], h, tt.size, np.asarray(m.times), f"{m.output.name} measurement")
            aligned.append(dataclasses.replace(m, index=jnp.asarray(k, jnp.int32)))
        ms = aligned
    rs = []
    for m in ms:
        sim = m.output.evaluate(mech, params, traj.q[m.index], traj.v[m.index], traj.lam[m.index])
        rs.append(m.weighted_residual(sim))
    r = jnp.concatenate(rs)
    bad = (traj.status & st.NONFINITE) > 0
    return jnp.where(bad, jnp.inf, r)


def loss(mech, params, traj, measurements):
    """0.5 * mean(residuals^2) of `measurements` against a Trajectory (see `residuals`)."""
    r = residuals(mech, params, traj, measurements)
    return 0.5 * jnp.mean(r**2)


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


# =====================================================================================
# Gauss-Newton covariance and identifiability
# =====================================================================================

class Analysis(NamedTuple):
    """Gauss-Newton analysis at theta (physical units unless noted).

    labels; values (p,); jacobian (N, p) d residual / d theta; fisher (p, p) J^T J in
    theta; cov (p, p) covariance of the physical parameters (Gauss-Newton, (J^T W J)^-1
    mapped through the re-parametrisation; pseudo-inverse when rank-deficient); std (p,)
    (inf for parameters in a non-identifiable direction); rel_std (p,) std / |value|;
    correlation (p, p); rank: numerical rank of the Fisher information; singular_values
    (p,) of the relatively scaled Jacobian (d residual / d ln p: dimensionless, largest
    first; 1 / s_k is the standard deviation of the relative parameter combination k);
    null_directions: list of {label: coefficient} (unit vectors in relative parameter
    changes d p / p) that leave the residuals unchanged: those parameters cannot be
    separated; weak_directions: identifiable but with relative std > weak; chi2_dof:
    sum r^2 / (N - p) (about 1 when sigma matches the noise); scaled: whether cov was
    multiplied by chi2_dof.
    """

    labels: tuple
    values: np.ndarray
    jacobian: np.ndarray
    fisher: np.ndarray
    cov: np.ndarray
    std: np.ndarray
    rel_std: np.ndarray
    correlation: np.ndarray
    rank: int
    singular_values: np.ndarray
    null_directions: list
    weak_directions: list
    chi2_dof: float
    scaled: bool

    @property
    def identifiable(self) -> bool:
        return self.rank == len(self.labels)

    @property
    def non_identifiable(self) -> tuple:
        """Labels of parameters involved in a null direction (not separable)."""
        out = []
        for d in self.null_directions:
            out += [k for k in d if k not in out]
        return tuple(out)

    def summary(self) -> str:
        lines = [f"Fisher information: rank {self.rank} of {len(self.labels)}; singular values of "
                 f"the relative sensitivity matrix: " + ", ".join(f"{s:.3g}" for s in self.singular_values)]
        w = max(len(l) for l in self.labels)
        for i, l in enumerate(self.labels):
            rs = self.rel_std[i]
            lines.append(f"  {l:<{w}} = {self.values[i]:.6g} +- {self.std[i]:.3g}"
                         f" ({'inf' if not np.isfinite(rs) else f'{100 * rs:.3g} %'})")
        for d in self.null_directions:
            lines.append("  not separable (null direction in relative changes): "
                         + " ".join(f"{c:+.3f}*d{k}/{k}" for k, c in d.items()))
        for d, s in self.weak_directions:
            lines.append(f"  weakly identifiable (relative std {s:.3g}): "
                         + " ".join(f"{c:+.3f}*d{k}/{k}" for k, c in d.items()))
        return "\n".join(lines)


def _named(vec, labels, drop=0.05):
    vec = np.asarray(vec, float)
    vec = vec / np.linalg.norm(vec)
    i = int(np.argmax(np.abs(vec)))
    if vec[i] < 0:
        vec = -vec
    order = np.argsort(-np.abs(vec))
    return {labels[j]: float(vec[j]) for j in order if abs(vec[j]) >= drop * abs(vec[i])}


def _sparse_basis(V):
    """Rows spanning the same space as the orthonormal rows V (k, p), made sparse by
    Gauss-Jordan elimination with full pivoting (each row has a pivot parameter that the
    others do not contain), then normalised: null directions read like 'this parameter
    trades against those'."""
    A = np.array(V, float)
    k = A.shape[0]
    for r in range(k):
        sub = np.abs(A[r:])
        i, j = np.unravel_index(np.argmax(sub), sub.shape)
        A[[r, r + i]] = A[[r + i, r]]
        A[r] /= A[r, j]
        for o in range(k):
            if o != r:
                A[o] -= A[o, j] * A[r]
        A[np.abs(A) < 1e-12] = 0.0
    return A


def _rank_analysis(Js, rtol, zero_tol=1e-12):
    """SVD-based rank analysis of a column-scaled sensitivity matrix Js (N, p).

    Columns whose norm is <= zero_tol * the largest (parameters with no effect at all)
    are single null directions; the rest are analysed by SVD (singular values <= rtol *
    max count as zero). Returns (rank, s (p,), U, s_thin, Vt (of Js with the zero columns
    zeroed), null basis rows (k, p), sparse).
    """
    N, p = Js.shape
    norms = np.linalg.norm(Js, axis=0)
    nmax = norms.max() if p else 0.0
    zero = norms <= zero_tol * nmax if nmax > 0 else np.ones(p, bool)
    Jz = np.where(zero[None, :], 0.0, Js)
    U, s, Vt = np.linalg.svd(Jz, full_matrices=False)
    s_full = np.zeros(p)
    s_full[: s.size] = s
    rank = int(np.sum(s_full > rtol * s_full[0])) if s_full.size and s_full[0] > 0 else 0
    nulls = [np.eye(p)[j] for j in np.nonzero(zero)[0]]
    live = np.nonzero(~zero)[0]
    if live.size:
        _, s2, Vt2 = np.linalg.svd(Js[:, live], full_matrices=True)
        s2f = np.zeros(live.size)
        s2f[: s2.size] = s2
        r2 = int(np.sum(s2f > rtol * s2f[0])) if s2f[0] > 0 else 0
        if r2 < live.size:
            for v in _sparse_basis(Vt2[r2:]):
                e = np.zeros(p)
                e[live] = v
                nulls.append(e)
    return rank, s_full, U, s, Vt, nulls


def jacobian_report(J, labels, scale=None, rtol=1e-7, weak=None):
    """Rank, singular values and named null directions of a sensitivity matrix J (N, p).

    scale (p,): column scaling (e.g. |p| so that the columns are sensitivities to relative
    changes); rtol: singular values <= rtol * max are treated as zero (a column with no
    effect at all is its own null direction); weak: optional threshold on 1 / s_k to list
    weakly identifiable directions. Returns (rank, singular values, null directions, weak
    directions [(dir, 1/s)]), the directions as {label: coefficient} unit vectors in the
    scaled coordinates.
    """
    J = np.asarray(J, float)
    p = J.shape[1]
    sc = np.ones(p) if scale is None else np.asarray(scale, float)
    Js = J * sc
    if not np.all(np.isfinite(Js)):
        raise ValueError("sensitivity matrix has non-finite entries (simulation failed at theta?)")
    rank, s_full, _, _, Vt, null_rows = _rank_analysis(Js, rtol)
    nulls = [_named(v, labels) for v in null_rows]
    weaks = []
    if weak is not None:
        for k in range(rank):
            if 1.0 / s_full[k] > weak:
                weaks.append((_named(Vt[k], labels), float(1.0 / s_full[k])))
    return rank, s_full, nulls, weaks


@functools.partial(jax.jit)
def _jac(problem, theta):
    return jax.jacfwd(problem.residuals)(theta), problem.residuals(theta)


def analyze(problem: Problem, theta, *, rtol: float = 1e-7, weak: float = 1.0,
            scale_by_residual: bool = False) -> Analysis:
    """Gauss-Newton covariance and identifiability at theta (e.g. `fit(...).theta`).

    The residual Jacobian J = d r / d theta comes from `jax.jacfwd` (one forward-mode pass
    per parameter). Fisher information F = J^T J = J_u^T W J_u; covariance F^-1 in theta,
    mapped to physical parameters by the re-parametrisation's derivative. Identifiability
    uses the Jacobian w.r.t. relative parameter changes (d r / d ln p; columns of
    parameters whose value is 0 are taken per unit change): its numerical rank (singular
    values <= rtol * max count as zero), and the null directions, named by parameter.
    weak: report identifiable directions whose relative standard deviation exceeds it.
    scale_by_residual: multiply the covariance by chi2 / dof (use when sigma is unknown).
    """
    tr = problem.trainable
    theta = jnp.asarray(theta, float)
    J, r = _jac(problem, theta)
    J, r = np.asarray(J), np.asarray(r)
    vals = np.asarray(tr.physical(theta))
    dp = np.asarray(tr.dphysical(theta))
    Jp = J / dp  # d r / d p
    scale = np.where(np.abs(vals) > 0, np.abs(vals), 1.0)
    rank, s, nulls, weaks = jacobian_report(Jp, tr.labels, scale, rtol, weak)
    N, p = J.shape
    chi2 = float(np.sum(r**2) / max(N - p, 1))
    F = J.T @ J
    # covariance of the relative changes, then physical
    Js = Jp * scale
    U, sv, Vt = np.linalg.svd(Js, full_matrices=False)
    inv = np.where(sv > rtol * sv[0], 1.0 / np.where(sv > 0, sv, 1.0) ** 2, 0.0)
    C_rel = (Vt.T * inv) @ Vt
    cov = C_rel * np.outer(scale, scale)
    if scale_by_residual:
        cov = cov * chi2
    std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    for d in nulls:
        for k in d:
            std[tr.labels.index(k)] = np.inf
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = std / np.abs(vals)
        dd = np.sqrt(np.diag(cov))
        corr = cov / np.outer(dd, dd)
    return Analysis(tr.labels, vals, J, F, cov, std, rel, corr, rank, s, nulls, weaks, chi2,
                    bool(scale_by_residual))


def covariance(problem: Problem, theta, **kw) -> np.ndarray:
    """Gauss-Newton covariance (p, p) of the physical parameters at theta (see `analyze`)."""
    return analyze(problem, theta, **kw).cov


def identifiability(problem: Problem, theta, **kw) -> Analysis:
    """Identifiability report at theta: same as `analyze` (rank, singular values,
    null_directions, summary())."""
    return analyze(problem, theta, **kw)


# =====================================================================================
# Linear regressor (equation error)
# =====================================================================================

def _inertial_families(mech):
    out = []
    for bb in mech.bodies:
        bf = _F.body_family(bb.kind)
        if not hasattr(bf, "to_inertial"):
            raise ValueError(f"body family {bb.kind!r} has no linear inertial parametrisation; "
                             "use linear_regressor with named parameters instead")
        out.append((bb, bf, mech.nodes[bb.node].names))
    return out


def inertial_labels(mech) -> tuple:
    """Labels of the linear inertial parameters, body family by body family: per planar
    body 'b.m', 'b.mcx', 'b.mcy', 'b.Jref'; per particle 'p.m' (see each body family's
    `inertial_labels`)."""
    return tuple(f"{n}.{lab}" for _, bf, names in _inertial_families(mech)
                 for n in names for lab in bf.inertial_labels)


def inertial_parameters(mech, params):
    """Linear inertial parameter vector: per planar body (m, m c_x, m c_y,
    J_ref = J_G + m |c|^2) with c the CG in body coordinates and J_ref the inertia about the
    body's reference point; then the particle masses (the body families' `to_inertial`)."""
    parts = [bf.to_inertial(params.bodies[bb.kind]).reshape(-1)
             for bb, bf, _ in _inertial_families(mech)]
    return jnp.concatenate(parts)


def params_from_inertial(mech, params, phi):
    """Params with mass, cg and inertia (about the CG) from the linear inertial vector phi."""
    phi = jnp.asarray(phi)
    bodies = {k: dict(v) for k, v in params.bodies.items()}
    i = 0
    for bb, bf, names in _inertial_families(mech):
        L = len(bf.inertial_labels)
        bodies[bb.kind].update(bf.from_inertial(phi[i: i + L * len(names)].reshape(len(names), L)))
        i += L * len(names)
    return params.replace(bodies=bodies)


class Regressor(NamedTuple):
    """Linear equations Y x = b from measured motion (rows: samples x projected equations).

    Y (rows, p); b (rows,); labels (p,); nominal (p,) the parameter values used to build it
    (their null-space components are kept by `solve_linear`); rows_per_sample; to_params:
    function x -> Params.
    """

    Y: Any
    b: Any
    labels: tuple
    nominal: Any
    rows_per_sample: int
    to_params: Callable


def _rows_of(mech, names):
    if names == "all":
        return np.arange(mech.n_constraints)
    if isinstance(names, str):
        names = (names,)
    rows = []
    for nm in names:
        rows += list(mech.joint(nm).rows)
    return np.asarray(sorted(set(rows)), dtype=int)


def regressor(mech, to_params, p0, q, v, a, t, *, lam=None, known=(), u=None, labels=None,
              check_linear: bool = True) -> Regressor:
    """Regressor of parameters x that enter the equations of motion affinely.

    to_params: x (p,) -> Params (pure); p0 (p,): nominal x; q, v, a (s, n): measured
    coordinates, velocities, accelerations; t (s,). lam (s, m): multipliers of the rows
    whose forces are measured or known, and known: the joint/driver names of those rows
    ('all' for every row); for a driver, lam = -effort; for a revolute joint, the reaction
    force on body_j is -lam. u: control inputs (s, n_controls) or None.

    The equations M(x) a + Phi_q^T lam = Q(x) are projected onto the null space N of the
    rows with unknown multipliers (orthonormal, from an SVD at each sample, independent of
    x), N^T (M(x) a - Q(x) + Phi_K^T lam_K) = 0. The left side f(x) is affine in x, so
    Y = jacfwd(f) at p0 is exact and b = Y p0 - f(p0). check_linear verifies the affinity
    (a parameter that enters nonlinearly, e.g. a spring's free length, raises ValueError).
    """
    q, v, a = (jnp.asarray(x, float) for x in (q, v, a))
    t = jnp.asarray(t, float).reshape(-1)
    s, n = q.shape
    p0 = jnp.asarray(p0, float)
    params0 = to_params(p0)
    kr = _rows_of(mech, known) if known is not None and len(known) else np.zeros(0, int)
    ur = np.setdiff1d(np.arange(mech.n_constraints), kr)
    if kr.size and lam is None:
        raise ValueError("known rows given but no multipliers lam (s, m)")
    lamk = jnp.zeros((s, kr.size)) if not kr.size else jnp.asarray(lam, float)[:, kr]
    uu = jnp.zeros((s, mech.n_controls)) if u is None else jnp.broadcast_to(jnp.asarray(u, float), (s, mech.n_controls))
    # null-space bases of the unknown rows
    if ur.size:
        jac0 = np.asarray(constraint_terms(mech, params0, q[0], v[0], t[0]).jac)[ur]
        rank_u = int(np.linalg.matrix_rank(jac0))
        k = n - rank_u

        def basis(qq, tt):
            Ju = constraint_terms(mech, params0, qq, jnp.zeros_like(qq), tt).jac[ur]
            _, _, Vt = jnp.linalg.svd(Ju, full_matrices=True)
            return Vt[rank_u:].T

        Ns = jax.vmap(basis)(q, t)
    else:
        k = n
        Ns = jnp.broadcast_to(jnp.eye(n), (s, n, n))

    def f(x, qq, vv, aa, tt, lk, ui, N):
        P = to_params(x)
        Q, _, _ = generalized_forces(mech, P, qq, vv, tt, ui)
        M = mass_matrix(mech, P, qq)
        r = M.apply(aa) - Q
        if kr.size:
            jac = constraint_terms(mech, P, qq, vv, tt).jac
            r = r + jac[kr].T @ lk
        return N.T @ r

    labels = tuple(labels) if labels is not None else tuple(f"x[{i}]" for i in range(p0.size))
    args = (q, v, a, t, lamk, uu, Ns)
    Ys, fs, err, change, geo = _build_regressor(f, p0, args, mech, to_params, check_linear)
    if check_linear:
        geo, err, change = np.asarray(geo), np.asarray(err), np.asarray(change)
        bad = [labels[i] for i in range(p0.size) if geo[i] > 0]
        if bad:
            raise ValueError("these parameters change the constraint equations (joint geometry), "
                             "which the regressor method holds fixed; fit them with the gradient "
                             f"method instead: {', '.join(bad)}")
        floor = 1e-12 * (float(jnp.max(jnp.abs(fs))) + 1.0)
        bad = [labels[i] for i in range(p0.size) if err[i] > 1e-6 * change[i] + floor]
        if err[-1] > 1e-6 * change[-1] + floor and not bad:
            bad = ["(jointly: a product of the parameters)"] + list(labels)
        if bad:
            raise ValueError("these parameters do not enter the equations of motion linearly, so "
                             f"the regressor method cannot estimate them: {', '.join(bad)}")
    Y = Ys.reshape(s * k, -1)
    b = Y @ p0 - fs.reshape(-1)
    return Regressor(Y, b, labels, p0, k, to_params)


def _build_regressor(f, p0, args, mech, to_params, check):
    """Y per sample by jacfwd, f(p0), and the affinity checks (one jit)."""

    @jax.jit
    def build(p0, args):
        one = lambda *a: (jax.jacfwd(f)(p0, *a), f(p0, *a))
        Ys, fs = jax.vmap(one)(*args)
        if not check:
            return Ys, fs, None, None, None
        # each parameter perturbed by 30 % (0.3 if zero), then all at once, at a few samples
        s = args[0].shape[0]
        idx = np.unique(np.linspace(0, s - 1, min(5, s)).astype(int))
        sub = [x[idx] for x in args]
        step = jnp.where(jnp.abs(p0) > 0, 0.3 * jnp.abs(p0), 0.3)
        signs = jnp.where(jnp.arange(p0.size) % 2 == 0, 1.0, -0.7)
        D = jnp.concatenate([jnp.diag(step), (step * signs)[None]], 0)  # (p + 1, p)
        fp = jax.vmap(lambda d: jax.vmap(lambda *a: f(p0 + d, *a))(*sub))(D)
        f0 = fs[idx]
        pred = f0[None] + jnp.einsum("skj,dj->dsk", Ys[idx], D)
        err = jnp.max(jnp.abs(fp - pred), axis=(1, 2))
        change = jnp.max(jnp.abs(fp - f0[None]), axis=(1, 2))
        # parameters that move the constraint Jacobian
        q0, t0 = args[0][0], args[3][0]
        dJ = jax.jacfwd(lambda x: constraint_terms(mech, to_params(x), q0, jnp.zeros_like(q0), t0).jac)(p0)
        geo = jnp.max(jnp.abs(dJ), axis=(0, 1))
        return Ys, fs, err, change, geo

    return build(p0, args)


def inertial_regressor(mech, params, q, v, a, t, **kw) -> Regressor:
    """Regressor of the linear inertial parameters (see `inertial_labels`); params supplies
    everything else (geometry, springs, loads) and the nominal inertial values."""
    p0 = inertial_parameters(mech, params)
    return regressor(mech, lambda x: params_from_inertial(mech, params, x), p0, q, v, a, t,
                     labels=inertial_labels(mech), **kw)


def linear_regressor(mech, params, names, q, v, a, t, **kw) -> Regressor:
    """Regressor of named scalar parameters that enter the equations affinely, e.g. masses
    (with the CG and the inertia about the CG held at their values in params),
    'spring.k', 'spring.c', 'torsion.c', 'load.torque'. Parameters that enter nonlinearly
    or change the constraints raise ValueError."""
    tr = Trainable(mech, params, names, transforms={n: "identity" for n in names})
    p0 = tr._forward(tr.initial())
    return regressor(mech, tr.to_params, p0, q, v, a, t, labels=tr.labels, **kw)


class LinearFit(NamedTuple):
    """Least-squares solution of a Regressor: x (p,), values {label: x}, params, rank,
    singular_values (column-normalised regressor), null_directions (named, in units of the
    column scaling, i.e. per unit of each column's norm); residual_rms; std (p,) standard
    errors from the residual scatter (inf in null directions)."""

    x: np.ndarray
    values: dict
    params: Any
    rank: int
    singular_values: np.ndarray
    null_directions: list
    residual_rms: float
    std: np.ndarray


def solve_linear(reg: Regressor, weights=None, rcond: float = 1e-10) -> LinearFit:
    """Solve Y x = b by (weighted) linear least squares.

    Columns are normalised to unit norm; directions with singular value <= rcond * max are
    not identifiable from these data: their components keep the nominal values (the
    solution is nominal + the minimum-norm correction). weights: per-row 1/sigma^2.
    """
    Y, b = np.asarray(reg.Y, float), np.asarray(reg.b, float)
    if weights is not None:
        w = np.sqrt(np.asarray(weights, float))
        Y, b = Y * w[:, None], b * w
    x0 = np.asarray(reg.nominal, float)
    p = Y.shape[1]
    norms = np.linalg.norm(Y, axis=0)
    sc = np.where(norms > 1e-12 * norms.max(), 1.0 / np.where(norms > 0, norms, 1.0), 1.0)
    rank, s_full, U, s, Vt, null_rows = _rank_analysis(Y * sc, rcond)
    rhs = b - Y @ x0
    z = Vt[:rank].T @ ((U[:, :rank].T @ rhs) / s[:rank])
    x = x0 + sc * z
    res = b - Y @ x
    s2 = float(res @ res / max(Y.shape[0] - rank, 1))
    inv = np.zeros_like(s)
    inv[:rank] = 1.0 / s[:rank] ** 2
    cov = (Vt.T * inv) @ Vt * np.outer(sc, sc) * s2
    std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    nulls = [_named(v * sc, reg.labels) for v in null_rows]
    for d in nulls:
        for kk in d:
            std[reg.labels.index(kk)] = np.inf
    return LinearFit(x, {l: float(xi) for l, xi in zip(reg.labels, x)}, reg.to_params(jnp.asarray(x)),
                     rank, s_full, nulls, float(np.sqrt(np.mean(res**2))), std)


def trajectory_motion(mech, params, traj, u=None):
    """(t, q, v, a, lam) at a Trajectory's save points, a and lam from the equations of
    motion without stabilisation terms (the "measured" motion of a simulation, e.g. to test
    the regressor). u: None, an array (n_controls,) or (s, n_controls), or a function u(t)."""
    from .dynamics import accelerations

    nu = mech.n_controls
    if u is None:
        us = jnp.zeros((traj.t.shape[0], nu))
    elif callable(u):
        us = jax.vmap(lambda t: jnp.asarray(u(t), float).reshape(nu))(traj.t)
    else:
        us = jnp.broadcast_to(jnp.asarray(u, float), (traj.t.shape[0], nu))

    def one(q, v, t, uu):
        acc = accelerations(mech, params, q, v, t, uu)
        return acc.qdd, acc.lam

    a, lam = jax.jit(jax.vmap(one))(traj.q, traj.v, traj.t, us)
    return traj.t, traj.q, traj.v, a, lam
