"""Versioned JSON model files.

A model file holds the builder calls that made a `Model`, in order, so that loading it
replays them and gives the same mechanism, parameters and initial state bit for bit
(floats are written with Python's shortest round-trip repr):

    {"format": "jaxmbs-model", "version": 1,
     "model": {"gravity": [0.0, -9.81]},
     "calls": [{"method": "add_body", "args": {"name": "crank", "mass": 0.36, ...}},
               {"method": "add_revolute", "args": {...}}, ...]}

Every public builder method (`Model.add_*`, `Model.drive_*`) is recorded. Values are
numbers, strings, booleans, null, lists (vectors), objects (nested settings) and
profiles, written as {"profile": {"coef": [...], "amp": a, "omega": w, "phase": p}}.
A model that holds Python functions (user constraints, user forces, f(t) loads or
profiles) cannot be saved: the error names the call and the argument.

    jaxmbs.save_model(model, "crank.json"); model = jaxmbs.load_model("crank.json")
"""
from __future__ import annotations

import json
import math
from typing import Any

import numpy as np

from .. import profiles as prof
from ..planar.builder import Model

__all__ = ["save_model", "load_model", "model_to_dict", "model_from_dict", "FORMAT", "VERSION"]

FORMAT = "jaxmbs-model"
VERSION = 2  # 2: "model" may name its "kind" ("planar", the default, or "spatial")


def _builder_class(kind):
    if kind == "planar":
        return Model
    if kind == "spatial":
        from ..spatial import SpatialModel
        return SpatialModel
    raise ValueError(f"field 'model.kind': expected 'planar' or 'spatial', got {kind!r}")


def _builder_methods(cls=Model):
    Model = cls
    return {k for k in dir(Model)
            if (k.startswith("add_") or k.startswith("drive_"))
            and callable(getattr(Model, k)) and hasattr(getattr(Model, k), "__wrapped__")}


def _encode(x, where):
    if x is None or isinstance(x, (bool, str)):
        return x
    if isinstance(x, prof.Profile):
        if x.fn is not None:
            raise ValueError(f"cannot save the model: {where} is a profile with a Python function "
                             "f(t); model files hold data only (use polynomial/sinusoid profiles)")
        return {"profile": {"coef": [float(c) for c in x.coef], "amp": float(x.amp),
                            "omega": float(x.omega), "phase": float(x.phase)}}
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        v = float(x)
        if not math.isfinite(v):
            raise ValueError(f"cannot save the model: {where} = {v} is not finite")
        return v
    if isinstance(x, dict):
        return {str(k): _encode(v, f"{where}.{k}") for k, v in x.items()}
    if isinstance(x, (list, tuple)) or hasattr(x, "__array__"):
        a = np.asarray(x) if not isinstance(x, (list, tuple)) else None
        if a is not None and a.dtype != object:
            return _encode(a.tolist(), where) if a.ndim else _encode(a.item(), where)
        return [_encode(v, f"{where}[{i}]") for i, v in enumerate(x)]
    if callable(x):
        raise ValueError(f"cannot save the model: {where} is a Python function ({getattr(x, '__name__', x)!r}); "
                         "model files hold data only")
    raise ValueError(f"cannot save the model: {where} has unsupported type {type(x).__name__}")


