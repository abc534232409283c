#!/usr/bin/env python3
"""The house's layering, checked from the #include lines (standard library only).

    python3 scripts/check_layers.py        exit 1 and say which include breaks a rule

Rules (docs/architecture.md):
1. Folders form layers: core <- sim <- datasets <- place <- {eval, rl} <- cli; cuda (the GPU
   kernels) and nn (the autograd) beside sim; calib <- validate beside place. A file includes
   only its own folder and the folders below it (BELOW).
2. No include loop among rl/'s components (a header and its .cpp are one component: x.cpp
   counts as including what x.h includes), the loop trainer -> guided -> session -> trainer
   being the one this check was written for.
3. rl/run, the run layer, names no method: no file in it includes rl/gdp, rl/hdp or rl/placeto.
4. No place method (a file that registers one: rl/*/method.cpp, rl/gdp/guided.cpp) includes the
   training session (rl/run/session.h).
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ["core", "nn", "sim", "datasets", "place", "eval", "rl", "validate", "calib", "cli",
           "cuda"]
# What each folder may include (besides itself).
BELOW = {
    "core": set(),
    "cuda": {"core"},
    "nn": {"core", "cuda"},
    "sim": {"core"},
    "datasets": {"core", "sim"},
    "place": {"core", "sim", "datasets"},
    "eval": {"core", "sim", "datasets", "place"},
    "validate": {"core", "sim", "nn", "cuda", "calib"},
    "calib": {"core", "sim", "cuda"},
    "rl": {"core", "nn", "cuda", "sim", "datasets", "place"},
    "cli": set(FOLDERS),
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources():
    for folder in FOLDERS:
        top = os.path.join(ROOT, folder)
        for dirpath, _, files in os.walk(top):
            for f in files:
                if f.endswith((".h", ".cpp", ".cu", ".cuh")):
                    p = os.path.relpath(os.path.join(dirpath, f), ROOT)
                    yield p


def includes(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return [i for i in INCLUDE.findall(f.read()) if os.path.exists(os.path.join(ROOT, i))]


def main():
    errors = []
    graph = {}
    for p in sorted(sources()):
        inc = includes(p)
        graph[p] = inc
        folder = p.split("/")[0]
        for i in inc:
            to = i.split("/")[0]
            if to != folder and to not in BELOW.get(folder, set()):
                errors.append(f"{p}: includes {i}: {folder}/ may not include {to}/ (layer rule)")
            if p.startswith("rl/run/") and re.match(r"rl/(gdp|hdp|placeto)/", i):
                errors.append(f"{p}: includes {i}: the run layer names no method")
            is_place_method = re.match(r"rl/[^/]+/method\.cpp$", p) or p == "rl/gdp/guided.cpp"
            if is_place_method and i == "rl/run/session.h":
                errors.append(f"{p}: includes {i}: a place method does not include the session")
    # A .cpp stands for its header's node too: merge x.cpp's includes into x.h's.
    nodes = {}
    for p, inc in graph.items():
        if not p.startswith("rl/"):
            continue
        inc = [i for i in inc if i.startswith("rl/")]
        key = p[:-4] + ".h" if p.endswith(".cpp") and (p[:-4] + ".h") in graph else p
        nodes.setdefault(key, set()).update(i for i in inc if i != key)
    # Cycle search (iterative DFS, colours).
    colour, stack_of = {}, {}
    for start in sorted(nodes):
        if colour.get(start):
            continue
        stack = [(start, iter(sorted(nodes.get(start, ()))))]
        colour[start] = 1
        path = [start]
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                stack.pop()
                path.pop()
                continue
            c = colour.get(nxt, 0)
            if c == 1:
                cyc = path[path.index(nxt):] + [nxt]
                errors.append("include loop: " + " -> ".join(cyc))
            elif c == 0:
                colour[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(sorted(nodes.get(nxt, ())))))
    for e in errors:
        print(e)
    print(f"check_layers: {len(graph)} files, {len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
