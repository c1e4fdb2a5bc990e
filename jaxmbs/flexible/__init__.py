"""Flexible bodies: planar ANCF Euler-Bernoulli beam elements.

`jaxmbs.flexible.ancf` defines and registers the families (frame kind 'ancf2d', node
family 'ancf2d_node', body family 'ancf2d_beam', constraint families 'ancf_point' and
'ancf_slope', force families 'ancf_load' and 'beam_follower'); `jaxmbs/__init__.py`
imports it after the planar and spatial packages, so they keep their registration order.
`jaxmbs.flexible.build` holds the builder methods of `jaxmbs.Model` (`add_beam`,
`add_node_pin`, `add_node_weld`, `add_node_load`, `add_node_torque`, ...). This package
file imports neither, so that the builder can import `jaxmbs.flexible.build` without
registering families early.
"""
