"""Experimental tools: useful, measured, but resting on JAX internals that change between
releases. Nothing here is part of jaxmbs's stable API; each module says what it depends on
and checks, in one place, that the installed jax provides it (see `elementwise.support`).
"""
