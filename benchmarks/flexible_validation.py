"""Flexible-body validation (issue 20); writes section 10 of VALIDATION.md.

    python benchmarks/flexible_validation.py                  # every case, JSON + section
    python benchmarks/flexible_validation.py --no-run         # re-render from the JSON
    python benchmarks/flexible_validation.py --only beck pendulum   # rerun some rows, keep the others
    python benchmarks/flexible_validation.py --list           # the case keys

Each case reuses the functions of the examples (examples/cantilever.py,
flexible_pendulum.py, spin_up.py, beck_column.py, flexible_slider_crank.py,
ffr_slider_crank.py) and the model
builders and reference solutions of the tests (tests/test_shear_beam.py,
tests/test_flexible_material_points.py, tests/reference/), at the meshes and with the
tolerances those tests and the issue document; nothing here is new physics. The raw
numbers go to benchmarks/results/flexible_validation.json; the section between the
markers `<!-- flexible:begin -->` / `<!-- flexible:end -->` of VALIDATION.md is replaced
(benchmarks/md_sections.py; benchmarks/accuracy.py keeps it when it rewrites the file).
A row's "ok" is computed from its measured numbers and its target; a case that raises is
recorded as "failed" (ok: no), one never run as "not run" with the reason.

The default run (every case) took 608 s on the shared 2-core CPU machine (2026-11-27,
load average 3.6-4.9, float64, compilation included); the planar cantilever's four
meshes are the longest case (about 190 s).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time
import traceback

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for _p in (ROOT, os.path.join(ROOT, "examples"), os.path.join(ROOT, "tests"),
           os.path.join(ROOT, "tests", "reference"), os.path.join(ROOT, "benchmarks")):
    if _p not in sys.path:
        sys.path.insert(0, _p)

import md_sections  # noqa: E402
from elastica import beta_L, elastica_tip  # noqa: E402
from timoshenko import timoshenko_cantilever_omegas  # noqa: E402

import jaxmbs  # noqa: E402

BEGIN, END = md_sections.SECTIONS[1]
JSON_PATH = os.path.join(ROOT, "benchmarks", "results", "flexible_validation.json")
EB = "Euler-Bernoulli beta_n L (tests/reference/elastica.py)"
ELASTICA = "the elastica (tests/reference/elastica.py, SciPy shooting)"


def _row(problem, mesh, method, accuracy, energy, target, ok, raw):
    return dict(problem=problem, mesh=mesh, method=method, accuracy=accuracy, energy=energy,
                target=target, ok=bool(ok), raw=raw)


def _tip_errors(vals, alphas):
    """|tip value - elastica| (len(alphas), 3): deflection, shortening (per L), rotation."""
    got = np.array([vals["tip_vertical"], vals["tip_shortening"], vals["tip_rotation"]]).T
    return np.abs(got - np.array([elastica_tip(a) for a in alphas]))


# ----------------------------------------------------------------------------- cases
def cantilever_statics():
    """Planar ANCF cantilever, dead tip load alpha in {1, 2, 5, 10}, 4 / 8 / 16 / 32 elements
    (examples/cantilever.py `statics`); the documented mesh is 32 elements (tests/test_ancf.py)."""
    import cantilever as C

    meshes, doc = (4, 8, 16, 32), 32
    errs = {}
    for n in meshes:
        errs[n] = _tip_errors(C.statics(n), C.ALPHAS).max(axis=1).tolist()  # per alpha
    e = np.asarray(errs[doc])
    acc = (f"max tip error (deflection, shortening per L; rotation rad) {e.max():.1e} at {doc} el. "
           f"(alpha = 1, 2, 5, 10: {', '.join(f'{x:.1e}' for x in e)}); "
           f"16 el. {max(errs[16]):.1e}, 4 el. {max(errs[4]):.1e} (convergence table below) vs {ELASTICA}")
    return _row("Planar ANCF cantilever, dead tip load, alpha = P L^2/EI = 1, 2, 5, 10",
                f"planar ANCF (Euler-Bernoulli), {doc} el. (also 4, 8, 16)",
                "statics: jaxmbs.equilibrium, load stepped (2 substeps per alpha)", acc, "—",
                f"< 1e-4 at {doc} el. (issue 20)", e.max() < 1e-4,
                dict(alphas=list(C.ALPHAS), meshes=list(meshes), max_error=errs, documented_mesh=doc))


def cantilever_frequencies():
    """First four frequencies of the straight cantilever, 16 elements (tests/test_ancf.py)."""
    import cantilever as C

    out = {}
    for n in (8, 16):
        f = np.asarray(C.frequencies(n))
        ref = np.asarray(beta_L(4)) ** 2 / (2 * np.pi) * np.sqrt(C.EI / (C.RHOA * C.L ** 4))
        out[n] = (f / ref - 1).tolist()
    r = np.abs(out[16])
    return _row("Planar ANCF cantilever, first four natural frequencies", "planar ANCF, 16 el. (also 8)",
                "jaxmbs.linearize + modes (constrained, unloaded)",
                f"max rel. error {r.max():.1e} at 16 el. (modes 1-4: {', '.join(f'{x:.1e}' for x in r)}); "
                f"8 el. {np.abs(out[8]).max():.1e} vs {EB}", "—", "< 1e-3 relative at 16 el. (issue 20)",
                r.max() < 1e-3, dict(rel_error=out))


def pendulum():
    """Berzeri-Shabana flexible pendulum, 4 elements, 1 s, RK4 dt 5e-4 + projection."""
    import flexible_pendulum as FP

    r = FP.run(4, 1.0, 5e-4)
    return _row("Flexible pendulum (Berzeri-Shabana), released horizontally, 1 s",
                "planar ANCF, 4 el.", "RK4(dt=5e-4) + Projection()",
                f"energy balance (kinetic + gravity + strain; no external reference); status {r['status']}; "
                f"tip at t = 1 s ({r['tip_x'][-1]:.4f}, {r['tip_y'][-1]:.4f}) m",
                f"{r['energy_drift']:.1e} (of max kinetic)",
                "energy drift < 1e-6 of max kinetic energy (tests/test_ancf.py), status 0",
                r["energy_drift"] < 1e-6 and r["status"] == 0,
                {k: r[k] for k in ("elements", "dt", "energy_drift", "status")}
                | dict(tip_final=[r["tip_x"][-1], r["tip_y"][-1]]))


def spin_up():
    """Simo-Vu-Quoc spin-up beam, 4 elements, generalized-alpha dt 0.01 s, 20 s
    (tests/test_flexible_spin_up.py)."""
    import spin_up as SU

    r = SU.run(elements=4, t1=20.0, dt=0.01, save_every=10)
    t, w, qs = (np.asarray(r[k]) for k in ("t", "tip_deflection", "quasi_static"))
    up = t < SU.T_S
    peak_ref = float(qs[up].min())
    peak_err = abs(r["peak_deflection"] - peak_ref) / abs(peak_ref)
    hist = float(np.max(np.abs(w[up] - qs[up]))) / abs(peak_ref)
    after = r["max_after"] / abs(r["peak_deflection"])
    ok = (r["status"] == 0 and peak_err <= 0.05 and hist <= 0.05 and after <= 0.05
          and float(np.max(np.abs(w))) < 0.6)
    return _row("Spin-up beam (Simo-Vu-Quoc), w_s = 6 rad/s, T_s = 15 s, 20 s",
                "planar ANCF, 4 el.", "GeneralizedAlpha(rho_inf=0.8), dt = 0.01, prescribed hub angle",
                f"peak tip deflection {r['peak_deflection']:.4f} m at {r['t_peak']:.2f} s vs {peak_ref:.4f} m "
                f"(rel. {peak_err:.1e}); history during spin-up within {hist:.1e} of the peak; max |w| after "
                f"T_s + 1 s {r['max_after']:.4f} m ({after:.1e} of the peak), bounded (max |w| "
                f"{np.max(np.abs(w)):.4f} m) vs the quasi-static rotating-beam model (spin_up.quasi_static_deflection, NumPy)",
                "— (driven hub)", "peak and history within 5 %, |w| after T_s + 1 s <= 5 % of the peak "
                "(tests/test_flexible_spin_up.py), status 0", ok,
                dict(peak=r["peak_deflection"], t_peak=r["t_peak"], peak_reference=peak_ref, peak_rel_error=peak_err,
                     history_rel=hist, max_after=r["max_after"], after_rel=after, status=r["status"]))


def beck():
    """Beck's column: flutter load (follower) and Euler load (dead), 8 and 16 elements
    (examples/beck_column.py `analyse`; tests/test_flexible_follower.py)."""
    import beck_column as BC

    res = {n: BC.analyse(n) for n in (8, 16)}
    ef = {n: r["P_cr"] / BC.P_CR_EXACT - 1 for n, r in res.items()}
    ed = {n: r["euler_dead_load"] / BC.EULER_EXACT - 1 for n, r in res.items()}
    flutter = all(r["flutter_frequency"] > 1.0 for r in res.values())   # a complex pair
    diverge = all(r["dead_onset_imag"] < 1e-6 for r in res.values())    # a real eigenvalue
    ok = all(abs(x) < 5e-3 for x in ef.values()) and all(abs(x) < 1e-3 for x in ed.values()) and flutter and diverge
    r8, r16 = res[8], res[16]
    return _row("Beck's column: follower tip force (flutter), dead load (buckling)",
                "planar ANCF, 8 el. (also 16)", "linearize about the compressed equilibrium; bisection on max Re(lambda)",
                f"flutter P_cr {r8['P_cr']:.4f} EI/L^2 ({ef[8]:+.1e}; 16 el. {r16['P_cr']:.4f}, {ef[16]:+.1e}), "
                f"onset frequency {r8['flutter_frequency']:.2f} rad/s vs Beck's 20.051; dead load divergence "
                f"{r8['euler_dead_load']:.5f} ({ed[8]:+.1e}; 16 el. {ed[16]:+.1e}, Im lambda "
                f"{r8['dead_onset_imag']:.0e}) vs Euler's pi^2/4",
                "—", "flutter within 0.5 %, Euler within 0.1 % (tests/test_flexible_follower.py); complex pair / real root",
                ok, dict(results={str(k): v for k, v in res.items()}, flutter_rel={str(k): v for k, v in ef.items()},
                         euler_rel={str(k): v for k, v in ed.items()}))


def shear_linear():
    """Linear Timoshenko tip deflection, thick (L/h = 5) and slender, 32 elements
    (tests/test_shear_beam.py: K u = f of the assembled stiffness, node 0 clamped)."""
    import test_shear_beam as T

    n, out = 32, {}
    for slender in (5.0, 100.0, 1000.0):
        s = T._section(slender)
        EI, kGA = T.E_MOD * s["I"], T.KS * T.G_MOD * s["A"]
        P = 1e-4 * EI / T.L_BEAM ** 2
        K, _ = T._clamped_K_M(n, s)
        f = np.zeros(K.shape[0])
        f[-2] = P
        w = np.linalg.solve(K, f)[-2]
        w_T = P * T.L_BEAM ** 3 / (3 * EI) + P * T.L_BEAM / kGA
        w_n = w_T - P * T.L_BEAM ** 3 / (12 * EI * n * n)
        out[slender] = dict(vs_timoshenko=w / w_T - 1, vs_discrete=w / w_n - 1,
                            shear_share=P * T.L_BEAM / kGA / w_T)
    a = max(abs(v["vs_timoshenko"]) for v in out.values())
    b = max(abs(v["vs_discrete"]) for v in out.values())
    vt = ", ".join(f"{v['vs_timoshenko']:+.2e}" for v in out.values())
    return _row("Shear-deformable beam (add_shear_beam), linear tip deflection, L/h = 5, 100, 1000",
                "Simo-Reissner, linear el., reduced integration, 32 el.",
                "linear statics K u = f (Hessian of the strain energy at the straight state)",
                f"rel. error vs Timoshenko P L^3/(3EI) + P L/(kGA): {vt} "
                f"(L/h = 5, 100, 1000; shear part {100 * out[5.0]['shear_share']:.1f} % at L/h = 5; no locking); "
                f"vs the element's closed form w_T - P L^3/(12 EI n^2): {b:.1e}",
                "—", "< 3e-4 vs Timoshenko, < 1e-9 vs the closed form (tests/test_shear_beam.py)",
                a < 3e-4 and b < 1e-9, dict(elements=n, by_slenderness={str(k): v for k, v in out.items()}))


def shear_elastica():
    """Shear beam, large deflection alpha = 1, 2, 32 elements (tests/test_shear_beam.py)."""
    import test_shear_beam as T

    sec = dict(E=1.0e9, A=1.0e-3, I=1.0e-9, rho=1.0e3, nu=0.3)
    mech, params, q, _, tip = T._cantilever(32, sec)
    i = mech.coordinate_index(f"{tip}.x")
    a_prev, errs = 0.0, []
    for a in (1.0, 2.0):
        for s in np.linspace(a_prev, a, 3)[1:]:
            p = mech.replace(params, {"tip.force": [0.0, s]})  # E I = 1 N m^2, L = 1 m
            q = jaxmbs.equilibrium(mech, p, q, tol=1e-8).q
        a_prev = a
        got = np.array([q[i + 1], T.L_BEAM - q[i], q[i + 2]])
        errs.append(float(np.abs(got - np.array(elastica_tip(a))).max()))
    return _row("Shear-deformable beam, large deflection, alpha = 1, 2",
                "Simo-Reissner, 32 el. (EA/EI = 1e6, kGA/EI = 3.2e5 per m^2)",
                "statics: jaxmbs.equilibrium, load stepped",
                f"max tip error {errs[0]:.1e} (alpha = 1), {errs[1]:.1e} (alpha = 2) vs {ELASTICA}",
                "—", "< 1e-4 (tests/test_shear_beam.py)", max(errs) < 1e-4, dict(elements=32, max_error=errs))


def shear_frequencies():
    """Shear beam frequencies, 64 elements, K and M (tests/test_shear_beam.py): thick vs the
    Timoshenko frequency equation, slender vs Euler-Bernoulli."""
    import test_shear_beam as T

    n, bounds = 64, np.array([5e-5, 1e-3, 2.5e-3, 5e-3])
    s = T._section(1000.0)
    K, M = T._clamped_K_M(n, s)
    ref = np.asarray(beta_L(4)) ** 2 / T.L_BEAM ** 2 * np.sqrt(T.E_MOD * s["I"] / (T.RHO * s["A"]))
    slender = T._bending_omegas(K, M, 4) / ref - 1
    s = T._section(5.0)
    K, M = T._clamped_K_M(n, s)
    ref_T = timoshenko_cantilever_omegas(4, T.L_BEAM, T.E_MOD * s["I"], T.KS * T.G_MOD * s["A"],
                                         T.RHO * s["A"], T.RHO * s["I"], grid=1500)
    thick = T._bending_omegas(K, M, 4) / ref_T - 1
    ok = bool(np.all(np.abs(thick) < bounds) and np.all(np.abs(slender) < bounds))
    return _row("Shear-deformable beam, first four bending frequencies, thick (L/h = 5) and slender (1000)",
                "Simo-Reissner, 64 el.", "generalized eigenproblem of the assembled K (Hessian of U) and M",
                f"thick: rel. error {', '.join(f'{x:.1e}' for x in np.abs(thick))} vs the Timoshenko frequency "
                f"equation (tests/reference/timoshenko.py); slender: {', '.join(f'{x:.1e}' for x in np.abs(slender))} vs {EB}",
                "—", "modes 1-4 < 5e-5, 1e-3, 2.5e-3, 5e-3 (tests/test_shear_beam.py)", ok,
                dict(elements=n, thick_rel=thick.tolist(), slender_rel=slender.tolist(), bounds=bounds.tolist()))


def shear_model():
    """The thick shear cantilever through the model, 32 elements: equilibrium vs K u = f and
    linearize + modes vs the Timoshenko frequency equation (the slow test of test_shear_beam.py)."""
    import test_shear_beam as T

    n = 32
    s = T._section(5.0)
    mech, params, q0, _, tip = T._cantilever(n, s)
    K, M = T._clamped_K_M(n, s)
    P = 1e-4 * T.E_MOD * s["I"] / T.L_BEAM ** 2
    f = np.zeros(K.shape[0])
    f[-2] = P
    w_lin = np.linalg.solve(K, f)[-2]
    q = jaxmbs.equilibrium(mech, mech.replace(params, {"tip.force": [0.0, P]}), q0, tol=1e-8).q
    stat = float(q[mech.coordinate_index(f"{tip}.y")]) / w_lin - 1
    EI, kGA = T.E_MOD * s["I"], T.KS * T.G_MOD * s["A"]
    w_T = P * T.L_BEAM ** 3 / (3 * EI) + P * T.L_BEAM / kGA
    stat_T = float(q[mech.coordinate_index(f"{tip}.y")]) / w_T - 1
    lin = jaxmbs.linearize(mech, params, q0, jnp.zeros(mech.n_vel))
    w = np.sort(np.asarray(jaxmbs.modes(lin).frequencies))
    w = w[w > 1e-6][::2]
    from scipy.linalg import eigh
    w_all = np.sqrt(eigh(K, M, eigvals_only=True))
    km = float(np.max(np.abs(w[:8] / w_all[:8] - 1)))
    ref_T = timoshenko_cantilever_omegas(4, T.L_BEAM, EI, kGA, T.RHO * s["A"], T.RHO * s["I"], grid=1500)
    bend = np.abs(T._bending_omegas(K, M, 4) / ref_T - 1)
    bounds = np.array([2e-4, 3e-3, 7e-3, 1.2e-2])
    ok = abs(stat) < 1e-6 and abs(stat_T) < 3e-4 and km < 1e-8 and bool(np.all(bend < bounds))
    return _row("Shear-deformable thick cantilever (L/h = 5) through the model: statics and modes",
                "Simo-Reissner, 32 el., add_node_weld + add_node_load",
                "jaxmbs.equilibrium (P L^2/EI = 1e-4); jaxmbs.linearize + modes",
                f"tip deflection {stat_T:+.2e} vs Timoshenko ({stat:+.1e} vs the linear K u = f); frequencies = K, M "
                f"eigenproblem to {km:.0e}, bending modes 1-4 {', '.join(f'{x:.1e}' for x in bend)} vs the Timoshenko "
                "frequency equation (tests/reference/timoshenko.py)", "—",
                "statics < 3e-4 vs Timoshenko and 1e-6 vs K u = f; modes 1-4 < 2e-4, 3e-3, 7e-3, 1.2e-2 (tests/test_shear_beam.py)",
                ok, dict(elements=n, vs_linear=stat, vs_timoshenko=stat_T, vs_KM=km, bending_rel=bend.tolist()))


def cable3d_statics():
    """Spatial ANCF cable cantilever, skew load alpha = 1, 32 elements (tests/test_ancf3d.py)."""
    import cantilever as C

    mech, params, q0, tip = C.build(32, spatial=True)
    i = mech.coordinate_index(f"{tip}.x")
    ang = np.deg2rad(35.0)
    Fo = C.EI / C.L ** 2 * np.array([0.0, np.cos(ang), -np.sin(ang)])
    p = mech.replace(params, {"tip_load.force": list(Fo)})
    eq = jaxmbs.equilibrium(mech, p, q0, tol=1e-8)
    x = np.asarray(eq.q)
    r, s = x[i:i + 3], x[i + 3:i + 6]
    nrm = Fo / np.linalg.norm(Fo)
    o = np.cross([1.0, 0.0, 0.0], nrm)
    vals = np.array([r @ nrm / C.L, (C.L - r[0]) / C.L, np.arctan2(s @ nrm, s[0])])
    err = np.abs(vals - np.asarray(elastica_tip(1.0)))
    out_of_plane = float(max(abs(r @ o), abs(s @ o)))
    return _row("Spatial ANCF cable cantilever, dead tip load alpha = 1 along a skew direction (35 deg in y-z)",
                "spatial ANCF cable, 32 el.", "statics: jaxmbs.equilibrium",
                f"max tip error {err.max():.1e} (deflection {err[0]:.1e}, shortening {err[1]:.1e}, rotation "
                f"{err[2]:.1e}) vs {ELASTICA} in the load plane; out of plane {out_of_plane:.0e}",
                "—", "< 1e-6 (tests/test_ancf3d.py; issue 20: 1e-4)", err.max() < 1e-6 and out_of_plane < 1e-12,
                dict(elements=32, error=err.tolist(), out_of_plane=out_of_plane))


def cable3d_frequencies():
    """Spatial cable cantilever frequencies, 16 elements (tests/test_ancf3d.py)."""
    import cantilever as C

    mech, params, q0, _ = C.build(16, spatial=True)
    lin = jaxmbs.linearize(mech, params, q0, jnp.zeros(mech.n_vel))
    w = np.sort(np.asarray(jaxmbs.modes(lin).frequencies))
    w = w[w > 1e-6][::2]
    f = w[:6] / (2 * np.pi)
    ref = np.repeat(np.asarray(beta_L(3)) ** 2 / (2 * np.pi) * np.sqrt(C.EI / (C.RHOA * C.L ** 4)), 2)
    rel = np.abs(f / ref - 1)
    pair = float(np.max(np.abs(f[::2] / f[1::2] - 1)))
    return _row("Spatial ANCF cable cantilever, first six frequencies (three bending pairs)",
                "spatial ANCF cable, 16 el.", "jaxmbs.linearize + modes",
                f"max rel. error {rel.max():.1e} (pairs 1-3: {', '.join(f'{x:.1e}' for x in rel[::2])}) vs {EB}; "
                f"pairs degenerate to {pair:.0e}", "—", "< 1e-4 relative (tests/test_ancf3d.py; issue 20: 1e-3)",
                rel.max() < 1e-4 and pair < 1e-9, dict(elements=16, rel_error=rel.tolist(), pair_split=pair))


def pin_points():
    """A beam hanging from a material point of a cantilever, dead load between nodes
    (tests/test_flexible_material_points.py `_hanging`), statics."""
    import test_flexible_material_points as T

    m, A, a, b, F = T._hanging(2)
    mech, params, q0, v0 = m.build()
    res = jaxmbs.equilibrium(mech, params, q0, tol=1e-9)
    qe = np.asarray(res.q)
    rhoA, EI = T.SEC["rho"] * T.SEC["A"], T.SEC["E"] * T.SEC["I"]
    P, qd, L = 0.4 * rhoA * 9.81, rhoA * 9.81, 1.0
    x = np.linspace(0, L, 5)
    w = T._point_deflection(x, P, a, EI) + T._point_deflection(x, F, b, EI) \
        + qd * x ** 2 * (6 * L ** 2 - 4 * L * x + x ** 2) / (24 * EI)
    y = np.array([qe[mech.coordinate_index(f"{nd}.y")] for nd in A])
    err = float(np.max(np.abs(-y - w)) / w.max())
    R = np.asarray(jaxmbs.reactions(mech, params, res.q, res.lam)["pin"]["force"])[:2]
    rerr = float(np.max(np.abs(R - [0.0, P])) / P)
    return _row("Pin between material points of two beams (B hangs from A at xi = 0.2), dead load between nodes",
                "planar ANCF, A 4 el., B 2 el.", "statics: jaxmbs.equilibrium",
                f"A's nodal deflections: max error {err:.1e} of the max deflection vs Euler-Bernoulli superposition "
                f"(point loads + own weight, closed form); pin reaction vs B's weight {rerr:.0e}",
                "—", "deflections < 1e-6 relative (geometric nonlinearity), reaction < 1e-9 (tests/test_flexible_material_points.py)",
                err < 1e-6 and rerr < 1e-9, dict(deflection_rel=err, reaction_rel=rerr, max_deflection=float(w.max())))


def bead_incline():
    """A bead sliding on a stiff inclined rail (clamped top, pinned bottom, 30 deg, 4
    elements), 0.4 s, against the rigid incline (tests/test_flexible_material_points.py)."""
    import test_flexible_material_points as T

    out = {}
    for E in (1e8, 1e9):
        m, _, al = T._bead_on_rail(E=E, elements=4)
        mech, params, q0, v0 = m.build()
        dt = 1e-4 if E < 5e8 else 4e-5
        tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, 0.4), dt, save_every=int(round(0.01 / dt)))
        s = np.asarray(tr.q[:, mech.coordinate_index("slide.s")])
        tt = np.asarray(tr.t)
        out[E] = dict(dt=dt, error=float(np.max(np.abs(s - (0.1 + 0.5 * 9.81 * np.sin(al) * tt ** 2)))),
                      energy_error=float(tr.energy_error()), status=int(np.max(np.asarray(tr.status))),
                      constraint_drift=float(np.max(np.asarray(tr.constraint_error))))
    ok = all(v["status"] == 0 and v["error"] < 8e-3 * (1e8 / E) and v["energy_error"] < 1e-6 for E, v in out.items())
    e8, e9 = out[1e8], out[1e9]
    return _row("Bead sliding on a stiff inclined rail (add_beam_slider), 30 deg, 0.4 s",
                "planar ANCF rail, 4 el., E = 1e8 and 1e9 Pa", "RK4(dt=1e-4 / 4e-5) + Projection()",
                f"max error of s(t) {e8['error']:.1e} m (E = 1e8), {e9['error']:.1e} m (1e9; ~1/E: the rail's "
                f"vibration) vs the rigid incline s0 + g sin(alpha) t^2/2; constraint drift "
                f"{max(e8['constraint_drift'], e9['constraint_drift']):.0e}",
                f"{e8['energy_error']:.1e}, {e9['energy_error']:.1e} (energy balance)",
                "s error < 8e-3 (1e8/E) m, energy balance < 1e-6 (tests/test_flexible_material_points.py), status 0",
                ok, {f"{E:g}": v for E, v in out.items()})


def particle_slider():
    """A particle sliding along a flexible cantilever, 0.6 s, RK4 dt 1e-4
    (tests/test_flexible_material_points.py, the particle case)."""
    m = jaxmbs.Model(gravity=(0.0, -9.81))
    nodes = m.add_beam("beam", (0, 0), (1, 0), elements=4, section=dict(E=3.3e8, rho=1000.0, A=1e-3, I=1e-7))
    m.add_node_weld("clamp", nodes[0])
    m.add_particle("mass", 0.5, (0.1, 0.0), velocity=(1.0, 0.0))
    m.add_beam_slider("slide", "beam", "mass")
    mech, params, q0, v0 = m.build()
    tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, 0.6), 1e-4, save_every=200)
    s = np.asarray(tr.q[:, mech.coordinate_index("slide.s")])
    tip = float(np.min(np.asarray(tr.q[:, mech.coordinate_index(f"{nodes[-1]}.y")])))
    ee, status = float(tr.energy_error()), int(np.max(np.asarray(tr.status)))
    drift = float(np.max(np.asarray(tr.constraint_error)))
    ok = status == 0 and ee < 1e-5 and s[-1] > 0.5 and s.max() < 1.0 and tip < -0.01
    return _row("Particle (0.5 kg) sliding frictionless along a flexible cantilever, 0.6 s",
                "planar ANCF, 4 el. (EI = 33 N m^2)", "RK4(dt=1e-4) + Projection()",
                f"energy balance (no external reference); the beam bends (tip down to {tip * 100:.1f} cm), particle at "
                f"s = {s[-1]:.2f} m at the end; constraint drift {drift:.0e}; status {status}",
                f"{ee:.1e} (energy balance)", "energy balance < 1e-5 (tests/test_flexible_material_points.py), status 0",
                ok, dict(energy_error=ee, status=status, s_end=float(s[-1]), tip_min=tip, constraint_drift=drift))


def slider_crank():
    """The flexible slider-crank of examples/flexible_slider_crank.py (4 elements, 2
    revolutions, generalized-alpha dt 1e-4): midpoint deflection and energy / constraint
    figures; no external reference (the quasi-static estimate is an order of magnitude)."""
    import flexible_slider_crank as FSC

    mech, params, q0, v0, nodes = FSC.build(4)
    tr = FSC.simulate(mech, params, q0, v0, revolutions=2.0, dt=1e-4, save_every=5)
    t = np.asarray(tr.t)
    last = t >= t[-1] - 2 * np.pi / FSC.OMEGA - 1e-12
    defl = np.asarray(FSC.midpoint_deflection(mech, tr.q, nodes))
    qs = FSC.quasi_static_deflection(FSC.OMEGA * t)
    peak, peak_qs = float(np.max(np.abs(defl[last]))), float(np.max(np.abs(qs[last])))
    ratio = peak / peak_qs
    x = np.asarray(tr.q[:, mech.coordinate_index("slider.x")])
    slider = float(np.max(np.abs(x - FSC.rigid_kinematics(FSC.OMEGA * t)[0])))
    drift = float(np.max(np.asarray(tr.constraint_error)))
    ee, status = float(tr.energy_error()), int(np.max(np.asarray(tr.status)))
    ok = status == 0 and 0.8 < ratio < 1.5
    return _row("Flexible slider-crank (steel rod, crank driven at 150 rad/s), 2 revolutions",
                "planar ANCF rod, 4 el.", "GeneralizedAlpha(rho_inf=0.8), dt = 1e-4, NoStabilization()",
                f"no external reference: peak midpoint deflection (last revolution) {peak * 1e3:.3f} mm, "
                f"{ratio:.2f} x the quasi-static estimate; slider vs rigid kinematics {slider:.1e} m; "
                f"constraint drift {drift:.0e}; status {status}",
                f"{ee:.1e} (energy balance incl. drive work)",
                "status 0, peak 0.8-1.5 x quasi-static (tests/test_flexible_slider_crank.py bound)", ok,
                dict(peak_deflection=peak, peak_quasi_static=peak_qs, ratio=ratio, slider_vs_rigid=slider,
                     constraint_drift=drift, energy_error=ee, status=status))


def ffr_cantilever():
    """FFR cantilever (jaxmbs.flexible.ffr, 8-element Euler-Bernoulli model): the first
    three frequencies (clamped modes, 4) against beta_n L, and the tip deflection and
    rotation under a small dead tip load (Craig-Bampton, 4 modes) against P L^3 / 3 EI and
    P L^2 / 2 EI (tests/test_ffr.py)."""
    import test_ffr as T

    from jaxmbs.flexible import ffr

    rel = {}
    for basis, modes in (("clamped", 4), ("craig_bampton", 8)):
        _, (mech, params, q0, v0) = T._cantilever(basis, modes)
        f = np.unique(np.round(np.asarray(jaxmbs.modes(jaxmbs.linearize(mech, params, q0, v0)).frequencies), 9))
        w = T.BETA_L ** 2 / T.L ** 2 * np.sqrt(T.EI / T.RHO_A)
        rel[basis] = (f[f > 0][:3] / w - 1).tolist()
    P = 1e-4
    m, (mech, params, q0, v0) = T._cantilever("craig_bampton", 4, elements=4, load=-P)
    q = np.asarray(jaxmbs.equilibrium(mech, params, q0).q)
    d = m.ffr_data("b")
    N, slope, _ = ffr.beam_rows([T.L], T.L, d["elements"])
    i = mech.coordinate_index("b.eta1")
    tip = float(N[0, 1] @ d["Phi"] @ q[i: i + 4]) / (-P * T.L ** 3 / (3 * T.EI)) - 1
    rot = float(slope[0] @ d["Phi"] @ q[i: i + 4]) / (-P * T.L ** 2 / (2 * T.EI)) - 1
    worst = max(np.abs(rel["clamped"]).max(), np.abs(rel["craig_bampton"]).max())
    return _row("FFR (modal) cantilever: frequencies and tip statics", "FFR, 8-el. FE model; 4 clamped / "
                "8 Craig-Bampton modes; statics 4 el., 4 CB modes",
                "jaxmbs.linearize + modes; jaxmbs.equilibrium",
                f"modes 1-3 rel. error clamped {', '.join(f'{x:.1e}' for x in np.abs(rel['clamped']))}, "
                f"Craig-Bampton {', '.join(f'{x:.1e}' for x in np.abs(rel['craig_bampton']))} vs {EB}; "
                f"tip deflection {abs(tip):.0e}, rotation {abs(rot):.0e} vs P L^3/3EI, P L^2/2EI",
                "—", "< 1e-3 frequencies, < 1e-9 statics (tests/test_ffr.py)",
                worst < 1e-3 and abs(tip) < 1e-9 and abs(rot) < 1e-9,
                dict(rel_error=rel, tip_rel_error=tip, rotation_rel_error=rot))


def ffr_slider_crank():
    """examples/ffr_slider_crank.py: the FFR rod (2 pinned modes, RK4 dt 5e-5) against the
    ANCF rod (4 elements, generalized-alpha rho_inf = 1, dt 1e-4) over one revolution."""
    import ffr_slider_crank as X

    model, mech, params, q0, v0 = X.build(2)
    t1, dt = X.grid(1.0, 5e-5, 10)
    tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, t1), dt, save_every=10)
    d_ffr = np.asarray(X.midpoint_deflection(model, mech, tr.q))
    amech, aparams, aq0, av0, nodes = X.fsc.build(4)
    _, adt = X.grid(1.0, 1e-4, 5)
    atr = jaxmbs.simulate(amech, aparams, aq0, av0, (0.0, t1), adt, save_every=5,
                          integrator=jaxmbs.GeneralizedAlpha(rho_inf=1.0))
    d_ancf = np.asarray(X.fsc.midpoint_deflection(amech, atr.q, nodes))
    diff = float(np.max(np.abs(np.interp(np.asarray(atr.t), np.asarray(tr.t), d_ffr) - d_ancf)))
    pf, pa = float(np.max(np.abs(d_ffr))), float(np.max(np.abs(d_ancf)))
    ee, status = float(tr.energy_error()), int(np.max(np.asarray(tr.status)))
    return _row("Flexible slider-crank, FFR rod against the ANCF rod, 1 revolution",
                f"FFR rod, 2 pinned modes ({mech.n_coords} coordinates) vs ANCF 4 el. ({amech.n_coords})",
                "RK4 dt = 5e-5 (FFR); GeneralizedAlpha(rho_inf=1), dt = 1e-4 (ANCF)",
                f"peak midpoint deflection {pf * 1e3:.3f} mm vs {pa * 1e3:.3f} mm ({pf / pa - 1:+.1%}); "
                f"max difference {diff * 1e3:.3f} mm ({diff / pa:.0%} of the peak); status {status}",
                f"{ee:.1e} (FFR, incl. drive work)",
                "status 0, peaks within 10 % (a linear-elastic frame model against a geometrically "
                "exact one; no test)", status == 0 and abs(pf / pa - 1) < 0.1,
                dict(peak_ffr=pf, peak_ancf=pa, max_difference=diff, energy_error=ee, status=status))


def ffr_spin_up():
    """The spin-up beam (examples/spin_up.py's data and profile) as an FFR body (4 clamped
    modes of an 8-element model, drive_angle on its reference frame = the root): a linear
    elastic frame model lacks the centrifugal stiffening, and w_s = 6 rad/s lies above
    the first bending frequency (3.80 rad/s), so the tip deflection must diverge after the
    spin-up (the known failure of the linear model that the ANCF row does not show)."""
    import spin_up as SU

    from jaxmbs.flexible import ffr

    m = jaxmbs.Model(gravity=(0.0, 0.0))
    m.add_ffr_beam("beam", (0.0, 0.0), (SU.L, 0.0), section=SU.SECTION, elements=8, modes=4)
    m.add_revolute("O", "ground", "beam", at=(0.0, 0.0))
    m.drive_angle("spin", "beam", lambda t: SU.theta(t))
    mech, params, q0, v0 = m.build()
    tr = jaxmbs.simulate(mech, params, q0, v0, (0.0, 20.0), 0.005, save_every=20, energy_tol=None)
    d = m.ffr_data("beam")
    N, _, _ = ffr.beam_rows([SU.L], SU.L, d["elements"])
    i = mech.coordinate_index("beam.eta1")
    t = np.asarray(tr.t)
    w = np.asarray(tr.q[:, i: i + 4]) @ (N[0, 1] @ d["Phi"])
    good = np.isfinite(w)
    spin = t <= SU.T_S
    peak_spin = float(np.min(w[spin & good]))
    big = np.nonzero(good & (np.abs(w) > SU.L))[0]
    t_big = float(t[big[0]]) if big.size else None
    ok = t_big is not None and t_big > 5.0
    return _row("Spin-up beam as an FFR body (linear elastic in its frame), w_s = 6 rad/s",
                "FFR, 4 clamped modes of an 8-el. model", "RK4(dt=5e-3) + Projection(), drive_angle",
                f"expected failure of the linear model: min w during the first 5 s {np.min(w[(t <= 5) & good]):.3f} m "
                f"(ANCF row: peak -0.573 m at 6.8 s, bounded); |w| exceeds L = 10 m at t = "
                f"{t_big if t_big is None else round(t_big, 2)} s, once w(t) > omega_1 (min w by T_s "
                f"{peak_spin:.2g} m, no status flag: the rows stay satisfied)",
                "—", "diverges (no centrifugal stiffening; w_s > omega_1 = 3.80 rad/s)", ok,
                dict(t_exceeds_L=t_big, peak_during_spin_up=peak_spin,
                     w_first_5s_min=float(np.min(w[(t <= 5) & good]))))


CASES = {"cantilever_statics": cantilever_statics, "cantilever_frequencies": cantilever_frequencies,
         "pendulum": pendulum, "spin_up": spin_up, "beck": beck, "shear_linear": shear_linear,
         "shear_elastica": shear_elastica, "shear_frequencies": shear_frequencies, "shear_model": shear_model,
         "cable3d_statics": cable3d_statics, "cable3d_frequencies": cable3d_frequencies,
         "pin_points": pin_points, "bead_incline": bead_incline, "particle_slider": particle_slider,
         "slider_crank": slider_crank, "ffr_cantilever": ffr_cantilever,
         "ffr_slider_crank": ffr_slider_crank, "ffr_spin_up": ffr_spin_up}


# ----------------------------------------------------------------------------- output
def machine():
    return (f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, jax {jax.__version__}, "
            f"device {jax.devices()[0]}")


def markdown(res):
    L = [BEGIN, "## 10. Flexible bodies (issue 20)", "",
         "Generated by `python benchmarks/flexible_validation.py` (raw numbers: "
         "`benchmarks/results/flexible_validation.json`; `--no-run` re-renders, `--only KEY ...` reruns rows). "
         "Each case reuses the example's functions or the test's model builder, at the mesh and with the "
         "tolerance the tests and issue 20 document; ok is computed from the measured numbers and the target. "
         f"Machine: {res.get('machine', '?')}; float64; wall times include JIT compilation, the machine "
         "shared with other jobs (load average at the start of the run: "
         f"{res.get('load', '?')}).", "",
         "| problem | element / mesh | integrator or statics | accuracy vs reference | energy drift | wall | target | ok |",
         "|---|---|---|---|---|---|---|---|"]
    def line(*cells):
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    for key in CASES:
        r = res["rows"].get(key)
        if r is None:
            L.append(line(key, "—", "—", f"not run: not in the JSON (run with `--only {key}`)", "—", "—", "—", "no"))
        elif r.get("error"):
            L.append(line(r.get("problem", key), "—", "—", f"failed: {r['error']}", "—", f"{r['wall_s']:.0f} s",
                          "—", "no"))
        else:
            L.append(line(r["problem"], r["mesh"], r["method"], r["accuracy"], r["energy"], f"{r['wall_s']:.0f} s",
                          r["target"], "yes" if r["ok"] else "no"))
    L += ["", "Energy drift: for the pendulum max |E(t) - E(0)| / max kinetic energy (E = kinetic + gravity + "
          "strain energy, examples/flexible_pendulum.py); elsewhere `Trajectory.energy_error()`, the "
          "energy-balance error that `simulate`'s ENERGY check tests (max |E - E(0)| over the energy "
          "exchanged, E = kinetic + potential - work of drivers and constraint forces); — for statics, "
          "eigenvalue problems and the spin-up beam (prescribed hub motion, the energy is not reported "
          "by the example). Constraint drift: max |Phi| over the saved samples."]
    cs = res["rows"].get("cantilever_statics")
    if cs and not cs.get("error"):
        raw = cs["raw"]
        L += ["", "Planar ANCF cantilever, convergence with the mesh: max tip error (deflection, shortening per L; "
              "rotation rad) against the elastica.", "",
              "| elements | " + " | ".join(f"alpha = {a:g}" for a in raw["alphas"]) + " |",
              "|---|" + "---|" * len(raw["alphas"])]
        for n in raw["meshes"]:
            L.append(f"| {n} | " + " | ".join(f"{x:.1e}" for x in raw["max_error"][str(n)]) + " |")
    n_ok = sum(1 for k in CASES if res["rows"].get(k, {}).get("ok"))
    L += ["", f"{n_ok} of {len(CASES)} rows meet their target; the run took "
          f"{sum(r.get('wall_s', 0.0) for r in res['rows'].values()):.0f} s (sum of the rows' wall times)."]
    L.append(END)
    return "\n".join(L)


def _jsonable(x):
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (np.floating, np.integer, np.bool_)):
        return x.item()
    if isinstance(x, np.ndarray):
        return x.tolist()
    return x


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", metavar="KEY", choices=list(CASES),
                    help="rerun these cases only; the other rows are kept from the JSON")
    ap.add_argument("--no-run", action="store_true", help="render the section from the JSON")
    ap.add_argument("--no-write", action="store_true", help="do not touch VALIDATION.md")
    ap.add_argument("--list", action="store_true", help="print the case keys and exit")
    ap.add_argument("--json", default=JSON_PATH)
    a = ap.parse_args(argv)
    if a.list:
        print("\n".join(CASES))
        return None
    if a.no_run or a.only:
        with open(a.json) as fh:
            res = json.load(fh)
    else:
        res = {"rows": {}}
    if not a.no_run:
        res.update(machine=machine(), load=f"{os.getloadavg()[0]:.1f}",
                   date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"))
        for key in a.only or list(CASES):
            t0 = time.perf_counter()
            try:
                r = CASES[key]()
            except Exception as exc:  # recorded as failed, the other cases still run
                traceback.print_exc()
                r = dict(problem=key, error=f"{type(exc).__name__}: {exc}"[:300], ok=False)
            r["wall_s"] = time.perf_counter() - t0
            res["rows"][key] = _jsonable(r)
            print(f"[flexible] {key}: {'ok' if r['ok'] else 'NOT OK'} ({r['wall_s']:.0f} s) "
                  f"{r.get('accuracy', r.get('error'))}", flush=True)
            os.makedirs(os.path.dirname(a.json), exist_ok=True)
            with open(a.json, "w") as fh:  # after every case: a cut-off run keeps what it did
                json.dump(res, fh, indent=1)
    md = markdown(res)
    print(md)
    if not a.no_write:
        md_sections.write_section(md, BEGIN, END)
        print("[flexible] wrote section 10 of VALIDATION.md")
    return res


if __name__ == "__main__":
    res = main()
    sys.exit(0 if res is None or all(r.get("ok") for r in res["rows"].values()) else 1)
