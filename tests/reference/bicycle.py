"""The benchmark bicycle of Meijaard, Papadopoulos, Ruina and Schwab (2007): its linearised
lean-steer equations from the published formulas (NumPy/SciPy only, no jaxmbs).

Source: J. P. Meijaard, J. M. Papadopoulos, A. Ruina, A. L. Schwab, "Linearized dynamics
equations for the balance and steer of a bicycle: a benchmark and review", Proc. R. Soc.
A 463 (2007) 1955-1982, doi:10.1098/rspa.2007.1857 (docs/reference_problems.md §6).

The Whipple bicycle: rear wheel R, rear frame with rider B, front handlebar and fork H,
front wheel F; knife-edge wheels rolling without slip on flat ground. Axes of the
reference configuration (upright, steer zero): origin at the rear contact point, x
forward, y to the right, z down; gravity g along +z. About the upright straight-ahead
motion at forward speed v, the lean angle phi and the steer angle delta obey (eq. 2.1 of
the paper)

    M qdd + v C1 qd + (g K0 + v^2 K2) q = f,     q = (phi, delta),

with M, C1, K0, K2 given by the closed-form expressions of the paper's appendix A in
terms of the 25 benchmark parameters (Table 1), implemented in `matrices`. The state
(phi, delta, phid, deltad) has the eigenvalues of

    A(v) = [[0, I], [-M^-1 (g K0 + v^2 K2), -v M^-1 C1]].

`PUBLISHED` holds the numbers printed in the paper (the matrices of eq. 5.4 / Table 2
conventions, the eigenvalues of Table 2 at integer speeds, the weave and capsize speeds
of Table 2(a)), so that tests can check this implementation of the formulas against the
paper before it serves as the reference for jaxmbs's 3D model.

Run ``python -m tests.reference.bicycle`` to print everything.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

# Table 1: the benchmark parameters (SI units; inertias in kg m^2 about the bodies' CGs,
# axes parallel to the global axes in the reference configuration; I_xz is the tensor
# entry, as in the paper).
BENCHMARK = dict(
    w=1.02, c=0.08, lam=np.pi / 10.0, g=9.81,
    rR=0.3, mR=2.0, IRxx=0.0603, IRyy=0.12,
    xB=0.3, zB=-0.9, mB=85.0, IBxx=9.2, IByy=11.0, IBzz=2.8, IBxz=2.4,
    xH=0.9, zH=-0.7, mH=4.0, IHxx=0.05892, IHyy=0.06, IHzz=0.00708, IHxz=-0.00756,
    rF=0.35, mF=3.0, IFxx=0.1405, IFyy=0.28,
)

# Numbers printed in the paper.
PUBLISHED = dict(
    M=np.array([[80.81722, 2.31941332208709], [2.31941332208709, 0.29784188199686]]),
    C1=np.array([[0.0, 33.86641391492494], [-0.85035641456978, 1.68540397397560]]),
    K0=np.array([[-80.95, -2.59951685249872], [-2.59951685249872, -0.80329488458618]]),
    K2=np.array([[0.0, 76.59734589573222], [0.0, 2.65431523794604]]),
    # Table 2: eigenvalues (1/s) at v = 0 .. 10 m/s; per speed: capsize-branch real
    # eigenvalue (the "b" column), the weave pair (real part, |imaginary part|), the
    # castering real eigenvalue; at v = 0 the four real eigenvalues +-3.13.., +-5.53..
    eigenvalues={
        0: [3.13164324790656, -3.13164324790656, 5.53094371765393, -5.53094371765393],
        1: [-3.13423125066578, 3.52696170990070 + 0.80774027519930j,
            3.52696170990070 - 0.80774027519930j, -7.11008014637442],
        2: [-3.07158645641514, 2.68234517512745 + 1.68066296590675j,
            2.68234517512745 - 1.68066296590675j, -8.67387984831735],
        3: [-2.63366137253667, 1.70675605663975 + 2.31582447384325j,
            1.70675605663975 - 2.31582447384325j, -10.35101467245920],
        4: [-1.42944427361326, 0.41325331521125 + 3.07910818603206j,
            0.41325331521125 - 3.07910818603206j, -12.15861426576450],
        5: [-0.32286642900409, -0.77534188219585 + 4.46486771378823j,
            -0.77534188219585 - 4.46486771378823j, -14.07838969279820],
        6: [-0.00406690076970, -1.52644486584142 + 5.87673060598709j,
            -1.52644486584142 - 5.87673060598709j, -16.08537123098030],
        7: [0.10268170574766, -2.13875644258362 + 7.19525913329805j,
            -2.13875644258362 - 7.19525913329805j, -18.15788466125262],
        8: [0.14327879765713, -2.69348683581097 + 8.46037971396931j,
            -2.69348683581097 - 8.46037971396931j, -20.27940894394569],
        9: [0.15790184030917, -3.21675402252485 + 9.69377351531791j,
            -3.21675402252485 - 9.69377351531791j, -22.43788559040858],
        10: [0.16105338653172, -3.72016840437287 + 10.90681139476287j,
             -3.72016840437287 - 10.90681139476287j, -24.62459635017404],
    },
    # Table 2(a): speeds (m/s) at which the weave pair and the capsize eigenvalue cross
    # the imaginary axis; the weave's imaginary part there (rad/s)
    weave_speed=4.29238253634111,
    weave_frequency=3.43503384866144,
    capsize_speed=6.02426201538837,
)


def matrices(p=None):
    """(M, C1, K0, K2) (2, 2) of the benchmark bicycle from its parameters (dict with the
    keys of BENCHMARK), by the formulas of the paper's appendix A."""
    p = dict(BENCHMARK if p is None else p)
    w, c, lam = p["w"], p["c"], p["lam"]
    rR, mR, IRxx, IRyy = p["rR"], p["mR"], p["IRxx"], p["IRyy"]
    xB, zB, mB = p["xB"], p["zB"], p["mB"]
    IBxx, IBzz, IBxz = p["IBxx"], p["IBzz"], p["IBxz"]
    xH, zH, mH = p["xH"], p["zH"], p["mH"]
    IHxx, IHzz, IHxz = p["IHxx"], p["IHzz"], p["IHxz"]
    rF, mF, IFxx, IFyy = p["rF"], p["mF"], p["IFxx"], p["IFyy"]
    IRzz, IFzz = IRxx, IFxx  # axisymmetric wheels
    sl, cl = np.sin(lam), np.cos(lam)

    # the whole bicycle (A.1-A.6)
    mT = mR + mB + mH + mF
    xT = (xB * mB + xH * mH + w * mF) / mT
    zT = (-rR * mR + zB * mB + zH * mH - rF * mF) / mT
    ITxx = IRxx + IBxx + IHxx + IFxx + mR * rR**2 + mB * zB**2 + mH * zH**2 + mF * rF**2
    ITxz = IBxz + IHxz - mB * xB * zB - mH * xH * zH + mF * w * rF
    ITzz = IRzz + IBzz + IHzz + IFzz + mB * xB**2 + mH * xH**2 + mF * w**2
    # the front assembly A = H + F (A.7-A.12)
    mA = mH + mF
    xA = (xH * mH + w * mF) / mA
    zA = (zH * mH - rF * mF) / mA
    IAxx = IHxx + IFxx + mH * (zH - zA)**2 + mF * (rF + zA)**2
    IAxz = IHxz - mH * (xH - xA) * (zH - zA) + mF * (w - xA) * (rF + zA)
    IAzz = IHzz + IFzz + mH * (xH - xA)**2 + mF * (w - xA)**2
    # its CG's distance ahead of the steer axis, and its inertias about that axis
    # (A.13-A.16)
    uA = (xA - w - c) * cl - zA * sl
    IAll = mA * uA**2 + IAxx * sl**2 + 2 * IAxz * sl * cl + IAzz * cl**2
    IAlx = -mA * uA * zA + IAxx * sl + IAxz * cl
    IAlz = mA * uA * xA + IAxz * sl + IAzz * cl
    # ratio of steering to front-frame rotation, and gyrostatic coefficients (A.17-A.20)
    mu = c / w * cl
    SR, SF = IRyy / rR, IFyy / rF
    ST = SR + SF
    SA = mA * uA + mu * mT * xT

    M = np.array([[ITxx, IAlx + mu * ITxz],
                  [IAlx + mu * ITxz, IAll + 2 * mu * IAlz + mu**2 * ITzz]])
    K0 = np.array([[mT * zT, -SA], [-SA, -SA * sl]])
    K2 = np.array([[0.0, (ST - mT * zT) / w * cl],
                   [0.0, (SA + SF * sl) / w * cl]])
    C1 = np.array([[0.0, mu * ST + SF * cl + ITxz / w * cl - mu * mT * zT],
                   [-(mu * ST + SF * cl), IAlz / w * cl + mu * (SA + ITzz / w * cl)]])
    return M, C1, K0, K2


