"""Formulation x integrator x problem comparison (issue 17); writes a VALIDATION.md section.

    python benchmarks/formulations.py                 # table on stdout + JSON
    python benchmarks/formulations.py --write         # also replaces the section of VALIDATION.md
                                                      # between the formulations markers

Problems (both closed loops, so every formulation's constraint handling is exercised):

* planar four-bar (crank-rocker of tests/mechanisms.py, 1 kg/m bars, gravity), 2 s from a
  crank rate of 4 rad/s; reference: DormandPrince5(rtol 1e-13) + SchurCholesky (an
  independent integrator and formulation); error = max |q(T) - q_ref(T)| (m, rad).
* spatial slider-crank (IFToMM, examples/spatial_slider_crank.py), 1 s; reference: the
  independent 1-DOF Lagrange solution of tests/reference/spatial.py (scipy DOP853);
  error = max position error of the crank pin B and the slider C at T (m).

Rows: every formulation (solver=) with RK4 + Projection() (the default integrator) and with
RATTLE (no stabilisation: every SHAKE iteration is one solve of the formulation), and the
generalized-alpha / HHT-alpha integrators (their own Newton on the index-3 system; the
formulation only gives the initial accelerations, so they appear once per problem).
Columns: error at T vs the reference, constraint drift max |Phi| over the run, relative
energy drift (Trajectory.energy_drift), steps, and steps/s of one trajectory on this
machine (second, compiled call; the wall time of the 2-core shared machine, so
comparative only). Runtime: ~1-4 min depending on the machine's load.
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
for _p in (ROOT, os.path.join(ROOT, "examples"), os.path.join(ROOT, "tests")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import jaxmbs as mb  # noqa: E402
from jaxmbs import status as st  # noqa: E402
from jaxmbs.formulations import FORMULATIONS  # noqa: E402

BEGIN, END = "<!-- formulations:begin -->", "<!-- formulations:end -->"
SOLVERS = ("schur", "nullspace", "partition", "udwadia_kalaba", "augmented_lagrangian")


def four_bar_problem():
    from mechanisms import four_bar_moving
    mech, params, q, v = four_bar_moving(4.0)
    T = 2.0
    ref = mb.simulate(mech, params, q, v, (0.0, T), T / 200, save_every=200,
                      integrator=mb.DormandPrince5(rtol=1e-13, atol=1e-14, max_steps=200_000))
    qref = np.asarray(ref.q[-1])

    def error(tr):
        return float(np.max(np.abs(np.asarray(tr.q[-1]) - qref)))
    return dict(name="planar four-bar, 2 s", mech=mech, params=params, q=q, v=v, T=T,
                dt=2e-3, error=error, ref="DOPRI5(rtol 1e-13) + SchurCholesky, max |q - q_ref| at T")


def spatial_slider_crank_problem():
    import spatial_slider_crank as ex
    from reference import spatial as R
    from jaxmbs.spatial.geometry import quat_to_R
    mech, params, q0, v0 = ex.build()
    s0 = ex.initial_state(mech, params, q0, v0)
    T = 1.0
    ref = R.spatial_slider_crank(np.array([0.0, T]))
    ic = mech.coordinate_index("crank.x")
    isl = mech.coordinate_index("slider.x")

    def error(tr):
        q = np.asarray(tr.q[-1])
        B = q[ic:ic + 3] + np.asarray(quat_to_R(q[ic + 3:ic + 7])) @ np.array([0.0, 0.0, ex.L_CRANK])
        C = q[isl:isl + 3]
        return float(max(np.max(np.abs(B - ref["B"][-1])), np.max(np.abs(C - ref["C"][-1]))))
    return dict(name="spatial slider-crank, 1 s", mech=mech, params=params, q=s0.q, v=s0.v, T=T,
                dt=1e-3, error=error, ref="1-DOF Lagrange (tests/reference/spatial.py), pins B and C at T")


PROBLEMS = {"four_bar": four_bar_problem, "spatial_slider_crank": spatial_slider_crank_problem}


def combos(solvers):
    for s in solvers:
        yield s, "RK4 + Projection", mb.RK4(), mb.Projection()
    for s in solvers:
        yield s, "RATTLE", mb.Rattle(), mb.NoStabilization()
    yield "schur", "generalized-alpha (rho_inf 0.8)", mb.GeneralizedAlpha(rho_inf=0.8), mb.NoStabilization()
    yield "schur", "HHT-alpha (alpha 0.1)", mb.HHTAlpha(alpha=0.1), mb.NoStabilization()


def run_one(P, solver_name, integrator, stabilizer):
    solver = FORMULATIONS[solver_name]()
    n = int(round(P["T"] / P["dt"]))
    kw = dict(integrator=integrator, stabilizer=stabilizer, solver=solver, save_every=n // 20)

    def go():
        tr = mb.simulate(P["mech"], P["params"], P["q"], P["v"], (0.0, P["T"]), P["dt"], **kw)
        jax.block_until_ready(tr.q)
        return tr
    t0 = time.perf_counter()
    go()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    tr = go()
    wall = time.perf_counter() - t0
    return dict(error=P["error"](tr), constraint_drift=float(jnp.max(tr.constraint_error)),
                energy_drift=float(tr.energy_drift()), steps=int(tr.n_steps),
                steps_per_s=int(tr.n_steps) / wall, status=st.describe(tr.status) if int(tr.status) else "ok",
                compile_s=compile_s)


def markdown(res):
    L = [BEGIN, "## 9. Formulations and integrators (issue 17)", "",
         "Every formulation (`solver=`) with RK4 + Projection() and with RATTLE, and the index-3 "
         "generalized-alpha / HHT-alpha integrators, on a planar and a spatial closed loop. "
         "Error at T against the reference named per problem; constraint drift = max |Phi| over "
         "the run; energy drift = max |E - E0| / max(|E0|, T_max); steps/s = one trajectory "
         f"on this machine ({res['machine']}, load average {res['load']}), comparative only.", ""]
    for key, p in res["problems"].items():
        L += [f"**{p['name']}** (dt {p['dt']:g} s; reference: {p['ref']})", "",
              "| formulation | integrator | error at T | constraint drift | energy drift | steps | steps/s | status |",
              "|---|---|---|---|---|---|---|---|"]
        for r in p["rows"]:
            L.append(f"| {r['solver']} | {r['integrator']} | {r['error']:.1e} | {r['constraint_drift']:.1e} | "
                     f"{r['energy_drift']:.1e} | {r['steps']} | {r['steps_per_s']:.0f} | {r['status']} |")
        L.append("")
    L += ["Generalized-alpha and HHT-alpha solve their own Newton iteration on the index-3 "
          "equations (the formulation only supplies the initial accelerations). Not measured "
          "here (issue 17's full matrix): batches of 1024, failure rates over perturbed batches, "
          "Andrews / N-four-bar N = 40 / car axis / contact rows.", "",
          f"Generated by `python benchmarks/formulations.py --write` ({res['total_s']:.0f} s)."]
    if res.get("note"):
        L += ["", res["note"]]
    L.append(END)
    return "\n".join(L)


def extract_section(text):
    """The block between BEGIN and END (markers included) of a VALIDATION.md text, or ""
    (benchmarks/accuracy.py keeps it when it rewrites the file)."""
    i, j = text.find(BEGIN), text.find(END)
    return text[i:j + len(END)] if 0 <= i < j else ""


def write_section(md, path=os.path.join(ROOT, "VALIDATION.md")):
    """Replace (or append) the block between BEGIN and END in VALIDATION.md."""
    text = open(path).read() if os.path.exists(path) else ""
    if BEGIN in text and END in text:
        a, rest = text.split(BEGIN, 1)
        b = rest.split(END, 1)[1]
        text = a + md + b
    else:
        text = text.rstrip("\n") + "\n\n" + md + "\n"
    with open(path, "w") as fh:
        fh.write(text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="replace the section in VALIDATION.md")
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    ap.add_argument("--solvers", default=",".join(SOLVERS))
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results", "formulations.json"))
    ap.add_argument("--no-run", action="store_true",
                    help="render the section from the JSON of an earlier run (with --write)")
    a = ap.parse_args(argv)
    if a.no_run:
        with open(a.json) as fh:
            res = json.load(fh)
        md = markdown(res)
        print(md)
        if a.write:
            write_section(md)
        return res
    t_start = time.perf_counter()
    import platform
    res = dict(machine=f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, jax {jax.__version__}",
               load=f"{os.getloadavg()[0]:.1f}", problems={})
    for key in a.problems.split(","):
        P = PROBLEMS[key]()
        rows = []
        for s, iname, integ, stab in combos(a.solvers.split(",")):
            r = run_one(P, s, integ, stab)
            r.update(solver=s, integrator=iname)
            rows.append(r)
            print(f"[{key}] {s:22s} {iname:32s} err {r['error']:.1e}  Phi {r['constraint_drift']:.1e}  "
                  f"E {r['energy_drift']:.1e}  {r['steps']} steps  {r['steps_per_s']:.0f}/s  {r['status']}"
                  f"  (compile {r['compile_s']:.0f} s)", flush=True)
        res["problems"][key] = dict(name=P["name"], dt=P["dt"], ref=P["ref"], rows=rows)
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
