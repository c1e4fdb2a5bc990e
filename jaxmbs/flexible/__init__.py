"""Flexible bodies: planar ANCF Euler-Bernoulli beam elements, spatial ANCF cables,
shear-deformable planar beams and floating-frame-of-reference (modal) bodies.

`jaxmbs.flexible.ancf` defines and registers the families (frame kind 'ancf2d', node
family 'ancf2d_node', body family 'ancf2d_beam', constraint families 'ancf_point',
'ancf_slope', 'beam_point', 'beam_slope', 'beam_beam_point', 'beam_beam_slope', 'beam_slider',
'beam_slider_angle', force families 'ancf_load', 'beam_load' and 'beam_follower'); `jaxmbs/__init__.py`
imports it after the planar and spatial packages, so they keep their registration order.
`jaxmbs.flexible.build` and `build_beams` hold the builder methods of `jaxmbs.Model` (`add_beam`,
`add_node_pin`, `add_node_weld`, `add_node_load`, `add_node_torque`, ...) and of
`jaxmbs.SpatialModel` (`CableBuilder`); `jaxmbs.flexible.ancf3d` registers the spatial
cable families (frame kind 'ancf3d', node family 'ancf3d_node', body family
'ancf3d_cable', constraint families 'ancf3d_point', 'ancf3d_slope', 'ancf3d_parallel',
'beam3d_point', 'beam3d_slope', 'beam3d_beam_point' on the view kind 'spatial_beam',
force families 'ancf3d_load', 'beam3d_load', 'beam3d_follower'), imported by `jaxmbs/__init__.py` after `ancf`.
`jaxmbs.flexible.reissner` registers the shear-deformable planar beam (geometrically exact
Simo-Reissner / Timoshenko, linear elements with one-point reduced integration, free of
shear locking): node family 'reissner2d_node' (x, y, theta) presenting planar frames, so
the planar joints, springs and loads apply to its nodes, and body family 'reissner2d_beam'
(`Model.add_shear_beam`), imported after `ancf3d`. `jaxmbs.flexible.ffr` registers the
floating-frame-of-reference bodies with modal reduction (frame kind 'ffr2d', node and body
families 'ffr2d_m<m>' / 'ffr2d_body_m<m>' for m = 1..8 modes, constraint families
'ffr_point', 'ffr_angle', force family 'ffr_load'; the planar kind views 'ffr2d' frames),
imported after `reissner`; `jaxmbs.flexible.ffr_build` holds `Model.add_ffr_beam` and
`Model.add_ffr_body` (and imports `ffr` lazily). This package file imports none of
them, so that the builder can import `jaxmbs.flexible.build` without registering families
early.
"""
