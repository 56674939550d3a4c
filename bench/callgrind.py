#!/usr/bin/env python3
"""Per-call figures from two callgrind output files (see bench/callgrind.sh).

    callgrind.py per-call A.cg B.cg N1 N2   -> "Ir/call syscalls/call clock_reads/call"
    callgrind.py profile A.cg B.cg N1 N2 [TOP]
    callgrind.py test                       -> checks the parser on a sample

A.cg is a run (or a dumped part) of N1 calls, B.cg the same of N2 calls; every
figure is (B - A) / (N2 - N1), so what does not depend on the number of calls
cancels out. The files are read directly (callgrind's format: name
compression, `calls=` lines whose next cost line is the callee's inclusive
cost), so self costs add up to the totals exactly.

Under valgrind, glibc's clock_gettime is a real system call (no vDSO in the
guest); natively it is not. So clock reads are counted apart from the other
system calls, and their instructions (a vDSO read, natively) are not in Ir.
"""

import collections
import re
import sys

# Clock reads: vDSO calls natively (glibc's wrappers; wrk reads gettimeofday and time).
CLOCK = re.compile(r"^(__)?(clock_gettime|gettimeofday|time(_syscall)?(@|$))")


def parse(path):
    """Per function (object, name): [file, self costs, inclusive costs, calls in]."""
    events = []
    names = {"ob": {}, "fl": {}, "fn": {}}
    kind_of = {"ob": "ob", "cob": "ob", "fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl", "cfl": "fl", "fn": "fn", "cfn": "fn"}
    funcs = {}
    totals = None
    cur = {"ob": "", "fl": "", "fn": ""}
    call_target = None
    callee_ob = None
    in_call = None
    npos = 1

    def name(kind, value):
        table = names[kind_of[kind]]
        m = re.match(r"\((\d+)\)(?:\s(.*))?$", value)
        if not m:
            return value
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2)
        return table.get(m.group(1), "?")

    def entry(ob, fn, fl=""):
        key = (ob.rsplit("/", 1)[-1], fn)
        if key not in funcs:
            funcs[key] = [fl, [0] * len(events), [0] * len(events), 0]
        return funcs[key]

    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if not line or line.startswith("#"):
            continue
        c = line[0]
        if c.isdigit() or c in "+-*":
            parts = line.split()
            costs = [int(x) for x in parts[npos:]]
            costs += [0] * (len(events) - len(costs))
            f = entry(cur["ob"], cur["fn"], cur["fl"])
            if in_call is not None:
                for i, v in enumerate(costs):
                    f[2][i] += v
                callee = entry(callee_ob or cur["ob"], call_target)
                callee[3] += in_call
                in_call = None
                callee_ob = None
            else:
                for i, v in enumerate(costs):
                    f[1][i] += v
                    f[2][i] += v
            continue
        key, _, value = line.partition("=")
        if key in ("ob", "fl", "fn"):
            cur[key] = name(key, value)
            if key == "fn":
                callee_ob = None
        elif key in ("fi", "fe"):
            name(key, value)
        elif key in ("cob",):
            callee_ob = name(key, value)
        elif key in ("cfi", "cfl"):
            name(key, value)
        elif key == "cfn":
            call_target = name(key, value)
        elif key == "calls":
            in_call = int(value.split()[0])
        elif line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("positions:"):
            npos = len(line.split()) - 1
        elif line.startswith(("summary:", "totals:")):
            totals = [int(x) for x in line.split()[1:]]
    totals = (totals or []) + [0] * (len(events) - len(totals or []))
    return events, dict(zip(events, totals)), funcs


def self_sum(events, funcs, event, pred=lambda key: True):
    i = events.index(event)
    return sum(f[1][i] for key, f in funcs.items() if pred(key))


def figures(path):
    """Ir, system calls other than clock reads, clock reads."""
    events, totals, funcs = parse(path)
    sys_total = totals.get("sysCount", 0)
    clock = self_sum(events, funcs, "sysCount", lambda key: CLOCK.match(key[1])) if "sysCount" in events else 0
    return totals.get("Ir", 0), sys_total - clock, clock


def per_call(a, b, n1, n2):
    fa, fb = figures(a), figures(b)
    d = n2 - n1
    return [(y - x) / d for x, y in zip(fa, fb)]


def coordinator_per_call(a, b, n1, n2):
    """The coordinator's instructions per call: the main thread of `protobench
    load` (inclusive of coordinator::run_at), whose work while the engine
    threads run is the per-second timeline (one latency histogram encoded a
    second). It grows with the run's duration, not with its calls, so a
    protocol whose server is slow shows more of it per call; 0 for a process
    without it (the server, the peers)."""
    out = []
    for path in (a, b):
        events, _, funcs = parse(path)
        i = events.index("Ir")
        out.append(max((f[2][i] for k, f in funcs.items() if k[1].startswith("protobench_load::coordinator::run_at")), default=0))
    return (out[1] - out[0]) / (n2 - n1)


