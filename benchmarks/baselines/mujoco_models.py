"""MuJoCo baselines for the jaxmbs benchmark cases (see ``cases.py`` for the mechanisms).

Modelling conventions
---------------------
* Everything lives in the world **x-y plane**: every revolute joint is a MuJoCo ``hinge``
  with axis ``0 0 1``, the slider is a ``slide`` joint along x, and gravity is
  ``0 -9.81 0`` (``0 0 0`` for the slider-crank).  Body frames sit at the proximal joint
  with local x along the rod; the hinge angle of a child body is relative to its parent.
* Mass properties are given explicitly (``compiler inertiafromgeom="false"``, no geoms
  unless ``visual=True``): ``<inertial pos="cg 0 0" mass=m diaginertia="eps I I"/>``
  with ``I`` the moment of inertia about the CG for rotation about z.  ``eps`` (1e-3 I)
  and the y-inertia only exist to satisfy MuJoCo's positivity / triangle-inequality
  checks; they play no role because every degree of freedom rotates about z.
* Joint ``armature``, ``damping``, ``frictionloss`` and ``stiffness`` are explicitly 0
  (MuJoCo's defaults are 0 too, but the XML spells it out); contacts are disabled
  (``<flag contact="disable"/>``), so the only constraints are the loop closures.
* ``<option integrator="RK4" timestep="0.001"/>`` -- MuJoCo's classical 4-stage RK4 on
  (qpos, qvel) in joint coordinates, with the full forward dynamics (including the
  constraint solver) evaluated at every stage.
* Closed loops (slider-crank, four-bar) are open trees closed by a site-based
  ``<equality><connect site1=... site2=.../>``.  MuJoCo enforces equality constraints
  *softly* (a constraint-space spring-damper with reference acceleration
  ``-b v - k r`` and impedance-dependent regularisation), so the loop gap is never
  exactly zero.  The defaults used here, :data:`LOOP_SOLREF` and :data:`LOOP_SOLIMP`,
  are made as stiff as MuJoCo allows without disabling its safety clamp:
  ``solref = (0.002, 1)`` (time constant = 2 * timestep, the ``refsafe`` minimum;
  critically damped) and ``solimp = (0.9999, 0.9999, 0.001, 0.5, 2)`` (impedance
  0.9999 at any violation, i.e. almost no regularisation).  MuJoCo's own defaults are
  ``solref = (0.02, 1)``, ``solimp = (0.9, 0.95, 0.001, 0.5, 2)``.  The Newton solver
  runs to ``tolerance = 1e-10``; with only equality rows the problem is quadratic and
  Newton converges in one iteration.  Note that the connect constraint has 3 rows; the
  z row is identically satisfied in a planar mechanism (zero Jacobian row) and is
  harmless because of the regularisation.

  Measured (1 s, dt = 1 ms, single rollout; gap = max over the run of the loop-closing
  joint's Euclidean gap; error = final crank angle vs a DOP853 reference):

    solref, solimp[:2]                  slider-crank gap    four-bar gap
    (0.02, 1),  (0.9, 0.95)  [default]  9.7e-3 m            6.0e-4 m
    (0.002, 1), (0.9, 0.95)             1.0e-3 m            1.1e-5 m
    (0.002, 1), (0.99, 0.99)            1.8e-4 m            1.1e-6 m
    (0.002, 1), (0.9999, 0.9999) [used] 2.9e-5 m            2.2e-7 m

  With MuJoCo's defaults the slider-crank's crank angle is 29 rad off after 1 s.
  0.9999 is MuJoCo's maximum impedance (larger values are clamped).  Time constants
  below 2*timestep (``refsafe=False`` in the builders, which disables MuJoCo's
  ``refsafe`` flag) make things worse: 0.001 -> 1.4e-4 m,
  0.0005 -> 1.9e-3 m, 0.00025 -> unstable.  Larger time constants / damping ratios can
  give a slightly smaller gap (e.g. (0.005, 1): 7.8e-6 m on the slider-crank) but a
  much larger trajectory error (crank angle after 1 s: 5e-2 rad vs 2.5e-3 rad with
  (0.002, 1)), so (0.002, 1) is kept.

Use :func:`run_mujoco` to time batched rollouts (``mujoco.rollout.Rollout`` thread
pool over all cores) and :func:`final_observables` to turn the final qpos into the
quantities compared across simulators.
"""
from __future__ import annotations

