"""Generate BENCHMARKS.md (repo root) from the JSON results of ``throughput.py``.

    python benchmarks/make_benchmarks_md.py [--results benchmarks/results] [--out BENCHMARKS.md]

Reads ``results/throughput.json`` (``python benchmarks/throughput.py --json``), every
``results/throughput_*.json`` (further runs, e.g. under another jax: ``--name``) and, when
present, ``results/sweep.json`` (``python benchmarks/throughput.py --sweep``) and
``results/gpu*.json`` (the same harness run on an accelerator), and
``results/gradients*.json`` (``python benchmarks/gradients.py --out ...``).  Nothing is measured
here: edit the harness, re-run it, then re-run this script.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


ACC_FLOOR = 1e-9  # final-time errors below this (m, rad) count as equal (round-off level)


def _load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def g(x, fmt="{:.3g}"):
    if x is None or x == "":
        return "n/a"
    if isinstance(x, (int, float)):
        return fmt.format(x)
    return str(x)


def e(x):
    return g(x, "{:.1e}")


def machine_lines(m, title):
    if not m:
        return []
    out = [f"**{title}**: {m.get('cpu', '?')}, {m.get('cores', '?')} cores, device "
           f"`{m.get('device', '?')}`; jax {m.get('jax', '?')} (jaxlib {m.get('jaxlib', '?')}), "
           f"mujoco {m.get('mujoco', '?')}, numpy {m.get('numpy', '?')}, scipy {m.get('scipy', '?')}, "
           f"Python {m.get('python', '?')}; jaxmbs {m.get('jaxmbs', '?')} at git "
           f"`{m.get('git', '?')}`; run {m.get('date', '?')}"
           + (f"; load average at start {', '.join(f'{x:.2f}' for x in m['loadavg_start'])}"
              if m.get("loadavg_start") else "") + "."]
    return out


def find(cases, name, dtype="float64", stab="Projection()"):
    for c in cases:
        if c["name"] == name and c["dtype"] == dtype and c["stabilizer"] == stab:
            return c
    return None


def best(cases, name, dtype="float64"):
    """The faster stabiliser's entry for a case/dtype."""
    cs = [c for c in cases if c["name"] == name and c["dtype"] == dtype and c.get("jaxmbs_steps_per_s")]
    return max(cs, key=lambda c: c["jaxmbs_steps_per_s"]) if cs else None


def equal_accuracy(results_dir, T, stabilizer, case="planar", mujoco="tight"):
    """The equal-accuracy pair of MuJoCo's `mujoco` setting (dt = 1 ms, the throughput run's
    model) among the jaxmbs runs with `stabilizer` (either integrator) in
    results/<case>_precision_jax<version>.json of the jax version of run T: (file name,
    pair dict with 'jaxmbs' and 'ratio') or None."""
    jv = ((T or {}).get("machine") or {}).get("jax")
    f = os.path.join(results_dir or "", f"{case}_precision_jax{jv}.json")
    R = _load(f) if results_dir and jv and os.path.exists(f) else None
    if not R:
        return None
    import spatial_precision as SP
    kind = stabilizer.split("(")[0]
    rows = [r for r in R["rows"] if r["simulator"] == "MuJoCo"
            or r.get("stabilizer", "").split("(")[0] == kind]
    for p in SP.pairs(rows):
        if p["mujoco"] == mujoco:
            return os.path.basename(f), p
    return None


def _equal_accuracy_text(ea):
    if ea is None:
        return "no equal-accuracy run for this jax (`spatial_precision.py --case planar`)"
    f, p = ea
    if not p.get("jaxmbs"):
        return f"at equal accuracy (`{f}`): no jaxmbs run as accurate as MuJoCo"
    return (f"at equal accuracy (`{f}`, errors at 0.4 s and 1 s): jaxmbs {p['jaxmbs']}, "
            f"**{p['ratio']:.1f}x** MuJoCo's simulated seconds per second")


def _accuracy(results_dir, T, c, need):
    """(same_dt_ok, ea, ok) of case record c of run T: same_dt_ok when jaxmbs's final-time
    error is at most MuJoCo's or below ACC_FLOOR; else, for the slider-crank, ea the
    equal-accuracy pair of its stabiliser (`equal_accuracy`, or None); ok: the accuracy
    condition of a target of `need` x MuJoCo holds."""
    fe = c["final_error"]
    acc = (fe.get("jaxmbs") is not None and fe.get("mujoco") is not None
           and fe["jaxmbs"] <= max(fe["mujoco"] * 1.0000001, ACC_FLOOR))
    if acc:
        return True, None, True
    ea = equal_accuracy(results_dir, T, c["stabilizer"]) if c["name"] == "slider_crank" else None
    return False, ea, bool(ea and ea[1].get("jaxmbs") and ea[1]["ratio"] >= need)


def targets_section(T, S, results_dir=None):
    L = ["## Targets of issue 5 (2-core CPU, float64, RK4, dt = 1e-3, batch >= 4096)", "",
         f"Accuracy is 'equal or better' when jaxmbs's final-time error is at most MuJoCo's or "
         f"below {ACC_FLOOR:g} (both at round-off level).", "",
         "| target | measured | status |", "|---|---|---|"]
    cases = (T or {}).get("cases", [])
    for name in ("double_pendulum", "slider_crank"):
        for c in [find(cases, name, "float64", s) for s in ("Projection()", "Baumgarte(10.0)")]:
            if not c:
                continue
            r, rn = c.get("ratio_vs_mujoco"), c.get("ratio_vs_numpy")
            fe = c["final_error"]
            acc_ok, ea, ea_ok = _accuracy(results_dir, T, c, 10)
            big = c["batch"] >= 4096
            met = r is not None and r >= 10 and ea_ok and big
            gap = f"; gap {10 / r:.1f}x" if r and r < 10 else ""
            L.append(f"| {name}: >= 10x MuJoCo rollout at equal or better accuracy "
                     f"({c['stabilizer']}) | {g(c.get('jaxmbs_steps_per_s'))} vs "
                     f"{g(c.get('mujoco_steps_per_s'))} steps/s = **{g(r, '{:.2f}')}x** at batch "
                     f"{c['batch']}; final error {e(fe.get('jaxmbs'))} vs MuJoCo {e(fe.get('mujoco'))}"
                     + ("" if acc_ok else f"; {_equal_accuracy_text(ea)}")
                     + f" | {'met' if met else 'not met'}{gap}"
                     f"{'' if acc_ok else ' (less accurate at the same dt' + (', met at equal accuracy)' if met else ')')} |")
            metn = rn is not None and rn >= 1000 and big
            gapn = f"; gap {1000 / rn:.1f}x" if rn and rn < 1000 else ""
            L.append(f"| {name}: >= 1000x the NumPy per-mechanism loop ({c['stabilizer']}) | "
                     f"{g(c.get('jaxmbs_steps_per_s'))} vs {g(c.get('numpy_steps_per_s'))} steps/s = "
                     f"**{g(rn, '{:.0f}')}x** | {'met' if metn else 'not met'}{gapn} |")
    # compile time of chain64
    c64 = [c for c in cases if c["name"] == "chain64" and c["dtype"] == "float64"]
    bodies = [p for p in (S or {}).get("bodies", []) if "n_bodies" in p]
    cmax = None
    if c64:
        cmax = max(c.get("compile_s") or 0 for c in c64)
    elif bodies:
        p64 = [p for p in bodies if p["n_bodies"] == 64]
        if p64:
            cmax = max((p64[0].get(k) or {}).get("compile_s") or 0
                       for k in ("jaxmbs_projection", "jaxmbs_baumgarte"))
    ce = (S or {}).get("exponent_compile_projection")
    if cmax is not None:
        L.append(f"| compile time < 10 s for the 64-body chain | {cmax:.1f} s (slowest float64 "
                 f"configuration) | {'met' if cmax < 10 else 'not met'} |")
    if ce is not None:
        L.append(f"| compile time growing at most linearly with bodies | fitted exponent "
                 f"{ce:.2f} over chains 8..64 (sweep) | {'met' if ce <= 1.15 else 'not met'} |")
    for st in ("projection", "baumgarte"):
        ex = (S or {}).get(f"exponent_us_per_step_{st}")
        if ex is not None:
            L.append(f"| per-step cost linear in the number of bodies ({st}) | time per "
                     f"mechanism-step ~ N^{ex:.2f} over chains 8..64 at batch "
                     f"{(S or {}).get('bodies_batch')} (MuJoCo: N^"
                     f"{g((S or {}).get('exponent_us_per_step_mujoco'), '{:.2f}')}) | "
                     f"{'met' if ex <= 1.2 else 'not met'} |")
    mem = [c for c in cases if (c.get("memory") or {}).get("xla_bytes_per_mech")]
    if mem:
        c = find(cases, "double_pendulum") or mem[0]
        m = c.get("memory") or {}
        L.append(f"| memory per mechanism reported | {c['name']} float64: state "
                 f"{m.get('state_bytes_per_mech')} B, XLA {g(m.get('xla_bytes_per_mech'), '{:.0f}')} B "
                 f"(arguments + outputs + temporaries / batch) | met (reported) |")
    pts = [p for p in (S or {}).get("batch", []) if "batch" in p]
    if pts:
        okb = [p["batch"] for p in pts if (p.get("jaxmbs_float64") or {}).get("steps_per_s")]
        L.append(f"| batch sizes up to what fits in memory work | ran batches "
                 f"{', '.join(map(str, okb))}; skipped: {len((S or {}).get('skipped', []))} | "
                 f"{'met' if okb and max(okb) >= 65536 else 'partly'} |")
    gb = gpu_best()
    if gb:
        txt = "; ".join(f"{dt}: {g(r)} at batch {b} ({dev})" for dt, (r, b, dev) in sorted(gb.items()))
        ok = {dt: r >= 1e8 for dt, (r, b, dev) in gb.items()}
        L.append(f"| GPU: >= 1e8 mechanism-steps/s for the double pendulum | {txt} | "
                 + ", ".join(f"{dt} {'met' if v else 'not met'}" for dt, v in sorted(ok.items())) + " |")
    else:
        L.append("| GPU: >= 1e8 mechanism-steps/s for the double pendulum | not measured (no "
                 "accelerator in this run) | n/a |")
    return L


