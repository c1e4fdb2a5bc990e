"""One physical value, one Params leaf: whatever number of families (constraint parts,
forces) a builder method makes, each value it takes is stored once, and `Mechanism.replace`
of its key changes every row and force that uses it (`jaxmbs.core.shared`)."""
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from catalogue_models import CATALOGUE
from test_faults import BUILDERS
from test_io import core_model

import jaxmbs as mb
from jaxmbs.core.equations import constraint_terms


def _models():
    """(label, builder) of one small model per builder method (the fault-injection base
    model plus the method's valid call) and of the catalogue models."""
    out = []
    for builder, (base, calls, _) in BUILDERS.items():
        for method, (good, _) in calls.items():
            def make(base=base, method=method, good=good):
                m = base()
                getattr(m, method)(**good)
                return m
            out.append((f"{builder}.{method}", make))
    return out + [(f"catalogue {k}", f) for k, f in CATALOGUE.items()] + [("core", core_model)]


MODELS = _models()
NODE_KEY = re.compile(r"^[^.]+\.n\d+\.")  # a beam node's own leaf ('<beam>.n<k>.<field>')


def _stored_twice(mech, params):
    """Pairs of parameter keys that hold one value twice: two keys of one joint or force
    with the same field name and equal values, or a joint / force key equal to the length
    of a beam element (a copy of the node's '<node>.length')."""
    keys = [k for k in mech.param_names() if k != "gravity"]
    vals = {k: np.asarray(mech.get(params, k)) for k in keys}
    out = []
    groups = {}
    for k in keys:
        if not NODE_KEY.match(k):
            groups.setdefault((k.split(".")[0], k.split(".")[-1]), []).append(k)
    for ks in groups.values():
        out += [(a, b) for i, a in enumerate(ks) for b in ks[i + 1:]
                if vals[a].shape == vals[b].shape and np.array_equal(vals[a], vals[b])]
    lengths = {k: float(v) for k, v in vals.items()
               if NODE_KEY.match(k) and k.endswith(".length") and float(v) > 0}
    for k, v in vals.items():
        if not NODE_KEY.match(k) and k.split(".")[-1] in ("length", "length_i", "length_j") \
                and v.ndim == 0:
            out += [(b, k) for b, L in lengths.items() if L == float(v)]
    return out


@pytest.mark.parametrize("label,make", MODELS, ids=[m[0] for m in MODELS])
def test_no_builder_method_stores_a_physical_value_twice(label, make):
    mech, params, _, _ = make().build()
    if label.endswith(".add_spring"):  # (its free length equals the base beam's element
        return                         # length by coincidence: 0.5 m both; not a copy)
    assert _stored_twice(mech, params) == []


def _disc(radius=0.3, v=1.5):
    m = mb.SpatialModel(gravity=(0.0, 0.0, -9.81))
    m.add_body("disc", mass=1.0, inertia=(0.25, 0.5, 0.25), position=(0.0, 0.0, radius),
               velocity=(v, 0.0, 0.0), angular_velocity=(0.0, v / radius, 0.0))
    m.add_rolling_disc("roll", "disc", radius=radius, axle=(0.0, 1.0, 0.0))
    return m.build()


def test_rolling_disc_radius_is_one_leaf_its_replace_moves_contact_and_rolling_alike():
    """replace(roll.radius) changes the contact row and the no-slip rows: assembled, the
    centre sits at the new radius and the disc rolls with v / omega = the new radius."""
    mech, params, q0, v0 = _disc()
    assert [k for k in mech.param_names() if k.startswith("roll.")] == [
        "roll.point_i", "roll.n_i", "roll.point_j", "roll.a_j", "roll.radius"]
    p = mech.replace(params, {"roll.radius": 0.35})
    asm = mb.assemble(mech, p, q0, v0)
    assert int(asm.status) == 0
    tr = mb.simulate(mech, p, asm.q, asm.v, (0.0, 0.05), 1e-3)
    assert int(tr.status) == 0
    iv = mech.velocity_names()
    vx, wy = np.asarray(tr.v[-1])[iv.index("disc.x")], np.asarray(tr.v[-1])[iv.index("disc.wy")]
    np.testing.assert_allclose(float(tr.q[-1][mech.coordinate_index("disc.z")]), 0.35, atol=1e-9)
    np.testing.assert_allclose(vx / wy, 0.35, rtol=1e-9)
    # and in a batch: one radius per member
    radii = jnp.array([0.25, 0.4])
    ps = jax.vmap(lambda r: mech.replace(params, {"roll.radius": r}))(radii)
    asm = jax.vmap(lambda pp: mb.assemble(mech, pp, q0, v0))(ps)
    np.testing.assert_allclose(asm.v[:, iv.index("disc.x")] / asm.v[:, iv.index("disc.wy")], radii,
                               rtol=1e-9)


