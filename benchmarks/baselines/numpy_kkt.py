"""Plain NumPy baseline: redundant absolute coordinates + dense KKT solve, one mechanism.

This is the way small planar multibody codes are usually written (Nikravesh,
*Computer-Aided Analysis of Mechanical Systems*; Haug): every body has absolute
coordinates ``(x, y, theta)`` of its centre of gravity; joints contribute constraint
rows assembled in a Python loop over the joints; at every evaluation of the
accelerations the dense saddle-point system

    [ M    Phi_q^T ] [ qdd    ]   [ Q                                   ]
    [ Phi_q   0    ] [ lambda ] = [ gamma - 2 alpha Phi_dot - beta^2 Phi ]

is assembled and solved with ``np.linalg.solve`` (LAPACK LU), with Baumgarte
stabilisation ``alpha = beta = 10``.  Time integration is the classical fixed-step RK4
on ``(q, v)``, so there are four KKT solves per step.

Joint types used by the benchmark cases (``cases.py``):

* revolute between body i (point ``s_i`` in its frame) and body j (point ``s_j``) or
  ground (fixed point ``p``):  ``Phi = r_i + A_i s_i - r_j - A_j s_j`` (2 rows),
  ``gamma = A_i s_i thd_i^2 - A_j s_j thd_j^2``;
* "coordinate" constraints ``q_k = value`` (used for the slider: ``y = 0``,
  ``theta = 0``, i.e. a translational joint with the ground along x).
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import numpy as np

try:
    from . import cases as C
except ImportError:  # pragma: no cover
    import cases as C

ALPHA = 10.0
BETA = 10.0


def blas_threads(n: int | None):
    """Context limiting BLAS/LAPACK threads (needs ``threadpoolctl``; no-op without it).

    Multi-threaded OpenBLAS is *much* slower than one thread on these small dense
    solves (on the 2-core dev machine a 160x160 solve takes ~10 ms with 2 threads and
    ~0.5 ms with 1), so the baseline runs single-threaded by default.  Without
    threadpoolctl, set ``OPENBLAS_NUM_THREADS=1`` before NumPy is imported.
    """
    if n is None:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        return contextlib.nullcontext()
    return threadpool_limits(limits=n, user_api="blas")


@dataclass
class Revolute:
    i: int            # body index (>= 0)
    si: np.ndarray    # point on body i, local frame
    j: int            # body index, or -1 for ground
    sj: np.ndarray    # point on body j (local frame), or the ground point if j == -1


@dataclass
class CoordLock:
    k: int            # index into q
    value: float


class PlanarModel:
    """Bodies (mass, I_cg), joints and gravity of a planar mechanism in absolute coords."""

    def __init__(self, masses, inertias, joints, gravity=C.G):
        self.nb = len(masses)
        self.n = 3 * self.nb
        self.joints = list(joints)
        self.m = np.array([len_rows(jt) for jt in self.joints]).sum()
        mdiag = np.empty(self.n)
        mdiag[0::3] = masses
        mdiag[1::3] = masses
        mdiag[2::3] = inertias
        self.M = np.diag(mdiag)
        self.Q = np.zeros(self.n)
        self.Q[1::3] = -np.asarray(masses) * gravity
        self.masses = np.asarray(masses, float)
        self.inertias = np.asarray(inertias, float)
        self.gravity = gravity

    # -- constraint assembly (loop over joints) ---------------------------------
    def constraints(self, q, v):
        """Phi (m,), Phi_q (m, n) and gamma (m,) at (q, v)."""
        n, m = self.n, self.m
        Phi = np.zeros(m)
        Jac = np.zeros((m, n))
        gam = np.zeros(m)
        row = 0
        for jt in self.joints:
            if isinstance(jt, Revolute):
                i = jt.i
                th = q[3 * i + 2]
                c, s = np.cos(th), np.sin(th)
                A = np.array([[c, -s], [s, c]])
                B = np.array([[-s, -c], [c, -s]])  # dA/dtheta
                As = A @ jt.si
                Phi[row:row + 2] = q[3 * i:3 * i + 2] + As
                Jac[row:row + 2, 3 * i:3 * i + 2] = np.eye(2)
                Jac[row:row + 2, 3 * i + 2] = B @ jt.si
                gam[row:row + 2] = As * v[3 * i + 2] ** 2
                if jt.j >= 0:
                    j = jt.j
                    th = q[3 * j + 2]
                    c, s = np.cos(th), np.sin(th)
                    A = np.array([[c, -s], [s, c]])
                    B = np.array([[-s, -c], [c, -s]])
                    As = A @ jt.sj
                    Phi[row:row + 2] -= q[3 * j:3 * j + 2] + As
                    Jac[row:row + 2, 3 * j:3 * j + 2] = -np.eye(2)
                    Jac[row:row + 2, 3 * j + 2] = -(B @ jt.sj)
                    gam[row:row + 2] -= As * v[3 * j + 2] ** 2
                else:
                    Phi[row:row + 2] -= jt.sj
                row += 2
            elif isinstance(jt, CoordLock):
                Phi[row] = q[jt.k] - jt.value
                Jac[row, jt.k] = 1.0
                row += 1
            else:  # pragma: no cover
                raise TypeError(jt)
        return Phi, Jac, gam

    def accelerations(self, q, v):
        """q'' and lambda from the dense KKT system with Baumgarte stabilisation."""
        Phi, Jac, gam = self.constraints(q, v)
        n, m = self.n, self.m
        K = np.zeros((n + m, n + m))
        K[:n, :n] = self.M
        K[:n, n:] = Jac.T
        K[n:, :n] = Jac
        rhs = np.concatenate([self.Q, gam - 2.0 * ALPHA * (Jac @ v) - BETA ** 2 * Phi])
        sol = np.linalg.solve(K, rhs)
        return sol[:n], sol[n:]

    def rk4_step(self, q, v, h):
        a1, _ = self.accelerations(q, v)
        q2, v2 = q + 0.5 * h * v, v + 0.5 * h * a1
        a2, _ = self.accelerations(q2, v2)
        q3, v3 = q + 0.5 * h * v2, v + 0.5 * h * a2
        a3, _ = self.accelerations(q3, v3)
        q4, v4 = q + h * v3, v + h * a3
        a4, _ = self.accelerations(q4, v4)
        qn = q + h / 6.0 * (v + 2 * v2 + 2 * v3 + v4)
        vn = v + h / 6.0 * (a1 + 2 * a2 + 2 * a3 + a4)
        return qn, vn

    # -- diagnostics --------------------------------------------------------------
    def energy(self, q, v):
        T = 0.5 * (self.masses * (v[0::3] ** 2 + v[1::3] ** 2) + self.inertias * v[2::3] ** 2).sum()
        V = (self.masses * self.gravity * q[1::3]).sum()
        return T + V

    def constraint_norms(self, q, v):
        Phi, Jac, _ = self.constraints(q, v)
        return np.abs(Phi).max(), np.abs(Jac @ v).max()


def len_rows(jt):
    return 2 if isinstance(jt, Revolute) else 1


def build_model(case: str) -> PlanarModel:
    """The :mod:`cases` mechanism in absolute coordinates."""
    cd = C.case_data(case)
    bodies = cd.bodies
    masses = [b.mass for b in bodies]
    inertias = [b.icg for b in bodies]
    # local points relative to the CG, along the body's x axis
    prox = [np.array([-b.cg, 0.0]) for b in bodies]
    dist = [np.array([b.length - b.cg, 0.0]) for b in bodies]
    J = []
    if C.is_chain(case):
        J.append(Revolute(0, prox[0], -1, np.zeros(2)))
        for k in range(1, len(bodies)):
            J.append(Revolute(k, prox[k], k - 1, dist[k - 1]))
    elif case == "slider_crank":
        J += [Revolute(0, prox[0], -1, np.zeros(2)),       # crank pivot
              Revolute(1, prox[1], 0, dist[0]),             # crank pin
              Revolute(2, np.zeros(2), 1, dist[1]),         # wrist pin (slider)
              CoordLock(7, 0.0), CoordLock(8, 0.0)]         # slider: y = 0, theta = 0
    elif case == "fourbar":
        J += [Revolute(0, prox[0], -1, C.FB_A.copy()),      # A
              Revolute(1, prox[1], 0, dist[0]),             # B
              Revolute(2, prox[2], -1, C.FB_D.copy()),      # D
              Revolute(1, dist[1], 2, dist[2])]             # C (loop closure)
    return PlanarModel(masses, inertias, J, cd.gravity)


def run_numpy(case: str, nsteps: int, h: float = C.DT, q0=None, v0=None, record_every: int = 0,
              nblas_threads: int | None = 1):
    """Integrate one mechanism of ``case`` for ``nsteps`` RK4 steps of size ``h``.

    Returns ``((q, v), wall_seconds, steps_per_second)`` with ``q, v`` the final absolute
    coordinates / velocities (x, y, theta per body CG).  With ``record_every = k > 0``
    a 4th value is returned: a dict of arrays ``t, energy, phi, phidot`` (energy and the
    max-norms of Phi and Phi_q v) sampled every k steps (the recording time is included in
    the wall time; keep 0 for benchmarking).  ``nblas_threads``: BLAS threads during the
    run (see :func:`blas_threads`; None leaves the library default).
    """
    model = build_model(case)
    if q0 is None or v0 is None:
        q0, v0 = C.initial_absolute_state(case)
    q, v = np.array(q0, float), np.array(v0, float)
    rec = {"t": [], "energy": [], "phi": [], "phidot": []}

    def record(kstep):
        p, pd = model.constraint_norms(q, v)
        rec["t"].append(kstep * h)
        rec["energy"].append(model.energy(q, v))
        rec["phi"].append(p)
        rec["phidot"].append(pd)

    if record_every:
        record(0)
    with blas_threads(nblas_threads):
        t0 = time.perf_counter()
        for k in range(nsteps):
            q, v = model.rk4_step(q, v, h)
            if record_every and (k + 1) % record_every == 0:
                record(k + 1)
        wall = time.perf_counter() - t0
    out = ((q, v), wall, nsteps / wall)
    if record_every:
        return out + ({key: np.array(val) for key, val in rec.items()},)
    return out


def final_observables(case: str, q: np.ndarray) -> np.ndarray:
    """Comparable quantities (see ``cases.observables_from_absolute``)."""
    return C.observables_from_absolute(case, q)
