"""Writes BENCHMARKS.md and docs/performance.md from the results files in benchmarks/results/.

    python benchmarks/report.py [--results DIR] [--out BENCHMARKS.md] [--docs docs/performance.md]

Nothing is measured here: each section is one table from the latest run of one benchmark
(the file that benchmark writes by default; see benchmarks/README.md). A missing file
gives a line with the command that writes it. The two outputs have the same content;
docs/performance.md only has another title and no links, so that the documentation site
can be built from docs/ alone.
"""
from __future__ import annotations

import argparse
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CMD = {  # results file: the command that writes it
    "throughput.json": "python benchmarks/throughput.py",
    "sweep.json": "python benchmarks/throughput.py --sweep",
    "spatial.json": "python benchmarks/spatial.py",
    "spatial_precision.json": "python benchmarks/spatial_precision.py",
    "planar_precision.json": "python benchmarks/spatial_precision.py --case planar",
    "gradients.json": "python benchmarks/gradients.py",
    "envs.json": "python benchmarks/envs_throughput.py",
    "flexible.json": "python benchmarks/flexible.py",
    "flexible_rk4.json": "python benchmarks/flexible.py --integrator rk4 --out benchmarks/results/flexible_rk4.json",
    "flexible_ffr.json": "python benchmarks/flexible.py --rod ffr --out benchmarks/results/flexible_ffr.json",
    "gpu.json": "bash benchmarks/gpu_run.sh",
    "gpu_spatial.json": "bash benchmarks/gpu_run.sh",
    "import_mujoco.json": "python examples/import_mujoco.py --save benchmarks/results/import_mujoco.json",
    "robots.json": "python benchmarks/robots.py",
}
STAB = {"Projection()": "Projection", "Baumgarte(10.0)": "Baumgarte(10)", "Baumgarte(10)": "Baumgarte(10)",
        "projection": "Projection", "baumgarte": "Baumgarte(10)"}


def load(results, name):
    try:
        with open(os.path.join(results, name)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def g(x, digits=3):
    """A rate or size in 3 significant digits ('-' if absent): 8.46e6, 523, 0.0148."""
    if not isinstance(x, (int, float)):
        return "-"
    if x != 0 and (abs(x) >= 1e3 or abs(x) < 1e-2):
        m, e = f"{x:.{digits - 1}e}".split("e")
        return f"{m}e{int(e)}"
    return f"{x:.{digits}g}"


def s1(x):
    """Seconds with one decimal."""
    return f"{x:.1f}" if isinstance(x, (int, float)) else "-"


def e(x):
    """An error in 2 significant digits."""
    return f"{x:.1e}" if isinstance(x, (int, float)) else "-"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return out + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]


def jax_of(*dicts):
    for d in dicts:
        v = (d or {}).get("jax") if isinstance(d, dict) else None
        if v:
            return v
    return "?"


def missing(name):
    return [f"No results yet: run `{CMD[name]}`.", ""]


