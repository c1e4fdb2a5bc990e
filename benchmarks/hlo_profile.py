"""Static profile of a compiled XLA program from ``compiled.as_text()``.

XLA:CPU runs every top-level instruction of a computation as one kernel (a fusion, a
dot, a custom call, a copy, ...), each a full pass over its batch-sized operands.  For
small-matrix work vmapped over a large batch the cost is therefore roughly
(number of kernels) x (bytes each one moves), not flops.  This module counts, for every
``while`` loop (``lax.scan``: the step loop, the RK-stage loop, ...), the kernels of its
body by kind, what the fusions contain (gathers, scatters, dots, reductions), LAPACK /
other custom calls, and the bytes the kernels write and read.

    prof = profile(compiled.as_text(), batch=4096, step_trip=20)
    prof["per_step"]        # kernels and bytes per integration step (nested loops x trips)
    prof["loops"]           # every while loop: trip count, depth, kernel histogram

``time_profile(xplane_path, compiled.as_text())`` adds measured time: it reads a
``jax.profiler.trace`` capture (XLA:CPU records one event per executed kernel, named
after its HLO instruction) and sums the kernel time by kernel class and by the jaxmbs
source line the kernel came from (the HLO's stack-frame tables).
"""
from __future__ import annotations

import os
import re
from collections import Counter

_DT_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4,
             "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}
_SHAPE_RE = re.compile(r"\b(pred|[sufc]\d+|bf16)\[([0-9,]*)\]")
_COMP_RE = re.compile(r"^(ENTRY\s+)?%?([^\s(]+)\s*\(.*\)\s*->\s*.*\{\s*$")
_INSTR_RE = re.compile(r"^\s*(ROOT\s+)?%?([^\s=]+)\s*=\s*(.*)$")
_NOOP = {"parameter", "get-tuple-element", "tuple", "constant", "bitcast", "after-all",
         "opt-barrier", "partition-id", "replica-id", "iota"}


def shape_bytes(s: str) -> int:
    """Total bytes of every array shape in a (possibly tuple) HLO type string."""
    tot = 0
    for dt, dims in _SHAPE_RE.findall(s):
        n = 1
        for d in dims.split(","):
            if d:
                n *= int(d)
        tot += n * _DT_BYTES.get(dt, 8)
    return tot


def _split_type(rest: str):
    """'TYPE opcode(operands), attrs' -> (type, opcode, operands-string, attrs)."""
    rest = rest.strip()
    if rest.startswith("("):
        depth, i = 0, 0
        for i, ch in enumerate(rest):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                break
        typ, rest = rest[: i + 1], rest[i + 1:].strip()
    else:
        typ, _, rest = rest.partition(" ")
        rest = rest.strip()
    m = re.match(r"([a-zA-Z0-9_\-]+)\((.*)", rest)
    if not m:
        return typ, rest.split(",")[0], "", ""
    opcode, tail = m.group(1), m.group(2)
    depth, i = 1, 0
    for i, ch in enumerate(tail):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            break
    return typ, opcode, tail[:i], tail[i + 1:]


def parse(text: str) -> dict:
    """{computation name: [instruction dict(name, type, opcode, operands, attrs)]}."""
    comps, cur = {}, None
    for line in text.splitlines():
        if cur is None:
            m = _COMP_RE.match(line)
            if m:
                cur = m.group(2)
                comps[cur] = []
                if m.group(1):
                    comps["__entry__"] = cur
            continue
        if line.startswith("}"):
            cur = None
            continue
        m = _INSTR_RE.match(line)
        if not m:
            continue
        typ, opcode, ops, attrs = _split_type(m.group(3))
        operands = re.findall(r"%([^\s,)]+)", ops)
        comps[cur].append(dict(name=m.group(2), type=typ, opcode=opcode, operands=operands,
                               attrs=attrs))
    return comps


def _called(attrs: str, key: str):
    m = re.search(key + r"=%?([^\s,}]+)", attrs)
    return m.group(1) if m else None


