"""The benchmark cases of ``baselines/cases.py`` as jaxmbs models.

Every body's reference point is put at its centre of gravity (``cg=(0, 0)``), so jaxmbs's
coordinates ``q = [x, y, theta]`` per body are exactly the absolute coordinates of the
NumPy KKT baseline (``baselines/numpy_kkt.py``) and the initial state is *the same array*
(``cases.initial_absolute_state``).  Joints are given by their points in body coordinates
(``point_i`` / ``point_j``), as in the NumPy baseline:

* chains / double pendulum: revolute ground-link0 at the origin, then link k-1 (distal
  end) to link k (proximal end);
* slider-crank: revolutes at the crank pivot, the crank pin and the wrist pin, and a
  prismatic joint ground-slider along x (its two rows are the NumPy baseline's two
  coordinate locks ``y_slider = 0`` and ``theta_slider = 0``);
* four-bar: revolutes at A (ground-crank), B (crank-coupler), D (ground-rocker) and C
  (coupler-rocker, the loop closure).

``build(case)`` returns ``(mech, params, q0, v0)``; ``joint_gap(case, q)`` is the largest
joint separation of an absolute-coordinate state (the same definition for jaxmbs, the
NumPy baseline and MuJoCo states converted with ``cases.joint_to_absolute``).
"""
from __future__ import annotations

import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(_HERE, "baselines"))

import cases as C  # noqa: E402
import numpy_kkt as NK  # noqa: E402

__all__ = ["build", "joint_gap", "observables", "C", "NK"]


def _prox(b):
    return (-b.cg, 0.0)


def _dist(b):
    return (b.length - b.cg, 0.0)


def build(case: str):
    """(mech, params, q0, v0) of a benchmark case; q0, v0 as float64 NumPy arrays."""
    import jaxmbs as mb

    C.check_case(case)
    cd = C.case_data(case)
    q0, v0 = C.initial_absolute_state(case)
    m = mb.Model(gravity=(0.0, -cd.gravity))
    B = cd.bodies
    for k, b in enumerate(B):
        m.add_body(b.name, mass=b.mass, inertia=b.icg, position=q0[3 * k:3 * k + 2],
                   angle=q0[3 * k + 2], velocity=v0[3 * k:3 * k + 2],
                   angular_velocity=v0[3 * k + 2])
    if C.is_chain(case):
        m.add_revolute("j0", "ground", B[0].name, point_i=(0.0, 0.0), point_j=_prox(B[0]))
        for k in range(1, len(B)):
            m.add_revolute(f"j{k}", B[k - 1].name, B[k].name, point_i=_dist(B[k - 1]),
                           point_j=_prox(B[k]))
    elif case == "slider_crank":
        crank, rod, slider = B
        m.add_revolute("pivot", "ground", crank.name, point_i=(0.0, 0.0), point_j=_prox(crank))
        m.add_revolute("crank_pin", crank.name, rod.name, point_i=_dist(crank), point_j=_prox(rod))
        m.add_revolute("wrist_pin", rod.name, slider.name, point_i=_dist(rod), point_j=(0.0, 0.0))
        m.add_prismatic("slide", "ground", slider.name, axis=(1.0, 0.0), point_i=(0.0, 0.0),
                        point_j=(0.0, 0.0))
    elif case == "fourbar":
        crank, coupler, rocker = B
        m.add_revolute("A", "ground", crank.name, point_i=tuple(C.FB_A), point_j=_prox(crank))
        m.add_revolute("B", crank.name, coupler.name, point_i=_dist(crank), point_j=_prox(coupler))
        m.add_revolute("D", "ground", rocker.name, point_i=tuple(C.FB_D), point_j=_prox(rocker))
        m.add_revolute("C", coupler.name, rocker.name, point_i=_dist(coupler), point_j=_dist(rocker))
    else:  # pragma: no cover
        raise AssertionError(case)
    mech, params, _, _ = m.build()
    return mech, params, np.asarray(q0, float), np.asarray(v0, float)


_NK_MODELS = {}


def _nk_model(case):
    if case not in _NK_MODELS:
        _NK_MODELS[case] = NK.build_model(case)
    return _NK_MODELS[case]


def joint_gaps(case: str, q) -> np.ndarray:
    """Separation of every joint (m for pins, m/rad for the slider locks) at absolute q."""
    model = _nk_model(case)
    q = np.asarray(q, float)
    phi, _, _ = model.constraints(q, np.zeros_like(q))
    out, row = [], 0
    for jt in model.joints:
        r = NK.len_rows(jt)
        out.append(float(np.hypot(*phi[row:row + 2])) if r == 2 else abs(float(phi[row])))
        row += r
    return np.asarray(out)


def joint_gap(case: str, q) -> float:
    """Largest joint separation of the absolute-coordinate state q (0 for an exact state)."""
    g = joint_gaps(case, q)
    return float(g.max()) if g.size else 0.0


def observables(case: str, q) -> np.ndarray:
    """The comparable final-time quantities (``cases.observables_from_absolute``)."""
    return C.observables_from_absolute(case, np.asarray(q, float))
