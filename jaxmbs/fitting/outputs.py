"""What is measured (outputs of a trajectory: coordinates, velocities, angles, points,
reactions) and the measurements, their alignment with the time grid and the residuals."""
from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import status as st
from ..analysis import reactions as _reactions
from ..core import families as _F
from ..core.equations import frame_states as _frame_states

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
    axis: int | None = None

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


def point(body: str, local=(0.0, 0.0), axis: int | None = None) -> Output:
    """Global position (x, y) (planar) or (x, y, z) (spatial) in m of the body-frame point
    `local` of `body` (axis: one component only). For a particle: its position."""
    loc = tuple(float(x) for x in np.asarray(local, float).reshape(-1))
    return Output("point", body, local=loc, axis=axis)


def reaction(joint: str, component: str = "force", axis: int | None = None) -> Output:
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
