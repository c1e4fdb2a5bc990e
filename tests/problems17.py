"""The example mechanisms the formulation and integrator suites of issue 17 run on:
name -> builder returning (mech, params, q0, v0). REDUNDANT lists those with redundant
rows or singular configurations on their path (Bricard, the N-four-bar)."""
import os
import sys

_EX = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
if _EX not in sys.path:
    sys.path.insert(0, _EX)


def _ex(module, *args, **kw):
    def build():
        mod = __import__(module)
        return tuple(mod.build(*args, **kw))
    return build


def _catalogue(fn):
    def build():
        import catalogue_models
        return tuple(getattr(catalogue_models, fn)().build())
    return build


def _tests(fn, *args):
    def build():
        import mechanisms
        return tuple(getattr(mechanisms, fn)(*args))
    return build


# every example mechanism without redundant constraints (planar and spatial)
MECHANISMS = {
    "double_pendulum": _tests("double_pendulum"),
    "four_bar": _tests("four_bar"),
    "slider_crank": _tests("slider_crank"),
    "pendulum": _ex("pendulum"),
    "andrews": _ex("andrews_squeezer"),
    "car_axis": _ex("car_axis"),
    "n_four_bar_2": _ex("n_four_bar", 2),
    "quarter_car": _ex("bumpy_road"),
    "gears_rolling": _catalogue("gears_and_rolling"),
    "knife_edge": _catalogue("knife_edge"),
    "contacts": _catalogue("contacts"),
    "rotating": _catalogue("rotating"),
    "cam": _catalogue("cam"),
    "spatial_slider_crank": _ex("spatial_slider_crank"),
    "top": _ex("top"),
    "tennis_racket": _ex("tennis_racket"),
    "double_wishbone": _ex("double_wishbone"),
}
# fast subset for the default suite (the rest run with -m slow)
FAST = ("double_pendulum", "andrews", "knife_edge", "spatial_slider_crank")  # cam: slow (~30-45 s per formulation)
REDUNDANT = {
    "bricard": _ex("bricard"),
}