# ------------------------------------------------------------------ sections
def throughput(R):
    T = load(R, "throughput.json")
    L = ["## CPU throughput against MuJoCo and NumPy", ""]
    if T is None:
        return L + missing("throughput.json")
    m = T["machine"]
    L += [f"Every case of `benchmarks/baselines/cases.py`, jaxmbs (jax {m['jax']}), MuJoCo "
          f"{m.get('mujoco')} `rollout` on all cores and a NumPy loop over one mechanism (dense KKT "
          "solve per RK4 stage, one BLAS thread), same run. Identical members, parameters shared; "
          "rates in mechanism-steps/s, median of 3 timed repetitions; compile: the first call less "
          "a warm call (float64, Projection). Errors: the observables at the final time against a "
          "SciPy DOP853 reference (rtol 1e-12); gap: the largest joint separation over the run (m; "
          "MuJoCo's soft loop closure). chain2 is the double pendulum.", ""]
    by = {}
    for c in T["cases"]:
        by.setdefault(c["name"], {})[(c["dtype"], c["stabilizer"])] = c
    rows, one_dev = [], []
    for name, cs in by.items():
        if name == "chain2":
            continue
        p = cs.get(("float64", "Projection()"), {})
        b = cs.get(("float64", "Baumgarte(10.0)"), {})
        f = cs.get(("float32", "Projection()"), {})
        fe, gap = p.get("final_error") or {}, p.get("max_constraint_error") or {}
        rows.append([name, p.get("batch"), f"{g(p.get('t_end'))} s", g(p.get("jaxmbs_steps_per_s")),
                     g(b.get("jaxmbs_steps_per_s")), g(f.get("jaxmbs_steps_per_s")),
                     g(p.get("mujoco_steps_per_s")), g(p.get("numpy_steps_per_s")),
                     f"**{p['ratio_vs_mujoco']:.1f}x**" if p.get("ratio_vs_mujoco") else "-",
                     f"{p['ratio_vs_numpy']:.0f}x" if p.get("ratio_vs_numpy") else "-",
                     s1(p.get("compile_s")), f"{e(fe.get('jaxmbs'))} / {e(fe.get('mujoco'))}",
                     f"{e(gap.get('jaxmbs'))} / {e(gap.get('mujoco'))}"])
        for (dt, st), c in cs.items():
            if dt == "float64" and c.get("one_device_steps_per_s"):
                one_dev.append(f"{name} {STAB[st]} {c['jaxmbs_steps_per_s'] / c['one_device_steps_per_s']:.2f}x")
    L += table(["case", "batch", "t", "jaxmbs f64 Projection", "f64 Baumgarte", "f32 Projection",
                "MuJoCo", "NumPy", "x MuJoCo", "x NumPy", "compile (s)", "error jaxmbs / MuJoCo",
                "gap jaxmbs / MuJoCo"], rows)
    L += ["", "Chains of 16, 32 and 64 bodies run at batch 2048, 1024 and 512 (the batch halves per "
          "doubling of the bodies, to bound the run time). The slider-crank's error with Projection "
          "at dt = 1 ms is MuJoCo's order; at equal accuracy see below."]
    if one_dev:
        L += ["", f"One XLA device per core against one device, same run ({T['settings']['cpu_devices']} "
              f"cores): {', '.join(one_dev)} the steps/s."]
    return L + [""]


def sweep(R):
    S = load(R, "sweep.json")
    L = ["## Throughput against batch size", ""]
    if S is None:
        return L + missing("sweep.json") + ["## Cost against number of bodies", ""] + missing("sweep.json")
    m = S["machine"]
    L += [f"Double pendulum, RK4, dt = 1 ms, Projection; jax {m['jax']} (not yet rerun on 0.12), "
          f"{m['cores']}-core {m['cpu']}.", ""]
    rows = []
    for p in S["batch"]:
        j64, j32, mj = p.get("jaxmbs_float64") or {}, p.get("jaxmbs_float32") or {}, p.get("mujoco") or {}
        r64, rmj = j64.get("steps_per_s"), mj.get("steps_per_s")
        rows.append([p["batch"], g(r64), g(j32.get("steps_per_s")), g(rmj),
                     f"{r64 / rmj:.1f}x" if r64 and rmj else "-", s1(j64.get("compile_s"))])
    L += table(["batch", "jaxmbs float64", "jaxmbs float32", "MuJoCo", "x MuJoCo (float64)",
                "compile (s)"], rows)
    L += ["", "## Cost against number of bodies", "",
          f"Pendulum chains, batch {S['bodies_batch']}, float64, RK4, dt = 1 ms; microseconds per "
          f"mechanism-step; same run and machine as the batch sweep.", ""]
    rows = []
    for p in S["bodies"]:
        jp, jb = p.get("jaxmbs_projection") or {}, p.get("jaxmbs_baumgarte") or {}
        us = lambda d: g(1e6 / d["steps_per_s"]) if (d or {}).get("steps_per_s") else "-"  # noqa: E731
        rows.append([p["n_bodies"], g(jp.get("us_per_mech_step")), g(jb.get("us_per_mech_step")),
                     us(p.get("mujoco")), us(p.get("numpy")), s1(jp.get("compile_s")),
                     s1(jb.get("compile_s"))])
    L += table(["bodies", "jaxmbs Projection (us)", "jaxmbs Baumgarte (us)", "MuJoCo (us)",
                "NumPy (us)", "compile Projection (s)", "compile Baumgarte (s)"], rows)
    k = [(lab, S.get(key)) for lab, key in (("jaxmbs Projection", "exponent_us_per_step_projection"),
                                           ("jaxmbs Baumgarte", "exponent_us_per_step_baumgarte"),
                                           ("MuJoCo", "exponent_us_per_step_mujoco"),
                                           ("compile (Projection)", "exponent_compile_projection"))]
    L += ["", "Fitted cost ~ N^k over chains of 8 to 64 bodies: "
          + ", ".join(f"{lab} k = {v:.2f}" for lab, v in k if v is not None) + "."]
    return L + [""]


