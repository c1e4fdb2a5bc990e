import os
import sys

import jax

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytest


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's compiled programs after each test module.

    The whole suite runs in one process and compiles a few thousand XLA programs; keeping
    all of them alive made XLA:CPU abort while compiling late in the run (CI, 2026-11-26).
    Each module's programs are of no use to the next one."""
    yield
    jax.clear_caches()
