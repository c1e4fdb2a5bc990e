"""Planar shear-deformable (geometrically exact Simo-Reissner / Timoshenko) beam elements.

A beam is a chain of nodes of the node family 'reissner2d_node': each node has the
absolute position r = (x, y) (m) of the centre line and the absolute angle theta (rad) of
its cross-section (the section's normal, the material axis that is the tangent of the
undeformed straight beam, is (cos theta, sin theta)), q_node = (x, y, theta), nq = nv = 3,
v = qdot. The node presents itself to joints and forces as a planar frame (frame kind
'planar', like a rigid body), so every planar joint (revolute, weld, prismatic, ...),
spring and load applies to it: a pin is a 'coincident' joint, a clamp a weld ('coincident'
+ 'angle'), which fixes the cross-section's angle theta, not the centre line's slope (the
slope differs from it by the shear angle).

Between consecutive nodes i, j an element of undeformed length L interpolates r and
theta linearly in xi = x / L. Strains (Reissner 1972, Simo and Vu-Quoc 1986; exact for
any rotation, no small-angle assumption):

    Gamma = R(theta)^T r' - (1, 0):  Gamma_1 axial strain, Gamma_2 shear strain,
    kappa = theta'                   (bending curvature, 1/m),

with r' = dr/dx. Strain energy

    U = integral_0^L [ E A Gamma_1^2 + k G A Gamma_2^2 + E I kappa^2 ] / 2 dx,

integrated with one Gauss point (the element's midpoint, theta_m = (theta_i + theta_j) / 2).
One-point (uniform reduced) integration is the standard cure of shear locking of the
linear element: the shear strain is sampled where the linear rotation and the constant
centre line slope are consistent, so the element stays free of locking as the beam gets
slender (k G A / (E I / L^2) -> infinity; tests/test_shear_beam.py checks L/h = 100 and
1000) and converges in O(h^2) to the Timoshenko (thick) and Euler-Bernoulli (slender)
solutions; kappa is constant per element, so the bending term is exact, and the 3 sampled
strains per element leave no spurious zero-energy (hourglass) mode. The section has no
thickness coordinate: no thickness strain, so no Poisson locking. Internal forces are
written out (`element_forces`, checked against jax.grad of U in the tests):
N = E A Gamma_1 (axial force, N), V = k G A Gamma_2 (shear force, N), M = E I kappa
(bending moment, N m) and their work conjugates.

The consistent mass follows from T = integral [ rho A |r_dot|^2 + rho I theta_dot^2 ] / 2 dx
(rotary inertia included, as in Timoshenko's beam): per element (L / 6) [[2, 1], [1, 2]]
(x) diag(rho A, rho A, rho I), constant, exact (two-point Gauss). Gravity and a uniform
dead line load act consistently (L / 2 on each node's position). Rayleigh damping: alpha
(1/s): -alpha M qdot; beta (s): the strain-rate (Kelvin-Voigt) forces of the stresses
beta (E A Gamma_1_dot, k G A Gamma_2_dot, E I kappa_dot) (objective: no force in a rigid
motion; about the straight state -beta K qdot).

Families (registered on import, after `jaxmbs.flexible.ancf3d`):

* node family 'reissner2d_node' (nq = nv = 3, coordinates x, y, theta) on the frame kind
  'planar'.
* body family 'reissner2d_beam' on it: per node the section of the element that starts
  there and ends at the next node of the block: rho (kg/m^3), area A (m^2), E (Pa), G
  (shear modulus, Pa), I (m^4), shear_factor k (Timoshenko's shear correction, 5/6 for a
  rectangle), length L (m; 0 for a beam's last node: no element), alpha (1/s), beta (s),
  line_load (2,) N/m; all Params leaves (traced, fittable). Its mass part is the
  assembled consistent mass (`ancf.BeamMass`, block tridiagonal, factored once per
  `simulate` run by `prepare`), shared with the ANCF beams (`ancf.AncfBeam`).

`jaxmbs.Model.add_shear_beam` meshes a straight beam into these families.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from ..core import families as F
from . import ancf as A

__all__ = ["element_strains", "element_energy", "element_forces", "element_mass"]

PLANAR = "planar"


def element_strains(e, L, ed=None):
    """e (k, 2, 3) the two nodes' coordinates (x, y, theta) (m, m, rad) of k elements of
    length L (k,) m -> ((Gamma_1, Gamma_2, kappa) (k,) each, at the midpoint (1, 1,
    1/m); the section's axes there t = (cos theta_m, sin theta_m), n = (-sin, cos)
    (k, 2); rates): with the nodal rates ed (k, 2, 3) the strain rates (Gamma_1_dot,
    Gamma_2_dot, kappa_dot) (k,) each (1/s, 1/s, 1/(m s)), else None."""
    rp = (e[:, 1, :2] - e[:, 0, :2]) / L[:, None]
    thm = 0.5 * (e[:, 0, 2] + e[:, 1, 2])
    c, s = jnp.cos(thm), jnp.sin(thm)
    t = jnp.stack([c, s], -1)
    n = jnp.stack([-s, c], -1)
    g1 = jnp.sum(t * rp, -1) - 1.0
    g2 = jnp.sum(n * rp, -1)
    kap = (e[:, 1, 2] - e[:, 0, 2]) / L
    rates = None
    if ed is not None:
        rpd = (ed[:, 1, :2] - ed[:, 0, :2]) / L[:, None]
        thd = 0.5 * (ed[:, 0, 2] + ed[:, 1, 2])
        rates = (jnp.sum(t * rpd, -1) + g2 * thd, jnp.sum(n * rpd, -1) - (1.0 + g1) * thd,
                 (ed[:, 1, 2] - ed[:, 0, 2]) / L)
    return (g1, g2, kap), t, n, rates


def element_energy(e, L, EA, GAs, EI):
    """Strain energy (J) (k,) of k elements: e (k, 2, 3) nodal (x, y, theta), L (k,) m,
    EA (k,) N axial, GAs = k G A (k,) N shear, EI (k,) N m^2 bending stiffness; one-point
    (midpoint) integration of the axial and shear terms, exact for the bending term."""
    (g1, g2, kap), _, _, _ = element_strains(e, L)
    return 0.5 * L * (EA * g1 * g1 + GAs * g2 * g2 + EI * kap * kap)


def _work_conjugate(L, g1, g2, t, n, N, V, M):
    """-d/de of integral (N Gamma_1 + V Gamma_2 + M kappa) dx at fixed stresses N, V (N), M
    (N m) (k,): the generalised forces (k, 2, 3) on the two nodes' (x, y, theta)."""
    f = N[:, None] * t + V[:, None] * n                      # force on node i (N)
    dth = 0.5 * L * (N * g2 - V * (1.0 + g1))               # dU/dtheta_m / 2 (N m)
    Qi = jnp.concatenate([f, (M - dth)[:, None]], -1)
    Qj = jnp.concatenate([-f, (-M - dth)[:, None]], -1)
    return jnp.stack([Qi, Qj], 1)