def _errors(r):
    return [abs(r[k][t]) for k in ("crank_angle_error", "slider_x_error") for t in ("0.4", "1.0")]


def _fastest(rows, m, integrators=None):
    ok = [r for r in rows if r["simulator"] == "jaxmbs" and (integrators is None or r["integrator"] in integrators)
          and all(a <= b for a, b in zip(_errors(r), _errors(m)))]
    return max(ok, key=lambda r: r["steps_per_s"] * r["dt"]) if ok else None


def precision(R):
    L = ["## At equal accuracy: slider-cranks against MuJoCo", ""]
    files = [(n, load(R, f"{n}_precision.json")) for n in ("spatial", "planar")]
    if not any(d for _, d in files):
        return L + missing("spatial_precision.json")
    jv = jax_of(*(r for _, d in files if d for r in d["rows"]))
    L += [f"Each simulator at several time steps, batch 4096 (jax {jv}, 2 cores): jaxmbs with RK4 "
          "(Projection or Baumgarte(10)) and the 8th-order DormandPrince8, MuJoCo with RK4 and its "
          "loop closure's time constant at 2 dt (its smallest recommended). Errors of the crank "
          "angle and the slider position at t = 0.4 s and 1 s against an independent 1-DOF "
          "reference. For each MuJoCo setting: the fastest jaxmbs run whose four errors are all no "
          "larger, and the ratio of simulated seconds per wall-clock second (member-steps/s x dt).", ""]
    rows = []
    for name, d in files:
        if not d:
            continue
        label = {"spatial": "spatial (IFToMM)", "planar": "planar, 150 rad/s"}[name]
        for m in (r for r in d["rows"] if r["simulator"] == "MuJoCo"):
            best, rk4 = _fastest(d["rows"], m), _fastest(d["rows"], m, ("RK4",))
            rate = m["steps_per_s"] * m["dt"]
            cell = lambda r: (f"{r['integrator']}, {STAB.get(r['stabilizer'], r['stabilizer'])}, "  # noqa: E731
                              f"{r['dt'] * 1e3:g} ms: **{r['steps_per_s'] * r['dt'] / rate:.1f}x**"
                              if r else "none as accurate")
            rows.append([label, f"{m['dt'] * 1e3:g} ms", g(rate), e(max(_errors(m))), cell(best), cell(rk4)])
    L += table(["slider-crank", "MuJoCo dt", "MuJoCo simulated s/s", "MuJoCo largest error",
                "fastest jaxmbs as accurate", "fastest jaxmbs RK4 as accurate"], rows)
    return L + [""]