def _fused_content(comps, name, seen=None) -> Counter:
    """Opcode histogram inside a fused computation (recursively)."""
    seen = set() if seen is None else seen
    c = Counter()
    if name in seen or name not in comps:
        return c
    seen.add(name)
    for ins in comps[name]:
        c[ins["opcode"]] += 1
        sub = _called(ins["attrs"], "calls")
        if sub:
            c.update(_fused_content(comps, sub, seen))
    return c


def _classify(comps, ins):
    """(kernel class, custom-call target) of a top-level instruction."""
    op = ins["opcode"]
    if op == "fusion":
        inner = _fused_content(comps, _called(ins["attrs"], "calls"))
        for k in ("scatter", "gather", "dot", "convolution", "custom-call", "sort", "reduce",
                  "reduce-window", "dynamic-update-slice", "dynamic-slice", "transpose",
                  "concatenate"):
            if inner.get(k):
                return f"fusion[{k}]", None
        return "fusion[elementwise]", None
    if op == "custom-call":
        m = re.search(r'custom_call_target="([^"]+)"', ins["attrs"])
        return "custom-call", m.group(1) if m else "?"
    return op, None


def _trip(ins):
    m = re.search(r'"known_trip_count":\{"n":"(\d+)"\}', ins["attrs"])
    return int(m.group(1)) if m else None


def body_profile(comps, name) -> dict:
    """Kernel histogram and bytes of one computation's top-level instructions.

    Nested while loops are listed in 'nested' as (body name, trip count), not counted.
    """
    kinds, targets, nested = Counter(), Counter(), []
    sizes = {}
    wbytes = rbytes = 0
    for ins in comps.get(name, []):
        sizes[ins["name"]] = shape_bytes(ins["type"])
    for ins in comps.get(name, []):
        op = ins["opcode"]
        if op == "while":
            nested.append((_called(ins["attrs"], "body"), _trip(ins)))
            continue
        if op in ("conditional", "call"):
            kinds[op] += 1
            continue
        if op in _NOOP:
            continue
        k, tgt = _classify(comps, ins)
        kinds[k] += 1
        if tgt:
            targets[tgt] += 1
        wbytes += sizes[ins["name"]]
        rbytes += sum(sizes.get(o, 0) for o in ins["operands"])
    return dict(kernels=sum(kinds.values()), kinds=dict(kinds), custom_calls=dict(targets),
                bytes_written=wbytes, bytes_read=rbytes, nested=nested)


def _loops(comps, name, depth, out, seen):
    prof = body_profile(comps, name)
    for body, trip in prof["nested"]:
        if body in seen:
            continue
        seen.add(body)
        bp = body_profile(comps, body)
        out.append(dict(body=body, trip_count=trip, depth=depth, **{k: v for k, v in bp.items()
                                                                    if k != "nested"},
                        nested=[(b, t) for b, t in bp["nested"]]))
        _loops(comps, body, depth + 1, out, seen)
    return out


def _total(comps, name, mult=1):
    """Kernels / bytes of a computation including nested loops times their trip counts."""
    p = body_profile(comps, name)
    tot = Counter(kernels=p["kernels"] * mult, bytes_written=p["bytes_written"] * mult,
                  bytes_read=p["bytes_read"] * mult)
    kinds = Counter({k: v * mult for k, v in p["kinds"].items()})
    cc = Counter({k: v * mult for k, v in p["custom_calls"].items()})
    for body, trip in p["nested"]:
        t, k2, c2 = _total(comps, body, mult * (trip or 1))
        tot.update(t)
        kinds.update(k2)
        cc.update(c2)
    return tot, kinds, cc