def element_forces(e, L, EA, GAs, EI, ed=None, beta=None):
    """Internal forces -dU/de (k, 2, 3) (N, N, N m) of k elements (arguments as
    `element_energy`; analytic, checked against jax.grad in the tests). With the rates ed
    (k, 2, 3) and beta (k,) s: plus the strain-rate damping forces (stresses
    beta (EA Gamma_1_dot, GAs Gamma_2_dot, EI kappa_dot) added to the elastic ones)."""
    (g1, g2, kap), t, n, rates = element_strains(e, L, ed)
    a1, a2, ak = g1, g2, kap
    if ed is not None:
        a1, a2, ak = g1 + beta * rates[0], g2 + beta * rates[1], kap + beta * rates[2]
    return _work_conjugate(L, g1, g2, t, n, EA * a1, GAs * a2, EI * ak)


_H = np.array([[2.0, 1.0], [1.0, 2.0]]) / 6.0  # integral_0^1 N_a N_b dxi, N = (1 - xi, xi)


def element_mass(L, rhoA, rhoI):
    """Consistent mass matrices (k, 6, 6) (kg, kg m^2 entries) of k elements of length
    L (k,) m, mass per length rhoA (k,) kg/m and rotary inertia per length rhoI (k,) kg m,
    in the order (x_i, y_i, theta_i, x_j, y_j, theta_j): L H (x) diag(rhoA, rhoA, rhoI),
    H = [[2, 1], [1, 2]] / 6; constant."""
    diag = jnp.stack([rhoA, rhoA, rhoI], -1)                                  # (k, 3)
    D = diag[:, :, None] * jnp.eye(3, dtype=diag.dtype)                       # (k, 3, 3)
    M = jnp.einsum("ab,kcd->kacbd", jnp.asarray(_H, diag.dtype), D).reshape(-1, 6, 6)
    return L[:, None, None] * M


