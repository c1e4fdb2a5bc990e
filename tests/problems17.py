"""The example mechanisms the formulation and integrator suites of issue 17 run on:
name -> builder returning (mech, params, q0, v0). REDUNDANT lists those with redundant
rows or singular configurations on their path (Bricard, the N-four-bar)."""
import os
import sys

_EX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
if _EX not in sys.path:
    sys.path.insert(0, _EX)


def _ex(module, *args, **kw):
    def build():
        mod = __import__(module)
        return tuple(mod.build(*args, **kw))
    return build


def _catalogue(fn):
    def build():
        import catalogue_models
        return tuple(getattr(catalogue_models, fn)().build())
    return build


def _tests(fn, *args):
    def build():
        import mechanisms
        return tuple(getattr(mechanisms, fn)(*args))
    return build


# every example mechanism without redundant constraints (planar and spatial)
MECHANISMS = {
    "double_pendulum": _tests("double_pendulum"),
    "four_bar": _tests("four_bar"),
    "slider_crank": _tests("slider_crank"),
    "pendulum": _ex("pendulum"),
    "andrews": _ex("andrews_squeezer"),
    "car_axis": _ex("car_axis"),
    "n_four_bar_2": _ex("n_four_bar", 2),
    "quarter_car": _ex("bumpy_road"),
    "gears_rolling": _catalogue("gears_and_rolling"),
    "knife_edge": _catalogue("knife_edge"),
    "contacts": _catalogue("contacts"),
    "rotating": _catalogue("rotating"),
    "cam": _catalogue("cam"),
    "spatial_slider_crank": _ex("spatial_slider_crank"),
    "top": _ex("top"),
    "tennis_racket": _ex("tennis_racket"),
    "double_wishbone": _ex("double_wishbone"),
}
# fast subset for the default suite (the rest run with -m slow)
FAST = ("double_pendulum", "andrews", "knife_edge", "spatial_slider_crank")  # cam: slow (~30-45 s per formulation)
REDUNDANT = {
    "bricard": _ex("bricard"),
}


# ------------------------------------------------------------------ shared checks
def central_difference(f, x0, i, rel=(1e-2, 5e-3, 2.5e-3)):
    """d f / d x_i at x0 by central differences at the steps rel * max(1, |x0_i|), each
    half the one before, extrapolated by Richardson (error h^2, then h^4): returns
    (estimate, error estimate, the central differences).

    Small steps are not usable as a reference through implicit solves: the loss of a
    50-step generalized-alpha run varies by ~1e-12 from round-off (measured: std 1e-12
    over steps of 1e-9 in a mass, with the Newton tolerance at eps^0.75 or 1e-15 alike),
    so a central difference with h = 1e-6 carries an error ~1e-12 / 2e-6 ~ 1e-6. With
    h ~ 1e-2 the truncation error (~1e-5) dominates, shrinks 4x per halving, and
    Richardson removes it. The error estimate is |R2 - R1| (difference of the last two
    extrapolation levels)."""
    import numpy as np

    x0 = np.asarray(x0, float)
    d = []
    for r in rel:
        h = r * max(1.0, abs(float(x0[i])))
        e = np.zeros_like(x0)
        e[i] = h
        d.append((float(f(x0 + e)) - float(f(x0 - e))) / (2 * h))
    r1 = [(4 * d[k + 1] - d[k]) / 3 for k in range(len(d) - 1)]
    if len(r1) == 1:
        return r1[0], abs(r1[0] - d[-1]), d
    r2 = (16 * r1[-1] - r1[-2]) / 15
    return r2, abs(r2 - r1[-1]), d


def energy_trend(t, err, parts=10):
    """Statistics of an energy-error series err = E - E0 at times t, to tell a bounded
    error from a drift: max |err| in the first and last 1/parts of the run (excluding
    t0), the mean of err in the first and last part, the change over the run of a
    straight-line fit of err, and the standard deviation of err (its scatter)."""
    import numpy as np

    t, err = np.asarray(t), np.asarray(err)
    k = len(err) // parts
    slope = np.polyfit(t, err, 1)[0]
    return dict(first_max=float(np.max(np.abs(err[1:k]))), last_max=float(np.max(np.abs(err[-k:]))),
                first_mean=float(np.mean(err[1:k])), last_mean=float(np.mean(err[-k:])),
                trend=float(slope * (t[-1] - t[0])), std=float(np.std(err)),
                max=float(np.max(np.abs(err))))


def check_gradient(f, x0, grads, tol=1e-6):
    """Assert that each gradient in grads (e.g. reverse and forward mode) agrees with the
    Richardson central differences of f at x0 (`central_difference`) within
    tol * max(1, |fd|), and that the reference itself is converged (its error estimate
    below tol / 10). Returns the reference."""
    import numpy as np

    ref = [central_difference(f, x0, i) for i in range(len(x0))]
    fd = np.asarray([r[0] for r in ref])
    scale = tol * max(1.0, float(np.max(np.abs(fd))))
    assert max(r[1] for r in ref) < 0.1 * scale, ("central differences not converged", ref)
    for g in grads:
        assert np.max(np.abs(np.asarray(g) - fd)) <= scale, (g, fd, ref)
    return fd