def run_label(T):
    m = (T or {}).get("machine") or {}
    return f"jax {m.get('jax', '?')} (jaxlib {m.get('jaxlib', '?')}), Python {m.get('python', '?')}"


def issue16_section(runs, results_dir=None):
    """Issue 16's targets, one column per run (jax version). A run less accurate than MuJoCo
    at the same dt is judged on the equal-accuracy comparison of its jax version
    (`equal_accuracy`), where there is one."""
    runs = [T for T in runs if T]
    if not runs:
        return []
    L = ["## Targets of issue 16 (2-core CPU, float64, RK4, dt = 1e-3; one column per jax)", "",
         "Each column is one `python benchmarks/throughput.py --json` run (MuJoCo in the same run). "
         "Compile time: the first call of `simulate_batch` as the README shows it (trace, "
         "compile, one chunk) less a warm call, slowest float64 configuration. Accuracy is "
         f"'equal or better' when jaxmbs's final-time error is at most MuJoCo's or below "
         f"{ACC_FLOOR:g}; where it is not, the cell quotes the equal-accuracy comparison "
         "(`python benchmarks/spatial_precision.py --case planar`, same jax): the fastest jaxmbs "
         "setting with the same stabiliser (RK4 or DormandPrince8, any dt) whose crank-angle and slider errors at 0.4 s and 1 s are all no larger than "
         "MuJoCo's at dt = 1 ms, and its ratio of simulated seconds per second.", "",
         "| target | " + " | ".join(
             run_label(T) + ", run of " + str((T.get("machine") or {}).get("date", "?"))[:16].replace("T", " ")
             + f", git `{(T.get('machine') or {}).get('git', '?')}`" for T in runs) + " |",
         "|---|" + "---|" * len(runs)]

    def ratio_cell(T, name, need):
        cs = T.get("cases", [])
        parts, ok = [], True
        for st in ("Projection()", "Baumgarte(10.0)"):
            c = find(cs, name, "float64", st)
            if not c or c.get("ratio_vs_mujoco") is None:
                return "not measured"
            acc, ea, acc_ok = _accuracy(results_dir, T, c, need)
            r = c["ratio_vs_mujoco"]
            ok &= r >= need and acc_ok
            part = f"{st.split('(')[0]} **{_ratio(r, need)}x**"
            if not acc:  # judged at equal accuracy, where there is a comparison
                part += (f" (less accurate at the same dt"
                         + (f"; {_equal_accuracy_text(ea)})" if name == "slider_crank" else ")"))
            parts.append(part)
        c = find(cs, name, "float64", "Projection()")
        return (", ".join(parts) + f" (batch {c['batch']}, {g(c.get('jaxmbs_steps_per_s'))} vs "
                f"{g(c.get('mujoco_steps_per_s'))} steps/s) {'met' if ok else 'NOT met'}")

    def compile_cell(T, name, limit):
        cs = [c for c in T.get("cases", []) if c["name"] == name and c["dtype"] == "float64"
              and c.get("compile_s") is not None]
        if not cs:
            return "not measured"
        cmax = max(c["compile_s"] for c in cs)
        return f"{cmax:.1f} s {'met' if cmax < limit else 'NOT met'}"

    for name in ("double_pendulum", "slider_crank"):
        L.append(f"| {name} >= 10x MuJoCo | " + " | ".join(ratio_cell(T, name, 10) for T in runs) + " |")
    for n in (8, 16, 32, 64):
        L.append(f"| chain{n} >= 2x MuJoCo | " + " | ".join(ratio_cell(T, f"chain{n}", 2) for T in runs) + " |")
    for name, lim in (("double_pendulum", 5), ("slider_crank", 5), ("chain64", 10)):
        L.append(f"| {name} compiles in < {lim} s | "
                 + " | ".join(compile_cell(T, name, lim) for T in runs) + " |")
    L.append("| load average (1 min) at start / end of the run | "
             + " | ".join(", ".join(f"{d['name']} {d.get('loadavg_start', 0):.1f}/"
                                    f"{d.get('loadavg_end', 0):.1f}" for d in T.get("details", [])
                                    if d.get("loadavg_start") is not None) or "n/a"
                          for T in runs) + " |")
    L.append("")
    return L + _median_rows(runs, results_dir)


def _ratio(r, need):
    """r with 2 decimals, or 4 where 2 would round a miss of the target `need` up to it."""
    return f"{r:.4f}" if r < need <= round(r, 2) else f"{r:.2f}"


def _median_rows(runs, results_dir):
    """For each jax version with several runs: the median over its runs of each speed ratio
    (the runs' ratios in brackets), met when every median meets its target and every run's
    accuracy condition holds (as in the per-run table)."""
    by_jax = {}
    for T in runs:
        by_jax.setdefault(((T.get("machine") or {}).get("jax")), []).append(T)
    many = {j: Ts for j, Ts in by_jax.items() if len(Ts) > 1}
    if not many:
        return []
    L = ["The same targets as the median over the runs of one jax version (the shared machine's "
         "rates drift by 10-20 % between runs; the individual runs in brackets, in the order of "
         "the columns above). Met when each median meets the target and every run's accuracy "
         "condition holds; compile times: the median of each run's slowest float64 configuration. "
         "The runs span the commits named in the columns above: library code changes between "
         "them are in `git log` (a newer run measures newer code).", "",
         "| target | " + " | ".join(f"jax {j}, median of {len(Ts)} runs" for j, Ts in many.items()) + " |",
         "|---|" + "---|" * len(many)]

    def cell(Ts, name, need):
        parts, ok = [], True
        for st in ("Projection()", "Baumgarte(10.0)"):
            rs = []
            for T in Ts:
                c = find(T.get("cases", []), name, "float64", st)
                if not c or c.get("ratio_vs_mujoco") is None:
                    return "not measured"
                ok &= _accuracy(results_dir, T, c, need)[2]
                rs.append(c["ratio_vs_mujoco"])
            med = statistics.median(rs)
            ok &= med >= need
            parts.append(f"{st.split('(')[0]} **{_ratio(med, need)}x** "
                         f"({', '.join(_ratio(r, need) for r in rs)})")
        return ", ".join(parts) + f" {'met' if ok else 'NOT met'}"

    def compile_cell(Ts, name, limit):
        cs = []
        for T in Ts:
            ts = [c["compile_s"] for c in T.get("cases", []) if c["name"] == name
                  and c["dtype"] == "float64" and c.get("compile_s") is not None]
            if not ts:
                return "not measured"
            cs.append(max(ts))
        med = statistics.median(cs)
        return (f"**{med:.1f} s** ({', '.join(f'{x:.1f}' for x in cs)}) "
                f"{'met' if med < limit else 'NOT met'}")

    for name, need in (("double_pendulum", 10), ("slider_crank", 10), ("chain8", 2),
                       ("chain16", 2), ("chain32", 2), ("chain64", 2)):
        L.append(f"| {name} >= {need}x MuJoCo | "
                 + " | ".join(cell(Ts, name, need) for Ts in many.values()) + " |")
    for name, lim in (("double_pendulum", 5), ("slider_crank", 5), ("chain64", 10)):
        L.append(f"| {name} compiles in < {lim} s | "
                 + " | ".join(compile_cell(Ts, name, lim) for Ts in many.values()) + " |")
    return L + [""]


