#!/usr/bin/env python3
"""Copies a suite's graphs with every name scrubbed, onto clusters of one's choice: the check
that a placement method reads the graph, not its names.

  scrub_suite.py SUITE.json OUT_DIR CLUSTER[,CLUSTER...]

Each op's name becomes op<id>, its graph's name g<i>, and each component of its scope and
colocation key an opaque token (the same token for the same component everywhere, so the
scope hierarchy and the colocation groups stay); op types, shapes, costs and edges are kept.
Writes OUT_DIR/g<i>.json and OUT_DIR/suite.json with one entry per graph and cluster
(g<i>_<cluster kind>). Suites whose entries generate a model (no "graph" file) are refused:
export them first (`gdp gen ... -o`). Standard library only.
"""
import json
import os
import re
import sys


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__)
    suite_path, out, clusters = argv[1], argv[2], argv[3].split(",")
    with open(suite_path) as f:
        suite = json.load(f)
    base = os.path.dirname(os.path.abspath(suite_path))
    os.makedirs(out, exist_ok=True)
    tokens = {}

    def scrub(x):
        return re.sub(r"[^./]+", lambda m: tokens.setdefault(m.group(0), "x%d" % len(tokens)), x)

    entries = []
    for i, e in enumerate(suite["entries"]):
        if "graph" not in e:
            sys.exit("%s: entries[%d] (%s): expected a \"graph\" file, got a generated model" %
                     (suite_path, i, e.get("name", "?")))
        with open(os.path.join(base, e["graph"])) as f:
            g = json.load(f)
        g["name"] = "g%d" % i
        for op in g["ops"]:
            op["name"] = "op%d" % op["id"]
            for k in ("scope", "colocation"):
                if op.get(k):
                    op[k] = scrub(op[k])
        tmp = os.path.join(out, "g%d.json.tmp" % i)
        with open(tmp, "w") as f:
            json.dump(g, f)
        os.replace(tmp, os.path.join(out, "g%d.json" % i))
        for c in clusters:
            entries.append({"name": "g%d_%s" % (i, c.split("-")[0]), "graph": "g%d.json" % i,
                            "cluster": c})
        print("g%d = %s" % (i, e["name"]))
    tmp = os.path.join(out, "suite.json.tmp")
    with open(tmp, "w") as f:
        json.dump({"format": "gdp-suite", "version": 1, "name": "scrubbed",
                   "description": "%s, names scrubbed, on %s" % (suite["name"], ", ".join(clusters)),
                   "entries": entries}, f, indent=1)
    os.replace(tmp, os.path.join(out, "suite.json"))


if __name__ == "__main__":
    main(sys.argv)
