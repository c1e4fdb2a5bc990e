"""Count the fault-injection suite: bad inputs tried and refused per entry point, kills of
run_batch survived; prints a Markdown table for VALIDATION.md.

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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def markdown(tally: dict) -> str:
    lines = ["| entry point | tried | survived | details |", "|---|---|---|---|"]
    for entry in sorted(tally):
        kinds = dict(tally[entry])
        if "bad inputs tried" in kinds:
            tried = kinds.pop("bad inputs tried")
            ok = kinds.pop("refused, naming the item", 0)
            what = ("bad option or model file: exit status 2, one line naming it, no traceback"
                    if "CLI" in entry else "bad input: ValueError naming the item")
            lines.append(f"| {entry} | {tried} | {ok} | {what} |")
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
    args = ap.parse_args(argv)
    path = os.path.abspath(args.json)
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
    return r.returncode


if __name__ == "__main__":
    sys.exit(main())