def cases_section(T, label=None):
    if not T:
        return ["## Cases", "", "No `results/throughput.json` yet: run "
                "`python benchmarks/throughput.py --json`.", ""]
    s = T.get("settings", {})
    L = [f"## Throughput and accuracy per case ({label or run_label(T)})", "",
         *machine_lines(T.get("machine"), "Machine"), "",
         f"Command: `{T.get('command')}` ({T.get('total_s', 0):.0f} s).", "",
         f"RK4, dt = {s.get('dt', 1e-3)} s; median of {s.get('repeats', 3)} timed repetitions; "
         f"MuJoCo `rollout` on {s.get('mujoco_threads', '?')} threads (loop closures: soft `connect`, "
         f"solref {s.get('mujoco_loop_solref')}, solimp {s.get('mujoco_loop_solimp')}); NumPy: one "
         f"mechanism, dense KKT `np.linalg.solve` per RK4 stage, Baumgarte alpha = beta = 10, "
         f"single-threaded BLAS, median rate over 10 consecutive parts of its horizon.  Parameters {'shared by' if s.get('params_shared', True) else 'per'} "
         f"the batch members.  Errors are max |observable - reference| at the final time t "
         f"(reference: SciPy DOP853, rtol 1e-12); *gap* is the largest joint separation over the run (m).",
         "",
         "| case | batch | t (s) | dtype | stabiliser | jaxmbs steps/s | MuJoCo | NumPy | x MuJoCo | "
         "x NumPy | compile (s) | err jaxmbs | err MuJoCo | err NumPy | gap jaxmbs | gap MuJoCo | "
         "gap NumPy | bytes/mech (state / XLA) |",
         "|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for c in T.get("cases", []):
        fe, ce, m = c["final_error"], c["max_constraint_error"], c.get("memory") or {}
        np_t = fe.get("numpy_t_end")
        npe = e(fe.get("numpy")) + (f" (t={np_t:g})" if np_t and c.get("t_end") and
                                    abs(np_t - c["t_end"]) > 1e-12 else "")
        L.append(f"| {c['name']} | {c['batch']} | {g(c.get('t_end'))} | {c['dtype']} | {c['stabilizer']} | "
                 f"{g(c.get('jaxmbs_steps_per_s'))} | {g(c.get('mujoco_steps_per_s'))} | "
                 f"{g(c.get('numpy_steps_per_s'))} | {g(c.get('ratio_vs_mujoco'), '{:.2f}')} | "
                 f"{g(c.get('ratio_vs_numpy'), '{:.0f}')} | {g(c.get('compile_s'), '{:.1f}')} | "
                 f"{e(fe.get('jaxmbs'))} | {e(fe.get('mujoco'))} | {npe} | {e(ce.get('jaxmbs'))} | "
                 f"{e(ce.get('mujoco'))} | {e(ce.get('numpy'))} | {m.get('state_bytes_per_mech', 'n/a')} / "
                 f"{g(m.get('xla_bytes_per_mech'), '{:.0f}')} |")
    L.append("")
    ndev = s.get("cpu_devices")
    if ndev:
        L.append(f"jaxmbs ran with the CPU split into {ndev} XLA devices, one per core "
                 f"(`XLA_FLAGS={s.get('xla_flags', '')}`), and the batch split over them "
                 "(`simulate_batch(..., mesh=jaxmbs.batch_mesh())`, `jax.shard_map`): one XLA "
                 "program keeps little more than one core busy (CPU time / wall time 1.3-1.5 "
                 "measured on one device, 1.9-2.0 on two). MuJoCo's rollout uses the same cores "
                 "through its thread pool. Vectorisation path per case (`solver` in the JSON): "
                 + "; ".join(sorted({f"{c['name']}: {c.get('solver')}" for c in T.get("cases", [])
                                     if c.get("solver") and c["dtype"] == "float64"})) + ".")
    one = [c for c in T.get("cases", []) if c.get("one_device_steps_per_s")]
    if one:
        L += ["", "The same configurations on one device, timed in the same run (what the split "
              "over cores buys):", "",
              "| case | dtype | stabiliser | devices | steps/s | one device | ratio |",
              "|---|---|---|---:|---:|---:|---:|"]
        for c in one:
            L.append(f"| {c['name']} | {c['dtype']} | {c['stabilizer']} | {c.get('devices')} | "
                     f"{g(c.get('jaxmbs_steps_per_s'))} | {g(c['one_device_steps_per_s'])} | "
                     f"{c['jaxmbs_steps_per_s'] / c['one_device_steps_per_s']:.2f} |")
        L.append("")
    notes = sorted({n for c in T.get("cases", []) for n in (c.get("notes") or [])})
    flags = sorted({f"{c['name']} {c['dtype']} {c['stabilizer']}: {', '.join(c['status_flags'])}"
                    for c in T.get("cases", []) if c.get("status_flags")})
    L.append("")
    for n in notes:
        L.append(f"- {n}")
    if flags:
        L.append("- jaxmbs status flags raised (see `jaxmbs.status`): " + "; ".join(flags))
    la = [(d["name"], d.get("loadavg_start"), d.get("loadavg_end")) for d in T.get("details", [])
          if d.get("loadavg_start") is not None]
    if la:
        L.append("- 1-minute load average of the 2-core machine at the start / end of each case "
                 "(other work was running; > 2 means the simulators shared the cores): "
                 + ", ".join(f"{n} {a:.1f}/{b:.1f}" for n, a, b in la))
    chk = [(d["name"], d.get("jaxmbs_baumgarte_f64_vs_numpy_max_abs_q")) for d in T.get("details", [])
           if d.get("jaxmbs_baumgarte_f64_vs_numpy_max_abs_q") is not None]
    if chk:
        L.append("- Same scheme check: jaxmbs float64 + Baumgarte(10) vs the NumPy loop, max |q| "
                 "difference at the final time: " + ", ".join(f"{n} {v:.1e}" for n, v in chk))
    if T.get("plots"):
        L += ["", *[f"![{os.path.basename(p)}]({p})" for p in T["plots"]]]
    L.append("")
    return L


def profile_section(T, S):
    L = ["## Where the time goes (jaxmbs)", ""]
    det = [d for d in (T or {}).get("details", [])  # skip rows reused from another case
           if not any("results are the double_pendulum measurement" in n for n in d.get("notes") or [])]
    any_ = False
    for d in det:
        for r in d.get("jaxmbs", []):
            h = r.get("hlo") or {}
            ps, st, ou = h.get("per_step"), h.get("per_stage_loop"), h.get("per_step_outside_stages")
            if not ps:
                continue
            if not any_:
                L += ["Kernel counts of the compiled chunk function (`hlo_profile.py` on "
                      "`jax.jit(...).lower(...).compile().as_text()`): every top-level HLO "
                      "instruction is one kernel, a pass over batch-sized arrays. *per step* "
                      "counts the step loop body plus the RK-stage loop body times its trip count; "
                      "bytes are output (written) and operand (read) sizes of those kernels "
                      "per mechanism.", "",
                      "| case | dtype | stabiliser | kernels / step | per RK stage | outside stages | "
                      "fusions with gather / scatter / dot(+unfused dots) | custom calls / step | "
                      "bytes written + read / mech-step |",
                      "|---|---|---|---:|---:|---:|---|---|---:|"]
                any_ = True
            k = ps["kinds"]
            fus = (f"{k.get('fusion[gather]', 0)} / {k.get('fusion[scatter]', 0)} / "
                   f"{k.get('fusion[dot]', 0)}+{k.get('dot', 0)}")
            cc = ", ".join(f"{a} {b}" for a, b in (ps.get("custom_calls") or {}).items()) or "none"
            L.append(f"| {d['name']} | {r['dtype']} | {r['stabilizer']} | {ps['kernels']} | "
                     f"{st['kernels'] if st else 'n/a'} (x{st['trip_count'] if st else ''}) | "
                     f"{ou['kernels'] if ou else 'n/a'} | {fus} | {cc} | "
                     f"{ps['bytes_written_per_mech'] + ps['bytes_read_per_mech']:.0f} |")
    L.append("")
    for d in det:
        for r in d.get("jaxmbs", []):
            tp = r.get("time_profile") or {}
            if "kernel_seconds" not in tp:
                continue
            L += [f"**Measured kernel time, {d['name']} {r['dtype']} {r['stabilizer']}** (batch "
                  f"{tp.get('batch')}, {tp.get('steps')} steps under `jax.profiler.trace`; "
                  f"{tp['kernel_ns_per_mech_step']:.0f} ns of kernel time and "
                  f"{tp['wall_ns_per_mech_step']:.0f} ns of wall time per mechanism-step on "
                  f"{tp['threads']} threads):", "",
                  "| kernel class | share | | jaxmbs source line | share |", "|---|---:|---|---|---:|"]
            if tp.get("kernel_calls") and tp.get("steps"):
                L[-4] += (f" {tp['kernel_calls'] / tp['steps']:.0f} kernels executed per step (all devices together), "
                          f"median duration {tp['kernel_us_median']:.1f} us (10 % / 90 %: "
                          f"{tp['kernel_us_p10']:.1f} / {tp['kernel_us_p90']:.1f} us).")
            cl, sr = tp["by_class"][:10], tp["by_source"][:10]
            for i in range(max(len(cl), len(sr))):
                a = f"{cl[i][0]} | {cl[i][2]:.0f}%" if i < len(cl) else " | "
                b = f"`{sr[i][0]}` | {sr[i][2]:.0f}%" if i < len(sr) else " | "
                L.append(f"| {a} | | {b} |")
            L.append("")
    L += ["On the element-wise path (small mechanisms) a step is a few hundred small kernels "
          "over contiguous batch vectors, separated by the conditionals that keep XLA from "
          "recomputing shared values (`elementwise._shared_barriers`); a kernel moves a few "
          "batch vectors through the L2 cache, so its duration is set by the batch per device "
          "and a fixed dispatch cost rather than by its arithmetic, and the throughput by the "
          "number of kernels per step (table above). Measured on this box on 2026-11-26 "
          "(double pendulum, float64, Projection, batch 4096, one device): before float64 sin / "
          "cos were written as polynomials (`elementwise._sincos_poly`), XLA's scalar sine and "
          "cosine kernels took 35.7 us per call (8.7 ns per element), 24 calls per step and "
          "23.5 % of kernel time; the other kernels had a median of 2.7 us.", ""]
    for d in det:
        phs = d.get("phases") or []
        if not phs:
            continue
        L += [f"Pieces of one evaluation, {d['name']}, float64, each jitted and vmapped over "
              f"the batch (median wall time of one call):", "",
              "| piece | " + " | ".join(f"ns/mech at batch {ph['batch']}" for ph in phs)
              + " | kernels |", "|---|" + "---:|" * (len(phs) + 1)]
        for k in phs[0]["pieces"]:
            vs = [ph["pieces"].get(k, {}) for ph in phs]
            if all("seconds" in v for v in vs):
                L.append(f"| {k} | " + " | ".join(f"{v['ns_per_mech']:.0f}" for v in vs)
                         + f" | {vs[0]['kernels']} |")
        step = [r for r in d.get("jaxmbs", []) if r.get("dtype") == "float64" and r.get("us_per_mech_step")]
        if step:
            L.append("")
            L.append("For comparison, one full RK4 step in the timed run: " + ", ".join(
                f"{r['stabilizer']} {r['us_per_mech_step'] * 1e3:.0f} ns/mech" for r in step) + ".")
        L.append("")
    return L


def sweep_section(S):
    if not S:
        return ["## Sweeps", "", "No `results/sweep.json` yet: run "
                "`python benchmarks/throughput.py --sweep`.", ""]
    L = ["## Sweeps", "", *machine_lines(S.get("machine"), "Sweep machine"), "",
         f"Command: `{S.get('command')}` ({S.get('total_s', 0):.0f} s).", "",
         "### Throughput vs batch size (double pendulum, Projection)", "",
         "| batch | steps | jaxmbs float64 | jaxmbs float32 | MuJoCo | x MuJoCo (f64) | compile f64 (s) | "
         "XLA bytes/mech f64 |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for p in S.get("batch", []):
        if "batch" not in p:
            L.append(f"| error | {p.get('error')} | | | | | | |")
            continue
        j64, j32, mj = p.get("jaxmbs_float64") or {}, p.get("jaxmbs_float32") or {}, p.get("mujoco") or {}
        r = j64.get("steps_per_s") / mj["steps_per_s"] if j64.get("steps_per_s") and mj.get("steps_per_s") else None
        L.append(f"| {p['batch']} | {p.get('nsteps')} | {g(j64.get('steps_per_s'))} | "
                 f"{g(j32.get('steps_per_s'))} | {g(mj.get('steps_per_s'))} | {g(r, '{:.2f}')} | "
                 f"{g(j64.get('compile_s'), '{:.1f}')} | "
                 f"{g((j64.get('memory') or {}).get('xla_bytes_per_mech'), '{:.0f}')} |")
    for s in S.get("skipped", []):
        L.append(f"\n- {s}")
    L += ["", f"### Cost vs number of bodies (chains, float64, batch {S.get('bodies_batch')})", "",
          "| bodies | steps | us/mech-step Projection | us/mech-step Baumgarte | MuJoCo us | NumPy us | "
          "compile P (s) | compile B (s) | kernels/step P | custom calls/step P | bytes/mech-step P |",
          "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    for p in S.get("bodies", []):
        if "n_bodies" not in p:
            L.append(f"| error | {p.get('error')} | | | | | | | | | |")
            continue
        jp, jb = p.get("jaxmbs_projection") or {}, p.get("jaxmbs_baumgarte") or {}
        mj, npr = p.get("mujoco") or {}, p.get("numpy") or {}
        cc = ", ".join(f"{a} {b}" for a, b in (jp.get("custom_calls_per_step") or {}).items()) or "none"
        L.append(f"| {p['n_bodies']} | {p.get('nsteps')} | {g(jp.get('us_per_mech_step'))} | "
                 f"{g(jb.get('us_per_mech_step'))} | "
                 f"{g(1e6 / mj['steps_per_s'] if mj.get('steps_per_s') else None)} | "
                 f"{g(1e6 / npr['steps_per_s'] if npr.get('steps_per_s') else None)} | "
                 f"{g(jp.get('compile_s'), '{:.1f}')} | {g(jb.get('compile_s'), '{:.1f}')} | "
                 f"{g(jp.get('kernels_per_step'), '{:d}')} | {cc} | {g(jp.get('bytes_per_mech_step'), '{:.0f}')} |")
    ex = [(k, S.get(k)) for k in ("exponent_us_per_step_projection", "exponent_us_per_step_baumgarte",
                                  "exponent_us_per_step_mujoco", "exponent_compile_projection",
                                  "exponent_compile_baumgarte")]
    L += ["", "Fitted power laws over chains 8..64 (cost ~ N^k): " +
          ", ".join(f"{k.replace('exponent_', '')} k = {v:.2f}" for k, v in ex if v is not None) + ".",
          "", "jaxmbs runs its default solver, `SchurCholesky()`: from 16 constraint rows (chains of "
          "8 bodies and more) it takes the banded path (`jaxmbs/banded.py`: per-row Jacobian "
          "blocks, Schur complement in band storage, bandwidth 3 for every chain, banded Cholesky "
          "in a `lax.scan`); below, the dense unrolled Schur complement. `simulate_batch`'s "
          "default `vectorize='auto'` runs every fixed-step batch of 8 or more on the CPU "
          "batch-minor (issue 16): mechanisms of at most 24 coordinates (12 on jaxlib < 0.12) with the dense solve "
          "(double pendulum, slider-crank, four-bar, chains of 2 to 7 bodies, the "
          "spatial slider-crank) written out scalar by "
          "scalar (`elementwise_vmap`), larger ones and the banded chains with their arrays "
          "kept and the batch axis last (`minor_vmap`), in tiles of 1024 (scalar form) or "
          "128 (array form, 256 before 2026-11-28; 64 since 2026-11-30 for members of more than "
          "64 velocity coordinates, the chains of 32 and 64 bodies) members, and on jaxlib < 0.11 "
          "the banded row loops take 4 rows per iteration (2026-11-30); the per-case "
          "table's JSON records the path of every case (`solver`). The sweeps above may "
          "predate this (see their run date). The bytes/mech-step "
          "column is a static estimate from the HLO (each kernel's output plus its operands in full, "
          "times its trip count), so a dynamic slice out of a scanned array counts the whole "
          "array on every iteration: it is not measured traffic."]
    if S.get("plots"):
        L += ["", *[f"![{os.path.basename(p)}]({p})" for p in S["plots"]]]
    L.append("")
    return L


def gpu_section():
    files = sorted(glob.glob(os.path.join(HERE, "results", "gpu*.json")))
    if not files:
        return []
    L = ["## Accelerator runs", "",
         "`python benchmarks/gpu.py` (the same jaxmbs configuration as the CPU cases: RK4, "
         "dt = 1e-3, Projection, identical mechanisms; median of 3 timed runs of 5 chunks of 100 "
         "steps after a warm-up call; compile time separately). Final error: observables at "
         "t = 0.5 s against the SciPy DOP853 reference; gap: largest joint separation (m). "
         "MuJoCo and the NumPy loop are CPU baselines and are not run there.", ""]
    for f in files:
        G = _load(f)
        if not G:
            continue
        L += machine_lines(G.get("machine"), f"{os.path.basename(f)}")
        if G.get("note"):
            L += ["", G["note"]]
        L += ["", "| case | batch | dtype | path | steps/s | compile (s) | bytes / mechanism (XLA) | "
              "final error | gap (m) |", "|---|---:|---|---|---:|---:|---:|---:|---:|"]
        for c in G.get("points", []):
            L.append(f"| {c['case']} | {c['batch']} | {c['dtype']} | {c.get('path', '')} | "
                     f"{g(c.get('steps_per_s'))} | "
                     f"{g(c.get('compile_s'), '{:.1f}')} | {g(c.get('bytes_per_mech'), '{:.0f}')} | "
                     f"{e(c.get('final_error'))} | {e(c.get('max_constraint_error'))} |")
        for c in G.get("cases", []):  # older format: throughput.py cases
            L.append(f"| {c['name']} | {c['batch']} | {c['dtype']} | | "
                     f"{g(c.get('jaxmbs_steps_per_s'))} | {g(c.get('compile_s'), '{:.1f}')} | | "
                     f"{e((c.get('final_error') or {}).get('jaxmbs'))} | |")
        sk = G.get("skipped") or []
        if sk:
            L.append("")
            L.append("Not run: " + "; ".join(f"{s['case']} {s['dtype']} batch {s['batch']} ({s['why'][:80]})"
                                             for s in sk))
        L.append("")
    return L


def gpu_best():
    """Best double-pendulum rate per dtype over the accelerator runs: {dtype: (rate, batch, device)}."""
    out = {}
    for f in sorted(glob.glob(os.path.join(HERE, "results", "gpu*.json"))):
        G = _load(f) or {}
        dev = (G.get("machine") or {}).get("device", "?")
        for c in G.get("points", []):
            if c["case"] == "double_pendulum" and c["steps_per_s"] > out.get(c["dtype"], (0,))[0]:
                out[c["dtype"]] = (c["steps_per_s"], c["batch"], dev)
    return out


def gradients_section(results_dir):
    """Reverse-mode cost (``python benchmarks/gradients.py --json --out results/gradients.json``)."""
    files = sorted(glob.glob(os.path.join(results_dir, "gradients*.json")))
    L = ["## Gradients", ""]
    if not files:
        return L + ["No `results/gradients.json` yet: run "
                    "`python benchmarks/gradients.py --out benchmarks/results/gradients.json`.", ""]
    for f in files:
        R = _load(f)
        if not R or not R.get("runs"):
            continue
        r0 = R["runs"][0]
        L += [f"**{os.path.basename(f)}**: `{R.get('command', 'python benchmarks/gradients.py')}` on "
              f"{R.get('backend', '?')} (`{R.get('device', '?')}`, {R.get('cpu_count', '?')} cores), "
              f"jax {R.get('jax', '?')}, run {R.get('date', '?')}"
              + (f"; load average at start {', '.join(f'{x:.2f}' for x in R['loadavg_start'])}"
                 if R.get("loadavg_start") else "") + ".", "",
              f"Value and gradient of a loss on a {r0.get('integrator', 'rk4')} rollout of a closed-loop "
              f"four-bar ({r0.get('stabilizer', 'projection')} stabilisation, dt = {r0.get('dt', 0):g} s, "
              f"saves every {r0.get('save_every', '?')} steps) w.r.t. {len(R.get('params', []))} "
              f"parameters ({', '.join(R.get('params', []))}), against the same loss evaluated forward "
              f"only. Median of {r0.get('repeats', '?')} runs after a warm-up, forward and gradient calls interleaved in the same "
              "process; compile time (lower + compile) separately. Memory: XLA's "
              "`memory_analysis()` of each compiled program (temporaries + arguments + outputs). "
              "Target: reverse mode at most 5x the forward time.", "",
              "| steps | checkpoint | saddle solve | forward (ms) | value+grad (ms) | time ratio | forward MiB | "
              "value+grad MiB | memory ratio | compile fwd / grad (s) | gradient finite |",
              "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
        for r in R["runs"]:
            mf = (r.get("forward_memory") or {}).get("total_bytes")
            mg = (r.get("value_and_grad_memory") or {}).get("total_bytes")
            L.append(f"| {r['steps']} | {r.get('checkpoint', 'off')} | {r.get('solver', 'implicit')} | "
                     f"{g(1e3 * r['forward_run_s'])} | "
                     f"{g(1e3 * r['value_and_grad_run_s'])} | {r['time_ratio']:.2f} | "
                     f"{g(mf / 2**20 if mf else None)} | {g(mg / 2**20 if mg else None)} | "
                     f"{g(r.get('memory_ratio'), '{:.0f}')} | {r['forward_compile_s']:.1f} / "
                     f"{r['value_and_grad_compile_s']:.1f} | {r.get('grad_finite')} |")
        L.append("")
    L += ["checkpoint: `off` stores every step's residuals; `on` (`simulate(..., checkpoint=True)`) "
          "stores only the saved states and recomputes each save interval in the backward pass; "
          "`dots` keeps the matrix products of each interval "
          "(`jax.checkpoint_policies.dots_with_no_batch_dims_saveable`). The saddle solve is "
          "differentiated implicitly (`lax.custom_linear_solve` around the Cholesky factor), so "
          "reverse mode never differentiates the factorisation; saddle solve `direct` (in "
          "`gradients_baseline.json`, `--solver direct`) differentiates the factorisation "
          "step by step, as jaxmbs did before, for comparison. Gradient accuracy (finite "
          "differences, forward vs reverse mode) is tested in `tests/test_gradients.py`.", ""]
    return L


def envs_section(results_dir):
    """RL environment throughput (``python benchmarks/envs_throughput.py``)."""
    R = _load(os.path.join(results_dir, "envs.json"))
    L = ["## Reinforcement-learning environments", ""]
    if not R:
        return L + ["No `results/envs.json` yet: run `python benchmarks/envs_throughput.py`.", ""]
    L += [f"`python benchmarks/envs_throughput.py`: `env.step` (auto-reset included) with random "
          f"actions, vmapped over the batch and scanned over `steps_per_call` steps in one jitted "
          f"call; median of timed calls after a warm-up; {R.get('dtype')} on `{R.get('device')}` "
          f"({R.get('cpu_count')} cores), jax {R.get('jax')}"
          + (f"; load average at start {', '.join(f'{x:.2f}' for x in R['loadavg_start'])}"
             if R.get("loadavg_start") else "") + ". One env step is `substeps` RK4 steps of "
          "the constrained engine (plus projection where the constraints are nonlinear).", "",
          "| env | batch | coords / constraints | substeps | env-steps/s | compile (s) |",
          "|---|---:|---:|---:|---:|---:|"]
    for r in R.get("results", []):
        L.append(f"| {r['env']} | {r['batch']} | {r.get('n_coords')} / {r.get('n_constraints')} | "
                 f"{r.get('substeps')} | {g(r['env_steps_per_s'])} | {g(r.get('compile_s'), '{:.1f}')} |")
    goal = R.get("cartpole_goal_env_steps_per_s")
    if goal:
        L += ["", f"Goal for cart-pole: {g(goal)} env-steps/s on this CPU: "
              f"{'met' if R.get('cartpole_meets_goal') else 'not met'}."]
    return L + [""]


def flexible_section(results_dir):
    """Batches of flexible slider-cranks (``python benchmarks/flexible.py --json``;
    results/flexible*.json, one record per run)."""
    files = sorted(glob.glob(os.path.join(results_dir, "flexible*.json")))
    runs = [(f, _load(f)) for f in files]
    runs = [(f, R) for f, R in runs if R and "steps_per_s" in R]
    if not runs:
        return []
    L = ["## Flexible slider-crank batches", "",
         "The flexible slider-crank of examples/flexible_slider_crank.py (ANCF rod, steel, crank "
         "driven at 150 rad/s), every member with its own square section side drawn from 6-10 mm "
         "(area and I traced per member), one `simulate_batch` call, float64; member-steps/s of "
         "the second call (run only) and the time per member per simulated second, which "
         "compares runs at different steps. `python benchmarks/flexible.py --json "
         "[--integrator rk4]`. Accuracy: the range of the members' peak midpoint deflections "
         "(the same members in every run). `--rod ffr` (flexible_ffr.json): the rod as a "
         "floating-frame-of-reference body with 2 pinned modes (examples/ffr_slider_crank.py), "
         "RK4 at dt 5e-5, its members differing in Young's modulus (1.8e11-2.4e11 Pa; the "
         "section is fixed when the modes are computed), so its deflection range is not the "
         "same members'.", "",
         "| file | model | integrator | dt (s) | path | batch | member-steps/s | s per member per simulated s | "
         "first call (s) | peak deflection (mm) | ok members | machine |",
         "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for f, R in runs:
        m = R.get("machine", {})
        per = 1.0 / (R["steps_per_s"] * R["dt"])
        lo, hi = R.get("peak_deflection_m", [float("nan")] * 2)
        L.append(f"| `{os.path.basename(f)}` | {R['model']} | {R['integrator']} | {R['dt']:g} | "
                 f"{R.get('path', R.get('vectorize', ''))} | {R['batch']} | {g(R['steps_per_s'])} | "
                 f"{per:.3g} | {R['first_call_s']:.1f} | {1e3 * lo:.3f} - {1e3 * hi:.3f} | "
                 f"{R['ok_members']} | {m.get('cores')} cores, jax {m.get('jax')}, {m.get('date')}, "
                 f"load {', '.join(f'{x:.1f}' for x in (m.get('loadavg') or []))} |")
    return L + [""]


def spatial_section(results_dir):
    """Spatial slider-crank against MuJoCo (``python benchmarks/spatial.py``): the CPU run
    (results/spatial.json) and accelerator runs (results/spatial_*.json, which carry a
    ``device_note``)."""
    L = ["## Spatial slider-crank against MuJoCo", ""]
    files = [os.path.join(results_dir, "spatial.json")] + sorted(
        f for f in glob.glob(os.path.join(results_dir, "spatial_*.json"))
        if not os.path.basename(f).startswith("spatial_precision"))
    runs = [(f, _load(f)) for f in files]
    runs = [(f, R) for f, R in runs if R]
    if not runs:
        return L + ["No `results/spatial.json` yet: run `python benchmarks/spatial.py`.", ""]
    L += ["IFToMM spatial slider-crank (3 bodies, 21 coordinates, 18 velocity coordinates, 17 rows), "
          "free, RK4, dt = 1 ms, float64, same batch of identical members on both sides; jaxmbs "
          "timed as the README calls it (`simulate_batch(..., mesh=jaxmbs.batch_mesh())`, one XLA "
          "device per core on a CPU), second call; MuJoCo `rollout` on all cores, loop closed by a "
          "`connect` equality. Errors against the independent 1-DOF reference "
          "(tests/reference/spatial.py) at t = 0.4 s and 1 s.", ""]
    for f, R in runs:
        m = R.get("machine", {})
        where = R.get("device_note") or "jaxmbs and MuJoCo on the CPU cores of this machine"
        L += [f"`{os.path.basename(f)}`: {where}. Command: `{R.get('command')}` ({R.get('total_s', 0):.0f} s); "
              f"{m.get('cpu_count')} cores, Python {m.get('python')}"
              + (f", git `{m['git']}`, {m['date']}" if m.get("git") else "")
              + ", load average at the start "
              f"{', '.join(f'{x:.1f}' for x in m.get('load', []))}.", "",
              "| simulator | setting | path | steps/s | vs MuJoCo (stiff) | crank error 0.4 s / 1 s (rad) | slider error 0.4 s / 1 s (m) | loop closure | compile |",
              "|---|---|---|---|---|---|---|---|---|"]
        mjt = R["mujoco"]["tight"]["throughput"]["steps_per_s"]
        for r in R["jaxmbs"]:
            L.append(f"| jaxmbs {r.get('jax', '')} | {r['stabilizer']} | {r['path']} ({r['devices']} dev) | "
                     f"{g(r['steps_per_s'])} | **{r['steps_per_s'] / mjt:.2f}x** | "
                     f"{e(r['crank_angle_error']['0.4'])} / {e(r['crank_angle_error']['1.0'])} | "
                     f"{e(r['slider_x_error']['0.4'])} / {e(r['slider_x_error']['1.0'])} | "
                     f"{e(r['max_constraint_error'])} | {r['compile_s']:.1f} s |")
        for s_, d in R["mujoco"].items():
            a, t = d["accuracy"], d["throughput"]
            L.append(f"| MuJoCo | {s_} (solref {a['solref']}) | rollout ({t['nthread']} threads) | "
                     f"{g(t['steps_per_s'])} | {t['steps_per_s'] / mjt:.2f}x | "
                     f"{e(a['crank_angle_error']['0.4'])} / {e(a['crank_angle_error']['1.0'])} | "
                     f"{e(a['slider_x_error']['0.4'])} / {e(a['slider_x_error']['1.0'])} | "
                     f"{e(a['max_loop_gap'])} m | - |")
        L.append("")
    L += _spatial_precision(results_dir)
    for f in sorted(glob.glob(os.path.join(results_dir, "accel_spatial_h200*.json"))):
        G = _load(f)
        if not G:
            continue
        m = G.get("machine") or {}
        cmd = G.get("command", "python benchmarks/gpu_spatial.py --batches 4096 65536 --steps 200")
        jv = m.get("jax") or G["correctness"].get("jax", "0.11.2")
        L += [f"Spatial slider-crank on the accelerator alone (`{os.path.basename(f)}`: `{cmd}`, "
              f"NVIDIA H200, jax {jv}"
              + (f", jaxmbs at git `{m['git']}`, run {m.get('date', '?')}" if m.get("git") else "")
              + "): one member against the reference over 1 s at dt = 2.5e-4 s: crank pin error "
              f"{e(G['correctness']['max_error_B'])} m, slider {e(G['correctness']['max_error_C'])} m, "
              f"quaternion norm {e(G['correctness']['quaternion_norm_error'])}, energy drift "
              f"{e(G['correctness']['energy_drift'])}; batch of 64 vs single runs "
              f"{e(G['correctness']['batch_vs_single_max_diff'])}."
              + (f" {G['note']}" if G.get("note") else ""), "",
              "| batch | dtype | stabiliser | steps/s | compile |", "|---|---|---|---|---|"]
        for r in G["throughput"]:
            L.append(f"| {r['batch']} | {r['dtype']} | {r['stabilizer']} | {g(r['steps_per_s'])} | {r['compile_s']:.1f} s |")
        L.append("")
    return L


def _spatial_precision(results_dir, case="spatial"):
    """The equal-accuracy comparison (``python benchmarks/spatial_precision.py [--case
    planar]``, results/<case>_precision*.json)."""
    L = []
    for f in sorted(glob.glob(os.path.join(results_dir, f"{case}_precision*.json"))):
        R = _load(f)
        if not R:
            continue
        m = R["machine"]
        energy = any("kinetic_change" in r for r in R["rows"])
        L += [f"**At equal accuracy, {case} slider-crank** (`{os.path.basename(f)}`): "
              + ("the free-running slider-crank of the throughput tables (crank 150 rad/s); "
                 if case == "planar" else "")
              + "each simulator at several time steps "
              "(jaxmbs with RK4 and with the 8th-order DormandPrince8), "
              "rate = member-steps/s x dt (simulated seconds per second over the batch); MuJoCo's "
              "solref time constant 2 dt (its smallest recommended). Command: "
              f"`{R['command']}` ({R['total_s']:.0f} s); {m['cpu_count']} cores, Python {m['python']}, "
              f"git `{m['git']}`, {m['date']}, load average at the start "
              f"{', '.join(f'{x:.1f}' for x in m['load'])}.", "",
              "| simulator | setting | dt (ms) | steps/s | simulated s / s | crank error 0.4 s / 1 s (rad) "
              "| slider error 0.4 s / 1 s (m) |" + (" kinetic energy change at 1 s / largest (relative) |"
                                                    if energy else ""),
              "|---|---|---|---|---|---|---|" + ("---|" if energy else "")]
        for r in R["rows"]:
            who = f"jaxmbs {r['jax']}" if r["simulator"] == "jaxmbs" else f"MuJoCo {r['mujoco']}"
            L.append(f"| {who} | {r['setting']} | {r['dt'] * 1e3:g} | {g(r['steps_per_s'])} | "
                     f"{g(r['steps_per_s'] * r['dt'])} | "
                     f"{e(r['crank_angle_error']['0.4'])} / {e(r['crank_angle_error']['1.0'])} | "
                     f"{e(r['slider_x_error']['0.4'])} / {e(r['slider_x_error']['1.0'])} |"
                     + (f" {e(r['kinetic_change'])} / {e(r['kinetic_excursion'])} |"
                        if 'kinetic_change' in r
                        else " - |" if energy else ""))
        def said(ps):
            return "; ".join(f"MuJoCo {p['mujoco']}: " + (
                f"jaxmbs {p['jaxmbs']}, **{p['ratio']:.1f}x** the simulated seconds per second"
                if p["jaxmbs"] else "no jaxmbs run as accurate") for p in ps)
        L += ["", "Each MuJoCo setting against the fastest jaxmbs run whose four errors are all no "
              "larger than MuJoCo's: " + said(R["pairs"]) + "."]
        if any(r.get("integrator", "RK4") != "RK4" for r in R["rows"]):
            import spatial_precision as SP
            L += ["", "The same with jaxmbs's RK4 runs only: " + said(SP.pairs(
                [r for r in R["rows"] if r.get("integrator", "RK4") == "RK4"])) + "."]
        L.append("")
    return L


def _ab_rows(C):
    """Table rows of an ab_core.py result (B: this checkout, A: the planar-only core)."""
    L = []
    for c in C["configs"]:
        L.append(f"| {c['case']} | {c['stabilizer']} | {g(statistics.median(c['b']))} | "
                 f"{g(statistics.median(c['a']))} | **{c['ratio_median']:.3f}** "
                 f"({', '.join(f'{x:.3f}' for x in c['ratios'])}) | "
                 f"{statistics.median(c['b_compile_s']):.1f} / {statistics.median(c['a_compile_s']):.1f} |")
    return L + [""]


def _each_result(results_dir, pattern):
    """(file name, loaded dict) of every readable results/<pattern>.json, in name order."""
    import glob
    for path in sorted(glob.glob(os.path.join(results_dir, f"{pattern}.json"))):
        E = _load(path)
        if E:
            yield os.path.basename(path), E


def _two_variant_files(results_dir, prefix, *args):
    """`_two_variants` of every results/<prefix>*.json, in name order."""
    L = []
    for name, E in _each_result(results_dir, f"{prefix}*"):
        L += _two_variants(E, name, *args)
    return L


def _ab_run_line(E, name, what, repeats, batch=None):
    """The line that heads a same-process A/B table: file, what, command, machine, run."""
    m = E["machine"]
    return (f"**{name}**: {what}, same process, alternating calls, median of {repeats}: "
            f"`{E['command']}`; jax {m['jax']}, Python {m['python']}, {m['cores']} cores, "
            f"{E['devices']} XLA devices, " + ("" if batch is None else f"batch {batch}, ")
            + f"{E['steps']} RK4 steps, float64; git `{m.get('git', '?')}`; {m['date']}; "
            f"load average at start {E['load_start'][0]:.1f}.")


def _tile_files(results_dir, prefix, what):
    """The tables of every results/<prefix>*.json written by ew_tile.py: steps/s per tile
    size, the ratio of the last size to the first, compile times."""
    L = []
    for name, E in _each_result(results_dir, f"{prefix}*"):
        T = [str(t) for t in E["tiles"]]
        L += [_ab_run_line(E, name, what, E.get("repeats", 5)), "",
              "| case (batch, coordinates) | stabiliser | "
              + " | ".join(f"tile {t}: steps/s" for t in T)
              + f" | ratio {T[-1]} / {T[0]} | compile " + " / ".join(T) + " (s) | results differ by |",
              "|---|---|" + "---|" * (len(T) + 3)]
        for r in E["rows"]:
            sp, cs = r["steps_per_s"], r["compile_s"]
            L.append(f"| {r['case']} ({r['batch']}, {r['n_coords']}) | {r['stabilizer']} | "
                     + " | ".join(g(sp[t]) for t in T)
                     + f" | **{sp[T[-1]] / sp[T[0]]:.2f}** | "
                     + " / ".join(f"{cs[t]:.1f}" for t in T)
                     + f" | {r['max_abs_difference']:.1e} |")
        L.append("")
    return L


def _two_variants(E, name, a, b, label_a, label_b, what):
    """The table of a same_process_ab.py result whose rows hold {a,b}_steps_per_s,
    {a,b}_compile_s and {a,b}_ops (ew_unroll.py, rk_chain.py, save_records.py,
    projection_factor.py); ratio b / a."""
    if not E:
        return []
    L = [_ab_run_line(E, name, what, 7, E["batch"]), "",
         f"| case | stabiliser | {label_a} steps/s | {label_b} steps/s | ratio | compile {label_a} / "
         f"{label_b} (s) | StableHLO ops {label_a} / {label_b} | results differ by |",
         "|---|---|---|---|---|---|---|---|"]
    for r in E["rows"]:
        L.append(f"| {r['case']} | {r['stabilizer']} | {g(r[a + '_steps_per_s'])} | "
                 f"{g(r[b + '_steps_per_s'])} | **{r[b + '_steps_per_s'] / r[a + '_steps_per_s']:.2f}** | "
                 f"{r[a + '_compile_s']:.1f} / {r[b + '_compile_s']:.1f} | "
                 f"{r[a + '_ops']} / {r[b + '_ops']} | {r['max_abs_difference']:.1e} |")
    return L + [""]


def _stage_check_files(results_dir):
    """The tables of every results/stage_check*.json (stage_check.py): the first RK4 stage
    traced apart (peeled), all stages in one loop (rolled), and the loop without the
    dropped-row check (a diagnostic): steps/s relative to peeled, compile times."""
    L = []
    for name, E in _each_result(results_dir, "stage_check*"):
        V = ("peeled", "rolled", "rolled_unchecked")
        L += [_ab_run_line(E, name, "RK4's first stage apart (peeled, the "
                           "default), all four stages in one loop (rolled), and that loop without "
                           "the dropped-row check (rolled_unchecked: `saddle.checked_rows` patched "
                           "out, a diagnostic, not an option); XLA options of a top-level call; "
                           "whole Trajectory returned; compile = trace + lower + XLA",
                           E.get("repeats", 5), E["batch"]), "",
              "| case | stabiliser | " + " | ".join(f"{v} steps/s (vs peeled)" for v in V)
              + " | compile " + " / ".join(V) + " (s) | StableHLO ops " + " / ".join(V)
              + " | results differ by (rolled, unchecked) |",
              "|---|---|" + "---|" * (len(V) + 3)]
        for r in E["rows"]:
            x = r["variants"]
            base = x["peeled"]["steps_per_s"]
            L.append(f"| {r['case']} | {r['stabilizer']} | "
                     + " | ".join(f"{g(x[v]['steps_per_s'])} (**{x[v]['steps_per_s'] / base:.2f}**)"
                                  for v in V)
                     + " | " + " / ".join(f"{x[v]['compile_s']:.1f}" for v in V)
                     + " | " + " / ".join(str(x[v]["ops"]) for v in V)
                     + f" | {x['rolled']['max_abs_difference']:.1e}, "
                       f"{x['rolled_unchecked']['max_abs_difference']:.1e} |")
        L.append("")
    return L


def _first_call_files(results_dir):
    """The tables of every results/first_call*.json (first_call.py): per case and variant,
    the medians over fresh processes of the first call, its XLA compilations and a warm
    call's compile-time difference."""
    L = []
    for name, E in _each_result(results_dir, "first_call*"):
        m = E["machine"]
        L += [f"**{name}**: `{E['command']}`; every configuration in a fresh "
              f"process, after the first call of {E['warm'] or 'nothing'} (of nothing for that case "
              f"itself), variants alternating, "
              f"median of {E['rounds']} rounds; jax {m['jax']}, Python {m['python']}, "
              f"{m['cores']} cores; git `{m.get('git', '?')}`; {m['date']}. Batch 4096 over one "
              f"XLA device per core, RK4, {E['chunk']} steps per call, float64, Projection(); "
              "compile = first call less a warm call (throughput.py's measure).", "",
              "| case | variant | first call (s) | compile (s) | XLA compilations in the first call | "
              "their time (s): all / main program / the others |",
              "|---|---|---|---|---|---|"]
        for r in E["rows"]:
            x = r["median"]
            L.append(f"| {r['case']} | {r['variant']} | {x['first_call_s']:.2f} | "
                     f"**{x['compile_s']:.2f}** | {x['compiles']:.0f} | {x['compile_total_s']:.2f} / "
                     f"{x['compile_main_s']:.2f} / {x['compile_small_s']:.2f} |")
        L.append("")
    return L


def core_ab_section(results_dir):
    """Planar throughput of the family core against the planar-only core before it (84080f7),
    the same harness in one device call (results/accel_ab_core_*_{main,base}.json)."""
    A = _load(os.path.join(results_dir, "accel_ab_core_h200_main.json"))
    B = _load(os.path.join(results_dir, "accel_ab_core_h200_base.json"))
    C = _load(os.path.join(results_dir, "ab_core_cpu.json"))
    L = []
    if C:
        L += ["## Family core against the planar-only core (CPU, same run)", "",
              f"`{C['command']}` with `--a` a checkout of 84080f7 (the last commit before the family "
              f"core) and `--b` this one: every configuration in its own process, A and B "
              f"alternating round by round, RK4, dt = 1e-3, float64, batch {C.get('batch', 4096)} over "
              f"{C.get('cpus', '?')} cores, `vectorize='{C.get('vectorize', 'auto')}'` on both sides; jax "
              f"{C['configs'][0]['jax']}; git `{C.get('git', '?')}`; {C.get('date', '?')}; load average "
              f"at start / end {C['load_start'][0]:.1f} / {C['load_end'][0]:.1f}. Ratio: the median of "
              "the per-round ratios family / planar-only (above 1: the family core is faster).", "",
              "| case | stabiliser | family core steps/s | planar-only core steps/s | ratio (rounds) | compile family / planar-only (s) |",
              "|---|---|---|---|---|---|"]
        L += _ab_rows(C)
    U = _load(os.path.join(results_dir, "ab_core_cpu_unrolled.json"))
    if U:
        L += [f"The same A/B with the family core's RK4 stage loop written out four times "
              f"(`{U['command']}`: `--b-unroll-eqns` raises B's element-wise unroll budget "
              f"`UNROLL_MAX_EQNS` from 2000 jaxpr equations to {U['b_unroll_eqns']}). The planar-only "
              "core wrote out every scan of at most 8 iterations; since 0dc8a89 (issue 16, compile "
              "time) a scan whose written-out body would exceed 2000 equations stays a loop, and the "
              "RK4 stage loop does (4 x 1025 equations for the double pendulum, 4 x 2074 for the "
              "slider-crank; the planar-only core's were 4 x 965 and 4 x 1994): the trade is measured "
              "below (`benchmarks/ew_unroll.py`). jax "
              f"{U['configs'][0]['jax']}; git `{U.get('git', '?')}`; {U.get('date', '?')}; load "
              f"average at start / end {U['load_start'][0]:.1f} / {U['load_end'][0]:.1f}.", "",
              "| case | stabiliser | family core (unrolled) steps/s | planar-only core steps/s | ratio (rounds) | compile family / planar-only (s) |",
              "|---|---|---|---|---|---|"]
        L += _ab_rows(U)
    L += _two_variant_files(results_dir, "ew_unroll", "rolled", "unrolled",
                            "rolled", "written out",
                            "the family core's stage loop rolled (the default) and written out")
    L += _two_variant_files(results_dir, "rk_chain", "general", "chain",
                            "general tableau", "chain form",
                            "RK4's rolled stage loop in the general-tableau form (before c95a7a7: "
                            "a stack of the four stages written with `ks.at[i].set(k)` and the "
                            "tableau row `A[i]`, i the loop counter) and in the chain form "
                            "(`jaxmbs.integrators._rk_chain`, the default since: the running sum "
                            "and the last stage carried, the coefficients as scan inputs)")
    if not (A and B):
        return L
    L += ["## Family core against the planar-only core (accelerator, same call)", "",
         "`python benchmarks/gpu.py --cases double_pendulum slider_crank --batches 65536 1048576 "
         "--dtypes float64 --vectorize vmap`, run twice in one device call on an NVIDIA H200 "
         "(jax 0.11.2): once on this checkout, once with the package of 84080f7 (the last commit "
         "before the family core) on PYTHONPATH. The CPU A/B is `benchmarks/ab_core.py`.", "",
         "| case | batch | family core steps/s | planar core steps/s | ratio |", "|---|---|---|---|---|"]
    base = {(p["case"], p["batch"]): p for p in B["points"]}
    for p in A["points"]:
        b = base.get((p["case"], p["batch"]))
        if b:
            L.append(f"| {p['case']} | {p['batch']} | {g(p['steps_per_s'])} | {g(b['steps_per_s'])} | "
                     f"{p['steps_per_s'] / b['steps_per_s']:.3f} |")
    return L + [""]


def xla_flags_section(results_dir):
    """Compile time against run time under XLA:CPU's backend options
    (results/xla_cpu_flags_jax*.json, `benchmarks/xla_cpu_flags.py`)."""
    import glob
    paths = sorted(glob.glob(os.path.join(results_dir, "xla_cpu_flags_jax*.json")))
    if not paths:
        return []
    L = ["## Compile time and XLA:CPU's options", "",
         "Since jaxlib 0.11, XLA:CPU compiles a `while` loop with a small loop state (under 1024 "
         "bytes by its cost model) as one LLVM function, the loop body written out, instead of one "
         "kernel per fusion. jaxmbs's batch-minor step loops qualify: they run faster that way, "
         "and LLVM spends most of the compile time on that one function, most of it unrolling the "
         "loops over a tile's members. `XLA_FLAGS` (read once, when jax starts its CPU backend) "
         "changes this. Settings: `default` (no flag); `no_unroll`: "
         "`--xla_backend_extra_options=xla_cpu_disable_loop_unrolling`; `no_hoist`: "
         "`--xla_backend_extra_options=xla_cpu_small_while_loop_byte_threshold=0` (one kernel per "
         "fusion, as jaxlib 0.10 runs them). Compile: the first `simulate_batch` call less a warm "
         "one, called the way the README shows it (mesh over one XLA device per core); steps/s: "
         "median of the warm calls. Every setting in its own process, one after the other "
         "(load between them enters the ratios). Max |dq|: the largest difference of the final "
         "coordinates from the default setting's.", ""]
    for path in paths:
        X = _load(path)
        if not X:
            continue
        m = X["machine"]
        L += [f"**{os.path.basename(path)}**: `{X['command']}`; jax {m['jax']}, Python "
              f"{m['python']}, {m['cores']} cores; git `{m.get('git', '?')}`; {m['date']}; "
              f"{X['stabilizer']}, RK4, dt = 1e-3 s, float64; {X['rounds']} round(s), "
              f"{X['repeats']} timed calls each; {X['total_s']:.0f} s in all.", "",
              "| case (batch, path) | setting | compile | vs default | steps/s | vs default | max abs dq |",
              "|---|---|---|---|---|---|---|"]
        for r in X["summary"]:
            L.append(f"| {r['case']} ({r['batch']}, {r['path']}) | {r['setting']} | "
                     f"{r['compile_s']:.1f} s | {r.get('compile_ratio_vs_default', float('nan')):.2f} | "
                     f"{g(r['steps_per_s'])} | {r.get('steps_per_s_ratio_vs_default', float('nan')):.2f} | "
                     f"{r['max_abs_diff_q_vs_default']:.1e} |")
        L.append("")
    for path in sorted(glob.glob(os.path.join(results_dir, "keep_loops*_jax*.json"))):
        K = _load(path)
        if not K:
            continue
        m = K["machine"]
        work = (f", and programs that a call evaluates fewer than {K['keep_loops_work']} times per "
                "equation and device (their compile would cost more than the hoisted form saves)"
                if K.get("keep_loops_work") else "")
        L += [f"**{os.path.basename(path)}**: what jaxmbs does about it. Member programs above "
              f"{K['keep_loops_eqns']} jaxpr equations{work} keep their loops (`jaxmbs._xla.keep_loop`: a "
              "custom call in each loop body, which the hoisting skips); the same program compiled "
              "both ways, same process, timed alternately, median of "
              f"{K.get('repeats', 6)} calls each: "
              f"`{K['command']}`; jax {m['jax']}, Python {m['python']}, {m['cores']} cores, "
              f"{K['devices']} XLA devices, {K['steps']} RK4 steps, float64; git "
              f"`{m.get('git', '?')}`; {m['date']}; load average at start {K['load_start'][0]:.1f}.", "",
              "| case (batch) | stabiliser | kept: compile | kept: steps/s | hoisted: compile | hoisted: steps/s | steps/s kept / hoisted | results differ by |",
              "|---|---|---|---|---|---|---|---|"]
        for r in K["rows"]:
            sp, cs = r["steps_per_s"], r["compile_s"]
            L.append(f"| {r['case']} ({r['batch']}) | {r['stabilizer']} | {cs['kept']:.1f} s | "
                     f"{g(sp['kept'])} | {cs['hoisted']:.1f} s | {g(sp['hoisted'])} | "
                     f"**{sp['kept'] / sp['hoisted']:.2f}** | {r['max_abs_difference']:.1e} |")
        L.append("")
    L += _two_variant_files(results_dir, "save_records", "solved", "records",
                            "solved at the save points", "read off the next step",
                            "the save points' multipliers, constraint errors and energies solved for "
                            "in a second program (before this change) and read off the next step's "
                            "first RK4 stage (`jaxmbs.dynamics.Record`, the default on the scalar "
                            "batch-minor path since; compile = trace + lower + XLA, the whole "
                            "Trajectory returned as a call without a jit around it returns it)")
    L += _two_variant_files(results_dir, "fold_zeros", "traced", "folded",
                            "zeros traced", "zeros folded",
                            "`simulate_batch(..., fold_zeros=False)` (the zero entries of params read "
                            "as traced values, as before this change) and `fold_zeros=True` (the "
                            "default since: compiled into the scalar batch-minor program as "
                            "constants, which the interpreter folds); whole Trajectory returned; "
                            "compile = trace + lower + XLA")
    L += _two_variant_files(results_dir, "projection_factor", "refactor", "shared",
                            "factorised twice", "one factorisation",
                            "`jaxmbs.Projection` factorising the Schur complement again at the "
                            "corrected position for the velocity correction (`refactor=True`, before "
                            "this change) and taking it from the position correction's factor (the "
                            "default since; `jaxmbs.project`); whole Trajectory returned")
    L += _two_variant_files(results_dir, "array_records", "vmap", "minor_vmap",
                            "jax.vmap", "minor_vmap",
                            "the array form's (banded chains') save-point multipliers, constraint "
                            "errors and energies solved by `jax.vmap` (before this change) and by one "
                            "batch-minor program over every (member, save point) pair (`minor_vmap`, "
                            "the default since; runs without controls); whole Trajectory returned, as "
                            "a call without a jit around it returns it")
    L += _two_variant_files(results_dir, "fusion_emitters", "fusion", "legacy",
                            "fusion emitters", "LLVM IR emitters",
                            "XLA:CPU's fusion emitters (the jaxlib 0.10 default) against its LLVM IR "
                            "emitters (`xla_cpu_use_fusion_emitters=False`, which `simulate_batch` "
                            "passes to its program on jaxlib 0.10 when it takes the scalar "
                            "batch-minor form: double pendulum, slider-crank; the chains run the "
                            "array form, which keeps the default), the same lowered program; whole "
                            "Trajectory returned; compile = trace + lower + XLA")
    L += _two_variant_files(results_dir, "share_trig", "per_equation", "shared",
                            "one polynomial per equation", "one per group",
                            "the array form (banded chains) writing the sine-cosine polynomial of "
                            "every float64 sin / cos equation (before this change) and once for "
                            "all the entries a scope selects from one array "
                            "(`experimental.elementwise._minor.SHARE_TRIG`, the default since: the "
                            "rotation of a body, evaluated by its joints, loads and mass matrix, "
                            "costs one polynomial per RK4 stage); whole Trajectory returned; "
                            "compile = trace + lower + XLA")
    L += _two_variant_files(results_dir, "peel_stage", "rolled", "peeled",
                            "all stages in one loop", "first stage apart",
                            "RK4 on the batch-minor paths with its 4 stages in one loop (before "
                            "this change; the dropped-row conditional and the save points' Record "
                            "computed at every stage, kept at the first) and with the first stage "
                            "traced apart from the loop over the other three "
                            "(`integrators.PEEL_FIRST_STAGE` under `peeled_first_stage()`, the "
                            "default since: one more copy of the vector field in the program); "
                            "the chains (array form) at batch min(batch, 2048); XLA options of a "
                            "top-level call; whole Trajectory returned; compile = trace + lower + XLA")
    L += _stage_check_files(results_dir)
    L += _first_call_files(results_dir)
    L += _two_variant_files(results_dir, "row_unroll", "rolled", "unrolled",
                            "one row per iteration", "4 rows per iteration",
                            "the banded row loops (Cholesky factorisation, substitutions) with one "
                            "row per `lax.scan` iteration and with `jaxmbs._xla.ROW_SCAN_UNROLL` "
                            "rows (`unroll=`, forced here on every jaxlib; the default since on "
                            "jaxlib < 0.11, whose XLA:CPU runs every loop iteration as separate "
                            "kernels, and 1 on releases that hoist small loops); batches 4096 / "
                            "2048 / 1024 / 512 for chains of 8 / 16 / 32 / 64 bodies; whole "
                            "Trajectory returned; compile = trace + lower + XLA")
    L += _tile_files(results_dir, "ew_tile64",
                     "the batch-minor array form in tiles of each size, forced on every chain "
                     "(the default since 2026-11-30: 128 members, 64 for members of more than 64 "
                     "velocity coordinates, `jaxmbs.simulate.EW_TILE_LARGE`); coordinates "
                     "returned only; compile = trace + lower + XLA")
    L += _two_variant_files(results_dir, "trig_call", "twice", "once",
                            "polynomial in both branches", "polynomial once",
                            "float64 sin / cos on the batch-minor paths with FDLIBM's polynomial "
                            "inside both branches of the conditional that mends angles beyond "
                            "1e6 rad (before this change) and written once, as a call before that "
                            "conditional (`experimental.elementwise._interp.TRIG_POLY_CALL`, the "
                            "default since); the chains (array form) at batch min(batch, 2048); "
                            "XLA options of a top-level call; whole Trajectory returned; compile = "
                            "trace + lower + XLA")
    return L


def import_section(results_dir):
    """Shipped MJCF / URDF models in jaxmbs and MuJoCo (``examples/import_mujoco.py``)."""
    L = ["## Imported models against MuJoCo", ""]
    R = _load(os.path.join(results_dir, "import_mujoco.json"))
    if not R:
        return L + ["No `results/import_mujoco.json` yet: run `python examples/import_mujoco.py "
                    "--save benchmarks/results/import_mujoco.json`.", ""]
    m = R.get("machine", {})
    L += [f"Command: `{R.get('command')}` ({R.get('total_s', 0):.0f} s, with compilation); "
          f"{m.get('cpu_count')} cores, jax {m.get('jax')}, mujoco {m.get('mujoco')}, run "
          f"{m.get('date')}, load average at the end {', '.join(f'{x:.1f}' for x in m.get('load', []))}. "
          "Each shipped file imported with `jaxmbs.from_mjcf` / `from_urdf` and run by "
          "`jaxmbs.compare_with_mujoco`: both simulators RK4 with the same dt from the same "
          "state, zero controls, float64. jaxmbs: exact constraints (projection after every "
          "step); MuJoCo: joint coordinates, loops closed by its soft `connect` equalities with "
          "the files' settings (MuJoCo's defaults). Position / orientation difference: the "
          "largest over the bodies and the saved samples (on the loop models it is MuJoCo's "
          "loop opening seen on the bodies). Loop closure: the largest distance between the two "
          "points of a `connect`. Energy drift: max |E - E0| / max(|E0|, 1 J) of the mechanical "
          "energy (dampers and MuJoCo's soft constraints change it); energy balance: the same for "
          "jaxmbs's E minus the work of its non-conservative forces, which the exact solution "
          "keeps constant. Figures (`compare_with_mujoco(..., plot=...)`): "
          "examples/figures/import_four_bar.png, import_delta_robot.png.", "",
          "| model | bodies | t1, dt | position diff. (m) | orientation diff. (rad) | loop closure jaxmbs (m) | loop closure MuJoCo (m) | energy drift jaxmbs / MuJoCo | energy balance jaxmbs | not mapped (off in MuJoCo) |",
          "|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in R.get("results", {}).items():
        um = "; ".join(r.get("unmapped", [])) or "-"
        if r.get("mujoco_disabled"):
            um += f" ({', '.join(r['mujoco_disabled'])} off)"
        L.append(f"| `{r['file']}` | {r['bodies']} | {r['t1']:g} s, {r['dt']:g} s | "
                 f"{e(r['max_position_difference'])} | {e(r['max_orientation_difference'])} | "
                 f"{e(r['loop_gap_jaxmbs'])} | {e(r['loop_gap_mujoco'])} | "
                 f"{e(r['energy_drift_jaxmbs'])} / {e(r['energy_drift_mujoco'])} | "
                 f"{e(r.get('energy_balance_drift_jaxmbs'))} | {um} |")
    return L + [""]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--out", default=os.path.join(ROOT, "BENCHMARKS.md"))
    args = ap.parse_args(argv)
    T = _load(os.path.join(args.results, "throughput.json"))
    extra = [_load(p) for p in sorted(glob.glob(os.path.join(args.results, "throughput_*.json")))]
    extra = [x for x in extra if x and x.get("kind") == "cases"]
    S = _load(os.path.join(args.results, "sweep.json"))
    L = ["# jaxmbs benchmarks", "",
         "<!-- GENERATED FILE: do not edit by hand. -->",
         "*Generated by `python benchmarks/make_benchmarks_md.py` from `benchmarks/results/*.json`, "
         "which `python benchmarks/throughput.py --json` (cases) and "
         "`python benchmarks/throughput.py --sweep` (sweeps) write; `--write-md` on either "
         "command regenerates this file.*", ""]
    if T:
        L += ["The machine is shared and noisy: compare numbers within one run, not across "
              "runs. Each run's machine, command and load are at the head of its per-case table.", ""]
    L += issue16_section([T] + extra, args.results)
    L += targets_section(T, S, args.results) + [""]
    L += cases_section(T)
    for X in extra:
        L += cases_section(X)
    planar = _spatial_precision(args.results, "planar")
    if planar:
        L += ["## Planar slider-crank at equal accuracy", ""] + planar
    L += profile_section(T, S)
    L += sweep_section(S)
    L += gpu_section()
    L += gradients_section(args.results)
    L += envs_section(args.results)
    L += spatial_section(args.results)
    L += flexible_section(args.results)
    L += core_ab_section(args.results)
    L += xla_flags_section(args.results)
    L += import_section(args.results)
    L += ["## Method", "",
          "See the docstring of `benchmarks/throughput.py`: the cases and baselines are in "
          "`benchmarks/baselines/` (cases.py, mujoco_models.py, numpy_kkt.py, reference.py), the "
          "jaxmbs models in `benchmarks/jaxmbs_models.py` (bodies' reference points at their "
          "centres of gravity, so the state is the NumPy baseline's absolute coordinates), and "
          "the kernel counter in `benchmarks/hlo_profile.py`.", ""]
    with open(args.out, "w") as f:
        f.write("\n".join(L))
    return args.out


if __name__ == "__main__":
    print(main(sys.argv[1:]))
