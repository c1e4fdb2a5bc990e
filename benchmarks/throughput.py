"""Batched throughput of jaxmbs against MuJoCo's rollout and a NumPy dense-KKT loop.

    python benchmarks/throughput.py [--json] [--cases double_pendulum slider_crank ...]
                                    [--batch 4096] [--write-md]
    python benchmarks/throughput.py --sweep [--json] [--write-md]

For every case of ``baselines/cases.py`` (double pendulum, free-running slider-crank,
four-bar, chains N = 2..64), in the same run and on the same machine:

* **jaxmbs**: ``jaxmbs.simulate_batch(..., save_every=chunk)`` called as the README shows
  it (no ``jax.jit`` around it; only the last state of a chunk is saved), RK4, dt = 1e-3, float64 and float32, stabilisers
  ``Projection()`` (the default) and ``Baumgarte(10.0)``; ``batch`` identical mechanisms
  (the same state as the baselines), parameters shared (``params_axis=None``; pass
  ``--batched-params`` for one parameter set per member).  The horizon is run as
  ``nsteps / chunk`` calls of one compiled chunk function, each starting from the last
  state of the previous one (the cases are autonomous, so this is the same trajectory as
  one long call).  mechanism-steps/s = batch * nsteps / wall time, median of
  ``--repeats`` (3) runs after a warm-up chunk; compile time = the first call (trace,
  compile, one chunk) less a warm call.  The CPU is split into ``--cpu-devices`` XLA devices (default:
  one per core, ``XLA_FLAGS=--xla_force_host_platform_device_count``) and the batch is
  divided over them (``simulate_batch(..., mesh=jaxmbs.batch_mesh())``); the float64
  runs of ``--one-device-cases`` are also timed on one device, in the same run.
* **MuJoCo**: ``mujoco.rollout`` on all cores (``baselines/mujoco_models.run_mujoco``),
  same batch; same nsteps unless that would take longer than the time budget (the rate
  does not depend on the horizon; the final-time accuracy then comes from a single
  rollout over the full horizon: rollouts are deterministic).
* **NumPy**: one mechanism at a time, dense KKT solve per RK4 stage, Baumgarte
  alpha = beta = 10, single-threaded BLAS (``baselines/numpy_kkt``), over the same
  horizon when it fits ``--numpy-budget`` seconds; the rate is the median over 10
  consecutive parts of that horizon.
* **accuracy**: error of the observables of ``cases.py`` (chain tip; crank angle and
  slider x; four-bar crank/rocker angles and point C) at the final time against the SciPy
  DOP853 references of ``baselines/reference.py``, and the largest joint separation over
  the run ("constraint error", m; MuJoCo: its soft loop-closing ``connect``, the only
  joint that can open in its joint coordinates).
* **memory** per mechanism: the state (q, v) and what XLA reports
  (``compiled.memory_analysis()``: arguments + outputs + temporaries) / batch.

Time budget: the horizon of a case is ``--t-end`` (0.5 s) cut down so that one timed
repetition of the first jaxmbs configuration (float64, Projection) takes about
``--rep-budget`` seconds, but never below ``--min-steps`` (50); for the chains of
``--auto-batch-min-bodies`` (8) bodies and more the batch is also halved per doubling of the
bodies (4096, 2048, 1024, 512 for chains of 8, 16, 32, 64: the same in every run) unless
``--no-auto-batch``.  Every case runs in its
own subprocess with a timeout (``--case-timeout``), retried once.  A default run takes
about 10 minutes on the 2-core development box; ``--sweep`` about as long.

``--sweep``: throughput vs batch size (1, 16, 256, 4096, 65536) for the double pendulum
(jaxmbs float64/float32, default Projection, and MuJoCo) and vs number of bodies
(chains 2..64 at ``--sweep-bodies-batch``, float64, both stabilisers, with compile
times).  Results go to ``benchmarks/results/`` (``throughput.json``, or ``<--name>.json``;
``sweep.json``; PNG plots, not kept in git); ``--write-md`` regenerates ``BENCHMARKS.md`` and
``docs/performance.md`` (``report.py``).
``--json`` prints one JSON object as the last line of stdout.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # NumPy baseline: see numpy_kkt.blas_threads

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "baselines"))

import numpy as np  # noqa: E402

DT = 1e-3
NICE = (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000)
DEFAULT_RATE_HINT = 2e6  # mechanism-steps/s of the double pendulum at batch 4096 (f64, 2 cores)
STABILIZERS = {"projection": "Projection()", "baumgarte": "Baumgarte(10.0)"}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def nice_floor(x, lo=1, hi=NICE[-1]):
    """Largest 'nice' step count <= x (at least lo)."""
    c = [n for n in NICE if lo <= n <= max(lo, min(x, hi))]
    return c[-1] if c else lo


def pow2_floor(x):
    return 1 << max(0, int(math.floor(math.log2(max(x, 1)))))


def n_bodies(case):
    import cases as C
    return len(C.case_data(case).bodies)


# ============================================================== machine information
def git_revision(root):
    """Short git revision of the checkout at root, with '+uncommitted jaxmbs/ changes' when
    its package differs from it; None when git cannot tell."""
    try:
        rev = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--", "jaxmbs"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:  # noqa: BLE001
        return None
    return (rev + ("+uncommitted jaxmbs/ changes" if dirty else "")) if rev else None


def machine_info():
    import jax

    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        cpu = platform.processor() or "unknown"
    info = dict(cpu=cpu, cores=os.cpu_count(), platform=platform.platform(),
                python=platform.python_version(), jax=jax.__version__,
                date=datetime.datetime.now().astimezone().isoformat(timespec="seconds"))
    try:
        import jaxlib
        info["jaxlib"] = jaxlib.__version__
    except Exception:  # noqa: BLE001
        pass
    for mod in ("mujoco", "numpy", "scipy"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception:  # noqa: BLE001
            info[mod] = None
    try:
        import jaxmbs
        info["jaxmbs"] = jaxmbs.__version__
    except Exception:  # noqa: BLE001
        pass
    # (JAXMBS_GIT, when set, names the commit: for copies of the checkout without a usable
    # .git; benchmarks/gpu_run.sh)
    rev = os.environ.get("JAXMBS_GIT") or git_revision(ROOT)
    if rev:
        info["git"] = rev
    try:
        info["loadavg_start"] = os.getloadavg()
    except OSError:
        pass
    d = jax.devices()[0]
    info["device"] = f"{d.platform}:{getattr(d, 'device_kind', '')} x{len(jax.devices())}"
    return info


# ============================================================== jaxmbs
def _setup_jax():
    import jax
    jax.config.update("jax_enable_x64", True)
    return jax


def make_stabilizer(name):
    import jaxmbs as mb
    return {"projection": mb.Projection(), "baumgarte": mb.Baumgarte(10.0)}[name]


class JaxRunner:
    """One compiled chunk function (batch, dtype, stabiliser) and its timing helpers."""

    def __init__(self, case, batch, dtype, stab, chunk, batched_params=False, vectorize="auto",
                 shard=True):
        jax = _setup_jax()
        import jax.numpy as jnp
        import jaxmbs_models as JM

        import jaxmbs as mb

        self.jax, self.jnp = jax, jnp
        self.case, self.batch, self.dtype, self.stab_name, self.chunk = case, batch, dtype, stab, chunk
        mech, params, q0, v0 = JM.build(case)
        self.mech, self.q0_np, self.v0_np = mech, q0, v0
        dt = np.dtype(dtype)
        cast = lambda x: jnp.asarray(x, dtype=dt)
        params = jax.tree_util.tree_map(cast, params)
        if batched_params:
            params = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape), params)
        Q0 = jnp.broadcast_to(cast(q0), (batch, q0.size)) + jnp.zeros((batch, 1), dt)
        V0 = jnp.broadcast_to(cast(v0), (batch, v0.size)) + jnp.zeros((batch, 1), dt)
        stabilizer = make_stabilizer(stab)
        paxis = 0 if batched_params else None
        # the batch split over all local devices (one per core on CPU, see --cpu-devices)
        n_dev = len(jax.devices())
        mesh = mb.batch_mesh() if shard and n_dev > 1 and batch % n_dev == 0 else None
        self.n_devices = n_dev if mesh is not None else 1
        if mesh is not None:
            Q0, V0 = mb.shard_batch((Q0, V0), mesh)
            if batched_params:
                params = mb.shard_batch(params, mesh)
        self.params, self.Q0, self.V0 = params, Q0, V0
        from jaxmbs.formulations.banded import wants_sparse
        sparse = wants_sparse(mb.SchurCholesky(), mech)
        path = vectorize if vectorize != "auto" else mb.batch_vectorization(
            mech, batch, mesh=mesh, integrator=mb.RK4(), stabilizer=stabilizer)
        self.solver_path = (("SchurCholesky() banded" if sparse else "SchurCholesky() dense")
                            + f", {path}" + (f", {n_dev} devices" if mesh is not None else ""))

        def chunk_fn(p, q, v):
            # called the way the README shows it: simulate_batch itself, no jax.jit around it.
            # The initial-consistency check runs on the assembled initial state; a chunk that
            # continues from the previous chunk's last state skips it (check_initial=False):
            # Baumgarte lets the slider-crank drift ~2e-5 m in 0.1 s (its DRIFT flag), above
            # the check's 1e-6 m
            tr = mb.simulate_batch(mech, p, q, v, (0.0, chunk * DT), DT, params_axis=paxis,
                                   save_every=chunk, integrator=mb.RK4(), stabilizer=stabilizer,
                                   vectorize=vectorize, mesh=mesh, check_initial=q is self.Q0)
            return tr.q[:, -1], tr.v[:, -1], tr.constraint_error[:, -1], tr.status

        self.fn = chunk_fn
        self._compiled = None
        # compile time: the first call (trace + compile + one chunk) less a warm call; also
        # in CPU time of this process (less sensitive to other work on a shared machine)
        c0, t0 = time.process_time(), time.perf_counter()
        out = chunk_fn(self.params, self.Q0, self.V0)
        out[0].block_until_ready()
        c1, t1 = time.process_time(), time.perf_counter()
        out = chunk_fn(self.params, self.Q0, self.V0)
        out[0].block_until_ready()
        c2, t2 = time.process_time(), time.perf_counter()
        self.first_call_s = t1 - t0
        self.compile_s = max(0.0, (t1 - t0) - (t2 - t1))
        self.compile_cpu_s = max(0.0, (c1 - c0) - (c2 - c1))
        self.lower_s = self.xla_compile_s = None

    @property
    def compiled(self):
        """The same program compiled ahead of time (for the memory analysis only)."""
        if self._compiled is None:
            self._compiled = self.jax.jit(self.fn).lower(self.params, self.Q0, self.V0).compile()
        return self._compiled

    # -- memory ------------------------------------------------------
    def memory(self):
        itemsize = np.dtype(self.dtype).itemsize
        n = self.q0_np.size
        out = dict(state_bytes_per_mech=2 * n * itemsize)
        try:
            ma = self.compiled.memory_analysis()
        except Exception as e:  # noqa: BLE001
            ma = None
            out["xla_memory_analysis"] = f"unavailable: {e}"
        if ma is not None:
            fields = ("argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
                      "temp_size_in_bytes", "generated_code_size_in_bytes")
            raw = {f: int(getattr(ma, f, 0) or 0) for f in fields}
            total = (raw["argument_size_in_bytes"] + raw["output_size_in_bytes"]
                     + raw["temp_size_in_bytes"] - raw["alias_size_in_bytes"])
            out["xla"] = raw
            local = self.batch // self.n_devices  # the compiled program is one device's share
            out["xla_bytes_per_mech"] = total / local
            out["xla_temp_bytes_per_mech"] = raw["temp_size_in_bytes"] / local
            out["devices"] = self.n_devices
        return out

    # -- running ---------------------------------------------------------------
    def call(self, q, v):
        return self.fn(self.params, q, v)

    def probe(self):
        """Run one chunk from the initial state twice; seconds of the second (warm) call."""
        out = self.call(self.Q0, self.V0)
        out[0].block_until_ready()
        t0 = time.perf_counter()
        out = self.call(self.Q0, self.V0)
        out[0].block_until_ready()
        return time.perf_counter() - t0

    def run(self, nchunks, record=False):
        """Full horizon from the initial state: (wall seconds, record dict or None)."""
        q, v = self.Q0, self.V0
        rec = None
        if record:
            import jaxmbs_models as JM
            rec = dict(gap_max=JM.joint_gap(self.case, np.asarray(q[0], float)), cerr_max=0.0, status=0)
        t0 = time.perf_counter()
        for _ in range(nchunks):
            q, v, cerr, status = self.call(q, v)
            if record:
                import jaxmbs_models as JM
                rec["gap_max"] = max(rec["gap_max"], JM.joint_gap(self.case, np.asarray(q[0], float)))
                rec["cerr_max"] = max(rec["cerr_max"], float(np.max(np.asarray(cerr))))
                rec["status"] |= int(np.bitwise_or.reduce(np.asarray(status)))
        q.block_until_ready()
        wall = time.perf_counter() - t0
        if record:
            qn = np.asarray(q, float)
            rec["q_final"] = qn[0]
            rec["batch_spread"] = float(np.abs(qn - qn[0]).max())
            rec["finite"] = bool(np.all(np.isfinite(qn)))
        return wall, rec


def status_names(code):
    try:
        import jaxmbs.status as st
        names = [n for n in dir(st) if n.isupper() and isinstance(getattr(st, n), int)]
        return [n for n in names if getattr(st, n) and (code & getattr(st, n))]
    except Exception:  # noqa: BLE001
        return [str(code)]


# ============================================================== one case (worker)
def run_case(spec):
    """Everything for one case; returns a dict (see --json format)."""
    _setup_jax()
    import cases as C
    import jaxmbs_models as JM
    import mujoco_models as MJ
    import numpy_kkt as NK
    import reference as REF

    case = spec["case"]
    batch = int(spec["batch"])
    dtypes = spec.get("dtypes", ["float64", "float32"])
    stabs = spec.get("stabilizers", ["projection", "baumgarte"])
    reps = int(spec.get("repeats", 3))
    budget = float(spec.get("rep_budget", 1.5))
    t_end_max = float(spec.get("t_end", 0.5))
    max_steps = max(1, int(round(t_end_max / DT)))
    rate_hint = float(spec.get("rate_hint", DEFAULT_RATE_HINT))
    res = dict(name=case, batch=batch, n_bodies=n_bodies(case), dt=DT,
               params_shared=not spec.get("batched_params", False), notes=[])
    if spec.get("batch_note"):
        res["notes"].append(spec["batch_note"])
    res["loadavg_start"] = os.getloadavg()[0]

    # ---- chunk length from the expected rate: a chunk should take ~chunk_seconds
    chunk = spec.get("chunk") or nice_floor(spec.get("chunk_seconds", 0.4) * rate_hint / batch,
                                             1, max_steps)
    nsteps_forced = spec.get("nsteps")
    if nsteps_forced:
        chunk = math.gcd(int(nsteps_forced), int(chunk)) or 1
    res["chunk"] = chunk

    # ---- MuJoCo probe (cheap) to bound the horizon
    mj_probe = None
    if spec.get("mujoco", True):
        try:
            pb = min(batch, 256)
            _, _, mj_probe = MJ.run_mujoco(case, pb, 5)
        except Exception as e:  # noqa: BLE001
            res["notes"].append(f"MuJoCo probe failed: {e!r}")

    # ---- jaxmbs configurations
    jres = []
    nsteps = None
    for dtype in dtypes:
        for stab in stabs:
            log(f"  [{case}] jaxmbs {dtype} {STABILIZERS[stab]} batch {batch}: compiling "
                f"(chunk {chunk} steps) ...")
            r = dict(dtype=dtype, stabilizer=STABILIZERS[stab])
            try:
                jr = JaxRunner(case, batch, dtype, stab, chunk, spec.get("batched_params", False))
            except Exception as e:  # noqa: BLE001
                r["error"] = f"compile failed: {e!r}"
                jres.append(r)
                continue
            r.update(compile_s=jr.compile_s, compile_cpu_s=jr.compile_cpu_s,
                     first_call_s=jr.first_call_s, solver=jr.solver_path)
            t_chunk = jr.probe()
            if nsteps is None:  # the first configuration fixes the horizon of the case
                if nsteps_forced:
                    nsteps = int(nsteps_forced)
                else:
                    n_by_budget = int(budget / max(t_chunk, 1e-9)) * chunk
                    n_min = max(chunk, -(-int(spec.get("min_steps", 1)) // chunk) * chunk)
                    nsteps = max(n_min, min(n_by_budget, (max_steps // chunk) * chunk))
                res["nsteps"] = nsteps
                res["t_end"] = nsteps * DT
            nchunks = nsteps // chunk
            log(f"  [{case}]   compile {jr.compile_s:.1f} s; chunk {t_chunk * 1e3:.1f} ms; "
                f"horizon {nsteps} steps = {nsteps * DT:g} s; timing {reps} repetitions ...")
            walls = []
            rec = None
            for k in range(reps):
                w, rr = jr.run(nchunks, record=(k == 0))
                walls.append(w)
                rec = rr if rr is not None else rec
            rates = [batch * nsteps / w for w in walls]
            r.update(steps_per_s=float(np.median(rates)), steps_per_s_all=rates,
                     wall_s=float(np.median(walls)),
                     us_per_mech_step=1e6 / float(np.median(rates)))
            r["q_final"] = rec["q_final"].tolist()
            r["max_joint_gap"] = rec["gap_max"]
            r["final_joint_gap"] = JM.joint_gap(case, rec["q_final"])
            r["max_abs_phi_batch"] = rec["cerr_max"]
            r["status"] = rec["status"]
            r["status_flags"] = status_names(rec["status"])
            r["batch_spread"] = rec["batch_spread"]
            r["finite"] = rec["finite"]
            if dtype == "float64":  # (an ahead-of-time compilation of the same program)
                r["memory"] = jr.memory()
            log(f"  [{case}]   {r['steps_per_s']:.4g} mechanism-steps/s "
                f"(runs: {', '.join(f'{x:.3g}' for x in rates)})")
            r["devices"] = jr.n_devices
            del jr
            if spec.get("one_device") and r["devices"] > 1 and dtype == "float64":
                # same configuration on one device, same run: what the split over cores buys
                log(f"  [{case}]   the same on one device ...")
                j1 = JaxRunner(case, batch, dtype, stab, chunk, spec.get("batched_params", False),
                               shard=False)
                j1.probe()
                w1 = [j1.run(nchunks)[0] for _ in range(reps)]
                r["one_device"] = dict(steps_per_s=float(np.median([batch * nsteps / w for w in w1])),
                                       compile_s=j1.compile_s, solver=j1.solver_path)
                r["one_device"]["speedup"] = r["steps_per_s"] / r["one_device"]["steps_per_s"]
                log(f"  [{case}]   one device: {r['one_device']['steps_per_s']:.4g} mechanism-steps/s "
                    f"({r['one_device']['speedup']:.2f}x from {r['devices']} devices)")
                del j1
            jres.append(r)
    if nsteps is None:
        nsteps = int(nsteps_forced or chunk)
        res["nsteps"], res["t_end"] = nsteps, nsteps * DT
    t_end = nsteps * DT

    # ---- reference
    names = list(C.observable_names(case))
    ref = np.asarray(REF.reference_observables(case, t_end), float)
    res["observables"] = names
    res["reference_final"] = ref.tolist()
    for r in jres:
        if "q_final" in r:
            ob = JM.observables(case, np.asarray(r["q_final"]))
            r["final_obs"] = ob.tolist()
            r["final_error_vec"] = (ob - ref).tolist()
            r["final_error"] = float(np.max(np.abs(ob - ref)))

    # ---- MuJoCo
    mj = None
    if spec.get("mujoco", True):
        mj = dict(threads=os.cpu_count())
        try:
            est = batch * nsteps / mj_probe if mj_probe else 0.0
            mj_steps = nsteps
            if est > spec.get("mujoco_budget", 2.0 * budget):
                mj_steps = max(1, int(nsteps * spec.get("mujoco_budget", 2.0 * budget) / est))
            log(f"  [{case}] MuJoCo rollout batch {batch}, {mj_steps} steps x {reps} ...")
            rates, qpos = [], None
            for _ in range(reps):
                qpos, wall, rate = MJ.run_mujoco(case, batch, mj_steps)
                rates.append(rate)
            mj.update(steps_per_s=float(np.median(rates)), steps_per_s_all=rates,
                      timing_nsteps=mj_steps)
            if mj_steps != nsteps:
                qpos, _, _ = MJ.run_mujoco(case, 1, nsteps, nthread=1)
                mj["accuracy_from"] = "single rollout over the full horizon"
            q0 = qpos[0]
            ob = MJ.final_observables(case, q0)
            mj["final_obs"] = ob.tolist()
            mj["final_error_vec"] = (ob - ref).tolist()
            mj["final_error"] = float(np.max(np.abs(ob - ref)))
            qa, _ = C.joint_to_absolute(case, q0, np.zeros_like(q0))
            mj["final_joint_gap"] = JM.joint_gap(case, qa)
            if case in ("slider_crank", "fourbar"):
                mj["max_joint_gap"] = float(MJ.max_loop_closure_error(case, nsteps))
            else:
                mj["max_joint_gap"] = mj["final_joint_gap"]  # a tree in joint coordinates: exact
            log(f"  [{case}]   MuJoCo {mj['steps_per_s']:.4g} mechanism-steps/s")
        except Exception as e:  # noqa: BLE001
            mj["error"] = repr(e)
    res["mujoco"] = mj

    # ---- NumPy, one mechanism
    npres = None
    if spec.get("numpy", True):
        npres = {}
        try:
            (_, _), w0, rate0 = NK.run_numpy(case, 3)
            nb_budget = float(spec.get("numpy_budget", 3.0))
            n_np = int(min(nsteps, max(1, nb_budget * rate0)))
            parts = 10 if n_np >= 10 else 1
            sizes = [n_np // parts + (1 if i < n_np % parts else 0) for i in range(parts)]
            q, v = C.initial_absolute_state(case)
            gap, wall, part_rates = JM.joint_gap(case, q), 0.0, []
            log(f"  [{case}] NumPy KKT loop, 1 mechanism, {n_np} steps ...")
            for s in sizes:
                (q, v), w, _ = NK.run_numpy(case, s, q0=q, v0=v)
                wall += w
                part_rates.append(s / w)
                gap = max(gap, JM.joint_gap(case, q))
            # the rate: median over the (up to 10) consecutive parts of the horizon, like the
            # median of repetitions for jaxmbs and MuJoCo (a single pass varied up to 1.8x
            # between runs on the shared box)
            npres.update(steps_per_s=float(np.median(part_rates)), steps_per_s_overall=n_np / wall,
                         steps_per_s_parts=part_rates, nsteps=n_np, t_end=n_np * DT,
                         max_joint_gap=gap, final_joint_gap=JM.joint_gap(case, q))
            ref_np = ref if n_np == nsteps else np.asarray(REF.reference_observables(case, n_np * DT))
            ob = NK.final_observables(case, q)
            npres["final_obs"] = ob.tolist()
            npres["final_error_vec"] = (ob - ref_np).tolist()
            npres["final_error"] = float(np.max(np.abs(ob - ref_np)))
            if n_np == nsteps:
                for r in jres:
                    if r.get("stabilizer") == STABILIZERS["baumgarte"] and r.get("dtype") == "float64" \
                            and "q_final" in r:
                        res["jaxmbs_baumgarte_f64_vs_numpy_max_abs_q"] = float(
                            np.abs(np.asarray(r["q_final"]) - q).max())
            log(f"  [{case}]   NumPy {npres['steps_per_s']:.4g} steps/s")
        except Exception as e:  # noqa: BLE001
            npres["error"] = repr(e)
    res["numpy"] = npres
    res["jaxmbs"] = jres

    res["loadavg_end"] = os.getloadavg()[0]
    return res


def flatten_case(res):
    """The --json 'cases' entries (one per jaxmbs dtype x stabiliser) of one case result."""
    out = []
    mj, npr = res.get("mujoco") or {}, res.get("numpy") or {}
    for r in res.get("jaxmbs", []):
        rate = r.get("steps_per_s")
        mrate, nrate = mj.get("steps_per_s"), npr.get("steps_per_s")
        e = dict(name=res["name"], batch=res["batch"], dtype=r["dtype"], stabilizer=r["stabilizer"],
                 solver=r.get("solver"), nsteps=res.get("nsteps"), t_end=res.get("t_end"), n_bodies=res["n_bodies"],
                 jaxmbs_steps_per_s=rate, mujoco_steps_per_s=mrate, numpy_steps_per_s=nrate,
                 ratio_vs_mujoco=(rate / mrate) if rate and mrate else None,
                 ratio_vs_numpy=(rate / nrate) if rate and nrate else None,
                 compile_s=r.get("compile_s"), compile_cpu_s=r.get("compile_cpu_s"), devices=r.get("devices"),
                 one_device_steps_per_s=(r.get("one_device") or {}).get("steps_per_s"),
                 final_error={"jaxmbs": r.get("final_error"), "mujoco": mj.get("final_error"),
                              "numpy": npr.get("final_error"), "t_end": res.get("t_end"),
                              "numpy_t_end": npr.get("t_end"), "observables": res.get("observables"),
                              "jaxmbs_vec": r.get("final_error_vec"),
                              "mujoco_vec": mj.get("final_error_vec"),
                              "numpy_vec": npr.get("final_error_vec")},
                 max_constraint_error={"jaxmbs": r.get("max_joint_gap"),
                                       "mujoco": mj.get("max_joint_gap"),
                                       "numpy": npr.get("max_joint_gap"),
                                       "jaxmbs_max_abs_phi": r.get("max_abs_phi_batch"),
                                       "units": "m (largest joint separation over the run)"},
                 memory=r.get("memory"), status_flags=r.get("status_flags"),
                 mujoco_timing_nsteps=mj.get("timing_nsteps"), numpy_nsteps=npr.get("nsteps"))
        if r.get("error"):
            e["error"] = r["error"]
        if res.get("notes"):
            e["notes"] = res["notes"]
        out.append(e)
    return out


# ============================================================== sweeps (worker)
def run_batch_point(spec):
    """Double pendulum at one batch size: jaxmbs dtypes (Projection) and MuJoCo."""
    s = dict(spec)
    s.update(numpy=False)
    res = run_case(s)
    out = dict(batch=res["batch"], nsteps=res.get("nsteps"), chunk=res.get("chunk"))
    for r in res["jaxmbs"]:
        out[f"jaxmbs_{r['dtype']}"] = dict(steps_per_s=r.get("steps_per_s"), compile_s=r.get("compile_s"),
                                           memory=r.get("memory"), error=r.get("error"),
                                           final_error=r.get("final_error"))
    out["mujoco"] = {k: (res.get("mujoco") or {}).get(k) for k in ("steps_per_s", "timing_nsteps", "error")}
    return out


def run_body_point(spec):
    """One chain at a fixed batch: jaxmbs float64, both stabilisers."""
    s = dict(spec)
    s.update(numpy=spec.get("numpy", True), dtypes=["float64"])
    res = run_case(s)
    out = dict(case=res["name"], n_bodies=res["n_bodies"], batch=res["batch"], nsteps=res.get("nsteps"))
    for r in res["jaxmbs"]:
        key = "jaxmbs_" + ("projection" if r["stabilizer"].startswith("Projection") else "baumgarte")
        out[key] = dict(steps_per_s=r.get("steps_per_s"), compile_s=r.get("compile_s"),
                        us_per_mech_step=r.get("us_per_mech_step"), error=r.get("error"),
                        final_error=r.get("final_error"), memory=r.get("memory"))
    out["mujoco"] = {k: (res.get("mujoco") or {}).get(k) for k in ("steps_per_s", "error")}
    out["numpy"] = {k: (res.get("numpy") or {}).get(k) for k in ("steps_per_s", "error")}
    return out


# ============================================================== orchestration
def run_worker(spec, timeout, retries=1):
    """Run a spec in a fresh subprocess (isolation + a timeout against hangs)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec)]
    for attempt in range(retries + 1):
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=None, text=True, cwd=ROOT)
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            log(f"  !! worker timed out after {timeout:.0f} s (attempt {attempt + 1})")
            err = f"timed out after {timeout:.0f} s"
            continue
        for line in reversed(out.splitlines()):
            if line.startswith("@@RESULT "):
                r = json.loads(line[len("@@RESULT "):])
                r.setdefault("worker_wall_s", time.perf_counter() - t0)
                return r
        err = f"worker failed (exit {p.returncode})"
        log(f"  !! {err} (attempt {attempt + 1})")
    return {"error": err, "spec": spec}


