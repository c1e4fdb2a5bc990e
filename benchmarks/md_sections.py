"""Generated sections of VALIDATION.md kept between HTML-comment markers.

benchmarks/accuracy.py writes sections 1-8 and rewrites the whole file; the scripts that
own a later section (benchmarks/formulations.py: section 9, benchmarks/flexible_validation.py:
section 10) replace only the block between their markers, and accuracy.py keeps those
blocks (`SECTIONS`, in this order) when it rewrites the file.
"""
from __future__ import annotations

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VALIDATION_MD = os.path.join(ROOT, "VALIDATION.md")

# (begin, end) markers of the blocks kept across accuracy.py rewrites, in file order
SECTIONS = (("<!-- formulations:begin -->", "<!-- formulations:end -->"),
            ("<!-- flexible:begin -->", "<!-- flexible:end -->"))


def extract_section(text, begin, end):
    """The block between `begin` and `end` (markers included) of a text, or ""."""
    i, j = text.find(begin), text.find(end)
    return text[i:j + len(end)] if 0 <= i < j else ""


def write_section(md, begin, end, path=VALIDATION_MD):
    """Replace the block between `begin` and `end` in the file at `path` by `md` (which
    starts with `begin` and ends with `end`), or append it at the end of the file."""
    text = open(path).read() if os.path.exists(path) else ""
    if begin in text and end in text:
        a, rest = text.split(begin, 1)
        b = rest.split(end, 1)[1]
        text = a + md + b
    else:
        text = text.rstrip("\n") + "\n\n" + md + "\n"
    with open(path, "w") as fh:
        fh.write(text)


def kept_sections(text):
    """The blocks of `SECTIONS` present in `text`, joined by blank lines ("" if none)."""
    return "\n\n".join(s for s in (extract_section(text, b, e) for b, e in SECTIONS) if s)
