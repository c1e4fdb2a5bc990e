"""Every notebook's code cells run top to bottom without error (no Jupyter needed).

Each notebook runs in a fresh Python process, as in a fresh kernel: it gets no state from
the test session (not its float64 setting, not its compilation caches). Long pytest
processes that had compiled hundreds of programs were seen to crash XLA:CPU while
compiling the RL notebook's gradient (jaxlib 0.10.2, segmentation fault); the same
notebook passes in a process of its own, which is how users run it.
"""
import glob
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))

RUNNER = """
import json, sys
path = sys.argv[1]
ns = {"__name__": "__notebook__"}
for k, cell in enumerate(json.load(open(path))["cells"]):
    if cell["cell_type"] == "code":
        exec(compile("".join(cell["source"]), f"{path} [cell {k}]", "exec"), ns)
"""


# rl.ipynb (~55 s on 2 cores) and fitting.ipynb (~45 s) are slow: the environments run in
# tests/test_envs.py, the fitting notebook's calls (Trainable, fit, analyze,
# linear_regressor) in tests/test_fitting.py
SLOW = ("rl.ipynb", "fitting.ipynb")


@pytest.mark.parametrize("path", [pytest.param(p, marks=pytest.mark.slow) if os.path.basename(p) in SLOW else p
                                  for p in NOTEBOOKS], ids=[os.path.basename(p) for p in NOTEBOOKS])
def test_notebook_runs(path):
    env = dict(os.environ, MPLBACKEND="Agg")
    r = subprocess.run([sys.executable, "-c", RUNNER, path], capture_output=True, text=True,
                       timeout=1200, cwd=os.path.join(ROOT, "notebooks"), env=env)
    assert r.returncode == 0, f"{os.path.basename(path)} failed (exit {r.returncode}):\n{r.stderr[-3000:]}"
