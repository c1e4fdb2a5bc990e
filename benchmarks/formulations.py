"""Formulation x integrator x problem comparison (issue 17); writes a VALIDATION.md section.

    python benchmarks/formulations.py                       # every problem, table + JSON
    python benchmarks/formulations.py --problems andrews,chain --write
    python benchmarks/formulations.py --no-run --write      # re-render from the JSON
    python benchmarks/formulations.py --problems bricard --solvers nullspace --integrators rk4 --merge --write
                                          # rerun some rows only, the problem's others kept
    python benchmarks/formulations.py --timing 20 --problems chain,four_bar --batch 1024
                                          # time every row at batch 1024 over 20 steps (one run)

Every row is one compiled program: `jax.jit(jax.vmap(...))` of the fixed-step loop of
benchmarks/fixed_steps.py (the physics step `jaxmbs.simulate` runs, `jaxmbs.core.dynamics.step`,
with the integrator's state kept between steps) over a batch of initial states, lowered and
compiled ahead of time (compile time reported apart) and run once. Member 0 of the batch
is the problem's nominal initial state; it gives the error at T against the problem's
reference, the constraint drift (max |Phi| over the samples) and the energy drift
(max |E - E0| / max(|E0|, max T), E = T + V - work). The other members start from
perturbed states (positions moved by `mech.retract` with U(-1e-2, 1e-2) per velocity
coordinate, velocities by U(-1, 1) 5e-2 (1 + max |v0|), then `jaxmbs.assemble`), and the
failure rate is the share of the batch whose run ends with a failed status (a step's
SINGULAR / NEWTON_FAILED / NONFINITE flag, max |Phi| above 1e-6 at a sample, or the
energy-balance error of `jaxmbs.simulate`'s ENERGY check above 0.05). Time per step is the
wall time of the batch run over the number of steps and batch members (this machine,
comparative only); the batch is 1024 members unless the problem states fewer (256 for Andrews, Bricard,
the spatial slider-crank and the quarter car, 16 for the N-four-bar N = 40, to keep the run
near 15 min on 2 cores).

(The previous version called `jaxmbs.simulate` twice per row, compiling its per-sample
diagnostics with every integrator and formulation: 2400 s for 22 rows on this machine
under load. The diagnostics are now compiled once per problem.)
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

import md_sections  # noqa: E402
from fixed_steps import diagnostics, run_fixed_unjitted  # noqa: E402

import jaxmbs as mb  # noqa: E402
from jaxmbs import status as st  # noqa: E402
from jaxmbs.formulations import FORMULATIONS  # noqa: E402
from jaxmbs.simulation import ENERGY_TOL, energy_balance_error  # noqa: E402

BEGIN, END = md_sections.SECTIONS[0]
SOLVERS = ("schur", "nullspace", "partition", "udwadia_kalaba", "augmented_lagrangian")
RATTLE_SOLVERS = ("schur", "udwadia_kalaba")  # (default: every formulation with RK4, these with RATTLE)
INTEGRATORS = ("rk4", "rattle", "ga", "hht")
DRIFT_TOL = 1e-6
BATCH = 1024


def _dopri(mech, params, q, v, T, solver=None):
    kw = {} if solver is None else dict(solver=solver)
    tr = mb.simulate(mech, params, q, v, (0.0, T), T, energy_tol=None,
                     integrator=mb.DormandPrince5(rtol=1e-12, atol=1e-14, max_steps=400_000), **kw)
    if int(tr.status) & ~st.DRIFT:
        raise RuntimeError(f"reference failed: {st.describe(tr.status)}")
    return np.asarray(tr.q[-1])


def four_bar_problem():
    from mechanisms import four_bar_moving
    mech, params, q, v = four_bar_moving(4.0)
    T = 1.0
    qref = _dopri(mech, params, q, v, T)
    return dict(name=f"planar four-bar, {T:g} s", mech=mech, params=params, q=q, v=v, T=T, dt=2e-3,
                error=lambda qT: float(np.max(np.abs(qT - qref))),
                ref="DOPRI5(rtol 1e-12) + SchurCholesky, max |q - q_ref| at T (m, rad)")


def andrews_problem():
    import andrews_squeezer as ex
    mech, params, q, v = ex.build()
    T = ex.T_END
    ref = np.asarray(ex.REFERENCE_Q_T003)
    return dict(name=f"Andrews squeezer, {T:g} s", mech=mech, params=params, q=q, v=v, T=T, dt=5e-5, batch=256,
                error=lambda qT: float(np.max(np.abs(np.asarray(ex.to_testset(qT)) - ref))),
                ref="Test Set reference q(0.03) (Hairer-Wanner), max abs error of the 7 angles (rad)")


def n_four_bar_problem(N, batch):
    import n_four_bar as ex
    mech, params, q, v = ex.build(N)
    T = 1.0
    phi = float(ex.reference(N, T)["phi"][-1])
    return dict(name=f"N-four-bar N = {N}, {T:g} s (through the all-horizontal singular position at ~0.5 s)",
                mech=mech, params=params, q=q, v=v, T=T, dt=5e-3, batch=batch, linear="lstsq",
                error=lambda qT: float(np.max(np.abs(np.asarray(ex.crank_angles(qT, N)) - phi))),
                ref="1-DOF closed form (tests/reference/closed_forms.fourbar_solve), crank angles at T (rad)")


def car_axis_problem():
    import car_axis as ex
    from reference import car_axis as R
    mech, params, q, v = ex.build()
    T = 0.5
    qref = R.solve(t1=T)[0]
    return dict(name=f"car axis (Test Set), {T:g} s", mech=mech, params=params, q=q, v=v, T=T, dt=1e-3,
                error=lambda qT: float(np.max(np.abs(np.asarray(qT[3:7]) - qref))),
                ref="SciPy DOP853 index-1 solution (tests/reference/car_axis.py), (xl, yl, xr, yr) at T")


def bricard_problem():
    import bricard as ex
    from reference import spatial as R
    mech, params, q, v = ex.build()
    T = 1.0
    P3 = R.bricard(np.array([0.0, T]))["P3"][-1]
    return dict(name=f"Bricard (redundant row), {T:g} s", mech=mech, params=params, q=q, v=v, T=T, dt=2e-3, batch=256,
                linear="lstsq",
                error=lambda qT: float(np.max(np.abs(ex.p3(mech, np.asarray(qT)[None])[0] - P3))),
                ref="Kane 1-DOF solution (tests/reference/spatial.py), P3 at T (m)")


def spatial_slider_crank_problem():
    import spatial_slider_crank as ex
    from reference import spatial as R

    from jaxmbs.spatial.geometry import quat_to_R
    mech, params, q0, v0 = ex.build()
    s0 = ex.initial_state(mech, params, q0, v0)
    T = 0.5
    ref = R.spatial_slider_crank(np.array([0.0, T]))
    ic = mech.coordinate_index("crank.x")
    isl = mech.coordinate_index("slider.x")

    def error(qT):
        q = np.asarray(qT)
        B = q[ic:ic + 3] + np.asarray(quat_to_R(q[ic + 3:ic + 7])) @ np.array([0.0, 0.0, ex.L_CRANK])
        C = q[isl:isl + 3]
        return float(max(np.max(np.abs(B - ref["B"][-1])), np.max(np.abs(C - ref["C"][-1]))))
    return dict(name=f"spatial slider-crank, {T:g} s", mech=mech, params=params, q=s0.q, v=s0.v, T=T,
                dt=1e-3, batch=256, error=error, ref="1-DOF Lagrange (tests/reference/spatial.py), pins B and C at T (m)")


def chain_problem():
    from problems17 import stiff_chain
    mech, params, q, v, ix, exact, w = stiff_chain()
    T = 1.0
    xref = exact([T])[0]
    return dict(name=f"stiff spring chain ({w[0]:.3g} / {w[1]:.0f} rad/s), {T:g} s", mech=mech, params=params,
                q=q, v=v, T=T, dt=1e-3, perturb=(1e-4, 1e-2),
                error=lambda qT: float(np.max(np.abs(np.asarray(qT)[ix] - np.array([1.0, 2.0]) - xref))),
                ref="closed-form modal solution, (x1, x2) at T (m)")


def quarter_car_problem():
    import bumpy_road as ex
    T = 1.0
    mech, params, q, v = ex.build(speed=10.0, road_length=20.0)
    idx = [mech.coordinate_index("body.y"), mech.coordinate_index("wheel.y")]
    qref = _dopri(mech, params, q, v, T)[idx]
    return dict(name=f"quarter car, penalty tire contact at 10 m/s, {T:g} s", mech=mech, params=params,
                q=q, v=v, T=T, dt=1e-3, batch=256,
                error=lambda qT: float(np.max(np.abs(np.asarray(qT)[idx] - qref))),
                ref="DOPRI5(rtol 1e-12) + Projection, body and wheel heave at T (m)")


PROBLEMS = {  # (cheapest first)
    "chain": chain_problem,
    "four_bar": four_bar_problem,
    "n_four_bar_2": lambda: n_four_bar_problem(2, BATCH),
    "car_axis": car_axis_problem,
    "spatial_slider_crank": spatial_slider_crank_problem,
    "quarter_car": quarter_car_problem,
    "andrews": andrews_problem,
    "bricard": bricard_problem,
    "n_four_bar_40": lambda: n_four_bar_problem(40, 16),
}


def combos(solvers, integrators, linear="lu", rattle_solvers=RATTLE_SOLVERS):
    """(formulation, integrator name, integrator, stabiliser) rows. linear: the linear
    solve of the implicit integrators' own iterations ("lstsq" where the problem has
    redundant rows or passes singular positions)."""
    lin = "" if linear == "lu" else f", linear={linear!r}"
    if "rk4" in integrators:
        for s in solvers:
            yield s, "RK4 + Projection", mb.RK4(), mb.Projection()
    if "rattle" in integrators:
        for s in rattle_solvers:
            yield s, f"RATTLE{lin and ' (' + lin[2:] + ')'}", mb.Rattle(linear=linear), mb.NoStabilization()
    if "ga" in integrators:
        yield ("schur", f"generalized-alpha (rho_inf 0.8{lin})", mb.GeneralizedAlpha(rho_inf=0.8, linear=linear),
               mb.NoStabilization())
    if "hht" in integrators:
        yield "schur", f"HHT-alpha (alpha 0.1{lin})", mb.HHTAlpha(alpha=0.1, linear=linear), mb.NoStabilization()


def set_notes(res, notes):
    """Apply --note KEY=TEXT arguments to the results dict (KEY '_': the section's note)."""
    for item in notes:
        key, _, text = item.partition("=")
        target = res if key == "_" else res["problems"].get(key)
        if target is None:
            continue
        if text:
            target["note"] = text
        else:
            target.pop("note", None)


def merge_rows(old, new):
    """The rows of an earlier run (list of dicts with 'solver' and 'integrator') with those
    of `new` replacing the ones with the same pair; rows not in `old` are appended."""
    key = lambda r: (r["solver"], r["integrator"])  # noqa: E731
    fresh = {key(r): r for r in new}
    out = [fresh.pop(key(r), r) for r in old]
    return out + [r for r in new if key(r) in fresh]


def perturbed_states(P, batch, seed=0):
    """Member 0: the nominal state; the others perturbed and re-assembled: positions moved
    by U(-a, a) along every velocity coordinate, velocities by U(-b, b) (1 + max |v0|),
    (a, b) = P["perturb"] (default (1e-2, 5e-2); the stiff chain 1e-4, 1e-2: a 1e-2 m
    stretch of its 1e4 N/m spring would hold 100x the energy of the slow motion)."""
    a, b = P.get("perturb", (1e-2, 5e-2))
    mech, params = P["mech"], P["params"]
    q0, v0 = jnp.asarray(P["q"]), jnp.asarray(P["v"])
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    nv = v0.shape[0]
    dq = a * jax.random.uniform(k1, (batch, nv), minval=-1.0, maxval=1.0)
    dv = b * (1.0 + float(jnp.max(jnp.abs(v0)))) * jax.random.uniform(k2, (batch, nv), minval=-1.0,
                                                                        maxval=1.0)
    dq, dv = dq.at[0].set(0.0), dv.at[0].set(0.0)

    @jax.jit
    def make(dq, dv):
        res = jax.vmap(lambda a, b: mb.assemble(mech, params, mech.retract(q0, a), v0 + b, check=False))(dq, dv)
        return res.q, res.v, res.status
    Q, V, s = make(dq, dv)
    Q, V = Q.at[0].set(q0), V.at[0].set(v0)
    return Q, V, np.asarray(s)


def _compiled(P, solver_name, integrator, stabilizer, Q, V, stride, n_save):
    """The row's program, `jit(vmap(...))` of the fixed-step loop over the batch (Q, V),
    compiled ahead of time."""
    mech, params, dt = P["mech"], P["params"], P["dt"]
    kw = dict(integrator=integrator, stabilizer=stabilizer, solver=FORMULATIONS[solver_name](), n_save=n_save)
    f = jax.jit(jax.vmap(lambda q, v: run_fixed_unjitted(mech, params, q, v, dt, stride, **kw)))
    return f.lower(Q, V).compile()


def run_one(P, solver_name, integrator, stabilizer, Q, V, n_save=10):
    mech, params, T, dt = P["mech"], P["params"], P["T"], P["dt"]
    n = int(round(T / dt))
    stride = n // n_save
    assert stride * n_save == n, (n, n_save)
    t0 = time.perf_counter()
    compiled = _compiled(P, solver_name, integrator, stabilizer, Q, V, stride, n_save)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    (qs, vs, ws), status = compiled(Q, V)
    jax.block_until_ready(qs)
    wall = time.perf_counter() - t0
    # the initial state as sample 0
    qs = jnp.concatenate([Q[:, None], qs], 1)
    vs = jnp.concatenate([V[:, None], vs], 1)
    ws = jnp.concatenate([jnp.zeros((Q.shape[0], 1), ws.dtype), ws], 1)
    ts = dt * stride * jnp.arange(n_save + 1, dtype=Q.dtype)
    cerr, kin, pot = jax.vmap(lambda q, v: diagnostics(mech, params, q, v, ts))(qs, vs)
    balance, floor = energy_balance_error(kin, pot, ws)
    status = np.asarray(status)
    finite = np.asarray(jnp.all(jnp.isfinite(qs), axis=(1, 2)))
    failed = ((status & (st.SINGULAR | st.NEWTON_FAILED | st.NONFINITE)) != 0) | ~finite \
        | (np.asarray(jnp.max(cerr, 1)) > DRIFT_TOL) | (np.asarray(balance) > ENERGY_TOL + np.asarray(floor))
    E = np.asarray(kin[0] + pot[0] - ws[0])
    e_drift = float(np.max(np.abs(E - E[0])) / max(abs(E[0]), float(np.max(kin[0]))))
    err = P["error"](np.asarray(qs[0, -1])) if finite[0] else float("inf")
    return dict(error=err, constraint_drift=float(jnp.max(cerr[0])), energy_drift=e_drift, steps=n,
                us_per_step=1e6 * wall / (n * Q.shape[0]), batch=int(Q.shape[0]),
                failure_rate=float(np.mean(failed)), nominal_failed=bool(failed[0]),
                status=st.describe(int(status[0])) if int(status[0]) else ("ok" if not failed[0] else "failed"),
                compile_s=compile_s, run_s=wall)


def time_one(P, solver_name, integrator, stabilizer, Q, V, steps, repeats=3):
    """Wall time per member-step (us) of `steps` fixed steps over the batch (Q, V): one
    compiled `jit(vmap(...))` program as in `run_one`, the median of `repeats` runs after
    the compilation (which is not counted)."""
    compiled = _compiled(P, solver_name, integrator, stabilizer, Q, V, steps, 1)
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(Q, V))
        walls.append(time.perf_counter() - t0)
    return 1e6 * float(np.median(walls)) / (steps * Q.shape[0])


