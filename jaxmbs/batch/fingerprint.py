"""Fingerprints: a digest of a value (arrays, pytrees, options, functions and the code
they reach) that is the same in every process, so that a resumed run never mixes inputs."""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import types

import jax
import jax.numpy as jnp
import numpy as np

# --- fingerprints: a digest of a value that is the same in every process ----------------
_FN_DEPTH = 3  # functions reached through a function's globals are followed this deep


def _digest(x) -> str:
    h = hashlib.sha256()
    _feed(h, x, 0, set())
    return h.hexdigest()


def _feed(h, x, fdepth, active):
    """Feed a canonical description of x to the hash h: the type and the exact value of
    numbers, strings and arrays (dtype, shape, bytes), the fields of dataclasses and named
    tuples, the items of containers, and the code, defaults, closure and referenced
    globals of Python functions. Never `hash()` or `repr()` of an arbitrary object (they
    change between processes)."""
    u = h.update
    if x is None or isinstance(x, (bool, int, str, bytes)) and not isinstance(x, np.generic):
        u(f"{type(x).__name__}:{x!r};".encode())
        return
    if isinstance(x, float):
        u(f"float:{x.hex()};".encode())
        return
    if isinstance(x, complex):
        u(f"complex:{x.real.hex()},{x.imag.hex()};".encode())
        return
    if isinstance(x, jax.core.Tracer):
        raise ValueError("run_batch got a traced value (it was called under jax.jit, vmap or "
                         "grad); call it from plain Python with concrete arrays")
    if isinstance(x, (np.ndarray, np.generic, jax.Array)):
        if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        a = np.ascontiguousarray(np.asarray(x))
        if a.dtype == object:
            raise ValueError("cannot fingerprint an object array; give numeric arrays")
        u(f"array:{a.dtype.str}:{a.shape};".encode())
        u(a.tobytes())
        return
    if isinstance(x, type):
        u(f"type:{x.__module__}.{x.__qualname__};".encode())
        return
    if isinstance(x, types.ModuleType):
        u(f"module:{x.__name__};".encode())
        return
    if id(x) in active:
        u(b"<cycle>;")
        return
    active.add(id(x))
    try:
        if isinstance(x, functools.partial):
            u(b"partial(")
            for part in (x.func, x.args, x.keywords):
                _feed(h, part, fdepth, active)
            u(b");")
        elif isinstance(x, types.MethodType):
            u(b"method(")
            _feed(h, x.__func__, fdepth, active)
            _feed(h, x.__self__, fdepth, active)
            u(b");")
        elif isinstance(x, types.FunctionType):
            _feed_function(h, x, fdepth, active)
        elif isinstance(x, (types.BuiltinFunctionType, np.ufunc)):
            u(f"builtin:{getattr(x, '__module__', '')}.{getattr(x, '__qualname__', x.__name__)};".encode())
        elif callable(x) and hasattr(x, "__wrapped__") and not dataclasses.is_dataclass(x):
            u(f"wrapped:{type(x).__qualname__}(".encode())  # jax.jit, functools.wraps, ...
            _feed(h, x.__wrapped__, fdepth, active)
            u(b");")
        elif dataclasses.is_dataclass(x):
            u(f"dataclass:{type(x).__module__}.{type(x).__qualname__}(".encode())
            for f in dataclasses.fields(x):
                u(f"{f.name}=".encode())
                _feed(h, getattr(x, f.name), fdepth, active)
            u(b");")
        elif isinstance(x, tuple) and hasattr(x, "_fields"):
            u(f"namedtuple:{type(x).__module__}.{type(x).__qualname__}(".encode())
            for name, value in zip(x._fields, x):
                u(f"{name}=".encode())
                _feed(h, value, fdepth, active)
            u(b");")
        elif isinstance(x, (tuple, list)):
            u(f"{type(x).__name__}[{len(x)}](".encode())
            for item in x:
                _feed(h, item, fdepth, active)
            u(b");")
        elif isinstance(x, dict):
            u(f"dict[{len(x)}](".encode())
            for k in sorted(x, key=repr):
                _feed(h, k, fdepth, active)
                _feed(h, x[k], fdepth, active)
            u(b");")
        elif isinstance(x, (set, frozenset)):
            u(f"set[{len(x)}](".encode())
            for d in sorted(_digest(item) for item in x):
                u(d.encode())
            u(b");")
        elif hasattr(x, "__dict__"):
            u(f"object:{type(x).__module__}.{type(x).__qualname__}(".encode())
            _feed(h, vars(x), fdepth, active)
            u(b");")
        else:
            raise ValueError(f"cannot fingerprint a {type(x).__module__}.{type(x).__qualname__} "
                             "(run_batch records a digest of every input to refuse resuming a "
                             "different run); pass numbers, arrays, jaxmbs objects or functions")
    finally:
        active.discard(id(x))


def _code_names(code, out):
    out.update(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_names(c, out)
    return out


def _feed_code(h, code):
    h.update(b"code(")
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _feed_code(h, c)
        else:
            _feed(h, c, _FN_DEPTH, set())
    h.update(b");")


def _feed_function(h, f, fdepth, active):
    """A Python function: its qualified name, bytecode, constants, defaults, closure
    contents and the values of the globals it names (functions among them followed to
    depth _FN_DEPTH, then by name only)."""
    h.update(f"function:{f.__module__}.{f.__qualname__}(".encode())
    if fdepth >= _FN_DEPTH:
        h.update(b"...);")
        return
    _feed_code(h, f.__code__)
    _feed(h, f.__defaults__, fdepth + 1, active)
    _feed(h, f.__kwdefaults__, fdepth + 1, active)
    for cell in f.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # empty cell
            value = "<empty cell>"
        _feed(h, value, fdepth + 1, active)
    for name in sorted(_code_names(f.__code__, set())):
        if name in f.__globals__:
            h.update(f"global {name}=".encode())
            _feed(h, f.__globals__[name], fdepth + 1, active)
    h.update(b");")
