"""Random valid parameters of a family's instances (`family.sample(rng, k)`).

The families' `sample` methods draw each Params field from the sampler of its name here
(a point, a unit direction, a positive length, a stiffness, ...), in the frame dimension
of the family, or, for a field the family lists in `field_shapes`, from a normal
distribution of that per-instance shape. A family whose fields need more (related
fields, static data) overrides `sample`. The conformance suite
(`tests/families/test_conformance.py`) checks every registered family on such samples;
a field with no sampler fails there, naming the field.
"""
from __future__ import annotations

import numpy as np

from .. import profiles

__all__ = ["FIELD_SAMPLERS", "sample_fields"]


def _unit(r, k, d):
    x = r.normal(size=(k, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _vec(r, k, d, scale=0.5):
    return r.normal(size=(k, d)) * scale


def _pos(r, k, lo=0.5, hi=2.0):
    return r.uniform(lo, hi, size=k)


def _ends(r, k, first, second):
    """Both ends of a beam element (xi = 0, 1) and interior points."""
    return np.r_[first, second, r.uniform(0, 1, max(k - 2, 0))][:k]


def _UNIT(r, k, d):
    return _unit(r, k, d)


def _VEC(r, k, d):
    return _vec(r, k, d)


# field name -> sampler(rng, k, frame dimension d) -> (k, ...) array
FIELD_SAMPLERS = {
    # points (m) and unit directions in body coordinates
    "point_i": _VEC, "point_j": _VEC, "point": _VEC,
    "direction": _UNIT, "axis": _UNIT, "axis_i": _UNIT, "axis_j": _UNIT,
    "normal": _UNIT, "normal_i": _UNIT,
    "a_i": _UNIT, "a_j": _UNIT, "b_j": _UNIT, "f_i": _UNIT, "g_i": _UNIT, "f_j": _UNIT,
    "n_i": _UNIT,
    "r_i": lambda r, k, d: _unit(r, k, 4), "r_j": lambda r, k, d: _unit(r, k, 4),  # quaternions
    # lengths and radii (m), ratios, offsets, angles (rad)
    "radius": lambda r, k, d: _pos(r, k, 0.2, 0.6),
    "radius_i": lambda r, k, d: _pos(r, k, 0.3, 0.8),
    "radius_j": lambda r, k, d: _pos(r, k, 0.3, 0.8),
    "length": lambda r, k, d: _pos(r, k, 0.2, 1.0),
    "length_i": lambda r, k, d: _pos(r, k, 0.2, 1.0),
    "length_j": lambda r, k, d: _pos(r, k, 0.2, 1.0),
    "ratio": lambda r, k, d: r.uniform(-2, 2, k), "offset": lambda r, k, d: r.normal(size=k),
    "angle": lambda r, k, d: r.normal(size=k) * 0.3,
    "gear": lambda r, k, d: r.uniform(-3, 3, k),
    # springs, dampers, actuators and contacts
    "k": lambda r, k, d: _pos(r, k, 5.0, 50.0), "c": lambda r, k, d: _pos(r, k, 0.1, 1.0),
    "force": lambda r, k, d: r.normal(size=k), "torque": lambda r, k, d: r.normal(size=k),
    "force_t": lambda r, k, d: r.normal(size=k),  # a cable's tangential follower force (N)
    "exponent": lambda r, k, d: np.full(k, 1.5),
    "damping": lambda r, k, d: _pos(r, k, 0.1, 0.5),
    "mu": lambda r, k, d: _pos(r, k, 0.2, 0.6), "v_eps": lambda r, k, d: _pos(r, k, 0.05, 0.2),
    "k_t": lambda r, k, d: r.uniform(10, 50, (k, 3)), "k_r": lambda r, k, d: r.uniform(1, 5, (k, 3)),
    "c_t": lambda r, k, d: r.uniform(0.1, 1, (k, 3)), "c_r": lambda r, k, d: r.uniform(0.1, 1, (k, 3)),
    "gain": lambda r, k, d: r.normal(size=(k, 3)), "bias": lambda r, k, d: r.normal(size=(k, 3)),
    # ranges that clip some instances and not others
    "ctrlrange": lambda r, k, d: np.resize(np.array([[-0.3, 0.2], [-10.0, 10.0]]), (k, 2)),
    "forcerange": lambda r, k, d: np.resize(np.array([[-100.0, 100.0], [-100.0, 100.0],
                                                      [-0.1, 0.2], [-0.2, 0.1]]), (k, 2)),
    # joint limits: ranges engaged on either side or not at all (the joint coordinate of
    # random frames is spread over a few units), MuJoCo-style solimp, effective inertia
    "range": lambda r, k, d: np.resize(np.array([[-0.3, 0.2], [0.5, 4.0], [-4.0, -0.5],
                                                 [-np.inf, 0.1], [-0.1, np.inf]]), (k, 2)),
    "margin": lambda r, k, d: r.uniform(0.0, 0.1, k),
    "stiffness": lambda r, k, d: _pos(r, k, 50.0, 500.0),
    "solimp": lambda r, k, d: np.stack([r.uniform(0.5, 0.9, k), r.uniform(0.91, 0.99, k),
                                        r.uniform(0.2, 1.0, k), r.uniform(0.2, 0.8, k),
                                        r.uniform(1.0, 3.0, k)], -1),
    "inertia": lambda r, k, d: _pos(r, k, 0.5, 2.0),
    "reference_inertia": lambda r, k, d: _pos(r, k, 0.5, 2.0),
    # tabulated profiles and time profiles of driven rows
    "xs": lambda r, k, d: np.tile(np.linspace(-3.0, 3.0, 7), (k, 1)),
    "ys": lambda r, k, d: r.normal(size=(k, 7)) * 0.1,
    "coef": lambda r, k, d: r.normal(size=(k, profiles.N_COEF)) * 0.3,
    "amp": lambda r, k, d: r.normal(size=k) * 0.2, "omega": lambda r, k, d: _pos(r, k, 0.5, 2.0),
    "phase": lambda r, k, d: r.normal(size=k),
    # beam elements: material points (ends and interior), section and material
    "xi": lambda r, k, d: _ends(r, k, 0.0, 1.0),
    "xi_i": lambda r, k, d: _ends(r, k, 1.0, 0.0),
    "xi_j": lambda r, k, d: _ends(r, k, 0.0, 1.0),
    "rho": lambda r, k, d: _pos(r, k, 0.5, 2.0), "area": lambda r, k, d: _pos(r, k, 0.5, 2.0),
    "E": lambda r, k, d: _pos(r, k, 0.5, 2.0), "I": lambda r, k, d: _pos(r, k, 0.05, 0.2),
    "G": lambda r, k, d: _pos(r, k, 0.3, 1.0), "shear_factor": lambda r, k, d: _pos(r, k, 0.5, 1.0),
    "line_load": lambda r, k, d: r.normal(size=(k, d)),
    # Rayleigh damping off: velocity terms that do no work are what the body check tests
    "alpha": lambda r, k, d: np.zeros(k), "beta": lambda r, k, d: np.zeros(k),
}


def sample_fields(fields, rng, k, dim, shapes=None, owner="family"):
    """Random valid values of `fields` for k instances: {field: (k, ...) float array}.

    Args:
      fields: field names.
      rng: a `numpy.random.Generator`.
      k: number of instances.
      dim: frame dimension (2 or 3) of the vectors among the fields.
      shapes: {field: per-instance shape} of fields drawn from a normal distribution
        (scale 0.3) of that shape instead of their named sampler.
      owner: what to name in the error for a field with no sampler.
    """
    shapes = shapes or {}
    out = {}
    for f in fields:
        if f in shapes:
            out[f] = rng.normal(size=(k,) + tuple(shapes[f])) * 0.3
        elif f in FIELD_SAMPLERS:
            out[f] = np.asarray(FIELD_SAMPLERS[f](rng, k, dim), float)
        else:
            raise KeyError(f"{owner}: no sampler for field {f!r}; add one to "
                           "jaxmbs.core.sampling.FIELD_SAMPLERS, declare its shape in the "
                           "family's field_shapes, or override the family's sample()")
    return out