def spatial(R):
    S = load(R, "spatial.json")
    L = ["## Spatial slider-crank against MuJoCo", ""]
    if S is None:
        return L + missing("spatial.json")
    mj = S["mujoco"]
    ref = mj["tight"]["throughput"]["steps_per_s"]
    L += [f"IFToMM spatial slider-crank (3 bodies, 21 coordinates, 17 constraint rows), RK4, "
          f"dt = 1 ms, float64, batch {S['jaxmbs'][0]['batch']}, jax {jax_of(*S['jaxmbs'])}, "
          f"{S['machine']['cpu_count']} cores; MuJoCo closes the loop with a `connect` equality "
          "(stiff: the project's solref; default: MuJoCo's). Errors against the 1-DOF reference at "
          "t = 0.4 s / 1 s; loop closure: the largest constraint violation (m).", ""]
    rows = [[f"jaxmbs {STAB[r['stabilizer']]}", f"{r['path']}, {r['devices']} devices", g(r["steps_per_s"]),
             f"**{r['steps_per_s'] / ref:.1f}x**", f"{e(r['crank_angle_error']['0.4'])} / {e(r['crank_angle_error']['1.0'])}",
             f"{e(r['slider_x_error']['0.4'])} / {e(r['slider_x_error']['1.0'])}", e(r["max_constraint_error"]),
             s1(r["compile_s"])] for r in S["jaxmbs"]]
    for s, lab in (("tight", "stiff"), ("default", "default")):
        t, a = mj[s]["throughput"], mj[s]["accuracy"]
        rows.append([f"MuJoCo ({lab}, solref {a['solref'][0]:g})", f"rollout, {t['nthread']} threads",
                     g(t["steps_per_s"]), f"{t['steps_per_s'] / ref:.2f}x",
                     f"{e(a['crank_angle_error']['0.4'])} / {e(a['crank_angle_error']['1.0'])}",
                     f"{e(a['slider_x_error']['0.4'])} / {e(a['slider_x_error']['1.0'])}",
                     e(a["max_loop_gap"]), "-"])
    L += table(["simulator", "path", "steps/s", "vs MuJoCo (stiff)", "crank error (rad)",
                "slider error (m)", "loop closure", "compile (s)"], rows)
    return L + [""]


def gpu(R):
    G, S = load(R, "gpu.json"), load(R, "gpu_spatial.json")
    L = ["## GPU throughput", ""]
    if G is None:
        return L + missing("gpu.json")
    m = G["machine"]
    L += [f"One {m['device'].split(':', 1)[1].rsplit(' x', 1)[0]}, jax {m['jax']}: the CPU benchmark's "
          "configuration (RK4, dt = 1 ms, Projection, identical members, `vectorize='auto'`, which is "
          "vmap on a GPU), median of 3 runs of 5 chunks of 100 steps; final error at t = 0.5 s against "
          "the DOP853 reference; gap: the largest joint separation (m).", ""]
    rows = [[p["case"], p["batch"], p["dtype"], g(p["steps_per_s"]), s1(p["compile_s"]),
             e(p["final_error"]), e(p["max_constraint_error"])] for p in G["points"]]
    L += table(["case", "batch", "dtype", "steps/s", "compile (s)", "final error", "gap"], rows)
    if S:
        c = S["correctness"]
        L += ["", "## Spatial slider-crank on the GPU", "",
              f"Same device and jax. One member against the 1-DOF reference over 1 s at dt = 0.25 ms: "
              f"crank pin error {e(c['max_error_B'])} m, slider {e(c['max_error_C'])} m, quaternion "
              f"norm error {e(c['quaternion_norm_error'])}, energy drift {e(c['energy_drift'])}; a "
              f"batch of 64 equals 64 single runs to {e(c['batch_vs_single_max_diff'])}. Throughput: "
              "RK4, dt = 1 ms, identical members, median of 3 calls.", ""]
        rows = [[t["batch"], t["dtype"], STAB[t["stabilizer"]], g(t["steps_per_s"]), s1(t["compile_s"])]
                for t in S["throughput"]]
        L += table(["batch", "dtype", "stabiliser", "steps/s", "compile (s)"], rows)
    return L + [""]


def gradients(R):
    G = load(R, "gradients.json")
    L = ["## Gradients", ""]
    if G is None:
        return L + missing("gradients.json")
    r0 = G["runs"][0]
    L += [f"`jax.value_and_grad` of a loss on a closed-loop four-bar rollout ({r0['integrator'].upper()}, "
          f"{r0['stabilizer']}, dt = {r0['dt'] * 1e3:g} ms, saved every {r0['save_every']} steps) w.r.t. "
          f"{len(G['params'])} parameters, against the forward run alone; jax {G['jax']} (not yet "
          f"rerun on 0.12), {G['cpu_count']} cores, median of {r0['repeats']} calls. checkpoint: "
          "`off` stores every step, `on` recomputes each save interval, `dots` keeps its matrix "
          "products. Memory: XLA's analysis of each compiled program.", ""]
    mib = lambda d: g(sum((d or {}).get(k, 0) for k in ("temp_size_in_bytes", "argument_size_in_bytes",  # noqa: E731
                                                         "output_size_in_bytes")) / 2**20)
    rows = [[r["steps"], r["checkpoint"], g(r["forward_run_s"] * 1e3), g(r["value_and_grad_run_s"] * 1e3),
             f"{r['time_ratio']:.1f}x", mib(r["forward_memory"]), mib(r["value_and_grad_memory"]),
             f"{s1(r['forward_compile_s'])} / {s1(r['value_and_grad_compile_s'])}"] for r in G["runs"]]
    L += table(["steps", "checkpoint", "forward (ms)", "value and gradient (ms)", "ratio",
                "forward (MiB)", "value and gradient (MiB)", "compile forward / gradient (s)"], rows)
    return L + [""]


