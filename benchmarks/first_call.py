"""What a first call of `simulate_batch` compiles: the main program and the small programs
around it, each configuration in a fresh process.

The first call as throughput.py makes it (RK4, dt = 1e-3, float64, batch 4096 over one XLA
device per core, `mesh=jaxmbs.batch_mesh()`, save_every = chunk, no jax.jit around it),
after the same call of `--warm` (default double_pendulum: as throughput.py runs it first;
its first call pays the per-process costs; a case equal to --warm runs first in its
process). Reported per process: the first call's wall
time, a warm call's, and every XLA compilation during the first call (count, seconds, the
largest), from jax's compile-time events (`jax.monitoring`).

--variants default,no_zero_folds A/Bs the element-wise interpreter's NumPy folding of
sin / cos of exact zeros and sums / dot products of +0 entries (`_numpy_eval`; no_zero_folds
removes those rules, so JAX compiles a small program for each such constant, as before),
alternating processes for --rounds rounds.

    python benchmarks/first_call.py [--cases slider_crank double_pendulum]
        [--variants default no_zero_folds] [--rounds 3] [--python PATH]

Writes results/first_call_jax<version>.json (--out to change); make_benchmarks_md.py
renders it.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def _worker(case, warm, chunk, variant):
    """In a fresh process: the warm-up case's calls, then `case`'s first and second call."""
    import jax
    jax.config.update("jax_enable_x64", True)
    sys.path.insert(0, HERE)
    from jax._src import monitoring
    events = []
    on = [False]

    def listen(event, duration, **_):
        if on[0] and event.endswith("backend_compile_duration"):
            events.append(float(duration))
    monitoring.register_event_duration_secs_listener(listen)
    if variant == "no_zero_folds":
        from jaxmbs.experimental.elementwise import _numpy_eval as NE
        for k in ("sin", "cos"):
            NE._EW.pop(k, None)
        for k in ("reduce_sum", "dot_general"):
            NE._OTHER.pop(k, None)
    import contextlib

    import throughput as T
    if warm and warm != case:
        T.JaxRunner(warm, 4096, "float64", "projection", 100)

    @contextlib.contextmanager
    def first_call():
        on[0] = True
        try:
            yield
        finally:
            on[0] = False
    # (JaxRunner's first call: trace, compile, one chunk; its second: a warm call)
    jr = T.JaxRunner(case, 4096, "float64", "projection", chunk, first_call_context=first_call)
    n_main = max(events) if events else 0.0
    return dict(first_call_s=jr.first_call_s, compile_s=jr.compile_s, compiles=len(events),
                compile_total_s=sum(events), compile_main_s=n_main,
                compile_small_s=sum(events) - n_main)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="*", default=["slider_crank", "double_pendulum"])
    ap.add_argument("--warm", default="double_pendulum", help="case run first ('' for none)")
    ap.add_argument("--chunk", type=int, default=100, help="steps per call")
    ap.add_argument("--variants", nargs="*", default=["default", "no_zero_folds"])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={os.cpu_count()}",
               PYTHONPATH=HERE)
    rows = {(c, v): [] for c in args.cases for v in args.variants}
    machine = None
    for r in range(args.rounds):
        for case in args.cases:
            for v in (args.variants if r % 2 == 0 else args.variants[::-1]):
                code = (f"import sys, json; sys.path.insert(0, {HERE!r}); import first_call as F; "
                        f"import throughput as T; print('RESULT ' + json.dumps(dict("
                        f"F._worker({case!r}, {args.warm!r}, {args.chunk}, {v!r}), "
                        f"machine=T.machine_info())))")
                p = subprocess.run([args.python, "-c", code], env=env, capture_output=True,
                                   text=True, timeout=900)
                line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
                if p.returncode or not line:
                    raise RuntimeError(f"{case} / {v} failed:\n{p.stderr[-3000:]}")
                res = json.loads(line[-1][len("RESULT "):])
                machine = res.pop("machine")
                rows[(case, v)].append(res)
                print(f"round {r} {case:16s} {v:14s} first call {res['first_call_s']:.2f} s, "
                      f"compile {res['compile_s']:.2f} s, {res['compiles']} XLA compilations "
                      f"({res['compile_total_s']:.2f} s; main {res['compile_main_s']:.2f} s)",
                      flush=True)
    out = dict(command="python benchmarks/first_call.py " + " ".join(argv or sys.argv[1:]),
               machine=machine, warm=args.warm, chunk=args.chunk, rounds=args.rounds, rows=[])
    for (case, v), rs in rows.items():
        med = {k: statistics.median(x[k] for x in rs) for k in rs[0]}
        out["rows"].append(dict(case=case, variant=v, median=med, runs=rs))
    path = args.out or os.path.join(HERE, "results", f"first_call_jax{machine['jax']}.json")
    with open(path, "w") as fh:
        json.dump(out, fh, indent=1)
    print("wrote", path)
    return out


if __name__ == "__main__":
    main()