def markdown(res):
    L = [BEGIN, "## 9. Formulations and integrators (issue 17)", "",
         "Every formulation (`solver=`) with RK4 + Projection() and with RATTLE, and the index-3 "
         "generalized-alpha / HHT-alpha integrators (their own Newton iteration; the formulation "
         "only gives the initial accelerations). Each row is one compiled `jit(vmap(...))` of "
         "the fixed-step loop over a batch: member 0 starts from the nominal state and gives "
         "the error at T against the reference named per problem, the constraint drift "
         "(max |Phi| over the samples) and the energy drift (max |E - E0| / max(|E0|, T_max), "
         "E = T + V - work); the other members start from perturbed, re-assembled states "
         "(positions +-a along every velocity coordinate, velocities +-b (1 + max |v0|), (a, b) per problem), "
         "and failure rate is the share of the batch with a failed step (singular, Newton not "
         "converged, non-finite), max |Phi| > 1e-6 or an energy-balance error > 0.05 (the "
         "ENERGY check of `simulate`). us/step: wall time of the batch run per member-step "
         f"on this machine ({res['machine']}, shared with other jobs: load average 3.5-6 during the runs), comparative only; "
         "compile times are not included.", ""]
    timing = res.get("timing")
    if timing:
        L += [f"us/step, batch {timing['batch']}: the time per member-step of a batch of {timing['batch']} "
              f"perturbed members over {timing['steps']} steps (median of 3 runs of one compiled program, "
              f"compilation not counted), all rows in one run ({timing['date']}, {timing['machine']}, "
              "nothing else running on the machine); the us/step column beside it is that of the row's "
              "own run at the batch the problem states.", ""]
    for _key, p in res["problems"].items():
        a, b = p.get("perturb", (1e-2, 5e-2))
        t_head, t_rule = (f" us/step, batch {timing['batch']} |", "---|") if timing else ("", "")
        L += [f"**{p['name']}** (dt {p['dt']:g} s, {p['steps']} steps, batch {p['batch']}, perturbation a = {a:g}, "
              f"b = {b:g}; reference: {p['ref']})", "",
              f"| formulation | integrator | error at T | constraint drift | energy drift | us/step |{t_head} "
              "failure rate | status |",
              f"|---|---|---|---|---|---|{t_rule}---|---|"]
        for r in p["rows"]:
            batch = f" (batch {r['batch']})" if r.get("batch", p["batch"]) != p["batch"] else ""
            t_cell = ""
            if timing:
                t_cell = f" {r['us_per_step_timing']:.3g} |" if r.get("us_per_step_timing") else " - |"
            L.append(f"| {r['solver']} | {r['integrator']}{batch} | {r['error']:.1e} | {r['constraint_drift']:.1e} | "
                     f"{r['energy_drift']:.1e} | {r['us_per_step']:.3g} |{t_cell} {100 * r['failure_rate']:.1f} % | "
                     f"{r['status']} |")
        if p.get("note"):
            L += ["", p["note"]]
        L.append("")
    total = sum(p.get("seconds", 0.0) for p in res["problems"].values())
    L += [f"Generated by `python benchmarks/formulations.py --write` (this table: several runs with `--problems` and `--batch`, see below; {total:.0f} s for the "
          f"problems {', '.join(res['problems'])}, compilation included; `--problems` runs a subset, `--no-run --write` "
          "re-renders from benchmarks/results/formulations.json)."]
    if res.get("note"):
        L += ["", res["note"]]
    stiff_json = os.path.join(ROOT, "benchmarks", "results", "stiff.json")
    if os.path.exists(stiff_json):  # benchmarks/stiff.py's tables, in the same section
        import stiff
        with open(stiff_json) as fh:
            L += [""] + stiff.markdown(json.load(fh))
    L.append(END)
    return "\n".join(L)