import os
import time

import mujoco
import numpy as np
from mujoco import rollout as mj_rollout

try:  # package-style and script-style imports
    from . import cases as C
except ImportError:  # pragma: no cover
    import cases as C

LOOP_SOLREF = (0.002, 1.0)
LOOP_SOLIMP = (0.9999, 0.9999, 0.001, 0.5, 2.0)
SOLVER_TOLERANCE = 1e-10

_STATE_SPEC = mujoco.mjtState.mjSTATE_FULLPHYSICS


def _fmt(*xs):
    return " ".join(repr(float(x)) for x in xs)


def _header(name: str, gravity: float, timestep: float, refsafe: bool = True) -> str:
    rs = "" if refsafe else ' refsafe="disable"'
    return f"""<mujoco model="{name}">
  <compiler angle="radian" inertiafromgeom="false" autolimits="true"/>
  <option integrator="RK4" timestep="{timestep!r}" gravity="0 {(-gravity if gravity else 0.0)!r} 0"
          solver="Newton" iterations="50" tolerance="{SOLVER_TOLERANCE!r}">
    <flag contact="disable"{rs}/>
  </option>
  <default>
    <joint armature="0" damping="0" frictionloss="0" stiffness="0" limited="false"/>
    <geom contype="0" conaffinity="0" type="capsule" size="0.01"/>
  </default>
"""


def _inertial(b: C.PlanarBody) -> str:
    i = max(b.icg, 1e-9)
    return (f'<inertial pos="{_fmt(b.cg, 0, 0)}" mass="{b.mass!r}" '
            f'diaginertia="{_fmt(1e-3 * i, i, i)}"/>')


def _geom(b, visual):
    if not visual or b.length == 0:
        return ""
    return f'<geom fromto="0 0 0 {b.length!r} 0 0"/>'


def chain_xml(n: int, timestep: float = C.DT, visual: bool = False) -> str:
    """N uniform 1 kg, 1 m rods pinned in series to the world origin (hinges about z)."""
    cd = C.case_data(f"chain{n}") if n in C.CHAIN_SIZES else None
    b = cd.bodies[0] if cd else C.PlanarBody("link", 1.0, 1.0 / 12.0, 1.0, 0.5)
    xml = _header(f"chain{n}", C.G, timestep) + "  <worldbody>\n"
    open_tags = ""
    indent = "    "
    for k in range(n):
        pos = "0 0 0" if k == 0 else f"{b.length!r} 0 0"
        open_tags += (f'{indent}<body name="link{k}" pos="{pos}">'
                      f'<joint name="j{k}" type="hinge" axis="0 0 1"/>{_inertial(b)}{_geom(b, visual)}\n')
        indent += "  "
    close = "".join("  " * (k + 2) + "</body>\n" for k in reversed(range(n)))
    return xml + open_tags + close + "  </worldbody>\n</mujoco>\n"


def double_pendulum_xml(timestep: float = C.DT, visual: bool = False) -> str:
    return chain_xml(2, timestep, visual).replace('model="chain2"', 'model="double_pendulum"')


