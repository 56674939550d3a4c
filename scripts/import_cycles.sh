#!/usr/bin/env bash
# Pairs of files inside one crate that import each other (issue 30).
#
# A file imports another when it names a module of that file through
# `use crate::..`, `use super::..`, `use self::..`, a child module's name, or
# the same paths written inline (`crate::x::f()`, `super::Y`). Re-exports
# (`pub use`, `pub(crate) use`) and `mod x;` declarations are the module
# tree's public face, not a use of a helper, so a parent's `pub use
# child::Thing` does not count. A module and its own submodules (preset/mod.rs
# and preset/check.rs, lib.rs and grpc.rs) are one room: the parent owns its
# children and they see its items (`super::Error`), so such pairs are not
# reported; siblings and cousins are. Items under `#[cfg(test)]` (a file's
# unit tests, test-only helpers) are left out: they are built only for the
# crate's tests, where a test of run.rs may build its values with the
# crate's fixtures in testing.rs, which must name run.rs's types; `--tests`
# counts them too.
#
# Prints each pair with the first line on each side and exits 1 if there is
# any; prints "0 pairs" and exits 0 otherwise.
#
# usage: scripts/import_cycles.sh [--tests] [SRC_DIR...]
#        (default: the workspace's crates/*/src servers/rust/src)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tests=0
if [ "${1:-}" = "--tests" ]; then
    tests=1
    shift
