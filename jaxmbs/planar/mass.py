"""The planar mass operator: block-diagonal M of planar bodies and particles.

Body b's 3x3 block in reference-point coordinates (x, y, theta) is
[[m I, m perp(c)], [m perp(c)^T, J + m |c|^2]] with c = A s_G the global CG offset and J
the inertia about the CG; a particle's block is m I. `MassMatrix` applies, inverts (in
closed form per block) and assembles it; the planar body families use it as their part
of the mechanism's mass operator (`jaxmbs.core.equations.BlockMass`).
"""
from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..core._small import MINV_MAX, matmul
from .geometry import perp

__all__ = ["MassMatrix"]


class MassMatrix(NamedTuple):
    """Block-diagonal mass matrix in reference-point coordinates.

    Body b's 3x3 block is [[m I, m perp(c)], [m perp(c)^T, J + m |c|^2]] with c = A s_G the
    global CG offset and J the inertia about the CG; a particle's block is m I.
    """

    m: jax.Array  # (nb,)
    J: jax.Array  # (nb,) about the CG
    c: jax.Array  # (nb, 2) global CG offset A s_G
    mp: jax.Array  # (np,)
    # (e,) zeros: the extra coordinates (cam curve parameters) carry no mass, so M is then
    # singular: `solve` is not available and the saddle solvers use an augmented M
    # (`jaxmbs.formulations.schur`); None (the default) when there are none
    me: jax.Array = None

    @property
    def n_extra(self) -> int:
        return 0 if self.me is None else self.me.shape[0]

    def _split(self, X):
        nb, npt = self.m.shape[0], self.mp.shape[0]
        Xb = X[: 3 * nb].reshape((nb, 3) + X.shape[1:])
        Xp = X[3 * nb: 3 * nb + 2 * npt].reshape((-1, 2) + X.shape[1:])
        return Xb, Xp

    def _join(self, Xb, Xp):
        tail = Xb.shape[2:]
        parts = [Xb.reshape((-1,) + tail), Xp.reshape((-1,) + tail)]
        if self.n_extra:  # massless extra coordinates: M X has zeros there
            parts.append(jnp.zeros((self.n_extra,) + tail, Xb.dtype))
        return jnp.concatenate(parts)

    def _bc(self, a, X):
        return a.reshape(a.shape + (1,) * (X.ndim - a.ndim))

    def apply(self, X):
        """M @ X for X (n,) or (n, k)."""
        Xb, Xp = self._split(X)
        pc = perp(self.c)
        m, J = self._bc(self.m, Xb[:, 0]), self._bc(self.J, Xb[:, 0])
        px, py = self._bc(pc[:, 0], Xb[:, 0]), self._bc(pc[:, 1], Xb[:, 0])
        c2 = self._bc(jnp.sum(self.c**2, -1), Xb[:, 0])
        yb = jnp.stack([
            m * (Xb[:, 0] + px * Xb[:, 2]),
            m * (Xb[:, 1] + py * Xb[:, 2]),
            m * (px * Xb[:, 0] + py * Xb[:, 1]) + (J + m * c2) * Xb[:, 2],
        ], 1)
        yp = self._bc(self.mp, Xp[:, 0])[:, None] * Xp
        return self._join(yb, yp)

    def solve(self, X):
        """M^-1 @ X for X (n,) or (n, k), in closed form per block (not defined with
        massless extra coordinates: ValueError)."""
        if self.n_extra:
            raise ValueError("MassMatrix.solve: this mechanism has massless extra coordinates "
                             "(cam curve parameters), so M is singular; solve the saddle system "
                             "with SchurCholesky or DenseLU, which handle them")
        if X.shape[0] <= MINV_MAX:  # small: dense M^-1 and an element-wise product
            return matmul(self.inverse_dense(), X)
        Xb, Xp = self._split(X)
        pc = perp(self.c)
        m, J = self._bc(self.m, Xb[:, 0]), self._bc(self.J, Xb[:, 0])
        px, py = self._bc(pc[:, 0], Xb[:, 0]), self._bc(pc[:, 1], Xb[:, 0])
        th = (Xb[:, 2] - px * Xb[:, 0] - py * Xb[:, 1]) / J
        yb = jnp.stack([Xb[:, 0] / m - px * th, Xb[:, 1] / m - py * th, th], 1)
        yp = Xp / self._bc(self.mp, Xp[:, 0])[:, None]
        return self._join(yb, yp)

    def inverse_dense(self):
        """M^-1 as an (n, n) array, assembled entry by entry from the closed-form 3x3
        block inverses (for small n; ValueError with massless extra coordinates)."""
        if self.n_extra:
            raise ValueError("MassMatrix.inverse_dense: M is singular (massless extra coordinates)")
        nb, npt = self.m.shape[0], self.mp.shape[0]
        n = 3 * nb + 2 * npt
        zero = jnp.zeros((), self.m.dtype)
        rows = [[zero] * n for _ in range(n)]
        pc = perp(self.c)
        for b in range(nb):
            im, iJ, px, py = 1.0 / self.m[b], 1.0 / self.J[b], pc[b, 0], pc[b, 1]
            blk = ((im + px * px * iJ, px * py * iJ, -px * iJ),
                   (px * py * iJ, im + py * py * iJ, -py * iJ),
                   (-px * iJ, -py * iJ, iJ))
            for i in range(3):
                for j in range(3):
                    rows[3 * b + i][3 * b + j] = blk[i][j]
        for k in range(npt):
            r = 3 * nb + 2 * k
            rows[r][r] = rows[r + 1][r + 1] = 1.0 / self.mp[k]
        return jnp.stack([jnp.stack(r) for r in rows])

    def dense(self):
        """The full (n, n) matrix (reference and tests)."""
        nb = self.m.shape[0]
        n = 3 * nb + 2 * self.mp.shape[0] + self.n_extra
        return self.apply(jnp.eye(n, dtype=self.m.dtype))

    def frame_inverse(self, idx, X):
        """Per-frame M^-1 x: X (N, 3) rows each on frame instance idx[N] (static NumPy
        ints; bodies 0..nb-1, then particles nb..nb+np-1, -1 for none: zero result)."""
        dtype = self.m.dtype
        z = jnp.zeros((1,), dtype)
        npt = self.mp.shape[0]
        im = jnp.concatenate([1.0 / self.m, 1.0 / self.mp, z])
        iJ = jnp.concatenate([1.0 / self.J, jnp.zeros((npt,), dtype), z])
        pc = jnp.concatenate([perp(self.c), jnp.zeros((npt, 2), dtype), jnp.zeros((1, 2), dtype)])
        a, b, px, py = im[idx], iJ[idx], pc[:, 0][idx], pc[:, 1][idx]
        th = b * (X[..., 2] - px * X[..., 0] - py * X[..., 1])
        return jnp.stack([a * X[..., 0] - px * th, a * X[..., 1] - py * th, th], -1)

    def frame_inverse_blocks(self):
        """(nb + np, 3, 3) inverse blocks in frame coordinates (a particle's theta row and
        column are zero)."""
        eye = jnp.eye(3, dtype=self.m.dtype)
        k = self.m.shape[0] + self.mp.shape[0]
        import numpy as _np
        idx = _np.repeat(_np.arange(k), 3)
        X = jnp.tile(eye, (k, 1))
        return self.frame_inverse(idx, X).reshape(k, 3, 3).transpose(0, 2, 1)
