"""The ``jaxmbs`` command.

    jaxmbs --version
    jaxmbs demo [--batch 4096] [--seed 0] [--points 73] [--out demo.png] [--no-plot] [--json]
    jaxmbs simulate MODEL.json|MODEL.xml|MODEL.urdf --t1 T [--dt 1e-3] [--batch N] [--perturb KEY=REL ...]
                    [--out results.npz] [--plot fig.png] [--json]

``jaxmbs demo`` is a Monte-Carlo tolerance study of the driven slider-crank of
docs/reference_problems.md §2 (Simeon's "crank" problem, rigid variant): the crank turns at a
constant 150 rad/s, imposed by a driving constraint, and for every member of a batch of
mechanisms with perturbed link lengths (+-2 % uniform) and masses (+-5 % uniform) the
motor torque over one revolution is computed by inverse dynamics. The whole batch is one
jitted, vmapped program: parameters are set with `Mechanism.replace`, every member is
re-assembled with `jaxmbs.assemble` (the crank angle held) and then analysed with
`jaxmbs.inverse_dynamics`. It prints percentiles of the peak driving torque, the members
that failed (by status code), the throughput and the compile time, and writes a PNG
with the torque band over the crank angle and the histogram of peak torques.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter

from .zoo import SLIDER_CRANK as _SC

__all__ = ["main", "demo", "slider_crank", "simulate_file"]

L1, L2, M1, J1, M2, J2, M3, OMEGA = (_SC.L1, _SC.L2, _SC.M1, _SC.J1, _SC.M2, _SC.J2, _SC.M3,
                                     _SC.OMEGA)  # (docs/reference_problems.md §2, SI units)


def slider_crank(omega=OMEGA):
    """The driven slider-crank of docs/reference_problems.md §2 at crank angle 0, its crank's
    CG on the pivot (`jaxmbs.zoo.slider_crank(omega, crank_cg=0.0)`)."""
    from .zoo import slider_crank as build
    return build(omega, crank_cg=0.0)


def demo(batch=4096, seed=0, points=73, out="demo.png", quiet=False) -> dict:
    """Run the Monte-Carlo inverse-dynamics demo; returns the summary dict.

    batch: number of mechanisms; seed: PRNG seed; points: time points over one crank
    revolution (first and last at 0 and 360 degrees); out: PNG path or None; quiet: print
    nothing. Needs float64 (jax_enable_x64, which `main` switches on): the Newton
    tolerances of assemble / kinematics are 1e-10.
    """
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxmbs
    from jaxmbs import status as st

    mech, params, q0, v0 = slider_crank()
    I2 = J2 - M2 * (L2 / 2) ** 2
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
    u_len = jax.random.uniform(k1, (batch, 2), minval=-1.0, maxval=1.0)
    u_mass = jax.random.uniform(k2, (batch, 3), minval=-1.0, maxval=1.0)
    lengths = jnp.array([L1, L2]) * (1 + 0.02 * u_len)  # m, +-2 %
    masses = jnp.array([M1, M2, M3]) * (1 + 0.05 * u_mass)  # kg, +-5 %
    ts = jnp.linspace(0.0, 2 * math.pi / OMEGA, points)

    def member(x):
        """Peak-torque analysis of one mechanism: lengths (2,) m, masses (3,) kg."""
        (l1, l2), (m1, m2, m3) = x
        # crank and rod keep their shape: inertia scales with mass * length^2
        p = mech.replace(params, {
            "A.point_i": jnp.stack([l1, 0.0]), "A.point_j": jnp.stack([-l2 / 2, 0.0]),
            "B.point_i": jnp.stack([l2 / 2, 0.0]),
            "crank.mass": m1, "crank.inertia": J1 * (m1 / M1) * (l1 / L1) ** 2,
            "rod.mass": m2, "rod.inertia": I2 * (m2 / M2) * (l2 / L2) ** 2,
            "slider.mass": m3,
        })
        asm = jaxmbs.assemble(mech, p, q0, v0, fixed=("crank.theta",))
        inv = jaxmbs.inverse_dynamics(mech, p, asm.q, ts, iterations=5)
        return inv.reactions["motor"]["effort"], asm.status | inv.status

    run = jax.jit(jax.vmap(member))
    xs = ((lengths[:, 0], lengths[:, 1]), (masses[:, 0], masses[:, 1], masses[:, 2]))
    jax.block_until_ready(xs)

    t0 = time.perf_counter()
    compiled = run.lower(xs).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    torque, status = jax.block_until_ready(compiled(xs))
    wall_s = time.perf_counter() - t0

    torque, status = np.asarray(torque), np.asarray(status)
    ok = status == 0
    peak = np.max(np.abs(torque), axis=1)
    failed = Counter(st.describe(int(c)) for c in status[~ok])
    pct = (np.percentile(peak[ok], [5, 50, 95]) if ok.any() else np.full(3, np.nan))
    result = {
        "batch": int(batch), "seed": int(seed), "points": int(points),
        "peak_torque_percentiles": ({k: float(v) for k, v in zip(("5", "50", "95"), pct)}
                                    if ok.any() else None),
        "peak_torque_min": float(peak[ok].min()) if ok.any() else None,
        "peak_torque_max": float(peak[ok].max()) if ok.any() else None,
        "failed": int((~ok).sum()), "failed_by_status": dict(failed),
        "mechanisms_per_s": batch / wall_s, "wall_s": wall_s, "compile_s": compile_s,
        "backend": jax.default_backend(), "png": None,
    }
    if out:
        try:
            _demo_plot(np.degrees(np.asarray(ts) * OMEGA), torque[ok], peak[ok], pct, out, result)
            result["png"] = out
        except ImportError as e:
            if not quiet:
                print(f"(no plot: {e})", file=sys.stderr)

    if not quiet:
        w = 26
        print("jaxmbs demo: Monte-Carlo inverse dynamics of the driven slider-crank "
              "(docs/reference_problems.md §2)")
        print(f"{'mechanisms':<{w}}{batch} (L1, L2 +-2 %, masses +-5 %, uniform; seed {seed})")
        print(f"{'analysis':<{w}}{points} time points over one revolution at {OMEGA:g} rad/s")
        print(f"{'peak |torque| p5/p50/p95':<{w}}{pct[0]:.3f} / {pct[1]:.3f} / {pct[2]:.3f} N m")
        if ok.any():
            print(f"{'peak |torque| min/max':<{w}}{peak[ok].min():.3f} / {peak[ok].max():.3f} N m")
        fails = ", ".join(f"{n} {k}" for k, n in failed.items()) or "none"
        print(f"{'failed members':<{w}}{int((~ok).sum())} ({fails})")
        print(f"{'throughput':<{w}}{batch / wall_s:,.0f} mechanisms/s "
              f"(wall {wall_s:.2f} s, excluding compile; {jax.default_backend()})")
        print(f"{'compile time':<{w}}{compile_s:.2f} s")
        if result["png"]:
            print(f"{'plot':<{w}}{out}")
    return result


def _demo_plot(angle_deg, torque, peak, pct, path, result):
    import numpy as np

    from .plot.shapes import _mpl

    plt = _mpl()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4.2), layout="constrained",
                                 gridspec_kw=dict(width_ratios=(1.6, 1)))
    if len(torque):
        lo, p5, p50, p95, hi = np.percentile(torque, [0, 5, 50, 95, 100], axis=0)
        a1.fill_between(angle_deg, lo, hi, color="C0", alpha=0.15, lw=0, label="min - max")
        a1.fill_between(angle_deg, p5, p95, color="C0", alpha=0.35, lw=0, label="5 - 95 %")
        a1.plot(angle_deg, p50, color="C0", lw=1.5, label="median")
        a2.hist(peak, bins=50, color="C0", alpha=0.8)
        for v, ls in zip(pct, (":", "-", ":")):
            a2.axvline(v, color="k", ls=ls, lw=1)
    a1.axhline(0, color="0.5", lw=0.6)
    a1.set_xlim(0, 360)
    a1.set_xticks(range(0, 361, 45))
    a1.set_xlabel("crank angle (deg)")
    a1.set_ylabel("driving torque (N m)")
    a1.set_title(f"motor torque at {OMEGA:g} rad/s, {result['batch']} mechanisms")
    a1.legend(loc="upper right", fontsize=8)
    a1.grid(alpha=0.3)
    a2.set_xlabel("peak |driving torque| over a revolution (N m)")
    a2.set_ylabel("members")
    a2.set_title("peak torque (lines: 5, 50, 95 %)")
    a2.grid(alpha=0.3)
    fig.savefig(path, dpi=110)
    plt.close(fig)


INTEGRATORS = ("rk4", "dop853", "dopri5", "semi-implicit-euler", "euler")
STABILIZERS = ("projection", "baumgarte", "none")
_API_NAMES = {k: k for k in ("t0", "t1", "dt", "batch", "seed", "save_every", "out", "plot",
                             "plot_coords", "perturb", "integrator", "stabilizer", "energy_tol")}
_CLI_NAMES = {k: "argument --" + k.replace("_", "-") for k in _API_NAMES}


def _finite(x, name):
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number, got {x!r}") from None
    if isinstance(x, bool) or not math.isfinite(v):
        raise ValueError(f"{name}: must be a finite number, got {x!r}")
    return v


def _whole(x, name, minimum):
    if isinstance(x, bool) or not isinstance(x, int) and not (isinstance(x, float) and x.is_integer()):
        try:
            import numpy as np
            ok = isinstance(x, np.integer)
        except ImportError:  # pragma: no cover
            ok = False
        if not ok:
            raise ValueError(f"{name}: expected a whole number, got {x!r}")
    if int(x) < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {x!r}")
    return int(x)


def _output_path(path, name, what):
    """Check that `path` can be written (its folder exists, it is not a folder)."""
    import os

    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise ValueError(f"{name}: expected a file name, got {path!r}")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise ValueError(f"{name}: {path!r} is a folder; give a {what} file name")
    if not os.path.isdir(folder):
        raise ValueError(f"{name}: folder {folder!r} does not exist; create it first")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"{name}: cannot write into folder {folder!r}")
    return path


def check_simulate_args(t1, t0=0.0, dt=1e-3, batch=1, seed=0, integrator="rk4",
                        stabilizer="projection", save_every=None, out=None, plot=None,
                        names=None) -> dict:
    """Check the arguments of `simulate_file` / ``jaxmbs simulate`` before any work:
    ValueError naming the argument (`names` maps argument names to how the error calls
    them, e.g. "dt" -> "argument --dt"). Returns the normalised values and n_steps."""
    nm = dict(_API_NAMES, **(names or {}))
    t0, t1, dt = _finite(t0, nm["t0"]), _finite(t1, nm["t1"]), _finite(dt, nm["dt"])
    if not t1 > t0:
        raise ValueError(f"{nm['t1']}: the end time must be greater than the start time "
                         f"{t0:g} s, got {t1:g}")
    if not dt > 0:
        raise ValueError(f"{nm['dt']}: the time step must be > 0 s, got {dt:g}")
    n_steps = int(round((t1 - t0) / dt))
    if n_steps < 1 or abs(n_steps * dt - (t1 - t0)) > 1e-9 * max(1.0, abs(t1 - t0)):
        raise ValueError(f"{nm['dt']}: t1 - t0 = {t1 - t0:g} s is not a whole number of steps of "
                         f"{dt:g} s; choose e.g. {(t1 - t0) / max(n_steps, 1):.6g}")
    batch = _whole(batch, nm["batch"], 1)
    seed = _whole(seed, nm["seed"], 0)
    if integrator not in INTEGRATORS:
        raise ValueError(f"{nm['integrator']}: unknown integrator {integrator!r}; choose one of "
                         f"{', '.join(INTEGRATORS)}")
    if stabilizer not in STABILIZERS:
        raise ValueError(f"{nm['stabilizer']}: unknown stabilizer {stabilizer!r}; choose one of "
                         f"{', '.join(STABILIZERS)}")
    if save_every is not None:
        save_every = _whole(save_every, nm["save_every"], 1)
        if n_steps % save_every:
            raise ValueError(f"{nm['save_every']}: must divide the {n_steps} steps, got {save_every}")
    if out is not None:
        out = _output_path(out, nm["out"], ".npz")
    if plot is not None:
        import os

        plot = _output_path(plot, nm["plot"], "figure")
        try:
            from matplotlib.figure import Figure
        except ImportError:
            raise ValueError(f"{nm['plot']}: needs matplotlib (pip install jaxmbs[plot])") from None
        ext = os.path.splitext(plot)[1].lower().lstrip(".")
        kinds = Figure().canvas.get_supported_filetypes()
        if ext and ext not in kinds:
            raise ValueError(f"{nm['plot']}: matplotlib cannot write .{ext} files; use one of "
                             f"{', '.join('.' + k for k in sorted(kinds))}")
    return dict(t0=t0, t1=t1, dt=dt, batch=batch, seed=seed, integrator=integrator,
                stabilizer=stabilizer, save_every=save_every, out=out, plot=plot, n_steps=n_steps)


MUJOCO_SUFFIXES = (".xml", ".mjcf", ".urdf")


def _load_file(path):
    """(mech, params, q0, v0) of a model file (jaxmbs JSON, or MJCF / URDF through
    `jaxmbs.from_mjcf`); any failure is a ValueError that starts with the file name."""
    from jaxmbs.io.files import load_model

    try:
        if str(path).lower().endswith(MUJOCO_SUFFIXES):
            from jaxmbs.io.mjcf import from_mjcf

            if not __import__("os").path.exists(path):
                raise OSError(2, "No such file or directory", str(path))
            return from_mjcf(path).build()
        return load_model(path).build()
    except Exception as e:  # noqa: BLE001 (json, builder and file errors alike)
        kind = "" if isinstance(e, (ValueError, OSError)) else f"{type(e).__name__}: "
        msg = " ".join(str(e).split())
        if isinstance(e, OSError) and e.strerror:
            msg = e.strerror
        if msg.startswith(f"{path}: "):  # (load_model names the file itself)
            msg = msg[len(f"{path}: "):]
        raise ValueError(f"model file {path}: {kind}{msg}") from None


def simulate_file(path, t1, t0=0.0, dt=1e-3, batch=1, perturb=(), seed=0, integrator="rk4",
                  stabilizer="projection", save_every=None, out=None, plot=None, quiet=False,
                  plot_coords="all", _names=None, energy_tol=0.05) -> dict:
    """Simulate a JSON model file (``jaxmbs simulate``); returns the summary dict.

    path: model file (`jaxmbs.save_model`), or an MJCF (.xml, .mjcf) or URDF (.urdf) file
    imported with `jaxmbs.from_mjcf` (needs the mujoco package; what the import does not
    map is named in a warning on stderr). t0, t1, dt: time span and step, s.
    batch: number of members; perturb: ("key=rel", ...) each member's parameter `key`
    (see `Mechanism.param_names()`) scaled by 1 + rel * U(-1, 1), independently per member
    (seed: PRNG seed). integrator: rk4 | dopri5 | semi-implicit-euler | euler.
    stabilizer: projection | baumgarte | none. save_every: steps between saved samples
    (default: about 500 samples). out: .npz with t (s,), q, v (batch, s, n), lam
    (batch, s, m), status (batch,), constraint_error, energy (batch, s), the perturbed
    parameter values and the coordinate / constraint names. plot: PNG of member 0's
    time histories; plot_coords: "all" (default) or a list / comma-separated string of the
    coordinate names (or indices) to draw. Every member is assembled from the file's
    initial state (Newton on the positions, least-norm consistent velocities) before it is
    simulated. energy_tol: relative energy-balance error above which a member fails with
    the ENERGY status (`jaxmbs.simulate`'s energy_tol; e.g. a spring too stiff for dt).
    Every argument is checked before the simulation starts (ValueError naming it; a model
    file's errors start with its name), the drawn parameters too (no mass <= 0).

    The summary: model, batch, steps, dt, t0, t1, integrator, stabilizer,
    max_constraint_error, max_energy_drift (the largest `Trajectory.energy_drift` of the
    members that ran without a failure status; when none did, the key is left out and
    max_energy_drift_omitted says why), failed, failed_by_status, wall_s, compile_s,
    mechanism_steps_per_s, out, plot.
    """
    import jax
    import jax.numpy as jnp
    import numpy as np

    import jaxmbs
    from jaxmbs import status as st

    nm = dict(_API_NAMES, **(_names or {}))
    energy_tol = _finite(energy_tol, nm.get("energy_tol", "energy_tol"))
    if not energy_tol > 0:
        raise ValueError(f"{nm.get('energy_tol', 'energy_tol')}: must be > 0, got {energy_tol:g}")
    a = check_simulate_args(t1, t0, dt, batch, seed, integrator, stabilizer, save_every, out,
                            plot, names=nm)
    t0, t1, dt, batch, seed, save_every, out, plot, n_steps = (
        a[k] for k in ("t0", "t1", "dt", "batch", "seed", "save_every", "out", "plot", "n_steps"))
    if isinstance(perturb, str):
        perturb = (perturb,)
    if save_every is None:
        save_every = max(1, n_steps // 500)
        while n_steps % save_every:
            save_every -= 1
    integ = {"rk4": jaxmbs.RK4(), "dop853": jaxmbs.DormandPrince8(), "dopri5": jaxmbs.DormandPrince5(),
             "semi-implicit-euler": jaxmbs.SemiImplicitEuler(), "euler": jaxmbs.Euler()}
    stabs = {"projection": jaxmbs.Projection(), "baumgarte": jaxmbs.Baumgarte(10.0),
             "none": jaxmbs.NoStabilization()}

    mech, params, q0, v0 = _load_file(path)
    rng = np.random.default_rng(seed)
    values = {}
    for item in perturb:
        key, sep, rel = str(item).partition("=")
        if not sep:
            raise ValueError(f"{nm['perturb']}: {item!r}: expected KEY=REL, e.g. crank.mass=0.05")
        try:
            rel = float(rel)
        except ValueError:
            raise ValueError(f"{nm['perturb']}: {item!r}: REL must be a number") from None
        if not math.isfinite(rel):
            raise ValueError(f"{nm['perturb']}: {item!r}: REL must be finite")
        if key not in mech.param_names():
            raise ValueError(f"{nm['perturb']}: {item!r}: unknown parameter {key!r}; known: "
                             f"{', '.join(mech.param_names())}")
        if key in values:
            raise ValueError(f"{nm['perturb']}: {key!r} is given twice")
        base = np.asarray(mech.get(params, key))
        values[key] = base * (1 + rel * rng.uniform(-1, 1, (batch,) + base.shape))
    if values:  # the drawn members must be valid parameters (e.g. no mass <= 0)
        from jaxmbs.core.validate import check_params

        drawn = jax.vmap(lambda vals: mech.replace(params, vals))({k: jnp.asarray(v) for k, v in values.items()})
        try:
            check_params(mech, drawn, where="drawn params")
        except ValueError as e:
            raise ValueError(f"{nm['perturb']}: {e}; the perturbation (1 + REL U(-1, 1), "
                             f"seed {seed}) makes invalid members: choose a smaller REL (below 1 "
                             "for a parameter that must stay positive)") from None
    coords = None
    if plot:
        from jaxmbs.plot import select_coordinates

        if isinstance(plot_coords, str) and plot_coords != "all":
            plot_coords = [c.strip() for c in plot_coords.split(",") if c.strip()]
            plot_coords = [int(c) if c.lstrip("-").isdigit() else c for c in plot_coords]
        try:
            coords = select_coordinates(mech, plot_coords)
        except ValueError as e:
            raise ValueError(f"{nm['plot_coords']}: {e}") from None

    def member(vals):
        p = mech.replace(params, vals) if vals else params
        asm = jaxmbs.assemble(mech, p, q0, v0, t0)
        tr = jaxmbs.simulate(mech, p, asm.q, asm.v, (t0, t1), dt, integrator=integ[integrator],
                             stabilizer=stabs[stabilizer], save_every=save_every,
                             energy_tol=energy_tol)
        return tr._replace(status=tr.status | asm.status)

    vals = {k: jnp.asarray(v) for k, v in values.items()}
    run = jax.jit(jax.vmap(member)) if values else jax.jit(lambda _: jax.tree_util.tree_map(
        lambda x: x[None], member({})))
    t_start = time.perf_counter()
    compiled = run.lower(vals).compile()
    compile_s = time.perf_counter() - t_start
    t_start = time.perf_counter()
    tr = jax.block_until_ready(compiled(vals))
    wall_s = time.perf_counter() - t_start
    if not values and batch > 1:
        tr = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (batch,) + x.shape[1:]), tr)
    status = np.asarray(tr.status).reshape(-1)
    ok = status == 0
    energy = np.asarray(tr.energy)
    drift = np.asarray(tr.energy_drift())
    result = {
        "model": str(path), "batch": int(batch), "steps": n_steps, "dt": dt, "t0": t0, "t1": t1,
        "integrator": integrator, "stabilizer": stabilizer,
        "max_constraint_error": float(np.max(np.asarray(tr.constraint_error))),
        # (of the members that ran cleanly: a failed run's energy says nothing)
        **({"max_energy_drift": float(np.max(drift[ok]))} if ok.any() else
           {"max_energy_drift_omitted": "no member ran without a failure status, and the "
            "energy of a failed run is not reported (see failed_by_status)"}),
        "failed": int((~ok).sum()),
        "failed_by_status": dict(Counter(st.describe(int(c)) for c in status[~ok])),
        "wall_s": wall_s, "compile_s": compile_s,
        "mechanism_steps_per_s": batch * n_steps / wall_s, "out": None, "plot": None,
    }
    if out:
        if not out.endswith(".npz"):
            out += ".npz"  # (what np.savez writes)
        np.savez(out, t=np.asarray(tr.t)[0], q=np.asarray(tr.q), v=np.asarray(tr.v),
                 lam=np.asarray(tr.lam), status=status, constraint_error=np.asarray(tr.constraint_error),
                 energy=energy, coordinate_names=np.array(mech.coordinate_names()),
                 constraint_names=np.array(mech.constraint_names()),
                 **{f"param:{k}": v for k, v in values.items()})
        result["out"] = str(out)
    if plot:
        from jaxmbs.plot import plot_trajectory
        one = jax.tree_util.tree_map(lambda x: x[0], tr)
        plot_trajectory(one, mech, coords, path=plot, title=f"{path} (member 0 of {batch})")
        result["plot"] = str(plot)
    if not quiet:
        w = 24
        print(f"jaxmbs simulate {path}: {mech.n_coords} coordinates, {mech.n_constraints} constraints")
        print(f"{'members':<{w}}{batch}" + (f" (perturbed: {', '.join(perturb)}; seed {seed})" if perturb else ""))
        print(f"{'time':<{w}}{t0:g} .. {t1:g} s, dt {dt:g} s, {n_steps} steps, {integrator}, {stabilizer}")
        print(f"{'max constraint error':<{w}}{result['max_constraint_error']:.3g}")
        if "max_energy_drift" in result:
            print(f"{'max energy drift':<{w}}{result['max_energy_drift']:.3g} (relative)")
        fails = ", ".join(f"{n} {k}" for k, n in result["failed_by_status"].items()) or "none"
        print(f"{'failed members':<{w}}{result['failed']} ({fails})")
        print(f"{'wall / compile':<{w}}{wall_s:.2f} s / {compile_s:.2f} s")
        for k in ("out", "plot"):
            if result[k]:
                print(f"{k:<{w}}{result[k]}")
    return result


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: "jaxmbs simulate: error: argument --dt: ...", exit 2."""

    def error(self, message):
        message = " ".join(str(message).split())
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _number(text):
    """argparse type: a finite real number (inf and nan refused)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return x


def _integer(minimum):
    def conv(text):
        try:
            x = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if x < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {text!r}")
        return x
    conv.__name__ = "integer"
    return conv


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _join_negative_values(argv, parser):
    """'--dt -1e-3' -> '--dt=-1e-3': argparse would take '-1e-3' (or '-inf', '-.5e2') for
    an option and answer "expected one argument"; joined, the option's own check names
    the problem."""
    takes_value = set()
    stack = [parser]
    while stack:
        p = stack.pop()
        for act in p._actions:
            if isinstance(act, argparse._SubParsersAction):
                stack.extend(act.choices.values())
            elif act.option_strings and act.nargs is None:
                takes_value.update(act.option_strings)
    out, i = [], 0
    while i < len(argv):
        tok = argv[i]
        if tok in takes_value and i + 1 < len(argv) and argv[i + 1].startswith("-") \
                and _is_number(argv[i + 1]):
            out.append(f"{tok}={argv[i + 1]}")
            i += 2
        else:
            out.append(tok)
            i += 1
    return out


def build_parser() -> argparse.ArgumentParser:
    """The ``jaxmbs`` argument parser (one-line errors, exit status 2)."""
    from . import __version__

    ap = _Parser(prog="jaxmbs", description="jaxmbs: constrained planar multibody dynamics in "
                 "redundant coordinates, in pure JAX.")
    ap.add_argument("--version", action="version", version=f"jaxmbs {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    d = sub.add_parser("demo", help="Monte-Carlo inverse dynamics of a slider-crank batch",
                       description=" ".join(__doc__.split("\n\n")[2].split()))
    d.add_argument("--batch", type=_integer(1), default=4096, help="number of mechanisms (default 4096)")
    d.add_argument("--seed", type=_integer(0), default=0, help="PRNG seed, >= 0 (default 0)")
    d.add_argument("--points", type=_integer(2), default=73,
                   help="time points over one revolution, >= 2 (default 73: every 5 degrees)")
    d.add_argument("--out", default="demo.png", help="PNG to write (default demo.png)")
    d.add_argument("--no-plot", action="store_true", help="do not write the PNG")
    d.add_argument("--json", action="store_true", help="also print the summary as one JSON object (last line)")
    sm = sub.add_parser("simulate", help="simulate a model file: JSON, MJCF or URDF (batch, perturbations, npz, plot)",
                        description=" ".join(simulate_file.__doc__.split("\n\n")[0].split()))
    sm.add_argument("model", help="model file: jaxmbs JSON (jaxmbs.save_model), MJCF (.xml) or URDF (.urdf)")
    sm.add_argument("--t1", type=_number, required=True, help="end time, s")
    sm.add_argument("--t0", type=_number, default=0.0, help="start time, s (default 0)")
    sm.add_argument("--dt", type=_number, default=1e-3,
                    help="time step, s, > 0, a whole number of steps in t1 - t0 (default 1e-3)")
    sm.add_argument("--batch", type=_integer(1), default=1, help="number of members (default 1)")
    sm.add_argument("--perturb", nargs="*", default=[], metavar="KEY=REL",
                    help="scale parameter KEY by 1 + REL*U(-1,1) per member, e.g. crank.mass=0.05")
    sm.add_argument("--seed", type=_integer(0), default=0, help="PRNG seed of --perturb, >= 0 (default 0)")
    sm.add_argument("--integrator", default="rk4", choices=INTEGRATORS, help="(default rk4)")
    sm.add_argument("--stabilizer", default="projection", choices=STABILIZERS,
                    help="(default projection)")
    sm.add_argument("--save-every", type=_integer(1), default=None,
                    help="steps between saved samples; must divide the steps (default: about 500 samples)")
    sm.add_argument("--out", default=None, help="results .npz (its folder must exist)")
    sm.add_argument("--plot", default=None, help="figure of member 0's time histories (PNG, PDF, ...)")
    sm.add_argument("--plot-coords", default="all", metavar="NAMES",
                    help="coordinates drawn by --plot: 'all' (default) or comma-separated names, "
                         "e.g. crank.theta,slider.x")
    sm.add_argument("--energy-tol", type=_number, default=0.05,
                    help="relative energy-balance error above which a member fails with status "
                         "ENERGY, e.g. a spring too stiff for --dt (default 0.05)")
    sm.add_argument("--float32", action="store_true", help="run in float32 (default float64)")
    sm.add_argument("--json", action="store_true", help="also print the summary as one JSON object (last line)")
    return ap


def main(argv=None) -> int:
    """Entry point of the ``jaxmbs`` command; returns the exit status (0 ok, 2 no command,
    bad arguments or model file (the help goes to stderr when no command is given), 3 some
    members failed)."""
    ap = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = ap.parse_args(_join_negative_values(argv, ap))

    if args.command == "simulate":
        prog = "jaxmbs simulate"
        if args.plot_coords != "all" and args.plot is None:
            print(f"{prog}: error: argument --plot-coords: needs --plot", file=sys.stderr)
            return 2
        try:  # the arguments first, before JAX starts
            check_simulate_args(args.t1, args.t0, args.dt, args.batch, args.seed, args.integrator,
                                args.stabilizer, args.save_every, args.out, args.plot,
                                names=_CLI_NAMES)
            import jax

            jax.config.update("jax_enable_x64", not args.float32)
            res = simulate_file(args.model, args.t1, args.t0, args.dt, args.batch, args.perturb,
                                args.seed, args.integrator, args.stabilizer, args.save_every,
                                args.out, args.plot, plot_coords=args.plot_coords,
                                _names=_CLI_NAMES, energy_tol=args.energy_tol)
        except (ValueError, OSError) as e:
            print(f"{prog}: error: {' '.join(str(e).split())} (see {prog} --help)", file=sys.stderr)
            return 2
        if args.json:
            print(json.dumps(res))
        return 0 if res["failed"] == 0 else 3
    if args.command is None:  # (argparse's convention for a missing argument: usage, exit 2)
        ap.print_help(sys.stderr)
        print("jaxmbs: error: no command given; choose one of: demo, simulate (see jaxmbs "
              "COMMAND --help)", file=sys.stderr)
        return 2
    out = None if args.no_plot else args.out
    if out is not None:
        try:
            _output_path(out, "argument --out", "PNG")
        except ValueError as e:
            print(f"jaxmbs demo: error: {e} (see jaxmbs demo --help)", file=sys.stderr)
            return 2

    import jax

    jax.config.update("jax_enable_x64", True)
    res = demo(args.batch, args.seed, args.points, out)
    if args.json:
        print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
