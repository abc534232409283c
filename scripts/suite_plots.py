#!/usr/bin/env python3
"""Plots of a suite run directory (`gdp suite run ... --out DIR`, docs/formats.md,
"Suite run directory").

Reads DIR/results.json (records with their curves) and DIR/traces/<graph>.json (Chrome
traces of each graph's best valid placement) and writes, under DIR/plots (or --out):

  step_times.{png,svg}          grouped bars: step time (ms) per workload (x) and method
                                (bars), mean over the valid seeds with the standard deviation
                                as error bar; cells with invalid seeds hatched and labelled,
                                cells with none valid an 'x' with the validity; the workload's
                                lower bound as a black tick across its group.
  convergence_samples.{...}     best step time (ms) against samples, a panel per workload:
                                each seed a thin step line, the mean over seeds a thick one;
                                one-shot methods (curve of one point or none) a dashed
                                horizontal line at their step time; the lower bound dotted.
  convergence_wall.{...}        the same against wall time (seconds, log x).
  gantt_<graph>.{...}           a row per device and per busy directed link; ops as bars
                                coloured forward / backward / update (from the op name:
                                "gradients/..." is backward, "...ApplyAdam" an update),
                                transfers grey; time in ms; the step time as a red line.

Usage: /usr/bin/python3 scripts/suite_plots.py DIR [--out DIR/plots] [--formats png,svg]
                                               [--plots bars,convergence,gantt]
(the system Python, which has Debian's matplotlib, where another python3 comes first on PATH)

Input is strict: a missing or malformed results.json (or trace) is an error naming the file
and the field, exit status 1. Every plot is written atomically (a temporary file in the same
folder, then os.replace). Prints the files written, one a line. Needs matplotlib only
(Agg backend).
"""

import argparse
import bisect
import json
import math
import os
import statistics
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

PLOT_KINDS = ("bars", "convergence", "gantt")
FORMATS = ("png", "svg", "pdf")
PHASE_COLORS = {
    "forward": "#4c72b0",
    "backward": "#dd8452",
    "update": "#55a868",
    "transfer": "#8c8c8c",
}
# Above this many events a Gantt chart's bars are rasterized in vector formats (the SVG of
# 50k rectangles is slow to write and to view; the text stays vector).
RASTERIZE_EVENTS = 5000


_UMASK = os.umask(0)
os.umask(_UMASK)


class InputError(Exception):
    """A missing or malformed input file; the message names the file and the field."""


# ---------------------------------------------------------------------------------------
# Input


