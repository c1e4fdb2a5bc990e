"""Builder-side (NumPy) checks and conversions of the spatial builder's inputs: vectors,
unit directions, orientations (quaternion or rotation matrix) and inertia tensors. Each
raises ValueError naming the item and what is expected."""
from __future__ import annotations

import math

import numpy as np

from ..core import build as B


def _vec3(x, what):
    return B.vector(x, 3, what)


def _unit3(x, what):
    return B.unit(x, 3, what)


def _quat_from_R(R):
    """Unit quaternion (w, x, y, z) of a rotation matrix (Shepperd's method)."""
    t = np.trace(R)
    if t > 0:
        s = 2.0 * math.sqrt(1.0 + t)
        q = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = [0.0] * 4
        q[0] = (R[k, j] - R[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + k] = (R[k, i] + R[i, k]) / s
    q = np.asarray(q)
    return q / np.linalg.norm(q)


def _R_from_quat(p):
    w, x, y, z = p
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _orientation(x, what):
    """Unit quaternion from None (identity), a quaternion (4,) (w, x, y, z) or a rotation
    matrix (3, 3) whose columns are the body axes in global coordinates."""
    if x is None:
        return np.array([1.0, 0.0, 0.0, 0.0])
    if isinstance(x, (bool, np.bool_, str, bytes)):
        raise ValueError(f"{what}: give a unit quaternion (w, x, y, z) or a 3x3 rotation matrix, "
                         f"got {x!r}")
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: give a unit quaternion (w, x, y, z) or a 3x3 rotation matrix, "
                         f"got {x!r}") from None
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{what}: must be finite, got {x!r}")
    if a.shape == (4,):
        n = np.linalg.norm(a)
        if abs(n - 1.0) > 1e-6:
            raise ValueError(f"{what}: a quaternion (w, x, y, z) must have unit norm, got "
                             f"|q| = {n:.6g}")
        return a / n
    if a.shape == (3, 3):
        if np.max(np.abs(a.T @ a - np.eye(3))) > 1e-6 or np.linalg.det(a) < 0:
            raise ValueError(f"{what}: a rotation matrix must be orthonormal with det +1")
        return _quat_from_R(a)
    raise ValueError(f"{what}: give a unit quaternion (w, x, y, z) or a 3x3 rotation matrix, "
                     f"got shape {a.shape}")


def _inertia(x, what):
    """Inertia tensor (3, 3) from a scalar (isotropic), (3,) principal moments (body
    axes) or a full symmetric (3, 3); must be positive definite and satisfy the triangle
    inequalities of a physical body."""
    if isinstance(x, (bool, np.bool_)):
        raise ValueError(f"{what}: must be a number, 3 principal moments or a 3x3 tensor")
    try:
        a = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: must be a number, 3 principal moments or a 3x3 tensor, "
                         f"got {x!r}") from None
    if a.shape == ():
        J = a * np.eye(3)
    elif a.shape == (3,):
        J = np.diag(a)
    elif a.shape == (3, 3):
        J = a
    else:
        raise ValueError(f"{what}: must be a number, 3 principal moments or a 3x3 tensor, got "
                         f"shape {a.shape}")
    if not np.all(np.isfinite(J)):
        raise ValueError(f"{what}: must be finite, got {x!r}")
    if np.max(np.abs(J - J.T)) > 1e-12 * max(1.0, np.max(np.abs(J))):
        raise ValueError(f"{what}: the inertia tensor must be symmetric")
    ev = np.linalg.eigvalsh(J)
    if not ev[0] > 0:
        raise ValueError(f"{what}: the inertia tensor must be positive definite, eigenvalues {ev}")
    if ev[2] > ev[0] + ev[1] + 1e-12 * ev[2]:
        raise ValueError(f"{what}: principal moments {ev} violate the triangle inequality "
                         "(I3 <= I1 + I2) of a physical body")
    return J