def envs(R):
    E = load(R, "envs.json")
    L = ["## Reinforcement-learning environments", ""]
    if E is None:
        return L + missing("envs.json")
    L += [f"Every `jaxmbs.envs` environment with random actions, auto-reset included, vmapped over "
          f"the batch and scanned over 50 steps per jitted call; {E['dtype']}, jax {E['jax']} (not yet "
          f"rerun on 0.12), {E['cpu_count']} cores, one device.", ""]
    rows = [[r["env"], r["batch"], f"{r['n_coords']} / {r['n_constraints']}", r["substeps"],
             g(r["env_steps_per_s"]), s1(r["compile_s"])] for r in E["results"]]
    L += table(["env", "batch", "coordinates / constraints", "RK4 steps per env step", "env-steps/s",
                "compile (s)"], rows)
    return L + [""]


def flexible(R):
    L = ["## Flexible slider-crank batches", ""]
    runs = [(n, load(R, n)) for n in ("flexible.json", "flexible_rk4.json", "flexible_ffr.json")]
    if not any(d for _, d in runs):
        return L + missing("flexible.json")
    L += ["A crank driven at 150 rad/s over half a revolution, the members differing in the rod's "
          "section (ANCF rod) or Young's modulus (floating-frame rod), one `simulate_batch` call, "
          "float64, 2 cores; member-steps/s of the second call, and the wall time per member per "
          "simulated second, which compares runs at different time steps.", ""]
    rows = []
    for _, d in runs:
        if d:
            pk = d["peak_deflection_m"]
            rows.append([d["model"].split(", ", 1)[-1].replace(" on the rod", ""), d["integrator"], g(d["dt"]),
                         d.get("path", d.get("vectorize")), d["batch"], g(d["steps_per_s"]),
                         g(d["wall_s"] / (d["steps"] * d["dt"]) / d["batch"]),
                         s1(d["first_call_s"]), f"{pk[0] * 1e3:.2f}-{pk[1] * 1e3:.2f}", d["machine"]["jax"]])
    L += table(["rod", "integrator", "dt (s)", "path", "batch", "member-steps/s",
                "s per member per simulated s", "first call (s)", "peak deflection (mm)", "jax"], rows)
    return L + [""]


def imported(R):
    D = load(R, "import_mujoco.json")
    L = ["## Imported models against MuJoCo", ""]
    if D is None:
        return L + missing("import_mujoco.json")
    L += [f"Each model file shipped with the examples, imported with `jaxmbs.from_mjcf` / `from_urdf` and "
          f"run by `jaxmbs.compare_with_mujoco`: both simulators RK4 at the same dt from the same state "
          f"for 2 s, float64; jax {D['machine']['jax']} (not yet rerun on 0.12). jaxmbs keeps exact "
          "constraints; MuJoCo closes loops with soft `connect` equalities, whose opening is most of the "
          "difference on the loop models. Energy drift: max |E - E0| / max(|E0|, 1 J).", ""]
    rows = [[k, r["file"], r["bodies"], g(r["dt"]), e(r["max_position_difference"]),
             e(r["max_orientation_difference"]), f"{e(r['loop_gap_jaxmbs'])} / {e(r['loop_gap_mujoco'])}",
             f"{e(r['energy_drift_jaxmbs'])} / {e(r['energy_drift_mujoco'])}"] for k, r in D["results"].items()]
    L += table(["model", "file", "bodies", "dt (s)", "position difference (m)", "orientation difference (rad)",
                "loop closure jaxmbs / MuJoCo (m)", "energy drift jaxmbs / MuJoCo"], rows)
    return L + [""]