def test_joint_features_read_the_joints_geometry_instead_of_copies():
    """Drivers, springs, armatures and actuators on a spatial joint read its axes and
    points: they have no keys of their own for them, and replacing the joint's point moves
    the driver's row with the joint's."""
    m = mb.SpatialModel(gravity=(0.0, 0.0, 0.0))
    m.add_body("a", mass=1.0, inertia=(0.01, 0.02, 0.03), position=(0.5, 0.0, 0.0))
    m.add_body("w", mass=1.0, inertia=(0.02, 0.02, 0.04), position=(3.0, 0.0, 0.5))
    m.add_revolute("R", "ground", "a", at=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    m.add_prismatic("S", "ground", "w", at=(3.0, 0.0, 0.5), axis=(1.0, 0.0, 0.0))
    m.drive_joint("dr", "R", mb.constant_velocity(1.0))
    m.drive_joint("ds", "S", mb.constant_velocity(0.1))
    m.add_torsion_spring("ts", "R", k=1.0)
    m.add_armature("arm", "R", inertia=0.1)
    m.add_joint_actuator("act", "R", control=0)
    m.add_axial_spring("ax", "S", k=10.0)
    mech, params, q0, v0 = m.build()
    names = set(mech.param_names())
    copies = {f"{j}.{f}" for j in ("dr", "ts", "arm", "act") for f in ("f_i", "g_i")}
    copies |= {f"{j}.{f}" for j in ("ds", "ax") for f in ("point_i", "point_j")}
    copies |= {f"{j}.point_j" for j in ("arm", "act")}
    assert not copies & names, sorted(copies & names)
    # the prismatic's point on the ground moved by 0.1 along the axis: its line rows and
    # the driver's displacement row (reading the same point) change together
    rows = lambda j: np.asarray(mech.joint(j).rows)
    p = mech.replace(params, {"S.point_i": jnp.array([3.1, 0.0, 0.5])})
    d0 = constraint_terms(mech, params, q0, v0, 0.0).phi
    d1 = constraint_terms(mech, p, q0, v0, 0.0).phi
    np.testing.assert_allclose(float(d1[rows("ds")][0] - d0[rows("ds")][0]), -0.1, atol=1e-12)


def test_a_material_points_element_length_is_the_beam_nodes_leaf():
    """A pin at the material point xi of an element reads the element's length leaf
    '<node>.length': replacing it moves the pin's material point (its rows change) and
    the pin has no length key of its own."""
    m = mb.Model(gravity=(0.0, 0.0))
    nodes = m.add_beam("b", (0.0, 0.0), (1.0, 0.0), elements=2,
                       section=dict(E=2e11, rho=7800.0, A=1e-4, I=1e-9))
    m.add_node_weld("clamp", nodes[0])
    m.add_beam_body_pin("pin", nodes[0], "ground", xi=0.25)
    mech, params, q0, v0 = m.build()
    assert "pin.length" not in mech.param_names()
    rows = np.asarray(mech.joint("pin").rows)
    p = mech.replace(params, {f"{nodes[0]}.length": 0.6})
    phi = constraint_terms(mech, p, q0, v0, 0.0).phi[rows]
    assert float(jnp.max(jnp.abs(constraint_terms(mech, params, q0, v0, 0.0).phi[rows]))) < 1e-14
    assert float(jnp.max(jnp.abs(phi))) > 1e-3  # (the material point xi = 0.25 moved)


def test_a_prismatic_slider_after_a_plain_one_has_its_own_axis_key():
    """The angle row of the second slider is the first instance of its family: its key
    points at that row (it pointed past the leaf, and replace raised IndexError)."""
    m = mb.Model(gravity=(0.0, -9.81))
    nb = m.add_beam("b", (0.0, 0.0), (1.0, 0.0), elements=2,
                    section=dict(E=2e11, rho=7800.0, A=1e-4, I=1e-9))
    m.add_node_weld("clamp", nb[0])
    m.add_particle("bead", mass=0.05, position=(0.3, 0.0))
    m.add_beam_slider("s1", "b", "bead")
    m.add_body("collar", mass=0.05, inertia=1e-5, position=(0.7, 0.0))
    m.add_beam_slider("s2", "b", "collar", prismatic=True)
    mech, params, _, _ = m.build()
    assert [k for k in mech.param_names() if k.startswith("s")] == ["s1.point_j", "s2.point_j", "s2.axis_j"]
    p = mech.replace(params, {"s2.axis_j": jnp.array([0.0, 1.0])})
    np.testing.assert_array_equal(np.asarray(p.joints["beam_slider_angle"]["axis_j"]), [[0.0, 1.0]])
