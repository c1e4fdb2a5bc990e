"""MuJoCo as the reader of MJCF and URDF files: loading a model, what the import records
(`MujocoImport`), and the naming helpers of the import and the comparison."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np


class MujocoImportWarning(UserWarning):
    """Features of a MuJoCo / URDF model that the import did not map."""


@dataclass
class MujocoImport:
    """What an import made of a MuJoCo model (``model.mujoco`` after `from_mjcf`).

    source: the file name (or '<MJCF string>'); bodies: MuJoCo body name -> (jaxmbs frame
    name, (3,) position and (3, 3) rotation of the MuJoCo body frame in that frame: the
    identity for bodies that became jaxmbs bodies, a fixed pose for merged ones and for
    bodies fixed to the world ('ground')); joints: MuJoCo joint name -> (jaxmbs joint
    name, motion 'angle' / 'displacement' / None); equalities: MuJoCo equality name ->
    (jaxmbs joint name, MuJoCo type); actuators: MuJoCo actuator name -> (jaxmbs force
    name or None, control index, ctrlrange or None); qpos, qvel: MuJoCo's initial state
    used; unmapped: the features not mapped (also in the warning); notes: what the import
    decided that the file may not say (a URDF's base welded to the world; also in the
    warning); loop_joints: jaxmbs
    joints that close kinematic loops (from equality constraints)."""

    source: str
    bodies: dict = field(default_factory=dict)
    body_ids: dict = field(default_factory=dict)
    joints: dict = field(default_factory=dict)
    equalities: dict = field(default_factory=dict)
    actuators: dict = field(default_factory=dict)
    qpos: np.ndarray = None
    qvel: np.ndarray = None
    unmapped: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    loop_joints: tuple = ()
    xml: str = ""


def _mujoco():
    try:
        import mujoco
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("importing MJCF / URDF files needs the mujoco package: "
                          'pip install "jaxmbs[mujoco]"') from None
    return mujoco


def _is_xml_text(source):
    return isinstance(source, str) and source.lstrip().startswith("<")


def load_mujoco(source):
    """(mujoco.MjModel, name) of a file path or an MJCF string. An empty name, a missing
    file or a folder, and MuJoCo's errors, are a ValueError that starts with the file
    name."""
    mj = _mujoco()
    if _is_xml_text(source):
        name = "<MJCF string>"
        try:
            return mj.MjModel.from_xml_string(source), name
        except Exception as e:  # noqa: BLE001 - MuJoCo raises ValueError (and others)
            raise ValueError(f"{name}: {' '.join(str(e).split())}") from None
    if isinstance(source, bytes) or not isinstance(source, (str, os.PathLike)):
        raise ValueError(f"expected the path of an MJCF / URDF file or an MJCF string, got "
                         f"{type(source).__name__} {source!r}")
    path = os.fspath(source)
    if not path.strip():
        raise ValueError(f"empty file name {path!r}: give the path of an MJCF (.xml) or URDF "
                         "(.urdf) file, or an MJCF string starting with '<'")
    if os.path.isdir(path):
        raise ValueError(f"{path}: is a folder, not a model file; give an MJCF (.xml) or URDF "
                         "(.urdf) file")
    if not os.path.exists(path):
        raise ValueError(f"{path}: no such file (looked in {os.path.abspath(path)}); give the "
                         "path of an MJCF (.xml) or URDF (.urdf) file, or an MJCF string "
                         "starting with '<'")
    try:
        return mj.MjModel.from_xml_path(path), path
    except Exception as e:  # noqa: BLE001
        raise ValueError(f"{path}: {' '.join(str(e).split())}") from None


# --------------------------------------------------------------------------- helpers
def _name(m, objtype, i, prefix):
    mj = _mujoco()
    n = mj.mj_id2name(m, objtype, i)
    return n if n else f"{prefix}{i}"


class _Names:
    """jaxmbs names (unique over bodies, joints, forces; no '.') for MuJoCo names, which
    are unique per object type only."""

    def __init__(self):
        self.used = {"ground"}

    def __call__(self, want, suffix):
        base = str(want).replace(".", "_") or suffix
        name = base
        if name in self.used:
            name = f"{base}_{suffix}"
        k = 2
        while name in self.used:
            name = f"{base}_{suffix}{k}"
            k += 1
        self.used.add(name)
        return name


def _quat_R(q):
    w, x, y, z = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def _fmt(x):
    return np.array2string(np.asarray(x, float), precision=4, separator=", ")


def urdf_base_note(xml):
    """For a URDF text: the sentence saying that its root link is welded to the world, or
    '' when it is not (a root link named 'world', or one whose joints are all floating) or
    when the text is not URDF. MuJoCo's URDF compiler gives the root link no joint, so the
    base of a robot is fixed unless the URDF frees it with a joint of type 'floating'."""
    import xml.etree.ElementTree as ET

    try:
        robot = ET.fromstring(xml)
    except ET.ParseError:
        return ""
    if robot.tag != "robot":
        return ""
    links = [lk.get("name") for lk in robot.findall("link")]
    joints = [(j.get("type"), (j.find("parent") if j.find("parent") is not None else j).get("link"),
               (j.find("child") if j.find("child") is not None else j).get("link"))
              for j in robot.findall("joint")]
    children = {c for _, _, c in joints}
    roots = [lk for lk in links if lk not in children]
    welded = [r for r in roots if r != "world"  # (MuJoCo's world body: the user's choice)
              and not ([t for t, p, _ in joints if p == r]
                       and all(t == "floating" for t, p, _ in joints if p == r))]
    if not welded:
        return ""
    names = ", ".join(repr(r) for r in welded)
    one = welded[0]
    return (f"the base (root link {names}) is welded to the world: a URDF root link gets no "
            "joint, so it and every link fixed to it stay at rest; for a floating base add a "
            f"link 'world' and a joint of type 'floating' from it to {one!r} (it becomes a "
            "free body)")
