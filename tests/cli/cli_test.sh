#!/usr/bin/env bash
# End-to-end checks of the gdp binary: --help everywhere, exit code 2 for bad usage, 1 for bad
# input with a message naming the problem, and the main subcommands on small inputs.
# usage: cli_test.sh GDP_BINARY CASE
set -u
gdp=$1
case_name=$2
source "$(dirname "$0")/expect.sh"

cat > "$tmp/g.json" <<'G'
{"format": "gdp-graph", "version": 1, "name": "tiny", "ops": [
 {"id": 0, "name": "a", "type": "MatMul", "phase": "forward", "outputs": [{"shape": [1024, 1024], "dtype": "f32", "bytes": 4194304}], "flops": 2e9, "bytes_accessed": 12582912, "param_bytes": 4194304, "colocation": "w"},
 {"id": 1, "name": "b", "type": "Relu", "phase": "forward", "outputs": [{"shape": [1024, 1024], "dtype": "f32", "bytes": 4194304}], "flops": 1048576, "bytes_accessed": 8388608},
 {"id": 2, "name": "c", "type": "ApplyAdam", "phase": "update", "outputs": [], "flops": 4194304, "bytes_accessed": 16777216, "colocation": "w"}],
"edges": [{"src": 0, "dst": 1}, {"src": 1, "dst": 2}]}
G