fi
if [ "$#" -eq 0 ]; then
    cd "$root"
    set -- crates/*/src servers/rust/src
fi
export IMPORT_CYCLES_TESTS="$tests"
exec python3 - "$@" <<'PY'
import os
import re
import sys

KEYWORDS_ROOTS = {"crate", "super", "self"}


def lex(text):
    """Tokens (kind, value, line) of Rust source, without comments and literals."""
    toks = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c.isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    line += text[i] == "\n"
                    i += 1
        elif re.match(r'b?r#*"', text[i:i + 260]):
            m = re.match(r'b?r(#*)"', text[i:])
            end = '"' + m.group(1)
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            line += text.count("\n", i, j)
            i = j
        elif c == '"' or text.startswith('b"', i):
            i += 1 if c == '"' else 2
            while i < n and text[i] != '"':
                if text[i] == "\\":
                    i += 1
                line += text[i] == "\n"
                i += 1
            i += 1
        elif c == "'" or text.startswith("b'", i):
            k = i + (1 if c == "'" else 2)
            m = re.match(r"'(\\(x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'])'", text[k - 1:k + 12])
            if m:
                i = k - 1 + m.end()
            else:  # a lifetime or label
                i = k
        elif c.isalpha() or c == "_":
            m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", text[i:])
            toks.append(("id", m.group(0), line))
            i += m.end()
        elif c.isdigit():
            m = re.match(r"[0-9][0-9A-Za-z_.]*", text[i:])
            i += m.end()
        elif text.startswith("::", i):
            toks.append(("p", "::", line))
            i += 2
        else:
            toks.append(("p", c, line))
            i += 1
    return toks


def module_of(src, path):
    rel = os.path.relpath(path, src)[:-3].split(os.sep)
    if rel in (["lib"], ["main"]):
        return ()
    if rel[-1] == "mod":
        rel = rel[:-1]
    return tuple(rel)


def use_paths(toks, i):
    """Paths of the use tree starting at toks[i]; returns (paths, index after ';')."""
    paths = []

    def tree(i, prefix):
        seg = list(prefix)
        while i < len(toks):
            kind, v, _ = toks[i]
            if v == "{":
                i += 1
                while toks[i][1] != "}":
                    i = tree(i, seg)
                    if toks[i][1] == ",":
                        i += 1
                return i + 1
            if v == "*":
                paths.append(seg)
                return i + 1
            if kind == "id" and v != "as":
                seg = seg + [v]
                i += 1
                if i < len(toks) and toks[i][1] == "::":
                    i += 1
                    continue
                if i < len(toks) and toks[i][1] == "as":
                    i += 2
                paths.append(seg)
                return i
            return i + 1
        return i

    while i < len(toks) and toks[i][1] != ";":
        i = tree(i, [])
        if i < len(toks) and toks[i][1] == ",":
            i += 1
    return paths, i + 1


def resolve(segs, here, modules):
    """The module file a path names, or None (std, other crates, items)."""
    if not segs:
        return None
    if segs[0] == "crate":
        base, rest = (), segs[1:]
    elif segs[0] in ("self", "super"):
        base, rest = here, segs
        while rest and rest[0] in ("self", "super"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    elif here + (segs[0],) in modules:
        base, rest = here, segs
    else:
        return None
    best = base if base in modules else None
    cur = base
    for s in rest:
        cur = cur + (s,)
        if cur in modules:
            best = cur
        else:
            break
    return best


def without_tests(toks):
    """The tokens without `#[cfg(test)]` items (up to their `;` or closing `}`)."""
    out, i = [], 0
    cfg_test = ["#", "[", "cfg", "(", "test", ")", "]"]
    while i < len(toks):
        if [t[1] for t in toks[i:i + 7]] == cfg_test:
            i += 7
            depth = 0
            while i < len(toks):
                v = toks[i][1]
                i += 1
                if v == "{":
                    depth += 1
                elif v == "}":
                    depth -= 1
                    if depth == 0:
                        break
                elif v == ";" and depth == 0:
                    break
            continue
        out.append(toks[i])
        i += 1
    return out


def edges_of(path, here, modules):
    toks = lex(open(path, encoding="utf-8").read())
    if os.environ.get("IMPORT_CYCLES_TESTS") != "1":
        toks = without_tests(toks)
    found = {}
    inline = []  # (name, brace depth at which it closes)
    depth = 0
    i = 0

    def add(segs, line):
        scope = here + tuple(m for m, _ in inline)
        target = resolve(segs, scope, modules)
        if target is not None and target != here and target not in found:
            found[target] = line

    while i < len(toks):
        kind, v, line = toks[i]
        if v == "{":
            depth += 1
        elif v == "}":
            depth -= 1
            if inline and inline[-1][1] == depth:
                inline.pop()
        elif v == "mod" and i + 2 < len(toks) and toks[i + 2][1] == "{":
            inline.append((toks[i + 1][1], depth))
        elif v == "use":
            j = i - 1
            if j >= 0 and toks[j][1] == ")":
                while j >= 0 and toks[j][1] != "(":
                    j -= 1
                j -= 1
            reexport = j >= 0 and toks[j][1] == "pub"
            paths, i = use_paths(toks, i + 1)
            if not reexport:
                for p in paths:
                    add(p, line)
            continue
        elif kind == "id" and i + 1 < len(toks) and toks[i + 1][1] == "::" and (i == 0 or toks[i - 1][1] != "::"):
            segs, j = [v], i + 1
            while j + 1 < len(toks) and toks[j][1] == "::" and toks[j + 1][0] == "id":
                segs.append(toks[j + 1][1])
                j += 2
            add(segs, line)
            i = j
            continue
        i += 1
    return found


pairs = []
for src in sys.argv[1:]:
    files = {}
    for d, _, names in os.walk(src):
        for name in names:
            if name.endswith(".rs"):
                p = os.path.join(d, name)
                files[module_of(src, p)] = p
    modules = set(files)
    edges = {m: edges_of(p, m, modules) for m, p in files.items()}
    for a in sorted(edges):
        for b, line in sorted(edges[a].items()):
            tree = a == b[: len(a)] or b == a[: len(b)]
            if a < b and not tree and a in edges.get(b, {}):
                pairs.append(f"{files[a]}:{line} <-> {files[b]}:{edges[b][a]}")

for p in pairs:
    print(p)
print(f"{len(pairs)} pairs")
sys.exit(1 if pairs else 0)
PY