def extract_section(text):
    """The block between BEGIN and END (markers included) of a VALIDATION.md text, or ""."""
    return md_sections.extract_section(text, BEGIN, END)


def write_section(md, path=md_sections.VALIDATION_MD):
    """Replace (or append) the block between BEGIN and END in VALIDATION.md."""
    md_sections.write_section(md, BEGIN, END, path)


def timing_run(a):
    """`--timing STEPS`: the time per member-step at batch --batch of every row of the
    problems named, in one run, stored in the JSON as each row's us_per_step_timing."""
    import datetime
    import platform
    with open(a.json) as fh:
        res = json.load(fh)
    res["timing"] = dict(batch=a.batch, steps=a.timing, date=datetime.date.today().isoformat(),
                         machine=f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
                                 f"jax {jax.__version__}")
    for key in a.problems.split(","):
        if key not in res["problems"]:
            continue
        P = PROBLEMS[key]()
        Q, V, _ = perturbed_states(P, a.batch)
        known = {(r["solver"], r["integrator"]): r for r in res["problems"][key]["rows"]}
        for s, iname, integ, stab in combos(a.solvers.split(","), a.integrators.split(","), P.get("linear", "lu"),
                                            a.rattle_solvers.split(",")):
            row = known.get((s, iname))
            if row is None:
                continue
            t0 = time.perf_counter()
            row["us_per_step_timing"] = time_one(P, s, integ, stab, Q, V, a.timing)
            print(f"[{key}] {s:22s} {iname:40s} {row['us_per_step_timing']:.3g} us/step at batch {a.batch} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
            with open(a.json, "w") as fh:
                json.dump(res, fh, indent=1)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="replace the section in VALIDATION.md")
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--solvers", default=",".join(SOLVERS))
    ap.add_argument("--rattle-solvers", default=",".join(RATTLE_SOLVERS), help="formulations run with RATTLE")
    ap.add_argument("--integrators", default=",".join(INTEGRATORS), help="rk4, rattle, ga, hht")
    ap.add_argument("--batch", type=int, default=BATCH, help="batch size (at most; a problem may use fewer)")
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results", "formulations.json"))
    ap.add_argument("--merge", action="store_true",
                    help="keep the rows of an earlier run of the same problems that this run does not "
                         "redo (matched by formulation and integrator; the new rows replace the old)")
    ap.add_argument("--note", action="append", default=[], metavar="KEY=TEXT",
                    help="set the note printed under problem KEY's table ('_': under the section; "
                         "empty TEXT removes it); stored in the JSON")
    ap.add_argument("--timing", type=int, default=0, metavar="STEPS",
                    help="instead of the rows: time every existing row of --problems at --batch members "
                         "over STEPS steps and store it in the JSON beside the row (us_per_step_timing)")
    ap.add_argument("--no-run", action="store_true",
                    help="render the section from the JSON of an earlier run (with --write)")
    a = ap.parse_args(argv)
    if a.no_run:
        with open(a.json) as fh:
            res = json.load(fh)
        if a.note:
            set_notes(res, a.note)
            with open(a.json, "w") as fh:
                json.dump(res, fh, indent=1)
        md = markdown(res)
        print(md)
        if a.write:
            write_section(md)
        return res
    if a.timing:
        return timing_run(a)
    t_start = time.perf_counter()
    import platform
    res = dict(machine=f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, jax {jax.__version__}",
               load=f"{os.getloadavg()[0]:.1f}", problems={})
    if os.path.exists(a.json) and a.problems != ",".join(PROBLEMS):  # keep the problems not rerun
        with open(a.json) as fh:
            prev = json.load(fh)
        old = prev.get("problems", {})
        res["problems"] = {k: p for k, p in old.items() if "batch" in p}  # (this format only)
        if prev.get("note"):  # (the section's note, '--note _=...')
            res["note"] = prev["note"]
        if prev.get("timing"):  # (the batch-1024 column's settings, `--timing`)
            res["timing"] = prev["timing"]
    for key in a.problems.split(","):
        t_p = time.perf_counter()
        P = PROBLEMS[key]()
        batch = min(a.batch, P.get("batch", BATCH))
        Q, V, s_asm = perturbed_states(P, batch)
        rows = []
        old = res["problems"].get(key) if a.merge else None

        def store(rows, key=key, P=P, batch=batch, old=old, t_p=t_p, s_asm=s_asm):
            """The problem's entry from the rows so far (merged with `old`), written to the
            JSON after every row (a cut-off run keeps what it did)."""
            spent = 0.0
            if old is not None:
                rows = merge_rows(old["rows"], rows)
                batch = old["batch"]  # (the problem's batch; rows run with another show theirs)
                spent = old.get("seconds", 0.0)
            res["problems"][key] = dict(name=P["name"], dt=P["dt"], ref=P["ref"], rows=rows, batch=batch,
                                        steps=int(round(P["T"] / P["dt"])), assembly_failed=int(np.sum(s_asm != 0)),
                                        perturb=list(P.get("perturb", (1e-2, 5e-2))),
                                        load=f"{os.getloadavg()[0]:.1f}", seconds=spent + time.perf_counter() - t_p)
            if old is not None and old.get("note"):
                res["problems"][key]["note"] = old["note"]
            set_notes(res, a.note)
            os.makedirs(os.path.dirname(a.json), exist_ok=True)
            with open(a.json, "w") as fh:
                json.dump(res, fh, indent=1)

        for s, iname, integ, stab in combos(a.solvers.split(","), a.integrators.split(","), P.get("linear", "lu"),
                                            a.rattle_solvers.split(",")):
            r = run_one(P, s, integ, stab, Q, V)
            r.update(solver=s, integrator=iname)
            rows.append(r)
            print(f"[{key}] {s:22s} {iname:34s} err {r['error']:.1e}  Phi {r['constraint_drift']:.1e}  "
                  f"E {r['energy_drift']:.1e}  {r['us_per_step']:.3g} us/step  fail {100 * r['failure_rate']:.1f} %  "
                  f"{r['status']}  (compile {r['compile_s']:.1f} s, run {r['run_s']:.1f} s)", flush=True)
            store(rows)
        store(rows)
        print(f"[{key}] {time.perf_counter() - t_p:.0f} s", flush=True)
    res["total_s"] = time.perf_counter() - t_start
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as fh:
        json.dump(res, fh, indent=1)
    md = markdown(res)
    print(md)
    if a.write:
        write_section(md)
        print("[formulations] wrote the section of VALIDATION.md")
    return res


if __name__ == "__main__":
    main()