def cost_exponent_rate(prev, nb):
    """Predicted jaxmbs rate for nb bodies from a previous (nb, rate, batch) measurement."""
    if prev is None:
        return DEFAULT_RATE_HINT * (2.0 / nb) ** 2
    nb0, rate0 = prev
    return rate0 * (nb0 / nb) ** 2  # dense Phi_q / Schur work grows ~N^2..N^3 (measured ~N^1.7)


def main_cases(args):
    import cases as C

    cases = args.cases or list(C.CASES)
    out, prev = [], None
    t_all = time.perf_counter()
    for case in cases:
        C.check_case(case)
        nb = n_bodies(case)
        hint = cost_exponent_rate(prev, nb) if prev and prev[0] != nb else (
            prev[1] if prev else DEFAULT_RATE_HINT)
        batch, note = args.batch, None
        if not args.no_auto_batch and C.is_chain(case) and nb >= args.auto_batch_min_bodies:
            # halved per doubling of the bodies (4096, 2048, 1024, 512 for chains of 8 to
            # 64): a fixed rule, so that every run times a case at the same batch (a batch
            # chosen from the previous case's measured rate moved chain16 between 2048 and
            # 4096 from run to run, and 4096 ran at 0.92x the steps/s of 2048)
            cap = pow2_floor(args.batch * args.auto_batch_min_bodies / nb)
            if cap < batch:
                batch = max(args.min_batch, cap)
                note = (f"batch reduced from {args.batch} to {batch} for the time budget "
                        f"(halved per doubling of the bodies from "
                        f"{args.auto_batch_min_bodies}; use --no-auto-batch to force)")
        spec = dict(case=case, batch=batch, dtypes=args.dtypes, stabilizers=args.stabilizers,
                    repeats=args.repeats, rep_budget=args.rep_budget, t_end=args.t_end,
                    rate_hint=hint, nsteps=args.nsteps, numpy_budget=args.numpy_budget,
                    min_steps=args.min_steps,
                    batched_params=args.batched_params, batch_note=note,
                    one_device=case in args.one_device_cases)
        dp = [c for c in out if c.get("name") == "double_pendulum" and c.get("batch") == batch
              and c.get("jaxmbs")]
        if case == "chain2" and dp and not args.no_alias:
            r = json.loads(json.dumps(dp[0]))
            r["name"] = "chain2"
            r["notes"] = r.get("notes", []) + [
                "chain2 is the double pendulum (identical model, state and MuJoCo XML): its "
                "results are the double_pendulum measurement of this run (--no-alias to re-time)"]
            out.append(r)
            log("== chain2: identical to double_pendulum, results reused")
            continue
        log(f"== {case} (batch {batch}{'; ' + note if note else ''})")
        r = run_worker(spec, args.case_timeout)
        r.setdefault("name", case)
        out.append(r)
        for jr in r.get("jaxmbs", []):
            if jr.get("steps_per_s") and jr["dtype"] == "float64" and jr["stabilizer"].startswith("Proj"):
                prev = (nb, jr["steps_per_s"])
        log(f"   ({time.perf_counter() - t_all:.0f} s elapsed)")
    return out


