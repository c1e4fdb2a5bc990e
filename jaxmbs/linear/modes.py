"""Eigenvalues, natural frequencies, damping ratios and mode shapes of a linear model, and
their motions and animations."""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .chart import _chart_state, _to_global
from .results import LinearModel, Modes


# ------------------------------------------------------------------------------ modes
def modes(lin) -> Modes:
    """Eigenvalues, natural frequencies, damping ratios and mode shapes of a LinearModel
    (or of a square matrix A, then with shapes in its own coordinates). jit / vmap / grad:
    the eigenvalues (and frequencies, damping ratios) are differentiable where they are
    simple; the eigenvectors and mode shapes are not differentiated (stop_gradient)."""
    A = lin.A if isinstance(lin, LinearModel) else jnp.asarray(lin)
    # eigenvalues differentiable (eigvals), eigenvectors not (JAX differentiates
    # non-symmetric eigenvectors only under assumptions it cannot check); both sorted by
    # the same key (modulus, then imaginary part descending)
    lam0, V = jnp.linalg.eig(jax.lax.stop_gradient(A))
    lam = jnp.linalg.eigvals(A)
    key = lambda z: jnp.lexsort((-jnp.imag(z), jnp.round(jnp.abs(z), 10)))
    lam, V = lam[key(lam)], V[:, key(lam0)]
    # scale: the largest position entry 1 (the largest entry for a pure velocity mode)
    npos = lin.n_position if isinstance(lin, LinearModel) else V.shape[0]
    mag_v = jnp.abs(V)
    pos_max = jnp.max(mag_v[:npos], axis=0) if npos else jnp.zeros(V.shape[1])
    use_pos = pos_max > 1e-9 * jnp.max(mag_v, axis=0)
    k = jnp.where(use_pos, jnp.argmax(mag_v.at[npos:].set(-1.0), axis=0), jnp.argmax(mag_v, axis=0))
    V = V / V[k, jnp.arange(V.shape[1])][None, :]
    mag = jnp.abs(lam)
    zeta = jnp.where(mag > 0, -jnp.real(lam) / jnp.where(mag > 0, mag, 1.0), jnp.nan)
    if isinstance(lin, LinearModel):
        sq, sv = lin.Tq.astype(V.dtype) @ V, lin.Tv.astype(V.dtype) @ V
    else:
        sq = sv = V
    return Modes(lam, mag, jnp.abs(jnp.imag(lam)), zeta, V, sq, sv)


def mode_motion(mech, lin, m, k, amplitude=0.1, n_frames=48, cycles=1.0):
    """A motion (t (s,), q (s, n_coords)) that shows mode k of Modes m: the operating
    point moved along the mode's position part, scaled so that its largest chart entry
    is `amplitude` (m or rad), over `cycles` periods of the damped frequency (one
    back-and-forth swing for a real eigenvalue), without growth or decay. First order:
    the constraints are satisfied to O(amplitude^2) (for drawing, not analysis)."""
    vec = np.asarray(m.vectors)[:, k]
    lam = complex(np.asarray(m.eigenvalues)[k])
    npos = lin.n_position
    Nx = np.asarray(lin.N)[: mech.n_vel, :]
    dxc = Nx @ vec  # chart position perturbation (complex)
    scale = np.max(np.abs(dxc))
    if scale == 0:
        dxc = np.asarray(lin.N)[mech.n_vel:, :] @ vec  # a pure velocity mode: show its motion
        scale = max(np.max(np.abs(dxc)), 1e-300)
    dxc = dxc * amplitude / scale
    wd = abs(lam.imag)
    period = 2 * np.pi / wd if wd > 0 else 1.0
    t = np.linspace(0.0, cycles * period, int(n_frames))
    phase = np.exp(1j * wd * t) if wd > 0 else np.sin(2 * np.pi * t / period)
    q0 = jnp.asarray(lin.q)
    V0 = _to_global(mech, q0, jnp.asarray(lin.v))
    qs = []
    for ph in phase:
        dx = jnp.asarray(np.real(dxc * ph), q0.dtype)
        qq, _ = _chart_state(mech, q0, V0, dx, jnp.zeros_like(dx))
        qs.append(np.asarray(mech.normalize(qq)))
    del npos
    return t, np.stack(qs)


def animate_mode(mech, params, lin, m, k, path, *, amplitude=0.1, n_frames=48, fps=20,
                 title=None):
    """Write an animated GIF of mode k (see `mode_motion`) with `jaxmbs.plot.animate`."""
    from types import SimpleNamespace

    from .. import plot

    t, q = mode_motion(mech, lin, m, k, amplitude, n_frames)
    lam = complex(np.asarray(m.eigenvalues)[k])
    if title is None:
        title = f"mode {k}: lambda = {lam.real:.4g} {'+' if lam.imag >= 0 else '-'} {abs(lam.imag):.4g}i 1/s"
    return plot.animate(mech, params, SimpleNamespace(t=t, q=q), path, fps=fps,
                        max_frames=n_frames, title=title)