def _decode(x):
    if isinstance(x, dict):
        if set(x) == {"profile"}:
            p = x["profile"]
            if not isinstance(p, dict):
                raise ValueError("a profile must be an object {coef, amp, omega, phase}")
            extra = set(p) - {"coef", "amp", "omega", "phase"}
            if extra:
                raise ValueError(f"unknown profile field(s) {sorted(extra)}; allowed: coef, amp, omega, phase")
            coef = [float(c) for c in p.get("coef", [0.0])]
            if len(coef) > prof.N_COEF:
                raise ValueError(f"profile coef has {len(coef)} entries; at most {prof.N_COEF}")
            coef += [0.0] * (prof.N_COEF - len(coef))
            return prof.Profile(tuple(coef), float(p.get("amp", 0.0)), float(p.get("omega", 0.0)),
                                float(p.get("phase", 0.0)))
        return {k: _decode(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_decode(v) for v in x]
    return x


def model_to_dict(model: Model) -> dict:
    """The JSON-able description of a `Model` or `SpatialModel` (see the module docstring)."""
    from ..spatial import SpatialModel

    if not isinstance(model, (Model, SpatialModel)):
        raise ValueError(f"model_to_dict expects a jaxmbs.Model or SpatialModel, got {type(model).__name__}")
    calls = []
    for i, (method, args) in enumerate(model._calls):
        name = args.get("name", "")
        calls.append({"method": method,
                      "args": {k: _encode(v, f"calls[{i}] ({method} {name!r}) argument {k!r}")
                               for k, v in args.items()}})
    init_args = getattr(model, "_init_args", None) or {"gravity": model.gravity}
    init = {k: _encode(v, f"model.{k}") for k, v in init_args.items()}
    if isinstance(model, SpatialModel):  # version 2: the builder kind; planar files stay version 1
        return {"format": FORMAT, "version": 2, "model": {"kind": "spatial", **init}, "calls": calls}
    return {"format": FORMAT, "version": 1, "model": init, "calls": calls}


def model_from_dict(d: Any) -> Model:
    """Rebuild a `Model` from `model_to_dict` output; errors name the offending field."""
    if not isinstance(d, dict):
        raise ValueError(f"a model file must hold a JSON object, got {type(d).__name__}")
    if d.get("format") != FORMAT:
        raise ValueError(f"field 'format': expected {FORMAT!r}, got {d.get('format')!r} (not a jaxmbs model file?)")
    ver = d.get("version")
    if not isinstance(ver, int) or isinstance(ver, bool) or not 1 <= ver <= VERSION:
        raise ValueError(f"field 'version': expected an integer 1..{VERSION}, got {ver!r}; "
                         "this file needs a newer jaxmbs" if isinstance(ver, int) and ver > VERSION
                         else f"field 'version': expected an integer 1..{VERSION}, got {ver!r}")
    unknown = set(d) - {"format", "version", "model", "calls", "comment"}
    if unknown:
        raise ValueError(f"unknown top-level field(s) {sorted(unknown)}; allowed: format, version, "
                         "model, calls, comment")
    init = d.get("model", {})
    if not isinstance(init, dict):
        raise ValueError("field 'model': expected an object such as {\"gravity\": [0, -9.81]}")
    init = dict(init)
    if ver < 2 and "kind" in init:
        raise ValueError(f"field 'model.kind' ({init['kind']!r}) needs a version 2 file: version 1 "
                         "files hold planar models only and have no 'kind'; set \"version\": 2 "
                         "(3D models, kind 'spatial', are written as version 2)")
    kind = init.pop("kind", "planar") if ver >= 2 else "planar"
    cls = _builder_class(kind)
    try:
        model = cls(**_decode(init))
    except TypeError as e:
        raise ValueError(f"field 'model': {e}") from None
    except ValueError as e:
        raise ValueError(f"field 'model': {e}") from None
    calls = d.get("calls")
    if not isinstance(calls, list):
        raise ValueError("field 'calls': expected a list of {\"method\": ..., \"args\": {...}}")
    if not calls:
        raise ValueError("field 'calls' is empty: the file defines no bodies, so there is no "
                         "model to build; add builder calls such as {\"method\": \"add_body\", "
                         "\"args\": {...}} (jaxmbs.save_model writes them)")
    allowed = _builder_methods(cls)
    for i, c in enumerate(calls):
        if not isinstance(c, dict) or set(c) - {"method", "args"} or "method" not in c:
            raise ValueError(f"field calls[{i}]: expected an object {{\"method\": ..., \"args\": {{...}}}}, got {c!r}")
        method, args = c["method"], c.get("args", {})
        if method not in allowed:
            raise ValueError(f"field calls[{i}].method: unknown builder method {method!r}; "
                             f"allowed: {', '.join(sorted(allowed))}")
        if not isinstance(args, dict):
            raise ValueError(f"field calls[{i}].args: expected an object of keyword arguments")
        try:
            getattr(model, method)(**_decode(args))
        except TypeError as e:
            raise ValueError(f"field calls[{i}].args ({method}): {e}") from None
        except ValueError as e:
            raise ValueError(f"field calls[{i}] ({method} {args.get('name', '')!r}): {e}") from None
    return model


def save_model(model: Model, path) -> str:
    """Write `model` to a JSON model file at `path`; returns the path."""
    d = model_to_dict(model)
    head = {k: v for k, v in d.items() if k != "calls"}
    lines = [json.dumps(c) for c in d["calls"]]  # one builder call per line
    text = json.dumps(head)[:-1] + ', "calls": [\n  ' + ",\n  ".join(lines) + "\n]}\n"
    assert json.loads(text) == d
    with open(path, "w") as f:
        f.write(text)
    return str(path)


def load_model(path) -> Model:
    """Read a JSON model file; returns the `Model` (call `.build()` for mechanism, params, q0, v0)."""
    try:
        with open(path) as f:
            d = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    try:
        return model_from_dict(d)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None