class ReissnerNode(F.NodeFamily):
    """(x, y, theta) (m, m, rad) of a beam node; presents a planar frame."""

    name = "reissner2d_node"
    nq = nv = 3
    frame = PLANAR
    frame_q = frame_v = (0, 1, 2)
    coord_names = vel_names = ("x", "y", "theta")


class ReissnerBeam(A.AncfBeam):
    """Shear-deformable planar beam elements on 'reissner2d_node' (module docstring):
    rho (k,) kg/m^3, area (k,) m^2, E (k,) Pa, G (k,) Pa, I (k,) m^4, shear_factor (k,)
    (dimensionless), length (k,) m (0: no element starts here), alpha (k,) 1/s, beta (k,)
    s, line_load (k, 2) N/m. The mass part and its preparation are those of
    `ancf.AncfBeam` with the elements' masses of `element_mass`."""

    name = "reissner2d_beam"
    node = "reissner2d_node"
    fields = ("rho", "area", "E", "G", "I", "shear_factor", "length", "alpha", "beta", "line_load")
    rules = {**A.AncfBeam.rules, "G": "> 0", "shear_factor": "> 0"}
    dim = 2
    width = 3

    def _element_masses(self, p, Ls, mask, dtype):
        k1 = Ls.shape[0]
        rho = jnp.where(mask, p["rho"][:k1], 0.0).astype(dtype)
        return element_mass(Ls, rho * p["area"][:k1], rho * p["I"][:k1])

    def loads(self, p, X, V, g):
        """Gravity and the line load (rho A g + line_load) L / 2 on each node's position of
        each element, the elastic forces, the Rayleigh damping forces -alpha M_e ed +
        the strain-rate forces (beta); the potential per instance: gravity + line load on
        its coordinates + the strain energy of the element that starts at it."""
        k = X.shape[0]
        mask, Ls, e = A._elements(p, X, rows=2)
        ed = jnp.concatenate([V[:-1], V[1:]], -1).reshape(k - 1, 2, 3)
        pe = {f: p[f][: k - 1] for f in self.fields}
        rhoA = jnp.where(mask, pe["rho"] * pe["area"], 0.0)
        EA, EI = pe["E"] * pe["area"], pe["E"] * pe["I"]
        GAs = pe["shear_factor"] * pe["G"] * pe["area"]
        f = rhoA[:, None] * g[None, :] + jnp.where(mask[:, None], pe["line_load"], 0.0)
        half = (0.5 * Ls[:, None] * f)
        zero = jnp.zeros_like(Ls)[:, None]
        Qg = A._scatter_elements(jnp.concatenate([half, zero, half, zero], -1), k)
        Me = self._element_masses(p, Ls, mask, X.dtype)
        Qd_mass = -pe["alpha"][:, None] * jnp.einsum("kab,kb->ka", Me, ed.reshape(k - 1, 6))
        Qe = element_forces(e, Ls, EA, GAs, EI, ed, pe["beta"]).reshape(k - 1, 6) + Qd_mass
        Qe = jnp.where(mask[:, None], Qe, 0.0)
        U = jnp.where(mask, element_energy(e, Ls, EA, GAs, EI), 0.0)
        pot = -jnp.sum(Qg * X, -1) + jnp.concatenate([U, jnp.zeros((1,), X.dtype)])
        return Qg + A._scatter_elements(Qe, k), pot

    def inertia_data(self, p):
        z = jnp.zeros_like(p["rho"])
        return z, z, jnp.zeros(z.shape + (2,), z.dtype)


for _f in (ReissnerNode(), ReissnerBeam()):
    F.register(_f)