def state_matrix(v, p=None):
    """A (4, 4) of x = (phi, delta, phid, deltad) at forward speed v (m/s)."""
    p = dict(BENCHMARK if p is None else p)
    M, C1, K0, K2 = matrices(p)
    Mi = np.linalg.inv(M)
    return np.block([[np.zeros((2, 2)), np.eye(2)],
                     [-Mi @ (p["g"] * K0 + v**2 * K2), -v * Mi @ C1]])


def eigenvalues(v, p=None):
    """The four eigenvalues (complex, 1/s) at forward speed v, sorted by real part."""
    ev = np.linalg.eigvals(state_matrix(v, p))
    return ev[np.lexsort((ev.imag, ev.real))]


def weave_real_part(v, p=None):
    """Real part of the oscillatory (weave) pair at speed v (the complex pair)."""
    ev = eigenvalues(v, p)
    cx = ev[np.abs(ev.imag) > 1e-9]
    return float(cx.real.max())


def capsize_eigenvalue(v, p=None):
    """The real eigenvalue of the capsize branch above the weave speed: the larger of the
    two real eigenvalues (the other is the castering mode's, far negative)."""
    ev = eigenvalues(v, p)
    re = ev[np.abs(ev.imag) <= 1e-9].real
    return float(re.max())


def stability_speeds(p=None):
    """(weave speed, capsize speed) in m/s: the weave pair's real part crosses zero
    between 3 and 5 m/s, the capsize eigenvalue between 5.5 and 7 m/s (brentq, xtol
    1e-15)."""
    vw = brentq(lambda v: weave_real_part(v, p), 3.0, 5.0, xtol=1e-15, rtol=1e-15)
    vc = brentq(lambda v: capsize_eigenvalue(v, p), 5.5, 7.0, xtol=1e-15, rtol=1e-15)
    return vw, vc


def main() -> None:
    np.set_printoptions(precision=14)
    M, C1, K0, K2 = matrices()
    for name, a in (("M", M), ("C1", C1), ("K0", K0), ("K2", K2)):
        err = np.max(np.abs(a - PUBLISHED[name]) / np.maximum(np.abs(PUBLISHED[name]), 1.0))
        print(f"{name} =\n{a}\n  max rel. difference from the paper: {err:.2e}")
    for v in (0.0, 4.0, 4.6, 5.0):
        print(f"v = {v}: {eigenvalues(v)}")
    vw, vc = stability_speeds()
    print(f"weave speed {vw!r} (paper {PUBLISHED['weave_speed']}), capsize speed {vc!r} "
          f"(paper {PUBLISHED['capsize_speed']})")


if __name__ == "__main__":
    main()
