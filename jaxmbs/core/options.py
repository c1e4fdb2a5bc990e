"""The validation of option objects: integrators, step-size controllers, saddle-point
formulations and stabilisers check every option when they are made.

A class lists a rule for each of its dataclass fields in `OPTIONS` and inherits
`Validated`: construction then raises ValueError naming the class, the option, what it
accepts and the value given (`GeneralizedAlpha: max_iter must be an integer >= 1, got
0`), instead of failing later inside a traced run.

    @static_class
    class MyIntegrator(Validated):
        OPTIONS = {"tol": real(0.0, open_lo=True, optional=True), "max_iter": integer(1)}
        tol: float | None = None
        max_iter: int = 8
"""
from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

__all__ = ["Rule", "Validated", "check_options", "check_tolerances", "real", "integer", "boolean",
           "choice", "controller"]


class Rule(NamedTuple):
    """accepts(value) -> bool; what: the values accepted, in words."""

    accepts: Callable[[Any], bool]
    what: str


def _is_real(x):
    return isinstance(x, numbers.Real) and not isinstance(x, (bool, np.bool_))


def _or_none(rule: Rule, optional: bool) -> Rule:
    if not optional:
        return rule
    return Rule(lambda x: x is None or rule.accepts(x), f"None or {rule.what}")


def real(lo=None, hi=None, *, open_lo=False, open_hi=False, optional=False) -> Rule:
    """A finite real number in [lo, hi] (or (lo, hi] with open_lo, ...); None also with
    optional."""
    def ok(x):
        if not _is_real(x) or not np.isfinite(float(x)):
            return False
        x = float(x)
        if lo is not None and (x < lo or (open_lo and x == lo)):
            return False
        return not (hi is not None and (x > hi or (open_hi and x == hi)))

    if lo is not None and hi is not None:
        what = f"a number in {'(' if open_lo else '['}{lo:g}, {hi:g}{')' if open_hi else ']'}"
    elif lo is not None:
        what = f"a finite number {'>' if open_lo else '>='} {lo:g}"
    elif hi is not None:
        what = f"a finite number {'<' if open_hi else '<='} {hi:g}"
    else:
        what = "a finite number"
    return _or_none(Rule(ok, what), optional)


def integer(lo=None, *, optional=False) -> Rule:
    """An integer >= lo (a Python or NumPy integer, not a bool); None also with optional."""
    def ok(x):
        return (isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))
                and (lo is None or int(x) >= lo))

    return _or_none(Rule(ok, "an integer" + ("" if lo is None else f" >= {lo}")), optional)


def boolean(*, optional=False) -> Rule:
    """True or False; None also with optional."""
    return _or_none(Rule(lambda x: isinstance(x, (bool, np.bool_)), "True or False"), optional)


def choice(*values) -> Rule:
    """One of `values` (compared with ==, same type)."""
    return Rule(lambda x: any(type(x) is type(v) and x == v for v in values),
                "one of " + ", ".join(map(repr, values)))


def controller(*, optional=True) -> Rule:
    """A step-size controller (an object with init(dtype) and adapt(h, err, accepted,
    state, k): jaxmbs.integrators.IController() or PIController()); None also with
    optional."""
    rule = Rule(lambda x: callable(getattr(x, "init", None)) and callable(getattr(x, "adapt", None)),
                "a step-size controller (jaxmbs.integrators.IController() or PIController())")
    return _or_none(rule, optional)


def check_options(obj) -> None:
    """ValueError unless every dataclass field of `obj` passes its rule in
    type(obj).OPTIONS; TypeError (a bug of the class) if a field has no rule."""
    cls = type(obj)
    rules = getattr(cls, "OPTIONS", {})
    for f in dataclasses.fields(obj):
        if f.name not in rules:
            raise TypeError(f"{cls.__name__}: option {f.name!r} has no rule in {cls.__name__}.OPTIONS")
        value = getattr(obj, f.name)
        rule = rules[f.name]
        if not rule.accepts(value):
            raise ValueError(f"{cls.__name__}: {f.name} must be {rule.what}, got {value!r}")


def check_tolerances(obj) -> None:
    """ValueError unless obj.rtol + obj.atol > 0 (an error control needs one of them)."""
    if not float(obj.rtol) + float(obj.atol) > 0.0:
        raise ValueError(f"{type(obj).__name__}: rtol and atol are both 0; give rtol > 0 or "
                         "atol > 0 (the error tolerances)")


class Validated:
    """Mixin of the option classes: `check_options` when an instance is made (a
    subclass with its own __post_init__ calls super().__post_init__())."""

    OPTIONS: dict = {}

    def __post_init__(self):
        check_options(self)