def main_sweep(args):
    sweep = dict(batch=[], bodies=[], skipped=[])
    t_all = time.perf_counter()
    # ---- batch sweep: double pendulum
    prev_rate = None
    for b in args.sweep_batches:
        # per-mechanism throughput grows with the batch until the cores are saturated
        hint = max(prev_rate or 0.0, DEFAULT_RATE_HINT * min(1.0, b / 256))
        est_step = b / hint  # seconds for one step of the whole batch
        if est_step * max(1, args.sweep_min_steps) > args.sweep_skip_s:
            msg = (f"batch {b}: skipped, one {args.sweep_min_steps}-step repetition estimated at "
                   f"{est_step * args.sweep_min_steps:.0f} s > --sweep-skip-s {args.sweep_skip_s:g}")
            log("  " + msg)
            sweep["skipped"].append(msg)
            continue
        spec = dict(case="double_pendulum", batch=b, dtypes=args.dtypes, stabilizers=["projection"],
                    repeats=args.repeats, rep_budget=args.rep_budget, t_end=args.t_end,
                    rate_hint=hint, mujoco_budget=2 * args.rep_budget, mode="batch_point",
                    min_steps=args.sweep_min_steps)
        log(f"== sweep: double pendulum, batch {b}")
        r = run_worker(spec, args.case_timeout)
        sweep["batch"].append(r)
        prev_rate = (r.get("jaxmbs_float64") or {}).get("steps_per_s") or prev_rate
        log(f"   ({time.perf_counter() - t_all:.0f} s elapsed)")
    # ---- bodies sweep: chains at a fixed batch
    prev = None
    for n in args.sweep_chains:
        case = f"chain{n}"
        hint = cost_exponent_rate(prev, n) if prev else DEFAULT_RATE_HINT * 0.5
        spec = dict(case=case, batch=args.sweep_bodies_batch, stabilizers=args.stabilizers,
                    repeats=args.repeats, rep_budget=args.rep_budget, t_end=args.t_end,
                    rate_hint=hint, numpy_budget=1.0, mode="body_point",
                    min_steps=args.sweep_min_steps)
        log(f"== sweep: {case}, batch {args.sweep_bodies_batch}")
        r = run_worker(spec, args.case_timeout)
        sweep["bodies"].append(r)
        rate = (r.get("jaxmbs_projection") or {}).get("steps_per_s")
        if rate:
            prev = (n, rate)
        log(f"   ({time.perf_counter() - t_all:.0f} s elapsed)")
    return sweep