def robots(R):
    D = load(R, "robots.json")
    L = ["## Imported robots against MuJoCo's rollout", ""]
    if D is None:
        return L + missing("robots.json")
    b = D["rows"][0].get("batch", "?") if D["rows"] else "?"
    st = D["rows"][0].get("steps", "?") if D["rows"] else "?"
    L += [f"gymnasium's model files as shipped (joint limits mapped, contacts off on both sides), "
          f"batch {b}, {st} RK4 steps at 1 ms, float64, one process, {D['cpus']} cores; "
          "`simulate_batch` with the default solver (SchurCholesky) and with `TreeSchur`, against "
          "`mujoco.rollout` on 2 threads in the same run. First call: trace, compile and one run. "
          "Both jaxmbs solvers end in the same state (largest difference in the last column).", ""]
    rows = []
    for r in D["rows"]:
        if "error" in r:
            rows.append([r["model"], "error: " + " ".join(r["error"])] + ["-"] * 8)
            continue
        rows.append([r["model"], r["bodies"], f"{r['coords']} / {r['rows']}", g(r["mujoco_steps_per_s"]),
                     f"{g(r['schur_steps_per_s'])} ({r['schur_vs_mujoco']:.2f}x)",
                     f"{g(r['tree_steps_per_s'])} ({r['tree_vs_mujoco']:.2f}x)",
                     s1(r["schur_first_call_s"]), s1(r["tree_first_call_s"]), e(r["schur_vs_tree_max_dq"])])
    L += table(["model", "bodies", "coordinates / rows", "MuJoCo steps/s", "SchurCholesky steps/s",
                "TreeSchur steps/s", "first call Schur (s)", "first call Tree (s)", "Schur vs Tree"], rows)
    return L + [""]


def reproduce(R):
    L = ["## How to reproduce", "",
         "From the repository root, with the `bench` extra installed (`pip install -e .[bench]`). "
         "Each command writes its results file under `benchmarks/results/`; "
         "`python benchmarks/report.py` then rewrites this page (`BENCHMARKS.md` and "
         "`docs/performance.md`). `benchmarks/README.md` describes every script and how long it "
         "takes.", ""]
    seen = {}
    for name, cmd in CMD.items():
        seen.setdefault(cmd, []).append(name)
    L += table(["command", "writes"], [[f"`{c}`", ", ".join(f"`{n}`" for n in fs)] for c, fs in seen.items()])
    return L + ["", "The accuracy benchmarks (`accuracy.py`, `formulations.py`, `stiff.py`, "
                "`faults_tally.py`, `flexible_validation.py`) write `VALIDATION.md` instead.", ""]


def render(R, title):
    L = [f"# {title}", "",
         "<!-- Generated by `python benchmarks/report.py` from benchmarks/results/*.json; do not edit. -->", "",
         "**Machine and method.** CPU tables: a shared 2-core x86-64 virtual machine (Intel Xeon or "
         "AMD EPYC), the CPU split into one XLA device per core and the batch split over them "
         "(`simulate_batch(..., mesh=jaxmbs.batch_mesh())`), `simulate_batch` called as the README "
         "shows it (no `jax.jit` around it), MuJoCo's `rollout` on the same cores. GPU tables: one "
         "NVIDIA H200. Float64 and RK4 at dt = 1 ms unless a table says otherwise; each table is "
         "one run, and its jax version is stated with it. The machine was shared: compare numbers "
         "within a table; rates move by 10-20 % between runs.", ""]
    for section in (throughput, precision, sweep, spatial, gpu, gradients, envs, flexible, imported, robots, reproduce):
        L += section(R)
    return "\n".join(L).rstrip("\n") + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--out", default=os.path.join(ROOT, "BENCHMARKS.md"))
    ap.add_argument("--docs", default=os.path.join(ROOT, "docs", "performance.md"))
    args = ap.parse_args(argv)
    for path, title in ((args.out, "jaxmbs benchmarks"), (args.docs, "Performance")):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(render(args.results, title))
        print(f"wrote {os.path.relpath(path, ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
