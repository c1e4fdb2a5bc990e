"""Crank trains for engine-balance studies: a builder on top of `jaxmbs.Model`, the
shaking forces and rocking couples on the engine block by inverse dynamics, their
harmonic orders, and the closed-form (phasor) results they are compared with.

    train = engines.CrankTrain.layout("inline-4")
    mech, params, q0, v0 = train.build()
    loads = engines.block_loads(train, mech, params, q0, samples=72)
    orders = engines.harmonics(loads["force"], 6)        # (6, 2) complex, N
    exact = engines.phasor_harmonics(train, 6)["force"]  # the same from closed form

Model (planar, explicit assumptions):
* Axes: the crankshaft axis is z (out of the plane); y is "up", x completes a right-handed
  frame. The crankshaft turns counter-clockwise at the constant speed omega: crank angle
  psi = omega t (rad). All angles of a layout are measured from +y, counter-clockwise.
* Cylinder k has a crank throw whose pin is at angle phases[k] from +y at psi = 0 (radius
  r = crank_radius), a connecting rod of length l from the pin to the wrist pin, and a
  piston that slides along the cylinder axis at angle banks[k] from +y; every cylinder
  axis passes through the crank axis (no wrist-pin offset). The angle between throw and
  cylinder axis is theta_k = psi + phases[k] - banks[k].
* The cylinders stand at axial stations z[k] along the crankshaft (m). In a planar model
  all cylinders move in the same plane; z[k] enters only the rocking couple, which is
  computed from the per-cylinder block forces: C = sum_k (z_k - z_ref) e_z x F_k, with
  z_ref the mean of z (the moment reference is the middle of the cylinder row; when the
  net force is not zero the couple depends on this reference).
* Bodies: 'shaft' (the crankshaft core: revolute 'main' to the ground at the origin,
  its CG on the axis, turned by the driver 'motor' = `drive_joint('main',
  constant_velocity(omega))`); per cylinder k = 1..n: 'throw{k}' welded to the shaft
  ('web{k}', at the origin; its CG at distance throw_cg along the throw, negative for a
  counterweight beyond the axis), 'rod{k}' (revolute 'pin{k}' to the throw at the crank
  pin; CG at distance rod_cg from the crank pin on the rod's centre line), 'piston{k}'
  (revolute 'wrist{k}' to the rod; prismatic 'bore{k}' to the ground along the
  cylinder axis; CG at the wrist pin). Gravity is zero.
* Per-cylinder block force F_k = -(force of 'web{k}' on the throw) - (force of 'bore{k}'
  on the piston): the force that cylinder k's moving parts (throw, rod, piston) exert on
  the block, i.e. -dp_k/dt. It is assumed to reach the block at the cylinder's station
  z_k (the rigid crankshaft makes the split of the main-bearing loads statically
  indeterminate; this per-throw split is the usual one, and the total force and total
  couple on a rigid block do not depend on it). The net shaking force is the sum of the
  forces that the mechanism exerts on the ground through all its ground joints (main
  bearing, driver, cylinder walls), equal to sum_k F_k and to minus the rate of change
  of the total linear momentum.

Closed form: the rod's CG lies on the segment pin-wrist at the fixed fraction
beta = rod_cg / l, so its acceleration is (1 - beta) a_pin + beta a_piston exactly; the
shaking force of a cylinder is therefore exactly that of a rotating mass
m_rot = (1 - beta) m_rod (+ m_throw throw_cg / r) at the pin and a reciprocating mass
m_rec = m_piston + beta m_rod at the wrist pin. With the exact piston position
x(theta) = r cos(theta) + sqrt(l^2 - r^2 sin(theta)^2) and -x''(theta) / r =
sum_n A_n cos(n theta), A_1 = 1 exactly (sqrt(...) has period pi, so it has only even
harmonics) and A_2 = lambda + lambda^3 / 4 + ..., A_4 = -(lambda^3 / 4 + ...), ...
(lambda = r / l); `piston_coefficients` evaluates the A_n by an FFT of the analytic
x''(theta) in NumPy, independently of the multibody model.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from ..analysis import inverse_dynamics
from ..profiles import constant_velocity
from .builder import Model

__all__ = ["CrankTrain", "LAYOUTS", "piston_coefficients", "phasor_harmonics", "harmonics",
           "block_loads", "momentum_rates", "balance_table"]

#: Named layouts: crank-pin phases and cylinder-axis (bank) angles in degrees from +y,
#: axial stations in units of the cylinder spacing.
LAYOUTS = {
    # one vertical cylinder
    "single": dict(phases=(0.0,), banks=(0.0,), stations=(0.0,)),
    # flat-plane crank 0-180-180-0, four vertical cylinders in a row
    "inline-4": dict(phases=(0.0, 180.0, 180.0, 0.0), banks=(0.0,) * 4,
                     stations=(0.0, 1.0, 2.0, 3.0)),
    # opposed cylinders on their own throws 180 degrees apart (opposed pistons move
    # mirror-symmetrically); left bank (+90 deg) cylinders 1, 3, right bank 2, 4; each
    # cylinder on its own station, as in real boxer engines (opposed pairs are offset)
    "boxer-4": dict(phases=(90.0, 270.0, 270.0, 90.0), banks=(90.0, -90.0, 90.0, -90.0),
                    stations=(0.0, 1.0, 2.0, 3.0)),
    # flat-4 non-boxer: opposed cylinders share a crank pin (a 180-degree V4, opposed
    # pistons move the same way); two pins 180 degrees apart; the two cylinders on a pin
    # are put at the same station
    "flat-4": dict(phases=(90.0, 90.0, 270.0, 270.0), banks=(90.0, -90.0, 90.0, -90.0),
                   stations=(0.0, 0.0, 1.0, 1.0)),
    # 120-degree crank, three vertical cylinders in a row
    "inline-3": dict(phases=(0.0, 120.0, 240.0), banks=(0.0,) * 3, stations=(0.0, 1.0, 2.0)),
}


def _pos(x, what):
    x = float(x)
    if not (math.isfinite(x) and x > 0):
        raise ValueError(f"CrankTrain: {what} must be a positive finite number, got {x}")
    return x


@dataclass(frozen=True)
class CrankTrain:
    """A crank train of n cylinders on one crankshaft (SI units, angles in rad).

    Fields:
      phases (n,): crank-pin angle of each cylinder's throw from +y at crank angle 0, rad.
      banks (n,): cylinder-axis direction from +y (counter-clockwise), rad; the axis
        passes through the crank axis.
      z (n,): axial station of each cylinder along the crankshaft, m (rocking couple only).
      crank_radius r (m), rod_length l (m, > r), omega: crank speed (rad/s, counter-clockwise).
      piston_mass (kg; CG at the wrist pin), rod_mass (kg), rod_cg: distance from the crank
      pin to the rod's CG along the rod (m, 0..l), rod_inertia: about the rod's CG (kg m^2).
      throw_mass (kg), throw_cg: distance of the throw's CG from the axis along the throw
      (m; 0 = the throw balances itself, negative = counterweight beyond the axis),
      throw_inertia (kg m^2 about its CG); shaft_mass, shaft_inertia (the core, CG on axis).
    """

    phases: tuple
    banks: tuple
    z: tuple
    crank_radius: float = 0.045
    rod_length: float = 0.145
    omega: float = 2 * math.pi * 100.0  # 6000 rpm
    piston_mass: float = 0.35
    rod_mass: float = 0.55
    rod_cg: float = 0.045
    rod_inertia: float = 2.5e-3
    throw_mass: float = 1.2
    throw_cg: float = 0.0
    throw_inertia: float = 1.5e-3
    shaft_mass: float = 2.0
    shaft_inertia: float = 2.0e-3

    def __post_init__(self):
        for f in ("phases", "banks", "z"):
            v = tuple(float(x) for x in np.atleast_1d(np.asarray(getattr(self, f), float)))
            if not all(math.isfinite(x) for x in v):
                raise ValueError(f"CrankTrain: {f} must be finite numbers, got {v}")
            object.__setattr__(self, f, v)
        n = len(self.phases)
        if n == 0 or len(self.banks) != n or len(self.z) != n:
            raise ValueError(f"CrankTrain: phases, banks and z need one entry per cylinder "
                             f"(got {n}, {len(self.banks)}, {len(self.z)}); give equal, non-zero lengths")
        for f in ("crank_radius", "rod_length", "piston_mass", "rod_mass", "rod_inertia",
                  "throw_mass", "throw_inertia", "shaft_mass", "shaft_inertia"):
            _pos(getattr(self, f), f)
        if not (math.isfinite(self.omega) and self.omega > 0):
            raise ValueError(f"CrankTrain: omega must be a positive crank speed in rad/s "
                             f"(counter-clockwise), got {self.omega}")
        if not self.rod_length > self.crank_radius:
            raise ValueError(f"CrankTrain: rod_length ({self.rod_length} m) must exceed "
                             f"crank_radius ({self.crank_radius} m) or the crank cannot turn")
        if not 0.0 <= self.rod_cg <= self.rod_length:
            raise ValueError(f"CrankTrain: rod_cg ({self.rod_cg} m) must lie between the crank "
                             f"pin (0) and the wrist pin (rod_length = {self.rod_length} m)")
        if not math.isfinite(self.throw_cg):
            raise ValueError(f"CrankTrain: throw_cg must be finite, got {self.throw_cg}")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def layout(cls, name: str, spacing: float = 0.09, **kw) -> CrankTrain:
        """A named layout of `LAYOUTS` ('single', 'inline-4', 'boxer-4', 'flat-4',
        'inline-3'); spacing: distance between cylinder stations (m); other fields by keyword."""
        if name not in LAYOUTS:
            raise ValueError(f"unknown layout {name!r}; known: {', '.join(LAYOUTS)}")
        d = LAYOUTS[name]
        return cls(phases=tuple(np.radians(d["phases"])), banks=tuple(np.radians(d["banks"])),
                   z=tuple(spacing * s for s in d["stations"]), **kw)

    def replace(self, **kw) -> CrankTrain:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **kw)

    @property
    def n(self) -> int:
        """Number of cylinders."""
        return len(self.phases)

    @property
    def reciprocating_mass(self) -> float:
        """m_rec = piston_mass + (rod_cg / rod_length) rod_mass, kg (exact for the force)."""
        return self.piston_mass + self.rod_mass * self.rod_cg / self.rod_length

    @property
    def rotating_mass(self) -> float:
        """Equivalent mass at the crank pin, kg: (1 - rod_cg / l) rod_mass + throw_mass
        throw_cg / r (exact for the force)."""
        return (self.rod_mass * (1.0 - self.rod_cg / self.rod_length)
                + self.throw_mass * self.throw_cg / self.crank_radius)

    # ------------------------------------------------------------------ model
    def model(self) -> Model:
        """The `jaxmbs.Model` at crank angle 0 (see the module docstring for names)."""
        r, l = self.crank_radius, self.rod_length
        m = Model(gravity=(0.0, 0.0))
        m.add_body("shaft", mass=self.shaft_mass, inertia=self.shaft_inertia)
        for k, (ph, bk) in enumerate(zip(self.phases, self.banks), start=1):
            u = np.array([-math.sin(ph), math.cos(ph)])          # throw direction
            e = np.array([-math.sin(bk), math.cos(bk)])          # cylinder axis
            th = ph - bk
            pin = r * u
            wrist = (r * math.cos(th) + math.sqrt(l * l - (r * math.sin(th)) ** 2)) * e
            d = (wrist - pin) / l
            ang = math.atan2(d[1], d[0])
            m.add_body(f"throw{k}", mass=self.throw_mass, inertia=self.throw_inertia,
                       position=(0.0, 0.0), cg=tuple(self.throw_cg * u))
            m.add_body(f"rod{k}", mass=self.rod_mass, inertia=self.rod_inertia,
                       position=tuple(pin + self.rod_cg * d), angle=ang)
            m.add_body(f"piston{k}", mass=self.piston_mass, inertia=1e-4,
                       position=tuple(wrist), angle=bk)
        m.add_revolute("main", "ground", "shaft", at=(0.0, 0.0))
        m.drive_joint("motor", "main", constant_velocity(self.omega))
        for k, (ph, bk) in enumerate(zip(self.phases, self.banks), start=1):
            u = np.array([-math.sin(ph), math.cos(ph)])
            e = np.array([-math.sin(bk), math.cos(bk)])
            th = ph - bk
            wrist = (r * math.cos(th) + math.sqrt(l * l - (r * math.sin(th)) ** 2)) * e
            m.add_weld(f"web{k}", "shaft", f"throw{k}", at=(0.0, 0.0))
            m.add_revolute(f"pin{k}", f"throw{k}", f"rod{k}", at=tuple(r * u))
            m.add_revolute(f"wrist{k}", f"rod{k}", f"piston{k}", at=tuple(wrist))
            m.add_prismatic(f"bore{k}", "ground", f"piston{k}", axis=tuple(e), at=tuple(wrist))
        return m

    def build(self):
        """`self.model().build()`: (mechanism, params, q0, v0)."""
        return self.model().build()

    def period(self) -> float:
        """One crank revolution, s."""
        return 2 * math.pi / self.omega


# ---------------------------------------------------------------------- closed form
def piston_coefficients(r: float, l: float, orders: int, samples: int = 4096) -> np.ndarray:
    """A_1..A_orders (orders,) of the exact piston acceleration, NumPy only:
    -x''(theta) / r = sum_n A_n cos(n theta) for x(theta) = r cos(theta) +
    sqrt(l^2 - r^2 sin(theta)^2) (r, l in m, l > r); evaluated by the FFT of the analytic
    x''(theta) on `samples` points of one revolution (the series converges geometrically,
    so the aliasing error is below double precision for samples >> orders)."""
    r, l = float(r), float(l)
    if not (r > 0 and l > r):
        raise ValueError(f"piston_coefficients: need 0 < r < l, got r = {r}, l = {l}")
    th = 2 * np.pi * np.arange(samples) / samples
    s, c = np.sin(th), np.cos(th)
    S = np.sqrt(l * l - r * r * s * s)
    xdd = -r * c - r * r * (c * c - s * s) / S - r ** 4 * s * s * c * c / S ** 3
    coef = 2.0 * np.fft.rfft(-xdd / r) / samples
    return coef.real[1:orders + 1]


def phasor_harmonics(train: CrankTrain, orders: int = 6, samples: int = 4096) -> dict:
    """Closed-form harmonic phasors of the block loads, NumPy only (no multibody model).

    A load L(psi) over crank angle psi = omega t has L = sum_n Re(P_n exp(i n psi)). Per
    cylinder: reciprocating m_rec r omega^2 A_n exp(i n (phases - banks)) e_k along the
    cylinder axis e_k = (-sin banks, cos banks), plus at n = 1 the rotating
    m_rot r omega^2 exp(i phases) (i, 1). Returns {'force': (orders, 2) complex N,
    'couple': (orders, 2) complex N m (about x and y through the mean station; see
    `block_loads`), 'cylinder': (orders, n, 2) complex N, 'scale_force': (orders,) the
    single-cylinder amplitude bound m_rec r w^2 |A_n| + [n = 1] |m_rot| r w^2 (N),
    (for odd orders >= 3, where A_n = 0 exactly, the first-order bound instead),
    'scale_couple': (orders,) scale_force * max|z - z_ref| (N m), 'A': (orders,)}.
    """
    r, w2 = train.crank_radius, train.omega ** 2
    A = piston_coefficients(r, train.rod_length, orders, samples)
    ph, bk = np.asarray(train.phases), np.asarray(train.banks)
    n = np.arange(1, orders + 1)[:, None]
    e = np.stack([-np.sin(bk), np.cos(bk)], -1)                              # (k, 2)
    rec = (train.reciprocating_mass * r * w2 * A[:, None] * np.exp(1j * n * (ph - bk)))
    cyl = rec[..., None] * e[None]                                           # (orders, k, 2)
    rot = train.rotating_mass * r * w2 * np.exp(1j * ph)[:, None] * np.array([1j, 1.0])
    cyl[0] += rot
    zr = np.asarray(train.z) - np.mean(train.z)
    force = cyl.sum(1)
    mz = np.einsum("k,okc->oc", zr, cyl)
    couple = np.stack([-mz[:, 1], mz[:, 0]], -1)
    scale = train.reciprocating_mass * r * w2 * np.abs(A)
    scale[0] += abs(train.rotating_mass) * r * w2
    # odd orders >= 3: A_n = 0 exactly (x(theta) - r cos(theta) has period pi), so no
    # cylinder has any content there; measure them against the first-order amplitude
    scale[2::2] = scale[0]
    return dict(force=force, couple=couple, cylinder=cyl, scale_force=scale,
                scale_couple=scale * max(np.max(np.abs(zr)), 1e-300), A=A)


# ---------------------------------------------------------------------- inverse dynamics
def harmonics(signal, orders: int = 6):
    """Complex harmonic phasors P_1..P_orders of samples over exactly one revolution.

    signal: (s, ...) samples at psi_j = 2 pi j / s, j = 0..s-1 (no repeated end point).
    Returns (orders, ...) complex with signal ~ sum_n Re(P_n exp(i n psi)); |P_n| is the
    amplitude of order n (same units as signal). Needs s > 2 orders (else ValueError).
    """
    x = jnp.asarray(signal)
    s = x.shape[0]
    if s <= 2 * orders:
        raise ValueError(f"harmonics: {s} samples cannot resolve {orders} orders; "
                         f"give more than {2 * orders} samples per revolution")
    return 2.0 * jnp.fft.fft(x, axis=0)[1:orders + 1] / s


def block_loads(train: CrankTrain, mech, params, q0, samples: int = 72, tol=None) -> dict:
    """Loads on the engine block over one crank revolution by inverse dynamics.

    The crank turns at train.omega; `samples` crank angles psi_j = 2 pi j / samples.
    Returns a dict of arrays (float, leading axis samples):
      'psi' (s,) rad; 't' (s,) s;
      'cylinder' (s, n, 2) N: per-cylinder block force F_k = -(web_k + bore_k reactions);
      'force' (s, 2) N: net shaking force = sum of the forces the mechanism exerts on the
        ground through all ground joints (main bearing, driver, bores);
      'couple' (s, 2) N m: rocking couple about the x and y axes through the mean station,
        (-sum_k z'_k F_k,y, sum_k z'_k F_k,x) with z'_k = z_k - mean(z);
      'torque' (s,) N m: moment about the crank axis (z) that the mechanism exerts on the
        ground (the torque reaction, including the motor's);
      'motor' (s,) N m: motor torque on the shaft; 'status' () int32 (0 = ok);
      'result': the `jaxmbs.InverseDynamics`.
    tol: Newton tolerance of the kinematics (relative, see `jaxmbs.kinematics`); default
    max(1e-10, 64 eps) of q0's dtype (1e-10 in float64, about 8e-6 in float32).
    Pure JAX after the build (works under jit/vmap over params with a fixed `samples`).
    """
    if int(samples) < 3:
        raise ValueError(f"block_loads: samples must be at least 3, got {samples}")
    s = int(samples)
    names = {j.name for j in mech.joints}
    need = ["motor"] + [f"{w}{k}" for k in range(1, train.n + 1) for w in ("web", "bore")]
    missing = [x for x in need if x not in names]
    if missing or f"web{train.n + 1}" in names:
        raise ValueError(f"block_loads: the mechanism was not built from this {train.n}-cylinder "
                         f"CrankTrain (missing joints: {', '.join(missing) or 'none'}; or more "
                         "cylinders); pass the (mech, params, q0) of train.build()")
    period = train.period()
    q0 = jnp.asarray(q0)
    ts = jnp.arange(s, dtype=q0.dtype) * (period / s)
    if tol is None:
        tol = max(1e-10, 64 * float(jnp.finfo(q0.dtype).eps))
    res = inverse_dynamics(mech, params, q0, ts, tol=tol)
    reac = res.reactions
    cols = mech.frame_qcols("planar")
    cyl = []
    for k in range(1, train.n + 1):
        cyl.append(-(reac[f"web{k}"]["force"] + reac[f"bore{k}"]["force"]))
    cyl = jnp.stack(cyl, axis=1)                                           # (s, n, 2)
    qe = jnp.concatenate([res.q, jnp.zeros((s, 1), res.q.dtype)], axis=1)
    force = jnp.zeros((s, 2), res.q.dtype)
    torque = jnp.zeros((s,), res.q.dtype)
    for j in mech.joints:
        if j.kind == "constraint" or (j.frame_i != 0 and j.frame_j != 0):
            continue
        gen = reac[j.name]["generalized"]                                  # on body_j about its ref
        if j.frame_i == 0:  # the ground is body_i: it receives the opposite
            rj = qe[:, cols[j.frame_j][:2]]
            force = force - gen[:, :2]
            torque = torque - (gen[:, 2] + rj[:, 0] * gen[:, 1] - rj[:, 1] * gen[:, 0])
        else:  # the ground is body_j (reference point at the origin)
            force = force + gen[:, :2]
            torque = torque + gen[:, 2]
    zr = jnp.asarray(np.asarray(train.z) - np.mean(train.z), res.q.dtype)
    mz = jnp.einsum("k,skc->sc", zr, cyl)
    couple = jnp.stack([-mz[:, 1], mz[:, 0]], -1)
    return dict(psi=ts * train.omega, t=ts, cylinder=cyl, force=force, couple=couple,
                torque=torque, motor=reac["motor"]["effort"], status=res.status, result=res)


def momentum_rates(mech, params, q, v, a) -> tuple:
    """(dp/dt (s, 2) N, dH/dt (s,) N m): rates of change of the total linear momentum and
    of the angular momentum about the origin (z axis) of all bodies, from coordinates,
    velocities and accelerations (s, n) (each body's CG from its Params). Particles included."""
    q, v, a = (jnp.atleast_2d(jnp.asarray(x)) for x in (q, v, a))
    nb, npart = mech.n_bodies, mech.n_particles
    rigid = params.bodies["planar_rigid"]
    mass, inertia, cg = rigid["mass"], rigid["inertia"], rigid["cg"]
    qb = q[:, :3 * nb].reshape(-1, nb, 3)
    vb = v[:, :3 * nb].reshape(-1, nb, 3)
    ab = a[:, :3 * nb].reshape(-1, nb, 3)
    th, om, al = qb[..., 2], vb[..., 2], ab[..., 2]
    c, s = jnp.cos(th), jnp.sin(th)
    sx = c * cg[:, 0] - s * cg[:, 1]
    sy = s * cg[:, 0] + c * cg[:, 1]
    rc = jnp.stack([qb[..., 0] + sx, qb[..., 1] + sy], -1)
    ac = jnp.stack([ab[..., 0] - al * sy - om ** 2 * sx, ab[..., 1] + al * sx - om ** 2 * sy], -1)
    dp = jnp.einsum("b,sbc->sc", mass, ac)
    dH = jnp.sum(mass * (rc[..., 0] * ac[..., 1] - rc[..., 1] * ac[..., 0]) + inertia * al, -1)
    if npart:
        pm = params.bodies["particle2d"]["mass"]
        qp = q[:, 3 * nb:].reshape(-1, npart, 2)
        ap = a[:, 3 * nb:].reshape(-1, npart, 2)
        dp = dp + jnp.einsum("p,spc->sc", pm, ap)
        dH = dH + jnp.sum(pm * (qp[..., 0] * ap[..., 1] - qp[..., 1] * ap[..., 0]), -1)
    return dp, dH


def balance_table(train: CrankTrain, loads: dict, orders: int = 6) -> dict:
    """Harmonic amplitudes of `block_loads` output against `phasor_harmonics` (NumPy).

    Returns {'orders': [1..orders], 'force_x', 'force_y' (N), 'couple_x', 'couple_y'
    (N m), 'torque' (N m): amplitude lists from the inverse dynamics; 'phasor_force_x',
    ... the closed-form amplitudes; 'rel_error' (orders, 4) array: |P_model - P_closed| /
    max(|P_closed|, single-cylinder scale of that order) per force x, force y, couple x,
    couple y (complex phasors compared, so phases count too); 'max_rel_error': float}.
    """
    P = phasor_harmonics(train, orders)
    hf = np.asarray(harmonics(loads["force"], orders))
    hc = np.asarray(harmonics(loads["couple"], orders))
    ht = np.asarray(harmonics(loads["torque"], orders))
    err = np.concatenate([
        np.abs(hf - P["force"]) / np.maximum(np.abs(P["force"]), P["scale_force"][:, None]),
        np.abs(hc - P["couple"]) / np.maximum(np.abs(P["couple"]), P["scale_couple"][:, None]),
    ], axis=1)
    amp = lambda x: [float(v) for v in np.abs(x)]
    return {"orders": list(range(1, orders + 1)),
            "force_x": amp(hf[:, 0]), "force_y": amp(hf[:, 1]),
            "couple_x": amp(hc[:, 0]), "couple_y": amp(hc[:, 1]), "torque": amp(ht),
            "phasor_force_x": amp(P["force"][:, 0]), "phasor_force_y": amp(P["force"][:, 1]),
            "phasor_couple_x": amp(P["couple"][:, 0]), "phasor_couple_y": amp(P["couple"][:, 1]),
            "rel_error": err, "max_rel_error": float(np.max(err))}