# ============================================================== plots
def fit_exponent(x, y):
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    if ok.sum() < 2:
        return None
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


def write_plots(sweep, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:  # noqa: BLE001
        log(f"no plots: {e!r}")
        return []
    files = []
    pts = [p for p in sweep.get("batch", []) if "batch" in p]
    if pts:
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        bs = [p["batch"] for p in pts]
        for key, lab, mk in (("jaxmbs_float64", "jaxmbs float64 (Projection)", "o-"),
                             ("jaxmbs_float32", "jaxmbs float32 (Projection)", "s-")):
            ys = [(p.get(key) or {}).get("steps_per_s") for p in pts]
            if any(ys):
                ax.plot(bs, [y or np.nan for y in ys], mk, label=lab)
        ys = [(p.get("mujoco") or {}).get("steps_per_s") for p in pts]
        ax.plot(bs, [y or np.nan for y in ys], "^--", label="MuJoCo rollout (all cores)")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("batch size (mechanisms)")
        ax.set_ylabel("mechanism-steps / s")
        ax.set_title("double pendulum, RK4, dt = 1 ms")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        f = os.path.join(outdir, "sweep_batch.png")
        fig.tight_layout()
        fig.savefig(f, dpi=110)
        plt.close(fig)
        files.append(f)
    pts = [p for p in sweep.get("bodies", []) if "n_bodies" in p]
    if pts:
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
        nb = np.array([p["n_bodies"] for p in pts], float)
        for key, lab, mk in (("jaxmbs_projection", "jaxmbs Projection", "o-"),
                             ("jaxmbs_baumgarte", "jaxmbs Baumgarte", "s-")):
            us = [(p.get(key) or {}).get("us_per_mech_step") for p in pts]
            if any(us):
                ax.plot(nb, [u or np.nan for u in us], mk, label=lab)
            cs = [(p.get(key) or {}).get("compile_s") for p in pts]
            if any(cs):
                ax2.plot(nb, [c or np.nan for c in cs], mk, label=lab)
        mus = [1e6 / p["mujoco"]["steps_per_s"] if (p.get("mujoco") or {}).get("steps_per_s") else np.nan
               for p in pts]
        ax.plot(nb, mus, "^--", label="MuJoCo rollout")
        nps = [1e6 / p["numpy"]["steps_per_s"] if (p.get("numpy") or {}).get("steps_per_s") else np.nan
               for p in pts]
        ax.plot(nb, nps, "v:", label="NumPy KKT (1 mechanism)")
        u0 = [(p.get("jaxmbs_projection") or {}).get("us_per_mech_step") for p in pts]
        if u0 and u0[0]:
            ax.plot(nb, u0[0] * nb / nb[0], "k:", lw=0.8, label="linear")
            ax.plot(nb, u0[0] * (nb / nb[0]) ** 3, "k--", lw=0.8, label="cubic")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("bodies in the chain")
        ax.set_ylabel("µs per mechanism-step")
        ax.set_title(f"chains, batch {pts[0]['batch']}, float64")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        ax2.axhline(10.0, color="r", lw=0.8, ls="--", label="target: 10 s at 64 bodies")
        ax2.set_xscale("log", base=2)
        ax2.set_xlabel("bodies in the chain")
        ax2.set_ylabel("compile time (s)")
        ax2.set_title("jaxmbs compile time (trace + lower + XLA)")
        ax2.grid(True, which="both", alpha=0.3)
        ax2.legend(fontsize=8)
        f = os.path.join(outdir, "sweep_bodies.png")
        fig.tight_layout()
        fig.savefig(f, dpi=110)
        plt.close(fig)
        files.append(f)
    return files


def plot_cases(cases, outdir, name="cases.png"):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:  # noqa: BLE001
        return []
    rows = [c for c in cases if c.get("jaxmbs")]
    if not rows:
        return []
    fig, ax = plt.subplots(figsize=(9, 5.0))
    names = [c["name"] for c in rows]
    x = np.arange(len(rows))
    series = [("float64", "Projection()"), ("float64", "Baumgarte(10.0)"), ("float32", "Projection()"),
              ("float32", "Baumgarte(10.0)")]
    w = 0.14
    for i, (dt, st) in enumerate(series):
        ys = []
        for c in rows:
            m = [r for r in c["jaxmbs"] if r.get("dtype") == dt and r.get("stabilizer") == st]
            ys.append(m[0].get("steps_per_s") if m and m[0].get("steps_per_s") else np.nan)
        ax.bar(x + (i - 2) * w, ys, w, label=f"jaxmbs {dt} {st}")
    ax.bar(x + 2 * w, [(c.get("mujoco") or {}).get("steps_per_s") or np.nan for c in rows], w,
           label="MuJoCo rollout")
    ax.bar(x + 3 * w, [(c.get("numpy") or {}).get("steps_per_s") or np.nan for c in rows], w,
           label="NumPy KKT")
    ax.set_xticks(x, [f"{n}\n(b={c['batch']})" for n, c in zip(names, rows)], fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("mechanism-steps / s")
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.set_title("mechanism-steps/s per case (RK4, dt = 1 ms; b = batch)")
    ax.legend(fontsize=7, ncol=3, loc="upper center", bbox_to_anchor=(0.5, -0.16))
    f = os.path.join(outdir, name)
    fig.tight_layout()
    fig.savefig(f, dpi=110)
    plt.close(fig)
    return [f]


# ============================================================== text output
def fmt_rate(x):
    return f"{x:9.3g}" if isinstance(x, (int, float)) and x else "      n/a"


def fmt_e(x):
    return f"{x:8.1e}" if isinstance(x, (int, float)) else "     n/a"


def print_table(cases):
    print(f"{'case':16s} {'batch':>6s} {'steps':>5s} {'dtype':7s} {'stabiliser':15s} {'jaxmbs':>9s} "
          f"{'MuJoCo':>9s} {'NumPy':>9s} {'xMuJoCo':>7s} {'xNumPy':>7s} {'compile':>7s} "
          f"{'err jax':>8s} {'err MJ':>8s} {'err NP':>8s} {'gap jax':>8s} {'gap MJ':>8s} "
          f"{'B/mech':>7s}")
    for c in cases:
        if c.get("error"):
            print(f"{c.get('name', '?'):16s} ERROR {c['error']}")
            continue
        for e in flatten_case(c):
            mem = (e.get("memory") or {}).get("xla_bytes_per_mech")
            rm = e["ratio_vs_mujoco"]
            rn = e["ratio_vs_numpy"]
            print(f"{e['name']:16s} {e['batch']:6d} {e['nsteps'] or 0:5d} {e['dtype']:7s} "
                  f"{e['stabilizer']:15s} {fmt_rate(e['jaxmbs_steps_per_s'])} "
                  f"{fmt_rate(e['mujoco_steps_per_s'])} {fmt_rate(e['numpy_steps_per_s'])} "
                  f"{(f'{rm:7.2f}' if rm else '    n/a')} {(f'{rn:7.0f}' if rn else '    n/a')} "
                  f"{(e['compile_s'] or 0):7.1f} {fmt_e(e['final_error']['jaxmbs'])} "
                  f"{fmt_e(e['final_error']['mujoco'])} {fmt_e(e['final_error']['numpy'])} "
                  f"{fmt_e(e['max_constraint_error']['jaxmbs'])} "
                  f"{fmt_e(e['max_constraint_error']['mujoco'])} "
                  f"{(f'{mem:7.0f}' if mem else '    n/a')}")


def print_sweep(sweep):
    print("\nbatch sweep (double pendulum, Projection):")
    print(f"{'batch':>7s} {'steps':>5s} {'jaxmbs f64':>11s} {'jaxmbs f32':>11s} {'MuJoCo':>11s} "
          f"{'compile64':>9s} {'B/mech f64':>10s}")
    for p in sweep.get("batch", []):
        if "batch" not in p:
            print("  error:", p.get("error"))
            continue
        j64, j32, mj = p.get("jaxmbs_float64") or {}, p.get("jaxmbs_float32") or {}, p.get("mujoco") or {}
        mem = (j64.get("memory") or {}).get("xla_bytes_per_mech")
        print(f"{p['batch']:7d} {p.get('nsteps') or 0:5d} {fmt_rate(j64.get('steps_per_s')):>11s} "
              f"{fmt_rate(j32.get('steps_per_s')):>11s} {fmt_rate(mj.get('steps_per_s')):>11s} "
              f"{(j64.get('compile_s') or 0):9.1f} {(f'{mem:10.0f}' if mem else '       n/a')}")
    for s in sweep.get("skipped", []):
        print("  " + s)
    print("\nbodies sweep (chains, float64):")
    print(f"{'bodies':>6s} {'batch':>6s} {'us/step P':>10s} {'us/step B':>10s} {'MuJoCo us':>10s} "
          f"{'NumPy us':>10s} {'compile P':>9s} {'compile B':>9s}")
    for p in sweep.get("bodies", []):
        if "n_bodies" not in p:
            print("  error:", p.get("error"))
            continue
        jp, jb = p.get("jaxmbs_projection") or {}, p.get("jaxmbs_baumgarte") or {}
        mj, npr = p.get("mujoco") or {}, p.get("numpy") or {}
        f = lambda x: f"{x:10.3g}" if x else "       n/a"
        print(f"{p['n_bodies']:6d} {p['batch']:6d} {f(jp.get('us_per_mech_step'))} "
              f"{f(jb.get('us_per_mech_step'))} "
              f"{f(1e6 / mj['steps_per_s'] if mj.get('steps_per_s') else None)} "
              f"{f(1e6 / npr['steps_per_s'] if npr.get('steps_per_s') else None)} "
              f"{(jp.get('compile_s') or 0):9.1f} {(jb.get('compile_s') or 0):9.1f}")
    for key in ("exponent_us_per_step_projection", "exponent_us_per_step_baumgarte",
                "exponent_compile_projection"):
        if sweep.get(key) is not None:
            print(f"  fitted exponent {key}: {sweep[key]:.2f}")


# ============================================================== main
def main(argv=None):
    import cases as C

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true", help="print one JSON object as the last line")
    ap.add_argument("--cases", nargs="*", default=None, help=f"subset of {', '.join(C.CASES)}")
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--no-auto-batch", action="store_true",
                    help="never reduce the batch of the large chains to fit the time budget")
    ap.add_argument("--min-batch", type=int, default=16)
    ap.add_argument("--min-steps", type=int, default=50,
                    help="shortest horizon (steps) of a case")
    ap.add_argument("--auto-batch-min-bodies", type=int, default=8,
                    help="auto batch reduction only for chains with at least this many bodies")
    ap.add_argument("--dtypes", nargs="*", default=["float64", "float32"])
    ap.add_argument("--stabilizers", nargs="*", default=["projection", "baumgarte"],
                    choices=list(STABILIZERS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--rep-budget", type=float, default=1.5,
                    help="target seconds of one timed jaxmbs repetition (sets the horizon)")
    ap.add_argument("--t-end", type=float, default=0.5, help="longest horizon (s of simulated time)")
    ap.add_argument("--nsteps", type=int, default=None, help="force the horizon (steps)")
    ap.add_argument("--numpy-budget", type=float, default=3.0)
    ap.add_argument("--batched-params", action="store_true",
                    help="one parameter set per batch member (params_axis=0)")
    ap.add_argument("--no-alias", action="store_true",
                    help="time chain2 separately instead of reusing the identical double pendulum")
    ap.add_argument("--one-device-cases", nargs="*", default=["double_pendulum", "slider_crank"],
                    help="cases whose float64 runs are also timed on one device (same run)")
    ap.add_argument("--cpu-devices", type=int, default=os.cpu_count(),
                    help="split the CPU into this many XLA devices (one per core by default; "
                         "XLA_FLAGS=--xla_force_host_platform_device_count) and shard the "
                         "jaxmbs batch over them (simulate_batch(mesh=...)); 1: one device")
    ap.add_argument("--case-timeout", type=float, default=420.0)
    ap.add_argument("--sweep", action="store_true", help="run the batch and body-count sweeps")
    ap.add_argument("--sweep-batches", type=int, nargs="*", default=[1, 16, 256, 4096, 65536])
    ap.add_argument("--sweep-bodies-batch", type=int, default=128)
    ap.add_argument("--sweep-chains", type=int, nargs="*", default=list(C.CHAIN_SIZES))
    ap.add_argument("--sweep-min-steps", type=int, default=2)
    ap.add_argument("--sweep-skip-s", type=float, default=60.0,
                    help="skip a batch size whose shortest repetition is estimated longer")
    ap.add_argument("--out", default=RESULTS, help="results directory")
    ap.add_argument("--name", default="throughput",
                    help="results file name of the cases run (throughput: the one BENCHMARKS.md "
                         "reports; another name keeps a further run apart)")
    ap.add_argument("--write-md", action="store_true",
                    help="regenerate BENCHMARKS.md and docs/performance.md afterwards")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        # before JAX starts (here and in every worker, which inherits the environment)
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_"
                                   f"device_count={args.cpu_devices}").strip()
    if args.worker is not None:
        spec = json.loads(args.worker)
        mode = spec.get("mode", "case")
        fn = {"case": run_case, "batch_point": run_batch_point, "body_point": run_body_point}[mode]
        r = fn(spec)
        print("@@RESULT " + json.dumps(r, default=float), flush=True)
        return 0

    os.makedirs(args.out, exist_ok=True)
    info = machine_info()
    argv_s = " ".join(sys.argv[1:]) if argv is None else " ".join(argv)
    t0 = time.perf_counter()
    if args.sweep:
        sweep = main_sweep(args)
        pts = [p for p in sweep["bodies"] if "n_bodies" in p]
        big = [p for p in pts if p["n_bodies"] >= 8]
        for st in ("projection", "baumgarte"):
            sweep[f"exponent_us_per_step_{st}"] = fit_exponent(
                [p["n_bodies"] for p in big], [(p.get(f"jaxmbs_{st}") or {}).get("us_per_mech_step") for p in big])
            sweep[f"exponent_compile_{st}"] = fit_exponent(
                [p["n_bodies"] for p in big], [(p.get(f"jaxmbs_{st}") or {}).get("compile_s") for p in big])
        sweep["exponent_us_per_step_mujoco"] = fit_exponent(
            [p["n_bodies"] for p in big],
            [1e6 / p["mujoco"]["steps_per_s"] if (p.get("mujoco") or {}).get("steps_per_s") else None
             for p in big])
        obj = dict(kind="sweep", command="python benchmarks/throughput.py " + argv_s, machine=info,
                   device=info["device"], total_s=time.perf_counter() - t0, dt=DT,
                   bodies_batch=args.sweep_bodies_batch, **sweep)
        obj["plots"] = [os.path.relpath(f, ROOT) for f in write_plots(sweep, args.out)]
        path = os.path.join(args.out, "sweep.json")
        print_sweep(obj)
    else:
        cases = main_cases(args)
        flat = [e for c in cases for e in flatten_case(c)]
        obj = dict(kind="cases", command="python benchmarks/throughput.py " + argv_s,
                   device=info["device"], machine=info, total_s=time.perf_counter() - t0,
                   settings=dict(batch=args.batch, dt=DT, integrator="RK4", repeats=args.repeats,
                                 rep_budget_s=args.rep_budget, t_end_max=args.t_end,
                                 auto_batch=not args.no_auto_batch,
                                 params_shared=not args.batched_params,
                                 mujoco_threads=os.cpu_count(), cpu_devices=args.cpu_devices,
                                 xla_flags=os.environ.get("XLA_FLAGS", ""),
                                 mujoco_loop_solref=None, numpy_blas_threads=1),
                   cases=flat, details=cases)
        try:
            import mujoco_models as MJ
            obj["settings"]["mujoco_loop_solref"] = list(MJ.LOOP_SOLREF)
            obj["settings"]["mujoco_loop_solimp"] = list(MJ.LOOP_SOLIMP)
        except Exception:  # noqa: BLE001
            pass
        stem = args.name[:-5] if args.name.endswith(".json") else args.name
        png = "cases.png" if stem == "throughput" else f"cases_{stem[len('throughput_'):] or stem}.png"
        obj["plots"] = [os.path.relpath(f, ROOT) for f in plot_cases(cases, args.out, png)]
        path = os.path.join(args.out, stem + ".json")
        print_table(cases)
    with open(path + ".tmp", "w") as f:
        json.dump(obj, f, indent=1, default=float)
    os.replace(path + ".tmp", path)
    log(f"wrote {os.path.relpath(path, ROOT)} ({time.perf_counter() - t0:.0f} s)")
    if args.write_md:
        import report
        report.main([])
    if args.json:
        if args.sweep:
            print(json.dumps(obj, default=float))
        else:
            slim = dict(device=obj["device"], machine=info, settings=obj["settings"], cases=flat)
            print(json.dumps(slim, default=float))
    return 0


if __name__ == "__main__":
    sys.exit(main())
