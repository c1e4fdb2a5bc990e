"""`compare_with_mujoco`: an imported file run in both simulators side by side, the
same states compared at the same instants."""
from __future__ import annotations

import os
import warnings

import numpy as np

from ._mujoco import MujocoImportWarning, _is_xml_text, _mujoco, load_mujoco
from .mjcf import _import


# ---------------------------------------------------------------- side by side
def compare_with_mujoco(model_path, t1, dt, *, keyframe=None, qpos=None, qvel=None,
                        contacts=False, ctrl=None, save_every=None, plot=None,
                        mujoco_settings="model", disable=(), quiet=True):
    """Simulate a MuJoCo / URDF file with jaxmbs (exact constraints: RK4 + projection) and
    with MuJoCo (its RK4 in joint coordinates, same dt, equality constraints as the file
    sets them) from the same initial state, and report side by side. Both are read at the
    same instants: MuJoCo's body poses, loop gaps and energy are recomputed (mj_forward)
    from the state each saved step leaves.

    Returns a dict: 't' (s,), 'bodies' (MuJoCo body names compared), 'jaxmbs_pos' and
    'mujoco_pos' (s, n_bodies, 3) body-frame origins (m), 'max_position_difference' (m),
    'position_difference' (s,) (m, the largest over the bodies), 'max_orientation_difference'
    (rad, the largest rotation between the two simulators' body frames),
    'orientation_difference' (s,), 'body_differences' {body: (max position difference m,
    max orientation difference rad)},
    'loop_gap' {'jaxmbs': (s,), 'mujoco': (s,)} (the largest loop-closure error over the
    equality constraints: m for connect / weld / distance, the equality's units for
    joint couplings; empty arrays without loops), 'energy' {'jaxmbs': (s,), 'mujoco':
    (s,)} (kinetic + potential energy, J; MuJoCo's mj_energyPos + mj_energyVel),
    'energy_drift' (max |E - E0| / max(|E0|, 1) per simulator; dampers and actuators
    change E physically), 'jaxmbs_energy_balance_drift' (the same for jaxmbs's
    E - work of the non-conservative forces, which an exact solution keeps constant),
    'jaxmbs_status', 'unmapped'. plot: PNG path of the
    figure (positions, loop gap, energy). mujoco_settings: 'model' (the file's solver
    settings) or 'default' (MuJoCo's default solref / solimp on every equality).
    keyframe, qpos, qvel, contacts: as for `from_mjcf` (the same initial state for both).
    disable: MuJoCo features to switch off (names of mjtDisableBit without the prefix,
    e.g. ('frictionloss', 'limit')), in the MuJoCo run and in the import alike (the import
    reads MuJoCo's disable flags: 'limit' drops the joint limits of both), to compare the
    physics that jaxmbs maps when the file has features it does not. The import uses dt
    as MuJoCo's timestep (MuJoCo's limit time constants are at least 2 dt). ctrl: (nu,)
    constant controls (MuJoCo's ctrl; jaxmbs's u), default zero."""
    import jax
    import jax.numpy as jnp

    from ..core.equations import constraint_terms
    from ..simulation import simulate

    mj = _mujoco()
    n = int(round(t1 / dt))
    if n < 1 or abs(n * dt - t1) > 1e-9 * max(1.0, t1):
        raise ValueError(f"t1 = {t1} must be a positive multiple of dt = {dt}")
    # MuJoCo's settings for both runs: the import reads the disable flags (e.g. 'limit'
    # drops the joint limits on both sides) and the timestep (the limits' timeconst clamp)
    m, src = load_mujoco(model_path)
    m.opt.integrator = int(mj.mjtIntegrator.mjINT_RK4)
    m.opt.timestep = dt
    m.opt.enableflags |= int(mj.mjtEnableBit.mjENBL_ENERGY)
    if not contacts:
        m.opt.disableflags |= int(mj.mjtDisableBit.mjDSBL_CONTACT)
    for flag in disable:
        bit = getattr(mj.mjtDisableBit, f"mjDSBL_{str(flag).upper()}", None)
        if bit is None:
            raise ValueError(f"disable: unknown MuJoCo disable flag {flag!r}")
        m.opt.disableflags |= int(bit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MujocoImportWarning)
        try:
            model, info = _import(m, src, keyframe, qpos, qvel, contacts)
        except ValueError as e:
            raise ValueError(f"{src}: {e}") from None
    mech, params, q0, v0 = model.build()
    if save_every is None:
        save_every = max(1, n // 400)
        while n % save_every:
            save_every -= 1
    u = np.zeros(mech.n_controls) if ctrl is None else np.asarray(ctrl, float).reshape(-1)
    if ctrl is not None and u.size < mech.n_controls:
        raise ValueError(f"ctrl: expected {mech.n_controls} or more entries, got {u.size}")
    uj = jnp.asarray(u[:mech.n_controls])
    traj = simulate(mech, params, q0, v0, (0.0, n * dt), dt, save_every=save_every,
                    controls=(lambda t: uj) if mech.n_controls else None)
    ts = np.asarray(traj.t)
    Q = np.asarray(traj.q)

    # body positions on the jaxmbs side
    names = [b for b in info.bodies if b != "world" and info.bodies[b][0] != "ground"]
    cols = {}
    coord_names = mech.coordinate_names()
    for b in names:
        f = info.bodies[b][0]
        cols[b] = coord_names.index(f"{f}.x")
    from ..spatial.geometry import quat_to_R

    jpos = np.zeros((len(ts), len(names), 3))
    jrot = np.zeros((len(ts), len(names), 3, 3))
    for i, b in enumerate(names):
        f, p_rel, R_rel = info.bodies[b]
        c = cols[b]
        R = np.asarray(quat_to_R(jnp.asarray(Q[:, c + 3:c + 7])))
        jpos[:, i] = Q[:, c:c + 3] + np.einsum("tij,j->ti", R, p_rel)
        jrot[:, i] = np.einsum("tij,jk->tik", R, R_rel)

    # loop gaps on the jaxmbs side: rows of the equality joints
    rows = [r for j in mech.joints if j.name in info.loop_joints for r in j.rows]
    jgap = np.zeros(0)
    if rows:
        phi = jax.vmap(lambda q, t: constraint_terms(mech, params, q, jnp.zeros(mech.n_vel),
                                                     t).phi)(traj.q, traj.t)
        jgap = np.max(np.abs(np.asarray(phi)[:, rows]), axis=1)

    # MuJoCo
    if mujoco_settings == "default":
        m.eq_solref[:] = (0.02, 1.0)
        m.eq_solimp[:] = (0.9, 0.95, 0.001, 0.5, 2.0)
    elif mujoco_settings != "model":
        raise ValueError("mujoco_settings must be 'model' or 'default'")
    dmj = mj.MjData(m)
    dmj.qpos[:], dmj.qvel[:] = info.qpos, info.qvel
    if ctrl is not None:
        dmj.ctrl[:] = u[:m.nu]
    mj.mj_forward(m, dmj)
    bid = [info.body_ids[b] for b in names]
    mpos = np.zeros_like(jpos)
    mrot = np.zeros_like(jrot)
    mgap = np.zeros(len(ts))
    menergy = np.zeros(len(ts))
    k = 0
    for step in range(n + 1):
        if step % save_every == 0:
            if step:
                _mujoco_state_at_step_end(m, dmj, mj)
            mpos[k] = dmj.xpos[bid]
            mrot[k] = dmj.xmat[bid].reshape(-1, 3, 3)
            mgap[k] = _mujoco_gap(m, dmj, mj)
            menergy[k] = dmj.energy[0] + dmj.energy[1]
            k += 1
        if step < n:
            mj.mj_step(m, dmj)
    energy_j = np.asarray(traj.kinetic + traj.potential)
    diff = np.linalg.norm(jpos - mpos, axis=-1)
    # rotation angle of R_jaxmbs^T R_mujoco: 2 asin(|R_j - R_m|_F / sqrt(8)), accurate when small
    rdiff = 2.0 * np.arcsin(np.minimum(np.linalg.norm(jrot - mrot, axis=(-2, -1)) / np.sqrt(8.0), 1.0))
    drift = lambda E: float(np.max(np.abs(E - E[0])) / max(abs(E[0]), 1.0))
    res = {
        "model": str(model_path) if not _is_xml_text(model_path) else "<MJCF string>",
        "t1": float(n * dt), "dt": dt, "t": ts, "bodies": names, "jaxmbs_pos": jpos,
        "mujoco_pos": mpos, "max_position_difference": float(np.max(diff)) if diff.size else 0.0,
        "position_difference": np.max(diff, axis=1) if diff.size else np.zeros(len(ts)),
        "max_orientation_difference": float(np.max(rdiff)) if rdiff.size else 0.0,
        "orientation_difference": np.max(rdiff, axis=1) if rdiff.size else np.zeros(len(ts)),
        "body_differences": {b: (float(np.max(diff[:, i])), float(np.max(rdiff[:, i])))
                             for i, b in enumerate(names)},
        "loop_gap": {"jaxmbs": jgap, "mujoco": mgap if rows else np.zeros(0)},
        "energy": {"jaxmbs": energy_j, "mujoco": menergy},
        "energy_drift": {"jaxmbs": drift(energy_j), "mujoco": drift(menergy)},
        "jaxmbs_energy_balance_drift": drift(np.asarray(traj.energy)),
        "jaxmbs_status": int(np.asarray(traj.status)), "unmapped": list(info.unmapped),
    }
    if plot:
        _plot_comparison(res, plot)
    if not quiet:
        print(summary(res))
    return res


def summary(res) -> str:
    """A few lines describing a `compare_with_mujoco` result."""
    lg = res["loop_gap"]
    lines = [f"{res['model']}: {len(res['bodies'])} bodies, t1 = {res['t1']:g} s, dt = {res['dt']:g} s",
             f"  max body position difference jaxmbs - MuJoCo: {res['max_position_difference']:.3g} m, "
             f"orientation {res['max_orientation_difference']:.3g} rad"]
    if lg["jaxmbs"].size:
        lines.append(f"  max loop-closure error: jaxmbs {np.max(lg['jaxmbs']):.3g}, "
                     f"MuJoCo {np.max(lg['mujoco']):.3g}")
    lines.append(f"  relative energy drift: jaxmbs {res['energy_drift']['jaxmbs']:.3g}, "
                 f"MuJoCo {res['energy_drift']['mujoco']:.3g}")
    return "\n".join(lines)


def _mujoco_state_at_step_end(m, d, mj):
    """Recompute MuJoCo's positions, orientations, tendon lengths and energy from the state
    (qpos, qvel) that mj_step left. After mj_step, d.xpos / d.xmat / d.energy are those of
    the last evaluation inside the step (the start of the step for Euler, the last stage
    for RK4), not of the new state: read straight away they lag the state by up to a step.
    mj_forward on the new state (with the solver's warm start kept, so the next mj_step is
    unchanged) compares both simulators at the same instant."""
    warm = d.qacc_warmstart.copy()
    mj.mj_forward(m, d)
    d.qacc_warmstart[:] = warm


def _mujoco_gap(m, d, mj):
    """Largest violation of MuJoCo's active equality constraints (connect / weld: m; joint:
    the equality's units; tendon: m), from the positions (not the solver's residual)."""
    gap = 0.0
    OB, ET = mj.mjtObj, mj.mjtEq
    for e in range(m.neq):
        if not d.eq_active[e]:
            continue
        et = int(m.eq_type[e])
        data = m.eq_data[e]
        if et in (int(ET.mjEQ_CONNECT), int(ET.mjEQ_WELD)):
            o1, o2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
            if int(m.eq_objtype[e]) == int(OB.mjOBJ_SITE):
                x1, x2 = d.site_xpos[o1], d.site_xpos[o2]
            elif et == int(ET.mjEQ_CONNECT):
                x1 = d.xpos[o1] + d.xmat[o1].reshape(3, 3) @ data[0:3]
                x2 = d.xpos[o2] + d.xmat[o2].reshape(3, 3) @ data[3:6]
            else:
                x1 = d.xpos[o1] + d.xmat[o1].reshape(3, 3) @ data[3:6]
                x2 = d.xpos[o2] + d.xmat[o2].reshape(3, 3) @ data[0:3]
            gap = max(gap, float(np.linalg.norm(x1 - x2)))
        elif et == int(ET.mjEQ_JOINT):
            j1, j2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
            y = 0.0 if j2 < 0 else d.qpos[m.jnt_qposadr[j2]] - m.qpos0[m.jnt_qposadr[j2]]
            rhs = sum(data[i] * y**i for i in range(5))
            gap = max(gap, abs(float(d.qpos[m.jnt_qposadr[j1]] - m.qpos0[m.jnt_qposadr[j1]] - rhs)))
        elif et == int(ET.mjEQ_TENDON):
            gap = max(gap, abs(float(d.ten_length[m.eq_obj1id[e]] - m.tendon_length0[m.eq_obj1id[e]]
                                     - data[0])))
    return gap


def _plot_comparison(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = res["t"]
    fig, ax = plt.subplots(3, 1, figsize=(7, 8), sharex=True)
    jp, mp = res["jaxmbs_pos"], res["mujoco_pos"]
    if jp.shape[1]:
        i = int(np.argmax(np.ptp(jp, axis=0).max(-1)))
        for c, lab in enumerate("xyz"):
            ax[0].plot(t, jp[:, i, c], "-", label=f"jaxmbs {lab}")
            ax[0].plot(t, mp[:, i, c], "--", label=f"MuJoCo {lab}")
        ax[0].set_ylabel(f"{res['bodies'][i]} position (m)")
        ax[0].legend(ncol=3, fontsize=7)
    lg = res["loop_gap"]
    if lg["jaxmbs"].size:
        ax[1].semilogy(t, np.maximum(lg["jaxmbs"], 1e-17), label="jaxmbs (exact constraints)")
        ax[1].semilogy(t, np.maximum(lg["mujoco"], 1e-17), label="MuJoCo (soft equality)")
        ax[1].set_ylabel("loop-closure error")
        ax[1].legend(fontsize=8)
    else:
        ax[1].semilogy(t, np.maximum(res["position_difference"], 1e-17))
        ax[1].set_ylabel("|position jaxmbs - MuJoCo| (m)")
    for k, style in (("jaxmbs", "-"), ("mujoco", "--")):
        E = res["energy"][k]
        ax[2].plot(t, E - E[0], style, label={"jaxmbs": "jaxmbs", "mujoco": "MuJoCo"}[k])
    ax[2].set_ylabel("energy - initial (J)")
    ax[2].set_xlabel("t (s)")
    ax[2].legend(fontsize=8)
    fig.suptitle(f"{os.path.basename(res['model'])}: jaxmbs vs MuJoCo (RK4, dt {res['dt']:g} s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