case "$case_name" in
  help)
    expect_rc 0 "usage" -- "$gdp" --help
    for c in info convert cluster simulate gen place compare train suite calibrate validate; do
      expect_rc 0 "usage: gdp $c" -- "$gdp" "$c" --help
    done ;;
  usage)
    expect_rc 2 "usage" -- "$gdp"
    expect_rc 2 "unknown command" -- "$gdp" frobnicate
    expect_rc 2 "unknown flag --bogus" -- "$gdp" info --bogus "$tmp/g.json"
    expect_rc 2 "missing required flag --cluster" -- "$gdp" simulate --graph "$tmp/g.json" --placement single
    expect_rc 2 "expects a value" -- "$gdp" simulate --graph ;;
  bad-input)
    echo '{"format": "gdp-graph", "version": 1, "name": "x", "ops": [], "edges": []}' > "$tmp/empty.json"
    expect_rc 1 "empty.json" -- "$gdp" info "$tmp/empty.json"
    expect_rc 1 "cannot open" -- "$gdp" info "$tmp/missing.json"
    expect_rc 1 "<kind>x<count>-<topology>" -- "$gdp" cluster v100-four
    long=$(head -c 131000 /dev/zero | tr '\0' a)  # once a stack overflow in std::regex_match
    expect_rc 1 "<kind>x<count>-<topology>" -- "$gdp" cluster "$long"
    expect_rc 1 "<kind>x<count>-<topology>" -- "$gdp" cluster "${long}x4-nvlink"
    part=$(head -c 256 /dev/zero | tr '\0' p)  # a path component over NAME_MAX
    printf '{"format": "gdp-suite", "version": 1, "name": "s", "entries": [{"name": "e", "graph": "%s/g.json", "cluster": "v100x2-nvlink"}]}' "$part" > "$tmp/long.json"
    expect_rc 1 "long.json.*entries\[0\].graph" -- "$gdp" compare --suite "$tmp/long.json"
    sed 's/"flops": 2e9/"flops": -2/' "$tmp/g.json" > "$tmp/neg.json"
    expect_rc 1 "ops\[0\].flops" -- "$gdp" info "$tmp/neg.json" ;;
  info)
    expect_rc 0 '"ops": 3' -- "$gdp" info --json "$tmp/g.json"
    expect_rc 0 '"parameter_bytes": 4194304' -- "$gdp" info --json "$tmp/g.json"
    expect_rc 0 '"parameters": 1048576' -- "$gdp" info --json "$tmp/g.json"
    expect_rc 0 '"optimizer_state_bytes": 0' -- "$gdp" info --json "$tmp/g.json"
    expect_rc 0 "ops              3" -- "$gdp" info "$tmp/g.json"
    expect_rc 0 "parameters       1048576 (1.05M)" -- "$gdp" info "$tmp/g.json"
    expect_rc 0 "optimizer bytes  0" -- "$gdp" info "$tmp/g.json"
    # With a cluster: the step-time lower bound (longest path / work over devices).
    expect_rc 0 "lower bound .* on v100x2-nvlink (critical path" -- "$gdp" info "$tmp/g.json" --cluster v100x2-nvlink
    expect_rc 0 '"lower_bound_s"' -- "$gdp" info --json "$tmp/g.json" --cluster v100x2-nvlink
    # And the memory every placement holds at once: the 4 MiB of weights, and at b's start a's
    # output (read by b) and b's own: 12 MiB; one device holds it.
    expect_rc 0 "memory bound     12.00 MiB held at once, summed over devices: at least 1 device" -- "$gdp" info "$tmp/g.json" --cluster v100x2-nvlink
    expect_rc 0 '"memory_bound_bytes": 12582912' -- "$gdp" info --json "$tmp/g.json" --cluster v100x2-nvlink
    expect_rc 0 '"min_devices": 1' -- "$gdp" info --json "$tmp/g.json" --cluster v100x2-nvlink
    expect_rc 2 "--profile needs --cluster" -- "$gdp" info "$tmp/g.json" --profile x.json ;;
  convert)
    printf 'node1 -- Input0 -- forward_compute_time=0.5, backward_compute_time=0.0, activation_size=64.0, parameter_size=0.0\nnode2 -- Linear(4, 4) -- forward_compute_time=1.0, backward_compute_time=2.0, activation_size=64.0, parameter_size=80.0\n\tnode1 -- node2\n' > "$tmp/p.txt"
    expect_rc 0 "" -- "$gdp" convert "$tmp/p.txt" -o "$tmp/p.json"
    expect_rc 0 '"ops": 4' -- "$gdp" info --json "$tmp/p.json"
    expect_rc 0 '"edges": 4' -- "$gdp" info --json "$tmp/p.txt"
    # The optimizer state beside the 80 bytes of weights: Adam (default) 2x, momentum 1x, sgd 0.
    expect_rc 0 '"parameters": 20' -- "$gdp" info --json "$tmp/p.json"
    expect_rc 0 '"optimizer_state_bytes": 160' -- "$gdp" info --json "$tmp/p.json"
    expect_rc 0 '"optimizer_state_bytes": 160' -- "$gdp" info --json "$tmp/p.txt"
    expect_rc 0 "" -- "$gdp" convert "$tmp/p.txt" -o "$tmp/m.json" --optimizer momentum
    expect_rc 0 '"optimizer_state_bytes": 80' -- "$gdp" info --json "$tmp/m.json"
    expect_rc 0 "" -- "$gdp" convert "$tmp/p.txt" -o "$tmp/s.json" --optimizer sgd
    expect_rc 0 '"optimizer_state_bytes": 0' -- "$gdp" info --json "$tmp/s.json"
    grep -q '"version":2' "$tmp/s.json" || fail "convert did not write version 2"
    expect_rc 2 "expected adam, momentum or sgd" -- "$gdp" convert "$tmp/p.txt" -o "$tmp/x.json" --optimizer adagrad
    expect_rc 2 "PipeDream profiles only" -- "$gdp" convert "$tmp/p.json" -o "$tmp/x.json" --optimizer sgd
    # CRLF line ends and trailing blanks are read; a hexadecimal number is not.
    sed 's/$/  \r/' "$tmp/p.txt" > "$tmp/crlf.txt"
    expect_rc 0 '"optimizer_state_bytes": 160' -- "$gdp" info --json "$tmp/crlf.txt"
    sed 's/parameter_size=80.0/parameter_size=0x50/' "$tmp/p.txt" > "$tmp/hex.txt"
    expect_rc 1 "hex.txt:2: field parameter_size: expected a decimal number" -- "$gdp" convert "$tmp/hex.txt" -o "$tmp/x.json"
    [ ! -e "$tmp/x.json" ] || fail "a failed convert left an output file" ;;
  cluster)
    expect_rc 0 "v100x4-nvlink" -- "$gdp" cluster --list
    "$gdp" cluster k80x2-pcie -o "$tmp/c.json" || fail "cluster -o"
    expect_rc 0 '"gdp-cluster"' -- "$gdp" cluster "$tmp/c.json" ;;
  simulate)
    expect_rc 0 '"valid": true' -- "$gdp" simulate --graph "$tmp/g.json" --cluster v100x2-nvlink --placement single --json
    expect_rc 0 'step time' -- "$gdp" simulate --graph "$tmp/g.json" --cluster v100x2-nvlink --placement round-robin --trace "$tmp/t.json"
    grep -q traceEvents "$tmp/t.json" || fail "trace file lacks traceEvents"
    printf '{"format": "gdp-placement", "version": 1, "devices": 2, "placement": {"a": 0, "b": 1, "c": 1}}' > "$tmp/split.json"
    expect_rc 0 'colocation' -- "$gdp" simulate --graph "$tmp/g.json" --cluster v100x2-nvlink --placement "$tmp/split.json"
    # One op, no edges (once a null reference in the simulator).
    printf '{"format": "gdp-graph", "version": 1, "name": "one", "ops": [{"id": 0, "name": "a", "type": "MatMul", "phase": "forward", "outputs": [{"shape": [4], "dtype": "f32", "bytes": 16}], "flops": 128, "bytes_accessed": 48}], "edges": []}' > "$tmp/one.json"
    expect_rc 0 '"valid": true' -- "$gdp" simulate --graph "$tmp/one.json" --cluster v100x2-nvlink --placement single --json
    expect_rc 0 'step time' -- "$gdp" simulate --graph "$tmp/one.json" --cluster v100x2-nvlink --placement round-robin --trace "$tmp/t1.json" ;;
  gen-place)
    expect_rc 0 "" -- "$gdp" gen rnnlm --layers 2 --batch 4 --seq-len 4 --hidden 32 --vocab 50 -o "$tmp/r.json"
    expect_rc 0 '"ops":' -- "$gdp" info --json "$tmp/r.json"
    expect_rc 0 "human placement" -- "$gdp" place --method human --graph "$tmp/r.json" --cluster v100x2-nvlink -o "$tmp/p.json"
    expect_rc 0 '"valid": true' -- "$gdp" simulate --graph "$tmp/r.json" --cluster v100x2-nvlink --placement "$tmp/p.json" --json
    expect_rc 2 "layers" -- "$gdp" gen rnnlm --layers 0 -o "$tmp/bad.json"
    expect_rc 2 "known placement methods: single, round-robin, human, random" -- "$gdp" place --method nonsense --graph "$tmp/r.json" --cluster v100x2-nvlink -o "$tmp/x.json"
    [ ! -e "$tmp/x.json" ] || fail "a failed place wrote its output" ;;
  place)
    expect_rc 0 "" -- "$gdp" gen rnnlm --layers 2 --batch 4 --seq-len 4 --hidden 32 --vocab 50 -o "$tmp/r.json"
    out=$("$gdp" place --list) || fail "place --list exited $?"
    for m in single round-robin human random samples device; do
      echo "$out" | grep -q -- "$m" || fail "place --list lacks $m: $out"
    done
    expect_rc 0 "random placement (best of 64 random placements" -- "$gdp" place --method random --options '{"samples": 64}' --seed 1 --graph "$tmp/r.json" --cluster v100x2-nvlink -o "$tmp/p1.json"
    expect_rc 0 '"valid": true' -- "$gdp" simulate --graph "$tmp/r.json" --cluster v100x2-nvlink --placement "$tmp/p1.json" --json
    # Same seed, same placement; options from a file; --json reports the resolved options.
    printf '{"samples": 64}' > "$tmp/opts.json"
    expect_rc 0 '"batch": 64' -- "$gdp" place --method random --options "$tmp/opts.json" --seed 1 --graph "$tmp/r.json" --cluster v100x2-nvlink -o "$tmp/p2.json" --json
    cmp -s "$tmp/p1.json" "$tmp/p2.json" || fail "random with the same seed gave another placement"
    expect_rc 0 '"samples": 10' -- "$gdp" place --method random --samples 10 --graph "$tmp/r.json" --cluster v100x2-nvlink --json
    expect_rc 1 "method 'random': options.sample: unknown option" -- "$gdp" place --method random --options '{"sample": 3}' --graph "$tmp/r.json" --cluster v100x2-nvlink
    expect_rc 1 "options.samples: expected an integer" -- "$gdp" place --method random --options '{"samples": "x"}' --graph "$tmp/r.json" --cluster v100x2-nvlink
    expect_rc 1 "device 5 does not exist" -- "$gdp" place --method single --options '{"device": 5}' --graph "$tmp/r.json" --cluster v100x2-nvlink
    expect_rc 2 "expects an integer" -- "$gdp" place --method random --samples 0 --graph "$tmp/r.json" --cluster v100x2-nvlink
    # The algorithmic baselines run from the command line; their option errors come first.
    for m in metis m-topo m-etf m-sct; do
      expect_rc 0 "$m placement" -- "$gdp" place --method $m --graph "$tmp/r.json" --cluster v100x2-nvlink
    done
    expect_rc 0 "anneal placement (anneal from" -- "$gdp" place --method anneal --samples 50 --graph "$tmp/r.json" --cluster v100x2-nvlink
    expect_rc 1 "options.init: unknown method 'x'" -- "$gdp" place --method anneal --options '{"init": "x"}' --graph "$tmp/r.json" --cluster v100x2-nvlink
    expect_rc 1 "exhaustive is an oracle" -- "$gdp" place --method exhaustive --graph "$tmp/r.json" --cluster v100x2-nvlink
    # Two ops of 10 GiB of weights: together they overflow a 16 GiB V100.
    cat > "$tmp/heavy.json" <<'H'
{"format": "gdp-graph", "version": 1, "name": "heavy", "ops": [
 {"id": 0, "name": "a", "type": "MatMul", "phase": "forward", "outputs": [{"shape": [4], "dtype": "f32", "bytes": 16}], "flops": 2e9, "bytes_accessed": 1e6, "param_bytes": 10737418240},
 {"id": 1, "name": "b", "type": "MatMul", "phase": "forward", "outputs": [{"shape": [4], "dtype": "f32", "bytes": 16}], "flops": 2e9, "bytes_accessed": 1e6, "param_bytes": 10737418240}],
"edges": [{"src": 0, "dst": 1}]}
H
    expect_rc 0 '"validity": "out_of_memory"' -- "$gdp" place --method single --graph "$tmp/heavy.json" --cluster v100x2-nvlink --profile "$(dirname "$0")/../../sim/profiles/default.json" --json
    expect_rc 0 'INVALID (out_of_memory)' -- "$gdp" place --method single --graph "$tmp/heavy.json" --cluster v100x2-nvlink
    expect_rc 0 '"validity": "valid"' -- "$gdp" place --method round-robin --graph "$tmp/heavy.json" --cluster v100x2-nvlink --json ;;
  train-mpi)
    # Data-parallel GDP (core/mpi.h): 2 ranks give one process's run up to the float order of
    # the gradient sum (the same placements and step times, losses and entropies within 1e-3
    # relative, gradient norms within 5%, over 3 iterations), and a 2-rank run stopped after 2 iterations resumes under 2 ranks to the
    # uninterrupted 2-rank run exactly. Skipped (77) without MPI or mpirun.
    "$gdp" suite run --help | grep -q "This build: MPI on" || { echo "SKIP: built without MPI"; exit 77; }
    command -v mpirun > /dev/null || { echo "SKIP: no mpirun"; exit 77; }
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    cat > "$tmp/s.json" <<'JSON'
{"format": "gdp-suite", "version": 1, "name": "three", "entries": [
  {"name": "rnn", "model": "rnnlm", "options": {"layers": 2, "batch": 4, "seq_len": 4, "hidden": 32, "vocab": 50}, "cluster": "v100x2-nvlink"},
  {"name": "wave", "model": "wavenet", "options": {"stacks": 1, "batch": 1, "seq_len": 64, "hidden": 8}, "cluster": "v100x4-nvlink"},
  {"name": "chain", "model": "random", "options": {"family": "block_chain", "ops": 200, "seed": 3}, "cluster": "v100x2-nvlink"}]}
