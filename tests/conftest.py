import os
import sys

# Tests compile far more than they run: XLA:CPU's LLVM at -O0 compiles in about 0.7x the
# time, the programs then run slower, and the results stay within every test's tolerance.
# Set before jax starts (the subprocesses the tests start inherit it); benchmarks never set
# it. JAXMBS_TEST_XLA_OPT=1 keeps XLA's default optimisation.
if os.environ.get("JAXMBS_TEST_XLA_OPT", "0") != "1":
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_backend_optimization_level=0").strip()

import jax

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
jax.config.update("jax_enable_x64", True)
sys.path.insert(0, ROOT)

# One persistent compilation cache for the test run, shared by the pytest-xdist workers and
# the subprocesses the tests start (CLI, examples): a program that several test modules or
# both workers compile is compiled once (the in-memory caches are dropped after every module,
# below). Keys are the programs themselves, so a stale entry is never used for new code.
# JAXMBS_TEST_CACHE=<dir> puts it elsewhere; JAXMBS_TEST_CACHE=off turns it off.
_CACHE = os.environ.get("JAXMBS_TEST_CACHE") or os.path.join(ROOT, ".pytest_cache", "jax")
if _CACHE != "off":
    os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", _CACHE)
    os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.2")
    jax.config.update("jax_compilation_cache_dir", os.environ["JAX_COMPILATION_CACHE_DIR"])
    jax.config.update("jax_persistent_cache_min_compile_time_secs",
                      float(os.environ["JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"]))

import pytest


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's compiled programs after each test module.

    The whole suite runs in one process and compiles a few thousand XLA programs; keeping
    all of them alive made XLA:CPU abort while compiling late in the run (CI, 2026-11-26).
    Each module's programs are of no use to the next one."""
    yield
    jax.clear_caches()


# Worker seconds per test file in the default run (`--durations=0`, 2 workers, 2026-11-27;
# the files above 60 s). With `--dist loadfile --no-loadscope-reorder` (pyproject) the two
# workers take whole files in collection order, so the heaviest go first and the run ends
# on small files instead of one worker finishing a long file alone. Files not listed keep
# their order after these. A stale figure only costs balance, never a test.
_FILE_SECONDS = {
    "test_spatial.py": 515, "test_elementwise.py": 481, "test_banded.py": 358,
    "test_conformance.py": 342, "test_envs.py": 335, "test_gradients.py": 233,
    "test_spatial_core.py": 188, "test_spatial_references.py": 176, "test_examples.py": 150,
    "test_formulations.py": 147, "test_integrators_implicit.py": 140, "test_dynamics.py": 138,
    "test_faults.py": 132, "test_reliability.py": 129, "test_linear.py": 126,
    "test_notebooks.py": 123, "test_fitting.py": 119, "test_engine_balance.py": 109,
    "test_ffr.py": 103, "test_import_mujoco.py": 100, "test_integrators.py": 98,
    "test_cam.py": 81, "test_batch_and_errors.py": 76, "test_ancf3d.py": 70,
    "test_validation.py": 68, "test_ancf.py": 64, "test_joints_more.py": 63,
}


def pytest_collection_modifyitems(config, items):
    """Heaviest test files first (stable: each file's tests keep their order)."""
    items.sort(key=lambda it: -_FILE_SECONDS.get(it.path.name, 0))
