"""Largest fixed step at a stated accuracy: RK4 (+ Projection) against generalized-alpha on
stiff problems (issue 17: "the stiff integrator runs the bouncing ball / quarter car with a
step at least 10x larger than RK4 needs, at the same accuracy").

    python benchmarks/stiff.py [--problems chain,quarter_car,quarter_car_spin,quarter_car_spin_001,ball]
                               [--json PATH]

Accuracy requirement (fixed before any measurement, the same rule for every problem and
integrator): the quantity of interest q(t) -- the coordinate named per problem -- sampled
every C seconds over the run must stay within 1 % of the reference's range
(max - min over the run) of the reference:

    max_j |q(t_j) - q_ref(t_j)| <= 0.01 * (max q_ref - min q_ref),   t_j = j C.

Why 1 % of the range: it is an order below the uncertainty of the models' physical
parameters (a tire's vertical stiffness, a contact law's stiffness and restitution are
known to 5-10 %), so a step that meets it adds no error that matters beside the model's
own, and it scales with the response (a ride-height error of 1 % of the body travel).

For each integrator the step is swept over a geometric grid dt = C / m (m integer, from
C down to C / 200), one run per step (status and non-finite states count as failures),
and the largest step reported is the largest dt on the grid such that EVERY grid step
at or below it meets the requirement (a lucky pass above a failing step does not count).
The ratio is dt_max(implicit) / dt_max(RK4).

Problems:
* chain: two particles on a guide, m1 = 1 kg on a soft spring (1 N/m), m2 = 0.01 kg on a
  stiff spring (1e4 N/m) to m1 (modes 0.995 and 1005 rad/s), started in the slow mode
  (0.1 m) plus a little of the stiff one (1e-4 m); quantity: x1; 10 s, C = 0.2 s;
  reference: the closed-form modal solution.
* quarter_car: examples/bumpy_road.py at 10 m/s (penalty tire 200 kN/m with
  Lankarani-Nikravesh damping and regularised friction, sampled sinusoidal road);
  quantity: sprung-mass heave (body.y); 2 s, C = 0.04 s; reference: DormandPrince5
  (rtol 1e-12, atol 1e-14) + Projection.
* quarter_car_spin / quarter_car_spin_001: the same quarter car (friction regularised at
  v_eps = 0.1 m/s as in the example, and at 0.01 m/s) with two quantities, the heave and the
  wheel's spin rate, each within 1 % of its own range. The friction's regularisation is
  the stiff part: it acts on the spin with the rate mu F_n r^2 / (J v_eps) (1.5e3 and
  1.5e4 1/s), which bounds explicit steps (RK4: h < 2.8 / rate). The heave alone does not
  show it: the friction force is horizontal and the body's x is driven, so an explicit
  method's unstable spin (a bounded chatter of the saturated tanh) leaves the heave
  accurate. Steps down to C / 800.
* ball: a 1 kg particle carrying a 0.1 m circle dropped from 1 m onto the floor line,
  Hertz contact k = 1e6 N/m^1.5 with Lankarani-Nikravesh damping for restitution 0.8 at
  the 4.2 m/s impact speed; quantity: height (ball.y); 2 s, C = 0.02 s; reference: an
  independent SciPy DOP853 solution (rtol 1e-12) restarted at every contact switch
  (tests/problems17.bouncing_ball).

Implicit integrators: GeneralizedAlpha(rho_inf) for rho_inf in --rho (default 0, 0.5, 0.8),
NoStabilization() (its positions stay on Phi = 0 to the Newton tolerance).
Each (problem, integrator) pair compiles once: the step h and the stride between samples
are traced (`benchmarks/fixed_steps.run_fixed`).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _p in (ROOT, os.path.join(ROOT, "examples"), os.path.join(ROOT, "tests"), os.path.join(ROOT, "benchmarks")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from fixed_steps import run_fixed  # noqa: E402

import jaxmbs as mb  # noqa: E402
from jaxmbs import status as st  # noqa: E402

REL_TOL = 0.01  # the accuracy requirement: 1 % of the reference's range (module docstring)
M_MAX = 200  # finest step C / M_MAX


def step_grid(C, m_max=M_MAX, n=22):
    """Geometric grid of steps C / m, m = 1 ... m_max integers (largest first)."""
    ms = np.unique(np.round(np.geomspace(1, m_max, n)).astype(int))
    return [(int(m), C / m) for m in ms]


# ------------------------------------------------------------------------------ problems
def chain_problem():
    from problems17 import stiff_chain
    mech, params, q, v, ix, exact, w = stiff_chain()
    T, C = 10.0, 0.2
    t = C * np.arange(1, int(round(T / C)) + 1)
    return dict(name="stiff spring chain (0.995 / 1005 rad/s)", mech=mech, params=params, q=q, v=v,
                T=T, C=C, index=ix[0], offset=1.0, ref=exact(t)[:, 0], quantity="x1 (m)",
                reference="closed-form modal solution", stiff=f"{w[1]:.0f} rad/s spring mode")


def _dopri_trajectory(mech, params, q, v, T, C, rtol=1e-12):
    """DormandPrince5 (rtol, atol = rtol / 100) + Projection, saved every C s."""
    tr = mb.simulate(mech, params, q, v, (0.0, T), C,
                     integrator=mb.DormandPrince5(rtol=rtol, atol=1e-2 * rtol, max_steps=2_000_000))
    if int(tr.status) & ~st.ENERGY:
        raise RuntimeError(f"reference failed: {st.describe(tr.status)}")
    return tr


def _dopri_reference(mech, params, q, v, T, C, index):
    tr = _dopri_trajectory(mech, params, q, v, T, C)
    return np.asarray(tr.q[1:, index]), int(tr.n_steps)


def quarter_car_spin_problem(slip_velocity, speed=10.0, reference_rtol=1e-12):
    """The quarter car with two quantities: the sprung-mass heave and the wheel's spin rate,
    each within REL_TOL of its own range. The spin is what the friction regularisation
    acts on: its stiffness mu F_n r^2 / (J v_eps) (1.5e3 1/s at v_eps = 0.1 m/s, 1.5e4 at
    0.01) bounds explicit steps, and the heave alone does not see an unstable spin (the
    friction force is horizontal and the body's x is driven)."""
    import bumpy_road as br
    T, C = 2.0, 0.04
    mech, params, q, v = br.build(speed=speed, road_length=speed * T + 10.0, slip_velocity=slip_velocity)
    i = mech.coordinate_index("body.y")
    iw = mech.coordinate_index("wheel.theta")  # (a planar body: its v index is its q index)
    tr = _dopri_trajectory(mech, params, q, v, T, C, reference_rtol)
    return dict(name=f"quarter car at {speed:g} m/s, friction regularised at {slip_velocity:g} m/s, heave and spin",
                mech=mech, params=params, q=q, v=v, T=T, C=C, m_max=800,
                quantities=[dict(name="sprung-mass heave (m)", space="q", index=i, offset=float(q[i]),
                                 ref=np.asarray(tr.q[1:, i]) - float(q[i])),
                            dict(name="wheel spin rate (rad/s)", space="v", index=iw, offset=0.0,
                                 ref=np.asarray(tr.v[1:, iw]))],
                quantity="sprung-mass heave (m) and wheel spin rate (rad/s)",
                reference=f"DormandPrince5 rtol {reference_rtol:g} + Projection ({int(tr.n_steps)} steps)",
                note=("Added on 2026-11-28, after the heave-only quarter car above had shown RK4 ahead: the "
                      "heave is blind to the spin, so that table did not test the stiff part. Same 1 % rule; "
                      "v_eps = 0.1 m/s is the example's value, 0.01 m/s a friction closer to Coulomb's."),
                stiff=f"friction tanh(v_t / {slip_velocity:g} m/s): mu F_n r^2 / (J v_eps) = "
                      f"{br.friction_rate(slip_velocity):.2g} 1/s "
                      "on the spin; tire 200 kN/m (wheel hop 11 Hz)")


def quarter_car_problem(speed=10.0):
    import bumpy_road as br
    T, C = 2.0, 0.04
    mech, params, q, v = br.build(speed=speed, road_length=speed * T + 10.0)
    i = mech.coordinate_index("body.y")
    ref, n = _dopri_reference(mech, params, q, v, T, C, i)
    return dict(name=f"quarter car at {speed:g} m/s (examples/bumpy_road.py)", mech=mech, params=params,
                q=q, v=v, T=T, C=C, index=i, offset=float(q[i]), ref=ref - float(q[i]),
                quantity="sprung-mass heave (m)",
                reference=f"DormandPrince5 rtol 1e-12 + Projection ({n} steps)",
                stiff="tire 200 kN/m (wheel hop 11 Hz), friction regularisation")


def ball_problem():
    from problems17 import bouncing_ball
    mech, params, q, v, i, reference = bouncing_ball()
    T, C = 2.0, 0.02
    t = C * np.arange(1, int(round(T / C)) + 1)
    return dict(name="bouncing ball (Hertz 1e6 N/m^1.5, e = 0.8)", mech=mech, params=params, q=q, v=v,
                T=T, C=C, index=i, offset=0.0, ref=reference(t), quantity="height (m)",
                reference="SciPy DOP853 rtol 1e-12 restarted at contact onset/end",
                stiff="contact ~10 ms")


PROBLEMS = {"chain": chain_problem, "quarter_car": quarter_car_problem, "ball": ball_problem,
            "quarter_car_spin": lambda: quarter_car_spin_problem(0.1),
            "quarter_car_spin_001": lambda: quarter_car_spin_problem(0.01)}


def quantities(P):
    """The problem's quantities of interest: P["quantities"], or the single one given by
    P's index / offset / ref (a position coordinate)."""
    if "quantities" in P:
        return P["quantities"]
    return [dict(name=P["quantity"], space="q", index=P["index"], offset=P["offset"], ref=P["ref"])]


def integrators(rhos):
    yield "RK4 + Projection", mb.RK4(), mb.Projection()
    for r in rhos:
        yield f"generalized-alpha rho_inf {r:g}", mb.GeneralizedAlpha(rho_inf=r), mb.NoStabilization()


def sweep(P, integrator, stabilizer, grid=None):
    """Error of the quantities of interest vs the reference at every step of the grid:
    list of dict(m, dt, error, status, errors) (errors: one per quantity; error: that of
    the single quantity, or with several the largest relative error max_k err_k / range_k;
    inf where the run failed)."""
    Qs = quantities(P)
    n_check = len(Qs[0]["ref"])
    rows = []
    for m, dt in (grid or step_grid(P["C"], P.get("m_max", M_MAX))):
        (qs, vs, _), status = run_fixed(P["mech"], P["params"], P["q"], P["v"], jnp.asarray(dt), m,
                                        integrator=integrator, stabilizer=stabilizer, n_save=n_check)
        errs = []
        for Qk in Qs:
            x = np.asarray((qs if Qk["space"] == "q" else vs)[:, Qk["index"]]) - Qk["offset"]
            errs.append(float(np.max(np.abs(x - Qk["ref"]))))
        status = int(status)
        if status or not np.all(np.isfinite(errs)):
            errs = [float("inf")] * len(Qs)
        err = errs[0] if len(Qs) == 1 else max(e / float(np.ptp(Qk["ref"])) for e, Qk in zip(errs, Qs))
        rows.append(dict(m=m, dt=dt, error=err, status=status, errors=errs))
    return rows


def largest_step(rows, tol):
    """The largest dt such that every grid step at or below it meets tol (None if the
    finest fails)."""
    best = None
    for r in sorted(rows, key=lambda r: r["dt"]):
        if not r["error"] <= tol:
            break
        best = r["dt"]
    return best


def run_problem(P, rhos):
    ranges = [float(np.ptp(Qk["ref"])) for Qk in quantities(P)]
    relative = len(ranges) > 1  # several quantities: the error is relative to each one's range
    tol = REL_TOL if relative else REL_TOL * ranges[0]
    out = dict(name=P["name"], T=P["T"], C=P["C"], quantity=P["quantity"], reference=P["reference"],
               stiff=P["stiff"], range=ranges[0], ranges=ranges, relative=relative, tol=tol, integrators={})
    if P.get("note"):
        out["note"] = P["note"]
    for name, integ, stab in integrators(rhos):
        t0 = time.perf_counter()
        rows = sweep(P, integ, stab)
        dt_max = largest_step(rows, tol)
        out["integrators"][name] = dict(rows=rows, dt_max=dt_max, seconds=time.perf_counter() - t0)
        print(f"  {name:32s} dt_max {dt_max}  ({time.perf_counter() - t0:.0f} s)", flush=True)
        for r in rows:
            print(f"      dt {r['dt']:.3e}  error {r['error']:.2e}  status {r['status']}", flush=True)
    rk = out["integrators"]["RK4 + Projection"]["dt_max"]
    for name, d in out["integrators"].items():
        d["ratio_to_rk4"] = (d["dt_max"] / rk) if (rk and d["dt_max"]) else None
    return out


def markdown(res):
    """The stiff-problem tables (largest step, ratio, error-vs-step curves) as markdown
    lines; benchmarks/formulations.py puts them in VALIDATION.md section 9."""
    L = ["### Stiff problems: the largest fixed step at a stated accuracy", "",
         f"Requirement (fixed before measuring): the quantity of interest (each of them, where a "
         f"problem names two) within {100 * res['rel_tol']:g} % of the reference's range at every "
         "sample t_j = j C; the "
         "largest step is the largest grid step dt = C / m at and below which every grid step "
         "meets it. RK4 with Projection(), generalized-alpha with NoStabilization(). "
         "Generated by `python benchmarks/stiff.py` (benchmarks/results/stiff.json).", ""]
    for _key, p in res["problems"].items():
        names = list(p["integrators"])
        if p.get("relative"):
            scale = (f"ranges {', '.join(f'{r:.3g}' for r in p['ranges'])}; error: the largest of the "
                     f"quantities' errors, each relative to its range, tolerance {p['tol']:g}")
        else:
            scale = f"range {p['range']:.3g}, tolerance {p['tol']:.2e}"
        L += [f"**{p['name']}**: {p['quantity']}, {p['T']:g} s, C = {p['C']:g} s; stiff part: {p['stiff']}; "
              f"reference: {p['reference']}; {scale}.", "",
              "| integrator | largest step (s) | ratio to RK4 |", "|---|---|---|"]
        for n in names:
            d = p["integrators"][n]
            dt = f"{d['dt_max']:.3g}" if d["dt_max"] else "none on the grid"
            ratio = f"{d['ratio_to_rk4']:.1f}" if d["ratio_to_rk4"] else "-"
            L.append(f"| {n} | {dt} | {ratio} |")
        what = ("largest error of the quantities at the samples, each relative to its range"
                if p.get("relative") else "max error of the quantity at the samples")
        L += ["", f"{what}, by step (inf: the run failed):", "",
              "| dt (s) | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
        dts = [r["dt"] for r in p["integrators"][names[0]]["rows"]]
        for k, dt in enumerate(dts):
            errs = [p["integrators"][n]["rows"][k]["error"] for n in names]
            L.append(f"| {dt:.3g} | " + " | ".join(f"{e:.1e}" for e in errs) + " |")
        if p.get("note"):
            L += ["", p["note"]]
        L.append("")
    return L


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--rho", default="0,0.5,0.8", help="rho_inf values of generalized-alpha")
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results", "stiff.json"))
    a = ap.parse_args(argv)
    rhos = [float(r) for r in a.rho.split(",")]
    res = dict(jax=jax.__version__, rel_tol=REL_TOL, problems={})
    if os.path.exists(a.json):  # keep the problems not rerun
        with open(a.json) as fh:
            res["problems"] = json.load(fh).get("problems", {})
    t_start = time.perf_counter()
    for key in a.problems.split(","):
        print(f"[stiff] {key}", flush=True)
        P = PROBLEMS[key]()
        res["problems"][key] = run_problem(P, rhos)
        res["problems"][key]["command"] = (f"python benchmarks/stiff.py --problems {key} --rho {a.rho}")
    res["seconds"] = time.perf_counter() - t_start
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as fh:
        json.dump(res, fh, indent=1)
    for key, p in res["problems"].items():
        if p.get("relative"):
            print(f"{p['name']}: each quantity within {100 * REL_TOL:g} % of its range "
                  f"({', '.join(f'{r:.3e}' for r in p['ranges'])})")
        else:
            print(f"{p['name']}: tol {p['tol']:.2e} ({100 * REL_TOL:g} % of range {p['range']:.3e})")
        for name, d in p["integrators"].items():
            ratio = f"{d['ratio_to_rk4']:.1f}x" if d["ratio_to_rk4"] else "-"
            print(f"  {name:32s} largest step {d['dt_max']}  ratio {ratio}")
    return res


if __name__ == "__main__":
    main()