def profile(text: str, batch: int = 1, step_trip: int | None = None) -> dict:
    """Kernel counts of the compiled program; see the module docstring.

    step_trip: trip count of the integration-step loop (the chunk length) to identify it;
    the outermost loop with that trip count is taken (else the outermost loop).
    Bytes are also given per mechanism (divided by ``batch``).
    """
    comps = parse(text)
    entry = comps.get("__entry__")
    loops = _loops(comps, entry, 0, [], set()) if entry else []
    step = None
    for lp in loops:
        if step_trip is not None and lp["trip_count"] == step_trip:
            step = lp
            break
    if step is None and entry and (step_trip == 1 or not loops):
        # a 1-step chunk: XLA removed the step loop, the entry computation is one step
        # (plus the two evaluations of the saved-state diagnostics)
        step = dict(body=entry, trip_count=1, depth=-1, nested=body_profile(comps, entry)["nested"])
    if step is None and loops:
        step = loops[0]
    out = dict(n_computations=len(comps) - 1, loops=[{k: v for k, v in lp.items() if k != "body"}
                                                      for lp in loops])
    if step is not None:
        tot, kinds, cc = _total(comps, step["body"])
        stage = [lp for lp in loops if lp["body"] in [b for b, _ in step["nested"]]]
        out["step_loop"] = "entry computation (1-step chunk)" if step["depth"] == -1 else \
            f"while loop, trip count {step['trip_count']}"
        out["per_step"] = dict(kernels=tot["kernels"], kinds=dict(kinds), custom_calls=dict(cc),
                               bytes_written_per_mech=tot["bytes_written"] / batch,
                               bytes_read_per_mech=tot["bytes_read"] / batch)
        if stage:
            s = stage[0]
            out["per_stage_loop"] = dict(trip_count=s["trip_count"], kernels=s["kernels"],
                                         kinds=s["kinds"], custom_calls=s["custom_calls"],
                                         bytes_written_per_mech=s["bytes_written"] / batch,
                                         bytes_read_per_mech=s["bytes_read"] / batch)
            own = body_profile(comps, step["body"])
            out["per_step_outside_stages"] = dict(kernels=own["kernels"], kinds=own["kinds"],
                                                  custom_calls=own["custom_calls"])
    return out


def format_profile(p: dict) -> str:
    """A few human-readable lines."""
    lines = []
    ps = p.get("per_step")
    if ps:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(ps["kinds"].items(), key=lambda kv: -kv[1]))
        lines.append(f"per step: {ps['kernels']} kernels ({kinds}); custom calls "
                     f"{ps['custom_calls'] or 'none'}; ~{ps['bytes_written_per_mech']:.0f} B written, "
                     f"~{ps['bytes_read_per_mech']:.0f} B read per mechanism")
    st = p.get("per_stage_loop")
    if st:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(st["kinds"].items(), key=lambda kv: -kv[1]))
        lines.append(f"per RK stage (loop body x{st['trip_count']}): {st['kernels']} kernels ({kinds})")
    ou = p.get("per_step_outside_stages")
    if ou:
        kinds = ", ".join(f"{k} {v}" for k, v in sorted(ou["kinds"].items(), key=lambda kv: -kv[1]))
        lines.append(f"per step outside the stage loop (RK update, projection, checks): "
                     f"{ou['kernels']} kernels ({kinds})")
    return "\n".join(lines)


# ------------------------------------------------------------------ source attribution
def _tables(text: str):
    """FileNames, FunctionNames, FileLocations, StackFrames tables of the HLO text."""
    files, funcs, locs, frames = {}, {}, {}, {}
    section = None
    for line in text.splitlines():
        if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            section = line
            continue
        if section is None:
            continue
        if not line.strip():
            continue
        m = re.match(r"^(\d+) (.*)$", line)
        if not m:
            if line.startswith("%") or line.startswith("ENTRY") or "{" in line.split(" ")[0]:
                section = None
            continue
        k, rest = int(m.group(1)), m.group(2)
        if section == "FileNames":
            files[k] = rest.strip('"')
        elif section == "FunctionNames":
            funcs[k] = rest.strip('"')
        elif section == "FileLocations":
            d = dict(re.findall(r"(\w+)=(\d+)", rest))
            locs[k] = (int(d.get("file_name_id", 0)), int(d.get("function_name_id", 0)),
                       int(d.get("line", 0)))
        elif section == "StackFrames":
            d = dict(re.findall(r"(\w+)=(\d+)", rest))
            frames[k] = (int(d.get("file_location_id", 0)), int(d.get("parent_frame_id", 0)))
    return files, funcs, locs, frames