def crate(key, fl):
    obj, fn = key
    if obj.startswith("libc.so"):
        if re.match(r"(_int_|__libc_)?(malloc|free|realloc|calloc|cfree|tcache|malloc_consolidate|unlink_chunk)", fn):
            return "libc malloc/free"
        if re.match(r"__(mem|str)|mem(cpy|move|set|cmp)", fn):
            return "libc memcpy/memset/memcmp"
        return "libc, other (system call wrappers)"
    if not obj.startswith("protobench"):
        return obj
    if re.match(r"(ring_core_|_?aesni_|_?x25519|_?sha\d|_?ChaCha|_?gcm_)", fn):
        return "ring"  # ring's C and assembly (AES-GCM, GHASH)
    m = re.match(r"[<&\s]*(?:dyn |mut |impl )*([A-Za-z_][A-Za-z0-9_]*)::", fn)
    if m:
        c = m.group(1)
        if c in ("core", "alloc", "std"):
            # Generic code from std instantiated for a crate: name it by its file.
            m2 = re.search(r"/registry/src/[^/]+/([A-Za-z0-9_-]+?)-\d+\.", fl or "")
            if m2:
                return m2.group(1).replace("-", "_")
            return "std (core, alloc, std)"
        if c == "__rustc":
            return "std (core, alloc, std)"
        if c.startswith("protobench"):
            return c + " (ours)"
        return c
    return "other"


def short(key, width=100):
    obj, fn = key
    s = fn if obj.startswith("protobench") else f"{fn} [{obj}]"
    return s if len(s) <= width else s[: width - 3] + "..."


def profile(a, b, n1, n2, top):
    ea, _, fa = parse(a)
    eb, tb, fb = parse(b)
    assert ea == eb, "different events"
    events = eb
    d = n2 - n1
    ir, sc = events.index("Ir"), events.index("sysCount") if "sysCount" in events else None

    def diff(idx, which):
        out = {}
        for key in set(fa) | set(fb):
            x = fa.get(key, [None, [0] * len(events), [0] * len(events), 0])
            y = fb.get(key, [None, [0] * len(events), [0] * len(events), 0])
            out[key] = (y[which][idx] - x[which][idx]) / d
        return out

    self_ir, incl_ir = diff(ir, 1), diff(ir, 2)
    files = {k: (fb.get(k) or fa.get(k))[0] for k in set(fa) | set(fb)}
    calls = {k: ((fb.get(k) or [0, 0, 0, 0])[3] - (fa.get(k) or [0, 0, 0, 0])[3]) / d for k in set(fa) | set(fb)}
    total = sum(self_ir.values())
    print(f"-- instructions per call: {total:.0f}")
    print(f"-- top {top} functions by self instructions per call (calls per call)")
    for key, v in sorted(self_ir.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{v:9.0f} {100 * v / total:5.1f}% {calls[key]:6.2f}  {short(key)}")
    print(f"-- top {top} functions by inclusive instructions per call (without the once-per-run frames that hold it all)")
    shown = 0
    for key, v in sorted(incl_ir.items(), key=lambda kv: -kv[1]):
        if shown == top:
            break
        # Skip frames entered once per run that hold nearly everything
        # (thread start, the runtime's loop): they say nothing per call.
        if v >= 0.9 * total and calls[key] < 0.5:
            continue
        print(f"{v:9.0f} {100 * v / total:5.1f}% {calls[key]:6.2f}  {short(key)}")
        shown += 1
    groups = collections.Counter()
    for key, v in self_ir.items():
        groups[crate(key, files[key])] += v
    print("-- self instructions per call by crate")
    for g, v in groups.most_common(14):
        print(f"{v:9.0f} {100 * v / total:5.1f}%  {g}")
    if sc is not None:
        self_sc = diff(sc, 1)
        print("-- system calls per call, by libc wrapper (clock_gettime is a vDSO read natively)")
        for key, v in sorted(self_sc.items(), key=lambda kv: -kv[1]):
            if v < 0.05:
                break
            print(f"{v:9.2f}  {short(key)}")


SAMPLE = """version: 1
creator: callgrind-3.19.0
positions: line
events: Ir sysCount
summary: 1000 5
ob=(1) /bin/prog
fl=(1) main.rs
fn=(1) main
10 100
cob=(2) /lib/libc.so.6
cfi=(2) clock.c
cfn=(2) clock_gettime
calls=4 1
+1 40 4
cfn=(3) work
calls=0 1
+2 860 1
fn=(3)
1 860 1
ob=(2)
fl=(2)
fn=(2)
1 40 4
"""


def self_test():
    """The parser on a hand-written file: compressed names, cob=, calls=0."""
    import tempfile

    with tempfile.NamedTemporaryFile("w", suffix=".cg", delete=False) as f:
        f.write(SAMPLE)
    events, totals, funcs = parse(f.name)
    assert events == ["Ir", "sysCount"], events
    assert totals == {"Ir": 1000, "sysCount": 5}, totals
    assert funcs[("prog", "main")][1] == [100, 0], funcs[("prog", "main")]
    assert funcs[("prog", "main")][2] == [1000, 5], funcs[("prog", "main")]
    assert funcs[("libc.so.6", "clock_gettime")][1] == [40, 4]
    assert funcs[("libc.so.6", "clock_gettime")][3] == 4
    assert funcs[("prog", "work")][1] == [860, 1]
    assert figures(f.name) == (1000, 1, 4), figures(f.name)
    print("ok")


def main(argv):
    if len(argv) == 2 and argv[1] == "test":
        self_test()
    elif len(argv) >= 6 and argv[1] == "per-call":
        ir, sysc, clock = per_call(argv[2], argv[3], int(argv[4]), int(argv[5]))
        coord = coordinator_per_call(argv[2], argv[3], int(argv[4]), int(argv[5]))
        print(f"{ir:.0f} {sysc:.2f} {clock:.2f} {coord:.0f}")
    elif len(argv) >= 6 and argv[1] == "profile":
        profile(argv[2], argv[3], int(argv[4]), int(argv[5]), int(argv[6]) if len(argv) > 6 else 15)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
