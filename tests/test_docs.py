"""Code in the documentation runs: the worked example of docs/dev/adding-a-family.md (its
last Python block builds, simulates and checks a mechanism with the family it adds)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _python_blocks(path):
    text = open(os.path.join(ROOT, path)).read()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_adding_a_family_example_runs():
    blocks = _python_blocks("docs/dev/adding-a-family.md")
    assert len(blocks) >= 3 and "add_point_on_cylinder(" in blocks[-1]
    exec(compile(blocks[-1], "docs/dev/adding-a-family.md", "exec"), {})