def _load_json(path):
    try:
        with open(path, "r", encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not JSON: {e}") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from None


def _is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _field(obj, key, kinds, where, path, nullable=False):
    """obj[key], checked to be one of `kinds` ("number", "int", "str", "bool", "list",
    "dict"); raises InputError naming path and where.key."""
    if not isinstance(obj, dict):
        raise InputError(f"{path}: {where}: expected an object")
    name = f"{where}.{key}" if where else key
    if key not in obj:
        raise InputError(f"{path}: {name}: missing")
    v = obj[key]
    if v is None and nullable:
        return None
    checks = {
        "number": _is_number,
        "int": lambda x: isinstance(x, int) and not isinstance(x, bool),
        "str": lambda x: isinstance(x, str),
        "bool": lambda x: isinstance(x, bool),
        "list": lambda x: isinstance(x, list),
        "dict": lambda x: isinstance(x, dict),
    }
    if not checks[kinds](v):
        got = "null" if v is None else type(v).__name__
        raise InputError(f"{path}: {name}: expected {kinds}, got {got} ({json.dumps(v)[:40]})")
    return v


def load_results(run_dir):
    """results.json, checked: returns (records, method order). Each record is a dict with
    graph, cluster, method, seed, valid, validity, step_time_s (None unless valid),
    lower_bound_s and curve ([(samples, wall_s, best_step_s)], sorted by samples)."""
    path = os.path.join(run_dir, "results.json")
    doc = _load_json(path)
    if not isinstance(doc, dict):
        raise InputError(f"{path}: expected a JSON object at the top")
    fmt = _field(doc, "format", "str", "", path)
    if fmt != "gdp-suite-results":
        raise InputError(f"{path}: format: expected \"gdp-suite-results\", got \"{fmt}\"")
    version = _field(doc, "version", "int", "", path)
    if version != 1:
        raise InputError(f"{path}: version: expected 1, got {version}")
    raw = _field(doc, "records", "list", "", path)
    if not raw:
        raise InputError(f"{path}: records: empty, nothing to plot")
    records = []
    for i, r in enumerate(raw):
        w = f"records[{i}]"
        if not isinstance(r, dict):
            raise InputError(f"{path}: {w}: expected an object")
        rec = {
            "graph": _field(r, "graph", "str", w, path),
            "cluster": _field(r, "cluster", "str", w, path),
            "method": _field(r, "method", "str", w, path),
            "seed": _field(r, "seed", "int", w, path),
            "valid": _field(r, "valid", "bool", w, path),
            "validity": _field(r, "validity", "str", w, path),
            "lower_bound_s": _field(r, "lower_bound_s", "number", w, path),
            "samples": _field(r, "samples", "int", w, path),
            "wall_s": _field(r, "wall_s", "number", w, path),
        }
        step = _field(r, "step_time_s", "number", w, path, nullable=True)
        if rec["valid"] and (step is None or step <= 0):
            raise InputError(f"{path}: {w}.step_time_s: expected a positive number for a "
                             f"valid record, got {json.dumps(step)}")
        rec["step_time_s"] = step if rec["valid"] else None
        curve = []
        for k, pt in enumerate(_field(r, "curve", "list", w, path)):
            if not (isinstance(pt, list) and len(pt) == 3 and all(_is_number(x) for x in pt)):
                raise InputError(f"{path}: {w}.curve[{k}]: expected [samples, wall_s, "
                                 f"best_step_s] numbers, got {json.dumps(pt)[:60]}")
            curve.append(tuple(float(x) for x in pt))
        curve.sort(key=lambda p: (p[0], p[1]))
        rec["curve"] = curve
        records.append(rec)

    # Method order: run.json's labels (the record's method is its label), then any others in
    # the order they first appear.
    order = []
    run = doc.get("run")
    if isinstance(run, dict) and isinstance(run.get("methods"), list):
        for m in run["methods"]:
            if isinstance(m, dict):
                label = m.get("label") or m.get("method")
                if isinstance(label, str) and label not in order:
                    order.append(label)
    present = []
    for r in records:
        if r["method"] not in present:
            present.append(r["method"])
    methods = [m for m in order if m in present] + [m for m in present if m not in order]
    return records, methods


def workloads_of(records):
    """Workload names (the graph, the suite entry's name) in grid order."""
    out = []
    for r in records:
        if r["graph"] not in out:
            out.append(r["graph"])
    return out


def lower_bound_ms(records, graph):
    return min(r["lower_bound_s"] for r in records if r["graph"] == graph) * 1e3


def cell(records, graph, method):
    return [r for r in records if r["graph"] == graph and r["method"] == method]


def method_colors(methods):
    cmap = plt.get_cmap("tab10" if len(methods) <= 10 else "tab20")
    return {m: cmap(i % cmap.N) for i, m in enumerate(methods)}


# ---------------------------------------------------------------------------------------
# Output


def save(fig, out_dir, stem, formats, written):
    """Writes fig as out_dir/stem.<fmt> for each format, atomically; appends the paths."""
    for fmt in formats:
        final = os.path.join(out_dir, f"{stem}.{fmt}")
        fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{stem}.", suffix=f".{fmt}.tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                fig.savefig(f, format=fmt, dpi=110, bbox_inches="tight")
            os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600
            os.replace(tmp, final)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        written.append(final)
    plt.close(fig)


# ---------------------------------------------------------------------------------------
# Plots


def plot_bars(records, methods, out_dir, formats, written):
    """Grouped bars of step time per workload and method, with the lower bound."""
    graphs = workloads_of(records)
    colors = method_colors(methods)
    n = len(methods)
    width = 0.8 / n
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 + len(graphs) * (0.5 + 0.35 * n)), 4.8))

    all_ms = [lower_bound_ms(records, g) for g in graphs]
    all_ms += [r["step_time_s"] * 1e3 for r in records if r["valid"]]
    log = max(all_ms) / min(all_ms) > 30
    if log:
        ax.set_yscale("log")

    for j, m in enumerate(methods):
        for i, g in enumerate(graphs):
            rs = cell(records, g, m)
            if not rs:
                continue
            x = i - 0.4 + width * (j + 0.5)
            ok = [r["step_time_s"] * 1e3 for r in rs if r["valid"]]
            bad = [r["validity"] for r in rs if not r["valid"]]
            if ok:
                mean = statistics.fmean(ok)
                err = statistics.stdev(ok) if len(ok) > 1 else None
                ax.bar(x, mean, width, color=colors[m], edgecolor="black", linewidth=0.5,
                       hatch="//" if bad else None, yerr=err, capsize=2,
                       error_kw={"elinewidth": 0.8})
                if bad:
                    ax.annotate(f"{len(ok)}/{len(rs)} valid", (x, mean), xytext=(0, 3),
                                textcoords="offset points", ha="center", va="bottom",
                                rotation=90, fontsize=7)
            else:
                # No valid seed: an 'x' at the lower bound's height with the validities.
                y = lower_bound_ms(records, g)
                ax.plot([x], [y], marker="x", color=colors[m], markersize=9, mew=2)
                text = ",".join(sorted(set(bad)))
                ax.annotate(text, (x, y), xytext=(0, 7), textcoords="offset points",
                            ha="center", va="bottom", rotation=90, fontsize=7, color="#b00")

    for i, g in enumerate(graphs):
        ax.hlines(lower_bound_ms(records, g), i - 0.45, i + 0.45, colors="black",
                  linestyles="--", linewidth=1.2, zorder=3,
                  label="lower bound" if i == 0 else None)

    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[m]) for m in methods]
    handles.append(ax.get_legend_handles_labels()[0][0])
    labels = list(methods) + ["lower bound"]
    if any(not r["valid"] for r in records):
        handles.append(plt.Rectangle((0, 0), 1, 1, facecolor="white", edgecolor="black",
                                     hatch="//"))
        labels.append("some seeds invalid")
        handles.append(plt.Line2D([], [], marker="x", color="gray", ls="", mew=2))
        labels.append("no valid seed")
    ax.legend(handles, labels, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_xticks(range(len(graphs)))
    ax.set_xticklabels(graphs, rotation=20 if len(graphs) > 4 else 0, ha="right"
                       if len(graphs) > 4 else "center")
    ax.set_xlim(-0.5, len(graphs) - 0.5)
    ax.set_ylabel("step time (ms)" + (", log scale" if log else ""))
    ax.set_title("Step time per workload and method (mean ± std over valid seeds)")
    ax.grid(axis="y", alpha=0.3)
    save(fig, out_dir, "step_times", formats, written)


def _value_at(xs, ys, x):
    """The step function (xs, ys) at x: ys of the last xs <= x (xs sorted, xs[0] <= x)."""
    return ys[bisect.bisect_right(xs, x) - 1]


def _curve_xy(r, axis, floor):
    """The record's curve as (x, best step ms) along axis (0 samples, 1 wall seconds, no
    lower than floor), held flat to the end of its search (the record's samples / wall_s)."""
    curve = sorted(r["curve"], key=lambda p: p[axis])
    xs = [max(p[axis], floor) for p in curve]
    ys = [p[2] * 1e3 for p in curve]
    end = max(xs[-1], r["wall_s"] if axis == 1 else r["samples"])
    return xs + [end], ys + [ys[-1]]


def plot_convergence(records, methods, out_dir, formats, written, axis):
    """Best step time against samples (axis 0) or wall time (axis 1, log x)."""
    graphs = workloads_of(records)
    colors = method_colors(methods)
    ncols = min(3, len(graphs))
    nrows = math.ceil(len(graphs) / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(5.0 * ncols, 3.8 * nrows), squeeze=False)
    wall = axis == 1
    # Wall times of 0 cannot go on a log axis: floor them.
    floor = 1e-3
    if wall:
        pos = [p[1] for r in records for p in r["curve"] if p[1] > 0]
        if pos:
            floor = min(floor, min(pos) / 2)
    legend = {}

    for gi, g in enumerate(graphs):
        ax = axes[gi // ncols][gi % ncols]
        for m in methods:
            rs = cell(records, g, m)
            if not rs:
                continue
            searched = [r for r in rs if len(r["curve"]) > 1]
            if not searched:
                ok = [r["step_time_s"] * 1e3 for r in rs if r["valid"]]
                if ok:
                    h = ax.axhline(statistics.fmean(ok), color=colors[m], ls="--", lw=1.2)
                    legend.setdefault(m, h)
                continue
            seeds = []
            for r in searched:
                xs, ys = _curve_xy(r, axis, floor if wall else -math.inf)
                ax.step(xs, ys, where="post", color=colors[m], lw=0.7, alpha=0.45)
                seeds.append((xs, ys))
            # Mean over seeds where every seed has a point.
            grid = sorted({x for xs, _ in seeds for x in xs})
            start = max(xs[0] for xs, _ in seeds)
            mx, my = [], []
            for x in grid:
                if x < start:
                    continue
                mx.append(x)
                my.append(statistics.fmean(_value_at(xs, ys, x) for xs, ys in seeds))
            label = m if len(seeds) == 1 else f"{m} (mean of {len(seeds)})"
            h, = ax.step(mx, my, where="post", color=colors[m], lw=2.0, label=label)
            legend.setdefault(m, h)
        lb = lower_bound_ms(records, g)
        h = ax.axhline(lb, color="black", ls=":", lw=1.0)
        legend.setdefault("lower bound", h)
        cluster = next(r["cluster"] for r in records if r["graph"] == g)
        ax.set_title(f"{g} ({cluster})", fontsize=10)
        ax.set_xlabel("wall time (s, log scale)" if wall else "samples")
        ax.set_ylabel("best step time (ms)")
        if wall:
            ax.set_xscale("log")
        ax.grid(alpha=0.3)
    for k in range(len(graphs), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)

    names = [m for m in methods if m in legend] + ["lower bound"]
    # Title and legend above the panels (added after the layout, which would otherwise make
    # room for the title a second time); heights in inches, as figure fractions.
    height = fig.get_figheight()
    legend_rows = math.ceil(len(names) / 6)
    fig.tight_layout(rect=(0, 0, 1, 1 - (0.45 + 0.2 * legend_rows) / height))
    fig.suptitle("Best step time against " + ("wall time" if wall else "samples")
                 + " (thin: seeds, thick: mean; dashed: one-shot methods)",
                 y=1 - 0.1 / height, va="top")
    fig.legend([legend[n] for n in names],
               [n if n == "lower bound" or any(len(r["curve"]) > 1 for r in records
                                               if r["method"] == n)
                else f"{n} (one-shot)" for n in names],
               loc="upper center", ncol=min(len(names), 6), fontsize=8,
               bbox_to_anchor=(0.5, 1 - 0.4 / height))
    save(fig, out_dir, "convergence_wall" if wall else "convergence_samples", formats, written)


def _phase(name, is_link):
    if is_link:
        return "transfer"
    if name.startswith("gradients/") or "/gradients/" in name:
        return "backward"
    if name.endswith("ApplyAdam") or "/Adam/" in name or "/update/" in name:
        return "update"
    return "forward"


def load_trace(path):
    """A Chrome trace: (rows [(key, name)], events by row key {(pid, tid): [(ts_us, dur_us,
    name, cat)]}, otherData)."""
    doc = _load_json(path)
    if isinstance(doc, list):
        events, other = doc, {}
    elif isinstance(doc, dict):
        events = _field(doc, "traceEvents", "list", "", path)
        other = doc.get("otherData") if isinstance(doc.get("otherData"), dict) else {}
    else:
        raise InputError(f"{path}: expected an object with traceEvents or an event list")
    names, sort_index, by_row = {}, {}, {}
    for i, e in enumerate(events):
        w = f"traceEvents[{i}]"
        ph = _field(e, "ph", "str", w, path)
        if ph not in ("M", "X"):
            continue
        key = (e.get("pid", 0), e.get("tid", 0))
        if ph == "M":
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            if e.get("name") == "thread_name" and isinstance(args.get("name"), str):
                names[key] = args["name"]
            elif e.get("name") == "thread_sort_index" and _is_number(args.get("sort_index")):
                sort_index[key] = args["sort_index"]
            continue
        ts = _field(e, "ts", "number", w, path)
        dur = _field(e, "dur", "number", w, path)
        name = e.get("name") if isinstance(e.get("name"), str) else ""
        cat = e.get("cat") if isinstance(e.get("cat"), str) else ""
        by_row.setdefault(key, []).append((ts, dur, name, cat))
    keys = set(names) | set(by_row)

    def order(k):
        return (sort_index.get(k, math.inf), k)

    rows = [(k, names.get(k, f"pid {k[0]} tid {k[1]}")) for k in sorted(keys, key=order)]
    return rows, by_row, other


def plot_gantt(trace_path, graph, out_dir, formats, written):
    """A Gantt chart of one trace: a row per device and per busy directed link."""
    rows, by_row, other = load_trace(trace_path)

    def is_link(key, name):
        return name.startswith("link ") or any(ev[3] == "transfer" for ev in by_row.get(key, ()))

    shown = [(k, n) for k, n in rows if by_row.get(k) or not is_link(k, n)]
    idle_links = len(rows) - len(shown)
    total = sum(len(v) for v in by_row.values())
    fig, ax = plt.subplots(figsize=(14, 1.6 + 0.38 * max(1, len(shown))))
    used = set()
    end_ms = 0.0
    for y, (key, name) in enumerate(shown):
        link = is_link(key, name)
        spans = {}
        for ts, dur, ev_name, _ in by_row.get(key, ()):
            ph = _phase(ev_name, link)
            spans.setdefault(ph, []).append((ts / 1e3, dur / 1e3))
            end_ms = max(end_ms, (ts + dur) / 1e3)
        for ph, xr in spans.items():
            ax.broken_barh(xr, (y - 0.4, 0.8), facecolors=PHASE_COLORS[ph], linewidth=0,
                           antialiased=False, rasterized=total > RASTERIZE_EVENTS)
            used.add(ph)
    step = other.get("step_time_s")
    if _is_number(step):
        ax.axvline(step * 1e3, color="red", lw=1.0, ls="--")
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([n for _, n in shown], fontsize=8)
    ax.set_ylim(len(shown) - 0.5, -0.5)
    ax.set_xlim(0, max(end_ms, step * 1e3 if _is_number(step) else 0, 1e-6) * 1.01)
    ax.set_xlabel("time (ms)")
    title = f"{graph}: {total} events"
    if _is_number(step):
        title += f", step {step * 1e3:.3f} ms"
    if other.get("valid") is False:
        title += f" (INVALID: {other.get('reason', '')})"
    if idle_links:
        title += f"; {idle_links} idle link(s) not shown"
    ax.set_title(title, fontsize=10)
    ax.grid(axis="x", alpha=0.3)
    order = [p for p in PHASE_COLORS if p in used]
    if order:
        ax.legend([plt.Rectangle((0, 0), 1, 1, color=PHASE_COLORS[p]) for p in order], order,
                  fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0))
    save(fig, out_dir, f"gantt_{graph}", formats, written)


# ---------------------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description="Plots of a `gdp suite run` directory.")
    ap.add_argument("dir", help="the suite run directory (holds results.json)")
    ap.add_argument("--out", help="output folder (default DIR/plots)")
    ap.add_argument("--formats", default="png,svg",
                    help=f"comma-separated, of {','.join(FORMATS)} (default png,svg)")
    ap.add_argument("--plots", default=",".join(PLOT_KINDS),
                    help=f"comma-separated, of {','.join(PLOT_KINDS)} (default all)")
    a = ap.parse_args(argv)
    formats = [f.strip().lower() for f in a.formats.split(",") if f.strip()]
    kinds = [k.strip() for k in a.plots.split(",") if k.strip()]
    for f in formats:
        if f not in FORMATS:
            ap.error(f"--formats: unknown format '{f}' (expected {', '.join(FORMATS)})")
    for k in kinds:
        if k not in PLOT_KINDS:
            ap.error(f"--plots: unknown plot '{k}' (expected {', '.join(PLOT_KINDS)})")
    if not formats or not kinds:
        ap.error("nothing to draw")
    out_dir = a.out or os.path.join(a.dir, "plots")
    written = []
    try:
        records, methods = load_results(a.dir)
        traces = []
        if "gantt" in kinds:
            tdir = os.path.join(a.dir, "traces")
            if os.path.isdir(tdir):
                traces = sorted(f for f in os.listdir(tdir) if f.endswith(".json"))
            if not traces:
                print(f"suite_plots: no traces in {tdir}: no Gantt charts", file=sys.stderr)
        os.makedirs(out_dir, exist_ok=True)
        if "bars" in kinds:
            plot_bars(records, methods, out_dir, formats, written)
        if "convergence" in kinds:
            plot_convergence(records, methods, out_dir, formats, written, axis=0)
            plot_convergence(records, methods, out_dir, formats, written, axis=1)
        for t in traces:
            plot_gantt(os.path.join(a.dir, "traces", t), t[:-len(".json")], out_dir, formats,
                       written)
    except InputError as e:
        print(f"suite_plots: error: {e}", file=sys.stderr)
        for path in written:
            print(path)
        return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
