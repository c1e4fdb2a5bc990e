"""Shared harness of ew_unroll.py, ew_tile.py, keep_loops.py and rk_chain.py: one `simulate_batch` configuration compiled
once per variant of a module-level setting, in one process, then timed alternately.

`start()` sets one XLA device per core and float64 before JAX starts and returns the modules;
`compare(...)` compiles and times the variants of one case and stabiliser; `record(...)` and
`write(...)` open and close the JSON result every script writes; `parser(...)` and
`run_pairs(...)` are the command line and the case-by-stabiliser loop they share.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def start():
    """(jax, numpy, jaxmbs, jaxmbs_models, machine_info) with one XLA device per core, x64."""
    os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={os.cpu_count()}")
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    sys.path.insert(0, HERE)
    import jaxmbs as mb
    import jaxmbs_models as M
    from throughput import machine_info
    return jax, np, mb, M, machine_info


def build_case(case):
    """(mech, params, q0, v0) of a throughput case (`jaxmbs_models.build`) or of
    "spatial_slider_crank" (examples/spatial_slider_crank.py, its consistent initial state)."""
    import numpy as np
    if case == "spatial_slider_crank":
        sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
        import spatial_slider_crank as ex
        mech, params, q0, v0 = ex.build()
        s0 = ex.initial_state(mech, params, q0, v0)
        return mech, params, np.asarray(s0.q), np.asarray(s0.v)
    import jaxmbs_models as M
    return M.build(case)


def compare(case, stabilizer, batch, steps, variants, set_variant, repeats, whole=False,
            stabilizer_of=None, compile_options_of=None, simulate_kw_of=None):
    """For each variant v: set_variant(v), compile `simulate_batch` of `case` (RK4, dt = 1e-3,
    `mesh=jaxmbs.batch_mesh()`, identical members, `stabilizer` 'projection' or 'baumgarte');
    then time the executables alternately, `repeats` calls each. set_variant(None) restores
    the default. The compiled function returns the coordinates only (XLA then drops what
    they do not need: the multipliers, errors and energies of the save points), or with
    whole=True the whole Trajectory, as `simulate_batch` called without a jit around it does.
    stabilizer_of(stabilizer, v), when given, builds the stabiliser of variant v instead;
    compile_options_of(v), when given, the XLA compiler options its program is compiled with
    (the same lowering; the jit around `simulate_batch` means that simulate_batch itself adds
    none, `jaxmbs._xla.scalar_form_options`); simulate_kw_of(v), when given, more keyword
    arguments of variant v's `simulate_batch` call. Returns {v: dict(steps_per_s, compile_s, ops (StableHLO), q (final, array))}."""
    import jax
    import numpy as np
    import jaxmbs as mb
    mech, params, q0, v0 = build_case(case)
    Q0 = np.tile(np.asarray(q0), (batch, 1))
    V0 = np.tile(np.asarray(v0), (batch, 1))
    mesh = mb.batch_mesh()
    out = {}
    for v in variants:
        set_variant(v)
        if stabilizer_of is not None:
            st = stabilizer_of(stabilizer, v)
        else:
            st = mb.Projection() if stabilizer == "projection" else mb.Baumgarte(10.0)
        jax.clear_caches()  # (simulate_batch's jit cache does not see module-level settings)
        kw = simulate_kw_of(v) if simulate_kw_of else {}

        def run(q, w):
            tr = mb.simulate_batch(mech, params, q, w, (0.0, steps * 1e-3), 1e-3,
                                   params_axis=None, save_every=steps, stabilizer=st, mesh=mesh,
                                   **kw)
            return tr if whole else tr.q

        f = jax.jit(run)
        t0 = time.perf_counter()
        low = f.lower(Q0, V0)
        c = low.compile(compile_options_of(v)) if compile_options_of else low.compile()
        compile_s = time.perf_counter() - t0
        res = c(Q0, V0)
        out[v] = dict(exe=c, compile_s=compile_s,
                      ops=len(re.findall(r"= \"?stablehlo\.", low.as_text())),
                      q=np.asarray(res.q if whole else res))
    set_variant(None)
    walls = {v: [] for v in variants}
    for r in range(repeats):
        for v in (variants if r % 2 == 0 else variants[::-1]):
            t0 = time.perf_counter()
            jax.block_until_ready(out[v]["exe"](Q0, V0))
            walls[v].append(time.perf_counter() - t0)
    for v in variants:
        out[v]["steps_per_s"] = batch * steps / float(np.median(walls[v]))
        del out[v]["exe"]
    return out


