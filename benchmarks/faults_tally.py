"""Count the fault-injection suite: bad inputs tried and refused per entry point (builder
methods summed per builder), traced bad inputs that set their status, poisoned batch
members, kills of run_batch survived; prints a Markdown table for VALIDATION.md.

    python benchmarks/faults_tally.py            # the default (fast) cases
    python benchmarks/faults_tally.py --slow     # also the slow ones (10 more kills)
    options: --json FILE (default benchmarks/results/faults.json)

Runs `pytest tests/test_faults.py` with JAXMBS_FAULTS_TALLY set, so that the module writes
its tally (see the module docstring of tests/test_faults.py); the pytest exit status is
passed on. A case counts as survived only when its test passed: "refused, naming the
item" is counted after every assertion of the case.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _grouped(tally: dict) -> dict:
    """Builder methods ('Model.add_body', 'SpatialModel.add_spherical', ...) summed into one
    row per builder, with the number of methods."""
    out, methods = {}, {}
    for entry, kinds in tally.items():
        head, dot, _ = entry.partition(".")
        if dot and head in ("Model", "SpatialModel"):
            key = f"{head} builder"
            methods[key] = methods.get(key, 0) + 1
            row = out.setdefault(key, {})
            for k, n in kinds.items():
                row[k] = row.get(k, 0) + n
        else:
            out[entry] = dict(kinds)
    for key, n in methods.items():
        out[key]["methods"] = n
    return out


def markdown(tally: dict) -> str:
    lines = ["| entry point | tried | survived | details |", "|---|---|---|---|"]
    tally = _grouped(tally)
    for entry in sorted(tally):
        kinds = dict(tally[entry])
        if "bad inputs tried" in kinds:
            tried = kinds.pop("bad inputs tried")
            ok = kinds.pop("refused, naming the item", 0)
            if "CLI" in entry:
                what = "bad option or model file: exit status 2, one line naming it, no traceback"
            elif "builder" in entry:
                what = (f"every one of its {kinds.pop('methods', 0)} public methods, one bad argument "
                        "at a time: ValueError naming it, the builder unchanged, the name free")
            else:
                what = "bad input: ValueError naming the item"
            lines.append(f"| {entry} | {tried} | {ok} | {what} |")
        elif "traced bad inputs tried" in kinds:
            tried = kinds.pop("traced bad inputs tried")
            ok = kinds.pop("status set as documented", 0)
            lines.append(f"| {entry} | {tried} | {ok} | bad input under jit / vmap: its member's "
                         "documented status flag, the healthy member's status 0 |")
        elif "batches" in kinds:
            n = kinds.pop("batches")
            same = kinds.pop("healthy members bit-identical", 0)
            lines.append(f"| {entry} | {n} batch(es) of 200, 1 % poisoned | {same} healthy members "
                         "bit-identical | poisoned members flagged; the others bit for bit those "
                         "of the batch without poison |")
        else:
            kills = kinds.pop("kills", 0)
            same = kinds.pop("resumed runs bit-identical to the uninterrupted run", 0)
            runs = kinds.pop("runs", 0)
            rest = ", ".join(f"{v} {k}" for k, v in sorted(kinds.items()))
            lines.append(f"| {entry} | {kills} kills (SIGKILL) in {runs} runs | {same} of {runs} "
                         f"resumed runs bit-identical | {rest} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--slow", action="store_true", help="also run the slow cases")
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results", "faults.json"),
                    help="where to write the tally (default benchmarks/results/faults.json)")
    ap.add_argument("--write-md", action="store_true",
                    help="replace section 8 of VALIDATION.md with the tally (from --json; with "
                    "--no-run, without running the tests)")
    ap.add_argument("--no-run", action="store_true", help="use the tally already in --json")
    args = ap.parse_args(argv)
    path = os.path.abspath(args.json)
    if args.no_run:
        return write_md(path) if args.write_md else 0
    if os.path.exists(path):
        os.remove(path)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           os.path.join(ROOT, "tests", "test_faults.py")]
    if args.slow:
        cmd += ["-m", "slow or not slow"]
    r = subprocess.run(cmd, cwd=ROOT, env={**os.environ, "JAXMBS_FAULTS_TALLY": path})
    if not os.path.exists(path):
        print("no tally was written (did the tests run?)", file=sys.stderr)
        return r.returncode or 1
    with open(path) as f:
        tally = json.load(f)
    print(markdown(tally))
    if args.write_md and r.returncode == 0:
        write_md(path)
    return r.returncode


def write_md(path) -> int:
    """Replace (or append) section 8 of VALIDATION.md, rendered as accuracy.py renders it."""
    import accuracy
    md_path = os.path.join(ROOT, "VALIDATION.md")
    with open(md_path) as f:
        text = f.read()
    from md_sections import kept_sections  # sections 9 and 10 follow section 8: keep them

    head = text.split(accuracy.FAULTS_HEADING)[0].rstrip("\n") + "\n\n"
    tail = kept_sections(text)
    with open(md_path, "w") as f:
        f.write(head + "\n".join(accuracy.faults_section(path)).rstrip("\n") + "\n"
                + ("\n" + tail + "\n" if tail else ""))
    print(f"wrote section 8 of {md_path} from {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