def slider_crank_xml(timestep: float = C.DT, solref=LOOP_SOLREF, solimp=LOOP_SOLIMP,
             visual: bool = False, refsafe: bool = True) -> str:
    """Free-running slider-crank: world -> crank (hinge) -> rod (hinge); world -> slider
    (slide along x); rod end connected to the slider by a site-based ``connect``."""
    cr, rod, sl = C.case_data("slider_crank").bodies
    return _header("slider_crank", 0.0, timestep, refsafe) + f"""  <worldbody>
    <body name="crank" pos="0 0 0">
      <joint name="crank" type="hinge" axis="0 0 1"/>{_inertial(cr)}{_geom(cr, visual)}
      <body name="rod" pos="{cr.length!r} 0 0">
        <joint name="rod" type="hinge" axis="0 0 1"/>{_inertial(rod)}{_geom(rod, visual)}
        <site name="rod_end" pos="{rod.length!r} 0 0"/>
      </body>
    </body>
    <body name="slider" pos="0 0 0">
      <joint name="slider" type="slide" axis="1 0 0"/>{_inertial(sl)}
      <site name="slider_pin" pos="0 0 0"/>
    </body>
  </worldbody>
  <equality>
    <connect name="loop" site1="rod_end" site2="slider_pin" solref="{_fmt(*solref)}" solimp="{_fmt(*solimp)}"/>
  </equality>
</mujoco>
"""


def fourbar_xml(timestep: float = C.DT, solref=LOOP_SOLREF, solimp=LOOP_SOLIMP,
             visual: bool = False, refsafe: bool = True) -> str:
    """Crank-rocker four-bar: world -> crank (hinge at A) -> coupler (hinge at B);
    world -> rocker (hinge at D); coupler end connected to rocker end (point C)."""
    cr, co, ro = C.case_data("fourbar").bodies
    return _header("fourbar", C.G, timestep, refsafe) + f"""  <worldbody>
    <body name="crank" pos="{_fmt(C.FB_A[0], C.FB_A[1], 0)}">
      <joint name="crank" type="hinge" axis="0 0 1"/>{_inertial(cr)}{_geom(cr, visual)}
      <body name="coupler" pos="{cr.length!r} 0 0">
        <joint name="coupler" type="hinge" axis="0 0 1"/>{_inertial(co)}{_geom(co, visual)}
        <site name="coupler_end" pos="{co.length!r} 0 0"/>
      </body>
    </body>
    <body name="rocker" pos="{_fmt(C.FB_D[0], C.FB_D[1], 0)}">
      <joint name="rocker" type="hinge" axis="0 0 1"/>{_inertial(ro)}{_geom(ro, visual)}
      <site name="rocker_end" pos="{ro.length!r} 0 0"/>
    </body>
  </worldbody>
  <equality>
    <connect name="loop" site1="coupler_end" site2="rocker_end" solref="{_fmt(*solref)}" solimp="{_fmt(*solimp)}"/>
  </equality>
</mujoco>
"""


def case_xml(case: str, timestep: float = C.DT, solref=LOOP_SOLREF, solimp=LOOP_SOLIMP,
             visual: bool = False, refsafe: bool = True) -> str:
    """MJCF string of a benchmark case (see :data:`cases.CASES`)."""
    C.check_case(case)
    if case == "double_pendulum":
        return double_pendulum_xml(timestep, visual)
    if C.is_chain(case):
        return chain_xml(C.chain_n(case), timestep, visual)
    if case == "slider_crank":
        return slider_crank_xml(timestep, solref, solimp, visual, refsafe)
    if case == "fourbar":
        return fourbar_xml(timestep, solref, solimp, visual, refsafe)
    raise AssertionError


def make_model(case: str, **kw) -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_string(case_xml(case, **kw))


def initial_state(model: mujoco.MjModel, case: str) -> np.ndarray:
    """Full-physics MuJoCo state vector of the case's consistent initial condition."""
    d = mujoco.MjData(model)
    qpos, qvel = C.initial_joint_state(case)
    d.qpos[:] = qpos
    d.qvel[:] = qvel
    mujoco.mj_forward(model, d)
    s = np.empty(mujoco.mj_stateSize(model, _STATE_SPEC))
    mujoco.mj_getState(model, d, s, _STATE_SPEC)
    return s