JSON
    cat > "$tmp/c.json" <<'JSON'
{"regime": "search", "policy": {"width": 16, "ffn": 32, "segment": 16, "memory": 16, "film_hidden": 8, "type_embedding": 4, "attention_layers": 1},
 "imitation_steps": 3, "expert": {"anneal_samples": 8}, "checkpoint_every": 2}
JSON
    args=(--suite "$tmp/s.json" --config "$tmp/c.json" --seed 3 --quiet)
    "$gdp" train "${args[@]}" --out "$tmp/one" --iterations 3 > /dev/null || fail "one process failed"
    expect_rc 0 "on 2 MPI ranks" -- mpirun -np 2 "$gdp" train "${args[@]}" --out "$tmp/two" --iterations 3
    /usr/bin/python3 - "$tmp/one" "$tmp/two" <<'PY' || fail "2 ranks differ from one process"
import csv, sys
one, two = (list(csv.DictReader(open(d + "/log.csv"))) for d in sys.argv[1:3])
assert len(one) == len(two) == 9, (len(one), len(two))
for a, b in zip(one, two):
    for k in ("iteration", "graph", "samples", "best_step_s", "mean_step_s", "local_samples"):
        assert a[k] == b[k], (k, a, b)
    # The gradient norm amplifies the float order most (Adam's steps and the proposals' draws
    # follow it): 5%; the forward quantities 1e-3.
    for k, tol in (("loss", 1e-3), ("entropy", 1e-3), ("elite_ce", 1e-3), ("grad_norm", 0.05)):
        x, y = float(a[k]), float(b[k])
        assert abs(x - y) <= tol * max(abs(x), abs(y), 1e-9), (k, x, y)
