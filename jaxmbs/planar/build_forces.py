"""The force methods of the planar builder (`jaxmbs.Model`): springs, loads, contacts and the rotating frame."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from .. import profiles as prof
from ..core import build as B
from ..core.build import GROUND
from ..core.build import recorded as _recorded
from .build_joints import _finite, _positive, _vec2


class ForceMethods:
    """Springs, torsion springs, loads, penalty contacts and a rotating reference frame."""

    # ------------------------------------------------------------------ forces
    @_recorded
    def add_spring(self, name, body_i, body_j, k, c=0.0, length=None, force=0.0, at_i=None,
                   at_j=None, point_i=None, point_j=None) -> str:
        """Translational spring-damper-actuator between two points.

        k: N/m (>= 0); c: N s/m (>= 0); length: free length, m (default: the distance in
        the initial configuration, computed now); force: constant actuator tension, N.
        """
        owner = f"spring {name!r}"
        self._new_name(name, "force")
        self._two(owner, body_i, body_j)
        si = self._local(body_i, owner, at_i, point_i, "_i", "at_i")
        sj = self._local(body_j, owner, at_j, point_j, "_j", "at_j")
        d0 = float(np.linalg.norm(self._global(body_j, sj) - self._global(body_i, si)))
        if d0 < 1e-12:
            raise ValueError(f"{owner}: the two points coincide in the initial configuration; "
                             "a spring needs distinct end points")
        k, c = _finite(k, f"{owner}: k"), _finite(c, f"{owner}: c")
        if k < 0 or c < 0:
            raise ValueError(f"{owner}: stiffness k and damping c must be >= 0, got k={k}, c={c}")
        L = d0 if length is None else _finite(length, f"{owner}: length")
        self._springs.append(dict(name=name, fi=body_i, fj=body_j, point_i=si, point_j=sj, k=k, c=c,
                                  length=L, force=_finite(force, f"{owner}: force")))
        return name

    @_recorded
    def add_torsion_spring(self, name, body_i, body_j, k, c=0.0, angle=None, torque=0.0) -> str:
        """Rotational spring-damper-actuator on theta_j - theta_i.

        k: N m/rad; c: N m s/rad; angle: free relative angle, rad (default: the initial one);
        torque: constant actuator torque, N m (acts -torque on body_j).
        """
        owner = f"torsion spring {name!r}"
        self._new_name(name, "force")
        ki, kj = self._two(owner, body_i, body_j)
        self._require_bodies(owner, (ki, kj), (body_i, body_j), "it cannot carry a torsion spring")
        th0 = self._frame(body_j, owner)[1][2] - self._frame(body_i, owner)[1][2]
        k, c = _finite(k, f"{owner}: k"), _finite(c, f"{owner}: c")
        if k < 0 or c < 0:
            raise ValueError(f"{owner}: stiffness k and damping c must be >= 0, got k={k}, c={c}")
        self._torsions.append(dict(name=name, fi=body_i, fj=body_j, k=k, c=c,
                                   angle=th0 if angle is None else _finite(angle, f"{owner}: angle"),
                                   torque=_finite(torque, f"{owner}: torque")))
        return name

    @_recorded
    def add_load(self, name, body, force=(0.0, 0.0), torque=0.0, at=None, point=None,
                 local=False, control=None, fn=None) -> str:
        """Applied force (N) at a point and torque (N m) on a body.

        force: (2,) in global coordinates, or in body coordinates if local=True.
        control: index of a control input u[control] that scales force and torque.
        fn: JAX function f(t) -> (fx, fy, torque) (global) added to the constant part.
        """
        if self._is_ffr(body):
            return self._ffr_load(name, body, force, torque, at, point, local, control, fn)
        owner = f"load {name!r}"
        self._new_name(name, "force")
        kind, _ = self._frame(body, owner)
        if body == GROUND:
            raise ValueError(f"{owner}: a load on the ground does nothing; give a body")
        s = self._local(body, owner, at, point, "")
        B.control_channel(control, owner)
        if fn is not None and not callable(fn):
            raise ValueError(f"{owner}: fn must be a JAX function f(t) -> (fx, fy, torque)")
        if not isinstance(local, (bool, np.bool_)):
            raise ValueError(f"{owner}: local must be True (force in body axes) or False "
                             f"(global axes), got {local!r}")
        self._loads.append(dict(name=name, f=body, point=s, force=_vec2(force, f"{owner}: force"),
                                torque=_finite(torque, f"{owner}: torque"), local=bool(local),
                                control=-1 if control is None else control, fn=fn))
        return name

    # ------------------------------------------------------- contact, rotating frame
    @_recorded
    def add_circle_line_contact(self, name, body_i, body_j, radius, k, normal=(0.0, 1.0),
                                at_i=None, at_j=None, point_i=None, point_j=None,
                                normal_i=None, exponent=1.5, damping=None, restitution=None,
                                impact_velocity=None, damping_model="lankarani-nikravesh",
                                friction=0.0, slip_velocity=1e-3) -> str:
        """Penalty contact of a circle on body_j with an (infinite) line fixed in body_i.

        The line passes through at_i (global, initial configuration; default body_i's
        reference point) or point_i (body_i coordinates), with unit normal `normal`
        (global, initial) or normal_i (body_i coordinates) pointing to the side where the
        circle is. The circle's centre is at_j (global) or point_j (body_j coordinates;
        default its reference point); radius in m (> 0). Penetration d = radius -
        normal . (centre - line point).

        Contact law (all contacts): normal force F_n = max(k d^n (1 + damping d_dot), 0) for
        penetration d > 0 (zero when separated, never pulling), d_dot its rate (m/s,
        positive when closing); elastic potential k d^(n+1)/(n+1) counted in the potential
        energy. k: N/m^n (> 0); exponent n >= 1 (1.5: Hertz; 1: linear penalty);
        damping: hysteresis factor chi in s/m (default 0), or restitution e in (0, 1] with
        impact_velocity (m/s) and damping_model 'lankarani-nikravesh' (chi = 3(1-e^2)/(4v))
        or 'hunt-crossley' (chi = 3(1-e)/(2v)); friction: Coulomb coefficient mu (>= 0),
        regularised F_t = -mu F_n tanh(v_t / slip_velocity) (slip_velocity in m/s) against
        the slip velocity v_t of the material points at the contact point.
        Params keys: '<name>.k', '.exponent', '.damping', '.mu', '.v_eps', '.radius',
        '.point_i', '.point_j', '.normal'. Diagnostics: `jaxmbs.core.equations.force_outputs`.
        """
        owner = f"contact {name!r}"
        self._two(owner, body_i, body_j)
        si = self._local(body_i, owner, at_i, point_i, "_i", "at_i")
        sj = self._local(body_j, owner, at_j, point_j, "_j", "at_j")
        nl = self._axis(owner, body_i, normal, normal_i, "normal")
        law = B.contact_law(owner, k, exponent, damping, restitution, impact_velocity,
                                damping_model, friction, slip_velocity)
        self._new_name(name, "force")
        self._contacts["circle_line"].append(dict(
            name=name, fi=body_i, fj=body_j, point_i=si, point_j=sj, normal=nl,
            radius=_positive(radius, f"{owner}: radius"), **law))
        return name

    @_recorded
    def add_circle_circle_contact(self, name, body_i, body_j, radius_i, radius_j, k, at_i=None,
                                  at_j=None, point_i=None, point_j=None, exponent=1.5,
                                  damping=None, restitution=None, impact_velocity=None,
                                  damping_model="lankarani-nikravesh", friction=0.0,
                                  slip_velocity=1e-3) -> str:
        """Penalty contact between a circle on body_i and a circle on body_j (external).

        Centres at_i / at_j (global, initial) or point_i / point_j (body coordinates;
        default the reference points); radius_i, radius_j in m (> 0). Penetration
        d = radius_i + radius_j - |C_j - C_i|. Contact-law arguments as in
        add_circle_line_contact.
        """
        owner = f"contact {name!r}"
        self._two(owner, body_i, body_j)
        si = self._local(body_i, owner, at_i, point_i, "_i", "at_i")
        sj = self._local(body_j, owner, at_j, point_j, "_j", "at_j")
        law = B.contact_law(owner, k, exponent, damping, restitution, impact_velocity,
                                damping_model, friction, slip_velocity)
        self._new_name(name, "force")
        self._contacts["circle_circle"].append(dict(
            name=name, fi=body_i, fj=body_j, point_i=si, point_j=sj,
            radius_i=_positive(radius_i, f"{owner}: radius_i"),
            radius_j=_positive(radius_j, f"{owner}: radius_j"), **law))
        return name

    def _ground_contact(self, owner, name, body, radius, at, point, law):
        if body == GROUND:
            raise ValueError(f"{owner}: the circle must be on a body or particle, not the ground")
        self._frame(body, owner)
        s = self._local(body, owner, at, point, "")
        return dict(name=name, fi=GROUND, fj=body, point_j=s,
                    radius=_positive(radius, f"{owner}: radius"), **law)

    @_recorded
    def add_circle_profile_contact(self, name, body, radius, profile, k, at=None, point=None,
                                   exponent=1.5, damping=None, restitution=None,
                                   impact_velocity=None, damping_model="lankarani-nikravesh",
                                   friction=0.0, slip_velocity=1e-3) -> str:
        """Penalty contact of a circle on `body` with the ground profile y = profile(x).

        profile: JAX function of a scalar x (m) returning the ground height (m), twice
        differentiable (its slope and curvature come from autodiff). Centre at `at`
        (global, initial) or `point` (body coordinates); radius m (> 0).
        Approximation: the ground is replaced by its tangent line at the centre's x, so
        d = radius - (C_y - f(C_x)) / sqrt(1 + f'(C_x)^2) along the normal (-f', 1)/|.|;
        accurate when the profile's radius of curvature is much larger than `radius`.
        Contact-law arguments as in add_circle_line_contact.
        """
        owner = f"contact {name!r}"
        if not callable(profile):
            raise ValueError(f"{owner}: profile must be a JAX function f(x) -> height (m); "
                             "for sampled heights use add_circle_terrain_contact")
        law = B.contact_law(owner, k, exponent, damping, restitution, impact_velocity,
                                damping_model, friction, slip_velocity)
        try:
            float(profile(jnp.asarray(0.0)))
        except Exception as e:  # noqa: BLE001 - report the user's error with context
            raise ValueError(f"{owner}: calling profile(x) on a scalar x failed: {e}") from e
        d = self._ground_contact(owner, name, body, radius, at, point, law)
        d["fn"] = profile
        self._new_name(name, "force")
        self._contacts["circle_profile"].append(d)
        return name

    @_recorded
    def add_circle_terrain_contact(self, name, body, radius, xs, ys, k, at=None, point=None,
                                   exponent=1.5, damping=None, restitution=None,
                                   impact_velocity=None, damping_model="lankarani-nikravesh",
                                   friction=0.0, slip_velocity=1e-3) -> str:
        """Penalty contact of a circle on `body` with sampled ground terrain.

        xs (N,) strictly increasing sample abscissae (m), ys (N,) heights (m), N >= 3,
        both Params leaves ('<name>.xs', '<name>.ys'); interpolated by a C^1 cubic Hermite
        curve whose slopes are those of the parabola through each sample and its neighbours
        (exact for quadratic terrain), continued beyond the ends by the end tangent lines.
        All terrain contacts of a model need the same N. Contact geometry as in
        add_circle_profile_contact.
        """
        owner = f"contact {name!r}"
        try:
            xs = np.asarray(xs, float)
            ys = np.asarray(ys, float)
        except (TypeError, ValueError):
            raise ValueError(f"{owner}: xs and ys must be 1-D arrays of numbers (m), got "
                             f"xs={xs!r}, ys={ys!r}") from None
        if xs.ndim != 1 or xs.shape != ys.shape or xs.size < 3:
            raise ValueError(f"{owner}: xs and ys must be 1-D arrays of equal length >= 3, got "
                             f"shapes {xs.shape} and {ys.shape}")
        if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(ys))):
            raise ValueError(f"{owner}: xs and ys must be finite")
        if np.any(np.diff(xs) <= 0):
            raise ValueError(f"{owner}: xs must be strictly increasing")
        others = self._contacts["circle_terrain"]
        if others and others[0]["xs"].size != xs.size:
            raise ValueError(f"{owner}: {xs.size} terrain samples, but contact "
                             f"{others[0]['name']!r} has {others[0]['xs'].size}; all terrain "
                             "contacts of a model need the same number of samples (resample, "
                             "e.g. with numpy.interp)")
        law = B.contact_law(owner, k, exponent, damping, restitution, impact_velocity,
                                damping_model, friction, slip_velocity)
        d = self._ground_contact(owner, name, body, radius, at, point, law)
        d.update(xs=xs, ys=ys)
        self._new_name(name, "force")
        others.append(d)
        return name

    @_recorded
    def add_rotating_frame(self, omega, name="frame") -> str:
        """Declare that the model is written in a frame turning about the origin with angular
        velocity omega(t) (rad/s, counter-clockwise): adds the centrifugal, Coriolis and
        Euler pseudo-forces (and the Euler torque -J omega_dot) on every body and particle.

        omega: number, jaxmbs profile (its coefficients become Params leaves
        '<name>.coef' / '.amp' / '.omega' / '.phase') or JAX function f(t); omega_dot by
        differentiation. Gravity and all other data stay as given, in frame coordinates.
        The centrifugal potential -m omega^2 |r_G|^2 / 2 is part of the potential energy, so
        for constant omega the energy reported is the Jacobi integral.
        """
        owner = f"rotating frame {name!r}"
        if self._rotating is not None:
            raise ValueError(f"{owner}: the model already has a rotating frame "
                             f"{self._rotating['name']!r}; give one only")
        self._new_name(name, "force")
        self._rotating = dict(name=name, profile=prof.as_profile(omega, f"{owner}: omega"))
        return name