def source_of(tables, frame_id, package="jaxmbs"):
    """'file.py:line function' of the innermost frame inside `package` (else the innermost)."""
    files, funcs, locs, frames = tables
    seen, first, fid = set(), None, frame_id
    while fid in frames and fid not in seen:
        seen.add(fid)
        loc, parent = frames[fid]
        if loc in locs:
            f, fn, line = locs[loc]
            path = files.get(f, "?")
            s = f"{os.path.basename(path)}:{line} {funcs.get(fn, '?')}"
            first = first or s
            if f"/{package}/" in path:
                rel = path.split(f"/{package}/", 1)[1]
                return f"{rel}:{line} {funcs.get(fn, '?')}"
        if parent == fid:
            break
        fid = parent
    return first or "?"


def instruction_index(text: str) -> dict:
    """{instruction name: (kernel class, source)} of every non-trivial instruction."""
    comps = parse(text)
    tables = _tables(text)
    out = {}
    for cname, instrs in comps.items():
        if cname == "__entry__":
            continue
        for ins in instrs:
            op = ins["opcode"]
            if op in _NOOP:
                continue
            k, tgt = _classify(comps, ins)
            if tgt:
                k = f"custom-call[{tgt}]"
            m = re.search(r"stack_frame_id=(\d+)", ins["attrs"])
            src = source_of(tables, int(m.group(1))) if m else "?"
            out[ins["name"]] = (k, src)
    return out


def time_profile(xplane_path: str, text: str, wall_s: float | None = None, top: int = 12) -> dict:
    """Kernel time by class / source line / kernel from a jax.profiler trace (XLA:CPU)."""
    from jax.profiler import ProfileData

    idx = instruction_index(text)
    pd = ProfileData.from_file(xplane_path)
    by_kernel = {}
    threads = set()
    durations = []
    for plane in pd.planes:
        for line in plane.lines:
            for ev in line.events:
                info = idx.get(ev.name)
                if info is None or info[0] in ("while", "conditional", "call"):
                    continue
                threads.add(line.name)
                d = by_kernel.setdefault(ev.name, [info[0], info[1], 0, 0.0])
                d[2] += 1
                d[3] += ev.duration_ns * 1e-9
                durations.append(ev.duration_ns * 1e-3)
    total = sum(v[3] for v in by_kernel.values())
    by_class, by_src = Counter(), Counter()
    for k, (cls, src, n, t) in by_kernel.items():
        by_class[cls] += t
        by_src[src] += t
    pct = lambda t: 100.0 * t / total if total else 0.0
    out = dict(kernel_seconds=total, threads=len(threads),
               by_class=[(c, t, pct(t)) for c, t in by_class.most_common()],
               by_source=[(s, t, pct(t)) for s, t in by_src.most_common(top)],
               top_kernels=[(k, v[0], v[1], v[2], v[3], pct(v[3]))
                            for k, v in sorted(by_kernel.items(), key=lambda kv: -kv[1][3])[:top]])
    if durations:
        import numpy as np
        q = np.quantile(np.asarray(durations), [0.1, 0.5, 0.9])
        out.update(kernel_calls=len(durations), kernel_us_p10=float(q[0]),
                   kernel_us_median=float(q[1]), kernel_us_p90=float(q[2]))
    if wall_s:
        out["wall_s"] = wall_s
        out["kernel_time_over_wall"] = total / wall_s
    return out


def format_time_profile(tp: dict, n_classes: int = 8, n_src: int = 8) -> str:
    lines = [f"kernel time {tp['kernel_seconds'] * 1e3:.1f} ms on {tp['threads']} threads"
             + (f" (wall {tp['wall_s'] * 1e3:.1f} ms)" if tp.get("wall_s") else "")]
    lines.append("  by class:  " + ", ".join(f"{c} {p:.0f}%" for c, _, p in tp["by_class"][:n_classes]))
    lines.append("  by source: " + "; ".join(f"{s} {p:.0f}%" for s, _, p in tp["by_source"][:n_src]))
    return "\n".join(lines)
