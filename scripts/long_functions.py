#!/usr/bin/env python3
"""Non-test Rust functions over the project's length guide (issue 30).

A function counts from its `fn` line to its closing brace. Over WARN lines
(120) it needs a comment within the six lines above it saying why it is
long ("Longer than ..."); over MAX lines (150) it is refused. Code after a
file's first `#[cfg(test)]`, and tests/, examples/, benches/ are left out.

usage: scripts/long_functions.py [--list] [SRC_DIR...]
       (default: crates/*/src servers/rust/src; --list prints every function
       over 120 lines and exits 0)
Exits 1 when a function breaks the rule, printing each.
"""
import glob
import os
import re
import sys

WARN, MAX = 120, 150
FN = re.compile(r'\s*(pub(\([^)]*\))?\s+)?(async\s+)?(const\s+)?(unsafe\s+)?fn\s+(\w+)')


def code(line):
    """The line without strings, char literals and a trailing comment."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    return line.split('//')[0]


def functions(path):
    lines = open(path, encoding='utf-8').read().split('\n')
    end = next((i for i, l in enumerate(lines) if l.startswith('#[cfg(test)]')), len(lines))
    for i in range(end):
        m = FN.match(lines[i])
        if not m or lines[i].strip().startswith('//'):
            continue
        depth, started, j = 0, False, i
        while j < len(lines):
            c = code(lines[j])
            if not started and ';' in c and '{' not in c and j > i:
                break  # a declaration without a body
            for ch in c:
                if ch == '{':
                    depth, started = depth + 1, True
                elif ch == '}':
                    depth -= 1
            if started and depth == 0:
                break
            j += 1
        if started:
            above = '\n'.join(lines[max(0, i - 6):i])
            yield m.group(6), i + 1, j - i + 1, 'Longer than' in above


def main():
    args = sys.argv[1:]
    listing = '--list' in args
    args = [a for a in args if a != '--list']
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirs = args or sorted(glob.glob(os.path.join(root, 'crates/*/src'))) + [os.path.join(root, 'servers/rust/src')]
    bad = []
    for d in dirs:
        for dp, _, files in os.walk(d):
            for f in sorted(files):
                if not f.endswith('.rs'):
                    continue
                p = os.path.join(dp, f)
                for name, line, n, why in functions(p):
                    where = f"{os.path.relpath(p, root)}:{line} {name}: {n} lines"
                    if listing and n > WARN:
                        print(where + ('' if why else ' (no reason given)'))
                    elif n > MAX:
                        bad.append(f"{where}, over {MAX}: cut it")
                    elif n > WARN and not why:
                        bad.append(f"{where}, over {WARN} with no comment above saying why (\"Longer than ...\")")
    for b in bad:
        print(b)
    if listing:
        return 0
    print(f"{len(bad)} function(s) over the length guide" if bad else "no function over the length guide")
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