def _qpos_slice(model):
    # full-physics state layout: time, qpos, qvel, ...
    return slice(1, 1 + model.nq)


def run_mujoco(case: str, batch: int, nsteps: int, nthread: int | None = None, *,
               initial_states: np.ndarray | None = None, return_trajectory_stat=None,
               max_buffer_bytes: int = 64 << 20, **model_kw):
    """Roll out ``batch`` copies of ``case`` for ``nsteps`` RK4 steps with mujoco.rollout.

    Uses a ``mujoco.rollout.Rollout`` thread pool with ``nthread`` threads (default: all
    cores) and one ``MjData`` per thread.  ``rollout`` writes the full state of every
    step; to bound memory the horizon is split into chunks whose output buffer is at
    most ``max_buffer_bytes`` (preallocated and reused), each chunk restarting from the
    previous chunk's last state (only the solver warm-start is lost, which does not
    change the converged result).

    ``initial_states`` (batch, nstate) overrides the case's initial state.
    ``return_trajectory_stat``: optional ``f(qpos_chunk (batch, k, nq)) -> float`` whose
    maximum over the chunks is returned as a 4th value (its cost is inside the timing,
    so leave it None when benchmarking).

    Returns ``(qpos_final (batch, nq), wall_seconds, mechanism_steps_per_second)``; wall
    time excludes model compilation, MjData/thread-pool creation and a 1-step warm-up.
    """
    nthread = os.cpu_count() if nthread is None else int(nthread)
    model = make_model(case, **model_kw)
    nstate = mujoco.mj_stateSize(model, _STATE_SPEC)
    if initial_states is None:
        s0 = np.tile(initial_state(model, case), (batch, 1))
    else:
        s0 = np.array(initial_states, float).reshape(batch, nstate)
    datas = [mujoco.MjData(model) for _ in range(max(nthread, 1))]
    chunk = int(max(1, min(nsteps, max_buffer_bytes // (8 * nstate * batch))))
    buf = np.empty((batch, chunk, nstate))
    qs = _qpos_slice(model)
    stat = -np.inf
    with mj_rollout.Rollout(nthread=nthread) as pool:
        pool.rollout(model, datas, s0[:1], nstep=1)  # warm-up (thread start, checks)
        state = s0.copy()
        t0 = time.perf_counter()
        done = 0
        while done < nsteps:
            k = min(chunk, nsteps - done)
            out = buf if k == chunk else np.empty((batch, k, nstate))
            pool.rollout(model, datas, state, nstep=k, state=out)
            state = out[:, -1, :].copy()
            if return_trajectory_stat is not None:
                stat = max(stat, float(return_trajectory_stat(out[:, :, qs])))
            done += k
        wall = time.perf_counter() - t0
    qpos = state[:, qs].copy()
    rate = batch * nsteps / wall
    if return_trajectory_stat is not None:
        return qpos, wall, rate, stat
    return qpos, wall, rate


def final_observables(case: str, qpos: np.ndarray) -> np.ndarray:
    """Comparable quantities (see ``cases.observables_from_joint``) from MuJoCo qpos."""
    return C.observables_from_joint(case, qpos)


def loop_closure_error(case: str, qpos: np.ndarray) -> np.ndarray:
    """Gap of the loop-closing joint (m) computed from qpos (zero for open chains)."""
    return C.loop_closure_error_joint(case, qpos)


def max_loop_closure_error(case: str, nsteps: int, **model_kw) -> float:
    """Largest loop gap (m) over a single-mechanism rollout of ``nsteps`` steps."""
    _, _, _, err = run_mujoco(case, 1, nsteps, nthread=1,
                              return_trajectory_stat=lambda q: loop_closure_error(case, q).max(),
                              **model_kw)
    return err