def pair_row(case, stabilizer, m, va, vb, a, b):
    """The result row of two variants va, vb of `compare`'s output m, its keys prefixed
    a_ / b_ ({a,b}_steps_per_s, {a,b}_compile_s, {a,b}_ops) plus max_abs_difference of the
    final coordinates; prints it as one line."""
    import numpy as np
    x, y = m[va], m[vb]
    row = dict(case=case, stabilizer=stabilizer,
               **{f"{a}_steps_per_s": x["steps_per_s"], f"{b}_steps_per_s": y["steps_per_s"],
                  f"{a}_compile_s": x["compile_s"], f"{b}_compile_s": y["compile_s"],
                  f"{a}_ops": x["ops"], f"{b}_ops": y["ops"]},
               max_abs_difference=float(np.max(np.abs(x["q"] - y["q"]))))
    print(f"{case:16s} {stabilizer:10s} {a} {x['steps_per_s']:.3g} steps/s (compile "
          f"{x['compile_s']:.1f} s, {x['ops']} ops), {b} {y['steps_per_s']:.3g} (compile "
          f"{y['compile_s']:.1f} s, {y['ops']} ops): ratio {y['steps_per_s'] / x['steps_per_s']:.3f}; "
          f"results differ by {row['max_abs_difference']:.1e}", flush=True)
    return row


def record(script, argv, **fields):
    """The result dict of benchmarks/<script>.py: its command, machine, load, XLA devices,
    `fields` and an empty list of rows; the clock for `write`'s total time starts here."""
    import jax
    from throughput import machine_info
    return dict(command=f"python benchmarks/{script}.py " + " ".join(argv or sys.argv[1:]),
                machine=machine_info(), load_start=os.getloadavg(), devices=len(jax.devices()),
                _t_start=time.perf_counter(), **fields, rows=[])


def write(res, script, out=None):
    """Adds the load and total time to `record`'s dict and writes it to `out` (default
    results/<script>_jax<version>.json); returns it."""
    import jax
    res["load_end"] = os.getloadavg()
    res["total_s"] = time.perf_counter() - res.pop("_t_start")
    out = out or os.path.join(HERE, "results", f"{script}_jax{jax.__version__}.json")
    with open(out, "w") as fh:
        json.dump(res, fh, indent=1)
    print("wrote", out)
    return res


def module_flag(module, name, on):
    """A `compare` set_variant for a boolean module-level setting: variant `on` sets
    module.name True, any other variant False, None restores the value it had here."""
    saved = getattr(module, name)

    def set_variant(v):
        setattr(module, name, saved if v is None else (v == on))
    return set_variant


def parser(doc, cases=("double_pendulum", "slider_crank")):
    """The shared command line: --cases, --stabilizers, --batch, --steps, --repeats, --out
    (a script adds its own options to it)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=list(cases))
    ap.add_argument("--stabilizers", nargs="*", default=["projection", "baumgarte"])
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--out", default=None)
    return ap


def run_pairs(res, args, variants, set_variant, names, whole=False, stabilizer_of=None,
              compile_options_of=None, per_case=None, simulate_kw_of=None):
    """`compare` the two variants for every case and stabiliser of args and append their
    `pair_row` (keys prefixed names[0] / names[1]) to res["rows"]; returns res.
    per_case(case), when given, returns (batch, compile_options_of, extra row fields) for
    that case instead of args.batch, compile_options_of and none."""
    for case in args.cases:
        batch, options_of, extra = ((args.batch, compile_options_of, {}) if per_case is None
                                    else per_case(case))
        for stab in args.stabilizers:
            m = compare(case, stab, batch, args.steps, variants, set_variant, args.repeats,
                        whole=whole, stabilizer_of=stabilizer_of, compile_options_of=options_of,
                        simulate_kw_of=simulate_kw_of)
            res["rows"].append(dict(pair_row(case, stab, m, variants[0], variants[1], *names),
                                    **extra))
    return res


def form_options(case):
    """(the batch-minor form `simulate_batch` gives `case`: 'scalar' or 'array', the XLA
    options a top-level call of it gets: `jaxmbs._xla.scalar_form_options` for the scalar
    form, {} for the array form)."""
    import jaxmbs as mb
    from jaxmbs import _xla, simulate
    form = simulate._ew_form(build_case(case)[0], mb.SchurCholesky())
    return form, (_xla.scalar_form_options() if form == "scalar" else {})


def module_flag_ab(script, doc, cases, argv, module, name, off, on):
    """The command line of a script that A/Bs a boolean module-level setting (`module_flag`)
    on `simulate_batch` as a top-level call gets it: for each case and stabiliser, variant
    `off` (module.name False) against `on` (True), whole Trajectory returned, with the XLA
    options of the form the case takes (`jaxmbs._xla.scalar_form_options` for the scalar
    form; the banded chains' array form at batch min(batch, 2048), as throughput.py keeps
    them short). Writes results/<script>[_jax<version>].json; returns the results."""
    ap = parser(doc, cases)
    args = ap.parse_args(argv)
    start()

    def per_case(case):
        form, opts = form_options(case)
        batch = args.batch if form == "scalar" else min(args.batch, 2048)
        return batch, (lambda v: opts), dict(form=form, batch=batch)

    res = record(script, argv, batch=args.batch, steps=args.steps)
    run_pairs(res, args, (off, on), module_flag(module, name, on), (off, on), whole=True,
              per_case=per_case)
    return write(res, script, args.out)