for g in ("rnn", "wave", "chain"):
    assert open("%s/best-%s.json" % (sys.argv[1], g)).read() == open("%s/best-%s.json" % (sys.argv[2], g)).read(), g
PY
    mpirun -np 2 "$gdp" train "${args[@]}" --out "$tmp/full" --iterations 4 > /dev/null || fail "2 ranks failed"
    mpirun -np 2 "$gdp" train "${args[@]}" --out "$tmp/cut" --iterations 2 > /dev/null || fail "2 ranks failed"
    expect_rc 0 "resumed and finished" -- mpirun -np 2 "$gdp" train --resume "$tmp/cut" --iterations 2
    diff <(cut -d, -f1-3,5- "$tmp/full/log.csv") <(cut -d, -f1-3,5- "$tmp/cut/log.csv") \
      || fail "the resumed 2-rank run differs from the uninterrupted one"
    for g in rnn wave chain; do
      cmp -s "$tmp/full/best-$g.json" "$tmp/cut/best-$g.json" || fail "best-$g.json differs after the resume"
    done ;;
  suite-mpi)
    # Two and three ranks (a coordinator and workers) give the results of one process, and a
    # run stopped after 4 cells resumes under MPI. Skipped (77) without MPI in the build or
    # without mpirun.
    "$gdp" suite run --help | grep -q "This build: MPI on" || { echo "SKIP: built without MPI"; exit 77; }
    command -v mpirun > /dev/null || { echo "SKIP: no mpirun"; exit 77; }
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
    s="$(dirname "$0")/../../datasets/suites/smoke.json"
    args=(--methods human,random,anneal --seeds 2 --budget samples=30 --quiet)
    expect_rc 0 "72 cells" -- "$gdp" suite run "$s" "${args[@]}" --out "$tmp/one"
    expect_rc 0 "MPI: 2 ranks" -- mpirun -np 2 --oversubscribe "$gdp" suite run "$s" "${args[@]}" --out "$tmp/two"
    expect_rc 0 "MPI: 3 ranks" -- mpirun -np 3 --oversubscribe "$gdp" suite run "$s" "${args[@]}" --out "$tmp/three"
    mpirun -np 2 --oversubscribe "$gdp" suite run "$s" "${args[@]}" --out "$tmp/cut" --stop-after 4 > /dev/null 2>&1
    [ "$(ls "$tmp/cut/cells" | wc -l)" -eq 4 ] || fail "expected 4 cells after the MPI stop"
    expect_rc 0 "68 run now, 4 finished earlier" -- mpirun -np 2 --oversubscribe "$gdp" suite run "$s" "${args[@]}" --out "$tmp/cut"
    for d in two three cut; do
      diff <(cut -d, -f1-11,13- "$tmp/one/results.csv") <(cut -d, -f1-11,13- "$tmp/$d/results.csv") \
        || fail "the MPI run ($d) differs from one process"
    done ;;
  suite)
    s="$(dirname "$0")/../../datasets/suites/smoke.json"
    run() { "$gdp" suite run "$s" --methods human,random,anneal --seeds 2 --budget samples=30 --quiet "$@"; }
    expect_rc 0 "72 cells: 72 run now, 0 finished earlier" -- run --out "$tmp/full"
    for f in run.json results.json results.csv report.md; do [ -s "$tmp/full/$f" ] || fail "suite run wrote no $f"; done
    [ "$(ls "$tmp/full/cells" | wc -l)" -eq 72 ] || fail "suite run: expected 72 cell files"
    [ "$(ls "$tmp/full/traces" | wc -l)" -eq 12 ] || fail "suite run: expected a trace per graph"
    grep -q "^## gnmt_small" "$tmp/full/report.md" || fail "report.md lacks a workload section"
    grep -q "| anneal | .* | 2/2 | .*x |" "$tmp/full/report.md" || fail "report.md lacks anneal's row"
    # A process ended abruptly after 5 cells (as kill -9 would): the rerun skips them and the
    # results equal the uninterrupted run's (all but the search time, column 12).
    run --out "$tmp/cut" --stop-after 5; rc=$?
    [ "$rc" -eq 137 ] || fail "--stop-after exited $rc, expected 137"
    [ "$(ls "$tmp/cut/cells" | wc -l)" -eq 5 ] || fail "expected 5 finished cells after the stop"
    [ ! -e "$tmp/cut/results.json" ] || fail "a stopped run wrote results.json"
    expect_rc 0 "72 cells: 67 run now, 5 finished earlier" -- run --out "$tmp/cut"
    diff <(cut -d, -f1-11,13- "$tmp/full/results.csv") <(cut -d, -f1-11,13- "$tmp/cut/results.csv") \
      || fail "the resumed run's results differ from the uninterrupted run's"
    # A real kill -9 at an arbitrary moment: the rerun completes with the same results.
    run --out "$tmp/killed" & pid=$!
    sleep 0.3; kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    for f in "$tmp"/killed/cells/*.json; do [ -e "$f" ] || continue; grep -q '"placement"' "$f" || fail "corrupt cell file $f"; done
    expect_rc 0 "72 cells" -- run --out "$tmp/killed"
    diff <(cut -d, -f1-11,13- "$tmp/full/results.csv") <(cut -d, -f1-11,13- "$tmp/killed/results.csv") \
      || fail "the run killed with -9 and rerun differs"
    # Another spec into the same directory, and an unknown method, are refused up front.
    expect_rc 2 "holds another run (run.json differs in" -- "$gdp" suite run "$s" --methods human --out "$tmp/full" --quiet
    expect_rc 2 "unknown method 'nosuch'" -- "$gdp" suite run "$s" --methods human,nosuch --out "$tmp/none"
    [ ! -e "$tmp/none" ] || fail "an unknown method left a directory behind"
    expect_rc 2 "expected samples=N or seconds=S" -- "$gdp" suite run "$s" --methods human --budget samples=x --out "$tmp/none"
    # Per-method options from the suite ("method_options"), checked before the directory is made.
    sed 's/"name": "smoke",/"name": "smoke", "method_options": {"random": {"samples": 4}},/' "$s" > "$tmp/mo.json"
    expect_rc 0 "" -- "$gdp" suite run "$tmp/mo.json" --methods random --out "$tmp/mo" --quiet
    tr -d ' \n' < "$tmp/mo/run.json" | grep -q '"options":{"samples":4}' || fail "run.json lacks the suite's method options"
    grep -q "^gnmt_small,v100x2-nvlink,random,1,true,valid,,[0-9.e-]*,[0-9.e-]*,[0-9.e-]*,4," "$tmp/mo/results.csv" || fail "random did not take the suite's 4 samples"
    sed 's/"name": "smoke",/"name": "smoke", "method_options": {"random": {"sampels": 4}},/' "$s" > "$tmp/bad.json"
    expect_rc 1 "options.sampels" -- "$gdp" suite run "$tmp/bad.json" --methods random --out "$tmp/bad" --quiet
    [ ! -e "$tmp/bad" ] || fail "bad suite options left a directory behind"
    # One column's options as LABEL=JSON.
    expect_rc 0 "" -- "$gdp" suite run "$s" --methods random --options 'random={"samples": 3}' --out "$tmp/lj" --quiet
    tr -d ' \n' < "$tmp/lj/run.json" | grep -q '"options":{"samples":3}' || fail "LABEL=JSON options not taken"
    # The trace of a chosen cell, for its Gantt chart.
    expect_rc 0 "traces/gnmt_small.anneal.s2.json" -- "$gdp" suite trace "$tmp/full" gnmt_small.anneal.s2
    grep -q '"traceEvents"' "$tmp/full/traces/gnmt_small.anneal.s2.json" || fail "suite trace wrote no Chrome trace"
    expect_rc 1 "no such cell" -- "$gdp" suite trace "$tmp/full" nosuch.cell.s1
    # suite compare: identical runs, then a known difference (3x the samples: anneal improves).
    expect_rc 0 "identical" -- "$gdp" suite compare "$tmp/full" "$tmp/cut"
    "$gdp" suite run "$s" --methods human,random,anneal --seeds 2 --budget samples=90 --quiet --out "$tmp/more" > /dev/null || fail "suite run (more) failed"
    out=$("$gdp" suite compare "$tmp/full" "$tmp/more") || fail "suite compare exited $?"
    echo "$out" | grep -q "^gnmt_small .* human .* identical" || fail "human should be identical: $out"
    echo "$out" | grep -q "^gnmt_small .* anneal .*-[0-9.]*%  t = " || fail "anneal should improve with 3x the samples, with a t statistic: $out"
    echo "$out" | grep -q "geometric mean of B / A" || fail "suite compare lacks the geometric means: $out"
    expect_rc 1 "results.json" -- "$gdp" suite compare "$tmp/full" "$tmp/none" ;;
  compare)
    # The README's main job on the shipped smoke suite (run from the source tree).
    expect_rc 0 "geomean speed-up" -- "$gdp" compare --suite "$(dirname "$0")/../../datasets/suites/smoke.json"
    expect_rc 0 "geomean step / lower bound" -- "$gdp" compare --suite "$(dirname "$0")/../../datasets/suites/smoke.json"
    expect_rc 0 '"entries"' -- "$gdp" compare --suite "$(dirname "$0")/../../datasets/suites/smoke.json" --methods human,single --json
    expect_rc 2 "unknown method" -- "$gdp" compare --methods best
    expect_rc 0 "random" -- "$gdp" compare --suite "$(dirname "$0")/../../datasets/suites/smoke.json" --methods single,random --samples 8
    # Columns: one method twice under labels with their own options; full records to a file.
    cat > "$tmp/two.json" <<'S'
{"format": "gdp-suite", "version": 1, "name": "two", "entries": [
 {"name": "a", "model": "random", "options": {"family": "layered", "ops": 100, "seed": 1}, "cluster": "v100x2-nvlink"},
 {"name": "b", "model": "random", "options": {"family": "nas_cell", "ops": 100, "seed": 2}, "cluster": "v100x2-nvlink"}]}
S
    expect_rc 0 "dev1 " -- "$gdp" compare --suite "$tmp/two.json" --methods human,dev1=single,r=random --options '{"dev1": {"device": 1}}' --samples 5 --records "$tmp/rec.json"
    python3 - "$tmp/rec.json" <<'P' || fail "compare --records: wrong content"
import json, sys
rec = json.load(open(sys.argv[1]))
cols = sorted({(r["graph"], r["method"]) for r in rec})
assert cols == [(g, m) for g in "ab" for m in ("dev1", "human", "r")], cols
for r in rec:
    assert r["valid"] and r["curve"] is not None and "samples" in r and "wall_s" in r, r
    if r["method"] == "dev1": assert r["options"]["device"] == 1, r
    if r["method"] == "r": assert r["samples"] == 5, r
P
    expect_rc 2 "key 'nosuch' is not a column" -- "$gdp" compare --suite "$tmp/two.json" --methods human --options '{"nosuch": {}}'
    expect_rc 2 "appears twice" -- "$gdp" compare --suite "$tmp/two.json" --methods human,human
    expect_rc 1 "dev1.*device" -- "$gdp" compare --suite "$tmp/two.json" --methods x=human,dev1=single --options '{"dev1": {"device": "one"}}' --records "$tmp/rec2.json"
    [ ! -e "$tmp/rec2.json" ] || fail "records written on error" ;;
  train)
    # GDP-one on a small graph with a tiny policy: outputs, determinism, kill -9 and resume,
    # zero-shot placement from the checkpoint, errors.
    expect_rc 0 "" -- "$gdp" gen rnnlm --layers 2 --batch 4 --seq-len 4 --hidden 32 --vocab 50 -o "$tmp/r.json"
    cat > "$tmp/cfg.json" <<'C'
{"policy": {"max_devices": 4, "type_embedding": 3, "width": 8, "sage_layers": 1, "attention_layers": 1,
 "heads": 2, "ffn": 8, "segment": 16, "memory": 16, "film_hidden": 4},
 "samples_per_iteration": 8, "lr": 0.01, "checkpoint_every": 1}
C
    common=(--graph "$tmp/r.json" --cluster v100x2-nvlink --config "$tmp/cfg.json" --seed 3 --quiet)
    expect_rc 0 "done" -- "$gdp" train "${common[@]}" --samples 400 --out "$tmp/a"
    for f in config.json log.csv best.json state.json summary.json; do
      [ -s "$tmp/a/$f" ] || fail "train did not write $f"
    done
    head -1 "$tmp/a/log.csv" | grep -q '^iteration,samples,wall_s,best_step_s,mean_step_s,invalid_frac,entropy,loss,reward_std,signal_t,grad_norm,approx_kl,clip_fraction,entropy_p10,entropy_p50,entropy_p90,greedy_changed,elite_ce,local_samples,cf_gain,cf_agree$' || fail "log.csv header: $(head -1 "$tmp/a/log.csv")"
    [ "$(wc -l < "$tmp/a/log.csv")" -eq 50 ] || fail "log.csv should hold 49 iterations (4 warm-start heuristics, then 49 x 8 of the 400 samples)"
    for k in best_step_time_s reference_step_time_s samples wall_s samples_to_best seconds_to_best; do
      grep -q "\"$k\"" "$tmp/a/summary.json" || fail "summary.json lacks $k"
    done
    expect_rc 0 '"valid": true' -- "$gdp" simulate --graph "$tmp/r.json" --cluster v100x2-nvlink --placement "$tmp/a/best.json" --json
    expect_rc 0 "done" -- "$gdp" train "${common[@]}" --samples 400 --out "$tmp/b"
    cmp -s "$tmp/a/best.json" "$tmp/b/best.json" || fail "same seed, other best.json"
    [ "$(cut -d, -f1,2,4- "$tmp/a/log.csv")" = "$(cut -d, -f1,2,4- "$tmp/b/log.csv")" ] || fail "same seed, other log rows"
    # kill -9 part-way, then resume: the same result as the uninterrupted run.
    expect_rc 0 "done" -- "$gdp" train "${common[@]}" --samples 4000 --out "$tmp/full"
    "$gdp" train "${common[@]}" --samples 4000 --out "$tmp/killed" > /dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 600); do
      [ -f "$tmp/killed/log.csv" ] && [ "$(wc -l < "$tmp/killed/log.csv")" -ge 20 ] && break
      sleep 0.05
    done
    kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    [ ! -f "$tmp/killed/summary.json" ] || fail "the run finished before it was killed (test too slow to kill)"
    expect_rc 2 "drop --samples" -- "$gdp" train --resume "$tmp/killed" --samples 10
    expect_rc 0 "resumed" -- "$gdp" train --resume "$tmp/killed" --quiet
    cmp -s "$tmp/full/best.json" "$tmp/killed/best.json" || fail "resumed run: other best.json"
    [ "$(cut -d, -f1,2,4- "$tmp/full/log.csv")" = "$(cut -d, -f1,2,4- "$tmp/killed/log.csv")" ] || fail "resumed run: other log rows"
    # Zero-shot on a graph the policy never saw.
    expect_rc 0 "" -- "$gdp" gen gnmt --layers 2 --batch 2 --seq-len 3 --hidden 16 --vocab 30 -o "$tmp/u.json"
    expect_rc 0 "zero-shot" -- "$gdp" place --method gdp --options "{\"checkpoint\": \"$tmp/a\", \"samples\": 4}" --graph "$tmp/u.json" --cluster v100x4-nvlink -o "$tmp/zs.json"
    expect_rc 0 '"valid": true' -- "$gdp" simulate --graph "$tmp/u.json" --cluster v100x4-nvlink --placement "$tmp/zs.json" --json
    # Errors: a run folder again, bad configuration, a device that is not there.
    expect_rc 1 "resume" -- "$gdp" train "${common[@]}" --samples 16 --out "$tmp/a"
    printf '{"epoch": 3}' > "$tmp/bad.json"
    expect_rc 1 "unknown key" -- "$gdp" train --graph "$tmp/r.json" --cluster v100x2-nvlink --config "$tmp/bad.json" --out "$tmp/c"
    expect_rc 1 "cuda" -- "$gdp" train --graph "$tmp/r.json" --cluster v100x2-nvlink --device cuda --out "$tmp/d"
    expect_rc 2 "--device" -- "$gdp" train --graph "$tmp/r.json" --cluster v100x2-nvlink --device tpu --out "$tmp/e"
    # The learned baselines share the session: HDP stops after 4 iterations and resumes into
    # the uninterrupted run; wrong flag combinations are usage errors.
    hdp=(--method hdp --graph "$tmp/r.json" --cluster v100x2-nvlink --options '{"hidden_size": 16, "num_groups": 6}' --samples 12 --seed 2 --quiet)
    expect_rc 0 "done" -- "$gdp" train "${hdp[@]}" --out "$tmp/h1"
    expect_rc 0 "done" -- "$gdp" train "${hdp[@]}" --iterations 4 --checkpoint-every 2 --out "$tmp/h2"
    expect_rc 0 "resumed" -- "$gdp" train --resume "$tmp/h2" --quiet
    cmp -s "$tmp/h1/best.json" "$tmp/h2/best.json" || fail "hdp resumed run: other best.json"
    [ "$(cut -d, -f1,2,4- "$tmp/h1/log.csv")" = "$(cut -d, -f1,2,4- "$tmp/h2/log.csv")" ] || fail "hdp resumed run: other log rows"
    grep -q '"method": "hdp"' "$tmp/h1/summary.json" || fail "hdp summary.json lacks its method"
    expect_rc 2 "--options is for" -- "$gdp" train --graph "$tmp/r.json" --cluster v100x2-nvlink --options '{}' --out "$tmp/f"
    expect_rc 2 "--config is for gdp" -- "$gdp" train --method placeto --graph "$tmp/r.json" --cluster v100x2-nvlink --config "$tmp/cfg.json" --out "$tmp/f"
    expect_rc 2 "--method expects" -- "$gdp" train --method metis --graph "$tmp/r.json" --cluster v100x2-nvlink --out "$tmp/f"
    expect_rc 1 "options.hidden_size" -- "$gdp" train --method hdp --graph "$tmp/r.json" --cluster v100x2-nvlink --options '{"hidden_size": 3}' --out "$tmp/f" ;;
  *) fail "unknown case $case_name" ;;
esac
echo "PASSED: $case_name"