# ------------------------------------------------------------------ stiff problems
def stiff_chain(m1=1.0, m2=0.01, k1=1.0, k2=1e4, slow=0.1, fast=1e-4):
    """Two particles on a guide along x: m1 on a soft spring k1 to the ground, m2 on a stiff
    spring k2 to m1 (modes near sqrt(k1/m1) and sqrt(k2/m2) rad/s). The initial state is
    the slow mode with amplitude `slow` (m, largest entry) plus the stiff one with
    amplitude `fast`, at rest. Returns (mech, params, q0, v0, ix, exact) where ix are the
    indices of p1.x, p2.x and exact(t) -> (len(t), 2) the closed-form modal solution of
    the displacements (x1, x2) about the unstretched positions (1, 2) m."""
    import jax.numpy as jnp
    import numpy as np
    import scipy.linalg

    import jaxmbs as mb

    model = mb.Model(gravity=(0.0, 0.0))
    model.add_particle("p1", mass=m1, position=(1.0, 0.0))
    model.add_particle("p2", mass=m2, position=(2.0, 0.0))
    model.add_point_on_line("g1", "ground", "p1", axis=(1.0, 0.0), point_i=(0.0, 0.0))
    model.add_point_on_line("g2", "ground", "p2", axis=(1.0, 0.0), point_i=(0.0, 0.0))
    model.add_spring("s1", "ground", "p1", k=k1, length=1.0, point_i=(0.0, 0.0))
    model.add_spring("s2", "p1", "p2", k=k2, length=1.0)
    mech, params, q0, v0 = model.build()
    K = np.array([[k1 + k2, -k2], [-k2, k2]])
    w2, Phi = scipy.linalg.eigh(K, np.diag([m1, m2]))
    w = np.sqrt(w2)
    modes = Phi / np.abs(Phi).max(axis=0) * np.array([slow, fast])  # columns: scaled mode shapes
    x0 = modes.sum(axis=1)
    ix = [mech.coordinate_index("p1.x"), mech.coordinate_index("p2.x")]
    q = jnp.asarray(q0).at[ix[0]].set(1.0 + x0[0]).at[ix[1]].set(2.0 + x0[1])

    def exact(t):
        t = np.asarray(t, float)
        return np.cos(np.outer(t, w)) @ modes.T

    return mech, params, q, v0, ix, exact, w


def bouncing_ball(y0=1.0, radius=0.1, mass=1.0, k=1e6, exponent=1.5, e=0.8, g=9.81):
    """A particle carrying a circle of `radius` dropped from rest at height y0 onto the
    floor line y = 0: penalty contact F = k d^n (1 + chi d') (d = radius - y > 0, d' its
    closing rate) with the Lankarani-Nikravesh factor chi = 3 (1 - e^2) / (4 v) for
    restitution e at the first impact speed v = sqrt(2 g (y0 - radius)). Returns (mech,
    params, q0, v0, iy, reference) with reference(t_eval) -> heights y(t_eval) from an
    independent SciPy solution (DOP853, rtol 1e-12, restarted at every contact onset and
    end so no step straddles the switch)."""
    import math

    import numpy as np
    from scipy.integrate import solve_ivp

    import jaxmbs as mb

    v_imp = math.sqrt(2 * g * (y0 - radius))
    m = mb.Model(gravity=(0.0, -g))
    m.add_particle("ball", mass=mass, position=(0.0, y0))
    m.add_circle_line_contact("floor", "ground", "ball", radius=radius, k=k, exponent=exponent,
                              restitution=e, impact_velocity=v_imp)
    mech, params, q0, v0 = m.build()
    chi = 3.0 * (1.0 - e * e) / (4.0 * v_imp)

    def free(t, s):
        return [s[1], -g]

    def contact(t, s):
        d, dd = max(radius - s[0], 0.0), -s[1]
        return [s[1], -g + max(k * d ** exponent * (1.0 + chi * dd), 0.0) / mass]

    def surface(t, s):
        return s[0] - radius

    def reference(t_eval):
        t_eval = np.asarray(t_eval, float)
        out = np.full(t_eval.shape, np.nan)
        t, s, in_contact = 0.0, np.array([y0, 0.0]), False
        for _ in range(10_000):  # phases (a guard: a bounce is two)
            if t >= t_eval[-1]:
                break
            ev = surface
            ev.terminal = True
            ev.direction = 1.0 if in_contact else -1.0
            sol = solve_ivp(contact if in_contact else free, (t, t_eval[-1]), s, method="DOP853",
                            rtol=1e-12, atol=1e-14, events=ev, dense_output=True)
            t_end = sol.t[-1]
            sel = (t_eval >= t) & (t_eval <= t_end)
            if sel.any():
                out[sel] = sol.sol(t_eval[sel])[0]
            t, s = t_end, sol.y[:, -1]
            if sol.status == 1:
                in_contact = not in_contact
        return out

    return mech, params, q0, v0, mech.coordinate_index("ball.y"), reference
